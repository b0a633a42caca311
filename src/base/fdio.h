/* fdio.h - whole descriptors: the memfds python-sb hands to what it starts
 * (the policy, the hosts text, the stage record), reading them back, and
 * one descriptor passed over a Unix socket.
 */
#ifndef SB_FDIO_H
#define SB_FDIO_H

#include <stddef.h>

#include <sys/types.h>

#include "util.h"

/* The most sb_fd_read_all reads: far above any policy or stage record. */
#define SB_FD_READ_MAX (64u << 20)

/* A new memfd named 'name' holding s[0..n), its offset at 0, inherited by
 * exec (no CLOEXEC), sealed against writes and resizing: what reads it
 * after an exec reads what python-sb wrote. Returns the fd, or -errno. */
int sb_memfd_text(const char *name, const char *s, size_t n);

/* Append everything from fd's offset to its end to 'out', at most
 * SB_FD_READ_MAX bytes. Returns 0, or -errno (-EFBIG over the bound; what
 * was read stays in 'out'). */
int sb_fd_read_all(int fd, struct sb_buf *out);

/* The start of a small file (a /proc or cgroup file, a version file):
 * 'path' under 'dirfd' (AT_FDCWD: as open() does) read once into 'buf',
 * NUL-terminated. The bytes read (0 for an empty file), or -1. */
ssize_t sb_read_small(int dirfd, const char *path, char *buf, size_t size);

/* A descriptor number handed over in text ("7"): 3 to 65535, or -1. */
int sb_fd_parse(const char *s);

/* One descriptor over a connected Unix socket (SCM_RIGHTS, one byte of
 * data). 0 or -errno; sb_recv_fd returns the new fd (CLOEXEC) or -errno. */
int sb_send_fd(int sock, int fd);
int sb_recv_fd(int sock);

#endif
