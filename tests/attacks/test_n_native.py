"""Group N: native-code escapes with the Python layer off
(py-sandbox=false), so that only the kernel stands. The interpreter
replaces itself with build/try-syscall (tests/helpers/try-syscall.c),
which makes one system call and prints "ok" or "errno NAME": hostile
native code as a C extension or ctypes would run it. Its parent is this
test process, outside the sandbox: the parent whose memory, environment
and signals must be out of reach.

Under landlock (Landlock + seccomp) the kernel must refuse each with the
errno the test names. Under subprocess there is no kernel layer by
design: py-sandbox=false there is no sandbox at all (weaknesses.md 1 and
18), so those columns are documented escapes as root, and skipped as uid
65534 (where plain permissions, not the sandbox, refuse some of them)."""

import os
import socket
import threading

import pytest

from harness import ABI, attack, documented_escape, qemu_column
from pysbtest import reached_from_outside

NO_KERNEL = ("weaknesses.md 1 and 18: os-sandbox=subprocess has no kernel "
             "layer, and py-sandbox=false runs the program with no guard")

needs_abi6 = pytest.mark.skipif(
    ABI < 6, reason=f"scoping needs Landlock ABI 6, this kernel has {ABI}")


def native_escape(extra=()):
    return documented_escape(["subprocess", *extra], NO_KERNEL)




@pytest.fixture
def tree(case):
    if case.os_sandbox == "subprocess" and case.nobody:
        pytest.skip("no kernel layer under subprocess; as uid 65534 plain "
                    "permissions refuse some calls, which says nothing of "
                    "the sandbox")
    case.mkdir("ro", "rw", "secret")
    case.write("ro/data.txt", "public\n")
    case.write("secret/key.txt", "s3cret\n")
    case.rules = (f"py-sandbox=false\nexpose-ro={case.root}/ro\n"
                  f"expose-rw={case.root}/rw\n")
    return case


def attempt(tree, *args, rules=""):
    return tree.native(tree.rules + rules, list(args))


@native_escape()
@qemu_column()
@attack("N1", "native: read a file no rule exposes")
def test_N1(tree, judge):
    assert attempt(tree, "read", tree.path("ro/data.txt")) == "ok"
    judge.native(attempt(tree, "read", tree.path("secret/key.txt")),
                 "EACCES")


@native_escape()
@qemu_column()
@attack("N2", "native: create a file in a read-only tree")
def test_N2(tree, judge):
    judge.native(attempt(tree, "open-write", tree.path("ro/new.txt")),
                 "EACCES")
    assert not os.path.exists(tree.path("ro/new.txt"))


@native_escape()
@qemu_column()
@attack("N3", "native: execute /bin/sh")
def test_N3(tree, judge):
    judge.native(attempt(tree, "exec", "/bin/sh", "-c", "true"), "EACCES")


@native_escape()
@attack("N4", "native: the parent's /proc/<ppid>/environ (D21)")
def test_N4(tree, judge):
    judge.native(attempt(tree, "read", "/proc/{ppid}/environ"), "EACCES")


@native_escape()
@attack("N5", "native: write /proc/self/mem (D22)")
def test_N5(tree, judge):
    judge.native(attempt(tree, "write-proc-mem"), "EACCES")


@native_escape()
@attack("N6", "native: ptrace the parent")
def test_N6(tree, judge):
    judge.native(attempt(tree, "ptrace-parent"), "EPERM")


@needs_abi6
@native_escape()
@attack("N7", "native: signal the parent (kill)")
def test_N7(tree, judge):
    judge.native(attempt(tree, "kill-parent"), "EPERM")


@attack("N8", "native: load a kernel module (init_module)")
def test_N8(tree, judge):
    if tree.os_sandbox == "subprocess":
        pytest.skip("without a filter root's init_module fails on the "
                    "helper's empty image: no escape to show")
    judge.native(attempt(tree, "init-module"), "EPERM")


@native_escape()
@attack("N9", "native: a new user namespace (unshare)")
def test_N9(tree, judge):
    judge.native(attempt(tree, "unshare-user"), "EPERM")


@native_escape()
@qemu_column()
@attack("N10", "native: a raw socket")
def test_N10(tree, judge):
    judge.native(attempt(tree, "socket-raw", rules="net=ALLOW|*|*|*|*\n"),
                 "EPERM")


@native_escape()
@qemu_column()
@attack("N11", "native: a netlink socket")
def test_N11(tree, judge):
    judge.native(attempt(tree, "socket-netlink",
                         rules="net=ALLOW|*|*|*|*\n"), "EPERM")


@native_escape()
@attack("N12", "native: TCP connect to a port no rule allows")
def test_N12(tree, judge, tcp_port):
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(4)
    try:
        rule = f"net=ALLOW|TCP|127.0.0.1|{tcp_port}|OUT\n"
        assert attempt(tree, "connect-tcp", "127.0.0.1", str(tcp_port),
                       rules=rule) == "ok"
        judge.native(attempt(tree, "connect-tcp", "127.0.0.1",
                             str(other.getsockname()[1]), rules=rule),
                     "EACCES")
    finally:
        other.close()


@native_escape()
@qemu_column()
@attack("N13", "native: any inet socket without a net= rule")
def test_N13(tree, judge, tcp_port):
    judge.native(attempt(tree, "connect-tcp", "127.0.0.1", str(tcp_port)),
                 "EPERM")


@needs_abi6
@native_escape()
@attack("N14", "native: an abstract Unix socket outside (E12)")
def test_N14(tree, judge):
    name = f"pysb-attack-{os.getpid()}-{threading.get_ident()}"
    s = socket.socket(socket.AF_UNIX)
    s.bind("\0" + name)
    s.listen(4)
    try:
        judge.native(attempt(tree, "connect-abstract", name), "EPERM")
    finally:
        s.close()


@native_escape()
@qemu_column()
@attack("N15", "native: UDP to a port no rule allows")
def test_N15(tree, judge, tcp_port):
    rule = f"net=ALLOW|TCP|127.0.0.1|{tcp_port}|OUT\n"
    judge.native(attempt(tree, "sendto-udp", "127.0.0.1",
                         str(tcp_port + 1), rules=rule), "EACCES")


@native_escape()
@qemu_column()
@attack("N16", "native: TCP to an address no rule allows (allowed port)")
def test_N16(tree, judge):
    srv = socket.socket()
    srv.bind(("0.0.0.0", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    try:
        judge.native(attempt(tree, "connect-tcp", "127.0.0.2", str(port),
                             rules=f"net=ALLOW|TCP|127.0.0.1|{port}|OUT\n"),
                     "EACCES")
    finally:
        srv.close()


@native_escape()
@qemu_column()
@attack("N17", "native: a DNS query over UDP to exfiltrate (E15)")
def test_N17(tree, judge):
    judge.native(attempt(tree, "sendto-udp", "127.0.0.1", "53",
                         rules="net=ALLOW|TCP|127.0.0.1|80|OUT\n"), "EACCES")


@native_escape()
@attack("N18", "native: a host Unix socket like docker.sock (D26)")
def test_N18(tree, judge):
    path = f"/tmp/pysb-attack-{os.getpid()}.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen(4)
    try:
        judge.native(attempt(tree, "connect-unix", path), "EACCES")
    finally:
        s.close()
        os.unlink(path)


@native_escape()
@attack("N19", "native: a service offered under an abstract Unix name (E12)")
def test_N19(tree, judge):
    """Bound inside, an abstract name lives in the network namespace the
    sandbox shares (the host's, under landlock): host clients that trust
    the name would talk to the sandbox. Evidence from outside: this
    process connects while the helper listens."""
    name = f"pysb-attack-offer-{os.getpid()}-{threading.get_ident()}"
    answer, connected = reached_from_outside(
        lambda: attempt(tree, "bind-abstract", name, "10"), name)
    # the helper's last line: "accepted" when the bind went through and
    # this process got in, which is an escape as "ok" is
    judge.native("ok" if answer == "accepted" else answer, "EPERM")
    assert not connected, "escaped: reached from outside"
