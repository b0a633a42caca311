/* landlock.c - the Landlock ruleset of os-sandbox=landlock. It owns the
 * mapping of expose-ro/expose-rw and net= onto Landlock rights per ABI, the
 * implicit paths an interpreter needs, and the irreversible restrict_self of
 * the calling process. It must not print, exit or fork: kernel.c decides
 * what a failure means. Landlock cannot hide a path inside an allowed tree
 * (no ignore=), filter UDP or addresses, or stop connect() on a named Unix
 * socket: the network supervisor (netsup.c) judges UDP, addresses and named
 * sockets; ignore= stays with the Python layer.
 *
 * The system headers may predate the ABI of the running kernel, so the
 * structures and rights are spelled here, from the kernel's UAPI.
 */
#include "landlock.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy_net.h"
#include "pubtree.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)     /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
/* ABI 1: EXECUTE .. MAKE_SYM, every bit up to 12 */
#define LL_FS_ABI1 ((LL_FS_MAKE_SYM << 1) - 1)
/* what a rule on a single file may hold; directory rights are EINVAL */
#define LL_FS_FILE                                                             \
	(LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE |                  \
	 LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_FS_READ (LL_FS_READ_FILE | LL_FS_READ_DIR)

#define LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */

#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

/* The ABI 6 layout; an older kernel accepts the larger size as long as the
 * fields it does not know are zero. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

static long sys_landlock_create_ruleset(const struct ll_ruleset_attr *attr,
					size_t size, uint32_t flags)
{
	return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static long sys_landlock_add_rule(int fd, int type, const void *attr)
{
	return syscall(__NR_landlock_add_rule, fd, type, attr, 0);
}

static long sys_landlock_restrict_self(int fd)
{
	return syscall(__NR_landlock_restrict_self, fd, 0);
}

int sb_landlock_abi(void)
{
	long v = sys_landlock_create_ruleset(NULL, 0,
					     LL_CREATE_RULESET_VERSION);
	/* an older kernel's Landlock, for the tests: never above the
	 * kernel's own */
	const char *cap = getenv("PYSB_LANDLOCK_ABI");

	if (cap && *cap >= '1' && *cap <= '9' && !cap[1] && v > *cap - '0')
		v = *cap - '0';
	return v < 0 ? 0 : (int)v;
}

static uint64_t fs_rights(int abi)
{
	uint64_t r = LL_FS_ABI1;

	if (abi >= 2)
		r |= LL_FS_REFER;
	if (abi >= 3)
		r |= LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= LL_FS_IOCTL_DEV;
	return r;
}

/* ---- net= as TCP ports ---- */

/* One bit per port: the union of the ALLOW rules, whatever their address
 * (Landlock only sees ports; DENY carve-outs stay with the Python layer). */
struct port_set {
	uint8_t bits[65536 / 8];
	size_t n;
};

static void port_set_add(struct port_set *s, unsigned lo, unsigned hi)
{
	unsigned port;

	for (port = lo; port <= hi; port++) {
		uint8_t bit = (uint8_t)(1u << (port & 7));

		if (!(s->bits[port >> 3] & bit)) {
			s->bits[port >> 3] |= bit;
			s->n++;
		}
	}
}

static bool port_set_has(const struct port_set *s, unsigned port)
{
	return s->bits[port >> 3] & (1u << (port & 7));
}

/* net= port 'self': Landlock knows no port before it is bound, so it
 * allows connecting to the ports a listener may get (the ephemeral range
 * and every port an IN rule lets it bind); the guard and the supervisor
 * judge the exact port (selfport.c). */
static void self_ports(const struct sb_policy *p, struct port_set *conn)
{
	unsigned lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	size_t i, k;

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2 || lo > hi ||
		    hi > 65535) {
			lo = 32768;
			hi = 60999;
		}
		fclose(f);
	}
	port_set_add(conn, lo, hi);
	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (r->allow && (r->kinds & SB_NET_TCP) && (r->dirs & SB_NET_IN))
			for (k = 0; k < r->n_ports; k++)
				port_set_add(conn, r->ports[k].lo,
					     r->ports[k].hi);
	}
}

static void collect_ports(const struct sb_policy *p, struct port_set *conn,
			  struct port_set *bind)
{
	size_t i, k;

	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (r->allow && r->self)
			self_ports(p, conn);
		if (!r->allow || !(r->kinds & SB_NET_TCP))
			continue;
		for (k = 0; k < r->n_ports; k++) {
			if (r->dirs & SB_NET_OUT)
				port_set_add(conn, r->ports[k].lo,
					     r->ports[k].hi);
			if (r->dirs & SB_NET_IN)
				port_set_add(bind, r->ports[k].lo,
					     r->ports[k].hi);
		}
	}
}

static void plan_from_sets(int abi, const struct port_set *conn,
			   const struct port_set *bind,
			   struct sb_landlock_net *out)
{
	memset(out, 0, sizeof(*out));
	out->n_connect = conn->n;
	out->n_bind = bind->n;
	if (abi < 4)
		return;
	out->connect_all = conn->n > SB_LANDLOCK_MAX_PORTS;
	out->bind_all = bind->n > SB_LANDLOCK_MAX_PORTS;
	out->connect_handled = !out->connect_all;
	out->bind_handled = !out->bind_all;
}

void sb_landlock_net_plan(const struct sb_policy *p, int abi,
			  struct sb_landlock_net *out)
{
	struct port_set *conn = calloc(2, sizeof(*conn));

	if (!conn)
		abort(); /* as sb_arena_alloc: nothing sane to do */
	collect_ports(p, conn, conn + 1);
	plan_from_sets(abi, conn, conn + 1, out);
	free(conn);
}

/* ---- implicit paths ---- */

struct path_list {
	struct sb_arena *a;
	SB_VEC(struct sb_landlock_path) v;
};

static void add_path(struct path_list *l, const char *path,
		     enum sb_landlock_use use)
{
	struct sb_landlock_path *e;
	size_t i;

	if (!path || access(path, F_OK) != 0)
		return;
	for (i = 0; i < l->v.n; i++)
		if (strcmp(l->v.v[i].path, path) == 0 && l->v.v[i].use == use)
			return;
	e = SB_VEC_PUSH(l->a, l->v);
	e->path = sb_arena_strdup(l->a, path);
	e->use = use;
}

static char *dir_of(struct sb_arena *a, const char *path)
{
	char *d = sb_arena_strdup(a, path);
	char *slash = strrchr(d, '/');

	if (!slash)
		return ".";
	if (slash == d)
		slash[1] = '\0';
	else
		*slash = '\0';
	return d;
}

/* The ELF interpreter (dynamic loader) of a binary: the kernel opens it for
 * execution when the interpreter is exec'd, so it needs EXECUTE itself. */
static const char *elf_interp(struct sb_arena *a, const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	char buf[PATH_MAX];
	const char *found = NULL;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	for (i = 0; i < eh.e_phnum; i++) {
		off_t off = (off_t)eh.e_phoff + (off_t)i * eh.e_phentsize;

		if (pread(fd, &ph, sizeof(ph), off) != sizeof(ph))
			break;
		if (ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz == 0 || ph.p_filesz >= sizeof(buf) ||
		    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) !=
			    (ssize_t)ph.p_filesz)
			break;
		buf[ph.p_filesz] = '\0';
		found = sb_arena_strdup(a, buf);
		break;
	}
out:
	close(fd);
	return found;
}

/* "3.11" from a binary named python3.11, else NULL. */
static const char *version_of(struct sb_arena *a, const char *real)
{
	const char *base = strrchr(real, '/');
	size_t n;

	base = base ? base + 1 : real;
	if (strncmp(base, "python", 6) != 0 || !strchr(base + 6, '.'))
		return NULL;
	base += 6;
	n = strspn(base, "0123456789.");
	return n ? sb_arena_strndup(a, base, n) : NULL;
}

/* A venv (bin/python -> /usr/bin/python3.11): Python reads pyvenv.cfg next
 * to the bin directory, and the venv's site-packages are below it. */
static void add_prefix(struct path_list *l, const char *prefix,
		       const char *ver)
{
	struct sb_arena *a = l->a;

	add_path(l, sb_arena_printf(a, "%s/pyvenv.cfg", prefix), SB_LL_READ);
	add_path(l, sb_arena_printf(a, "%s/lib", prefix), SB_LL_READ);
	add_path(l, sb_arena_printf(a, "%s/lib64", prefix), SB_LL_READ);
	if (!ver)
		return;
	add_path(l, sb_arena_printf(a, "%s/lib/python%s", prefix, ver),
		 SB_LL_READ);
	add_path(l, sb_arena_printf(a, "%s/lib/python3/dist-packages", prefix),
		 SB_LL_READ);
	add_path(l, sb_arena_printf(a, "%s/local/lib/python%s/dist-packages",
				    prefix, ver),
		 SB_LL_READ);
}

/* The interpreter as exec'd (path, kept as given) to the real binary, link
 * by link: every directory named on the way is listed and treated as a
 * possible prefix; only the real binary and the loader are executable. The
 * directories get no read or execute of their files: /usr/bin would
 * otherwise hand out /bin/sh and every other program there. */
static void add_interpreter(struct path_list *l, const char *path,
			    const char *real)
{
	struct sb_arena *a = l->a;
	const char *ver = version_of(a, real);
	char link[PATH_MAX];
	const char *cur = path, *loader;
	int hops;

	for (hops = 0; cur && hops < 40; hops++) {
		const char *dir = dir_of(a, cur);
		ssize_t n;

		add_path(l, dir, SB_LL_LIST);
		add_prefix(l, dir_of(a, dir), ver);
		n = readlink(cur, link, sizeof(link) - 1);
		if (n < 0)
			break;
		link[n] = '\0';
		cur = link[0] == '/' ? sb_arena_strdup(a, link)
				     : sb_arena_printf(a, "%s/%s", dir, link);
		if (!ver)
			ver = version_of(a, cur);
	}
	add_path(l, dir_of(a, real), SB_LL_LIST);
	add_prefix(l, dir_of(a, dir_of(a, real)), ver);
	add_path(l, real, SB_LL_EXEC);
	loader = elf_interp(a, real);
	if (loader) {
		char canon[PATH_MAX];

		add_path(l, realpath(loader, canon) ? canon : loader,
			 SB_LL_EXEC);
	}
}

/* The CA stores' public parts (pubtree.h), walked once per process:
 * the implicit list is asked for several times in a start. */
static struct {
	bool done;
	size_t n;
	char **v;
} ca_parts;

static void keep_part(void *ctx, const char *path, bool is_dir)
{
	char **v = realloc(ca_parts.v, (ca_parts.n + 1) * sizeof(*v));

	(void)ctx;
	(void)is_dir;
	if (!v)
		return; /* left out: not granted */
	ca_parts.v = v;
	if ((v[ca_parts.n] = strdup(path)))
		ca_parts.n++;
}

static void add_ca_stores(struct path_list *l)
{
	size_t i;

	if (!ca_parts.done) {
		for (i = 0; i < sb_n_ca_stores; i++)
			if (sb_ca_stores[i].walk)
				sb_public_parts(sb_ca_stores[i].path, keep_part,
						NULL);
			else
				keep_part(NULL, sb_ca_stores[i].path, true);
		ca_parts.done = true;
	}
	for (i = 0; i < ca_parts.n; i++)
		add_path(l, ca_parts.v[i], SB_LL_READ);
}

/* The implicit list, kept as short as a Python program needs (checked with
 * strace on python -c pass, -m json.tool, ssl.create_default_context() and
 * sqlite3 on an exposed file, pyenv and Debian interpreters):
 *   the interpreter chain (above), its prefix's lib, lib64 and stdlib,
 *   dist-packages and local dist-packages;
 *   /lib /lib64 /usr/lib /usr/lib64 /etc/ld.so.cache: shared libraries,
 *     gconv, /usr/lib/locale, /usr/lib/ssl (read, never execute);
 *   the guard library and the pysandboxes package, and a build
 *     directory's partial-mode transport beside the guard (a checkout
 *     builds it there, not into the package: SB_FRAME_FILE);
 *   the CA stores (pubtree.h): /etc/ssl /etc/pki /etc/ca-certificates
 *     by the parts every user may read (never /etc/ssl/private and its
 *     kind), /usr/share/ca-certificates /usr/share/pki whole;
 *   /etc/localtime /usr/share/zoneinfo /usr/share/locale/locale.alias
 *     (glibc reads it in setlocale);
 *   /etc/services /etc/protocols: getaddrinfo(host, "https") and
 *     getprotobyname() read them (public tables, no secret);
 *   /dev/null (read, write), /dev/urandom /dev/random /dev/zero (read);
 *   the script run (that file alone, read), as the guard exposes it.
 * Not /proc (other processes' environ and memory), not /etc, not HOME, not
 * /tmp, not the current directory: those take an expose-* rule. */
void sb_landlock_implicit(struct sb_arena *a, const struct sb_kernel_ctx *ctx,
			  struct sb_landlock_path **out, size_t *n)
{
	const char *script = ctx->script;
	static const char *const sys_read[] = {
		"/lib",
		"/lib64",
		"/usr/lib",
		"/usr/lib64",
		"/etc/ld.so.cache",
		"/etc/localtime",
		"/usr/share/zoneinfo",
		"/usr/share/locale/locale.alias",
		"/etc/services",
		"/etc/protocols",
		"/dev/urandom",
		"/dev/random",
		"/dev/zero",
	};
	struct path_list l = { .a = a };
	size_t i;

	if (ctx->interp)
		add_interpreter(&l, ctx->interp->path, ctx->interp->real);
	for (i = 0; i < SB_ARRAY_LEN(sys_read); i++)
		add_path(&l, sys_read[i], SB_LL_READ);
	add_ca_stores(&l);
	add_path(&l, "/dev/null", SB_LL_READWRITE);
	add_path(&l, ctx->guard, SB_LL_READ);
	if (ctx->guard)
		add_path(&l,
			 sb_path_join(a, dir_of(a, ctx->guard), SB_FRAME_FILE),
			 SB_LL_READ);
	add_path(&l, ctx->pkgdir, SB_LL_READ);
	if (script && ctx->cwd)
		add_path(&l, sb_path_join(a, ctx->cwd, script), SB_LL_SCRIPT);
	*out = l.v.v;
	*n = l.v.n;
}

/* ---- the ruleset ---- */

static uint64_t use_rights(enum sb_landlock_use use)
{
	switch (use) {
	case SB_LL_READ:
		return LL_FS_READ;
	case SB_LL_EXEC:
		return LL_FS_READ_FILE | LL_FS_EXECUTE;
	case SB_LL_SCRIPT:
		return LL_FS_READ_FILE;
	case SB_LL_LIST:
		return LL_FS_READ_DIR;
	case SB_LL_READWRITE:
		/* open(..., "w") truncates: TRUNCATE on ABI 3 */
		return LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE;
	}
	return 0;
}

/* 0, -ENOENT/-EACCES when the path cannot be opened (nothing granted), or
 * another -errno. The rule lands on what the path names after symlinks. */
static int allow_path(int ruleset, const char *path, uint64_t rights,
		      uint64_t handled, bool entry)
{
	struct ll_path_beneath_attr pb = { 0 };
	struct stat st;
	int fd, err = 0;

	/* expose-new= names the entry, never what a link there leads to */
	fd = open(path, O_PATH | O_CLOEXEC | (entry ? O_NOFOLLOW : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		err = -ENOENT;
		goto out;
	}
	pb.allowed_access = rights & handled;
	if (!S_ISDIR(st.st_mode))
		pb.allowed_access &= LL_FS_FILE;
	pb.parent_fd = fd;
	if (pb.allowed_access &&
	    sys_landlock_add_rule(ruleset, LL_RULE_PATH_BENEATH, &pb) < 0)
		err = -errno;
out:
	close(fd);
	return err;
}

static int allow_ports(int ruleset, const struct port_set *s, uint64_t right)
{
	struct ll_net_port_attr np = { .allowed_access = right };
	unsigned port;

	for (port = 0; port <= 65535; port++) {
		if (!port_set_has(s, port))
			continue;
		np.port = port;
		if (sys_landlock_add_rule(ruleset, LL_RULE_NET_PORT, &np) < 0)
			return -errno;
	}
	return 0;
}

/* The rights an exposure of the policy gets. */
static uint64_t expose_rights(const struct sb_expose *e, uint64_t handled)
{
	if (e->mode == SB_EXPOSE_LIST)
		return LL_FS_READ_DIR;
	return e->mode == SB_EXPOSE_RW ? handled : LL_FS_READ | LL_FS_EXECUTE;
}

static int add_rules(struct sb_arena *a, const struct sb_policy *p,
		     const struct sb_kernel_ctx *ctx, int ruleset,
		     const struct ll_ruleset_attr *attr,
		     const struct port_set *sets, const char **err)
{
	struct sb_landlock_path *imp;
	size_t i, n;
	int rc;

	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];

		/* expose-made=: nothing in its directory until the program
		 * makes it, and then only through the supervisor, which
		 * knows what it made (entrysup.c) */
		if (e->made)
			continue;
		rc = allow_path(ruleset, e->path,
				expose_rights(e, attr->handled_access_fs),
				attr->handled_access_fs, e->entry);
		if (rc == -ENOENT)
			continue; /* gone since the parse: nothing to allow */
		if (rc < 0) {
			*err = sb_arena_printf(a, "landlock_add_rule for %s: %s",
					       e->rule, strerror(-rc));
			return -1;
		}
	}
	sb_landlock_implicit(a, ctx, &imp, &n);
	for (i = 0; i < n; i++) {
		rc = allow_path(ruleset, imp[i].path, use_rights(imp[i].use),
				attr->handled_access_fs, false);
		/* an implicit path we cannot open is simply not granted */
		if (rc < 0 && rc != -ENOENT && rc != -EACCES) {
			*err = sb_arena_printf(a,
					       "landlock_add_rule for the "
					       "implicit path %s: %s",
					       imp[i].path, strerror(-rc));
			return -1;
		}
	}
	/* the program's own descriptor directory, to list (the guard allows
	 * it too): the rule lands on /proc/PID/fd of this process, which
	 * execs the program. Each entry is a magic link, which Landlock
	 * judges where it leads. A child has another PID: not granted. */
	rc = allow_path(ruleset, "/proc/self/fd", LL_FS_READ_DIR,
			attr->handled_access_fs, false);
	if (rc < 0 && rc != -ENOENT && rc != -EACCES) {
		*err = sb_arena_printf(a, "landlock_add_rule for /proc/self/fd: "
					  "%s",
				       strerror(-rc));
		return -1;
	}
	rc = 0;
	if (attr->handled_access_net & LL_NET_CONNECT_TCP)
		rc = allow_ports(ruleset, &sets[0], LL_NET_CONNECT_TCP);
	if (!rc && attr->handled_access_net & LL_NET_BIND_TCP)
		rc = allow_ports(ruleset, &sets[1], LL_NET_BIND_TCP);
	if (rc < 0) {
		*err = sb_arena_printf(a, "landlock_add_rule for a TCP port: %s",
				       strerror(-rc));
		return -1;
	}
	return 0;
}

/* The ruleset of the program (ctx) or, with ctx NULL, of passt, the
 * egress of os-sandbox=qemu: no file right handled, every TCP bind
 * refused, connect() to the rules' ports; then restrict the caller. */
static int restrict_self(struct sb_arena *a, const struct sb_policy *p,
			 const struct sb_kernel_ctx *ctx, int abi,
			 const char **err)
{
	struct ll_ruleset_attr attr = { 0 };
	struct sb_landlock_net plan;
	struct port_set *sets;
	int ruleset, rc = -1;

	sets = sb_arena_alloc(a, 2 * sizeof(*sets));
	collect_ports(p, &sets[0], &sets[1]);
	plan_from_sets(abi, &sets[0], &sets[1], &plan);
	if (ctx)
		attr.handled_access_fs = fs_rights(abi);
	if (plan.connect_handled)
		attr.handled_access_net |= LL_NET_CONNECT_TCP;
	if (plan.bind_handled || !ctx)
		attr.handled_access_net |= LL_NET_BIND_TCP;
	/* abstract Unix sockets outside the sandbox: only for a policy
	 * that allows the whole network (net=ALLOW|*|*|*|*) */
	if (abi >= 6)
		attr.scoped = LL_SCOPE_SIGNAL |
			      (sb_net_allows_abstract(p)
				       ? 0
				       : LL_SCOPE_ABSTRACT_UNIX_SOCKET);

	ruleset = (int)sys_landlock_create_ruleset(&attr, sizeof(attr), 0);
	if (ruleset < 0) {
		*err = sb_arena_printf(a, "landlock_create_ruleset: %s",
				       strerror(errno));
		return -1;
	}
	if (ctx) {
		if (add_rules(a, p, ctx, ruleset, &attr, sets, err) < 0)
			goto out;
	} else if (plan.connect_handled) {
		int r = allow_ports(ruleset, &sets[0], LL_NET_CONNECT_TCP);

		if (r < 0) {
			*err = sb_arena_printf(a, "landlock_add_rule: %s",
					       strerror(-r));
			goto out;
		}
	}
	/* restrict_self needs it without CAP_SYS_ADMIN; it also keeps a
	 * set-id program from running with the sandbox's view */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		*err = sb_arena_printf(a, "prctl(PR_SET_NO_NEW_PRIVS): %s",
				       strerror(errno));
		goto out;
	}
	if (sys_landlock_restrict_self(ruleset) < 0) {
		*err = sb_arena_printf(a, "landlock_restrict_self: %s",
				       strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(ruleset);
	return rc;
}

int sb_landlock_apply(struct sb_arena *a, const struct sb_policy *p,
		      const struct sb_kernel_ctx *ctx, int abi,
		      const char **err)
{
	return restrict_self(a, p, ctx, abi, err);
}

int sb_landlock_egress(struct sb_arena *a, const struct sb_policy *p,
		       int abi, const char **err)
{
	if (abi < SB_LANDLOCK_MIN_ABI) {
		*err = sb_arena_printf(a, "Landlock ABI %d, below the %d of "
					  "TCP port rules",
				       abi, SB_LANDLOCK_MIN_ABI);
		return -1;
	}
	return restrict_self(a, p, NULL, abi, err);
}

/* ---- the ruleset as data ---- */

/* One path rule as the kernel holds it: on what the path names after
 * symlinks, a file rule with file rights only. */
struct view_rule {
	const char *path; /* canonical */
	uint64_t rights;
	bool dir;
};

struct sb_landlock_view {
	uint64_t handled;
	SB_VEC(struct view_rule) v;
};

static void view_add(struct sb_arena *a, struct sb_landlock_view *v,
		     const char *path, uint64_t rights)
{
	char canon[PATH_MAX];
	struct view_rule *r;
	struct stat st;

	if (!realpath(path, canon) || stat(canon, &st) < 0)
		return; /* allow_path grants nothing there either */
	r = SB_VEC_PUSH(a, v->v);
	r->path = sb_arena_strdup(a, canon);
	r->dir = S_ISDIR(st.st_mode);
	r->rights = rights & v->handled & (r->dir ? ~0ULL : LL_FS_FILE);
}

struct sb_landlock_view *sb_landlock_view_new(struct sb_arena *a,
					      const struct sb_policy *p,
					      const struct sb_kernel_ctx *ctx,
					      int abi)
{
	struct sb_landlock_view *v = sb_arena_alloc(a, sizeof(*v));
	struct sb_landlock_path *imp;
	size_t i, n;

	memset(v, 0, sizeof(*v));
	v->handled = fs_rights(abi);
	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];
		struct stat st;

		/* as add_rules: an entry not there (or a link) has no rule,
		 * expose-made= none at all */
		if (e->made)
			continue;
		if (e->entry &&
		    (lstat(e->path, &st) < 0 || S_ISLNK(st.st_mode)))
			continue;
		view_add(a, v, e->path, expose_rights(e, v->handled));
	}
	sb_landlock_implicit(a, ctx, &imp, &n);
	for (i = 0; i < n; i++)
		view_add(a, v, imp[i].path, use_rights(imp[i].use));
	return v;
}

/* What the rules on 'canon' and the directories above it grant. */
static uint64_t granted(const struct sb_landlock_view *v, const char *canon)
{
	uint64_t r = 0;
	size_t i;

	for (i = 0; i < v->v.n; i++) {
		const struct view_rule *e = &v->v.v[i];

		if (e->dir ? sb_path_under(canon, e->path)
			   : strcmp(canon, e->path) == 0)
			r |= e->rights;
	}
	return r;
}

/* The right to make an entry of this type (S_IF*) in a directory. */
static uint64_t make_right(unsigned type)
{
	switch (type & S_IFMT) {
	case S_IFDIR:
		return LL_FS_MAKE_DIR;
	case S_IFCHR:
		return LL_FS_MAKE_CHAR;
	case S_IFSOCK:
		return LL_FS_MAKE_SOCK;
	case S_IFIFO:
		return LL_FS_MAKE_FIFO;
	case S_IFBLK:
		return LL_FS_MAKE_BLOCK;
	case S_IFLNK:
		return LL_FS_MAKE_SYM;
	default:
		return LL_FS_MAKE_REG;
	}
}

uint64_t sb_landlock_need(const struct sb_fc_access *x, bool exists,
			  unsigned type)
{
	uint64_t need = 0;

	switch (x->op) {
	case SB_FC_OPEN:
		if (x->flags & O_PATH)
			return 0;
		if (!exists)
			need |= make_right(S_IFREG);
		if (S_ISDIR(type) && exists)
			return need | LL_FS_READ_DIR;
		if ((x->flags & O_ACCMODE) != O_WRONLY)
			need |= LL_FS_READ_FILE;
		if ((x->flags & O_ACCMODE) != O_RDONLY)
			need |= LL_FS_WRITE_FILE;
		if ((x->flags & O_TRUNC) && exists)
			need |= LL_FS_TRUNCATE;
		return need;
	case SB_FC_EXEC:
		return LL_FS_EXECUTE;
	case SB_FC_MAKE:
		return make_right(x->type ? x->type : type);
	case SB_FC_REMOVE:
		return (x->flags & AT_REMOVEDIR) || S_ISDIR(type)
			       ? LL_FS_REMOVE_DIR
			       : LL_FS_REMOVE_FILE;
	case SB_FC_TRUNCATE:
		return LL_FS_TRUNCATE;
	}
	return 0;
}

bool sb_landlock_need_writes(uint64_t need)
{
	return (need & ~(LL_FS_READ | LL_FS_EXECUTE)) != 0;
}

uint64_t sb_landlock_view_missing(const struct sb_landlock_view *v,
				  const char *canon, uint64_t need)
{
	need &= v->handled;
	return need & ~granted(v, canon);
}

