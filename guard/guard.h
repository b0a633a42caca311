/* guard.h - what the guard library's files share: the process-wide guard
 * state, the refusal path (one function per exception family), C wrappers
 * that replace a module attribute while keeping the original out of Python's
 * reach, and helpers to read path and address arguments.
 *
 * Everything runs with the GIL held, inside an audit hook or a wrapper.
 * Hooks return 0 to allow, or -1 with a Python exception set to refuse; they
 * never exit. If the guard itself fails while judging, it refuses.
 */
#ifndef SB_GUARD_H
#define SB_GUARD_H

#include <limits.h>
#include <stdbool.h>

#include "capi.h"
#include "policy.h"

/* Read a PyExc_* variable (its address is what capi.c resolved). */
#define PY_EXC(name) (*(PyObject **)py.name)

struct sb_guard {
	struct sb_arena *arena;
	struct sb_policy *policy;
	const char *pkgdir; /* where the pysandboxes package lives */
	const char *stdlib; /* dirname(os.__file__), for dynamic-code */
	bool armed;
	bool learning;
	int log_fd;     /* the denial log (or the relay to it), -1: none */
	bool log_relay; /* log_fd is the supervisor's relay socket */
};

extern struct sb_guard sb_g;

/* Non-zero while the guard runs Python code of its own (loading its
 * exception classes, installing wrappers): events of that thread pass. */
extern __thread int sb_guard_busy;

enum sb_exc {
	SB_EXC_FILE_NOT_FOUND, /* RuleFileNotFoundError */
	SB_EXC_PERMISSION,     /* RulePermissionError */
	SB_EXC_SOCKET,         /* RuleSocketConnectionRefusedError */
	SB_EXC_MODULE,         /* RuleModuleNotFoundError */
	SB_EXC_COUNT
};

/* Set the pysandboxes exception 'kind' with 'message' (and the file name
 * or module name it concerns, may be NULL). Always returns -1. */
int sb_guard_raise(enum sb_exc kind, const char *message, const char *name);
/* The "rule" of a record for a refusal that no rule decides and none could
 * lift (an abstract Unix socket, a module that claims python-sb's package,
 * a socket that cannot be inspected): python-sb refuses it whatever the
 * rules say, and the record's "add" is null. */
#define SB_RULE_BUILTIN "built in: no rule can allow it"

/* What the next sb_guard_raise() of this thread tells the denial log: the
 * kind ("file", "network", "import", "api"), the target, the rule that
 * decided (NULL: none) and the rule to add (NULL: none is known). Set just
 * before raising; without a note the record names the exception's file or
 * module name (else its message) and SB_RULE_BUILTIN: a refusal a rule
 * can lift always sets its note. The strings are copied. */
void sb_guard_note(const char *kind, const char *target, const char *rule,
		   const char *add);
/* Write one record to the denial log now (nothing without a log or while
 * learning): for refusals raised by other means than sb_guard_raise (the
 * eval guard's). NULL rule: "no rule"; NULL add: none is known. */
void sb_guard_log(const char *kind, const char *target, const char *rule,
		  const char *add);
/* The next sb_guard_raise() of this thread repeats a refusal the log has
 * already (an error raised again with a better message): no record. */
void sb_guard_no_log(void);
/* Forget a note or a sb_guard_no_log() that no refusal used (a check that
 * was muted and then allowed). */
void sb_guard_note_clear(void);
/* RuleApiPermissionError(qualname, category); returns -1. */
int sb_guard_raise_api(const char *qualname, const char *category);
/* Deny a registry entry unless the policy allows it: 0 or -1 (raised). */
int sb_guard_check_api(const char *qualname);

/* Is the Python code that called us the runtime's or a library's (the
 * standard library, site-packages, frozen modules, or no frame at all)?
 * Application code, scripts and -c commands are not (2.6.7). */
bool sb_guard_caller_is_library(void);
/* Is it code the user typed at the interactive prompt (python-sb(1), the REPL)?
 * Its eval/exec/compile run unguarded; the other rules still hold. */
bool sb_guard_caller_is_typed(void);

/* ---- wrappers ---- */

struct sb_wrap;
typedef PyObject *(*sb_wrap_fn)(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs);

/* Replace module.attr by a C function calling 'call'. 'also' names other
 * modules that hold the same object under the same name (os for posix).
 * The original is kept here only. */
struct sb_wrap {
	const char *module;
	const char *attr;
	const char *also;
	sb_wrap_fn call;
	/* filled by sb_wrap_install */
	PyObject *original;
	PyObject *fn;
	struct py_method_def def;
};

/* Install if 'module' is loaded; 0 when done or module absent, -1 on error
 * (exception set). Installing twice is harmless. */
int sb_wrap_install(struct sb_wrap *w);
/* The same for a method: attr is "Class.method". */
int sb_wrap_install_method(struct sb_wrap *w);
/* Swap 'original' for 'fn' in the os.supports_* sets: 0 or -1. */
int sb_guard_replace_in_os_sets(PyObject *original, PyObject *fn);
/* Call the original with the same arguments (new reference or NULL). */
PyObject *sb_wrap_call_original(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs);

/* ---- arguments ---- */

/* The path a Python argument names (str, bytes or os.PathLike), in the file
 * system encoding, into buf. Returns 1 with buf set; 0 if the argument is
 * not a path we judge (an int fd, None, a path with a NUL byte: the
 * original call deals with it); -1 on error (exception set). */
int sb_arg_path(PyObject *arg, char buf[PATH_MAX]);
/* A keyword argument or NULL (borrowed). */
PyObject *sb_kwarg(PyObject *kwargs, const char *name);
/* An int argument (dir_fd...): 1 with *out, 0 when None/absent, -1 error. */
int sb_arg_int(PyObject *arg, long *out);

/* ---- file helpers (files.c) ---- */

/* Judge an access to 'path' (as written; relative to dir_fd when dir_fd is
 * >= 0, else to the cwd). 0 allowed, -1 refused (exception set). */
int sb_files_check(const char *path, int dir_fd, bool write);

/* ---- learning (learn.c) ---- */

/* Learning mode is sb_g.learning: every family records what it would have
 * refused (a line on the descriptor python-sb reads) and lets it happen. */
void sb_learn_init(int fd);
void sb_learn_record(const char *family, ...) __attribute__((sentinel));
/* Record a file access that the rules do not allow; returns 0 (allow). */
int sb_learn_file(const char *canon, bool write);
/* importlib looked into a directory (a sys.path entry): recorded as a
 * lookup ("file l d"), which becomes a rule only if something was then
 * loaded from there (learn_rules.c). */
int sb_learn_lookup(const char *canon);
int sb_learn_arm(void);

/* ---- per-family entry points, called by guard.c ---- */

/* Each returns 0 (not its event, or allowed) or -1 (refused). */
int sb_files_event(const char *event, PyObject *args);
int sb_net_event(const char *event, PyObject *args);
int sb_imports_event(const char *event, PyObject *args);
int sb_api_event(const char *event, PyObject *args);

/* Called once when the guard arms (GIL held, busy set): install the
 * wrappers of each family, add implicit exposures. -1 on failure. */
int sb_files_arm(void);
int sb_net_arm(void);
int sb_imports_arm(void);
int sb_api_arm(void);
/* A module has just been imported: install the wrappers that target it. */
void sb_api_module_loaded(void);
/* The same for the network guard (_socket and socket): cheap once done. */
void sb_net_module_loaded(void);
/* Does a rule allow any entry of this registry category (api.c)? A grant
 * of one native entry opens raw memory, so it opens the whole category's
 * doors (the import of a native module, ctypes' data events). */
bool sb_api_category_opened(int category);
/* The eval/exec/compile wrappers (api.c). */
int sb_api_dyn_arm(void);
/* Load python-sb's own package (always importable): 0 or -1. */
int sb_guard_load_package(void);

#endif
