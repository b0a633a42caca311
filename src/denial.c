/* denial.c - the denial log's records: JSON text, one object a line, and the
 * one write(2) that puts a record in the log. It owns the escaping of every
 * string a refusal names (paths and module names may hold any byte); it
 * must not buffer (a record is on disk or in the page cache when the write
 * returns) nor decide anything about what is refused.
 */
#include "denial.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

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

void sb_json_string(struct sb_buf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	sb_buf_add(b, "\"", 1);
	while (*s) {
		switch (*s) {
		case '"':
			sb_buf_add(b, "\\\"", 2);
			s++;
			continue;
		case '\\':
			sb_buf_add(b, "\\\\", 2);
			s++;
			continue;
		case '\n':
			sb_buf_add(b, "\\n", 2);
			s++;
			continue;
		case '\t':
			sb_buf_add(b, "\\t", 2);
			s++;
			continue;
		case '\r':
			sb_buf_add(b, "\\r", 2);
			s++;
			continue;
		}
		if (*s < 0x20 || *s == 0x7f) {
			put_u(b, *s++);
			continue;
		}
		n = utf8_len(s);
		if (!n) {
			/* not UTF-8: the byte as Python's surrogateescape
			 * decodes it, so os.fsencode() gives the path back */
			put_u(b, 0xdc00u | *s++);
			continue;
		}
		/* U+2028 and U+2029 end a line in JavaScript */
		if (n == 3 && s[0] == 0xe2 && s[1] == 0x80 &&
		    (s[2] == 0xa8 || s[2] == 0xa9)) {
			put_u(b, s[2] == 0xa8 ? 0x2028 : 0x2029);
			s += 3;
			continue;
		}
		sb_buf_add(b, (const char *)s, n);
		s += n;
	}
	sb_buf_add(b, "\"", 1);
}

static void put_key(struct sb_buf *b, const char *key, const char *val)
{
	sb_buf_printf(b, ", \"%s\": ", key);
	sb_json_string(b, val);
}

void sb_denial_format(struct sb_buf *b, const struct sb_denial *d,
		      int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		t = 0;
		gmtime_r(&t, &tm);
	}
	sb_buf_printf(b,
		      "{\"time\": \"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\", "
		      "\"pid\": %ld",
		      tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		      tm.tm_min, tm.tm_sec, (int)(ms % 1000), (long)d->pid);
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

int sb_denial_write(int fd, const struct sb_denial *d)
{
	struct sb_buf b = { 0 };
	struct timespec ts;
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return 0;
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		ts.tv_sec = 0, ts.tv_nsec = 0;
	sb_denial_format(&b, d, (int64_t)ts.tv_sec * 1000 +
					ts.tv_nsec / 1000000);
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
