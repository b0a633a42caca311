/* codeshape.c - the shapes of source a standard-library code maker may
 * compile for the program (codeshape.h). A small recursive-descent reader
 * of the type-expression grammar, and a matcher of a formatted template.
 * Anything it does not know is refused: a shape read wider than CPython
 * reads it would let code through, one read narrower only asks for a rule.
 */
#include "codeshape.h"

#include <string.h>

#define SHAPE_DEPTH 64

struct rd {
	const char *p, *end;
	int depth;
};

static bool is_name_start(unsigned char c)
{
	/* a byte >= 0x80 is part of a non-ASCII identifier (CPython refuses
	 * the ones that are not: no operator is spelled outside ASCII) */
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c >= 0x80;
}

static bool is_name_char(unsigned char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static void blanks(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' ||
				 *r->p == '\n' || *r->p == '\r' ||
				 *r->p == '\f'))
		r->p++;
}

static bool take(struct rd *r, char c)
{
	blanks(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return true;
	}
	return false;
}

static bool peek(struct rd *r, char c)
{
	blanks(r);
	return r->p < r->end && *r->p == c;
}

/* A name: its start and length in *name. */
static bool name(struct rd *r, const char **at, size_t *len)
{
	const char *s;

	blanks(r);
	if (r->p >= r->end || !is_name_start((unsigned char)*r->p))
		return false;
	s = r->p;
	while (r->p < r->end && is_name_char((unsigned char)*r->p))
		r->p++;
	*at = s;
	*len = (size_t)(r->p - s);
	return true;
}

/* A string or bytes literal: an optional prefix of r, b, u and, when
 * fields is true, f; then '...', "...", '\'\'\'...\'\'\'' or """...""". An
 * f-string's replacement fields run code: without fields it is refused;
 * with it, a field may only name attributes and take a conversion
 * ({self.x!r}, {name!r}): no call, subscript, quote or nested field. */
static bool literal(struct rd *r, bool fields)
{
	const char *p = r->p;
	bool f = false;
	char q;
	bool triple;

	while (p < r->end && *p && strchr("rRbBuUfF", *p)) {
		if (*p == 'f' || *p == 'F')
			f = true;
		p++;
	}
	if (p - r->p > 2 || p >= r->end || (*p != '\'' && *p != '"') ||
	    (f && !fields))
		return false;
	q = *p;
	triple = r->end - p >= 3 && p[1] == q && p[2] == q;
	p += triple ? 3 : 1;
	for (;;) {
		if (p >= r->end)
			return false;
		if (*p == '\\') {
			/* an escape, raw or not, keeps the next character (a
			 * quote, a newline) inside the literal; in an f-string
			 * it does not hide a brace: f"\{x}" evaluates x */
			if (p + 1 >= r->end)
				return false;
			p += f && (p[1] == '{' || p[1] == '}') ? 1 : 2;
			continue;
		}
		if (*p == '\n' && !triple)
			return false;
		if (*p == q && (!triple || (r->end - p >= 3 && p[1] == q &&
					    p[2] == q))) {
			p += triple ? 3 : 1;
			break;
		}
		if (f && (*p == '{' || *p == '}')) {
			if (p + 1 < r->end && p[1] == *p) {
				p += 2; /* {{ or }} */
				continue;
			}
			if (*p == '}')
				return false;
			for (p++; p < r->end && *p != '}'; p++)
				if (!is_name_char((unsigned char)*p) &&
				    *p != '.' && *p != '!' && *p != ' ')
					return false;
			if (p >= r->end)
				return false;
		}
		p++;
	}
	r->p = p;
	return true;
}

static bool string(struct rd *r)
{
	return literal(r, false);
}

/* A number: digits, then identifier characters and dots (1_000, 0x1f,
 * 1.5e-3, 2j); a sign only after an exponent's e. Read greedily: "1if"
 * is one token here, and the name after it makes two atoms in a row,
 * which no rule takes. */
static bool number(struct rd *r)
{
	const char *p = r->p;
	bool hex;

	if (p >= r->end)
		return false;
	if (!(*p >= '0' && *p <= '9') &&
	    !(*p == '.' && p + 1 < r->end && p[1] >= '0' && p[1] <= '9'))
		return false;
	hex = r->end - p >= 2 && p[0] == '0' && (p[1] | 0x20) == 'x';
	while (p < r->end) {
		if (is_name_char((unsigned char)*p) || *p == '.') {
			p++;
		} else if ((*p == '+' || *p == '-') && !hex &&
			   (p[-1] | 0x20) == 'e') {
			p++;
		} else {
			break;
		}
	}
	r->p = p;
	return true;
}

static bool expr(struct rd *r);

/* expr (',' expr)* [','] up to close */
static bool list(struct rd *r, char close)
{
	int i;

	if (take(r, close))
		return true;
	for (i = 0;; i++) {
		bool star = take(r, '*');

		if (star && peek(r, '*'))
			return false;
		if (!expr(r))
			return false;
		if (take(r, close))
			return true;
		if (!take(r, ','))
			return false;
		if (take(r, close))
			return true;
	}
}

/* A call's arguments: expr or name=expr, comma separated. */
static bool arguments(struct rd *r)
{
	if (take(r, ')'))
		return true;
	for (;;) {
		struct rd save = *r;
		const char *at;
		size_t len;

		if (!(name(r, &at, &len) && take(r, '=') && !peek(r, '='))) {
			*r = save;
		}
		if (!expr(r))
			return false;
		if (take(r, ')'))
			return true;
		if (!take(r, ','))
			return false;
		if (take(r, ')'))
			return true;
	}
}

/* atom trailer*, with an optional unary minus */
static bool postfix(struct rd *r)
{
	const char *at;
	size_t len;
	bool dotted = false; /* a name, then only .name so far */

	if (++r->depth > SHAPE_DEPTH)
		return false;
	blanks(r);
	if (take(r, '-'))
		blanks(r);
	if (r->p >= r->end)
		return false;
	if (r->end - r->p >= 3 && memcmp(r->p, "...", 3) == 0) {
		r->p += 3;
	} else if (number(r)) {
		/* read */
	} else if (string(r)) {
		/* adjacent literals are one: 'a' 'b' */
		for (;;) {
			struct rd save = *r;

			blanks(r);
			if (!string(r)) {
				*r = save;
				break;
			}
		}
	} else if (name(r, &at, &len)) {
		/* f'' and the like were refused by string(): a prefix
		 * followed by a quote is no name */
		if (r->p < r->end && (*r->p == '\'' || *r->p == '"'))
			return false;
		dotted = true;
	} else if (take(r, '[')) {
		if (!list(r, ']'))
			return false;
	} else if (take(r, '(')) {
		if (!list(r, ')'))
			return false;
	} else {
		return false;
	}
	for (;;) {
		if (take(r, '.')) {
			if (!name(r, &at, &len))
				return false;
		} else if (take(r, '[')) {
			if (!list(r, ']'))
				return false;
			dotted = false;
		} else if (peek(r, '(')) {
			if (!dotted)
				return false; /* only a dotted name is called */
			r->p++;
			if (!arguments(r))
				return false;
			dotted = false;
		} else {
			break;
		}
	}
	r->depth--;
	return true;
}

static bool expr(struct rd *r)
{
	if (!postfix(r))
		return false;
	while (take(r, '|'))
		if (!postfix(r))
			return false;
	return true;
}

bool sb_shape_type_expression(const char *s, size_t n)
{
	struct rd r = { s, s + n, 0 };

	if (memchr(s, '\0', n))
		return false;
	if (!expr(&r))
		return false;
	blanks(&r);
	return r.p == r.end;
}

bool sb_shape_template(const char *src, size_t n, const char *t)
{
	const char *s = src, *end = src + n, *id = NULL;
	size_t id_len = 0;

	while (*t) {
		if (t[0] == '%' && (t[1] == 's' || t[1] == 'r')) {
			bool quoted = t[1] == 'r';
			const char *at;
			size_t len;

			if (quoted) {
				if (s >= end || *s != '\'')
					return false;
				s++;
			}
			at = s;
			if (s >= end || !is_name_start((unsigned char)*s))
				return false;
			while (s < end && is_name_char((unsigned char)*s))
				s++;
			len = (size_t)(s - at);
			if (!id) {
				id = at;
				id_len = len;
			} else if (len != id_len || memcmp(at, id, len) != 0) {
				return false;
			}
			if (quoted) {
				if (s >= end || *s != '\'')
					return false;
				s++;
			}
			t += 2;
		} else {
			if (s >= end || *s != *t)
				return false;
			s++;
			t++;
		}
	}
	return s == end && id != NULL;
}

/* ---- code dataclasses generates ---- */

/* The calls dataclasses' templates make (CPython 3.9 to 3.13): by the
 * name right before the parenthesis. A default factory is called by a name
 * made from its field's (_dflt_x, __dataclass_dflt_x__). */
static const char *const dataclass_callees[] = {
	"super", "type", "hash", "FrozenInstanceError", "__setattr__",
	"__delattr__", "__post_init__", "__dataclasses_recursive_repr", NULL
};

/* Statements the templates never write, and that run code of their own
 * choosing (an import, a class body, a context manager, a coroutine). */
static const char *const dataclass_refused[] = {
	"import", "from", "class", "with", "async", "await", "yield",
	"lambda", "global", "nonlocal", NULL
};

/* Words before a parenthesis that open a group, not a call. */
static const char *const grouping_words[] = {
	"if", "elif", "else", "in", "is", "not", "and", "or", "return",
	"raise", "assert", "while", "for", NULL
};

static bool word_in(const char *w, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == n && memcmp(*list, w, n) == 0)
			return true;
	return false;
}

static bool default_factory(const char *w, size_t n)
{
	return (n > 6 && memcmp(w, "_dflt_", 6) == 0) ||
	       (n > 17 && memcmp(w, "__dataclass_dflt_", 17) == 0 &&
		memcmp(w + n - 2, "__", 2) == 0);
}

bool sb_shape_dataclass_code(const char *s, size_t n)
{
	struct rd r = { s, s + n, 0 };
	/* the token before the current one, and the one before that */
	enum { T_NONE, T_NAME, T_VALUE, T_OPEN, T_OP } prev = T_NONE;
	const char *word = NULL, *before = NULL;
	size_t word_n = 0, before_n = 0;

	if (memchr(s, '\0', n))
		return false;
	for (;;) {
		const char *at;
		size_t len;

		while (r.p < r.end && (*r.p == ' ' || *r.p == '\n'))
			r.p++;
		if (r.p >= r.end)
			return true;
		at = r.p;
		if (literal(&r, true)) {
			prev = T_VALUE;
			continue;
		}
		if (name(&r, &at, &len)) {
			if (r.p < r.end && (*r.p == '\'' || *r.p == '"'))
				return false; /* a prefix string() refused */
			if (word_in(at, len, dataclass_refused))
				return false;
			before = prev == T_NAME ? word : NULL;
			before_n = prev == T_NAME ? word_n : 0;
			word = at;
			word_n = len;
			prev = T_NAME;
			continue;
		}
		if (number(&r)) {
			prev = T_VALUE;
			continue;
		}
		switch (*r.p) {
		case '(':
			/* a call: of an allowed name only, never of what an
			 * expression returned; a definition's name; a group */
			if (prev == T_NAME && !(before && before_n == 3 &&
						memcmp(before, "def", 3) == 0) &&
			    !word_in(word, word_n, grouping_words) &&
			    !word_in(word, word_n, dataclass_callees) &&
			    !default_factory(word, word_n))
				return false;
			if (prev == T_VALUE)
				return false;
			prev = T_OPEN;
			break;
		case ')':
		case ']':
		case '}':
			prev = T_VALUE;
			break;
		case '@':
			/* 3.13's one decorator; any other calls what it names */
			if ((size_t)(r.end - r.p) < 31 ||
			    memcmp(r.p, "@__dataclasses_recursive_repr()", 31) != 0)
				return false;
			r.p += 30;
			prev = T_VALUE;
			break;
		case '#':
		case '\\':
		case ';':
			return false;
		default:
			if (!strchr("[{.,:=<>!+-*/%|&^~", *r.p))
				return false;
			prev = *r.p == '[' || *r.p == '{' ? T_OPEN : T_OP;
			if (*r.p == '.')
				prev = T_OP;
			break;
		}
		r.p++;
	}
}

const char sb_shape_mock_function[] =
	"def %s(*args, **kwargs):\n"
	"    _checksig_(*args, **kwargs)\n"
	"    return mock(*args, **kwargs)";

const char sb_shape_managers_method[] =
	"def %s(self, /, *args, **kwds):\n"
	"        return self._callmethod(%r, args, kwds)";

const char sb_shape_sharedctypes_property[] =
	"\ndef get%s(self):\n"
	"    self.acquire()\n"
	"    try:\n"
	"        return self._obj.%s\n"
	"    finally:\n"
	"        self.release()\n"
	"def set%s(self, value):\n"
	"    self.acquire()\n"
	"    try:\n"
	"        self._obj.%s = value\n"
	"    finally:\n"
	"        self.release()\n"
	"%s = property(get%s, set%s)\n";
