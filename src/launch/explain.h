/* explain.h - --pysandboxes-explain: what the rule file does not show. */
#ifndef SB_EXPLAIN_H
#define SB_EXPLAIN_H

#include "policy.h"

/* What the launcher knows that the policy does not: which provider would
 * really run and why (availability, fallbacks), one line per entry. */
struct sb_explain_ctx {
	const char *provider_verdict; /* e.g. "subprocess: the Python layer..." */
	/* what the kernel layer keeps read-only by a mount inside writable
	 * trees (selfprotect.c), or NULL */
	const char *kept;
	const char *interpreter;      /* the Python that would run, or NULL */
	/* its standard library directory (canonical), or NULL: the guard
	 * exposes it read-only unless a rule names it or a deeper path */
	const char *stdlib;
	/* one line per limit-* rule: which mechanism holds it here */
	const char *const *limits;
	size_t n_limits;
};

/* Format the effective policy: one rule per line with its origin, then the
 * files read, the environment names (never values), the pinned names, the
 * provider and the mode. The output is itself a valid rule file. */
void sb_explain(const struct sb_policy *p, const struct sb_explain_ctx *ctx,
		struct sb_buf *out);

#endif
