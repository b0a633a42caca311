/* diag.c - the one error path of the policy module: every configuration
 * problem becomes "<ref>: <message>" in policy->errors or ->warnings. Pure:
 * nothing is printed here; the launcher prints, the guard raises. */
#include <stdio.h>
#include <stdlib.h>

#include "policy_internal.h"

const char *sb_ref_format(struct sb_arena *a, struct sb_ref ref)
{
	if (!ref.file)
		return SB_REF_IMPLICIT;
	if (ref.line == 0)
		return ref.file;
	return sb_arena_printf(a, "%s(%u)", ref.file, ref.line);
}

static void add(struct sb_policy *p, bool warning, struct sb_ref ref,
		const char *prefix, const char *fmt, va_list ap) SB_PRINTF(5, 0);

/* Length of the valid UTF-8 sequence at s (at most n bytes), else 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* Rule text comes from files anyone may have written: control characters
 * and invalid UTF-8 are shown as \xNN, so that a message cannot move the
 * cursor, recolour or retitle the terminal it is printed on. */
char *sb_sanitize(struct sb_arena *a, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0;
	struct sb_buf b = { 0 };
	char *res;

	while (i < n) {
		size_t len = utf8_len(u + i, n - i);

		if (len == 1 && (u[i] < 0x20 || u[i] == 0x7f))
			len = 0;
		if (len == 0) {
			sb_buf_printf(&b, "\\x%02x", u[i]);
			i++;
			continue;
		}
		sb_buf_add(&b, s + i, len);
		i += len;
	}
	res = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return res;
}

/* Was the file of this ref included from outside the root's directory? */
static bool quiet_file(const struct sb_policy *p, const char *display)
{
	size_t i;

	for (i = 0; display && i < p->files.n; i++)
		if (p->files.v[i].display == display)
			return p->files.v[i].outside;
	return false;
}

static void add(struct sb_policy *p, bool warning, struct sb_ref ref,
		const char *prefix, const char *fmt, va_list ap)
{
	struct sb_diag *d;
	char *msg;

	/* past SB_MAX_DIAGS: errors are counted (their count is printed),
	 * warnings end with one that says more were found */
	if (!warning && p->errors.n >= SB_MAX_DIAGS) {
		p->errors_dropped++;
		return;
	}
	if (warning && p->warnings.n > SB_MAX_DIAGS)
		return;
	d = warning ? SB_VEC_PUSH(p->arena, p->warnings)
		    : SB_VEC_PUSH(p->arena, p->errors);
	if (warning && p->warnings.n > SB_MAX_DIAGS) {
		d->ref = ref;
		d->text = sb_arena_printf(p->arena, "%s: more warnings were "
				"found; they are not shown", prefix);
		return;
	}
	msg = sb_arena_vprintf(p->arena, fmt, ap);
	/* A rule file may include any file its reader can read (a key, a
	 * .env): the messages about its lines quoted them, and stderr goes
	 * to logs. A line of an include outside the rule file's directory
	 * is named, not quoted. */
	if (ref.line && quiet_file(p, ref.file))
		msg = sb_arena_printf(p->arena, "%s", warning
			? "a warning about this line; its text is not shown"
			: "this line is not a valid rule; its text is not "
			  "shown, as the file lies outside the rule file's "
			  "directory");

	d->ref = ref;
	d->text = sb_sanitize(p->arena,
			   sb_arena_printf(p->arena, "%s: %s", prefix, msg));
}

void sb_error(struct sb_policy *p, struct sb_ref ref, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(p, false, ref, sb_ref_format(p->arena, ref), fmt, ap);
	va_end(ap);
}

void sb_warning(struct sb_policy *p, struct sb_ref ref, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(p, true, ref, sb_ref_format(p->arena, ref), fmt, ap);
	va_end(ap);
}

/* "a(1), b(2) and <arg>" */
void sb_error_at_refs(struct sb_policy *p, const struct sb_ref *refs,
		      size_t n, const char *fmt, ...)
{
	struct sb_buf b = { 0 };
	va_list ap;
	size_t i;

	for (i = 0; i < n; i++) {
		if (i)
			sb_buf_puts(&b, i + 1 == n ? " and " : ", ");
		sb_buf_puts(&b, sb_ref_format(p->arena, refs[i]));
	}
	va_start(ap, fmt);
	add(p, false, n ? refs[0] : (struct sb_ref){ 0 },
	    sb_arena_strdup(p->arena, b.s ? b.s : ""), fmt, ap);
	va_end(ap);
	sb_buf_free(&b);
}

static int cmp_ref(const struct sb_ref *a, const struct sb_ref *b)
{
	int c = strcmp(a->file ? a->file : "", b->file ? b->file : "");

	if (c)
		return c;
	return a->line < b->line ? -1 : a->line > b->line;
}

struct diag_pos {
	struct sb_diag d;
	size_t pos;
};

static int cmp_diag(const void *x, const void *y)
{
	const struct diag_pos *a = x, *b = y;
	int c = cmp_ref(&a->d.ref, &b->d.ref);

	if (c)
		return c;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Sorted by file then line; equal refs keep the order found. */
void sb_diag_sort(struct sb_policy *p)
{
	struct diag_pos *tmp;
	size_t i, n = p->errors.n;

	if (n < 2)
		return;
	tmp = sb_arena_alloc(p->arena, n * sizeof(*tmp));
	for (i = 0; i < n; i++) {
		tmp[i].d = p->errors.v[i];
		tmp[i].pos = i;
	}
	qsort(tmp, n, sizeof(*tmp), cmp_diag);
	for (i = 0; i < n; i++)
		p->errors.v[i] = tmp[i].d;
}

void sb_policy_format_errors(const struct sb_policy *p, struct sb_buf *out)
{
	size_t i;

	sb_buf_puts(out, "Syntax error in config files.");
	for (i = 0; i < p->errors.n; i++) {
		sb_buf_puts(out, "\n");
		sb_buf_puts(out, p->errors.v[i].text);
	}
	if (p->errors_dropped)
		sb_buf_printf(out, "\n... and %zu more errors, not shown.",
			      p->errors_dropped);
}
