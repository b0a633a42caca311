"""Group NS: the host's loopback services against the namespace network of
os-sandbox=unshare and bwrap (issue 17, src/kernel/netns.c). A rule for
every IPv4 address (0.0.0.0/0) does not name the host's loopback there:
the program's 127.0.0.1 is its own namespace's, and pasta forwards only
the host loopback ports a rule names. Under os-sandbox=qemu the guest's
127.0.0.1 is its own kernel's, and passt (--no-map-gw) never reaches the
host's loopback. Judged from outside too: the host listener must see no
connection.

Under landlock and subprocess the program shares the host's network, and
a rule for 0.0.0.0/0 names 127.0.0.1 like any address: reaching the
listener there is what the rules say, not an attack (skipped). firejail
run as a user keeps the host's network with net= rules (weaknesses.md
95): a documented escape; run as root it gets the namespace network."""

import pytest

from harness import attack, documented_escape, qemu_column
from pysbtest import Listener

HOST_NET = ("weaknesses.md 95: os-sandbox=firejail run as a user keeps "
            "the host's network with net= rules, so a rule for 0.0.0.0/0 "
            "reaches the host's loopback services")
EVERY_V4 = "net=ALLOW|TCP|0.0.0.0/0|*|OUT\n"


@pytest.fixture
def host_service(case):
    if case.os_sandbox in ("landlock", "subprocess"):
        pytest.skip("the host's network by design: a rule for 0.0.0.0/0 "
                    "names the host's loopback there")
    r = Listener()
    yield r
    r.close()


@documented_escape(["firejail/nobody"], HOST_NET)
@qemu_column()
@attack("NS1", "native: a host loopback service past a rule for every "
        "IPv4 address")
def test_NS1(case, judge, host_service):
    answer = case.native(f"py-sandbox=false\n{EVERY_V4}",
                         ["connect-tcp", "127.0.0.1",
                          str(host_service.port)])
    judge.native(answer, "ECONNREFUSED")
    assert host_service.got == []


@documented_escape(["firejail/nobody"], HOST_NET)
@qemu_column()
@attack("NS2", "python: a host loopback service past a rule for every "
        "IPv4 address (the guard allows it)")
def test_NS2(case, judge, host_service):
    out = case.run(f"python-import=*\n{EVERY_V4}", {
        "connect": "import socket, sys\n"
                   "socket.create_connection(('127.0.0.1', "
                   "int(sys.argv[1])), 5)",
    }, args=[host_service.port])
    judge.kernel(out["connect"], "ECONNREFUSED")
    assert host_service.got == []
