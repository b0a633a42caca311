"""Group P: partial mode's result channel (issue 21), attacked from inside a
confined @sandbox function and judged from outside, in the parent.

The hostile function reaches what a function can: the worker's transport
module in sys.modules (whose reply() stamps the id of the call in flight
and nothing else), the raw socket (sys.argv[1] in the worker), threads,
the worker's own module state. Each case runs a real parent application
(Debian's python3, PYTHONPATH to the repository's python/, the launcher
under test) in a fresh directory, under the column's provider for the
worker (subprocess: the Python layer; landlock: Landlock and seccomp too),
as root and as uid 65534. Evidence is what the parent observes after the
calls: its classes, a file it writes through a Path, its time and peak
memory during a decode, which result each call got.

P1 data-only results change no existing object (BUILD, SETITEM on classes
   and globals, in a result or riding inside an ordinary reply, or hidden
   from the scan by a frame the decoder would read otherwise);
P2 a decode is bounded by max_result (a range consumed by a constructor, a
   size argument, a memo-amplified copy);
P3 remote exceptions cross as capped plain data: printing them ends;
P4 frames belong to calls: extra, late, raw or thread-sent replies end the
   worker, never shift the stream;
P5 isolated=True: nothing a call plants in the worker reaches a later
   call (and without it, the documented sharing is what happens).
"""
import json
import os
import pathlib
import shutil
import stat
import subprocess
import tempfile
import textwrap
import time

import pytest

from harness import (ABI, DEBIAN_PYTHON, REPO, as_nobody, chown_tree,
                     sb_path, scaled)
from pysbtest import qemu_missing



COLUMNS = ["subprocess", "landlock", "subprocess/nobody", "landlock/nobody",
           "qemu"]

MODULE = '''
import os, sys, threading, time
from pysandboxes import sandbox


def _reply(kind, frame):
    """The worker's own transport, as the function can reach it."""
    sys.modules["pysandboxes._pysbframe"].reply(kind, [frame], True)


@sandbox
def forge(frame, kind=ord("k")):
    _reply(kind, frame)
    # the reply is sent: nothing more may come for this call
    try:
        _reply(ord("k"), frame)
    except Exception as exc:
        return type(exc).__name__
    return "SECOND REPLY SENT"


@sandbox
def echo(x):
    return ("echo", x)


@sandbox
def spray(n):
    """Queue replies for later calls: raw frames with a made-up id, and a
    thread that keeps trying the transport and the socket."""
    fd = int(sys.argv[1])
    import pickle
    body = pickle.dumps(("echo", "ATTACKER"), 5)
    for i in range(n):
        frame = i.to_bytes(8, "big") + b"k" + body
        os.write(fd, len(frame).to_bytes(4, "big") + frame)

    def later():
        for _ in range(200):
            try:
                _reply(ord("k"), body)
            except Exception:
                pass
            time.sleep(0.005)
    threading.Thread(target=later, daemon=True).start()
    return ("echo", "spray")


@sandbox
def plant():
    """Replace echo() in the worker's function cache, and a module."""
    w = sys.modules["pysandboxes._worker"]

    def evil(x):
        return ("echo", "PLANTED")
    for key in list(w._functions) + [(__name__, "echo")]:
        w._functions[key] = evil
    os.environ["PLANTED"] = "1"
    return "planted"


@sandbox
def probe():
    return os.environ.get("PLANTED")


@sandbox
def transport_doors(pgid):
    """The worker's fork and reap, as the function reaches them: reap()
    killed the process group of any pid it was given, fork_call() forked
    with no process-exec grant."""
    f = sys.modules["pysandboxes._pysbframe"]
    out = {}
    try:
        out["kill"] = repr(f.reap(pgid))
    except Exception as exc:
        out["kill"] = type(exc).__name__
    try:
        pid = f.fork_call()
    except Exception as exc:
        out["fork"] = type(exc).__name__
    else:
        if pid == 0:
            os._exit(0)
        out["fork"] = "forked"
    return out


@sandbox
def plant_links(victim, rule_file):
    """Links for every name a writer of rule_file ever used: the temporary
    '<file>.<pid>.tmp' for the pids around this worker's parent, and the
    backups '<file>.old[_N]'."""
    names = [f"{rule_file}.old"] + [f"{rule_file}.old_{i}"
                                    for i in range(1, 10)]
    ppid = os.getppid()
    names += [f"{rule_file}.{pid}.tmp"
              for pid in range(max(2, ppid - 3000), ppid + 3000)]
    # libc's symlink(): Landlock does not judge a link's target, and the
    # policy grants native code
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    return sum(libc.symlink(victim.encode(), name.encode()) == 0
               for name in names)


# exception classes whose code a remote name must not make the parent run
LOG = []


class Hooked(Exception):
    def __init_subclass__(cls, **kw):
        LOG.append("__init_subclass__ " + cls.__name__)
        super().__init_subclass__(**kw)

    def __str__(self):
        return "hooked"


class Watched(Exception):
    def __setattr__(self, name, value):
        LOG.append("__setattr__ " + name)
        super().__setattr__(name, value)


# P10: classes of the parent's whose code runs without a call of the
# parent's naming it: at collection, when printed, compared or hashed.
# Each leaves a file in its working directory (the worker may not write
# there: expose-ro=.), so the file is the parent's doing.
def _mark(what):
    try:
        open("ran-" + what, "w").close()
    except OSError:
        pass


class Finalized(Exception):
    def __del__(self):
        _mark("del")


class Looked(Exception):
    def __getattr__(self, name):
        _mark("getattr")
        raise AttributeError(name)


class Compared(Exception):
    def __eq__(self, other):
        _mark("eq")
        return False

    def __hash__(self):
        _mark("hash")
        return 0


class Located(SyntaxError):
    @property
    def lineno(self):
        _mark("lineno")
        return 1


class _Meta(type):
    def __getattribute__(cls, name):
        if name == "__qualname__" and os.environ.get("PYSB_P10_ARMED"):
            _mark("metaclass")
        return type.__getattribute__(cls, name)


class Metaclassed(Exception, metaclass=_Meta):
    pass


@sandbox
def pass_fds(n):
    """Descriptors to the parent with SCM_RIGHTS on the worker's socket:
    pipes, each after a frame header that a garbled stream would read."""
    import array, socket
    sock = socket.socket(fileno=os.dup(int(sys.argv[1])))
    fds = []
    for _ in range(n):
        fds.extend(os.pipe())
    sent = 0
    for i in range(0, len(fds), 64):
        part = array.array("i", fds[i:i + 64])
        try:
            sock.sendmsg([b"\\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                     part.tobytes())])
            sent += len(part)
        except OSError as exc:
            return "refused: " + type(exc).__name__
    return sent


@sandbox
def raise_named(name):
    import builtins
    raise (globals().get(name) or getattr(builtins, name))("m")
'''

RULES = """python-import=*
expose-ro=.
"""

# the parent: prints one JSON object
MAIN_COMMON = '''
import io, json, os, pathlib, resource, sys, time, traceback
import collections, datetime, decimal, fractions, ipaddress, uuid
import pysandboxes
from pysandboxes import sandboxes, SandBoxProtocolError
import sbmod

out = {}


def classes():
    mods = (pathlib, ipaddress, collections, datetime, decimal, fractions,
            uuid)
    seen = []
    for m in mods:
        for v in vars(m).values():
            if isinstance(v, type):
                seen.extend(c for c in v.__mro__ if c is not object)
    return seen


def snapshot():
    return {f"{c.__module__}.{c.__qualname__}.{k}": repr(v)[:60]
            for c in classes() for k, v in list(vars(c).items())}


def outcome(fn, *args, **kw):
    try:
        return ["ok", repr(fn(*args, **kw))[:200]]
    except BaseException as exc:
        return [type(exc).__name__, str(exc)[:300]]
'''

MAIN_P1 = MAIN_COMMON + '''
import pickle
G = b"\\x80\\x05"
def name(m, n):
    return (b"\\x8c" + bytes([len(m)]) + m.encode() + b"\\x8c" +
            bytes([len(n)]) + n.encode() + b"\\x93")
def s(v):
    return b"\\x8c" + bytes([len(v)]) + v.encode()
frames = {
    # BUILD on the class itself, alone and inside an ordinary result
    "build class": G + name("pathlib", "PurePath") + b"}" + s("_str") +
        s("/tmp/evil.pth") + b"sb.",
    "build class in a result": G + b"(" + s("fine") + name(
        "ipaddress", "IPv4Address") + b"}" + s("is_private") +
        b"\\x88sb0" + b"K\\x01t.",
    "build memoized class": G + name("ipaddress", "_BaseAddress") +
        b"\\x94" + b"0h\\x00}" + s("is_loopback") + b"\\x88sb.",
    "setitem on a class": G + name("collections", "OrderedDict") +
        s("k") + s("v") + b"s.",
    "append to a class": G + name("collections", "deque") + s("v") +
        b"a.",
    "build a fresh path": G + name("pathlib", "PurePosixPath") + s("a") +
        b"\\x85R}" + s("_raw_paths") + b"](" + s("/etc") +
        b"eb.",
    "build a shared zone": G + name("datetime", "timezone") + b"N\\x85R}b.",
    # the decoder must run the opcodes the scan saw: an argument across
    # the end of its frame made the file-reading Unpickler take it from
    # past the frame and run bytes the scan read as a SHORT_BINBYTES (a
    # BUILD on pathlib.PurePath); a frame inside a frame, a frame longer
    # than the stream are the same family
    "opcode across its frame": b"\\x80\\x05\\x95\\x05" + bytes(7) +
        b"K\\x01" + b"0M\\x07\\x07C(" + name("pathlib", "PurePath") +
        b"N}" + s("pwned") + b"K\\x01s\\x86" + b"b0N0N0N0N" + b"0N.",
    "frame inside a frame": b"\\x80\\x05\\x95\\x40" + bytes(7) +
        b"\\x95\\x20" + bytes(7) + name("pathlib", "PurePath") + b"N}" +
        s("pwned") + b"K\\x01s\\x86b.",
    "frame past the stream": b"\\x80\\x05\\x95\\xff\\xff" + bytes(6) +
        name("pathlib", "PurePath") + b"N}" + s("pwned") +
        b"K\\x01s\\x86b.",
}
before = snapshot()
with sandboxes(workers=1, max_result=4096):
    for label, frame in frames.items():
        out[label] = outcome(sbmod.forge, frame)
    out["after"] = sbmod.echo(1)
# the same over 64 KiB: the parent reads such a frame into the buffer it
# keeps from call to call (_pysbframe.recv's spare), not into fresh bytes
pad = b"X" + (100000).to_bytes(4, "little") + b"a" * 100000 + b"0"
with sandboxes(workers=1, max_result=1 << 20):
    for label in ("build class", "build class in a result"):
        out[label + ", large"] = outcome(sbmod.forge, G + pad +
                                         frames[label][2:])
    out["large after"] = sbmod.echo("b" * 200000) == ("echo", "b" * 200000)
after = snapshot()
out["changed"] = sorted(k for k in set(before) | set(after)
                        if before.get(k) != after.get(k))
# the parent's own write through a Path lands where it asked
pathlib.Path("written.txt").write_text("parent")
out["private"] = ipaddress.ip_address("8.8.8.8").is_private
out["loopback"] = ipaddress.ip_address("8.8.8.8").is_loopback
print(json.dumps(out))
'''

MAIN_P2 = MAIN_COMMON + '''
G = b"\\x80\\x05"
def name(m, n):
    return (b"\\x8c" + bytes([len(m)]) + m.encode() + b"\\x8c" +
            bytes([len(n)]) + n.encode() + b"\\x93")
big = (10 ** 15).to_bytes(8, "little")
frames = {
    "deque of a range": G + name("collections", "deque") +
        name("builtins", "range") + b"\\x8a\\x08" + big + b"\\x85R" +
        b"K\\x00\\x86R.",
    "counter of a range": G + name("collections", "Counter") +
        name("builtins", "range") + b"\\x8a\\x08" + big + b"\\x85R" +
        b"\\x85R.",
    "bytearray of a size": G + name("builtins", "bytearray") +
        b"J\\x00\\x28\\x6b\\xee\\x85R.",
    "set of a range": G + name("builtins", "set") +
        name("builtins", "range") + b"\\x8a\\x08" + big + b"\\x85R" +
        b"\\x85R.",
}
# a tuple DAG: t(k+1) = (t(k), t(k)) through the memo, 2^40 when expanded;
# a dict key (hashed while decoding: CPython caches no tuple's hash) or
# the result (hashed by the parent later)
dag = b")\\x94" + b"".join(b"0h" + bytes([k]) + b"h" + bytes([k]) +
                         b"\\x86\\x94" for k in range(40))
frames["shared tuples as a key"] = G + b"}" + dag + b"Ns."
frames["shared tuples"] = G + dag + b"."
# the same with lists: decodes in no time, repr() or == in the parent 2^40
frames["shared lists"] = G + b"]\\x94" + b"".join(
    b"0](h" + bytes([k]) + b"h" + bytes([k]) + b"e\\x94"
    for k in range(40)) + b"."
# 13 bytes that f"{d:.2f}" in the parent writes out as a GB
frames["decimal exponent"] = G + name("decimal", "Decimal") + \
    b"\\x8c\\x0b1e999999999\\x85R."
# a dict of 150 items, copied by Counter() 600 times through the memo
amp = G + b"]" + name("collections", "Counter") + b"\\x94" + b"0}("
amp += b"".join(b"M" + i.to_bytes(2, "little") + b"N" for i in range(150))
amp += b"u\\x85\\x94" + b"0" + b"h\\x00h\\x01Ra" * 600 + b"."
frames["memo amplification"] = amp
t = time.monotonic()
with sandboxes(workers=1, max_result=4096):
    for label, frame in frames.items():
        out[label] = outcome(sbmod.forge, frame)
    out["after"] = sbmod.echo(2)
out["seconds"] = time.monotonic() - t
out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
'''

MAIN_P3 = MAIN_COMMON + '''
import pickle
frames = {
    # under the 1 MiB of a frame that is no result; over every cap
    "huge text": pickle.dumps(("builtins", "ValueError", "m" * 200000,
                               ["d" * 20000] * 40, "T" * 500000), 5),
    # one str shared by reference expands past the budget of the frame:
    # refused before it is decoded (it was decoded, then capped)
    "shared huge text": pickle.dumps(("builtins", "ValueError", "m",
                                      ["d" * 100000] * 1000, ""), 5),
    "notes range": pickle.dumps(("builtins", "ValueError", "m", [],
                                 range(10 ** 18)), 5),
    "denials range": pickle.dumps(("builtins", "ValueError", "m",
                                   range(10 ** 18), ""), 5),
    "own class": pickle.dumps(("sbmod", "nothing", "m", [], ""), 5),
    # the parent's code: __init_subclass__, __setattr__, a module's
    # __getattr__ (concurrent.futures imports multiprocessing from it)
    "hooked class": pickle.dumps(("sbmod", "Hooked", "m", ["d"], "tb"), 5),
    "watched class": pickle.dumps(("sbmod", "Watched", "m", ["d"], "tb"),
                                  5),
    "lazy import": pickle.dumps(("concurrent.futures",
                                 "ProcessPoolExecutor", "m", [], ""), 5),
}
import concurrent.futures
before_mods = set(sys.modules)
t = time.monotonic()
with sandboxes(workers=1, max_result=64 << 20):
    for label, frame in frames.items():
        try:
            sbmod.forge(frame, ord("x"))
            out[label] = ["no exception"]
        except BaseException as exc:
            buf = io.StringIO()
            traceback.print_exception(type(exc), exc, exc.__traceback__,
                                      file=buf)
            notes = getattr(exc, "__notes__", [])
            out[label] = [type(exc).__name__, len(buf.getvalue()),
                          type(notes).__name__,
                          all(isinstance(n, str) for n in notes),
                          [type(a).__name__ for a in exc.args]]
out["seconds"] = time.monotonic() - t
out["log"] = sbmod.LOG
out["imported"] = sorted(m for m in set(sys.modules) - before_mods
                         if m.startswith(("concurrent", "multiprocessing")))
print(json.dumps(out))
'''

MAIN_P4 = MAIN_COMMON + '''
results = []
with sandboxes(workers=1):
    out["forge twice"] = outcome(sbmod.forge, b"\\x80\\x05N.")
    out["spray"] = outcome(sbmod.spray, 5)
    for i in range(40):
        results.append(outcome(sbmod.echo, i))
        time.sleep(0.02)
out["results"] = results
print(json.dumps(out))
'''

MAIN_P5 = MAIN_COMMON + '''
iso = sys.argv[1] == "isolated"
with sandboxes(workers=1, isolated=iso):
    out["before"] = sbmod.echo(1)
    out["plant"] = sbmod.plant()
    out["later"] = [sbmod.echo(i) for i in range(3)]
    out["env"] = sbmod.probe()
print(json.dumps(out))
'''


MAIN_P7 = MAIN_COMMON + '''
iso = sys.argv[2] == "isolated"
with sandboxes(workers=1, isolated=iso):
    out["doors"] = outcome(sbmod.transport_doors, int(sys.argv[1]))
    out["after"] = sbmod.echo(1)
print(json.dumps(out))
'''

MAIN_P6 = MAIN_COMMON + '''
victim = sys.argv[1]
# an enforced run whose function may write its working directory
with sandboxes(workers=1):
    out["planted"] = sbmod.plant_links(victim, "learned.rules")
# then the user learns again in that directory (as root in the root
# columns): python-sb writes learned.rules, the parent adds the result mode
with sandboxes(workers=1, learn="learned.rules"):
    out["echo"] = sbmod.echo(1)
out["rules"] = open("learned.rules").read()
print(json.dumps(out))
'''

MAIN_P10 = MAIN_COMMON + '''
import gc, logging, pickle
os.environ["PYSB_P10_ARMED"] = "1"
logging.basicConfig(stream=io.StringIO())
names = ["Finalized", "Looked", "Compared", "Located", "Metaclassed",
         "ValueError"]
with sandboxes(workers=1):
    for name in names:
        try:
            sbmod.raise_named(name)
            out[name] = ["no exception"]
        except BaseException as exc:
            # what a caller does with an exception: log it, print it, keep
            # it in a set of those seen, drop it
            logging.exception("call failed")
            buf = io.StringIO()
            traceback.print_exception(type(exc), exc, exc.__traceback__,
                                      file=buf)
            seen = {exc}
            out[name] = [type(exc).__name__, exc in seen]
            del exc, seen
        gc.collect()
    # urllib.error.HTTPError: a stdlib class whose __getattr__ (from
    # tempfile's wrapper) raised KeyError when traceback read __notes__ of
    # a rebuilt one: printing it failed
    import urllib.request
    try:
        sbmod.forge(pickle.dumps(("urllib.error", "HTTPError", "m", [], ""),
                                 5), ord("x"))
    except BaseException as exc:
        buf = io.StringIO()
        try:
            traceback.print_exception(type(exc), exc, exc.__traceback__,
                                      file=buf)
            out["HTTPError"] = [type(exc).__name__, "printed"]
        except BaseException as err:
            out["HTTPError"] = [type(exc).__name__, repr(err)]
    out["after"] = sbmod.echo(10)
print(json.dumps(out))
'''

MAIN_P11 = MAIN_COMMON + '''
import pickle
frames = {
    "long name": ("S" * 900000, None),
    "long code": ("builtins.SystemExit", "c" * 900000),
    "huge int code": ("builtins.SystemExit", 10 ** 100000),
    "list code": ("builtins.SystemExit", ["c" * 1000] * 800),
}
with sandboxes(workers=1):
    for label, data in frames.items():
        try:
            sbmod.forge(pickle.dumps(data, 5), ord("b"))
            out[label] = ["no exception"]
        except BaseException as exc:
            buf = io.StringIO()
            traceback.print_exception(type(exc), exc, exc.__traceback__,
                                      file=buf)
            try:
                text = str(exc)
            except Exception as err:
                text = "str() raised " + type(err).__name__
            out[label] = [type(exc).__name__, len(buf.getvalue()),
                          text[:40], len(text)]
    out["after"] = sbmod.echo(11)
print(json.dumps(out))
'''

MAIN_P12 = MAIN_COMMON + '''
def pipes():
    n = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                n.append(fd)
        except OSError:
            pass
    return n
before = pipes()
with sandboxes(workers=1):
    out["pass"] = outcome(sbmod.pass_fds, 100)
    out["during"] = len(pipes()) - len(before)
    out["after"] = sbmod.echo(12)
out["pipes"] = len(pipes()) - len(before)
print(json.dumps(out))
'''


def run_parent(column, main, *args, rules=RULES, timeout=None):
    provider, _, who = column.partition("/")
    if provider == "landlock" and not ABI:
        pytest.skip("the kernel has no Landlock")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pysb-p-"))
    try:
        os.chmod(tmp, 0o755)
        (tmp / "sbmod.py").write_text(MODULE)
        (tmp / "main.py").write_text(textwrap.dedent(main))
        extra = (f"os-sandbox={provider}\n"
                 if provider in ("landlock", "qemu") else "")
        (tmp / ".py-sandboxes").write_text(rules + extra)
        argv = [DEBIAN_PYTHON, "main.py"] + list(args)
        if who == "nobody":
            chown_tree(tmp)
            argv = as_nobody(argv)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO / "python")
        env["PYSB_PYTHON_SB"] = str(sb_path())
        env.pop("PYTHONSTARTUP", None)
        res = subprocess.run(argv, cwd=tmp, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=timeout or scaled(120))
        assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n" \
                                    f"{res.stderr[-3000:]}"
        out = json.loads(res.stdout.strip().splitlines()[-1])
        out["_files"] = sorted(p.name for p in tmp.iterdir())
        out["_written"] = (tmp / "written.txt").read_text() \
            if (tmp / "written.txt").exists() else None
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(params=COLUMNS)
def column(request, sb):
    if request.param == "qemu" and qemu_missing():
        pytest.skip(qemu_missing())
    return request.param


@pytest.fixture
def sb():
    if not sb_path().exists():
        pytest.fail("build/python-sb is not built: run make first",
                    pytrace=False)
    return sb_path()


def test_P1_results_change_no_existing_object(column):
    out = run_parent(column, MAIN_P1)
    for label in ("build class", "build class in a result",
                  "build memoized class", "setitem on a class",
                  "append to a class", "build a fresh path",
                  "build a shared zone", "build class, large",
                  "build class in a result, large"):
        assert out[label][0] == "RestrictedUnpicklingError", (label,
                                                              out[label])
    # a garbled stream: the call fails and the worker is replaced
    for label in ("opcode across its frame", "frame inside a frame",
                  "frame past the stream"):
        assert out[label][0] == "SandBoxProtocolError", (label, out[label])
        assert "frame" in out[label][1], (label, out[label])
    assert out["large after"] is True
    assert out["changed"] == []
    assert out["after"] == ["echo", 1]
    # the parent's Path wrote where it asked; its addresses are its own
    assert out["_written"] == "parent"
    assert out["private"] is False and out["loopback"] is False


def test_P2_decoding_is_bounded_by_max_result(column):
    out = run_parent(column, MAIN_P2, timeout=scaled(180))
    for label in ("deque of a range", "counter of a range",
                  "bytearray of a size", "set of a range",
                  "memo amplification", "shared tuples as a key",
                  "shared tuples", "shared lists", "decimal exponent"):
        assert out[label][0] == "RestrictedUnpicklingError", (label,
                                                              out[label])
    assert "units of work" in out["memo amplification"][1]
    assert out["after"] == ["echo", 2]
    # nothing was decoded: no gigabytes, no minutes
    assert out["maxrss_mb"] < 400, out
    assert out["seconds"] < scaled(60), out


def test_P3_remote_exceptions_are_capped_plain_data(column):
    out = run_parent(column, MAIN_P3, timeout=scaled(180))
    kind, printed, notes, all_str, args = out["huge text"]
    assert kind == "ValueError" and all_str and notes == "list"
    assert args == ["str"]
    assert printed < 200_000, out["huge text"]
    # a range where text belongs: refused, never an exception to print
    for label in ("notes range", "denials range", "shared huge text"):
        assert out[label][0] in ("RestrictedUnpicklingError",
                                 "SandBoxProtocolError"), (label, out)
        assert out[label][1] < 5000, (label, out)
    assert out["own class"][0] == "SandBoxProtocolError"
    # no code of the parent's ran for a remote name, nothing was imported
    assert out["log"] == [] and out["imported"] == [], out
    # a class with a special method of its own is not rebuilt (P10)
    assert out["watched class"][0] == "SandBoxProtocolError", out
    assert out["hooked class"][0] == "SandBoxProtocolError", out
    assert out["lazy import"][0] == "SandBoxProtocolError", out
    assert out["seconds"] < scaled(60), out


def test_P4_frames_belong_to_calls(column):
    out = run_parent(column, MAIN_P4)
    # the forged reply is that call's answer; the function's own one,
    # sent after it, is refused in the worker (the call is closed)
    assert out["forge twice"] == ["ok", "None"]
    results = out["results"]
    # some calls fail (the worker is replaced), none gets another's reply
    for i, (kind, value) in enumerate(results):
        if kind == "ok":
            assert value == repr(("echo", i)), (i, results)
        else:
            assert kind == "SandBoxProtocolError", (i, results)
    assert "ATTACKER" not in json.dumps(out)
    # the stream does not stay shifted: the last calls are answered
    assert all(k == "ok" for k, _ in results[-5:]), results


def test_P5_isolated_calls_see_nothing_planted(column):
    out = run_parent(column, MAIN_P5, "isolated")
    assert out["plant"] == "planted"
    assert out["later"] == [["echo", i] for i in range(3)]
    assert out["env"] is None


def test_P5_shared_worker_state_is_as_documented(column):
    """Without isolated=True, calls on a worker share its state
    (docs/security-model.md, docs/weaknesses.md 50): pinned, so that a
    change of the default is seen."""
    out = run_parent(column, MAIN_P5, "shared")
    assert out["later"] == [["echo", "PLANTED"]] * 3
    assert out["env"] == "1"


@pytest.fixture
def victim(tmp_path_factory):
    d = tmp_path_factory.mktemp("victim")
    os.chmod(d, 0o700)
    path = d / "secret"
    path.write_text("root secret\n")
    os.chmod(path, 0o600)
    return path


def test_P6_the_result_mode_writer_follows_no_planted_link(column, victim):
    """A function confined with expose-rw=. (and native code) plants links
    for the names the result-mode writer uses (its temporary files and backups); a later
    learning run of the same directory must write its rule file, not
    through them: the victim keeps its bytes and mode."""
    out = run_parent(column, MAIN_P6, str(victim),
                     rules="python-import=*\npython-api=ALLOW:native\n"
                           "expose-rw=.\n",
                     timeout=scaled(300))
    assert out["planted"] > 1000, out
    assert out["echo"] == ["echo", 1]
    st = os.lstat(victim)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    assert victim.read_text() == "root secret\n"
    assert "remote-result-mode=data-only" in out["rules"].split("\n"), out


@pytest.mark.parametrize("mode", ["shared", "isolated"])
def test_P7_the_transport_forks_and_signals_for_its_own_calls_only(column,
                                                                    mode):
    """A function reaches the worker's C transport in sys.modules: its
    reap(pid) waited for pid and then killed the process group -pid,
    whatever pid was (a process group of the user's outside the sandbox,
    under subprocess; a shared worker died of it), and fork_call() forked
    the worker with no process-exec grant. Both serve the worker's own
    isolated calls only now. Evidence from outside: a victim process
    group this test started (as the column's user) is alive after the
    call."""
    argv = ["sleep", "600"]
    if column.endswith("/nobody"):
        argv = as_nobody(argv)
    victim = subprocess.Popen(argv, start_new_session=True)
    try:
        out = run_parent(column, MAIN_P7, str(victim.pid), mode)
        time.sleep(scaled(0.2))
        assert victim.poll() is None, "the victim's process group was killed"
        assert out["doors"][0] == "ok", out
        assert out["doors"][1] == repr({"kill": "ValueError",
                                         "fork": "RuntimeError"}), out
        assert out["after"] == ["echo", 1]
    finally:
        victim.kill()
        victim.wait()


def test_P10_rebuilt_exceptions_run_no_code_of_the_parent(column):
    """A remote exception is rebuilt as the parent's class of that name,
    none of its code run (P3). Its other special methods still ran: a
    __del__ when the parent dropped it, __getattr__ when traceback read
    __notes__ (urllib.error.HTTPError's, from tempfile's wrapper, raised
    KeyError: printing the exception failed), __eq__ and __hash__ when it
    met a set, a property over SyntaxError's lineno and a metaclass when
    it was printed. Such a class is not rebuilt now: the call raises
    SandBoxProtocolError naming it. Evidence from outside: the files the
    parent's methods would write in its directory."""
    out = run_parent(column, MAIN_P10)
    ran = [f for f in out["_files"] if f.startswith("ran-")]
    assert ran == [], (ran, out)
    for name in ("Finalized", "Looked", "Compared", "Located",
                 "Metaclassed"):
        assert out[name] == ["SandBoxProtocolError", True], (name, out)
    assert out["ValueError"] == ["ValueError", True], out
    assert out["HTTPError"] == ["SandBoxProtocolError", "printed"], out
    assert out["after"] == ["echo", 10]


def test_P11_remote_base_exceptions_are_capped(column):
    """A function's SystemExit or other BaseException crosses as a class
    name and an exit code. Neither was capped: a 900 KB name or code was
    printed whole with the caller's traceback, and an int code of 100,000
    digits made str() of the exception raise. Both are capped now, as an
    exception's message is (P3). Evidence: what the parent printed."""
    out = run_parent(column, MAIN_P11, timeout=scaled(180))
    for label in ("long name", "long code", "huge int code", "list code"):
        kind, printed, text, length = out[label]
        assert kind == "SandBoxBaseExceptionError", (label, out[label])
        assert printed < 20000 and length < 10000, (label, out[label])
        assert not text.startswith("str() raised"), (label, out[label])
    assert out["huge int code"][2].startswith(
        "builtins.SystemExit(<an int of"), out
    assert out["after"] == ["echo", 11]


def test_P12_descriptors_from_the_worker_never_reach_the_parent(column):
    """The worker's socket is a Unix socket: a function can send
    descriptors on it (SCM_RIGHTS). The parent's transport reads with
    recv() and no control buffer, so the kernel closes every descriptor
    sent: none is installed in the parent, the garbled call fails with
    SandBoxProtocolError and the worker is replaced. Evidence: the pipes
    open in the parent, before, during and after (proved harmless; this
    test fails if the transport ever takes ancillary data)."""
    out = run_parent(column, MAIN_P12)
    assert out["pass"][0] == "SandBoxProtocolError", out
    assert out["during"] == 0 and out["pipes"] == 0, out
    assert out["after"] == ["echo", 12]
