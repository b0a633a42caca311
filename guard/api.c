/* api.c - the sensitive-API guard (py-sandboxes(5), python-api=).
 *
 * Two mechanisms over the one registry table (src/policy/api_registry.c):
 * - every registered function the policy denies is replaced, in the module
 *   that holds it, by a C "denier" that raises RuleApiPermissionError before
 *   anything runs. Deniers are installed when the guard arms and again after
 *   every import, so a module loaded later (or an alias bound at its import,
 *   like subprocess._fork_exec) gets them too. Classes are not replaced
 *   (isinstance and subclassing keep working): their audit events judge them.
 * - the audit events of CPython judge what the originals do whoever holds
 *   them: os.system, os.exec, subprocess.Popen, ctypes.dlopen, the C
 *   Unpickler's find_class, sys._getframe, gc.get_objects... Each event is
 *   mapped to the registry entry that names its door.
 * Dynamic code (eval, exec, compile) is refused from application code and
 * exempt for code that the runtime and libraries run, decided by the file of
 * the calling frame (2.6.7).
 */
#include "guard.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_registry.h"
#include "eval.h"


static bool allowed(long idx)
{
	return sb_g.policy->api_allow && sb_g.policy->api_allow[idx];
}

/* Frame readers stay usable by the standard library (namedtuple, logging
 * and warnings look at their caller's frame); the C denier adds no frame,
 * so the original keeps its depth semantics. */
static bool library_may_call(const char *qualname)
{
	static const char *const readers[] = { "_getframe",
					       "_getframemodulename", NULL };

	return (strcmp(qualname, "sys._getframe") == 0 ||
		strcmp(qualname, "sys._getframemodulename") == 0) &&
	       sb_guard_library_calls(readers);
}

/* Learning: the denier set on a class (multiprocessing.Process.start) hands
 * the call to the function it replaced, which also sits, under another
 * registry name, on a base class (multiprocessing.process.BaseProcess.start).
 * Enforcing with the subclass's name allowed leaves no denier there, so the
 * lookup reaches the base class's denier: that name is learned too. Only a
 * base class of the holder counts; another subclass's name is not used. */
static int learn_base_names(long idx)
{
	PyObject *holder = sb_g.api.holders[idx];
	size_t i;

	if (!holder)
		return 0;
	for (i = 0; i < sb_api_registry_len; i++) {
		PyObject *base = sb_g.api.holders[i];

		if ((long)i == idx || !base ||
		    sb_g.api.originals[i] != sb_g.api.originals[idx])
			continue;
		if (py.PyObject_IsSubclass(holder, base) != 1) {
			py.PyErr_Clear();
			continue;
		}
		if (sb_learn_record("api", sb_api_registry[i].qualname,
				    NULL) < 0)
			return -1;
	}
	return 0;
}

/* The registry index of the denier bound to 'self' (its module of its
 * own, or a capsule holding index + 1), or -1 with an exception set. */
static long denier_index(PyObject *self)
{
	size_t i;

	for (i = 0; i < sb_api_registry_len; i++)
		if (sb_g.api.selves[i] == self)
			return (long)i;
	return (long)(intptr_t)py.PyCapsule_GetPointer(self, "pysb.deny") - 1;
}

static PyObject *denier_call(PyObject *self, PyObject *args, PyObject *kw)
{
	long idx = denier_index(self);
	const struct sb_api_entry *e;

	if (idx < 0 || py.PyErr_Occurred())
		return NULL;
	e = &sb_api_registry[idx];
	if (sb_guard_is_busy() || library_may_call(e->qualname))
		return py.PyObject_Call(sb_g.api.originals[idx], args, kw);
	if (sb_g.learning) {
		if (sb_learn_record("api", e->qualname, NULL) < 0 ||
		    learn_base_names(idx) < 0) {
			sb_guard_refuse_halted();
			return NULL;
		}
		return py.PyObject_Call(sb_g.api.originals[idx], args, kw);
	}
	sb_guard_raise_api(e->qualname, sb_api_category_name(e->category));
	return NULL;
}

/* Is the module still running its own code (an import in progress)? Its
 * attributes may not exist yet: ask again after the import. */
static bool initializing(PyObject *mod)
{
	PyObject *d = py.PyModule_GetDict(mod);
	PyObject *spec = d ? py.PyDict_GetItemString(d, "__spec__") : NULL;
	PyObject *flag;
	bool busy = false;

	if (!spec) {
		py.PyErr_Clear();
		return false;
	}
	py.Py_IncRef(spec);
	flag = py.PyObject_GetAttrString(spec, "_initializing");
	py.Py_DecRef(spec);
	if (!flag) {
		py.PyErr_Clear();
		return false;
	}
	busy = py.PyObject_IsTrue(flag) == 1;
	py.Py_DecRef(flag);
	return busy;
}

/* mod.attr from the module's dictionary (new reference, or NULL with
 * no exception): no module __getattr__, no __getattribute__ of a module
 * subclass runs. */
static PyObject *module_attr(PyObject *mod, const char *attr)
{
	PyObject *d = py.PyModule_GetDict(mod);
	PyObject *v = d ? py.PyDict_GetItemString(d, attr) : NULL;

	py.PyErr_Clear();
	if (v)
		py.Py_IncRef(v);
	return v;
}

/* The denier of entry idx for a class: bound to a capsule holding idx + 1
 * and named by its qualname (the class wraps it as an instance method). */
static PyObject *class_denier(long idx)
{
	PyObject *capsule, *fn;

	sb_g.api.defs[idx].ml_name = sb_api_registry[idx].qualname;
	sb_g.api.defs[idx].ml_meth = (void *)denier_call;
	sb_g.api.defs[idx].ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	capsule = py.PyCapsule_New((void *)(intptr_t)(idx + 1), "pysb.deny",
				   NULL);
	fn = capsule ? py.PyCFunction_NewEx(&sb_g.api.defs[idx], capsule,
					    NULL)
		     : NULL;
	py.Py_DecRef(capsule);
	return fn;
}

/* The denier of entry idx for a module's attribute: a builtin
 * function named by the attribute of the module named by the qualname less it, bound
 * to a module object as the original is, with the original's signature,
 * so that it reads as the original does (repr, inspect.signature) and
 * pickles by name (pickle.dumps(os.fork) names os.fork, which this denier
 * is). The module it is bound to is an empty one of its own: the call
 * finds its entry by it (denier_index), and nothing the program can write
 * changes which. */
static PyObject *module_denier(long idx)
{
	const char *q = sb_api_registry[idx].qualname;
	const char *attr = strrchr(q, '.') + 1; /* deny_in found a dot */
	PyObject *modname, *fn;
	char *name;

	name = sb_arena_strndup(sb_g.arena, q, (size_t)(attr - q) - 1);
	if (!name)
		return NULL;
	if (!sb_g.api.selves[idx]) {
		sb_g.api.selves[idx] = py.PyModule_New(name);
		if (!sb_g.api.selves[idx])
			return NULL;
	}
	sb_g.api.defs[idx].ml_name = attr;
	sb_g.api.defs[idx].ml_meth = (void *)denier_call;
	sb_g.api.defs[idx].ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	sb_g.api.defs[idx].ml_doc =
		sb_wrap_doc(sb_g.api.originals[idx], attr);
	modname = py.PyUnicode_FromString(name);
	if (!modname)
		return NULL;
	fn = py.PyCFunction_NewEx(&sb_g.api.defs[idx], sb_g.api.selves[idx],
				  modname);
	py.Py_DecRef(modname);
	return fn;
}

/* Replace attr[.attr] of the module object mod by a denier of entry idx
 * (its qualname less the module). 0 (also when the attribute is absent:
 * *absent is then set), or -1 on error. */
static int deny_in(long idx, PyObject *mod, bool *absent)
{
	const struct sb_api_entry *e = &sb_api_registry[idx];
	PyObject *parent = mod, *cur, *fn;
	char path[256], *dot, *attr;
	size_t mlen = strcspn(e->qualname, ".");
	bool is_class;
	int r;

	*absent = false;
	if (strlen(e->qualname) >= sizeof(path))
		return 0;
	py.Py_IncRef(parent);
	strcpy(path, e->qualname + mlen + 1);
	attr = path;
	/* walk to the object that holds the last attribute; the module's
	 * own from its dictionary: a module the program put in sys.modules
	 * may have a __getattr__, called here, busy, with the name */
	while ((dot = strchr(attr, '.'))) {
		*dot = '\0';
		cur = parent == mod ? module_attr(mod, attr)
				    : py.PyObject_GetAttrString(parent, attr);
		py.Py_DecRef(parent);
		if (!cur) {
			py.PyErr_Clear();
			*absent = true; /* absent on this version */
			return 0;
		}
		parent = cur;
		attr = dot + 1;
	}
	cur = parent == mod ? module_attr(mod, attr)
			    : py.PyObject_GetAttrString(parent, attr);
	if (!cur) {
		py.PyErr_Clear();
		py.Py_DecRef(parent);
		*absent = true;
		return 0;
	}
	/* kept for the library exemption and learning; a second copy of a
	 * module (_imp.create_*) is the same C function */
	if (sb_g.api.originals[idx])
		py.Py_DecRef(cur);
	else
		sb_g.api.originals[idx] = cur;
	is_class = py.PyObject_IsInstance(parent, py.PyType_Type) == 1;
	py.PyErr_Clear();
	fn = is_class ? class_denier(idx) : module_denier(idx);
	if (!fn) {
		py.Py_DecRef(parent);
		return -1;
	}
	/* on a class, the denier is bound like the method it replaces: the
	 * original then gets its self when learning lets the call through */
	if (is_class) {
		PyObject *meth = py.PyInstanceMethod_New(fn);

		if (!meth) {
			py.Py_DecRef(fn);
			py.Py_DecRef(parent);
			return -1;
		}
		r = py.PyObject_SetAttrString(parent, attr, meth);
		py.Py_DecRef(meth);
		if (r == 0) {
			py.Py_IncRef(parent);
			sb_g.api.holders[idx] = parent;
		}
	} else {
		r = py.PyObject_SetAttrString(parent, attr, fn);
	}
	if (r == 0 && sb_guard_replace_in_os_sets(sb_g.api.originals[idx],
						   fn) < 0)
		py.PyErr_Clear();
	py.Py_DecRef(fn);
	py.Py_DecRef(parent);
	if (r < 0) {
		/* an immutable type (a C class's method): events judge it */
		py.PyErr_Clear();
	}
	return 0;
}

/* Is entry idx one the deniers replace (denied, neither a class, judged by
 * its arguments nor dynamic code, which has its own wrappers)? */
static bool replaced(long idx)
{
	return !allowed(idx) &&
	       !(sb_api_registry[idx].tags & (SB_API_CLASS | SB_API_BY_ARGS)) &&
	       sb_api_registry[idx].category != SB_API_DYNAMIC_CODE;
}

/* Replace module.attr[.attr] by a denier. 0, or -1 on error. */
static int install_denier(long idx)
{
	const struct sb_api_entry *e = &sb_api_registry[idx];
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *parent;
	char path[256];
	size_t mlen = strcspn(e->qualname, ".");
	bool absent;

	if (mlen >= sizeof(path) || strlen(e->qualname) >= sizeof(path))
		return 0;
	memcpy(path, e->qualname, mlen);
	path[mlen] = '\0';
	parent = mods ? py.PyDict_GetItemString(mods, path) : NULL;
	if (!parent)
		return 0; /* not loaded yet: a later import will tell us */
	if (!py.PyModule_GetDict(parent)) {
		/* not a module (the program's object): the real one, when it
		 * loads, gets the denier */
		py.PyErr_Clear();
		return 0;
	}
	if (initializing(parent)) {
		sb_g.api.pending_init = true;
		return 0;
	}
	if (deny_in(idx, parent, &absent) < 0)
		return -1;
	sb_g.api.done[idx] = 1;
	return 0;
}

PyObject *sb_api_original(const char *qualname)
{
	long i = sb_api_lookup(qualname);

	return i >= 0 && sb_g.api.originals ? sb_g.api.originals[i] : NULL;
}

/* A module object made outside sys.modules (_imp.create_builtin,
 * create_dynamic and their exec_*: a fresh copy of _posixsubprocess held
 * the original fork_exec) gets the deniers of the module it is, 'as'
 * (its name, or the PyInit_ name of its file). 0, or -1 on error. */
int sb_api_adopt_module(PyObject *mod, const char *as)
{
	size_t i, n = strlen(as);
	bool absent;

	for (i = 0; i < sb_api_registry_len; i++) {
		const char *q = sb_api_registry[i].qualname;

		if (strncmp(q, as, n) != 0 || q[n] != '.' ||
		    !replaced((long)i))
			continue;
		if (deny_in((long)i, mod, &absent) < 0)
			return -1;
	}
	return 0;
}

static int install_deniers(void)
{
	size_t i;

	for (i = 0; i < sb_api_registry_len; i++) {
		if (sb_g.api.done[i])
			continue;
		/* classes keep their identity; eval/exec/compile have their
		 * own wrappers (dyn_call) */
		if (!replaced((long)i)) {
			sb_g.api.done[i] = 1;
			continue;
		}
		if (install_denier((long)i) < 0)
			return -1;
	}
	return 0;
}

void sb_api_module_loaded(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	Py_ssize_t n = mods ? py.PyDict_Size(mods) : -1;

	/* nothing new since the last scan: the common case, kept cheap */
	if (n == sb_g.api.modules_seen && !sb_g.api.pending_init)
		return;
	sb_g.api.modules_seen = n;
	sb_g.api.pending_init = false;
	/* not busy: it raises no event of its own, and a collection it
	 * triggers may run a finalizer of the program's (a C callable
	 * __del__) in this very frame */
	if (install_deniers() < 0)
		py.PyErr_Clear(); /* the events still judge the originals */
}

int sb_api_arm(void)
{
	sb_g.api.done = sb_arena_alloc(sb_g.arena, sb_api_registry_len + 1);
	sb_g.api.originals = sb_arena_alloc(
		sb_g.arena,
		(sb_api_registry_len + 1) * sizeof(*sb_g.api.originals));
	sb_g.api.holders = sb_arena_alloc(
		sb_g.arena,
		(sb_api_registry_len + 1) * sizeof(*sb_g.api.holders));
	sb_g.api.defs = sb_arena_alloc(
		sb_g.arena, (sb_api_registry_len + 1) * sizeof(*sb_g.api.defs));
	sb_g.api.selves = sb_arena_alloc(
		sb_g.arena,
		(sb_api_registry_len + 1) * sizeof(*sb_g.api.selves));
	sb_g.api.modules_seen = -1;
	sb_api_module_loaded();
	return py.PyErr_Occurred() ? -1 : 0;
}

/* ---- dynamic code ---- */

/* What a library frame names when it runs or builds code itself
 * (args.c sb_guard_library_makes_code): the builtin it calls, or the way it
 * builds a code object. */
static const char *const names_eval[] = { "eval", NULL };
static const char *const names_exec[] = { "exec", NULL };
static const char *const names_compile[] = { "compile", NULL };
static const char *const names_event[] = { "eval", "exec", "compile", NULL };
/* Bytecode read by a library (importlib's and zipimport's
 * marshal.loads(data), the frozen modules' _imp.get_frozen_object): the
 * line names the module, not just a loads any json.load line has. */
static const char *const names_marshal[] = { "marshal", "get_frozen_object",
					      NULL };
/* A code object built or changed by a library: types.CodeType(...), or
 * types.coroutine's co.replace(co_flags=co.co_flags | 0x100). "=name" is
 * a keyword of the call on the line (args.c const_names): a line that
 * only reads x.co_flags (inspect's) builds nothing, and a bare replace
 * would lend the exemption to every str.replace line. */
static const char *const names_code[] = {
	"CodeType", "=co_flags", "=co_consts", "=co_code", "=co_filename",
	"=co_name", "=co_qualname", "=co_names", "=co_varnames", NULL
};

static const char *const *door_names(const char *which)
{
	if (strcmp(which, "eval") == 0)
		return names_eval;
	if (strcmp(which, "exec") == 0)
		return names_exec;
	return names_compile;
}

/* Application code the exemption does not cover: not a library calling
 * the door by name to make code that way, nor code typed at the
 * prompt. */
static bool application_calls(const char *const *names, enum sb_code_way way,
			      PyObject *args)
{
	return !sb_guard_library_makes_code(names, way, args) &&
	       !sb_guard_caller_is_typed(names);
}

/* How a call of builtins.attr with args makes code: compile, or exec and
 * eval of a source string or of a code object. */
static enum sb_code_way way_of(const char *attr, PyObject *args)
{
	PyObject *src = args ? py.PyTuple_GetItem(args, 0) : NULL;

	py.PyErr_Clear();
	if (strcmp(attr, "compile") == 0)
		return SB_CODE_COMPILE;
	if (src && (py.PyObject_IsInstance(src, py.PyUnicode_Type) == 1 ||
		    py.PyObject_IsInstance(src, py.PyBytes_Type) == 1 ||
		    py.PyObject_IsInstance(src, py.PyByteArray_Type) == 1)) {
		py.PyErr_Clear();
		return SB_CODE_RUN_STRING;
	}
	py.PyErr_Clear();
	/* a code object, or what the call will refuse: the first argument
	 * may also come by keyword, which exec and eval do not take */
	return src ? SB_CODE_RUN : SB_CODE_RUN_STRING;
}

static int dynamic_code(const char *door, const char *const *names,
			enum sb_code_way way, PyObject *args)
{
	long i = sb_api_lookup(door);

	if (i >= 0 && allowed(i))
		return 0;
	if (!application_calls(names, way, args))
		return 0;
	return sb_guard_check_api(door);
}

/* The wrappers of eval/exec/compile name the exact door; the events are the
 * backstop (a code object built another way, an original kept elsewhere). */
static __thread const char *dyn_door;

static PyObject *dyn_call(struct sb_wrap *w, PyObject *args, PyObject *kw)
{
	const char *prev = dyn_door;
	PyObject *res;
	char door[64];

	snprintf(door, sizeof(door), "builtins.%s", w->attr);
	/* a module's code run in its namespace is that module's import,
	 * whoever runs it and whatever the dynamic-code rules say */
	if (w->attr[0] == 'e' && w->attr[1] == 'x' &&
	    sb_imports_run_code(args, kw) < 0)
		return NULL;
	/* with an eval-* default profile, application code is guarded
	 * (eval.c) where it would be refused (5.7); inside an evaluation,
	 * a library the evaluated code called is guarded too */
	if (!sb_g.learning &&
	    (sb_eval_running(w->attr, args, kw) ||
	     (sb_eval_enabled() &&
	      !(sb_api_lookup(door) >= 0 && allowed(sb_api_lookup(door))) &&
	      !sb_guard_library_makes_code(door_names(w->attr),
					   way_of(w->attr, args), args)))) {
		dyn_door = w->attr;
		res = sb_eval_builtin(w->attr, args, kw);
		dyn_door = prev;
		return res;
	}
	/* learning: a source the application evaluates is learned as the
	 * eval-* rules it needs, not as a dynamic-code grant (seed 4.3) */
	if (sb_g.learning && !(sb_api_lookup(door) >= 0 &&
			       allowed(sb_api_lookup(door))) &&
	    application_calls(door_names(w->attr), way_of(w->attr, args),
			      args) &&
	    sb_eval_learn(w->attr, args, kw)) {
		dyn_door = w->attr;
		res = sb_wrap_call_original(w, args, kw);
		dyn_door = prev;
		if (res && strcmp(w->attr, "compile") == 0)
			sb_eval_learn_compiled(res);
		return res;
	}
	if (dynamic_code(door, door_names(w->attr), way_of(w->attr, args),
			 args) < 0)
		return NULL;
	dyn_door = w->attr;
	res = sb_wrap_call_original(w, args, kw);
	dyn_door = prev;
	return res;
}

static struct sb_wrap dyn_wraps[] = {
	{ .module = "builtins", .attr = "eval", .call = dyn_call },
	{ .module = "builtins", .attr = "exec", .call = dyn_call },
	{ .module = "builtins", .attr = "compile", .call = dyn_call },
};

int sb_api_dyn_arm(void)
{
	size_t i;

	if (sb_eval_arm() < 0) /* takes the raw compile first */
		return -1;
	for (i = 0; i < SB_ARRAY_LEN(dyn_wraps); i++)
		if (sb_wrap_install(&dyn_wraps[i]) < 0)
			return -1;
	return 0;
}

/* ---- a signal to the program's own child ---- */

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* A pidfd of 'p' when it is a child of this process, running or not yet
 * waited for (waitid on the pidfd: ECHILD for any other process), else -1.
 * No /proc needed (Landlock may hide it). The pidfd names that process and
 * no later one that takes its number. */
static int own_child_pidfd(long p)
{
	siginfo_t si;
	int fd;

	if (p <= 0 || p > INT32_MAX || p == (long)getpid())
		return -1;
	fd = (int)syscall(SYS_pidfd_open, (pid_t)p, 0);
	if (fd < 0)
		return -1;
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si,
		   WEXITED | WNOHANG | WNOWAIT) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* os.kill(pid, sig): a signal to a child the program started passes
 * without a rule (multiprocessing's terminate(), Popen.kill()): the child
 * runs in the sandbox under the same rules. It is sent through the pidfd
 * the check opened, so a thread that reaps the child meanwhile cannot
 * turn the signal to a process that took its number since (kill(2) by
 * number could). Every other call is the original's, whose audit event
 * the rules judge. */
static PyObject *kill_call(struct sb_wrap *w, PyObject *args, PyObject *kw)
{
	long pid = -1, sig = -1;
	int fd, rc, err;

	if (!kw && py.PyTuple_Size(args) == 2) {
		pid = py.PyLong_AsLong(py.PyTuple_GetItem(args, 0));
		if (!py.PyErr_Occurred())
			sig = py.PyLong_AsLong(py.PyTuple_GetItem(args, 1));
		if (py.PyErr_Occurred()) {
			py.PyErr_Clear(); /* the original says what is wrong */
			pid = -1;
		}
	}
	if (sig < 0 || sig > INT32_MAX || (fd = own_child_pidfd(pid)) < 0)
		return sb_wrap_call_original(w, args, kw);
	/* the event other audit hooks expect, as the original raises it */
	sb_g.api.own_kill = (pid_t)pid;
	rc = py.PySys_Audit("os.kill", "in", (int)pid, (Py_ssize_t)sig);
	sb_g.api.own_kill = 0;
	if (rc < 0) {
		close(fd);
		return NULL;
	}
	rc = (int)syscall(SYS_pidfd_send_signal, fd, (int)sig, NULL, 0);
	err = errno;
	close(fd);
	if (rc < 0) {
		errno = err;
		return py.PyErr_SetFromErrno(PY_EXC(PyExc_OSError));
	}
	py.Py_IncRef(py._Py_NoneStruct);
	return py._Py_NoneStruct;
}

static struct sb_wrap kill_wrap = { .module = "posix", .attr = "kill",
				    .also = "os", .call = kill_call };

int sb_api_kill_arm(void)
{
	return sb_wrap_install(&kill_wrap);
}

/* ---- audit events ---- */

/* event -> the registry entry whose rule decides it; sorted by event */
struct door {
	const char *event;
	const char *door;
};

static const struct door doors[] = {
	{ "_thread.start_joinable_thread", "_thread.start_joinable_thread" },
	{ "_thread.start_new_thread", "_thread.start_new_thread" },
	{ "cpython.PyInterpreterState_New", "_interpreters.create" },
	{ "ctypes.call_function", "ctypes.CDLL" },
	{ "ctypes.cdata", "ctypes.cast" },
	{ "ctypes.dlopen", "ctypes.CDLL" },
	/* every symbol looked up through a library handle, pythonapi's too:
	 * ctypes raises no event when a foreign function is called */
	{ "ctypes.dlsym", "ctypes.CDLL" },
	{ "ctypes.dlsym/handle", "ctypes.CDLL" },
	{ "ctypes.string_at", "ctypes.string_at" },
	{ "ctypes.wstring_at", "ctypes.wstring_at" },
	{ "gc.get_objects", "gc.get_objects" },
	{ "gc.get_referents", "gc.get_referents" },
	{ "gc.get_referrers", "gc.get_referrers" },
	{ "os.exec", "os.execv" },
	{ "os.fork", "os.fork" },
	{ "os.forkpty", "os.forkpty" },
	{ "os.kill", "os.kill" },
	{ "os.killpg", "os.killpg" },
	{ "os.posix_spawn", "os.posix_spawn" },
	{ "os.spawn", "os.spawnv" },
	{ "os.system", "os.system" },
	{ "pickle.find_class", "pickle.loads" },
	{ "resource.prlimit", "resource.prlimit" },
	{ "resource.setrlimit", "resource.setrlimit" },
	{ "signal.pthread_kill", "signal.pthread_kill" },
	{ "subprocess.Popen", "subprocess.Popen" },
	{ "sys._current_exceptions", "sys._current_exceptions" },
	{ "sys._current_frames", "sys._current_frames" },
	{ "sys._getframe", "sys._getframe" },
	{ "sys._getframemodulename", "sys._getframemodulename" },
	{ "sys.addaudithook", "sys.addaudithook" },
	{ "sys.monitoring.register_callback",
	  "sys.monitoring.register_callback" },
	{ "sys.remote_exec", "sys.remote_exec" },
	{ "sys.setprofile", "sys.setprofile" },
	{ "sys.settrace", "sys.settrace" },
};

static int cmp_event(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/* Any entry of a category allowed? (find_class and the native calls are
 * doors every entry of their category opens) */
bool sb_api_category_opened(int category)
{
	size_t i;

	for (i = 0; i < sb_api_registry_len; i++)
		if ((int)sb_api_registry[i].category == category &&
		    allowed((long)i))
			return true;
	return false;
}

int sb_api_native_open(void)
{
	if (sb_api_category_opened(SB_API_NATIVE))
		return 1;
	if (!sb_g.learning)
		return 0;
	if (sb_learn_record("api", "ctypes.CDLL", NULL) < 0)
		return sb_guard_refuse_halted();
	return 1;
}

bool sb_api_category_granted(int category)
{
	size_t i;

	for (i = 0; i < sb_api_registry_len; i++)
		if ((int)sb_api_registry[i].category == category &&
		    !allowed((long)i))
			return false;
	return true;
}

static bool category_opened(const char *door)
{
	long d = sb_api_lookup(door);

	return d >= 0 && sb_api_category_opened(sb_api_registry[d].category);
}

/* Which unpickler raised pickle.find_class: the pure-Python one runs its
 * find_class in the standard library's pickle.py; otherwise it is the C
 * class (pickle.Unpickler, _pickle.Unpickler), since the load functions
 * that would reach it are deniers. The refusal names what ran. */
static const char *unpickler_door(void)
{
	PyObject *frame = py.PyEval_GetFrame(), *code, *name, *file;
	char fbuf[PATH_MAX];
	const char *n, *door = "pickle.Unpickler";
	size_t sl = sb_g.stdlib ? strlen(sb_g.stdlib) : 0;

	code = frame ? py.PyFrame_GetCode(frame) : NULL;
	if (!code)
		return door;
	name = py.PyObject_GetAttrString(code, "co_name");
	file = py.PyObject_GetAttrString(code, "co_filename");
	py.Py_DecRef(code);
	n = name ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	if (n && strcmp(n, "find_class") == 0 && file && sl &&
	    sb_arg_path(file, fbuf) == 1 && strncmp(fbuf, sb_g.stdlib, sl) == 0 &&
	    strcmp(fbuf + sl, "/pickle.py") == 0)
		door = "pickle._Unpickler";
	py.Py_DecRef(name);
	py.Py_DecRef(file);
	py.PyErr_Clear();
	return door;
}

/* The os.kill event kill_call raises for its own child: passed once, so
 * that a call to the original made meanwhile (an audit hook of the
 * program's) is judged by the rules. */
static bool own_kill_event(PyObject *args)
{
	PyObject *pid = py.PyTuple_GetItem(args, 0);
	long p = pid ? py.PyLong_AsLong(pid) : -1;
	bool own = p == (long)sb_g.api.own_kill;

	if (p == -1 && py.PyErr_Occurred())
		py.PyErr_Clear();
	sb_g.api.own_kill = 0;
	return own;
}

/* A compile event with no Python frame runs nothing (below). An exec
 * event with none is the interpreter's own only at its start (running the
 * main program, once) or,
 * in a REPL on a terminal, for the source it names "<stdin>". Any other is the program's: a C callable it handed to the
 * interpreter (atexit.register(eval, src, {}), a weakref callback, a
 * thread's target) runs with no frame at all. */
static bool frameless_runtime(const char *event, PyObject *args)
{
	PyObject *arg, *name;
	char buf[PATH_MAX];
	int r = 0;

	if (py.PyEval_GetFrame())
		return false; /* judged by the caller's file */
	/* a compile with no frame runs nothing: what would run the code is
	 * an exec (eval raises both), judged here in turn; the interpreter's
	 * traceback printer compiles a line to place its carets */
	if (event[0] == 'c')
		return true;
	if (sb_g.starting) {
		if (event[0] == 'e')
			sb_g.starting = false; /* the main program runs */
		return true;
	}
	/* typed at a terminal: the REPL's, whoever starts it */
	if (!sb_g.stdin_program || !isatty(0))
		return false;
	/* compile: (source, filename); exec: (code,) */
	arg = py.PyTuple_GetItem(args, event[0] == 'c' ? 1 : 0);
	if (!arg) {
		py.PyErr_Clear();
		return false;
	}
	if (event[0] == 'c') {
		r = sb_arg_path(arg, buf);
	} else {
		name = py.PyObject_GetAttrString(arg, "co_filename");
		r = name ? sb_arg_path(name, buf) : 0;
		py.Py_DecRef(name);
	}
	py.PyErr_Clear();
	return r == 1 && strcmp(buf, "<stdin>") == 0;
}

int sb_api_event(const char *event, PyObject *args)
{
	const struct door *hit;
	const char *door;

	if (strcmp(event, "compile") == 0 || strcmp(event, "exec") == 0) {
		if (dyn_door)
			return 0; /* judged by the wrapper already */
		if (frameless_runtime(event, args))
			return 0;
		return dynamic_code(event[0] == 'c' ? "builtins.compile"
						    : "builtins.exec",
				    names_event,
				    event[0] == 'c' ? SB_CODE_COMPILE
						    : SB_CODE_RUN,
				    args);
	}
	if (sb_str_starts(event, "marshal.load") && sb_g.starting &&
	    !py.PyEval_GetFrame()) {
		/* `python x.pyc`: the interpreter reads the compiled main
		 * program, frameless, once, and runs it with no exec event */
		sb_g.starting = false;
		return 0;
	}
	/* bytecode built at run time runs like exec'd code */
	if (strcmp(event, "code.__new__") == 0)
		return dynamic_code("builtins.exec", names_code,
				    SB_CODE_OBJECT, args);
	if (strcmp(event, "marshal.loads") == 0 ||
	    strcmp(event, "marshal.load") == 0)
		return dynamic_code("builtins.exec", names_marshal,
				    SB_CODE_MARSHAL, args);
	/* (fd, request, arg): a request of the one safe list passes (the
	 * kernel layer allows the same lists and no other) */
	if (strcmp(event, "fcntl.ioctl") == 0) {
		PyObject *req = py.PyTuple_GetItem(args, 1);
		long r = req ? py.PyLong_AsLong(req) : -1, v = 0;
		int is_int;

		if (py.PyErr_Occurred()) {
			py.PyErr_Clear();
		} else {
			/* an int argument: TCXONC's restarts only */
			is_int = sb_arg_int(py.PyTuple_Size(args) > 2
						    ? py.PyTuple_GetItem(args, 2)
						    : NULL,
					    &v);
			if (is_int < 0)
				py.PyErr_Clear();
			if (sb_ioctl_call_safe((unsigned long)r, is_int == 1,
					       (unsigned long)v))
				return 0;
		}
		return sb_guard_check_api("fcntl.ioctl");
	}
	/* (pid, signal): a signal to a child of this process passes when
	 * kill_call sends it (below); any other, the original's included,
	 * is judged */
	if (strcmp(event, "os.kill") == 0 && sb_g.api.own_kill &&
	    own_kill_event(args))
		return 0;
	hit = bsearch(event, doors, SB_ARRAY_LEN(doors), sizeof(doors[0]),
		      cmp_event);
	if (!hit)
		return 0;
	door = hit->door;
	if (strcmp(event, "pickle.find_class") == 0)
		door = unpickler_door();
	/* ctypes' own import opens the main program (pythonapi): calls
	 * through it are judged by ctypes.call_function */
	if (strcmp(event, "ctypes.dlopen") == 0 &&
	    py.PyTuple_GetItem(args, 0) == py._Py_NoneStruct)
		return 0;
	if (strcmp(event, "pickle.find_class") == 0 ||
	    strcmp(event, "ctypes.call_function") == 0 ||
	    strcmp(event, "ctypes.cdata") == 0) {
		if (category_opened(door))
			return 0;
	}
	if (library_may_call(door))
		return 0; /* the standard library may look at frames */
	return sb_guard_check_api(door);
}
