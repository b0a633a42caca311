"""Partial mode, the parent's side (seed-spec 7.2 to 7.6): sandboxes() finds
the rule file, asks python-sb to check it, and keeps a pool of workers,
each a `python-sb ... -m pysandboxes._worker FD` child connected by a
socketpair; @sandbox calls are sent to them by reference.

What the workers send back is decoded by _unpickle (the restricted
unpickler), never by pickle.loads. This module never lets a worker failure
end the application: a dead worker is replaced (init_fn again, the call
retried once), too many deaths in the window refuse calls with
SandBoxProtocolError. It does not parse the rules itself: python-sb does
(--pysandboxes-explain), so there is one parser.
"""
import collections
import os
import pickle
import shutil
import socket
import subprocess
import sys
import threading
import time

from . import _unpickle
from .e import (ConfigSyntaxError, SandBoxBaseExceptionError, SandBoxError,
                SandBoxProtocolError)

START_TIMEOUT = 30.0
GRACEFUL_TIMEOUT = 2.0
STOP_TIMEOUT = 4.0
RESTART_BUDGET = 5          # restarts per window, then calls are refused
RESTART_WINDOW = 180.0
BACKOFF_BASE, BACKOFF_FACTOR, BACKOFF_CAP = 1.0, 1.5, 5.0
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_CHUNK = 1 << 16
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_NOT_STARTED = ("Daemon not started. Use 'with sandboxes()' or "
                "'pysandboxes.run()'")
_MIXED = ("It's not possible to mix synchronous and asynchronous sandbox "
          "functions. Therefore, you must only use annotated asynchronous "
          "functions with an asynchronous sandbox.")


# ---- finding python-sb and the rule file ----

def find_python_sb():
    """$PYSB_PYTHON_SB, else the build tree this package sits in (a
    checkout: python/../build/python-sb), else python-sb on PATH."""
    env = os.environ.get("PYSB_PYTHON_SB")
    if env:
        return env
    tree = os.path.join(os.path.dirname(os.path.dirname(_PKG_DIR)), "build",
                        "python-sb")
    if os.access(tree, os.X_OK):
        return tree
    found = shutil.which("python-sb")
    if found:
        return found
    raise SandBoxError("python-sb not found: partial mode runs the sandboxed "
                       "functions under python-sb. Install it (make install) "
                       "or name it in $PYSB_PYTHON_SB.")


def caller_module():
    """The name of the first calling module outside this package."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name != "pysandboxes" and not name.startswith("pysandboxes."):
            return name
        frame = frame.f_back
    return "__main__"


def find_config(config, caller):
    """Seed-spec 2.1.2: a name with a '/' as given; a bare name in the
    nearest package of the caller that holds it, else in the current
    directory."""
    name = os.fspath(config) if config is not None else ".py-sandboxes"
    if "/" in name:
        return name
    if caller and caller != "__main__":
        mod = sys.modules.get(caller)
        pkg = caller if hasattr(mod, "__path__") else caller.rpartition(".")[0]
        while pkg:
            for d in getattr(sys.modules.get(pkg), "__path__", None) or ():
                cand = os.path.join(d, name)
                if os.path.isfile(cand):
                    return cand
            pkg = pkg.rpartition(".")[0]
    return os.path.join(os.getcwd(), name)


def rule_args(extra_rules):
    """--key=value for each keyword rule; a collection repeats the key, an
    empty one gives `key=` (7.2)."""
    out = []
    for key, value in extra_rules.items():
        if isinstance(value, (list, tuple, set, frozenset)):
            values = sorted(map(str, value)) if isinstance(
                value, (set, frozenset)) else [str(v) for v in value]
            out.extend(f"--{key}={v}" for v in values or [""])
        else:
            out.append(f"--{key}={'' if value is None else value}")
    return out


# ---- one worker ----

class _Died(Exception):
    """The worker's end of the socket closed: it is gone."""


class _Garbled(Exception):
    """The worker broke the framing or sent a frame that is no reply."""


class _Worker:
    def __init__(self, proc, sock):
        self.proc = proc
        self.sock = sock
        self.buf = bytearray()

    @property
    def pid(self):
        return self.proc.pid

    def send(self, payload):
        try:
            self.sock.sendall(len(payload).to_bytes(4, "big") + payload)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _Died(str(exc)) from None

    def _fill(self, need, deadline):
        buf = self.buf
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(max(_CHUNK, need - len(buf)))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise _Died("the sandbox process closed the connection")
            buf += chunk

    def recv(self, deadline, limit):
        self._fill(4, deadline)
        size = int.from_bytes(self.buf[:4], "big")
        if size > limit:
            raise _Garbled(f"the sandbox sent a frame of {size} bytes, over "
                           f"the limit of {limit} bytes")
        self._fill(4 + size, deadline)
        payload = bytes(self.buf[4:4 + size])
        del self.buf[:4 + size]
        return payload

    def kill(self):
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass

    def stop(self, timeout):
        """Close our end (the worker ends on EOF), then kill if needed."""
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


# ---- the pool of one sandboxes() context ----

def _parse_explain(text):
    rules, provider, learning = {}, "subprocess", False
    for line in text.splitlines():
        if line.startswith("# Provider: "):
            provider = line[len("# Provider: "):].split()[0]
        elif line.startswith("# Mode: "):
            learning = line[len("# Mode: "):].startswith("learn")
        elif line and not line.startswith("#") and "=" in line:
            key, _, rest = line.partition("=")
            value, _, origin = rest.partition("#")
            # a command-line value wins over the file's (2.7)
            if key not in rules or origin.strip() == "<arg>":
                rules[key] = value.strip()
    return rules, provider, learning


class Daemon:
    """The workers of the current sandboxes() context (the seed's daemon).
    Its only user-visible use is being non-None."""

    def __init__(self, conf, caller):
        self.python_sb = find_python_sb()
        self.config = find_config(conf["sandboxes_config"], caller)
        self.envs = dict(conf["envs"]) if conf["envs"] is not None else None
        self.python_args = list(conf["python_args"] or ())
        self.rules = rule_args(conf["extra_rules"])
        self.graceful = conf["graceful_shutdown"]
        self.timeout = float(conf["timeout"])
        self.max_result = int(conf["max_result"])
        self.limits = _unpickle.Limits(max_bytes=self.max_result + 4096)
        init_fn = conf["init_fn"]
        self.init_ref = _reference(init_fn) if init_fn is not None else None
        self._explain()
        size = conf["workers"] or os.cpu_count() or 1
        self.size = 1 if self.learning else max(1, int(size))
        self.cond = threading.Condition()
        self.idle = []
        self.count = 0          # workers started or starting
        self.closing = False
        self.deaths = collections.deque()

    def _base_argv(self):
        return ([self.python_sb] + self.python_args +
                [f"--pysandboxes-config={self.config}",
                 f"--python={sys.executable}"] + self.rules)

    def _explain(self):
        argv = self._base_argv() + ["--pysandboxes-explain", "-c", "pass"]
        try:
            res = subprocess.run(argv, env=self.envs, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, timeout=START_TIMEOUT)
        except OSError as exc:
            raise SandBoxError(f"cannot run {self.python_sb}: {exc}") from None
        out = res.stdout.decode("utf-8", "replace")
        err = res.stderr.decode("utf-8", "replace")
        if res.returncode != 0:
            lines = [ln for ln in err.splitlines()
                     if ln and not ln.startswith("python-sb: warning:")]
            if not lines:
                lines = [f"python-sb exited with status {res.returncode}"]
            raise ConfigSyntaxError(lines[0], lines[1:])
        rules, self.provider, self.learning = _parse_explain(out)
        mode = rules.get("remote-result-mode", "data-only").lower()
        self.mode = (_unpickle.OBJECTS if mode in ("objects", "default")
                     else _unpickle.DATA_ONLY)
        guard = rules.get("remote-result-guard", "true").lower()
        self.guard = guard not in ("false", "none", "0", "off")
        self.direct = self.provider == "none"

    # -- workers --

    def _start_worker(self):
        delay = self._backoff()
        if delay:
            time.sleep(delay)
        parent, child = socket.socketpair()
        from . import WORKER_COMMAND
        argv = self._base_argv() + ["-c", WORKER_COMMAND, str(child.fileno())]
        try:
            stdout = sys.__stderr__.fileno()  # never the caller's stdout
        except (AttributeError, OSError, ValueError):
            stdout = None
        try:
            proc = subprocess.Popen(argv, pass_fds=(child.fileno(),),
                                    stdin=subprocess.DEVNULL, stdout=stdout,
                                    env=self.envs, start_new_session=True)
        except OSError as exc:
            parent.close()
            raise SandBoxError(f"cannot run {self.python_sb}: {exc}") from None
        finally:
            child.close()
        worker = _Worker(proc, parent)
        init = pickle.dumps(("init", list(sys.path), self.init_ref,
                             self.max_result), _PROTOCOL)
        try:
            worker.send(init)
            reply = self._receive(worker, time.monotonic() + START_TIMEOUT,
                                  "init_fn")
        except socket.timeout:
            worker.kill()
            raise RuntimeError(f"Daemon failed to start within "
                               f"{START_TIMEOUT:g}s. Check that the sandbox "
                               f"can start (run python-sb alone).") from None
        except _Died:
            worker.kill()
            raise SandBoxError(f"the sandbox process exited with status "
                               f"{proc.returncode} before it was ready; see "
                               f"python-sb's message above") from None
        except BaseException:
            worker.kill()
            raise
        try:
            self._outcome(reply, "init_fn")
        except BaseException:
            worker.kill()
            raise
        return worker

    def _backoff(self):
        with self.cond:
            self._prune()
            n = len(self.deaths)
        if n <= 1:
            return 0.0
        return min(BACKOFF_CAP, BACKOFF_BASE * BACKOFF_FACTOR ** (n - 2))

    def _prune(self):
        now = time.monotonic()
        while self.deaths and now - self.deaths[0] > RESTART_WINDOW:
            self.deaths.popleft()

    def _check_budget(self):
        self._prune()
        if len(self.deaths) > RESTART_BUDGET:
            raise SandBoxProtocolError(
                f"the sandbox process died {len(self.deaths)} times in "
                f"{RESTART_WINDOW:g} s; calls are refused")

    def acquire(self):
        with self.cond:
            while True:
                if self.closing:
                    raise SandBoxError("sandboxes() is shutting down")
                self._check_budget()
                if self.idle:
                    return self.idle.pop()
                if self.count < self.size:
                    self.count += 1
                    break
                self.cond.wait()
        try:
            return self._start_worker()
        except BaseException:
            with self.cond:
                self.count -= 1
                self.cond.notify()
            raise

    def release(self, worker, alive, died=False):
        if not alive:
            worker.kill()
        with self.cond:
            if died:
                self.deaths.append(time.monotonic())
            if alive and not self.closing:
                self.idle.append(worker)
            else:
                if alive:
                    worker.stop(GRACEFUL_TIMEOUT)
                self.count -= 1
            self.cond.notify_all()

    def start(self):
        """Start one worker now, so that init_fn and start errors surface
        when the context is entered."""
        if not self.direct:
            self.release(self.acquire(), True)

    def shutdown(self):
        with self.cond:
            self.closing = True
            deadline = time.monotonic() + (GRACEFUL_TIMEOUT if self.graceful
                                           else 0)
            while self.count > len(self.idle):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            idle, self.idle = self.idle, []
            self.count -= len(idle)
        for worker in idle:
            worker.stop(GRACEFUL_TIMEOUT)

    # -- calls --

    def _receive(self, worker, deadline, qualname):
        """Frames until the outcome of the call; printed output is written
        to the caller's own streams as it comes."""
        while True:
            frame = worker.recv(deadline, self.limits.max_bytes)
            try:
                reply = _unpickle.loads(frame, self.mode, self.guard,
                                        self.limits)
            except pickle.UnpicklingError as exc:
                if getattr(exc, "garbled", False):
                    raise _Garbled(str(exc)) from None
                raise
            if not isinstance(reply, tuple) or not reply or \
                    not isinstance(reply[0], str):
                raise _Garbled("the sandbox sent a frame that is not a reply")
            if reply[0] != "out":
                return reply
            if len(reply) != 3 or not isinstance(reply[2], str):
                raise _Garbled("the sandbox sent a malformed output frame")
            stream = sys.stderr if reply[1] == "stderr" else sys.stdout
            if stream is not None:
                stream.write(reply[2])

    def _outcome(self, reply, qualname):
        tag = reply[0]
        if tag == "ok" and len(reply) == 2:
            return reply[1]
        if tag == "err" and len(reply) == 4:
            raise _remote_exception(reply[1], reply[2], reply[3],
                                    self.limits)
        if tag == "base" and len(reply) == 3 and isinstance(reply[1], str):
            code = reply[2]
            if code is not None and not isinstance(code, (int, str)):
                code = repr(code)
            raise SandBoxBaseExceptionError(reply[1], code)
        if tag == "cancelled":
            import asyncio
            raise asyncio.CancelledError()
        if tag == "big" and len(reply) == 3:
            raise SandBoxProtocolError(
                f"the result of {qualname}() is {reply[1]} bytes pickled, "
                f"over the limit of {reply[2]} bytes (max_result=)")
        raise SandBoxProtocolError(f"{qualname}(): the sandbox sent an "
                                   f"unknown reply {tag!r}")

    def call(self, module, qualname, args, kwargs):
        try:
            payload = pickle.dumps(("call", module, qualname, args, kwargs),
                                   _PROTOCOL)
        except Exception as exc:
            raise TypeError(f"the arguments of {qualname}() cannot be sent "
                            f"to the sandbox: {type(exc).__name__}: "
                            f"{exc}") from None
        for attempt in (1, 2):
            worker = self.acquire()
            try:
                worker.send(payload)
                reply = self._receive(worker,
                                      time.monotonic() + self.timeout,
                                      qualname)
            except _Died as exc:
                self.release(worker, False, died=True)
                if attempt == 2:
                    raise SandBoxProtocolError(
                        f"{qualname}(): the sandbox process died during the "
                        f"call, twice ({exc})") from None
                continue
            except socket.timeout:
                self.release(worker, False)
                raise SandBoxProtocolError(
                    f"{qualname}(): no answer from the sandbox within "
                    f"{self.timeout:g} s (timeout=); the sandbox process "
                    f"was replaced") from None
            except _Garbled as exc:
                self.release(worker, False)
                raise SandBoxProtocolError(
                    f"{qualname}(): {exc}; the sandbox process was "
                    f"replaced") from None
            except BaseException:
                # refused payload, or interrupted here: the stream cannot be
                # trusted to be in step any more
                self.release(worker, False)
                raise
            self.release(worker, True)
            return self._outcome(reply, qualname)


def _remote_exception(blob, desc, tb_text, limits):
    """The exception of a call, through the fail-closed exception channel,
    with the remote traceback grafted on as text."""
    if not (isinstance(desc, tuple) and len(desc) == 4 and
            all(isinstance(x, str) for x in desc[:3]) and
            isinstance(desc[3], list)):
        return SandBoxProtocolError("the sandbox sent a malformed exception")
    module, qualname, message, denials = desc
    exc = None
    if isinstance(blob, bytes):
        try:
            exc = _unpickle.load_exception(blob, limits)
        except Exception:
            exc = None
    if exc is None:
        exc = _unpickle.from_descriptor(module, qualname, message, denials)
    if exc is None:
        exc = SandBoxProtocolError(f"{module}.{qualname}: {message}")
        if denials:
            exc.__pysandboxes_denials__ = [str(d) for d in denials]
    if isinstance(tb_text, str) and tb_text:
        try:
            exc.__pysandboxes_traceback__ = tb_text
            note = "Traceback in the sandbox:\n" + tb_text.rstrip("\n")
            if hasattr(exc, "add_note"):
                exc.add_note(note)
        except Exception:
            pass
    return exc


def _reference(fn):
    """(module, qualname) by which a worker finds fn."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname:
        raise TypeError(f"{fn!r} cannot be sent to the sandbox: it has no "
                        f"module or qualified name")
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is None or not spec.name or spec.name == "__main__":
            raise SandBoxError(
                f"{qualname} is defined in __main__: the sandbox imports "
                f"functions by module name; define it in an importable "
                f"module")
        module = spec.name
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise SandBoxError(f"{module}.{qualname} is not defined at module "
                           f"level: the sandbox cannot import it")
    return module, qualname


# ---- the context, reference-counted ----

_lock = threading.RLock()
_daemon = None
_refs = 0
_saved_signals = {}
_atexit_set = False


def enter(conf, caller):
    global _daemon, _refs, _atexit_set
    with _lock:
        if _daemon is None:
            daemon = Daemon(conf, caller)
            daemon.start()
            _daemon = daemon
            _install_signals()
            if not _atexit_set:
                import atexit
                atexit.register(_at_exit)
                _atexit_set = True
        _refs += 1
        return _daemon


def leave():
    global _daemon, _refs
    with _lock:
        if _refs <= 0:
            raise ValueError("Daemon daemon_shutdown more times than started")
        _refs -= 1
        if _refs:
            return
        daemon, _daemon = _daemon, None
        _restore_signals()
    daemon.shutdown()


def _at_exit():
    global _daemon, _refs
    with _lock:
        daemon, _daemon, _refs = _daemon, None, 0
    if daemon is not None:
        daemon.graceful = False
        daemon.shutdown()


def _signals():
    import signal
    return [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGQUIT")
            if hasattr(signal, n)]


def _install_signals():
    """7.2: while inside, SIGINT/SIGTERM/SIGQUIT stop the workers when the
    previous disposition was the default, then act as before."""
    if threading.current_thread() is not threading.main_thread():
        return
    import signal
    for signum in _signals():
        prev = signal.getsignal(signum)
        if prev is None:
            continue  # set from C: leave it alone
        _saved_signals[signum] = prev
        signal.signal(signum, _on_signal)


def _on_signal(signum, frame):
    import signal
    prev = _saved_signals.get(signum, signal.SIG_DFL)
    if prev == signal.SIG_IGN:
        return
    if prev == signal.SIG_DFL:
        _at_exit()
        _restore_signals()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    prev(signum, frame)


def _restore_signals():
    if not _saved_signals:
        return
    if threading.current_thread() is not threading.main_thread():
        import logging
        logging.getLogger("pysandboxes").warning("Impossible to remove "
                                                 "signals")
        return
    import signal
    for signum, prev in list(_saved_signals.items()):
        try:
            signal.signal(signum, prev)
        except (ValueError, OSError):
            pass
    _saved_signals.clear()


def current():
    daemon = _daemon
    if daemon is None:
        raise AssertionError(_NOT_STARTED)
    return daemon


def check_no_running_loop():
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and asyncio._get_running_loop() is not None:
        raise RuntimeError(_MIXED)


def call_sync(fn, args, kwargs):
    daemon = current()
    check_no_running_loop()
    if daemon.direct:
        return fn(*args, **kwargs)
    module, qualname = _reference(fn)
    return daemon.call(module, qualname, args, kwargs)


async def call_async(fn, args, kwargs):
    import asyncio
    daemon = current()
    if daemon.direct:
        return await fn(*args, **kwargs)
    module, qualname = _reference(fn)
    return await asyncio.to_thread(daemon.call, module, qualname, args,
                                   kwargs)
