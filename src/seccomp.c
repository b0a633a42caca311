/* seccomp.c - the deny list of os-sandbox=landlock, built with libseccomp.
 * It owns which system calls a sandboxed process loses: those that attack
 * the kernel (bpf, module loading, io_uring...), reach into another process
 * (ptrace, process_vm_*), or leave the sandbox's view (mount, namespaces).
 * Everything else is allowed: Landlock does the file and TCP judging, and
 * with net= rules the socket calls that name an address go to the network
 * supervisor (netsup.c) as user notifications; with PYSB_DEBUG set the
 * refusals go there too, so that each one is reported as it happens. It
 * must not print or exit; kernel.c and netsup.c report. It also builds learning mode's filter, which refuses
 * nothing and only shows the learning supervisor what native code opens,
 * execs, connects to, and which directories it makes, removes or moves
 * entries in (learn_native.c).
 */
#include "seccomp_filter.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_GET_ACTION_AVAIL
#define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_ERRNO
#define SECCOMP_RET_ERRNO 0x00050000U
#endif

/* Refused whatever their arguments. */
static const char *const denied[] = {
	/* other processes' memory */
	"ptrace", "process_vm_readv", "process_vm_writev",
	/* kernel attack surface */
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
	"add_key", "request_key", "keyctl",
	/* the mount family: a new view of the file system */
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
	"fsmount", "fspick", "mount_setattr",
	/* namespaces */
	"unshare", "setns",
	/* the machine itself */
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "iopl", "ioperm", "swapon", "swapoff", "reboot",
	"acct", "quotactl", "lookup_dcookie",
	/* opens by file handle, past any path rule (CAP_DAC_READ_SEARCH) */
	"open_by_handle_at",
};

static const uint64_t clone_ns_flags[] = {
	CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
};

bool sb_seccomp_available(void)
{
	uint32_t action = SECCOMP_RET_ERRNO;

	return syscall(__NR_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

const char *sb_seccomp_summary(struct sb_arena *a, const struct sb_policy *p)
{
	struct sb_buf b = { 0 };
	const char *s;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(denied); i++)
		sb_buf_printf(&b, "%s%s", i ? ", " : "", denied[i]);
	sb_buf_puts(&b, ", clone with a CLONE_NEW* flag, personality other "
			"than PER_LINUX or a query, socket of AF_NETLINK, "
			"AF_PACKET, SOCK_RAW or SOCK_PACKET");
	if (!p->any_net_rule)
		sb_buf_puts(&b, ", socket of AF_INET or AF_INET6 (no net= "
				"rule)");
	sb_buf_puts(&b, ": EPERM; clone3: ENOSYS (libc falls back to clone); "
			"another architecture's calls: the process is killed");
	/* always notified: named Unix sockets are judged by the file rules
	 * even without a net= rule (D26) */
	sb_buf_puts(&b, "; connect, bind, listen, sendmsg, sendmmsg, sendto "
			"with an address: the network supervisor");
	s = sb_arena_strdup(a, b.s);
	sb_buf_free(&b);
	return s;
}

/* personality(2): only PER_LINUX (0) and the query 0xffffffff pass. A
 * libseccomp rule compares an argument once, so "neither 0 nor all ones"
 * is spelled as "two adjacent bits differ" (one masked compare each),
 * plus "a bit above 31 is set" (glibc truncates to 32 bits; the kernel
 * ignores them, so no legitimate caller sets one). */
static int deny_personality(scmp_filter_ctx f, uint32_t act)
{
	int nr = SCMP_SYS(personality);
	int rc = seccomp_rule_add(f, act, nr, 1,
				  SCMP_A0(SCMP_CMP_GT, 0xffffffffULL, 0));
	unsigned i;

	for (i = 0; i < 31 && rc == 0; i++) {
		uint64_t lo = 1ULL << i, hi = 1ULL << (i + 1);

		rc = seccomp_rule_add(f, act, nr, 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, lo | hi, lo));
		if (rc == 0)
			rc = seccomp_rule_add(f, act, nr, 1,
					      SCMP_A0(SCMP_CMP_MASKED_EQ,
						      lo | hi, hi));
	}
	return rc;
}

static int deny_sockets(scmp_filter_ctx f, uint32_t act, bool inet)
{
	static const int families[] = { AF_NETLINK, AF_PACKET };
	static const int types[] = { SOCK_RAW, SOCK_PACKET };
	int nr = SCMP_SYS(socket), rc = 0;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(families) && !rc; i++)
		rc = seccomp_rule_add(f, act, nr, 1,
				      SCMP_A0(SCMP_CMP_EQ, families[i], 0));
	/* the kernel masks SOCK_NONBLOCK and SOCK_CLOEXEC off the type */
	for (i = 0; i < SB_ARRAY_LEN(types) && !rc; i++)
		rc = seccomp_rule_add(f, act, nr, 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf,
					      types[i]));
	if (inet && !rc)
		rc = seccomp_rule_add(f, act, nr, 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_INET, 0));
	if (inet && !rc)
		rc = seccomp_rule_add(f, act, nr, 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_INET6, 0));
	return rc;
}

/* The calls the network supervisor performs in the program's place. The
 * socket's family is not visible to BPF (it is behind the fd), so every
 * socket is notified; sendto without an address (a connected socket, a
 * register the program cannot change afterwards) is not. */
static int notify_sockets(scmp_filter_ctx f)
{
	static const char *const calls[] = { "connect", "bind", "listen",
					     "sendmsg", "sendmmsg" };
	size_t i;
	int rc = 0;

	for (i = 0; i < SB_ARRAY_LEN(calls) && !rc; i++)
		rc = seccomp_rule_add(f, SCMP_ACT_NOTIFY,
				      seccomp_syscall_resolve_name(calls[i]),
				      0);
	if (!rc)
		rc = seccomp_rule_add(f, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1,
				      SCMP_A4(SCMP_CMP_NE, 0, 0));
	return rc;
}

static int build(scmp_filter_ctx f, const struct sb_policy *p,
		 bool notify, const char **what)
{
	/* PYSB_DEBUG: the supervisor reports each refusal and answers EPERM
	 * itself; should it die, a notified call fails (ENOSYS), never
	 * passes */
	uint32_t eperm = notify && getenv("PYSB_DEBUG")
				 ? SCMP_ACT_NOTIFY
				 : SCMP_ACT_ERRNO(EPERM);
	size_t i;
	int rc;

	*what = "seccomp_attr_set";
	/* a foreign ABI (i386 int 0x80, x32) is not filtered: forbid it */
	rc = seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc)
		return rc;
	rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 1);
	if (rc)
		return rc;
	/* a binary search over syscall numbers: every call of the program
	 * runs the filter, most of them to reach the default allow. An older
	 * libseccomp without it builds a linear filter, as correct. */
	(void)seccomp_attr_set(f, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	*what = "seccomp_rule_add";
	for (i = 0; i < SB_ARRAY_LEN(denied); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);

		/* a call this architecture does not have (iopl on arm64) */
		if (nr == __NR_SCMP_ERROR)
			continue;
		rc = seccomp_rule_add(f, eperm, nr, 0);
		if (rc)
			return rc;
	}
	rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	for (i = 0; i < SB_ARRAY_LEN(clone_ns_flags) && !rc; i++)
		rc = seccomp_rule_add(f, eperm, SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ,
					      clone_ns_flags[i],
					      clone_ns_flags[i]));
	if (!rc)
		rc = deny_personality(f, eperm);
	if (!rc)
		rc = deny_sockets(f, eperm, !p->any_net_rule);
	if (!rc && notify)
		rc = notify_sockets(f);
	return rc;
}

int sb_seccomp_apply(struct sb_arena *a, const struct sb_policy *p,
		     int *listener, const char **err)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	const char *what = "seccomp_init";
	int rc = -ENOMEM;

	if (f) {
		rc = build(f, p, listener != NULL, &what);
		if (!rc) {
			what = "seccomp_load";
			rc = seccomp_load(f);
		}
		if (!rc && listener) {
			what = "seccomp_notify_fd";
			*listener = seccomp_notify_fd(f);
			if (*listener < 0)
				rc = *listener;
		}
		seccomp_release(f);
	}
	if (rc) {
		*err = sb_arena_printf(a, "%s: %s", what, strerror(-rc));
		return -1;
	}
	return 0;
}

/* Learning enforces nothing: the default stays allow and no call is
 * refused, so a program learns under the same conditions it will be
 * enforced under, minus the refusals. */
int sb_seccomp_apply_learning(void)
{
	static const char *const calls[] = {
		"open",	   "openat",  "openat2", "creat", "execve",
		"execveat", "connect", "bind",	  "sendmsg", "sendmmsg",
		/* what makes, removes or moves a directory's entries */
		"mkdir",   "mkdirat", "mknod",	 "mknodat", "unlink",
		"unlinkat", "rmdir",  "rename",	 "renameat", "renameat2",
		"link",	   "linkat",  "symlink", "symlinkat",
	};
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	size_t i;
	int rc = 0, fd = -1;

	if (!f)
		return -ENOMEM;
	rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 1);
	for (i = 0; i < SB_ARRAY_LEN(calls) && !rc; i++) {
		int nr = seccomp_syscall_resolve_name(calls[i]);

		/* open and creat are not on every architecture (arm64) */
		if (nr == __NR_SCMP_ERROR)
			continue;
		rc = seccomp_rule_add(f, SCMP_ACT_NOTIFY, nr, 0);
	}
	if (!rc)
		rc = seccomp_rule_add(f, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1,
				      SCMP_A4(SCMP_CMP_NE, 0, 0));
	if (!rc)
		rc = seccomp_load(f);
	if (!rc) {
		fd = seccomp_notify_fd(f);
		rc = fd < 0 ? fd : 0;
	}
	seccomp_release(f);
	return rc ? rc : fd;
}
