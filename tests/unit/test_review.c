/* test_review.c - the rule review's grading table (seed-spec 10.4), one row
 * per rule shape, and the diff reader: which lines of a unified diff are
 * added and removed rules, of which file, learned by which test. */
#include <stdlib.h>

#include "review.h"
#include "tap.h"

static void test_grades(void)
{
	static const struct {
		const char *line;
		enum sb_risk want;
	} cases[] = {
		/* high */
		{ "python-import=*", SB_RISK_HIGH },
		{ "python-import=ctypes", SB_RISK_HIGH },
		{ "python-import=_ctypes", SB_RISK_HIGH }, /* the guard's native */
		{ "python-import=cffi", SB_RISK_HIGH },
		{ "python-import=_cffi_backend", SB_RISK_HIGH },
		{ "python-import=_remote_debugging", SB_RISK_HIGH },
		{ "python-import=_testcapi", SB_RISK_HIGH },
		{ "python-import=json, _ctypes", SB_RISK_HIGH },
		{ "python-import=json, subprocess", SB_RISK_HIGH },
		{ "python-import=importlib", SB_RISK_HIGH },
		{ "python-api=ALLOW:*", SB_RISK_HIGH },
		{ "python-api=ALLOW:process-exec", SB_RISK_HIGH },
		{ "python-api=ALLOW:deserialization", SB_RISK_HIGH },
		{ "net=ALLOW|TCP|*|443|OUT", SB_RISK_HIGH },
		{ "net=ALLOW|TCP|0.0.0.0/0|443|OUT", SB_RISK_HIGH },
		{ "net=ALLOW|UDP|::/0|53|OUT", SB_RISK_HIGH },
		{ "expose-rw=~", SB_RISK_HIGH },
		{ "expose-rw=$HOME", SB_RISK_HIGH },
		{ "expose-rw=${HOME}", SB_RISK_HIGH },
		{ "expose-rw=", SB_RISK_HIGH },
		{ "expose-rw=/", SB_RISK_HIGH },
		{ "env=*", SB_RISK_HIGH },
		{ "env=AWS_*", SB_RISK_HIGH },
		{ "env=LD_PRELOAD=/tmp/x.so", SB_RISK_HIGH },
		{ "env=PYTHONPATH=/tmp", SB_RISK_HIGH },
		{ "env=PYTHONSTARTUP", SB_RISK_HIGH },
		{ "env=PYTHONWARNINGS=ignore::x.Y", SB_RISK_HIGH },
		{ "env=BASH_ENV=/tmp/x", SB_RISK_HIGH },
		{ "expose-rw=${HOME}/.", SB_RISK_HIGH },
		{ "expose-rw=~/.", SB_RISK_HIGH },
		{ "expose-rw=$HOME//", SB_RISK_HIGH },
		{ "expose-rw=~/x/..", SB_RISK_HIGH },
		{ "expose-rw=/./", SB_RISK_HIGH },
		{ "learn=audit.py-sandboxes", SB_RISK_HIGH },
		/* the environment decides the last component (K60) */
		{ "expose-rw=${HOME:-x}", SB_RISK_HIGH },
		{ "expose-rw=${OLDPWD}", SB_RISK_HIGH },
		{ "expose-rw=${NOSUCH:-~}", SB_RISK_HIGH },
		{ "expose-rw=${A}/x/..", SB_RISK_HIGH },
		{ "expose-rw=${A}/..", SB_RISK_HIGH },
		{ "expose-rw=/srv/${A}", SB_RISK_HIGH },
		{ "expose-rw=${A}.", SB_RISK_HIGH },
		/* any other value the environment decides (K62) */
		{ "python-import=${X}", SB_RISK_HIGH },
		{ "python-import=json, ${X:-json}", SB_RISK_HIGH },
		{ "net=${X}", SB_RISK_HIGH },
		{ "os-sandbox=${X:-landlock}", SB_RISK_HIGH },
		{ "py-sandbox=${X}", SB_RISK_HIGH },
		{ "python-api=ALLOW:${X}", SB_RISK_HIGH },
		{ "expose-ro=${OLDPWD}", SB_RISK_MEDIUM },
		{ "expose-rw=${A}/out", SB_RISK_MEDIUM },
		{ "expose-rw=${A:-${B}}/out", SB_RISK_MEDIUM },
		{ "expose-ro=${XDG_CACHE_HOME}/x", SB_RISK_LOW },
		{ "py-sandbox=false", SB_RISK_HIGH },
		{ "remote-result-guard=off", SB_RISK_HIGH },
		{ "os-sandbox=none", SB_RISK_HIGH },
		{ "os-sandbox=NONE", SB_RISK_HIGH }, /* as the parser reads */
		{ "remote-result-mode=objects", SB_RISK_HIGH },
		{ "eval-namespace=caller", SB_RISK_HIGH },
		/* medium */
		{ "include \"skills.py-sandboxes\"", SB_RISK_MEDIUM },
		{ "python-api=ALLOW:subprocess.run", SB_RISK_MEDIUM },
		{ "net=ALLOW|TCP|example.com|443|OUT", SB_RISK_MEDIUM },
		{ "net=ALLOW|TCP|10.0.0.0/8|80|OUT", SB_RISK_MEDIUM },
		{ "expose-rw=./out", SB_RISK_MEDIUM },
		{ "expose-ro=~", SB_RISK_MEDIUM },
		{ "expose-ro=/", SB_RISK_MEDIUM },
		{ "env=OPENAI_API_KEY", SB_RISK_MEDIUM },
		{ "env=GITHUB_TOKEN=${GITHUB_TOKEN}", SB_RISK_MEDIUM },
		{ "env=db_password", SB_RISK_MEDIUM },
		{ "os-sandbox=subprocess", SB_RISK_MEDIUM },
		{ "os-sandbox=landlock", SB_RISK_MEDIUM },
		{ "port=8080", SB_RISK_MEDIUM },
		{ "eval-timeout=5", SB_RISK_MEDIUM },
		/* low */
		{ "net=DENY|TCP|*|*|OUT", SB_RISK_LOW },
		{ "python-api=DENY:*", SB_RISK_LOW },
		{ "expose-ro=./data", SB_RISK_LOW },
		{ "env=LANG", SB_RISK_LOW },
		{ "env=PYTHONUNBUFFERED=1", SB_RISK_LOW },
		{ "expose-ro=~/.cache/x", SB_RISK_LOW },
		{ "unenv=AWS_*", SB_RISK_LOW },
		{ "learn=false", SB_RISK_LOW },
		{ "limit-memory=512M", SB_RISK_LOW },
		{ "limit-time=30s", SB_RISK_LOW },
		{ "python-import=json", SB_RISK_LOW },
		{ "python-import=requests  # the client", SB_RISK_LOW },
		/* what the enforcer refuses */
		{ "bogus=1", SB_RISK_INVALID },
		{ "python-api=ALLOW:nosuch.function", SB_RISK_INVALID },
		{ "python-import=not a module", SB_RISK_INVALID },
		{ "os-sandbox=nonesuch", SB_RISK_INVALID },
		{ "expose-ro=a,b", SB_RISK_INVALID },
		{ "net=ALLOW|TCP", SB_RISK_INVALID },
		{ "limit-memory=lots", SB_RISK_INVALID },
	};
	struct sb_arena *a = sb_arena_new();
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		struct sb_review_item it = { 0 };
		bool got = sb_review_grade(a, cases[i].line, &it);

		ok(got, "'%s' is a rule", cases[i].line);
		is_str(sb_risk_name(it.risk), sb_risk_name(cases[i].want),
		       "'%s' is %s (%s)", cases[i].line,
		       sb_risk_name(cases[i].want), it.why ? it.why : "?");
	}
	{
		struct sb_review_item it = { 0 };

		ok(!sb_review_grade(a, "   # a comment", &it),
		   "a comment is no rule");
		ok(!sb_review_grade(a, "", &it), "a blank line is no rule");
		ok(sb_review_grade(a, "python-import=json # why", &it) &&
			   strcmp(it.rule, "python-import=json") == 0,
		   "a trailing comment is cut as the parser cuts it");
		ok(sb_review_grade(a, "python-import=_ctypes", &it) &&
			   strcmp(it.why, "'_ctypes' is native code with raw "
					  "memory access") == 0,
		   "a native module is named as the guard names it");
		ok(sb_review_grade(a, "net=DENY|TCP|*|*|OUT", &it) &&
			   it.restricts,
		   "a denial restricts: removing it widens");
		ok(sb_review_grade(a, "net=ALLOW|TCP|*|*|OUT", &it) &&
			   !it.restricts,
		   "a grant does not restrict");
		ok(sb_review_grade(a, "limit-cpu=10s", &it) && it.restricts,
		   "a limit restricts: removing it widens");
	}
	sb_arena_free(a);
}

static const char git_diff[] =
	"diff --git a/skills/fetch/.py-sandboxes b/skills/fetch/.py-sandboxes\n"
	"index 1111111..2222222 100644\n"
	"--- a/skills/fetch/.py-sandboxes\n"
	"+++ b/skills/fetch/.py-sandboxes\n"
	"@@ -1,4 +1,7 @@\n"
	" python-import=json\n"
	"-expose-ro=./data\n"
	"--- not a header: a removed comment line\n"
	"+# Add rules (2026/11/29 at 14:22)\n"
	"+# Learned by tests/test_fetch.py::test_get\n"
	"+net=ALLOW|TCP|*|443|OUT\n"
	"+python-import=requests\n"
	" \n"
	"\\ No newline at end of file\n"
	"diff --git a/README.md b/README.md\n"
	"--- a/README.md\n"
	"+++ b/README.md\n"
	"@@ -1 +1 @@\n"
	"-python-import=ctypes\n"
	"+python-import=ctypes\n"
	"diff --git a/new.py-sandboxes b/new.py-sandboxes\n"
	"new file mode 100644\n"
	"--- /dev/null\n"
	"+++ b/new.py-sandboxes\n"
	"@@ -0,0 +1,2 @@\n"
	"+expose-rw=~\n"
	"+net=DENY|TCP|*|*|OUT\n"
	"diff --git a/old.py-sandboxes b/old.py-sandboxes\n"
	"deleted file mode 100644\n"
	"--- a/old.py-sandboxes\n"
	"+++ /dev/null\n"
	"@@ -1 +0,0 @@\n"
	"-learn=false\n";

static const struct sb_review_item *find(const struct sb_review *r,
					 const char *rule, bool removed)
{
	size_t i;

	for (i = 0; i < r->items.n; i++)
		if (strcmp(r->items.v[i].rule, rule) == 0 &&
		    r->items.v[i].removed == removed)
			return &r->items.v[i];
	return NULL;
}

static void test_rule_file_names(void)
{
	ok(sb_review_is_rule_file("a/.py-sandboxes"), ".py-sandboxes");
	ok(sb_review_is_rule_file("skills.py-sandboxes"), "x.py-sandboxes");
	/* the template's includes: a change there is a change of rules */
	ok(sb_review_is_rule_file("etc/py-sandboxes/global-py-sandboxes."
				  "profile"),
	   "the global profile");
	ok(sb_review_is_rule_file(".config/py-sandboxes/user-py-sandboxes."
				  "profile"),
	   "the user profile");
	ok(!sb_review_is_rule_file("docs/py-sandboxes.5"), "the man page");
	ok(!sb_review_is_rule_file("python/pysandboxes/x.py"), "the package");
}

static void test_diff(void)
{
	struct sb_review r = { sb_arena_new(), { 0 } };
	const struct sb_review_item *it;
	struct sb_buf out = { 0 };

	is_int(sb_review_add_diff(&r, git_diff), 3, "three rule files");
	is_int(r.items.n, 7, "seven rules changed (README.md is no rule file)");
	it = find(&r, "net=ALLOW|TCP|*|443|OUT", false);
	ok(it && it->risk == SB_RISK_HIGH, "the wildcard net grant is high");
	is_str(it ? it->file : NULL, "skills/fetch/.py-sandboxes",
	       "git's b/ prefix is dropped");
	is_str(it ? it->learned_by : NULL, "tests/test_fetch.py::test_get",
	       "'# Learned by' attributes the rule");
	it = find(&r, "expose-ro=./data", true);
	ok(it && it->risk == SB_RISK_LOW, "a removed rule is listed");
	it = find(&r, "expose-rw=~", false);
	ok(it && it->risk == SB_RISK_HIGH && it->learned_by == NULL,
	   "a new file's rule, learned by no test");
	it = find(&r, "learn=false", true);
	ok(it && it->restricts && strcmp(it->file, "old.py-sandboxes") == 0,
	   "a deleted file's lock is a removal that widens");
	it = find(&r, "-- not a header: a removed comment line", true);
	ok(it && it->risk == SB_RISK_INVALID,
	   "a '--- ' line inside a hunk is a removed line, not a header");
	is_int(sb_review_worst(&r), SB_RISK_HIGH, "the worst added is high");

	sb_review_format(&r, false, &out);
	ok(out.s && sb_str_starts(out.s, "| Risk | File | Rule | Why | "
					 "Learned by |\n|---|"),
	   "Markdown table header");
	ok(out.s && strstr(out.s, "`net=ALLOW\\|TCP\\|*\\|443\\|OUT`"),
	   "'|' is escaped in a table cell");
	ok(out.s && strstr(out.s, "| high |") < strstr(out.s, "| low |"),
	   "riskiest first");
	ok(out.s && strstr(out.s, "Removed, which narrows the profile:") &&
		   strstr(out.s, "Removed, which widens the profile"),
	   "removals, narrowing and widening");
	sb_buf_free(&out);
	sb_review_format(&r, true, &out);
	ok(out.s && sb_str_starts(out.s, "{\"added\": [") &&
		   strstr(out.s, "\"removed\": [") &&
		   strstr(out.s, "\"learned_by\": \"tests/test_fetch.py"
				 "::test_get\""),
	   "JSON");
	sb_buf_free(&out);
	sb_arena_free(r.arena);
}

static void test_files(void)
{
	struct sb_review r = { sb_arena_new(), { 0 } };

	sb_review_add_files(&r, "old",
			    "python-import=json\nenv=LANG\nexpose-ro=./data\n",
			    "new",
			    "env=LANG\n# Learned by t::x\npython-import=json, "
			    "ctypes\npython-import=json\nenv=LANG\n");
	is_int(r.items.n, 2, "one added, one removed; order and repeats "
			     "ignored");
	ok(find(&r, "python-import=json, ctypes", false) &&
		   find(&r, "python-import=json, ctypes", false)->risk ==
			   SB_RISK_HIGH,
	   "the added line grades high");
	is_str(find(&r, "python-import=json, ctypes", false)
		       ? find(&r, "python-import=json, ctypes", false)
				 ->learned_by
		       : NULL,
	       "t::x", "attribution in a whole file");
	ok(find(&r, "expose-ro=./data", true) != NULL,
	   "the line no longer there is removed");
	sb_arena_free(r.arena);
}

int main(void)
{
	test_grades();
	test_rule_file_names();
	test_diff();
	test_files();
	return tap_done();
}
