"""Learning sees native code too (issue 5 item 5): in a learning run a
seccomp filter shows python-sb what the whole process tree opens, execs
and connects to, so that a policy learned from a program doing I/O in C (a
spawned binary here: tests/helpers/try-syscall) works under
os-sandbox=landlock with py-sandbox=true, unchanged.

Each case learns (no rule file), then enforces the learned file with
OS_SANDBOX=landlock (the template says os-sandbox=${OS_SANDBOX:-auto}), and
shows that the kernel does refuse what was not learned, so that a case
cannot pass because nothing is enforced.
"""
import os
import re
import shutil
import signal
import socket
import tempfile
import textwrap

import pytest

from conftest import REPO, landlock_abi, pyenv_minor, sb_path
from pysbtest import serve_until_closed, stop_serving

PY311 = pyenv_minor("3.11")


pytestmark = pytest.mark.skipif(
    landlock_abi() < 4, reason="this kernel's Landlock ABI is below 4 [core]")


@pytest.fixture
def py():
    if not os.path.exists(PY311):
        pytest.skip("pyenv has no CPython 3.11 [core]")
    return PY311


@pytest.fixture
def helper(outside):
    """build/try-syscall, copied next to the files the tests read: a
    checkout under /tmp (as CI's is) would be a temp tree, which the writer
    grants as a directory rule, not the single-file rule asserted here."""
    for cand in (sb_path().parent / "try-syscall",
                 REPO / "build" / "try-syscall"):
        if cand.is_file():
            copy = os.path.join(outside, "try-syscall")
            shutil.copy2(cand, copy)
            return copy
    pytest.fail("build/try-syscall is not built: run make first",
                pytrace=False)


@pytest.fixture
def outside():
    """A directory outside the working directory, the home directory and
    /tmp: the writer gives single-file rules there (least privilege)."""
    path = os.path.realpath(tempfile.mkdtemp(prefix="pysb-native-",
                                             dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def enforce_env():
    return dict(os.environ, OS_SANDBOX="landlock")


def active(rules):
    return [ln for ln in rules.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def learn(run_sb, tmp_cwd, py, code, env=None):
    (tmp_cwd / "app.py").write_text(textwrap.dedent(code))
    first = run_sb([f"--python={py}", "app.py"], env=env)
    assert "Write all learning rules in '.py-sandboxes'." in first.stderr, \
        first.stderr
    return first, (tmp_cwd / ".py-sandboxes").read_text()


def test_c_file_io_round_trips_under_landlock(run_sb, tmp_cwd, py, helper,
                                              outside):
    src = os.path.join(outside, "in.txt")
    dst = os.path.join(outside, "out.txt")
    other = os.path.join(outside, "other.txt")
    for p in (src, other):
        with open(p, "w") as f:
            f.write("data\n")
    code = f"""\
        import subprocess, sys
        for act, path in (("open-read", {src!r}), ("open-write", {dst!r})):
            r = subprocess.run([{helper!r}, act, path],
                               capture_output=True, text=True)
            print(r.stdout.strip())
        """
    first, rules = learn(run_sb, tmp_cwd, py, code)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "ok\nok\n"
    lines = active(rules)
    # what C read, wrote and ran, each as a single-file rule
    assert f"expose-ro={src}" in lines, rules
    assert f"expose-rw={dst}" in lines, rules
    assert f"expose-ro={helper}" in lines, rules
    assert "os-sandbox=${OS_SANDBOX:-auto}" in lines
    assert "py-sandbox=true" in lines
    # never /proc, /dev, /sys, nor what landlock grants implicitly
    for ln in lines:
        assert not re.search(r"=(/proc|/dev|/sys|/usr/lib|/lib)(/|$)", ln), ln
        assert ".pyenv" not in ln and "libpysb-guard" not in ln, ln
    assert "expose-ro=." not in lines  # importlib's listing of the cwd

    second = run_sb([f"--python={py}", "app.py"], env=enforce_env())
    assert second.returncode == 0, (rules, second.stderr)
    assert second.stdout == "ok\nok\n", (rules, second.stderr)

    # the kernel does enforce: a file next to the learned one is refused
    (tmp_cwd / "app.py").write_text(
        textwrap.dedent(code).replace("in.txt", "other.txt"))
    third = run_sb([f"--python={py}", "app.py"], env=enforce_env())
    assert third.stdout == "errno EACCES\nok\n", third.stderr
    # and without the rule for the binary it cannot even run
    (tmp_cwd / ".py-sandboxes").write_text(
        rules.replace(f"expose-ro={helper}\n", ""))
    (tmp_cwd / "app.py").write_text(textwrap.dedent(code))
    fourth = run_sb([f"--python={py}", "app.py"], env=enforce_env())
    assert fourth.stdout != "ok\nok\n", fourth.stderr


class Server:
    """A TCP listener and a UDP socket on loopback, for the helper."""

    def __init__(self):
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.tcp_port = self.tcp.getsockname()[1]
        self.udp_port = self.udp.getsockname()[1]
        self.sock = self.tcp
        self.thread = serve_until_closed(self, self.accept)

    def accept(self):
        c, _ = self.tcp.accept()
        c.close()

    def close(self):
        stop_serving(self)
        self.udp.close()


def test_a_native_connect_is_learned_as_a_net_rule(run_sb, tmp_cwd, py,
                                                   helper):
    srv = Server()
    try:
        code = f"""\
            import subprocess, sys
            for act, port in (("connect-tcp", {srv.tcp_port}),
                              ("sendto-udp", {srv.udp_port})):
                r = subprocess.run([{helper!r}, act, "127.0.0.1", str(port)],
                                   capture_output=True, text=True)
                print(r.stdout.strip())
            """
        first, rules = learn(run_sb, tmp_cwd, py, code)
        assert first.returncode == 0, first.stderr
        assert first.stdout == "ok\nok\n"
        assert re.search(r"^net=ALLOW\|TCP\|127\.0\.0\.1(/32)?\|"
                         rf"{srv.tcp_port}\|OUT$", rules, re.M), rules
        assert re.search(r"^net=ALLOW\|UDP\|127\.0\.0\.1(/32)?\|"
                         rf"{srv.udp_port}\|OUT$", rules, re.M), rules
        second = run_sb([f"--python={py}", "app.py"], env=enforce_env())
        assert second.stdout == "ok\nok\n", (rules, second.stderr)
        # another port was not learned: the network supervisor refuses it
        other = Server()
        try:
            (tmp_cwd / "app.py").write_text(textwrap.dedent(code).replace(
                str(srv.tcp_port), str(other.tcp_port)))
            third = run_sb([f"--python={py}", "app.py"], env=enforce_env())
            assert third.stdout.splitlines()[0].startswith("errno "), \
                third.stderr
        finally:
            other.close()
    finally:
        srv.close()


def test_a_subprocess_tree_is_learned(run_sb, tmp_cwd, py, outside):
    src = os.path.join(outside, "note.txt")
    with open(src, "w") as f:
        f.write("from a grandchild\n")
    (tmp_cwd / "data").mkdir()
    (tmp_cwd / "data" / "rel.txt").write_text("relative\n")
    # sh forks cat: the grandchild inherits the filter; a relative path is
    # taken from the caller's working directory
    code = f"""\
        import subprocess
        subprocess.run(["/bin/sh", "-c", "cat {src} data/rel.txt"])
        """
    first, rules = learn(run_sb, tmp_cwd, py, code)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "from a grandchild\nrelative\n"
    lines = active(rules)
    assert f"expose-ro={src}" in lines, rules
    assert "expose-ro=./data" in lines, rules
    sh = os.path.realpath("/bin/sh")
    cat = os.path.realpath(shutil.which("cat") or "/bin/cat")
    assert f"expose-ro={sh}" in lines, rules
    assert any(ln == f"expose-ro={c}" for ln in lines
               for c in (cat, os.path.realpath("/bin/cat"))), rules
    second = run_sb([f"--python={py}", "app.py"], env=enforce_env())
    assert second.stdout == "from a grandchild\nrelative\n", \
        (rules, second.stderr)


@pytest.mark.parametrize("how", [["ls"], ["ls", "."], ["sh", "-c", "ls \"$PWD\""]],
                         ids=["ls", "ls-dot", "ls-pwd"])
def test_a_child_listing_the_current_directory_is_learned(run_sb, tmp_cwd,
                                                          py, how):
    """importlib lists the script's directory (sys.path[0]), and that one
    listing is not learned. A child listing the same directory was dropped
    with it (the record was taken for importlib's, and the writer had seen
    importlib's lookup of it), so `ls` failed on the first enforced run
    under landlock (found by a probe)."""
    code = f"""\
        import subprocess
        r = subprocess.run({how!r}, capture_output=True, text=True)
        print(r.returncode, r.stdout.split(), r.stderr.strip())
        """
    first, rules = learn(run_sb, tmp_cwd, py, code)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "0 ['app.py'] \n", first.stdout
    second = run_sb([f"--python={py}", "app.py"], env=enforce_env())
    assert second.stdout == first.stdout, (rules, second.stderr)


def test_a_killed_program_keeps_its_native_rules(run_sb, tmp_cwd, py,
                                                 helper, outside):
    src = os.path.join(outside, "k.txt")
    with open(src, "w") as f:
        f.write("x\n")
    code = f"""\
        import os, signal, subprocess
        subprocess.run([{helper!r}, "open-read", {src!r}])
        os.kill(os.getpid(), signal.SIGKILL)
        """
    first, rules = learn(run_sb, tmp_cwd, py, code)
    assert first.returncode == 128 + signal.SIGKILL
    assert f"expose-ro={src}" in active(rules), rules
    assert f"expose-ro={helper}" in active(rules), rules
