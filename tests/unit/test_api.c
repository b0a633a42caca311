/* test_api.c - the sensitive API registry table (seed-spec 6) and the
 * python-api= rules (2.6.6): table invariants and counts, every syntax form
 * and error message, and the specificity resolution. */
#include <stdlib.h>

#include "api_registry.h"
#include "policy_internal.h"
#include "tap.h"

#define ERR_ACTIONS "['ALLOW', 'DENY']"
#define ERR_CATEGORIES                                                         \
	"['deserialization', 'dynamic-code', 'introspection', 'native', "     \
	"'privileges', 'process-control', 'process-exec', 'threads']"

/* The names the seed spec does not list: subinterpreter creators, and
 * ctypes' prebuilt memory functions, which raise no audit event. */
static const struct {
	const char *name;
	enum sb_api_category category;
} extras[] = {
	{ "_interpreters.create", SB_API_PROCESS_EXEC },
	{ "_signal.pidfd_send_signal", SB_API_PROCESS_CONTROL },
	{ "os.sched_setaffinity", SB_API_PROCESS_CONTROL },
	{ "os.sched_setparam", SB_API_PROCESS_CONTROL },
	{ "os.sched_setscheduler", SB_API_PROCESS_CONTROL },
	{ "posix.sched_setaffinity", SB_API_PROCESS_CONTROL },
	{ "posix.sched_setparam", SB_API_PROCESS_CONTROL },
	{ "posix.sched_setscheduler", SB_API_PROCESS_CONTROL },
	{ "signal.pidfd_send_signal", SB_API_PROCESS_CONTROL },
	{ "_testcapi.run_in_subinterp", SB_API_PROCESS_EXEC },
	{ "_testinternalcapi.create_interpreter", SB_API_PROCESS_EXEC },
	{ "_testinternalcapi.run_in_subinterp_with_config",
	  SB_API_PROCESS_EXEC },
	{ "_xxsubinterpreters.create", SB_API_PROCESS_EXEC },
	{ "concurrent.interpreters.create", SB_API_PROCESS_EXEC },
	{ "ctypes.memmove", SB_API_NATIVE },
	{ "ctypes.memset", SB_API_NATIVE },
	{ "fcntl.ioctl", SB_API_PROCESS_CONTROL },
	{ "pickle.Unpickler", SB_API_DESERIALIZATION },
	{ "sqlite3.Connection.enable_load_extension", SB_API_NATIVE },
};

static int extra_category(const char *name)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(extras); i++)
		if (strcmp(name, extras[i].name) == 0)
			return (int)extras[i].category;
	return -1;
}

static bool is_extra(const char *name)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(extras); i++)
		if (strcmp(name, extras[i].name) == 0)
			return true;
	return false;
}

static const struct sb_api_entry *entry(const char *name)
{
	long i = sb_api_lookup(name);

	return i < 0 ? NULL : &sb_api_registry[i];
}

static void test_table(void)
{
	static const unsigned want[SB_API_CATEGORY_COUNT] = {
		[SB_API_PROCESS_EXEC] = 49, [SB_API_PROCESS_CONTROL] = 29,
		[SB_API_PRIVILEGES] = 27,   [SB_API_THREADS] = 11,
		[SB_API_NATIVE] = 4,	    [SB_API_INTROSPECTION] = 21,
		[SB_API_DYNAMIC_CODE] = 3,  [SB_API_DESERIALIZATION] = 7,
	};
	unsigned seed[SB_API_CATEGORY_COUNT] = { 0 }, n_seed = 0, n_extra = 0;
	size_t i, unsorted = 0, bad = 0;
	int c;

	for (i = 0; i < sb_api_registry_len; i++) {
		const struct sb_api_entry *e = &sb_api_registry[i];

		if (i && strcmp(sb_api_registry[i - 1].qualname,
				e->qualname) >= 0) {
			diag("out of order: %s", e->qualname);
			unsorted++;
		}
		/* module.attr, a known category, sane bounds */
		if (!strchr(e->qualname, '.') || e->qualname[0] == '.' ||
		    (unsigned)e->category >= SB_API_CATEGORY_COUNT ||
		    (e->min_minor && e->max_minor &&
		     e->min_minor > e->max_minor)) {
			diag("malformed: %s", e->qualname);
			bad++;
		}
		if (sb_api_lookup(e->qualname) != (long)i)
			bad++;
		if (is_extra(e->qualname)) {
			n_extra++;
			if ((int)e->category != extra_category(e->qualname))
				bad++;
		} else {
			seed[e->category]++;
			n_seed++;
		}
	}
	is_int(unsorted, 0, "registry strictly sorted (no duplicates)");
	is_int(bad, 0, "every entry well formed and found at its index");
	is_int(n_seed, 151, "151 seed names");
	is_int(n_extra, SB_ARRAY_LEN(extras), "every extra name is present");
	is_int(sb_api_registry_len, 151 + SB_ARRAY_LEN(extras), "total");
	for (c = 0; c < SB_API_CATEGORY_COUNT; c++)
		is_int(seed[c], want[c], "6.10 count of %s",
		       sb_api_category_name(c));
}

static void check_entry(const char *name, enum sb_api_category cat,
			unsigned tags, unsigned lo, unsigned hi)
{
	const struct sb_api_entry *e = entry(name);

	if (!ok(e != NULL, "%s registered", name))
		return;
	is_int(e->category, cat, "%s category", name);
	is_int(e->tags, tags, "%s tags", name);
	is_int(e->min_minor, lo, "%s min_minor", name);
	is_int(e->max_minor, hi, "%s max_minor", name);
}

static void test_entries(void)
{
	size_t i, os_set = 0, os_set_p = 0;

	check_entry("os.system", SB_API_PROCESS_EXEC, 0, 0, 0);
	check_entry("os.spawnvp", SB_API_PROCESS_EXEC, SB_API_POSIX, 0, 0);
	check_entry("nt.system", SB_API_PROCESS_EXEC, SB_API_WINDOWS, 0, 0);
	check_entry("_winapi.CreateProcess", SB_API_PROCESS_EXEC,
		    SB_API_WINDOWS, 0, 0);
	check_entry("subprocess.Popen", SB_API_PROCESS_EXEC, SB_API_CLASS, 0,
		    0);
	check_entry("_posixsubprocess.fork_exec", SB_API_PROCESS_EXEC,
		    SB_API_POSIX, 0, 0);
	check_entry("multiprocessing.process.BaseProcess.start",
		    SB_API_PROCESS_EXEC, 0, 0, 0);
	check_entry("resource.prlimit", SB_API_PROCESS_CONTROL, SB_API_LINUX,
		    0, 0);
	check_entry("signal.raise_signal", SB_API_PROCESS_CONTROL, 0, 0, 0);
	check_entry("sys.remote_exec", SB_API_PROCESS_CONTROL, 0, 14, 0);
	check_entry("nt.umask", SB_API_PRIVILEGES, SB_API_WINDOWS, 0, 0);
	check_entry("posix.setresgid", SB_API_PRIVILEGES, 0, 0, 0);
	check_entry("_thread.start_joinable_thread", SB_API_THREADS, 0, 13, 0);
	check_entry("threading._start_joinable_thread", SB_API_THREADS, 0, 13,
		    0);
	check_entry("threading._start_new_thread", SB_API_THREADS, 0, 0, 12);
	check_entry("threading.Thread.start", SB_API_THREADS, 0, 0, 0);
	check_entry("ctypes.CDLL", SB_API_NATIVE, SB_API_CLASS, 0, 0);
	check_entry("ctypes.wstring_at", SB_API_NATIVE, 0, 0, 0);
	check_entry("sys._getframemodulename", SB_API_INTROSPECTION, 0, 12, 0);
	check_entry("sys.monitoring.register_callback", SB_API_INTROSPECTION,
		    0, 12, 0);
	check_entry("sys._getframe", SB_API_INTROSPECTION, 0, 0, 0);
	check_entry("builtins.compile", SB_API_DYNAMIC_CODE, 0, 0, 0);
	check_entry("_pickle.loads", SB_API_DESERIALIZATION, SB_API_C_ACCEL, 0,
		    0);
	check_entry("pickle._Unpickler", SB_API_DESERIALIZATION, SB_API_CLASS,
		    0, 0);
	check_entry("_xxsubinterpreters.create", SB_API_PROCESS_EXEC, 0, 0,
		    12);
	check_entry("_interpreters.create", SB_API_PROCESS_EXEC, 0, 13, 0);
	check_entry("concurrent.interpreters.create", SB_API_PROCESS_EXEC, 0,
		    14, 0);

	/* "All os.set* are P" */
	for (i = 0; i < sb_api_registry_len; i++) {
		const struct sb_api_entry *e = &sb_api_registry[i];

		if (sb_str_starts(e->qualname, "os.set")) {
			os_set++;
			os_set_p += !!(e->tags & SB_API_POSIX);
		}
	}
	is_int(os_set, 14, "14 os.set* names");
	is_int(os_set_p, os_set, "every os.set* is tagged POSIX");

	/* deliberately left out (5.6, 6.3) */
	is_int(sb_api_lookup("os._exit"), -1, "os._exit is not registered");
	is_int(sb_api_lookup("posix._exit"), -1, "posix._exit neither");
	is_int(sb_api_lookup("signal.signal"), -1, "signal.signal neither");
	is_int(sb_api_lookup("os.chroot"), -1, "os.chroot neither");

	is_int(sb_api_lookup(sb_api_registry[0].qualname), 0, "first entry");
	is_int(sb_api_lookup(
		       sb_api_registry[sb_api_registry_len - 1].qualname),
	       (long)sb_api_registry_len - 1, "last entry");
	is_int(sb_api_lookup("os"), -1, "a module alone is no entry");
	is_int(sb_api_lookup("os.system "), -1, "lookup is exact");
	is_int(sb_api_lookup("OS.SYSTEM"), -1, "lookup is case-sensitive");
	is_int(sb_api_lookup(""), -1, "empty name");
	is_int(sb_api_lookup(NULL), -1, "NULL name");
}

static void test_categories(void)
{
	static const struct {
		enum sb_api_category c;
		const char *name, *doc;
		int dangerous;
	} cats[] = {
		{ SB_API_PROCESS_EXEC, "process-exec",
		  "runs code outside the patched interpreter", 1 },
		{ SB_API_PROCESS_CONTROL, "process-control",
		  "kills processes, exhausts host resources", 0 },
		{ SB_API_PRIVILEGES, "privileges",
		  "changes process identity or root", 1 },
		{ SB_API_THREADS, "threads", "concurrency primitives", 0 },
		{ SB_API_NATIVE, "native",
		  "native code and arbitrary memory access", 1 },
		{ SB_API_INTROSPECTION, "introspection",
		  "can be used to undo the patches", 0 },
		{ SB_API_DYNAMIC_CODE, "dynamic-code",
		  "runs code built at runtime from a string, unguarded", 1 },
		{ SB_API_DESERIALIZATION, "deserialization",
		  "runs the callables a byte stream names, unguarded", 1 },
	};
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cats); i++) {
		is_str(sb_api_category_name(cats[i].c), cats[i].name,
		       "category %zu name", i);
		is_int(sb_api_category_from_name(cats[i].name), cats[i].c,
		       "from_name(%s)", cats[i].name);
		is_str(sb_api_category_doc(cats[i].c), cats[i].doc,
		       "%s doc", cats[i].name);
		is_int(sb_api_category_is_dangerous(cats[i].c),
		       cats[i].dangerous, "%s dangerous", cats[i].name);
	}
	is_int(sb_api_category_from_name("thread"), -1, "unknown category");
	is_int(sb_api_category_from_name("Threads"), -1, "case-sensitive");
	is_int(sb_api_category_from_name(""), -1, "empty category");
	is_int(sb_api_category_from_name(NULL), -1, "NULL category");
	ok(sb_api_category_name(SB_API_CATEGORY_COUNT) == NULL,
	   "name out of range is NULL");
	ok(sb_api_category_doc(SB_API_CATEGORY_COUNT) == NULL,
	   "doc out of range is NULL");
	is_int(sb_api_category_is_dangerous(SB_API_CATEGORY_COUNT), 0,
	       "out of range is not dangerous");
}

/* ---- python-api= ---- */

static struct sb_policy *new_policy(void)
{
	struct sb_policy *p = calloc(1, sizeof(*p));

	p->arena = sb_arena_new();
	return p;
}

static void free_policy(struct sb_policy *p)
{
	sb_arena_free(p->arena);
	free(p);
}

/* Feed one rule text the way the policy parser would: key and value split
 * at the first '='. */
static void rule_at(struct sb_policy *p, const char *text, const char *file,
		    unsigned line)
{
	const char *eq = strchr(text, '=');
	struct sb_line l = {
		.text = text,
		.key = sb_arena_strndup(p->arena, text, (size_t)(eq - text)),
		.value = eq + 1,
		.ref = { file, line },
	};

	sb_parse_api(p, &l);
}

static void rule(struct sb_policy *p, const char *text)
{
	rule_at(p, text, "f", 3);
}

static bool allowed(const struct sb_policy *p, const char *name)
{
	long i = sb_api_lookup(name);

	return i >= 0 && p->api_allow && p->api_allow[i];
}

static size_t n_allowed(const struct sb_policy *p)
{
	size_t i, n = 0;

	for (i = 0; i < sb_api_registry_len; i++)
		n += p->api_allow[i] != 0;
	return n;
}

static size_t n_in_category(enum sb_api_category c)
{
	size_t i, n = 0;

	for (i = 0; i < sb_api_registry_len; i++)
		n += sb_api_registry[i].category == c;
	return n;
}

/* One rule alone: no error, and how many entries it allows. */
static void check_valid(const char *text, size_t want_allowed)
{
	struct sb_policy *p = new_policy();

	rule(p, text);
	is_int(p->errors.n, 0, "valid: %s", text);
	if (p->errors.n)
		diag("%s", p->errors.v[0].text);
	sb_api_finish(p);
	is_int(n_allowed(p), want_allowed, "  allows %zu", want_allowed);
	free_policy(p);
}

static void test_valid_forms(void)
{
	size_t exec = n_in_category(SB_API_PROCESS_EXEC);
	size_t threads = n_in_category(SB_API_THREADS);
	struct sb_policy *p;

	check_valid("python-api=ALLOW:os.system", 1);
	check_valid("python-api=DENY:os.system", 0);
	check_valid("python-api=ALLOW:threads", threads);
	check_valid("python-api=ALLOW:threading.Thread.start", 1);
	check_valid("python-api=ALLOW:sys.monitoring.use_tool_id", 1);
	check_valid("python-api=ALLOW:*", sb_api_registry_len);
	check_valid("python-api=DENY:*", 0);
	check_valid("python-api=ALLOW:os.system,subprocess.run", 2);
	check_valid("python-api=ALLOW:threads, os.system", threads + 1);
	check_valid("python-api=ALLOW:process-exec,threads", exec + threads);
	check_valid("python-api=  ALLOW  :  os.system ,\tthreads  ",
		    threads + 1);
	check_valid("python-api=ALLOW:os.system, os.system", 1);
	/* absent here (Windows, newer CPython) yet valid targets */
	check_valid("python-api=ALLOW:nt.system, sys.remote_exec", 2);

	p = new_policy();
	rule(p, "python-api=ALLOW:os.system");
	rule(p, "python-api=DENY:threads, *");
	is_int(p->errors.n, 0, "two valid lines");
	ok(p->api_state != NULL, "rules recorded in api_state");
	free_policy(p);
}

static void check_error(const char *text, const char *want)
{
	struct sb_policy *p = new_policy();

	rule(p, text);
	is_int(p->errors.n, 1, "one error: %s", text);
	if (p->errors.n)
		is_str(p->errors.v[0].text, want, "  message");
	is_int(p->warnings.n, 0, "  no warning");
	sb_api_finish(p);
	is_int(n_allowed(p), 0, "  the bad line grants nothing");
	free_policy(p);
}

static void test_errors(void)
{
	struct sb_policy *p;

	check_error("python-api=os.system",
		    "f(3): In 'python-api=os.system', expected the form "
		    "'ACTION:target', with ACTION in " ERR_ACTIONS ".");
	check_error("python-api=",
		    "f(3): In 'python-api=', expected the form "
		    "'ACTION:target', with ACTION in " ERR_ACTIONS ".");
	check_error("python-api=allow:os.system",
		    "f(3): In 'python-api=allow:os.system', unknown action "
		    "'allow', expected one of " ERR_ACTIONS ".");
	check_error("python-api= PERMIT :os.system",
		    "f(3): In 'python-api= PERMIT :os.system', unknown action "
		    "'PERMIT', expected one of " ERR_ACTIONS ".");
	check_error("python-api=:os.system",
		    "f(3): In 'python-api=:os.system', unknown action '', "
		    "expected one of " ERR_ACTIONS ".");
	check_error("python-api=ALLOW:",
		    "f(3): In 'python-api=ALLOW:', empty target.");
	check_error("python-api=ALLOW:  ",
		    "f(3): In 'python-api=ALLOW:  ', empty target.");
	check_error("python-api=ALLOW:os.system,,threads",
		    "f(3): In 'python-api=ALLOW:os.system,,threads', empty "
		    "target.");
	check_error("python-api=ALLOW:os.system,",
		    "f(3): In 'python-api=ALLOW:os.system,', empty target.");
	check_error("python-api=ALLOW:os.system, DENY:threads",
		    "f(3): In 'python-api=ALLOW:os.system, DENY:threads', one "
		    "action per line: do not mix ALLOW and DENY.");
	check_error("python-api=ALLOW:DENY",
		    "f(3): In 'python-api=ALLOW:DENY', one action per line: "
		    "do not mix ALLOW and DENY.");
	check_error("python-api=ALLOW:os.system, allow",
		    "f(3): In 'python-api=ALLOW:os.system, allow', one action "
		    "per line: do not mix ALLOW and DENY.");
	check_error("python-api=ALLOW:thread",
		    "f(3): In 'python-api=ALLOW:thread', unknown category "
		    "'thread', expected one of " ERR_CATEGORIES ".");
	check_error("python-api=DENY:Threads",
		    "f(3): In 'python-api=DENY:Threads', unknown category "
		    "'Threads', expected one of " ERR_CATEGORIES ".");
	check_error("python-api=ALLOW:os.sytem",
		    "f(3): In 'python-api=ALLOW:os.sytem', 'os.sytem' is not "
		    "a registered sensitive function.");
	check_error("python-api=ALLOW:os._exit",
		    "f(3): In 'python-api=ALLOW:os._exit', 'os._exit' is not "
		    "a registered sensitive function.");
	/* the first bad target stops the line: os.system stays denied */
	check_error("python-api=ALLOW:os.system, bogus.fn, nope",
		    "f(3): In 'python-api=ALLOW:os.system, bogus.fn, nope', "
		    "'bogus.fn' is not a registered sensitive function.");
	/* repr(): a quote in the text switches to double quotes */
	check_error("python-api=ALLOW:it's",
		    "f(3): In \"python-api=ALLOW:it's\", unknown category "
		    "\"it's\", expected one of " ERR_CATEGORIES ".");

	/* command-line rules carry <arg>, and every bad line is reported */
	p = new_policy();
	rule_at(p, "python-api=ALLOW:nope", SB_REF_ARG, 0);
	rule_at(p, "python-api=ALLOW:os.system", "g", 7);
	rule_at(p, "python-api=DENY", "g", 8);
	is_int(p->errors.n, 2, "two bad lines, two errors");
	if (p->errors.n == 2) {
		is_str(p->errors.v[0].text,
		       "<arg>: In 'python-api=ALLOW:nope', unknown category "
		       "'nope', expected one of " ERR_CATEGORIES ".",
		       "<arg> ref");
		is_str(p->errors.v[1].text,
		       "g(8): In 'python-api=DENY', expected the form "
		       "'ACTION:target', with ACTION in " ERR_ACTIONS ".",
		       "second error");
	}
	sb_api_finish(p);
	ok(allowed(p, "os.system"), "the good line still counts");
	is_int(n_allowed(p), 1, "and only it");
	free_policy(p);
}

/* Resolve a list of rule texts; each gets its own line in file "f". */
static struct sb_policy *resolve(const char *const *texts, size_t n)
{
	struct sb_policy *p = new_policy();
	size_t i;

	for (i = 0; i < n; i++)
		rule_at(p, texts[i], "f", (unsigned)i + 1);
	sb_api_finish(p);
	is_int(p->errors.n, 0, "no error in %s ...", texts[0]);
	return p;
}

#define RESOLVE(...)                                                           \
	resolve((const char *const[]){ __VA_ARGS__ },                          \
		SB_ARRAY_LEN(((const char *const[]){ __VA_ARGS__ })))

static void test_resolution(void)
{
	size_t all = sb_api_registry_len;
	size_t exec = n_in_category(SB_API_PROCESS_EXEC);
	size_t native = n_in_category(SB_API_NATIVE);
	size_t threads = n_in_category(SB_API_THREADS);
	struct sb_policy *p;
	const uint8_t *before;
	size_t i, same;

	/* no rule: everything denied, the array still there */
	p = new_policy();
	sb_api_finish(p);
	ok(p->api_allow != NULL, "api_allow allocated without rules");
	is_int(n_allowed(p), 0, "all denied by default");
	free_policy(p);

	/* function beats category, both ways */
	p = RESOLVE("python-api=DENY:process-exec",
		    "python-api=ALLOW:os.system");
	ok(allowed(p, "os.system"), "ALLOW:fn beats DENY:category");
	ok(!allowed(p, "posix.system"), "  the rest of the category denied");
	is_int(n_allowed(p), 1, "  one allowed");
	free_policy(p);
	p = RESOLVE("python-api=ALLOW:process-exec",
		    "python-api=DENY:subprocess.run");
	ok(!allowed(p, "subprocess.run"), "DENY:fn beats ALLOW:category");
	ok(allowed(p, "subprocess.Popen"), "  the rest of it allowed");
	is_int(n_allowed(p), exec - 1, "  all but one of process-exec");
	free_policy(p);

	/* a skill's grant beats a user profile's category denial, whichever
	 * file comes first (order is irrelevant) */
	p = new_policy();
	rule_at(p, "python-api=DENY:process-exec", "profile", 5);
	rule_at(p, "python-api=ALLOW:os.system", "skill", 1);
	sb_api_finish(p);
	ok(allowed(p, "os.system"), "skill ALLOW:os.system beats profile");
	ok(!allowed(p, "os.popen"), "  os.popen still denied");
	free_policy(p);
	p = new_policy();
	rule_at(p, "python-api=ALLOW:os.system", "skill", 1);
	rule_at(p, "python-api=DENY:process-exec", "profile", 5);
	sb_api_finish(p);
	ok(allowed(p, "os.system"), "  and in the other order");
	free_policy(p);

	/* DENY wins ties */
	p = RESOLVE("python-api=ALLOW:threads", "python-api=DENY:threads");
	is_int(n_allowed(p), 0, "ALLOW+DENY on a category: DENY");
	free_policy(p);
	p = RESOLVE("python-api=DENY:threads", "python-api=ALLOW:threads");
	is_int(n_allowed(p), 0, "  in either order");
	free_policy(p);
	p = RESOLVE("python-api=ALLOW:os.kill", "python-api=DENY:os.kill",
		    "python-api=ALLOW:os.kill");
	ok(!allowed(p, "os.kill"), "ALLOW+DENY on a function: DENY");
	free_policy(p);
	p = RESOLVE("python-api=ALLOW:os.kill, os.kill",
		    "python-api=ALLOW:process-control");
	ok(allowed(p, "os.kill"), "repeated ALLOW stays ALLOW");
	free_policy(p);

	/* '*' */
	p = RESOLVE("python-api=ALLOW:*");
	is_int(n_allowed(p), all, "ALLOW:* allows everything");
	free_policy(p);
	p = RESOLVE("python-api=ALLOW:*", "python-api=DENY:*");
	is_int(n_allowed(p), 0, "ALLOW:* with DENY:* denies everything");
	free_policy(p);
	p = RESOLVE("python-api=DENY:*", "python-api=ALLOW:*, os.system");
	is_int(n_allowed(p), 1, "mixed '*' is DENY, the function rule wins");
	ok(allowed(p, "os.system"), "  os.system");
	free_policy(p);
	p = RESOLVE("python-api=ALLOW:*", "python-api=DENY:native");
	is_int(n_allowed(p), all - native, "ALLOW:* minus a category");
	ok(!allowed(p, "ctypes.CDLL"), "  ctypes.CDLL denied");
	free_policy(p);
	p = RESOLVE("python-api=DENY:*", "python-api=ALLOW:threads");
	is_int(n_allowed(p), threads, "DENY:* plus a category");
	free_policy(p);
	p = RESOLVE("python-api=ALLOW:*", "python-api=DENY:threads",
		    "python-api=ALLOW:threading.Thread.start");
	is_int(n_allowed(p), all - threads + 1, "three levels at once");
	ok(allowed(p, "threading.Thread.start"), "  the function wins");
	ok(!allowed(p, "_thread.start_new_thread"), "  its category denied");
	free_policy(p);

	/* the eval escape hatch */
	p = RESOLVE("python-api=ALLOW:dynamic-code");
	ok(allowed(p, "builtins.eval") && allowed(p, "builtins.exec") &&
		   allowed(p, "builtins.compile"),
	   "ALLOW:dynamic-code allows eval, exec and compile");
	is_int(n_allowed(p), 3, "  and nothing else");
	free_policy(p);

	/* a second finish recomputes the same answer in place */
	p = RESOLVE("python-api=ALLOW:threads",
		    "python-api=DENY:_thread.stack_size");
	before = p->api_allow;
	sb_api_finish(p);
	ok(p->api_allow == before, "second finish keeps the array");
	for (i = 0, same = 0; i < all; i++)
		same += p->api_allow[i] ==
			(sb_api_registry[i].category == SB_API_THREADS &&
			 strcmp(sb_api_registry[i].qualname,
				"_thread.stack_size") != 0);
	is_int(same, all, "  with the same verdicts");
	free_policy(p);
}

int main(void)
{
	test_table();
	test_entries();
	test_categories();
	test_valid_forms();
	test_errors();
	test_resolution();
	return tap_done();
}
