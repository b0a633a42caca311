"""os-sandbox=qemu (issue 17): the program runs in a virtual machine booted
from a Debian kernel package in /boot with an initramfs python-sb makes
(src/launch/qemu.c, src/guest/init.c), the exposed paths shared over
virtio-9p, python-sb's second stage inside applying the same kernel layer
as os-sandbox=landlock.

Each qemu run costs seconds under TCG emulation (no KVM here), so the
cases are few and each checks several things: the exit status, stdout and
stderr kept apart, stdin streamed in, SIGTERM passed on, the start timeout,
an unexposed file that is not there, a read-only exposure that refuses a
write (with the Python layer off, so that the guest's kernel and qemu's
read-only share are what refuse), as root and as uid 65534. The refusals
(an unknown key, a missing kernel, qemu or passt) start no machine.
Partial mode runs its worker in the guest. limit-* and log-file= mean what
they mean under landlock (the same program under both gives the same
status, message and log records), the log written on the host from the
guest's records, which a stand-in qemu floods with garbage. With net= rules
the guest reaches, through passt, what the rules allow and nothing else,
judged in the guest and, for TCP ports, on the host (passt's Landlock
ruleset).

The tests skip, with the reason, where qemu-system-x86_64 or a kernel with
the 9p modules is not installed (scripts/deps --all installs both)."""
import glob
import math
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest

from conftest import as_nobody, sb_path
from pysbtest import REPO, Listener, qemu_missing, scaled

DEBIAN_PYTHON = "/usr/bin/python3"


def _need_qemu():
    why = qemu_missing()
    if why:
        pytest.skip(why)


@pytest.fixture
def work():
    """A directory uid 65534 can reach (pytest's tmp_path is 0700)."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="pysb-qemu-"))
    w = top / "w"
    for d in ("ro", "rw"):
        (w / d).mkdir(parents=True)
    (w / "ro" / "f.txt").write_text("readable")
    (top / "secret.txt").write_text("TOPSECRET")
    os.chmod(top, 0o755)
    # sticky above the rule file: python-sb refuses one in a directory
    # others may change without it
    os.chmod(w, 0o1777)
    for p in (w / "ro", w / "rw"):
        os.chmod(p, 0o777)
    os.chmod(w / "ro" / "f.txt", 0o644)
    os.chmod(top / "secret.txt", 0o644)
    yield w
    shutil.rmtree(top, ignore_errors=True)


def _argv(user, *rest):
    base = [str(sb_path())]
    if user != "root" or os.geteuid() != 0:
        base.append(f"--python={DEBIAN_PYTHON}")
    base = base + list(rest)
    return as_nobody(base) if user == "nobody" else base


def _rules(work, *lines):
    (work / ".py-sandboxes").write_text(
        "os-sandbox=qemu\n" + "".join(f"{x}\n" for x in lines))


def _run(argv, work, timeout=120, **kw):
    return subprocess.run(argv, cwd=work, capture_output=True, text=True,
                          timeout=scaled(timeout), **kw)


def test_the_boot_console_names_each_step(work):
    # qemu.show_boot_console, given on the command line with its
    # underscores: the guest kernel's console and the guest init's steps
    # (each with the kernel's time) on stderr, and kept in the log file;
    # the program's own streams stay apart
    _need_qemu()
    _rules(work, "python-import=sys")
    r = _run(_argv("root", "--qemu.show_boot_console=yes", "-c",
                   "print('ran')"), work)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ran\n"
    steps = ["the 9p modules are loaded", "the shares are mounted",
             "the second stage starts", "the program ended: status 0",
             "power off"]
    at = [r.stderr.find("pysb-init: " + s) for s in steps]
    assert all(i >= 0 for i in at) and at == sorted(at), r.stderr
    assert "Run /init as init process" in r.stderr
    kept = (work / ".pysandbox-qemu-console.log").read_text()
    assert "pysb-init: the program ended: status 0" in kept
    # without it, nothing of the guest's console is shown
    r = _run(_argv("root", "-c", "print('ran')"), work)
    assert r.returncode == 0 and r.stdout == "ran\n", r.stderr
    assert "pysb-init" not in r.stderr and "Run /init" not in r.stderr


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_status_streams_and_stdin(work, user):
    _need_qemu()
    _rules(work, "python-import=sys")
    code = ("import sys\n"
            "data = sys.stdin.read()\n"
            "print('OUT', data.upper(), end='')\n"
            "print('ERR', len(data), file=sys.stderr)\n"
            "sys.exit(3)\n")
    r = _run(_argv(user, "-c", code), work, input="hello\nworld\n")
    assert r.returncode == 3, r.stderr
    assert r.stdout == "OUT HELLO\nWORLD\n"
    assert "ERR 12" in r.stderr and "OUT" not in r.stderr


def test_sigterm_reaches_the_program(work):
    _need_qemu()
    _rules(work, "python-import=*")
    p = subprocess.Popen(
        _argv("root", "-c", "import time; print('ready', flush=True); "
              "time.sleep(60)"),
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGTERM)
        # the sleep outlasts the wait: a lost signal fails, it never passes
        assert p.wait(timeout=scaled(40)) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_kvm_that_fails_falls_back_to_tcg(work):
    """A nested hypervisor can open /dev/kvm and then refuse the machine
    (this one refused the host CPU's MSRs and qemu aborted): the run
    starts again under TCG with a warning instead of failing. A qemu that
    refuses KVM stands in for it."""
    _need_qemu()
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError as e:
        pytest.skip(f"/dev/kvm cannot be opened here ({e.strerror}): "
                    "python-sb does not try KVM")
    real = shutil.which("qemu-system-x86_64")
    fake = work / "fake-qemu"
    fake.write_text("#!/bin/sh\n"
                    "case \"$*\" in *accel=kvm*)\n"
                    "  echo 'fake: KVM refused' >&2; exit 1;;\n"
                    "esac\n"
                    f"exec {real} \"$@\"\n")
    fake.chmod(0o755)
    _rules(work)
    r = _run(_argv("root", "-c", "print('RAN')"), work,
             env=dict(os.environ, PYSB_QEMU=str(fake)))
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r.stderr
    assert "starting again under TCG emulation" in r.stderr


def test_start_timeout(work):
    _need_qemu()
    _rules(work, "qemu.start_timeout=1")
    r = _run(_argv("root", "-c", "print('RAN')"), work)
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert "did not start within 1 s (qemu.start_timeout)" in r.stderr


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_hidden_and_read_only(work, user):
    """The Python layer off: the guest's kernel (Landlock, and the root
    holding only the shares) and qemu's read-only share refuse."""
    _need_qemu()
    _rules(work, "py-sandbox=false", f"expose-ro={work}/ro",
           f"expose-rw={work}/rw")
    code = (f"import os\n"
            f"print('secret', os.path.exists('{work.parent}/secret.txt'))\n"
            f"print('read', open('{work}/ro/f.txt').read())\n"
            f"try:\n"
            f"    open('{work}/ro/new.txt', 'w').write('x')\n"
            f"    print('ro-write ok')\n"
            f"except OSError as e:\n"
            f"    print('ro-write refused', e.errno)\n"
            f"open('{work}/rw/new.txt', 'w').write('y')\n"
            f"print('rw-write ok')\n")
    r = _run(_argv(user, "-c", code), work)
    assert r.returncode == 0, r.stderr
    assert "secret False" in r.stdout
    assert "read readable" in r.stdout
    assert "ro-write refused" in r.stdout
    assert "rw-write ok" in r.stdout
    assert not (work / "ro" / "new.txt").exists()
    assert (work / "rw" / "new.txt").read_text() == "y"


@pytest.mark.parametrize("rules,message", [
    (["qemu.cpus=2"], ".py-sandboxes(2): Unknown key 'qemu.cpus'"),
    (["qemu.memory=2GB"], "Invalid value '2GB' for 'qemu.memory'"),
    (["log-file=/tmp/pysb-qemu-never.jsonl", "limit-memory=1G",
      "qemu.memory=1024M"],
     ".py-sandboxes(3): limit-memory=1G does not fit in qemu.memory=1024M "
     "(from .py-sandboxes(4)): the guest needs at least 1280M"),
], ids=["unknown-key", "bad-value", "memory-beyond-the-guest"])
def test_a_rule_qemu_cannot_hold_stops_the_run(work, rules, message):
    """What the guest cannot hold stops the run before anything starts,
    and before the denial log is opened. log-file= and limit-* are held
    (test_a_limit_and_the_log_as_under_landlock): only a limit-memory
    that the machine's memory cannot hold beside the guest's own needs
    is refused."""
    _rules(work, *rules)
    r = _run(_argv("root", "-c", "print('RAN')"), work, timeout=30)
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert message in r.stderr
    assert not os.path.exists("/tmp/pysb-qemu-never.jsonl")


def test_explain_names_the_guest_limits(work):
    _rules(work, "limit-memory=256M", "limit-processes=8", "limit-cpu=2s",
           "limit-time=5s", "limit-open-files=64")
    r = _run(_argv("root", "--pysandboxes-explain", "-c", "pass"), work,
             timeout=30)
    assert r.returncode == 0, r.stderr
    said = {x.split(":")[0][len("#   "):]: x for x in r.stdout.splitlines()
            if x.startswith("#   limit-")}
    for rule, how in (("limit-memory=256M", "memory.max"),
                      ("limit-processes=8", "pids.max"),
                      ("limit-cpu=2s", "cpu.stat")):
        assert how in said[rule] and "cgroup in the guest" in said[rule]
    assert "from the program's start" in said["limit-time=5s"]
    assert "RLIMIT_NOFILE" in said["limit-open-files=64"]


# ---- limit-* and log-file= (held in the guest, the log written here) ----

LIMIT_STATUS = 124

# refusals of the Python layer, then a busy loop that limit-time ends
REFUSE_THEN_SPIN = """\
import sys
n = int(sys.argv[1])
for i in range(n):
    try:
        open(f"/pysb-not-exposed/{i}")
    except OSError:
        pass
print("refused", n, flush=True)
while True:
    pass
"""

# processes past limit-processes fail; then memory past limit-memory
FORK_THEN_BALLOON = """\
import os
kids = []
try:
    for i in range(50):
        pid = os.fork()
        if pid == 0:
            import time
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("forks", len(kids), e.errno, flush=True)
for k in kids:
    os.kill(k, 9)
    os.waitpid(k, 0)
chunks = []
while True:
    chunks.append(bytearray(b"\\x01") * (4 << 20))
"""

SPIN = "while True:\n    pass\n"


def _log_lines(path):
    """The records, without what differs between two runs (time, pid)."""
    import json
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        assert rec.pop("time") and isinstance(rec.pop("pid"), int)
        out.append(rec)
    return out


def _limited(work, user, provider, rules, code, *args):
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\n" + "".join(f"{x}\n" for x in rules))
    return _run(_argv(user, "-c", code, *args), work, timeout=180)


@pytest.mark.parametrize("case,user", [
    ("time-and-log", "root"), ("time-and-log", "nobody"),
    ("processes-and-memory", "root"), ("cpu", "root")])
def test_a_limit_and_the_log_as_under_landlock(work, case, user):
    """The same program under landlock and under qemu: the same exit
    status, the same message, and in the host's log file the same records
    (time and pid aside), carried from the guest's supervisor over the
    pysb.log port. limit-time counts the program's time, not the boot:
    the qemu run's wall time is the boot plus the limit."""
    _need_qemu()
    log = work / "deny.jsonl"
    if case == "time-and-log":
        # 300 refusals, each a record carried over the port, then the
        # print, all within the limit: under TCG on a loaded machine 3 s
        # of the program's time was not always enough (CI, 2026-12-04),
        # so the limit grows with the machine's load
        secs = max(3, math.ceil(scaled(3)))
        rules = [f"log-file={log}", f"limit-time={secs}s",
                 "python-import=sys"]
        code, args = REFUSE_THEN_SPIN, ["300"]
        message = f"python-sb: limit-time={secs}s reached: the run was stopped"
    elif case == "processes-and-memory":
        rules = [f"log-file={log}", "limit-memory=96M", "limit-processes=6",
                 "python-import=os, time", "python-api=ALLOW:process-exec"]
        code, args = FORK_THEN_BALLOON, []
        message = "python-sb: limit-memory=96M reached: the run was stopped"
    else:
        rules = [f"log-file={log}", "limit-cpu=2s"]
        code, args = SPIN, []
        message = "python-sb: limit-cpu=2s reached: the run was stopped"
    seen = {}
    for provider in ("landlock", "qemu"):
        if log.exists():
            log.unlink()
        r = _limited(work, user, provider, rules, code, *args)
        assert r.returncode == LIMIT_STATUS, (provider, r.stderr)
        assert message in r.stderr, (provider, r.stderr)
        seen[provider] = (r.stdout, _log_lines(log))
    assert seen["qemu"] == seen["landlock"]
    stdout, records = seen["qemu"]
    if case == "time-and-log":
        assert stdout == "refused 300\n"
        files = [x for x in records if x["kind"] == "file"]
        assert len(files) == 300
        assert files[0] == {"layer": "python", "kind": "file",
                            "target": "/pysb-not-exposed/0",
                            "rule": "no rule",
                            "add": "expose-ro=/pysb-not-exposed/0",
                            "by": "sandbox"}
    if case == "processes-and-memory":
        # the program and 5 children: the sixth fork fails (EAGAIN)
        assert stdout == "forks 5 11\n"
    assert records[-1]["kind"] == "limit"
    assert records[-1]["target"] == message.split()[1]
    assert records[-1]["by"] == "supervisor"


def test_the_guest_log_port_cannot_flood_nor_forge_the_host_log(work):
    """A guest taken over may write anything on its log port, as fast as
    it likes. A stand-in for qemu that writes garbage, a line far longer
    than any record, binary noise and a flood on that port, then two
    well-formed records: the run ends with the guest's status, the log
    holds those two records (written by the host, as JSON, at the path the
    host's rules name) and one that counts what was dropped, and nothing
    else of what the guest sent."""
    _need_qemu()
    fake = work / "fake-qemu"
    fake.write_text(FAKE_QEMU)
    fake.chmod(0o755)
    log = work / "deny.jsonl"
    _rules(work, f"log-file={log}")
    r = _run(_argv("root", "-c", "pass"), work, timeout=120,
             env=dict(os.environ, PYSB_QEMU=str(fake)))
    assert r.returncode == 7, r.stderr
    assert r.stdout == "after the flood\n"
    import json
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["kind"] for x in recs] == ["file", "network", "log-malformed"]
    assert recs[0]["target"] == "/etc/tab\there"
    assert recs[0]["by"] == "sandbox" and recs[0]["pid"] == 42
    assert recs[1]["rule"] == "no rule" and recs[1]["add"] is None
    dropped = int(recs[2]["target"].split()[0])
    assert dropped >= 6, recs[2]
    assert "/tmp/pysb-forged" not in log.read_text()
    assert not os.path.exists("/tmp/pysb-forged")


# A stand-in for qemu: finds its ports by the names on its command line
# and says "up"; what it does then follows.
FAKE_PORTS = r"""#!/usr/bin/python3
import os, sys
a = sys.argv
fds, names = {}, {}
for i, x in enumerate(a):
    if x == "-chardev":
        kv = dict(p.split("=", 1) for p in a[i + 1].split(",")[1:])
        fds[kv["id"]] = int(kv["fd"])
    if x == "-device" and a[i + 1].startswith("virtserialport"):
        kv = dict(p.split("=", 1) for p in a[i + 1].split(",")[1:])
        names[kv["name"]] = fds[kv["chardev"]]
ctl, log, out = names["pysb.ctl"], names.get("pysb.log"), names["pysb.out"]
os.write(ctl, b"up\n")
"""

# ... floods pysb.log, sends two good records, prints, exits 7
FAKE_QEMU = FAKE_PORTS + r"""
def w(fd, b):
    while b:
        b = b[os.write(fd, b):]
w(log, b"not a record\n")
w(log, b"rec\tpython\tfile\t/x\t-\t-\tsandbox\tnot-a-pid\n")
w(log, b"rec\troot\tfile\t/x\t-\t-\tsandbox\t1\n")
w(log, b"rec\tpython\tfile\t/x\t-\t-\tkernel\t1\n")
w(log, b"path\t/tmp/pysb-forged\n")
w(log, b"rec\tpython\tfile\t" + b"A" * (1 << 20) + b"\t-\t-\tsandbox\t1\n")
w(log, bytes(range(256)) * 4096 + b"\n")
for i in range(64):
    w(log, b"\xff\x00garbage" * 8192)
w(log, b"\n")
w(log, b"rec\tpython\tfile\t/etc/tab\\there\t-\t+expose-ro=/etc\tsandbox\t42\n")
w(log, b"rec\tsupervisor\tnetwork\t10.0.0.1:80\t-\t-\tsupervisor\t43\n")
w(log, b"rec\tpython\tfile\t/unfinished")
w(out, b"after the flood\n")
os.write(ctl, b"exit 7\n")
"""


def test_a_guest_that_outlives_limit_time_is_stopped(work):
    """The guest's own timer ends the run at limit-time (counted from the
    program's start, not the boot); a guest that does not (its kernel
    taken over, or hung) is stopped from the host 30 s later, with the
    same message and status, and the record in the host's log. A stand-in
    for qemu that says "up" and then nothing."""
    _need_qemu()
    fake = work / "fake-qemu"
    fake.write_text(FAKE_PORTS + "import time\ntime.sleep(3600)\n")
    fake.chmod(0o755)
    log = work / "deny.jsonl"
    _rules(work, f"log-file={log}", "limit-time=1s")
    r = _run(_argv("root", "-c", "pass"), work, timeout=120,
             env=dict(os.environ, PYSB_QEMU=str(fake)))
    assert r.returncode == LIMIT_STATUS, r.stderr
    assert "did not end the run 30 s past its limit-time" in r.stderr
    assert "python-sb: limit-time=1s reached: the run was stopped" in \
        r.stderr
    recs = _log_lines(log)
    assert [(x["kind"], x["target"], x["by"]) for x in recs] == \
        [("limit", "limit-time=1s", "supervisor")]


KCACHE = pathlib.Path("/var/cache/python-sb")


def _a_guest_kernel():
    for k in sorted(glob.glob("/boot/vmlinuz-*"), reverse=True):
        ver = k[len("/boot/vmlinuz-"):]
        if glob.glob(f"/lib/modules/{ver}/kernel/fs/9p/9p.ko*"):
            return pathlib.Path(k)
    return None


def _kept():
    return sorted(KCACHE.glob("vmlinux-*")) if KCACHE.is_dir() else []


def test_the_unpacked_kernel_is_kept_by_root_and_trusted_only_so(work):
    """Root's runs keep the unpacked guest kernel (src/launch/kcache.c),
    named by the bzImage's identity; everyone's runs boot it, but only
    while nobody but root could have changed it; a kernel that changed is
    a new entry, and the old one goes. The kernel here is a copy of
    /boot's (PYSB_QEMU_KERNEL), whose identity the test may change."""
    _need_qemu()
    if os.geteuid() != 0:
        pytest.skip("the cache is written by root's runs only")
    src = _a_guest_kernel()
    copy = work.parent / src.name
    shutil.copy2(src, copy)
    os.chmod(copy, 0o644)
    _rules(work, "python-import=sys")
    env = dict(os.environ, PYSB_QEMU_KERNEL=str(copy), PYSB_DEBUG="1")
    code = "print('ran')"

    def run(user):
        r = _run(_argv(user, "-c", code), work, env=env)
        assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr
        return r.stderr

    for e in _kept():
        e.unlink()
    err = run("root")
    assert "no kernel kept" in err, err
    kept = _kept()
    assert len(kept) == 1, kept
    st = kept[0].stat()
    assert (st.st_uid, oct(st.st_mode & 0o7777)) == (0, "0o644")
    assert st.st_size > 1 << 20
    assert oct(os.stat(KCACHE).st_mode & 0o7777) == "0o755"
    for user in ("root", "nobody"):
        assert "as kept in" in run(user)
    # writable by others: never booted, by anyone; root's next run
    # replaces it
    os.chmod(kept[0], 0o666)
    for user in ("nobody", "root"):
        err = run(user)
        assert "as kept in" not in err
        assert "someone else than root" in err, err
    assert oct(kept[0].stat().st_mode & 0o7777) == "0o644"
    assert "as kept in" in run("nobody")
    # not a kernel: not booted (the run unpacks its own)
    with open(kept[0], "r+b") as f:
        f.write(b"\0" * 64)
    err = run("root")
    assert "no kernel with a PVH entry" in err, err
    # the kernel changed (a package update): a new entry, the old one gone
    os.utime(copy, (1, 1))
    err = run("root")
    assert "nothing kept for this kernel" in err, err
    now = _kept()
    assert len(now) == 1 and now[0].name != kept[0].name, (kept, now)
    assert "as kept in" in run("nobody")


def test_missing_kernel(work):
    _rules(work)
    env = dict(os.environ, PYSB_QEMU_KERNEL="/boot/vmlinuz-0.0-none")
    r = _run(_argv("root", "-c", "print('RAN')"), work, timeout=30, env=env)
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert "no guest kernel" in r.stderr
    assert "apt-get install" in r.stderr and "linux-image-amd64" in r.stderr


def test_missing_passt(work):
    _rules(work, "net=ALLOW|TCP|192.0.2.1|80|OUT")
    env = dict(os.environ, PYSB_PASST="/nonexistent/passt")
    r = _run(_argv("root", "-c", "print('RAN')"), work, timeout=30, env=env)
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert "passt is not installed" in r.stderr
    assert "apt-get install passt" in r.stderr


def _host_address():
    """An address of this host that is not the loopback (the guest's
    127.0.0.1 is its own), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.123", 9))  # no packet: picks the route
        addr = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if addr.startswith("127.") else addr


@pytest.fixture
def host_pair():
    """Two listeners on the host's own address: the rules allow one."""
    _need_qemu()
    addr = _host_address()
    if not addr:
        pytest.skip("no address of this host besides the loopback")
    ok, other = Listener(addr), Listener(addr)
    yield addr, ok, other
    ok.close()
    other.close()


NET_PROBE = r"""
import socket, sys
addr, ok, other = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((addr, ok), 20)
s.sendall(b"hello")
print("ok-port", s.recv(100).decode())
s.close()
try:
    socket.create_connection((addr, other), 20)
    print("other-port reached")
except OSError as e:
    print("other-port", type(e).__name__, e.errno)
try:
    socket.create_connection(("127.0.0.1", ok), 5)
    print("loopback reached")
except OSError as e:
    print("loopback", type(e).__name__, e.errno)
"""


@pytest.mark.parametrize("py_layer", ["guard", "kernel"])
@pytest.mark.parametrize("user", ["root", "nobody"])
def test_net_rules_reach_what_they_allow(work, host_pair, user, py_layer):
    """Through passt, the guest reaches the port a rule allows; the other
    port of the same host is refused (by the guard, or with the Python
    layer off by the guest's network supervisor), and the guest's
    127.0.0.1 is its own. Evidence from outside: what each listener got."""
    addr, ok, other = host_pair
    (work / "probe.py").write_text(NET_PROBE)
    _rules(work, "python-import=*", f"net=ALLOW|TCP|{addr}|{ok.port}|OUT",
           f"net=ALLOW|TCP|127.0.0.1|{ok.port}|OUT",
           *(["py-sandbox=false"] if py_layer == "kernel" else []))
    r = _run(_argv(user, "probe.py", addr, str(ok.port), str(other.port)),
             work)
    assert r.returncode == 0, r.stderr
    assert "ok-port pong:hello" in r.stdout
    want = "RuleSocketConnectionRefusedError" if py_layer == "guard" \
        else "PermissionError 13"
    assert f"other-port {want}" in r.stdout, r.stdout
    assert "other-port reached" not in r.stdout
    assert "loopback ConnectionRefusedError" in r.stdout, r.stdout
    assert ok.got == [b"hello"]
    assert other.got == []


WRAPPER = r"""#!{python}
# stands in for passt: what passt itself may reach on the host, then passt
import os, socket, sys
out = []
for port in ({ok}, {other}):
    try:
        socket.create_connection(("{addr}", port), 10).close()
        out.append(f"{{port}} reached")
    except OSError as e:
        out.append(f"{{port}} {{e.errno}}")
try:
    socket.socket().bind(("{addr}", 0))
    out.append("bind ok")
except OSError as e:
    out.append(f"bind {{e.errno}}")
with open("{log}", "w") as f:
    f.write("\n".join(out))
os.execv("{passt}", sys.argv)
"""


def test_passt_reaches_only_the_ports_of_the_rules(work, host_pair):
    """The host's half: should the guest's kernel fall, its packets meet
    passt, which Landlock lets connect only to the rules' TCP ports and
    bind none. A stand-in for passt ($PYSB_PASST) tries both ports first;
    evidence from outside: the other listener got nothing."""
    addr, ok, other = host_pair
    passt = shutil.which("passt")
    if not passt:
        pytest.skip("passt is not installed (scripts/deps --all)")
    log = work / "wrapper.log"
    wrapper = work / "passt-wrapper"
    wrapper.write_text(WRAPPER.format(python=sys.executable, ok=ok.port,
                                      other=other.port, addr=addr,
                                      log=log, passt=passt))
    wrapper.chmod(0o755)
    _rules(work, "python-import=*", f"net=ALLOW|TCP|{addr}|{ok.port}|OUT")
    env = dict(os.environ, PYSB_PASST=str(wrapper))
    r = _run(_argv("root", "-c", "print('RAN')"), work, env=env)
    assert r.returncode == 0, r.stderr
    assert "RAN" in r.stdout
    assert log.exists(), r.stderr[-3000:]
    lines = log.read_text().splitlines()
    assert lines == [f"{ok.port} reached", f"{other.port} 13", "bind 13"], \
        lines
    # (once per boot: a KVM that fails is tried before TCG)
    assert ok.got and other.got == []


def test_missing_qemu(work):
    _rules(work)
    env = dict(os.environ, PYSB_QEMU="/nonexistent/qemu-system-x86_64")
    r = _run(_argv("root", "-c", "print('RAN')"), work, timeout=30, env=env)
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert "apt-get install qemu-system-x86" in r.stderr


def test_partial_mode_runs_in_the_guest(work):
    """@sandbox functions under qemu: the worker runs in the guest, its
    socket carried over a virtio-serial port relayed at both ends under
    the same descriptor number. A result, the printed output, an
    exception, a refusal by the rules inside (the secret is not printed),
    a result of megabytes, and the run ends when the block does."""
    _need_qemu()
    (work / "app.py").write_text(
        "from pysandboxes import sandbox\n"
        "@sandbox\n"
        "def f(x):\n"
        "    print('inside', x)\n"
        "    return x * 2\n"
        "@sandbox\n"
        "def boom():\n"
        "    raise ValueError('bad')\n"
        "@sandbox\n"
        "def secret(p):\n"
        "    return open(p).read()\n"
        "@sandbox\n"
        "def big(n):\n"
        "    return b'x' * n\n")
    (work / "main.py").write_text(
        "from pysandboxes import sandboxes\n"
        "import app, sys\n"
        "with sandboxes():\n"
        "    print('RESULT', app.f(21))\n"
        "    try:\n"
        "        app.boom()\n"
        "    except ValueError as e:\n"
        "        print('raised', e)\n"
        "    try:\n"
        "        print('GOT', app.secret(sys.argv[1]))\n"
        "    except Exception as e:\n"
        "        print('refused', type(e).__name__)\n"
        "    print('BIG', len(app.big(3_000_000)))\n"
        "    print('AGAIN', app.f(2))\n"
        "print('DONE')\n")
    _rules(work)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               PYSB_PYTHON_SB=str(sb_path()))
    r = _run([DEBIAN_PYTHON, "main.py", str(work.parent / "secret.txt")],
             work, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "inside 21", "RESULT 42", "raised bad",
        "refused RuleFileNotFoundError", "BIG 3000000", "inside 2",
        "AGAIN 4", "DONE"], (r.stdout, r.stderr)
    assert "TOPSECRET" not in r.stdout + r.stderr


def test_a_channel_option_that_is_no_descriptor(work):
    """--pysandboxes-channel (partial mode's, under qemu) must name an
    open descriptor: a bad value is a usage error, a closed one stops the
    run before anything starts."""
    _rules(work)
    r = _run(_argv("root", "--pysandboxes-channel=x", "-c", "print('RAN')"),
             work, timeout=30)
    assert r.returncode == 2 and "RAN" not in r.stdout
    assert "--pysandboxes-channel: expected =FD" in r.stderr
    r = _run(_argv("root", "--pysandboxes-channel=987", "-c",
                   "print('RAN')"), work, timeout=30)
    assert r.returncode == 255 and "RAN" not in r.stdout
    assert "--pysandboxes-channel=987: not an open descriptor" in r.stderr


def test_as_many_shares_as_the_machine_holds(work):
    """Each exposed directory is a virtio device of the machine (microvm:
    24 virtio-mmio slots, one for the serial ports, and a guest given all
    24 hangs: 22 shares). One directory more
    than fits is refused before any machine starts, naming the limit and
    the directory; exactly as many as fit boot, and each is there."""
    _need_qemu()
    dirs = []
    for i in range(40):
        d = work / f"d{i:02d}"
        d.mkdir()
        (d / "f").write_text(str(i))
        os.chmod(d, 0o755)
        dirs.append(d)
    _rules(work, "py-sandbox=false", *(f"expose-ro={d}" for d in dirs))
    r = _run(_argv("root", "-c", "print('RAN')"), work, timeout=30)
    assert r.returncode == 255, r.stderr
    assert "RAN" not in r.stdout
    assert "more than 22 exposed directories (at " in r.stderr
    first_out = r.stderr.split("(at ", 1)[1].split(")", 1)[0]
    fit = [str(d) for d in dirs].index(first_out)
    assert fit > 0, r.stderr
    # the interpreter's own trees are shares too, some listed after ours:
    # one directory fewer until nothing is left out (a refusal is instant)
    for k in range(fit, 0, -1):
        _rules(work, "py-sandbox=false", *(f"expose-ro={d}" for d in dirs[:k]))
        code = ("print(sum(int(open(f'%s/d{i:02d}/f').read()) "
                "for i in range(%d)))" % (work, k))
        r = _run(_argv("root", "-c", code), work)
        if "more than 22 exposed directories" not in r.stderr:
            break
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sum(range(k)))
    assert k >= 5
