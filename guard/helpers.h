/* helpers.h - the helpers every family of the guard calls, kept out of
 * the dispatcher: the refusal path (refuse.c: one function per exception
 * family, the denial log, the package the classes come from), the C
 * wrappers that replace a module attribute while keeping the original out
 * of Python's reach and the guard's own calls of Python code (wrap.c), and
 * the readers of path and int arguments and of the calling code (args.c).
 * Included by guard.h.
 *
 * All of it runs with the GIL held. Nothing here decides what is allowed;
 * a function that refuses returns -1 with a Python exception set.
 */
#ifndef SB_GUARD_HELPERS_H
#define SB_GUARD_HELPERS_H

#include <limits.h>
#include <stdbool.h>

#include "capi.h"

/* ---- refusing (refuse.c) ---- */

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
/* Tell the supervisor (under the kernel providers, on the relay) that
 * the guard is armed and the program's own code starts: its records of
 * Landlock's refusals begin then (SB_RELAY_STARTED). */
void sb_guard_log_started(void);
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
/* Stop judging for good (sb_g.halted): the hook and the wrappers refuse
 * everything from now on. Raises nothing. */
void sb_guard_halt(void);
/* Once halted, for every event and wrapped call: SystemExit(255)
 * (refuse.c says why); returns -1. */
int sb_guard_refuse_halted(void);
/* Load python-sb's own package (always importable): 0 or -1. */
int sb_guard_load_package(void);

/* ---- wrappers (wrap.c) ---- */

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
/* The same on the module object 'mod' (one the import machinery is still
 * making, not in sys.modules yet). */
int sb_wrap_install_in(struct sb_wrap *w, PyObject *mod);
/* cls.name = v, on a C class too (immutable: written into the dict behind
 * its __dict__, as type_setattro would, and read back). 0, or -1 with an
 * exception set. */
int sb_wrap_set_on_class(PyObject *cls, const char *name, PyObject *v);
/* The ml_doc for a replacement of 'original' named 'name': its text
 * signature and docstring (arena-held), or NULL. */
const char *sb_wrap_doc(PyObject *original, const char *name);
/* The same for a method: attr is "Class.method". */
int sb_wrap_install_method(struct sb_wrap *w);
/* The same on the class 'cls' itself, for its method 'name' (w->attr is
 * for messages only). A C class is wrapped in place too: its dict is
 * written as type_setattro would write it (wrap.c says how). */
int sb_wrap_install_on_class(struct sb_wrap *w, PyObject *cls,
			     const char *name);
/* A module _imp has just made or filled, as 'name' (the name it was
 * judged and made under, never its __name__, which the program may change
 * between the make and the fill): the wrappers installed on its first copy
 * go on this one too (a fresh posix holds the originals). 0, or -1 with
 * an exception set. */
int sb_wrap_adopt_module(PyObject *mod, const char *name);
/* Is 'fn' module 'mod''s own C function 'name' (not what the program put
 * in its place)? */
bool sb_wrap_genuine(PyObject *fn, PyObject *mod, const char *name);
/* Take gc.get_referents while the guard arms (the program has not run):
 * what wrapping a method of a C class needs later. */
void sb_wrap_take_get_referents(void);
/* Swap 'original' for 'fn' in the os.supports_* sets: 0 or -1. */
int sb_guard_replace_in_os_sets(PyObject *original, PyObject *fn);
/* Call the original with the same arguments (new reference or NULL). */
PyObject *sb_wrap_call_original(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs);
/* fn(*args), called by the guard itself, judged as the program's code
 * (fn is Python the program can reach): a new reference, or NULL with an
 * exception set. The tuple is taken over; a NULL one (its allocation
 * failed) gives NULL. */
PyObject *sb_guard_call(PyObject *fn, PyObject *args);
/* The same with one argument: fn(arg). */
PyObject *sb_guard_call1(PyObject *fn, PyObject *arg);

/* ---- arguments and the caller (args.c) ---- */

/* The path a Python argument names (str, bytes or os.PathLike), in the file
 * system encoding, into buf. Returns 1 with buf set; 0 if the argument is
 * not a path we judge (an int fd, None, a path with a NUL byte: the
 * original call deals with it); -1 on error (exception set). */
int sb_arg_path(PyObject *arg, char buf[PATH_MAX]);
/* A keyword argument or NULL (borrowed). */
PyObject *sb_kwarg(PyObject *kwargs, const char *name);
/* Positional argument 'i' of a call, else its keyword 'name', else NULL
 * (borrowed). */
PyObject *sb_arg(PyObject *args, PyObject *kwargs, Py_ssize_t i,
		 const char *name);
/* An int argument (dir_fd...): 1 with *out, 0 when None/absent, -1 error. */
int sb_arg_int(PyObject *arg, long *out);

/* The co_filename of the Python code that called us into buf: 1; 0 when
 * no Python frame runs (the interpreter itself); -1 when it cannot be
 * read (no exception left set). */
int sb_guard_caller_file(char buf[PATH_MAX]);
/* Is the Python code that called us the runtime's or a library's (the
 * standard library, site-packages, frozen modules)? Application code,
 * scripts, -c commands and no frame at all are not (2.6.7). */
bool sb_guard_caller_is_library(void);
/* The dynamic-code exemption: a library frame that names one of names
 * (NULL-terminated) calls it, reached from the caller through library
 * frames only (args.c). */
bool sb_guard_library_calls(const char *const *names);
/* How code is made, for the exemption (args.c keeps a list of the
 * standard library's modules for each): compile (and the compile event),
 * exec or eval of a code object (and the exec event), exec or eval of a
 * source string, bytecode read with marshal, a code object built. */
enum sb_code_way {
	SB_CODE_COMPILE,
	SB_CODE_RUN,
	SB_CODE_RUN_STRING,
	SB_CODE_MARSHAL,
	SB_CODE_OBJECT,
};
/* The same for a door that makes code: a frame of the standard library
 * lends it only from a module that makes code that way itself
 * (namedtuple, dataclasses, the import system), not from one that runs
 * its caller's string (timeit, code, pdb, doctest), and only from a source
 * that module may make code from (codesrc.c). args: the call's or the
 * event's positional arguments (NULL: none). */
bool sb_guard_library_makes_code(const char *const *names,
				 enum sb_code_way way, PyObject *args);
/* Does the standard-library module mod, which makes code that way itself,
 * make it here from what it may: a file's content for the import system,
 * a type expression for typing and inspect, a name in a fixed template
 * for multiprocessing (codesrc.c)? frame: the library frame that calls
 * the door. */
bool sb_code_source_ok(const char *mod, enum sb_code_way way,
		       PyObject *args, PyObject *frame);
/* Is the dotted module name mod (n bytes) name or one of its submodules? */
bool sb_guard_module_is(const char *mod, size_t n, const char *name);
/* Is it code the user typed at the interactive prompt (python-sb(1), the
 * REPL) that calls one of names itself? Its eval/exec/compile run
 * unguarded; the other rules still hold. */
bool sb_guard_caller_is_typed(const char *const *names);

#endif
