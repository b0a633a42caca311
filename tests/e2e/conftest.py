"""Fixtures for the end-to-end tests.

Every test runs the built launcher as a subprocess, the way a user would:
nothing here imports project code or patches it. The binary is $PYSB_BIN,
else build/python-sb of this checkout; a missing binary is an error, not a
skip, so that a broken build cannot pass as green. Tests marked
``unprivileged`` run it as uid/gid 65534 (through setpriv when the suite
runs as root), since the sandbox must work without privileges.

A test that cannot run must skip with its reason; put "[core]" in the
reason when it is a core feature, so that CI (PYSB_STRICT_SKIPS=1, read by
scripts/check) turns the skip into a failure.
"""

import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
NOBODY = 65534


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "unprivileged: run python-sb as uid 65534 "
        "(through setpriv when the suite runs as root)",
    )


def sb_path():
    """The launcher under test: $PYSB_BIN, else build/python-sb."""
    env = os.environ.get("PYSB_BIN")
    return pathlib.Path(env).resolve() if env else REPO / "build" / "python-sb"


def as_nobody(argv):
    """Prefix argv so that it runs as uid/gid 65534 with no supplementary
    groups. Only root can switch; other users already are unprivileged."""
    if os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux): cannot drop to uid "
                    "65534 [core]")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", "--"] + list(argv)


@pytest.fixture(scope="session")
def sb():
    """Path of the python-sb binary (str)."""
    path = sb_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is not built: run make first", pytrace=False)
    return str(path)


def _unprivileged(request):
    return request.node.get_closest_marker("unprivileged") is not None


@pytest.fixture
def tmp_cwd(request):
    """A fresh, empty working directory, made the test's own cwd too.

    Outside the repository so that no .py-sandboxes of the checkout is
    picked up; owned by uid 65534 for an ``unprivileged`` test run as
    root, so that it can write there."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="pysb-e2e-"))
    if _unprivileged(request) and os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    old = os.getcwd()
    os.chdir(path)
    yield path
    os.chdir(old)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def run_sb(sb, tmp_cwd, request):
    """run_sb(args, cwd=None, env=None, input=None, timeout=60,
    unprivileged=None) -> CompletedProcess (text, stdout/stderr captured).

    cwd defaults to tmp_cwd; env replaces the environment when given
    (subprocess semantics: pass dict(os.environ, X="1") to add to it);
    stdin is /dev/null unless input is given. unprivileged defaults to the
    test's ``unprivileged`` marker."""
    marked = _unprivileged(request)

    def run(args, cwd=None, env=None, input=None, timeout=60,
            unprivileged=None):
        argv = [sb] + [str(a) for a in args]
        if marked if unprivileged is None else unprivileged:
            if os.geteuid() == 0:
                probe = subprocess.run(as_nobody(["test", "-x", sb]),
                                       capture_output=True)
                if probe.returncode != 0:
                    pytest.skip(f"uid {NOBODY} cannot execute {sb} "
                                "(a parent directory is not searchable)")
            argv = as_nobody(argv)
        kwargs = {}
        if input is None:
            kwargs["stdin"] = subprocess.DEVNULL
        else:
            kwargs["input"] = input
        return subprocess.run(argv, cwd=str(cwd or tmp_cwd), env=env,
                              capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    return run


# ---- time limits that hold on a loaded machine ----

# Seconds the probe below takes on an idle core of the development machine
# (2 cores, 2026). A limit in a test is its idle figure times slowness().
_PROBE_IDLE_SECONDS = 0.05


def _probe_seconds():
    t0 = time.perf_counter()
    n = 0
    for i in range(400000):
        n += i & 7
    return time.perf_counter() - t0


def slowness():
    """How many times slower than idle this machine runs now (>= 1): the
    worst of three short CPU probes and of the load average per core, so
    that a loaded machine gives larger time limits (a slow pass, never a
    false failure). PYSB_SLOWNESS overrides it."""
    env = os.environ.get("PYSB_SLOWNESS")
    if env:
        return max(1.0, float(env))
    worst = max(_probe_seconds() for _ in range(3))
    # a short probe can catch a quiet moment: the run queue per core over
    # the last minute says how shared the cores are for a longer test
    try:
        queue = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        queue = 1.0
    return max(1.0, worst / _PROBE_IDLE_SECONDS, queue)


def scaled(seconds):
    """A time limit of `seconds` on an idle machine, scaled to this one's
    current load (at least doubled when another run shares the cores)."""
    return seconds * slowness()


# ---- the interpreters a core case runs under ----

def _pyenv_root():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    return pathlib.Path(root)


def _version_key(name):
    return tuple(int(p) for p in name.split("."))


def pyenv_versions():
    """The pyenv CPython versions >= 3.9 installed here ("3.9.18", ...),
    oldest first, discovered from $PYENV_ROOT/versions (no list of patch
    levels to keep up to date)."""
    base = _pyenv_root() / "versions"
    found = []
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            continue        # pypy, miniconda, 3.13t, virtualenvs...
        if _version_key(name) < (3, 9, 0):
            continue
        if os.access(base / name / "bin" / "python3", os.X_OK):
            found.append(name)
    return sorted(found, key=_version_key)


def pyenv_python(version):
    """The python3 of one of pyenv_versions() (a str path)."""
    return str(_pyenv_root() / "versions" / version / "bin" / "python3")


def pyenv_minor(minor):
    """The python3 of pyenv's newest CPython `minor` ("3.11"), or a path
    that does not exist (the caller's existence check then skips)."""
    found = [v for v in pyenv_versions() if v.startswith(minor + ".")]
    if not found:
        return str(_pyenv_root() / "versions" / f"{minor}-absent" / "bin" /
                   "python3")
    return pyenv_python(found[-1])


def pyenv_oldest():
    """pyenv's oldest CPython >= 3.9 (a path; absent when pyenv is)."""
    v = pyenv_versions()
    return pyenv_python(v[0]) if v else pyenv_minor("3.9")


def pyenv_newest():
    """pyenv's newest CPython (a path; absent when pyenv is)."""
    v = pyenv_versions()
    return pyenv_python(v[-1]) if v else pyenv_minor("3.13")


def interpreters():
    """(id, path) of every CPython >= 3.9 this machine has: pyenv's
    versions and Debian's /usr/bin/python3. In CI (PYSB_STRICT_SKIPS=1)
    fewer than two is an error: the matrix would prove nothing."""
    found = [(f"pyenv-{v}", _pyenv_root() / "versions" / v / "bin" /
              "python3") for v in pyenv_versions()]
    debian = pathlib.Path("/usr/bin/python3")
    if os.access(debian, os.X_OK):
        found.append(("debian", debian))
    if len(found) < 2 and os.environ.get("PYSB_STRICT_SKIPS") == "1":
        raise RuntimeError(f"only {len(found)} CPython >= 3.9 found "
                           f"(pyenv root {_pyenv_root()}): the "
                           "multi-interpreter matrix needs two [core]")
    return found


def interpreter_paths():
    """The paths of interpreters(), Debian's first when present."""
    found = [str(path) for _, path in interpreters()]
    found.sort(key=lambda p: p != "/usr/bin/python3")
    return found


@pytest.fixture(params=interpreters(), ids=lambda p: p[0])
def python_exe(request):
    """The interpreter to pass as --python=; a core case runs once per
    interpreter present."""
    name, path = request.param
    return str(path)


@pytest.fixture
def sandboxed(run_sb, tmp_cwd, python_exe):
    """sandboxed(rules, code, args=()) writes .py-sandboxes and script.py in
    tmp_cwd and runs `python-sb --python=<each interpreter> script.py`."""
    def run(rules, code, args=(), **kw):
        (tmp_cwd / ".py-sandboxes").write_text(rules)
        (tmp_cwd / "script.py").write_text(code)
        return run_sb([f"--python={python_exe}", "script.py", *args], **kw)
    return run
