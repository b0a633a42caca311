/* supervisor.c - a python-sb that stays as the parent of what it runs
 * (supervisor.h): the signals it blocks and reads from a signalfd, the rule
 * by which it passes them on, the loop that polls them beside the mode's
 * descriptors and the limits' watch, the wait for the child and the one
 * mapping of its wait status to python-sb's exit status. It judges no
 * access and prints only the loop's own failure; each mode keeps its
 * set-up, its child side and its messages.
 */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_status.h"
#include "notif.h"
#include "util.h"

static const int forwarded[] = { SIGINT, SIGTERM, SIGQUIT,
				 SIGHUP, SIGUSR1, SIGUSR2 };
static const int job[] = { SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT, SIGWINCH };

int sb_sup_init(struct sb_sup *s, enum sb_sup_forward fwd)
{
	sigset_t mask;
	size_t i;

	s->fwd = fwd;
	s->sfd = s->to_pidfd = s->fd_dir = -1;
	s->spawn_stack = NULL;
	s->pid = -1;
	s->reap_all = false;
	s->wstatus = 0;
	memset(&s->ru, 0, sizeof(s->ru));
	s->channel = -1;
	s->channel_grace_ms = 0;
	s->hung_up = s->ended = false;
	s->hup_end = 0;
	/* before the program can make python-sb spend its descriptors */
	sb_sweep_reserve(&s->sweep);
	sb_sup_watch(s, NULL); /* nothing to watch: cannot fail */
	sigemptyset(&mask);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&mask, forwarded[i]);
	sigaddset(&mask, SIGCHLD);
	for (i = 0; fwd == SB_SUP_OWN_SESSION && i < sizeof(job) / sizeof(job[0]);
	     i++)
		sigaddset(&mask, job[i]);
	if (sigprocmask(SIG_BLOCK, &mask, &s->old) < 0)
		return -1;
	s->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return s->sfd < 0 ? -1 : 0;
}

pid_t sb_sup_fork(struct sb_sup *s)
{
	char dir[64];

	fflush(NULL);
	s->pid = fork();
	if (s->pid > 0 && s->fd_dir < 0) {
		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)s->pid);
		s->fd_dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	return s->pid;
}

/* The spawned child's stack: only the pages it touches are made; the
 * lowest page is a guard. */
#define SPAWN_STACK (8u << 20)

static void spawn_free(struct sb_sup *s)
{
	if (s->spawn_stack)
		munmap(s->spawn_stack, SPAWN_STACK);
	s->spawn_stack = NULL;
}

pid_t sb_sup_spawn(struct sb_sup *s, int (*fn)(void *), void *arg)
{
	char dir[64];
	int e;

	fflush(NULL);
	s->spawn_stack = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				      MAP_STACK,
			      -1, 0);
	if (s->spawn_stack == MAP_FAILED) {
		s->spawn_stack = NULL;
		return -1;
	}
	if (mprotect(s->spawn_stack, 4096, PROT_NONE) < 0) {
		e = errno;
		spawn_free(s);
		errno = e;
		return -1;
	}
	s->pid = clone(fn, s->spawn_stack + SPAWN_STACK, CLONE_VM | SIGCHLD,
		       arg);
	if (s->pid < 0) {
		e = errno;
		spawn_free(s);
		errno = e;
		return -1;
	}
	if (s->fd_dir < 0) {
		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)s->pid);
		s->fd_dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	return s->pid;
}

void sb_sup_child(const struct sb_sup *s)
{
	struct sb_sweep w = s->sweep;

	sigprocmask(SIG_SETMASK, &s->old, NULL);
	close(s->sfd);
	sb_sweep_release(&w);
}

int sb_sup_watch(struct sb_sup *s, struct sb_limits *lim)
{
	s->lim = lim;
	return sb_limits_watch_open(lim, &s->lw);
}

/* Was it sent by a process (kill, sigqueue, tgkill, pidfd_send_signal),
 * from this pid namespace or outside it? A terminal's Ctrl-C is not: it
 * reaches the program's process group by itself. */
static bool sent(const struct signalfd_siginfo *si)
{
	return si->ssi_code == SI_USER || si->ssi_code == SI_QUEUE ||
	       si->ssi_code == SI_TKILL;
}

static void forward(const struct sb_sup *s, const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;
	pid_t pid = s->pid;

	if (sig == SIGCHLD)
		return;
	switch (s->fwd) {
	case SB_SUP_SAME_GROUP:
		if (sent(si))
			kill(pid, sig);
		return;
	case SB_SUP_OWN_GROUP:
		/* before the mode's target is up, the child itself ends the
		 * run */
		if (s->to_pidfd < 0 ||
		    sb_pidfd_send_signal(s->to_pidfd, sig) < 0)
			kill(pid, sig);
		return;
	case SB_SUP_BY_MODE:
		return;
	case SB_SUP_OWN_SESSION:
		break;
	}
	/* a session of its own: what the terminal sends to python-sb's
	 * process group goes to the child's; a stop stops both (a stop
	 * signal to an orphaned group would be dropped, so SIGSTOP), and a
	 * SIGCONT continues both */
	switch (sig) {
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		kill(-pid, SIGSTOP);
		kill(pid, SIGSTOP);
		raise(SIGSTOP);
		return;
	case SIGCONT:
		kill(-pid, SIGCONT);
		kill(pid, SIGCONT);
		return;
	default:
		if (sent(si))
			kill(pid, sig);
		else if (kill(-pid, sig) < 0)
			kill(pid, sig);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sb_sup_channel(struct sb_sup *s, int fd, int grace_ms)
{
	s->channel = fd;
	s->channel_grace_ms = grace_ms;
}

/* Partial mode: the worker's run ends now. What it left behind came to
 * python-sb (a subreaper) or stays in its pid namespace, whose init the
 * child is (unshare) or ends with (bwrap's --die-with-parent): the mode's
 * sweep after the loop ends those. */
static void end_run(struct sb_sup *s)
{
	if (s->ended)
		return;
	s->ended = true;
	kill(s->pid, SIGKILL);
}

/* The wait the loop may make, shortened to the hang-up's grace. */
static int channel_wait(const struct sb_sup *s, int wait)
{
	uint64_t now;
	int left;

	if (!s->hung_up || s->ended)
		return wait;
	now = now_ns();
	left = now >= s->hup_end
		       ? 0
		       : (int)((s->hup_end - now + 999999) / 1000000);
	return wait < 0 || left < wait ? left : wait;
}

static void channel_ready(struct sb_sup *s, const struct pollfd *p)
{
	if (s->channel >= 0 && !s->hung_up &&
	    (p->revents & (POLLHUP | POLLERR | POLLNVAL))) {
		s->hung_up = true;
		s->hup_end = now_ns() +
			     (uint64_t)s->channel_grace_ms * 1000000u;
	}
	if (s->hung_up && !s->ended && now_ns() >= s->hup_end)
		end_run(s);
}

/* Has the child ended? Its status and rusage in 's'. */
static bool reaped(struct sb_sup *s)
{
	int status;
	pid_t w;

	if (!s->reap_all) {
		w = wait4(s->pid, &s->wstatus, WNOHANG, &s->ru);
		return w == s->pid || (w < 0 && errno == ECHILD);
	}
	while ((w = waitpid(-1, &status, WNOHANG)) > 0)
		if (w == s->pid) {
			s->wstatus = status;
			return true;
		}
	return w < 0 && errno == ECHILD;
}

int sb_sup_loop(struct sb_sup *s, const struct sb_sup_ops *ops, void *ctx)
{
	enum {
		SIG,
		MODE,
		LIMITS = MODE + SB_SUP_MODE_FDS,
		CHAN = LIMITS + SB_LIMIT_WATCH_N
	};

	if (s->lim)
		s->lim->pid = s->pid; /* for the denial log's record */
	for (;;) {
		struct pollfd pfd[CHAN + 1];
		struct signalfd_siginfo si;
		size_t i;
		int wait = -1;

		pfd[SIG] = (struct pollfd){ s->sfd, POLLIN, 0 };
		for (i = MODE; i < LIMITS; i++)
			pfd[i] = (struct pollfd){ -1, 0, 0 };
		if (ops && ops->fds)
			ops->fds(s, ctx, pfd + MODE);
		if (ops && ops->wait_ms)
			wait = ops->wait_ms(s, ctx);
		sb_limits_watch_poll(&s->lw, pfd + LIMITS);
		/* only the hang-up (reported whatever the events asked), not
		 * the requests the worker has yet to read */
		pfd[CHAN] = (struct pollfd){ s->hung_up ? -1 : s->channel, 0,
					     0 };
		wait = channel_wait(s, wait);
		/* a negative fd is ignored by poll */
		if (poll(pfd, SB_ARRAY_LEN(pfd), wait) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "python-sb: poll: %s; the sandbox is "
					"stopped.\n",
				strerror(errno));
			sb_sup_abort(s);
			return -1;
		}
		sb_limits_watch_handle(s->lim, &s->lw, pfd + LIMITS, s->pid);
		channel_ready(s, &pfd[CHAN]);
		if (ops && ops->ready)
			ops->ready(s, ctx, pfd + MODE);
		/* nothing to read and no child ended (its SIGCHLD, blocked,
		 * would make the signalfd readable): two system calls saved
		 * on each of the mode's wake-ups */
		if (!(pfd[SIG].revents & POLLIN))
			continue;
		while (read(s->sfd, &si, sizeof(si)) == sizeof(si)) {
			if (s->channel >= 0 && si.ssi_signo == SIGTERM)
				end_run(s);
			else
				forward(s, &si);
			if (ops && ops->signal)
				ops->signal(s, ctx, &si);
		}
		if (reaped(s))
			return 0;
	}
}

void sb_sup_abort(struct sb_sup *s)
{
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &s->wstatus, 0);
}

void sb_sup_stop(struct sb_sup *s, bool sweep)
{
	sb_limits_watch_close(&s->lw);
	if (sweep)
		sb_sweep_descendants(&s->sweep, s->lim);
}

void sb_sup_end(struct sb_sup *s)
{
	close(s->sfd);
	s->sfd = -1;
	if (s->fd_dir >= 0)
		close(s->fd_dir);
	s->fd_dir = -1;
	sb_sweep_release(&s->sweep);
	spawn_free(s);
	sigprocmask(SIG_SETMASK, &s->old, NULL);
}

int sb_sup_exit_status(int wstatus)
{
	return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus)
				  : 128 + WTERMSIG(wstatus);
}
