/* supervisor.h - the one skeleton of a python-sb that stays as the parent of
 * what it runs (supervisor.c): learning's (supervise.c), the network
 * supervisor's (netsup.c), the limits supervisor's (run_limits.c), the
 * unshare provider's outer launcher and init (ns.c), bwrap's (extprov.c)
 * and the virtual machine's relay (qemu.c).
 * It owns the signal mask and its signalfd, which signals are passed on to
 * the child and how, the poll loop around the child, its wait, and the
 * mapping of a wait status to python-sb's exit status. The mode owns the
 * fork's child side, its own descriptors (a seccomp listener, a record
 * pipe) and the messages of its set-up.
 * Descriptors: sb_sup_init opens the signalfd, sb_sup_end closes it (the
 * child's copy: sb_sup_child); the limits' watch is opened by sb_sup_watch
 * and closed by sb_sup_stop. A descriptor the mode hands in (to_pidfd, its
 * pollfd entries) stays the mode's to close.
 */
#ifndef SB_SUPERVISOR_H
#define SB_SUPERVISOR_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include "run_limits.h"

/* Where the child stands towards python-sb's process group, which decides
 * what is passed on to it. SIGCHLD never is. */
enum sb_sup_forward {
	/* It shares our process group: what the terminal sends (Ctrl-C:
	 * si_code SI_KERNEL) reaches it by itself; only what a process sent
	 * to python-sb (kill, sigqueue, tgkill, pidfd_send_signal) is passed
	 * on, to the child. Learning, limits, unshare. */
	SB_SUP_SAME_GROUP,
	/* It runs in a session of its own (netsup.c): a signal a process sent
	 * goes to the child; the terminal's go to its process group (the
	 * child itself when it has none); a stop (SIGTSTP, SIGTTIN, SIGTTOU)
	 * stops its group, the child and python-sb with SIGSTOP, a SIGCONT
	 * continues both. Also blocks those and SIGWINCH. */
	SB_SUP_OWN_SESSION,
	/* It runs in a process group of its own (bwrap, which passes nothing
	 * on): every signal goes on, through to_pidfd once the mode set it
	 * (the second stage), else (or when that fails) to the child. */
	SB_SUP_OWN_GROUP,
	/* The child is a virtual machine that runs the program (qemu.c):
	 * nothing is sent to it; the mode's signal callback passes each one
	 * on to the guest in its own way. */
	SB_SUP_BY_MODE,
};

/* The number of pollfd entries a mode may add to the loop (qemu.c's relay
 * polls its ports, stdin and partial mode's channel). */
#define SB_SUP_MODE_FDS 10

struct sb_sup;

/* What a mode adds to the loop. Each may be NULL. */
struct sb_sup_ops {
	/* Fill the SB_SUP_MODE_FDS entries at 'p' (a negative fd is not
	 * polled); called before each poll. */
	void (*fds)(struct sb_sup *s, void *ctx, struct pollfd *p);
	/* After fds, before each poll: how long it may wait, in ms (-1: until
	 * something is ready). The mode acts on the time here (a deadline
	 * passed: it kills the child, whose end ends the loop). */
	int (*wait_ms)(struct sb_sup *s, void *ctx);
	/* After poll, once the limits' watch was handled: act on them (also
	 * when the wait ran out: every revents 0). */
	void (*ready)(struct sb_sup *s, void *ctx, const struct pollfd *p);
	/* A signal python-sb got, after it was passed on (SIGCHLD too). */
	void (*signal)(struct sb_sup *s, void *ctx,
		       const struct signalfd_siginfo *si);
};

struct sb_sup {
	enum sb_sup_forward fwd;
	int sfd;      /* the signalfd (SFD_NONBLOCK, CLOEXEC) */
	sigset_t old; /* the mask before sb_sup_init */
	pid_t pid;    /* the child, once sb_sup_fork made it */
	int to_pidfd; /* SB_SUP_OWN_GROUP: where signals go; -1: the child */
	/* O_PATH of the child's /proc/PID/fd, held while it runs: the
	 * Landlock rule that lets the program list its own descriptors lands
	 * on that directory's inode, which procfs makes anew when the dentry
	 * is dropped (memory pressure); held, it stays. -1: none. */
	int fd_dir;
	bool reap_all; /* an init: reap every process that ends (orphans) */
	struct sb_limits *lim; /* NULL: no limit to watch */
	struct sb_limit_watch lw;
	struct sb_sweep sweep; /* what the end-of-run sweep needs */
	char *spawn_stack; /* sb_sup_spawn's child's, or NULL */
	int wstatus;      /* the child's wait status, once it ended */
	struct rusage ru; /* and its rusage (not with reap_all) */
	/* partial mode (sb_sup_channel): the worker's socket, polled for the
	 * caller's hang-up; -1: none */
	int channel;
	int channel_grace_ms;
	bool hung_up;      /* the caller closed its end or died */
	uint64_t hup_end;  /* then: when the child is killed (ns, monotonic) */
	bool ended;        /* the child was sent SIGKILL (sb_sup_channel) */
};

/* Block the signals python-sb passes on (SIGINT, SIGTERM, SIGQUIT, SIGHUP,
 * SIGUSR1, SIGUSR2), SIGCHLD, and for SB_SUP_OWN_SESSION the job-control
 * signals and SIGWINCH; open the signalfd. 0, or -1 with errno (the mask
 * may be changed already: the caller ends with 255). */
int sb_sup_init(struct sb_sup *s, enum sb_sup_forward fwd);
/* fflush(NULL) and fork; the child's pid (in s->pid too), 0 in the child,
 * -1 with errno. */
pid_t sb_sup_fork(struct sb_sup *s);
/* sb_sup_fork without the copy: a child that runs fn(arg) in python-sb's
 * own memory (CLONE_VM), on a stack of its own, with a copy of the
 * descriptor table as fork makes. Nothing of python-sb's memory is copied,
 * and neither side takes a copy-on-write fault afterwards (a fault costs
 * 10 to 15 us on a virtual machine like this one: a fork's child started
 * 1 to 2 ms late, this one in 0.05 to 0.3 ms; bench/RESULTS.md, "Start-up
 * profile"). Both run at once on the same memory, and glibc believes
 * python-sb single-threaded (its malloc takes no lock): the mode holds
 * python-sb in a blocking read until the child has done its work, and the
 * child does nothing after it lets python-sb go on but its exec (else
 * write(2) and _exit: the two share errno). The child never returns; it
 * calls sb_sup_child as a fork's would. The child's pid (s->pid too), or
 * -1 with errno. The stack stays until sb_sup_end. */
pid_t sb_sup_spawn(struct sb_sup *s, int (*fn)(void *), void *arg);
/* In the child, between fork and exec (async-signal-safe): the previous
 * mask back, the signalfd closed. An init that supervises a child of its
 * own keeps both instead. */
void sb_sup_child(const struct sb_sup *s);
/* Watch the limits 'lim' (NULL: none) in the loop: 0, or -1 with errno and
 * s->lw.failed naming the rule whose timer could not be armed; the run
 * must not go on then (sb_sup_abort). */
int sb_sup_watch(struct sb_sup *s, struct sb_limits *lim);
/* How long a partial-mode worker may take to end by itself once its caller
 * hung up (the package waits as long before it sends SIGTERM); a learning
 * run's worker saves what it learned as it ends. */
#define SB_SUP_CHANNEL_GRACE_MS 2000
#define SB_SUP_CHANNEL_LEARN_GRACE_MS 5000

/* Partial mode's worker (--pysandboxes-channel): its run ends with the
 * caller. A SIGTERM (the package's way to stop a worker) kills the child
 * at once instead of being passed on, which the program could ignore; the
 * caller's end of 'fd' closing (it stopped the worker, or died: even a
 * SIGKILLed caller's descriptors close) kills the child when it has not
 * ended by itself within grace_ms. The mode sweeps after the loop as it
 * always does, so that no process of the run outlives it. Set after the
 * fork (an init forked with the struct keeps none). */
void sb_sup_channel(struct sb_sup *s, int fd, int grace_ms);
/* Until the child ends: poll the signalfd, the mode's descriptors and the
 * limits' watch (as long as the mode's wait_ms allows); end the run when a limit is reached; pass the signals on
 * (enum sb_sup_forward); reap the child (with reap_all, every process that
 * ends), its status in s->wstatus and s->ru. 0, or -1 when poll failed:
 * said on stderr, and the child killed and reaped. */
int sb_sup_loop(struct sb_sup *s, const struct sb_sup_ops *ops, void *ctx);
/* SIGKILL the child and reap it: a set-up step after the fork failed. */
void sb_sup_abort(struct sb_sup *s);
/* After the loop: close the limits' watch; with 'sweep', SIGKILL and reap
 * every descendant and every process of the run's cgroup
 * (sb_sweep_descendants: python-sb is a subreaper), with the descriptors
 * sb_sup_init reserved for it. */
void sb_sup_stop(struct sb_sup *s, bool sweep);
/* Close the signalfd and the sweep's reserve, and put the previous mask
 * back. */
void sb_sup_end(struct sb_sup *s);

/* The program's wait status as python-sb's exit status: its exit code, or
 * 128+N when signal N ended it. The one mapping; sb_limits_verdict names a
 * limit's end on top of it. */
int sb_sup_exit_status(int wstatus);

#endif
