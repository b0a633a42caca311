/* imports.c - the import guard (py-sandboxes(5), python-import=): every import
 * whose top-level name no python-import= rule grants is refused, whether or not
 * the module is loaded already.
 *
 * Three doors: builtins.__import__ (every import statement, and C code that
 * imports through PyImport_Import) and _frozen_importlib._gcd_import
 * (importlib.import_module) are wrapped, so a cached module is judged too;
 * the "import" audit event is the backstop for loads that reach the import
 * system another way. After each import through a wrapper, the families are
 * told, so that wrappers land in freshly loaded modules before the import
 * statement returns.
 *
 * Those doors are the import statement's; the program can call the import
 * system's inner functions itself (_find_and_load, _load, a loader's
 * load_module or exec_module, FrozenImporter, zipimport), which raise no
 * event. So every module is judged where it comes into existence, the
 * chokes that every loader passes (weaknesses.md 151):
 *   - a Python-code module (source, .pyc, frozen, an archive's) exists once
 *     its body's code runs: exec and eval of a code object in a namespace
 *     (the wrappers, api.c, with the namespace; the "exec" event), a
 *     function made of it ("function.__new__"), _imp.init_frozen. It is
 *     judged by the module its file is, where the guard knows the tree
 *     (the standard library and the site-packages of sys.path as they
 *     were at arming, frozen modules: by real path, so a granted name
 *     given to a refused file is refused), and by its namespace's
 *     __name__; the runtime's exempt loads are remembered at their
 *     "import" event, and -m's module is the user's command;
 *   - a C extension at _imp.create_dynamic (below); a builtin at
 *     _imp.create_builtin, where only a module made before the guard armed
 *     or by that door since counts as loaded, never what sys.modules
 *     holds (the program puts a None there).
 *
 * A C extension is judged by what it is, not by the name its loader is
 * given: _imp.create_dynamic, the one door every loader of a shared object
 * goes through (ExtensionFileLoader, module_from_spec, a spec built by
 * hand), reads the file (extmod.c): the PyInit_ symbols it exports and the
 * file it really is. python-sb's own modules are recognised by that file,
 * never by the "pysandboxes." prefix; a module that hands out raw memory by
 * itself (modtab.c: _ctypes, _cffi_backend, CPython's _test* helpers...)
 * needs the native grant whatever it is called, and no extension is loaded
 * from a tree the program may write.
 *
 * The runtime's own imports (the codec search, 3.13's REPL, runpy for -m)
 * need no rule, but only the module it asked for, from the standard
 * library's directory as found when the guard armed; what that module
 * imports is the runtime's only while its own file runs. An import with
 * no Python frame is the program's unless it is one the interpreter's C
 * code makes by itself (runtime_import).
 *
 * Learning records the imports the enforcing run will judge: through a
 * wrapper once it succeeded, and a load only the backstop sees (C code
 * below the import statement) at its event.
 */
#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "api_registry.h"
#include "extmod.h"
#include "fsrules.h"
#include "modtab.h"

/* Always importable: the interpreter's own, and python-sb's package. A
 * submodule of a kept module is still judged (C7), except ours. */
static bool kept(const char *name)
{
	return strcmp(name, "builtins") == 0 || strcmp(name, "sys") == 0 ||
	       strcmp(name, "__main__") == 0;
}

/* The native grant for module 'name' ('file' and 'symbol' say how it was
 * recognised when the name alone did not): 0 or -1 (raised). A module
 * that reaches outside without audit events (modtab.c) says what it
 * reaches, so that the grant asked for is not taken for a mistake. */
static int native_grant(const char *name, const char *file,
			const char *symbol)
{
	const char *outside = sb_modtab_outside(symbol ? symbol : name);
	char what[256], msg[2 * PATH_MAX + 768];
	int open = sb_api_native_open();

	if (open != 0)
		return open < 0 ? -1 : 0;
	if (outside)
		snprintf(what, sizeof(what),
			 "native code that %s without an audit event the "
			 "guard judges",
			 outside);
	else
		snprintf(what, sizeof(what),
			 "native code with raw memory access");
	if (file)
		snprintf(msg, sizeof(msg),
			 "Module named '%.512s' is %s (its file '%.4096s' "
			 "defines PyInit_%.512s): it needs the rule "
			 "python-api=ALLOW:native, a python-import= rule is "
			 "not enough",
			 name, what, file, symbol);
	else
		snprintf(msg, sizeof(msg),
			 "Module named '%.512s' is %s: it needs the rule "
			 "python-api=ALLOW:native, a python-import= rule is "
			 "not enough",
			 name, what);
	sb_guard_note("import", name, NULL, "python-api=ALLOW:native");
	return sb_guard_raise(SB_EXC_MODULE, msg, name);
}

/* Learning: the top-level name the last judge() would have refused. */
static __thread char learn_pending[256];

/* Learning: the top-level name the innermost wrapper is importing (its
 * own load raises the "import" event too, and the wrapper records it once
 * it succeeded), else empty. */
static __thread char wrapping[256];

/* The loads the runtime's exemptions let through at their "import" event
 * (sb_imports_event): their code runs inside the load that follows, in
 * this thread, where the frames no longer say whose import it is (the
 * program calling _find_and_load itself looks the same). A ring: the
 * oldest is dropped when full, and its load is then judged as the
 * program's (fails closed). */
#define RUNTIME_LOADS 16
static __thread char runtime_loads[RUNTIME_LOADS][128];
static __thread unsigned runtime_next;

static void runtime_load_allowed(const char *name)
{
	if (strlen(name) < sizeof(runtime_loads[0]))
		strcpy(runtime_loads[runtime_next++ % RUNTIME_LOADS], name);
}

static bool runtime_load(const char *name)
{
	size_t i;

	for (i = 0; i < RUNTIME_LOADS; i++)
		if (strcmp(runtime_loads[i], name) == 0 && name[0])
			return true;
	return false;
}

/* Take the pending name (empty when none). */
static void take_pending(char out[256])
{
	memcpy(out, learn_pending, sizeof(learn_pending));
	learn_pending[0] = '\0';
}

static void learn_success(const char *top, PyObject *res)
{
	if (res && top[0])
		sb_learn_record("import", top, NULL);
}

/* The runtime's own packages, which import as the runtime does: the
 * codec registry and 3.13's REPL. */
static bool runtime_package(const char *top)
{
	return strcmp(top, "encodings") == 0 || strcmp(top, "_pyrepl") == 0;
}

/* May the runtime load 'name' (absolute) without a rule? Any top-level
 * name it asks for (its own code names them: stringprep, _codecs_jp), but
 * a submodule of one of its packages only when that package's directory
 * in the standard library found when the guard armed holds it as a file
 * (<stdlib>/encodings/idna.py): the name encodings.search_function asks
 * for is the program's ("x".encode("subprocess")), and so is the
 * package's __path__, which it may have extended with any directory. */
/* Is the code importing the codec search itself (encodings/__init__.py's
 * search_function)? Its name is made from one the program chooses
 * ('encodings.' + a str subclass's __radd__, an alias the program wrote in
 * encodings._aliases): it loads encodings' own modules, nothing else. */
static bool codec_search_caller(void)
{
	char buf[PATH_MAX];

	return sb_g.stdlib && sb_guard_caller_file(buf) > 0 &&
	       strncmp(buf, sb_g.stdlib, strlen(sb_g.stdlib)) == 0 &&
	       strcmp(buf + strlen(sb_g.stdlib), "/encodings/__init__.py") == 0;
}

static bool runtime_may_load(const char *name)
{
	size_t n = strcspn(name, "."), i;
	const char *sub = name + n + 1;
	char path[PATH_MAX], top[16];
	struct stat st;

	/* a top-level name: the codec modules' own (stringprep), never one
	 * the codec search was made to ask for (weaknesses 151) */
	if (name[n] == '\0' || n >= sizeof(top))
		return strcmp(name, "encodings") == 0 || !codec_search_caller();
	memcpy(top, name, n);
	top[n] = '\0';
	if (!runtime_package(top))
		return !codec_search_caller();
	for (i = 0; sub[i]; i++)
		if (!(isalnum((unsigned char)sub[i]) || sub[i] == '_'))
			return false; /* a deeper name: they have none */
	if (!i || !sb_g.stdlib ||
	    (size_t)snprintf(path, sizeof(path), "%s/%.*s/%s.py", sb_g.stdlib,
			     (int)n, name, sub) >= sizeof(path))
		return false;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* 0 allowed, -1 refused; 'name' is absolute ("json.decoder"). */
static int judge(const char *name)
{
	const struct sb_policy *p = sb_g.policy;
	char top[256], msg[400];
	size_t n = strcspn(name, "."), i;
	bool native;

	if (n == 0 || n >= sizeof(top))
		return 0; /* not a name the import system accepts anyway */
	memcpy(top, name, n);
	top[n] = '\0';
	if (strcmp(top, "pysandboxes") == 0)
		return sb_guard_load_package();
	/* the runtime's own packages: the codec registry (looking up an
	 * encoding, idna for host names, must not need a rule) and the REPL
	 * of 3.13; only what their directory holds, not what the program
	 * appended to their __path__ (F1: encodings.subprocess) */
	if (runtime_package(top) && runtime_may_load(name))
		return 0;
	/* a raw-memory module needs the import rule and the native grant:
	 * the first missing one is named */
	native = sb_modtab_is_native(top);
	if (p->import_all || (kept(name)))
		return native ? native_grant(top, NULL, NULL) : 0;
	for (i = 0; i < p->imports.n; i++)
		if (strcmp(p->imports.v[i].name, top) == 0)
			return native ? native_grant(top, NULL, NULL) : 0;
	if (sb_g.learning) {
		if (native)
			native_grant(top, NULL, NULL); /* records it */
		/* recorded by the wrapper once the import succeeded: a module a
		 * library only tries (try: import brotli) is not learned */
		snprintf(learn_pending, sizeof(learn_pending), "%s", top);
		return 0;
	}
	snprintf(msg, sizeof(msg), "python-import=%s", top);
	sb_guard_note("import", top, NULL, msg);
	snprintf(msg, sizeof(msg), "Module named '%s' is not allowed by a rule",
		 top);
	return sb_guard_raise(SB_EXC_MODULE, msg, top);
}

/* C code that imports through PyCapsule_Import (_ssl needs _socket's C
 * API) loses the refusal: CPython replaces it with "PyCapsule_Import could
 * not import module". When the rules are why, say so again, naming the
 * module that needed it. Called with the import's exception set. */
static void capsule_refusal(PyObject *importer)
{
	static const char pre[] = "PyCapsule_Import could not import module \"";
	PyObject *t = NULL, *v = NULL, *tb = NULL, *s;
	char name[256], who[PATH_MAX], msg[PATH_MAX + 600];
	const char *m, *q;
	size_t n;

	if (!py.PyErr_Occurred())
		return;
	py.PyErr_Fetch(&t, &v, &tb);
	s = v ? py.PyObject_Str(v) : NULL;
	m = s ? py.PyUnicode_AsUTF8AndSize(s, NULL) : NULL;
	q = m && strncmp(m, pre, sizeof(pre) - 1) == 0
		    ? strchr(m + sizeof(pre) - 1, '"')
		    : NULL;
	n = q ? (size_t)(q - (m + sizeof(pre) - 1)) : 0;
	if (n && n < sizeof(name)) {
		memcpy(name, m + sizeof(pre) - 1, n);
		name[n] = '\0';
	}
	py.Py_DecRef(s);
	py.PyErr_Clear();
	if (!n || n >= sizeof(name) || judge(name) == 0) {
		py.PyErr_Restore(t, v, tb);
		return;
	}
	/* judge() raised the rule's error */
	py.Py_DecRef(t);
	py.Py_DecRef(v);
	py.Py_DecRef(tb);
	name[strcspn(name, ".")] = '\0';
	if (sb_modtab_is_native(name) || !importer ||
	    sb_arg_path(importer, who) != 1 ||
	    strlen(who) >= 256)
		return;
	py.PyErr_Clear();
	snprintf(msg, sizeof(msg),
		 "Module named '%s' is not allowed by a rule (the C module "
		 "'%s' imports it): add python-import=%s",
		 name, who, name);
	sb_guard_no_log(); /* judge() logged it */
	sb_guard_raise(SB_EXC_MODULE, msg, name);
}

static void module_loaded(void)
{
	sb_api_module_loaded();
	sb_net_module_loaded();
}

/* ---- builtins.__import__(name, globals=None, locals=None, fromlist=(),
 *      level=0) ---- */

/* The absolute name of a relative import, through importlib's own
 * functions, so that the rules judge what will really be loaded (C6). */
static PyObject *resolve_relative(PyObject *name, PyObject *globals,
				  PyObject *level)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *boot = mods ? py.PyDict_GetItemString(mods,
							"_frozen_importlib")
			      : NULL;
	PyObject *calc, *resolve, *package, *args, *res = NULL;

	if (!boot)
		return NULL;
	calc = py.PyObject_GetAttrString(boot, "_calc___package__");
	resolve = py.PyObject_GetAttrString(boot, "_resolve_name");
	if (!calc || !resolve)
		goto out;
	package = sb_guard_call1(calc, globals);
	if (!package)
		goto out;
	args = py.PyTuple_New(3);
	if (!args) {
		py.Py_DecRef(package);
		goto out;
	}
	py.Py_IncRef(name);
	py.PyTuple_SetItem(args, 0, name);
	py.PyTuple_SetItem(args, 1, package);
	py.Py_IncRef(level);
	py.PyTuple_SetItem(args, 2, level);
	res = sb_guard_call(resolve, args);
out:
	py.Py_DecRef(calc);
	py.Py_DecRef(resolve);
	return res;
}

/* The absolute name of (name, package context, level) as the import
 * system will see it, in 'buf': 1, 0 when there is none to judge (not a
 * str; a relative import that cannot resolve fails anyway and the original
 * says why), -1 failed (exception set). */
static int absolute_name(PyObject *name, PyObject *globals, PyObject *level,
			 char buf[PATH_MAX])
{
	long lv = 0;
	PyObject *abs;
	int r;

	if (!name || sb_arg_int(level, &lv) < 0)
		return -1;
	if (lv > 0) {
		if (!globals)
			return 0; /* the original raises its own error */
		abs = resolve_relative(name, globals, level);
		if (!abs) {
			py.PyErr_Clear();
			return 0;
		}
		r = sb_arg_path(abs, buf);
		py.Py_DecRef(abs);
		return r;
	}
	return sb_arg_path(name, buf);
}

/* Judge (name, package context, level) as the import system will see it:
 * 0 allowed, -1 refused or failed (exception set). */
static int judge_import(PyObject *name, PyObject *globals, PyObject *level)
{
	char buf[PATH_MAX];
	int r = absolute_name(name, globals, level, buf);

	return r <= 0 ? r : judge(buf);
}

/* Imports the runtime makes for itself need no rule: the codec
 * machinery's (encodings.idna, imported to encode a host name, imports
 * stringprep and unicodedata) and the REPL of 3.13's (_pyrepl, which
 * imports as the user types). They are told by the file of the code that
 * imports: a frame of <stdlib>/encodings/ or <stdlib>/_pyrepl/.
 *
 * What such an import loads imports in turn as the runtime only while it
 * runs the very file the runtime asked for, <stdlib>/<name as a path>.py
 * or its __init__.py: 'runtime_expect' names the module of the innermost
 * import granted this way, and the frames from the importing one back to
 * the nearest module body must all be the standard library's, that body
 * being the expected file. A module found elsewhere (the program's entry
 * on the package's __path__, sys.path, sys.meta_path, a path hook) or
 * loaded under another name (subprocess.py as encodings.subprocess) runs
 * as the program. (F1)
 *
 * No Python frame at all is no proof of the runtime: a C callable the
 * program handed to the interpreter (atexit.register(__import__, ...), a
 * weakref callback, a thread's target, a signal handler) runs with none.
 * Such an import is judged as the program's (F3). */
static __thread const char *runtime_expect; /* absolute module name */
/* ... imported with a fromlist: its submodules named there are loaded by
 * the import system as part of the same import */
static __thread bool runtime_children;

/* A file of the standard library proper: not one of its site-packages,
 * nor of the interpreter's frozen modules (whose "<frozen ...>" names the
 * program cannot claim without compiling code, which is judged). */
static bool stdlib_file(const char *file)
{
	size_t n = sb_g.stdlib ? strlen(sb_g.stdlib) : 0;

	if (strncmp(file, "<frozen ", 8) == 0)
		return true;
	return n && strncmp(file, sb_g.stdlib, n) == 0 && file[n] == '/' &&
	       !strstr(file + n, "/site-packages/") &&
	       !strstr(file + n, "/dist-packages/");
}

/* Is 'file' <stdlib>/<module as a path>.py or its /__init__.py, or the
 * interpreter's frozen copy of it ("<frozen runpy>", 3.11+)? */
static bool file_of_module(const char *file, const char *module)
{
	size_t n = sb_g.stdlib ? strlen(sb_g.stdlib) : 0, i;
	const char *f = file + n + 1;

	if (strncmp(file, "<frozen ", 8) == 0)
		return strncmp(file + 8, module, strlen(module)) == 0 &&
		       strcmp(file + 8 + strlen(module), ">") == 0;
	if (!n || strncmp(file, sb_g.stdlib, n) != 0 || file[n] != '/')
		return false;
	for (i = 0; module[i]; i++, f++)
		if (*f != (module[i] == '.' ? '/' : module[i]))
			return false;
	return strcmp(f, ".py") == 0 || strcmp(f, "/__init__.py") == 0;
}

/* Is 'file' the file of 'module' or of one of its packages (importing
 * importlib.machinery runs importlib/__init__.py first)? */
static bool file_of_package(const char *file, const char *module)
{
	char buf[256];
	char *dot;

	if (snprintf(buf, sizeof(buf), "%s", module) >= (int)sizeof(buf))
		return false;
	do {
		if (file_of_module(file, buf))
			return true;
		dot = strrchr(buf, '.');
		if (dot)
			*dot = '\0';
	} while (dot);
	return false;
}

/* Is 'name' 'module' or one of its packages, or, with a fromlist, one of
 * its submodules? */
static bool is_package_of(const char *name, const char *module)
{
	size_t n = strlen(name), m = strlen(module);

	if (runtime_children && n > m && strncmp(name, module, m) == 0 &&
	    name[m] == '.' && !strchr(name + m + 1, '.'))
		return true;
	return strncmp(module, name, n) == 0 &&
	       (module[n] == '\0' || module[n] == '.');
}

/* The file and name of a frame's code: 1, or 0 (unreadable). */
static int frame_code(PyObject *frame, char file[PATH_MAX], bool *body)
{
	PyObject *code = py.PyFrame_GetCode(frame), *f, *n;
	const char *s;
	int r;

	if (!code) {
		py.PyErr_Clear();
		return 0;
	}
	f = py.PyObject_GetAttrString(code, "co_filename");
	n = py.PyObject_GetAttrString(code, "co_name");
	py.Py_DecRef(code);
	r = f && sb_arg_path(f, file) == 1;
	s = n ? py.PyUnicode_AsUTF8AndSize(n, NULL) : NULL;
	*body = s && strcmp(s, "<module>") == 0;
	py.Py_DecRef(f);
	py.Py_DecRef(n);
	py.PyErr_Clear();
	return r;
}

/* With a fromlist: is 'file' the file of a submodule of runtime_expect? */
static bool child_file(const char *file)
{
	size_t n = sb_g.stdlib ? strlen(sb_g.stdlib) : 0, k;
	const char *slash = strrchr(file, '/');
	char buf[256];

	if (!n || !slash || strncmp(file, sb_g.stdlib, n) != 0 ||
	    file[n] != '/' || strcmp(slash + 1, "__init__.py") == 0)
		return false;
	k = strcspn(slash + 1, ".");
	if (strcmp(slash + 1 + k, ".py") != 0 ||
	    snprintf(buf, sizeof(buf), "%s.%.*s", runtime_expect, (int)k,
		     slash + 1) >= (int)sizeof(buf))
		return false;
	return file_of_module(file, buf);
}

/* Do the frames from the current one back to the nearest module body run
 * only the standard library, that body being runtime_expect's file? */
static bool in_expected_module(void)
{
	PyObject *frame = py.PyEval_GetFrame(), *back;
	char file[PATH_MAX];
	bool body = false, yes = false;
	int depth;

	if (!frame)
		return false;
	py.Py_IncRef(frame);
	for (depth = 0; frame && depth < 64; depth++) {
		if (!frame_code(frame, file, &body) || !stdlib_file(file))
			break;
		if (body) {
			yes = file_of_package(file, runtime_expect) ||
			      (runtime_children && child_file(file));
			break;
		}
		back = py.PyFrame_GetBack(frame);
		py.Py_DecRef(frame);
		frame = back;
	}
	py.Py_DecRef(frame);
	return yes;
}

/* With no frame, the interpreter's C code imports these by itself, and
 * only these count as its: runpy to run -m (at the start), linecache to
 * keep the source of -c (3.13) and traceback to print an exception that
 * ended the program (3.13). What they import in turn is the runtime's
 * only from their own files, as above. */
static bool frameless_runtime_import(const char *name)
{
	if (py.PyEval_GetFrame())
		return false;
	if (sb_g.starting && strcmp(name, "runpy") == 0)
		return true; /* import_call ends the start */
	return strcmp(name, "linecache") == 0 ||
	       strcmp(name, "traceback") == 0;
}

static bool runtime_import(void)
{
	char buf[PATH_MAX];
	size_t n;
	int r;

	r = sb_guard_caller_file(buf);
	if (r <= 0 || !sb_g.stdlib)
		return false;
	n = strlen(sb_g.stdlib);
	if (strncmp(buf, sb_g.stdlib, n) == 0 &&
	    (strncmp(buf + n, "/encodings/", 11) == 0 ||
	     strncmp(buf + n, "/_pyrepl/", 9) == 0))
		return true;
	return runtime_expect && in_expected_module();
}

/* A module already loaded, imported again by the runtime or a library (the
 * interpreter's C code importing _io, a stdlib module importing re for the
 * second time) is not charged to the program: only what the program imports
 * itself, and every fresh load, is judged. */
static bool cached_for_library(PyObject *name, PyObject *level)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	char buf[PATH_MAX];
	long lv = 0;

	if (sb_arg_int(level, &lv) < 0) {
		py.PyErr_Clear();
		return false;
	}
	if (lv != 0)
		return false;
	if (sb_arg_path(name, buf) != 1 || !mods ||
	    !py.PyDict_GetItemString(mods, buf))
		return false;
	/* with no frame too (printing a traceback imports io): nothing is
	 * loaded, and sys.modules hands the same module to a lookup */
	return !py.PyEval_GetFrame() || sb_guard_caller_is_library();
}

/* The original import, with 'wrapping' naming what it loads. */
static PyObject *call_wrapping(struct sb_wrap *w, PyObject *args,
			       PyObject *kwargs, const char *top)
{
	char saved[sizeof(wrapping)];
	PyObject *res;

	memcpy(saved, wrapping, sizeof(saved));
	snprintf(wrapping, sizeof(wrapping), "%s", top);
	res = sb_wrap_call_original(w, args, kwargs);
	memcpy(wrapping, saved, sizeof(saved));
	return res;
}

/* The original import of 'name', once judged: what it loads is learned,
 * the families hear of a new module, a refused capsule is explained.
 * 'runtime' is the absolute name of an import granted to the runtime,
 * whose file imports in turn as the runtime (runtime_import), else NULL:
 * what a judged import loads imports as the program. */
static PyObject *import_judged(struct sb_wrap *w, PyObject *args,
			       PyObject *kwargs, PyObject *name,
			       const char *runtime)
{
	const char *saved = runtime_expect;
	bool saved_children = runtime_children;
	PyObject *fromlist = sb_arg(args, kwargs, 3, "fromlist");
	char pending[256];
	PyObject *res;

	take_pending(pending);
	runtime_expect = runtime;
	runtime_children = runtime && fromlist &&
			   py.PyObject_IsTrue(fromlist) == 1;
	py.PyErr_Clear();
	res = call_wrapping(w, args, kwargs, pending);
	runtime_expect = saved;
	runtime_children = saved_children;
	learn_success(pending, res);
	if (res)
		module_loaded();
	else
		capsule_refusal(name);
	return res;
}

static PyObject *import_call(struct sb_wrap *w, PyObject *args,
			     PyObject *kwargs)
{
	PyObject *name = sb_arg(args, kwargs, 0, "name");
	PyObject *globals = sb_arg(args, kwargs, 1, "globals");
	PyObject *level = sb_arg(args, kwargs, 4, "level");
	char abs[PATH_MAX];
	int r = absolute_name(name, globals, level, abs);
	PyObject *res;
	bool runtime = r == 1 &&
		       (runtime_import() || frameless_runtime_import(abs)) &&
		       runtime_may_load(abs);

	learn_pending[0] = '\0';
	if (r < 0)
		return NULL;
	if (!runtime && r == 1 && !cached_for_library(name, level) &&
	    judge(abs) < 0)
		return NULL;
	res = import_judged(w, args, kwargs, name, runtime ? abs : NULL);
	/* runpy, imported to run -m, runs the program with frames */
	if (runtime && sb_g.starting && strcmp(abs, "runpy") == 0)
		sb_g.starting = false;
	return res;
}

/* _gcd_import(name, package=None, level=0) */
static PyObject *gcd_import_call(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	PyObject *name = sb_arg(args, kwargs, 0, "name");
	PyObject *package = sb_arg(args, kwargs, 1, "package");
	PyObject *level = sb_arg(args, kwargs, 2, "level");
	PyObject *globals = NULL;
	long lv = 0;
	int r;

	if (sb_arg_int(level, &lv) < 0)
		return NULL;
	if (lv > 0 && package) {
		/* _calc___package__ wants a globals mapping */
		globals = py.PyDict_New();
		if (!globals ||
		    py.PyDict_SetItemString(globals, "__package__", package) < 0)
			return NULL;
	}
	learn_pending[0] = '\0';
	r = judge_import(name, globals, level);
	py.Py_DecRef(globals);
	if (r < 0)
		return NULL;
	return import_judged(w, args, kwargs, name, NULL);
}

/* The real directory of python-sb's package, once. */
static const char *own_dir(void)
{
	char *dir = sb_g.imports.own_dir;
	char buf[PATH_MAX];

	if (!dir[0] && sb_g.pkgdir &&
	    (size_t)snprintf(buf, sizeof(buf), "%s/pysandboxes", sb_g.pkgdir) <
		    sizeof(buf) &&
	    !realpath(buf, dir))
		dir[0] = '\0';
	return dir;
}

/* Is 'canon' (canonical) a file of the standard library's real tree, as
 * found when the guard armed? */
static bool stdlib_ext(const char *canon)
{
	char *dir = sb_g.imports.stdlib_dir;
	size_t n;

	if (!dir[0] && (!sb_g.stdlib || !realpath(sb_g.stdlib, dir)))
		dir[0] = '\0';
	n = strlen(dir);
	return n && strncmp(canon, dir, n) == 0 && canon[n] == '/' &&
	       !strstr(canon + n, "/site-packages/") &&
	       !strstr(canon + n, "/dist-packages/");
}

/* Is 'dir' (canonical) the directory of 'file' (canonical)? */
static bool file_in_dir(const char *file, const char *dir)
{
	size_t n = strlen(dir);
	const char *rest = file + n;

	return n && strncmp(file, dir, n) == 0 && rest[0] == '/' &&
	       !strchr(rest + 1, '/');
}

/* One of python-sb's own extensions: a file of the package's directory,
 * loaded under the package's name for it ("pysandboxes._pysbframe" from
 * _pysbframe.abi3.so). Decided by the file, never by the name alone. */
static bool own_module(const char *name, const struct sb_extmod *m)
{
	const char *base = strrchr(m->canon, '/') + 1;
	size_t n = strcspn(base, ".");

	return file_in_dir(m->canon, own_dir()) &&
	       strncmp(name, "pysandboxes.", 12) == 0 &&
	       strlen(name + 12) == n && strncmp(name + 12, base, n) == 0;
}

/* Is the file in a directory of the package 'name' claims to be part of
 * (its parent's __path__), a directory named as that package is? Else the
 * module is judged by its own name. __path__ is the program's to extend:
 * json.__path__.append(<lib-dynload>) made every extension there
 * loadable as json.<name> under the rule for json alone. */
static bool in_parent_package(const char *name, const struct sb_extmod *m)
{
	const char *dot = strrchr(name, '.'), *plast, *dslash;
	PyObject *mods = py.PyImport_GetModuleDict(), *parent, *paths, *item;
	char pname[256], buf[PATH_MAX], canon[PATH_MAX];
	bool found = false;
	Py_ssize_t i, n;
	size_t dlen;

	if (!dot || (size_t)(dot - name) >= sizeof(pname) || !mods)
		return false;
	memcpy(pname, name, (size_t)(dot - name));
	pname[dot - name] = '\0';
	/* the file's directory is named as the parent's last component */
	plast = strrchr(pname, '.');
	plast = plast ? plast + 1 : pname;
	dslash = strrchr(m->canon, '/');
	if (!dslash || dslash == m->canon)
		return false;
	dlen = (size_t)(dslash - m->canon);
	while (dlen && m->canon[dlen - 1] != '/')
		dlen--;
	if ((size_t)(dslash - m->canon) - dlen != strlen(plast) ||
	    strncmp(m->canon + dlen, plast, strlen(plast)) != 0)
		return false;
	parent = py.PyDict_GetItemString(mods, pname);
	paths = parent ? py.PyObject_GetAttrString(parent, "__path__") : NULL;
	if (!paths) {
		py.PyErr_Clear();
		return false;
	}
	n = py.PyObject_IsInstance(paths, py.PyList_Type) == 1
		    ? py.PyList_Size(paths)
		    : 0;
	for (i = 0; i < n && !found; i++) {
		item = py.PyList_GetItem(paths, i);
		if (item && sb_arg_path(item, buf) == 1 && realpath(buf, canon))
			found = file_in_dir(m->canon, canon);
		py.PyErr_Clear();
	}
	py.Py_DecRef(paths);
	return found;
}

/* Judge an extension before it is loaded: 0 or -1 (raised). */
static int judge_extension(const char *name, const struct sb_extmod *m)
{
	const char *last = strrchr(name, '.');
	const struct sb_expose *e;
	char msg[3 * PATH_MAX + 300];
	char pending[256];
	size_t i;

	last = last ? last + 1 : name;
	/* first: a file the program may have written is nobody's own, not
	 * even in python-sb's package directory (a venv under expose-rw=) */
	e = sb_fs_find_expose(sb_g.policy, m->canon);
	if (e && e->mode == SB_EXPOSE_RW && !sb_g.learning) {
		snprintf(msg, sizeof(msg),
			 "Module '%s' is a C extension in a writable directory "
			 "('%s/', rule '%s' from %s): native code is not loaded "
			 "from where the program can write.",
			 m->canon, e->path, e->rule,
			 e->ref.file ? e->ref.file : "<implicit>");
		sb_guard_note("import", m->canon, SB_RULE_BUILTIN, NULL);
		return sb_guard_raise(SB_EXC_MODULE, msg, NULL);
	}
	if (own_module(name, m))
		return 0;
	if (strncmp(name, "pysandboxes", 11) == 0 &&
	    (name[11] == '.' || name[11] == '\0')) {
		snprintf(msg, sizeof(msg),
			 "Module named '%s' is not python-sb's own: its file "
			 "'%s' is not in the package's directory '%s'",
			 name, m->canon, own_dir());
		return sb_guard_raise(SB_EXC_MODULE, msg, name);
	}
	if (sb_modtab_is_native(last) && native_grant(name, m->canon, last) < 0)
		return -1;
	for (i = 0; i < m->n_inits; i++)
		if (sb_modtab_is_native(m->inits[i]) &&
		    native_grant(name, m->canon, m->inits[i]) < 0)
			return -1;
	/* the runtime's own C modules are the standard library's
	 * (lib-dynload), never a file found elsewhere under their name */
	if (((runtime_expect && strcmp(name, runtime_expect) == 0) ||
	     runtime_import()) &&
	    runtime_may_load(name) && stdlib_ext(m->canon))
		return 0;
	/* the name it is loaded under, and, outside the package that name
	 * claims, its own */
	learn_pending[0] = '\0';
	if (judge(name) < 0)
		return -1;
	take_pending(pending);
	learn_success(pending, py._Py_NoneStruct);
	if (last != name && !in_parent_package(name, m)) {
		if (judge(last) < 0)
			return -1;
		take_pending(pending);
		learn_success(pending, py._Py_NoneStruct);
	}
	return 0;
}

/* A module's definition need not live in its own file: a CFFI module's
 * is made by _cffi_backend, on the heap. Then the PyInit_ function CPython
 * called is judged instead: the object loaded under the judged path (the
 * loader opened the canonical path: judged_spec()) and the symbol in it
 * must be mapped from the file judged, or, where /proc is out of reach,
 * export the same PyInit_ names. 'r' when that object is not loaded. */
static int check_init(const char *name, const struct sb_extmod *m, int r)
{
	const char *last = strrchr(name, '.');
	char sym[160];
	void *h = dlopen(m->canon, RTLD_LAZY | RTLD_NOLOAD), *init;

	if (!h)
		return r;
	snprintf(sym, sizeof(sym), "PyInit_%.140s", last ? last + 1 : name);
	init = dlsym(h, sym);
	if (init)
		r = sb_extmod_check_loaded(init, m);
	dlclose(h);
	return r;
}

/* After the load: the module's code is mapped from the file judged, not
 * from one swapped in under the same path since. */
static int check_loaded(PyObject *mod, const char *name,
			const struct sb_extmod *m)
{
	void *def = py.PyModule_GetDef(mod);
	char msg[2 * PATH_MAX + 300];
	int r;

	if (!def)
		py.PyErr_Clear();
	r = def ? sb_extmod_check_loaded(def, m) : -ENOENT;
	if (r == -EXDEV || r == -ENOENT)
		r = check_init(name, m, r);
	if (r == 0)
		return 0;
	snprintf(msg, sizeof(msg),
		 "Module named '%s' was not loaded from the file judged ('%s'): "
		 "%s",
		 name, m->canon,
		 r == -EXDEV    ? "the path changed under the check"
		 : def	       ? strerror(-r)
				: "its code cannot be located");
	return sb_guard_raise(SB_EXC_MODULE, msg, name);
}

/* sb_g.imports.ns_type, types.SimpleNamespace: a type whose attributes
 * the program cannot change, unlike ModuleSpec, a Python class it could
 * give an 'origin' property. */

/* The spec the original loads from: a fresh namespace with the name judged
 * and the file's canonical path, not the program's spec, whose name and
 * origin the original would read again after the check (a property that
 * answers differently the second time, another thread, a symlink swapped
 * in a writable directory): dlopen() would run the constructor and
 * PyInit_ of a file never judged before check_loaded() could object. The
 * loader and submodule_search_locations, read with the name, are what a
 * module's create slot copies (Cython's). */
static PyObject *judged_spec(const char *name, const char *canon,
			     PyObject *loader, PyObject *locations)
{
	const char *dot = strrchr(name, '.');
	PyObject *args = sb_g.imports.ns_type ? py.PyTuple_New(0) : NULL;
	PyObject *kw = args ? py.PyDict_New() : NULL;
	PyObject *n = py.PyUnicode_DecodeFSDefault(name);
	PyObject *o = py.PyUnicode_DecodeFSDefault(canon);
	PyObject *parent = locations != py._Py_NoneStruct || !dot
				   ? py.PyUnicode_DecodeFSDefault(
					     locations != py._Py_NoneStruct
						     ? name
						     : "")
				   : NULL;
	PyObject *spec = NULL;
	char pname[PATH_MAX];

	if (!parent && dot) {
		snprintf(pname, sizeof(pname), "%.*s", (int)(dot - name), name);
		parent = py.PyUnicode_DecodeFSDefault(pname);
	}
	if (kw && n && o && parent &&
	    py.PyDict_SetItemString(kw, "name", n) == 0 &&
	    py.PyDict_SetItemString(kw, "origin", o) == 0 &&
	    py.PyDict_SetItemString(kw, "parent", parent) == 0 &&
	    py.PyDict_SetItemString(kw, "loader", loader) == 0 &&
	    py.PyDict_SetItemString(kw, "submodule_search_locations",
				    locations) == 0)
		spec = py.PyObject_Call(sb_g.imports.ns_type, args, kw);
	else if (!py.PyErr_Occurred())
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "python-sb: import guard: no spec to load "
				   "the extension with");
	py.Py_DecRef(parent);
	py.Py_DecRef(o);
	py.Py_DecRef(n);
	py.Py_DecRef(kw);
	py.Py_DecRef(args);
	return spec;
}

/* 0, or -1 with an exception when the table cannot hold it: the module
 * is then not handed out (a module its exec slots filled later without
 * its deniers would be the original's) */
static int remember_adopted(void *def, const char *name)
{
	__typeof__(sb_g.imports) *im = &sb_g.imports;
	size_t i;

	for (i = 0; i < im->n_adopted; i++)
		if (im->adopted[i].def == def &&
		    strcmp(im->adopted[i].name, name) == 0)
			return 0;
	if (im->n_adopted == SB_ADOPTED_MAX ||
	    strlen(name) >= sizeof(im->adopted[0].name)) {
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "python-sb's import guard keeps the module "
				   "definitions _imp made for 512 names of at "
				   "most 127 bytes; this one is refused");
		return -1;
	}
	im->adopted[im->n_adopted].def = def;
	strcpy(im->adopted[im->n_adopted].name, name);
	im->n_adopted++;
	return 0;
}

/* The wrappers of module 'name' on a module object _imp made or filled:
 * the functions' (wrap.c), the C libraries' classes (clibs.c), learning's.
 * 'name' is the one it was judged and made under, never its __name__,
 * which the program may change between the make and the fill: a copy of
 * _sqlite3 renamed 'zz' before exec_module got classes without the
 * wrappers, whose ATTACH wrote a file no rule exposes. */
static int module_ready(PyObject *mod, const char *name)
{
	return sb_wrap_adopt_module(mod, name) < 0 ||
			       sb_clibs_module_ready(mod, name) < 0 ||
			       sb_learn_module_ready(mod, name) < 0
		       ? -1
		       : 0;
}

/* A module object _imp made: the wrappers and the API's deniers, of the
 * module it is ('name'), and of what its file defines ('m', NULL for a
 * builtin). 0, or -1 with an exception: it is then not handed out. */
static int adopt_made(PyObject *mod, const char *name,
		      const struct sb_extmod *m)
{
	void *def = py.PyModule_GetDef(mod);
	size_t i;

	if (!def)
		py.PyErr_Clear();
	if (module_ready(mod, name) < 0 || sb_api_adopt_module(mod, name) < 0)
		return -1;
	if (def && remember_adopted(def, name) < 0)
		return -1;
	for (i = 0; m && i < m->n_inits; i++) {
		if (sb_api_adopt_module(mod, m->inits[i]) < 0 ||
		    (def && remember_adopted(def, m->inits[i]) < 0))
			return -1;
	}
	return 0;
}

/* An attribute of the program's spec, None when it has none. */
static PyObject *spec_attr(PyObject *spec, const char *attr)
{
	PyObject *v = py.PyObject_GetAttrString(spec, attr);

	if (v)
		return v;
	py.PyErr_Clear();
	py.Py_IncRef(py._Py_NoneStruct);
	return py._Py_NoneStruct;
}

/* _imp.create_dynamic(spec, file=None) */
static PyObject *create_dynamic_call(struct sb_wrap *w, PyObject *args,
				     PyObject *kwargs)
{
	PyObject *spec = sb_arg(args, kwargs, 0, "spec");
	PyObject *oname, *origin, *loader, *locations, *res = NULL;
	PyObject *nspec = NULL, *nargs = NULL;
	char name[PATH_MAX], path[PATH_MAX], msg[2 * PATH_MAX + 200];
	struct sb_extmod *m;
	int r = -1, rn, ro;

	py.PyErr_Clear();
	if (!spec)
		return sb_wrap_call_original(w, args, kwargs);
	oname = py.PyObject_GetAttrString(spec, "name");
	rn = oname ? sb_arg_path(oname, name) : -1;
	origin = rn == 1 ? py.PyObject_GetAttrString(spec, "origin") : NULL;
	ro = origin ? sb_arg_path(origin, path) : -1;
	py.Py_DecRef(oname);
	py.Py_DecRef(origin);
	if (rn != 1 || ro != 1) {
		/* not handed on: the original would read them again, and a
		 * property may answer a path the second time */
		if (!py.PyErr_Occurred())
			py.PyErr_SetString(PY_EXC(PyExc_TypeError),
					   "create_dynamic: spec.name and "
					   "spec.origin must be paths "
					   "(str)");
		return NULL;
	}
	loader = spec_attr(spec, "loader");
	locations = spec_attr(spec, "submodule_search_locations");
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	r = sb_extmod_read(path, m);
	if (r < 0) {
		/* fail closed: what cannot be judged is not loaded, and
		 * loading it anyway would run its code before any check */
		snprintf(msg, sizeof(msg),
			 "Module named '%s' is not loaded: its file '%s' "
			 "cannot be judged (%s)",
			 name, path,
			 r == -ENOEXEC ? "not an ELF shared object with a "
					 "dynamic symbol table"
			 : r == -EAGAIN ? "the path changed under the check"
					: strerror(-r));
		sb_guard_raise(SB_EXC_MODULE, msg, name);
		goto out;
	}
	if (judge_extension(name, m) < 0)
		goto out;
	nspec = judged_spec(name, m->canon, loader, locations);
	nargs = nspec ? py.PyTuple_New(1) : NULL;
	if (!nargs)
		goto out;
	py.Py_IncRef(nspec);
	if (py.PyTuple_SetItem(nargs, 0, nspec) < 0)
		goto out;
	res = sb_wrap_call_original(w, nargs, NULL);
	if (res && (check_loaded(res, name, m) < 0 ||
		    adopt_made(res, name, m) < 0)) {
		py.Py_DecRef(res);
		res = NULL;
	}
out:
	py.Py_DecRef(nargs);
	py.Py_DecRef(nspec);
	py.Py_DecRef(locations);
	py.Py_DecRef(loader);
	free(m);
	return res;
}

/* _imp.create_builtin(spec): building a second copy of a builtin module
 * that is loaded already (posix, _signal, _thread...) is a reload, and
 * would hand out originals without their wrappers. */
/* A library that makes a builtin module again calls create_builtin by name
 * (importlib's BuiltinImporter); one that calls what it was handed
 * (_call_with_frames_removed) does not exempt the program that handed it. */
static const char *const create_builtin_names[] = { "create_builtin", NULL };

/* Was a module of this name made by the interpreter before the guard
 * armed (remember_loaded), or by _imp since, past the judgement? */
static bool was_made(const char *name)
{
	size_t i;

	for (i = 0; i < sb_g.imports.n_adopted; i++)
		if (strcmp(sb_g.imports.adopted[i].name, name) == 0)
			return true;
	return false;
}

static PyObject *create_builtin_call(struct sb_wrap *w, PyObject *args,
				     PyObject *kwargs)
{
	PyObject *spec = py.PyTuple_Size(args) > 0 ? py.PyTuple_GetItem(args, 0)
						   : NULL;
	PyObject *name = spec ? py.PyObject_GetAttrString(spec, "name") : NULL;
	PyObject *kw, *empty, *nspec, *nargs, *res = NULL;
	char buf[PATH_MAX];
	bool made;
	int r;

	if (!spec) {
		py.PyErr_Clear();
		return sb_wrap_call_original(w, args, kwargs);
	}
	if (!name)
		return NULL; /* CPython's AttributeError */
	r = sb_arg_path(name, buf);
	if (r == 0 && !py.PyErr_Occurred())
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "create_builtin: spec.name must be a str");
	if (r != 1) {
		py.Py_DecRef(name);
		return NULL;
	}
	made = was_made(buf);
	if ((sb_modtab_is_native(buf) && native_grant(buf, NULL, NULL) < 0) ||
	    (made && !sb_guard_library_calls(create_builtin_names) &&
	     sb_guard_check_api("importlib.reload") < 0)) {
		py.Py_DecRef(name);
		return NULL;
	}
	/* a builtin module not made yet is an import of it, as an
	 * extension's create_dynamic is (judge_extension): the program
	 * reached _posixsubprocess, gc or _socket with no rule (builtins on
	 * Debian's python3). Made means by the interpreter before the
	 * guard armed or by this door since, never what sys.modules holds:
	 * the program puts a None there and BuiltinImporter makes the
	 * module "again" (weaknesses.md 151) */
	if (!made && !runtime_load(buf) &&
	    !(((runtime_expect && strcmp(buf, runtime_expect) == 0) ||
	       runtime_import()) &&
	      runtime_may_load(buf))) {
		char pending[256];

		learn_pending[0] = '\0';
		if (judge(buf) < 0) {
			py.Py_DecRef(name);
			return NULL;
		}
		take_pending(pending);
		learn_success(pending, py._Py_NoneStruct);
	}
	/* the original gets the name judged, not the program's spec, which
	 * it would read again (a property answering 'posix' the second time
	 * rebuilt posix past the reload check) */
	py.Py_DecRef(name);
	name = py.PyUnicode_DecodeFSDefault(buf); /* a str, not a subclass */
	kw = py.PyDict_New();
	empty = py.PyTuple_New(0);
	nspec = name && kw && empty && sb_g.imports.ns_type &&
				py.PyDict_SetItemString(kw, "name", name) == 0
			? py.PyObject_Call(sb_g.imports.ns_type, empty, kw)
			: NULL;
	nargs = nspec ? py.PyTuple_New(1) : NULL;
	if (nargs) {
		py.Py_IncRef(nspec);
		if (py.PyTuple_SetItem(nargs, 0, nspec) == 0)
			res = sb_wrap_call_original(w, nargs, NULL);
		py.Py_DecRef(nargs);
	}
	/* a copy made past the reload check (one not in sys.modules any
	 * more, or with importlib.reload allowed) gets the wrappers and the
	 * deniers too */
	if (res && adopt_made(res, buf, NULL) < 0) {
		py.Py_DecRef(res);
		res = NULL;
	}
	py.Py_DecRef(nspec);
	py.Py_DecRef(empty);
	py.Py_DecRef(kw);
	py.Py_DecRef(name);
	return res;
}

/* _imp.exec_builtin(mod), _imp.exec_dynamic(mod): a multi-phase module's
 * exec slots may add functions and make its classes: the module gets the
 * wrappers again, as each name its definition was made under (never its
 * __name__: module_ready). A definition made before the guard armed was
 * recorded then, under its sys.modules key. */
static PyObject *exec_module_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	PyObject *res = sb_wrap_call_original(w, args, kwargs);
	PyObject *mod = py.PyTuple_Size(args) >= 1
				? py.PyTuple_GetItem(args, 0)
				: NULL;
	void *def = res && mod ? py.PyModule_GetDef(mod) : NULL;
	size_t i;

	if (res && mod && !def)
		py.PyErr_Clear(); /* not an extension's: its exec did nothing */
	for (i = 0; def && i < sb_g.imports.n_adopted; i++) {
		const char *as = sb_g.imports.adopted[i].name;

		if (sb_g.imports.adopted[i].def == def &&
		    (module_ready(mod, as) < 0 ||
		     sb_api_adopt_module(mod, as) < 0 ||
		     sb_net_adopt_module(mod, as) < 0)) {
			/* the program holds the module already (module_from_spec
			 * gave it): what the exec made, classes without their
			 * wrappers among it, leaves with the refusal */
			py.PyDict_Clear(py.PyModule_GetDict(mod));
			py.Py_DecRef(res);
			return NULL;
		}
	}
	return res;
}

/* ---- a module's code, run ----
 *
 * The import system's inner functions (_find_and_load, _load, a loader's
 * load_module or exec_module, FrozenImporter, zipimport) load a module
 * with no wrapper and no "import" event: only C's import raises it, and
 * the program may call them itself, or point builtins.__import__ at them.
 * What every Python-code module passes, whoever loads it, is the run of
 * its code: exec(code, module.__dict__) (the "exec" event, and the exec
 * and eval wrappers, which see the namespace too), or a function made of
 * that code (the "function.__new__" event). A module body's code of a file
 * is judged there as the import of the module its file is, where the
 * guard knows that file's module, and of the name its namespace gives. */

/* Is 's' a dotted module name ("json.decoder")? Copied into 'name'. */
static bool dotted(const char *s, size_t n, char name[256])
{
	bool start = true;
	size_t i;

	if (n == 0 || n >= 256)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.' && !start) {
			start = true;
		} else if (isalpha(c) || c == '_' || (isdigit(c) && !start)) {
			start = false;
		} else {
			return false;
		}
		name[i] = (char)c;
	}
	name[n] = '\0';
	return !start;
}

/* The module whose source is 'rel' ("json/decoder.py", "json/__init__.py"),
 * a path below a tree of modules. */
static bool module_of_rel(const char *rel, char name[256])
{
	char buf[256];
	size_t n = strlen(rel), i;

	if (n < 4 || n >= sizeof(buf) || strcmp(rel + n - 3, ".py") != 0)
		return false;
	n -= 3;
	if (n > 9 && strncmp(rel + n - 9, "/__init__", 9) == 0)
		n -= 9;
	for (i = 0; i < n; i++)
		buf[i] = rel[i] == '/' ? '.' : rel[i];
	return dotted(buf, n, name);
}

/* The rest of 'canon' below directory 'dir', else NULL. */
static const char *below(const char *canon, const char *dir)
{
	size_t n = strlen(dir);

	return n && strncmp(canon, dir, n) == 0 && canon[n] == '/'
		       ? canon + n + 1
		       : NULL;
}

/* The module whose code a file is, where the guard knows the trees that
 * give files their names: a frozen module ("<frozen json>"), the standard
 * library and its site-packages directories as sys.path had them when the
 * guard armed. By the file's real path: a link, a sys.path entry with ".."
 * or another spelling of the tree leads to the same name (a link the
 * program changes between the making of the code and its run is not
 * followed: weaknesses.md 11, 151). Else false (the program's own tree,
 * an archive: judged by the name it runs under). */
static bool module_of_file(const char *file, char name[256])
{
	char canon[PATH_MAX];
	const char *rel = NULL;
	size_t n = strlen(file), i;

	if (strncmp(file, "<frozen ", 8) == 0)
		return n > 9 && file[n - 1] == '>' &&
		       dotted(file + 8, n - 9, name);
	/* the common case, a module the import system found in one of those
	 * trees as they are named: a regular file there, named without '.'
	 * or '..', is its own real path but for a link on the way, which
	 * those trees, not the program's, hold (no realpath: one readlink a
	 * component at every import) */
	if (file[0] == '/' && !strstr(file, "/./") && !strstr(file, "/../") &&
	    !strstr(file, "//")) {
		struct stat st;

		for (i = 0; i < sb_g.imports.n_site && !rel; i++)
			rel = below(file, sb_g.imports.site_dirs[i]);
		if (!rel && stdlib_ext(file))
			rel = below(file, sb_g.imports.stdlib_dir);
		if (rel && lstat(file, &st) == 0 && S_ISREG(st.st_mode))
			return module_of_rel(rel, name);
		rel = NULL;
	}
	/* a relative name is the import system's from a relative sys.path
	 * entry or loader path: as from the current directory */
	if (!realpath(file, canon))
		return false;
	for (i = 0; i < sb_g.imports.n_site && !rel; i++)
		rel = below(canon, sb_g.imports.site_dirs[i]);
	if (!rel && stdlib_ext(canon))
		rel = below(canon, sb_g.imports.stdlib_dir);
	return rel && module_of_rel(rel, name);
}

/* The run of module 'name''s code outside the import statement, judged as
 * its import: but for the loads the runtime's exemptions let through and
 * the module -m runs (the user's command, as a script is). Learning
 * records it, unless a wrapper importing it will. 0, or -1 (raised). */
/* judge(), and learning records a load no wrapper is making, as the
 * enforcing run will judge it here. 0, or -1 (raised). */
static int judge_unwrapped(const char *name)
{
	int r;

	learn_pending[0] = '\0';
	r = judge(name);
	if (r == 0 && learn_pending[0] &&
	    strcmp(learn_pending, wrapping) != 0 &&
	    sb_learn_record("import", learn_pending, NULL) < 0)
		r = sb_guard_refuse_halted();
	learn_pending[0] = '\0';
	return r;
}

static int judge_run(const char *name)
{
	if (strcmp(name, sb_g.imports.main_module) == 0 || runtime_load(name))
		return 0;
	return judge_unwrapped(name);
}

/* A module body's code of a file (or a frozen module's), as made by the
 * import system: its co_filename in 'file'. 1, or 0 (other code: what
 * compile() made of a string, "<string>", "<stdin>"). 3.9 names a frozen
 * module's code by the file it was frozen from, "Tools/freeze/flag.py". */
static int module_code(PyObject *code, char file[PATH_MAX])
{
	PyObject *n, *f;
	const char *s;
	int r = 0;

	if (!code || py.PyObject_IsInstance(code, py.PyCode_Type) != 1) {
		py.PyErr_Clear();
		return 0;
	}
	n = py.PyObject_GetAttrString(code, "co_name");
	f = py.PyObject_GetAttrString(code, "co_filename");
	s = n ? py.PyUnicode_AsUTF8AndSize(n, NULL) : NULL;
	if (s && strcmp(s, "<module>") == 0 && f && sb_arg_path(f, file) == 1)
		r = file[0] != '<' || strncmp(file, "<frozen ", 8) == 0;
	py.Py_DecRef(n);
	py.Py_DecRef(f);
	py.PyErr_Clear();
	return r;
}

/* A code object run (the "exec" and "function.__new__" events): judged by
 * the module its file is. 0, or -1 (raised). */
static int judge_code_file(PyObject *code)
{
	char file[PATH_MAX], name[256];

	if (!module_code(code, file) || !module_of_file(file, name))
		return 0;
	return judge_run(name);
}

/* The file of any code object: a function's, a class body's. */
static bool code_file(PyObject *code, char file[PATH_MAX])
{
	PyObject *f;
	bool r;

	if (!code || py.PyObject_IsInstance(code, py.PyCode_Type) != 1) {
		py.PyErr_Clear();
		return false;
	}
	f = py.PyObject_GetAttrString(code, "co_filename");
	r = f && sb_arg_path(f, file) == 1;
	py.Py_DecRef(f);
	py.PyErr_Clear();
	return r;
}

/* A function made of a code object (types.FunctionType, the
 * "function.__new__" event): a module's body as its import; any other code
 * of a module not loaded (a function or a class body taken from the code a
 * loader's get_code made of the file, the body never run) as its import
 * too. A loaded module's functions are in sys.modules anyway (6). */
static int judge_function_code(PyObject *code)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	char file[PATH_MAX], name[256];

	if (module_code(code, file))
		return judge_code_file(code);
	if (!code_file(code, file) || !module_of_file(file, name) ||
	    (mods && py.PyDict_GetItemString(mods, name)))
		return 0;
	return judge_run(name);
}

/* The namespace's own name for the module it is being filled as: its
 * __name__, an exact lookup in the dict (no code of the program runs). */
static bool namespace_name(PyObject *globals, char name[256])
{
	PyObject *v;
	char buf[PATH_MAX];

	if (!globals || py.PyObject_IsInstance(globals, py.PyDict_Type) != 1) {
		py.PyErr_Clear();
		return false;
	}
	v = py.PyDict_GetItemString(globals, "__name__");
	if (!v || sb_arg_path(v, buf) != 1) {
		py.PyErr_Clear();
		return false;
	}
	return dotted(buf, strlen(buf), name);
}

int sb_imports_run_code(PyObject *args, PyObject *kwargs)
{
	PyObject *code = sb_arg(args, kwargs, 0, "source");
	PyObject *globals = sb_arg(args, kwargs, 1, "globals");
	PyObject *frame_globals = NULL;
	char file[PATH_MAX], fname[256], name[256];
	bool known;
	int r = 0;

	py.PyErr_Clear();
	if (!module_code(code, file))
		return 0;
	known = module_of_file(file, fname);
	if (known && judge_run(fname) < 0)
		return -1;
	/* exec(code) fills its caller's namespace */
	if ((!globals || globals == py._Py_NoneStruct) && py.PyEval_GetFrame())
		globals = frame_globals = py.PyObject_GetAttrString(
			py.PyEval_GetFrame(), "f_globals");
	if (namespace_name(globals, name) &&
	    !(known && strcmp(name, fname) == 0))
		r = judge_run(name);
	py.Py_DecRef(frame_globals);
	return r;
}

/* _imp.init_frozen(name): a frozen module made and run by C, with no
 * "exec" event. */
static PyObject *init_frozen_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	PyObject *arg = sb_arg(args, kwargs, 0, "name");
	char buf[PATH_MAX], name[256];

	py.PyErr_Clear();
	if (arg && sb_arg_path(arg, buf) == 1 &&
	    dotted(buf, strlen(buf), name) && judge_run(name) < 0)
		return NULL;
	py.PyErr_Clear();
	return sb_wrap_call_original(w, args, kwargs);
}

void sb_imports_started(const char *event, PyObject *args)
{
	PyObject *arg = args ? py.PyTuple_GetItem(args, 0) : NULL;
	char buf[PATH_MAX];

	if (strcmp(event, "cpython.run_module") == 0 && arg &&
	    sb_arg_path(arg, buf) == 1)
		dotted(buf, strlen(buf), sb_g.imports.main_module);
	py.PyErr_Clear();
}

/* The site-packages and dist-packages directories of sys.path, now. */
static void remember_site_dirs(void)
{
	PyObject *path = py.PySys_GetObject("path");
	Py_ssize_t i, n = path && py.PyObject_IsInstance(path, py.PyList_Type) == 1
				  ? py.PyList_Size(path)
				  : 0;
	__typeof__(sb_g.imports) *im = &sb_g.imports;
	char buf[PATH_MAX];
	const char *base;

	for (i = 0; i < n && im->n_site < SB_SITE_DIRS_MAX; i++) {
		if (sb_arg_path(py.PyList_GetItem(path, i), buf) != 1)
			continue;
		base = strrchr(buf, '/');
		if (base && (strcmp(base, "/site-packages") == 0 ||
			     strcmp(base, "/dist-packages") == 0) &&
		    realpath(buf, im->site_dirs[im->n_site]))
			im->n_site++;
	}
	py.PyErr_Clear();
}

static struct sb_wrap wraps[] = {
	{ .module = "_imp", .attr = "create_builtin",
	  .call = create_builtin_call },
	{ .module = "_imp", .attr = "exec_builtin", .call = exec_module_call },
	{ .module = "_imp", .attr = "exec_dynamic", .call = exec_module_call },
	{ .module = "builtins", .attr = "__import__", .call = import_call },
	{ .module = "_frozen_importlib", .attr = "_gcd_import",
	  .call = gcd_import_call },
	{ .module = "_imp", .attr = "create_dynamic",
	  .call = create_dynamic_call },
	{ .module = "_imp", .attr = "init_frozen", .call = init_frozen_call },
};

/* The definitions of the extension modules sys.modules holds as the guard
 * arms, under their keys: a later exec of one (_imp.exec_builtin) knows
 * what it is without its __name__. 0, or -1 with an exception. */
static int remember_loaded(void)
{
	PyObject *mods = py.PyImport_GetModuleDict(), *key, *mod;
	Py_ssize_t pos = 0;

	while (mods && py.PyDict_Next(mods, &pos, &key, &mod)) {
		void *def;
		const char *name;

		if (py.PyObject_IsInstance(key, py.PyUnicode_Type) != 1 ||
		    !(name = py.PyUnicode_AsUTF8AndSize(key, NULL)) ||
		    !(def = py.PyModule_GetDef(mod))) {
			py.PyErr_Clear();
			continue;
		}
		if (remember_adopted(def, name) < 0)
			return -1;
	}
	return 0;
}

int sb_imports_arm(void)
{
	PyObject *impl = py.PySys_GetObject("implementation");
	size_t i;

	/* the standard library's real directory, as it is now */
	(void)stdlib_ext("");
	remember_site_dirs();
	sb_g.imports.ns_type =
		impl ? py.PyObject_GetAttrString(impl, "__class__") : NULL;
	if (!sb_g.imports.ns_type)
		return -1;

	for (i = 0; i < SB_ARRAY_LEN(wraps); i++)
		if (sb_wrap_install(&wraps[i]) < 0)
			return -1;
	return remember_loaded();
}

/* The backstop: a fresh load that did not come through a wrapper. */
int sb_imports_event(const char *event, PyObject *args)
{
	char buf[PATH_MAX];
	int r;

	/* a module's code run: the main program's, by the interpreter at
	 * its start, is the user's command */
	if (strcmp(event, "exec") == 0)
		return !py.PyEval_GetFrame() && sb_g.starting
			       ? 0
			       : judge_code_file(py.PyTuple_GetItem(args, 0));
	if (strcmp(event, "function.__new__") == 0)
		return judge_function_code(py.PyTuple_GetItem(args, 0));
	if (strcmp(event, "import") != 0)
		return 0;
	r = sb_arg_path(py.PyTuple_GetItem(args, 0), buf);
	if (r <= 0)
		return r;
	/* the packages of a module granted to the runtime, which the
	 * import system loads first, by itself */
	if ((runtime_expect && is_package_of(buf, runtime_expect) &&
	     runtime_may_load(buf)) ||
	    ((runtime_import() || frameless_runtime_import(buf)) &&
	     runtime_may_load(buf))) {
		runtime_load_allowed(buf);
		return 0;
	}
	/* learning: a load no wrapper is making (C code calling
	 * PyImport_ImportModuleLevelObject, a module another path loaded) */
	return judge_unwrapped(buf);
}
