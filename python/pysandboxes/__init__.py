"""python-sb's Python surface: the exceptions, is_in_sandbox(),
sandbox_denials(), and the partial-mode API (@sandbox, sandboxes(), run()).

Under python-sb (complete mode) the whole program is already sandboxed: the
guard library sets _in_sandbox, @sandbox functions run in place and
sandboxes() does nothing. Partial mode outside python-sb is not built yet.
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
    "SandBoxError", "SandBoxProtocolError", "is_in_sandbox", "run",
    "sandbox", "sandbox_denials", "sandboxes",
]

# Set by the guard library when it arms inside a python-sb run.
_in_sandbox = False


def is_in_sandbox():
    """True inside a sandboxed interpreter (python-sb, or a partial-mode
    worker)."""
    return _in_sandbox


_PARTIAL_MISSING = ("partial mode (@sandbox calls from a program that is "
                    "not under python-sb) is not built yet; run the program "
                    "under python-sb instead")


def __getattr__(name):
    if name == "RestrictedUnpicklingError":
        return _e.RestrictedUnpicklingError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sandbox(fn=None):
    """Mark a function to run in the sandbox. Under python-sb it runs in
    place. Generator functions are refused."""
    import functools as _functools
    import inspect as _inspect

    def mark(func):
        if (_inspect.isgeneratorfunction(func)
                or _inspect.isasyncgenfunction(func)):
            raise TypeError(f"@sandbox can not be used with a generator "
                            f"function ({func.__qualname__}): its values "
                            f"could not come back from the sandbox")
        if _inspect.iscoroutinefunction(func):
            @_functools.wraps(func)
            async def acall(*args, **kwargs):
                if not _in_sandbox:
                    raise SandBoxError(_PARTIAL_MISSING)
                return await func(*args, **kwargs)
            return acall

        @_functools.wraps(func)
        def call(*args, **kwargs):
            if not _in_sandbox:
                raise SandBoxError(_PARTIAL_MISSING)
            return func(*args, **kwargs)
        return call

    return mark(fn) if fn is not None else mark


class sandboxes:
    """Start the sandbox around a block (partial mode). Under python-sb it
    does nothing: the program is sandboxed already."""

    def __init__(self, *args, **kwargs):
        self._args, self._kwargs = args, kwargs

    def __enter__(self):
        if not _in_sandbox:
            raise SandBoxError(_PARTIAL_MISSING)
        return self

    def __exit__(self, *exc):
        return False

    async def __aenter__(self):
        return self.__enter__()

    async def __aexit__(self, *exc):
        return False


def run(main, *args, **kwargs):
    """asyncio.run() with the sandbox around it (partial mode)."""
    if not _in_sandbox:
        raise SandBoxError(_PARTIAL_MISSING)
    import asyncio
    return asyncio.run(main)
