"""Installation: a build configured for a temporary prefix installs the
launcher, the guard library, the pysandboxes package and the man pages,
and the installed python-sb guards a program with no build tree in reach.
(A separate build directory: `make install` would reconfigure build/.)"""
import os
import shutil
import subprocess

import pytest

from conftest import REPO


def test_install_into_a_prefix_and_run(tmp_path):
    if not shutil.which("meson") or not shutil.which("ninja"):
        pytest.skip("meson or ninja missing [core]")
    prefix, build = tmp_path / "prefix", tmp_path / "build"
    for argv in (["meson", "setup", str(build), f"--prefix={prefix}"],
                 ["ninja", "-C", str(build)],
                 ["meson", "install", "-C", str(build), "--quiet"]):
        r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, (argv, r.stdout[-2000:], r.stderr[-2000:])
    files = {str(p.relative_to(prefix)) for p in prefix.rglob("*")
             if p.is_file()}
    assert "bin/python-sb" in files
    assert any(f.endswith("python-sb/libpysb-guard.so") for f in files)
    assert any(f.endswith("python-sb/python/pysandboxes/e.py")
               for f in files)
    assert "share/man/man1/python-sb.1" in files
    assert "share/man/man5/py-sandboxes.5" in files
    work = tmp_path / "work"
    work.mkdir()
    (work / ".py-sandboxes").write_text("python-import=pysandboxes\n")
    r = subprocess.run(
        [str(prefix / "bin" / "python-sb"), "-c",
         "import pysandboxes, sys\nprint(pysandboxes.is_in_sandbox())\n"
         "try:\n    import os\nexcept ImportError as e:\n"
         "    print(type(e).__name__)\n"],
        cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "True\nRuleModuleNotFoundError\n"
