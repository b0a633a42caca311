/* netsup.h - the network supervisor of os-sandbox=landlock (netsup.c):
 * python-sb stays as the program's parent and answers the seccomp
 * notifications of its socket calls by the net= and file rules.
 */
#ifndef SB_NETSUP_H
#define SB_NETSUP_H

#include "kernel.h"
#include "policy.h"

/* Fork; the child applies the kernel layer with the notification rules
 * (sb_kernel_apply), hands its listener to this process and execs 'path'
 * with 'argv' and 'envp'; it dies with SIGKILL when python-sb dies. This
 * process serves the notifications, passes the signals on to the program,
 * which runs in a session of its own (SB_SUP_OWN_SESSION, supervisor.h),
 * and returns when the child ends: its exit status, 128+N for signal N
 * (or 124 when a limit ended it), 255 when the kernel layer could not be
 * applied or the program could not start (the child says why on stderr).
 * The policy must stay alive and unchanged while it runs. */
int sb_netsup_run(struct sb_arena *a, const struct sb_policy *p,
		  const struct sb_kernel_ctx *ctx, const char *path,
		  char *const argv[], char *const envp[]);

#endif
