/* guard_seal.h - the seal that makes a run fail closed when the guard
 * library is not loaded into the interpreter.
 *
 * The guard enters by LD_PRELOAD, and the dynamic linker only prints a
 * warning when it cannot preload a library (missing, truncated, unreadable
 * by the user, built for another machine): the interpreter would then run
 * the program without the Python layer. So python-sb starts the
 * interpreter as `PY -c SB_SEAL_CODE <options and command>`: without the
 * guard, Python runs SB_SEAL_CODE, which says so and exits 255 before
 * reading anything else of the command line (-c ends option parsing; -I
 * and -E do not change that). The guard's constructor, which runs before
 * Python reads its arguments, checks the two words and rewrites them in
 * place into `-X SB_SEAL_OPEN` (padded with spaces to the seal's length),
 * an implementation option CPython keeps in sys._xoptions and otherwise
 * ignores. Shared by the launcher (run.c), which writes the seal, and the
 * guard (guard.c), which opens it.
 */
#ifndef SB_GUARD_SEAL_H
#define SB_GUARD_SEAL_H

#define SB_SEAL_FLAG "-c"
#define SB_SEAL_CODE                                                      \
	"import os;os.write(2,b'python-sb: the guard library was not loaded " \
	"(see above); nothing was run\\n');os._exit(255)"
/* at most as long as SB_SEAL_CODE */
#define SB_SEAL_OPEN "pysb-guard=loaded"

#endif
