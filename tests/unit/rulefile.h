/* rulefile.h - for the unit tests that need a parsed policy: write 'rules'
 * as DIR/.py-sandboxes, parse it as python-sb would from DIR (no
 * environment, 'resolve' for host names, or none), remove the file, and
 * return the policy; NULL when it does not parse cleanly. */
#ifndef SB_TEST_RULEFILE_H
#define SB_TEST_RULEFILE_H

#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "policy.h"

static inline struct sb_policy *parse_rule_file(const char *dir,
						const char *rules,
						sb_resolve_fn resolve)
{
	struct sb_parse_opts o = { 0 };
	const char *env[] = { NULL };
	struct sb_policy *p = NULL;
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/.py-sandboxes", dir);
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(rules, f);
	fclose(f);
	o.cwd = dir;
	o.envp = env;
	o.resolve = resolve;
	if (sb_policy_parse(&o, &p) != 0 || !p || p->errors.n)
		p = NULL;
	unlink(path);
	return p;
}

#endif
