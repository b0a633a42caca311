"""Coding-agent integration (issue 19 item 4, seed-spec 10.4): the
pre-execution hook refuses a bare Python on a skill's scripts, in each
agent's own protocol, and names the python-sb command to run instead; the
command it names enforces the skill's rules; python3-sb, the seed's alias,
is the same launcher (make install's symlink, the wheel's wrapper).

The events are the JSON each agent documents for its hook: Claude Code and
Codex (PreToolUse, tool_input.command), Gemini CLI (BeforeTool,
run_shell_command), Cursor (beforeShellExecution, command), Copilot CLI
(preToolUse, toolName/toolArgs as a JSON string).
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, sb_path

HOOK = REPO / "packaging" / "agent-hooks" / "python-sb-agent-hook"
WRAPPER = REPO / "packaging" / "python3-sb"
PY = sys.executable


def event(agent, command, cwd, tool=None):
    if agent in ("claude", "codex"):
        return {"session_id": "s", "hook_event_name": "PreToolUse",
                "tool_name": tool or "Bash", "cwd": str(cwd),
                "tool_input": {"command": command}}
    if agent == "gemini":
        return {"session_id": "s", "hook_event_name": "BeforeTool",
                "tool_name": tool or "run_shell_command", "cwd": str(cwd),
                "tool_input": {"command": command}}
    if agent == "cursor":
        return {"hook_event_name": "beforeShellExecution",
                "conversation_id": "c", "generation_id": "g",
                "workspace_roots": [str(cwd)], "command": command,
                "cwd": str(cwd)}
    if agent == "copilot":
        return {"timestamp": 1, "cwd": str(cwd), "toolName": tool or "bash",
                "toolArgs": json.dumps({"command": command})}
    raise AssertionError(agent)


def run_hook(ev, agent=None, raw=None):
    argv = [PY, str(HOOK)] + ([f"--agent={agent}"] if agent else [])
    return subprocess.run(argv, input=raw if raw is not None
                          else json.dumps(ev), capture_output=True,
                          text=True, timeout=60)


def refused(agent, r):
    """The agent's verdict: (refused?, reason)."""
    if agent == "cursor":
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        return out["permission"] == "deny", out.get("agent_message", "")
    if agent == "copilot":
        assert r.returncode == 0, r.stderr
        if not r.stdout.strip():
            return False, ""
        out = json.loads(r.stdout)
        return (out["permissionDecision"] == "deny",
                out["permissionDecisionReason"])
    assert r.returncode in (0, 2), r.stderr
    if agent == "gemini" and r.returncode == 0:
        assert json.loads(r.stdout) == {}
    return r.returncode == 2, r.stderr


@pytest.fixture
def skill(tmp_cwd):
    """A project with a skill whose rules sit at its root, two levels above
    the script; the script writes a file outside the skill."""
    root = tmp_cwd / "skills" / "notes"
    (root / "scripts").mkdir(parents=True)
    (root / "SKILL.md").write_text("# notes\n")
    (root / ".py-sandboxes").write_text("os-sandbox=subprocess\n")
    (root / "scripts" / "save.py").write_text(
        "import sys\nopen(sys.argv[1], 'w').write('stolen')\n"
        "print('saved')\n")
    tool = root / "scripts" / "save"
    tool.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    tool.chmod(0o755)
    (tmp_cwd / "plain.py").write_text("print('plain')\n")
    return tmp_cwd


AGENTS = ("claude", "codex", "gemini", "cursor", "copilot")
REFUSED = [
    "python3 skills/notes/scripts/save.py out.txt",
    "python skills/notes/scripts/save.py out.txt",
    "cd skills/notes && python3 scripts/save.py out.txt",
    "ls && /usr/bin/python3 -u skills/notes/scripts/save.py x",
    "env A=1 nice -n 5 python3.11 skills/notes/scripts/save.py x",
    "bash -c 'python3 skills/notes/scripts/save.py x'",
    "./skills/notes/scripts/save",
    "uv run skills/notes/scripts/save.py x",
    "cd skills/notes/scripts; python3 -c 'import os'",
    "timeout 10 python3 skills/notes/scripts/save.py x > log 2>&1",
    # a wrapper's option that takes a value, env's split string
    "env -u HOME python3 skills/notes/scripts/save.py x",
    "sudo -u nobody python3 skills/notes/scripts/save.py x",
    "timeout -s KILL 10 python3 skills/notes/scripts/save.py x",
    "stdbuf -o L python3 skills/notes/scripts/save.py x",
    "exec -a name python3 skills/notes/scripts/save.py x",
    "taskset 0x3 python3 skills/notes/scripts/save.py x",
    "env -S 'python3 skills/notes/scripts/save.py x'",
    "uv run --with rich skills/notes/scripts/save.py x",
    "sudo -E ./skills/notes/scripts/save",
    # Windows' launcher, a debug build, backquotes, the script on stdin
    "py -3 skills/notes/scripts/save.py x",
    "python3.12-dbg skills/notes/scripts/save.py x",
    "echo `python3 skills/notes/scripts/save.py x`",
    "python3 - < skills/notes/scripts/save.py",
]
ALLOWED = [
    "python-sb skills/notes/scripts/save.py out.txt",
    "python3-sb skills/notes/scripts/save.py out.txt",
    "python3 plain.py",
    "cat skills/notes/scripts/save.py",
    "echo 'python3 skills/notes/scripts/save.py'",
    "git status",
    "timeout -s KILL 5 grep python skills/notes/scripts/save.py",
    "sudo -u bob cat skills/notes/scripts/save.py",
]


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_gets_its_own_protocol(skill, agent):
    for command in REFUSED:
        no, why = refused(agent, run_hook(event(agent, command, skill),
                                          agent))
        assert no, (agent, command)
        assert "skills/notes/.py-sandboxes" in why, why
        assert "python-sb --pysandboxes-config=" in why
    for command in ALLOWED:
        no, why = refused(agent, run_hook(event(agent, command, skill),
                                          agent))
        assert not no, (agent, command, why)


@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_is_recognised_without_the_flag(skill, agent):
    ev = event(agent, REFUSED[0], skill)
    assert refused(agent, run_hook(ev))[0]


def test_other_tools_are_not_judged(skill):
    ev = event("claude", "python3 skills/notes/scripts/save.py x", skill,
               tool="Read")
    r = run_hook(ev, "claude")
    assert r.returncode == 0 and not r.stderr
    ev = event("copilot", "", skill, tool="view")
    assert not refused("copilot", run_hook(ev, "copilot"))[0]


@pytest.mark.parametrize("agent", AGENTS)
def test_it_fails_closed(skill, agent):
    for raw in ("not json", "[1, 2]", '{"tool_name": "Bash", '
                '"tool_input": {"command": 7}}'):
        no, why = refused(agent, run_hook(None, agent, raw=raw))
        assert no and "refused" in why, (agent, raw)
    ev = event(agent, "python3 'skills/notes/scripts/save.py x", skill)
    assert refused(agent, run_hook(ev, agent))[0]


def test_usage_errors(skill):
    r = subprocess.run([PY, str(HOOK), "--agent=vim"], input="{}",
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Hint: --agent=" in r.stderr


def test_the_suggested_command_enforces_the_skills_rules(skill, sb):
    """Evidence outside the sandbox: the bare python writes the file, the
    command the hook names does not."""
    target = skill / "out.txt"
    bare = f"python3 skills/notes/scripts/save.py {target}"
    no, why = refused("claude", run_hook(event("claude", bare, skill)))
    assert no
    suggested = why.strip().splitlines()[-1].strip()
    argv = shlex.split(suggested)
    assert argv[0] == "python-sb"
    r = subprocess.run([sb] + argv[1:], cwd=skill, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0, r.stdout
    assert "out.txt" in r.stderr
    assert not target.exists()
    # the same script, bare: the hook is what stood between
    r = subprocess.run(["python3", "skills/notes/scripts/save.py",
                        str(target)], cwd=skill, capture_output=True,
                       text=True)
    assert r.returncode == 0 and target.read_text() == "stolen"


def _alias_behaves_as_python_sb(exe, work):
    (work / ".py-sandboxes").write_text("python-import=json\n")
    r = subprocess.run([str(exe), "-c", "import json\nprint('ok')\n"
                        "import socket\n"], cwd=work, capture_output=True,
                       text=True, timeout=120)
    assert r.stdout == "ok\n", r.stderr
    assert r.returncode != 0 and "socket" in r.stderr


def test_python3_sb_symlink_from_install(tmp_path):
    """make install (meson install) puts python3-sb beside python-sb."""
    build = sb_path().parent      # the build under test (build-asan too)
    if not (build / "build.ninja").exists():
        pytest.fail(f"{build} is not configured: run make first")
    dest = tmp_path / "dest"
    r = subprocess.run(["meson", "install", "-C", str(build), "--destdir",
                        str(dest), "--quiet", "--no-rebuild"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    links = list(dest.rglob("bin/python3-sb"))
    assert len(links) == 1
    assert os.readlink(links[0]) == "python-sb"
    hooks = list(dest.rglob("share/python-sb/agent-hooks/"
                            "python-sb-agent-hook"))
    assert len(hooks) == 1 and os.access(hooks[0], os.X_OK)
    work = tmp_path / "work"
    work.mkdir()
    # the DESTDIR tree is not at its prefix: point the alias at this
    # build's launcher to check the link itself resolves and runs
    alias = tmp_path / "bin" / "python3-sb"
    alias.parent.mkdir()
    os.symlink(sb_path(), alias.parent / "python-sb")
    os.symlink("python-sb", alias)
    _alias_behaves_as_python_sb(alias, work)


def test_python3_sb_wheel_wrapper(tmp_path):
    """The wheel's python3-sb (a wrapper: a wheel holds no symlink) runs
    the python-sb beside it, through a symlink to itself too."""
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    shutil.copy(WRAPPER, bindir / "python3-sb")
    os.symlink(sb_path(), bindir / "python-sb")
    work = tmp_path / "work"
    work.mkdir()
    _alias_behaves_as_python_sb(bindir / "python3-sb", work)
    os.symlink(bindir / "python3-sb", tmp_path / "elsewhere")
    _alias_behaves_as_python_sb(tmp_path / "elsewhere", work)
    (bindir / "python-sb").unlink()
    r = subprocess.run([str(bindir / "python3-sb"), "-c", "pass"],
                       capture_output=True, text=True)
    assert r.returncode == 255 and "Hint:" in r.stderr


def test_the_wheel_carries_python3_sb():
    text = (REPO / "packaging" / "pysb_build.py").read_text()
    assert '"{data}/scripts/python3-sb"' in text.replace("f\"", "\"")
