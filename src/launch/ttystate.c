/* ttystate.c - the caller's descriptors given back as they were. A program
 * under python-sb inherits descriptors 0, 1 and 2: their open file
 * descriptions are the caller's (its shell's terminal, a pipe, a file), so
 * F_SETFL's O_NONBLOCK on them, or a terminal's modes (TCSETS: echo off,
 * raw mode), outlived the run: the caller's next read failed with EAGAIN,
 * its terminal stayed silent. Both are the program's to change while it
 * runs (CPython's own os.set_blocking, getpass, readline); python-sb, which
 * outlives every process of the run, sets back what changed once it ends.
 * A terminal's modes are set with SIGTTOU blocked: python-sb in a
 * background job would be stopped otherwise (the program, in a session of
 * its own, never was).
 */
#include "ttystate.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* the flags F_SETFL can change */
#define SETTABLE (O_APPEND | O_ASYNC | O_NONBLOCK | O_DIRECT | O_NOATIME)

void sb_ttystate_save(struct sb_ttystate *s)
{
	int fd;

	memset(s, 0, sizeof(*s));
	for (fd = 0; fd < 3; fd++) {
		s->flags[fd] = fcntl(fd, F_GETFL);
		s->open[fd] = s->flags[fd] >= 0;
		s->tty[fd] = s->open[fd] && tcgetattr(fd, &s->modes[fd]) == 0;
	}
}

static bool same_modes(const struct termios *a, const struct termios *b)
{
	return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag &&
	       a->c_cflag == b->c_cflag && a->c_lflag == b->c_lflag &&
	       memcmp(a->c_cc, b->c_cc, sizeof(a->c_cc)) == 0 &&
	       cfgetispeed(a) == cfgetispeed(b) &&
	       cfgetospeed(a) == cfgetospeed(b);
}

void sb_ttystate_restore(const struct sb_ttystate *s)
{
	sigset_t ttou, old;
	struct termios now;
	int fd, fl;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	for (fd = 0; fd < 3; fd++) {
		if (!s->open[fd])
			continue;
		fl = fcntl(fd, F_GETFL);
		if (fl >= 0 && ((fl ^ s->flags[fd]) & SETTABLE))
			(void)fcntl(fd, F_SETFL,
				    (fl & ~SETTABLE) | (s->flags[fd] & SETTABLE));
		if (!s->tty[fd] || tcgetattr(fd, &now) != 0 ||
		    same_modes(&now, &s->modes[fd]))
			continue;
		sigprocmask(SIG_BLOCK, &ttou, &old);
		(void)tcsetattr(fd, TCSANOW, &s->modes[fd]);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
}
