"""The interactive REPL under python-sb (seed-spec 3.6), on a pseudo-
terminal: the sandbox banner replaces CPython's, code typed at the prompt
runs, and the rules hold there as in a script."""
import os
import pty
import select
import time


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
