"""CPython behaves as CPython under the allow-all policy (issue 14, item
5): each case runs one script under plain CPython and under python-sb with
every rule open, and the two outputs must be the same."""
import os
import subprocess

import pytest

from conftest import pyenv_newest, pyenv_oldest, sb_path, scaled

INTERPRETERS = [p for p in (
    "/usr/bin/python3",
    pyenv_oldest(),
    pyenv_newest(),
) if os.access(p, os.X_OK)]

ALLOW_ALL = ("expose-rw=/\nnet=ALLOW|*|*|*|*\npython-import=*\n"
             "python-api=ALLOW:*\nenv=*=${*}\n")

CASES = {
    # l -> l is listed, so shutil.rmtree removes it (test_pathlib)
    "self_symlink": """
        import os, shutil
        os.mkdir('d'); os.symlink('l', 'd/l'); open('d/f', 'w').close()
        print(sorted(os.listdir('d')), sorted(e.name for e in os.scandir('d')))
        shutil.rmtree('d')
        print(os.path.exists('d'))
        """,
    # a link into itself: readlink answers, realpath stops where the loop
    # starts (test_posixpath.test_realpath_symlink_loops)
    "symlink_loop": """
        import os, posixpath
        os.symlink(os.path.abspath('a') + '/b', 'a')
        print(os.readlink('a') == os.path.abspath('a') + '/b')
        print(posixpath.realpath('a') == os.path.abspath('a') + '/b')
        """,
    # a loop of links met on the way fails with ELOOP, as the call would
    # (test_pathlib.test_resolve_loop), not with the guard's refusal
    "symlink_loop_eloop": """
        import os, pathlib
        os.symlink('x/inside', 'x')
        try:
            print(pathlib.Path('x').resolve(strict=True))
        except (OSError, RuntimeError) as e:  # RuntimeError before 3.13
            print(type(e).__name__, getattr(e, 'errno', None))
        try:
            os.stat('x')
        except OSError as e:
            print(type(e).__name__, e.errno)
        """,
    # an unclosed scandir iterator warns; a closed or exhausted one does
    # not (test_os.test_resource_warning)
    "scandir_warning": """
        import gc, os, warnings
        os.mkdir('d'); open('d/a', 'w').close(); open('d/b', 'w').close()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            it = os.scandir('d'); next(it); del it; gc.collect()
            print([(x.category.__name__, str(x.message).split(' <')[0])
                   for x in w])
        with warnings.catch_warnings():
            warnings.simplefilter('error', ResourceWarning)
            it = os.scandir('d'); list(it); del it
            it = os.scandir('d'); it.close(); del it
            with os.scandir('d') as it:
                pass
            del it; gc.collect()
        print('quiet')
        """,
    # the guarded functions keep their signature, doc and module, and
    # pickle by name (test_inspect, test_pickle, multiprocessing)
    "signature_pickle": """
        import inspect, os, pickle
        for f in (eval, exec, compile, __import__, os.stat, os.lstat,
                  os.listdir, os.scandir, os.access, os.readlink):
            try:
                sig = inspect.signature(f)
            except ValueError as e:  # 3.9's __import__ has none either
                sig = e
            print(f.__name__, f.__module__, sig,
                  pickle.loads(pickle.dumps(f)) is f,
                  (f.__doc__ or '').splitlines()[:1])
        """,
}


def run_both(py, tmp_path, body):
    import textwrap
    out = []
    for label in ("plain", "sandboxed"):
        d = tmp_path / label
        d.mkdir()
        (d / "case.py").write_text(textwrap.dedent(body))
        if label == "plain":
            argv = [py, "case.py"]
        else:
            (d / ".py-sandboxes").write_text(ALLOW_ALL)
            argv = [str(sb_path()), f"--python={py}", "case.py"]
        r = subprocess.run(argv, cwd=d, capture_output=True, text=True,
                           timeout=120)
        out.append((r.returncode, r.stdout, r.stderr))
    return out


@pytest.mark.parametrize("py", INTERPRETERS)
@pytest.mark.parametrize("case", list(CASES))
def test_same_as_plain_cpython(tmp_path, py, case):
    plain, sandboxed = run_both(py, tmp_path, CASES[case])
    assert plain[0] == 0, plain
    assert sandboxed == plain


# What a denied function shows the program: its name, repr, signature and
# doc as plain CPython's (os.popen, os.execl... are Python functions: their
# signature is read from their code and defaults), and pickle.dumps names
# it where it is; the call itself is still refused.
DENIED_PROBE = """
import inspect, os, pickle, sys
C = (os.fork, os.system, os.execv, os.execve, sys._getframe)
for f in C + (os.popen, os.execl, os.execvpe, os.spawnv):
    try:
        sig = str(inspect.signature(f))
    except ValueError as e:
        sig = 'none'
    # a Python function's denier is a builtin: its repr says so
    print(f.__name__, repr(f) if f in C else '', sig,
          (f.__doc__ or '').splitlines()[:1])
    if SANDBOXED:
        d = pickle.dumps(f)
        print('  pickles', pickle.loads(d) is f, f.__module__.encode() in d)
try:
    os.system('true')
    print('system ran')
except Exception as e:
    print(type(e).__name__)
"""


@pytest.mark.parametrize("py", INTERPRETERS)
def test_a_denied_function_reads_and_pickles_as_the_original(tmp_path, py):
    """Issue 14 item 5, for the deniers: a function the API guard refuses
    (os.fork under an empty policy) was a method of a PyCapsule: no
    signature, "cannot pickle 'PyCapsule' object", so a library that
    introspects or sends such a function broke before it called it."""
    plain = subprocess.run([py, "-c", "SANDBOXED = 0\n" + DENIED_PROBE],
                           cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert plain.returncode == 0, plain.stderr
    (tmp_path / ".py-sandboxes").write_text(
        "python-import=*\npython-api=ALLOW:deserialization\n")
    r = subprocess.run([str(sb_path()), f"--python={py}", "-c",
                        "SANDBOXED = 1\n" + DENIED_PROBE],
                       cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln for ln in lines if not ln.startswith("  ")][:-1] == \
        plain.stdout.splitlines()[:-1]
    assert [ln for ln in lines if ln.startswith("  ")] == \
        ["  pickles True True"] * 9
    assert plain.stdout.splitlines()[-1] == "system ran"
    assert lines[-1] == "RuleApiPermissionError"


@pytest.mark.parametrize("provider", ["subprocess", "landlock"])
@pytest.mark.parametrize("py", INTERPRETERS)
def test_an_explicit_rule_on_the_stdlib_gives_what_it_says(tmp_path, py,
                                                           provider):
    """The interpreter's tree is exposed read-only implicitly, and that
    wins over expose-rw=/ (it is longer): it protects later runs from a
    tampered standard library. A rule naming the tree itself decides, and
    --pysandboxes-explain says which rule decides."""
    if os.geteuid() != 0:
        pytest.skip("writing into the standard library needs root")
    stdlib = subprocess.run(
        [py, "-c", "import os; print(os.path.dirname(os.__file__))"],
        capture_output=True, text=True, check=True).stdout.strip()
    stdlib = os.path.realpath(stdlib)
    target = os.path.join(stdlib, f"pysb_compat_probe_{os.getpid()}.py")
    code = f"open({target!r}, 'w').write('x = 1\\n')"
    try:
        (tmp_path / ".py-sandboxes").write_text(
            ALLOW_ALL + f"os-sandbox={provider}\n")
        r = subprocess.run([str(sb_path()), f"--python={py}", "-c", code],
                           cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
        if provider == "landlock" and r.returncode == 255:
            pytest.skip(f"landlock is not available here: {r.stderr}")
        assert r.returncode == 1 and "RulePermissionError" in r.stderr
        assert not os.path.exists(target)
        ex = subprocess.run([str(sb_path()), f"--python={py}",
                             "--pysandboxes-explain", "-c", "pass"],
                            cwd=tmp_path, capture_output=True, text=True)
        assert (f"#   Standard library {stdlib}: read-only, the implicit "
                "exposure of the interpreter's tree (<python>)") in ex.stdout
        (tmp_path / ".py-sandboxes").write_text(
            ALLOW_ALL + f"expose-rw={stdlib}\nos-sandbox={provider}\n")
        r = subprocess.run([str(sb_path()), f"--python={py}", "-c", code],
                           cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert os.path.exists(target)  # seen from outside
        ex = subprocess.run([str(sb_path()), f"--python={py}",
                             "--pysandboxes-explain", "-c", "pass"],
                            cwd=tmp_path, capture_output=True, text=True)
        assert (f"#   Standard library {stdlib}: read-write, rule "
                f"'expose-rw={stdlib}' from .py-sandboxes(6)") in ex.stdout
    finally:
        if os.path.exists(target):
            os.unlink(target)


def test_cpython_regression_tests_quick():
    """make compat's time-boxed part (scripts/compat --quick): a few of
    CPython's own test modules give the same results plain and under the
    allow-all policy, on 3.9 and 3.13."""
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(repo, "scripts",
                                                     "compat"),
                        "--quick", "--build", str(sb_path().parent)],
                       capture_output=True, text=True, timeout=scaled(1800))
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 differ, 0 broken" in r.stdout.splitlines()[-1], r.stdout
