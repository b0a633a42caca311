/* fuzz_prescan.c - libFuzzer target for the result channel's pre-scan.
 *
 * Each input is a stream a hostile worker could send. It is scanned in
 * objects mode (shapes only) and in data-only mode (the table of shapes and
 * the work budget), under the parent's default budgets and under tight ones
 * taken from its own size, with and without an error struct. Besides a
 * crash, a leak or a sanitizer report, the verdicts must agree: the same
 * verdict with and without the struct, a terminated non-empty message on
 * refusal, an accepted stream ending in STOP, nothing the tight budgets
 * accept may the default ones refuse, and nothing data-only accepts may the
 * shape-only scan refuse (data-only is the stricter of the two). The bits
 * of sb_prescan_flags() agree with sb_prescan()'s verdict, are none on a
 * refusal, TREE only with NO_CLASS, and the same in both modes.
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
	.max_work = (64 << 20) * 4LL + (1 << 20),
};

static int scan(const uint8_t *data, size_t size,
		const struct sb_prescan_limits *lim, enum sb_prescan_mode mode)
{
	struct sb_prescan_error err;
	unsigned flags = 0xdead, other = 0xdead;
	size_t n;
	int r;

	memset(&err, 0xa5, sizeof(err));
	r = sb_prescan(data, size, lim, mode, &err);
	if (r != 0 && r != -1)
		abort();
	if (r != sb_prescan(data, size, lim, mode, NULL))
		abort();
	if (r != sb_prescan_flags(data, size, lim, mode, NULL, &flags))
		abort();
	if (flags & ~(SB_PRESCAN_NO_CLASS | SB_PRESCAN_TREE) ||
	    (r != 0 && flags) ||
	    ((flags & SB_PRESCAN_TREE) && !(flags & SB_PRESCAN_NO_CLASS)))
		abort();
	/* the bits are the opcodes', whatever the mode */
	if (r == 0 && mode == SB_PRESCAN_DATA &&
	    (sb_prescan_flags(data, size, lim, SB_PRESCAN_SHAPE, NULL,
			      &other) != 0 || other != flags))
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
		.max_work = (long long)(size % 97),
	};
	int shape, dataonly;

	shape = scan(data, size, &defaults, SB_PRESCAN_SHAPE);
	dataonly = scan(data, size, &defaults, SB_PRESCAN_DATA);
	if (dataonly == 0 && shape != 0)
		abort();
	if (scan(data, size, &tight, SB_PRESCAN_SHAPE) == 0 && shape != 0)
		abort();
	if (scan(data, size, &tight, SB_PRESCAN_DATA) == 0 && dataonly != 0)
		abort();
	return 0;
}
