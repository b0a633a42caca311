/* seccomp_filter.h - the system-call allowlist of the kernel layer (in
 * seccomp.c) and its one table: a call it does not allow fails with EPERM.
 * kernel.c applies it; build/syscall-table prints the table. Not named seccomp.h: with src/ on the
 * include path that name would hide libseccomp's <seccomp.h>.
 */
#ifndef SB_SECCOMP_FILTER_H
#define SB_SECCOMP_FILTER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

enum sb_sys_verdict {
	SB_SYS_ALLOW,  /* whatever the arguments */
	SB_SYS_ARGS,   /* allowed with the arguments its rules name */
	SB_SYS_NOTIFY, /* the supervisor judges and performs it */
	SB_SYS_ENOSYS, /* "does not exist": callers fall back */
	SB_SYS_REFUSE, /* EPERM, like every call not in the table */
};

struct sb_seccomp_build; /* seccomp.c's */

struct sb_sys_entry {
	const char *name; /* libseccomp's name of the call */
	enum sb_sys_verdict verdict;
	const char *why;
	/* seccomp.c's rule builder, or NULL */
	int (*rules)(struct sb_seccomp_build *c, int nr);
};

/* The one table, in the order of docs/syscalls.md's sections. */
const struct sb_sys_entry *sb_sys_table(size_t *n);
/* A call's entry, or NULL: not in the table, refused. */
const struct sb_sys_entry *sb_sys_lookup(const char *name);

/* A filter compiled at build time (seccomp_gen.c): BPF instructions. */
struct sb_seccomp_prebuilt {
	bool inet, debug;
	uint32_t arch; /* libseccomp's SCMP_ARCH_* it was built for */
	const void *insns; /* struct sock_filter[len] */
	size_t len;
};

/* The filter for a policy with (inet) or without net= rules, PYSB_DEBUG
 * on or off, as BPF written to fd (for seccomp_gen.c). 0 or -errno. */
int sb_seccomp_export(bool inet, bool debug, int fd);

/* Can this kernel load a seccomp filter that answers with an errno? */
bool sb_seccomp_available(void);

/* The filter's refusals in one line ("ptrace, bpf, ... -> EPERM; ..."),
 * for PYSB_DEBUG. */
const char *sb_seccomp_summary(struct sb_arena *a, const struct sb_policy *p);

/* Load the filter on the calling process (default: EPERM; the table's
 * calls as it says; a foreign architecture: the process is killed).
 * With no net= rule at all, AF_INET and AF_INET6 sockets are refused too.
 * With 'listener' (python-sb as the supervisor: every kernel provider),
 * connect, bind, listen, sendmsg, sendmmsg and sendto with an address,
 * chmod and the utimes family are sent to the supervisor, and *listener
 * is the notification fd, which the
 * caller must hand over and close before it execs. Without 'listener'
 * there is nobody to judge them: they, chmod and the utimes family fail
 * with EPERM (fail closed). 'scoped': Landlock scopes signals (ABI 6);
 * else the signal calls go to the supervisor too (refused without one),
 * and F_SETOWN may only clear a descriptor's owner. 'files' (with
 * 'listener'): every file call goes to the supervisor too, which performs
 * those on the entries Landlock cannot grant (entrysup.c).
 * Returns 0, or -1 with *err naming the failing step. */
int sb_seccomp_apply(struct sb_arena *a, const struct sb_policy *p,
		     bool scoped, bool files, int *listener, const char **err);

/* With PYSB_DEBUG or a denial log the file calls (filecall.h) that the
 * table allows, or allows with arguments, and every call the filter
 * refuses go to the supervisor instead: would the argument rules of open,
 * creat, mknod or chmod refuse this call (the notification's nr and
 * args)? The supervisor then answers EPERM as the filter would, and logs
 * it as the filter's refusal. */
bool sb_seccomp_args_refused(int nr, const __u64 *args);
/* Would the filter let this call through by itself, its argument rules
 * included (a call the table allows, or allows with arguments that
 * sb_seccomp_args_refused says again)? The one test before the supervisor
 * lets a notified file call or signal send go on: anything else is
 * refused with EPERM, so that a rule the C copy lacks never widens. */
bool sb_seccomp_lets_through(int nr, const __u64 *args);

/* Learning (learn_native.c): load on the calling process a filter that
 * refuses nothing and sends open, openat, openat2, creat, execve,
 * execveat, connect, bind, sendmsg, sendmmsg and sendto with an address,
 * and the calls that make, remove or move directory entries (mkdir,
 * mknod, unlink, rmdir, rename, link, symlink and their *at forms), to
 * the learning supervisor as user notifications; no_new_privs is set. For
 * the time between fork and exec: no allocation outside libseccomp's, no
 * message. Returns the notification fd (the caller hands it over and
 * closes it before it execs), or -errno. */
int sb_seccomp_apply_learning(void);

#endif
