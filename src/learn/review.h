/* review.h - grading a change to rule files by risk (python-sb(1), RULE
 * REVIEW): what `python-sb --pysandboxes-review` prints for a reviewer of a
 * pull request.
 *
 * Pure code, like the parser it uses: every rule line goes through the
 * parser's lexer and the parser itself (flat mode, no file read, no name
 * resolved), so what is graded is what the enforcer reads; the dangerous
 * modules are the guard's table (modtab.c) and the warning categories the
 * API registry's.
 */
#ifndef SB_REVIEW_H
#define SB_REVIEW_H

#include <stdbool.h>

#include "util.h"

/* Riskiest first: the order of the table. */
enum sb_risk {
	SB_RISK_INVALID, /* the parser refuses the rule: nothing would run */
	SB_RISK_HIGH,
	SB_RISK_MEDIUM,
	SB_RISK_LOW,
	SB_RISK_COUNT
};

const char *sb_risk_name(enum sb_risk r);

struct sb_review_item {
	enum sb_risk risk;
	const char *file;
	const char *rule;       /* as lexed: stripped, comment cut */
	const char *why;
	const char *learned_by; /* from a "# Learned by ..." line, else NULL */
	bool removed;
	bool restricts; /* a denial or a lock: removing it widens */
};

struct sb_review {
	struct sb_arena *arena;
	SB_VEC(struct sb_review_item) items; /* in the order found */
};

/* Grade one line of a rule file (a rule or an include line): fills risk,
 * why, rule and restricts of *it. Returns false when the line holds no rule
 * (blank, comment). */
bool sb_review_grade(struct sb_arena *a, const char *line,
		     struct sb_review_item *it);

/* Is 'path' a rule file the review reads from a diff (its base name holds
 * ".py-sandboxes" or "py-sandboxes.profile")? */
bool sb_review_is_rule_file(const char *path);

/* Add the rule lines a unified diff (git diff, diff -u; several files)
 * adds and removes in rule files. Returns the number of rule files seen. */
size_t sb_review_add_diff(struct sb_review *r, const char *text);

/* Add what changes from old_text to new_text (either may be NULL: absent),
 * as sets of rules: order and duplicates do not change a profile. */
void sb_review_add_files(struct sb_review *r, const char *old_name,
			 const char *old_text, const char *new_name,
			 const char *new_text);

/* The report: Markdown (table of added rules riskiest first, then the
 * removed ones) or JSON {"added": [...], "removed": [...]}. */
void sb_review_format(const struct sb_review *r, bool json,
		      struct sb_buf *out);

/* The riskiest grade among added rules; SB_RISK_COUNT when none. */
enum sb_risk sb_review_worst(const struct sb_review *r);

/* review_main.c: the command (argv[0] is "--pysandboxes-review"); returns
 * the exit status. */
int sb_review_main(int argc, char **argv);

#endif
