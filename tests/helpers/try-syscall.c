/* try-syscall.c - hostile native code for the kernel layer's tests: it
 * performs exactly one system call (or the few one action needs) and prints
 * "ok" or "errno <NAME>", exiting 0 either way; 1 on a usage error. It
 * decides nothing and hides nothing: the sandbox around it must refuse.
 *
 *   try-syscall ACTION [ARG...]
 *   open-read PATH | open-write PATH | read PATH | exec PATH [ARG...]
 *   connect-tcp IP PORT | sendto-udp IP PORT | connect-abstract NAME
 *   bind-abstract NAME SECONDS (then "accepted" if anyone connected)
 *   connect-unix PATH | bind-unix PATH | ptrace-parent | kill-parent
 *   bind-unix-private PATH (bind-unix under umask 077)
 *   write-proc-mem | pidfd-race PID SECONDS (a pidfd_send_signal whose
 *     descriptor a second thread flips between a child's and PID's)
 *   zerocopy-send IP PORT (60 KB of 'A' with MSG_ZEROCOPY until the
 *     send buffer is full, then other calls to the supervisor)
 *   async-owner FD SECONDS (F_SETSIG SIGKILL and O_ASYNC on FD, then
 *     SECONDS of sleep while its owner does I/O)
 *   init-module | socket-raw | socket-netlink | unshare-user
 *   tiocsti FD TEXT | winsize FD ROWS COLS (TIOCSWINSZ)
 *   prlimit-nofile PID | setpriority PID NICE
 *   setaffinity PID | ioprio PID | chmod PATH OCTAL | chown PATH UID
 *   utimes PATH | setxattr PATH | mknod-char PATH | mknod-fifo PATH
 *   create-suid PATH | shm-read KEY | msg-send KEY | mq-open NAME
 *   add-key | sethostname NAME | ifflags-lo | ip-options | daemon FILE
 *   caps-wait FILE | sendmsg-retopts IP PORT
 *   int80 (x86-64: i386 getpid through int 0x80)
 *   sendmsg-mark IP PORT MARK (SO_MARK in the ancillary data)
 *   scm-pass (one descriptor over a socket pair, received back)
 *   scm-flood FILE SENDERS (a setsid process appends to FILE; up to
 *     SENDERS processes block in sendmsg with 253 descriptors each on a
 *     full socket, halved at each refusal, then 16 without; "ok N" with
 *     N the sends refused, and exits)
 *   sendmmsg-flood FILE SENDERS (SENDERS processes block in sendmmsg of
 *     64 x 64 KiB on a full socket; then FILE is made and the helper
 *     waits, at most a minute, until the test removes it)
 *   raw NR[,ARG...]... (one line "NR ok|errno E" each)
 *   inotify-watch PATH FILE SECONDS (an inotify watch on PATH; the names
 *     its events carry are appended to FILE until one comes, at most
 *     SECONDS)
 *   tcxonc FD ACTION (TCOOFF 0, TCOON 1, TCIOFF 2, TCION 3)
 *   lease PATH MARKER SECONDS (a write lease on PATH, opened read-only;
 *     MARKER is made once it is tried, and a lease held SECONDS)
 *   tty-state FD (O_NONBLOCK on FD's open file description, and its
 *     terminal's ECHO and ICANON flipped)
 *   dnotify DIR FILE SECONDS (F_NOTIFY on DIR for its files' reads and
 *     writes; the count of SIGIO that came in SECONDS written to FILE)
 *   reopen-write FD TEXT (FD opened again for writing through
 *     /proc/self/fd/FD, and TEXT written there)
 *   unlock FD (the flock(2) lock on FD's open file description released)
 *   tostop FD SECONDS (TOSTOP set on FD's terminal, then SECONDS of sleep
 *     while the caller's background job writes to it)
 *   mcast-join GROUP (an IPv4 or IPv6 multicast group joined on a UDP
 *     socket, held a second: its report goes out meanwhile)
 *   getxattr PATH NAME FILE (the attribute's value, appended to FILE)
 *   kill PID SIG | setown PID SIG (a pipe's owner made PID, with F_SETSIG
 *     SIG, then written to: the kernel signals its owner)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strerrorname_np, pipe2, unshare */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/keyctl.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int result(int rc)
{
	if (rc < 0) {
		const char *name = strerrorname_np(errno);

		printf("errno %s\n", name ? name : "?");
	} else {
		printf("ok\n");
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: try-syscall ACTION [ARG...] (see the source)\n");
	return 1;
}

static int inet_addr_of(const char *ip, const char *port,
			struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	long p = strtol(port, NULL, 10);

	memset(ss, 0, sizeof(*ss));
	if (p < 0 || p > 65535)
		return -1;
	if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)p);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*in6);
		return 0;
	}
	return -1;
}

/* socket() and connect()/sendto(): the first refusal is the answer. */
static int net_action(const char *ip, const char *port, int type)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc;

	if (inet_addr_of(ip, port, &ss, &len) < 0)
		return usage();
	fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	if (type == SOCK_STREAM)
		rc = connect(fd, (struct sockaddr *)&ss, len);
	else
		rc = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len);
	return result(rc);
}

static int unix_action(const char *name, bool abstract)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	socklen_t len;
	int fd;

	if (n + 1 >= sizeof(sun.sun_path))
		return usage();
	memcpy(sun.sun_path + (abstract ? 1 : 0), name, n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
			  (abstract ? 1 : 0));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	return result(connect(fd, (struct sockaddr *)&sun, len));
}

/* Bind a Unix socket to a path: the socket file it makes. */
static int bind_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	int fd;

	if (n + 1 >= sizeof(sun.sun_path))
		return usage();
	memcpy(sun.sun_path, path, n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	return result(bind(fd, (struct sockaddr *)&sun,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				       n + 1)));
}

/* pidfd_send_signal(SIGUSR1) on a descriptor that a second thread keeps
 * pointing (dup2) now at a pidfd of a child of ours, which ignores the
 * signal, now at one of 'victim': a check of the descriptor made before
 * the kernel uses it is raced. "ok" when the victim is gone (the signal
 * got out) within 'secs', else the errno the victim's sends got. */
static int pidfd_flip[3];
static volatile int pidfd_flipping = 1;

static void *pidfd_flipper(void *unused)
{
	(void)unused;
	while (pidfd_flipping) {
		dup2(pidfd_flip[0], pidfd_flip[2]);
		dup2(pidfd_flip[1], pidfd_flip[2]);
	}
	return NULL;
}

static int pidfd_race(const char *victim, const char *secs)
{
	struct pollfd gone = { .events = POLLIN };
	time_t end = time(NULL) + atoi(secs);
	pthread_t t;
	int err = EPERM, escaped = 0;
	pid_t child = fork();

	if (child == 0) {
		signal(SIGUSR1, SIG_IGN);
		for (;;)
			pause();
	}
	if (child < 0)
		return result(-1);
	pidfd_flip[0] = (int)syscall(SYS_pidfd_open, child, 0);
	pidfd_flip[1] = (int)syscall(SYS_pidfd_open, atoi(victim), 0);
	if (pidfd_flip[0] < 0 || pidfd_flip[1] < 0) {
		err = errno;
		kill(child, SIGKILL);
		errno = err;
		return result(-1);
	}
	gone.fd = pidfd_flip[1];
	pidfd_flip[2] = dup(pidfd_flip[0]);
	if (pidfd_flip[2] < 0 ||
	    pthread_create(&t, NULL, pidfd_flipper, NULL) != 0)
		return result(-1);
	while (!escaped && time(NULL) < end) {
		if (syscall(SYS_pidfd_send_signal, pidfd_flip[2], SIGUSR1,
			    NULL, 0) < 0 && errno != EBADF)
			err = errno;
		escaped = poll(&gone, 1, 0) == 1;
	}
	pidfd_flipping = 0;
	pthread_join(t, NULL);
	kill(child, SIGKILL);
	if (escaped)
		return result(0);
	errno = err;
	return result(-1);
}

/* Offer a service under an abstract name: bind and listen, say so, then
 * wait up to 'secs' for anyone to connect (the test does, from outside the
 * sandbox): the last line is "accepted" when someone came. */
static int bind_abstract(const char *name, const char *secs)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	struct pollfd p = { .events = POLLIN };

	if (n + 1 >= sizeof(sun.sun_path))
		return usage();
	memcpy(sun.sun_path + 1, name, n);
	p.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p.fd < 0 ||
	    bind(p.fd, (struct sockaddr *)&sun,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1)) <
		    0 ||
	    listen(p.fd, 4) < 0)
		return result(-1);
	result(0);
	fflush(stdout);
	if (poll(&p, 1, atoi(secs) * 1000) == 1 &&
	    accept(p.fd, NULL, NULL) >= 0)
		printf("accepted\n");
	return 0;
}

/* exec in a child, so that the answer can still be printed: the child
 * reports execve's errno over a close-on-exec pipe, and silence means the
 * program ran. */
static int exec_action(char **argv)
{
	int pipefd[2], err = 0, status;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return result(-1);
	pid = fork();
	if (pid < 0)
		return result(-1);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
			dup2(devnull, 1);
		execv(argv[0], argv);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(126);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &err, sizeof(err)) != sizeof(err))
		err = 0;
	waitpid(pid, &status, 0);
	errno = err;
	return result(err ? -1 : 0);
}

static int read_action(const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return result(-1);
	do
		n = read(fd, buf, sizeof(buf));
	while (n > 0);
	return result(n < 0 ? -1 : 0);
}

static int write_proc_mem(void)
{
	static volatile char target = 'a';
	char c = 'b';
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return result(-1);
	if (pwrite(fd, &c, 1, (off_t)(uintptr_t)&target) != 1)
		return result(-1);
	return result(target == 'b' ? 0 : -1);
}

static int ptrace_parent(void)
{
	pid_t ppid = getppid();

	if (ptrace(PTRACE_ATTACH, ppid, NULL, NULL) < 0)
		return result(-1);
	waitpid(ppid, NULL, __WALL);
	ptrace(PTRACE_DETACH, ppid, NULL, NULL);
	return result(0);
}

/* Keystrokes into a terminal's input queue, one ioctl a byte. */
static int tiocsti(const char *fd, const char *text)
{
	int n = atoi(fd);

	for (; *text; text++)
		if (ioctl(n, TIOCSTI, text) < 0)
			return result(-1);
	return result(0);
}

static int prlimit_nofile(const char *pid)
{
	struct rlimit r = { 7, 7 };

	return result(prlimit((pid_t)atoi(pid), RLIMIT_NOFILE, &r, NULL));
}

static int setaffinity(const char *pid)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return result(sched_setaffinity((pid_t)atoi(pid), sizeof(set), &set));
}

/* IOPRIO_CLASS_IDLE for the process */
static int ioprio(const char *pid)
{
	return result((int)syscall(SYS_ioprio_set, 1, atoi(pid), 3 << 13));
}

static int shm_read(const char *key)
{
	int id = shmget((key_t)strtol(key, NULL, 0), 0, 0);
	char *p;

	if (id < 0)
		return result(-1);
	p = shmat(id, NULL, SHM_RDONLY);
	if (p == (void *)-1)
		return result(-1);
	printf("read %.16s\n", p);
	return result(0);
}

static int msg_send(const char *key)
{
	struct {
		long type;
		char text[8];
	} m = { 1, "escaped" };
	int id = msgget((key_t)strtol(key, NULL, 0), 0);

	if (id < 0)
		return result(-1);
	return result(msgsnd(id, &m, sizeof(m.text), IPC_NOWAIT));
}

static int ifflags_lo(void)
{
	struct ifreq ifr;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return result(-1);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return result(-1);
	/* the same flags again: a no-op if it passes, but it passed */
	return result(ioctl(fd, SIOCSIFFLAGS, &ifr));
}

static int ip_options(void)
{
	/* a loose source route through 127.0.0.2 */
	unsigned char opt[8] = { 1, 131, 7, 4, 127, 0, 0, 2 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return result(-1);
	return result(setsockopt(fd, IPPROTO_IP, IP_OPTIONS, opt,
				 sizeof(opt)));
}

/* A UDP datagram to IP:PORT whose ancillary data asks for a loose source
 * route through 127.0.0.2 (IP_RETOPTS). */
static int sendmsg_retopts(const char *ip, const char *port)
{
	unsigned char opt[8] = { 1, 131, 7, 4, 127, 0, 0, 2 };
	union {
		char buf[CMSG_SPACE(sizeof(opt))];
		struct cmsghdr align;
	} u;
	struct sockaddr_storage ss;
	struct msghdr h = { 0 };
	struct iovec v = { "x", 1 };
	struct cmsghdr *cm;
	socklen_t len;
	int fd;

	if (inet_addr_of(ip, port, &ss, &len) < 0 || ss.ss_family != AF_INET)
		return usage();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	memset(&u, 0, sizeof(u));
	h.msg_name = &ss;
	h.msg_namelen = len;
	h.msg_iov = &v;
	h.msg_iovlen = 1;
	h.msg_control = u.buf;
	h.msg_controllen = sizeof(u.buf);
	cm = CMSG_FIRSTHDR(&h);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_RETOPTS;
	cm->cmsg_len = CMSG_LEN(sizeof(opt));
	memcpy(CMSG_DATA(cm), opt, sizeof(opt));
	return result((int)sendmsg(fd, &h, 0));
}

/* A datagram carrying SO_MARK as ancillary data: a packet mark picks
 * routes and firewall rules, and needs CAP_NET_ADMIN (or CAP_NET_RAW) of
 * whoever sends. */
static int sendmsg_mark(const char *ip, const char *port, const char *mark)
{
	uint32_t m = (uint32_t)strtoul(mark, NULL, 0);
	union {
		char buf[CMSG_SPACE(sizeof(m))];
		struct cmsghdr align;
	} u;
	struct sockaddr_storage ss;
	struct msghdr h = { 0 };
	struct iovec v = { "x", 1 };
	struct cmsghdr *cm;
	socklen_t len;
	int fd;

	if (inet_addr_of(ip, port, &ss, &len) < 0)
		return usage();
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	memset(&u, 0, sizeof(u));
	h.msg_name = &ss;
	h.msg_namelen = len;
	h.msg_iov = &v;
	h.msg_iovlen = 1;
	h.msg_control = u.buf;
	h.msg_controllen = sizeof(u.buf);
	cm = CMSG_FIRSTHDR(&h);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SO_MARK;
	cm->cmsg_len = CMSG_LEN(sizeof(m));
	memcpy(CMSG_DATA(cm), &m, sizeof(m));
	return result((int)sendmsg(fd, &h, 0));
}

/* A double fork: the grandchild outlives its parent and writes its pid
 * to FILE, then lives on; the answer is about the forks. */
static int daemon_action(const char *file)
{
	pid_t pid = fork();

	if (pid < 0)
		return result(-1);
	if (pid == 0) {
		if (fork() == 0) {
			FILE *f;

			setsid();
			f = fopen(file, "w");
			if (f) {
				fprintf(f, "%d\n", (int)getpid());
				fclose(f);
			}
			for (;;)
				pause();
		}
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	usleep(200 * 1000);
	return result(0);
}

/* Write the pid to FILE and wait, at most a minute, until the test,
 * which reads /proc/PID/status from outside, removes FILE. */
static int caps_wait(const char *file)
{
	FILE *f = fopen(file, "w");
	int i;

	if (!f)
		return result(-1);
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	for (i = 0; i < 1200 && access(file, F_OK) == 0; i++)
		usleep(50 * 1000);
	return result(0);
}

/* A stream socket pair whose sv[0] is full: a blocking send on it waits
 * (the filling write() is not a notified call). */
static int full_pair(int sv[2])
{
	static char junk[4096];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	while (write(sv[0], junk, sizeof(junk)) > 0)
		;
	fcntl(sv[0], F_SETFL, 0);
	return 0;
}

/* sendmsg on 'sock' with 'n' copies of 'fd' as SCM_RIGHTS: 0 or -errno */
static int send_fds(int sock, int fd, int n)
{
	char data = 'x', *cbuf;
	struct iovec iov = { &data, 1 };
	struct msghdr m = { 0 };
	struct cmsghdr *cm;
	int i, rc = 0;

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (n == 0)
		return sendmsg(sock, &m, 0) < 0 ? -errno : 0;
	cbuf = calloc(1, CMSG_SPACE(sizeof(int) * (size_t)n));
	if (!cbuf)
		return -ENOMEM;
	m.msg_control = cbuf;
	m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	for (i = 0; i < n; i++)
		memcpy(CMSG_DATA(cm) + i * sizeof(int), &fd, sizeof(int));
	if (sendmsg(sock, &m, 0) < 0)
		rc = -errno;
	free(cbuf);
	return rc;
}

static int scm_pass(void)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr m = { 0 };
	struct iovec iov;
	struct stat a, b;
	int sv[2], got = -1, rc;
	char c;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return result(-1);
	rc = send_fds(sv[0], 1, 1);
	if (rc < 0) {
		errno = -rc;
		return result(-1);
	}
	iov.iov_base = &c;
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.b;
	m.msg_controllen = sizeof(ctl.b);
	if (recvmsg(sv[1], &m, MSG_CMSG_CLOEXEC) != 1)
		return result(-1);
	if (CMSG_FIRSTHDR(&m) && CMSG_FIRSTHDR(&m)->cmsg_type == SCM_RIGHTS)
		memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	if (got < 0 || fstat(got, &a) < 0 || fstat(1, &b) < 0 ||
	    a.st_ino != b.st_ino) {
		errno = EBADMSG;
		return result(-1);
	}
	return result(0);
}

/* The red team's F1: descriptors held by the supervisor for blocked
 * sends must not keep it from ending the setsid process at the end. */
static int scm_flood(const char *file, int senders)
{
	int sv[2], i, refused = 0, count = 253;
	pid_t pid;

	if (full_pair(sv) < 0)
		return result(-1);
	pid = fork();
	if (pid == 0) {
		if (fork() != 0)
			_exit(0);
		setsid();
		/* python-sb's caller must not wait for it on these */
		close(0);
		close(1);
		close(2);
		for (;;) {
			FILE *f = fopen(file, "a");

			if (f) {
				fprintf(f, "%d\n", (int)getpid());
				fclose(f);
			}
			usleep(50 * 1000);
		}
	}
	waitpid(pid, NULL, 0);
	/* as many descriptors as will be taken: halved at each refusal */
	for (i = 0; i < senders && count > 0; i++) {
		pid_t c = fork();
		int st;

		if (c == 0)
			_exit(-send_fds(sv[0], sv[1], count));
		usleep(100 * 1000);
		if (waitpid(c, &st, WNOHANG) == c) {
			refused++;
			count /= 2;
		}
	}
	/* and plain blocked sends, which hold the socket and the caller */
	for (i = 0; i < 16; i++)
		if (fork() == 0)
			_exit(send_fds(sv[0], -1, 0) < 0);
	usleep(200 * 1000);
	printf("ok %d\n", refused);
	_exit(0);
}

/* The red team's F2: payloads of blocked sends copied by the supervisor
 * must not grow it with the number of senders. */
static int sendmmsg_flood(const char *file, int senders)
{
	int sv[2], i, fd;

	if (full_pair(sv) < 0)
		return result(-1);
	for (i = 0; i < senders; i++) {
		if (fork() == 0) {
			static struct mmsghdr mm[64];
			static struct iovec iov[64];
			char *buf = malloc(65536);
			int j;

			if (!buf)
				_exit(1);
			memset(buf, 'A', 65536);
			for (j = 0; j < 64; j++) {
				iov[j].iov_base = buf;
				iov[j].iov_len = 65536;
				mm[j].msg_hdr.msg_iov = &iov[j];
				mm[j].msg_hdr.msg_iovlen = 1;
			}
			sendmmsg(sv[0], mm, 64, 0);
			_exit(0);
		}
	}
	usleep(500 * 1000);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return result(-1);
	close(fd);
	for (i = 0; i < 1200 && access(file, F_OK) == 0; i++)
		usleep(50 * 1000);
	return result(0);
}

/* The i386 ABI from 64-bit code: int 0x80 reaches the 32-bit table when
 * the kernel has IA-32 emulation (a SIGSEGV when it has not). */
static int int80(void)
{
#if defined(__x86_64__)
	long r;

	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L /* getpid */)
			 : "memory");
	errno = r < 0 ? (int)-r : 0;
	return result(r < 0 ? -1 : 0);
#else
	printf("errno ENOSYS\n");
	return 0;
#endif
}

/* raw NR[,ARG...]: the call with these integer arguments */
/* A watch on a directory or file, and what it tells: the names of the
 * entries made, opened or removed there. */
static int inotify_watch(const char *path, const char *file, int seconds)
{
	char buf[4096] __attribute__((aligned(8)));
	struct pollfd p = { .events = POLLIN };
	bool named = false;
	FILE *f;

	p.fd = inotify_init1(IN_CLOEXEC);
	if (p.fd < 0 || inotify_add_watch(p.fd, path, IN_ALL_EVENTS) < 0)
		return result(-1);
	while (!named && poll(&p, 1, seconds * 1000) > 0) {
		ssize_t n = read(p.fd, buf, sizeof(buf)), off = 0;

		f = fopen(file, "a");
		while (f && n > 0 && off < n) {
			const struct inotify_event *e = (void *)(buf + off);

			if (e->len) {
				fprintf(f, "%s\n", e->name);
				named = true;
			}
			off += (ssize_t)(sizeof(*e) + e->len);
		}
		if (f)
			fclose(f);
		if (n <= 0)
			break;
	}
	return result(0);
}

/* A write lease holds every other open of the file, a reader's too, until
 * its holder lets go or the lease-break time (45 s) passes; SIGIO, which
 * tells the holder, is ignored. */
static int lease(const char *path, const char *marker, int seconds)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1, m;

	signal(SIGIO, SIG_IGN);
	if (fd >= 0)
		rc = fcntl(fd, F_SETLEASE, F_WRLCK);
	m = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (m >= 0)
		close(m);
	if (rc == 0)
		sleep((unsigned)seconds);
	return result(rc);
}

/* What the caller shares with the program: the open file description's
 * flags and the terminal's modes. */
static int tty_state(int fd)
{
	struct termios t;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    tcgetattr(fd, &t) < 0)
		return result(-1);
	t.c_lflag ^= ECHO | ICANON;
	return result(tcsetattr(fd, TCSANOW, &t));
}

static volatile sig_atomic_t dnotified;

static void on_dnotify(int sig)
{
	(void)sig;
	dnotified++;
}

static int dnotify(const char *dir, const char *file, int seconds)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FILE *f;

	signal(SIGIO, on_dnotify);
	if (fd < 0 || fcntl(fd, F_NOTIFY,
			    DN_ACCESS | DN_MODIFY | DN_MULTISHOT) < 0)
		return result(-1);
	result(0);
	while (seconds-- > 0)
		sleep(1);
	f = fopen(file, "w");
	if (f) {
		fprintf(f, "%d\n", (int)dnotified);
		fclose(f);
	}
	return 0;
}

static int reopen_write(int fd, const char *text)
{
	char path[64];
	int w;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	w = open(path, O_WRONLY | O_CLOEXEC);
	if (w < 0)
		return result(-1);
	return result(write(w, text, strlen(text)) < 0 ? -1 : 0);
}

static int tostop(int fd, int seconds)
{
	struct termios t;
	int rc;

	if (tcgetattr(fd, &t) < 0)
		return result(-1);
	t.c_lflag |= TOSTOP;
	rc = result(tcsetattr(fd, TCSANOW, &t));
	sleep((unsigned)seconds);
	return rc;
}

static int mcast_join(const char *group)
{
	struct ip_mreq m4 = { .imr_interface.s_addr = htonl(INADDR_ANY) };
	struct ipv6_mreq m6 = { .ipv6mr_interface = 0 };
	int s, rc;

	if (inet_pton(AF_INET, group, &m4.imr_multiaddr) == 1) {
		s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		rc = s < 0 ? -1
			   : setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m4,
					sizeof(m4));
	} else if (inet_pton(AF_INET6, group, &m6.ipv6mr_multiaddr) == 1) {
		s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		rc = s < 0 ? -1
			   : setsockopt(s, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP,
					&m6, sizeof(m6));
	} else {
		return usage();
	}
	if (rc == 0)
		sleep(1);
	return result(rc);
}

static int getxattr_action(const char *path, const char *name,
			   const char *file)
{
	char v[4096];
	ssize_t n = getxattr(path, name, v, sizeof(v));
	FILE *f;

	if (n < 0)
		return result(-1);
	f = fopen(file, "a");
	if (f) {
		fwrite(v, 1, (size_t)n, f);
		fclose(f);
	}
	return result(0);
}

static int setown(pid_t pid, int sig)
{
	int p[2], rc;

	if (pipe2(p, O_CLOEXEC) < 0)
		return result(-1);
	rc = fcntl(p[0], F_SETSIG, sig);
	if (rc == 0)
		rc = fcntl(p[0], F_SETOWN, pid);
	if (rc == 0)
		rc = fcntl(p[0], F_SETFL, O_ASYNC);
	if (rc == 0 && write(p[1], "x", 1) != 1)
		rc = -1;
	return result(rc);
}

/* The signal of descriptor fd's owner made SIGKILL (F_SETSIG) and O_ASYNC
 * set on it: the owner is signalled at its next I/O. The answer is
 * printed, then the helper waits 'secs' while the test does I/O. */
static int async_owner(int fd, const char *secs)
{
	int rc = fcntl(fd, F_SETSIG, SIGKILL), err = errno;
	int flags = fcntl(fd, F_GETFL);

	if (fcntl(fd, F_SETFL, flags | O_ASYNC) < 0) {
		err = errno;
		rc = -1;
	}
	errno = err;
	result(rc);
	fflush(stdout);
	sleep((unsigned)atoi(secs));
	return 0;
}

/* A TCP connection to IP PORT with zero copy (SO_ZEROCOPY), a small send
 * buffer, and 60 KB of 'A' sent with MSG_ZEROCOPY until it is full, then a
 * few other calls that go to the supervisor: the peer (the test) must get
 * 'A' and nothing else. "ok" when zero copy was set and a send took it,
 * else the first errno. */
static int zerocopy_send(const char *ip, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	static char buf[60000];
	struct iovec v = { buf, sizeof(buf) };
	struct msghdr h = { .msg_iov = &v, .msg_iovlen = 1 };
	int s, one = 1, small = 4096, i, err = 0;
	bool sent = false;

	if (inet_addr_of(ip, port, &ss, &len) < 0)
		return usage();
	memset(buf, 'A', sizeof(buf));
	s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return result(-1);
	if (setsockopt(s, SOL_SOCKET, 60 /* SO_ZEROCOPY */, &one,
		       sizeof(one)) < 0)
		err = errno;
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (connect(s, (struct sockaddr *)&ss, len) < 0)
		return result(-1);
	for (i = 0; i < 64; i++) {
		if (sendmsg(s, &h, 0x4000000 /* MSG_ZEROCOPY */ |
					   MSG_DONTWAIT) < 0)
			break;
		sent = true;
	}
	for (i = 0; i < 16; i++) {
		int t = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (t >= 0) {
			connect(t, (struct sockaddr *)&ss, len);
			close(t);
		}
	}
	sleep(1);
	if (err) {
		errno = err;
		return result(-1);
	}
	return result(sent ? 0 : -1);
}

static int raw(int n, char **specs)
{
	int i;

	for (i = 0; i < n; i++) {
		unsigned long a[6] = { 0 };
		char *s = specs[i], *end;
		long nr = strtol(s, &end, 0), rc;
		int k = 0;

		while (*end == ',' && k < 6) {
			a[k++] = strtoul(end + 1, &end, 0);
		}
		rc = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		printf("%ld ", nr);
		result(rc < 0 ? -1 : 0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *a = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && strcmp(a, "open-read") == 0)
		return result(open(argv[2], O_RDONLY | O_CLOEXEC));
	if (argc == 3 && strcmp(a, "open-write") == 0)
		return result(open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC,
				   0600));
	if (argc == 3 && strcmp(a, "read") == 0)
		return read_action(argv[2]);
	if (argc >= 3 && strcmp(a, "exec") == 0)
		return exec_action(argv + 2);
	if (argc == 4 && strcmp(a, "connect-tcp") == 0)
		return net_action(argv[2], argv[3], SOCK_STREAM);
	if (argc == 4 && strcmp(a, "sendto-udp") == 0)
		return net_action(argv[2], argv[3], SOCK_DGRAM);
	if (argc == 3 && strcmp(a, "connect-abstract") == 0)
		return unix_action(argv[2], true);
	if (argc == 4 && strcmp(a, "bind-abstract") == 0)
		return bind_abstract(argv[2], argv[3]);
	if (argc == 3 && strcmp(a, "connect-unix") == 0)
		return unix_action(argv[2], false);
	if (argc == 3 && strcmp(a, "bind-unix") == 0)
		return bind_unix(argv[2]);
	if (argc == 3 && strcmp(a, "bind-unix-private") == 0) {
		umask(077);
		return bind_unix(argv[2]);
	}
	if (argc == 4 && strcmp(a, "async-owner") == 0)
		return async_owner(atoi(argv[2]), argv[3]);
	if (argc == 4 && strcmp(a, "zerocopy-send") == 0)
		return zerocopy_send(argv[2], argv[3]);
	if (argc == 4 && strcmp(a, "pidfd-race") == 0)
		return pidfd_race(argv[2], argv[3]);
	if (argc == 2 && strcmp(a, "ptrace-parent") == 0)
		return ptrace_parent();
	if (argc == 2 && strcmp(a, "kill-parent") == 0)
		return result(kill(getppid(), 0));
	if (argc == 2 && strcmp(a, "write-proc-mem") == 0)
		return write_proc_mem();
	if (argc == 2 && strcmp(a, "init-module") == 0)
		return result((int)syscall(SYS_init_module, NULL, 0UL, ""));
	if (argc == 2 && strcmp(a, "socket-raw") == 0)
		return result(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC,
				     IPPROTO_ICMP));
	if (argc == 2 && strcmp(a, "socket-netlink") == 0)
		return result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
				     NETLINK_ROUTE));
	if (argc == 2 && strcmp(a, "unshare-user") == 0)
		return result(unshare(CLONE_NEWUSER));
	if (argc == 4 && strcmp(a, "tiocsti") == 0)
		return tiocsti(argv[2], argv[3]);
	if (argc == 5 && strcmp(a, "winsize") == 0) {
		struct winsize ws = { .ws_row = (unsigned short)atoi(argv[3]),
				      .ws_col = (unsigned short)atoi(argv[4]) };

		return result(ioctl(atoi(argv[2]), TIOCSWINSZ, &ws));
	}
	if (argc == 3 && strcmp(a, "prlimit-nofile") == 0)
		return prlimit_nofile(argv[2]);
	if (argc == 4 && strcmp(a, "setpriority") == 0)
		return result(setpriority(PRIO_PROCESS, (id_t)atoi(argv[2]),
					  atoi(argv[3])));
	if (argc == 3 && strcmp(a, "setaffinity") == 0)
		return setaffinity(argv[2]);
	if (argc == 3 && strcmp(a, "ioprio") == 0)
		return ioprio(argv[2]);
	if (argc == 4 && strcmp(a, "chmod") == 0)
		return result(chmod(argv[2], (mode_t)strtol(argv[3], NULL, 8)));
	if (argc == 4 && strcmp(a, "chown") == 0)
		return result(chown(argv[2], (uid_t)atoi(argv[3]),
				    (gid_t)-1));
	if (argc == 3 && strcmp(a, "utimes") == 0) {
		struct timeval tv[2] = { { 1000000, 0 }, { 1000000, 0 } };

		return result(utimes(argv[2], tv));
	}
	if (argc == 3 && strcmp(a, "setxattr") == 0)
		return result(setxattr(argv[2], "user.pysb", "x", 1, 0));
	if (argc == 3 && strcmp(a, "mknod-char") == 0)
		return result(mknod(argv[2], S_IFCHR | 0666, makedev(1, 3)));
	if (argc == 3 && strcmp(a, "mknod-fifo") == 0)
		return result(mknod(argv[2], S_IFIFO | 0600, 0));
	if (argc == 3 && strcmp(a, "create-suid") == 0)
		return result(open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC,
				   04755));
	if (argc == 3 && strcmp(a, "shm-read") == 0)
		return shm_read(argv[2]);
	if (argc == 3 && strcmp(a, "msg-send") == 0)
		return msg_send(argv[2]);
	if (argc == 3 && strcmp(a, "mq-open") == 0)
		return result(mq_open(argv[2], O_RDWR));
	if (argc == 2 && strcmp(a, "add-key") == 0)
		return result((int)syscall(SYS_add_key, "user", "pysb", "x", 1,
					   KEY_SPEC_USER_KEYRING));
	if (argc == 3 && strcmp(a, "sethostname") == 0)
		return result(sethostname(argv[2], strlen(argv[2])));
	if (argc == 2 && strcmp(a, "ifflags-lo") == 0)
		return ifflags_lo();
	if (argc == 2 && strcmp(a, "ip-options") == 0)
		return ip_options();
	if (argc == 3 && strcmp(a, "daemon") == 0)
		return daemon_action(argv[2]);
	if (argc == 4 && strcmp(a, "sendmsg-retopts") == 0)
		return sendmsg_retopts(argv[2], argv[3]);
	if (argc == 3 && strcmp(a, "caps-wait") == 0)
		return caps_wait(argv[2]);
	if (argc == 5 && strcmp(a, "sendmsg-mark") == 0)
		return sendmsg_mark(argv[2], argv[3], argv[4]);
	if (argc == 2 && strcmp(a, "scm-pass") == 0)
		return scm_pass();
	if (argc == 4 && strcmp(a, "scm-flood") == 0)
		return scm_flood(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(a, "sendmmsg-flood") == 0)
		return sendmmsg_flood(argv[2], atoi(argv[3]));
	if (argc == 2 && strcmp(a, "int80") == 0)
		return int80();
	if (argc >= 3 && strcmp(a, "raw") == 0)
		return raw(argc - 2, argv + 2);
	if (argc == 5 && strcmp(a, "inotify-watch") == 0)
		return inotify_watch(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && strcmp(a, "lease") == 0)
		return lease(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && strcmp(a, "kill") == 0)
		return result(kill((pid_t)atoi(argv[2]), atoi(argv[3])));
	if (argc == 4 && strcmp(a, "setown") == 0)
		return setown((pid_t)atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && strcmp(a, "getxattr") == 0)
		return getxattr_action(argv[2], argv[3], argv[4]);
	if (argc == 3 && strcmp(a, "mcast-join") == 0)
		return mcast_join(argv[2]);
	if (argc == 3 && strcmp(a, "tty-state") == 0)
		return tty_state(atoi(argv[2]));
	if (argc == 5 && strcmp(a, "dnotify") == 0)
		return dnotify(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && strcmp(a, "reopen-write") == 0)
		return reopen_write(atoi(argv[2]), argv[3]);
	if (argc == 4 && strcmp(a, "tostop") == 0)
		return tostop(atoi(argv[2]), atoi(argv[3]));
	if (argc == 3 && strcmp(a, "unlock") == 0)
		return result(flock(atoi(argv[2]), LOCK_UN));
	if (argc == 4 && strcmp(a, "tcxonc") == 0)
		return result(ioctl(atoi(argv[2]), TCXONC, atoi(argv[3])));
	return usage();
}
