/* eval_check.c - the eval guard's static checker (py-sandboxes(5), eval-*): the
 * eval-* rules on names (call, attribute, magic, import, syntax), the walk
 * over a parsed AST that judges every node against them, the violations with
 * their source line, caret and the rule that would allow each, and the
 * rewrite that inserts the budget helpers (__sb_tick__, __sb_enter__) into
 * checked code. It reads the AST and the profile, never runs what it judges
 * and keeps no state between checks but the cache of AST classes; compiling,
 * namespaces and running belong to eval.c and eval_budget.c.
 */
#include "eval_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rules ---- */

bool ev_is_dunder(const char *s)
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

bool ev_list_exact(const struct sb_strlist *l, const char *name)
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

bool ev_frame_attr(const char *name)
{
	return sb_str_in(name, frame_attrs, SB_ARRAY_LEN(frame_attrs));
}

/* Callables that look an attribute up by a name given at run time, in C or
 * outside the evaluated code (operator, inspect, string.Formatter's
 * vformat and get_field, which read '{0.__class__}'): the attribute rules
 * never see that name, so they are never reached, whatever the rules say. */
static const char *const resolver_attrs[] = {
	"_vformat",   "attrgetter", "get_field",	 "getattr_static",
	"getmembers", "getmembers_static", "methodcaller", "vformat",
};

bool ev_resolver_attr(const char *name)
{
	return sb_str_in(name, resolver_attrs, SB_ARRAY_LEN(resolver_attrs));
}

bool ev_call_allowed(const struct ev_profile *p, const char *name)
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

	if (ev_frame_attr(name) || ev_resolver_attr(name) ||
	    strstr(name, "__sb_"))
		return 0;
	if (ev_is_dunder(name))
		return list_has(&r->allow[SB_EVAL_MAGIC], name) &&
		       !list_has(&r->deny[SB_EVAL_MAGIC], name);
	return -1;
}

/* The rule that would allow attribute 'name', or why none does. */
static void attr_hint(const char *name, char *add, size_t size)
{
	if (ev_frame_attr(name))
		snprintf(add, size, "no rule allows it: frame attributes are "
			 "refused whatever eval-attribute says");
	else if (ev_resolver_attr(name))
		snprintf(add, size, "no rule allows it: it looks attributes "
			 "up by a name the eval guard does not see");
	else if (ev_is_dunder(name))
		snprintf(add, size,
			 "add: eval-magic=%.100s        \xe2\x9a\xa0 a "
			 "dunder reaches the interpreter's internals", name);
	else
		snprintf(add, size, "add: eval-attribute=%.100s", name);
}

/* 'name' as a str object and as UTF-8. */
bool ev_attr_allowed(const struct ev_profile *p, PyObject *oname,
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

bool ev_import_allowed(const struct ev_profile *p, const char *mod)
{
	return module_match(&p->rules->allow[SB_EVAL_IMPORT], mod) &&
	       !module_match(&p->rules->deny[SB_EVAL_IMPORT], mod);
}

static bool syntax_allowed(const struct ev_profile *p, const char *node)
{
	if (sb_eval_core_node(node))
		return true;
	return ev_list_exact(&p->rules->allow[SB_EVAL_SYNTAX], node) &&
	       !ev_list_exact(&p->rules->deny[SB_EVAL_SYNTAX], node);
}

bool ev_syntax_allowed(const struct ev_profile *p, const char *node)
{
	return syntax_allowed(p, node);
}

/* A dunder name, read or bound, per eval-magic. */
static bool magic_allowed(const struct ev_profile *p, const char *name)
{
	return list_has(&p->rules->allow[SB_EVAL_MAGIC], name) &&
	       !list_has(&p->rules->deny[SB_EVAL_MAGIC], name);
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

/* ---- the static checker ---- */

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

/* The rule an "add: eval-KEY=token ..." hint names, into rule[size]; NULL
 * for a refusal no rule lifts. */
static const char *hint_rule(const char *add, char *rule, size_t size)
{
	size_t n;

	if (strncmp(add, "add: eval-", 10) != 0)
		return NULL;
	n = strcspn(add + 5, " ");
	if (n >= size)
		return NULL;
	memcpy(rule, add + 5, n);
	rule[n] = '\0';
	return rule;
}

static void violation(struct ev_check *c, long line, long col, long end_col,
		      const char *what, const char *add)
{
	struct sb_buf b = { 0 };
	char rule[300];
	const char *text;
	size_t len = 0, strip = 0, i, from, to;
	PyObject *s;

	if (c->learn) {
		/* recorded for the writer */
		if (hint_rule(add, rule, sizeof(rule)))
			sb_learn_record("eval", rule, NULL);
		return;
	}
	if (sb_g.log_fd >= 0) {
		/* no rule to add: the guard's own refusal */
		const char *r = hint_rule(add, rule, sizeof(rule));

		sb_guard_log("eval", what, r ? NULL : SB_RULE_BUILTIN, r);
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
	p->line = int_attr(p->node, sb_g.eval.str_lineno);
	p->col = int_attr(p->node, sb_g.eval.str_col);
	p->end_col = int_attr(p->node, sb_g.eval.str_end_lineno) == p->line
			     ? int_attr(p->node, sb_g.eval.str_end_col)
			     : -1;
	return p;
}

static void violation_at(struct ev_check *c, struct ev_pos *p,
			 const char *what, const char *add)
{
	pos_get(p);
	violation(c, p->line, p->col, p->end_col, what, add);
}

/* v, a new reference or NULL (cleared), as UTF-8 into buf (empty when
 * absent or not a str). */
static const char *str_of(PyObject *v, char *buf, size_t size)
{
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

/* A str attribute of a node as UTF-8 into buf (empty when absent/None). */
static const char *str_field(PyObject *node, const char *field, char *buf,
			     size_t size)
{
	return str_of(py.PyObject_GetAttrString(node, field), buf, size);
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
		snprintf(what, sizeof(what), "eval-syntax=%s", node);
		if (!ev_list_exact(&c->p->rules->deny[SB_EVAL_SYNTAX], node))
			sb_learn_record("eval", what, NULL);
		return;
	}
	snprintf(what, sizeof(what), "'%s' is not allowed", node);
	if (ev_list_exact(&c->p->rules->deny[SB_EVAL_SYNTAX], node))
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

/* One attribute a template names: judged as an attribute is. */
static void format_attr(struct ev_check *c, PyObject *o, struct ev_pos *pos)
{
	const char *name = py.PyUnicode_AsUTF8AndSize(o, NULL);
	char what[200], add[200];

	if (!name) {
		py.PyErr_Clear();
		violation_at(c, pos, "a format template the guard cannot read",
			     "no rule allows it");
		return;
	}
	if (ev_attr_allowed(c->p, o, name))
		return;
	snprintf(what, sizeof(what),
		 "attribute '%.100s' in a format template is not allowed",
		 name);
	snprintf(add, sizeof(add),
		 ev_is_dunder(name) || ev_frame_attr(name)
			 ? "no rule allows it in a template%.0s"
			 : "add: eval-attribute=%.100s",
		 name);
	violation_at(c, pos, what, add);
}

/* The fields of template 't' as str.format reads them: CPython's own
 * parser (_string.formatter_parser), so that an index in brackets, which
 * may hold '.', ':' or '!', a nested field in a format spec and an
 * escaped brace mean here what they mean there. Every attribute of a
 * field name is judged; a format spec is read again (str.format expands
 * fields in it, two levels deep). -1 when CPython cannot read it either
 * (str.format would raise: refused). */
static int format_fields(struct ev_check *c, PyObject *t, struct ev_pos *pos,
			 int depth)
{
	PyObject *it, *item, *split, *rest, *part;
	int r = 0;

	if (depth > 2)
		return 0; /* CPython: "Max string recursion exceeded" */
	it = sb_guard_call1(sb_g.eval.fmt_parser, t);
	if (!it)
		return -1;
	while (r == 0 && (item = py.PyIter_Next(it))) {
		PyObject *field = py.PyTuple_GetItem(item, 1);
		PyObject *spec = py.PyTuple_GetItem(item, 2);

		if (field && field != py._Py_NoneStruct) {
			split = sb_guard_call1(sb_g.eval.fmt_split, field);
			rest = split ? py.PyObject_GetIter(
					       py.PyTuple_GetItem(split, 1))
				     : NULL;
			if (!rest)
				r = -1;
			/* (is_attribute, name): an index is an item */
			while (rest && (part = py.PyIter_Next(rest))) {
				if (py.PyObject_IsTrue(
					    py.PyTuple_GetItem(part, 0)) == 1)
					format_attr(c, py.PyTuple_GetItem(part, 1),
						    pos);
				py.Py_DecRef(part);
			}
			py.Py_DecRef(rest);
			py.Py_DecRef(split);
		}
		if (r == 0 && spec && spec != py._Py_NoneStruct &&
		    py.PyObject_IsTrue(spec) == 1)
			r = format_fields(c, spec, pos, depth + 1);
		py.Py_DecRef(item);
	}
	py.Py_DecRef(it);
	if (py.PyErr_Occurred())
		r = -1;
	py.PyErr_Clear();
	return r;
}

/* str.format resolves the attributes its template names in C, where the
 * guard does not look: a template the checker can read has each of them
 * judged here; a computed one is refused, and so is one CPython would
 * not read. */
static void check_format(struct ev_check *c, PyObject *node, struct ev_pos *pos)
{
	PyObject *v = py.PyObject_GetAttrString(node, "value"), *k;

	k = v ? py.PyObject_GetAttrString(v, "value") : NULL;
	py.PyErr_Clear();
	if (!k || py.PyObject_IsInstance(k, py.PyUnicode_Type) != 1) {
		py.PyErr_Clear();
		violation_at(c, pos,
			  "'format' on a computed template is not allowed",
			  "no rule allows it: the guard judges the fields of "
			  "a literal template only; use an f-string");
	} else if (format_fields(c, k, pos, 0) < 0) {
		violation_at(c, pos,
			  "a format template str.format cannot read",
			  "no rule allows it");
	}
	py.Py_DecRef(k);
	py.Py_DecRef(v);
}

static void check_attribute(struct ev_check *c, PyObject *node,
			    struct ev_pos *pos)
{
	PyObject *o = ev.PyObject_GetAttr(node, sb_g.eval.str_attr);
	const char *name = o ? py.PyUnicode_AsUTF8AndSize(o, NULL) : NULL;
	char what[160], add[200];

	if (!name) {
		py.PyErr_Clear();
		py.Py_DecRef(o);
		violation_at(c, pos,
			  "an attribute the guard cannot read", "no rule");
		return;
	}
	if (ev_attr_allowed(c->p, o, name) &&
	    (!strcmp(name, "format") || !strcmp(name, "format_map")))
		check_format(c, node, pos);
	if (!ev_attr_allowed(c->p, o, name)) {
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
		if (ev_attr_allowed(c->p, o, name))
			continue;
		snprintf(what, sizeof(what), "attribute '%.100s' in a class "
			 "pattern is not allowed", name);
		attr_hint(name, add, sizeof(add));
		violation_at(c, pos, what, add);
	}
	py.Py_DecRef(l);
}

static void check_import(struct ev_check *c, const char *mod,
			 struct ev_pos *pos)
{
	char what[160], add[160];

	if (ev_import_allowed(c->p, mod))
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

	if (!ev_is_dunder(name) || magic_allowed(c->p, name))
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
			if (!ev_import_allowed(c->p, from) &&
			    !ev_import_allowed(c->p, full))
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

/* ---- what the walk does with each AST class ---- */

/* The classes the walk treats apart (eval_state.h); any other is
 * EV_K_OTHER, or EV_K_PART when part_nodes[] names it. */
static const struct {
	const char *name;
	enum ev_kind kind;
	enum ev_rewrite rw;
} kinds[] = {
	{ "Call", EV_K_CALL, EV_RW_NONE },
	{ "keyword", EV_K_CALL, EV_RW_NONE },
	{ "Attribute", EV_K_ATTRIBUTE, EV_RW_NONE },
	{ "MatchClass", EV_K_MATCH_CLASS, EV_RW_NONE },
	{ "Name", EV_K_NAME, EV_RW_NONE },
	{ "Import", EV_K_IMPORT, EV_RW_NONE },
	{ "ImportFrom", EV_K_IMPORT_FROM, EV_RW_NONE },
	{ "arg", EV_K_ARG, EV_RW_NONE },
	{ "FunctionDef", EV_K_NAMED, EV_RW_FUNCTION },
	{ "AsyncFunctionDef", EV_K_NAMED, EV_RW_FUNCTION },
	{ "ClassDef", EV_K_NAMED, EV_RW_NONE },
	{ "ExceptHandler", EV_K_NAMED, EV_RW_NONE },
	{ "MatchAs", EV_K_NAMED, EV_RW_NONE },
	{ "MatchStar", EV_K_NAMED, EV_RW_NONE },
	{ "For", EV_K_OTHER, EV_RW_LOOP },
	{ "AsyncFor", EV_K_OTHER, EV_RW_LOOP },
	{ "While", EV_K_OTHER, EV_RW_LOOP },
	{ "comprehension", EV_K_OTHER, EV_RW_COMPREHENSION },
	{ "Lambda", EV_K_OTHER, EV_RW_LAMBDA },
};

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
	PyObject *load = node_new(sb_g.eval.ast_load, NULL, NULL, NULL, NULL);
	PyObject *name, *empty1, *empty2;

	if (!load)
		return NULL;
	py.Py_IncRef(helper);
	name = node_new(sb_g.eval.ast_name, at, helper, load, NULL);
	empty1 = py.PyList_New(0);
	empty2 = py.PyList_New(0);
	if (!name || !empty1 || !empty2) {
		py.Py_DecRef(name);
		py.Py_DecRef(empty1);
		py.Py_DecRef(empty2);
		return NULL;
	}
	return node_new(sb_g.eval.ast_call, at, name, empty1, empty2);
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
	stmt = call ? node_new(sb_g.eval.ast_expr, node, call, NULL, NULL)
		    : NULL;
	if (!stmt || py.PyList_Append(list, stmt) < 0) {
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
	py.Py_DecRef(old);
	py.Py_DecRef(list);
	return r;
}

/* Insert the budget helpers where the evaluated code can repeat itself:
 * loop bodies, comprehension conditions, function and lambda bodies. */
static int rewrite(PyObject *node, enum ev_rewrite rw)
{
	PyObject *ifs, *call, *body, *and, *values;
	int r;

	if (rw == EV_RW_LOOP)
		return prepend_call(node, "body", sb_g.eval.str_tick);
	if (rw == EV_RW_FUNCTION)
		return prepend_call(node, "body", sb_g.eval.str_enter);
	if (rw == EV_RW_COMPREHENSION) {
		/* a comprehension has no position: take its iterable's.
		 * First of its conditions: they short-circuit, and a tick
		 * after one that is false never ran (weaknesses 148) */
		PyObject *it = py.PyObject_GetAttrString(node, "iter");

		ifs = it ? py.PyObject_GetAttrString(node, "ifs") : NULL;
		call = ifs ? helper_call(sb_g.eval.str_tick, it) : NULL;
		py.Py_DecRef(it);
		r = call ? py.PyList_Insert(ifs, 0, call) : -1;
		py.Py_DecRef(call);
		py.Py_DecRef(ifs);
		return r;
	}
	if (rw != EV_RW_LAMBDA)
		return 0;
	/* lambda: body  ->  lambda: __sb_enter__() and body */
	body = py.PyObject_GetAttrString(node, "body");
	call = body ? helper_call(sb_g.eval.str_enter, body) : NULL;
	values = call ? py.PyList_New(0) : NULL;
	and = values ? node_new(sb_g.eval.ast_and, NULL, NULL, NULL, NULL)
		     : NULL;
	r = -1;
	if (and && py.PyList_Append(values, call) == 0 &&
	    py.PyList_Append(values, body) == 0) {
		PyObject *op;

		py.Py_IncRef(values);
		op = node_new(sb_g.eval.ast_boolop, body, and, values, NULL);
		and = NULL;
		if (op) {
			r = py.PyObject_SetAttrString(node, "body", op);
			py.Py_DecRef(op);
		}
	}
	py.Py_DecRef(and);
	py.Py_DecRef(values);
	py.Py_DecRef(call);
	py.Py_DecRef(body);
	return r;
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
	r = py.PyObject_IsInstance(v, sb_g.eval.ast_class);
	if (r < 0)
		return -1;
	return r ? walk(c, v, depth) : 0;
}

static struct ev_type *type_of(PyObject *node)
{
	PyObject *type = ev.PyObject_Type(node), *tn, *real;
	struct ev_type *t;
	const char *s;
	size_t i;

	if (!type)
		return NULL;
	for (i = 0; i < sb_g.eval.ntypes; i++)
		if (sb_g.eval.types[i].type == type) {
			py.Py_DecRef(type);
			return &sb_g.eval.types[i];
		}
	if (sb_g.eval.ntypes == SB_ARRAY_LEN(sb_g.eval.types)) {
		py.Py_DecRef(type);
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "the eval guard met too many AST classes");
		return NULL;
	}
	t = &sb_g.eval.types[sb_g.eval.ntypes];
	tn = ev.PyObject_GetAttr(type, sb_g.eval.str_name);
	s = tn ? py.PyUnicode_AsUTF8AndSize(tn, NULL) : NULL;
	t->fields = s ? ev.PyObject_GetAttr(type, sb_g.eval.str_fields) : NULL;
	if (!t->fields ||
	    py.PyObject_IsInstance(t->fields, py.PyTuple_Type) != 1) {
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
	real = py.PyObject_GetAttrString(sb_g.eval.ast_module, t->name);
	py.PyErr_Clear();
	py.Py_DecRef(real);
	if (real != type) {
		py.Py_DecRef(t->fields);
		py.Py_DecRef(type);
		ev_raise_perm(t->name, "eval-syntax",
			   "An AST node of a class other than the "
			   "interpreter's own is refused by the eval guard.");
		return NULL;
	}
	t->type = type; /* kept */
	t->kind = part_node(t->name) ? EV_K_PART : EV_K_OTHER;
	t->rw = EV_RW_NONE;
	for (i = 0; i < SB_ARRAY_LEN(kinds); i++)
		if (strcmp(t->name, kinds[i].name) == 0) {
			t->kind = kinds[i].kind;
			t->rw = kinds[i].rw;
		}
	t->syntax_p = NULL;
	sb_g.eval.ntypes++;
	return t;
}

/* The fast path's longest name (eval_scan.c): longer ones go the walk,
 * which judges a name whole. */
#define EV_NAME_BUF 64

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
	if (t->kind == EV_K_PART)
		return 0;
	name = t->name;
	fields = t->fields;
	c->nodes++;
	if (depth > c->max_depth)
		c->max_depth = depth;
	if (t->kind != EV_K_CALL && t->kind != EV_K_ATTRIBUTE) {
		if (t->syntax_p != c->p) {
			t->syntax_ok = syntax_allowed(c->p, name);
			t->syntax_p = c->p;
		}
		if (!t->syntax_ok)
			check_syntax(c, name, &pos);
	}
	if (t->kind == EV_K_ATTRIBUTE) {
		check_attribute(c, node, &pos);
	} else if (t->kind == EV_K_MATCH_CLASS) {
		check_match_attrs(c, node, &pos);
	} else if (t->kind == EV_K_NAME) {
		PyObject *ctx = ev.PyObject_GetAttr(node, sb_g.eval.str_ctx);
		PyObject *ct = ctx ? ev.PyObject_Type(ctx) : NULL;

		/* a context of a class other than the interpreter's own is
		 * refused when the walk reaches it (type_of) */
		str_of(ev.PyObject_GetAttr(node, sb_g.eval.str_id), buf,
		       sizeof(buf));
		/* a name is judged whole: one that does not fit is given a
		 * dunder's form, so that eval-magic (never a prefix) decides */
		if (strlen(buf) >= sizeof(buf) - 1) {
			memcpy(buf, "__", 2);
			memcpy(buf + sizeof(buf) - 3, "__", 3);
		}
		if (strstr(buf, "__sb_"))
			c->reserved = true;
		if (ct && ct != sb_g.eval.ast_load)
			bind(c, buf);
		else if (!ev_is_dunder(buf) &&
			 py.PyDict_GetItemString(sb_g.eval.builtins_dict, buf))
			use_builtin(c, buf, &pos);
		check_dunder_name(c, buf, &pos);
		py.Py_DecRef(ct);
		py.Py_DecRef(ctx);
		py.PyErr_Clear();
	} else if (t->kind == EV_K_IMPORT) {
		if (walk_aliases(c, node, NULL, &pos) < 0)
			goto out;
	} else if (t->kind == EV_K_IMPORT_FROM) {
		if (int_attr(node, sb_g.eval.str_level) > 0)
			violation_at(c, &pos,
				  "a relative import is not allowed",
				  "no rule allows it: evaluated code has no "
				  "package");
		else if (walk_aliases(c, node,
				      str_field(node, "module", buf,
						sizeof(buf)),
				      &pos) < 0)
			goto out;
	} else if (t->kind == EV_K_ARG) {
		bind(c, str_field(node, "arg", buf, sizeof(buf)));
		check_dunder_name(c, buf, &pos);
	} else if (t->kind == EV_K_NAMED) {
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
	r = 0;
	if (c->rewrite && t->rw != EV_RW_NONE) {
		r = rewrite(node, t->rw);
		c->rewritten++;
	}
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

		if (ev_call_allowed(c->p, u->name) || is_bound(c, u->name))
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

/* Would the walk and check_uses let a Name that reads 'name' (ASCII, not a
 * keyword) pass with no violation and without the namespace excusing it?
 * The walk's Name branch above, for a load, with nothing bound: a name of
 * the guard's, a dunder without eval-magic or a builtin without eval-call
 * is not clean; nor is a name the walk would read only a prefix of. */
bool ev_name_read_clean(const struct ev_profile *p, const char *name)
{
	if (strlen(name) >= EV_NAME_BUF || strstr(name, "__sb_"))
		return false;
	if (ev_is_dunder(name))
		return magic_allowed(p, name);
	return !py.PyDict_GetItemString(sb_g.eval.builtins_dict, name) ||
	       ev_call_allowed(p, name);
}

void ev_check_free(struct ev_check *c)
{
	size_t i;

	for (i = 0; i < c->nbound; i++)
		free(c->bound[i]);
	free(c->bound);
	free(c->uses);
	sb_buf_free(&c->blocks);
	py.Py_DecRef(c->violations);
}

/* Judge 'tree'. 0 when it may run, -1 with EvalSyntaxRejected (or another
 * error) set. */
int ev_check_tree(struct ev_check *c, PyObject *tree)
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
	return ev_raise_with(sb_g.eval.exc_syntax, args);
}
