/* extprov.c - os-sandbox=bwrap and os-sandbox=firejail: the same mount plan
 * as the native unshare provider (ns.c), written as the tools' options, and
 * the provider keys of seed-spec 2.6.14. It owns the translation and the
 * exec of the tool; it must not judge any access itself. Neither tool can
 * take python-sb's Landlock ruleset or seccomp notifications (the tool has
 * to mount after python-sb would have restricted itself), so under them
 * the kernel layer is the tool's: namespaces, and firejail's own seccomp
 * and capability drop. Under bwrap the Python layer still judges net= and
 * files; firejail cannot carry the guard, so run.c takes it only with
 * py-sandbox=false.
 */
#include "extprov.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns.h"

#define EXIT_SETUP 255

typedef SB_VEC(char *) argv_vec;

static void push(struct sb_arena *a, argv_vec *v, const char *s)
{
	*SB_VEC_PUSH(a, *v) = (char *)s;
}

static void push2(struct sb_arena *a, argv_vec *v, const char *s,
		  const char *t)
{
	push(a, v, s);
	push(a, v, t);
}

static bool truthy(const char *v)
{
	return sb_str_ieq(v, "yes") || sb_str_ieq(v, "true") ||
	       sb_str_ieq(v, "1") || sb_str_ieq(v, "on");
}

static bool falsy(const char *v)
{
	return sb_str_ieq(v, "no") || sb_str_ieq(v, "false") ||
	       sb_str_ieq(v, "0") || sb_str_ieq(v, "off");
}

static bool under_kernel_fs(const char *path)
{
	return sb_path_under(path, "/dev") || sb_path_under(path, "/proc");
}

static int by_length(const void *x, const void *y)
{
	const struct sb_ns_op *a = x, *b = y;
	size_t la = strlen(a->path), lb = strlen(b->path);

	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	return la < lb ? -1 : la > lb;
}

/* bwrap.* (2.6.14): share-net and unshare-net decide the network; any other
 * key is passed on. bwrap parses no "--opt=value": the value follows as its
 * own argument. */
static bool bwrap_options(struct sb_arena *a, const struct sb_policy *p,
			  argv_vec *extra, bool *hostname)
{
	bool share = p->any_net_rule;
	size_t i;

	*hostname = false;
	for (i = 0; i < p->provider_opts.n; i++) {
		const struct sb_provider_opt *o = &p->provider_opts.v[i];

		if (o->provider != SB_PROVIDER_BWRAP)
			continue;
		if (strcmp(o->key, "share-net") == 0) {
			share = truthy(o->value);
			continue;
		}
		if (strcmp(o->key, "unshare-net") == 0) {
			share = falsy(o->value);
			continue;
		}
		if (strcmp(o->key, "hostname") == 0)
			*hostname = true;
		push(a, extra, sb_arena_printf(a, "--%s", o->key));
		if (*o->value)
			push(a, extra, o->value);
	}
	return share;
}

static void bwrap_argv(struct sb_arena *a, const struct sb_policy *p,
		       argv_vec *v, struct sb_ns_op *ops, size_t n,
		       const struct sb_kernel_ctx *ctx, char *const env[],
		       int hosts_fd)
{
	argv_vec extra = { 0 };
	bool hostname;
	size_t i;

	push(a, v, "--unshare-all");
	if (bwrap_options(a, p, &extra, &hostname))
		push(a, v, "--share-net");
	push(a, v, "--die-with-parent");
	push(a, v, "--new-session");
	if (!hostname)
		push2(a, v, "--hostname", "sandbox");
	push(a, v, "--clearenv");
	for (i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');

		if (!eq)
			continue;
		push(a, v, "--setenv");
		push2(a, v, sb_arena_strndup(a, env[i], (size_t)(eq - env[i])),
		      eq + 1);
	}
	push2(a, v, "--dev", "/dev");
	push2(a, v, "--proc", "/proc");
	for (i = 0; i < n; i++) {
		const struct sb_ns_op *o = &ops[i];

		if (under_kernel_fs(o->path))
			continue;
		switch (o->kind) {
		case SB_NS_DIR:
			push2(a, v, "--dir", o->path);
			break;
		case SB_NS_LINK:
			push(a, v, "--symlink");
			push2(a, v, o->link, o->path);
			break;
		case SB_NS_BIND:
			push(a, v, o->writable ? "--bind" : "--ro-bind");
			push2(a, v, o->path, o->path);
			break;
		case SB_NS_MASK:
			/* 8.2 wants an empty read; bwrap mounts /dev/null
			 * nodev, so a read of a masked file gets EACCES */
			if (o->is_dir) {
				push2(a, v, "--tmpfs", o->path);
				push2(a, v, "--remount-ro", o->path);
			} else {
				push(a, v, "--ro-bind");
				push2(a, v, "/dev/null", o->path);
			}
			break;
		}
	}
	if (hosts_fd >= 0) {
		push(a, v, "--ro-bind-data");
		push2(a, v, sb_arena_printf(a, "%d", hosts_fd), "/etc/hosts");
	}
	if (ctx->cwd)
		push2(a, v, "--chdir", ctx->cwd);
	for (i = 0; i < extra.n; i++)
		push(a, v, extra.v[i]);
}

/* firejail.* (2.6.14): net, seccomp, seccomp.keep, seccomp.block and
 * rlimit-* are passed on as --key=value; other keys are ignored. */
static bool firejail_options(struct sb_arena *a, const struct sb_policy *p,
			     argv_vec *v)
{
	bool bridge = false;
	size_t i;

	for (i = 0; i < p->provider_opts.n; i++) {
		const struct sb_provider_opt *o = &p->provider_opts.v[i];

		if (o->provider != SB_PROVIDER_FIREJAIL)
			continue;
		if (strcmp(o->key, "net") == 0)
			bridge = true;
		else if (strcmp(o->key, "seccomp") != 0 &&
			 strcmp(o->key, "seccomp.keep") != 0 &&
			 strcmp(o->key, "seccomp.block") != 0 &&
			 !sb_str_starts(o->key, "rlimit-"))
			continue;
		push(a, v, sb_arena_printf(a, "--%s=%s", o->key, o->value));
	}
	return bridge;
}

/* firejail 0.9.72 whitelists below these trees only; elsewhere the host's
 * file system stays visible (read-only where a rule says so). */
static bool whitelistable(const char *path)
{
	static const char *const trees[] = { "/home", "/root", "/tmp",
					     "/media", "/mnt", "/opt",
					     "/srv", "/var", "/etc",
					     "/usr/share", "/run/user" };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(trees); i++)
		if (sb_path_under(path, trees[i]) && strcmp(path, trees[i]))
			return true;
	return false;
}

static void firejail_argv(struct sb_arena *a, const struct sb_policy *p,
			  argv_vec *v, struct sb_ns_op *ops, size_t n,
			  char *const env[], int policy_fd)
{
	size_t i;

	push(a, v, "--noprofile");
	push(a, v, "--quiet");
	push(a, v, "--caps.drop=all");
	push(a, v, "--nonewprivs");
	push(a, v, "--nogroups");
	push(a, v, "--hostname=sandbox");
	push(a, v, "--deterministic-shutdown");
	push(a, v, "--private-dev");
	push(a, v, "--protocol=unix,inet,inet6");
	if (!firejail_options(a, p, v) && !p->any_net_rule)
		push(a, v, "--net=none");
	if (policy_fd >= 0)
		push(a, v, sb_arena_printf(a, "--keep-fd=%d", policy_fd));
	for (i = 0; env[i]; i++)
		push(a, v, sb_arena_printf(a, "--env=%s", env[i]));
	/* the masks of the plan: firejail takes paths, not patterns */
	for (i = 0; i < n; i++)
		if (ops[i].kind == SB_NS_MASK)
			push(a, v, sb_arena_printf(a, "--blacklist=%s",
						   ops[i].path));
	push(a, v, "--whitelist=/etc/hosts");
	for (i = 0; i < n; i++) {
		const struct sb_ns_op *o = &ops[i];

		if (o->kind == SB_NS_LINK && whitelistable(o->path))
			push(a, v,
			     sb_arena_printf(a, "--whitelist=%s", o->path));
		if (o->kind != SB_NS_BIND || under_kernel_fs(o->path))
			continue;
		if (whitelistable(o->path))
			push(a, v,
			     sb_arena_printf(a, "--whitelist=%s", o->path));
		push(a, v, sb_arena_printf(a, "--%s=%s",
					   o->writable ? "read-write"
						       : "read-only",
					   o->path));
	}
}

static int policy_fd_of(char *const env[])
{
	size_t i;

	for (i = 0; env[i]; i++)
		if (strncmp(env[i], "PYSB_POLICY_FD=", 15) == 0)
			return atoi(env[i] + 15);
	return -1;
}

char **sb_extprov_argv(struct sb_arena *a, const struct sb_policy *p,
		       enum sb_provider provider, const char *tool,
		       const struct sb_kernel_ctx *ctx, const char *script,
		       const char *path, char *const argv[],
		       char *const env[], int hosts_fd, const char **err)
{
	argv_vec v = { 0 };
	struct sb_ns_op *ops;
	size_t n, i;
	int rc;

	rc = sb_ns_plan(a, p, ctx, script, &ops, &n, err);
	for (i = 0; i < n; i++)
		if (ops[i].fd >= 0) {
			close(ops[i].fd);
			ops[i].fd = -1;
		}
	if (rc < 0)
		return NULL;
	qsort(ops, n, sizeof(*ops), by_length);
	push(a, &v, tool);
	if (provider == SB_PROVIDER_BWRAP)
		bwrap_argv(a, p, &v, ops, n, ctx, env, hosts_fd);
	else
		firejail_argv(a, p, &v, ops, n, env, policy_fd_of(env));
	push(a, &v, "--");
	push(a, &v, path);
	for (i = 1; argv[i]; i++)
		push(a, &v, argv[i]);
	push(a, &v, NULL);
	return v.v;
}

static const char *find_tool(struct sb_arena *a, const char *name)
{
	static const char *const dirs[] = { "/usr/bin", "/usr/local/bin",
					    "/bin" };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(dirs); i++) {
		const char *t = sb_arena_printf(a, "%s/%s", dirs[i], name);

		if (access(t, X_OK) == 0)
			return t;
	}
	return NULL;
}

/* The hosts text on an fd bwrap reads (--ro-bind-data). */
static int hosts_memfd(const char *text)
{
	size_t len = strlen(text);
	int fd = memfd_create("pysb-hosts", 0);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int sb_extprov_run(struct sb_arena *a, const struct sb_policy *p,
		   enum sb_provider provider, const struct sb_kernel_ctx *ctx,
		   const char *script, const char *path, char *const argv[],
		   char *const env[])
{
	const char *name = provider == SB_PROVIDER_BWRAP ? "bwrap" : "firejail";
	const char *pkg = provider == SB_PROVIDER_BWRAP ? "bubblewrap"
							: "firejail";
	const char *tool = find_tool(a, name), *err = NULL;
	char *const no_env[] = { NULL };
	int hosts_fd = -1;
	char **targv;

	if (!tool) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: the %s binary is not "
			"installed; nothing was run.\nHint: sudo apt-get "
			"install %s; or use os-sandbox=unshare or "
			"os-sandbox=landlock\n",
			name, name, pkg);
		return EXIT_SETUP;
	}
	if (provider == SB_PROVIDER_BWRAP) {
		hosts_fd = hosts_memfd(sb_ns_hosts(a, p));
		if (hosts_fd < 0) {
			fprintf(stderr,
				"python-sb: os-sandbox=bwrap: memfd for "
				"/etc/hosts: %s; nothing was run.\n",
				strerror(errno));
			return EXIT_SETUP;
		}
	}
	targv = sb_extprov_argv(a, p, provider, tool, ctx, script, path, argv,
				env, hosts_fd, &err);
	if (!targv) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: cannot expose %s; nothing "
			"was run.\n",
			name, err);
		return EXIT_SETUP;
	}
	if (getenv("PYSB_DEBUG")) {
		size_t i;

		fprintf(stderr, "python-sb:");
		for (i = 0; targv[i]; i++)
			fprintf(stderr, " %s", targv[i]);
		fprintf(stderr, "\n");
	}
	fflush(NULL);
	execve(tool, targv, no_env);
	fprintf(stderr, "python-sb: exec %s: %s; nothing was run.\n", tool,
		strerror(errno));
	return EXIT_SETUP;
}
