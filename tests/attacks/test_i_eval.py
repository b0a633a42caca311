"""Group I of attacks.md: the eval-* sub-language, where the attacker
writes the source a program evaluates (pysandboxes.guarded_eval, or eval /
exec / compile under eval-* rules). Each probe hands a payload to
guarded_eval and reports what came back: the escapes of I1..I24 are
refused with the documented message (statically, EvalSyntaxRejected, or at
run time, RuleEvalPermissionError and EvalInterrupted), and the variants
I38.. are the holes found here (the budget helpers shadowed through a
namespace the evaluated code holds, the interpreter's classes handed out
by type())."""

from harness import attack

# A permissive profile: what an "agent snippet" profile grants, plus the
# sensitive builtins the variants need. Budgets are small so that an
# escape (a loop past them) shows as a count, not a hang.
WIDE = """\
eval-syntax=arith, compare, conditional, loop, comprehension, assign
eval-syntax=func, subscript, fstring, exception, class, yield
eval-call=len, range, print, str, int, list, dict, type, getattr, setattr
eval-call=vars, breakpoint, exec, eval, compile, object, ZeroDivisionError
eval-call=next
eval-attribute=str-methods, list-methods, dict-methods, format
eval-max-iterations=1000
"""

GE = "from pysandboxes import guarded_eval\n"
SYNTAX = "EvalSyntaxRejected"
PERM = "RuleEvalPermissionError"
REJECTED = "1 rule violated in <eval:default>"
ITER = "evaluation interrupted: eval-max-iterations=1000"


def denied(target):
    return f"'{target}' is denied by the eval guard."


def probe(src, mode="exec"):
    """A probe body: guarded_eval(src) under the case's rules."""
    return GE + f"return guarded_eval({src!r}, mode={mode!r})\n"


@attack("I30", "The subclasses walk from an empty namespace (I1)")
def test_I30(case, judge):
    out = case.run(WIDE, {
        "dot": probe("().__class__.__base__.__subclasses__()", "eval"),
        "getattr": probe("getattr(getattr((), '__class__'), '__base__')",
                         "eval"),
    })
    judge.python(out["dot"], SYNTAX, "3 rules violated in <eval:default>")
    judge.python(out["getattr"], PERM, denied("__class__"))


@attack("I31", "A dunder through an f-string or a format template (I2, I9)")
def test_I31(case, judge):
    out = case.run(WIDE, {
        "fstring": probe("f'{().__class__}'", "eval"),
        "format": probe("'{0.__class__}'.format(())", "eval"),
        "nested": probe("'{0:{1.__class__}}'.format(1, ())", "eval"),
        "unbound": probe("str.format('{0.__class__}', ())", "eval"),
    })
    judge.python(out["fstring"], SYNTAX, REJECTED)
    judge.python(out["format"], SYNTAX, REJECTED)
    judge.python(out["nested"], SYNTAX, REJECTED)
    judge.python(out["unbound"], SYNTAX, REJECTED)


@attack("I32", "A frame by dot or by getattr, whatever the rules (I4, I5)")
def test_I32(case, judge):
    rules = WIDE + "eval-attribute=*\neval-magic=*\n"
    out = case.run(rules, {
        "dot": probe("(i for i in ()).gi_frame", "eval"),
        "getattr": probe("getattr((i for i in ()), 'gi_' + 'frame')",
                         "eval"),
        "tb": probe("try:\n    1/0\nexcept ZeroDivisionError as e:\n"
                    "    getattr(e.__traceback__, 'tb_' + 'frame')\n"),
    })
    judge.python(out["dot"], SYNTAX, REJECTED)
    judge.python(out["getattr"], PERM, denied("gi_frame"))
    judge.python(out["tb"], PERM, denied("tb_frame"))


@attack("I33", "Capability builtins granted by eval-call (I8)")
def test_I33(case, judge):
    out = case.run(WIDE, {
        "setattr": probe("setattr(print, '__doc__', 'x')"),
        "vars": probe("vars()"),
        "breakpoint": probe("breakpoint()"),
        "type3": probe("type('X', (), {})"),
    })
    judge.python(out["setattr"], PERM, denied("__doc__"))
    judge.python(out["vars"], PERM, denied("vars"))
    judge.python(out["breakpoint"], PERM, denied("breakpoint"))
    judge.python(out["type3"], PERM, denied("type() with three arguments"))


@attack("I34", "Recursion and loop floods meet the budgets (I12, I13)")
def test_I34(case, judge):
    out = case.run(WIDE, {
        "lambda": probe("(lambda g: g(g))(lambda f: f(f))", "eval"),
        "loop": probe("while True:\n    pass\n"),
        "comp": probe("[0 for _ in range(10**9)]", "eval"),
    })
    judge.python(out["lambda"], "EvalInterrupted",
                 "evaluation interrupted: eval-max-call-depth=20")
    judge.python(out["loop"], "EvalInterrupted", ITER)
    judge.python(out["comp"], "EvalInterrupted", ITER)


@attack("I35", "Bind or read the guard's __sb_ helpers (I16)")
def test_I35(case, judge):
    out = case.run(WIDE, {
        "assign": probe("__sb_tick__ = lambda: None\nwhile True:\n    pass\n"),
        "param": probe("(lambda __sb_enter__: 0)(1)", "eval"),
    })
    # two violations: the name is a dunder, and it is the guard's
    judge.python(out["assign"], SYNTAX, "2 rules violated in <eval:default>")
    judge.python(out["param"], SYNTAX, "2 rules violated in <eval:default>")


@attack("I36", "A code object the guard did not compile (I18)")
def test_I36(case, judge):
    # the program's own code object, handed to exec and eval: only code
    # objects the guarded compile() produced run
    out = case.run(WIDE, {
        "exec": "return exec((lambda: 'ran').__code__)",
        "eval": "return eval((lambda: 'ran').__code__)",
    })
    # no rule lifts it, and the message names none (it once suggested a
    # python-api= grant that is no rule)
    msg = ("'eval()/exec() of a code object the eval guard did not "
           "compile' is denied by the eval guard.")
    judge.python(out["exec"], "RuleEvalPermissionError", msg)
    judge.python(out["eval"], "RuleEvalPermissionError", msg)


@attack("I38", "exec with a locals dict that shadows the budget helpers")
def test_I38(case, judge):
    # LOAD_NAME reads the locals first: a dict the evaluated code built,
    # with a stub under the helper's name (spelled in two pieces: the
    # source may not contain it), ran the loop without a budget
    out = case.run(WIDE, {"locals": probe(
        "n = {'i': 0}\n"
        "exec('while i < 3000:\\n    i += 1\\n', {}, "
        "{'i': 0, '__sb' '_tick__': object})\n")})
    judge.python(out["locals"], "EvalInterrupted", ITER)


@attack("I39", "A function exec defined, its globals then rewritten")
def test_I39(case, judge):
    # the evaluated code keeps the globals dict it passed to exec: after
    # the exec, it replaces the helpers there, and the function defined in
    # it reads them when called
    out = case.run(WIDE, {"globals": probe(
        "d = {}\n"
        "exec('def f():\\n    i = 0\\n    while i < 3000:\\n"
        "        i += 1\\n    return i\\n', d)\n"
        "d['__sb' '_tick__'] = object\n"
        "d['__sb' '_enter__'] = object\n"
        "print(d['f']())\n")})
    judge.python(out["globals"], "EvalInterrupted", ITER)


@attack("I40", "type(int) is type: the three-argument class factory")
def test_I40(case, judge):
    # type() refuses three arguments, but type(int) handed out the real
    # type, which built a class with the hooks eval-magic refuses
    out = case.run(WIDE, {
        "factory": probe("X = type(int)('X', (), {'__del__': print})\n"
                         "X()\n"),
        "metaclass": probe("type(ZeroDivisionError)", "eval"),
    })
    judge.python(out["factory"], PERM, denied("type() of a type"))
    judge.python(out["metaclass"], PERM, denied("type() of a type"))


@attack("I41", "type(f) is FunctionType: guarded code, globals of our own")
def test_I41(case, judge):
    # a function built over a code object from the guarded compile, with
    # a globals dict that defines the helpers: its loop ran unbudgeted
    out = case.run(WIDE, {
        "function": probe(
            "c = compile('i = 0\\nwhile i < 3000:\\n    i += 1\\n', "
            "'x', 'exec')\n"
            "type(lambda: 0)(c, {'__sb' '_tick__': object})()\n"),
        "code": probe("type(compile('1', 'x', 'eval'))", "eval"),
        # a class without a constructor is handed out
        "generator": probe("str(type(i for i in ()))", "eval"),
    })
    judge.python(out["function"], PERM, denied("type() of a function"))
    judge.python(out["code"], PERM, denied("type() of a code"))
    assert out["generator"].msg == repr("<class 'generator'>"), out


@attack("I42", "eval(src, globals()): the program's own builtins' getattr")
def test_I42(case, judge):
    # eval-namespace=adaptive (the default) keeps a caller's globals that
    # carry __builtins__: the program's module globals do, and their
    # getattr was CPython's, which reads any dunder a string names
    out = case.run(WIDE, {
        "globals": "return eval(\"getattr((), '__cla' + 'ss__')\", "
                   "globals())",
        "explicit": "return eval(\"type(getattr((), '__class__'))\", "
                    "{'__builtins__': __builtins__})",
    })
    judge.python(out["globals"], PERM, denied("__class__"))
    judge.python(out["explicit"], PERM, denied("__class__"))


@attack("I43", "A generator's finally block, run by the collector later")
def test_I43(case, judge):
    # the evaluation leaves a started generator in its namespace: a
    # reference cycle (the function's globals hold it) that the collector
    # frees after guarded_eval returned; closing the generator ran its
    # finally block with no evaluation to charge, past eval-max-iterations.
    # Its first step is refused now (the collector reports the exception
    # to sys.unraisablehook, which hands it to the probe)
    out = case.run("python-import=gc\n" + WIDE, {"collector": """
        from pysandboxes import guarded_eval
        import gc, sys
        seen, lost = [], []
        sys.unraisablehook = lambda u: lost.append(u.exc_value)
        guarded_eval(
            "def g():\\n    try:\\n        yield 1\\n    finally:\\n"
            "        i = 0\\n        while i < 3000:\\n"
            "            i += 1\\n        seen.append(i)\\n"
            "x = g()\\nnext(x)\\n", names={"seen": seen}, mode="exec")
        gc.collect()
        if lost:
            raise lost[0]
        return seen
        """})
    judge.python(out["collector"], "EvalInterrupted",
                 "evaluation interrupted: a generator of an evaluation "
                 "closed after it")


@attack("I44", "string.Formatter's vformat and get_field read the fields (I11)")
def test_I44(case, judge):
    # a Formatter handed in through names=: its format() on a template
    # the checker cannot read is refused, but vformat and get_field (the
    # Python code that resolves '{0.__class__}') were granted by
    # eval-attribute like any name and read the dunder
    rules = ("python-import=*\n" + WIDE +
             "eval-attribute=vformat, get_field, _vformat\n")
    body = """
        import string
        from pysandboxes import guarded_eval
        return guarded_eval(%r, names={"F": string.Formatter()})
        """
    out = case.run(rules, {
        "vformat": body % "F.vformat('{0.__class__}', ((),), {})",
        "get_field": body % "F.get_field('0.__class__', ((),), {})",
        "getattr": body % "getattr(F, 'vfor' + 'mat')('{0.__class__}', "
                          "((),), {})",
    })
    judge.python(out["vformat"], SYNTAX, REJECTED)
    judge.python(out["get_field"], SYNTAX, REJECTED)
    judge.python(out["getattr"], PERM, denied("vformat"))
