/* modtab.c - the one table of modules python-sb judges by name
 * (py-sandboxes(5), python-import= and LEARNING): those that by themselves hand
 * out raw memory or native code, or reach files, processes or the network
 * without an audit event the guard judges, which the guard imports only with
 * the native grant (guard/imports.c), and the others that can undo the guard or run code
 * around it. Every native module is a dangerous one, so the rule review and
 * learning, which read the same rows, grade and group each of them as the guard
 * treats it. Pure: no I/O, no Python, never prints.
 */
#include "modtab.h"

#include <string.h>

#include "util.h"

/* 'native' (the guard wants python-api=ALLOW:native to import it): hands
 * out raw memory by itself, or ('outside' set) reaches files, processes
 * or the network in C without an audit event the guard judges, so that a
 * python-import= rule would hand out what the file, process and network
 * rules refuse. CPython's _test* helpers (_testcapi,
 * _testinternalcapi...) read and write memory by address too, matched by
 * prefix below; _remote_debugging reads other processes'. (The
 * subinterpreter modules are the process-exec entries' to judge.)
 *
 * The extension modules of CPython 3.9 to 3.13 (lib-dynload and the
 * builtins), as judged here; what is not a row is an ordinary module:
 *
 *   module                   decision  why
 *   _ctypes _cffi_backend    native    raw memory, calls into any library
 *   _test* _remote_debugging native    memory by address, other processes'
 *   readline                 native    read/write/append_history_file,
 *                                      read_init_file: any path, unaudited
 *   _tkinter                 native    a Tcl interpreter: exec, open,
 *                                      socket, load, unaudited
 *   _curses _curses_panel    native    setupterm/initscr read terminfo
 *                                      where $TERMINFO says; putwin/getwin
 *                                      through a temporary file
 *   _dbm _gdbm               native    open(path) in C, no "open" event
 *                                      (dbm falls back to dbm.dumb, whose
 *                                      open() the file rules judge)
 *   _posixshmem              native    shm_open/shm_unlink: /dev/shm files
 *   _multiprocessing         ordinary  sem_open/sem_unlink name POSIX
 *                                      semaphores (/dev/shm/sem.NAME only:
 *                                      glibc refuses a '/'), no content;
 *                                      under subprocess the program could
 *                                      unlink another's semaphore by name
 *                                      (weaknesses.md). Kept open: every
 *                                      multiprocessing lock, queue and pool
 *                                      needs it
 *   syslog                   native    /dev/log; audited from 3.12 only,
 *                                      and the guard judges no syslog.*
 *   nis                      native    NIS queries to the network
 *   spwd                     native    /etc/shadow (python-sb may be root)
 *   ossaudiodev              native    opens a device by path
 *   mmap                     guard     mmap.__new__ audited, descriptors
 *   fcntl termios resource   ordinary  descriptors the program holds;
 *                                      fcntl.*, resource.setrlimit and
 *                                      prlimit are audited and judged
 *   select _socket _ssl      ordinary  descriptors; connections judged by
 *                                      the network guard (socket.*)
 *   _sqlite3                 ordinary  sqlite3.connect judged as a file
 *                                      (files.c); ATTACH and VACUUM INTO
 *                                      by the guard's authorizer, and
 *                                      enable_load_extension needs the
 *                                      native grant (clibs.c)
 *   _ssl                     ordinary  load_verify_locations,
 *                                      load_cert_chain, load_dh_params and
 *                                      $SSL_CERT_FILE/DIR judged as reads
 *                                      (clibs.c); keylog_filename raises
 *                                      "open"
 *   pwd grp                  ordinary  read-only account lookups by name
 *                                      or id, no path (expanduser,
 *                                      getpass, pathlib, tarfile need them)
 *   _uuid                    ordinary  libuuid asks uuidd for a time and
 *                                      keeps a clock file: both judged as
 *                                      writes (sysfiles.c)
 *   _posixsubprocess         ordinary  fork_exec: process-exec entry
 *   _xxsubinterpreters _interpreters ...  process-exec entries (create)
 *   _lzma _bz2 zlib binascii _hashlib _blake2 _md5 _sha* _struct _json
 *   _pickle _csv _datetime _decimal _elementtree pyexpat _heapq _bisect
 *   _random _statistics _queue _contextvars _asyncio _zoneinfo array
 *   cmath math unicodedata _opcode _lsprof audioop _crypt _typing
 *   _multibytecodec _codecs_* _ctypes_test xxlimited* xxsubtype
 *   _xxtestfuzz and the builtins (posix, _signal, _thread... judged by
 *   their functions)         ordinary  computation on values; the files
 *                                      they read go through open()
 */
enum mod_kind {
	MOD_GUARD,   /* can undo the guard, no raw memory by itself */
	MOD_NATIVE,  /* raw memory or native code */
	MOD_OUTSIDE, /* reaches outside without an audit event judged */
};

static const struct {
	const char *name;
	enum mod_kind kind;
	const char *why; /* MOD_OUTSIDE: what it reaches, for the refusal */
} modules[] = {
	{ "_cffi_backend", MOD_NATIVE, NULL },
	{ "_ctypes", MOD_NATIVE, NULL },
	{ "_curses", MOD_OUTSIDE,
	  "reads terminal descriptions where $TERMINFO says" },
	{ "_curses_panel", MOD_OUTSIDE,
	  "reads terminal descriptions where $TERMINFO says" },
	{ "_dbm", MOD_OUTSIDE, "opens database files by path" },
	{ "_gdbm", MOD_OUTSIDE, "opens database files by path" },
	{ "_posixshmem", MOD_OUTSIDE,
	  "creates and removes shared memory files in /dev/shm" },
	{ "_remote_debugging", MOD_NATIVE, NULL },
	{ "_tkinter", MOD_OUTSIDE,
	  "runs Tcl, which starts processes, opens files and sockets" },
	{ "atexit", MOD_GUARD, NULL },
	{ "bdb", MOD_GUARD, NULL },
	{ "cProfile", MOD_GUARD, NULL },
	{ "cffi", MOD_NATIVE, NULL },
	{ "code", MOD_GUARD, NULL },
	{ "codeop", MOD_GUARD, NULL },
	{ "ctypes", MOD_NATIVE, NULL },
	{ "faulthandler", MOD_GUARD, NULL },
	{ "importlib", MOD_GUARD, NULL },
	{ "inspect", MOD_GUARD, NULL },
	{ "mmap", MOD_GUARD, NULL },
	{ "nis", MOD_OUTSIDE, "queries NIS servers on the network" },
	{ "ossaudiodev", MOD_OUTSIDE, "opens devices by path" },
	{ "pdb", MOD_GUARD, NULL },
	{ "pkgutil", MOD_GUARD, NULL },
	{ "posix", MOD_GUARD, NULL },
	{ "readline", MOD_OUTSIDE,
	  "reads and writes history and init files by path" },
	{ "spwd", MOD_OUTSIDE, "reads the shadow password file" },
	{ "subprocess", MOD_GUARD, NULL },
	{ "syslog", MOD_OUTSIDE, "writes to the system log" },
	{ "webbrowser", MOD_GUARD, NULL },
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
	return i >= 0 && modules[i].kind != MOD_GUARD;
}

const char *sb_modtab_outside(const char *name)
{
	int i = find(name);

	return i >= 0 && modules[i].kind == MOD_OUTSIDE ? modules[i].why
							 : NULL;
}

bool sb_modtab_is_dangerous(const char *name)
{
	return sb_modtab_is_native(name) || find(name) >= 0;
}
