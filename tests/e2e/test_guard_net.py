"""End-to-end tests of the network guard (guard/net.c): spec 5.3 and 2.6.4,
attack rows E1-E15 and E23 of attacks.md.

Each case writes a .py-sandboxes and a small script into a fresh directory,
runs build/python-sb on it and reads what the script printed: one line per
probe, "<label>: OK <repr>" or "<label>: <ExceptionClass>: <message>".
Everything stays on loopback: a TCP and a UDP server run in the test
process on 127.0.0.1 with port 0, and their ports reach the script as
argv[1] and argv[2]. The core cases run on every CPython present (the pyenv
builds and Debian's /usr/bin/python3); an absent one is skipped.

Rules start at line 2 of the rule file (line 1 is python-import=*, so that
the import guard stays out of the way), which the refusal messages that
name a rule show as ".py-sandboxes(<line>)".
"""

import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import textwrap
import threading

import pytest

from conftest import pyenv_versions, sb_path, scaled

PYENV_VERSIONS = pyenv_versions()
DEBIAN_PYTHON = "/usr/bin/python3"
REFUSED = "RuleSocketConnectionRefusedError"


# ---- interpreters ----

def _pyenv_python(version):
    pyenv = shutil.which("pyenv")
    root = None
    if pyenv:
        r = subprocess.run([pyenv, "prefix", version], capture_output=True,
                           text=True)
        if r.returncode == 0 and r.stdout.strip():
            root = r.stdout.strip().splitlines()[0]
    if root is None:
        base = os.environ.get("PYENV_ROOT",
                              os.path.expanduser("~/.pyenv"))
        root = os.path.join(base, "versions", version)
    exe = os.path.join(root, "bin", "python3")
    return exe if os.access(exe, os.X_OK) else None


def _interpreter(name):
    if name == "debian":
        return DEBIAN_PYTHON if os.access(DEBIAN_PYTHON, os.X_OK) else None
    return _pyenv_python(name)


@pytest.fixture(params=PYENV_VERSIONS + ["debian"],
                ids=PYENV_VERSIONS + ["debian-python3"])
def python(request):
    """Path of one CPython; the test skips when it is not installed."""
    exe = _interpreter(request.param)
    if exe is None:
        pytest.skip(f"CPython {request.param} is not installed here")
    return exe


@pytest.fixture
def default_python():
    """One interpreter for the non-core cases: the first one present."""
    for name in [v for v in PYENV_VERSIONS if v.startswith("3.11.")] + \
            ["debian"] + PYENV_VERSIONS:
        exe = _interpreter(name)
        if exe:
            return exe
    pytest.skip("no CPython >= 3.9 found [core]")


def _ipv6_works():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not _ipv6_works(),
                                reason="no IPv6 loopback on this machine")


# ---- loopback servers in the test process ----

def _reply_pong(conn):
    with conn:
        conn.settimeout(5)
        try:
            conn.recv(4)
            conn.sendall(b"pong")
        except OSError:
            pass


def _serve_stream(listener):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_reply_pong, args=(conn,),
                         daemon=True).start()


def _serve_datagram(sock):
    while True:
        try:
            _, peer = sock.recvfrom(64)
            if peer is None:  # shut down
                return
            sock.sendto(b"pong", peer)
        except OSError:
            return


@pytest.fixture(scope="module")
def servers():
    """(tcp_port, udp_port) of pong servers on 127.0.0.1."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(64)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    threading.Thread(target=_serve_stream, args=(tcp,), daemon=True).start()
    threading.Thread(target=_serve_datagram, args=(udp,),
                     daemon=True).start()
    yield tcp.getsockname()[1], udp.getsockname()[1]
    for s in (tcp, udp):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def _other_port(port):
    return port + 1 if port < 65535 else port - 1


# ---- running a script in the sandbox ----

PRELUDE = '''\
import socket, sys, _socket
P = int(sys.argv[1]) if len(sys.argv) > 1 else 0
U = int(sys.argv[2]) if len(sys.argv) > 2 else 0
Q = P + 1 if P < 65535 else P - 1


def t(label, f):
    try:
        r = f()
    except BaseException as e:
        print(f"{label}: {type(e).__name__}: {e}", flush=True)
    else:
        print(f"{label}: OK {r!r}", flush=True)


def tcp(host, port, family=socket.AF_INET, cls=socket.socket):
    s = cls(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
        s.sendall(b"ping")
        return s.recv(4)
    finally:
        s.close()


def udp(host, port, how="sendto"):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    try:
        if how == "sendto":
            s.sendto(b"ping", (host, port))
        elif how == "sendto_flags":
            s.sendto(b"ping", 0, (host, port))
        else:
            s.sendmsg([b"ping"], [], 0, (host, port))
        return s.recvfrom(4)[0]
    finally:
        s.close()


def gai(*a, **kw):
    return [(int(f), int(k), p, c, sa) for f, k, p, c, sa
            in socket.getaddrinfo(*a, **kw)]


'''


def sandbox(run_sb, cwd, python, rules, body, *args, unprivileged=None):
    """Run body (after PRELUDE) under 'rules'; {label: result}."""
    cwd = pathlib.Path(cwd)
    (cwd / ".py-sandboxes").write_text(
        "python-import=*\n" + "".join(r + "\n" for r in rules))
    (cwd / "s.py").write_text(PRELUDE + textwrap.dedent(body))
    r = run_sb([f"--python={python}", "s.py"] + [str(a) for a in args],
               unprivileged=unprivileged)
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        label, sep, rest = line.partition(": ")
        if sep:
            out[label] = rest
    return out


def refused(message):
    return f"{REFUSED}: {message}"


def implicit(ip, port):
    return refused(f"Guard network connection to '[{ip}]:{port}' DENIED "
                   "by implicit default policy.")


def by_rule(ip, port, rule, line):
    return refused(f"Guard network connection to [{ip}]:{port} DENIED by "
                   f"rule '{rule}' from .py-sandboxes({line}).")


def unnamed(host):
    return (f"Guard name resolution of '{host}' DENIED: no net= rule names "
            f"this host. Add net=ALLOW|TCP|{host}|<port>|OUT to resolve and "
            "reach it (an address rule allows addresses, not lookups).")


def passed_guard(result):
    """The guard let it through: whatever happened next, not our refusal."""
    return not result.startswith(REFUSED + ":")


# ---- connect (E1, E3), DENY precedence, CIDR ----

def test_connect_allowed_and_denied(run_sb, tmp_cwd, python, servers):
    p, u = servers
    q = _other_port(p)
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|TCP|127.0.0.1|{p}|OUT"], '''
        t("allowed", lambda: tcp("127.0.0.1", P))
        t("port", lambda: tcp("127.0.0.1", Q))
        t("addr", lambda: tcp("127.0.0.2", P))
        t("helper", lambda: socket.create_connection(("127.0.0.1", Q), 5))
        t("connect_ex", lambda: socket.socket().connect_ex(("127.0.0.1", Q)))
        t("udp", lambda: udp("127.0.0.1", U))
        ''', p, u)
    assert out["allowed"] == "OK b'pong'"
    assert out["port"] == implicit("127.0.0.1", q)
    assert out["addr"] == implicit("127.0.0.2", p)
    assert out["helper"] == implicit("127.0.0.1", q)
    assert out["connect_ex"] == implicit("127.0.0.1", q)
    assert out["udp"] == implicit("127.0.0.1", u)  # a TCP rule only


def test_no_net_rule_denies_everything(run_sb, tmp_cwd, python, servers):
    p, u = servers
    out = sandbox(run_sb, tmp_cwd, python, [], '''
        t("tcp", lambda: tcp("127.0.0.1", P))
        t("udp", lambda: udp("127.0.0.1", U))
        ''', p, u)
    assert out["tcp"] == implicit("127.0.0.1", p)
    assert out["udp"] == implicit("127.0.0.1", u)


def test_deny_wins_over_an_earlier_allow(run_sb, tmp_cwd, python, servers):
    p, _ = servers
    deny = f"net=DENY|TCP|127.0.0.0/30|{p}|OUT"
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|127.0.0.0/8|*|OUT", deny], '''
        t("denied", lambda: tcp("127.0.0.1", P))
        t("outside", lambda: tcp("127.0.0.9", P))
        ''', p)
    assert out["denied"] == by_rule("127.0.0.1", p, deny, 3)
    # allowed by the /8 rule: the guard passes it, nothing listens there
    assert passed_guard(out["outside"]), out["outside"]
    assert out["outside"].startswith("ConnectionRefusedError: ")


def test_cidr_network(run_sb, tmp_cwd, python, servers):
    p, _ = servers
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|TCP|127.0.0.0/30|{p}|OUT"], '''
        t("inside", lambda: tcp("127.0.0.1", P))
        t("inside_unheard", lambda: tcp("127.0.0.3", P))
        t("outside", lambda: tcp("127.0.0.4", P))
        ''', p)
    assert out["inside"] == "OK b'pong'"
    assert passed_guard(out["inside_unheard"]), out["inside_unheard"]
    assert out["outside"] == implicit("127.0.0.4", p)


def test_the_c_socket_class_is_judged_too(run_sb, tmp_cwd, python, servers):
    """E3: _socket.socket does not go through socket.socket's methods; the
    audit events fire in C, so it is judged all the same."""
    p, u = servers
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|TCP|127.0.0.1|{p}|OUT"], '''
        t("allowed", lambda: tcp("127.0.0.1", P, cls=_socket.socket))
        t("denied", lambda: tcp("127.0.0.1", Q, cls=_socket.socket))
        t("udp", lambda: _socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
          .sendto(b"x", ("127.0.0.1", U)))
        t("bind", lambda: _socket.socket().bind(("127.0.0.1", 0)))
        ''', p, u)
    assert out["allowed"] == "OK b'pong'"
    assert out["denied"] == implicit("127.0.0.1", _other_port(p))
    assert out["udp"] == implicit("127.0.0.1", u)
    assert out["bind"] == implicit("127.0.0.1", 0)


# ---- bind, wildcard bind, listen (E10, E11) ----

def test_bind_needs_an_in_rule(run_sb, tmp_cwd, python):
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|127.0.0.1|*|IN",
                   "net=ALLOW|UDP|127.0.0.1|*|OUT"], '''
        def bind_listen():
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen()
            return s.getsockname()[0]
        t("tcp", bind_listen)
        t("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
          .bind(("127.0.0.1", 0)))
        t("other", lambda: socket.socket().bind(("127.0.0.2", 0)))
        ''')
    assert out["tcp"] == "OK '127.0.0.1'"
    assert out["udp"] == implicit("127.0.0.1", 0)  # OUT does not grant IN
    assert out["other"] == implicit("127.0.0.2", 0)


def test_wildcard_bind_is_judged_as_the_wildcard(run_sb, tmp_cwd, python):
    """E11: bind(('', port)) is judged as 0.0.0.0 (:: for IPv6)."""
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|0.0.0.0/32|*|IN"], '''
        t("empty", lambda: socket.socket().bind(("", 0)))
        t("zeros", lambda: socket.socket().bind(("0.0.0.0", 0)))
        t("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
          .bind(("", 0)))
        t("loopback", lambda: socket.socket().bind(("127.0.0.1", 0)))
        ''')
    assert out["empty"] == "OK None"
    assert out["zeros"] == "OK None"
    assert out["udp"] == implicit("0.0.0.0", 0)
    assert out["loopback"] == implicit("127.0.0.1", 0)


@needs_ipv6
def test_ipv6_wildcard_bind(run_sb, tmp_cwd, python):
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|0.0.0.0/32|*|IN"], '''
        t("v6", lambda: socket.socket(socket.AF_INET6).bind(("", 0)))
        ''')
    assert out["v6"] == implicit("::", 0)


def test_listen_without_bind_is_a_wildcard_bind(run_sb, tmp_cwd, python):
    """E10: the kernel binds an unbound socket to the wildcard address."""
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|127.0.0.1|*|IN"], '''
        def bound():
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(5)
            return "listening"
        t("unbound", lambda: socket.socket().listen())
        t("unbound_backlog", lambda: socket.socket().listen(5))
        t("bound", bound)
        ''')
    assert out["unbound"] == implicit("0.0.0.0", 0)
    assert out["unbound_backlog"] == implicit("0.0.0.0", 0)
    assert out["bound"] == "OK 'listening'"


def test_listen_without_bind_allowed_by_a_wildcard_rule(run_sb, tmp_cwd,
                                                        default_python):
    out = sandbox(run_sb, tmp_cwd, default_python,
                  ["net=ALLOW|TCP|*|*|IN"], '''
        def listen():
            s = socket.socket()
            s.listen()
            return s.getsockname()[0]
        t("unbound", listen)
        ''')
    assert out["unbound"] == "OK '0.0.0.0'"


# ---- UDP sendto, sendmsg (E7), TCP Fast Open (E8) ----

def test_udp_sendto(run_sb, tmp_cwd, python, servers):
    _, u = servers
    q = _other_port(u)
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|UDP|127.0.0.1|{u}|OUT"], '''
        t("allowed", lambda: udp("127.0.0.1", U))
        t("flags_form", lambda: udp("127.0.0.1", U, "sendto_flags"))
        t("port", lambda: udp("127.0.0.1", %d))
        t("port_flags", lambda: udp("127.0.0.1", %d, "sendto_flags"))
        t("tcp", lambda: tcp("127.0.0.1", U))
        ''' % (q, q), 0, u)
    assert out["allowed"] == "OK b'pong'"
    assert out["flags_form"] == "OK b'pong'"
    assert out["port"] == implicit("127.0.0.1", q)
    assert out["port_flags"] == implicit("127.0.0.1", q)
    assert out["tcp"] == implicit("127.0.0.1", u)  # a UDP rule only


def test_udp_sendmsg_with_an_address(run_sb, tmp_cwd, python, servers):
    _, u = servers
    q = _other_port(u)
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|UDP|127.0.0.1|{u}|OUT"], '''
        def connected():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(5)
            s.connect(("127.0.0.1", U))
            s.sendmsg([b"ping"])
            return s.recv(4)
        t("allowed", lambda: udp("127.0.0.1", U, "sendmsg"))
        t("denied", lambda: udp("127.0.0.1", %d, "sendmsg"))
        t("no_address", connected)
        ''' % q, 0, u)
    assert out["allowed"] == "OK b'pong'"
    assert out["denied"] == implicit("127.0.0.1", q)
    assert out["no_address"] == "OK b'pong'"


def test_tcp_fast_open_sendto_is_judged_as_a_connect(run_sb, tmp_cwd, python,
                                                     servers):
    p, _ = servers
    q = _other_port(p)
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|TCP|127.0.0.1|{p}|OUT"], '''
        def tfo(port):
            s = socket.socket()
            s.settimeout(5)
            try:
                return s.sendto(b"ping", socket.MSG_FASTOPEN,
                                ("127.0.0.1", port))
            finally:
                s.close()
        t("denied", lambda: tfo(Q))
        t("allowed", lambda: tfo(P))
        ''', p)
    assert out["denied"] == implicit("127.0.0.1", q)
    assert passed_guard(out["allowed"]), out["allowed"]


# ---- socket kinds no rule can name ----

def test_raw_packet_and_netlink_sockets_are_refused(run_sb, tmp_cwd, python):
    out = sandbox(run_sb, tmp_cwd, python, ["net=ALLOW|*|*|*|*"], '''
        t("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                       socket.IPPROTO_ICMP))
        t("raw6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW,
                                        socket.IPPROTO_ICMPV6))
        t("raw_c", lambda: _socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                          socket.IPPROTO_UDP))
        t("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM))
        t("netlink", lambda: socket.socket(socket.AF_NETLINK,
                                           socket.SOCK_DGRAM))
        t("ping", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM,
                                        socket.IPPROTO_ICMP))
        t("tcp", lambda: socket.socket().close())
        ''')
    raw = refused("Guard socket creation DENIED: raw sockets (SOCK_RAW) "
                  "cannot be evaluated by a net= rule.")
    assert out["raw"] == raw
    assert out["raw6"] == raw
    assert out["raw_c"] == raw
    assert out["packet"] == refused(
        "Guard socket creation DENIED: address family AF_PACKET cannot be "
        "evaluated by a net= rule.")
    assert out["netlink"] == refused(
        "Guard socket creation DENIED: address family AF_NETLINK cannot be "
        "evaluated by a net= rule.")
    assert out["ping"] == refused(
        "Guard socket creation DENIED: protocol 1 cannot be evaluated by a "
        "net= rule.")
    assert out["tcp"] == "OK None"


# ---- IPv4 hidden in IPv6 (E9) ----

IPV4_IN_IPV6 = ["::ffff:127.0.0.1", "::ffff:0:127.0.0.1", "::127.0.0.1",
                "64:ff9b::127.0.0.1"]


@needs_ipv6
def test_ipv4_in_ipv6_forms_are_judged_by_the_ipv4_rules(run_sb, tmp_cwd,
                                                         python, servers):
    p, _ = servers
    deny = "net=DENY|TCP|127.0.0.1|*|OUT"
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|*|*|OUT", deny], '''
        for i, a in enumerate(%r):
            t(f"form{i}", lambda: tcp(a, P, socket.AF_INET6))
        ''' % (IPV4_IN_IPV6,), p)
    for i, form in enumerate(IPV4_IN_IPV6):
        shown = socket.inet_ntop(socket.AF_INET6,
                                 socket.inet_pton(socket.AF_INET6, form))
        assert out[f"form{i}"] == by_rule(shown, p, deny, 3), form


@needs_ipv6
def test_ipv6_loopback_is_not_judged_as_ipv4(run_sb, tmp_cwd, python,
                                             servers):
    p, _ = servers
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=DENY|TCP|0.0.0.0/0|*|OUT",
                   "net=ALLOW|TCP|::1|*|OUT"], '''
        t("loopback", lambda: tcp("::1", P, socket.AF_INET6))
        t("v4", lambda: tcp("127.0.0.1", P))
        ''', p)
    assert passed_guard(out["loopback"]), out["loopback"]
    assert out["v4"] == by_rule("127.0.0.1", p, "net=DENY|TCP|0.0.0.0/0|*|OUT",
                                2)


# ---- resolution: pinning (E13, E14), unlisted names (E15), E23 ----

def _hosts_addresses(name, path="/etc/hosts"):
    """What the launcher pins for 'name' (src/kernel/dns.c): every address the
    hosts file gives it, in file order, else the loopback fallback."""
    found = []
    try:
        lines = pathlib.Path(path).read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        if any(n.lower().rstrip(".") == name.lower().rstrip(".")
               for n in fields[1:]):
            for fam in (socket.AF_INET, socket.AF_INET6):
                try:
                    socket.inet_pton(fam, fields[0])
                except OSError:
                    continue
                if fields[0] not in found:
                    found.append(fields[0])
                break
    if not found and name == "localhost":
        found = ["127.0.0.1"]
    return found


def _hosts_file_name():
    """A name of /etc/hosts that is not a loopback name the guard knows
    anyway, and whose addresses are all IPv4 loopback."""
    try:
        lines = pathlib.Path("/etc/hosts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            if name.lower() in ("localhost", "ip6-localhost", "ip6-loopback",
                                "localhost.localdomain") or "." in name:
                continue
            addrs = _hosts_addresses(name)
            if addrs and all(a.startswith("127.") for a in addrs):
                return name
    return None


def test_a_pinned_name_is_answered_from_the_pin(run_sb, tmp_cwd, python,
                                                servers):
    p, _ = servers
    q = _other_port(p)
    pinned = _hosts_addresses("localhost")
    assert "127.0.0.1" in pinned
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|TCP|localhost|{p}|OUT"], '''
        A, S = socket.AF_INET, socket.SOCK_STREAM
        t("gai", lambda: gai("localhost", P, A, S))
        t("gai_kw", lambda: _socket.getaddrinfo(host="LocalHost.", port=P,
                                                family=A, type=S))
        t("service", lambda: gai("localhost", "https", A, S))
        t("service_nameinfo", lambda: socket.getnameinfo(
            ("127.0.0.1", 443), socket.NI_NUMERICHOST))
        t("canon", lambda: gai("localhost", P, A, S, 0,
                               socket.AI_CANONNAME))
        t("byname", lambda: socket.gethostbyname("localhost"))
        t("byname_ex", lambda: socket.gethostbyname_ex("localhost"))
        t("twin", lambda: socket.gethostbyname is _socket.gethostbyname)
        t("connect", lambda: tcp("localhost", P))
        t("helper", lambda: socket.create_connection(("localhost", P), 5)
          .close())
        t("denied", lambda: tcp("localhost", Q))
        ''', p)
    assert out["gai"] == f"OK [(2, 1, 6, '', ('127.0.0.1', {p}))]"
    assert out["gai_kw"] == out["gai"]  # the C twin returns plain ints
    # a service name is looked up in /etc/services, which these rules
    # do not expose (E40)
    for label in ("service", "service_nameinfo"):
        assert out[label] == ("RuleFileNotFoundError: Access to "
                              "'/etc/services' must be accepted by a rule.")
    assert out["canon"] == f"OK [(2, 1, 6, 'localhost', ('127.0.0.1', {p}))]"
    assert out["byname"] == "OK '127.0.0.1'"
    assert out["byname_ex"] == "OK ('localhost', [], ['127.0.0.1'])"
    assert out["twin"] == "OK True"
    assert out["connect"] == "OK b'pong'"
    assert out["helper"] == "OK None"
    ips = ", ".join(pinned)
    assert out["denied"] == refused(
        f"Guard network connection to \"'[localhost]:{q}' ({ips}:{q}) \" "
        "DENIED by implicit default policy.")


def test_a_hosts_file_name_is_pinned(run_sb, tmp_cwd, default_python,
                                     servers):
    name = _hosts_file_name()
    if name is None:
        pytest.skip("/etc/hosts has no extra loopback name to pin")
    p, _ = servers
    q = _other_port(p)
    addrs = _hosts_addresses(name)
    out = sandbox(run_sb, tmp_cwd, default_python,
                  [f"net=ALLOW|TCP|{name}|{p}|OUT",
                   "expose-ro=/etc/services"], f'''
        t("gai", lambda: gai({name!r}, "https", socket.AF_INET,
                             socket.SOCK_STREAM))
        t("v6", lambda: gai({name!r}, P, socket.AF_INET6))
        t("connect", lambda: tcp({name!r}, P))
        t("denied", lambda: tcp({name!r}, Q))
        ''', p)
    expect = ", ".join(f"(2, 1, 6, '', ('{a}', 443))" for a in addrs)
    assert out["gai"] == f"OK [{expect}]"
    assert out["v6"] == ("gaierror: [Errno -3] Temporary failure in name "
                         "resolution")
    assert out["connect"] == "OK b'pong'"
    ips = ", ".join(addrs)
    assert out["denied"] == refused(
        f"Guard network connection to \"'[{name}]:{q}' ({ips}:{q}) \" "
        "DENIED by implicit default policy.")


SECRET = "secret-data.attacker.invalid"


def test_a_name_no_rule_can_allow_is_refused_before_any_query(
        run_sb, tmp_cwd, python, servers):
    """E15: only a pinned name is allowed, so no lookup of another name
    could lead anywhere: it is refused before the resolver is asked."""
    p, _ = servers
    out = sandbox(run_sb, tmp_cwd, python,
                  [f"net=ALLOW|TCP|localhost|{p}|OUT"], f'''
        N = {SECRET!r}
        t("gai", lambda: socket.getaddrinfo(N, 80))
        t("gai_c", lambda: _socket.getaddrinfo(N, 80))
        t("byname", lambda: socket.gethostbyname(N))
        t("byname_ex", lambda: socket.gethostbyname_ex(N))
        t("bytes", lambda: socket.getaddrinfo(N.encode(), 80))
        t("helper", lambda: socket.create_connection((N, 80), 5))
        t("connect", lambda: socket.socket().connect((N, 80)))
        t("sendto", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
          .sendto(b"x", (N, 53)))
        ''', p)
    resolution = refused(unnamed(SECRET))
    for label in ("gai", "gai_c", "byname", "byname_ex", "bytes", "helper"):
        assert out[label] == resolution, label
    assert out["connect"] == refused(
        f"Guard network connection to '[{SECRET}]:80' DENIED: the name "
        f"'{SECRET}' is not pinned by a net= rule.")
    assert out["sendto"] == refused(
        f"Guard network connection to '[{SECRET}]:53' DENIED: the name "
        f"'{SECRET}' is not pinned by a net= rule.")


def test_an_unpinned_name_resolves_only_under_a_star_rule(
        run_sb, tmp_cwd, default_python):
    """Weakness 15 (fixed): '*' names every host, so any name may be
    resolved; an address or a network, 0.0.0.0/0 included, names none."""
    out = sandbox(run_sb, tmp_cwd, default_python,
                  ["net=ALLOW|TCP|*|443|OUT"], f'''
        t("gai", lambda: socket.getaddrinfo({SECRET!r}, 443))
        ''')
    # the resolver was asked: .invalid never resolves
    assert out["gai"].startswith("gaierror: "), out["gai"]
    for rules in (["net=ALLOW|TCP|0.0.0.0/0|443|OUT",
                   "net=ALLOW|TCP|::/0|443|OUT"],
                  ["net=ALLOW|TCP|127.0.0.1|8080|OUT"],
                  ["net=ALLOW|TCP|*|8080|IN"]):
        out = sandbox(run_sb, tmp_cwd, default_python, rules, f'''
            t("gai", lambda: socket.getaddrinfo({SECRET!r}, 443))
            t("byname", lambda: socket.gethostbyname({SECRET!r}))
            t("byname_ex", lambda: socket.gethostbyname_ex({SECRET!r}))
            t("gai_c", lambda: _socket.getaddrinfo({SECRET!r}, 443))
            ''')
        for label in ("gai", "byname", "byname_ex", "gai_c"):
            assert out[label] == refused(unnamed(SECRET)), (rules, label)


def test_loopback_names_and_addresses_still_resolve(run_sb, tmp_cwd, python):
    """E15/E23: with no net= rule, literals and the loopback names still
    resolve (without a query), whatever the hosts file says."""
    out = sandbox(run_sb, tmp_cwd, python, [], '''
        A, A6, S = socket.AF_INET, socket.AF_INET6, socket.SOCK_STREAM
        t("localhost", lambda: gai("localhost", 80, A, S))
        t("ip6", lambda: gai("ip6-localhost", 80, A6, S))
        t("ip6_loopback", lambda: gai("ip6-loopback", 80, 0, S))
        t("literal", lambda: gai("127.0.0.1", 80, A, S))
        t("passive", lambda: gai(None, 80, A, S, 0, socket.AI_PASSIVE))
        t("byname", lambda: socket.gethostbyname("localhost"))
        t("byname6", lambda: socket.gethostbyname("ip6-localhost"))
        t("other", lambda: socket.getaddrinfo("example.com", 80))
        ''')
    assert out["localhost"] == "OK [(2, 1, 6, '', ('127.0.0.1', 80))]"
    assert out["ip6"] == "OK [(10, 1, 6, '', ('::1', 80, 0, 0))]"
    assert out["ip6_loopback"] == "OK [(10, 1, 6, '', ('::1', 80, 0, 0))]"
    assert out["literal"] == "OK [(2, 1, 6, '', ('127.0.0.1', 80))]"
    assert out["passive"] == "OK [(2, 1, 6, '', ('0.0.0.0', 80))]"
    assert out["byname"] == "OK '127.0.0.1'"
    assert out["byname6"] == ("gaierror: [Errno -3] Temporary failure in "
                              "name resolution")
    assert out["other"] == refused(unnamed("example.com"))


def test_reverse_lookups_need_a_named_address(run_sb, tmp_cwd, python):
    """E5 and weakness 15: a reverse query carries the address out, so it
    is asked only for an address a rule names, not one a network allows."""
    out = sandbox(run_sb, tmp_cwd, python,
                  ["net=ALLOW|TCP|127.0.0.2|80|OUT",
                   "net=ALLOW|TCP|192.0.2.0/24|80|OUT"], '''
        t("byaddr", lambda: socket.gethostbyaddr("192.0.2.1"))
        t("nameinfo", lambda: socket.getnameinfo(("192.0.2.1", 80), 0))
        t("nameinfo_req", lambda: socket.getnameinfo(("192.0.2.1", 80),
                                                     socket.NI_NAMEREQD))
        t("byaddr_c", lambda: _socket.gethostbyaddr("192.0.2.1"))
        t("fqdn", lambda: socket.getfqdn("192.0.2.1"))
        t("allowed", lambda: socket.gethostbyaddr("127.0.0.2"))
        t("loopback", lambda: socket.gethostbyaddr("127.0.0.1"))
        t("numeric", lambda: socket.getnameinfo(
            ("192.0.2.1", 80), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV))
        t("numeric_c", lambda: _socket.getnameinfo(
            ("192.0.2.1", 80), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV))
        ''')
    msg = refused("Guard reverse lookup of '192.0.2.1' DENIED: no net= rule "
                  "names this address. Name its host in a net= rule "
                  "(net=ALLOW|TCP|<host>|<port>|OUT), or ask with "
                  "NI_NUMERICHOST.")
    for label in ("byaddr", "nameinfo", "nameinfo_req", "byaddr_c"):
        assert out[label] == msg, label
    assert out["fqdn"] == "OK '192.0.2.1'"  # getfqdn swallows OSError
    assert passed_guard(out["allowed"]), out["allowed"]
    assert passed_guard(out["loopback"]), out["loopback"]
    assert out["numeric"] == "OK ('192.0.2.1', '80')"
    assert out["numeric_c"] == "OK ('192.0.2.1', '80')"


# ---- AF_UNIX (5.2, E12) ----

@pytest.fixture
def unix_server(tmp_cwd):
    """A pong server on ./rw/srv.sock of the test directory."""
    (tmp_cwd / "rw").mkdir()
    (tmp_cwd / "ro").mkdir()
    path = str(tmp_cwd / "rw" / "srv.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(8)
    threading.Thread(target=_serve_stream, args=(srv,), daemon=True).start()
    yield path
    try:
        srv.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    srv.close()


def test_unix_socket_paths_follow_the_file_rules(run_sb, tmp_cwd, python,
                                                 unix_server):
    outside = tempfile.mkdtemp(prefix="pysb-e2e-out-")
    try:
        out = sandbox(run_sb, tmp_cwd, python,
                      ["expose-rw=./rw", "expose-ro=./ro"], f'''
            def talk(path):
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(5)
                try:
                    s.connect(path)
                    s.sendall(b"ping")
                    return s.recv(4)
                finally:
                    s.close()
            t("exposed_rw", lambda: talk("rw/srv.sock"))
            t("bytes", lambda: talk(b"rw/srv.sock"))
            t("bind_rw", lambda: socket.socket(socket.AF_UNIX)
              .bind("rw/mine.sock"))
            t("read_only", lambda: talk("ro/x.sock"))
            t("bind_ro", lambda: socket.socket(socket.AF_UNIX)
              .bind("ro/mine.sock"))
            t("outside", lambda: talk({outside + "/x.sock"!r}))
            t("dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
              .sendto(b"x", {outside + "/x.sock"!r}))
            ''')
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    assert out["exposed_rw"] == "OK b'pong'"
    assert out["bytes"] == "OK b'pong'"
    assert out["bind_rw"] == "OK None"
    assert out["read_only"] == refused(
        "Guard connect to AF_UNIX socket 'ro/x.sock' DENIED: it is exposed "
        "read-only; a socket needs expose-rw=.")
    assert out["bind_ro"] == refused(
        "Guard bind to AF_UNIX socket 'ro/mine.sock' DENIED: it is exposed "
        "read-only; a socket needs expose-rw=.")
    assert out["outside"] == refused(
        f"Guard connect to AF_UNIX socket '{outside}/x.sock' DENIED: no "
        "expose-ro=/expose-rw= rule covers this path.")
    assert out["dgram"] == refused(
        f"Guard sendto to AF_UNIX socket '{outside}/x.sock' DENIED: no "
        "expose-ro=/expose-rw= rule covers this path.")


def test_abstract_unix_addresses_are_refused_not_crashed(run_sb, tmp_cwd,
                                                         python):
    """Short of a policy that allows the whole network (every field of an
    ALLOW rule '*'; test_kernel's whole_network case), no rule names an
    abstract address."""
    out = sandbox(run_sb, tmp_cwd, python, ["net=ALLOW|TCP,UDP|*|*|OUT"], '''
        U = socket.AF_UNIX
        t("connect", lambda: socket.socket(U).connect("\\0pysb-test"))
        t("sendto", lambda: socket.socket(U, socket.SOCK_DGRAM)
          .sendto(b"x", b"\\0pysb-test"))
        t("autobind", lambda: socket.socket(U).bind(""))
        t("c_class", lambda: _socket.socket(U).connect("\\0pysb-test"))
        ''')
    why = "DENIED: abstract AF_UNIX addresses cannot be evaluated by a rule."
    abstract = f"'\\x00pysb-test' {why}"
    assert out["connect"] == refused(f"Guard connect to {abstract}")
    assert out["sendto"] == refused(f"Guard sendto to b'\\x00pysb-test' {why}")
    assert out["autobind"] == refused(f"Guard bind to '' {why}")
    assert out["c_class"] == refused(f"Guard connect to {abstract}")


# ---- as an unprivileged user ----

@pytest.mark.unprivileged
def test_connect_rules_as_an_unprivileged_user(run_sb, tmp_cwd, servers):
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        pytest.skip(f"{DEBIAN_PYTHON} is absent: no interpreter uid 65534 "
                    "can run")
    p, _ = servers
    out = sandbox(run_sb, tmp_cwd, DEBIAN_PYTHON,
                  [f"net=ALLOW|TCP|127.0.0.1|{p}|OUT"], '''
        t("allowed", lambda: tcp("127.0.0.1", P))
        t("denied", lambda: tcp("127.0.0.1", Q))
        ''', p)
    assert out["allowed"] == "OK b'pong'"
    assert out["denied"] == implicit("127.0.0.1", _other_port(p))


@pytest.mark.parametrize("who", [
    "root", pytest.param("nobody", marks=pytest.mark.unprivileged)])
def test_learning_says_what_no_rule_can_grant(run_sb, tmp_cwd, who):
    """A learning run let a socket option or a control message no net=
    rule evaluates through, and said nothing: the enforcing run then
    refused it with no rule to add. Learning says so on stderr now, once
    each (weakness to document: only a policy that allows the whole
    network lets them through)."""
    (tmp_cwd / "p.py").write_text(textwrap.dedent("""\
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for group in ('239.83.69.67', '239.83.69.68'):
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                         socket.inet_aton(group) + bytes(4))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 5)  # evaluated
        try:
            s.sendmsg([b'x'], [(socket.IPPROTO_IP, 8, bytes(12))], 0,
                      ('127.0.0.1', 9))
        except OSError:
            pass
        print('done')
        """))
    env = dict(os.environ, OS_SANDBOX="subprocess")
    r = run_sb(["p.py"], env=env)
    assert (r.returncode, r.stdout) == (0, "done\n"), r.stderr
    told = [line for line in r.stderr.splitlines()
            if line.startswith("python-sb: warning: learning cannot grant")]
    tail = (": no net= rule evaluates it, and an enforcing run refuses it "
            "unless the policy allows the whole network.")
    assert told == [
        "python-sb: warning: learning cannot grant setsockopt(0, 35)" + tail,
        "python-sb: warning: learning cannot grant sendmsg control (0, 8)"
        + tail], r.stderr


# ---- a host service's shared port (SO_REUSEPORT) ----

SHARE_PORT = """\
import socket, sys, time
port, kind, opt = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET,
                  socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, getattr(socket, opt), 1)
try:
    s.bind(("127.0.0.1", port))
    if kind == "tcp":
        s.listen(16)
    print("bound", flush=True)
except OSError as e:
    print("refused", type(e).__name__, flush=True)
# the program's own sockets may still share a port between them
a, b = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in "ab")
for x in (a, b):
    x.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    x.bind(("127.0.0.1", port + 1))
print("own shared", flush=True)
time.sleep(float(sys.argv[4]))
"""


@pytest.mark.parametrize("kind,opt,host_addr", [
    ("tcp", "SO_REUSEPORT", "127.0.0.1"), ("tcp", "SO_REUSEPORT", "0.0.0.0"),
    ("udp", "SO_REUSEPORT", "127.0.0.1"), ("udp", "SO_REUSEADDR", "0.0.0.0")])
@pytest.mark.parametrize("provider,layer", [("landlock", "false"),
                                            ("subprocess", "true")])
def test_an_in_rule_does_not_share_a_host_services_port(
        tmp_cwd, provider, layer, kind, opt, host_addr):
    """An IN rule for port P let the program bind P with SO_REUSEPORT (or,
    for UDP, SO_REUSEADDR) beside a host service of the same user that
    shares it: the kernel handed the program part of the service's
    connections and datagrams, or all of them when the service listened
    on the wildcard (found by a probe). The bind is refused as if the
    service did not share its port; every client still reaches the
    service, counted from outside."""
    typ = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
    host = socket.socket(socket.AF_INET, typ)
    host.setsockopt(socket.SOL_SOCKET, getattr(socket, opt), 1)
    host.bind((host_addr, 0))
    port = host.getsockname()[1]
    if kind == "tcp":
        host.listen(64)
    (tmp_cwd / "share.py").write_text(SHARE_PORT)
    (tmp_cwd / ".py-sandboxes").write_text(
        f"os-sandbox={provider}\npy-sandbox={layer}\npython-import=*\n"
        f"net=ALLOW|TCP,UDP|127.0.0.1|{port}|IN\n"
        f"net=ALLOW|UDP|127.0.0.1|{port + 1}|IN\n")
    proc = subprocess.Popen(
        [sb_path(), "--python=/usr/bin/python3", "share.py", str(port), kind,
         opt, str(scaled(3))],
        cwd=tmp_cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, stdin=subprocess.DEVNULL)
    try:
        first = proc.stdout.readline()
        own = proc.stdout.readline()
        assert first.startswith("refused"), (first, proc.stderr.read())
        assert own == "own shared\n"
        got = 0
        host.settimeout(scaled(10))
        for i in range(8):
            if kind == "tcp":
                c = socket.create_connection(("127.0.0.1", port))
                conn, _ = host.accept()
                conn.close()
                c.close()
            else:
                c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                c.sendto(b"%d" % i, ("127.0.0.1", port))
                host.recvfrom(16)
                c.close()
            got += 1
        assert got == 8
    finally:
        proc.kill()
        proc.wait()
        host.close()
