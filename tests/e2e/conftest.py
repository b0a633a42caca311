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
import sys
import tempfile

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from pysbtest import (AWAIT_SIGNAL, NOBODY, REPO, as_nobody,  # noqa
                      terminal_signals,
                      interpreter_paths, interpreters, landlock_abi, pyenv_minor, pyenv_newest,
                      pyenv_oldest, pyenv_python, pyenv_versions,
                      run_provider, sb_path,
                      scaled, slowness)


def pytest_configure(config):
    terminal_signals()
    config.addinivalue_line(
        "markers",
        "unprivileged: run python-sb as uid 65534 "
        "(through setpriv when the suite runs as root)",
    )


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
        # the limit is an idle machine's, scaled to this one's load
        return subprocess.run(argv, cwd=str(cwd or tmp_cwd), env=env,
                              capture_output=True, text=True,
                              timeout=scaled(timeout), **kwargs)

    return run


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
