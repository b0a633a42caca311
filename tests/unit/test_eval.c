/* test_eval.c - unit tests of the eval-* rule parser (src/policy/policy_eval.c):
 * every key, profiles, DENY lines, syntax groups, scalar values, every error
 * and warning text, defaults, and the sb_closest() matcher. No parser, no
 * file system: each case feeds rule lines straight to sb_parse_eval().
 */
#include <stdint.h>

#include "policy_internal.h"
#include "tap.h"

static const struct sb_ref REF = { "f", 3 };

static void setup(struct sb_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->arena = sb_arena_new();
}

static void teardown(struct sb_policy *p)
{
	sb_arena_free(p->arena);
}

/* Feed one "key=value" rule as the directive dispatcher would. */
static void rule_at(struct sb_policy *p, const char *text, struct sb_ref ref)
{
	const char *eq = strchr(text, '=');
	struct sb_line l = {
		.text = text,
		.key = eq ? sb_arena_strndup(p->arena, text,
					     (size_t)(eq - text))
			  : text,
		.value = eq ? eq + 1 : "",
		.ref = ref,
	};

	sb_parse_eval(p, &l);
}

static void rule(struct sb_policy *p, const char *text)
{
	rule_at(p, text, REF);
}

static struct sb_eval_profile *profile(struct sb_policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->eval_profiles.n; i++)
		if (strcmp(p->eval_profiles.v[i].name, name) == 0)
			return &p->eval_profiles.v[i];
	return NULL;
}

/* "a,b,c" in the stored order. */
static const char *joined(struct sb_policy *p, const struct sb_strlist *l)
{
	struct sb_buf b = { 0 };
	const char *s;
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (i)
			sb_buf_puts(&b, ",");
		sb_buf_puts(&b, l->v[i]);
	}
	s = sb_arena_strdup(p->arena, b.s ? b.s : "");
	sb_buf_free(&b);
	return s;
}

static const char *allow(struct sb_policy *p, const char *prof,
			 enum sb_eval_list k)
{
	struct sb_eval_profile *e = profile(p, prof);

	return e ? joined(p, &e->allow[k]) : "(no profile)";
}

static const char *deny(struct sb_policy *p, const char *prof,
			enum sb_eval_list k)
{
	struct sb_eval_profile *e = profile(p, prof);

	return e ? joined(p, &e->deny[k]) : "(no profile)";
}

static const char *first_error(struct sb_policy *p)
{
	return p->errors.n ? p->errors.v[0].text : "(no error)";
}

static const char *first_warning(struct sb_policy *p)
{
	return p->warnings.n ? p->warnings.v[0].text : "(no warning)";
}

/* One rule that must be refused with exactly 'want' and nothing else. */
static void check_error(const char *text, const char *want)
{
	struct sb_policy p;

	setup(&p);
	rule(&p, text);
	is_str(first_error(&p), want, "error for '%s'", text);
	is_int(p.errors.n, 1, "one error for '%s'", text);
	teardown(&p);
}

/* One valid rule: no error, and the default profile's list 'k' is 'want'. */
static void check_list(const char *text, enum sb_eval_list k, bool is_deny,
		       const char *want)
{
	struct sb_policy p;

	setup(&p);
	rule(&p, text);
	is_int(p.errors.n, 0, "no error for '%s' (%s)", text, first_error(&p));
	is_str(is_deny ? deny(&p, "", k) : allow(&p, "", k), want, "'%s'",
	       text);
	teardown(&p);
}

static void test_syntax(void)
{
	static const struct {
		const char *group, *nodes;
	} groups[] = {
		{ "arith", "BinOp,UnaryOp" },
		{ "compare", "Compare,BoolOp" },
		{ "conditional", "If,IfExp" },
		{ "loop", "For,While,Break,Continue" },
		{ "comprehension",
		  "ListComp,SetComp,DictComp,GeneratorExp,comprehension" },
		{ "assign", "Assign,AugAssign,AnnAssign,NamedExpr" },
		{ "func", "FunctionDef,Return,arguments,arg,Lambda" },
		{ "async", "AsyncFunctionDef,Await,AsyncFor,AsyncWith" },
		{ "class", "ClassDef" },
		{ "exception", "Try,TryStar,Raise,ExceptHandler" },
		{ "context", "With,withitem" },
		{ "import", "Import,ImportFrom,alias" },
		{ "subscript", "Subscript,Slice,Starred" },
		{ "fstring", "JoinedStr,FormattedValue" },
		{ "tstring", "TemplateStr,Interpolation" },
		{ "yield", "Yield,YieldFrom" },
	};
	static const char *const nodes[] = {
		"While",     "TryStar",       "TypeAlias",  "TypeVar",
		"ParamSpec", "TypeVarTuple",  "Match",      "MatchAs",
		"MatchOr",   "MatchStar",     "match_case", "TemplateStr",
		"Interpolation", "Add",       "NotIn",      "keyword",
		"Constant",  "FunctionType",  "TypeIgnore", "withitem",
	};
	char text[64];
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(groups); i++) {
		snprintf(text, sizeof(text), "eval-syntax=%s", groups[i].group);
		check_list(text, SB_EVAL_SYNTAX, false, groups[i].nodes);
	}
	for (i = 0; i < SB_ARRAY_LEN(nodes); i++) {
		snprintf(text, sizeof(text), "eval-syntax=%s", nodes[i]);
		check_list(text, SB_EVAL_SYNTAX, false, nodes[i]);
	}
	check_list("eval-syntax=arith, compare", SB_EVAL_SYNTAX, false,
		   "BinOp,UnaryOp,Compare,BoolOp");
	check_list("eval-syntax=  arith ,BinOp,  While  ", SB_EVAL_SYNTAX,
		   false, "BinOp,UnaryOp,While");
	check_list("eval-syntax=DENY:loop", SB_EVAL_SYNTAX, true,
		   "For,While,Break,Continue");
	check_list("eval-syntax=DENY: While , arith", SB_EVAL_SYNTAX, true,
		   "While,BinOp,UnaryOp");
	check_list("eval-syntax=DENY:loop", SB_EVAL_SYNTAX, false, "");
	check_list("eval-syntax=arith,,compare,", SB_EVAL_SYNTAX, false,
		   "BinOp,UnaryOp,Compare,BoolOp");
	check_list("eval-syntax=", SB_EVAL_SYNTAX, false, "");

	check_error("eval-syntax=lop",
		    "f(3): In 'eval-syntax=lop', unknown syntax token 'lop', "
		    "closest known token is 'loop'.");
	check_error("eval-syntax=whle",
		    "f(3): In 'eval-syntax=whle', unknown syntax token "
		    "'whle', closest known token is 'While'.");
	check_error("eval-syntax=xyz",
		    "f(3): In 'eval-syntax=xyz', unknown syntax token 'xyz'.");
	/* deprecated aliases and abstract bases are not node classes */
	check_error("eval-syntax=Num",
		    "f(3): In 'eval-syntax=Num', unknown syntax token 'Num'.");
	check_error("eval-syntax=Index", "f(3): In 'eval-syntax=Index', "
					 "unknown syntax token 'Index'.");
	check_error("eval-syntax=expr",
		    "f(3): In 'eval-syntax=expr', unknown syntax token "
		    "'expr', closest known token is 'Expr'.");
	check_error("eval-syntax=NodeVisitor",
		    "f(3): In 'eval-syntax=NodeVisitor', unknown syntax token "
		    "'NodeVisitor'.");
	check_error("eval-syntax=AST", "f(3): In 'eval-syntax=AST', unknown "
				       "syntax token 'AST'.");
	check_error("eval-syntax=ARITH", "f(3): In 'eval-syntax=ARITH', "
					 "unknown syntax token 'ARITH'.");
	check_error("eval-syntax=ar*",
		    "f(3): In 'eval-syntax=ar*', a pattern is not accepted on "
		    "eval-syntax: the vocabulary is finite.");
	check_error("eval-syntax=DENY:*",
		    "f(3): In 'eval-syntax=DENY:*', a pattern is not accepted "
		    "on eval-syntax: the vocabulary is finite.");

	/* every bad token is reported, the good ones are kept */
	{
		struct sb_policy p;

		setup(&p);
		rule(&p, "eval-syntax=lop, arith, xyz");
		is_int(p.errors.n, 2, "two bad tokens, two errors");
		if (p.errors.n == 2)
			is_str(p.errors.v[1].text,
			       "f(3): In 'eval-syntax=lop, arith, xyz', "
			       "unknown syntax token 'xyz'.",
			       "second error names the second token");
		is_str(allow(&p, "", SB_EVAL_SYNTAX), "BinOp,UnaryOp",
		       "the valid token is kept");
		teardown(&p);
	}
}

static void test_lists(void)
{
	check_list("eval-call=len, min,max", SB_EVAL_CALL, false,
		   "len,min,max");
	check_list("eval-call=is*, _x1, *", SB_EVAL_CALL, false, "is*,_x1,*");
	check_list("eval-call=DENY:len", SB_EVAL_CALL, true, "len");
	check_list("eval-call=", SB_EVAL_CALL, false, "");
	check_list("eval-attribute=upper, str-methods, date-methods, get*",
		   SB_EVAL_ATTRIBUTE, false,
		   "upper,str-methods,date-methods,get*");
	check_list("eval-attribute=list-methods, dict-methods, set-methods, "
		   "tuple-methods, num-methods, bytes-methods",
		   SB_EVAL_ATTRIBUTE, false,
		   "list-methods,dict-methods,set-methods,tuple-methods,"
		   "num-methods,bytes-methods");
	check_list("eval-attribute=DENY:str-methods, secret", SB_EVAL_ATTRIBUTE,
		   true, "str-methods,secret");
	check_list("eval-import=json, os.path, json.*, *, a.b*.c",
		   SB_EVAL_IMPORT, false, "json,os.path,json.*,*,a.b*.c");
	check_list("eval-import=DENY:os", SB_EVAL_IMPORT, true, "os");
	check_list("eval-magic=__name__, __*__, __len__", SB_EVAL_MAGIC, false,
		   "__name__,__*__,__len__");
	check_list("eval-magic=DENY:__class__", SB_EVAL_MAGIC, true,
		   "__class__");

	check_error("eval-call=a b", "f(3): In 'eval-call=a b', invalid "
				     "builtin name 'a b': expected an "
				     "identifier or a '*' pattern.");
	check_error("eval-call=1x", "f(3): In 'eval-call=1x', invalid builtin "
				    "name '1x': expected an identifier or a "
				    "'*' pattern.");
	check_error("eval-call=os.system",
		    "f(3): In 'eval-call=os.system', invalid builtin name "
		    "'os.system': expected an identifier or a '*' pattern.");
	check_error("eval-attribute=str-method",
		    "f(3): In 'eval-attribute=str-method', unknown attribute "
		    "group 'str-method', closest known token is "
		    "'str-methods'.");
	check_error("eval-attribute=a.b",
		    "f(3): In 'eval-attribute=a.b', invalid attribute name "
		    "'a.b': expected an identifier, a '*' pattern or one of "
		    "'str-methods', 'list-methods', 'dict-methods', "
		    "'set-methods', 'tuple-methods', 'num-methods', "
		    "'bytes-methods' and 'date-methods'.");
	check_error("eval-attribute=__class__",
		    "f(3): In 'eval-attribute=__class__', '__class__' is a "
		    "dunder name: grant it with eval-magic=__class__.");
	check_error("eval-import=json..x",
		    "f(3): In 'eval-import=json..x', invalid module name "
		    "'json..x': expected a dotted module name or a '*' "
		    "pattern such as json.*.");
	check_error("eval-import=.json",
		    "f(3): In 'eval-import=.json', invalid module name "
		    "'.json': expected a dotted module name or a '*' "
		    "pattern such as json.*.");
	check_error("eval-import=json.",
		    "f(3): In 'eval-import=json.', invalid module name "
		    "'json.': expected a dotted module name or a '*' "
		    "pattern such as json.*.");
	check_error("eval-magic=__sb_x__",
		    "f(3): In 'eval-magic=__sb_x__', '__sb_x__' is reserved: "
		    "names starting with __sb_ belong to the eval guard and "
		    "cannot be granted.");
	check_error("eval-magic=__sb_*",
		    "f(3): In 'eval-magic=__sb_*', '__sb_*' is reserved: "
		    "names starting with __sb_ belong to the eval guard and "
		    "cannot be granted.");
	check_error("eval-magic=name",
		    "f(3): In 'eval-magic=name', 'name' is not a dunder name: "
		    "eval-magic takes names like __name__ or '*' patterns; "
		    "ordinary names go in eval-call or eval-attribute.");
	check_error("eval-magic=____",
		    "f(3): In 'eval-magic=____', '____' is not a dunder name: "
		    "eval-magic takes names like __name__ or '*' patterns; "
		    "ordinary names go in eval-call or eval-attribute.");
	check_error("eval-magic=__a b__",
		    "f(3): In 'eval-magic=__a b__', '__a b__' is not a dunder "
		    "name: eval-magic takes names like __name__ or '*' "
		    "patterns; ordinary names go in eval-call or "
		    "eval-attribute.");
}

/* Lines union, duplicates go, DENY is kept apart, profiles do not mix. */
static void test_union_and_profiles(void)
{
	struct sb_policy p;

	setup(&p);
	rule(&p, "eval-call=len, min");
	rule(&p, "eval-call=min, abs, len");
	rule(&p, "eval-call=DENY:abs");
	rule(&p, "eval-call=DENY:abs, eval");
	rule(&p, "eval-syntax=arith");
	rule(&p, "eval-syntax=BinOp, compare");
	rule(&p, "eval-syntax:llm=loop");
	rule(&p, "eval-call:llm=max");
	rule(&p, "eval-syntax : llm = DENY:While");
	rule(&p, "eval-timeout:llm=2s");
	rule(&p, "eval-timeout=3s");
	rule(&p, "eval-magic:other_2-x=__name__");
	is_int(p.errors.n, 0, "no error (%s)", first_error(&p));
	is_int(p.eval_profiles.n, 3, "three profiles");
	if (p.eval_profiles.n == 3) {
		is_str(p.eval_profiles.v[0].name, "", "default first");
		is_str(p.eval_profiles.v[1].name, "llm", "then llm");
		is_str(p.eval_profiles.v[2].name, "other_2-x",
		       "then other_2-x");
	}
	is_str(allow(&p, "", SB_EVAL_CALL), "len,min,abs", "calls unioned");
	is_str(deny(&p, "", SB_EVAL_CALL), "abs,eval", "denials unioned");
	is_str(allow(&p, "", SB_EVAL_SYNTAX), "BinOp,UnaryOp,Compare,BoolOp",
	       "syntax unioned without duplicates");
	is_str(allow(&p, "llm", SB_EVAL_SYNTAX), "For,While,Break,Continue",
	       "llm syntax is its own");
	is_str(deny(&p, "llm", SB_EVAL_SYNTAX), "While", "llm denial");
	is_str(allow(&p, "llm", SB_EVAL_CALL), "max", "llm calls");
	is_str(deny(&p, "", SB_EVAL_SYNTAX), "", "default has no denial");
	is_int(profile(&p, "llm")->scalar[SB_EVAL_TIMEOUT], 2000,
	       "llm timeout");
	is_int(profile(&p, "")->scalar[SB_EVAL_TIMEOUT], 3000,
	       "default timeout is independent");
	is_str(allow(&p, "other_2-x", SB_EVAL_MAGIC), "__name__",
	       "profile names take digits, '_' and '-'");
	is_int(p.warnings.n, 0, "denying 'eval' warns nothing");
	teardown(&p);

	/* only named profiles: no default profile is made up */
	setup(&p);
	rule(&p, "eval-syntax:calc=arith");
	is_int(p.eval_profiles.n, 1, "one profile");
	ok(profile(&p, "") == NULL, "no default profile without its keys");
	teardown(&p);
}

static void test_keys_and_profile_names(void)
{
	struct sb_policy p;

	check_error("eval-synax=arith",
		    "f(3): In 'eval-synax=arith', unknown key 'eval-synax', "
		    "closest known token is 'eval-syntax'.");
	check_error("eval-foo=1", "f(3): In 'eval-foo=1', unknown key "
				  "'eval-foo', closest known token is "
				  "'eval-import'.");
	check_error("eval-max-node=5", "f(3): In 'eval-max-node=5', unknown "
				       "key 'eval-max-node', closest known "
				       "token is 'eval-max-nodes'.");
	check_error("eval-qqqqqqqqqq=1", "f(3): In 'eval-qqqqqqqqqq=1', "
					 "unknown key 'eval-qqqqqqqqqq'.");
	check_error("eval-synax:llm=arith",
		    "f(3): In 'eval-synax:llm=arith', unknown key "
		    "'eval-synax', closest known token is 'eval-syntax'.");
	check_error("eval-syntax:=arith",
		    "f(3): In 'eval-syntax:=arith', empty profile name after "
		    "'eval-syntax:': write eval-syntax=... for the default "
		    "profile.");
	check_error("eval-timeout: =2s",
		    "f(3): In 'eval-timeout: =2s', empty profile name after "
		    "'eval-timeout:': write eval-timeout=... for the default "
		    "profile.");
	check_error("eval-syntax:1x=arith",
		    "f(3): In 'eval-syntax:1x=arith', invalid profile name "
		    "'1x': use letters, digits, '_' and '-', starting with a "
		    "letter or '_'.");
	check_error("eval-syntax:a b=arith",
		    "f(3): In 'eval-syntax:a b=arith', invalid profile name "
		    "'a b': use letters, digits, '_' and '-', starting with a "
		    "letter or '_'.");
	check_error("eval-syntax:a:b=arith",
		    "f(3): In 'eval-syntax:a:b=arith', invalid profile name "
		    "'a:b': use letters, digits, '_' and '-', starting with a "
		    "letter or '_'.");

	/* a refused key or profile name creates no profile */
	setup(&p);
	rule(&p, "eval-synax=arith");
	rule(&p, "eval-syntax:=arith");
	rule(&p, "eval-syntax:9=arith");
	is_int(p.eval_profiles.n, 0, "no profile from refused lines");
	is_int(p.errors.n, 3, "three errors");
	teardown(&p);
}

static void test_scalar_errors(void)
{
	struct sb_policy p;

	setup(&p);
	rule_at(&p, "eval-timeout=2s", (struct sb_ref){ "f", 3 });
	rule_at(&p, "eval-timeout=3s", (struct sb_ref){ "f", 7 });
	rule_at(&p, "eval-timeout:llm=3s", (struct sb_ref){ "f", 8 });
	is_int(p.errors.n, 1, "one error");
	is_str(first_error(&p),
	       "f(7): eval-timeout is set twice in this profile (already at "
	       "line 3): a scalar is not a set.",
	       "scalar set twice");
	is_int(profile(&p, "")->scalar[SB_EVAL_TIMEOUT], 2000,
	       "first value kept");
	is_int(profile(&p, "")->scalar_ref[SB_EVAL_TIMEOUT].line, 3,
	       "first ref kept");
	teardown(&p);

	setup(&p);
	rule_at(&p, "eval-max-nodes=10", (struct sb_ref){ SB_REF_ARG, 0 });
	rule_at(&p, "eval-max-nodes=10", (struct sb_ref){ "f", 4 });
	is_str(first_error(&p),
	       "f(4): eval-max-nodes is set twice in this profile (already "
	       "at <arg>): a scalar is not a set.",
	       "first without a line: its ref");
	teardown(&p);

	setup(&p);
	rule_at(&p, "eval-namespace=closed", (struct sb_ref){ "a", 2 });
	rule_at(&p, "eval-namespace=closed", (struct sb_ref){ "f", 4 });
	is_str(first_error(&p),
	       "f(4): eval-namespace is set twice in this profile (already "
	       "at a(2)): a scalar is not a set.",
	       "first in another file: its ref");
	teardown(&p);

	check_error("eval-timeout=DENY:2s", "f(3): eval-timeout: `DENY:` and "
					    "patterns apply to list keys "
					    "only.");
	check_error("eval-max-nodes=*", "f(3): eval-max-nodes: `DENY:` and "
					"patterns apply to list keys only.");
	check_error("eval-namespace:llm=clo*",
		    "f(3): eval-namespace: `DENY:` and patterns apply to list "
		    "keys only.");
	check_error("eval-namespace=open",
		    "f(3): eval-namespace: unknown mode 'open', expected one "
		    "of ['adaptive', 'closed', 'caller'].");
	check_error("eval-namespace=",
		    "f(3): eval-namespace: unknown mode '', expected one of "
		    "['adaptive', 'closed', 'caller'].");
}

struct scalar_case {
	const char *text;
	enum sb_eval_scalar k;
	int64_t want; /* when 'error' is NULL */
	const char *error;
};

#define BAD_INT(key, v)                                                        \
	"f(3): " key ": invalid value '" v "', expected an integer such as "   \
	"1_000."
#define BAD_TIME(v)                                                            \
	"f(3): eval-timeout: invalid value '" v "', expected a number with "   \
	"an optional ms, s or m suffix, such as 500ms, 2s or 1.5m."
#define BAD_ALLOC(v)                                                           \
	"f(3): eval-max-alloc: invalid value '" v "', expected an integer "    \
	"with an optional KB, MB or GB suffix, such as 10MB."
#define NEGATIVE(key, v)                                                       \
	"f(3): " key ": invalid value '" v "', a negative value is not "       \
	"accepted."
#define TOO_LARGE(key, v)                                                      \
	"f(3): " key ": invalid value '" v "', the number is too large."
#define NOT_WHOLE(v)                                                           \
	"f(3): eval-timeout: invalid value '" v "', not a whole number of "    \
	"milliseconds."

#define GOOD(text, k, v) { text, k, v, NULL }
#define BAD(text, k, error) { text, k, 0, error }

static const struct scalar_case scalar_cases[] = {
	GOOD("eval-namespace=adaptive", SB_EVAL_NAMESPACE, SB_EVAL_NS_ADAPTIVE),
	GOOD("eval-namespace=closed", SB_EVAL_NAMESPACE, SB_EVAL_NS_CLOSED),
	GOOD("eval-namespace= Closed ", SB_EVAL_NAMESPACE, SB_EVAL_NS_CLOSED),

	GOOD("eval-timeout=2s", SB_EVAL_TIMEOUT, 2000),
	GOOD("eval-timeout=500ms", SB_EVAL_TIMEOUT, 500),
	GOOD("eval-timeout=1.5m", SB_EVAL_TIMEOUT, 90000),
	GOOD("eval-timeout=3", SB_EVAL_TIMEOUT, 3000),
	GOOD("eval-timeout=0", SB_EVAL_TIMEOUT, 0),
	GOOD("eval-timeout=0.5", SB_EVAL_TIMEOUT, 500),
	GOOD("eval-timeout=.25s", SB_EVAL_TIMEOUT, 250),
	GOOD("eval-timeout=2.s", SB_EVAL_TIMEOUT, 2000),
	GOOD("eval-timeout=0.001s", SB_EVAL_TIMEOUT, 1),
	GOOD("eval-timeout=0.1s", SB_EVAL_TIMEOUT, 100),
	GOOD("eval-timeout=1_000ms", SB_EVAL_TIMEOUT, 1000),
	GOOD("eval-timeout=1.000_5m", SB_EVAL_TIMEOUT, 60030),
	GOOD("eval-timeout=1.50000000000000000000000s", SB_EVAL_TIMEOUT, 1500),
	GOOD("eval-timeout=2S", SB_EVAL_TIMEOUT, 2000),
	GOOD("eval-timeout=0.00005m", SB_EVAL_TIMEOUT, 3),
	GOOD("eval-timeout=.12345m", SB_EVAL_TIMEOUT, 7407),
	GOOD("eval-timeout=2 s", SB_EVAL_TIMEOUT, 2000),
	BAD("eval-timeout=0.00001m", SB_EVAL_TIMEOUT, NOT_WHOLE("0.00001m")),
	BAD("eval-timeout=0.0001s", SB_EVAL_TIMEOUT, NOT_WHOLE("0.0001s")),
	BAD("eval-timeout=1.5ms", SB_EVAL_TIMEOUT, NOT_WHOLE("1.5ms")),
	BAD("eval-timeout=0.1234567s", SB_EVAL_TIMEOUT,
	    NOT_WHOLE("0.1234567s")),
	BAD("eval-timeout=2h", SB_EVAL_TIMEOUT, BAD_TIME("2h")),
	BAD("eval-timeout=s", SB_EVAL_TIMEOUT, BAD_TIME("s")),
	BAD("eval-timeout=.", SB_EVAL_TIMEOUT, BAD_TIME(".")),
	BAD("eval-timeout=", SB_EVAL_TIMEOUT, BAD_TIME("")),
	BAD("eval-timeout=1_s", SB_EVAL_TIMEOUT, BAD_TIME("1_s")),
	BAD("eval-timeout=1._5s", SB_EVAL_TIMEOUT, BAD_TIME("1._5s")),
	BAD("eval-timeout=1.2.3s", SB_EVAL_TIMEOUT, BAD_TIME("1.2.3s")),
	BAD("eval-timeout=1e3", SB_EVAL_TIMEOUT, BAD_TIME("1e3")),
	BAD("eval-timeout=-1s", SB_EVAL_TIMEOUT,
	    NEGATIVE("eval-timeout", "-1s")),
	BAD("eval-timeout=-", SB_EVAL_TIMEOUT, BAD_TIME("-")),
	BAD("eval-timeout=99999999999999999999s", SB_EVAL_TIMEOUT,
	    TOO_LARGE("eval-timeout", "99999999999999999999s")),
	BAD("eval-timeout=9223372036854775807m", SB_EVAL_TIMEOUT,
	    TOO_LARGE("eval-timeout", "9223372036854775807m")),
	GOOD("eval-timeout=9223372036854775807ms", SB_EVAL_TIMEOUT, INT64_MAX),

	GOOD("eval-max-iterations=1_000", SB_EVAL_MAX_ITERATIONS, 1000),
	GOOD("eval-max-iterations=1_000_000", SB_EVAL_MAX_ITERATIONS, 1000000),
	GOOD("eval-max-iterations=0", SB_EVAL_MAX_ITERATIONS, 0),
	GOOD("eval-max-iterations=9223372036854775807", SB_EVAL_MAX_ITERATIONS,
	     INT64_MAX),
	BAD("eval-max-iterations=9223372036854775808", SB_EVAL_MAX_ITERATIONS,
	    TOO_LARGE("eval-max-iterations", "9223372036854775808")),
	BAD("eval-max-iterations=-5", SB_EVAL_MAX_ITERATIONS,
	    NEGATIVE("eval-max-iterations", "-5")),
	BAD("eval-max-iterations=1__0", SB_EVAL_MAX_ITERATIONS,
	    BAD_INT("eval-max-iterations", "1__0")),
	BAD("eval-max-iterations=_1", SB_EVAL_MAX_ITERATIONS,
	    BAD_INT("eval-max-iterations", "_1")),
	BAD("eval-max-iterations=1_", SB_EVAL_MAX_ITERATIONS,
	    BAD_INT("eval-max-iterations", "1_")),
	BAD("eval-max-iterations=1.5", SB_EVAL_MAX_ITERATIONS,
	    BAD_INT("eval-max-iterations", "1.5")),
	BAD("eval-max-iterations=10k", SB_EVAL_MAX_ITERATIONS,
	    BAD_INT("eval-max-iterations", "10k")),
	BAD("eval-max-iterations=", SB_EVAL_MAX_ITERATIONS,
	    BAD_INT("eval-max-iterations", "")),
	GOOD("eval-max-call-depth=7", SB_EVAL_MAX_CALL_DEPTH, 7),
	BAD("eval-max-call-depth=abc", SB_EVAL_MAX_CALL_DEPTH,
	    BAD_INT("eval-max-call-depth", "abc")),
	GOOD("eval-max-depth= 30 ", SB_EVAL_MAX_DEPTH, 30),
	BAD("eval-max-depth=+3", SB_EVAL_MAX_DEPTH,
	    BAD_INT("eval-max-depth", "+3")),
	GOOD("eval-max-nodes=5_000", SB_EVAL_MAX_NODES, 5000),
	BAD("eval-max-nodes=0x10", SB_EVAL_MAX_NODES,
	    BAD_INT("eval-max-nodes", "0x10")),
	GOOD("eval-max-leaked-threads=0", SB_EVAL_MAX_LEAKED_THREADS, 0),
	BAD("eval-max-leaked-threads=-1", SB_EVAL_MAX_LEAKED_THREADS,
	    NEGATIVE("eval-max-leaked-threads", "-1")),

	GOOD("eval-max-alloc=10MB", SB_EVAL_MAX_ALLOC, 10000000),
	GOOD("eval-max-alloc=10mb", SB_EVAL_MAX_ALLOC, 10000000),
	GOOD("eval-max-alloc=10 MB", SB_EVAL_MAX_ALLOC, 10000000),
	GOOD("eval-max-alloc=1KB", SB_EVAL_MAX_ALLOC, 1000),
	GOOD("eval-max-alloc=2GB", SB_EVAL_MAX_ALLOC, 2000000000),
	GOOD("eval-max-alloc=1_500KB", SB_EVAL_MAX_ALLOC, 1500000),
	GOOD("eval-max-alloc=123", SB_EVAL_MAX_ALLOC, 123),
	GOOD("eval-max-alloc=0", SB_EVAL_MAX_ALLOC, 0),
	BAD("eval-max-alloc=1.5MB", SB_EVAL_MAX_ALLOC, BAD_ALLOC("1.5MB")),
	BAD("eval-max-alloc=10MiB", SB_EVAL_MAX_ALLOC, BAD_ALLOC("10MiB")),
	BAD("eval-max-alloc=10M", SB_EVAL_MAX_ALLOC, BAD_ALLOC("10M")),
	BAD("eval-max-alloc=MB", SB_EVAL_MAX_ALLOC, BAD_ALLOC("MB")),
	BAD("eval-max-alloc=-1MB", SB_EVAL_MAX_ALLOC,
	    NEGATIVE("eval-max-alloc", "-1MB")),
	BAD("eval-max-alloc=9223372036854775807GB", SB_EVAL_MAX_ALLOC,
	    TOO_LARGE("eval-max-alloc", "9223372036854775807GB")),
	BAD("eval-max-alloc=99999999999999999999", SB_EVAL_MAX_ALLOC,
	    TOO_LARGE("eval-max-alloc", "99999999999999999999")),
	GOOD("eval-max-alloc=9223372036GB", SB_EVAL_MAX_ALLOC,
	     9223372036000000000),
};

static void test_scalar_values(void)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(scalar_cases); i++) {
		const struct scalar_case *c = &scalar_cases[i];
		struct sb_policy p;
		struct sb_eval_profile *e;

		setup(&p);
		rule(&p, c->text);
		e = profile(&p, "");
		if (c->error) {
			is_str(first_error(&p), c->error, "'%s' refused",
			       c->text);
			is_int(p.errors.n, 1, "'%s': one error", c->text);
		} else {
			is_int(p.errors.n, 0, "'%s' accepted (%s)", c->text,
			       first_error(&p));
			is_int(e ? e->scalar[c->k] : -1, c->want, "'%s' value",
			       c->text);
			ok(e && e->scalar_ref[c->k].file &&
				   strcmp(e->scalar_ref[c->k].file, "f") == 0 &&
				   e->scalar_ref[c->k].line == 3,
			   "'%s' ref recorded", c->text);
		}
		teardown(&p);
	}
}

static void check_warning(const char *text, const char *want)
{
	struct sb_policy p;

	setup(&p);
	rule(&p, text);
	is_int(p.errors.n, 0, "'%s' accepted (%s)", text, first_error(&p));
	if (want) {
		is_str(first_warning(&p), want, "warning for '%s'", text);
		is_int(p.warnings.n, 1, "one warning for '%s'", text);
	} else {
		is_int(p.warnings.n, 0, "no warning for '%s' (%s)", text,
		       first_warning(&p));
	}
	teardown(&p);
}

static void test_warnings(void)
{
	static const char *const sensitive[] = {
		"getattr", "setattr", "delattr", "vars", "hasattr",
		"dir", "globals", "type", "breakpoint", "open",
		"eval", "exec", "compile", "__import__",
	};
	char text[64], want[256];
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(sensitive); i++) {
		snprintf(text, sizeof(text), "eval-call=%s", sensitive[i]);
		snprintf(want, sizeof(want),
			 "f(3): In '%s', '%s' is a sensitive builtin: "
			 "evaluated code can use it to reach past the eval "
			 "guard.",
			 text, sensitive[i]);
		check_warning(text, want);
	}
	check_warning("eval-call=glob*",
		      "f(3): In 'eval-call=glob*', pattern 'glob*' grants the "
		      "sensitive builtin 'globals': evaluated code can use it "
		      "to reach past the eval guard.");
	check_warning("eval-call=*attr",
		      "f(3): In 'eval-call=*attr', pattern '*attr' grants the "
		      "sensitive builtins 'getattr', 'setattr', 'delattr' and "
		      "'hasattr': evaluated code can use them to reach past "
		      "the eval guard.");
	check_warning("eval-call=len, min, is*", NULL);
	check_warning("eval-call=DENY:getattr, *", NULL);
	check_warning("eval-attribute=format",
		      "f(3): In 'eval-attribute=format', granting 'format' "
		      "lets evaluated code read attributes named in "
		      "str.format templates, which the eval guard does not "
		      "see; prefer an f-string.");
	check_warning("eval-attribute=format_map",
		      "f(3): In 'eval-attribute=format_map', granting "
		      "'format_map' lets evaluated code read attributes named "
		      "in str.format templates, which the eval guard does not "
		      "see; prefer an f-string.");
	check_warning("eval-attribute=form*",
		      "f(3): In 'eval-attribute=form*', pattern 'form*' grants "
		      "'format' and 'format_map', which let evaluated code "
		      "read attributes named in str.format templates, which "
		      "the eval guard does not see; prefer an f-string.");
	check_warning("eval-attribute=*_map",
		      "f(3): In 'eval-attribute=*_map', pattern '*_map' grants "
		      "'format_map', which lets evaluated code read attributes "
		      "named in str.format templates, which the eval guard "
		      "does not see; prefer an f-string.");
	check_warning("eval-attribute=str-methods, upper, formatter", NULL);
	check_warning("eval-attribute=DENY:format", NULL);
	check_warning("eval-namespace=caller",
		      "f(3): In 'eval-namespace=caller', eval-namespace=caller "
		      "honours the caller's context as is, builtins included, "
		      "and skips the rewrite: for debugging only.");
	check_warning("eval-namespace=closed", NULL);
}

static void test_defaults(void)
{
	static const int64_t want[SB_EVAL_SCALAR_COUNT] = {
		[SB_EVAL_NAMESPACE] = SB_EVAL_NS_ADAPTIVE,
		[SB_EVAL_TIMEOUT] = 5000,
		[SB_EVAL_MAX_ITERATIONS] = 1000000,
		[SB_EVAL_MAX_CALL_DEPTH] = 20,
		[SB_EVAL_MAX_DEPTH] = 20,
		[SB_EVAL_MAX_NODES] = 5000,
		[SB_EVAL_MAX_ALLOC] = 10000000,
		[SB_EVAL_MAX_LEAKED_THREADS] = 4,
	};
	struct sb_policy p;
	struct sb_eval_profile *e;
	int k;

	setup(&p);
	sb_eval_finish(&p);
	is_int(p.eval_profiles.n, 0, "finish makes no profile");
	rule(&p, "eval-syntax=arith");
	rule(&p, "eval-timeout:llm=250ms");
	rule(&p, "eval-max-nodes:llm=0");
	rule(&p, "eval-namespace:llm=caller");
	sb_eval_finish(&p);
	is_int(p.errors.n, 0, "no error");
	e = profile(&p, "");
	for (k = 0; e && k < SB_EVAL_SCALAR_COUNT; k++) {
		is_int(e->scalar[k], want[k], "default scalar %d", k);
		ok(e->scalar_ref[k].file == NULL,
		   "default scalar %d has no ref", k);
	}
	e = profile(&p, "llm");
	for (k = 0; e && k < SB_EVAL_SCALAR_COUNT; k++) {
		if (k == SB_EVAL_TIMEOUT || k == SB_EVAL_MAX_NODES ||
		    k == SB_EVAL_NAMESPACE)
			continue;
		is_int(e->scalar[k], want[k], "llm default scalar %d", k);
	}
	if (e) {
		is_int(e->scalar[SB_EVAL_TIMEOUT], 250, "set timeout kept");
		is_int(e->scalar[SB_EVAL_MAX_NODES], 0, "set zero kept");
		is_int(e->scalar[SB_EVAL_NAMESPACE], SB_EVAL_NS_CALLER,
		       "set namespace kept");
		ok(e->scalar_ref[SB_EVAL_MAX_NODES].file &&
			   e->scalar_ref[SB_EVAL_MAX_NODES].line == 3,
		   "set scalar keeps its ref");
	}
	teardown(&p);
}

static void test_closest(void)
{
	static const char *const groups[] = { "arith", "compare", "loop",
					      "func" };
	static const char *const keys[] = { "eval-call", "eval-syntax",
					    "eval-import" };
	static const char *const tie[] = { "abd", "abe" };
	static const char *const empty[] = { "" };

	is_str(sb_closest("lop", groups, SB_ARRAY_LEN(groups)), "loop",
	       "lop -> loop");
	is_str(sb_closest("eval-synax", keys, SB_ARRAY_LEN(keys)),
	       "eval-syntax", "eval-synax -> eval-syntax");
	is_str(sb_closest("xyz", groups, SB_ARRAY_LEN(groups)), NULL,
	       "xyz -> nothing");
	is_str(sb_closest("eval-foo", keys, SB_ARRAY_LEN(keys)), "eval-import",
	       "ratio 12/19 passes the 0.6 cutoff");
	is_str(sb_closest("eval-foo", keys, 2), NULL, "ratio 10/17 does not");
	is_str(sb_closest("abc", tie, SB_ARRAY_LEN(tie)), "abd",
	       "tie -> first candidate");
	is_str(sb_closest("loop", groups, 0), NULL, "no candidate");
	is_str(sb_closest("", empty, 1), "", "empty matches empty");
	is_str(sb_closest("", groups, SB_ARRAY_LEN(groups)), NULL,
	       "empty matches nothing else");
	/* 'ab' vs 'ba': difflib finds one block (M = 1), ratio 0.5 */
	is_str(sb_closest("ab", (const char *const[]){ "ba" }, 1), NULL,
	       "Ratcliff/Obershelp, not a set of letters");
	/* 'abcd' in 'xabcdyabc': M = 4 of T = 13 -> 0.615 */
	is_str(sb_closest("abcd", (const char *const[]){ "xabcdyabc" }, 1),
	       "xabcdyabc", "ratio 8/13 passes");
	/* 'abc' in 'abcxyzw': 2 * 3 / 10 is exactly the cutoff */
	is_str(sb_closest("abc", (const char *const[]){ "abcxyzw" }, 1),
	       "abcxyzw", "ratio 0.6 passes");
	is_str(sb_closest("abc", (const char *const[]){ "abcxyzwv" }, 1), NULL,
	       "ratio 6/11 does not");
	is_str(sb_closest("compar", groups, SB_ARRAY_LEN(groups)), "compare",
	       "compar -> compare");
}

/* The tables the guard's checker reads (guard/eval.c). */
static void test_guard_tables(void)
{
	is_str(sb_eval_syntax_group("While"), "loop", "While is in loop");
	is_str(sb_eval_syntax_group("comprehension"), "comprehension",
	       "comprehension is in its group");
	is_str(sb_eval_syntax_group("Match"), NULL, "Match is in no group");
	ok(sb_eval_core_node("Name") && sb_eval_core_node("Constant"),
	   "Name and Constant are core");
	ok(!sb_eval_core_node("Call") && !sb_eval_core_node("BinOp"),
	   "Call and BinOp are not core");
	ok(sb_eval_sensitive_builtin("getattr") &&
		   sb_eval_sensitive_builtin("__import__"),
	   "getattr and __import__ are sensitive");
	ok(!sb_eval_sensitive_builtin("len"), "len is not sensitive");
}

int main(void)
{
	test_guard_tables();
	test_syntax();
	test_lists();
	test_union_and_profiles();
	test_keys_and_profile_names();
	test_scalar_errors();
	test_scalar_values();
	test_warnings();
	test_defaults();
	test_closest();
	return tap_done();
}
