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
#include "policy.h"

/* Check the unshare.* keys: 0, or -1 with a message in *err naming the
 * unknown key (pure: no syscall). *hostname is unshare.hostname, else
 * "sandbox". */
int sb_ns_options(struct sb_arena *a, const struct sb_policy *p,
		  const char **hostname, const char **err);

/* The text of the sandbox's /etc/hosts: localhost, then one line per
 * pinned address (pure). */
const char *sb_ns_hosts(struct sb_arena *a, const struct sb_policy *p);

/* The new root, as a list of steps: directories and links as on the host,
 * bind mounts of host paths (symlinks resolved, parents before children
 * once sorted by length), and the masks of ignore=. */
enum sb_ns_op_kind {
	SB_NS_DIR,  /* a directory of the new root */
	SB_NS_LINK, /* a symbolic link, as on the host ('link': its text) */
	SB_NS_BIND, /* bind-mount the host path ('fd': it, opened O_PATH) */
	SB_NS_MASK, /* an empty, read-only file or directory over 'path' */
};

struct sb_ns_op {
	enum sb_ns_op_kind kind;
	const char *path; /* absolute, the same inside as on the host */
	const char *link;
	const char *what; /* the rule, or "implicit path" */
	int fd;           /* SB_NS_BIND: O_PATH|O_CLOEXEC, the caller's */
	bool is_dir, writable;
	bool user; /* SB_NS_BIND of a rule the user wrote (not implicit) */
};

/* Plan the new root for this policy, interpreter and script (ctx): the
 * operations in mount order (kind, then shorter paths first). 0, or -1
 * with *err naming the rule and the path that cannot be exposed. Reads the
 * file system; the caller closes the fds. */
int sb_ns_plan(struct sb_arena *a, const struct sb_policy *p,
	       const struct sb_kernel_ctx *ctx, struct sb_ns_op **ops,
	       size_t *n, const char **err);

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
