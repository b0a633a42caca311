/* codesrc.c - what a standard-library module on a way's list (args.c) may
 * make code from. The dynamic-code exemption trusted those modules by
 * name, and some of them compile what their caller hands them: importlib's
 * source_to_code(data) and _compile_bytecode(data), typing.ForwardRef(s),
 * inspect.get_annotations(eval_str=True), multiprocessing's
 * MakeProxyType(name, exposed) and make_property(name) formatting the
 * names into source. A program then ran any string with no dynamic-code
 * rule (types.FunctionType(loader.source_to_code(s, p), {})()). Here each
 * such module and way has a judge of the source itself:
 *   - the import system compiles and unmarshals files: the source must be
 *     the whole content of the file the call names (one the program may
 *     read), or empty (a namespace package's code);
 *   - ast.parse makes a tree, not code (PyCF_ONLY_AST);
 *   - typing and inspect evaluate type expressions (codeshape.c);
 *   - the two multiprocessing modules and unittest.mock format one
 *     identifier into a fixed template (codeshape.c);
 *   - dataclasses' generated code calls only what its templates call
 *     (codeshape.c).
 * A few keep the exemption by name, each said in the table; a module and
 * way with no row is refused (fails closed). The program's objects are not called: the
 * source is read as an exact str or bytes, the file name as a str or
 * bytes, the bytecode's file from the library frame's own locals.
 */
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codeshape.h"

/* The text of o when it is a str or bytes (subclasses included: their
 * contents are read without calling them), else false. */
static bool text_of(PyObject *o, const char **s, Py_ssize_t *n)
{
	char *b;

	if (!o)
		return false;
	if (py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1) {
		*s = py.PyUnicode_AsUTF8AndSize(o, n);
	} else if (py.PyObject_IsInstance(o, py.PyBytes_Type) == 1 &&
		   py.PyBytes_AsStringAndSize(o, &b, n) == 0) {
		*s = b;
	} else {
		*s = NULL;
	}
	py.PyErr_Clear();
	return *s != NULL;
}

/* Is the file at path, from offset on, exactly s? The program must be
 * allowed to read it (no oracle on files it may not read); a FIFO or a
 * device is no source. */
static bool file_holds(const char *path, off_t offset, const char *s,
		       Py_ssize_t n)
{
	char buf[65536];
	struct stat st;
	bool same = false;
	off_t at = 0;
	int fd;

	if (sb_files_check(path, -1, false) < 0) {
		py.PyErr_Clear();
		return false;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != offset + (off_t)n)
		goto out;
	for (;;) {
		ssize_t got = read(fd, buf, sizeof(buf)), skip;

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto out;
		if (got == 0)
			break;
		/* the part of this chunk past the header, bounded by s: a
		 * file that grew since fstat() is no match */
		skip = at < offset ? (ssize_t)(offset - at) : 0;
		if (skip > got)
			skip = got;
		if (at + got > offset + (off_t)n)
			goto out;
		if (got > skip &&
		    memcmp(buf + skip, s + (at + skip - offset),
			   (size_t)(got - skip)) != 0)
			goto out;
		at += got;
	}
	same = at == offset + (off_t)n;
out:
	close(fd);
	return same;
}

/* compile(source, filename, ...) by the import system: a file's content. */
static bool from_file(PyObject *args, PyObject *frame)
{
	PyObject *file = args && py.PyTuple_Size(args) > 1
				 ? py.PyTuple_GetItem(args, 1)
				 : NULL;
	char path[PATH_MAX];
	const char *s;
	Py_ssize_t n;

	(void)frame;
	py.PyErr_Clear();
	if (!text_of(args ? py.PyTuple_GetItem(args, 0) : NULL, &s, &n))
		return false;
	if (n == 0)
		return true; /* NamespaceLoader.get_code: compile('') */
	if (!file || !(py.PyObject_IsInstance(file, py.PyUnicode_Type) == 1 ||
		       py.PyObject_IsInstance(file, py.PyBytes_Type) == 1)) {
		py.PyErr_Clear();
		return false;
	}
	return sb_arg_path(file, path) == 1 && file_holds(path, 0, s, n);
}

/* marshal.loads(data) in importlib's _compile_bytecode(data, name,
 * bytecode_path, source_path): the .pyc's content after its 16-byte
 * header. The frozen importer's get_frozen_object(name) takes no data. */
static bool bytecode_from_file(PyObject *args, PyObject *frame)
{
	PyObject *code = py.PyFrame_GetCode(frame), *name = NULL,
		 *locals = NULL, *key = NULL, *file = NULL;
	char path[PATH_MAX];
	const char *s, *fn;
	Py_ssize_t n;
	bool ok = false;

	if (!code)
		goto out;
	name = py.PyObject_GetAttrString(code, "co_name");
	fn = name && py.PyObject_IsInstance(name, py.PyUnicode_Type) == 1
		     ? py.PyUnicode_AsUTF8AndSize(name, &n)
		     : NULL;
	if (!fn)
		goto out;
	if (strcmp(fn, "_compile_bytecode") != 0) {
		ok = true; /* a frozen module, by its name */
		goto out;
	}
	if (!text_of(args ? py.PyTuple_GetItem(args, 0) : NULL, &s, &n))
		goto out;
	locals = py.PyObject_GetAttrString(frame, "f_locals");
	key = py.PyUnicode_FromString("bytecode_path");
	file = locals && key ? py.PyObject_GetItem(locals, key) : NULL;
	if (file && (py.PyObject_IsInstance(file, py.PyUnicode_Type) == 1 ||
		     py.PyObject_IsInstance(file, py.PyBytes_Type) == 1))
		ok = sb_arg_path(file, path) == 1 &&
		     file_holds(path, 16, s, n);
out:
	py.Py_DecRef(file);
	py.Py_DecRef(key);
	py.Py_DecRef(locals);
	py.Py_DecRef(name);
	py.Py_DecRef(code);
	py.PyErr_Clear();
	return ok;
}

/* ast.parse: compile(source, filename, mode, flags) with PyCF_ONLY_AST
 * in flags makes a tree, not code (the program's compile of a tree is
 * judged when it makes code of it). */
#define PYCF_ONLY_AST 0x0400

static bool tree_only(PyObject *args, PyObject *frame)
{
	long flags = 0;
	bool tree;

	(void)frame;
	tree = args && py.PyTuple_Size(args) > 3 &&
	       sb_arg_int(py.PyTuple_GetItem(args, 3), &flags) == 1 &&
	       (flags & PYCF_ONLY_AST);
	py.PyErr_Clear();
	return tree;
}

/* The maker checks what it is given itself: namedtuple takes only exact
 * str identifiers, gettext's c2py only the tokens of a plural formula;
 * types.coroutine changes the flags of the program's own code; zipimport
 * is judged by name (weaknesses.md 9: a member of an archive is not read
 * back). */
static bool by_name(PyObject *args, PyObject *frame)
{
	(void)args;
	(void)frame;
	return true;
}

static bool sharedctypes_property(const char *s, size_t n)
{
	return sb_shape_template(s, n, sb_shape_sharedctypes_property);
}

static bool managers_method(const char *s, size_t n)
{
	return sb_shape_template(s, n, sb_shape_managers_method);
}

static bool mock_function(const char *s, size_t n)
{
	return sb_shape_template(s, n, sb_shape_mock_function);
}

/* Every module and way the lists of args.c allow, and its judge: of the
 * call (judge), or of the source, a str or bytes (text). A module on a
 * list with no row for a way is refused that way (typing evaluated a
 * string put in a ForwardRef's __forward_code__, a way no row named until
 * 2026-12-04). Running a code object (SB_CODE_RUN) is always theirs: the
 * code was made by a judged compile. */
static const struct source_rule {
	const char *module;
	enum sb_code_way way;
	bool (*judge)(PyObject *args, PyObject *frame);
	bool (*text)(const char *s, size_t n);
} rules[] = {
	{ "importlib", SB_CODE_COMPILE, from_file, NULL },
	{ "runpy", SB_CODE_COMPILE, from_file, NULL },
	{ "pkgutil", SB_CODE_COMPILE, from_file, NULL },
	{ "py_compile", SB_CODE_COMPILE, from_file, NULL },
	{ "importlib", SB_CODE_MARSHAL, bytecode_from_file, NULL },
	{ "zipimport", SB_CODE_COMPILE, by_name, NULL },
	{ "zipimport", SB_CODE_MARSHAL, by_name, NULL },
	{ "ast", SB_CODE_COMPILE, tree_only, NULL },
	{ "typing", SB_CODE_COMPILE, NULL, sb_shape_type_expression },
	{ "typing", SB_CODE_RUN_STRING, NULL, sb_shape_type_expression },
	{ "inspect", SB_CODE_COMPILE, NULL, sb_shape_type_expression },
	{ "inspect", SB_CODE_RUN_STRING, NULL, sb_shape_type_expression },
	{ "dataclasses", SB_CODE_RUN_STRING, NULL, sb_shape_dataclass_code },
	{ "unittest.mock", SB_CODE_RUN_STRING, NULL, mock_function },
	{ "multiprocessing.managers", SB_CODE_RUN_STRING, NULL,
	  managers_method },
	{ "multiprocessing.sharedctypes", SB_CODE_RUN_STRING, NULL,
	  sharedctypes_property },
	{ "collections", SB_CODE_RUN_STRING, by_name, NULL },
	{ "gettext", SB_CODE_RUN_STRING, by_name, NULL },
	{ "types", SB_CODE_OBJECT, by_name, NULL },
};

bool sb_code_source_ok(const char *mod, enum sb_code_way way,
		       PyObject *args, PyObject *frame)
{
	size_t n = strlen(mod);
	const struct source_rule *r;
	const char *s;
	Py_ssize_t len;

	if (way == SB_CODE_RUN)
		return true;
	for (r = rules; r < rules + sizeof(rules) / sizeof(rules[0]); r++) {
		if (r->way != way || !sb_guard_module_is(mod, n, r->module))
			continue;
		if (r->judge)
			return r->judge(args, frame);
		return text_of(args ? py.PyTuple_GetItem(args, 0) : NULL, &s,
			       &len) &&
		       r->text(s, (size_t)len);
	}
	return false;
}
