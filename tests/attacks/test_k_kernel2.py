"""Group K, round 3: variants of the kernel layer's classes, with hostile
native code (build/try-syscall exec'd with py-sandbox=false) and every
effect checked from outside the sandbox (test_k_kernel.py's conventions).
"""

import os
import pty
import shutil
import subprocess

import pytest

from harness import (DEBIAN_PYTHON, NOBODY, as_nobody, attack, helper_path,
                     scaled)


@pytest.fixture
def tree(case):
    if case.os_sandbox == "subprocess":
        pytest.skip("os-sandbox=subprocess has no kernel layer by design "
                    "(weaknesses.md 1 and 18)")
    return _tree(case)


@pytest.fixture
def any_tree(case):
    """tree under every provider: what python-sb itself does before any
    kernel layer (the descriptors it closes) holds under subprocess too."""
    return _tree(case)


def _tree(case):
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


@attack("K51", "native: dnotify on a tree exposed to be listed tells when "
        "its files are read")
def test_K51(tree, judge):
    """A tree exposed to be listed gives its names, not its contents nor
    when its files are read: an inotify watch there reports names only
    (K20). F_NOTIFY (dnotify) on a directory the program may list sent it
    a signal each time a host process read or wrote a file there (the
    timing of the reads: keystrokes on a listed /dev/pts). The filter's
    fcntl list leaves F_NOTIFY out. Evidence from outside: the count of
    notifications the helper wrote into the exposed tree while a host
    process read a file of the listed one."""
    import threading
    tree.mkdir("listed")
    existing = tree.write("listed/existing", "x\n")
    if tree.nobody:
        from harness import chown_tree
        chown_tree(tree.root)
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            with open(existing) as f:
                f.read()
            stop.wait(0.05)

    t = threading.Thread(target=reader)
    t.start()
    try:
        answer = tree.native(
            tree.rules + f"expose-list={tree.root}/listed\n",
            ["dnotify", tree.path("listed"), tree.path("rw/dnotified"),
             str(int(scaled(2)) or 1)])
    finally:
        stop.set()
        t.join()
    seen = (open(tree.path("rw/dnotified")).read().strip()
            if os.path.exists(tree.path("rw/dnotified")) else "")
    judge.native("ok" if seen not in ("", "0") else answer, "EPERM")
    assert seen in ("", "0"), seen


def _through_pipe(r, w, run):
    """A producer's line in the pipe (r, w), then run(); the write end
    closed, what the pipe holds then. Both ends are closed on return:
    (run()'s result, the rest of the pipe)."""
    try:
        os.write(w, b"echo producer\n")
        got = run()
        os.close(w)
        w = -1
        rest = b""
        while True:
            d = os.read(r, 4096)
            if not d:
                break
            rest += d
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    return got, rest


@attack("K52", "native: a line written into the caller's stdin pipe, "
        "which the caller's next command reads")
def test_K52(tree, judge):
    """python-sb's stdin is a pipe the caller reads from after the run
    (`{ python-sb job.py; sh; }`, `curl ... | sh` around python-sb, `ssh
    host bash -s`): the program holds its read end only, but opening
    /proc/self/fd/0 for writing gives it a new description of the same
    pipe, and Landlock does not judge the kernel's internal pipe mount.
    A line written there is read, after the run, by whatever reads the
    pipe next: a shell runs it outside the sandbox. Evidence from
    outside: the rest of the pipe, read by the test after python-sb
    returned. python-sb takes the write bits off a read-only stdin pipe
    (and the read bits off a write-only stdout or stderr pipe) while the
    run lasts: the program, with no capability, gets EACCES, and its chmod
    of the pipe is the supervisor's to refuse (no path in an expose-rw
    tree)."""
    helper = tree.path("bin/try-syscall")
    args = [helper, "reopen-write", "0", "echo INJECTED\n"]
    code = f"import os\nos.execv({helper!r}, {args!r})\n"
    argv = [tree.sb, f"--python={tree.python}", "-c", code]
    if tree.nobody:
        from harness import chown_tree
        chown_tree(tree.root)
        argv = as_nobody(argv)
    r, w = os.pipe()
    if tree.nobody:
        os.fchown(r, NOBODY, NOBODY)  # the caller's own pipe, as its user's
    before = os.fstat(r).st_mode & 0o7777
    seen = {}

    def run():
        p = subprocess.run(argv, stdin=r, capture_output=True, text=True,
                           cwd=tree.root, timeout=scaled(120))
        seen["after"] = os.fstat(r).st_mode & 0o7777
        return p

    p, rest = _through_pipe(r, w, run)
    after = seen["after"]
    answer = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    judge.native("ok" if b"INJECTED" in rest else answer or "errno ?",
                 "EACCES")
    assert b"INJECTED" not in rest, rest
    assert rest == b"echo producer\n", rest
    # set back when the run ends (not under firejail, which python-sb
    # execs: weaknesses.md 103; the caller's pipe stays read-only there)
    if tree.os_sandbox != "firejail":
        assert after == before, (oct(before), oct(after))


def _run_native(tree, args, **kw):
    """try-syscall ARGS exec'd by the program, as tree's user; its answer
    (the last line of its output)."""
    helper = tree.path("bin/try-syscall")
    code = f"import os\nos.execv({helper!r}, {[helper] + args!r})\n"
    argv = [tree.sb, f"--python={tree.python}", "-c", code]
    if tree.nobody:
        from harness import chown_tree
        chown_tree(tree.root)
        argv = as_nobody(argv)
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tree.root,
                       timeout=scaled(120), **kw)
    out = p.stdout.strip()
    return out.splitlines()[-1] if out else ""


@attack("K53", "native: the caller's flock(1) lock released through the "
        "descriptor it left open")
def test_K53(any_tree, judge):
    """`flock /var/lock/job.lock python-sb job.py`: flock(1) leaves the
    locked descriptor open for its command, and the program shares its
    open file description, lock included: flock(fd, LOCK_UN) released it
    for the caller, and a second job ran beside the first. Evidence from
    outside: a second open of the lock file, locked without waiting by the
    test once python-sb returned. python-sb closes the descriptors above 2
    that the caller did not name with --pysandboxes-keep-fd."""
    tree = any_tree
    lock = tree.path("rw/job.lock")
    with open(lock, "w"):
        pass
    fd = os.open(lock, os.O_RDONLY)
    try:
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_EX)
        answer = _run_native(tree, ["unlock", str(fd)], pass_fds=(fd,))
        probe = os.open(lock, os.O_RDONLY)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            released = True
        except BlockingIOError:
            released = False
        finally:
            os.close(probe)
    finally:
        os.close(fd)
    judge.native("ok" if released else answer or "errno ?", "EBADF")
    assert not released, answer


@attack("K54", "native: a line written into a pipe the caller left open "
        "above descriptor 2, which it reads after the run")
def test_K54(any_tree, judge):
    """A pipe's read end passed above descriptor 2 (a shell's `3<&0`, a
    supervisor's status pipe): K52's reopening through /proc/self/fd/N for
    writing gave the program a writable description of the caller's pipe
    (python-sb narrows 0 to 2 only). Evidence from outside: the rest of
    the pipe, read by the test after python-sb returned. python-sb closes
    the descriptors above 2 that the caller did not name."""
    tree = any_tree
    r, w = os.pipe()
    if tree.nobody:
        os.fchown(r, NOBODY, NOBODY)  # the caller's own pipe, as its user's
    answer, rest = _through_pipe(r, w, lambda: _run_native(
        tree, ["reopen-write", str(r), "echo INJECTED\n"], pass_fds=(r,),
        stdin=subprocess.DEVNULL))
    judge.native("ok" if b"INJECTED" in rest else answer or "errno ?",
                 "ENOENT")
    assert rest == b"echo producer\n", rest
