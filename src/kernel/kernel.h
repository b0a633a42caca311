/* kernel.h - the kernel layer: the mount namespace that keeps python-sb's
 * own files read-only (selfprotect.c), empty capability sets, Landlock and
 * the seccomp allowlist, applied by the supervisor's child (netsup.c), or by
 * the second stage inside a namespace provider, just before it execs the
 * interpreter (all survive execve and cannot be undone). Launcher-setup
 * code: after the first irreversible step any failure is fatal, and the
 * caller exits 255 without running anything.
 */
#ifndef SB_KERNEL_H
#define SB_KERNEL_H

#include <stdbool.h>

#include "policy.h"

struct sb_limits;

/* The interpreter about to run, as the launcher chose it (interp.c): the
 * kernel layer lets it, its chain of links and its loader be executed. */
struct sb_interp {
	const char *path;   /* what to exec: symlinks kept (a venv's bin/) */
	const char *real;   /* the real binary, symlinks resolved */
	const char *source; /* how it was chosen, for explain and errors */
};

/* The partial-mode transport, a CPython extension: installed in the
 * pysandboxes package directory, and in a build directory beside the guard
 * library (python/pysandboxes/_worker.py looks in both). */
#define SB_FRAME_FILE "_pysbframe.abi3.so"

struct sb_kernel_ctx {
	const struct sb_interp *interp; /* the interpreter about to run */
	const char *guard;              /* the guard library, or NULL */
	/* (a build directory has the partial-mode transport beside it,
	 * SB_FRAME_FILE, exposed with it) */
	const char *pkgdir;             /* the pysandboxes package dir, or NULL */
	const char *cwd;
	/* the script the interpreter will run, as given (relative to cwd),
	 * or NULL (-c, -m, -, the REPL): the guard exposes it implicitly, so
	 * the kernel lets it be read too */
	const char *script;
	/* python-sb's own files are masked already (unshare, bwrap and
	 * firejail do it with ignore=): no namespace of selfprotect.c */
	bool own_files_kept;
	/* the limits of the run, planned and set up by the launcher on the
	 * host (run_limits.h); NULL: the supervisor plans rlimits and the timer
	 * itself (the second stage inside a namespace provider) */
	struct sb_limits *limits;
	/* partial mode's socket to its worker (--pysandboxes-channel), which
	 * os-sandbox=qemu carries into the guest under the same number; the
	 * other providers let it be inherited; 0: none */
	int channel_fd;
	/* the caller's descriptors above 2 it passes on
	 * (--pysandboxes-keep-fd); firejail, which closes the others, is
	 * told to keep them and the channel */
	const int *keep_fds;
	size_t n_keep_fds;
	/* the supervisor performs the calls on the entries Landlock cannot
	 * grant (entrysup.h): every file call is notified */
	bool entries_served;
};

/* What this kernel offers, for --pysandboxes-explain and os-sandbox=auto:
 * the Landlock ABI (0: none) and whether seccomp filters can be loaded. */
struct sb_kernel_caps {
	int landlock_abi;
	bool seccomp;
};
void sb_kernel_probe(struct sb_kernel_caps *caps);

/* One line saying what 'provider' would enforce here, or why it cannot
 * run (a named provider that cannot run fails closed). */
const char *sb_kernel_describe(struct sb_arena *a, const struct sb_policy *p,
			       enum sb_provider provider,
			       const struct sb_kernel_caps *caps);

/* Apply the provider's kernel confinement to the calling process. Returns
 * 0, or -1 with a message in *err (and *hint when the environment is the
 * cause: no Landlock, an old ABI...). Only SB_PROVIDER_LANDLOCK is handled
 * here; the others return -1. With 'listener', the socket calls go to a
 * supervisor and *listener is the seccomp notification fd (see
 * sb_seccomp_apply); NULL: no supervisor. */
int sb_kernel_apply(struct sb_arena *a, const struct sb_policy *p,
		    const struct sb_kernel_ctx *ctx, int *listener,
		    const char **err, const char **hint);

#endif
