/* tap.h - a tiny TAP producer for the C unit tests.
 *
 * ok(cond, fmt, ...) prints "ok N - name" or "not ok N - name"; is_str()
 * and is_int() show both sides when they differ; tap_done() prints the plan
 * and returns the exit status (non-zero if any test failed). Header-only so
 * that each test program is one file.
 */
#ifndef SB_TAP_H
#define SB_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 2, 3))) static int ok(int cond, const char *fmt,
						    ...)
{
	va_list ap;

	tap_n++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

#define is_str(got, want, ...)                                                 \
	do {                                                                   \
		const char *g_ = (got), *w_ = (want);                          \
		if (!ok(g_ && w_ ? strcmp(g_, w_) == 0 : g_ == w_,             \
			__VA_ARGS__))                                          \
			printf("#   got:  '%s'\n#   want: '%s'\n",             \
			       g_ ? g_ : "(null)", w_ ? w_ : "(null)");        \
	} while (0)

#define is_int(got, want, ...)                                                 \
	do {                                                                   \
		long long g_ = (long long)(got), w_ = (long long)(want);       \
		if (!ok(g_ == w_, __VA_ARGS__))                                \
			printf("#   got:  %lld\n#   want: %lld\n", g_, w_);   \
	} while (0)

__attribute__((unused, format(printf, 1, 2))) static void
diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static int tap_done(void)
{
	printf("1..%d\n", tap_n);
	if (tap_failed)
		printf("# %d of %d failed\n", tap_failed, tap_n);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif
