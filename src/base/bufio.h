/* bufio.h - a buffer's pending bytes written to a non-blocking descriptor:
 * the relays of os-sandbox=qemu (src/launch/qemu.c on the host,
 * src/guest/init.c in the guest, a static program of its own that shares
 * headers only).
 */
#ifndef SB_BUFIO_H
#define SB_BUFIO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

/* Write what is pending in buf[*off..*len) to fd once; both go back to 0
 * when all of it is out. False when fd is gone (an error other than
 * EAGAIN or EINTR), true otherwise. */
static inline bool sb_flush_some(int fd, const char *buf, size_t *off,
				 size_t *len)
{
	ssize_t n = write(fd, buf + *off, *len - *off);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	*off += (size_t)n;
	if (*off == *len)
		*off = *len = 0;
	return true;
}

#endif
