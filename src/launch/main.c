/* main.c - python-sb's entry point. It only orchestrates: split the command
 * line, find the interpreter and the rule file, parse the policy, apply the
 * lock, then explain or run. Every refusal exits before anything runs: 2 for
 * usage errors, 255 for policy errors and lock violations (python-sb(1), EXIT
 * STATUS).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caller.h"
#include "exit_status.h"
#include "cli.h"
#include "config.h"
#include "dns.h"
#include "explain.h"
#include "inherit.h"
#include "run_limits.h"
#include "interp.h"
#include "kernel.h"
#include "landlock.h"
#include "learn_file.h"
#include "policy.h"
#include "prof.h"
#include "qemu.h"
#include "review.h"
#include "run.h"
#include "selfprotect.h"
#include "stage.h"


extern char **environ;

static int usage_error(const char *err)
{
	fprintf(stderr, "%s\n%s\nTry `python-sb -h' for more information.\n",
		err, sb_cli_usage);
	return SB_EXIT_USAGE;
}


/* The module an -m command runs ("-m pkg.mod" or "-mpkg.mod"), or NULL. */
static const char *module_of(const struct sb_cli *cli)
{
	const char *first = cli->command.n ? cli->command.v[0] : "";

	if (strcmp(first, "-m") == 0)
		return cli->command.n > 1 ? cli->command.v[1] : NULL;
	if (strncmp(first, "-m", 2) == 0)
		return first + 2;
	return NULL;
}

/* -I and -P keep the current directory out of sys.path. */
static bool safe_path(const struct sb_cli *cli)
{
	size_t i;

	for (i = 0; i < cli->interp.n; i++) {
		const char *o = cli->interp.v[i];

		if (o[0] == '-' && o[1] != '-' && o[1] != 'X' && o[1] != 'W' &&
		    strpbrk(o + 1, "IP"))
			return true;
	}
	return false;
}

/* The directory of an -m module found where -m looks first, the current
 * directory: pkg/mod.py, pkg/mod/__init__.py or a namespace directory.
 * Installed modules are not searched: finding them means importing their
 * parent packages, which would run code before the sandbox. */
static const char *module_dir(struct sb_arena *a, const char *mod,
			      const char *cwd)
{
	char *rel = sb_arena_strdup(a, mod), *p, *base, *slash;
	struct stat st;

	for (p = rel; *p; p++)
		if (*p == '.')
			*p = '/';
	base = sb_path_join(a, cwd, rel);
	if (stat(sb_arena_printf(a, "%s.py", base), &st) == 0 &&
	    S_ISREG(st.st_mode)) {
		slash = strrchr(base, '/');
		*slash = '\0';
		return *base ? base : "/";
	}
	if (stat(base, &st) == 0 && S_ISDIR(st.st_mode))
		return base; /* a package, regular or namespace */
	return NULL;
}

/* The rule file (2.1.1): a name with a '/' as given; a bare name next to
 * the script, or in the -m module's directory, when it is there; else in
 * the current directory, and *shadow is then the script's or module's
 * directory (where one would have been read first). */
static const char *find_config(struct sb_arena *a, const struct sb_cli *cli,
			       const char *cwd, const char **shadow)
{
	const char *name = cli->config ? cli->config : ".py-sandboxes";
	const char *script = sb_cli_script(cli), *mod = module_of(cli);
	const char *dir = NULL, *cand;
	char *d;
	struct stat st;

	if (strchr(name, '/'))
		return name;
	if (script && strchr(script, '/')) {
		d = sb_path_join(a, cwd, script);
		*strrchr(d, '/') = '\0';
		dir = *d ? d : "/";
	} else if (mod && *mod && !safe_path(cli)) {
		dir = module_dir(a, mod, cwd);
	}
	if (!dir)
		return name;
	cand = sb_arena_printf(a, "%s/%s", strcmp(dir, "/") ? dir : "", name);
	if (stat(cand, &st) == 0)
		return cand;
	*shadow = dir;
	return name;
}

/* The canonical paths where the next run would read a rule file of this
 * name before the one found: the script's or module's directory (2.1.1),
 * the packages partial mode names (2.1.2, --pysandboxes-shadowed). A
 * directory that is not there leads to none, nor does the rule file's own
 * (`python-sb ./script.py`: the current directory is the script's). */
static void shadow_paths(struct sb_arena *a, const struct sb_cli *cli,
			 const char *shadow, const char *cwd,
			 struct sb_parse_opts *o)
{
	const char *name = cli->config ? cli->config : ".py-sandboxes";
	const char **v = sb_arena_alloc(a, (cli->shadowed.n + 1) * sizeof(*v));
	char real[PATH_MAX], *own = sb_path_join(a, cwd, o->config_path);
	const char *own_base = strrchr(own, '/') + 1;
	size_t i, n = 0;

	/* the rule file's own canonical path, its directory resolved */
	own[own_base - own - 1] = '\0';
	own = realpath(*own ? own : "/", real)
		      ? sb_arena_printf(a, "%s/%s", strcmp(real, "/") ? real : "",
					own_base)
		      : NULL;

	if (strchr(name, '/')) { /* partial mode passes the full path */
		name = strrchr(name, '/') + 1;
		shadow = NULL;
	}
	for (i = 0; i <= cli->shadowed.n; i++) {
		const char *dir = i < cli->shadowed.n ? cli->shadowed.v[i]
						      : shadow;

		if (dir && *name && realpath(dir, real))
			v[n] = sb_arena_printf(a, "%s/%s",
					       strcmp(real, "/") ? real : "",
					       name);
		else
			continue;
		if (!own || strcmp(v[n], own))
			n++;
	}
	o->shadows = v;
	o->n_shadows = n;
}

/* The standard library of an interpreter binary, from its place alone
 * (<prefix>/bin/pythonX.Y -> <prefix>/lib/pythonX.Y, the directory that
 * holds os.py), canonical; NULL when not found that way. */
static const char *stdlib_of(struct sb_arena *a, const char *real)
{
	const char *base = real ? strrchr(real, '/') : NULL, *cand;
	char prefix[PATH_MAX], canon[PATH_MAX];
	char *slash;
	int minor;

	if (!base || sscanf(base, "/python3.%d", &minor) != 1 ||
	    strlen(real) >= sizeof(prefix))
		return NULL;
	strcpy(prefix, real);
	slash = strrchr(prefix, '/');
	*slash = '\0';
	slash = strrchr(prefix, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	cand = sb_arena_printf(a, "%s/lib/python3.%d/os.py", prefix, minor);
	if (!realpath(cand, canon))
		return NULL;
	*strrchr(canon, '/') = '\0';
	return sb_arena_strdup(a, canon);
}

static const char *provider_verdict(struct sb_arena *a,
				    const struct sb_policy *p)
{
	struct sb_kernel_caps caps;

	switch (p->provider) {
	case SB_PROVIDER_SUBPROCESS:
		return "subprocess: the Python layer in the interpreter the "
		       "program runs in; no kernel isolation.";
	case SB_PROVIDER_NONE:
		return "none: no guard at all; the program runs as under "
		       "python, with the rules' environment.";
	case SB_PROVIDER_QEMU:
		return sb_qemu_describe(a, p);
	default:
		sb_kernel_probe(&caps);
		return sb_kernel_describe(a, p, p->provider, &caps);
	}
}

/* What os-sandbox=landlock (or auto, when it picks landlock) keeps
 * read-only by a mount inside writable trees; the namespace providers
 * bind read-only themselves (mountplan.c), firejail and subprocess do not
 * (weaknesses.md 57). */
static const char *kept_by_mount(struct sb_arena *a, const struct sb_policy *p,
				 const struct sb_interp *interp)
{
	struct sb_kernel_ctx kctx = { .interp = interp };
	struct sb_kernel_caps caps;

	if (p->learning || (p->provider != SB_PROVIDER_LANDLOCK &&
			    p->provider != SB_PROVIDER_AUTO))
		return NULL;
	sb_kernel_probe(&caps);
	if (caps.landlock_abi < SB_LANDLOCK_MIN_ABI || !caps.seccomp)
		return NULL;
	return sb_selfprotect_describe(a, p, &kctx);
}

/* Which mechanism holds each limit under the provider that would run. */
static void limit_lines(struct sb_arena *a, const struct sb_policy *p,
			struct sb_explain_ctx *ctx)
{
	enum sb_provider provider = p->provider;
	struct sb_kernel_caps caps;
	struct sb_limits lim;
	const char **v;
	size_t i, n = 0;

	if (!p->any_limit)
		return;
	if (provider == SB_PROVIDER_AUTO) {
		sb_kernel_probe(&caps);
		provider = caps.landlock_abi >= 4 && caps.seccomp
				   ? SB_PROVIDER_LANDLOCK
				   : SB_PROVIDER_SUBPROCESS;
	}
	sb_limits_plan(a, p, provider, geteuid(), &lim);
	v = sb_arena_alloc(a, SB_LIMIT_COUNT * sizeof(*v));
	for (i = 0; i < SB_LIMIT_COUNT; i++)
		if ((v[n] = sb_limits_describe(a, &lim, (enum sb_limit)i)))
			n++;
	ctx->limits = v;
	ctx->n_limits = n;
}

static void print_warnings(const struct sb_policy *p)
{
	size_t i;

	for (i = 0; i < p->warnings.n; i++)
		fprintf(stderr, "python-sb: warning: %s\n",
			p->warnings.v[i].text);
}

/* learn=false in a rule file: the command line cannot add rules (2.11). */
static int check_lock(const struct sb_policy *p, const struct sb_cli *cli)
{
	struct sb_buf b = { 0 };
	size_t i;

	if (!p->locked || !cli->rules.n)
		return 0;
	for (i = 0; i < cli->rules.n; i++) {
		const char *r = cli->rules.v[i];
		size_t n = strlen(r);

		sb_buf_printf(&b, "%s--%.*s", i ? " " : "",
			      (int)(r[n - 1] == '=' ? n - 1 : n), r);
	}
	fprintf(stderr,
		"%s: 'learn=false' locks the rules, the command line cannot "
		"add %s\n",
		sb_ref_format(p->arena, p->lock_ref), b.s);
	sb_buf_free(&b);
	return -1;
}

/* --pysandboxes-settings: what partial mode's parent needs of the policy,
 * one "key value" a line after a versioned first line (the pysandboxes
 * package reads it; people read --pysandboxes-explain). */
static int print_settings(const struct sb_policy *p)
{
	printf("pysb-settings 1\n"
	       "provider %s\n"
	       "learning %d\n",
	       sb_provider_name(p->provider), p->learning ? 1 : 0);
	if (p->learning)
		printf("learn-target %s\n", p->learn_path);
	printf("result-mode %s\n"
	       "result-guard %s\n",
	       p->result_mode == SB_RESULT_OBJECTS ? "objects" : "data-only",
	       p->result_guard ? "true" : "false");
	return fflush(stdout) == 0 ? 0 : SB_EXIT_SETUP;
}

/* --pysandboxes-learn-result=MODE[,fresh][,made]: partial mode's parent
 * saw the results of a learning run; the result mode goes into its rule
 * file through the launcher's writer (learn_file.c), never the package's.
 * ',made': the rule file was absent when the parent began learning, so the
 * one there now is that run's (it no longer learns by itself). */
static int learn_result(struct sb_arena *a, const struct sb_policy *p,
			const char *value, const char *cwd)
{
	const char *file = p->result_mode_ref.file;
	enum sb_mode_origin origin =
		!file || !strcmp(file, SB_REF_IMPLICIT) ? SB_MODE_IMPLICIT
		: !strcmp(file, SB_REF_ARG)		 ? SB_MODE_ARG
							 : SB_MODE_FILE;
	const char *path = p->learning ? p->learn_path : p->config_path;
	bool fresh = strstr(value, ",fresh") != NULL;
	struct stat st;

	if (!p->learning && strstr(value, ",made") && p->config_exists) {
		fresh = false; /* the learning run wrote it */
	} else if (!p->learning) {
		fprintf(stderr, "python-sb: --pysandboxes-learn-result: the "
				"rules do not learn (no 'learn' rule); nothing "
				"was written.\n");
		return SB_EXIT_SETUP;
	}
	/* the learning run moved the rule file it made to the first place
	 * the next run searches (learn_file.c, move_to_shadow): the result
	 * mode follows it, and that save was this run's */
	if (p->learning && !p->config_exists &&
	    !strcmp(path, p->config_path) &&
	    p->n_shadows && lstat(p->shadows[0], &st) == 0 &&
	    S_ISREG(st.st_mode)) {
		path = p->shadows[0];
		fresh = false;
	}
	return sb_learn_save_result_mode(a, path, sb_path_shown(path, cwd),
					 cwd, sb_str_starts(value, "objects"),
					 p->result_mode == SB_RESULT_OBJECTS,
					 origin, fresh) < 0
		       ? SB_EXIT_SETUP
		       : 0;
}

/* The descriptors above 2: the caller's named ones must be open, the rest
 * are closed before python-sb opens anything of its own (inherit.h). */
static int close_inherited(struct sb_arena *a, const struct sb_cli *cli,
			   struct sb_inherited *closed)
{
	int *keep = sb_arena_alloc(a, (cli->keep_fds.n + 1) * sizeof(*keep));
	size_t i, n = 0;
	char err[160];

	for (i = 0; i < cli->keep_fds.n; i++) {
		if (fcntl(cli->keep_fds.v[i], F_GETFD) < 0) {
			fprintf(stderr,
				"python-sb: --pysandboxes-keep-fd=%d: not an "
				"open descriptor; nothing was run.\n",
				cli->keep_fds.v[i]);
			return SB_EXIT_SETUP;
		}
		keep[n++] = cli->keep_fds.v[i];
	}
	if (cli->channel_fd) {
		if (fcntl(cli->channel_fd, F_GETFD) < 0) {
			fprintf(stderr,
				"python-sb: --pysandboxes-channel=%d: not an "
				"open descriptor; nothing was run.\n",
				cli->channel_fd);
			return SB_EXIT_SETUP;
		}
		keep[n++] = cli->channel_fd;
	}
	if (sb_inherit_close(keep, n, closed, err, sizeof(err)) < 0) {
		fprintf(stderr, "python-sb: %s; nothing was run.\n", err);
		return SB_EXIT_SETUP;
	}
	return 0;
}

/* A learning run is where a program that needed one of them fails first:
 * say which were closed and how to pass one on. */
static void note_closed(const struct sb_inherited *c)
{
	size_t i, shown = c->n_closed < SB_INHERIT_SHOWN ? c->n_closed
							 : SB_INHERIT_SHOWN;

	fprintf(stderr, "python-sb: note: closed the descriptor%s ",
		c->n_closed > 1 ? "s" : "");
	for (i = 0; i < shown; i++)
		fprintf(stderr, "%s%d", i ? ", " : "", c->closed[i]);
	if (c->n_closed > shown)
		fprintf(stderr, " and %zu more", c->n_closed - shown);
	fprintf(stderr, " that the caller left open; to pass one on: "
			"--pysandboxes-keep-fd=%d (python-sb(1), INHERITED "
			"DESCRIPTORS).\n",
		c->closed[0]);
}

static int run_main(struct sb_arena *a, struct sb_policy **pp, int argc,
		    char **argv)
{
	const struct sb_rule_src implicit[] = {
		/* the REPL can use colours (py-sandboxes(5), IMPLICIT RULES) */
		{ "env=TERM=${TERM}", SB_REF_IMPLICIT },
	};
	const char *const *envp = (const char *const *)environ;
	struct sb_parse_opts opts = { 0 };
	struct sb_policy *p = NULL;
	struct sb_interp interp = { 0 };
	int status;
	struct sb_cli cli;
	struct sb_inherited closed;
	const char *err = NULL, *shadow = NULL;
	char cwd[4096];
	int rc;

	if (sb_cli_parse(a, argc, argv, &cli, &err) != 0)
		return usage_error(err);
	sb_prof_mark("cli");
	if (cli.help) {
		fputs(sb_cli_help, stdout);
		return 0;
	}
	rc = close_inherited(a, &cli, &closed);
	if (rc)
		return rc;
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "python-sb: getcwd: %s\n", strerror(errno));
		return SB_EXIT_SETUP;
	}
	if (sb_interp_find(a, cli.python, envp, cwd, &interp, &err) != 0) {
		fprintf(stderr, "python-sb: %s\n", err);
		return SB_EXIT_SETUP;
	}
	sb_prof_mark("interp");
	if (!cli.command.n && cli.interp.n &&
	    sb_str_starts(cli.interp.v[cli.interp.n - 1], "--help-")) {
		/* --help-env, --help-xoptions, --help-all: CPython prints and
		 * exits while parsing its options; no code runs */
		execl(interp.path, interp.path, cli.interp.v[cli.interp.n - 1],
		      (char *)NULL);
		fprintf(stderr, "python-sb: exec %s: %s\n", interp.path,
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	if (cli.version) {
		/* `python -V` stops while parsing its options: no code runs */
		execl(interp.path, interp.path, "-V", (char *)NULL);
		fprintf(stderr, "python-sb: exec %s: %s\n", interp.path,
			strerror(errno));
		return SB_EXIT_SETUP;
	}

	opts.config_path = find_config(a, &cli, cwd, &shadow);
	shadow_paths(a, &cli, shadow, cwd, &opts);
	opts.cli_rules = cli.rules.v;
	opts.n_cli_rules = cli.rules.n;
	opts.implicit_rules = implicit;
	opts.n_implicit_rules = SB_ARRAY_LEN(implicit);
	opts.envp = envp;
	opts.cwd = cwd;
	opts.resolve = sb_dns_resolve;
	rc = sb_policy_parse(&opts, &p);
	sb_prof_mark("policy");
	*pp = p; /* freed by main, whatever the path */
	if (rc != 0) {
		fprintf(stderr, "python-sb: cannot parse the policy: %s\n",
			strerror(-rc));
		return SB_EXIT_SETUP;
	}
	if (!cli.explain || p->errors.n)
		print_warnings(p); /* explain lists them itself */
	if (p->errors.n) {
		struct sb_buf b = { 0 };

		sb_policy_format_errors(p, &b);
		fprintf(stderr, "%s\n", b.s);
		sb_buf_free(&b);
		return SB_EXIT_SETUP;
	}
	if (check_lock(p, &cli) != 0)
		return SB_EXIT_SETUP;
	if (p->learning && closed.n_closed && !cli.settings &&
	    !cli.learn_result && !cli.explain)
		note_closed(&closed);
	if (cli.settings)
		return print_settings(p);
	if (cli.learn_result)
		return learn_result(a, p, cli.learn_result, cwd);
	if (cli.explain) {
		struct sb_explain_ctx ctx = {
			.provider_verdict = provider_verdict(a, p),
			.kept = kept_by_mount(a, p, &interp),
			.interpreter = sb_arena_printf(a, "%s (%s)", interp.path,
						       interp.source),
			.stdlib = stdlib_of(a, interp.real),
		};
		struct sb_buf b = { 0 };

		limit_lines(a, p, &ctx);
		sb_explain(p, &ctx, &b);
		fputs(b.s, stdout);
		sb_buf_free(&b);
		return 0;
	}
	status = sb_run(p, &cli, &interp, envp);
	return status;
}

int main(int argc, char **argv)
{
	struct sb_arena *a;
	struct sb_policy *p = NULL;
	int rc, bad = -1;

	/* before anything is opened: no file of python-sb's may take the
	 * number of a closed standard descriptor */
	if (sb_caller_take(&bad) < 0) {
		/* said where stderr is open; else the status tells */
		fprintf(stderr,
			"python-sb: descriptor %d is closed and /dev/null cannot "
			"hold its place: %s; nothing was run.\n",
			bad, strerror(errno));
		return SB_EXIT_SETUP;
	}
	/* bwrap and firejail run python-sb again inside (stage.h) */
	if (argc > 1 && sb_str_starts(argv[1], SB_STAGE_FLAG))
		return sb_stage_main(argc, argv);
	/* a command of its own: reads diffs, runs nothing (review.h) */
	if (argc > 1 && strcmp(argv[1], "--pysandboxes-review") == 0)
		return sb_review_main(argc - 1, argv + 1);
	sb_prof_start();
	a = sb_arena_new();
	rc = run_main(a, &p, argc, argv);

	sb_policy_free(p);
	sb_arena_free(a);
	return rc;
}
