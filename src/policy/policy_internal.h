/* policy_internal.h - what the directive parsers share inside the policy
 * module: the single error path, the parse context, and one entry point per
 * directive family. Only policy*.c, api_registry.c and the unit tests include
 * it.
 */
#ifndef SB_POLICY_INTERNAL_H
#define SB_POLICY_INTERNAL_H

#include "policy.h"

/* The single error path: "<ref>: <message>". Pure, never prints. */
void sb_error(struct sb_policy *p, struct sb_ref ref, const char *fmt, ...)
	SB_PRINTF(3, 4);
void sb_warning(struct sb_policy *p, struct sb_ref ref, const char *fmt, ...)
	SB_PRINTF(3, 4);
/* An error with a preformatted multi-location prefix (2.7 duplicates). */
void sb_error_at_refs(struct sb_policy *p, const struct sb_ref *refs,
		      size_t n, const char *fmt, ...) SB_PRINTF(4, 5);

/* Sort errors by file, then line (stable). */
void sb_diag_sort(struct sb_policy *p);

/* A rule being parsed: its whole text ("key=value"), key and value split at
 * the first '=', and where it came from. */
struct sb_line {
	const char *text;
	const char *key;
	const char *value;
	struct sb_ref ref;
};

/* net= (policy_net.c): appends to p->nets and p->pins, resolving host names
 * with opts->resolve. Always claims the line. */
void sb_parse_net(struct sb_policy *p, const struct sb_parse_opts *opts,
		  const struct sb_line *l);
/* After all net= lines: order DENY before ALLOW, keeping file order. */
void sb_net_finish(struct sb_policy *p);

/* python-api= (api_registry.c): record the line; sb_api_finish() resolves
 * every rule into p->api_allow (specificity, DENY wins ties). */
void sb_parse_api(struct sb_policy *p, const struct sb_line *l);
void sb_api_finish(struct sb_policy *p);

/* eval-* (policy_eval.c): 'key' starts with "eval-". Always claims the
 * line. sb_eval_finish() fills defaults into every profile. */
void sb_parse_eval(struct sb_policy *p, const struct sb_line *l);
void sb_eval_finish(struct sb_policy *p);

/* limit-* (policy_limits.c): one single-valued key, chosen by the
 * caller's duplicate handling; fills p->limits[which] or adds an error. */
/* A size rule (digits, an optional K, M, G or T suffix, at least 1) into
 * *out: 0, or -1 with the error added, worded as the limits' are. */
int sb_parse_size(struct sb_policy *p, const struct sb_line *l,
		  const char *key, uint64_t *out);
void sb_parse_limit(struct sb_policy *p, enum sb_limit which,
		    const struct sb_line *l);

/* python-sb's own files (policy_own.c): the rule file, its includes and
 * its backups become ignore= rules of origin SB_REF_OWN, unless an
 * exposure names one exactly. An absent include, or one of 'shadows' (a
 * rule file the next run would read first), that the program could make
 * is an error. Not in a learning run. */
void sb_protect_own_files(struct sb_policy *p, const char *const *shadows,
			  size_t n_shadows);

/* Closest known token for suggestions (difflib-like ratio >= 0.6), or NULL. */
const char *sb_closest(const char *word, const char *const *known, size_t n);

#endif
