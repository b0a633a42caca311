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
	/* a path the import system made from a sys.path entry with dot
	 * segments (<stdlib>/collections/../../tmp/m.py) is not the file it
	 * seems to be under */
	if (strstr(buf, "/../") || strstr(buf, "/./") || strstr(buf, "//"))
		return false;
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

	if (*w == '=')
		return false; /* a keyword name: only a call's keywords */

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
	py.Py_DecRef(t);
	py.PyErr_Clear();
	return yes;
}

/* The instructions that take a name of co_names, by interpreter: their
 * opcodes and how their argument gives the index (3.11's LOAD_GLOBAL and
 * 3.12's LOAD_ATTR keep a flag in the low bit, LOAD_SUPER_ATTR two). */
struct name_ops {
	/* kw_names: 3.11's and 3.12's KW_NAMES; call_kw: the call that
	 * takes the keyword names LOAD_CONST put just before it (3.9's and
	 * 3.10's CALL_FUNCTION_KW, 3.13's CALL_KW); -1: none */
	int minor, extended_arg, load_const, kw_names, call_kw;
	unsigned char hasname[24];
	int global, attr, super_attr; /* -1: no shift for this version */
};

static const struct name_ops name_ops[] = {
	{ 9, 144, 100, -1, 141,
	  { 90, 91, 95, 96, 97, 98, 101, 106, 108, 109, 116, 160 },
	  -1, -1, -1 },
	{ 10, 144, 100, -1, 141,
	  { 90, 91, 95, 96, 97, 98, 101, 106, 108, 109, 116, 160 },
	  -1, -1, -1 },
	{ 11, 144, 100, 172, -1,
	  { 90, 91, 95, 96, 97, 98, 101, 106, 108, 109, 116, 160 },
	  116, -1, -1 },
	{ 12, 144, 100, 172, -1,
	  { 90, 91, 95, 96, 97, 98, 101, 106, 108, 109, 116, 141, 175 },
	  116, 106, 141 },
	{ 13, 71, 83, -1, 57,
	  { 63, 66, 67, 74, 75, 82, 90, 91, 92, 93, 108, 113, 114 },
	  91, 82, 93 },
};

static const struct name_ops *ops_of_this_python(void)
{
	size_t i;

	if (!sb_g.py_minor) {
		PyObject *hex = py.PySys_GetObject("hexversion");
		long v = hex ? py.PyLong_AsLong(hex) : -1;

		py.PyErr_Clear();
		sb_g.py_minor = v > 0 ? (int)((v >> 16) & 0xff) : -1;
	}
	for (i = 0; i < sizeof(name_ops) / sizeof(name_ops[0]); i++)
		if (name_ops[i].minor == sb_g.py_minor)
			return &name_ops[i];
	return NULL;
}

static bool takes_name(const struct name_ops *o, int op)
{
	size_t i;

	for (i = 0; i < sizeof(o->hasname) && o->hasname[i]; i++)
		if (o->hasname[i] == op)
			return true;
	return false;
}

/* Is o a str that is one of names: the plain ones, or (keyword) the
 * keyword names, written "=name"? */
static bool str_is(PyObject *o, const char *const *names, bool keyword)
{
	const char *s = o && py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1
				? py.PyUnicode_AsUTF8AndSize(o, NULL)
				: NULL;
	const char *const *w;

	py.PyErr_Clear();
	for (w = names; s && *w; w++)
		if ((**w == '=') == keyword && strcmp(s, *w + keyword) == 0)
			return true;
	return false;
}

/* Does constant c name one of names: a string one of the plain names
 * (getattr(builtins, "exec")), or, when keywords, the tuple of the
 * keyword names of a call (co.replace(co_flags=...)) one of the keyword
 * names? A name only read (x.co_flags) or a tuple of other use (one a
 * line compares with) names no door. */
static bool const_names(PyObject *c, const char *const *names, bool keywords)
{
	Py_ssize_t i, n;

	if (!keywords)
		return str_is(c, names, false);
	if (!c || py.PyObject_IsInstance(c, py.PyTuple_Type) != 1) {
		py.PyErr_Clear();
		return false;
	}
	n = py.PyTuple_Size(c);
	for (i = 0; i < n; i++)
		if (str_is(py.PyTuple_GetItem(c, i), names, true))
			return true;
	py.PyErr_Clear();
	return false;
}

/* Does an instruction of code[start, end) name one of names: a name it
 * loads, a string constant (getattr(builtins, "exec")) or a keyword of a
 * call? */
static bool range_names(const struct name_ops *o, const unsigned char *code,
			Py_ssize_t len, Py_ssize_t start, Py_ssize_t end,
			PyObject *co_names, PyObject *co_consts,
			const char *const *names)
{
	Py_ssize_t off, n = py.PyTuple_Size(co_names);
	Py_ssize_t nc = py.PyTuple_Size(co_consts);
	unsigned long ext = 0;

	if (start < 0)
		start = 0;
	if (end > len)
		end = len;
	for (off = start & ~(Py_ssize_t)1; off + 1 < end; off += 2) {
		int op = code[off];
		unsigned long arg = ext | code[off + 1];
		const char *const *w;
		const char *s;

		if (op == o->extended_arg) {
			ext = arg << 8;
			continue;
		}
		ext = 0;
		if (op == o->load_const || op == o->kw_names) {
			PyObject *c = (Py_ssize_t)arg < nc
					      ? py.PyTuple_GetItem(co_consts,
								   (Py_ssize_t)arg)
					      : NULL;
			/* the keyword names of a call: 3.11's and 3.12's
			 * KW_NAMES, else the constant the call takes next */
			bool kw = op == o->kw_names ||
				  (o->call_kw >= 0 && off + 2 < len &&
				   code[off + 2] == o->call_kw);

			if (const_names(c, names, kw))
				return true;
			continue;
		}
		if (!takes_name(o, op))
			continue;
		if (op == o->global || op == o->attr)
			arg >>= 1;
		else if (op == o->super_attr)
			arg >>= 2;
		if ((Py_ssize_t)arg >= n)
			continue;
		s = py.PyUnicode_AsUTF8AndSize(
			py.PyTuple_GetItem(co_names, (Py_ssize_t)arg), NULL);
		for (w = names; s && *w; w++)
			if (names_door(s, *w))
				return true;
		py.PyErr_Clear();
	}
	return false;
}

/* Does the line frame is at name one of names? 3.10 and later say which
 * instructions a line has (co_lines()), 3.9 in co_lnotab. -1: it cannot
 * be told (another interpreter); 0 also when a code attribute cannot be
 * read, so an odd code object lends nothing. */
static int line_names(PyObject *frame, PyObject *code,
		      const char *const *names)
{
	const struct name_ops *o = ops_of_this_python();
	PyObject *bytes = NULL, *co_names = NULL, *co_consts = NULL;
	PyObject *it = NULL, *t = NULL;
	char *b;
	Py_ssize_t len;
	int line = py.PyFrame_GetLineNumber(frame), yes = 0;

	if (!o)
		return -1;
	/* From here the interpreter is known: a read that fails answers no,
	 * never the whole-function test. */
	bytes = py.PyObject_GetAttrString(code, "co_code");
	co_names = py.PyObject_GetAttrString(code, "co_names");
	co_consts = py.PyObject_GetAttrString(code, "co_consts");
	if (!bytes || !co_names || !co_consts ||
	    py.PyBytes_AsStringAndSize(bytes, &b, &len) < 0)
		goto out;
	if (o->minor >= 10) {
		PyObject *lines = py.PyObject_GetAttrString(code, "co_lines");

		it = lines ? py.PyObject_CallObject(lines, NULL) : NULL;
		py.Py_DecRef(lines);
		while (it && !yes && (t = py.PyIter_Next(it))) {
			PyObject *l = py.PyTuple_GetItem(t, 2);

			if (l && l != py._Py_NoneStruct &&
			    py.PyLong_AsLong(l) == line)
				yes = range_names(
					o, (unsigned char *)b, len,
					py.PyLong_AsLong(py.PyTuple_GetItem(t, 0)),
					py.PyLong_AsLong(py.PyTuple_GetItem(t, 1)),
					co_names, co_consts, names);
			py.Py_DecRef(t);
		}
	} else {
		PyObject *tab = py.PyObject_GetAttrString(code, "co_lnotab");
		PyObject *first = py.PyObject_GetAttrString(code,
							    "co_firstlineno");
		char *lt;
		Py_ssize_t nt, i, addr = 0;
		long cur = first ? py.PyLong_AsLong(first) : -1;

		if (tab && py.PyBytes_AsStringAndSize(tab, &lt, &nt) == 0) {
			for (i = 0; i + 1 < nt && !yes; i += 2) {
				unsigned char db = (unsigned char)lt[i];

				if (db && cur == line)
					yes = range_names(o, (unsigned char *)b,
							  len, addr, addr + db,
							  co_names, co_consts,
							  names);
				addr += db;
				cur += (signed char)lt[i + 1];
			}
			if (!yes && cur == line)
				yes = range_names(o, (unsigned char *)b, len,
						  addr, len, co_names, co_consts,
						  names);
		}
		py.Py_DecRef(tab);
		py.Py_DecRef(first);
	}
out:
	py.Py_DecRef(it);
	py.Py_DecRef(bytes);
	py.Py_DecRef(co_names);
	py.Py_DecRef(co_consts);
	py.PyErr_Clear();
	return yes;
}

/* line_names(), remembered per (code, instruction, names): a code
 * object's bytes, names and constants never change. Keyed by the
 * instruction (f_lasti), which costs nothing to read, where the line
 * number is decoded from the line table at each ask. */
static int cached_line_names(PyObject *frame, PyObject *code,
			     const char *const *names)
{
	PyObject *at;
	long lasti;

	if (!sb_g.f_lasti)
		sb_g.f_lasti = py.PyUnicode_InternFromString("f_lasti");
	at = sb_g.f_lasti ? py.PyObject_GetAttr(frame, sb_g.f_lasti) : NULL;
	lasti = at ? py.PyLong_AsLong(at) : -1;
	size_t h = (((uintptr_t)code >> 4) ^ (uintptr_t)names ^
		    ((size_t)lasti * 2654435761u)) %
		   SB_LINE_CACHE;
	__typeof__(sb_g.lines[0]) *e = &sb_g.lines[h];
	PyObject *old;
	int yes;

	py.Py_DecRef(at);
	if (lasti < 0) {
		py.PyErr_Clear();
		return line_names(frame, code, names);
	}
	if (e->code == code && e->lasti == lasti && e->names == names)
		return e->yes;
	/* line_names() allocates: a collection may run a program's __del__
	 * that asks again and fills this entry, so the entry is read after
	 * it, and nothing between that read and the store calls Python */
	yes = line_names(frame, code, names);
	old = e->code;
	py.Py_IncRef(code);
	e->code = code;
	e->lasti = lasti;
	e->names = names;
	e->yes = yes;
	/* last: freeing the code object it held may run a weakref's
	 * callback, which may ask again */
	py.Py_DecRef(old);
	return yes;
}

/* Does frame's code call one of names itself: does the line it is at load
 * it (a global, a builtin or an attribute; six's exec_; a string constant:
 * getattr(builtins, "exec")), or, where lines cannot be read (an
 * interpreter name_ops does not know), its code anywhere? By line, a library
 * function that names eval elsewhere and touches a program's object here
 * (namedtuple's tuple(defaults) calling a C __iter__) lends nothing. */
static bool code_names(PyObject *frame, const char *const *names)
{
	PyObject *code = py.PyFrame_GetCode(frame);
	int by_line;
	bool yes;

	if (!code) {
		py.PyErr_Clear();
		return false;
	}
	by_line = cached_line_names(frame, code, names);
	if (by_line >= 0)
		yes = by_line == 1;
	else
		yes = tuple_names(code, "co_names", names) ||
		      tuple_names(code, "co_consts", names);
	py.Py_DecRef(code);
	return yes;
}

/* The standard library's modules that make code themselves from what
 * they build (a namedtuple's methods, a dataclass's __init__, a manager's
 * proxy methods, a module's code in the import system, an annotation
 * string: weaknesses.md 9). Its other modules that call eval, exec or
 * compile run what their caller hands them as code: timeit, code, pdb,
 * bdb, cProfile, profile, trace, doctest, dis, pydoc, logging.config's
 * fileConfig, site's .pth lines, modulefinder, pstats. Those lend no
 * exemption: the code is the program's. Named as modules, for their files
 * under the standard library and their frozen twins. Each way of making
 * code has its own list (enum sb_code_way). */
static const char *const code_compilers[] = {
	"collections", "dataclasses", "typing", "inspect", "ast",
	"gettext", "importlib", "zipimport", "runpy",
	"py_compile", "pkgutil", "multiprocessing.managers",
	"multiprocessing.sharedctypes", "unittest.mock", NULL
};
/* exec and eval of a source string: not the import system's modules,
 * which run code objects (runpy._run_code would run any string) */
static const char *const string_runners[] = {
	"collections", "dataclasses", "typing", "inspect",
	"gettext", "multiprocessing.managers", "multiprocessing.sharedctypes",
	"unittest.mock", NULL
};
/* bytecode read with marshal: the import system's loaders (not pkgutil's
 * read_code, which returns any code object a stream holds) */
static const char *const bytecode_readers[] = { "importlib", "zipimport",
						NULL };
/* a code object built or changed: types.coroutine's co_flags */
static const char *const code_builders[] = { "types", NULL };

/* ... and, in an interactive session, the modules that run what the user
 * types (3.13's REPL, tab completion). */
static const char *const typed_code_runners[] = { "code", "codeop",
						  "_pyrepl", "rlcompleter",
						  NULL };

bool sb_guard_module_is(const char *mod, size_t n, const char *name)
{
	size_t k = strlen(name);

	return n >= k && strncmp(mod, name, k) == 0 &&
	       (n == k || mod[k] == '.');
}

static bool module_in(const char *mod, size_t n, const char *const *list)
{
	const char *const *m;

	for (m = list; *m; m++)
		if (sb_guard_module_is(mod, n, *m))
			return true;
	return false;
}

/* May the library file buf, whose line names a code door, make code
 * that way? Third-party libraries and python-sb's own package may (by
 * name alone: weaknesses.md 9); the standard library's modules if they
 * are on that way's list. */
static bool may_make_code(const char *buf, enum sb_code_way way,
			  PyObject *args, PyObject *frame)
{
	const char *const *list = way == SB_CODE_COMPILE  ? code_compilers
				  : way == SB_CODE_RUN	    ? code_compilers
				  : way == SB_CODE_RUN_STRING ? string_runners
				  : way == SB_CODE_MARSHAL    ? bytecode_readers
							      : code_builders;
	char mod[256];
	size_t n = 0, k = sb_g.stdlib ? strlen(sb_g.stdlib) : 0;
	const char *rel, *end;

	if (strncmp(buf, "<frozen ", 8) == 0) {
		rel = buf + 8;
		end = strchr(rel, '>');
	} else if (strstr(buf, "/site-packages/") ||
		   strstr(buf, "/dist-packages/") ||
		   !(k && strncmp(buf, sb_g.stdlib, k) == 0 && buf[k] == '/')) {
		return true; /* not the standard library's */
	} else {
		rel = buf + k + 1;
		end = rel + strlen(rel);
		if (end - rel > 3 && strcmp(end - 3, ".py") == 0)
			end -= 3;
		if (end - rel > 9 && strncmp(end - 9, "/__init__", 9) == 0)
			end -= 9;
	}
	if (!end || (size_t)(end - rel) >= sizeof(mod))
		return false;
	for (; rel < end; rel++)
		mod[n++] = *rel == '/' ? '.' : *rel;
	mod[n] = '\0';
	if (module_in(mod, n, list))
		return sb_code_source_ok(mod, way, args, frame);
	return sb_g.interactive && way <= SB_CODE_RUN_STRING &&
	       module_in(mod, n, typed_code_runners);
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
static bool library_walk(const char *const *names, bool makes_code,
			 enum sb_code_way way, PyObject *args)
{
	PyObject *frame = py.PyEval_GetFrame(), *back;
	char buf[PATH_MAX];
	bool yes = false, owned = false;
	int depth;

	for (depth = 0; frame && depth < 64; depth++) {
		if (frame_file(frame, buf) != 1 || !library_file(buf))
			break;
		if (code_names(frame, names)) {
			yes = !makes_code ||
			      may_make_code(buf, way, args, frame);
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

bool sb_guard_library_calls(const char *const *names)
{
	return library_walk(names, false, SB_CODE_COMPILE, NULL);
}

bool sb_guard_library_makes_code(const char *const *names,
				 enum sb_code_way way, PyObject *args)
{
	return library_walk(names, true, way, args);
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
