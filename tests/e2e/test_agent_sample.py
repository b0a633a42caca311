"""The "agent runs generated code" sample (issue 8, seed-spec 9.3):
examples/agent-snippet/agent.py runs code snippets, given as strings, in
run_snippet(), an @sandbox function confined by the sample's .py-sandboxes
(calculator and data modules, exec() granted as dynamic-code, nothing
else). A benign snippet works; reading an SSH key, os.system, a network
call and a subprocess are refused, each refusal found by sandbox_denials();
a snippet that never ends is stopped. The negative control runs the same
snippets in-process, where all of them succeed. Offline: the "network" is
a server the demo starts on loopback, and the SSH key a fake one.
"""
import os
import pathlib
import re
import subprocess
import sys

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / \
    "agent-snippet"


def agent(sb, *args, input=None, timeout=60):
    return subprocess.run([sys.executable, str(SAMPLE / "agent.py"),
                           f"--python-sb={sb}", *args], input=input,
                          stdin=None if input is not None
                          else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ))


def home(text):
    return re.sub(r"/\S*agent-snippet-home-[^/]+/", "HOME/", text)


def test_the_demo_under_the_sandbox(sb):
    r = agent(sb, "--demo", "--timeout=1")
    assert r.returncode == 2, r.stderr
    assert home(r.stdout).splitlines() == [
        "(each snippet runs in run_snippet(), an @sandbox function; rules: "
        ".py-sandboxes)",
        "the snippet says: n = 8",
        "[ OK ]    statistics over a list: {'mean': 3.875, 'median': 3.5, "
        "'stdev': 2.748}",
        "[REFUSED] read ~/.ssh/id_rsa: RuleFileNotFoundError: Access to "
        "'HOME/.ssh/id_rsa' must be accepted by a rule.",
        "[REFUSED] os.system: RuleApiPermissionError: os.system() is denied "
        "by the API guard (category: process-exec).",
        "          Add `python-api=ALLOW:os.system` for this function only, "
        "or `python-api=ALLOW:process-exec` for the whole category.",
        "[REFUSED] a network call: RuleModuleNotFoundError: Module named "
        "'urllib' is not allowed by a rule",
        "[REFUSED] a subprocess: RuleModuleNotFoundError: Module named "
        "'subprocess' is not allowed by a rule",
        "[FAILED]  a loop that never ends: SandBoxProtocolError: "
        "run_snippet(): no answer from the sandbox within 1 s (timeout=); "
        "the sandbox process was replaced",
    ]
    assert "received" not in r.stdout  # nothing reached the server


def test_without_the_sandbox_every_snippet_succeeds(sb):
    """Negative control: the refusals above are the sandbox's."""
    r = agent(sb, "--demo", "--no-sandbox")
    assert r.returncode == 0, r.stderr
    lines = home(r.stdout).splitlines()
    assert "[ OK ]    read ~/.ssh/id_rsa: '-----BEGIN OPENSSH PRIVATE " \
        "KEY----- (a fake one, made by agent.py --demo)\\n'" in lines
    assert "[ OK ]    os.system: 0" in lines
    assert "[ OK ]    a network call: 'the attacker got it'" in lines
    assert any(ln.startswith("[ OK ]    a subprocess: 'uid=")
               for ln in lines)
    assert lines[-1] == ("(the stand-in attacker's server received "
                         "/?secret=stolen)")


def test_a_snippet_from_stdin_or_the_command_line(sb):
    r = agent(sb, "-", input="import math\nresult = math.factorial(20)\n")
    assert (r.returncode, r.stdout.splitlines()[1:]) == (
        0, ["[ OK ]    -: 2432902008176640000"]), r.stderr
    r = agent(sb, "-c", "import json\nresult = json.dumps({'a': [1, 2]})")
    assert r.stdout.splitlines()[1:] == ["[ OK ]    -c: '{\"a\": [1, 2]}'"]


def test_the_snippets_own_error_is_not_a_refusal(sb):
    """sandbox_denials() tells a refusal from a bug of the snippet."""
    r = agent(sb, "-c", "result = 1 / 0")
    assert (r.returncode, r.stdout.splitlines()[1:]) == (
        1, ["[FAILED]  -c: ZeroDivisionError: division by zero"])


def test_a_refusal_hidden_behind_another_exception(sb):
    """The snippet catches the refusal and raises its own error: the
    denial still comes back with it."""
    r = agent(sb, "-c", "try:\n    open('/etc/passwd')\n"
                        "except OSError:\n    raise ValueError('no luck')\n")
    assert (r.returncode, r.stdout.splitlines()[1:]) == (
        2, ["[REFUSED] -c: RuleFileNotFoundError: Access to '/etc/passwd' "
            "must be accepted by a rule."])


def test_the_profile_grants_little():
    """No host, no file but the sample's own directory, no environment
    variable, one API category (dynamic-code, for exec), no module that
    reaches the system, locked."""
    lines = [ln.strip() for ln in
             (SAMPLE / ".py-sandboxes").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert not any(ln.startswith(("net=", "env=", "expose-rw=", "include"))
                   for ln in lines)
    assert [ln for ln in lines if ln.startswith("expose-ro=")] == \
        ["expose-ro=${AGENT_SNIPPET_DIR}"]
    assert [ln for ln in lines if ln.startswith("python-api=")] == \
        ["python-api=ALLOW:dynamic-code"]
    modules = {m.strip() for ln in lines if ln.startswith("python-import=")
               for m in ln.split("=", 1)[1].split(",")}
    assert not modules & {"*", "os", "sys", "subprocess", "socket",
                          "_socket", "urllib", "http", "ctypes", "pickle",
                          "importlib", "shutil", "io"}
    assert "learn=false" in lines
