/* test_mountplan.c - the plan of the namespace providers' new root
 * (src/kernel/mountplan.c) on a tree of its own in a temporary directory:
 * what the rules expose is bound (read-only, or writable for expose-rw=),
 * its parents are directories and links as on the host, expose-list= is
 * an empty directory, ignore= masks what it hides below an exposed tree,
 * binds come in mount order, a missing exposure stops the plan naming its
 * rule, and a source that changed between the plan and its opening is
 * refused. Also the unshare.* options and the hosts file. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountplan.h"
#include "policy.h"
#include "rulefile.h"
#include "tap.h"

static char top[PATH_MAX]; /* the temporary directory, canonical */

static struct sb_policy *parse_rules(const char *rules)
{
	return parse_rule_file(top, rules, NULL);
}

static void make(const char *rel, bool dir)
{
	char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	if (dir)
		mkdir(path, 0755);
	else
		close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
}

/* The op of this kind for top/rel, or NULL. */
static const struct sb_ns_op *find(const struct sb_ns_op *ops, size_t n,
				   enum sb_ns_op_kind kind, const char *rel)
{
	char path[2 * PATH_MAX];
	size_t i;

	snprintf(path, sizeof(path), "%s%s%s", top, *rel ? "/" : "", rel);
	for (i = 0; i < n; i++)
		if (ops[i].kind == kind && strcmp(ops[i].path, path) == 0)
			return &ops[i];
	return NULL;
}

struct plan_case {
	const char *name;
	const char *rules; /* '@' stands for the temporary directory */
	enum sb_ns_op_kind kind;
	const char *rel; /* the op expected (or not) for top/rel */
	bool present, writable, user;
};

/* rules with '@' replaced by top */
static const char *at(struct sb_arena *a, const char *s)
{
	struct sb_buf b = { 0 };
	const char *r;

	for (; *s; s++)
		if (*s == '@')
			sb_buf_puts(&b, top);
		else
			sb_buf_add(&b, s, 1);
	r = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return r;
}

static const struct plan_case cases[] = {
	{ "expose-ro binds read-only, as the user's rule",
	  "expose-ro=@/data\n", SB_NS_BIND, "data", true, false, true },
	{ "expose-rw binds writable", "expose-rw=@/out\n", SB_NS_BIND, "out",
	  true, true, true },
	{ "a file exposed alone is bound alone", "expose-ro=@/data/a.txt\n",
	  SB_NS_BIND, "data/a.txt", true, false, true },
	{ "...and its directory is not bound", "expose-ro=@/data/a.txt\n",
	  SB_NS_BIND, "data", false, false, false },
	{ "...but made, as a directory", "expose-ro=@/data/a.txt\n",
	  SB_NS_DIR, "data", true, false, false },
	{ "a path through a link is bound where the link leads",
	  "expose-ro=@/link/a.txt\n", SB_NS_BIND, "data/a.txt", true, false,
	  true },
	{ "the working directory is a directory of the new root",
	  "expose-ro=@/data/a.txt\n", SB_NS_DIR, "", true, false, false },
	{ "expose-list: an empty directory, no bind", "expose-list=@/data\n",
	  SB_NS_DIR, "data", true, false, false },
	{ "...never a bind", "expose-list=@/data\n", SB_NS_BIND, "data",
	  false, false, false },
	{ "ignore= masks a file below an exposed tree",
	  "expose-ro=@/data\nignore=*.key\n", SB_NS_MASK, "data/s.key", true,
	  false, false },
	{ "...and not what it does not match",
	  "expose-ro=@/data\nignore=*.key\n", SB_NS_MASK, "data/a.txt",
	  false, false, false },
	{ "a hidden directory is masked whole",
	  "expose-ro=@/data\nignore=@/data/secret\n", SB_NS_MASK,
	  "data/secret", true, false, false },
	{ "nothing unexposed is bound", "expose-ro=@/data\n", SB_NS_BIND,
	  "out", false, false, false },
};

static void test_cases(void)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		const struct plan_case *c = &cases[i];
		struct sb_arena *a = sb_arena_new();
		struct sb_policy *p = parse_rules(at(a, c->rules));
		struct sb_kernel_ctx ctx = { .cwd = top };
		const struct sb_ns_op *o;
		struct sb_ns_op *ops = NULL;
		const char *err = NULL;
		size_t n = 0;

		if (!p) {
			ok(false, "%s: the rules parse", c->name);
			sb_arena_free(a);
			continue;
		}
		ok(sb_ns_plan(a, p, &ctx, &ops, &n, &err) == 0, "%s: planned%s%s",
		   c->name, err ? ": " : "", err ? err : "");
		o = find(ops, n, c->kind, c->rel);
		ok((o != NULL) == c->present, "%s", c->name);
		if (o && c->kind == SB_NS_BIND)
			ok(o->writable == c->writable && o->user == c->user,
			   "%s: writable %d, the user's %d", c->name,
			   o->writable, o->user);
		sb_policy_free(p);
		sb_arena_free(a);
	}
}

static void test_order_and_errors(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_policy *p =
		parse_rules(at(a, "expose-ro=@/data\nexpose-rw=@/data/sub\n"
				  "expose-ro=@/out\n"));
	struct sb_kernel_ctx ctx = { .cwd = top };
	struct sb_ns_op *ops = NULL;
	const char *err = NULL;
	size_t n = 0, i;
	bool ordered = true;
	int r;
	char moved[PATH_MAX + 16], back[PATH_MAX + 16];

	ok(p && sb_ns_plan(a, p, &ctx, &ops, &n, &err) == 0, "planned");
	/* by kind, then a parent before what is mounted below it */
	for (i = 1; i < n; i++)
		if (ops[i - 1].kind > ops[i].kind ||
		    (ops[i - 1].kind == ops[i].kind &&
		     strlen(ops[i - 1].path) > strlen(ops[i].path)))
			ordered = false;
	ok(ordered, "ops in mount order");
	ok(find(ops, n, SB_NS_BIND, "data/sub") &&
		   find(ops, n, SB_NS_BIND, "data/sub")->writable,
	   "a writable tree inside a read-only one keeps its own bind");
	/* the sources are opened later: a tree replaced in between by a file
	 * is refused, naming the rule */
	snprintf(moved, sizeof(moved), "%s/out", top);
	snprintf(back, sizeof(back), "%s/out.away", top);
	rename(moved, back);
	close(open(moved, O_WRONLY | O_CREAT, 0644));
	r = sb_ns_plan_open(a, ops, n, &err);
	ok(r < 0 && err && strstr(err, "changed since the policy was read") &&
		   strstr(err, "expose-ro="),
	   "a source that changed is refused: %s", err ? err : "(none)");
	for (i = 0; i < n; i++)
		if (ops[i].fd >= 0)
			close(ops[i].fd);
	unlink(moved);
	rename(back, moved);
	sb_policy_free(p);

	/* an exposure the user wrote must exist when the plan is made */
	make("gone", true);
	p = parse_rules(at(a, "expose-ro=@/gone\n"));
	snprintf(moved, sizeof(moved), "%s/gone", top);
	rmdir(moved);
	err = NULL;
	r = p ? sb_ns_plan(a, p, &ctx, &ops, &n, &err) : 0;
	ok(r < 0 && err && strstr(err, "gone"),
	   "an exposure gone before the plan stops it: %s",
	   err ? err : "(none)");
	sb_policy_free(p);
	sb_arena_free(a);
}

static void test_options_and_hosts(void)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_policy *p = parse_rules("unshare.hostname=box\n");
	const char *host = NULL, *err = NULL;
	int r;

	ok(p && sb_ns_options(a, p, &host, &err) == 0 && host &&
		   strcmp(host, "box") == 0,
	   "unshare.hostname names the host");
	sb_policy_free(p);
	p = parse_rules("");
	ok(p && sb_ns_options(a, p, &host, &err) == 0 &&
		   strcmp(host, "sandbox") == 0,
	   "the host name is sandbox by default");
	ok(p && strstr(sb_ns_hosts(a, p), "127.0.0.1\tlocalhost\n") != NULL,
	   "the hosts file names localhost");
	sb_policy_free(p);
	p = parse_rules("unshare.bogus=1\n");
	err = NULL;
	r = p ? sb_ns_options(a, p, &host, &err) : 0;
	ok(r < 0 && err && strstr(err, "unshare.bogus"),
	   "an unknown unshare.* key is named: %s", err ? err : "(none)");
	sb_policy_free(p);
	sb_arena_free(a);
}

int main(void)
{
	char tmpl[] = "/tmp/pysb-mountplan-XXXXXX";
	char link[PATH_MAX + 16];

	if (!mkdtemp(tmpl) || !realpath(tmpl, top))
		return 1;
	make("data", true);
	make("data/a.txt", false);
	make("data/s.key", false);
	make("data/secret", true);
	make("data/secret/x", false);
	make("data/sub", true);
	make("out", true);
	snprintf(link, sizeof(link), "%s/link", top);
	if (symlink("data", link) < 0)
		return 1;
	test_cases();
	test_order_and_errors();
	test_options_and_hosts();
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
		if (system(cmd) != 0)
			diag("could not remove %s", top);
	}
	return tap_done();
}
