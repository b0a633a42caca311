"""Group C, native modules (issue 14, item 1): a C extension is judged by
what its file is, not by the name its loader is given. Each probe loads
CPython's _ctypes through another door or under another name and, if it
gets the module, uses it to call libc's system() to create a marker file:
the test asserts the guard's refusal and, from outside, that the marker
does not exist. With no rule, with python-import=*, with a grant short of
native: refused. That python-api=ALLOW:native opens it is pinned by
tests/e2e/test_guard_core.py (test_an_allow_rule_lets_the_call_through)."""

import os
import re
import shutil
import subprocess

import pytest

from harness import attack

ERR = "RuleModuleNotFoundError"
NEEDS = "it needs the rule python-api=ALLOW:native"

# The program reaches the import machinery through sys.modules: with no
# python-import= rule it cannot import _imp or importlib itself.
PRE = """
import sys
_imp = sys.modules['_imp']
x = sys.modules['_frozen_importlib_external']
b = sys.modules['_frozen_importlib']
dyn = [p for p in sys.path if p.endswith('lib-dynload')][0]
so = dyn + '/_ctypes' + _imp.extension_suffixes()[0]
"""

# What a loaded _ctypes gives: libc's system(), with no ctypes package.
SYSTEM = """
h = m.dlopen(None, 2)
class I(m._SimpleCData):
    _type_ = 'i'
class F(m.CFuncPtr):
    _flags_ = m.FUNCFLAG_CDECL
    _restype_ = I
F(m.dlsym(h, 'system'))(b'touch MARKER')
return 'LOADED'
"""

DOORS = {
    # the escape of the issue: a name under python-sb's package
    "pkgname": "m = _imp.create_dynamic("
               "x.spec_from_file_location('pysandboxes._ctypes', so))",
    "pkgsub": "m = _imp.create_dynamic("
              "x.spec_from_file_location('pysandboxes.e._ctypes', so))",
    "plain": "m = _imp.create_dynamic("
             "x.spec_from_file_location('_ctypes', so))",
    # a name under a package the policy allows
    "allowed_pkg": "m = _imp.create_dynamic("
                   "x.spec_from_file_location('json._ctypes', so))",
    "loader": "m = x.ExtensionFileLoader('pysandboxes._ctypes', so)"
              ".create_module(x.spec_from_file_location("
              "'pysandboxes._ctypes', so))",
    "from_spec": "m = b.module_from_spec("
                 "x.spec_from_file_location('pysandboxes._ctypes', so))",
    "exec_dynamic": "m = b.module_from_spec("
                    "x.spec_from_file_location('_ctypes', so))\n"
                    "_imp.exec_dynamic(m)",
    # a path entry the program adds
    "path_entry": "sys.path.insert(0, dyn)\n"
                  "m = b._gcd_import('_ctypes')",
}


def copies(case):
    """The _ctypes file of the case's interpreter, copied (renamed) and
    symlinked into a directory the rules expose read-only."""
    so = subprocess.run(
        [case.python, "-c", "import _ctypes; print(_ctypes.__file__)"],
        capture_output=True, text=True, check=True).stdout.strip()
    case.mkdir("so")
    shutil.copy2(so, case.path("so/_ctypes.so"))
    shutil.copy2(so, case.path("so/innocent.so"))
    os.symlink(so, case.path("so/_json.so"))
    return {
        "copied": "m = _imp.create_dynamic(x.spec_from_file_location("
                  f"'json._ctypes', {case.path('so/_ctypes.so')!r}))",
        "renamed": "m = _imp.create_dynamic(x.spec_from_file_location("
                   f"'_ctypes', {case.path('so/innocent.so')!r}))",
        "symlinked": "m = _imp.create_dynamic(x.spec_from_file_location("
                     f"'pysandboxes._ctypes', {case.path('so/_json.so')!r}))",
    }


def probes(case, doors):
    marker = case.path("marker")
    return {label: PRE + door + "\n" + SYSTEM.replace("MARKER", marker)
            for label, door in doors.items()}


RULES = {
    "none": "learn=false\n",
    "import_all": "python-import=*\n",
    "other_grant": "python-import=*\npython-api=ALLOW:threads, "
                   "dynamic-code\n",
}


@pytest.mark.parametrize("rules", RULES, ids=list(RULES))
@attack("C20", "A native module under another name or through another door "
        "(_imp.create_dynamic of _ctypes as pysandboxes._ctypes...)")
def test_C20(case, judge, rules):
    doors = dict(DOORS, **copies(case))
    body = RULES[rules] + f"expose-ro={case.root}/so\n"
    out = case.run(body, probes(case, doors))
    for label in doors:
        obs = out[label]
        judge.observe(obs)
        assert not obs.escaped, obs
        assert obs.exc == ERR, obs
        # the first rule missing is named: the import rule (no rule at
        # all), the native grant, or the package the name claims
        assert (NEEDS in obs.msg or "is not python-sb's own" in obs.msg or
                obs.msg == "Module named '_ctypes' is not allowed by a "
                "rule"), obs
    assert not os.path.exists(case.path("marker"))


@pytest.mark.parametrize("name", ["_ctypes", "ctypes", "ctypes.util",
                                  "_testcapi"])
@attack("C21", "import of a raw-memory module with python-import=*")
def test_C21(case, judge, name):
    out = case.run("python-import=*\n", {"imp": f"import {name}"})
    top = name.split(".")[0]
    judge.python(out["imp"], ERR, (
        f"Module named '{top}' is native code with raw memory access: "
        "it needs the rule python-api=ALLOW:native, a python-import= rule "
        "is not enough"))


# A shared object whose constructor, run by dlopen() before PyInit_ and
# before any check after the load, creates MARKER; it exports the PyInit_
# of the module it claims to be.
EVIL_SO = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void ctor(void)
{
	int fd = open(MARKER, O_CREAT | O_WRONLY, 0644);

	if (fd >= 0)
		close(fd);
}
void *PyInit__json(void) { return 0; }
"""

# The spec answers the guard with CPython's _json and the loader, which
# reads spec.origin again, with the program's file in a writable directory.
SWAP = """
class S:
    n = 0
    name = '_json'
    loader = None
    submodule_search_locations = None
    @property
    def origin(self):
        S.n += 1
        return dyn + '/_json' + _imp.extension_suffixes()[0] if S.n == 1 \\
            else EVIL
try:
    _imp.create_dynamic(S())
except SystemError:
    pass
open(MARKER).close()
return 'CONSTRUCTOR RAN'
"""


@attack("C22", "_imp.create_dynamic with a spec whose origin changes after "
        "the check: a constructor in a writable directory runs at dlopen()")
def test_C22(case, judge):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the shared object")
    case.mkdir("w")
    marker, evil = case.path("w/marker"), case.path("w/evil.so")
    case.write("evil.c", EVIL_SO)
    subprocess.run([cc, "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o",
                    evil, case.path("evil.c")], check=True)
    body = f"python-import=*\nexpose-rw={case.root}/w\n"
    probe = PRE + SWAP.replace("MARKER", repr(marker)).replace(
        "EVIL", repr(evil))
    # the same with a first answer that is no path at all (42): the guard
    # used to let the original read the spec and say why
    untyped = probe.replace("S.n += 1", "S.n += 1\n        if S.n == 1:\n"
                            "            return 42")
    out = case.run(body, {"swap": probe, "untyped": untyped})
    # the loader got the file judged: no marker, open() finds none
    judge.structural(out["swap"], "FileNotFoundError",
                     "the loader is handed the judged file's spec")
    judge.structural(out["untyped"], "TypeError",
                     "a spec that is not a path is not handed on")
    assert not os.path.exists(marker)


# An allowed package's __path__ extended with lib-dynload: each extension
# there loads as json.<name>, judged as json's submodule, unless the file's
# directory must be named as the package is.
PARENT = """
import json
json.__path__.append(dyn)
suffix = _imp.extension_suffixes()[0]
try:
    open(dyn + '/_posixsubprocess' + suffix, 'rb').close()
    name = '_posixsubprocess'
except OSError:
    name = 'mmap'  # Debian builds _posixsubprocess in
m = _imp.create_dynamic(b.ModuleSpec('json.' + name, None,
                                     origin=dyn + '/' + name + suffix))
if name == 'mmap':
    return 'LOADED'
fh = open(__file__, 'rb')
fd = fh.fileno()
args = [[b'/usr/bin/touch', MARKER], [b'/usr/bin/touch'], True, (), None,
        None, -1, -1, -1, -1, -1, -1, fd, fd, False, False, -1, None, None,
        None, -1, None]
try:
    m.fork_exec(*args)
except TypeError:
    m.fork_exec(*args, False)
return 'FORKED'
"""


@attack("C23", "an allowed package's __path__ extended with lib-dynload: "
        "_posixsubprocess loaded as json._posixsubprocess")
def test_C23(case, judge):
    marker = case.path("marker")
    probe = PRE + PARENT.replace("MARKER", repr(marker.encode()))
    # json and all it imports on an interpreter that has loaded none of it
    # (Debian's 3.11 without a site module that loads them): none is
    # _posixsubprocess or mmap
    out = case.run("python-import=json, _json, re, _sre, sre_compile, "
                   "sre_constants, sre_parse, enum, types, functools, "
                   "_functools, collections, _collections, keyword, "
                   "operator, _operator, reprlib, itertools, heapq, "
                   "_heapq, weakref, copyreg, _locale\n",
                   {"parent": probe})
    judge.python(out["parent"], ERR, re.compile(
        "Module named '(_posixsubprocess|mmap)' is not allowed by a rule"))
    assert not os.path.exists(marker)


@attack("C31", "SQLite's fts3_tokenizer(name, pointer): a jump to an "
        "address the program wrote, with no native grant")
def test_C31(case, judge):
    # Debian's SQLite is built with SQLITE_ENABLE_FTS3_TOKENIZER: the
    # two-argument form registers the tokenizer module at the address
    # given; its xCreate here is 0x4141414141414141, which FTS3 calls when
    # the table is made (the interpreter dies of SIGSEGV there: the
    # script reports nothing and case.run fails)
    out = case.run("python-import=*\n", {"fts3": """
        import sqlite3, struct
        c = sqlite3.connect(':memory:')
        fake = struct.pack('<Q', 0) + struct.pack('<Q', 0x4141414141414141) * 6
        ptr = struct.pack('<Q', id(fake) + 32)
        c.execute("select fts3_tokenizer('evil', ?)", (ptr,)).fetchall()
        c.execute('create virtual table t using fts3(x, tokenize=evil)')
        """})
    judge.python(out["fts3"], "RulePermissionError",
                 "The SQL function fts3_tokenizer() registers a tokenizer "
                 "at a raw address that FTS3 calls into: " + NEEDS)
