/* fdio.h - whole descriptors: the memfds python-sb hands to what it starts
 * (the policy, the hosts text, the stage record), and reading them back.
 */
#ifndef SB_FDIO_H
#define SB_FDIO_H

#include <stddef.h>

#include "util.h"

/* A new memfd named 'name' holding s[0..n), its offset at 0, inherited by
 * exec (no CLOEXEC). Returns the fd, or -errno. */
int sb_memfd_text(const char *name, const char *s, size_t n);

/* Append everything from fd's offset to its end to 'out'. Returns 0, or
 * -errno (what was read stays in 'out'). */
int sb_fd_read_all(int fd, struct sb_buf *out);

#endif
