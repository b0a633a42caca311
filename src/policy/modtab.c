/* modtab.c - the one table of modules python-sb judges by name
 * (py-sandboxes(5), python-import= and LEARNING): those that by themselves hand
 * out raw memory or native code, which the guard imports only with the native
 * grant (guard/imports.c), and the others that can undo the guard or run code
 * around it. Every native module is a dangerous one, so the rule review and
 * learning, which read the same rows, grade and group each of them as the guard
 * treats it. Pure: no I/O, no Python, never prints.
 */
#include "modtab.h"

#include <string.h>

#include "util.h"

/* 'native': hands out raw memory by itself. CPython's _test* helpers
 * (_testcapi, _testinternalcapi...) read and write memory by address too,
 * matched by prefix below; _remote_debugging reads other processes'. (The
 * subinterpreter modules are the process-exec entries' to judge.) */
static const struct {
	const char *name;
	bool native;
} modules[] = {
	{ "_cffi_backend", true },
	{ "_ctypes", true },
	{ "_remote_debugging", true },
	{ "atexit", false },
	{ "bdb", false },
	{ "cProfile", false },
	{ "cffi", true },
	{ "code", false },
	{ "codeop", false },
	{ "ctypes", true },
	{ "faulthandler", false },
	{ "importlib", false },
	{ "inspect", false },
	{ "mmap", false },
	{ "pdb", false },
	{ "pkgutil", false },
	{ "posix", false },
	{ "subprocess", false },
	{ "webbrowser", false },
};

/* The row of 'name': its index, or -1. */
static int find(const char *name)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(modules); i++)
		if (strcmp(name, modules[i].name) == 0)
			return (int)i;
	return -1;
}

bool sb_modtab_is_native(const char *name)
{
	int i;

	if (strncmp(name, "_test", 5) == 0)
		return true;
	i = find(name);
	return i >= 0 && modules[i].native;
}

bool sb_modtab_is_dangerous(const char *name)
{
	return sb_modtab_is_native(name) || find(name) >= 0;
}
