/* run.h - start the program under the policy (complete mode). */
#ifndef SB_RUN_H
#define SB_RUN_H

#include "cli.h"
#include "interp.h"
#include "policy.h"

/* Run the command under the policy; returns python-sb's exit status. */
int sb_run(const struct sb_policy *p, const struct sb_cli *cli,
	   const struct sb_interp *interp, const char *const *envp);

#endif
