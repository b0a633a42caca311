"""expose-new= and the entries Landlock cannot grant (py-sandboxes(5),
docs/weaknesses.md 61): a program run in $HOME makes, removes and replaces
the entries its rules name, under the Python layer and under the kernel
layer (where the supervisor performs those calls, entrysup.c), and nothing
else in that directory. Each refusal is proved from outside: the files of
the directory are read after the run."""

import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from conftest import NOBODY, run_provider, scaled, sb_path

PY = "/usr/bin/python3"

RULES = """\
expose-list=.
expose-new=./a
expose-new=./state.tmp
expose-rw=./state
expose-rw=./app.log
expose-new=./app.log.1
expose-new=./app.log.2
python-import=*
os-sandbox=${OS_SANDBOX}
"""

WORK = """\
import logging, logging.handlers, os, shutil
os.makedirs("a/b/c", exist_ok=True)
open("a/b/c/f", "w").write("x")
print(sorted(os.listdir("a/b/c")))
shutil.rmtree("a")
print(os.path.exists("a"))
with open("state.tmp", "w") as f:
    f.write("v2")
os.replace("state.tmp", "state")
print(open("state").read())
h = logging.handlers.RotatingFileHandler("app.log", maxBytes=60,
                                         backupCount=2)
log = logging.getLogger("x")
log.addHandler(h)
log.setLevel(logging.INFO)
for i in range(20):
    log.info("line %d xxxxxxxxxxxxxxxxxxxx", i)
h.close()
print(sorted(f for f in os.listdir(".") if f.startswith("app.log")))
"""

WORK_OUT = ("['f']\nFalse\nv2\n"
            "['app.log', 'app.log.1', 'app.log.2']\n")

# One line for each attempt: "label done" or "label refused ERRNO".
ATTEMPT = """\
import os
def attempt(label, fn):
    try:
        fn()
        print(label, "done")
    except OSError as e:
        print(label, "refused", e.errno)
"""

# Each line tries one thing the rules do not grant, prints what happened;
# the test reads the directory afterwards.
EVIL = ATTEMPT + """\
os.makedirs("a", exist_ok=True)
attempt("create", lambda: open(".bash_profile", "w").write("evil"))
attempt("remove", lambda: os.remove("other"))
attempt("replace", lambda: (open("state.tmp", "w").write("x"),
                            os.replace("state.tmp", "other")))
attempt("move-in", lambda: os.replace("other", "a/other"))
attempt("dotdot", lambda: open("a/../other", "w").write("evil"))
attempt("link", lambda: os.link("other", "a/hard"))
attempt("symlink", lambda: os.symlink("../other", "a/soft"))
attempt("via-symlink", lambda: open("a/soft", "a").write("evil"))
attempt("through", lambda: open("a/out/secret2", "w").write("evil"))
attempt("mkdir", lambda: os.mkdir("x"))
attempt("rename-dir", lambda: os.rename("a", "x"))
attempt("truncate", lambda: os.truncate("other", 0))
attempt("append", lambda: open("other", "a").write("evil"))
"""


def lay_out(home):
    (home / "prog.py").write_text(WORK)
    (home / "evil.py").write_text(EVIL)
    (home / ".py-sandboxes").write_text(RULES)
    (home / "state").write_text("v1")
    (home / "app.log").write_text("")
    (home / "other").write_text("secret\n")
    (home / "outside").mkdir()
    (home / "outside" / "secret2").write_text("keep\n")


def run(home, argv, provider, who):
    """Run python-sb in 'home', which is its HOME too."""
    return run_provider(home, argv, provider, who, env={"HOME": str(home)},
                        python=PY)


@pytest.fixture
def home():
    """A home directory outside pytest's (which uid 65534 cannot enter)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="pysb-e2e-home-"))
    lay_out(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def give(home, who):
    if who == "nobody":
        for p in [home] + list(home.rglob("*")):
            os.lchown(p, NOBODY, NOBODY)


@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["landlock", "landlock/kernel-only",
                                      "subprocess"])
def test_named_entries_are_made_removed_and_replaced(home, provider, who):
    give(home, who)
    r = run(home, ["prog.py"], provider, who)
    assert r.returncode == 0, r.stderr
    assert r.stdout == WORK_OUT, r.stderr
    assert (home / "state").read_text() == "v2"
    assert not (home / "a").exists()
    assert sorted(p.name for p in home.iterdir()) == sorted(
        [".py-sandboxes", "prog.py", "evil.py", "state", "other",
         "outside", "app.log", "app.log.1", "app.log.2"])


@pytest.mark.parametrize("a_there", [False, True], ids=["a-made", "a-there"])
@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["landlock", "landlock/kernel-only",
                                      "subprocess"])
def test_nothing_else_in_the_directory_is_touched(home, provider, who,
                                                  a_there):
    """What the rules do not name stays as it was, whichever way the
    program asks: a new name, a removal, a rename over or out of it, '..',
    a hard or symbolic link, a directory of the entry's that leads
    outside. The entry ./a is made by the program, or is there already
    (Landlock then has a rule on it) with a link inside leading out."""
    if a_there:
        (home / "a").mkdir()
        os.symlink(home / "outside", home / "a" / "out")
        os.symlink("../other", home / "a" / "soft")
    give(home, who)
    before = {p.name for p in home.iterdir()}
    r = run(home, ["evil.py"], provider, who)
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines())
    assert len(lines) == 13, r.stdout
    for label, what in lines.items():
        # a symbolic link in the entry is the entry's (what it leads to
        # is judged when it is opened: via-symlink, which makes a file of
        # the entry's when no link is there)
        if label not in ("symlink", "via-symlink") or a_there:
            assert what.startswith("refused"), (label, r.stdout, r.stderr)
    assert (home / "other").read_text() == "secret\n"
    assert (home / "outside" / "secret2").read_text() == "keep\n"
    assert sorted(p.name for p in (home / "outside").iterdir()) == \
        ["secret2"]
    assert not (home / ".bash_profile").exists()
    assert not (home / "x").exists()
    assert not (home / "a" / "other").exists()
    assert a_there or not (home / "a" / "soft").is_symlink()
    assert not (home / "a" / "hard").exists()
    # "replace" makes state.tmp (granted) before its refused rename
    assert {p.name for p in home.iterdir()} - before <= {"a", "state.tmp"}


@pytest.mark.parametrize("value,message", [
    (".", "path must name an entry in a directory"),
    ("..", "path must name an entry in a directory"),
    ("~", "path must name an entry in a directory"),
    ("./a/", "path must name an entry in a directory"),
    ("./nodir/x", "the directory that holds 'x' must exist"),
    ("./lnk", "is a symbolic link: name what it leads to"),
])
def test_a_bad_expose_new_is_an_error(tmp_path, value, message):
    os.symlink("/etc/passwd", tmp_path / "lnk")
    (tmp_path / ".py-sandboxes").write_text(f"expose-new={value}\n")
    r = run(tmp_path, ["-c", "pass"], "subprocess", "root")
    assert r.returncode == 255, r.stderr
    assert f"In 'expose-new={value}', " in r.stderr and message in \
        r.stderr, r.stderr


@pytest.mark.parametrize("provider", ["unshare", "bwrap"])
def test_a_namespace_provider_refuses_expose_new(tmp_path, provider):
    if provider == "bwrap" and not shutil.which("bwrap"):
        pytest.skip("bwrap is not installed (scripts/deps installs it)")
    (tmp_path / ".py-sandboxes").write_text(
        "expose-new=./x\nos-sandbox=${OS_SANDBOX}\n")
    r = run(tmp_path, ["-c", "open('x', 'w')"], provider, "root")
    assert r.returncode == 255, r.stderr
    assert "'expose-new=./x' (.py-sandboxes(1)): an entry the program " \
        "may make, which a namespace cannot bind" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("rules,served", [
    ("expose-new=./x\n", True),
    ("expose-rw=./f\n", True),
    ("expose-rw=./d\n", False),
])
def test_explain_says_when_the_supervisor_performs_the_calls(tmp_path, rules,
                                                          served):
    """Only an entry's rule (expose-new=, a file's expose-rw=) makes every
    file call go to the supervisor; a directory's rule does not."""
    (tmp_path / "f").write_text("")
    (tmp_path / "d").mkdir()
    (tmp_path / ".py-sandboxes").write_text(rules + "os-sandbox=landlock\n")
    r = subprocess.run([str(sb_path()), "--pysandboxes-explain", "-c",
                        "pass"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=scaled(60))
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert rules.strip() in out, out
    assert ("made, replaced and removed by python-sb as the supervisor, "
            "which sees every file call" in out) == served, out


@pytest.mark.parametrize("provider", ["landlock/kernel-only", "subprocess"])
def test_an_absolute_path_ignores_dirfd(home, provider):
    """The kernel ignores dirfd for an absolute path: so do the calls the
    supervisor performs (an entry's open, a chmod), where a closed dirfd
    was EBADF/EACCES."""
    (home / "d.py").write_text(
        ATTEMPT + "os.makedirs('a', exist_ok=True)\n"
        "p = os.path.abspath('a/z')\n"
        "attempt('open', lambda: os.close(os.open(p, os.O_CREAT | "
        "os.O_WRONLY, 0o600, dir_fd=999)))\n"
        "attempt('chmod', lambda: os.chmod(p, 0o640, dir_fd=999))\n")
    r = run(home, ["d.py"], provider, "root")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "open done\nchmod done\n", (r.stdout, r.stderr)
    assert (home / "a" / "z").stat().st_mode & 0o777 == 0o640


# Found by review (2026-12-05): a rename with one end an entry's moved or
# swapped trees other rules name. Each layout is a project directory
# 'proj' (the program's cwd, holding the rule file) in a scratch root.
EXCHANGE = ATTEMPT + """\
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    if libc.syscall(316, AT_FDCWD, a.encode(), AT_FDCWD, b.encode(),
                    RENAME_EXCHANGE) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
"""

MOVES = {
    # the project itself renamed onto the entry beside it, its rule file
    # replaced, and moved back
    "rule-file": ("expose-rw=.\nexpose-new=../out\n",
                  """\
S = os.path.dirname(os.getcwd())
attempt("away", lambda: os.rename(S + "/proj", S + "/out"))
attempt("unlink", lambda: os.unlink(S + "/out/.py-sandboxes"))
attempt("write", lambda: open(S + "/out/.py-sandboxes", "w").write(
    "expose-rw=/\\n"))
attempt("back", lambda: os.rename(S + "/out", S + "/proj"))
"""),
    # an included rule file's directory swapped with an entry
    "include": ('include "./conf/extra"\nexpose-rw=.\nexpose-new=./a\n',
                """\
os.mkdir("a")
attempt("swap", lambda: exchange("a", "conf"))
attempt("write", lambda: open("conf/extra", "w").write("expose-rw=/\\n"))
"""),
    # a read-only tree inside the writable one moved into the entry
    "read-only": ("expose-rw=.\nexpose-ro=./sub/ro\nexpose-new=./a\n",
                  """\
os.mkdir("a")
attempt("in", lambda: os.rename("sub", "a/sub"))
attempt("aside", lambda: os.rename("a/sub/ro", "a/sub/old"))
attempt("make", lambda: os.mkdir("a/sub/ro"))
attempt("write", lambda: open("a/sub/ro/conf", "w").write("EVIL"))
attempt("out", lambda: os.rename("a/sub", "sub"))
"""),
    # a rule's own root swapped with the entry
    "rule-root": ("expose-rw=./d\nexpose-new=./a\n",
                  """\
os.mkdir("a")
attempt("swap", lambda: exchange("a", "d"))
"""),
}


@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("provider", ["landlock", "landlock/kernel-only"])
@pytest.mark.parametrize("case", sorted(MOVES))
def test_a_rename_never_moves_what_another_rule_names(case, provider, who):
    rules, body = MOVES[case]
    root = pathlib.Path(tempfile.mkdtemp(prefix="pysb-e2e-moves-"))
    try:
        proj = root / "proj"
        for d in ("proj/conf", "proj/sub/ro", "proj/d"):
            (root / d).mkdir(parents=True)
        (proj / "conf" / "extra").write_text("python-import=*\n")
        (proj / "sub" / "ro" / "conf").write_text("good\n")
        (proj / "d" / "keep").write_text("keep\n")
        (proj / ".py-sandboxes").write_text(
            rules + "python-import=*\npython-api=ALLOW:native\n"
            "os-sandbox=landlock\n")
        (proj / "prog.py").write_text(EXCHANGE + body)
        before = {p.relative_to(root): p.read_bytes() if p.is_file() else None
                  for p in root.rglob("*")}
        give(root, who)
        r = run(proj, ["prog.py"], provider, who)
        assert r.returncode == 0, r.stderr
        after = {p.relative_to(root): p.read_bytes() if p.is_file() else None
                 for p in root.rglob("*")}
        # a directory made by the program ('a') may stay, empty
        extra = {k for k in after if k not in before}
        assert extra <= {pathlib.Path("proj/a")}, (r.stdout, extra)
        assert {k: v for k, v in after.items() if k in before} == before, \
            r.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_truncate_keeps_the_programs_file_size_limit(home):
    """truncate(2) on an entry is made by the supervisor: the program's
    limit-file-size still holds (EFBIG), seen in the file's size."""
    (home / ".py-sandboxes").write_text(
        RULES + "limit-file-size=1M\n")
    (home / "t.py").write_text(
        "import os, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "os.makedirs('a', exist_ok=True)\n"
        "open('a/f', 'w').close()\n"
        "try:\n    os.truncate('a/f', 10 * 2 ** 30)\n"
        "except OSError as e:\n    print('refused', e.errno)\n")
    r = run(home, ["t.py"], "landlock", "root")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "refused 27\n", r.stderr
    assert (home / "a" / "f").stat().st_size == 0
