"""Partial mode, the parent's side (python-sb(1), partial mode): sandboxes() finds
the rule file, asks python-sb to check it, and keeps a pool of workers,
each a `python-sb ... -m pysandboxes._worker FD` child connected by a
socketpair; @sandbox calls are sent to them by reference, in frames that
the C transport (_pysbframe, loaded by _worker) moves: without it partial
mode refuses to start, there is no fallback.

Every request carries a fresh random call id; every frame that comes back
must carry the id of the call in flight, so a frame of another call, one
nobody asked for, or one written on the worker's socket by other means ends
that worker and fails the call with SandBoxProtocolError: the stream never
shifts. What the workers send back is decoded by _unpickle (the restricted
unpickler), never by pickle.loads; exceptions come back as plain data and
are rebuilt here. This module never lets a worker failure
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

from . import _grants
from . import _unpickle
from . import _worker as _wk
from .e import (ConfigSyntaxError, SandBoxBaseExceptionError, SandBoxError,
                SandBoxProtocolError)

START_TIMEOUT = 30.0
GRACEFUL_TIMEOUT = 2.0
STOP_TIMEOUT = 4.0
# how long python-sb may take to end a worker's run after SIGTERM (it
# kills the program and sweeps every process the run left) before it is
# killed itself, which would leave those processes running
KILL_TIMEOUT = 10.0
RESTART_BUDGET = 5          # restarts per window, then calls are refused
RESTART_WINDOW = 180.0
BACKOFF_BASE, BACKOFF_FACTOR, BACKOFF_CAP = 1.0, 1.5, 5.0
BACKOFF_MAX_STEPS = 16      # the exponent stops growing here (no overflow)
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_NOT_STARTED = ("Daemon not started. Use 'with sandboxes()' or "
                "'pysandboxes.run()'")
_MIXED = ("It's not possible to mix synchronous and asynchronous sandbox "
          "functions. Therefore, you must only use annotated asynchronous "
          "functions with an asynchronous sandbox.")


def backoff_delay(streak):
    """Seconds to wait before restarting a worker after `streak` deaths in
    a row: 0 for none or one, then growing by BACKOFF_FACTOR up to
    BACKOFF_CAP. The exponent is bounded, so any streak gives a float."""
    if streak <= 1:
        return 0.0
    steps = min(streak - 2, BACKOFF_MAX_STEPS)
    return min(BACKOFF_CAP, BACKOFF_BASE * BACKOFF_FACTOR ** steps)


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
    directory. Returns the path and the package directories searched
    before the one that held it: a rule file put there would be read first
    next time, so python-sb refuses rules that let the sandbox make one
    (--pysandboxes-shadowed)."""
    name = os.fspath(config) if config is not None else ".py-sandboxes"
    if "/" in name:
        return name, []
    shadowed = []
    if caller and caller != "__main__":
        mod = sys.modules.get(caller)
        pkg = caller if hasattr(mod, "__path__") else caller.rpartition(".")[0]
        while pkg:
            for d in getattr(sys.modules.get(pkg), "__path__", None) or ():
                cand = os.path.join(d, name)
                if os.path.isfile(cand):
                    return cand, shadowed
                shadowed.append(os.path.abspath(d))
            pkg = pkg.rpartition(".")[0]
    return os.path.join(os.getcwd(), name), shadowed


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

_frame = _wk._frame  # None when it did not load: Daemon() refuses then
_Timeout = getattr(_frame, "Timeout", ())
_ID = getattr(_frame, "CALL_ID", 8)  # bytes of a call id
_OUTPUT = {_wk.KIND_STDOUT: "stdout", _wk.KIND_STDERR: "stderr"}
_IDS_AT_ONCE = 256


class _CallIds:
    """Random call ids, drawn from os.urandom 256 at a time (one
    getrandom costs more than a trivial call's own work here), handed out
    by a deque's popleft(), which is atomic: no two calls get the same
    one, and threads that refill it at once each add fresh ones."""

    def __init__(self):
        self._ids = collections.deque()

    def next(self):
        while True:
            try:
                return self._ids.popleft()
            except IndexError:
                buf = os.urandom(_ID * _IDS_AT_ONCE)
                self._ids.extend([buf[i:i + _ID]
                                  for i in range(0, len(buf), _ID)])


_new_id = _CallIds().next

class _Died(Exception):
    """The worker's end of the socket closed: it is gone."""


class _Garbled(Exception):
    """The worker broke the framing or sent a frame that is no reply."""


class _Worker:
    """One worker and our end of its socketpair. Frames go through the C
    transport (_pysbframe), with the GIL released; only the thread that
    acquired the worker uses the socket."""

    def __init__(self, proc, sock, hard=False):
        self.proc = proc
        self.sock = sock
        # qemu: the virtual machine is the boundary, and it dies with the
        # relay (SIGKILL at once); every other provider's python-sb ends
        # the run on SIGTERM
        self.hard = hard
        # large payloads land here, call after call (see _pysbframe.recv)
        self.spare = bytearray()

    @property
    def pid(self):
        return self.proc.pid

    def send(self, call_id, chunks, deadline):
        """One frame: the call id, then the pickler's chunks (not joined).
        Raises _Died, or _Timeout when the deadline passes."""
        try:
            _frame.send(self.sock.fileno(), [call_id] + chunks, deadline)
        except _frame.Closed:
            raise _Died("the sandbox process closed the connection") \
                from None

    def recv(self, deadline, limit):
        """The next frame as (call id + kind byte, payload length), the
        payload in self.spare[:length], or as (call id + kind, payload
        bytes). Raises _Died, _Garbled for a header over limit or a frame
        too short for an id and a kind, or _Timeout when the deadline
        passes."""
        try:
            return _frame.recv(self.sock.fileno(), deadline, limit, _ID + 1,
                               self.spare)
        except _frame.Closed:
            raise _Died("the sandbox process closed the connection") \
                from None
        except _frame.Garbled as exc:
            raise _Garbled(str(exc)) from None

    def terminate(self):
        """Ask python-sb to end the run now: on SIGTERM a partial-mode
        python-sb kills the program (which cannot ignore that, as it
        could a SIGTERM of its own), then every process the run left
        behind, and exits. Never SIGKILL first: a SIGKILLed python-sb
        runs none of that, and what the function started lives on."""
        try:
            if self.hard:
                self.proc.kill()
            else:
                self.proc.terminate()
        except OSError:
            pass

    def kill(self):
        """End the worker and wait for it: SIGTERM, then SIGKILL only
        when python-sb has not ended within KILL_TIMEOUT."""
        try:
            self.sock.close()
        except OSError:
            pass
        self.terminate()
        try:
            self.proc.wait(KILL_TIMEOUT)
        except subprocess.TimeoutExpired:
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

def _call_seconds(value):
    """timeout=: the seconds a call may take, > 0 (inf: no limit). NaN
    passed every comparison and meant no limit at all: refused, as 0 and
    negative values are (every call failed at once)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"timeout must be a number of seconds, not "
                        f"{value!r}") from None
    if not seconds > 0:
        raise ValueError(f"timeout must be > 0 seconds, not {value!r}")
    return seconds


def _graceful_seconds(value):
    """graceful_shutdown=: True waits GRACEFUL_TIMEOUT, False does not
    wait, a number is the seconds to wait for calls in flight."""
    if value is True or value is None:
        return GRACEFUL_TIMEOUT if value else 0.0
    if value is False:
        return 0.0
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"graceful_shutdown must be a bool or a number of "
                        f"seconds, not {value!r}") from None
    if not seconds >= 0:
        raise ValueError(f"graceful_shutdown must be >= 0, not {value!r}")
    return seconds


class Daemon:
    """The workers of the current sandboxes() context (the seed's daemon).
    Its only user-visible use is being non-None."""

    def __init__(self, conf, caller):
        _wk.transport()  # fail closed, before anything starts
        self.python_sb = find_python_sb()
        self.conf = conf  # what a nested block is compared with
        self.config, self.shadowed = find_config(conf["sandboxes_config"],
                                                 caller)
        self.envs = dict(conf["envs"]) if conf["envs"] is not None else None
        self.python_args = list(conf["python_args"] or ())
        self.rules = rule_args(conf["extra_rules"])
        self.graceful = _graceful_seconds(conf["graceful_shutdown"])
        self.timeout = _call_seconds(conf["timeout"])
        self.max_result = int(conf["max_result"])
        if self.max_result < 0:
            raise ValueError(f"max_result must be >= 0 bytes, not "
                             f"{conf['max_result']!r}")
        self.isolated = bool(conf.get("isolated"))
        self.limits = _unpickle.Limits(max_bytes=self.max_result + 4096)
        # output and exceptions: capped by the worker, whatever max_result
        self.other_limits = _unpickle.Limits(max_bytes=_wk.OTHER_FRAME_MAX)
        self.frame_max = max(self.limits.max_bytes, _wk.OTHER_FRAME_MAX)
        init_fn = conf["init_fn"]
        self.init_ref = _reference(init_fn) if init_fn is not None else None
        # what a worker needs to import the functions (issue 15 item 5);
        # a locked rule file takes no command-line rule: none then; a
        # learning run gets none, so that the file learns them
        mods = set(_grants.decorated) | {caller}
        if self.init_ref:
            mods.add(self.init_ref[0])
        self.grants = _grants.rule_args(mods)
        try:
            self._settings()
        except ConfigSyntaxError as exc:
            if not self.grants or "locks the rules" not in str(exc):
                raise
            self.grants = []
            self._settings()
        if self.learning:
            self.grants = []
        size = conf["workers"] or os.cpu_count() or 1
        self.size = 1 if self.learning else max(1, int(size))
        # the pool's lock, held directly on the hot paths (a Condition's
        # own __enter__ and notify_all are Python code); 'waiting' counts
        # the threads in cond.wait(), so release() notifies only when one
        # waits
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.waiting = 0
        self.idle = []
        self.busy = set()
        self.count = 0          # workers started or starting
        self.closing = False
        self.deaths = collections.deque()
        self.streak = 0         # deaths since the last healthy call
        # learning: the shapes of the results seen (4.3, result mode)
        self.seen_data = self.seen_objects = False
        self.learn_before = _read_bytes(self.learn_target) \
            if self.learn_target else None

    def _base_argv(self):
        return ([self.python_sb] + self.python_args +
                [f"--pysandboxes-config={self.config}",
                 f"--python={sys.executable}"] +
                [f"--pysandboxes-shadowed={d}" for d in self.shadowed] +
                self.rules + self.grants)

    def _settings(self):
        """What the policy says for partial mode, from python-sb's machine
        interface (--pysandboxes-settings), never from the explain text."""
        argv = self._base_argv() + ["--pysandboxes-settings", "-c", "pass"]
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
        lines = out.splitlines()
        if not lines or lines[0] != "pysb-settings 1":
            raise SandBoxError(f"{self.python_sb} does not speak this "
                               f"package's settings format (got "
                               f"{lines[:1]!r}): install matching versions")
        settings = dict(ln.partition(" ")[::2] for ln in lines[1:])
        self.provider = settings.get("provider", "subprocess")
        self.learning = settings.get("learning") == "1"
        self.learn_target = settings.get("learn-target") \
            if self.learning else None
        self.mode = (_unpickle.OBJECTS
                     if settings.get("result-mode") == "objects"
                     else _unpickle.DATA_ONLY)
        self.guard = settings.get("result-guard") != "false"
        self.direct = self.provider == "none"

    # -- workers --

    def _start_worker(self):
        delay = self._backoff()
        if delay:
            time.sleep(delay)
        parent, child = socket.socketpair()
        from . import WORKER_COMMAND
        # python-sb passes on only the descriptors it is told of (it
        # closes the others); under qemu it carries the socket into the
        # guest (a virtio-serial port, relayed at both ends) under the
        # same number
        argv = self._base_argv() + [
            f"--pysandboxes-channel={child.fileno()}",
            "-c", WORKER_COMMAND, str(child.fileno())]
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
        worker = _Worker(proc, parent, hard=self.provider == "qemu")
        init = _wk.dumps_chunks(
            ("init", list(sys.path), self.init_ref, self.max_result,
             self.isolated))
        call_id = _new_id()
        try:
            deadline = time.monotonic() + START_TIMEOUT
            worker.send(call_id, init, deadline)
            reply = self._receive(worker, call_id, deadline, "init_fn")
        except _Timeout:
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
        """The wait before a restart: none for the first death in a row,
        then BASE * FACTOR**k, k bounded so that the power never overflows,
        capped at BACKOFF_CAP. A healthy call resets the streak."""
        with self.cond:
            n = self.streak
        return backoff_delay(n)

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
        with self.lock:
            while True:
                if self.closing:
                    raise SandBoxError("sandboxes() is shutting down")
                if self.deaths:
                    self._check_budget()
                if self.idle:
                    worker = self.idle.pop()
                    self.busy.add(worker)
                    return worker
                if self.count < self.size:
                    self.count += 1
                    break
                self._wait()
        try:
            worker = self._start_worker()
        except BaseException:
            with self.cond:
                self.count -= 1
                self.cond.notify()
            raise
        with self.cond:
            self.busy.add(worker)
        return worker

    def _wait(self, timeout=None):
        """cond.wait(), counted in 'waiting' (the lock is held)."""
        self.waiting += 1
        try:
            self.cond.wait(timeout)
        finally:
            self.waiting -= 1

    def release(self, worker, alive, died=False):
        if not alive:
            worker.kill()
        with self.lock:
            self.busy.discard(worker)
            if died:
                self.deaths.append(time.monotonic())
                self.streak += 1
            elif alive:
                self.streak = 0
            if alive and not self.closing:
                self.idle.append(worker)
                stop = False
            else:
                stop = alive
                self.count -= 1
            if self.waiting:
                self.cond.notify_all()
        if stop:
            _stop_all([worker], self._stop_timeout())

    def worker_pids(self):
        """The pids of the running workers (for tests: a test kills one to
        check that the pool recovers)."""
        with self.cond:
            return [w.pid for w in self.idle] + [w.pid for w in self.busy]

    def start(self):
        """Start one worker now, so that init_fn and start errors surface
        when the context is entered."""
        if not self.direct:
            self.release(self.acquire(), True)

    def _stop_timeout(self):
        # a learning worker writes the rule file as it ends
        return STOP_TIMEOUT if self.learning else GRACEFUL_TIMEOUT

    def shutdown(self, graceful=None):
        """Refuse new calls, wait up to graceful_shutdown seconds for the
        calls in flight, then end every worker: EOF on its socket (it
        exits), SIGTERM, then SIGKILL; a worker killed in a call makes that
        call raise SandBoxError."""
        wait = self.graceful if graceful is None else graceful
        with self.cond:
            self.closing = True
            deadline = time.monotonic() + wait
            while self.count > len(self.idle):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wait(left)
            idle, self.idle = self.idle, []
            self.count -= len(idle)
            busy = list(self.busy)
            self.cond.notify_all()
        for worker in busy:
            # python-sb ends the run: its caller sees EOF and gives up
            # (acquire refuses now); the caller's thread closes the socket
            worker.terminate()
        _stop_all(idle, self._stop_timeout())
        if self.learning:
            try:
                self._learn_result_mode()
            except (OSError, subprocess.SubprocessError) as exc:
                sys.stderr.write(f"python-sb: the result mode was NOT "
                                 f"saved in '{self.learn_target}': {exc}\n")

    # -- learning: the result mode (4.3) --

    def _note_result(self, frame):
        """Decode a result while learning: one that data-only refuses (and
        that is no garbled stream) is noted, then decoded in objects mode,
        the result guard still on."""
        try:
            value = _loads(frame, _unpickle.DATA_ONLY, self.guard,
                           self.limits)
        except pickle.UnpicklingError as exc:
            if getattr(exc, "garbled", False):
                raise
            value = _loads(frame, _unpickle.OBJECTS, self.guard,
                           self.limits)
            self.seen_objects = True
            return value
        self.seen_data = True
        return value

    def _learn_result_mode(self):
        """The result mode seen goes into the rule file through python-sb's
        own writer (its lock, checks and atomic rename): 'fresh' when the
        learning run saved nothing this time (no backup was made)."""
        if not (self.seen_data or self.seen_objects):
            return
        mode = "objects" if self.seen_objects else "data-only"
        if _read_bytes(self.learn_target) == self.learn_before:
            mode += ",fresh"
        if self.learn_before is None:
            mode += ",made"  # the rule file there now is this run's
        argv = self._base_argv() + [f"--pysandboxes-learn-result={mode}",
                                    "-c", "pass"]
        # python-sb says on stderr what it wrote, or why it did not
        subprocess.run(argv, env=self.envs, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, timeout=START_TIMEOUT)

    # -- calls --

    def _receive(self, worker, call_id, deadline, qualname, cancel=None):
        """Frames of the call call_id until its outcome, as a reply tuple;
        printed output is written to the caller's own streams as it comes
        (and dropped once the caller's task was cancelled). A frame of no
        call in flight is _Garbled: the worker is replaced."""
        while True:
            head, body = worker.recv(deadline, self.frame_max)
            if head[:_ID] != call_id:
                raise _Garbled("the sandbox sent a frame that belongs to "
                               "no call in flight")
            if isinstance(body, int):  # in worker.spare[:body]
                body = (worker.spare, body)
            kind = head[_ID]
            where = _OUTPUT.get(kind)
            if where is None:
                return self._decode_reply(kind, body, qualname)
            if cancel is not None and cancel.is_set():
                continue
            stream = sys.stderr if where == "stderr" else sys.stdout
            if stream is not None:
                if isinstance(body, tuple):
                    body = body[0][:body[1]]
                stream.write(body.decode("utf-8", "replace"))

    def _decode_reply(self, kind, frame, qualname):
        """The final frame of a call as a reply tuple for _outcome()."""
        try:
            if kind == _wk.KIND_OK:
                if self.learning:
                    return ("ok", self._note_result(frame))
                return ("ok", _loads(frame, self.mode, self.guard,
                                     self.limits))
            # the rest is plain data whatever the mode
            data = _loads(frame, _unpickle.DATA_ONLY, True,
                          self.other_limits)
        except pickle.UnpicklingError as exc:
            if getattr(exc, "garbled", False):
                raise _Garbled(str(exc)) from None
            raise
        if kind == _wk.KIND_ERR:
            return ("err", data)
        if kind == _wk.KIND_BASE and isinstance(data, tuple) and \
                len(data) == 2:
            return ("base",) + data
        if kind == _wk.KIND_CANCELLED:
            return ("cancelled",)
        if kind == _wk.KIND_BIG and isinstance(data, tuple) and \
                len(data) == 2:
            return ("big",) + data
        raise _Garbled(f"the sandbox sent a reply of unknown kind {kind}")

    def _outcome(self, reply, qualname, cancel=None):
        tag = reply[0]
        if tag == "ok" and len(reply) == 2:
            return reply[1]
        if tag == "err":
            raise _remote_exception(reply[1])
        if tag == "base" and len(reply) == 3 and isinstance(reply[1], str):
            raise SandBoxBaseExceptionError(
                _wk.capped(reply[1], _wk.MESSAGE_MAX), _exit_code(reply[2]))
        if tag == "cancelled":
            # only this caller's own cancellation is one: a function that
            # raised CancelledError is the remote's BaseException, which
            # must not pass `except Exception` nor end the caller's task
            if cancel is not None and cancel.is_set():
                import asyncio
                raise asyncio.CancelledError()
            raise SandBoxBaseExceptionError(
                "asyncio.exceptions.CancelledError", None)
        if tag == "big" and len(reply) == 3:
            raise SandBoxProtocolError(
                f"the result of {qualname}() is {reply[1]} bytes pickled, "
                f"over the limit of {reply[2]} bytes (max_result=)")
        raise SandBoxProtocolError(f"{qualname}(): the sandbox sent an "
                                   f"unknown reply {tag!r}")

    def call(self, module, qualname, args, kwargs, cancel=None):
        """Run module.qualname(*args, **kwargs) in a worker. 'cancel' (a
        threading.Event) is set when the caller's asyncio task was
        cancelled: the call's output and result are then dropped."""
        try:
            payload = _wk.dumps_chunks(
                ("call", module, qualname, args, kwargs))
        except Exception as exc:
            raise TypeError(f"the arguments of {qualname}() cannot be sent "
                            f"to the sandbox: {type(exc).__name__}: "
                            f"{exc}") from None
        for attempt in (1, 2):
            worker = self.acquire()
            call_id = _new_id()
            try:
                deadline = time.monotonic() + self.timeout
                worker.send(call_id, payload, deadline)
                reply = self._receive(worker, call_id, deadline, qualname,
                                      cancel)
            except _Died as exc:
                self.release(worker, False, died=True)
                if attempt == 2:
                    raise SandBoxProtocolError(
                        f"{qualname}(): the sandbox process died during the "
                        f"call, twice ({exc})") from None
                continue
            except _Timeout:
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
            return self._outcome(reply, qualname, cancel)


def _loads(frame, mode, guard, limits):
    """Decode a reply's payload: bytes, or (a worker's spare, length)."""
    if isinstance(frame, tuple):
        buf, end = frame
        return _unpickle.loads(buf, mode, guard, limits, 0, end)
    return _unpickle.loads(frame, mode, guard, limits)


def _stop_all(workers, timeout):
    """End workers together: close their sockets (a worker exits on the
    hang-up), wait, then SIGTERM (python-sb ends the run and every process
    of it), then SIGKILL for a python-sb that did not end."""
    for worker in workers:
        try:
            worker.sock.close()
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    for worker in workers:
        try:
            worker.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    late = [w for w in workers if w.proc.poll() is None]
    for worker in late:
        worker.terminate()
    deadline = time.monotonic() + KILL_TIMEOUT
    for worker in late:
        try:
            worker.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.proc.kill()  # python-sb stuck: the last resort
            try:
                worker.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass


# ---- learning: the result-mode block of the rule file (4.3, 4.5) ----

def _read_bytes(path):
    """The file's bytes, or None when it cannot be read (absent, a link
    python-sb will refuse anyway, ...): only compared, never parsed."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _exit_code(code):
    """A remote SystemExit's code as the caller may print it: None, an int
    of at most 64 bits, or a capped string (a 1 MiB name or code was
    printed whole; an int of 100,000 digits made str() of the exception
    raise)."""
    if code is None or type(code) is bool:
        return code
    if type(code) is int:
        if code.bit_length() <= 64:
            return code
        return f"<an int of {code.bit_length()} bits>"
    if type(code) is not str:
        return f"<a {type(code).__name__}>"
    return _wk.capped(code, _wk.MESSAGE_MAX)


def _remote_exception(data):
    """The exception of a call, rebuilt from plain data (module, qualname,
    message, denials, traceback text): an instance of the same class when
    the parent has it loaded, made without running its code, whose args,
    denials and grafted traceback text are capped strings; else a
    SandBoxProtocolError naming the class."""
    if not (isinstance(data, tuple) and len(data) == 5 and
            all(isinstance(x, str) for x in data[:3]) and
            isinstance(data[3], list) and isinstance(data[4], str) and
            all(isinstance(d, str) for d in data[3])):
        return SandBoxProtocolError("the sandbox sent a malformed exception")
    module, qualname, message, denials, tb_text = data
    exc = _unpickle.from_descriptor(module, qualname, message, denials)
    if exc is None:
        exc = SandBoxProtocolError(_wk.capped(
            f"{module}.{qualname}: {message}", _wk.MESSAGE_MAX))
        if denials:
            exc.__pysandboxes_denials__ = [
                _wk.capped(d, _wk.DENIAL_MAX)
                for d in denials[:_wk.DENIALS_MAX]]
    if tb_text:
        tb_text = _wk.capped(tb_text, _wk.TRACEBACK_MAX)
        try:
            # not through the class: its __setattr__ or add_note is code
            object.__setattr__(exc, "__pysandboxes_traceback__", tb_text)
            note = "Traceback in the sandbox:\n" + tb_text.rstrip("\n")
            if hasattr(BaseException, "add_note"):  # 3.11: __notes__
                object.__setattr__(exc, "__notes__", [note])
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


# what sandboxes() gives a setting it was not asked for (__init__.py)
_UNSET = dict(init_fn=None, envs=None, python_args=None,
              graceful_shutdown=True, workers=None, timeout=60.0,
              max_result=64 << 20, isolated=False, extra_rules={})


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _differences(daemon, conf, caller):
    """The settings of a nested sandboxes() that the running daemon does
    not have: the rule file it finds (given, or found from its caller as
    the outer's was), and each argument it was given that differs from
    the outer's. A setting it was not given is no difference."""
    out = []
    config, _ = find_config(conf["sandboxes_config"], caller)
    if not _same_file(config, daemon.config):
        out.append(f"the rule file {config} (the running one is "
                   f"{daemon.config})")
    for key, unset in _UNSET.items():
        value = conf[key]
        if value is unset or (type(value) is type(unset) and
                              value == unset):
            continue
        outer = daemon.conf[key]
        if key == "init_fn" and outer is not None:
            same = _reference(value) == _reference(outer)
        else:
            try:
                same = type(value) is type(outer) and value == outer
            except Exception:
                same = False
            if not same and key in ("timeout", "max_result", "workers"):
                try:
                    same = float(value) == float(outer)
                except (TypeError, ValueError):
                    same = False
        if not same:
            shown = (dict(value) if key == "extra_rules" else
                     "<set>" if key == "envs" else value)
            out.append(f"{key}={shown!r}")
    return out


def enter(conf, caller):
    global _daemon, _refs, _atexit_set
    with _lock:
        if _daemon is not None:
            # one daemon (seed 7.2): a nested block runs its calls on
            # the outer's workers, under the outer's rules; one that asks
            # for others must not get those silently
            differ = _differences(_daemon, conf, caller)
            if differ:
                raise ValueError(
                    "a nested sandboxes() shares the running one's "
                    "workers and rules (one daemon, python-sb(1), partial "
                    "mode), and this one asks for settings it does not "
                    "have: " + "; ".join(differ) + ". Nothing was run: "
                    "give the nested block no argument, or the same "
                    "ones, or open it outside the running block")
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


def _at_exit(graceful=None):
    """At interpreter exit (graceful_shutdown= applies), or on a signal
    (graceful=0: the process is ending)."""
    global _daemon, _refs
    with _lock:
        daemon, _daemon, _refs = _daemon, None, 0
    if daemon is not None:
        daemon.shutdown(graceful)


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
        _at_exit(0)
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
    try:
        return daemon.call(module, qualname, args, kwargs)
    except ModuleNotFoundError as exc:
        raise _grants.hidden(module, exc) or exc


async def call_async(fn, args, kwargs):
    import asyncio
    daemon = current()
    if daemon.direct:
        return await fn(*args, **kwargs)
    module, qualname = _reference(fn)
    # the call runs in a thread; if this task is cancelled, the caller sees
    # CancelledError at once, and the call's output and result are dropped
    cancel = threading.Event()
    try:
        return await asyncio.to_thread(daemon.call, module, qualname, args,
                                       kwargs, cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise
    except ModuleNotFoundError as exc:
        raise _grants.hidden(module, exc) or exc
