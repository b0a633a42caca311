/* eval_state.h - the types of the eval guard's process-wide state, which
 * sb_g.eval (guard.h) holds: the profiles as the guard runs them, the
 * allocators eval-max-alloc wraps, the AST classes the checker has read.
 * guard.h includes it so that sb_g can hold them, as it holds pathwalk.h's
 * directory cache; only the eval guard's files (eval_int.h) use them.
 */
#ifndef SB_GUARD_EVAL_STATE_H
#define SB_GUARD_EVAL_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "capi.h"
#include "policy.h"

/* CPython's PyMemAllocatorEx */
struct ev_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);
};

/* What each eval profile needs at run time, indexed like
 * sb_g.policy->eval_profiles. */
struct ev_profile {
	const struct sb_eval_profile *rules;
	const char *label;   /* "default" or the profile's name */
	PyObject *filename;  /* "<eval:label>" */
	PyObject *group_allow, *group_deny; /* attribute group names (sets) */
	PyObject *builtins;  /* the eval-call builtins, built on first use */
};

/* How the walk judges an AST class, read once per class from its name
 * (eval_check.c's type_of), so that the walk compares small integers, not
 * names, at every node. */
enum ev_kind {
	EV_K_OTHER,      /* judged by eval-syntax only */
	EV_K_PART,       /* an operator or context: part of its parent */
	EV_K_CALL,       /* Call, keyword: judged by eval-call at the end */
	EV_K_ATTRIBUTE,  /* judged by eval-attribute, not eval-syntax */
	EV_K_MATCH_CLASS,
	EV_K_NAME,
	EV_K_IMPORT,
	EV_K_IMPORT_FROM,
	EV_K_ARG,        /* binds its .arg */
	EV_K_NAMED,      /* binds its .name */
};

/* Where the rewrite inserts a budget helper. */
enum ev_rewrite {
	EV_RW_NONE,
	EV_RW_LOOP,          /* __sb_tick__() first in the body */
	EV_RW_FUNCTION,      /* __sb_enter__() first in the body */
	EV_RW_COMPREHENSION, /* __sb_tick__() as a last condition */
	EV_RW_LAMBDA,        /* __sb_enter__() and body */
};

/* What the walk needs of an AST class, read once per class: the classes
 * live as long as the interpreter (a reference is kept). */
struct ev_type {
	PyObject *type, *fields;
	char name[40];
	enum ev_kind kind;
	enum ev_rewrite rw;
	/* syntax_allowed() for the profile it was last asked for: the
	 * profiles and their rules live as long as the interpreter */
	const struct ev_profile *syntax_p;
	bool syntax_ok;
};

/* the most AST classes the walk keeps */
#define EV_TYPES_MAX 160

#endif
