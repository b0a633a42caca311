"""The file guard end to end (seed-spec 5.2 and 2.6.3): what a program run
by python-sb may read, write, list and link, and the exact refusals it gets.

Every case builds a small tree in its own working directory, writes a rule
file and a script, runs `python-sb --python=<each CPython> script.py` and
compares what the script printed: one line per probe, `label: OK <repr>` or
`label: <exception class>: <message>`. The core cases run under every
interpreter of the machine (conftest.python_exe).
"""
import os
import subprocess
import textwrap

import pytest

PRELUDE = textwrap.dedent("""\
    import os, sys
    def t(label, fn):
        try:
            r = fn()
        except BaseException as e:
            print(f"{label}: {type(e).__name__}: {e}")
        else:
            print(f"{label}: OK {r!r}")
    """)

# Line numbers matter: messages cite .py-sandboxes(N).
RULES = textwrap.dedent("""\
    python-import=*
    expose-ro=./data
    expose-rw=./rw
    ignore=*.key
    ignore=.secrets
    """)
RO_REF = "Rule 'expose-ro=./data' from .py-sandboxes(2)"


def not_accepted(path):
    return f"RuleFileNotFoundError: Access to '{path}' must be accepted by " \
           f"a rule."


@pytest.fixture
def tree(tmp_cwd):
    """data/ (read-only in RULES), rw/ (writable), outside/ (no rule), and
    links from data/ to both sides. Returns the canonical cwd (str)."""
    root = os.path.realpath(tmp_cwd)
    for d in ("data/sub", "data/.secrets", "rw", "outside"):
        os.makedirs(os.path.join(root, d))
    files = {
        "data/f.txt": "hello",
        "data/g.txt": "sibling",
        "data/a.key": "k",
        "data/.secrets/token": "t",
        "data/sub/h.txt": "h",
        "rw/w.txt": "w",
        "outside/secret.txt": "s",
    }
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    os.symlink(os.path.join(root, "outside/secret.txt"),
               os.path.join(root, "data/link_abs"))
    os.symlink("../outside/secret.txt", os.path.join(root, "data/link_rel"))
    os.symlink("f.txt", os.path.join(root, "data/link_in"))
    os.symlink(os.path.join(root, "outside"),
               os.path.join(root, "data/dirlink_out"))
    return root


def probe(sandboxed, body, rules=RULES, args=()):
    """Run PRELUDE + body; {label: result} of its t() lines."""
    r = sandboxed(rules, PRELUDE + textwrap.dedent(body), args=args)
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        label, _, rest = line.partition(": ")
        out[label] = rest
    return out


# ---- reading ----

def test_read_inside_and_outside(sandboxed, tree):
    out = probe(sandboxed, """\
        t("in", lambda: open("data/f.txt").read())
        t("abs", lambda: open(os.path.abspath("data/sub/h.txt")).read())
        t("passwd", lambda: open("/etc/passwd").read())
        t("outside", lambda: open("outside/secret.txt").read())
        t("dotdot", lambda: open("data/../outside/secret.txt").read())
        def _errno():
            try:
                open("/etc/passwd")
            except FileNotFoundError as e:
                return (e.errno, e.filename)
        t("errno", _errno)
        """)
    assert out["in"] == "OK 'hello'"
    assert out["abs"] == "OK 'h'"
    assert out["passwd"] == not_accepted("/etc/passwd")
    assert out["outside"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["dotdot"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["errno"] == "OK (2, '/etc/passwd')"


def test_stat_exists_and_access(sandboxed, tree):
    out = probe(sandboxed, """\
        import pathlib
        t("stat_in", lambda: os.stat("data/f.txt").st_size)
        t("stat_out", lambda: os.stat("outside/secret.txt").st_size)
        t("lstat_out", lambda: os.lstat("/etc/passwd").st_size)
        t("exists_out", lambda: os.path.exists("/etc/passwd"))
        t("isfile_out", lambda: os.path.isfile("outside/secret.txt"))
        t("path_exists", lambda: pathlib.Path("/etc/passwd").exists())
        t("exists_in", lambda: os.path.exists("data/f.txt"))
        t("access_out", lambda: os.access("/etc/passwd", os.R_OK))
        t("access_in", lambda: os.access("data/f.txt", os.R_OK))
        t("access_ro_w", lambda: os.access("data/f.txt", os.W_OK))
        t("access_rw_w", lambda: os.access("rw/w.txt", os.W_OK))
        t("access_ignored", lambda: os.access("data/a.key", os.F_OK))
        """)
    assert out["stat_in"] == "OK 5"
    assert out["stat_out"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["lstat_out"] == not_accepted("/etc/passwd")
    assert out["exists_out"] == "OK False"
    assert out["isfile_out"] == "OK False"
    assert out["path_exists"] == "OK False"
    assert out["exists_in"] == "OK True"
    assert out["access_out"] == "OK False"
    assert out["access_in"] == "OK True"
    assert out["access_ro_w"] == "OK False"
    assert out["access_rw_w"] == "OK True"
    assert out["access_ignored"] == "OK False"


# ---- writing ----

def test_write_read_only_and_read_write(sandboxed, tree):
    out = probe(sandboxed, """\
        def write(p, mode="w"):
            with open(p, mode) as f:
                f.write("x")
            return open(p).read()
        t("ro_new", lambda: write("data/new.txt"))
        t("ro_append", lambda: write("data/f.txt", "a"))
        t("ro_plus", lambda: open("data/f.txt", "r+").close())
        t("ro_x", lambda: open("data/x.txt", "x").close())
        t("rw_new", lambda: write("rw/new.txt"))
        t("rw_append", lambda: write("rw/w.txt", "a"))
        t("rw_remove", lambda: os.remove("rw/new.txt"))
        t("rw_mkdir", lambda: os.mkdir("rw/d"))
        t("rw_rmdir", lambda: os.rmdir("rw/d"))
        t("ro_mkdir", lambda: os.mkdir("data/d"))
        t("ro_remove", lambda: os.remove("data/g.txt"))
        t("ro_chmod", lambda: os.chmod("data/f.txt", 0o600))
        t("ro_truncate", lambda: os.truncate("data/f.txt", 0))
        t("ro_utime", lambda: os.utime("data/f.txt"))
        t("out_write", lambda: write("outside/new.txt"))
        t("ro_mkfifo", lambda: os.mkfifo("data/fifo"))
        t("rw_mkfifo", lambda: os.mkfifo("rw/fifo"))
        t("still", lambda: open("data/f.txt").read())
        """)
    denied = f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}"
    for label in ("ro_new", "ro_append", "ro_plus", "ro_x", "ro_mkdir",
                  "ro_remove", "ro_chmod", "ro_truncate", "ro_utime",
                  "ro_mkfifo"):
        assert out[label] == denied, label
    assert out["rw_new"] == "OK 'x'"
    assert out["rw_append"] == "OK 'wx'"
    assert out["rw_remove"] == "OK None"
    assert out["rw_mkdir"] == "OK None"
    assert out["rw_rmdir"] == "OK None"
    assert out["rw_mkfifo"] == "OK None"
    assert out["out_write"] == not_accepted(f"{tree}/outside/new.txt")
    assert out["still"] == "OK 'hello'"
    assert not os.path.exists(os.path.join(tree, "data/new.txt"))


def test_a_descriptor_is_judged_by_the_file_behind_it(sandboxed, tree):
    """A descriptor where a path goes (weaknesses.md 10): the file it
    names under /proc/self/fd decides, as its path would; one that names
    no file of a tree (a pipe, a socket, a memfd) passes, and one that is
    no descriptor fails as the call does."""
    out = probe(sandboxed, """\
        import socket
        ro = os.open("data/f.txt", os.O_RDONLY)
        rw = os.open("rw/w.txt", os.O_RDWR)
        d = os.open("data", os.O_RDONLY)
        t("ro_fchmod", lambda: os.fchmod(ro, 0o666))
        t("ro_chmod_fd", lambda: os.chmod(ro, 0o666))
        t("ro_utime_fd", lambda: os.utime(ro, (0, 0)))
        t("ro_ftruncate", lambda: os.ftruncate(ro, 0))
        t("rw_fchmod", lambda: os.fchmod(rw, 0o640))
        t("rw_ftruncate", lambda: os.ftruncate(rw, 0))
        t("rw_utime_fd", lambda: os.utime(rw, (1, 1)))
        t("listdir_fd", lambda: sorted(os.listdir(d))[:2])
        r, w = os.pipe()
        t("pipe", lambda: os.fchmod(r, 0o600))
        m = os.memfd_create("m")
        t("memfd", lambda: os.ftruncate(m, 10))
        s = socket.socket(socket.AF_UNIX)
        t("socket", lambda: os.fchmod(s.fileno(), 0o600))
        t("bad", lambda: os.fchmod(987, 0o600))
        os.close(rw)
        gone = os.open("rw/gone.txt", os.O_RDWR | os.O_CREAT)
        os.remove("rw/gone.txt")
        t("unlinked", lambda: os.ftruncate(gone, 3))
        """)
    denied = f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}"
    for label in ("ro_fchmod", "ro_chmod_fd", "ro_utime_fd",
                  "ro_ftruncate"):
        assert out[label] == denied, (label, out)
    for label in ("rw_fchmod", "rw_ftruncate", "rw_utime_fd", "pipe",
                  "memfd", "socket", "unlinked"):
        assert out[label] == "OK None", (label, out)
    assert out["listdir_fd"] == "OK ['f.txt', 'g.txt']"  # ignore= hides
    assert out["bad"].startswith("OSError: [Errno 9]"), out
    st = os.stat(os.path.join(tree, "data/f.txt"))
    assert (oct(st.st_mode & 0o777), st.st_size) == (oct(0o644), 5)
    assert os.stat(os.path.join(tree, "rw/w.txt")).st_size == 0


def test_a_missing_entry_fails_as_in_cpython(sandboxed, tree):
    """Removing, changing or truncating what is not there, or making what
    is there already, in a read-only tree, fails as plain CPython fails
    (the kernel looks the name up before it asks for any right):
    FileNotFoundError, NotADirectoryError, FileExistsError, which code
    counts on (test.support.unlink, `except FileExistsError`). What is there is still
    refused, and a missing entry outside every rule still says which rule
    to add (its existence is not revealed)."""
    out = probe(sandboxed, """\
        t("rm_missing", lambda: os.remove("data/missing"))
        t("unlink_dirfd", lambda: os.unlink(b"missing",
                                            dir_fd=os.open("data", os.O_RDONLY)))
        t("rmdir_missing", lambda: os.rmdir("data/sub/missing"))
        t("chmod_missing", lambda: os.chmod("data/missing", 0o600))
        t("truncate_missing", lambda: os.truncate("data/missing", 0))
        t("rm_under_file", lambda: os.remove("data/f.txt/x"))
        t("rm_present", lambda: os.remove("data/g.txt"))
        t("rm_out_missing", lambda: os.remove("outside/missing"))
        t("rm_ignored_missing", lambda: os.remove("data/b.key"))
        t("mkdir_existing", lambda: os.mkdir("data/sub"))
        t("mkdir_no_parent", lambda: os.mkdir("data/none/d"))
        t("mkfifo_existing", lambda: os.mkfifo("data/f.txt"))
        t("mkdir_new", lambda: os.mkdir("data/newdir"))
        """)
    assert out["rm_missing"] == ("FileNotFoundError: [Errno 2] No such file "
                                 "or directory: 'data/missing'")
    assert out["unlink_dirfd"] == ("FileNotFoundError: [Errno 2] No such "
                                   "file or directory: b'missing'")
    assert out["rmdir_missing"] == ("FileNotFoundError: [Errno 2] No such "
                                    "file or directory: 'data/sub/missing'")
    assert out["chmod_missing"].startswith("FileNotFoundError: [Errno 2]")
    assert out["truncate_missing"].startswith("FileNotFoundError: [Errno 2]")
    assert out["rm_under_file"] == ("NotADirectoryError: [Errno 20] Not a "
                                    "directory: 'data/f.txt/x'")
    assert out["rm_present"] == (f"RulePermissionError: Cannot write to "
                                 f"'{tree}/data/'. {RO_REF}")
    assert out["rm_out_missing"] == not_accepted(f"{tree}/outside/missing")
    assert out["rm_ignored_missing"].startswith(
        "RuleFileNotFoundError: Access to 'data/b.key' is ignored by rule")
    assert out["mkdir_existing"] == ("FileExistsError: [Errno 17] File "
                                     "exists: 'data/sub'")
    assert out["mkdir_no_parent"] == ("FileNotFoundError: [Errno 2] No such "
                                      "file or directory: 'data/none/d'")
    assert out["mkfifo_existing"] == ("FileExistsError: [Errno 17] File "
                                      "exists: 'data/f.txt'")
    assert out["mkdir_new"] == (f"RulePermissionError: Cannot write to "
                                f"'{tree}/data/'. {RO_REF}")
    assert os.path.exists(os.path.join(tree, "data/g.txt"))
    assert not os.path.exists(os.path.join(tree, "data/newdir"))


def test_read_only_inside_read_write_tree(sandboxed, tree):
    rules = textwrap.dedent("""\
        python-import=*
        expose-rw=./rw
        expose-ro=./rw/frozen
        """)
    os.makedirs(os.path.join(tree, "rw/frozen"))
    out = probe(sandboxed, """\
        t("rw", lambda: open("rw/a.txt", "w").close())
        t("frozen", lambda: open("rw/frozen/a.txt", "w").close())
        """, rules=rules)
    assert out["rw"] == "OK None"
    assert out["frozen"] == (
        f"RulePermissionError: Cannot write to '{tree}/rw/frozen/'. "
        "Rule 'expose-ro=./rw/frozen' from .py-sandboxes(3)")


def test_rename_and_hard_link_out_of_read_only(sandboxed, tree):
    out = probe(sandboxed, """\
        t("rename_out", lambda: os.rename("data/f.txt", "rw/f.txt"))
        t("replace_out", lambda: os.replace("data/g.txt", "rw/g.txt"))
        t("rename_in", lambda: os.rename("rw/w.txt", "data/w.txt"))
        t("link_ro", lambda: os.link("data/f.txt", "rw/hard"))
        t("link_out", lambda: os.link("outside/secret.txt", "rw/hard2"))
        t("rename_rw", lambda: os.rename("rw/w.txt", "rw/v.txt"))
        t("link_rw", lambda: os.link("rw/v.txt", "rw/hard3"))
        """)
    denied = f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}"
    assert out["rename_out"] == denied
    assert out["replace_out"] == denied
    assert out["rename_in"] == denied
    assert out["link_ro"] == denied
    assert out["link_out"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["rename_rw"] == "OK None"
    assert out["link_rw"] == "OK None"
    assert os.path.exists(os.path.join(tree, "data/f.txt"))
    assert not os.path.exists(os.path.join(tree, "rw/hard"))


# ---- a file exposed alone ----

def test_file_exposed_alone(sandboxed, tree):
    rules = "python-import=*\nexpose-ro=./data/f.txt\n"
    out = probe(sandboxed, """\
        t("file", lambda: open("data/f.txt").read())
        t("sibling", lambda: open("data/g.txt").read())
        t("write", lambda: open("data/f.txt", "a").close())
        t("listdir", lambda: sorted(os.listdir("data")))
        """, rules=rules)
    assert out["file"] == "OK 'hello'"
    assert out["sibling"] == not_accepted(f"{tree}/data/g.txt")
    assert out["write"] == (
        f"RulePermissionError: Cannot write to '{tree}/data/f.txt'. "
        "Rule 'expose-ro=./data/f.txt' from .py-sandboxes(2)")
    # the directory leads to the file: listed, with that file only (and
    # the link that reaches it)
    assert out["listdir"] == "OK ['f.txt', 'link_in']"


# ---- ignore= ----

def test_ignore_patterns(sandboxed, tree):
    rules = RULES + f"ignore={tree}/data/sub/*\n"
    out = probe(sandboxed, """\
        t("rel", lambda: open("data/a.key").read())
        t("under_dir", lambda: open("data/.secrets/token").read())
        t("dir_itself", lambda: os.listdir("data/.secrets"))
        t("abs_pattern", lambda: open("data/sub/h.txt").read())
        t("abs_spelled", lambda: open(os.path.abspath("data/a.key")).read())
        t("write_ignored", lambda: open("rw/new.key", "w").close())
        t("listing", lambda: sorted(os.listdir("data")))
        t("not_ignored", lambda: open("data/g.txt").read())
        """, rules=rules)
    assert out["rel"] == ("RuleFileNotFoundError: Access to 'data/a.key' is "
                          "ignored by rule 'ignore=*.key' from "
                          ".py-sandboxes(4)")
    assert out["under_dir"] == (
        "RuleFileNotFoundError: Access to 'data/.secrets/token' is ignored "
        "by rule 'ignore=.secrets' from .py-sandboxes(5)")
    assert out["dir_itself"] == (
        "RuleFileNotFoundError: Access to 'data/.secrets' is ignored by "
        "rule 'ignore=.secrets' from .py-sandboxes(5)")
    assert out["abs_pattern"] == (
        f"RuleFileNotFoundError: Access to 'data/sub/h.txt' is ignored by "
        f"rule 'ignore={tree}/data/sub/*' from .py-sandboxes(6)")
    assert out["abs_spelled"] == (
        f"RuleFileNotFoundError: Access to '{tree}/data/a.key' is ignored "
        "by rule 'ignore=*.key' from .py-sandboxes(4)")
    assert out["write_ignored"] == (
        "RuleFileNotFoundError: Access to 'rw/new.key' is ignored by rule "
        "'ignore=*.key' from .py-sandboxes(4)")
    # a.key and .secrets hidden; the links leading outside too
    assert out["listing"] == "OK ['f.txt', 'g.txt', 'link_in', 'sub']"
    assert out["not_ignored"] == "OK 'sibling'"


# ---- symlinks ----

def test_symlink_inside_pointing_outside(sandboxed, tree):
    out = probe(sandboxed, """\
        t("abs", lambda: open("data/link_abs").read())
        t("rel", lambda: open("data/link_rel").read())
        t("dir", lambda: open("data/dirlink_out/secret.txt").read())
        t("in", lambda: open("data/link_in").read())
        t("lstat", lambda: os.lstat("data/link_abs").st_size > 0)
        """)
    assert out["abs"] == not_accepted(f"{tree}/data/link_abs")
    assert out["rel"] == not_accepted(f"{tree}/data/link_rel")
    assert out["dir"] == not_accepted(f"{tree}/data/dirlink_out/secret.txt")
    assert out["in"] == "OK 'hello'"
    # the link itself lies inside: its own metadata is readable
    assert out["lstat"] == "OK True"


def test_symlink_creation(sandboxed, tree):
    out = probe(sandboxed, """\
        t("out_abs", lambda: os.symlink("/etc/passwd", "rw/l1"))
        t("out_rel", lambda: os.symlink("../outside/secret.txt", "rw/l2"))
        t("in_rel", lambda: os.symlink("../data/f.txt", "rw/l3"))
        t("read_l3", lambda: open("rw/l3").read())
        t("in_ro", lambda: os.symlink("f.txt", "data/l4"))
        t("dangling_out", lambda: os.symlink("/nonexistent/x", "rw/l5"))
        """)
    assert out["out_abs"] == not_accepted("/etc/passwd")
    assert out["out_rel"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["in_rel"] == "OK None"
    assert out["read_l3"] == "OK 'hello'"
    assert out["in_ro"] == (
        f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}")
    assert out["dangling_out"] == not_accepted("/nonexistent/x")
    assert not os.path.lexists(os.path.join(tree, "rw/l1"))


def test_dangling_link_cannot_create_outside(sandboxed, tree):
    os.symlink(os.path.join(tree, "outside/created.txt"),
               os.path.join(tree, "rw/dangling"))
    out = probe(sandboxed, """\
        t("create", lambda: open("rw/dangling", "w").close())
        t("remove_link", lambda: os.remove("rw/dangling"))
        """)
    assert out["create"] == not_accepted(f"{tree}/rw/dangling")
    # removing the link acts on the link, which lies inside
    assert out["remove_link"] == "OK None"
    assert not os.path.exists(os.path.join(tree, "outside/created.txt"))


def test_readlink_does_not_disclose_targets_outside(sandboxed, tree):
    out = probe(sandboxed, """\
        t("in", lambda: os.readlink("data/link_in"))
        t("abs", lambda: os.readlink("data/link_abs"))
        t("rel", lambda: os.readlink("data/link_rel"))
        t("realpath", lambda: os.path.realpath("data/link_in"))
        """)
    assert out["in"] == "OK 'f.txt'"
    # the refusal names the link; the target outside is never shown
    assert out["abs"] == ("RuleFileNotFoundError: Access to the target of "
                          f"'{tree}/data/link_abs' must be accepted by a "
                          "rule.")
    assert out["rel"] == ("RuleFileNotFoundError: Access to the target of "
                          f"'{tree}/data/link_rel' must be accepted by a "
                          "rule.")
    assert "secret" not in out["abs"] + out["rel"]
    assert out["realpath"] == f"OK '{tree}/data/f.txt'"


# ---- os.open, posix.open, dir_fd ----

def test_os_open_flags_and_posix_twin(sandboxed, tree):
    out = probe(sandboxed, """\
        import posix
        R = os.O_RDONLY
        def o(fn, p, flags):
            os.close(fn(p, flags))
        for name, fn in (("os", os.open), ("posix", posix.open)):
            t(name + "_rd", lambda: o(fn, "data/f.txt", R))
            t(name + "_wr", lambda: o(fn, "data/f.txt", os.O_WRONLY))
            t(name + "_rdwr", lambda: o(fn, "data/f.txt", os.O_RDWR))
            t(name + "_creat", lambda: o(fn, "data/n", R | os.O_CREAT))
            t(name + "_trunc", lambda: o(fn, "data/f.txt", R | os.O_TRUNC))
            t(name + "_append", lambda: o(fn, "data/f.txt", R | os.O_APPEND))
            t(name + "_tmpfile",
              lambda: o(fn, "data", os.O_TMPFILE | os.O_RDWR))
            t(name + "_out", lambda: o(fn, "/etc/passwd", R))
            t(name + "_rw", lambda: o(fn, "rw/n", os.O_WRONLY | os.O_CREAT))
        t("same", lambda: os.open is posix.open and os.stat is posix.stat)
        t("badflags", lambda: os.open("data/f.txt", "r"))
        """)
    denied = f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}"
    for name in ("os", "posix"):
        assert out[name + "_rd"] == "OK None"
        for kind in ("wr", "rdwr", "creat", "trunc", "append"):
            assert out[f"{name}_{kind}"] == denied, (name, kind)
        assert out[name + "_tmpfile"] == (
            f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}")
        assert out[name + "_out"] == not_accepted("/etc/passwd")
        assert out[name + "_rw"] == "OK None"
    assert out["same"] == "OK True"
    assert out["badflags"].startswith("TypeError: ")


def test_dir_fd_variants(sandboxed, tree):
    out = probe(sandboxed, """\
        ro = os.open("data", os.O_RDONLY)
        rw = os.open("rw", os.O_RDONLY)
        def rd(p, d):
            fd = os.open(p, os.O_RDONLY, dir_fd=d)
            data = os.read(fd, 100)
            os.close(fd)
            return data
        t("open_in", lambda: rd("f.txt", ro))
        t("open_up", lambda: rd("../outside/secret.txt", ro))
        t("open_link", lambda: rd("link_abs", ro))
        WC = os.O_WRONLY | os.O_CREAT
        t("open_write_ro", lambda: os.open("n", WC, dir_fd=ro))
        t("open_write_rw", lambda: os.close(os.open("n", WC, dir_fd=rw)))
        t("stat", lambda: os.stat("f.txt", dir_fd=ro).st_size)
        up = "../outside/secret.txt"
        t("stat_up", lambda: os.stat(up, dir_fd=ro).st_size)
        t("access_up", lambda: os.access(up, os.R_OK, dir_fd=ro))
        t("mkdir_ro", lambda: os.mkdir("d", dir_fd=ro))
        t("mkdir_rw", lambda: os.mkdir("d", dir_fd=rw))
        t("unlink_ro", lambda: os.unlink("g.txt", dir_fd=ro))
        t("unlink_rw", lambda: os.unlink("n", dir_fd=rw))
        t("rename_fd", lambda: os.rename("f.txt", "f2.txt",
                                         src_dir_fd=ro, dst_dir_fd=rw))
        t("readlink_fd", lambda: os.readlink("link_abs", dir_fd=ro))
        t("symlink_fd", lambda: os.symlink("/etc/passwd", "l", dir_fd=rw))
        t("bad_fd", lambda: os.stat("f.txt", dir_fd=9999))
        t("listdir_fd", lambda: sorted(os.listdir(ro)))
        """)
    denied = f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}"
    secret = f"{tree}/outside/secret.txt"
    assert out["open_in"] == "OK b'hello'"
    assert out["open_up"] == not_accepted(secret)
    assert out["open_link"] == not_accepted(f"{tree}/data/link_abs")
    assert out["open_write_ro"] == denied
    assert out["open_write_rw"] == "OK None"
    assert out["stat"] == "OK 5"
    assert out["stat_up"] == not_accepted(secret)
    assert out["access_up"] == "OK False"
    assert out["mkdir_ro"] == denied
    assert out["mkdir_rw"] == "OK None"
    assert out["unlink_ro"] == denied
    assert out["unlink_rw"] == "OK None"
    assert out["rename_fd"] == denied
    assert out["readlink_fd"].startswith(
        "RuleFileNotFoundError: Access to the target of ")
    assert out["symlink_fd"] == not_accepted("/etc/passwd")
    # a closed dir_fd touches nothing: the call's own error, as plain
    assert out["bad_fd"] == "OSError: [Errno 9] Bad file descriptor: 'f.txt'"
    assert out["listdir_fd"] == (
        "OK ['f.txt', 'g.txt', 'link_in', 'sub']")


# ---- listings ----

def test_listings_are_filtered(sandboxed, tree):
    out = probe(sandboxed, """\
        import glob, pathlib
        t("listdir", lambda: sorted(os.listdir("data")))
        t("listdir_bytes", lambda: sorted(os.listdir(b"data")))
        def sc_with():
            with os.scandir("data") as it:
                return sorted(e.name for e in it)
        def sc_plain():
            it = os.scandir("data")
            names = sorted(e.name for e in it)
            it.close()
            return names
        def sc_entry():
            e = [e for e in os.scandir("data") if e.name == "f.txt"][0]
            return (type(e).__name__, e.path, e.is_file())
        t("scandir_with", sc_with)
        t("scandir_plain", sc_plain)
        t("scandir_entry", sc_entry)
        t("glob", lambda: sorted(glob.glob("data/*")))
        data = pathlib.Path("data")
        t("pathglob", lambda: sorted(p.name for p in data.glob("*")))
        t("rglob", lambda: sorted(p.name for p in data.rglob("*.txt")))
        t("walk", lambda: sorted(d for d, _, _ in os.walk("data")))
        t("listdir_out", lambda: os.listdir("outside"))
        t("scandir_out", lambda: list(os.scandir("outside")))
        t("glob_out", lambda: glob.glob("outside/*"))
        t("pathglob_out", lambda: list(pathlib.Path("outside").glob("*")))
        """)
    names = "['f.txt', 'g.txt', 'link_in', 'sub']"
    assert out["listdir"] == f"OK {names}"
    assert out["listdir_bytes"] == "OK [b'f.txt', b'g.txt', b'link_in', b'sub']"
    assert out["scandir_with"] == f"OK {names}"
    assert out["scandir_plain"] == f"OK {names}"
    assert out["scandir_entry"] == "OK ('DirEntry', 'data/f.txt', True)"
    assert out["glob"] == ("OK ['data/f.txt', 'data/g.txt', 'data/link_in', "
                           "'data/sub']")
    assert out["pathglob"] == f"OK {names}"
    assert out["rglob"] == "OK ['f.txt', 'g.txt', 'h.txt']"
    assert out["walk"] == "OK ['data', 'data/sub']"
    outside = not_accepted(f"{tree}/outside")
    assert out["listdir_out"] == outside
    assert out["scandir_out"] == outside
    # a refused root globs to nothing, as a missing one does under python
    assert out["glob_out"] == "OK []"
    assert out["pathglob_out"] == "OK []"


def test_listing_leads_to_exposures(sandboxed, tree):
    """A directory above an exposure is listed with only the way down, and
    a symlink on that way can be followed by os.path.realpath()."""
    os.symlink("data", os.path.join(tree, "way"))
    os.symlink("outside", os.path.join(tree, "away"))
    out = probe(sandboxed, """\
        here = os.getcwd()
        t("parent", lambda: sorted(os.listdir(here)))
        t("stat", lambda: os.path.isdir(here))
        t("open_out", lambda: open(os.path.join(here, "outside/secret.txt")))
        t("readlink_way", lambda: os.readlink("way"))
        t("realpath", lambda: os.path.realpath("way/sub/h.txt"))
        t("read_via_way", lambda: open("way/sub/h.txt").read())
        t("readlink_away", lambda: os.readlink("away"))
        t("chdir_parent", lambda: os.chdir("data"))
        """, rules="python-import=*\nexpose-ro=./data/sub\n")
    # script.py is exposed alone so that python can run it
    assert out["parent"] == "OK ['data', 'script.py', 'way']"
    assert out["stat"] == "OK True"
    assert out["open_out"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["readlink_way"] == "OK 'data'"
    assert out["realpath"] == f"OK '{tree}/data/sub/h.txt'"
    assert out["read_via_way"] == "OK 'h'"
    # the link itself is not readable here: the refusal names the link
    assert out["readlink_away"] == not_accepted(f"{tree}/away")
    # listing and stat only: the directory itself is not exposed
    assert out["chdir_parent"] == not_accepted(f"{tree}/data")


# ---- other calls ----

def test_chdir_and_relative_paths(sandboxed, tree):
    out = probe(sandboxed, """\
        t("chdir_out", lambda: os.chdir("outside"))
        t("chdir_in", lambda: os.chdir("data/sub"))
        t("rel_after", lambda: open("h.txt").read())
        t("up_after", lambda: open("../f.txt").read())
        t("out_after", lambda: open("../../outside/secret.txt").read())
        """)
    assert out["chdir_out"] == not_accepted(f"{tree}/outside")
    assert out["chdir_in"] == "OK None"
    assert out["rel_after"] == "OK 'h'"
    assert out["up_after"] == "OK 'hello'"
    assert out["out_after"] == not_accepted(f"{tree}/outside/secret.txt")


def test_the_remembered_cwd_and_stat_follow_changes(sandboxed, tree):
    """The guard remembers the working directory and takes a stat of a name
    that is no link in one lstat (guard/pathwalk.h, files.c stat_entry):
    a chdir, an fchdir, a rename of the cwd and a file swapped for a link
    each change the next verdict. rw/a/s.txt is masked: once rw/a is
    renamed rw/c, s.txt in the cwd is rw/c/s.txt, which is not (a guard
    that kept the old cwd refuses it)."""
    out = probe(sandboxed, """\
        here = os.getcwd()
        os.makedirs("rw/a")
        open("rw/a/x.txt", "w").write("x")
        os.chdir("rw/a")
        t("stat_a", lambda: os.stat("x.txt").st_size)
        t("masked_a", lambda: open("s.txt", "w"))
        t("rename", lambda: os.rename("../a", "../c"))
        t("write_c", lambda: open("s.txt", "w").write("sc"))
        t("stat_c", lambda: os.stat("s.txt").st_size)
        t("fchdir", lambda: os.fchdir(os.open(here + "/data/sub",
                                              os.O_RDONLY)))
        t("stat_sub", lambda: os.stat("h.txt").st_size)
        t("out_sub", lambda: os.stat("../../outside/secret.txt"))
        t("write_sub", lambda: open("n.txt", "w"))
        t("back", lambda: os.chdir(here + "/rw"))
        t("file", lambda: open("l", "w").write("l"))
        t("stat_file", lambda: os.stat("l").st_size)
        os.remove("l")
        os.symlink("../data/f.txt", "l")
        t("link_in", lambda: os.stat("l").st_size)
        t("lstat_link", lambda: os.path.islink("l"))
        t("link_out", lambda: os.stat("../data/link_abs"))
        os.remove("l")
        open("l", "w").write("ll")
        t("file_again", lambda: os.stat("l").st_size)
        t("missing", lambda: os.stat("none"))
        """, rules=RULES + f"ignore={tree}/rw/a/s.txt\n")
    assert out["stat_a"] == "OK 1"
    assert out["masked_a"].startswith("RuleFileNotFoundError: "), out
    assert out["rename"] == "OK None"
    assert out["write_c"] == "OK 2"
    assert out["stat_c"] == "OK 2"
    assert out["fchdir"] == "OK None"
    assert out["stat_sub"] == "OK 1"
    assert out["out_sub"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["write_sub"] == (f"RulePermissionError: Cannot write to "
                                f"'{tree}/data/'. {RO_REF}"), out
    assert out["back"] == "OK None"
    assert out["stat_file"] == "OK 1"
    assert out["link_in"] == "OK 5"
    assert out["lstat_link"] == "OK True"
    assert out["link_out"] == not_accepted(f"{tree}/data/link_abs")
    assert out["file_again"] == "OK 2"
    assert out["missing"].startswith("FileNotFoundError: "), out["missing"]


def test_shutil_and_tempfile(sandboxed, tree):
    out = probe(sandboxed, """\
        import shutil, tempfile
        t("copy_in", lambda: shutil.copy("data/f.txt", "rw/c.txt"))
        t("copy_out", lambda: shutil.copy("outside/secret.txt", "rw/s.txt"))
        t("copy_to_ro", lambda: shutil.copy("rw/w.txt", "data/w.txt"))
        t("copytree", lambda: shutil.copytree("data", "rw/tree") and
          sorted(os.listdir("rw/tree")))
        t("rmtree", lambda: shutil.rmtree("rw/tree"))
        t("rmtree_ro", lambda: shutil.rmtree("data/sub"))
        t("mkstemp_rw", lambda: os.close(tempfile.mkstemp(dir="rw")[0]))
        t("mkstemp_ro", lambda: tempfile.mkstemp(dir="data"))
        t("move_out", lambda: shutil.move("data/g.txt", "rw/g.txt"))
        """)
    denied = f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}"
    assert out["copy_in"] == "OK 'rw/c.txt'"
    assert out["copy_out"] == not_accepted(f"{tree}/outside/secret.txt")
    assert out["copy_to_ro"] == denied
    # the copy holds what the program may see, nothing more
    assert out["copytree"] == "OK ['f.txt', 'g.txt', 'link_in', 'sub']"
    assert out["rmtree"] == "OK None"
    assert out["rmtree_ro"] == denied
    assert out["mkstemp_rw"] == "OK None"
    assert out["mkstemp_ro"] == denied
    assert out["move_out"] == denied
    assert os.path.exists(os.path.join(tree, "data/sub/h.txt"))


def test_sqlite_database_outside(sandboxed, tree, python_exe):
    out = probe(sandboxed, """\
        import sqlite3
        if sys.version_info < (3, 10):
            print("old: python without the sqlite3.connect event")
        t("out", lambda: sqlite3.connect("outside/db.sqlite"))
        def uri(u):
            sqlite3.connect(u, uri=True).close()
        t("uri", lambda: uri("file:outside/db.sqlite?mode=ro"))
        t("uri_in", lambda: uri("file:rw/u.sqlite"))
        t("ro", lambda: sqlite3.connect("data/db.sqlite"))
        t("rw", lambda: sqlite3.connect("rw/db.sqlite").close())
        t("memory", lambda: sqlite3.connect(":memory:").close())
        """)
    if "old" in out:
        pytest.skip("CPython 3.9 raises no sqlite3.connect audit event")
    assert out["out"] == not_accepted(f"{tree}/outside/db.sqlite")
    assert out["uri"] == not_accepted(f"{tree}/outside/db.sqlite")
    assert out["uri_in"] == "OK None"
    assert out["ro"] == (
        f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}")
    assert out["rw"] == "OK None"
    assert out["memory"] == "OK None"


# ---- implicit exposures ----

def test_script_runs_and_imports_stdlib(sandboxed, tree):
    """No expose rule at all: the interpreter's trees and the script file
    are exposed implicitly, read-only; the script's directory is not."""
    out = probe(sandboxed, """\
        import json, collections, pathlib, email.parser, decimal
        t("json", lambda: json.dumps({"a": 1}))
        t("decimal", lambda: str(decimal.Decimal("1.5") * 2))
        t("own", lambda: open(__file__).read(6))
        t("sibling", lambda: open("data/f.txt").read())
        t("exe", lambda: os.path.exists(sys.executable))
        t("stdlib_write", lambda: open(os.path.join(
            os.path.dirname(os.__file__), "x.py"), "w"))
        """, rules="python-import=*\n")
    assert out["json"] == "OK '{\"a\": 1}'"
    assert out["decimal"] == "OK '3.0'"
    assert out["own"] == "OK 'import'"
    assert out["sibling"] == not_accepted(f"{tree}/data/f.txt")
    assert out["exe"] == "OK True"
    assert out["stdlib_write"].startswith(
        "RulePermissionError: Cannot write to '")
    assert out["stdlib_write"].endswith("' from <python>")


def test_traceback_shows_the_refusal(sandboxed, tree):
    r = sandboxed("python-import=*\n", "open('/etc/passwd')\n")
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.endswith("RuleFileNotFoundError: Access to '/etc/passwd' "
                         "must be accepted by a rule."), r.stderr
    assert "open('/etc/passwd')" in r.stderr  # the script's source is read


@pytest.mark.unprivileged
def test_unprivileged_user(run_sb, tmp_cwd):
    os.makedirs(tmp_cwd / "rw")
    if os.geteuid() == 0:
        os.chown(tmp_cwd / "rw", 65534, 65534)
    (tmp_cwd / ".py-sandboxes").write_text(
        "python-import=*\nexpose-rw=./rw\n")
    (tmp_cwd / "script.py").write_text(PRELUDE + textwrap.dedent("""\
        t("w", lambda: open("rw/a", "w").write("1"))
        t("r", lambda: open("/etc/hostname").read())
        """))
    r = run_sb(["script.py"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "w: OK 1",
        "r: " + not_accepted("/etc/hostname"),
    ]


def test_a_path_like_answering_twice_is_read_once(sandboxed, tmp_cwd):
    """os.stat and the rest got the path-like object itself after the
    guard judged its first __fspath__ answer: the original called it again
    and stat()ed another file. The guard now hands on the path judged."""
    (tmp_cwd / "a").write_text("x")
    code = textwrap.dedent("""\
        import os
        class P:
            n = 0
            def __fspath__(self):
                P.n += 1
                return 'a' if P.n % 2 else '/etc/passwd'
        out = []
        for fn in (os.stat, os.lstat):
            P.n = 0
            out.append(fn(P()).st_ino == os.stat('a').st_ino)
        P.n = 0
        with open(P()) as f:
            out.append(f.read() == 'x')
        print(out)
        """)
    r = sandboxed("python-import=os\nexpose-ro=.\n", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[True, True, True]\n", r.stdout


def test_a_follow_flag_answering_twice_is_read_once(sandboxed, tmp_cwd):
    """follow_symlinks= is read with truth(): an object whose __bool__
    answered False to the guard (the link itself, inside the rules) and
    True to the original stat()ed the link's target outside the rules, and
    os.access() said it was readable. The guard now reads the flag once
    and hands on True or False."""
    (tmp_cwd / "lnk").symlink_to("/etc/shadow")
    code = textwrap.dedent("""\
        import os
        class B:
            n = 0
            def __bool__(self):
                B.n += 1
                return B.n != 1
        st = os.stat("lnk", follow_symlinks=B())
        print("stat", st.st_size == os.lstat("lnk").st_size)
        B.n = 0
        print("access", os.access("lnk", os.R_OK, follow_symlinks=B()),
              os.access("lnk", os.R_OK))
        """)
    r = sandboxed("os-sandbox=subprocess\npython-import=os\n"
                  "expose-ro=.\n", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "stat True\naccess True False\n", r.stdout


def test_a_dir_fd_that_is_an_index_is_read_once(sandboxed, tmp_cwd,
                                                python_exe):
    """A dir_fd that is not an int but has __index__ was judged as the
    current directory, while the original opened relative to the directory
    __index__ named: a path allowed from here (the interpreter's own tree,
    reached by '..' up to the root) read a file outside the rules from
    there. The guard now makes it its int once. Under os-sandbox=subprocess,
    where the Python layer is the only wall; the secret is not printed."""
    stdlib = subprocess.run([python_exe, "-c", "import os; print("
                             "os.path.dirname(os.path.realpath(os.__file__)))"],
                            capture_output=True, text=True,
                            check=True).stdout.strip()
    secret = tmp_cwd / stdlib.lstrip("/") / "os.py"
    secret.parent.mkdir(parents=True)
    secret.write_text("TOPSECRET")
    (tmp_cwd / "inner" / "deep").mkdir(parents=True)
    up = "../" * (len(tmp_cwd.resolve().parts) - 1)
    code = textwrap.dedent(f"""\
        import os
        class Idx:
            def __init__(self, fd):
                self.fd = fd
            def __index__(self):
                return self.fd
        fd = os.open("inner/deep", os.O_RDONLY)
        path = {up + stdlib.lstrip("/") + "/os.py"!r}
        for label, d in (("int", fd), ("index", Idx(fd))):
            try:
                f = os.open(path, os.O_RDONLY, dir_fd=d)
                print(label, os.read(f, 20))
            except OSError as e:
                print(label, type(e).__name__)
        """)
    r = sandboxed("os-sandbox=subprocess\npython-import=os\n"
                  "expose-ro=./inner\n", code)
    assert r.returncode == 0, r.stderr
    assert "TOPSECRET" not in r.stdout, r.stdout
    assert r.stdout == ("int RuleFileNotFoundError\n"
                        "index RuleFileNotFoundError\n"), r.stdout


def test_a_dir_fd_that_is_no_directory_fails_as_without_the_guard(
        sandboxed, tmp_cwd, python_exe):
    """A relative path with a dir_fd that is closed or not a directory
    touches nothing: the call fails with EBADF or ENOTDIR. The guard, which
    cannot locate the path, raised its refusal instead; it now raises the
    call's own OSError (bytes names stay bytes). And a bool dir_fd warns on
    3.13 and later, before the guard may refuse, as the call does, once.
    An object whose __fspath__ is None is no path: the call's own
    TypeError, not os.fspath()'s.
    Same output plain and sandboxed, on every interpreter."""
    code = textwrap.dedent("""\
        import os, warnings
        warnings.simplefilter("always")
        def show(label, fn):
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                try:
                    r = fn()
                except OSError as e:
                    r = "%s %r" % (type(e).__name__, e.filename)
            print(label, r, [str(w.message) for w in ws])
        r, w = os.pipe()
        show("stat", lambda: os.stat("x", dir_fd=r))
        show("stat-bytes", lambda: os.stat(b"x", dir_fd=9999))
        show("lstat", lambda: os.lstat("x", dir_fd=w))
        show("open", lambda: os.open(b"x", os.O_RDONLY, dir_fd=r))
        show("access", lambda: os.access("x", os.R_OK, dir_fd=r))
        show("mkdir", lambda: os.mkdir("x", dir_fd=r))
        show("bool", lambda: os.stat("nonexisting", dir_fd=True))
        show("bool-false", lambda: os.stat("nonexisting", dir_fd=False))
        show("absolute", lambda: os.stat(os.getcwd() + "/nonexisting",
                                         dir_fd=r))
        class NoPath:
            __fspath__ = None
        for fn in os.stat, os.lstat, os.listdir:
            try:
                fn(NoPath())
            except TypeError as e:
                print(e)
        """)
    plain = subprocess.run([python_exe, "-c", code], capture_output=True,
                           text=True, cwd=tmp_cwd)
    assert plain.returncode == 0, plain.stderr
    r = sandboxed("os-sandbox=subprocess\npython-import=os,warnings\n"
                  "expose-rw=.\n", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    assert "stat NotADirectoryError 'x' []\n" in r.stdout
    assert "absolute FileNotFoundError '%s/nonexisting' []\n" % (
        tmp_cwd.resolve()) in r.stdout
    assert "stat-bytes OSError b'x' []\n" in r.stdout
