/* metasup.c - mode and time changes, inotify watches and extended
 * attributes read by path, judged by the file rules. Landlock has no right
 * for chmod or utimes, nor any hook for an inotify watch (which reports the
 * names made, removed and opened in a directory, and when a file is read
 * or written, on any path the user may read: a directory no rule exposes,
 * the caller's terminal) or for reading an extended attribute (a file's
 * user.* data, the address a browser downloaded it from), so the seccomp
 * allowlist (seccomp.c) sends chmod, fchmod, fchmodat, fchmodat2,
 * utimensat, utimes, utime, futimesat, inotify_add_watch, getxattr,
 * lgetxattr, listxattr and llistxattr here. This file reads the call's
 * path once from the program's memory, opens the object itself (O_PATH, no
 * magic links: /proc/self would be python-sb's), reads the real path of
 * what it opened, and performs the change on that object only when it lies
 * in an expose-rw tree and belongs to the program's user (a watch or an
 * attribute read: when it lies in an exposed tree, and a file in a tree
 * exposed to be read, not only listed), through /proc/self/fd; the
 * program's later changes to its memory or to the file system cannot move
 * the call. A change is made on the program's own mount of the object
 * (opened again by its real path under /proc/PID/root): under
 * os-sandbox=landlock the program has a mount namespace of its own, where
 * selfprotect.c binds read-only trees read-only, and python-sb's has no
 * such bind (a chmod there went through where the program's own write got
 * EROFS: attack K30). A setuid or setgid bit is refused here too (the
 * filter refuses it first).
 * It judges with the one file decision (fsrules.c), prints nothing, and
 * records each refusal in the denial log when there is one (suplog.c).
 */
#include "metasup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include "filecall.h"
#include "entrysup.h"
#include "fsrules.h"
#include "notif.h"
#include "suplog.h"

#define GONE LONG_MIN /* the caller went away: no call's result */

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

bool sb_metasup_handles(int nr)
{
	switch (nr) {
	case __NR_chmod:
	case __NR_fchmod:
	case __NR_fchmodat:
	case __NR_fchmodat2:
	case __NR_utimensat:
	case __NR_utimes:
	case __NR_utime:
	case __NR_futimesat:
	case __NR_inotify_add_watch:
	case __NR_getxattr:
	case __NR_lgetxattr:
	case __NR_listxattr:
	case __NR_llistxattr:
		return true;
	default:
		return false;
	}
}

/* What one call asks for, decoded from its arguments. */
struct meta {
	int dirfd;	 /* the program's, or AT_FDCWD */
	uint64_t path;	 /* its address, or 0: the descriptor itself */
	int flags;	 /* AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH */
	bool chmod;
	mode_t mode;
	uint64_t times; /* its address, or 0: now */
	int times_kind; /* 0 timespec[2], 1 timeval[2], 2 utimbuf */
	bool null_ok;	/* utimensat: a NULL path is the descriptor */
	bool watch;	/* inotify_add_watch (its path is the cwd's) */
	int ifd;	/* its instance, the program's descriptor */
	uint32_t mask;	/* its events */
	int xattr;	/* XATTR_GET or XATTR_LIST, or 0 */
	uint64_t name;	/* XATTR_GET: the attribute's name */
	uint64_t value; /* where its value (or the list) goes */
	size_t size;	/* how much room is there: 0 asks the size */
};

enum { XATTR_GET = 1, XATTR_LIST };

static int decode(const struct seccomp_notif *req, struct meta *m)
{
	const __u64 *a = req->data.args;

	memset(m, 0, sizeof(*m));
	m->dirfd = AT_FDCWD;
	switch (req->data.nr) {
	case __NR_chmod:
		m->path = a[0];
		m->chmod = true;
		m->mode = (mode_t)a[1];
		break;
	case __NR_fchmod:
		m->dirfd = (int)a[0];
		m->chmod = true;
		m->mode = (mode_t)a[1];
		break;
	case __NR_fchmodat:
	case __NR_fchmodat2:
		m->dirfd = (int)a[0];
		m->path = a[1];
		m->chmod = true;
		m->mode = (mode_t)a[2];
		if (req->data.nr == __NR_fchmodat2)
			m->flags = (int)a[3];
		break;
	case __NR_utimensat:
		m->dirfd = (int)a[0];
		m->path = a[1];
		m->times = a[2];
		m->flags = (int)a[3];
		m->null_ok = m->dirfd != AT_FDCWD;
		break;
	case __NR_futimesat:
		m->dirfd = (int)a[0];
		m->path = a[1];
		m->times = a[2];
		m->times_kind = 1;
		break;
	case __NR_inotify_add_watch:
		m->ifd = (int)a[0];
		m->path = a[1];
		m->watch = true;
		m->mask = (uint32_t)a[2];
		/* not following a last symbolic link, or only a directory:
		 * the open below does it (the watch follows our descriptor) */
		if (m->mask & IN_DONT_FOLLOW)
			m->flags = AT_SYMLINK_NOFOLLOW;
		break;
	case __NR_getxattr:
	case __NR_lgetxattr:
		m->xattr = XATTR_GET;
		m->path = a[0];
		m->name = a[1];
		m->value = a[2];
		m->size = (size_t)a[3];
		if (req->data.nr == __NR_lgetxattr)
			m->flags = AT_SYMLINK_NOFOLLOW;
		break;
	case __NR_listxattr:
	case __NR_llistxattr:
		m->xattr = XATTR_LIST;
		m->path = a[0];
		m->value = a[1];
		m->size = (size_t)a[2];
		if (req->data.nr == __NR_llistxattr)
			m->flags = AT_SYMLINK_NOFOLLOW;
		break;
	case __NR_utimes:
	case __NR_utime:
		m->path = a[0];
		m->times = a[1];
		m->times_kind = req->data.nr == __NR_utimes ? 1 : 2;
		break;
	default:
		return -ENOSYS;
	}
	if (m->flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	if (m->chmod && (m->mode & (S_ISUID | S_ISGID)))
		return -EPERM;
	if (!m->path && req->data.nr != __NR_fchmod && !m->null_ok)
		return -EFAULT;
	return 0;
}

/* An extended attribute of the object we opened ('link'), or the list of
 * their names, read with the program's rights into the program's buffer:
 * the length, or -errno (as the kernel answers: ERANGE for a buffer too
 * small, ENODATA...). */
static long read_xattr(pid_t pid, const struct meta *m, const char *name,
		       const char *link)
{
	size_t room = m->size > XATTR_SIZE_MAX ? XATTR_SIZE_MAX : m->size;
	char *buf = NULL;
	ssize_t n;

	if (room && !(buf = malloc(room)))
		return -ENOMEM;
	if (m->xattr == XATTR_GET)
		n = getxattr(link, name, buf, room);
	else
		n = listxattr(link, buf, room);
	if (n < 0) {
		n = -errno;
	} else if (n > 0 && room) {
		struct iovec l = { buf, (size_t)n };
		struct iovec r = { (void *)(uintptr_t)m->value, (size_t)n };

		if (process_vm_writev(pid, &l, 1, &r, 1, 0) != n)
			n = -EFAULT;
	}
	free(buf);
	return n;
}

/* An inotify watch on the object we opened ('link', our /proc/self/fd
 * name of it), added to the program's instance 'ifd' (its descriptor
 * number): the watch descriptor, or -errno. The kernel checks that the
 * user may read the object (we hold the program's rights here). */
static long add_watch(int pidfd, const struct meta *m,
		      const struct stat *st, const char *link, bool names)
{
	/* a directory of a tree exposed to be listed: the events that
	 * name entries made, removed or moved, not those that tell when
	 * its files are opened, read or written */
	const uint32_t naming = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
				IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;
	uint32_t mask = m->mask & ~(uint32_t)(IN_DONT_FOLLOW | IN_ONLYDIR);
	long rc;
	int fd;

	if ((m->mask & IN_ONLYDIR) && !S_ISDIR(st->st_mode))
		return -ENOTDIR;
	if (names) {
		if (!(mask & naming))
			return -EPERM;
		mask &= naming | IN_ONESHOT | IN_MASK_ADD | IN_MASK_CREATE |
			IN_EXCL_UNLINK;
	}
	fd = sb_pidfd_getfd(pidfd, m->ifd);
	if (fd < 0)
		return -EBADF;
	rc = inotify_add_watch(fd, link, mask);
	rc = rc < 0 ? -errno : rc;
	close(fd);
	return rc;
}

static int read_times(pid_t pid, const struct meta *m, struct timespec ts[2],
		      bool *now)
{
	*now = m->times == 0;
	if (*now)
		return 0;
	if (m->times_kind == 0)
		return sb_peek(pid, m->times, ts, sizeof(struct timespec) * 2);
	if (m->times_kind == 1) {
		struct timeval tv[2];

		if (sb_peek(pid, m->times, tv, sizeof(tv)) < 0)
			return -EFAULT;
		if (tv[0].tv_usec < 0 || tv[0].tv_usec >= 1000000 ||
		    tv[1].tv_usec < 0 || tv[1].tv_usec >= 1000000)
			return -EINVAL;
		ts[0].tv_sec = tv[0].tv_sec;
		ts[0].tv_nsec = tv[0].tv_usec * 1000;
		ts[1].tv_sec = tv[1].tv_sec;
		ts[1].tv_nsec = tv[1].tv_usec * 1000;
	} else {
		struct utimbuf ub;

		if (sb_peek(pid, m->times, &ub, sizeof(ub)) < 0)
			return -EFAULT;
		ts[0].tv_sec = ub.actime;
		ts[0].tv_nsec = 0;
		ts[1].tv_sec = ub.modtime;
		ts[1].tv_nsec = 0;
	}
	return 0;
}

/* The object, opened by us: an O_PATH descriptor, or -errno. */
static int open_object(pid_t pid, int pidfd, const struct meta *m,
		       const char *path)
{
	if (!path || (!*path && (m->flags & AT_EMPTY_PATH)))
		return sb_caller_base(pid, pidfd, m->dirfd, path);
	if (!*path)
		return -ENOENT;
	return sb_open_as_program(pid, pidfd, m->dirfd, path,
				  O_PATH | (m->flags & AT_SYMLINK_NOFOLLOW
						    ? O_NOFOLLOW
						    : 0));
}

static long judge_and_perform(const struct sb_policy *p, int listener,
			      const struct seccomp_notif *req, int pidfd)
{
	struct sb_fs_decision d;
	struct timespec ts[2];
	struct meta m;
	struct stat st;
	char path[PATH_MAX], canon[PATH_MAX], link[64];
	char name[XATTR_NAME_MAX + 1];
	bool now = true, read;
	ssize_t n;
	long rc;
	int fd;

	rc = decode(req, &m);
	if (rc < 0)
		return rc;
	if (m.path && sb_filecall_peek_string(req->pid, m.path, path,
						 sizeof(path)) < 0)
		return -EFAULT;
	rc = m.xattr == XATTR_GET ? sb_filecall_peek_string(req->pid, m.name,
							    name, sizeof(name))
				  : 0;
	if (rc < 0)
		return rc == -ENAMETOOLONG ? -ERANGE : rc;
	/* a read of what lies there, not a change */
	read = m.watch || m.xattr;
	if (!m.chmod && !read && read_times(req->pid, &m, ts, &now) < 0)
		return -EFAULT;
	fd = open_object(req->pid, pidfd, &m, m.path ? path : NULL);
	if (fd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, canon, sizeof(canon) - 1);
		if (n <= 0 || canon[0] != '/' || fstat(fd, &st) < 0) {
			close(fd);
			fd = -EACCES;
		} else {
			canon[n] = '\0';
		}
	}
	/* a change is made on the program's own mount of what we found by
	 * its path (a descriptor of its own is that already): a read-only
	 * bind there (selfprotect.c) refuses it as it would the program */
	if (fd >= 0 && !read && m.path) {
		int mine = sb_reopen_as_seen_by(req->pid, fd, canon);

		close(fd);
		fd = mine;
		if (fd >= 0)
			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	}
	/* what we read, and the /proc/PID/cwd and root we started from,
	 * were the caller's, not a recycled pid's: checked after them */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) != 0) {
		if (fd >= 0)
			close(fd);
		return GONE;
	}
	if (fd < 0)
		return fd == -ESRCH ? GONE : fd;
	sb_fs_decide(p, canon, canon, canon, !read, &d);
	/* expose-made=: an entry the program made, and nothing else */
	if (d.verdict == SB_FS_ALLOW && d.expose && d.expose->made &&
	    !sb_entrysup_made_ok(d.expose, (pid_t)req->pid, canon, false)) {
		d.verdict = SB_FS_NOT_EXPOSED;
		d.expose = NULL;
	}
	if (d.verdict != SB_FS_ALLOW) {
		if (read)
			sb_suplog_fs_read_refused((pid_t)req->pid, "file",
						  canon, &d);
		else
			sb_suplog_fs_refused((pid_t)req->pid, "file", canon,
					     &d);
		close(fd);
		return -EPERM;
	}
	if (read) {
		/* a tree exposed to be listed: its directories' names,
		 * not its files' contents nor when they are read */
		if (d.expose && d.expose->mode == SB_EXPOSE_LIST &&
		    !S_ISDIR(st.st_mode)) {
			sb_suplog_refused((pid_t)req->pid, "file", canon,
					  m.watch ? "an inotify watch on a "
						    "file of a tree exposed "
						    "to be listed only"
						  : "an extended attribute of "
						    "a file of a tree exposed "
						    "to be listed only",
					  NULL);
			rc = -EPERM;
		} else if (m.watch) {
			rc = add_watch(pidfd, &m, &st, link,
				       d.expose &&
					       d.expose->mode == SB_EXPOSE_LIST);
		} else {
			rc = read_xattr((pid_t)req->pid, &m, name, link);
		}
		close(fd);
		return rc;
	}
	/* the supervisor may hold capabilities the program has not: the
	 * kernel's owner check, made for the program (no rule changes it) */
	if (st.st_uid != geteuid()) {
		sb_suplog_refused((pid_t)req->pid, "file", canon,
				  "the owner check: the file is not the "
				  "program's user's",
				  NULL);
		close(fd);
		return -EPERM;
	}
	if (m.chmod)
		rc = fchmodat(AT_FDCWD, link, m.mode & 07777 & ~(mode_t)06000,
			      0);
	else
		rc = utimensat(AT_FDCWD, link, now ? NULL : ts, 0);
	rc = rc < 0 ? -errno : 0;
	close(fd);
	return rc;
}

bool sb_metasup_serve(const struct sb_policy *p, int listener,
		      const struct seccomp_notif *req, long *rc)
{
	int pidfd = sb_pidfd_of_caller((pid_t)req->pid);

	if (pidfd < 0)
		return false;
	*rc = judge_and_perform(p, listener, req, pidfd);
	close(pidfd);
	return *rc != GONE;
}
