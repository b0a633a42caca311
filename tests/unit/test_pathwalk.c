/* test_pathwalk.c - the file guard's path walker (guard/pathwalk.c) on a
 * real tree of directories and symlinks in a temporary directory: '..'
 * after a symlink (the kernel's parent, not the lexical one), relative and
 * absolute links, chains, dangling links and loops, trailing slashes,
 * paths too long to walk, a descriptor as the base, and the directory
 * cache: what it remembers, what it must not (an incomplete directory, the
 * last component, anything while a change is in flight) and that a forget
 * (and a wrapped generation) makes it walk again. In the tables '@'
 * stands for the temporary directory. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathwalk.h"
#include "tap.h"
#include "util.h"

static char top[PATH_MAX]; /* the temporary directory, canonical */

/* 's' with '@' replaced by the temporary directory */
static const char *at(char buf[PATH_MAX], const char *s)
{
	size_t n = 0;

	for (; *s && n + strlen(top) + 1 < PATH_MAX; s++) {
		if (*s == '@') {
			memcpy(buf + n, top, strlen(top));
			n += strlen(top);
		} else {
			buf[n++] = *s;
		}
	}
	buf[n] = '\0';
	return buf;
}

static void mk(const char *what, const char *target, const char *path)
{
	char p[PATH_MAX], t[PATH_MAX];
	int r;

	at(p, path);
	if (strcmp(what, "dir") == 0)
		r = mkdir(p, 0755);
	else if (strcmp(what, "file") == 0)
		r = close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	else
		r = symlink(at(t, target), p);
	if (r < 0) {
		perror(p);
		exit(1);
	}
}

/* Point the symlink 'path' at 'target' (relative), atomically: a new link
 * renamed over it. */
static void repoint(const char *path, const char *target)
{
	char p[PATH_MAX], tmp[PATH_MAX + 8];

	snprintf(tmp, sizeof(tmp), "%s.new", at(p, path));
	if (symlink(target, tmp) < 0 || rename(tmp, p) < 0) {
		perror(tmp);
		exit(1);
	}
}

static void make_tree(void)
{
	static const char *const tree[][3] = {
		{ "dir", NULL, "@/a" },
		{ "dir", NULL, "@/a/b" },
		{ "dir", NULL, "@/a/b/sub" },
		{ "file", NULL, "@/a/b/file" },
		{ "link", "a", "@/la" },            /* relative */
		{ "link", "@/a/b", "@/labs" },      /* absolute */
		{ "link", "a/b/file", "@/lf" },     /* to a file */
		{ "link", "nowhere/x", "@/dangling" },
		{ "link", "loop2", "@/loop1" },
		{ "link", "loop1", "@/loop2" },
		{ "link", "..", "@/a/up" },         /* to its parent */
		{ "link", "la/b", "@/chain" },      /* through a link */
		{ "link", "a/b", "@/x" },           /* repointed below */
		{ "link", "a/b", "@/y" },
		{ "link", "a/b", "@/w" },
		{ "link", "file", "@/a/b/last" },
	};
	char tmpl[] = "/tmp/pysb-pathwalk-XXXXXX";
	size_t i;

	if (!mkdtemp(tmpl) || !realpath(tmpl, top)) {
		perror("mkdtemp");
		exit(1);
	}
	for (i = 0; i < SB_ARRAY_LEN(tree); i++)
		mk(tree[i][0], tree[i][1], tree[i][2]);
}

/* One locate relative to the temporary directory: its status, and the
 * canonical form (the decision) and the absolute one (the messages). */
static void check(struct sb_dir_cache *dc, const char *path, bool follow,
		  int want_rc, const char *want_canon, const char *want_abs,
		  const char *name)
{
	struct sb_fs_paths fp;
	char p[PATH_MAX], w[PATH_MAX];
	int rc = sb_path_locate(dc, at(p, path), -1, top, follow, &fp);

	is_int(rc, want_rc, "%s: status", name);
	if (rc == 0 && want_canon)
		is_str(fp.canon, at(w, want_canon), "%s: canonical", name);
	if (rc == 0 && want_abs)
		is_str(fp.abs, at(w, want_abs), "%s: absolute", name);
}

static void test_walk(void)
{
	static const struct {
		const char *path;
		bool follow;
		int rc;
		const char *canon, *abs, *name;
	} cases[] = {
		{ "a/b/file", true, 0, "@/a/b/file", "@/a/b/file", "plain" },
		{ "a/./b//file", true, 0, "@/a/b/file", "@/a/b/file",
		  "dots and double slashes" },
		{ "a/b/../b/file", true, 0, "@/a/b/file", "@/a/b/file",
		  "'..' in a real directory" },
		{ "la/b/file", true, 0, "@/a/b/file", "@/la/b/file",
		  "relative link: the message keeps the spelling" },
		{ "la", false, 0, "@/la", "@/la", "final link not followed" },
		{ "la", true, 0, "@/a", "@/la", "final link followed" },
		{ "la/", false, 0, "@/a", "@/la",
		  "a trailing slash follows the link" },
		{ "a/b/", true, 0, "@/a/b", "@/a/b", "trailing slash" },
		{ "la/..", true, 0, "@", "@", "'..' after a link to a/" },
		{ "labs/../x2", true, 0, "@/a/x2", "@/x2",
		  "'..' after an absolute link: the kernel's parent, not "
		  "the lexical one" },
		{ "lf", true, 0, "@/a/b/file", "@/lf", "link to a file" },
		{ "lf", false, 0, "@/lf", "@/lf", "link to a file, itself" },
		{ "dangling", true, 0, "@/nowhere/x", "@/dangling",
		  "a dangling link is judged where it points" },
		{ "missing/../a/b/file", true, 0, "@/a/b/file",
		  "@/a/b/file", "after a missing component, as written" },
		{ "newdir/newfile", true, 0, "@/newdir/newfile",
		  "@/newdir/newfile", "what a call would create" },
		{ "loop1", true, -1, NULL, NULL, "a loop" },
		{ "loop1", false, 0, "@/loop1", "@/loop1",
		  "a loop, not followed" },
		{ "loop1/x", true, -1, NULL, NULL, "a loop in the directory" },
		{ "a/up/a/b/file", true, 0, "@/a/b/file", "@/a/up/a/b/file",
		  "a link to '..'" },
		{ "chain/file", true, 0, "@/a/b/file", "@/chain/file",
		  "a chain of links" },
		{ "@/la/b/file", true, 0, "@/a/b/file", "@/la/b/file",
		  "absolute: the base is not used" },
		{ ".", true, 0, "@", "@", "the base itself" },
		{ "/", true, 0, "/", "/", "the root" },
		{ "/..", true, 0, "/", "/", "above the root" },
	};
	struct sb_dir_cache dc = { 0 };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++)
		check(&dc, cases[i].path, cases[i].follow, cases[i].rc,
		      cases[i].canon, cases[i].abs, cases[i].name);
}

static void test_long(void)
{
	struct sb_dir_cache dc = { 0 };
	struct sb_fs_paths fp;
	static char path[2 * PATH_MAX];
	size_t n = 0;

	/* one component longer than a path may be */
	memset(path, 'n', PATH_MAX + 10);
	path[PATH_MAX + 10] = '\0';
	is_int(sb_path_locate(&dc, path, -1, top, true, &fp), -1,
	       "a component past PATH_MAX");
	/* short components adding up past PATH_MAX */
	while (n + 4 < sizeof(path) - 1) {
		memcpy(path + n, "a/b/", 4);
		n += 4;
	}
	path[n] = '\0';
	is_int(sb_path_locate(&dc, path, -1, top, true, &fp), -1,
	       "a path past PATH_MAX");
	/* a directory part longer than a cache key: walked, not cached */
	n = 0;
	while (n < 3 * SB_DIR_CACHE_LEN) {
		memcpy(path + n, "a/b/../../", 10);
		n += 10;
	}
	strcpy(path + n, "a/b/file");
	is_int(sb_path_locate(&dc, path, -1, top, true, &fp), 0,
	       "a directory part longer than a cache key");
	is_str(fp.canon, at(path, "@/a/b/file"),
	       "a directory part longer than a cache key: canonical");
}

static void test_bases(void)
{
	struct sb_dir_cache dc = { 0 };
	struct sb_fs_paths fp;
	char p[PATH_MAX], cwd[PATH_MAX];
	int fd = open(at(p, "@/la"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	is_int(sb_path_locate(&dc, "b/file", fd, NULL, true, &fp), 0,
	       "dir_fd: status");
	is_str(fp.canon, at(p, "@/a/b/file"), "dir_fd: the kernel's name");
	close(fd);
	is_int(sb_path_locate(&dc, "b/file", 1000, NULL, true, &fp), -1,
	       "a closed dir_fd cannot be located");
	if (!getcwd(cwd, sizeof(cwd)) || chdir(top) < 0) {
		ok(0, "chdir");
		return;
	}
	is_int(sb_path_locate(&dc, "la/b", -1, NULL, true, &fp), 0,
	       "the cwd: status");
	is_str(fp.canon, at(p, "@/a/b"), "the cwd: canonical");
	is_str(fp.abs, at(p, "@/la/b"), "the cwd: absolute");
	if (chdir(cwd) < 0)
		ok(0, "chdir back");
}

static void test_cache(void)
{
	static struct sb_dir_cache dc, fresh;

	/* a complete directory is remembered until forgotten */
	check(&dc, "x/file", true, 0, "@/a/b/file", NULL, "x: first walk");
	repoint("@/x", "a");
	check(&dc, "x/file", true, 0, "@/a/b/file", NULL,
	      "x repointed: the cache still answers (it is one)");
	sb_dir_cache_forget(&dc);
	check(&dc, "x/file", true, 0, "@/a/file", NULL,
	      "x repointed, forgotten: walked again");

	/* while a change is in flight nothing is remembered */
	dc.changing++;
	check(&dc, "y/file", true, 0, "@/a/b/file", NULL, "y, changing");
	repoint("@/y", "a");
	check(&dc, "y/file", true, 0, "@/a/file", NULL,
	      "y repointed during a change: not remembered");
	dc.changing--;

	/* an incomplete directory is never remembered */
	check(&dc, "nd/file", true, 0, "@/nd/file", NULL, "nd missing");
	mk("link", "a/b", "@/nd");
	check(&dc, "nd/file", true, 0, "@/a/b/file", NULL,
	      "nd created: walked again without a forget");

	/* the last component is never remembered */
	check(&dc, "a/b/last", true, 0, "@/a/b/file", NULL, "last");
	repoint("@/a/b/last", "sub");
	check(&dc, "a/b/last", true, 0, "@/a/b/sub", NULL,
	      "last repointed: walked again without a forget");

	/* a generation that wraps does not revive the slots of its first
	 * round */
	check(&fresh, "w/file", true, 0, "@/a/b/file", NULL, "w: first walk");
	repoint("@/w", "a");
	fresh.gen = UINT_MAX;
	sb_dir_cache_forget(&fresh);
	is_int((int)fresh.gen, 0, "the generation wrapped");
	check(&fresh, "w/file", true, 0, "@/a/file", NULL,
	      "after the wrap: walked again");
}

/* The working directory is remembered like a directory (until forgotten,
 * never while a change is in flight); an entry seen to be no link is
 * appended to its directory as it is. */
static void test_cwd_and_entry(void)
{
	static struct sb_dir_cache dc;
	struct sb_fs_paths fp;
	char p[PATH_MAX], cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)) || chdir(top) < 0) {
		ok(0, "chdir");
		return;
	}
	is_int(sb_path_locate(&dc, "la/b", -1, NULL, true, &fp), 0,
	       "cwd remembered: status");
	is_str(fp.canon, at(p, "@/a/b"), "cwd remembered: canonical");
	if (chdir("a") < 0)
		ok(0, "chdir a");
	sb_path_locate(&dc, "b", -1, NULL, true, &fp);
	is_str(fp.canon, at(p, "@/b"),
	       "a chdir not told: the remembered cwd still answers");
	sb_dir_cache_forget(&dc);
	sb_path_locate(&dc, "b", -1, NULL, true, &fp);
	is_str(fp.canon, at(p, "@/a/b"), "forgotten: the cwd read again");
	sb_dir_cache_forget(&dc); /* as a changing call begins */
	dc.changing++;
	if (chdir(top) < 0)
		ok(0, "chdir top");
	sb_path_locate(&dc, "a", -1, NULL, true, &fp);
	is_str(fp.canon, at(p, "@/a"), "a chdir in flight: read again");
	if (chdir("a") < 0)
		ok(0, "chdir a again");
	sb_path_locate(&dc, "b", -1, NULL, true, &fp);
	is_str(fp.canon, at(p, "@/a/b"),
	       "nothing remembered while the change is in flight");
	dc.changing--;

	is_int(sb_path_locate_entry(&dc, "../la/b/file", &fp), 0,
	       "entry: status");
	is_str(fp.canon, at(p, "@/a/b/file"),
	       "entry: the directory resolved, the name as it is");
	is_str(fp.abs, at(p, "@/la/b/file"), "entry: absolute");
	is_int(sb_path_locate_entry(&dc, "file", &fp), 0, "entry in the cwd");
	is_str(fp.canon, at(p, "@/a/file"), "entry in the cwd: canonical");
	is_int(sb_path_locate_entry(&dc, at(p, "@/la/b/file"), &fp), 0,
	       "absolute entry");
	is_str(fp.canon, at(p, "@/a/b/file"), "absolute entry: canonical");
	is_int(sb_path_locate_entry(&dc, "/etc", &fp), 0, "entry at the root");
	is_str(fp.canon, "/etc", "entry at the root: canonical");
	is_int(sb_path_locate_entry(&dc, "b/..", &fp), -1, "'..' is no entry");
	is_int(sb_path_locate_entry(&dc, "b/.", &fp), -1, "'.' is no entry");
	is_int(sb_path_locate_entry(&dc, "b/", &fp), -1,
	       "a trailing slash is no entry");
	is_int(sb_path_locate_entry(&dc, "/", &fp), -1, "the root is no entry");

	/* a wrapped generation forgets the cwd too */
	dc.gen = UINT_MAX;
	sb_dir_cache_forget(&dc);
	ok(dc.cwd[0] == '\0', "the generation wrapped: no cwd remembered");
	if (chdir(cwd) < 0)
		ok(0, "chdir back");
}

static void remove_tree(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
}

int main(void)
{
	make_tree();
	test_walk();
	test_long();
	test_bases();
	test_cache();
	test_cwd_and_entry();
	remove_tree();
	return tap_done();
}
