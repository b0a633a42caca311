"""Group F of attacks.md: the environment. python-sb starts the
interpreter with the variables env= names and nothing else, so a secret
of the caller is not hidden by a check the program could get around: it
is absent (the launcher's refusal). /proc/<ppid>/environ is D21."""

import os

from harness import attack


@attack("F1", "Read a variable outside env= (os.environ, os.getenv)")
def test_F1(case, judge):
    env = dict(os.environ, AWS_SECRET="s3cr3t", KEEP="kept")
    out = case.run("python-import=*\nenv=KEEP=${KEEP}\n", {
        "control": "import os\nreturn os.environ['KEEP']",
        "environ": "import os\nreturn os.environ['AWS_SECRET']",
        "getenv": """
            import os
            v = os.getenv('AWS_SECRET')
            if v is None:
                raise LookupError('absent')
            return v
            """,
        "posix": """
            import posix
            v = posix.environ.get(b'AWS_SECRET')
            if v is None:
                raise LookupError('absent')
            return v
            """,
    }, env=env)
    assert out["control"].escaped and out["control"].msg == "'kept'", \
        out["control"]
    judge.launcher(out["environ"], "KeyError", "'AWS_SECRET'",
                   "not in the environment")
    judge.launcher(out["getenv"], "LookupError", "absent",
                   "not in the environment")
    judge.launcher(out["posix"], "LookupError", "absent",
                   "not in the environment")


def _mo(translations):
    """A GNU message catalog (.mo) holding 'translations' (msgid: msgstr),
    UTF-8."""
    import struct
    entries = dict(translations)
    entries[""] = "Content-Type: text/plain; charset=UTF-8\n"
    keys = sorted(entries)
    ids = [k.encode() for k in keys]
    strs = [entries[k].encode() for k in keys]
    n = len(keys)
    orig_at, trans_at = 28, 28 + 8 * n
    data_at = trans_at + 8 * n
    table, data = b"", b""
    for s in ids:
        table += struct.pack("<II", len(s), data_at + len(data))
        data += s + b"\0"
    ttable = b""
    for s in strs:
        ttable += struct.pack("<II", len(s), data_at + len(data))
        data += s + b"\0"
    head = struct.pack("<IIIIIII", 0x950412de, 0, n, orig_at, trans_at, 0,
                       data_at)
    return head + table + ttable + data


F10_ENV = '''
import os, locale
os.environ['LC_ALL'] = 'C.UTF-8'
locale.setlocale(locale.LC_ALL, '')
CLIMB = '../../../../../../../..' + os.getcwd() + '/outside/x'
'''


@attack("F10", "a file outside read by the C library through a variable "
        "os.environ sets: LANGUAGE's '..' (gettext, os.strerror), and "
        "the variables of OpenSSL, glibc, SQLite and ld.so the guard "
        "does not know")
def test_F10(case, judge):
    """glibc's gettext appends each entry of $LANGUAGE to its message
    directory: '../../..<path>' climbed out of it, and os.strerror()
    answered with the text of a catalog outside the rules (here one that
    translates "No such file or directory" into a secret), while open() of
    it was refused. LANGUAGE entries holding a '/' or equal to '..' are
    refused now. The guard's list of variables C code reads by itself was
    a list of known bads (TZ, TZDIR, LOCPATH, HOSTALIASES, four native
    ones): a variable of OpenSSL's, glibc's resolver's, SQLite's or the
    dynamic linker's namespace (OPENSSL_, SSL_, RES_, GCONV, NLS, SQLITE_,
    LD_) that it does not name is refused now unless the native grant is
    held, LOCALDOMAIN and RES_OPTIONS unless every name may be resolved,
    and SQLITE_TMPDIR and TMPDIR (where SQLite creates its temporary
    files) are judged as writes of the directory."""
    mo = case.path("outside/x/LC_MESSAGES/libc.mo")
    os.makedirs(os.path.dirname(mo))
    with open(mo, "wb") as f:
        f.write(_mo({"No such file or directory": "SECRET-OUTSIDE"}))
    case.mkdir("data")
    native = ("Setting {} lets a library of this process (OpenSSL, glibc, "
              "SQLite, the dynamic linker) read it as a file, code or a "
              "server the guard cannot judge: it needs the rule "
              "python-api=ALLOW:native")
    out = case.run("python-import=*\nexpose-rw=./data\n", {
        "control": F10_ENV + "return os.strerror(2)",
        "climb": F10_ENV + "os.environ['LANGUAGE'] = CLIMB\n"
                           "return os.strerror(2)",
        "putenv": F10_ENV + "os.putenv('LANGUAGE', 'fr:' + CLIMB)\n"
                            "return os.strerror(2)",
        "unknown": "import os\nos.environ['OPENSSL_FOO'] = '/x'",
        "ld": "import os\nos.environ['LD_PRELOAD'] = '/x.so'",
        "localdomain": "import os\nos.environ['LOCALDOMAIN'] = 'a.invalid'",
        "tmpdir": "import os\n"
                  "os.environ['SQLITE_TMPDIR'] = os.getcwd() + '/outside'",
        "tmpdir_ok": "import os\n"
                     "os.environ['SQLITE_TMPDIR'] = os.getcwd() + '/data'",
        "free": "import os\nos.environ['MY_SETTING'] = '/x'",
        # readline's init file, read at its import and at read_init_file
        "inputrc": "import os\n"
                   "os.environ['INPUTRC'] = os.getcwd() + '/outside/rc'",
    })
    assert out["control"].msg == "'No such file or directory'", \
        out["control"]
    assert out["tmpdir_ok"].escaped and out["free"].escaped, out
    msg = ("LANGUAGE names files glibc reads by itself, and this value "
           "holds a '/' or '..': refused")
    judge.python(out["climb"], "RulePermissionError", msg)
    judge.python(out["putenv"], "RulePermissionError", msg)
    for label, var in (("unknown", "OPENSSL_FOO"), ("ld", "LD_PRELOAD")):
        judge.python(out[label], "RulePermissionError", native.format(var))
    judge.python(out["localdomain"], "RulePermissionError",
                 "Setting LOCALDOMAIN lets the resolver ask for names no "
                 "net= rule names (search domains, ndots): it needs the "
                 "rule python-api=ALLOW:native")
    judge.python(out["tmpdir"], "RuleFileNotFoundError",
                 f"Access to '{case.path('outside')}' must be accepted by "
                 "a rule.")
    judge.python(out["inputrc"], "RuleFileNotFoundError",
                 f"Access to '{case.path('outside/rc')}' must be accepted "
                 "by a rule.")


@attack("F11", "a catalog outside read by gettext: a domain holding "
        "'../' (locale.dgettext, textdomain) or bindtextdomain() to a "
        "directory outside")
def test_F11(case, judge):
    """_locale's gettext functions read <dir>/<language>/LC_MESSAGES/
    <domain>.mo with no audit event: locale.dgettext('../../..<path>',
    msg) answered with the translations of a catalog outside the rules,
    and so did a domain bound to a directory outside them, while open()
    of the catalog was refused. A domain holding a '/' is refused now,
    and bindtextdomain's directory is judged as a read (once: a path-like
    answers its __fspath__ once), refused when relative."""
    mo = case.path("outside/fr/LC_MESSAGES/dom.mo")
    os.makedirs(os.path.dirname(mo))
    with open(mo, "wb") as f:
        f.write(_mo({"hello": "SECRET-OUTSIDE"}))
    prelude = F10_ENV + ("os.environ['LANGUAGE'] = 'fr'\n"
                         "UP = '../../../../../../..' + os.getcwd() + "
                         "'/outside/fr/LC_MESSAGES/dom'\n")
    out = case.run("python-import=*\n", {
        "control": prelude + "return locale.dgettext('dom', 'hello')",
        "domain": prelude + "return locale.dgettext(UP, 'hello')",
        "c_twin": prelude + "import _locale\n"
                            "return _locale.dcgettext(UP, 'hello', "
                            "locale.LC_MESSAGES)",
        "textdomain": prelude + "locale.textdomain(UP)\n"
                                "return locale.gettext('hello')",
        "bind": prelude + "locale.bindtextdomain('dom', os.getcwd() + "
                          "'/outside')\n"
                          "return locale.dgettext('dom', 'hello')",
        "bind_relative": prelude + "locale.bindtextdomain('dom', "
                                   "'outside')\n"
                                   "return locale.dgettext('dom', 'hello')",
    })
    assert out["control"].msg == "'hello'", out["control"]
    refused = ("a text domain holding '/' names a message catalog "
               "outside the locale directories: refused")
    for label in ("domain", "c_twin", "textdomain"):
        judge.python(out[label], "RulePermissionError", refused)
    judge.python(out["bind"], "RuleFileNotFoundError",
                 f"Access to '{case.path('outside')}' must be accepted by "
                 "a rule.")
    judge.python(out["bind_relative"], "RulePermissionError",
                 "a relative directory is read later against the "
                 "working directory of that moment, which the file guard "
                 "cannot judge now: name it by its absolute path")
