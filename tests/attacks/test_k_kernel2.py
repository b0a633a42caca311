"""Group K, round 3: variants of the kernel layer's classes, with hostile
native code (build/try-syscall exec'd with py-sandbox=false) and every
effect checked from outside the sandbox (test_k_kernel.py's conventions).
"""

import os
import pty
import shutil
import subprocess

import pytest

from harness import DEBIAN_PYTHON, NOBODY, as_nobody, attack, helper_path, scaled


@pytest.fixture
def tree(case):
    if case.os_sandbox == "subprocess":
        pytest.skip("os-sandbox=subprocess has no kernel layer by design "
                    "(weaknesses.md 1 and 18)")
    case.mkdir("rw", "bin")
    case.rules = f"py-sandbox=false\nexpose-rw={case.root}/rw\n"
    shutil.copy2(helper_path(), case.path("bin/try-syscall"))
    case.write(".py-sandboxes", case.rules + f"expose-ro={case.root}/bin\n"
               f"os-sandbox={case.os_sandbox}\n")
    return case


# A shell's session on a pty: a background job that writes to the terminal
# now and then, and python-sb run in the foreground; once python-sb has
# returned, the job's state (T: stopped) on stderr.
_SESSION = r'''
import os, signal, subprocess, sys, time
bg = os.fork()
if bg == 0:
    os.setpgid(0, 0)
    while True:
        try:
            os.write(1, b".")
        except OSError:
            pass
        time.sleep(0.05)
time.sleep(0.3)
p = subprocess.run(sys.argv[1:], stdin=0, stdout=subprocess.PIPE,
                   text=True)
time.sleep(0.5)
with open(f"/proc/{bg}/stat") as f:
    state = f.read().rsplit(")", 1)[1].split()[0]
print("ANSWER", p.stdout.strip(), file=sys.stderr, flush=True)
print("STATE", state, file=sys.stderr, flush=True)
os.kill(bg, signal.SIGKILL)
'''


@attack("K50", "native: TOSTOP on the caller's terminal stops its "
        "background jobs (a real pty)")
def test_K50(tree, judge):
    """The program may change the modes of a terminal it inherited (echo,
    raw mode), and python-sb sets them back when the run ends (K23). One
    mode acts on processes outside meanwhile: with TOSTOP, a background
    job of the caller's shell that writes to the terminal gets SIGTTOU and
    stops, and stays stopped after the run. TCSETS, TCSETSW and TCSETSF go
    to the supervisor, which refuses a change of TOSTOP and sets the rest
    itself. Evidence from outside: the background job's state after the
    run."""
    master, slave = pty.openpty()
    helper = tree.path("bin/try-syscall")
    code = (f"import os\nos.execv({helper!r}, "
            f"{[helper, 'tostop', '0', str(int(scaled(1)) or 1)]!r})\n")
    session = tree.write("session.py", _SESSION)
    argv = [DEBIAN_PYTHON, session, tree.sb, f"--python={tree.python}",
            "-c", code]
    if tree.nobody:
        from harness import chown_tree
        chown_tree(tree.root)
        os.chown(os.ttyname(slave), NOBODY, NOBODY)
        argv = as_nobody(argv)

    def ctty():
        import fcntl
        import termios
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        r = subprocess.run(argv, stdin=slave, stdout=slave,
                           stderr=subprocess.PIPE, text=True, cwd=tree.root,
                           preexec_fn=ctty, timeout=scaled(120))
    finally:
        os.close(slave)
        os.close(master)
    lines = dict(ln.split(" ", 1) for ln in r.stderr.splitlines()
                 if ln.startswith(("ANSWER ", "STATE ")))
    state = lines.get("STATE", "").strip()
    answer = lines.get("ANSWER", "").strip()
    judge.native("ok" if state == "T" else answer, "EPERM")
    assert state in ("S", "R"), (state, r.stderr)
