"""What every attack file shares: the providers, the probe script that runs
an attack inside the sandbox and reports what happened, and the judge that
names the layer that refused it.

An attack runs as a user would run it: build/python-sb on a script in a
fresh directory, with a .py-sandboxes written for the case. The script
catches whatever the attack raised and prints one line per probe, a Python
literal (label, kind, class, message, errno), using nothing but builtins,
so that it works under any python-import= rule (C2 has none at all).

The judge turns that line into an outcome (the table's vocabulary):
"refused by python" (a guard exception, class and message checked),
"refused by kernel (EACCES)" (an OSError that is not the guard's),
"refused by launcher (...)" (python-sb removed the thing before the
interpreter started), or "escaped". It records the outcome on the test
item before asserting, so that the report plugin (conftest.py) can print
what happened even when the assertion fails.
"""

import ast
import errno as errno_mod
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from pysbtest import (NOBODY, REPO, as_nobody, landlock_abi,  # noqa
                      pyenv_minor, sb_path, scaled)
DEBIAN_PYTHON = "/usr/bin/python3"

# subprocess: the Python layer alone; landlock: Landlock + seccomp under it.
# The /nobody columns run python-sb as uid 65534 with Debian's python3
# (pyenv lives under /root, which that uid cannot read).
# unshare, bwrap, firejail: the namespace providers (issue 6); firejail
# runs as root only: the unprivileged columns are uid 65534, which
# firejail refuses (docs/providers.md).
PROVIDERS = ["subprocess", "landlock", "subprocess/nobody",
             "landlock/nobody", "unshare", "unshare/nobody", "bwrap",
             "bwrap/nobody", "firejail"]
# qemu (issue 17): each run boots a virtual machine (seconds under TCG), so
# only the attacks marked qemu_column get these columns.
QEMU_COLUMNS = ["qemu", "qemu/nobody"]


ABI = landlock_abi()


def helper_path():
    """build/try-syscall, next to the python-sb under test."""
    for cand in (sb_path().parent / "try-syscall",
                 REPO / "build" / "try-syscall"):
        if cand.is_file():
            return cand
    pytest.fail("build/try-syscall is not built: run make first",
                pytrace=False)


def root_python():
    """The interpreter of the root columns: pyenv's 3.11 when present (the
    one the project is developed on), else Debian's."""
    pyenv = pathlib.Path(pyenv_minor("3.11"))
    return str(pyenv) if pyenv.exists() else DEBIAN_PYTHON


def chown_tree(root):
    """Give a case's tree to uid 65534 (for the /nobody columns)."""
    for dirpath, dirs, files in os.walk(root):
        os.lchown(dirpath, NOBODY, NOBODY)
        for name in dirs + files:
            os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)


# ---- the probe script ----

PRELUDE = '''\
def __report(label, fn):
    try:
        v = fn()
    except BaseException as e:
        m = str(e).splitlines()
        n = getattr(e, "errno", None)
        print(repr((label, "raised", type(e).__name__, m[0] if m else "",
                    n if type(n) is int else None)), flush=True)
    else:
        print(repr((label, "returned", "", repr(v)[:300], None)),
              flush=True)
'''


def script(probes):
    """A script that runs each probe (label -> body of a function) and
    reports it. A body is plain Python, indented by us."""
    out = [PRELUDE]
    for label, body in probes.items():
        lines = body.strip("\n").splitlines()
        indent = min(len(line) - len(line.lstrip())
                     for line in lines if line.strip())
        lines = [line[indent:] for line in lines]
        out.append(f"def __probe_{label}():\n" +
                   "".join(f"    {line}\n" for line in lines))
        out.append(f"__report({label!r}, __probe_{label})\n")
    return "\n".join(out)


class Obs:
    """What one probe did inside the sandbox."""

    def __init__(self, label, kind, exc, msg, err):
        self.label, self.kind, self.exc, self.msg = label, kind, exc, msg
        self.errno = errno_mod.errorcode.get(err) if err else None

    @property
    def escaped(self):
        return self.kind == "returned"

    def __repr__(self):
        if self.escaped:
            return f"{self.label}: returned {self.msg}"
        e = f" [{self.errno}]" if self.errno else ""
        return f"{self.label}: {self.exc}{e}: {self.msg}"


def parse(stdout):
    """{label: Obs} from the script's output; other lines are ignored."""
    found = {}
    for line in stdout.splitlines():
        if not line.startswith("("):
            continue
        try:
            t = ast.literal_eval(line)
        except (ValueError, SyntaxError):
            continue
        if isinstance(t, tuple) and len(t) == 5:
            found[t[0]] = Obs(*t)
    return found


# ---- the judge ----

# The eval guard's own exceptions (py-sandboxes(5), eval-*): a source
# refused before it runs, an evaluation whose budget ran out.
EVAL_EXCEPTIONS = ("EvalSyntaxRejected", "EvalInterrupted")


def is_guard(obs):
    return obs.kind == "raised" and (obs.exc.startswith("Rule") or
                                     obs.exc in EVAL_EXCEPTIONS)


class Judge:
    """Asserts the refusal and the layer, and records the outcome on the
    test item (user_properties "outcome") before asserting."""

    def __init__(self, node):
        self.node = node
        self.outcomes = []

    def _record(self, outcome, detail):
        self.outcomes.append(outcome)
        self.node.user_properties.append(("outcome", outcome))
        self.node.user_properties.append(("detail", detail))

    def observe(self, obs):
        """Record what obs shows, without asserting anything yet."""
        if obs.escaped:
            self._record("escaped", repr(obs))
        elif is_guard(obs):
            self._record("refused by python", repr(obs))
        elif obs.errno:
            self._record(f"refused by kernel ({obs.errno})", repr(obs))
        else:
            self._record(f"other: {obs.exc}", repr(obs))

    def python(self, obs, exc, message):
        """The guard refused: exception class exc and message exact (or
        one of a tuple of messages, or matching a compiled pattern)."""
        self.observe(obs)
        assert not obs.escaped, f"escaped: {obs!r}"
        assert obs.exc == exc, obs
        if hasattr(message, "fullmatch"):
            assert message.fullmatch(obs.msg), obs
        elif isinstance(message, tuple):
            assert obs.msg in message, obs
        else:
            assert obs.msg == message, obs

    def kernel(self, obs, err):
        """The kernel refused: an OSError with errno err that is not one of
        the guard's exceptions."""
        self.observe(obs)
        assert not obs.escaped, f"escaped: {obs!r}"
        assert not is_guard(obs), obs
        assert obs.errno == err, obs

    def structural(self, obs, exc, why):
        """The Python layer refused by construction: what the attack
        reaches for does not exist (no back-reference, no closure...).
        exc is the ordinary exception the attempt gets."""
        if obs.escaped:
            self._record("escaped", repr(obs))
        else:
            self._record("refused by python (structural)",
                         f"{why}: {obs!r}")
        assert not obs.escaped, f"escaped: {obs!r}"
        assert obs.exc == exc, obs

    def launcher(self, obs, exc, message, why):
        """python-sb removed the target before the interpreter started
        (the environment filter): exc and message exact."""
        if obs.escaped:
            self._record("escaped", repr(obs))
        else:
            self._record("refused by launcher", f"{why}: {obs!r}")
        assert not obs.escaped, f"escaped: {obs!r}"
        assert (obs.exc, obs.msg) == (exc, message), obs

    def native(self, answer, err):
        """try-syscall's answer ("ok" or "errno NAME") is err. Under the
        namespace providers any errno is the kernel's refusal (the path
        does not exist, the mount is read-only, the network is empty)."""
        hides = any(f"[{p}" in self.node.name or f"-{p}" in self.node.name
                    for p in ("unshare", "bwrap", "firejail", "qemu"))
        if hides and answer.startswith("errno "):
            # namespaces refuse with their own errno: a path that does not
            # exist (ENOENT), a read-only mount (EROFS), an empty network
            # (ECONNREFUSED)...: the kernel refused; record which
            err = answer[6:]
        if answer == "ok":
            self._record("escaped", answer)
        elif answer.startswith("errno "):
            self._record(f"refused by kernel ({answer[6:]})", answer)
        else:
            self._record(f"other: {answer}", answer)
        assert answer != "ok", "escaped: the system call succeeded"
        assert answer == f"errno {err}", answer


def documented_escape(providers, reason):
    """The attack escapes under these provider columns, and
    docs/weaknesses.md says so (reason: the entry): the conftest turns it
    into xfail(strict=True) for those columns only."""
    return pytest.mark.documented_escape(tuple(providers), reason)


def qemu_column():
    """Run this attack in the qemu columns too."""
    return pytest.mark.qemu_column


def attack(aid, title):
    """Mark a test as attack aid of attacks.md (title: one line)."""
    return pytest.mark.attack(aid, title)


def api_denied(name, category):
    return f"{name}() is denied by the API guard (category: {category})."


API_ERR = "RuleApiPermissionError"
