/* eval_scan.c - the eval guard's fast path (py-sandboxes(5), eval-*): a
 * scanner that proves, from the tokens of a source alone, that the source is
 * a plain arithmetic or comparison expression which the static checker
 * (eval_check.c) would pass without a violation and which its rewrite would
 * leave unchanged. eval.c then compiles the source directly, skipping the
 * parse to Python AST objects and the walk over them, which cost as much as
 * the compile itself. The scanner decides nothing on its own: it knows a
 * small regular subset of Python's expression grammar, asks the checker's
 * own functions about the names and node classes it finds, and answers
 * false (the parse and the walk decide) for anything else.
 *
 * What it admits, and the AST that stands for it (eval mode):
 *   Expression
 *     operand  decimal int or float literal          Constant
 *              ASCII name, not a keyword             Name (Load)
 *     unary    + -                                   UnaryOp (UAdd, USub)
 *     binary   + - * / // % **                       BinOp
 *              < > <= >= == !=                       Compare
 *     ( )      around an operand expression          (no node)
 *   separated by spaces and tabs, nothing before the first token.
 * Anything else (a newline, a comment, a string, a keyword, a call, an
 * attribute, a subscript, a comma, '=', a bitwise operator, a non-ASCII
 * byte, a literal the checker's parse might read otherwise) is refused
 * here. Each operand is one node and each operator at most one, and each
 * node on a path from the root but the Expression and the leaf stands for
 * at least one operator: 1 + operands + operators bounds the node count,
 * 2 + operators the depth, as the walk counts them. None of these nodes is
 * one the rewrite changes (loops, comprehensions, functions, lambdas).
 */
#include "eval_int.h"

#include <string.h>

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
	return name_start(c) || digit(c);
}

/* Python's hard keywords, 3.9 to 3.14 (soft keywords read as names in an
 * expression). */
static const char *const keywords[] = {
	"False",  "None",     "True",    "and",    "as",       "assert",
	"async",  "await",    "break",   "class",  "continue", "def",
	"del",    "elif",     "else",    "except", "finally",  "for",
	"from",   "global",   "if",      "import", "in",       "is",
	"lambda", "nonlocal", "not",     "or",     "pass",     "raise",
	"return", "try",      "while",   "with",   "yield",
};

/* digitpart: digit (["_"] digit)*; its length, 0 when none. */
static size_t digitpart(const char *s)
{
	size_t n;

	if (!digit(s[0]))
		return 0;
	for (n = 1; digit(s[n]) || (s[n] == '_' && digit(s[n + 1]));)
		n += s[n] == '_' ? 2 : 1;
	return n;
}

/* A decimal int or float literal (no imaginary part) at s, as Python's
 * tokenizer reads it: its length, or 0 for anything else, including a
 * literal that runs into a name character, a dot or a non-ASCII byte. */
static size_t number(const char *s)
{
	size_t n = digitpart(s), k, d, i;
	bool integer = true;

	if (s[n] == '.') {
		integer = false;
		d = digitpart(s + n + 1);
		if (!n && !d)
			return 0;
		n += 1 + d;
	} else if (!n) {
		return 0;
	}
	if (s[n] == 'e' || s[n] == 'E') {
		integer = false;
		k = n + 1;
		if (s[k] == '+' || s[k] == '-')
			k++;
		d = digitpart(s + k);
		if (!d)
			return 0;
		n = k + d;
	}
	/* 0123 is refused by Python; 00 and 0_0 are zero */
	if (integer && s[0] == '0')
		for (i = 0; i < n; i++)
			if (s[i] != '0' && s[i] != '_')
				return 0;
	if (name_char(s[n]) || s[n] == '.' || (unsigned char)s[n] >= 0x80)
		return 0;
	return n;
}

/* A binary operator at s: its length, 0 for anything else; *compare for a
 * comparison. Python's tokenizer takes the longest operator: '**' and '//'
 * are read whole, '<<', '>>', '<>' and the augmented assignments are left
 * to the parse (their second character is never an operand). */
static size_t binary_op(const char *s, bool *compare)
{
	*compare = false;
	switch (s[0]) {
	case '+':
	case '-':
	case '%':
		return 1;
	case '*':
	case '/':
		return s[1] == s[0] ? 2 : 1;
	case '<':
	case '>':
		if (s[1] == s[0])
			return 0;
		*compare = true;
		return s[1] == '=' ? 2 : 1;
	case '=':
	case '!':
		*compare = s[1] == '=';
		return *compare ? 2 : 0;
	default:
		return 0;
	}
}

bool ev_scan_admits(const struct ev_profile *p, const char *src, size_t len)
{
	const struct sb_eval_profile *r = p->rules;
	const char *s = src, *end = src + len;
	bool operand = true; /* an operand is expected next */
	bool unary = false, binary = false, compare = false, cmp;
	bool constant = false, named = false;
	long long operands = 0, operators = 0, parens = 0;
	char name[64];
	size_t n;

	/* an embedded NUL, a leading blank (an IndentationError), the
	 * guard's own names: the parse says */
	if (strlen(src) != len || src[0] == ' ' || src[0] == '\t' ||
	    strstr(src, "__sb_"))
		return false;
	for (;;) {
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (s == end)
			break;
		if (operand) {
			if (*s == '(') {
				parens++;
				s++;
				continue;
			}
			if (*s == '+' || *s == '-') {
				unary = true;
				operators++;
				s++;
				continue;
			}
			if (digit(*s) || (*s == '.' && digit(s[1]))) {
				n = number(s);
				if (!n)
					return false;
				constant = true;
			} else if (name_start(*s)) {
				for (n = 1; name_char(s[n]); n++)
					;
				if (n >= sizeof(name))
					return false;
				memcpy(name, s, n);
				name[n] = '\0';
				if (sb_str_in(name, keywords,
					      SB_ARRAY_LEN(keywords)) ||
				    !ev_name_read_clean(p, name))
					return false;
				named = true;
			} else {
				return false;
			}
			s += n;
			operands++;
			operand = false;
			continue;
		}
		if (*s == ')') {
			if (parens-- == 0)
				return false;
			s++;
			continue;
		}
		n = binary_op(s, &cmp);
		if (!n)
			return false;
		if (cmp)
			compare = true;
		else
			binary = true;
		operators++;
		s += n;
		operand = true;
	}
	if (operand || parens)
		return false;
	if (!ev_syntax_allowed(p, "Expression") ||
	    (constant && !ev_syntax_allowed(p, "Constant")) ||
	    (named && !ev_syntax_allowed(p, "Name")) ||
	    (unary && !ev_syntax_allowed(p, "UnaryOp")) ||
	    (binary && !ev_syntax_allowed(p, "BinOp")) ||
	    (compare && !ev_syntax_allowed(p, "Compare")))
		return false;
	return 1 + operands + operators <= r->scalar[SB_EVAL_MAX_NODES] &&
	       2 + operators <= r->scalar[SB_EVAL_MAX_DEPTH];
}
