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
#include <signal.h>
#include <stdbool.h>

#include "capi.h"
#include "eval_state.h"
#include "helpers.h"
#include "pathwalk.h"
#include "policy.h"

/* Read a PyExc_* variable (its address is what capi.c resolved). */
#define PY_EXC(name) (*(PyObject **)py.name)

/* the wrapper trampolines (wrap.c): indexes 0..77, eight of each ten */
#define SB_WRAP_SLOTS 78
/* the longest host name the network guard keeps (net.c) */
#define SB_HOST_MAX 512
/* A copy of _socket's class the network guard wrapped (net.c), and its
 * own fileno; a list in the arena, as many as the program makes. */
struct sb_net_copy {
	PyObject *cls, *fileno;
	struct sb_net_copy *next;
};

/* How many (code, instruction, names) answers the dynamic-code test
 * keeps. */
#define SB_LINE_CACHE 64

/* How many module definitions _imp made the import guard follows. */
#define SB_ADOPTED_MAX 512
#define SB_SITE_DIRS_MAX 8

/* A C class whose methods clibs.c wraps, and how many it follows. */
#define SB_CLIBS_CLASSES 16
struct sb_clibs_class {
	PyObject *cls; /* held: its identity is what is compared */
	struct sb_wrap *wraps;
	size_t n;
};

/* The guard's whole process-wide state: what the constructor read, what
 * arming took from the interpreter, and each family's own. Per-thread
 * state (the busy count, the note of the refusal being raised, what a
 * wrapper has judged for the event that follows) stays in __thread
 * variables beside the code that uses it. */
struct sb_guard {
	struct sb_arena *arena;
	struct sb_policy *policy;
	const char *pkgdir; /* where the pysandboxes package lives */
	const char *stdlib; /* dirname(os.__file__), for dynamic-code */
	/* the interpreter armed (PyInterpreterState *): the guard's objects
	 * are its; any other is refused (guard.c foreign_interpreter) */
	void *interp;
	void *(*thread_state)(void); /* the unchecked PyThreadState getter */
	bool armed;
	/* The guard stopped judging: arming failed (the program never
	 * started), or learning lost its recorder. 'armed' is false, and
	 * every later event and wrapped call is refused (refuse.c's
	 * sb_guard_refuse_halted). Never cleared. */
	bool halted;
	bool learning;
	int log_fd;     /* the denial log (or the relay to it), -1: none */
	bool log_relay; /* log_fd is the supervisor's relay socket */
	/* when the launcher started (policy_blob.h): expose-made= */
	int64_t started_sec;
	long started_nsec;
	/* The interpreter's own command line, as the kernel gave it (glibc
	 * passes it to constructors): on 3.9, which has no sys.orig_argv,
	 * the package needs it to know a partial-mode worker, and
	 * /proc/self/cmdline may be out of reach under Landlock. */
	int argc;
	char **argv;
	/* an interactive session on a terminal: what the user types is
	 * theirs */
	bool interactive;
	/* The interpreter's own frameless start: from arming to the main
	 * program's first code, its frameless exec, the frameless read of
	 * a compiled main program (python x.pyc) or the import of runpy that
	 * runs it (api.c frameless_runtime and sb_api_event, imports.c). */
	bool starting;
	/* The program is read from standard input, or a REPL follows it
	 * (-i): what it compiles there, frameless, is named "<stdin>". */
	bool stdin_program;
	/* os-sandbox=none: armed only to mark the process; nothing judged */
	bool provider_none;
	/* the REPL's banner (python-sb(1)) */
	struct {
		bool wanted;
		const char *config; /* the rule file it names */
		const char *cwd;    /* the launcher's, to shorten that name */
	} banner;
	/* refuse.c: taken once, when the package loads, so that what the
	 * program later does to its attributes changes nothing we raise */
	struct {
		PyObject *pkg;
		PyObject *exc_class[SB_EXC_COUNT];
		PyObject *api_exc_class;
		PyObject *report_fn; /* pysandboxes.e._report_denial */
	} refuse;
	/* wrap.c: which wrapper each trampoline serves; every module-level
	 * wrapper installed, for a copy of its module made later */
	struct {
		struct sb_wrap *slots[SB_WRAP_SLOTS];
		size_t used;
		struct sb_wrap *installed[2 * SB_WRAP_SLOTS];
		size_t n_installed;
		/* builtin_function_or_method, the type of every wrapper */
		PyObject *cfunction_type;
		/* gc.get_referents, taken at arming (sb_wrap_set_on_class):
		 * a module imported later is judged as the program's
		 * import */
		PyObject *get_referents;
	} wrap;
	/* files.c */
	struct {
		PyObject *scandir_class; /* iterator over a filtered list */
		PyObject *collect_fn;    /* list(it), then it.close() */
		PyObject *py_false, *py_true;
		PyObject *direntry_type; /* posix.DirEntry, found at arming */
		PyObject *helper_builtins; /* for scandir_class, at arming */
		PyObject *warn_fn;	   /* _warnings.warn, at arming */
		bool bool_fd_warns; /* 3.13+: a bool dir_fd= warns */
		struct sb_dir_cache dirs; /* canonical directories */
		PyObject *lstat; /* the original os.lstat (os.stat's fast way) */
	} files;
	/* api.c: registry entries whose denier is installed (or that do not
	 * apply), the originals the deniers replaced (held here only) and
	 * their method definitions, all indexed like the registry */
	struct {
		unsigned char *done;
		PyObject **originals;
		/* the class a denier was set on (NULL: a module's) */
		PyObject **holders;
		/* a module's denier is bound, as the function it replaces is,
		 * to a module: an empty one of the same name, its own, so
		 * that the call finds its entry by it (NULL: bound to a
		 * capsule holding the index) */
		PyObject **selves;
		struct py_method_def *defs;
		/* a module was caught mid-import: scan again even if
		 * sys.modules did not grow since */
		bool pending_init;
		Py_ssize_t modules_seen;
		/* the child kill_call is signalling: its os.kill event passes
		 * once (0: none) */
		pid_t own_kill;
	} api;
	/* clibs.c: the files C libraries open by name */
	struct {
		/* the classes whose methods are wrapped (the wraps are per
		 * class: a module made again makes new classes, each wrapped
		 * with its own originals) */
		struct sb_clibs_class classes[SB_CLIBS_CLASSES];
		size_t n_classes;
		/* sqlite3.enable_callback_tracebacks(flag), as the program
		 * last set it, and whether this CPython reports a callback's
		 * exception to sys.unraisablehook (3.11+) or prints it (3.9,
		 * 3.10) */
		bool callback_tracebacks, unraisable_reports;
		PyObject *programming_error; /* sqlite3.ProgrammingError */
		/* sqlite3.connect/handle (3.10+) comes before the connection
		 * is marked initialised, when set_authorizer still refuses
		 * it: the connection waits here, and gets the authorizer
		 * before any statement runs (the wrappers of connect,
		 * set_authorizer and the execute methods install it first).
		 * A strong reference (a Connection takes no weak one):
		 * connect empties the list as it returns, so that a
		 * connection the program drops dies then; one made by calling
		 * the class stays until the next of those calls. */
		PyObject *waiting;
		PyObject *getrefcount; /* sys.getrefcount, with the module */
		/* CPython 3.9 raises no sqlite3.connect/handle: a connection
		 * gets the authorizer at its first statement. Its connections
		 * take no weak reference: the ones seen are kept by id, with
		 * the program's callback ({id: (connection, callback or
		 * None)}; an id is not reused while the connection lives),
		 * and dropped when nothing else holds them (at the next
		 * connection's first statement, before it runs: a lock the
		 * dropped one held is released first). */
		bool no_handle_event;
		PyObject *seen;
		PyObject *cursor_connection; /* Cursor.connection.__get__ */
	} clibs;
	/* imports.c: types.SimpleNamespace, taken from sys.implementation
	 * when the guard arms, before program code runs */
	struct {
		PyObject *ns_type;
		/* the modules _imp.create_* made, by their definition (static
		 * in the interpreter or the extension, whatever name or
		 * attributes the program gives the module object later): the
		 * names whose deniers they get, again after _imp.exec_* ran
		 * their exec slots */
		struct {
			void *def;
			char name[128];
		} adopted[SB_ADOPTED_MAX];
		size_t n_adopted;
		/* the real directories of python-sb's package and of the
		 * standard library, found at their first use ("": not yet,
		 * or not found) */
		char own_dir[PATH_MAX];
		char stdlib_dir[PATH_MAX];
		/* the site-packages and dist-packages directories of sys.path
		 * as the guard armed (real paths): with the standard library,
		 * the trees whose files name their module (sb_imports_code) */
		char site_dirs[SB_SITE_DIRS_MAX][PATH_MAX];
		size_t n_site;
		/* the module -m runs (cpython.run_module), else "" */
		char main_module[256];
	} imports;
	/* args.c: what line_names() answered for the instructions last
	 * asked about (a library asks again and again from the same one:
	 * namedtuple's eval, logging's sys._getframe). Each entry holds a
	 * reference to its code object, so that its address is not reused
	 * while the entry stands. */
	struct {
		PyObject *code;
		const char *const *names;
		long lasti;
		int yes;
	} lines[SB_LINE_CACHE];
	/* "f_lasti", interned once: the cache's key is read per check */
	PyObject *f_lasti;
	/* args.c: the interpreter's minor version (3.x), read at the first
	 * use; 0: not yet, -1: unknown (no opcode table then) */
	int py_minor;
	/* learn.c: the record descriptor, -1 when not learning */
	struct {
		int fd;
	} learn;
	/* net.c */
	struct {
		/* _socket.socket.fileno and the class, taken when _socket
		 * is first seen, before user code could replace the class */
		PyObject *c_fileno;
		PyObject *c_socket_class;
		/* copies of _socket made outside sys.modules (module_from_spec
		 * and exec_module): a multi-phase one makes its class anew,
		 * which gets wrappers of its own (sb_net_adopt_module) */
		struct sb_net_copy *copies;
		bool all_installed;
		bool socket_synced;
		/* learning: which name an address came from */
		struct {
			struct sb_addr addr;
			char host[SB_HOST_MAX];
		} resolved[256];
		size_t n_resolved;
		/* learning: what the enforcing run will refuse, told to the
		 * learner once each (a send in a loop) */
		char told[32][64];
		size_t n_told;
	} net;
	/* the eval guard (eval.c, eval_check.c, eval_budget.c; the types:
	 * eval_state.h), set when the guard arms or, learning, at the first
	 * evaluation */
	struct {
		/* indexed like policy->eval_profiles; the default one's
		 * index, -1: none */
		struct ev_profile *profiles;
		size_t nprofiles;
		long default_profile;
		/* $PYSB_EVAL_NO_FAST_PATH at arming: every source takes the
		 * parse and the walk (the differential tests compare both
		 * paths). It can only add checking. */
		bool no_fast_path;
		PyObject *raw_compile; /* builtins.compile, not our wrapper */
		PyObject *cache;    /* (profile, mode, source) -> code */
		PyObject *compiled; /* id(code) -> weakref: what we compiled */
		PyObject *builtins_dict; /* the builtins module's dict */
		/* EvalSyntaxRejected, RuleEvalPermissionError,
		 * EvalInterrupted */
		PyObject *exc_syntax, *exc_perm, *exc_interrupted;
		/* _ast and its AST class, the classes the rewrite builds,
		 * and the helpers it calls */
		PyObject *ast_module, *ast_class;
		PyObject *ast_name, *ast_load, *ast_call, *ast_expr,
			*ast_boolop, *ast_and;
		PyObject *tick_fn, *enter_fn;
		/* _string.formatter_parser and formatter_field_name_split:
		 * str.format's own reading of a template (check_format) */
		PyObject *fmt_parser, *fmt_split;
		/* interned: the helpers' names, what the walk reads */
		PyObject *str_tick, *str_enter, *str_fields, *str_name,
			*str_lineno, *str_col, *str_end_col, *str_end_lineno,
			*str_level, *str_attr, *str_ctx, *str_id;
		/* the allocators eval-max-alloc wraps */
		struct ev_allocator mem_orig, obj_orig;
		/* the AST classes the walk has met */
		struct ev_type types[EV_TYPES_MAX];
		size_t ntypes;
		/* the static checker's arming (eval.c arm_checker): 0 not
		 * yet, 1 armed, -1 failed */
		int checker_state;
		/* learning with no eval profile: the default one, made at
		 * the first evaluation */
		struct sb_eval_profile learn_defaults;
		struct ev_profile learn_synthetic;
		/* eval_budget.c: the SIGSEGV disposition before the guard's
		 * (a fault outside an evaluation goes to it) */
		struct sigaction prev_segv;
		bool segv_installed;
	} eval;
};

extern struct sb_guard sb_g;

/* Non-zero while the guard runs code of its own (loading its exception
 * classes at arming, installing wrappers): events of that thread pass,
 * but only those raised from the frame the guard was entered from
 * (sb_guard_is_busy): code in a frame the guard's call made runs judged.
 * Entered and left with sb_guard_busy_enter() and _leave(). */
extern __thread int sb_guard_busy;
void sb_guard_busy_enter(void);
void sb_guard_busy_leave(void);
bool sb_guard_is_busy(void);
/* Around the guard's own compile() or PyRun_String() while the program
 * runs: only the compile and exec events of that frame pass. */
void sb_guard_own_compile_enter(void);
void sb_guard_own_compile_leave(void);

/* ---- file helpers (files.c) ---- */

/* Judge an access to 'path' (as written; relative to dir_fd when dir_fd is
 * >= 0, else to the cwd). 0 allowed, -1 refused (exception set). */
int sb_files_check(const char *path, int dir_fd, bool write);
/* The same for a name SQLite opens as a database (a path, or a "file:"
 * URI: mode=ro reads, anything else writes; ":memory:" and "" are no
 * file). */
int sb_files_check_sqlite(const char *db);

/* ---- system files C functions read by a fixed name (sysfiles.c) ---- */

/* pwd, grp, spwd and _socket's services and protocols lookups, judged as
 * reads of /etc/passwd, /etc/group, /etc/shadow, /etc/services and
 * /etc/protocols: 'mod', made by the import machinery (or found at
 * arming), under the name 'name'. 0, or -1 with an exception set. */
int sb_sysfiles_module_ready(PyObject *mod, const char *name);
/* A service name glibc looks up in /etc/services (getaddrinfo's port,
 * getnameinfo without NI_NUMERICSERV, getservbyname): judged as a read of
 * that file. 0 allowed, -1 refused (exception set). */
int sb_sysfiles_services(void);

/* ---- files C libraries open by name (clibs.c) ---- */

/* The modules clibs.c and sysfiles.c wrap that are loaded already when
 * the guard arms (pwd by the interpreter's own start; socket, sqlite3 or
 * ssl by a .pth file or sitecustomize) get their wrappers as a module
 * made later does. 0, or -1 with an exception set. */
int sb_clibs_arm(void);

/* A module the import machinery has just made or filled (imports.c), as
 * 'name' (sb_wrap_adopt_module's): _sqlite3's, _socket's and _ssl's
 * classes get their wrappers. 0, or -1 with an exception set: the module
 * is then not handed out. */
int sb_clibs_module_ready(PyObject *mod, const char *name);
/* sqlite3.connect/handle (3.10+): the connection gets the guard's
 * authorizer before the program holds it. 0 or -1 (raised). */
int sb_clibs_sqlite_opened(PyObject *conn);
/* sqlite3.enable_load_extension (3.10+): enabling needs the native
 * grant. 0 or -1 (raised). */
int sb_clibs_sqlite_extension(PyObject *enabled);
/* sqlite3.load_extension: the load needs the native grant */
int sb_clibs_sqlite_load(void);
/* os.putenv (key, value): the variables that make OpenSSL load native
 * code need the native grant; those that name files the C library reads
 * (TZ, TZDIR, LOCPATH, HOSTALIASES) are judged as reads. 0 or -1 (raised). */
int sb_clibs_putenv(PyObject *key, PyObject *value);

/* ---- learning (learn.c) ---- */

/* Learning mode is sb_g.learning: every family records what it would have
 * refused (a line on the descriptor python-sb reads) and lets it happen. */
void sb_learn_init(int fd);
/* One record: 0, or -1 when the recorder is gone: the guard has halted
 * (sb_guard_halt), no exception is set; refuse with
 * sb_guard_refuse_halted() where the caller can. */
int sb_learn_record(const char *family, ...) __attribute__((sentinel));
/* Record a file access that the rules do not allow; returns 0 (allow). */
int sb_learn_file(const char *canon, bool write);
/* importlib looked into a directory (a sys.path entry): recorded as a
 * lookup ("file l d"), which becomes a rule only if something was then
 * loaded from there (learn_rules.c). */
int sb_learn_lookup(const char *canon);
int sb_learn_arm(void);
/* A module the import machinery made, as 'name' (sb_wrap_adopt_module's):
 * learning's wrappers of it. 0, or -1 with an exception set. */
int sb_learn_module_ready(PyObject *mod, const char *name);

/* ---- per-family entry points, called by guard.c ---- */

/* Each returns 0 (not its event, or allowed) or -1 (refused). */
int sb_files_event(const char *event, PyObject *args);
int sb_net_event(const char *event, PyObject *args);
/* socket.setsockopt(level, name, ...) on 'sock': an IP socket may set the
 * options of src/base/sockopt.c only, unless the policy allows the whole
 * network. 0 or -1 (raised). */
int sb_net_judge_sockopt(PyObject *sock, long level, long name);
/* The arguments of socket.sendmsg (self first) with its ancillary data
 * read once into a list of (int, int, data) tuples, each judged: only the
 * control messages of sb_cmsg_allowed (src/base/sockopt.c, the
 * supervisor's) unless the policy allows the whole network. A new
 * reference to hand the call, or NULL (raised). */
PyObject *sb_net_sendmsg_args(PyObject *args);
int sb_imports_event(const char *event, PyObject *args);
/* exec(code, globals) or eval(code, globals), before the call: a module's
 * code run in a namespace is judged as that module's import (imports.c).
 * 0, or -1 (raised). */
int sb_imports_run_code(PyObject *args, PyObject *kwargs);
/* The guard armed on 'event' (cpython.run_module names the -m module). */
void sb_imports_started(const char *event, PyObject *args);
int sb_api_event(const char *event, PyObject *args);

/* Called once when the guard arms (GIL held, busy set): install the
 * wrappers of each family, add implicit exposures. -1 on failure. */
int sb_files_arm(void);
int sb_net_arm(void);
int sb_imports_arm(void);
int sb_api_arm(void);
/* A module has just been imported: install the wrappers that target it. */
void sb_api_module_loaded(void);
/* The deniers of module 'as' on a module object sys.modules does not hold
 * (an _imp.create_* copy). 0, or -1 with an exception. */
int sb_api_adopt_module(PyObject *mod, const char *as);
/* The same for the network guard (_socket and socket): cheap once done. */
void sb_net_module_loaded(void);
/* A module object made outside sys.modules was executed as 'as' (the name
 * its definition was first loaded under): a copy of _socket gets the
 * socket wrappers on its own class. 0, or -1 with an exception (a copy
 * the guard cannot wrap is refused). */
int sb_net_adopt_module(PyObject *mod, const char *as);
/* Does a rule allow any entry of this registry category (api.c)? A grant
 * of one native entry opens raw memory, so it opens the whole category's
 * doors (the import of a native module, ctypes' data events). */
bool sb_api_category_opened(int category);
/* A door to native code no registry entry names (a native module's
 * import, an SQL function, an environment variable): 1 open (a native
 * grant, or a learning run, which records one as ctypes.CDLL), 0 not (the
 * caller refuses, naming python-api=ALLOW:native), -1 learning lost its
 * recorder (raised). */
int sb_api_native_open(void);
/* Is every entry of the category allowed (python-api=ALLOW:<category>,
 * ALLOW:*)? */
bool sb_api_category_granted(int category);
/* The function a registry entry's denier replaced (borrowed), or NULL. */
PyObject *sb_api_original(const char *qualname);
/* The eval/exec/compile wrappers (api.c). */
int sb_api_dyn_arm(void);
/* os.kill's wrapper, which signals the program's own child (api.c). */
int sb_api_kill_arm(void);


#endif
