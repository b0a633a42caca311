"""Group A of attacks.md: run a process or native code from Python. The
Python layer refuses every one, under every provider, with the API guard's
exception and the category that denied it (process-exec is denied whatever
python-import= says)."""

import os

from harness import API_ERR, api_denied, attack

ALL = "python-import=*\n"
MOD_ERR = "RuleModuleNotFoundError"
# ctypes hands out raw memory by itself: importing it is the native grant
NATIVE_IMPORT = ("Module named 'ctypes' is native code with raw memory "
                 "access: it needs the rule python-api=ALLOW:native, a "
                 "python-import= rule is not enough")


@attack("A1", "Shell out through os (os.system, os.popen)")
def test_A1(case, judge):
    out = case.run(ALL, {
        "system": "import os\nos.system('id')",
        "popen": "import os\nos.popen('id').read()",
    })
    judge.python(out["system"], API_ERR,
                 api_denied("os.system", "process-exec"))
    judge.python(out["popen"], API_ERR,
                 api_denied("os.popen", "process-exec"))


@attack("A2", "Shell out through the C twin (posix.system)")
def test_A2(case, judge):
    out = case.run(ALL, {"posix": "import posix\nposix.system('id')"})
    judge.python(out["posix"], API_ERR,
                 api_denied("posix.system", "process-exec"))


@attack("A3", "exec/spawn/fork family (execv, posix_spawn, fork, pty)")
def test_A3(case, judge):
    out = case.run(ALL, {
        "execv": "import os\nos.execv('/bin/sh', ['sh', '-c', 'id'])",
        "spawn": "import os\nos.posix_spawn('/bin/sh', ['sh'], {})",
        "fork": "import os\nos.fork()",
        "pty": "import pty\npty.spawn('/bin/sh')",
    })
    judge.python(out["execv"], API_ERR,
                 api_denied("os.execv", "process-exec"))
    judge.python(out["spawn"], API_ERR,
                 api_denied("os.posix_spawn", "process-exec"))
    judge.python(out["fork"], API_ERR, api_denied("os.fork", "process-exec"))
    judge.python(out["pty"], API_ERR, api_denied("pty.spawn", "process-exec"))


@attack("A4", "subprocess high level (run, Popen, check_output)")
def test_A4(case, judge):
    out = case.run(ALL, {
        "run": "import subprocess\nsubprocess.run(['id'])",
        "popen": "import subprocess\nsubprocess.Popen(['id'])",
        "check_output": "import subprocess\nsubprocess.check_output('id')",
    })
    judge.python(out["run"], API_ERR,
                 api_denied("subprocess.run", "process-exec"))
    judge.python(out["popen"], API_ERR,
                 api_denied("subprocess.Popen", "process-exec"))
    judge.python(out["check_output"], API_ERR,
                 api_denied("subprocess.check_output", "process-exec"))


@attack("A6", "multiprocessing, and a Process of a 'fork' context")
def test_A6(case, judge):
    out = case.run(ALL, {
        "ctx": """
            import multiprocessing
            multiprocessing.get_context('fork').Process(target=print).start()
            """,
        "plain": """
            import multiprocessing
            multiprocessing.Process(target=print).start()
            """,
    })
    judge.python(out["ctx"], API_ERR, api_denied(
        "multiprocessing.process.BaseProcess.start", "process-exec"))
    judge.python(out["plain"], API_ERR, api_denied(
        "multiprocessing.Process.start", "process-exec"))


@attack("A7", "Sub-interpreters (_xxsubinterpreters / _interpreters)")
def test_A7(case, judge):
    out = case.run(ALL, {"create": """
        try:
            import _interpreters as m
        except ImportError:
            import _xxsubinterpreters as m
        return m.create()
        """})
    judge.python(out["create"], API_ERR, (
        api_denied("_interpreters.create", "process-exec"),
        api_denied("_xxsubinterpreters.create", "process-exec")))


@attack("A8", "Load a native library (ctypes.CDLL)")
def test_A8(case, judge):
    out = case.run(ALL, {"cdll": "import ctypes\nctypes.CDLL('libc.so.6')"})
    judge.python(out["cdll"], MOD_ERR, NATIVE_IMPORT)
    # a grant of one native entry opens the import, not the others
    out = case.run(ALL + "python-api=ALLOW:ctypes.memset\n", {
        "cdll": "import ctypes\nctypes.CDLL('libc.so.6')"})
    judge.python(out["cdll"], API_ERR, api_denied("ctypes.CDLL", "native"))


@attack("A9", "ctypes.pythonapi, the prebuilt PyDLL")
def test_A9(case, judge):
    out = case.run(ALL, {
        "pythonapi": "import ctypes\nctypes.pythonapi.Py_GetVersion()"})
    judge.python(out["pythonapi"], MOD_ERR, NATIVE_IMPORT)


@attack("A10", "ctypes memory poke (string_at, memmove, cast)")
def test_A10(case, judge):
    out = case.run(ALL, {
        "string_at": "import ctypes\nctypes.string_at(id(1), 8)",
        "memmove": """
            import ctypes
            b = ctypes.create_string_buffer(8)
            ctypes.memmove(b, b'x', 1)
            """,
    })
    judge.python(out["string_at"], MOD_ERR, NATIVE_IMPORT)
    judge.python(out["memmove"], MOD_ERR, NATIVE_IMPORT)


@attack("A12", "Process control (kill, pidfd, affinity, setsid, alarm, setrlimit)")
def test_A12(case, judge):
    out = case.run(ALL, {
        "kill": "import os\nos.kill(os.getppid(), 0)",
        "pidfd": "import os, signal\n"
                 "signal.pidfd_send_signal(os.pidfd_open(os.getppid()), 0)",
        "affinity": "import os\n"
                    "os.sched_setaffinity(os.getppid(),"
                    " os.sched_getaffinity(0))",
        "setsid": "import os\nos.setsid()",
        "alarm": "import signal\nsignal.alarm(100)",
        "rlimit": """
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               resource.getrlimit(resource.RLIMIT_NOFILE))
            """,
    })
    judge.python(out["kill"], API_ERR,
                 api_denied("os.kill", "process-control"))
    judge.python(out["pidfd"], API_ERR,
                 api_denied("signal.pidfd_send_signal", "process-control"))
    judge.python(out["affinity"], API_ERR,
                 api_denied("os.sched_setaffinity", "process-control"))
    judge.python(out["setsid"], API_ERR,
                 api_denied("os.setsid", "process-control"))
    judge.python(out["alarm"], API_ERR,
                 api_denied("signal.alarm", "process-control"))
    judge.python(out["rlimit"], API_ERR,
                 api_denied("resource.setrlimit", "process-control"))


@attack("A15", "Change identity (setuid, setgroups, umask, unshare)")
def test_A15(case, judge):
    out = case.run(ALL, {
        "setuid": "import os\nos.setuid(os.getuid())",
        "setgroups": "import os\nos.setgroups([])",
        "umask": "import os\nos.umask(0)",
    })
    judge.python(out["setuid"], API_ERR,
                 api_denied("os.setuid", "privileges"))
    judge.python(out["setgroups"], API_ERR,
                 api_denied("os.setgroups", "privileges"))
    judge.python(out["umask"], API_ERR, api_denied("os.umask", "privileges"))


@attack("A17", "Threads (threading.Thread.start, _thread)")
def test_A17(case, judge):
    out = case.run(ALL, {
        "thread": "import threading\nthreading.Thread(target=print).start()",
        "_thread": "import _thread\n_thread.start_new_thread(print, ())",
    })
    judge.python(out["thread"], API_ERR,
                 api_denied("threading.Thread.start", "threads"))
    judge.python(out["_thread"], API_ERR,
                 api_denied("_thread.start_new_thread", "threads"))


@attack("A20", "Root's capabilities under the Python layer: a device node "
        "made in an exposed tree, a file given to another user")
def test_A20(case, judge):
    """Under os-sandbox=subprocess python-sb execs the interpreter as it
    was started: run as root, the program held every capability. It made
    a character device (1, 5: /dev/zero; (8, 0) would be the host's
    disk) in its expose-rw= tree and read it, and chowned a file there to
    another user; sethostname and clock_settime (no rule names them)
    changed the host. Evidence from outside: what is left in rw/ (no
    device node, the owner unchanged). As uid 65534 and under the kernel
    providers the kernel refused already."""
    case.mkdir("rw")
    case.write("rw/mine", "x")
    out = case.run("python-import=*\nexpose-rw=./rw\n", {
        "mknod": "import os, stat\n"
                 "os.mknod('rw/zero', stat.S_IFCHR | 0o600, "
                 "os.makedev(1, 5))\n"
                 "return open('rw/zero', 'rb').read(4)",
        "chown": "import os\nos.chown('rw/mine', 12345, 12345)",
    })
    judge.kernel(out["mknod"], "EPERM")
    judge.kernel(out["chown"], "EPERM")
    assert not os.path.exists(case.path("rw/zero"))
    assert os.stat(case.path("rw/mine")).st_uid != 12345
