"""Signal forwarding, one table over the supervising modes (issue: one
supervisor skeleton, src/kernel/supervisor.c): a SIGTERM or SIGINT sent to
python-sb reaches the program's handler under os-sandbox=landlock (the
network supervisor, the program in a session of its own), unshare (the
outer launcher, then the init, then the network supervisor), learning, the
limits supervisor of subprocess and bwrap (through the second stage's
pidfd); python-sb's exit status is then the program's. Without a handler
the program dies of SIGTERM and the status is 128+15. As root and as uid
65534, with Debian's python3 (pyenv lives under /root).
"""
import os
import shutil
import signal
import subprocess

import pytest

from conftest import AWAIT_SIGNAL, NOBODY, as_nobody, sb_path, scaled

DEBIAN_PYTHON = "/usr/bin/python3"

# mode: (command-line flags, the rules file)
MODES = {
    "landlock": (["--os-sandbox=landlock", "--py-sandbox=false"],
                 "python-import=*\n"),
    "unshare": (["--os-sandbox=unshare", "--py-sandbox=false"],
                "python-import=*\n"),
    "bwrap": (["--os-sandbox=bwrap", "--py-sandbox=false"],
              "python-import=*\n"),
    "learning": (["--learn"], ""),
    "limits": (["--os-sandbox=subprocess", "--limit-time=1h",
                "--py-sandbox=false"], "python-import=*\n"),
}

HANDLER = """\
import os, signal, time
def h(n, frame):
    os.write(1, b"got %d\\n" % n)
    os._exit(40 + n)
signal.signal(signal.SIGTERM, h)
signal.signal(signal.SIGINT, h)
print("ready", flush=True)
""" + AWAIT_SIGNAL

NO_HANDLER = """\
import time
print("ready", flush=True)
time.sleep(60)
"""


def _start(mode, user, cwd, code):
    if mode == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    flags, rules = MODES[mode]
    for name, text in ((".py-sandboxes", rules), ("prog.py", code)):
        (cwd / name).write_text(text)
        if user == "nobody" and os.geteuid() == 0:
            os.chown(cwd / name, NOBODY, NOBODY)  # learning writes there
    argv = [str(sb_path()), f"--python={DEBIAN_PYTHON}", *flags, "prog.py"]
    if user == "nobody":
        argv = as_nobody(argv)
    p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    first = p.stdout.readline()
    if first != "ready\n":
        out, err = p.communicate(timeout=scaled(30))
        if "user namespace" in err and p.returncode == 255:
            pytest.skip(f"{mode} as {user}: no user namespaces here")
        pytest.fail(f"{mode} as {user}: no 'ready' ({p.returncode}): "
                    f"{first}{out}{err}")
    return p


@pytest.fixture(params=["root", "nobody"])
def user(request):
    return request.param


@pytest.fixture
def cwd(tmp_cwd, user):
    """tmp_cwd, writable by uid 65534 for its runs."""
    if user == "nobody" and os.geteuid() == 0:
        os.chown(tmp_cwd, NOBODY, NOBODY)
    return tmp_cwd


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT],
                         ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("mode", list(MODES))
def test_signal_reaches_the_program(mode, sig, user, cwd):
    p = _start(mode, user, cwd, HANDLER)
    try:
        p.send_signal(sig)
        out, err = p.communicate(timeout=scaled(30))
    finally:  # a failure must not leave a process for later tests
        p.kill()
        p.wait()
    assert (p.returncode, out) == (40 + sig, f"got {int(sig)}\n"), err


@pytest.mark.parametrize("mode", list(MODES))
def test_sigterm_without_a_handler_is_128_plus_15(mode, user, cwd):
    p = _start(mode, user, cwd, NO_HANDLER)
    try:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=scaled(30))
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 128 + signal.SIGTERM, err


# What the caller's SIGCHLD was, as the program sees it: plain python
# inherits an ignored SIGCHLD through exec, and so does the program where
# python-sb execs it itself; under bwrap it gets SIG_DFL (python-sb gives
# the tools it runs SIG_DFL, which they need).
SIGCHLD_SEEN = {"bwrap": int(signal.SIG_DFL)}
CHLD_PROGRAM = """\
import signal
print(int(signal.getsignal(signal.SIGCHLD)), flush=True)
raise SystemExit(7)
"""


@pytest.mark.parametrize("mode", ["subprocess", *MODES])
def test_a_caller_that_ignores_sigchld_gets_the_programs_status(mode, user,
                                                                cwd):
    """A caller that ignores SIGCHLD (SIG_IGN survives exec) made the
    kernel reap python-sb's children unseen: under landlock, unshare and
    learning python-sb then waited forever (and ended 0 when killed), and
    a limited subprocess run ended 0 whatever the program's status."""
    if mode == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    flags, rules = MODES.get(mode, (["--os-sandbox=subprocess",
                                     "--py-sandbox=false"],
                                    "python-import=*\n"))
    for name, text in ((".py-sandboxes", rules), ("prog.py", CHLD_PROGRAM)):
        (cwd / name).write_text(text)
        if user == "nobody" and os.geteuid() == 0:
            os.chown(cwd / name, NOBODY, NOBODY)
    argv = [str(sb_path()), f"--python={DEBIAN_PYTHON}", *flags, "prog.py"]
    if user == "nobody":
        argv = as_nobody(argv)
    p = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    try:
        out, err = p.communicate(timeout=scaled(60))
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"{mode}: python-sb still waits for a program that "
                    f"ended: {out}{err}")
    if "user namespace" in err and p.returncode == 255:
        pytest.skip(f"{mode} as {user}: no user namespaces here")
    assert (p.returncode, out) == (
        7, f"{SIGCHLD_SEEN.get(mode, int(signal.SIG_IGN))}\n"), err
