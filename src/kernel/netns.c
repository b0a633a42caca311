/* netns.c - the network of its own of os-sandbox=unshare and bwrap with net=
 * rules. It owns the choice of the ports of the host's loopback that the
 * namespace reaches, and the life of pasta (Debian's passt package), the
 * user-mode stack that is the namespace's only way out: forked on the
 * host's network before the namespace exists, exec'd once python-sb knows
 * the namespace's process, waited for until the namespace is configured,
 * ended with the run. pasta runs with --no-map-gw (the gateway address is
 * not the host), forwards no port of the host into the namespace, and
 * forwards from it only the host loopback ports that the rules name (-T,
 * -U). It judges nothing: the network supervisor inside judges every
 * connect, bind and send by the rules, as under os-sandbox=landlock.
 */
#include "exit_status.h"
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "notif.h"
#include "policy_net.h"

#define PASTA_PACKAGE "passt"
/* pasta configures a namespace in some 30 ms here; a loaded CI runner
 * may take far longer, a stack that never comes up must not hang */
#define START_TIMEOUT_MS 20000
/* where pasta finds the namespace's descriptors (see launcher()) */
#define NS_FD 3
#define USERNS_FD 4

/* ---- pasta ---- */

static const char *find_pasta(void)
{
	static const char *const cands[] = { "/usr/bin/pasta",
					     "/usr/local/bin/pasta",
					     "/bin/pasta" };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cands); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return NULL;
}

/* Decimal text of 'v' into buf (async-signal-safe). */
static void put_uint(char *buf, unsigned long v)
{
	char t[24];
	size_t n = 0, i;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	for (i = 0; i < n; i++)
		buf[i] = t[n - 1 - i];
	buf[n] = '\0';
}

static void put_str(char *buf, const char *s)
{
	while ((*buf = *s++))
		buf++;
}

/* The launcher, between fork and exec: wait for the target's pid, then
 * exec pasta on its network namespace, handed open: pasta as root drops
 * to nobody unless --runas 0:0 and then lacks CAP_SYS_PTRACE to open
 * another root process's /proc/PID/ns; not as root, it joins the user
 * namespace that owns the network one (NS_GET_USERNS: bwrap nests the
 * program's user namespace below it), whose owner we are.
 * Async-signal-safe calls only. */
static void launcher(const char *tool, char **argv, int go, int log,
		     bool root)
{
	char path[64];
	pid_t pid;
	int fd, null, owner;

	/* pasta must not outlive python-sb, which ends it */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(127);
	if (read(go, &pid, sizeof(pid)) != (ssize_t)sizeof(pid) || pid <= 0)
		_exit(0); /* the run ended before the namespace existed */
	close(go);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(log, 2) < 0)
		_exit(127);
	put_str(path, "/proc/");
	put_uint(path + strlen(path), (unsigned long)pid);
	put_str(path + strlen(path), "/ns/net");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, NS_FD) < 0)
		_exit(127);
	if (!root) {
		owner = ioctl(fd, NS_GET_USERNS);
		if (owner < 0 || dup2(owner, USERNS_FD) < 0)
			_exit(127);
	}
	execv(tool, argv);
	_exit(127);
}

int sb_netns_prepare(struct sb_arena *a, const struct sb_policy *p,
		     const char *provider, struct sb_netns *n)
{
	const char *tool = find_pasta(), *tcp, *udp, *err;
	SB_VEC(char *) v = { 0 };
	bool root = geteuid() == 0;
	const char *tmp;
	char *dir;
	int go[2], log;

	memset(n, 0, sizeof(*n));
	n->go = n->dirfd = n->pidfd = -1;
	if (!tool) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: net= rules give the sandbox "
			"a network namespace of its own, whose way out is "
			"pasta, and pasta is not installed; nothing was run.\n"
			"Hint: sudo apt-get install %s; or use "
			"os-sandbox=landlock (the host's network, held by the "
			"supervisor)\n",
			provider, PASTA_PACKAGE);
		return SB_EXIT_SETUP;
	}
	if (sb_netns_plan(a, p, &tcp, &udp, &err) < 0) {
		fprintf(stderr, "python-sb: os-sandbox=%s: %s; nothing was "
				"run.\n",
			provider, err);
		return SB_EXIT_SETUP;
	}
	/* pasta's private directory goes where the user keeps temporary
	 * files ($TMPDIR when it is an absolute path, else /tmp): it is
	 * the launcher's, outside the sandbox, and 0700 */
	tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	dir = sb_arena_printf(a, "%s/pysb-net-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: cannot make a directory "
			"for pasta's pid file in %s ($TMPDIR, else /tmp): "
			"%s; nothing was run.\n",
			provider, tmp, strerror(errno));
		return SB_EXIT_SETUP;
	}
	n->dir = dir;
	n->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	log = n->dirfd < 0 ? -1
			   : openat(n->dirfd, "log",
				    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				    0600);
	if (log < 0 || pipe2(go, O_CLOEXEC) < 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: pasta's log in %s: %s; "
			"nothing was run.\n",
			provider, dir, strerror(errno));
		if (log >= 0)
			close(log);
		sb_netns_stop(n);
		return SB_EXIT_SETUP;
	}
	*SB_VEC_PUSH(a, v) = (char *)"pasta";
	*SB_VEC_PUSH(a, v) = (char *)"--foreground";
	*SB_VEC_PUSH(a, v) = (char *)"--quiet";
	*SB_VEC_PUSH(a, v) = (char *)"--config-net";
	*SB_VEC_PUSH(a, v) = (char *)"--no-map-gw";
	/* net= rules name TCP and UDP: no ICMP echo, no DHCP or NDP
	 * answers (--config-net sets the addresses itself) */
	*SB_VEC_PUSH(a, v) = (char *)"--no-icmp";
	*SB_VEC_PUSH(a, v) = (char *)"--no-dhcp";
	*SB_VEC_PUSH(a, v) = (char *)"--no-dhcpv6";
	*SB_VEC_PUSH(a, v) = (char *)"--no-ndp";
	*SB_VEC_PUSH(a, v) = (char *)"--no-ra";
	/* nothing of the host forwarded in; out, the named loopback ports */
	*SB_VEC_PUSH(a, v) = (char *)"-t";
	*SB_VEC_PUSH(a, v) = (char *)"none";
	*SB_VEC_PUSH(a, v) = (char *)"-u";
	*SB_VEC_PUSH(a, v) = (char *)"none";
	*SB_VEC_PUSH(a, v) = (char *)"-T";
	*SB_VEC_PUSH(a, v) = (char *)tcp;
	*SB_VEC_PUSH(a, v) = (char *)"-U";
	*SB_VEC_PUSH(a, v) = (char *)udp;
	*SB_VEC_PUSH(a, v) = (char *)"-P";
	*SB_VEC_PUSH(a, v) = sb_arena_printf(a, "%s/pid", dir);
	*SB_VEC_PUSH(a, v) = (char *)"--netns";
	*SB_VEC_PUSH(a, v) = sb_arena_printf(a, "/proc/self/fd/%d", NS_FD);
	if (root) {
		*SB_VEC_PUSH(a, v) = (char *)"--runas";
		*SB_VEC_PUSH(a, v) = (char *)"0:0";
		*SB_VEC_PUSH(a, v) = (char *)"--netns-only";
	} else {
		*SB_VEC_PUSH(a, v) = (char *)"--userns";
		*SB_VEC_PUSH(a, v) = sb_arena_printf(a, "/proc/self/fd/%d",
						     USERNS_FD);
	}
	*SB_VEC_PUSH(a, v) = NULL;
	fflush(NULL);
	n->pid = fork();
	if (n->pid < 0) {
		fprintf(stderr, "python-sb: os-sandbox=%s: fork for pasta: "
				"%s; nothing was run.\n",
			provider, strerror(errno));
		close(go[0]);
		close(go[1]);
		close(log);
		n->pid = 0;
		sb_netns_stop(n);
		return SB_EXIT_SETUP;
	}
	if (n->pid == 0) {
		close(go[1]);
		launcher(tool, v.v, go[0], log, root);
	}
	close(go[0]);
	close(log);
	n->go = go[1];
	n->pidfd = sb_pidfd_open(n->pid, 0);
	return 0;
}

/* pasta's messages, less its complaints about a missing syslog. */
static void print_log(int dirfd)
{
	char buf[4096], *line, *save = NULL;
	ssize_t len;
	int fd = openat(dirfd, "log", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (!strstr(line, "to syslog"))
			fprintf(stderr, "pasta: %s\n", line);
}

static bool pid_file_written(int dirfd)
{
	char buf[32];
	ssize_t len;
	int fd = openat(dirfd, "pid", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf));
	close(fd);
	return len > 0 && memchr(buf, '\n', (size_t)len);
}

int sb_netns_attach(struct sb_netns *n, pid_t target, const char *provider)
{
	struct timespec pause = { 0, 2 * 1000 * 1000 };
	int waited = 0, status;
	const char *why = NULL;

	if (write(n->go, &target, sizeof(target)) != (ssize_t)sizeof(target))
		why = strerror(errno);
	close(n->go);
	n->go = -1;
	while (!why) {
		pid_t w = waitpid(n->pid, &status, WNOHANG);

		if (pid_file_written(n->dirfd))
			break;
		if (w == n->pid || (w < 0 && errno == ECHILD)) {
			n->pid = 0;
			why = "pasta ended before the namespace was configured";
		} else if (waited >= START_TIMEOUT_MS) {
			why = "pasta did not configure the namespace in time";
		} else {
			nanosleep(&pause, NULL);
			waited += 2;
		}
	}
	if (why) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: the sandbox's network "
			"namespace: %s; nothing was run.\n",
			provider, why);
		print_log(n->dirfd);
		return SB_EXIT_SETUP;
	}
	/* its files are read: gone before the sandbox covers /tmp (pasta
	 * keeps its log open) */
	unlinkat(n->dirfd, "pid", 0);
	unlinkat(n->dirfd, "log", 0);
	if (rmdir(n->dir) == 0)
		n->dir = NULL;
	return 0;
}

void sb_netns_stop(struct sb_netns *n)
{
	if (n->go >= 0)
		close(n->go); /* a launcher still waiting exits */
	n->go = -1;
	if (n->pid > 0) {
		/* the pidfd cannot hit a reused pid; without one (pidfd_open
		 * failed) the pid is still our unreaped child */
		if (n->pidfd >= 0)
			sb_pidfd_send_signal(n->pidfd, SIGKILL);
		else
			kill(n->pid, SIGKILL);
		waitpid(n->pid, NULL, 0);
	}
	n->pid = 0;
	if (n->pidfd >= 0)
		close(n->pidfd);
	n->pidfd = -1;
	if (n->dirfd >= 0) {
		unlinkat(n->dirfd, "pid", 0);
		unlinkat(n->dirfd, "log", 0);
		close(n->dirfd);
	}
	n->dirfd = -1;
	if (n->dir)
		rmdir(n->dir);
	n->dir = NULL;
}
