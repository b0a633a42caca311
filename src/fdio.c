/* fdio.c - whole descriptors (fdio.h). It owns only the syscalls: what the
 * bytes mean is the caller's. */
#include "fdio.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

int sb_memfd_text(const char *name, const char *s, size_t n)
{
	size_t off = 0;
	int fd = memfd_create(name, 0);

	if (fd < 0)
		return -errno;
	while (off < n) {
		ssize_t w = write(fd, s + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;

			close(fd);
			return err;
		}
		off += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int sb_fd_read_all(int fd, struct sb_buf *out)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		sb_buf_add(out, chunk, (size_t)n);
	}
}
