/* kernel.c - the kernel layer's entry points: what this kernel offers, what
 * a provider would enforce here (one line for --pysandboxes-explain and the
 * auto warning), and applying os-sandbox=landlock (Landlock, then seccomp)
 * to the launcher itself just before it execs the interpreter. It decides
 * fail-closed: a named provider that cannot run is an error, never a quiet
 * run with less isolation. It must not exec, fork or exit: run.c does.
 */
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "landlock.h"
#include "seccomp_filter.h"

#define HINT_LANDLOCK                                                          \
	"os-sandbox=landlock needs Linux 6.7 or later with Landlock enabled "  \
	"(lsm=...landlock... on the kernel command line); or use "             \
	"os-sandbox=subprocess"

void sb_kernel_probe(struct sb_kernel_caps *caps)
{
	caps->landlock_abi = sb_landlock_abi();
	caps->seccomp = sb_seccomp_available();
}

/* Why landlock cannot run here, or NULL when it can. */
static const char *landlock_missing(struct sb_arena *a,
				    const struct sb_kernel_caps *caps)
{
	if (caps->landlock_abi == 0)
		return "this kernel has no Landlock (not built in, or not in "
		       "the lsm= list)";
	if (caps->landlock_abi < SB_LANDLOCK_MIN_ABI)
		return sb_arena_printf(a,
				       "this kernel's Landlock ABI is %d, and "
				       "ABI %d (Linux 6.7) is needed for the "
				       "TCP rules of net=",
				       caps->landlock_abi, SB_LANDLOCK_MIN_ABI);
	if (!caps->seccomp)
		return "this kernel cannot load seccomp filters";
	return NULL;
}

/* 'masked': the provider masks ignore= in its own root (unshare). */
static const char *describe_landlock(struct sb_arena *a,
				     const struct sb_policy *p, int abi,
				     bool masked)
{
	struct sb_landlock_net net;
	struct sb_buf b = { 0 };
	const char *s;

	sb_landlock_net_plan(p, abi, &net);
	sb_buf_printf(&b, "landlock (ABI %d) + seccomp: files", abi);
	if (net.connect_handled && net.bind_handled)
		sb_buf_puts(&b, ", TCP ports");
	else if (net.connect_handled)
		sb_buf_puts(&b, ", TCP connect ports");
	else if (net.bind_handled)
		sb_buf_puts(&b, ", TCP bind ports");
	if (abi >= 6)
		sb_buf_puts(&b, ", abstract Unix sockets and signals");
	sb_buf_puts(&b, " confined by the kernel; ");
	/* with net= rules Landlock's TCP ports are a second fence only */
	if (p->any_net_rule)
		sb_buf_puts(&b, "net= (TCP and UDP, addresses and ports, bind "
				"and listen) and named Unix sockets judged by "
				"python-sb as the network supervisor");
	else
		sb_buf_puts(&b, "no inet socket can be made (no net= rule); "
				"named Unix sockets judged by python-sb as the "
				"network supervisor");
	if (abi < 6)
		sb_buf_puts(&b, "; abstract Unix sockets and signals are not "
				"scoped (ABI 6 needed)");
	if (p->ignores.n)
		sb_buf_puts(&b, masked ? "; ignore= masked in the new root "
					 "when the run starts"
				       : "; ignore= is not enforced by the "
					 "kernel");
	sb_buf_puts(&b, ".");
	s = sb_arena_strdup(a, b.s);
	sb_buf_free(&b);
	return s;
}

const char *sb_kernel_describe(struct sb_arena *a, const struct sb_policy *p,
			       enum sb_provider provider,
			       const struct sb_kernel_caps *caps)
{
	const char *why = landlock_missing(a, caps);

	switch (provider) {
	case SB_PROVIDER_LANDLOCK:
		if (why)
			return sb_arena_printf(a, "landlock cannot run here: %s",
					       why);
		return describe_landlock(a, p, caps->landlock_abi, false);
	case SB_PROVIDER_AUTO:
		if (why)
			return sb_arena_printf(
				a,
				"auto picks subprocess, the Python layer only: "
				"landlock cannot run here: %s.",
				why);
		return sb_arena_printf(a,
				       "auto picks the strongest provider here, "
				       "%s",
				       describe_landlock(a, p,
							 caps->landlock_abi,
							 false));
	case SB_PROVIDER_UNSHARE:
		if (why)
			return sb_arena_printf(a, "unshare cannot run here: %s.",
					       why);
		return sb_arena_printf(
			a,
			"new mount, pid, IPC, UTS and cgroup namespaces (and "
			"user when not root, network without net=), a root "
			"holding only the exposed paths and the interpreter, "
			"then %s",
			describe_landlock(a, p, caps->landlock_abi, true));
	case SB_PROVIDER_BWRAP:
		return "bubblewrap's namespaces and a root holding only the "
		       "exposed paths and the interpreter; python-sb's own "
		       "Landlock, seccomp filter and network supervisor are "
		       "not applied (weaknesses.md 33).";
	case SB_PROVIDER_FIREJAIL:
		return "firejail's namespaces, seccomp filter and capability "
		       "drop, with the host's /usr still visible; only with "
		       "py-sandbox=false, since the guard cannot be carried "
		       "through firejail (weaknesses.md 33).";
	default:
		return sb_arena_printf(a,
				       "%s is not available in this version "
				       "of python-sb: the run fails closed "
				       "(exit 255) rather than run with less "
				       "isolation.",
				       sb_provider_name(provider));
	}
}

/* The script the interpreter will run, or NULL (-c, -m, -, the REPL): the
 * guard exposes it implicitly, so the kernel must let it be read too. The
 * context does not carry the command line, so the launcher's own argv is
 * split again by the same parser that split it first. */
static const char *find_script(struct sb_arena *a)
{
	SB_VEC(char *) argv = { 0 };
	struct sb_buf b = { 0 };
	struct sb_cli cli;
	const char *err, *script = NULL;
	char chunk[4096];
	ssize_t n;
	size_t off;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			sb_buf_add(&b, chunk, (size_t)n);
	close(fd);
	for (off = 0; off < b.len; off += strlen(b.s + off) + 1)
		*SB_VEC_PUSH(a, argv) = sb_arena_strdup(a, b.s + off);
	sb_buf_free(&b);
	if (!argv.n)
		return NULL;
	*SB_VEC_PUSH(a, argv) = NULL;
	if (sb_cli_parse(a, (int)argv.n - 1, argv.v, &cli, &err) != 0 ||
	    !cli.command.n)
		return NULL;
	script = cli.command.v[0];
	if (strcmp(script, "--") == 0)
		script = cli.command.n > 1 ? cli.command.v[1] : NULL;
	else if (script[0] == '-')
		script = NULL;
	return script;
}

static void debug_print(struct sb_arena *a, const struct sb_policy *p,
			const struct sb_kernel_ctx *ctx, const char *script,
			int abi)
{
	struct sb_landlock_path *imp;
	size_t i, n;

	fprintf(stderr, "python-sb: landlock ABI %d, implicit paths:", abi);
	sb_landlock_implicit(a, ctx, script, &imp, &n);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %s", imp[i].path);
	fprintf(stderr,
		"\npython-sb: seccomp: %s; each refusal is reported as it "
		"happens\n",
		sb_seccomp_summary(a, p));
}

/* Always, under landlock: Landlock does not confine connect() to a named
 * Unix socket (a host's docker.sock, an agent's socket), so even a policy
 * without net= rules needs the supervisor for those (attack D26). The
 * cost is one fork per run. */
bool sb_kernel_supervised(const struct sb_policy *p)
{
	return true;
}

int sb_kernel_apply(struct sb_arena *a, const struct sb_policy *p,
		    const struct sb_kernel_ctx *ctx, int *listener,
		    const char **err, const char **hint)
{
	struct sb_kernel_caps caps;
	const char *why, *script;

	*err = NULL;
	*hint = NULL;
	if (p->provider != SB_PROVIDER_LANDLOCK &&
	    p->provider != SB_PROVIDER_AUTO) {
		*err = sb_arena_printf(a, "the kernel layer of '%s' is not "
					  "available in this version",
				       sb_provider_name(p->provider));
		return -1;
	}
	sb_kernel_probe(&caps);
	why = landlock_missing(a, &caps);
	if (why) {
		*err = why;
		if (caps.landlock_abi < SB_LANDLOCK_MIN_ABI)
			*hint = HINT_LANDLOCK;
		else
			*hint = "a kernel with CONFIG_SECCOMP_FILTER; or use "
				"os-sandbox=subprocess";
		return -1;
	}
	script = find_script(a);
	if (getenv("PYSB_DEBUG"))
		debug_print(a, p, ctx, script, caps.landlock_abi);
	if (sb_landlock_apply(a, p, ctx, script, caps.landlock_abi, err) < 0)
		return -1;
	/* after Landlock: a failure here still runs nothing (exit 255) */
	if (sb_seccomp_apply(a, p, listener, err) < 0)
		return -1;
	return 0;
}
