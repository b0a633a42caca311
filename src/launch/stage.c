/* stage.c - the second stage of os-sandbox=bwrap and os-sandbox=firejail.
 * The tools must mount before anything restricts them, and python-sb's
 * Landlock ruleset and seccomp filter forbid mounting; so the tool runs
 * python-sb again inside its namespaces, and this stage applies the same
 * kernel layer os-sandbox=landlock does (and unshare does inside its own
 * root), with python-sb as the network supervisor, before the interpreter
 * starts. The outer launcher hands over the policy blob the guard reads and
 * a stage record with the rest; the stage trusts them no more than the
 * same user could run python without python-sb, and any fault stops the
 * run before the program starts. It must not decide policy: the blob's
 * rules are parsed by the one parser.
 */
#include "exit_status.h"
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fdio.h"
#include "fsrules.h"
#include "kernel.h"
#include "netsup.h"
#include "notif.h"
#include "policy_blob.h"
#include "run_limits.h"
#include "suplog.h"

#define MAGIC "python-sb stage 1"

static void put(struct sb_buf *b, const char *key, const char *value)
{
	sb_buf_puts(b, key);
	sb_buf_puts(b, "\t");
	sb_buf_put_field(b, value ? value : "");
	sb_buf_puts(b, "\n");
}

void sb_stage_init(struct sb_stage *st, const struct sb_kernel_ctx *ctx,
		   int policy_fd, bool guarded, char *const *env)
{
	memset(st, 0, sizeof(*st));
	st->path = ctx->interp->path;
	st->real = ctx->interp->real;
	st->guard = ctx->guard;
	st->pkgdir = ctx->pkgdir;
	st->cwd = ctx->cwd;
	st->script = ctx->script;
	st->policy_fd = policy_fd;
	st->guarded = guarded;
	st->debug = getenv("PYSB_DEBUG") != NULL;
	st->env = env;
	st->signal_fd = -1;
	st->cgroup_fd[0] = st->cgroup_fd[1] = st->cgroup_dir_fd = -1;
	st->log_fd = st->relay_fd = -1;
}

int sb_stage_write(const struct sb_stage *st)
{
	struct sb_buf b = { 0 };
	char num[16];
	size_t i;
	int fd;

	sb_buf_puts(&b, MAGIC "\n");
	put(&b, "path", st->path);
	put(&b, "real", st->real);
	put(&b, "guard", st->guard);
	put(&b, "pkgdir", st->pkgdir);
	put(&b, "cwd", st->cwd);
	put(&b, "script", st->script);
	snprintf(num, sizeof(num), "%d", st->policy_fd);
	put(&b, "policy-fd", num);
	put(&b, "guarded", st->guarded ? "1" : "0");
	put(&b, "hosts", st->hosts ? "1" : "0");
	put(&b, "net-wait", st->net_wait ? "1" : "0");
	put(&b, "debug", st->debug ? "1" : "0");
	snprintf(num, sizeof(num), "%d", st->signal_fd);
	put(&b, "signal-fd", num);
	snprintf(num, sizeof(num), "%u", st->cgroup_mask);
	put(&b, "cgroup-mask", num);
	for (i = 0; i < 2; i++) {
		snprintf(num, sizeof(num), "%d", st->cgroup_fd[i]);
		put(&b, "cgroup-fd", num);
	}
	snprintf(num, sizeof(num), "%d", st->cgroup_version);
	put(&b, "cgroup-version", num);
	snprintf(num, sizeof(num), "%d", st->cgroup_dir_fd);
	put(&b, "cgroup-dir-fd", num);
	snprintf(num, sizeof(num), "%d", st->log_fd);
	put(&b, "log-fd", num);
	snprintf(num, sizeof(num), "%d", st->relay_fd);
	put(&b, "relay-fd", num);
	put(&b, "log-wire", st->log_wire ? "1" : "0");
	for (i = 0; st->env[i]; i++)
		put(&b, "env", st->env[i]);
	sb_buf_puts(&b, "end\n");
	fd = sb_memfd_text("pysb-stage", b.s, b.len);
	sb_buf_free(&b);
	return fd;
}

static const char *or_null(const char *s)
{
	return s && *s ? s : NULL;
}

/* The record into st; NULL, or what is wrong with it. */
static const char *read_record(struct sb_arena *a, const char *data,
			       size_t len, struct sb_stage *st)
{
	SB_VEC(char *) env = { 0 };
	const char *s = data, *end = data + len;
	bool first = true, seen_end = false;
	size_t n_cg = 0;

	st->policy_fd = -1;
	st->signal_fd = -1;
	st->cgroup_fd[0] = st->cgroup_fd[1] = st->cgroup_dir_fd = -1;
	st->log_fd = st->relay_fd = -1;
	while (s < end && !seen_end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		char *f[2];
		bool bad = false;
		size_t nf;

		if (first) {
			if (n != strlen(MAGIC) || memcmp(s, MAGIC, n) != 0)
				return "not a python-sb stage record";
			first = false;
		} else if (n == 3 && memcmp(s, "end", 3) == 0) {
			seen_end = true;
		} else {
			nf = sb_split_fields(a, s, n, f, 2, &bad);
			if (bad || nf != 2)
				return "malformed stage record";
			if (strcmp(f[0], "path") == 0)
				st->path = f[1];
			else if (strcmp(f[0], "real") == 0)
				st->real = f[1];
			else if (strcmp(f[0], "guard") == 0)
				st->guard = or_null(f[1]);
			else if (strcmp(f[0], "pkgdir") == 0)
				st->pkgdir = or_null(f[1]);
			else if (strcmp(f[0], "cwd") == 0)
				st->cwd = f[1];
			else if (strcmp(f[0], "script") == 0)
				st->script = or_null(f[1]);
			else if (strcmp(f[0], "policy-fd") == 0)
				st->policy_fd = sb_fd_parse(f[1]);
			else if (strcmp(f[0], "guarded") == 0)
				st->guarded = strcmp(f[1], "1") == 0;
			else if (strcmp(f[0], "hosts") == 0)
				st->hosts = strcmp(f[1], "1") == 0;
			else if (strcmp(f[0], "net-wait") == 0)
				st->net_wait = strcmp(f[1], "1") == 0;
			else if (strcmp(f[0], "debug") == 0)
				st->debug = strcmp(f[1], "1") == 0;
			else if (strcmp(f[0], "signal-fd") == 0)
				st->signal_fd = strcmp(f[1], "-1") == 0
							? -1
							: sb_fd_parse(f[1]);
			else if (strcmp(f[0], "cgroup-mask") == 0)
				st->cgroup_mask =
					(unsigned)strtoul(f[1], NULL, 10);
			else if (strcmp(f[0], "cgroup-fd") == 0 && n_cg < 2)
				st->cgroup_fd[n_cg++] =
					strcmp(f[1], "-1") == 0
						? -1
						: sb_fd_parse(f[1]);
			else if (strcmp(f[0], "cgroup-version") == 0)
				st->cgroup_version = atoi(f[1]);
			else if (strcmp(f[0], "cgroup-dir-fd") == 0)
				st->cgroup_dir_fd = strcmp(f[1], "-1") == 0
							    ? -1
							    : sb_fd_parse(f[1]);
			else if (strcmp(f[0], "log-fd") == 0)
				st->log_fd = strcmp(f[1], "-1") == 0
						     ? -1
						     : sb_fd_parse(f[1]);
			else if (strcmp(f[0], "relay-fd") == 0)
				st->relay_fd = strcmp(f[1], "-1") == 0
						       ? -1
						       : sb_fd_parse(f[1]);
			else if (strcmp(f[0], "log-wire") == 0)
				st->log_wire = strcmp(f[1], "1") == 0;
			else if (strcmp(f[0], "env") == 0 && strchr(f[1], '='))
				*SB_VEC_PUSH(a, env) = f[1];
			else
				return "unknown field in the stage record";
		}
		s += n + 1;
	}
	if (!seen_end)
		return "truncated stage record";
	if (!st->path || st->path[0] != '/' || !st->real ||
	    st->real[0] != '/' || !st->cwd || st->cwd[0] != '/' ||
	    st->policy_fd < 0)
		return "incomplete stage record";
	*SB_VEC_PUSH(a, env) = NULL;
	st->env = env.v;
	return NULL;
}

/* The policy the guard will read, parsed here by the same code; its
 * offset is left at 0 for the guard. */
static const char *read_policy(struct sb_arena *a, int fd,
			       struct sb_policy **out)
{
	struct sb_blob *blob = sb_arena_alloc(a, sizeof(*blob));
	struct sb_buf data = { 0 };
	const char *err = NULL;
	int r;

	*out = NULL;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return sb_arena_printf(a, "the policy descriptor: %s",
				       strerror(errno));
	r = sb_fd_read_all(fd, &data);
	if (r < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		sb_buf_free(&data);
		return sb_arena_printf(a, "reading the policy: %s",
				       strerror(r < 0 ? -r : errno));
	}
	r = sb_blob_read(a, data.s ? sb_arena_strndup(a, data.s, data.len)
				   : "",
			 data.len, blob, &err);
	sb_buf_free(&data);
	if (r < 0)
		return err;
	if (sb_blob_parse_policy(blob, out) != 0 || (*out)->errors.n)
		return "the policy does not parse inside the sandbox";
	return NULL;
}

/* The launcher outside cannot see this process (another pid namespace):
 * hand it a pidfd, through which it forwards the signals it gets, and
 * starts pasta on this network namespace (net_wait): nothing runs before
 * its byte says the namespace is configured. */
static const char *send_pidfd(int sock, bool net_wait)
{
	int pidfd = sb_pidfd_open(getpid(), 0), r;
	char go = 0;

	if (pidfd < 0)
		return "pidfd_open";
	r = sb_send_fd(sock, pidfd);
	close(pidfd);
	if (r >= 0 && net_wait && read(sock, &go, 1) != 1)
		go = 0;
	close(sock);
	if (r < 0)
		return "sending the signal descriptor";
	return net_wait && go != 1 ? "the network namespace's stack (pasta) "
				     "did not start"
				   : NULL;
}

/* With the Python layer on, the environment must preload the guard first
 * and name the policy descriptor the stage read. */
static bool guard_in_env(struct sb_arena *a, const struct sb_stage *st)
{
	const char *pre = sb_arena_printf(a, "LD_PRELOAD=%s", st->guard);
	const char *fd = sb_arena_printf(a, "PYSB_POLICY_FD=%d", st->policy_fd);
	bool preload = false, policy = false;
	size_t i, n = strlen(pre);

	for (i = 0; st->env[i]; i++) {
		if (strncmp(st->env[i], pre, n) == 0 &&
		    (st->env[i][n] == '\0' || st->env[i][n] == ':'))
			preload = true;
		if (strcmp(st->env[i], fd) == 0)
			policy = true;
	}
	return preload && policy;
}

static int fail(const char *what)
{
	fprintf(stderr,
		"python-sb: the second stage inside the sandbox: %s; nothing "
		"was run.\n",
		what);
	return SB_EXIT_SETUP;
}

int sb_stage_main(int argc, char **argv)
{
	struct sb_arena *a;
	struct sb_stage st = { 0 };
	struct sb_policy *p = NULL;
	struct sb_interp interp = { 0 };
	struct sb_kernel_ctx ctx = { 0 };
	struct sb_limits lim;
	struct sb_buf rec = { 0 };
	const char *err;
	int fd, rc;

	if (argc < 4 || strncmp(argv[1], SB_STAGE_FLAG,
				strlen(SB_STAGE_FLAG)) != 0 ||
	    strcmp(argv[2], "--") != 0)
		return fail("usage: python-sb --pysb-stage=FD -- PATH ARGV...");
	fd = sb_fd_parse(argv[1] + strlen(SB_STAGE_FLAG));
	if (fd < 0)
		return fail("bad stage descriptor");
	rc = sb_fd_read_all(fd, &rec);
	close(fd);
	if (rc < 0) {
		sb_buf_free(&rec);
		return fail(strerror(-rc));
	}
	a = sb_arena_new();
	err = read_record(a, rec.s ? sb_arena_strndup(a, rec.s, rec.len) : "",
			  rec.len, &st);
	sb_buf_free(&rec);
	if (!err && strcmp(st.path, argv[3]) != 0)
		err = "the command is not the interpreter the record names";
	/* ld.so skips a preload it cannot open and runs the program anyway:
	 * a guard the tool left out must stop the run here */
	if (!err && st.guarded && (!st.guard || access(st.guard, R_OK) != 0))
		err = sb_arena_printf(a, "the guard library %s is not readable "
					 "inside the tool's root",
				      st.guard ? st.guard : "(none)");
	if (!err && st.guarded && !guard_in_env(a, &st))
		err = "the program's environment does not load the guard";
	/* relative paths must mean what they meant outside */
	if (!err && chdir(st.cwd) != 0)
		err = sb_arena_printf(a, "the working directory %s is not "
					 "there inside the tool's root: %s",
				      st.cwd, strerror(errno));
	if (!err)
		err = read_policy(a, st.policy_fd, &p);
	if (!err && st.signal_fd >= 0)
		err = send_pidfd(st.signal_fd, st.net_wait);
	/* the log and the relay stay with this supervisor: not the
	 * program's (the guard's end of the relay is in the blob) */
	if (!err && (st.log_fd >= 0) != (st.relay_fd >= 0))
		err = "the denial log comes without its relay";
	if (!err && st.log_fd >= 0 &&
	    (fcntl(st.log_fd, F_SETFD, FD_CLOEXEC) < 0 ||
	     fcntl(st.relay_fd, F_SETFD, FD_CLOEXEC) < 0))
		err = sb_arena_printf(a, "the denial log's descriptors: %s",
				      strerror(errno));
	if (!err && st.log_fd >= 0) {
		sb_suplog_set(st.log_fd, st.relay_fd, -1, p->log_max);
		sb_suplog_set_wire(st.log_wire);
	}
	if (err) {
		rc = fail(err);
		goto out;
	}
	if (!st.guarded)
		close(st.policy_fd); /* the program has no use for it */
	if (st.debug)
		setenv("PYSB_DEBUG", "1", 1);
	/* the kernel layer as os-sandbox=landlock builds it; the hosts file
	 * the tool wrote holds the pinned names only */
	p->provider = SB_PROVIDER_LANDLOCK;
	if (st.hosts)
		sb_fs_add_implicit(p, "/etc/hosts", false, "<provider>");
	interp.path = st.path;
	interp.real = st.real;
	interp.source = "the launcher outside the sandbox";
	ctx.interp = &interp;
	ctx.guard = st.guard;
	ctx.pkgdir = st.pkgdir;
	ctx.cwd = st.cwd;
	ctx.script = st.script;
	/* whatever the tool left (bwrap as root keeps root's; a user
	 * namespace holds them all; bwrap.cap-add=), the program gets none */
	ctx.own_files_kept = true; /* the tool masked them (ignore=) */
	/* the rlimits and the timer here; what the cgroup holds, outside;
	 * its descriptors are the supervisor's, never the program's */
	sb_limits_plan_nested(p, st.cgroup_mask, &lim);
	lim.cg_procs[0] = st.cgroup_fd[0];
	lim.cg_procs[1] = st.cgroup_fd[1];
	for (int k = 0; k < 2; k++)
		if (st.cgroup_fd[k] >= 0)
			fcntl(st.cgroup_fd[k], F_SETFD, FD_CLOEXEC);
	/* the cgroup's directory is never the program's, whatever it is
	 * kept for below (qemu's guest hands it for every limit) */
	if (st.cgroup_dir_fd >= 0)
		fcntl(st.cgroup_dir_fd, F_SETFD, FD_CLOEXEC);
	/* the memory cgroup's directory for its OOM events; a v2 cgroup's
	 * for its cpu.stat too (qemu's guest: the init made it, and this
	 * supervisor reads the run's CPU time as the host's does) */
	if (st.cgroup_dir_fd >= 0 &&
	    (st.cgroup_mask & (1u << SB_LIMIT_MEMORY |
			       (st.cgroup_version == 2 ? 1u << SB_LIMIT_CPU
						       : 0)))) {
		fcntl(st.cgroup_dir_fd, F_SETFD, FD_CLOEXEC);
		lim.cg_fd[0] = st.cgroup_dir_fd;
		lim.cg_version = st.cgroup_version;
		if (st.cgroup_mask & (1u << SB_LIMIT_MEMORY))
			lim.mech[SB_LIMIT_MEMORY] =
				st.cgroup_version == 2 ? SB_MECH_CGROUP_V2
						       : SB_MECH_CGROUP_V1;
		if (st.cgroup_version == 2 &&
		    (st.cgroup_mask & (1u << SB_LIMIT_CPU)))
			lim.mech[SB_LIMIT_CPU] = SB_MECH_CGROUP_V2;
	}
	ctx.limits = &lim;
	rc = sb_netsup_run(a, p, &ctx, st.path, argv + 3, st.env);
out:
	sb_policy_free(p);
	sb_arena_free(a);
	return rc;
}
