"""Fixtures and the report plugin of the adversarial suite (tests/attacks).

Every test is one attack of ../shared/spec/attacks.md (A1, D22...), or a
native-code escape (N1...), marked @attack(id, title) and run once per
provider column (harness.PROVIDERS): the fixture ``case`` builds a fresh
directory, writes the rule file with the column's os-sandbox= and runs
build/python-sb there, as root or as uid 65534. Nothing here imports
project code: the sandbox is judged from outside, as a user sees it.

The plugin records, per test, (attack id, title, provider, outcome) and,
when $PYSB_ATTACKS_JSON names a file, writes the list there as JSON at the
end of the session; scripts/attacks prints it as a table. The outcome is
what the judge (harness.Judge) recorded, corrected by the test's fate: a
passing test is a refusal by the layer recorded, an xfail is an escape
that docs/weaknesses.md documents, a failing test is an escape (or a
refusal by the wrong layer, shown as "failed: ..."), a skip keeps its
reason.
"""

import json
import os
import subprocess
import tempfile
import threading
import shutil

import pytest

from harness import (ABI, DEBIAN_PYTHON, NOBODY, PROVIDERS, QEMU_COLUMNS,
                     Judge, as_nobody, chown_tree, helper_path, is_guard,
                     parse, root_python, sb_path, scaled, script)
from pysbtest import qemu_missing, terminal_signals

JSON_ENV = "PYSB_ATTACKS_JSON"
# Every run of the suite writes python-sb's denial log (log-file=, kept
# outside the case's tree, which may be exposed read-write) and checks it
# against what the probes saw (Case.check_log). PYSB_ATTACKS_LOG=0 runs
# the attacks without a log.
WITH_LOG = os.environ.get("PYSB_ATTACKS_LOG", "1") != "0"
LOG_KEYS = ("time", "pid", "layer", "kind", "target", "rule", "add", "by")


def pytest_configure(config):
    terminal_signals()
    config.addinivalue_line(
        "markers", "attack(id, title): the attack of attacks.md this test "
        "performs")
    config.addinivalue_line(
        "markers", "documented_escape(providers, reason): the attack "
        "escapes under these columns, as docs/weaknesses.md documents")
    config.addinivalue_line(
        "markers", "qemu_column: the attack runs in the qemu columns too")
    config._pysb_attacks = {}


def pytest_collection_modifyitems(config, items):
    # one id, one attack: the report and the restricted-environment
    # comparison key outcomes by (id, column), so a reused id would merge
    # two attacks into one row
    owner = {}
    for item in items:
        aid, _ = _attack_of(item)
        func = (item.fspath.basename, item.originalname)
        if aid is not None and owner.setdefault(aid, func) != func:
            raise pytest.UsageError(f"attack id {aid} is used by both "
                                    f"{owner[aid]} and {func}")
    for item in items:
        cs = getattr(item, "callspec", None)
        provider = cs.params.get("provider") if cs else None
        for m in item.iter_markers("documented_escape"):
            if provider in m.args[0]:
                item.add_marker(pytest.mark.xfail(strict=True,
                                                  reason=m.args[1]))


def pytest_generate_tests(metafunc):
    if "provider" in metafunc.fixturenames:
        cols = PROVIDERS + (QEMU_COLUMNS if metafunc.definition
                            .get_closest_marker("qemu_column") else [])
        metafunc.parametrize("provider", cols, ids=cols)


# ---- fixtures ----

@pytest.fixture(scope="session")
def sb():
    path = sb_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is not built: run make first", pytrace=False)
    return str(path)


@pytest.fixture
def judge(request):
    return Judge(request.node)



class Case:
    """One attack in one provider column: a fresh directory (``root``,
    canonical) made the cwd, and the means to run python-sb there."""

    def __init__(self, sb, provider, root, logdir=None):
        self.sb = sb
        self.provider = provider
        self.os_sandbox, _, who = provider.partition("/")
        self.nobody = who == "nobody"
        self.python = DEBIAN_PYTHON if self.nobody else root_python()
        self.root = root
        self.logdir = logdir
        self.records = []

    def path(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def mkdir(self, *rels):
        for rel in rels:
            os.makedirs(self.path(rel), exist_ok=True)

    def _run(self, rules, argv, timeout=60, env=None):
        # the provider goes last, so that the test's rules keep their line
        # numbers (the guard's messages cite .py-sandboxes(N))
        body = rules.strip("\n")
        log = self._log_path()
        if log and os.path.exists(log):
            os.unlink(log)
        rf = self.write(".py-sandboxes", (body + "\n" if body else "") +
                        self.tail())
        # the rule file's mode is the harness's, not the umask a test set
        # for the run (python-sb refuses a rule file others may write)
        os.chmod(rf, 0o644)
        argv = [self.sb] + [str(a) for a in argv]
        if self.nobody and os.geteuid() == 0:
            chown_tree(self.root)
            argv = as_nobody(argv)
        # a limit for an idle machine, scaled to this one's load; a boot
        # under TCG takes three times as long
        timeout = scaled(timeout * (3 if self.os_sandbox == "qemu" else 1))
        r = subprocess.run(argv, cwd=self.root, capture_output=True,
                           text=True, timeout=timeout, env=env,
                           stdin=subprocess.DEVNULL)
        self.records = self._read_log(log) if log else []
        return r

    def _log_path(self):
        # none takes no log (it refuses nothing); qemu's is written on
        # the host from the guest's records (weaknesses.md 91)
        if self.logdir is None or self.os_sandbox == "none":
            return ""
        return os.path.join(self.logdir, "denials.jsonl")

    def tail(self):
        """What every rule file of the case ends with: the column's
        provider, then the denial log."""
        log = self._log_path()
        return (f"os-sandbox={self.os_sandbox}\n" +
                (f"log-file={log}\n" if log else ""))

    @staticmethod
    def _read_log(log):
        """The run's denial log: every line one JSON record with the
        documented keys (a torn or malformed line fails the attack)."""
        if not os.path.exists(log):
            return []
        records = []
        with open(log, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                assert line.endswith("\n"), f"{log}:{n}: torn record {line!r}"
                rec = json.loads(line)
                missing = [k for k in LOG_KEYS if k not in rec]
                assert not missing, f"{log}:{n}: no {missing}: {rec}"
                records.append(rec)
        return records

    def check_log(self, out):
        """Every refusal of the Python layer that a probe met is in the
        denial log, with the rule to add when no rule decided."""
        if not self._log_path():
            return
        guard = [o for o in out.values() if is_guard(o)]
        logged = [r for r in self.records if r["layer"] == "python"]
        assert len(logged) >= len(guard), (
            f"{len(guard)} refusals of the Python layer, {len(logged)} in "
            f"the denial log\nrefused: {guard}\nlog: {self.records}")
        for rec in self.records:
            # the target is what was refused, not the exception's text
            assert not rec["target"].startswith("Guard "), rec
            if rec["rule"] == "no rule" and rec["kind"] != "log-full":
                assert rec["add"], f"no rule to add: {rec}"

    def run(self, rules, probes, args=(), env=None):
        """Run the probes (label -> function body) under rules; returns
        {label: harness.Obs}, one per probe (a missing one fails)."""
        self.write("attack.py", script(probes))
        r = self._run(rules, [f"--python={self.python}", "attack.py",
                              *args], env=env)
        out = parse(r.stdout)
        missing = [p for p in probes if p not in out]
        assert not missing and r.returncode == 0, (
            f"the attack script did not report {missing} (status "
            f"{r.returncode})\nstdout: {r.stdout}\nstderr: {r.stderr}")
        self.check_log(out)
        return out

    def native(self, rules, args, env=None):
        """Exec build/try-syscall from inside the sandbox (py-sandbox=false
        is the test's to write) and return its answer ("ok" or "errno
        NAME"). "{ppid}" in args becomes the parent's pid, inside. env:
        python-sb's environment, if not the test's."""
        self.mkdir("bin")
        helper = self.path("bin/try-syscall")
        if not os.path.exists(helper):
            shutil.copy2(helper_path(), helper)
        argv = [helper, *args]
        code = ("import os\n"
                f"argv = [a.replace('{{ppid}}', str(os.getppid())) "
                f"for a in {argv!r}]\n"
                "os.execv(argv[0], argv)\n")
        rules = f"expose-ro={self.root}/bin\n" + rules
        r = self._run(rules, [f"--python={self.python}", "-c", code],
                      env=env)
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        lines = r.stdout.strip().splitlines()
        assert lines, r.stderr
        self._check_native_log(args, lines[-1])
        return lines[-1]

    def _check_native_log(self, args, answer):
        """Under the kernel providers (landlock, and the namespace ones,
        which run Landlock and the supervisor inside), a native refusal is
        in the denial log: an
        EPERM as the filter's or the supervisor's record, an EACCES on a
        path as Landlock's (or the supervisor's, for a named Unix socket),
        of that path or of the directory that holds it (making or removing
        an entry); a signal Landlock's scope refuses as Landlock's (an
        EPERM too). /proc paths are not recorded (weaknesses.md 77)."""
        if self.os_sandbox in ("subprocess", "none") or \
                not self._log_path():
            return
        recs = self._read_log(self._log_path())
        if answer == "errno EPERM":
            assert any(r["layer"] in ("seccomp", "supervisor") or
                       r["kind"] == "signal" for r in recs), (
                f"{args}: EPERM, and no record of it in the denial log\n"
                f"log: {recs}")
        paths = [a for a in args if a.startswith("/") and
                 not a.startswith("/proc/")]
        if answer == "errno EACCES" and paths:
            near = set()
            for a in paths:
                real = os.path.realpath(a)
                near |= {real, os.path.dirname(real)}
            # Landlock's, or the supervisor's (a named Unix socket)
            assert any(r["layer"] in ("landlock", "supervisor") and
                       r["target"] in near for r in recs), (
                f"{args}: EACCES, and no record of {paths} in the denial "
                f"log\nlog: {recs}")


@pytest.fixture
def case(sb, provider):
    os_sandbox, _, who = provider.partition("/")
    if os_sandbox == "landlock" and ABI < 4:
        pytest.skip(f"this kernel's Landlock ABI is {ABI}, below 4")
    if os_sandbox in ("bwrap", "firejail") and not shutil.which(os_sandbox):
        pytest.skip(f"{os_sandbox} is not installed")
    if os_sandbox == "qemu" and qemu_missing():
        pytest.skip(qemu_missing())
    if who == "nobody":
        if os.geteuid() != 0:
            pytest.skip("the suite does not run as root: the root columns "
                        "are unprivileged already")
        if not os.access(DEBIAN_PYTHON, os.X_OK):
            pytest.skip(f"no {DEBIAN_PYTHON} for uid {NOBODY}")
        probe = subprocess.run(as_nobody(["test", "-x", sb]),
                               capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"uid {NOBODY} cannot execute {sb}")
    root = os.path.realpath(tempfile.mkdtemp(prefix="pysb-attack-"))
    logdir = None
    if WITH_LOG:
        logdir = os.path.realpath(tempfile.mkdtemp(prefix="pysb-attack-log-"))
        if who == "nobody" and os.geteuid() == 0:
            os.chown(logdir, NOBODY, NOBODY)
    old = os.getcwd()
    os.chdir(root)
    try:
        yield Case(sb, provider, root, logdir)
    finally:
        os.chdir(old)
        shutil.rmtree(root, ignore_errors=True)
        if logdir:
            shutil.rmtree(logdir, ignore_errors=True)


# ---- the report plugin ----

def _attack_of(item):
    m = item.get_closest_marker("attack")
    if m is None:
        return None, None
    return m.args[0], m.args[1]


def _observed(item):
    return [v for k, v in item.user_properties if k == "outcome"]


def _details(item):
    return [v for k, v in item.user_properties if k == "detail"]


def _merge(outcomes):
    seen = []
    for o in outcomes:
        if o not in seen:
            seen.append(o)
    return " + ".join(seen)


def _short(report):
    text = str(report.longrepr) if report.longrepr else ""
    for line in text.splitlines():
        if line.startswith("E "):
            return line[1:].strip()[:160]
    return text.strip().splitlines()[-1][:160] if text.strip() else ""


def _outcome(item, report):
    observed = _observed(item)
    if report.skipped and hasattr(report, "wasxfail"):
        if "escaped" in observed:
            return "escaped (documented)"
        return "failed: xfail without an escape: " + (
            _merge(observed) or _short(report))
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) \
            else str(report.longrepr)
        return "skipped: " + reason.replace("Skipped: ", "", 1)
    if report.passed:
        if hasattr(report, "wasxfail"):  # non-strict XPASS: none here
            return "failed: xpass"
        return _merge(observed) or "failed: nothing observed"
    if "[XPASS(strict)]" in str(report.longrepr):
        return "failed: refused, but marked as a documented escape " \
            "(XPASS strict): " + _merge(observed)
    if "escaped" in observed:
        return "escaped"
    return "failed: " + (_short(report) or _merge(observed))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    result = yield
    report = result.get_result()
    aid, title = _attack_of(item)
    if aid is None:
        return
    if report.when == "call" or (report.when == "setup" and
                                 not report.passed):
        provider = getattr(item, "callspec", None)
        provider = provider.params.get("provider") if provider else None
        item.config._pysb_attacks[item.nodeid] = {
            "id": aid,
            "title": title,
            "provider": provider or "-",
            "outcome": _outcome(item, report),
            "detail": _details(item),
            "test": item.nodeid,
            "reason": getattr(report, "wasxfail", ""),
        }


def pytest_sessionfinish(session):
    path = os.environ.get(JSON_ENV)
    if not path:
        return
    with open(path, "w") as f:
        json.dump(list(session.config._pysb_attacks.values()), f, indent=1)


# ---- loopback servers for the network attacks ----

def _pong_one(c):
    # A generous wait: the client is a sandboxed program on a shared,
    # loaded machine; a short one here closed the connection under it and
    # its recv read b'' (test_E1[firejail] in CI, 2026-12-03).
    try:
        c.settimeout(scaled(60))
        c.recv(4)
        c.sendall(b"pong")
    except OSError:
        pass
    finally:
        c.close()


def _pong(listener):
    # One thread a connection: a probe that connects and says nothing
    # must not hold up the next test's.
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_pong_one, args=(c,), daemon=True).start()


@pytest.fixture(scope="session")
def tcp_port():
    """The port of a pong server on 127.0.0.1 (and, when the machine has
    IPv6, the same server answers ::ffff:127.0.0.1)."""
    import socket
    import threading
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    threading.Thread(target=_pong, args=(s,), daemon=True).start()
    yield s.getsockname()[1]
    s.close()
