/* supervise.c - learning mode keeps python-sb as the program's parent: it
 * reads the guard's records as they are written (so what was seen survives
 * os._exit, a crash or SIGKILL of the program), forwards the signals a user
 * sends, and writes the rules when the program ends, and at once on the
 * first SIGINT, SIGTERM or SIGQUIT (a server is learned by pressing Ctrl-C).
 */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static void drain(int fd, struct sb_learn_session *s)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sb_learn_feed(s, buf, (size_t)n);
}

int sb_supervise_learning(const char *path, char *const argv[],
			  char *const envp[], int keep_fd, int rec_fd,
			  struct sb_learn_session *s)
{
	static const int forwarded[] = { SIGINT, SIGTERM, SIGQUIT, SIGHUP };
	int report[2], status = 0, err = 0, rc, sfd, i;
	bool saved_on_signal = false;
	sigset_t mask, old;
	pid_t pid;

	/* the signals arrive through a signalfd; the child gets its own
	 * dispositions back before exec */
	sigemptyset(&mask);
	for (i = 0; i < 4; i++)
		sigaddset(&mask, forwarded[i]);
	sigaddset(&mask, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
	    pipe2(report, O_CLOEXEC) < 0) {
		fprintf(stderr, "python-sb: learning set-up: %s\n",
			strerror(errno));
		return 255;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "python-sb: fork: %s\n", strerror(errno));
		return 255;
	}
	if (pid == 0) {
		/* between fork and exec: async-signal-safe calls only */
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(rec_fd);
		execve(path, argv, envp);
		err = errno;
		if (write(report[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(keep_fd);
	close(report[1]);
	if (read(report[0], &err, sizeof(err)) == sizeof(err)) {
		close(report[0]);
		waitpid(pid, NULL, 0);
		fprintf(stderr, "python-sb: exec %s: %s\n", path,
			strerror(err));
		return 255;
	}
	close(report[0]);
	fcntl(rec_fd, F_SETFL, O_NONBLOCK);

	for (;;) {
		struct pollfd pfd[2] = { { rec_fd, POLLIN, 0 },
					 { sfd, POLLIN, 0 } };
		struct signalfd_siginfo si;
		pid_t done;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			drain(rec_fd, s);
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			/* Ctrl-C on the terminal reaches the whole process
			 * group, the program too: forward only what another
			 * process sent to python-sb */
			if (si.ssi_pid != 0)
				kill(pid, (int)si.ssi_signo);
			if (si.ssi_signo != SIGHUP && !saved_on_signal) {
				/* saved once now: the program may not get
				 * to its end */
				saved_on_signal = true;
				drain(rec_fd, s);
				sb_learn_save(s);
			}
		}
		done = waitpid(pid, &status, WNOHANG);
		if (done == pid)
			break;
	}
	/* what the program wrote before it ended; a grandchild that kept the
	 * pipe open does not hold the run */
	drain(rec_fd, s);
	close(rec_fd);
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	s->quiet_when_unchanged = saved_on_signal;
	rc = WIFEXITED(status) ? WEXITSTATUS(status)
			       : 128 + WTERMSIG(status);
	if (sb_learn_save(s) < 0)
		return 255;
	return rc;
}
