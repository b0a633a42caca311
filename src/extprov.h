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
 * tool's path ('tool'), ending with "--", 'path' and argv[1...].
 * 'env' is what the program must get (NAME=VALUE): the tools are run with
 * an empty environment and set it inside, so that the guard in LD_PRELOAD
 * is never loaded into the tool itself. 'hosts_fd' is an fd holding the
 * /etc/hosts text, or -1. Returns NULL with *err on a bad provider key or
 * a path that cannot be exposed. */
char **sb_extprov_argv(struct sb_arena *a, const struct sb_policy *p,
		       enum sb_provider provider, const char *tool,
		       const struct sb_kernel_ctx *ctx, const char *script,
		       const char *path, char *const argv[],
		       char *const env[], int hosts_fd, const char **err);

/* Find the tool, build its command line and exec it (no extra process:
 * the tool is the program's parent and returns its exit status). Returns
 * 255 after a message when it cannot: a missing tool names the package to
 * install. */
int sb_extprov_run(struct sb_arena *a, const struct sb_policy *p,
		   enum sb_provider provider, const struct sb_kernel_ctx *ctx,
		   const char *script, const char *path, char *const argv[],
		   char *const env[]);

#endif
