/* netsup.c - the supervisor of os-sandbox=landlock, and of the second
 * stage inside unshare, bwrap and firejail: it always runs (Landlock does
 * not judge a connect() to a named Unix socket, nor mode and time changes,
 * which metasup.c judges for it). The program's connect, sendto (with an
 * address), sendmsg, sendmmsg, bind and listen stop in the kernel
 * (SECCOMP_RET_USER_NOTIF) and come here. It reads the arguments from the program's memory once,
 * judges that copy (net= by sb_net_decide, named Unix sockets by the file
 * rules), and performs the call itself on a duplicate of the program's
 * socket (pidfd_getfd) with the copy it judged: it never answers
 * "continue", so nothing the program changes after the check is used.
 * Port 53 is DNS: a datagram there is read as a query and sent only for a
 * host a rule names (sb_dns_query_judge), a connection there needs a '*'
 * rule. Calls that may block run on worker threads. It owns the child's
 * set-up and the listener hand-over of such a run; the signals, the wait
 * and the exit status are the supervisor skeleton's (supervisor.h). It
 * must not judge anything by itself that the policy code decides.
 */
#include "caller.h"
#include "exit_status.h"
#include "netsup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "filecall.h"
#include "entrysup.h"
#include "filelog.h"
#include "fsrules.h"
#include "landlock.h"
#include "run_limits.h"
#include "metasup.h"
#include "ttysup.h"
#include "notif.h"
#include "policy_net.h"
#include "prof.h"
#include "seccomp_filter.h"
#include "selfport.h"
#include "sockopt.h"
#include "suplog.h"
#include "supervisor.h"

/* A copy of a payload is bounded: a stream socket gets a short write (which
 * its callers must handle anyway), a datagram larger than this EMSGSIZE. */
#define MAX_PAYLOAD (64 * 1024)
#define MAX_CONTROL (64 * 1024)
#define MAX_MMSG 64

/* What the supervisor holds for the program is bounded, per call and in
 * all, so that the program cannot make it spend its memory (outside the
 * run's limit-memory) or its descriptors (which the end-of-run sweep
 * needs too). A call holds its copy only while it is being performed:
 * a blocking call is copied by the worker that performs it, so at most
 * the workers' calls and the main thread's hold copies at once.
 * Per call: one message always; a sendmmsg stops at the message that
 * would take it past CALL_BYTES (payload and control), CALL_FDS passed
 * descriptors (the kernel's SCM_MAX_FD per message) or CALL_PATHS named
 * Unix sockets, and reports fewer sent, as sendmmsg may. In all: the
 * passed descriptors held (max_fds, from RLIMIT_NOFILE) past which a send
 * fails with ETOOMANYREFS, the kernel's answer to a sender with too many
 * descriptors in flight; the workers (max_workers); the blocking calls
 * waiting for one (MAX_QUEUED, each a small record of the notification,
 * none of the program's data), past which a send fails with ENOBUFS and a
 * connect with EAGAIN, the kernel's answers when it is short of buffers. */
#define CALL_BYTES (128 * 1024)
#define CALL_FDS 253 /* SCM_MAX_FD */
#define CALL_PATHS 16
#define MAX_WORKERS 64
#define MAX_HELD_FDS 1024
#define MAX_QUEUED 4096

/* copy_*() return this for a later message of a sendmmsg that would take
 * the call past its bounds: the call sends the messages before it. */
#define STOP 2

/* One message of a send call, copied out of the program. */
struct msg {
	struct sockaddr_storage name;
	socklen_t namelen;
	char *data;
	size_t len;
	char *control;
	size_t controllen;
	int *fds; /* SCM_RIGHTS, as duplicates in this process */
	size_t n_fds;
	uint64_t remote; /* the program's mmsghdr, for msg_len */
};

struct sup;

/* One notified call, judged and ready to perform. */
struct call {
	uint64_t id;
	pid_t pid;
	int nr;
	uint64_t args[6];
	struct sup *s;
	int pidfd, sock;
	int family, type, proto;
	struct sockaddr_storage addr; /* connect, bind */
	socklen_t addrlen;
	int pathfd; /* pins the Unix socket or directory judged */
	bool made;  /* a bind makes its socket right in an expose-made=
		     * rule's directory (pathfd): remembered once bound */
	struct msg *msgs;
	unsigned n_msgs;
	int flags;
	bool blocking;
	size_t bytes;	    /* payload and control copied */
	unsigned n_passed;  /* SCM_RIGHTS descriptors held */
	unsigned n_paths;   /* named Unix sockets pinned */
	unsigned held;	    /* of the supervisor's max_fds */
	struct call *next;
};

struct sup {
	const struct sb_policy *p;
	int listener;
	struct sb_filelog *fl; /* a denial log's Landlock records, or NULL */
	bool scoped; /* Landlock scopes signals (ABI 6) */
	bool entries; /* performs calls on entries (entrysup.c) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct call *head, *tail;
	unsigned idle, workers, queued;
	unsigned max_workers, max_fds, held_fds;
};

/* Take n of the descriptors a call may hold for the program: 0 or
 * -ETOOMANYREFS. */
static int hold_fds(struct call *c, unsigned n)
{
	struct sup *s = c->s;
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	if (n > s->max_fds - s->held_fds)
		rc = -ETOOMANYREFS;
	else
		s->held_fds += n;
	pthread_mutex_unlock(&s->mu);
	if (rc == 0)
		c->held += n;
	return rc;
}

static bool still_pending(int listener, uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static void reply(int listener, uint64_t id, long rc)
{
	struct seccomp_notif_resp r;

	memset(&r, 0, sizeof(r));
	r.id = id;
	if (rc < 0)
		r.error = (int)rc;
	else
		r.val = rc;
	/* ENOENT: the caller was interrupted or died meanwhile */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

/* The call goes on as the program made it: the kernel (Landlock) judges
 * it. Only for what the supervisor records and does not decide. */
static void reply_continue(int listener, uint64_t id)
{
	struct seccomp_notif_resp r;

	memset(&r, 0, sizeof(r));
	r.id = id;
	r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

static void msg_free(struct msg *m)
{
	size_t k;

	for (k = 0; k < m->n_fds; k++)
		close(m->fds[k]);
	free(m->fds);
	free(m->data);
	free(m->control);
	memset(m, 0, sizeof(*m));
}

static void call_free(struct call *c)
{
	unsigned i;

	if (c->sock >= 0)
		close(c->sock);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->pathfd >= 0)
		close(c->pathfd);
	for (i = 0; i < c->n_msgs; i++)
		msg_free(&c->msgs[i]);
	free(c->msgs);
	if (c->held) {
		pthread_mutex_lock(&c->s->mu);
		c->s->held_fds -= c->held;
		pthread_mutex_unlock(&c->s->mu);
	}
	free(c);
}

/* ---- judging ---- */

enum op { OP_CONNECT, OP_BIND, OP_SEND };

/* The program: net= port 'self' is a port it or its children listen on. */
static pid_t self_root;

/* prepare() returns this when the caller is gone: no answer is due. */
#define GONE 1

/* The denial log's record of an address refused here. */
static void log_refused_addr(const struct call *c, unsigned kind,
			     unsigned dir, const struct sb_addr *a,
			     uint16_t port, const struct sb_net_rule *r)
{
	char ip[INET6_ADDRSTRLEN], target[INET6_ADDRSTRLEN + 16];
	char add[INET6_ADDRSTRLEN + 40], *rule = NULL;
	struct sb_arena *ar;

	if (!sb_suplog_on())
		return;
	if (!inet_ntop(a->family, a->bytes, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	snprintf(target, sizeof(target), "%s%s%s:%u",
		 a->family == AF_INET6 ? "[" : "", ip,
		 a->family == AF_INET6 ? "]" : "", port);
	snprintf(add, sizeof(add), "net=ALLOW|%s|%s|%u|%s",
		 kind == SB_NET_UDP ? "UDP" : "TCP", ip, port,
		 dir == SB_NET_IN ? "IN" : "OUT");
	ar = sb_arena_new();
	if (r)
		rule = sb_arena_printf(ar, "%s from %s", r->rule,
				       sb_ref_format(ar, r->ref));
	/* an explicit DENY is tried before every ALLOW: no rule to add */
	sb_suplog_refused(c->pid, "network", target, rule, r ? NULL : add);
	sb_arena_free(ar);
}

static bool allowed(const struct sb_policy *p, const struct call *c,
		    unsigned dir, const struct sb_addr *a, uint16_t port)
{
	const struct sb_net_rule *r;
	unsigned kind;

	if (c->proto == IPPROTO_TCP || c->proto == IPPROTO_MPTCP)
		kind = SB_NET_TCP;
	else if (c->proto == IPPROTO_UDP || c->proto == IPPROTO_UDPLITE)
		kind = SB_NET_UDP;
	else {
		/* ICMP, SCTP...: no net= rule names them */
		if (sb_suplog_on())
			sb_suplog_refused(c->pid, "network", "a socket of a "
					  "protocol no net= rule names",
					  NULL, NULL);
		return false;
	}
	r = sb_net_decide(p, kind, dir, a, port);
	if (!r && sb_net_self_rule(p, kind, dir, a) &&
	    sb_self_port(kind == SB_NET_UDP ? SOCK_DGRAM : SOCK_STREAM, a,
			 port, self_root))
		return true;
	if (r && r->allow)
		return true;
	log_refused_addr(c, kind, dir, a, port, r);
	return false;
}

/* The address an inet socket will use, read the way the kernel reads 'ss'
 * for this socket family and call: 1 with *a and *port, 0 when the call
 * uses none (AF_UNSPEC: a disconnect, or the connected peer), or -errno. */
static int inet_target(int sock_family, enum op op,
		       const struct sockaddr_storage *ss, socklen_t len,
		       struct sb_addr *a, uint16_t *port)
{
	int fam;

	if (len < sizeof(sa_family_t))
		return -EINVAL;
	fam = ss->ss_family;
	if (fam == AF_UNSPEC) {
		/* inet_bind and udp_sendmsg take AF_UNSPEC for AF_INET */
		if (sock_family == AF_INET && op != OP_CONNECT)
			fam = AF_INET;
		else if (op == OP_BIND)
			return -EAFNOSUPPORT;
		else
			return 0;
	}
	memset(a, 0, sizeof(*a));
	if (fam == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		if (len < sizeof(*in))
			return -EINVAL;
		/* an AF_INET6 socket connects and sends to IPv4 too */
		if (sock_family == AF_INET6 && op == OP_BIND)
			return -EAFNOSUPPORT;
		a->family = AF_INET;
		memcpy(a->bytes, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return 1;
	}
	if (fam == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		if (len < 24) /* SIN6_LEN_RFC2133 */
			return -EINVAL;
		if (sock_family == AF_INET)
			return -EAFNOSUPPORT;
		a->family = AF_INET6;
		memcpy(a->bytes, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return 1;
	}
	return -EAFNOSUPPORT;
}

static int fd_path(int fd, char *out, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, size - 1);
	if (n < 0 || (size_t)n >= size - 1)
		return -1;
	out[n] = '\0';
	return 0;
}

/* A named Unix socket: judged by the file rules as a write (as the Python
 * layer does), then replaced by /proc/self/fd/N of an O_PATH descriptor of
 * what was judged, so that a symlink swapped in afterwards cannot move the
 * call. For bind ('create') the directory is pinned, as the program's
 * mount namespace has it (a read-only tree selfprotect.c binds there stays
 * read-only: attack K30), and the last component is made in it. An abstract name cannot be named by a rule: refused,
 * connect, send and bind alike, as the Python layer does (an unnamed
 * socket's autobind, a random name, goes through). 0 with *pathfd (or -1: the address goes to the
 * kernel as it is), or -errno. */
static int unix_target(const struct sb_policy *p, pid_t pid, int pidfd,
		       struct sockaddr_storage *ss, socklen_t *len,
		       bool create, int *pathfd, bool *made)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)ss;
	size_t off = offsetof(struct sockaddr_un, sun_path), n;
	char path[sizeof(sun->sun_path) + 1], cwd[PATH_MAX], canon[PATH_MAX];
	char abs[PATH_MAX + sizeof(path) + 1], open_at[PATH_MAX + 64];
	char repl[PATH_MAX + 64];
	const char *base = NULL;
	struct sb_fs_decision d;
	char *slash;
	int fd;

	*pathfd = -1;
	*made = false;
	if (*len <= off) /* unnamed: autobind, or the kernel says EINVAL */
		return 0;
	if (sun->sun_path[0] == '\0' && sb_net_allows_abstract(p))
		return 0; /* net=ALLOW|*|*|*|*: the whole network */
	if (sun->sun_path[0] == '\0') {
		/* bound too: the abstract names of the host's network
		 * namespace are the host's, and a listener there is a service
		 * offered outside (a name a host client trusts, squatted);
		 * Landlock's scope covers connect and send only */
		sb_suplog_refused(pid, "unix-socket",
				  create ? "binding an abstract Unix socket "
					   "(no rule can name one)"
					 : "an abstract Unix socket (no rule "
					   "can name one)",
				  NULL, NULL);
		return -EPERM;
	}
	n = strnlen(sun->sun_path, *len - off);
	memcpy(path, sun->sun_path, n);
	path[n] = '\0';
	if (path[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", path);
	} else {
		ssize_t k;

		sb_caller_dir_link(pid, AT_FDCWD, open_at, sizeof(open_at));
		k = readlink(open_at, cwd, sizeof(cwd) - 1);
		if (k < 0)
			return -EACCES;
		cwd[k] = '\0';
		snprintf(abs, sizeof(abs), "%s/%s", strcmp(cwd, "/") ? cwd : "",
			 path);
	}
	/* opened as the program names it: /proc/self/fd/N (or a link to
	 * it) would be one of ours (sb_open_as_program) */
	snprintf(open_at, sizeof(open_at), "%s", path);
	if (create) {
		const char *dir = "";

		slash = strrchr(open_at, '/');
		base = open_at;
		if (slash) {
			*slash = '\0';
			dir = *open_at ? open_at : "/";
			base = slash + 1;
		}
		if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
			return -EINVAL;
		base = path + (base - open_at); /* at most sun_path's size */
		fd = sb_open_as_program(pid, pidfd, AT_FDCWD, dir,
					O_PATH | O_DIRECTORY);
	} else {
		fd = sb_open_as_program(pid, pidfd, AT_FDCWD, path, O_PATH);
	}
	if (fd == -ELOOP)
		sb_suplog_refused(pid, "unix-socket",
				  "a Unix socket named through /proc/self or "
				  "another magic link (the supervisor's, not "
				  "the program's)",
				  NULL, NULL);
	if (fd < 0)
		return fd == -ESRCH ? -EACCES : fd;
	if (fd_path(fd, canon, sizeof(canon)) < 0) {
		close(fd);
		return -EACCES;
	}
	if (create) {
		/* made in the program's own mount of the directory: a
		 * read-only bind of its namespace refuses it (metasup.c) */
		int mine = sb_reopen_as_seen_by(pid, fd, canon);
		size_t cl = strlen(canon);

		close(fd);
		if (mine < 0)
			return mine == -ESRCH ? -EACCES : mine;
		fd = mine;
		if (cl + strlen(base) + 2 > sizeof(canon)) {
			close(fd);
			return -ENAMETOOLONG;
		}
		snprintf(canon + cl, sizeof(canon) - cl, "%s%s",
			 strcmp(canon, "/") ? "/" : "", base);
		snprintf(repl, sizeof(repl), "/proc/self/fd/%d/%s", fd, base);
	} else {
		snprintf(repl, sizeof(repl), "/proc/self/fd/%d", fd);
	}
	sb_fs_decide(p, path, abs, canon, true, &d);
	/* expose-made=: a socket the program made (a bind made here is
	 * remembered: bind_as_program), or a new one bound right there */
	if (d.verdict == SB_FS_ALLOW && d.expose && d.expose->made) {
		if (!sb_entrysup_made_ok(d.expose, pid, canon, create)) {
			d.verdict = SB_FS_NOT_EXPOSED;
			d.expose = NULL;
		} else {
			*made = create;
		}
	}
	if (d.verdict != SB_FS_ALLOW) {
		sb_suplog_fs_refused(pid, "unix-socket", canon, &d);
		close(fd);
		return -EACCES;
	}
	if (strlen(repl) >= sizeof(sun->sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memset(sun->sun_path, 0, sizeof(sun->sun_path));
	memcpy(sun->sun_path, repl, strlen(repl));
	*len = (socklen_t)(off + strlen(repl) + 1);
	*pathfd = fd;
	return 0;
}

/* Why a DNS query was refused, on stderr: the program sees EACCES. */
static void dns_refused(pid_t pid, const char *name, const char *what)
{
	char add[300];

	if (name)
		snprintf(add, sizeof(add), "net=ALLOW|TCP|%s|<port>|OUT",
			 name);
	sb_suplog_refused(pid, "dns", name ? name : what, NULL,
			  name ? add : "net=ALLOW|UDP|*|53|OUT");
	if (name)
		fprintf(stderr,
			"python-sb: network: DNS query for '%s' refused: no net= rule names this host.\n"
			"Hint: add net=ALLOW|TCP|%s|<port>|OUT to resolve and reach it.\n",
			name, name);
	else
		fprintf(stderr,
			"python-sb: network: %s refused: only a plain DNS query of a host a net= rule names may go to a resolver.\n"
			"Hint: name the host in a net= rule, or add net=ALLOW|UDP|*|53|OUT to let every name through.\n",
			what);
}

/* Is the socket corked (UDP_CORK), or can that not be told? */
static bool udp_corked(int sock)
{
	socklen_t ol = sizeof(int);
	int v = 1;

	return getsockopt(sock, IPPROTO_UDP, 1 /* UDP_CORK */, &v, &ol) < 0 ||
	       v != 0;
}

/* A datagram to port 53 of an inet socket is a DNS query: it goes out
 * only when it asks for a host a rule names (sb_dns_query_judge). 0 or
 * -EACCES. */
static int judge_dns(const struct sb_policy *p, const struct call *c,
		     const struct msg *m)
{
	struct sockaddr_storage ss;
	char name[256];
	struct sb_addr a;
	uint16_t port = 0;
	int rc;

	if ((c->family != AF_INET && c->family != AF_INET6) ||
	    c->type != SOCK_DGRAM || !m->namelen || sb_net_names_any(p))
		return 0;
	memcpy(&ss, &m->name, sizeof(ss));
	if (inet_target(c->family, OP_SEND, &ss, m->namelen, &a, &port) <= 0 ||
	    port != SB_DNS_PORT)
		return 0;
	/* MSG_MORE or UDP_CORK leave the query pending in the kernel, and
	 * a write() or a send() without an address, which never come here,
	 * would append to it */
	if ((c->flags & MSG_MORE) || udp_corked(c->sock)) {
		dns_refused(c->pid, NULL,
			    "a corked datagram to port 53 (MSG_MORE, UDP_CORK)");
		return -EACCES;
	}
	rc = sb_dns_query_judge(p, m->data, m->len, name, sizeof(name));
	if (rc == 1)
		return 0;
	dns_refused(c->pid, rc == 0 ? name : NULL,
		    "a datagram to port 53 that is not a plain query");
	return -EACCES;
}

/* Judge the address of a connect, bind or send; may rewrite it (Unix
 * paths). 0 to go ahead, or -errno. */
/* A bind that shares its port (SO_REUSEPORT, or SO_REUSEADDR on UDP) with
 * a socket no process of the sandbox holds would take part of a host
 * service's connections or datagrams, or all of them with a more specific
 * address: an IN rule grants the port, not another program's traffic. The
 * kernel's answer to a port taken, as if the service did not share it. */
static bool shares_a_host_port(const struct call *c, const struct sb_addr *a,
			       uint16_t port)
{
	int reuseport = 0, reuseaddr = 0;
	socklen_t ol = sizeof(int);

	if (getsockopt(c->sock, SOL_SOCKET, SO_REUSEPORT, &reuseport, &ol) <
	    0)
		return true;
	ol = sizeof(int);
	if (c->type == SOCK_DGRAM &&
	    getsockopt(c->sock, SOL_SOCKET, SO_REUSEADDR, &reuseaddr, &ol) < 0)
		return true;
	if (!reuseport && !reuseaddr)
		return false;
	if (sb_port_held_outside(c->type, a, port, self_root) == 0)
		return false; /* -1: cannot be told, refused */
	if (sb_suplog_on())
		sb_suplog_refused(c->pid, "network",
				  "a bind that shares a port another program "
				  "listens on (SO_REUSEPORT, SO_REUSEADDR)",
				  NULL, NULL);
	return true;
}

static int judge_addr(const struct sb_policy *p, const struct call *c,
		      enum op op, struct sockaddr_storage *ss,
		      socklen_t *len, int *pathfd, bool *made)
{
	struct sb_addr a;
	uint16_t port = 0;
	int rc;

	*pathfd = -1;
	*made = false;
	switch (c->family) {
	case AF_INET:
	case AF_INET6:
		rc = inet_target(c->family, op, ss, *len, &a, &port);
		if (rc <= 0)
			return rc;
		if (!allowed(p, c, op == OP_BIND ? SB_NET_IN : SB_NET_OUT, &a,
			     port))
			return -EACCES;
		if (op == OP_BIND && shares_a_host_port(c, &a, port))
			return -EADDRINUSE;
		/* a connected socket or a stream to a resolver sends what
		 * this process never reads: only a '*' rule opens them; a
		 * datagram's query is read in prepare_send() */
		if (op != OP_BIND && port == SB_DNS_PORT &&
		    (op == OP_CONNECT || c->type != SOCK_DGRAM) &&
		    !sb_net_names_any(p)) {
			dns_refused(c->pid, NULL, "a connection to port 53");
			return -EACCES;
		}
		return 0;
	case AF_UNIX:
		/* a stream socket refuses an address, seqpacket ignores it:
		 * the kernel resolves no path for them */
		if (op == OP_SEND && c->type != SOCK_DGRAM)
			return 0;
		return unix_target(p, c->pid, c->pidfd, ss, len, op == OP_BIND, pathfd,
				   made);
	default:
		return -EACCES; /* no rule can name it */
	}
}

/* ---- copying a send out of the program ---- */

static long copy_payload(struct call *c, const struct iovec *iov,
			 size_t n, struct msg *m, bool first)
{
	struct iovec remote[UIO_MAXIOV], local;
	size_t total = 0, want, i, k = 0;
	bool stream = c->type == SOCK_STREAM;

	for (i = 0; i < n; i++) {
		if (iov[i].iov_len > SSIZE_MAX - total)
			return -EINVAL;
		total += iov[i].iov_len;
	}
	if (!stream && total > MAX_PAYLOAD)
		return -EMSGSIZE;
	want = total > MAX_PAYLOAD ? MAX_PAYLOAD : total;
	if (!first && c->bytes + want > CALL_BYTES)
		return STOP;
	c->bytes += want;
	m->data = malloc(want ? want : 1);
	if (!m->data)
		return -ENOMEM;
	m->len = want;
	for (i = 0, total = 0; i < n && total < want; i++) {
		size_t l = iov[i].iov_len;

		if (!l)
			continue;
		if (l > want - total)
			l = want - total;
		remote[k].iov_base = iov[i].iov_base;
		remote[k++].iov_len = l;
		total += l;
	}
	local.iov_base = m->data;
	local.iov_len = want;
	if (want && process_vm_readv(c->pid, &local, 1, remote, k, 0) !=
			    (ssize_t)want)
		return -EFAULT;
	return 0;
}

/* The program's descriptors in SCM_RIGHTS become ours; its credentials
 * cannot be sent in its name (sb_cmsg_allowed). */
/* A control message refused: in the denial log, by its level and type. */
static long control_refused(const struct call *c, const struct cmsghdr *cm)
{
	char what[96];

	snprintf(what, sizeof(what), "a control message (level %d, type %d)",
		 cm->cmsg_level, cm->cmsg_type);
	sb_suplog_refused(c->pid, "network", what,
			  "built in: the supervisor passes only "
			  SB_CMSG_ALLOWED_TEXT,
			  NULL);
	return -EPERM;
}

static long copy_control(struct call *c, struct msg *m, bool first)
{
	struct msghdr h = { 0 };
	struct cmsghdr *cm;
	size_t passed = 0;
	long rc;

	/* every descriptor of the message counted before any is taken: past
	 * SCM_MAX_FD the kernel refuses the message (EINVAL) */
	h.msg_control = m->control;
	h.msg_controllen = m->controllen;
	for (cm = CMSG_FIRSTHDR(&h); cm; cm = CMSG_NXTHDR(&h, cm)) {
		size_t room = m->controllen - (size_t)((char *)cm - m->control);

		if (cm->cmsg_len < CMSG_LEN(0) || cm->cmsg_len > room)
			return -EINVAL;
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS)
			passed += (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	}
	if (passed > CALL_FDS)
		return -EINVAL;
	if (c->n_passed + passed > CALL_FDS)
		return first ? -EINVAL : STOP;
	if (passed) {
		rc = hold_fds(c, (unsigned)passed);
		if (rc < 0) {
			sb_suplog_refused(c->pid, "network",
					  "descriptors passed on a send",
					  "built in: the supervisor holds a "
					  "bounded number of passed "
					  "descriptors (ETOOMANYREFS)",
					  NULL);
			return first ? rc : STOP;
		}
		c->n_passed += (unsigned)passed;
	}

	h.msg_control = m->control;
	h.msg_controllen = m->controllen;
	for (cm = CMSG_FIRSTHDR(&h); cm; cm = CMSG_NXTHDR(&h, cm)) {
		size_t room = m->controllen - (size_t)((char *)cm - m->control);
		size_t k, nfd;
		int *more;

		if (cm->cmsg_len < CMSG_LEN(0) || cm->cmsg_len > room)
			return -EINVAL;
		/* we send with our own credentials: SO_MARK, SO_PRIORITY
		 * above 6 (CAP_NET_ADMIN), SCM_CREDENTIALS would be root's
		 * when python-sb is; only descriptors pass, as the program's
		 * (sockopt.c, shared with the guard) */
		if (!sb_cmsg_allowed(cm->cmsg_level, cm->cmsg_type))
			return control_refused(c, cm);
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		more = realloc(m->fds, (m->n_fds + nfd + 1) * sizeof(int));
		if (!more)
			return -ENOMEM;
		m->fds = more;
		for (k = 0; k < nfd; k++) {
			int fd, dup;

			memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(fd));
			dup = sb_pidfd_getfd(c->pidfd, fd);
			if (dup < 0)
				return -EBADF;
			m->fds[m->n_fds++] = dup;
			memcpy(CMSG_DATA(cm) + k * sizeof(int), &dup,
			       sizeof(dup));
		}
	}
	return 0;
}

static long copy_msghdr(const struct sb_policy *p, struct call *c,
			uint64_t at, struct msg *m, int *pathfd, bool first)
{
	struct msghdr h;
	struct iovec *iov;
	long rc;

	if (sb_peek(c->pid, at, &h, sizeof(h)) < 0)
		return -EFAULT;
	if (h.msg_name && h.msg_namelen) {
		bool made;

		if (h.msg_namelen > sizeof(m->name))
			return -EINVAL;
		if (sb_peek(c->pid, (uintptr_t)h.msg_name, &m->name,
			 h.msg_namelen) < 0)
			return -EFAULT;
		m->namelen = h.msg_namelen;
		rc = judge_addr(p, c, OP_SEND, &m->name, &m->namelen, pathfd,
				&made);
		if (rc < 0)
			return rc;
	}
	if (h.msg_iovlen > UIO_MAXIOV)
		return -EMSGSIZE;
	iov = calloc(h.msg_iovlen + 1, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	rc = sb_peek(c->pid, (uintptr_t)h.msg_iov, iov,
		  h.msg_iovlen * sizeof(*iov));
	if (rc == 0)
		rc = copy_payload(c, iov, h.msg_iovlen, m, first);
	free(iov);
	if (rc != 0)
		return rc;
	if (h.msg_control && h.msg_controllen) {
		if (h.msg_controllen > MAX_CONTROL)
			return -ENOBUFS;
		if (!first && c->bytes + h.msg_controllen > CALL_BYTES)
			return STOP;
		c->bytes += h.msg_controllen;
		m->control = malloc(h.msg_controllen);
		if (!m->control)
			return -ENOMEM;
		m->controllen = h.msg_controllen;
		if (sb_peek(c->pid, (uintptr_t)h.msg_control, m->control,
			 m->controllen) < 0)
			return -EFAULT;
		return copy_control(c, m, first);
	}
	return 0;
}

/* A send's flags as this process passes them on: the ones that tell how
 * to send, never MSG_ZEROCOPY. The supervisor sends its own copy of the
 * payload and frees it when sendmsg returns; with zero copy the kernel
 * kept referring to those pages until it sent them (a full window: later),
 * and whatever this process had put there meanwhile left for the peer, its
 * pointers and data (attack K33). Unknown bits go too: a flag a later
 * kernel adds is not passed on unread. */
static int send_flags(uint64_t raw)
{
	const int ok = MSG_OOB | MSG_DONTROUTE | MSG_DONTWAIT | MSG_EOR |
		       MSG_NOSIGNAL | MSG_MORE | MSG_CONFIRM | MSG_FASTOPEN;

	return (int)raw & ok;
}

/* ---- one notification ---- */

static long prepare_send(const struct sb_policy *p, struct call *c)
{
	unsigned i, n = 1;
	long rc = 0;

	if (c->nr == __NR_sendmmsg) {
		n = (unsigned)c->args[2];
		if (n > MAX_MMSG)
			n = MAX_MMSG; /* sendmmsg may send fewer */
		if (n == 0)
			return -EINVAL;
	}
	/* c->flags: open_call read them, once */
	c->msgs = calloc(n, sizeof(*c->msgs));
	if (!c->msgs)
		return -ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		struct msg *m = &c->msgs[i];
		int pathfd = -1;

		if (i > 0 && c->n_paths >= CALL_PATHS)
			break;
		c->n_msgs = i + 1;
		if (c->nr == __NR_sendto) {
			struct iovec v = { (void *)(uintptr_t)c->args[1],
					   (size_t)c->args[2] };
			bool made;

			if (c->args[5] > sizeof(m->name))
				return -EINVAL;
			if (sb_peek(c->pid, c->args[4], &m->name,
				 (size_t)c->args[5]) < 0)
				return -EFAULT;
			m->namelen = (socklen_t)c->args[5];
			rc = judge_addr(p, c, OP_SEND, &m->name, &m->namelen,
					&pathfd, &made);
			if (rc == 0)
				rc = copy_payload(c, &v, 1, m, true);
		} else {
			uint64_t at = c->args[1] +
				      (uint64_t)i * sizeof(struct mmsghdr);

			m->remote = at;
			rc = copy_msghdr(p, c, at, m, &pathfd, i == 0);
		}
		if (rc == 0)
			rc = judge_dns(p, c, m);
		if (pathfd >= 0) {
			/* closed with the sent descriptors */
			int *more = realloc(m->fds,
					    (m->n_fds + 1) * sizeof(int));

			if (!more) {
				close(pathfd);
				return -ENOMEM;
			}
			m->fds = more;
			m->fds[m->n_fds++] = pathfd;
			c->n_paths++;
		}
		if (rc == STOP) {
			/* this message and those after it are not sent */
			msg_free(m);
			c->n_msgs = i;
			return 0;
		}
	}
	return rc;
}

/* The caller and its socket, and whether the call may block. 0, GONE or
 * -errno. */
static long open_call(int listener, struct call *c)
{
	socklen_t ol = sizeof(int);
	int fl;

	c->pidfd = sb_pidfd_of_caller(c->pid);
	if (c->pidfd < 0)
		return errno == ESRCH ? GONE : -EAGAIN;
	if (!still_pending(listener, c->id))
		return GONE;
	c->sock = sb_pidfd_getfd(c->pidfd, (int)c->args[0]);
	if (c->sock < 0)
		return errno == ESRCH ? GONE : -EBADF;
	if (getsockopt(c->sock, SOL_SOCKET, SO_DOMAIN, &c->family, &ol) < 0 ||
	    getsockopt(c->sock, SOL_SOCKET, SO_TYPE, &c->type, &ol) < 0 ||
	    getsockopt(c->sock, SOL_SOCKET, SO_PROTOCOL, &c->proto, &ol) < 0)
		return -errno;
	if (c->nr == __NR_sendmmsg || c->nr == __NR_sendto)
		c->flags = send_flags(c->args[3]);
	else if (c->nr == __NR_sendmsg)
		c->flags = send_flags(c->args[2]);
	fl = fcntl(c->sock, F_GETFL);
	if (c->nr == __NR_connect)
		c->blocking = !(fl & O_NONBLOCK);
	else if (c->nr != __NR_bind && c->nr != __NR_listen)
		c->blocking = !(fl & O_NONBLOCK) && !(c->flags & MSG_DONTWAIT);
	return 0;
}

/* Judge the call and copy what it sends. 0, GONE or -errno. */
static long prepare(const struct sb_policy *p, int listener, struct call *c)
{
	long rc = 0;

	if (c->sock < 0) {
		/* a blocking call, opened again by its worker */
		rc = open_call(listener, c);
		if (rc != 0)
			return rc;
	}
	switch (c->nr) {
	case __NR_connect:
	case __NR_bind:
		if (c->args[2] > sizeof(c->addr))
			return -EINVAL;
		if (sb_peek(c->pid, c->args[1], &c->addr, (size_t)c->args[2]) < 0)
			return -EFAULT;
		c->addrlen = (socklen_t)c->args[2];
		rc = judge_addr(p, c,
				c->nr == __NR_bind ? OP_BIND : OP_CONNECT,
				&c->addr, &c->addrlen, &c->pathfd, &c->made);
		break;
	case __NR_listen:
		/* listen on an unbound socket binds the wildcard address to
		 * a port of the kernel's choice: judged as that bind */
		if ((c->family == AF_INET || c->family == AF_INET6) &&
		    c->type == SOCK_STREAM) {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			struct sb_addr a = { .family = c->family };

			if (getsockname(c->sock, (struct sockaddr *)&ss, &sl) < 0)
				return -errno;
			if (((struct sockaddr_in *)&ss)->sin_port == 0 &&
			    !allowed(p, c, SB_NET_IN, &a, 0))
				rc = -EACCES;
		}
		break;
	default:
		rc = prepare_send(p, c);
		break;
	}
	if (rc < 0)
		return rc;
	if (!still_pending(listener, c->id))
		return GONE;
	return 0;
}

/* The call, as the program asked for it, on our duplicate of its socket:
 * the result is the program's (0 or a count, or -errno). MSG_NOSIGNAL: a
 * broken pipe must not kill the supervisor; the program sees EPIPE. */
/* The calls are the program's, which holds no capability: this thread
 * performs them with none of ours but CAP_NET_BIND_SERVICE (an IN rule's
 * port below 1024). As root, CAP_DAC_OVERRIDE connected the program to a
 * Unix socket its own uid may not reach. Capabilities are per thread; the
 * permitted set stays, so the effective one is taken back after the call.
 * They are read once: the supervisor's threads all start with the same,
 * and none changes them but for the span of one call here. */
static struct caps_held {
	pthread_once_t once;
	bool narrow; /* there is something to give up (root) */
	bool broken; /* capget failed: no call is performed */
	struct __user_cap_data_struct full[2], narrowed[2];
} caps = { .once = PTHREAD_ONCE_INIT };

static void caps_read(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3,
					      0 };

	if (syscall(SYS_capget, &h, caps.full) < 0) {
		caps.broken = true;
		return;
	}
	memcpy(caps.narrowed, caps.full, sizeof(caps.full));
	caps.narrowed[0].effective &= CAP_TO_MASK(CAP_NET_BIND_SERVICE);
	caps.narrowed[1].effective = 0;
	caps.narrow = caps.narrowed[0].effective != caps.full[0].effective ||
		      caps.full[1].effective;
}

static int caps_set(struct __user_cap_data_struct *d)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3,
					      0 };

	return (int)syscall(SYS_capset, &h, d);
}

/* This thread to the program's rights: 0, or -EPERM (nothing may be done
 * then, never with ours). */
static int caps_narrow(void)
{
	pthread_once(&caps.once, caps_read);
	if (caps.broken || (caps.narrow && caps_set(caps.narrowed) < 0))
		return -EPERM;
	return 0;
}

/* And back; a failure leaves this thread with less: later calls fail. */
static void caps_widen(void)
{
	if (caps.narrow)
		(void)caps_set(caps.full);
}

static long perform_as_program(struct call *c);

/* A named Unix socket's file gets the mode the program's umask leaves,
 * not python-sb's: a program that set umask 077 to keep its socket to
 * itself got one any local user could connect to when python-sb ran with
 * umask 000 (attack K34). The umask is the process's; only the main
 * thread makes files here (a bind never blocks, so no worker performs
 * one). */
static int bind_as_program(const struct call *c)
{
	mode_t ours;
	int mask, rc;

	/* an abstract name, or an autobind, makes no file */
	if (c->family != AF_UNIX || c->addrlen <= sizeof(sa_family_t) ||
	    ((const struct sockaddr_un *)&c->addr)->sun_path[0] == '\0')
		return bind(c->sock, (const struct sockaddr *)&c->addr,
			    c->addrlen);
	/* read by number: the caller's pidfd, alive after the read, says
	 * the number was not reused meanwhile */
	mask = sb_umask_of(c->pid);
	if (mask >= 0 && c->pidfd >= 0 &&
	    sb_pidfd_send_signal(c->pidfd, 0) < 0)
		mask = -1;
	if (mask < 0) {
		errno = EACCES;
		return -1;
	}
	ours = umask((mode_t)mask);
	rc = bind(c->sock, (const struct sockaddr *)&c->addr, c->addrlen);
	umask(ours);
	return rc;
}

static long perform_as_program(struct call *c)
{
	unsigned i;
	long rc = 0;

	switch (c->nr) {
	case __NR_connect:
		rc = connect(c->sock, (struct sockaddr *)&c->addr, c->addrlen);
		break;
	case __NR_bind:
		rc = bind_as_program(c);
		if (rc == 0 && c->made && c->pathfd >= 0) {
			const struct sockaddr_un *sun =
				(const struct sockaddr_un *)&c->addr;
			const char *base = strrchr(sun->sun_path, '/');

			if (base)
				sb_entrysup_made_at(c->pathfd, base + 1);
		}
		break;
	case __NR_listen:
		rc = listen(c->sock, (int)c->args[1]);
		break;
	default:
		for (i = 0; i < c->n_msgs; i++) {
			struct msg *m = &c->msgs[i];
			struct iovec v = { m->data, m->len };
			struct msghdr h = { 0 };
			ssize_t n;

			h.msg_name = m->namelen ? &m->name : NULL;
			h.msg_namelen = m->namelen;
			h.msg_iov = &v;
			h.msg_iovlen = 1;
			h.msg_control = m->control;
			h.msg_controllen = m->controllen;
			n = sendmsg(c->sock, &h, c->flags | MSG_NOSIGNAL);
			if (n < 0) {
				if (i == 0 || c->nr != __NR_sendmmsg)
					return -errno;
				break;
			}
			rc = n;
			if (c->nr == __NR_sendmmsg) {
				unsigned int sent = (unsigned int)n;
				struct iovec l = { &sent, sizeof(sent) };
				struct iovec r = {
					(void *)(uintptr_t)(m->remote +
						offsetof(struct mmsghdr,
							 msg_len)),
					sizeof(sent)
				};

				(void)process_vm_writev(c->pid, &l, 1, &r, 1, 0);
			}
		}
		if (c->nr == __NR_sendmmsg)
			rc = i;
		return rc;
	}
	return rc < 0 ? -errno : rc;
}

/* ---- workers for calls that may block ---- */

/* Prepare the call and perform it, or answer why not; then free it. Both
 * with the program's rights: a Unix socket's path is walked while the
 * call is prepared, and root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
 * reached a socket in a directory the program may not enter. */
static void serve_call(struct sup *s, struct call *c)
{
	bool performed = false;
	long rc = caps_narrow();

	if (rc == 0) {
		rc = prepare(s->p, s->listener, c);
		if (rc == 0) {
			rc = perform_as_program(c);
			performed = true;
		}
		caps_widen();
	}
	if (performed || rc != GONE)
		reply(s->listener, c->id, rc);
	call_free(c);
}

static void *worker(void *arg)
{
	struct sup *s = arg;
	struct call *c;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->head) {
			s->idle++;
			pthread_cond_wait(&s->cv, &s->mu);
			s->idle--;
		}
		c = s->head;
		s->head = c->next;
		if (!s->head)
			s->tail = NULL;
		s->queued--;
		pthread_mutex_unlock(&s->mu);
		serve_call(s, c);
	}
	return NULL;
}

/* A blocking connect must not hold the others: a worker takes it, and
 * only then reads and copies what it sends (the call waits in the
 * kernel meanwhile, as it would for a full socket). At most max_workers
 * calls block at once; past that they wait their turn, MAX_QUEUED of
 * them. A call that waits its turn holds no descriptor and none of the
 * program's data; one an idle worker takes keeps its two descriptors
 * (at most one such call per idle worker). */
static void run_blocking(struct sup *s, struct call *c)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_mutex_lock(&s->mu);
	if (s->queued >= MAX_QUEUED) {
		pthread_mutex_unlock(&s->mu);
		sb_suplog_refused(c->pid, "network", "a blocking call",
				  "built in: the supervisor queues a bounded "
				  "number of blocking calls",
				  NULL);
		reply(s->listener, c->id,
		      c->nr == __NR_connect ? -EAGAIN : -ENOBUFS);
		call_free(c);
		return;
	}
	if (s->idle <= s->queued && s->workers < s->max_workers &&
	    pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&t, &attr, worker, s) == 0)
			s->workers++;
		pthread_attr_destroy(&attr);
	}
	if (s->workers == 0) {
		pthread_mutex_unlock(&s->mu);
		serve_call(s, c);
		return;
	}
	/* an idle worker takes it at once, with the descriptors open_call()
	 * made (opening them again cost a dozen calls a connect); one that
	 * waits its turn holds none, its worker opens them again */
	if (s->idle <= s->queued) {
		close(c->sock);
		close(c->pidfd);
		c->sock = c->pidfd = -1;
	}
	s->queued++;
	c->next = NULL;
	if (s->tail)
		s->tail->next = c;
	else
		s->head = c;
	s->tail = c;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static bool performed(int nr)
{
	return nr == __NR_connect || nr == __NR_bind || nr == __NR_listen ||
	       nr == __NR_sendto || nr == __NR_sendmsg || nr == __NR_sendmmsg;
}

/* PYSB_DEBUG or a denial log: the deny list comes here instead of
 * failing in the kernel (seccomp.c), to be reported as it happens (on
 * stderr with PYSB_DEBUG, in the log when there is one); the answer is the
 * same. */
static void report_denied(const struct seccomp_notif *req, bool log)
{
	char *name = seccomp_syscall_resolve_num_arch(req->data.arch,
						      req->data.nr);
	const char *shown = name ? name : "an unknown system call";

	if (getenv("PYSB_DEBUG"))
		fprintf(stderr,
			"python-sb: seccomp: refused %s (pid %d): EPERM\n",
			shown, (int)req->pid);
	if (log && sb_suplog_on())
		sb_suplog_syscall(req->pid, shown);
	free(name);
}

/* Before Landlock's ABI 6 nothing keeps a signal inside the sandbox: the
 * filter sends every signal call here (seccomp.c), and it goes on only to
 * a process of the sandbox (sb_filelog_in_sandbox), its own process group
 * (0), or a group whose leader is one (every process of a group is in its
 * leader's session, and the program's sessions hold its processes only);
 * never to every process (-1). The kernel delivers it to the pid the
 * caller named, checked here a moment before; a pidfd is judged and used
 * here (pidfd_signal). 'target': the process the call names, or 0. */
static bool signal_stays_inside(const struct seccomp_notif *req,
				pid_t target)
{
	int32_t first = (int32_t)req->data.args[0];
	char what[48];

	if (req->data.nr == __NR_kill && first == 0)
		return true;
	if (req->data.nr == __NR_kill && first < -1)
		target = -first;
	if (target > 0 && sb_filelog_in_sandbox(target, self_root))
		return true;
	if (sb_suplog_on()) {
		if (first == -1 && req->data.nr == __NR_kill)
			snprintf(what, sizeof(what), "every process");
		else
			snprintf(what, sizeof(what), "%s %d",
				 first < -1 && req->data.nr == __NR_kill
					 ? "process group"
					 : "pid",
				 (int)(target > 0 ? target : first));
		sb_suplog_refused((pid_t)req->pid, "signal", what,
				  "built in: a process outside the sandbox "
				  "(Landlock below ABI 6: the supervisor "
				  "judges)",
				  NULL);
	}
	return false;
}

/* pidfd_send_signal below ABI 6. Its pidfd is a descriptor number, which
 * another thread of the program pointed at a process outside (dup2)
 * between our check and the kernel's use of it when the call was let go
 * on (attack K31): it is judged and sent here, on our own duplicate of
 * the pidfd, with our copy of its siginfo; the receiver sees python-sb as
 * the sender. 0, -errno, or GONE. */
static long pidfd_signal(int listener, const struct seccomp_notif *req)
{
	const __u64 *a = req->data.args;
	int pidfd = sb_pidfd_of_caller((pid_t)req->pid), fd;
	siginfo_t info;
	long rc;

	if (pidfd < 0)
		return GONE;
	fd = sb_pidfd_getfd(pidfd, (int)a[0]);
	close(pidfd);
	if (fd < 0)
		return -EBADF;
	if (!signal_stays_inside(req, sb_pidfd_target(getpid(), fd)))
		rc = -EPERM;
	else if (a[2] && sb_peek((pid_t)req->pid, a[2], &info,
				 sizeof(info)) < 0)
		rc = -EFAULT;
	else if (!still_pending(listener, req->id))
		rc = GONE;
	else if (syscall(SYS_pidfd_send_signal, fd, (int)a[1],
			 a[2] ? &info : NULL, (unsigned)a[3]) < 0)
		rc = -errno;
	else
		rc = 0;
	close(fd);
	return rc;
}

static void serve_one(struct sup *s, struct seccomp_notif *req, size_t size)
{
	struct call *c;
	long rc;

	memset(req, 0, size);
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return; /* ENOENT: the caller went away first */
	/* PYSB_DEBUG or a denial log: what the filter's argument rules
	 * refuse comes here too (seccomp.c), and is refused as there */
	if (sb_seccomp_args_refused(req->data.nr, req->data.args)) {
		report_denied(req, true);
		reply(s->listener, req->id, -EPERM);
		return;
	}
	if (sb_ttysup_handles(req)) {
		/* a terminal's modes: set here unless they change TOSTOP */
		if (sb_ttysup_serve(s->listener, req, &rc)) {
			if (rc == -EPERM)
				report_denied(req, false);
			reply(s->listener, req->id, rc);
		}
		return;
	}
	if (sb_metasup_handles(req->data.nr)) {
		/* the path is walked and the change made with the
		 * program's rights: root's CAP_DAC_READ_SEARCH reached files
		 * under directories the program may not enter */
		bool answer = true;

		rc = caps_narrow();
		if (rc == 0) {
			answer = sb_metasup_serve(s->p, s->listener, req, &rc);
			caps_widen();
		}
		/* named like the filter's refusals (not logged as one:
		 * the supervisor judged it) */
		if (answer && rc == -EPERM)
			report_denied(req, false);
		if (answer)
			reply(s->listener, req->id, rc);
		return;
	}
	if (sb_filecall_handles(req->data.nr) ||
	    sb_sigcall_handles(req->data.nr)) {
		/* PYSB_DEBUG or a denial log: the file calls and signal
		 * sends come here (seccomp.c); what the filter alone would
		 * not let through is refused as there, the rest recorded if
		 * Landlock will refuse it, and let go on */
		if (!sb_seccomp_lets_through(req->data.nr, req->data.args)) {
			report_denied(req, true);
			reply(s->listener, req->id, -EPERM);
			return;
		}
		if (!s->scoped && req->data.nr == __NR_pidfd_send_signal) {
			rc = pidfd_signal(s->listener, req);
			if (rc == -EPERM)
				report_denied(req, false);
			if (rc != GONE)
				reply(s->listener, req->id, rc);
			return;
		}
		if (!s->scoped && sb_sigcall_handles(req->data.nr) &&
		    (!signal_stays_inside(req, sb_sigcall_target(req)) ||
		     ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ID_VALID,
			   &req->id) != 0)) {
			report_denied(req, false);
			reply(s->listener, req->id, -EPERM);
			return;
		}
		if (s->entries && !sb_sigcall_handles(req->data.nr)) {
			enum sb_entrysup_answer ans = SB_ENTRYSUP_PASS;

			/* with the program's rights, as metasup's */
			if (caps_narrow() == 0) {
				ans = sb_entrysup_serve(s->p, s->listener, req,
							&rc);
				caps_widen();
			}
			if (ans == SB_ENTRYSUP_ANSWERED)
				return;
			if (ans == SB_ENTRYSUP_REPLY) {
				reply(s->listener, req->id, rc);
				return;
			}
		}
		if (sb_sigcall_handles(req->data.nr))
			sb_filelog_signal(s->fl, s->listener, req, self_root);
		else
			sb_filelog_note(s->fl, s->listener, req);
		reply_continue(s->listener, req->id);
		return;
	}
	if (!performed(req->data.nr)) {
		report_denied(req, true);
		reply(s->listener, req->id, -EPERM);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		reply(s->listener, req->id, -ENOMEM);
		return;
	}
	c->id = req->id;
	c->pid = (pid_t)req->pid;
	c->nr = req->data.nr;
	c->s = s;
	memcpy(c->args, req->data.args, sizeof(c->args));
	c->sock = c->pidfd = c->pathfd = -1;
	rc = open_call(s->listener, c);
	if (rc == GONE) {
		call_free(c);
	} else if (rc < 0) {
		reply(s->listener, c->id, rc);
		call_free(c);
	} else if (c->blocking) {
		run_blocking(s, c);
	} else {
		serve_call(s, c);
	}
}

/* ---- the run ---- */

/* What the loop serves beside the signals: the program's notified calls
 * and the log lines its processes send. */
struct serving {
	struct sup *s;
	struct seccomp_notif *req;
	size_t req_size;
	int live; /* the listener while a process uses the filter, or -1 */
};

static void serving_fds(struct sb_sup *sup, void *ctx, struct pollfd *p)
{
	const struct serving *v = ctx;

	p[0] = (struct pollfd){ v->live, POLLIN, 0 };
	p[1] = (struct pollfd){ sb_suplog_relay_fd(), POLLIN, 0 };
}

static void serving_ready(struct sb_sup *sup, void *ctx,
			  const struct pollfd *p)
{
	struct serving *v = ctx;

	if (p[1].revents & POLLIN)
		sb_suplog_drain();
	if (p[0].revents & POLLIN)
		serve_one(v->s, v->req, v->req_size);
	else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
		v->live = -1; /* no process uses the filter any more */
}

/* The descriptors held for the program, from python-sb's own limit: a
 * quarter of it for passed descriptors, and about 18 for each worker (its
 * call's socket, caller and named Unix sockets), so that the rest of
 * python-sb, and the sweep at the end, keep theirs. */
static void sup_bounds(struct sup *s)
{
	struct rlimit rl;
	rlim_t n = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		n = rl.rlim_cur;
	s->max_fds = n / 4 < MAX_HELD_FDS ? (unsigned)(n / 4) : MAX_HELD_FDS;
	s->max_workers = n / 32 < MAX_WORKERS ? (unsigned)(n / 32)
					      : MAX_WORKERS;
	if (s->max_workers < 1)
		s->max_workers = 1;
}

static void handover_failed(pid_t pid, const char *what)
{
	fprintf(stderr, "python-sb: network supervisor: %s: %s; nothing was "
			"run.\n",
		what, strerror(errno));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* What the program's child of python-sb (sb_sup_spawn) is given. */
struct landlock_child {
	struct sb_arena *a;
	const struct sb_policy *p;
	struct sb_kernel_ctx *kc;
	struct sb_limits *lim;
	const struct sb_sup *run;
	pid_t parent;
	const char *path;
	char *const *argv;
	char *const *envp;
	int hand[2], ack[2];
};

/* The child: the kernel layer applied to itself, then the program. It
 * runs in python-sb's memory while python-sb waits in read(hand): it
 * hands over the listener's number, waits for python-sb to have taken
 * it (pidfd_getfd: sendmsg is a notified call now, and nobody would
 * answer it) and execs; python-sb runs beside it from then on, so nothing
 * but the exec comes after the ack. The program dies with python-sb. */
static int landlock_child(void *arg)
{
	struct landlock_child *c = arg;
	const char *err, *hint;
	int num, listener = -1, msg_len;
	char ok, msg[PATH_MAX + 128];

	sb_sup_child(c->run);
	sb_prof_mark("fork");
	close(c->hand[0]);
	close(c->ack[1]);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != c->parent)
		_exit(SB_EXIT_SETUP);
	/* a session of its own: no controlling terminal, so no TIOCSTI into
	 * the caller's input queue even where an ioctl would pass; the
	 * terminal's signals come from us */
	if (setsid() < 0) {
		fprintf(stderr, "python-sb: setsid: %s; nothing was run.\n",
			strerror(errno));
		_exit(SB_EXIT_SETUP);
	}
	/* into the run's cgroup while its files can still be reached:
	 * Landlock will hide them */
	if ((num = sb_limits_join(c->lim)) < 0) {
		fprintf(stderr, "python-sb: join the run's cgroup: %s; "
				"nothing was run.\n",
			strerror(-num));
		_exit(SB_EXIT_SETUP);
	}
	/* sb_kernel_apply empties the capability sets too, after the mount
	 * namespace that keeps our own files read-only */
	if (sb_kernel_apply(c->a, c->p, c->kc, &listener, &err, &hint) < 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=landlock: %s; nothing was "
			"run.\n",
			err);
		if (hint)
			fprintf(stderr, "Hint: %s\n", hint);
		_exit(SB_EXIT_SETUP);
	}
	/* last but the hand-over: a low limit-open-files or limit-memory
	 * must not break the set-up above */
	if (sb_limits_set_rlimits(c->lim, &num) < 0) {
		fprintf(stderr, "python-sb: setrlimit for %s: %s; nothing was "
				"run.\n",
			c->p->limits[num].rule, strerror(errno));
		_exit(SB_EXIT_SETUP);
	}
	sb_prof_mark("handover");
	sb_prof_dump("launcher");
	if (write(c->hand[1], &listener, sizeof(listener)) !=
		    sizeof(listener) ||
	    read(c->ack[0], &ok, 1) != 1)
		_exit(SB_EXIT_SETUP);
	/* the program must never hold it: it would answer its own calls
	 * (close-on-exec already; closed all the same) */
	close(listener);
	sb_caller_give();
	execve(c->path, c->argv, c->envp);
	/* on our stack, no stdio nor gettext: python-sb runs beside us now */
	msg_len = snprintf(msg, sizeof(msg), "python-sb: exec %s: %s\n",
			   c->path, strerrordesc_np(errno));
	if (msg_len > 0)
		(void)!write(2, msg, (size_t)msg_len < sizeof(msg)
					  ? (size_t)msg_len
					  : sizeof(msg) - 1);
	_exit(SB_EXIT_SETUP);
}

int sb_netsup_run(struct sb_arena *a, const struct sb_policy *p,
		  const struct sb_kernel_ctx *ctx, const char *path,
		  char *const argv[], char *const envp[])
{
	struct seccomp_notif_sizes sizes = { 0 };
	struct seccomp_notif *req;
	struct sup s = { .p = p, .listener = -1 };
	/* the child's filter sends every file call here when we perform
	 * some (entrysup.h) */
	struct sb_kernel_ctx kc = *ctx;
	static const struct sb_sup_ops ops = { .fds = serving_fds,
					       .ready = serving_ready };
	struct sb_limits own_limits, *lim = ctx->limits;
	struct serving v = { &s, NULL, sizeof(*req), -1 };
	struct landlock_child child;
	int status = 0, lfd, pidfd, num = -1, rc;
	struct sb_sup run;
	pid_t pid, parent = getpid();

	kc.entries_served = s.entries = sb_entrysup_wanted(p);
	if (!lim) {
		sb_limits_plan_nested(p, 0, &own_limits);
		lim = &own_limits;
	}
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
	    sizes.seccomp_notif > v.req_size)
		v.req_size = sizes.seccomp_notif;
	/* every process of the program that loses its parent comes to us,
	 * to be ended with the run (sweep); the program runs in a session
	 * of its own (below), so the terminal's signals come from us */
	if (sb_sup_init(&run, SB_SUP_OWN_SESSION) < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		fprintf(stderr, "python-sb: network supervisor set-up: %s\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	if (pipe2(child.hand, O_CLOEXEC) < 0 ||
	    pipe2(child.ack, O_CLOEXEC) < 0) {
		fprintf(stderr, "python-sb: network supervisor set-up: %s\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	child.a = a;
	child.p = p;
	child.kc = &kc;
	child.lim = lim;
	child.run = &run;
	child.parent = parent;
	child.path = path;
	child.argv = argv;
	child.envp = envp;
	pid = sb_sup_spawn(&run, landlock_child, &child);
	if (pid < 0) {
		fprintf(stderr, "python-sb: clone: %s\n", strerror(errno));
		return SB_EXIT_SETUP;
	}
	/* the child works in our memory: nothing here but system calls
	 * until it is done */
	close(child.hand[1]);
	close(child.ack[0]);
	if (read(child.hand[0], &num, sizeof(num)) != sizeof(num)) {
		/* the child said why on stderr */
		waitpid(pid, &status, 0);
		sb_sup_end(&run);
		return WIFEXITED(status) ? WEXITSTATUS(status) : SB_EXIT_SETUP;
	}
	self_root = pid;
	pidfd = sb_pidfd_open(pid, 0);
	if (pidfd < 0) {
		handover_failed(pid, "pidfd_open");
		return SB_EXIT_SETUP;
	}
	lfd = sb_pidfd_getfd(pidfd, num);
	close(pidfd);
	if (lfd < 0) {
		handover_failed(pid, "pidfd_getfd of the listener");
		return SB_EXIT_SETUP;
	}
	/* from here on the child only execs */
	if (write(child.ack[1], "k", 1) != 1) {
		handover_failed(pid, "hand-over");
		return SB_EXIT_SETUP;
	}
	close(child.ack[1]);
	close(child.hand[0]);
	s.scoped = sb_landlock_abi() >= 6;
	if (sb_suplog_on())
		s.fl = sb_filelog_new(a, p, ctx);
	sb_suplog_started();
	signal(SIGPIPE, SIG_IGN);
	s.listener = lfd;
	sup_bounds(&s);
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	req = v.req = calloc(1, v.req_size);
	if (!req) {
		handover_failed(pid, "memory");
		return SB_EXIT_SETUP;
	}
	v.live = lfd;
	if (sb_sup_watch(&run, lim) < 0) {
		fprintf(stderr, "python-sb: timerfd for %s: %s\n",
			run.lw.failed, strerror(errno));
		handover_failed(pid, "the limits' timer");
		return SB_EXIT_SETUP;
	}
	if (ctx->channel_fd > 0)
		sb_sup_channel(&run, ctx->channel_fd, SB_SUP_CHANNEL_GRACE_MS);
	rc = sb_sup_loop(&run, &ops, &v);
	sb_sup_stop(&run, true);
	sb_suplog_drain(); /* what the program sent before it ended */
	/* workers may still hold calls of processes the program left
	 * behind: they end with python-sb, and those calls fail */
	free(req);
	sb_sup_end(&run);
	return rc < 0 ? SB_EXIT_SETUP
		      : sb_limits_verdict(lim, run.wstatus, &run.ru);
}
