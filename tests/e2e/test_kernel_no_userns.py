"""The kernel layer needs no user namespaces (issue 5): with
user.max_user_namespaces=0 (set by the test as root, restored afterwards),
os-sandbox=landlock still runs, confines files and the network, and the
supervisor still judges connects. Unprivileged too."""
import os
import pathlib
import socket
import subprocess

import pytest

from conftest import as_nobody, sb_path

SYSCTL = pathlib.Path("/proc/sys/user/max_user_namespaces")


@pytest.fixture
def no_userns():
    if os.geteuid() != 0:
        pytest.skip("only root can set user.max_user_namespaces")
    try:
        old = SYSCTL.read_text()
        SYSCTL.write_text("0\n")
    except OSError as e:
        pytest.skip(f"cannot set {SYSCTL}: {e}")
    try:
        # the setting holds: a new user namespace is refused
        probe = subprocess.run(["unshare", "--user", "true"],
                               capture_output=True)
        assert probe.returncode != 0
        yield
    finally:
        SYSCTL.write_text(old)


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_landlock_without_user_namespaces(no_userns, tmp_path, user):
    work = tmp_path / "w"
    (work / "data").mkdir(parents=True)
    (work / "data" / "ok.txt").write_text("fine")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(4)
    (work / ".py-sandboxes").write_text(
        "os-sandbox=landlock\npython-import=*\nexpose-ro=./data\n"
        f"net=ALLOW|TCP|127.0.0.1|{port}|OUT\n")
    (work / "app.py").write_text(f"""
import socket
print(open("data/ok.txt").read())
for target in ("/etc/passwd",):
    try:
        open(target)
        print("ALLOWED")
    except OSError as e:
        print(type(e).__name__)
for p in ({port}, {other.getsockname()[1]}):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", p))
        print("connected")
    except OSError as e:
        print(type(e).__name__)
""")
    py = "/usr/bin/python3"
    argv = [str(sb_path()), f"--python={py}", "app.py"]
    if user == "nobody":
        for p in (work, tmp_path):
            os.chmod(p, 0o755)
        for f in work.rglob("*"):
            os.chmod(f, 0o755 if f.is_dir() else 0o644)
        argv = as_nobody(argv)
    try:
        r = subprocess.run(argv, cwd=work, capture_output=True, text=True,
                           timeout=60)
    finally:
        srv.close()
        other.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["fine", "RuleFileNotFoundError",
                                "connected",
                                "RuleSocketConnectionRefusedError"], r.stderr
