/* mountplan.h - the plan of the new root of the namespace providers and
 * qemu (mountplan.c): the unshare.* options, the sandbox's /etc/hosts,
 * and the mount plan. Reads the file system, mounts nothing.
 */
#ifndef SB_MOUNTPLAN_H
#define SB_MOUNTPLAN_H

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

/* Open the source of every SB_NS_BIND of the plan (O_PATH|O_NOFOLLOW),
 * once the namespaces are entered: 0, or -1 with *err naming the rule and
 * the path that is missing or is no longer what the plan saw. */
int sb_ns_plan_open(struct sb_arena *a, struct sb_ns_op *ops, size_t n,
		    const char **err);

#endif
