#!/usr/bin/python3
"""bench/eval_bench.py - the eval guard beside plain eval, asteval and
simpleeval, on the same expressions (issue 16's performance budgets).

Run by bench/run (eval_section) or by hand: `eval_bench.py VARIANT` prints
one JSON object {row: seconds per evaluation} for VARIANT, one of plain,
guarded (must run under python-sb with EVAL_RULES), asteval, simpleeval.
In-process timing: start-up is not part of these rows.
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

# The rules the guarded variant runs under: the calculator profile plus
# range for the loop row.
EVAL_RULES = """\
python-import=*
eval-namespace=closed
eval-syntax=arith, compare, comprehension
eval-call=range, sum
eval-max-iterations=1_000_000
"""

ROWS = {
    # a new source each call: parse, check and compile every time
    "arithmetic, first call of a source": ("first", "{i} * 3 + (4 - x) / 2"),
    # the same source again: the guard's cache of checked code
    "arithmetic, same source again": ("same", "7 * 3 + (4 - x) / 2"),
    # a loop the iteration budget counts
    "loop of 2,000 iterations": ("same",
                                 "sum([i * i for i in range(2000)])"),
}

REPEAT = {"first": 2000, "same": 20000}
LOOP_REPEAT = 200


def evaluator(variant):
    names = {"x": 5}
    if variant == "plain":
        return lambda s: eval(s, {"x": 5})
    if variant == "guarded":
        from pysandboxes import guarded_eval
        return lambda s: guarded_eval(s, names=names)
    if variant == "asteval":
        import asteval
        interp = asteval.Interpreter()
        interp.symtable.update(names)
        return lambda s: interp.eval(s, raise_errors=True)
    if variant == "simpleeval":
        import simpleeval
        ev = simpleeval.EvalWithCompoundTypes(
            names=dict(names), functions={"range": range, "sum": sum})
        return ev.eval
    raise SystemExit(f"eval_bench: unknown variant {variant}")


def run_variant(variant):
    ev = evaluator(variant)
    out = {}
    for row, (kind, template) in ROWS.items():
        n = LOOP_REPEAT if "loop" in row else REPEAT[kind]
        srcs = [template.format(i=i) for i in range(n)] \
            if kind == "first" else [template] * n
        ev(template.format(i=-1))  # warm: imports, first compile
        t0 = time.perf_counter()
        for s in srcs:
            ev(s)
        out[row] = (time.perf_counter() - t0) / n
    return out


def eval_section(py, sb, rounds, env):
    """Markdown lines for bench/run: every variant's median per row, the
    ratio to plain eval, and the issue's budgets."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="pysb-evalbench-"))
    (work / ".py-sandboxes").write_text(EVAL_RULES)
    me = str(pathlib.Path(__file__).resolve())
    variants = {"plain": [py, me, "plain"],
                "guarded": [sb, f"--python={py}", me, "guarded"]}
    for lib in ("asteval", "simpleeval"):
        if subprocess.run([py, "-c", f"import {lib}"],
                          capture_output=True).returncode == 0:
            variants[lib] = [py, me, lib]
    got = {v: {r: [] for r in ROWS} for v in variants}
    for _ in range(rounds):
        for v, argv in variants.items():
            p = subprocess.run(argv, cwd=work, env=env, capture_output=True,
                               text=True)
            if p.returncode != 0:
                raise SystemExit(f"eval_bench: {v} failed:\n{p.stderr}")
            for r, t in json.loads(p.stdout).items():
                got[v][r].append(t)
    budgets = {"arithmetic, first call of a source": 5.0,
               "arithmetic, same source again": 1.5,
               "loop of 2,000 iterations": 2.0}
    lines = ["### Eval guard", "",
             "In-process, per evaluation, median of "
             f"{rounds} runs; interpreter `{py}`. Budgets (issue 16): "
             "guarded at most 5x plain `eval` for the first call of a "
             "source, 1.5x for the same source again, 2x for a loop under "
             "`eval-max-iterations`, and faster than asteval and "
             "simpleeval on every row.", "",
             "| row | " + " | ".join(f"{v} µs" for v in variants) +
             " | guarded/plain | budget | verdict |",
             "|---|" + "---:|" * len(variants) + "---:|---:|---|"]
    for r in ROWS:
        med = {v: statistics.median(got[v][r]) for v in variants}
        ratio = med["guarded"] / med["plain"]
        peers_ok = all(med["guarded"] < med[v] for v in variants
                       if v not in ("plain", "guarded"))
        ok = ratio <= budgets[r] and peers_ok
        lines.append(f"| {r} | " +
                     " | ".join(f"{med[v] * 1e6:.1f}" for v in variants) +
                     f" | {ratio:.2f}x | {budgets[r]:.1f}x | "
                     f"{'within' if ok else '**over**'} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    if len(sys.argv) == 2:
        print(json.dumps(run_variant(sys.argv[1])))
    elif sys.argv[1:2] == ["--section"]:
        print("\n".join(eval_section(sys.argv[2], sys.argv[3], 10,
                                     dict(os.environ))))
    else:
        raise SystemExit(__doc__)
