/* support.h - where python-sb's own files are (support.c): the guard
 * library, the pysandboxes package and what lies beside them (the qemu
 * guest init). Reads the file system only.
 */
#ifndef SB_SUPPORT_H
#define SB_SUPPORT_H

#include "util.h"

#define SB_GUARD_LIB "libpysb-guard.so"

/* The guard library and the directory holding the pysandboxes package:
 * beside the binary in a build tree, in a pip venv (<venv>/bin/python-sb,
 * <venv>/lib/pythonX.Y/site-packages/pysandboxes/_lib/), else where
 * 'make install' put them. 0, or -1 when the installation has none (the
 * outputs are then untouched). */
int sb_find_support(struct sb_arena *a, const char **guard,
		    const char **pkgdir);

#endif
