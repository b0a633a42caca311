"""Group K: the kernel layer's second round (issue 13), by class, with
hostile native code (build/try-syscall exec'd with py-sandbox=false) and
every effect checked from outside the sandbox: a victim process's /proc
entry, a file's mode, times and attributes, a host SysV segment or queue,
a pty's input queue, the program's capability sets, a process left behind.

Every kernel provider loads the same seccomp allowlist (landlock directly;
unshare, bwrap and firejail in python-sb's second stage) and runs the
program in its own session, with no capabilities, under a python-sb that
ends every process of the run. os-sandbox=subprocess has no kernel layer by
design (weaknesses.md 1 and 18): its columns are skipped here. Under the
namespace providers a victim outside is not even visible (ESRCH, ENOENT):
any errno is the kernel's refusal there (harness.Judge.native).
"""

import ctypes
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time
import tty

import pytest

from harness import (API_ERR, DEBIAN_PYTHON, NOBODY, api_denied, as_nobody,
                     attack, documented_escape, helper_path, scaled)

LIBC = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, IPC_RMID = 0o1000, 0


@pytest.fixture
def tree(case):
    if case.os_sandbox == "subprocess":
        pytest.skip("os-sandbox=subprocess has no kernel layer by design "
                    "(weaknesses.md 1 and 18)")
    case.mkdir("rw", "outside")
    case.rules = f"py-sandbox=false\nexpose-rw={case.root}/rw\n"
    return case


def attempt(tree, *args, rules=""):
    return tree.native(tree.rules + rules, [str(a) for a in args])


def victim(tree):
    """A process of the sandbox's user outside the sandbox."""
    argv = ["sleep", "600"]
    if tree.nobody:
        argv = as_nobody(argv)
    p = subprocess.Popen(argv)
    deadline = time.monotonic() + 30
    # setpriv execs sleep: wait until the pid is sleep itself
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.pid}/comm") as f:
                if f.read().strip() == "sleep":
                    break
        except OSError:
            pass
        time.sleep(0.02)
    return p


def proc_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith(name + ":"):
                return ln.split(":", 1)[1].strip()
    return None


def nofile_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for ln in f:
            if ln.startswith("Max open files"):
                return ln.split()[3:5]
    return None


def nice_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def ioprio_of(pid):
    LIBC.syscall.restype = ctypes.c_long
    return LIBC.syscall(252 if os.uname().machine == "x86_64" else 31,
                        1, pid)


@attack("K1", "native: prlimit, setpriority, sched_setaffinity, ioprio_set "
        "on another process")
def test_K1(tree, judge):
    v = victim(tree)
    try:
        before = (nofile_limit(v.pid), nice_of(v.pid),
                  proc_field(v.pid, "Cpus_allowed_list"), ioprio_of(v.pid))
        for action, extra in (("prlimit-nofile", ()),
                              ("setpriority", (19,)),
                              ("setaffinity", ()), ("ioprio", ())):
            judge.native(attempt(tree, action, v.pid, *extra), "EPERM")
        after = (nofile_limit(v.pid), nice_of(v.pid),
                 proc_field(v.pid, "Cpus_allowed_list"), ioprio_of(v.pid))
        assert after == before
    finally:
        v.kill()
        v.wait()


@attack("K2", "native: chmod, utimes, setxattr, chown outside every "
        "exposure")
def test_K2(tree, judge):
    f = tree.write("outside/target", "x\n")
    os.chmod(f, 0o600)
    if tree.nobody:
        os.chown(f, NOBODY, NOBODY)
    st = os.stat(f)
    judge.native(attempt(tree, "chmod", f, "777"), "EPERM")
    judge.native(attempt(tree, "utimes", f), "EPERM")
    judge.native(attempt(tree, "setxattr", f), "EPERM")
    judge.native(attempt(tree, "chown", f, os.getuid()), "EPERM")
    after = os.stat(f)
    assert (after.st_mode, after.st_mtime_ns, after.st_uid) == \
        (st.st_mode, st.st_mtime_ns, st.st_uid)
    assert os.listxattr(f) == []


@attack("K3", "native: a setuid or setgid bit, a device node, an owner "
        "or an xattr inside expose-rw")
def test_K3(tree, judge):
    f = tree.write("rw/prog", "#!/bin/sh\n")
    os.chmod(f, 0o755)
    if tree.nobody:
        os.chown(f, NOBODY, NOBODY)
    # the ordinary changes pass inside expose-rw...
    assert attempt(tree, "chmod", f, "700") == "ok"
    assert os.stat(f).st_mode & 0o7777 == 0o700
    assert attempt(tree, "utimes", f) == "ok"
    assert int(os.stat(f).st_mtime) == 1000000
    assert attempt(tree, "mknod-fifo", tree.path("rw/fifo")) == "ok"
    # ...the privileged ones never
    judge.native(attempt(tree, "chmod", f, "4755"), "EPERM")
    judge.native(attempt(tree, "chmod", f, "2755"), "EPERM")
    judge.native(attempt(tree, "create-suid", tree.path("rw/suid")),
                 "EPERM")
    judge.native(attempt(tree, "mknod-char", tree.path("rw/mem")), "EPERM")
    judge.native(attempt(tree, "chown", f, 0), "EPERM")
    judge.native(attempt(tree, "setxattr", f), "EPERM")
    assert os.stat(f).st_mode & 0o6000 == 0
    assert not os.path.exists(tree.path("rw/suid"))
    assert not os.path.exists(tree.path("rw/mem"))
    assert os.listxattr(f) == []


def sysv(name, *args):
    fn = getattr(LIBC, name)
    r = fn(*args)
    if r == -1 or r == ctypes.c_void_p(-1).value:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


@attack("K4", "native: host SysV shared memory, message queues, POSIX "
        "message queues and keyrings")
def test_K4(tree, judge):
    key = 0x50590000 + (os.getpid() & 0xffff)
    shm = sysv("shmget", key, 4096, IPC_CREAT | 0o666)
    LIBC.shmat.restype = ctypes.c_void_p
    addr = LIBC.shmat(shm, None, 0)
    ctypes.memmove(addr, b"s3cret-host-shm\0", 16)
    msq = sysv("msgget", key, IPC_CREAT | 0o666)
    try:
        judge.native(attempt(tree, "shm-read", key), "EPERM")
        judge.native(attempt(tree, "msg-send", key), "EPERM")
        buf = ctypes.create_string_buffer(64)
        # nothing was delivered: IPC_NOWAIT finds the queue empty
        assert LIBC.msgrcv(msq, buf, 32, 0, 0o4000) == -1
        judge.native(attempt(tree, "mq-open", "/pysb-k4"), "EPERM")
        judge.native(attempt(tree, "add-key"), "EPERM")
    finally:
        LIBC.shmdt(ctypes.c_void_p(addr))
        LIBC.shmctl(shm, IPC_RMID, None)
        LIBC.msgctl(msq, IPC_RMID, None)


@attack("K5", "native: root's capabilities: host name, an interface's "
        "flags, IP source routing")
def test_K5(tree, judge):
    name = os.uname().nodename
    judge.native(attempt(tree, "sethostname", name), "EPERM")
    judge.native(attempt(tree, "ifflags-lo"), "EPERM")
    judge.native(attempt(tree, "ip-options",
                         rules="net=ALLOW|UDP|127.0.0.1|9|OUT\n"), "EPERM")
    assert os.uname().nodename == name


def find_helper(tree, action):
    """Pids of try-syscall processes of this case doing 'action', seen in
    the host's /proc (the namespace providers' pids differ inside)."""
    helper = tree.path("bin/try-syscall")
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0].decode(errors="replace") == helper \
                and argv[1] == action.encode():
            found.append(int(d))
    return found


@attack("K6", "native: the program's capability sets, root included")
def test_K6(tree, judge):
    flag = tree.path("rw/pid")
    answer = {}
    t = threading.Thread(target=lambda: answer.setdefault(
        "a", attempt(tree, "caps-wait", flag)))
    t.start()
    try:
        deadline = time.monotonic() + 60
        pids = []
        while time.monotonic() < deadline and not pids:
            if os.path.exists(flag):
                pids = find_helper(tree, "caps-wait")
            time.sleep(0.05)
        assert pids, "the helper did not start"
        caps = {k: proc_field(pids[0], k)
                for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
        nnp = proc_field(pids[0], "NoNewPrivs")
    finally:
        try:
            os.unlink(flag)
        except FileNotFoundError:
            pass
        t.join()
    # an unprivileged user cannot drop its bounding set without
    # CAP_SETPCAP (landlock as nobody: no user namespace): it holds no
    # capability, and no_new_privs stops an exec from gaining one
    # (weaknesses.md 37); root and every user namespace lose it
    bnd_stays = tree.os_sandbox == "landlock" and tree.nobody
    held = {k: v for k, v in caps.items() if int(v, 16) != 0 and
            not (k == "CapBnd" and bnd_stays)}
    judge.observe(type("O", (), {"escaped": bool(held), "kind": "returned"
                                 if held else "raised", "exc": "caps",
                                 "errno": None if held else "EPERM",
                                 "__repr__": lambda s: repr(caps)})())
    assert not held, caps
    assert nnp == "1"
    assert answer.get("a") == "ok"


@attack("K7", "native: a double-forked process outlives python-sb")
def test_K7(tree, judge):
    assert attempt(tree, "daemon", tree.path("rw/daemon.pid")) == "ok"
    # python-sb has returned: nothing of the run may be left
    left = find_helper(tree, "daemon")
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    judge.native("ok" if left else "errno ESRCH", "ESRCH")
    assert os.path.exists(tree.path("rw/daemon.pid"))


def on_a_pty(tree, args, after=None):
    """Run the helper with args inside the sandbox, python-sb's controlling
    terminal a real pty as a shell would give it. Returns (the helper's
    answer, what a reader of the terminal would get next, the pty's
    window size afterwards); after(master, slave, modes), if given, is
    called once python-sb has returned, before the pty is closed, with the
    terminal's modes before the run."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    modes = termios.tcgetattr(slave)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    helper = tree.path("bin/try-syscall")
    os.makedirs(tree.path("bin"), exist_ok=True)
    if not os.path.exists(helper):
        import shutil
        shutil.copy2(helper_path(), helper)
    tree.write(".py-sandboxes", tree.rules + f"expose-ro={tree.root}/bin\n"
               f"os-sandbox={tree.os_sandbox}\n")
    code = (f"import os\nos.execv({helper!r}, "
            f"{[helper, *args]!r})\n")
    argv = [tree.sb, f"--python={tree.python}", "-c", code]
    if tree.nobody:
        from harness import chown_tree
        chown_tree(tree.root)
        os.chown(os.ttyname(slave), NOBODY, NOBODY)
        argv = as_nobody(argv)

    def ctty():
        # python-sb as a shell would run it: the pty is its controlling
        # terminal and its group the foreground one
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    r = subprocess.run(argv, stdin=slave, capture_output=True, text=True,
                       cwd=tree.root, preexec_fn=ctty, timeout=120)
    # what a shell reading the terminal would get next (its blocking
    # flag as the run left it, for after())
    blocking = os.get_blocking(slave)
    os.set_blocking(slave, False)
    try:
        queued = os.read(slave, 4096)
    except BlockingIOError:
        queued = b""
    os.set_blocking(slave, blocking)
    size = struct.unpack("HHHH", fcntl.ioctl(master, termios.TIOCGWINSZ,
                                             b"\0" * 8))[:2]
    try:
        if after:
            after(master, slave, modes)
    finally:
        os.close(slave)
        os.close(master)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout.strip().splitlines()[-1], queued, size


@attack("K8", "native: TIOCSTI into the caller's terminal (a real pty)")
def test_K8(tree, judge):
    answer, queued, _ = on_a_pty(tree, ["tiocsti", "0", "id; echo PWNED\n"])
    judge.native(answer, "EPERM")
    assert b"PWNED" not in queued and b"id;" not in queued, queued


@attack("K15", "native: TIOCSWINSZ on the caller's terminal (SIGWINCH to "
        "its foreground group)")
def test_K15(tree, judge):
    """Setting the terminal's size signals the terminal's foreground
    process group, outside the sandbox: python-sb, its shell's job, a
    pipeline partner. Evidence from outside: the pty's size."""
    answer, _, size = on_a_pty(tree, ["winsize", "0", "7", "13"])
    judge.native(answer, "EPERM")
    assert size == (24, 80), size


def _prompt_shows(master, slave):
    """What the caller's shell does after the run: write its prompt to the
    terminal (the slave), which its reader (the master) must get."""
    import select
    os.set_blocking(slave, False)
    try:
        os.write(slave, b"PROMPT$ ")
    except BlockingIOError:
        return False  # output stopped: the shell would hang here
    deadline = time.monotonic() + scaled(5)
    got = b""
    while b"PROMPT$ " not in got and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            got += os.read(master, 4096)
    return b"PROMPT$ " in got


@attack("K21", "native: TCXONC's TCOOFF stops the caller's terminal "
        "(a real pty)")
def test_K21(tree, judge):
    """tcflow(TCOOFF) on the inherited terminal stops its output, and it
    stays stopped after python-sb returns: the caller's shell hangs on
    its next prompt. TCXONC is allowed with TCOON and TCION only (readline
    sends TCOON). Evidence from outside: a prompt written to the pty after
    the run reaches its master."""
    shown = []
    answer, _, _ = on_a_pty(tree, ["tcxonc", "0", "0"],
                            after=lambda m, s, _: shown.append(
                                _prompt_shows(m, s)))
    judge.native(answer, "EPERM")
    assert shown == [True], "the terminal's output is stopped"
    # a restart is the program's business
    answer, _, _ = on_a_pty(tree, ["tcxonc", "0", "1"])
    assert answer == "ok", answer


@documented_escape(["firejail"],
                   "weaknesses.md 38: python-sb execs firejail, so nothing "
                   "of it is left to set the terminal back")
@attack("K23", "native: O_NONBLOCK and the modes of the caller's terminal "
        "outlive the run (a real pty)")
def test_K23(tree, judge):
    """The program shares its inherited descriptors' open file descriptions
    with the caller: O_NONBLOCK set on them, or a terminal's modes (echo,
    canonical input), stayed after python-sb returned (the caller's next
    read failed with EAGAIN, its typing went unechoed). Both are the
    program's to change while it runs; python-sb sets them back when the
    run ends. Evidence from outside: the pty's flags and modes after the
    run."""
    after = []
    answer, _, _ = on_a_pty(tree, ["tty-state", "0"],
                            after=lambda m, s, modes: after.append(
                                (os.get_blocking(s),
                                 termios.tcgetattr(s) == modes)))
    assert answer == "ok", answer  # the program's own business meanwhile
    if after == [(True, True)]:
        judge._record("refused by launcher (set back)", repr(after))
    else:
        judge._record("escaped", repr(after))
    assert after == [(True, True)], "(blocking, same modes) after the run"


@attack("K9", "pure Python: fcntl.ioctl(TIOCSTI) with only "
        "python-import=fcntl")
def test_K9(case, judge):
    """The guard judges fcntl.ioctl by request, from the same list the
    kernel layer allows: TIOCSTI is not on it (every column, subprocess
    included: this is the Python layer)."""
    obs = case.run("python-import=fcntl\npython-import=termios\n", {
        "tiocsti": "import fcntl, termios\n"
                   "return fcntl.ioctl(0, termios.TIOCSTI, b'x')\n",
        "fionread": "import fcntl, termios\n"
                    "try:\n"
                    "    fcntl.ioctl(0, termios.FIONREAD, b'0000')\n"
                    "except OSError as e:\n"
                    "    return e.errno\n",
        # TCXONC is judged with its argument (K21): a restart passes
        "tcooff": "import fcntl, termios\n"
                  "return fcntl.ioctl(0, termios.TCXONC, termios.TCOOFF)\n",
        "tcoon": "import fcntl, termios\n"
                 "try:\n"
                 "    fcntl.ioctl(0, termios.TCXONC, termios.TCOON)\n"
                 "except OSError as e:\n"
                 "    return e.errno\n",
    })
    judge.python(obs["tiocsti"], API_ERR,
                 api_denied("fcntl.ioctl", "process-control"))
    assert obs["tcooff"].exc == API_ERR, obs["tcooff"]
    # a request of the list is not the guard's business
    assert obs["fionread"].escaped, obs["fionread"]
    assert obs["tcoon"].escaped, obs["tcoon"]


@attack("K10", "native: IP source routing in a send's ancillary data")
def test_K10(tree, judge):
    """A datagram to an allowed address carrying IP_RETOPTS (a loose
    source route) would leave addressed elsewhere: the supervisor refuses
    the control message, and the listener outside receives nothing."""
    import socket
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    try:
        rule = f"net=ALLOW|UDP|127.0.0.1|{port}|OUT\n"
        judge.native(attempt(tree, "sendmsg-retopts", "127.0.0.1", port,
                             rules=rule), "EPERM")
        srv.settimeout(0.5)
        with pytest.raises(socket.timeout):
            srv.recv(16)
        # the same datagram without the option is delivered
        assert attempt(tree, "sendto-udp", "127.0.0.1", port,
                       rules=rule) == "ok"
        srv.settimeout(30)
        assert srv.recv(16) == b"x"
    finally:
        srv.close()


def _nft(*args):
    return subprocess.run(["nft", *args], capture_output=True, text=True)


@attack("K14", "native: a packet mark in a send's ancillary data")
def test_K14(tree, judge):
    """SO_MARK as a control message of sendmsg needs CAP_NET_ADMIN of the
    sender. The supervisor performs the send: as root its capability
    would mark the program's packet (policy routing, a VPN's bypass mark,
    firewall rules). It refuses the control message; an nftables counter
    outside sees no packet with the mark."""
    import shutil
    import socket
    if os.geteuid() != 0 or not shutil.which("nft"):
        pytest.skip("the counter outside needs root and nft")
    table = f"pysb_k12_{os.getpid()}"
    mark = 0x5B12
    if _nft("add", "table", "inet", table).returncode != 0:
        pytest.skip("nftables is not usable here")
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        assert _nft("add", "chain", "inet", table, "out",
                    "{ type filter hook output priority 0; }").returncode == 0
        assert _nft("add", "rule", "inet", table, "out", "meta", "mark",
                    hex(mark), "counter").returncode == 0
        srv.bind(("127.0.0.1", 0))
        port = srv.getsockname()[1]
        rule = f"net=ALLOW|UDP|127.0.0.1|{port}|OUT\n"
        judge.native(attempt(tree, "sendmsg-mark", "127.0.0.1", port,
                             hex(mark), rules=rule), "EPERM")
        listed = _nft("list", "chain", "inet", table, "out").stdout
        assert "packets 0 " in listed, listed
        # the same datagram without the mark is delivered
        assert attempt(tree, "sendto-udp", "127.0.0.1", port,
                       rules=rule) == "ok"
        srv.settimeout(30)
        assert srv.recv(16) == b"x"
    finally:
        srv.close()
        _nft("delete", "table", "inet", table)


def _keep_making(directory, stop):
    """Entries made and removed in directory outside the sandbox, by
    another process of the host, until stop is set."""
    i = 0
    while not stop.is_set():
        name = os.path.join(directory, f"secret-name-{i}")
        try:
            with open(name, "w") as f:
                f.write("x")
            os.unlink(name)
        except OSError:
            pass
        i += 1
        stop.wait(0.05)


@attack("K20", "native: an inotify watch on a directory no rule exposes")
def test_K20(tree, judge):
    """Landlock has no hook for an inotify watch: a program could watch any
    path its user may read (a directory no rule exposes, the caller's
    terminal) and learn the names made, opened and removed there and when
    a file is read or written. The supervisor adds a watch only inside an
    exposed tree. Evidence from outside: the names the helper wrote into
    the exposed tree (a file on the host)."""
    seen = tree.path("rw/seen")
    stop = threading.Event()
    makers = [threading.Thread(target=_keep_making, args=(tree.path(d), stop))
              for d in ("outside", "rw")]
    for t in makers:
        t.start()
    try:
        wait = str(int(scaled(10)))
        judge.native(attempt(tree, "inotify-watch", tree.path("outside"),
                             seen, wait), "EPERM")
        named = open(seen).read() if os.path.exists(seen) else ""
        assert "secret-name" not in named, named
        # a watch inside an exposed tree is the program's own business
        assert attempt(tree, "inotify-watch", tree.path("rw"),
                       tree.path("rw/seen-rw"), wait) == "ok"
        with open(tree.path("rw/seen-rw")) as f:
            assert "secret-name" in f.read()
    finally:
        stop.set()
        for t in makers:
            t.join()
    # a tree exposed to be listed: names made there, not when its files
    # are read (a host process reads one all along)
    tree.mkdir("listed")
    existing = tree.write("listed/existing", "x\n")
    stop.clear()

    def reader():
        while not stop.is_set():
            with open(existing) as f:
                f.read()
            stop.wait(0.05)

    t = threading.Thread(target=reader)
    t.start()
    try:
        answer = attempt(tree, "inotify-watch", tree.path("listed"),
                         tree.path("rw/seen-listed"), str(int(scaled(2))),
                         rules=f"expose-list={tree.root}/listed\n")
    finally:
        stop.set()
        t.join()
    assert answer == "ok", answer
    named = (open(tree.path("rw/seen-listed")).read()
             if os.path.exists(tree.path("rw/seen-listed")) else "")
    assert "existing" not in named, named


@attack("K22", "native: a write lease on a read-only file holds every open "
        "of it outside")
def test_K22(tree, judge):
    """fcntl(F_SETLEASE, F_WRLCK) on a file the program may only read (and
    its user owns) made every other process's open of it, a reader's too,
    wait until the holder let go or the lease-break time (45 s) passed:
    a host program reading its own configuration hung. F_SETLEASE is not
    on fcntl's list. Evidence from outside: how long a read of the file
    takes while the program runs."""
    tree.mkdir("ro")
    target = tree.write("ro/config", "setting = 1\n")
    marker = tree.path("rw/tried")
    hold = int(scaled(10))
    out = []
    t = threading.Thread(target=lambda: out.append(
        attempt(tree, "lease", target, marker, hold,
                rules=f"expose-ro={tree.root}/ro\n")))
    t.start()
    try:
        deadline = time.monotonic() + scaled(60)
        while (not os.path.exists(marker) and t.is_alive() and
               time.monotonic() < deadline):
            time.sleep(0.05)
        start = time.monotonic()
        with open(target) as f:
            assert f.read() == "setting = 1\n"
        held = time.monotonic() - start
    finally:
        t.join()
    judge.native(out[0], "EPERM")
    assert held < hold / 2, f"a reader outside waited {held:.1f} s"


def _default_iface():
    """The interface of the host's IPv4 default route, or None."""
    try:
        with open("/proc/net/route") as f:
            for ln in f.read().splitlines()[1:]:
                cols = ln.split()
                if len(cols) > 2 and cols[1] == "00000000":
                    return cols[0]
    except OSError:
        pass
    return None


def _sniff_reports(iface, marks, stop, seen):
    """Outgoing frames on iface that carry one of marks (a group's bytes):
    an IGMP report (IPv4 protocol 2) or an IPv6 packet (MLD)."""
    import select
    import socket
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    try:
        s.bind((iface, 0))
        while not stop.is_set():
            if not select.select([s], [], [], 0.1)[0]:
                continue
            pkt, addr = s.recvfrom(65535)
            if addr[2] != socket.PACKET_OUTGOING:
                continue
            ip4 = pkt[12:14] == b"\x08\x00" and pkt[23] == 2
            ip6 = pkt[12:14] == b"\x86\xdd"
            if (ip4 or ip6) and any(m in pkt for m in marks):
                seen.append(pkt.hex())
    finally:
        s.close()


@attack("K24", "native: a multicast join sends the group's address on the "
        "local network (IGMP, MLD)")
def test_K24(tree, judge):
    """Joining a multicast group makes the kernel send a membership report
    on the local network, whose group address is the program's choice: 28
    bits a packet over IGMP, 112 over MLD, seen by any host of the link,
    with net= rules that name no such address. setsockopt's list has no
    membership. Evidence from outside: the reports on the host's default
    interface, captured while the program runs (as root)."""
    iface = _default_iface()
    if os.geteuid() != 0 or not iface:
        pytest.skip("capturing the reports needs root and a default route")
    groups = {"239.83.69.67": bytes([239, 83, 69, 67]),
              "ff0e::5345:4352:4554": bytes.fromhex("534543524554")}
    stop, seen = threading.Event(), []
    sniffer = threading.Thread(target=_sniff_reports,
                               args=(iface, list(groups.values()), stop,
                                     seen))
    sniffer.start()
    try:
        rule = "net=ALLOW|UDP|127.0.0.1|9|OUT\n"
        for group in groups:
            judge.native(attempt(tree, "mcast-join", group, rules=rule),
                         "EPERM")
        stop.wait(scaled(1))
    finally:
        stop.set()
        sniffer.join()
    assert not seen, f"membership reports left on {iface}: {seen}"


@attack("K25", "native: read an extended attribute of a file no rule "
        "exposes")
def test_K25(tree, judge):
    """Landlock has no hook for reading an extended attribute: a program
    read the user.* data of any file its user may reach, such as the
    address a browser downloaded it from (user.xdg.origin.url), while the
    file itself was refused. The supervisor reads attributes by path
    inside an exposed tree only. Evidence from outside: what the helper
    wrote into the exposed tree (a file on the host)."""
    secret = b"https://example.org/download?token=K25-SECRET"
    target = tree.write("outside/download.pdf", "x\n")
    mine = tree.write("rw/mine", "x\n")
    try:
        os.setxattr(target, "user.xdg.origin.url", secret)
        os.setxattr(mine, "user.note", b"K25-OWN")
    except OSError as e:
        pytest.skip(f"no user extended attributes here: {e}")
    leak = tree.path("rw/leak")
    judge.native(attempt(tree, "getxattr", target, "user.xdg.origin.url",
                         leak), "EPERM")
    got = open(leak, "rb").read() if os.path.exists(leak) else b""
    assert b"K25-SECRET" not in got, got
    # an attribute inside an exposed tree is the program's to read
    assert attempt(tree, "getxattr", mine, "user.note", leak) == "ok"
    with open(leak, "rb") as f:
        assert f.read() == b"K25-OWN"


@attack("K26", "native: under a Landlock below ABI 6, kill and F_SETOWN "
        "reach a process outside")
def test_K26(tree, judge):
    """Landlock scopes signals from ABI 6 (Linux 6.12) on; python-sb runs
    on ABI 4 and 5 too (Linux 6.7 to 6.11), where the allowlist let kill,
    tgkill, sigqueue and pidfd_send_signal, and a descriptor's owner
    (F_SETOWN, F_SETSIG), signal any process of the user: the caller's
    shell, its editor. There the signal calls go to the supervisor, which
    lets them reach the sandbox's processes only, and F_SETOWN may only
    clear an owner. Run with $PYSB_LANDLOCK_ABI=5 (python-sb uses that
    ABI); evidence from outside: a victim process of the user alive."""
    env = dict(os.environ, PYSB_LANDLOCK_ABI="5")
    v = victim(tree)
    try:
        for action in ("kill", "setown"):
            judge.native(tree.native(tree.rules, [action, str(v.pid), "9"],
                                     env=env), "EPERM")
            time.sleep(0.2)
            assert v.poll() is None, f"{action}: the victim was killed"
        # the program's own process group stays its to signal
        assert tree.native(tree.rules, ["kill", "0", "0"], env=env) == "ok"
    finally:
        v.kill()
        v.wait()


@attack("K30", "native: chmod, utimes and a Unix socket's bind in a "
        "read-only tree inside expose-rw= (a venv's site-packages), made "
        "by the supervisor")
def test_K30(tree, judge):
    """Under landlock, python-sb keeps a read-only tree that an expose-rw=
    covers (the interpreter's, a venv's site-packages, the guard, its own
    files) read-only by a bind mount in the program's own mount namespace
    (selfprotect.c). The supervisor, which makes the mode and time changes
    and binds Unix sockets for the program, lives in the host's: it
    resolved the program's path there, where the tree is writable, so
    chmod 666 made the venv's modules writable to every user and a bind
    put a socket file into site-packages while the program's own write got
    EROFS. Evidence from outside: the module's mode and times, and no new
    entry."""
    import glob
    venv = tree.path("rw/venv")
    subprocess.run([tree.python, "-m", "venv", "--without-pip", venv],
                   check=True, capture_output=True)
    site = glob.glob(os.path.join(venv, "lib", "python3*",
                                  "site-packages"))[0]
    mod = os.path.join(site, "mod.py")
    with open(mod, "w") as f:
        f.write("x = 1\n")
    os.chmod(mod, 0o644)
    pth = os.path.join(site, "planted.pth")
    outer = tree.python
    tree.python = os.path.join(venv, "bin", "python")
    try:
        # nothing of the program's own reaches it...
        judge.native(attempt(tree, "open-write", mod), "EROFS")
        st = os.stat(mod)
        # ...nor what the supervisor does for it
        judge.native(attempt(tree, "chmod", mod, "666"), "EROFS")
        judge.native(attempt(tree, "utimes", mod), "EROFS")
        judge.native(attempt(tree, "bind-unix", pth), "EROFS")
        after = os.stat(mod)
        assert (after.st_mode, after.st_mtime_ns) == \
            (st.st_mode, st.st_mtime_ns)
        assert not os.path.lexists(pth)
        # the writable tree around it stays the program's
        own = tree.write("rw/own", "x\n")
        os.chmod(own, 0o600)
        if tree.nobody:
            os.chown(own, NOBODY, NOBODY)
        assert attempt(tree, "chmod", own, "640") == "ok"
        assert os.stat(own).st_mode & 0o777 == 0o640
        assert attempt(tree, "bind-unix", tree.path("rw/sock")) == "ok"
        assert os.path.exists(tree.path("rw/sock"))
    finally:
        tree.python = outer


@attack("K31", "native: under a Landlock below ABI 6, a pidfd switched "
        "by another thread after the supervisor checked it")
def test_K31(tree, judge):
    """Below ABI 6 the supervisor lets a signal call go on only to a
    process of the sandbox (K26). pidfd_send_signal names its target by a
    descriptor, which the program's threads share: one thread signals
    through descriptor N while another keeps turning N (dup2) into a pidfd
    of a process outside and back. The supervisor read N's target (the
    program's own child), let the call go on, and the kernel used what N
    had become: the victim outside got the signal within a second. Now
    the supervisor sends it itself on its own duplicate of the pidfd it
    judged. Run with $PYSB_LANDLOCK_ABI=5; evidence from outside: a victim
    process of the user alive (SIGUSR1 ends it)."""
    env = dict(os.environ, PYSB_LANDLOCK_ABI="5")
    v = victim(tree)
    try:
        judge.native(tree.native(tree.rules, ["pidfd-race", str(v.pid),
                                              str(int(scaled(5)))],
                                 env=env), "EPERM")
        time.sleep(0.2)
        assert v.poll() is None, "the victim got the signal"
        # the program's own process group stays its to signal
        assert tree.native(tree.rules, ["kill", "0", "0"], env=env) == "ok"
    finally:
        v.kill()
        v.wait()


# The caller of python-sb, as a program that uses signal-driven I/O would
# be: the owner (F_SETOWN) of the socket it hands over as stdin, with a
# SIGIO handler. It prints the helper's answer, does I/O on the socket
# while the helper waits, and says how many SIGIO it got.
_OWNER = r'''
import fcntl, os, signal, socket, subprocess, sys, time
got = []
signal.signal(signal.SIGIO, lambda *a: got.append(1))
a, b = socket.socketpair()
fcntl.fcntl(a.fileno(), fcntl.F_SETOWN, os.getpid())
p = subprocess.Popen(sys.argv[1:], stdin=a.fileno(), stdout=subprocess.PIPE,
                     text=True)
line = p.stdout.readline()
print("ANSWER", line.strip(), flush=True)
for _ in range(5):
    b.send(b"x")
    time.sleep(0.1)
p.communicate()
print("SIGIO", len(got), flush=True)
'''


@attack("K32", "native: F_SETSIG and O_ASYNC on an inherited descriptor "
        "whose owner is the caller")
def test_K32(tree, judge):
    """An inherited descriptor shares its open file description with the
    caller, its owner (F_SETOWN) and its signal included. A caller that
    owns it (signal-driven I/O, or F_SETOWN for SIGURG) set that owner
    itself, so Landlock's signal scope, which judges the domain of who set
    the owner, lets the signal through: the program made the signal
    SIGKILL (F_SETSIG), set O_ASYNC, and the caller died at its next I/O
    on the socket. The filter refuses F_SETSIG and O_ASYNC (F_SETFL,
    FIOASYNC). Evidence from outside: the caller alive, no SIGIO."""
    helper = tree.path("bin/try-syscall")
    os.makedirs(tree.path("bin"), exist_ok=True)
    if not os.path.exists(helper):
        import shutil
        shutil.copy2(helper_path(), helper)
    tree.write(".py-sandboxes", tree.rules + f"expose-ro={tree.root}/bin\n"
               f"os-sandbox={tree.os_sandbox}\n")
    owner = tree.write("owner.py", _OWNER)
    code = (f"import os\nos.execv({helper!r}, "
            f"{[helper, 'async-owner', '0', str(int(scaled(3)))]!r})\n")
    argv = [DEBIAN_PYTHON, owner, tree.sb, f"--python={tree.python}", "-c",
            code]
    if tree.nobody:
        from harness import chown_tree
        chown_tree(tree.root)
        argv = as_nobody(argv)
    r = subprocess.run(argv, capture_output=True, text=True, cwd=tree.root,
                       stdin=subprocess.DEVNULL, timeout=scaled(120))
    lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines()
                 if ln.startswith(("ANSWER ", "SIGIO ")))
    answer = lines.get("ANSWER", "")
    if r.returncode == -signal.SIGKILL:
        answer = "ok"  # the caller is gone: the signal got out
    judge.native(answer, "EPERM")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert lines.get("SIGIO") == "0", r.stdout


@attack("K33", "native: a send with MSG_ZEROCOPY through the supervisor "
        "carries its freed memory")
def test_K33(tree, judge):
    """sendmsg goes to the supervisor, which sends its own copy of the
    payload and frees it as soon as sendmsg returns. With SO_ZEROCOPY and
    MSG_ZEROCOPY passed on, the kernel kept referring to those pages until
    it could send them (the peer's window full: later), and what the
    supervisor had put there meanwhile left instead: its pointers and data,
    to an address a rule allows. SO_ZEROCOPY is refused and the supervisor
    passes on the flags that say how to send only. Evidence from outside:
    the listener gets the program's bytes and nothing else (under landlock
    it got 600 to 2048 foreign bytes of 4096; under the namespace
    providers pasta reads the namespace's side at once, so the window
    never fills there, and the answer, zero copy granted, is the
    evidence)."""
    import socket
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    srv.bind(("127.0.0.1", 0))
    srv.listen(32)
    srv.settimeout(scaled(60))
    port = srv.getsockname()[1]
    done, got = threading.Event(), []

    def reader():
        try:
            c, _ = srv.accept()
        except OSError:
            return
        done.wait(scaled(120))  # the window stays full meanwhile
        c.settimeout(scaled(3))
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                got.append(d)
        except OSError:
            pass
        c.close()

    t = threading.Thread(target=reader)
    t.start()
    try:
        answer = attempt(tree, "zerocopy-send", "127.0.0.1", port,
                         rules=f"net=ALLOW|TCP|127.0.0.1|{port}|OUT\n")
    finally:
        done.set()
        t.join()
        srv.close()
    data = b"".join(got)
    foreign = len(data) - data.count(b"A")
    judge.native(answer if not foreign else "ok", "EPERM")
    assert data, "nothing arrived: the test saw nothing"
    assert foreign == 0, f"{foreign} of {len(data)} bytes were not sent"


@attack("K34", "native: a Unix socket bound under umask 077 made with "
        "python-sb's umask by the supervisor")
def test_K34(tree, judge):
    """The supervisor binds a named Unix socket for the program, and the
    kernel gave the socket file the mode python-sb's umask leaves, not the
    program's: a program that set umask 077 to keep its socket to itself
    got one every local user could connect to (write permission on the
    file) when python-sb ran under umask 000. Evidence from outside: the
    socket file's mode."""
    old = os.umask(0)
    try:
        answer = attempt(tree, "bind-unix-private", tree.path("rw/private"))
    finally:
        os.umask(old)
    assert answer == "ok", answer
    mode = os.stat(tree.path("rw/private")).st_mode & 0o777
    if mode & 0o077:
        judge._record("escaped", oct(mode))
    else:
        judge._record("refused by kernel (the program's umask)", oct(mode))
    assert mode == 0o700, oct(mode)
