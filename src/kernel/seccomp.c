/* seccomp.c - the system-call allowlist of the kernel layer (every kernel
 * provider applies it: landlock directly, unshare, bwrap and firejail in
 * python-sb's second stage), built with libseccomp. It owns the one table of
 * system calls (sb_sys_table): each call a CPython program and its usual native
 * extensions need is allowed, allowed only with the arguments that keep it to
 * the program itself (ioctl requests, the scheduling calls on pid 0, socket
 * families, clone flags, setsockopt options, file modes), or sent to python-sb
 * as the supervisor (the socket calls that name an address: netsup.c; the mode
 * and time changes, judged against the expose-rw trees: netsup.c too).
 * Everything else, and every call a newer kernel adds, fails with EPERM (ENOSYS
 * for the few a libc falls back from). docs/syscalls.md is this table, printed
 * by build/syscall-table and checked by tests/e2e/test_syscalls.py. With
 * PYSB_DEBUG or a denial log the refusals go to the supervisor too, which names
 * or logs each one, and so do the file calls and signal sends (filecall.h):
 * it lets one go on only when the filter alone would
 * (sb_seccomp_lets_through), after recording what Landlock will refuse
 * (filelog.c). It must not print or exit; kernel.c and netsup.c report. It
 * also builds learning mode's filter, which refuses nothing and only shows the
 * learning supervisor what native code opens, execs, connects to, and which
 * directories it makes, removes or moves entries in (learn_native.c).
 */
#include "seccomp_filter.h"

#include "api_registry.h"
#include "filecall.h"
#include "sockopt.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#ifndef SECCOMP_GET_ACTION_AVAIL
#define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_ERRNO
#define SECCOMP_RET_ERRNO 0x00050000U
#endif
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* What the rule builders share. */
struct sb_seccomp_build {
	scmp_filter_ctx f;
	bool notify; /* a supervisor answers SCMP_ACT_NOTIFY */
	bool inet;   /* the policy has net= rules: AF_INET(6) sockets */
	bool debug;  /* the default is SCMP_ACT_NOTIFY (PYSB_DEBUG) */
	/* Landlock scopes signals (ABI 6); else the signal calls go to the
	 * supervisor, and F_SETOWN names no process */
	bool scoped;
};

#define A_ALLOW SCMP_ACT_ALLOW
/* the kernel reads these arguments as 32-bit ints: compare the low word
 * only (the upper one is ignored by the kernel, so it may be anything) */
#define LO32 0xffffffffULL

static int allow_if(struct sb_seccomp_build *c, int nr, unsigned n,
		    const struct scmp_arg_cmp *cmp)
{
	return seccomp_rule_add_array(c->f, A_ALLOW, nr, n, cmp);
}

/* Allow 'nr' when the low 32 bits of its argument 'arg' are one of
 * vals[0..n) (a command, an option: the kernel reads an int). */
static int allow_each(struct sb_seccomp_build *c, int nr, unsigned arg,
		      const unsigned long *vals, size_t n)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		struct scmp_arg_cmp a = { .arg = arg,
					  .op = SCMP_CMP_MASKED_EQ,
					  .datum_a = LO32,
					  .datum_b = vals[i] & LO32 };

		rc = allow_if(c, nr, 1, &a);
	}
	return rc;
}

/* To the supervisor; with PYSB_DEBUG that is the default already, which
 * libseccomp will not take as a rule (the supervisor judges it again). */
static int notify_if(struct sb_seccomp_build *c, int nr, unsigned n,
		     const struct scmp_arg_cmp *cmp)
{
	if (c->debug)
		return 0;
	return seccomp_rule_add_array(c->f, SCMP_ACT_NOTIFY, nr, n, cmp);
}

/* ioctl: the one list of requests (sb_ioctl_safe, api_registry.c) the
 * Python layer allows for fcntl.ioctl too, and the requests allowed with
 * some arguments only (sb_ioctl_safe_args: TCXONC). A terminal's modes
 * (sb_ioctl_judged) go to the supervisor, which sets them unless they
 * change TOSTOP (ttysup.c); without one they are refused. */
static int rules_ioctl(struct sb_seccomp_build *c, int nr)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < sb_ioctl_safe_len && !rc; i++) {
		struct scmp_arg_cmp a = SCMP_A1(SCMP_CMP_MASKED_EQ, LO32,
						sb_ioctl_safe[i] & LO32);

		if (sb_ioctl_request_judged(sb_ioctl_safe[i]))
			rc = c->notify ? notify_if(c, nr, 1, &a) : 0;
		else
			rc = allow_if(c, nr, 1, &a);
	}
	for (i = 0; i < sb_ioctl_safe_args_len && !rc; i++) {
		struct scmp_arg_cmp a[2] = {
			SCMP_A1(SCMP_CMP_MASKED_EQ, LO32,
				sb_ioctl_safe_args[i].request & LO32),
			/* the kernel reads tcflow's action as an int */
			SCMP_A2(SCMP_CMP_MASKED_EQ, LO32,
				sb_ioctl_safe_args[i].arg & LO32),
		};

		rc = allow_if(c, nr, 2, a);
	}
	return rc;
}

/* fcntl: the commands on the program's own descriptor, its locks, its
 * signals (Landlock scopes them) and its pipes and seals. Never
 * F_SETLEASE: a lease on a file the program may only read held every
 * other process's open of it (a write lease: even a reader's) for the
 * lease-break time, 45 s, outside the sandbox. Never O_ASYNC (F_SETFL)
 * nor F_SETSIG: an inherited descriptor shares its open file description,
 * and its owner, with the caller; where the caller had made itself the
 * owner (F_SETOWN), Landlock's scope does not apply (the caller set it),
 * and the program chose the signal the caller got at the next I/O, SIGKILL
 * included (attack K32). Never F_NOTIFY: dnotify told when the files of a
 * directory were read or written, in a tree exposed to be listed only,
 * where an inotify watch reports names only (metasup.c; attack K51). */
static int rules_fcntl(struct sb_seccomp_build *c, int nr)
{
	static const unsigned long ok[] = {
		F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_GETLK,
		F_SETLK, F_SETLKW, F_GETOWN, F_GETSIG,
		F_GETOWN_EX, 17, /* F_GETOWNER_UIDS */
		F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETLEASE,
		1027, 1028, /* F_DUPFD_QUERY, F_CREATED_QUERY */
		F_DUPFD_CLOEXEC, F_SETPIPE_SZ, F_GETPIPE_SZ, F_ADD_SEALS,
		F_GET_SEALS, 1035, 1036, 1037, 1038, /* F_*_RW_HINT */
	};
	int rc = allow_each(c, nr, 1, ok, SB_ARRAY_LEN(ok));

	if (!rc) {
		struct scmp_arg_cmp a[2] = {
			SCMP_A1(SCMP_CMP_MASKED_EQ, LO32, F_SETFL),
			SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0),
		};

		rc = allow_if(c, nr, 2, a);
	}
	if (rc)
		return rc;
	/* an owner's signals are Landlock's to scope (ABI 6); before it,
	 * F_SETOWN may only clear the owner, and F_SETOWN_EX is refused */
	if (c->scoped) {
		struct scmp_arg_cmp a = SCMP_A1(SCMP_CMP_MASKED_EQ, LO32,
						F_SETOWN);
		struct scmp_arg_cmp b = SCMP_A1(SCMP_CMP_MASKED_EQ, LO32,
						F_SETOWN_EX);

		rc = allow_if(c, nr, 1, &a);
		return rc ? rc : allow_if(c, nr, 1, &b);
	}
	{
		struct scmp_arg_cmp a[2] = {
			SCMP_A1(SCMP_CMP_MASKED_EQ, LO32, F_SETOWN),
			SCMP_A2(SCMP_CMP_MASKED_EQ, LO32, 0),
		};

		return allow_if(c, nr, 2, a);
	}
}

/* The calls that name a process: only the caller's own (0). */
static int rules_self_a0(struct sb_seccomp_build *c, int nr)
{
	struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, LO32, 0);

	return allow_if(c, nr, 1, &a);
}

/* setpriority, getpriority, ioprio_*: (which, who): who 0 is the caller
 * (its process, its process group, its user: the nice value of the user's
 * other processes is out of reach, so which must be PRIO_PROCESS). */
static int rules_self_a1(struct sb_seccomp_build *c, int nr)
{
	struct scmp_arg_cmp a[2] = {
		SCMP_A0(SCMP_CMP_MASKED_EQ, LO32,
			nr == SCMP_SYS(ioprio_set) ||
					nr == SCMP_SYS(ioprio_get)
				? 1 /* IOPRIO_WHO_PROCESS */
				: 0 /* PRIO_PROCESS */),
		SCMP_A1(SCMP_CMP_MASKED_EQ, LO32, 0),
	};

	return allow_if(c, nr, 2, a);
}

/* clone: threads and processes, never a new namespace. */
static int rules_clone(struct sb_seccomp_build *c, int nr)
{
	const uint64_t ns = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
			    CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
			    CLONE_NEWNET;
	struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, ns, 0);

	return allow_if(c, nr, 1, &a);
}

/* socket, socketpair: AF_UNIX always (named ones go to the supervisor),
 * AF_INET and AF_INET6 with a net= rule, as TCP or UDP only: no raw,
 * packet, netlink, ICMP, SCTP or anything newer. */
static int rules_socket(struct sb_seccomp_build *c, int nr)
{
	static const struct {
		int family, type, proto;
	} ok[] = {
		{ AF_UNIX, SOCK_STREAM, 0 },	  { AF_UNIX, SOCK_DGRAM, 0 },
		{ AF_UNIX, SOCK_SEQPACKET, 0 },	  { AF_INET, SOCK_STREAM, 0 },
		{ AF_INET, SOCK_STREAM, IPPROTO_TCP },
		{ AF_INET, SOCK_DGRAM, 0 },
		{ AF_INET, SOCK_DGRAM, IPPROTO_UDP },
		{ AF_INET6, SOCK_STREAM, 0 },
		{ AF_INET6, SOCK_STREAM, IPPROTO_TCP },
		{ AF_INET6, SOCK_DGRAM, 0 },
		{ AF_INET6, SOCK_DGRAM, IPPROTO_UDP },
	};
	size_t i;
	int rc = 0;

	for (i = 0; i < SB_ARRAY_LEN(ok) && !rc; i++) {
		/* the kernel masks SOCK_NONBLOCK and SOCK_CLOEXEC off */
		struct scmp_arg_cmp a[3] = {
			SCMP_A0(SCMP_CMP_MASKED_EQ, LO32,
				(uint64_t)ok[i].family),
			SCMP_A1(SCMP_CMP_MASKED_EQ,
				LO32 & ~(uint64_t)(SOCK_NONBLOCK |
						   SOCK_CLOEXEC),
				(uint64_t)ok[i].type),
			SCMP_A2(SCMP_CMP_MASKED_EQ, LO32,
				(uint64_t)ok[i].proto),
		};

		if (ok[i].family != AF_UNIX && !c->inet)
			continue;
		if (ok[i].family != AF_UNIX && nr == SCMP_SYS(socketpair))
			continue;
		rc = allow_if(c, nr, 3, a);
	}
	return rc;
}

/* setsockopt: the (level, name) pairs of src/base/sockopt.c, which the
 * guard's setsockopt wrapper judges by too (multicast membership, source
 * routing, device binding, kernel TLS, SO_ZEROCOPY... are not among them). */
static int rules_setsockopt(struct sb_seccomp_build *c, int nr)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < sb_sockopt_ok_len && !rc; i++) {
		struct scmp_arg_cmp a[2] = {
			SCMP_A1(SCMP_CMP_MASKED_EQ, LO32,
				(uint64_t)sb_sockopt_ok[i].level),
			SCMP_A2(SCMP_CMP_MASKED_EQ, LO32,
				(uint64_t)sb_sockopt_ok[i].name),
		};

		rc = allow_if(c, nr, 2, a);
	}
	return rc;
}

/* prctl: the options that read or set the caller's own state. Never
 * PR_SET_MM, PR_SET_PTRACER, PR_SCHED_CORE (other processes),
 * PR_SET_IO_FLUSHER, PR_SET_MEMORY_MERGE. */
static int rules_prctl(struct sb_seccomp_build *c, int nr)
{
	static const unsigned long ok[] = {
		PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_DUMPABLE,
		PR_SET_DUMPABLE, PR_GET_KEEPCAPS, PR_SET_KEEPCAPS,
		PR_SET_NAME, PR_GET_NAME, PR_GET_SECCOMP, PR_SET_SECCOMP,
		PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_GET_SECUREBITS,
		PR_SET_TIMERSLACK, PR_GET_TIMERSLACK, PR_SET_CHILD_SUBREAPER,
		PR_GET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS,
		PR_GET_NO_NEW_PRIVS, PR_GET_TID_ADDRESS, PR_SET_THP_DISABLE,
		PR_GET_THP_DISABLE, PR_CAP_AMBIENT, PR_GET_SPECULATION_CTRL,
		PR_SET_SPECULATION_CTRL, 50, 51, /* PR_SVE_{SET,GET}_VL */
		55, 56, /* PR_{SET,GET}_TAGGED_ADDR_CTRL */
		65, 66, /* PR_{SET,GET}_MDWE */
		0x53564d41UL, /* PR_SET_VMA: glibc names its mappings */
		0x41555856UL, /* PR_GET_AUXV */
	};

	return allow_each(c, nr, 0, ok, SB_ARRAY_LEN(ok));
}

/* fchmodat2's number (Linux 6.6), which the system headers may not have:
 * libseccomp's, looked up once (a string search of its table would cost
 * each notified call of the supervisor that asks). */
static int fchmodat2_nr(void)
{
	static bool looked;
	static int nr;

	if (!looked) {
		nr = seccomp_syscall_resolve_name("fchmodat2");
		looked = true;
	}
	return nr;
}

/* The mode argument's index for the calls that take one. */
static unsigned mode_arg(int nr)
{
	if (nr == SCMP_SYS(fchmodat) || nr == SCMP_SYS(mknodat) ||
	    nr == fchmodat2_nr())
		return 2;
	return 1; /* chmod, fchmod, mknod */
}

/* open, openat, creat: a file is never created with a setuid or setgid
 * bit (as root, a setuid-root program any local user could run). */
static int rules_open(struct sb_seccomp_build *c, int nr)
{
	const uint64_t suid = S_ISUID | S_ISGID;
	unsigned flags = nr == SCMP_SYS(openat) ? 2 : 1,
		 mode = nr == SCMP_SYS(openat) ? 3 : 2;
	struct scmp_arg_cmp a;
	int rc;

	if (nr == SCMP_SYS(creat)) {
		a = SCMP_A1(SCMP_CMP_MASKED_EQ, suid, 0);
		return allow_if(c, nr, 1, &a);
	}
	/* no O_CREAT, no O_TMPFILE: the mode is not used */
	a = (struct scmp_arg_cmp){ flags, SCMP_CMP_MASKED_EQ,
				   O_CREAT | __O_TMPFILE, 0 };
	rc = allow_if(c, nr, 1, &a);
	if (!rc) {
		a = (struct scmp_arg_cmp){ mode, SCMP_CMP_MASKED_EQ, suid, 0 };
		rc = allow_if(c, nr, 1, &a);
	}
	return rc;
}

/* A node mknod may make: its type and set-id bits as rules_mknod allows
 * them (S_IFMT | S_ISUID | S_ISGID masked). */
static const uint64_t node_types[] = { 0, S_IFREG, S_IFIFO, S_IFSOCK };

/* What the argument rules of the file calls refuse (rules_open,
 * rules_mknod, rules_chmod), for the filter flavour that sends those calls
 * to the supervisor instead (build, debug). The arguments are the kernel's copy
 * of the registers: the caller cannot change them after the check. */
bool sb_seccomp_args_refused(int nr, const __u64 *args)
{
	const uint64_t suid = S_ISUID | S_ISGID;
	uint64_t mode;
	size_t i;

#ifdef __NR_creat
	if (nr == __NR_creat)
		return (args[1] & suid) != 0;
	if (nr == __NR_open)
		return (args[1] & (O_CREAT | __O_TMPFILE)) && (args[2] & suid);
	if (nr == __NR_mknod) {
		mode = args[1];
		goto node;
	}
#endif
	if (nr == __NR_openat)
		return (args[2] & (O_CREAT | __O_TMPFILE)) && (args[3] & suid);
	/* rules_chmod: a set-id bit never reaches the supervisor's judge */
	if (nr == SCMP_SYS(chmod) || nr == SCMP_SYS(fchmod) ||
	    nr == SCMP_SYS(fchmodat) || nr == fchmodat2_nr())
		return (args[mode_arg(nr)] & suid) != 0;
	if (nr != __NR_mknodat)
		return false;
	mode = args[2];
#ifdef __NR_creat
node:
#endif
	for (i = 0; i < SB_ARRAY_LEN(node_types); i++)
		if ((mode & (S_IFMT | suid)) == node_types[i])
			return false;
	return true;
}

/* mknod, mknodat: a regular file, a FIFO or a socket (the file rules
 * decide where); never a device node, never a setuid or setgid bit. */
static int rules_mknod(struct sb_seccomp_build *c, int nr)
{
	unsigned m = mode_arg(nr);
	size_t i;
	int rc = 0;

	for (i = 0; i < SB_ARRAY_LEN(node_types) && !rc; i++) {
		struct scmp_arg_cmp a = { m, SCMP_CMP_MASKED_EQ,
					  S_IFMT | S_ISUID | S_ISGID,
					  node_types[i] };

		rc = allow_if(c, nr, 1, &a);
	}
	return rc;
}

/* chmod and friends: never a setuid or setgid bit; any other mode goes to
 * the supervisor, which allows it inside an expose-rw tree only. */
static int rules_chmod(struct sb_seccomp_build *c, int nr)
{
	struct scmp_arg_cmp a = { mode_arg(nr), SCMP_CMP_MASKED_EQ,
				  S_ISUID | S_ISGID, 0 };

	if (!c->notify)
		return 0;
	return notify_if(c, nr, 1, &a);
}

/* sendto without an address is a plain write on a connected socket; with
 * one, the supervisor judges it (without a supervisor: refused). */
static int rules_sendto(struct sb_seccomp_build *c, int nr)
{
	struct scmp_arg_cmp a = SCMP_A4(SCMP_CMP_NE, 0, 0);
	struct scmp_arg_cmp z = SCMP_A4(SCMP_CMP_EQ, 0, 0);
	int rc = allow_if(c, nr, 1, &z);

	if (!rc && c->notify)
		rc = notify_if(c, nr, 1, &a);
	return rc;
}

/* personality(2): only PER_LINUX (0) and the query 0xffffffff. */
static int rules_personality(struct sb_seccomp_build *c, int nr)
{
	struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, LO32, 0);
	struct scmp_arg_cmp q = SCMP_A0(SCMP_CMP_MASKED_EQ, LO32, LO32);
	int rc = allow_if(c, nr, 1, &a);

	return rc ? rc : allow_if(c, nr, 1, &q);
}

#define ALLOW(n, why) { n, SB_SYS_ALLOW, why, NULL }
#define ARGS(n, fn, why) { n, SB_SYS_ARGS, why, fn }
#define NOTIFY(n, fn, why) { n, SB_SYS_NOTIFY, why, fn }
#define ENOSYS_(n, why) { n, SB_SYS_ENOSYS, why, NULL }
#define REFUSE(n, why) { n, SB_SYS_REFUSE, why, NULL }

#define W_FILE "files: Landlock judges the path"
#define W_FD "on a descriptor the program holds"
#define W_MEM "the program's own memory"
#define W_TIME "clocks and timers of the program"
#define W_SIG "signals: Landlock scopes them to the sandbox (before ABI " \
	      "6: the supervisor)"
#define W_ID "the program's own identity (no capability to change it)"
#define W_NET "the network supervisor performs it (netsup.c)"
#define W_META "the supervisor performs it inside an expose-rw tree only; " \
	       "never a setuid or setgid bit"
#define W_XREAD "Landlock does not judge it: the supervisor reads it " \
		"inside an exposed tree only"
#define W_SYS "the machine's state (root's business, not a program's)"
#define W_IPC "host IPC objects, outside every file rule"
#define W_KERN "kernel attack surface no Python program needs"
#define W_NS "a new view of the system: mounts and namespaces"
#define W_OLD "obsolete, or another architecture's"

static const struct sb_sys_entry table[] = {
	/* files and descriptors */
	ALLOW("read", W_FD), ALLOW("write", W_FD), ALLOW("readv", W_FD),
	ALLOW("writev", W_FD), ALLOW("pread64", W_FD),
	ALLOW("pwrite64", W_FD), ALLOW("preadv", W_FD),
	ALLOW("pwritev", W_FD), ALLOW("preadv2", W_FD),
	ALLOW("pwritev2", W_FD), ALLOW("close", W_FD),
	ALLOW("close_range", W_FD), ALLOW("lseek", W_FD),
	ARGS("open", rules_open, W_FILE "; no setuid or setgid bit when "
					"creating"),
	ARGS("openat", rules_open, W_FILE "; no setuid or setgid bit when "
					  "creating"),
	ARGS("creat", rules_open, W_FILE "; no setuid or setgid bit"),
	ENOSYS_("openat2", "its mode is behind a pointer BPF cannot read; "
			   "libc falls back to openat"),
	ALLOW("stat", W_FILE), ALLOW("fstat", W_FD), ALLOW("lstat", W_FILE),
	ALLOW("newfstatat", W_FILE), ALLOW("statx", W_FILE),
	ALLOW("statfs", W_FILE), ALLOW("fstatfs", W_FD),
	ALLOW("access", W_FILE), ALLOW("faccessat", W_FILE),
	ALLOW("faccessat2", W_FILE), ALLOW("readlink", W_FILE),
	ALLOW("readlinkat", W_FILE), ALLOW("getdents", W_FD),
	ALLOW("getdents64", W_FD), ALLOW("getcwd", W_FILE),
	ALLOW("chdir", W_FILE), ALLOW("fchdir", W_FD),
	ALLOW("mkdir", W_FILE), ALLOW("mkdirat", W_FILE),
	ALLOW("rmdir", W_FILE), ALLOW("unlink", W_FILE),
	ALLOW("unlinkat", W_FILE), ALLOW("rename", W_FILE),
	ALLOW("renameat", W_FILE), ALLOW("renameat2", W_FILE),
	ALLOW("link", W_FILE), ALLOW("linkat", W_FILE),
	ALLOW("symlink", W_FILE), ALLOW("symlinkat", W_FILE),
	ALLOW("truncate", W_FILE), ALLOW("ftruncate", W_FD),
	ALLOW("fsync", W_FD), ALLOW("fdatasync", W_FD),
	ALLOW("sync_file_range", W_FD), ALLOW("syncfs", W_FD),
	ALLOW("sync", "flushes caches: harmless"),
	ALLOW("fallocate", W_FD), ALLOW("fadvise64", W_FD),
	ALLOW("readahead", W_FD), ALLOW("flock", W_FD),
	ARGS("fcntl", rules_fcntl, W_FD "; F_SETOWN's signals are scoped "
				   "by Landlock (before ABI 6: no owner); "
				   "never F_SETLEASE, F_SETSIG, F_NOTIFY, nor "
				   "O_ASYNC by F_SETFL"),
	ALLOW("dup", W_FD), ALLOW("dup2", W_FD), ALLOW("dup3", W_FD),
	ALLOW("pipe", W_FD), ALLOW("pipe2", W_FD),
	ALLOW("sendfile", W_FD), ALLOW("copy_file_range", W_FD),
	ALLOW("splice", W_FD), ALLOW("tee", W_FD),
	ALLOW("umask", "the program's own umask"),
	NOTIFY("getxattr", NULL, W_XREAD), NOTIFY("lgetxattr", NULL, W_XREAD),
	ALLOW("fgetxattr", W_FD), NOTIFY("listxattr", NULL, W_XREAD),
	NOTIFY("llistxattr", NULL, W_XREAD), ALLOW("flistxattr", W_FD),
	ARGS("ioctl", rules_ioctl, "an allowlist of requests: terminal "
				   "modes and sizes, FIONREAD, FIONBIO, "
				   "FIOCLEX...; TCXONC to restart only; "
				   "a terminal's modes set by the supervisor, "
				   "never a change of TOSTOP; "
				   "never TIOCSTI, TIOCLINUX, TIOCSETD, "
				   "TIOCSCTTY or SIOCS*"),
	ARGS("mknod", rules_mknod, "regular files, FIFOs and sockets; no "
				   "device node, no setuid bit"),
	ARGS("mknodat", rules_mknod, "regular files, FIFOs and sockets; no "
				     "device node, no setuid bit"),
	NOTIFY("chmod", rules_chmod, W_META),
	NOTIFY("fchmod", rules_chmod, W_META),
	NOTIFY("fchmodat", rules_chmod, W_META),
	NOTIFY("fchmodat2", rules_chmod, W_META),
	NOTIFY("utimensat", NULL, W_META),
	NOTIFY("utimes", NULL, W_META),
	NOTIFY("utime", NULL, W_META),
	NOTIFY("futimesat", NULL, W_META),
	REFUSE("chown", "no rule grants owner changes"),
	REFUSE("fchown", "no rule grants owner changes"),
	REFUSE("lchown", "no rule grants owner changes"),
	REFUSE("fchownat", "no rule grants owner changes"),
	REFUSE("setxattr", "extended attributes are metadata no rule grants"),
	REFUSE("lsetxattr", "extended attributes are metadata no rule grants"),
	REFUSE("fsetxattr", "extended attributes are metadata no rule grants"),
	REFUSE("removexattr", "extended attributes are metadata no rule "
			      "grants"),
	REFUSE("lremovexattr", "extended attributes are metadata no rule "
			       "grants"),
	REFUSE("fremovexattr", "extended attributes are metadata no rule "
			       "grants"),
	REFUSE("name_to_handle_at", "file handles bypass path rules"),
	REFUSE("open_by_handle_at", "file handles bypass path rules"),
	REFUSE("chroot", W_NS), REFUSE("fanotify_init", W_KERN),
	REFUSE("fanotify_mark", W_KERN),
	/* waiting */
	ALLOW("poll", W_FD), ALLOW("ppoll", W_FD), ALLOW("select", W_FD),
	ALLOW("pselect6", W_FD), ALLOW("epoll_create", W_FD),
	ALLOW("epoll_create1", W_FD), ALLOW("epoll_ctl", W_FD),
	ALLOW("epoll_wait", W_FD), ALLOW("epoll_pwait", W_FD),
	ALLOW("epoll_pwait2", W_FD), ALLOW("eventfd", W_FD),
	ALLOW("eventfd2", W_FD), ALLOW("signalfd", W_FD),
	ALLOW("signalfd4", W_FD), ALLOW("timerfd_create", W_TIME),
	ALLOW("timerfd_settime", W_TIME), ALLOW("timerfd_gettime", W_TIME),
	ALLOW("inotify_init", W_FD), ALLOW("inotify_init1", W_FD),
	NOTIFY("inotify_add_watch", NULL,
	       "Landlock does not judge a watch: the supervisor adds it "
	       "inside an exposed tree only"),
	ALLOW("inotify_rm_watch", W_FD),
	ALLOW("memfd_create", W_MEM),
	/* memory */
	ALLOW("mmap", W_MEM), ALLOW("munmap", W_MEM),
	ALLOW("mprotect", W_MEM), ALLOW("mremap", W_MEM),
	ALLOW("madvise", W_MEM), ALLOW("brk", W_MEM), ALLOW("msync", W_MEM),
	ALLOW("mincore", W_MEM), ALLOW("mlock", W_MEM),
	ALLOW("mlock2", W_MEM), ALLOW("munlock", W_MEM),
	ALLOW("mlockall", W_MEM), ALLOW("munlockall", W_MEM),
	ALLOW("membarrier", W_MEM), ALLOW("rseq", W_MEM),
	ALLOW("set_robust_list", W_MEM), ALLOW("futex", W_MEM),
	ALLOW("futex_waitv", W_MEM), ALLOW("futex_wake", W_MEM),
	ALLOW("futex_wait", W_MEM), ALLOW("futex_requeue", W_MEM),
	ALLOW("set_tid_address", W_MEM), ALLOW("arch_prctl", W_MEM),
	ALLOW("pkey_alloc", W_MEM), ALLOW("pkey_free", W_MEM),
	ALLOW("pkey_mprotect", W_MEM), ALLOW("get_mempolicy", W_MEM),
	ALLOW("map_shadow_stack", W_MEM),
	REFUSE("get_robust_list", "reads another process's state"),
	REFUSE("set_mempolicy", "NUMA placement: not needed"),
	REFUSE("mbind", "NUMA placement: not needed"),
	REFUSE("set_mempolicy_home_node", "NUMA placement: not needed"),
	REFUSE("migrate_pages", "acts on another process by pid"),
	REFUSE("move_pages", "acts on another process by pid"),
	REFUSE("process_madvise", "acts on another process by pidfd"),
	REFUSE("process_mrelease", "acts on another process by pidfd"),
	REFUSE("remap_file_pages", W_OLD),
	REFUSE("memfd_secret", W_KERN),
	/* processes */
	ARGS("clone", rules_clone, "threads and processes; no CLONE_NEW* "
				   "flag"),
	ENOSYS_("clone3", "its flags are behind a pointer BPF cannot read; "
			  "libc falls back to clone"),
	ALLOW("fork", "a process in the same sandbox"),
	ALLOW("vfork", "a process in the same sandbox"),
	ALLOW("execve", W_FILE " (execute right)"),
	ALLOW("execveat", W_FILE " (execute right)"),
	ALLOW("exit", "ends the caller"), ALLOW("exit_group", "ends the caller"),
	ALLOW("wait4", "the program's children"),
	ALLOW("waitid", "the program's children"),
	ALLOW("kill", W_SIG), ALLOW("tgkill", W_SIG), ALLOW("tkill", W_SIG),
	ALLOW("rt_sigqueueinfo", W_SIG), ALLOW("rt_tgsigqueueinfo", W_SIG),
	ALLOW("pidfd_open", W_SIG), ALLOW("pidfd_send_signal", W_SIG),
	REFUSE("pidfd_getfd", "takes another process's descriptors"),
	ALLOW("rt_sigaction", W_SIG), ALLOW("rt_sigprocmask", W_SIG),
	ALLOW("rt_sigreturn", W_SIG), ALLOW("rt_sigpending", W_SIG),
	ALLOW("rt_sigtimedwait", W_SIG), ALLOW("rt_sigsuspend", W_SIG),
	ALLOW("sigaltstack", W_SIG), ALLOW("restart_syscall", W_SIG),
	ALLOW("pause", W_SIG), ALLOW("alarm", W_TIME),
	ALLOW("nanosleep", W_TIME), ALLOW("clock_nanosleep", W_TIME),
	ALLOW("clock_gettime", W_TIME), ALLOW("clock_getres", W_TIME),
	ALLOW("gettimeofday", W_TIME), ALLOW("time", W_TIME),
	ALLOW("getitimer", W_TIME), ALLOW("setitimer", W_TIME),
	ALLOW("timer_create", W_TIME), ALLOW("timer_settime", W_TIME),
	ALLOW("timer_gettime", W_TIME), ALLOW("timer_getoverrun", W_TIME),
	ALLOW("timer_delete", W_TIME), ALLOW("times", W_TIME),
	ALLOW("getpid", W_ID), ALLOW("getppid", W_ID), ALLOW("gettid", W_ID),
	ALLOW("getuid", W_ID), ALLOW("geteuid", W_ID), ALLOW("getgid", W_ID),
	ALLOW("getegid", W_ID), ALLOW("getgroups", W_ID),
	ALLOW("getresuid", W_ID), ALLOW("getresgid", W_ID),
	ALLOW("getpgid", W_ID), ALLOW("getpgrp", W_ID), ALLOW("getsid", W_ID),
	ALLOW("setpgid", "the program's own process groups"),
	ALLOW("setsid", "a session of its own (python-sb still ends every "
			"process of the run)"),
	ALLOW("setuid", W_ID), ALLOW("setgid", W_ID), ALLOW("setreuid", W_ID),
	ALLOW("setregid", W_ID), ALLOW("setresuid", W_ID),
	ALLOW("setresgid", W_ID), ALLOW("setgroups", W_ID),
	ALLOW("setfsuid", W_ID), ALLOW("setfsgid", W_ID),
	ALLOW("capget", W_ID), ALLOW("capset", W_ID " (it can only drop)"),
	ARGS("prctl", rules_prctl, "options on the caller itself; never "
				   "PR_SET_MM, PR_SET_PTRACER, "
				   "PR_SCHED_CORE"),
	ARGS("personality", rules_personality, "PER_LINUX and the query "
					       "only"),
	ALLOW("uname", "reads the system's name"),
	ALLOW("sysinfo", "reads load and memory totals"),
	ALLOW("getrlimit", W_ID), ALLOW("setrlimit", W_ID),
	ARGS("prlimit64", rules_self_a0, "pid 0 only: never another "
					 "process's limits"),
	ALLOW("getrusage", W_ID),
	ARGS("getpriority", rules_self_a1, "PRIO_PROCESS of pid 0 only"),
	ARGS("setpriority", rules_self_a1, "PRIO_PROCESS of pid 0 only"),
	ARGS("ioprio_get", rules_self_a1, "IOPRIO_WHO_PROCESS of pid 0 only"),
	ARGS("ioprio_set", rules_self_a1, "IOPRIO_WHO_PROCESS of pid 0 only"),
	ALLOW("sched_yield", W_ID),
	ARGS("sched_getaffinity", rules_self_a0, "pid 0 only"),
	ARGS("sched_setaffinity", rules_self_a0, "pid 0 only"),
	ARGS("sched_getparam", rules_self_a0, "pid 0 only"),
	ARGS("sched_setparam", rules_self_a0, "pid 0 only"),
	ARGS("sched_getscheduler", rules_self_a0, "pid 0 only"),
	ARGS("sched_setscheduler", rules_self_a0, "pid 0 only"),
	ARGS("sched_getattr", rules_self_a0, "pid 0 only"),
	ARGS("sched_setattr", rules_self_a0, "pid 0 only"),
	ARGS("sched_rr_get_interval", rules_self_a0, "pid 0 only"),
	ALLOW("sched_get_priority_max", "a constant"),
	ALLOW("sched_get_priority_min", "a constant"),
	ALLOW("getcpu", W_ID), ALLOW("getrandom", "the kernel's random pool"),
	REFUSE("kcmp", "compares other processes' resources"),
	REFUSE("ptrace", "another process's memory and registers"),
	REFUSE("process_vm_readv", "another process's memory"),
	REFUSE("process_vm_writev", "another process's memory"),
	REFUSE("unshare", W_NS), REFUSE("setns", W_NS),
	REFUSE("seccomp", "a filter of its own: not needed (prctl's "
			  "PR_SET_SECCOMP still stacks one)"),
	REFUSE("landlock_create_ruleset", "not needed inside the sandbox"),
	REFUSE("landlock_add_rule", "not needed inside the sandbox"),
	REFUSE("landlock_restrict_self", "not needed inside the sandbox"),
	/* sockets */
	ARGS("socket", rules_socket, "AF_UNIX; AF_INET and AF_INET6 with a "
				     "net= rule; TCP and UDP only"),
	ARGS("socketpair", rules_socket, "AF_UNIX only"),
	NOTIFY("connect", NULL, W_NET), NOTIFY("bind", NULL, W_NET),
	NOTIFY("listen", NULL, W_NET), NOTIFY("sendmsg", NULL, W_NET),
	NOTIFY("sendmmsg", NULL, W_NET),
	ARGS("sendto", rules_sendto, "without an address: a write; with "
				     "one: " W_NET),
	ALLOW("accept", W_FD), ALLOW("accept4", W_FD),
	ALLOW("getsockname", W_FD), ALLOW("getpeername", W_FD),
	ALLOW("shutdown", W_FD), ALLOW("recvfrom", W_FD),
	ALLOW("recvmsg", W_FD), ALLOW("recvmmsg", W_FD),
	ALLOW("getsockopt", W_FD),
	ARGS("setsockopt", rules_setsockopt, "an allowlist of levels and "
					     "options; never IP_OPTIONS, "
					     "routing headers, "
					     "SO_BINDTODEVICE, TCP_ULP, a "
					     "multicast group's membership"),
	/* host IPC objects: no file rule covers them */
	REFUSE("shmget", W_IPC), REFUSE("shmat", W_IPC),
	REFUSE("shmctl", W_IPC), REFUSE("shmdt", W_IPC),
	REFUSE("msgget", W_IPC), REFUSE("msgsnd", W_IPC),
	REFUSE("msgrcv", W_IPC), REFUSE("msgctl", W_IPC),
	REFUSE("semget", W_IPC), REFUSE("semop", W_IPC),
	REFUSE("semtimedop", W_IPC), REFUSE("semctl", W_IPC),
	REFUSE("mq_open", W_IPC),
	REFUSE("mq_unlink", W_IPC), REFUSE("mq_timedsend", W_IPC),
	REFUSE("mq_timedreceive", W_IPC), REFUSE("mq_notify", W_IPC),
	REFUSE("mq_getsetattr", W_IPC),
	REFUSE("add_key", "keyrings: " W_IPC),
	REFUSE("request_key", "keyrings: " W_IPC),
	REFUSE("keyctl", "keyrings: " W_IPC),
	/* the kernel's attack surface */
	REFUSE("bpf", W_KERN), REFUSE("perf_event_open", W_KERN),
	REFUSE("userfaultfd", W_KERN),
	ENOSYS_("io_uring_setup", "io_uring: " W_KERN "; callers fall back "
				  "to plain calls"),
	ENOSYS_("io_uring_enter", "io_uring: " W_KERN),
	ENOSYS_("io_uring_register", "io_uring: " W_KERN),
	REFUSE("io_setup", "aio: " W_KERN), REFUSE("io_destroy", "aio"),
	REFUSE("io_submit", "aio"), REFUSE("io_cancel", "aio"),
	REFUSE("io_getevents", "aio"), REFUSE("io_pgetevents", "aio"),
	REFUSE("modify_ldt", W_KERN), REFUSE("vmsplice", W_KERN),
	REFUSE("uselib", W_OLD), REFUSE("ustat", W_OLD),
	REFUSE("sysfs", W_OLD), REFUSE("_sysctl", W_OLD),
	REFUSE("vhangup", "hangs up the terminal"),
	REFUSE("syslog", "the kernel log"),
	/* the machine */
	REFUSE("mount", W_NS), REFUSE("umount2", W_NS),
	REFUSE("pivot_root", W_NS), REFUSE("move_mount", W_NS),
	REFUSE("open_tree", W_NS), REFUSE("fsopen", W_NS),
	REFUSE("fsconfig", W_NS), REFUSE("fsmount", W_NS),
	REFUSE("fspick", W_NS), REFUSE("mount_setattr", W_NS),
	REFUSE("kexec_load", W_SYS), REFUSE("kexec_file_load", W_SYS),
	REFUSE("init_module", W_SYS), REFUSE("finit_module", W_SYS),
	REFUSE("delete_module", W_SYS), REFUSE("iopl", W_SYS),
	REFUSE("ioperm", W_SYS), REFUSE("swapon", W_SYS),
	REFUSE("swapoff", W_SYS), REFUSE("reboot", W_SYS),
	REFUSE("acct", W_SYS), REFUSE("quotactl", W_SYS),
	REFUSE("quotactl_fd", W_SYS), REFUSE("lookup_dcookie", W_SYS),
	REFUSE("sethostname", W_SYS), REFUSE("setdomainname", W_SYS),
	REFUSE("settimeofday", W_SYS), REFUSE("clock_settime", W_SYS),
	REFUSE("clock_adjtime", W_SYS), REFUSE("adjtimex", W_SYS),
	REFUSE("nfsservctl", W_OLD),
};

const struct sb_sys_entry *sb_sys_table(size_t *n)
{
	*n = SB_ARRAY_LEN(table);
	return table;
}

const struct sb_sys_entry *sb_sys_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(table); i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

/* An argument rule that sb_seccomp_args_refused says again in C. */
static bool args_in_c(const struct sb_sys_entry *e)
{
	return e->rules == rules_open || e->rules == rules_mknod;
}

/* Does the filter allow this call by itself (no supervisor), with every
 * argument rule it has? Only then may the debug flavour send it to the
 * supervisor to be let go on. */
static bool allowed_alone(const struct sb_sys_entry *e)
{
	return e->verdict == SB_SYS_ALLOW ||
	       (e->verdict == SB_SYS_ARGS && args_in_c(e));
}

bool sb_seccomp_lets_through(int nr, const __u64 *args)
{
	static const struct sb_sys_entry *by_nr[1024];
	static bool filled;
	const struct sb_sys_entry *e;
	size_t i;

	if (!filled) {
		for (i = 0; i < SB_ARRAY_LEN(table); i++) {
			int k = seccomp_syscall_resolve_name(table[i].name);

			if (k >= 0 && k < (int)SB_ARRAY_LEN(by_nr))
				by_nr[k] = &table[i];
		}
		filled = true;
	}
	if (nr < 0 || nr >= (int)SB_ARRAY_LEN(by_nr) || !(e = by_nr[nr]))
		return false; /* not in the table: refused */
	return allowed_alone(e) && !sb_seccomp_args_refused(nr, args);
}

bool sb_seccomp_available(void)
{
	uint32_t action = SECCOMP_RET_ERRNO;

	return syscall(__NR_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

const char *sb_seccomp_summary(struct sb_arena *a, const struct sb_policy *p)
{
	return sb_arena_printf(
		a,
		"an allowlist (docs/syscalls.md): every other call, and "
		"ioctl, fcntl, prctl, socket, setsockopt, clone, prlimit64 "
		"and the scheduling calls outside their allowed arguments: "
		"EPERM; "
		"clone3, openat2, io_uring: ENOSYS; another architecture's "
		"calls: the process is killed%s; connect, bind, listen, "
		"sendmsg, sendmmsg, sendto with an address: the network "
		"supervisor; chmod and utimes families: the supervisor, "
		"inside expose-rw only; inotify_add_watch and the xattr "
		"reads by path: the supervisor, inside an exposed tree only; "
		"a terminal's modes (TCSETS, TCSETSW, TCSETSF): the "
		"supervisor, never a change of TOSTOP",
		p->any_net_rule ? ""
				: "; socket of AF_INET or AF_INET6 (no net= "
				  "rule): EPERM");
}

static int build(scmp_filter_ctx f, const struct sb_policy *p,
		 bool notify, bool debug, bool scoped, const char **what)
{
	struct sb_seccomp_build c = { f, notify, p->any_net_rule, debug,
				      scoped };
	size_t i;
	int rc;

	*what = "seccomp_attr_set";
	/* a foreign ABI (i386 int 0x80) is not filtered: forbid it. x32
	 * numbers (bit 30 set) are not in the table, so the default
	 * refuses them; libseccomp's x86_64 filter also rejects them. */
	rc = seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc)
		return rc;
	rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 1);
	if (rc)
		return rc;
	/* a binary search over syscall numbers: every call of the program
	 * runs the filter. An older libseccomp without it builds a linear
	 * filter, as correct. */
	(void)seccomp_attr_set(f, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	*what = "seccomp_rule_add";
	for (i = 0; i < SB_ARRAY_LEN(table) && !rc; i++) {
		const struct sb_sys_entry *e = &table[i];
		int nr = seccomp_syscall_resolve_name(e->name);

		/* a call this architecture does not have (open on arm64) */
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;
		/* PYSB_DEBUG or a denial log: the file calls and signal
		 * sends go to the supervisor too, which refuses what their
		 * argument rules refuse (sb_seccomp_args_refused), records
		 * what Landlock will refuse (filelog.c) and lets the rest go
		 * on */
		if (debug && (sb_filecall_handles(nr) || sb_sigcall_handles(nr)) &&
		    allowed_alone(e))
			continue;
		/* Landlock does not scope signals before ABI 6: the
		 * supervisor lets a signal reach the sandbox's processes only
		 * (netsup.c); without one, none is sent */
		if (!c.scoped && sb_sigcall_handles(nr)) {
			if (notify)
				rc = notify_if(&c, nr, 0, NULL);
			continue;
		}
		switch (e->verdict) {
		case SB_SYS_ALLOW:
			rc = seccomp_rule_add(f, A_ALLOW, nr, 0);
			break;
		case SB_SYS_ARGS:
			rc = e->rules(&c, nr);
			break;
		case SB_SYS_NOTIFY:
			/* no supervisor to judge it: refused (the default),
			 * never passed unjudged (a named Unix socket) */
			if (e->rules)
				rc = e->rules(&c, nr);
			else if (notify)
				rc = notify_if(&c, nr, 0, NULL);
			break;
		case SB_SYS_ENOSYS:
			rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), nr,
					      0);
			break;
		case SB_SYS_REFUSE:
			break; /* the default */
		}
	}
	return rc;
}

/* The filters seccomp_gen.c compiled from this table at build time, one per
 * (net= rule or not, PYSB_DEBUG or not), for the build machine's
 * architecture: libseccomp's compilation costs milliseconds on every run.
 * Weak: the generator itself, build/syscall-table and the unit tests link
 * this file without them, and build with libseccomp. */
extern const struct sb_seccomp_prebuilt sb_seccomp_prebuilt[]
	__attribute__((weak));
extern const size_t sb_seccomp_prebuilt_len __attribute__((weak));

static const struct sb_seccomp_prebuilt *prebuilt(bool inet, bool debug)
{
	size_t i;

	if (!&sb_seccomp_prebuilt_len || !sb_seccomp_prebuilt)
		return NULL;
	for (i = 0; i < sb_seccomp_prebuilt_len; i++)
		if (sb_seccomp_prebuilt[i].inet == inet &&
		    sb_seccomp_prebuilt[i].debug == debug &&
		    sb_seccomp_prebuilt[i].arch == seccomp_arch_native())
			return &sb_seccomp_prebuilt[i];
	return NULL;
}

/* Load a prebuilt filter as seccomp_load would (no_new_privs, a new
 * listener): the listener, or -errno. */
static int load_prebuilt(const struct sb_seccomp_prebuilt *pb)
{
	struct sock_fprog prog = {
		.len = (unsigned short)pb->len,
		.filter = (struct sock_filter *)pb->insns,
	};
	long fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	return fd < 0 ? -errno : (int)fd;
}

int sb_seccomp_export(bool inet, bool debug, int fd)
{
	struct sb_policy p = { 0 };
	scmp_filter_ctx f = seccomp_init(debug ? SCMP_ACT_NOTIFY
					       : SCMP_ACT_ERRNO(EPERM));
	const char *what;
	int rc;

	if (!f)
		return -ENOMEM;
	p.any_net_rule = inet;
	rc = build(f, &p, true, debug, true, &what);
	if (!rc)
		rc = seccomp_export_bpf(f, fd);
	seccomp_release(f);
	return rc;
}

int sb_seccomp_apply(struct sb_arena *a, const struct sb_policy *p,
		     bool scoped, bool files, int *listener, const char **err)
{
	/* PYSB_DEBUG or a denial log: the supervisor reports each refusal
	 * and answers EPERM itself; should it die, a notified call fails
	 * (ENOSYS), never passes. The same filter sends every file call to
	 * a supervisor that performs some (entrysup.c) */
	bool debug = listener && (files || getenv("PYSB_DEBUG") || p->log_path);
	/* the prebuilt filters are for a Landlock that scopes signals */
	const struct sb_seccomp_prebuilt *pb =
		listener && scoped ? prebuilt(p->any_net_rule, debug) : NULL;
	scmp_filter_ctx f;
	const char *what = "seccomp_init";
	int rc = -ENOMEM;

	if (pb) {
		rc = load_prebuilt(pb);
		if (rc >= 0) {
			*listener = rc;
			return 0;
		}
		*err = sb_arena_printf(a, "seccomp: %s", strerror(-rc));
		return -1;
	}
	f = seccomp_init(debug ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM));
	if (f) {
		rc = build(f, p, listener != NULL, debug, scoped, &what);
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
