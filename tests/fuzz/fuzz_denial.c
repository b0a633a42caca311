/* fuzz_denial.c - libFuzzer target for the guest's log lines under
 * os-sandbox=qemu (denial.h): the input is what a guest taken over may
 * send on its log port, cut into lines as the launcher cuts it. Each line
 * sb_denial_unwire takes must become exactly one JSON line, and must come
 * back the same through sb_denial_wire; anything else aborts, as does a
 * crash, a sanitizer report or a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "denial.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const char *x, const char *y)
{
	return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

static void one(const char *line, size_t n)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_buf json = { 0 }, wire = { 0 };
	struct sb_denial d, back;

	if (sb_denial_unwire(a, line, n, &d)) {
		sb_denial_format(&json, &d, 0);
		if (!json.len || json.s[json.len - 1] != '\n' ||
		    memchr(json.s, '\n', json.len) != json.s + json.len - 1 ||
		    memchr(json.s, '\0', json.len))
			abort(); /* not one line */
		sb_denial_wire(&wire, &d);
		if (!sb_denial_unwire(a, wire.s, wire.len - 1, &back) ||
		    !same(d.layer, back.layer) || !same(d.kind, back.kind) ||
		    !same(d.target, back.target) || !same(d.rule, back.rule) ||
		    !same(d.add, back.add) || !same(d.by, back.by) ||
		    d.pid != back.pid)
			abort(); /* not the same record */
	}
	sb_buf_free(&json);
	sb_buf_free(&wire);
	sb_arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size;

	if (size > 1 << 17)
		return 0;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);

		one(s, n);
		s += n + 1;
	}
	return 0;
}
