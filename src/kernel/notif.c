/* notif.c - reaching the process behind a seccomp notification (notif.h).
 * It only opens and copies; the callers judge, and must check that the
 * notification is still pending after reading what it points at. */
#include "notif.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

int sb_pidfd_open(pid_t pid, unsigned flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

int sb_pidfd_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

void sb_caller_dir_link(pid_t pid, int dirfd, char *out, size_t size)
{
	if (dirfd == AT_FDCWD)
		snprintf(out, size, "/proc/%d/cwd", (int)pid);
	else
		snprintf(out, size, "/proc/%d/fd/%d", (int)pid, dirfd);
}

int sb_caller_base(pid_t pid, int pidfd, int dirfd, const char *path)
{
	char link[64];
	int fd;

	if (path && path[0] == '/') {
		fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else if (dirfd == AT_FDCWD || pidfd < 0) {
		/* the one magic link followed: the program's own */
		sb_caller_dir_link(pid, dirfd, link, sizeof(link));
		fd = open(link, O_PATH | O_CLOEXEC);
	} else {
		fd = sb_pidfd_getfd(pidfd, dirfd);
	}
	if (fd >= 0)
		return fd;
	return errno == ESRCH || errno == ENOENT ? -ESRCH : -EBADF;
}

/* The number after 'key' ("Tgid:") in /proc/PID/status, read in 'base'
 * (10, or 8 for Umask). A number >= 0, or -1: no such process or field. */
static long status_field(pid_t pid, const char *key, int base)
{
	char path[64], line[256], *end;
	size_t kl = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) != 0)
			continue;
		errno = 0;
		v = strtol(line + kl, &end, base);
		if (errno || end == line + kl || v < 0)
			v = -1;
		break;
	}
	fclose(f);
	return v;
}

int sb_pidfd_of_caller(pid_t pid)
{
	int fd = sb_pidfd_open(pid, 0);
	long tgid;

	/* a thread that leads no group: EINVAL before Linux 6.15 or so,
	 * ENOENT since (6.18 here); a caller that is gone fails all three */
	if (fd >= 0 || (errno != EINVAL && errno != ENOENT))
		return fd;
	fd = sb_pidfd_open(pid, PIDFD_THREAD);
	if (fd >= 0 || (errno != EINVAL && errno != ENOENT))
		return fd;
	tgid = status_field(pid, "Tgid:", 10);
	return tgid > 0 && tgid <= INT_MAX ? sb_pidfd_open((pid_t)tgid, 0) : -1;
}

int sb_open_as_program(pid_t pid, int pidfd, int dirfd, const char *path,
		       int flags)
{
	static const char *const own[] = { "/proc/self/fd/",
					   "/proc/thread-self/fd/",
					   "/dev/fd/" };
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	int base, fd;
	size_t i;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		size_t n = strlen(own[i]);
		char *end;
		long d;

		if (strncmp(path, own[i], n) || path[n] < '0' || path[n] > '9')
			continue;
		errno = 0;
		d = strtol(path + n, &end, 10);
		if (errno || d > INT_MAX || (*end && *end != '/'))
			return -ENOENT;
		dirfd = (int)d;
		path = end;
		while (*path == '/')
			path++;
		if (!*path)
			return sb_caller_base(pid, pidfd, dirfd, NULL);
		break;
	}
	base = sb_caller_base(pid, pidfd, dirfd, path);
	if (base < 0)
		return base;
	fd = (int)syscall(SYS_openat2, base, *path ? path : ".", &how,
			  sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(base);
	return fd;
}

int sb_peek(pid_t pid, uint64_t remote, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)remote, len };

	if (len && process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

int sb_reopen_as_seen_by(pid_t pid, int fd, const char *canon)
{
	/* a real path has no link on the way; a last one is the object
	 * itself (O_NOFOLLOW) when we opened it so */
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS,
	};
	struct stat ours, theirs;
	char root[64];
	int rfd, nfd;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -EACCES;
	nfd = (int)syscall(SYS_openat2, rfd, canon, &how, sizeof(how));
	close(rfd);
	if (nfd < 0)
		return -EACCES;
	if (fstat(fd, &ours) < 0 || fstat(nfd, &theirs) < 0 ||
	    ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino) {
		close(nfd);
		return -EACCES;
	}
	return nfd;
}

int sb_umask_of(pid_t pid)
{
	long mask = status_field(pid, "Umask:", 8);

	return mask >= 0 && mask <= 0777 ? (int)mask : -1;
}

int sb_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}
