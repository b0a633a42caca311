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
 * 'make install' put them. 0; -1 when the installation has none; -2 when
 * users other than the one running could change them, the directories
 * above them or what the package holds (trust.h, as for the rule file):
 * *why (when why is not NULL) is then the message, ending in a newline.
 * On failure the outputs are untouched. */
int sb_find_support(struct sb_arena *a, const char **guard,
		    const char **pkgdir, const char **why);

/* Another file of python-sb's (the qemu guest init), judged as
 * sb_find_support() judges the guard: NULL, or the message. */
const char *sb_support_untrusted(struct sb_arena *a, const char *path);

#endif
