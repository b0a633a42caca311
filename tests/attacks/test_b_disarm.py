"""Group B of attacks.md: disarm the guard or recover an original. The
guard keeps its state in C and its originals out of Python's reach, so
the walks find nothing to reset (B1) and no back-reference (B4, B5); the
doors that remain (heap walks, frames, hooks, reload, code objects) are
API-guard refusals."""

from harness import API_ERR, api_denied, attack

ALL = "python-import=*\n"


@attack("B1", "Walk __subclasses__ to the guard and reset its state")
def test_B1(case, judge):
    out = case.run(ALL, {"reset": """
        import os, sys
        for mod in list(sys.modules.values()):
            for name in ("_armed", "armed", "_rules", "_allowed",
                         "_lc_is_armed", "enabled", "_in_sandbox"):
                try:
                    setattr(mod, name, False)
                except Exception:
                    pass
        seen, todo = set(), [object]
        while todo:
            for sub in type.__subclasses__(todo.pop()):
                if sub not in seen:
                    seen.add(sub)
                    todo.append(sub)
        assert len(seen) > 100
        return os.system("id")
        """})
    judge.python(out["reset"], API_ERR,
                 api_denied("os.system", "process-exec"))


@attack("B4", "The __wrapped__ back-reference (os.system.__wrapped__)")
def test_B4(case, judge):
    out = case.run(ALL, {"wrapped": """
        import os
        return os.system.__wrapped__("id")
        """})
    judge.structural(out["wrapped"], "AttributeError", "no __wrapped__")


@attack("B5", "The closure cell or bound self of a wrapper")
def test_B5(case, judge):
    out = case.run(ALL, {
        "closure": """
            import io
            return io.open.__closure__[0].cell_contents("/etc/passwd").read()
            """,
        "self": """
            import os
            return os.system.__self__("id")
            """,
    })
    judge.structural(out["closure"], "AttributeError", "no closure")
    judge.structural(out["self"], "TypeError", "self is a capsule")


@attack("B6", "Heap walk (gc.get_referents, get_objects, get_referrers)")
def test_B6(case, judge):
    out = case.run(ALL, {
        "referents": "import gc, os\nreturn gc.get_referents(os.system)",
        "objects": "import gc\nreturn len(gc.get_objects())",
        "referrers": "import gc, os\nreturn gc.get_referrers(os.system)",
    })
    judge.python(out["referents"], API_ERR,
                 api_denied("gc.get_referents", "introspection"))
    judge.python(out["objects"], API_ERR,
                 api_denied("gc.get_objects", "introspection"))
    judge.python(out["referrers"], API_ERR,
                 api_denied("gc.get_referrers", "introspection"))


@attack("B8", "Frame access (sys._getframe, _current_frames, inspect)")
def test_B8(case, judge):
    out = case.run(ALL, {
        "getframe": "import sys\nreturn sys._getframe().f_globals",
        "frames": "import sys\nreturn sys._current_frames()",
        "inspect": "import inspect\nreturn inspect.currentframe()",
    })
    judge.python(out["getframe"], API_ERR,
                 api_denied("sys._getframe", "introspection"))
    judge.python(out["frames"], API_ERR,
                 api_denied("sys._current_frames", "introspection"))
    judge.python(out["inspect"], API_ERR,
                 api_denied("inspect.currentframe", "introspection"))


@attack("B9", "Tracing and audit hooks (settrace, addaudithook...)")
def test_B9(case, judge):
    out = case.run(ALL, {
        "settrace": "import sys\nsys.settrace(None)",
        "setprofile": "import sys\nsys.setprofile(None)",
        "audithook": "import sys\nsys.addaudithook(lambda *a: None)",
        "faulthandler": "import faulthandler\nfaulthandler.enable()",
    })
    judge.python(out["settrace"], API_ERR,
                 api_denied("sys.settrace", "introspection"))
    judge.python(out["setprofile"], API_ERR,
                 api_denied("sys.setprofile", "introspection"))
    judge.python(out["audithook"], API_ERR,
                 api_denied("sys.addaudithook", "introspection"))
    judge.python(out["faulthandler"], API_ERR,
                 api_denied("faulthandler.enable", "introspection"))


@attack("B10", "Restore the originals by importlib.reload(os)")
def test_B10(case, judge):
    out = case.run(ALL, {"reload": """
        import importlib, os
        importlib.reload(os)
        return os.system("id")
        """})
    judge.python(out["reload"], API_ERR,
                 api_denied("importlib.reload", "introspection"))


@attack("B11", "Names built at run time (getattr, chr chain)")
def test_B11(case, judge):
    out = case.run(ALL, {
        "getattr": "import os\nreturn getattr(os, 'sy' + 'stem')('id')",
        "chr": """
            m = __import__("".join(map(chr, (111, 115))))
            return getattr(m, bytes.fromhex("73797374656d").decode())("id")
            """,
    })
    judge.python(out["getattr"], API_ERR,
                 api_denied("os.system", "process-exec"))
    judge.python(out["chr"], API_ERR, api_denied("os.system", "process-exec"))


@attack("B16", "exec through sys.modules['builtins'] or FunctionType")
def test_B16(case, judge):
    out = case.run(ALL, {
        "builtins": """
            import sys
            sys.modules["builtins"].exec("import os; os.system('id')")
            """,
        "dunder": "__builtins__.exec('x = 1')",
        "functiontype": """
            import types
            return types.FunctionType(compile("1", "f", "eval"), {})()
            """,
        "code_replace": "return (lambda: 1).__code__.replace(co_consts=(2,))",
    })
    judge.python(out["builtins"], API_ERR,
                 api_denied("builtins.exec", "dynamic-code"))
    judge.python(out["dunder"], API_ERR,
                 api_denied("builtins.exec", "dynamic-code"))
    judge.python(out["functiontype"], API_ERR,
                 api_denied("builtins.compile", "dynamic-code"))
    judge.python(out["code_replace"], API_ERR,
                 api_denied("builtins.exec", "dynamic-code"))
