/* caller.h - what python-sb's caller gave it that python-sb cannot work
 * with as given, held aside while it works and given back to the program
 * at its exec.
 *
 * - A closed standard descriptor (0, 1 or 2: `<&-`, `>&-`, a daemon's
 *   child): the first descriptor python-sb opened took its number. The
 *   policy's memfd then sat on 0 or 1 and the guard refused it (every run
 *   ended 255); a message meant for stderr went into whatever file held 2.
 * - SIGCHLD ignored (SIG_IGN or SA_NOCLDWAIT, which exec keeps): the kernel
 *   reaped python-sb's children with their status unread and sent no
 *   SIGCHLD, so a supervisor waited forever (and ended 0 when killed), and
 *   a limited run ended 0 whatever the program's status.
 *
 * Take holds each closed standard descriptor with /dev/null and sets
 * SIGCHLD to SIG_DFL; give, just before the program's own exec, closes
 * those placeholders again and puts the caller's SIGCHLD action back, so
 * the program starts as plain python would. The tools python-sb runs
 * (bwrap, firejail, qemu, pasta) are not given them: under bwrap and
 * firejail the program finds /dev/null there and SIGCHLD at SIG_DFL, under
 * qemu the guest's relayed streams.
 */
#ifndef SB_CALLER_H
#define SB_CALLER_H

/* First thing in main, before anything is opened. 0; or -1 with errno
 * and the descriptor in *bad when a closed standard descriptor cannot be
 * held (no /dev/null): the run must not go on. */
int sb_caller_take(int *bad);
/* In the program's child, right before its exec: async-signal-safe, and
 * it writes no memory (a CLONE_VM child shares python-sb's). */
void sb_caller_give(void);

#endif
