/* api_registry.c - the sensitive Python API registry (py-sandboxes(5),
 * python-api=) and the python-api= rules (2.6.6). It owns the one table of
 * guarded names and turns the rules into a yes/no per table entry; the guard,
 * learning and the docs read both from here. Pure code: it never prints, never
 * exits, keeps no global state (pending rules live in the policy's arena), and
 * it does not know which names exist on the running interpreter: every entry
 * stays a valid rule target everywhere so that one profile serves every
 * platform.
 */
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>

#include "api_registry.h"
#include "policy_internal.h"

#define E(name, cat, tags) { name, SB_API_##cat, tags, 0, 0 }
#define V(name, cat, tags, lo, hi) { name, SB_API_##cat, tags, lo, hi }

/* The union of the seed's nine families (151 names) plus the subinterpreter
 * creators, which the spec puts under process-exec without naming them.
 * Bounds beyond the spec's own marks are CPython facts (os.unshare/os.setns
 * and the *_all_threads hooks arrived in 3.12). Kept in strcmp order: the
 * unit test checks it, and sb_api_lookup() bisects. */
const struct sb_api_entry sb_api_registry[] = {
	/* beyond the seed's 151 */
	V("_interpreters.create", PROCESS_EXEC, 0, 13, 0),
	E("_pickle.load", DESERIALIZATION, SB_API_C_ACCEL),
	E("_pickle.loads", DESERIALIZATION, SB_API_C_ACCEL),
	E("_posixsubprocess.fork_exec", PROCESS_EXEC, SB_API_POSIX),
	E("_signal.alarm", PROCESS_CONTROL, SB_API_POSIX),
	/* beyond the seed's 151: a signal to any process, by pidfd */
	E("_signal.pidfd_send_signal", PROCESS_CONTROL, SB_API_LINUX),
	E("_signal.pthread_kill", PROCESS_CONTROL, SB_API_POSIX),
	E("_signal.raise_signal", PROCESS_CONTROL, 0),
	E("_signal.setitimer", PROCESS_CONTROL, SB_API_POSIX),
	/* beyond the seed's 151 */
	E("_testcapi.run_in_subinterp", PROCESS_EXEC, 0),
	/* beyond the seed's 151 */
	E("_testinternalcapi.create_interpreter", PROCESS_EXEC, 0),
	/* beyond the seed's 151 */
	E("_testinternalcapi.run_in_subinterp_with_config", PROCESS_EXEC, 0),
	E("_thread.interrupt_main", THREADS, 0),
	E("_thread.stack_size", THREADS, 0),
	V("_thread.start_joinable_thread", THREADS, 0, 13, 0),
	E("_thread.start_new", THREADS, 0),
	E("_thread.start_new_thread", THREADS, 0),
	E("_winapi.CreateProcess", PROCESS_EXEC, SB_API_WINDOWS),
	/* beyond the seed's 151 */
	V("_xxsubinterpreters.create", PROCESS_EXEC, 0, 0, 12),
	E("builtins.compile", DYNAMIC_CODE, 0),
	E("builtins.eval", DYNAMIC_CODE, 0),
	E("builtins.exec", DYNAMIC_CODE, 0),
	/* beyond the seed's 151 */
	V("concurrent.interpreters.create", PROCESS_EXEC, 0, 14, 0),
	E("ctypes.CDLL", NATIVE, SB_API_CLASS),
	E("ctypes.cast", NATIVE, 0),
	/* beyond the seed's 151: prebuilt function pointers, no audit event */
	E("ctypes.memmove", NATIVE, 0),
	E("ctypes.memset", NATIVE, 0),
	E("ctypes.string_at", NATIVE, 0),
	E("ctypes.wstring_at", NATIVE, 0),
	E("faulthandler.enable", INTROSPECTION, 0),
	/* beyond the seed's 151: judged by request (sb_ioctl_safe) */
	E("fcntl.ioctl", PROCESS_CONTROL, SB_API_POSIX | SB_API_BY_ARGS),
	E("gc.get_objects", INTROSPECTION, 0),
	E("gc.get_referents", INTROSPECTION, 0),
	E("gc.get_referrers", INTROSPECTION, 0),
	E("importlib.reload", INTROSPECTION, 0),
	E("inspect.currentframe", INTROSPECTION, 0),
	E("inspect.stack", INTROSPECTION, 0),
	E("inspect.trace", INTROSPECTION, 0),
	E("multiprocessing.Process.start", PROCESS_EXEC, 0),
	E("multiprocessing.process.BaseProcess.start", PROCESS_EXEC, 0),
	E("nt.abort", PROCESS_CONTROL, SB_API_WINDOWS),
	E("nt.execv", PROCESS_EXEC, SB_API_WINDOWS),
	E("nt.execve", PROCESS_EXEC, SB_API_WINDOWS),
	E("nt.kill", PROCESS_CONTROL, SB_API_WINDOWS),
	E("nt.spawnv", PROCESS_EXEC, SB_API_WINDOWS),
	E("nt.spawnve", PROCESS_EXEC, SB_API_WINDOWS),
	E("nt.startfile", PROCESS_EXEC, SB_API_WINDOWS),
	E("nt.system", PROCESS_EXEC, SB_API_WINDOWS),
	E("nt.umask", PRIVILEGES, SB_API_WINDOWS),
	E("os.abort", PROCESS_CONTROL, 0),
	E("os.execl", PROCESS_EXEC, 0),
	E("os.execle", PROCESS_EXEC, 0),
	E("os.execlp", PROCESS_EXEC, 0),
	E("os.execlpe", PROCESS_EXEC, 0),
	E("os.execv", PROCESS_EXEC, 0),
	E("os.execve", PROCESS_EXEC, 0),
	E("os.execvp", PROCESS_EXEC, 0),
	E("os.execvpe", PROCESS_EXEC, 0),
	E("os.fork", PROCESS_EXEC, SB_API_POSIX),
	E("os.forkpty", PROCESS_EXEC, SB_API_POSIX),
	E("os.initgroups", PRIVILEGES, SB_API_POSIX),
	/* a signal to the program's own child is not judged (guard/api.c) */
	E("os.kill", PROCESS_CONTROL, SB_API_BY_ARGS),
	E("os.killpg", PROCESS_CONTROL, SB_API_POSIX),
	E("os.nice", PROCESS_CONTROL, SB_API_POSIX),
	E("os.popen", PROCESS_EXEC, 0),
	E("os.posix_spawn", PROCESS_EXEC, SB_API_POSIX),
	E("os.posix_spawnp", PROCESS_EXEC, SB_API_POSIX),
	/* beyond the seed's 151: act on another process by pid */
	E("os.sched_setaffinity", PROCESS_CONTROL, SB_API_LINUX),
	E("os.sched_setparam", PROCESS_CONTROL, SB_API_LINUX),
	E("os.sched_setscheduler", PROCESS_CONTROL, SB_API_LINUX),
	E("os.setegid", PRIVILEGES, SB_API_POSIX),
	E("os.seteuid", PRIVILEGES, SB_API_POSIX),
	E("os.setgid", PRIVILEGES, SB_API_POSIX),
	E("os.setgroups", PRIVILEGES, SB_API_POSIX),
	V("os.setns", PRIVILEGES, SB_API_POSIX | SB_API_LINUX, 12, 0),
	E("os.setpgid", PROCESS_CONTROL, SB_API_POSIX),
	E("os.setpgrp", PROCESS_CONTROL, SB_API_POSIX),
	E("os.setpriority", PROCESS_CONTROL, SB_API_POSIX),
	E("os.setregid", PRIVILEGES, SB_API_POSIX),
	E("os.setresgid", PRIVILEGES, SB_API_POSIX),
	E("os.setresuid", PRIVILEGES, SB_API_POSIX),
	E("os.setreuid", PRIVILEGES, SB_API_POSIX),
	E("os.setsid", PROCESS_CONTROL, SB_API_POSIX),
	E("os.setuid", PRIVILEGES, SB_API_POSIX),
	E("os.spawnl", PROCESS_EXEC, 0),
	E("os.spawnle", PROCESS_EXEC, 0),
	E("os.spawnlp", PROCESS_EXEC, SB_API_POSIX),
	E("os.spawnlpe", PROCESS_EXEC, SB_API_POSIX),
	E("os.spawnv", PROCESS_EXEC, 0),
	E("os.spawnve", PROCESS_EXEC, 0),
	E("os.spawnvp", PROCESS_EXEC, SB_API_POSIX),
	E("os.spawnvpe", PROCESS_EXEC, SB_API_POSIX),
	E("os.startfile", PROCESS_EXEC, SB_API_WINDOWS),
	E("os.system", PROCESS_EXEC, 0),
	E("os.umask", PRIVILEGES, 0),
	V("os.unshare", PRIVILEGES, SB_API_LINUX, 12, 0),
	/* beyond the seed's 151: the C class, judged at its find_class */
	E("pickle.Unpickler", DESERIALIZATION, SB_API_CLASS),
	E("pickle._Unpickler", DESERIALIZATION, SB_API_CLASS),
	E("pickle._load", DESERIALIZATION, 0),
	E("pickle._loads", DESERIALIZATION, 0),
	E("pickle.load", DESERIALIZATION, 0),
	E("pickle.loads", DESERIALIZATION, 0),
	E("posix.abort", PROCESS_CONTROL, 0),
	E("posix.execv", PROCESS_EXEC, 0),
	E("posix.execve", PROCESS_EXEC, 0),
	E("posix.fork", PROCESS_EXEC, 0),
	E("posix.forkpty", PROCESS_EXEC, 0),
	E("posix.initgroups", PRIVILEGES, 0),
	E("posix.kill", PROCESS_CONTROL, SB_API_BY_ARGS),
	E("posix.killpg", PROCESS_CONTROL, 0),
	E("posix.nice", PROCESS_CONTROL, 0),
	E("posix.posix_spawn", PROCESS_EXEC, 0),
	E("posix.posix_spawnp", PROCESS_EXEC, 0),
	/* beyond the seed's 151 */
	E("posix.sched_setaffinity", PROCESS_CONTROL, 0),
	E("posix.sched_setparam", PROCESS_CONTROL, 0),
	E("posix.sched_setscheduler", PROCESS_CONTROL, 0),
	E("posix.setegid", PRIVILEGES, 0),
	E("posix.seteuid", PRIVILEGES, 0),
	E("posix.setgid", PRIVILEGES, 0),
	E("posix.setgroups", PRIVILEGES, 0),
	V("posix.setns", PRIVILEGES, 0, 12, 0),
	E("posix.setpgid", PROCESS_CONTROL, 0),
	E("posix.setpgrp", PROCESS_CONTROL, 0),
	E("posix.setpriority", PROCESS_CONTROL, 0),
	E("posix.setregid", PRIVILEGES, 0),
	E("posix.setresgid", PRIVILEGES, 0),
	E("posix.setresuid", PRIVILEGES, 0),
	E("posix.setreuid", PRIVILEGES, 0),
	E("posix.setsid", PROCESS_CONTROL, 0),
	E("posix.setuid", PRIVILEGES, 0),
	E("posix.system", PROCESS_EXEC, 0),
	E("posix.umask", PRIVILEGES, 0),
	V("posix.unshare", PRIVILEGES, 0, 12, 0),
	E("pty.fork", PROCESS_EXEC, SB_API_POSIX),
	E("pty.spawn", PROCESS_EXEC, SB_API_POSIX),
	E("resource.prlimit", PROCESS_CONTROL, SB_API_LINUX),
	E("resource.setrlimit", PROCESS_CONTROL, SB_API_POSIX),
	E("signal.alarm", PROCESS_CONTROL, SB_API_POSIX),
	/* beyond the seed's 151 */
	E("signal.pidfd_send_signal", PROCESS_CONTROL, SB_API_LINUX),
	E("signal.pthread_kill", PROCESS_CONTROL, SB_API_POSIX),
	E("signal.raise_signal", PROCESS_CONTROL, 0),
	E("signal.setitimer", PROCESS_CONTROL, SB_API_POSIX),
	/* beyond the seed's 151: loads any shared library (guard/clibs.c
	 * judges the call and its sqlite3.enable_load_extension event) */
	E("sqlite3.Connection.enable_load_extension", NATIVE, SB_API_BY_ARGS),
	E("subprocess.Popen", PROCESS_EXEC, SB_API_CLASS),
	E("subprocess.call", PROCESS_EXEC, 0),
	E("subprocess.check_call", PROCESS_EXEC, 0),
	E("subprocess.check_output", PROCESS_EXEC, 0),
	E("subprocess.getoutput", PROCESS_EXEC, 0),
	E("subprocess.getstatusoutput", PROCESS_EXEC, 0),
	E("subprocess.run", PROCESS_EXEC, 0),
	E("sys._current_exceptions", INTROSPECTION, 0),
	E("sys._current_frames", INTROSPECTION, 0),
	E("sys._getframe", INTROSPECTION, 0),
	V("sys._getframemodulename", INTROSPECTION, 0, 12, 0),
	V("sys._setprofileallthreads", INTROSPECTION, 0, 12, 0),
	V("sys._settraceallthreads", INTROSPECTION, 0, 12, 0),
	E("sys.addaudithook", INTROSPECTION, 0),
	V("sys.monitoring.register_callback", INTROSPECTION, 0, 12, 0),
	V("sys.monitoring.use_tool_id", INTROSPECTION, 0, 12, 0),
	V("sys.remote_exec", PROCESS_CONTROL, 0, 14, 0),
	E("sys.setprofile", INTROSPECTION, 0),
	E("sys.settrace", INTROSPECTION, 0),
	E("threading.Thread.start", THREADS, 0),
	V("threading._start_joinable_thread", THREADS, 0, 13, 0),
	V("threading._start_new_thread", THREADS, 0, 0, 12),
	E("threading.setprofile", THREADS, 0),
	V("threading.setprofile_all_threads", INTROSPECTION, 0, 12, 0),
	E("threading.settrace", THREADS, 0),
	V("threading.settrace_all_threads", INTROSPECTION, 0, 12, 0),
	E("threading.stack_size", THREADS, 0),
};

const size_t sb_api_registry_len = SB_ARRAY_LEN(sb_api_registry);

#undef E
#undef V

static const struct {
	const char *name;
	const char *doc;
	bool dangerous; /* "⚠" in generated files, "high risk" when graded */
} categories[SB_API_CATEGORY_COUNT] = {
	[SB_API_PROCESS_EXEC] = { "process-exec",
				  "runs code outside the patched interpreter",
				  true },
	[SB_API_PROCESS_CONTROL] = { "process-control",
				     "kills processes, exhausts host resources",
				     false },
	[SB_API_PRIVILEGES] = { "privileges",
				"changes process identity or root", true },
	[SB_API_THREADS] = { "threads", "concurrency primitives", false },
	[SB_API_NATIVE] = { "native",
			    "native code and arbitrary memory access", true },
	[SB_API_INTROSPECTION] = { "introspection",
				   "can be used to undo the patches", false },
	[SB_API_DYNAMIC_CODE] = {
		"dynamic-code",
		"runs code built at runtime from a string, unguarded", true },
	[SB_API_DESERIALIZATION] = {
		"deserialization",
		"runs the callables a byte stream names, unguarded", true },
};

static int cmp_entry(const void *key, const void *elem)
{
	const struct sb_api_entry *e = elem;

	return strcmp(key, e->qualname);
}

/* Not TIOCSWINSZ: a new size signals the terminal's foreground group
 * (SIGWINCH), which is outside the sandbox. Not FIOASYNC: O_ASYNC on an
 * inherited descriptor signals its owner, which the caller may be (the
 * kernel layer refuses it by F_SETFL too: seccomp.c). Not TCXONC whatever
 * its argument: sb_ioctl_safe_args. */
const unsigned long sb_ioctl_safe[] = {
	TCGETS, TCSETS, TCSETSW, TCSETSF, TCGETA, TCSBRK, TCFLSH,
	TIOCGWINSZ, TIOCGPGRP, TIOCGSID, TIOCOUTQ, TIOCGPTN,
	TIOCSPTLCK, TIOCGPTPEER, TIOCGETD, TIOCGEXCL, TIOCGSERIAL, TIOCMGET,
	FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, SIOCATMARK,
	SIOCGIFCONF, SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFFLAGS, SIOCGIFADDR,
	SIOCGIFHWADDR, SIOCGIFMTU, SIOCGIFNETMASK,
	0x8906UL,     /* SIOCGSTAMP */
	0x80086601UL, /* FS_IOC_GETFLAGS */
	0x40049409UL, /* FICLONE: both descriptors are the program's */
	0x802c542aUL, /* TCGETS2 */
};
const size_t sb_ioctl_safe_len = SB_ARRAY_LEN(sb_ioctl_safe);

/* TCXONC (tcflow) restarts a terminal's output or input only: TCOOFF
 * stops the output of a terminal the program inherited, and it stays
 * stopped after the run (the caller's shell hangs on its next prompt);
 * TCIOFF sends the device a STOP character. readline sends TCOON. */
const struct sb_ioctl_arg sb_ioctl_safe_args[] = {
	{ TCXONC, TCOON },
	{ TCXONC, TCION },
};
const size_t sb_ioctl_safe_args_len = SB_ARRAY_LEN(sb_ioctl_safe_args);

/* A terminal's modes reach processes outside: TOSTOP stops the caller's
 * background jobs (SIGTTOU) when they write to the terminal, and they stay
 * stopped after the run (attack K50). */
const unsigned long sb_ioctl_judged[] = { TCSETS, TCSETSW, TCSETSF };
const size_t sb_ioctl_judged_len = SB_ARRAY_LEN(sb_ioctl_judged);

bool sb_ioctl_request_judged(unsigned long request)
{
	size_t i;

	for (i = 0; i < sb_ioctl_judged_len; i++)
		if (sb_ioctl_judged[i] == (request & 0xffffffffUL))
			return true;
	return false;
}

bool sb_ioctl_request_safe(unsigned long request)
{
	size_t i;

	for (i = 0; i < sb_ioctl_safe_len; i++)
		if ((sb_ioctl_safe[i] & 0xffffffffUL) ==
		    (request & 0xffffffffUL))
			return true;
	return false;
}

bool sb_ioctl_call_safe(unsigned long request, bool int_arg,
			unsigned long arg)
{
	size_t i;

	if (sb_ioctl_request_safe(request))
		return true;
	for (i = 0; int_arg && i < sb_ioctl_safe_args_len; i++)
		if ((sb_ioctl_safe_args[i].request & 0xffffffffUL) ==
			    (request & 0xffffffffUL) &&
		    sb_ioctl_safe_args[i].arg == arg)
			return true;
	return false;
}

long sb_api_lookup(const char *qualname)
{
	const struct sb_api_entry *e;

	if (!qualname)
		return -1;
	e = bsearch(qualname, sb_api_registry, sb_api_registry_len,
		    sizeof(sb_api_registry[0]), cmp_entry);
	return e ? e - sb_api_registry : -1;
}

static bool category_valid(enum sb_api_category c)
{
	return (unsigned)c < SB_API_CATEGORY_COUNT;
}

const char *sb_api_category_name(enum sb_api_category c)
{
	return category_valid(c) ? categories[c].name : NULL;
}

int sb_api_category_from_name(const char *name)
{
	int c;

	for (c = 0; name && c < SB_API_CATEGORY_COUNT; c++)
		if (strcmp(name, categories[c].name) == 0)
			return c;
	return -1;
}

const char *sb_api_category_doc(enum sb_api_category c)
{
	return category_valid(c) ? categories[c].doc : NULL;
}

int sb_api_category_is_dangerous(enum sb_api_category c)
{
	return category_valid(c) && categories[c].dangerous;
}

/* ---- python-api= rules ---- */

enum api_target_kind { TARGET_ALL, TARGET_CATEGORY, TARGET_FUNCTION };

struct api_rule {
	bool allow;
	enum api_target_kind kind;
	long index; /* category or registry index; unused for TARGET_ALL */
	struct sb_ref ref;
};

struct sb_api_state {
	SB_VEC(struct api_rule) rules;
};

/* Python's repr() of a str, since the messages are the reference's f-string
 * "{x!r}": single quotes unless the text holds one and no double quote. */
static const char *py_repr(struct sb_arena *a, const char *s)
{
	char quote = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
	struct sb_buf b = { 0 };
	const char *out;
	char esc[2];

	sb_buf_add(&b, &quote, 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\\' || c == (unsigned char)quote) {
			esc[0] = '\\';
			esc[1] = (char)c;
			sb_buf_add(&b, esc, 2);
		} else if (c == '\n') {
			sb_buf_puts(&b, "\\n");
		} else if (c == '\r') {
			sb_buf_puts(&b, "\\r");
		} else if (c == '\t') {
			sb_buf_puts(&b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			sb_buf_printf(&b, "\\x%02x", c);
		} else {
			sb_buf_add(&b, (const char *)&c, 1);
		}
	}
	sb_buf_add(&b, &quote, 1);
	out = sb_arena_strndup(a, b.s, b.len);
	sb_buf_free(&b);
	return out;
}

/* "['deserialization', ..., 'threads']", the reference's sorted(CATEGORIES). */
static const char *sorted_categories(struct sb_arena *a)
{
	const char *names[SB_API_CATEGORY_COUNT];
	struct sb_buf b = { 0 };
	const char *out;
	size_t i, j;

	for (i = 0; i < SB_API_CATEGORY_COUNT; i++) {
		const char *n = categories[i].name;

		for (j = i; j > 0 && strcmp(names[j - 1], n) > 0; j--)
			names[j] = names[j - 1];
		names[j] = n;
	}
	sb_buf_puts(&b, "[");
	for (i = 0; i < SB_API_CATEGORY_COUNT; i++)
		sb_buf_printf(&b, "%s'%s'", i ? ", " : "", names[i]);
	sb_buf_puts(&b, "]");
	out = sb_arena_strdup(a, b.s);
	sb_buf_free(&b);
	return out;
}

static void api_error(struct sb_policy *p, const struct sb_line *l,
		      const char *detail)
{
	sb_error(p, l->ref, "In %s, %s", py_repr(p->arena, l->text), detail);
}

/* Check one stripped target; on success fill *r and return true. */
static bool parse_target(struct sb_policy *p, const struct sb_line *l,
			 const char *t, struct api_rule *r)
{
	struct sb_arena *a = p->arena;

	if (!*t) {
		api_error(p, l, "empty target.");
		return false;
	}
	/* The reference upper-cases here, so "allow" is caught as well. */
	if (strchr(t, ':') || sb_str_ieq(t, "ALLOW") || sb_str_ieq(t, "DENY")) {
		api_error(p, l,
			  "one action per line: do not mix ALLOW and DENY.");
		return false;
	}
	if (strcmp(t, "*") == 0) {
		r->kind = TARGET_ALL;
		return true;
	}
	if (!strchr(t, '.')) {
		r->kind = TARGET_CATEGORY;
		r->index = sb_api_category_from_name(t);
		if (r->index < 0) {
			api_error(p, l,
				  sb_arena_printf(a,
						  "unknown category %s, "
						  "expected one of %s.",
						  py_repr(a, t),
						  sorted_categories(a)));
			return false;
		}
		return true;
	}
	r->kind = TARGET_FUNCTION;
	r->index = sb_api_lookup(t);
	if (r->index < 0) {
		api_error(p, l,
			  sb_arena_printf(a,
					  "%s is not a registered sensitive "
					  "function.",
					  py_repr(a, t)));
		return false;
	}
	return true;
}

/* A line either records all its targets or none: the first error stops it,
 * as in the reference, so one typo yields one message. */
void sb_parse_api(struct sb_policy *p, const struct sb_line *l)
{
	static const char actions[] = "['ALLOW', 'DENY']";
	struct sb_arena *a = p->arena;
	const char *value, *colon, *t, *end;
	struct api_rule *line_rules = NULL;
	size_t n = 0, cap = 0, i;
	char *action;
	bool allow;

	value = sb_strip(a, l->value ? l->value : "",
			 l->value ? strlen(l->value) : 0);
	colon = strchr(value, ':');
	if (!colon) {
		api_error(p, l,
			  sb_arena_printf(a,
					  "expected the form 'ACTION:target', "
					  "with ACTION in %s.",
					  actions));
		return;
	}
	action = sb_strip(a, value, (size_t)(colon - value));
	if (strcmp(action, "ALLOW") == 0) {
		allow = true;
	} else if (strcmp(action, "DENY") == 0) {
		allow = false;
	} else {
		api_error(p, l,
			  sb_arena_printf(a,
					  "unknown action %s, expected one of "
					  "%s.",
					  py_repr(a, action), actions));
		return;
	}

	for (t = colon + 1;; t = end + 1) {
		struct api_rule r = { .allow = allow, .ref = l->ref };

		end = strchr(t, ',');
		if (!end)
			end = t + strlen(t);
		if (!parse_target(p, l, sb_strip(a, t, (size_t)(end - t)),
				  &r))
			return;
		line_rules = sb_arena_grow(a, line_rules, &cap, n + 1,
					   sizeof(*line_rules));
		line_rules[n++] = r;
		if (!*end)
			break;
	}

	if (!p->api_state)
		p->api_state = sb_arena_alloc(a, sizeof(*p->api_state));
	for (i = 0; i < n; i++)
		*SB_VEC_PUSH(a, p->api_state->rules) = line_rules[i];
}

/* Tri-state per target: -1 no rule, else the combined verdict, where a
 * single DENY makes it 0 (DENY wins at equal specificity). */
static void merge(signed char *slot, bool allow)
{
	*slot = (*slot != 0) && allow;
}

void sb_api_finish(struct sb_policy *p)
{
	const size_t len = sb_api_registry_len;
	signed char all = -1, cat[SB_API_CATEGORY_COUNT];
	signed char *fn;
	size_t i;

	if (!p->api_allow)
		p->api_allow = sb_arena_alloc(p->arena, len);
	memset(p->api_allow, 0, len);
	if (!p->api_state)
		return;

	memset(cat, -1, sizeof(cat));
	fn = sb_arena_alloc(p->arena, len);
	memset(fn, -1, len);
	for (i = 0; i < p->api_state->rules.n; i++) {
		const struct api_rule *r = &p->api_state->rules.v[i];

		switch (r->kind) {
		case TARGET_ALL:
			merge(&all, r->allow);
			break;
		case TARGET_CATEGORY:
			merge(&cat[r->index], r->allow);
			break;
		case TARGET_FUNCTION:
			merge(&fn[r->index], r->allow);
			break;
		}
	}

	/* Order of lines is irrelevant: specificity decides, so an included
	 * skill's function grant beats a profile's category denial. */
	for (i = 0; i < len; i++) {
		signed char v = all > 0;

		if (cat[sb_api_registry[i].category] >= 0)
			v = cat[sb_api_registry[i].category];
		if (fn[i] >= 0)
			v = fn[i];
		p->api_allow[i] = (uint8_t)v;
	}
}
