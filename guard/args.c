/* args.c - reading the arguments of an event or a wrapped call (a path in
 * the file system encoding, an int, a keyword) and the code that made it
 * (the runtime's or a library's, or typed at the interactive prompt). No
 * decision is taken here, and nothing is refused: a value that is not what
 * the families judge is reported as such, and the original call deals
 * with it.
 */
#include "guard.h"

#include <string.h>

PyObject *sb_kwarg(PyObject *kwargs, const char *name)
{
	if (!kwargs)
		return NULL;
	return py.PyDict_GetItemString(kwargs, name);
}

PyObject *sb_arg(PyObject *args, PyObject *kwargs, Py_ssize_t i,
		 const char *name)
{
	if (py.PyTuple_Size(args) > i)
		return py.PyTuple_GetItem(args, i);
	return sb_kwarg(kwargs, name);
}

int sb_arg_int(PyObject *arg, long *out)
{
	int r;

	if (!arg)
		return 0;
	r = py.PyObject_IsInstance(arg, py.PyLong_Type);
	if (r <= 0)
		return r;
	*out = py.PyLong_AsLong(arg);
	if (*out == -1 && py.PyErr_Occurred())
		return -1;
	return 1;
}

static int copy_path(const char *s, Py_ssize_t n, char buf[PATH_MAX])
{
	if (n <= 0 || (size_t)n >= PATH_MAX || memchr(s, '\0', (size_t)n))
		return 0; /* empty, too long or NUL: the call itself fails */
	memcpy(buf, s, (size_t)n);
	buf[n] = '\0';
	return 1;
}

int sb_arg_path(PyObject *arg, char buf[PATH_MAX])
{
	PyObject *fs, *bytes;
	const char *s;
	char *b;
	Py_ssize_t n;
	int r;

	if (!arg)
		return 0;
	r = py.PyObject_IsInstance(arg, py.PyLong_Type);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (py.PyObject_IsInstance(arg, py.PyUnicode_Type) == 1) {
		s = py.PyUnicode_AsUTF8AndSize(arg, &n);
		if (s)
			return copy_path(s, n, buf);
		py.PyErr_Clear(); /* surrogates: encode as the OS sees it */
	}
	if (py.PyObject_IsInstance(arg, py.PyBytes_Type) != 1 &&
	    py.PyObject_CheckBuffer(arg)) {
		/* 3.9 and 3.10 take any bytes-like object as a path (os.mkdir,
		 * os.open, ...: their path_t copies the buffer and never calls
		 * __fspath__); 3.11 and later call __fspath__ or refuse it.
		 * One that has both is read one way or the other by the
		 * version: refused. */
		PyObject *type = py.PyObject_Type(arg);
		int both = type && py.PyObject_HasAttrString(type,
							     "__fspath__");

		if (type)
			py.Py_DecRef(type);
		py.PyErr_Clear();
		if (both)
			return sb_guard_raise(SB_EXC_PERMISSION,
					      "A path given as a bytes-like object with __fspath__ is refused: the interpreter reads it as either; pass bytes or os.fspath() of it.",
					      NULL);
		fs = py.PyBytes_FromObject(arg);
	} else {
		fs = py.PyOS_FSPath(arg);
	}
	if (!fs) {
		py.PyErr_Clear(); /* not a path: the original raises */
		return 0;
	}
	if (py.PyObject_IsInstance(fs, py.PyUnicode_Type) == 1) {
		bytes = py.PyUnicode_EncodeFSDefault(fs);
		py.Py_DecRef(fs);
		if (!bytes) {
			py.PyErr_Clear();
			return 0;
		}
	} else {
		bytes = fs;
	}
	if (py.PyBytes_AsStringAndSize(bytes, &b, &n) < 0) {
		py.PyErr_Clear();
		py.Py_DecRef(bytes);
		return 0;
	}
	r = copy_path(b, n, buf);
	py.Py_DecRef(bytes);
	return r;
}

/* The co_filename of frame's code into buf: 1, or -1 (no exception left
 * set). */
static int frame_file(PyObject *frame, char buf[PATH_MAX])
{
	PyObject *code, *file;
	int r;

	code = py.PyFrame_GetCode(frame);
	if (!code) {
		py.PyErr_Clear();
		return -1;
	}
	file = py.PyObject_GetAttrString(code, "co_filename");
	py.Py_DecRef(code);
	r = file ? sb_arg_path(file, buf) : -1;
	if (file)
		py.Py_DecRef(file);
	if (r != 1) {
		py.PyErr_Clear();
		return -1;
	}
	return 1;
}

int sb_guard_caller_file(char buf[PATH_MAX])
{
	PyObject *frame = py.PyEval_GetFrame();

	return frame ? frame_file(frame, buf) : 0;
}

static bool library_file(const char *buf)
{
	size_t n;

	if (strncmp(buf, "<frozen ", 8) == 0)
		return true;
	n = strlen(sb_g.pkgdir);
	if (strncmp(buf, sb_g.pkgdir, n) == 0 && buf[n] == '/')
		return true; /* python-sb's own package */
	if (strstr(buf, "/site-packages/") || strstr(buf, "/dist-packages/"))
		return true;
	n = sb_g.stdlib ? strlen(sb_g.stdlib) : 0;
	return n && strncmp(buf, sb_g.stdlib, n) == 0 && buf[n] == '/';
}

/* Code the runtime and libraries run is exempt (2.6.7): decided by the
 * file of the code that called us. No Python frame is the program's: a
 * C callable it handed to the interpreter (an atexit or weakref callback:
 * atexit.register(eval, src, {})) runs with none, and the interpreter's
 * own frameless work (compiling the main program, printing a traceback)
 * is no call of the doors this judges. */
bool sb_guard_caller_is_library(void)
{
	char buf[PATH_MAX];

	return sb_guard_caller_file(buf) == 1 && library_file(buf);
}

/* Is s the name w, or six's and future's alias of it (exec_)? */
static bool names_door(const char *s, const char *w)
{
	size_t n = strlen(w);

	return strncmp(s, w, n) == 0 &&
	       (s[n] == '\0' || (s[n] == '_' && s[n + 1] == '\0'));
}

/* Does one of the strings of tuple attribute attr of code name one of
 * names? */
static bool tuple_names(PyObject *code, const char *attr,
			const char *const *names)
{
	PyObject *t = py.PyObject_GetAttrString(code, attr);
	Py_ssize_t i, n = t ? py.PyTuple_Size(t) : -1;
	const char *const *w;
	bool yes = false;

	for (i = 0; i < n && !yes; i++) {
		PyObject *o = py.PyTuple_GetItem(t, i);
		const char *s = o && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1
					? py.PyUnicode_AsUTF8AndSize(o, NULL)
					: NULL;

		for (w = names; s && *w && !yes; w++)
			yes = names_door(s, *w);
	}
	if (t)
		py.Py_DecRef(t);
	py.PyErr_Clear();
	return yes;
}

/* Does frame's code name one of names: among the globals, builtins and
 * attributes it loads (co_names; not its arguments or locals), or as a
 * string constant (getattr(builtins, "exec"))? */
static bool code_names(PyObject *frame, const char *const *names)
{
	PyObject *code = py.PyFrame_GetCode(frame);
	bool yes;

	if (!code) {
		py.PyErr_Clear();
		return false;
	}
	yes = tuple_names(code, "co_names", names) ||
	      tuple_names(code, "co_consts", names);
	py.Py_DecRef(code);
	return yes;
}

/* The dynamic-code exemption: library code that calls eval, exec,
 * compile (or builds code: marshal, CodeType) itself, by name. A library
 * frame that only calls what it was handed (importlib's
 * _call_with_frames_removed(f, *args), Thread.run's target, ExitStack's
 * and weakref.finalize's callbacks) passes the question to its caller:
 * the exemption needs a library frame up the chain that names the door
 * before any application frame or the thread's first frame. importlib's
 * own exec_module and source_to_code, which hand exec and compile to
 * _call_with_frames_removed, name them. */
bool sb_guard_library_calls(const char *const *names)
{
	PyObject *frame = py.PyEval_GetFrame(), *back;
	char buf[PATH_MAX];
	bool yes = false, owned = false;
	int depth;

	for (depth = 0; frame && depth < 64; depth++) {
		if (frame_file(frame, buf) != 1 || !library_file(buf))
			break;
		if (code_names(frame, names)) {
			yes = true;
			break;
		}
		back = py.PyFrame_GetBack(frame);
		if (owned)
			py.Py_DecRef(frame);
		frame = back;
		owned = true;
	}
	if (owned && frame)
		py.Py_DecRef(frame);
	py.PyErr_Clear();
	return yes;
}

/* Code typed at the prompt that calls the door by name: the standard
 * REPL's "<stdin>" ("<stdin>-N" on 3.13), 3.13's "<python-input-N>". A
 * program's object the REPL displays or calls (a __repr__ bound to eval)
 * runs from the typed frame too, which does not name it. */
bool sb_guard_caller_is_typed(const char *const *names)
{
	PyObject *frame = py.PyEval_GetFrame();
	char buf[PATH_MAX];

	return sb_g.interactive && frame && frame_file(frame, buf) == 1 &&
	       (strcmp(buf, "<stdin>") == 0 || strncmp(buf, "<stdin>-", 8) == 0 ||
		strncmp(buf, "<python-input-", 14) == 0) &&
	       code_names(frame, names);
}
