/* filelog.c - the denial log's records of Landlock's refusals (filelog.h):
 * of file calls, and of signals its scope keeps inside the sandbox. A
 * refusal of Landlock reaches nobody but the program (EACCES, EPERM), so
 * the supervisor judges each such call a second time, against the same
 * ruleset as data, before the kernel does. It decides nothing:
 * every call it sees goes on, and Landlock alone refuses. What it records
 * can be wrong where its model is (docs/weaknesses.md): the permissions of
 * the file system come first, REFER is not modelled.
 */
#include "filelog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filecall.h"
#include "fsrules.h"
#include "landlock.h"
#include "suplog.h"

struct sb_filelog {
	const struct sb_policy *p;
	struct sb_landlock_view *view;
	bool signals; /* Landlock scopes signals (ABI 6) */
	/* a guard runs in the interpreter: records begin when it says the
	 * program starts (the interpreter's start is not the program's) */
	bool await_start;
};

/* Is it time to record? */
static bool recording(const struct sb_filelog *fl)
{
	return fl && (!fl->await_start || sb_suplog_program_started());
}

struct sb_filelog *sb_filelog_new(struct sb_arena *a,
				  const struct sb_policy *p,
				  const struct sb_kernel_ctx *ctx)
{
	int abi = sb_landlock_abi();
	struct sb_filelog *fl;

	if (abi < SB_LANDLOCK_MIN_ABI)
		return NULL;
	fl = sb_arena_alloc(a, sizeof(*fl));
	fl->p = p;
	fl->view = sb_landlock_view_new(a, p, ctx, abi);
	fl->signals = abi >= 6;
	fl->await_start = p->py_sandbox;
	return fl;
}

/* A refusal found, to be written once the caller is known to wait. */
struct found {
	char path[PATH_MAX];
	bool write;
};

/* Access 'x' of process 'pid': 1 with *f when Landlock refuses it, else
 * 0. 'moved' carries the type of rename's source to its target. */
static int judge(const struct sb_filelog *fl, pid_t pid,
		 const struct sb_fc_access *x, unsigned *moved,
		 struct found *f)
{
	char path[PATH_MAX], canon[PATH_MAX], last[PATH_MAX];
	bool exists, entry = x->op == SB_FC_MAKE || x->op == SB_FC_REMOVE;
	unsigned type = 0;
	struct stat st;
	uint64_t need;

	if (sb_filecall_peek_string(pid, x->path_at, path, sizeof(path)) < 0)
		return 0;
	if (!*path && !(x->op == SB_FC_EXEC && x->empty_path))
		return 0;
	if (entry) {
		if (sb_filecall_entry_dir(pid, x->dirfd, path, canon, last) < 0)
			return 0;
		/* the entry removed, or moved: its type says which right */
		if (x->op == SB_FC_REMOVE) {
			char full[PATH_MAX * 2];

			snprintf(full, sizeof(full), "%s/%s",
				 strcmp(canon, "/") ? canon : "", last);
			if (lstat(full, &st) == 0)
				*moved = type = st.st_mode & S_IFMT;
		} else {
			type = *moved;
		}
		exists = true;
	} else {
		/* a file an open makes need not exist yet */
		bool create = x->op == SB_FC_OPEN && (x->flags & O_CREAT);

		if (sb_filecall_resolve(pid, x->dirfd, path, create, canon) < 0)
			return 0; /* no such file: the kernel says ENOENT */
		exists = stat(canon, &st) == 0;
		if (exists)
			type = st.st_mode & S_IFMT;
		else if (!create)
			return 0;
	}
	need = sb_landlock_need(x, exists, type);
	if (!need || !sb_landlock_view_missing(fl->view, canon, need))
		return 0;
	strcpy(f->path, canon);
	f->write = sb_landlock_need_writes(need);
	return 1;
}

void sb_filelog_note(struct sb_filelog *fl, int listener,
		     const struct seccomp_notif *req)
{
	struct sb_fc_access x[2];
	struct found f[2];
	unsigned moved = 0;
	size_t i, n, k = 0;

	if (!recording(fl))
		return;
	n = sb_filecall_decode(req, x);
	for (i = 0; i < n; i++)
		k += (size_t)judge(fl, (pid_t)req->pid, &x[i], &moved, &f[k]);
	/* what was read belongs to the caller only while it waits */
	if (!k || ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
		return;
	for (i = 0; i < k; i++) {
		struct sb_fs_decision d;

		sb_fs_decide(fl->p, f[i].path, f[i].path, f[i].path,
			     f[i].write, &d);
		sb_suplog_landlock((pid_t)req->pid, f[i].path, f[i].write, &d);
	}
}

/* ---- signals ---- */

/* The parent of 'pid', 0 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	ssize_t n;
	int fd, ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold anything but the last ) */
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

bool sb_filelog_in_sandbox(pid_t target, pid_t root)
{
	pid_t self = getpid(), p = target;
	int hops;

	for (hops = 0; p > 0 && hops < 4096; hops++) {
		if (p == root)
			return true;
		if (p == self)
			return p != target;
		p = parent_of(p);
	}
	return false;
}

void sb_filelog_signal(struct sb_filelog *fl, int listener,
		       const struct seccomp_notif *req, pid_t root)
{
	pid_t target;
	char what[32];

	if (!recording(fl) || !fl->signals)
		return;
	target = sb_sigcall_target(req);
	if (target <= 0 || sb_filelog_in_sandbox(target, root) ||
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
		return;
	snprintf(what, sizeof(what), "pid %d", (int)target);
	sb_suplog_landlock_signal((pid_t)req->pid, what);
}

