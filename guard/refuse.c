/* refuse.c - how the guard refuses: the pysandboxes exception classes
 * (loaded once, with the package, without touching sys.path), the
 * exception raised for each family, the denial log's record of each
 * refusal and the seed's one line per refusal on the program's stderr, and
 * the check of a registry entry against python-api=. The families decide;
 * this file only says no, the same way for all of them.
 *
 * It must never turn a refusal into an allowance: a failure to load a
 * class, to log or to print falls back to a builtin exception and still
 * returns -1.
 */
#include "exit_status.h"
#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api_registry.h"
#include "denial.h"


static const char *const exc_names[SB_EXC_COUNT] = {
	[SB_EXC_FILE_NOT_FOUND] = "RuleFileNotFoundError",
	[SB_EXC_PERMISSION] = "RulePermissionError",
	[SB_EXC_SOCKET] = "RuleSocketConnectionRefusedError",
	[SB_EXC_MODULE] = "RuleModuleNotFoundError",
};

/* ---- loading the pysandboxes package without touching sys.path ---- */

/* Runs with busy set. It needs no finder: each module is loaded from its
 * file and registered by hand, and e.py imports nothing that is not loaded
 * at start-up, so a program that emptied sys.meta_path still gets its
 * refusals as the right classes. */
static const char loader_src[] =
	"def _pysb_load(pkgdir, argv, guard_dir):\n"
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
	"        pm._guard_dir = guard_dir\n"
	"        ps.loader.exec_module(pm)\n"
	"    except BaseException:\n"
	"        sys.modules.pop('pysandboxes', None)\n"
	"        sys.modules.pop('pysandboxes.e', None)\n"
	"        raise\n"
	"    pm._in_sandbox = True\n"
	"    return pm\n";


static PyObject *argv_tuple(void)
{
	PyObject *t = py.PyTuple_New(sb_g.argc > 0 ? sb_g.argc : 0);
	PyObject *s;
	int i;

	for (i = 0; t && i < sb_g.argc; i++) {
		s = py.PyUnicode_DecodeFSDefault(sb_g.argv[i]);
		if (!s || py.PyTuple_SetItem(t, i, s) < 0) {
			py.Py_DecRef(t);
			return NULL;
		}
	}
	return t;
}

/* The directory this library was loaded from: in a build directory the
 * partial-mode transport is there too (the build writes nothing into the
 * package), and a worker's package loads it from there (_worker.py).
 * None when it cannot tell. */
static PyObject *guard_dir(void)
{
	char dir[PATH_MAX];
	PyObject *s = NULL;
	Dl_info info;
	const char *slash;

	if (dladdr((void *)guard_dir, &info) && info.dli_fname &&
	    info.dli_fname[0] == '/' &&
	    (slash = strrchr(info.dli_fname, '/')) != info.dli_fname &&
	    (size_t)(slash - info.dli_fname) < sizeof(dir)) {
		memcpy(dir, info.dli_fname, (size_t)(slash - info.dli_fname));
		dir[slash - info.dli_fname] = '\0';
		s = py.PyUnicode_DecodeFSDefault(dir);
	}
	if (s)
		return s;
	py.PyErr_Clear();
	py.Py_IncRef(py._Py_NoneStruct);
	return py._Py_NoneStruct;
}

/* Taken once, when the package loads: what the program later does to the
 * module's attributes cannot change what the guard raises. */
static int cache_classes(PyObject *mod)
{
	PyObject *em;
	int k;

	for (k = 0; k < SB_EXC_COUNT; k++) {
		sb_g.refuse.exc_class[k] =
			py.PyObject_GetAttrString(mod, exc_names[k]);
		if (!sb_g.refuse.exc_class[k])
			return -1;
	}
	sb_g.refuse.api_exc_class = py.PyObject_GetAttrString(mod,
						  "RuleApiPermissionError");
	em = py.PyObject_GetAttrString(mod, "e");
	if (em) {
		sb_g.refuse.report_fn =
			py.PyObject_GetAttrString(em, "_report_denial");
		py.Py_DecRef(em);
	}
	return sb_g.refuse.api_exc_class && sb_g.refuse.report_fn ? 0 : -1;
}

/* The pysandboxes module, loaded once; NULL with an exception on failure. */
static PyObject *load_package(void)
{
	PyObject *globals, *res, *fn, *args, *mod = NULL;

	if (sb_g.refuse.pkg)
		return sb_g.refuse.pkg;
	sb_guard_busy_enter();
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
	args = py.PyTuple_New(3);
	if (!fn || !args)
		goto out_globals;
	py.PyTuple_SetItem(args, 0, py.PyUnicode_DecodeFSDefault(sb_g.pkgdir));
	py.PyTuple_SetItem(args, 1, argv_tuple());
	py.PyTuple_SetItem(args, 2, guard_dir());
	mod = py.PyObject_CallObject(fn, args);
	py.Py_DecRef(args);
	sb_g.refuse.pkg = mod;
	if (mod && cache_classes(mod) < 0) {
		/* stays referenced; the error propagates */
		sb_g.refuse.pkg = NULL;
		mod = NULL;
	}
out_globals:
	py.Py_DecRef(globals);
out:
	sb_guard_busy_leave();
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

void sb_guard_log_started(void)
{
	ssize_t n;

	if (sb_g.log_fd < 0 || sb_g.learning || !sb_g.log_relay)
		return;
	do
		n = write(sb_g.log_fd, SB_RELAY_STARTED,
			  sizeof(SB_RELAY_STARTED) - 1);
	while (n < 0 && errno == EINTR);
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

	if (!sb_g.refuse.report_fn || inside || sb_g.learning ||
	    !sb_g.policy->log_stderr)
		return;
	/* a connection is reported whoever made it (an HTTP library's
	 * refusal is the application's); another refusal only when the
	 * application's own code met it: the standard library's optional
	 * imports, importlib's bytecode writes and probes are routine, and
	 * their exceptions are handled where they arise */
	if (!network &&
	    (!py.PyEval_GetFrame() || sb_guard_caller_is_library()))
		return; /* frameless: the interpreter's traceback printer */

	inside = true;
	py.PyErr_Fetch(&t, &v, &tb);
	args = py.PyTuple_New(1);
	if (args) {
		py.Py_IncRef(exc);
		py.PyTuple_SetItem(args, 0, exc);
		res = py.PyObject_CallObject(sb_g.refuse.report_fn, args);
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

	/* loaded at arming, never here: the program's code would run in
	 * the loader (its builtins, its sys.modules) */
	cls = sb_g.refuse.exc_class[kind];
	if (!cls)
		return raise_fallback(PY_EXC(PyExc_PermissionError), message);
	args = py.PyTuple_New(name ? 2 : 1);
	if (!args)
		return -1;
	py.PyTuple_SetItem(args, 0, py.PyUnicode_FromString(message));
	if (name)
		py.PyTuple_SetItem(args, 1, py.PyUnicode_DecodeFSDefault(name));
	exc = sb_guard_call(cls, args);
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
	/* loaded at arming, never here: the program's code would run in
	 * the loader (its builtins, its sys.modules) */
	if (!sb_g.refuse.api_exc_class) {
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
	exc = sb_guard_call(sb_g.refuse.api_exc_class, args);
	if (!exc)
		return -1;
	report_denial(exc, false);
	py.PyErr_SetObject(sb_g.refuse.api_exc_class, exc);
	py.Py_DecRef(exc);
	return -1;
}

void sb_guard_halt(void)
{
	sb_g.halted = true;
	sb_g.armed = false; /* the hook's and wrappers' cold branch */
}

/* SystemExit(255), the interpreter's own way out, taken after the hook
 * returns. After a failed arming no program code has run (its start was
 * the event refused first), and -i's REPL or an interpreter step after it
 * ends the same way rather than loop on refusals; after learning lost its
 * recorder, the program's next event ends it, where the guard used to
 * _exit inside the hook. */
int sb_guard_refuse_halted(void)
{
	PyObject *code = py.PyLong_FromLong(SB_EXIT_SETUP);

	if (code) {
		py.PyErr_SetObject(PY_EXC(PyExc_SystemExit), code);
		py.Py_DecRef(code);
	}
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
	if (sb_g.learning)
		return sb_learn_record("api", qualname, NULL) < 0
			       ? sb_guard_refuse_halted()
			       : 0;
	return sb_guard_raise_api(
		qualname, sb_api_category_name(sb_api_registry[i].category));
}
