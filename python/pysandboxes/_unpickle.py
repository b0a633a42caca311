"""The parent's result channel (seed-spec 7.6): every byte stream that comes
back from a partial-mode worker is decoded here, never by pickle.loads.

A stream is first scanned without being executed: an opcode allowlist (no
EXT*, no protocol-0 text opcodes such as GLOBAL/INST/OBJ, no persistent ids,
no out-of-band buffers) and budgets on bytes, opcodes, memo entries and MARK
depth. It is then loaded by an Unpickler whose find_class never imports a
module and admits, in data-only mode, only the value classes of 7.6; in
objects mode anything but a denylist (fail-open, as the seed's). The
exception channel is fail-closed: Exception subclasses of builtins and of
pysandboxes only; what it refuses falls back to a descriptor.

This module must not run any code the stream chooses in data-only mode and
must never import a module on the stream's behalf. The scan runs in C
(src/prescan.c, libpysb-prescan.so through ctypes) when the parent finds
the library; _prescan_py is its reference and the fallback, and the two
give the same verdict and message for every stream.
"""
import io
import os
import pickle
import struct
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


class Limits:
    """Budgets of one stream (G9)."""

    def __init__(self, max_bytes=64 << 20, max_opcodes=1 << 23,
                 max_memo=1 << 20, max_depth=512):
        self.max_bytes = max_bytes
        self.max_opcodes = max_opcodes
        self.max_memo = max_memo
        self.max_depth = max_depth

    def __setattr__(self, name, value):
        # a budget changed: the C prescan's copy of them is stale
        self.__dict__.pop("_c_struct", None)
        object.__setattr__(self, name, value)


# opcode byte -> argument shape: 0 none, 1/2/4/8 fixed bytes, -1/-4/-8 a
# length of that many bytes then the data. Opcodes absent are refused.
_ARGS = {
    b"("[0]: 0, b"."[0]: 0, b"0"[0]: 0, b"1"[0]: 0, b"2"[0]: 0,
    b"N"[0]: 0, b"a"[0]: 0, b"e"[0]: 0, b"b"[0]: 0, b"d"[0]: 0,
    b"}"[0]: 0, b"]"[0]: 0, b")"[0]: 0, b"l"[0]: 0, b"R"[0]: 0,
    b"s"[0]: 0, b"u"[0]: 0, b"t"[0]: 0, 0x81: 0, 0x85: 0, 0x86: 0,
    0x87: 0, 0x88: 0, 0x89: 0, 0x8f: 0, 0x90: 0, 0x91: 0, 0x92: 0,
    0x93: 0, 0x94: 0,
    b"K"[0]: 1, b"h"[0]: 1, b"q"[0]: 1, 0x80: 1,
    b"M"[0]: 2,
    b"J"[0]: 4, b"j"[0]: 4, b"r"[0]: 4,
    b"G"[0]: 8, 0x95: 8,
    b"C"[0]: -1, 0x8c: -1, 0x8a: -1,
    b"X"[0]: -4, b"B"[0]: -4, 0x8b: -4,
    0x8d: -8, 0x8e: -8, 0x96: -8,
}
_REFUSED_NAMES = {
    b"c"[0]: "GLOBAL", b"i"[0]: "INST", b"o"[0]: "OBJ", 0x82: "EXT1",
    0x83: "EXT2", 0x84: "EXT4", b"P"[0]: "PERSID", b"Q"[0]: "BINPERSID",
    0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}
_MARK, _POP_MARK, _STOP = b"("[0], b"1"[0], b"."[0]
# the opcodes that consume the topmost MARK
_MARK_USERS = frozenset(b"edltu1") | {0x90, 0x91}
_MEMO_PUTS = frozenset((b"q"[0], b"r"[0], 0x94))
_LEN = {-1: (1, "<B"), -4: (4, "<I"), -8: (8, "<Q")}


def prescan(data, limits):
    """Walk the opcodes of 'data' without executing any; raise
    RestrictedUnpicklingError on a refused opcode or a budget overrun (with
    .garbled set when the stream is no pickle at all)."""
    impl = _impl
    if impl is None:
        impl = _choose()
    impl(data, limits)


def _prescan_py(data, limits):
    """The reference prescan; src/prescan.c is its exact twin."""
    n = len(data)
    if n > limits.max_bytes:
        raise _error(f"the payload is {n} bytes, over the limit of "
                     f"{limits.max_bytes} bytes")
    pos = ops = memo = depth = 0
    args, lens = _ARGS, _LEN
    while True:
        if pos >= n:
            raise _garbled("truncated pickle stream: no STOP opcode")
        code = data[pos]
        pos += 1
        ops += 1
        if ops > limits.max_opcodes:
            raise _error(f"the payload holds more than {limits.max_opcodes} "
                         f"opcodes")
        shape = args.get(code)
        if shape is None:
            name = _REFUSED_NAMES.get(code)
            if name:
                raise _error(f"opcode {name} is refused on the result "
                             f"channel")
            raise _garbled(f"byte {code:#04x} is no pickle opcode")
        if shape > 0:
            pos += shape
        elif shape < 0:
            size, fmt = lens[shape]
            if pos + size > n:
                raise _garbled("truncated pickle stream")
            pos += size + struct.unpack_from(fmt, data, pos)[0]
        if pos > n:
            raise _garbled("truncated pickle stream")
        if code == _MARK:
            depth += 1
            if depth > limits.max_depth:
                raise _error(f"MARK nesting deeper than {limits.max_depth}")
        elif code in _MARK_USERS:
            depth -= 1
            if depth < 0:
                raise _garbled("unbalanced MARK in the pickle stream")
        elif code in _MEMO_PUTS:
            memo += 1
            if memo > limits.max_memo:
                raise _error(f"the payload memoizes more than "
                             f"{limits.max_memo} objects")
        elif code == _STOP:
            if pos != n:
                raise _garbled("data after the STOP opcode")
            return


# ---- the C prescan (src/prescan.c) ----
# Loaded on the first prescan, in the parent only: a worker never decodes
# results, and importing ctypes there would be judged by its rules.

_PRESCAN_LIB = "libpysb-prescan.so"
_PRESCAN_ABI = 1            # SB_PRESCAN_ABI of src/prescan.h
_PRESCAN_MSG_MAX = 160      # SB_PRESCAN_MSG_MAX
_LLONG_MIN, _LLONG_MAX = -(1 << 63), (1 << 63) - 1
_impl = None                # _prescan_c or _prescan_py, once chosen
_c_fn = _c_char = _CLimits = _CError = None
_c_path = None              # the library in use, for diagnostics


def _prescan_lib_paths():
    """Where libpysb-prescan.so may be, in find_python_sb()'s order: next
    to $PYSB_PYTHON_SB, the build tree of this checkout, then next to the
    guard as make install (<libdir>/python-sb/, two levels above this
    package) and the wheel (pysandboxes/_lib/) put it, then next to
    python-sb on PATH."""
    pkg_dir = os.path.dirname(os.path.abspath(__file__))
    above = os.path.dirname(os.path.dirname(pkg_dir))
    dirs = []
    env = os.environ.get("PYSB_PYTHON_SB")
    if env:
        dirs.append(os.path.dirname(os.path.realpath(env)))
    dirs += [os.path.join(above, "build"), above,
             os.path.join(pkg_dir, "_lib")]
    import shutil
    found = shutil.which("python-sb")
    if found:
        dirs.append(os.path.dirname(os.path.realpath(found)))
    return [os.path.join(d, _PRESCAN_LIB) for d in dirs]


def _load_c():
    """The sb_prescan function of the first library that loads and speaks
    our ABI, or None (then the Python prescan runs)."""
    global _c_char, _CLimits, _CError, _c_path
    pkg = sys.modules.get(__package__ or "pysandboxes")
    if pkg is None or getattr(pkg, "_in_sandbox", True):
        return None
    is_worker = getattr(pkg, "_is_worker", None)
    if is_worker is None or is_worker():
        return None
    paths = [p for p in _prescan_lib_paths() if os.path.isfile(p)]
    if not paths:
        return None
    import ctypes

    class _Limits(ctypes.Structure):
        _fields_ = [("max_bytes", ctypes.c_longlong),
                    ("max_opcodes", ctypes.c_longlong),
                    ("max_memo", ctypes.c_longlong),
                    ("max_depth", ctypes.c_longlong)]

    class _Error(ctypes.Structure):
        _fields_ = [("garbled", ctypes.c_bool),
                    ("message", ctypes.c_char * _PRESCAN_MSG_MAX)]

    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            abi = lib.sb_prescan_abi
            fn = lib.sb_prescan
        except (OSError, AttributeError):
            continue
        abi.argtypes, abi.restype = [], ctypes.c_int
        if abi() != _PRESCAN_ABI:
            continue
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                       ctypes.POINTER(_Limits), ctypes.POINTER(_Error)]
        fn.restype = ctypes.c_int
        _c_char, _CLimits, _CError, _c_path = (ctypes.c_char, _Limits,
                                               _Error, path)
        return fn
    return None


def _choose():
    """Pick the prescan once. Two threads may race here; both pick the
    same one, and loading a library twice returns the same handle."""
    global _impl, _c_fn
    fn = _load_c()
    if fn is not None:
        _c_fn = fn
        _impl = _prescan_c
    else:
        _impl = _prescan_py
    return _impl


def _c_limits(limits):
    """The C copy of the budgets, cached on a Limits (its __setattr__
    drops it); False when one is no int of the C range, as then only the
    Python prescan formats it the same way."""
    values = (limits.max_bytes, limits.max_opcodes, limits.max_memo,
              limits.max_depth)
    ok = all(type(v) is int and _LLONG_MIN <= v <= _LLONG_MAX
             for v in values)
    struct_ = _CLimits(*values) if ok else False
    if type(limits) is Limits:
        limits.__dict__["_c_struct"] = struct_
    return struct_


def _prescan_c(data, limits):
    """sb_prescan on the caller's buffer, never a copy of it: bytes as
    they are, a bytearray through a ctypes view of it; other types, and
    budgets C cannot hold, go to the Python prescan."""
    kind = type(data)
    if kind is bytes:
        buf = data
    elif kind is bytearray:
        buf = (_c_char * len(data)).from_buffer(data) if data else None
    else:
        return _prescan_py(data, limits)
    lim = getattr(limits, "_c_struct", None)
    if lim is None:
        lim = _c_limits(limits)
    if lim is False:
        return _prescan_py(data, limits)
    if _c_fn(buf, len(data), lim, None) == 0:
        return
    # refused: the scan again for the reason, off the hot path
    err = _CError()
    _c_fn(buf, len(data), lim, err)
    # the view pins the bytearray's size; let go before the traceback does
    del buf
    message = err.message.decode("ascii", "replace")
    raise (_garbled if err.garbled else _error)(message)


def __getattr__(name):
    # PRESCAN_IMPL: "c" or "py", the prescan this process uses (choosing
    # it, and loading the library, on first use)
    if name == "PRESCAN_IMPL":
        return "c" if (_impl or _choose()) is _prescan_c else "py"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# data-only: the value classes of 7.6, by (module, name) as pickle names
# them. Resolved only from modules the parent has loaded already.
_VALUE_CLASSES = {
    ("builtins", "complex"), ("builtins", "bytearray"),
    ("builtins", "range"), ("builtins", "set"), ("builtins", "frozenset"),
    ("collections", "OrderedDict"), ("collections", "Counter"),
    ("collections", "deque"),
    ("pathlib", "PurePath"), ("pathlib", "PurePosixPath"),
    ("pathlib", "PureWindowsPath"), ("pathlib", "Path"),
    ("pathlib", "PosixPath"), ("pathlib", "WindowsPath"),
    ("pathlib._local", "PurePosixPath"), ("pathlib._local", "PosixPath"),
    ("pathlib._local", "PureWindowsPath"), ("pathlib._local", "WindowsPath"),
    ("pathlib._local", "Path"),
    ("datetime", "date"), ("datetime", "time"), ("datetime", "datetime"),
    ("datetime", "timedelta"), ("datetime", "timezone"),
    ("zoneinfo", "ZoneInfo"), ("zoneinfo", "ZoneInfo._unpickle"),
    ("time", "struct_time"), ("decimal", "Decimal"),
    ("fractions", "Fraction"), ("uuid", "UUID"),
    ("ipaddress", "IPv4Address"), ("ipaddress", "IPv6Address"),
    ("ipaddress", "IPv4Network"), ("ipaddress", "IPv6Network"),
    ("ipaddress", "IPv4Interface"), ("ipaddress", "IPv6Interface"),
}

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


def _builtin_exception(obj):
    return (isinstance(obj, type) and issubclass(obj, Exception)
            and obj.__module__ == "builtins")


class _View:
    """A file over a bytearray (a large frame, read in place): read()
    returns memoryview slices, which the C Unpickler takes as they are, so
    the frame is not copied into a BytesIO first."""

    __slots__ = ("_mv", "_pos")

    def __init__(self, data):
        self._mv = memoryview(data)
        self._pos = 0

    def read(self, n=-1):
        pos = self._pos
        end = len(self._mv) if n < 0 else min(pos + n, len(self._mv))
        self._pos = end
        return self._mv[pos:end]

    def readinto(self, buf):
        pos = self._pos
        n = min(len(buf), len(self._mv) - pos)
        buf[:n] = self._mv[pos:pos + n]
        self._pos = pos + n
        return n

    def readline(self):
        # only the text opcodes read lines, and prescan refuses them
        raise _garbled("a text opcode in the pickle stream")


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, mode, guard, exceptions):
        super().__init__(io.BytesIO(data) if isinstance(data, bytes)
                         else _View(data))
        self._mode = mode
        self._guard = guard
        self._exceptions = exceptions

    def find_class(self, module, name):
        module, name = str(module), str(name)
        if (module, name) in _VALUE_CLASSES:
            return _loaded(module, name)
        if self._exceptions:
            # fail-closed: builtin exception classes and our own only
            if module == "builtins":
                obj = _loaded(module, name)
                if _builtin_exception(obj):
                    return obj
            elif module == "pysandboxes.e" and "." not in name:
                obj = _loaded(module, name)
                if isinstance(obj, type) and issubclass(obj, Exception):
                    return obj
            raise _error(f"{module}.{name} is refused on the exception "
                         f"channel")
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


def _check_acyclic(root):
    """Data-only results are trees or DAGs: refuse a cycle (iterative, each
    object visited once, so shared references cannot blow up)."""
    import collections
    done, on_path = set(), set()
    stack = [(root, False)]
    kinds = _CONTAINERS + (collections.deque,)
    while stack:
        obj, leaving = stack.pop()
        oid = id(obj)
        if leaving:
            on_path.discard(oid)
            done.add(oid)
            continue
        if not isinstance(obj, kinds) or oid in done:
            continue
        if oid in on_path:
            raise _error("a cycle in the result is refused in data-only mode")
        on_path.add(oid)
        stack.append((obj, True))
        children = obj.items() if isinstance(obj, dict) else obj
        for child in children:
            if isinstance(child, tuple) and isinstance(obj, dict):
                stack.append((child[0], False))
                stack.append((child[1], False))
            else:
                stack.append((child, False))


def loads(data, mode=DATA_ONLY, guard=True, limits=None):
    """Decode a result stream from a worker under the rules of 7.6."""
    limits = limits or Limits()
    prescan(data, limits)
    try:
        value = _Unpickler(data, mode, guard, False).load()
    except pickle.UnpicklingError:
        raise
    except RecursionError:
        raise _error("the payload nests too deeply") from None
    except Exception as exc:
        raise _garbled(f"the payload could not be decoded: "
                       f"{type(exc).__name__}: {exc}") from None
    if mode == DATA_ONLY:
        _check_acyclic(value)
    return value


def load_exception(data, limits=None):
    """The rich form of a remote exception, or RestrictedUnpicklingError:
    only an Exception instance built from allowlisted classes passes."""
    limits = limits or Limits()
    prescan(data, limits)
    try:
        exc = _Unpickler(data, DATA_ONLY, True, True).load()
    except pickle.UnpicklingError:
        raise
    except Exception as err:
        raise _error(f"the exception could not be decoded: "
                     f"{type(err).__name__}: {err}") from None
    if not isinstance(exc, Exception):
        raise _error(f"the exception channel carried a "
                     f"{type(exc).__name__}, not an Exception")
    return exc


_MESSAGE_CLASSES = {}


def _message_str(self):
    return str(self.args[0]) if self.args else ""


def _with_message_str(cls, base):
    """cls, or a subclass of it whose str() and repr() give the message:
    the class's own __str__ may read attributes a rebuilt exception does not
    have (urllib.error.URLError reads .reason), and the caller's str(exc)
    must not raise. except cls: still catches it."""
    if cls.__str__ is base.__str__ and cls.__repr__ is base.__repr__:
        return cls
    sub = _MESSAGE_CLASSES.get(cls)
    if sub is None:
        def _repr(self):
            return f"{cls.__qualname__}({_message_str(self)!r})"
        try:
            sub = type(cls)(cls.__name__, (cls,), {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__str__": _message_str, "__repr__": _repr})
        except Exception:
            return None
        _MESSAGE_CLASSES[cls] = sub
    return sub


def from_descriptor(module, qualname, message, denials):
    """Rebuild an exception of the same class without its attributes and
    without running its __init__ or __new__ (7.6); None when the class is
    not an Exception subclass loaded in the parent."""
    mod = sys.modules.get(module) if isinstance(module, str) else None
    if mod is None or not isinstance(qualname, str):
        return None
    cls = mod
    for part in qualname.split("."):
        cls = getattr(cls, part, None)
        if cls is None:
            return None
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return None
    # the nearest builtin base allocates it: no __new__ of the class runs
    base = next(b for b in cls.__mro__ if b.__module__ == "builtins")
    cls = _with_message_str(cls, base)
    if cls is None:
        return None
    try:
        exc = base.__new__(cls)
        exc.args = (str(message),)
        if isinstance(exc, OSError):
            exc.strerror = str(message)
    except Exception:
        return None
    if denials:
        exc.__pysandboxes_denials__ = [str(d) for d in denials]
    return exc
