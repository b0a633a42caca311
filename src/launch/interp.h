/* interp.h - which Python interpreter python-sb runs (DESIGN.md). */
#ifndef SB_INTERP_H
#define SB_INTERP_H

#include "kernel.h" /* struct sb_interp: what the kernel layer is given */
#include "util.h"

/* Choose: --python=PATH, else $PYSB_PYTHON, else a python3 next to the
 * python-sb binary, else $VIRTUAL_ENV/bin/python, else python3 on PATH. A
 * pyenv shim is resolved to the interpreter it selects, natively; another
 * script is refused (it would run outside the sandbox). Returns 0, or -1
 * with a message in *err. */
int sb_interp_find(struct sb_arena *a, const char *explicit_path,
		   const char *const *envp, const char *cwd,
		   struct sb_interp *out, const char **err);

#endif
