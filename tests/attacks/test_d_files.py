"""Group D of attacks.md: the file system. Each case lays out data/
(expose-ro), rw/ (expose-rw) and outside/ (no rule) in its directory, with
links from data/ to outside/. The file guard judges the canonical path
before the kernel is asked, so the refusals are the guard's; under
landlock the kernel stands behind it (group N shows it alone)."""

import os
import re
import shutil
import socket
import tempfile
import threading

import pytest

from harness import attack, qemu_column

RULES = "python-import=*\nexpose-ro=./data\nexpose-rw=./rw\n"
RO_REF = "Rule 'expose-ro=./data' from .py-sandboxes(2)"
NOT_FOUND = "RuleFileNotFoundError"
NO_WRITE = "RulePermissionError"


def not_accepted(path):
    return f"Access to '{path}' must be accepted by a rule."


@pytest.fixture
def tree(case):
    case.mkdir("data", "rw", "outside")
    case.write("data/f.txt", "hello")
    case.write("outside/secret.txt", "s3cret")
    os.symlink(case.path("outside/secret.txt"), case.path("data/link_abs"))
    os.symlink("../outside/secret.txt", case.path("data/link_rel"))
    return case


@qemu_column()
@attack("D1", "Read or write outside expose-ro / expose-rw")
def test_D1(tree, judge):
    out = tree.run(RULES, {
        "shadow": "return open('/etc/shadow').read()",
        "outside": "return open('outside/secret.txt').read()",
        "write_ro": "open('data/f.txt', 'w').write('x')",
    })
    judge.python(out["shadow"], NOT_FOUND, not_accepted("/etc/shadow"))
    judge.python(out["outside"], NOT_FOUND,
                 not_accepted(tree.path("outside/secret.txt")))
    judge.python(out["write_ro"], NO_WRITE,
                 f"Cannot write to '{tree.path('data')}/'. {RO_REF}")


@attack("D2", "A symlink inside the scope pointing outside")
def test_D2(tree, judge):
    out = tree.run(RULES, {
        "abs": "return open('data/link_abs').read()",
        "rel": "return open('data/link_rel').read()",
    })
    judge.python(out["abs"], NOT_FOUND,
                 not_accepted(tree.path("data/link_abs")))
    judge.python(out["rel"], NOT_FOUND,
                 not_accepted(tree.path("data/link_rel")))


@attack("D3", "Create a symlink that targets outside the scope")
def test_D3(tree, judge):
    out = tree.run(RULES, {
        "abs": "import os\nos.symlink('/etc/shadow', 'rw/l1')",
        "rel": "import os\nos.symlink('../outside/secret.txt', 'rw/l2')",
    })
    judge.python(out["abs"], NOT_FOUND, not_accepted("/etc/shadow"))
    judge.python(out["rel"], NOT_FOUND,
                 not_accepted(tree.path("outside/secret.txt")))
    assert not os.path.lexists(tree.path("rw/l1"))


@attack("D4", "The posix twin of the os file calls (posix.open)")
def test_D4(tree, judge):
    out = tree.run(RULES, {
        "read": "import posix\nreturn posix.open('/etc/shadow', 0)",
        "write": "import os, posix\n"
                 "return posix.open('data/f.txt', os.O_WRONLY)",
    })
    judge.python(out["read"], NOT_FOUND, not_accepted("/etc/shadow"))
    judge.python(out["write"], NO_WRITE,
                 f"Cannot write to '{tree.path('data')}/'. {RO_REF}")


@attack("D5", "os.open with flags instead of open()")
def test_D5(tree, judge):
    out = tree.run(RULES, {
        "read": "import os\nreturn os.open('outside/secret.txt', "
                "os.O_RDONLY)",
        "trunc": "import os\nreturn os.open('data/f.txt', os.O_RDONLY | "
                 "os.O_TRUNC)",
        "tmpfile": "import os\nreturn os.open('data', os.O_TMPFILE | "
                   "os.O_RDWR)",
    })
    judge.python(out["read"], NOT_FOUND,
                 not_accepted(tree.path("outside/secret.txt")))
    for label in ("trunc", "tmpfile"):
        judge.python(out[label], NO_WRITE,
                     f"Cannot write to '{tree.path('data')}/'. {RO_REF}")


@attack("D21", "The parent's environment through /proc/<ppid>/environ")
def test_D21(tree, judge):
    # the parent is this test process, or python-sb when it stays to
    # supervise the run: either way outside the sandbox
    out = tree.run(RULES, {
        "ppid": "import os\n"
                "return open(f'/proc/{os.getppid()}/environ').read()",
        "self": "return open('/proc/self/environ').read()",
    })
    judge.python(out["ppid"], NOT_FOUND,
                 re.compile(re.escape(not_accepted("/proc/@/environ"))
                            .replace("@", "[0-9]+")))
    judge.python(out["self"], NOT_FOUND, not_accepted("/proc/self/environ"))


@attack("D22", "Write the process's own memory (/proc/self/mem)")
def test_D22(tree, judge):
    out = tree.run(RULES, {"mem": """
        f = open('/proc/self/mem', 'r+b', buffering=0)
        f.seek(id(1))
        return f.write(b'x')
        """})
    judge.python(out["mem"], NOT_FOUND, not_accepted("/proc/self/mem"))


@pytest.fixture
def host_socket(case):
    """A Unix socket outside every rule, like /var/run/docker.sock: a
    listener in a directory of its own that anyone may reach."""
    d = tempfile.mkdtemp(prefix="pysb-attack-run-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "docker.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    os.chmod(path, 0o777)
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.sendall(b"pong")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    yield path
    srv.close()
    shutil.rmtree(d, ignore_errors=True)


@attack("D26", "A host Unix socket under /run (docker.sock, D-Bus)")
def test_D26(tree, judge, host_socket):
    out = tree.run(RULES, {"docker": f"""
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect({host_socket!r})
        return s.recv(4)
        """})
    judge.python(out["docker"], "RuleSocketConnectionRefusedError",
                 f"Guard connect to AF_UNIX socket '{host_socket}' DENIED: "
                 "no expose-ro=/expose-rw= rule covers this path.")


# SQLite decodes %XX in a URI's parameter names too, and lets the last
# "mode" and "vfs" win: a name the guard read as written was judged as
# an in-memory database, or a read, and SQLite opened a file.
SQLITE_URIS = {
    "mode_key": "file:{d}/outside/a.db?mode=memory&mod%65=rwc",
    "vfs_key": "file:{d}/outside/b.db?vfs=memdb&vf%73=unix",
    "ro_key": "file:{d}/data/c.db?mode=ro&mod%65=rw",
}


@attack("D30", "SQLite URIs read as SQLite decodes them (%XX in parameter "
        "names, the last mode= and vfs=, modeof=)")
def test_D30(tree, judge):
    probes = {}
    for label, uri in SQLITE_URIS.items():
        probes[label] = f"""
            import os, sqlite3
            u = {uri!r}.format(d=os.getcwd())
            sqlite3.connect(u, uri=True).execute('create table t(a)')
            """
    probes["attach_key"] = f"""
        import os, sqlite3
        u = {SQLITE_URIS['mode_key'].replace('a.db', 'e.db')!r}
        c = sqlite3.connect(':memory:')
        c.execute("attach '" + u.format(d=os.getcwd()) + "' as w")
        c.execute('create table w.t(a)')
        """
    # modeof= makes the unix VFS stat() a file to copy its mode and owner:
    # whether a name outside exists, and what its mode is
    probes["modeof"] = """
        import os, sqlite3
        d = os.getcwd()
        u = f'file:{d}/rw/m.db?modeof={d}/outside/secret.txt'
        sqlite3.connect(u, uri=True).execute('create table t(a)')
        return oct(os.stat('rw/m.db').st_mode)
        """
    # the data/ database the ro_key probe would write into
    tree.write("data/c.db", "")
    out = tree.run(RULES, probes)
    for label, name in (("mode_key", "a.db"), ("vfs_key", "b.db"),
                        ("attach_key", "e.db")):
        judge.python(out[label], NOT_FOUND,
                     not_accepted(tree.path(f"outside/{name}")))
        assert not os.path.exists(tree.path(f"outside/{name}"))
    judge.python(out["ro_key"], NO_WRITE,
                 f"Cannot write to '{tree.path('data')}/'. {RO_REF}")
    assert os.path.getsize(tree.path("data/c.db")) == 0
    judge.python(out["modeof"], NOT_FOUND,
                 not_accepted(tree.path("outside/secret.txt")))


@attack("D31", "a file outside read by the C library through the "
        "environment: TZ and time.tzset(), TZDIR, LOCPATH, HOSTALIASES")
def test_D31(tree, judge):
    """glibc's tzset() reads the zone file $TZ names (":path", a path,
    or a name under $TZDIR that ".." climbs out of) with no event: the
    program read a file outside the rules (here a zone file's
    abbreviation, JST; any file: whether it exists) while open() of it
    was refused. TZ, TZDIR, LOCPATH and HOSTALIASES (the resolver's alias
    file) are judged when set: the zone file as TZ and TZDIR name it
    together, whichever is set first; a relative directory or file, which
    glibc reads against the directory of a later moment, and a value too
    long to judge whole, are refused; GCONV_PATH (converters glibc loads)
    needs the native grant."""
    zone = "/usr/share/zoneinfo/Asia/Tokyo"
    if not os.path.exists(zone):
        pytest.skip(f"no {zone} to copy")
    shutil.copy(zone, tree.path("outside/zone"))
    shutil.copy(zone, tree.path("data/hidden_zone"))
    out = tree.run(RULES + "ignore=hidden_zone\n", {
        "abs": """
            import os, time
            os.environ['TZ'] = ':' + os.getcwd() + '/outside/zone'
            time.tzset()
            return time.tzname
            """,
        "dotdot": """
            import os, time
            up = '../../../../..'
            os.environ['TZ'] = up + os.getcwd() + '/outside/zone'
            time.tzset()
            return time.tzname
            """,
        "tzdir": """
            import os
            os.environ['TZDIR'] = os.getcwd() + '/outside'
            """,
        "locpath": """
            import os
            os.environ['LOCPATH'] = os.getcwd() + '/outside'
            """,
        "hostaliases": """
            import os
            os.environ['HOSTALIASES'] = 'outside/zone'
            """,
        # a name under a TZDIR the rules expose, of a file they hide,
        # whichever of the two is set first
        "tzdir_then_tz": """
            import os, time
            os.environ['TZDIR'] = os.getcwd() + '/data'
            os.environ['TZ'] = 'hidden_zone'
            time.tzset()
            return time.tzname
            """,
        "tz_then_tzdir": """
            import os, time
            os.environ['TZ'] = 'hidden_zone'
            os.environ['TZDIR'] = os.getcwd() + '/data'
            time.tzset()
            return time.tzname
            """,
        # glibc splits LOCPATH on ':' whatever its length
        "locpath_long": """
            import os
            os.environ['LOCPATH'] = os.getcwd() + '/outside' + ':' * 5000
            """,
        # glibc loads character set converters from GCONV_PATH: native
        "gconv": """
            import os
            os.environ['GCONV_PATH'] = os.getcwd() + '/rw'
            """,
        # a zone of the system's, and a POSIX string, name no file of the
        # program's choice
        "tokyo": """
            import os, time
            os.environ.pop('TZDIR', None)  # the probes share a process
            os.environ['TZ'] = 'Asia/Tokyo'
            time.tzset()
            return time.tzname
            """,
    })
    for label in ("abs", "dotdot"):
        judge.python(out[label], NOT_FOUND,
                     not_accepted(tree.path("outside/zone")))
    for label in ("tzdir", "locpath"):
        judge.python(out[label], NOT_FOUND,
                     not_accepted(tree.path("outside")))
    judge.python(out["hostaliases"], NO_WRITE,
                 "HOSTALIASES names files glibc reads by itself, and this "
                 "value is relative: refused")
    for label in ("tzdir_then_tz", "tz_then_tzdir"):
        judge.python(out[label], NOT_FOUND,
                     re.compile(r".*hidden_zone.*"))
    judge.python(out["locpath_long"], NO_WRITE,
                 "LOCPATH names files glibc reads by itself, and this value "
                 "is too long or holds a NUL: refused")
    judge.python(out["gconv"], NO_WRITE,
                 "Setting GCONV_PATH lets glibc load character set "
                 "converters (native code) from the directories it names: "
                 "it needs the rule python-api=ALLOW:native")
    assert out["tokyo"].msg == "('JST', 'JST')", out["tokyo"]


def sqlite_wal_db(path):
    """A database in WAL mode, closed (no -wal or -shm beside it)."""
    import sqlite3
    c = sqlite3.connect(path)
    c.execute("pragma journal_mode=wal")
    c.execute("create table t(a)")
    c.execute("insert into t values (1)")
    c.commit()
    c.close()
    assert not os.path.exists(path + "-wal")


@attack("D40", "SQLite makes files beside a database: its journal, "
        "write-ahead log and index, unix-dotfile's lock directory, and "
        "the -wal and -shm of a WAL database opened read-only")
def test_D40(tree, judge):
    """A database the rules let write (expose-rw= of the file alone) got
    its rollback journal made beside it, outside the rules; one in WAL
    mode opened with mode=ro got its -wal and -shm made and written in a
    read-only tree; vfs=unix-dotfile made <db>.lock. Each of those files
    is judged as a write when the database is opened; a VFS that is not
    SQLite's own is refused."""
    tree.mkdir("solo")
    tree.write("solo/db.sqlite", "")
    sqlite_wal_db(tree.path("data/w.db"))
    sqlite_wal_db(tree.path("data/w2.db"))
    tree.write("data/c.db", "")
    out = tree.run(RULES + "expose-rw=./solo/db.sqlite\n", {
        "journal": """
            import sqlite3
            c = sqlite3.connect('solo/db.sqlite')
            c.execute('pragma journal_mode=persist')
            c.execute('create table t(a)')
            c.commit()
            """,
        "attach": """
            import sqlite3
            c = sqlite3.connect(':memory:')
            c.execute("attach 'solo/db.sqlite' as s")
            c.execute('pragma s.journal_mode=persist')
            c.execute('create table s.t(a)')
            c.commit()
            """,
        "wal_ro": """
            import sqlite3
            c = sqlite3.connect('file:data/w.db?mode=ro', uri=True)
            return c.execute('select * from t').fetchall()
            """,
        "dotfile": """
            import sqlite3
            c = sqlite3.connect('file:data/c.db?mode=ro&vfs=unix-dotfile',
                                uri=True)
            return c.execute('select * from sqlite_master').fetchall()
            """,
        "vfs": """
            import sqlite3
            sqlite3.connect('file:rw/v.db?vfs=unix-nope', uri=True)
            """,
        # what the rules allow still works: a database in a tree they
        # let write, a WAL one read as immutable
        "rw": """
            import sqlite3
            c = sqlite3.connect('rw/ok.db')
            c.execute('pragma journal_mode=wal')
            c.execute('create table t(a)')
            c.commit()
            return 'ok'
            """,
        "immutable": """
            import sqlite3
            c = sqlite3.connect('file:data/w2.db?mode=ro&immutable=1',
                                uri=True)
            return c.execute('select * from t').fetchall()
            """,
    })
    ro_data = f"Cannot write to '{tree.path('data')}/'. {RO_REF}"
    for label in ("journal", "attach"):
        judge.python(out[label], NOT_FOUND,
                     "SQLite makes its journal, write-ahead log and index "
                     "beside database "
                     f"'{tree.path('solo/db.sqlite')}': "
                     + not_accepted(tree.path("solo/db.sqlite-journal")))
    assert os.listdir(tree.path("solo")) == ["db.sqlite"]
    judge.python(out["wal_ro"], NO_WRITE,
                 "SQLite makes and writes the write-ahead log and index of "
                 "a WAL database opened read-only (immutable=1 reads it "
                 f"alone), beside database '{tree.path('data/w.db')}': "
                 + ro_data)
    judge.python(out["dotfile"], NO_WRITE,
                 "the unix-dotfile VFS locks by making a directory beside "
                 f"database '{tree.path('data/c.db')}': " + ro_data)
    judge.python(out["vfs"], NO_WRITE,
                 "SQLite VFS 'unix-nope' of database 'rw/v.db' is not one "
                 "of SQLite's own: the file guard cannot judge the files "
                 "it opens")
    assert sorted(os.listdir(tree.path("data"))) == [
        "c.db", "f.txt", "link_abs", "link_rel", "w.db", "w2.db"]
    assert out["rw"].msg == "'ok'", out["rw"]
    assert out["immutable"].msg == "[(1,)]", out["immutable"]


@attack("D41", "Files named to readline and dbm, which open them in C: "
        "history and init files, ndbm databases, under the native grant")
def test_D41(tree, judge):
    """readline's history and init files and dbm's databases are opened
    in C with no audit event. Importing those modules needs the native
    grant (raw memory), yet the grant is no rule for files: a program that
    has it wrote a history file outside the rules and read one back. Each
    name is judged as open() would judge it; ndbm's files are the name
    with .dir and .pag (gdbm's compatibility) or .db (Berkeley DB)."""
    tree.write("outside/hist", "s3cret\n")
    out = tree.run(RULES + "python-api=ALLOW:native\n", {
        "write": """
            import readline
            readline.add_history('typed')
            readline.write_history_file('outside/h')
            """,
        "append": """
            import readline
            readline.append_history_file(1, 'outside/hist')
            """,
        "read": """
            import readline
            readline.read_history_file('outside/hist')
            return readline.get_history_item(
                readline.get_current_history_length())
            """,
        "init": """
            import readline
            readline.read_init_file('outside/hist')
            """,
        "ndbm": """
            try:
                import dbm.ndbm
            except ImportError:
                return 'absent'
            dbm.ndbm.open('outside/d', 'c')
            """,
        "allowed": """
            import readline
            readline.write_history_file('rw/h')
            return open('rw/h').read().splitlines()[-1]
            """,
    })
    judge.python(out["write"], NOT_FOUND, not_accepted(tree.path("outside/h")))
    for label in ("append", "read", "init"):
        judge.python(out[label], NOT_FOUND,
                     not_accepted(tree.path("outside/hist")))
    if out["ndbm"].msg != "'absent'":
        judge.python(out["ndbm"], NOT_FOUND,
                     re.compile(re.escape(not_accepted(
                         tree.path("outside/d@"))).replace("@", r"\.\w+")))
    assert sorted(os.listdir(tree.path("outside"))) == ["hist", "secret.txt"]
    with open(tree.path("outside/hist")) as f:
        assert f.read() == "s3cret\n"
    assert out["allowed"].msg == "'typed'", out["allowed"]


def mo_file(path, msgid, msgstr):
    """A gettext catalog of one message."""
    import struct
    o, t = msgid.encode(), msgstr.encode()
    data = struct.pack("<7I", 0x950412de, 0, 1, 28, 36, 0, 44)
    data += struct.pack("<2I", len(o), 44)
    data += struct.pack("<2I", len(t), 44 + len(o) + 1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data + o + b"\0" + t + b"\0")


@attack("D42", "gettext's catalogs read in C outside the rules: "
        "bindtextdomain, a text domain or $LANGUAGE holding '..'")
def test_D42(tree, judge):
    """_locale (an ordinary module) hands glibc's gettext a directory and
    a domain; gettext reads <dir>/<language>/LC_MESSAGES/<domain>.mo for
    each language of $LANGUAGE, with no event. The program read a catalog
    outside the rules (its translations; any file: whether it exists).
    bindtextdomain's directory is judged as a read, and must be absolute
    (gettext reads a relative one against the cwd of each lookup); a
    domain or a $LANGUAGE holding '/' is refused."""
    langs = [d for d in sorted(os.listdir("/usr/share/locale"))
             if os.path.isdir(f"/usr/share/locale/{d}/LC_MESSAGES")]
    if not langs:
        pytest.skip("no /usr/share/locale/*/LC_MESSAGES to climb from")
    lang = langs[0]
    mo_file(tree.path(f"outside/{lang}/LC_MESSAGES/bound.mo"), "hi", "s3cret")
    mo_file(tree.path(f"outside/{lang}/LC_MESSAGES/rel.mo"), "hi", "s3cret")
    mo_file(tree.path("outside/dom.mo"), "hi", "s3cret")
    mo_file(tree.path("outside/l/LC_MESSAGES/lang.mo"), "hi", "s3cret")
    up = "/".join([".."] * 12)
    out = tree.run(RULES, {
        "bound": f"""
            import os, locale, _locale
            os.environ['LANGUAGE'] = {lang!r}
            locale.setlocale(locale.LC_ALL, 'C.UTF-8')
            _locale.bindtextdomain('bound', os.getcwd() + '/outside')
            return _locale.dgettext('bound', 'hi')
            """,
        "domain": f"""
            import os, _locale
            return _locale.dgettext({up!r} + os.getcwd() + '/outside/dom',
                                    'hi')
            """,
        # longer than a path: the guard cannot read it whole
        "long_domain": """
            import _locale
            return _locale.dgettext('../' * 1400 + 'x', 'hi')
            """,
        "language": f"""
            import os, _locale
            os.environ['LANGUAGE'] = {up!r} + os.getcwd() + '/outside/l'
            return _locale.dgettext('lang', 'hi')
            """,
        # the system's catalogs and a directory the rules expose still work
        "allowed": """
            import os, _locale
            _locale.bindtextdomain('own', os.getcwd() + '/data')
            return _locale.dgettext('own', 'hi')
            """,
        # a relative directory is read against the cwd of each lookup:
        # judged from rw/sub, read from data/
        "relative": f"""
            import os, locale, _locale
            os.environ['LANGUAGE'] = {lang!r}
            locale.setlocale(locale.LC_ALL, 'C.UTF-8')
            top = os.getcwd()
            os.makedirs('rw/sub', exist_ok=True)
            os.chdir('rw/sub')
            _locale.bindtextdomain('rel', '../outside')
            os.chdir(top + '/data')  # the last probe: it stays there
            return _locale.dgettext('rel', 'hi')
            """,
    })
    judge.python(out["bound"], NOT_FOUND, not_accepted(tree.path("outside")))
    judge.python(out["relative"], NO_WRITE,
                 "a relative directory is read later against the working "
                 "directory of that moment, which the file guard cannot "
                 "judge now: name it by its absolute path")
    judge.python(out["domain"], NO_WRITE,
                 "a text domain holding '/' names a message catalog "
                 "outside the locale directories: refused")
    judge.python(out["long_domain"], NO_WRITE,
                 "a text domain too long for the file guard to read whole: "
                 "refused")
    judge.python(out["language"], NO_WRITE,
                 "LANGUAGE names files glibc reads by itself, and this "
                 "value holds a '/' or '..': refused")
    assert out["allowed"].msg == "'hi'", out["allowed"]


@attack("D43", "a file exposed read-only changed through a descriptor "
        "opened to read it: fchmod, chmod(fd), utime(fd), ftruncate, "
        "setxattr")
def test_D43(tree, judge):
    """The guard judged paths and let a descriptor through as it was
    (weaknesses.md 10): os.fchmod(fd) of a file opened for reading under
    expose-ro= made it writable to all, os.utime(fd) reset its times. A
    descriptor is now judged by the file behind it. The evidence is the
    file's mode, times and size seen from outside."""
    before = os.stat(tree.path("data/f.txt"))
    opened = "import os\nfd = os.open('data/f.txt', os.O_RDONLY)\n"
    out = tree.run(RULES, {
        "fchmod": opened + "os.fchmod(fd, 0o777)",
        "chmod": opened + "os.chmod(fd, 0o777)",
        "utime": opened + "os.utime(fd, (0, 0))",
        "ftruncate": opened + "os.ftruncate(fd, 0)",
        "setxattr": opened + "os.setxattr(fd, 'user.pysb', b'x')",
    })
    ro = f"Cannot write to '{tree.path('data')}/'. {RO_REF}"
    for label in ("fchmod", "chmod", "utime", "ftruncate", "setxattr"):
        judge.python(out[label], NO_WRITE, ro)
    after = os.stat(tree.path("data/f.txt"))
    assert (after.st_mode, after.st_mtime_ns, after.st_size) == (
        before.st_mode, before.st_mtime_ns, before.st_size)
    assert b"user.pysb" not in [a.encode() for a in
                                os.listxattr(tree.path("data/f.txt"))]
