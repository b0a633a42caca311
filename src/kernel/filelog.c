/* filelog.c - the denial log's records of Landlock's file refusals
 * (filelog.h). A refusal of Landlock reaches nobody but the program (an
 * EACCES), so the supervisor judges each file call a second time, against
 * the same ruleset as data, before the kernel does. It decides nothing:
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

#include "filecall.h"
#include "fsrules.h"
#include "landlock.h"
#include "suplog.h"

struct sb_filelog {
	const struct sb_policy *p;
	struct sb_landlock_view *view;
};

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

	if (!fl)
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
