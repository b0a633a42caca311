"""Files the C libraries open by a name the program hands them (guard/clibs.c,
weaknesses 100): SQLite's ATTACH DATABASE and VACUUM INTO, sqlite3's
extensions, and OpenSSL's certificate, key, DH parameter and key log files
(the key log was judged already: _ssl opens it through the "open" event).
Under os-sandbox=subprocess nothing but the guard stands between them and
the file system, so each case looks from outside, in the test process, at
what was created or written: nothing outside the rules, and the file once a
rule exposes it. The core cases run under every interpreter found.
"""
import os
import shutil
import sqlite3
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

BASE = textwrap.dedent("""\
    os-sandbox=subprocess
    python-import=*
    expose-ro=./data
    expose-rw=./rw
    """)
RO_REF = "Rule 'expose-ro=./data' from .py-sandboxes(3)"


def not_accepted(path):
    return f"RuleFileNotFoundError: Access to '{path}' must be accepted by " \
           f"a rule."


@pytest.fixture
def tree(tmp_cwd):
    """data/ (read-only), rw/ (writable), outside/ (no rule) holding a
    database, a CA bundle, a certificate with its key and DH parameters.
    Returns the canonical cwd (str)."""
    root = os.path.realpath(tmp_cwd)
    for d in ("data", "rw", "outside"):
        os.makedirs(os.path.join(root, d))
    for d in ("data", "outside"):
        db = sqlite3.connect(os.path.join(root, d, "d.db"))
        db.execute("create table t(x)")
        db.execute("insert into t values (42)")
        db.commit()
        db.close()
    return root


def probe(sandboxed, body, rules=BASE):
    r = sandboxed(rules, PRELUDE + textwrap.dedent(body))
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        label, _, rest = line.partition(": ")
        out[label] = rest
    return out


SQL = """\
    import sqlite3
    c = sqlite3.connect(":memory:")
    c.execute("create table t(x)")
    def run(sql, on=c):
        on.execute(sql)
    t("attach_out", lambda: run("attach database 'outside/a.db' as a"))
    t("vacuum_out", lambda: run("vacuum into 'outside/v.db'"))
    t("uri_out", lambda: run(
        "attach database 'file:outside/u.db?mode=rwc' as u"))
    t("uri_ro_out", lambda: run(
        "attach database 'file:outside/d.db?mode=ro' as u"))
    t("script_out", lambda: c.executescript(
        "attach database 'outside/s.db' as s; create table s.t(x);"))
    t("cursor_out", lambda: c.cursor().execute(
        "attach database 'outside/k.db' as k"))
    t("many_out", lambda: c.executemany(
        "vacuum into ?", [("outside/m.db",)]))
    # a name SQLite does not show the authorizer: refused whatever it is
    t("param", lambda: c.execute("attach database ? as p", ("rw/p.db",)))
    t("expr", lambda: run("attach database 'outside/' || 'e.db' as e"))
    # the program's own authorizer goes behind the guard's
    seen = []
    def mine(action, *a):
        seen.append(action)
        return sqlite3.SQLITE_OK
    c.set_authorizer(mine)
    t("own_auth_out", lambda: run("attach database 'outside/o.db' as o"))
    t("own_auth_in", lambda: run("attach database 'rw/o.db' as o"))
    t("own_auth_seen", lambda: seen.count(sqlite3.SQLITE_ATTACH))
    # SQLite's temporary files, for every connection of the process
    t("tempdir_out", lambda: run("pragma temp_store_directory = 'outside'"))
    t("tempdir_in", lambda: run("pragma temp_store_directory = 'rw'"))
    t("tempdir_reset", lambda: run("pragma temp_store_directory = ''"))
    t("memory", lambda: run("attach database ':memory:' as mem"))
    t("temporary", lambda: run("attach database '' as tmp"))
    t("attach_in", lambda: run("attach database 'rw/a.db' as a"))
    t("vacuum_in", lambda: run("vacuum into 'rw/v.db'"))
    t("ro_as_rw", lambda: run("attach database 'data/d.db' as d"))
    t("ro_uri", lambda: run(
        "attach database 'file:data/d.db?mode=ro' as d"))
    t("ro_read", lambda: c.execute("select x from d.t").fetchone())
    """


def test_sqlite_attach_and_vacuum_into_outside(sandboxed, tree):
    out = probe(sandboxed, SQL)
    for label, name in (("attach_out", "a.db"), ("vacuum_out", "v.db"),
                        ("uri_out", "u.db"), ("uri_ro_out", "d.db"),
                        ("script_out", "s.db"), ("cursor_out", "k.db"),
                        ("many_out", "m.db"), ("own_auth_out", "o.db")):
        assert out[label] == not_accepted(f"{tree}/outside/{name}"), label
    assert sorted(os.listdir(f"{tree}/outside")) == ["d.db"]
    unnamed = ("RulePermissionError: ATTACH DATABASE opens a file the rules "
               "cannot judge when its name is not a string literal (a "
               "parameter or an expression): write the name as a literal "
               "('...' with each ' doubled)")
    assert out["param"] == unnamed
    assert out["expr"] == unnamed
    assert out["tempdir_out"] == not_accepted(f"{tree}/outside")
    assert out["tempdir_in"] == out["tempdir_reset"] == "OK None"
    assert out["own_auth_seen"] == "OK 1"  # the one the guard allowed
    for label in ("own_auth_in", "memory", "temporary", "attach_in",
                  "vacuum_in", "ro_uri"):
        assert out[label] == "OK None", label
    assert out["ro_as_rw"] == (
        f"RulePermissionError: Cannot write to '{tree}/data/'. {RO_REF}")
    assert out["ro_read"] == "OK (42,)"
    assert os.path.exists(f"{tree}/rw/v.db")
    assert os.path.exists(f"{tree}/rw/a.db")


COPY = """\
    import importlib.util
    def copy(name, rename):
        spec = importlib.util.find_spec(name)
        m = importlib.util.module_from_spec(spec)
        if rename:
            m.__name__ = "zz"  # between the make and the fill
        spec.loader.exec_module(m)
        return m
    # the renamed copy first: the guard's first sight of _sqlite3
    for k, tag in enumerate(("renamed", "copy")):
        c = copy("_sqlite3", tag == "renamed").connect(":memory:")
        t(tag + "_attach", lambda: c.execute(
            "attach database 'outside/c%d.db' as a" % k))
        t(tag + "_vacuum", lambda: c.execute(
            "vacuum into 'outside/v%d.db'" % k))
    """


def test_sqlite_copies_of_the_module_renamed_or_not(sandboxed, tree):
    """A copy of _sqlite3 made outside sys.modules (module_from_spec, then
    exec_module) gets the wrappers on its own classes. The guard knew the
    module by its __name__ when its exec made them, so a copy renamed
    between the make and the fill got none, and its ATTACH wrote a file
    in outside/ (2026-12-05): it is now known by the name it was judged
    and made under. What is outside/ afterwards is the evidence."""
    out = probe(sandboxed, COPY)
    for k, tag in enumerate(("renamed", "copy")):
        assert out[tag + "_attach"] == not_accepted(
            f"{tree}/outside/c{k}.db"), out
        assert out[tag + "_vacuum"] == not_accepted(
            f"{tree}/outside/v{k}.db"), out
    assert sorted(os.listdir(f"{tree}/outside")) == ["d.db"]


def test_sqlite_attach_and_vacuum_into_with_the_rule(sandboxed, tree):
    out = probe(sandboxed, SQL, rules=BASE + "expose-rw=./outside\n")
    for label in ("attach_out", "vacuum_out", "script_out", "cursor_out"):
        assert out[label].startswith("OK "), (label, out[label])
    for name in ("a.db", "v.db", "s.db", "k.db"):
        assert os.path.exists(f"{tree}/outside/{name}"), name


def test_sqlite_uris_and_deserialize_work_within_the_rules(sandboxed, tree):
    # what correct programs do with the URI parameters the guard reads,
    # and Connection.deserialize (3.11+), whose own "ATTACH x AS main"
    # opens no file: it works with the cwd exposed to nothing
    out = probe(sandboxed, """\
        import sqlite3
        d = os.getcwd()
        def uri(u, sql="create table t(x)"):
            sqlite3.connect(u.format(d=d), uri=True).execute(sql)
        t("shared", lambda: uri("file:{d}/rw/s.db?cache=shared&mode=rwc"))
        t("modeof", lambda: uri("file:{d}/rw/m.db?modeof={d}/data/d.db"))
        t("ro", lambda: uri("file:data/d.db?mode=ro", "select * from t"))
        t("encoded", lambda: uri("file:{d}/rw/%65.db?mod%65=rwc"))
        t("memory", lambda: uri("file:{d}/outside/x.db?mode=memory"))
        def deserialize():
            c = sqlite3.connect(":memory:")
            c.execute("select 1")  # the guard's authorizer is in
            src = sqlite3.connect(":memory:")
            src.execute("create table t(x)")
            src.execute("insert into t values (7)")
            if __import__("sys").version_info < (3, 11):
                return (7,)  # no Connection.deserialize before 3.11
            c.deserialize(src.serialize())
            return c.execute("select x from t").fetchone()
        t("deserialize", deserialize)
        """)
    for label in ("shared", "modeof", "ro", "encoded", "memory"):
        assert out[label] == "OK None", (label, out[label])
    assert out["deserialize"] == "OK (7,)"
    assert sorted(os.listdir(f"{tree}/rw")) == ["e.db", "m.db", "s.db"]
    assert sorted(os.listdir(f"{tree}/outside")) == ["d.db"]


def test_sqlite_extensions_need_the_native_grant(sandboxed, tree,
                                                 python_exe):
    body = """\
        import sqlite3
        c = sqlite3.connect(":memory:")
        if not hasattr(c, "enable_load_extension"):
            print("none: built without extensions")
        t("enable", lambda: c.enable_load_extension(True))
        t("disable", lambda: c.enable_load_extension(False))
        """
    out = probe(sandboxed, body)
    if "none" in out:
        pytest.skip(f"{python_exe}: sqlite3 without load_extension")
    assert out["enable"] == (
        "RuleApiPermissionError: sqlite3.Connection.enable_load_extension() "
        "is denied by the API guard (category: native).")
    assert out["disable"] == "OK None"
    out = probe(sandboxed, body, rules=BASE +
                "python-api=ALLOW:sqlite3.Connection.enable_load_extension\n")
    assert out["enable"] == "OK None"


# RFC 7919's ffdhe2048 group
FFDHE2048 = """\
-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
"""


@pytest.fixture
def certs(tree):
    """outside/: a CA bundle (the system's), a self-signed certificate with
    its key, DH parameters (a fixed group: generating one is slow)."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl command")
    out = f"{tree}/outside"
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", f"{out}/ca.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-days", "1", "-subj", "/CN=pysb",
                    "-keyout", f"{out}/key.pem", "-out", f"{out}/cert.pem"],
                   check=True, capture_output=True)
    with open(f"{out}/dh.pem", "w") as f:
        f.write(FFDHE2048)
    return tree


TLS = """\
    import ssl, _ssl
    t("default", lambda: ssl.create_default_context().cert_store_stats()[
        "x509_ca"] > 0)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    t("cafile", lambda: ctx.load_verify_locations(cafile="outside/ca.pem"))
    t("capath", lambda: ctx.load_verify_locations(capath="outside"))
    t("cert", lambda: ctx.load_cert_chain("outside/cert.pem",
                                          "outside/key.pem"))
    t("dh", lambda: ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_dh_params(
        "outside/dh.pem"))
    def keylog():
        ctx.keylog_filename = "outside/keys.log"
        return ctx.keylog_filename
    t("keylog", keylog)
    # the C class, as a program may use it
    raw = _ssl._SSLContext(_ssl.PROTOCOL_TLS_CLIENT)
    t("raw_cafile", lambda: raw.load_verify_locations("outside/ca.pem"))
    t("raw_unbound", lambda: _ssl._SSLContext.load_verify_locations(
        raw, "outside/ca.pem"))
    t("decode", lambda: _ssl._test_decode_cert("outside/cert.pem")[
        "subject"])
    def raw_keylog():
        raw.keylog_filename = "outside/raw.log"
    t("raw_keylog", raw_keylog)
    # OpenSSL reads $SSL_CERT_FILE at set_default_verify_paths
    os.environ["SSL_CERT_FILE"] = "outside/ca.pem"
    t("env_cafile", lambda: ctx.set_default_verify_paths())
    del os.environ["SSL_CERT_FILE"]
    t("keylog_none", lambda: setattr(ctx, "keylog_filename", None))
    """


def test_ssl_files_outside(sandboxed, certs):
    tree = certs
    out = probe(sandboxed, TLS)
    assert out["default"] == "OK True"
    for label, name in (("cafile", "ca.pem"), ("capath", ""),
                        ("cert", "cert.pem"), ("dh", "dh.pem"),
                        ("keylog", "keys.log"), ("raw_cafile", "ca.pem"),
                        ("raw_unbound", "ca.pem"), ("raw_keylog", "raw.log"),
                        ("decode", "cert.pem"),
                        ("env_cafile", "ca.pem")):
        path = f"{tree}/outside/{name}" if name else f"{tree}/outside"
        assert out[label] == not_accepted(path), label
    assert out["keylog_none"] == "OK None"
    assert not os.path.exists(f"{tree}/outside/keys.log")
    assert not os.path.exists(f"{tree}/outside/raw.log")


def test_ssl_files_with_the_rule(sandboxed, certs):
    tree = certs
    out = probe(sandboxed, TLS, rules=BASE + "expose-rw=./outside\n")
    for label in ("cafile", "capath", "cert", "dh", "raw_cafile",
                  "raw_unbound", "raw_keylog", "env_cafile"):
        assert out[label] == "OK None", label
    assert out["keylog"] == f"OK 'outside/keys.log'"
    assert out["decode"] == "OK ((('commonName', 'pysb'),),)"
    assert os.path.exists(f"{tree}/outside/keys.log")
    assert os.path.exists(f"{tree}/outside/raw.log")


def test_keylog_into_a_read_only_tree(sandboxed, certs):
    out = probe(sandboxed, """\
        import ssl
        ctx = ssl.create_default_context()
        t("keylog", lambda: setattr(ctx, "keylog_filename", "data/k.log"))
        t("cafile", lambda: ctx.load_verify_locations("data/ca.pem"))
        """)
    assert out["keylog"] == (
        f"RulePermissionError: Cannot write to '{certs}/data/'. {RO_REF}")
    assert not os.path.exists(f"{certs}/data/k.log")


def test_the_files_are_learned(run_sb, certs):
    """A learning run records them as the file guard records a file (read,
    or read-write for an ATTACH), and the enforcing run that follows needs
    no other rule. (The learning supervisor records the opens too, so this
    case passes without the guard's part: it checks the rules, not who
    made them.)"""
    tree = certs
    os.makedirs(f"{tree}/side")
    with open(f"{tree}/app.py", "w") as f:
        f.write(textwrap.dedent("""\
            import sqlite3, ssl
            c = sqlite3.connect(":memory:")
            c.execute("attach database 'side/a.db' as a")
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_cert_chain("outside/cert.pem", "outside/key.pem")
            print("done")
            """))
    with open(f"{tree}/.py-sandboxes", "w") as f:
        f.write("os-sandbox=subprocess\nlearn=\n")
    first = run_sb(["--python=/usr/bin/python3", "app.py"])
    assert first.returncode == 0, first.stderr
    rules = open(f"{tree}/.py-sandboxes").read()
    active = [ln for ln in rules.splitlines()
              if ln.strip() and not ln.startswith("#")]
    assert "expose-rw=./side" in active, rules
    assert "expose-ro=./outside" in active, rules
    os.remove(f"{tree}/side/a.db")
    with open(f"{tree}/.py-sandboxes", "w") as f:
        f.write(rules.replace("learn=\n", "learn=false\n"))
    second = run_sb(["--python=/usr/bin/python3", "app.py"])
    assert second.returncode == 0, (rules, second.stderr)
    assert second.stdout == "done\n"


def test_a_connection_of_another_thread_keeps_waiting(sandboxed, tree):
    """A connection gets the authorizer at the first statement any thread
    runs after it was made; one that only its own thread may use
    (check_same_thread) refuses it from another thread, and must still get
    it at its own first statement (it was dropped: the ATTACH passed)."""
    out = probe(sandboxed, """\
        import sqlite3, threading
        c = sqlite3.connect(":memory:")
        def other():
            sqlite3.connect(":memory:").execute("select 1")
        th = threading.Thread(target=other)
        th.start()
        th.join()
        t("attach_out", lambda: c.execute(
            "attach database 'outside/a.db' as a"))
        """, rules=BASE + "python-api=ALLOW:threads\n")
    assert out["attach_out"] == not_accepted(f"{tree}/outside/a.db")
    assert not os.path.exists(f"{tree}/outside/a.db")


EVIL_CNF = """\
openssl_conf = init
[init]
providers = prov
[prov]
evil = evil_sect
[evil_sect]
module = {dir}/evil_provider.so
activate = 1
"""


def test_openssl_configuration_needs_the_native_grant(sandboxed, tree):
    """$OPENSSL_CONF set before OpenSSL first loads its configuration: it
    reads that file (outside the rules) and loads the providers it names
    (native code). Here the provider is missing, so a configuration read
    shows as a context that has no ciphers."""
    with open(f"{tree}/outside/evil.cnf", "w") as f:
        f.write(EVIL_CNF.format(dir=f"{tree}/outside"))
    body = """\
        def setenv(k, v):
            os.environ[k] = v
        t("conf", lambda: setenv("OPENSSL_CONF", "outside/evil.cnf"))
        t("modules", lambda: setenv("OPENSSL_MODULES", "outside"))
        t("engines", lambda: os.putenv(b"OPENSSL_ENGINES", b"outside"))
        t("other", lambda: setenv("OPENSSL_X", "y"))
        t("not_openssl", lambda: setenv("MY_OPENSSL_X", "y"))
        import ssl
        t("context", lambda: ssl.create_default_context() and None)
        """
    out = probe(sandboxed, body)
    for label, name in (("conf", "OPENSSL_CONF"),
                        ("modules", "OPENSSL_MODULES"),
                        ("engines", "OPENSSL_ENGINES")):
        assert out[label] == (
            f"RulePermissionError: Setting {name} lets OpenSSL load native "
            f"code from the files it names: it needs the rule "
            f"python-api=ALLOW:native"), label
    # a variable of OpenSSL's namespace the guard does not know (F10)
    assert out["other"] == (
        "RulePermissionError: Setting OPENSSL_X lets a library of this "
        "process (OpenSSL, glibc, SQLite, the dynamic linker) read it as a "
        "file, code or a server the guard cannot judge: it needs the rule "
        "python-api=ALLOW:native")
    assert out["not_openssl"] == "OK None"
    assert out["context"] == "OK None"
    out = probe(sandboxed, body, rules=BASE + "python-api=ALLOW:native\n")
    assert out["conf"] == "OK None"
    assert out["other"] == "OK None"


AS_PYTHON = textwrap.dedent("""\
    import gc, sqlite3, sys, warnings
    sys.unraisablehook = lambda u: print("hook", u.exc_type.__name__,
                                         u.object.__name__)
    def mine(action, *a):
        raise ValueError("mine")
    c = sqlite3.connect(":memory:")
    c.set_authorizer(mine)
    sqlite3.enable_callback_tracebacks(True)
    try:
        c.execute("select 1")
    except sqlite3.Error as e:
        print("refused", type(e).__name__, e)
    sqlite3.enable_callback_tracebacks(False)
    try:
        c.execute("select 2")
    except sqlite3.Error as e:
        print("refused", type(e).__name__, e)
    c.close()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = sqlite3.connect(":memory:")
        del d
        gc.collect()
    print("warnings", [x.category.__name__ for x in w])
    """)


def test_sqlite_behaves_as_python_behind_the_guard(sandboxed, tree,
                                                   python_exe):
    """What the program sees of the guard's authorizer is what python shows
    (make compat, test_sqlite3 on 3.13): an exception of the program's own
    authorizer is reported naming that callback (3.11+: sys.unraisablehook;
    3.9 and 3.10 print it), only when callback tracebacks are on, and a
    connection dropped unclosed warns (3.13) as soon as the program drops
    it: the guard does not keep it alive."""
    r = sandboxed(BASE, AS_PYTHON)
    plain = subprocess.run([python_exe, "script.py"], cwd=tree,
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    assert r.stderr == plain.stderr
    assert "refused DatabaseError not authorized" in r.stdout


def test_modules_loaded_before_the_guard_arms_are_wrapped(run_sb, tmp_cwd):
    """A sitecustomize (or a .pth file) runs before the guard arms: the
    sqlite3, socket, pwd, locale and uuid it imports must get the wrappers
    all the same.
    Before, they were wrapped only when imported later, and a database
    outside the rules was ATTACHed (seen from outside: the file)."""
    root = os.path.realpath(tmp_cwd)
    os.mkdir(os.path.join(root, "sp"))
    with open(os.path.join(root, "sp", "sitecustomize.py"), "w") as f:
        f.write("import socket, sqlite3, pwd, locale, uuid\n")
    outside = os.path.join(root, "outside.db")
    with open(os.path.join(root, ".py-sandboxes"), "w") as f:
        f.write("os-sandbox=subprocess\npython-import=*\nlearn=false\n"
                "env=PYTHONPATH=${PYTHONPATH}\nexpose-ro=./sp\n")
    prog = PRELUDE + textwrap.dedent(f"""\
        print('preloaded', all(m in sys.modules
                               for m in ('socket', '_sqlite3', 'pwd')))
        import sqlite3, socket, pwd
        c = sqlite3.connect(':memory:')
        t('attach', lambda: c.execute("ATTACH DATABASE '{outside}' AS x"))
        t('pwd', lambda: pwd.getpwuid(0).pw_name)
        import locale, uuid, _uuid
        t('gettext', lambda: locale.dgettext('../x', 'hello'))
        print('uuid', uuid._generate_time_safe is _uuid.generate_time_safe)
        """)
    r = run_sb(["-c", prog], env=dict(os.environ,
                                      PYTHONPATH=os.path.join(root, "sp")))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "preloaded True", r.stdout
    assert lines[1].startswith("attach: RuleFileNotFoundError"), r.stdout
    assert lines[2] == ("pwd: " + not_accepted("/etc/passwd")), r.stdout
    # gettext's domain (attack F11) and libuuid's wrapper (E42), whose
    # uuid.py keeps its own reference
    assert lines[3] == ("gettext: RulePermissionError: a text domain "
                        "holding '/' names a message catalog outside the "
                        "locale directories: refused"), r.stdout
    assert lines[4] == "uuid True", r.stdout
    assert not os.path.exists(outside)
