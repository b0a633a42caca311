"""The rule review, end to end (issue 19 item 3, seed-spec 10.4):
`python-sb --pysandboxes-review` reads what `git diff` prints for rule
files, or two versions of a file, and grades every added rule high, medium
or low as the seed's rules-diff tool does, riskiest first, then the removed
ones; `--json` for machines. A rule learned under PYSB_LEARNED_BY carries
its test's name into the table.
"""
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import pyenv_minor

PY311 = pyenv_minor("3.11")

# The seed's categories (10.4), one example each: rule -> risk.
SEED_EXAMPLES = {
    "python-import=*": "high",
    "python-import=subprocess": "high",
    "python-import=ctypes": "high",
    "python-api=ALLOW:*": "high",
    "python-api=ALLOW:process-exec": "high",
    "net=ALLOW|TCP|*|443|OUT": "high",
    "net=ALLOW|TCP|0.0.0.0/0|*|OUT": "high",
    "net=ALLOW|TCP|::/0|*|OUT": "high",
    "expose-rw=~": "high",
    "expose-rw=$HOME": "high",
    "expose-rw=${HOME}": "high",
    "expose-rw=/": "high",
    "env=*": "high",
    "learn=audit.py-sandboxes": "high",
    "py-sandbox=false": "high",
    "remote-result-guard=false": "high",
    "os-sandbox=none": "high",
    "remote-result-mode=objects": "high",
    "eval-namespace=caller": "high",
    'include "common.py-sandboxes"': "medium",
    "python-api=ALLOW:subprocess.run": "medium",
    "net=ALLOW|TCP|example.com|443|OUT": "medium",
    "expose-rw=./out": "medium",
    "expose-new=./state.tmp": "medium",
    "expose-new=~/x": "medium",
    "expose-ro=~": "medium",
    "env=OPENAI_API_KEY": "medium",
    "env=DB_PASSWORD": "medium",
    "os-sandbox=subprocess": "medium",
    "net=DENY|TCP|*|*|OUT": "low",
    "python-api=DENY:process-exec": "low",
    "expose-ro=./docs": "low",
    "env=LANG": "low",
    "learn=false": "low",
    "python-import=json": "low",
}


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.email=t@t", "-c",
                           "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_cwd):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(tmp_cwd, "init", "-q")
    (tmp_cwd / ".py-sandboxes").write_text("python-import=json\n"
                                           "expose-ro=./data\n")
    (tmp_cwd / "README.md").write_text("python-import=ctypes\n")
    git(tmp_cwd, "add", ".")
    git(tmp_cwd, "commit", "-qm", "init")
    return tmp_cwd


def review(run_sb, *args, input=None):
    return run_sb(["--pysandboxes-review", *args], input=input)


def test_every_seed_example_is_graded_as_the_seed_grades_it(run_sb, repo):
    rules = "python-import=json\n" + "\n".join(SEED_EXAMPLES) + "\n"
    (repo / ".py-sandboxes").write_text(rules)
    diff = git(repo, "diff")
    r = review(run_sb, "--json", input=diff)
    assert r.returncode == 1, r.stderr  # something high was added
    out = json.loads(r.stdout)
    got = {x["rule"]: x["risk"] for x in out["added"]}
    assert got == SEED_EXAMPLES
    assert [x["rule"] for x in out["removed"]] == ["expose-ro=./data"]
    assert all(x["file"] == ".py-sandboxes" for x in out["added"])
    # riskiest first
    order = [x["risk"] for x in out["added"]]
    assert order == sorted(order, key=["invalid", "high", "medium",
                                       "low"].index)


def test_markdown_table_then_removed(run_sb, repo):
    (repo / ".py-sandboxes").write_text(
        "python-import=json\npython-import=requests\n"
        "net=ALLOW|TCP|*|443|OUT\n")
    (repo / "README.md").write_text("python-import=subprocess\n")
    git(repo, "diff", "--output=d.diff")
    r = review(run_sb, "d.diff")
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "| Risk | File | Rule | Why | Learned by |"
    assert lines[2].startswith(
        "| high | .py-sandboxes | `net=ALLOW\\|TCP\\|*\\|443\\|OUT` |")
    assert lines[3].startswith(
        "| low | .py-sandboxes | `python-import=requests` |")
    assert "Removed, which narrows the profile:" in lines
    assert "- `expose-ro=./data` (.py-sandboxes)" in lines
    # README.md is not a rule file: its change is not graded
    assert "subprocess" not in r.stdout


def test_two_files_and_exit_statuses(run_sb, tmp_cwd):
    (tmp_cwd / "old").write_text("python-import=json\nnet=DENY|TCP|*|*|OUT\n")
    (tmp_cwd / "new").write_text("# the same, reordered\n"
                                 "python-import=json  # kept\n"
                                 "expose-ro=./data\n")
    (tmp_cwd / "data").mkdir()
    r = review(run_sb, "old", "new")
    assert r.returncode == 0, r.stderr  # nothing high added
    assert "| low | new | `expose-ro=./data` | read access" in r.stdout
    # removing a denial widens: said apart from the narrowing removals
    assert ("Removed, which widens the profile (a denial or a lock):"
            in r.stdout)
    assert "- `net=DENY\\|TCP\\|*\\|*\\|OUT` (old)" in r.stdout
    r = review(run_sb, "old", "old")
    assert r.returncode == 0 and r.stdout == "No rule added or removed.\n"
    r = review(run_sb, "/dev/null", "new", "--json")
    assert r.returncode == 0
    assert [x["rule"] for x in json.loads(r.stdout)["added"]] == [
        "python-import=json", "expose-ro=./data"]


def test_bad_input_is_named(run_sb, tmp_cwd):
    r = review(run_sb, "missing.diff")
    assert r.returncode == 255
    assert "python-sb: open missing.diff: No such file or directory" in \
        r.stderr
    (tmp_cwd / "rules").write_text("python-import=json\n")
    r = review(run_sb, "rules")
    assert r.returncode == 2
    assert "not a unified diff" in r.stderr and "OLD NEW" in r.stderr
    r = review(run_sb, "--frobnicate")
    assert r.returncode == 2 and "unknown review option" in r.stderr
    r = review(run_sb, "a", "b", "c")
    assert r.returncode == 2
    (tmp_cwd / "bin").write_bytes(b"--- a\n+++ b\0\n")
    r = review(run_sb, "bin")
    assert r.returncode == 255 and "NUL" in r.stderr


def test_invalid_rule_is_flagged_with_the_parsers_message(run_sb, repo):
    (repo / ".py-sandboxes").write_text(
        "python-import=json\nexpose-ro=./data\nnet=ALLOW|TCP\n")
    r = review(run_sb, "--json", input=git(repo, "diff"))
    assert r.returncode == 1
    added = json.loads(r.stdout)["added"]
    assert added[0]["risk"] == "invalid"
    assert "net=ALLOW|TCP" in added[0]["why"]


def test_a_hostile_rule_cannot_forge_table_rows(run_sb, repo):
    (repo / ".py-sandboxes").write_text(
        "python-import=json\nexpose-ro=./data\n"
        "env=X=| low | .py-sandboxes | `ok` |\x1b[2J\n")
    r = review(run_sb, input=git(repo, "diff"))
    row = [ln for ln in r.stdout.splitlines() if "env=X" in ln]
    assert len(row) == 1 and row[0].count(" | ") == 4, r.stdout
    assert "\x1b" not in r.stdout


def test_learned_rules_name_their_test(run_sb, tmp_cwd):
    """A learning run under PYSB_LEARNED_BY writes '# Learned by'; the
    review of the change attributes the learned rules to it."""
    if not os.path.exists(PY311):
        pytest.skip("pyenv has no CPython 3.11 [core]")
    (tmp_cwd / "app.py").write_text(textwrap.dedent("""\
        import json, ctypes
        print(json.dumps(1))
        """))
    env = dict(os.environ, PYSB_LEARNED_BY="tests/test_app.py::test_run")
    r = run_sb([f"--python={PY311}", "--learn", "app.py"], env=env)
    assert r.returncode == 0, r.stderr
    new = (tmp_cwd / ".py-sandboxes").read_text()
    assert "# Learned by tests/test_app.py::test_run" in new
    r = review(run_sb, "--json", "/dev/null", ".py-sandboxes")
    added = json.loads(r.stdout)["added"]
    # ctypes imports _ctypes: both are learned, in the dangerous group
    ctypes_rule = [x for x in added
                   if x["rule"] == "python-import=_ctypes, ctypes"]
    assert ctypes_rule and ctypes_rule[0]["risk"] == "high", added
    assert ctypes_rule[0]["learned_by"] == "tests/test_app.py::test_run"
    # without the variable, no attribution line
    (tmp_cwd / ".py-sandboxes").unlink()
    env.pop("PYSB_LEARNED_BY")
    r = run_sb([f"--python={PY311}", "--learn", "app.py"], env=env)
    assert r.returncode == 0, r.stderr
    assert "# Learned by" not in (tmp_cwd / ".py-sandboxes").read_text()
