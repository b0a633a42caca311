/* extprov.c - os-sandbox=bwrap and os-sandbox=firejail: the same mount plan as
 * the native unshare provider (ns.c), written as the tools' options, and the
 * provider keys of py-sandboxes(5) (provider.key=value). It owns the
 * translation and the exec of the tool; it must not judge any access itself.
 * Neither tool can take python-sb's Landlock ruleset or seccomp notifications
 * (the tool has to mount after python-sb would have restricted itself), so
 * under them the kernel layer is the tool's: namespaces, and firejail's own
 * seccomp and capability drop. Under bwrap the Python layer still judges net=
 * and files; firejail cannot carry the guard, so run.c takes it only with
 * py-sandbox=false.
 */
#include "exit_status.h"
#include "extprov.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdio.h"
#include "netns.h"
#include "notif.h"
#include "ns.h"
#include "run_limits.h"
#include "stage.h"
#include "suplog.h"
#include "supervisor.h"

#define BWRAP_STAGE "/.python-sb"

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

static bool under_kernel_fs(const char *path)
{
	return sb_path_under(path, "/dev") || sb_path_under(path, "/proc");
}

/* bubblewrap 0.8's options and how many arguments each takes. A bwrap.*
 * key must name one that takes none (an empty value) or one: bwrap would
 * take the words after an unknown or two-argument option as its command
 * or its arguments. Landlock in the second stage holds whatever an option
 * mounts to the rules. */
static const struct {
	const char *name;
	int nargs;
} bwrap_known[] = {
	{ "unshare-user", 0 },    { "unshare-user-try", 0 },
	{ "unshare-ipc", 0 },     { "unshare-pid", 0 },
	{ "unshare-uts", 0 },     { "unshare-cgroup", 0 },
	{ "unshare-cgroup-try", 0 }, { "unshare-all", 0 },
	{ "disable-userns", 0 },  { "assert-userns-disabled", 0 },
	{ "clearenv", 0 },        { "new-session", 0 },
	{ "die-with-parent", 0 }, { "as-pid-1", 0 },
	{ "level-prefix", 0 },    { "userns", 1 },
	{ "userns2", 1 },         { "pidns", 1 },
	{ "uid", 1 },             { "gid", 1 },
	{ "hostname", 1 },        { "chdir", 1 },
	{ "unsetenv", 1 },        { "lock-file", 1 },
	{ "sync-fd", 1 },         { "remount-ro", 1 },
	{ "exec-label", 1 },      { "file-label", 1 },
	{ "proc", 1 },            { "dev", 1 },
	{ "tmpfs", 1 },           { "mqueue", 1 },
	{ "dir", 1 },             { "seccomp", 1 },
	{ "add-seccomp-fd", 1 },  { "block-fd", 1 },
	{ "userns-block-fd", 1 }, { "info-fd", 1 },
	{ "json-status-fd", 1 },  { "cap-add", 1 },
	{ "cap-drop", 1 },        { "perms", 1 },
	{ "size", 1 },            { "argv0", 1 },
	{ "setenv", 2 },          { "bind", 2 },
	{ "bind-try", 2 },        { "dev-bind", 2 },
	{ "dev-bind-try", 2 },    { "ro-bind", 2 },
	{ "ro-bind-try", 2 },     { "bind-fd", 2 },
	{ "ro-bind-fd", 2 },      { "file", 2 },
	{ "bind-data", 2 },       { "ro-bind-data", 2 },
	{ "symlink", 2 },         { "chmod", 2 },
};

/* Why a bwrap.* rule cannot be passed on, or NULL. */
static const char *bwrap_key_error(struct sb_arena *a,
				   const struct sb_provider_opt *o)
{
	const char *at = sb_ref_format(a, o->ref);
	size_t i;

	if (strcmp(o->key, "share-net") == 0 ||
	    strcmp(o->key, "unshare-net") == 0)
		return NULL;
	for (i = 0; i < SB_ARRAY_LEN(bwrap_known); i++) {
		if (strcmp(o->key, bwrap_known[i].name) != 0)
			continue;
		if (bwrap_known[i].nargs == 0 && *o->value)
			return sb_arena_printf(
				a, "%s: bwrap.%s takes no value: write 'bwrap.%s='",
				at, o->key, o->key);
		if (bwrap_known[i].nargs == 1 && !*o->value)
			return sb_arena_printf(
				a, "%s: bwrap.%s needs a value: 'bwrap.%s=VALUE'",
				at, o->key, o->key);
		if (bwrap_known[i].nargs == 2)
			return sb_arena_printf(
				a,
				"%s: bwrap.%s takes two arguments, which a "
				"bwrap.* rule cannot give; use the file rules "
				"(expose-ro=, expose-rw=) or env=",
				at, o->key);
		return NULL;
	}
	return sb_arena_printf(a, "%s: bwrap.%s is not an option of bwrap "
				  "0.8 (see bwrap(1))",
			       at, o->key);
}

/* bwrap.* (2.6.14): share-net and unshare-net decide the network
 * (sb_netns_bwrap_shared: by default a namespace of its own, pasta's way
 * out with net= rules); the other keys are passed on. bwrap parses no
 * "--opt=value": the value follows as its own argument. */
static void bwrap_options(struct sb_arena *a, const struct sb_policy *p,
			  argv_vec *extra, bool *hostname)
{
	size_t i;

	*hostname = false;
	for (i = 0; i < p->provider_opts.n; i++) {
		const struct sb_provider_opt *o = &p->provider_opts.v[i];

		if (o->provider != SB_PROVIDER_BWRAP ||
		    strcmp(o->key, "share-net") == 0 ||
		    strcmp(o->key, "unshare-net") == 0)
			continue;
		if (strcmp(o->key, "hostname") == 0)
			*hostname = true;
		push(a, extra, sb_arena_printf(a, "--%s", o->key));
		if (*o->value)
			push(a, extra, o->value);
	}
}

static void bwrap_argv(struct sb_arena *a, const struct sb_policy *p,
		       argv_vec *v, struct sb_ns_op *ops, size_t n,
		       const struct sb_kernel_ctx *ctx, const char *self,
		       int hosts_fd)
{
	argv_vec extra = { 0 };
	bool hostname;
	size_t i;

	push(a, v, "--unshare-all");
	bwrap_options(a, p, &extra, &hostname);
	if (sb_netns_bwrap_shared(p))
		push(a, v, "--share-net");
	push(a, v, "--die-with-parent");
	push(a, v, "--new-session");
	if (!hostname)
		push2(a, v, "--hostname", "sandbox");
	/* the stage sets the program's environment (stage.h) */
	push(a, v, "--clearenv");
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
	/* the second stage, read-only, at a name that says nothing of the
	 * host's layout; Landlock keeps it from the program */
	push(a, v, "--ro-bind");
	push2(a, v, self, BWRAP_STAGE);
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
			  const struct sb_kernel_ctx *ctx, const char *self,
			  int policy_fd, int stage_fd)
{
	int log, relay, peer;
	const char *keep;
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
	sb_suplog_fds(&log, &relay, &peer);
	keep = sb_arena_printf(a, "--keep-fd=%d,%d", policy_fd, stage_fd);
	if (log >= 0) /* the denial log, both ends of its relay (stage.c) */
		keep = sb_arena_printf(a, "%s,%d,%d,%d", keep, log, relay,
				       peer);
	/* the caller's, which python-sb passes on (inherit.h) */
	if (ctx->channel_fd > 0)
		keep = sb_arena_printf(a, "%s,%d", keep, ctx->channel_fd);
	for (i = 0; i < ctx->n_keep_fds; i++)
		keep = sb_arena_printf(a, "%s,%d", keep, ctx->keep_fds[i]);
	push(a, v, keep);
	push(a, v, "--whitelist=/etc/hosts");
	if (whitelistable(self))
		push(a, v, sb_arena_printf(a, "--whitelist=%s", self));
	/* a whitelist below a tree hides the rest of it, the working
	 * directory too: keep it (Landlock still holds it to the rules) */
	if (ctx->cwd && whitelistable(ctx->cwd))
		push(a, v, sb_arena_printf(a, "--whitelist=%s", ctx->cwd));
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
	/* the masks of the plan (firejail takes paths, not patterns), after
	 * the exposures: a --read-write= of a tree remounts what lies below
	 * it writable again, the empty file every blacklist shares included
	 * (a program could chmod or fill it for every firejail sandbox) */
	for (i = 0; i < n; i++)
		if (ops[i].kind == SB_NS_MASK)
			push(a, v, sb_arena_printf(a, "--blacklist=%s",
						   ops[i].path));
}

char **sb_extprov_argv(struct sb_arena *a, const struct sb_policy *p,
		       enum sb_provider provider, const char *tool,
		       const struct sb_kernel_ctx *ctx, const char *self,
		       char *const argv[], int hosts_fd, int policy_fd,
		       int stage_fd, const char **err)
{
	argv_vec v = { 0 };
	struct sb_ns_op *ops;
	size_t n, i;
	int rc;

	for (i = 0; i < p->provider_opts.n; i++)
		if (provider == SB_PROVIDER_BWRAP &&
		    p->provider_opts.v[i].provider == SB_PROVIDER_BWRAP &&
		    (*err = bwrap_key_error(a, &p->provider_opts.v[i])))
			return NULL;
	rc = sb_ns_plan(a, p, ctx, &ops, &n, err);
	for (i = 0; i < n; i++)
		if (ops[i].fd >= 0) {
			close(ops[i].fd);
			ops[i].fd = -1;
		}
	if (rc < 0) {
		*err = sb_arena_printf(a, "cannot expose %s", *err);
		return NULL;
	}
	push(a, &v, tool);
	if (provider == SB_PROVIDER_BWRAP)
		bwrap_argv(a, p, &v, ops, n, ctx, self, hosts_fd);
	else
		firejail_argv(a, p, &v, ops, n, ctx, self, policy_fd,
			      stage_fd);
	/* firejail runs what follows a "--" through the user's login shell
	 * (nologin for a service account, bash's quoting for root): without
	 * it, the first word that is not an option (an absolute path) is
	 * exec'd directly */
	if (provider == SB_PROVIDER_BWRAP)
		push(a, &v, "--");
	push(a, &v, provider == SB_PROVIDER_BWRAP ? BWRAP_STAGE : self);
	push(a, &v, sb_arena_printf(a, SB_STAGE_FLAG "%d", stage_fd));
	push(a, &v, "--");
	push(a, &v, ctx->interp->path);
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

/* The stage's socket: it sends its pidfd once it is up, and with a
 * network of its own waits for a byte that says pasta is up. */
struct stage_wait {
	int sock;     /* -1 once read (or without one: firejail) */
	int stage;    /* the stage's pidfd, or -1 */
	bool started; /* the stage is up: an exit is no longer the tool's */
	struct sb_netns *net; /* NULL: bwrap.share-net, or no net= rule */
	bool net_failed;      /* pasta did not start: the run is 255 */
};

/* The pid in our pid namespace of the process behind 'pidfd'; -1. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], buf[512], *at;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	at = strstr(buf, "\nPid:");
	return at ? (pid_t)strtol(at + 5, NULL, 10) : -1;
}

/* Start pasta on the stage's namespace, then let the stage go on; on a
 * failure the stage is killed before the program starts. */
static void stage_network(struct stage_wait *w)
{
	pid_t pid = pidfd_pid(w->stage);
	char go = 1;

	if (pid <= 0) {
		fprintf(stderr, "python-sb: os-sandbox=bwrap: the second "
				"stage's pid: %s; nothing was run.\n",
			strerror(errno));
		w->net_failed = true;
	} else if (sb_netns_attach(w->net, pid, "bwrap") != 0) {
		w->net_failed = true;
	} else if (write(w->sock, &go, 1) != 1) {
		w->net_failed = true;
	}
	if (w->net_failed)
		sb_pidfd_send_signal(w->stage, SIGKILL);
}

static void stage_fds(struct sb_sup *s, void *ctx, struct pollfd *p)
{
	const struct stage_wait *w = ctx;

	p[0] = (struct pollfd){ w->sock, POLLIN, 0 };
}

static void stage_ready(struct sb_sup *s, void *ctx, const struct pollfd *p)
{
	struct stage_wait *w = ctx;

	if (w->sock < 0 || !p[0].revents)
		return;
	w->stage = sb_recv_fd(w->sock);
	w->started = w->stage >= 0;
	if (w->started && w->net)
		stage_network(w);
	close(w->sock);
	w->sock = -1;
	/* from now on the signals go to the stage, which passes them to the
	 * program (netsup.h); before, bwrap itself ends the run */
	s->to_pidfd = w->stage;
}

/* What the tool's child (sb_sup_spawn) is given. */
struct tool_child {
	const struct sb_sup *sup;
	const char *tool;
	char **targv;
	int done; /* close-on-exec: its end tells python-sb the exec is made */
};

/* The child, in python-sb's memory while python-sb waits for 'done' to
 * close: system calls only. */
static int tool_child(void *arg)
{
	struct tool_child *c = arg;
	char *const no_env[] = { NULL };
	int e;

	sb_sup_child(c->sup);
	setpgid(0, 0);
	execve(c->tool, c->targv, no_env);
	e = errno;
	(void)!write(c->done, &e, sizeof(e));
	_exit(SB_EXIT_SETUP);
}

/* bwrap passes no signal on to its child, and its --new-session keeps the
 * terminal's from the program: python-sb stays as bwrap's parent, in a
 * process group of its own, and sends every signal it gets to the second
 * stage (SB_SUP_OWN_GROUP). bwrap dies with python-sb (--die-with-parent).
 * Returns bwrap's exit status, which is the program's. */
static int run_forwarding(const char *tool, char **targv, int sock,
			  int stage_end, struct sb_netns *net, int channel)
{
	static const struct sb_sup_ops ops = { .fds = stage_fds,
					       .ready = stage_ready };
	/* bwrap: the stage says it is up before anything runs; until then an
	 * exit is the tool's own failure (firejail cannot tell us) */
	struct stage_wait w = { sock, -1, sock < 0, net, false };
	struct tool_child c;
	struct sb_sup sup;
	int done[2], e = 0;
	ssize_t n;
	pid_t child;

	if (sb_sup_init(&sup, SB_SUP_OWN_GROUP) < 0) {
		fprintf(stderr, "python-sb: signal set-up: %s; nothing was "
				"run.\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	if (pipe2(done, O_CLOEXEC) < 0) {
		fprintf(stderr, "python-sb: pipe: %s; nothing was run.\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	c = (struct tool_child){ &sup, tool, targv, done[1] };
	child = sb_sup_spawn(&sup, tool_child, &c);
	if (child < 0) {
		fprintf(stderr, "python-sb: clone: %s; nothing was run.\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	/* the child works in our memory until its exec closes its end of
	 * 'done', or it says why the exec failed */
	close(done[1]);
	while ((n = read(done[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(done[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(child, NULL, 0);
		fprintf(stderr, "python-sb: exec %s: %s; nothing was run.\n",
			tool, strerror(e));
		return SB_EXIT_SETUP;
	}
	/* in the parent too: a Ctrl-C before the child's own call must not
	 * reach bwrap through the terminal */
	setpgid(child, child);
	close(stage_end);
	/* partial mode: bwrap killed takes its pid namespace with it */
	if (channel > 0)
		sb_sup_channel(&sup, channel, SB_SUP_CHANNEL_GRACE_MS);
	if (sb_sup_loop(&sup, &ops, &w) < 0 || w.net_failed)
		return SB_EXIT_SETUP;
	/* nothing ran: a setup failure is 255, not the tool's 1 */
	if (!w.started && WIFEXITED(sup.wstatus) &&
	    WEXITSTATUS(sup.wstatus) != SB_EXIT_SETUP) {
		fprintf(stderr,
			"python-sb: %s failed before the sandbox "
			"started (exit status %d); nothing was run.\n",
			tool, WEXITSTATUS(sup.wstatus));
		return SB_EXIT_SETUP;
	}
	return sb_sup_exit_status(sup.wstatus);
}

int sb_extprov_run(struct sb_arena *a, const struct sb_policy *p,
		   enum sb_provider provider, const struct sb_kernel_ctx *ctx,
		   char *const argv[], char *const env[], int policy_fd,
		   bool guarded)
{
	const char *name = provider == SB_PROVIDER_BWRAP ? "bwrap" : "firejail";
	const char *pkg = provider == SB_PROVIDER_BWRAP ? "bubblewrap"
							: "firejail";
	const char *tool = find_tool(a, name), *err = NULL;
	char *const no_env[] = { NULL };
	char self[PATH_MAX];
	struct sb_stage st = { 0 };
	int hosts_fd = -1, stage_fd, sig[2] = { -1, -1 }, log_peer;
	ssize_t len;
	char **targv;

	if (!tool) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: the %s binary is not "
			"installed; nothing was run.\nHint: sudo apt-get "
			"install %s; or use os-sandbox=unshare or "
			"os-sandbox=landlock\n",
			name, name, pkg);
		return SB_EXIT_SETUP;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: cannot find python-sb's own "
			"binary for the second stage: %s; nothing was run.\n",
			name, len < 0 ? strerror(errno) : "empty link");
		return SB_EXIT_SETUP;
	}
	self[len] = '\0';
	if (provider == SB_PROVIDER_BWRAP) {
		const char *hosts = sb_ns_hosts(a, p);

		hosts_fd = sb_memfd_text("pysb-hosts", hosts, strlen(hosts));
		if (hosts_fd < 0) {
			fprintf(stderr,
				"python-sb: os-sandbox=bwrap: memfd for "
				"/etc/hosts: %s; nothing was run.\n",
				strerror(-hosts_fd));
			return SB_EXIT_SETUP;
		}
	}
	sb_stage_init(&st, ctx, policy_fd, guarded, env);
	st.hosts = provider == SB_PROVIDER_BWRAP;
	st.net_wait = provider == SB_PROVIDER_BWRAP && p->any_net_rule &&
		      !sb_netns_bwrap_shared(p);
	for (int k = 0; ctx->limits && k < 3; k++) {
		/* the memory cgroup's directory too, for its OOM events */
		int cg = k < 2 ? ctx->limits->cg_procs[k]
			       : ctx->limits->cg_fd[0];

		/* through the tool to the second stage, like signal_fd */
		if (cg >= 0 && fcntl(cg, F_SETFD, 0) < 0) {
			fprintf(stderr,
				"python-sb: os-sandbox=%s: the run's cgroup: "
				"%s; nothing was run.\n",
				name, strerror(errno));
			return SB_EXIT_SETUP;
		}
		if (k < 2)
			st.cgroup_fd[k] = cg;
		else
			st.cgroup_dir_fd = cg;
	}
	if (ctx->limits) {
		st.cgroup_mask = sb_limits_cgroup_mask(ctx->limits);
		st.cgroup_version = ctx->limits->cg_version;
	}
	sb_suplog_fds(&st.log_fd, &st.relay_fd, &log_peer);
	if (provider == SB_PROVIDER_BWRAP) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
			       sig) < 0 ||
		    fcntl(sig[1], F_SETFD, 0) < 0) {
			fprintf(stderr,
				"python-sb: os-sandbox=bwrap: socketpair: %s; "
				"nothing was run.\n",
				strerror(errno));
			return SB_EXIT_SETUP;
		}
		st.signal_fd = sig[1];
	}
	stage_fd = sb_stage_write(&st);
	if (stage_fd < 0) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: memfd for the second stage: "
			"%s; nothing was run.\n",
			name, strerror(-stage_fd));
		return SB_EXIT_SETUP;
	}
	targv = sb_extprov_argv(a, p, provider, tool, ctx, self, argv,
				hosts_fd, policy_fd, stage_fd, &err);
	if (!targv) {
		fprintf(stderr,
			"python-sb: os-sandbox=%s: %s; nothing "
			"was run.\n",
			name, err);
		return SB_EXIT_SETUP;
	}
	if (getenv("PYSB_DEBUG")) {
		size_t i;

		fprintf(stderr, "python-sb:");
		for (i = 0; targv[i]; i++)
			fprintf(stderr, " %s", targv[i]);
		fprintf(stderr, "\n");
	}
	if (provider == SB_PROVIDER_BWRAP) {
		struct sb_netns net = { .go = -1, .pidfd = -1, .dirfd = -1 };
		int status;

		if (st.net_wait &&
		    (status = sb_netns_prepare(a, p, "bwrap", &net)) != 0)
			return status;
		status = run_forwarding(tool, targv, sig[0], sig[1],
					st.net_wait ? &net : NULL,
					ctx->channel_fd);
		sb_netns_stop(&net);
		return status;
	}
	if (sb_netns_firejail_own(p, geteuid() == 0)) {
		/* as root: a network namespace made here, pasta attached to
		 * it, and firejail exec'd into it keeps it; pasta, our child,
		 * dies with the process firejail becomes (its parent-death
		 * signal) */
		struct sb_netns net = { .go = -1, .pidfd = -1, .dirfd = -1 };
		int status = sb_netns_prepare(a, p, "firejail", &net);

		if (status != 0)
			return status;
		if (unshare(CLONE_NEWNET) < 0) {
			fprintf(stderr,
				"python-sb: os-sandbox=firejail: a network "
				"namespace: %s; nothing was run.\n",
				strerror(errno));
			sb_netns_stop(&net);
			return SB_EXIT_SETUP;
		}
		status = sb_netns_attach(&net, getpid(), "firejail");
		if (status != 0) {
			sb_netns_stop(&net);
			return status;
		}
		if (net.pidfd >= 0)
			close(net.pidfd);
		if (net.dirfd >= 0)
			close(net.dirfd);
	}
	/* firejail is setuid: a parent's death signal would not survive its
	 * exec, so it replaces python-sb, and SIGTERM ends its sandbox */
	fflush(NULL);
	execve(tool, targv, no_env);
	fprintf(stderr, "python-sb: exec %s: %s; nothing was run.\n", tool,
		strerror(errno));
	return SB_EXIT_SETUP;
}
