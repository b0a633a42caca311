"""A guard library the dynamic linker cannot preload stops the run.

LD_PRELOAD only warns when a library cannot be loaded, and the
interpreter would then run the program without the Python layer. python-sb
starts the interpreter with a seal first on its command line
(src/base/guard_seal.h) that only the guard's constructor opens: without
the guard, the interpreter says so and exits 255 before the program's
first line, whatever options follow (-I, -E, -S). Judged from outside: the
program's marker file is never written.
"""

import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from conftest import REPO, as_nobody, landlock_abi, sb_path, scaled

ABI = landlock_abi()
PROVIDERS = ["subprocess", pytest.param("landlock", marks=pytest.mark.skipif(
    ABI < 4, reason=f"this kernel's Landlock ABI is {ABI}, below 4 [core]"))]
GUARD = "libpysb-guard.so"


@pytest.fixture
def base():
    """A directory uid 65534 can search (pytest's tmp_path is not)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="pysb-seal-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def bindir(base):
    """python-sb copied beside a guard library of the test's making (the
    launcher takes the guard beside itself, the package from the
    checkout)."""
    d = base / "bin"
    d.mkdir()
    os.chmod(d, 0o755)
    shutil.copy2(sb_path(), d / "python-sb")
    return d


def run(bindir, cwd, args, nobody=False):
    argv = [str(bindir / "python-sb"), "--python=/usr/bin/python3", *args]
    if nobody:
        argv = as_nobody(argv)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          timeout=scaled(60), stdin=subprocess.DEVNULL)


def prepare(base, provider):
    work = base / "work"
    work.mkdir()
    os.chmod(work, 0o1777)  # sticky: python-sb refuses a rule file
    # in a directory others may change without it
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\nexpose-rw={work}\n")
    return work


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("damage", ["truncated", "missing-symbols",
                                    "unreadable"])
@pytest.mark.parametrize("options", [[], ["-I"], ["-E", "-S"]])
def test_an_unloadable_guard_runs_nothing(bindir, base, provider, damage,
                                          options):
    good = sb_path().parent / GUARD
    bad = bindir / GUARD
    nobody = False
    if damage == "truncated":
        bad.write_bytes(good.read_bytes()[:4096])
    elif damage == "missing-symbols":
        # an ELF object, but not one the loader can map as a library
        shutil.copy2("/bin/true", bad)
    else:
        if os.geteuid() != 0:
            pytest.skip("needs root to make a file uid 65534 cannot read")
        shutil.copy2(good, bad)
        os.chmod(bad, 0o600)
        nobody = True
    os.chmod(bad, 0o600 if damage == "unreadable" else 0o644)
    work = prepare(base, provider)
    marker = work / "marker"
    r = run(bindir, work, [*options, "-c",
                           f"open({str(marker)!r}, 'w').write('ran')"],
            nobody=nobody)
    assert not marker.exists(), r.stderr
    assert r.stdout == ""
    if damage == "truncated":
        # the dynamic linker maps past the file's end: the interpreter
        # dies of SIGBUS before anything runs (under landlock python-sb
        # reports it as 128+7)
        assert r.returncode in (-7, 135, 255), (r.returncode, r.stderr)
        return
    assert r.returncode == 255, (r.returncode, r.stdout, r.stderr)
    assert "the guard library was not loaded" in r.stderr, r.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_loaded_guard_opens_the_seal(bindir, base, provider):
    """With the guard in place the seal is invisible but for an -X option
    CPython ignores, and the program's own arguments are its own."""
    shutil.copy2(sb_path().parent / GUARD, bindir / GUARD)
    work = prepare(base, provider)
    r = run(bindir, work, ["-I", "-c", "import sys; print(sys.argv[1:], "
                           "sys.flags.isolated, "
                           "sys._xoptions['pysb-guard'].strip(), "
                           "sys.orig_argv[1] if hasattr(sys, 'orig_argv') "
                           "else '-X')", "a", "-c"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(" ", 3)[:3] == ["['a',", "'-c']", "1"], r.stdout
    assert r.stdout.split(" ", 3)[3] == "loaded -X\n", r.stdout


def test_the_guard_refuses_a_command_line_without_the_seal():
    """The guard started with a policy but without the seal (not by
    python-sb's launcher) stops before Python starts."""
    fd = os.memfd_create("blob", 0)
    os.write(fd, b"PYSB-POLICY 1\npkgdir\t" +
             str(REPO / "python").encode() +
             b"\ncwd\t/tmp\nconfig-exists\t1\nlearning\t0\n"
             b"debug-malloc\t0\nrule\tf\t1\tpython-import=json\nend\n")
    os.lseek(fd, 0, 0)
    env = dict(os.environ, LD_PRELOAD=str(sb_path().parent / GUARD),
               PYSB_POLICY_FD=str(fd))
    try:
        r = subprocess.run(["/usr/bin/python3", "-c", "print('ran')"],
                           env=env, capture_output=True, text=True,
                           timeout=scaled(60), stdin=subprocess.DEVNULL,
                           pass_fds=(fd,))
    finally:
        os.close(fd)
    assert r.returncode == 255, (r.returncode, r.stderr)
    assert r.stdout == ""
    assert "seal" in r.stderr, r.stderr
