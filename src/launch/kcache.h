/* kcache.h - the guest kernels of os-sandbox=qemu kept unpacked (kcache.c:
 * who may write them, who may use them, and when one is stale).
 */
#ifndef SB_KCACHE_H
#define SB_KCACHE_H

#include <sys/stat.h>

/* Where they are kept: made by root, used by everyone. */
#define SB_KCACHE_DIR "/var/cache/python-sb"

/* The unpacked kernel of the bzImage whose identity is 'img' (its fstat),
 * from the cache dir 'dir': an O_RDONLY descriptor (close-on-exec), or -1
 * with *why saying why none is used (none kept yet, or one that someone
 * else than root could have changed: never used). */
int sb_kcache_open(const char *dir, const struct stat *img, const char **why);

/* Keep the unpacked kernel in 'fd' (a memfd, read from offset 0) as the
 * one of 'img' in 'dir', made if missing, replacing the others kept there
 * (a kernel that was updated). Only as root, into a directory only root
 * can change: 0, or -1 with *why. */
int sb_kcache_store(const char *dir, const struct stat *img, int fd,
		    const char **why);

#endif
