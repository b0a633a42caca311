/* mountplan.c - the plan of the new root of os-sandbox=unshare, bwrap and
 * qemu, made before the first fork (ns.c, extprov.c and qemu.c run it):
 * the unshare.* options, the text of the sandbox's /etc/hosts, and the
 * mount plan (directories and links as on the host, a bind of each exposed
 * path and of what the interpreter needs, opened O_PATH now so that a
 * source that is missing or vanishes stops the run before anything runs,
 * and the masks of ignore=). It reads the file system and mounts nothing;
 * tests/unit/test_mountplan.c runs it on a tree of its own.
 */
#include "mountplan.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsrules.h"
#include "landlock.h"

#define DEFAULT_HOSTNAME "sandbox"

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
int sb_ns_plan_open(struct sb_arena *a, struct sb_ns_op *ops, size_t n,
		    const char **err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct sb_ns_op *o = &ops[i];
		struct stat st;

		if (o->kind != SB_NS_BIND)
			continue;
		o->fd = open(o->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (o->fd < 0 || fstat(o->fd, &st) < 0 ||
		    S_ISDIR(st.st_mode) != o->is_dir) {
			*err = sb_arena_printf(
				a, "%s: %s: %s", o->what, o->path,
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

		/* a bind needs the entry there, and the directory that will
		 * hold it is not the program's: only the supervisor of
		 * os-sandbox=landlock makes it (entrysup.c) */
		if (e->entry) {
			pl->err = sb_arena_printf(
				pl->a,
				"'%s' (%s): an entry the program may make, "
				"which a namespace cannot bind; use "
				"os-sandbox=landlock or subprocess",
				e->rule, sb_ref_format(pl->a, e->ref));
			return -1;
		}
		/* the links of the path as written, as on the host: the
		 * guard reads the rule again inside, and a rule's path must
		 * exist (/usr/bin/sh -> dash) */
		if (e->spelled && !walk(pl, e->spelled) && !implicit) {
			pl->err = sb_arena_printf(pl->a, "%s: %s: %s", e->rule,
						  e->spelled, strerror(errno));
			return -1;
		}
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
