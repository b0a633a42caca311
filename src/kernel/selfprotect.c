/* selfprotect.c - python-sb's own files are never the program's, under
 * os-sandbox=landlock too (issue 21). Landlock only grants: it cannot take
 * a file back out of a tree that expose-rw= hands over, and ignore= is not
 * enforced by it. So before the ruleset, the process that becomes the
 * program enters a private mount namespace (with a user namespace that
 * maps its own uid and gid onto themselves when it is not root), in which
 * each own file under a writable exposure is a read-only bind mount of
 * itself: a write, truncate or chmod gets EROFS, a rename over it or an
 * unlink EBUSY, a hard link EXDEV. The directories between the file and the
 * exposure's root are bound onto themselves, so that they cannot be renamed
 * away and replaced either. Landlock then forbids every mount and umount.
 * When no namespace can be had, the run stops (fail closed) with the ways
 * out. It must not fork or exec; the caller reports and exits.
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

#define HINT_OWN                                                               \
	"move the rule file out of the tree that expose-rw= hands over "     \
	"(and name it with --pysandboxes-config=), or expose the tree "      \
	"read-only; 'expose-rw=' naming the file itself hands it over to "   \
	"the program on purpose"

struct protect_plan {
	SB_VEC(const char *) files; /* read-only binds */
	SB_VEC(const char *) pins;  /* directories bound onto themselves */
};

/* The longest writable exposure that holds 'path', or NULL. */
static const char *writable_root(const struct sb_policy *p, const char *path)
{
	const char *best = NULL;
	size_t i;

	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];

		if (e->mode == SB_EXPOSE_RW && sb_path_under(path, e->path) &&
		    (!best || strlen(e->path) > strlen(best)))
			best = e->path;
	}
	return best;
}

static bool listed(const char **v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static int by_length(const void *x, const void *y)
{
	size_t a = strlen(*(const char *const *)x);
	size_t b = strlen(*(const char *const *)y);

	return a < b ? -1 : a > b;
}

static int make_plan(struct sb_arena *a, const struct sb_policy *p,
		     struct protect_plan *pl, const char **err)
{
	struct stat st;
	size_t i;

	for (i = 0; i < p->ignores.n; i++) {
		const struct sb_ignore *ig = &p->ignores.v[i];
		const char *path, *root;
		char *dir, *slash;

		path = sb_own_file(a, ig);
		if (!path)
			continue;
		root = writable_root(p, path);
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
		*SB_VEC_PUSH(a, pl->files) = path;
		dir = sb_arena_strdup(a, path);
		while ((slash = strrchr(dir, '/')) && slash != dir) {
			*slash = '\0';
			if (strcmp(dir, root) == 0 || !sb_path_under(dir, root))
				break;
			if (!listed(pl->pins.v, pl->pins.n, dir))
				*SB_VEC_PUSH(a, pl->pins) =
					sb_arena_strdup(a, dir);
		}
	}
	if (pl->pins.n)
		qsort(pl->pins.v, pl->pins.n, sizeof(*pl->pins.v), by_length);
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

/* Bind 'path' onto itself; read-only keeps the flags a user namespace
 * locks (nosuid, nodev, noexec, atime), as the remount must. */
static int bind_self(const char *path, bool readonly)
{
	struct statvfs sv;
	unsigned long keep;

	if (mount(path, path, NULL, MS_BIND | (readonly ? 0 : MS_REC), NULL) <
	    0)
		return -1;
	if (!readonly)
		return 0;
	if (statvfs(path, &sv) < 0)
		return -1;
	keep = sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME |
			    ST_NODIRATIME | ST_RELATIME);
	return mount(NULL, path, NULL,
		     MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL);
}

int sb_selfprotect_apply(struct sb_arena *a, const struct sb_policy *p,
			 const char **err, const char **hint)
{
	struct protect_plan pl = { 0 };
	char cwd[PATH_MAX];
	size_t i;

	*hint = NULL;
	if (make_plan(a, p, &pl, err) < 0) {
		*hint = "create it (it may be empty), or " HINT_OWN;
		return -1;
	}
	if (!pl.files.n)
		return 0;
	if (enter_namespace(a) < 0) {
		*err = sb_arena_printf(
			a,
			"the rule file %s lies in a tree the program may "
			"write, and python-sb cannot keep it read-only "
			"there: a private mount namespace: %s",
			pl.files.v[0], strerror(errno));
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
	for (i = 0; i < pl.pins.n; i++)
		if (bind_self(pl.pins.v[i], false) < 0) {
			*err = sb_arena_printf(a, "bind %s onto itself: %s",
					       pl.pins.v[i], strerror(errno));
			return -1;
		}
	for (i = 0; i < pl.files.n; i++)
		if (bind_self(pl.files.v[i], true) < 0) {
			*err = sb_arena_printf(a,
					       "bind %s read-only onto itself: %s",
					       pl.files.v[i], strerror(errno));
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
