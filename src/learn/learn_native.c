/* learn_native.c - in a learning run, the calls of native code (a C
 * extension, ctypes, a spawned binary, the whole process tree) that a
 * kernel-enforced policy will judge: open, openat, openat2, creat, execve,
 * execveat, the calls that make, remove or move a directory's entries
 * (mkdir, mknod, unlink, rmdir, rename, link, symlink and their *at forms:
 * Landlock judges those on the directory, so the directory is recorded as
 * written), and connect, bind and the sends that name an address. A
 * seccomp filter (seccomp.c) stops each one; this file reads its arguments
 * from the caller's memory, makes the path absolute and canonical (against
 * the caller's cwd or dirfd), turns it into a record line as the guard
 * writes them (learn.h) and lets the call go on. Learning enforces nothing:
 * every call is answered "continue", so a program that changes its memory
 * between our read and the kernel's only changes what is recorded, never
 * what it may do. It must not judge or refuse anything, and it skips what
 * os-sandbox=landlock grants anyway (the implicit paths) so that the rules
 * stay the program's own.
 */
#include "learn_native.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "filecall.h"
#include "landlock.h"
#include "notif.h"
#include "policy_net.h"
#include "selfport.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

/* sendmmsg: the addresses of this many messages at most are learned */
#define MAX_MMSG 64

struct skip {
	const char *path; /* canonical */
	enum sb_landlock_use use;
};

struct sb_learn_native {
	struct sb_arena *a;
	struct sb_learn_session *s;
	SB_VEC(struct skip) skips;
	/* importlib lists sys.path[0] (the script's directory, or the cwd):
	 * a listing that fails under Landlock is an empty directory to it,
	 * so that one read is not worth a rule over the whole tree */
	const char *listed[2];
	const char *interp; /* the interpreter's real binary: its importlib */
	pid_t root; /* the program: its listening ports are 'self' */
	struct seccomp_notif *req;
	size_t req_size;
	struct sb_buf out; /* the records of the call being served */
};

static const char *canonical(struct sb_arena *a, const char *path)
{
	char buf[PATH_MAX];

	if (!path || !realpath(path, buf))
		return NULL;
	return sb_arena_strdup(a, buf);
}

static void add_skip(struct sb_learn_native *n, const char *path,
		     enum sb_landlock_use use)
{
	struct skip *sk;

	if (!path)
		return;
	sk = SB_VEC_PUSH(n->a, n->skips);
	sk->path = path;
	sk->use = use;
}

struct sb_learn_native *sb_learn_native_new(struct sb_arena *a,
					    struct sb_learn_session *s,
					    const struct sb_kernel_ctx *ctx)
{
	const char *script = ctx->script;
	struct sb_learn_native *n = sb_arena_alloc(a, sizeof(*n));
	struct seccomp_notif_sizes sizes = { 0 };
	struct sb_landlock_path *imp;
	size_t i, k;

	n->a = a;
	n->s = s;
	/* the landlock rule lands on what a path names after symlinks */
	sb_landlock_implicit(a, ctx, &imp, &k);
	for (i = 0; i < k; i++)
		add_skip(n, canonical(a, imp[i].path), imp[i].use);
	/* the writer drops these too; dropped here they cost no record */
	for (i = 0; i < s->ctx.n_python_trees; i++)
		add_skip(n, canonical(a, s->ctx.python_trees[i]), SB_LL_READ);
	n->interp = ctx->interp ? canonical(a, ctx->interp->real) : NULL;
	n->listed[0] = canonical(a, ctx->cwd);
	if (script && ctx->cwd) {
		char *dir = sb_path_join(a, ctx->cwd, script);

		*strrchr(dir, '/') = '\0';
		n->listed[1] = canonical(a, *dir ? dir : "/");
	}
	n->req_size = sizeof(*n->req);
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
	    sizes.seccomp_notif > n->req_size)
		n->req_size = sizes.seccomp_notif;
	n->req = sb_arena_alloc(a, n->req_size);
	return n;
}

/* ---- what is not recorded ---- */

/* Does the call being served come from the interpreter (its importlib),
 * not from a program it started (ls listing the current directory)? */
static bool by_interpreter(const struct sb_learn_native *n)
{
	char link[64], exe[PATH_MAX];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)n->req->pid);
	k = readlink(link, exe, sizeof(exe) - 1);
	if (k < 0 || !n->interp)
		return false;
	exe[k] = '\0';
	return strcmp(exe, n->interp) == 0;
}

static bool skipped(const struct sb_learn_native *n, const char *path,
		    bool write, bool dir)
{
	size_t i;

	if (sb_path_proc_own(path) ||
	    (sb_path_under(path, "/proc") && (write || dir)) ||
	    sb_path_under(path, "/sys") ||
	    (sb_path_under(path, "/dev") && !sb_path_under(path, "/dev/shm")))
		return true;
	/* CPython takes a byte-code cache it cannot read or write as a miss */
	if (strstr(path, "/__pycache__/"))
		return true;
	if (dir && !write)
		for (i = 0; i < SB_ARRAY_LEN(n->listed); i++)
			if (n->listed[i] && strcmp(path, n->listed[i]) == 0 &&
			    by_interpreter(n))
				return true;
	for (i = 0; i < n->skips.n; i++) {
		const struct skip *sk = &n->skips.v[i];

		switch (sk->use) {
		case SB_LL_READ:
			if (!write && sb_path_under(path, sk->path))
				return true;
			break;
		case SB_LL_EXEC:
		case SB_LL_SCRIPT:
			if (!write && strcmp(path, sk->path) == 0)
				return true;
			break;
		case SB_LL_LIST:
			if (!write && dir && strcmp(path, sk->path) == 0)
				return true;
			break;
		case SB_LL_READWRITE:
			if (strcmp(path, sk->path) == 0)
				return true;
			break;
		}
	}
	return false;
}

/* ---- records ---- */

static void put_field(struct sb_buf *b, const char *s)
{
	sb_buf_puts(b, "\t");
	sb_buf_put_field(b, s);
}

static void feed(struct sb_learn_native *n, const char *const *fields)
{
	size_t i;

	sb_buf_puts(&n->out, fields[0]);
	for (i = 1; fields[i]; i++)
		put_field(&n->out, fields[i]);
	sb_buf_puts(&n->out, "\n");
}

static void record_file(struct sb_learn_native *n, const char *path,
			bool write)
{
	const struct sb_learned *l = &n->s->learned;
	struct stat st;
	bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	size_t i;

	if (skipped(n, path, write, dir))
		return;
	/* a program opens the same files over and over: a record the
	 * learner has already costs arena memory and nothing else */
	for (i = 0; i < l->files.n; i++)
		if (strcmp(l->files.v[i].path, path) == 0 &&
		    (write ? l->files.v[i].write : l->files.v[i].read) &&
		    (l->files.v[i].is_dir || !dir))
			return;
	feed(n, (const char *const[]){ "file", write ? "w" : "r",
				      dir ? "d" : "f", path, NULL });
}

static bool addr_is_any(const struct sb_addr *a)
{
	size_t i, len = a->family == AF_INET ? 4 : 16;

	for (i = 0; i < len; i++)
		if (a->bytes[i])
			return false;
	return true;
}

static void record_dest(struct sb_learn_native *n, bool udp, bool in,
			const struct sb_addr *a, bool self, unsigned port)
{
	const struct sb_learned *l = &n->s->learned;
	char pbuf[16], text[INET6_ADDRSTRLEN];
	size_t i;

	if (!inet_ntop(a->family, a->bytes, text, sizeof(text)))
		return;
	/* the guard saw the same call first (its audit hook runs before the
	 * system call) and knows the host name: its record says more. A
	 * name it could not resolve is recorded with the any address. */
	for (i = 0; i < l->nets.n; i++) {
		const struct sb_learned_net *x = &l->nets.v[i];

		if (x->kind != (udp ? SB_NET_UDP : SB_NET_TCP) ||
		    x->dir != (in ? SB_NET_IN : SB_NET_OUT) ||
		    x->self != self || (!self && x->port != port))
			continue;
		if ((x->addr.family == a->family &&
		     memcmp(x->addr.bytes, a->bytes, sizeof(a->bytes)) == 0) ||
		    (x->host && addr_is_any(&x->addr)))
			return;
	}
	if (self)
		snprintf(pbuf, sizeof(pbuf), "self");
	else
		snprintf(pbuf, sizeof(pbuf), "%u", port);
	feed(n, (const char *const[]){ "net", udp ? "udp" : "tcp",
				      in ? "in" : "out", text, pbuf, "-",
				      NULL });
}

/* The rules name where the kernel connects, as the guard records it
 * (sb_addr_destinations): an outbound 0.0.0.0 is 127.0.0.1, ::ffff:a.b.c.d
 * is a.b.c.d, a broadcast is itself and loopback. */
static void record_net(struct sb_learn_native *n, bool udp, bool in,
		       const char *addr, unsigned port)
{
	struct sb_addr a, d[2];
	size_t nd, k;
	bool self;

	if (sb_addr_parse(addr, &a) != 0)
		return;
	/* a port this run listens on is another one next time */
	self = !in && sb_self_port(udp ? SOCK_DGRAM : SOCK_STREAM, &a,
				   (uint16_t)port, n->root);
	nd = sb_addr_destinations(&a, in ? SB_NET_IN : SB_NET_OUT, d);
	for (k = 0; k < nd; k++)
		record_dest(n, udp, in, &d[k], self, port);
}

/* ---- one call ---- */

static bool write_intent(uint64_t flags)
{
	return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) ||
	       (flags & O_TMPFILE) == O_TMPFILE;
}

static void on_open(struct sb_learn_native *n, pid_t pid,
		    const struct sb_fc_access *x)
{
	char path[PATH_MAX], canon[PATH_MAX];

	/* O_PATH opens no content: Landlock does not judge it either */
	if (x->flags & O_PATH)
		return;
	if (sb_filecall_peek_string(pid, x->path_at, path, sizeof(path)) < 0 ||
	    !*path)
		return;
	/* a file it makes is recorded as written; whether its directory
	 * needs a rule is known once the run is over (learn_rules.c) */
	if (sb_filecall_resolve(pid, x->dirfd, path, (x->flags & O_CREAT) != 0,
				canon) == 0)
		record_file(n, canon, write_intent(x->flags));
}

/* mkdir, unlink, rename...: the entry named by (dirfd, path) is made or
 * removed; the entry itself need not exist. Landlock judges that on the
 * directory, which is recorded as written. */
static void on_entry(struct sb_learn_native *n, pid_t pid,
		     const struct sb_fc_access *x)
{
	char path[PATH_MAX], canon[PATH_MAX], last[PATH_MAX];

	if (sb_filecall_peek_string(pid, x->path_at, path, sizeof(path)) < 0)
		return;
	if (sb_filecall_entry_dir(pid, x->dirfd, path, canon, last) < 0)
		return;
	/* the directory (Landlock judges the entry there), and the entry
	 * itself: where no rule may grant the directory (the home
	 * directory), the entry gets a rule of its own (learn_rules.c) */
	record_file(n, canon, true);
	if (strlen(canon) + strlen(last) + 2 <= sizeof(path)) {
		strcpy(path, strcmp(canon, "/") ? canon : "");
		strcat(path, "/");
		strcat(path, last);
		record_file(n, path, true);
	}
}

/* "#!/bin/sh": the kernel opens that interpreter for execution too, and
 * Landlock judges it as it judges the script. */
static void shebang(struct sb_learn_native *n, const char *canon)
{
	char head[256], interp[PATH_MAX];
	ssize_t k;
	size_t len;
	char *p;
	int fd = open(canon, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return;
	k = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (k < 3 || head[0] != '#' || head[1] != '!')
		return;
	head[k] = '\0';
	p = head + 2 + strspn(head + 2, " \t");
	len = strcspn(p, " \t\n");
	p[len] = '\0';
	if (*p == '/' && realpath(p, interp))
		record_file(n, interp, false);
}

/* Exec needs read (Landlock: read and execute of the file, which an
 * expose-ro= rule gives). */
static void on_exec(struct sb_learn_native *n, pid_t pid,
		    const struct sb_fc_access *x)
{
	char path[PATH_MAX], canon[PATH_MAX];

	if (sb_filecall_peek_string(pid, x->path_at, path, sizeof(path)) < 0)
		return;
	if (!*path && !x->empty_path)
		return;
	if (sb_filecall_resolve(pid, x->dirfd, path, false, canon) < 0)
		return;
	record_file(n, canon, false);
	shebang(n, canon);
}

/* One address a socket call names. */
static void on_addr(struct sb_learn_native *n, pid_t pid, int sock,
		    const struct sockaddr_storage *ss, socklen_t len, bool in)
{
	char text[INET6_ADDRSTRLEN], canon[PATH_MAX];
	int type = 0, proto = 0;
	socklen_t ol = sizeof(int);
	bool udp;

	if (len < sizeof(sa_family_t))
		return;
	if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *sun = (const void *)ss;
		size_t off = offsetof(struct sockaddr_un, sun_path), k;
		char path[sizeof(sun->sun_path) + 1];

		/* abstract names are no file; the file rules judge named
		 * sockets, as a write */
		if (len <= off || sun->sun_path[0] == '\0')
			return;
		k = strnlen(sun->sun_path, len - off);
		memcpy(path, sun->sun_path, k);
		path[k] = '\0';
		if (sb_filecall_resolve(pid, AT_FDCWD, path, in, canon) == 0)
			record_file(n, canon, true);
		return;
	}
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &ol) < 0 ||
	    getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &proto, &ol) < 0)
		return;
	if (type == SOCK_STREAM &&
	    (proto == IPPROTO_TCP || proto == IPPROTO_MPTCP))
		udp = false;
	else if (type == SOCK_DGRAM &&
		 (proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE))
		udp = true;
	else
		return; /* no net= rule names ICMP, SCTP... */
	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in4 = (const void *)ss;

		inet_ntop(AF_INET, &in4->sin_addr, text, sizeof(text));
		record_net(n, udp, in, text, ntohs(in4->sin_port));
	} else if (ss->ss_family == AF_INET6 && len >= 24) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
		record_net(n, udp, in, text, ntohs(in6->sin6_port));
	}
}

static void on_socket_call(struct sb_learn_native *n,
			   const struct seccomp_notif *req)
{
	const __u64 *arg = req->data.args;
	pid_t pid = (pid_t)req->pid;
	struct sockaddr_storage ss;
	int pidfd, sock;
	unsigned i, count = 1;

	pidfd = sb_pidfd_of_caller(pid);
	if (pidfd < 0)
		return;
	sock = sb_pidfd_getfd(pidfd, (int)arg[0]);
	close(pidfd);
	if (sock < 0)
		return;
	if (req->data.nr == __NR_connect || req->data.nr == __NR_bind ||
	    req->data.nr == __NR_sendto) {
		uint64_t at = req->data.nr == __NR_sendto ? arg[4] : arg[1];
		uint64_t len = req->data.nr == __NR_sendto ? arg[5] : arg[2];

		if (at && len <= sizeof(ss) &&
		    sb_peek(pid, at, &ss, (size_t)len) == 0)
			on_addr(n, pid, sock, &ss, (socklen_t)len,
				req->data.nr == __NR_bind);
		close(sock);
		return;
	}
	if (req->data.nr == __NR_sendmmsg)
		count = arg[2] < MAX_MMSG ? (unsigned)arg[2] : MAX_MMSG;
	for (i = 0; i < count; i++) {
		uint64_t at = arg[1] + (req->data.nr == __NR_sendmmsg
						? (uint64_t)i *
							  sizeof(struct mmsghdr)
						: 0);
		struct msghdr h;

		if (sb_peek(pid, at, &h, sizeof(h)) < 0)
			break;
		if (h.msg_name && h.msg_namelen &&
		    h.msg_namelen <= sizeof(ss) &&
		    sb_peek(pid, (uintptr_t)h.msg_name, &ss, h.msg_namelen) == 0)
			on_addr(n, pid, sock, &ss, h.msg_namelen, false);
	}
	close(sock);
}

static void dispatch(struct sb_learn_native *n,
		     const struct seccomp_notif *req)
{
	struct sb_fc_access x[2];
	size_t i, k;

	if (!sb_filecall_handles(req->data.nr)) {
		on_socket_call(n, req);
		return;
	}
	k = sb_filecall_decode(req, x);
	for (i = 0; i < k; i++)
		switch (x[i].op) {
		case SB_FC_OPEN:
			on_open(n, (pid_t)req->pid, &x[i]);
			break;
		case SB_FC_EXEC:
			on_exec(n, (pid_t)req->pid, &x[i]);
			break;
		case SB_FC_MAKE:
		case SB_FC_REMOVE:
			on_entry(n, (pid_t)req->pid, &x[i]);
			break;
		case SB_FC_TRUNCATE:
			break; /* not in learning's filter */
		}
}

void sb_learn_native_set_root(struct sb_learn_native *n, pid_t root)
{
	n->root = root;
}

int sb_learn_native_serve(struct sb_learn_native *n, int listener)
{
	struct seccomp_notif_resp resp;
	struct seccomp_notif *req = n->req;

	memset(req, 0, n->req_size);
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return -1; /* ENOENT: the caller went away first */
	/* While the caller waits for the answer its cwd, descriptors and
	 * memory hold still (but for its other threads): read them now. If
	 * it died meanwhile and its pid was reused, what was read belongs to
	 * another process: the ID check after the reads drops that record. */
	n->out.len = 0;
	dispatch(n, req);
	if (n->out.len &&
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0)
		sb_learn_feed(n->s, n->out.s, n->out.len);
	memset(&resp, 0, sizeof(resp));
	resp.id = req->id;
	resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	/* ENOENT: the caller was interrupted or died meanwhile */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	return 0;
}

void sb_learn_native_done(struct sb_learn_native *n)
{
	sb_buf_free(&n->out);
}
