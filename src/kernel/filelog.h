/* filelog.h - the denial log's record of the file calls Landlock refuses.
 * With a denial log the seccomp filter sends the file calls to the
 * supervisor (seccomp.c, debug flavour); for each, filelog.c compares what
 * the call needs with the ruleset Landlock enforces (landlock.h's view)
 * and writes a record when a right is missing. The supervisor then lets
 * the call go on: Landlock refuses it, this file only tells.
 */
#ifndef SB_FILELOG_H
#define SB_FILELOG_H

#include <linux/seccomp.h>
#include <sys/types.h>

#include "kernel.h"

struct sb_filelog;

/* The log's view of the ruleset the child will apply (same policy, same
 * context), or NULL when this kernel has no Landlock. */
struct sb_filelog *sb_filelog_new(struct sb_arena *a,
				  const struct sb_policy *p,
				  const struct sb_kernel_ctx *ctx);

/* Record what of file call 'req' Landlock will refuse; 'listener' checks
 * that the caller still waits (a pid reused meanwhile is not recorded). */
void sb_filelog_note(struct sb_filelog *fl, int listener,
		     const struct seccomp_notif *req);

/* Is 'target' in the sandbox's domain: 'root' or below it, or an orphan
 * of it that python-sb (the subreaper) took, never python-sb itself? Read
 * from /proc now: a pid the caller names may be another's a moment
 * later. */
bool sb_filelog_in_sandbox(pid_t target, pid_t root);

/* Record a signal that Landlock's scope will refuse: call 'req'
 * (sb_sigcall_handles) names a process outside the sandbox, whose first
 * process is 'root' (its descendants, and the orphans python-sb reaps,
 * are inside). */
void sb_filelog_signal(struct sb_filelog *fl, int listener,
		       const struct seccomp_notif *req, pid_t root);

#endif
