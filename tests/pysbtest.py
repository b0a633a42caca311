"""Helpers shared by the end-to-end tests (tests/e2e) and the adversarial
suite (tests/attacks): the launcher under test, running as uid 65534, the
running kernel's Landlock ABI, time limits scaled to the machine's load,
and the CPython interpreters of this machine, discovered. Both conftest
files import it; it imports no project code.
"""

import ctypes
import glob
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
NOBODY = 65534


def terminal_signals():
    """Give the suite a terminal's Ctrl-C: a suite started in the
    background of a script (`cmd &`, nohup, some CI runners) inherits
    SIGINT ignored, and so would every program it starts, python-sb and
    plain python alike; a test that ends a server with SIGINT would then
    wait forever. A handler (not SIG_IGN) is reset to the default by exec,
    so the children start as from a terminal. SIGHUP stays as it is."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def sb_path():
    """The launcher under test: $PYSB_BIN, else build/python-sb."""
    env = os.environ.get("PYSB_BIN")
    return pathlib.Path(env).resolve() if env else REPO / "build" / "python-sb"


def as_nobody(argv):
    """Prefix argv so that it runs as uid/gid 65534 with no supplementary
    groups. Only root can switch; other users already are unprivileged."""
    if os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux): cannot drop to uid "
                    "65534 [core]")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", "--"] + list(argv)


def run_provider(cwd, argv, provider, who, env=None, drop=(), wait=True,
                 python="/usr/bin/python3"):
    """Run python-sb in 'cwd' under OS_SANDBOX=provider, as root or
    "nobody", with the caller's environment less PYSB_*, OS_SANDBOX,
    PYTHON* and the prefixes in 'drop', plus 'env'. "landlock/kernel-only"
    turns the Python layer off, so that what is refused is refused by the
    kernel layer and the supervisor alone. wait=False: the Popen."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("PYSB_", "OS_SANDBOX", "PYTHON",
                                 *drop))}
    full.update(env or {})
    full["OS_SANDBOX"] = provider.split("/")[0]
    cmd = [str(sb_path()), f"--python={python}"]
    if provider.endswith("/kernel-only"):
        cmd.append("--py-sandbox=false")
    cmd += argv
    if who == "nobody":
        cmd = as_nobody(cmd)
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=full, text=True,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
    return subprocess.run(cmd, cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=scaled(120),
                          stdin=subprocess.DEVNULL)


def landlock_abi():
    """The running kernel's Landlock ABI (0: none), asked directly
    (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION), or
    $PYSB_LANDLOCK_ABI when that is lower: python-sb then runs with that
    ABI (an older kernel's Landlock)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    v = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint(1))
    cap = os.environ.get("PYSB_LANDLOCK_ABI", "")
    if len(cap) == 1 and "1" <= cap <= "9":
        v = min(v, int(cap))
    return max(v, 0)


# ---- time limits that hold on a loaded machine ----

# Seconds the probe below takes on an idle core of the development machine
# (2 cores, 2026). A limit in a test is its idle figure times slowness().
_PROBE_IDLE_SECONDS = 0.05


def _probe_seconds():
    t0 = time.perf_counter()
    n = 0
    for i in range(400000):
        n += i & 7
    return time.perf_counter() - t0


_slowness_at = [0.0, 1.0]  # when it was last measured, and what it was


def slowness():
    """How many times slower than idle this machine runs now (>= 1): the
    worst of three short CPU probes and of the load average per core, so
    that a loaded machine gives larger time limits (a slow pass, never a
    false failure). PYSB_SLOWNESS overrides it."""
    env = os.environ.get("PYSB_SLOWNESS")
    if env:
        return max(1.0, float(env))
    # measured again at most every 10 s: every run of a program in the
    # suites asks (its limit is scaled), and a measure costs 0.15 s
    now = time.monotonic()
    if _slowness_at[0] and now - _slowness_at[0] < 10:
        return _slowness_at[1]
    worst = max(_probe_seconds() for _ in range(3))
    # a short probe can catch a quiet moment: the run queue per core over
    # the last minute says how shared the cores are for a longer test
    try:
        queue = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        queue = 1.0
    _slowness_at[:] = [now, max(1.0, worst / _PROBE_IDLE_SECONDS, queue)]
    return _slowness_at[1]


def scaled(seconds):
    """A time limit of `seconds` on an idle machine, scaled to this one's
    current load (slowness())."""
    return seconds * slowness()


# How a test program waits for a signal its Python handler takes: short
# sleeps, never one long one. CPython runs a Python handler between
# bytecodes; a signal that lands after the last check and before
# time.sleep's clock_nanosleep starts is handled by the C handler only, and
# the Python handler waits the whole sleep out (a machine under load
# preempts the program in that window now and then). Needs `import time`.
AWAIT_SIGNAL = "while True:\n    time.sleep(0.05)\n"


# ---- the qemu provider ----

def qemu_missing():
    """Why os-sandbox=qemu cannot run here (a skip reason, [core]: scripts/
    deps installs both), or None."""
    if shutil.which("qemu-system-x86_64") is None:
        return ("qemu-system-x86_64 is not installed (apt-get install "
                "qemu-system-x86) [core]")
    for k in sorted(glob.glob("/boot/vmlinuz-*"), reverse=True):
        ver = k[len("/boot/vmlinuz-"):]
        if glob.glob(f"/lib/modules/{ver}/kernel/fs/9p/9p.ko*"):
            return None
    return ("no guest kernel with 9p modules in /boot (apt-get install -t "
            "bookworm-backports linux-image-amd64) [core]")


# ---- the interpreters a core case runs under ----

def _pyenv_root():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    return pathlib.Path(root)


def _version_key(name):
    return tuple(int(p) for p in name.split("."))


def pyenv_versions():
    """The pyenv CPython versions >= 3.9 installed here ("3.9.18", ...),
    oldest first, discovered from $PYENV_ROOT/versions (no list of patch
    levels to keep up to date)."""
    base = _pyenv_root() / "versions"
    found = []
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            continue        # pypy, miniconda, 3.13t, virtualenvs...
        if _version_key(name) < (3, 9, 0):
            continue
        if os.access(base / name / "bin" / "python3", os.X_OK):
            found.append(name)
    return sorted(found, key=_version_key)


def pyenv_python(version):
    """The python3 of one of pyenv_versions() (a str path)."""
    return str(_pyenv_root() / "versions" / version / "bin" / "python3")


def pyenv_minor(minor):
    """The python3 of pyenv's newest CPython `minor` ("3.11"), or a path
    that does not exist (the caller's existence check then skips)."""
    found = [v for v in pyenv_versions() if v.startswith(minor + ".")]
    if not found:
        return str(_pyenv_root() / "versions" / f"{minor}-absent" / "bin" /
                   "python3")
    return pyenv_python(found[-1])


def pyenv_oldest():
    """pyenv's oldest CPython >= 3.9 (a path; absent when pyenv is)."""
    v = pyenv_versions()
    return pyenv_python(v[0]) if v else pyenv_minor("3.9")


def pyenv_newest():
    """pyenv's newest CPython (a path; absent when pyenv is)."""
    v = pyenv_versions()
    return pyenv_python(v[-1]) if v else pyenv_minor("3.13")


def interpreters():
    """(id, path) of every CPython >= 3.9 this machine has: pyenv's
    versions and Debian's /usr/bin/python3. In CI (PYSB_STRICT_SKIPS=1)
    fewer than two is an error: the matrix would prove nothing."""
    found = [(f"pyenv-{v}", _pyenv_root() / "versions" / v / "bin" /
              "python3") for v in pyenv_versions()]
    debian = pathlib.Path("/usr/bin/python3")
    if os.access(debian, os.X_OK):
        found.append(("debian", debian))
    if len(found) < 2 and os.environ.get("PYSB_STRICT_SKIPS") == "1":
        raise RuntimeError(f"only {len(found)} CPython >= 3.9 found "
                           f"(pyenv root {_pyenv_root()}): the "
                           "multi-interpreter matrix needs two [core]")
    return found


def interpreter_paths():
    """The paths of interpreters(), Debian's first when present."""
    found = [str(path) for _, path in interpreters()]
    found.sort(key=lambda p: p != "/usr/bin/python3")
    return found


def guard_seal():
    """The two words python-sb puts first on the interpreter's command line
    (src/base/guard_seal.h), for the tests that start an interpreter with
    the guard preloaded by hand."""
    import re
    text = (REPO / "src" / "base" / "guard_seal.h").read_text()
    macro = text.split("#define SB_SEAL_CODE", 1)[1].split("\n/*", 1)[0]
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', macro)
    code = "".join(parts).encode().decode("unicode_escape")
    return ["-c", code]


def serve_until_closed(owner, one):
    """Run one() (a receive or an accept on owner.sock, and what follows)
    in a thread until stop_serving(owner). The socket waits 0.1 s at a
    time, so the thread sees the stop and ends before the socket is
    closed: a thread still inside recvfrom or accept when its descriptor is
    closed and taken again by the next test's socket reads that socket's
    traffic (a DNS query of one test reached the previous test's server,
    and a connection could be counted by the wrong listener: evidence
    lost)."""
    owner.stop = threading.Event()
    owner.sock.settimeout(0.1)

    def loop():
        while not owner.stop.is_set():
            try:
                one()
            except socket.timeout:
                continue
            except OSError:
                return
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def stop_serving(owner):
    owner.stop.set()
    owner.thread.join()
    owner.sock.close()


class Listener:
    """A TCP server on the host's 127.0.0.1 (or `host`) that records what
    reaches it (got: one item per connection) and answers each connection
    with b'pong:' + what it read: evidence from outside the sandbox."""

    def __init__(self, host="127.0.0.1"):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.got = []
        self.lock = threading.Lock()
        self.thread = serve_until_closed(self, self._one)

    def _one(self):
        c, _ = self.sock.accept()
        c.settimeout(scaled(5))
        try:
            data = c.recv(100)
            c.sendall(b"pong:" + data)
        except OSError:
            data = b"<error>"
        with self.lock:
            self.got.append(data)
        c.close()

    def close(self):
        stop_serving(self)


def reached_from_outside(run, name):
    """run() starts, inside a sandbox, a helper that binds and listens on
    the abstract Unix name (try-syscall bind-abstract); while it runs, this
    process connects to the name from outside. Returns (run's answer,
    whether a connection got through): the evidence of a service offered
    outside the sandbox."""
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("answer", run()))
    t.start()
    while t.is_alive() and "connected" not in got:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.connect("\0" + name)
            got["connected"] = True
        except OSError:
            time.sleep(0.02)
        finally:
            c.close()
    t.join()
    return got.get("answer"), got.get("connected", False)
