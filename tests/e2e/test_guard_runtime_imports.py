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

from conftest import pyenv_minor

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


# The import system's inner doors, called by the program itself
# (weaknesses.md 151): every module that comes into existence is judged,
# whatever loaded it. The program holds only what start-up loaded (sys,
# os, _frozen_importlib...), through sys.modules; 'colorsys' (pure Python,
# no imports of its own), the frozen '__hello__', the builtin 'gc' and a
# module of the program's own archive are what no rule grants. Each case
# prints LOADED when the module's code ran and is usable.
INNER = ("learn=false\nos-sandbox=subprocess\npython-import=os, sys\n"
         "expose-ro=./own.zip\n")

INNER_PRELUDE = """\
import sys
M = sys.modules
fb, fe, os = M['_frozen_importlib'], M['_frozen_importlib_external'], M['os']
path = os.path.join(os.path.dirname(os.__file__), 'colorsys.py')
def loaded(m):
    print('LOADED', m.rgb_to_hsv(1, 0, 0))
"""

INNER_DOORS = {
    "find_and_load": "loaded(fb._find_and_load('colorsys', fb._gcd_import))",
    "bootstrap_load": "loaded(fb._load(fb._find_spec('colorsys', None)))",
    "load_module": "loaded(fe.SourceFileLoader('colorsys', path)"
                   ".load_module())",
    "exec_module": """\
        spec = fe.spec_from_file_location('colorsys', path)
        m = fb.module_from_spec(spec)
        spec.loader.exec_module(m)
        loaded(m)
        """,
    "module_type": """\
        m = type(sys)('colorsys')
        m.__file__ = path
        fe.SourceFileLoader('colorsys', path).exec_module(m)
        loaded(m)
        """,
    "loader_basics": """\
        m = type(sys)('colorsys')
        fe._LoaderBasics.exec_module(fe.SourceFileLoader('colorsys', path), m)
        loaded(m)
        """,
    "sourceless": """\
        pyc = fe.cache_from_source(path)
        if not os.path.exists(pyc):
            print('SKIP no', pyc)
            sys.exit()
        loaded(fe.SourcelessFileLoader('colorsys', pyc).load_module())
        """,
    # a granted name, the refused module's file
    "granted_name": """\
        fe.SourceFileLoader('os', path).load_module()
        loaded(M['os'])
        """,
    "granted_namespace": """\
        code = fe.SourceFileLoader('os', path).get_code('os')
        ns = {'__name__': 'os', '__builtins__': M['builtins']}
        type(loaded)(code, ns)()
        print('LOADED', ns['rgb_to_hsv'](1, 0, 0))
        """,
    # a link of the program's to the refused file, by a relative path
    "link": "loaded(fe.SourceFileLoader('os', 'cs.py').load_module())",
    "own_import": """\
        def imp(name, g=None, l=None, fromlist=(), level=0):
            return M.get(name) or fb._find_and_load(name, imp)
        M['builtins'].__import__ = imp
        import colorsys
        loaded(colorsys)
        """,
    "frozen": """\
        spec = fb.FrozenImporter.find_spec('__hello__')
        m = fb.module_from_spec(spec)
        fb.FrozenImporter.exec_module(m)
        print('LOADED __hello__')
        """,
    "init_frozen": """\
        fb._imp.init_frozen('__hello__')
        print('LOADED __hello__')
        """,
    "zipimport": """\
        zi = M['zipimport'].zipimporter('own.zip')
        loaded(zi.load_module('own_mod'))
        """,
    "zip_exec_module": """\
        zi = M['zipimport'].zipimporter('own.zip')
        if not hasattr(zi, 'exec_module'):
            print('SKIP zipimporter.exec_module is 3.10+')
            sys.exit()
        spec = fb.spec_from_loader('own_mod', zi)
        m = fb.module_from_spec(spec)
        zi.exec_module(m)
        loaded(m)
        """,
    "builtin_none": """\
        M['gc'] = None
        m = fb.BuiltinImporter.create_module(
            fb.ModuleSpec('gc', fb.BuiltinImporter, origin='built-in'))
        fb.BuiltinImporter.exec_module(m)
        print('LOADED', m.isenabled())
        """,
    # the codec search asks for 'encodings.' + a name: a str subclass's
    # __radd__ made it any top-level module, loaded as the runtime's
    "codec_search": """\
        class Name(str):
            def __radd__(self, other):
                return 'colorsys'
            def __contains__(self, item):
                return False
        M['encodings']._aliases['sbprobe'] = Name('sbprobe')
        try:
            M['codecs'].lookup('sbprobe')
        except LookupError:
            pass
        m = M.get('colorsys')
        if m is None:
            raise ImportError(\"Module named 'colorsys' is not allowed by "
                              \"a rule (not loaded)\")
        loaded(m)
        """,
    # a function of the module, made of the code its loader compiled, the
    # module body never run
    "function_code": """\
        code = fe.SourceFileLoader('colorsys', path).get_code('colorsys')
        fns = {c.co_name: c for c in code.co_consts
               if hasattr(c, 'co_code')}
        g = {'__builtins__': M['builtins'], 'ONE_THIRD': 1 / 3,
             'ONE_SIXTH': 1 / 6, 'TWO_THIRD': 2 / 3}
        f = type(loaded)(fns['rgb_to_hsv'], g)
        print('LOADED', f(1, 0, 0))
        """,
    "builtin_fake": """\
        M['gc'] = type(sys)('gc')
        m = fb.BuiltinImporter.create_module(
            fb.ModuleSpec('gc', fb.BuiltinImporter, origin='built-in'))
        print('LOADED', m.isenabled())
        """,
}


def own_zip(tmp_cwd):
    import zipfile
    with zipfile.ZipFile(tmp_cwd / "own.zip", "w") as z:
        z.writestr("own_mod.py", "def rgb_to_hsv(r, g, b):\n    return 0\n")


LINK = "expose-ro=./cs.py\n"


@pytest.mark.parametrize("door", list(INNER_DOORS))
def test_the_import_systems_inner_doors_are_judged(sandboxed, tmp_cwd,
                                                   python_exe, door):
    own_zip(tmp_cwd)
    std = subprocess.run([python_exe, "-c", "import os; print(os.__file__)"],
                         capture_output=True, text=True).stdout.strip()
    (tmp_cwd / "cs.py").symlink_to(std.rsplit("/", 1)[0] + "/colorsys.py")
    body = textwrap.dedent(INNER_DOORS[door]).rstrip("\n") + "\n"
    code = INNER_PRELUDE + "try:\n" + textwrap.indent(body, "    ") + \
        "except ImportError as e:\n    print('REFUSED', e)\n"
    r = sandboxed(INNER + LINK, code)
    if r.stdout.startswith("SKIP"):
        pytest.skip(r.stdout)
    assert "LOADED" not in r.stdout, r.stdout + r.stderr
    assert "Hello world" not in r.stdout
    # 3.10 names its frozen __hello__'s code "<frozen hello>"
    want = {"frozen": "__hello__, hello", "init_frozen": "__hello__, hello",
            "zipimport": "own_mod", "zip_exec_module": "own_mod",
            "builtin_none": "gc", "builtin_fake": "gc"}.get(door, "colorsys")
    assert any(f"REFUSED Module named '{w}' is not allowed by a rule"
               in r.stdout for w in want.split(", ")), r.stdout + r.stderr
    # what was granted still loads by the same door (the code
    # _imp.init_frozen runs by itself is the program's exec, which the
    # dynamic-code rule refuses on some CPythons)
    r = sandboxed(INNER + LINK + f"python-import={want}\n", code)
    assert "not allowed by a rule" not in r.stdout + r.stderr, r.stdout
    if door != "init_frozen":
        assert "LOADED" in r.stdout, r.stdout + r.stderr


LEGIT = textwrap.dedent("""\
    import sys, importlib, colorsys
    M = sys.modules
    fb, fe = M['_frozen_importlib'], M['_frozen_importlib_external']
    importlib.reload(colorsys)
    spec = fe.spec_from_file_location('colorsys', colorsys.__file__)
    m = fb.module_from_spec(spec)
    spec.loader.exec_module(m)
    sys.path.insert(0, 'own.zip')
    import own_mod
    print('OK', m.rgb_to_hsv(1, 0, 0), own_mod.rgb_to_hsv(1, 0, 0))
    """)


def test_granted_modules_still_load_by_every_door(sandboxed, tmp_cwd,
                                                  run_sb, python_exe):
    own_zip(tmp_cwd)
    rules = (INNER + "python-import=importlib, colorsys, own_mod, types, "
             "warnings\n"
             "python-api=ALLOW:importlib.reload\n")
    r = sandboxed(rules, LEGIT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OK (0.0, 1.0, 1) 0"
    # -m runs the module it names as the user's command, as a script
    r = run_sb([f"--python={python_exe}", "-m", "colorsys"])
    assert r.returncode == 0, r.stderr


def test_pure_python_pickle_loads_does_not_run(run_sb, tmp_cwd):
    # pyenv's 3.11 builds _pickle as an extension: the pure-Python
    # pickle.loads, loaded by hand, ran with no denier
    py = pyenv_minor("3.11")
    own_zip(tmp_cwd)
    (tmp_cwd / ".py-sandboxes").write_text(INNER)
    (tmp_cwd / "script.py").write_text(textwrap.dedent("""\
        import sys
        M = sys.modules
        fb = M['_frozen_importlib']
        def imp(name, g=None, l=None, fromlist=(), level=0):
            if level:
                name = fb._resolve_name(name, g['__package__'], level)
            m = M.get(name) or fb._find_and_load(name, imp)
            if fromlist:
                return fb._handle_fromlist(m, fromlist, imp)
            return M[name.partition('.')[0]]
        M['builtins'].__import__ = imp
        try:
            import pickle
            print('LOADED', pickle.loads(pickle.dumps({'k': (1, 2.5)})))
        except ImportError as e:
            print('REFUSED', e)
        """))
    r = run_sb([f"--python={py}", "script.py"])
    assert "LOADED" not in r.stdout, r.stdout
    assert ("REFUSED Module named 'pickle' is not allowed by a rule"
            in r.stdout), r.stdout + r.stderr


def test_learning_records_a_module_loaded_by_an_inner_door(run_sb, tmp_cwd):
    py = pyenv_minor("3.11")
    (tmp_cwd / "script.py").write_text(textwrap.dedent("""\
        import sys
        fb = sys.modules['_frozen_importlib']
        print(fb._find_and_load('colorsys', fb._gcd_import).rgb_to_hsv(1, 0, 0))
        """))
    first = run_sb([f"--python={py}", "script.py"])
    assert first.returncode == 0, first.stderr
    rules = (tmp_cwd / ".py-sandboxes").read_text()
    assert any(ln.startswith("python-import=") and "colorsys" in ln
               for ln in rules.splitlines()), rules
    second = run_sb([f"--python={py}", "script.py"])
    assert second.returncode == 0, (rules, second.stderr)
    assert second.stdout.strip() == "(0.0, 1.0, 1)"
