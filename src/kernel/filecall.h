/* filecall.h - the file system calls a seccomp notification can stand for,
 * as both supervisors that read them see them: learning's (learn_native.c
 * records what native code opens, execs, makes and removes) and the denial
 * log's (filelog.c records what Landlock will refuse). It decodes a call
 * into the accesses it makes and turns the caller's (dirfd, path) into a
 * canonical path this process can use. It judges nothing.
 */
#ifndef SB_FILECALL_H
#define SB_FILECALL_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sb_fc_op {
	SB_FC_OPEN,     /* open, openat, openat2, creat: 'flags' */
	SB_FC_EXEC,     /* execve, execveat: the file run */
	SB_FC_MAKE,     /* an entry made in its directory: 'type' */
	SB_FC_REMOVE,   /* an entry removed from its directory */
	SB_FC_TRUNCATE, /* truncate(path) */
};

/* One access of a call: what it does to the caller's (dirfd, path). */
struct sb_fc_access {
	enum sb_fc_op op;
	int dirfd;        /* AT_FDCWD or the caller's descriptor */
	uint64_t path_at; /* the path in the caller's memory */
	uint64_t flags;   /* OPEN: the open flags; REMOVE: AT_REMOVEDIR */
	/* MAKE: S_IFDIR, S_IFREG, S_IFIFO, S_IFSOCK, S_IFLNK..., or 0 for
	 * "what the entry removed before it is" (rename's target) */
	unsigned type;
	bool empty_path; /* EXEC: execveat with AT_EMPTY_PATH */
};

/* The calls decoded here (a seccomp filter notifies them). */
bool sb_filecall_handles(int nr);

/* The calls that send a signal to a process named by pid or pidfd (kill,
 * tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal):
 * Landlock's signal scope refuses them for a process outside the sandbox,
 * which a denial log records too (filelog.c). */
bool sb_sigcall_handles(int nr);
/* The process notified call 'req' signals, as a pid of the caller's
 * namespace: 0 when it names none (a process group, every process) or
 * its pidfd cannot be read. */
pid_t sb_sigcall_target(const struct seccomp_notif *req);
/* The process pidfd 'fd' of process 'pid' names (its fdinfo's "Pid:"), or
 * 0 when it names none or cannot be read. */
pid_t sb_pidfd_target(pid_t pid, int fd);

/* The accesses of notified call 'req' into out[2] (rename: the source's
 * removal, then the target's making): how many, 0 when it is no file
 * call or its arguments cannot be read. */
size_t sb_filecall_decode(const struct seccomp_notif *req,
			  struct sb_fc_access out[2]);

/* A NUL-terminated string of process 'pid' at 'remote' into buf: 0, or
 * -EFAULT, -ENAMETOOLONG. */
int sb_filecall_peek_string(pid_t pid, uint64_t remote, char *buf,
			    size_t size);

/* The canonical absolute path process 'pid' names with (dirfd, path) into
 * out[PATH_MAX]. 'create': the last component may not exist yet (O_CREAT,
 * bind of a Unix socket): its directory is made canonical. 0, or -1 when
 * there is none (no such file, a path in /proc, whose "self" is not
 * ours). */
int sb_filecall_resolve(pid_t pid, int dirfd, const char *path, bool create,
			char *out);

/* The canonical directory that holds the entry (dirfd, path) names (the
 * entry itself need not exist, nor is a symbolic link by that name
 * followed) into out[PATH_MAX], and its last component into
 * last[PATH_MAX]: 0, or -1 (no such directory; "." or ".."). */
int sb_filecall_entry_dir(pid_t pid, int dirfd, const char *path, char *out,
			  char *last);

#endif
