/* selfprotect.h - python-sb's own files under os-sandbox=landlock
 * (selfprotect.c). Launcher-setup code, run in the process that becomes
 * the program, before its Landlock ruleset.
 */
#ifndef SB_SELFPROTECT_H
#define SB_SELFPROTECT_H

#include "policy.h"

/* Make every own file of the policy (the ignore= rules of origin
 * SB_REF_OWN, policy_own.c) that a writable exposure covers read-only for
 * this process and its children: a private mount namespace (and user
 * namespace when not root) where each is bind-mounted read-only onto
 * itself, and the directories between it and the exposure are pinned
 * (bound onto themselves: a mount point cannot be renamed or removed).
 * Nothing to do: no namespace. 0, or -1 with *err (and *hint: the way
 * out) when it cannot be had; the caller runs nothing then. */
int sb_selfprotect_apply(struct sb_arena *a, const struct sb_policy *p,
			 const char **err, const char **hint);

#endif
