"""os-sandbox=none as the seed means it (seed-spec 1.3, 7.1, 7.4, 8.3;
issue 14 item 4): a debugging mode. Under python-sb the program runs in
the launcher's process (python-sb execs the interpreter), with no rule
applied, is_in_sandbox() is True and @sandbox calls are made in place, so
that a traceback shows the direct call; `import pysandboxes` works with
the build tree's launcher. In partial mode, sandboxes(os_sandbox="none")
(or the rule file's os-sandbox=none) starts no process: calls are direct,
and the caller is not "in the sandbox"."""
import os
import subprocess
import textwrap

import pytest

from conftest import REPO, pyenv_newest, pyenv_oldest, sb_path

INTERPRETERS = [p for p in (
    "/usr/bin/python3",
    pyenv_oldest(),
    pyenv_newest(),
) if os.access(p, os.X_OK)]

PROGRAM = '''
import json, os, sys, traceback
import pysandboxes
from pysandboxes import sandbox, sandboxes, is_in_sandbox


@sandbox
def where():
    return os.getpid()


@sandbox
def fail():
    raise ValueError("boom")


out = {"pid": os.getpid(), "in_sandbox": is_in_sandbox()}
with sandboxes():
    out["call_pid"] = where()
    try:
        fail()
    except ValueError:
        out["tb"] = [f.name for f in traceback.extract_tb(sys.exc_info()[2])]
# no rule is applied: a file outside every rule, a module no rule names,
# an API no rule grants
with open(sys.argv[1], "w") as f:
    f.write("written")
import ctypes
out["ctypes"] = ctypes.sizeof(ctypes.c_int)
out["preload"] = os.environ.get("LD_PRELOAD", "")
print(json.dumps(out))
'''


def run_none(run_sb, tmp_cwd, py, rules, args=(), **kw):
    (tmp_cwd / "prog.py").write_text(PROGRAM)
    (tmp_cwd / ".py-sandboxes").write_text(rules)
    outside = tmp_cwd / "outside" / "written.txt"
    outside.parent.mkdir()
    if kw.get("unprivileged") and os.geteuid() == 0:
        os.chown(outside.parent, 65534, 65534)
    r = run_sb([*args, f"--python={py}", "prog.py", str(outside)], **kw)
    return r, outside


@pytest.mark.parametrize("py", INTERPRETERS)
@pytest.mark.parametrize("how", ["file", "arg"])
def test_complete_mode_runs_in_place_with_no_rule_applied(run_sb, tmp_cwd,
                                                           py, how):
    import json
    rules = "os-sandbox=none\n" if how == "file" else "python-import=json\n"
    args = ["--os-sandbox=none"] if how == "arg" else []
    r, outside = run_none(run_sb, tmp_cwd, py, rules, args)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["in_sandbox"] is True
    # the @sandbox call ran in this very process, directly
    assert out["call_pid"] == out["pid"]
    assert out["tb"][-1] == "fail" and "call" in out["tb"], out["tb"]
    assert out["ctypes"] == 4
    assert "pysb-guard" not in out["preload"]
    # seen from outside: the write no rule allows happened
    assert outside.read_text() == "written"


@pytest.mark.unprivileged
def test_complete_mode_as_nobody(run_sb, tmp_cwd):
    import json
    r, outside = run_none(run_sb, tmp_cwd, "/usr/bin/python3",
                          "os-sandbox=none\n", unprivileged=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["in_sandbox"] is True and out["call_pid"] == out["pid"]
    assert outside.read_text() == "written"


PARTIAL = '''
import asyncio, json, os, sys, traceback
from pysandboxes import sandbox, sandboxes, is_in_sandbox


@sandbox
def where():
    return os.getpid(), is_in_sandbox()


@sandbox
async def awhere():
    return os.getpid()


@sandbox
def fail():
    raise ValueError("boom")


out = {"pid": os.getpid()}
with sandboxes(%s):
    out["call"] = where()
    out["async"] = asyncio.run(awhere())
    try:
        fail()
    except ValueError:
        out["tb"] = [f.name for f in traceback.extract_tb(sys.exc_info()[2])]
out["in_sandbox"] = is_in_sandbox()
print(json.dumps(out))
'''


@pytest.mark.parametrize("py", INTERPRETERS)
@pytest.mark.parametrize("how", ["keyword", "file"])
def test_partial_mode_calls_directly(tmp_cwd, py, how):
    import json
    if how == "keyword":
        (tmp_cwd / ".py-sandboxes").write_text("expose-ro=.\n")
        arg = 'os_sandbox="none"'
    else:
        (tmp_cwd / ".py-sandboxes").write_text("os-sandbox=none\n")
        arg = ""
    (tmp_cwd / "main.py").write_text(PARTIAL % arg)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               PYSB_PYTHON_SB=str(sb_path()))
    r = subprocess.run([py, "main.py"], cwd=tmp_cwd, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # no worker: the call ran in the caller's process, which is not "in
    # the sandbox" (7.4)
    assert out["call"] == [out["pid"], False]
    assert out["async"] == out["pid"]
    assert out["in_sandbox"] is False
    assert out["tb"][-1] == "fail" and "call" in out["tb"], out["tb"]


def test_explain_says_the_python_layer_is_off(run_sb, tmp_cwd):
    """--pysandboxes-explain under none: no guard is installed, so the
    Python layer is not reported on (it was, next to 'no guard at all')."""
    (tmp_cwd / ".py-sandboxes").write_text("os-sandbox=none\n")
    r = run_sb(["--pysandboxes-explain"])
    assert r.returncode == 0, r.stderr
    assert "# Python layer: off (os-sandbox=none: no guard)\n" in r.stdout
    assert "# Python layer: on" not in r.stdout
