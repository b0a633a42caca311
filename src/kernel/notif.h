/* notif.h - what both seccomp-notification supervisors (the network one,
 * netsup.c, and learning's, learn_native.c) need to reach the calling
 * process: its pidfd, a copy of one of its descriptors, its memory; and
 * what every supervising python-sb (those two, learning's, the namespace
 * providers') does with the signals it gets: passes them on. */
#ifndef SB_NOTIF_H
#define SB_NOTIF_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/types.h>

int sb_pidfd_open(pid_t pid, unsigned flags);
/* The pidfd of a notifying thread: a thread of a multi-threaded program is
 * no group leader (PIDFD_THREAD, or its group leader before Linux 6.9). */
int sb_pidfd_of_caller(pid_t pid);
/* A duplicate of descriptor 'fd' of the process behind 'pidfd'. */
int sb_pidfd_getfd(int pidfd, int fd);
/* Copy 'len' bytes at 'remote' in process 'pid'; 0 or -EFAULT. */
int sb_peek(pid_t pid, uint64_t remote, void *buf, size_t len);
/* Send 'sig' to the process behind 'pidfd'; 0, or -1 with errno. */
int sb_pidfd_send_signal(int pidfd, int sig);

/* The signals a supervising python-sb passes on to the program (SIGINT,
 * SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2) and SIGCHLD, blocked; the
 * previous mask in *old. Returns a signalfd for them (SFD_CLOEXEC |
 * 'flags'), or -1 with errno. */
int sb_signals_block(sigset_t *old, int flags);
/* Add the job-control signals (SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT) and
 * SIGWINCH to the blocked set and to signalfd 'sfd': the supervisor of a
 * program in a session of its own passes on what the terminal sends.
 * 0, or -1 with errno. */
int sb_signals_add_job(int sfd, int flags);
/* Was it sent by a process (kill, sigqueue, tgkill, pidfd_send_signal),
 * from this pid namespace or outside it? A terminal's Ctrl-C is not: it
 * reaches the program's process group by itself. */
bool sb_signal_sent(const struct signalfd_siginfo *si);

#endif
