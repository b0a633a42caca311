/* stage.h - python-sb's second stage under os-sandbox=bwrap and firejail
 * (stage.c): run again by the tool inside its namespaces, after its mounts,
 * it applies the kernel layer os-sandbox=landlock applies and runs the
 * interpreter. Launcher-setup code: it prints its errors and returns
 * python-sb's exit status.
 */
#ifndef SB_STAGE_H
#define SB_STAGE_H

#include <stdbool.h>

#include "kernel.h"

/* argv[1] of the second stage: "--pysb-stage=FD", FD the stage record. */
#define SB_STAGE_FLAG "--pysb-stage="

/* What the outer launcher hands the second stage. */
struct sb_stage {
	const char *path, *real;   /* the interpreter, as sb_interp has it */
	const char *guard, *pkgdir; /* NULL when the Python layer is off */
	const char *cwd, *script;   /* as sb_kernel_ctx has them */
	int policy_fd;              /* the policy blob (policy_blob.h) */
	bool guarded;               /* the guard reads policy_fd after exec */
	bool hosts;                 /* /etc/hosts is the pinned-names file */
	bool net_wait;              /* after sending its pidfd on signal_fd,
				     * wait there for a byte: the network
				     * namespace's stack is up (netns.h) */
	bool debug;                 /* PYSB_DEBUG was set outside */
	int signal_fd;              /* the stage sends its pidfd here, for
				     * the launcher outside to forward
				     * signals to; -1: none */
	/* the run's cgroup, made outside (run_limits.h): the limits it
	 * holds (1 << enum sb_limit) and its cgroup.procs, open for writing
	 * (-1: none), which the program joins */
	unsigned cgroup_mask;
	int cgroup_fd[2];
	int cgroup_version;  /* 1 or 2, with cgroup_dir_fd: the memory */
	int cgroup_dir_fd;   /* cgroup (O_PATH), for its OOM events (v2:
			      * its cpu.stat too, for limit-cpu); -1 */
	char *const *env;           /* the program's environment */
	int log_fd, relay_fd;       /* the denial log and the supervisor's
				     * end of the guard's relay; -1: none */
	bool log_wire;              /* log_fd is qemu's port to the host,
				     * which writes the log (denial.h) */
};

/* 'st' for this run as every tool starts it (bwrap, firejail, qemu's
 * guest): the interpreter, guard, package, cwd and script of ctx, the
 * policy descriptor, the environment, PYSB_DEBUG; every descriptor it may
 * carry -1 and every flag off, for the tool to set. */
void sb_stage_init(struct sb_stage *st, const struct sb_kernel_ctx *ctx,
		   int policy_fd, bool guarded, char *const *env);

/* The stage record on a new memfd (inherited by exec, offset 0): the fd,
 * or -errno. The environment travels here rather than on the tool's
 * command line, which any user can read in /proc. */
int sb_stage_write(const struct sb_stage *st);

/* The second stage: `python-sb --pysb-stage=FD -- PATH ARGV...`. Reads
 * and closes the record, applies Landlock, seccomp and the network
 * supervisor to the program (netsup.h) and returns its exit status; 255
 * after a message when anything is missing or malformed (nothing runs). */
int sb_stage_main(int argc, char **argv);

#endif
