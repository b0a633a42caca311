/* util.c - arena, buffers, globbing and lexical path helpers. Pure code: no
 * syscalls beyond malloc, no printing except the out-of-memory abort. */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

struct sb_chunk {
	struct sb_chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct sb_arena {
	struct sb_chunk *head;
};

static void *sb_oom(void)
{
	fputs("python-sb: out of memory\n", stderr);
	abort();
}

struct sb_arena *sb_arena_new(void)
{
	struct sb_arena *a = calloc(1, sizeof(*a));

	return a ? a : sb_oom();
}

void sb_arena_free(struct sb_arena *a)
{
	struct sb_chunk *c, *next;

	if (!a)
		return;
	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

void *sb_arena_alloc(struct sb_arena *a, size_t n)
{
	const size_t align = sizeof(max_align_t);
	struct sb_chunk *c = a->head;
	size_t size;
	void *p;

	n = (n + align - 1) & ~(align - 1);
	if (n == 0)
		n = align;
	if (!c || c->size - c->used < n) {
		size = n > 16384 ? n : 16384;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return sb_oom();
		c->size = size;
		c->used = 0;
		/* A big block gets its own chunk behind the current one, so the
		 * rest of the current chunk stays usable. */
		if (a->head && size == n) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	p = (char *)c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

char *sb_arena_strndup(struct sb_arena *a, const char *s, size_t n)
{
	char *d = sb_arena_alloc(a, n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *sb_arena_strdup(struct sb_arena *a, const char *s)
{
	return sb_arena_strndup(a, s, strlen(s));
}

char *sb_arena_vprintf(struct sb_arena *a, const char *fmt, va_list ap)
{
	va_list aq;
	int n;
	char *d;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return sb_arena_strdup(a, "");
	d = sb_arena_alloc(a, (size_t)n + 1);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	return d;
}

char *sb_arena_printf(struct sb_arena *a, const char *fmt, ...)
{
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = sb_arena_vprintf(a, fmt, ap);
	va_end(ap);
	return d;
}

void *sb_arena_grow(struct sb_arena *a, void *v, size_t *cap, size_t want,
		    size_t elem)
{
	size_t ncap;
	void *nv;

	if (want <= *cap)
		return v;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < want)
		ncap *= 2;
	if (ncap > ((size_t)-1) / elem)
		return sb_oom();
	nv = sb_arena_alloc(a, ncap * elem);
	if (v)
		memcpy(nv, v, *cap * elem);
	*cap = ncap;
	return nv;
}

void sb_buf_reserve(struct sb_buf *b, size_t extra)
{
	size_t ncap = b->cap ? b->cap : 256;
	char *ns;

	if (b->len + extra + 1 <= b->cap)
		return;
	while (ncap < b->len + extra + 1)
		ncap *= 2;
	ns = realloc(b->s, ncap);
	if (!ns)
		sb_oom();
	b->s = ns;
	b->cap = ncap;
}

void sb_buf_add(struct sb_buf *b, const char *s, size_t n)
{
	sb_buf_reserve(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sb_buf_puts(struct sb_buf *b, const char *s)
{
	sb_buf_add(b, s, strlen(s));
}

void sb_buf_printf(struct sb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	sb_buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void sb_buf_free(struct sb_buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

bool sb_is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

char *sb_strip(struct sb_arena *a, const char *s, size_t n)
{
	while (n && sb_is_space((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && sb_is_space((unsigned char)s[n - 1]))
		n--;
	return sb_arena_strndup(a, s, n);
}

bool sb_str_starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool sb_mem_ieq(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int x = (unsigned char)a[i], y = (unsigned char)b[i];

		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return false;
	}
	return true;
}

bool sb_str_ieq(const char *a, const char *b)
{
	size_t n = strlen(a);

	return strlen(b) == n && sb_mem_ieq(a, b, n);
}

bool sb_str_in(const char *s, const char *const *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* Find 'lit' (length n) in s; memmem is linear in glibc (two-way). */
static const char *find_lit(const char *s, const char *lit, size_t n)
{
	return memmem(s, strlen(s), lit, n);
}

bool sb_glob_star_match(const char *pat, const char *s)
{
	const char *star = strchr(pat, '*');
	size_t n, slen;
	const char *last;

	if (!star)
		return strcmp(pat, s) == 0;
	/* the fixed prefix */
	n = (size_t)(star - pat);
	if (strncmp(pat, s, n) != 0)
		return false;
	s += n;
	pat = star + 1;
	/* the fixed suffix after the last star must end the subject */
	last = strrchr(pat, '*');
	{
		const char *suffix = last ? last + 1 : pat;
		size_t sl = strlen(suffix);

		slen = strlen(s);
		if (sl > slen || strcmp(s + slen - sl, suffix) != 0)
			return false;
		slen -= sl;
		if (!last)
			return true;
	}
	/* middle pieces, leftmost match each, within s[0..slen) */
	while (pat <= last) {
		const char *next = strchr(pat, '*');
		const char *hit;

		n = (size_t)(next - pat);
		if (n) {
			hit = find_lit(s, pat, n);
			if (!hit || (size_t)(hit - s) + n > slen)
				return false;
			slen -= (size_t)(hit - s) + n;
			s = hit + n;
		}
		pat = next + 1;
	}
	return true;
}

/* fnmatch without FNM_PATHNAME: iterative with one backtrack point for '*',
 * which is O(len(pat) * len(s)) at worst, never exponential. */
static bool class_match(const char **pp, int c)
{
	const char *p = *pp + 1;
	bool neg = false, hit = false;

	if (*p == '!' || *p == '^') {
		neg = true;
		p++;
	}
	if (*p == ']') { /* a leading ']' is literal */
		hit = c == ']';
		p++;
	}
	for (; *p && *p != ']'; p++) {
		if (p[1] == '-' && p[2] && p[2] != ']') {
			if (c >= (unsigned char)p[0] && c <= (unsigned char)p[2])
				hit = true;
			p += 2;
		} else if ((unsigned char)*p == c) {
			hit = true;
		}
	}
	if (!*p) /* unterminated: '[' is a literal */
		return false;
	*pp = p;
	return hit != neg;
}

bool sb_fnmatch(const char *pat, const char *s)
{
	const char *star_p = NULL, *star_s = NULL;

	while (*s) {
		if (*pat == '*') {
			star_p = ++pat;
			star_s = s;
			continue;
		}
		if (*pat == '?') {
			pat++;
			s++;
			continue;
		}
		if (*pat == '[') {
			const char *q = pat;

			if (strchr(pat + 1, ']')) {
				if (class_match(&q, (unsigned char)*s)) {
					pat = q + 1;
					s++;
					continue;
				}
			} else if (*s == '[') {
				pat++;
				s++;
				continue;
			}
		} else if (*pat && *pat == *s) {
			pat++;
			s++;
			continue;
		}
		if (!star_p)
			return false;
		pat = star_p;
		s = ++star_s;
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

/* Append the components of 's' to out[0..*olen), lexically. */
static int push_lexical(char *out, size_t cap, size_t *olen, const char *s)
{
	size_t n;

	for (s = sb_path_next(s, &n); n; s = sb_path_next(s + n, &n)) {
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (*olen > 0 && out[*olen - 1] != '/')
				(*olen)--;
			if (*olen > 0)
				(*olen)--;
		} else {
			if (*olen + 1 + n >= cap)
				return -1;
			out[*olen] = '/';
			memcpy(out + *olen + 1, s, n);
			*olen += 1 + n;
		}
		out[*olen] = '\0';
	}
	return 0;
}

int sb_path_lexical(char *out, size_t cap, const char *base, const char *path)
{
	size_t olen = 0;

	if (cap < 2)
		return -1;
	out[0] = '\0';
	if (path[0] != '/' && push_lexical(out, cap, &olen, base) < 0)
		return -1;
	if (push_lexical(out, cap, &olen, path) < 0)
		return -1;
	if (olen == 0)
		strcpy(out, "/");
	return 0;
}

char *sb_path_normalize(struct sb_arena *a, const char *path)
{
	/* never longer than the path and a leading slash: cannot fail */
	size_t cap = strlen(path) + 2;
	char *out = sb_arena_alloc(a, cap);

	sb_path_lexical(out, cap, "", path);
	return out;
}

char *sb_path_join(struct sb_arena *a, const char *base, const char *rel)
{
	if (rel[0] == '/')
		return sb_path_normalize(a, rel);
	return sb_path_normalize(a, sb_arena_printf(a, "%s/%s", base, rel));
}

const char *sb_path_next(const char *s, size_t *n)
{
	while (*s == '/')
		s++;
	*n = strcspn(s, "/");
	return s;
}

bool sb_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void sb_buf_put_field(struct sb_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\t')
			sb_buf_puts(b, "\\t");
		else if (*s == '\n')
			sb_buf_puts(b, "\\n");
		else if (*s == '\\')
			sb_buf_puts(b, "\\\\");
		else
			sb_buf_add(b, s, 1);
	}
}

size_t sb_split_fields(struct sb_arena *a, const char *line, size_t n,
		       char **f, size_t max, bool *bad)
{
	size_t count = 0, i, o = 0;
	char *cur = sb_arena_alloc(a, n + 1);

	for (i = 0; i <= n; i++) {
		char c = i < n ? line[i] : '\t';

		if (c == '\t') {
			cur[o] = '\0';
			if (count < max)
				f[count] = cur;
			count++;
			cur = sb_arena_alloc(a, n - i + 1);
			o = 0;
		} else if (c == '\\') {
			char e = i + 1 < n ? line[++i] : '\0';

			if (e == 't')
				cur[o++] = '\t';
			else if (e == 'n')
				cur[o++] = '\n';
			else if (e == '\\')
				cur[o++] = '\\';
			else
				*bad = true;
		} else if (c == '\0') {
			*bad = true;
		} else {
			cur[o++] = c;
		}
	}
	return count;
}

bool sb_path_proc_own(const char *path)
{
	const char *c;
	size_t n;

	if (!sb_path_under(path, "/proc"))
		return false;
	c = sb_path_next(path + 5, &n);
	if (!n)
		return true;
	if ((n == 4 && !strncmp(c, "self", 4)) ||
	    (n == 11 && !strncmp(c, "thread-self", 11)))
		return true;
	return strspn(c, "0123456789") == n;
}

static bool component_is_number(const char *c, size_t n, long want)
{
	char buf[24];

	if (want < 0)
		return n > 0 && strspn(c, "0123456789") >= n;
	snprintf(buf, sizeof(buf), "%ld", want);
	return n == strlen(buf) && strncmp(c, buf, n) == 0;
}

bool sb_path_own_fd_dir(const char *path, long pid)
{
	const char *c[5];
	size_t n[5], k = 0;
	const char *p;
	size_t len;

	if (!sb_path_under(path, "/proc"))
		return false;
	for (p = sb_path_next(path, &len); len; p = sb_path_next(p + len, &len)) {
		if (k == 5)
			return false;
		c[k] = p;
		n[k++] = len;
	}
#define IS(i, lit) (n[i] == strlen(lit) && strncmp(c[i], lit, n[i]) == 0)
	if (k == 3 && IS(2, "fd"))
		return IS(1, "self") || IS(1, "thread-self") ||
		       component_is_number(c[1], n[1], pid);
	if (k == 5 && IS(2, "task") && IS(4, "fd"))
		return (IS(1, "self") || component_is_number(c[1], n[1], pid)) &&
		       component_is_number(c[3], n[3], -1);
#undef IS
	return false;
}

const char *sb_path_shown(const char *path, const char *cwd)
{
	if (!sb_path_under(path, cwd) || strcmp(path, cwd) == 0)
		return path;
	return path + strlen(cwd) + (strcmp(cwd, "/") != 0);
}

/* ---- text a reviewer cannot see ---- */

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when it is
 * not valid UTF-8 (overlong, surrogate, above U+10FFFF, truncated); *cp
 * gets the code point. */
size_t sb_utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
	size_t len, i;
	unsigned c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return len;
}

/* Control characters (C0, DEL, C1), the marks that reorder or hide text
 * (bidirectional embeddings, overrides and isolates, zero-width ones, the
 * byte order mark), and bytes that are not UTF-8. */
bool sb_hidden_cp(unsigned c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x61c ||
	       (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x2060 && c <= 0x2069) || c == 0xfeff;
}

const char *sb_text_hidden(const char *s, size_t n, bool invalid,
			   unsigned *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, len;
	unsigned c;

	while (i < n) {
		len = sb_utf8_seq(u + i, n - i, &c);
		if (!len) {
			if (invalid) {
				if (cp)
					*cp = u[i];
				return s + i;
			}
			len = 1;
		} else if (sb_hidden_cp(c)) {
			if (cp)
				*cp = c;
			return s + i;
		}
		i += len;
	}
	return NULL;
}
