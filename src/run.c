/* run.c - complete mode: start the interpreter under the policy. Until the
 * guard library exists, refuse: never run a program unguarded. */
#include <stdio.h>

#include "run.h"

int sb_run(const struct sb_policy *p, const struct sb_cli *cli,
	   const struct sb_interp *interp, const char *const *envp)
{
	fprintf(stderr, "python-sb: running a program needs the guard "
			"library, which this build does not have yet; "
			"nothing was run.\n");
	return 255;
}
