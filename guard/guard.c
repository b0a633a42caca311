/* guard.c - the guard library's core, the dispatcher: loaded into the
 * user's interpreter by LD_PRELOAD, before Py_Initialize. Its constructor
 * reads the policy from the descriptor python-sb passed, parses it with the
 * shared parser, cleans its traces from the environment and installs one C
 * audit hook. The hook
 * arms on the first cpython.run_* event, so CPython's own start-up runs
 * disarmed and user code never does. There is no Python-visible state: no
 * flag to reset, no original to recover. The families judge (files.c,
 * net.c, imports.c, api.c, learn.c) with the helpers of helpers.h; this
 * file only starts, arms and routes.
 *
 * A failure in the constructor (before Py_Initialize) exits with status 255
 * and a message. A failure to arm, inside the hook, does not exit there: it
 * prints the message, refuses the cpython.run_* event with SystemExit(255),
 * so that the interpreter ends before the program's first line and with
 * that status, and refuses every event after it. Never run unguarded.
 * After arming, a failure inside a check refuses.
 */
#include "exit_status.h"
#include "guard_seal.h"
#include "guard.h"
#include "api_registry.h"
#include "caps.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "policy_blob.h"
#include "prof.h"

#define GUARD_LIB_NAME "libpysb-guard.so"

struct sb_guard sb_g = {
	.log_fd = -1,
	.learn = { .fd = -1 },
	.api = { .modules_seen = -1 },
	.eval = { .default_profile = -1 },
};
__thread int sb_guard_busy;

/* The frame each busy level was entered from: only the events raised
 * while that frame is the current one are the guard's own (C code it
 * called directly). Python code the guard calls runs in frames of its
 * own, and any of it may be the program's: a method it planted on a
 * class the guard calls, a builtin it swapped, a mapping's get(). */
#define BUSY_DEPTH 32
static __thread PyObject *busy_frames[BUSY_DEPTH];

void sb_guard_busy_enter(void)
{
	if (sb_guard_busy >= 0 && sb_guard_busy < BUSY_DEPTH)
		busy_frames[sb_guard_busy] = py.PyEval_GetFrame();
	sb_guard_busy++;
}

void sb_guard_busy_leave(void)
{
	sb_guard_busy--;
}

/* The guard compiling code of its own (the eval guard's checked source,
 * the scandir helpers): only the compile and exec events raised from the
 * frame it was entered from pass, not the calls of a finalizer of the
 * program's that a collection runs meanwhile in that frame. */
static __thread int own_compile;
static __thread PyObject *own_compile_frame;

void sb_guard_own_compile_enter(void)
{
	own_compile_frame = py.PyEval_GetFrame();
	own_compile++;
}

void sb_guard_own_compile_leave(void)
{
	own_compile--;
}

static bool own_compile_event(const char *event)
{
	return own_compile > 0 &&
	       (strcmp(event, "compile") == 0 || strcmp(event, "exec") == 0) &&
	       py.PyEval_GetFrame() == own_compile_frame;
}

bool sb_guard_is_busy(void)
{
	int d = sb_guard_busy;

	if (d <= 0)
		return false;
	if (!sb_g.armed || d > BUSY_DEPTH)
		return true; /* arming: the program has not run yet */
	return py.PyEval_GetFrame() == busy_frames[d - 1];
}

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

/* ---- arming and the hook ---- */

/* Arming failed at 'step' (a Python exception set, or none): name the step
 * on stderr and refuse the cpython.run_* event with SystemExit(255). The
 * interpreter then ends as after any exception there (no program code
 * runs, the status is the launcher's set-up failure), and the hook refuses
 * whatever comes after (sb_g.halted). */
static int arm_failed(const char *step)
{
	PyObject *t = NULL, *v = NULL, *tb = NULL, *s;
	const char *msg = NULL;
	char buf[2048];
	size_t i;
	int n;

	py.PyErr_Fetch(&t, &v, &tb);
	s = v ? py.PyObject_Str(v) : NULL;
	if (s)
		msg = py.PyUnicode_AsUTF8AndSize(s, NULL);
	n = snprintf(buf, sizeof(buf), "python-sb: guard: %s: %s\n", step,
		     msg ? msg : "unknown error");
	if (n > 0 && write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n
						     : sizeof(buf) - 1) < 0)
		n = 0; /* nowhere to say it: the refusal stands */
	{
		PyObject *held[] = { s, t, v, tb };

		for (i = 0; i < SB_ARRAY_LEN(held); i++)
			if (held[i])
				py.Py_DecRef(held[i]);
	}
	py.PyErr_Clear();
	sb_guard_halt();
	return sb_guard_refuse_halted();
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
	py.Py_DecRef(file);
	py.PyErr_Clear();
	(void)sys_str;
}


/* The learning target as python-sb's closing message names it: relative
 * to the working directory when under it. */
static const char *learn_display(void)
{
	const char *path = sb_g.policy->learn_path, *cwd = sb_g.banner.cwd;
	size_t n = cwd ? strlen(cwd) : 0;

	if (!path)
		return sb_g.banner.config;
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
			 sb_g.banner.config);
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
static int arm_none(void)
{
	if (sb_guard_load_package() < 0)
		return arm_failed("cannot load the pysandboxes package");
	sb_g.provider_none = true;
	sb_g.armed = true;
	return 0;
}

/* Each family installs its wrappers and exposures (GIL held, busy set), in
 * this order; the step names what failed. */
static const struct {
	int (*arm)(void);
	const char *step;
} arm_steps[] = {
	{ sb_files_arm, "cannot install the file guard" },
	{ sb_imports_arm, "cannot install the import guard" },
	{ sb_api_arm, "cannot install the API guard" },
	{ sb_api_dyn_arm, "cannot install the API guard" },
	{ sb_api_kill_arm, "cannot install the API guard" },
	{ sb_net_arm, "cannot install the network guard" },
	{ sb_clibs_arm, "cannot install the file guard" },
	{ sb_learn_arm, "cannot install the learning recorders" },
};

/* The calling thread's state, or NULL, without the fatal error
 * PyThreadState_Get() raises when there is none: 3.13's public name, the
 * private one before, looked up at arming (sb_g.thread_state). */
static void *thread_state(void)
{
	return sb_g.thread_state ? sb_g.thread_state() : NULL;
}

static int arm(const char *event)
{
	size_t i;

	if (sb_g.policy->provider == SB_PROVIDER_NONE)
		return arm_none();
	sb_guard_busy_enter();
	find_stdlib();
	for (i = 0; i < SB_ARRAY_LEN(arm_steps); i++)
		if (arm_steps[i].arm() < 0) {
			sb_guard_busy_leave();
			return arm_failed(arm_steps[i].step);
		}
	/* after the wrappers: genuine means a builtin function as they are */
	sb_wrap_take_get_referents();
	/* the exception classes, now: loaded at the first refusal, the
	 * loader ran busy with the program's builtins and sys.modules (its
	 * own __import__ ran with every check off) */
	if (sb_guard_load_package() < 0) {
		sb_guard_busy_leave();
		return arm_failed("cannot load the pysandboxes package");
	}
	sb_guard_busy_leave();
	sb_g.thread_state = (void *(*)(void))dlsym(
		RTLD_DEFAULT, "PyThreadState_GetUnchecked");
	if (!sb_g.thread_state)
		sb_g.thread_state = (void *(*)(void))dlsym(
			RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
	sb_g.interp = thread_state() ? py.PyThreadState_GetInterpreter(
					       thread_state())
				     : NULL;
	sb_g.armed = true;
	sb_g.starting = true;
	sb_g.stdin_program = strcmp(event, "cpython.run_stdin") == 0;
	/* what the interpreter's own start did (site.py looking up the
	 * home directory...) was not the program's: the supervisor's
	 * Landlock records begin here */
	sb_guard_log_started();
	if (sb_g.banner.wanted && strcmp(event, "cpython.run_stdin") == 0) {
		sb_g.interactive = true;
		print_banner();
	}
	return 0;
}

/* ---- the dispatch table ---- */

typedef int (*sb_event_fn)(const char *event, PyObject *args);

/* Which families judge an event, in order; the first refusal stands. A
 * family that does not know the event lets it pass, so a route names
 * every family that may. */
struct route {
	const char *name; /* the event, or a prefix ("socket.") */
	bool prefix;
	sb_event_fn judge[2];
};

/* Tried in order, so the hottest first: open is every open(). What no
 * route names goes to the files (os.* and the other path events) and then
 * the API guard (the registry's doors). The network guard owns socket.*
 * alone. */
static const struct route routes[] = {
	{ "open", false, { sb_files_event, sb_api_event } },
	{ "import", false, { sb_imports_event, sb_api_event } },
	{ "compile", false, { sb_imports_event, sb_api_event } },
	{ "exec", false, { sb_imports_event, sb_api_event } },
	{ "function.__new__", false, { sb_imports_event, sb_api_event } },
	{ "socket.", true, { sb_net_event, NULL } },
};
static const struct route other_events = { "", true,
					   { sb_files_event, sb_api_event } };

static const struct route *route_of(const char *event)
{
	const struct route *r;

	for (r = routes; r < routes + SB_ARRAY_LEN(routes); r++)
		if (event[0] == r->name[0] &&
		    (r->prefix ? sb_str_starts(event, r->name)
			       : strcmp(event, r->name) == 0))
			return r;
	return &other_events;
}

/* Is the calling thread in another interpreter than the one the guard
 * armed in? A subinterpreter (_interpreters.create, 3.12's
 * _xxsubinterpreters.create, _testcapi's run_in_subinterp: process-exec
 * entries, judged when the program asks for one) has its own modules,
 * builtins and allocator: the guard's wrappers are not in it, and its
 * objects (the rules' caches, the exception classes, the code objects of
 * the line cache) are the armed interpreter's, which another interpreter
 * must not touch: CPython 3.13's test_importlib ended in "double free or
 * corruption" there, and raising in a subinterpreter that is still
 * starting crashes it. Like a child process, a subinterpreter runs
 * without the Python layer, under the kernel layer (weaknesses.md 13):
 * the audit hook, which every interpreter calls, leaves its events
 * alone. */
static bool foreign_interpreter(void)
{
	void *ts = thread_state();

	return ts && sb_g.interp &&
	       py.PyThreadState_GetInterpreter(ts) != sb_g.interp;
}

static int hook(const char *event, PyObject *args, void *ud)
{
	const struct route *r;
	size_t i;

	if (!sb_g.armed) {
		if (sb_g.halted)
			return sb_guard_refuse_halted();
		/* The interactive hook comes before cpython.run_stdin: it is
		 * site's readline set-up, installed by start-up code that ran
		 * disarmed anyway. Armed, it would lose readline. A hook set
		 * by PYTHONSTARTUP code runs armed: run_startup armed us. */
		if (strncmp(event, "cpython.run_", 12) == 0 &&
		    strcmp(event, "cpython.run_interactivehook") != 0) {
			if (arm(event) < 0)
				return -1;
			sb_imports_started(event, args);
			return 0;
		}
		return 0;
	}
	if (sb_g.provider_none || foreign_interpreter())
		return 0;
	if (sb_guard_is_busy() || own_compile_event(event))
		return 0;
	/* -i: the REPL after the program compiles what is typed, frameless */
	if (strcmp(event, "cpython.run_interactivehook") == 0)
		sb_g.stdin_program = true;
	r = route_of(event);
	for (i = 0; i < SB_ARRAY_LEN(r->judge) && r->judge[i]; i++)
		if (r->judge[i](event, args) < 0)
			return -1;
	return 0;
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

/* Turn the seal's two words into `-X SB_SEAL_OPEN` padded with spaces to
 * the seal's length, in place: the command line keeps its layout, so ps
 * and /proc/PID/cmdline show the short option, not the seal's code. */
_Static_assert(sizeof(SB_SEAL_OPEN) <= sizeof(SB_SEAL_CODE),
	       "the seal's replacement must fit in its place");

static void open_seal(char **argv)
{
	size_t n = strlen(argv[2]), k = sizeof(SB_SEAL_OPEN) - 1;

	memcpy(argv[1], "-X", 2);
	memcpy(argv[2], SB_SEAL_OPEN, k);
	memset(argv[2] + k, ' ', n - k);
}

__attribute__((constructor)) static void sb_guard_init(int argc, char **argv,
							 char **envp)
{
	struct sb_blob *blob;
	const char *fdstr = getenv("PYSB_POLICY_FD");
	const char *err = NULL, *missing = NULL;
	struct sb_buf data = { 0 };
	long fd;
	int r;

	(void)envp;
	sb_g.argc = argc;
	sb_g.argv = argv;
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
	/* in the arena: the policy keeps pointing into it */
	blob = sb_arena_alloc(sb_g.arena, sizeof(*blob));
	if (sb_blob_read(sb_g.arena, data.s ? data.s : "", data.len, blob,
			 &err) < 0)
		die("%s", err);
	sb_buf_free(&data);
	sb_g.pkgdir = blob->pkgdir;
	sb_g.learning = blob->learning;
	sb_g.log_fd = blob->log_fd;
	sb_g.log_relay = blob->log_relay;
	sb_g.started_sec = blob->started_sec;
	sb_g.started_nsec = blob->started_nsec;
	/* the programs it starts run without the guard: no log for them */
	if (sb_g.log_fd >= 0 && fcntl(sb_g.log_fd, F_SETFD, FD_CLOEXEC) < 0)
		die("the denial log's descriptor %d: %s", sb_g.log_fd,
		    strerror(errno));
	sb_g.banner.wanted = blob->repl_banner;
	if (blob->learning) {
		if (blob->learn_fd < 3)
			die("learning without a record descriptor");
		sb_learn_init(blob->learn_fd);
	}
	sb_g.banner.config = blob->config ? blob->config : ".py-sandboxes";
	sb_g.banner.cwd = blob->cwd;
	if (sb_blob_parse_policy(blob, &sb_g.policy) != 0 ||
	    sb_g.policy->errors.n) {
		struct sb_buf b = { 0 };

		if (sb_g.policy)
			sb_policy_format_errors(sb_g.policy, &b);
		die("the policy does not parse here:\n%s", b.s ? b.s : "");
	}
	sb_prof_mark("guard-policy");
	/* under os-sandbox=subprocess python-sb execs the interpreter as it
	 * was started: run as root, the program held root's capabilities
	 * (a device node made with mknod in an exposed tree, the host's name
	 * and clock set, any file read past its permissions). The kernel
	 * providers empty them before their filter (weaknesses.md 34, 37);
	 * here the guard does, before the interpreter runs any code.
	 * os-sandbox=none applies nothing, by design; a policy that grants
	 * the whole privileges category (python-api=ALLOW:privileges, or
	 * ALLOW:*) grants what root may do. */
	if (sb_g.policy->provider != SB_PROVIDER_NONE && sb_caps_held() &&
	    !sb_api_category_granted(SB_API_PRIVILEGES) &&
	    (r = sb_caps_drop()) < 0)
		die("dropping the capabilities: %s", strerror(-r));
	if (blob->debug_malloc) {
		/* the hook entry must carry the debug header CPython's
		 * debug free will check when it clears the hooks at exit */
		void (*setup)(void) = (void (*)(void))dlsym(
			RTLD_DEFAULT, "PyMem_SetupDebugHooks");

		if (!setup)
			die("this interpreter lacks PyMem_SetupDebugHooks");
		setup();
	}
	/* open the seal python-sb put first on the command line, which Python
	 * has not read yet (guard_seal.h); a run without it was not started
	 * by python-sb's launcher */
	if (argc < 3 || strcmp(argv[1], SB_SEAL_FLAG) != 0 ||
	    strcmp(argv[2], SB_SEAL_CODE) != 0)
		die("the interpreter's command line does not start with "
		    "python-sb's seal: it was not started by python-sb");
	open_seal(argv);
	if (py.PySys_AddAuditHook(hook, NULL) != 0)
		die("cannot install the audit hook");
	sb_prof_mark("guard-armed");
	sb_prof_dump("guard");
}
