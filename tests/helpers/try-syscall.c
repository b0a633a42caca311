/* try-syscall.c - hostile native code for the kernel layer's tests: it
 * performs exactly one system call (or the few one action needs) and prints
 * "ok" or "errno <NAME>", exiting 0 either way; 1 on a usage error. It
 * decides nothing and hides nothing: the sandbox around it must refuse.
 *
 *   try-syscall ACTION [ARG...]
 *   open-read PATH | open-write PATH | read PATH | exec PATH [ARG...]
 *   connect-tcp IP PORT | sendto-udp IP PORT | connect-abstract NAME
 *   connect-unix PATH | ptrace-parent | kill-parent | write-proc-mem
 *   init-module | socket-raw | socket-netlink | unshare-user
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
#include <sys/ptrace.h>
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
	if (argc == 3 && strcmp(a, "connect-unix") == 0)
		return unix_action(argv[2], false);
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
	return usage();
}
