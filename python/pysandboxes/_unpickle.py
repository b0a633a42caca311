"""The parent's result channel (docs/security-model.md, partial mode): every result that comes back
from a partial-mode worker is decoded here, never by pickle.loads.

A stream is first scanned without being executed, in C (src/partial/prescan.c,
through the _pysbframe extension: one implementation, no Python twin): an
opcode allowlist (no EXT*, no protocol-0 text opcodes such as GLOBAL/INST/
OBJ, no persistent ids, no out-of-band buffers), dense memo indices and
budgets on bytes, opcodes, memo entries and MARK depth. In data-only mode
the scan also runs the stream on a stack of shapes and admits only data:
globals are the value classes of its table and may only be called, with
the argument shapes the table lists (bounded cost: no range or iterator to
a constructor that consumes it, no size argument), BUILD and the item
opcodes change only objects the stream itself built, and the work of the
calls is charged to a budget proportional to max_result, all before
anything is decoded. The stream is then loaded by an Unpickler whose
find_class never imports a module and admits, in data-only mode, exactly
the classes of that table; in objects mode anything but a denylist
(fail-open, as the seed's). The short way, decided by the scan's verdict
alone (its flags, from an allowlist of opcodes): a stream in which no
opcode names or calls a class is loaded by pickle.loads (find_class and
persistent_load, the only hooks of the Unpickler, would never run), and
one that moreover has no memo GET or DUP is a tree no larger than its
opcodes, so the acyclic walk is skipped.

Remote exceptions do not come through here as objects: they cross as plain
data (type name, message, denials, traceback text, each capped) and
from_descriptor() rebuilds a local exception of the named class.
"""
import collections
import io
import pickle
import sys

from . import e as _e

DATA_ONLY = "data-only"
OBJECTS = "objects"


def _error(message):
    return getattr(_e, "RestrictedUnpicklingError")(message)


def _garbled(message):
    """A stream that is no well-formed pickle at all (as opposed to one
    that names something refused): the worker is out of step."""
    err = _error(message)
    err.garbled = True
    return err


WORK_PER_BYTE, WORK_BASE = 4, 1 << 12
from ._worker import DENIAL_MAX, DENIALS_MAX, MESSAGE_MAX, capped


class Limits:
    """Budgets of one stream (G9)."""

    def __init__(self, max_bytes=64 << 20, max_opcodes=1 << 23,
                 max_memo=1 << 20, max_depth=512, max_work=None):
        self.max_bytes = max_bytes
        self.max_opcodes = max_opcodes
        self.max_memo = max_memo
        self.max_depth = max_depth
        # the elements and bytes the calls of a data-only stream may
        # consume or copy, besides its opcodes: proportional to the bytes
        self.max_work = (WORK_PER_BYTE * max_bytes + WORK_BASE
                         if max_work is None else max_work)

    def as_tuple(self):
        return (self.max_bytes, self.max_opcodes, self.max_memo,
                self.max_depth, self.max_work)


# None without it: partial mode refuses to start then (_worker.transport)
from ._worker import _frame


def prescan(data, limits, mode=OBJECTS, offset=0, end=-1):
    """Walk the opcodes of data[offset:end] (bytes, or a bytearray) without
    executing any; raise RestrictedUnpicklingError on a refused opcode or
    shape or a budget overrun (with .garbled set when the stream is no
    pickle at all). Return the scan's flags (NO_CLASS, TREE) of a stream
    that passes."""
    verdict = _frame.prescan(data, offset, mode == DATA_ONLY,
                             limits.as_tuple(), end)
    if type(verdict) is tuple:
        garbled, message = verdict
        raise (_garbled if garbled else _error)(message)
    return verdict if type(verdict) is int else 0


# the scan's verdict on a stream that passed (src/partial/prescan.h)
NO_CLASS = getattr(_frame, "PRESCAN_NO_CLASS", 0)
TREE = getattr(_frame, "PRESCAN_TREE", 0)


# data-only: the value classes of 7.6, by (module, name) as pickle names
# them: the table of src/partial/prescan.c. Resolved only from modules the parent
# has loaded already.
_VALUE_CLASSES = frozenset(_frame.value_classes()) if _frame else frozenset()

# objects mode: refused modules (a name or any of its submodules) and
# builtins. Fail-open: a gadget in an unlisted module passes (attacks G10).
_DENIED_MODULES = frozenset((
    "os", "posix", "nt", "posixpath", "ntpath", "subprocess",
    "_posixsubprocess", "pty", "tty", "termios", "fcntl", "resource",
    "sys", "importlib", "_imp", "_frozen_importlib",
    "_frozen_importlib_external", "runpy", "pkgutil", "zipimport", "site",
    "socket", "_socket", "ssl", "select", "selectors", "asyncio", "http",
    "urllib", "ftplib", "smtplib", "telnetlib", "xmlrpc", "socketserver",
    "webbrowser", "ctypes", "_ctypes", "_thread", "threading",
    "multiprocessing", "concurrent", "mmap", "operator", "_operator",
    "functools", "_functools", "itertools", "shutil", "io", "_io", "tempfile",
    "logging", "signal", "_signal", "pickle", "_pickle", "copyreg",
    "shelve", "dbm", "marshal", "types", "code", "codeop", "pdb", "bdb",
    "inspect", "gc", "linecache", "traceback", "platform", "pydoc", "glob",
    "fnmatch", "builtins", "__builtin__", "__main__", "cProfile", "profile",
    "trace", "timeit", "doctest", "unittest", "venv", "ensurepip",
    "distutils", "setuptools", "pip", "sysconfig", "atexit", "weakref",
    "_weakref", "pysandboxes", "_pysb", "ast", "dis", "compileall",
    "py_compile", "zipfile", "tarfile", "imp", "posixshmem",
    "_posixshmem", "faulthandler", "tracemalloc", "readline", "rlcompleter",
    "contextvars", "string", "codecs", "_codecs", "locale", "encodings",
))
_SAFE_BUILTINS = frozenset((
    "complex", "bytearray", "range", "set", "frozenset", "slice", "int",
    "float", "str", "bytes", "list", "tuple", "dict", "bool", "object",
    "Ellipsis", "NotImplemented",
))


def _loaded(module, name):
    mod = sys.modules.get(module)
    if mod is None:
        raise _error(f"class {module}.{name} refused: module '{module}' is "
                     f"not loaded in the parent (the result channel never "
                     f"imports)")
    obj = mod
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise _error(f"class {module}.{name} refused: no such "
                         f"attribute") from None
    return obj


def _denied(module, name):
    top = module.split(".")[0]
    return (module in _DENIED_MODULES or top in _DENIED_MODULES
            or module.startswith("_pysb"))


class _Spare:
    """A read-only file over buf[pos:end] (a bytearray the pool keeps from
    call to call) for the C unpickler: read() copies the small pieces it
    asks for, readinto() fills a large bytes object straight from buf. No
    view of buf outlives a call, so the next frame can resize it."""

    __slots__ = ("_buf", "_pos", "_end")

    def __init__(self, buf, pos, end):
        self._buf, self._pos, self._end = buf, pos, end

    def read(self, n=-1):
        pos = self._pos
        stop = self._end if n is None or n < 0 else min(self._end, pos + n)
        self._pos = stop
        with memoryview(self._buf) as view:
            return bytes(view[pos:stop])

    def readinto(self, into):
        pos = self._pos
        n = min(len(into), self._end - pos)
        with memoryview(self._buf) as view:
            into[:n] = view[pos:pos + n]
        self._pos = pos + n
        return n

    def readline(self):
        at = self._buf.find(b"\n", self._pos, self._end)
        return self.read((self._end if at < 0 else at + 1) - self._pos)


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, mode, guard, offset, end=-1):
        if isinstance(data, bytearray):
            stream = _Spare(data, offset, len(data) if end < 0 else end)
        else:
            stream = io.BytesIO(data)  # shares the bytes, no copy
            stream.seek(offset)
        super().__init__(stream)
        self._mode = mode
        self._guard = guard

    def find_class(self, module, name):
        module, name = str(module), str(name)
        if (module, name) in _VALUE_CLASSES:
            return _loaded(module, name)
        if self._mode == DATA_ONLY:
            raise _error(f"{module}.{name} is refused: remote-result-mode "
                         f"is data-only (values only)")
        if module == "builtins" and name in _SAFE_BUILTINS:
            return _loaded(module, name)
        if self._guard and _denied(module, name):
            raise _error(f"{module}.{name} is refused by the result guard")
        obj = _loaded(module, name)
        if self._guard and "." in name and not isinstance(obj, type):
            raise _error(f"{module}.{name} is refused by the result guard: "
                         f"a callable reached through a dotted name")
        return obj

    def persistent_load(self, pid):
        raise _error("persistent ids are refused on the result channel")


_CONTAINERS = (list, tuple, dict, set, frozenset)
_WALKED = _CONTAINERS + (collections.deque,)
_SIZED = (str, bytes, bytearray)
_ONE = (type(None), bool, float)


def _weight(obj, cache):
    """What one use of a value that is no container adds to the result
    walked as a tree: a str or bytes its length, an int its decimal
    digits, an instance of a value class its repr (a Decimal also the
    digits of its exponent, which '{:f}' writes out); at least 1. The
    scan charged the same to max_work for each DUP or memo GET."""
    kind = type(obj)
    if kind in _SIZED:
        return len(obj) or 1
    if kind in _ONE:
        return 1
    if kind is int:
        return obj.bit_length() // 3 + 1
    oid = id(obj)
    w = cache.get(oid)
    if w is None:
        w = len(repr(obj)) or 1
        adjusted = getattr(obj, "adjusted", None)
        if kind.__module__ == "decimal" and adjusted is not None and \
                obj.is_finite():
            w += abs(adjusted())
        cache[oid] = w
    return w


def _check_acyclic(root, max_size):
    """Data-only results are trees or DAGs: refuse a cycle, and a DAG
    that expands, walked as a tree (as repr(), ==, json.dumps() and
    copy.deepcopy() walk it in the parent), to more than max_size values:
    l(k+1) = [l(k), l(k)] is 2^k. Iterative, each object visited once."""
    done, on_path = set(), set()
    size, weights = {}, {}
    get = size.get

    def used(child):
        got = get(id(child))
        return got if got is not None else _weight(child, weights)
    stack = [(root, False)]
    push = stack.append
    kinds = _WALKED
    while stack:
        obj, leaving = stack.pop()
        oid = id(obj)
        if leaving:
            on_path.discard(oid)
            done.add(oid)
            total = 1
            if isinstance(obj, dict):
                for key, value in obj.items():
                    total += used(key) + used(value)
            else:
                for child in obj:
                    total += used(child)
            if total > max_size:
                raise _error(f"a result that expands to more than "
                             f"{max_size} values (shared containers "
                             f"counted at each use) is refused in "
                             f"data-only mode")
            size[oid] = total
            continue
        if not isinstance(obj, kinds):
            if _weight(obj, weights) > max_size:
                raise _error(f"a result that expands to more than "
                             f"{max_size} values (shared containers "
                             f"counted at each use) is refused in "
                             f"data-only mode")
            continue
        if oid in done:
            continue
        if oid in on_path:
            raise _error("a cycle in the result is refused in data-only mode")
        on_path.add(oid)
        push((obj, True))
        if isinstance(obj, dict):
            for key, value in obj.items():
                push((key, False))
                push((value, False))
        else:
            for child in obj:
                push((child, False))


def loads(data, mode=DATA_ONLY, guard=True, limits=None, offset=0, end=-1):
    """Decode the result stream data[offset:end] (bytes, or the pool's
    spare bytearray) from a worker under the rules of 7.6."""
    limits = limits or Limits()
    flags = prescan(data, limits, mode, offset, end)
    try:
        if flags & NO_CLASS:
            value = _load_plain(data, offset, end)
        else:
            value = _Unpickler(data, mode, guard, offset, end).load()
    except pickle.UnpicklingError:
        raise
    except RecursionError:
        raise _error("the payload nests too deeply") from None
    except Exception as exc:
        raise _garbled(f"the payload could not be decoded: "
                       f"{type(exc).__name__}: {exc}") from None
    # a TREE stream (no memo GET, no DUP, no class) makes each object once
    # and puts it in one place: no cycle, no shared container, at most as
    # many values as opcodes, each charged to max_work by the scan
    if mode == DATA_ONLY and not flags & TREE:
        _check_acyclic(value, limits.max_work)
    return value


def _load_plain(data, offset, end):
    """pickle.loads of data[offset:end], a stream the scan found free of
    any opcode that names or calls a class: the restricted Unpickler's
    hooks would never run, so this decodes exactly as it does."""
    if offset == 0 and end < 0 and type(data) is bytes:
        return pickle.loads(data)
    with memoryview(data) as view:
        with view[offset:len(data) if end < 0 else end] as part:
            return pickle.loads(part)


_MESSAGE_CLASSES = {}


_MODULE = type(sys)
_ARGS = BaseException.__dict__["args"]  # the slot, not a class's override
# a class's own MRO and module, past any metaclass __getattribute__
_MRO = type.__dict__["__mro__"].__get__
_MODULE_OF = type.__dict__["__module__"].__get__


def _message_str(self):
    args = _ARGS.__get__(self)
    return str(args[0]) if args else ""


def _static(obj, name):
    """obj.name found in the __dict__ of obj (a module) or of the classes
    of its MRO (a class), or None: no module __getattr__ (it may import),
    no metaclass __getattr__, no descriptor runs."""
    if issubclass(type(obj), type):
        owners = type.__dict__["__mro__"].__get__(obj)
        space = type.__dict__["__dict__"].__get__
    elif issubclass(type(obj), _MODULE):
        owners = (obj,)
        space = _MODULE.__dict__["__dict__"].__get__
    else:
        return None
    for owner in owners:
        found = space(owner).get(name)
        if found is not None:
            return found
    return None


def _runs_code_to_subclass(cls):
    """Would making a subclass of cls run code of the parent's (a
    metaclass, __init_subclass__)?"""
    return type(cls) is not type or any(
        "__init_subclass__" in vars(k) for k in cls.__mro__
        if k is not object)


# what a class of the parent's may define (in the classes of its MRO above
# the builtin base) for its exception to be rebuilt: attributes that run
# nothing when the exception is raised, caught, printed, logged or
# collected. __init__ and __new__ are never run here, __str__ and __repr__
# are replaced (_with_message_str), __init_subclass__ is refused there when
# a subclass is made, __reduce__ runs only when the caller pickles it. Any
# other special method (__del__ runs at collection; __getattr__ and
# __getattribute__ when traceback reads __notes__, __cause__...; __eq__ and
# __hash__ when logging or a set meets it), and any name that overrides an
# attribute of the builtin base (a SyntaxError's lineno, read by printing),
# is code of the parent's that a remote name would make it run.
_INERT = frozenset((
    "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
    "__slots__", "__annotations__", "__firstlineno__",
    "__static_attributes__", "__orig_bases__", "__parameters__",
    "__match_args__", "__classcell__", "__abstractmethods__",
    "__type_params__",
    "__init__", "__new__", "__str__", "__repr__", "__init_subclass__",
    "__reduce__"))


def _runs_code_implicitly(cls, base):
    """Would an instance of cls (rebuilt, none of its code run) run code of
    the parent's by being printed, compared, hashed or collected? A
    metaclass is code too (traceback reads the class's __qualname__)."""
    if type(cls) is not type:
        return True
    space = type.__dict__["__dict__"].__get__
    for k in _MRO(cls):
        if _MODULE_OF(k) == "builtins":
            continue
        if type(k) is not type:
            return True
        for name in space(k):
            if not isinstance(name, str):
                return True
            if name.startswith("__") and name.endswith("__"):
                if name not in _INERT:
                    return True
            elif _static(base, name) is not None:
                return True
    return False


def _with_message_str(cls, base):
    """cls, or a subclass of it whose str() and repr() give the message:
    the class's own __str__ may read attributes a rebuilt exception does not
    have (urllib.error.URLError reads .reason), and the caller's str(exc)
    must not raise. except cls: still catches it."""
    if (_static(cls, "__str__") is _static(base, "__str__") and
            _static(cls, "__repr__") is _static(base, "__repr__")):
        return cls
    sub = _MESSAGE_CLASSES.get(cls)
    if sub is None:
        if _runs_code_to_subclass(cls):
            return None
        def _repr(self):
            return f"{cls.__qualname__}({_message_str(self)!r})"
        try:
            sub = type(cls.__name__, (cls,), {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__str__": _message_str, "__repr__": _repr})
        except Exception:
            return None
        _MESSAGE_CLASSES[cls] = sub
    return sub


def from_descriptor(module, qualname, message, denials):
    """Rebuild an exception of the same class without its attributes and
    without running any of its code (7.6; no __init__, __new__,
    __setattr__, __init_subclass__, metaclass or module __getattr__, which
    may import): its args are the one message string, capped; None when
    the class is not an Exception subclass loaded in the parent or would
    run code, then or later when printed, compared or collected
    (_runs_code_implicitly)."""
    mod = sys.modules.get(module) if isinstance(module, str) else None
    if mod is None or not isinstance(qualname, str):
        return None
    cls = mod
    for part in qualname.split("."):
        cls = _static(cls, part)
        if cls is None:
            return None
    if not (issubclass(type(cls), type) and issubclass(cls, Exception)):
        return None
    # the nearest builtin base allocates it: no __new__ of the class runs
    base = next(b for b in _MRO(cls) if _MODULE_OF(b) == "builtins")
    if _runs_code_implicitly(cls, base):
        return None
    cls = _with_message_str(cls, base)
    if cls is None:
        return None
    message = capped(str(message), MESSAGE_MAX)
    # the class is the caller's and may define __getattribute__ or
    # __class__: isinstance() would ask the instance, so only the real
    # type (type(), issubclass() of classes) is consulted from here on
    try:
        exc = base.__new__(cls)
        _ARGS.__set__(exc, (message,))
        if issubclass(cls, OSError):
            OSError.__dict__["strerror"].__set__(exc, message)
    except Exception:
        return None
    recorded = [capped(str(d), DENIAL_MAX) for d in denials[:DENIALS_MAX]]
    own = f"{type.__dict__['__name__'].__get__(cls)}: {message}"
    if issubclass(cls, _e._DENIALS) and own in recorded:
        recorded.remove(own)  # sandbox_denials() counts the exception
    if recorded:
        object.__setattr__(exc, "__pysandboxes_denials__", recorded)
    return exc
