/* fuzz_review.c - libFuzzer target for the rule review (review.c): the
 * input is read as a unified diff, then split at its first NUL (or its
 * middle) into the two versions of a rule file, and both reviews are
 * formatted as Markdown and as JSON. Every rule line it finds goes through
 * the lexer and the parser in flat mode, so this reaches them with lines
 * no rule file test writes. A crash, a sanitizer report or a leak is the
 * only verdict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sb_review r = { 0 };
	struct sb_buf out = { 0 };
	const uint8_t *nul;
	char *text, *old, *new;
	size_t cut;

	if (size > 1 << 16)
		return 0;
	r.arena = sb_arena_new();
	text = sb_arena_strndup(r.arena, (const char *)data, size);
	sb_review_add_diff(&r, text);
	nul = memchr(data, '\0', size);
	cut = nul ? (size_t)(nul - data) : size / 2;
	old = sb_arena_strndup(r.arena, (const char *)data, cut);
	new = sb_arena_strndup(r.arena, (const char *)data + cut,
			       size - cut);
	sb_review_add_files(&r, "old", old, "new", new);
	sb_review_format(&r, false, &out);
	sb_review_format(&r, true, &out);
	(void)sb_review_worst(&r);
	sb_buf_free(&out);
	sb_arena_free(r.arena);
	return 0;
}
