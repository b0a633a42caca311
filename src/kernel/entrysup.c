/* entrysup.c - the calls on an entry that a rule names and Landlock cannot
 * grant (entrysup.h). Landlock's rules hang on the objects that exist when
 * the sandbox starts, and it judges making, removing and renaming an entry
 * on the directory that holds it. So it cannot grant expose-new=./out (not
 * there yet), nor the replacement of a file named by expose-rw=./state (an
 * atomic write renames a new file over it), without all of the directory:
 * for the home directory, every file in it (docs/weaknesses.md 61).
 *
 * Here the supervisor does those calls for the program. It reads the path
 * once, opens the directory that holds the entry (following links on the
 * way as the kernel would) and takes its real path from that descriptor,
 * opens it again as the program's mount sees it (a read-only bind there
 * stays read-only), and judges directory + "/" + name with the one file
 * decision (fsrules.c). It acts only when the deciding rule of every
 * end of the call is such an entry's and allows it (a rename between two
 * entries; one from or to anywhere else is the kernel's), never on a
 * mount point of the program's namespace or a directory above one (the
 * kernel's EBUSY holds in the caller's namespace only, and ours is not
 * the program's), nor on a directory below which another rule names a
 * path (moved, it would be judged by the entry's rule), and then
 * on that descriptor and that one name, never following a link in the
 * last place: what the program changes in its memory or in the file system
 * after the read cannot move the call. An open's descriptor goes to the
 * program with SECCOMP_IOCTL_NOTIF_ADDFD. Everything else goes on to the
 * kernel, where Landlock judges it as before: this adds rights to the
 * entries the rules name, never to anything else. A link between two
 * such entries is performed; symbolic links, device nodes and openat2 are
 * not (Landlock judges them). expose-made= entries: see made_check().
 */
#include "entrysup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "filecall.h"
#include "fsrules.h"
#include "notif.h"
#include "util.h"

/* The kernel's O_LARGEFILE (glibc's is 0 on 64-bit machines). */
#define KERNEL_O_LARGEFILE 0100000

/* The open flags performed here; any other (O_PATH, O_TMPFILE) goes on. */
#define OPEN_FLAGS                                                          \
	(O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |     \
	 O_NONBLOCK | O_DSYNC | O_SYNC | O_DIRECTORY | O_NOFOLLOW |         \
	 O_CLOEXEC | KERNEL_O_LARGEFILE | O_NOATIME | O_DIRECT | FASYNC)

/* Is 'e' the rule of an entry Landlock cannot grant? */
static bool served(const struct sb_expose *e)
{
	return e && e->mode == SB_EXPOSE_RW && (e->entry || !e->is_dir);
}

bool sb_entrysup_wanted(const struct sb_policy *p)
{
	size_t i;

	if (p->provider != SB_PROVIDER_LANDLOCK &&
	    p->provider != SB_PROVIDER_AUTO)
		return false;
	for (i = 0; i < p->exposes.n; i++)
		if (served(&p->exposes.v[i]))
			return true;
	return false;
}

/* One entry a call acts on. */
struct place {
	int dfd;		/* its directory, as the program sees it */
	char name[NAME_MAX + 1];
	char canon[PATH_MAX];	/* its directory's real path, "/", name */
	bool ours;		/* a served rule decides for it */
	bool slash;		/* spelled with a trailing '/' */
	const struct sb_expose *rule; /* the rule that decides for it */
	bool top;		/* expose-made=: the entry right in its
				 * directory (else one below it) */
	bool fresh;		/* ... that is not there yet */
};

/* Is the entry a symbolic link? The kernel follows it; Landlock judges
 * where it leads, so the call goes on. */
static bool is_link(const struct place *pl)
{
	struct stat st;

	return fstatat(pl->dfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISLNK(st.st_mode);
}

/* The entry (dirfd, path) of the caller names into *pl: 0, or -1 when it
 * is none we can act on ("." or "..", a directory that is not there). */
static int locate(pid_t pid, int pidfd, int dirfd, const char *path,
		  struct place *pl)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	char buf[PATH_MAX], dir[PATH_MAX], link[64], *slash;
	const char *name;
	size_t n = strlen(path);
	ssize_t k;
	int base, fd;

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	pl->slash = false;
	while (n > 1 && buf[n - 1] == '/') {
		buf[--n] = '\0';
		pl->slash = true;
	}
	slash = strrchr(buf, '/');
	name = slash ? slash + 1 : buf;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strlen(name) > NAME_MAX)
		return -1;
	strcpy(pl->name, name);
	if (slash == buf)
		strcpy(buf, "/");
	else if (slash)
		*slash = '\0';
	base = sb_caller_base(pid, pidfd, dirfd, buf);
	if (base < 0)
		return -1;
	if (slash) {
		fd = (int)syscall(SYS_openat2, base, buf, &how, sizeof(how));
		close(base);
	} else {
		fd = base;
	}
	if (fd < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, dir, sizeof(dir) - 1);
	if (k <= 0 || dir[0] != '/' || (size_t)k + n + 2 > sizeof(pl->canon)) {
		close(fd);
		return -1;
	}
	dir[k] = '\0';
	pl->dfd = sb_reopen_as_seen_by(pid, fd, dir);
	close(fd);
	if (pl->dfd < 0)
		return -1;
	/* the length was checked above */
	strcpy(pl->canon, strcmp(dir, "/") ? dir : "");
	strcat(pl->canon, "/");
	strcat(pl->canon, pl->name);
	return 0;
}

/* May the call do this to the entry (write: change it or what it holds)? */
static bool allowed(const struct sb_policy *p, struct place *pl, bool write)
{
	struct sb_fs_decision d;

	sb_fs_decide(p, pl->canon, pl->canon, pl->canon, write, &d);
	pl->ours = d.verdict == SB_FS_ALLOW && served(d.expose);
	pl->rule = d.expose;
	return d.verdict == SB_FS_ALLOW && d.expose &&
	       d.expose->mode == SB_EXPOSE_RW;
}

/* ---- expose-made=: the entries the program made ---- */

/* An entry made through an expose-made= rule, by its identity: its file
 * handle (name_to_handle_at: the inode and its generation, which a file
 * system changes when it gives the inode number again) where the file
 * system has one, else device, inode and birth time (docs/weaknesses.md
 * 85). Kept while the supervisor runs: it is one process for the whole
 * tree, so what one process of the program made, another may use. */
#define MADE_HANDLE_MAX 40

struct made_key {
	uint64_t dev, ino;
	int64_t bsec;
	uint32_t bnsec;
	int htype;
	unsigned hlen;
	unsigned char handle[MADE_HANDLE_MAX];
};

/* Beyond this many entries made and still there, making one more is
 * refused with EDQUOT: the supervisor's memory is not the program's. */
#define MADE_MAX 65536

static struct made_key *made_v;
static size_t made_n, made_cap;
/* the network supervisor's workers bind Unix sockets there too */
static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;

/* The identity of (dfd, name), "" with AT_EMPTY_PATH for dfd itself:
 * 0, or -errno. */
static int key_of(int dfd, const char *name, int flags, struct made_key *k)
{
	union {
		struct file_handle fh;
		unsigned char space[sizeof(struct file_handle) +
				    MADE_HANDLE_MAX];
	} h;
	struct statx sx;
	int mount_id;

	if (statx(dfd, name, flags | AT_SYMLINK_NOFOLLOW,
		  STATX_INO | STATX_BTIME, &sx) < 0)
		return -errno;
	memset(k, 0, sizeof(*k));
	k->dev = ((uint64_t)sx.stx_dev_major << 32) | sx.stx_dev_minor;
	k->ino = sx.stx_ino;
	if (sx.stx_mask & STATX_BTIME) {
		k->bsec = sx.stx_btime.tv_sec;
		k->bnsec = sx.stx_btime.tv_nsec;
	}
	h.fh.handle_bytes = MADE_HANDLE_MAX;
	if (name_to_handle_at(dfd, name, &h.fh, &mount_id,
			      flags & AT_EMPTY_PATH) == 0 &&
	    h.fh.handle_bytes <= MADE_HANDLE_MAX) {
		k->htype = h.fh.handle_type;
		k->hlen = h.fh.handle_bytes;
		memcpy(k->handle, h.fh.f_handle, k->hlen);
	}
	return 0;
}

static bool same_key(const struct made_key *a, const struct made_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->bsec == b->bsec &&
	       a->bnsec == b->bnsec && a->htype == b->htype &&
	       a->hlen == b->hlen && memcmp(a->handle, b->handle, a->hlen) == 0;
}

static size_t made_find_locked(const struct made_key *k)
{
	size_t i;

	for (i = 0; i < made_n; i++)
		if (same_key(&made_v[i], k))
			return i;
	return SIZE_MAX;
}

static bool made_known(const struct made_key *k)
{
	bool known;

	pthread_mutex_lock(&made_lock);
	known = made_find_locked(k) != SIZE_MAX;
	pthread_mutex_unlock(&made_lock);
	return known;
}

static bool made_full(void)
{
	bool full;

	pthread_mutex_lock(&made_lock);
	full = made_n >= MADE_MAX;
	pthread_mutex_unlock(&made_lock);
	return full;
}

static void made_add(const struct made_key *k)
{
	struct made_key *v;

	pthread_mutex_lock(&made_lock);
	if (made_find_locked(k) == SIZE_MAX && made_n < MADE_MAX) {
		if (made_n == made_cap) {
			size_t cap = made_cap ? made_cap * 2 : 64;

			/* not remembered: refused from now on */
			v = realloc(made_v, cap * sizeof(*v));
			if (v) {
				made_v = v;
				made_cap = cap;
			}
		}
		if (made_n < made_cap)
			made_v[made_n++] = *k;
	}
	pthread_mutex_unlock(&made_lock);
}

static void made_drop(const struct made_key *k)
{
	size_t i;

	pthread_mutex_lock(&made_lock);
	i = made_find_locked(k);
	if (i != SIZE_MAX)
		made_v[i] = made_v[--made_n];
	pthread_mutex_unlock(&made_lock);
}

/* The entry right in the directory of expose-made= rule 'e' that holds
 * 'canon', as process 'pid' sees it: its identity (0), -ENOENT, or another
 * -errno; *top: canon is that entry. */
static int top_key(pid_t pid,
		   const struct sb_expose *e, const char *canon,
		   struct made_key *k, bool *top)
{
	char path[PATH_MAX];
	size_t dl = strcmp(e->made_dir, "/") == 0 ? 0 : strlen(e->made_dir);
	int fd, dfd, r;

	if (!sb_fs_made_top(e, canon, path, sizeof(path)))
		return -EACCES;
	*top = strcmp(path, canon) == 0;
	fd = open(e->made_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -EACCES;
	dfd = sb_reopen_as_seen_by(pid, fd, e->made_dir);
	close(fd);
	if (dfd < 0)
		return -EACCES;
	r = key_of(dfd, path + dl + 1, 0, k);
	close(dfd);
	return r;
}

bool sb_entrysup_made_ok(const struct sb_expose *e, pid_t pid,
			 const char *canon, bool create)
{
	struct made_key k;
	bool top = false;
	int r = top_key(pid, e, canon, &k, &top);

	if (r == -ENOENT)
		return create && top;
	return r == 0 && made_known(&k);
}

void sb_entrysup_made_at(int dirfd, const char *name)
{
	struct made_key k;

	if (key_of(dirfd, name, 0, &k) == 0)
		made_add(&k);
}

/* Does the call, on an entry that is there, fail for that alone (EEXIST):
 * an exclusive create, a mkdir, a rename that must not replace? */
static bool exclusive(const struct seccomp_notif *req,
		      const struct sb_fc_access *x, bool dest)
{
	if (x->op == SB_FC_OPEN)
		return (x->flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
	if (dest)
		return req->data.nr == __NR_renameat2 &&
		       (req->data.args[4] & RENAME_NOREPLACE);
	return x->op == SB_FC_MAKE && x->type == S_IFDIR;
}

/* Does the call make the entry when it is not there: an open with
 * O_CREAT, a mkdir, a rename's target (but an exchange's)? */
static bool makes(const struct seccomp_notif *req,
		  const struct sb_fc_access *x, bool dest)
{
	if (x->op == SB_FC_OPEN)
		return (x->flags & O_CREAT) != 0;
	if (dest)
		return !(req->data.nr == __NR_renameat2 &&
			 (req->data.args[4] & RENAME_EXCHANGE));
	return x->op == SB_FC_MAKE;
}

/* made_check(): not an entry the program made, the kernel's to judge */
#define MADE_NOT_OURS 1

/* expose-made=: may the call act on 'pl' (its rule's)? The entry right
 * in the rule's directory that holds it must be one the program made, or
 * not there yet (pl->fresh: the call makes it, or fails with ENOENT), or
 * there for a call that fails on that alone. 0, MADE_NOT_OURS, or
 * -errno. */
static long made_check(pid_t pid, const struct seccomp_notif *req,
		       const struct sb_fc_access *x, bool dest,
		       struct place *pl)
{
	const struct sb_expose *e = pl->rule;
	char top[PATH_MAX];
	struct made_key k;
	int r;

	if (!sb_fs_made_top(e, pl->canon, top, sizeof(top)))
		return -EACCES;
	pl->top = strcmp(top, pl->canon) == 0;
	r = pl->top ? key_of(pl->dfd, pl->name, 0, &k)
		    : top_key(pid, e, pl->canon, &k, &pl->top);
	if (r == -ENOENT) {
		/* not there: a call that does not make it fails so, here,
		 * never on what someone else makes there meanwhile; one that
		 * makes it may only make it (O_EXCL, RENAME_NOREPLACE) */
		if (!pl->top || !makes(req, x, dest))
			return -ENOENT;
		pl->fresh = true;
		return made_full() ? -EDQUOT : 0;
	}
	if (r < 0)
		return -EACCES;
	if (made_known(&k))
		return 0;
	/* there before the run, or made by someone else: never opened,
	 * changed, replaced or removed here. The kernel judges it as if
	 * the rule were not there: Landlock refuses it, unless another
	 * rule grants it (the script run, an expose-rw= above) */
	return pl->top && exclusive(req, x, dest) ? 0 : MADE_NOT_OURS;
}

/* link(2) or linkat(2)? */
static bool is_link_call(int nr)
{
#ifdef __NR_link
	if (nr == __NR_link)
		return true;
#endif
	return nr == __NR_linkat;
}

/* Is 'pl' an entry right in the directory of an expose-made= rule? */
static bool is_made_top(const struct place *pl)
{
	return pl->rule && pl->rule->made && pl->top;
}

/* After a mkdir made 'pl' there: remember it as made, by its name, when
 * it was born at 'before' or later (where the file system tells no birth
 * time: whatever the name leads to). */
static void made_note_since(const struct place *pl,
			    const struct timespec *before)
{
	struct made_key k;

	if (!is_made_top(pl) || key_of(pl->dfd, pl->name, 0, &k) < 0)
		return;
	if (k.bsec && (k.bsec < before->tv_sec ||
		       (k.bsec == before->tv_sec &&
			(long)k.bnsec < before->tv_nsec)))
		return;
	made_add(&k);
}

/* An open, performed: ANSWERED when the descriptor went to the program,
 * else REPLY with *rc, or PASS (a link in the last place, which the kernel
 * follows and Landlock judges where it leads). */
static enum sb_entrysup_answer open_entry(int listener,
					  const struct seccomp_notif *req,
					  const struct place *pl,
					  uint64_t flags, mode_t mode, long *rc)
{
	/* expose-made=: an entry not there yet is made here, never one
	 * that someone else makes meanwhile, and then remembered */
	bool record = is_made_top(pl) && pl->fresh && (flags & O_CREAT);
	/* one the program made: what the name leads to when it is opened
	 * must still be that (another program may rename its own file over
	 * the name meanwhile), so O_TRUNC waits for the check */
	bool pin = is_made_top(pl) && !pl->fresh;
	struct made_key k;
	struct seccomp_notif_addfd add = { 0 };
	struct stat st;
	int fd;

	/* a regular file or a directory (or nothing yet): anything else (a
	 * FIFO, a device, a socket) is opened by the program, where Landlock
	 * judges it, and never here, where its open could wait (a FIFO's
	 * for a writer: this loop serves the whole sandbox, its limits'
	 * timer included) or run a driver */
	if (fstatat(pl->dfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return SB_ENTRYSUP_PASS;
	fd = openat(pl->dfd, pl->name,
		    ((int)flags & ~(pin ? O_TRUNC : 0)) | (record ? O_EXCL : 0) |
			    O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		    mode);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
	    !(flags & O_NOFOLLOW) && is_link(pl))
		return SB_ENTRYSUP_PASS;
	/* swapped for a FIFO meanwhile: a writer's open found no reader */
	if (fd < 0 && errno == ENXIO)
		return SB_ENTRYSUP_PASS;
	if (fd < 0) {
		*rc = -errno;
		return SB_ENTRYSUP_REPLY;
	}
	if (fstat(fd, &st) < 0 ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) ||
	    (!(flags & O_NONBLOCK) &&
	     fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)) {
		close(fd);
		return SB_ENTRYSUP_PASS;
	}
	if (pin && (key_of(fd, "", AT_EMPTY_PATH, &k) < 0 ||
		    !made_known(&k))) {
		close(fd);
		*rc = -EACCES;
		return SB_ENTRYSUP_REPLY;
	}
	if (pin && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY &&
	    S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) {
		*rc = -errno;
		close(fd);
		return SB_ENTRYSUP_REPLY;
	}
	if (record && key_of(fd, "", AT_EMPTY_PATH, &k) == 0)
		made_add(&k);
	add.id = req->id;
	add.flags = SECCOMP_ADDFD_FLAG_SEND;
	add.srcfd = (__u32)fd;
	add.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0 ||
	    errno == ENOENT) {
		close(fd);
		return SB_ENTRYSUP_ANSWERED;
	}
	*rc = -errno; /* EMFILE: the program has no room for it */
	close(fd);
	return SB_ENTRYSUP_REPLY;
}

static long truncate_entry(pid_t pid, const struct place *pl, uint64_t len)
{
	struct made_key k;
	struct stat st;
	void (*old)(int);
	long rc;
	int fd;

	struct rlimit fsize;

	if ((int64_t)len < 0)
		return -EINVAL;
	/* the program's limit, not ours (the kernel sends it SIGXFSZ) */
	if (prlimit(pid, RLIMIT_FSIZE, NULL, &fsize) < 0)
		return -EFBIG;
	if (fsize.rlim_cur != RLIM_INFINITY && len > fsize.rlim_cur) {
		kill(pid, SIGXFSZ);
		return -EFBIG;
	}
	if (fstatat(pl->dfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = openat(pl->dfd, pl->name,
		    O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* one the program made: still that one (as open_entry) */
	if (is_made_top(pl) &&
	    (key_of(fd, "", AT_EMPTY_PATH, &k) < 0 || !made_known(&k))) {
		close(fd);
		return -EACCES;
	}
	/* our own limit may be lower than the program's: EFBIG, never our
	 * death by SIGXFSZ */
	old = signal(SIGXFSZ, SIG_IGN);
	rc = ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
	signal(SIGXFSZ, old);
	close(fd);
	return rc;
}

/* Is a mount point of process 'pid' at 'canon' or below it? The kernel
 * refuses to remove or rename a mount point (EBUSY) in the caller's own
 * mount namespace only; ours is not the program's, where selfprotect.c
 * binds python-sb's own files and the read-only trees (an unlink or a
 * rename made here would detach them). Unreadable: yes. */
static bool mount_below(pid_t pid, const char *canon)
{
	char file[64], line[4 * PATH_MAX], mp[PATH_MAX];
	bool found = false;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/mountinfo", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return true;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *q = line;
		size_t k = 0;
		int field;

		/* the fifth field, with \ooo escapes */
		for (field = 0; field < 4 && q; field++) {
			q = strchr(q, ' ');
			q = q ? q + 1 : NULL;
		}
		if (!q)
			continue;
		while (*q && *q != ' ' && *q != '\n' && k + 1 < sizeof(mp)) {
			if (q[0] == '\\' && q[1] >= '0' && q[1] <= '3' &&
			    q[2] >= '0' && q[2] <= '7' && q[3] >= '0' &&
			    q[3] <= '7') {
				mp[k++] = (char)((q[1] - '0') * 64 +
						 (q[2] - '0') * 8 + (q[3] - '0'));
				q += 4;
			} else {
				mp[k++] = *q++;
			}
		}
		mp[k] = '\0';
		found = sb_path_under(mp, canon);
	}
	fclose(f);
	return found;
}

/* Does a rule name a path strictly below 'canon' (an exposure, or an
 * absolute ignore=: python-sb's own files among them)? Moved with the
 * directory, it would be judged by the entry's rule at its new path. */
static bool rules_below(const struct sb_policy *p, const char *canon)
{
	size_t i;

	for (i = 0; i < p->exposes.n; i++)
		if (strcmp(p->exposes.v[i].path, canon) != 0 &&
		    sb_path_under(p->exposes.v[i].path, canon))
			return true;
	for (i = 0; i < p->ignores.n; i++)
		if (p->ignores.v[i].pattern[0] == '/' &&
		    strcmp(p->ignores.v[i].pattern, canon) != 0 &&
		    sb_path_under(p->ignores.v[i].pattern, canon))
			return true;
	return false;
}

/* May the entries a removal or a rename acts on go? -EBUSY for a mount
 * point at or below one, -EACCES for one that holds another rule's path
 * (a rename moves what lies below), else 0. */
static long may_move(const struct sb_policy *p, pid_t pid,
		     const struct place *pl, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (mount_below(pid, pl[i].canon))
			return -EBUSY;
		if (rules_below(p, pl[i].canon))
			return -EACCES;
	}
	return 0;
}

/* A link of an entry the program made (pl[0]) to pl[1]: pinned by a
 * descriptor, checked to be a made one, linked through it, and that
 * identity remembered (never what the names lead to afterwards). */
static long link_made(const struct place *pl)
{
	char path[64];
	struct made_key k;
	long rc;
	int fd = openat(pl[0].dfd, pl[0].name,
			O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (key_of(fd, "", AT_EMPTY_PATH, &k) < 0 || !made_known(&k)) {
		close(fd);
		return -EACCES;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = linkat(AT_FDCWD, path, pl[1].dfd, pl[1].name,
		    AT_SYMLINK_FOLLOW) < 0
		     ? -errno
		     : 0;
	close(fd);
	if (!rc && is_made_top(&pl[1]))
		made_add(&k);
	return rc;
}

/* What the call does to its entries, performed (the first of 'pl', and
 * for a rename the second): REPLY with *rc, or ANSWERED, or PASS. */
static enum sb_entrysup_answer perform(int listener,
				       const struct seccomp_notif *req,
				       const struct sb_fc_access *x,
				       const struct place *pl, long *rc)
{
	const __u64 *a = req->data.args;
	int nr = req->data.nr;
	struct timespec before;

	/* a link between two such entries: made as the program asked,
	 * never to what a link in the first place leads (Landlock's) */
	if (is_link_call(nr)) {
		struct made_key src;
		bool keep;

		if (is_link(&pl[0]))
			return SB_ENTRYSUP_PASS;
		keep = !is_made_top(&pl[0]) && is_made_top(&pl[1]) &&
		       key_of(pl[0].dfd, pl[0].name, 0, &src) == 0;
		*rc = is_made_top(&pl[0]) ? link_made(pl)
		      : linkat(pl[0].dfd, pl[0].name, pl[1].dfd, pl[1].name,
			       0) < 0
			      ? -errno
			      : 0;
		if (!*rc && keep)
			made_add(&src);
		return SB_ENTRYSUP_REPLY;
	}
	switch (x->op) {
	case SB_FC_OPEN:
		return open_entry(listener, req, pl, x->flags,
				  (mode_t)(nr == __NR_openat	? a[3]
					   : nr == __NR_creat ? a[1]
							      : a[2]) &
					  07777,
				  rc);
	case SB_FC_TRUNCATE:
		if (is_link(pl))
			return SB_ENTRYSUP_PASS;
		*rc = truncate_entry((pid_t)req->pid, pl, a[1]);
		return SB_ENTRYSUP_REPLY;
	case SB_FC_MAKE: /* mkdir: the others pass (performed_call) */
		clock_gettime(CLOCK_REALTIME_COARSE, &before);
		*rc = mkdirat(pl->dfd, pl->name,
			      (mode_t)(nr == __NR_mkdirat ? a[2] : a[1]) &
				      07777) < 0
			      ? -errno
			      : 0;
		/* remembered by its name: born since, or it is another
		 * program's directory renamed over it meanwhile */
		if (!*rc)
			made_note_since(pl, &before);
		return SB_ENTRYSUP_REPLY;
	case SB_FC_REMOVE:
		if (nr == __NR_rename || nr == __NR_renameat ||
		    nr == __NR_renameat2) {
			unsigned how = nr == __NR_renameat2 ? (unsigned)a[4]
							    : 0U;
			struct made_key over;
			/* a made entry replaced: forgotten with it */
			bool replaced = is_made_top(&pl[1]) && !pl[1].fresh &&
					!(how & RENAME_EXCHANGE) &&
					key_of(pl[1].dfd, pl[1].name, 0,
					       &over) == 0;

			/* what now has a made entry's name is the program's:
			 * it had every right on what it moved (known before
			 * the move, never by the name after it) */
			struct made_key moved;
			bool keep = is_made_top(&pl[1]) &&
				    key_of(pl[0].dfd, pl[0].name, 0,
					   &moved) == 0;

			/* a made entry's name that was free is only taken,
			 * never what someone else put there meanwhile */
			if (is_made_top(&pl[1]) && pl[1].fresh)
				how |= RENAME_NOREPLACE;
			*rc = syscall(SYS_renameat2, pl[0].dfd, pl[0].name,
				      pl[1].dfd, pl[1].name, how) < 0
				      ? -errno
				      : 0;
			if (!*rc && replaced)
				made_drop(&over);
			if (!*rc && keep)
				made_add(&moved);
		} else {
			struct made_key k;
			struct stat st;
			/* forgotten with its last name (a link may hold it) */
			bool known = is_made_top(pl) &&
				     key_of(pl->dfd, pl->name, 0, &k) == 0 &&
				     fstatat(pl->dfd, pl->name, &st,
					     AT_SYMLINK_NOFOLLOW) == 0 &&
				     (st.st_nlink <= 1 || S_ISDIR(st.st_mode));

			*rc = unlinkat(pl->dfd, pl->name, (int)x->flags) < 0
				      ? -errno
				      : 0;
			if (!*rc && known)
				made_drop(&k);
		}
		return SB_ENTRYSUP_REPLY;
	default:
		return SB_ENTRYSUP_PASS;
	}
}

/* An open with O_TMPFILE of (dirfd, path): performed when the directory
 * is an expose-made= rule's, else the kernel's. */
static enum sb_entrysup_answer tmpfile_dir(const struct sb_policy *p,
					   int listener,
					   const struct seccomp_notif *req,
					   int pidfd,
					   const struct sb_fc_access *x,
					   const char *path, long *rc)
{
	enum sb_entrysup_answer ans = SB_ENTRYSUP_PASS;
	struct place pl = { .dfd = -1 };
	size_t i;

	if (locate((pid_t)req->pid, pidfd, x->dirfd, path, &pl) < 0)
		return SB_ENTRYSUP_PASS;
	for (i = 0; i < p->exposes.n; i++)
		if (p->exposes.v[i].made &&
		    strcmp(p->exposes.v[i].made_dir, pl.canon) == 0)
			break;
	if (i < p->exposes.n &&
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0) {
		int mask = sb_umask_of((pid_t)req->pid);

		mask = umask((mode_t)(mask < 0 ? 077 : mask));
		ans = open_entry(listener, req, &pl, x->flags,
				 (mode_t)(req->data.nr == __NR_openat
						  ? req->data.args[3]
						  : req->data.args[2]) &
					 07777,
				 rc);
		umask((mode_t)mask);
	}
	close(pl.dfd);
	return ans;
}

/* A link's accesses as a rename's: the entry linked first (which must
 * be the program's to change, as the guard asks), then the name made.
 * filecall.c decodes the new name only, which is all Landlock judges. */
static size_t with_link_source(const struct seccomp_notif *req,
			       struct sb_fc_access x[2], size_t n)
{
	const __u64 *a = req->data.args;
	bool at = req->data.nr == __NR_linkat;

	if (!is_link_call(req->data.nr) || n != 1)
		return n;
	x[1] = x[0];
	memset(&x[0], 0, sizeof(x[0]));
	x[0].op = SB_FC_REMOVE;
	x[0].dirfd = at ? (int)a[0] : AT_FDCWD;
	x[0].path_at = at ? a[1] : a[0];
	return 2;
}

/* The calls performed here, and what each needs. */
static bool performed_call(const struct seccomp_notif *req,
			   const struct sb_fc_access *x, bool *write)
{
	switch (req->data.nr) {
#ifdef __NR_open
	case __NR_open:
	case __NR_creat:
	case __NR_mkdir:
	case __NR_unlink:
	case __NR_rmdir:
	case __NR_rename:
#endif
	case __NR_openat:
	case __NR_truncate:
	case __NR_mkdirat:
	case __NR_renameat:
		break;
	case __NR_unlinkat:
		/* an unknown flag: the kernel's EINVAL */
		if (req->data.args[2] & ~(__u64)AT_REMOVEDIR)
			return false;
		break;
	case __NR_renameat2:
		/* RENAME_WHITEOUT makes a device node */
		if (req->data.args[4] & ~(__u64)(RENAME_NOREPLACE |
						  RENAME_EXCHANGE))
			return false;
		break;
	case __NR_linkat:
		/* AT_EMPTY_PATH links a descriptor: the kernel's */
		if (req->data.args[4] & ~(__u64)AT_SYMLINK_FOLLOW)
			return false;
		break;
#ifdef __NR_link
	case __NR_link:
		break;
#endif
	default:
		return false;
	}
	if (x->op == SB_FC_OPEN) {
		uint64_t acc = x->flags & O_ACCMODE;

		/* O_TMPFILE: in an expose-made= rule's directory only
		 * (tmpfile_dir) */
		if ((x->flags & ~(uint64_t)(OPEN_FLAGS | O_TMPFILE)) ||
		    acc == O_ACCMODE)
			return false;
		*write = acc != O_RDONLY || (x->flags & (O_CREAT | O_TRUNC));
	} else {
		*write = true;
	}
	return true;
}

/* Might the caller's (dirfd, path) name an entry a served rule decides
 * for? Read from its spelling, joined to the real path of the directory it
 * starts from, without asking the file system: a path that reaches such an
 * entry through a symbolic link is "no", and goes on to Landlock, which
 * refuses it (an entry made here has no rule of its own there). A spelling
 * with "." or ".." in it is "maybe". Most of a program's opens are the
 * interpreter's, far from any such entry: they go on after one readlink at
 * most, not the dozen calls of locate(). */
static bool near_served(const struct sb_policy *p, pid_t pid, int dirfd,
			const char *path)
{
	char full[PATH_MAX * 2], base[64];
	size_t i;
	ssize_t k = 0;

	if (path[0] != '/') {
		sb_caller_dir_link(pid, dirfd, base, sizeof(base));
		k = readlink(base, full, PATH_MAX - 1);
		if (k <= 0 || full[0] != '/')
			return true; /* locate() decides */
		full[k++] = '/';
	}
	snprintf(full + k, sizeof(full) - (size_t)k, "%s", path);
	if (strstr(full, "/./") || strstr(full, "/../") ||
	    strstr(full, "//"))
		return true;
	k = (ssize_t)strlen(full);
	if ((k >= 2 && !strcmp(full + k - 2, "/.")) ||
	    (k >= 3 && !strcmp(full + k - 3, "/..")))
		return true;
	while (k > 1 && full[k - 1] == '/')
		full[--k] = '\0';
	for (i = 0; i < p->exposes.n; i++)
		if (served(&p->exposes.v[i]) &&
		    sb_path_under(full, p->exposes.v[i].made
						? p->exposes.v[i].made_dir
						: p->exposes.v[i].path))
			return true;
	return false;
}

enum sb_entrysup_answer sb_entrysup_serve(const struct sb_policy *p,
					  int listener,
					  const struct seccomp_notif *req,
					  long *rc)
{
	enum sb_entrysup_answer ans = SB_ENTRYSUP_PASS;
	struct sb_fc_access x[2];
	struct place pl[2] = { { .dfd = -1 }, { .dfd = -1 } };
	char path[2][PATH_MAX];
	bool write = false, ours = false, near = false, ok = true;
	size_t i, n = sb_filecall_decode(req, x);
	int pidfd, mask;

	if (!n || !performed_call(req, &x[0], &write))
		return SB_ENTRYSUP_PASS;
	n = with_link_source(req, x, n);
	for (i = 0; i < n; i++) {
		if (sb_filecall_peek_string(req->pid, x[i].path_at, path[i],
					    sizeof(path[i])) < 0)
			return SB_ENTRYSUP_PASS;
		near |= near_served(p, (pid_t)req->pid, x[i].dirfd, path[i]);
	}
	if (!near)
		return SB_ENTRYSUP_PASS;
	pidfd = sb_pidfd_of_caller((pid_t)req->pid);
	if (pidfd < 0)
		return SB_ENTRYSUP_PASS;
	/* an unnamed file (O_TMPFILE) in an expose-made= rule's directory:
	 * no entry is made; a link that would name it is Landlock's */
	if (x[0].op == SB_FC_OPEN &&
	    (x[0].flags & O_TMPFILE) == O_TMPFILE) {
		ans = tmpfile_dir(p, listener, req, pidfd, &x[0], path[0],
				  rc);
		close(pidfd);
		return ans;
	}
	/* every end a served rule's: a rename from or to anywhere else
	 * (a rule's own root, a tree the program may change) is the
	 * kernel's to judge, with Landlock and the mounts in its way */
	for (i = 0, ours = true; i < n && ok; i++) {
		ok = locate((pid_t)req->pid, pidfd, x[i].dirfd, path[i],
			    &pl[i]) == 0 &&
		     allowed(p, &pl[i], write) &&
		     (!pl[i].slash || x[i].op == SB_FC_MAKE ||
		      (x[i].op == SB_FC_REMOVE && (x[i].flags & AT_REMOVEDIR)));
		ours = ours && ok && pl[i].ours;
	}
	close(pidfd);
	/* what was read, and the cwd and descriptors we started from, were
	 * the caller's, not a recycled pid's: checked after them */
	if (ok && ours &&
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0) {
		*rc = 0;
		for (i = 0; i < n && !*rc; i++)
			if (pl[i].rule->made)
				*rc = made_check((pid_t)req->pid, req, &x[i],
						 i == 1, &pl[i]);
		if (!*rc && x[0].op == SB_FC_REMOVE)
			*rc = may_move(p, (pid_t)req->pid, pl, n);
		if (*rc == MADE_NOT_OURS) {
			ans = SB_ENTRYSUP_PASS;
		} else if (*rc) {
			ans = SB_ENTRYSUP_REPLY;
		} else {
			mask = sb_umask_of((pid_t)req->pid);
			mask = umask((mode_t)(mask < 0 ? 077 : mask));
			ans = perform(listener, req, &x[0], pl, rc);
			umask((mode_t)mask);
		}
	}
	for (i = 0; i < 2; i++)
		if (pl[i].dfd >= 0)
			close(pl[i].dfd);
	return ans;
}
