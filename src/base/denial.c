/* denial.c - the denial log's records: JSON text, one object a line, and the
 * one write(2) that puts a record in the log. It owns the escaping of every
 * string a refusal names (paths and module names may hold any byte); it
 * must not buffer (a record is on disk or in the page cache when the write
 * returns) nor decide anything about what is refused.
 */
#include "denial.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char hex[] = "0123456789abcdef";

static void put_u(struct sb_buf *b, unsigned c)
{
	char e[6] = { '\\', 'u', hex[(c >> 12) & 15], hex[(c >> 8) & 15],
		      hex[(c >> 4) & 15], hex[c & 15] };

	sb_buf_add(b, e, sizeof(e));
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n, i;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* a NUL ends here too */
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* Bytes that go out as they are: printable ASCII but the quote and the
 * backslash, and well-formed UTF-8 but U+2028 and U+2029 (they end a line
 * in JavaScript). 0 when s[0] needs an escape. */
static size_t plain_len(const unsigned char *s)
{
	size_t n;

	if (*s >= 0x20 && *s < 0x7f)
		return *s == '"' || *s == '\\' ? 0 : 1;
	if (*s < 0x80)
		return 0;
	n = utf8_len(s);
	if (n == 3 && s[0] == 0xe2 && s[1] == 0x80 &&
	    (s[2] == 0xa8 || s[2] == 0xa9))
		return 0;
	return n;
}

void sb_json_string(struct sb_buf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str, *run;
	size_t n;

	sb_buf_add(b, "\"", 1);
	while (*s) {
		/* runs of plain bytes in one copy: the hot path */
		for (run = s; (n = plain_len(s)) != 0; s += n)
			;
		if (s > run)
			sb_buf_add(b, (const char *)run, (size_t)(s - run));
		if (!*s)
			break;
		switch (*s) {
		case '"':
			sb_buf_add(b, "\\\"", 2);
			break;
		case '\\':
			sb_buf_add(b, "\\\\", 2);
			break;
		case '\n':
			sb_buf_add(b, "\\n", 2);
			break;
		case '\t':
			sb_buf_add(b, "\\t", 2);
			break;
		case '\r':
			sb_buf_add(b, "\\r", 2);
			break;
		default:
			if (*s < 0x80) {
				put_u(b, *s); /* a control character */
			} else if (utf8_len(s)) {
				put_u(b, s[2] == 0xa8 ? 0x2028 : 0x2029);
				s += 2;
			} else {
				/* not UTF-8: the byte as Python's
				 * surrogateescape decodes it, so
				 * os.fsencode() gives the path back */
				put_u(b, 0xdc00u | *s);
			}
		}
		s++;
	}
	sb_buf_add(b, "\"", 1);
}

static void put_key(struct sb_buf *b, const char *key, const char *val)
{
	sb_buf_add(b, ", \"", 3);
	sb_buf_puts(b, key);
	sb_buf_add(b, "\": ", 3);
	sb_json_string(b, val);
}

static void put_num(char *at, int v, int width)
{
	while (width-- > 0) {
		at[width] = (char)('0' + v % 10);
		v /= 10;
	}
}

void sb_denial_format(struct sb_buf *b, const struct sb_denial *d,
		      int64_t ms)
{
	char ts[] = "0000-00-00T00:00:00.000Z", num[24], *p = num + sizeof(num);
	time_t t = (time_t)(ms / 1000);
	unsigned long pid;
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		t = 0;
		gmtime_r(&t, &tm);
	}
	/* by hand: printf's cost would be most of a record's */
	put_num(ts, tm.tm_year + 1900, 4);
	put_num(ts + 5, tm.tm_mon + 1, 2);
	put_num(ts + 8, tm.tm_mday, 2);
	put_num(ts + 11, tm.tm_hour, 2);
	put_num(ts + 14, tm.tm_min, 2);
	put_num(ts + 17, tm.tm_sec, 2);
	put_num(ts + 20, (int)(ms % 1000), 3);
	sb_buf_add(b, "{\"time\": \"", 10);
	sb_buf_add(b, ts, sizeof(ts) - 1);
	sb_buf_add(b, "\", \"pid\": ", 10);
	pid = d->pid > 0 ? (unsigned long)d->pid : 0;
	do
		*--p = (char)('0' + pid % 10);
	while (pid /= 10);
	sb_buf_add(b, p, (size_t)(num + sizeof(num) - p));
	put_key(b, "layer", d->layer ? d->layer : "?");
	put_key(b, "kind", d->kind ? d->kind : "?");
	put_key(b, "target", d->target ? d->target : "");
	put_key(b, "rule", d->rule ? d->rule : "no rule");
	sb_buf_puts(b, ", \"add\": ");
	if (d->add)
		sb_json_string(b, d->add);
	else
		sb_buf_puts(b, "null");
	put_key(b, "by", d->by ? d->by : "?");
	sb_buf_puts(b, "}\n");
}

/* The record that closes a log at its cap, padded with blanks (JSON
 * allows them before the newline) so that the file reaches the cap: every
 * later writer then finds it full, whichever process it is. */
static void format_full(struct sb_buf *b, const struct sb_denial *d,
			int64_t ms, uint64_t size, uint64_t cap)
{
	struct sb_denial full = {
		.layer = d->layer,
		.kind = "log-full",
		.target = "the denial log reached its cap (log-max-size=); "
			  "later refusals are not recorded",
		.by = d->by,
		.pid = d->pid,
	};

	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
	sb_denial_format(b, &full, ms);
	if (b->len > 0 && size + b->len < cap) {
		size_t pad = (size_t)(cap - size - b->len);

		b->len--; /* the newline */
		while (pad--)
			sb_buf_puts(b, " ");
		sb_buf_puts(b, "\n");
	}
}

int sb_denial_write(int fd, const struct sb_denial *d, uint64_t cap)
{
	struct sb_buf b = { 0 };
	struct timespec ts;
	struct stat st;
	int64_t ms;
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return 0;
	/* one allocation for the usual record */
	b.s = malloc(512);
	if (b.s) {
		b.cap = 512;
		b.s[0] = '\0';
	}
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		ts.tv_sec = 0, ts.tv_nsec = 0;
	ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	sb_denial_format(&b, d, ms);
	/* the cap: a full log takes nothing more; the record that would
	 * cross the cap is replaced by the one that says so (two writers at
	 * the edge may each write it: the cap is approximate by that much) */
	if (cap && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size >= cap) {
			sb_buf_free(&b);
			return -EFBIG;
		}
		if ((uint64_t)st.st_size + b.len > cap)
			format_full(&b, d, ms, (uint64_t)st.st_size, cap);
	}
	/* one write: O_APPEND puts the whole record at the end, whoever
	 * else writes to the file */
	do
		n = write(fd, b.s, b.len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != b.len)
		err = -EIO;
	sb_buf_free(&b);
	return err;
}

/* ---- the guest's records (os-sandbox=qemu) ---- */

static void wire_opt(struct sb_buf *b, const char *s)
{
	sb_buf_puts(b, s ? "\t+" : "\t-");
	if (s)
		sb_buf_put_field(b, s);
}

void sb_denial_wire(struct sb_buf *b, const struct sb_denial *d)
{
	sb_buf_puts(b, "rec\t");
	sb_buf_put_field(b, d->layer ? d->layer : "?");
	sb_buf_puts(b, "\t");
	sb_buf_put_field(b, d->kind ? d->kind : "?");
	sb_buf_puts(b, "\t");
	sb_buf_put_field(b, d->target ? d->target : "");
	wire_opt(b, d->rule);
	wire_opt(b, d->add);
	sb_buf_puts(b, "\t");
	sb_buf_put_field(b, d->by ? d->by : "?");
	sb_buf_printf(b, "\t%ld\n", d->pid > 0 ? (long)d->pid : 0L);
}

int sb_denial_send(int fd, const struct sb_denial *d)
{
	struct sb_buf b = { 0 };
	size_t off = 0;
	int err = 0;

	if (fd < 0)
		return 0;
	sb_denial_wire(&b, d);
	/* one record a line, never cut across lines: the host drops a line
	 * longer than it takes, so a record too long (a long target, its
	 * escapes) goes with its target shortened, marked, rather than not
	 * at all */
	if (b.len > SB_DENIAL_WIRE_MAX) {
		struct sb_denial cut = *d;
		char target[1024];

		snprintf(target, sizeof(target), "%.900s... (cut)",
			 d->target ? d->target : "");
		cut.target = target;
		b.len = 0;
		sb_denial_wire(&b, &cut);
	}
	if (b.len > SB_DENIAL_WIRE_MAX)
		err = -E2BIG;
	while (!err && off < b.len) {
		ssize_t n = write(fd, b.s + off, b.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	sb_buf_free(&b);
	return err;
}

/* "+text" (the text) or exactly "-" (NULL); false for anything else */
static bool opt_field(const char *f, const char **out)
{
	if (f[0] == '+') {
		*out = f + 1;
		return true;
	}
	*out = NULL;
	return f[0] == '-' && !f[1];
}

bool sb_denial_fields(const char *kind, const char *rule_f,
		      const char *add_f, const char **rule, const char **add)
{
	return kind[0] && strlen(kind) <= 32 && opt_field(rule_f, rule) &&
	       opt_field(add_f, add);
}

bool sb_denial_unwire(struct sb_arena *a, const char *line, size_t n,
		      struct sb_denial *d)
{
	static const char *const layers[] = { SB_LAYER_PYTHON,
					      SB_LAYER_SUPERVISOR,
					      SB_LAYER_SECCOMP,
					      SB_LAYER_LANDLOCK };
	static const char *const bys[] = { "supervisor", "sandbox" };
	char *f[8], *end;
	bool bad = false;
	long pid;

	const char *rule, *add;

	if (n > SB_DENIAL_WIRE_MAX ||
	    sb_split_fields(a, line, n, f, 8, &bad) != 8 || bad ||
	    strcmp(f[0], "rec") != 0 || !sb_str_in(f[1], layers, 4) ||
	    !sb_str_in(f[6], bys, 2) ||
	    !sb_denial_fields(f[2], f[4], f[5], &rule, &add))
		return false;
	if (f[7][0] < '0' || f[7][0] > '9' || strlen(f[7]) > 10)
		return false;
	errno = 0;
	pid = strtol(f[7], &end, 10);
	if (errno || *end || pid > 0x7fffffffL)
		return false;
	memset(d, 0, sizeof(*d));
	d->layer = f[1];
	d->kind = f[2];
	d->target = f[3];
	d->rule = rule;
	d->add = add;
	d->by = f[6];
	d->pid = (pid_t)pid;
	return true;
}
