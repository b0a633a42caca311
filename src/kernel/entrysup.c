/* entrysup.c - the calls on an entry that a rule names and Landlock cannot
 * grant (entrysup.h). Landlock's rules hang on the objects that exist when
 * the sandbox starts, and it judges making, removing and renaming an entry
 * on the directory that holds it. So it cannot grant expose-new=./out (not
 * there yet), nor the replacement of a file named by expose-rw=./state (an
 * atomic write renames a new file over it), without all of the directory:
 * for the home directory, every file in it (docs/weaknesses.md 61).
 *
 * Here the supervisor does those calls for the program. It reads the path
 * once, opens the directory that holds the entry (following links on the
 * way as the kernel would) and takes its real path from that descriptor,
 * opens it again as the program's mount sees it (a read-only bind there
 * stays read-only), and judges directory + "/" + name with the one file
 * decision (fsrules.c). It acts only when the deciding rule of every
 * end of the call is such an entry's and allows it (a rename between two
 * entries; one from or to anywhere else is the kernel's), never on a
 * mount point of the program's namespace or a directory above one (the
 * kernel's EBUSY holds in the caller's namespace only, and ours is not
 * the program's), nor on a directory below which another rule names a
 * path (moved, it would be judged by the entry's rule), and then
 * on that descriptor and that one name, never following a link in the
 * last place: what the program changes in its memory or in the file system
 * after the read cannot move the call. An open's descriptor goes to the
 * program with SECCOMP_IOCTL_NOTIF_ADDFD. Everything else goes on to the
 * kernel, where Landlock judges it as before: this adds rights to the
 * entries the rules name, never to anything else. Links, symbolic links,
 * device nodes and openat2 are not performed (Landlock judges them).
 */
#include "entrysup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "filecall.h"
#include "fsrules.h"
#include "notif.h"
#include "util.h"

/* The kernel's O_LARGEFILE (glibc's is 0 on 64-bit machines). */
#define KERNEL_O_LARGEFILE 0100000

/* The open flags performed here; any other (O_PATH, O_TMPFILE) goes on. */
#define OPEN_FLAGS                                                          \
	(O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |     \
	 O_NONBLOCK | O_DSYNC | O_SYNC | O_DIRECTORY | O_NOFOLLOW |         \
	 O_CLOEXEC | KERNEL_O_LARGEFILE | O_NOATIME | O_DIRECT | FASYNC)

/* Is 'e' the rule of an entry Landlock cannot grant? */
static bool served(const struct sb_expose *e)
{
	return e && e->mode == SB_EXPOSE_RW && (e->entry || !e->is_dir);
}

bool sb_entrysup_wanted(const struct sb_policy *p)
{
	size_t i;

	if (p->provider != SB_PROVIDER_LANDLOCK &&
	    p->provider != SB_PROVIDER_AUTO)
		return false;
	for (i = 0; i < p->exposes.n; i++)
		if (served(&p->exposes.v[i]))
			return true;
	return false;
}

/* One entry a call acts on. */
struct place {
	int dfd;		/* its directory, as the program sees it */
	char name[NAME_MAX + 1];
	char canon[PATH_MAX];	/* its directory's real path, "/", name */
	bool ours;		/* a served rule decides for it */
	bool slash;		/* spelled with a trailing '/' */
};

/* Is the entry a symbolic link? The kernel follows it; Landlock judges
 * where it leads, so the call goes on. */
static bool is_link(const struct place *pl)
{
	struct stat st;

	return fstatat(pl->dfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISLNK(st.st_mode);
}

/* The entry (dirfd, path) of the caller names into *pl: 0, or -1 when it
 * is none we can act on ("." or "..", a directory that is not there). */
static int locate(pid_t pid, int pidfd, int dirfd, const char *path,
		  struct place *pl)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	char buf[PATH_MAX], dir[PATH_MAX], link[64], *slash;
	const char *name;
	size_t n = strlen(path);
	ssize_t k;
	int base, fd;

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	pl->slash = false;
	while (n > 1 && buf[n - 1] == '/') {
		buf[--n] = '\0';
		pl->slash = true;
	}
	slash = strrchr(buf, '/');
	name = slash ? slash + 1 : buf;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strlen(name) > NAME_MAX)
		return -1;
	strcpy(pl->name, name);
	if (slash == buf)
		strcpy(buf, "/");
	else if (slash)
		*slash = '\0';
	base = sb_caller_base(pid, pidfd, dirfd, buf);
	if (base < 0)
		return -1;
	if (slash) {
		fd = (int)syscall(SYS_openat2, base, buf, &how, sizeof(how));
		close(base);
	} else {
		fd = base;
	}
	if (fd < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, dir, sizeof(dir) - 1);
	if (k <= 0 || dir[0] != '/' || (size_t)k + n + 2 > sizeof(pl->canon)) {
		close(fd);
		return -1;
	}
	dir[k] = '\0';
	pl->dfd = sb_reopen_as_seen_by(pid, fd, dir);
	close(fd);
	if (pl->dfd < 0)
		return -1;
	/* the length was checked above */
	strcpy(pl->canon, strcmp(dir, "/") ? dir : "");
	strcat(pl->canon, "/");
	strcat(pl->canon, pl->name);
	return 0;
}

/* May the call do this to the entry (write: change it or what it holds)? */
static bool allowed(const struct sb_policy *p, struct place *pl, bool write)
{
	struct sb_fs_decision d;

	sb_fs_decide(p, pl->canon, pl->canon, pl->canon, write, &d);
	pl->ours = d.verdict == SB_FS_ALLOW && served(d.expose);
	return d.verdict == SB_FS_ALLOW && d.expose &&
	       d.expose->mode == SB_EXPOSE_RW;
}

/* An open, performed: ANSWERED when the descriptor went to the program,
 * else REPLY with *rc, or PASS (a link in the last place, which the kernel
 * follows and Landlock judges where it leads). */
static enum sb_entrysup_answer open_entry(int listener,
					  const struct seccomp_notif *req,
					  const struct place *pl,
					  uint64_t flags, mode_t mode, long *rc)
{
	struct seccomp_notif_addfd add = { 0 };
	struct stat st;
	int fd;

	/* a regular file or a directory (or nothing yet): anything else (a
	 * FIFO, a device, a socket) is opened by the program, where Landlock
	 * judges it, and never here, where its open could wait (a FIFO's
	 * for a writer: this loop serves the whole sandbox, its limits'
	 * timer included) or run a driver */
	if (fstatat(pl->dfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return SB_ENTRYSUP_PASS;
	fd = openat(pl->dfd, pl->name,
		    (int)flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		    mode);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
	    !(flags & O_NOFOLLOW) && is_link(pl))
		return SB_ENTRYSUP_PASS;
	/* swapped for a FIFO meanwhile: a writer's open found no reader */
	if (fd < 0 && errno == ENXIO)
		return SB_ENTRYSUP_PASS;
	if (fd < 0) {
		*rc = -errno;
		return SB_ENTRYSUP_REPLY;
	}
	if (fstat(fd, &st) < 0 ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) ||
	    (!(flags & O_NONBLOCK) &&
	     fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)) {
		close(fd);
		return SB_ENTRYSUP_PASS;
	}
	add.id = req->id;
	add.flags = SECCOMP_ADDFD_FLAG_SEND;
	add.srcfd = (__u32)fd;
	add.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0 ||
	    errno == ENOENT) {
		close(fd);
		return SB_ENTRYSUP_ANSWERED;
	}
	*rc = -errno; /* EMFILE: the program has no room for it */
	close(fd);
	return SB_ENTRYSUP_REPLY;
}

static long truncate_entry(pid_t pid, const struct place *pl, uint64_t len)
{
	struct stat st;
	void (*old)(int);
	long rc;
	int fd;

	struct rlimit fsize;

	if ((int64_t)len < 0)
		return -EINVAL;
	/* the program's limit, not ours (the kernel sends it SIGXFSZ) */
	if (prlimit(pid, RLIMIT_FSIZE, NULL, &fsize) < 0)
		return -EFBIG;
	if (fsize.rlim_cur != RLIM_INFINITY && len > fsize.rlim_cur) {
		kill(pid, SIGXFSZ);
		return -EFBIG;
	}
	if (fstatat(pl->dfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = openat(pl->dfd, pl->name,
		    O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* our own limit may be lower than the program's: EFBIG, never our
	 * death by SIGXFSZ */
	old = signal(SIGXFSZ, SIG_IGN);
	rc = ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
	signal(SIGXFSZ, old);
	close(fd);
	return rc;
}

/* Is a mount point of process 'pid' at 'canon' or below it? The kernel
 * refuses to remove or rename a mount point (EBUSY) in the caller's own
 * mount namespace only; ours is not the program's, where selfprotect.c
 * binds python-sb's own files and the read-only trees (an unlink or a
 * rename made here would detach them). Unreadable: yes. */
static bool mount_below(pid_t pid, const char *canon)
{
	char file[64], line[4 * PATH_MAX], mp[PATH_MAX];
	bool found = false;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/mountinfo", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return true;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *q = line;
		size_t k = 0;
		int field;

		/* the fifth field, with \ooo escapes */
		for (field = 0; field < 4 && q; field++) {
			q = strchr(q, ' ');
			q = q ? q + 1 : NULL;
		}
		if (!q)
			continue;
		while (*q && *q != ' ' && *q != '\n' && k + 1 < sizeof(mp)) {
			if (q[0] == '\\' && q[1] >= '0' && q[1] <= '3' &&
			    q[2] >= '0' && q[2] <= '7' && q[3] >= '0' &&
			    q[3] <= '7') {
				mp[k++] = (char)((q[1] - '0') * 64 +
						 (q[2] - '0') * 8 + (q[3] - '0'));
				q += 4;
			} else {
				mp[k++] = *q++;
			}
		}
		mp[k] = '\0';
		found = sb_path_under(mp, canon);
	}
	fclose(f);
	return found;
}

/* Does a rule name a path strictly below 'canon' (an exposure, or an
 * absolute ignore=: python-sb's own files among them)? Moved with the
 * directory, it would be judged by the entry's rule at its new path. */
static bool rules_below(const struct sb_policy *p, const char *canon)
{
	size_t i;

	for (i = 0; i < p->exposes.n; i++)
		if (strcmp(p->exposes.v[i].path, canon) != 0 &&
		    sb_path_under(p->exposes.v[i].path, canon))
			return true;
	for (i = 0; i < p->ignores.n; i++)
		if (p->ignores.v[i].pattern[0] == '/' &&
		    strcmp(p->ignores.v[i].pattern, canon) != 0 &&
		    sb_path_under(p->ignores.v[i].pattern, canon))
			return true;
	return false;
}

/* May the entries a removal or a rename acts on go? -EBUSY for a mount
 * point at or below one, -EACCES for one that holds another rule's path
 * (a rename moves what lies below), else 0. */
static long may_move(const struct sb_policy *p, pid_t pid,
		     const struct place *pl, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (mount_below(pid, pl[i].canon))
			return -EBUSY;
		if (rules_below(p, pl[i].canon))
			return -EACCES;
	}
	return 0;
}

/* What the call does to its entries, performed (the first of 'pl', and
 * for a rename the second): REPLY with *rc, or ANSWERED, or PASS. */
static enum sb_entrysup_answer perform(int listener,
				       const struct seccomp_notif *req,
				       const struct sb_fc_access *x,
				       const struct place *pl, long *rc)
{
	const __u64 *a = req->data.args;
	int nr = req->data.nr;

	switch (x->op) {
	case SB_FC_OPEN:
		return open_entry(listener, req, pl, x->flags,
				  (mode_t)(nr == __NR_openat	? a[3]
					   : nr == __NR_creat ? a[1]
							      : a[2]) &
					  07777,
				  rc);
	case SB_FC_TRUNCATE:
		if (is_link(pl))
			return SB_ENTRYSUP_PASS;
		*rc = truncate_entry((pid_t)req->pid, pl, a[1]);
		return SB_ENTRYSUP_REPLY;
	case SB_FC_MAKE: /* mkdir: the others pass (performed_call) */
		*rc = mkdirat(pl->dfd, pl->name,
			      (mode_t)(nr == __NR_mkdirat ? a[2] : a[1]) &
				      07777) < 0
			      ? -errno
			      : 0;
		return SB_ENTRYSUP_REPLY;
	case SB_FC_REMOVE:
		if (nr == __NR_rename || nr == __NR_renameat ||
		    nr == __NR_renameat2)
			*rc = syscall(SYS_renameat2, pl[0].dfd, pl[0].name,
				      pl[1].dfd, pl[1].name,
				      nr == __NR_renameat2 ? (unsigned)a[4]
							   : 0U) < 0
				      ? -errno
				      : 0;
		else
			*rc = unlinkat(pl->dfd, pl->name, (int)x->flags) < 0
				      ? -errno
				      : 0;
		return SB_ENTRYSUP_REPLY;
	default:
		return SB_ENTRYSUP_PASS;
	}
}

/* The calls performed here, and what each needs. */
static bool performed_call(const struct seccomp_notif *req,
			   const struct sb_fc_access *x, bool *write)
{
	switch (req->data.nr) {
#ifdef __NR_open
	case __NR_open:
	case __NR_creat:
	case __NR_mkdir:
	case __NR_unlink:
	case __NR_rmdir:
	case __NR_rename:
#endif
	case __NR_openat:
	case __NR_truncate:
	case __NR_mkdirat:
	case __NR_renameat:
		break;
	case __NR_unlinkat:
		/* an unknown flag: the kernel's EINVAL */
		if (req->data.args[2] & ~(__u64)AT_REMOVEDIR)
			return false;
		break;
	case __NR_renameat2:
		/* RENAME_WHITEOUT makes a device node */
		if (req->data.args[4] & ~(__u64)(RENAME_NOREPLACE |
						  RENAME_EXCHANGE))
			return false;
		break;
	default:
		return false;
	}
	if (x->op == SB_FC_OPEN) {
		uint64_t acc = x->flags & O_ACCMODE;

		if ((x->flags & ~(uint64_t)OPEN_FLAGS) || acc == O_ACCMODE)
			return false;
		*write = acc != O_RDONLY || (x->flags & (O_CREAT | O_TRUNC));
	} else {
		*write = true;
	}
	return true;
}

/* Might the caller's (dirfd, path) name an entry a served rule decides
 * for? Read from its spelling, joined to the real path of the directory it
 * starts from, without asking the file system: a path that reaches such an
 * entry through a symbolic link is "no", and goes on to Landlock, which
 * refuses it (an entry made here has no rule of its own there). A spelling
 * with "." or ".." in it is "maybe". Most of a program's opens are the
 * interpreter's, far from any such entry: they go on after one readlink at
 * most, not the dozen calls of locate(). */
static bool near_served(const struct sb_policy *p, pid_t pid, int dirfd,
			const char *path)
{
	char full[PATH_MAX * 2], base[64];
	size_t i;
	ssize_t k = 0;

	if (path[0] != '/') {
		if (dirfd == AT_FDCWD)
			snprintf(base, sizeof(base), "/proc/%d/cwd", (int)pid);
		else
			snprintf(base, sizeof(base), "/proc/%d/fd/%d",
				 (int)pid, dirfd);
		k = readlink(base, full, PATH_MAX - 1);
		if (k <= 0 || full[0] != '/')
			return true; /* locate() decides */
		full[k++] = '/';
	}
	snprintf(full + k, sizeof(full) - (size_t)k, "%s", path);
	if (strstr(full, "/./") || strstr(full, "/../") ||
	    strstr(full, "//"))
		return true;
	k = (ssize_t)strlen(full);
	if ((k >= 2 && !strcmp(full + k - 2, "/.")) ||
	    (k >= 3 && !strcmp(full + k - 3, "/..")))
		return true;
	while (k > 1 && full[k - 1] == '/')
		full[--k] = '\0';
	for (i = 0; i < p->exposes.n; i++)
		if (served(&p->exposes.v[i]) &&
		    sb_path_under(full, p->exposes.v[i].path))
			return true;
	return false;
}

enum sb_entrysup_answer sb_entrysup_serve(const struct sb_policy *p,
					  int listener,
					  const struct seccomp_notif *req,
					  long *rc)
{
	enum sb_entrysup_answer ans = SB_ENTRYSUP_PASS;
	struct sb_fc_access x[2];
	struct place pl[2] = { { .dfd = -1 }, { .dfd = -1 } };
	char path[2][PATH_MAX];
	bool write = false, ours = false, near = false, ok = true;
	size_t i, n = sb_filecall_decode(req, x);
	int pidfd, mask;

	if (!n || !performed_call(req, &x[0], &write))
		return SB_ENTRYSUP_PASS;
	for (i = 0; i < n; i++) {
		if (sb_filecall_peek_string(req->pid, x[i].path_at, path[i],
					    sizeof(path[i])) < 0)
			return SB_ENTRYSUP_PASS;
		near |= near_served(p, (pid_t)req->pid, x[i].dirfd, path[i]);
	}
	if (!near)
		return SB_ENTRYSUP_PASS;
	pidfd = sb_pidfd_of_caller((pid_t)req->pid);
	if (pidfd < 0)
		return SB_ENTRYSUP_PASS;
	/* every end a served rule's: a rename from or to anywhere else
	 * (a rule's own root, a tree the program may change) is the
	 * kernel's to judge, with Landlock and the mounts in its way */
	for (i = 0, ours = true; i < n && ok; i++) {
		ok = locate((pid_t)req->pid, pidfd, x[i].dirfd, path[i],
			    &pl[i]) == 0 &&
		     allowed(p, &pl[i], write) &&
		     (!pl[i].slash || x[i].op == SB_FC_MAKE ||
		      (x[i].op == SB_FC_REMOVE && (x[i].flags & AT_REMOVEDIR)));
		ours = ours && ok && pl[i].ours;
	}
	close(pidfd);
	/* what was read, and the cwd and descriptors we started from, were
	 * the caller's, not a recycled pid's: checked after them */
	if (ok && ours &&
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0) {
		*rc = x[0].op == SB_FC_REMOVE
			      ? may_move(p, (pid_t)req->pid, pl, n)
			      : 0;
		if (*rc) {
			ans = SB_ENTRYSUP_REPLY;
		} else {
			mask = sb_umask_of((pid_t)req->pid);
			mask = umask((mode_t)(mask < 0 ? 077 : mask));
			ans = perform(listener, req, &x[0], pl, rc);
			umask((mode_t)mask);
		}
	}
	for (i = 0; i < 2; i++)
		if (pl[i].dfd >= 0)
			close(pl[i].dfd);
	return ans;
}
