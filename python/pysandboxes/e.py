"""The exceptions of python-sb (python-sb(1), the Python layer).

Each refusal derives from the builtin exception the same failure would raise
without a sandbox, so unmodified code handles it: a refused file looks
missing, a refused connection looks refused. Every class pickles with its own
constructor arguments so that it crosses a process boundary intact.
"""
import sys as _sys

try:
    import errno as _errno
except Exception:  # the program may have broken the import system first
    class _errno:  # python-sb is Linux-only: its values
        ENOENT, EACCES, ECONNREFUSED, EPERM = 2, 13, 111, 1


class SandBoxError(RuntimeError):
    """Base of every python-sb exception (except EvalInterrupted)."""


class SandBoxProtocolError(SandBoxError):
    """The dialogue with the sandbox failed; never an application error."""


class SandBoxBaseExceptionError(SandBoxError):
    """The sandboxed function raised SystemExit, KeyboardInterrupt or another
    non-Exception BaseException. The sandbox process survives."""

    def __init__(self, exception_type, code=None):
        super().__init__(exception_type, code)
        self.exception_type = exception_type
        self.code = code

    def __str__(self):
        if self.code is None:
            return self.exception_type
        return f"{self.exception_type}({self.code})"


class ConfigSyntaxError(SandBoxError):
    """A configuration error; str() is the message then one error a line."""

    def __init__(self, message, errors=()):
        super().__init__(message, list(errors))
        self.message = message
        self.errors = list(errors)

    def __str__(self):
        return "\n".join([self.message] + self.errors)


def _message_str(self):
    """str() is the message alone, as the seed prints it."""
    return self.strerror


def _message_reduce(self):
    return (type(self), (self.strerror, self.filename))


class RuleFileNotFoundError(FileNotFoundError, SandBoxError):
    """A path that is not exposed, or hidden by ignore= (errno ENOENT)."""

    def __init__(self, message, filename=None):
        super().__init__(_errno.ENOENT, message)
        self.filename = filename


class RulePermissionError(PermissionError, SandBoxError):
    """A write to a path exposed read-only."""

    def __init__(self, message, filename=None):
        super().__init__(_errno.EACCES, message)
        self.filename = filename


class RuleSocketConnectionRefusedError(ConnectionRefusedError, SandBoxError):
    """Network access refused (resolution, bind, connect, send...)."""

    def __init__(self, message, filename=None):
        super().__init__(_errno.ECONNREFUSED, message)
        self.filename = filename


for _cls in (RuleFileNotFoundError, RulePermissionError,
             RuleSocketConnectionRefusedError):
    _cls.__str__ = _message_str
    _cls.__reduce__ = _message_reduce


class RuleModuleNotFoundError(ModuleNotFoundError, SandBoxError):
    """An import the rules do not allow."""

    def __init__(self, message, name=None):
        super().__init__(message, name=name)

    def __reduce__(self):
        return (type(self), (self.msg, self.name))


class RuleAttributeError(AttributeError, SandBoxError):
    """Reserved for self-protection; nothing raises it today."""


class RuleApiPermissionError(PermissionError, SandBoxError):
    """A sensitive function the rules deny."""

    def __init__(self, qualname, category):
        super().__init__(_errno.EPERM, _api_message(qualname, category))
        self.qualname = qualname
        self.category = category

    def __str__(self):
        return self.strerror

    def __reduce__(self):
        return (type(self), (self.qualname, self.category))


def _report_denial(exc):
    """The line a refusal prints, as the seed's `Pysandboxes` logger does
    (ERROR): through logging when the program has imported it, so that its
    configuration decides; else the bare line on sys.stderr, what logging's
    last-resort handler would write. Called by the guard, which ignores
    what this raises; `log-stderr=off` in the rule file silences it."""
    text = str(exc).split("\n", 1)[0]
    if text.startswith("Guard network connection to "):
        text = "Connection to " + text[len("Guard network connection to "):]
    logging = _sys.modules.get("logging")
    get_logger = getattr(logging, "getLogger", None)
    if get_logger is not None:
        get_logger("Pysandboxes").error("%s", text)
        return
    stream = _sys.stderr
    if stream is not None:
        stream.write(text + "\n")
        stream.flush()


def _api_message(qualname, category):
    return (f"{qualname}() is denied by the API guard (category: "
            f"{category}).\nAdd `python-api=ALLOW:{qualname}` for this "
            f"function only, or `python-api=ALLOW:{category}` for the "
            f"whole category.")


class EvalSyntaxRejected(SandBoxError, SyntaxError):
    """Evaluated source outside the declared sub-language."""

    def __init__(self, msg, violations=(), lineno=None, offset=None,
                 text=None):
        SyntaxError.__init__(self, msg)
        self.msg = msg
        self.violations = list(violations)
        self.lineno, self.offset, self.text = lineno, offset, text

    def __str__(self):
        return self.msg

    def __reduce__(self):
        return (type(self), (self.msg, self.violations, self.lineno,
                             self.offset, self.text))


class RuleEvalPermissionError(PermissionError, SandBoxError):
    """The eval guard refused an attribute or an allocation at run time."""

    def __init__(self, target, rule_key, hint=None):
        text = hint or f"Add `{rule_key}={target}` to allow it."
        super().__init__(_errno.EPERM,
                         f"'{target}' is denied by the eval guard.\n{text}")
        self.target, self.rule_key, self.hint = target, rule_key, hint

    def __str__(self):
        return self.strerror

    def __reduce__(self):
        return (type(self), (self.target, self.rule_key, self.hint))


class EvalInterrupted(BaseException):
    """An eval budget or timeout ran out. Deliberately not a SandBoxError."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason

    def __str__(self):
        return f"evaluation interrupted: {self.reason}"


def _restricted_unpickling_error():
    # pickle is heavy to import: build this class the first time it is asked
    # for, not when the guard loads the package at start-up
    import pickle

    class RestrictedUnpicklingError(pickle.UnpicklingError, SandBoxError):
        """The parent refused to deserialize a payload from a sandbox."""

    RestrictedUnpicklingError.__module__ = __name__
    RestrictedUnpicklingError.__qualname__ = "RestrictedUnpicklingError"
    return RestrictedUnpicklingError


def __getattr__(name):
    if name == "RestrictedUnpicklingError":
        cls = _restricted_unpickling_error()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_DENIALS = (RuleFileNotFoundError, RulePermissionError,
            RuleSocketConnectionRefusedError, RuleModuleNotFoundError,
            RuleApiPermissionError, RuleEvalPermissionError,
            EvalSyntaxRejected, EvalInterrupted)


def sandbox_denials(exception):
    """The sandbox refusals behind an exception, innermost first, each as
    "<ExceptionName>: <message>"; empty when no rule refused anything. It
    walks __cause__, __context__ and exception groups."""
    found, seen = [], set()

    def walk(exc):
        if exc is None or id(exc) in seen:
            return
        seen.add(id(exc))
        for inner in getattr(exc, "exceptions", None) or ():
            walk(inner)
        walk(exc.__cause__)
        walk(exc.__context__)
        recorded = getattr(exc, "__pysandboxes_denials__", None)
        if recorded:
            found.extend(recorded)
        if isinstance(exc, _DENIALS):
            found.append(f"{type(exc).__name__}: {exc}")

    walk(exception)
    return found
