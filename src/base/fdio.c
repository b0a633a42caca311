/* fdio.c - whole descriptors (fdio.h). It owns only the syscalls: what the
 * bytes mean is the caller's. */
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

int sb_memfd_text(const char *name, const char *s, size_t n)
{
	size_t off = 0;
	int fd = memfd_create(name, MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	while (off < n) {
		ssize_t w = write(fd, s + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			close(fd);
			return err;
		}
		off += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS,
		  F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) <
		    0 ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

ssize_t sb_read_small(int dirfd, const char *path, char *buf, size_t size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || size == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Straight into the buffer, growing it from 4 KiB: a 64 KiB chunk on the
 * stack made the stack-clash probes touch 16 fresh pages at every start of
 * the guard to read a policy of 300 bytes, and a fresh page costs a fault
 * of tens of microseconds in a VM (make profile's guard-read). */
int sb_fd_read_all(int fd, struct sb_buf *out)
{
	size_t total = 0, room = 4096;

	for (;;) {
		ssize_t n;

		sb_buf_reserve(out, room);
		n = read(fd, out->s + out->len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		total += (size_t)n;
		if (total > SB_FD_READ_MAX)
			return -EFBIG;
		out->len += (size_t)n;
		out->s[out->len] = '\0';
		if ((size_t)n == room && room < 65536)
			room *= 2;
	}
}

int sb_fd_parse(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 3 || v > 65535)
		return -1;
	return (int)v;
}

int sb_send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'f';
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;

	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1)
		return errno ? -errno : -EIO;
	return 0;
}

int sb_recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	int fd = -1;

	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return errno ? -errno : -EIO;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd >= 0 ? fd : -EPROTO;
}
