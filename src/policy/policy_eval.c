/* policy_eval.c - the eval-* rules: parses and validates the thirteen keys
 * (five list keys, eight scalar keys, each with an optional ":<profile>"),
 * fills p->eval_profiles with syntax tokens expanded to AST node class names,
 * and supplies sb_closest(), the "did you mean" matcher the other directive
 * parsers share. It only describes the sub-language: deciding what evaluated
 * code may do belongs to the guard, so nothing here knows about the running
 * interpreter (attribute groups are kept by name). Pure code: no syscalls,
 * no printing, no exit; every problem goes through sb_error/sb_warning.
 */
#include <stdint.h>
#include <stdlib.h>

#include "api_registry.h"
#include "policy_internal.h"

/* The list keys come first, in enum sb_eval_list order, then the scalars in
 * enum sb_eval_scalar order, so a key's index is its slot. */
static const char *const eval_keys[] = {
	"eval-syntax",
	"eval-call",
	"eval-attribute",
	"eval-import",
	"eval-magic",
	"eval-namespace",
	"eval-timeout",
	"eval-max-iterations",
	"eval-max-call-depth",
	"eval-max-depth",
	"eval-max-nodes",
	"eval-max-alloc",
	"eval-max-leaked-threads",
};

_Static_assert(SB_ARRAY_LEN(eval_keys) ==
		       SB_EVAL_LIST_COUNT + SB_EVAL_SCALAR_COUNT,
	       "one name per eval key");

/* The concrete ast node classes of CPython 3.9 to 3.14, sorted (C locale).
 * Deprecated aliases (Num, Str, Index...) and abstract bases (expr, stmt,
 * operator...) are left out on purpose: a rule naming them would never match
 * a node the parser produces. */
static const char *const ast_nodes[] = {
	"Add", "And", "AnnAssign", "Assert", "Assign", "AsyncFor",
	"AsyncFunctionDef", "AsyncWith", "Attribute", "AugAssign", "Await",
	"BinOp", "BitAnd", "BitOr", "BitXor", "BoolOp", "Break", "Call",
	"ClassDef", "Compare", "Constant", "Continue", "Del", "Delete", "Dict",
	"DictComp", "Div", "Eq", "ExceptHandler", "Expr", "Expression",
	"FloorDiv", "For", "FormattedValue", "FunctionDef", "FunctionType",
	"GeneratorExp", "Global", "Gt", "GtE", "If", "IfExp", "Import",
	"ImportFrom", "In", "Interactive", "Interpolation", "Invert", "Is",
	"IsNot", "JoinedStr", "LShift", "Lambda", "List", "ListComp", "Load",
	"Lt", "LtE", "MatMult", "Match", "MatchAs", "MatchClass",
	"MatchMapping", "MatchOr", "MatchSequence", "MatchSingleton",
	"MatchStar", "MatchValue", "Mod", "Module", "Mult", "Name", "NamedExpr",
	"Nonlocal", "Not", "NotEq", "NotIn", "Or", "ParamSpec", "Pass", "Pow",
	"RShift", "Raise", "Return", "Set", "SetComp", "Slice", "Starred",
	"Store", "Sub", "Subscript", "TemplateStr", "Try", "TryStar", "Tuple",
	"TypeAlias", "TypeIgnore", "TypeVar", "TypeVarTuple", "UAdd", "USub",
	"UnaryOp", "While", "With", "Yield", "YieldFrom", "alias", "arg",
	"arguments", "comprehension", "keyword", "match_case", "withitem",
};

struct syntax_group {
	const char *name;
	const char *nodes[6]; /* NULL-terminated */
};

static const struct syntax_group syntax_groups[] = {
	{ "arith", { "BinOp", "UnaryOp" } },
	{ "compare", { "Compare", "BoolOp" } },
	{ "conditional", { "If", "IfExp" } },
	{ "loop", { "For", "While", "Break", "Continue" } },
	{ "comprehension",
	  { "ListComp", "SetComp", "DictComp", "GeneratorExp",
	    "comprehension" } },
	{ "assign", { "Assign", "AugAssign", "AnnAssign", "NamedExpr" } },
	{ "func", { "FunctionDef", "Return", "arguments", "arg", "Lambda" } },
	{ "async", { "AsyncFunctionDef", "Await", "AsyncFor", "AsyncWith" } },
	{ "class", { "ClassDef" } },
	{ "exception", { "Try", "TryStar", "Raise", "ExceptHandler" } },
	{ "context", { "With", "withitem" } },
	{ "import", { "Import", "ImportFrom", "alias" } },
	{ "subscript", { "Subscript", "Slice", "Starred" } },
	{ "fstring", { "JoinedStr", "FormattedValue" } },
	{ "tstring", { "TemplateStr", "Interpolation" } },
	{ "yield", { "Yield", "YieldFrom" } },
};

/* Resolved against the running interpreter by the guard, not here. */
static const char *const attribute_groups[] = {
	"str-methods", "list-methods",  "dict-methods",  "set-methods",
	"tuple-methods", "num-methods", "bytes-methods", "date-methods",
};

/* Builtins that hand evaluated code a way around the guard's own checks. */
static const char *const sensitive_builtins[] = {
	"getattr", "setattr", "delattr", "vars",       "hasattr",
	"dir",     "globals", "type",    "breakpoint", "open",
	"eval",    "exec",    "compile", "__import__",
};

/* The guard cannot see attributes that str.format resolves from a template. */
static const char *const format_attributes[] = { "format", "format_map" };

/* Always allowed, not expressible, not removable (2.6.7). */
static const char *const core_nodes[] = {
	"Constant", "Del",  "Dict", "Expr", "Expression", "Interactive",
	"List",     "Load", "Module", "Name", "Pass",     "Set",
	"Store",    "Tuple",
};

const char *sb_eval_syntax_group(const char *node)
{
	size_t i, k;

	for (i = 0; i < SB_ARRAY_LEN(syntax_groups); i++)
		for (k = 0; syntax_groups[i].nodes[k]; k++)
			if (strcmp(syntax_groups[i].nodes[k], node) == 0)
				return syntax_groups[i].name;
	return NULL;
}

const char *sb_eval_syntax_group_at(size_t i, const char *const **nodes)
{
	if (i >= SB_ARRAY_LEN(syntax_groups))
		return NULL;
	*nodes = syntax_groups[i].nodes;
	return syntax_groups[i].name;
}

bool sb_eval_core_node(const char *node)
{
	return sb_str_in(node, core_nodes, SB_ARRAY_LEN(core_nodes));
}

bool sb_eval_sensitive_builtin(const char *name)
{
	return sb_str_in(name, sensitive_builtins,
			 SB_ARRAY_LEN(sensitive_builtins));
}

static const char *const namespace_modes[] = { "adaptive", "closed", "caller" };

static const int64_t scalar_defaults[SB_EVAL_SCALAR_COUNT] = {
	[SB_EVAL_NAMESPACE] = SB_EVAL_NS_ADAPTIVE,
	[SB_EVAL_TIMEOUT] = 5000,
	[SB_EVAL_MAX_ITERATIONS] = 1000000,
	[SB_EVAL_MAX_CALL_DEPTH] = 20,
	[SB_EVAL_MAX_DEPTH] = 20,
	[SB_EVAL_MAX_NODES] = 5000,
	[SB_EVAL_MAX_ALLOC] = 10000000,
	[SB_EVAL_MAX_LEAKED_THREADS] = 4,
};

/* ---- sb_closest: difflib.SequenceMatcher.ratio() without junk ---- */

/* Python's find_longest_match: the longest common block, the earliest in a
 * on ties, then the earliest in b. 'row' has room for bhi - blo + 1. */
static void longest_match(const char *a, size_t alo, size_t ahi, const char *b,
			  size_t blo, size_t bhi, size_t *row, size_t *bi,
			  size_t *bj, size_t *bsize)
{
	size_t i, j, w = bhi - blo;

	*bi = alo;
	*bj = blo;
	*bsize = 0;
	memset(row, 0, (w + 1) * sizeof(*row));
	for (i = alo; i < ahi; i++) {
		/* row[j + 1]: length of the block ending at a[i], b[blo + j];
		 * walking j downwards reuses the previous row in place. */
		for (j = w; j-- > 0;) {
			if (a[i] != b[blo + j]) {
				row[j + 1] = 0;
				continue;
			}
			row[j + 1] = row[j] + 1;
		}
		for (j = 0; j < w; j++) {
			if (row[j + 1] > *bsize) {
				*bsize = row[j + 1];
				*bi = i + 1 - *bsize;
				*bj = blo + j + 1 - *bsize;
			}
		}
	}
}

/* Total size of the matching blocks (Ratcliff/Obershelp recursion). */
static size_t matching_chars(const char *a, size_t alo, size_t ahi,
			     const char *b, size_t blo, size_t bhi, size_t *row)
{
	size_t i, j, k, m;

	if (alo >= ahi || blo >= bhi)
		return 0;
	longest_match(a, alo, ahi, b, blo, bhi, row, &i, &j, &k);
	if (!k)
		return 0;
	m = k;
	m += matching_chars(a, alo, i, b, blo, j, row);
	m += matching_chars(a, i + k, ahi, b, j + k, bhi, row);
	return m;
}

const char *sb_closest(const char *word, const char *const *known, size_t n)
{
	size_t lw = strlen(word), best_m = 0, best_t = 1, i;
	const char *best = NULL;
	size_t *row = calloc(lw + 1, sizeof(*row));

	if (!row)
		abort(); /* as util.c does: no half-made answers */
	for (i = 0; i < n; i++) {
		size_t lk = strlen(known[i]), t = lk + lw, m;

		/* An upper bound first (difflib's real_quick_ratio): most
		 * candidates of a very different length stop here. */
		if (10 * 2 * (lk < lw ? lk : lw) < 6 * t)
			continue;
		/* difflib.get_close_matches puts the candidate in a and the
		 * word in b; the order decides which blocks are found. Two
		 * empty strings match fully (ratio 1.0). */
		if (t) {
			m = matching_chars(known[i], 0, lk, word, 0, lw, row);
		} else {
			m = 1;
			t = 2;
		}
		if (10 * 2 * m < 6 * t)
			continue;
		/* Strictly better only, so ties keep the first candidate. */
		if (!best || m * best_t > best_m * t) {
			best = known[i];
			best_m = m;
			best_t = t;
		}
	}
	free(row);
	return best;
}

/* ---- small helpers ---- */

static bool is_ident_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

/* A Python identifier (non-ASCII bytes let through for the guard to judge),
 * or a '*' pattern built from identifier characters; s[0..n). */
static bool is_name_or_pattern_n(const char *s, size_t n)
{
	bool star = false;
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '*')
			star = true;
		else if (!is_ident_char((unsigned char)s[i]))
			return false;
	}
	return star || !(s[0] >= '0' && s[0] <= '9');
}

static bool is_name_or_pattern(const char *s)
{
	return is_name_or_pattern_n(s, strlen(s));
}

/* Dotted module names, each part a name or a pattern: json, os.path, json.* */
static bool is_module_or_pattern(const char *s)
{
	while (true) {
		const char *dot = strchr(s, '.');
		size_t n = dot ? (size_t)(dot - s) : strlen(s);

		if (!is_name_or_pattern_n(s, n))
			return false;
		if (!dot)
			return true;
		s = dot + 1;
	}
}

static bool is_dunder(const char *s)
{
	size_t n = strlen(s);

	return n > 4 && sb_str_starts(s, "__") && s[n - 1] == '_' &&
	       s[n - 2] == '_';
}

/* Order is irrelevant to the rules, but stable order keeps output stable. */
static void list_add(struct sb_arena *a, struct sb_strlist *l, const char *s)
{
	if (sb_str_in(s, l->v, l->n))
		return;
	l->v = sb_arena_grow(a, l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = s;
}

/* "'a'", "'a' and 'b'", "'a', 'b' and 'c'" */
static const char *quoted_list(struct sb_arena *a, const char *const *v,
			       size_t n)
{
	struct sb_buf b = { 0 };
	const char *s;
	size_t i;

	for (i = 0; i < n; i++) {
		if (i)
			sb_buf_puts(&b, i + 1 == n ? " and " : ", ");
		sb_buf_printf(&b, "'%s'", v[i]);
	}
	s = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return s;
}

/* Which names of 'table' a granted token (name or pattern) reaches. */
static size_t matched_names(const char *tok, const char *const *table, size_t n,
			    const char **out)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (sb_glob_star_match(tok, table[i]))
			out[k++] = table[i];
	return k;
}

static struct sb_eval_profile *find_profile(struct sb_policy *p,
					    const char *name)
{
	struct sb_eval_profile *e;
	size_t i;

	for (i = 0; i < p->eval_profiles.n; i++)
		if (strcmp(p->eval_profiles.v[i].name, name) == 0)
			return &p->eval_profiles.v[i];
	e = SB_VEC_PUSH(p->arena, p->eval_profiles);
	e->name = sb_arena_strdup(p->arena, name);
	return e;
}

/* ---- list keys ---- */

static void add_syntax(struct sb_policy *p, const struct sb_line *l,
		       struct sb_strlist *set, const char *tok)
{
	const char **known;
	const char *near;
	size_t i, j, ng = SB_ARRAY_LEN(syntax_groups);

	if (strchr(tok, '*')) {
		sb_error(p, l->ref,
			 "In '%s', a pattern is not accepted on eval-syntax: "
			 "the vocabulary is finite.",
			 l->text);
		return;
	}
	for (i = 0; i < ng; i++) {
		if (strcmp(tok, syntax_groups[i].name) != 0)
			continue;
		for (j = 0; syntax_groups[i].nodes[j]; j++)
			list_add(p->arena, set, syntax_groups[i].nodes[j]);
		return;
	}
	for (i = 0; i < SB_ARRAY_LEN(ast_nodes); i++) {
		if (strcmp(tok, ast_nodes[i]) == 0) {
			list_add(p->arena, set, ast_nodes[i]);
			return;
		}
	}
	/* Groups first: on a tie the suggestion is the broader token. */
	known = sb_arena_alloc(p->arena,
			       (ng + SB_ARRAY_LEN(ast_nodes)) * sizeof(*known));
	for (i = 0; i < ng; i++)
		known[i] = syntax_groups[i].name;
	for (i = 0; i < SB_ARRAY_LEN(ast_nodes); i++)
		known[ng + i] = ast_nodes[i];
	near = sb_closest(tok, known, ng + SB_ARRAY_LEN(ast_nodes));
	if (near)
		sb_error(p, l->ref,
			 "In '%s', unknown syntax token '%s', closest known "
			 "token is '%s'.",
			 l->text, tok, near);
	else
		sb_error(p, l->ref, "In '%s', unknown syntax token '%s'.",
			 l->text, tok);
}

static void warn_call(struct sb_policy *p, const struct sb_line *l,
		      const char *tok)
{
	const char *hit[SB_ARRAY_LEN(sensitive_builtins)];
	size_t k = matched_names(tok, sensitive_builtins,
				 SB_ARRAY_LEN(sensitive_builtins), hit);

	if (!k)
		return;
	if (!strchr(tok, '*'))
		sb_warning(p, l->ref,
			   "In '%s', '%s' is a sensitive builtin: evaluated "
			   "code can use it to reach past the eval guard.",
			   l->text, tok);
	else
		sb_warning(p, l->ref,
			   "In '%s', pattern '%s' grants the sensitive "
			   "builtin%s %s: evaluated code can use %s to reach "
			   "past the eval guard.",
			   l->text, tok, k > 1 ? "s" : "",
			   quoted_list(p->arena, hit, k),
			   k > 1 ? "them" : "it");
}

static void warn_format(struct sb_policy *p, const struct sb_line *l,
			const char *tok)
{
	const char *hit[SB_ARRAY_LEN(format_attributes)];
	size_t k = matched_names(tok, format_attributes,
				 SB_ARRAY_LEN(format_attributes), hit);

	if (!k)
		return;
	if (!strchr(tok, '*'))
		sb_warning(p, l->ref,
			   "In '%s', granting '%s' lets evaluated code read "
			   "attributes named in str.format templates, which "
			   "the eval guard does not see; prefer an f-string.",
			   l->text, tok);
	else
		sb_warning(p, l->ref,
			   "In '%s', pattern '%s' grants %s, which let%s "
			   "evaluated code read attributes named in str.format "
			   "templates, which the eval guard does not see; "
			   "prefer an f-string.",
			   l->text, tok, quoted_list(p->arena, hit, k),
			   k > 1 ? "" : "s");
}

/* Validate one token of a non-syntax list key; false after an error. */
static bool check_token(struct sb_policy *p, const struct sb_line *l,
			enum sb_eval_list which, const char *tok)
{
	const char *near;

	switch (which) {
	case SB_EVAL_CALL:
		if (is_name_or_pattern(tok))
			return true;
		sb_error(p, l->ref,
			 "In '%s', invalid builtin name '%s': expected an "
			 "identifier or a '*' pattern.",
			 l->text, tok);
		return false;
	case SB_EVAL_ATTRIBUTE:
		if (sb_str_in(tok, attribute_groups,
			     SB_ARRAY_LEN(attribute_groups)))
			return true;
		/* Dunders are eval-magic's business; granting one here
		 * would look like a grant and do nothing. */
		if (is_dunder(tok)) {
			sb_error(p, l->ref,
				 "In '%s', '%s' is a dunder name: grant it "
				 "with eval-magic=%s.",
				 l->text, tok, tok);
			return false;
		}
		if (is_name_or_pattern(tok))
			return true;
		near = NULL;
		if (strchr(tok, '-'))
			near = sb_closest(tok, attribute_groups,
					  SB_ARRAY_LEN(attribute_groups));
		if (near)
			sb_error(p, l->ref,
				 "In '%s', unknown attribute group '%s', "
				 "closest known token is '%s'.",
				 l->text, tok, near);
		else
			sb_error(p, l->ref,
				 "In '%s', invalid attribute name '%s': "
				 "expected an identifier, a '*' pattern or "
				 "one of %s.",
				 l->text, tok,
				 quoted_list(p->arena, attribute_groups,
					     SB_ARRAY_LEN(attribute_groups)));
		return false;
	case SB_EVAL_IMPORT:
		if (is_module_or_pattern(tok))
			return true;
		sb_error(p, l->ref,
			 "In '%s', invalid module name '%s': expected a "
			 "dotted module name or a '*' pattern such as json.*.",
			 l->text, tok);
		return false;
	case SB_EVAL_MAGIC:
		/* The guard's own helpers: evaluated code must never reach
		 * them, whatever the rules say. */
		if (sb_str_starts(tok, "__sb_")) {
			sb_error(p, l->ref,
				 "In '%s', '%s' is reserved: names starting "
				 "with __sb_ belong to the eval guard and "
				 "cannot be granted.",
				 l->text, tok);
			return false;
		}
		if (is_name_or_pattern(tok) &&
		    (strchr(tok, '*') || is_dunder(tok)))
			return true;
		sb_error(p, l->ref,
			 "In '%s', '%s' is not a dunder name: eval-magic takes "
			 "names like __name__ or '*' patterns; ordinary names "
			 "go in eval-call or eval-attribute.",
			 l->text, tok);
		return false;
	default:
		return false;
	}
}

static void parse_list(struct sb_policy *p, const struct sb_line *l,
		       struct sb_eval_profile *e, enum sb_eval_list which,
		       const char *value)
{
	struct sb_strlist *set = &e->allow[which];
	bool deny = false;
	const char *s;

	if (sb_str_starts(value, "DENY:")) {
		deny = true;
		set = &e->deny[which];
		value += strlen("DENY:");
	}
	/* Empty tokens are skipped: "eval-call=" still declares the
	 * profile, which is what turns the guard on. */
	for (s = value;;) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		char *tok = sb_strip(p->arena, s, n);

		if (*tok) {
			if (which == SB_EVAL_SYNTAX) {
				add_syntax(p, l, set, tok);
			} else if (check_token(p, l, which, tok)) {
				list_add(p->arena, set, tok);
				if (!deny && which == SB_EVAL_CALL)
					warn_call(p, l, tok);
				if (!deny && which == SB_EVAL_ATTRIBUTE)
					warn_format(p, l, tok);
			}
		}
		if (!comma)
			break;
		s = comma + 1;
	}
}

/* ---- scalar keys ---- */

enum num_status {
	NUM_OK,
	NUM_JUNK,
	NUM_NEGATIVE,
	NUM_OVERFLOW,
	NUM_NOT_WHOLE_MS, /* refused rather than rounded */
};

/* Digits with Python's '_' separators (only between two digits). 'end'
 * receives the first byte after the number. */
static enum num_status parse_digits(const char *s, const char **end,
				    int64_t *out, size_t *ndigits)
{
	int64_t v = 0;
	bool overflow = false;
	size_t nd = 0;

	while ((*s >= '0' && *s <= '9') ||
	       (*s == '_' && nd && s[1] >= '0' && s[1] <= '9')) {
		if (*s != '_') {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *s - '0', &v))
				overflow = true;
			nd++;
		}
		s++;
	}
	*end = s;
	*out = v;
	*ndigits = nd;
	if (*s == '_')
		return NUM_JUNK;
	return overflow ? NUM_OVERFLOW : NUM_OK;
}

static const char *skip_space(const char *s)
{
	while (sb_is_space((unsigned char)*s))
		s++;
	return s;
}

struct unit {
	const char *suffix;
	int64_t mult;
};

/* An integer, then one of 'units' (case-insensitive, spaces allowed). */
static enum num_status parse_int_unit(const char *v, const struct unit *units,
				      size_t n_units, int64_t *out)
{
	const char *end;
	size_t nd, i;
	enum num_status st = parse_digits(v, &end, out, &nd);

	if (st == NUM_JUNK || !nd)
		return NUM_JUNK;
	end = skip_space(end);
	for (i = 0; i < n_units; i++)
		if (sb_str_ieq(end, units[i].suffix))
			break;
	if (i == n_units)
		return NUM_JUNK;
	if (st == NUM_OK && __builtin_mul_overflow(*out, units[i].mult, out))
		st = NUM_OVERFLOW;
	return st;
}

/* "2s", "500ms", "1.5m", "3" (seconds) -> milliseconds, computed exactly
 * (no floating point: 0.1 s is 100 ms, not 99). */
static enum num_status parse_timeout(const char *v, int64_t *out)
{
	static const struct unit units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
	};
	const char *end, *frac = NULL, *fend = NULL, *c;
	int64_t ipart, fpart = 0, scale = 1, ms, ignored;
	size_t nd, nf = 0, ns = 0, i;
	enum num_status st = parse_digits(v, &end, &ipart, &nd);

	if (st == NUM_JUNK)
		return NUM_JUNK;
	if (*end == '.') {
		frac = end + 1;
		if (parse_digits(frac, &end, &ignored, &nf) == NUM_JUNK)
			return NUM_JUNK;
		fend = end;
	}
	if (!nd && !nf)
		return NUM_JUNK;
	end = skip_space(end);
	for (i = 0; i < SB_ARRAY_LEN(units); i++)
		if (sb_str_ieq(end, units[i].suffix))
			break;
	if (i == SB_ARRAY_LEN(units))
		return NUM_JUNK;
	if (st != NUM_OK || __builtin_mul_overflow(ipart, units[i].mult, &ms))
		return NUM_OVERFLOW;
	if (frac) {
		/* Trailing zeros carry no value. Past that, the multiplier
		 * (at most 60000 = 2^5 * 3 * 5^4) cannot turn more than
		 * five significant decimals into whole milliseconds. */
		while (fend > frac && (fend[-1] == '0' || fend[-1] == '_'))
			fend--;
		for (c = frac; c < fend; c++) {
			if (*c == '_')
				continue;
			if (++ns > 5)
				return NUM_NOT_WHOLE_MS;
			fpart = fpart * 10 + (*c - '0');
			scale *= 10;
		}
		if ((fpart * units[i].mult) % scale)
			return NUM_NOT_WHOLE_MS;
		if (__builtin_add_overflow(ms, fpart * units[i].mult / scale,
					   &ms))
			return NUM_OVERFLOW;
	}
	*out = ms;
	return NUM_OK;
}

static enum num_status parse_scalar_value(enum sb_eval_scalar which,
					  const char *v, int64_t *out)
{
	static const struct unit plain[] = { { "", 1 } };
	static const struct unit bytes[] = {
		{ "", 1 },
		{ "KB", 1000 },
		{ "MB", 1000000 },
		{ "GB", 1000000000 },
	};
	bool negative = *v == '-';
	enum num_status st;

	if (negative)
		v++;
	if (which == SB_EVAL_TIMEOUT)
		st = parse_timeout(v, out);
	else if (which == SB_EVAL_MAX_ALLOC)
		st = parse_int_unit(v, bytes, SB_ARRAY_LEN(bytes), out);
	else
		st = parse_int_unit(v, plain, SB_ARRAY_LEN(plain), out);
	/* A well-formed number with a sign gets the more useful message. */
	if (negative && st != NUM_JUNK)
		return NUM_NEGATIVE;
	return st;
}

static void parse_namespace(struct sb_policy *p, const struct sb_line *l,
			    struct sb_eval_profile *e, const char *value)
{
	size_t i;

	/* namespace_modes is in enum sb_eval_namespace order. */
	for (i = 0; i < SB_ARRAY_LEN(namespace_modes); i++)
		if (sb_str_ieq(value, namespace_modes[i]))
			break;
	if (i == SB_ARRAY_LEN(namespace_modes)) {
		sb_error(p, l->ref,
			 "eval-namespace: unknown mode '%s', expected one of "
			 "['adaptive', 'closed', 'caller'].",
			 value);
		return;
	}
	e->scalar[SB_EVAL_NAMESPACE] = (int64_t)i;
	if (i == SB_EVAL_NS_CALLER)
		sb_warning(p, l->ref,
			   "In '%s', eval-namespace=caller honours the "
			   "caller's context as is, builtins included, and "
			   "skips the rewrite: for debugging only.",
			   l->text);
}

static void parse_scalar(struct sb_policy *p, const struct sb_line *l,
			 struct sb_eval_profile *e, enum sb_eval_scalar which,
			 const char *value)
{
	const char *key = eval_keys[SB_EVAL_LIST_COUNT + which];
	const struct sb_ref *first = &e->scalar_ref[which];
	enum num_status st;
	int64_t v = 0;

	if (first->file) {
		/* "line N" alone would point into the wrong file. */
		if (first->line && l->ref.file &&
		    strcmp(first->file, l->ref.file) == 0)
			sb_error(p, l->ref,
				 "%s is set twice in this profile (already at "
				 "line %u): a scalar is not a set.",
				 key, first->line);
		else
			sb_error(p, l->ref,
				 "%s is set twice in this profile (already at "
				 "%s): a scalar is not a set.",
				 key, sb_ref_format(p->arena, *first));
		return;
	}
	e->scalar_ref[which] = l->ref;
	if (sb_str_starts(value, "DENY:") || strchr(value, '*')) {
		sb_error(p, l->ref,
			 "%s: `DENY:` and patterns apply to list keys only.",
			 key);
		return;
	}
	if (which == SB_EVAL_NAMESPACE) {
		parse_namespace(p, l, e, value);
		return;
	}
	st = parse_scalar_value(which, value, &v);
	switch (st) {
	case NUM_OK:
		e->scalar[which] = v;
		return;
	case NUM_NEGATIVE:
		sb_error(p, l->ref,
			 "%s: invalid value '%s', a negative value is not "
			 "accepted.",
			 key, value);
		return;
	case NUM_OVERFLOW:
		sb_error(p, l->ref,
			 "%s: invalid value '%s', the number is too large.",
			 key, value);
		return;
	case NUM_NOT_WHOLE_MS:
		sb_error(p, l->ref,
			 "%s: invalid value '%s', not a whole number of "
			 "milliseconds.",
			 key, value);
		return;
	case NUM_JUNK:
	default:
		break;
	}
	if (which == SB_EVAL_TIMEOUT)
		sb_error(p, l->ref,
			 "%s: invalid value '%s', expected a number with an "
			 "optional ms, s or m suffix, such as 500ms, 2s or "
			 "1.5m.",
			 key, value);
	else if (which == SB_EVAL_MAX_ALLOC)
		sb_error(p, l->ref,
			 "%s: invalid value '%s', expected an integer with an "
			 "optional KB, MB or GB suffix, such as 10MB.",
			 key, value);
	else
		sb_error(p, l->ref,
			 "%s: invalid value '%s', expected an integer such as "
			 "1_000.",
			 key, value);
}

/* ---- entry points ---- */

/* Identifier-like, with '-' as in the other rule vocabularies. */
static bool valid_profile_name(const char *s)
{
	const char *c;

	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	      *s == '_'))
		return false;
	for (c = s; *c; c++)
		if (*c != '-' && ((unsigned char)*c >= 0x80 ||
				  !is_ident_char((unsigned char)*c)))
			return false;
	return true;
}

void sb_parse_eval(struct sb_policy *p, const struct sb_line *l)
{
	const char *colon = strchr(l->key, ':');
	size_t klen = colon ? (size_t)(colon - l->key) : strlen(l->key);
	char *key = sb_strip(p->arena, l->key, klen);
	const char *profile = "", *near;
	struct sb_eval_profile *e;
	char *value;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(eval_keys); i++)
		if (strcmp(key, eval_keys[i]) == 0)
			break;
	if (i == SB_ARRAY_LEN(eval_keys)) {
		near = sb_closest(key, eval_keys, SB_ARRAY_LEN(eval_keys));
		if (near)
			sb_error(p, l->ref,
				 "In '%s', unknown key '%s', closest known "
				 "token is '%s'.",
				 l->text, key, near);
		else
			sb_error(p, l->ref, "In '%s', unknown key '%s'.",
				 l->text, key);
		return;
	}
	if (colon) {
		profile = sb_strip(p->arena, colon + 1, strlen(colon + 1));
		if (!*profile) {
			sb_error(p, l->ref,
				 "In '%s', empty profile name after '%s:': "
				 "write %s=... for the default profile.",
				 l->text, key, key);
			return;
		}
		if (!valid_profile_name(profile)) {
			sb_error(p, l->ref,
				 "In '%s', invalid profile name '%s': use "
				 "letters, digits, '_' and '-', starting with "
				 "a letter or '_'.",
				 l->text, profile);
			return;
		}
	}
	e = find_profile(p, profile);
	value = sb_strip(p->arena, l->value, strlen(l->value));
	if (i < SB_EVAL_LIST_COUNT)
		parse_list(p, l, e, (enum sb_eval_list)i, value);
	else
		parse_scalar(p, l, e,
			     (enum sb_eval_scalar)(i - SB_EVAL_LIST_COUNT),
			     value);
}

void sb_eval_profile_defaults(struct sb_eval_profile *e)
{
	int k;

	for (k = 0; k < SB_EVAL_SCALAR_COUNT; k++)
		e->scalar[k] = scalar_defaults[k];
}

void sb_eval_finish(struct sb_policy *p)
{
	size_t i;
	int k;

	for (i = 0; i < p->eval_profiles.n; i++) {
		struct sb_eval_profile *e = &p->eval_profiles.v[i];

		for (k = 0; k < SB_EVAL_SCALAR_COUNT; k++)
			if (!e->scalar_ref[k].file)
				e->scalar[k] = scalar_defaults[k];
	}
}

const char *sb_eval_raw_grant(bool (*granted)(long k, const void *ctx),
			      const void *ctx)
{
	static const char *const raw[] = { "builtins.eval", "builtins.exec",
					   "builtins.compile" };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(raw); i++) {
		long k = sb_api_lookup(raw[i]);

		if (k >= 0 && granted(k, ctx))
			return raw[i];
	}
	return NULL;
}
