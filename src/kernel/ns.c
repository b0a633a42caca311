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

#define DEFAULT_HOSTNAME "sandbox"

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

/* ---- the options and the hosts file (pure) ---- */

int sb_ns_options(struct sb_arena *a, const struct sb_policy *p,
		  const char **hostname, const char **err)
{
	size_t i;

	*hostname = DEFAULT_HOSTNAME;
	*err = NULL;
	for (i = 0; i < p->provider_opts.n; i++) {
		const struct sb_provider_opt *o = &p->provider_opts.v[i];

		if (o->provider != SB_PROVIDER_UNSHARE)
			continue;
		if (strcmp(o->key, "hostname") == 0 && *o->value &&
		    strlen(o->value) <= 64 && !strpbrk(o->value, " /\t")) {
			*hostname = o->value;
			continue;
		}
		*err = sb_arena_printf(
			a,
			strcmp(o->key, "hostname") == 0
				? "%s: Invalid value '%s' for 'unshare.%s': a "
				  "host name of 1 to 64 characters"
				: "%s: Unknown key 'unshare.%s%.0s': "
				  "os-sandbox=unshare knows unshare.hostname "
				  "only",
			sb_ref_format(a, o->ref),
			sb_sanitize(a, strcmp(o->key, "hostname") == 0
					       ? o->value
					       : o->key),
			sb_sanitize(a, strcmp(o->key, "hostname") == 0
					       ? o->key
					       : o->value));
		return -1;
	}
	return 0;
}

const char *sb_ns_hosts(struct sb_arena *a, const struct sb_policy *p)
{
	struct sb_buf b = { 0 };
	const char *s;
	size_t i, k;

	sb_buf_puts(&b, "127.0.0.1\tlocalhost\n"
			"::1\tlocalhost ip6-localhost ip6-loopback\n");
	for (i = 0; i < p->pins.n; i++) {
		const struct sb_pin *pin = &p->pins.v[i];

		for (k = 0; k < pin->n_addrs; k++) {
			char text[INET6_ADDRSTRLEN];

			if (!inet_ntop(pin->addrs[k].family,
				       pin->addrs[k].bytes, text,
				       sizeof(text)))
				continue;
			sb_buf_printf(&b, "%s\t%s\n", text, pin->host);
		}
	}
	s = sb_arena_strdup(a, b.s);
	sb_buf_free(&b);
	return s;
}

/* ---- the mount plan (made before the first fork) ---- */

struct plan {
	struct sb_arena *a;
	SB_VEC(struct sb_ns_op) ops;
	const char *err;
};

static struct sb_ns_op *find_op(struct plan *pl, enum sb_ns_op_kind kind,
			  const char *path)
{
	size_t i;

	for (i = 0; i < pl->ops.n; i++)
		if (pl->ops.v[i].kind == kind &&
		    strcmp(pl->ops.v[i].path, path) == 0)
			return &pl->ops.v[i];
	return NULL;
}

static void add_op(struct plan *pl, enum sb_ns_op_kind kind, const char *path,
		   const char *link)
{
	struct sb_ns_op *o;

	if (find_op(pl, kind, path))
		return;
	o = SB_VEC_PUSH(pl->a, pl->ops);
	o->kind = kind;
	o->path = sb_arena_strdup(pl->a, path);
	o->link = link ? sb_arena_strdup(pl->a, link) : NULL;
	o->fd = -1;
	o->is_dir = kind == SB_NS_DIR;
}

/* Make every component of 'path' exist in the plan as it does on the host:
 * directories as directories, symbolic links as the same links (then
 * followed). Returns the path with every link resolved, or NULL when the
 * host has no such path (errno set). */
static const char *walk(struct plan *pl, const char *path)
{
	char *cur = sb_path_normalize(pl->a, path);
	int hops = 0;
	size_t i = 1;

	while (cur[i - 1] && cur[i]) {
		char link[PATH_MAX];
		size_t end = i + strcspn(cur + i, "/");
		char *prefix = sb_arena_strndup(pl->a, cur, end);
		struct stat st;
		ssize_t n;

		if (lstat(prefix, &st) < 0)
			return NULL;
		if (!S_ISLNK(st.st_mode)) {
			if (S_ISDIR(st.st_mode) && cur[end])
				add_op(pl, SB_NS_DIR, prefix, NULL);
			if (!cur[end])
				break;
			i = end + 1;
			continue;
		}
		if (++hops > 40) {
			errno = ELOOP;
			return NULL;
		}
		n = readlink(prefix, link, sizeof(link) - 1);
		if (n < 0)
			return NULL;
		link[n] = '\0';
		add_op(pl, SB_NS_LINK, prefix, link);
		/* go on from the link's target, then the rest */
		*strrchr(prefix, '/') = '\0';
		cur = sb_path_normalize(
			pl->a,
			sb_arena_printf(pl->a, "%s/%s%s",
					link[0] == '/' ? "" : prefix, link,
					cur + end));
		i = 1;
	}
	return cur;
}

static int add_bind(struct plan *pl, const char *path, bool writable,
		    const char *what, bool must_exist)
{
	const char *real = walk(pl, path);
	struct stat st;
	struct sb_ns_op *o;

	if (!real || stat(real, &st) < 0) {
		if (!must_exist)
			return 0;
		pl->err = sb_arena_printf(pl->a, "%s: %s: %s", what, path,
					  strerror(errno));
		return -1;
	}
	o = find_op(pl, SB_NS_BIND, real);
	if (o) {
		/* the same tree twice: the writable rule wins, as a Landlock
		 * union of rights would */
		o->writable = o->writable || writable;
		return 0;
	}
	add_op(pl, SB_NS_BIND, real, NULL);
	o = &pl->ops.v[pl->ops.n - 1];
	o->is_dir = S_ISDIR(st.st_mode);
	o->writable = writable;
	o->what = what;
	return 0;
}

/* The bind of a rule the user wrote: its tree is searched for ignore=. */
static void mark_user(struct plan *pl, const char *path)
{
	const char *real = walk(pl, path);
	struct sb_ns_op *o = real ? find_op(pl, SB_NS_BIND, real) : NULL;

	if (o)
		o->user = true;
}

static bool is_plain_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Open every bind source, in the new mount namespace (a mount of another
 * namespace cannot be bound): from here on a source cannot be swapped, and
 * one that has vanished since the plan stops the run. */
static int open_sources(struct plan *pl)
{
	size_t i;

	for (i = 0; i < pl->ops.n; i++) {
		struct sb_ns_op *o = &pl->ops.v[i];
		struct stat st;

		if (o->kind != SB_NS_BIND)
			continue;
		o->fd = open(o->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (o->fd < 0 || fstat(o->fd, &st) < 0 ||
		    S_ISDIR(st.st_mode) != o->is_dir) {
			pl->err = sb_arena_printf(
				pl->a, "%s: %s: %s", o->what, o->path,
				o->fd < 0 ? strerror(errno)
					  : "changed since the policy was read");
			return -1;
		}
	}
	return 0;
}

/* ignore= with an absolute pattern names paths; a pattern of one name
 * hides that name below every exposed directory. Both are expanded on the
 * host now: a file made later under an exposed directory is not masked by
 * the kernel (the Python layer still hides it). */
/* Bounds of the search for ignored names in the exposed trees: past them
 * the run stops (exit 255) rather than start with a secret unmasked. */
#define MASK_SEARCH_ENTRIES 200000
#define MASK_SEARCH_DEPTH 64
#define MASK_MAX 4096

struct mask_search {
	struct plan *pl;
	const struct sb_policy *p;
	const char *rule; /* the exposure searched, for the message */
	size_t entries, masks;
};

/* Walk 'dir' (a real path inside an exposed tree) without following links
 * and mask what the file rules hide (sb_fs_decide, the same decision the
 * Python layer makes); a hidden directory is masked whole. */
static int search_masks(struct mask_search *ms, const char *dir, int depth)
{
	struct sb_fs_decision d;
	struct dirent *de;
	DIR *dp;
	int rc = 0;

	if (depth > MASK_SEARCH_DEPTH) {
		/* a name below could match: never start with it unmasked */
		ms->pl->err = sb_arena_printf(
			ms->pl->a,
			"%s: %s is more than %d levels deep to search for the "
			"names ignore= hides; expose a shallower tree",
			ms->rule, dir, MASK_SEARCH_DEPTH);
		return -1;
	}
	dp = opendir(dir);
	if (!dp)
		return 0; /* unreadable here: unreadable inside too */
	while (rc == 0 && (de = readdir(dp))) {
		const char *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++ms->entries > MASK_SEARCH_ENTRIES) {
			ms->pl->err = sb_arena_printf(
				ms->pl->a,
				"%s: more than %d entries to search for the "
				"names ignore= hides; expose smaller trees, or "
				"name the ignored paths absolutely",
				ms->rule, MASK_SEARCH_ENTRIES);
			rc = -1;
			break;
		}
		path = sb_arena_printf(ms->pl->a, "%s/%s",
				       strcmp(dir, "/") ? dir : "",
				       de->d_name);
		sb_fs_decide(ms->p, path, path, path, false, &d);
		if (d.verdict == SB_FS_IGNORED) {
			if (++ms->masks > MASK_MAX) {
				ms->pl->err = sb_arena_printf(
					ms->pl->a,
					"%s: more than %d paths to hide for "
					"ignore=; name fewer",
					ms->rule, MASK_MAX);
				rc = -1;
				break;
			}
			add_op(ms->pl, SB_NS_MASK, path, NULL);
			continue;
		}
		if (de->d_type == DT_DIR ||
		    (de->d_type == DT_UNKNOWN && is_plain_dir(path)))
			rc = search_masks(ms, path, depth + 1);
	}
	closedir(dp);
	return rc;
}

static bool needs_search(const struct sb_policy *p)
{
	size_t i;

	for (i = 0; i < p->ignores.n; i++) {
		const char *pat = p->ignores.v[i].pattern;

		if (pat[0] != '/' || strpbrk(pat, "*?["))
			return true;
	}
	return false;
}

static int add_masks(struct plan *pl, const struct sb_policy *p)
{
	size_t i, k, n = pl->ops.n;

	for (i = 0; i < p->ignores.n; i++) {
		const char *pat = p->ignores.v[i].pattern;

		for (k = 0; k < pl->ops.n; k++) {
			const struct sb_ns_op *b = &pl->ops.v[k];
			char *cand;

			if (b->kind != SB_NS_BIND || !b->is_dir)
				continue;
			if (pat[0] == '/') {
				if (!strpbrk(pat, "*?[") &&
				    sb_path_under(pat, b->path) &&
				    strcmp(pat, b->path) != 0 &&
				    access(pat, F_OK) == 0)
					add_op(pl, SB_NS_MASK, pat, NULL);
				continue;
			}
			if (strpbrk(pat, "*?[/"))
				continue;
			cand = sb_arena_printf(pl->a, "%s/%s",
					       strcmp(b->path, "/") ? b->path
								    : "",
					       pat);
			if (access(cand, F_OK) == 0)
				add_op(pl, SB_NS_MASK, cand, NULL);
		}
	}
	/* names at any depth and globs: search the trees the rules expose
	 * (not the interpreter's, which hold no secret of the program) */
	for (k = 0; k < n && needs_search(p); k++) {
		const struct sb_ns_op *b = &pl->ops.v[k];
		struct mask_search ms = { pl, p, b->what, 0, 0 };

		if (b->kind != SB_NS_BIND || !b->is_dir || !b->user)
			continue;
		if (search_masks(&ms, b->path, 0) < 0)
			return -1;
	}
	for (i = 0; i < pl->ops.n; i++) {
		struct sb_ns_op *o = &pl->ops.v[i];
		struct stat st;

		if (o->kind == SB_NS_MASK && lstat(o->path, &st) == 0)
			o->is_dir = S_ISDIR(st.st_mode);
	}
	return 0;
}

/* python-sb's own files are masked (ignore=, policy_own.c); the
 * directories between one and the writable tree that holds it are bound
 * onto themselves, so that the program cannot rename them away and put
 * another rule file in their place (a mount point is EBUSY). */
static int pin_own_dirs(struct plan *pl, const struct sb_policy *p)
{
	size_t i, k, n = pl->ops.n;

	for (i = 0; i < p->ignores.n; i++) {
		const char *own = sb_own_file(pl->a, &p->ignores.v[i]);
		const struct sb_ns_op *root = NULL;
		char *dir, *slash;

		for (k = 0; own && k < n; k++) {
			const struct sb_ns_op *b = &pl->ops.v[k];

			if (b->kind == SB_NS_BIND && b->is_dir && b->writable &&
			    sb_path_under(own, b->path) &&
			    (!root || strlen(b->path) > strlen(root->path)))
				root = b;
		}
		if (!root)
			continue;
		dir = sb_arena_strdup(pl->a, own);
		while ((slash = strrchr(dir, '/')) && slash != dir) {
			*slash = '\0';
			if (!sb_path_under(dir, root->path) ||
			    strcmp(dir, root->path) == 0)
				break;
			if (add_bind(pl, dir, true, root->what, false) < 0)
				return -1;
		}
	}
	return 0;
}

static int by_length(const void *x, const void *y)
{
	const struct sb_ns_op *a = x, *b = y;
	size_t la = strlen(a->path), lb = strlen(b->path);

	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	return la < lb ? -1 : la > lb;
}

static int make_plan(struct plan *pl, const struct sb_policy *p,
		     const struct sb_kernel_ctx *ctx)
{
	struct sb_landlock_path *imp;
	size_t i, n;

	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];
		bool implicit = !e->ref.file ||
				(e->ref.file[0] == '<' &&
				 strcmp(e->ref.file, SB_REF_ARG) != 0);

		if (e->mode == SB_EXPOSE_LIST) {
			/* the directory is there, empty: a bind would show
			 * its files (weaknesses.md 60) */
			if (walk(pl, e->path))
				add_op(pl, SB_NS_DIR, walk(pl, e->path), NULL);
			continue;
		}
		/* an exposure the user wrote must be there; an implicit one
		 * (the interpreter's trees) may be absent on this host */
		if (add_bind(pl, e->path, e->mode == SB_EXPOSE_RW, e->rule,
			     !implicit) < 0)
			return -1;
		if (!implicit)
			mark_user(pl, e->path);
	}
	sb_landlock_implicit(pl->a, ctx, &imp, &n);
	for (i = 0; i < n; i++) {
		if (imp[i].use == SB_LL_LIST) {
			/* the directory is there, none of its other files */
			if (walk(pl, imp[i].path))
				add_op(pl, SB_NS_DIR, walk(pl, imp[i].path),
				       NULL);
			continue;
		}
		if (add_bind(pl, imp[i].path,
			     imp[i].use == SB_LL_READWRITE, "implicit path",
			     false) < 0)
			return -1;
	}
	/* the interpreter as exec'd: its chain of links */
	if (ctx->interp)
		walk(pl, ctx->interp->path);
	if (ctx->cwd && walk(pl, ctx->cwd))
		add_op(pl, SB_NS_DIR, walk(pl, ctx->cwd), NULL);
	if (add_masks(pl, p) < 0 || pin_own_dirs(pl, p) < 0)
		return -1;
	/* in mount order: a parent before what is mounted below it */
	qsort(pl->ops.v, pl->ops.n, sizeof(*pl->ops.v), by_length);
	return 0;
}

int sb_ns_plan(struct sb_arena *a, const struct sb_policy *p,
	       const struct sb_kernel_ctx *ctx, struct sb_ns_op **ops,
	       size_t *n, const char **err)
{
	struct plan pl = { .a = a };
	int rc = make_plan(&pl, p, ctx);

	*ops = pl.ops.v;
	*n = pl.ops.n;
	*err = pl.err;
	return rc;
}

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
	struct plan *pl;
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
	for (i = 0; i < r->pl->ops.n; i++) {
		const struct sb_ns_op *o = &r->pl->ops.v[i];

		if (o->kind == SB_NS_DIR)
			mkdirs(a, root, o->path);
	}
	for (i = 0; i < r->pl->ops.n; i++) {
		const struct sb_ns_op *o = &r->pl->ops.v[i];
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
	for (i = 0; i < r->pl->ops.n; i++) {
		const struct sb_ns_op *o = &r->pl->ops.v[i];
		uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

		if (o->kind != SB_NS_BIND)
			continue;
		if (!o->writable)
			attrs |= MOUNT_ATTR_RDONLY;
		bind_at(a, sb_arena_printf(a, "/proc/self/fd/%d", o->fd),
			root, o->path, o->is_dir, attrs);
	}
	/* the masks: an empty read-only tree over each ignored path */
	for (i = 0; i < r->pl->ops.n; i++) {
		const struct sb_ns_op *o = &r->pl->ops.v[i];
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
	for (i = 0; i < r->pl->ops.n; i++)
		if (r->pl->ops.v[i].fd >= 0)
			close(r->pl->ops.v[i].fd);
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

int sb_ns_run(struct sb_arena *a, const struct sb_policy *p,
	      const struct sb_kernel_ctx *ctx, const char *path,
	      char *const argv[], char *const envp[])
{
	struct plan pl = { .a = a };
	struct ns_run r = { .p = p, .ctx = ctx, .pl = &pl };
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
	if (make_plan(&pl, p, ctx) < 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=unshare: cannot expose %s; "
			"nothing was run.\n",
			pl.err);
		status = SB_EXIT_SETUP;
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
	if (open_sources(&pl) < 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=unshare: cannot expose %s; "
			"nothing was run.\n",
			pl.err);
		status = SB_EXIT_SETUP;
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
	status = wait_forwarding(&sup);
	close(alive[1]);
	sb_sup_end(&sup);
out:
	sb_netns_stop(&net);
	for (i = 0; i < pl.ops.n; i++)
		if (pl.ops.v[i].fd >= 0)
			close(pl.ops.v[i].fd);
	return status;
}
