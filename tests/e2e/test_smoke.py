"""Smoke tests: the launcher starts, prints its help and rejects a usage
error with status 2 (spec 3.2, 3.4)."""

import pytest


@pytest.mark.parametrize("flag", ["--help", "-h", "-?"])
def test_help_exits_0_with_usage(run_sb, flag):
    r = run_sb([flag])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: python-sb"), r.stdout
    assert "--pysandboxes-config" in r.stdout
    assert "--pysandboxes-review" in r.stdout
    assert "$PYSB_PYTHON" in r.stdout


@pytest.mark.unprivileged
def test_help_as_unprivileged_user(run_sb):
    r = run_sb(["--help"])
    assert r.returncode == 0, r.stderr
    assert "usage: python-sb" in r.stdout


def test_config_option_without_value_is_usage_error(run_sb):
    r = run_sb(["--pysandboxes-config"])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr != ""
    assert r.stdout == ""
