"""Group C of attacks.md: import a module no python-import= rule allows.
The import guard sits in the import system itself (not in a finder that
sys.meta_path could lose), so every route ends in RuleModuleNotFoundError
naming the module."""

import os
import textwrap

from harness import api_denied, attack

ERR = "RuleModuleNotFoundError"


def not_allowed(name):
    return f"Module named '{name}' is not allowed by a rule"


@attack("C1", "Plain import outside python-import= (ctypes, socket...)")
def test_C1(case, judge):
    out = case.run("python-import=json\n", {
        "ctypes": "import ctypes",
        "subprocess": "import subprocess",
        "socket": "import socket",
    })
    for name in ("ctypes", "subprocess", "socket"):
        judge.python(out[name], ERR, not_allowed(name))


@attack("C2", "No python-import= rule at all is not 'no filter'")
def test_C2(case, judge):
    out = case.run("py-sandbox=true\n", {"math": "import math"})
    judge.python(out["math"], ERR, not_allowed("math"))


@attack("C4", "Tamper with sys.meta_path (clear it, make it a tuple)")
def test_C4(case, judge):
    out = case.run("python-import=json\n", {
        "cleared": """
            import sys
            sys.meta_path.clear()
            import os
            """,
        "tuple": """
            import sys
            sys.meta_path = ()
            import os
            """,
    })
    judge.python(out["cleared"], ERR, not_allowed("os"))
    judge.python(out["tuple"], ERR, not_allowed("os"))


@attack("C6", "Relative import (import_module('.decoder', 'json'))")
def test_C6(case, judge):
    out = case.run("python-import=importlib, types, warnings\n", {
        "import_module": """
            import importlib
            importlib.import_module(".decoder", "json")
            """,
        "dunder": "__import__('', {'__package__': 'json'}, None, "
                  "['decoder'], 1)",
    })
    judge.python(out["import_module"], ERR, not_allowed("json"))
    judge.python(out["dunder"], ERR, not_allowed("json"))


@attack("C7", "Submodule of a granted package (asyncio.subprocess)")
def test_C7(case, judge):
    out = case.run("python-import=json\n", {
        "submodule": "import asyncio.subprocess",
    })
    judge.python(out["submodule"], ERR, not_allowed("asyncio"))


# A module _imp makes outside sys.modules: the import guard's wrappers of
# _imp.create_builtin and create_dynamic judged the name of a builtin only
# when it was loaded already (a reload), and gave a fresh copy the
# wrappers but not the API's deniers, which are installed in sys.modules.
_MADE = ("import sys\n"
         "M = sys.modules\n"
         "imp, fb = M['_imp'], M['_frozen_importlib']\n"
         "B = fb.BuiltinImporter\n")


@attack("C30", "A module made by _imp outside sys.modules (create_builtin, "
        "create_dynamic, BuiltinImporter.create_module)")
def test_C30(case, judge):
    mark = case.path("forked")
    out = case.run("python-import=json\n", {
        # gc is builtin in every CPython, loaded by no start-up
        "fresh_builtin": _MADE +
        "return imp.create_builtin(fb.ModuleSpec('gc', B))\n",
        # a second posix through the library's own door: its umask, which
        # no audit event judges, was the original
        "posix_copy": _MADE +
        "return B.create_module(fb.ModuleSpec('posix', B)).umask(0)\n",
    })
    judge.python(out["fresh_builtin"], ERR, not_allowed("gc"))
    judge.python(out["posix_copy"], "RuleApiPermissionError",
                 api_denied("posix.umask", "privileges"))
    # under python-import=*: _posixsubprocess (builtin in Debian's python3,
    # an extension in pyenv's) made again, and its fork_exec (3.11's
    # signature: the interpreters of the attack columns)
    out = case.run("python-import=*\n", {"fork_exec": _MADE + textwrap.dedent(f"""\
        fe = M['_frozen_importlib_external']
        spec = fe.PathFinder.find_spec('_posixsubprocess')
        mod = (imp.create_dynamic(spec) if spec is not None else
               imp.create_builtin(fb.ModuleSpec('_posixsubprocess', B)))
        r, w = M['posix'].pipe()
        return mod.fork_exec(
            [b'/usr/bin/touch', {mark.encode()!r}], [b'/usr/bin/touch'],
            True, (w,), None, None, -1, -1, -1, -1, -1, -1, r, w, True,
            False, -1, None, None, None, -1, None, False)
        """)})
    judge.python(out["fork_exec"], "RuleApiPermissionError",
                 api_denied("_posixsubprocess.fork_exec", "process-exec"))
    assert not os.path.exists(mark)
