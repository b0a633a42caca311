"""The command line and the rule file, end to end (seed-spec 2 and 3).

Each case runs build/python-sb as a user would: --pysandboxes-explain of
the realistic file of 2.9, every family of configuration error with its
exact `file(line): ` prefix and exit status 255, the lock, usage errors
with status 2, and -V.
"""
import os
import re
import textwrap

import pytest

EXAMPLE_29 = textwrap.dedent("""\
    # .py-sandboxes -- policy of my_app (reviewed 2026-09-10)

    #include "./.local.py-sandboxes"  # May be added to .gitignore
    include "~/.config/py-sandboxes/user-py-sandboxes.profile"  # For all project for user
    include "/etc/py-sandboxes/global-py-sandboxes.profile"  # For all the node

    # ENVIRONMENT VARIABLES
    #env=USER=sandbox
    env=TMPDIR=${TMPDIR:-${TEMP:-${TMP:-/tmp}}}
    env=*_API_KEY=${*_API_KEY}
    unenv=OPENAI_API_KEY
    # <learning_guard_envs>
    # Add rules (2026/09/10 at 14:22)
    env=DEMO_API_KEY=${DEMO_API_KEY}
    env=HOME=${HOME}

    # </learning_guard_envs>

    # FILE SYSTEM ACCESS
    ignore=.env
    ignore=*.log
    # <learning_guard_files>
    expose-ro=./app
    expose-ro=./data
    expose-rw=${TMPDIR:-/tmp}/my_app
    expose-ro=~/.cache/huggingface
    # </learning_guard_files>

    # NETWORK ACCESS CONTROL
    net=DENY|*|10.0.0.0/8|*|OUT
    net=DENY|*|172.16.0.0/12|*|OUT
    net=DENY|*|192.168.0.0/16|*|OUT
    net=ALLOW|TCP|0.0.0.0/32|${PORT:-8000}|IN
    # <learning_guard_socket>
    net=ALLOW|TCP|localhost|443|OUT
    # </learning_guard_socket>

    # PYTHON IMPORTS CONTROL
    # <learning_guard_import>
    # ⚠ Dangerous!
    python-import=importlib, inspect
    # Standard Python
    python-import=_socket, abc, argparse, asyncio, base64, codecs, collections
    python-import=json, logging, os, pathlib, re, socket, ssl, urllib
    # External modules (Are you sure about the origin?)
    python-import=httpx
    python-import=markdownify
    # </learning_guard_import>

    # PYTHON API CONTROL
    # <learning_guard_api>
    # threads: concurrency primitives
    python-api=ALLOW:threads
    # </learning_guard_api>

    # DYNAMICALLY EVALUATED CODE (eval-*)
    eval-namespace=closed
    eval-syntax=arith, compare
    eval-timeout=2s
    eval-syntax:rules=arith, compare, conditional
    eval-call:rules=min, max, round, abs
    eval-namespace:rules=closed
    # <learning_guard_eval>
    # </learning_guard_eval>

    # <learning_remote_result>
    remote-result-mode=data-only
    # </learning_remote_result>

    py-sandbox=true
    os-sandbox=${OS_SANDBOX:-subprocess}
    remote-result-guard=true

    # learn=false        # uncomment once reviewed: locks the rules

    # PROVIDER PARAMETERS (only read by the selected provider)
    # bwrap.share-net=yes
    # firejail.net=docker0
    # qemu.memory=2G
    """)


@pytest.fixture
def home(tmp_path):
    """A HOME of the test's own, outside the cwd, so that ~ rules are
    hermetic and display as ~/..."""
    h = tmp_path / "home"
    (h / ".cache" / "huggingface").mkdir(parents=True)
    return h


def env_with(**extra):
    env = {k: v for k, v in os.environ.items() if k != "OS_SANDBOX"}
    env.update(extra)
    return env


def test_explain_the_full_example(run_sb, tmp_cwd, home):
    for d in ("app", "data", "tmp/my_app"):
        (tmp_cwd / d).mkdir(parents=True)
    (tmp_cwd / ".py-sandboxes").write_text(EXAMPLE_29)
    r = run_sb(["--pysandboxes-explain"],
               env=env_with(HOME=str(home), TMPDIR=str(tmp_cwd / "tmp"),
                            DEMO_API_KEY="sk-secret-5521", X_API_KEY="xk-secret-7391"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    lines = out.splitlines()

    def origin(rule):
        hit = [ln for ln in lines if ln.startswith(rule + " ")]
        assert hit, f"{rule!r} not in:\n{out}"
        return hit[0].rsplit("# ", 1)[1]

    assert origin("env=TMPDIR=${TMPDIR:-${TEMP:-${TMP:-/tmp}}}") == \
        ".py-sandboxes(9)"
    assert origin("expose-ro=./app") == ".py-sandboxes(23)"
    # ${} expanded, with the origin of the line that said it
    assert origin(f"expose-rw={tmp_cwd}/tmp/my_app") == ".py-sandboxes(25)"
    assert origin("net=ALLOW|TCP|0.0.0.0/32|8000|IN") == ".py-sandboxes(33)"
    assert origin("os-sandbox=subprocess") == ".py-sandboxes(71)"
    assert origin("env=TERM=${TERM}") == "<implicit>"
    assert "sk-secret-5521" not in out and "xk-secret-7391" not in out
    assert re.search(r"^#   DEMO_API_KEY HOME TERM TMPDIR X_API_KEY$", out,
                     re.M) or "DEMO_API_KEY" in out
    assert ("~/.config/py-sandboxes/user-py-sandboxes.profile: absent, "
            "ignored (included from .py-sandboxes(4))") in out
    assert "/etc/py-sandboxes/global-py-sandboxes.profile: absent" in out
    assert "#   localhost -> 127.0.0.1" in out
    assert "# Provider: subprocess, from .py-sandboxes(71)" in out
    assert ("# Mode: enforcing: the rule file '.py-sandboxes' exists and no "
            "learn= rule asks for learning") in out


def test_explain_follows_os_sandbox_from_the_environment(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=${OS_SANDBOX:-subprocess}\n")
    r = run_sb(["--pysandboxes-explain"], env=env_with(OS_SANDBOX="none"))
    assert r.returncode == 0, r.stderr
    assert "# Provider: none, from .py-sandboxes(1)" in r.stdout


def test_explain_without_a_rule_file_says_learning(run_sb):
    r = run_sb(["--os-sandbox=landlock", "--pysandboxes-explain"])
    assert r.returncode == 0, r.stderr
    assert ("# Mode: learning: the rule file '.py-sandboxes' does not exist"
            in r.stdout)
    assert "forced while learning" in r.stdout


def test_explain_shows_command_line_rules(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    r = run_sb(["--os_sandbox=none", "--pysandboxes-explain"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"^os-sandbox=none +# <arg>$", r.stdout, re.M)
    assert "# Provider: none, from <arg>" in r.stdout


# Each error example of the spec: the message, its prefix, status 255.
ERRORS = [
    ("line 1\nexpose-ro=./data\n",
     ".py-sandboxes(1): Invalid rule 'line 1'\n"
     ".py-sandboxes(2): In 'expose-ro=./data', path 'data' must exist."),
    ("python-import=${A:B}\n",
     ".py-sandboxes(1): Invalid variable reference '${A:B}', use ${NAME} "
     "or ${NAME:-default}"),
    ("os-sandbox=bwrap\n\nos-sandbox=bwrap\n",
     ".py-sandboxes(1) and .py-sandboxes(3): Multiple os-sandbox "
     "parameters."),
    ("env=FOO\n", ".py-sandboxes(1): Detect a missing '=' in rule: env=FOO."),
    ("expose-ro=/a,/b\n",
     ".py-sandboxes(1): In 'expose-ro=/a,/b', expected a single path (no "
     "comma)."),
    ("net=ALLOW|TCP|1.2.3.4|443\n",
     ".py-sandboxes(1): 'net=ALLOW|TCP|1.2.3.4|443' has incorrect number of "
     "parts separated by '|'. Expected 5, got 4. Format: <DENY,ALLOW>|<TCP,"
     "UDP list or *>|<ip/mask>, *|<port list>|<IN, OUT>."),
    ("net=PERMIT|TCP|1.2.3.4|443|OUT\n",
     ".py-sandboxes(1): 'net=PERMIT|TCP|1.2.3.4|443|OUT' use an invalid "
     "action. Must be 'ALLOW' or 'DENY'."),
    ("net=ALLOW|TCP|1.2.3.4|99999|OUT\n",
     ".py-sandboxes(1): In 'net=ALLOW|TCP|1.2.3.4|99999|OUT', invalid port "
     "list."),
    ("python-api=ALLOW:proces-exec\n",
     ".py-sandboxes(1): In 'python-api=ALLOW:proces-exec', unknown category "
     "'proces-exec', expected one of ['deserialization', 'dynamic-code', "
     "'introspection', 'native', 'privileges', 'process-control', "
     "'process-exec', 'threads']."),
    ("python-api=ALLOW:os.sistem\n",
     ".py-sandboxes(1): In 'python-api=ALLOW:os.sistem', 'os.sistem' is not "
     "a registered sensitive function."),
    ("eval-synax=arith\n",
     ".py-sandboxes(1): In 'eval-synax=arith', unknown key 'eval-synax', "
     "closest known token is 'eval-syntax'."),
    ("eval-timeout=1s\neval-timeout=2s\n",
     ".py-sandboxes(2): eval-timeout is set twice in this profile (already "
     "at line 1): a scalar is not a set."),
    ("py-sandbox=maybe\n",
     ".py-sandboxes(1): Invalid value 'maybe' for py-sandbox. Use true or "
     "false."),
    ("port=-5\n", ".py-sandboxes(1): Port must be a positive value"),
    ("os-sandbox=docker\n", ".py-sandboxes(1): Invalid os-sandbox 'docker'."),
]


@pytest.mark.parametrize("rules,want", ERRORS,
                         ids=[w.split(": ", 1)[1][:40] for _, w in ERRORS])
def test_configuration_errors(run_sb, tmp_cwd, rules, want):
    (tmp_cwd / ".py-sandboxes").write_text(rules)
    (tmp_cwd / "script.py").write_text("print('ran')\n")
    for args in (["--pysandboxes-explain"], ["script.py"]):
        r = run_sb(args)
        assert r.returncode == 255, (args, r.stdout, r.stderr)
        assert r.stdout == "", "nothing may run"
        assert r.stderr.endswith("Syntax error in config files.\n" + want +
                                 "\n"), r.stderr


def test_errors_of_includes_name_their_own_file(run_sb, tmp_cwd):
    (tmp_cwd / "common.profile").write_text("# x\nbogus\n")
    (tmp_cwd / ".py-sandboxes").write_text('include "./common.profile"\n'
                                           "another bogus\n")
    r = run_sb(["--pysandboxes-explain"])
    assert r.returncode == 255
    assert r.stderr.endswith(
        "Syntax error in config files.\n"
        ".py-sandboxes(2): Invalid rule 'another bogus'\n"
        "common.profile(2): Invalid rule 'bogus'\n"), r.stderr


def test_binary_garbage_is_an_error_not_a_crash(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_bytes(
        bytes(range(256)) * 40 + b"\nexpose-ro=\x00\xff\n")
    r = run_sb(["--pysandboxes-explain"])
    assert r.returncode == 255, r.stderr
    assert "Syntax error in config files." in r.stderr
    assert "NUL byte" in r.stderr
    # a hostile file cannot send control sequences to the terminal: the
    # line that holds no NUL is refused by its first hidden character
    assert "\x1b" not in r.stderr
    assert "the line holds U+000B, a character a terminal" in r.stderr


@pytest.mark.parametrize("line,shown", [
    (b"expose-rw=/\r# read-only data only, reviewed", "U+000D"),
    (b"expose-ro=/tmp/\xe2\x80\xaecod.txt", "U+202E"),
    (b"python-import=json\x1b[2K", "U+001B"),
    (b"# a comment \xe2\x81\xa6hidden", "U+2066"),
], ids=["cr-mid-line", "bidi-override", "escape", "isolate-in-comment"])
def test_a_line_that_does_not_read_as_it_is_parsed_is_refused(
        run_sb, tmp_cwd, line, shown):
    """A CR in the middle of a line makes a terminal show only what follows
    it; a bidirectional mark shows the text in another order: a reviewer
    would approve what the parser does not read. Refused, with the line;
    a tab, a CRLF line end and a byte that is not UTF-8 are text."""
    (tmp_cwd / ".py-sandboxes").write_bytes(
        b"learn=false\n" + line + b"\n")
    r = run_sb(["-c", "print('RAN')"])
    assert r.returncode == 255, r.stderr
    assert "RAN" not in r.stdout
    assert (f".py-sandboxes(2): the line holds {shown}, a character a "
            "terminal or an editor may not show") in r.stderr
    (tmp_cwd / ".py-sandboxes").write_bytes(
        b"learn=false\r\npython-import=json\t# a tab\r\n"
        b"# caf\xe9 in Latin-1\n")
    r = run_sb(["-c", "print('RAN')"])
    assert r.returncode == 0 and r.stdout == "RAN\n", r.stderr


def test_a_directory_as_rule_file(run_sb, tmp_cwd):
    (tmp_cwd / "dir").mkdir()
    r = run_sb(["--pysandboxes-config=dir", "--pysandboxes-explain"])
    assert r.returncode == 255
    assert ("dir: the rule file: it is a directory, not a rule file."
            in r.stderr)


def test_lock_refuses_command_line_rules(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n"
                                           "learn=false\n")
    r = run_sb(["--os-sandbox=none", "--expose-ro=/etc", "-c", "pass"])
    assert r.returncode == 255
    assert r.stderr == (".py-sandboxes(2): 'learn=false' locks the rules, "
                        "the command line cannot add --os-sandbox=none "
                        "--expose-ro=/etc\n")


def test_lock_refuses_learning(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("learn=false\n")
    r = run_sb(["--learn", "-c", "pass"])
    assert r.returncode == 255
    assert (".py-sandboxes(1): learning mode is forbidden, but requested by "
            "<arg>.") in r.stderr


@pytest.mark.parametrize("args,message", [
    (["-m"], "Argument expected for -m option"),
    (["-c"], "Argument expected for -c option"),
    (["-Z"], "Unknown option: -Z"),
    (["--pysandboxes-config"],
     "argument --pysandboxes-config: expected one argument"),
])
def test_usage_errors_exit_2(run_sb, args, message):
    r = run_sb(args)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == message
    assert r.stderr.splitlines()[1].startswith("usage: python-sb ")
    assert "python-sb -h" in r.stderr.splitlines()[2]


def test_version_prints_the_interpreter_version(run_sb, python_exe):
    import subprocess
    want = subprocess.run([python_exe, "-V"], capture_output=True,
                          text=True).stdout
    r = run_sb([f"--python={python_exe}", "-V"])
    assert r.returncode == 0
    assert r.stdout == want and want.startswith("Python 3.")


def test_an_interpreter_that_does_not_exist(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    r = run_sb(["--python=/nonexistent/python3", "-c", "print(1)"])
    assert r.returncode == 255
    assert r.stdout == ""
    assert "not an executable file" in r.stderr


def test_an_interpreter_that_is_a_script_is_refused(run_sb, tmp_cwd):
    script = tmp_cwd / "fakepython"
    script.write_text("#!/bin/sh\necho pwned\n")
    script.chmod(0o755)
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    r = run_sb([f"--python={script}", "-c", "print(1)"])
    assert r.returncode == 255
    assert "pwned" not in r.stdout
    assert "is a script, not a Python binary" in r.stderr


def test_a_provider_missing_here_fails_closed(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("os-sandbox=qemu\n")
    r = run_sb(["-c", "print('ran')"],
               env=dict(os.environ, PYSB_QEMU="/nonexistent/qemu"))
    assert r.returncode == 255
    assert r.stdout == ""
    assert "nothing was run" in r.stderr
    assert "apt-get install qemu-system-x86" in r.stderr


def test_a_qemu_key_on_the_command_line_is_the_files_key(run_sb, tmp_cwd):
    # an option's underscores become dashes: --qemu.use_kvm must still
    # name qemu.use_kvm (judged before qemu is looked for)
    (tmp_cwd / ".py-sandboxes").write_text("os-sandbox=qemu\n")
    for opt in ("--qemu.use_kvm=maybe", "--qemu.use-kvm=maybe"):
        r = run_sb([opt, "-c", "print('ran')"],
                   env=dict(os.environ, PYSB_QEMU="/nonexistent/qemu"))
        assert r.returncode == 255, r.stderr
        assert r.stdout == ""
        assert "Invalid value 'maybe' for 'qemu.use_kvm'" in r.stderr, \
            r.stderr
    r = run_sb(["--qemu.no_such_key=1", "-c", "print('ran')"],
               env=dict(os.environ, PYSB_QEMU="/nonexistent/qemu"))
    assert r.returncode == 255
    assert "Unknown key 'qemu.no_such_key'" in r.stderr, r.stderr


def test_without_a_rule_file_the_run_learns(run_sb, tmp_cwd):
    r = run_sb(["-c", "print('ran')"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ran\n"
    assert "Write all learning rules in '.py-sandboxes'." in r.stderr
    assert (tmp_cwd / ".py-sandboxes").exists()


def test_learning_refused_by_a_lock_in_an_included_profile(run_sb, tmp_cwd):
    (tmp_cwd / "locked.profile").write_text("learn=false\n")
    (tmp_cwd / ".py-sandboxes").write_text('include "./locked.profile"\n'
                                           "learn=./learned\n")
    r = run_sb(["-c", "print('ran')"])
    assert r.returncode == 255 and r.stdout == ""
    assert ("locked.profile(1): learning mode is forbidden, but requested "
            "by .py-sandboxes(2).") in r.stderr



def test_the_rule_file_next_to_the_script(run_sb, tmp_cwd):
    (tmp_cwd / "app").mkdir()
    (tmp_cwd / "app" / "main.py").write_text("print('ran')\n")
    (tmp_cwd / "app" / ".py-sandboxes").write_text("os-sandbox=none\n")
    (tmp_cwd / ".py-sandboxes").write_text("os-sandbox=subprocess\n")
    r = run_sb(["--pysandboxes-explain", "app/main.py"])
    assert r.returncode == 0, r.stderr
    assert "# Provider: none, from app/.py-sandboxes(1)" in r.stdout


PLANT = ("open({where!r}, 'w').write('os-sandbox=none\\n')\n"
         "print('planted')\n")


@pytest.mark.parametrize("command,expose", [
    (["app/main.py"], "./app"), (["app/main.py"], "."),
    (["-m", "app.main"], "./app"),
    (["app/main.py"], "new=./app/.py-sandboxes")],
    ids=["script-dir", "cwd-above-it", "module-dir", "the-name-itself"])
@pytest.mark.parametrize("provider", ["subprocess", "landlock"])
def test_rules_that_let_the_program_make_the_next_runs_rule_file_are_refused(
        run_sb, tmp_cwd, command, expose, provider):
    """A rule file next to the script (or in the -m module's directory) is
    read before the current directory's (seed-spec 2.1.1). A program
    allowed to write that directory put one there saying os-sandbox=none,
    and its next run was not sandboxed. Such rules are now an error, as an
    absent include the program could make is; nothing runs."""
    app = tmp_cwd / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "main.py").write_text(
        PLANT.format(where=str(app / ".py-sandboxes")))
    rule = f"expose-{expose}" if "=" in expose else f"expose-rw={expose}"
    (tmp_cwd / ".py-sandboxes").write_text(f"os-sandbox={provider}\n{rule}\n")
    r = run_sb(command)
    assert r.returncode == 255 and "planted" not in r.stdout, r.stderr
    assert (f"the next run would read a rule file at {app}/.py-sandboxes "
            "before this one, and 'expose-rw=") in r.stderr, r.stderr
    assert not (app / ".py-sandboxes").exists()


def test_where_nothing_is_enforced_the_next_runs_rule_file_is_no_error(
        run_sb, tmp_cwd):
    """os-sandbox=none with the Python layer off confines nothing: the
    program may write anything, a rule file included, so the rules that
    say so are no error."""
    app = tmp_cwd / "app"
    app.mkdir()
    (app / "main.py").write_text("print('ran')\n")
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=none\npy-sandbox=false\nexpose-rw=./app\n")
    r = run_sb(["app/main.py"])
    assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr
    (tmp_cwd / ".py-sandboxes").write_text(
        "os-sandbox=none\nexpose-rw=./app\n")  # the Python layer on
    r = run_sb(["app/main.py"])
    assert r.returncode == 255 and "the next run would read" in r.stderr


def test_the_rule_file_in_the_scripts_writable_directory_is_kept(
        run_sb, tmp_cwd):
    """The way out the error names: the rule file moved next to the
    script, where it is one of python-sb's own files."""
    app = tmp_cwd / "app"
    app.mkdir()
    (app / "main.py").write_text(
        "try:\n" + "".join("    " + ln + "\n" for ln in PLANT.format(
            where=str(app / ".py-sandboxes")).splitlines()) +
        "except OSError as e:\n    print(type(e).__name__)\n")
    rules = "os-sandbox=landlock\nexpose-rw=./app\n"
    (app / ".py-sandboxes").write_text(rules)
    r = run_sb(["app/main.py"])
    assert (r.returncode, r.stdout) == (0, "RuleFileNotFoundError\n"), \
        r.stderr
    assert (app / ".py-sandboxes").read_text() == rules


@pytest.mark.parametrize("module,where", [
    ("pkg", "pkg"), ("pkg.mod", "pkg"), ("flat", None), ("nspkg.m", "nspkg")])
def test_the_rule_file_of_a_module(run_sb, tmp_cwd, module, where):
    for d in ("pkg", "nspkg"):
        (tmp_cwd / d).mkdir()
        (tmp_cwd / d / ".py-sandboxes").write_text("os-sandbox=none\n")
    (tmp_cwd / "pkg" / "__init__.py").write_text("")
    (tmp_cwd / "pkg" / "mod.py").write_text("")
    (tmp_cwd / "nspkg" / "m.py").write_text("")
    (tmp_cwd / "flat.py").write_text("")
    (tmp_cwd / ".py-sandboxes").write_text("os-sandbox=subprocess\n")
    r = run_sb(["--pysandboxes-explain", "-m", module])
    assert r.returncode == 0, r.stderr
    if where:
        assert f"# Provider: none, from {where}/.py-sandboxes(1)" in r.stdout
    else:
        assert "# Provider: subprocess, from .py-sandboxes(1)" in r.stdout
    # -I keeps the current directory out of sys.path: not searched there
    r = run_sb(["--pysandboxes-explain", "-I", "-m", module])
    assert "# Provider: subprocess, from .py-sandboxes(1)" in r.stdout


def test_a_missing_script_says_no_such_file(run_sb, tmp_cwd):
    """CPython reports a script it cannot open from errno: the guard's
    refusal must leave ENOENT there, not "[Errno 0] Success"."""
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n")
    r = run_sb(["nothere.py"])
    assert r.returncode == 2
    assert r.stderr.endswith(
        f"can't open file '{tmp_cwd}/nothere.py': [Errno 2] No such file "
        "or directory\n"), r.stderr


# partial mode's machine interface (python-sb(1)): the package reads
# settings, never the explain text, and hands the result mode to the
# launcher's writer
def test_settings_are_versioned_key_value_lines(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text(
        "remote-result-mode=objects\nos-sandbox=subprocess\n")
    r = run_sb(["--pysandboxes-settings", "-c", "raise SystemExit(3)"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "pysb-settings 1", "provider subprocess", "learning 0",
        "result-mode objects", "result-guard true"]


def test_learn_result_needs_a_learning_run(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("# enforced\n")
    r = run_sb(["--pysandboxes-learn-result=objects", "-c", "pass"])
    assert r.returncode == 255, r.stderr
    assert "the rules do not learn" in r.stderr
    assert (tmp_cwd / ".py-sandboxes").read_text() == "# enforced\n"
