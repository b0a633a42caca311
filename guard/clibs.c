/* clibs.c - the files C libraries open by a name the program hands them,
 * with no audit event: SQLite's ATTACH DATABASE, VACUUM INTO and PRAGMA
 * temp_store_directory (and its extensions, native code), OpenSSL's
 * certificate, key and DH parameter files (and _ssl._test_decode_cert's;
 * its key log file needs nothing here: _ssl opens it with _Py_fopen_obj,
 * which raises "open"; its configuration loads native code, so that
 * setting $OPENSSL_CONF and its kin needs the native grant). Each name
 * is judged by the file guard (files.c), so the rules, the refusals, the
 * denial log and learning are its own.
 * The doors are methods of C classes (sqlite3.Connection and Cursor,
 * _ssl._SSLContext), wrapped on the classes themselves (wrap.c) when the
 * import machinery makes their module (imports.c); a class that cannot
 * be wrapped fails its module's import.
 *
 * SQLite: every connection gets the guard's authorizer, which judges the
 * file of each SQLITE_ATTACH (VACUUM INTO attaches its target the same
 * way) and the directory of PRAGMA temp_store_directory when the
 * statement is prepared. set_authorizer installs the program's callback
 * behind it, never instead of it. sqlite3 swallows an authorizer's
 * exception ("not authorized"), so the refusal is kept and raised again
 * by the execute method that ran the statement.
 */
#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_registry.h"
#include "policy_net.h"

#define SQLITE_OK 0
#define SQLITE_DENY 1
#define SQLITE_PRAGMA 19
#define SQLITE_ATTACH 24
#define SQLITE_FUNCTION 31


struct meth_spec {
	const char *name;
	sb_wrap_fn call;
};

/* The wrap of method 'name' on the first wrapped class 'obj' is an
 * instance of, or NULL. */
static struct sb_wrap *wrap_for(PyObject *obj, const char *name)
{
	size_t i, j;

	for (i = 0; i < sb_g.clibs.n_classes; i++) {
		const struct sb_clibs_class *c = &sb_g.clibs.classes[i];

		if (py.PyObject_IsInstance(obj, c->cls) != 1)
			continue;
		for (j = 0; j < c->n; j++)
			if (c->wraps[j].original &&
			    strcmp(c->wraps[j].def.ml_name, name) == 0)
				return &c->wraps[j];
	}
	py.PyErr_Clear();
	return NULL;
}

/* Wrap the methods of mod.<cname> ('module' is mod's name, a literal):
 * 0, or -1 with an exception set. */
static int wrap_class(PyObject *mod, const char *module, const char *cname,
		      const struct meth_spec *specs, size_t n)
{
	PyObject *cls = py.PyObject_GetAttrString(mod, cname);
	struct sb_clibs_class *c;
	size_t i;

	if (!cls) {
		py.PyErr_Clear(); /* a multi-phase module not executed yet */
		return 0;
	}
	for (i = 0; i < sb_g.clibs.n_classes; i++) {
		if (sb_g.clibs.classes[i].cls == cls) {
			py.Py_DecRef(cls);
			return 0;
		}
	}
	if (sb_g.clibs.n_classes == SB_CLIBS_CLASSES) {
		py.Py_DecRef(cls);
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "too many copies of a module whose C "
				   "classes the file guard wraps");
		return -1;
	}
	c = &sb_g.clibs.classes[sb_g.clibs.n_classes];
	c->wraps = sb_arena_alloc(sb_g.arena, n * sizeof(*c->wraps));
	if (!c->wraps) {
		py.Py_DecRef(cls);
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError), "out of memory");
		return -1;
	}
	memset(c->wraps, 0, n * sizeof(*c->wraps));
	c->cls = cls;
	c->n = n;
	sb_g.clibs.n_classes++;
	for (i = 0; i < n; i++) {
		struct sb_wrap *w = &c->wraps[i];
		int r;

		w->module = module;
		w->attr = specs[i].name;
		w->call = specs[i].call;
		sb_guard_busy_enter();
		r = sb_wrap_install_on_class(w, cls, specs[i].name);
		sb_guard_busy_leave();
		if (r < 0) {
			/* not counted as wrapped: a second import tries again */
			sb_g.clibs.n_classes--;
			py.Py_DecRef(cls);
			return -1;
		}
	}
	return 0;
}

/* A door to native code that no python-api= entry names (an SQL
 * function, an environment variable): open under any native grant, as the
 * import of a native module is (imports.c); learned as one. 'target' is
 * what the denial log names, 'what' says what it does. 0, or -1
 * (raised). */
static int native_door(const char *target, const char *what)
{
	char msg[512];
	int open = sb_api_native_open();

	if (open != 0)
		return open < 0 ? -1 : 0;
	snprintf(msg, sizeof(msg),
		 "%s: it needs the rule python-api=ALLOW:native", what);
	sb_guard_note("api", target, NULL, "python-api=ALLOW:native");
	return sb_guard_raise(SB_EXC_PERMISSION, msg, NULL);
}

/* ---- SQLite ---- */

/* The refusal an authorizer call made, raised again by the execute
 * method that ran the statement (sqlite3 replaces it with "not
 * authorized"). Per thread: a connection's statements run on the thread
 * that calls execute. */
static __thread PyObject *pending_type, *pending_value, *pending_tb;

/* Set while Connection.deserialize runs: sqlite3_deserialize reopens the
 * schema in memory with its own first statement, "ATTACH x AS schema",
 * which opens no file (SQLite marks it reopenMemdb). Judged, the name "x"
 * would be a file in the cwd. */
static __thread bool deserializing;

static void drop_pending(void)
{
	PyObject *t = pending_type, *v = pending_value, *tb = pending_tb;

	pending_type = pending_value = pending_tb = NULL;
	py.Py_DecRef(t);
	py.Py_DecRef(v);
	py.Py_DecRef(tb);
}

/* SQLite hands the authorizer an ATTACH's file name only when it is a
 * string literal: a bound parameter or an expression comes as None, and
 * SQLite would open what it evaluates to. Refused, learning too (no rule
 * could allow it). VACUUM INTO of any expression is judged: it attaches
 * the value as a literal. */
static int refuse_unnamed(void)
{
	static const char msg[] =
		"ATTACH DATABASE opens a file the rules cannot judge when its "
		"name is not a string literal (a parameter or an expression): "
		"write the name as a literal ('...' with each ' doubled)";

	/* no rule could allow it, so learning has nothing to record and
	 * refuses it too: the enforcing run would */
	return sb_guard_raise(SB_EXC_PERMISSION, msg, NULL);
}

/* PRAGMA temp_store_directory = 'dir' (deprecated, still built in): the
 * process's SQLite makes its temporary files there from then on. Judged
 * as a write into the directory; '' goes back to the default. 0 or -1
 * (raised). */
static int temp_directory(PyObject *args)
{
	const char *name = NULL;
	PyObject *o = py.PyTuple_GetItem(args, 1);
	char dir[PATH_MAX];
	int r;

	if (o && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1)
		name = py.PyUnicode_AsUTF8AndSize(o, NULL);
	py.PyErr_Clear();
	if (!name || (strcasecmp(name, "temp_store_directory") != 0 &&
		      strcasecmp(name, "data_store_directory") != 0) ||
	    !sb_g.armed || sb_guard_is_busy())
		return 0;
	o = py.PyTuple_Size(args) > 2 ? py.PyTuple_GetItem(args, 2) : NULL;
	if (!o || o == py._Py_NoneStruct) /* a query */
		return 0;
	r = sb_arg_path(o, dir);
	if (r == 0 && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1 &&
	    py.PyObject_Length(o) == 0)
		return 0;
	py.PyErr_Clear();
	if (r != 1)
		return sb_guard_raise(SB_EXC_PERMISSION,
				      "PRAGMA temp_store_directory names a "
				      "directory the rules cannot judge",
				      NULL);
	return sb_files_check(dir, -1, true);
}

/* The program's authorizer 'cb', called behind the guard's. Its exception
 * is reported as sqlite3 reports an authorizer's, naming 'cb' (sqlite3
 * would name the guard's function), and the statement is denied, as
 * sqlite3 denies it. */
static PyObject *program_authorizer(PyObject *cb, PyObject *args)
{
	PyObject *res = py.PyObject_Call(cb, args, NULL);

	if (res)
		return res;
	if (!sb_g.clibs.callback_tracebacks)
		py.PyErr_Clear();
	else if (sb_g.clibs.unraisable_reports)
		py.PyErr_WriteUnraisable(cb);
	else
		py.PyErr_Print();
	return py.PyLong_FromLong(SQLITE_DENY);
}

/* SQLITE_FUNCTION (action, None, name): SQLite built with
 * SQLITE_ENABLE_FTS3_TOKENIZER (Debian's is) lets the two-argument
 * fts3_tokenizer(name, pointer) register a tokenizer module at any
 * address, whose functions FTS3 then calls: a jump to an address the
 * program wrote, as ctypes would make. Native code: it needs the native
 * grant. 0 or -1 (raised). */
static int raw_pointer_function(PyObject *args)
{
	PyObject *o = py.PyTuple_Size(args) > 2 ? py.PyTuple_GetItem(args, 2)
						: NULL;
	const char *name = NULL;

	if (o && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1)
		name = py.PyUnicode_AsUTF8AndSize(o, NULL);
	py.PyErr_Clear();
	if (!name || strcasecmp(name, "fts3_tokenizer") != 0 ||
	    !sb_g.armed || sb_guard_is_busy())
		return 0;
	return native_door("fts3_tokenizer",
			   "The SQL function fts3_tokenizer() registers a "
			   "tokenizer at a raw address that FTS3 calls into");
}

/* The guard's authorizer, bound to the program's callback (None: none).
 * (action, arg1, arg2, db_name, trigger): an ATTACH's file (arg1) is
 * judged as a database sqlite3.connect would open; the rest is the
 * program's callback's to answer, or allowed. */
static PyObject *authorize(PyObject *self, PyObject *args)
{
	PyObject *action = py.PyTuple_Size(args) >= 2
				   ? py.PyTuple_GetItem(args, 0)
				   : NULL;
	long a = -1;
	char name[PATH_MAX];

	py.PyErr_Clear();
	if (action && sb_arg_int(action, &a) < 0)
		py.PyErr_Clear();
	if (a == SQLITE_ATTACH) {
		PyObject *file;
		int r;

		if (sb_g.halted)
			return py.PyLong_FromLong(SQLITE_DENY);
		file = py.PyTuple_GetItem(args, 1);
		r = sb_arg_path(file, name);
		/* "": a private temporary database */
		if (r == 0 && py.PyObject_IsInstance(file,
						     py.PyUnicode_Type) == 1 &&
		    py.PyObject_Length(file) == 0) {
			name[0] = '\0';
			r = 1;
		}
		if (r < 0)
			r = 0; /* cannot be read: as good as unnamed */
		py.PyErr_Clear();
		if (!sb_g.armed || sb_guard_is_busy())
			r = 2; /* the guard's own statements, or not armed */
		if (r == 1 && deserializing && strcmp(name, "x") == 0)
			r = 2; /* sqlite3_deserialize's own (opens no file) */
		deserializing = false; /* its first statement only */
		if ((r == 0 && refuse_unnamed() < 0) ||
		    (r == 1 && sb_files_check_sqlite(name) < 0)) {
			drop_pending();
			py.PyErr_Fetch(&pending_type, &pending_value,
				       &pending_tb);
			return py.PyLong_FromLong(SQLITE_DENY);
		}
	}
	if ((a == SQLITE_PRAGMA && temp_directory(args) < 0) ||
	    (a == SQLITE_FUNCTION && raw_pointer_function(args) < 0)) {
		drop_pending();
		py.PyErr_Fetch(&pending_type, &pending_value, &pending_tb);
		return py.PyLong_FromLong(SQLITE_DENY);
	}
	if (self && self != py._Py_NoneStruct)
		return program_authorizer(self, args);
	return py.PyLong_FromLong(SQLITE_OK);
}

static struct py_method_def authorize_def = { "authorizer",
					      (void *)authorize,
					      PY_METH_VARARGS, NULL };

/* conn.set_authorizer(the guard's, with 'cb' behind it), through the
 * original method: 0 or -1 (raised). */
static int install_authorizer_as(PyObject *conn, PyObject *cb, bool kw);

static int install_authorizer(PyObject *conn, PyObject *cb)
{
	return install_authorizer_as(conn, cb, false);
}

/* 'kw': passed as the keyword authorizer_callback, as the program did, so
 * that CPython says what it says of that (3.13 deprecates it). */
static int install_authorizer_as(PyObject *conn, PyObject *cb, bool kw)
{
	struct sb_wrap *w = wrap_for(conn, "set_authorizer");
	PyObject *fn, *res, *kwargs = NULL;
	PyObject *args;

	if (!w) {
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "the file guard cannot judge this "
				   "connection's ATTACH statements");
		return -1;
	}
	fn = py.PyCFunction_NewEx(&authorize_def,
				  cb ? cb : py._Py_NoneStruct, NULL);
	args = fn ? py.PyTuple_New(kw ? 1 : 2) : NULL;
	if (args && kw) {
		kwargs = py.PyDict_New();
		if (!kwargs || py.PyDict_SetItemString(
				       kwargs, "authorizer_callback", fn) < 0) {
			py.Py_DecRef(args);
			args = NULL;
		}
	}
	if (!args) {
		py.Py_DecRef(fn);
		py.Py_DecRef(kwargs);
		return -1;
	}
	py.Py_IncRef(conn);
	py.PyTuple_SetItem(args, 0, conn);
	if (kw)
		py.Py_DecRef(fn); /* the dict holds it */
	else
		py.PyTuple_SetItem(args, 1, fn);
	res = sb_wrap_call_original(w, args, kwargs);
	py.Py_DecRef(args);
	py.Py_DecRef(kwargs);
	if (!res)
		return -1;
	py.Py_DecRef(res);
	return 0;
}

/* sys.getrefcount(conn), called as the program's code would be (not
 * busy), of the genuine function only; -1 when unknown. */
static long refcount(PyObject *conn)
{
	PyObject *args, *n;
	long v;

	if (!sb_g.clibs.getrefcount)
		return -1;
	args = py.PyTuple_New(1);
	if (!args) {
		py.PyErr_Clear();
		return -1;
	}
	py.Py_IncRef(conn);
	py.PyTuple_SetItem(args, 0, conn);
	n = py.PyObject_CallObject(sb_g.clibs.getrefcount, args);
	py.Py_DecRef(args);
	v = n ? py.PyLong_AsLong(n) : -1;
	py.Py_DecRef(n);
	py.PyErr_Clear();
	return v;
}

/* Does anything but 'waiting' (or 'seen') hold 'conn'? Its reference and
 * the call's are counted. */
static bool held_elsewhere(PyObject *conn)
{
	long n = refcount(conn);

	return n < 0 || n > 2;
}

/* 0, or -1 with an exception set; a connection that does not take the
 * authorizer yet stays waiting, unless nothing else holds it. */
static int install_waiting(void)
{
	PyObject *list = sb_g.clibs.waiting, *kept;
	Py_ssize_t i, n;
	int r = 0;

	if (!list)
		return 0;
	sb_g.clibs.waiting = NULL;
	kept = py.PyList_New(0);
	if (!kept) {
		sb_g.clibs.waiting = list;
		return -1;
	}
	n = py.PyList_Size(list);
	for (i = 0; i < n; i++) {
		PyObject *conn = py.PyList_GetItem(list, i);

		if (r == 0 && install_authorizer(conn, NULL) == 0)
			continue;
		/* ProgrammingError (taken when the module was made): another
		 * thread's connection (check_same_thread), which its thread
		 * installs at its first statement; one whose __init__ failed
		 * after the event, or closed since, which runs none */
		if (r == 0 && sb_g.clibs.programming_error &&
		    py.PyErr_ExceptionMatches(sb_g.clibs.programming_error)) {
			py.PyErr_Clear();
			if (!held_elsewhere(conn))
				continue;
		} else if (r == 0) {
			r = -1; /* the rest waits, the exception stands */
		}
		if (py.PyList_Append(kept, conn) < 0)
			r = -1;
	}
	py.Py_DecRef(list);
	if (py.PyList_Size(kept) == 0) {
		py.Py_DecRef(kept);
	} else if (!sb_g.clibs.waiting) {
		sb_g.clibs.waiting = kept;
	} else {
		n = py.PyList_Size(kept);
		for (i = 0; i < n; i++)
			if (py.PyList_Append(sb_g.clibs.waiting,
					     py.PyList_GetItem(kept, i)) < 0)
				r = -1;
		py.Py_DecRef(kept);
	}
	return r;
}

int sb_clibs_sqlite_opened(PyObject *conn)
{
	if (!conn)
		return 0;
	if (!sb_g.clibs.waiting && !(sb_g.clibs.waiting = py.PyList_New(0)))
		return -1;
	return py.PyList_Append(sb_g.clibs.waiting, conn);
}

static int remember(PyObject *conn, PyObject *cb)
{
	PyObject *id, *pair;
	int r = -1;

	if (!sb_g.clibs.seen && !(sb_g.clibs.seen = py.PyDict_New()))
		return -1;
	id = py.PyLong_FromVoidPtr(conn);
	pair = id ? py.PyTuple_New(2) : NULL;
	if (pair) {
		py.Py_IncRef(conn);
		py.PyTuple_SetItem(pair, 0, conn);
		py.Py_IncRef(cb ? cb : py._Py_NoneStruct);
		py.PyTuple_SetItem(pair, 1, cb ? cb : py._Py_NoneStruct);
		r = py.PyDict_SetItem(sb_g.clibs.seen, id, pair);
		py.Py_DecRef(pair);
	}
	py.Py_DecRef(id);
	return r;
}

/* Drop the connections only 'seen' holds: sys.getrefcount counts the
 * pair's reference and the call's. */
static void forget_dead(void)
{
	PyObject *dead = py.PyList_New(0), *k, *v;
	Py_ssize_t pos = 0, i;

	if (!dead || !sb_g.clibs.getrefcount) {
		py.PyErr_Clear();
		return;
	}
	while (py.PyDict_Next(sb_g.clibs.seen, &pos, &k, &v))
		if (!held_elsewhere(py.PyTuple_GetItem(v, 0)))
			py.PyList_Append(dead, k);
	for (i = 0; i < py.PyList_Size(dead); i++)
		py.PyDict_DelItem(sb_g.clibs.seen, py.PyList_GetItem(dead, i));
	py.Py_DecRef(dead);
	py.PyErr_Clear();
}

static int first_statement(PyObject *conn)
{
	PyObject *id, *pair;

	if (!conn)
		return 0;
	id = py.PyLong_FromVoidPtr(conn);
	if (!id)
		return -1;
	pair = sb_g.clibs.seen ? py.PyDict_GetItem(sb_g.clibs.seen, id) : NULL;
	py.Py_DecRef(id);
	if (pair && py.PyTuple_GetItem(pair, 0) == conn)
		return 0;
	if (sb_g.clibs.seen)
		forget_dead();
	if (install_authorizer(conn, NULL) < 0)
		return -1;
	return remember(conn, NULL);
}

/* Connection.set_authorizer(authorizer_callback): the program's callback
 * goes behind the guard's (None: the guard's alone). */
static PyObject *set_authorizer_call(struct sb_wrap *w, PyObject *args,
				     PyObject *kwargs)
{
	PyObject *conn = py.PyTuple_Size(args) >= 1
				 ? py.PyTuple_GetItem(args, 0)
				 : NULL;
	PyObject *cb = sb_arg(args, kwargs, 1, "authorizer_callback");

	if (install_waiting() < 0)
		return NULL;
	if (!conn || !cb)
		return sb_wrap_call_original(w, args, kwargs);
	if (cb == py._Py_NoneStruct)
		cb = NULL;
	if (install_authorizer_as(conn, cb,
				  kwargs && py.PyDict_GetItemString(
						    kwargs, "authorizer_callback")) < 0 ||
	    (sb_g.clibs.no_handle_event && remember(conn, cb) < 0))
		return NULL;
	py.Py_IncRef(py._Py_NoneStruct);
	return py._Py_NoneStruct;
}

/* The execute methods of Connection and Cursor: a statement the guard's
 * authorizer refused fails with the refusal itself. */
static PyObject *execute_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	PyObject *self = py.PyTuple_Size(args) >= 1
				 ? py.PyTuple_GetItem(args, 0)
				 : NULL;
	PyObject *res, *conn = NULL;
	int r = install_waiting();

	if (r < 0)
		return NULL;
	if (sb_g.clibs.no_handle_event && self) {
		/* the Connection itself, or a Cursor's, read through the C
		 * class's member (a subclass may answer another) */
		if (wrap_for(self, "set_authorizer")) {
			py.Py_IncRef(self);
			conn = self;
		} else if (sb_g.clibs.cursor_connection) {
			conn = sb_guard_call1(sb_g.clibs.cursor_connection,
					      self);
		}
		r = conn ? first_statement(conn) : -1;
		py.Py_DecRef(conn);
		if (r < 0)
			return NULL;
	}
	drop_pending();
	res = sb_wrap_call_original(w, args, kwargs);
	if (pending_type) {
		if (res) {
			drop_pending(); /* the program's own error handling */
		} else {
			py.PyErr_Clear();
			py.PyErr_Restore(pending_type, pending_value,
					 pending_tb);
			pending_type = pending_value = pending_tb = NULL;
		}
	}
	return res;
}

/* Connection.deserialize(data, /, *, name="main"), 3.11+ */
static PyObject *deserialize_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	PyObject *res;

	if (install_waiting() < 0)
		return NULL;
	deserializing = true;
	res = sb_wrap_call_original(w, args, kwargs);
	deserializing = false;
	return res;
}

/* Enabling extensions lets SQL's load_extension() and
 * Connection.load_extension load any shared library: native code, which
 * needs the native grant as a native module does (imports.c). */
int sb_clibs_sqlite_extension(PyObject *enabled)
{
	static const char door[] = "sqlite3.Connection.enable_load_extension";

	if (!enabled || py.PyObject_IsTrue(enabled) != 1) {
		py.PyErr_Clear();
		return 0;
	}
	/* a grant of any native entry opens raw memory, so it opens this
	 * door too, as it does the import of a native module */
	if (sb_api_category_opened(SB_API_NATIVE))
		return 0;
	return sb_guard_check_api(door);
}

/* sqlite3.load_extension (connection, path), 3.10+: loads a shared
 * library. Enabling it needs the native grant (above), but 3.12's
 * Connection.setconfig(SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION) enables it
 * too, with no event: the load itself needs the grant. */
int sb_clibs_sqlite_load(void)
{
	return native_door("sqlite3.Connection.load_extension",
			   "sqlite3.Connection.load_extension() loads a shared "
			   "library");
}

/* Connection.enable_load_extension(enabled): 3.9 raises no event. */
static PyObject *enable_extension_call(struct sb_wrap *w, PyObject *args,
				       PyObject *kwargs)
{
	if (sb_g.clibs.no_handle_event &&
	    sb_clibs_sqlite_extension(sb_arg(args, kwargs, 1, "enabled")) < 0)
		return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

static const struct meth_spec connection_meths[] = {
	{ "set_authorizer", set_authorizer_call },
	{ "execute", execute_call },
	{ "executemany", execute_call },
	{ "executescript", execute_call },
	{ "enable_load_extension", enable_extension_call },
	{ "deserialize", deserialize_call },
};

static const struct meth_spec cursor_meths[] = {
	{ "execute", execute_call },
	{ "executemany", execute_call },
	{ "executescript", execute_call },
};

/* ---- OpenSSL ---- */

/* A path parameter: positional index (self is 0 in a method) and
 * keyword; what the call does to the file (a write or a read), the
 * suffixes the C library adds to the name to make its files (NULL: the
 * name itself), and the file None (or no argument) stands for ("~/" is
 * $HOME's; NULL: none). */
struct path_param {
	Py_ssize_t index;
	const char *name;
	bool write;
	bool absolute; /* the library reads it later, from another cwd */
	const char *const *suffixes;
	const char *none;
};

/* Put 'v' (a reference taken over) in place of parameter 'p' of a call,
 * in *nargs or *nkw, copies of args and kwargs made at the first change.
 * 0, or -1 with an exception set. */
static int replace_param(PyObject *args, PyObject *kwargs, bool positional,
			 const struct path_param *p, PyObject *v,
			 PyObject **nargs, PyObject **nkw)
{
	if (positional) {
		if (!*nargs) {
			Py_ssize_t k, len = py.PyTuple_Size(args);

			*nargs = py.PyTuple_New(len);
			for (k = 0; *nargs && k < len; k++) {
				PyObject *a = py.PyTuple_GetItem(args, k);

				py.Py_IncRef(a);
				py.PyTuple_SetItem(*nargs, k, a);
			}
		}
		if (!*nargs) {
			py.Py_DecRef(v);
			return -1;
		}
		/* the tuple is ours: SetItem drops the old item */
		py.PyTuple_SetItem(*nargs, p->index, v);
		return 0;
	}
	if (!*nkw)
		*nkw = py.PyDict_Copy(kwargs);
	if (!*nkw || py.PyDict_SetItemString(*nkw, p->name, v) < 0) {
		py.Py_DecRef(v);
		return -1;
	}
	py.Py_DecRef(v);
	return 0;
}

/* The file 'spec' of a path_param's none into buf, "~/" made $HOME's:
 * 1; 0 when there is none (readline names no file without $HOME, which
 * python-sb does not pass on); -1 when it is too long (raised). */
static int none_file(const char *spec, char buf[PATH_MAX])
{
	const char *home = getenv("HOME");
	int n;

	if (strncmp(spec, "~/", 2) != 0)
		n = snprintf(buf, PATH_MAX, "%s", spec);
	else if (home && *home)
		n = snprintf(buf, PATH_MAX, "%s%s", home, spec + 1);
	else
		return 0;
	if (n > 0 && n < PATH_MAX)
		return 1;
	return sb_guard_raise(SB_EXC_PERMISSION,
			      "a file name too long for the file guard to "
			      "judge",
			      NULL);
}

/* Judge path 'buf' of parameter 'p': the name, or each file its suffixes
 * make of it. 0, or -1 (raised). */
static int judge_param(const struct path_param *p, const char *buf)
{
	char file[PATH_MAX];
	size_t i;

	if (p->absolute && buf[0] != '/')
		return sb_guard_raise(SB_EXC_PERMISSION,
				      "a relative directory is read later "
				      "against the working directory of that "
				      "moment, which the file guard cannot "
				      "judge now: name it by its absolute path",
				      NULL);

	if (!p->suffixes)
		return sb_files_check(buf, -1, p->write);
	for (i = 0; p->suffixes[i]; i++) {
		if ((size_t)snprintf(file, sizeof(file), "%s%s", buf,
				     p->suffixes[i]) >= sizeof(file))
			return sb_guard_raise(SB_EXC_PERMISSION,
					      "a file name too long for the "
					      "file guard to judge",
					      NULL);
		if (sb_files_check(file, -1, p->write) < 0)
			return -1;
	}
	return 0;
}

/* Judge the path parameters of a call, each as its param says, and hand
 * the original each one as the path judged (a path-like object answers
 * its __fspath__ once: the judgement and the call see the same path). A
 * parameter that is not a path is left to the original's TypeError. */
static PyObject *paths_call(struct sb_wrap *w, PyObject *args,
			    PyObject *kwargs, const struct path_param *params,
			    size_t n)
{
	PyObject *nargs = NULL, *nkw = NULL, *res = NULL;
	char buf[PATH_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		bool positional = py.PyTuple_Size(args) > params[i].index;
		PyObject *o = positional
				      ? py.PyTuple_GetItem(args,
							   params[i].index)
				      : sb_kwarg(kwargs, params[i].name);
		PyObject *fs;
		int r;

		if (!o || o == py._Py_NoneStruct) {
			if (!params[i].none)
				continue;
			r = none_file(params[i].none, buf);
			if (r < 0 || (r == 1 && judge_param(&params[i],
							    buf) < 0))
				goto out;
			continue;
		}
		if (py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1 ||
		    py.PyObject_IsInstance(o, py.PyBytes_Type) == 1) {
			py.Py_IncRef(o);
			fs = o;
		} else {
			fs = py.PyOS_FSPath(o);
			if (!fs) {
				py.PyErr_Clear(); /* the original's TypeError */
				continue;
			}
		}
		r = sb_arg_path(fs, buf);
		if (r == 0 && params[i].absolute) { /* "" is no absolute path */
			py.PyErr_Clear();
			buf[0] = '\0';
			r = 1;
		}
		if (r < 0 || (r == 1 && judge_param(&params[i], buf) < 0)) {
			py.Py_DecRef(fs);
			goto out;
		}
		if (fs == o) {
			py.Py_DecRef(fs);
			continue;
		}
		if (replace_param(args, kwargs, positional, &params[i], fs,
				  &nargs, &nkw) < 0)
			goto out;
	}
	res = sb_wrap_call_original(w, nargs ? nargs : args,
				    nkw ? nkw : kwargs);
out:
	py.Py_DecRef(nargs);
	py.Py_DecRef(nkw);
	return res;
}

/* load_verify_locations(cafile=None, capath=None, cadata=None) */
static PyObject *verify_locations_call(struct sb_wrap *w, PyObject *args,
				       PyObject *kwargs)
{
	static const struct path_param p[] = {
		{ .index = 1, .name = "cafile" },
		{ .index = 2, .name = "capath" },
	};

	return paths_call(w, args, kwargs, p, SB_ARRAY_LEN(p));
}

/* load_cert_chain(certfile, keyfile=None, password=None) */
static PyObject *cert_chain_call(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	static const struct path_param p[] = {
		{ .index = 1, .name = "certfile" },
		{ .index = 2, .name = "keyfile" },
	};

	return paths_call(w, args, kwargs, p, SB_ARRAY_LEN(p));
}

/* load_dh_params(path) */
static PyObject *dh_params_call(struct sb_wrap *w, PyObject *args,
				PyObject *kwargs)
{
	static const struct path_param p[] = {
		{ .index = 1, .name = "path" },
	};

	return paths_call(w, args, kwargs, p, SB_ARRAY_LEN(p));
}

/* set_default_verify_paths(): OpenSSL reads $SSL_CERT_FILE and the
 * directories of $SSL_CERT_DIR, which the program may have set
 * (os.environ writes the C environment). Unset, they are the CA stores
 * exposed implicitly. */
static PyObject *default_paths_call(struct sb_wrap *w, PyObject *args,
				    PyObject *kwargs)
{
	const char *file = getenv("SSL_CERT_FILE");
	const char *dirs = getenv("SSL_CERT_DIR");
	char buf[PATH_MAX];

	if (file && *file && sb_files_check(file, -1, false) < 0)
		return NULL;
	while (dirs && *dirs) {
		size_t n = strcspn(dirs, ":");

		if (n && n < sizeof(buf)) {
			memcpy(buf, dirs, n);
			buf[n] = '\0';
			if (sb_files_check(buf, -1, false) < 0)
				return NULL;
		}
		dirs += n;
		if (*dirs == ':')
			dirs++;
	}
	return sb_wrap_call_original(w, args, kwargs);
}

/* _ssl._test_decode_cert(path): the certificate in a PEM file, decoded */
static PyObject *decode_cert_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	static const struct path_param p[] = {
		{ .index = 0, .name = "path" },
	};

	return paths_call(w, args, kwargs, p, SB_ARRAY_LEN(p));
}

/* ---- files named by the program to modules that reach them in C ----
 *
 * readline, _dbm and _gdbm open the files they are named in C, with no
 * audit event; they need the native grant to be imported (modtab.c), but
 * a program that has it, or the REPL (site imports readline before the
 * guard arms), reached any file through them: the grant opens raw memory,
 * not every file. Each name is judged here as the file guard judges
 * open(): readline's history files (None: ~/.history) and init file
 * (None: ~/.inputrc), dbm's database (ndbm's files are the name with
 * .dir and .pag, or .db), as a write unless opened with a flag "r".
 * _locale is an ordinary module: bindtextdomain(domain, dir) makes
 * gettext read <dir>/<language>/LC_MESSAGES/<domain>.mo, and a domain
 * holding '/' climbs out of the locale directory (default or bound). */
struct path_door {
	struct sb_wrap wrap; /* first: the wrap is the door */
	const struct path_param *params;
	size_t n;
};

static PyObject *door_call(struct sb_wrap *w, PyObject *args,
			   PyObject *kwargs)
{
	const struct path_door *d = (const struct path_door *)w;

	return paths_call(w, args, kwargs, d->params, d->n);
}

/* _dbm.open and _gdbm.open (filename, flags="r", mode=0o666, /) */
static PyObject *dbm_call(struct sb_wrap *w, PyObject *args,
			  PyObject *kwargs)
{
	static const char *const ndbm_files[] = { ".dir", ".pag", ".db",
						  NULL };
	struct path_param p = { .index = 0, .name = "filename" };
	PyObject *flags = sb_arg(args, kwargs, 1, "flags");
	const char *f = flags ? NULL : "r";

	if (flags && py.PyObject_IsInstance(flags, py.PyUnicode_Type) == 1)
		f = py.PyUnicode_AsUTF8AndSize(flags, NULL);
	py.PyErr_Clear();
	p.write = !f || f[0] != 'r';
	if (strcmp(w->module, "_dbm") == 0)
		p.suffixes = ndbm_files;
	return paths_call(w, args, kwargs, &p, 1);
}

/* _locale's gettext functions: a text domain is a file name (the first
 * argument of each); one holding '/', or too long for the guard to read
 * whole, is refused. */
static PyObject *text_domain_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	PyObject *o = sb_arg(args, kwargs, 0, "domain");
	char domain[PATH_MAX];
	int r = o && o != py._Py_NoneStruct ? sb_arg_path(o, domain) : 0;

	py.PyErr_Clear();
	if (r == 0 && o && (py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1 ||
			    py.PyObject_IsInstance(o, py.PyBytes_Type) == 1) &&
	    py.PyObject_Length(o) > 0)
		r = 2; /* too long for the guard to read whole */
	py.PyErr_Clear();
	if (r == 2 || (r == 1 && strchr(domain, '/'))) {
		sb_guard_raise(SB_EXC_PERMISSION,
			       r == 2 ? "a text domain too long for the file "
					"guard to read whole: refused"
				      : "a text domain holding '/' names a "
					"message catalog outside the locale "
					"directories: refused",
			       NULL);
		return NULL;
	}
	return door_call(w, args, kwargs);
}

static const struct path_param history_read[] = {
	{ .index = 0, .name = "filename", .none = "~/.history" },
};
static const struct path_param history_write[] = {
	{ .index = 0,
	  .name = "filename",
	  .write = true,
	  .none = "~/.history" },
};
static const struct path_param history_append[] = {
	{ .index = 1,
	  .name = "filename",
	  .write = true,
	  .none = "~/.history" },
};
static const struct path_param init_read[] = {
	{ .index = 0, .name = "filename", .none = "~/.inputrc" },
};
static const struct path_param locale_dir[] = {
	{ .index = 1, .name = "dir", .absolute = true },
};

#define DOOR(mod, name, p)                                          \
	{ .wrap = { .module = mod, .attr = name, .call = door_call }, \
	  .params = p, .n = SB_ARRAY_LEN(p) }
#define DOOR_CALL(mod, name, fn)                              \
	{ .wrap = { .module = mod, .attr = name, .call = fn }, \
	  .params = NULL, .n = 0 }
/* _locale's, which locale.py copies ("from _locale import *") */
#define LOCALE_DOOR(name, p, n_p)                                       \
	{ .wrap = { .module = "_locale", .attr = name, .also = "locale", \
		    .call = text_domain_call },                           \
	  .params = p, .n = n_p }

static struct path_door doors[] = {
	DOOR("readline", "read_history_file", history_read),
	DOOR("readline", "write_history_file", history_write),
	DOOR("readline", "append_history_file", history_append),
	DOOR("readline", "read_init_file", init_read),
	DOOR_CALL("_dbm", "open", dbm_call),
	DOOR_CALL("_gdbm", "open", dbm_call),
	LOCALE_DOOR("bindtextdomain", locale_dir, SB_ARRAY_LEN(locale_dir)),
	LOCALE_DOOR("textdomain", NULL, 0),
	LOCALE_DOOR("dgettext", NULL, 0),
	LOCALE_DOOR("dcgettext", NULL, 0),
	LOCALE_DOOR("bind_textdomain_codeset", NULL, 0),
};

/* The doors of module 'name' into 'mod': 0, or -1 with an exception. */
static int install_doors(const char *name, PyObject *mod)
{
	int r = 0;
	size_t i;

	sb_guard_busy_enter();
	for (i = 0; r == 0 && i < SB_ARRAY_LEN(doors); i++)
		if (strcmp(doors[i].wrap.module, name) == 0)
			r = sb_wrap_install_in(&doors[i].wrap, mod);
	sb_guard_busy_leave();
	return r;
}

/* _sqlite3.connect(database, ...): a path-like database (pathlib.Path,
 * which code passes every day) is made its os.fspath() here, once, and the
 * call goes on with that string: the sqlite3.connect event and SQLite then
 * see the same name. Handed on as it was, the call would read it again
 * after the event (3.11+), which the file guard refuses (files.c
 * refuse_unpinned). */
static PyObject *connect_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	static const struct path_param database = { .index = 0,
						    .name = "database" };
	PyObject *o, *type, *path, *nargs = NULL, *nkw = NULL, *res = NULL;
	bool positional = py.PyTuple_Size(args) > 0;
	int has = 0;

	o = positional ? py.PyTuple_GetItem(args, 0)
		       : sb_kwarg(kwargs, database.name);
	/* a factory gets the database as the program gave it (CPython's
	 * test_factory_database_arg): what it hands Connection() is judged
	 * by the event, and a path-like there is refused */
	if (py.PyTuple_Size(args) > 5 || sb_kwarg(kwargs, "factory"))
		o = NULL;
	if (o && py.PyObject_IsInstance(o, py.PyUnicode_Type) != 1 &&
	    py.PyObject_IsInstance(o, py.PyBytes_Type) != 1 &&
	    (type = py.PyObject_Type(o))) {
		has = py.PyObject_HasAttrString(type, "__fspath__");
		py.Py_DecRef(type);
	}
	py.PyErr_Clear();
	if (!has) {
		res = sb_wrap_call_original(w, args, kwargs);
	} else {
		path = py.PyOS_FSPath(o);
		if (path && replace_param(args, kwargs, positional, &database,
					  path, &nargs, &nkw) == 0)
			res = sb_wrap_call_original(w, nargs ? nargs : args,
						    nkw ? nkw : kwargs);
		py.Py_DecRef(nargs);
		py.Py_DecRef(nkw);
	}
	/* the new connection is initialised now: it gets the authorizer
	 * and leaves 'waiting', so that the program's reference is the only
	 * one (dropped unclosed, it warns as it does under python). One that
	 * does not take it stays waiting: its first statement installs it,
	 * or fails. */
	if (res && install_waiting() < 0)
		py.PyErr_Clear();
	return res;
}

/* _sqlite3.enable_callback_tracebacks(enable): the flag is kept, for
 * program_authorizer to report as sqlite3 would. */
static PyObject *callback_tracebacks_call(struct sb_wrap *w, PyObject *args,
					  PyObject *kwargs)
{
	PyObject *res = sb_wrap_call_original(w, args, kwargs);
	PyObject *o = res ? sb_arg(args, kwargs, 0, "enable") : NULL;
	int on = o ? py.PyObject_IsTrue(o) : -1;

	if (on >= 0)
		sb_g.clibs.callback_tracebacks = on;
	else if (res)
		py.PyErr_Clear();
	return res;
}

static struct sb_wrap callback_tracebacks_wrap = {
	.module = "_sqlite3",
	.attr = "enable_callback_tracebacks",
	.call = callback_tracebacks_call
};

/* ---- sockets ---- */

/* _socket.socket.setsockopt(level, option, value[, optlen]): judged by
 * net.c. Every argument is read once, here, as the call's converters read
 * them (an object's __index__, then a buffer), and handed on as an int or
 * bytes: code of the program run by a conversion (an __index__ that
 * answers differently, or swaps the descriptor with dup2) runs before the
 * judgement, never between it and the call. An argument that cannot be
 * read so fails the call with its error; the original never reads it
 * again. */
static PyObject *setsockopt_call(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	static const struct path_param p[] = {
		{ .index = 1, .name = "level" },
		{ .index = 2, .name = "option" },
		{ .index = 3, .name = "value" },
	};
	PyObject *nargs = NULL, *nkw = NULL, *res = NULL;
	long v[2];
	size_t i;

	if (py.PyTuple_Size(args) < 4 || (kwargs && py.PyDict_Size(kwargs)))
		return sb_wrap_call_original(w, args, kwargs);
	for (i = 0; i < 3; i++) {
		PyObject *o = py.PyTuple_GetItem(nargs ? nargs : args,
						 p[i].index);
		PyObject *n;

		if (i == 2 && o == py._Py_NoneStruct)
			break; /* setsockopt(level, option, None, optlen) */
		n = py.PyNumber_Index(o);
		if (!n && i == 2 && py.PyObject_CheckBuffer(o)) {
			py.PyErr_Clear();
			n = py.PyBytes_FromObject(o);
		}
		if (!n)
			goto out; /* its TypeError, as the call's */
		if (i < 2) {
			v[i] = py.PyLong_AsLong(n);
			if (v[i] == -1 && py.PyErr_Occurred()) {
				py.Py_DecRef(n);
				goto out; /* its OverflowError */
			}
		}
		if (n == o)
			py.Py_DecRef(n);
		else if (replace_param(args, kwargs, true, &p[i], n, &nargs,
				       &nkw) < 0)
			goto out;
	}
	if (sb_net_judge_sockopt(py.PyTuple_GetItem(args, 0), v[0], v[1]) ==
	    0)
		res = sb_wrap_call_original(w, nargs ? nargs : args, kwargs);
out:
	py.Py_DecRef(nargs);
	return res;
}

/* _socket.socket.sendmsg: its control messages judged (net.c); the
 * address by the event. */
static PyObject *sendmsg_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	PyObject *nargs, *res;

	if (kwargs && py.PyDict_Size(kwargs))
		return sb_wrap_call_original(w, args, kwargs); /* TypeError */
	nargs = sb_net_sendmsg_args(args);
	if (!nargs)
		return NULL;
	res = sb_wrap_call_original(w, nargs, kwargs);
	py.Py_DecRef(nargs);
	return res;
}

static const struct meth_spec socket_meths[] = {
	{ "setsockopt", setsockopt_call },
	{ "sendmsg", sendmsg_call },
};

static struct sb_wrap connect_wrap = { .module = "_sqlite3",
				       .attr = "connect",
				       .call = connect_call };

static struct sb_wrap decode_cert_wrap = { .module = "_ssl",
					   .attr = "_test_decode_cert",
					   .call = decode_cert_call };

static const struct meth_spec context_meths[] = {
	{ "load_verify_locations", verify_locations_call },
	{ "load_cert_chain", cert_chain_call },
	{ "load_dh_params", dh_params_call },
	{ "set_default_verify_paths", default_paths_call },
};

/* os.putenv (key, value): variables C code in this process reads by
 * itself, later, with no event, as the name of a file, a directory, code
 * to load or the names to ask a server for (c_vars). Each is judged when
 * set, by what its library does with it:
 * - TZ: glibc's tzset() reads the zone file it names (":path", a path, or
 *   a name under $TZDIR or the system's zone directory); TZDIR that
 *   directory, and the zone file of $TZ under it (whichever is set
 *   second); only a name under the system's zone directory with no "..",
 *   or a POSIX TZ string, is let through unjudged. Under subprocess a
 *   program read a zone file outside the rules through time.tzset().
 * - files and directories read (HOSTALIASES, the resolver's alias file;
 *   LOCPATH, setlocale()'s directories; DATEMSK, getdate()'s templates;
 *   CTLOG_FILE, OpenSSL's log list) and directories files are created in
 *   (SQLITE_TMPDIR, TMPDIR: SQLite's temporary files; RANDFILE) as reads
 *   and writes of what they name; LANGUAGE's entries, which gettext
 *   (os.strerror) appends to its directory, ".." climbing out of it, may
 *   hold no '/' and be no ".." (LANG and LC_* stay under the locale
 *   directories: glibc refuses "/../" and prefixes even an absolute name);
 * - native code (GCONV_PATH: converters glibc loads; OPENSSL_CONF, the file
 *   OpenSSL reads at its first load, which names providers and engines to
 *   load, and OPENSSL_MODULES, OPENSSL_ENGINES; LD_*, what the dynamic
 *   linker of a program started later loads): the native grant, as a
 *   native module (imports.c);
 * - LOCALDOMAIN and RES_OPTIONS change the names the resolver asks for
 *   (search domains, ndots): only under a policy that lets every name be
 *   resolved;
 * - SSL_CERT_FILE and SSL_CERT_DIR are judged when OpenSSL reads them
 *   (set_default_verify_paths, above).
 * A variable of one of those libraries' namespaces (c_spaces: OPENSSL_,
 * SSL_, RES_, GCONV, NLS, SQLITE_, LD_) that the table does not
 * name is refused unless the native grant is held: a library may read it
 * as a path or a server, and the guard cannot tell. A relative path is
 * refused (the library reads it against the directory of a later moment,
 * not the one it was judged in), and so is a value the guard cannot read
 * whole (too long, a NUL). 0 or -1 (raised). */
#define ZONE_DIR "/usr/share/zoneinfo"

enum c_var_kind {
	CV_TZ,	     /* the zone file */
	CV_TZDIR,    /* a directory read, and the zone file of $TZ in it */
	CV_READ,     /* a file or directory read */
	CV_DIRS,     /* directories read, ':' between them */
	CV_LANGUAGE, /* locale names, ':' between them, under gettext's dir */
	CV_WRITE,    /* a file or directory written (files created in it) */
	CV_NATIVE,   /* code loaded from what it names */
	CV_RESOLVER, /* the names the resolver asks for */
	CV_LATER,    /* judged when its library reads it */
	CV_FREE,     /* read as no path, no server */
};

/* The variables a library of this process reads by itself. */
static const struct c_var {
	const char *name;
	enum c_var_kind kind;
	const char *what; /* CV_NATIVE: what it lets load */
} c_vars[] = {
	{ "TZ", CV_TZ, NULL },
	{ "TZDIR", CV_TZDIR, NULL },
	{ "HOSTALIASES", CV_READ, NULL },
	{ "INPUTRC", CV_READ, NULL }, /* readline's init file */
	{ "DATEMSK", CV_READ, NULL },
	{ "CTLOG_FILE", CV_READ, NULL },
	{ "LOCPATH", CV_DIRS, NULL },
	{ "LANGUAGE", CV_LANGUAGE, NULL },
	{ "SQLITE_TMPDIR", CV_WRITE, NULL },
	{ "TMPDIR", CV_WRITE, NULL },
	{ "RANDFILE", CV_WRITE, NULL },
	{ "GCONV_PATH", CV_NATIVE, "glibc load character set converters "
				   "(native code) from the directories it "
				   "names" },
	{ "OPENSSL_CONF", CV_NATIVE, "OpenSSL load native code from the files "
				     "it names" },
	{ "OPENSSL_MODULES", CV_NATIVE, "OpenSSL load native code from the "
					"files it names" },
	{ "OPENSSL_ENGINES", CV_NATIVE, "OpenSSL load native code from the "
					"files it names" },
	{ "LOCALDOMAIN", CV_RESOLVER, NULL },
	{ "RES_OPTIONS", CV_RESOLVER, NULL },
	{ "SSL_CERT_FILE", CV_LATER, NULL },
	{ "SSL_CERT_DIR", CV_LATER, NULL },
	{ "OPENSSL_ia32cap", CV_FREE, NULL }, /* CPU features */
};

/* The namespaces of those libraries: a variable in one that c_vars does
 * not name may be a path or a server the guard cannot judge. */
static const char *const c_spaces[] = { "OPENSSL_", "SSL_", "RES_", "GCONV",
					"NLS",	    "SQLITE_", "LD_" };

static int cannot_judge(const char *k, const char *why)
{
	/* glibc's own, or the others of c_vars (SQLite's, OpenSSL's) */
	static const char *const glibc[] = { "TZ",	    "TZDIR",
					     "HOSTALIASES", "LOCPATH",
					     "DATEMSK",	    "LANGUAGE" };
	bool libc = sb_str_in(k, glibc, SB_ARRAY_LEN(glibc));
	char msg[256];

	snprintf(msg, sizeof(msg),
		 "%.32s names files %s by itself, and this value %s: refused",
		 k, libc ? "glibc reads" : "a C library reads or writes", why);
	return sb_guard_raise(SB_EXC_PERMISSION, msg, NULL);
}

/* The zone file of TZ 'tz' under the zone directory 'dir' (NULL: $TZDIR,
 * or the system's). */
static int zone_check(const char *tz, const char *dir)
{
	char path[PATH_MAX];
	const char *p = tz[0] == ':' ? tz + 1 : tz;

	if (!*p)
		return 0;
	if (p[0] == '/')
		return sb_files_check(p, -1, false);
	if (!dir || !*dir)
		dir = getenv("TZDIR");
	if (!dir || !*dir)
		dir = ZONE_DIR;
	if (strcmp(dir, ZONE_DIR) == 0 && !strstr(p, ".."))
		return 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, p) >=
	    sizeof(path))
		return cannot_judge("TZ", "is too long");
	return sb_files_check(path, -1, false);
}

/* Each entry of 'v' (':' between them) judged by 'kind'. */
static int judge_entries(const char *k, const char *v, enum c_var_kind kind)
{
	char path[PATH_MAX];
	const char *p;

	for (p = v; *p;) {
		size_t n = strcspn(p, ":");

		if (n) {
			memcpy(path, p, n);
			path[n] = '\0';
			/* LANGUAGE: a name gettext appends to its directory;
			 * one with a '/' may climb out of it */
			if (kind == CV_LANGUAGE &&
			    (strchr(path, '/') || strcmp(path, "..") == 0))
				return cannot_judge(k, "holds a '/' or '..'");
			if (kind == CV_DIRS && path[0] != '/')
				return cannot_judge(k, "holds a relative "
						       "directory");
			if (kind == CV_DIRS &&
			    sb_files_check(path, -1, false) < 0)
				return -1;
		}
		p += n;
		if (*p == ':')
			p++;
	}
	return 0;
}

/* The rule for a variable of a namespace no entry names, or a resolver
 * variable under a policy that does not let every name be resolved. */
static int unjudged_var(const char *k, const char *why)
{
	char what[320];

	snprintf(what, sizeof(what), "Setting %.64s lets %s", k, why);
	return native_door(k, what);
}

static int judge_var(const char *k, const struct c_var *c, PyObject *value)
{
	char v[PATH_MAX];
	const char *tz;
	int r;

	if (c->kind == CV_NATIVE) {
		char what[200];

		snprintf(what, sizeof(what), "Setting %s lets %s", c->name,
			 c->what);
		return native_door(c->name, what);
	}
	if (c->kind == CV_RESOLVER) {
		if (sb_net_names_any(sb_g.policy))
			return 0;
		return unjudged_var(k, "the resolver ask for names no net= rule "
				       "names (search domains, ndots)");
	}
	if (c->kind == CV_LATER || c->kind == CV_FREE)
		return 0;
	r = value ? sb_arg_path(value, v) : 0;
	if (r < 0)
		return -1;
	if (r == 0) {
		Py_ssize_t n = value ? py.PyObject_Length(value) : 0;

		py.PyErr_Clear();
		if (n <= 0)
			return 0; /* empty, or not a string: its own error */
		return cannot_judge(k, "is too long or holds a NUL");
	}
	switch (c->kind) {
	case CV_TZ:
		return zone_check(v, NULL);
	case CV_DIRS:
	case CV_LANGUAGE:
		return judge_entries(k, v, c->kind);
	default:
		break;
	}
	if (v[0] != '/')
		return cannot_judge(k, "is relative");
	if (sb_files_check(v, -1, c->kind == CV_WRITE) < 0)
		return -1;
	tz = c->kind == CV_TZDIR ? getenv("TZ") : NULL;
	return tz ? zone_check(tz, v) : 0;
}

int sb_clibs_putenv(PyObject *key, PyObject *value)
{
	char k[PATH_MAX];
	size_t i;
	int r;

	r = key ? sb_arg_path(key, k) : 0; /* str or bytes, as os.fsencode */
	if (r <= 0) {
		py.PyErr_Clear();
		return 0;
	}
	for (i = 0; i < SB_ARRAY_LEN(c_vars); i++)
		if (strcmp(k, c_vars[i].name) == 0)
			return judge_var(k, &c_vars[i], value);
	for (i = 0; i < SB_ARRAY_LEN(c_spaces); i++)
		if (sb_str_starts(k, c_spaces[i]))
			return unjudged_var(k, "a library of this process "
					       "(OpenSSL, glibc, SQLite, the "
					       "dynamic linker) read it as a "
					       "file, code or a server the "
					       "guard cannot judge");
	return 0;
}

/* ---- modules ---- */

/* sys.getrefcount, if it is sys's own (the program may have put its
 * code there) */
static void take_getrefcount(void)
{
	PyObject *sys = py.PyImport_ImportModule("sys");
	PyObject *fn = sys ? py.PyObject_GetAttrString(sys, "getrefcount")
			   : NULL;

	if (fn && sb_wrap_genuine(fn, sys, "getrefcount"))
		sb_g.clibs.getrefcount = fn;
	else if (fn)
		py.Py_DecRef(fn);
	py.Py_DecRef(sys);
	py.PyErr_Clear();
}

static int take_cursor_connection(PyObject *mod)
{
	PyObject *cls = py.PyObject_GetAttrString(mod, "Cursor");
	PyObject *member = cls ? py.PyObject_GetAttrString(cls, "connection")
			       : NULL;

	py.Py_DecRef(cls);
	sb_g.clibs.cursor_connection =
		member ? py.PyObject_GetAttrString(member, "__get__") : NULL;

	py.Py_DecRef(member);
	return sb_g.clibs.cursor_connection ? 0 : -1;
}

int sb_clibs_arm(void)
{
	static const char *const loaded[] = {
		"posix", "pwd",	 "grp",	  "spwd",     "_socket", "_sqlite3",
		"_ssl",	 "_dbm", "_gdbm", "readline", "_locale", "_uuid",
	};
	PyObject *mods = py.PyImport_GetModuleDict();
	size_t i;

	for (i = 0; mods && i < SB_ARRAY_LEN(loaded); i++) {
		PyObject *mod = py.PyDict_GetItemString(mods, loaded[i]);

		if (mod && sb_clibs_module_ready(mod, loaded[i]) < 0)
			return -1;
	}
	return 0;
}

int sb_clibs_module_ready(PyObject *mod, const char *name)
{
	int r = 0;

	if (sb_sysfiles_module_ready(mod, name) < 0 ||
	    (name && install_doors(name, mod) < 0))
		r = -1;
	else if (name && strcmp(name, "_sqlite3") == 0) {
		PyObject *hex = py.PySys_GetObject("hexversion");

		sb_g.clibs.no_handle_event =
			hex && py.PyLong_AsLong(hex) < 0x030a0000;
		sb_g.clibs.unraisable_reports =
			hex && py.PyLong_AsLong(hex) >= 0x030b0000;
		py.PyErr_Clear();
		r = wrap_class(mod, "_sqlite3", "Connection", connection_meths,
			       SB_ARRAY_LEN(connection_meths));
		if (r == 0)
			r = wrap_class(mod, "_sqlite3", "Cursor", cursor_meths,
				       SB_ARRAY_LEN(cursor_meths));
		if (r == 0 && sb_g.clibs.no_handle_event &&
		    !sb_g.clibs.cursor_connection)
			r = take_cursor_connection(mod);
		if (r == 0 && !sb_g.clibs.programming_error)
			sb_g.clibs.programming_error = py.PyObject_GetAttrString(
				mod, "ProgrammingError");
		if (r == 0 && !sb_g.clibs.getrefcount)
			take_getrefcount();
		py.PyErr_Clear();
		if (r == 0 && py.PyObject_HasAttrString(mod, connect_wrap.attr)) {
			sb_guard_busy_enter();
			r = sb_wrap_install_in(&connect_wrap, mod);
			sb_guard_busy_leave();
		}
		if (r == 0 && py.PyObject_HasAttrString(
				      mod, callback_tracebacks_wrap.attr)) {
			sb_guard_busy_enter();
			r = sb_wrap_install_in(&callback_tracebacks_wrap, mod);
			sb_guard_busy_leave();
		}
	} else if (name && strcmp(name, "_socket") == 0) {
		r = wrap_class(mod, "_socket", "socket", socket_meths,
			       SB_ARRAY_LEN(socket_meths));
	} else if (name && strcmp(name, "_ssl") == 0) {
		r = wrap_class(mod, "_ssl", "_SSLContext", context_meths,
			       SB_ARRAY_LEN(context_meths));
		if (r == 0 &&
		    py.PyObject_HasAttrString(mod, decode_cert_wrap.attr)) {
			sb_guard_busy_enter();
			r = sb_wrap_install_in(&decode_cert_wrap, mod);
			sb_guard_busy_leave();
		}
	}
	/* a failure whose exception a step cleared still fails the import,
	 * with a message rather than a SystemError */
	if (r < 0 && !py.PyErr_Occurred())
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "the file guard cannot judge the files this "
				   "module opens: refused");
	return r;
}
