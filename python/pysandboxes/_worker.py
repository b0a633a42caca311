"""The partial-mode worker: `python-sb [rules] -c WORKER_COMMAND FD`.

It runs under python-sb like any program, so the policy and provider of the
rule file confine it, and serves calls from its parent over the inherited
socketpair FD, moved by the C transport _pysbframe (both ends use it; this
module loads it and says clearly when it cannot). A request is the call's
id and a pickle; the transport keeps the socket and the id in C
(next_request, reply), so every reply of the call carries the id and the
function's own code has no id to forge replies of another call with. It
has no listening socket and no token; it ends when the parent closes its
end.

Replies: a kind byte (KIND_*) then the body. Output is UTF-8 text;
a result is a pickle the parent decodes with its restricted unpickler
(_unpickle.py); everything else, exceptions included, is a pickle of plain
str/int/None/tuple/list data, never an object of the function's.

Calls on one worker share its state (imported modules, the functions it
resolved, what a call leaves behind) unless sandboxes(isolated=True): then
each call runs in a child forked from the worker before any call ran, and
the worker sees nothing a call did.

The parent is trusted: its requests are decoded by an Unpickler that takes
loaded modules as they are and imports the others through the import system,
which the import guard judges. What goes back is judged by the parent's
restricted unpickler (_unpickle.py), never trusted. A function's printed
output is streamed back per call, in order. A BaseException of the function
ends the call, not the worker.

This module and what it imports are loaded by the package's __init__ while
the guard loads the package (python-sb's own modules are not charged to the
profile, 7.7): nothing here imports a module later, except asyncio when the
function's own module loaded it already.
"""
import importlib
import io
import os
import pickle
import sys
import traceback
import types

import pysandboxes as _pkg

_PROTOCOL = pickle.HIGHEST_PROTOCOL
_OUT_PIECE = 1 << 16   # characters of printed output per frame
# reply kinds (the byte after the call id); only output is not final
KIND_STDOUT, KIND_STDERR = ord("o"), ord("e")
KIND_OK, KIND_ERR, KIND_BASE = ord("k"), ord("x"), ord("b")
KIND_CANCELLED, KIND_BIG = ord("c"), ord("g")
# what an exception reply carries at most, in characters: its message,
# each denial, the number of denials, the traceback text (both ends cap)
MESSAGE_MAX, DENIAL_MAX, DENIALS_MAX, TRACEBACK_MAX = 4096, 1024, 32, 65536
# bytes of a frame that is no result (output, exceptions): any max_result
OTHER_FRAME_MAX = 1 << 20


def capped(text, limit, tail=False):
    """text (a str) cut to limit characters, saying so; the last ones
    when tail is true (the end of a traceback says the most)."""
    if len(text) <= limit:
        return text
    cut = f"[{len(text) - limit} characters cut]"
    return cut + text[-limit:] if tail else text[:limit] + cut
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
TRANSPORT_FILE = "_pysbframe.abi3.so"


def _transport_places():
    """Where the transport may be: a build directory, which holds it beside
    the guard library and the launcher (a checkout's build writes nothing
    into the package), else the package directory (an install, a wheel).
    In a worker the build directory is the one the guard was loaded from
    (the guard names it, and python-sb exposes the file beside the guard
    under every provider); in a parent it is beside the python-sb it runs,
    $PYSB_PYTHON_SB or the checkout's build/ (_partial.find_python_sb).
    The build directory first: a copy an older build left in the package
    must not shadow the one just built."""
    guard_dir = getattr(_pkg, "_guard_dir", None)
    if guard_dir:
        yield os.path.join(guard_dir, TRANSPORT_FILE)
    else:
        launcher = os.environ.get("PYSB_PYTHON_SB")
        if launcher:
            yield os.path.join(os.path.dirname(os.path.realpath(launcher)),
                               TRANSPORT_FILE)
        yield os.path.join(os.path.dirname(os.path.dirname(_PKG_DIR)),
                           "build", TRANSPORT_FILE)
    yield os.path.join(_PKG_DIR, TRANSPORT_FILE)


def _load_transport():
    """(module, None), or (None, why): the first place that has the file;
    loaded as pysandboxes._pysbframe from there."""
    name = __package__ + "._pysbframe"
    for path in _transport_places():
        if not os.path.exists(path):
            continue
        try:
            import importlib.util
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError as exc:
            return None, (path, f"does not load ({exc})")
        sys.modules[name] = module
        return module, None
    return None, (os.path.join(_PKG_DIR, TRANSPORT_FILE), "is missing")


# Loaded with this module: in a worker that is while the guard loads the
# package, before the program is judged (later, the import would be).
_frame, _frame_error = _load_transport()


def transport():
    """The C frame transport; SandBoxError naming the file when it is not
    there or does not load: partial mode has no other transport."""
    if _frame is not None:
        return _frame
    from .e import SandBoxError
    path, why = _frame_error
    raise SandBoxError(
        f"partial mode needs its C transport {path}, which {why}. Build it "
        f"with `make` in the python-sb checkout (the build directory holds "
        f"it, beside python-sb), or reinstall python-sb (make install, or "
        f"pip install).")


class _Chunks(list):
    """A Pickler's file: the pickler hands a large bytes-like value to
    write() as it is (CPython 3.8+ bypasses its buffer for those), so a
    large bytes value is sent with sendmsg from where it is, never joined
    (the transport copies a bytearray or PickleBuffer one: it cannot pin
    it while the GIL is released)."""
    write = list.append


# Picklers with their _Chunks, kept from call to call: making one costs
# more than pickling a small value. Each dump takes one out of the list
# (pop and append are atomic: threads and a nested dump get their own).
# Only one whose dump succeeded and was small goes back, its memo and
# chunks cleared so that it keeps no object alive: clear_memo() zeroes the
# whole memo table, which never shrinks, and a small pickle memoized few
# objects. dump() itself starts from an empty buffer.
_picklers = []
_PICKLERS_KEPT = 8
_PICKLER_SMALL = 256  # bytes of output


def dumps_chunks(obj):
    try:
        chunks, pickler = _picklers.pop()
    except IndexError:
        chunks = _Chunks()
        pickler = pickle.Pickler(chunks, _PROTOCOL)
    pickler.dump(obj)  # on an error both are dropped
    out = list(chunks)
    chunks.clear()
    if (len(out) == 1 and type(out[0]) is bytes and
            len(out[0]) <= _PICKLER_SMALL and
            len(_picklers) < _PICKLERS_KEPT):
        pickler.clear_memo()
        _picklers.append((chunks, pickler))
    return out


def payload_size(chunks):
    """The bytes a frame of these chunks carries (a PickleBuffer chunk
    has no len())."""
    size = 0
    for c in chunks:
        size += len(c) if type(c) is bytes else memoryview(c).nbytes
    return size


class _Channel:
    """The worker's end: the socket and the call id live in _pysbframe;
    no deadline (the parent owns the timeouts) and no size limit (the
    parent is trusted)."""

    def __init__(self, fd):
        _frame.bind(fd)
        self._outputs = None

    def outputs(self):
        """sys.stdout and sys.stderr for a call: made once (a pair costs
        more to make and to finalize than a trivial call), again when a
        call closed one. They hold no state of the call: the transport
        stamps each frame with the id of the call in flight."""
        outs = self._outputs
        if outs is None or outs[0].closed or outs[1].closed:
            outs = self._outputs = (_Output(self, "stdout", KIND_STDOUT),
                                    _Output(self, "stderr", KIND_STDERR))
        return outs

    def read_request(self):
        """The next request's pickle, or None when the parent has gone."""
        try:
            return _frame.next_request()
        except _frame.Closed:
            return None

    def reply(self, kind, chunks, final=True):
        try:
            _frame.reply(kind, chunks, final)
        except _frame.Closed:
            # the call was answered already (the function sent a reply
            # through the transport itself): the parent has its answer;
            # a parent that is gone ends the next read_request()
            if not final:
                raise

    def send(self, kind, obj):
        self.reply(kind, dumps_chunks(obj))


class _Requests(pickle.Unpickler):
    """Requests come from the trusted parent. A module it names that is not
    loaded is imported through the guarded import system; find_class is
    overridden so that the deserialization audit event (which the guard
    refuses without python-api=ALLOW:deserialization) is not raised for
    python-sb's own transport."""

    def find_class(self, module, name):
        mod = sys.modules.get(module)
        if mod is None:
            mod = importlib.import_module(module)
        obj = mod
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj


def _decode(payload):
    return _Requests(io.BytesIO(payload)).load()


class _Output(io.TextIOBase):
    """sys.stdout / sys.stderr during a call: every write is a frame."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, chan, name, kind):
        super().__init__()
        self._chan = chan
        self._name = name
        self._kind = kind

    @property
    def name(self):
        return f"<sandbox {self._name}>"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not "
                            f"{type(text).__name__}")
        # in pieces: a flood of output never makes one frame over the
        # parent's limit, and the parent writes it as it comes
        for i in range(0, len(text), _OUT_PIECE):
            piece = text[i:i + _OUT_PIECE].encode("utf-8", "replace")
            self._chan.reply(self._kind, (piece,), False)
        return len(text)

    def flush(self):
        pass


_loop = None


def _drive(coro):
    """The value of a coroutine: on an event loop when asyncio is loaded
    (the function's module imported it, under the rules), else by hand."""
    global _loop
    if "asyncio" in sys.modules:
        import asyncio
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
        return _loop.run_until_complete(coro)
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the coroutine awaited something that needs an event "
                       "loop, and asyncio is not loaded in the sandbox")


_functions = {}


def _resolve(module, qualname):
    key = (module, qualname)
    fn = _functions.get(key)
    if fn is None:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        fn = _functions[key] = obj
    return fn


def _invoke(module, qualname, args, kwargs):
    result = _resolve(module, qualname)(*args, **kwargs)
    if isinstance(result, types.CoroutineType):
        result = _drive(result)
    return result


def _user_tb(tb):
    """The traceback without the worker's own frames."""
    while tb is not None and os.path.dirname(
            tb.tb_frame.f_code.co_filename) == _PKG_DIR:
        tb = tb.tb_next
    return tb


def _exception_reply(exc):
    """(kind, plain data) of an exception: its class's module and qualified
    name, its message, the denials and the formatted traceback, all str;
    never the exception object (the parent rebuilds one of its own)."""
    denials = _pkg.sandbox_denials(exc)
    try:
        tb_text = "".join(traceback.format_exception(
            type(exc), exc, _user_tb(exc.__traceback__)))
    except Exception:
        tb_text = ""
    try:
        message = str(exc)
    except Exception:
        message = f"<{type(exc).__name__}: unprintable message>"
    cls = type(exc)
    return KIND_ERR, (str(cls.__module__), str(cls.__qualname__),
                      capped(message, MESSAGE_MAX),
                      [capped(str(d), DENIAL_MAX)
                       for d in denials[:DENIALS_MAX]],
                      capped(tb_text, TRACEBACK_MAX, tail=True))


def _base_reply(exc):
    cls = type(exc)
    if cls.__module__ == "asyncio.exceptions" and \
            cls.__name__ == "CancelledError":
        return KIND_CANCELLED, None
    code = None
    if isinstance(exc, SystemExit):
        code = exc.code if exc.code is None or isinstance(exc.code, int) \
            else repr(exc.code)
    return KIND_BASE, (f"{cls.__module__}.{cls.__qualname__}", code)


def _serve_one(chan, max_result, fn, args):
    """Run fn(*args) with its output streamed; send the outcome."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = chan.outputs()
    try:
        value = fn(*args)
    except Exception as exc:
        reply = _exception_reply(exc)
    except BaseException as exc:  # the worker survives SystemExit & co
        reply = _base_reply(exc)
    else:
        reply = None
    finally:
        sys.stdout, sys.stderr = saved
    if reply is None:
        try:
            chunks = dumps_chunks(value)
        except Exception as exc:
            err = TypeError(f"the result cannot be sent back from the "
                            f"sandbox: {type(exc).__name__}: {exc}")
            reply = _exception_reply(err)
        else:
            size = payload_size(chunks)
            if size > max_result:
                reply = KIND_BIG, (size, max_result)
            else:
                chan.reply(KIND_OK, chunks)
                return
    chan.send(*reply)


def watch_parent(fd):
    """A worker whose parent is gone ends at once, even in the middle of a
    call that never returns: a thread waits for the hang-up of the socket
    (POLLRDHUP: the parent closed its end or died) and calls os._exit.
    Without ctypes there is no prctl(PR_SET_PDEATHSIG) to ask for; under a
    forking provider python-sb's own child dies with this process. Started
    while the guard loads the package, before the program is judged."""
    import _thread
    import select

    hangup = (select.POLLRDHUP | select.POLLHUP | select.POLLERR |
              select.POLLNVAL)

    def watch():
        poller = select.poll()
        poller.register(fd, select.POLLRDHUP)
        while True:
            for _, events in poller.poll():
                if events & hangup:
                    os._exit(0)

    _thread.start_new_thread(watch, ())


def main(argv=None):
    fd = int((argv or sys.argv)[1])
    os.set_inheritable(fd, False)  # not for the function's own children
    _pkg._in_sandbox = True  # nested @sandbox calls run in place
    transport()
    chan = _Channel(fd)
    try:
        return _serve(chan)
    except _frame.Closed:
        return 0


def _serve(chan):
    payload = chan.read_request()
    if payload is None:
        return 0
    tag, path, init_ref, max_result, isolated = _decode(payload)
    if tag != "init":
        return 3
    # said once, before any code of the program runs here
    _frame.set_isolated(bool(isolated))
    for entry in path:
        if entry not in sys.path:
            sys.path.append(entry)
    if init_ref:
        _serve_one(chan, max_result, _invoke, (init_ref[0], init_ref[1],
                                               (), {}))
    else:
        chan.send(KIND_OK, None)
    while True:
        payload = chan.read_request()
        if payload is None:
            return 0
        try:
            req = _decode(payload)
        except Exception as exc:  # e.g. an argument's module is refused
            chan.send(*_exception_reply(exc))
            continue
        if req[0] == "call":
            if isolated:
                _serve_isolated(chan, max_result, req[1:])
            else:
                _serve_one(chan, max_result, _invoke, req[1:])
        elif req[0] == "stop":
            return 0


def _serve_isolated(chan, max_result, call):
    """One call in a child forked from this worker, which has run no call:
    the function is resolved (its module imported, as the parent's own
    import of it did) here first, so each child starts from it; the child
    replies (the call id is inherited in _pysbframe) and exits; whatever
    the call changes, plants or starts dies with it."""
    try:
        _resolve(call[0], call[1])
    except Exception as exc:
        chan.send(*_exception_reply(exc))
        return
    try:
        pid = _frame.fork_call()
    except OSError as exc:
        chan.send(*_exception_reply(RuntimeError(
            f"sandboxes(isolated=True) runs each call in a child forked "
            f"from the worker, and the fork failed: {exc}")))
        return
    if pid == 0:
        status = 0
        try:
            _serve_one(chan, max_result, _invoke, call)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    replied, status = _frame.reap(pid)
    if replied < 0:  # half a frame on the socket
        raise _frame.Closed("an isolated call died in the middle of a reply")
    if not replied:  # os._exit(), a signal: the parent must not wait
        how = (f"killed by signal {os.WTERMSIG(status)}"
               if status >= 0 and os.WIFSIGNALED(status) else
               f"exit status {os.WEXITSTATUS(status)}" if status >= 0 else
               "status unknown")
        chan.send(*_exception_reply(_pkg.SandBoxProtocolError(
            f"{call[1]}(): the isolated call's process ended without a "
            f"reply ({how})")))
