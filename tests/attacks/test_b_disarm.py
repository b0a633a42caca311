"""Group B of attacks.md: disarm the guard or recover an original. The
guard keeps its state in C and its originals out of Python's reach, so
the walks find nothing to reset (B1) and no back-reference (B4, B5); the
doors that remain (heap walks, frames, hooks, reload, code objects) are
API-guard refusals."""

import os
import textwrap

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


# The guard's "busy" count let every event of its thread pass while it ran
# Python code of its own, and the program could run code inside that:
# the scandir helpers compiled with the builtins of the calling frame (a
# function made with its own __builtins__), the refusal's exception class
# (whose __init__ the program may replace), importlib's package
# computation on the program's globals (a mapping's get()), and the
# package loader run at the first refusal. Each probe plants a
# posix.system() call there and raises what it met (a refusal), or
# returns when the call ran unjudged.
_BUSY = """
    import sys
    M = sys.modules
    posix = M['posix']
    met = []
    def evil(*a, **k):
        try:
            posix.system('touch ' + MARK)
        except BaseException as e:
            met.append(e)
        else:
            met.append(None)
"""
_BUSY_END = """
    if met and met[0] is not None:
        raise met[0]
    return 'ran unjudged' if met else 'never called'
"""


@attack("B20", "Program code run while the guard runs its own Python "
        "(builtins, exception classes, importlib helpers)")
def test_B20(case, judge):
    import os
    mark = case.path("busy-marker")

    def probe(body):
        return (f"MARK = {mark!r}\n" + textwrap.dedent(_BUSY) +
                textwrap.dedent(body) + textwrap.dedent(_BUSY_END))
    case.mkdir("d")
    case.write("d/f", "x")
    out = case.run("python-import=json\nexpose-ro=./d\n", {
        "helper_builtins": probe("""
            B = M['builtins']
            own = dict(B.__dict__)
            def imp(*a, **k):
                evil()
                return B.__import__(*a, **k)
            own['__import__'] = imp
            def trigger():
                return list(posix.scandir('d'))
            type(trigger)(trigger.__code__, {'__builtins__': own}, None,
                          None, trigger.__closure__)()
            if not met:
                raise LookupError('never called')
            """),
        "helper_globals": probe("""
            it = posix.scandir('d')
            g = type(it).__init__.__globals__
            real = g['__builtins__']['iter'] if isinstance(
                g['__builtins__'], dict) else g['__builtins__'].iter
            def iter_(x):
                evil()
                return real(x)
            g['iter'] = iter_
            list(posix.scandir('d'))
            """),
        "exception_init": probe("""
            try:
                open('/nonexistent/x')
            except OSError as e:
                cls = type(e)
            init = cls.__init__
            def patched(self, *a, **k):
                evil()
                init(self, *a, **k)
            cls.__init__ = patched
            try:
                open('/etc/shadow')
            except OSError:
                pass
            """),
        "import_globals": probe("""
            class G(dict):
                def get(self, *a):
                    evil()
                    return dict.get(self, *a)
            try:
                __import__('decoder', G(__name__='json.x',
                                       __package__='json'), None, (), 1)
            except ImportError:
                pass
            """),
    })
    for label in ("helper_globals", "exception_init", "import_globals"):
        judge.python(out[label], API_ERR,
                     api_denied("posix.system", "process-exec"))
    # the helpers' builtins are the guard's own now: the program's
    # __import__ is never called
    judge.structural(out["helper_builtins"], "LookupError", "the scandir "
                     "helpers use builtins taken at arming")
    assert not os.path.exists(mark)


@attack("B21", "A module planted as _socket before the socket class is "
        "captured")
def test_B21(case, judge):
    # a rule that lets a socket be made under the kernel providers
    out = case.run(ALL + "net=ALLOW|TCP|127.0.0.1|7|OUT\n", {"fake": """
        import sys, types
        M = sys.modules
        class Fake:
            def fileno(self):
                return -1          # a closed socket: let through
        fake = types.ModuleType('_socket')
        fake.socket = Fake
        M['_socket'] = fake
        import json                # the guard looks at sys.modules
        del M['_socket']
        import _socket
        s = _socket.socket()
        s.settimeout(5)
        s.connect(('127.0.0.1', 9))
        """})
    judge.python(out["fake"], "RuleSocketConnectionRefusedError",
                 "Guard network connection to '[127.0.0.1]:9' DENIED by "
                 "implicit default policy.")


@attack("B22", "A module planted in sys.modules with a C __getattr__ the "
        "guard calls busy")
def test_B22(case, judge):
    import os
    out = case.run(ALL, {"planted": """
        import sys, types
        M = sys.modules
        m = types.ModuleType('pty')
        # called with each name the API guard looks up ('spawn', 'fork')
        m.__getattr__ = M['posix'].mkdir
        M['pty'] = m
        import json                # the guard looks at sys.modules
        raise LookupError('nothing to see inside')
        """})
    judge.structural(out["planted"], "LookupError", "the guard reads a "
                     "module's own dictionary")
    assert not any(os.path.exists(case.path(n)) for n in ("spawn", "fork"))


def _marked(name):
    """A source that, run, leaves a file behind: the evidence outside (in
    rw/, a tree apart from the rule file: python-sb refuses a rule file in
    a writable tree it cannot keep read-only, restricted_env)."""
    return f"open({name!r}, 'w').write('ran')"


def _no_marks(case, names):
    ran = [n for n in names if os.path.exists(case.path(n))]
    assert not ran, f"the laundered source ran: {ran}"


@attack("B30", "exec laundered through importlib's "
        "_call_with_frames_removed, with no rule for dynamic code")
def test_B30(case, judge):
    """The guard lets the runtime and libraries call eval, exec and
    compile (namedtuple, dataclasses and enum build their methods so);
    the program's own calls need python-api=ALLOW:dynamic-code or an
    eval-* profile. importlib's _call_with_frames_removed(f, *args) calls
    f from a frozen frame: handed exec and a string, it ran the string
    as the library's until the exemption asked for a library frame that
    names the door it calls (weaknesses.md 9)."""
    case.mkdir("rw")
    rules = ALL + f"expose-rw={case.path('rw')}\n"
    out = case.run(rules, {"launder": f"""
        import sys
        ns = {{}}
        sys.modules["_frozen_importlib"]._call_with_frames_removed(
            exec, {_marked(case.path("rw/B30"))!r}, ns)
        return "ran"
        """})
    judge.python(out["launder"], API_ERR,
                 api_denied("builtins.exec", "dynamic-code"))
    _no_marks(case, ["rw/B30"])


@attack("B31", "eval, exec and compile handed to library code that calls "
        "what it is given: a thread's target, an executor, ExitStack, "
        "weakref.finalize, sched, importlib's compile, a C __iter__ "
        "namedtuple iterates, json's object_hook")
def test_B31(case, judge):
    """Each of these standard-library frames calls a callable the program
    handed it (self._target(*args), fn(*args), callback(*args)...): none
    names eval, exec or compile, so none lends the program the library's
    exemption. The source would leave a file in the case directory."""
    case.mkdir("rw")
    rules = (ALL + "python-api=ALLOW:threads\n" +
             f"expose-rw={case.path('rw')}\n")
    src = {n: _marked(case.path("rw/" + n)) for n in
           ("thread", "executor", "exitstack", "finalize", "sched",
            "compiled", "slot", "hook")}
    out = case.run(rules, {
        "thread": f"""
            import threading
            errors = []
            threading.excepthook = lambda a: errors.append(a.exc_value)
            t = threading.Thread(target=exec, args=({src["thread"]!r}, {{}}))
            t.start()
            t.join()
            if errors:
                raise errors[0]
            return "ran"
            """,
        "executor": f"""
            import concurrent.futures
            with concurrent.futures.ThreadPoolExecutor(1) as ex:
                ex.submit(exec, {src["executor"]!r}, {{}}).result()
            return "ran"
            """,
        "exitstack": f"""
            import contextlib
            with contextlib.ExitStack() as stack:
                stack.callback(exec, {src["exitstack"]!r}, {{}})
            return "ran"
            """,
        "finalize": f"""
            import weakref
            class Box:
                pass
            box = Box()
            weakref.finalize(box, eval,
                             {"(" + src["finalize"] + ")"!r}, {{}})()
            return "ran"
            """,
        "sched": f"""
            import sched
            s = sched.scheduler()
            s.enter(0, 0, exec, ({src["sched"]!r}, {{}}))
            s.run()
            return "ran"
            """,
        # namedtuple calls eval itself, on another line than the one
        # that iterates the program's defaults (a C __iter__)
        "slot": f"""
            import collections, functools
            class Defaults:
                __iter__ = functools.partial(
                    eval, {"(" + src["slot"] + ", iter(()))[1]"!r})
            collections.namedtuple("P", "a", defaults=Defaults())
            return "ran"
            """,
        "hook": f"""
            import json
            class K:
                def m(self):
                    pass
            bound = type(K().m)(eval, {"(" + src["hook"] + ")"!r})
            json.loads("{{}}", object_hook=bound)
            return "ran"
            """,
        "compiled": f"""
            import sys, types
            code = sys.modules["_frozen_importlib"]._call_with_frames_removed(
                compile, {src["compiled"]!r}, "x", "exec")
            types.FunctionType(code, {{}})()
            return "ran"
            """,
    })
    for label, door in (("thread", "exec"), ("executor", "exec"),
                        ("exitstack", "exec"), ("finalize", "eval"),
                        ("sched", "exec"), ("compiled", "compile"),
                        ("slot", "eval"), ("hook", "eval")):
        judge.python(out[label], API_ERR,
                     api_denied(f"builtins.{door}", "dynamic-code"))
    _no_marks(case, ["rw/" + n for n in src])


@attack("B33", "a program's source run by the standard library modules "
        "that run their caller's code: timeit, code, bdb, dis, "
        "logging.config")
def test_B33(case, judge):
    """These modules call compile, exec or eval by name, on the line the
    program's string reaches: by the name rule alone they lent it the
    library's exemption. Only the standard library's code makers
    (namedtuple, dataclasses, the import system...) keep it; a runner's
    string is the program's code (weaknesses.md 9)."""
    case.mkdir("rw")
    rules = ALL + f"expose-rw={case.path('rw')}\n"
    src = {n: _marked(case.path("rw/" + n)) for n in
           ("timeit", "console", "bdb", "dis", "config")}
    ini = ("[loggers]\nkeys=root\n[handlers]\nkeys=h\n[formatters]\n"
           "keys=\n[logger_root]\nhandlers=h\n[handler_h]\n"
           f"class=StreamHandler\nargs=(({src['config']}), )\n")
    out = case.run(rules, {
        "timeit": f"""
            import timeit
            timeit.timeit({src["timeit"]!r}, number=1)
            return "ran"
            """,
        "console": f"""
            import code
            code.InteractiveInterpreter().runsource({src["console"]!r})
            return "ran"
            """,
        "bdb": f"""
            import bdb
            bdb.Bdb().run({src["bdb"]!r})
            return "ran"
            """,
        "dis": f"""
            import dis, types
            co = dis.Bytecode({src["dis"]!r}).codeobj
            types.FunctionType(co, {{}})()
            return "ran"
            """,
        "config": f"""
            import io, logging.config
            logging.config.fileConfig(io.StringIO({ini!r}))
            return "ran"
            """,
    })
    for label, door in (("timeit", "compile"), ("console", "compile"),
                        ("bdb", "compile"), ("dis", "compile"),
                        ("config", "eval")):
        judge.python(out[label], API_ERR,
                     api_denied(f"builtins.{door}", "dynamic-code"))
    _no_marks(case, ["rw/" + n for n in src])


@attack("B34", "a program's source compiled by the standard library's "
        "code makers: importlib's source_to_code and _compile_bytecode, a "
        "ForwardRef and its __forward_code__, inspect's eval_str, "
        "MakeProxyType's method names, mock's and dataclasses' names")
def test_B34(case, judge):
    """These modules keep the exemption (they make code themselves), and
    took the source from their caller: types.FunctionType of the code they
    returned ran it with no dynamic-code rule. Now the import system makes
    code only from a file's whole content, typing and inspect only from a
    type expression, MakeProxyType only from an identifier in its template
    (guard/codesrc.c, weaknesses.md 9)."""
    case.mkdir("rw")
    case.write("rw/plain.py", "VALUE = 1\n")
    rules = ALL + f"expose-rw={case.path('rw')}\n"
    src = {n: _marked(case.path("rw/" + n)) for n in
           ("loader", "subclass", "bytecode", "forwardref", "annotated",
            "eval_str", "proxy", "forward_code", "mock", "dataclass")}
    plain = case.path("rw/plain.py")
    out = case.run(rules, {
        "loader": f"""
            import importlib.machinery, types
            loader = importlib.machinery.SourceFileLoader("x", {plain!r})
            code = loader.source_to_code({src["loader"]!r}.encode(),
                                         {plain!r})
            types.FunctionType(code, {{}})()
            return "ran"
            """,
        "subclass": f"""
            import importlib.machinery, types
            class Lying(importlib.machinery.SourceFileLoader):
                def get_data(self, path):
                    return {src["subclass"]!r}.encode()
            types.FunctionType(Lying("x", {plain!r}).get_code("x"), {{}})()
            return "ran"
            """,
        "bytecode": f"""
            import marshal, sys, types
            def mark():
                open({case.path("rw/bytecode")!r}, "w").write("ran")
            boot = sys.modules["importlib._bootstrap_external"]
            code = boot._compile_bytecode(marshal.dumps(mark.__code__),
                                          bytecode_path={plain!r})
            types.FunctionType(code, {{"open": open}})()
            return "ran"
            """,
        "forwardref": f"""
            import typing
            def g(x):
                pass
            g.__annotations__ = {{"x": {src["forwardref"]!r}}}
            typing.get_type_hints(g)
            return "ran"
            """,
        "annotated": f"""
            import typing
            def g(x):
                pass
            g.__annotations__ = {{"x": "Annotated[int, " +
                                  {src["annotated"]!r} + "]"}}
            typing.get_type_hints(g)
            return "ran"
            """,
        "eval_str": f"""
            import inspect
            def g(x):
                pass
            g.__annotations__ = {{"x": {src["eval_str"]!r}}}
            if not hasattr(inspect, "get_annotations"):
                # 3.9 has no eval_str: the program's own eval, refused
                return eval({src["eval_str"]!r})
            inspect.get_annotations(g, eval_str=True)
            return "ran"
            """,
        "proxy": f"""
            from multiprocessing.managers import MakeProxyType
            MakeProxyType("P", ["f(self):\\n        pass\\n" +
                                {src["proxy"]!r} + "\\ndef g"])
            return "ran"
            """,
        "forward_code": f"""
            import typing
            ref = typing.ForwardRef("int")
            ref.__forward_code__ = {src["forward_code"]!r}
            typing.get_type_hints(type("H", (), {{
                "__annotations__": {{"x": ref}}}}))
            return "ran"
            """,
        "mock": f"""
            from unittest import mock
            class Name(str):
                def isidentifier(self):
                    return True
            def spec():
                pass
            spec.__name__ = Name("x(*a, **k):\\n    pass\\n" +
                                 {src["mock"]!r} + "\\ndef y")
            mock.create_autospec(spec)
            return "ran"
            """,
        "dataclass": f"""
            import dataclasses
            C = dataclasses.dataclass(init=False)(type("C", (), {{
                "__annotations__": {{"x," + {src["dataclass"]!r}: int}}}}))
            c, d = C(), C()
            c.x = d.x = 1
            return str(c == d)
            """,
    })
    for label, door in (("loader", "compile"), ("subclass", "compile"),
                        ("bytecode", "exec"), ("forwardref", "compile"),
                        ("annotated", "compile"), ("eval_str", "eval"),
                        ("proxy", "exec"), ("forward_code", "eval"),
                        ("mock", "exec"), ("dataclass", "exec")):
        judge.python(out[label], API_ERR,
                     api_denied(f"builtins.{door}", "dynamic-code"))
    _no_marks(case, ["rw/" + n for n in src])


@attack("B32", "a frame reader and create_builtin handed to importlib's "
        "_call_with_frames_removed")
def test_B32(case, judge):
    """sys._getframe is the standard library's (logging and warnings read
    their caller's frame) and _imp.create_builtin importlib's; called
    through a frame that only forwards, they are the program's."""
    out = case.run(ALL, {
        "getframe": """
            import sys
            f = sys.modules["_frozen_importlib"]._call_with_frames_removed(
                sys._getframe, 0)
            return f.f_code.co_name
            """,
        "builtin": """
            import sys, _imp
            spec = sys.modules["posix"].__spec__
            m = sys.modules["_frozen_importlib"]._call_with_frames_removed(
                _imp.create_builtin, spec)
            return m is sys.modules["posix"]
            """,
    })
    judge.python(out["getframe"], API_ERR,
                 api_denied("sys._getframe", "introspection"))
    judge.python(out["builtin"], API_ERR,
                 api_denied("importlib.reload", "introspection"))
