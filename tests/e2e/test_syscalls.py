"""The seccomp allowlist's one table (src/kernel/seccomp.c) against what the
kernel does: docs/syscalls.md is the table as build/syscall-table prints
it, and the helper (tests/helpers/try-syscall.c, "raw NR,ARG...") makes
calls of each verdict inside the sandbox: every refused call fails with
EPERM and, with PYSB_DEBUG, is named on stderr; the ENOSYS ones fail with
ENOSYS; a sample of the allowed ones is not refused; the notified ones are
answered by the supervisor. Refused calls never run, so they are tried
with all-zero arguments. As root and as uid 65534.
"""

import ctypes
import os
import re
import signal
import subprocess

import pytest

from conftest import REPO, sb_path
from test_kernel import ABI, Tree, interpreter, tree, user  # noqa: F401

pytestmark = pytest.mark.skipif(
    ABI < 4, reason=f"this kernel's Landlock ABI is {ABI}, below 4 [core]")


def table_tool():
    for cand in (sb_path().parent / "syscall-table",
                 REPO / "build" / "syscall-table"):
        if cand.is_file():
            return str(cand)
    pytest.fail("build/syscall-table is not built: run make first",
                pytrace=False)


def table():
    out = subprocess.run([table_tool(), "--tsv"], capture_output=True,
                         text=True, check=True).stdout
    rows = [ln.split("\t") for ln in out.splitlines()]
    return {name: (verdict, int(nr)) for name, verdict, nr in rows}


def native_nr(name):
    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    return lib.seccomp_syscall_resolve_name(name.encode())


def raw(run_sb, tree, user, specs, debug=False):
    """[answer], one for each "NR,ARG..." in specs in order, and
    python-sb's stderr."""
    (tree.root / ".py-sandboxes").write_text(tree.rules())
    argv = [tree.helper, "raw", *specs]
    code = f"import os\nos.execv({tree.helper!r}, {argv[1:]!r} and " \
           f"[{tree.helper!r}] + {argv[1:]!r})\n"
    env = dict(os.environ)
    if debug:
        env["PYSB_DEBUG"] = "1"
    r = run_sb([f"--python={interpreter(user)}", "-c", code],
               unprivileged=(user == "nobody"), env=env)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    answers = []
    for ln in r.stdout.splitlines():
        m = re.fullmatch(r"(-?\d+) (ok|errno \w+)", ln)
        if m:
            answers.append(m.group(2))
    assert len(answers) == len(specs), (r.stdout, r.stderr)
    return answers, r.stderr


def refused_names(stderr):
    return re.findall(r"python-sb: seccomp: refused (\S+) \(pid \d+\): "
                      r"EPERM", stderr)


def test_docs_are_the_table():
    """docs/syscalls.md is what build/syscall-table prints: the doc cannot
    drift from the filter."""
    out = subprocess.run([table_tool()], capture_output=True, text=True,
                         check=True).stdout
    assert (REPO / "docs" / "syscalls.md").read_text() == out, \
        "docs/syscalls.md is stale: build/syscall-table > docs/syscalls.md"


def test_table_covers_both_architectures():
    t = table()
    assert len(t) > 300
    for name in ("read", "openat", "ioctl", "clone3", "shmget", "keyctl",
                 "io_uring_setup", "process_vm_writev"):
        assert name in t, name
    verdicts = {v for v, _ in t.values()}
    assert verdicts == {"allow", "allow-with-args", "notify", "ENOSYS",
                        "refuse"}, verdicts


@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "debug"])
def test_every_refused_call_is_refused(run_sb, tree, user, debug):
    """Each call the table refuses (by name or by default), tried with
    zero arguments: EPERM, and with PYSB_DEBUG named on stderr."""
    t = table()
    names = sorted(n for n, (v, _) in t.items()
                   if v == "refuse" and native_nr(n) >= 0)
    specs = [f"{native_nr(n)},0,0,0,0,0,0" for n in names]
    answers, err = raw(run_sb, tree, user, specs, debug=debug)
    wrong = {n: a for n, a in zip(names, answers) if a != "errno EPERM"}
    assert not wrong, wrong
    if debug:
        assert set(refused_names(err)) >= set(names), err
    else:
        assert "refused" not in err


def test_enosys_calls(run_sb, tree, user):
    t = table()
    names = sorted(n for n, (v, _) in t.items()
                   if v == "ENOSYS" and native_nr(n) >= 0)
    answers, err = raw(run_sb, tree, user,
                       [f"{native_nr(n)},0,0,0,0,0,0" for n in names],
                       debug=True)
    assert set(answers) == {"errno ENOSYS"}, dict(zip(names, answers))
    assert not refused_names(err)


def test_allowed_sample(run_sb, tree, user):
    """Allowed calls, and allowed arguments of the argument-filtered ones,
    are not refused (the kernel answers; PYSB_DEBUG names nothing)."""
    n = native_nr
    specs = [
        f"{n('getpid')}", f"{n('sched_yield')}", f"{n('umask')},18",
        f"{n('getrandom')},0,0,0",
        f"{n('prlimit64')},0,7,0,0",            # pid 0
        f"{n('setpriority')},0,0,1",            # PRIO_PROCESS, self
        f"{n('sched_getaffinity')},0,0,0",      # EINVAL, not EPERM
        f"{n('socket')},1,1,0",                 # AF_UNIX stream
        f"{n('ioctl')},1,{0x541B},0",           # FIONREAD: EFAULT/ENOTTY
        f"{n('prctl')},{15},0",                 # PR_SET_NAME(NULL)
    ]
    answers, err = raw(run_sb, tree, user, specs, debug=True)
    assert not refused_names(err), err
    assert "errno EPERM" not in answers, list(zip(specs, answers))


def test_argument_filtered_refusals(run_sb, tree, user):
    """The same calls outside their allowed arguments: EPERM, named."""
    n = native_nr
    specs = [
        f"{n('prlimit64')},1,7,0,0",            # another pid
        f"{n('setpriority')},0,1,1",
        f"{n('sched_setaffinity')},1,0,0",
        f"{n('ioprio_set')},1,1,0",
        f"{n('ioctl')},0,{0x5412},0",           # TIOCSTI
        f"{n('ioctl')},0,{0x541C},0",           # TIOCLINUX
        f"{n('ioctl')},0,{0x5423},0",           # TIOCSETD
        f"{n('ioctl')},0,{0x8914},0",           # SIOCSIFFLAGS
        f"{n('socket')},16,3,0",                # AF_NETLINK
        f"{n('socket')},17,3,0",                # AF_PACKET
        f"{n('socket')},1,3,0",                 # AF_UNIX SOCK_RAW
        f"{n('setsockopt')},0,0,4,0,0",         # IP_OPTIONS
        f"{n('setsockopt')},0,41,57,0,0",       # IPV6_RTHDR
        f"{n('setsockopt')},0,6,31,0,0",        # TCP_ULP
        f"{n('clone')},{0x10000000 | 17},0,0,0,0",  # CLONE_NEWUSER
        f"{n('prctl')},{0x59616d61},0",         # PR_SET_PTRACER
        f"{n('mknod')},0,{0o20666},0",          # a character device
        f"{n('chmod')},0,{0o4755}",             # setuid
        f"{n('open')},0,{0o101},{0o4755}",      # O_CREAT, setuid
        f"{n('personality')},8",
    ]
    answers, err = raw(run_sb, tree, user, specs, debug=True)
    assert set(answers) == {"errno EPERM"}, list(zip(specs, answers))
    assert len(refused_names(err)) == len(specs), err


def test_notified_calls_reach_the_supervisor(run_sb, tree, user):
    """chmod, utimensat and connect go to python-sb, which answers them
    itself: a NULL path is EFAULT, a bad descriptor EBADF, not EPERM."""
    n = native_nr
    answers, err = raw(run_sb, tree, user,
                       [f"{n('chmod')},0,{0o644}",
                        f"{n('utimensat')},-100,0,0,0",
                        f"{n('connect')},-1,0,0"], debug=True)
    assert not refused_names(err), err
    assert answers == ["errno EFAULT", "errno EFAULT", "errno EBADF"], \
        answers


def test_x32_numbers_are_refused(run_sb, tree, user):
    """An x32 number (bit 30) never runs: the filter kills the process
    (libseccomp's x86-64 filter sends it to the bad-architecture action).
    ENOSYS would not show that: a kernel without the x32 ABI answers it
    whatever the filter does."""
    if os.uname().machine != "x86_64":
        pytest.skip("x32 exists on x86-64 only")
    (tree.root / ".py-sandboxes").write_text(tree.rules())
    code = (f"import os\nos.execv({tree.helper!r}, [{tree.helper!r}, "
            f"'raw', '{0x40000000 + 39}'])\n")
    r = run_sb([f"--python={interpreter(user)}", "-c", code],
               unprivileged=(user == "nobody"))
    assert " ok" not in r.stdout, r.stdout
    assert r.returncode in (128 + signal.SIGSYS, -signal.SIGSYS), \
        (r.returncode, r.stdout, r.stderr)


def test_int80_is_refused(run_sb, tree, user):
    """An i386 call (int 0x80 from 64-bit code) never runs: the filter
    kills the process (SCMP_FLTATR_ACT_BADARCH). Where the kernel has no
    IA-32 emulation, int 0x80 is a SIGSEGV outside the sandbox as well, and
    there is nothing to show."""
    if os.uname().machine != "x86_64":
        pytest.skip("int 0x80 from 64-bit code exists on x86-64 only")
    outside = subprocess.run([tree.helper, "int80"], capture_output=True,
                             text=True)
    if outside.returncode == -signal.SIGSEGV:
        pytest.skip("this kernel has no IA-32 emulation: int 0x80 is a "
                    "SIGSEGV outside the sandbox too")
    assert outside.stdout == "ok\n", (outside.returncode, outside.stdout)
    (tree.root / ".py-sandboxes").write_text(tree.rules())
    code = (f"import os\nos.execv({tree.helper!r}, [{tree.helper!r}, "
            f"'int80'])\n")
    r = run_sb([f"--python={interpreter(user)}", "-c", code],
               unprivileged=(user == "nobody"))
    assert r.returncode in (128 + signal.SIGSYS, -signal.SIGSYS), \
        (r.returncode, r.stdout, r.stderr)
