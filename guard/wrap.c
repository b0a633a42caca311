/* wrap.c - the C wrappers that replace a module attribute (or a class's
 * method) while keeping the original out of Python's reach: the wrapper is
 * a builtin function bound to its module like the original (it pickles by
 * name, inspect reads its signature), the original is held here only, and
 * the os.supports_* sets get the wrapper too. The families say what each
 * wrapper judges; this file only installs them and routes a call to them
 * while the guard is armed. It also makes the guard's own calls of Python
 * code (sb_guard_call), busy so that their events pass.
 */
#include "guard.h"

#include <stdio.h>
#include <string.h>

static PyObject *run_wrap(struct sb_wrap *w, PyObject *args, PyObject *kwargs)
{
	if (!sb_g.armed || sb_guard_is_busy()) {
		if (sb_g.halted) { /* stopped judging: nothing passes */
			sb_guard_refuse_halted();
			return NULL;
		}
		return sb_wrap_call_original(w, args, kwargs);
	}
	return w->call(w, args, kwargs);
}

static PyObject *wrap_trampoline(PyObject *self, PyObject *args,
				 PyObject *kwargs)
{
	struct sb_wrap *w = py.PyCapsule_GetPointer(self, "pysb.wrap");

	return w ? run_wrap(w, args, kwargs) : NULL;
}

/* A module-level wrapper is a builtin function bound to its module, as the
 * original is: its __self__ is the module, so it pickles by name
 * (pickle.dumps(os.stat)) and inspect.signature() reads the original's
 * text signature. The C function then cannot find its wrap from 'self':
 * each wrapper gets a trampoline of its own, from this fixed set (64, more
 * than the guard installs; past them, the capsule-bound form), each serving
 * the wrap in sb_g.wrap.slots[] at its index. */
#define SB_SLOT(n)                                                             \
	static PyObject *slot_##n(PyObject *self, PyObject *args,              \
				  PyObject *kwargs)                            \
	{                                                                      \
		(void)self;                                                    \
		return run_wrap(sb_g.wrap.slots[n], args, kwargs);             \
	}
#define SB_SLOT8(a)                                                            \
	SB_SLOT(a##0) SB_SLOT(a##1) SB_SLOT(a##2) SB_SLOT(a##3)                \
	SB_SLOT(a##4) SB_SLOT(a##5) SB_SLOT(a##6) SB_SLOT(a##7)
SB_SLOT8(0) SB_SLOT8(1) SB_SLOT8(2) SB_SLOT8(3)
SB_SLOT8(4) SB_SLOT8(5) SB_SLOT8(6) SB_SLOT8(7)

#define SB_SLOT_ENTRY(n) { n, slot_##n },
#define SB_SLOT_ENTRY8(a)                                                      \
	SB_SLOT_ENTRY(a##0) SB_SLOT_ENTRY(a##1) SB_SLOT_ENTRY(a##2)            \
	SB_SLOT_ENTRY(a##3) SB_SLOT_ENTRY(a##4) SB_SLOT_ENTRY(a##5)            \
	SB_SLOT_ENTRY(a##6) SB_SLOT_ENTRY(a##7)
static const struct {
	int index;
	PyObject *(*fn)(PyObject *, PyObject *, PyObject *);
} slot_table[] = { SB_SLOT_ENTRY8(0) SB_SLOT_ENTRY8(1) SB_SLOT_ENTRY8(2)
		   SB_SLOT_ENTRY8(3) SB_SLOT_ENTRY8(4) SB_SLOT_ENTRY8(5)
		   SB_SLOT_ENTRY8(6) SB_SLOT_ENTRY8(7) };

/* Is v a default inspect can read back from a text signature (its repr
 * is a literal): exactly an int, a bool, a str or None? */
static bool plain_default(PyObject *v)
{
	PyObject *t, *f, *bt;
	bool yes;

	if (v == py._Py_NoneStruct)
		return true;
	t = py.PyObject_Type(v);
	f = py.PyBool_FromLong(0);
	bt = f ? py.PyObject_Type(f) : NULL;
	yes = t && (t == py.PyLong_Type || t == py.PyUnicode_Type ||
		    (bt && t == bt));
	py.Py_DecRef(bt);
	py.Py_DecRef(f);
	py.Py_DecRef(t);
	py.PyErr_Clear();
	return yes;
}

/* Append "pre" + text to the signature being built in buf (with ", "
 * before every piece but the first); false when it does not fit. */
static bool sig_add(char *buf, size_t size, size_t *len, const char *pre,
		    const char *text)
{
	int k = snprintf(buf + *len, size - *len, "%s%s%s",
			 *len > 1 ? ", " : "", pre, text);

	if (k < 0 || (size_t)k >= size - *len)
		return false;
	*len += (size_t)k;
	return true;
}

/* Parameter 'name' (a str), with "=repr(dflt)" when dflt is given; false
 * when it does not fit or the default is not plain. */
static bool sig_param(char *buf, size_t size, size_t *len, const char *pre,
		      PyObject *name, PyObject *dflt)
{
	const char *n = name ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	PyObject *r = NULL;
	const char *d = NULL;
	char one[512];
	bool ok;

	if (!n)
		return false;
	if (dflt && plain_default(dflt) && (r = py.PyObject_Repr(dflt)))
		d = py.PyUnicode_AsUTF8AndSize(r, NULL);
	ok = (!dflt || d) &&
	     (size_t)snprintf(one, sizeof(one), "%s%s%s", n, d ? "=" : "",
			      d ? d : "") < sizeof(one) &&
	     sig_add(buf, size, len, pre, one);
	py.Py_DecRef(r);
	return ok;
}

static long code_int(PyObject *code, const char *attr)
{
	PyObject *v = py.PyObject_GetAttrString(code, attr);
	long n = v ? py.PyLong_AsLong(v) : -1;

	py.Py_DecRef(v);
	return n;
}

#define SB_CO_VARARGS 0x04
#define SB_CO_VARKEYWORDS 0x08

/* The text signature of a Python function ("(cmd, mode='r', *args,
 * **kw)"), read from its code object and defaults, in the arena; NULL when
 * it has none, or a default is no plain literal (inspect reads the text
 * back as Python). os.popen, os.execl and the like are Python functions. */
static const char *function_signature(PyObject *fn)
{
	PyObject *code = py.PyObject_GetAttrString(fn, "__code__");
	PyObject *names = NULL, *dflts = NULL, *kwd = NULL, *name;
	long argc = -1, posonly = -1, kwonly = -1, flags = -1, i, nd = 0;
	char buf[1024] = "(";
	size_t len = 1;
	bool ok = false;

	if (code) {
		argc = code_int(code, "co_argcount");
		posonly = code_int(code, "co_posonlyargcount");
		kwonly = code_int(code, "co_kwonlyargcount");
		flags = code_int(code, "co_flags");
		names = py.PyObject_GetAttrString(code, "co_varnames");
		dflts = py.PyObject_GetAttrString(fn, "__defaults__");
		kwd = py.PyObject_GetAttrString(fn, "__kwdefaults__");
	}
	if (argc < 0 || posonly < 0 || kwonly < 0 || flags < 0 || !names ||
	    !dflts || !kwd ||
	    py.PyTuple_Size(names) < argc + kwonly +
					     !!(flags & SB_CO_VARARGS) +
					     !!(flags & SB_CO_VARKEYWORDS))
		goto out;
	if (dflts != py._Py_NoneStruct)
		nd = py.PyTuple_Size(dflts);
	if (nd < 0 || nd > argc)
		goto out;
	for (i = 0; i < argc; i++) {
		PyObject *d = i >= argc - nd
				      ? py.PyTuple_GetItem(dflts, i - argc + nd)
				      : NULL;

		if (!sig_param(buf, sizeof(buf), &len, "",
			       py.PyTuple_GetItem(names, i), d))
			goto out;
		if (i == posonly - 1 &&
		    !sig_add(buf, sizeof(buf), &len, "", "/"))
			goto out;
	}
	if (flags & SB_CO_VARARGS) {
		name = py.PyTuple_GetItem(names, argc + kwonly);
		if (!sig_param(buf, sizeof(buf), &len, "*", name, NULL))
			goto out;
	} else if (kwonly > 0 && !sig_add(buf, sizeof(buf), &len, "", "*")) {
		goto out;
	}
	for (i = 0; i < kwonly; i++) {
		name = py.PyTuple_GetItem(names, argc + i);
		if (!sig_param(buf, sizeof(buf), &len, "", name,
			       kwd == py._Py_NoneStruct
				       ? NULL
				       : py.PyDict_GetItem(kwd, name)))
			goto out;
	}
	if (flags & SB_CO_VARKEYWORDS) {
		name = py.PyTuple_GetItem(
			names, argc + kwonly + !!(flags & SB_CO_VARARGS));
		if (!sig_param(buf, sizeof(buf), &len, "**", name, NULL))
			goto out;
	}
	ok = len + 2 <= sizeof(buf);
	if (ok)
		strcat(buf, ")");
out:
	py.Py_DecRef(code);
	py.Py_DecRef(names);
	py.Py_DecRef(dflts);
	py.Py_DecRef(kwd);
	py.PyErr_Clear();
	return ok ? sb_arena_strdup(sb_g.arena, buf) : NULL;
}

/* The original's docstring with its text signature in front, the form
 * CPython keeps in ml_doc ("stat($module, /, path, ...)\n--\n\n..."), so
 * that __text_signature__ and __doc__ of a replacement named 'name' read
 * as the original's. NULL when it has neither. The wrappers and the API
 * deniers (api.c) both use it. */
const char *sb_wrap_doc(PyObject *original, const char *name)
{
	PyObject *sig = py.PyObject_GetAttrString(original,
						  "__text_signature__");
	PyObject *doc = py.PyObject_GetAttrString(original, "__doc__");
	const char *s = NULL, *d = NULL, *out = NULL;

	if (sig && py.PyObject_IsInstance(sig, py.PyUnicode_Type) == 1)
		s = py.PyUnicode_AsUTF8AndSize(sig, NULL);
	else
		s = function_signature(original);
	if (doc && py.PyObject_IsInstance(doc, py.PyUnicode_Type) == 1)
		d = py.PyUnicode_AsUTF8AndSize(doc, NULL);
	if (s)
		out = sb_arena_printf(sb_g.arena, "%s%s\n--\n\n%s", name, s,
				      d ? d : "");
	else if (d)
		out = sb_arena_strdup(sb_g.arena, d);
	py.Py_DecRef(sig);
	py.Py_DecRef(doc);
	py.PyErr_Clear();
	return out;
}

PyObject *sb_wrap_call_original(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs)
{
	return py.PyObject_Call(w->original, args, kwargs);
}

PyObject *sb_guard_call(PyObject *fn, PyObject *args)
{
	PyObject *res;

	if (!args)
		return NULL;
	/* not busy: what it calls is Python code the program can reach (an
	 * exception class's __init__, importlib's helpers given the
	 * program's globals, the scandir iterator's methods) and replace,
	 * by a C callable too (posix.system as __init__ ran the refusal's
	 * message as a command); it raises no event of the guard's own */
	res = py.PyObject_CallObject(fn, args);
	py.Py_DecRef(args);
	return res;
}

PyObject *sb_guard_call1(PyObject *fn, PyObject *arg)
{
	PyObject *args = py.PyTuple_New(1);

	if (args) {
		py.Py_IncRef(arg);
		py.PyTuple_SetItem(args, 0, arg);
	}
	return sb_guard_call(fn, args);
}

static int set_in_module(const char *module, const char *attr, PyObject *fn,
			 PyObject *original)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod = mods ? py.PyDict_GetItemString(mods, module) : NULL;
	PyObject *cur;

	if (!mod)
		return 0;
	cur = py.PyObject_GetAttrString(mod, attr);
	if (!cur) {
		py.PyErr_Clear();
		return 0;
	}
	/* only where the module still holds the original (or our wrapper) */
	if (cur == original || cur == fn) {
		py.Py_DecRef(cur);
		return py.PyObject_SetAttrString(mod, attr, fn);
	}
	py.Py_DecRef(cur);
	return 0;
}

int sb_wrap_install(struct sb_wrap *w)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod;

	if (w->fn)
		return 0;
	mod = mods ? py.PyDict_GetItemString(mods, w->module) : NULL;
	if (!mod)
		return 0;
	return sb_wrap_install_in(w, mod);
}

int sb_wrap_install_in(struct sb_wrap *w, PyObject *mod)
{
	PyObject *capsule;

	if (w->fn)
		return 0;
	w->original = py.PyObject_GetAttrString(mod, w->attr);
	if (!w->original) {
		py.PyErr_Clear(); /* not on this version or platform */
		return 0;
	}
	w->def.ml_name = w->attr;
	w->def.ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	w->def.ml_doc = sb_wrap_doc(w->original, w->attr);
	if (sb_g.wrap.used < SB_ARRAY_LEN(slot_table)) {
		PyObject *modname = py.PyUnicode_FromString(w->module);

		if (!modname)
			return -1;
		sb_g.wrap.slots[slot_table[sb_g.wrap.used].index] = w;
		w->def.ml_meth = (void *)slot_table[sb_g.wrap.used].fn;
		sb_g.wrap.used++;
		w->fn = py.PyCFunction_NewEx(&w->def, mod, modname);
		py.Py_DecRef(modname);
	} else {
		w->def.ml_meth = (void *)wrap_trampoline;
		capsule = py.PyCapsule_New(w, "pysb.wrap", NULL);
		if (!capsule)
			return -1;
		w->fn = py.PyCFunction_NewEx(&w->def, capsule, NULL);
		py.Py_DecRef(capsule);
	}
	if (!w->fn)
		return -1;
	if (!sb_g.wrap.cfunction_type)
		sb_g.wrap.cfunction_type = py.PyObject_Type(w->fn);
	if (py.PyObject_SetAttrString(mod, w->attr, w->fn) < 0)
		return -1;
	if (w->also && set_in_module(w->also, w->attr, w->fn, w->original) < 0)
		return -1;
	if (sb_g.wrap.n_installed == SB_ARRAY_LEN(sb_g.wrap.installed)) {
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "too many wrappers to follow their modules");
		return -1;
	}
	sb_g.wrap.installed[sb_g.wrap.n_installed++] = w;
	return sb_guard_replace_in_os_sets(w->original, w->fn);
}

/* ---- a module made again ---- */

/* A module the import machinery has just made (or filled): when it is a
 * copy of one whose functions are wrapped, as `del sys.modules["posix"]`
 * then `import posix` gives (a fresh copy, from the interpreter's own
 * table, holds the originals), it gets the same wrappers. 0, or -1 with
 * an exception: the module is then not handed out. The import guard calls
 * it from its _imp wrappers (imports.c). */
int sb_wrap_adopt_module(PyObject *mod, const char *name)
{
	int rc = 0;
	size_t i;

	for (i = 0; name && rc == 0 && i < sb_g.wrap.n_installed; i++) {
		struct sb_wrap *w = sb_g.wrap.installed[i];
		PyObject *cur;

		if (strcmp(w->module, name) != 0 &&
		    !(w->also && strcmp(w->also, name) == 0))
			continue;
		cur = py.PyObject_GetAttrString(mod, w->attr);
		if (!cur) {
			py.PyErr_Clear();
			continue;
		}
		if (cur != w->fn)
			rc = py.PyObject_SetAttrString(mod, w->attr, w->fn);
		py.Py_DecRef(cur);
	}
	return rc;
}

void sb_wrap_take_get_referents(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	bool loaded = mods && py.PyDict_GetItemString(mods, "gc");
	PyObject *gc = py.PyImport_ImportModule("gc");
	PyObject *fn = gc ? py.PyObject_GetAttrString(gc, "get_referents")
			  : NULL;

	if (fn && sb_wrap_genuine(fn, gc, "get_referents"))
		sb_g.wrap.get_referents = fn;
	else if (fn)
		py.Py_DecRef(fn);
	py.Py_DecRef(gc);
	/* the program finds sys.modules as python leaves it: no gc there
	 * (its own import of gc is judged as the import it is) */
	if (!loaded && mods && py.PyDict_GetItemString(mods, "gc")) {
		PyObject *key = py.PyUnicode_FromString("gc");

		if (key) {
			py.PyDict_DelItem(mods, key);
			py.Py_DecRef(key);
		}
	}
	py.PyErr_Clear();
}

/* Is 'fn' the C function 'name' of module 'mod' itself? It runs while the
 * guard is busy, when the events of the thread pass: code the program put
 * in its place must not. Only the module's own builtin functions are
 * bound to the module object with that name. */
bool sb_wrap_genuine(PyObject *fn, PyObject *mod, const char *name)
{
	PyObject *type, *self, *n;
	const char *s;
	bool yes;

	if (!fn)
		return false;
	type = py.PyObject_Type(fn);
	self = py.PyObject_GetAttrString(fn, "__self__");
	n = py.PyObject_GetAttrString(fn, "__name__");
	s = n && py.PyObject_IsInstance(n, py.PyUnicode_Type) == 1
		    ? py.PyUnicode_AsUTF8AndSize(n, NULL)
		    : NULL;
	yes = type && type == sb_g.wrap.cfunction_type && self == mod && s &&
	      strcmp(s, name) == 0;
	py.Py_DecRef(type);
	py.Py_DecRef(self);
	py.Py_DecRef(n);
	py.PyErr_Clear();
	return yes;
}

/* cls.name = v. A C class is immutable (a static type before 3.10,
 * Py_TPFLAGS_IMMUTABLETYPE after) and setattr refuses it: the value then
 * goes into the dict behind cls.__dict__ (the one object gc sees behind
 * the proxy), and the type's attribute caches are told, as type_setattro
 * does for a name that is no slot. The result is read back through the
 * proxy: a gc module the program replaced cannot make it set another
 * dict. 0, or -1 with an exception set. */
int sb_wrap_set_on_class(PyObject *cls, const char *name, PyObject *v)
{
	PyObject *proxy, *gc = NULL, *refs = NULL, *key = NULL, *cur = NULL;
	int r = -1;

	if (py.PyObject_SetAttrString(cls, name, v) == 0)
		return 0;
	if (!py.PyErr_ExceptionMatches(PY_EXC(PyExc_TypeError)))
		return -1;
	py.PyErr_Clear();
	proxy = py.PyObject_GetAttrString(cls, "__dict__");
	if (!proxy)
		return -1;
	if (sb_g.wrap.get_referents) {
		/* its event passes as the guard's own: a C function, no frame */
		sb_guard_busy_enter();
		refs = sb_guard_call1(sb_g.wrap.get_referents, proxy);
		sb_guard_busy_leave();
	}
	gc = refs ? NULL : py.PyImport_ImportModule("gc");
	if (gc) {
		PyObject *fn = py.PyObject_GetAttrString(gc, "get_referents");

		py.PyErr_Clear();
		/* the API guard's denier stands there, its original aside */
		if (!sb_wrap_genuine(fn, gc, "get_referents")) {
			py.Py_DecRef(fn);
			fn = sb_api_original("gc.get_referents");
			if (fn)
				py.Py_IncRef(fn);
		}
		refs = sb_wrap_genuine(fn, gc, "get_referents")
			       ? sb_guard_call1(fn, proxy)
			       : NULL;
		py.Py_DecRef(fn);
	}
	key = py.PyUnicode_FromString(name);
	if (refs && key && py.PyList_Size(refs) == 1 &&
	    py.PyDict_SetItem(py.PyList_GetItem(refs, 0), key, v) == 0) {
		py.PyType_Modified(cls);
		cur = py.PyObject_GetItem(proxy, key);
	}
	py.PyErr_Clear();
	if (cur == v)
		r = 0;
	else
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "cannot wrap a method of a C class");
	py.Py_DecRef(cur);
	py.Py_DecRef(key);
	py.Py_DecRef(refs);
	py.Py_DecRef(gc);
	py.Py_DecRef(proxy);
	return r;
}

int sb_wrap_install_on_class(struct sb_wrap *w, PyObject *cls,
			     const char *name)
{
	PyObject *capsule, *meth;
	int r;

	if (w->fn)
		return 0;
	w->original = py.PyObject_GetAttrString(cls, name);
	if (!w->original) {
		py.PyErr_Clear(); /* not on this version or build */
		return 0;
	}
	w->def.ml_name = name;
	w->def.ml_meth = (void *)wrap_trampoline;
	w->def.ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	capsule = py.PyCapsule_New(w, "pysb.wrap", NULL);
	w->fn = capsule ? py.PyCFunction_NewEx(&w->def, capsule, NULL) : NULL;
	py.Py_DecRef(capsule);
	meth = w->fn ? py.PyInstanceMethod_New(w->fn) : NULL;
	r = meth ? sb_wrap_set_on_class(cls, name, meth) : -1;
	py.Py_DecRef(meth);
	return r;
}

/* A method: w->attr is "Class.method" in w->module; the original is the
 * function found on the class, and the wrapper is bound like a method, so
 * it gets the instance as its first argument. */
int sb_wrap_install_method(struct sb_wrap *w)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod, *cls;
	const char *dot = strchr(w->attr, '.');
	char cname[128];
	int r;

	if (w->fn || !dot || (size_t)(dot - w->attr) >= sizeof(cname))
		return 0;
	mod = mods ? py.PyDict_GetItemString(mods, w->module) : NULL;
	if (!mod)
		return 0;
	memcpy(cname, w->attr, (size_t)(dot - w->attr));
	cname[dot - w->attr] = '\0';
	cls = py.PyObject_GetAttrString(mod, cname);
	if (!cls) {
		py.PyErr_Clear();
		return 0;
	}
	r = sb_wrap_install_on_class(w, cls, dot + 1);
	py.Py_DecRef(cls);
	return r;
}

/* os.supports_dir_fd, supports_fd, supports_follow_symlinks and
 * supports_effective_ids hold the function objects themselves: put the
 * replacement there too, or the sets hand the originals back. */
int sb_guard_replace_in_os_sets(PyObject *original, PyObject *fn)
{
	static const char *const sets[] = { "supports_dir_fd", "supports_fd",
					    "supports_follow_symlinks",
					    "supports_effective_ids" };
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *os = mods ? py.PyDict_GetItemString(mods, "os") : NULL;
	size_t i;

	if (!os)
		return 0;
	for (i = 0; i < SB_ARRAY_LEN(sets); i++) {
		PyObject *set = py.PyObject_GetAttrString(os, sets[i]);
		int has;

		if (!set) {
			py.PyErr_Clear();
			continue;
		}
		has = py.PySet_Contains(set, original);
		if (has == 1 && (py.PySet_Discard(set, original) < 0 ||
				 py.PySet_Add(set, fn) < 0)) {
			py.Py_DecRef(set);
			return -1;
		}
		if (has < 0)
			py.PyErr_Clear();
		py.Py_DecRef(set);
	}
	return 0;
}
