/* test_cli.c - the python-sb command line splitter (src/launch/cli.c): every case
 * of seed-spec 3.2 and the brief, table-driven, checking the three groups
 * element by element, every flag, the status and the exact error text; then
 * the usage and help texts. It must not depend on any other module than
 * util.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tap.h"

#define V(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NONE ((const char *const[]){ NULL })

struct cli_case {
	const char *const *args; /* argv after "python-sb" */
	int rc;
	const char *err;
	const char *const *interp, *const *rules, *const *command;
	const char *flags;
};

static const struct cli_case cases[] = {
	/* seed-spec 3.2 reference cases */
	{ V("-B", "--learn", "-m", "json.tool", "-h"), 0, NULL, V("-B"),
	  V("learn="), V("-m", "json.tool", "-h"), "" },
	{ V("-B", "x.py", "-v", "--learn"), 0, NULL, V("-B"), NONE,
	  V("x.py", "-v", "--learn"), "" },
	{ V("-mjson.tool"), 0, NULL, NONE, NONE, V("-mjson.tool"), "" },
	{ V("-cprint(1)"), 0, NULL, NONE, NONE, V("-cprint(1)"), "" },
	{ V("-Im", "json.tool"), 0, NULL, V("-I"), NONE, V("-m", "json.tool"),
	  "" },
	{ V("-B", "myscript", "arg"), 0, NULL, V("-B"), NONE,
	  V("myscript", "arg"), "" },
	{ V("--pysandboxes-config"), 2,
	  "argument --pysandboxes-config: expected one argument", NONE, NONE,
	  NONE, "" },

	/* the REPL and the other ways to name the program */
	{ NONE, 0, NULL, NONE, NONE, NONE, "" },
	{ V("-i", "x.py"), 0, NULL, V("-i"), NONE, V("x.py"), "interactive" },
	{ V("-iB", "x.py"), 0, NULL, V("-iB"), NONE, V("x.py"),
	  "interactive" },
	{ V("-ic", "pass"), 0, NULL, V("-i"), NONE, V("-c", "pass"),
	  "interactive" },
	{ V("-"), 0, NULL, NONE, NONE, V("-"), "" },
	{ V("-B", "-", "a", "-v"), 0, NULL, V("-B"), NONE, V("-", "a", "-v"),
	  "" },
	{ V("--", "-x.py"), 0, NULL, NONE, NONE, V("--", "-x.py"), "" },
	{ V("--", "-"), 0, NULL, NONE, NONE, V("--", "-"), "" },
	{ V("--"), 0, NULL, NONE, NONE, NONE, "" },
	{ V("-B", "--", "x.py", "--learn"), 0, NULL, V("-B"), NONE,
	  V("--", "x.py", "--learn"), "" },
	{ V("x.py", "--os-sandbox=none"), 0, NULL, NONE, NONE,
	  V("x.py", "--os-sandbox=none"), "" },
	{ V("x.py", "-h", "-V"), 0, NULL, NONE, NONE, V("x.py", "-h", "-V"),
	  "" },
	{ V(""), 0, NULL, NONE, NONE, V(""), "" },
	{ V("-c", "import sys; print(sys.argv)", "a", "--learn"), 0, NULL,
	  NONE, NONE, V("-c", "import sys; print(sys.argv)", "a", "--learn"),
	  "" },
	{ V("-m", "json.tool", "-B"), 0, NULL, NONE, NONE,
	  V("-m", "json.tool", "-B"), "" },
	{ V("-Imjson.tool", "x"), 0, NULL, V("-I"), NONE,
	  V("-mjson.tool", "x"), "" },
	{ V("-Bcpass"), 0, NULL, V("-B"), NONE, V("-cpass"), "" },
	{ V("-m", "-c"), 0, NULL, NONE, NONE, V("-m", "-c"), "" },

	/* interpreter switches */
	{ V("-W", "error", "-X", "dev", "-c", "pass"), 0, NULL,
	  V("-W", "error", "-X", "dev"), NONE, V("-c", "pass"), "" },
	{ V("-Werror"), 0, NULL, V("-Werror"), NONE, NONE, "" },
	{ V("-Xdev", "-Xutf8"), 0, NULL, V("-Xdev", "-Xutf8"), NONE, NONE,
	  "" },
	{ V("-BWerror", "-c", "1"), 0, NULL, V("-B", "-Werror"), NONE,
	  V("-c", "1"), "" },
	{ V("-BW", "error"), 0, NULL, V("-B", "-W", "error"), NONE, NONE, "" },
	{ V("-W", "ignore::DeprecationWarning", "-W", "error"), 0, NULL,
	  V("-W", "ignore::DeprecationWarning", "-W", "error"), NONE, NONE,
	  "" },
	{ V("-X", "-B"), 0, NULL, V("-X", "-B"), NONE, NONE, "" },
	{ V("-OO"), 0, NULL, V("-OO"), NONE, NONE, "" },
	{ V("-bb", "-vv", "-E", "-s", "-S", "-u", "-q", "-P", "-R", "-t", "-x",
	    "-d", "-IB"),
	  0, NULL,
	  V("-bb", "-vv", "-E", "-s", "-S", "-u", "-q", "-P", "-R", "-t", "-x",
	    "-d", "-IB"),
	  NONE, NONE, "" },
	{ V("--check-hash-based-pycs", "always", "-c", "1"), 0, NULL,
	  V("--check-hash-based-pycs", "always"), NONE, V("-c", "1"), "" },
	{ V("--check-hash-based-pycs=never"), 0, NULL,
	  V("--check-hash-based-pycs", "never"), NONE, NONE, "" },
	{ V("--help-env"), 0, NULL, V("--help-env"), NONE, NONE, "" },
	{ V("--help-xoptions"), 0, NULL, V("--help-xoptions"), NONE, NONE,
	  "" },
	{ V("--help-all"), 0, NULL, V("--help-all"), NONE, NONE, "" },

	/* python-sb's own help and version */
	{ V("-h"), 0, NULL, NONE, NONE, NONE, "help" },
	{ V("-?"), 0, NULL, NONE, NONE, NONE, "help" },
	{ V("--help"), 0, NULL, NONE, NONE, NONE, "help" },
	{ V("-V"), 0, NULL, NONE, NONE, NONE, "version" },
	{ V("--version"), 0, NULL, NONE, NONE, NONE, "version" },
	{ V("-hB", "x.py"), 0, NULL, V("-B"), NONE, V("x.py"), "help" },
	{ V("-BVI"), 0, NULL, V("-BI"), NONE, NONE, "version" },

	/* sandbox options */
	{ V("--os_sandbox=bwrap"), 0, NULL, NONE, V("os-sandbox=bwrap"), NONE,
	  "" },
	{ V("--net=ALLOW|TCP|h|443|OUT"), 0, NULL, NONE,
	  V("net=ALLOW|TCP|h|443|OUT"), NONE, "" },
	{ V("--bwrap.share_net=yes"), 0, NULL, NONE,
	  V("bwrap.share-net=yes"), NONE, "" },
	{ V("--env=MY_VAR=a_b"), 0, NULL, NONE, V("env=MY_VAR=a_b"), NONE,
	  "" },
	{ V("--expose-ro=/a", "--expose-ro=/b", "--learn=/tmp/r", "-B",
	    "x.py"),
	  0, NULL, V("-B"), V("expose-ro=/a", "expose-ro=/b", "learn=/tmp/r"),
	  V("x.py"), "" },
	{ V("--learn="), 0, NULL, NONE, V("learn="), NONE, "" },
	{ V("--pysandboxes-config", "f.txt", "x.py"), 0, NULL, NONE, NONE,
	  V("x.py"), "config=f.txt" },
	{ V("--pysandboxes-config=f.txt"), 0, NULL, NONE, NONE, NONE,
	  "config=f.txt" },
	{ V("--pysandboxes_config=a=b", "--pysandboxes-config", "-"), 0, NULL,
	  NONE, NONE, NONE, "config=-" },
	{ V("--pysandboxes-config="), 2,
	  "argument --pysandboxes-config: expected one argument", NONE, NONE,
	  NONE, "" },
	{ V("--pysandboxes-config", "--learn"), 2,
	  "argument --pysandboxes-config: expected one argument", NONE, NONE,
	  NONE, "" },
	{ V("--pysandboxes-log=/l/d.jsonl", "x.py"), 0, NULL, NONE,
	  V("log-file=/l/d.jsonl"), V("x.py"), "" },
	{ V("--pysandboxes_log", "d.jsonl", "-c", "1"), 0, NULL, NONE,
	  V("log-file=d.jsonl"), V("-c", "1"), "" },
	{ V("--pysandboxes-log="), 2,
	  "argument --pysandboxes-log: expected one argument", NONE, NONE,
	  NONE, "" },
	{ V("--pysandboxes-log", "--learn"), 2,
	  "argument --pysandboxes-log: expected one argument", NONE, NONE,
	  NONE, "" },
	{ V("--pysandboxes-explain", "x.py"), 0, NULL, NONE, NONE, V("x.py"),
	  "explain" },
	{ V("--pysandboxes-explain=x"), 2,
	  "argument --pysandboxes-explain: ignored explicit argument 'x'",
	  NONE, NONE, NONE, "" },
	{ V("--pysandboxes-settings", "-c", "pass"), 0, NULL, NONE, NONE,
	  V("-c", "pass"), "settings" },
	{ V("--pysandboxes-settings=1"), 2,
	  "argument --pysandboxes-settings: ignored explicit argument '1'",
	  NONE, NONE, NONE, "" },
	{ V("--pysandboxes-learn-result=objects,fresh", "-c", "pass"), 0,
	  NULL, NONE, NONE, V("-c", "pass"), "learn-result=objects,fresh" },
	{ V("--pysandboxes-learn-result=data-only"), 0, NULL, NONE, NONE, NONE,
	  "learn-result=data-only" },
	{ V("--pysandboxes-learn-result=objects,fresh,made"), 0, NULL, NONE,
	  NONE, NONE, "learn-result=objects,fresh,made" },
	{ V("--pysandboxes-learn-result=data-only,made"), 0, NULL, NONE, NONE,
	  NONE, "learn-result=data-only,made" },
	{ V("--pysandboxes-learn-result=objects,made,fresh"), 2,
	  "argument --pysandboxes-learn-result: expected =objects or "
	  "=data-only, then ',fresh', ',made', both or nothing", NONE,
	  NONE, NONE, "" },
	{ V("--pysandboxes-learn-result=all"), 2,
	  "argument --pysandboxes-learn-result: expected =objects or "
	  "=data-only, then ',fresh', ',made', both or nothing", NONE,
	  NONE, NONE, "" },
	{ V("--pysandboxes-learn-result", "objects"), 2,
	  "argument --pysandboxes-learn-result: expected =objects or "
	  "=data-only, then ',fresh', ',made', both or nothing", NONE,
	  NONE, NONE, "" },
	{ V("--python=/usr/bin/python3", "-c", "1"), 0, NULL, NONE, NONE,
	  V("-c", "1"), "python=/usr/bin/python3" },
	{ V("--python"), 2, "argument --python: expected =PATH", NONE, NONE,
	  NONE, "" },
	{ V("--python="), 2, "argument --python: expected =PATH", NONE, NONE,
	  NONE, "" },
	{ V("--python", "/usr/bin/python3"), 2,
	  "argument --python: expected =PATH", NONE, NONE, NONE, "" },

	/* usage errors */
	{ V("-Z"), 2, "Unknown option: -Z", NONE, NONE, NONE, "" },
	{ V("-BZ", "x.py"), 2, "Unknown option: -Z", NONE, NONE, NONE, "" },
	{ V("-\xc3\xa9"), 2, "Unknown option: -\xc3\xa9", NONE, NONE, NONE,
	  "" },
	{ V("-B-x"), 2, "Unknown option: -B-x", NONE, NONE, NONE, "" },
	{ V("-J"), 2, "-J is reserved for Jython", NONE, NONE, NONE, "" },
	{ V("-m"), 2, "Argument expected for -m option", NONE, NONE, NONE,
	  "" },
	{ V("-c"), 2, "Argument expected for -c option", NONE, NONE, NONE,
	  "" },
	{ V("-B", "-Im"), 2, "Argument expected for -m option", NONE, NONE,
	  NONE, "" },
	{ V("-W"), 2, "Argument expected for -W option", NONE, NONE, NONE,
	  "" },
	{ V("-X"), 2, "Argument expected for -X option", NONE, NONE, NONE,
	  "" },
	{ V("--check-hash-based-pycs"), 2,
	  "Argument expected for --check-hash-based-pycs option", NONE, NONE,
	  NONE, "" },
	{ V("--check-hash-based-pycs", "sometimes"), 2,
	  "--check-hash-based-pycs must be one of 'default', 'always', or "
	  "'never'",
	  NONE, NONE, NONE, "" },
	{ V("-h", "-Z"), 2, "Unknown option: -Z", NONE, NONE, NONE, "" },
};

/* '"a" "b"': both sides are rendered the same way, so a difference in
 * element boundaries ("-W error" vs "-W","error") shows. */
static const char *render(struct sb_arena *a, const char *const *v, size_t n)
{
	const char *s = "";
	size_t k;

	for (k = 0; k < n; k++)
		s = sb_arena_printf(a, "%s%s\"%s\"", s, k ? " " : "", v[k]);
	return s;
}

static size_t count(const char *const *v)
{
	size_t n = 0;

	while (v[n])
		n++;
	return n;
}

static const char *flags(struct sb_arena *a, const struct sb_cli *c)
{
	const char *s = "";

	if (c->help)
		s = sb_arena_printf(a, "%s%s", s, *s ? " help" : "help");
	if (c->version)
		s = sb_arena_printf(a, "%s%s", s, *s ? " version" : "version");
	if (c->interactive)
		s = sb_arena_printf(a, "%s%s", s,
				    *s ? " interactive" : "interactive");
	if (c->explain)
		s = sb_arena_printf(a, "%s%s", s, *s ? " explain" : "explain");
	if (c->settings)
		s = sb_arena_printf(a, "%s%s", s, *s ? " settings" : "settings");
	if (c->learn_result)
		s = sb_arena_printf(a, "%s%slearn-result=%s", s, *s ? " " : "",
				    c->learn_result);
	if (c->config)
		s = sb_arena_printf(a, "%s%sconfig=%s", s, *s ? " " : "",
				    c->config);
	if (c->python)
		s = sb_arena_printf(a, "%s%spython=%s", s, *s ? " " : "",
				    c->python);
	return s;
}

static int parse(struct sb_arena *a, const char *const *args,
		 struct sb_cli *out, const char **err)
{
	size_t n = count(args), k;
	char **argv = sb_arena_alloc(a, (n + 2) * sizeof(*argv));

	/* fresh copies: the parser must not care where argv lives */
	argv[0] = sb_arena_strdup(a, "python-sb");
	for (k = 0; k < n; k++)
		argv[k + 1] = sb_arena_strdup(a, args[k]);
	return sb_cli_parse(a, (int)n + 1, argv, out, err);
}

static void run_case(const struct cli_case *t)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_cli c;
	const char *err = "unset";
	const char *name = render(a, t->args, count(t->args));
	int rc;

	rc = parse(a, t->args, &c, &err);
	is_int(rc, t->rc, "[%s] status", name);
	is_str(err, t->err, "[%s] error", name);
	is_str(render(a, c.interp.v, c.interp.n),
	       render(a, t->interp, count(t->interp)), "[%s] interp", name);
	is_str(render(a, c.rules.v, c.rules.n),
	       render(a, t->rules, count(t->rules)), "[%s] rules", name);
	is_str(render(a, c.command.v, c.command.n),
	       render(a, t->command, count(t->command)), "[%s] command",
	       name);
	is_str(flags(a, &c), t->flags, "[%s] flags", name);
	sb_arena_free(a);
}

/* Unchanged elements are passed through, not copied: the caller may rely
 * on argv outliving the arena, and on nothing being rewritten needlessly. */
static void test_pointers(void)
{
	struct sb_arena *a = sb_arena_new();
	char *argv[] = { "python-sb", "-B", "-Werror", "--python=/p",
			 "-mx",       "y",  NULL };
	struct sb_cli c;
	const char *err;
	int rc;

	rc = sb_cli_parse(a, 6, argv, &c, &err);
	is_int(rc, 0, "pointers: status");
	ok(c.interp.n == 2 && c.interp.v[0] == argv[1] &&
		   c.interp.v[1] == argv[2],
	   "pointers: interp elements are argv's");
	ok(c.python == argv[3] + strlen("--python="),
	   "pointers: --python value points into argv");
	ok(c.command.n == 2 && c.command.v[0] == argv[4] &&
		   c.command.v[1] == argv[5],
	   "pointers: command elements are argv's");
	is_str(argv[1], "-B", "pointers: argv left intact");

	/* argc 1 and argc 0 are the REPL, not a crash */
	rc = sb_cli_parse(a, 1, argv, &c, &err);
	ok(rc == 0 && !c.interp.n && !c.rules.n && !c.command.n && !err,
	   "argc 1: REPL");
	rc = sb_cli_parse(a, 0, argv, &c, &err);
	ok(rc == 0 && !c.command.n, "argc 0: REPL");
	sb_arena_free(a);
}

static void test_texts(void)
{
	const char *p, *nl;
	size_t line = 0, widest = 0;
	static const char *const want[] = {
		"\nRun a Python program in a sandbox.\n",
		"\n  --pysandboxes-config FILE\n"
		"                        Where to find the rule file "
		"(.py-sandboxes).\n",
		"\n  --pysandboxes-explain\n"
		"                        Print the effective policy and what "
		"the run would do,\n"
		"                        then exit.\n",
		"\n  --python=PATH         The Python interpreter to run",
		"\n  --<rule>=<value>      Add a rule, e.g. --expose-ro=DIR,\n"
		"                        --os-sandbox=landlock. It has "
		"priority.\n",
		"\n  -m mod                Run library module as a script.\n",
		"\n  -c cmd                Program passed in as a string.\n",
		"\n  -h, -?, --help ",
		"\n  -V, --version ",
		"\n  -b ",
		"\n  -B ",
		"\n  -d ",
		"\n  -E ",
		"\n  -i ",
		"\n  -I ",
		"\n  -O ",
		"\n  -OO ",
		"\n  -P ",
		"\n  -q ",
		"\n  -R ",
		"\n  -s ",
		"\n  -S ",
		"\n  -u ",
		"\n  -v ",
		"\n  -W arg ",
		"\n  -x ",
		"\n  -X opt ",
		"\n  --check-hash-based-pycs always|default|never\n",
		"\n  --help-env ",
		"\n  --help-xoptions ",
		"\n  --help-all ",
	};
	size_t k;

	is_str(sb_cli_usage,
	       "usage: python-sb [option] ... [-c cmd | -m mod | file | -] "
	       "[arg] ...",
	       "usage line");
	ok(!strncmp(sb_cli_help, sb_cli_usage, strlen(sb_cli_usage)) &&
		   sb_cli_help[strlen(sb_cli_usage)] == '\n',
	   "help starts with the usage line");
	for (k = 0; k < SB_ARRAY_LEN(want); k++)
		ok(strstr(sb_cli_help, want[k]) != NULL, "help has '%.*s'",
		   (int)strcspn(want[k] + 1, "\n"), want[k] + 1);
	ok(strstr(sb_cli_help, "SANBOX") == NULL, "the seed's typo is fixed");

	p = "\n\nArguments:\n"
	    "file   : program read from script file\n"
	    "-      : program read from stdin (default; interactive mode if "
	    "a tty)\n"
	    "arg ...: arguments passed to program in sys.argv[1:]\n";
	ok(strlen(sb_cli_help) >= strlen(p) &&
		   !strcmp(sb_cli_help + strlen(sb_cli_help) - strlen(p), p),
	   "help ends with the Arguments block, verbatim");

	for (p = sb_cli_help; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		line++;
		if ((size_t)(nl - p) > widest)
			widest = (size_t)(nl - p);
		if (nl - p > 80)
			diag("line %zu is %td columns", line, nl - p);
		if (nl > p && nl[-1] == ' ')
			diag("line %zu has trailing white space", line);
	}
	ok(widest <= 80, "help fits 80 columns (widest %zu)", widest);
	ok(strchr(sb_cli_help, '\t') == NULL, "help has no tabs");
	ok(!strstr(sb_cli_help, " \n"), "help has no trailing white space");
	ok(sb_cli_help[strlen(sb_cli_help) - 1] == '\n',
	   "help ends with a newline");
}

static void test_script(void)
{
	static const struct {
		const char *args[5];
		const char *script;
	} t[] = {
		{ { "app.py", "x" }, "app.py" },
		{ { "-B", "dir/app.py" }, "dir/app.py" },
		{ { "--", "-odd.py" }, "-odd.py" },
		{ { "-c", "pass" }, NULL },
		{ { "-m", "pkg" }, NULL },
		{ { "-" }, NULL },
		{ { "--" }, NULL },
		{ { NULL }, NULL },
	};
	size_t k;

	for (k = 0; k < SB_ARRAY_LEN(t); k++) {
		struct sb_arena *a = sb_arena_new();
		const char *err = NULL, *got;
		struct sb_cli c;

		ok(parse(a, t[k].args, &c, &err) == 0, "script %zu parses", k);
		got = sb_cli_script(&c);
		if (t[k].script)
			is_str(got, t[k].script, "script %zu", k);
		else
			ok(got == NULL, "script %zu: none (%s)", k,
			   got ? got : "NULL");
		sb_arena_free(a);
	}
}

int main(void)
{
	size_t k;

	for (k = 0; k < SB_ARRAY_LEN(cases); k++)
		run_case(&cases[k]);
	test_pointers();
	test_texts();
	test_script();
	return tap_done();
}
