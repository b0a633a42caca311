"""The interactive REPL under python-sb (seed-spec 3.6), on a pseudo-
terminal: the sandbox banner replaces CPython's, code typed at the prompt
runs, and the rules hold there as in a script."""
import os
import pty
import select
import time

from conftest import pyenv_minor


def run_on_pty(argv, cwd, typed, env, timeout=30):
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    os.write(fd, typed)
    out, end = b"", time.time() + timeout
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        elif os.waitpid(pid, os.WNOHANG)[0]:
            break
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    os.close(fd)
    return out.decode(errors="replace").replace("\r", "")


def test_repl_banner_and_rules(sb, tmp_cwd, python_exe):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    env = {"PATH": "/usr/bin:/bin", "TERM": "dumb", "HOME": str(tmp_cwd)}
    out = run_on_pty([sb, f"--python={python_exe}"], tmp_cwd,
                     b"print(6*7)\nimport os\nexit()\n", env)
    assert "SANDBOXES Python 3." in out, out
    assert ("*** APIs are LIMITED according to the rules in "
            "'.py-sandboxes' ***") in out
    assert 'Type "help", "copyright", "credits" or "license"' in out
    assert "\n42\n" in out
    assert ("RuleModuleNotFoundError: Module named 'os' is not allowed by "
            "a rule") in out
    # CPython's own banner is not printed twice
    assert out.count("Type \"help\"") == 1


def test_piped_stdin_gets_no_banner(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    r = run_sb([], input="print(6*7)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42\n"
    assert "SANDBOXES" not in r.stderr


def test_learning_banner_says_learned(sb, tmp_cwd, python_exe):
    """seed-spec 3.6: in learning mode the second line says the API calls
    are LEARNED and saved in the file."""
    env = {"PATH": "/usr/bin:/bin", "TERM": "dumb", "HOME": str(tmp_cwd)}
    out = run_on_pty([sb, f"--python={python_exe}"], tmp_cwd,
                     b"print(6*7)\nexit()\n", env)
    assert ("*** API calls are LEARNED and saved in '.py-sandboxes' at the "
            "end of the session. ***") in out, out
    assert "LIMITED" not in out
    assert "\n42\n" in out


TYPED_MODULE = """\
def judged():
    return eval('1 + 1')

class K:
    def m(self):
        pass

M = type(K().m)

def shown():
    # an object whose repr is eval bound to a string: the REPL displays
    # it from the typed frame, which does not call eval (weaknesses 79)
    return type("O", (), {"__repr__": M(eval, "'LAUN' + 'DERED'")})()
"""


def typed_session(sb, tmp_cwd, python, term="dumb"):
    (tmp_cwd / ".py-sandboxes").write_text(
        "python-import=helper\nexpose-ro=.\n")
    (tmp_cwd / "helper.py").write_text(TYPED_MODULE)
    env = {"PATH": "/usr/bin:/bin", "TERM": term, "HOME": str(tmp_cwd),
           "PYTHON_COLORS": "0", "NO_COLOR": "1"}
    typed = (b"print('E', eval('6*7'))\n"
             b"exec('y = 5'); print('X', y)\n"
             b"print('C', type(compile('1', 's', 'eval')).__name__)\n"
             b"import helper\n"
             b"helper.judged()\n"
             b"helper.shown()\n"
             b"eval(\"open('/etc/hostname')\")\n"
             b"exit()\n")
    return run_on_pty([sb, f"--python={python}"], tmp_cwd, typed, env)


def check_typed(out):
    import re
    out = re.sub(r"\x1b\[[0-9;?]*[A-Za-z=>]|\x1b[=>]", "", out)
    # the user's own typed code runs eval/exec/compile unguarded...
    assert "E 42" in out, out
    assert "X 5" in out, out
    assert "C code" in out, out
    # ...code the program runs is still judged: helper.judged()'s eval
    # and the eval the prompt's display of helper.shown() calls, each
    # refused by name...
    denied = ("builtins.eval() is denied by the API guard (category: "
              "dynamic-code)")
    assert out.count(denied) >= 2, out
    assert "LAUNDERED" not in out, out
    # ...and the other rules still hold inside typed eval
    assert ("RuleFileNotFoundError: Access to '/etc/hostname' must be "
            "accepted by a rule.") in out, out


def test_typed_eval_runs_unguarded_code_run_is_judged(sb, tmp_cwd,
                                                      python_exe):
    check_typed(typed_session(sb, tmp_cwd, python_exe))


def test_typed_eval_on_the_313_repl(sb, tmp_cwd):
    py = pyenv_minor("3.13")
    if not os.access(py, os.X_OK):
        import pytest
        pytest.skip(f"{py} is not installed")
    check_typed(typed_session(sb, tmp_cwd, py, term="xterm"))


def test_readline_loaded_for_the_repl_judges_its_files(sb, tmp_cwd):
    """site imports readline for the REPL before the guard arms, so that
    the program finds it in sys.modules without the native grant its
    import needs; its history files are opened in C with no event. They
    are judged as open() would be: a history file written outside the
    rules is refused, and none is made."""
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    outside = tmp_cwd.parent / (tmp_cwd.name + "-outside")
    outside.mkdir()
    try:
        env = {"PATH": "/usr/bin:/bin", "TERM": "dumb",
               "HOME": str(tmp_cwd)}
        typed = ("import sys\n"
                 "rl = sys.modules['readline']\n"
                 f"rl.write_history_file('{outside}/h')\n"
                 "exit()\n").encode()
        out = run_on_pty([sb, "--python=/usr/bin/python3"], tmp_cwd, typed,
                         env)
        assert ("RuleFileNotFoundError: Access to "
                f"'{outside}/h' must be accepted by a rule.") in out, out
        assert os.listdir(outside) == []
    finally:
        for f in outside.iterdir():
            f.unlink()
        outside.rmdir()
