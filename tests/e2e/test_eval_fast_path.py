"""The eval guard's fast path (guard/eval_scan.c) against its slow path.

A source whose tokens prove it a plain arithmetic or comparison expression
the checker would pass is compiled without the parse to AST objects and the
walk. The fast path must never admit what the slow path refuses, nor change
any outcome: each rule set runs a few thousand generated and mutated
sources through guarded_eval() and eval(), once as configured and once
with $PYSB_EVAL_NO_FAST_PATH (read when the guard arms: every source takes
the parse and the walk), and every outcome (the value, or the exception's
type and message) must be the same. The peak memory of each call shows
which path it took (the slow one builds the AST objects): the fast path
must have served a good share of the sources, or the comparison proves
nothing.
"""

import json
import random
import textwrap
import zlib

import pytest

PROGRAM = textwrap.dedent("""\
    import json, sys, tracemalloc
    from pysandboxes import guarded_eval
    srcs = json.loads(sys.stdin.read())
    names = {"x": 5, "y": -3, "z": 2.5, "_": 7, "match": 2, "print": 4}
    def outcome(fn):
        try:
            return "value " + repr(fn())
        except BaseException as e:
            return "raise %s: %s" % (type(e).__name__, e)
    tracemalloc.start()
    out = []
    for s in srcs:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        a = outcome(lambda: guarded_eval(s, names=names))
        peak = tracemalloc.get_traced_memory()[1] - base
        b = outcome(lambda: eval(s, {"x": 5, "y": -3}))
        out.append([a, b, peak])
    print(json.dumps(out))
    """)

RULE_SETS = {
    "arith": "eval-syntax=arith\n",
    "arith-compare": "eval-syntax=arith, compare\neval-call=abs, min\n",
    "deny-unary": "eval-syntax=arith, compare\n"
                  "eval-syntax=DENY:UnaryOp\n",
    "deny-binop": "eval-syntax=compare, UnaryOp\n",
    "small-budgets": "eval-syntax=arith, compare\neval-max-nodes=6\n"
                     "eval-max-depth=4\n",
    "magic": "eval-syntax=arith, compare\neval-magic=__name__, __x__\n"
             "eval-call=abs\neval-call=DENY:abs\n",
}

NUMBERS = ["0", "1", "2", "3", "7", "10", "12", "1.5", ".5", "5.", "1e3",
           "1E-2", "1e+2", "1_000", "0_0", "00", "0123", "0123.5", "1__0",
           "1_", "1e", "1e+", "1j", "0x1f", "0o7", "0b1", "1.e2", "9" * 30]
NAMES = ["x", "y", "z", "_", "w", "match", "case", "type", "abs", "min",
         "len", "print", "True", "False", "None", "if", "else", "not",
         "and", "or", "in", "is", "lambda", "await", "__name__", "__x__",
         "__class__", "__import__", "__builtins__", "__sb_tick__", "__sb_x",
         "__debug__", "a" * 70, "__" + "a" * 66 + "__", "__" + "a" * 59 +
         "__", "é", "xé", "\uff58"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<", ">", "<=", ">=",
             "==", "!=", "<<", ">>", "&", "|", "^", "~", "@", "=", "->",
             ":=", "<>", "!", ":", "+=", "*=", "**="]
OTHER = ["(", ")", "(", ")", ".", ",", "[", "]", "{", "}", "'a'", '"',
         "f'{x}'", "b''", "#", "\\", "\n", "\t", " ", "  ", "\r", "\x00",
         ";", "$", "?", "`"]
CHARS = "0123456789xyz_.+-*/%<>=!()[],:'\" \t\n#\\eEj@~^&|"


def expression(rng, depth=0):
    """A well-formed expression of the fast path's grammar (mostly)."""
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice(NUMBERS[:15] + NAMES[:6])
    if r < 0.45:
        return rng.choice(["-", "+", "- ", "+-"]) + expression(rng,
                                                               depth + 1)
    if r < 0.6:
        return "(" + expression(rng, depth + 1) + ")"
    op = rng.choice(OPERATORS[:14])
    if op == "**":
        return "%s ** %s" % (rng.choice("0123"), rng.choice("0123"))
    sep = rng.choice(["", " ", "\t"])
    return expression(rng, depth + 1) + sep + op + sep + expression(
        rng, depth + 1)


def mutate(rng, s):
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(s))
        k = rng.random()
        if k < 0.4:
            s = s[:i] + rng.choice(CHARS) + s[i:]
        elif k < 0.6:
            s = s[:i] + s[i + 1:]
        elif k < 0.8:
            s = s[:i] + rng.choice(NAMES + OPERATORS + NUMBERS) + s[i:]
        else:
            j = rng.randint(i, len(s))
            s = s[:i] + s[i:j] + s[i:j] + s[j:]
    return s


def soup(rng):
    pool = NUMBERS + NAMES + OPERATORS * 2 + OTHER
    toks = [rng.choice(pool) for _ in range(rng.randint(1, 10))]
    sep = rng.choice(["", " ", " "])
    s = sep.join(toks)
    # one power at most: 9**9**9 would take the whole test's time
    head, _, tail = s.partition("**")
    return head + ("**" + tail.replace("**", "*") if _ else "")


EDGES = [
    "1", "x", "-1", "+x", "- - 1", "2**-1", "-x ** 2", "1 .real",
    "1.real", "1..real", "1.e5", "0123", "00", "0_0", "1__0", "1_", "1e",
    "1e+5", ".5", "5.", "1j", "0x10", " 1", "1 ", "\t1", "1\t", "1\n",
    "1\x00+2", "1\x00+__import__", "x (1)", "x[0]", "x.real", "x<>y",
    "x<=y", "x=<y", "x->y", "x=y", "x==y", "x!=y", "x!y", "x<<y", "x>>y",
    "x//y", "x///y", "x***y", "(x)", "()", "(", ")", "((x)", "(x))",
    "x y", "x\\\n+1", "x#c", "'a'", "x if x else y", "not x", "x and y",
    "True", "None", "__name__", "__x__", "__sb_tick__", "__import__",
    "print", "abs", "min", "match", "_", "\u00e9", "\uff58", "a" * 70,
    "__" + "a" * 66 + "__", "__" + "a" * 59 + "__",
    "__" + "a" * 59 + "__b", "(" * 250 + "1" +
    ")" * 250, "(" * 150 + "x" + ")" * 150, "+".join(["x"] * 30),
    "-" * 30 + "x", "1<2<3", "x<y==z", "1 + (2", "1 + 2)", "x+", "*x",
    "1 2", "x(", "(1)(2)", "1e5j", "1_000.000_1e1_0", "0.0", "0e0",
    "123 * 3 + (4 - x) / 2", "x / 0", "x // 0", "x % 0", "10 ** 400",
    "10.0 ** 400", "y ** 0.5", "1 +\t2", "1 + 2 + 3 + 4 + 5",
    "1 + 2 + 3 + 4 + 5 + 6", "((((1))))", "-(-(-(-x)))", "x<=>y",
    "x=>y", "x==>y", "x!==y", "x%=y", "x//=y", "x**=y", "x:=1",
    # a keyword where an operand goes: 'not' makes a UnaryOp of its own
    "not -x", "not + 1", "not -1 < 2", "1 + not", "await -x", "None + 1",
    "True * 2", "lambda -x", "yield -x",
]


def sources(seed):
    rng = random.Random(seed)
    out = list(EDGES)
    for _ in range(900):
        out.append(expression(rng))
    for _ in range(900):
        out.append(mutate(rng, expression(rng)))
    for _ in range(900):
        out.append(soup(rng))
    return out


def run_set(run_sb, tmp_cwd, rules, srcs, slow, python=None):
    extra = "env=PYSB_EVAL_NO_FAST_PATH=1\n" if slow else ""
    (tmp_cwd / ".py-sandboxes").write_text(
        "python-import=*\n" + rules + extra)
    (tmp_cwd / "prog.py").write_text(PROGRAM)
    r = run_sb(([f"--python={python}"] if python else []) + ["prog.py"],
               input=json.dumps(srcs), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def compare(run_sb, tmp_cwd, rules, srcs, python=None):
    fast = run_set(run_sb, tmp_cwd, rules, srcs, False, python)
    slow = run_set(run_sb, tmp_cwd, rules, srcs, True, python)
    differ = [(s, f[:2], w[:2]) for s, f, w in zip(srcs, fast, slow)
              if f[:2] != w[:2]]
    assert not differ, "\n".join(repr(d) for d in differ[:20])
    # the fast path ran: the slow path's AST objects add some hundreds of
    # bytes to the peak (a source both paths refuse varies by less)
    served = [(s, f) for s, f, w in zip(srcs, fast, slow)
              if w[2] - f[2] >= 500]
    assert len(served) >= 100, len(served)
    # and what it served is what it may serve
    for s, f in served:
        assert not f[0].startswith(("raise EvalSyntaxRejected",
                                    "raise SyntaxError")), (s, f)


@pytest.mark.parametrize("name", sorted(RULE_SETS))
def test_the_fast_path_changes_no_outcome(run_sb, tmp_cwd, name):
    compare(run_sb, tmp_cwd, RULE_SETS[name],
            sources(zlib.crc32(name.encode())))


def test_every_interpreter_agrees(run_sb, tmp_cwd, python_exe):
    """Each CPython's tokenizer and parser read the admitted subset
    alike."""
    compare(run_sb, tmp_cwd, "eval-syntax=arith, compare\n"
            "eval-syntax=DENY:UnaryOp\neval-max-depth=5\n"
            "eval-magic=__x__\n", sources(1))
