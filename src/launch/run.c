/* run.c - complete mode: start the user's interpreter under the policy,
 * with an environment made from env= and unenv= only.
 *
 * 'none' and 'subprocess' exec the interpreter in place of python-sb (no
 * extra process: the exit status and signals are the program's own);
 * 'subprocess' preloads the guard library and hands it the policy on an
 * inherited memfd, and 'none' preloads it only to run @sandbox calls in
 * place. 'landlock' stays as the supervisor (netsup.c) while its child
 * applies the kernel layer and execs; 'unshare' goes to ns.c, 'bwrap' and
 * 'firejail' to extprov.c, which run the same kernel layer inside the
 * namespaces; a learning run to supervise.c. A provider that cannot run
 * here is an error (255): never a silent fallback to less isolation.
 */
#include "run.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "caller.h"
#include "config.h"
#include "exit_status.h"
#include "guard_seal.h"
#include "extprov.h"
#include "fdio.h"
#include "kernel.h"
#include "netsup.h"
#include "ns.h"
#include "policy_blob.h"
#include "prof.h"
#include "qemu.h"
#include "run_limits.h"
#include "learn_native.h"
#include "supervise.h"
#include "ttystate.h"
#include "suplog.h"
#include "support.h"
#include "trust.h"

/* The guard enters by LD_PRELOAD, which the dynamic linker ignores for a
 * static executable and restricts for a set-id one: such an interpreter
 * would run unguarded, so it is refused. NULL when the binary can be
 * guarded, else why not. */
static const char *unguardable(struct sb_arena *a, const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	struct stat st;
	int fd, i;
	bool interp = false;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return sb_arena_printf(a, "cannot read it: %s", strerror(errno));
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		close(fd);
		return "it is set-user-ID or set-group-ID, and LD_PRELOAD "
		       "cannot load the guard into it";
	}
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return "it is not a 64-bit ELF executable";
	}
	for (i = 0; i < eh.e_phnum && !interp; i++) {
		off_t off = (off_t)eh.e_phoff + (off_t)i * eh.e_phentsize;

		if (pread(fd, &ph, sizeof(ph), off) != sizeof(ph))
			break;
		interp = ph.p_type == PT_INTERP;
	}
	close(fd);
	if (!interp)
		return "it is statically linked, and LD_PRELOAD cannot load "
		       "the guard into it";
	return NULL;
}

static bool has_quiet(const struct sb_cli *cli)
{
	size_t i;

	for (i = 0; i < cli->interp.n; i++) {
		const char *o = cli->interp.v[i];

		if (o[0] == '-' && o[1] != '-' && o[1] != 'X' && o[1] != 'W' &&
		    strchr(o, 'q'))
			return true;
	}
	return false;
}

/* The program's environment: only what env= and unenv= produce (2.6.2),
 * plus what the guard needs to find its policy. */
static char **build_env(struct sb_arena *a, const struct sb_policy *p,
			const char *guard, int policy_fd,
			const char *const *host_env)
{
	size_t n_host = 0, i, k = 0;
	const char *user_preload = NULL;
	char **env;

	while (host_env && host_env[n_host])
		n_host++;
	env = sb_arena_alloc(a, (n_host + p->env.n + 4) * sizeof(*env));
	/* learning: the whole host environment, so that every read can be
	 * seen (2.6.2); the rules' values win */
	for (i = 0; i < n_host; i++) {
		const char *eq = strchr(host_env[i], '=');
		size_t j, len = eq ? (size_t)(eq - host_env[i]) : 0;
		bool ruled = false;

		if (!eq || strncmp(host_env[i], "LD_PRELOAD=", 11) == 0 ||
		    strncmp(host_env[i], "PYSB_POLICY_FD=", 15) == 0)
			continue;
		for (j = 0; j < p->env.n && !ruled; j++)
			ruled = strlen(p->env.v[j].name) == len &&
				!strncmp(p->env.v[j].name, host_env[i], len);
		if (!ruled)
			env[k++] = (char *)host_env[i];
	}
	for (i = 0; i < p->env.n; i++) {
		if (guard && strcmp(p->env.v[i].name, "LD_PRELOAD") == 0) {
			user_preload = p->env.v[i].value;
			continue;
		}
		env[k++] = sb_arena_printf(a, "%s=%s", p->env.v[i].name,
					   p->env.v[i].value);
	}
	if (guard) {
		/* the guard first; it removes itself before Python starts */
		env[k++] = user_preload && *user_preload
				   ? sb_arena_printf(a, "LD_PRELOAD=%s:%s", guard,
						     user_preload)
				   : sb_arena_printf(a, "LD_PRELOAD=%s", guard);
		env[k++] = sb_arena_printf(a, "PYSB_POLICY_FD=%d", policy_fd);
		/* make profile: the guard's marks count from our start */
		if (sb_prof_on())
			env[k++] = sb_arena_printf(a, SB_PROF_T0_ENV "=%llu",
						   (unsigned long long)
							   sb_prof_t0());
	}
	env[k] = NULL;
	return env;
}

/* Will CPython install its debug allocator hooks (-X dev, PYTHONMALLOC=
 * *debug, PYTHONDEVMODE)? The guard must then allocate its audit hook entry
 * through the same hooks, or the interpreter aborts when it frees it at
 * exit. The environment counts unless -E or -I ignores it. */
static bool debug_malloc(const struct sb_policy *p, const struct sb_cli *cli)
{
	bool ignore_env = false, dev = false;
	size_t i;

	for (i = 0; i < cli->interp.n; i++) {
		const char *o = cli->interp.v[i], *x = NULL;

		if (o[0] == '-' && o[1] != '-' && o[1] != 'X' && o[1] != 'W' &&
		    strpbrk(o + 1, "EI"))
			ignore_env = true;
		if (strcmp(o, "-X") == 0 && i + 1 < cli->interp.n)
			x = cli->interp.v[++i];
		else if (strncmp(o, "-X", 2) == 0)
			x = o + 2;
		else if (o[0] == '-' && o[1] != '-' && strchr(o, 'X'))
			x = strchr(o, 'X') + 1; /* -BXdev */
		if (x && (strcmp(x, "dev") == 0 || strncmp(x, "dev=", 4) == 0))
			dev = true;
	}
	if (!ignore_env) {
		/* an explicit PYTHONMALLOC decides, even with -X dev */
		for (i = 0; i < p->env.n; i++)
			if (strcmp(p->env.v[i].name, "PYTHONMALLOC") == 0 &&
			    *p->env.v[i].value)
				return strstr(p->env.v[i].value, "debug") != NULL;
		for (i = 0; i < p->env.n; i++)
			if (strcmp(p->env.v[i].name, "PYTHONDEVMODE") == 0 &&
			    *p->env.v[i].value)
				dev = true;
	}
	return dev;
}

static int policy_memfd(const struct sb_policy *p,
			struct sb_blob_facts *facts)
{
	struct sb_buf b = { 0 };
	char cwd[PATH_MAX];
	int fd;

	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	facts->cwd = cwd;
	sb_blob_write(p, facts, &b);
	/* not CLOEXEC: the interpreter inherits it; the guard closes it */
	fd = sb_memfd_text("pysb-policy", b.s, b.len);
	sb_buf_free(&b);
	return fd;
}


/* A learned file is still there (lstat: a dangling link is there too). */
static bool path_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The real path of 'path', or NULL (missing, a loop). */
static const char *real_path(struct sb_arena *a, const char *path)
{
	char buf[PATH_MAX];

	return realpath(path, buf) ? sb_arena_strdup(a, buf) : NULL;
}

/* Learning: python-sb stays as the program's parent and writes the rules
 * when it ends (4.4). What native code opens, execs and connects to is
 * learned through a seccomp filter (learn_native.c), less what
 * os-sandbox=landlock grants implicitly, so that the rules learned also
 * hold under the kernel layer. */
static int learn_run(struct sb_arena *a, const struct sb_policy *p,
		     const struct sb_interp *interp, const struct sb_cli *cli,
		     char **argv, char **env, const int rec[2],
		     const char *const *host_env, struct sb_limits *lim)
{
	struct sb_learn_session s = { 0 };
	const char **trees = sb_arena_alloc(a, 2 * sizeof(*trees));
	char *prefix = sb_arena_strdup(a, interp->real), *cut;
	struct sb_kernel_ctx kctx = { .interp = interp };
	const char *why = NULL;
	char cwd[PATH_MAX], host[256] = { 0 };
	int rc;

	/* the prefix two levels above the real binary: .../versions/X, /usr */
	for (int i = 0; i < 2 && (cut = strrchr(prefix, '/')); i++)
		*cut = '\0';
	trees[0] = *prefix && strcmp(prefix, "/usr") ? prefix : NULL;
	s.arena = a;
	s.ctx.policy = p;
	s.ctx.envp = host_env;
	s.ctx.cwd = getcwd(cwd, sizeof(cwd)) ? cwd : "/";
	s.ctx.home = sb_envp_get(host_env, "HOME");
	/* the records name the home directory by its real path: a home
	 * reached through a link is still the home (never granted whole) */
	if (s.ctx.home && s.ctx.home[0] == '/' && real_path(a, s.ctx.home))
		s.ctx.home = real_path(a, s.ctx.home);
	s.ctx.real_path = real_path;
	s.ctx.python_trees = trees;
	s.ctx.n_python_trees = trees[0] ? 1 : 0;
	s.ctx.exists = path_exists;
	/* a name of one run holds it (mailbox's lock: box.lock.T.HOST.PID) */
	if (gethostname(host, sizeof(host) - 1) == 0 && host[0])
		s.ctx.hostname = sb_arena_strdup(a, host);
	s.path = p->learn_path;
	s.ctx.rule_file = p->learn_path;
	s.display = sb_path_shown(p->learn_path, s.ctx.cwd);
	if (!strcmp(p->learn_path, p->config_path)) {
		s.shadows = (const char *const *)p->shadows;
		s.n_shadows = p->n_shadows;
	}
	/* the guard and its package are implicit paths under landlock */
	switch (sb_find_support(a, &kctx.guard, &kctx.pkgdir, &why)) {
	case -2:
		fputs(why, stderr);
		return SB_EXIT_SETUP;
	case -1:
		kctx.guard = kctx.pkgdir = NULL;
	}
	kctx.cwd = s.ctx.cwd;
	kctx.script = sb_cli_script(cli);
	/* the rule file as it is before the program runs: learning merges
	 * into that, never into what the program writes there meanwhile */
	sb_learn_begin(&s);
	rc = sb_supervise_learning(interp->path, argv, env, rec[1], rec[0], &s,
				   sb_learn_native_new(a, &s, &kctx), lim,
				   cli->channel_fd > 0 ? cli->channel_fd : -1);
	sb_buf_free(&s.pending);
	return rc;
}

/* The run's cgroup around the run: made before the program (or the tool
 * that starts it) and removed after every process of it ended. Under
 * landlock the network supervisor runs the program and reads the cgroup's
 * verdict itself; under unshare and bwrap it runs where the cgroup cannot
 * be seen, so the OOM kill is recognised here; subprocess and none get the
 * limits' own supervisor. */
static int run_limited(struct sb_arena *a, struct sb_limits *lim,
		       enum sb_provider provider, struct sb_kernel_ctx *kctx,
		       const char *path, char **argv, char **env, int fd,
		       bool with_guard)
{
	const char *err = NULL;
	int rc;

	if (sb_limits_setup(a, lim, &err) < 0) {
		fprintf(stderr, "python-sb: the run's cgroup: %s; nothing was "
				"run.\n",
			err);
		sb_limits_cleanup(lim);
		return SB_EXIT_SETUP;
	}
	kctx->limits = lim;
	switch (provider) {
	case SB_PROVIDER_LANDLOCK:
		rc = sb_netsup_run(a, lim->p, kctx, path, argv, env);
		break;
	case SB_PROVIDER_UNSHARE:
		rc = sb_limits_outer_verdict(
			lim, sb_ns_run(a, lim->p, kctx, path, argv, env));
		break;
	case SB_PROVIDER_BWRAP:
		rc = sb_limits_outer_verdict(
			lim, sb_extprov_run(a, lim->p, provider, kctx, argv,
					    env, fd, with_guard));
		break;
	default:
		rc = sb_limits_run(lim, path, argv, env, kctx->channel_fd);
		break;
	}
	sb_limits_cleanup(lim);
	return rc;
}

/* The denial log is the user's record of what was refused: judged as
 * the rule file is (trust.h), so that no other user can edit, swap or
 * remove it. The directories above it, before it is made: */
static bool log_dir_untrusted(struct sb_arena *a, const char *path)
{
	char *dir = sb_arena_strdup(a, path), *slash = strrchr(dir, '/');
	char canon[PATH_MAX], bad[PATH_MAX], msg[PATH_MAX + 512];
	int err;

	if (!slash)
		dir = ".";
	else if (slash == dir)
		dir = "/";
	else
		*slash = '\0';
	if (!realpath(dir, canon) || strlen(canon) + 3 > sizeof(canon))
		return false; /* open() will say why */
	strcat(canon, strcmp(canon, "/") ? "/x" : "x");
	/* above the path as named, and above where its links lead */
	if (!(path[0] == '/' &&
	      (err = sb_trust_dirs_above(path, bad, sizeof(bad)))) &&
	    !(err = sb_trust_dirs_above(canon, bad, sizeof(bad))))
		return false;
	fprintf(stderr, "python-sb: log-file=%s: %s, or name a file "
			"elsewhere; nothing was run.\n",
		path,
		sb_trust_message(msg, sizeof(msg), "the directory", bad,
				 NULL, err, "replace or remove the denial log",
				 sb_trust_dir_fix(err)));
	return true;
}

/* ... and the file opened. True after a message when others could
 * change it. */
static bool log_untrusted(const char *path, int fd, const struct stat *st)
{
	int err = sb_trust_file(fd, NULL, st);
	char msg[PATH_MAX + 512];

	if (!err)
		return false;
	fprintf(stderr, "python-sb: log-file=%s: %s it, or name another "
			"file; nothing was run.\n",
		path,
		sb_trust_message(msg, sizeof(msg), "the file", path, st, err,
				 "change the denial log",
				 err == SB_TRUST_FOREIGN ? "Remove"
				 : err == SB_TRUST_ACL	 ? "setfacl -b"
							 : "chmod go-w"));
	return true;
}

/* The denial log, opened here, before any part of the sandbox is applied:
 * append only, never through a symbolic link, not inherited by exec. The
 * program gets it under os-sandbox=subprocess only (the guard in its
 * process writes it); under landlock and unshare it stays with the
 * supervisor (for unshare, the one ns.c forks inside the namespaces, which
 * inherits it; for bwrap and firejail, the second stage the tool execs)
 * and the guard gets a datagram socket to it. Returns 0 (facts set), or
 * the exit status after a message. */
static int open_log(struct sb_arena *a, const struct sb_policy *p,
		    enum sb_provider provider, struct sb_blob_facts *facts)
{
	int fd, sv[2], on = 1;

	if (!p->log_path || p->learning)
		return 0;
	if (provider == SB_PROVIDER_NONE) {
		fprintf(stderr,
			"python-sb: log-file=%s: os-sandbox=none refuses "
			"nothing, so it writes no denial log; nothing was "
			"run.\n",
			p->log_path);
		return SB_EXIT_SETUP;
	}
	if (log_dir_untrusted(a, p->log_path))
		return SB_EXIT_SETUP;
	fd = open(p->log_path,
		  O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
			  O_NOCTTY | O_NONBLOCK,
		  0600);
	if (fd < 0) {
		fprintf(stderr,
			"python-sb: log-file=%s: open: %s; nothing was run.\n",
			p->log_path, strerror(errno));
		if (errno == ELOOP)
			fprintf(stderr, "Hint: the log file may not be a "
					"symbolic link.\n");
		return SB_EXIT_SETUP;
	}
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr,
			"python-sb: log-file=%s: not a regular file; nothing "
			"was run.\n",
			p->log_path);
		close(fd);
		return SB_EXIT_SETUP;
	}
	if (log_untrusted(p->log_path, fd, &st)) {
		close(fd);
		return SB_EXIT_SETUP;
	}
	facts->log_fd_set = true;
	if (provider == SB_PROVIDER_SUBPROCESS) {
		if (fcntl(fd, F_SETFD, 0) < 0)
			goto fail;
		facts->log_fd = fd;
		/* the limits' supervisor records a limit's end (no relay:
		 * the guard writes its own records here) */
		sb_suplog_set(fd, -1, -1, p->log_max);
		return 0;
	}
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		goto fail;
	/* the kernel tells the sender's pid: the program cannot name
	 * another process in the records it sends */
	if (setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(sv[1], F_SETFD, 0) < 0)
		goto fail;
	shutdown(sv[0], SHUT_WR);
	shutdown(sv[1], SHUT_RD);
	/* bwrap and firejail exec python-sb's second stage, which takes
	 * the log and its end of the relay across (stage.c) */
	if ((provider == SB_PROVIDER_BWRAP ||
	     provider == SB_PROVIDER_FIREJAIL) &&
	    (fcntl(fd, F_SETFD, 0) < 0 || fcntl(sv[0], F_SETFD, 0) < 0))
		goto fail;
	facts->log_fd = sv[1];
	facts->log_relay = true;
	sb_suplog_set(fd, sv[0], sv[1], p->log_max);
	return 0;
fail:
	fprintf(stderr, "python-sb: log-file=%s: %s; nothing was run.\n",
		p->log_path, strerror(errno));
	return SB_EXIT_SETUP;
}

static int run_with(struct sb_arena *a, const struct sb_policy *p,
		    const struct sb_cli *cli, const struct sb_interp *interp,
		    const char *const *envp)
{
	const char *guard = NULL, *pkgdir = NULL;
	bool with_guard = p->py_sandbox;
	struct sb_blob_facts facts = { 0 };
	struct timespec now;
	int rec[2] = { -1, -1 };
	/* an interactive REPL: CPython prints its banner before anything can
	 * be audited, so it is asked for -q and the guard prints ours */
	bool repl = !cli->command.n && isatty(0) && !has_quiet(cli);
	char **argv, **env;
	size_t i, k = 0;
	int fd = -1, rc;

	enum sb_provider provider = p->provider;
	struct sb_kernel_caps caps;
	struct sb_limits lim;
	const char *refused;

	/* expose-made=: an entry born before this was not made by the run
	 * (the coarse clock is the one file systems stamp births with) */
	if (clock_gettime(CLOCK_REALTIME_COARSE, &now) == 0) {
		facts.started_sec = now.tv_sec;
		facts.started_nsec = now.tv_nsec;
	}
	sb_kernel_probe(&caps);
	if (provider == SB_PROVIDER_AUTO) {
		/* the strongest this kernel offers, and say what is lost */
		provider = caps.landlock_abi >= 4 && caps.seccomp
				   ? SB_PROVIDER_LANDLOCK
				   : SB_PROVIDER_SUBPROCESS;
		if (provider == SB_PROVIDER_SUBPROCESS)
			fprintf(stderr,
				"python-sb: warning: os-sandbox=auto: %s; running "
				"'subprocess': the Python layer only, no kernel "
				"confinement of files, network or system calls.\n",
				sb_kernel_describe(a, p, SB_PROVIDER_LANDLOCK,
						   &caps));
	}
	switch (provider) {
	case SB_PROVIDER_NONE:
		/* no guard: the library only marks the process as in the
		 * sandbox and loads pysandboxes, so that @sandbox calls run
		 * in place (python-sb(1), PROVIDERS); it installs nothing */
		repl = false;
		break;
	case SB_PROVIDER_SUBPROCESS:
	case SB_PROVIDER_LANDLOCK:
	case SB_PROVIDER_UNSHARE:
	case SB_PROVIDER_BWRAP:
	case SB_PROVIDER_FIREJAIL:
		break;
	case SB_PROVIDER_QEMU:
		/* before the log is opened: a bad qemu.* key, or a
		 * limit-memory the guest's memory cannot hold */
		if ((refused = sb_qemu_refusal(a, p))) {
			fprintf(stderr, "python-sb: %s; nothing was run.\n",
				refused);
			return SB_EXIT_SETUP;
		}
		if (cli->keep_fds.n) {
			fprintf(stderr,
				"python-sb: --pysandboxes-keep-fd=%d: "
				"os-sandbox=qemu carries no descriptor of the "
				"caller's into the guest (partial mode's "
				"--pysandboxes-channel aside); nothing was "
				"run.\n",
				cli->keep_fds.v[0]);
			return SB_EXIT_SETUP;
		}
		break;
	default:
		fprintf(stderr,
			"python-sb: os-sandbox=%s is not available in this "
			"version of python-sb; nothing was run. Use "
			"os-sandbox=subprocess (the Python layer) meanwhile.\n",
			sb_provider_name(provider));
		return SB_EXIT_SETUP;
	}
	sb_limits_plan(a, p, provider, geteuid(), &lim);
	if ((refused = sb_limits_refusal(a, &lim))) {
		fprintf(stderr, "python-sb: %s; nothing was run.\n", refused);
		return SB_EXIT_SETUP;
	}
	rc = open_log(a, p, provider, &facts);
	if (rc)
		return rc;
	if (provider == SB_PROVIDER_LANDLOCK && p->log_path && !p->learning &&
	    !with_guard)
		facts.log_fd_set = false; /* the supervisor logs alone */
	if (with_guard) {
		const char *bad = NULL;

		if (sb_find_support(a, &guard, &pkgdir, &bad) < 0) {
			if (bad) {
				fputs(bad, stderr);
				return SB_EXIT_SETUP;
			}
			fprintf(stderr,
				"python-sb: cannot find the guard library "
				"(%s) or the pysandboxes package: the "
				"installation is incomplete; nothing was run.\n",
				SB_GUARD_LIB);
			return SB_EXIT_SETUP;
		}
		const char *why = unguardable(a, interp->real);

		if (why) {
			fprintf(stderr,
				"python-sb: the interpreter '%s' cannot be "
				"guarded: %s; nothing was run.\n",
				interp->real, why);
			return SB_EXIT_SETUP;
		}
		if (strpbrk(guard, " :")) {
			fprintf(stderr,
				"python-sb: the guard library path '%s' holds a "
				"space or a colon, which LD_PRELOAD cannot "
				"carry; nothing was run.\n",
				guard);
			return SB_EXIT_SETUP;
		}
		facts.pkgdir = pkgdir;
		facts.home = sb_envp_get(envp, "HOME");
		facts.debug_malloc = debug_malloc(p, cli);
		facts.repl_banner = repl;
		facts.learn_fd = -1;
		if (p->learning) {
			/* the guard writes its records here; the read end
			 * stays with python-sb, which supervises the run */
			if (pipe2(rec, O_CLOEXEC) < 0 ||
			    fcntl(rec[1], F_SETFD, 0) < 0) {
				fprintf(stderr, "python-sb: pipe: %s\n",
					strerror(errno));
				return SB_EXIT_SETUP;
			}
			facts.learn_fd = rec[1];
		}
		fd = policy_memfd(p, &facts);
		if (fd < 0) {
			fprintf(stderr, "python-sb: memfd for the policy: %s\n",
				strerror(-fd));
			return SB_EXIT_SETUP;
		}
	}
	if (fd < 0 && (provider == SB_PROVIDER_BWRAP ||
		       provider == SB_PROVIDER_FIREJAIL ||
		       provider == SB_PROVIDER_QEMU)) {
		/* the second stage reads the rules from it (stage.h) */
		facts.home = sb_envp_get(envp, "HOME");
		facts.learn_fd = -1;
		fd = policy_memfd(p, &facts);
		if (fd < 0) {
			fprintf(stderr, "python-sb: memfd for the policy: %s\n",
				strerror(-fd));
			return SB_EXIT_SETUP;
		}
	}
	struct sb_kernel_ctx kctx = { .interp = interp,
				      .guard = guard,
				      .pkgdir = pkgdir,
				      .script = sb_cli_script(cli),
				      .channel_fd = cli->channel_fd,
				      .keep_fds = cli->keep_fds.v,
				      .n_keep_fds = cli->keep_fds.n };
	char kcwd[PATH_MAX];

	kctx.cwd = getcwd(kcwd, sizeof(kcwd)) ? kcwd : "/";
	env = build_env(a, p, guard, fd, p->learning ? envp : NULL);
	sb_prof_mark("blob-env");
	repl = repl && with_guard;
	argv = sb_arena_alloc(a, (cli->interp.n + cli->command.n + 5) *
					 sizeof(*argv));
	argv[k++] = (char *)interp->path;
	if (with_guard) {
		/* fail closed if the guard is not preloaded (guard_seal.h) */
		argv[k++] = SB_SEAL_FLAG;
		argv[k++] = SB_SEAL_CODE;
	}
	if (repl)
		argv[k++] = "-q";
	for (i = 0; i < cli->interp.n; i++)
		argv[k++] = (char *)cli->interp.v[i];
	for (i = 0; i < cli->command.n; i++)
		argv[k++] = (char *)cli->command.v[i];
	argv[k] = NULL;
	if (p->learning) {
		const char *err = NULL;

		/* the limits hold while learning too */
		if (sb_limits_setup(a, &lim, &err) < 0) {
			fprintf(stderr, "python-sb: the run's cgroup: %s; "
					"nothing was run.\n",
				err);
			sb_limits_cleanup(&lim);
			return SB_EXIT_SETUP;
		}
		rc = learn_run(a, p, interp, cli, argv, env, rec, envp,
			       p->any_limit ? &lim : NULL);
		sb_limits_cleanup(&lim);
		return rc;
	}
	/* qemu: the guest's second stage holds the kernel layer */
	if (provider == SB_PROVIDER_QEMU) {
		kctx.limits = &lim; /* held in the guest (SB_MECH_GUEST) */
		return sb_qemu_run(a, p, &kctx, argv, env, fd, with_guard);
	}
	/* firejail is exec'd: its second stage holds the limits */
	if (provider == SB_PROVIDER_FIREJAIL) {
		kctx.limits = &lim;
		return sb_extprov_run(a, p, provider, &kctx, argv, env, fd,
				      with_guard);
	}
	/* under landlock python-sb always stays as the supervisor (Landlock
	 * does not judge a connect() to a named Unix socket, nor mode and
	 * time changes) and the child applies the kernel layer (netsup.c);
	 * unshare and bwrap wait for their sandbox; with limits, or as a
	 * partial-mode worker (which ends with its caller, and leaves no
	 * process behind: sb_sup_channel), python-sb stays as the parent
	 * under subprocess and none too, to end the run */
	if ((provider != SB_PROVIDER_SUBPROCESS &&
	     provider != SB_PROVIDER_NONE) ||
	    p->any_limit || cli->channel_fd > 0)
		return run_limited(a, &lim, provider, &kctx, interp->path,
				   argv, env, fd, with_guard);
	sb_prof_dump("launcher");
	fflush(NULL);
	sb_caller_give();
	execve(interp->path, argv, env);
	fprintf(stderr, "python-sb: exec %s: %s\n", interp->path,
		strerror(errno));
	return SB_EXIT_SETUP;
}

int sb_run(const struct sb_policy *p, const struct sb_cli *cli,
	   const struct sb_interp *interp, const char *const *envp)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_ttystate tty;
	int rc;

	/* where python-sb stays for the run (it execs the interpreter
	 * under subprocess and none, firejail under firejail), it gives
	 * the caller's descriptors back as they were */
	sb_ttystate_save(&tty);
	/* the kernel layer's runs: under subprocess and none the program
	 * could set the bits back itself (no supervisor judges its chmod) */
	if (p->provider != SB_PROVIDER_SUBPROCESS &&
	    p->provider != SB_PROVIDER_NONE)
		sb_ttystate_narrow_pipes(&tty);
	rc = run_with(a, p, cli, interp, envp);
	sb_ttystate_restore(&tty);
	sb_arena_free(a);
	return rc;
}
