"""python-sb's Python surface: the exceptions, is_in_sandbox(),
sandbox_denials(), and the partial-mode API (@sandbox, sandboxes(), run()).

Under python-sb (complete mode) the whole program is already sandboxed: the
guard library sets _in_sandbox, @sandbox functions run in place and
sandboxes() does nothing. Outside python-sb (partial mode) @sandbox calls go
to workers started by sandboxes() (_partial.py, _worker.py).

The guard loads this file at start-up in every python-sb run, busy (nothing
it imports is judged): keep it light. In a partial-mode worker only, it also
loads the worker's transport modules then, so that they are not charged to
the rules (python-sb(1), partial mode).
"""
from . import e as _e
from .e import (ConfigSyntaxError, EvalInterrupted, EvalSyntaxRejected,
                RuleApiPermissionError,
                RuleAttributeError, RuleEvalPermissionError,
                RuleFileNotFoundError, RuleModuleNotFoundError,
                RulePermissionError, RuleSocketConnectionRefusedError,
                SandBoxBaseExceptionError, SandBoxError,
                SandBoxProtocolError, sandbox_denials)

__all__ = [
    "ConfigSyntaxError", "EvalInterrupted", "EvalSyntaxRejected",
    "RestrictedUnpicklingError", "RuleApiPermissionError",
    "RuleAttributeError", "RuleEvalPermissionError", "RuleFileNotFoundError",
    "RuleModuleNotFoundError", "RulePermissionError",
    "RuleSocketConnectionRefusedError", "SandBoxBaseExceptionError",
    "SandBoxError", "SandBoxProtocolError", "guarded_eval", "is_in_sandbox",
    "run", "sandbox", "sandbox_denials", "sandboxes",
]

# Set by the guard library when it arms inside a python-sb run.
_in_sandbox = False


def is_in_sandbox():
    """True inside a sandboxed interpreter (python-sb, or a partial-mode
    worker)."""
    return _in_sandbox


def guarded_eval(source, *, profile="", names=None, mode="eval"):
    """Evaluate source under the eval-* rules of a profile. Under python-sb
    the guard library replaces this function with its own (guard/eval.c);
    outside it there are no rules to apply."""
    raise RuntimeError("guarded_eval() needs python-sb: the eval guard "
                       "lives in its guard library")


def __getattr__(name):
    if name == "RestrictedUnpicklingError":
        return _e.RestrictedUnpicklingError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# How _partial starts a worker: `python-sb [rules] -c <this> FD`. Not -m:
# runpy would read _worker.py once armed, and the package directory is not
# the program's to read; the import below finds the module loaded already.
WORKER_COMMAND = "import pysandboxes._worker as w; w.main()"


def _worker_fd():
    """The socket descriptor if this interpreter is a partial-mode worker,
    else None. Decided from the interpreter's own command line, which the
    program cannot have changed yet."""
    import sys
    # 3.9 has no sys.orig_argv: the guard hands over the command line it
    # was loaded with, and without the guard /proc/self/cmdline has it
    argv = getattr(sys, "orig_argv", None) or globals().get("_orig_argv")
    if argv is None:
        if sys.argv[:1] != ["-c"]:
            return None
        import os
        try:
            fd = os.open("/proc/self/cmdline", os.O_RDONLY)
            try:
                argv = os.read(fd, 1 << 16).decode(errors="replace")
            finally:
                os.close(fd)
        except OSError:
            return None
        argv = argv.split("\0")
    for i, arg in enumerate(argv):
        if arg == "-c" or arg == "-c" + WORKER_COMMAND:
            rest = argv[i + 1:]
            if arg == "-c":
                if rest[:1] != [WORKER_COMMAND]:
                    return None
                rest = rest[1:]
            try:
                return int(rest[0])
            except (IndexError, ValueError):
                return None
    return None


def _is_worker():
    return _worker_fd() is not None


_fd = _worker_fd()
if _fd is not None:
    # loaded while the guard loads this package: not charged to the rules,
    # and the parent watcher starts before the program's code is judged
    import pysandboxes._worker
    pysandboxes._worker.watch_parent(_fd)
del _fd


def _seed_generator_message(func):
    return (f"@sandbox cannot decorate '{func.__qualname__}': generator and "
            f"asynchronous generator functions cannot be sent across the "
            f"sandbox boundary.")


_CO_GENERATOR, _CO_COROUTINE, _CO_ASYNC_GENERATOR = 0x20, 0x80, 0x200
_WRAP_ATTRS = ("__module__", "__name__", "__qualname__", "__doc__",
               "__annotations__")


def _wraps(wrapper, func):
    """functools.wraps without importing anything: under python-sb this
    file runs armed once loaded, and a fresh import would be judged."""
    for attr in _WRAP_ATTRS:
        try:
            setattr(wrapper, attr, getattr(func, attr))
        except AttributeError:
            pass
    wrapper.__dict__.update(getattr(func, "__dict__", {}))
    wrapper.__wrapped__ = func
    return wrapper


_partial_module = None


def _load_partial():
    """The parent's side (_partial), imported at the first call outside a
    sandbox, then kept: a `from . import` in each call costs a call of
    importlib's _handle_fromlist."""
    global _partial_module
    if _partial_module is None:
        from . import _partial as module
        _partial_module = module
    return _partial_module


def sandbox(fn=None):
    """Mark a function to run in the sandbox (python-sb(1), partial mode). Under
    python-sb, or inside a worker, it runs in place; otherwise the call goes
    to a worker of the current sandboxes() context, by reference (module and
    qualified name). Generator functions are refused."""

    def mark(func):
        flags = getattr(getattr(func, "__code__", None), "co_flags", 0)
        if not _in_sandbox:
            from . import _grants
            _grants.decorated.add(getattr(func, "__module__", None))
        if flags & (_CO_GENERATOR | _CO_ASYNC_GENERATOR):
            raise TypeError(_seed_generator_message(func))
        if flags & _CO_COROUTINE:
            async def acall(*args, **kwargs):
                if _in_sandbox:
                    return await func(*args, **kwargs)
                from . import _partial
                return await _partial.call_async(func, args, kwargs)
            return _wraps(acall, func)

        def call(*args, **kwargs):
            if _in_sandbox:
                return func(*args, **kwargs)
            return (_partial_module or _load_partial()).call_sync(
                func, args, kwargs)
        return _wraps(call, func)

    return mark(fn) if fn is not None else mark


class _FakeDaemon:
    """What sandboxes() gives inside a sandbox: nothing is started."""


class sandboxes:
    """Start the sandbox workers around a block (partial mode,
    python-sb(1)); reference-counted: nested and repeated blocks share them
    (one daemon), so a nested block that asks for another rule file or
    other settings than the running one's is refused with ValueError at
    __enter__ rather than run under the outer's. Under python-sb it does
    nothing: the program is sandboxed already.

    Beyond the seed: workers= (pool size, default the number of cores),
    timeout= (seconds per call, default 60), max_result= (bytes of one
    pickled result, default 64 MiB; it also bounds the work of decoding
    it) and isolated= (default False: calls on a worker share its state,
    what one call leaves behind the next one on that worker sees; True:
    each call runs in a child forked from a worker that has run no call,
    so nothing a call plants reaches another)."""

    def __init__(self, init_fn=None, sandboxes_config=None, *, envs=None,
                 python_args=None, graceful_shutdown=True, workers=None,
                 timeout=60.0, max_result=64 << 20, isolated=False,
                 **extra_rules):
        self._conf = dict(init_fn=init_fn, sandboxes_config=sandboxes_config,
                          envs=envs, python_args=python_args,
                          graceful_shutdown=graceful_shutdown,
                          workers=workers, timeout=timeout,
                          max_result=max_result, isolated=isolated,
                          extra_rules=extra_rules)
        self._caller = None
        self._entered = None
        if not _in_sandbox:
            from . import _partial
            self._caller = _partial.caller_module()

    def __enter__(self):
        if _in_sandbox:
            return _FakeDaemon()
        from . import _partial
        _partial.check_no_running_loop()
        self._entered = _partial.enter(self._conf, self._caller)
        return self._entered

    def __exit__(self, *exc):
        if _in_sandbox:
            return False
        from . import _partial
        _partial.leave()
        return False

    async def __aenter__(self):
        if _in_sandbox:
            return _FakeDaemon()
        from . import _partial
        self._entered = _partial.enter(self._conf, self._caller)
        return self._entered

    async def __aexit__(self, *exc):
        if _in_sandbox:
            return False
        from . import _partial
        _partial.leave()
        return False


def run(main, *, init_fn=None, sandboxes_config=None, envs=None,
        python_args=None, graceful_shutdown=True, **kwargs):
    """asyncio.run(main) inside `async with sandboxes(...)` (7.3)."""
    import asyncio
    if not asyncio.iscoroutine(main):
        raise ValueError(f"a coroutine was expected, got {main!r}")
    if _in_sandbox:
        return asyncio.run(main)
    ctx = sandboxes(init_fn, sandboxes_config, envs=envs,
                    python_args=python_args,
                    graceful_shutdown=graceful_shutdown, **kwargs)

    async def inside():
        async with ctx:
            return await main

    return asyncio.run(inside())
