/* learn.c (guard) - learning mode inside the interpreter: each family
 * records what it would have refused and lets it happen. A record is one
 * line (format in src/learn/learn.h) written with one write() the moment it is
 * seen, so what was seen survives os._exit, a crash or SIGKILL. If python-sb
 * is gone, the program stops: a learning run nobody records is an
 * unguarded run. It is not exited from here (this runs inside the audit
 * hook): the guard halts, the access that could not be recorded is refused
 * where the caller can refuse it, and every event after it is refused
 * with SystemExit(255) (sb_guard_halt).
 */
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void sb_learn_init(int fd)
{
	sb_g.learn.fd = fd;
	/* programs the sandboxed one starts do not inherit it */
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* sb_learn_record("file", "r", "f", path, NULL): 0, or -1 when the
 * recorder is gone (the guard halted; no exception set) */
int sb_learn_record(const char *family, ...)
{
	struct sb_buf b = { 0 };
	const char *f;
	size_t off = 0;
	va_list ap;

	if (sb_g.halted)
		return -1;
	if (sb_g.learn.fd < 0)
		return 0;
	sb_buf_puts(&b, family);
	va_start(ap, family);
	while ((f = va_arg(ap, const char *))) {
		sb_buf_puts(&b, "\t");
		sb_buf_put_field(&b, f);
	}
	va_end(ap);
	sb_buf_puts(&b, "\n");
	while (off < b.len) {
		ssize_t w = write(sb_g.learn.fd, b.s + off, b.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			static const char msg[] =
				"python-sb: guard: the learning supervisor is "
				"gone; stopping the program (every event from "
				"now on is refused).\n";

			if (write(2, msg, sizeof(msg) - 1) < 0)
				w = 0; /* nowhere to say it: it halts */
			sb_buf_free(&b);
			sb_guard_halt();
			return -1;
		}
		off += (size_t)w;
	}
	sb_buf_free(&b);
	return 0;
}

int sb_learn_file(const char *canon, bool write)
{
	struct stat st;
	bool dir = stat(canon, &st) == 0 && S_ISDIR(st.st_mode);

	/* a process's own /proc entries are never learned (their name
	 * changes with the pid), nor a write there: record nothing, allow;
	 * the system's files (/proc/meminfo) are learned as any file */
	if (!sb_path_proc_own(canon) &&
	    !(write && sb_path_under(canon, "/proc")) &&
	    sb_learn_record("file", write ? "w" : "r", dir ? "d" : "f", canon,
			    NULL) < 0)
		return sb_guard_refuse_halted();
	return 0;
}

int sb_learn_lookup(const char *canon)
{
	struct stat st;

	/* only a directory importlib looked into may need listing */
	if (stat(canon, &st) == 0 && S_ISDIR(st.st_mode) &&
	    !sb_path_under(canon, "/proc") &&
	    sb_learn_record("file", "l", "d", canon, NULL) < 0)
		return sb_guard_refuse_halted();
	return 0;
}

/* ---- environment reads (os.environ is a Python mapping: no event) ---- */

static SB_VEC(const char *) set_by_program;

static bool program_set(const char *key)
{
	size_t i;

	for (i = 0; i < set_by_program.n; i++)
		if (strcmp(set_by_program.v[i], key) == 0)
			return true;
	return false;
}

/* A scan of os.environ (dict(os.environ), copy(), items(), values(),
 * **os.environ, a for loop) is not a use (4.3): every scan lists the keys
 * through _Environ.__iter__ first, and reads them back with the very
 * string objects it listed. So the keys a listing handed out are kept
 * here, by identity, and a read with one of them records nothing; a read
 * with any other string (os.environ["X"], .get("X"), getenv("X"),
 * "X" in os.environ) is an explicit read of that key. The objects stay
 * referenced so their identity is not reused; past SCAN_KEEP of them the
 * oldest scans are forgotten, which can only record a read, never lose
 * one. */
#define SCAN_KEEP 4096

static PyObject *scanned; /* {id(key): key} */

static bool from_scan(PyObject *key)
{
	PyObject *id;
	bool hit;

	if (!scanned)
		return false;
	id = py.PyLong_FromVoidPtr(key);
	hit = id && py.PyDict_GetItem(scanned, id) == key;
	py.Py_DecRef(id);
	py.PyErr_Clear();
	return hit;
}

/* os._Environ.__iter__(self): the keys, listed at once and remembered */
static PyObject *environ_iter(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	PyObject *gen = sb_wrap_call_original(w, args, kwargs), *keys, *it, *id;
	Py_ssize_t i, n;

	if (!gen)
		return NULL;
	keys = py.PySequence_List(gen);
	py.Py_DecRef(gen);
	if (!keys)
		return NULL;
	n = py.PyList_Size(keys);
	if (!scanned)
		scanned = py.PyDict_New();
	if (scanned && py.PyDict_Size(scanned) + n > SCAN_KEEP)
		py.PyDict_Clear(scanned);
	for (i = 0; scanned && i < n; i++) {
		PyObject *key = py.PyList_GetItem(keys, i);

		id = py.PyLong_FromVoidPtr(key);
		if (id) {
			py.PyDict_SetItem(scanned, id, key);
			py.Py_DecRef(id);
		}
	}
	py.PyErr_Clear();
	it = py.PyObject_GetIter(keys);
	py.Py_DecRef(keys);
	return it;
}

/* A proxy variable, as urllib.request.getproxies_environment() finds one
 * (its lower-case name ends in "_proxy"): urllib, and requests and pip
 * through it, read them by a scan only, and the enforcing run without them
 * goes to the host directly. */
static bool proxy_name(PyObject *key)
{
	const char *k = py.PyUnicode_AsUTF8AndSize(key, NULL);
	size_t n = k ? strlen(k) : 0;

	py.PyErr_Clear();
	return n > 6 && strncasecmp(k + n - 6, "_proxy", 6) == 0;
}

/* os._Environ.__getitem__(self, key), as a method: args = (self, key) */
static PyObject *environ_getitem(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	PyObject *key = py.PyTuple_Size(args) > 1 ? py.PyTuple_GetItem(args, 1)
						  : NULL;
	PyObject *res = sb_wrap_call_original(w, args, kwargs);
	const char *k;

	/* a read that found the variable, of one the program did not set */
	if (res && key && py.PyObject_IsInstance(key, py.PyUnicode_Type) == 1 &&
	    (!from_scan(key) || proxy_name(key))) {
		k = py.PyUnicode_AsUTF8AndSize(key, NULL);
		py.PyErr_Clear();
		if (k && !program_set(k) &&
		    sb_learn_record("env", k, NULL) < 0) {
			py.Py_DecRef(res);
			sb_guard_refuse_halted();
			return NULL;
		}
	}
	return res;
}

static PyObject *environ_setitem(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	PyObject *key = py.PyTuple_Size(args) > 1 ? py.PyTuple_GetItem(args, 1)
						  : NULL;
	const char *k;

	if (key && py.PyObject_IsInstance(key, py.PyUnicode_Type) == 1) {
		k = py.PyUnicode_AsUTF8AndSize(key, NULL);
		if (k && !program_set(k))
			*SB_VEC_PUSH(sb_g.arena, set_by_program) =
				sb_arena_strdup(sb_g.arena, k);
		py.PyErr_Clear();
	}
	return sb_wrap_call_original(w, args, kwargs);
}

static struct sb_wrap env_wraps[] = {
	{ .module = "os", .attr = "_Environ.__getitem__",
	  .call = environ_getitem },
	{ .module = "os", .attr = "_Environ.__iter__", .call = environ_iter },
	{ .module = "os", .attr = "_Environ.__setitem__",
	  .call = environ_setitem },
};

/* The interpreter reads PYTHONPATH at its start, in C, before the guard
 * arms: no read of it is seen, yet the enforcing run, which starts with
 * the env= rules only, does not find the modules it names. Learned as read
 * when set and honoured (not -E or -I). The other PYTHON* variables only
 * tune the run (PYTHONUNBUFFERED, set machine-wide, would be learned by
 * every program) or run code (PYTHONSTARTUP, PYTHONWARNINGS's categories):
 * not learned. */
static const char *const startup_env[] = { "PYTHONPATH" };

/* ---- variables the C library reads (no event, no os.environ read) ----
 * A small list, each learned only when the host has it set (not the
 * program), and when what reads it ran:
 * - TZ: CPython initialises 'time' at every start (time.timezone,
 *   time.tzname), and each local-time conversion (time.localtime,
 *   datetime.now, logging's timestamps) follows it: learned when the guard
 *   arms. Without it the enforcing run answers in the zone of
 *   /etc/localtime, silently.
 * - LC_ALL, LC_<category>, LANG: read by setlocale(category, "") (the
 *   program's locale.setlocale(..., ""), getpreferredencoding on 3.9 and
 *   3.10), in libc's order: LC_ALL decides alone when set, else each
 *   category's LC_ variable, else LANG.
 * The start's own setlocale(LC_CTYPE, "") is not learned: CPython coerces
 * a C locale to UTF-8, and LANG would land in every learned file. */
static int learn_libc_var(const char *k)
{
	const char *v = getenv(k);

	if (!v || !*v || program_set(k))
		return 0;
	return sb_learn_record("env", k, NULL);
}

static const struct {
	int category;
	const char *name;
} lc_vars[] = {
	{ LC_CTYPE, "LC_CTYPE" },
	{ LC_NUMERIC, "LC_NUMERIC" },
	{ LC_TIME, "LC_TIME" },
	{ LC_COLLATE, "LC_COLLATE" },
	{ LC_MONETARY, "LC_MONETARY" },
	{ LC_MESSAGES, "LC_MESSAGES" },
#ifdef LC_PAPER
	{ LC_PAPER, "LC_PAPER" },
	{ LC_NAME, "LC_NAME" },
	{ LC_ADDRESS, "LC_ADDRESS" },
	{ LC_TELEPHONE, "LC_TELEPHONE" },
	{ LC_MEASUREMENT, "LC_MEASUREMENT" },
	{ LC_IDENTIFICATION, "LC_IDENTIFICATION" },
#endif
};

/* setlocale(category, ""): 0, or -1 when the recorder is gone */
static int learn_locale_vars(long category)
{
	const char *all = getenv("LC_ALL");
	bool lang = false;
	size_t i;

	if (all && *all)
		return learn_libc_var("LC_ALL");
	for (i = 0; i < SB_ARRAY_LEN(lc_vars); i++) {
		const char *v;

		if (category != LC_ALL && category != lc_vars[i].category)
			continue;
		v = getenv(lc_vars[i].name);
		if (!v || !*v)
			lang = true;
		else if (learn_libc_var(lc_vars[i].name) < 0)
			return -1;
	}
	return lang ? learn_libc_var("LANG") : 0;
}

/* _locale.setlocale(category, locale=None): a locale "" is taken from the
 * environment */
static PyObject *setlocale_call(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs)
{
	PyObject *cat = sb_arg(args, kwargs, 0, "category");
	PyObject *loc = sb_arg(args, kwargs, 1, "locale");
	long c;

	if (cat && loc && py.PyObject_IsInstance(loc, py.PyUnicode_Type) == 1 &&
	    py.PyObject_Length(loc) == 0 && sb_arg_int(cat, &c) == 1 &&
	    learn_locale_vars(c) < 0) {
		sb_guard_refuse_halted();
		return NULL;
	}
	py.PyErr_Clear();
	return sb_wrap_call_original(w, args, kwargs);
}

static struct sb_wrap setlocale_wrap = { .module = "_locale",
					 .attr = "setlocale",
					 .call = setlocale_call };

int sb_learn_module_ready(PyObject *mod, const char *name)
{
	int r = 0;

	if (!sb_g.learning)
		return 0;
	if (name && strcmp(name, setlocale_wrap.module) == 0 &&
	    py.PyObject_HasAttrString(mod, setlocale_wrap.attr)) {
		sb_guard_busy_enter();
		r = sb_wrap_install_in(&setlocale_wrap, mod);
		sb_guard_busy_leave();
	}
	return r;
}

static bool env_ignored(void)
{
	PyObject *flags = py.PySys_GetObject("flags");
	PyObject *v = flags ? py.PyObject_GetAttrString(flags,
						       "ignore_environment")
			    : NULL;
	bool yes = v && py.PyObject_IsTrue(v) == 1;

	py.Py_DecRef(v);
	py.PyErr_Clear();
	return yes;
}

int sb_learn_arm(void)
{
	PyObject *mods, *mod;
	size_t i;

	if (!sb_g.learning)
		return 0;
	for (i = 0; !env_ignored() && i < SB_ARRAY_LEN(startup_env); i++) {
		const char *v = getenv(startup_env[i]);

		if (v && *v && sb_learn_record("env", startup_env[i], NULL) < 0)
			return -1;
	}
	if (learn_libc_var("TZ") < 0)
		return -1;
	for (i = 0; i < SB_ARRAY_LEN(env_wraps); i++)
		if (sb_wrap_install_method(&env_wraps[i]) < 0)
			return -1;
	/* _locale made before the guard armed (a start-up import) */
	mods = py.PyImport_GetModuleDict();
	mod = mods ? py.PyDict_GetItemString(mods, setlocale_wrap.module)
		   : NULL;
	if (mod && sb_learn_module_ready(mod, setlocale_wrap.module) < 0)
		return -1;
	return 0;
}
