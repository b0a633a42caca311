"""The denial log: --pysandboxes-log=FILE and the rule log-file=FILE.

One JSON object a line for every refusal, with the rule to add: from the
Python guard (file, import, api, network) under os-sandbox=subprocess and
landlock, and from the supervisor under landlock (a native connect). The
program must not be able to write into the log under landlock, neither by
its path nor through a descriptor it inherited; a log path it could write
is refused with 255. Each case runs as root and as uid 65534.
"""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import NOBODY, landlock_abi, pyenv_minor

ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(
    ABI < 4, reason=f"this kernel's Landlock ABI is {ABI}, below 4 [core]")

USERS = ["root", "nobody"]


def kernel_provider(name):
    """A provider with the supervisor: landlock, and the namespace
    providers that run it inside (skipped where their tool is missing)."""
    marks = [needs_landlock]
    if name in ("bwrap", "firejail") and not shutil.which(name):
        marks.append(pytest.mark.skip(reason=f"{name} is not installed"))
    return pytest.param(name, marks=marks)


KERNEL_PROVIDERS = [kernel_provider(p)
                    for p in ("landlock", "unshare", "bwrap", "firejail")]


def skip_firejail_as_nobody(provider, user):
    if provider == "firejail" and user == "nobody":
        pytest.skip("firejail refuses uid 65534 (weaknesses.md 33)")
# what `import socket` needs, on Debian's 3.11 and pyenv's
SOCKET_IMPORTS = ("os,socket,_socket,selectors,collections,math,select,enum,"
                  "array,errno,types,functools,_functools,_collections,"
                  "itertools,keyword,operator,_operator,reprlib,heapq,"
                  "_heapq")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(params=USERS)
def user(request, tmp_cwd):
    if request.param == "nobody" and os.geteuid() != 0:
        pytest.skip("the suite does not run as root: it is unprivileged "
                    "already")
    if request.param == "nobody" and os.geteuid() == 0:
        os.chown(tmp_cwd, NOBODY, NOBODY)
    return request.param


def interpreter(user):
    # /root/.pyenv is not readable by 65534
    if user == "root":
        pyenv = pyenv_minor("3.11")
        if pyenv and os.path.exists(pyenv):
            return str(pyenv)
    return "/usr/bin/python3"


@pytest.fixture
def logdir(tmp_cwd, user):
    """A directory for the log that no rule exposes."""
    d = tmp_cwd / "logs"
    d.mkdir()
    if user == "nobody" and os.geteuid() == 0:
        os.chown(d, NOBODY, NOBODY)
    return d


@pytest.fixture
def run(run_sb, tmp_cwd, user):
    """run(rules, code, log) writes .py-sandboxes and script.py, runs them
    with --pysandboxes-log=log and returns (CompletedProcess, records)."""
    def go(rules, code, log, extra=(), parse=True, landlock=False):
        (tmp_cwd / ".py-sandboxes").write_text("\n".join(rules) + "\n")
        (tmp_cwd / "script.py").write_text(code)
        r = run_sb([f"--python={interpreter(user)}",
                    f"--pysandboxes-log={log}", *extra, "script.py"],
                   unprivileged=(user == "nobody"))
        return r, read_log(log, landlock) if parse else None
    return go


def read_log(path, landlock=False):
    """The records of the log at 'path', checked for their form. Landlock's
    records (filelog.c) are left out unless asked for: the interpreter's
    own start makes some (importlib lists the script's directory, site.py
    reads /etc/passwd without HOME: weaknesses.md 77), which a test of
    another layer does not count."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    assert data == b"" or data.endswith(b"\n"), data
    records = [json.loads(line) for line in data.decode().splitlines()]
    for rec in records:
        assert list(rec) == ["time", "pid", "layer", "kind", "target",
                             "rule", "add", "by"], rec
        assert TIME.match(rec["time"]), rec
        assert isinstance(rec["pid"], int) and rec["pid"] > 0, rec
    return [rec for rec in records
            if landlock or rec["layer"] != "landlock"]


def only(records, **want):
    found = [r for r in records
             if all(r.get(k) == v for k, v in want.items())]
    assert len(found) == 1, (want, records)
    return found[0]


PY_REFUSALS = f"""
import os, socket
print(os.getpid())
def attempt(f):
    try:
        f()
    except Exception as e:
        print(type(e).__name__)
attempt(lambda: open("/etc/hostname").read())
attempt(lambda: __import__("json"))
attempt(lambda: os.system("true"))
attempt(lambda: socket.create_connection(("127.0.0.1", 9), timeout=5))
"""


@pytest.mark.parametrize("provider", ["subprocess", *KERNEL_PROVIDERS])
def test_python_layer_refusals_each_appear_once(run, logdir, provider, user):
    skip_firejail_as_nobody(provider, user)
    log = logdir / "denials.jsonl"
    r, recs = run([f"os-sandbox={provider}",
                   f"python-import={SOCKET_IMPORTS}",
                   "net=ALLOW|TCP|127.0.0.2|80|OUT"], PY_REFUSALS, log)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    pid = int(out[0])
    assert out[1:] == ["RuleFileNotFoundError", "RuleModuleNotFoundError",
                       "RuleApiPermissionError",
                       "RuleSocketConnectionRefusedError"], r.stdout
    assert len(recs) == 4, recs
    for rec in recs:
        assert rec["layer"] == "python" and rec["by"] == "sandbox", rec
        assert rec["pid"] == pid and rec["rule"] == "no rule", rec
    assert only(recs, kind="file", target="/etc/hostname")["add"] == \
        "expose-ro=/etc/hostname"
    assert only(recs, kind="import", target="json")["add"] == \
        "python-import=json"
    assert only(recs, kind="api", target="os.system")["add"] == \
        "python-api=ALLOW:os.system"
    assert only(recs, kind="network", target="127.0.0.1:9")["add"] == \
        "net=ALLOW|TCP|127.0.0.1|9|OUT"
    assert oct(os.stat(log).st_mode & 0o777) == "0o600"


def test_the_rule_that_decided_is_named(run, logdir, tmp_cwd):
    (tmp_cwd / "ro").mkdir()
    log = logdir / "l"
    r, recs = run(["os-sandbox=subprocess", f"expose-ro={tmp_cwd}/ro",
                   f"python-import={SOCKET_IMPORTS}",
                   "net=DENY|TCP|10.0.0.0/8|*|OUT"],
                  f"""
import socket
for f in (lambda: open("{tmp_cwd}/ro/x", "w"),
          lambda: socket.create_connection(("10.1.2.3", 80), timeout=5)):
    try:
        f()
    except OSError:
        pass
""", log)
    assert r.returncode == 0, r.stderr
    rec = only(recs, kind="file")
    assert rec["target"] == f"{tmp_cwd}/ro/x"
    assert rec["rule"] == f"expose-ro={tmp_cwd}/ro from .py-sandboxes(2)"
    assert rec["add"] == f"expose-rw={tmp_cwd}/ro/x"
    rec = only(recs, kind="network")
    assert rec["rule"] == "net=DENY|TCP|10.0.0.0/8|*|OUT from " \
        ".py-sandboxes(4)"
    assert rec["add"] is None  # a DENY is tried before any ALLOW


NET_REFUSALS = """
import socket
def attempt(f):
    try:
        f()
    except OSError:
        pass
def connect(family, addr):
    s = socket.socket(family)
    try:
        s.connect(addr)
    finally:
        s.close()
attempt(lambda: socket.gethostbyaddr("192.0.2.7"))
attempt(lambda: socket.getaddrinfo("secret.attacker.invalid", 80))
attempt(lambda: connect(socket.AF_UNIX, "/run/nowhere.sock"))
attempt(lambda: connect(socket.AF_UNIX, b"\\0abstract"))
attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 1))
"""


def test_each_network_refusal_names_its_target_and_the_rule_to_add(
        run, logdir):
    """Every refusal of the network guard is a record of what was refused
    (never the exception's text) and the rule that would allow it, or
    "built in" where no rule can."""
    log = logdir / "l"
    r, recs = run(["os-sandbox=subprocess", "python-import=*",
                   "net=ALLOW|TCP|127.0.0.2|80|OUT"], NET_REFUSALS, log)
    assert r.returncode == 0, r.stderr
    assert all(rec["kind"] == "network" for rec in recs), recs
    builtin = "built in: no rule can allow it"
    want = {
        "192.0.2.7": ("no rule", "net=ALLOW|TCP|192.0.2.7|<port>|OUT"),
        "secret.attacker.invalid":
            ("no rule", "net=ALLOW|TCP|secret.attacker.invalid|<port>|OUT"),
        "/run/nowhere.sock": ("no rule", "expose-rw=/run/nowhere.sock"),
        repr(b"\0abstract"): (builtin, None),
        "socket(2, 3, 1)": (builtin, None),
    }
    got = {rec["target"]: (rec["rule"], rec["add"]) for rec in recs}
    assert got == want, recs


NATIVE_CONNECT = """
import ctypes, os, socket, struct
print(os.getpid())
libc = ctypes.CDLL(None, use_errno=True)
s = socket.socket()
sa = struct.pack("<H", socket.AF_INET) + struct.pack(">H", 9) + \\
    bytes([127, 0, 0, 1]) + bytes(8)
print(libc.connect(s.fileno(), sa, len(sa)), ctypes.get_errno())
"""


@pytest.mark.parametrize("provider", KERNEL_PROVIDERS)
def test_a_native_connect_refused_by_the_supervisor(run, logdir, provider,
                                                    user):
    skip_firejail_as_nobody(provider, user)
    log = logdir / "l"
    r, recs = run([f"os-sandbox={provider}", "python-import=*",
                   "python-api=ALLOW:native",
                   "net=ALLOW|TCP|127.0.0.2|80|OUT"], NATIVE_CONNECT, log)
    assert r.returncode == 0, r.stderr
    pid, rc, err = r.stdout.split()
    assert (rc, err) == ("-1", "13"), r.stdout
    assert len(recs) == 1, recs
    rec = recs[0]
    assert rec["layer"] == "supervisor" and rec["by"] == "supervisor", rec
    assert rec["pid"] == int(pid)
    assert (rec["kind"], rec["target"], rec["rule"], rec["add"]) == (
        "network", "127.0.0.1:9", "no rule",
        "net=ALLOW|TCP|127.0.0.1|9|OUT")


NATIVE_FILES = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print(os.getpid())
def call(name, *args):
    r = getattr(libc, name)(*args)
    print(name, r, ctypes.get_errno() if r < 0 else 0)
call("open", b"{secret}", os.O_RDONLY)
call("open", b"{ro}/f", os.O_WRONLY)
call("open", b"{ro}/new", os.O_WRONLY | os.O_CREAT, 0o644)
call("mkdir", b"{ro}/d", 0o755)
call("unlink", b"{ro}/f")
call("rename", b"{ro}/f", b"{rw}/g")
call("truncate", b"{ro}/f", 0)
call("open", b"{ro}/f", os.O_RDONLY)
call("open", b"{rw}/ok", os.O_WRONLY | os.O_CREAT, 0o644)
call("mkdir", b"{rw}/d", 0o755)
"""


def owned_dirs(tmp_cwd, user, *names):
    """Directories the program's uid owns, with a file 'f' in each."""
    out = []
    for name in names:
        d = tmp_cwd / name
        d.mkdir()
        (d / "f").write_text("kept\n")
        if user == "nobody" and os.geteuid() == 0:
            for x in (d, d / "f"):
                os.chown(x, NOBODY, NOBODY)
        out.append(d)
    return out


@needs_landlock
def test_landlock_refusals_are_in_the_log(run, logdir, tmp_cwd, user):
    """What native code does that Landlock refuses (the Python layer never
    sees it) is in the log once per refusal, layer "landlock", written by
    the supervisor, with the rule that decided and the exposure to add;
    the calls still fail, as seen from outside, and what is allowed is
    not recorded."""
    ro, rw = owned_dirs(tmp_cwd, user, "ro", "rw")
    secret = tmp_cwd / "secret.txt"
    secret.write_text("s\n")
    log = logdir / "l"
    r, recs = run(["os-sandbox=landlock", f"expose-ro={ro}",
                   f"expose-rw={rw}", "python-import=*",
                   "python-api=ALLOW:native"],
                  NATIVE_FILES.format(secret=secret, ro=ro, rw=rw), log,
                  landlock=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    pid = int(lines[0])
    assert [tuple(x.split()[1:]) for x in lines[1:]] == [
        ("-1", "13")] * 7 + [("3", "0"), ("4", "0"), ("0", "0")], r.stdout
    # seen from outside: nothing refused happened
    assert (ro / "f").read_text() == "kept\n"
    assert sorted(os.listdir(ro)) == ["f"]
    assert sorted(os.listdir(rw)) == ["d", "f", "ok"]
    ll = [x for x in recs if x["layer"] == "landlock"]
    for rec in ll:
        assert (rec["by"], rec["kind"]) == ("supervisor", "file"), rec
    mine = [x for x in ll if x["pid"] == pid and
            x["target"].startswith(str(tmp_cwd) + "/")]
    ro_rule = f"expose-ro={ro} from .py-sandboxes(2)"
    want = [
        (str(secret), "no rule", f"expose-ro={secret}"),
        (f"{ro}/f", ro_rule, f"expose-rw={ro}/f"),
        (f"{ro}/new", ro_rule, f"expose-rw={ro}/new"),
        (str(ro), ro_rule, f"expose-rw={ro}"),  # mkdir
        (str(ro), ro_rule, f"expose-rw={ro}"),  # unlink
        (str(ro), ro_rule, f"expose-rw={ro}"),  # rename: its source
        (f"{ro}/f", ro_rule, f"expose-rw={ro}/f"),  # truncate
    ]
    assert sorted((x["target"], x["rule"], x["add"]) for x in mine) == \
        sorted(want), mine
    # nothing of rw, nothing read from ro
    assert not [x for x in ll if x["target"].startswith(str(rw))], ll


@needs_landlock
def test_the_interpreters_start_is_not_the_programs(run, logdir, tmp_cwd,
                                                    user):
    """What the interpreter does before the program's code runs (site.py
    looks up the home directory in /etc/passwd when the rules keep HOME
    out) is refused by Landlock but not logged: the guard tells the
    supervisor when the program starts. What the program then does is."""
    log = logdir / "l"
    r, recs = run(["os-sandbox=landlock"],
                  "print(open('/etc/hostname').read() and 'read')", log,
                  landlock=True)
    assert r.returncode == 1 and "Rule" in r.stderr, r.stderr
    r, recs = run(["os-sandbox=landlock", "python-import=*",
                   "python-api=ALLOW:native"],
                  "import ctypes\n"
                  "libc = ctypes.CDLL(None)\n"
                  "print(libc.open(b'/etc/hostname', 0))\n", log,
                  landlock=True)
    assert r.stdout.strip() == "-1", (r.stdout, r.stderr)
    ll = [x for x in recs if x["layer"] == "landlock"]
    assert not [x for x in ll if x["target"] in
                ("/etc/passwd", "/etc/nsswitch.conf")], ll
    assert [x for x in ll if x["target"] == "/etc/hostname"], ll


SETID = """
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    r = getattr(libc, name)(*args)
    print(name, r, ctypes.get_errno() if r < 0 else 0)
call("open", b"{rw}/suid", os.O_WRONLY | os.O_CREAT, 0o4755)
call("creat", b"{rw}/sgid", 0o2755)
call("mknod", b"{rw}/null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
call("mknod", b"{rw}/fifo", stat.S_IFIFO | 0o600, 0)
call("chmod", b"{rw}/f", 0o4755)
print(oct(os.stat("{rw}/f").st_mode & 0o7777))
"""


@needs_landlock
def test_a_log_does_not_widen_the_filter(run, logdir, tmp_cwd, user):
    """With a log the file calls go to the supervisor rather than being
    allowed by the filter: what the filter's argument rules refuse (a
    set-id file or mode, a device node) is still refused, and logged as
    seccomp's refusal, once."""
    (rw,) = owned_dirs(tmp_cwd, user, "rw")
    log = logdir / "l"
    r, recs = run(["os-sandbox=landlock", f"expose-rw={rw}",
                   "python-import=*", "python-api=ALLOW:native"],
                  SETID.format(rw=rw), log)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert out[:5] == ["open -1 1", "creat -1 1", "mknod -1 1", "mknod 0 0",
                       "chmod -1 1"], r.stdout
    assert sorted(os.listdir(rw)) == ["f", "fifo"]
    assert not os.stat(rw / "f").st_mode & 0o6000
    # glibc's open() and mknod() are openat and mknodat
    seccomp = sorted(x["target"] for x in recs if x["layer"] == "seccomp")
    assert seccomp in (["chmod", "creat", "mknodat", "openat"],
                       ["creat", "fchmodat", "mknodat", "openat"]), recs


KILLS = """
import ctypes, os, signal, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
print(os.getpid())
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
for pid in ({victim}, child):
    r = libc.kill(pid, 0)
    print(r, ctypes.get_errno() if r < 0 else 0)
r = libc.kill({victim}, signal.SIGTERM)
print(r, ctypes.get_errno() if r < 0 else 0)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
"""


@pytest.mark.skipif(ABI < 6, reason=f"Landlock ABI {ABI}: no signal scope")
def test_a_signal_landlock_refuses_is_in_the_log(run, logdir, user):
    """A signal to a process outside the sandbox, sent by native code,
    is refused by Landlock's scope and recorded (layer landlock, kind
    signal); one to the program's own child is neither. The victim,
    outside, lives on."""
    victim = subprocess.Popen(["sleep", "60"])
    try:
        log = logdir / "l"
        r, recs = run(["os-sandbox=landlock", "python-import=*",
                       "python-api=ALLOW:*"],
                      KILLS.format(victim=victim.pid), log, landlock=True)
        assert r.returncode == 0, r.stderr
        pid, *rest = r.stdout.split("\n")
        assert rest[:3] == ["-1 1", "0 0", "-1 1"], r.stdout
        assert victim.poll() is None
        sig = [x for x in recs if x["kind"] == "signal"]
        assert [(x["layer"], x["by"], x["pid"], x["target"], x["add"])
                for x in sig] == [
            ("landlock", "supervisor", int(pid), f"pid {victim.pid}",
             None)] * 2, recs
        assert "signal scope" in sig[0]["rule"]
    finally:
        victim.kill()
        victim.wait()


NATIVE_UNSHARE = """
import ctypes, os
print(os.getpid())
libc = ctypes.CDLL(None, use_errno=True)
# unshare(CLONE_NEWUSER): outside the system-call allowlist
print(libc.unshare(0x10000000), ctypes.get_errno())
"""


@pytest.mark.parametrize("provider", KERNEL_PROVIDERS)
def test_a_system_call_refused_by_seccomp(run, logdir, provider, user):
    """With a log, a call outside the allowlist is reported by the
    supervisor (layer seccomp, no rule to add), still EPERM, and nothing
    is printed without PYSB_DEBUG."""
    skip_firejail_as_nobody(provider, user)
    log = logdir / "l"
    r, recs = run([f"os-sandbox={provider}", "python-import=*",
                   "python-api=ALLOW:native"], NATIVE_UNSHARE, log)
    assert r.returncode == 0, r.stderr
    pid, rc, err = r.stdout.split()
    assert (rc, err) == ("-1", "1"), r.stdout
    assert "seccomp: refused" not in r.stderr
    rec = only(recs, kind="syscall")
    assert (rec["layer"], rec["by"], rec["pid"], rec["target"],
            rec["add"]) == ("seccomp", "supervisor", int(pid), "unshare",
                            None), rec
    assert "allowlist" in rec["rule"]


def make_log(path, user):
    """The log, made beforehand so that the program can be told its inode
    (it cannot stat it by its path)."""
    path.touch(mode=0o600)
    if user == "nobody" and os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    return os.stat(path).st_ino


FORGE = """
import ctypes, os
log, ino = {log!r}, {ino}
print(os.getpid())
libc = ctypes.CDLL(None, use_errno=True)
# by its path: the Python layer, then the kernel
try:
    open(log, "a")
    print("python-open: yes")
except OSError as e:
    print("python-open: no")
fd = libc.open(log.encode(), os.O_WRONLY | os.O_APPEND)
print("native-open:", "yes" if fd >= 0 else "no")
# through every descriptor it holds (what /proc/self/fd lists)
held = []
forged = b'{{"layer": "supervisor", "forged": 1}}\\n'
for n in range(3, 1024):
    try:
        st = os.fstat(n)
    except OSError:
        continue
    if st.st_ino == ino:
        held.append(n)
    libc.write(n, forged, len(forged))
    for d in (b"kind\\tt\\tx\\t-", b"api\\tforged.target\\t+r\\t-"):
        libc.write(n, d, len(d))
print("held:", held)
__import__("json")
"""


@pytest.mark.parametrize("provider", KERNEL_PROVIDERS)
def test_the_program_cannot_write_the_log(run, logdir, user, provider):
    skip_firejail_as_nobody(provider, user)
    log = logdir / "l"
    ino = make_log(log, user)
    r, recs = run([f"os-sandbox={provider}",
                   "python-import=os,ctypes,_ctypes,struct,_struct,types",
                   "python-api=ALLOW:native"],
                  FORGE.format(log=str(log), ino=ino), log)
    assert r.returncode != 0  # the json import at the end is refused
    lines = r.stdout.splitlines()
    pid = int(lines[0])
    assert lines[1:4] == ["python-open: no", "native-open: no",
                          "held: []"], (r.stdout, r.stderr)
    text = log.read_text()
    assert '"forged": 1' not in text, text
    # the supervisor's records are Landlock's refusals of its native open
    # of the log (which the kernel refused: "native-open: no")
    for rec in read_log(log, landlock=True):
        assert rec["by"] == "sandbox" or rec["layer"] == "landlock", rec
    # what it sent on the guard's socket is a python record at best,
    # marked as written from inside the sandbox, with its real pid
    for rec in recs:
        assert rec["layer"] == "python" and rec["by"] == "sandbox", rec
        assert rec["pid"] == pid, rec
    only(recs, kind="import", target="json")
    only(recs, kind="file", target=str(log))
    # weaknesses.md 77: a record in the guard's form passes, as "sandbox"
    only(recs, kind="api", target="forged.target", rule="r")
    assert len(recs) == 3, recs


@pytest.mark.parametrize("provider", [
    "subprocess", pytest.param("landlock", marks=needs_landlock)])
def test_a_crash_loses_no_record(run, logdir, provider):
    log = logdir / "l"
    r, recs = run([f"os-sandbox={provider}", "python-import=os"],
                  "import os\ntry:\n    import json\nexcept ImportError:\n"
                  "    pass\nos.abort()\n", log)
    assert r.returncode != 0
    only(recs, kind="import", target="json")


def test_weakness_77_the_program_holds_the_log_under_subprocess(run, logdir,
                                                              user):
    """docs/weaknesses.md 77: without a kernel layer the guard writes the
    log from the program's own process, and the program can forge
    records through that descriptor (pure Python is enough)."""
    log = logdir / "l"
    ino = make_log(log, user)
    r, _ = run(["os-sandbox=subprocess", "python-import=os"], f"""
import os
for n in range(3, 1024):
    try:
        if os.fstat(n).st_ino == {ino}:
            os.write(n, b'{{"forged": 1}}\\n')
    except OSError:
        pass
""", log, parse=False)
    assert r.returncode == 0, r.stderr
    assert log.read_text() == '{"forged": 1}\n'


def test_log_file_rule_relative_to_the_rule_file(run_sb, tmp_cwd, user,
                                                 logdir):
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=subprocess\nlog-file=logs/from-rule.jsonl\n")
    r = run_sb([f"--python={interpreter(user)}", "-c", "import json"],
               unprivileged=(user == "nobody"))
    assert r.returncode == 1
    recs = read_log(logdir / "from-rule.jsonl")
    only(recs, kind="import", target="json")


@pytest.mark.parametrize("case", ["in-rw", "below-rw", "no-parent",
                                  "directory", "symlink", "none",
                                  "through-rw", "open-dir", "foreign",
                                  "world"])
def test_a_bad_log_path_stops_the_run(run_sb, tmp_cwd, user, case):
    """A log path the sandbox could reach, or one other users could
    change (the file, or a directory above it: judged as the rule file
    is), stops the run before anything runs or is made."""
    me = NOBODY if user == "nobody" else os.geteuid()
    if case == "foreign" and os.geteuid() != 0:
        pytest.skip("a file of another user needs root to make")
    (tmp_cwd / "rw" / "deep").mkdir(parents=True)
    (tmp_cwd / "ro").mkdir()
    (tmp_cwd / "open").mkdir()
    (tmp_cwd / "open").chmod(0o777)
    for name, owner in (("theirs", 1), ("shared", me)):
        (tmp_cwd / "ro" / name).touch()
        if os.geteuid() == 0:
            os.chown(tmp_cwd / "ro" / name, owner, owner)
        (tmp_cwd / "ro" / name).chmod(0o666)
    os.symlink("/tmp/elsewhere", tmp_cwd / "link")
    # a directory in the writable tree that the program re-pointed
    # elsewhere: it could point it anywhere before the next run
    (tmp_cwd / "out").mkdir()
    os.symlink(tmp_cwd / "out", tmp_cwd / "rw" / "logs")
    rules = ["os-sandbox=subprocess", f"expose-rw={tmp_cwd}/rw",
             f"expose-ro={tmp_cwd}/rw/deep"]
    log, want = {
        "in-rw": (f"{tmp_cwd}/rw/log", "inside"),
        "below-rw": (f"{tmp_cwd}/rw/deep/log", "inside"),
        "no-parent": (f"{tmp_cwd}/none/log", "parent path must exist"),
        "directory": (f"{tmp_cwd}/ro", "is a directory"),
        "symlink": (f"{tmp_cwd}/link", "symbolic link"),
        "none": (f"{tmp_cwd}/ro/log", "os-sandbox=none refuses nothing"),
        "through-rw": (f"{tmp_cwd}/rw/logs/log", "inside"),
        "open-dir": (f"{tmp_cwd}/open/log",
                     f"the directory '{tmp_cwd}/open' (uid "),
        "foreign": (f"{tmp_cwd}/ro/theirs", "it belongs to another user"),
        "world": (f"{tmp_cwd}/ro/shared", "every user may write it"),
    }[case]
    extra = ["--os-sandbox=none"] if case == "none" else []
    (tmp_cwd / ".py-sandboxes").write_text("\n".join(rules) + "\n")
    r = run_sb([f"--python={interpreter(user)}", *extra,
                f"--pysandboxes-log={log}", "-c", "print('ran')"],
               unprivileged=(user == "nobody"))
    assert r.returncode == 255, (r.returncode, r.stderr)
    assert r.stdout == ""
    assert want in r.stderr, r.stderr
    assert not os.path.exists("/tmp/elsewhere")
    assert not os.path.exists(tmp_cwd / "out" / "log")
    assert not os.path.exists(tmp_cwd / "open" / "log")
    if case == "in-rw":
        assert "Put the log file outside every expose-rw= tree" in r.stderr
    if case in ("open-dir", "foreign", "world"):
        assert (f"could be changed by users other than uid {me} who runs "
                "python-sb") in r.stderr, r.stderr


def test_explain_names_the_log_and_who_writes_it(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("log-file=d.jsonl\n")
    for provider, want in (("subprocess", "written by the guard"),
                           ("landlock", "written by the supervisor"),
                           ("none", "not written under this provider")):
        r = run_sb([f"--os-sandbox={provider}", "--pysandboxes-explain"])
        assert r.returncode == 0, r.stderr
        line = [x for x in r.stdout.splitlines()
                if x.startswith("# Denial log: ")]
        assert line == [f"# Denial log: {tmp_cwd}/d.jsonl, from "
                        f".py-sandboxes(1); " + line[0].split("; ", 1)[1]]
        assert want in line[0], line
    assert not (tmp_cwd / "d.jsonl").exists()  # explain opens nothing


@needs_landlock
def test_a_native_unix_connect_names_the_read_only_rule(run, logdir,
                                                        tmp_cwd):
    import socket
    ro = tmp_cwd / "ro"
    ro.mkdir()
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(ro / "s"))
    srv.listen()
    try:
        r, recs = run(["os-sandbox=landlock", "python-import=*",
                       "python-api=ALLOW:native", f"expose-ro={ro}"], f"""
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
s = socket.socket(socket.AF_UNIX)
path = {str(ro / "s")!r}.encode()
sa = (socket.AF_UNIX).to_bytes(2, "little") + path + bytes(108 - len(path))
print(libc.connect(s.fileno(), sa, len(sa)), ctypes.get_errno())
""", logdir / "l")
    finally:
        srv.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["-1", "13"], r.stdout
    rec = only(recs, kind="unix-socket")
    assert (rec["layer"], rec["by"], rec["target"]) == (
        "supervisor", "supervisor", str(ro / "s"))
    assert rec["rule"] == f"expose-ro={ro} from .py-sandboxes(4)"
    assert rec["add"] == f"expose-rw={ro}/s"
    assert len(recs) == 1, recs


NATIVE_META = """
import ctypes, os
print(os.getpid())
libc = ctypes.CDLL(None, use_errno=True)
ro, mine = {ro!r}, {mine!r}
# chmod and utime through libc: no audit event, the supervisor judges them
print(libc.chmod(ro.encode(), 0o600), ctypes.get_errno())
print(libc.utime(ro.encode(), None), ctypes.get_errno())
print(libc.chmod(mine.encode(), 0o600), ctypes.get_errno())
"""


@pytest.mark.parametrize("provider", KERNEL_PROVIDERS)
def test_mode_and_time_changes_refused_by_the_supervisor(run, logdir,
                                                         tmp_cwd, provider,
                                                         user):
    """chmod and utime that the supervisor refuses (the object lies under
    expose-ro=) each leave one record naming the rule that decided and the
    rule to add; an allowed one leaves none; the file is unchanged."""
    skip_firejail_as_nobody(provider, user)
    ro, rw = tmp_cwd / "ro", tmp_cwd / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "f").write_text("x")
    (rw / "g").write_text("x")
    os.chmod(ro / "f", 0o644)
    if user == "nobody":
        for p in (ro, rw, ro / "f", rw / "g"):
            os.chown(p, NOBODY, NOBODY)
    before = os.stat(ro / "f")
    r, recs = run([f"os-sandbox={provider}", "python-import=*",
                   "python-api=ALLOW:native", f"expose-ro={ro}",
                   f"expose-rw={rw}"],
                  NATIVE_META.format(ro=str(ro / "f"), mine=str(rw / "g")),
                  logdir / "l")
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    pid, results = int(out[0]), out[1:]
    # (errno after a success is whatever it was)
    assert results[:5] == ["-1", "1", "-1", "1", "0"], r.stdout
    after = os.stat(ro / "f")
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode,
                                                  before.st_mtime_ns)
    assert os.stat(rw / "g").st_mode & 0o777 == 0o600
    files = [rec for rec in recs if rec["kind"] == "file"]
    assert len(files) == 2, recs
    for rec in files:
        assert (rec["layer"], rec["by"], rec["pid"], rec["target"],
                rec["rule"], rec["add"]) == (
            "supervisor", "supervisor", pid, str(ro / "f"),
            f"expose-ro={ro} from .py-sandboxes(4)",
            f"expose-rw={ro / 'f'}"), rec


FLOOD = """
for i in range(200):
    try:
        open(f"/etc/nothing-{i}")
    except OSError:
        pass
print("done")
"""


@pytest.mark.parametrize("provider", ["subprocess", *KERNEL_PROVIDERS])
def test_the_log_stops_at_its_cap(run, logdir, provider, user):
    """A program that provokes refusals without end cannot fill the disk
    through the log: at log-max-size= the log gets one log-full record and
    nothing more; the run goes on, every refusal still refused."""
    skip_firejail_as_nobody(provider, user)
    log = logdir / "l"
    r, recs = run([f"os-sandbox={provider}", "log-max-size=4K",
                   "log-stderr=off"], FLOOD, log)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["done"]
    size = os.path.getsize(log)
    assert 4096 <= size < 4096 + 1024, size
    assert recs[-1]["kind"] == "log-full", recs[-1]
    assert [x["kind"] for x in recs[:-1]] == ["file"] * (len(recs) - 1)
    assert 5 < len(recs) < 200, len(recs)


def test_a_bad_log_max_size_stops_the_run(run_sb, tmp_cwd):
    (tmp_cwd / "script.py").write_text("print('ran')\n")
    r = run_sb(["--log-max-size=lots", "--pysandboxes-log=l", "script.py"])
    assert r.returncode == 255
    assert "ran" not in r.stdout
    assert ("log-max-size: invalid value 'lots', expected a whole number "
            "of bytes") in r.stderr, r.stderr


EVAL_REFUSALS = """
from pysandboxes import guarded_eval
def attempt(src, mode="eval"):
    try:
        guarded_eval(src, mode=mode)
    except BaseException as e:
        print(type(e).__name__)
attempt("abs(-1)")
attempt("'a'.upper()")
attempt("while True: pass", mode="exec")
"""


@pytest.mark.parametrize("provider", ["subprocess",
                                      pytest.param("landlock",
                                                   marks=needs_landlock)])
def test_eval_guard_refusals_each_appear_once(run, logdir, provider, user):
    """The eval guard's refusals (a call, an attribute, a budget) are
    records of kind eval: the static ones with the rule to add, the budget
    with the budget that decided and nothing to add."""
    log = logdir / "l"
    r, recs = run([f"os-sandbox={provider}", "eval-syntax=arith",
                   "eval-syntax=loop", "eval-max-iterations=100"],
                  EVAL_REFUSALS, log)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["EvalSyntaxRejected", "EvalSyntaxRejected",
                                "EvalInterrupted"], r.stdout
    evals = [(x["target"], x["rule"], x["add"]) for x in recs
             if x["kind"] == "eval"]
    assert evals == [
        ("'abs' is not allowed", "no rule", "eval-call=abs"),
        ("attribute 'upper' is not allowed", "no rule",
         "eval-attribute=upper"),
        ("an evaluation", "eval-max-iterations=100", None),
    ], recs
    assert all(x["layer"] == "python" for x in recs), recs
