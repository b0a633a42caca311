/* eval.c - the eval guard (seed-spec 2.6.7, 5.7): eval(), exec() and
 * compile() called from application code, and pysandboxes.guarded_eval(),
 * under the eval-* rules. It owns the static checker, the namespaces, the
 * run-time budgets and the registry of code objects the guard compiled.
 *
 * - The source is parsed to an AST with the raw compile() and every node is
 *   judged here, in C: syntax classes, builtin names, attribute names,
 *   dunders, imports, depth and size. All violations are reported at once
 *   in EvalSyntaxRejected, each with the rule that would allow it. Checked
 *   code is compiled from that same AST and cached by (profile, mode,
 *   source).
 * - The namespace's __builtins__ holds exactly the eval-call names; the
 *   builtins that would undo the attribute rules (getattr, setattr, type,
 *   vars, __import__...) or rebind the budget helpers (globals, locals)
 *   are replaced by checking versions. CPython's
 *   injection of the full builtins never happens: a globals dict without
 *   __builtins__ gets ours.
 * - Budgets: the checked AST gets calls to two C helpers, __sb_tick__() at
 *   the top of every loop body and in every comprehension, __sb_enter__() at
 *   the top of every function; they count iterations and call depth and
 *   watch the clock. An allocator wrapper
 *   refuses, before it happens, any single allocation larger than
 *   eval-max-alloc made while an evaluation runs on that thread. An
 *   exhausted budget raises EvalInterrupted (a BaseException only) again on
 *   every later event of the evaluated code, so catching it does not help.
 * - Only code objects this file compiled may be run again by eval/exec.
 *
 * The state lives in this file's statics and thread locals: nothing the
 * evaluated code can name reaches it (names starting with __sb_ are refused
 * outright, dunders need eval-magic, frame attributes are never allowed).
 */
#include "eval.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guard.h"

/* ---- the slice of the C API only this file uses, resolved here ---- */

struct ev_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);
};

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
	X(PyObject *, PyDictProxy_New, (PyObject *))

static struct {
#define EV_FIELD(ret, name, args) ret(*name) args;
	EV_FUNCTIONS(EV_FIELD)
#undef EV_FIELD
	PyObject *dict_type;
	PyObject **value_error;
	PyObject *code_type;
	PyObject *module_type;
} ev;

/* PyMem domains */
enum { EV_MEM_MEM = 1, EV_MEM_OBJ = 2 };
#define EV_CF_ONLY_AST 0x0400

/* ---- state ---- */

/* What each eval profile needs at run time, indexed like
 * sb_g.policy->eval_profiles. */
struct ev_profile {
	const struct sb_eval_profile *rules;
	const char *label;   /* "default" or the profile's name */
	PyObject *filename;  /* "<eval:label>" */
	PyObject *group_allow, *group_deny; /* attribute group names (sets) */
	PyObject *builtins;  /* the eval-call builtins, built on first use */
};

static struct ev_profile *profiles;
static size_t nprofiles;
static long default_profile = -1;

static PyObject *raw_compile;   /* builtins.compile before our wrapper */
static PyObject *builtins_dict; /* the builtins module's dict */
static PyObject *ast_class;     /* _ast.AST */
static PyObject *ast_module;    /* _ast */
static PyObject *cache;         /* (profile, mode, source) -> code */
static PyObject *compiled;      /* id(code) -> code: what we compiled */
static PyObject *exc_syntax, *exc_perm, *exc_interrupted;
/* the AST classes the rewrite builds, and the helpers it calls */
static PyObject *ast_name, *ast_load, *ast_call, *ast_expr, *ast_boolop,
	*ast_and;
static PyObject *tick_fn, *enter_fn, *str_tick, *str_enter;
static PyObject *str_fields, *str_name, *str_lineno, *str_col, *str_end_col,
	*str_end_lineno, *str_level;

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
};

static __thread struct ev_run *cur;

static struct ev_allocator mem_orig, obj_orig;

/* ---- rules ---- */

static bool is_dunder(const char *s)
{
	size_t n = strlen(s);

	return n > 4 && s[0] == '_' && s[1] == '_' && s[n - 1] == '_' &&
	       s[n - 2] == '_';
}

static bool list_has(const struct sb_strlist *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (sb_glob_star_match(l->v[i], name))
			return true;
	return false;
}

static bool list_exact(const struct sb_strlist *l, const char *name)
{
	return sb_str_in(name, l->v, l->n);
}

/* The frame-capture attributes: never, whatever the rules say. */
static const char *const frame_attrs[] = {
	"ag_await", "ag_code",  "ag_frame",  "cr_await",     "cr_code",
	"cr_frame", "f_back",   "f_builtins", "f_globals",   "f_locals",
	"f_trace",  "gi_code",  "gi_frame",  "gi_yieldfrom", "tb_frame",
	"tb_next",
};

static bool frame_attr(const char *name)
{
	return sb_str_in(name, frame_attrs, SB_ARRAY_LEN(frame_attrs));
}

/* Callables that look an attribute up by a name given at run time, in C or
 * outside the evaluated code (operator, inspect): the attribute rules never
 * see that name, so they are never reached, whatever the rules say. */
static const char *const resolver_attrs[] = {
	"attrgetter", "getattr_static", "getmembers", "getmembers_static",
	"methodcaller",
};

static bool resolver_attr(const char *name)
{
	return sb_str_in(name, resolver_attrs, SB_ARRAY_LEN(resolver_attrs));
}

static bool call_allowed(const struct ev_profile *p, const char *name)
{
	return list_has(&p->rules->allow[SB_EVAL_CALL], name) &&
	       !list_has(&p->rules->deny[SB_EVAL_CALL], name);
}

static bool in_set(PyObject *set, PyObject *name)
{
	return set && py.PySet_Contains(set, name) == 1;
}

/* What the rules say of 'name' before eval-attribute: 0 refused whatever
 * they say (frame attributes, resolvers, the guard's own names), dunders
 * per eval-magic, -1 for eval-attribute to decide. Also judges the names
 * 'from m import name' reads from a module. */
static int attr_fixed(const struct ev_profile *p, const char *name)
{
	const struct sb_eval_profile *r = p->rules;

	if (frame_attr(name) || resolver_attr(name) || strstr(name, "__sb_"))
		return 0;
	if (is_dunder(name))
		return list_has(&r->allow[SB_EVAL_MAGIC], name) &&
		       !list_has(&r->deny[SB_EVAL_MAGIC], name);
	return -1;
}

/* The rule that would allow attribute 'name', or why none does. */
static void attr_hint(const char *name, char *add, size_t size)
{
	if (frame_attr(name))
		snprintf(add, size, "no rule allows it: frame attributes are "
			 "refused whatever eval-attribute says");
	else if (resolver_attr(name))
		snprintf(add, size, "no rule allows it: it looks attributes "
			 "up by a name the eval guard does not see");
	else if (is_dunder(name))
		snprintf(add, size,
			 "add: eval-magic=%.100s        \xe2\x9a\xa0 a "
			 "dunder reaches the interpreter's internals", name);
	else
		snprintf(add, size, "add: eval-attribute=%.100s", name);
}

/* 'name' as a str object and as UTF-8. */
static bool attr_allowed(const struct ev_profile *p, PyObject *oname,
			 const char *name)
{
	const struct sb_eval_profile *r = p->rules;
	int fixed = attr_fixed(p, name);

	if (fixed >= 0)
		return fixed;
	if (list_has(&r->deny[SB_EVAL_ATTRIBUTE], name) ||
	    in_set(p->group_deny, oname))
		return false;
	return list_has(&r->allow[SB_EVAL_ATTRIBUTE], name) ||
	       in_set(p->group_allow, oname);
}

/* "json.*" grants json and its submodules. */
static bool module_match(const struct sb_strlist *l, const char *mod)
{
	size_t i, n;

	for (i = 0; i < l->n; i++) {
		n = strlen(l->v[i]);
		if (sb_glob_star_match(l->v[i], mod))
			return true;
		if (n > 2 && strcmp(l->v[i] + n - 2, ".*") == 0 &&
		    strlen(mod) == n - 2 && strncmp(l->v[i], mod, n - 2) == 0)
			return true;
	}
	return false;
}

static bool import_allowed(const struct ev_profile *p, const char *mod)
{
	return module_match(&p->rules->allow[SB_EVAL_IMPORT], mod) &&
	       !module_match(&p->rules->deny[SB_EVAL_IMPORT], mod);
}

static bool syntax_allowed(const struct ev_profile *p, const char *node)
{
	if (sb_eval_core_node(node))
		return true;
	return list_exact(&p->rules->allow[SB_EVAL_SYNTAX], node) &&
	       !list_exact(&p->rules->deny[SB_EVAL_SYNTAX], node);
}

/* Operators and expression contexts are part of their parent node. */
static const char *const part_nodes[] = {
	"Add",   "And",    "BitAnd", "BitOr", "BitXor", "Del",   "Div",
	"Eq",    "FloorDiv", "Gt",   "GtE",   "In",     "Invert", "Is",
	"IsNot", "LShift", "Load",   "Lt",    "LtE",    "MatMult", "Mod",
	"Mult",  "Not",    "NotEq",  "NotIn", "Or",     "Pow",   "RShift",
	"Store", "Sub",    "UAdd",   "USub",
};

static bool part_node(const char *node)
{
	return sb_str_in(node, part_nodes, SB_ARRAY_LEN(part_nodes));
}

/* ---- exceptions ---- */

static int raise_with(PyObject *cls, PyObject *args)
{
	PyObject *exc;

	if (!args)
		return -1;
	if (!cls) {
		py.Py_DecRef(args);
		py.PyErr_SetString(PY_EXC(PyExc_PermissionError),
				   "the eval guard refused");
		return -1;
	}
	sb_guard_busy++;
	exc = py.PyObject_CallObject(cls, args);
	sb_guard_busy--;
	py.Py_DecRef(args);
	if (!exc)
		return -1;
	py.PyErr_SetObject(cls, exc);
	py.Py_DecRef(exc);
	return -1;
}

static PyObject *tuple_of_strings(const char *a, const char *b,
				  const char *c)
{
	PyObject *t = py.PyTuple_New(c ? 3 : b ? 2 : 1);

	if (!t)
		return NULL;
	py.PyTuple_SetItem(t, 0, py.PyUnicode_FromString(a));
	if (b)
		py.PyTuple_SetItem(t, 1, py.PyUnicode_FromString(b));
	if (c)
		py.PyTuple_SetItem(t, 2, py.PyUnicode_FromString(c));
	return t;
}

/* RuleEvalPermissionError(target, rule_key[, hint]); returns -1. */
static int raise_perm(const char *target, const char *key, const char *hint)
{
	return raise_with(exc_perm, tuple_of_strings(target, key, hint));
}

static int raise_interrupted(const char *reason)
{
	return raise_with(exc_interrupted, tuple_of_strings(reason, NULL,
							    NULL));
}

/* ---- the static checker ---- */

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

/* The line 'lineno' (1-based) of the source, its length in *len. */
static const char *source_line(const char *src, long lineno, size_t *len)
{
	const char *s = src, *nl;

	while (s && --lineno > 0) {
		nl = strchr(s, '\n');
		s = nl ? nl + 1 : NULL;
	}
	if (!s)
		return NULL;
	*len = strcspn(s, "\r\n");
	return s;
}

/* Learning: the rule an "add: eval-KEY=token ..." hint names, recorded
 * for the writer; a refusal no rule lifts records nothing. */
static void learn_rule(const char *add)
{
	char rule[300];
	size_t n;

	if (strncmp(add, "add: eval-", 10) != 0)
		return;
	n = strcspn(add + 5, " ");
	if (n >= sizeof(rule))
		return;
	memcpy(rule, add + 5, n);
	rule[n] = '\0';
	sb_learn_record("eval", rule, NULL);
}

static void violation(struct ev_check *c, long line, long col, long end_col,
		      const char *what, const char *add)
{
	struct sb_buf b = { 0 };
	const char *text;
	size_t len = 0, strip = 0, i, from, to;
	PyObject *s;

	if (c->learn) {
		learn_rule(add);
		return;
	}

	sb_buf_printf(&b, "  line %ld, col %ld: %s", line, col, what);
	text = c->src && line > 0 ? source_line(c->src, line, &len) : NULL;
	if (text) {
		while (strip < len && (text[strip] == ' ' ||
				       text[strip] == '\t'))
			strip++;
		sb_buf_puts(&b, "\n      ");
		sb_buf_add(&b, text + strip, len - strip);
		sb_buf_puts(&b, "\n      ");
		from = (size_t)(col > 0 ? col : 0);
		to = end_col > col ? (size_t)end_col : len;
		if (to > len)
			to = len;
		if (from < strip)
			from = strip;
		for (i = strip; i < from; i++)
			sb_buf_puts(&b, " ");
		for (i = from; i < to || i == from; i++)
			sb_buf_puts(&b, "^");
	}
	sb_buf_printf(&b, "\n    %s", add);
	if (c->nviol++ == 0) {
		c->first_line = line;
		c->first_col = col;
	} else {
		sb_buf_puts(&c->blocks, "\n\n");
	}
	sb_buf_puts(&c->blocks, b.s);
	s = py.PyUnicode_FromString(b.s);
	if (s) {
		py.PyList_Append(c->violations, s);
		py.Py_DecRef(s);
	}
	sb_buf_free(&b);
}

static long int_attr(PyObject *node, PyObject *name)
{
	PyObject *v = ev.PyObject_GetAttr(node, name);
	long r = -1;

	if (!v) {
		py.PyErr_Clear();
		return -1;
	}
	if (v != py._Py_NoneStruct)
		r = py.PyLong_AsLong(v);
	py.Py_DecRef(v);
	py.PyErr_Clear();
	return r;
}

/* A node's position, read only when a violation needs it. */
struct ev_pos {
	PyObject *node;
	bool known;
	long line, col, end_col;
};

static struct ev_pos *pos_get(struct ev_pos *p)
{
	if (p->known)
		return p;
	p->known = true;
	p->line = int_attr(p->node, str_lineno);
	p->col = int_attr(p->node, str_col);
	p->end_col = int_attr(p->node, str_end_lineno) == p->line
			     ? int_attr(p->node, str_end_col)
			     : -1;
	return p;
}

static void violation_at(struct ev_check *c, struct ev_pos *p,
			 const char *what, const char *add)
{
	pos_get(p);
	violation(c, p->line, p->col, p->end_col, what, add);
}

/* A str attribute of a node as UTF-8 into buf (empty when absent/None). */
static const char *str_field(PyObject *node, const char *field, char *buf,
			     size_t size)
{
	PyObject *v = py.PyObject_GetAttrString(node, field);
	const char *s = NULL;

	buf[0] = '\0';
	if (!v) {
		py.PyErr_Clear();
		return buf;
	}
	if (py.PyObject_IsInstance(v, py.PyUnicode_Type) == 1)
		s = py.PyUnicode_AsUTF8AndSize(v, NULL);
	if (s)
		snprintf(buf, size, "%s", s);
	py.Py_DecRef(v);
	py.PyErr_Clear();
	return buf;
}

static void bind(struct ev_check *c, const char *name)
{
	size_t n = strcspn(name, ".");

	if (strstr(name, "__sb_"))
		c->reserved = true;
	if (!n)
		return;
	if (c->nbound == c->cbound) {
		size_t cap = c->cbound ? 2 * c->cbound : 16;
		char **v = realloc(c->bound, cap * sizeof(*v));

		if (!v)
			return;
		c->bound = v;
		c->cbound = cap;
	}
	c->bound[c->nbound] = strndup(name, n);
	if (c->bound[c->nbound])
		c->nbound++;
}

static void use_builtin(struct ev_check *c, const char *name,
			struct ev_pos *pos)
{
	struct ev_use *u;

	if (c->nuses == c->cuses) {
		size_t cap = c->cuses ? 2 * c->cuses : 8;
		struct ev_use *v = realloc(c->uses, cap * sizeof(*v));

		if (!v)
			return;
		c->uses = v;
		c->cuses = cap;
	}
	u = &c->uses[c->nuses++];
	snprintf(u->name, sizeof(u->name), "%.63s", name);
	pos_get(pos);
	u->line = pos->line;
	u->col = pos->col;
	u->end_col = pos->end_col;
}

static void check_syntax(struct ev_check *c, const char *node,
			 struct ev_pos *pos)
{
	const char *group;
	char what[128], add[160];

	if (syntax_allowed(c->p, node))
		return;
	if (c->learn) { /* the node: the writer makes groups of them */
		snprintf(add, sizeof(add), "add: eval-syntax=%s", node);
		if (!list_exact(&c->p->rules->deny[SB_EVAL_SYNTAX], node))
			learn_rule(add);
		return;
	}
	snprintf(what, sizeof(what), "'%s' is not allowed", node);
	if (list_exact(&c->p->rules->deny[SB_EVAL_SYNTAX], node))
		snprintf(add, sizeof(add),
			 "remove it from the eval-syntax=DENY: line that "
			 "names it");
	else if ((group = sb_eval_syntax_group(node)))
		snprintf(add, sizeof(add),
			 "add: eval-syntax=%s        (or, narrower: "
			 "eval-syntax=%s)",
			 group, node);
	else
		snprintf(add, sizeof(add), "add: eval-syntax=%s", node);
	violation_at(c, pos, what, add);
}

/* str.format resolves the attributes its template names in C, where the
 * guard does not look: a template the checker can read has each of them
 * judged here; a computed one is refused. */
static void check_format(struct ev_check *c, PyObject *node, struct ev_pos *pos)
{
	PyObject *v = py.PyObject_GetAttrString(node, "value"), *k, *o;
	const char *t = NULL, *f, *end;
	char name[128], what[200], add[200];
	size_t n;

	k = v ? py.PyObject_GetAttrString(v, "value") : NULL;
	py.PyErr_Clear();
	if (k && py.PyObject_IsInstance(k, py.PyUnicode_Type) == 1)
		t = py.PyUnicode_AsUTF8AndSize(k, NULL);
	if (!t) {
		py.PyErr_Clear();
		violation_at(c, pos,
			  "'format' on a computed template is not allowed",
			  "no rule allows it: the guard judges the fields of "
			  "a literal template only; use an f-string");
		goto out;
	}
	for (f = t; (f = strchr(f, '{'));) {
		if (f[1] == '{') {
			f += 2;
			continue;
		}
		end = f + 1 + strcspn(f + 1, "}!:{");
		/* attributes follow dots; [..] are item lookups */
		for (f++; f < end; f++) {
			if (*f != '.')
				continue;
			n = strcspn(f + 1, ".[]}!:{");
			if (n >= sizeof(name))
				n = sizeof(name) - 1;
			memcpy(name, f + 1, n);
			name[n] = '\0';
			o = py.PyUnicode_FromString(name);
			if (o && !attr_allowed(c->p, o, name)) {
				snprintf(what, sizeof(what),
					 "attribute '%s' in a format template "
					 "is not allowed",
					 name);
				snprintf(add, sizeof(add),
					 is_dunder(name) || frame_attr(name)
						 ? "no rule allows it in a "
						   "template%.0s"
						 : "add: eval-attribute=%s",
					 name);
				violation_at(c, pos,
					  what, add);
			}
			if (o)
				py.Py_DecRef(o);
			py.PyErr_Clear();
		}
		f = end;
	}
out:
	if (k)
		py.Py_DecRef(k);
	if (v)
		py.Py_DecRef(v);
}

static void check_attribute(struct ev_check *c, PyObject *node,
			    struct ev_pos *pos)
{
	PyObject *o = py.PyObject_GetAttrString(node, "attr");
	const char *name = o ? py.PyUnicode_AsUTF8AndSize(o, NULL) : NULL;
	char what[160], add[200];

	if (!name) {
		py.PyErr_Clear();
		if (o)
			py.Py_DecRef(o);
		violation_at(c, pos,
			  "an attribute the guard cannot read", "no rule");
		return;
	}
	if (attr_allowed(c->p, o, name) &&
	    (!strcmp(name, "format") || !strcmp(name, "format_map")))
		check_format(c, node, pos);
	if (!attr_allowed(c->p, o, name)) {
		snprintf(what, sizeof(what), "attribute '%.100s' is not allowed",
			 name);
		attr_hint(name, add, sizeof(add));
		violation_at(c, pos, what, add);
	}
	py.Py_DecRef(o);
}

/* case C(attr=pattern): the class pattern reads each keyword's attribute
 * from the subject, an attribute access like any other. */
static void check_match_attrs(struct ev_check *c, PyObject *node,
			      struct ev_pos *pos)
{
	PyObject *l = py.PyObject_GetAttrString(node, "kwd_attrs");
	Py_ssize_t i, n = l ? py.PyList_Size(l) : -1;
	char what[300], add[200];

	if (n < 0) {
		py.PyErr_Clear();
		violation_at(c, pos, "a class pattern the guard cannot read",
			     "no rule");
	}
	for (i = 0; i < n; i++) {
		PyObject *o = py.PyList_GetItem(l, i);
		const char *name = o ? py.PyUnicode_AsUTF8AndSize(o, NULL)
				     : NULL;

		if (!name) {
			py.PyErr_Clear();
			violation_at(c, pos, "an attribute the guard cannot "
				     "read", "no rule");
			continue;
		}
		if (attr_allowed(c->p, o, name))
			continue;
		snprintf(what, sizeof(what), "attribute '%.100s' in a class "
			 "pattern is not allowed", name);
		attr_hint(name, add, sizeof(add));
		violation_at(c, pos, what, add);
	}
	if (l)
		py.Py_DecRef(l);
}

static void check_import(struct ev_check *c, const char *mod,
			 struct ev_pos *pos)
{
	char what[160], add[160];

	if (import_allowed(c->p, mod))
		return;
	snprintf(what, sizeof(what), "import of '%.100s' is not allowed", mod);
	snprintf(add, sizeof(add), "add: eval-import=%.100s", mod);
	violation_at(c, pos, what, add);
}

/* A dunder name, read or bound, needs eval-magic: bound in a class body
 * (def __del__, __getattr__ = f) it is a hook the interpreter calls by
 * itself, after the evaluation too. */
static void check_dunder_name(struct ev_check *c, const char *name,
			      struct ev_pos *pos)
{
	char what[300], add[300];

	if (!is_dunder(name) ||
	    (list_has(&c->p->rules->allow[SB_EVAL_MAGIC], name) &&
	     !list_has(&c->p->rules->deny[SB_EVAL_MAGIC], name)))
		return;
	snprintf(what, sizeof(what), "name '%.100s' is not allowed", name);
	snprintf(add, sizeof(add),
		 "add: eval-magic=%.100s        \xe2\x9a\xa0 a dunder "
		 "reaches the interpreter's internals",
		 name);
	violation_at(c, pos, what, add);
}

/* The names an import statement binds, and what it imports. */
static int walk_aliases(struct ev_check *c, PyObject *node, const char *from,
			struct ev_pos *pos)
{
	PyObject *names = py.PyObject_GetAttrString(node, "names");
	Py_ssize_t i, n;
	char name[256], as[256], full[520], what[400], add[200];

	if (!names)
		return -1;
	n = py.PyList_Size(names);
	for (i = 0; i < n; i++) {
		PyObject *a = py.PyList_GetItem(names, i);

		str_field(a, "name", name, sizeof(name));
		str_field(a, "asname", as, sizeof(as));
		bind(c, as[0] ? as : name);
		check_dunder_name(c, as[0] ? as : name, pos);
		if (!from) {
			check_import(c, name, pos);
		} else if (strcmp(name, "*") == 0) {
			violation_at(c, pos,
				  "'from ... import *' is not allowed",
				  "no rule allows it: name what you import");
		} else {
			/* from json import decoder may be a submodule */
			snprintf(full, sizeof(full), "%s.%s", from, name);
			if (!import_allowed(c->p, from) &&
			    !import_allowed(c->p, full))
				check_import(c, from, pos);
			/* reads an attribute of the module: its dunders
			 * (__builtins__...) are no freer than m.__x__ */
			if (attr_fixed(c->p, name) == 0) {
				snprintf(what, sizeof(what),
					 "name '%.100s' imported from "
					 "'%.100s' is not allowed", name, from);
				attr_hint(name, add, sizeof(add));
				violation_at(c, pos, what, add);
			}
		}
	}
	py.Py_DecRef(names);
	return 0;
}

/* ---- the rewrite: budget helpers inserted into the checked AST ---- */

static int copy_location(PyObject *to, PyObject *from)
{
	static const char *const attrs[] = { "lineno", "col_offset",
					     "end_lineno", "end_col_offset" };
	PyObject *v;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(attrs); i++) {
		v = py.PyObject_GetAttrString(from, attrs[i]);
		if (!v) {
			py.PyErr_Clear();
			v = py.PyLong_FromLong(i < 2 ? (long)(i == 0) : 0);
			if (!v)
				return -1;
		}
		if (py.PyObject_SetAttrString(to, attrs[i], v) < 0) {
			py.Py_DecRef(v);
			return -1;
		}
		py.Py_DecRef(v);
	}
	return 0;
}

/* cls(*items) located at 'at'; steals the items' references. */
static PyObject *node_new(PyObject *cls, PyObject *at, PyObject *a,
			  PyObject *b, PyObject *c)
{
	PyObject *args = py.PyTuple_New(c ? 3 : b ? 2 : a ? 1 : 0), *n;

	if (!args || (a && !(py.PyTuple_SetItem(args, 0, a) == 0 &&
			     (!b || py.PyTuple_SetItem(args, 1, b) == 0) &&
			     (!c || py.PyTuple_SetItem(args, 2, c) == 0)))) {
		if (args)
			py.Py_DecRef(args);
		return NULL;
	}
	n = py.PyObject_CallObject(cls, args);
	py.Py_DecRef(args);
	if (n && at && copy_location(n, at) < 0) {
		py.Py_DecRef(n);
		return NULL;
	}
	return n;
}

/* __sb_tick__() or __sb_enter__(), as an expression located at 'at'. */
static PyObject *helper_call(PyObject *helper, PyObject *at)
{
	PyObject *load = node_new(ast_load, NULL, NULL, NULL, NULL);
	PyObject *name, *empty1, *empty2;

	if (!load)
		return NULL;
	py.Py_IncRef(helper);
	name = node_new(ast_name, at, helper, load, NULL);
	empty1 = py.PyList_New(0);
	empty2 = py.PyList_New(0);
	if (!name || !empty1 || !empty2) {
		if (name)
			py.Py_DecRef(name);
		if (empty1)
			py.Py_DecRef(empty1);
		if (empty2)
			py.Py_DecRef(empty2);
		return NULL;
	}
	return node_new(ast_call, at, name, empty1, empty2);
}

/* node.<field> = [Expr(helper())] + node.<field> */
static int prepend_call(PyObject *node, const char *field, PyObject *helper)
{
	PyObject *old = py.PyObject_GetAttrString(node, field);
	PyObject *list = py.PyList_New(0), *call, *stmt;
	Py_ssize_t i, n;
	int r = -1;

	if (!old || !list)
		goto out;
	call = helper_call(helper, node);
	stmt = call ? node_new(ast_expr, node, call, NULL, NULL) : NULL;
	if (!stmt || py.PyList_Append(list, stmt) < 0) {
		if (stmt)
			py.Py_DecRef(stmt);
		goto out;
	}
	py.Py_DecRef(stmt);
	n = py.PyList_Size(old);
	for (i = 0; i < n; i++)
		if (py.PyList_Append(list, py.PyList_GetItem(old, i)) < 0)
			goto out;
	r = py.PyObject_SetAttrString(node, field, list);
out:
	if (old)
		py.Py_DecRef(old);
	if (list)
		py.Py_DecRef(list);
	return r;
}

/* Insert the budget helpers where the evaluated code can repeat itself:
 * loop bodies, comprehension conditions, function and lambda bodies. */
static int rewrite(PyObject *node, const char *name)
{
	PyObject *ifs, *call, *body, *and, *values;
	int r;

	if (!strcmp(name, "For") || !strcmp(name, "While") ||
	    !strcmp(name, "AsyncFor"))
		return prepend_call(node, "body", str_tick);
	if (!strcmp(name, "FunctionDef") || !strcmp(name, "AsyncFunctionDef"))
		return prepend_call(node, "body", str_enter);
	if (!strcmp(name, "comprehension")) {
		/* a comprehension has no position: take its iterable's */
		PyObject *it = py.PyObject_GetAttrString(node, "iter");

		ifs = it ? py.PyObject_GetAttrString(node, "ifs") : NULL;
		call = ifs ? helper_call(str_tick, it) : NULL;
		if (it)
			py.Py_DecRef(it);
		r = call ? py.PyList_Append(ifs, call) : -1;
		if (call)
			py.Py_DecRef(call);
		if (ifs)
			py.Py_DecRef(ifs);
		return r;
	}
	if (strcmp(name, "Lambda"))
		return 0;
	/* lambda: body  ->  lambda: __sb_enter__() and body */
	body = py.PyObject_GetAttrString(node, "body");
	call = body ? helper_call(str_enter, body) : NULL;
	values = call ? py.PyList_New(0) : NULL;
	and = values ? node_new(ast_and, NULL, NULL, NULL, NULL) : NULL;
	r = -1;
	if (and && py.PyList_Append(values, call) == 0 &&
	    py.PyList_Append(values, body) == 0) {
		PyObject *op;

		py.Py_IncRef(values);
		op = node_new(ast_boolop, body, and, values, NULL);
		and = NULL;
		if (op) {
			r = py.PyObject_SetAttrString(node, "body", op);
			py.Py_DecRef(op);
		}
	}
	if (and)
		py.Py_DecRef(and);
	if (values)
		py.Py_DecRef(values);
	if (call)
		py.Py_DecRef(call);
	if (body)
		py.Py_DecRef(body);
	return r;
}

static int add_helpers(PyObject *g)
{
	if (ev.PyDict_SetItem(g, str_tick, tick_fn) < 0 ||
	    ev.PyDict_SetItem(g, str_enter, enter_fn) < 0)
		return -1;
	return 0;
}

static int walk(struct ev_check *c, PyObject *node, long depth);

static int walk_value(struct ev_check *c, PyObject *v, long depth)
{
	Py_ssize_t i, n;
	int r;

	if (py.PyObject_IsInstance(v, py.PyList_Type) == 1) {
		n = py.PyList_Size(v);
		for (i = 0; i < n; i++) {
			r = walk_value(c, py.PyList_GetItem(v, i), depth);
			if (r < 0)
				return r;
		}
		return 0;
	}
	r = py.PyObject_IsInstance(v, ast_class);
	if (r < 0)
		return -1;
	return r ? walk(c, v, depth) : 0;
}

/* What the walk needs of an AST class, read once per class: the classes
 * live as long as the interpreter (a reference is kept). */
struct ev_type {
	PyObject *type, *fields;
	char name[40];
	bool part;
};

static struct ev_type types[160];
static size_t ntypes;

static struct ev_type *type_of(PyObject *node)
{
	PyObject *type = ev.PyObject_Type(node), *tn, *real;
	struct ev_type *t;
	const char *s;
	size_t i;

	if (!type)
		return NULL;
	for (i = 0; i < ntypes; i++)
		if (types[i].type == type) {
			py.Py_DecRef(type);
			return &types[i];
		}
	if (ntypes == SB_ARRAY_LEN(types)) {
		py.Py_DecRef(type);
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "the eval guard met too many AST classes");
		return NULL;
	}
	t = &types[ntypes];
	tn = ev.PyObject_GetAttr(type, str_name);
	s = tn ? py.PyUnicode_AsUTF8AndSize(tn, NULL) : NULL;
	t->fields = s ? ev.PyObject_GetAttr(type, str_fields) : NULL;
	if (!t->fields ||
	    py.PyObject_IsInstance(t->fields, py.PyTuple_Type) != 1) {
		if (tn)
			py.Py_DecRef(tn);
		py.Py_DecRef(type);
		if (!py.PyErr_Occurred())
			py.PyErr_SetString(PY_EXC(PyExc_TypeError),
					   "an AST class without _fields");
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%s", s);
	py.Py_DecRef(tn);
	/* only the interpreter's own classes: a subclass named Constant
	 * that derives from Attribute would compile as an Attribute */
	real = py.PyObject_GetAttrString(ast_module, t->name);
	py.PyErr_Clear();
	if (real)
		py.Py_DecRef(real);
	if (real != type) {
		py.Py_DecRef(t->fields);
		py.Py_DecRef(type);
		raise_perm(t->name, "eval-syntax",
			   "An AST node of a class other than the "
			   "interpreter's own is refused by the eval guard.");
		return NULL;
	}
	t->type = type; /* kept */
	t->part = part_node(t->name);
	ntypes++;
	return t;
}

static int walk(struct ev_check *c, PyObject *node, long depth)
{
	struct ev_type *t = type_of(node);
	PyObject *fields;
	const char *name;
	char buf[256];
	struct ev_pos pos = { .node = node };
	Py_ssize_t i, n;
	int r = -1;

	if (!t)
		return -1;
	if (t->part)
		return 0;
	name = t->name;
	fields = t->fields;
	c->nodes++;
	if (depth > c->max_depth)
		c->max_depth = depth;
	if (strcmp(name, "Call") && strcmp(name, "keyword") &&
	    strcmp(name, "Attribute"))
		check_syntax(c, name, &pos);
	if (strcmp(name, "Attribute") == 0) {
		check_attribute(c, node, &pos);
	} else if (strcmp(name, "MatchClass") == 0) {
		check_match_attrs(c, node, &pos);
	} else if (strcmp(name, "Name") == 0) {
		PyObject *ctx = py.PyObject_GetAttrString(node, "ctx");
		PyObject *ct = ctx ? ev.PyObject_Type(ctx) : NULL;
		PyObject *ctn = ct ? ev.PyObject_GetAttr(ct, str_name) : NULL;
		const char *cn = ctn ? py.PyUnicode_AsUTF8AndSize(ctn, NULL)
				     : NULL;

		str_field(node, "id", buf, 64);
		if (strstr(buf, "__sb_"))
			c->reserved = true;
		if (cn && strcmp(cn, "Load"))
			bind(c, buf);
		else if (!is_dunder(buf) &&
			 py.PyDict_GetItemString(builtins_dict, buf))
			use_builtin(c, buf, &pos);
		check_dunder_name(c, buf, &pos);
		if (ctn)
			py.Py_DecRef(ctn);
		if (ct)
			py.Py_DecRef(ct);
		if (ctx)
			py.Py_DecRef(ctx);
		py.PyErr_Clear();
	} else if (strcmp(name, "Import") == 0) {
		if (walk_aliases(c, node, NULL, &pos) < 0)
			goto out;
	} else if (strcmp(name, "ImportFrom") == 0) {
		if (int_attr(node, str_level) > 0)
			violation_at(c, &pos,
				  "a relative import is not allowed",
				  "no rule allows it: evaluated code has no "
				  "package");
		else if (walk_aliases(c, node,
				      str_field(node, "module", buf,
						sizeof(buf)),
				      &pos) < 0)
			goto out;
	} else if (strcmp(name, "arg") == 0) {
		bind(c, str_field(node, "arg", buf, sizeof(buf)));
		check_dunder_name(c, buf, &pos);
	} else if (strcmp(name, "FunctionDef") == 0 ||
		   strcmp(name, "AsyncFunctionDef") == 0 ||
		   strcmp(name, "ClassDef") == 0 ||
		   strcmp(name, "ExceptHandler") == 0 ||
		   strcmp(name, "MatchAs") == 0 ||
		   strcmp(name, "MatchStar") == 0) {
		bind(c, str_field(node, "name", buf, sizeof(buf)));
		check_dunder_name(c, buf, &pos);
	}
	n = py.PyTuple_Size(fields);
	for (i = 0; i < n; i++) {
		PyObject *v = ev.PyObject_GetAttr(node,
						  py.PyTuple_GetItem(fields, i));

		if (!v) {
			py.PyErr_Clear(); /* an optional field left unset */
			continue;
		}
		r = walk_value(c, v, depth + 1);
		py.Py_DecRef(v);
		if (r < 0)
			goto out;
	}
	r = c->rewrite ? rewrite(node, name) : 0;
out:
	return r;
}

static bool is_bound(const struct ev_check *c, const char *name)
{
	return sb_str_in(name, (const char *const *)c->bound, c->nbound);
}

/* Builtin names used but neither granted nor bound by the source. */
static void check_uses(struct ev_check *c)
{
	char what[160], add[300];
	size_t i;

	for (i = 0; i < c->nuses; i++) {
		const struct ev_use *u = &c->uses[i];

		if (call_allowed(c->p, u->name) || is_bound(c, u->name))
			continue;
		if (c->names &&
		    py.PyDict_GetItemString(c->names, u->name)) {
			c->excused = true;
			continue;
		}
		snprintf(what, sizeof(what), "'%s' is not allowed", u->name);
		if (sb_eval_sensitive_builtin(u->name))
			snprintf(add, sizeof(add),
				 "add: eval-call=%s        \xe2\x9a\xa0 it can "
				 "reach what the other rules refuse",
				 u->name);
		else
			snprintf(add, sizeof(add), "add: eval-call=%s",
				 u->name);
		violation(c, u->line, u->col, u->end_col, what, add);
	}
}

static void check_free(struct ev_check *c)
{
	size_t i;

	for (i = 0; i < c->nbound; i++)
		free(c->bound[i]);
	free(c->bound);
	free(c->uses);
	sb_buf_free(&c->blocks);
	if (c->violations)
		py.Py_DecRef(c->violations);
}

/* Judge 'tree'. 0 when it may run, -1 with EvalSyntaxRejected (or another
 * error) set. */
static int check_tree(struct ev_check *c, PyObject *tree)
{
	const struct sb_eval_profile *r = c->p->rules;
	char what[160], add[160];
	PyObject *args, *text = NULL;
	struct sb_buf msg = { 0 };
	const char *line = NULL;
	size_t len = 0;

	c->violations = py.PyList_New(0);
	if (!c->violations)
		return -1;
	if (walk(c, tree, 1) < 0)
		return -1;
	if ((c->src && strstr(c->src, "__sb_")) || c->reserved)
		violation(c, 1, 0, -1,
			  "names starting with __sb_ belong to the eval guard",
			  "no rule allows it");
	check_uses(c);
	if (c->max_depth > r->scalar[SB_EVAL_MAX_DEPTH]) {
		snprintf(what, sizeof(what),
			 "nesting depth %ld exceeds eval-max-depth=%lld",
			 c->max_depth,
			 (long long)r->scalar[SB_EVAL_MAX_DEPTH]);
		snprintf(add, sizeof(add), "add: eval-max-depth=%ld",
			 c->max_depth);
		violation(c, 1, 0, -1, what, add);
	}
	if ((long long)c->nodes > r->scalar[SB_EVAL_MAX_NODES]) {
		snprintf(what, sizeof(what),
			 "%zu nodes exceed eval-max-nodes=%lld", c->nodes,
			 (long long)r->scalar[SB_EVAL_MAX_NODES]);
		snprintf(add, sizeof(add), "add: eval-max-nodes=%zu",
			 c->nodes);
		violation(c, 1, 0, -1, what, add);
	}
	if (!c->nviol)
		return 0;
	sb_buf_printf(&msg, "%ld rule%s violated in <eval:%s>\n\n%s", c->nviol,
		      c->nviol == 1 ? "" : "s", c->p->label, c->blocks.s);
	if (c->src)
		line = source_line(c->src, c->first_line, &len);
	if (line)
		text = ev.PyUnicode_DecodeUTF8(line, (Py_ssize_t)len, "replace");
	args = py.PyTuple_New(5);
	if (args) {
		py.PyTuple_SetItem(args, 0, py.PyUnicode_FromString(msg.s));
		py.Py_IncRef(c->violations);
		py.PyTuple_SetItem(args, 1, c->violations);
		py.PyTuple_SetItem(args, 2, py.PyLong_FromLong(c->first_line));
		py.PyTuple_SetItem(args, 3,
				   py.PyLong_FromLong(c->first_col + 1));
		if (!text) {
			py.PyErr_Clear();
			py.Py_IncRef(py._Py_NoneStruct);
			text = py._Py_NoneStruct;
		}
		py.PyTuple_SetItem(args, 4, text);
	}
	sb_buf_free(&msg);
	return raise_with(exc_syntax, args);
}

/* ---- compiling ---- */

/* Call the raw compile(): the guard's own work, not the program's. */
static PyObject *compile_raw(PyObject *src, PyObject *filename,
			     const char *mode, long flags)
{
	PyObject *args = py.PyTuple_New(5), *res;

	if (!args)
		return NULL;
	py.Py_IncRef(src);
	py.PyTuple_SetItem(args, 0, src);
	py.Py_IncRef(filename);
	py.PyTuple_SetItem(args, 1, filename);
	py.PyTuple_SetItem(args, 2, py.PyUnicode_FromString(mode));
	py.PyTuple_SetItem(args, 3, py.PyLong_FromLong(flags));
	py.PyTuple_SetItem(args, 4, py.PyLong_FromLong(1));
	sb_guard_busy++;
	res = py.PyObject_Call(raw_compile, args, NULL);
	sb_guard_busy--;
	py.Py_DecRef(args);
	return res;
}

/* Source as a str: bytes are UTF-8 (the guard reads no coding cookie). */
static PyObject *source_str(PyObject *src)
{
	char *b;
	Py_ssize_t n;

	if (py.PyObject_IsInstance(src, py.PyUnicode_Type) == 1) {
		py.Py_IncRef(src);
		return src;
	}
	if (py.PyObject_IsInstance(src, py.PyBytes_Type) == 1 ||
	    py.PyObject_IsInstance(src, py.PyByteArray_Type) == 1) {
		PyObject *bytes = py.PyBytes_FromObject(src), *s;

		if (!bytes || py.PyBytes_AsStringAndSize(bytes, &b, &n) < 0) {
			if (bytes)
				py.Py_DecRef(bytes);
			return NULL;
		}
		s = ev.PyUnicode_DecodeUTF8(b, n, NULL);
		py.Py_DecRef(bytes);
		return s;
	}
	py.PyErr_SetString(PY_EXC(PyExc_TypeError),
			   "the eval guard takes source as str or bytes");
	return NULL;
}

static bool mode_known(const char *mode)
{
	return strcmp(mode, "eval") == 0 || strcmp(mode, "exec") == 0 ||
	       strcmp(mode, "single") == 0;
}

/* ast.unparse(tree): the standard library's, loaded on first use. */
static PyObject *unparse(PyObject *tree)
{
	static PyObject *fn;
	PyObject *mod, *args, *res;

	/* neither busy: a program can plant its own ast.py or node classes,
	 * and what they run must meet the guards like any of its code */
	if (!fn) {
		mod = py.PyImport_ImportModule("ast");
		fn = mod ? py.PyObject_GetAttrString(mod, "unparse") : NULL;
		if (mod)
			py.Py_DecRef(mod);
		if (!fn)
			return NULL;
	}
	args = py.PyTuple_New(1);
	if (!args)
		return NULL;
	py.Py_IncRef(tree);
	py.PyTuple_SetItem(args, 0, tree);
	res = py.PyObject_Call(fn, args, NULL);
	py.Py_DecRef(args);
	return res;
}

/* Parse and judge 'input' (a source str or an AST). With only_ast, the
 * checked AST; else the compiled code, registered as ours. 'names' is the
 * namespace the code will see (NULL: only its builtins). */
static PyObject *check_compile(struct ev_profile *p, PyObject *input,
			       const char *mode, PyObject *names,
			       bool only_ast)
{
	struct ev_check c = { .p = p, .names = names, .rewrite = !only_ast };
	PyObject *key = NULL, *tree = NULL, *code = NULL, *src = NULL, *id;
	int isast = py.PyObject_IsInstance(input, ast_class);

	if (isast < 0)
		return NULL;
	/* An AST is judged as the source it stands for: the program keeps
	 * its tree untouched, and what runs is what was judged. */
	if (isast && !only_ast) {
		/* its classes and rules first, then the source it unparses
		 * to (a foreign node class could unparse to anything) */
		struct ev_check pre = { .p = p, .names = names };
		int r = check_tree(&pre, input);

		check_free(&pre);
		if (r < 0)
			return NULL;
		src = unparse(input);
		if (!src)
			return NULL;
		code = check_compile(p, src, mode, names, false);
		py.Py_DecRef(src);
		return code;
	}
	if (!mode_known(mode)) {
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "compile() mode must be 'exec', 'eval' or "
				   "'single'");
		return NULL;
	}
	if (isast) {
		py.Py_IncRef(input);
		tree = input;
	} else {
		src = source_str(input);
		if (!src)
			return NULL;
		c.src = py.PyUnicode_AsUTF8AndSize(src, NULL);
		if (!c.src)
			goto out;
		key = tuple_of_strings(p->label, mode, c.src);
		if (!key)
			goto out;
		if (!only_ast && (code = ev.PyDict_GetItem(cache, key))) {
			py.Py_IncRef(code);
			goto out;
		}
		tree = compile_raw(src, p->filename, mode, EV_CF_ONLY_AST);
		if (!tree)
			goto out;
	}
	if (check_tree(&c, tree) < 0)
		goto out;
	if (only_ast) {
		code = tree;
		tree = NULL;
		goto out;
	}
	code = compile_raw(tree, p->filename, mode, 0);
	if (!code)
		goto out;
	id = ev.PyLong_FromVoidPtr(code);
	if (!id || ev.PyDict_SetItem(compiled, id, code) < 0) {
		if (id)
			py.Py_DecRef(id);
		py.Py_DecRef(code);
		code = NULL;
		goto out;
	}
	py.Py_DecRef(id);
	/* a small cache: a program evaluating endless distinct sources
	 * starts again rather than growing */
	if (key && !c.excused) {
		if (py.PyDict_Size(cache) >= 512) {
			py.Py_DecRef(cache);
			cache = py.PyDict_New();
		}
		if (cache && ev.PyDict_SetItem(cache, key, code) < 0)
			py.PyErr_Clear();
	}
out:
	check_free(&c);
	if (tree)
		py.Py_DecRef(tree);
	if (key)
		py.Py_DecRef(key);
	if (src)
		py.Py_DecRef(src);
	return code;
}

static bool ours(PyObject *code)
{
	PyObject *id = ev.PyLong_FromVoidPtr(code);
	bool r = id && ev.PyDict_GetItem(compiled, id) == code;

	if (id)
		py.Py_DecRef(id);
	return r;
}

/* ---- namespaces ---- */

/* The checking versions of the builtins that would undo the rules. */
static struct ev_profile *self_profile(PyObject *self)
{
	return py.PyCapsule_GetPointer(self, "pysb.eval");
}

static int judge_attr(struct ev_profile *p, PyObject *name)
{
	const char *s;

	if (py.PyObject_IsInstance(name, py.PyUnicode_Type) != 1)
		return 0; /* the builtin raises its own TypeError */
	s = py.PyUnicode_AsUTF8AndSize(name, NULL);
	if (!s)
		return -1;
	if (attr_allowed(p, name, s))
		return 0;
	if (frame_attr(s))
		return raise_perm(s, "eval-attribute",
				  "Frame attributes are refused whatever "
				  "eval-attribute says.");
	if (resolver_attr(s))
		return raise_perm(s, "eval-attribute",
				  "It looks attributes up by a name the eval "
				  "guard does not see: refused whatever "
				  "eval-attribute says.");
	return raise_perm(s, is_dunder(s) ? "eval-magic" : "eval-attribute",
			  NULL);
}

static PyObject *call_builtin(const char *name, PyObject *args,
			      PyObject *kw)
{
	PyObject *fn = py.PyDict_GetItemString(builtins_dict, name);

	if (!fn) {
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError), name);
		return NULL;
	}
	return py.PyObject_Call(fn, args, kw);
}

static PyObject *g_attr_call(PyObject *self, PyObject *args, PyObject *kw,
			     const char *name)
{
	struct ev_profile *p = self_profile(self);

	if (!p)
		return NULL;
	if (py.PyTuple_Size(args) >= 2 &&
	    judge_attr(p, py.PyTuple_GetItem(args, 1)) < 0)
		return NULL;
	return call_builtin(name, args, kw);
}

/* getattr(template, "format") hands out the bound method the checker
 * refuses on a template it cannot read (check_format): the fields of the
 * template would resolve attributes no rule judged. */
static PyObject *g_getattr(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *o = py.PyTuple_Size(args) >= 2 ? py.PyTuple_GetItem(args, 1)
						 : NULL;
	const char *s = o && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1
				? py.PyUnicode_AsUTF8AndSize(o, NULL)
				: NULL;

	py.PyErr_Clear();
	if (s && (!strcmp(s, "format") || !strcmp(s, "format_map"))) {
		raise_perm(s, "eval-attribute",
			   "getattr() of a template's format method is "
			   "refused: the guard judges the fields of a literal "
			   "template only; use an f-string.");
		return NULL;
	}
	return g_attr_call(self, args, kw, "getattr");
}

static PyObject *g_hasattr(PyObject *self, PyObject *args, PyObject *kw)
{
	return g_attr_call(self, args, kw, "hasattr");
}

static PyObject *g_setattr(PyObject *self, PyObject *args, PyObject *kw)
{
	return g_attr_call(self, args, kw, "setattr");
}

static PyObject *g_delattr(PyObject *self, PyObject *args, PyObject *kw)
{
	return g_attr_call(self, args, kw, "delattr");
}

static PyObject *g_type(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	if (py.PyTuple_Size(args) != 1 || (kw && py.PyDict_Size(kw))) {
		raise_perm("type() with three arguments", "eval-call",
			   "Building a class at run time is refused by the "
			   "eval guard; a class statement needs "
			   "eval-syntax=class.");
		return NULL;
	}
	return call_builtin("type", args, kw);
}

/* globals() and locals() hand out a read-only view: the namespace holds
 * the budget helpers, and a code that could rebind __sb_tick__ (the name is
 * refused in the source, not in a string built at run time) would run
 * without eval-max-iterations or eval-timeout. */
static PyObject *g_namespace(PyObject *args, PyObject *kw, const char *name)
{
	PyObject *d = call_builtin(name, args, kw), *view;

	if (!d)
		return NULL;
	view = ev.PyDictProxy_New(d);
	py.Py_DecRef(d);
	return view;
}

static PyObject *g_globals(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	return g_namespace(args, kw, "globals");
}

static PyObject *g_locals(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	return g_namespace(args, kw, "locals");
}

/* 'self' is the profile's capsule, which has no name: each refused
 * builtin names itself. */
static PyObject *refuse(const char *name)
{
	raise_perm(name, "eval-call",
		   "The eval guard never hands this builtin to evaluated "
		   "code: it reaches objects the rules cannot see.");
	return NULL;
}

static PyObject *g_vars(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	(void)args;
	(void)kw;
	return refuse("vars");
}

static PyObject *g_breakpoint(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	(void)args;
	(void)kw;
	return refuse("breakpoint");
}

static PyObject *g_import(PyObject *self, PyObject *args, PyObject *kw)
{
	struct ev_profile *p = self_profile(self);
	PyObject *name = py.PyTuple_Size(args) ? py.PyTuple_GetItem(args, 0)
					       : NULL;
	const char *s = name ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	PyObject *level = py.PyTuple_Size(args) >= 5
				  ? py.PyTuple_GetItem(args, 4)
				  : sb_kwarg(kw, "level");

	if (!p || !s) {
		py.PyErr_Clear();
		raise_perm("__import__", "eval-import", NULL);
		return NULL;
	}
	if ((level && py.PyLong_AsLong(level) != 0) ||
	    !import_allowed(p, s)) {
		py.PyErr_Clear();
		raise_perm(s, "eval-import", NULL);
		return NULL;
	}
	return call_builtin("__import__", args, kw);
}

struct ev_guarded {
	const char *name;
	void *fn;
	struct py_method_def def;
};

static struct ev_guarded guarded_builtins[] = {
	{ "getattr", (void *)g_getattr, { 0 } },
	{ "hasattr", (void *)g_hasattr, { 0 } },
	{ "setattr", (void *)g_setattr, { 0 } },
	{ "delattr", (void *)g_delattr, { 0 } },
	{ "type", (void *)g_type, { 0 } },
	{ "globals", (void *)g_globals, { 0 } },
	{ "locals", (void *)g_locals, { 0 } },
	{ "vars", (void *)g_vars, { 0 } },
	{ "breakpoint", (void *)g_breakpoint, { 0 } },
	{ "__import__", (void *)g_import, { 0 } },
};

static PyObject *guarded_builtin(struct ev_profile *p, const char *name)
{
	PyObject *capsule, *fn;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(guarded_builtins); i++) {
		struct ev_guarded *g = &guarded_builtins[i];

		if (strcmp(g->name, name))
			continue;
		g->def.ml_name = g->name;
		g->def.ml_meth = g->fn;
		g->def.ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
		capsule = py.PyCapsule_New(p, "pysb.eval", NULL);
		if (!capsule)
			return NULL;
		fn = py.PyCFunction_NewEx(&g->def, capsule, NULL);
		py.Py_DecRef(capsule);
		return fn;
	}
	return NULL;
}

/* A fresh copy of the profile's builtins (what eval-call grants). */
static PyObject *profile_builtins(struct ev_profile *p)
{
	PyObject *k, *v, *fn;
	Py_ssize_t pos = 0;
	const char *name;
	bool import = list_exact(&p->rules->allow[SB_EVAL_SYNTAX], "Import") ||
		      list_exact(&p->rules->allow[SB_EVAL_SYNTAX],
				 "ImportFrom");
	/* a class statement calls __build_class__, and its body stores
	 * __module__ = __name__: both are there only when ClassDef is */
	bool classes = list_exact(&p->rules->allow[SB_EVAL_SYNTAX],
				  "ClassDef");

	if (!p->builtins) {
		p->builtins = py.PyDict_New();
		if (!p->builtins)
			return NULL;
		while (ev.PyDict_Next(builtins_dict, &pos, &k, &v)) {
			name = py.PyUnicode_AsUTF8AndSize(k, NULL);
			if (!name || strstr(name, "__sb_")) {
				py.PyErr_Clear();
				continue;
			}
			if (strcmp(name, "__import__") == 0 ? !import
			    : strcmp(name, "__build_class__") == 0 ? !classes
			    : !call_allowed(p, name))
				continue;
			fn = guarded_builtin(p, name);
			if (!fn && py.PyErr_Occurred())
				return NULL;
			if (ev.PyDict_SetItem(p->builtins, k, fn ? fn : v) < 0)
				return NULL;
			if (fn)
				py.Py_DecRef(fn);
		}
		if (classes) {
			PyObject *mod = py.PyUnicode_FromString("<eval>");

			if (!mod || py.PyDict_SetItemString(p->builtins,
							    "__name__",
							    mod) < 0) {
				if (mod)
					py.Py_DecRef(mod);
				return NULL;
			}
			py.Py_DecRef(mod);
		}
	}
	return ev.PyDict_Copy(p->builtins);
}

/* Globals built from eval-call only. */
static PyObject *closed_namespace(struct ev_profile *p)
{
	PyObject *g = py.PyDict_New(), *b;

	if (!g)
		return NULL;
	b = profile_builtins(p);
	if (!b || py.PyDict_SetItemString(g, "__builtins__", b) < 0) {
		if (b)
			py.Py_DecRef(b);
		py.Py_DecRef(g);
		return NULL;
	}
	py.Py_DecRef(b);
	return g;
}

/* Modules, and callables of the modules that run programs or reach the
 * interpreter, in a namespace: "strong" values (2.6.7). */
static bool strong_value(PyObject *v, char *what, size_t size)
{
	static const char *const strong[] = { "os", "posix", "subprocess",
					      "importlib", "ctypes", "socket",
					      "_socket", "nt" };
	PyObject *m;
	const char *s;
	size_t i;
	bool r = false;

	if (py.PyObject_IsInstance(v, ev.module_type) == 1) {
		m = py.PyObject_GetAttrString(v, "__name__");
		s = m ? py.PyUnicode_AsUTF8AndSize(m, NULL) : NULL;
		snprintf(what, size, "module '%s'", s ? s : "?");
		if (m)
			py.Py_DecRef(m);
		py.PyErr_Clear();
		return true;
	}
	m = py.PyObject_GetAttrString(v, "__module__");
	s = m && m != py._Py_NoneStruct
		    ? py.PyUnicode_AsUTF8AndSize(m, NULL)
		    : NULL;
	for (i = 0; s && i < SB_ARRAY_LEN(strong); i++)
		if (strcmp(s, strong[i]) == 0 ||
		    (sb_str_starts(s, strong[i]) && s[strlen(strong[i])] == '.')) {
			snprintf(what, size, "a callable of '%s'", s);
			r = true;
		}
	if (m)
		py.Py_DecRef(m);
	py.PyErr_Clear();
	return r;
}

/* guarded_eval's names: data for the code; modules and the callables that
 * run programs only when eval-call acknowledges their key. */
static int merge_names(struct ev_profile *p, PyObject *g, PyObject *names)
{
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	const char *key;
	char what[160], hint[400];

	if (!names || names == py._Py_NoneStruct)
		return 0;
	if (py.PyObject_IsInstance(names, ev.dict_type) != 1) {
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "guarded_eval(): names must be a dict");
		return -1;
	}
	while (ev.PyDict_Next(names, &pos, &k, &v)) {
		key = py.PyObject_IsInstance(k, py.PyUnicode_Type) == 1
			      ? py.PyUnicode_AsUTF8AndSize(k, NULL)
			      : NULL;
		if (!key) {
			py.PyErr_Clear();
			py.PyErr_SetString(PY_EXC(PyExc_TypeError),
					   "guarded_eval(): names keys must "
					   "be str");
			return -1;
		}
		if (sb_str_starts(key, "__")) {
			return raise_perm(key, "eval-magic",
					  "guarded_eval() names cannot bind "
					  "dunder names: the namespace's "
					  "__builtins__ comes from eval-call.");
		}
		if (strong_value(v, what, sizeof(what)) &&
		    !call_allowed(p, key)) {
			snprintf(hint, sizeof(hint),
				 "names['%s'] is %s: the evaluated code could "
				 "reach everything it exposes.\nAcknowledge "
				 "with `eval-call=%s` to allow it.",
				 key, what, key);
			return raise_perm(key, "eval-call", hint);
		}
		if (ev.PyDict_SetItem(g, k, v) < 0)
			return -1;
	}
	return 0;
}

/* Log once per call site what a caller-supplied context hands over. */
static void warn_context(struct ev_profile *p, PyObject *g, const char *which)
{
	static PyObject *seen;
	PyObject *frame = py.PyEval_GetFrame(), *code, *file, *site, *k, *v;
	const char *f = "?";
	char what[160], buf[PATH_MAX + 32];
	Py_ssize_t pos = 0;
	int line = 0;

	if (!seen && !(seen = py.PyDict_New()))
		return;
	code = frame ? py.PyFrame_GetCode(frame) : NULL;
	file = code ? py.PyObject_GetAttrString(code, "co_filename") : NULL;
	if (file)
		f = py.PyUnicode_AsUTF8AndSize(file, NULL);
	if (frame)
		line = ev.PyFrame_GetLineNumber(frame);
	snprintf(buf, sizeof(buf), "%s:%d", f ? f : "?", line);
	if (file)
		py.Py_DecRef(file);
	if (code)
		py.Py_DecRef(code);
	py.PyErr_Clear();
	if (py.PyDict_GetItemString(seen, buf))
		return;
	site = py.PyLong_FromLong(1);
	if (!site || py.PyDict_SetItemString(seen, buf, site) < 0)
		py.PyErr_Clear();
	if (site)
		py.Py_DecRef(site);
	while (ev.PyDict_Next(g, &pos, &k, &v)) {
		const char *key = py.PyUnicode_AsUTF8AndSize(k, NULL);

		if (!key) {
			py.PyErr_Clear();
			continue;
		}
		if (sb_str_starts(key, "__") || call_allowed(p, key) ||
		    !strong_value(v, what, sizeof(what)))
			continue;
		fprintf(stderr,
			"python-sb: %s() context provides %s at %s\n"
			"    the evaluated code can reach everything it "
			"exposes\n"
			"    acknowledge with: eval-call=%s        (or use "
			"eval-namespace=closed)\n",
			which, what, buf, key);
	}
}

/* ---- budgets ---- */

static void add_ms(struct timespec *t, long long ms)
{
	t->tv_sec += (time_t)(ms / 1000);
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static bool code_is_ours(PyObject *code)
{
	PyObject *file = py.PyObject_GetAttrString(code, "co_filename");
	const char *s = file ? py.PyUnicode_AsUTF8AndSize(file, NULL) : NULL;
	bool r = s && sb_str_starts(s, "<eval:");

	if (file)
		py.Py_DecRef(file);
	py.PyErr_Clear();
	return r;
}

static void timeout_reason(struct ev_run *run)
{
	long long ms = run->p->rules->scalar[SB_EVAL_TIMEOUT];
	char num[48];
	size_t n;

	snprintf(num, sizeof(num), "%lld.%03lld", ms / 1000, ms % 1000);
	n = strlen(num);
	while (num[n - 1] == '0' && num[n - 2] != '.')
		num[--n] = '\0';
	snprintf(run->reason, sizeof(run->reason), "eval-timeout=%ss", num);
}

static bool past_deadline(const struct ev_run *run)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > run->deadline.tv_sec ||
	       (now.tv_sec == run->deadline.tv_sec &&
		now.tv_nsec >= run->deadline.tv_nsec);
}

static PyObject *true_(void)
{
	PyObject *t = py.PyLong_FromLong(1);

	return t;
}

/* __sb_tick__(): inserted by the checker at the top of every loop body and
 * as a condition of every comprehension. Counts iterations, watches the
 * clock; once a budget ran out it raises at every later step. */
static PyObject *g_tick(PyObject *self, PyObject *args)
{
	struct ev_run *run = cur;
	const struct sb_eval_profile *r;

	(void)self;
	(void)args;
	if (!run)
		return true_(); /* code that outlived its evaluation */
	r = run->p->rules;
	if (!run->why &&
	    ++run->lines > r->scalar[SB_EVAL_MAX_ITERATIONS]) {
		run->why = "iterations";
		snprintf(run->reason, sizeof(run->reason),
			 "eval-max-iterations=%lld",
			 (long long)r->scalar[SB_EVAL_MAX_ITERATIONS]);
	}
	if (!run->why && (++run->events & 31) == 0 && past_deadline(run)) {
		run->why = "timeout";
		timeout_reason(run);
	}
	if (run->why) {
		raise_interrupted(run->reason);
		return NULL;
	}
	return true_();
}

/* __sb_enter__(): inserted at the top of every function the source defines.
 * The call depth is the number of the evaluated code's frames on the
 * stack, the top-level one aside. */
static PyObject *g_enter(PyObject *self, PyObject *args)
{
	struct ev_run *run = cur;
	const struct sb_eval_profile *r;
	PyObject *f, *back, *code;
	long long depth = -1;

	(void)self;
	(void)args;
	if (!run)
		return true_();
	r = run->p->rules;
	f = py.PyEval_GetFrame();
	if (f)
		py.Py_IncRef(f);
	while (f && !run->why) {
		code = py.PyFrame_GetCode(f);
		if (code && code_is_ours(code))
			depth++;
		if (code)
			py.Py_DecRef(code);
		if (depth > r->scalar[SB_EVAL_MAX_CALL_DEPTH]) {
			run->why = "depth";
			snprintf(run->reason, sizeof(run->reason),
				 "eval-max-call-depth=%lld",
				 (long long)r->scalar[SB_EVAL_MAX_CALL_DEPTH]);
		}
		back = py.PyFrame_GetBack(f);
		py.Py_DecRef(f);
		f = back;
	}
	if (f)
		py.Py_DecRef(f);
	if (!run->why && past_deadline(run)) {
		run->why = "timeout";
		timeout_reason(run);
	}
	if (run->why) {
		raise_interrupted(run->reason);
		return NULL;
	}
	return true_();
}

/* One allocation bigger than eval-max-alloc while an evaluation runs on
 * this thread fails before it happens (the interpreter raises
 * MemoryError; the evaluation then ends in RuleEvalPermissionError). */
static bool alloc_refused(size_t size)
{
	struct ev_run *run = cur;

	if (!run || size <= (size_t)run->p->rules->scalar[SB_EVAL_MAX_ALLOC])
		return false;
	if (!run->refused)
		run->refused = size;
	return true;
}

static void *a_malloc(void *ctx, size_t size)
{
	struct ev_allocator *o = ctx;

	return alloc_refused(size) ? NULL : o->malloc(o->ctx, size);
}

static void *a_calloc(void *ctx, size_t nelem, size_t elsize)
{
	struct ev_allocator *o = ctx;

	if (elsize && nelem > SIZE_MAX / elsize)
		return NULL;
	return alloc_refused(nelem * elsize) ? NULL
					     : o->calloc(o->ctx, nelem, elsize);
}

static void *a_realloc(void *ctx, void *ptr, size_t size)
{
	struct ev_allocator *o = ctx;

	return alloc_refused(size) ? NULL : o->realloc(o->ctx, ptr, size);
}

static void a_free(void *ctx, void *ptr)
{
	struct ev_allocator *o = ctx;

	o->free(o->ctx, ptr);
}

static void install_allocator(int domain, struct ev_allocator *orig)
{
	struct ev_allocator mine = { orig, a_malloc, a_calloc, a_realloc,
				     a_free };

	ev.PyMem_GetAllocator(domain, orig);
	ev.PyMem_SetAllocator(domain, &mine);
}

/* Run 'code' in (g, l) under p's budgets. */
static PyObject *run_code(struct ev_profile *p, PyObject *code, PyObject *g,
			  PyObject *l)
{
	struct ev_run run = { .p = p, .outer = cur };
	PyObject *res;
	char target[64], hint[200];

	clock_gettime(CLOCK_MONOTONIC, &run.deadline);
	add_ms(&run.deadline, p->rules->scalar[SB_EVAL_TIMEOUT]);
	cur = &run;
	if (add_helpers(g) < 0)
		res = NULL;
	else
		res = ev.PyEval_EvalCode(code, g, l ? l : g);
	cur = run.outer;
	if (run.why) {
		if (res)
			py.Py_DecRef(res);
		py.PyErr_Clear();
		raise_interrupted(run.reason);
		return NULL;
	}
	if (run.refused) {
		if (res)
			py.Py_DecRef(res);
		py.PyErr_Clear();
		snprintf(target, sizeof(target), "an allocation of %zu bytes",
			 run.refused);
		snprintf(hint, sizeof(hint),
			 "It exceeds eval-max-alloc=%lld bytes; raise "
			 "`eval-max-alloc` to allow it.",
			 (long long)p->rules->scalar[SB_EVAL_MAX_ALLOC]);
		raise_perm(target, "eval-max-alloc", hint);
		return NULL;
	}
	return res;
}

/* ---- entry points ---- */

bool sb_eval_enabled(void)
{
	return default_profile >= 0 && raw_compile;
}

static struct ev_profile *find(const char *name)
{
	size_t i;

	for (i = 0; i < nprofiles; i++)
		if (strcmp(profiles[i].rules->name, name) == 0)
			return &profiles[i];
	return NULL;
}

/* Positional or keyword argument i called 'name' (borrowed), or NULL. */
static PyObject *arg(PyObject *args, PyObject *kw, Py_ssize_t i,
		     const char *name)
{
	if (py.PyTuple_Size(args) > i)
		return py.PyTuple_GetItem(args, i);
	return sb_kwarg(kw, name);
}

static PyObject *none(void)
{
	py.Py_IncRef(py._Py_NoneStruct);
	return py._Py_NoneStruct;
}

static PyObject *guarded_compile(struct ev_profile *p, PyObject *args,
				 PyObject *kw)
{
	PyObject *src = arg(args, kw, 0, "source");
	PyObject *mode = arg(args, kw, 2, "mode");
	PyObject *flags = arg(args, kw, 3, "flags");
	const char *m = mode ? py.PyUnicode_AsUTF8AndSize(mode, NULL) : NULL;
	long f = flags ? py.PyLong_AsLong(flags) : 0;

	if (!src || !m || !arg(args, kw, 1, "filename")) {
		py.PyErr_Clear();
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "compile() needs source, filename and mode");
		return NULL;
	}
	if (f == -1 && py.PyErr_Occurred())
		return NULL;
	return check_compile(p, src, m, NULL, (f & EV_CF_ONLY_AST) != 0);
}

bool sb_eval_running(const char *which, PyObject *args, PyObject *kw)
{
	PyObject *src;

	if (!cur)
		return false;
	if (strcmp(which, "compile") == 0)
		return true;
	src = arg(args, kw, 0, "source");
	py.PyErr_Clear();
	return !src || py.PyObject_IsInstance(src, ev.code_type) != 1;
}

PyObject *sb_eval_builtin(const char *which, PyObject *args, PyObject *kw)
{
	/* inside an evaluation, the evaluation's profile: a named profile is
	 * complete and independent of the default one */
	struct ev_profile *p = cur ? cur->p : &profiles[default_profile];
	bool is_eval = strcmp(which, "eval") == 0;
	PyObject *src, *g, *l, *code, *ns = NULL, *res = NULL, *b;
	enum sb_eval_namespace mode =
		(enum sb_eval_namespace)p->rules->scalar[SB_EVAL_NAMESPACE];

	if (strcmp(which, "compile") == 0)
		return guarded_compile(p, args, kw);
	src = arg(args, kw, 0, "source");
	g = arg(args, kw, 1, "globals");
	l = arg(args, kw, 2, "locals");
	if (g == py._Py_NoneStruct)
		g = NULL;
	if (l == py._Py_NoneStruct)
		l = NULL;
	if (!src) {
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "eval()/exec() needs a source");
		return NULL;
	}
	if (g && py.PyObject_IsInstance(g, ev.dict_type) != 1) {
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "globals must be a dict");
		return NULL;
	}
	if (py.PyObject_IsInstance(src, ev.code_type) == 1) {
		if (!ours(src)) {
			sb_guard_raise_api("builtins.exec on a code object the "
					   "guard did not produce",
					   "dynamic-code");
			return NULL;
		}
		py.Py_IncRef(src);
		code = src;
	} else {
		code = check_compile(p, src, is_eval ? "eval" : "exec",
				     mode == SB_EVAL_NS_CLOSED ? NULL : g,
				     false);
		if (!code)
			return NULL;
	}
	if (mode == SB_EVAL_NS_CLOSED || !g) {
		/* the caller's context is not the evaluated code's */
		ns = closed_namespace(p);
		g = ns;
		l = NULL;
	} else if (mode == SB_EVAL_NS_ADAPTIVE &&
		   !py.PyDict_GetItemString(g, "__builtins__")) {
		/* CPython would inject every builtin: ours instead */
		b = profile_builtins(p);
		if (!b || py.PyDict_SetItemString(g, "__builtins__", b) < 0) {
			if (b)
				py.Py_DecRef(b);
			goto out;
		}
		py.Py_DecRef(b);
		warn_context(p, g, which);
	} else if (mode == SB_EVAL_NS_ADAPTIVE) {
		warn_context(p, g, which);
	}
	if (g)
		res = run_code(p, code, g, l);
out:
	py.Py_DecRef(code);
	if (ns)
		py.Py_DecRef(ns);
	if (res && !is_eval) {
		py.Py_DecRef(res);
		return none();
	}
	return res;
}

/* pysandboxes.guarded_eval(source, *, profile="", names=None,
 * mode="eval") */
static PyObject *guarded_eval(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *src, *prof = sb_kwarg(kw, "profile");
	PyObject *names = sb_kwarg(kw, "names"), *mode = sb_kwarg(kw, "mode");
	PyObject *code, *g, *res;
	const char *pn = "", *m = "eval";
	struct ev_profile *p;
	struct sb_buf b = { 0 };
	Py_ssize_t nkw = kw ? py.PyDict_Size(kw) : 0;
	size_t i;

	(void)self;
	if (py.PyTuple_Size(args) != 1 ||
	    nkw > (prof != NULL) + (names != NULL) + (mode != NULL)) {
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "guarded_eval(source, *, profile='', "
				   "names=None, mode='eval')");
		return NULL;
	}
	src = py.PyTuple_GetItem(args, 0);
	if (prof && !(pn = py.PyUnicode_AsUTF8AndSize(prof, NULL)))
		return NULL;
	if (mode && !(m = py.PyUnicode_AsUTF8AndSize(mode, NULL)))
		return NULL;
	if (strcmp(m, "eval") && strcmp(m, "exec")) {
		py.PyErr_SetString(*ev.value_error,
				   "guarded_eval(): mode must be 'eval' or "
				   "'exec'");
		return NULL;
	}
	p = find(pn);
	if (!p) {
		sb_buf_printf(&b, "unknown eval profile '%s', configured: [", pn);
		for (i = 0; i < nprofiles; i++)
			sb_buf_printf(&b, "%s'%s'", i ? ", " : "",
				      profiles[i].rules->name);
		sb_buf_puts(&b, "]");
		py.PyErr_SetString(*ev.value_error, b.s);
		sb_buf_free(&b);
		return NULL;
	}
	g = closed_namespace(p);
	if (!g)
		return NULL;
	if (merge_names(p, g, names) < 0) {
		py.Py_DecRef(g);
		return NULL;
	}
	code = py.PyObject_IsInstance(src, ev.code_type) == 1 && ours(src)
		       ? (py.Py_IncRef(src), src)
		       : check_compile(p, src, m, g, false);
	if (!code) {
		py.Py_DecRef(g);
		return NULL;
	}
	res = run_code(p, code, g, NULL);
	py.Py_DecRef(code);
	py.Py_DecRef(g);
	if (res && strcmp(m, "exec") == 0) {
		py.Py_DecRef(res);
		return none();
	}
	return res;
}

/* METH_NOARGS: the cheapest call CPython makes to C */
static struct py_method_def tick_def = { "__sb_tick__", (void *)g_tick, 0x0004,
					 NULL };
static struct py_method_def enter_def = { "__sb_enter__", (void *)g_enter,
					  0x0004, NULL };

static struct py_method_def guarded_eval_def = {
	"guarded_eval", (void *)guarded_eval,
	PY_METH_VARARGS | PY_METH_KEYWORDS,
	"guarded_eval(source, *, profile='', names=None, mode='eval')\n"
	"Evaluate source under the eval-* rules of the profile."
};

/* ---- arming ---- */

static void *sym(const char *name, bool *ok)
{
	void *s = dlsym(RTLD_DEFAULT, name);

	if (!s)
		*ok = false;
	return s;
}

static PyObject *intern(const char *s, bool *ok)
{
	PyObject *o = py.PyUnicode_FromString(s);

	if (!o)
		*ok = false;
	return o;
}

/* Public names of the types an attribute group names. */
static int add_group(PyObject *set, const char *group)
{
	static const struct {
		const char *group, *module, *types[5];
	} groups[] = {
		{ "str-methods", "builtins", { "str" } },
		{ "list-methods", "builtins", { "list" } },
		{ "dict-methods", "builtins", { "dict" } },
		{ "set-methods", "builtins", { "set", "frozenset" } },
		{ "tuple-methods", "builtins", { "tuple" } },
		{ "num-methods", "builtins", { "int", "float" } },
		{ "bytes-methods", "builtins", { "bytes" } },
		{ "date-methods", "datetime",
		  { "date", "time", "datetime", "timedelta" } },
	};
	PyObject *mod, *type, *names, *n;
	const char *s;
	size_t i, k;
	Py_ssize_t j;

	for (i = 0; i < SB_ARRAY_LEN(groups); i++) {
		if (strcmp(groups[i].group, group))
			continue;
		mod = py.PyImport_ImportModule(groups[i].module);
		if (!mod)
			return -1;
		for (k = 0; groups[i].types[k]; k++) {
			type = py.PyObject_GetAttrString(mod,
							 groups[i].types[k]);
			names = type ? ev.PyObject_Dir(type) : NULL;
			if (type)
				py.Py_DecRef(type);
			if (!names) {
				py.Py_DecRef(mod);
				return -1;
			}
			for (j = 0; j < py.PyList_Size(names); j++) {
				n = py.PyList_GetItem(names, j);
				s = py.PyUnicode_AsUTF8AndSize(n, NULL);
				if (!s || s[0] == '_' ||
				    strcmp(s, "format") == 0 ||
				    strcmp(s, "format_map") == 0)
					continue;
				py.PySet_Add(set, n);
			}
			py.Py_DecRef(names);
		}
		py.Py_DecRef(mod);
	}
	return 0;
}

static int resolve_groups(PyObject **out, const struct sb_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (!strchr(l->v[i], '-'))
			continue;
		if (!*out && !(*out = ev.PySet_New(NULL)))
			return -1;
		if (add_group(*out, l->v[i]) < 0)
			return -1;
	}
	return 0;
}

static PyObject *exc_attr(PyObject *mod, const char *name)
{
	return mod ? py.PyObject_GetAttrString(mod, name) : NULL;
}

/* What the static checker needs: the C API it calls, the AST classes,
 * the strings it compares. Once. */
static int arm_checker(void)
{
	static int state; /* 0: not yet, 1: armed, -1: failed */
	PyObject *mod, *sys;
	bool ok = true;

	if (state)
		return state > 0 ? 0 : -1;
	state = -1;
#define EV_RESOLVE(ret, name, args) *(void **)&ev.name = sym(#name, &ok);
	EV_FUNCTIONS(EV_RESOLVE)
#undef EV_RESOLVE
	ev.dict_type = sym("PyDict_Type", &ok);
	ev.value_error = sym("PyExc_ValueError", &ok);
	ev.code_type = sym("PyCode_Type", &ok);
	ev.module_type = sym("PyModule_Type", &ok);
	if (!ok) {
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "this interpreter lacks a function the "
				   "eval guard needs");
		return -1;
	}
	str_fields = intern("_fields", &ok);
	str_name = intern("__name__", &ok);
	str_lineno = intern("lineno", &ok);
	str_col = intern("col_offset", &ok);
	str_end_col = intern("end_col_offset", &ok);
	str_end_lineno = intern("end_lineno", &ok);
	str_level = intern("level", &ok);
	if (!ok)
		return -1;
	mod = py.PyImport_ImportModule("_ast");
	if (!mod)
		return -1;
	ast_class = py.PyObject_GetAttrString(mod, "AST");
	ast_name = py.PyObject_GetAttrString(mod, "Name");
	ast_load = py.PyObject_GetAttrString(mod, "Load");
	ast_call = py.PyObject_GetAttrString(mod, "Call");
	ast_expr = py.PyObject_GetAttrString(mod, "Expr");
	ast_boolop = py.PyObject_GetAttrString(mod, "BoolOp");
	ast_and = py.PyObject_GetAttrString(mod, "And");
	ast_module = mod; /* kept */
	if (!ast_class || !ast_name || !ast_load || !ast_call || !ast_expr ||
	    !ast_boolop || !ast_and)
		return -1;
	str_tick = intern("__sb_tick__", &ok);
	str_enter = intern("__sb_enter__", &ok);
	tick_fn = ok ? py.PyCFunction_NewEx(&tick_def, NULL, NULL) : NULL;
	enter_fn = tick_fn ? py.PyCFunction_NewEx(&enter_def, NULL, NULL)
			   : NULL;
	if (!enter_fn)
		return -1;
	sys = py.PyImport_ImportModule("sys");
	if (!sys)
		return -1;
	ev.module_type = ev.PyObject_Type(sys);
	py.Py_DecRef(sys);
	cache = py.PyDict_New();
	compiled = py.PyDict_New();
	if (!cache || !compiled)
		return -1;
	state = 1;
	return 0;
}

/* builtins.compile before the guard wraps it, and the builtins' dict. */
static int take_builtins(void)
{
	PyObject *bmod = py.PyImport_ImportModule("builtins");

	if (!bmod)
		return -1;
	builtins_dict = py.PyModule_GetDict(bmod);
	raw_compile = py.PyObject_GetAttrString(bmod, "compile");
	return raw_compile ? 0 : -1;
}

int sb_eval_arm(void)
{
	const struct sb_policy *pol = sb_g.policy;
	PyObject *mods, *mod;
	bool ok = true;
	char buf[300];
	size_t i;

	/* learning records eval-* rules: it needs the raw compile even
	 * without a profile; the checker arms at the first evaluation */
	if (!pol->eval_profiles.n && !sb_g.learning)
		return 0;
	if (take_builtins() < 0)
		return -1;
	if (!pol->eval_profiles.n)
		return 0;
	if (arm_checker() < 0 || sb_guard_load_package() < 0)
		return -1;
	mods = py.PyImport_GetModuleDict();
	mod = py.PyDict_GetItemString(mods, "pysandboxes.e");
	exc_syntax = exc_attr(mod, "EvalSyntaxRejected");
	exc_perm = exc_attr(mod, "RuleEvalPermissionError");
	exc_interrupted = exc_attr(mod, "EvalInterrupted");
	if (!exc_syntax || !exc_perm || !exc_interrupted)
		return -1;
	nprofiles = pol->eval_profiles.n;
	profiles = sb_arena_alloc(sb_g.arena, nprofiles * sizeof(*profiles));
	for (i = 0; i < nprofiles; i++) {
		struct ev_profile *p = &profiles[i];

		p->rules = &pol->eval_profiles.v[i];
		p->label = p->rules->name[0] ? p->rules->name : "default";
		if (!p->rules->name[0])
			default_profile = (long)i;
		snprintf(buf, sizeof(buf), "<eval:%s>", p->label);
		p->filename = intern(buf, &ok);
		if (!ok ||
		    resolve_groups(&p->group_allow,
				   &p->rules->allow[SB_EVAL_ATTRIBUTE]) < 0 ||
		    resolve_groups(&p->group_deny,
				   &p->rules->deny[SB_EVAL_ATTRIBUTE]) < 0)
			return -1;
	}
	mod = py.PyDict_GetItemString(mods, "pysandboxes");
	if (mod) {
		PyObject *fn = py.PyCFunction_NewEx(&guarded_eval_def, NULL,
						    NULL);

		if (!fn || py.PyObject_SetAttrString(mod, "guarded_eval",
						     fn) < 0)
			return -1;
		py.Py_DecRef(fn);
	}
	install_allocator(EV_MEM_MEM, &mem_orig);
	install_allocator(EV_MEM_OBJ, &obj_orig);
	return 0;
}

/* ---- learning ---- */

static struct ev_profile *learn_profile(void)
{
	static struct sb_eval_profile defaults = { .name = "" };
	static struct ev_profile synthetic;
	bool ok = true;

	if (arm_checker() < 0)
		return NULL;
	if (default_profile >= 0)
		return &profiles[default_profile];
	if (!synthetic.rules) {
		sb_eval_profile_defaults(&defaults);
		synthetic.label = "default";
		synthetic.filename = intern("<eval:default>", &ok);
		if (!ok)
			return NULL;
		synthetic.rules = &defaults;
	}
	return &synthetic;
}

/* The modules and program-running callables a caller's context hands
 * over, acknowledged as warn_context() asks when enforced. */
static void learn_context(struct ev_profile *p, PyObject *g)
{
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	char what[160], rule[200];

	while (ev.PyDict_Next(g, &pos, &k, &v)) {
		const char *key = py.PyUnicode_AsUTF8AndSize(k, NULL);

		if (!key) {
			py.PyErr_Clear();
			continue;
		}
		if (sb_str_starts(key, "__") || call_allowed(p, key) ||
		    !strong_value(v, what, sizeof(what)))
			continue;
		snprintf(rule, sizeof(rule), "eval-call=%.150s", key);
		sb_learn_record("eval", rule, NULL);
	}
}

bool sb_eval_learn(const char *which, PyObject *args, PyObject *kw)
{
	struct ev_profile *p = learn_profile();
	struct ev_check c = { .p = p, .learn = true };
	PyObject *src = p ? arg(args, kw, 0, "source") : NULL;
	PyObject *g = NULL, *text = NULL, *tree = NULL, *m;
	const char *mode = strcmp(which, "eval") == 0 ? "eval" : "exec";
	bool handled = false;

	if (!src)
		goto out;
	if (py.PyObject_IsInstance(src, ev.code_type) == 1) {
		handled = ours(src);
		goto out;
	}
	if (strcmp(which, "compile") == 0) {
		m = arg(args, kw, 2, "mode");
		mode = m ? py.PyUnicode_AsUTF8AndSize(m, NULL) : NULL;
		if (!mode || !mode_known(mode))
			goto out; /* the original says why */
	} else {
		g = arg(args, kw, 1, "globals");
		if (g && py.PyObject_IsInstance(g, ev.dict_type) != 1)
			g = NULL;
	}
	/* the names the enforcing run will take from the caller's globals */
	if (p->rules->scalar[SB_EVAL_NAMESPACE] != SB_EVAL_NS_CLOSED)
		c.names = g;
	if (py.PyObject_IsInstance(src, ast_class) == 1) {
		py.Py_IncRef(src);
		tree = src;
	} else {
		text = source_str(src);
		c.src = text ? py.PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
		tree = c.src ? compile_raw(text, p->filename, mode,
					   EV_CF_ONLY_AST)
			     : NULL;
	}
	/* a source that does not parse fails the same way when enforced */
	handled = true;
	if (tree && check_tree(&c, tree) == 0)
		sb_learn_record("eval", "eval-on", NULL);
	if (c.names)
		learn_context(p, c.names);
out:
	check_free(&c);
	if (tree)
		py.Py_DecRef(tree);
	if (text)
		py.Py_DecRef(text);
	py.PyErr_Clear();
	return handled;
}

void sb_eval_learn_compiled(PyObject *code)
{
	PyObject *id;

	if (!compiled || py.PyObject_IsInstance(code, ev.code_type) != 1) {
		py.PyErr_Clear();
		return;
	}
	id = ev.PyLong_FromVoidPtr(code);
	if (!id || ev.PyDict_SetItem(compiled, id, code) < 0)
		py.PyErr_Clear();
	if (id)
		py.Py_DecRef(id);
}
