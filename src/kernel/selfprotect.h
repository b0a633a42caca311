/* selfprotect.h - python-sb's own files under os-sandbox=landlock
 * (selfprotect.c). Launcher-setup code, run in the process that becomes
 * the program, before its Landlock ruleset.
 */
#ifndef SB_SELFPROTECT_H
#define SB_SELFPROTECT_H

#include "kernel.h"
#include "policy.h"

/* Make every own file of the policy (the ignore= rules of origin
 * SB_REF_OWN, policy_own.c), every read-only exposure (expose-ro=,
 * expose-list=, the implicit read-only paths of ctx: the interpreter's
 * tree, the guard) and python-sb's own program that an expose-rw= covers
 * read-only for this process and its children: a private mount namespace
 * (and user namespace when not root) where each is bind-mounted read-only
 * onto itself, a writable exposure inside one bound writable again, and
 * every directory on the way to them whose parent is writable pinned
 * (bound onto itself: a mount point cannot be renamed or removed).
 * Nothing to do: no namespace. 0, or -1 with *err (and *hint: the way
 * out) when it cannot be had; the caller runs nothing then. */
int sb_selfprotect_apply(struct sb_arena *a, const struct sb_policy *p,
			 const struct sb_kernel_ctx *ctx, const char **err,
			 const char **hint);

/* For --pysandboxes-explain: one sentence naming what the namespace above
 * keeps read-only (and what it makes writable again), or NULL when
 * nothing is kept (no namespace). Reads the file system, mounts nothing. */
const char *sb_selfprotect_describe(struct sb_arena *a,
				    const struct sb_policy *p,
				    const struct sb_kernel_ctx *ctx);

#endif
