/* test_policy.c - the rule file parser: lexing, ${}, include, env=, files,
 * imports, single-valued directives, provider keys, leftovers, the error
 * format and order, learning and the lock. Each case writes rule files into
 * a fresh temporary directory and parses them with that directory as cwd. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_registry.h"
#include "fsrules.h"
#include "policy.h"
#include "tap.h"

static char tmp[256];

static void write_file(const char *rel, const char *content)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(content, f);
	fclose(f);
}

static void make_dir(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	mkdir(path, 0755);
}

static const char *default_env[] = { "HOME=/home/u", "A=alpha", "E=",
				     "X_API_KEY=kx", "Y_API_KEY=ky",
				     "SELF=${A}", NULL };

static enum sb_resolve_status fake_resolve(void *ctx, struct sb_arena *a,
					   const char *host,
					   struct sb_addr **addrs, size_t *n,
					   const char **why)
{
	if (strcmp(host, "example.com") != 0)
		return SB_RESOLVE_NONAME;
	*addrs = sb_arena_alloc(a, sizeof(**addrs));
	(*addrs)->family = 2; /* AF_INET */
	memcpy((*addrs)->bytes, "\x5d\xb8\xd7\x0e", 4);
	*n = 1;
	return SB_RESOLVE_OK;
}

/* Parse 'content' as ./.py-sandboxes (NULL: no file) with CLI rules. */
static struct sb_policy *parse_cli(const char *content, const char **cli,
				   size_t ncli)
{
	struct sb_parse_opts o = { 0 };
	struct sb_policy *p = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/.py-sandboxes", tmp);
	unlink(path);
	if (content)
		write_file(".py-sandboxes", content);
	o.cwd = tmp;
	o.envp = default_env;
	o.cli_rules = cli;
	o.n_cli_rules = ncli;
	o.resolve = fake_resolve;
	if (sb_policy_parse(&o, &p) != 0 || !p) {
		fprintf(stderr, "parse failed\n");
		exit(2);
	}
	return p;
}

static struct sb_policy *parse(const char *content)
{
	return parse_cli(content, NULL, 0);
}

/* The errors joined by '\n' (or "" when none), for exact comparisons. */
static const char *errors(struct sb_policy *p)
{
	static char buf[8192];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < p->errors.n && o < sizeof(buf) - 1; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
				      i ? "\n" : "", p->errors.v[i].text);
	return buf;
}

static const char *warnings(struct sb_policy *p)
{
	static char buf[4096];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < p->warnings.n && o < sizeof(buf) - 1; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
				      i ? "\n" : "", p->warnings.v[i].text);
	return buf;
}

static const char *env_get(struct sb_policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->env.n; i++)
		if (strcmp(p->env.v[i].name, name) == 0)
			return p->env.v[i].value;
	return NULL;
}

/* Check one rule file gives exactly one error text. */
static void one_error(const char *content, const char *want, const char *name)
{
	struct sb_policy *p = parse(content);

	is_str(errors(p), want, "%s", name);
	sb_policy_free(p);
}

static void test_lexing(void)
{
	struct sb_policy *p;

	p = parse("# a comment\n"
		  "\n"
		  "   python-import=json   # trailing comment\n"
		  "{{ template line }}\n"
		  "env=Q=\"a#b\"  # quoted hash stays\n"
		  "env=R='x\\'#y' # escaped quote\n"
		  "\t\r\n");
	is_str(errors(p), "", "lexing: no errors");
	is_int(p->imports.n, 1, "lexing: one import");
	is_str(p->imports.n ? p->imports.v[0].name : NULL, "json",
	       "lexing: stripped value, comment removed");
	is_str(env_get(p, "Q"), "\"a#b\"", "lexing: # inside quotes kept");
	is_str(env_get(p, "R"), "'x\\'#y'",
	       "lexing: escaped quote does not close the string");
	/* and the rule file's own ignore= (policy_own.c), last */
	is_int(p->rules.n, 4, "lexing: three effective rules");
	is_int(p->rules.n ? p->rules.v[0].ref.line : 0, 3,
	       "lexing: line numbers are 1-based file lines");
	sb_policy_free(p);

	one_error("python-import=json\nnot a rule\n",
		  ".py-sandboxes(2): Invalid rule 'not a rule'",
		  "lexing: unclaimed line");
	one_error("set-env=A=1\n",
		  ".py-sandboxes(1): Invalid rule 'set-env=A=1'. Use 'env=' "
		  "instead.",
		  "historical spelling gets a hint");
	one_error("include foo\n", ".py-sandboxes(1): Invalid rule 'include foo'",
		  "include without quotes is not an include");
	one_error("net = ALLOW|TCP|1.2.3.4|1|OUT\n",
		  ".py-sandboxes(1): Invalid rule 'net = ALLOW|TCP|1.2.3.4|1|OUT'",
		  "spaces before '=' make another key");
	{
		char buf[64] = "python-import=json\nenv=A=1\0x\npython-import=os\n";

		write_file(".tmp", "");
		p = NULL;
		{
			char path[512];
			int fd;

			snprintf(path, sizeof(path), "%s/.nul", tmp);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (write(fd, buf, 46) != 46)
				exit(2);
			close(fd);
		}
		{
			struct sb_parse_opts o = { 0 };

			o.cwd = tmp;
			o.envp = default_env;
			o.config_path = ".nul";
			sb_policy_parse(&o, &p);
		}
		is_str(errors(p),
		       ".nul(2): the line holds a NUL byte: this is not a "
		       "text rule file.",
		       "NUL byte: a clear error on its line");
		is_int(p->imports.n, 2, "NUL byte: other lines still parsed");
		sb_policy_free(p);
	}
}

static void test_expansion(void)
{
	struct sb_policy *p;

	p = parse("expose-ro=${HOME:-/nonexistent}/../..\n"
		  "os-sandbox=${OS_SANDBOX:-none}\n"
		  "env=T=${TMPDIR:-${TEMP:-${TMP:-/tmp}}}\n"
		  "env=U=${UNSET}\n"
		  "env=V=${E:-dflt}\n"
		  "env=W=${SELF}\n"
		  "env=L=\n"
		  "env=M=pre${UNSET}\n");
	is_str(errors(p), "", "expansion: no errors");
	is_int(p->provider, SB_PROVIDER_NONE, "${X:-default} with X unset");
	is_str(env_get(p, "T"), "/tmp", "nested defaults, innermost first");
	is_str(env_get(p, "U"), NULL,
	       "a reference that expands to nothing creates no variable");
	is_str(env_get(p, "V"), "dflt", ":- also replaces an empty value");
	is_str(env_get(p, "W"), "${A}", "an expanded value is not expanded again");
	is_str(env_get(p, "L"), "", "a literal empty value creates the variable");
	is_str(env_get(p, "M"), "pre", "text around an empty reference stays");
	is_int(p->exposes.n, 1, "expansion inside paths");
	is_str(p->exposes.n ? p->exposes.v[0].path : NULL, "/",
	       "expanded path is canonical");
	sb_policy_free(p);

	one_error("python-import=${A:B}\n",
		  ".py-sandboxes(1): Invalid variable reference '${A:B}', use "
		  "${NAME} or ${NAME:-default}",
		  "${A:B} is an error");
	one_error("python-import=${A:=b}\n",
		  ".py-sandboxes(1): Invalid variable reference '${A:=b}', use "
		  "${NAME} or ${NAME:-default}",
		  "${A:=b} (old template form) is an error");
	one_error("python-import=x${}\n",
		  ".py-sandboxes(1): Invalid variable reference '${}', use "
		  "${NAME} or ${NAME:-default}",
		  "${} is an error");
	one_error("env=Z=${A\n",
		  ".py-sandboxes(1): Invalid variable reference '${A', use "
		  "${NAME} or ${NAME:-default}",
		  "an unclosed reference is an error, in env= too");
	p = parse("python-import=${A}\n");
	is_str(p->imports.n ? p->imports.v[0].name : NULL, "alpha",
	       "${NAME} in any rule");
	sb_policy_free(p);
	{
		/* defaults nest 16 deep, not 17: each level was a recursion,
		 * and 300,000 of them overflowed the stack (attack K40) */
		struct sb_buf b = { 0 };
		int i;

		sb_buf_puts(&b, "env=D=");
		for (i = 0; i < 16; i++)
			sb_buf_puts(&b, "${X:-");
		sb_buf_puts(&b, "deep");
		for (i = 0; i < 16; i++)
			sb_buf_puts(&b, "}");
		sb_buf_puts(&b, "\n");
		p = parse(b.s);
		is_str(env_get(p, "D"), "deep", "defaults nested 16 deep");
		sb_policy_free(p);
		b.len = 0;
		sb_buf_puts(&b, "env=D=");
		for (i = 0; i < 17; i++)
			sb_buf_puts(&b, "${X:-");
		sb_buf_puts(&b, "deep");
		for (i = 0; i < 17; i++)
			sb_buf_puts(&b, "}");
		sb_buf_puts(&b, "\n");
		one_error(b.s,
			  ".py-sandboxes(1): Variable defaults nested more than "
			  "16 deep (${A:-${B:-...}}): write the rule with fewer "
			  "levels",
			  "defaults nested 17 deep are refused");
		sb_buf_free(&b);
	}
}

static void test_include(void)
{
	struct sb_policy *p;
	char rule[600];

	make_dir("inc");
	write_file("inc/common", "python-import=common\n");
	write_file("inc/main.profile",
		   "include \"common\"  # next to this file\n"
		   "python-import=main\n");
	write_file("local", "python-import=local\ninclude \"./.py-sandboxes\"\n");
	snprintf(rule, sizeof(rule),
		 "include \"%s/inc/main.profile\"\n"
		 "include \"./local\"\n"
		 "include \"./absent\"\n"
		 "include \"~/surely-absent-%d\"\n"
		 "python-import=root\n",
		 tmp, (int)getpid());
	p = parse(rule);
	is_str(errors(p), "", "include: no errors");
	is_int(p->imports.n, 4, "include: four imports, the loop is harmless");
	if (p->imports.n == 4) {
		is_str(p->imports.v[0].name, "common",
		       "bare name resolved next to the including file");
		is_str(p->imports.v[1].name, "main", "spliced in place");
		is_str(p->imports.v[2].name, "local", "./ from the cwd");
		is_str(p->imports.v[3].name, "root", "root lines after");
		is_str(p->imports.v[0].ref.file, "inc/common",
		       "ref of an included file is relative to the cwd");
		is_int(p->imports.v[0].ref.line, 1, "its own line number");
	}
	is_int(p->files.n, 6, "files: root, 3 loaded, 2 absent");
	if (p->files.n == 6)
		is_int(p->files.v[4].state, SB_FILE_ABSENT,
		       "absent include recorded as absent");
	sb_policy_free(p);

	make_dir("adir");
	one_error("include \"./adir\"\n",
		  ".py-sandboxes(1): include \"./adir\": it is a directory, "
		  "not a rule file.",
		  "include of a directory");
	snprintf(rule, sizeof(rule), "%s/dangling", tmp);
	unlink(rule);
	if (symlink("/nonexistent/target", rule) == 0)
		one_error("include \"./dangling\"\n",
			  ".py-sandboxes(1): include \"./dangling\": it is a "
			  "symbolic link, which python-sb does not follow; "
			  "name the file it points to, or replace the link "
			  "with the file.",
			  "include of a dangling symlink");
	snprintf(rule, sizeof(rule), "%s/alink", tmp);
	unlink(rule);
	if (symlink("adir", rule) == 0)
		one_error("include \"./alink\"\n",
			  ".py-sandboxes(1): include \"./alink\": it is a "
			  "symbolic link, which python-sb does not follow; "
			  "name the file it points to, or replace the link "
			  "with the file.",
			  "include of a symlink is refused (issue 21)");
	snprintf(rule, sizeof(rule), "%s/fifo", tmp);
	unlink(rule);
	if (mkfifo(rule, 0600) == 0)
		one_error("include \"./fifo\"\n",
			  ".py-sandboxes(1): include \"./fifo\": it is not a "
			  "regular file (python-sb did not open it).",
			  "include of a FIFO is refused before it is opened");
	if (geteuid() != 0) {
		write_file("secret", "python-import=x\n");
		snprintf(rule, sizeof(rule), "%s/secret", tmp);
		chmod(rule, 0);
		one_error("include \"./secret\"\n",
			  ".py-sandboxes(1): include \"./secret\": "
			  "Permission denied.",
			  "include of an unreadable file");
	} else {
		ok(1, "# SKIP unreadable include: root reads anything");
	}
	/* a chain deeper than the bound */
	{
		int i;

		for (i = 0; i < 40; i++) {
			char name[32], body[64];

			snprintf(name, sizeof(name), "chain%d", i);
			snprintf(body, sizeof(body), "include \"chain%d\"\n",
				 i + 1);
			write_file(name, body);
		}
		p = parse("include \"chain0\"\n");
		ok(strstr(errors(p), "more than 32 nested includes") != NULL,
		   "include chain deeper than 32 is an error");
		sb_policy_free(p);
	}
}

static void test_env(void)
{
	struct sb_policy *p;
	const char *cli[] = { "env=C=from-arg" };

	p = parse_cli("env=*_API_KEY=${*_API_KEY}\n"
		      "env=X_API_KEY=exact\n"
		      "env=A*=lit\n"
		      "env=C=from-file\n"
		      "env=HOME=${HOME}\n"
		      "unenv=Y_*\n",
		      cli, 1);
	is_str(errors(p), "", "env: no errors");
	is_str(env_get(p, "X_API_KEY"), "exact",
	       "exact beats wildcard whatever the order");
	is_str(env_get(p, "Y_API_KEY"), NULL, "unenv= glob removes");
	is_str(env_get(p, "A"), "lit", "env=PAT*=literal sets matching names");
	is_str(env_get(p, "C"), "from-arg", "the command line wins");
	is_str(env_get(p, "HOME"), "/home/u", "copy of a host variable");
	is_str(env_get(p, "E"), NULL, "unmatched host variables stay out");
	sb_policy_free(p);

	p = parse("unenv=HOME\nenv=HOME=${HOME}\n");
	is_str(env_get(p, "HOME"), NULL, "unenv= is order-independent");
	sb_policy_free(p);
	p = parse("env=*=${*}\nunenv=E\n");
	is_str(env_get(p, "A"), "alpha", "env=*=${*} forwards everything");
	is_str(env_get(p, "E"), NULL, "... except empty host values");
	sb_policy_free(p);

	one_error("env=FOO\n",
		  ".py-sandboxes(1): Detect a missing '=' in rule: env=FOO.",
		  "env= without '='");
	one_error("env==x\n",
		  ".py-sandboxes(1): In 'env==x', the variable name must be "
		  "set.",
		  "env= with an empty name");
	one_error("unenv=\n",
		  ".py-sandboxes(1): In 'unenv=', the variable name must be "
		  "set.",
		  "unenv= empty");
}

static void test_files(void)
{
	struct sb_policy *p;
	char buf[700];

	make_dir("data");
	make_dir("data/sub");
	write_file("data/f.txt", "x");
	p = parse("expose-rw=./data\n"
		  "expose-ro=data/sub\n"
		  "expose-ro=./data/f.txt\n"
		  "expose-rw=./data/\n"
		  "ignore=*.log\n"
		  "ignore=/abs/*\n");
	is_str(errors(p), "", "files: no errors");
	is_int(p->exposes.n, 3, "files: the duplicate is merged");
	if (p->exposes.n == 3) {
		snprintf(buf, sizeof(buf), "%s/data/f.txt", tmp);
		is_str(p->exposes.v[0].path, buf, "longest path first");
		ok(!p->exposes.v[0].is_dir, "a single file can be exposed");
		is_int(p->exposes.v[1].mode, SB_EXPOSE_RO, "sub is read-only");
		is_int(p->exposes.v[2].mode, SB_EXPOSE_RW, "data is writable");
		ok(p->exposes.v[2].is_dir, "a directory");
		is_str(p->exposes.v[2].rule, "expose-rw=./data",
		       "the rule text is kept for messages");
	}
	/* and the rule file's own */
	is_int(p->ignores.n, 3, "ignore= patterns kept");
	sb_policy_free(p);

	one_error("expose-ro=./data,/tmp\n",
		  ".py-sandboxes(1): In 'expose-ro=./data,/tmp', expected a "
		  "single path (no comma).",
		  "expose: comma");
	one_error("expose-ro=\n",
		  ".py-sandboxes(1): In 'expose-ro=', path must be set.",
		  "expose: empty");
	one_error("expose-ro=./missing\n",
		  ".py-sandboxes(1): In 'expose-ro=./missing', path 'missing' "
		  "must exist.",
		  "expose: must exist (relative path in the message)");
	one_error("expose-ro=/nonexistent-pysb/x\n",
		  ".py-sandboxes(1): In 'expose-ro=/nonexistent-pysb/x', path "
		  "'/nonexistent-pysb/x' must exist.",
		  "expose: must exist (an absolute path stays absolute)");
	one_error("expose-ro=./data/f.txt/x\n",
		  ".py-sandboxes(1): In 'expose-ro=./data/f.txt/x', path is "
		  "invalid.",
		  "expose: path through a file is invalid");
	one_error("expose-ro=./data\nexpose-rw=data\n",
		  ".py-sandboxes(2): In 'expose-rw=data', invalidate another "
		  "rule from '.py-sandboxes(1)'.",
		  "expose: same path ro and rw");
	one_error("ignore=\n", ".py-sandboxes(1): In 'ignore=', a pattern must "
			       "be set.",
		  "ignore: empty");
	/* a relative pattern with a slash would hide nothing: refused */
	{
		static const char *const slashed[][3] = {
			{ "./secret.pem", "/secret.pem", "secret.pem" },
			{ "logs/", "/logs", "logs" },
			{ "a/*.key", "/a/*.key", "*.key" },
		};
		char text[128], full[1024];
		size_t k;

		for (k = 0; k < SB_ARRAY_LEN(slashed); k++) {
			snprintf(text, sizeof(text), "ignore=%s\n",
				 slashed[k][0]);
			snprintf(full, sizeof(full),
				 ".py-sandboxes(1): In 'ignore=%s', a relative "
				 "pattern is matched against file names, which "
				 "hold no '/': it would hide nothing. Write the "
				 "path absolute (ignore=%s%s) or a name alone "
				 "(ignore=%s).",
				 slashed[k][0], tmp, slashed[k][1],
				 slashed[k][2]);
			one_error(text, full, "ignore: a relative pattern with "
					      "a slash is refused");
		}
	}
	/* expose-list=: the names of one directory, none of its files */
	make_dir("listed");
	make_dir("listed/sub");
	write_file("listed/a.txt", "x");
	write_file("listed/b.txt", "x");
	p = parse("expose-list=./listed\nexpose-ro=./listed/a.txt\n");
	is_str(errors(p), "", "expose-list: no errors");
	{
		struct sb_fs_decision d;
		char dir[400], a[400], b[400], sub[400];

		snprintf(dir, sizeof(dir), "%s/listed", tmp);
		snprintf(a, sizeof(a), "%s/listed/a.txt", tmp);
		snprintf(b, sizeof(b), "%s/listed/b.txt", tmp);
		snprintf(sub, sizeof(sub), "%s/listed/sub", tmp);
		sb_fs_decide(p, dir, dir, dir, false, &d);
		is_int(d.verdict, SB_FS_ALLOW, "expose-list: listing allowed");
		ok(d.expose && d.expose->mode == SB_EXPOSE_LIST,
		   "expose-list: the list rule decides for its directory");
		sb_fs_decide(p, dir, dir, dir, true, &d);
		is_int(d.verdict, SB_FS_READ_ONLY,
		       "expose-list: no entry made or removed");
		sb_fs_decide(p, a, a, a, false, &d);
		is_int(d.verdict, SB_FS_ALLOW, "expose-list: a file rule below");
		sb_fs_decide(p, b, b, b, false, &d);
		is_int(d.verdict, SB_FS_NOT_EXPOSED,
		       "expose-list: the other files are not readable");
		sb_fs_decide(p, sub, sub, sub, false, &d);
		is_int(d.verdict, SB_FS_NOT_EXPOSED,
		       "expose-list: nor its subdirectories (Python layer)");
	}
	sb_policy_free(p);
	p = parse("expose-ro=.\nexpose-list=./listed\n");
	{
		struct sb_fs_decision d;
		char b[400];

		snprintf(b, sizeof(b), "%s/listed/b.txt", tmp);
		sb_fs_decide(p, b, b, b, false, &d);
		is_int(d.verdict, SB_FS_ALLOW,
		       "expose-list: a wider rule still reads below it");
	}
	sb_policy_free(p);
	one_error("expose-list=./listed/a.txt\n",
		  ".py-sandboxes(1): In 'expose-list=./listed/a.txt', path "
		  "must be a directory.",
		  "expose-list: a file is an error");
	/* expose-new=: an entry that need not exist, and what lies below */
	p = parse("expose-new=./listed/made\n");
	is_str(errors(p), "", "expose-new: no errors for a missing entry");
	{
		struct sb_fs_decision d;
		char made[400], below[400], other[400];

		snprintf(made, sizeof(made), "%s/listed/made", tmp);
		snprintf(below, sizeof(below), "%s/listed/made/x/y", tmp);
		snprintf(other, sizeof(other), "%s/listed/a.txt", tmp);
		ok(p->exposes.n == 1 && p->exposes.v[0].entry &&
			   p->exposes.v[0].mode == SB_EXPOSE_RW &&
			   strcmp(p->exposes.v[0].path, made) == 0,
		   "expose-new: the entry, read-write, by its real directory");
		sb_fs_decide(p, made, made, made, true, &d);
		is_int(d.verdict, SB_FS_ALLOW, "expose-new: the entry written");
		sb_fs_decide(p, below, below, below, true, &d);
		is_int(d.verdict, SB_FS_ALLOW,
		       "expose-new: what the program makes below it");
		sb_fs_decide(p, other, other, other, false, &d);
		is_int(d.verdict, SB_FS_NOT_EXPOSED,
		       "expose-new: nothing else in its directory");
	}
	sb_policy_free(p);
	one_error("expose-new=./nodir/x\n",
		  ".py-sandboxes(1): In 'expose-new=./nodir/x', the directory "
		  "that holds 'x' must exist.",
		  "expose-new: its directory must exist");
	one_error("expose-new=./listed/..\n",
		  ".py-sandboxes(1): In 'expose-new=./listed/..', path must "
		  "name an entry in a directory.",
		  "expose-new: '..' names no entry");
	/* expose-made=: the entries the pattern names, below its directory
	 * (whether the program made one is the layers' to know) */
	p = parse("expose-made=./listed/tmp*\n");
	is_str(errors(p), "", "expose-made: no errors");
	{
		struct sb_fs_decision d;
		char in[400], below[400], other[400], dot[400], dir[400];
		char top[400];

		snprintf(dir, sizeof(dir), "%s/listed", tmp);
		snprintf(in, sizeof(in), "%s/listed/tmpab12", tmp);
		snprintf(below, sizeof(below), "%s/listed/tmpab12/x/y", tmp);
		snprintf(other, sizeof(other), "%s/listed/a.txt", tmp);
		snprintf(dot, sizeof(dot), "%s/listed/.tmpx", tmp);
		ok(p->exposes.n == 1 && p->exposes.v[0].made &&
			   p->exposes.v[0].entry &&
			   strcmp(p->exposes.v[0].made_dir, dir) == 0 &&
			   strcmp(p->exposes.v[0].pattern, "tmp*") == 0,
		   "expose-made: its real directory and its pattern");
		sb_fs_decide(p, in, in, in, true, &d);
		is_int(d.verdict, SB_FS_ALLOW,
		       "expose-made: a name the pattern matches");
		sb_fs_decide(p, below, below, below, true, &d);
		is_int(d.verdict, SB_FS_ALLOW,
		       "expose-made: what lies below such an entry");
		ok(sb_fs_made_top(d.expose, below, top, sizeof(top)) &&
			   strcmp(top, in) == 0,
		   "expose-made: the entry right in the directory that holds "
		   "a path below it");
		sb_fs_decide(p, other, other, other, false, &d);
		is_int(d.verdict, SB_FS_NOT_EXPOSED,
		       "expose-made: another name in the directory");
		sb_fs_decide(p, dir, dir, dir, false, &d);
		is_int(d.verdict, SB_FS_NOT_EXPOSED,
		       "expose-made: not the directory itself");
	}
	sb_policy_free(p);
	p = parse("expose-made=./listed/*\nexpose-ro=./listed\n");
	{
		struct sb_fs_decision d;
		char dot[400], in[400];

		snprintf(dot, sizeof(dot), "%s/listed/.hidden", tmp);
		snprintf(in, sizeof(in), "%s/listed/x", tmp);
		is_str(errors(p), "", "expose-made: beside a rule of its "
				      "directory, no clash");
		sb_fs_decide(p, in, in, in, false, &d);
		ok(d.expose && !d.expose->made,
		   "expose-made: a rule of the directory itself wins");
		sb_policy_free(p);
		p = parse("expose-made=./listed/*\n");
		sb_fs_decide(p, dot, dot, dot, true, &d);
		is_int(d.verdict, SB_FS_NOT_EXPOSED,
		       "expose-made: '*' never names a dot file");
	}
	sb_policy_free(p);
	one_error("expose-made=./nodir/*\n",
		  ".py-sandboxes(1): In 'expose-made=./nodir/*', the directory "
		  "that holds '*' must exist.",
		  "expose-made: its directory must exist");
	one_error("expose-made=.\n",
		  ".py-sandboxes(1): In 'expose-made=.', path must "
		  "name an entry in a directory.",
		  "expose-made: '.' names no entry");
	p = parse("expose-list=./listed\nexpose-ro=listed\n"
		  "expose-rw=./data\nexpose-list=data\n");
	is_str(errors(p), "", "expose-list: with another mode, no error");
	{
		size_t i, n_list = 0;

		for (i = 0; i < p->exposes.n; i++)
			n_list += p->exposes.v[i].mode == SB_EXPOSE_LIST;
		is_int((int)p->exposes.n, 2, "expose-list: one rule per path");
		is_int((int)n_list, 0, "expose-list: the wider rule stays");
	}
	sb_policy_free(p);
	p = parse("expose-ro=~\n");
	ok(strstr(errors(p), "In 'expose-ro=~', path '") != NULL,
	   "expose: ~ is expanded (HOME=/home/u does not exist here)");
	sb_policy_free(p);
}

static void test_imports(void)
{
	struct sb_policy *p;

	p = parse("python-import=json, os ,re\npython-import=numpy\n"
		  "python-import=os.path\n");
	is_str(errors(p), "", "imports: no errors");
	is_int(p->imports.n, 4, "imports accumulate, items stripped");
	ok(!p->import_all, "not everything");
	is_str(warnings(p),
	       ".py-sandboxes(3): In 'python-import=os.path', 'os.path' never "
	       "matches: rules name top-level modules, use 'os' instead.",
	       "a dotted name warns and names the top-level module");
	sb_policy_free(p);
	p = parse("python-import=81d243bd2c585b0f4821__mypyc, "
		  "_sysconfigdata__linux_x86_64-linux-gnu\n");
	is_str(errors(p), "",
	       "names the import system takes: a leading digit, a '-'");
	is_int(p->imports.n, 2, "both kept");
	sb_policy_free(p);
	p = parse("python-import=-x\n");
	ok(p->errors.n == 1, "a leading '-' is no module name");
	sb_policy_free(p);
	p = parse("python-import=*\n");
	ok(p->import_all, "python-import=* allows every import");
	sb_policy_free(p);
	one_error("python-import=a b\n",
		  ".py-sandboxes(1): In 'python-import=a b', 'a b' is not a "
		  "module name.",
		  "imports: bad name");
	one_error("python-import= , \n",
		  ".py-sandboxes(1): In 'python-import= ,', a module name must "
		  "be set.",
		  "imports: empty");
}

static void test_singles(void)
{
	struct sb_policy *p;
	const char *cli[] = { "os-sandbox=NONE", "port=8000" };
	const char *cli2[] = { "learn=true" };
	const char *cli3[] = { "os-sandbox=none", "os-sandbox=bwrap" };

	p = parse("os-sandbox=LandLock\npy-sandbox=0\nremote-result-guard=off\n"
		  "remote-result-mode=objects\nport=-1\n");
	is_str(errors(p), "", "singles: no errors");
	is_int(p->provider, SB_PROVIDER_LANDLOCK, "os-sandbox lower-cased");
	ok(!p->py_sandbox, "py-sandbox=0 is off");
	ok(!p->result_guard, "remote-result-guard=off");
	is_int(p->result_mode, SB_RESULT_OBJECTS, "remote-result-mode=objects");
	is_int(p->port, -1, "port=-1 picks a port");
	sb_policy_free(p);

	p = parse("python-import=x\n");
	is_int(p->provider, SB_PROVIDER_SUBPROCESS, "default provider");
	ok(p->py_sandbox && p->result_guard, "defaults on");
	is_int(p->result_mode, SB_RESULT_DATA_ONLY, "default data-only");
	ok(p->provider_ref.file == NULL, "default has no ref");
	sb_policy_free(p);

	p = parse_cli("os-sandbox=bwrap\nos-sandbox=firejail\nport=1\n", cli, 2);
	is_str(errors(p), "", "the command line wins over file duplicates");
	is_int(p->provider, SB_PROVIDER_NONE, "value from <arg>");
	is_int(p->port, 8000, "port from <arg>");
	sb_policy_free(p);

	one_error("os-sandbox=bwrap\nos-sandbox=bwrap\n",
		  ".py-sandboxes(1) and .py-sandboxes(2): Multiple os-sandbox "
		  "parameters.",
		  "duplicates in files, even with the same value");
	p = parse_cli(NULL, cli3, 2);
	is_str(errors(p), "<arg> and <arg>: Multiple os-sandbox parameters.",
	       "two different command-line values");
	sb_policy_free(p);
	one_error("os-sandbox=docker\n",
		  ".py-sandboxes(1): Invalid os-sandbox 'docker'.",
		  "unknown provider");
	one_error("os-sandbox=_task\n",
		  ".py-sandboxes(1): Invalid os-sandbox '_task'.",
		  "internal provider names are rejected");
	one_error("py-sandbox=yes\n",
		  ".py-sandboxes(1): Invalid value 'yes' for py-sandbox. Use "
		  "true or false.",
		  "py-sandbox bad value");
	one_error("remote-result-guard=maybe\n",
		  ".py-sandboxes(1): Invalid value 'maybe' for "
		  "remote-result-guard. Use true or false.",
		  "remote-result-guard bad value");
	one_error("remote-result-mode=all\n",
		  ".py-sandboxes(1): Invalid value 'all' for remote-result-mode. "
		  "Use objects or data-only.",
		  "remote-result-mode bad value");
	one_error("port=-2\n", ".py-sandboxes(1): Port must be a positive value",
		  "port negative");
	one_error("port=80x\n", ".py-sandboxes(1): Port must be a positive value",
		  "port junk");
	one_error("port=65536\n",
		  ".py-sandboxes(1): Port must be a positive value",
		  "port out of range");
	p = parse_cli("python-import=x\n", cli2, 1);
	is_str(errors(p),
	       "<arg>: Invalid value 'true' for 'learn'. Use the filename "
	       "instead.",
	       "learn=true on the command line");
	sb_policy_free(p);
	one_error("learn=nodir/x\n",
		  ".py-sandboxes(1): Invalid value 'nodir/x' for 'learn'. The "
		  "parent path must exist.",
		  "learn= parent must exist");
}

/* limit-*: sizes, times and counts; bad values and duplicates. */
static void test_limits(void)
{
	struct sb_policy *p;
	const char *cli[] = { "limit-time=5s" };

	p = parse("limit-memory=512M\nlimit-cpu=10s\nlimit-time=2m\n"
		  "limit-processes=64\nlimit-file-size=100k\n"
		  "limit-open-files=256\n");
	is_str(errors(p), "", "limits: no errors");
	ok(p->any_limit, "limits: any_limit");
	ok(p->limits[SB_LIMIT_MEMORY].value == 512ull << 20, "512M");
	ok(p->limits[SB_LIMIT_CPU].value == 10, "10s");
	ok(p->limits[SB_LIMIT_TIME].value == 120, "2m is 120 s");
	ok(p->limits[SB_LIMIT_PROCESSES].value == 64, "64 processes");
	ok(p->limits[SB_LIMIT_FILE_SIZE].value == 100ull << 10,
	   "100k, lower case");
	ok(p->limits[SB_LIMIT_OPEN_FILES].value == 256, "256 files");
	is_str(p->limits[SB_LIMIT_TIME].rule, "limit-time=2m",
	       "the rule as written");
	is_int((int)p->limits[SB_LIMIT_TIME].ref.line, 3, "its line");
	is_str(sb_limit_key(SB_LIMIT_OPEN_FILES), "limit-open-files",
	       "key name");
	sb_policy_free(p);

	p = parse("limit-time=3\nlimit-memory=4096\nlimit-cpu=1h\n"
		  "limit-file-size=2G\n");
	is_str(errors(p), "", "plain seconds and bytes");
	ok(p->limits[SB_LIMIT_TIME].value == 3, "3 is seconds");
	ok(p->limits[SB_LIMIT_MEMORY].value == 4096, "4096 is bytes");
	ok(p->limits[SB_LIMIT_CPU].value == 3600, "1h");
	ok(p->limits[SB_LIMIT_FILE_SIZE].value == 2ull << 30, "2G");
	ok(p->limits[SB_LIMIT_PROCESSES].value == 0, "unset is 0");
	sb_policy_free(p);

	p = parse("python-import=x\n");
	ok(!p->any_limit, "no limit rule: no limits");
	sb_policy_free(p);

	one_error("limit-memory=12X\n",
		  ".py-sandboxes(1): limit-memory: invalid value '12X', "
		  "expected a whole number of bytes with an optional K, M, G "
		  "or T suffix, such as 512M.",
		  "bad size suffix");
	one_error("limit-memory=1.5G\n",
		  ".py-sandboxes(1): limit-memory: invalid value '1.5G', "
		  "expected a whole number of bytes with an optional K, M, G "
		  "or T suffix, such as 512M.",
		  "no fractions");
	one_error("limit-time=10ms\n",
		  ".py-sandboxes(1): limit-time: invalid value '10ms', "
		  "expected a whole number of seconds with an optional s, m "
		  "or h suffix, such as 30s or 2m.",
		  "bad time suffix");
	one_error("limit-cpu=\n",
		  ".py-sandboxes(1): limit-cpu: invalid value '', expected a "
		  "whole number of seconds with an optional s, m or h suffix, "
		  "such as 30s or 2m.",
		  "empty value");
	one_error("limit-processes=-1\n",
		  ".py-sandboxes(1): limit-processes: invalid value '-1', "
		  "expected a whole number such as 64.",
		  "negative count");
	one_error("limit-open-files=64k\n",
		  ".py-sandboxes(1): limit-open-files: invalid value '64k', "
		  "expected a whole number such as 64.",
		  "a count takes no suffix");
	one_error("limit-time=0\n",
		  ".py-sandboxes(1): limit-time: invalid value '0', a limit "
		  "must be at least 1; leave the rule out for no limit.",
		  "zero");
	one_error("limit-file-size=99999999999T\n",
		  ".py-sandboxes(1): limit-file-size: invalid value "
		  "'99999999999T', the number is too large.",
		  "too large");
	one_error("limit-time=1s\nlimit-time=2s\n",
		  ".py-sandboxes(1) and .py-sandboxes(2): Multiple limit-time "
		  "parameters.",
		  "a limit twice in files");
	one_error("limit-memory =1M\n",
		  ".py-sandboxes(1): Invalid rule 'limit-memory =1M'",
		  "a blank in the key is no limit rule");
	p = parse_cli("limit-time=1s\nlimit-time=2s\n", cli, 1);
	is_str(errors(p), "", "the command line wins over file limits");
	ok(p->limits[SB_LIMIT_TIME].value == 5, "limit-time from <arg>");
	sb_policy_free(p);
}

static void test_learning_and_lock(void)
{
	struct sb_policy *p;
	const char *bare[] = { "learn=" };
	char want[600];

	p = parse(NULL);
	ok(p->learning, "a missing rule file means learning");
	ok(!p->config_exists, "config_exists false");
	is_str(p->learning_why,
	       "learning: the rule file '.py-sandboxes' does not exist",
	       "why learning");
	sb_policy_free(p);

	p = parse("os-sandbox=landlock\n");
	ok(!p->learning, "an existing file enforces");
	is_int(p->provider, SB_PROVIDER_LANDLOCK, "provider kept");
	sb_policy_free(p);

	p = parse_cli("os-sandbox=landlock\n", bare, 1);
	ok(p->learning, "--learn turns learning on");
	is_int(p->provider, SB_PROVIDER_SUBPROCESS,
	       "learning forces subprocess");
	ok(p->provider_forced, "and says so");
	snprintf(want, sizeof(want), "%s/.py-sandboxes", tmp);
	is_str(p->learn_path, want, "a bare --learn writes the rule file");
	sb_policy_free(p);

	p = parse("learn=learned.txt\n");
	snprintf(want, sizeof(want), "%s/learned.txt", tmp);
	is_str(p->learn_path, want, "learn=<bare name> next to the rule file");
	ok(p->learning, "learn=<file> in a file learns");
	sb_policy_free(p);

	p = parse("learn=false\npy-sandbox=false\n");
	ok(p->locked, "learn=false locks");
	is_int(p->lock_ref.line, 1, "lock ref");
	ok(!p->learning, "locked, not learning");
	is_str(errors(p), "", "a lock alone is no error");
	sb_policy_free(p);

	p = parse_cli("learn=false\n", bare, 1);
	is_str(errors(p),
	       ".py-sandboxes(1): learning mode is forbidden, but requested by "
	       "<arg>.",
	       "lock refuses --learn");
	sb_policy_free(p);
	one_error("learn=false\nlearn=false\n",
		  ".py-sandboxes(1) and .py-sandboxes(2): Multiple learn "
		  "parameters.",
		  "two locks");
	one_error("learn=a\nlearn=b\n",
		  ".py-sandboxes(1) and .py-sandboxes(2): Multiple "
		  "learning_path parameters.",
		  "two learning paths");
	p = parse("py-sandbox=false\nlearn=x\n");
	ok(!p->learning, "py-sandbox=false turns learning off");
	sb_policy_free(p);
}

static void test_provider_keys(void)
{
	struct sb_policy *p;

	p = parse("bwrap.share-net=yes\nfirejail.rlimit-as=600m\nqemu.memory=2G\n"
		  "unshare.hostname=box\n");
	is_str(errors(p), "", "provider keys: no errors");
	is_int(p->provider_opts.n, 4, "four provider keys");
	if (p->provider_opts.n == 4) {
		is_int(p->provider_opts.v[0].provider, SB_PROVIDER_BWRAP,
		       "provider");
		is_str(p->provider_opts.v[0].key, "share-net", "key");
		is_str(p->provider_opts.v[0].value, "yes", "value");
	}
	sb_policy_free(p);
	/* --qemu.use_kvm=no arrives as qemu.use-kvm=no: one key */
	p = parse("qemu.use-kvm=no\nqemu.show_boot_console=yes\n"
		  "bwrap.unshare_ipc=\n");
	is_str(errors(p), "", "qemu keys spelt with dashes: no errors");
	is_int(p->provider_opts.n, 3, "three provider keys");
	if (p->provider_opts.n == 3) {
		is_str(p->provider_opts.v[0].key, "use_kvm",
		       "a qemu key's dashes are its underscores");
		is_str(p->provider_opts.v[1].key, "show_boot_console",
		       "a qemu key with underscores stays");
		is_str(p->provider_opts.v[2].key, "unshare_ipc",
		       "another provider's key is passed on as written");
	}
	sb_policy_free(p);
	one_error("bwarp.share-net=yes\n",
		  ".py-sandboxes(1): In 'bwarp.share-net=yes', unknown provider "
		  "'bwarp'. Provider options are <provider>.<key>=<value> with "
		  "a provider among bwrap, firejail, unshare and qemu.",
		  "a misspelt provider is an error");
	one_error("landlock.x=1\n",
		  ".py-sandboxes(1): In 'landlock.x=1', the provider 'landlock' "
		  "takes no options.",
		  "landlock takes no options");
}

static void test_error_order(void)
{
	struct sb_policy *p;
	const char *cli[] = { "bogus=1" };
	struct sb_buf b = { 0 };

	write_file("b.inc", "zzz\n");
	p = parse_cli("yyy\ninclude \"b.inc\"\nxxx\n", cli, 1);
	sb_policy_format_errors(p, &b);
	is_str(b.s,
	       "Syntax error in config files.\n"
	       ".py-sandboxes(1): Invalid rule 'yyy'\n"
	       ".py-sandboxes(3): Invalid rule 'xxx'\n"
	       "<arg>: Invalid rule 'bogus=1'\n"
	       "b.inc(1): Invalid rule 'zzz'",
	       "errors sorted by file then line, all at once");
	sb_policy_free(p);
	sb_buf_free(&b);
}

/* The realistic file of seed-spec 2.9 (includes absent). */
static void test_full_example(void)
{
	static const char example[] =
		"# .py-sandboxes -- policy of my_app (reviewed 2026-09-10)\n"
		"\n"
		"#include \"./.local.py-sandboxes\"  # May be added to .gitignore\n"
		"include \"~/.config/py-sandboxes/user-py-sandboxes.profile\"  # For all project for user\n"
		"include \"/etc/py-sandboxes/global-py-sandboxes.profile\"  # For all the node\n"
		"env=TMPDIR=${TMPDIR:-${TEMP:-${TMP:-/tmp}}}\n"
		"env=*_API_KEY=${*_API_KEY}\n"
		"unenv=OPENAI_API_KEY\n"
		"# <learning_guard_envs>\n"
		"env=DEMO_API_KEY=${DEMO_API_KEY}\n"
		"env=HOME=${HOME}\n"
		"# </learning_guard_envs>\n"
		"ignore=.env\n"
		"ignore=*.log\n"
		"expose-ro=./app\n"
		"expose-ro=./data\n"
		"expose-rw=${TMPDIR:-/tmp}\n"
		"net=DENY|*|10.0.0.0/8|*|OUT\n"
		"net=DENY|*|172.16.0.0/12|*|OUT\n"
		"net=DENY|*|192.168.0.0/16|*|OUT\n"
		"net=ALLOW|TCP|0.0.0.0/32|${PORT:-8000}|IN\n"
		"net=ALLOW|TCP|example.com|443|OUT\n"
		"python-import=importlib, inspect\n"
		"python-import=_socket, abc, argparse, asyncio, base64, codecs, collections\n"
		"python-import=json, logging, os, pathlib, re, socket, ssl, urllib\n"
		"python-import=httpx\n"
		"python-api=ALLOW:threads\n"
		"eval-namespace=closed\n"
		"eval-syntax=arith, compare\n"
		"eval-timeout=2s\n"
		"eval-syntax:rules=arith, compare, conditional\n"
		"eval-call:rules=min, max, round, abs\n"
		"eval-namespace:rules=closed\n"
		"remote-result-mode=data-only\n"
		"py-sandbox=true\n"
		"os-sandbox=${OS_SANDBOX:-subprocess}\n"
		"remote-result-guard=true\n"
		"# learn=false\n"
		"# bwrap.share-net=yes\n";
	struct sb_policy *p;

	make_dir("app");
	p = parse(example);
	is_str(errors(p), "", "seed-spec 2.9 example: no errors");
	is_int(p->exposes.n, 3, "2.9: three exposures");
	/* and the own files: the rule file and its two (absent) includes */
	is_int(p->ignores.n, 5, "2.9: two ignores, and the own files");
	is_int(p->nets.n, 5, "2.9: five net rules (one name, one address)");
	ok(p->nets.n == 5 && !p->nets.v[0].allow && p->nets.v[4].allow,
	   "2.9: DENY rules ordered first");
	is_int(p->pins.n, 1, "2.9: example.com pinned");
	is_int(p->imports.n, 18, "2.9: 18 imports");
	is_int(p->eval_profiles.n, 2, "2.9: two eval profiles");
	is_str(env_get(p, "X_API_KEY"), "kx", "2.9: *_API_KEY forwarded");
	is_str(env_get(p, "HOME"), "/home/u", "2.9: HOME");
	ok(p->api_allow && p->api_allow[sb_api_lookup("threading.Thread.start")],
	   "2.9: threads allowed");
	ok(p->api_allow && !p->api_allow[sb_api_lookup("os.system")],
	   "2.9: os.system denied");
	is_int(p->files.n, 3, "2.9: root and two absent includes");
	sb_policy_free(p);
}

static void test_big_inputs(void)
{
	struct sb_policy *p;
	size_t n = 10u << 20, i;
	char *big = malloc(n + 64);
	struct sb_buf b = { 0 };

	/* a 10 MB line */
	memcpy(big, "python-import=", 14);
	memset(big + 14, 'a', n);
	strcpy(big + 14 + n, "\n");
	p = parse(big);
	is_str(errors(p), "", "a 10 MB line parses");
	is_int(p->imports.n, 1, "as one import");
	sb_policy_free(p);
	free(big);
	/* 10,000 rules */
	for (i = 0; i < 10000; i++)
		sb_buf_printf(&b, "python-import=m%zu\nignore=*.x%zu\n", i, i);
	p = parse(b.s);
	is_str(errors(p), "", "20,000 rules parse");
	is_int(p->imports.n, 10000, "10,000 imports");
	sb_policy_free(p);
	/* past the errors kept (SB_MAX_DIAGS), an error is still an error:
	 * a malformed net= line after them adds no rule */
	b.len = 0;
	for (i = 0; i < SB_MAX_DIAGS + 5; i++)
		sb_buf_puts(&b, "net=bad\n");
	sb_buf_puts(&b, "net=ALLOW|TCP|127.0.0.1|eighty|OUT\n");
	p = parse(b.s);
	is_int(p->errors.n, SB_MAX_DIAGS, "the errors kept are capped");
	is_int(p->errors_dropped, 6, "the others are counted");
	is_int(p->nets.n, 0, "a malformed net= line past the cap adds no rule");
	sb_policy_free(p);
	sb_buf_free(&b);
}

/* issue 21: python-sb's own files become ignore= rules <own-file> */
static void test_own_files(void)
{
	struct sb_policy *p;
	char want[600];
	const char *path;

	write_file(".py-sandboxes.old", "# old\n");
	write_file(".py-sandboxes.old_3", "# old\n");
	write_file(".py-sandboxes.older", "# not a backup\n");
	write_file("inc[1].rules", "# the include\n");
	p = parse("expose-rw=.\ninclude \"./inc[1].rules\"\n");
	is_str(errors(p), "", "own files: no errors");
	is_int(p->ignores.n, 4, "own files: rule file, include, two backups");
	snprintf(want, sizeof(want), "ignore=%s/.py-sandboxes", tmp);
	is_str(p->ignores.n ? p->ignores.v[0].rule : NULL, want,
	       "own files: the rule file first");
	is_str(p->ignores.n ? p->ignores.v[0].ref.file : NULL, SB_REF_OWN,
	       "own files: origin <own-file>");
	snprintf(want, sizeof(want), "ignore=%s/inc[[]1].rules", tmp);
	is_str(p->ignores.n > 3 ? p->ignores.v[3].rule : NULL, want,
	       "own files: a glob character is matched literally");
	path = p->ignores.n > 3 ? sb_own_file(p->arena, &p->ignores.v[3])
				: NULL;
	snprintf(want, sizeof(want), "%s/inc[1].rules", tmp);
	is_str(path, want, "own files: sb_own_file reads the path back");
	ok(p->ignores.n > 3 && sb_fnmatch(p->ignores.v[3].pattern, want),
	   "own files: the pattern matches the include");
	sb_policy_free(p);

	p = parse("expose-rw=./.py-sandboxes\n");
	is_int(p->ignores.n, 2, "own files: an exposure of the file itself "
				"hands it over (the backups stay)");
	sb_policy_free(p);

	p = parse("expose-rw=.\ninclude \"./absent.rules\"\n");
	snprintf(want, sizeof(want),
		 ".py-sandboxes(2): include \"absent.rules\": it does not "
		 "exist, and 'expose-rw=%s' would let the program create it "
		 "and write its own rules; create it (it may be empty), or "
		 "move it out of that tree.",
		 tmp);
	is_str(errors(p), want, "own files: an absent include in a "
				"writable tree is an error");
	sb_policy_free(p);
	p = parse("include \"./absent.rules\"\n");
	is_str(errors(p), "", "own files: not outside a writable tree");
	sb_policy_free(p);
	/* reached through a link (a symlinked $HOME): the exposure is
	 * canonical, so the absent include must be compared canonical too */
	{
		char link[512], target[512];

		make_dir("real");
		snprintf(link, sizeof(link), "%s/link", tmp);
		snprintf(target, sizeof(target), "%s/real", tmp);
		ok(symlink(target, link) == 0,
		   "own files: a link to a directory");
		snprintf(want, sizeof(want), "expose-rw=%s/real\ninclude "
			 "\"./link/absent.rules\"\n", tmp);
		p = parse(want);
		snprintf(want, sizeof(want),
			 ".py-sandboxes(2): include \"link/absent.rules\": it "
			 "does not exist, and 'expose-rw=%s/real' would let the "
			 "program create it and write its own rules; create it "
			 "(it may be empty), or move it out of that tree.",
			 tmp);
		is_str(errors(p), want, "own files: an absent include behind "
					"a link into a writable tree is an "
					"error");
		sb_policy_free(p);
		unlink(link);
		snprintf(link, sizeof(link), "%s/leads-nowhere", tmp);
		ok(symlink("nowhere", link) == 0, "own files: a dangling link");
		p = parse("include \"./leads-nowhere/absent.rules\"\n");
		is_str(errors(p),
		       ".py-sandboxes(1): include \"./leads-nowhere/absent.rules\": "
		       "it does not exist, and its path goes through a "
		       "symbolic link that leads nowhere, so where it would be "
		       "made cannot be known; name the path without the link.",
		       "own files: an absent include behind a dangling link");
		sb_policy_free(p);
		unlink(link);
		rmdir(target);
	}
	unlink(".py-sandboxes.old");
	unlink(".py-sandboxes.old_3");
	unlink(".py-sandboxes.older");
	unlink("inc[1].rules");
}

/* issue 15: a variable absent at enforcement time is named */
static void test_unset_variable(void)
{
	struct sb_policy *p;

	p = parse("net=ALLOW|TCP|${DB_HOST_UNSET}|5432|OUT\n");
	is_str(errors(p),
	       ".py-sandboxes(1): In 'net=ALLOW|TCP||5432|OUT', network part "
	       "must be set. (the variable DB_HOST_UNSET is not set: set it, "
	       "or give a default with ${DB_HOST_UNSET:-value})",
	       "an unset variable is named in its line's error");
	sb_policy_free(p);
	p = parse("net=ALLOW|TCP|${DB_HOST_UNSET:-127.0.0.1}|5432|OUT\n");
	is_str(errors(p), "", "a default is used");
	sb_policy_free(p);
}

/* log-file=: resolved like learn=, checked against the writable trees. */
static void test_log_file(void)
{
	const char *cli[] = { "log-file=logs/cli.jsonl" };
	char rules[1200], want[1200];
	struct sb_policy *p;

	make_dir("logs");
	make_dir("rw");
	make_dir("rw/deep");
	p = parse("log-file=logs/d.jsonl\n");
	snprintf(want, sizeof(want), "%s/logs/d.jsonl", tmp);
	is_str(p->log_path, want, "log-file= relative to the rule file");
	is_int(p->log_ref.line, 1, "log-file= ref");
	is_str(errors(p), "", "log-file= no error");
	sb_policy_free(p);

	p = parse_cli("log-file=logs/d.jsonl\n", cli, 1);
	snprintf(want, sizeof(want), "%s/logs/cli.jsonl", tmp);
	is_str(p->log_path, want, "the command line wins");
	sb_policy_free(p);

	p = parse("python-import=x\n");
	ok(p->log_path == NULL, "no log by default");
	sb_policy_free(p);

	one_error("log-file=\n",
		  ".py-sandboxes(1): Invalid value '' for 'log-file'. Use the "
		  "name of the file the denials are written to.",
		  "log-file= empty");
	one_error("log-file=nodir/x\n",
		  ".py-sandboxes(1): Invalid value 'nodir/x' for 'log-file'. "
		  "The parent path must exist.",
		  "log-file= parent must exist");
	snprintf(want, sizeof(want),
		 ".py-sandboxes(1): Invalid value 'logs' for 'log-file'. "
		 "'%s/logs' is a directory.", tmp);
	one_error("log-file=logs\n", want, "log-file= a directory");
	one_error("log-file=/\n",
		  ".py-sandboxes(1): Invalid value '/' for 'log-file'. It must "
		  "name a file, not a directory.",
		  "log-file=/");
	one_error("log-file=a.jsonl\nlog-file=b.jsonl\n",
		  ".py-sandboxes(1) and .py-sandboxes(2): Multiple log-file "
		  "parameters.",
		  "log-file= twice");

	snprintf(rules, sizeof(rules),
		 "expose-rw=%s/rw\nexpose-ro=%s/rw/deep\nlog-file=rw/deep/l\n",
		 tmp, tmp);
	snprintf(want, sizeof(want),
		 ".py-sandboxes(3): The log file '%s/rw/deep/l' is inside "
		 "'%s/rw', which rule 'expose-rw=%s/rw' from .py-sandboxes(1) "
		 "lets the program write: it could forge or erase the log. Put "
		 "the log file outside every expose-rw= tree.",
		 tmp, tmp, tmp);
	one_error(rules, want, "log-file= below an expose-rw=, even under an "
			       "expose-ro=");
	snprintf(rules, sizeof(rules),
		 "expose-rw=%s/rw\nexpose-ro=%s/logs\nlog-file=logs/l\n", tmp,
		 tmp);
	one_error(rules, "", "log-file= beside an expose-rw= is fine");
	snprintf(want, sizeof(want),
		 ".py-sandboxes(2): The log file '%s/logs/l' is inside '/', "
		 "which rule 'expose-rw=/' from .py-sandboxes(1) lets the "
		 "program write: it could forge or erase the log. Put the log "
		 "file outside every expose-rw= tree.",
		 tmp);
	one_error("expose-rw=/\nlog-file=logs/l\n", want,
		  "log-file= under expose-rw=/");
}

/* log-stderr= and log-max-size=: how refusals are reported. */
static void test_log_reporting(void)
{
	struct sb_policy *p;

	p = parse("python-import=x\n");
	ok(p->log_stderr, "log-stderr on by default");
	ok(p->log_max == SB_LOG_MAX_DEFAULT, "log-max-size 100M by default");
	sb_policy_free(p);
	p = parse("log-stderr=off\nlog-max-size=64K\n");
	ok(!p->log_stderr, "log-stderr=off");
	ok(p->log_max == 65536, "log-max-size=64K");
	is_int(p->log_max_ref.line, 2, "log-max-size= ref");
	is_str(errors(p), "", "no error");
	sb_policy_free(p);
	one_error("log-stderr=maybe\n",
		  ".py-sandboxes(1): Invalid value 'maybe' for log-stderr. Use "
		  "on or off.",
		  "log-stderr= junk");
	one_error("log-max-size=0\n",
		  ".py-sandboxes(1): log-max-size: invalid value '0', it must "
		  "be at least 1.",
		  "log-max-size=0");
	one_error("log-max-size=1X\n",
		  ".py-sandboxes(1): log-max-size: invalid value '1X', expected "
		  "a whole number of bytes with an optional K, M, G or T "
		  "suffix, such as 512M.",
		  "log-max-size= junk");
	one_error("log-stderr=on\nlog-stderr=off\n",
		  ".py-sandboxes(1) and .py-sandboxes(2): Multiple log-stderr "
		  "parameters.",
		  "log-stderr= twice");
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/sb-test-policy-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	test_lexing();
	test_expansion();
	test_include();
	test_env();
	test_files();
	test_imports();
	test_singles();
	test_limits();
	test_learning_and_lock();
	test_log_file();
	test_log_reporting();
	test_provider_keys();
	test_error_order();
	test_full_example();
	test_big_inputs();
	test_own_files();
	test_unset_variable();
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'",
			 tmp, tmp);
		if (system(cmd) != 0)
			diag("could not remove %s", tmp);
	}
	return tap_done();
}
