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

void sb_parse_limit(struct sb_policy *p, enum sb_limit which,
		    const struct sb_line *l)
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
	const char *key = sb_limit_key(which);
	enum limit_kind kind = limit_kinds[which];
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
		return;
	}
	if (r == -EDOM) {
		sb_error(p, l->ref, "%s: invalid value '%s', a limit must be at "
				    "least 1; leave the rule out for no limit.",
			 key, v);
		return;
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
		return;
	}
	p->limits[which].value = n;
	p->limits[which].rule = sb_arena_printf(p->arena, "%s=%s", key, v);
	p->limits[which].ref = l->ref;
	p->any_limit = true;
}
