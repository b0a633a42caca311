/* guard.h - what the guard library's files share: the process-wide guard
 * state and the entry points of each family (files, net, imports, api,
 * learn). The helpers they all call (the refusal path, the wrappers, the
 * arguments) are declared in helpers.h, included here.
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
	/* The interpreter's own command line, as the kernel gave it (glibc
	 * passes it to constructors): on 3.9, which has no sys.orig_argv,
	 * the package needs it to know a partial-mode worker, and
	 * /proc/self/cmdline may be out of reach under Landlock. */
	int argc;
	char **argv;
	/* an interactive session on a terminal: what the user types is
	 * theirs */
	bool interactive;
};

extern struct sb_guard sb_g;

/* Non-zero while the guard runs Python code of its own (loading its
 * exception classes, installing wrappers): events of that thread pass. */
extern __thread int sb_guard_busy;

#include "helpers.h"

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

#endif
