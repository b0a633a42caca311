"""The result channel's opcode pre-scan in C (src/prescan.c, issue 7) against
its Python reference (_unpickle._prescan_py): the same verdict, the same
message and the same garbled flag for every stream.

The comparison runs in a child interpreter set up the way partial mode is
used (PYTHONPATH to the repository's python/ directory, PYSB_PYTHON_SB to
the launcher under test), so the package finds libpysb-prescan.so exactly
as it does for an application. The corpus: many Python values pickled with
protocols 0 to 5, then thousands of mutations and truncations of them from
a fixed seed, under the default budgets and under small random ones.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, sb_path

PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) \
    else sys.executable
SEED = 20240607
MUTATIONS = 6000

# Run in the child; prints one JSON object.
CHILD_COMMON = '''
import collections, datetime, decimal, fractions, json, os, pickle, random
import sys, uuid
from pysandboxes import _unpickle as U

IMPL = U.PRESCAN_IMPL  # chooses, and loads the library: before _prescan_c

def outcome(fn, data, limits):
    try:
        fn(data, limits)
    except pickle.UnpicklingError as exc:
        return [type(exc).__name__, bool(getattr(exc, "garbled", False)),
                str(exc)]
    except Exception as exc:  # neither may fail any other way
        return ["unexpected", type(exc).__name__, str(exc)]
    return ["ok"]


def compare(cases):
    """cases: (label, data, limits); the mismatches, and the counts."""
    bad, counts = [], collections.Counter()
    for label, data, limits in cases:
        want = outcome(U._prescan_py, data, limits)
        got = outcome(U._prescan_c, data, limits)
        if got != want:
            bad.append([label, data[:80].hex(), len(data), got, want])
        counts["accepted" if want == ["ok"] else
               "garbled" if want[1] is True else "refused"] += 1
    return bad, counts


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class Slotted:
    __slots__ = ("a",)

    def __init__(self):
        self.a = 1


def values():
    shared = [1, "two", 3.0]
    cyclic = [1, 2]
    cyclic.append(cyclic)
    nested = []
    cur = nested
    for _ in range(60):
        cur.append([])
        cur = cur[0]
    return [
        None, True, False, 0, 1, -1, 255, 256, 65535, 65536, -2 ** 31,
        2 ** 31, 2 ** 63, -2 ** 64, 2 ** 2000, 0.0, -1.5, float("inf"),
        1e300, complex(1, -2), "", "a", "h\\u00e9llo \\u2603", "x" * 300,
        "\\U0001f600" * 70, b"", b"\\x00\\xff", b"y" * 300, bytearray(b"ab"),
        bytearray(70000), (), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4),
        [], [1], list(range(2500)), {}, {"a": 1}, {i: str(i) for i in
        range(1200)}, set(), {1, 2, 3}, set(range(1500)), frozenset(),
        frozenset({"a"}), frozenset(range(1100)), [shared, shared, (shared,)],
        cyclic, nested, ("ok", 42), ("err", ("builtins", "ValueError",
        "boom", [])), ("out", "stdout", "text\\n"),
        range(3, 10, 2), slice(1, 2), collections.OrderedDict(a=1),
        collections.Counter("hello"), collections.deque([1, 2]),
        datetime.datetime(2024, 6, 7, 12, 0, 1, 5),
        datetime.date(2024, 1, 1), datetime.timedelta(seconds=5),
        decimal.Decimal("1.25"), fractions.Fraction(1, 3),
        uuid.UUID(int=12345), ValueError("bad", 3), KeyError("k"),
        Point(1, [2, 3]), Slotted(), Ellipsis, NotImplemented, len, print,
        b"z" * (1 << 20),
    ]


def corpus():
    out = []
    for i, value in enumerate(values()):
        for proto in range(0, pickle.HIGHEST_PROTOCOL + 1):
            try:
                out.append((f"value {i} p{proto}",
                            pickle.dumps(value, proto)))
            except Exception:
                pass
    buffers = []
    out.append(("out-of-band p5", pickle.dumps(
        pickle.PickleBuffer(b"oob"), 5, buffer_callback=buffers.append)))
    out.append(("out-of-band ro p5", pickle.dumps(
        pickle.PickleBuffer(bytearray(b"oob")), 5,
        buffer_callback=buffers.append)))
    return out
'''

CHILD_VALUES = CHILD_COMMON + '''
cases = []
for label, data in corpus():
    cases.append((label, data, U.Limits()))
    cases.append((label + " ba", bytearray(data), U.Limits()))
bad, counts = compare(cases)
print(json.dumps({"impl": U.PRESCAN_IMPL, "path": U._c_path,
                  "bad": bad, "counts": counts, "n": len(cases)}))
'''

CHILD_MUTATIONS = CHILD_COMMON + '''
seed, count = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
base = [d for _, d in corpus() if len(d) < 5000]
# opcodes worth planting: MARK users, memo puts, length-prefixed, refused
PLANT = b"(.012Nae bd}])lRsut" + bytes(range(0x80, 0x9a)) + b"KhqMJjrGCXBcioPQ"


def mutate(d):
    d = bytearray(d)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(9)
        pos = rng.randrange(len(d) + 1)
        if op == 0 and d:
            d[min(pos, len(d) - 1)] = rng.randrange(256)
        elif op == 1 and d:
            d[min(pos, len(d) - 1)] = rng.choice(PLANT)
        elif op == 2:
            d[pos:pos] = bytes([rng.choice(PLANT)])
        elif op == 3:
            del d[pos:pos + rng.randrange(1, 9)]
        elif op == 4:
            del d[pos:]
        elif op == 5 and d:
            a = rng.randrange(len(d))
            d[pos:pos] = d[a:a + rng.randrange(1, 32)]
        elif op == 6:
            # a huge or off-by-one length after a length-prefixed opcode
            d[pos:pos + 8] = rng.choice((b"\\xff" * 8, b"\\xf7" + b"\\xff" * 7,
                                         bytes([rng.randrange(256)]) * 8))
        elif op == 7:
            d += bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
        else:
            d[pos:pos] = b"(" * rng.randrange(1, 20)
    return bytes(d)


def limits(data):
    if rng.random() < 0.6:
        return U.Limits()
    n = len(data)
    return U.Limits(max_bytes=rng.choice((1 << 26, n, n - 1, 0, -1)),
                    max_opcodes=rng.choice((1 << 23, rng.randrange(n + 2),
                                            0, -5)),
                    max_memo=rng.choice((1 << 20, rng.randrange(6), 0, -1)),
                    max_depth=rng.choice((512, rng.randrange(6), 0, -1)))


cases = []
for i in range(count):
    data = mutate(rng.choice(base))
    cases.append((f"mutation {i}", data, limits(data)))
    if i % 4 == 0:
        cut = rng.randrange(len(data) + 1)
        cases.append((f"truncation {i}", data[:cut], limits(data)))
    if i % 10 == 0:
        cases.append((f"bytearray {i}", bytearray(data), limits(data)))
random_bytes = [bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
                for _ in range(count // 4)]
cases += [(f"random {i}", d, limits(d)) for i, d in enumerate(random_bytes)]
bad, counts = compare(cases)
print(json.dumps({"impl": U.PRESCAN_IMPL, "bad": bad[:20],
                  "n_bad": len(bad), "counts": counts, "n": len(cases)}))
'''

CHILD_WIRING = CHILD_COMMON + '''
import pickle
out = {"impl": U.PRESCAN_IMPL, "path": U._c_path}
lim = U.Limits()
data = pickle.dumps(("ok", list(range(50))), 5)
# the package's prescan() is the C one, and says what the Python one says
out["prescan"] = outcome(U.prescan, data[:-1], lim)
out["prescan_py"] = outcome(U._prescan_py, data[:-1], lim)
# a budget changed on a Limits in use applies at once
U.prescan(data, lim)
lim.max_opcodes = 3
out["changed"] = outcome(U.prescan, data, lim)
# budgets C cannot hold, and other buffer types, go to the Python prescan
out["size"] = len(data)
out["float"] = outcome(U.prescan, data, U.Limits(max_bytes=10.0))
out["huge"] = outcome(U.prescan, data, U.Limits(max_opcodes=1 << 70))
out["memoryview"] = outcome(U.prescan, memoryview(data)[:-1], U.Limits())
# a bytearray is viewed, not copied, and released after the scan
ba = bytearray(data)
out["bytearray"] = outcome(U.prescan, ba, U.Limits())
out["bytearray_bad"] = outcome(U.prescan, ba + b"x", U.Limits())
ba.append(0)
out["resizable"] = True
out["loads"] = U.loads(data)[1][-1]
out["ctypes_in_parent"] = "ctypes" in sys.modules
# what a worker is never gets the library
pkg = sys.modules["pysandboxes"]
pkg._in_sandbox = True
out["in_sandbox"] = U._load_c()
pkg._in_sandbox = False
print(json.dumps(out))
'''


def run_child(script, *args, timeout=300, cwd=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python")
    env["PYSB_PYTHON_SB"] = str(sb_path())
    env.pop("PYTHONSTARTUP", None)
    res = subprocess.run([PYTHON, "-c", textwrap.dedent(script)] +
                         [str(a) for a in args], env=env, cwd=cwd,
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n" \
                                f"{res.stderr}"
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def lib(sb):
    path = os.path.join(os.path.dirname(os.path.realpath(sb)),
                        "libpysb-prescan.so")
    if not os.path.isfile(path):
        pytest.fail(f"{path} is not built: run make first", pytrace=False)
    return path


def test_the_c_prescan_is_in_use(lib):
    out = run_child(CHILD_WIRING)
    assert out["impl"] == "c"
    assert out["path"] == lib
    assert out["prescan"] == out["prescan_py"] == [
        "RestrictedUnpicklingError", True,
        "truncated pickle stream: no STOP opcode"]
    assert out["changed"] == ["RestrictedUnpicklingError", False,
                              "the payload holds more than 3 opcodes"]
    assert out["float"] == ["RestrictedUnpicklingError", False,
                            f"the payload is {out['size']} bytes, over the "
                            f"limit of 10.0 bytes"]
    assert out["huge"] == ["ok"]
    assert out["memoryview"][:2] == ["RestrictedUnpicklingError", True]
    assert out["bytearray"] == ["ok"]
    assert out["bytearray_bad"] == ["RestrictedUnpicklingError", True,
                                    "data after the STOP opcode"]
    assert out["resizable"] and out["loads"] == 49
    assert out["ctypes_in_parent"]
    assert out["in_sandbox"] is None


def test_values_all_protocols(lib):
    out = run_child(CHILD_VALUES)
    assert out["impl"] == "c"
    assert out["bad"] == []
    # the corpus exercises all three verdicts
    assert out["counts"]["accepted"] > 200
    assert out["counts"]["refused"] > 100
    assert out["counts"]["garbled"] > 50
    assert out["n"] > 800


def test_mutations_and_truncations(lib):
    out = run_child(CHILD_MUTATIONS, SEED, MUTATIONS)
    assert out["impl"] == "c"
    assert out["n_bad"] == 0, json.dumps(out["bad"], indent=1)
    assert out["n"] > MUTATIONS
    for verdict in ("accepted", "refused", "garbled"):
        assert out["counts"][verdict] > 300, out["counts"]


WORKER_MODULE = '''
import sys
from pysandboxes import sandbox


@sandbox
def state():
    try:
        from pysandboxes import _unpickle
        impl = _unpickle.PRESCAN_IMPL
    except ImportError as exc:
        impl = type(exc).__name__
    return impl, "ctypes" in sys.modules
'''


def test_a_worker_never_loads_the_library(lib, tmp_cwd):
    """Only the parent loads the library: in a worker ctypes would be an
    import the rules judge, and a worker decodes no results."""
    (tmp_cwd / "wmod.py").write_text(WORKER_MODULE)
    (tmp_cwd / ".py-sandboxes").write_text(
        "python-import=wmod\npython-import=pysandboxes\nexpose-ro=.\n")
    out = run_child('''
        import json, sys
        from pysandboxes import sandboxes
        import wmod
        with sandboxes():
            print(json.dumps(wmod.state()))
    ''', cwd=str(tmp_cwd))
    # the package is refused there, or it keeps the Python prescan
    assert out in (["ImportError", False], ["py", False])
