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
 * its own, never was). An anonymous pipe the program may only read loses
 * its write bits while the run lasts (sb_ttystate_narrow_pipes): opened
 * again through /proc/self/fd, which Landlock does not judge (the kernel's
 * pipe mount), a read-only stdin pipe was writable, and the caller's next
 * command read what the program wrote there (attack K52).
 */
#include "ttystate.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef PIPEFS_MAGIC
#define PIPEFS_MAGIC 0x50495045
#endif

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
	/* all modes first: one pipe may be on two descriptors (2>&1) */
	for (fd = 0; fd < 3; fd++) {
		struct statfs fs;
		struct stat st;

		s->pipe[fd] = s->open[fd] && fstat(fd, &st) == 0 &&
			      S_ISFIFO(st.st_mode) && fstatfs(fd, &fs) == 0 &&
			      fs.f_type == PIPEFS_MAGIC;
		if (s->pipe[fd])
			s->mode[fd] = st.st_mode & 07777;
	}
}

void sb_ttystate_narrow_pipes(const struct sb_ttystate *s)
{
	int fd;

	for (fd = 0; fd < 3; fd++) {
		struct stat st;
		mode_t off;

		/* a read-only end only: the pipe's writer outside (the
		 * caller's producer) opening /dev/stdout again gets EACCES
		 * meanwhile; the read bits of a write-only stdout stay, as
		 * its reader's /dev/stdin needs them (jq . /dev/stdin) */
		if (!s->pipe[fd] || (s->flags[fd] & O_ACCMODE) != O_RDONLY ||
		    fstat(fd, &st) != 0)
			continue;
		off = S_IWUSR | S_IWGRP | S_IWOTH;
		/* not the pipe's owner: the program, of this user, is not
		 * either (no capability), and the bits stay as they were */
		if (st.st_mode & off)
			(void)fchmod(fd, st.st_mode & 07777 & ~off);
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
	struct stat st;
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
		if (s->pipe[fd] && fstat(fd, &st) == 0 &&
		    (st.st_mode & 07777) != s->mode[fd])
			(void)fchmod(fd, s->mode[fd]);
		if (!s->tty[fd] || tcgetattr(fd, &now) != 0 ||
		    same_modes(&now, &s->modes[fd]))
			continue;
		sigprocmask(SIG_BLOCK, &ttou, &old);
		(void)tcsetattr(fd, TCSANOW, &s->modes[fd]);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
}
