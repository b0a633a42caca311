/* suplog.h - the supervisor's side of the denial log (suplog.c): the
 * records of what the supervisor refuses, and the relay of the Python
 * guard's refusals under os-sandbox=landlock.
 */
#ifndef SB_SUPLOG_H
#define SB_SUPLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sb_denial;

/* 'log' is the log the launcher opened; 'relay' the supervisor's end of
 * the datagram socket (SO_PASSCRED, non-blocking) the guard sends its
 * refusals to, 'relay_peer' the end the program inherits, which the
 * supervisor closes once the program is started (sb_suplog_started);
 * 'cap' the log-max-size= (sb_denial_write). */
void sb_suplog_set(int log, int relay, int relay_peer, uint64_t cap);
/* In the guest of os-sandbox=qemu: 'log' is the virtio-serial port to the
 * launcher on the host, which writes the log; each record goes as the line
 * sb_denial_send writes (the host applies the cap). */
void sb_suplog_set_wire(bool on);
/* What sb_suplog_set was given (-1: nothing): how the launcher hands the
 * log and the relay to the second stage of bwrap and firejail. */
void sb_suplog_fds(int *log, int *relay, int *relay_peer);
/* Is there a log? */
bool sb_suplog_on(void);
/* One record as it is: to the log, or in the guest to the host's (the
 * qemu relay writes the guest's records here). Nothing without a log. */
void sb_suplog_record(const struct sb_denial *d);
/* Has a guard said the program's own code starts (SB_RELAY_STARTED)? */
bool sb_suplog_program_started(void);
/* The relay socket to poll, or -1. */
int sb_suplog_relay_fd(void);
/* The program is started: drop our copy of its end of the relay. */
void sb_suplog_started(void);
/* A refusal of the supervisor: layer "supervisor", by "supervisor". */
void sb_suplog_refused(pid_t pid, const char *kind, const char *target,
		       const char *rule, const char *add);
struct sb_fs_decision;
/* A write the supervisor refused on the file rules' decision 'd' about the
 * canonical path 'canon' (a Unix socket's bind or connect, a mode or time
 * change): the rule that decided (ignore=, expose-ro=) or none, and
 * expose-rw=<canon> to add unless an ignore= rule hides it. */
void sb_suplog_fs_refused(pid_t pid, const char *kind, const char *canon,
			  const struct sb_fs_decision *d);
/* The same for a read the supervisor refused (an inotify watch), with
 * expose-ro=<canon> to add. */
void sb_suplog_fs_read_refused(pid_t pid, const char *kind,
			       const char *canon,
			       const struct sb_fs_decision *d);
/* A file call Landlock refuses (filelog.c saw it before the kernel judged
 * it): layer "landlock", by "supervisor"; the rule that decided as for
 * sb_suplog_fs_refused, and expose-rw=<canon> to add for a write,
 * expose-ro=<canon> for a read. */
void sb_suplog_landlock(pid_t pid, const char *canon, bool write,
			const struct sb_fs_decision *d);
/* A signal Landlock's scope refuses ("pid N", filelog.c): layer
 * "landlock", kind "signal", a built-in rule, nothing to add. */
void sb_suplog_landlock_signal(pid_t pid, const char *target);
/* A system call outside the allowlist, refused with EPERM: layer
 * "seccomp", no rule to add (none allows it). */
void sb_suplog_syscall(pid_t pid, const char *name);
/* Write a record for each datagram waiting on the relay. */
void sb_suplog_drain(void);

#endif
