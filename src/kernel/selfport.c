/* selfport.c - "the ports this sandbox listens on" (net= rules whose port is
 * 'self'): does a TCP connection to an address and port reach a listener of
 * the sandbox, and only one of the sandbox (the address counts, not only
 * the port number)? The
 * guard asks for its own process (through its descriptors: Landlock hides
 * /proc from it), the network supervisor and the learning supervisor for
 * the tree they started (through /proc/net/tcp and tcp6, the listening
 * sockets of this network namespace, and the descriptors in
 * /proc/<pid>/fd). It never prints and never exits:
 * anything it cannot read is "no", so a rule that cannot be checked allows
 * nothing (fail closed).
 */
#include "selfport.h"

#include "policy_net.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* At most this many listening sockets on one port are looked for: more is
 * "cannot be told". */
#define MAX_INODES 16

struct listener {
	unsigned long inode;
	struct sb_addr local;
};

static bool is_mapped(const struct sb_addr *a)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	return a->family == AF_INET6 && !memcmp(a->bytes, mapped, 12);
}

/* A local address as the kernel matches it: ::ffff:a.b.c.d is a.b.c.d. */
static void unmap(struct sb_addr *a)
{
	if (is_mapped(a)) {
		memmove(a->bytes, a->bytes + 12, 4);
		memset(a->bytes + 4, 0, sizeof(a->bytes) - 4);
		a->family = AF_INET;
	}
}

static bool is_any(const struct sb_addr *a)
{
	size_t i, len = a->family == AF_INET ? 4 : 16;

	for (i = 0; i < len; i++)
		if (a->bytes[i])
			return false;
	return true;
}

/* Does a listener bound to 'local' take a connection to 'd'? Its own
 * address, or a wildcard: 0.0.0.0 for IPv4, :: for IPv6 and, unless
 * v6only, IPv4 too. */
static bool takes(const struct sb_addr *local, bool v6only,
		  const struct sb_addr *d)
{
	if (is_any(local))
		return local->family == d->family ||
		       (local->family == AF_INET6 && !v6only);
	return local->family == d->family &&
	       !memcmp(local->bytes, d->bytes,
		       d->family == AF_INET ? 4 : 16);
}

/* The addresses a connection to 'dest' reaches: where the kernel connects
 * (sb_addr_destinations), and an IPv6 form that names IPv4 without being
 * v4-mapped (NAT64, 6to4) as written too. */
static size_t targets(const struct sb_addr *dest, struct sb_addr out[3])
{
	size_t n = sb_addr_destinations(dest, SB_NET_OUT, out);

	if (dest->family == AF_INET6 && out[0].family == AF_INET &&
	    !is_mapped(dest))
		out[n++] = *dest;
	return n;
}

/* "0100007F" or 32 hex digits, as /proc/net/tcp{,6} print an address:
 * each 32-bit word in host order. */
static bool parse_proc_addr(const char *s, size_t len, struct sb_addr *a)
{
	size_t w, words = len / 8;

	if ((len != 8 && len != 32))
		return false;
	memset(a, 0, sizeof(*a));
	a->family = len == 8 ? AF_INET : AF_INET6;
	for (w = 0; w < words; w++) {
		char word[9], *end;
		uint32_t v;

		memcpy(word, s + 8 * w, 8);
		word[8] = '\0';
		v = (uint32_t)strtoul(word, &end, 16);
		if (*end)
			return false;
		memcpy(a->bytes + 4 * w, &v, 4);
	}
	unmap(a);
	return true;
}

/* The sockets on 'port' of a protocol's tables ("tcp" or "udp", and its
 * "6" twin) in a state 'states' names ("0A": listening; NULL: any), into
 * v[]; -1 when there are more than 'max' or a table cannot be read. */
static long on_port(const char *proto, const char *states, uint16_t port,
		    struct listener *v, size_t max)
{
	char tables[2][32], line[512];
	size_t i, n = 0;

	snprintf(tables[0], sizeof(tables[0]), "/proc/net/%s", proto);
	snprintf(tables[1], sizeof(tables[1]), "/proc/net/%s6", proto);

	for (i = 0; i < 2; i++) {
		FILE *f = fopen(tables[i], "re");

		if (!f) {
			if (i == 1)
				continue; /* no IPv6 */
			return -1;
		}
		while (fgets(line, sizeof(line), f)) {
			char local[80], state[8];
			unsigned long inode;
			unsigned lport;
			char *colon;

			/* sl local rem st tx:rx tr:when retrnsmt uid tmo inode */
			if (sscanf(line,
				   " %*s %79s %*s %7s %*s %*s %*s %*s %*s %lu",
				   local, state, &inode) != 3)
				continue;
			colon = strrchr(local, ':');
			if (!colon || (states && !strstr(states, state)) ||
			    strlen(state) != 2 || !inode ||
			    sscanf(colon + 1, "%x", &lport) != 1 ||
			    lport != port)
				continue;
			if (n == max ||
			    !parse_proc_addr(local, (size_t)(colon - local),
					     &v[n].local)) {
				fclose(f);
				return -1;
			}
			v[n++].inode = inode;
		}
		fclose(f);
	}
	return (long)n;
}

/* The listening TCP sockets on 'port' (on_port). */
static long listening(uint16_t port, struct listener *v, size_t max)
{
	return on_port("tcp", "0A", port, v, max);
}

/* Mark the sockets process 'pid' holds; how many were newly marked. */
static size_t mark_held(pid_t pid, const unsigned long *inodes, size_t n,
			bool *held)
{
	char dir[64], link[128], target[64];
	struct dirent *de;
	size_t marked = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
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
		for (i = 0; i < n; i++)
			if (!held[i] && inodes[i] == ino) {
				held[i] = true;
				marked++;
			}
	}
	closedir(d);
	return marked;
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

/* Does 'root', or a process below it, hold every socket of inodes[]? */
static bool all_held(const unsigned long *inodes, size_t n, pid_t root)
{
	bool held[MAX_INODES] = { false };
	struct dirent *de;
	size_t left;
	DIR *d;

	left = n - mark_held(root, inodes, n, held);
	if (!left)
		return true;
	d = opendir("/proc");
	if (!d)
		return false;
	while (left && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 1 || pid == root)
			continue;
		if (in_tree((pid_t)pid, root))
			left -= mark_held((pid_t)pid, inodes, n, held);
	}
	closedir(d);
	return left == 0;
}

int sb_port_held_outside(int type, const struct sb_addr *local,
			 uint16_t port, pid_t root)
{
	struct listener v[MAX_INODES];
	unsigned long inodes[MAX_INODES];
	struct sb_addr me = *local;
	size_t n = 0, i;
	long nl;

	if (!port)
		return 0; /* the kernel picks a port no one holds */
	if (root <= 0)
		return -1;
	/* TCP: a listener, or a socket bound to listen later; UDP: any */
	nl = type == SOCK_STREAM ? on_port("tcp", "0A 07", port, v, MAX_INODES)
	     : type == SOCK_DGRAM ? on_port("udp", NULL, port, v, MAX_INODES)
				  : -1;
	if (nl < 0)
		return -1;
	unmap(&me);
	for (i = 0; i < (size_t)nl; i++)
		/* the same address, or a wildcard on either side (a
		 * v6-only one cannot be told from /proc: counted) */
		if (is_any(&v[i].local) || is_any(&me) ||
		    (v[i].local.family == me.family &&
		     !memcmp(v[i].local.bytes, me.bytes,
			     me.family == AF_INET ? 4 : 16)))
			inodes[n++] = v[i].inode;
	return n && !all_held(inodes, n, root) ? 1 : 0;
}

bool sb_self_port(int type, const struct sb_addr *dest, uint16_t port,
		  pid_t root)
{
	struct listener v[MAX_INODES];
	unsigned long inodes[MAX_INODES];
	struct sb_addr t[3];
	size_t nt, n = 0, i, k;
	long nl;

	if (!dest || !port || root <= 0)
		return false;
	/* a UDP socket bound to the port takes its datagrams */
	nl = type == SOCK_DGRAM ? on_port("udp", NULL, port, v, MAX_INODES)
				: listening(port, v, MAX_INODES);
	if (nl <= 0)
		return false;
	nt = targets(dest, t);
	/* every address reached has a listener, and every listener that
	 * may take the connection must be the sandbox's */
	for (k = 0; k < nt; k++) {
		bool any = false;

		for (i = 0; i < (size_t)nl; i++)
			any |= takes(&v[i].local, false, &t[k]);
		if (!any)
			return false;
	}
	for (i = 0; i < (size_t)nl; i++)
		for (k = 0; k < nt; k++)
			if (takes(&v[i].local, false, &t[k])) {
				inodes[n++] = v[i].inode;
				break;
			}
	return all_held(inodes, n, root);
}

/* The descriptors of this process are searched up to this one. */
#define MAX_OWN_FD 65536

bool sb_self_port_own(int want, const struct sb_addr *dest, uint16_t port)
{
	struct sb_addr t[3];
	bool taken[3] = { false };
	struct rlimit rl;
	int fd, last = 1024;
	size_t nt, k, left;

	if (!dest || !port)
		return false;
	nt = left = targets(dest, t);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		last = rl.rlim_cur < MAX_OWN_FD ? (int)rl.rlim_cur : MAX_OWN_FD;
	for (fd = 0; fd < last; fd++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss), ol = sizeof(int);
		int listening = 0, type = 0, v6only = 0;
		struct sb_addr local = { 0 };
		uint16_t p;

		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
			       &ol) < 0 || (want == SOCK_STREAM && !listening))
			continue;
		ol = sizeof(int);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol) < 0 ||
		    type != want ||
		    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			continue;
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)&ss;

			p = ntohs(in->sin_port);
			local.family = AF_INET;
			memcpy(local.bytes, &in->sin_addr, 4);
		} else if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)&ss;

			p = ntohs(in6->sin6_port);
			local.family = AF_INET6;
			memcpy(local.bytes, &in6->sin6_addr, 16);
			ol = sizeof(int);
			if (getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
				       &ol) < 0)
				v6only = 1;
			unmap(&local);
		} else {
			continue;
		}
		if (p != port)
			continue;
		for (k = 0; k < nt; k++)
			if (!taken[k] && takes(&local, v6only, &t[k])) {
				taken[k] = true;
				left--;
			}
		if (!left)
			return true;
	}
	return false;
}
