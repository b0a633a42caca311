"""Group C of attacks.md: import a module no python-import= rule allows.
The import guard sits in the import system itself (not in a finder that
sys.meta_path could lose), so every route ends in RuleModuleNotFoundError
naming the module."""

from harness import attack

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
