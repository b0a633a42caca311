/* eval.c - the eval guard (py-sandboxes(5), eval-*): eval(), exec() and
 * compile() called from application code, and pysandboxes.guarded_eval(),
 * under the eval-* rules. This file owns the entry points, compiling (the
 * cache and the registry of code objects the guard compiled), the namespaces
 * with their checking builtins, and the arming; eval_check.c the static
 * checker and its rewrite, eval_scan.c the fast path's scanner,
 * eval_budget.c the run-time budgets, eval_int.h what the four share. The
 * whole guard, in short:
 *
 * - The source is parsed to an AST with the raw compile() and every node is
 *   judged in C (eval_check.c): syntax classes, builtin names, attribute
 *   names, dunders, imports, depth and size. All violations are reported at
 *   once in EvalSyntaxRejected, each with the rule that would allow it.
 *   Checked code is compiled from that same AST (from the same source text
 *   when the rewrite changed nothing: it parses to the same tree) and
 *   cached by (profile, mode, source). A plain arithmetic or comparison
 *   expression that eval_scan.c proves from its tokens would pass, and
 *   would be left unchanged by the rewrite, is compiled from its text
 *   without the AST and the walk.
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
 * - Only code objects this file compiled may be run again by eval/exec (a
 *   registry of weak references: it does not keep them alive).
 *
 * The state lives in sb_g.eval (guard.h) and in thread locals, hidden
 * inside the guard library: nothing the evaluated code can name reaches it
 * (names starting with __sb_ are refused outright, dunders need
 * eval-magic, frame attributes are never allowed).
 */
#include "eval_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- state ---- */

struct ev_capi ev; /* resolved by sb_eval_arm */

__thread struct ev_run *ev_cur;

/* ---- exceptions ---- */

int ev_raise_with(PyObject *cls, PyObject *args)
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
	exc = sb_guard_call(cls, args);
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

/* RuleEvalPermissionError(target, rule_key[, hint]); returns -1.
 * Each refusal of the eval guard is a record of kind "eval": what was
 * refused, and the rule that decided (rule) or the one to add (add). */
int ev_raise_logged(const char *target, const char *key, const char *hint,
		    const char *rule, const char *add)
{
	if (sb_g.log_fd >= 0)
		sb_guard_log("eval", target, rule, rule ? NULL : add);
	return ev_raise_with(sb_g.eval.exc_perm,
			     tuple_of_strings(target, key, hint));
}

/* Without a hint, `key=target` is the rule to add; a hint explains a
 * refusal no rule can lift (a frame attribute, vars()...). */
int ev_raise_perm(const char *target, const char *key, const char *hint)
{
	char add[512];

	snprintf(add, sizeof(add), "%s=%s", key, target);
	return ev_raise_logged(target, key, hint, hint ? SB_RULE_BUILTIN : NULL,
			       add);
}

/* A budget ran out: the budget's rule decided ("eval-max-iterations=N"),
 * nothing to add but a larger budget. The interruption is raised again at
 * each tick until the evaluation ends: one record. */
int ev_raise_interrupted(struct ev_run *run)
{
	if (sb_g.log_fd >= 0 && !run->logged)
		sb_guard_log("eval", "an evaluation", run->reason, NULL);
	run->logged = true;
	return ev_raise_with(sb_g.eval.exc_interrupted,
			     tuple_of_strings(run->reason, NULL, NULL));
}

int ev_raise_orphan(const char *reason)
{
	if (sb_g.log_fd >= 0)
		sb_guard_log("eval", "code that outlived its evaluation",
			     SB_RULE_BUILTIN, NULL);
	return ev_raise_with(sb_g.eval.exc_interrupted,
			     tuple_of_strings(reason, NULL, NULL));
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
	sb_guard_own_compile_enter();
	res = py.PyObject_Call(sb_g.eval.raw_compile, args, NULL);
	sb_guard_own_compile_leave();
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
	PyObject *mod;

	/* neither busy: a program can plant its own ast.py or node classes,
	 * and what they run must meet the guards like any of its code */
	if (!fn) {
		mod = py.PyImport_ImportModule("ast");
		fn = mod ? py.PyObject_GetAttrString(mod, "unparse") : NULL;
		py.Py_DecRef(mod);
		if (!fn)
			return NULL;
	}
	return sb_guard_call1(fn, tree);
}

static PyObject *none(void);

/* A weak reference's callback: the code object died, its id may be
 * reused, its entry goes. 'self' is the id. */
static PyObject *forget(PyObject *self, PyObject *ref)
{
	if (ev.PyDict_GetItem(sb_g.eval.compiled, self) == ref &&
	    ev.PyDict_DelItem(sb_g.eval.compiled, self) < 0)
		py.PyErr_Clear();
	return none();
}

static struct py_method_def forget_def = { "forget", (void *)forget,
					   0x0008 /* METH_O */, NULL };

/* Record 'code' as compiled by the guard. The registry holds it weakly, so
 * that the code objects of endless distinct sources do not pile up; an
 * entry whose code died is dead (and removed by forget), never another
 * object's. */
static int register_ours(PyObject *code)
{
	PyObject *id = ev.PyLong_FromVoidPtr(code), *fn, *ref = NULL;
	int r = -1;

	fn = id ? py.PyCFunction_NewEx(&forget_def, id, NULL) : NULL;
	ref = fn ? ev.PyWeakref_NewRef(code, fn) : NULL;
	if (ref)
		r = ev.PyDict_SetItem(sb_g.eval.compiled, id, ref);
	py.Py_DecRef(ref);
	py.Py_DecRef(fn);
	py.Py_DecRef(id);
	return r;
}

/* Parse and judge 'input' (a source str or an AST). With only_ast, the
 * checked AST; else the compiled code, registered as ours. 'names' is the
 * namespace the code will see (NULL: only its builtins). */
static PyObject *check_compile(struct ev_profile *p, PyObject *input,
			       const char *mode, PyObject *names,
			       bool only_ast)
{
	struct ev_check c = { .p = p, .names = names, .rewrite = !only_ast };
	PyObject *key = NULL, *tree = NULL, *code = NULL, *src = NULL;
	int isast = py.PyObject_IsInstance(input, sb_g.eval.ast_class);
	Py_ssize_t len = 0;

	if (isast < 0)
		return NULL;
	/* An AST is judged as the source it stands for: the program keeps
	 * its tree untouched, and what runs is what was judged. */
	if (isast && !only_ast) {
		/* its classes and rules first, then the source it unparses
		 * to (a foreign node class could unparse to anything) */
		struct ev_check pre = { .p = p, .names = names };
		int r = ev_check_tree(&pre, input);

		ev_check_free(&pre);
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
		c.src = py.PyUnicode_AsUTF8AndSize(src, &len);
		if (!c.src)
			goto out;
		key = tuple_of_strings(p->label, mode, c.src);
		if (!key)
			goto out;
		if (!only_ast &&
		    (code = ev.PyDict_GetItem(sb_g.eval.cache, key))) {
			py.Py_IncRef(code);
			goto out;
		}
		/* the fast path (eval_scan.c): an expression its tokens
		 * prove the walk would pass, and the rewrite leave as it
		 * is, is compiled from its text as below, with no tree */
		if (!only_ast && !sb_g.eval.no_fast_path && !sb_g.learning &&
		    strcmp(mode, "eval") == 0 &&
		    ev_scan_admits(p, c.src, (size_t)len))
			goto compile;
		tree = compile_raw(src, p->filename, mode, EV_CF_ONLY_AST);
		if (!tree)
			goto out;
	}
	if (ev_check_tree(&c, tree) < 0)
		goto out;
	if (only_ast) {
		code = tree;
		tree = NULL;
		goto out;
	}
	/* CPython compiles an AST by converting it, field by field, back
	 * into its own tree and validating that: dearer than parsing the
	 * text again. When the rewrite changed nothing, the text (the same
	 * str, mode, flags and filename) parses to the very tree judged. */
compile:
	code = compile_raw(src && !c.rewritten ? src : tree, p->filename,
			   mode, 0);
	if (!code)
		goto out;
	if (register_ours(code) < 0) {
		py.Py_DecRef(code);
		code = NULL;
		goto out;
	}
	/* a small cache: a program evaluating endless distinct sources
	 * starts again rather than growing */
	if (key && !c.excused) {
		if (py.PyDict_Size(sb_g.eval.cache) >= 512) {
			py.Py_DecRef(sb_g.eval.cache);
			sb_g.eval.cache = py.PyDict_New();
		}
		if (sb_g.eval.cache &&
		    ev.PyDict_SetItem(sb_g.eval.cache, key, code) < 0)
			py.PyErr_Clear();
	}
out:
	ev_check_free(&c);
	py.Py_DecRef(tree);
	py.Py_DecRef(key);
	py.Py_DecRef(src);
	return code;
}

static bool ours(PyObject *code)
{
	PyObject *id = ev.PyLong_FromVoidPtr(code), *ref, *o = NULL;
	bool r;

	ref = id ? ev.PyDict_GetItem(sb_g.eval.compiled, id) : NULL;
	if (ref && !(o = py.PyObject_CallObject(ref, NULL))) /* referent */
		py.PyErr_Clear();
	r = o == code;
	py.Py_DecRef(o);
	py.Py_DecRef(id);
	return r;
}

/* The refusal of a code object compile() did not stamp (refuse-by-default:
 * only the registry's entries run): no rule lifts it, so the message
 * names none (a python-api= grant it once suggested is no rule). */
#define FOREIGN_CODE "eval()/exec() of a code object the eval guard did not compile"
#define FOREIGN_CODE_HINT                                                      \
	"No rule allows it: while eval-* rules are in force, eval() and "      \
	"exec() run source text, or a code object the guarded compile() "      \
	"made."
/* ... and of one the guard compiled for another profile: it was judged by
 * that profile's rules, not by these */
#define OTHER_PROFILE_CODE "a code object compiled for another eval profile"
#define OTHER_PROFILE_HINT                                                     \
	"No rule allows it: a code object runs only under the profile that "   \
	"compiled it; pass the source text to this evaluation."

/* Whether code object 'code' may run under profile p: 1 if the guard
 * compiled it for p (its co_filename, which no one can change, is p's),
 * else -1 with the guard's refusal raised. */
static int admit_code(struct ev_profile *p, PyObject *code)
{
	PyObject *f;
	const char *got = NULL, *want;
	bool same;

	if (!ours(code))
		return ev_raise_perm(FOREIGN_CODE, "eval-call",
				     FOREIGN_CODE_HINT);
	f = py.PyObject_GetAttrString(code, "co_filename");
	if (f && py.PyObject_IsInstance(f, py.PyUnicode_Type) == 1)
		got = py.PyUnicode_AsUTF8AndSize(f, NULL);
	want = py.PyUnicode_AsUTF8AndSize(p->filename, NULL);
	same = got && want && strcmp(got, want) == 0;
	py.Py_DecRef(f);
	py.PyErr_Clear();
	if (same)
		return 1;
	return ev_raise_perm(OTHER_PROFILE_CODE, "eval-call",
			     OTHER_PROFILE_HINT);
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
	if (ev_attr_allowed(p, name, s))
		return 0;
	if (ev_frame_attr(s))
		return ev_raise_perm(s, "eval-attribute",
				  "Frame attributes are refused whatever "
				  "eval-attribute says.");
	if (ev_resolver_attr(s))
		return ev_raise_perm(s, "eval-attribute",
				  "It looks attributes up by a name the eval "
				  "guard does not see: refused whatever "
				  "eval-attribute says.");
	if (strstr(s, "__sb_"))
		return ev_raise_perm(s, "eval-magic",
				  "Names with __sb_ are the eval guard's own: "
				  "refused whatever eval-magic says.");
	return ev_raise_perm(s,
			     ev_is_dunder(s) ? "eval-magic" : "eval-attribute",
			     NULL);
}

static PyObject *call_builtin(const char *name, PyObject *args,
			      PyObject *kw)
{
	PyObject *fn = py.PyDict_GetItemString(sb_g.eval.builtins_dict, name);

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
		ev_raise_perm(s, "eval-attribute",
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

/* The classes of the builtins module whose constructors build only data:
 * type() hands these out. The others of that module (function, code,
 * method, cell, frame, generator, mappingproxy, module, type itself...) are
 * the interpreter's own: calling one builds what the rules refuse (a
 * function over a code object with globals of the caller's choosing runs
 * without the budgets; type(int) is the three-argument type()). */
static const char *const data_types[] = {
	"NoneType",  "NotImplementedType", "bool",     "bytearray",
	"bytes",     "complex",	           "dict",     "ellipsis",
	"enumerate", "filter",	           "float",    "frozenset",
	"int",	     "list",	           "map",      "memoryview",
	"object",    "range",	           "reversed", "set",
	"slice",     "str",	           "tuple",    "zip",
};

/* Refuse-by-default: a class of the builtins module outside data_types
 * (exceptions, and classes Python code cannot instantiate, like
 * dict_keys or generator, aside), and any metaclass. Classes of other
 * modules, and those the evaluated code defines, are handed out. */
static bool type_handed_out(PyObject *arg, PyObject *t)
{
	PyObject *mod, *name;
	const char *m, *n;
	bool r = false;

	if (py.PyObject_IsInstance(arg, py.PyType_Type) != 0)
		return false; /* type(C) is a metaclass: type() in full */
	if (py.PyObject_IsSubclass(t, *ev.base_exception) == 1)
		return true;
	py.PyErr_Clear();
	if (!ev.PyType_GetSlot(t, EV_TP_NEW) && !py.PyErr_Occurred())
		return true; /* no constructor */
	py.PyErr_Clear();
	mod = py.PyObject_GetAttrString(t, "__module__");
	name = py.PyObject_GetAttrString(t, "__name__");
	m = mod ? py.PyUnicode_AsUTF8AndSize(mod, NULL) : NULL;
	n = name ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	if (m && n)
		r = strcmp(m, "builtins") != 0 ||
		    sb_str_in(n, data_types, SB_ARRAY_LEN(data_types));
	py.Py_DecRef(mod);
	py.Py_DecRef(name);
	py.PyErr_Clear();
	return r;
}

static PyObject *g_type(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *t, *name;
	const char *n;
	char target[96];

	(void)self;
	if (py.PyTuple_Size(args) != 1 || (kw && py.PyDict_Size(kw))) {
		ev_raise_perm("type() with three arguments", "eval-call",
			   "Building a class at run time is refused by the "
			   "eval guard; a class statement needs "
			   "eval-syntax=class.");
		return NULL;
	}
	t = call_builtin("type", args, kw);
	if (!t || type_handed_out(py.PyTuple_GetItem(args, 0), t))
		return t;
	name = py.PyObject_GetAttrString(t, "__name__");
	n = name ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	snprintf(target, sizeof(target), "type() of a %s", n ? n : "?");
	py.Py_DecRef(name);
	py.PyErr_Clear();
	py.Py_DecRef(t);
	ev_raise_perm(target, "eval-call",
		      "The eval guard hands out the classes of data only: "
		      "the interpreter's own (function, code, type...) "
		      "build what the rules refuse.");
	return NULL;
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
	ev_raise_perm(name, "eval-call",
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
		ev_raise_perm("__import__", "eval-import", NULL);
		return NULL;
	}
	if ((level && py.PyLong_AsLong(level) != 0) ||
	    !ev_import_allowed(p, s)) {
		py.PyErr_Clear();
		ev_raise_perm(s, "eval-import", NULL);
		return NULL;
	}
	return call_builtin("__import__", args, kw);
}

#define EV_GUARDED(name, fn)                                                   \
	{ name, (void *)fn, PY_METH_VARARGS | PY_METH_KEYWORDS, NULL }

/* Never written: not const only because CPython takes the definitions so. */
static struct py_method_def guarded_builtins[] = {
	EV_GUARDED("getattr", g_getattr),
	EV_GUARDED("hasattr", g_hasattr),
	EV_GUARDED("setattr", g_setattr),
	EV_GUARDED("delattr", g_delattr),
	EV_GUARDED("type", g_type),
	EV_GUARDED("globals", g_globals),
	EV_GUARDED("locals", g_locals),
	EV_GUARDED("vars", g_vars),
	EV_GUARDED("breakpoint", g_breakpoint),
	EV_GUARDED("__import__", g_import),
};

static PyObject *guarded_builtin(struct ev_profile *p, const char *name)
{
	PyObject *capsule, *fn;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(guarded_builtins); i++) {
		if (strcmp(guarded_builtins[i].ml_name, name))
			continue;
		capsule = py.PyCapsule_New(p, "pysb.eval", NULL);
		if (!capsule)
			return NULL;
		fn = py.PyCFunction_NewEx(&guarded_builtins[i], capsule, NULL);
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
	const struct sb_strlist *syntax = &p->rules->allow[SB_EVAL_SYNTAX];
	bool import = ev_list_exact(syntax, "Import") ||
		      ev_list_exact(syntax, "ImportFrom");
	/* a class statement calls __build_class__, and its body stores
	 * __module__ = __name__: both are there only when ClassDef is */
	bool classes = ev_list_exact(&p->rules->allow[SB_EVAL_SYNTAX],
				  "ClassDef");

	if (!p->builtins) {
		p->builtins = py.PyDict_New();
		if (!p->builtins)
			return NULL;
		while (ev.PyDict_Next(sb_g.eval.builtins_dict, &pos, &k, &v)) {
			name = py.PyUnicode_AsUTF8AndSize(k, NULL);
			if (!name || strstr(name, "__sb_")) {
				py.PyErr_Clear();
				continue;
			}
			if (strcmp(name, "__import__") == 0 ? !import
			    : strcmp(name, "__build_class__") == 0 ? !classes
			    : !ev_call_allowed(p, name))
				continue;
			fn = guarded_builtin(p, name);
			if (!fn && py.PyErr_Occurred())
				return NULL;
			if (ev.PyDict_SetItem(p->builtins, k, fn ? fn : v) < 0)
				return NULL;
			py.Py_DecRef(fn);
		}
		if (classes) {
			PyObject *mod = py.PyUnicode_FromString("<eval>");

			if (!mod || py.PyDict_SetItemString(p->builtins,
							    "__name__",
							    mod) < 0) {
				py.Py_DecRef(mod);
				return NULL;
			}
			py.Py_DecRef(mod);
		}
	}
	return ev.PyDict_Copy(p->builtins);
}

/* A copy of a caller's __builtins__ (a module or a dict) in which each
 * builtin that would undo the attribute rules (guarded_builtins: getattr,
 * type, vars...) is the checking version: CPython's getattr in the
 * caller's builtins read any dunder the code named in a string. */
static PyObject *checked_builtins(struct ev_profile *p, PyObject *b)
{
	PyObject *d = NULL, *fn;
	size_t i;

	if (py.PyObject_IsInstance(b, ev.dict_type) == 1) {
		d = ev.PyDict_Copy(b);
	} else if (py.PyObject_IsInstance(b, ev.module_type) == 1) {
		PyObject *md = py.PyObject_GetAttrString(b, "__dict__");

		d = md ? ev.PyDict_Copy(md) : NULL;
		py.Py_DecRef(md);
	} else {
		py.PyErr_Clear();
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "the eval guard takes __builtins__ as a "
				   "dict or a module");
	}
	for (i = 0; d && i < SB_ARRAY_LEN(guarded_builtins); i++) {
		if (!py.PyDict_GetItemString(d, guarded_builtins[i].ml_name))
			continue;
		fn = guarded_builtin(p, guarded_builtins[i].ml_name);
		if (!fn || py.PyDict_SetItemString(
				   d, guarded_builtins[i].ml_name, fn) < 0) {
			py.Py_DecRef(fn);
			py.Py_DecRef(d);
			return NULL;
		}
		py.Py_DecRef(fn);
	}
	return d;
}

/* 'step' (a cleanup after a run that gave 'res', NULL with the run's
 * exception set) made with that exception kept aside: the run's result,
 * or NULL with the run's exception, or with the step's when only the step
 * failed. */
static PyObject *after_run(PyObject *res, int (*step)(void *), void *ctx)
{
	PyObject *et = NULL, *ev_ = NULL, *tb = NULL;

	if (!res)
		py.PyErr_Fetch(&et, &ev_, &tb);
	if (step(ctx) < 0) {
		if (res) {
			py.Py_DecRef(res);
			res = NULL;
		} else {
			py.PyErr_Clear();
		}
	}
	if (!res && et)
		py.PyErr_Restore(et, ev_, tb);
	return res;
}

struct builtins_back {
	PyObject *g, *orig;
};

static int builtins_back(void *ctx)
{
	struct builtins_back *b = ctx;

	return py.PyDict_SetItemString(b->g, "__builtins__", b->orig);
}

/* Put the caller's __builtins__ back into g after the run (and drop the
 * reference to it), keeping the run's exception if it raised. */
static PyObject *put_back_builtins(PyObject *g, PyObject *orig,
				   PyObject *res)
{
	struct builtins_back b = { g, orig };

	res = after_run(res, builtins_back, &b);
	py.Py_DecRef(orig);
	return res;
}

/* Globals built from eval-call only. */
static PyObject *closed_namespace(struct ev_profile *p)
{
	PyObject *g = py.PyDict_New(), *b;

	if (!g)
		return NULL;
	b = profile_builtins(p);
	if (!b || py.PyDict_SetItemString(g, "__builtins__", b) < 0) {
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

	/* an int, a str or bytes has no __module__: looking it up would
	 * only raise and clear an AttributeError at each evaluation */
	m = ev.PyObject_Type(v);
	py.Py_DecRef(m); /* a type lives as long as its instance */
	if (m == py.PyLong_Type || m == py.PyUnicode_Type ||
	    m == py.PyBytes_Type || v == py._Py_NoneStruct)
		return false;
	if (py.PyObject_IsInstance(v, ev.module_type) == 1) {
		m = py.PyObject_GetAttrString(v, "__name__");
		s = m ? py.PyUnicode_AsUTF8AndSize(m, NULL) : NULL;
		snprintf(what, size, "module '%s'", s ? s : "?");
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
	char what[160], hint[400], add[300];

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
			return ev_raise_perm(key, "eval-magic",
					  "guarded_eval() names cannot bind "
					  "dunder names: the namespace's "
					  "__builtins__ comes from eval-call.");
		}
		if (strong_value(v, what, sizeof(what)) &&
		    !ev_call_allowed(p, key)) {
			snprintf(hint, sizeof(hint),
				 "names['%s'] is %s: the evaluated code could "
				 "reach everything it exposes.\nAcknowledge "
				 "with `eval-call=%s` to allow it.",
				 key, what, key);
			snprintf(add, sizeof(add), "eval-call=%s", key);
			return ev_raise_logged(key, "eval-call", hint, NULL,
					       add);
		}
		if (ev.PyDict_SetItem(g, k, v) < 0)
			return -1;
	}
	return 0;
}

/* The next key of 'g' (from *pos) whose value is a module or a callable
 * that runs programs and that eval-call does not acknowledge; its
 * description in 'what'. NULL at the end. */
static const char *next_strong(struct ev_profile *p, PyObject *g,
			       Py_ssize_t *pos, char *what, size_t size)
{
	PyObject *k, *v;

	while (ev.PyDict_Next(g, pos, &k, &v)) {
		const char *key = py.PyUnicode_AsUTF8AndSize(k, NULL);

		if (!key) {
			py.PyErr_Clear();
			continue;
		}
		if (!sb_str_starts(key, "__") && !ev_call_allowed(p, key) &&
		    strong_value(v, what, size))
			return key;
	}
	return NULL;
}

/* Log once per call site what a caller-supplied context hands over. */
static void warn_context(struct ev_profile *p, PyObject *g, const char *which)
{
	static PyObject *seen;
	PyObject *frame = py.PyEval_GetFrame(), *code, *file, *site;
	const char *f = "?", *key;
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
	py.Py_DecRef(file);
	py.Py_DecRef(code);
	py.PyErr_Clear();
	if (py.PyDict_GetItemString(seen, buf))
		return;
	site = py.PyLong_FromLong(1);
	if (!site || py.PyDict_SetItemString(seen, buf, site) < 0)
		py.PyErr_Clear();
	py.Py_DecRef(site);
	while ((key = next_strong(p, g, &pos, what, sizeof(what))))
		fprintf(stderr,
			"python-sb: %s() context provides %s at %s\n"
			"    the evaluated code can reach everything it "
			"exposes\n"
			"    acknowledge with: eval-call=%s        (or use "
			"eval-namespace=closed)\n",
			which, what, buf, key);
}

/* ---- entry points ---- */

bool sb_eval_enabled(void)
{
	return sb_g.eval.default_profile >= 0 && sb_g.eval.raw_compile;
}

static struct ev_profile *find(const char *name)
{
	size_t i;

	for (i = 0; i < sb_g.eval.nprofiles; i++)
		if (strcmp(sb_g.eval.profiles[i].rules->name, name) == 0)
			return &sb_g.eval.profiles[i];
	return NULL;
}

static PyObject *none(void)
{
	py.Py_IncRef(py._Py_NoneStruct);
	return py._Py_NoneStruct;
}

static PyObject *guarded_compile(struct ev_profile *p, PyObject *args,
				 PyObject *kw)
{
	PyObject *src = sb_arg(args, kw, 0, "source");
	PyObject *mode = sb_arg(args, kw, 2, "mode");
	PyObject *flags = sb_arg(args, kw, 3, "flags");
	const char *m = mode ? py.PyUnicode_AsUTF8AndSize(mode, NULL) : NULL;
	long f = flags ? py.PyLong_AsLong(flags) : 0;

	if (!src || !m || !sb_arg(args, kw, 1, "filename")) {
		py.PyErr_Clear();
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "compile() needs source, filename and mode");
		return NULL;
	}
	if (f == -1 && py.PyErr_Occurred())
		return NULL;
	return check_compile(p, src, m, NULL, (f & EV_CF_ONLY_AST) != 0);
}

/* Write back what the code bound in 'from' to 'to', the guard's helpers
 * aside. */
static int copy_back(PyObject *to, PyObject *from)
{
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	const char *name;

	while (ev.PyDict_Next(from, &pos, &k, &v)) {
		name = py.PyUnicode_AsUTF8AndSize(k, NULL);
		py.PyErr_Clear();
		if (name && sb_str_starts(name, "__sb_"))
			continue;
		if (ev.PyDict_SetItem(to, k, v) < 0)
			return -1;
	}
	return 0;
}

struct copies {
	PyObject *g, *gc, *l, *lc;
};

/* the run's copies of globals (and locals, when it had its own) back */
static int copies_back(void *ctx)
{
	struct copies *c = ctx;

	return copy_back(c->g, c->gc) < 0 ||
			       (c->lc && copy_back(c->l, c->lc) < 0)
		       ? -1
		       : 0;
}

/* eval/exec called by the evaluated code itself, with dicts it made: it
 * keeps them, so the budget helpers run_code puts there could be replaced
 * (a locals dict is read first; a function defined there reads its globals
 * when called, after the exec). The code runs in copies the evaluated code
 * never holds, and what it bound is written back, an exception or not. */
static PyObject *run_nested(struct ev_profile *p, PyObject *code,
			    PyObject *g, PyObject *l)
{
	PyObject *gc, *lc = NULL, *res = NULL;

	if (l && l != g && py.PyObject_IsInstance(l, ev.dict_type) != 1) {
		py.PyErr_Clear();
		py.PyErr_SetString(PY_EXC(PyExc_TypeError),
				   "locals must be a dict in an evaluation");
		return NULL;
	}
	gc = ev.PyDict_Copy(g);
	if (!gc)
		return NULL;
	if (l && l != g && !(lc = ev.PyDict_Copy(l)))
		goto out;
	res = run_code(p, code, gc, !l ? NULL : lc ? lc : gc);
	/* what the code bound before an exception is kept, as CPython's
	 * exec keeps it; the exception is the one the caller sees */
	{
		struct copies c = { g, gc, l, lc };

		res = after_run(res, copies_back, &c);
	}
out:
	py.Py_DecRef(gc);
	py.Py_DecRef(lc);
	return res;
}

bool sb_eval_running(const char *which, PyObject *args, PyObject *kw)
{
	PyObject *src;

	if (!ev_cur)
		return false;
	if (strcmp(which, "compile") == 0)
		return true;
	src = sb_arg(args, kw, 0, "source");
	py.PyErr_Clear();
	return !src || py.PyObject_IsInstance(src, ev.code_type) != 1;
}

PyObject *sb_eval_builtin(const char *which, PyObject *args, PyObject *kw)
{
	/* inside an evaluation, the evaluation's profile: a named profile is
	 * complete and independent of the default one */
	struct ev_profile *p =
		ev_cur ? ev_cur->p
		       : &sb_g.eval.profiles[sb_g.eval.default_profile];
	bool is_eval = strcmp(which, "eval") == 0;
	PyObject *src, *g, *l, *code, *ns = NULL, *res = NULL, *b;
	PyObject *orig = NULL;
	enum sb_eval_namespace mode =
		(enum sb_eval_namespace)p->rules->scalar[SB_EVAL_NAMESPACE];

	if (strcmp(which, "compile") == 0)
		return guarded_compile(p, args, kw);
	src = sb_arg(args, kw, 0, "source");
	g = sb_arg(args, kw, 1, "globals");
	l = sb_arg(args, kw, 2, "locals");
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
		/* no python-api= grant lifts it while eval-* lines exist:
		 * the guard's own refusal */
		if (admit_code(p, src) < 0)
			return NULL;
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
			py.Py_DecRef(b);
			goto out;
		}
		py.Py_DecRef(b);
		warn_context(p, g, which);
	} else if (mode == SB_EVAL_NS_ADAPTIVE) {
		warn_context(p, g, which);
		/* the caller's builtins, for this run, with the checking
		 * versions of getattr, type... in them */
		orig = py.PyDict_GetItemString(g, "__builtins__");
		py.Py_IncRef(orig);
		b = checked_builtins(p, orig);
		if (!b || py.PyDict_SetItemString(g, "__builtins__", b) < 0) {
			py.Py_DecRef(b);
			goto out;
		}
		py.Py_DecRef(b);
	}
	if (g && ev_cur && !ns)
		res = run_nested(p, code, g, l);
	else if (g)
		res = run_code(p, code, g, l);
out:
	if (orig)
		res = put_back_builtins(g, orig, res);
	py.Py_DecRef(code);
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
		for (i = 0; i < sb_g.eval.nprofiles; i++)
			sb_buf_printf(&b, "%s'%s'", i ? ", " : "",
				      sb_g.eval.profiles[i].rules->name);
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
	if (py.PyObject_IsInstance(src, ev.code_type) == 1) {
		code = admit_code(p, src) > 0 ? (py.Py_IncRef(src), src) : NULL;
	} else {
		code = check_compile(p, src, m, g, false);
	}
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
	int *state = &sb_g.eval.checker_state;
	PyObject *mod, *sys;
	bool ok = true;

	if (*state)
		return *state > 0 ? 0 : -1;
	*state = -1;
#define EV_RESOLVE(ret, name, args) *(void **)&ev.name = sym(#name, &ok);
	EV_FUNCTIONS(EV_RESOLVE)
#undef EV_RESOLVE
	ev.dict_type = sym("PyDict_Type", &ok);
	ev.value_error = sym("PyExc_ValueError", &ok);
	ev.code_type = sym("PyCode_Type", &ok);
	ev.module_type = sym("PyModule_Type", &ok);
	ev.base_exception = sym("PyExc_BaseException", &ok);
	ev.generator_exit = sym("PyExc_GeneratorExit", &ok);
	if (!ok) {
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "this interpreter lacks a function the "
				   "eval guard needs");
		return -1;
	}
	sb_g.eval.str_fields = intern("_fields", &ok);
	sb_g.eval.str_name = intern("__name__", &ok);
	sb_g.eval.str_lineno = intern("lineno", &ok);
	sb_g.eval.str_col = intern("col_offset", &ok);
	sb_g.eval.str_end_col = intern("end_col_offset", &ok);
	sb_g.eval.str_end_lineno = intern("end_lineno", &ok);
	sb_g.eval.str_level = intern("level", &ok);
	sb_g.eval.str_attr = intern("attr", &ok);
	sb_g.eval.str_ctx = intern("ctx", &ok);
	sb_g.eval.str_id = intern("id", &ok);
	if (!ok)
		return -1;
	mod = py.PyImport_ImportModule("_ast");
	if (!mod)
		return -1;
	sb_g.eval.ast_class = py.PyObject_GetAttrString(mod, "AST");
	sb_g.eval.ast_name = py.PyObject_GetAttrString(mod, "Name");
	sb_g.eval.ast_load = py.PyObject_GetAttrString(mod, "Load");
	sb_g.eval.ast_call = py.PyObject_GetAttrString(mod, "Call");
	sb_g.eval.ast_expr = py.PyObject_GetAttrString(mod, "Expr");
	sb_g.eval.ast_boolop = py.PyObject_GetAttrString(mod, "BoolOp");
	sb_g.eval.ast_and = py.PyObject_GetAttrString(mod, "And");
	sb_g.eval.ast_module = mod; /* kept */
	/* taken when the guard arms, before the program could put another
	 * _string in sys.modules */
	mod = py.PyImport_ImportModule("_string");
	sb_g.eval.fmt_parser =
		mod ? py.PyObject_GetAttrString(mod, "formatter_parser") : NULL;
	sb_g.eval.fmt_split =
		mod ? py.PyObject_GetAttrString(mod, "formatter_field_name_split")
		    : NULL;
	py.Py_DecRef(mod);
	if (!sb_g.eval.fmt_parser || !sb_g.eval.fmt_split)
		return -1;
	if (!sb_g.eval.ast_class || !sb_g.eval.ast_name ||
	    !sb_g.eval.ast_load || !sb_g.eval.ast_call ||
	    !sb_g.eval.ast_expr || !sb_g.eval.ast_boolop ||
	    !sb_g.eval.ast_and)
		return -1;
	sb_g.eval.str_tick = intern("__sb_tick__", &ok);
	sb_g.eval.str_enter = intern("__sb_enter__", &ok);
	sb_g.eval.tick_fn =
		ok ? py.PyCFunction_NewEx(&ev_tick_def, NULL, NULL) : NULL;
	sb_g.eval.enter_fn =
		sb_g.eval.tick_fn
			? py.PyCFunction_NewEx(&ev_enter_def, NULL, NULL)
			: NULL;
	if (!sb_g.eval.enter_fn)
		return -1;
	sys = py.PyImport_ImportModule("sys");
	if (!sys)
		return -1;
	ev.module_type = ev.PyObject_Type(sys);
	py.Py_DecRef(sys);
	sb_g.eval.cache = py.PyDict_New();
	sb_g.eval.compiled = py.PyDict_New();
	if (!sb_g.eval.cache || !sb_g.eval.compiled)
		return -1;
	*state = 1;
	return 0;
}

/* builtins.compile before the guard wraps it, and the builtins' dict. */
static int take_builtins(void)
{
	PyObject *bmod = py.PyImport_ImportModule("builtins");

	if (!bmod)
		return -1;
	sb_g.eval.builtins_dict = py.PyModule_GetDict(bmod);
	sb_g.eval.raw_compile = py.PyObject_GetAttrString(bmod, "compile");
	return sb_g.eval.raw_compile ? 0 : -1;
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
	sb_g.eval.no_fast_path = getenv("PYSB_EVAL_NO_FAST_PATH") != NULL;
	if (arm_checker() < 0 || sb_guard_load_package() < 0)
		return -1;
	mods = py.PyImport_GetModuleDict();
	mod = py.PyDict_GetItemString(mods, "pysandboxes.e");
	sb_g.eval.exc_syntax = exc_attr(mod, "EvalSyntaxRejected");
	sb_g.eval.exc_perm = exc_attr(mod, "RuleEvalPermissionError");
	sb_g.eval.exc_interrupted = exc_attr(mod, "EvalInterrupted");
	if (!sb_g.eval.exc_syntax || !sb_g.eval.exc_perm ||
	    !sb_g.eval.exc_interrupted)
		return -1;
	sb_g.eval.nprofiles = pol->eval_profiles.n;
	sb_g.eval.profiles = sb_arena_alloc(
		sb_g.arena, sb_g.eval.nprofiles * sizeof(*sb_g.eval.profiles));
	for (i = 0; i < sb_g.eval.nprofiles; i++) {
		struct ev_profile *p = &sb_g.eval.profiles[i];

		p->rules = &pol->eval_profiles.v[i];
		p->label = p->rules->name[0] ? p->rules->name : "default";
		if (!p->rules->name[0])
			sb_g.eval.default_profile = (long)i;
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
	ev_install_allocator(EV_MEM_MEM, &sb_g.eval.mem_orig);
	ev_install_allocator(EV_MEM_OBJ, &sb_g.eval.obj_orig);
	return 0;
}

/* ---- learning ---- */

static struct ev_profile *learn_profile(void)
{
	struct sb_eval_profile *defaults = &sb_g.eval.learn_defaults;
	struct ev_profile *synthetic = &sb_g.eval.learn_synthetic;
	bool ok = true;

	if (arm_checker() < 0)
		return NULL;
	if (sb_g.eval.default_profile >= 0)
		return &sb_g.eval.profiles[sb_g.eval.default_profile];
	if (!synthetic->rules) {
		defaults->name = "";
		sb_eval_profile_defaults(defaults);
		synthetic->label = "default";
		synthetic->filename = intern("<eval:default>", &ok);
		if (!ok)
			return NULL;
		synthetic->rules = defaults;
	}
	return synthetic;
}

/* The modules and program-running callables a caller's context hands
 * over, acknowledged as warn_context() asks when enforced. */
static void learn_context(struct ev_profile *p, PyObject *g)
{
	Py_ssize_t pos = 0;
	char what[160], rule[200];
	const char *key;

	while ((key = next_strong(p, g, &pos, what, sizeof(what)))) {
		snprintf(rule, sizeof(rule), "eval-call=%.150s", key);
		sb_learn_record("eval", rule, NULL);
	}
}

bool sb_eval_learn(const char *which, PyObject *args, PyObject *kw)
{
	struct ev_profile *p = learn_profile();
	struct ev_check c = { .p = p, .learn = true };
	PyObject *src = p ? sb_arg(args, kw, 0, "source") : NULL;
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
		m = sb_arg(args, kw, 2, "mode");
		mode = m ? py.PyUnicode_AsUTF8AndSize(m, NULL) : NULL;
		if (!mode || !mode_known(mode))
			goto out; /* the original says why */
	} else {
		g = sb_arg(args, kw, 1, "globals");
		if (g && py.PyObject_IsInstance(g, ev.dict_type) != 1)
			g = NULL;
	}
	/* the names the enforcing run will take from the caller's globals */
	if (p->rules->scalar[SB_EVAL_NAMESPACE] != SB_EVAL_NS_CLOSED)
		c.names = g;
	if (py.PyObject_IsInstance(src, sb_g.eval.ast_class) == 1) {
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
	/* and through which builtin, in case the run also needs it raw
	 * (learn_rules.c, gen_api) */
	if (tree && ev_check_tree(&c, tree) == 0) {
		char via[48];

		snprintf(via, sizeof(via), "eval-on=builtins.%.20s", which);
		sb_learn_record("eval", via, NULL);
	}
	if (c.names)
		learn_context(p, c.names);
out:
	ev_check_free(&c);
	py.Py_DecRef(tree);
	py.Py_DecRef(text);
	py.PyErr_Clear();
	return handled;
}

void sb_eval_learn_compiled(PyObject *code)
{
	if (!sb_g.eval.compiled ||
	    py.PyObject_IsInstance(code, ev.code_type) != 1 ||
	    register_ours(code) < 0)
		py.PyErr_Clear();
}
