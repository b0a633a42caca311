/* guard.c - the guard library's core: loaded into the user's interpreter by
 * LD_PRELOAD, before Py_Initialize. Its constructor reads the policy from
 * the descriptor python-sb passed, parses it with the shared parser, cleans
 * its traces from the environment and installs one C audit hook. The hook
 * arms on the first cpython.run_* event, so CPython's own start-up runs
 * disarmed and user code never does. There is no Python-visible state: no
 * flag to reset, no original to recover.
 *
 * Any failure before the program runs exits with status 255 and a message:
 * never run unguarded. After that, a failure inside a check refuses.
 */
#include "exit_status.h"
#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "api_registry.h"
#include "denial.h"
#include "policy_blob.h"
#include "prof.h"

#define GUARD_LIB_NAME "libpysb-guard.so"

struct sb_guard sb_g = { .log_fd = -1 };
__thread int sb_guard_busy;

static PyObject *exc_class[SB_EXC_COUNT];
static PyObject *api_exc_class;

static const char *const exc_names[SB_EXC_COUNT] = {
	[SB_EXC_FILE_NOT_FOUND] = "RuleFileNotFoundError",
	[SB_EXC_PERMISSION] = "RulePermissionError",
	[SB_EXC_SOCKET] = "RuleSocketConnectionRefusedError",
	[SB_EXC_MODULE] = "RuleModuleNotFoundError",
};

__attribute__((noreturn, format(printf, 1, 2))) static void
die(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (write(2, "python-sb: guard: ", 18) < 0 || write(2, buf, (size_t)n) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(SB_EXIT_SETUP);
	_exit(SB_EXIT_SETUP);
}

/* ---- loading the pysandboxes package without touching sys.path ---- */

/* Runs with busy set. It needs no finder: each module is loaded from its
 * file and registered by hand, and e.py imports nothing that is not loaded
 * at start-up, so a program that emptied sys.meta_path still gets its
 * refusals as the right classes. */
static const char loader_src[] =
	"def _pysb_load(pkgdir, argv):\n"
	"    import sys\n"
	"    import _frozen_importlib as b\n"
	"    import _frozen_importlib_external as x\n"
	"    d = pkgdir + '/pysandboxes'\n"
	"    def spec(name, path, pkg):\n"
	"        s = x.spec_from_file_location(\n"
	"            name, path, submodule_search_locations=[d] if pkg else None)\n"
	"        m = b.module_from_spec(s)\n"
	"        sys.modules[name] = m\n"
	"        return s, m\n"
	"    es, em = spec('pysandboxes.e', d + '/e.py', False)\n"
	"    ps, pm = spec('pysandboxes', d + '/__init__.py', True)\n"
	"    try:\n"
	"        es.loader.exec_module(em)\n"
	"        pm.e = em\n"
	"        pm._orig_argv = list(argv)\n"
	"        ps.loader.exec_module(pm)\n"
	"    except BaseException:\n"
	"        sys.modules.pop('pysandboxes', None)\n"
	"        sys.modules.pop('pysandboxes.e', None)\n"
	"        raise\n"
	"    pm._in_sandbox = True\n"
	"    return pm\n";

static PyObject *pkg_module;
/* pysandboxes.e._report_denial, taken when the package loads */
static PyObject *report_fn;

/* The interpreter's own command line, as the kernel gave it (glibc passes
 * it to constructors): on 3.9, which has no sys.orig_argv, the package
 * needs it to know a partial-mode worker, and /proc/self/cmdline may be
 * out of reach under Landlock. */
static int guard_argc;
static char **guard_argv;

static PyObject *argv_tuple(void)
{
	PyObject *t = py.PyTuple_New(guard_argc > 0 ? guard_argc : 0);
	PyObject *s;
	int i;

	for (i = 0; t && i < guard_argc; i++) {
		s = py.PyUnicode_DecodeFSDefault(guard_argv[i]);
		if (!s || py.PyTuple_SetItem(t, i, s) < 0) {
			py.Py_DecRef(t);
			return NULL;
		}
	}
	return t;
}

/* Taken once, when the package loads: what the program later does to the
 * module's attributes cannot change what the guard raises. */
static int cache_classes(PyObject *mod)
{
	PyObject *em;
	int k;

	for (k = 0; k < SB_EXC_COUNT; k++) {
		exc_class[k] = py.PyObject_GetAttrString(mod, exc_names[k]);
		if (!exc_class[k])
			return -1;
	}
	api_exc_class = py.PyObject_GetAttrString(mod,
						  "RuleApiPermissionError");
	em = py.PyObject_GetAttrString(mod, "e");
	if (em) {
		report_fn = py.PyObject_GetAttrString(em, "_report_denial");
		py.Py_DecRef(em);
	}
	return api_exc_class && report_fn ? 0 : -1;
}

/* The pysandboxes module, loaded once; NULL with an exception on failure. */
static PyObject *load_package(void)
{
	PyObject *globals, *res, *fn, *args, *mod = NULL;

	if (pkg_module)
		return pkg_module;
	sb_guard_busy++;
	globals = py.PyDict_New();
	if (!globals)
		goto out;
	if (py.PyDict_SetItemString(globals, "__builtins__",
				    py.PyEval_GetBuiltins()) < 0)
		goto out_globals;
	res = py.PyRun_String(loader_src, PY_FILE_INPUT, globals, globals);
	if (!res)
		goto out_globals;
	py.Py_DecRef(res);
	fn = py.PyDict_GetItemString(globals, "_pysb_load");
	args = py.PyTuple_New(2);
	if (!fn || !args)
		goto out_globals;
	py.PyTuple_SetItem(args, 0, py.PyUnicode_DecodeFSDefault(sb_g.pkgdir));
	py.PyTuple_SetItem(args, 1, argv_tuple());
	mod = py.PyObject_CallObject(fn, args);
	py.Py_DecRef(args);
	pkg_module = mod;
	if (mod && cache_classes(mod) < 0) {
		pkg_module = NULL; /* stays referenced; the error propagates */
		mod = NULL;
	}
out_globals:
	py.Py_DecRef(globals);
out:
	sb_guard_busy--;
	return mod;
}

int sb_guard_load_package(void)
{
	return load_package() ? 0 : -1;
}

/* Without our classes we still refuse, with the builtin they derive from. */
static int raise_fallback(PyObject *builtin, const char *message)
{
	py.PyErr_Clear();
	py.PyErr_SetString(builtin, message);
	return -1;
}

/* errno as the refused call would have set it: C code in the interpreter
 * that reports a failed open from errno (the "can't open file" of a
 * missing script) must not print "[Errno 0] Success". */
static void set_errno(enum sb_exc kind)
{
	switch (kind) {
	case SB_EXC_FILE_NOT_FOUND:
		errno = ENOENT;
		break;
	case SB_EXC_SOCKET:
		errno = ECONNREFUSED;
		break;
	default:
		errno = EACCES;
		break;
	}
}

/* ---- the denial log ---- */

#define NOTE_MAX (PATH_MAX + 256)

static __thread struct {
	bool set, mute;
	char kind[16];
	char target[NOTE_MAX], rule[NOTE_MAX], add[NOTE_MAX];
	bool has_rule, has_add;
} note;

void sb_guard_note(const char *kind, const char *target, const char *rule,
		   const char *add)
{
	if (sb_g.log_fd < 0)
		return; /* no log: a refusal costs what it did before */
	note.set = true;
	snprintf(note.kind, sizeof(note.kind), "%s", kind);
	snprintf(note.target, sizeof(note.target), "%s", target ? target : "");
	note.has_rule = rule != NULL;
	snprintf(note.rule, sizeof(note.rule), "%s", rule ? rule : "");
	note.has_add = add != NULL;
	snprintf(note.add, sizeof(note.add), "%s", add ? add : "");
}

void sb_guard_no_log(void)
{
	note.mute = true;
}

void sb_guard_note_clear(void)
{
	note.set = note.mute = false;
}

/* One record for one refusal. Under os-sandbox=subprocess the guard
 * writes the log itself; under landlock it sends the fields to the
 * supervisor, which writes the record from outside the sandbox (the
 * program never holds the log's descriptor there). A failure to log never
 * turns a refusal into an allowance, nor the reverse. */
void sb_guard_log(const char *kind, const char *target, const char *rule,
		  const char *add)
{
	struct sb_denial d = {
		.layer = SB_LAYER_PYTHON,
		.by = "sandbox",
		.pid = getpid(),
		.kind = kind,
		.target = target,
		.rule = rule,
		.add = add,
	};
	int saved = errno;

	if (sb_g.log_fd < 0 || sb_g.learning)
		return;
	if (sb_g.log_relay) {
		struct sb_buf b = { 0 };
		ssize_t n;

		/* one datagram: kind, target, rule, add ("" and a flag
		 * byte tell "none" from an empty string) */
		sb_buf_put_field(&b, d.kind);
		sb_buf_puts(&b, "\t");
		sb_buf_put_field(&b, d.target ? d.target : "");
		sb_buf_puts(&b, d.rule ? "\t+" : "\t-");
		sb_buf_put_field(&b, d.rule ? d.rule : "");
		sb_buf_puts(&b, d.add ? "\t+" : "\t-");
		sb_buf_put_field(&b, d.add ? d.add : "");
		do
			n = write(sb_g.log_fd, b.s, b.len);
		while (n < 0 && errno == EINTR);
		sb_buf_free(&b);
	} else {
		sb_denial_write(sb_g.log_fd, &d, sb_g.policy->log_max);
	}
	errno = saved;
}

/* The record of the refusal being raised: the note if one was set. */
static void log_refusal(const char *kind, const char *target)
{
	if (note.set && !note.mute)
		sb_guard_log(note.kind, note.target,
			     note.has_rule ? note.rule : NULL,
			     note.has_add ? note.add : NULL);
	else if (!note.mute)
		sb_guard_log(kind, target, SB_RULE_BUILTIN, NULL);
	note.set = note.mute = false;
}

/* The seed's line per refusal: the exception's first line (a network
 * refusal as "Connection to ... DENIED ..."), at ERROR on the
 * `Pysandboxes` logger when the program has imported logging (so that its
 * configuration decides where it goes, or silences it), else on
 * sys.stderr as logging's last-resort handler would print it. The program's
 * handlers run as the program's own code: judged, not exempt. A refusal
 * while the line is being written (a handler that opens a file it may not)
 * is refused without a line of its own. `log-stderr=off` silences it;
 * nothing is printed while learning, which refuses nothing. Whatever the
 * line's fate, the refusal stands and its exception is the one raised. */
static void report_denial(PyObject *exc, bool network)
{
	static __thread bool inside;
	PyObject *t, *v, *tb, *args, *res;
	int saved = errno;

	if (!report_fn || inside || sb_g.learning || !sb_g.policy->log_stderr)
		return;
	/* a connection is reported whoever made it (an HTTP library's
	 * refusal is the application's); another refusal only when the
	 * application's own code met it: the standard library's optional
	 * imports, importlib's bytecode writes and probes are routine, and
	 * their exceptions are handled where they arise */
	if (!network && sb_guard_caller_is_library())
		return;
	inside = true;
	py.PyErr_Fetch(&t, &v, &tb);
	args = py.PyTuple_New(1);
	if (args) {
		py.Py_IncRef(exc);
		py.PyTuple_SetItem(args, 0, exc);
		res = py.PyObject_CallObject(report_fn, args);
		if (res)
			py.Py_DecRef(res);
		py.Py_DecRef(args);
	}
	py.PyErr_Clear();
	py.PyErr_Restore(t, v, tb);
	inside = false;
	errno = saved;
}

static const char *exc_kind(enum sb_exc kind)
{
	switch (kind) {
	case SB_EXC_FILE_NOT_FOUND:
	case SB_EXC_PERMISSION:
		return "file";
	case SB_EXC_SOCKET:
		return "network";
	case SB_EXC_MODULE:
		return "import";
	default:
		return "?";
	}
}

int sb_guard_raise(enum sb_exc kind, const char *message, const char *name)
{
	PyObject *cls, *args, *exc;

	log_refusal(exc_kind(kind), name ? name : message);
	set_errno(kind);

	if (!pkg_module)
		load_package();
	cls = exc_class[kind];
	if (!cls)
		return raise_fallback(PY_EXC(PyExc_PermissionError), message);
	args = py.PyTuple_New(name ? 2 : 1);
	if (!args)
		return -1;
	py.PyTuple_SetItem(args, 0, py.PyUnicode_FromString(message));
	if (name)
		py.PyTuple_SetItem(args, 1, py.PyUnicode_DecodeFSDefault(name));
	sb_guard_busy++;
	exc = py.PyObject_CallObject(cls, args);
	sb_guard_busy--;
	py.Py_DecRef(args);
	if (!exc)
		return raise_fallback(PY_EXC(PyExc_PermissionError), message);
	report_denial(exc, kind == SB_EXC_SOCKET);
	py.PyErr_SetObject(cls, exc);
	py.Py_DecRef(exc);
	set_errno(kind); /* the exception's construction may have changed it */
	return -1;
}

int sb_guard_raise_api(const char *qualname, const char *category)
{
	PyObject *args, *exc;
	char msg[512], add[256];

	if (!note.set && sb_g.log_fd >= 0) {
		snprintf(add, sizeof(add), "python-api=ALLOW:%s", qualname);
		sb_guard_note("api", qualname, NULL,
			      strchr(qualname, ' ') ? NULL : add);
	}
	log_refusal("api", qualname);
	if (!pkg_module)
		load_package();
	if (!api_exc_class) {
		snprintf(msg, sizeof(msg),
			 "%s() is denied by the API guard (category: %s).",
			 qualname, category);
		return raise_fallback(PY_EXC(PyExc_PermissionError), msg);
	}
	args = py.PyTuple_New(2);
	if (!args)
		return -1;
	py.PyTuple_SetItem(args, 0, py.PyUnicode_FromString(qualname));
	py.PyTuple_SetItem(args, 1, py.PyUnicode_FromString(category));
	sb_guard_busy++;
	exc = py.PyObject_CallObject(api_exc_class, args);
	sb_guard_busy--;
	py.Py_DecRef(args);
	if (!exc)
		return -1;
	report_denial(exc, false);
	py.PyErr_SetObject(api_exc_class, exc);
	py.Py_DecRef(exc);
	return -1;
}

int sb_guard_check_api(const char *qualname)
{
	long i = sb_api_lookup(qualname), twin = -1;
	char alt[128];

	if (i < 0) /* a name missing from the table is a bug: refuse */
		return sb_guard_raise_api(qualname, "unknown");
	if (sb_g.policy->api_allow && sb_g.policy->api_allow[i])
		return 0;
	/* an audit event names os.X for the posix.X twin too (os.system is
	 * posix.system): a grant of either opens the event's door */
	if (strncmp(qualname, "os.", 3) == 0 &&
	    (size_t)snprintf(alt, sizeof(alt), "posix.%s", qualname + 3) <
		    sizeof(alt))
		twin = sb_api_lookup(alt);
	if (twin >= 0 && sb_g.policy->api_allow && sb_g.policy->api_allow[twin])
		return 0;
	if (sb_g.learning) {
		sb_learn_record("api", qualname, NULL);
		return 0;
	}
	return sb_guard_raise_api(
		qualname, sb_api_category_name(sb_api_registry[i].category));
}

/* ---- wrappers ---- */

static PyObject *run_wrap(struct sb_wrap *w, PyObject *args, PyObject *kwargs)
{
	if (!sb_g.armed || sb_guard_busy)
		return sb_wrap_call_original(w, args, kwargs);
	return w->call(w, args, kwargs);
}

static PyObject *wrap_trampoline(PyObject *self, PyObject *args,
				 PyObject *kwargs)
{
	struct sb_wrap *w = py.PyCapsule_GetPointer(self, "pysb.wrap");

	return w ? run_wrap(w, args, kwargs) : NULL;
}

/* A module-level wrapper is a builtin function bound to its module, as the
 * original is: its __self__ is the module, so it pickles by name
 * (pickle.dumps(os.stat)) and inspect.signature() reads the original's
 * text signature. The C function then cannot find its wrap from 'self':
 * each wrapper gets a trampoline of its own, from this fixed set (64, more
 * than the guard installs; past them, the capsule-bound form). */
static struct sb_wrap *slots[78];

#define SB_SLOT(n)                                                             \
	static PyObject *slot_##n(PyObject *self, PyObject *args,              \
				  PyObject *kwargs)                            \
	{                                                                      \
		(void)self;                                                    \
		return run_wrap(slots[n], args, kwargs);                       \
	}
#define SB_SLOT8(a)                                                            \
	SB_SLOT(a##0) SB_SLOT(a##1) SB_SLOT(a##2) SB_SLOT(a##3)                \
	SB_SLOT(a##4) SB_SLOT(a##5) SB_SLOT(a##6) SB_SLOT(a##7)
SB_SLOT8(0) SB_SLOT8(1) SB_SLOT8(2) SB_SLOT8(3)
SB_SLOT8(4) SB_SLOT8(5) SB_SLOT8(6) SB_SLOT8(7)

#define SB_SLOT_ENTRY(n) { n, slot_##n },
#define SB_SLOT_ENTRY8(a)                                                      \
	SB_SLOT_ENTRY(a##0) SB_SLOT_ENTRY(a##1) SB_SLOT_ENTRY(a##2)            \
	SB_SLOT_ENTRY(a##3) SB_SLOT_ENTRY(a##4) SB_SLOT_ENTRY(a##5)            \
	SB_SLOT_ENTRY(a##6) SB_SLOT_ENTRY(a##7)
static const struct {
	int index;
	PyObject *(*fn)(PyObject *, PyObject *, PyObject *);
} slot_table[] = { SB_SLOT_ENTRY8(0) SB_SLOT_ENTRY8(1) SB_SLOT_ENTRY8(2)
		   SB_SLOT_ENTRY8(3) SB_SLOT_ENTRY8(4) SB_SLOT_ENTRY8(5)
		   SB_SLOT_ENTRY8(6) SB_SLOT_ENTRY8(7) };
static size_t slots_used;

/* The original's docstring with its text signature in front, the form
 * CPython keeps in ml_doc ("stat($module, /, path, ...)\n--\n\n..."), so
 * that __text_signature__ and __doc__ read as the original's. NULL when it
 * has neither. */
static const char *doc_of(struct sb_wrap *w)
{
	PyObject *sig = py.PyObject_GetAttrString(w->original,
						  "__text_signature__");
	PyObject *doc = py.PyObject_GetAttrString(w->original, "__doc__");
	const char *s = NULL, *d = NULL, *out = NULL;

	if (sig && py.PyObject_IsInstance(sig, py.PyUnicode_Type) == 1)
		s = py.PyUnicode_AsUTF8AndSize(sig, NULL);
	if (doc && py.PyObject_IsInstance(doc, py.PyUnicode_Type) == 1)
		d = py.PyUnicode_AsUTF8AndSize(doc, NULL);
	if (s)
		out = sb_arena_printf(sb_g.arena, "%s%s\n--\n\n%s", w->attr, s,
				      d ? d : "");
	else if (d)
		out = sb_arena_strdup(sb_g.arena, d);
	if (sig)
		py.Py_DecRef(sig);
	if (doc)
		py.Py_DecRef(doc);
	py.PyErr_Clear();
	return out;
}

PyObject *sb_wrap_call_original(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs)
{
	return py.PyObject_Call(w->original, args, kwargs);
}

static int set_in_module(const char *module, const char *attr, PyObject *fn,
			 PyObject *original)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod = mods ? py.PyDict_GetItemString(mods, module) : NULL;
	PyObject *cur;

	if (!mod)
		return 0;
	cur = py.PyObject_GetAttrString(mod, attr);
	if (!cur) {
		py.PyErr_Clear();
		return 0;
	}
	/* only where the module still holds the original (or our wrapper) */
	if (cur == original || cur == fn) {
		py.Py_DecRef(cur);
		return py.PyObject_SetAttrString(mod, attr, fn);
	}
	py.Py_DecRef(cur);
	return 0;
}

int sb_wrap_install(struct sb_wrap *w)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod, *capsule;

	if (w->fn)
		return 0;
	mod = mods ? py.PyDict_GetItemString(mods, w->module) : NULL;
	if (!mod)
		return 0;
	w->original = py.PyObject_GetAttrString(mod, w->attr);
	if (!w->original) {
		py.PyErr_Clear(); /* not on this version or platform */
		return 0;
	}
	w->def.ml_name = w->attr;
	w->def.ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	w->def.ml_doc = doc_of(w);
	if (slots_used < SB_ARRAY_LEN(slot_table)) {
		PyObject *modname = py.PyUnicode_FromString(w->module);

		if (!modname)
			return -1;
		slots[slot_table[slots_used].index] = w;
		w->def.ml_meth = (void *)slot_table[slots_used].fn;
		slots_used++;
		w->fn = py.PyCFunction_NewEx(&w->def, mod, modname);
		py.Py_DecRef(modname);
	} else {
		w->def.ml_meth = (void *)wrap_trampoline;
		capsule = py.PyCapsule_New(w, "pysb.wrap", NULL);
		if (!capsule)
			return -1;
		w->fn = py.PyCFunction_NewEx(&w->def, capsule, NULL);
		py.Py_DecRef(capsule);
	}
	if (!w->fn)
		return -1;
	if (py.PyObject_SetAttrString(mod, w->attr, w->fn) < 0)
		return -1;
	if (w->also && set_in_module(w->also, w->attr, w->fn, w->original) < 0)
		return -1;
	return sb_guard_replace_in_os_sets(w->original, w->fn);
}

/* A method: w->attr is "Class.method" in w->module; the original is the
 * function found on the class, and the wrapper is bound like a method, so
 * it gets the instance as its first argument. */
int sb_wrap_install_method(struct sb_wrap *w)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod, *cls, *capsule, *meth;
	const char *dot = strchr(w->attr, '.');
	char cname[128];
	int r;

	if (w->fn || !dot || (size_t)(dot - w->attr) >= sizeof(cname))
		return 0;
	mod = mods ? py.PyDict_GetItemString(mods, w->module) : NULL;
	if (!mod)
		return 0;
	memcpy(cname, w->attr, (size_t)(dot - w->attr));
	cname[dot - w->attr] = '\0';
	cls = py.PyObject_GetAttrString(mod, cname);
	if (!cls) {
		py.PyErr_Clear();
		return 0;
	}
	w->original = py.PyObject_GetAttrString(cls, dot + 1);
	if (!w->original) {
		py.PyErr_Clear();
		py.Py_DecRef(cls);
		return 0;
	}
	w->def.ml_name = dot + 1;
	w->def.ml_meth = (void *)wrap_trampoline;
	w->def.ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	capsule = py.PyCapsule_New(w, "pysb.wrap", NULL);
	w->fn = capsule ? py.PyCFunction_NewEx(&w->def, capsule, NULL) : NULL;
	if (capsule)
		py.Py_DecRef(capsule);
	meth = w->fn ? py.PyInstanceMethod_New(w->fn) : NULL;
	r = meth ? py.PyObject_SetAttrString(cls, dot + 1, meth) : -1;
	if (meth)
		py.Py_DecRef(meth);
	py.Py_DecRef(cls);
	return r;
}

/* os.supports_dir_fd, supports_fd, supports_follow_symlinks and
 * supports_effective_ids hold the function objects themselves: put the
 * replacement there too, or the sets hand the originals back. */
int sb_guard_replace_in_os_sets(PyObject *original, PyObject *fn)
{
	static const char *const sets[] = { "supports_dir_fd", "supports_fd",
					    "supports_follow_symlinks",
					    "supports_effective_ids" };
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *os = mods ? py.PyDict_GetItemString(mods, "os") : NULL;
	size_t i;

	if (!os)
		return 0;
	for (i = 0; i < SB_ARRAY_LEN(sets); i++) {
		PyObject *set = py.PyObject_GetAttrString(os, sets[i]);
		int has;

		if (!set) {
			py.PyErr_Clear();
			continue;
		}
		has = py.PySet_Contains(set, original);
		if (has == 1 && (py.PySet_Discard(set, original) < 0 ||
				 py.PySet_Add(set, fn) < 0)) {
			py.Py_DecRef(set);
			return -1;
		}
		if (has < 0)
			py.PyErr_Clear();
		py.Py_DecRef(set);
	}
	return 0;
}

/* ---- arguments ---- */

PyObject *sb_kwarg(PyObject *kwargs, const char *name)
{
	if (!kwargs)
		return NULL;
	return py.PyDict_GetItemString(kwargs, name);
}

int sb_arg_int(PyObject *arg, long *out)
{
	int r;

	if (!arg)
		return 0;
	r = py.PyObject_IsInstance(arg, py.PyLong_Type);
	if (r <= 0)
		return r;
	*out = py.PyLong_AsLong(arg);
	if (*out == -1 && py.PyErr_Occurred())
		return -1;
	return 1;
}

static int copy_path(const char *s, Py_ssize_t n, char buf[PATH_MAX])
{
	if (n <= 0 || (size_t)n >= PATH_MAX || memchr(s, '\0', (size_t)n))
		return 0; /* empty, too long or NUL: the call itself fails */
	memcpy(buf, s, (size_t)n);
	buf[n] = '\0';
	return 1;
}

int sb_arg_path(PyObject *arg, char buf[PATH_MAX])
{
	PyObject *fs, *bytes;
	const char *s;
	char *b;
	Py_ssize_t n;
	int r;

	if (!arg)
		return 0;
	r = py.PyObject_IsInstance(arg, py.PyLong_Type);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (py.PyObject_IsInstance(arg, py.PyUnicode_Type) == 1) {
		s = py.PyUnicode_AsUTF8AndSize(arg, &n);
		if (s)
			return copy_path(s, n, buf);
		py.PyErr_Clear(); /* surrogates: encode as the OS sees it */
	}
	fs = py.PyOS_FSPath(arg);
	if (!fs) {
		py.PyErr_Clear(); /* not a path: the original raises */
		return 0;
	}
	if (py.PyObject_IsInstance(fs, py.PyUnicode_Type) == 1) {
		bytes = py.PyUnicode_EncodeFSDefault(fs);
		py.Py_DecRef(fs);
		if (!bytes) {
			py.PyErr_Clear();
			return 0;
		}
	} else {
		bytes = fs;
	}
	if (py.PyBytes_AsStringAndSize(bytes, &b, &n) < 0) {
		py.PyErr_Clear();
		py.Py_DecRef(bytes);
		return 0;
	}
	r = copy_path(b, n, buf);
	py.Py_DecRef(bytes);
	return r;
}

/* Code the runtime and libraries run is exempt (2.6.7): decided by the
 * file of the code that called eval/exec/compile. */
bool sb_guard_caller_is_library(void)
{
	PyObject *frame = py.PyEval_GetFrame(), *code, *file;
	char buf[PATH_MAX];
	bool lib = true;
	size_t n;
	int r;

	if (!frame)
		return true; /* the interpreter itself (running -c, a script) */
	code = py.PyFrame_GetCode(frame);
	if (!code)
		return false;
	file = py.PyObject_GetAttrString(code, "co_filename");
	py.Py_DecRef(code);
	if (!file) {
		py.PyErr_Clear();
		return false;
	}
	r = sb_arg_path(file, buf);
	py.Py_DecRef(file);
	if (r != 1) {
		py.PyErr_Clear();
		return false;
	}
	if (strncmp(buf, "<frozen ", 8) == 0)
		return true;
	n = strlen(sb_g.pkgdir);
	if (strncmp(buf, sb_g.pkgdir, n) == 0 && buf[n] == '/')
		return true; /* python-sb's own package */
	if (strstr(buf, "/site-packages/") || strstr(buf, "/dist-packages/"))
		return true;
	n = sb_g.stdlib ? strlen(sb_g.stdlib) : 0;
	if (n && strncmp(buf, sb_g.stdlib, n) == 0 && buf[n] == '/')
		return true;
	lib = false;
	return lib;
}

/* ---- arming and the hook ---- */

static void die_with_python_error(const char *step)
{
	PyObject *t = NULL, *v = NULL, *tb = NULL, *s;
	const char *msg = "unknown error";

	py.PyErr_Fetch(&t, &v, &tb);
	s = v ? py.PyObject_Str(v) : NULL;
	if (s)
		msg = py.PyUnicode_AsUTF8AndSize(s, NULL);
	die("%s: %s", step, msg ? msg : "unknown error");
}

static PyObject *sys_str(const char *name)
{
	PyObject *o = py.PySys_GetObject(name);

	return o && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1 ? o : NULL;
}

/* dirname(os.__file__): the standard library, for the dynamic-code rule. */
static void find_stdlib(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *os = mods ? py.PyDict_GetItemString(mods, "os") : NULL;
	PyObject *file = os ? py.PyObject_GetAttrString(os, "__file__") : NULL;
	char buf[PATH_MAX];
	char *slash;

	if (file && sb_arg_path(file, buf) == 1) {
		slash = strrchr(buf, '/');
		if (slash)
			*slash = '\0';
		sb_g.stdlib = sb_arena_strdup(sb_g.arena, buf);
	}
	if (file)
		py.Py_DecRef(file);
	py.PyErr_Clear();
	(void)sys_str;
}

static const char *banner_config;
static bool banner_wanted;
/* an interactive session on a terminal: what the user types is theirs */
static bool interactive;
static const char *blob_cwd;

/* The learning target as python-sb's closing message names it: relative
 * to the working directory when under it. */
static const char *learn_display(void)
{
	const char *path = sb_g.policy->learn_path, *cwd = blob_cwd;
	size_t n = cwd ? strlen(cwd) : 0;

	if (!path)
		return banner_config;
	if (n && strncmp(path, cwd, n) == 0 && path[n] == '/' && n > 1)
		return path + n + 1;
	if (n == 1 && path[0] == '/')
		return path + 1;
	return path;
}

/* python-sb(1), the REPL: on stderr, where CPython prints its own (asked to be
 * quiet by the launcher). Colours only on a terminal that has them. */
static void print_banner(void)
{
	PyObject *ver = py.PySys_GetObject("version");
	PyObject *plat = py.PySys_GetObject("platform");
	const char *v = ver ? py.PyUnicode_AsUTF8AndSize(ver, NULL) : NULL;
	const char *pl = plat ? py.PyUnicode_AsUTF8AndSize(plat, NULL) : NULL;
	const char *term = getenv("TERM");
	bool colour = isatty(2) && term &&
		      (strstr(term, "color") || strstr(term, "256") ||
		       strstr(term, "true"));
	char buf[2048];
	int n;

	char line[PATH_MAX + 200];

	py.PyErr_Clear();
	if (sb_g.learning)
		snprintf(line, sizeof(line),
			 "API calls are LEARNED and saved in '%s' at the end "
			 "of the session.",
			 learn_display());
	else
		snprintf(line, sizeof(line),
			 "APIs are LIMITED according to the rules in '%s'",
			 banner_config);
	n = snprintf(buf, sizeof(buf),
		     "SANDBOXES Python %s on %s\n"
		     "%s%s%s\n"
		     "Type \"help\", \"copyright\", \"credits\" or "
		     "\"license\" for more information.\n",
		     v ? v : "?", pl ? pl : "?",
		     colour ? "\033[1;33m" : "*** ", line,
		     colour ? "\033[0m" : " ***");
	if (n > 0 && write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n
						     : sizeof(buf) - 1) < 0)
		return;
}

/* os-sandbox=none (python-sb(1), PROVIDERS): no guard, no recorder; the process
 * is only marked as in the sandbox (is_in_sandbox(), @sandbox calls made in
 * place) and pysandboxes is importable from python-sb's own copy. */
static bool provider_none;

static int arm_none(void)
{
	provider_none = true;
	sb_g.armed = true;
	if (!load_package())
		die_with_python_error("cannot load the pysandboxes package");
	return 0;
}

static int arm(const char *event)
{
	if (sb_g.policy->provider == SB_PROVIDER_NONE)
		return arm_none();
	sb_guard_busy++;
	find_stdlib();
	if (sb_files_arm() < 0)
		die_with_python_error("cannot install the file guard");
	if (sb_imports_arm() < 0)
		die_with_python_error("cannot install the import guard");
	if (sb_api_arm() < 0 || sb_api_dyn_arm() < 0)
		die_with_python_error("cannot install the API guard");
	if (sb_net_arm() < 0)
		die_with_python_error("cannot install the network guard");
	if (sb_learn_arm() < 0)
		die_with_python_error("cannot install the learning recorders");
	sb_guard_busy--;
	sb_g.armed = true;
	if (banner_wanted && strcmp(event, "cpython.run_stdin") == 0) {
		interactive = true;
		print_banner();
	}
	return 0;
}

bool sb_guard_caller_is_typed(void)
{
	PyObject *frame, *code, *file;
	char buf[PATH_MAX];
	int r;

	if (!interactive)
		return false;
	frame = py.PyEval_GetFrame();
	code = frame ? py.PyFrame_GetCode(frame) : NULL;
	if (!code)
		return false;
	file = py.PyObject_GetAttrString(code, "co_filename");
	py.Py_DecRef(code);
	r = file ? sb_arg_path(file, buf) : 0;
	if (file)
		py.Py_DecRef(file);
	py.PyErr_Clear();
	/* the standard REPL's "<stdin>" ("<stdin>-N" on 3.13), 3.13's
	 * "<python-input-N>" */
	return r == 1 && (strcmp(buf, "<stdin>") == 0 ||
			  strncmp(buf, "<stdin>-", 8) == 0 ||
			  strncmp(buf, "<python-input-", 14) == 0);
}

static int hook(const char *event, PyObject *args, void *ud)
{
	int r;

	if (!sb_g.armed) {
		/* The interactive hook comes before cpython.run_stdin: it is
		 * site's readline set-up, installed by start-up code that ran
		 * disarmed anyway. Armed, it would lose readline. A hook set
		 * by PYTHONSTARTUP code runs armed: run_startup armed us. */
		if (strncmp(event, "cpython.run_", 12) == 0 &&
		    strcmp(event, "cpython.run_interactivehook") != 0)
			return arm(event);
		return 0;
	}
	if (sb_guard_busy || provider_none)
		return 0;
	/* cheapest first: open is the hottest event */
	if (event[0] == 'o' && (r = sb_files_event(event, args)) != 0)
		return r;
	if (strcmp(event, "import") == 0 ||
	    strcmp(event, "compile") == 0 || strcmp(event, "exec") == 0)
		return sb_imports_event(event, args) < 0 ||
				       sb_api_event(event, args) < 0
			       ? -1
			       : 0;
	if (sb_str_starts(event, "socket."))
		return sb_net_event(event, args);
	if (event[0] != 'o' && sb_files_event(event, args) < 0)
		return -1;
	return sb_api_event(event, args);
}

/* ---- start-up ---- */

/* Take ourselves out of LD_PRELOAD, so that a program the sandboxed one
 * starts gets a plain environment (DESIGN.md: children inherit the kernel
 * layer, not the Python layer). */
static void clean_preload(void)
{
	const char *v = getenv("LD_PRELOAD");
	struct sb_buf b = { 0 };
	const char *s;

	if (!v)
		return;
	for (s = v; *s;) {
		size_t n = strcspn(s, ": ");
		const char *base;
		size_t bl;

		if (n) {
			base = memrchr(s, '/', n);
			base = base ? base + 1 : s;
			bl = n - (size_t)(base - s);
			if (!(bl == strlen(GUARD_LIB_NAME) &&
			      memcmp(base, GUARD_LIB_NAME, bl) == 0)) {
				if (b.len)
					sb_buf_puts(&b, ":");
				sb_buf_add(&b, s, n);
			}
		}
		s += n;
		while (*s == ':' || *s == ' ')
			s++;
	}
	if (b.len)
		setenv("LD_PRELOAD", b.s, 1);
	else
		unsetenv("LD_PRELOAD");
	sb_buf_free(&b);
}

/* make profile: the launcher's start time comes in $PYSB_PROFILE_T0, which
 * the program never sees; the first mark is the guard's own start. */
static void prof_start(void)
{
	const char *t0 = getenv(SB_PROF_T0_ENV);

	if (!t0)
		return;
	sb_prof_start_at(strtoull(t0, NULL, 10));
	unsetenv(SB_PROF_T0_ENV);
	sb_prof_mark("guard-start");
}

__attribute__((constructor)) static void sb_guard_init(int argc, char **argv,
							 char **envp)
{
	static struct sb_blob blob;
	const char *fdstr = getenv("PYSB_POLICY_FD");
	const char *err = NULL, *missing = NULL;
	struct sb_buf data = { 0 };
	long fd;
	int r;

	(void)envp;
	guard_argc = argc;
	guard_argv = argv;
	clean_preload();
	if (!fdstr)
		return; /* not started by python-sb: stay inert */
	prof_start();
	fd = sb_fd_parse(fdstr);
	if (fd < 0)
		die("bad PYSB_POLICY_FD '%s'", fdstr);
	unsetenv("PYSB_POLICY_FD");
	r = sb_fd_read_all((int)fd, &data);
	close((int)fd);
	if (r < 0)
		die("cannot read the policy: %s", strerror(-r));
	sb_prof_mark("guard-read");
	if (sb_capi_load(&missing) < 0)
		die("this interpreter does not export %s: it is not a CPython "
		    "python-sb can guard (3.9 or later, with its C API)",
		    missing);
	sb_prof_mark("guard-capi");
	sb_g.arena = sb_arena_new();
	if (sb_blob_read(sb_g.arena, data.s ? data.s : "", data.len, &blob,
			 &err) < 0)
		die("%s", err);
	sb_buf_free(&data);
	sb_g.pkgdir = blob.pkgdir;
	sb_g.learning = blob.learning;
	sb_g.log_fd = blob.log_fd;
	sb_g.log_relay = blob.log_relay;
	/* the programs it starts run without the guard: no log for them */
	if (sb_g.log_fd >= 0 && fcntl(sb_g.log_fd, F_SETFD, FD_CLOEXEC) < 0)
		die("the denial log's descriptor %d: %s", sb_g.log_fd,
		    strerror(errno));
	banner_wanted = blob.repl_banner;
	if (blob.learning) {
		if (blob.learn_fd < 3)
			die("learning without a record descriptor");
		sb_learn_init(blob.learn_fd);
	}
	banner_config = blob.config ? blob.config : ".py-sandboxes";
	blob_cwd = blob.cwd;
	if (sb_blob_parse_policy(&blob, &sb_g.policy) != 0 ||
	    sb_g.policy->errors.n) {
		struct sb_buf b = { 0 };

		if (sb_g.policy)
			sb_policy_format_errors(sb_g.policy, &b);
		die("the policy does not parse here:\n%s", b.s ? b.s : "");
	}
	sb_prof_mark("guard-policy");
	if (blob.debug_malloc) {
		/* the hook entry must carry the debug header CPython's
		 * debug free will check when it clears the hooks at exit */
		void (*setup)(void) = (void (*)(void))dlsym(
			RTLD_DEFAULT, "PyMem_SetupDebugHooks");

		if (!setup)
			die("this interpreter lacks PyMem_SetupDebugHooks");
		setup();
	}
	if (py.PySys_AddAuditHook(hook, NULL) != 0)
		die("cannot install the audit hook");
	sb_prof_mark("guard-armed");
	sb_prof_dump("guard");
}
