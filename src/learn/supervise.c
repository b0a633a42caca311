/* supervise.c - learning mode keeps python-sb as the program's parent: it
 * reads the guard's records as they are written (so what was seen survives
 * os._exit, a crash or SIGKILL of the program), forwards the signals a user
 * sends, and writes the rules when the program ends, and at once on the
 * first SIGINT, SIGTERM or SIGQUIT (a server is learned by pressing Ctrl-C).
 * It also serves the learning seccomp filter's notifications (learn_native.c
 * records them), so that what native code opens, execs and connects to is
 * learned too; it takes the filter's listener from the child with
 * pidfd_getfd, as the network supervisor does (netsup.c).
 */
#include "caller.h"
#include "exit_status.h"
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "notif.h"
#include "run_limits.h"
#include "seccomp_filter.h"
#include "supervisor.h"

static void drain(int fd, struct sb_learn_session *s)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sb_learn_feed(s, buf, (size_t)n);
}

/* Between fork and exec: load the learning filter and hand its listener
 * to the parent. Not over SCM_RIGHTS: sendmsg is a notified call now, and
 * nobody would answer it yet; the parent takes the descriptor with
 * pidfd_getfd, and this process must not keep it. The number sent is the
 * descriptor, or -errno when the kernel refused the filter. */
static void child_filter(int hand, int ack)
{
	int num = sb_seccomp_apply_learning();
	char ok;

	if (write(hand, &num, sizeof(num)) != sizeof(num))
		_exit(127);
	if (num >= 0) {
		if (read(ack, &ok, 1) != 1)
			_exit(127);
		close(num);
	}
}

/* The child's listener, or -1 (learning goes on without it, warned about
 * once); -2 when it could not be taken: the child is killed, since its
 * notified calls would wait for an answer that never comes. */
static int take_listener(pid_t pid, int hand, int ack)
{
	int num, pidfd, lfd;

	if (read(hand, &num, sizeof(num)) != sizeof(num))
		return -1; /* the child is gone: its status says why */
	if (num < 0) {
		fprintf(stderr,
			"python-sb: warning: learning does not see native "
			"code on this kernel (seccomp user notification: %s); "
			"only what the Python layer saw is learned.\n",
			strerror(-num));
		return -1;
	}
	pidfd = sb_pidfd_open(pid, 0);
	lfd = pidfd < 0 ? -1 : sb_pidfd_getfd(pidfd, num);
	if (pidfd >= 0)
		close(pidfd);
	if (lfd < 0 || write(ack, "k", 1) != 1) {
		fprintf(stderr,
			"python-sb: learning: the seccomp listener could not "
			"be taken from the program: %s; nothing was run.\n",
			strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -2;
	}
	return lfd;
}

/* What the loop serves beside the signals. */
struct learning {
	struct sb_learn_session *s;
	struct sb_learn_native *native;
	int rec_fd;
	int live; /* the listener while a process uses the filter, or -1 */
	bool saved_on_signal;
};

static void learning_fds(struct sb_sup *sup, void *ctx, struct pollfd *p)
{
	const struct learning *l = ctx;

	p[0] = (struct pollfd){ l->rec_fd, POLLIN, 0 };
	p[1] = (struct pollfd){ l->live, POLLIN, 0 };
}

static void learning_ready(struct sb_sup *sup, void *ctx,
			   const struct pollfd *p)
{
	struct learning *l = ctx;

	/* the guard's record of a call comes before the call (its audit
	 * hook runs first), and says more: read it first */
	if (p[0].revents || p[1].revents)
		drain(l->rec_fd, l->s);
	if (p[1].revents & POLLIN)
		sb_learn_native_serve(l->native, l->live);
	else if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL))
		l->live = -1; /* no process uses the filter any more */
}

/* The rules are saved once at the first SIGINT, SIGTERM or SIGQUIT, from
 * the terminal or sent: the program may not get to its end. */
static void learning_signal(struct sb_sup *sup, void *ctx,
			    const struct signalfd_siginfo *si)
{
	struct learning *l = ctx;

	if ((si->ssi_signo == SIGINT || si->ssi_signo == SIGTERM ||
	     si->ssi_signo == SIGQUIT) &&
	    !l->saved_on_signal) {
		l->saved_on_signal = true;
		drain(l->rec_fd, l->s);
		sb_learn_save(l->s);
	}
}

/* What the learning run's child (sb_sup_spawn) is given. */
struct learning_child {
	const struct sb_sup *sup;
	pid_t parent;
	int rec_fd, report, hand, ack;
	bool native;
	struct sb_limits *lim;
	const char *path;
	char *const *argv;
	char *const *envp;
};

/* The child, in python-sb's memory while python-sb waits (in read(hand)
 * with a native filter to hand over, else in poll for the exec's report,
 * serving nothing): after the hand-over, system calls only. */
static int learning_child(void *arg)
{
	struct learning_child *c = arg;
	int which = 0, err;

	sb_sup_child(c->sup);
	close(c->rec_fd);
	/* the run ends with python-sb, even a SIGKILLed one (whose listener
	 * is gone: the program's notified calls would fail from then on) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != c->parent)
		_exit(SB_EXIT_SETUP);
	if (c->lim && sb_limits_join(c->lim) < 0)
		_exit(SB_EXIT_SETUP);
	if (c->native)
		child_filter(c->hand, c->ack);
	if (c->lim && sb_limits_set_rlimits(c->lim, &which) < 0)
		_exit(SB_EXIT_SETUP);
	sb_caller_give();
	execve(c->path, c->argv, c->envp);
	err = errno;
	if (write(c->report, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

int sb_supervise_learning(const char *path, char *const argv[],
			  char *const envp[], int keep_fd, int rec_fd,
			  struct sb_learn_session *s,
			  struct sb_learn_native *native, struct sb_limits *lim,
			  int channel)
{
	static const struct sb_sup_ops ops = { .fds = learning_fds,
					       .ready = learning_ready,
					       .signal = learning_signal };
	struct learning l = { s, native, rec_fd, -1, false };
	int report[2], hand[2] = { -1, -1 }, ack[2] = { -1, -1 };
	struct learning_child c;
	int err = 0, rc, lfd = -1;
	struct sb_sup sup;
	pid_t pid, parent;

	/* the signals arrive through a signalfd; the child gets its own
	 * dispositions back before exec. The program shares our process
	 * group: Ctrl-C on the terminal reaches it by itself */
	if (sb_sup_init(&sup, SB_SUP_SAME_GROUP) < 0 ||
	    /* with limits, the program's orphans come here, to be ended
	     * with a run that a limit stops; a partial-mode worker's
	     * always (it ends with its caller) */
	    ((lim || channel > 0) &&
	     prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) ||
	    pipe2(report, O_CLOEXEC) < 0 ||
	    (native && (pipe2(hand, O_CLOEXEC) < 0 ||
			pipe2(ack, O_CLOEXEC) < 0))) {
		fprintf(stderr, "python-sb: learning set-up: %s\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	parent = getpid();
	c = (struct learning_child){ &sup,   parent,   rec_fd, report[1],
				     hand[1], ack[0],  native != NULL,
				     lim,     path,    argv,   envp };
	/* the child works in our memory: system calls only here until it
	 * has handed over its listener, or exec'd */
	pid = sb_sup_spawn(&sup, learning_child, &c);
	if (pid < 0) {
		fprintf(stderr, "python-sb: clone: %s\n", strerror(errno));
		return SB_EXIT_SETUP;
	}
	close(keep_fd);
	close(report[1]);
	if (native) {
		sb_learn_native_set_root(native, pid);
		close(hand[1]);
		close(ack[0]);
		lfd = take_listener(pid, hand[0], ack[1]);
		close(hand[0]);
		close(ack[1]);
		if (lfd == -2)
			return SB_EXIT_SETUP;
	}
	/* the exec of the interpreter is itself a notified call: serve while
	 * waiting for its outcome */
	for (;;) {
		struct pollfd pfd[2] = { { report[0], POLLIN, 0 },
					 { lfd, POLLIN, 0 } };

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN)
			sb_learn_native_serve(native, lfd);
		if (pfd[0].revents)
			break;
	}
	if (read(report[0], &err, sizeof(err)) == sizeof(err)) {
		close(report[0]);
		if (lfd >= 0)
			close(lfd);
		waitpid(pid, NULL, 0);
		fprintf(stderr, "python-sb: exec %s: %s\n", path,
			strerror(err));
		return SB_EXIT_SETUP;
	}
	close(report[0]);
	fcntl(rec_fd, F_SETFL, O_NONBLOCK);

	l.live = lfd;
	/* a limit the supervisor holds and cannot arm: the run stops */
	if (sb_sup_watch(&sup, lim) < 0) {
		fprintf(stderr, "python-sb: timerfd for %s: %s; the run was "
				"stopped.\n",
			sup.lw.failed, strerror(errno));
		sb_sup_abort(&sup);
		sb_sweep_descendants(&sup.sweep, lim);
		close(rec_fd);
		if (lfd >= 0)
			close(lfd);
		sb_sup_end(&sup);
		return SB_EXIT_SETUP;
	}
	if (channel > 0)
		sb_sup_channel(&sup, channel, SB_SUP_CHANNEL_LEARN_GRACE_MS);
	rc = sb_sup_loop(&sup, &ops, &l);
	/* a limit ended the run, or it was a partial-mode worker's: nothing
	 * of it goes on */
	sb_sup_stop(&sup, channel > 0 ||
				  (lim && (lim->timed_out || lim->oom_ended ||
					   lim->cpu_ended)));
	/* what the program wrote before it ended; a grandchild that kept the
	 * pipe open does not hold the run. Nor does one that still runs under
	 * the filter: once the listener is closed its notified calls fail
	 * (ENOSYS); learning ends with the program. */
	drain(rec_fd, s);
	close(rec_fd);
	if (lfd >= 0)
		close(lfd);
	if (native)
		sb_learn_native_done(native);
	sb_sup_end(&sup);
	s->quiet_when_unchanged = l.saved_on_signal;
	if (rc < 0)
		rc = SB_EXIT_SETUP;
	else if (lim)
		rc = sb_limits_verdict(lim, sup.wstatus, &sup.ru);
	else
		rc = sb_sup_exit_status(sup.wstatus);
	if (sb_learn_save(s) < 0)
		return SB_EXIT_SETUP;
	return rc;
}
