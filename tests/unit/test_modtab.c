/* test_modtab.c - the one table of modules judged by name (modtab.c): which
 * ones the guard treats as native code with raw memory, and that each of
 * them is dangerous for learning and the rule review too. */
#include "modtab.h"
#include "tap.h"
#include "util.h"

static void test_classes(void)
{
	static const struct {
		const char *name;
		bool native, dangerous;
	} cases[] = {
		/* the guard's raw-memory modules */
		{ "_ctypes", true, true },
		{ "ctypes", true, true },
		{ "_cffi_backend", true, true },
		{ "cffi", true, true },
		{ "_remote_debugging", true, true },
		{ "_testcapi", true, true },
		{ "_testinternalcapi", true, true },
		{ "_testbuffer", true, true },
		/* can undo the guard, no raw memory by themselves */
		{ "atexit", false, true },
		{ "bdb", false, true },
		{ "cProfile", false, true },
		{ "code", false, true },
		{ "codeop", false, true },
		{ "faulthandler", false, true },
		{ "importlib", false, true },
		{ "inspect", false, true },
		{ "mmap", false, true },
		{ "pdb", false, true },
		{ "pkgutil", false, true },
		{ "posix", false, true },
		{ "subprocess", false, true },
		{ "webbrowser", false, true },
		/* ordinary, and near misses */
		{ "json", false, false },
		{ "_socket", false, false },
		{ "_tes", false, false },
		{ "test", false, false },
		{ "ctypesx", false, false },
		{ "Ctypes", false, false },
		{ "ctypes.util", false, false }, /* callers pass a top name */
		{ "", false, false },
	};
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		ok(sb_modtab_is_native(cases[i].name) == cases[i].native,
		   "'%s' is %snative", cases[i].name,
		   cases[i].native ? "" : "not ");
		ok(sb_modtab_is_dangerous(cases[i].name) == cases[i].dangerous,
		   "'%s' is %sdangerous", cases[i].name,
		   cases[i].dangerous ? "" : "not ");
	}
}

int main(void)
{
	test_classes();
	return tap_done();
}
