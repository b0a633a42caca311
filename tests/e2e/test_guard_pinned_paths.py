"""A path or a socket address the guard judges must be the one the call
uses (guard/args.c, guard/files.c, guard/net.c). The red team of
2026-12-03 found three ways to hand the guard one value and the call
another, on every CPython found:

- io.FileIO(p) converts p with __fspath__, then raises "open" with p
  itself, and sqlite3.connect(p) (3.11+) raises its event before it
  converts: the guard called __fspath__ a second time, and an object that
  answers twice had FileIO read a file outside the rules and sqlite3 make
  one (sqlite3.connect now converts a path-like once itself, so a
  pathlib.Path works; FileIO refuses one);
- CPython 3.9 and 3.10 take a bytearray or memoryview as a path (os.mkdir,
  os.open...): the guard read no path from it and let the call through;
- on 3.12+, a class with __buffer__ given as an AF_UNIX address gives one
  path to connect() and another to the guard;

and two calls with no audit event, os.statvfs and os.pathconf, that told
what exists outside (FileNotFoundError or an answer). The evidence is seen
from outside: a file not made, a file not read, a listener that accepted
nobody."""
import os
import socket
import textwrap
import threading

from conftest import scaled

RULES = "learn=false\nos-sandbox=subprocess\nexpose-rw=./ok\n"

TWICE = textwrap.dedent("""\
    class Twice:
        def __init__(self, *answers):
            self.answers, self.n = answers, 0
        def __fspath__(self):
            a = self.answers[min(self.n, len(self.answers) - 1)]
            self.n += 1
            return a
    """)


def _tree(tmp_cwd):
    (tmp_cwd / "ok").mkdir()
    (tmp_cwd / "ok" / "f").write_text("inside")
    (tmp_cwd / "outside").mkdir()
    (tmp_cwd / "outside" / "secret").write_text("s3cret")


def test_a_path_like_that_answers_twice_reaches_nothing_outside(
        sandboxed, tmp_cwd):
    _tree(tmp_cwd)
    out = tmp_cwd / "outside"
    r = sandboxed(RULES + "python-import=*\n", TWICE +
                  textwrap.dedent(f"""\
        import sys, sqlite3
        FileIO = type(sys.stdout.buffer.raw)
        o, k = {str(out)!r}, {str(tmp_cwd / 'ok')!r}
        tries = {{
            'read': lambda: FileIO(Twice(o + '/secret', k + '/f')).read(),
            'write': lambda: FileIO(Twice(o + '/made', k + '/g'), 'w'),
            'db first': lambda: sqlite3.connect(
                Twice(o + '/db1', k + '/db')).execute('create table t(x)'),
            'db then': lambda: sqlite3.connect(
                Twice(k + '/db', o + '/db2')).execute('create table t(x)'),
        }}
        for label, fn in tries.items():
            try:
                print(label, 'returned', fn())
            except Exception as e:
                print(label, 'raised', type(e).__name__)
        # what a program may pass: a str, a DirEntry, open() of a Path,
        # sqlite3.connect of a Path (the guard's wrapper converts it once)
        import os, pathlib
        sqlite3.connect(pathlib.Path(k + '/p.db')).execute(
            'create table t(x)')
        print(FileIO(k + '/f').read(), FileIO(next(os.scandir(k))).read(),
              open(pathlib.Path(k + '/f')).read())
        """))
    assert r.returncode == 0, r.stderr
    assert "s3cret" not in r.stdout
    assert sorted(os.listdir(out)) == ["secret"], r.stdout
    lines = r.stdout.splitlines()
    # 3.9 and 3.10 convert before the event, which then names ok/db
    # ('db then' opens it); 3.11+ raise it first: refused
    for label in ("read", "write", "db first"):
        assert f"{label} raised RulePermissionError" in lines or \
            f"{label} raised RuleFileNotFoundError" in lines, r.stdout
    assert lines[-1] == "b'inside' b'inside' inside", r.stdout
    assert (tmp_cwd / "ok" / "p.db").exists()


def test_a_bytes_like_path_is_judged(sandboxed, tmp_cwd):
    """3.9 and 3.10 take a bytes-like path; later versions refuse it
    themselves (TypeError): nothing is made or read either way."""
    _tree(tmp_cwd)
    out = tmp_cwd / "outside"
    r = sandboxed(RULES, textwrap.dedent(f"""\
        import sys
        posix = sys.modules['posix']
        o = {str(out).encode()!r}
        for kind in (bytearray, memoryview):
            for label, fn in {{
                'mkdir': lambda: posix.mkdir(kind(o + b'/d')),
                'open': lambda: posix.read(posix.open(kind(o + b'/secret'),
                                                      0), 99),
                'rename': lambda: posix.rename(kind(o + b'/secret'),
                                               kind(o + b'/moved')),
                'stat': lambda: posix.stat(kind(o + b'/secret')).st_size,
            }}.items():
                try:
                    print(kind.__name__, label, 'returned', fn())
                except Exception as e:
                    print(kind.__name__, label, 'raised', type(e).__name__)
        """))
    assert r.returncode == 0, r.stderr
    assert "returned" not in r.stdout, r.stdout
    assert sorted(os.listdir(out)) == ["secret"]


def test_a_unix_address_read_twice_reaches_no_listener(sandboxed, tmp_cwd):
    _tree(tmp_cwd)
    path = str(tmp_cwd / "outside" / "sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)
    srv.settimeout(scaled(20))
    got = []

    def serve():
        try:
            c, _ = srv.accept()
            got.append(c.recv(16))
        except OSError:
            pass
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        r = sandboxed(RULES + "python-import=*\n", textwrap.dedent(f"""\
            import socket
            class Twice:
                n = 0
                def __buffer__(self, flags):
                    Twice.n += 1
                    return memoryview({path.encode()!r} if Twice.n == 1
                                      else b'ok/sock')
            class B(bytes):
                n = 0
                def __buffer__(self, flags):
                    B.n += 1
                    return memoryview({path.encode()!r} if B.n == 1
                                      else b'ok/sock')
            for a in (Twice(), B(b'ok/sock')):
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(a)
                    s.sendall(b'escaped')
                    print('connected')
                except Exception as e:
                    print('raised', type(e).__name__)
            # what a program may pass
            for a in ('ok/none', b'ok/none', bytearray(b'ok/none'),
                      memoryview(b'ok/none')):
                try:
                    socket.socket(socket.AF_UNIX).connect(a)
                except Exception as e:
                    print(type(e).__name__)
            """))
    finally:
        srv.close()
        t.join(scaled(5))
    assert r.returncode == 0, r.stderr
    assert got == [], r.stdout
    assert "connected" not in r.stdout
    assert r.stdout.splitlines()[-4:] == ["FileNotFoundError"] * 4, r.stdout


def test_statvfs_and_pathconf_tell_nothing_outside(sandboxed, tmp_cwd):
    _tree(tmp_cwd)
    o = str(tmp_cwd / "outside")
    r = sandboxed(RULES, textwrap.dedent(f"""\
        import sys
        posix = sys.modules['posix']
        for name in ('secret', 'none'):
            for label, fn in (('statvfs', lambda: posix.statvfs(p)),
                              ('pathconf', lambda: posix.pathconf(p, 0))):
                p = {o!r} + '/' + name
                try:
                    fn()
                    print(label, name, 'returned')
                except Exception as e:
                    print(label, name, 'raised', type(e).__name__)
        print(posix.statvfs('ok').f_bsize > 0, posix.pathconf('ok/f', 0) > 0)
        """))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "statvfs secret raised RuleFileNotFoundError",
        "pathconf secret raised RuleFileNotFoundError",
        "statvfs none raised RuleFileNotFoundError",
        "pathconf none raised RuleFileNotFoundError",
        "True True"], r.stdout
