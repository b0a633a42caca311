/* policy_limits.c - the values of the limit-* rules: a size with an
 * optional K, M, G or T suffix (powers of 1024), a time in seconds with an
 * optional s, m or h suffix, or a count. Pure: it fills p->limits and adds
 * errors; which mechanism holds a limit is the launcher's business
 * (run_limits.c), and a key given twice is the single-valued directives'
 * business (policy.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "policy_internal.h"

struct unit {
	char suffix;
	uint64_t mult;
};

enum limit_kind { LK_SIZE, LK_TIME, LK_COUNT };

static const enum limit_kind limit_kinds[SB_LIMIT_COUNT] = {
	[SB_LIMIT_MEMORY] = LK_SIZE,	 [SB_LIMIT_CPU] = LK_TIME,
	[SB_LIMIT_TIME] = LK_TIME,	 [SB_LIMIT_PROCESSES] = LK_COUNT,
	[SB_LIMIT_FILE_SIZE] = LK_SIZE, [SB_LIMIT_OPEN_FILES] = LK_COUNT,
};

/* Beyond these the kernel's own types (rlim_t for seconds, pid_t counts,
 * the fd table) mean nothing sensible; a size up to 2^62 bytes. */
#define MAX_SIZE (UINT64_C(1) << 62)
#define MAX_SECONDS (UINT64_C(100) * 365 * 24 * 3600)
#define MAX_COUNT (UINT64_C(1) << 30)

/* Digits, then at most one suffix of 'units' (case-insensitive); 0 on
 * success, -EINVAL for junk, -ERANGE for a number out of 'max'. */
static int parse_value(const char *v, const struct unit *units,
		       size_t n_units, uint64_t max, uint64_t *out)
{
	uint64_t n = 0, mult = 1;
	const char *c = v;
	size_t i;

	if (*c < '0' || *c > '9')
		return -EINVAL;
	for (; *c >= '0' && *c <= '9'; c++) {
		if (__builtin_mul_overflow(n, 10, &n) ||
		    __builtin_add_overflow(n, (uint64_t)(*c - '0'), &n))
			return -ERANGE;
	}
	if (*c) {
		char s = *c >= 'A' && *c <= 'Z' ? (char)(*c + 'a' - 'A') : *c;

		for (i = 0; i < n_units; i++)
			if (units[i].suffix == s)
				break;
		if (i == n_units || c[1])
			return -EINVAL;
		mult = units[i].mult;
	}
	if (__builtin_mul_overflow(n, mult, &n) || n > max)
		return -ERANGE;
	*out = n;
	return 0;
}

/* The value of rule 'l' (key 'key') of 'kind' into *out: 0, or -1 with
 * the error added ('is_limit': a limit-* rule, whose absence is no
 * limit). */
static int parse_rule_value(struct sb_policy *p, const struct sb_line *l,
			    const char *key, enum limit_kind kind,
			    bool is_limit, uint64_t *out)
{
	static const struct unit sizes[] = {
		{ 'k', UINT64_C(1) << 10 },
		{ 'm', UINT64_C(1) << 20 },
		{ 'g', UINT64_C(1) << 30 },
		{ 't', UINT64_C(1) << 40 },
	};
	static const struct unit times[] = {
		{ 's', 1 },
		{ 'm', 60 },
		{ 'h', 3600 },
	};
	const char *v = sb_strip(p->arena, l->value, strlen(l->value));
	uint64_t n = 0;
	int r;

	if (kind == LK_SIZE)
		r = parse_value(v, sizes, SB_ARRAY_LEN(sizes), MAX_SIZE, &n);
	else if (kind == LK_TIME)
		r = parse_value(v, times, SB_ARRAY_LEN(times), MAX_SECONDS,
				&n);
	else
		r = parse_value(v, NULL, 0, MAX_COUNT, &n);
	if (r == 0 && n == 0)
		r = -EDOM;
	if (r == -ERANGE) {
		sb_error(p, l->ref, "%s: invalid value '%s', the number is too "
				    "large.",
			 key, v);
		return -1;
	}
	if (r == -EDOM) {
		sb_error(p, l->ref, "%s: invalid value '%s', %s", key, v,
			 is_limit ? "a limit must be at least 1; leave the rule "
				    "out for no limit."
				  : "it must be at least 1.");
		return -1;
	}
	if (r < 0) {
		if (kind == LK_SIZE)
			sb_error(p, l->ref,
				 "%s: invalid value '%s', expected a whole "
				 "number of bytes with an optional K, M, G or "
				 "T suffix, such as 512M.",
				 key, v);
		else if (kind == LK_TIME)
			sb_error(p, l->ref,
				 "%s: invalid value '%s', expected a whole "
				 "number of seconds with an optional s, m or h "
				 "suffix, such as 30s or 2m.",
				 key, v);
		else
			sb_error(p, l->ref,
				 "%s: invalid value '%s', expected a whole "
				 "number such as 64.",
				 key, v);
		return -1;
	}
	*out = n;
	return 0;
}

int sb_parse_size(struct sb_policy *p, const struct sb_line *l,
		  const char *key, uint64_t *out)
{
	return parse_rule_value(p, l, key, LK_SIZE, false, out);
}

void sb_parse_limit(struct sb_policy *p, enum sb_limit which,
		    const struct sb_line *l)
{
	const char *key = sb_limit_key(which);
	uint64_t n;

	if (parse_rule_value(p, l, key, limit_kinds[which], true, &n) < 0)
		return;
	p->limits[which].value = n;
	p->limits[which].rule = sb_arena_printf(
		p->arena, "%s=%s", key,
		sb_strip(p->arena, l->value, strlen(l->value)));
	p->limits[which].ref = l->ref;
	p->any_limit = true;
}
