/* filecall.c - the file system calls a seccomp notification stands for
 * (filecall.h): which accesses each makes, and the caller's paths made
 * canonical through its cwd and descriptors in /proc. While the caller
 * waits for the answer its cwd, descriptors and memory hold still (but for
 * its other threads): what is read here only ever changes what a
 * supervisor records, never what the caller may do.
 */
#include "filecall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "notif.h"
#include "util.h"

bool sb_filecall_handles(int nr)
{
	switch (nr) {
#ifdef __NR_open
	case __NR_open:
	case __NR_creat:
	case __NR_mkdir:
	case __NR_mknod:
	case __NR_unlink:
	case __NR_rmdir:
	case __NR_rename:
	case __NR_link:
	case __NR_symlink:
#endif
	case __NR_openat:
	case __NR_openat2:
	case __NR_execve:
	case __NR_execveat:
	case __NR_mkdirat:
	case __NR_mknodat:
	case __NR_unlinkat:
	case __NR_renameat:
	case __NR_renameat2:
	case __NR_linkat:
	case __NR_symlinkat:
	case __NR_truncate:
		return true;
	default:
		return false;
	}
}

bool sb_sigcall_handles(int nr)
{
	return nr == __NR_kill || nr == __NR_tkill || nr == __NR_tgkill ||
	       nr == __NR_rt_sigqueueinfo || nr == __NR_rt_tgsigqueueinfo ||
	       nr == __NR_pidfd_send_signal;
}

/* The "Pid:" line of /proc/PID/fdinfo/FD of a pidfd. */
pid_t sb_pidfd_target(pid_t pid, int fd)
{
	char path[64], line[128];
	pid_t target = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &target) == 1)
			break;
	fclose(f);
	return target > 0 ? target : 0;
}

pid_t sb_sigcall_target(const struct seccomp_notif *req)
{
	int32_t first = (int32_t)req->data.args[0];

	if (req->data.nr == __NR_pidfd_send_signal)
		return sb_pidfd_target((pid_t)req->pid, first);
	return first > 0 ? (pid_t)first : 0;
}

static struct sb_fc_access at(enum sb_fc_op op, uint64_t dirfd,
			      uint64_t path_at, uint64_t flags, unsigned type)
{
	return (struct sb_fc_access){ op, (int)dirfd, path_at, flags, type,
				      false };
}

/* mknod's type: 0 is a regular file */
static unsigned node_type(uint64_t mode)
{
	return (mode & S_IFMT) ? (unsigned)(mode & S_IFMT) : S_IFREG;
}

size_t sb_filecall_decode(const struct seccomp_notif *req,
			  struct sb_fc_access out[2])
{
	const __u64 *a = req->data.args;
	const uint64_t cwd = (uint64_t)(int64_t)AT_FDCWD;
	struct open_how how;

	switch (req->data.nr) {
#ifdef __NR_open
	case __NR_open:
		out[0] = at(SB_FC_OPEN, cwd, a[0], a[1], 0);
		return 1;
	case __NR_creat:
		out[0] = at(SB_FC_OPEN, cwd, a[0], O_CREAT | O_WRONLY | O_TRUNC,
			    0);
		return 1;
	case __NR_mkdir:
		out[0] = at(SB_FC_MAKE, cwd, a[0], 0, S_IFDIR);
		return 1;
	case __NR_mknod:
		out[0] = at(SB_FC_MAKE, cwd, a[0], 0, node_type(a[1]));
		return 1;
	case __NR_unlink:
		out[0] = at(SB_FC_REMOVE, cwd, a[0], 0, 0);
		return 1;
	case __NR_rmdir:
		out[0] = at(SB_FC_REMOVE, cwd, a[0], AT_REMOVEDIR, 0);
		return 1;
	case __NR_rename:
		out[0] = at(SB_FC_REMOVE, cwd, a[0], 0, 0);
		out[1] = at(SB_FC_MAKE, cwd, a[1], 0, 0);
		return 2;
	case __NR_link:
		out[0] = at(SB_FC_MAKE, cwd, a[1], 0, S_IFREG);
		return 1;
	case __NR_symlink:
		out[0] = at(SB_FC_MAKE, cwd, a[1], 0, S_IFLNK);
		return 1;
#endif
	case __NR_openat:
		out[0] = at(SB_FC_OPEN, a[0], a[1], a[2], 0);
		return 1;
	case __NR_openat2:
		/* 'flags' comes first in every version of struct open_how */
		if (a[3] < sizeof(how.flags) ||
		    sb_peek((pid_t)req->pid, a[2], &how.flags,
			    sizeof(how.flags)) < 0)
			return 0;
		out[0] = at(SB_FC_OPEN, a[0], a[1], how.flags, 0);
		return 1;
	case __NR_execve:
		out[0] = at(SB_FC_EXEC, cwd, a[0], 0, 0);
		return 1;
	case __NR_execveat:
		out[0] = at(SB_FC_EXEC, a[0], a[1], 0, 0);
		out[0].empty_path = (a[4] & AT_EMPTY_PATH) != 0;
		return 1;
	case __NR_mkdirat:
		out[0] = at(SB_FC_MAKE, a[0], a[1], 0, S_IFDIR);
		return 1;
	case __NR_mknodat:
		out[0] = at(SB_FC_MAKE, a[0], a[1], 0, node_type(a[2]));
		return 1;
	case __NR_unlinkat:
		out[0] = at(SB_FC_REMOVE, a[0], a[1], a[2] & AT_REMOVEDIR, 0);
		return 1;
	case __NR_renameat:
	case __NR_renameat2:
		out[0] = at(SB_FC_REMOVE, a[0], a[1], 0, 0);
		out[1] = at(SB_FC_MAKE, a[2], a[3], 0, 0);
		return 2;
	case __NR_linkat:
		out[0] = at(SB_FC_MAKE, a[2], a[3], 0, S_IFREG);
		return 1;
	case __NR_symlinkat:
		out[0] = at(SB_FC_MAKE, a[1], a[2], 0, S_IFLNK);
		return 1;
	case __NR_truncate:
		out[0] = at(SB_FC_TRUNCATE, cwd, a[0], 0, 0);
		return 1;
	default:
		return 0;
	}
}

/* Read page by page: the string may end just before an unmapped page. */
int sb_filecall_peek_string(pid_t pid, uint64_t remote, char *buf,
			    size_t size)
{
	size_t got = 0;

	while (got < size) {
		size_t chunk = 4096 - (size_t)((remote + got) & 4095);

		if (chunk > size - got)
			chunk = size - got;
		if (sb_peek(pid, remote + got, buf + got, chunk) < 0)
			return -EFAULT;
		if (memchr(buf + got, '\0', chunk))
			return 0;
		got += chunk;
	}
	return -ENAMETOOLONG;
}

/* The real path of our descriptor 'fd' into out[PATH_MAX]; 0 or -1. */
static int fd_real_path(int fd, char *out)
{
	char link[64];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, out, PATH_MAX - 1);
	if (k <= 0 || out[0] != '/')
		return -1;
	out[k] = '\0';
	return 0;
}

int sb_filecall_resolve(pid_t pid, int dirfd, const char *path, bool create,
			char *out)
{
	char dir[PATH_MAX], *slash;
	const char *last;
	int fd, rc;

	/* the caller's /proc/self is not ours: a path in /proc, or through
	 * one of its magic links, is never resolved (sb_open_as_program) */
	if (path[0] == '/' && sb_path_under(path, "/proc"))
		return -1;
	fd = sb_open_as_program(pid, -1, dirfd, path, O_PATH);
	if (fd >= 0) {
		rc = fd_real_path(fd, out);
		close(fd);
		return rc < 0 || sb_path_under(out, "/proc") ? -1 : 0;
	}
	if (!create || fd != -ENOENT || strlen(path) >= sizeof(dir))
		return -1;
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	last = slash ? slash + 1 : dir;
	if (!*last || !strcmp(last, ".") || !strcmp(last, ".."))
		return -1;
	if (slash)
		*slash = '\0';
	fd = sb_open_as_program(pid, -1, dirfd,
				slash ? (*dir ? dir : "/") : "",
				O_PATH | O_DIRECTORY);
	if (fd < 0)
		return -1;
	rc = fd_real_path(fd, out);
	close(fd);
	if (rc < 0 || sb_path_under(out, "/proc") ||
	    strlen(out) + strlen(last) + 2 > PATH_MAX)
		return -1;
	if (strcmp(out, "/") != 0)
		strcat(out, "/");
	strcat(out, last);
	return 0;
}

int sb_filecall_entry_dir(pid_t pid, int dirfd, const char *path, char *out,
			  char *last)
{
	char buf[PATH_MAX], *slash;
	const char *dir = NULL, *name;

	if (strlen(path) >= sizeof(buf) || !*path)
		return -1;
	strcpy(buf, path);
	/* the entry, not what a symbolic link by that name points to;
	 * "dir/" names "dir" */
	slash = strrchr(buf, '/');
	while (slash && slash > buf && !slash[1]) {
		*slash = '\0';
		slash = strrchr(buf, '/');
	}
	name = slash ? slash + 1 : buf;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return -1;
	strcpy(last, name);
	if (slash == buf)
		dir = "/";
	else if (slash)
		*slash = '\0';
	else
		dir = "";
	return sb_filecall_resolve(pid, dirfd, dir ? dir : buf, false, out);
}
