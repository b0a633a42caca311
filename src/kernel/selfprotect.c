/* selfprotect.c - python-sb's own files are never the program's, and what
 * is read-only stays so inside a writable tree, under os-sandbox=landlock
 * too (issue 21). Landlock only grants, and its grants add up: it cannot
 * take a file back out of a tree that expose-rw= hands over, so an
 * expose-ro= (or an implicit read-only path: the interpreter's tree, a
 * venv's site-packages, the guard) inside an expose-rw= tree would be
 * writable to native code, and ignore= is not enforced by it. So before
 * the ruleset, the process that becomes the program enters a private mount
 * namespace (with a user namespace that maps its own uid and gid onto
 * themselves when it is not root), in which each own file and each
 * read-only path that a writable exposure covers is a read-only bind mount
 * of itself: a write, truncate or chmod gets EROFS, a rename over it or an
 * unlink EBUSY, a hard link EXDEV. A writable exposure inside such a
 * read-only one is bound writable again. Every directory on the way to
 * them whose parent the program may write is bound onto itself (pinned),
 * so that it cannot be renamed away and replaced: up to the outermost
 * writable exposure, not the innermost, since two nested expose-rw= make
 * the inner tree's root renamable. Landlock then forbids every mount and
 * umount. With nothing to keep, no namespace is made. When none can be
 * had, the run stops (fail closed) with the ways out. It must not fork or
 * exec; the caller reports and exits.
 */
#include "selfprotect.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "landlock.h"

#define HINT_OWN                                                               \
	"move the rule file out of the tree that expose-rw= hands over "     \
	"(and name it with --pysandboxes-config=), or expose the tree "      \
	"read-only; 'expose-rw=' naming the file itself hands it over to "   \
	"the program on purpose"

enum keep_how {
	KEEP_PIN, /* bound onto itself: it cannot be renamed or removed */
	KEEP_RW,  /* a writable exposure inside a read-only bind, writable */
	KEEP_RO,  /* bound read-only onto itself, the tree below too */
};

struct keep {
	const char *path;
	const char *why; /* for explain and errors */
	enum keep_how how;
	bool host_ro; /* read-only on the host already (KEEP_RW) */
};

struct protect_plan {
	SB_VEC(struct keep) v;
};

/* Does an expose-rw= hold 'path' (strict: below it, not the path itself)?
 * Landlock's grants add up: any one of them makes it writable. */
static bool writable(const struct sb_policy *p, const char *path, bool strict)
{
	size_t i;

	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];

		if (e->mode == SB_EXPOSE_RW && sb_path_under(path, e->path) &&
		    (!strict || strcmp(path, e->path) != 0))
			return true;
	}
	return false;
}

/* Does a rule name 'path' itself (an implicit path it names decides)? */
static bool named(const struct sb_policy *p, const char *path,
		  enum sb_expose_mode mode, bool any_mode)
{
	size_t i;

	for (i = 0; i < p->exposes.n; i++)
		if ((any_mode || p->exposes.v[i].mode == mode) &&
		    strcmp(p->exposes.v[i].path, path) == 0)
			return true;
	return false;
}

static struct keep *find(struct protect_plan *pl, const char *path)
{
	size_t i;

	for (i = 0; i < pl->v.n; i++)
		if (strcmp(pl->v.v[i].path, path) == 0)
			return &pl->v.v[i];
	return NULL;
}

/* A stronger keeping of the same path wins: read-only over a pin. */
static void keep(struct sb_arena *a, struct protect_plan *pl,
		 const char *path, const char *why, enum keep_how how)
{
	struct keep *k = find(pl, path);
	struct statvfs sv;

	if (k) {
		if (how > k->how) {
			k->how = how;
			k->why = why;
		}
		return;
	}
	k = SB_VEC_PUSH(a, pl->v);
	k->path = path;
	k->why = why;
	k->how = how;
	k->host_ro = statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* What to name when no namespace can be had: the first path kept. */
static const struct keep *first_kept(const struct protect_plan *pl)
{
	size_t i;

	for (i = 0; i < pl->v.n; i++)
		if (pl->v.v[i].how == KEEP_RO)
			return &pl->v.v[i];
	return &pl->v.v[0];
}

/* A read-only path that Landlock would let the program write. */
static void keep_readonly(struct sb_arena *a, const struct sb_policy *p,
			  struct protect_plan *pl, const char *path,
			  const char *why)
{
	struct stat st;

	if (!writable(p, path, true) || named(p, path, SB_EXPOSE_RW, false))
		return;
	if (lstat(path, &st) < 0)
		return; /* gone: Landlock grants nothing there either */
	keep(a, pl, path, why, KEEP_RO);
}

static int by_length(const void *x, const void *y)
{
	size_t a = strlen(((const struct keep *)x)->path);
	size_t b = strlen(((const struct keep *)y)->path);

	return a < b ? -1 : a > b;
}

/* Every directory on the way to 'path' whose parent is writable, 'path'
 * itself included: renamed away, it could be replaced by the program's
 * own. A path of the plan is a mount point already. */
static void pin_the_way(struct sb_arena *a, const struct sb_policy *p,
			struct protect_plan *pl, const char *path)
{
	char *dir = sb_arena_strdup(a, path), *slash;

	while (strcmp(dir, "/") != 0 && (slash = strrchr(dir, '/'))) {
		const char *d = sb_arena_strdup(a, dir);

		slash[slash == dir] = '\0'; /* "/x": its parent is "/" */
		if (writable(p, dir, false) && !find(pl, d))
			keep(a, pl, d, "a directory on the way", KEEP_PIN);
	}
}

static int make_plan(struct sb_arena *a, const struct sb_policy *p,
		     const struct sb_kernel_ctx *ctx, struct protect_plan *pl,
		     const char **err)
{
	struct sb_landlock_path *imp = NULL;
	char canon[PATH_MAX];
	struct stat st;
	size_t i, n = 0, k;

	/* nothing is writable without an expose-rw= rule: no walk of the
	 * interpreter's trees at each start for an empty plan */
	for (i = 0; i < p->exposes.n; i++)
		if (p->exposes.v[i].mode == SB_EXPOSE_RW)
			break;
	if (i == p->exposes.n)
		return 0;
	for (i = 0; i < p->ignores.n; i++) {
		const struct sb_ignore *ig = &p->ignores.v[i];
		const char *path, *root;

		path = sb_own_file(a, ig);
		if (!path)
			continue;
		root = sb_policy_writable_root(p, path);
		if (!root)
			continue;
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			/* an absent include the program could create */
			*err = sb_arena_printf(
				a,
				"python-sb's own file %s is not there, and "
				"the program could create it under '%s'",
				path, root);
			return -1;
		}
		keep(a, pl, path, "python-sb's own file", KEEP_RO);
	}
	/* expose-ro= only: an expose-list= decides for its directory alone,
	 * and the files under it follow the expose-rw= that holds them, as
	 * in the guard (a read-only bind would make them read-only too) */
	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];

		if (e->mode == SB_EXPOSE_RO)
			keep_readonly(a, p, pl, e->path, e->rule);
	}
	if (ctx)
		sb_landlock_implicit(a, ctx, &imp, &n);
	for (i = 0; i < n; i++) {
		/* the script and /dev/null are the program's to write where
		 * a rule lets it */
		if (imp[i].use == SB_LL_SCRIPT || imp[i].use == SB_LL_READWRITE)
			continue;
		/* Landlock's rule lands where the links lead */
		if (!realpath(imp[i].path, canon) || named(p, canon, 0, true))
			continue;
		keep_readonly(a, p, pl, sb_arena_strdup(a, canon),
			      "an implicit read-only path");
	}
	/* python-sb itself, which the next run starts */
	if (realpath("/proc/self/exe", canon))
		keep_readonly(a, p, pl, sb_arena_strdup(a, canon),
			      "python-sb's own program");
	/* a writable exposure below a read-only bind is writable again */
	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];

		/* expose-made= binds nothing: what the program makes there
		 * is made through the supervisor, as its mount shows it */
		for (k = 0; e->mode == SB_EXPOSE_RW && !e->made && k < pl->v.n;
		     k++)
			if (pl->v.v[k].how == KEEP_RO &&
			    strcmp(pl->v.v[k].path, e->path) != 0 &&
			    sb_path_under(e->path, pl->v.v[k].path)) {
				keep(a, pl, e->path, e->rule, KEEP_RW);
				break;
			}
	}
	for (i = 0, n = pl->v.n; i < n; i++)
		pin_the_way(a, p, pl, pl->v.v[i].path);
	/* the outer first: a bind copies the mounts below it */
	if (pl->v.n)
		qsort(pl->v.v, pl->v.n, sizeof(*pl->v.v), by_length);
	return 0;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int enter_namespace(struct sb_arena *a)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid == 0)
		return unshare(CLONE_NEWNS);
	/* the program keeps its ids; the capabilities this namespace gives
	 * are gone at its execve (it is not uid 0 there) */
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	if (write_text("/proc/self/setgroups", "deny") < 0 ||
	    write_text("/proc/self/uid_map",
		       sb_arena_printf(a, "%u %u 1\n", (unsigned)uid,
				       (unsigned)uid)) < 0 ||
	    write_text("/proc/self/gid_map",
		       sb_arena_printf(a, "%u %u 1\n", (unsigned)gid,
				       (unsigned)gid)) < 0)
		return -1;
	return 0;
}

/* Bind the plan's path onto itself (with the mounts below it); read-only:
 * them all, keeping the flags a user namespace locks (mount_setattr
 * changes only the one it names); writable again: that mount alone, and
 * only when the host's was (a read-only host mount stays so). */
static int bind_self(const struct keep *k)
{
	struct mount_attr attr = { 0 };

	if (mount(k->path, k->path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	switch (k->how) {
	case KEEP_PIN:
		return 0;
	case KEEP_RO:
		attr.attr_set = MOUNT_ATTR_RDONLY;
		return mount_setattr(AT_FDCWD, k->path, AT_RECURSIVE, &attr,
				     sizeof(attr));
	case KEEP_RW:
		if (k->host_ro)
			return 0;
		attr.attr_clr = MOUNT_ATTR_RDONLY;
		return mount_setattr(AT_FDCWD, k->path, 0, &attr,
				     sizeof(attr));
	}
	return 0;
}

int sb_selfprotect_apply(struct sb_arena *a, const struct sb_policy *p,
			 const struct sb_kernel_ctx *ctx, const char **err,
			 const char **hint)
{
	struct protect_plan pl = { 0 };
	char cwd[PATH_MAX];
	size_t i;

	*hint = NULL;
	if (make_plan(a, p, ctx, &pl, err) < 0) {
		*hint = "create it (it may be empty), or " HINT_OWN;
		return -1;
	}
	if (!pl.v.n)
		return 0; /* nothing to keep: no namespace */
	if (enter_namespace(a) < 0) {
		const struct keep *k = first_kept(&pl);

		*err = sb_arena_printf(
			a,
			"%s %s lies in a tree the program may write, and "
			"python-sb cannot keep it read-only there: a private "
			"mount namespace: %s",
			k->why, k->path, strerror(errno));
		*hint = "allow unprivileged user namespaces "
			"(sysctl kernel.unprivileged_userns_clone=1, "
			"user.max_user_namespaces > 0), or " HINT_OWN;
		return -1;
	}
	/* nothing mounted here may reach the host's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		*err = sb_arena_printf(a, "make the mounts private: %s",
				       strerror(errno));
		return -1;
	}
	for (i = 0; i < pl.v.n; i++)
		if (bind_self(&pl.v.v[i]) < 0) {
			*err = sb_arena_printf(
				a, "bind %s %sonto itself: %s", pl.v.v[i].path,
				pl.v.v[i].how == KEEP_RO ? "read-only " : "",
				strerror(errno));
			return -1;
		}
	/* the working directory still names the directory under the new
	 * mounts, where the files are writable: walk to it again */
	if (!getcwd(cwd, sizeof(cwd)) || chdir(cwd) < 0) {
		*err = sb_arena_printf(a, "enter the working directory again: "
					  "%s",
				       strerror(errno));
		return -1;
	}
	return 0;
}

const char *sb_selfprotect_describe(struct sb_arena *a,
				    const struct sb_policy *p,
				    const struct sb_kernel_ctx *ctx)
{
	struct protect_plan pl = { 0 };
	const char *err = NULL, *s;
	struct sb_buf b = { 0 };
	size_t i;

	if (make_plan(a, p, ctx, &pl, &err) < 0)
		return err;
	for (i = 0; i < pl.v.n; i++) {
		const struct keep *k = &pl.v.v[i];

		if (k->how == KEEP_PIN)
			continue;
		sb_buf_printf(&b, "%s%s (%s)", b.s ? "; " : "", k->path,
			      k->how == KEEP_RO ? k->why
			      : k->host_ro
				      ? "writable by its rule, but read-only "
					"on the host"
				      : "writable again, by its rule");
	}
	if (!b.s)
		return NULL;
	s = sb_arena_printf(
		a,
		"Read-only by a bind mount in a private mount namespace "
		"(Landlock's grants add up, so a tree inside expose-rw= "
		"would be writable): %s; the directories on the way to them "
		"cannot be renamed.",
		b.s);
	sb_buf_free(&b);
	return s;
}
