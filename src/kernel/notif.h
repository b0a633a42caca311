/* notif.h - what both seccomp-notification supervisors (the network one,
 * netsup.c, and learning's, learn_native.c) need to reach the calling
 * process: its pidfd, a copy of one of its descriptors, its memory; and a
 * signal sent through a pidfd (supervisor.c). What a supervising python-sb
 * does with the signals it gets is supervisor.h's. */
#ifndef SB_NOTIF_H
#define SB_NOTIF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int sb_pidfd_open(pid_t pid, unsigned flags);
/* The pidfd of a notifying thread: a thread of a multi-threaded program is
 * no group leader (PIDFD_THREAD, or its group leader before Linux 6.9). */
int sb_pidfd_of_caller(pid_t pid);
/* A duplicate of descriptor 'fd' of the process behind 'pidfd'. */
int sb_pidfd_getfd(int pidfd, int fd);
/* The /proc link of the directory a relative path of process 'pid' starts
 * from: "/proc/PID/cwd" for AT_FDCWD, else "/proc/PID/fd/DIRFD". */
void sb_caller_dir_link(pid_t pid, int dirfd, char *out, size_t size);
/* The directory a call of process 'pid' resolves (dirfd, path) from, as
 * an O_PATH descriptor of ours: "/" for an absolute path (the kernel
 * ignores dirfd then), its cwd for AT_FDCWD, else a copy of its
 * descriptor 'dirfd' (through 'pidfd'; -1: through /proc/PID/fd; NULL
 * path: that descriptor). Or -ESRCH (the process is gone), -EBADF. */
int sb_caller_base(pid_t pid, int pidfd, int dirfd, const char *path);
/* Open 'path' as process 'pid' names it from (dirfd, path), with 'flags'
 * (O_PATH...): from sb_caller_base, never through a magic link, which we
 * would follow in our /proc (/proc/self/fd/N, /dev/stdin, /proc/PID/cwd,
 * or a symbolic link to one of them: one of the supervisor's own
 * descriptors or directories instead of the program's). A path that
 * starts with the program's own /proc/self/fd/N, /proc/thread-self/fd/N
 * or /dev/fd/N (the way to a socket whose path is longer than sun_path)
 * starts from its descriptor N; N alone is that descriptor. Our
 * descriptor, or -errno (ELOOP for a magic link). */
int sb_open_as_program(pid_t pid, int pidfd, int dirfd, const char *path,
		       int flags);
/* Copy 'len' bytes at 'remote' in process 'pid'; 0 or -EFAULT. */
int sb_peek(pid_t pid, uint64_t remote, void *buf, size_t len);

/* The object of our descriptor 'fd', which we opened by a path and whose
 * real path (as we see the file system) is 'canon', opened again as the
 * process 'pid' sees it: the same path under its root (/proc/PID/root,
 * no symbolic link followed), so that a change made on it goes through
 * that process's mount of it. Under os-sandbox=landlock the program runs
 * in a mount namespace of its own, where the read-only trees that an
 * expose-rw= covers are bound read-only (selfprotect.c): made on our
 * mount, a change the program's own call would have got EROFS for went
 * through. An O_PATH descriptor of the same object, or -errno (EACCES:
 * the path names another object there). */
int sb_reopen_as_seen_by(pid_t pid, int fd, const char *canon);

/* The file mode creation mask of process 'pid' (its status's "Umask:"),
 * or -1. */
int sb_umask_of(pid_t pid);

/* Send 'sig' to the process behind 'pidfd'; 0, or -1 with errno. */
int sb_pidfd_send_signal(int pidfd, int sig);

#endif
