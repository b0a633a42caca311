"""Messages of the Python layer that say what to add (issue 14, item 6):
a C module importing another through PyCapsule_Import (_ssl needs _socket)
names the module and the rule, not "PyCapsule_Import could not import
module"; a refused C Unpickler is reported as pickle.Unpickler, the pure
Python one as pickle._Unpickler, not as pickle.loads(); a missing path
written absolute is shown absolute."""
import os
import re

import pytest

from conftest import pyenv_oldest, pyenv_newest

INTERPRETERS = [p for p in (
    "/usr/bin/python3",
    pyenv_oldest(),
    pyenv_newest(),
) if os.access(p, os.X_OK)]


@pytest.mark.parametrize("py", INTERPRETERS)
def test_a_capsule_import_names_the_module_and_the_rule(run_sb, tmp_cwd, py):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=_ssl\n")
    r = run_sb([f"--python={py}", "-c", "import _ssl"])
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert "PyCapsule_Import" not in r.stderr
    # 3.9 keeps the refusal itself; later versions replaced it
    assert last in (
        "pysandboxes.e.RuleModuleNotFoundError: Module named '_socket' is "
        "not allowed by a rule (the C module '_ssl' imports it): add "
        "python-import=_socket",
        "pysandboxes.e.RuleModuleNotFoundError: Module named '_socket' is "
        "not allowed by a rule"), last


UNPICKLE = """
import io, pickle
d = pickle.dumps(io.BytesIO)
for label, f in (("c", lambda: pickle.Unpickler(io.BytesIO(d)).load()),
                 ("py", lambda: pickle._Unpickler(io.BytesIO(d)).load()),
                 ("loads", lambda: pickle.loads(d))):
    try:
        f()
        print(label, "ALLOWED")
    except Exception as e:
        print(label, type(e).__name__, str(e).splitlines()[0])
print("plain", pickle.Unpickler(io.BytesIO(pickle.dumps([1]))).load())
"""


@pytest.mark.parametrize("py", INTERPRETERS)
def test_a_refused_unpickler_is_named_for_what_it_is(run_sb, tmp_cwd, py):
    (tmp_cwd / "u.py").write_text(UNPICKLE)
    (tmp_cwd / ".py-sandboxes").write_text("python-import=*\nexpose-ro=.\n")
    r = run_sb([f"--python={py}", "u.py"])
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines())
    deny = ("RuleApiPermissionError {}() is denied by the API guard "
            "(category: deserialization).")
    assert lines["c"] == deny.format("pickle.Unpickler")
    assert lines["py"] == deny.format("pickle._Unpickler")
    assert lines["loads"] == deny.format("pickle.loads")
    assert lines["plain"] == "[1]"  # no class named: nothing to judge
    # the name in the message is a rule that opens it
    (tmp_cwd / ".py-sandboxes").write_text(
        "python-import=*\nexpose-ro=.\npython-api=ALLOW:pickle.Unpickler\n")
    r = run_sb([f"--python={py}", "u.py"])
    assert r.returncode == 0, r.stderr
    assert "c ALLOWED" in r.stdout.splitlines()


def test_a_missing_absolute_path_is_shown_absolute(run_sb, tmp_cwd):
    (tmp_cwd / "a" / "b").mkdir(parents=True)
    (tmp_cwd / "a" / "b" / ".py-sandboxes").write_text(
        "expose-ro=/nonexistent-pysb\nexpose-ro=./missing\n")
    r = run_sb(["-c", "pass"], cwd=tmp_cwd / "a" / "b")
    assert r.returncode == 255
    assert ("In 'expose-ro=/nonexistent-pysb', path '/nonexistent-pysb' "
            "must exist.") in r.stderr
    assert "In 'expose-ro=./missing', path 'missing' must exist." \
        in r.stderr
    assert not re.search(r"'(\.\./)+nonexistent", r.stderr)
