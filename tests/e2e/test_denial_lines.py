"""The line each refusal prints: the seed's `Pysandboxes` logger.

Every refusal of the Python layer also goes, at ERROR, to the `Pysandboxes`
logger: with no logging configuration the bare message appears on stderr
(what logging's last-resort handler prints), before the exception; once the
program has configured logging, its configuration decides (a format, a
level that silences it). `log-stderr=off` silences it from the rule file.
A learning run refuses nothing and prints no such line. Each case runs as
root and as uid 65534, under subprocess and landlock.
"""

import os

import pytest

from conftest import NOBODY, landlock_abi

ABI = landlock_abi()
PROVIDERS = ["subprocess",
             pytest.param("landlock", marks=pytest.mark.skipif(
                 ABI < 1, reason="this kernel has no Landlock [core]"))]
SOCKET_IMPORTS = ("os,socket,_socket,selectors,collections,math,select,enum,"
                  "array,errno,types,functools,_functools,_collections,"
                  "itertools,keyword,operator,_operator,reprlib,heapq,"
                  "_heapq")

ATTEMPTS = """
import os, socket
def attempt(f):
    try:
        f()
    except Exception as e:
        print(type(e).__name__, flush=True)
attempt(lambda: open("/etc/hostname").read())
attempt(lambda: __import__("json"))
attempt(lambda: os.system("true"))
attempt(lambda: socket.create_connection(("127.0.0.1", 9), timeout=5))
"""

LINES = [
    "Access to '/etc/hostname' must be accepted by a rule.",
    "Module named 'json' is not allowed by a rule",
    "os.system() is denied by the API guard (category: process-exec).",
    "Connection to '[127.0.0.1]:9' DENIED by implicit default policy.",
]


@pytest.fixture(params=["root", "nobody"])
def user(request, tmp_cwd):
    if request.param == "nobody":
        if os.geteuid() != 0:
            pytest.skip("the suite runs unprivileged already")
        os.chown(tmp_cwd, NOBODY, NOBODY)
    return request.param


@pytest.fixture
def run(run_sb, tmp_cwd, user):
    def go(rules, code, extra=()):
        if rules is not None:
            (tmp_cwd / ".py-sandboxes").write_text("\n".join(rules) + "\n")
        (tmp_cwd / "script.py").write_text(code)
        return run_sb(["--python=/usr/bin/python3", *extra, "script.py"],
                      unprivileged=(user == "nobody"))
    return go


def base_rules(provider):
    # a net= rule: without one under landlock no socket can be made at all
    return [f"os-sandbox={provider}", f"python-import={SOCKET_IMPORTS}",
            "net=ALLOW|TCP|127.0.0.2|80|OUT"]


# logging imports much: every module (the import of json then passes)
LOGGING_RULES = ["os-sandbox=subprocess", "python-import=*",
                 "net=ALLOW|TCP|127.0.0.2|80|OUT"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_refusal_prints_one_line_by_default(run, provider):
    r = run(base_rules(provider), ATTEMPTS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["RuleFileNotFoundError",
                                "RuleModuleNotFoundError",
                                "RuleApiPermissionError",
                                "RuleSocketConnectionRefusedError"]
    assert r.stderr.splitlines() == LINES, r.stderr


def test_the_line_comes_before_the_traceback(run):
    r = run(base_rules("subprocess"), "open('/etc/hostname')\n")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == LINES[0], r.stderr
    assert lines[1] == "Traceback (most recent call last):", r.stderr
    assert lines[-1].endswith(LINES[0]), r.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_log_stderr_off_silences_it(run, provider):
    r = run(base_rules(provider) + ["log-stderr=off"], ATTEMPTS)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) == 4, r.stdout
    assert r.stderr == "", r.stderr


def test_logging_configuration_decides(run):
    code = ("import logging\n"
            "logging.basicConfig(format='[%(name)s %(levelname)s] "
            "%(message)s')\n" + ATTEMPTS +
            "logging.getLogger('Pysandboxes').setLevel(logging.CRITICAL)\n"
            "attempt(lambda: open('/etc/hostname').read())\n")
    r = run(LOGGING_RULES,
            code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split().count("RuleFileNotFoundError") == 2, r.stdout
    # formatted by the program's configuration, and the last refusal,
    # after setLevel(CRITICAL), prints nothing
    assert r.stderr.splitlines() == [
        f"[Pysandboxes ERROR] {line}" for line in LINES
        if "json" not in line], r.stderr


def test_a_handler_refused_while_logging_gets_no_line_of_its_own(run,
                                                                 tmp_cwd):
    """A handler that itself does what is refused: its refusal is raised
    inside logging (which reports handler errors its way), the refusal that
    was being logged still stands, and nothing loops."""
    code = ("import logging, sys\n"
            "class H(logging.Handler):\n"
            "    def emit(self, record):\n"
            "        open('/etc/passwd')\n"
            "logging.raiseExceptions = False\n"
            "logging.getLogger('Pysandboxes').addHandler(H())\n"
            "logging.getLogger('Pysandboxes').propagate = False\n"
            "try:\n"
            "    open('/etc/hostname')\n"
            "except OSError as e:\n"
            "    print(type(e).__name__, e.filename)\n")
    r = run(LOGGING_RULES,
            code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["RuleFileNotFoundError", "/etc/hostname"]
    assert r.stderr == "", r.stderr


def test_learning_prints_no_denial_line(run, tmp_cwd):
    r = run(None, "open('/etc/hostname').read()\n",
            extra=["--learn"])
    assert r.returncode == 0, r.stderr
    assert "must be accepted by a rule" not in r.stderr, r.stderr
    assert "expose-ro=/etc/hostname" in \
        (tmp_cwd / ".py-sandboxes").read_text()


@pytest.mark.parametrize("value", ["maybe", "2"])
def test_a_bad_log_stderr_value_is_an_error(run, value):
    r = run([f"log-stderr={value}"], "print('ran')\n")
    assert r.returncode == 255, r.stderr
    assert "ran" not in r.stdout
    assert f"Invalid value '{value}' for log-stderr. Use on or off." \
        in r.stderr, r.stderr


def test_routine_refusals_in_the_standard_library_print_nothing(run,
                                                                tmp_cwd):
    """An optional module the standard library tries (bisect's _bisect,
    with python-import=bisect only) and a bytecode cache importlib cannot
    write are routine: no line; the JSON log still has them."""
    (tmp_cwd / "mod.py").write_text("X = 1\n")
    code = "import bisect, mod\nprint(bisect.bisect([1, 2], 1), mod.X)\n"
    r = run(["os-sandbox=subprocess", "python-import=bisect,mod",
             f"expose-ro={tmp_cwd}"], code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1"]
    assert r.stderr == "", r.stderr
    assert not (tmp_cwd / "__pycache__").exists()


def test_explain_says_whether_lines_are_printed(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    r = run_sb(["--pysandboxes-explain", "-c", "pass"])
    assert r.returncode == 0, r.stderr
    assert "# Denial lines: on (the Pysandboxes logger" in r.stdout
    (tmp_cwd / ".py-sandboxes").write_text("log-stderr=off\n")
    r = run_sb(["--pysandboxes-explain", "-c", "pass"])
    assert r.returncode == 0, r.stderr
    assert "# Denial lines: off" in r.stdout
    assert "from .py-sandboxes(1)" in r.stdout
