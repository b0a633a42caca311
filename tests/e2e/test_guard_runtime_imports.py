"""What the runtime imports for itself, and what it must not import for the
program (guard/imports.c): the codec search loads only the codecs of the
encodings package's own directory, whatever the program appended to its
__path__ (F1); an import, eval or exec with no Python frame (a C callable
the program handed to atexit or to a new thread) is the program's (F3); and the
standard library's modules that reach files, processes or the network
without an audit event need the native grant, not a python-import= rule
(src/policy/modtab.c, F2/F4). The evidence is seen from outside: a marker
file the program would write with what it obtained, and the modules it
found in sys.modules."""
import subprocess
import textwrap

import pytest

EMPTY = "learn=false\nos-sandbox=subprocess\nexpose-rw=./out\n"

# Only lookups in sys.modules: the program imports nothing itself.
CODEC_SEARCH = textwrap.dedent("""\
    import sys
    M = sys.modules
    os = M['os']
    enc = M['encodings']
    stdlib = os.path.dirname(os.__file__)
    enc.__path__ += [stdlib, stdlib + '/lib-dynload']
    for name in ['subprocess', 'socket', 'readline', 'tkinter']:
        try:
            'x'.encode(name)
        except Exception:
            pass
    rl = M.get('readline') or M.get('encodings.readline')
    if rl:
        rl.add_history('escaped')
        rl.write_history_file('out/marker')
    print(sorted(k for k in M if k in (
        '_posixsubprocess', '_socket', 'select', 'readline', '_tkinter',
        'encodings.subprocess', 'encodings.socket', 'encodings.readline',
        'encodings.tkinter')))
    """)


def test_the_codec_search_loads_no_module_from_an_extended_path(
        sandboxed, tmp_cwd):
    (tmp_cwd / "out").mkdir()
    r = sandboxed(EMPTY, CODEC_SEARCH)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"
    assert not (tmp_cwd / "out" / "marker").exists()


def test_the_codecs_still_load_without_a_rule(sandboxed, tmp_cwd):
    (tmp_cwd / "out").mkdir()
    r = sandboxed(EMPTY, textwrap.dedent("""\
        import sys
        c = sys.modules['codecs']
        print('b\u00fccher.de'.encode('idna'), 'x'.encode('euc_jp'),
              c.encode(b'z', 'bz2')[:3], c.encode(b'x', 'base64'),
              c.encode('a', 'rot13'))
        """))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("b'xn--bcher-kva.de' b'x' b'BZh' "
                                "b'eA==\\n' n")


# A C callable run by the interpreter later has no Python frame.
FRAMELESS = {
    "atexit-import": """\
        atexit.register(use)
        atexit.register(__import__, 'readline')
        """,
    # a weakref callback fired by a del in the module runs under the
    # module's frame: a thread started on a C callable has none at all
    "thread-import": """\
        T = M['_thread']
        nap = T.allocate_lock()
        nap.acquire()
        done = []
        sys.unraisablehook = lambda u: (
            done.append(1), print(u.exc_value, file=sys.stderr))
        T.start_new_thread(__import__, ('readline',))
        for _ in range(500):
            if 'readline' in M or done:
                break
            nap.acquire(timeout=0.01)
        use()
        """,
    "atexit-eval": """\
        atexit.register(eval,
            "open('out/marker', 'w').write('escaped')", {})
        """,
    "atexit-exec": """\
        atexit.register(exec,
            "open('out/marker', 'w').write('escaped')", {})
        """,
}


@pytest.mark.parametrize("how", list(FRAMELESS))
def test_a_frameless_call_is_judged_as_the_program(sandboxed, tmp_cwd, how):
    (tmp_cwd / "out").mkdir()
    code = textwrap.dedent("""\
        import sys
        M = sys.modules
        if %r.startswith('atexit'):
            import atexit
        def use():
            rl = M.get('readline')
            if rl:
                rl.add_history('escaped')
                rl.write_history_file('out/marker')
        """ % how) + textwrap.dedent(FRAMELESS[how])
    # atexit is not loaded at start by every interpreter: a rule for it
    # (the call it makes later is what is judged)
    rules = EMPTY + ("python-import=atexit\n" if "atexit" in how else "")
    if how.startswith("thread"):
        rules += "python-api=ALLOW:_thread.start_new_thread\n"
    r = sandboxed(rules, code)
    assert not (tmp_cwd / "out" / "marker").exists(), r.stderr
    assert ("not allowed by a rule" in r.stderr or
            "is denied by the API guard" in r.stderr), r.stderr


def test_a_compiled_main_program_runs_and_stays_judged(run_sb, tmp_cwd,
                                                       python_exe):
    """`python-sb x.pyc`: the interpreter reads a compiled main program
    with marshal, frameless, and the guard refused it as bytecode built at
    run time ("RuntimeError: Bad code object in .pyc file", CPython's
    wording for any failed read). It runs now; the read ends the
    interpreter's start, so a frameless eval registered by the program is
    still the program's."""
    (tmp_cwd / "out").mkdir()
    src = tmp_cwd / "prog.py"
    src.write_text(textwrap.dedent("""\
        import atexit
        print("ran", __name__)
        atexit.register(eval,
            "open('out/marker', 'w').write('escaped')", {})
        """))
    r = subprocess.run([python_exe, "-c",
                        "import py_compile, sys; "
                        "py_compile.compile(sys.argv[1], sys.argv[2])",
                        str(src), str(tmp_cwd / "prog.pyc")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    src.unlink()
    (tmp_cwd / ".py-sandboxes").write_text(EMPTY +
                                           "python-import=atexit\n")
    r = run_sb([f"--python={python_exe}", "prog.pyc"])
    assert r.stdout == "ran __main__\n", r.stderr
    assert "Bad code object" not in r.stderr, r.stderr
    assert "builtins.eval() is denied by the API guard" in r.stderr, \
        r.stderr
    assert not (tmp_cwd / "out" / "marker").exists(), r.stderr


def has_module(python_exe, name):
    return subprocess.run([python_exe, "-c", f"import {name}"],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("module,rules", [
    ("readline", "python-import=readline"),
    ("_tkinter", "python-import=tkinter, _tkinter"),
    ("_curses", "python-import=curses, _curses"),
    ("_posixshmem", "python-import=_posixshmem"),
])
def test_a_module_acting_outside_unaudited_needs_the_native_grant(
        sandboxed, tmp_cwd, python_exe, module, rules):
    if not has_module(python_exe, module):
        pytest.skip(f"{python_exe} has no {module}")
    (tmp_cwd / "out").mkdir()
    code = textwrap.dedent(f"""\
        import sys
        try:
            import {module} as m
        except ImportError as e:
            print(type(e).__name__, e)
        else:
            print('imported')
            if hasattr(m, 'write_history_file'):
                m.add_history('escaped')
                m.write_history_file('out/marker')
        """)
    r = sandboxed(EMPTY + rules + "\n", code)
    assert r.returncode == 0, r.stderr
    assert not (tmp_cwd / "out" / "marker").exists()
    assert r.stdout.startswith(
        f"RuleModuleNotFoundError Module named '{module}' is native code "
        "that "), r.stdout
    assert r.stdout.rstrip().endswith(
        "it needs the rule python-api=ALLOW:native, a python-import= rule "
        "is not enough"), r.stdout
    # the grant the message names is enough
    r = sandboxed(EMPTY + rules + "\npython-api=ALLOW:native\n", code)
    assert r.stdout.startswith("imported"), r.stdout + r.stderr
