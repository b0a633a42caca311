/* run_limits.h - what bounds a run (run_limits.c): the limit-* rules held by a
 * cgroup, by rlimits or by the supervisor's timer, and the end of the run,
 * when every process of it ends. Launcher-setup code: it returns -errno or
 * a status, prints only the verdict of a limit that ended the run.
 */
#ifndef SB_RUN_LIMITS_H
#define SB_RUN_LIMITS_H

#include <poll.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "policy.h"

enum sb_limit_mech {
	SB_MECH_NONE,      /* no such rule */
	SB_MECH_RLIMIT,    /* setrlimit in the program's process, inherited */
	SB_MECH_CGROUP_V1, /* the run's own cgroup, v1 hierarchies */
	SB_MECH_CGROUP_V2, /* the run's own cgroup, v2 */
	SB_MECH_TIMER,     /* the supervisor's timer (limit-time) */
	SB_MECH_REFUSED,   /* nothing here holds it: the run is refused */
	SB_MECH_GUEST,     /* os-sandbox=qemu: a cgroup v2 of the guest,
			    * which its init makes (src/guest/init.c) */
};

struct sb_limits {
	const struct sb_policy *p;
	enum sb_limit_mech mech[SB_LIMIT_COUNT];
	const char *why[SB_LIMIT_COUNT]; /* SB_MECH_REFUSED: why */
	/* the run's cgroup directories (v1: memory and pids hierarchies; v2:
	 * one) once sb_limits_setup made them, and their cgroup.procs opened
	 * for writing, for the child to join before it execs */
	const char *cg_dir[3]; /* v1: memory, pids, cpuacct; v2: [0] */
	int cg_procs[3];
	/* O_PATH fds of each cgroup and of its parent: the supervisor reads
	 * and removes it through them, since unshare's pivot_root changes
	 * the launcher's root too */
	int cg_fd[3], cg_parent[3];
	/* v2's cgroup.kill, opened with the cgroup (kernel 5.14 and later):
	 * one write ends every process of it, in any pid namespace, with no
	 * descriptor to find at the end */
	int cg_kill;
	const char *cg_name; /* "pysb-<pid>" */
	unsigned n_cg;
	int cg_version; /* 0: no cgroup for this run */
	bool timed_out; /* the supervisor's timer ended the run */
	bool oom_ended; /* an OOM kill in the run's cgroup ended it, or its
			 * stall at the limit (sb_limits_stall_event) */
	unsigned long long max_seen; /* memory.events' "max" count at the
				      * last stall the trigger reported */
	bool cpu_ended; /* the run's cgroup used up limit-cpu */
	pid_t pid;      /* the process the run started (sb_sup_loop), 0 */
	bool guest;     /* planned for qemu's guest (SB_MECH_GUEST) */
};

/* Decide which mechanism holds each limit of 'p' under 'provider' (after
 * auto), for a python-sb running on the host with effective uid 'euid':
 * a cgroup when this process can make one (cgroup v2 with the memory and
 * pids controllers delegated to it, or v1 memory and pids hierarchies it
 * may write: root), else rlimits; limit-time is always the timer. The
 * cgroup is joined on the host before the program or the tool starts:
 * under subprocess, none, landlock, bwrap, and unshare as root (as a user
 * it enters its user namespace first); never under firejail, which
 * python-sb execs. A limit nothing holds (limit-processes as root without
 * a cgroup: RLIMIT_NPROC does not bind uid 0) is SB_MECH_REFUSED. Under
 * qemu the guest holds them all: memory, processes and CPU time in a
 * cgroup v2 its init makes (SB_MECH_GUEST), the others as rlimits and the
 * timer of its second stage.
 * Reads the cgroup file system; never creates anything. */
void sb_limits_plan(struct sb_arena *a, const struct sb_policy *p,
		    enum sb_provider provider, uid_t euid, struct sb_limits *l);
/* The second stage inside bwrap or firejail: rlimits and the timer,
 * whatever the uid (the launcher outside refused what they cannot hold),
 * but none for the limits of the 'outside' mask (1 << enum sb_limit),
 * which the run's cgroup holds from outside. */
void sb_limits_plan_nested(const struct sb_policy *p, unsigned outside,
			   struct sb_limits *l);
/* The mask of limits the run's cgroup holds, for the second stage. */
unsigned sb_limits_cgroup_mask(const struct sb_limits *l);
/* One line for --pysandboxes-explain: "limit-memory=512M: cgroup v1
 * memory.limit_in_bytes of the run's own cgroup, every process of it". */
const char *sb_limits_describe(struct sb_arena *a, const struct sb_limits *l,
			       enum sb_limit which);
/* The first refused limit's message, or NULL. */
const char *sb_limits_refusal(struct sb_arena *a, const struct sb_limits *l);

/* Make the run's cgroup and write its limits. 0, or -1 with *err (the
 * step, the path and strerror): nothing ran, the caller exits 255. */
int sb_limits_setup(struct sb_arena *a, struct sb_limits *l,
		    const char **err);
/* In the child, between fork and exec (async-signal-safe): join the
 * cgroup. 0 or -errno. */
int sb_limits_join(const struct sb_limits *l);
/* In the child, just before exec: the rlimits (soft and hard; limit-cpu's
 * hard limit a second later, so that SIGXCPU comes first). 0 or -errno;
 * *which names the one that failed. */
int sb_limits_set_rlimits(const struct sb_limits *l, int *which);
/* The supervisor's timer for limit-time: a timerfd (CLOEXEC, NONBLOCK)
 * armed for the limit, or -1 when there is none (or with errno). */
int sb_limits_timer(const struct sb_limits *l);
/* The timer went off: mark it and SIGKILL the program 'pid' and every
 * process of the run's cgroup; sb_sweep_descendants ends the rest. */
void sb_limits_expire(struct sb_limits *l, pid_t pid);
/* A descriptor that polls readable (v1: an eventfd registered on
 * memory.oom_control) or POLLPRI (v2: memory.events) when the run's
 * memory cgroup meets its limit; -1 without one. *events: what to poll
 * for. Close it after the run. */
int sb_limits_oom_fd(const struct sb_limits *l, short *events);
/* It fired: when the OOM killer ended a process of the run, end the run
 * as the timer does (the verdict names limit-memory). */
void sb_limits_oom_event(struct sb_limits *l, int fd, pid_t pid);
/* A PSI trigger on the run's memory cgroup (v2): polls POLLPRI when all
 * its processes stalled on memory for 1 s of a 2 s window (the window an
 * unprivileged user may set); -1 without one (no PSI: the OOM killer
 * alone holds the limit). */
int sb_limits_stall_fd(const struct sb_limits *l);
/* It fired: when the cgroup met its limit since the last report, the run
 * is thrashing at limit-memory (the OOM killer waits while reclaim frees
 * anything, such as the program's own code it then reads again): end it
 * as the OOM killer would have. */
void sb_limits_stall_event(struct sb_limits *l, pid_t pid);
/* limit-cpu held by the run's cgroup: a periodic timerfd (CLOEXEC,
 * NONBLOCK) at which the supervisor reads the CPU time of the whole run
 * (v1 cpuacct.usage, v2 cpu.stat); -1 when limit-cpu is no cgroup's. */
int sb_limits_cpu_fd(const struct sb_limits *l);
/* It fired: past limit-cpu, end the run as the timer does. */
void sb_limits_cpu_check(struct sb_limits *l, int fd, pid_t pid);
/* What a supervisor polls for the limits, beside its own descriptors: the
 * limit-time timer, the memory cgroup's OOM events, the limit-cpu check,
 * the memory cgroup's stall trigger (each -1 when its limit is not set or
 * has another mechanism). */
struct sb_limit_watch {
	int tfd, ofd, cfd, sfd;
	short oev;
	const char *failed; /* the rule that could not be armed */
};

#define SB_LIMIT_WATCH_N 4

/* Open the watch for 'l' (NULL: no limits, nothing to watch). 0, or -1
 * with errno when a limit only the supervisor holds (limit-time, a cgroup's
 * limit-cpu) could not be armed, named in w->failed: the run must not
 * start without it. */
int sb_limits_watch_open(const struct sb_limits *l, struct sb_limit_watch *w);
/* The SB_LIMIT_WATCH_N pollfd entries at 'p' (a negative fd is ignored by
 * poll). */
void sb_limits_watch_poll(const struct sb_limit_watch *w, struct pollfd *p);
/* Act on what poll() reported in those entries: end the run of 'pid' when
 * a limit is reached. */
void sb_limits_watch_handle(struct sb_limits *l, struct sb_limit_watch *w,
			    const struct pollfd *p, pid_t pid);
void sb_limits_watch_close(struct sb_limit_watch *w);

/* After the program 'pid' ended with wait status 'wstatus' (its rusage in
 * 'ru'): when a limit ended the run, say which on stderr ("python-sb:
 * limit-time=2s reached: the run was stopped") and return SB_EXIT_LIMIT;
 * else the usual status (the program's, 128+N for signal N). */
int sb_limits_verdict(const struct sb_limits *l, int wstatus,
		      const struct rusage *ru);
/* Limit 'which' ended the run: say so on stderr as sb_limits_verdict does,
 * record it in the denial log, and return SB_EXIT_LIMIT (qemu's launcher,
 * when the guest did not end the run itself). */
int sb_limits_reached(const struct sb_limits *l, enum sb_limit which);
/* For a launcher whose supervisor runs where the cgroup cannot be seen
 * (unshare, bwrap): the status 'rc' it got, or SB_EXIT_LIMIT after the
 * message when the program died of SIGKILL (128+9) and the OOM killer of
 * the run's memory cgroup was the cause. */
int sb_limits_outer_verdict(const struct sb_limits *l, int rc);
/* Kill what is left in the run's cgroup and remove it. */
void sb_limits_cleanup(struct sb_limits *l);

/* What the end-of-run sweep needs, taken when a supervisor starts, so that
 * a program that exhausts python-sb's descriptors (through the calls its
 * supervisor performs for it) cannot keep the sweep from reading /proc: a
 * descriptor of /proc, and spare ones closed when the sweep begins. */
#define SB_SWEEP_SPARE 4
struct sb_sweep {
	int proc;
	int spare[SB_SWEEP_SPARE];
};

/* Take them (CLOEXEC); what cannot be taken is -1, and the sweep opens
 * /proc by name then. */
void sb_sweep_reserve(struct sb_sweep *w);
/* Close them (a forked child, or the end of the supervisor). */
void sb_sweep_release(struct sb_sweep *w);
/* SIGKILL and reap every descendant of this process, a subreaper
 * (PR_SET_CHILD_SUBREAPER), including those that come here meanwhile;
 * first every process of the run's cgroup 'l' when this process made it
 * (NULL: none). It gives up only when /proc can be read and shows none
 * of the children the kernel still reports (a pid namespace's, ended by
 * it): while /proc cannot be read it keeps trying. The spares of 'w' (may
 * be NULL) are used up. */
void sb_sweep_descendants(struct sb_sweep *w, const struct sb_limits *l);

/* subprocess and none with limits: python-sb stays as the parent (a
 * subreaper), the child joins the cgroup, sets the rlimits and execs
 * 'path'; signals another process sends are passed on, the timer ends
 * the run. Returns the status (sb_limits_verdict), or 255 after a message
 * when the program could not start. Every descendant ends with the run.
 * 'channel': partial mode's socket (sb_sup_channel), else -1. */
int sb_limits_run(struct sb_limits *l, const char *path, char *const argv[],
		  char *const envp[], int channel);

#endif
