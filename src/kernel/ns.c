/* ns.c - os-sandbox=unshare without the unshare binary. It owns the new
 * namespaces, the new root (a tmpfs holding bind mounts of the exposed
 * paths and of what the interpreter needs, a minimal /dev, a fresh /proc
 * and a hosts file of the pinned names), the masks of ignore=, and the tiny
 * init that is pid 1 inside. The kernel layer (Landlock, seccomp, the
 * network supervisor) is reused as os-sandbox=landlock applies it, inside
 * the new root; this file judges no access itself. The mount plan is made
 * before the first fork, with every bind source opened then, so that a
 * source that is missing or vanishes stops the run before anything runs:
 * a half-built root dies with its mount namespace.
 */
#include "exit_status.h"
#include "ns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsrules.h"
#include "landlock.h"
#include "netns.h"
#include "netsup.h"
#include "supervisor.h"


#define HINT_USERNS                                                            \
	"user namespaces are disabled here (sysctl user.max_user_namespaces=0," \
	" kernel.unprivileged_userns_clone=0, or AppArmor's "                  \
	"kernel.apparmor_restrict_unprivileged_userns=1); allow them, or use "  \
	"os-sandbox=landlock (no namespaces needed), or os-sandbox=bwrap "      \
	"where bwrap is installed setuid"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

struct ns_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* ---- building the root (in the init, pid 1 inside) ---- */

static void die(const char *step, const char *path)
{
	fprintf(stderr,
		"python-sb: os-sandbox=unshare: %s%s%s: %s; nothing was run.\n",
		step, path ? " " : "", path ? path : "", strerror(errno));
	_exit(SB_EXIT_SETUP);
}

static int sys_mount_setattr(const char *path, unsigned flags,
			     uint64_t set)
{
	struct ns_mount_attr attr = { .attr_set = set };

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr,
			    sizeof(attr));
}

/* 'root' + 'path' ("" for "/"). */
static const char *at(struct sb_arena *a, const char *root, const char *path)
{
	return sb_arena_printf(a, "%s%s", root, strcmp(path, "/") ? path : "");
}

static void mkdirs(struct sb_arena *a, const char *root, const char *path)
{
	char *t = sb_arena_strdup(a, at(a, root, path));
	char *s = t + strlen(root);
	struct stat st;

	for (;;) {
		s = strchr(s + 1, '/');
		if (s)
			*s = '\0';
		if (mkdir(t, 0755) < 0 && errno != EEXIST &&
		    !(stat(t, &st) == 0 && S_ISDIR(st.st_mode)))
			die("mkdir", t + strlen(root));
		if (!s)
			break;
		*s = '/';
	}
}

static void make_mountpoint(struct sb_arena *a, const char *root,
			    const char *path, bool is_dir)
{
	const char *t = at(a, root, path);
	char *parent;
	struct stat st;
	int fd;

	if (is_dir) {
		mkdirs(a, root, path);
		return;
	}
	if (stat(t, &st) == 0)
		return;
	parent = sb_arena_strdup(a, path);
	*strrchr(parent, '/') = '\0';
	if (*parent)
		mkdirs(a, root, parent);
	fd = open(t, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		die("create the mount point", path);
	close(fd);
}

static void bind_at(struct sb_arena *a, const char *src, const char *root,
		    const char *path, bool is_dir, uint64_t attrs)
{
	const char *t = at(a, root, path);

	make_mountpoint(a, root, path, is_dir);
	if (mount(src, t, NULL, MS_BIND | MS_REC, NULL) < 0)
		die("bind mount of", path);
	if (sys_mount_setattr(t, AT_RECURSIVE, attrs) < 0)
		die("mount_setattr of", path);
}


static void build_dev(struct sb_arena *a, const char *root)
{
	static const char *const nodes[] = { "null", "zero", "full",
					     "random", "urandom", "tty" };
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" },   { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
	};
	size_t i;

	mkdirs(a, root, "/dev");
	for (i = 0; i < SB_ARRAY_LEN(nodes); i++) {
		const char *host = sb_arena_printf(a, "/dev/%s", nodes[i]);

		if (access(host, F_OK) != 0)
			continue;
		bind_at(a, host, root, host, false,
			MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	}
	for (i = 0; i < SB_ARRAY_LEN(links); i++)
		if (symlink(links[i][1],
			    at(a, root, sb_arena_printf(a, "/dev/%s",
							links[i][0]))) < 0 &&
		    errno != EEXIST)
			die("symlink in", "/dev");
	mkdirs(a, root, "/dev/shm");
	if (mount("tmpfs", at(a, root, "/dev/shm"), "tmpfs",
		  MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		die("mount tmpfs on", "/dev/shm");
}

/* /etc/hosts, over whatever /etc the policy exposed. */
static void build_hosts(struct sb_arena *a, const char *root,
			const char *hosts)
{
	const char *tmp = at(a, root, "/.pysb-hosts");
	size_t len = strlen(hosts);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, hosts, len) != (ssize_t)len)
		die("write", "/etc/hosts");
	close(fd);
	bind_at(a, tmp, root, "/etc/hosts", false,
		MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			MOUNT_ATTR_NOEXEC);
	if (unlink(tmp) < 0)
		die("unlink", "/.pysb-hosts");
}

static void loopback_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		die("socket for", "lo");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("SIOCGIFFLAGS", "lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("SIOCSIFFLAGS", "lo");
	close(s);
}

struct ns_run {
	const struct sb_policy *p;
	const struct sb_kernel_ctx *ctx;
	struct sb_ns_op *ops;
	size_t n_ops;
	const char *hostname, *hosts, *base;
	bool new_net;
};

static void build_root(struct sb_arena *a, const struct ns_run *r)
{
	const char *root = r->base;
	size_t i;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("make the mounts private:", "/");
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") <
	    0)
		die("mount tmpfs on", root);
	for (i = 0; i < r->n_ops; i++) {
		const struct sb_ns_op *o = &r->ops[i];

		if (o->kind == SB_NS_DIR)
			mkdirs(a, root, o->path);
	}
	for (i = 0; i < r->n_ops; i++) {
		const struct sb_ns_op *o = &r->ops[i];
		char *parent;

		if (o->kind != SB_NS_LINK)
			continue;
		parent = sb_arena_strdup(a, o->path);
		*strrchr(parent, '/') = '\0';
		if (*parent)
			mkdirs(a, root, parent);
		if (symlink(o->link, at(a, root, o->path)) < 0 &&
		    errno != EEXIST)
			die("symlink", o->path);
	}
	for (i = 0; i < r->n_ops; i++) {
		const struct sb_ns_op *o = &r->ops[i];
		uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

		if (o->kind != SB_NS_BIND)
			continue;
		if (!o->writable)
			attrs |= MOUNT_ATTR_RDONLY;
		bind_at(a, sb_arena_printf(a, "/proc/self/fd/%d", o->fd),
			root, o->path, o->is_dir, attrs);
	}
	/* the masks: an empty read-only tree over each ignored path */
	for (i = 0; i < r->n_ops; i++) {
		const struct sb_ns_op *o = &r->ops[i];
		const char *src = at(a, root, o->is_dir ? "/.pysb-empty-dir"
							: "/.pysb-empty");
		int fd;

		if (o->kind != SB_NS_MASK)
			continue;
		if (o->is_dir)
			mkdirs(a, root, "/.pysb-empty-dir");
		else if ((fd = open(src, O_WRONLY | O_CREAT | O_CLOEXEC,
				    0)) >= 0)
			close(fd);
		if (chmod(src, 0) < 0)
			die("chmod", src + strlen(root));
		if (mount(src, at(a, root, o->path), NULL, MS_BIND, NULL) < 0)
			die("mask (ignore=)", o->path);
		if (sys_mount_setattr(at(a, root, o->path), 0,
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					      MOUNT_ATTR_NODEV |
					      MOUNT_ATTR_NOEXEC) < 0)
			die("mount_setattr of", o->path);
	}
	build_dev(a, root);
	mkdirs(a, root, "/proc");
	if (mount("proc", at(a, root, "/proc"), "proc",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die("mount proc on", "/proc");
	build_hosts(a, root, r->hosts);
	/* the mask sources stay, unreachable under mode 0 and Landlock */
	if (chdir(root) < 0)
		die("chdir", root);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		die("pivot_root", root);
	if (umount2(".", MNT_DETACH) < 0)
		die("detach the old root", NULL);
	if (chdir("/") < 0)
		die("chdir", "/");
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY |
			  MS_NOSUID | MS_NODEV, NULL) < 0)
		die("remount read-only", "/");
	for (i = 0; i < r->n_ops; i++)
		if (r->ops[i].fd >= 0)
			close(r->ops[i].fd);
	if (sethostname(r->hostname, strlen(r->hostname)) < 0)
		die("sethostname", r->hostname);
	if (r->new_net)
		loopback_up();
	if (r->ctx->cwd && chdir(r->ctx->cwd) < 0)
		die("chdir", r->ctx->cwd);
}

/* ---- the signals and the init ---- */

/* Wait for the child, reaping every other process that ends meanwhile
 * (the init inherits orphans) and passing on the signals a process sent
 * (SB_SUP_SAME_GROUP: a terminal's Ctrl-C reaches the whole process group
 * by itself). Returns the child's status as an exit code. */
static int wait_forwarding(struct sb_sup *s)
{
	s->reap_all = true;
	return sb_sup_loop(s, NULL, NULL) < 0
		       ? SB_EXIT_SETUP
		       : sb_sup_exit_status(s->wstatus);
}

static void run_init(struct sb_arena *a, const struct ns_run *r,
		     const char *path, char *const argv[],
		     char *const envp[], struct sb_sup *s, int alive)
{
	struct sb_policy q = *r->p;
	struct pollfd pfd = { alive, POLLIN, 0 };
	pid_t child;

	/* python-sb outside is this init's parent: without it, the whole
	 * sandbox goes (pid 1 takes its siblings with it) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
	    poll(&pfd, 1, 0) != 0)
		_exit(SB_EXIT_SETUP);
	close(alive);
	build_root(a, r);
	/* the kernel layer as os-sandbox=landlock builds it, inside, with
	 * the hosts file readable by native resolvers */
	q.provider = SB_PROVIDER_LANDLOCK;
	q.exposes.v = sb_arena_alloc(a, (q.exposes.n + 1) *
					       sizeof(*q.exposes.v));
	q.exposes.cap = q.exposes.n + 1;
	if (q.exposes.n) /* a policy may expose nothing: v is NULL then */
		memcpy(q.exposes.v, r->p->exposes.v,
		       q.exposes.n * sizeof(*q.exposes.v));
	sb_fs_add_implicit(&q, "/etc/hosts", false, "<unshare>");
	child = sb_sup_fork(s);
	if (child < 0)
		die("fork", NULL);
	if (child == 0) {
		struct sb_kernel_ctx ctx = *r->ctx;

		sb_sup_child(s);
		/* root's (no user namespace as root), or the new user
		 * namespace's: the program gets none (weaknesses.md 34) */
		ctx.own_files_kept = true; /* masked by build_root */
		_exit(sb_netsup_run(a, &q, &ctx, path, argv, envp));
	}
	_exit(wait_forwarding(s));
}

/* Where the new root is built: a directory that every system has. Its
 * host content is hidden by the tmpfs, and the bind sources under it are
 * open already. */
static const char *pick_base(void)
{
	static const char *const cands[] = { "/tmp", "/mnt", "/run", "/var" };
	struct stat st;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cands); i++)
		if (lstat(cands[i], &st) == 0 && S_ISDIR(st.st_mode))
			return cands[i];
	return NULL;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n, len = (ssize_t)strlen(text);

	if (fd < 0)
		return -1;
	n = write(fd, text, (size_t)len);
	close(fd);
	return n == len ? 0 : -1;
}

static int enter_namespaces(bool new_net)
{
	int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
		    CLONE_NEWCGROUP;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];

	if (new_net)
		flags |= CLONE_NEWNET;
	if (uid != 0) {
		/* the program keeps its own ids inside; the capabilities of
		 * the new user namespace are gone at its execve */
		if (unshare(flags | CLONE_NEWUSER) < 0) {
			int e = errno;

			fprintf(stderr,
				"python-sb: os-sandbox=unshare: cannot create "
				"a user namespace: %s; nothing was run.\n"
				"Hint: %s\n",
				strerror(e), HINT_USERNS);
			return -1;
		}
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid,
			 (unsigned)uid);
		if (write_file("/proc/self/setgroups", "deny") < 0 ||
		    write_file("/proc/self/uid_map", map) < 0)
			goto map_failed;
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid,
			 (unsigned)gid);
		if (write_file("/proc/self/gid_map", map) < 0)
			goto map_failed;
		return 0;
	}
	if (unshare(flags) < 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=unshare: unshare: %s; nothing "
			"was run.\nHint: %s\n",
			strerror(errno),
			errno == EPERM ? "a container needs --privileged (or "
					 "CAP_SYS_ADMIN); or use "
					 "os-sandbox=landlock"
				       : HINT_USERNS);
		return -1;
	}
	return 0;
map_failed:
	fprintf(stderr,
		"python-sb: os-sandbox=unshare: the id maps of the user "
		"namespace: %s; nothing was run.\n",
		strerror(errno));
	return -1;
}

/* A path of the plan that cannot be exposed, when it is planned or opened:
 * the run stops before anything starts. */
static int cannot_expose(const char *what)
{
	fprintf(stderr,
		"python-sb: os-sandbox=unshare: cannot expose %s; nothing was "
		"run.\n",
		what);
	return SB_EXIT_SETUP;
}

int sb_ns_run(struct sb_arena *a, const struct sb_policy *p,
	      const struct sb_kernel_ctx *ctx, const char *path,
	      char *const argv[], char *const envp[])
{
	struct ns_run r = { .p = p, .ctx = ctx };
	struct sb_netns net = { .go = -1, .pidfd = -1, .dirfd = -1 };
	const char *err;
	struct sb_sup sup;
	int alive[2], status;
	pid_t init;
	size_t i;

	if (sb_ns_options(a, p, &r.hostname, &err) < 0) {
		fprintf(stderr, "python-sb: %s; nothing was run.\n", err);
		return SB_EXIT_SETUP;
	}
	r.hosts = sb_ns_hosts(a, p);
	/* always a network namespace: empty without net= rules, pasta's
	 * way out with them (netns.h) */
	r.new_net = true;
	r.base = pick_base();
	if (!r.base) {
		fprintf(stderr, "python-sb: os-sandbox=unshare: no /tmp, /mnt, "
				"/run or /var to build the new root on; nothing "
				"was run.\n");
		return SB_EXIT_SETUP;
	}
	if (sb_ns_plan(a, p, ctx, &r.ops, &r.n_ops, &err) < 0) {
		status = cannot_expose(err);
		goto out;
	}
	if (p->any_net_rule &&
	    (status = sb_netns_prepare(a, p, "unshare", &net)) != 0)
		goto out;
	if (enter_namespaces(r.new_net) < 0) {
		status = SB_EXIT_SETUP;
		goto out;
	}
	if (p->any_net_rule &&
	    (status = sb_netns_attach(&net, getpid(), "unshare")) != 0)
		goto out;
	if (sb_ns_plan_open(a, r.ops, r.n_ops, &err) < 0) {
		status = cannot_expose(err);
		goto out;
	}
	/* the init shares our process group, the program the init's; the
	 * init keeps the mask and the signalfd to pass them on in turn */
	if (sb_sup_init(&sup, SB_SUP_SAME_GROUP) < 0 ||
	    pipe2(alive, O_CLOEXEC) < 0) {
		fprintf(stderr, "python-sb: os-sandbox=unshare: signals: %s\n",
			strerror(errno));
		status = SB_EXIT_SETUP;
		goto out;
	}
	init = sb_sup_fork(&sup);
	if (init < 0) {
		fprintf(stderr, "python-sb: os-sandbox=unshare: fork: %s\n",
			strerror(errno));
		status = SB_EXIT_SETUP;
		goto out;
	}
	if (init == 0) {
		close(alive[1]);
		run_init(a, &r, path, argv, envp, &sup, alive[0]);
	}
	close(alive[0]);
	/* the init is the pid namespace: killed, it takes every process of
	 * the run with it */
	if (ctx->channel_fd > 0)
		sb_sup_channel(&sup, ctx->channel_fd, SB_SUP_CHANNEL_GRACE_MS);
	status = wait_forwarding(&sup);
	close(alive[1]);
	sb_sup_end(&sup);
out:
	sb_netns_stop(&net);
	for (i = 0; i < r.n_ops; i++)
		if (r.ops[i].fd >= 0)
			close(r.ops[i].fd);
	return status;
}
