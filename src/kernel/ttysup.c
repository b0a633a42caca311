/* ttysup.c - a terminal's modes, set by the supervisor for the program.
 * The modes of a terminal the program inherited are the caller's too, and
 * one of them acts on processes outside: with TOSTOP, a background job of
 * the caller's shell that writes to the terminal is stopped (SIGTTOU), and
 * it stays stopped after the run, though python-sb sets the modes back
 * (ttystate.c; attack K50). BPF cannot read the termios behind the
 * pointer, so TCSETS, TCSETSW and TCSETSF come here (seccomp.c): the
 * supervisor copies the program's termios once, refuses it (EPERM) when
 * it changes TOSTOP, and sets it itself on its duplicate of the program's
 * descriptor (pidfd_getfd): a thread of the program that rewrites the
 * termios after the check changes nothing. Everything else is the
 * program's: echo, raw mode, speeds, control characters. TCSETSW does not
 * wait here for the output to drain (the supervisor must not block on a
 * terminal the program filled): it is TCSETS; TCSETSF flushes the input,
 * then sets. The kernel's headers, not glibc's: the kernel reads its own
 * struct termios, which glibc's is not.
 */
#include "ttysup.h"

#include <asm/termbits.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api_registry.h"
#include "notif.h"
#include "suplog.h"

bool sb_ttysup_handles(const struct seccomp_notif *req)
{
	return req->data.nr == __NR_ioctl &&
	       sb_ioctl_request_judged((unsigned long)req->data.args[1]);
}

/* Set 'want' on our descriptor 'fd' as request 'request' would. The
 * terminal may be python-sb's controlling one, and python-sb in the
 * background: SIGTTOU blocked, the kernel sets the modes (as it does for
 * the program, which has no controlling terminal) instead of stopping
 * python-sb's job. */
static long set_modes(int fd, unsigned long request,
		      const struct termios *want)
{
	sigset_t ttou, old;
	long rc = 0;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &ttou, &old);
	if (request == TCSETSF && ioctl(fd, TCFLSH, TCIFLUSH) < 0)
		rc = -errno;
	if (!rc && ioctl(fd, TCSETS, want) < 0)
		rc = -errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

bool sb_ttysup_serve(int listener, const struct seccomp_notif *req,
		     long *rc)
{
	const __u64 *a = req->data.args;
	unsigned long request = (unsigned long)(a[1] & 0xffffffffU);
	struct termios want, now;
	int pidfd, fd;

	if (sb_peek(req->pid, a[2], &want, sizeof(want)) < 0) {
		*rc = -EFAULT;
		return true;
	}
	pidfd = sb_pidfd_of_caller((pid_t)req->pid);
	if (pidfd < 0)
		return false;
	/* the kernel reads the descriptor as an int */
	fd = sb_pidfd_getfd(pidfd, (int)(uint32_t)a[0]);
	close(pidfd);
	if (fd < 0) {
		*rc = -EBADF;
		return true;
	}
	/* the copy and the descriptor were the caller's, not a recycled
	 * pid's */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) != 0) {
		close(fd);
		return false;
	}
	if (ioctl(fd, TCGETS, &now) < 0) {
		*rc = -errno;
	} else if ((want.c_lflag ^ now.c_lflag) & TOSTOP) {
		sb_suplog_refused((pid_t)req->pid, "terminal",
				  want.c_lflag & TOSTOP ? "setting TOSTOP"
							: "clearing TOSTOP",
				  "built in: TOSTOP stops the caller's "
				  "background jobs that write to the terminal",
				  NULL);
		*rc = -EPERM;
	} else {
		*rc = set_modes(fd, request, &want);
	}
	close(fd);
	return true;
}
