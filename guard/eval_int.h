/* eval_int.h - what the eval guard's files share, and only they: eval.c
 * (the entry points, compiling, namespaces, arming), eval_check.c (the
 * static checker and its rewrite), eval_scan.c (the fast path's scanner)
 * and eval_budget.c (the run-time budgets).
 * Everything else in the guard includes eval.h. Their process-wide state is
 * sb_g.eval (guard.h, its types in eval_state.h); what is declared here (the
 * C API slice 'ev', the thread's evaluation) is defined in eval.c. The
 * library's symbols are hidden, so none of it is reachable from outside the
 * guard library, nor from the evaluated code.
 */
#ifndef SB_GUARD_EVAL_INT_H
#define SB_GUARD_EVAL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "eval.h"
#include "guard.h"

/* ---- the slice of the C API only the eval guard uses (sb_eval_arm) ---- */

#define EV_FUNCTIONS(X)                                                        \
	X(PyObject *, PyEval_EvalCode, (PyObject *, PyObject *, PyObject *))   \
	X(PyObject *, PyObject_Dir, (PyObject *))                              \
	X(PyObject *, PyObject_Type, (PyObject *))                             \
	X(PyObject *, PyObject_GetAttr, (PyObject *, PyObject *))              \
	X(PyObject *, PyDict_Copy, (PyObject *))                               \
	X(PyObject *, PyDict_GetItem, (PyObject *, PyObject *))                \
	X(int, PyDict_SetItem, (PyObject *, PyObject *, PyObject *))           \
	X(int, PyDict_Next,                                                    \
	  (PyObject *, Py_ssize_t *, PyObject **, PyObject **))                \
	X(PyObject *, PySet_New, (PyObject *))                                 \
	X(PyObject *, PyUnicode_DecodeUTF8,                                    \
	  (const char *, Py_ssize_t, const char *))                            \
	X(PyObject *, PyLong_FromVoidPtr, (void *))                            \
	X(long long, PyLong_AsLongLong, (PyObject *))                          \
	X(void, PyMem_GetAllocator, (int, struct ev_allocator *))              \
	X(void, PyMem_SetAllocator, (int, struct ev_allocator *))              \
	X(int, PyFrame_GetLineNumber, (PyObject *))                            \
	X(PyObject *, PyDictProxy_New, (PyObject *))                           \
	X(PyObject *, PyWeakref_NewRef, (PyObject *, PyObject *))              \
	X(int, PyDict_DelItem, (PyObject *, PyObject *))                       \
	X(void *, PyType_GetSlot, (PyObject *, int))                           \
	X(void, PyErr_GetExcInfo, (PyObject **, PyObject **, PyObject **))

struct ev_capi {
#define EV_FIELD(ret, name, args) ret(*name) args;
	EV_FUNCTIONS(EV_FIELD)
#undef EV_FIELD
	PyObject *dict_type;
	PyObject **value_error;
	PyObject *code_type;
	PyObject *module_type;
	PyObject **base_exception;
	PyObject **generator_exit;
};

extern struct ev_capi ev;

/* PyMem domains */
enum { EV_MEM_MEM = 1, EV_MEM_OBJ = 2 };
#define EV_CF_ONLY_AST 0x0400
#define EV_TP_NEW 65 /* Py_tp_new, typeslots.h */

/* ---- state (eval.c) ---- */

/* One evaluation in progress on this thread (innermost first). */
struct ev_run {
	struct ev_profile *p;
	struct ev_run *outer;
	struct timespec deadline;
	long long lines;
	unsigned events;
	const char *why;  /* the budget that ran out, sticky */
	char reason[96];
	size_t refused;   /* size of an allocation refused */
	bool logged;      /* its interruption is in the denial log */
};

extern __thread struct ev_run *ev_cur;

/* ---- exceptions (eval.c) ---- */

int ev_raise_with(PyObject *cls, PyObject *args);
/* RuleEvalPermissionError(target, rule_key[, hint]); returns -1. */
int ev_raise_perm(const char *target, const char *key, const char *hint);
/* The same, logged with the rule that decided or the one to add. */
int ev_raise_logged(const char *target, const char *key, const char *hint,
		    const char *rule, const char *add);
/* EvalInterrupted(run->reason), the record written once per run. */
int ev_raise_interrupted(struct ev_run *run);
/* EvalInterrupted(reason), outside any evaluation. */
int ev_raise_orphan(const char *reason);

/* ---- rules (eval_check.c) ---- */

bool ev_is_dunder(const char *s);
bool ev_list_exact(const struct sb_strlist *l, const char *name);
/* The frame-capture attributes: never, whatever the rules say. */
bool ev_frame_attr(const char *name);
/* Callables that look an attribute up by a name given at run time. */
bool ev_resolver_attr(const char *name);
bool ev_call_allowed(const struct ev_profile *p, const char *name);
/* 'name' as a str object and as UTF-8. */
bool ev_attr_allowed(const struct ev_profile *p, PyObject *oname,
		  const char *name);
bool ev_import_allowed(const struct ev_profile *p, const char *mod);

/* ---- the static checker (eval_check.c) ---- */

/* syntax_allowed(): may a node of class 'node' appear? */
bool ev_syntax_allowed(const struct ev_profile *p, const char *node);
/* Would the checker pass a Name that reads 'name', with nothing bound and
 * nothing excused by the namespace? */
bool ev_name_read_clean(const struct ev_profile *p, const char *name);

struct ev_check {
	struct ev_profile *p;
	const char *src;      /* UTF-8 source, NULL for an AST input */
	PyObject *names;      /* a namespace that binds names, may be NULL */
	struct sb_buf blocks; /* rendered violations, "\n\n"-separated */
	PyObject *violations; /* list of str */
	long nviol;
	long first_line, first_col;
	size_t nodes;
	long max_depth;
	bool excused;         /* a name was allowed by the namespace only */
	bool reserved;        /* an __sb_ name appears (an AST input) */
	bool rewrite;         /* insert the budget helpers (not for an AST
			       * handed back to the program) */
	size_t rewritten;     /* nodes the rewrite changed */
	bool learn;           /* learning: record the rule each refusal
			       * names instead of refusing */
	/* builtin names used, judged at the end against what is bound */
	struct ev_use {
		char name[64];
		long line, col, end_col;
	} *uses;
	size_t nuses, cuses;
	char **bound;
	size_t nbound, cbound;
};
/* Judge 'tree'. 0 when it may run, -1 with EvalSyntaxRejected (or another
 * error) set. With c->rewrite, the budget helpers are inserted into it. */
int ev_check_tree(struct ev_check *c, PyObject *tree);
void ev_check_free(struct ev_check *c);

/* ---- the fast path (eval_scan.c) ---- */

/* Is 'src' ('len' bytes of UTF-8), compiled in eval mode, proved by its
 * tokens alone to be an expression ev_check_tree would pass under p with
 * no violation and that the rewrite would leave unchanged? false sends it
 * to the parse and the walk, which decide. */
bool ev_scan_admits(const struct ev_profile *p, const char *src, size_t len);

/* ---- budgets (eval_budget.c) ---- */

/* The __sb_tick__ and __sb_enter__ helpers (METH_NOARGS). */
extern struct py_method_def ev_tick_def, ev_enter_def;

/* Wrap the allocator of a PyMem domain; the original goes to *orig. */
void ev_install_allocator(int domain, struct ev_allocator *orig);

/* Run 'code' in (g, l) under p's budgets. */
PyObject *run_code(struct ev_profile *p, PyObject *code, PyObject *g,
		   PyObject *l);

#endif
