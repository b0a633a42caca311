"""The network of its own of os-sandbox=unshare and bwrap with net= rules,
and of firejail run as root (issue 17 item 2, src/kernel/netns.c): a
network namespace whose way out is pasta, which reaches of the host's
loopback only the ports the rules name. As a user, firejail (setuid, so
python-sb cannot make it a namespace) keeps the host's network: those
cases skip with the reason, weaknesses.md 95.

Judged from outside: listeners this test runs on the host's 127.0.0.1
record every connection and every byte they get. A listener no rule names
gets nothing, even when the supervisor would allow the address (a rule for
0.0.0.0/0) and the program connects from native code with the Python layer
off; a listener a rule names gets the connection and the data; a server the
program runs inside on its own 127.0.0.1 still answers it; a pinned name
resolves and reaches the named listener; the gateway address is not the
host. As root and as uid 65534. os-sandbox=landlock is the control: there
the unnamed listener does get the connection."""
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile

import pytest

from conftest import as_nobody, sb_path
from pysbtest import Listener, scaled

DEBIAN_PYTHON = "/usr/bin/python3"
USERS = ["root", "nobody"]
PROVIDERS = ["unshare", "bwrap", "firejail"]


def _skip_missing(provider, user="root"):
    if provider in ("bwrap", "firejail") and shutil.which(provider) is None:
        pytest.skip(f"{provider} is not installed")
    if provider == "firejail" and (user != "root" or os.geteuid() != 0):
        pytest.skip("firejail keeps the host's network unless python-sb "
                    "runs as root (weaknesses.md 95)")
    if not any(os.access(t, os.X_OK) for t in
               ("/usr/bin/pasta", "/usr/local/bin/pasta", "/bin/pasta")):
        pytest.skip("pasta is not installed (Debian package passt) [core]")


@pytest.fixture
def listeners():
    named, unnamed = Listener(), Listener()
    yield named, unnamed
    named.close()
    unnamed.close()


@pytest.fixture
def work():
    """A directory uid 65534 can reach (pytest's tmp_path is 0700)."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="pysb-netns-"))
    w = top / "w"
    w.mkdir()
    os.chmod(top, 0o755)
    os.chmod(w, 0o1777)  # sticky: it holds the rule file
    yield w
    shutil.rmtree(top, ignore_errors=True)


def _run(work, user, args, timeout=60, env=None):
    argv = [str(sb_path()), f"--python={DEBIAN_PYTHON}"] + list(args)
    if user == "nobody":
        argv = as_nobody(argv)
    return subprocess.run(argv, cwd=work, capture_output=True, text=True,
                          timeout=scaled(timeout), env=env)


def _write(work, name, text):
    (work / name).write_text(text)
    os.chmod(work / name, 0o644)


# The program: connect to each (host, port) of argv, send a token, print
# what came back or the error; 'native' goes through libc's connect() by
# ctypes, below the Python layer and the socket module.
CLIENT = """
import ctypes, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def native(host, port, token):
    s = socket.socket()
    # blocking, but connect() honours the send timeout: a dropped SYN
    # ends in time
    tv = struct.pack("ll", int(T) + 1, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    sa = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(port),
                     socket.inet_aton(host))
    if libc.connect(s.fileno(), sa, len(sa)) != 0:
        return "errno %d" % ctypes.get_errno()
    s.sendall(token)
    return s.recv(100).decode()
def plain(host, port, token):
    s = socket.create_connection((host, port), timeout=T)
    s.sendall(token)
    return s.recv(100).decode()
T = float(sys.argv[1])
for arg in sys.argv[2:]:
    how, host, port = arg.split(":")
    try:
        got = (native if how == "native" else plain)(
            host, int(port), ("tok-%s-%s" % (how, port)).encode())
    except OSError as e:
        got = "error %s" % e.errno
    print(how, host, port, got, flush=True)
"""


def _results(r):
    out = {}
    for line in r.stdout.splitlines():
        how, host, port, got = line.split(" ", 3)
        out[(how, host, int(port))] = got
    return out


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_only_the_named_host_loopback_port_is_reached(work, listeners,
                                                      provider, user):
    _skip_missing(provider, user)
    named, unnamed = listeners
    # the supervisor allows every address: only the namespace keeps the
    # program from the unnamed listener
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npy-sandbox=false\n"
           f"net=ALLOW|TCP|127.0.0.1|{named.port}|OUT\n"
           "net=ALLOW|TCP|0.0.0.0/0|*|OUT\n")
    _write(work, "client.py", CLIENT)
    args = [f"{how}:127.0.0.1:{port}" for how in ("plain", "native")
            for port in (named.port, unnamed.port)]
    r = _run(work, user, ["client.py", str(scaled(3))] + args)
    assert r.returncode == 0, r.stderr
    got = _results(r)
    for how in ("plain", "native"):
        assert got[(how, "127.0.0.1", named.port)] == \
            f"pong:tok-{how}-{named.port}", r.stdout
        assert got[(how, "127.0.0.1", unnamed.port)] in \
            ("error 111", "errno 111"), r.stdout
    assert sorted(named.got) == sorted(
        [f"tok-{how}-{named.port}".encode() for how in ("plain", "native")])
    assert unnamed.got == []


@pytest.mark.parametrize("user", USERS)
def test_landlock_is_the_control(work, listeners, user):
    """Without a namespace of its own, the same rules reach the unnamed
    listener: what the test above sees is the namespace's doing."""
    named, unnamed = listeners
    _write(work, ".py-sandboxes",
           "os-sandbox=landlock\npy-sandbox=false\n"
           "net=ALLOW|TCP|0.0.0.0/0|*|OUT\n")
    _write(work, "client.py", CLIENT)
    r = _run(work, user, ["client.py", str(scaled(3)),
                          f"native:127.0.0.1:{unnamed.port}"])
    assert r.returncode == 0, r.stderr
    assert unnamed.got == [f"tok-native-{unnamed.port}".encode()]


def _host_gateway():
    """The host's IPv4 default gateway, which pasta copies into the
    namespace (--config-net), or None."""
    for line in pathlib.Path("/proc/net/route").read_text().splitlines()[1:]:
        f = line.split()
        if f[1] == "00000000":
            return socket.inet_ntoa(int(f[2], 16).to_bytes(4, "little"))
    return None


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_gateway_is_not_the_host(work, listeners, provider, user):
    """pasta runs with --no-map-gw: the namespace's default gateway does
    not lead to the host's loopback."""
    _skip_missing(provider, user)
    gw = _host_gateway()
    if gw is None:
        pytest.skip("the host has no IPv4 default route for pasta to copy")
    _, unnamed = listeners
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npy-sandbox=false\n"
           "net=ALLOW|TCP|0.0.0.0/0|*|OUT\n")
    _write(work, "client.py", CLIENT)
    r = _run(work, user, ["client.py", str(scaled(3)),
                          f"native:{gw}:{unnamed.port}",
                          f"plain:{gw}:{unnamed.port}"])
    assert r.returncode == 0, r.stderr
    for got in _results(r).values():
        assert not got.startswith("pong:"), r.stdout
    assert unnamed.got == []


SELF_SERVER = """
import socket, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
def serve():
    c, _ = srv.accept()
    c.sendall(b"inside:" + c.recv(10))
threading.Thread(target=serve, daemon=True).start()
c = socket.create_connection(srv.getsockname(), timeout=5)
c.sendall(b"hello")
print(c.recv(20).decode())
"""


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_inside_answers_the_program(work, listeners, provider,
                                             user):
    _skip_missing(provider, user)
    named, _ = listeners
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npython-import=*\n"
           "python-api=ALLOW:threads\n"
           "net=ALLOW|TCP|127.0.0.1|*|IN\n"
           "net=ALLOW|TCP|127.0.0.1|self|OUT\n"
           f"net=ALLOW|TCP|127.0.0.1|{named.port}|OUT\n")
    _write(work, "app.py", SELF_SERVER)
    r = _run(work, user, ["app.py"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "inside:hello"


def _hosts_name():
    """A name of the host's /etc/hosts for 127.0.0.1 besides localhost:
    it resolves without DNS, so a net= rule can pin it."""
    for line in pathlib.Path("/etc/hosts").read_text().splitlines():
        f = line.split("#")[0].split()
        if len(f) >= 2 and f[0] == "127.0.0.1":
            for name in f[1:]:
                if name != "localhost":
                    return name
    return None


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_pinned_name_resolves_and_reaches_its_port(work, listeners,
                                                     provider, user):
    _skip_missing(provider, user)
    name = _hosts_name()
    if name is None:
        pytest.skip("no name besides localhost in /etc/hosts to pin")
    named, _ = listeners
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npython-import=*\n"
           f"net=ALLOW|TCP|{name}|{named.port}|OUT\n")
    _write(work, "app.py",
           "import socket, sys\n"
           "ai = socket.getaddrinfo(sys.argv[1], int(sys.argv[2]),\n"
           "                        socket.AF_INET, socket.SOCK_STREAM)\n"
           "print(ai[0][4][0])\n"
           "s = socket.create_connection((sys.argv[1], int(sys.argv[2])),"
           " timeout=5)\n"
           "s.sendall(b'by-name')\nprint(s.recv(20).decode())\n")
    r = _run(work, user, ["app.py", name, str(named.port)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["127.0.0.1", "pong:by-name"]
    assert named.got == [b"by-name"]


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_udp_to_a_named_host_loopback_port(work, provider, user):
    _skip_missing(provider, user)
    named, unnamed = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                      for _ in range(2))
    try:
        for s in (named, unnamed):
            s.bind(("127.0.0.1", 0))
            s.settimeout(scaled(5))
        pn, pu = named.getsockname()[1], unnamed.getsockname()[1]
        _write(work, ".py-sandboxes",
               f"os-sandbox={provider}\npy-sandbox=false\n"
               f"net=ALLOW|UDP|127.0.0.1|{pn}|OUT\n"
               "net=ALLOW|UDP|0.0.0.0/0|*|OUT\n")
        _write(work, "app.py",
               "import socket, sys\n"
               "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "for p in sys.argv[1:]:\n"
               "    u.sendto(b'dgram-' + p.encode(), ('127.0.0.1', int(p)))\n"
               "print('sent')\n")
        r = _run(work, user, ["app.py", str(pn), str(pu)])
        assert r.returncode == 0, r.stderr
        assert named.recvfrom(100)[0] == f"dgram-{pn}".encode()
        unnamed.settimeout(scaled(1))
        with pytest.raises(socket.timeout):
            unnamed.recvfrom(100)
    finally:
        named.close()
        unnamed.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_explain_names_the_stack_and_the_ports(work, provider):
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\nnet=ALLOW|TCP|127.0.0.1|8080|OUT\n"
           "net=ALLOW|UDP|::1|5353|OUT\nnet=ALLOW|TCP|192.0.2.7|443|OUT\n")
    r = _run(work, "root", ["--pysandboxes-explain"])
    assert r.returncode == 0, r.stderr
    assert (f"#   Network: a namespace of its own (os-sandbox={provider} "
            "with net= rules), its way out through pasta (package passt)"
            in r.stdout)
    assert "Host loopback reached from inside: TCP ports 8080, UDP " \
        "ports 5353 " in r.stdout


def test_explain_firejail_says_it_keeps_the_host_network(work):
    """As a user, or with firejail.net= (firejail's own bridge)."""
    _write(work, ".py-sandboxes",
           "os-sandbox=firejail\npy-sandbox=false\n"
           "net=ALLOW|TCP|127.0.0.1|8080|OUT\n")
    r = _run(work, "nobody", ["--pysandboxes-explain"])
    assert r.returncode == 0, r.stderr
    assert "#   Network: the host's (not run as root, or firejail.net= " \
        "given" in r.stdout
    if os.geteuid() == 0:
        _write(work, ".py-sandboxes",
               "os-sandbox=firejail\npy-sandbox=false\n"
               "firejail.net=br0\nnet=ALLOW|TCP|127.0.0.1|8080|OUT\n")
        r = _run(work, "root", ["--pysandboxes-explain"])
        assert r.returncode == 0, r.stderr
        assert "#   Network: the host's (not run as root, or " \
            "firejail.net= given" in r.stdout


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_port_of_the_host_loopback_stops_the_run(work, provider):
    _skip_missing(provider)
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npython-import=*\n"
           "net=ALLOW|TCP|127.0.0.1|*|OUT\n")
    r = _run(work, "root", ["-c", "print('RAN')"])
    assert r.returncode == 255
    assert "RAN" not in r.stdout
    assert (f"python-sb: os-sandbox={provider}: .py-sandboxes(3): "
            "'net=ALLOW|TCP|127.0.0.1|*|OUT': the rules name more than "
            "1024 TCP ports of the host's loopback") in r.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_pasta_missing_stops_the_run(work, provider):
    """No pasta: exit 255 with the package to install, never the host's
    network. python-sb looks in /usr/bin, /usr/local/bin and /bin; where
    pasta is installed it is hidden by /dev/null (not executable) in a
    private mount namespace."""
    if provider == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npython-import=*\n"
           "net=ALLOW|TCP|127.0.0.1|9|OUT\n")
    argv = [str(sb_path()), f"--python={DEBIAN_PYTHON}", "-c",
            "open('ran', 'w').close()"]
    hidden = [t for t in ("/usr/bin/pasta", "/usr/local/bin/pasta",
                          "/bin/pasta") if os.path.exists(t)]
    if hidden:
        if os.geteuid() != 0 or not shutil.which("unshare"):
            pytest.skip("pasta is installed and cannot be hidden here")
        hide = "; ".join(f"mount --bind /dev/null {t}" for t in hidden)
        argv = ["unshare", "-m", "sh", "-c", f'{hide}; exec "$@"', "sh",
                *argv]
    r = subprocess.run(argv, cwd=work, capture_output=True, text=True,
                       timeout=scaled(60))
    assert r.returncode == 255, r.stderr
    assert (f"python-sb: os-sandbox={provider}: net= rules give the "
            "sandbox a network namespace of its own, whose way out is "
            "pasta, and pasta is not installed; nothing was run.\n"
            "Hint: sudo apt-get install passt;") in r.stderr
    assert not (work / "ran").exists()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_stack_is_left_behind(work, listeners, provider):
    """pasta ends with the run, and its private directory (made in
    $TMPDIR, here one of the test's own, so that a second run of the suite
    beside this one cannot disturb the count) is gone."""
    _skip_missing(provider)
    named, _ = listeners
    tmp = work / "tmp"
    tmp.mkdir()
    _write(work, ".py-sandboxes",
           f"os-sandbox={provider}\npython-import=*\n"
           f"net=ALLOW|TCP|127.0.0.1|{named.port}|OUT\n")
    env = dict(os.environ, TMPDIR=str(tmp))
    r = _run(work, "root", ["-c", "print('ran')"], env=env)
    assert r.returncode == 0 and r.stdout == "ran\n", r.stderr
    assert list(tmp.iterdir()) == []
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True,
                        text=True).stdout
    assert f"-T {named.port} " not in ps
    # and it was made in $TMPDIR: one that cannot be written stops the run
    env["TMPDIR"] = str(tmp / "absent")
    r = _run(work, "root", ["-c", "print('ran')"], env=env)
    assert r.returncode != 0 and r.stdout == "", r.stdout
    assert (f"python-sb: os-sandbox={provider}: cannot make a directory "
            f"for pasta's pid file in {tmp}/absent ($TMPDIR, else /tmp): "
            "No such file or directory; nothing was run.\n") == r.stderr


def test_bwrap_share_net_keeps_the_host_network(work, listeners):
    """bwrap.share-net=yes asks for the host's network: no pasta, and the
    supervisor alone holds the host's loopback (documented)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    _, unnamed = listeners
    _write(work, ".py-sandboxes",
           "os-sandbox=bwrap\nbwrap.share-net=yes\npy-sandbox=false\n"
           "net=ALLOW|TCP|0.0.0.0/0|*|OUT\n")
    _write(work, "client.py", CLIENT)
    r = _run(work, "root", ["client.py", str(scaled(3)),
                            f"native:127.0.0.1:{unnamed.port}"])
    assert r.returncode == 0, r.stderr
    assert unnamed.got == [f"tok-native-{unnamed.port}".encode()]
    r = _run(work, "root", ["--pysandboxes-explain"])
    assert "#   Network: the host's (bwrap.share-net)" in r.stdout
