/* selfport.c - "the ports this sandbox listens on" (net= rules whose port is
 * 'self'): is a TCP port one that a process of the sandbox listens on? The
 * guard asks for its own process (through its descriptors: Landlock hides
 * /proc from it), the network supervisor and the learning supervisor for
 * the tree they started (through /proc/net/tcp and tcp6, the listening
 * sockets of this network namespace, and the descriptors in
 * /proc/<pid>/fd). It never prints and never exits:
 * anything it cannot read is "no", so a rule that cannot be checked allows
 * nothing (fail closed).
 */
#include "selfport.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* At most this many listening sockets on one port are looked for. */
#define MAX_INODES 16

/* The inodes of the listening TCP sockets on 'port', into v[]. */
static size_t listening_inodes(uint16_t port, unsigned long *v, size_t max)
{
	static const char *const tables[] = { "/proc/net/tcp",
					      "/proc/net/tcp6" };
	char line[512];
	size_t i, n = 0;

	for (i = 0; i < 2; i++) {
		FILE *f = fopen(tables[i], "re");

		if (!f)
			continue;
		while (n < max && fgets(line, sizeof(line), f)) {
			char local[64], state[8];
			unsigned long inode;
			unsigned lport;
			char *colon;

			/* sl local rem st tx:rx tr:when retrnsmt uid tmo inode */
			if (sscanf(line,
				   " %*s %63s %*s %7s %*s %*s %*s %*s %*s %lu",
				   local, state, &inode) != 3)
				continue;
			colon = strrchr(local, ':');
			if (!colon || strcmp(state, "0A") != 0 || !inode ||
			    sscanf(colon + 1, "%x", &lport) != 1 ||
			    lport != port)
				continue;
			v[n++] = inode;
		}
		fclose(f);
	}
	return n;
}

/* Does process 'pid' hold one of the sockets? */
static bool holds(pid_t pid, const unsigned long *inodes, size_t n)
{
	char dir[64], link[128], target[64];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		unsigned long ino;
		ssize_t k;
		size_t i;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%.20s", dir, de->d_name);
		k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		if (sscanf(target, "socket:[%lu]", &ino) != 1)
			continue;
		for (i = 0; i < n && !found; i++)
			found = inodes[i] == ino;
	}
	closedir(d);
	return found;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')) &&
	    sscanf(paren + 1, " %*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return (pid_t)ppid;
}

/* Is 'pid' 'root' or below it? */
static bool in_tree(pid_t pid, pid_t root)
{
	int depth;

	for (depth = 0; pid > 1 && depth < 4096; depth++) {
		if (pid == root)
			return true;
		pid = parent_of(pid);
	}
	return false;
}

bool sb_self_port(uint16_t port, pid_t root)
{
	unsigned long inodes[MAX_INODES];
	size_t n = port ? listening_inodes(port, inodes, MAX_INODES) : 0;
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (!n || root <= 0)
		return false;
	if (holds(root, inodes, n))
		return true;
	d = opendir("/proc");
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 1 || pid == root)
			continue;
		found = in_tree((pid_t)pid, root) &&
			holds((pid_t)pid, inodes, n);
	}
	closedir(d);
	return found;
}

/* The descriptors of this process are searched up to this one. */
#define MAX_OWN_FD 65536

bool sb_self_port_own(uint16_t port)
{
	struct rlimit rl;
	int fd, last = 1024;

	if (!port)
		return false;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		last = rl.rlim_cur < MAX_OWN_FD ? (int)rl.rlim_cur : MAX_OWN_FD;
	for (fd = 0; fd < last; fd++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss), ol = sizeof(int);
		int listening = 0, type = 0;
		uint16_t p;

		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
			       &ol) < 0 || !listening)
			continue;
		ol = sizeof(int);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol) < 0 ||
		    type != SOCK_STREAM ||
		    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			continue;
		if (ss.ss_family == AF_INET)
			p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		else
			continue;
		if (p == port)
			return true;
	}
	return false;
}
