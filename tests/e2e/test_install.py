"""Installation: a build configured for a temporary prefix installs the
launcher, the guard library, the pysandboxes package and the man pages,
and the installed python-sb guards a program with no build tree in reach.
(A separate build directory: `make install` would reconfigure build/.)"""
import os
import shutil
import subprocess

import pytest

from conftest import REPO, pyenv_minor
from pysbtest import qemu_missing


def test_install_into_a_prefix_and_run(tmp_path):
    if not shutil.which("meson") or not shutil.which("ninja"):
        pytest.skip("meson or ninja missing [core]")
    prefix, build = tmp_path / "prefix", tmp_path / "build"
    for argv in (["meson", "setup", str(build), f"--prefix={prefix}"],
                 ["ninja", "-C", str(build)],
                 ["meson", "install", "-C", str(build), "--quiet"]):
        r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, (argv, r.stdout[-2000:], r.stderr[-2000:])
    files = {str(p.relative_to(prefix)) for p in prefix.rglob("*")
             if p.is_file()}
    assert "bin/python-sb" in files
    assert any(f.endswith("python-sb/libpysb-guard.so") for f in files)
    assert any(f.endswith("python-sb/python/pysandboxes/e.py")
               for f in files)
    frame = [f for f in files
             if f.endswith("python-sb/python/pysandboxes/_pysbframe.abi3.so")]
    assert len(frame) == 1, sorted(files)
    assert "share/man/man1/python-sb.1" in files
    assert "share/man/man5/py-sandboxes.5" in files
    work = tmp_path / "work"
    work.mkdir()
    (work / ".py-sandboxes").write_text("python-import=pysandboxes\n")
    r = subprocess.run(
        [str(prefix / "bin" / "python-sb"), "-c",
         "import pysandboxes, sys\nprint(pysandboxes.is_in_sandbox())\n"
         "try:\n    import os\nexcept ImportError as e:\n"
         "    print(type(e).__name__)\n"],
        cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "True\nRuleModuleNotFoundError\n"
    # partial mode from the installed tree: the parent and the worker both
    # load the installed transport, with no checkout in reach
    pkgdir = prefix / frame[0].rsplit("/pysandboxes/", 1)[0]
    r = _partial_call(work, dict(PYTHONPATH=str(pkgdir),
                                 PYSB_PYTHON_SB=str(prefix / "bin" /
                                                    "python-sb")))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{pkgdir}/pysandboxes/_pysbframe.abi3.so\n3\n"


def _partial_call(work, env_add, python="/usr/bin/python3"):
    """A @sandbox call in partial mode from work/, where the transport
    was loaded from, the environment cleared of the checkout's."""
    (work / "pmod.py").write_text("from pysandboxes import sandbox\n"
                                  "@sandbox\ndef add(a, b):\n"
                                  "    return a + b\n")
    (work / ".py-sandboxes").write_text("python-import=pmod\n"
                                        "expose-ro=.\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSB", "PYTHON"))}
    env.update(env_add)
    return subprocess.run(
        [python, "-c",
         "import pmod, pysandboxes._worker as w\n"
         "from pysandboxes import sandboxes\n"
         "print(w.transport().__file__)\n"
         "with sandboxes(workers=1):\n    print(pmod.add(1, 2))\n"],
        cwd=work, capture_output=True, text=True, env=env, timeout=120)


def test_pip_install_into_a_venv_offline(tmp_path):
    """`pip install --no-build-isolation .` with the in-tree backend:
    nothing is downloaded, and the venv's python-sb runs the venv's own
    interpreter with the package and guard it installed."""
    import os
    py = pyenv_minor("3.11")
    if not os.path.exists(py):
        py = "/usr/bin/python3"
    venv = tmp_path / "venv"
    r = subprocess.run([py, "-m", "venv", str(venv)], capture_output=True,
                       text=True)
    if r.returncode != 0 or not (venv / "bin" / "pip").exists():
        pytest.skip(f"no venv with pip for {py}: {r.stderr[-300:]}")
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index",
                        "--no-build-isolation", str(REPO)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    work = tmp_path / "work"
    work.mkdir()
    (work / ".py-sandboxes").write_text("python-import=pysandboxes\n")
    r = subprocess.run(
        [str(venv / "bin" / "python-sb"), "-c",
         "import sys, pysandboxes\nprint(sys.prefix)\n"
         "print(pysandboxes.is_in_sandbox())\n"
         "try:\n    open('/etc/passwd')\nexcept OSError as e:\n"
         "    print(type(e).__name__)\n"],
        cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(venv), "True",
                                     "RuleFileNotFoundError"]
    # the venv's own python, unconfined (partial mode's parent), scans
    # results with the C prescan of the wheel's _pysbframe (issue 18)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSB", "PYTHON"))}
    r = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "from pysandboxes import _unpickle as u\n"
         "print(u._frame.PRESCAN_ABI, u._frame.__file__.startswith(" +
         repr(str(venv)) + "))\n"],
        cwd=work, capture_output=True, text=True, env=env)
    assert (r.returncode, r.stdout) == (0, "3 True\n"), r.stderr
    # and partial mode with the wheel's transport, python-sb found on PATH
    r = _partial_call(work, dict(PATH=f"{venv}/bin:/usr/bin:/bin"),
                      python=str(venv / "bin" / "python"))
    assert r.returncode == 0, r.stderr
    site = r.stdout.split("/pysandboxes/")[0]
    assert site.startswith(str(venv)) and site.endswith("site-packages")
    assert r.stdout == f"{site}/pysandboxes/_pysbframe.abi3.so\n3\n"
    # qemu finds its guest init beside the wheel's guard, also in a run
    # that loads no guard (it looked beside a guard it had not searched for,
    # and a run with py-sandbox=false stopped with "installation is
    # incomplete"); without qemu here, test_qemu.py skips with the reason
    if not qemu_missing():
        r = subprocess.run(
            [str(venv / "bin" / "python-sb"), "--os-sandbox=qemu",
             "--py-sandbox=false", "-c", "import sys; print(sys.prefix)"],
            cwd=work, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert (r.returncode, r.stdout) == (0, f"{venv}\n"), r.stderr


def test_a_shebang_line_runs_the_script_sandboxed(tmp_path, sb):
    """#!/usr/bin/env python-sb: the rule file next to the script applies."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(sb, bindir / "python-sb")
    app = tmp_path / "app"
    app.mkdir()
    (app / ".py-sandboxes").write_text("python-import=xml\n")
    script = app / "tool"
    script.write_text("#!/usr/bin/env python-sb\n"
                      "import xml\ntry:\n    import os\n"
                      "except ImportError as e:\n"
                      "    print(type(e).__name__)\n")
    script.chmod(0o755)
    r = subprocess.run([str(script)], cwd=tmp_path, capture_output=True,
                       text=True,
                       env=dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "RuleModuleNotFoundError\n"


def _venv_layout(tmp_path, sb):
    """A pip venv's layout made by hand: bin/python-sb, and the guard in
    lib/python3.X/site-packages/pysandboxes/_lib/."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (venv / "bin").mkdir(parents=True)
    shutil.copy2(sb, venv / "bin" / "python-sb")
    shutil.copytree(REPO / "python" / "pysandboxes", site / "pysandboxes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "pysandboxes" / "_lib").mkdir(exist_ok=True)
    shutil.copy2(os.path.join(os.path.dirname(sb), "libpysb-guard.so"),
                 site / "pysandboxes" / "_lib")
    for d in [venv, *venv.rglob("*")]:
        d.chmod(0o755 if d.is_dir() else 0o644)
    (venv / "bin" / "python-sb").chmod(0o755)
    return venv, site


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_support_files_others_may_change_are_refused(tmp_path, sb):
    """The guard and the pysandboxes package are judged as the rule file
    is: a file or directory of theirs, or a directory above them, that
    users other than the one running could change stops the run before
    anything runs (they could put their code in place of the guard). A
    sticky directory above them (/tmp) is fine."""
    venv, site = _venv_layout(tmp_path, sb)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".py-sandboxes").write_text("python-import=sys\n")

    def run():
        return subprocess.run(
            [str(venv / "bin" / "python-sb"), "--python=/usr/bin/python3",
             "-c", "print('ran')"],
            cwd=work, capture_output=True, text=True, timeout=120)

    r = run()
    assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr
    pkg = site / "pysandboxes"
    cases = [
        ("world-writable module", pkg / "_grants.py",
         lambda p: p.chmod(0o646), lambda p: p.chmod(0o644)),
        ("group module", pkg / "_grants.py",
         lambda p: (os.chown(p, 0, 100), p.chmod(0o664)),
         lambda p: (os.chown(p, 0, 0), p.chmod(0o644))),
        ("foreign guard", pkg / "_lib" / "libpysb-guard.so",
         lambda p: os.chown(p, 65534, 65534), lambda p: os.chown(p, 0, 0)),
        ("sticky package", pkg,
         lambda p: p.chmod(0o1777), lambda p: p.chmod(0o755)),
        ("open directory above", site.parent,
         lambda p: p.chmod(0o777), lambda p: p.chmod(0o755)),
    ]
    for label, path, spoil, mend in cases:
        spoil(path)
        try:
            r = run()
        finally:
            mend(path)
        assert r.returncode == 255 and r.stdout == "", (label, r)
        assert "could be changed by users other than uid 0" in r.stderr, (
            label, r.stderr)
        assert f"'{path}'" in r.stderr and "nothing was run" in r.stderr, (
            label, r.stderr)
    # a module linked to a file in a directory every user may write
    opened = tmp_path / "open"
    opened.mkdir()
    shutil.copy2(pkg / "_grants.py", opened / "_grants.py")
    opened.chmod(0o777)
    (pkg / "_grants.py").rename(pkg / "_grants.py.orig")
    (pkg / "_grants.py").symlink_to(opened / "_grants.py")
    try:
        r = run()
    finally:
        (pkg / "_grants.py").unlink()
        (pkg / "_grants.py.orig").rename(pkg / "_grants.py")
    assert r.returncode == 255 and f"'{opened}'" in r.stderr, r
    # a directory deeper than the walk judges: what it holds would go
    # unjudged, so it is refused
    deep = pkg / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    try:
        r = run()
    finally:
        shutil.rmtree(pkg / "a")
    assert r.returncode == 255 and f"'{deep}' lies deeper" in r.stderr, r
    # a sticky, world-writable directory above is /tmp's case: allowed
    site.parent.chmod(0o1777)
    try:
        r = run()
    finally:
        site.parent.chmod(0o755)
    assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr
