"""The start-up profile (make profile, issue 20): $PYSB_PROFILE makes the
launcher and the guard print their phases; the program never sees the
start time handed to the guard, and without the variable nothing is
printed."""
import os

import pytest

from conftest import landlock_abi

PROGRAM = ("import os, sys; "
           "print(sorted(k for k in os.environ if k.startswith('PYSB')))")


def marks(stderr):
    out = {}
    for line in stderr.splitlines():
        if line.startswith("pysb-profile "):
            who, *fields = line.split()[1:]
            out[who] = [f.partition("=")[0] for f in fields]
            assert all(float(f.partition("=")[2]) >= 0 for f in fields)
    return out


@pytest.mark.parametrize("provider", ["subprocess", "landlock"])
def test_profile_marks_each_phase(run_sb, tmp_cwd, provider):
    if provider == "landlock" and not landlock_abi():
        pytest.skip("the kernel has no Landlock")
    (tmp_cwd / ".py-sandboxes").write_text("python-import=os\n")
    r = run_sb([f"--os-sandbox={provider}", "-c", PROGRAM],
               env=dict(os.environ, PYSB_PROFILE="1"))
    assert r.returncode == 0, r.stderr
    # the guard's start time was the launcher's to give, not the program's
    assert r.stdout == "[]\n"
    got = marks(r.stderr)
    launcher = ["cli", "interp", "policy", "blob-env"]
    if provider == "landlock":
        launcher += ["fork", "selfprotect", "caps", "landlock", "seccomp",
                     "handover"]
    assert got["launcher"] == launcher, r.stderr
    assert got["guard"] == ["guard-start", "guard-read", "guard-capi",
                            "guard-policy", "guard-armed"], r.stderr


def test_no_profile_without_the_variable(run_sb, tmp_cwd):
    (tmp_cwd / ".py-sandboxes").write_text("python-import=os\n")
    env = {k: v for k, v in os.environ.items() if k != "PYSB_PROFILE"}
    r = run_sb(["--os-sandbox=subprocess", "-c", PROGRAM], env=env)
    assert r.returncode == 0, r.stderr
    assert "pysb-profile" not in r.stderr
    assert r.stdout == "[]\n"

