/* ns.h - os-sandbox=unshare, natively (ns.c): the program runs in new user
 * (when not root), mount, pid, ipc, uts and cgroup namespaces, and a new
 * network namespace when the policy has no net= rule, on a root that holds
 * only what the policy exposes and what the interpreter needs; Landlock and
 * seccomp are layered inside. Launcher-setup code: it prints its errors and
 * returns python-sb's exit status.
 */
#ifndef SB_NS_H
#define SB_NS_H

#include "kernel.h"
#include "mountplan.h"
#include "policy.h"

/* Run 'path' with 'argv' and 'envp' under os-sandbox=unshare. ctx->script
 * (the file the interpreter runs; NULL: -c, -m, the REPL) is mounted
 * read-only. python-sb stays outside as the parent and forwards SIGINT,
 * SIGTERM, SIGQUIT, SIGHUP, SIGUSR1 and SIGUSR2 that another process
 * sends; a tiny init is pid 1 inside, reaps zombies, and ends with the
 * program. Returns the program's exit status, 128+N for signal N, or 255
 * (after a message on stderr) when the sandbox could not be built: nothing
 * ran then. */
int sb_ns_run(struct sb_arena *a, const struct sb_policy *p,
	      const struct sb_kernel_ctx *ctx, const char *path,
	      char *const argv[], char *const envp[]);

#endif
