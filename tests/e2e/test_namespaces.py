"""The namespace providers (issue 6): os-sandbox=unshare (native), bwrap
and firejail. Hiding (an unexposed path does not exist, even with
py-sandbox=false), ignore= masks, /proc shows only the sandbox's processes,
the host name is isolated, /etc/hosts holds the pinned names, the exit
status and SIGTERM forwarding hold. As root and as uid 65534 (with Debian's
python3, since pyenv lives under /root).

bwrap and firejail run python-sb's second stage inside their namespaces
(src/launch/stage.c): the same Landlock, seccomp and network supervisor as
os-sandbox=landlock, and the guard. Documented differences: firejail keeps
the host's paths outside its whitelist trees visible (Landlock refuses
them) and its /etc/hosts, and does not forward SIGTERM to a handler."""
import atexit
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import AWAIT_SIGNAL, as_nobody, sb_path
from pysbtest import scaled

DEBIAN_PYTHON = "/usr/bin/python3"
PROVIDERS = ["unshare", "bwrap", "firejail"]


def _tool_missing(provider):
    return provider != "unshare" and shutil.which(provider) is None


FJ_USER = "pysb-fj"


def _firejail_user():
    """firejail refuses uid 65534 (and accounts it cannot look up): the
    unprivileged firejail runs use an account of their own, made once when
    missing (root only) and removed when the tests end."""
    try:
        pw = pwd.getpwnam(FJ_USER)
        return pw.pw_uid, pw.pw_gid
    except KeyError:
        pass
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("firejail refuses uid 65534, and no account can be "
                    "made for it here")
    r = subprocess.run(["useradd", "-M", "-N", "-d", "/nonexistent",
                        "-s", "/usr/sbin/nologin", "-c",
                        "python-sb tests (firejail as a user)", FJ_USER],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"useradd {FJ_USER}: {r.stderr.strip()}")
    atexit.register(subprocess.run, ["userdel", FJ_USER],
                    capture_output=True)
    pw = pwd.getpwnam(FJ_USER)
    return pw.pw_uid, pw.pw_gid


def _as(user, argv):
    """argv run as 'root' (as it is), 'nobody' (uid 65534) or 'fjuser'."""
    if user == "nobody":
        return as_nobody(argv)
    if user == "fjuser":
        uid, gid = _firejail_user()
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv not found (util-linux)")
        return [setpriv, f"--reuid={uid}", f"--regid={gid}",
                "--clear-groups", "--"] + list(argv)
    return list(argv)


def _run(argv, cwd, user, **kw):
    return subprocess.run(_as(user, argv), cwd=cwd, capture_output=True,
                          text=True, timeout=60, **kw)


@pytest.fixture
def work():
    """A directory uid 65534 can reach (pytest's tmp_path is 0700)."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="pysb-ns-"))
    w = top / "w"
    (w / "data").mkdir(parents=True)
    (w / "data" / "ok.txt").write_text("fine")
    (w / "data" / "secret.key").write_text("TOPSECRET")
    os.chmod(top, 0o755)
    # sticky: python-sb refuses a rule file in a directory others may
    # change without it
    os.chmod(w, 0o1777)
    os.chmod(w / "data", 0o777)
    for p in (w / "data" / "ok.txt", w / "data" / "secret.key"):
        os.chmod(p, 0o644)
    yield w
    shutil.rmtree(top, ignore_errors=True)


def _argv(user, *rest):
    base = [str(sb_path())]
    if user != "root" or os.geteuid() != 0:
        base.append(f"--python={DEBIAN_PYTHON}")
    return base + list(rest)


def _skip(provider, user):
    """Skip when the provider is missing; the user to run as."""
    if _tool_missing(provider):
        pytest.skip(f"{provider} is not installed")
    if provider == "firejail" and user == "nobody":
        _firejail_user()
        return "fjuser"
    return user


def _hosts_name():
    """A name of the host's /etc/hosts besides localhost: it resolves
    without DNS, so a net= rule can pin it."""
    for line in pathlib.Path("/etc/hosts").read_text().splitlines():
        f = line.split("#")[0].split()
        if len(f) >= 2 and f[0] == "127.0.0.1":
            for name in f[1:]:
                if name != "localhost" and "." not in name:
                    return name
    return None


PROBE = """
import os, socket
for t in ("/etc/passwd", "/work", "/home", "data/secret.key"):
    try:
        print(t, "READ", repr(open(t).read()))
    except OSError as e:
        print(t, type(e).__name__)
print("ok", open("data/ok.txt").read())
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("host", socket.gethostname())
"""


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_hiding(work, provider, user):
    user = _skip(provider, user)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\nexpose-ro=./data\n"
        "expose-ro=/proc\nignore=secret.key\n")
    (work / "app.py").write_text(PROBE)
    r = _run(_argv(user, "--py-sandbox=false", "app.py"), work, user)
    assert r.returncode == 0, r.stderr
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert out["ok"] == "fine"
    assert out["/etc/passwd"] == "FileNotFoundError"
    if provider != "firejail":
        # firejail keeps the host's top-level directories
        assert out["/work"] == "FileNotFoundError"
        assert out["/home"] == "FileNotFoundError"
    # ignore= masks: the secret is never read
    assert "TOPSECRET" not in out["data/secret.key"]
    pids = eval(out["pids"])
    assert max(pids) < 10, pids
    assert pids[0] == 1
    assert out["host"] == "sandbox"


DEEP_PROBE = """
import sys
for p in sys.argv[1:]:
    try:
        with open(p) as f:
            print(p, repr(f.read()))
    except OSError as e:
        print(p, type(e).__name__)
"""


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["unshare", "bwrap"])
def test_ignore_globs_and_deep_names_are_masked(work, provider, user):
    """ignore= with a glob, or a name deep in an exposed tree, is masked for
    native code too (weaknesses.md 34): the tree is searched at start."""
    user = _skip(provider, user)
    deep = work / "data" / "a" / "b"
    (deep / ".git").mkdir(parents=True)
    (deep / "c.key").write_text("TOPSECRET")
    (deep / ".git" / "config").write_text("TOPSECRET")
    (deep / "ok.txt").write_text("fine")
    for dirpath, dirs, files in os.walk(work / "data"):
        os.chmod(dirpath, 0o777)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\nexpose-ro=./data\n"
        "ignore=*.key\nignore=.git\n")
    (work / "app.py").write_text(DEEP_PROBE)
    paths = [str(deep / n) for n in ("c.key", ".git/config", "ok.txt")]
    r = _run(_argv(user, "--py-sandbox=false", "app.py", *paths), work, user)
    assert r.returncode == 0, r.stderr
    assert "TOPSECRET" not in r.stdout
    assert f"{deep}/ok.txt 'fine'" in r.stdout.splitlines()


def test_ignore_search_is_bounded(work):
    """A tree too large to search for ignore= stops the run: never a run
    with a secret left unmasked."""
    big = work / "data" / "big"
    big.mkdir()
    for i in range(210):
        d = big / f"d{i}"
        d.mkdir()
        for j in range(1000):
            (d / f"f{j}").touch()
    (work / ".py-sandboxes").write_text(
        "os-sandbox=unshare\npython-import=*\nexpose-ro=./data\n"
        "ignore=*.key\n")
    r = _run(_argv("root", "-c", "open('ran', 'w').close()"), work, "root")
    assert r.returncode == 255, r.stderr
    assert "more than 200000 entries to search" in r.stderr
    assert "expose-ro=./data" in r.stderr
    assert not (work / "ran").exists()


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["unshare", "bwrap"])
def test_hostname_and_hosts(work, provider, user):
    user = _skip(provider, user)
    name = _hosts_name()
    if name is None:
        pytest.skip("no name besides localhost in /etc/hosts to pin")
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n"
        f"net=ALLOW|TCP|{name}|9|OUT\n{provider}.hostname=box7\n")
    (work / "app.py").write_text(
        "import socket\nprint(socket.gethostname())\n"
        "print(open('/etc/hosts').read())\n")
    r = _run(_argv(user, "--py-sandbox=false", "app.py"), work, user)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "box7"
    assert "127.0.0.1\tlocalhost" in lines
    assert f"127.0.0.1\t{name}" in lines
    assert socket_hostname() != "box7"


def socket_hostname():
    import socket
    return socket.gethostname()


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_exit_status(work, provider, user):
    user = _skip(provider, user)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    r = _run(_argv(user, "-c", "import sys; sys.exit(42)"), work, user)
    assert r.returncode == 42, r.stderr


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_sigterm_forwarded(work, provider, user):
    user = _skip(provider, user)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
            "print('ready', flush=True)\n" + AWAIT_SIGNAL)
    argv = _as(user, _argv(user, "--py-sandbox=false", "-c", code))
    p = subprocess.Popen(argv, cwd=work, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGTERM)
        # firejail replaces python-sb (a setuid tool loses a parent's
        # death signal) and ends its sandbox on SIGTERM: weaknesses.md 33
        # (a signal lost is a timeout: the program waits until it comes)
        assert p.wait(timeout=scaled(40)) == \
            (143 if provider == "firejail" else 7)
        # without a handler: the program dies of it, 128+15
        p2 = subprocess.Popen(_as(user, _argv(user, "-c", "import time; "
                                              "print('ready', flush=True); "
                                              "time.sleep(30)")),
                              cwd=work, stdout=subprocess.PIPE, text=True)
        assert p2.stdout.readline().strip() == "ready"
        time.sleep(0.1)
        p2.send_signal(signal.SIGTERM)
        assert p2.wait(timeout=scaled(40)) == 128 + signal.SIGTERM
    finally:
        # reaped here, so that no zombie of this test reaches another
        # (test_stress counts them)
        for proc in (p, locals().get("p2")):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_unknown_unshare_key(work):
    (work / ".py-sandboxes").write_text(
        "os-sandbox=unshare\npython-import=*\nunshare.frobnicate=1\n")
    r = _run(_argv("root", "-c", "print('RAN')"), work, "root")
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert ("python-sb: .py-sandboxes(3): Unknown key "
            "'unshare.frobnicate': os-sandbox=unshare knows "
            "unshare.hostname only; nothing was run.") in r.stderr


@pytest.mark.parametrize("provider", ["unshare", "bwrap"])
def test_network_empty_without_rules(work, provider):
    _skip(provider, "root")
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    # no net= rule: no route out, whatever the Python layer says
    r = _run(_argv("root", "--py-sandbox=false", "-c",
                   "import socket\ntry:\n socket.create_connection("
                   "('1.1.1.1', 80), timeout=3)\n print('CONNECTED')\n"
                   "except OSError as e:\n print(e.errno)"), work, "root")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() != "CONNECTED"


def test_unshare_without_user_namespaces(work):
    """As uid 65534 with user.max_user_namespaces=0: exit 255 and the
    hint names the sysctl and the alternatives."""
    sysctl = pathlib.Path("/proc/sys/user/max_user_namespaces")
    if os.geteuid() != 0:
        pytest.skip("only root can set user.max_user_namespaces")
    (work / ".py-sandboxes").write_text(
        "os-sandbox=unshare\npython-import=*\n")
    old = sysctl.read_text()
    try:
        sysctl.write_text("0\n")
    except OSError as e:
        pytest.skip(f"cannot set {sysctl}: {e}")
    try:
        r = _run(_argv("nobody", "-c", "print('RAN')"), work, "nobody")
    finally:
        sysctl.write_text(old)
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert "user.max_user_namespaces" in r.stderr
    assert "os-sandbox=landlock" in r.stderr
    assert "os-sandbox=bwrap" in r.stderr


def test_bwrap_missing(work):
    """A missing tool: exit 255 with the apt-get hint. python-sb looks in
    /usr/bin, /usr/local/bin and /bin, not PATH, so where bwrap is
    installed it is hidden there by /dev/null (not executable) in a
    private mount namespace."""
    (work / ".py-sandboxes").write_text("os-sandbox=bwrap\npython-import=*\n")
    argv = [str(sb_path()), "-c", "open('ran', 'w').close()"]
    hidden = [t for t in ("/usr/bin/bwrap", "/usr/local/bin/bwrap",
                          "/bin/bwrap") if os.path.exists(t)]
    if hidden:
        if os.geteuid() != 0 or not shutil.which("unshare"):
            pytest.skip("bwrap is installed and cannot be hidden here")
        hide = "; ".join(f"mount --bind /dev/null {t}" for t in hidden)
        argv = ["unshare", "-m", "sh", "-c", f'{hide}; exec "$@"', "sh",
                *argv]
    r = _run(argv, work, "root")
    assert r.returncode == 255, r.stderr
    assert r.stderr == (
        "python-sb: os-sandbox=bwrap: the bwrap binary is not installed; "
        "nothing was run.\nHint: sudo apt-get install bubblewrap; or use "
        "os-sandbox=unshare or os-sandbox=landlock\n")
    assert not (work / "ran").exists()


@pytest.mark.parametrize("provider", ["bwrap", "firejail"])
def test_the_python_layer_runs_inside(work, provider):
    """The tools run python-sb's second stage, which starts the guard: an
    unexposed write is refused by the Python layer with the rule to add."""
    _skip(provider, "root")
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    r = _run(_argv("root", "-c", "open('ran', 'w').close()"), work, "root")
    assert r.returncode == 1, r.stderr
    assert ("pysandboxes.e.RuleFileNotFoundError: Access to "
            f"'{work}/ran' must be accepted by a rule." in r.stderr)
    assert not (work / "ran").exists()


@pytest.fixture
def outside():
    """A directory outside every tree firejail whitelists, writable by
    anyone: only Landlock can keep the program out of it."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="pysb-ns-outside-", dir="/"))
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_native_code_is_held_by_landlock_inside(work, outside, provider,
                                                user):
    """Native code (no Python layer) cannot write where the rules do not
    say, even where the tool leaves the host's file system in place
    (firejail outside its whitelist trees); the environment is the
    rules' only, without the tool's own variables."""
    user = _skip(provider, user)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    code = ("import os\n"
            f"for p in ('{outside}/x', '/dev/shm/x'):\n"
            "    try:\n"
            "        open(p, 'w').write('1'); print('WROTE')\n"
            "    except OSError as e:\n"
            "        print(type(e).__name__)\n"
            "print(sorted(os.environ))\n"
            "open_fds = []\n"
            "for n in range(3, 256):\n"
            "    try:\n"
            "        os.fstat(n); open_fds.append(n)\n"
            "    except OSError:\n"
            "        pass\n"
            "print(open_fds)\n")
    r = _run(_argv(user, "--py-sandbox=false", "-c", code), work, user)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] in ("PermissionError", "FileNotFoundError"), r.stdout
    assert not (outside / "x").exists()
    # every provider mounts a writable /dev/shm: Landlock refuses it
    assert lines[1] == "PermissionError", r.stdout
    # nothing of python-sb's reaches the program: not the stage record,
    # the signal socket or, with the Python layer off, the policy
    assert lines[3] == "[]", r.stdout
    assert set(eval(lines[2])) <= {"LC_CTYPE", "TERM", "LANG"}, lines[2]


@pytest.mark.parametrize("provider", ["bwrap", "firejail"])
def test_env_values_stay_off_command_lines(work, provider):
    """The program's environment reaches the second stage on a memfd: no
    process on the host shows a value of it in /proc/PID/cmdline, which
    every user can read."""
    _skip(provider, "root")
    secret = "pysb-secret-value-7f3a9c"
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n"
        f"env=PYSB_TOKEN={secret}\n")
    code = ("import os, time\n"
            "print(os.environ['PYSB_TOKEN'], flush=True)\n"
            "time.sleep(30)\n")
    p = subprocess.Popen(_argv("root", "-c", code), cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline() == secret + "\n", p.stderr.read()
        seen = []
        for d in pathlib.Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if secret.encode() in cmd:
                seen.append(cmd)
        assert seen == []
    finally:
        p.kill()
        p.wait()


def test_stage_refuses_bad_input(work):
    """The second stage is reachable by hand: a descriptor that is not a
    stage record runs nothing (exit 255)."""
    r = _run([str(sb_path()), "--pysb-stage=999", "--", DEBIAN_PYTHON, "-c",
              "open('ran', 'w').close()"], work, "root")
    assert r.returncode == 255
    assert r.stderr == ("python-sb: the second stage inside the sandbox: "
                        "Bad file descriptor; nothing was run.\n")
    junk = work / "junk"
    junk.write_text("not a record\n")
    fd = os.open(junk, os.O_RDONLY)
    try:
        r = _run([str(sb_path()), f"--pysb-stage={fd}", "--", DEBIAN_PYTHON,
                  "-c", "open('ran', 'w').close()"], work, "root",
                 pass_fds=(fd,))
    finally:
        os.close(fd)
    assert r.returncode == 255
    assert r.stderr == ("python-sb: the second stage inside the sandbox: "
                        "not a python-sb stage record; nothing was run.\n")
    assert not (work / "ran").exists()


def _stage_record(work, end="end\n", command=DEBIAN_PYTHON, extra="",
                  **over):
    fields = {"path": DEBIAN_PYTHON, "real": DEBIAN_PYTHON,
              "guard": "/nonexistent/libpysb-guard.so", "pkgdir": "",
              "cwd": str(work), "script": "", "policy-fd": "3",
              "guarded": "1", "hosts": "0", "debug": "0", "signal-fd": "-1"}
    fields.update(over)
    record = work / "record"
    record.write_text("python-sb stage 1\n" + "".join(
        f"{k}\t{v}\n" for k, v in fields.items() if v is not None) +
        extra + end)
    fd = os.open(record, os.O_RDONLY)
    try:
        return _run([str(sb_path()), f"--pysb-stage={fd}", "--",
                     command, "-c", "open('ran', 'w').close()"], work,
                    "root", pass_fds=(fd,))
    finally:
        os.close(fd)


@pytest.mark.parametrize("change,why", [
    ({"end": ""}, "truncated stage record"),
    ({"extra": "colour\tblue\n"}, "unknown field in the stage record"),
    ({"path": None}, "incomplete stage record"),
    ({"policy-fd": "2"}, "incomplete stage record"),
    ({"extra": "env\tA\\qB\n"}, "malformed stage record"),
    ({"guarded": "0", "command": "/bin/sh"},
     "the command is not the interpreter the record names"),
    ({"guarded": "0", "policy-fd": "9"},
     "the policy descriptor: Bad file descriptor"),
])
def test_stage_refuses_a_bad_record(work, change, why):
    """Every fault in what the launcher hands the stage stops the run
    before anything starts."""
    r = _stage_record(work, **change)
    assert r.returncode == 255
    assert r.stderr == ("python-sb: the second stage inside the sandbox: "
                        f"{why}; nothing was run.\n")
    assert not (work / "ran").exists()


def test_stage_refuses_a_guard_it_cannot_read(work):
    """ld.so skips a preload it cannot open and runs the program anyway:
    the stage stops the run when the guard is not there."""
    r = _stage_record(work)
    assert r.returncode == 255
    assert r.stderr == (
        "python-sb: the second stage inside the sandbox: the guard library "
        "/nonexistent/libpysb-guard.so is not readable inside the tool's "
        "root; nothing was run.\n")
    assert not (work / "ran").exists()


def test_stage_refuses_a_missing_working_directory(work):
    """Relative paths must mean inside what they meant outside: a working
    directory the tool did not keep stops the run."""
    r = _stage_record(work, guarded="0", cwd="/nonexistent-pysb-cwd")
    assert r.returncode == 255
    assert r.stderr == (
        "python-sb: the second stage inside the sandbox: the working "
        "directory /nonexistent-pysb-cwd is not there inside the tool's "
        "root: No such file or directory; nothing was run.\n")
    assert not (work / "ran").exists()


@pytest.mark.parametrize("provider", ["bwrap", "firejail"])
def test_explain_names_the_second_stage(work, provider):
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    r = _run(_argv("root", "--pysandboxes-explain"), work, "root")
    assert r.returncode == 0, r.stderr
    assert "# Python layer: on\n" in r.stdout
    assert "then, in python-sb's second stage inside, landlock" in r.stdout


def test_ignore_search_too_deep_stops_the_run(work):
    """A tree deeper than the search goes stops the run rather than leave a
    name below unmasked."""
    deep = work / "data"
    for _ in range(70):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (work / ".py-sandboxes").write_text(
        "os-sandbox=unshare\npython-import=*\nexpose-ro=./data\n"
        "ignore=*.key\n")
    r = _run(_argv("root", "-c", "open('ran', 'w').close()"), work, "root")
    assert r.returncode == 255, r.stderr
    assert "more than 64 levels deep to search" in r.stderr
    assert not (work / "ran").exists()


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_program_gets_no_capabilities(work, provider, user):
    """The namespace providers leave the program no capability: run as
    root (no user namespace; bwrap keeps root's) or in a user namespace
    (which holds them all), the sets are empty, no device node can be made
    in a writable tree the host sees, and no_new_privs and the seccomp
    filter hold."""
    user = _skip(provider, user)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\nexpose-rw=./data\n"
        "expose-ro=/proc\n")
    code = ("import os, stat\n"
            "st = dict(l.split(':\\t') for l in "
            "open('/proc/self/status').read().splitlines() if "
            "l.startswith(('Cap', 'NoNewPrivs', 'Seccomp:')))\n"
            "print(st['CapEff'], st['CapPrm'], st['CapInh'], st['CapAmb'])\n"
            "print(st['NoNewPrivs'], st['Seccomp'])\n"
            "try:\n"
            "    os.mknod('data/null', stat.S_IFCHR | 0o666, "
            "os.makedev(1, 3)); print('MADE')\n"
            "except OSError as e:\n"
            "    print(type(e).__name__)\n")
    r = _run(_argv(user, "--py-sandbox=false", "-c", code), work, user)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == " ".join(["0000000000000000"] * 4), lines
    assert lines[1] == "1 2", lines
    assert lines[2] == "PermissionError", lines
    assert not (work / "data" / "null").exists()


def test_bwrap_cap_add_gives_the_program_nothing(work):
    """bwrap.cap-add= is an option bwrap takes; the stage still empties
    the program's sets."""
    _skip("bwrap", "root")
    (work / ".py-sandboxes").write_text(
        "os-sandbox=bwrap\npython-import=*\nexpose-ro=/proc\n"
        "bwrap.cap-add=ALL\n")
    code = ("print([l for l in open('/proc/self/status').read().splitlines()"
            " if l.startswith(('CapEff', 'CapPrm', 'CapAmb'))])")
    r = _run(_argv("root", "--py-sandbox=false", "-c", code), work, "root")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("['CapPrm:\\t0000000000000000', "
                        "'CapEff:\\t0000000000000000', "
                        "'CapAmb:\\t0000000000000000']\n")


def test_bwrap_failing_before_the_stage_is_a_setup_failure(work):
    """bwrap that fails on its own (an option value it refuses) ran
    nothing: python-sb says so and exits 255, not with bwrap's 1, which a
    program could have returned."""
    _skip("bwrap", "root")
    (work / ".py-sandboxes").write_text(
        "os-sandbox=bwrap\npython-import=*\nbwrap.cap-add=CAP_BOGUS\n")
    r = _run(_argv("root", "-c", "open('ran', 'w').close()"), work, "root")
    assert r.returncode == 255, (r.returncode, r.stderr)
    assert "failed before the sandbox started (exit status 1); nothing " \
        "was run." in r.stderr, r.stderr
    assert not (work / "ran").exists()


@pytest.mark.parametrize("rule,why", [
    ("bwrap.frobnicate=1",
     "bwrap.frobnicate is not an option of bwrap 0.8 (see bwrap(1))"),
    ("bwrap.bind=/", "bwrap.bind takes two arguments, which a bwrap.* rule "
     "cannot give; use the file rules (expose-ro=, expose-rw=) or env="),
    ("bwrap.unshare-ipc=yes",
     "bwrap.unshare-ipc takes no value: write 'bwrap.unshare-ipc='"),
    ("bwrap.hostname=", "bwrap.hostname needs a value: "
     "'bwrap.hostname=VALUE'"),
])
def test_bwrap_keys_bwrap_cannot_take(work, rule, why):
    """A bwrap.* rule bwrap would not take stops the run (255) naming the
    rule, before bwrap could read the words after it as its command."""
    _skip("bwrap", "root")
    (work / ".py-sandboxes").write_text(
        f"os-sandbox=bwrap\npython-import=*\n{rule}\n")
    r = _run(_argv("root", "-c", "open('ran', 'w').close()"), work, "root")
    assert r.returncode == 255
    assert r.stderr == (f"python-sb: os-sandbox=bwrap: .py-sandboxes(3): "
                        f"{why}; nothing was run.\n")
    assert not (work / "ran").exists()


def test_bwrap_keys_bwrap_takes(work):
    (work / ".py-sandboxes").write_text(
        "os-sandbox=bwrap\npython-import=*\nbwrap.hostname=box7\n"
        "bwrap.unshare-ipc=\n")
    r = _run(_argv("root", "--py-sandbox=false", "-c",
                   "import socket; print(socket.gethostname())"), work,
             "root")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "box7\n"


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["unshare", "bwrap"])
def test_sigusr1_reaches_the_program(work, provider, user):
    """SIGUSR1 sent to python-sb reaches the program's handler (before, it
    ended the supervisor, and the program died with it)."""
    user = _skip(provider, user)
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\n")
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGUSR1, lambda *a: sys.exit(5))\n"
            "print('ready', flush=True)\n" + AWAIT_SIGNAL)
    p = subprocess.Popen(_as(user, _argv(user, "--py-sandbox=false", "-c",
                                         code)),
                         cwd=work, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGUSR1)
        assert p.wait(timeout=20) == 5
    finally:
        p.kill()
        p.wait()


def test_stage_refuses_a_policy_that_is_not_one(work):
    junk = work / "policy"
    junk.write_text("os-sandbox=bwrap\n")
    pfd = os.open(junk, os.O_RDONLY)
    record = work / "record"
    record.write_text(
        "python-sb stage 1\n"
        f"path\t{DEBIAN_PYTHON}\nreal\t{DEBIAN_PYTHON}\nguard\t\n"
        f"pkgdir\t\ncwd\t{work}\nscript\t\npolicy-fd\t{pfd}\nguarded\t0\n"
        "hosts\t0\ndebug\t0\nsignal-fd\t-1\nend\n")
    fd = os.open(record, os.O_RDONLY)
    try:
        r = _run([str(sb_path()), f"--pysb-stage={fd}", "--", DEBIAN_PYTHON,
                  "-c", "open('ran', 'w').close()"], work, "root",
                 pass_fds=(fd, pfd))
    finally:
        os.close(fd)
        os.close(pfd)
    assert r.returncode == 255
    assert r.stderr.startswith("python-sb: the second stage inside the "
                               "sandbox: not a python-sb policy"), r.stderr
    assert not (work / "ran").exists()


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["unshare", "bwrap"])
def test_an_exposure_named_through_a_link_is_there_inside(work, provider,
                                                           user):
    """expose-ro=/usr/bin/sh (a link to dash): the new root had dash and
    not the link, and the guard, which reads the rules again inside,
    stopped the run: "path '/usr/bin/sh' must exist" (found while fixing
    partial mode). The link is made inside as on the host."""
    user = _skip(provider, user)
    if not os.path.islink("/usr/bin/sh"):
        pytest.skip("/usr/bin/sh is no link here")
    (work / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npython-import=*\nexpose-ro=/usr/bin/sh\n")
    (work / "app.py").write_text(
        "import os\nprint(os.readlink('/usr/bin/sh'), "
        "os.path.isfile('/usr/bin/sh'))\n")
    r = _run(_argv(user, "app.py"), work, user)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{os.readlink('/usr/bin/sh')} True\n"
