"""The learning writer and python-sb's own files (issue 21, issue 15's
"Bad input"): a learning run, maybe as root, writes into a directory that a
sandboxed program could write to before. Whatever that program planted there
(links for the temporary, backup or rule file names, a hard link, a file of
another user) is never followed and never handed a mode: the save either
goes through a fresh name of python-sb's own or stops with 255 and leaves the
old file as it was. What the tests look at is outside python-sb: the victim
file's bytes and mode, the rule file's bytes, mode and type.
"""
import fcntl
import re
import os
import shutil
import stat
import subprocess
import tempfile
import threading

import pytest

from conftest import NOBODY

PY = "/usr/bin/python3"   # executable by uid 65534 too (/root is 0700)
FIRST = "os-sandbox=subprocess\nenv=KEEP=${KEEP}\n"
VICTIM_TEXT = "root secret\n"


def app(tmp, name="colorsys"):
    """A program that imports one module: a learning run has a rule to add."""
    (tmp / "app.py").write_text(f"import {name}\n")
    if os.geteuid() == 0:
        os.chmod(tmp / "app.py", 0o644)


@pytest.fixture
def victim():
    """A root-owned 0600 file outside every exposure of the runs."""
    d = tempfile.mkdtemp(prefix="pysb-victim-")
    path = os.path.join(d, "secret")
    with open(path, "w") as f:
        f.write(VICTIM_TEXT)
    os.chmod(path, 0o600)
    yield path
    shutil.rmtree(d, ignore_errors=True)


def assert_victim_intact(path):
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    with open(path) as f:
        assert f.read() == VICTIM_TEXT


def own(tmp, *names):
    """Files made by the test belong to the uid python-sb runs as."""
    if os.geteuid() == 0 and tmp.stat().st_uid == NOBODY:
        for n in names:
            os.lchown(tmp / n, NOBODY, NOBODY)


def learn(run_sb, **kw):
    return run_sb([f"--python={PY}", "--learn", "app.py"], **kw)


def plant_links(tmp, target):
    """What a program confined with expose-rw=. could leave behind: links
    for every name the old writer used (pid temporaries, backups)."""
    for pid in range(2, 4000):
        os.symlink(target, tmp / f".py-sandboxes.{pid}.tmp")
    os.symlink(target, tmp / ".py-sandboxes.old")
    for i in range(1, 20):
        os.symlink(target, tmp / f".py-sandboxes.old_{i}")


@pytest.mark.parametrize("unpriv", [False, True], ids=["root", "nobody"])
def test_planted_links_are_never_followed(run_sb, tmp_cwd, victim, unpriv):
    (tmp_cwd / ".py-sandboxes").write_text(FIRST)
    os.chmod(tmp_cwd / ".py-sandboxes", 0o640)
    app(tmp_cwd)
    own(tmp_cwd, ".py-sandboxes", "app.py")
    if unpriv and os.geteuid() == 0:
        os.chown(tmp_cwd, NOBODY, NOBODY)
        own(tmp_cwd, ".py-sandboxes", "app.py")
    plant_links(tmp_cwd, victim)
    r = learn(run_sb, unprivileged=unpriv)
    assert r.returncode == 0, r.stderr
    assert_victim_intact(victim)
    rf = tmp_cwd / ".py-sandboxes"
    st = os.lstat(rf)
    assert stat.S_ISREG(st.st_mode)
    # the old file's bits exactly, never wider, never set-id
    assert stat.S_IMODE(st.st_mode) == 0o640, oct(st.st_mode)
    assert "python-import=colorsys" in rf.read_text()
    # the backup went to a name that held nothing
    assert "The old version is here '.py-sandboxes.old_20'." in r.stderr
    assert (tmp_cwd / ".py-sandboxes.old_20").read_text() == FIRST
    leftovers = [n for n in os.listdir(tmp_cwd)
                 if n.endswith(".tmp") and not os.path.islink(tmp_cwd / n)]
    assert leftovers == []


def test_setid_bits_are_never_given(run_sb, tmp_cwd):
    if os.geteuid() != 0:
        pytest.skip("needs root to make a set-id file")
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text(FIRST)
    os.chmod(rf, 0o6755)
    app(tmp_cwd)
    r = learn(run_sb)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.lstat(rf).st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(tmp_cwd / ".py-sandboxes.old").st_mode) \
        == 0o755


@pytest.mark.parametrize("unpriv", [False, True], ids=["root", "nobody"])
def test_a_rule_file_that_is_a_link_is_refused(run_sb, tmp_cwd, victim,
                                               unpriv):
    if unpriv and os.geteuid() == 0:
        os.chown(tmp_cwd, NOBODY, NOBODY)
    app(tmp_cwd)
    own(tmp_cwd, "app.py")
    os.symlink(victim, tmp_cwd / ".py-sandboxes")
    r = learn(run_sb, unprivileged=unpriv)
    assert r.returncode == 255, r.stderr
    assert "symbolic link" in r.stderr
    assert VICTIM_TEXT.strip() not in r.stderr
    assert_victim_intact(victim)
    assert os.readlink(tmp_cwd / ".py-sandboxes") == victim
    assert not os.path.lexists(tmp_cwd / ".py-sandboxes.old")


def test_a_link_swapped_in_during_learning_is_refused(run_sb, tmp_cwd,
                                                     victim):
    """The learning run itself is not confined: what its program does to
    the rule file meanwhile is checked again at save time."""
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text(FIRST)
    (tmp_cwd / "app.py").write_text(
        "import colorsys, os\n"
        "os.remove('.py-sandboxes')\n"
        f"os.symlink({victim!r}, '.py-sandboxes')\n")
    r = learn(run_sb)
    assert r.returncode == 255, r.stderr
    assert "symbolic link" in r.stderr and "NOT saved" in r.stderr
    assert_victim_intact(victim)
    assert os.readlink(rf) == victim


def test_a_rule_file_with_another_link_is_refused(run_sb, tmp_cwd):
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text(FIRST)
    os.link(rf, tmp_cwd / "other-name")
    app(tmp_cwd)
    r = learn(run_sb)
    assert r.returncode == 255, r.stderr
    assert "hard links" in r.stderr
    assert rf.read_text() == FIRST
    assert os.lstat(rf).st_nlink == 2


def test_a_rule_file_of_another_user_is_refused_as_root(run_sb, tmp_cwd):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text(FIRST)
    os.chown(rf, NOBODY, NOBODY)
    app(tmp_cwd)
    r = learn(run_sb)
    assert r.returncode == 255, r.stderr
    assert f"belongs to uid {NOBODY}" in r.stderr
    assert rf.read_text() == FIRST
    assert os.lstat(rf).st_uid == NOBODY


def test_a_rule_file_that_is_no_regular_file_is_refused(run_sb, tmp_cwd):
    os.mkfifo(tmp_cwd / ".py-sandboxes")
    app(tmp_cwd)
    r = learn(run_sb, timeout=120)
    assert r.returncode == 255, r.stderr
    assert stat.S_ISFIFO(os.lstat(tmp_cwd / ".py-sandboxes").st_mode)


@pytest.mark.unprivileged
def test_a_read_only_directory_ends_with_255(run_sb, tmp_cwd):
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text(FIRST)
    app(tmp_cwd)
    own(tmp_cwd, ".py-sandboxes", "app.py")
    os.chmod(tmp_cwd, 0o555)
    try:
        r = learn(run_sb)
    finally:
        os.chmod(tmp_cwd, 0o755)
    if os.geteuid() != 0 and os.getuid() == 0:
        pytest.skip("cannot drop privileges")
    assert r.returncode == 255, r.stderr
    assert "NOT saved" in r.stderr
    assert "Permission denied" in r.stderr
    assert rf.read_text() == FIRST
    assert sorted(os.listdir(tmp_cwd)) == [".py-sandboxes", "app.py"]


def test_a_held_lock_ends_with_255(run_sb, tmp_cwd):
    rf = tmp_cwd / ".py-sandboxes"
    rf.write_text(FIRST)
    app(tmp_cwd)
    fd = os.open(tmp_cwd, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = learn(run_sb, timeout=300)
    finally:
        os.close(fd)
    assert r.returncode == 255, r.stderr
    assert "locked by another process" in r.stderr
    assert rf.read_text() == FIRST


def test_a_directory_replaced_during_the_lock_wait_ends_with_255(
        sb, tmp_cwd):
    """The rule file's directory is moved away and another put at its name
    while the writer waits for the lock: the descriptor it holds is the
    moved directory. It used to write there and say it wrote the file at
    the name, where there was none; now it stops with 255."""
    conf = tmp_cwd / "conf"
    conf.mkdir()
    rf = conf / "app.py-sandboxes"
    rf.write_text(f"learn={rf}\n{FIRST}")
    app(tmp_cwd)
    fd = os.open(conf, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    proc = subprocess.Popen([sb, f"--pysandboxes-config={rf}",
                             f"--python={PY}", "app.py"], cwd=tmp_cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "waiting for the lock" in line, line
        os.rename(conf, tmp_cwd / "moved")
        conf.mkdir()
    finally:
        os.close(fd)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 255, err
    assert "replaced" in err and "NOT saved" in err, err
    assert os.listdir(conf) == []
    assert sorted(os.listdir(tmp_cwd / "moved")) == ["app.py-sandboxes"]
    assert (tmp_cwd / "moved" / "app.py-sandboxes").read_text() == \
        f"learn={rf}\n{FIRST}"


def test_a_full_disk_ends_with_255(run_sb):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tempfile.mkdtemp(prefix="pysb-full-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k",
                        "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        d = __import__("pathlib").Path(mnt)
        (d / ".py-sandboxes").write_text(FIRST)
        app(d)
        try:
            with open(d / "filler", "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass
        res = learn(run_sb, cwd=d)
        assert res.returncode == 255, res.stderr
        assert "No space left on device" in res.stderr
        assert "NOT saved" in res.stderr
        assert (d / ".py-sandboxes").read_text() == FIRST
        assert sorted(os.listdir(d)) == [".py-sandboxes", "app.py",
                                         "filler"]
    finally:
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)


def test_two_learning_runs_still_take_turns(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text(FIRST)
    (tmp_cwd / "a.py").write_text("import colorsys\n")
    (tmp_cwd / "b.py").write_text("import wave\n")
    out = {}

    def go(name):
        out[name] = run_sb([f"--python={PY}", "--learn", name])

    ts = [threading.Thread(target=go, args=(n,)) for n in ("a.py", "b.py")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for n in ("a.py", "b.py"):
        assert out[n].returncode == 0, out[n].stderr
    text = (tmp_cwd / ".py-sandboxes").read_text()
    assert "python-import=colorsys" in text
    assert re.search(r"^python-import=.*\bwave\b", text, re.M), text


# ---- issue 15, Bad input: a variable absent at enforcement time ----

def test_an_unset_variable_is_named_with_its_line(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=subprocess\nnet=ALLOW|TCP|${DB_HOST}|5432|OUT\n")
    env = {k: v for k, v in os.environ.items() if k != "DB_HOST"}
    r = run_sb([f"--python={PY}", "-c", "pass"], env=env)
    assert r.returncode == 255
    assert ".py-sandboxes(2):" in r.stderr
    assert "the variable DB_HOST is not set" in r.stderr
    # with the variable, the same file is fine
    env["DB_HOST"] = "127.0.0.1"
    r = run_sb([f"--python={PY}", "-c", "pass"], env=env)
    assert r.returncode == 0, r.stderr


# ---- what a reviewer sees is what runs ----

def test_hidden_characters_are_escaped_and_flagged(run_sb, tmp_cwd):
    rlo = "\u202e"
    (tmp_cwd / "app.py").write_text(
        "import os\n"
        f"open('/tmp/pysb-{rlo}gpj.py-' + str(os.getpid()), 'w').close()\n"
        f"os.remove('/tmp/pysb-{rlo}gpj.py-' + str(os.getpid()))\n"
        f"open(b'{tmp_cwd}/bad\\xff\\x1b[31m', 'wb').close()\n"
        f"os.environ.get('A{rlo}B')\n")
    env = dict(os.environ)
    env[f"A{rlo}B"] = "1"
    r = run_sb([f"--python={PY}", "--learn", "app.py"], env=env)
    assert r.returncode == 0, r.stderr
    raw = (tmp_cwd / ".py-sandboxes").read_bytes()
    assert rlo.encode() not in raw and b"\xff" not in raw and \
        b"\x1b" not in raw
    text = raw.decode()
    assert "# REVIEW: the program used these names" in text
    assert "# env=A\\xe2\\x80\\xaeB" in text
    assert "/bad\\xff\\x1b[31m" in text
    assert "warning: the program used a variable holding control " \
        "characters, bidirectional-text marks or bytes that are not " \
        "UTF-8: 'A\\xe2\\x80\\xaeB'" in r.stderr
    assert rlo not in r.stderr
    # the escaped names are comments: the file enforces as it reads
    r = run_sb([f"--python={PY}", "--pysandboxes-explain", "-c", "pass"])
    assert r.returncode == 0, r.stderr
    assert "A\u202eB" not in r.stdout


# ---- python-sb's own files, seen from the next run ----

@pytest.mark.parametrize("unpriv", [False, True], ids=["root", "nobody"])
def test_a_program_cannot_widen_its_next_run(run_sb, tmp_cwd, unpriv):
    """Issue 21's attack: expose-rw=. and an added expose-ro= line."""
    secret_dir = tempfile.mkdtemp(prefix="pysb-secret-")
    secret = os.path.join(secret_dir, "key")
    with open(secret, "w") as f:
        f.write("s3cret\n")
    os.chmod(secret_dir, 0o755)
    os.chmod(secret, 0o644)
    try:
        if unpriv and os.geteuid() == 0:
            os.chown(tmp_cwd, NOBODY, NOBODY)
        rules = "os-sandbox=landlock\npython-import=*\nexpose-rw=.\n"
        (tmp_cwd / ".py-sandboxes").write_text(rules)
        (tmp_cwd / "app.py").write_text(
            "import sys\n"
            "try:\n"
            f"    print(open({secret!r}).read())\n"
            "except OSError as e:\n"
            "    print('refused', type(e).__name__)\n"
            "for how in ('a', 'w'):\n"
            "    try:\n"
            f"        open('.py-sandboxes', how).write('expose-ro={secret_dir}\\n')\n"
            "    except OSError as e:\n"
            "        print('kept', type(e).__name__)\n")
        own(tmp_cwd, ".py-sandboxes", "app.py")
        for _ in range(2):
            r = run_sb([f"--python={PY}", "app.py"], unprivileged=unpriv)
            if r.returncode == 255 and "user namespace" in r.stderr:
                pytest.skip("no user namespaces here: " + r.stderr)
            assert r.returncode == 0, r.stderr
            assert "refused" in r.stdout and "s3cret" not in r.stdout
            assert r.stdout.count("kept") == 2
        assert (tmp_cwd / ".py-sandboxes").read_text() == rules
    finally:
        shutil.rmtree(secret_dir, ignore_errors=True)


def test_an_exposure_of_the_rule_file_hands_it_over(run_sb, tmp_cwd):
    rules = ("os-sandbox=landlock\npython-import=*\nexpose-rw=.\n"
             "expose-rw=./.py-sandboxes\n")
    (tmp_cwd / ".py-sandboxes").write_text(rules)
    (tmp_cwd / "app.py").write_text(
        "open('.py-sandboxes', 'a').write('# the program wrote this\\n')\n")
    r = run_sb([f"--python={PY}", "app.py"])
    assert r.returncode == 0, r.stderr
    assert (tmp_cwd / ".py-sandboxes").read_text() == \
        rules + "# the program wrote this\n"


def test_an_absent_include_in_a_writable_tree_is_refused(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=subprocess\nexpose-rw=.\ninclude \"./local.rules\"\n")
    r = run_sb([f"--python={PY}", "-c", "pass"])
    assert r.returncode == 255
    assert ".py-sandboxes(3): include \"local.rules\": it does not exist" \
        in r.stderr
    assert not (tmp_cwd / "local.rules").exists()


@pytest.mark.unprivileged
def test_landlock_without_a_namespace_refuses_to_run(sb, run_sb, tmp_cwd):
    """With the rule file in a writable tree, landlock keeps it read-only
    in a private mount namespace; when none can be made (unshare fails:
    injected with strace, as where user namespaces are disabled), nothing
    runs."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed: cannot make unshare fail")
    rules = "os-sandbox=landlock\npython-import=*\nexpose-rw=.\n"
    (tmp_cwd / ".py-sandboxes").write_text(rules)
    (tmp_cwd / "app.py").write_text(
        "open('.py-sandboxes', 'a').write('expose-ro=/\\n')\n")
    own(tmp_cwd, ".py-sandboxes", "app.py")
    argv = [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=unshare",
            "-e", "inject=unshare:error=EPERM", sb, f"--python={PY}",
            "app.py"]
    if os.geteuid() == 0:
        from conftest import as_nobody
        argv = as_nobody(argv)
    r = subprocess.run(argv, cwd=tmp_cwd, capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 255, r.stderr
    assert "cannot keep it read-only" in r.stderr
    assert "nothing was run" in r.stderr
    assert "Hint:" in r.stderr and "expose-rw=" in r.stderr
    assert (tmp_cwd / ".py-sandboxes").read_text() == rules
