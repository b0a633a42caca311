/* seccomp_filter.h - the system-call filter of os-sandbox=landlock (in
 * seccomp.c): the calls that attack the kernel or leave the sandbox fail
 * with EPERM. Only kernel.c calls it. Not named seccomp.h: with src/ on the
 * include path that name would hide libseccomp's <seccomp.h>.
 */
#ifndef SB_SECCOMP_FILTER_H
#define SB_SECCOMP_FILTER_H

#include <stdbool.h>

#include "policy.h"

/* Can this kernel load a seccomp filter that answers with an errno? */
bool sb_seccomp_available(void);

/* The filter's refusals in one line ("ptrace, bpf, ... -> EPERM; ..."),
 * for PYSB_DEBUG. */
const char *sb_seccomp_summary(struct sb_arena *a, const struct sb_policy *p);

/* Load the filter on the calling process (default: allow; the listed calls:
 * EPERM; clone3: ENOSYS; a foreign architecture: the process is killed).
 * With no net= rule at all, AF_INET and AF_INET6 sockets are refused too.
 * With 'listener' (the policy has net= rules: the network supervisor),
 * connect, bind, listen, sendmsg, sendmmsg and sendto with an address are
 * sent to the supervisor, and *listener is the notification fd, which the
 * caller must hand over and close before it execs.
 * Returns 0, or -1 with *err naming the failing step. */
int sb_seccomp_apply(struct sb_arena *a, const struct sb_policy *p,
		     int *listener, const char **err);

/* Learning (learn_native.c): load on the calling process a filter that
 * refuses nothing and sends open, openat, openat2, creat, execve,
 * execveat, connect, bind, sendmsg, sendmmsg and sendto with an address to
 * the learning supervisor as user notifications; no_new_privs is set. For
 * the time between fork and exec: no allocation outside libseccomp's, no
 * message. Returns the notification fd (the caller hands it over and
 * closes it before it execs), or -errno. */
int sb_seccomp_apply_learning(void);

#endif
