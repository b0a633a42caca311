/* fuzz_prescan.c - libFuzzer target for the result channel's pre-scan.
 *
 * Each input is a stream a hostile worker could send. It is scanned under
 * the parent's default budgets and under tight ones taken from its own
 * size, with and without an error struct. Besides a crash or a sanitizer
 * report, the verdicts must agree with each other: the same verdict with
 * and without the struct, a terminated non-empty message on refusal, an
 * accepted stream ending in STOP, and nothing the tight budgets accept may
 * the default ones refuse.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prescan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct sb_prescan_limits defaults = {
	.max_bytes = 64 << 20,
	.max_opcodes = 1 << 23,
	.max_memo = 1 << 20,
	.max_depth = 512,
};

static int scan(const uint8_t *data, size_t size,
		const struct sb_prescan_limits *lim)
{
	struct sb_prescan_error err;
	size_t n;
	int r;

	memset(&err, 0xa5, sizeof(err));
	r = sb_prescan(data, size, lim, &err);
	if (r != 0 && r != -1)
		abort();
	if (r != sb_prescan(data, size, lim, NULL))
		abort();
	if (r == 0 && (!size || data[size - 1] != '.'))
		abort();
	if (r == -1) {
		n = strnlen(err.message, sizeof(err.message));
		if (n == 0 || n == sizeof(err.message))
			abort();
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sb_prescan_limits tight = {
		.max_bytes = (long long)size,
		.max_opcodes = (long long)(size / 2 + 1),
		.max_memo = (long long)(size % 5),
		.max_depth = (long long)(size % 7),
	};
	int r;

	r = scan(data, size, &defaults);
	if (scan(data, size, &tight) == 0 && r != 0)
		abort();
	return 0;
}
