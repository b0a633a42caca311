/* test_learn.c - learning mode's rule writer: record parsing (escapes,
 * dedupe, bad and partial lines), the template, each family's generated
 * lines compared exactly, the merge at the markers (idempotence, a missing
 * marker), and files that parse back without error. Pure code but for the
 * temporary rule files and trees the round trips need.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_registry.h"
#include "learn.h"

/* what learning writes above the directories no rule may grant (home,
 * above it, /) where entries were made or removed that got no rule */
#define TOO_WIDE_HEADER                                                       \
	"# REVIEW: the program made, removed or renamed entries right in "    \
	"these\n# directories (or these entries), which no rule grants "    \
	"without all that\n# lies below (the home directory, one above "    \
	"it, or /), and no entry made there\n# got a rule of its own (its "  \
	"name was not learned, or no rule can\n# spell it): the next run "   \
	"is refused there. Name each entry with\n# expose-new=, or run the " \
	"program from a directory of its own (it is\n# then expose-rw=.).\n"
#include "policy_internal.h"
#include "tap.h"

static const char *const no_env[] = { NULL };
static const char DATE[] = "2026/11/29 at 14:22";

/* Every family's markers, nothing else: the merged text is then exactly
 * the learned blocks. */
static const char MARKERS[] = "# <learning_guard_envs>\n"
			      "# </learning_guard_envs>\n"
			      "# <learning_guard_files>\n"
			      "# </learning_guard_files>\n"
			      "# <learning_guard_socket>\n"
			      "# </learning_guard_socket>\n"
			      "# <learning_guard_import>\n"
			      "# </learning_guard_import>\n"
			      "# <learning_guard_api>\n"
			      "# </learning_guard_api>\n"
			      "# <learning_guard_eval>\n"
			      "# </learning_guard_eval>\n";

static char scratch[256];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

static void ctx_init(struct sb_learn_ctx *c, const struct sb_policy *p,
		     const char *const *envp)
{
	memset(c, 0, sizeof(*c));
	c->policy = p;
	c->envp = envp;
	c->cwd = "/work/proj";
	c->home = "/home/u";
	c->date = DATE;
}

/* Parse records, merge them into 'existing'; the text comes back in the
 * arena. */
static const char *learn(struct sb_arena *a, const char *records,
			 const char *existing, const struct sb_learn_ctx *c,
			 bool *added)
{
	struct sb_learned l = { 0 };
	struct sb_buf out = { 0 };
	const char *r;
	bool dummy;

	sb_learn_parse(a, records, strlen(records), &l);
	sb_learn_merge(a, existing, &l, c, &out, added ? added : &dummy);
	r = sb_arena_strdup(a, out.s ? out.s : "");
	sb_buf_free(&out);
	return r;
}

/* The lines between a family's markers, without the "# Add rules" line. */
static const char *block(struct sb_arena *a, const char *text,
			 const char *fam)
{
	char *open = sb_arena_printf(a, "# <learning_guard_%s>\n", fam);
	char *close = sb_arena_printf(a, "# </learning_guard_%s>\n", fam);
	const char *s = strstr(text, open), *e;

	if (!s || !(e = strstr(s, close)))
		return "(no block)";
	s += strlen(open);
	if (sb_str_starts(s, "# Add rules ("))
		s = strchr(s, '\n') + 1;
	return sb_arena_strndup(a, s, (size_t)(e - s));
}

static struct sb_policy *parse_text(const char *text,
				    const char *const *envp, const char *cwd,
				    const char *home)
{
	struct sb_parse_opts o = { 0 };
	struct sb_policy *p = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/rules", scratch);
	write_file(path, text);
	o.config_path = path;
	o.cwd = cwd ? cwd : scratch;
	o.home = home ? home : scratch;
	o.envp = envp;
	o.flags = SB_PARSE_NO_DNS;
	if (sb_policy_parse(&o, &p) != 0 || !p) {
		fprintf(stderr, "parse failed\n");
		exit(2);
	}
	return p;
}

static void show_errors(const struct sb_policy *p)
{
	size_t i;

	for (i = 0; i < p->errors.n; i++)
		diag("%s", p->errors.v[i].text);
}

/* ---- parsing ---- */

static void test_parse(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_learned l = { 0 };
	const char data[] =
		"env\tHOME\n"
		"env\tHOME\n"
		"file\tr\tf\t/etc/resolv.conf\n"
		"file\tw\tf\t/etc/resolv.conf\n"
		"file\tr\td\t/tmp/a\\tb\\\\c\\nd\n"
		"net\ttcp\tout\t93.184.216.34\t443\texample.com\n"
		"net\ttcp\tout\t93.184.216.34\t443\texample.com\n"
		"net\tudp\tout\t2001:db8::1\t53\t-\n"
		"import\tjson\n"
		"import\tjson\n"
		"api\tos.system\n"
		"api\tos.system\n"
		/* malformed: each is skipped */
		"bogus\tx\n"
		"env\n"
		"env\t\n"
		"env\tA\tB\n"
		"env\tBAD\\q\n"
		"file\tx\tf\t/a\n"
		"file\tr\tq\t/a\n"
		"file\tr\tf\trelative\n"
		"file\tr\tf\n"
		"net\ttcp\tout\tnot-an-address\t80\t-\n"
		"net\ttcp\tout\t1.2.3.4\t70000\t-\n"
		"net\ttcp\tout\t1.2.3.4\t8x\t-\n"
		"net\ticmp\tout\t1.2.3.4\t80\t-\n"
		"net\ttcp\tup\t1.2.3.4\t80\t-\n"
		"net\ttcp\tout\t1.2.3.4\t80\t\n"
		"\n"
		"import\tlast";
	size_t used = sb_learn_parse(a, data, sizeof(data) - 1, &l);

	is_int(used, sizeof(data) - 1 - strlen("import\tlast"),
	       "parse: a trailing partial line is not consumed");
	is_int(l.env.n, 1, "parse: env deduplicated, bad env lines skipped");
	is_str(l.env.n ? l.env.v[0] : NULL, "HOME", "parse: env name");
	is_int(l.files.n, 2, "parse: two files, malformed ones skipped");
	is_str(l.files.v[0].path, "/etc/resolv.conf", "parse: file path");
	ok(l.files.v[0].write && !l.files.v[0].is_dir,
	   "parse: same path OR-s the write intent");
	is_str(l.files.v[1].path, "/tmp/a\tb\\c\nd",
	       "parse: \\t \\\\ \\n unescaped");
	ok(l.files.v[1].is_dir && !l.files.v[1].write, "parse: d and r");
	is_int(l.nets.n, 2, "parse: net tuples deduplicated, bad ones skipped");
	ok(l.nets.v[0].kind == SB_NET_TCP && l.nets.v[0].dir == SB_NET_OUT &&
		   l.nets.v[0].port == 443 &&
		   l.nets.v[0].addr.family == AF_INET &&
		   l.nets.v[0].addr.bytes[0] == 93,
	   "parse: net fields");
	is_str(l.nets.v[0].host, "example.com", "parse: net host");
	ok(l.nets.v[1].kind == SB_NET_UDP && !l.nets.v[1].host &&
		   l.nets.v[1].addr.family == AF_INET6,
	   "parse: '-' means no host name");
	is_int(l.imports.n, 1, "parse: import deduplicated");
	is_int(l.apis.n, 1, "parse: api deduplicated");

	/* the rest arrives later */
	used = sb_learn_parse(a, "import\tlast\nimport\tjson\n", 24, &l);
	is_int(used, 24, "parse: the continued line is consumed");
	is_int(l.imports.n, 2, "parse: the completed line counts once");
	is_str(l.imports.v[1], "last", "parse: completed line's name");
	used = sb_learn_parse(a, "", 0, &l);
	is_int(used, 0, "parse: nothing to parse");
	sb_arena_free(a);
}

/* ---- the template ---- */

static void test_template(void)
{
	static const char *const fams[] = { "envs",   "files", "socket",
					    "import", "api",   "eval" };
	static const char *const sub_env[] = { "OS_SANDBOX=subprocess", NULL };
	struct sb_arena *a = sb_arena_new();
	struct sb_policy *p;
	const char *s;
	size_t i, lines = 0;
	bool order = true;
	const char *prev = sb_learn_template;

	for (i = 0; i < SB_ARRAY_LEN(fams); i++) {
		char *o = sb_arena_printf(a, "\n# <learning_guard_%s>\n# "
					     "</learning_guard_%s>\n",
					  fams[i], fams[i]);

		s = strstr(sb_learn_template, o);
		ok(s != NULL, "template: markers of %s", fams[i]);
		if (!s || s < prev)
			order = false;
		else
			prev = s;
	}
	ok(order, "template: sections in the order of 2.10");
	ok(strstr(sb_learn_template, "\n# <learning_remote_result>\n"
				     "# </learning_remote_result>\n") != NULL,
	   "template: remote result markers");
	ok(strstr(sb_learn_template,
		  "\n#include \"./.local.py-sandboxes\"") != NULL &&
		   strstr(sb_learn_template,
			  "\ninclude \"~/.config/py-sandboxes/"
			  "user-py-sandboxes.profile\"") != NULL &&
		   strstr(sb_learn_template,
			  "\ninclude \"/etc/py-sandboxes/"
			  "global-py-sandboxes.profile\"") != NULL,
	   "template: the three include lines, the first commented");
	ok(strstr(sb_learn_template, "\npy-sandbox=true\n") &&
		   strstr(sb_learn_template,
			  "\nos-sandbox=${OS_SANDBOX:-auto}\n") &&
		   strstr(sb_learn_template, "\nremote-result-guard=true\n") &&
		   strstr(sb_learn_template,
			  "\n# learn=false        # uncomment once reviewed: "
			  "locks the rules\n"),
	   "template: activation lines and the commented lock");
	for (s = sb_learn_template; *s; s++)
		lines += *s == '\n';
	ok(lines <= 110, "template: %zu lines, at most 110", lines);

	p = parse_text(sb_learn_template, no_env, NULL, NULL);
	show_errors(p);
	is_int(p->errors.n, 0, "template: parses without error");
	is_int(p->provider, SB_PROVIDER_AUTO, "template: provider auto");
	ok(p->py_sandbox && p->result_guard && !p->locked,
	   "template: py-sandbox and result guard on, not locked");
	sb_policy_free(p);
	p = parse_text(sb_learn_template, sub_env, NULL, NULL);
	is_int(p->provider, SB_PROVIDER_SUBPROCESS,
	       "template: OS_SANDBOX=subprocess downgrades");
	sb_policy_free(p);
	sb_arena_free(a);
}

/* ---- environment ---- */

static void test_env(void)
{
	static const char *const envp[] = { "TERM=xterm", "A_KEY=",
					    "B_KEY=1", "PATH=/bin", NULL };
	struct sb_arena *a = sb_arena_new();
	struct sb_learn_ctx c;
	struct sb_policy *p = parse_text("env=TERM=${TERM}\n"
					 "env=*_KEY=${*_KEY}\n"
					 "unenv=SECRET*\n",
					 envp, NULL, NULL);
	const char *out;

	show_errors(p);
	ctx_init(&c, p, envp);
	out = learn(a,
		    "env\tPATH\nenv\tTERM\nenv\tHOME\nenv\tA_KEY\n"
		    "env\tB_KEY\nenv\tSECRET_X\nenv\tBAD}NAME\nenv\tAB\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "envs"),
	       "env=AB=${AB}\nenv=HOME=${HOME}\nenv=PATH=${PATH}\n\n",
	       "env: sorted; produced, glob-matched, unenv'd and unsafe "
	       "names skipped");
	sb_policy_free(p);
	sb_arena_free(a);
}

/* ---- files ---- */

static const char *files_block(struct sb_arena *a, const char *records,
			       const char *const *envp,
			       const struct sb_policy *p)
{
	static const char *const trees[] = { "/usr/lib/python3.11",
					     "/home/u/.pyenv/versions/3.11.7" };
	struct sb_learn_ctx c;

	ctx_init(&c, p, envp);
	c.python_trees = trees;
	c.n_python_trees = SB_ARRAY_LEN(trees);
	return block(a, learn(a, records, MARKERS, &c, NULL), "files");
}

/* the learning run removed what has "journal" or "gone" in its name */
static bool only_kept(const char *path)
{
	return !strstr(path, "journal") && !strstr(path, "gone");
}

static void test_files(void)
{
	static const char *const envp[] = {
		"HF_HOME=/home/u/.cache/huggingface", "PWD=/work/proj", NULL
	};
	static const char *const tmp_env[] = { "TMPDIR=/var/tmp/u", NULL };
	struct sb_arena *a = sb_arena_new();
	struct sb_policy pol = { 0 };
	struct sb_expose *e;

	is_str(files_block(a, "file\tr\tf\t/etc/resolv.conf\n", envp, NULL),
	       "expose-ro=/etc/resolv.conf\n\n",
	       "files: a system file is a file rule, not /etc");
	is_str(files_block(a,
			   "file\tr\tf\t/work/proj/main.py\n"
			   "file\tr\tf\t/work/proj/data/x.csv\n",
			   envp, NULL),
	       "expose-ro=.\n\n",
	       "files: a cwd file gives '.', which covers ./data");
	is_str(files_block(a,
			   "file\tr\tf\t/work/proj/data/x.csv\n"
			   "file\tr\tf\t/work/proj/data/y.csv\n"
			   "file\tw\tf\t/work/proj/out/r.txt\n"
			   "file\tr\tf\t/work/proj/out/old.txt\n"
			   "file\tr\td\t/work/proj/docs\n",
			   envp, NULL),
	       "expose-ro=./data\nexpose-ro=./docs\nexpose-rw=./out\n\n",
	       "files: cwd directories, a write makes expose-rw");
	is_str(files_block(a,
			   "file\tr\tf\t/work/proj/a.txt\n"
			   "file\tw\tf\t/work/proj/out/r.txt\n"
			   "file\tw\tf\t/work/proj/b.txt\n"
			   "file\tr\tf\t/work/proj/out/sub/c\n",
			   envp, NULL),
	       "expose-rw=.\n\n",
	       "files: a rw directory covers the ro and rw ones below");
	is_str(files_block(a,
			   "file\tr\tf\t/work/proj/a.txt\n"
			   "file\tw\tf\t/work/proj/out/r.txt\n",
			   envp, NULL),
	       "expose-ro=.\nexpose-rw=./out\n\n",
	       "files: a rw directory inside a ro one stays");
	is_str(files_block(a,
			   "file\tw\tf\t/tmp/job/out.txt\n"
			   "file\tr\tf\t/tmp/x\n",
			   envp, NULL),
	       "expose-rw=${TMPDIR:-/tmp}/job\nexpose-ro=${TMPDIR:-/tmp}/x\n\n",
	       "files: temp is written ${TMPDIR:-/tmp}/...; a file right in it "
	       "is a file rule, not the whole directory");
	is_str(files_block(a,
			   "file\tw\tf\t/var/tmp/u/j/o\n"
			   "file\tr\tf\t/tmp/x/y\n",
			   tmp_env, NULL),
	       "expose-rw=${TMPDIR:-/tmp}/j\nexpose-ro=/tmp/x\n\n",
	       "files: with TMPDIR set, /tmp is spelled as itself");
	is_str(files_block(a,
			   "file\tr\tf\t/home/u/.netrc\n"
			   "file\tr\tf\t/home/u/.ssh/config\n"
			   "file\tr\td\t/home/u\n"
			   "file\tr\td\t/home/u/.ssh\n"
			   "file\tr\td\t/etc\n"
			   "file\tr\tf\t/home/u/.cache/pip/http/a/b\n"
			   "file\tr\tf\t/home/u/.cache/stray\n",
			   envp, NULL),
	       "expose-list=/etc\n"
	       "expose-list=~\n"
	       "expose-ro=~/.cache/pip/http/a\n"
	       "expose-ro=~/.cache/stray\n"
	       "expose-ro=~/.netrc\n"
	       "expose-list=~/.ssh\n"
	       "expose-ro=~/.ssh/config\n\n",
	       "files: home files are file rules; ~/.cache/<x> is a tree; "
	       "a directory read outside trees is expose-list=, home too");
	is_str(files_block(a,
			   "file\tw\td\t/home/u/db\n"
			   "file\tw\tf\t/home/u/db/x.db\n"
			   "file\tw\td\t/home/u\n"
			   "file\tw\td\t/\n"
			   "file\tr\td\t/srv/in\n"
			   "file\tw\td\t/srv/in\n",
			   envp, NULL),
	       TOO_WIDE_HEADER "# /\n"
	       "expose-rw=/srv/in\nexpose-rw=~/db\n\n",
	       "files: entries made or removed outside trees: expose-rw= of "
	       "the directory, never of home or /; it covers its files; "
	       "home is not named, its entry ~/db got a rule");
	is_str(files_block(a,
			   "file\tr\tf\t/home/u/.cache/huggingface/hub/m/c\n"
			   "file\tw\tf\t/work/proj/o\n",
			   envp, NULL),
	       "expose-rw=.\nexpose-ro=${HF_HOME}/hub/m\n\n",
	       "files: ${VAR}/... for the cache variables, longest wins; "
	       "./ sorts first");
	is_str(files_block(a,
			   "file\tr\tf\t/proc/self/status\n"
			   "file\tr\tf\t/proc\n"
			   "file\tr\tf\t/usr/lib/python3.11/os.py\n"
			   "file\tr\tf\t/home/u/.pyenv/versions/3.11.7/x.py\n",
			   envp, NULL),
	       "", "files: /proc and the interpreter's trees give nothing");
	is_str(files_block(a,
			   "file\tr\tf\t/etc/a#b\n"
			   "file\tr\tf\t/etc/a,b\n"
			   "file\tr\tf\t/etc/${X}\n"
			   "file\tw\tf\t/home/u/t \n"
			   "file\tw\td\t/srv/x#y\n"
			   "file\tw\tf\t/srv/x#y/z\n",
			   envp, NULL),
	       "# REVIEW: the program used these paths, which no rule can "
	       "spell (a '#', ',',\n# quote or '${', or a trailing space): "
	       "no rule was written for them.\n# Rename them, or grant a "
	       "directory that holds them.\n# expose-ro=/etc/a#b\n"
	       "# expose-ro=/etc/a,b\n# expose-ro=/etc/${X}\n"
	       "# expose-rw=/home/u/t \n# expose-rw=/srv/x#y\n"
	       "# expose-rw=/srv/x#y/z\n\n",
	       "files: a path no rule can spell is shown for review, and "
	       "covers nothing below it");
	is_str(files_block(a, "file\tw\tf\t/work/proj/a#b\n", envp, NULL),
	       "expose-rw=.\n\n",
	       "files: a name no rule can spell inside the program's tree "
	       "gives the tree");
	is_str(files_block(a, "file\tr\tf\t/etc/a\\nb\n", envp, NULL),
	       "# REVIEW: the program used these names, which hold control "
	       "characters,\n# bidirectional-text marks or bytes that are "
	       "not UTF-8. They are shown\n# escaped (\\xNN), as comments: "
	       "no rule was written for them.\n# expose-ro=/etc/a\\x0ab\n\n",
	       "files: a control character is shown escaped, for review, "
	       "and gives no rule (issue 21)");

	/* a working directory of / or one holding the home directory says
	 * nothing about what the program owns */
	{
		struct sb_learn_ctx c;
		const char *out;

		ctx_init(&c, NULL, envp);
		c.cwd = "/";
		out = learn(a, "file\tr\tf\t/etc/hosts\n", MARKERS, &c, NULL);
		is_str(block(a, out, "files"), "expose-ro=/etc/hosts\n\n",
		       "files: cwd / gives absolute file rules");
		c.cwd = "/home";
		out = learn(a,
			    "file\tr\tf\t/home/u/.ssh/id_rsa\n"
			    "file\tr\tf\t/home/v/notes\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"),
		       "expose-ro=./v/notes\nexpose-ro=~/.ssh/id_rsa\n\n",
		       "files: a cwd above home is not a program tree");
	}

	/* a file made and removed again: a rule for it could not be read
	 * back, making it needs its directory */
	{
		struct sb_learn_ctx c;
		const char *out;

		ctx_init(&c, NULL, envp);
		c.cwd = "/home/u";
		c.exists = only_kept;
		out = learn(a,
			    "file\tw\tf\t/home/u/db/x.db\n"
			    "file\tw\tf\t/home/u/db/x.db-journal\n"
			    "file\tw\tf\t/home/u/gone\n"
			    "file\tr\tf\t/home/u/d/a.txt\n"
			    "file\tr\td\t/home/u/d\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"),
		       "expose-list=./d\nexpose-ro=./d/a.txt\n"
		       "expose-rw=./db\nexpose-new=./gone\n\n",
		       "files: a vanished file's directory is writable, never "
		       "home (the entry is expose-new=); a listed directory is "
		       "expose-list=");
		/* right in the temporary directory (weaknesses 85): a kept
		 * file is its own rule; one made and removed needs the
		 * directory; a subdirectory's files, the subdirectory */
		c.cwd = "/work/proj";
		out = learn(a,
			    "file\tw\tf\t/tmp/out.txt\n"
			    "file\tr\tf\t/tmp/in.txt\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"),
		       "expose-ro=${TMPDIR:-/tmp}/in.txt\n"
		       "expose-rw=${TMPDIR:-/tmp}/out.txt\n\n",
		       "files: files kept right in /tmp are file rules");
		out = learn(a,
			    "file\tw\tf\t/tmp/out.txt\n"
			    "file\tw\tf\t/tmp/gone.tmp\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"),
		       "expose-made=${TMPDIR:-/tmp}/*\n"
		       "expose-rw=${TMPDIR:-/tmp}/out.txt\n\n",
		       "files: a file made and removed in /tmp is expose-made= "
		       "of it, never /tmp");
		out = learn(a,
			    "file\tw\tf\t/tmp/job/gone\n"
			    "file\tw\tf\t/tmp/job/kept\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"), "expose-rw=${TMPDIR:-/tmp}/job\n\n",
		       "files: a subdirectory of /tmp is a tree");
		c.cwd = "/home/u";
		out = learn(a,
			    "file\tl\td\t/home/u\n"
			    "file\tl\td\t/home/u/lib\n"
			    "file\tl\td\t/srv/empty\n"
			    "file\tr\tf\t/home/u/lib/helper.py\n"
			    "file\tl\td\t/\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"),
		       "expose-list=.\nexpose-list=./lib\n"
		       "expose-ro=./lib/helper.py\n\n",
		       "files: importlib's look into a directory is a rule only "
		       "when something below it was used; never /");
		out = learn(a,
			    "file\tw\td\t/home/u\n"
			    "file\tl\td\t/home/u\n"
			    "file\tr\tf\t/home/u/test_x.py\n",
			    MARKERS, &c, NULL);
		is_str(block(a, out, "files"),
		       "expose-list=.\nexpose-ro=./test_x.py\n\n",
		       "files: home written (never granted) and looked into: "
		       "its listing alone");
	}

	/* what the policy already allows is not learned again */
	pol.arena = sb_arena_new();
	e = SB_VEC_PUSH(pol.arena, pol.exposes);
	e->path = "/srv/data";
	e->rule = "expose-ro=/srv/data";
	e->mode = SB_EXPOSE_RO;
	e->is_dir = true;
	e = SB_VEC_PUSH(pol.arena, pol.exposes);
	e->path = "/work/proj/ro";
	e->rule = "expose-ro=./ro";
	e->mode = SB_EXPOSE_RO;
	e->is_dir = true;
	is_str(files_block(a,
			   "file\tr\tf\t/srv/data/a\n"
			   "file\tw\tf\t/srv/data/b\n"
			   "file\tw\tf\t/work/proj/ro/x\n",
			   envp, &pol),
	       "expose-rw=/srv/data/b\n\n",
	       "files: allowed reads skipped; a write under expose-ro is a "
	       "file rule; never the same path in two modes");
	sb_arena_free(pol.arena);
	sb_arena_free(a);
}

/* ---- network ---- */

static void test_net(void)
{
	static const char *const envp[] = { "API_HOST=api.internal",
					    "DB_PORT=5432", "COUNT=443",
					    "PORTAL=80", NULL };
	struct sb_arena *a = sb_arena_new();
	struct sb_policy *p = parse_text("net=ALLOW|TCP|127.0.0.1|9000|OUT\n"
					 "net=DENY|*|10.9.0.0/16|*|OUT\n",
					 envp, NULL, NULL);
	struct sb_learn_ctx c;
	const char *out;

	show_errors(p);
	ctx_init(&c, p, envp);
	out = learn(a,
		    "net\ttcp\tout\t93.184.216.34\t443\texample.com\n"
		    "net\ttcp\tout\t93.184.216.34\t80\texample.com\n"
		    "net\ttcp\tout\t10.0.0.5\t5432\tapi.internal\n"
		    "net\tudp\tout\t1.1.1.1\t53\t-\n"
		    "net\ttcp\tin\t0.0.0.0\t8000\t-\n"
		    "net\ttcp\tin\t::\t8000\t-\n"
		    "net\ttcp\tin\t127.0.0.1\t8001\t-\n"
		    "net\ttcp\tout\t2001:db8::1\t443\t-\n"
		    "net\ttcp\tout\t127.0.0.1\t9000\t-\n"
		    "net\ttcp\tout\t10.9.1.1\t22\t-\n"
		    "net\ttcp\tout\t192.0.2.1\t25\tbad|host\n"
		    "net\ttcp\tin\t127.0.0.1\t0\t-\n"
		    "net\ttcp\tout\t127.0.0.1\tself\t-\n"
		    "net\tudp\tout\t127.0.0.1\tself\t-\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "socket"),
	       "net=ALLOW|TCP|${API_HOST}|${DB_PORT}|OUT\n"
	       "net=ALLOW|TCP|*|8000|IN\n"
	       "net=ALLOW|TCP|10.9.1.1/32|22|OUT\n"
	       "net=ALLOW|TCP|127.0.0.1/32|0,8001|IN\n"
	       "net=ALLOW|TCP|127.0.0.1/32|self|OUT\n"
	       "net=ALLOW|TCP|192.0.2.1/32|25|OUT\n"
	       "net=ALLOW|TCP|2001:db8::1/128|443|OUT\n"
	       "net=ALLOW|TCP|example.com|${PORTAL},443|OUT\n"
	       "net=ALLOW|UDP|1.1.1.1/32|53|OUT\n"
	       "net=ALLOW|UDP|127.0.0.1/32|self|OUT\n\n",
	       "net: ports merged and sorted, ${VAR} for values, * for the "
	       "wildcard, allowed ones skipped; a port of the run's own "
	       "listener or bound UDP socket is 'self'");
	out = learn(a,
		    "net\ttcp\tout\t0.0.0.0\t-\tlookup.example\n"
		    "net\ttcp\tout\t0.0.0.0\t-\texample.com\n"
		    "net\ttcp\tout\t93.184.216.34\t443\texample.com\n"
		    "net\ttcp\tout\t0.0.0.0\t-\t-\n"
		    "net\ttcp\tout\t0.0.0.0\t-\tbad|host\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "socket"),
	       "net=ALLOW|TCP|example.com|443|OUT\n"
	       "net=ALLOW|TCP|lookup.example||OUT\n\n",
	       "net: a name looked up only is learned with no port; a "
	       "connection to it covers the lookup");
	sb_policy_free(p);
	sb_arena_free(a);
}

/* ---- imports ---- */

static void test_imports(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_policy *p = parse_text("python-import=re\n", no_env, NULL,
					 NULL);
	struct sb_learn_ctx c;
	const char *out;

	ctx_init(&c, p, no_env);
	out = learn(a,
		    "import\tos\nimport\tjson\nimport\tctypes\n"
		    "import\tsubprocess\nimport\tnumpy\nimport\trequests\n"
		    "import\t_socket\nimport\tasyncore\nimport\tpysandboxes\n"
		    "import\tre\nimport\tos.path\nimport\tcProfile\n"
		    "import\t_ctypes\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "import"),
	       "# \u26a0 Dangerous!\n"
	       "python-import=_ctypes, cProfile, ctypes, subprocess\n"
	       "\n"
	       "# Standard Python\n"
	       "python-import=_socket, json, os\n"
	       "\n"
	       "# \u26a0 Deprecated Python module\n"
	       "python-import=asyncore\n"
	       "\n"
	       "# External modules (Are you sure about the origin?)\n"
	       "python-import=numpy\n"
	       "python-import=requests\n"
	       "\n",
	       "imports: four groups in order, allowed and own names skipped");

	out = learn(a,
		    "import\tabc\nimport\targparse\nimport\tasyncio\n"
		    "import\tbase64\nimport\tcodecs\nimport\tcollections\n"
		    "import\tdataclasses\nimport\tdatetime\nimport\tjson\n"
		    "import\tlogging\nimport\tpathlib\nimport\tsocket\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "import"),
	       "# Standard Python\n"
	       "python-import=abc, argparse, asyncio, base64, codecs, "
	       "collections, dataclasses\n"
	       "python-import=datetime, json, logging, pathlib, socket\n"
	       "\n",
	       "imports: names packed to at most 70 characters");

	/* a name an existing packed line holds is not repeated */
	out = learn(a, "import\tjson\nimport\tzlib\n",
		    "# <learning_guard_import>\n"
		    "python-import=csv, json  # data\n"
		    "# </learning_guard_import>\n",
		    &c, NULL);
	is_str(out,
	       "# <learning_guard_import>\n"
	       "python-import=csv, json  # data\n"
	       "# Add rules (2026/11/29 at 14:22)\n"
	       "# Standard Python\n"
	       "python-import=zlib\n"
	       "\n"
	       "# </learning_guard_import>\n",
	       "imports: names already in the file are not learned again");
	sb_policy_free(p);
	sb_arena_free(a);
}

/* ---- sensitive calls ---- */

/* Records for every applicable function of a category but 'skip'. */
static char *api_records(struct sb_arena *a, enum sb_api_category cat,
			 const char *skip, const char *prefix)
{
	struct sb_buf b = { 0 };
	char *r;
	size_t i;

	for (i = 0; i < sb_api_registry_len; i++) {
		const struct sb_api_entry *e = &sb_api_registry[i];

		if (e->category != cat || (e->tags & SB_API_WINDOWS) ||
		    (skip && strcmp(e->qualname, skip) == 0))
			continue;
		sb_buf_printf(&b, "%s%s\n", prefix, e->qualname);
	}
	r = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return r;
}

static void test_api(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_learn_ctx c;
	struct sb_policy *p, *q;
	char *rec, *rules;
	const char *out;

	ctx_init(&c, NULL, no_env);
	rec = api_records(a, SB_API_THREADS, NULL, "api\t");
	out = learn(a,
		    sb_arena_printf(a, "%sapi\tos.system\napi\tno.such\n"
				       "api\tnt.kill\n",
				    rec),
		    MARKERS, &c, NULL);
	is_str(block(a, out, "api"),
	       "# \u26a0 process-exec: runs code outside the patched "
	       "interpreter\n"
	       "python-api=ALLOW:os.system\n"
	       "# process-control: kills processes, exhausts host resources\n"
	       "python-api=ALLOW:nt.kill\n"
	       "# threads: concurrency primitives\n"
	       "python-api=ALLOW:threads\n\n",
	       "api: registry order, a whole category collapses, one "
	       "function does not");

	/* all but one: one line per function, never the category too */
	out = learn(a,
		    api_records(a, SB_API_THREADS, "_thread.start_new",
				"api\t"),
		    MARKERS, &c, NULL);
	ok(strstr(out, "python-api=ALLOW:_thread.stack_size\n") &&
		   !strstr(out, "ALLOW:threads") &&
		   !strstr(out, "ALLOW:_thread.start_new\n"),
	   "api: an incomplete category stays per function");

	/* the policy allows all but one, the run used that one */
	rules = api_records(a, SB_API_THREADS, "_thread.start_new",
			    "python-api=ALLOW:");
	p = parse_text(rules, no_env, NULL, NULL);
	show_errors(p);
	ctx_init(&c, p, no_env);
	out = learn(a, "api\t_thread.start_new\napi\t_thread.stack_size\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "api"),
	       "# threads: concurrency primitives\n"
	       "python-api=ALLOW:threads\n\n",
	       "api: allowed plus learned cover the category");

	/* an allowed function is not learned again */
	q = parse_text("python-api=ALLOW:os.system\n", no_env, NULL, NULL);
	ctx_init(&c, q, no_env);
	out = learn(a, "api\tos.system\n", MARKERS, &c, NULL);
	is_str(block(a, out, "api"), "", "api: allowed functions skipped");
	sb_policy_free(p);
	sb_policy_free(q);
	sb_arena_free(a);
}

/* ---- the merge ---- */

static void test_merge(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_learn_ctx c;
	const char *recs = "env\tHOME\nimport\tjson\nfile\tr\tf\t/etc/hosts\n"
			   "api\tos.system\n";
	const char *one, *two;
	bool added = false;

	ctx_init(&c, NULL, no_env);
	one = learn(a, recs, NULL, &c, &added);
	ok(added, "merge: a new file gets rules");
	ok(sb_str_starts(one, "# .py-sandboxes"),
	   "merge: a new file starts from the template");
	ok(strstr(one, "# <learning_guard_envs>\n"
		       "# Add rules (2026/11/29 at 14:22)\n"
		       "env=HOME=${HOME}\n"
		       "\n"
		       "# </learning_guard_envs>\n") != NULL,
	   "merge: the dated block before the closing marker");
	two = learn(a, recs, one, &c, &added);
	ok(!added, "merge: the same records twice add nothing");
	is_str(two, one, "merge: the text is unchanged the second time");
	two = learn(a, "env\tUSER\n", one, &c, &added);
	ok(added && strstr(two, "env=HOME=${HOME}\n\n"
				"# Add rules (2026/11/29 at 14:22)\n"
				"env=USER=${USER}\n\n"
				"# </learning_guard_envs>\n"),
	   "merge: a second run adds only the new rule, in its own block");

	/* no marker: the block goes at the end, with its markers */
	two = learn(a, "env\tA\nimport\tcsv\n",
		    "env=X=1\n# <learning_guard_import>\n"
		    "# </learning_guard_import>\nlast=line",
		    &c, &added);
	is_str(two,
	       "env=X=1\n"
	       "# <learning_guard_import>\n"
	       "# Add rules (2026/11/29 at 14:22)\n"
	       "# Standard Python\n"
	       "python-import=csv\n"
	       "\n"
	       "# </learning_guard_import>\n"
	       "last=line\n"
	       "\n"
	       "# <learning_guard_envs>\n"
	       "# Add rules (2026/11/29 at 14:22)\n"
	       "env=A=${A}\n"
	       "\n"
	       "# </learning_guard_envs>\n",
	       "merge: a missing marker appends the block at the end");
	/* a line present anywhere (stripped) is not added */
	two = learn(a, "env\tA\n", "  env=A=${A}  \n", &c, &added);
	ok(!added, "merge: a line present elsewhere is not added");
	is_str(two, "  env=A=${A}  \n", "merge: the text is kept as is");
	two = learn(a, "", "", &c, &added);
	ok(!added && !*two, "merge: nothing learned, nothing added");
	sb_arena_free(a);
}

/* ---- a real round trip: the generated file parses ---- */

static void mkdirs(const char *path)
{
	char buf[512];
	char *s;

	snprintf(buf, sizeof(buf), "%s", path);
	for (s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(buf, 0700);
		*s = '/';
	}
	mkdir(buf, 0700);
}

static void touch(const char *path)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	write_file(path, "x\n");
}

static void test_round_trip(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_learn_ctx c;
	struct sb_policy *p, *empty;
	const char *cwd = sb_arena_printf(a, "%s/proj", scratch);
	const char *home = sb_arena_printf(a, "%s/home", scratch);
	const char *tmp = sb_arena_printf(a, "%s/tmp", scratch);
	const char *envp[] = { sb_arena_printf(a, "TMPDIR=%s", tmp),
			       "API_PORT=8443", NULL };
	const char *recs, *out, *again;
	bool added;
	size_t i;
	int ro_file = 0, rw_dir = 0;

	touch(sb_arena_printf(a, "%s/data/x.csv", cwd));
	touch(sb_arena_printf(a, "%s/main.py", cwd));
	touch(sb_arena_printf(a, "%s/.netrc", home));
	touch(sb_arena_printf(a, "%s/job/out", tmp));
	recs = sb_arena_printf(
		a,
		"env\tHOME\nenv\tAPI_PORT\n"
		"file\tr\tf\t%s/data/x.csv\n"
		"file\tr\tf\t%s/.netrc\n"
		"file\tw\tf\t%s/job/out\n"
		"file\tr\tf\t/etc/passwd\n"
		"net\ttcp\tout\t127.0.0.1\t8443\t-\n"
		"net\ttcp\tin\t0.0.0.0\t8000\t-\n"
		"import\tjson\nimport\tnumpy\nimport\tctypes\n"
		"api\tos.system\n",
		cwd, home, tmp);
	empty = parse_text("", envp, cwd, home);
	ctx_init(&c, empty, envp);
	c.cwd = cwd;
	c.home = home;
	out = learn(a, recs, NULL, &c, &added);
	ok(added, "round trip: rules added");
	is_str(block(a, out, "files"),
	       "expose-ro=./data\n"
	       "expose-rw=${TMPDIR:-/tmp}/job\n"
	       "expose-ro=/etc/passwd\n"
	       "expose-ro=~/.netrc\n\n",
	       "round trip: the files block");
	p = parse_text(out, envp, cwd, home);
	show_errors(p);
	is_int(p->errors.n, 0, "round trip: the generated file parses");
	for (i = 0; i < p->exposes.n; i++) {
		if (strcmp(p->exposes.v[i].path, "/etc/passwd") == 0 &&
		    !p->exposes.v[i].is_dir)
			ro_file++;
		if (sb_str_starts(p->exposes.v[i].path, tmp) &&
		    p->exposes.v[i].is_dir &&
		    p->exposes.v[i].mode == SB_EXPOSE_RW)
			rw_dir++;
	}
	ok(ro_file == 1 && rw_dir == 1,
	   "round trip: /etc/passwd a file rule, the temp job directory rw");
	is_int(p->imports.n, 3, "round trip: three imports");
	/* HOME is unset here: its rule creates nothing (2.6.2) */
	is_int(p->env.n, 1, "round trip: API_PORT forwarded");
	is_str(p->env.n ? p->env.v[0].value : NULL, "8443",
	       "round trip: with its host value");

	/* learning again under the generated policy adds nothing */
	c.policy = p;
	again = learn(a, recs, out, &c, &added);
	ok(!added, "round trip: nothing new under the learned policy");
	is_str(again, out, "round trip: text unchanged");
	sb_policy_free(p);
	sb_policy_free(empty);
	sb_arena_free(a);
}

static void rm_rf(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		diag("could not remove %s", path);
}

/* ---- entries made where no rule may grant the directory ---- */

/* what the learning run removed: these paths and all below them */
static const char *const *gone_paths;

static bool not_gone(const char *path)
{
	size_t i;

	for (i = 0; gone_paths && gone_paths[i]; i++)
		if (sb_path_under(path, gone_paths[i]))
			return false;
	return true;
}

static const char *gone_block(struct sb_arena *a, const char *cwd,
			      const char *const *gone, const char *records,
			      const struct sb_policy *p)
{
	struct sb_learn_ctx c;

	ctx_init(&c, p, no_env);
	c.cwd = cwd;
	c.exists = not_gone;
	gone_paths = gone;
	return block(a, learn(a, records, MARKERS, &c, NULL), "files");
}

static bool path_there(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void test_made_entries(void)
{
	struct sb_arena *a = sb_arena_new();

	is_str(gone_block(a, "/work/p",
			  (const char *const[]){ "/tmp/tmpab12cd34", NULL },
			  "file\tw\tf\t/tmp/tmpab12cd34\n"
			  "file\tw\td\t/tmp\n",
			  NULL),
	       "expose-made=${TMPDIR:-/tmp}/*\n\n",
	       "made: mkstemp then remove in /tmp (and the kernel's record of "
	       "/tmp changed) is expose-made=, never expose-rw= of /tmp");
	is_str(gone_block(a, "/work/p",
			  (const char *const[]){ "/dev/shm/sem.Ab12Cd",
						 "/dev/shm/sem.mp-x1", NULL },
			  "file\tw\tf\t/dev/shm/sem.Ab12Cd\n"
			  "file\tw\tf\t/dev/shm/sem.mp-x1\n"
			  "file\tw\td\t/dev/shm\n",
			  NULL),
	       "expose-made=/dev/shm/*\n\n",
	       "made: multiprocessing's semaphores in /dev/shm are "
	       "expose-made=, never the whole of /dev/shm");
	is_str(gone_block(a, "/work/p", NULL, "file\tw\td\t/tmp\n", NULL),
	       "expose-made=${TMPDIR:-/tmp}/*\n\n",
	       "made: /tmp changed alone (native code) is expose-made=");
	is_str(gone_block(a, "/work/p",
			  (const char *const[]){ "/tmp/tmpq1", NULL },
			  "file\tw\td\t/tmp/tmpq1\n"
			  "file\tw\td\t/tmp/tmpq1/a\n"
			  "file\tw\tf\t/tmp/tmpq1/a/x\n",
			  NULL),
	       "expose-made=${TMPDIR:-/tmp}/*\n\n",
	       "made: mkdtemp, a tree in it, rmtree: expose-made=");
	is_str(gone_block(a, "/work/p", NULL,
			  "file\tw\tf\t/tmp/job/x\n", NULL),
	       "expose-rw=${TMPDIR:-/tmp}/job\n\n",
	       "made: a directory the run did not make stays expose-rw=");
	is_str(gone_block(a, "/work/p",
			  (const char *const[]){ "/home/u/x.tmp", NULL },
			  "file\tw\tf\t/home/u/x.tmp\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "expose-new=~/x.tmp\n\n",
	       "made: outside a temporary directory, a gone entry stays "
	       "expose-new=");
	{
		struct sb_learn_ctx c;

		ctx_init(&c, NULL, no_env);
		c.cwd = "/home/u";
		c.exists = not_gone;
		c.hostname = "myhost";
		gone_paths = (const char *const[]){
			"/home/u/box.lock", "/home/u/box.lock.1733412345.myhost.4242",
			"/home/u/tmpab12cd_9.json", NULL
		};
		is_str(block(a,
			     learn(a,
				   "file\tw\tf\t/home/u/box\n"
				   "file\tw\tf\t/home/u/box.lock\n"
				   "file\tw\tf\t/home/u/box.lock.1733412345."
				   "myhost.4242\n"
				   "file\tw\tf\t/home/u/tmpab12cd_9.json\n"
				   "file\tw\td\t/home/u\n",
				   MARKERS, &c, NULL),
			     "files"),
		       "expose-rw=./box\nexpose-new=./box.lock\n"
		       "expose-made=./box.lock.*.*.*\n"
		       "expose-made=./tmp*.json\n\n",
		       "made: in home, a name of one run (a time, the host, a "
		       "pid; tempfile's letters) is expose-made= of its "
		       "pattern; a fixed name expose-new=");
	}
	sb_arena_free(a);
}

static void test_new_entries(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_policy pol = { 0 };
	struct sb_expose *e;
	/* the native learner records the directory an entry is made in */
	static const char home_written[] = "file\tw\td\t/home/u\n";

	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/state.tmp", NULL },
			  "file\tw\tf\t/home/u/state.tmp\n"
			  "file\tw\tf\t/home/u/state\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "expose-rw=./state\nexpose-new=./state.tmp\n\n",
	       "new: an atomic write in home: the kept file expose-rw=, the "
	       "temporary one expose-new=, home not named");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/state.tmp",
						 "/home/u/state", NULL },
			  "file\tw\tf\t/home/u/state.tmp\n"
			  "file\tw\tf\t/home/u/state\n",
			  NULL),
	       "expose-new=./state\nexpose-new=./state.tmp\n\n",
	       "new: both gone at the end: both expose-new=");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/a", NULL },
			  "file\tw\tf\t/home/u/a\n"
			  "file\tw\tf\t/home/u/a/b\n"
			  "file\tw\tf\t/home/u/a/b/c\n"
			  "file\tw\tf\t/home/u/a/b/c/f\n"
			  "file\tw\td\t/home/u/a\n"
			  "file\tw\td\t/home/u/a/b\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "expose-new=./a\n\n",
	       "new: a tree made and removed in home is one expose-new= of "
	       "its top entry, which covers the rest");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/a", NULL },
			  "file\tw\td\t/home/u\n"
			  "file\tw\td\t/home/u/a\n"
			  "file\tw\td\t/home/u/a/b\n"
			  "file\tw\tf\t/home/u/a/b/c/f\n",
			  NULL),
	       "expose-new=./a\n\n",
	       "new: the same as native code records it (the directories "
	       "entries were made in)");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/app.log.3", NULL },
			  "file\tw\tf\t/home/u/app.log\n"
			  "file\tw\tf\t/home/u/app.log.1\n"
			  "file\tw\tf\t/home/u/app.log.2\n"
			  "file\tw\tf\t/home/u/app.log.3\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "expose-rw=./app.log\nexpose-rw=./app.log.1\n"
	       "expose-rw=./app.log.2\nexpose-new=./app.log.3\n\n",
	       "new: a rotated log in home: kept files keep their file rules, "
	       "a removed one is expose-new=");
	is_str(gone_block(a, "/home/u", NULL,
			  "file\tw\td\t/home/u/out\n"
			  "file\tw\tf\t/home/u/out/r.txt\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "expose-new=./out\n\n",
	       "new: a directory made in home and kept is expose-new= (its "
	       "making and removal are the supervisor's), and "
	       "covers its files");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/out", NULL },
			  "file\tw\td\t/home/u/out\n"
			  "file\tw\tf\t/home/u/out/r.txt\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "expose-new=./out\n\n",
	       "new: the same directory removed again is expose-new=");
	is_str(gone_block(a, "/work/proj",
			  (const char *const[]){ "/home/u/.x.tmp", "/junk",
						 NULL },
			  "file\tw\tf\t/home/u/.x.tmp\n"
			  "file\tw\tf\t/junk\n",
			  NULL),
	       "expose-new=/junk\nexpose-new=~/.x.tmp\n\n",
	       "new: spelled as other rules (~/, absolute), sorted");
	is_str(gone_block(a, "/home/u", NULL, home_written, NULL),
	       TOO_WIDE_HEADER "# ./\n\n",
	       "new: home written with no entry learned (native code): "
	       "named for review");
	is_str(gone_block(a, "/work/proj", NULL,
			  "file\tw\td\t/\n"
			  "file\tw\td\t/home/u\n"
			  "file\tw\td\t/home\n"
			  "file\tr\tf\t/home/u/notes\n",
			  NULL),
	       TOO_WIDE_HEADER "# /\n# ~/\n# /home/\n"
	       "expose-ro=~/notes\n\n",
	       "new: never a rule for /, home or above it; a read does not "
	       "count as an entry made");
	is_str(gone_block(a, "/work/proj",
			  (const char *const[]){ "/home/u", NULL },
			  "file\tw\tf\t/home/u/x\n"
			  "file\tw\tf\t/home/u\n", NULL),
	       TOO_WIDE_HEADER "# ~/x\n# ~\n\n",
	       "new: never expose-new= for home itself");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/nodir", NULL },
			  "file\tw\tf\t/home/u/nodir/x\n"
			  "file\tr\tf\t/home/u/notes\n", NULL),
	       "expose-ro=./notes\n\n",
	       "new: a write that failed for want of its directory "
	       "stands for nothing");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/a#b", NULL },
			  "file\tw\tf\t/home/u/a#b\n"
			  "file\tw\td\t/home/u\n",
			  NULL),
	       "# REVIEW: the program used these paths, which no rule can "
	       "spell (a '#', ',',\n# quote or '${', or a trailing space): "
	       "no rule was written for them.\n# Rename them, or grant a "
	       "directory that holds them.\n# expose-new=/home/u/a#b\n"
	       TOO_WIDE_HEADER "# ./\n\n",
	       "new: an entry no rule can spell is shown for review, and "
	       "home with it");
	is_str(gone_block(a, "/home/u",
			  (const char *const[]){ "/home/u/a\nb", NULL },
			  "file\tw\tf\t/home/u/a\\nb\n", NULL),
	       "# REVIEW: the program used these names, which hold control "
	       "characters,\n# bidirectional-text marks or bytes that are "
	       "not UTF-8. They are shown\n# escaped (\\xNN), as comments: "
	       "no rule was written for them.\n"
	       "# expose-rw=/home/u/a\\x0ab\n\n",
	       "new: a hidden character gives no expose-new=");
	is_str(gone_block(a, "/work/proj",
			  (const char *const[]){ "/srv/spool/job.tmp",
						 "/srv/spool/d", NULL },
			  "file\tw\tf\t/srv/spool/job.tmp\n"
			  "file\tw\tf\t/srv/spool/d/x\n",
			  NULL),
	       "expose-rw=/srv/spool\n\n",
	       "new: made and removed where a rule may grant the directory: "
	       "expose-rw= of the nearest one still there");
	is_str(gone_block(a, "/work/proj",
			  (const char *const[]){ "/work/proj/build", NULL },
			  "file\tw\td\t/work/proj/build\n"
			  "file\tw\tf\t/work/proj/build/o\n",
			  NULL),
	       "expose-rw=.\n\n",
	       "new: never expose-new= in the program's own tree");

	/* the next learning run: the rules in force cover the entries, the
	 * guard records none of them, the native learner still home */
	pol.arena = sb_arena_new();
	e = SB_VEC_PUSH(pol.arena, pol.exposes);
	e->path = "/home/u/state.tmp";
	e->rule = "expose-new=./state.tmp";
	e->mode = SB_EXPOSE_RW;
	e->is_dir = true;
	is_str(gone_block(a, "/home/u", NULL, home_written, &pol), "",
	       "new: home is not named when the rules in force grant an "
	       "entry in it");
	sb_arena_free(pol.arena);

	/* an absent include that a learned entry would let the program
	 * make is turned off, as under expose-rw= */
	{
		struct sb_learn_ctx c;
		const char *out;

		ctx_init(&c, NULL, no_env);
		c.cwd = "/home/u";
		c.exists = not_gone;
		gone_paths = (const char *const[]){
			"/home/u/.local.py-sandboxes", NULL
		};
		out = learn(a, "file\tw\tf\t/home/u/.local.py-sandboxes\n",
			    "include \"./.local.py-sandboxes\"\n", &c, NULL);
		ok(strstr(out, "# REVIEW: the include below is absent and "
			       "'expose-new=./.local.py-sandboxes'") &&
			   strstr(out, "\n#include \"./.local.py-sandboxes\"\n"),
		   "new: an absent include under a learned entry is turned "
		   "off");
	}
	gone_paths = NULL;

	/* read back: expose-new= needs only the entry's directory */
	{
		const char *home = sb_arena_printf(a, "%s/nhome", scratch);
		const char *recs, *out;
		struct sb_learn_ctx c;
		struct sb_policy *p, *empty;
		bool added;
		size_t i;
		int entries = 0;

		touch(sb_arena_printf(a, "%s/state", home));
		recs = sb_arena_printf(a,
				       "file\tw\tf\t%s/state.tmp\n"
				       "file\tw\tf\t%s/state\n"
				       "file\tw\tf\t%s/a/b/f\n"
				       "file\tw\td\t%s/a/b\n"
				       "file\tw\td\t%s/a\n"
				       "file\tw\td\t%s\n",
				       home, home, home, home, home, home);
		empty = parse_text("", no_env, home, home);
		ctx_init(&c, empty, no_env);
		c.cwd = home;
		c.home = home;
		c.exists = path_there;
		out = learn(a, recs, NULL, &c, &added);
		is_str(block(a, out, "files"),
		       "expose-new=./a\nexpose-rw=./state\n"
		       "expose-new=./state.tmp\n\n",
		       "new: round trip: the files block");
		p = parse_text(out, no_env, home, home);
		show_errors(p);
		is_int(p->errors.n, 0, "new: round trip: the file parses");
		for (i = 0; i < p->exposes.n; i++)
			entries += p->exposes.v[i].entry;
		is_int(entries, 2, "new: round trip: two entries");
		c.policy = p;
		learn(a, recs, out, &c, &added);
		ok(!added, "new: round trip: nothing new under the learned "
			   "policy");
		sb_policy_free(p);
		sb_policy_free(empty);
	}
	sb_arena_free(a);
}

/* issue 21: what a reviewer sees is what runs */
static void test_hidden_names(void)
{
	static const char *const envp[] = { "PATH=/bin", NULL };
	struct sb_arena *a = sb_arena_new();
	struct sb_learn_ctx c;
	const char *out;

	ok(!sb_learn_hidden_chars("/home/u/caf\xc3\xa9.txt"),
	   "hidden: plain UTF-8 is not");
	ok(sb_learn_hidden_chars("a\xe2\x80\xae" "b"), "hidden: U+202E");
	ok(sb_learn_hidden_chars("a\xe2\x81\xa6" "b"), "hidden: U+2066");
	ok(sb_learn_hidden_chars("a\xe2\x80\x8f" "b"), "hidden: U+200F");
	ok(sb_learn_hidden_chars("a\xef\xbb\xbf"), "hidden: U+FEFF");
	ok(sb_learn_hidden_chars("a\x1b[31m"), "hidden: ESC");
	ok(sb_learn_hidden_chars("a\xc2\x85"), "hidden: C1 (NEL)");
	ok(sb_learn_hidden_chars("a\xff"), "hidden: not UTF-8");
	ok(sb_learn_hidden_chars("a\xc0\xaf"), "hidden: overlong");
	ok(sb_learn_hidden_chars("a\xed\xa0\x80"), "hidden: surrogate");
	ok(sb_learn_hidden_chars("a\xe2\x80"), "hidden: truncated");
	is_str(sb_learn_escape(a, "x\xe2\x80\xaey\\\xffz\xc3\xa9"),
	       "x\\xe2\\x80\\xaey\\x5c\\xffz\xc3\xa9",
	       "escape: marks, backslash and bad bytes as \\xNN");

	ctx_init(&c, NULL, envp);
	out = learn(a,
		    "env\tA\xe2\x80\xae" "B\nimport\tm\xe2\x80\xaeod\n"
		    "file\tr\tf\t/srv/x\xe2\x80\xaegpj.py\n",
		    MARKERS, &c, NULL);
	ok(!strstr(out, "\xe2\x80\xae"), "hidden: never written raw");
	ok(strstr(out, "\n# env=A\\xe2\\x80\\xae" "B\n") != NULL,
	   "hidden: a variable, escaped, as a comment");
	ok(strstr(out, "\n# python-import=m\\xe2\\x80\\xaeod\n") != NULL,
	   "hidden: a module, escaped, as a comment");
	ok(strstr(out, "\n# expose-ro=/srv/x\\xe2\\x80\\xaegpj.py\n") !=
		   NULL,
	   "hidden: a path, escaped, as a comment");
	ok(strstr(out, "# REVIEW: the program used these names") != NULL,
	   "hidden: flagged for review");
	sb_arena_free(a);
}

static void test_eval(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_learn_ctx c;
	struct sb_policy *p;
	const char *out;

	ctx_init(&c, NULL, no_env);
	out = learn(a,
		    "eval\teval-on\n"
		    "eval\teval-syntax=While\neval\teval-syntax=For\n"
		    "eval\teval-syntax=Break\neval\teval-syntax=Continue\n"
		    "eval\teval-syntax=IfExp\neval\teval-call=max\n"
		    "eval\teval-call=abs\neval\teval-call=max\n"
		    "eval\teval-attribute=upper\neval\teval-magic=__len__\n"
		    "eval\teval-import=math\neval\teval-max-depth=25\n"
		    "eval\teval-max-depth=30\neval\tnot-a-rule\n"
		    "eval\tpython-api=ALLOW:*\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "eval"),
	       "eval-syntax=IfExp, loop\n"
	       "eval-import=math\n"
	       "eval-call=abs, max\n"
	       "eval-attribute=upper                    # \u26a0 "
	       "runtime-observed\n"
	       "eval-magic=__len__                    # \u26a0 "
	       "runtime-observed\n"
	       "eval-max-depth=30\n\n",
	       "eval: seed order, sorted tokens, a group only when whole, "
	       "the largest bound, no other rule");
	ok(!strstr(out, "python-api"), "eval: never a python-api rule");

	/* a group not whole stays as its nodes */
	out = learn(a, "eval\teval-syntax=For\neval\teval-syntax=While\n",
		    MARKERS, &c, NULL);
	is_str(block(a, out, "eval"), "eval-syntax=For, While\n\n",
	       "eval: part of a group stays nodes");

	/* an evaluation within the defaults still turns the profile on */
	out = learn(a, "eval\teval-on\n", MARKERS, &c, NULL);
	is_str(block(a, out, "eval"), "eval-namespace=adaptive\n\n",
	       "eval: the default profile is turned on");
	p = parse_text("eval-call=len\n", no_env, NULL, NULL);
	ctx_init(&c, p, no_env);
	out = learn(a, "eval\teval-on\n", MARKERS, &c, NULL);
	is_str(block(a, out, "eval"), "",
	       "eval: a default profile in force needs no line");
	sb_policy_free(p);
	sb_arena_free(a);
}

/* Partial mode's result mode, as the parent saw its results: the cases
 * of the rule file's result block (the seed's learning output). */
static const char *result_edit(const char *text, bool objects, bool in_force,
			       enum sb_mode_origin origin)
{
	static struct sb_buf out;

	sb_buf_free(&out);
	out = (struct sb_buf){ 0 };
	if (!sb_learn_result_mode(text, objects, in_force, origin, "D", &out))
		return NULL;
	return out.s;
}

#define BLOCK_OPEN "# <learning_remote_result>\n"
#define BLOCK_CLOSE "# </learning_remote_result>\n"
#define WARN                                                                  \
	"# WARNING: observed return pickles reconstruct application objects. " \
	"Deserialization may execute class-defined code in the parent "        \
	"process.\n"

static void test_result_mode(void)
{
	const char *empty = "learn\n" BLOCK_OPEN BLOCK_CLOSE;

	is_str(result_edit(empty, false, false, SB_MODE_IMPLICIT),
	       "learn\n" BLOCK_OPEN "# Add rules (D)\n"
	       "remote-result-mode=data-only\n\n" BLOCK_CLOSE,
	       "result mode: data only, nothing set: data-only learned");
	is_str(result_edit("x=1", false, false, SB_MODE_IMPLICIT),
	       "x=1\n" BLOCK_OPEN "# Add rules (D)\n"
	       "remote-result-mode=data-only\n\n" BLOCK_CLOSE,
	       "result mode: no block: one is added at the end");
	ok(!result_edit(empty, false, false, SB_MODE_ARG),
	   "result mode: data only, a mode given on the command line: "
	   "nothing");
	ok(!result_edit("remote-result-mode=data-only\n", false, false,
			SB_MODE_FILE),
	   "result mode: data only, set already: nothing");
	is_str(result_edit("remote-result-mode = Data-Only\n" BLOCK_OPEN
			   BLOCK_CLOSE, true, false, SB_MODE_FILE),
	       "# Previous mode superseded by learning on D:\n"
	       "# remote-result-mode = Data-Only\n" BLOCK_OPEN
	       "# Add rules (D)\n" WARN "remote-result-mode=objects\n\n"
	       BLOCK_CLOSE,
	       "result mode: objects seen: the file's data-only superseded");
	ok(!result_edit("REMOTE-RESULT-MODE=default\n", true, true,
			SB_MODE_FILE),
	   "result mode: objects seen, objects (default) set: nothing");
	is_str(result_edit(empty, true, false, SB_MODE_FILE),
	       "learn\n" BLOCK_OPEN "# Add rules (D)\n" WARN
	       "# remote-result-mode=objects is needed: set it in the "
	       "included profile that sets the mode.\n\n" BLOCK_CLOSE,
	       "result mode: objects seen, an include sets data-only: a note");
	ok(!result_edit(empty, true, true, SB_MODE_FILE),
	   "result mode: objects seen, an include sets objects: nothing");
	ok(!result_edit("# remote-result-mode=objects is needed: set it in "
			"the included profile that sets the mode.\n",
			true, false, SB_MODE_FILE),
	   "result mode: the include's note is there already: nothing");
	ok(!result_edit("remote-result-mode=objects\n# x\n", true, true,
			SB_MODE_FILE),
	   "result mode: objects set in the file: nothing");
	is_str(result_edit("", true, false, SB_MODE_IMPLICIT),
	       BLOCK_OPEN "# Add rules (D)\n" WARN
	       "remote-result-mode=objects\n\n" BLOCK_CLOSE,
	       "result mode: an empty file gets the block");
	result_edit("", false, false, SB_MODE_ARG); /* frees the last */
}

int main(void)
{
	snprintf(scratch, sizeof(scratch), "/var/tmp/test_learn.XXXXXX");
	if (!mkdtemp(scratch)) {
		snprintf(scratch, sizeof(scratch), "/tmp/test_learn.XXXXXX");
		if (!mkdtemp(scratch)) {
			perror("mkdtemp");
			return 2;
		}
	}
	test_parse();
	test_template();
	test_env();
	test_files();
	test_new_entries();
	test_made_entries();
	test_net();
	test_imports();
	test_api();
	test_eval();
	test_merge();
	test_round_trip();
	test_hidden_names();
	test_result_mode();
	rm_rf(scratch);
	return tap_done();
}
