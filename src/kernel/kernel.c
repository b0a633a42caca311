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

#include "caps.h"
#include "entrysup.h"
#include "landlock.h"
#include "policy_net.h"
#include "selfprotect.h"
#include "prof.h"
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
		sb_buf_puts(&b, sb_net_allows_abstract(p)
					? ", signals"
					: ", abstract Unix sockets and signals");
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
		sb_buf_puts(&b, sb_net_allows_abstract(p)
					? "; signals kept to the sandbox by "
					  "python-sb (Landlock scopes them from "
					  "ABI 6)"
					: "; abstract Unix sockets refused and "
					  "signals kept to the sandbox by python-sb "
					  "(Landlock scopes them from ABI 6)");
	if (sb_net_allows_abstract(p))
		sb_buf_puts(&b, "; abstract Unix sockets allowed, the host's "
				"included (net=ALLOW|*|*|*|* and no DENY rule)");
	if (!masked && sb_entrysup_wanted(p))
		sb_buf_puts(&b, "; the entries that expose-new=, "
				"expose-made= and the expose-rw= of a file "
				"name are made, replaced and removed by "
				"python-sb as the supervisor, which sees every "
				"file call (expose-made=: only those the "
				"program made)");
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
			"new mount, pid, IPC, UTS, cgroup and network "
			"namespaces (and user when not root), a root "
			"holding only the exposed paths and the interpreter, "
			"then %s",
			describe_landlock(a, p, caps->landlock_abi, true));
	case SB_PROVIDER_BWRAP:
	case SB_PROVIDER_FIREJAIL:
		if (why)
			return sb_arena_printf(a, "%s cannot run here: %s.",
					       sb_provider_name(provider), why);
		return sb_arena_printf(
			a, "%s, then, in python-sb's second stage inside, %s",
			provider == SB_PROVIDER_BWRAP
				? "bubblewrap's namespaces and a root holding "
				  "only the exposed paths and the interpreter"
				: "firejail's namespaces, seccomp filter and "
				  "capability drop (outside its whitelist "
				  "trees the host's paths stay visible, and "
				  "Landlock refuses them)",
			describe_landlock(a, p, caps->landlock_abi, true));
	case SB_PROVIDER_QEMU:
		/* the launcher's own description names the kernel it boots
		 * (qemu.c): this is what holds, whatever the host's kernel */
		return "a virtual machine with its own kernel; inside, "
		       "python-sb's second stage applies landlock + seccomp "
		       "as under os-sandbox=landlock, under the guest's "
		       "kernel; no network device.";
	default:
		return sb_arena_printf(a,
				       "%s is not available in this version "
				       "of python-sb: the run fails closed "
				       "(exit 255) rather than run with less "
				       "isolation.",
				       sb_provider_name(provider));
	}
}

static void debug_print(struct sb_arena *a, const struct sb_policy *p,
			const struct sb_kernel_ctx *ctx, int abi)
{
	struct sb_landlock_path *imp;
	size_t i, n;

	fprintf(stderr, "python-sb: landlock ABI %d, implicit paths:", abi);
	sb_landlock_implicit(a, ctx, &imp, &n);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %s", imp[i].path);
	fprintf(stderr,
		"\npython-sb: seccomp: %s; each refusal is reported as it "
		"happens\n",
		sb_seccomp_summary(a, p));
}

int sb_kernel_apply(struct sb_arena *a, const struct sb_policy *p,
		    const struct sb_kernel_ctx *ctx, int *listener,
		    const char **err, const char **hint)
{
	struct sb_kernel_caps caps;
	const char *why;
	int rc;

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
	if (getenv("PYSB_DEBUG"))
		debug_print(a, p, ctx, caps.landlock_abi);
	/* before Landlock, which forbids mounts from then on */
	if (!ctx->own_files_kept && sb_selfprotect_apply(a, p, ctx, err, hint) < 0)
		return -1;
	sb_prof_mark("selfprotect");
	/* after the mount namespace (root's CAP_SYS_ADMIN makes it), before
	 * the filter (which refuses capset): under every provider, root
	 * included, empty capability sets and locked securebits
	 * (weaknesses.md 37) */
	rc = sb_caps_drop();
	if (rc < 0) {
		*err = sb_arena_printf(a, "dropping the capabilities: %s",
				       strerror(-rc));
		return -1;
	}
	sb_prof_mark("caps");
	if (sb_landlock_apply(a, p, ctx, caps.landlock_abi, err) < 0)
		return -1;
	sb_prof_mark("landlock");
	/* after Landlock: a failure here still runs nothing (exit 255) */
	if (sb_seccomp_apply(a, p, caps.landlock_abi >= 6, ctx->entries_served,
			     listener, err) < 0)
		return -1;
	sb_prof_mark("seccomp");
	return 0;
}

