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
		/* reach outside without an audit event the guard judges:
		 * the native grant too */
		{ "readline", true, true },
		{ "_tkinter", true, true },
		{ "_curses", true, true },
		{ "_curses_panel", true, true },
		{ "_dbm", true, true },
		{ "_gdbm", true, true },
		{ "_posixshmem", true, true },
		{ "syslog", true, true },
		{ "nis", true, true },
		{ "spwd", true, true },
		{ "ossaudiodev", true, true },
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
		{ "_ssl", false, false },
		{ "_sqlite3", false, false },
		{ "termios", false, false },
		{ "fcntl", false, false },
		{ "pwd", false, false },
		{ "_multiprocessing", false, false }, /* named semaphores */
		{ "tkinter", false, false }, /* its _tkinter is judged */
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

/* the refusal says what a module reaches when it is not raw memory */
static void test_outside(void)
{
	ok(sb_modtab_outside("readline") != NULL, "readline says why");
	ok(sb_modtab_outside("_tkinter") != NULL, "_tkinter says why");
	ok(sb_modtab_outside("_ctypes") == NULL, "_ctypes is raw memory");
	ok(sb_modtab_outside("atexit") == NULL, "atexit needs no grant");
	ok(sb_modtab_outside("json") == NULL, "json is not a row");
}

int main(void)
{
	test_classes();
	test_outside();
	return tap_done();
}
