/* extprov.h - os-sandbox=bwrap and os-sandbox=firejail (extprov.c): the
 * policy translated to the command line of the Debian packages' binaries,
 * which then run the interpreter. Launcher-setup code: it prints its errors
 * and returns python-sb's exit status.
 */
#ifndef SB_EXTPROV_H
#define SB_EXTPROV_H

#include "kernel.h"
#include "policy.h"

/* The tool's command line for this policy (pure apart from reading the
 * file system for the plan, ns.h): a NULL-terminated argv whose [0] is the
 * tool's path ('tool'), ending with "--", 'self' (python-sb's binary, made
 * visible read-only), SB_STAGE_FLAG 'stage_fd', "--", the interpreter and
 * argv[1...]: the tool runs python-sb's second stage (stage.h), which
 * applies the kernel layer inside the tool's namespaces. The tools run with
 * an empty environment: the program's is in the stage record, so that the
 * guard in LD_PRELOAD is never loaded into the tool or the stage and no
 * value shows on a command line. 'hosts_fd' is an fd holding the
 * /etc/hosts text, or -1; 'policy_fd' the policy blob. Returns NULL with
 * *err on a bwrap.* rule bwrap cannot take or a path that cannot be
 * exposed. */
char **sb_extprov_argv(struct sb_arena *a, const struct sb_policy *p,
		       enum sb_provider provider, const char *tool,
		       const struct sb_kernel_ctx *ctx, const char *self,
		       char *const argv[], int hosts_fd, int policy_fd,
		       int stage_fd, const char **err);

/* Find the tool, write the stage record, build its command line and exec
 * it (no extra process: the tool is the program's grandparent and returns
 * its exit status). 'env' is the program's environment; 'policy_fd' the
 * policy blob, which the guard reads too when 'guarded'. Returns 255 after
 * a message when it cannot: a missing tool names the package to install. */
int sb_extprov_run(struct sb_arena *a, const struct sb_policy *p,
		   enum sb_provider provider, const struct sb_kernel_ctx *ctx,
		   char *const argv[], char *const env[], int policy_fd,
		   bool guarded);

#endif
