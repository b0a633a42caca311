/* kcache.c - the guest kernels of os-sandbox=qemu, kept unpacked.
 *
 * Unpacking the bzImage (vmlinux.c) takes about 0.4 s of every qemu start
 * on the development machine (57 MB of zstd). Root's runs keep the result
 * in SB_KCACHE_DIR, named by the bzImage's identity (device, inode, size,
 * modification and change times): a kernel package that is updated or
 * reinstalled is a new name, and the entries of other identities are
 * removed when one is stored. Everyone's runs use an entry, but only one
 * that nobody but root could have written: the file and its directory
 * owned by root and writable by no one else (mode and ACL), every
 * directory above it too (not even by the user running python-sb), a regular file that is an x86-64 ELF
 * with a PVH entry. The guest kernel stands between the program and the
 * rules inside the guest, so an entry someone else could have changed is
 * never booted: the run unpacks its own, as it does when there is none.
 * Whoever can change a trusted entry could change /boot itself.
 *
 * Entries are written whole before they are named (O_TMPFILE, written,
 * synced, then linked): a reader sees the whole file or nothing.
 */
#include "kcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "trust.h"
#include "vmlinux.h"

#define PREFIX "vmlinux-"

static void entry_name(const struct stat *img, char *out, size_t n)
{
	snprintf(out, n,
		 PREFIX "%llx-%llx-%lld-%lld.%09ld-%lld.%09ld",
		 (unsigned long long)img->st_dev,
		 (unsigned long long)img->st_ino, (long long)img->st_size,
		 (long long)img->st_mtim.tv_sec, img->st_mtim.tv_nsec,
		 (long long)img->st_ctim.tv_sec, img->st_ctim.tv_nsec);
}

/* Only root could have changed it: owned by root, written by no one
 * else (mode, then the ACL as trust.c reads it). */
static bool roots(int fd, const char *path, const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)) &&
	       sb_trust_file(fd, path, st) == 0;
}

/* Every directory from 'canon' up to "/" owned by root and writable by
 * no one else: not even the user running python-sb (a program it runs
 * with an expose-rw= there could otherwise swap the cache). */
static bool roots_above(const char *canon)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", canon);
	for (;;) {
		if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
		    sb_trust_dir(dir, &st) != 0)
			return false;
		if (!strcmp(dir, "/"))
			return true;
		slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

/* The cache directory, opened, when only root could change it and the
 * directories above it: an O_PATH descriptor, or -1 with *why. */
static int open_dir(const char *dir, const char **why)
{
	char canon[PATH_MAX];
	struct stat st;
	int fd;

	if (!realpath(dir, canon)) {
		*why = errno == ENOENT ? "nothing kept yet" : strerror(errno);
		return -1;
	}
	fd = open(canon, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		*why = strerror(errno);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!roots(-1, canon, &st) || !roots_above(canon)) {
		*why = "the directory could be changed by someone else than "
		       "root";
		close(fd);
		return -1;
	}
	return fd;
}

int sb_kcache_open(const char *dir, const struct stat *img, const char **why)
{
	char name[160], path[PATH_MAX + 170];
	unsigned char *map;
	struct stat st;
	bool pvh;
	int dfd, fd;

	dfd = open_dir(dir, why);
	if (dfd < 0)
		return -1;
	entry_name(img, name, sizeof(name));
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0) {
		*why = errno == ENOENT ? "nothing kept for this kernel"
				       : strerror(errno);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 64 ||
	    !roots(fd, path, &st)) {
		*why = "the entry could be changed by someone else than root";
		close(fd);
		return -1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	pvh = map != MAP_FAILED &&
	      sb_vmlinux_has_pvh(map, (size_t)st.st_size);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (!pvh) {
		*why = "the entry is no kernel with a PVH entry";
		close(fd);
		return -1;
	}
	*why = NULL;
	return fd;
}

/* Remove the entries of other identities than 'keep' (and 'keep' itself
 * when 'all'). */
static void prune(int dfd, const char *keep, bool all)
{
	int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (lfd < 0)
		return;
	d = fdopendir(lfd);
	if (!d) {
		close(lfd);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, PREFIX, strlen(PREFIX)) &&
		    (all || strcmp(e->d_name, keep) != 0))
			unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

int sb_kcache_store(const char *dir, const struct stat *img, int fd,
		    const char **why)
{
	char name[160], proc[64];
	struct stat st;
	off_t off = 0;
	int dfd, tfd;

	if (geteuid() != 0) {
		*why = "only root's runs keep kernels";
		return -1;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		*why = strerror(errno);
		return -1;
	}
	dfd = open_dir(dir, why);
	if (dfd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		*why = strerror(errno);
		close(dfd);
		return -1;
	}
	tfd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (tfd < 0) {
		*why = strerror(errno);
		close(dfd);
		return -1;
	}
	while (off < st.st_size) {
		ssize_t k = sendfile(tfd, fd, &off, (size_t)(st.st_size - off));

		if (k <= 0) {
			*why = k < 0 ? strerror(errno) : "cut short";
			goto fail;
		}
	}
	if (fchmod(tfd, 0644) < 0 || fdatasync(tfd) < 0) {
		*why = strerror(errno);
		goto fail;
	}
	entry_name(img, name, sizeof(name));
	/* the older kernels, and an entry of this one that was not ours to
	 * use (it had been changed): replaced */
	prune(dfd, name, true);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tfd);
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) < 0 &&
	    errno != EEXIST) {
		*why = strerror(errno);
		goto fail;
	}
	close(tfd);
	close(dfd);
	*why = NULL;
	return 0;
fail:
	close(tfd);
	close(dfd);
	return -1;
}
