/* files.c - the file guard (py-sandboxes(5), expose-* and ignore=): every path
 * a Python-level call names is located (absolute form, canonical form with
 * symlinks resolved the way the kernel will) and judged by sb_fs_decide(). It
 * owns the audit events that name paths, the C wrappers for the os functions
 * that raise no event or one without the facts (stat, access, readlink, os.open
 * with dir_fd, the filtering listdir/scandir...), and the implicit read-only
 * exposures of the interpreter and the CA stores.
 *
 * It must not allocate per event (the hot path is every open()): all
 * buffers are on the stack, the arena is used at arming only. It never
 * hands the real call a different path than the program wrote: the
 * canonical path is for the decision only, so link semantics stay intact.
 * AF_UNIX socket paths belong to the network guard (it calls
 * sb_files_check()).
 */
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsrules.h"
#include "pubtree.h"
#include "pathwalk.h"

/* what a judgement asks */
#define J_WRITE 0x01
#define J_NOFOLLOW 0x02 /* the call acts on a final symlink itself */
#define J_ANCESTOR 0x04 /* a directory leading to an exposure passes (read) */
#define J_NONE_IS_CWD 0x08 /* event argument None means "." */
#define J_LISTING 0x10     /* J_ANCESTOR when a filtering wrapper called */
#define J_FORGET 0x20 /* the call may change what a directory path reaches */
#define J_EXISTING 0x40 /* the call acts on an entry that must be there */
#define J_NEW 0x80 /* the call makes the entry: it must not be there */
/* os.open(dir, O_TMPFILE): a file with no name, which only a link could
 * put in the directory (judged then); not in the event table */
#define J_TMPFILE 0x100

/* The os.open wrapper judged this path argument (with its dir_fd): the
 * "open" event of the same call, which lacks the dir_fd, lets it pass. */
static __thread PyObject *open_judged;
/* Non-zero while a filtering listdir/scandir wrapper runs the original:
 * only then may the listing of a directory leading to an exposure pass. */
static __thread int listing_filtered;


/* ---- locating a path (pathwalk.c) ---- */

static int locate(const char *path, int dir_fd, const char *base,
		  bool follow, struct sb_fs_paths *fp)
{
	return sb_path_locate(&sb_g.files.dirs, path, dir_fd, base, follow,
			      fp);
}

/* ---- deciding and refusing ---- */

static void format_ref(char *buf, size_t n, struct sb_ref ref)
{
	if (!ref.file)
		snprintf(buf, n, "%s", SB_REF_IMPLICIT);
	else if (ref.line == 0)
		snprintf(buf, n, "%s", ref.file);
	else
		snprintf(buf, n, "%s(%u)", ref.file, ref.line);
}

/* What the denial log says of a refused path: the rule that decided (with
 * its file and line; NULL: none did) and the exposure that would allow the
 * access (ADD_NONE: no exposure undoes an ignore=). */
enum add_rule { ADD_NONE, ADD_RO, ADD_RW };

static bool importlib_look(void);

/* importlib looking into a sys.path entry is not the program's attempt: a
 * refused one is an empty directory to it (learning records it only as a
 * lookup), and the denial log leaves it out. */
static void mute_importlib_look(void)
{
	if (sb_g.log_fd >= 0 && importlib_look())
		sb_guard_no_log();
}

static void note_file(const char *abs, const char *rule, struct sb_ref ref,
		      enum add_rule add)
{
	char a[PATH_MAX + 16], r[2 * PATH_MAX + 64], where[PATH_MAX + 32];

	if (sb_g.log_fd < 0)
		return;
	snprintf(a, sizeof(a), "%s=%s",
		 add == ADD_RW ? "expose-rw" : "expose-ro", abs);
	if (rule) {
		format_ref(where, sizeof(where), ref);
		snprintf(r, sizeof(r), "%s from %s", rule, where);
	}
	sb_guard_note("file", abs, rule ? r : NULL, add == ADD_NONE ? NULL : a);
}

/* Why a file the program did not name is judged (SQLite's own files
 * beside a database), said before the refusal; NULL: the program named
 * it. Per thread, set around one judgement. */
static __thread const char *refusal_context;

/* sb_guard_raise, with the refusal's context in front of 'msg'. */
static int raise_refusal(enum sb_exc kind, const char *msg,
			 const char *spelled)
{
	char full[3 * PATH_MAX + 1024];

	if (!refusal_context)
		return sb_guard_raise(kind, msg, spelled);
	snprintf(full, sizeof(full), "%s: %s", refusal_context, msg);
	return sb_guard_raise(kind, full, spelled);
}

static int raise_not_exposed(const char *abs, const char *spelled)
{
	char msg[PATH_MAX + 64];

	snprintf(msg, sizeof(msg), "Access to '%s' must be accepted by a rule.",
		 abs);
	return raise_refusal(SB_EXC_FILE_NOT_FOUND, msg, spelled);
}

static int refuse_not_exposed(const char *abs, const char *spelled)
{
	struct sb_ref none = { 0 };

	if (sb_g.learning)
		return 0; /* the judge functions record what they can locate */
	note_file(abs, NULL, none, ADD_RO);
	mute_importlib_look();
	return raise_not_exposed(abs, spelled);
}

static int refuse(const struct sb_fs_decision *d, const char *spelled,
		  const char *abs, bool write)
{
	char msg[2 * PATH_MAX + 512], ref[PATH_MAX + 32];
	struct sb_ref none = { 0 };

	switch (d->verdict) {
	case SB_FS_IGNORED:
		note_file(abs, d->ignore->rule, d->ignore->ref, ADD_NONE);
		format_ref(ref, sizeof(ref), d->ignore->ref);
		snprintf(msg, sizeof(msg),
			 "Access to '%s' is ignored by rule '%s' from %s",
			 spelled, d->ignore->rule, ref);
		return raise_refusal(SB_EXC_FILE_NOT_FOUND, msg, spelled);
	case SB_FS_READ_ONLY:
		note_file(abs, d->expose->rule, d->expose->ref, ADD_RW);
		format_ref(ref, sizeof(ref), d->expose->ref);
		/* a directory prints with its slash, like the spec's example;
		 * a file exposed alone (beyond the seed) without */
		snprintf(msg, sizeof(msg),
			 "Cannot write to '%s%s'. Rule '%s' from %s",
			 d->expose->path,
			 d->expose->is_dir && strcmp(d->expose->path, "/") != 0
				 ? "/"
				 : "",
			 d->expose->rule, ref);
		return raise_refusal(SB_EXC_PERMISSION, msg, spelled);
	default:
		if (sb_g.learning)
			return 0;
		note_file(abs, NULL, none, write ? ADD_RW : ADD_RO);
		if (!write)
			mute_importlib_look();
		return raise_not_exposed(abs, spelled);
	}
}

/* Does a directory lead to an exposure (some exposed path strictly below
 * it)? Listing it, filtered, lets the program walk down to what it may
 * use, and reveals nothing but the names on that way. */
static bool leads_to_exposure(const char *canon)
{
	const struct sb_policy *p = sb_g.policy;
	size_t i;

	for (i = 0; i < p->exposes.n; i++) {
		const char *e = p->exposes.v[i].path;

		if (strcmp(e, canon) != 0 && sb_path_under(e, canon))
			return true;
	}
	return false;
}

/* expose-made=: is the entry right in the rule's directory that holds
 * 'canon' one this run made (1), one it did not (0), or not there yet (-1:
 * the call makes it, or fails with ENOENT)? Made means: the program's own
 * user's, and born after the launcher started (the guard of one process
 * cannot know what another made; the supervisor of the kernel layer knows
 * exactly, entrysup.c). An entry that is there passes for a call that then
 * fails with EEXIST. */
static int made_by_run(const struct sb_expose *e, const char *canon,
		       unsigned flags)
{
	char top[PATH_MAX];
	struct statx sx;

	if (!sb_fs_made_top(e, canon, top, sizeof(top)))
		return 0;
	if (statx(AT_FDCWD, top, AT_SYMLINK_NOFOLLOW,
		  STATX_UID | STATX_BTIME, &sx) < 0)
		return errno == ENOENT ? -1 : 0;
	if ((flags & J_NEW) && strcmp(top, canon) == 0)
		return 1;
	if (sx.stx_uid != geteuid() || !(sx.stx_mask & STATX_BTIME) ||
	    !sb_g.started_sec)
		return 0;
	/* born in a later tick of the coarse clock than the start: one of
	 * the start's own tick may be older (CPython's start alone lasts
	 * several ticks, so the program's own are always later) */
	return sx.stx_btime.tv_sec > sb_g.started_sec ||
	       (sx.stx_btime.tv_sec == sb_g.started_sec &&
		sx.stx_btime.tv_nsec > sb_g.started_nsec);
}

/* The origin of the CA stores' implicit exposures, known by its address */
static const char CA_ORIGIN[] = "<ca-certificates>";

/* Set by verdict(): an expose-made= entry not there when a call that
 * only looks was judged. That call is answered ENOENT without being made:
 * had it gone on, a file another program put there meanwhile would be
 * read. (Judging runs with the GIL held.) */
static bool made_absent;

/* Is 'canon' the directory of an expose-made= rule? */
static bool made_dir(const char *canon)
{
	const struct sb_policy *p = sb_g.policy;
	size_t i;

	for (i = 0; i < p->exposes.n; i++)
		if (p->exposes.v[i].made &&
		    strcmp(p->exposes.v[i].made_dir, canon) == 0)
			return true;
	return false;
}

static enum sb_fs_verdict verdict(const char *spelled,
				  const struct sb_fs_paths *fp, unsigned flags,
				  struct sb_fs_decision *d)
{
	made_absent = false;
	sb_fs_decide(sb_g.policy, spelled, fp->abs, fp->canon,
		     (flags & J_WRITE) != 0, d);
	/* a CA store grants what every user may read of it, never a key
	 * kept beside the certificates (pubtree.h) */
	if (d->verdict == SB_FS_ALLOW && d->expose &&
	    d->expose->ref.file == CA_ORIGIN &&
	    !sb_public_path(d->expose->path, fp->canon)) {
		d->verdict = SB_FS_NOT_EXPOSED;
		d->expose = NULL;
	}
	if (d->verdict == SB_FS_ALLOW && d->expose && d->expose->made &&
	    !sb_g.learning) {
		int made = made_by_run(d->expose, fp->canon, flags);

		if (made == 0 || (made < 0 && !(flags & J_WRITE))) {
			made_absent = made < 0;
			d->verdict = SB_FS_NOT_EXPOSED;
			d->expose = NULL;
		}
	}
	/* an unnamed file in the directory of an expose-made= rule
	 * (tempfile.TemporaryFile): the program's own, as one it makes */
	if (d->verdict == SB_FS_NOT_EXPOSED && (flags & J_TMPFILE) &&
	    made_dir(fp->canon))
		return SB_FS_ALLOW;
	if (d->verdict == SB_FS_NOT_EXPOSED && (flags & J_ANCESTOR) &&
	    !(flags & J_WRITE) && leads_to_exposure(fp->canon))
		return SB_FS_ALLOW;
	/* the process's own descriptor directory, listed: the numbers of
	 * its own descriptors (os.fstat tells as much); what each entry
	 * leads to is judged when it is opened or read */
	if (d->verdict == SB_FS_NOT_EXPOSED && (flags & J_LISTING) &&
	    !(flags & J_WRITE) && sb_path_own_fd_dir(fp->canon, getpid()))
		return SB_FS_ALLOW;
	return d->verdict;
}

/* Is this importlib looking into a sys.path entry (its listing, or the
 * stat of the directory that tells whether the listing is stale)? A refused
 * listing is an empty directory to it, so the entry is needed only when a
 * module is then found there: learning records it as a lookup, which
 * learn_rules.c turns into expose-list= only then. */
static bool importlib_look(void)
{
	PyObject *frame = py.PyEval_GetFrame(), *code, *name;
	const char *n;
	bool yes = false;

	if (!frame)
		return false;
	code = py.PyFrame_GetCode(frame);
	name = code ? py.PyObject_GetAttrString(code, "co_name") : NULL;
	py.Py_DecRef(code);
	n = name ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	yes = n && (strcmp(n, "_fill_cache") == 0 ||
		    strcmp(n, "_path_stat") == 0) &&
	      sb_guard_caller_is_library();
	py.Py_DecRef(name);
	py.PyErr_Clear();
	return yes;
}

/* Learning: record what would have been refused, and let it happen. */
static int learn_access(const struct sb_fs_paths *fp, unsigned flags)
{
	if (!(flags & J_WRITE) && importlib_look())
		return sb_learn_lookup(fp->canon);
	return sb_learn_file(fp->canon, (flags & J_WRITE) != 0);
}

/* Learning, an access the verdict allowed: a listing that passes,
 * filtered, because the directory leads to an exposure (the script's own
 * directory, for one) is recorded all the same. The kernel layer lists it
 * with Landlock's READ_DIR, which only a rule gives (learned as
 * expose-list=, its names). */
static int learn_filtered_listing(const struct sb_fs_paths *fp,
				  unsigned flags,
				  const struct sb_fs_decision *d)
{
	if (sb_g.learning && d->verdict == SB_FS_NOT_EXPOSED &&
	    (flags & J_LISTING) && (flags & J_ANCESTOR) &&
	    !(flags & J_WRITE) && leads_to_exposure(fp->canon))
		return learn_access(fp, flags);
	return 0;
}

static int raise_errno(PyObject *arg, const char *path);

static int judge_located(const char *spelled, const struct sb_fs_paths *fp,
			 unsigned flags)
{
	struct sb_fs_decision d;

	if (verdict(spelled, fp, flags, &d) == SB_FS_ALLOW)
		return learn_filtered_listing(fp, flags, &d);
	if (sb_g.learning)
		return learn_access(fp, flags);
	if (made_absent) {
		errno = ENOENT;
		return raise_errno(NULL, spelled);
	}
	return refuse(&d, spelled, fp->abs, (flags & J_WRITE) != 0);
}

/* A symlink met on the way to an exposure (Debian's /lib -> usr/lib):
 * the program reaches its target through it anyway, so its own metadata
 * (lstat, readlink) is no secret. Out of line: the hot path never needs
 * the second buffer. */
static __attribute__((noinline)) bool link_on_the_way(const char *path,
						       int dir_fd,
						       unsigned flags)
{
	struct sb_fs_paths target;
	struct sb_fs_decision d;

	return locate(path, dir_fd, NULL, true, &target) == 0 &&
	       verdict(path, &target, flags, &d) == SB_FS_ALLOW;
}

/* A dir_fd that is closed or not a directory: the call would fail with
 * EBADF or ENOTDIR and touch nothing. errno is set. */
static bool not_a_dir_fd(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return true;
	if (S_ISDIR(st.st_mode))
		return false;
	errno = ENOTDIR;
	return true;
}

/* The OSError the call itself raises for errno, naming the path argument
 * 'arg' as given (str or bytes), else 'path'; -1. */
static int raise_errno(PyObject *arg, const char *path)
{
	int e = errno;
	PyObject *name = arg ? arg : py.PyUnicode_DecodeFSDefault(path);

	if (name) {
		errno = e;
		py.PyErr_SetFromErrnoWithFilenameObject(
			PY_EXC(PyExc_OSError), name);
		if (!arg)
			py.Py_DecRef(name);
	}
	return -1;
}

/* A write the rules refuse, in a tree they let the program read, that the
 * kernel would refuse by the name before any permission is asked (it
 * looks the name up first): an entry that is not there (EX: ENOENT,
 * ENOTDIR), or one that is there for a call that makes it (J_NEW:
 * EEXIST; its directory missing: ENOENT). Plain CPython raises
 * FileNotFoundError or FileExistsError then, which code counts on
 * (test.support.unlink, `except FileExistsError` around os.mkdir); it is
 * raised as the call would raise it. Nothing is revealed (the tree is
 * readable) and nothing happens. -1 with the exception set, 0 when the
 * refusal stands. */
static int lookup_first(const struct sb_fs_decision *d,
			const struct sb_fs_paths *fp, PyObject *arg,
			const char *path, unsigned flags)
{
	struct stat st;
	char dir[PATH_MAX], *slash;
	int r;

	if (d->verdict != SB_FS_READ_ONLY || !(flags & (J_EXISTING | J_NEW)))
		return 0;
	r = (flags & J_NOFOLLOW) ? lstat(fp->canon, &st)
				 : stat(fp->canon, &st);
	if (flags & J_NEW) {
		if (r == 0) {
			errno = EEXIST;
			return raise_errno(arg, path);
		}
		snprintf(dir, sizeof(dir), "%s", fp->canon);
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return 0;
		*slash = '\0';
		r = stat(dir, &st);
		if (r == 0 && !S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			r = -1;
		}
	}
	if (r == 0 || (errno != ENOENT && errno != ENOTDIR))
		return 0;
	return raise_errno(arg, path);
}

/* A path whose links loop (ELOOP) cannot be located: the call fails with
 * ELOOP, as CPython's own tests expect (pathlib's resolve of a loop). Said
 * so only where the path as written is one the rules allow: elsewhere the
 * loop is nobody's business and the refusal stands. Out of line: the hot
 * path never needs the second buffer. */
static __attribute__((noinline)) bool loop_allowed(const char *path,
						    const struct sb_fs_paths *fp,
						    unsigned flags)
{
	struct sb_fs_paths lex;
	struct sb_fs_decision d;

	if (fp->abs[0] != '/')
		return false;
	strcpy(lex.abs, fp->abs);
	strcpy(lex.canon, fp->abs);
	return verdict(path, &lex, flags, &d) == SB_FS_ALLOW;
}

/* 0 allowed, -1 refused (exception set). 'fp' may be NULL; 'arg' is the
 * path argument 'path' came from, when there is one. */
static int judge_named(const char *path, PyObject *arg, int dir_fd,
		       unsigned flags, struct sb_fs_paths *fp)
{
	struct sb_fs_paths local;
	struct sb_fs_decision d;
	bool absent;

	if (!fp)
		fp = &local;
	if (path[0] != '/' && dir_fd >= 0 && !sb_g.learning &&
	    not_a_dir_fd(dir_fd))
		return raise_errno(arg, path);
	errno = 0;
	if (locate(path, dir_fd, NULL, !(flags & J_NOFOLLOW), fp) < 0) {
		if (errno == ELOOP && !sb_g.learning &&
		    loop_allowed(path, fp, flags)) {
			errno = ELOOP;
			return raise_errno(arg, path);
		}
		return sb_g.learning ? 0 : refuse_not_exposed(path, path);
	}
	if (verdict(path, fp, flags, &d) == SB_FS_ALLOW)
		return learn_filtered_listing(fp, flags, &d);
	absent = made_absent;
	if (d.verdict == SB_FS_NOT_EXPOSED && !(flags & J_WRITE) &&
	    (flags & J_NOFOLLOW) && (flags & J_ANCESTOR) &&
	    link_on_the_way(path, dir_fd, flags))
		return 0;
	if (sb_g.learning)
		return learn_access(fp, flags);
	if (absent) {
		errno = ENOENT;
		return raise_errno(arg, path);
	}
	if (lookup_first(&d, fp, arg, path, flags) < 0)
		return -1;
	return refuse(&d, path, fp->abs, (flags & J_WRITE) != 0);
}

static int judge(const char *path, int dir_fd, unsigned flags,
		 struct sb_fs_paths *fp)
{
	return judge_named(path, NULL, dir_fd, flags, fp);
}

int sb_files_check(const char *path, int dir_fd, bool write)
{
	return judge(path, dir_fd, write ? J_WRITE : 0, NULL);
}

/* ---- argument helpers ---- */

static PyObject *arg_at(PyObject *args, PyObject *kwargs, Py_ssize_t i,
			const char *name)
{
	if (args && py.PyTuple_Size(args) > i)
		return py.PyTuple_GetItem(args, i);
	return name ? sb_kwarg(kwargs, name) : NULL;
}

/* A dir_fd value: -1 (the cwd) for None, absent or AT_FDCWD. */
static int fd_value(PyObject *o, int *fd)
{
	long v = -1;
	int r = sb_arg_int(o, &v);

	if (r < 0)
		return -1;
	if (r == 0 || v < 0)
		v = -1;
	/* a bogus descriptor cannot be located: refused */
	*fd = v > INT_MAX ? INT_MAX : (int)v;
	return 0;
}

/* After sb_arg_path() found no path: is it None, the cwd of a listing?
 * (An empty or too long path also lands here; the call fails on it.) */
static bool names_cwd(PyObject *o)
{
	return !o || py.PyObject_IsInstance(o, py.PyLong_Type) == 0;
}

/* A descriptor given where a path goes (os.fchmod, os.chmod(fd),
 * os.utime(fd), os.ftruncate, os.fchdir, os.listdir(fd), the xattr
 * calls): the file behind it, as /proc/self/fd names it, judged as its
 * path would be (weaknesses.md 10: a file opened for reading under
 * expose-ro=, or the standard library's own, had its mode and times
 * changed). 1 with its path in buf; 0 when it is no file of a tree (a
 * socket, a pipe, an anonymous inode, a memfd) or no descriptor (the
 * call fails on it); -1 refused (exception set) when /proc cannot say. */
static int fd_path(PyObject *o, char buf[PATH_MAX])
{
	bool unlinked;
	long fd;
	int r;

	if (sb_arg_int(o, &fd) != 1) {
		py.PyErr_Clear();
		return 0;
	}
	if (fd < 0 || fd > INT_MAX)
		return 0;
	r = sb_path_fd_file((int)fd, buf, &unlinked);
	if (r < 0 && (errno == ENOENT || errno == EBADF))
		return 0; /* no such descriptor: EBADF from the call */
	if (r < 0) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "Descriptor %ld is refused: the guard cannot tell which file it is (/proc/self/fd: %s).",
			 fd, strerror(errno));
		return sb_guard_raise(SB_EXC_PERMISSION, msg, NULL);
	}
	/* unlinked (O_TMPFILE, removed since): judged by the name it had */
	return r == 0 ? 1 : 0;
}

/* Judge the path argument 'o' (a descriptor by the file behind it: fd_path;
 * skipped when it is not a path: the call deals with it). */
static int judge_arg(PyObject *o, int dir_fd, unsigned flags,
		     struct sb_fs_paths *fp, bool *judged)
{
	char buf[PATH_MAX];
	int r;

	if (judged)
		*judged = false;
	r = o ? sb_arg_path(o, buf) : 0;
	if (r == 0 && o && py.PyObject_IsInstance(o, py.PyLong_Type) == 1) {
		r = fd_path(o, buf);
		if (r <= 0)
			return r;
		/* the descriptor is there whatever its name says now */
		flags &= ~(unsigned)(J_EXISTING | J_NEW | J_NONE_IS_CWD);
		if ((flags & J_LISTING) && listing_filtered)
			flags |= J_ANCESTOR;
		if (judged)
			*judged = true;
		return judge_named(buf, NULL, -1, flags, fp);
	}
	py.PyErr_Clear();
	if (r == 0 && (flags & J_NONE_IS_CWD) && names_cwd(o)) {
		strcpy(buf, ".");
		r = 1;
	}
	if (r <= 0)
		return r;
	if ((flags & J_LISTING) && listing_filtered)
		flags |= J_ANCESTOR;
	if (judged)
		*judged = true;
	return judge_named(buf, o, dir_fd, flags, fp);
}

/* ---- events ---- */

static bool mode_writes(PyObject *mode)
{
	const char *m;

	if (!mode || py.PyObject_IsInstance(mode, py.PyUnicode_Type) != 1)
		return false;
	m = py.PyUnicode_AsUTF8AndSize(mode, NULL);
	if (!m) {
		py.PyErr_Clear();
		return true; /* cannot tell: assume the worst */
	}
	return strpbrk(m, "wax+") != NULL;
}

static bool flags_write(long flags)
{
	return (flags & (O_WRONLY | O_RDWR | O_APPEND | O_CREAT | O_TRUNC)) ||
	       (flags & O_TMPFILE) == O_TMPFILE;
}

/* A path-like object of an event raised after the call read it
 * (io.FileIO's "open") or before it reads it (sqlite3.connect on 3.11 and
 * later): its __fspath__ ran, or will run, once for the call and once for
 * the judgment, and may answer two paths (FileIO read a file outside the
 * rules). Only os.DirEntry's, which is C and answers its one path, is
 * read here; any other is refused (builtins.open, os.open and the
 * wrappers make it a str first: they never get here with one). */
static int refuse_unpinned(PyObject *o, const char *call)
{
	PyObject *type;
	int plain, r;

	if (!o || o == py._Py_NoneStruct)
		return 0;
	plain = py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1 ||
		py.PyObject_IsInstance(o, py.PyBytes_Type) == 1 ||
		py.PyObject_IsInstance(o, py.PyLong_Type) == 1 ||
		py.PyObject_CheckBuffer(o);
	py.PyErr_Clear();
	if (plain)
		return 0;
	type = py.PyObject_Type(o);
	if (!type)
		return -1;
	r = type != sb_g.files.direntry_type &&
	    py.PyObject_HasAttrString(type, "__fspath__");
	py.Py_DecRef(type);
	py.PyErr_Clear();
	if (!r)
		return 0; /* not a path: the call raises its own error */
	{
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "A path-like object given to %s is refused: the guard cannot tell which path the call used (its __fspath__ runs again); pass os.fspath() of it.",
			 call);
		return sb_guard_raise(SB_EXC_PERMISSION, msg, NULL);
	}
}

static bool existing_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "open" (path, mode, flags): builtins.open, io.FileIO, os.open. */
static int on_open(PyObject *args)
{
	PyObject *path, *mode, *flags;
	char buf[PATH_MAX];
	long fl = 0;
	int r;

	if (py.PyTuple_Size(args) < 3)
		return 0;
	path = py.PyTuple_GetItem(args, 0);
	if (open_judged && path == open_judged) {
		open_judged = NULL;
		return 0;
	}
	if (refuse_unpinned(path, "io.FileIO") < 0)
		return -1;
	r = sb_arg_path(path, buf);
	if (r <= 0)
		return r;
	mode = py.PyTuple_GetItem(args, 1);
	flags = py.PyTuple_GetItem(args, 2);
	if (sb_arg_int(flags, &fl) < 0)
		return -1;
	/* a directory opened to write fails with EISDIR and writes nothing:
	 * tempfile.NamedTemporaryFile(dir=d) names d to io.open, whose opener
	 * makes the real file (judged at its own os.open). So a directory is
	 * judged as looked into, unless O_TMPFILE makes a file in it (or
	 * O_PATH, which ignores the write flags, asks for a handle on it) */
	if ((mode_writes(mode) || flags_write(fl)) &&
	    (fl & O_TMPFILE) != O_TMPFILE && !(fl & O_PATH) &&
	    existing_dir(buf))
		return judge(buf, -1, J_ANCESTOR, NULL);
	return judge(buf, -1,
		     (mode_writes(mode) || flags_write(fl) ? J_WRITE : 0) |
			     ((fl & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)
				      ? J_NEW
				      : 0) |
			     ((fl & O_TMPFILE) == O_TMPFILE ? J_TMPFILE : 0),
		     NULL);
}

struct path_spec {
	signed char path;   /* index of the path argument, -1: none */
	signed char dir_fd; /* index of its dir_fd, -1: none */
	unsigned char flags;
};

enum special { SP_NONE, SP_SYMLINK, SP_SQLITE, SP_SQLITE_HANDLE,
	       SP_SQLITE_EXTENSION, SP_SQLITE_LOAD, SP_PUTENV };

struct event_spec {
	const char *name;
	struct path_spec p[2];
	enum special special;
};

#define RD 0
#define WR J_WRITE
#define NF J_NOFOLLOW
#define EX J_EXISTING
#define NO { -1, -1, 0 }
#define EV(name, ...) { name, { __VA_ARGS__ }, SP_NONE }

/* Intents (py-sandboxes(5), expose-ro= and expose-rw=). Calls that act on a
 * final symlink itself (remove, rename, rmdir, the new name of a link) do not
 * follow it; the others do. The source of a hard link needs write: a link to a
 * read-only file, made in a writable tree, would make the file writable.
 * EX: a missing entry fails the call before the rules do, J_NEW: an
 * existing one (lookup_first). */
static const struct event_spec events[] = {
	EV("os.listdir", { 0, -1, RD | J_NONE_IS_CWD | J_LISTING }, NO),
	EV("os.scandir", { 0, -1, RD | J_NONE_IS_CWD | J_LISTING }, NO),
	EV("os.chdir", { 0, -1, RD | J_FORGET }, NO),
	EV("os.mkdir", { 0, 2, WR | NF | J_NEW }, NO),
	EV("os.rmdir", { 0, 1, WR | NF | J_FORGET | EX }, NO),
	EV("os.remove", { 0, 1, WR | NF | J_FORGET | EX }, NO),
	EV("os.rename", { 0, 2, WR | NF | J_FORGET }, { 1, 3, WR | NF }),
	EV("os.link", { 0, 2, WR }, { 1, 3, WR | NF }),
	{ "os.symlink", { { 1, 2, WR | NF | J_FORGET }, NO }, SP_SYMLINK },
	EV("os.chmod", { 0, 2, WR | EX }, NO),
	EV("os.chown", { 0, 3, WR | EX }, NO),
	EV("os.utime", { 0, 3, WR | EX }, NO),
	EV("os.truncate", { 0, -1, WR | EX }, NO),
	EV("os.chflags", { 0, -1, WR }, NO),
	EV("os.setxattr", { 0, -1, WR }, NO),
	EV("os.removexattr", { 0, -1, WR }, NO),
	EV("os.getxattr", { 0, -1, RD }, NO),
	EV("os.listxattr", { 0, -1, RD | J_NONE_IS_CWD }, NO),
	EV("shutil.copyfile", { 0, -1, RD }, { 1, -1, WR }),
	EV("shutil.copymode", { 0, -1, RD }, { 1, -1, WR }),
	EV("shutil.copystat", { 0, -1, RD }, { 1, -1, WR }),
	EV("shutil.copytree", { 0, -1, RD }, { 1, -1, WR }),
	EV("shutil.move", { 0, -1, WR | NF }, { 1, -1, WR }),
	EV("shutil.rmtree", { 0, 1, WR | NF }, NO),
	EV("shutil.chown", { 0, -1, WR }, NO),
	/* base_name is a prefix, not a file: the archive (base_name plus
	 * the format's suffix) is judged at its open */
	EV("shutil.make_archive", { 2, -1, RD }, NO),
	EV("shutil.unpack_archive", { 0, -1, RD },
	   { 1, -1, WR | J_NONE_IS_CWD }),
	EV("tempfile.mkstemp", { 0, -1, WR | NF }, NO),
	EV("tempfile.mkdtemp", { 0, -1, WR | NF }, NO),
	/* glob.glob and Path.glob are not judged at their events: they list
	 * through os.scandir, whose wrapper refuses and filters, so a refused
	 * root yields nothing, as a missing one does under python */
	{ "sqlite3.connect", { NO, NO }, SP_SQLITE },
	/* SQL that opens files (ATTACH, VACUUM INTO) and native code
	 * (load_extension): clibs.c */
	{ "sqlite3.connect/handle", { NO, NO }, SP_SQLITE_HANDLE },
	{ "sqlite3.enable_load_extension", { NO, NO }, SP_SQLITE_EXTENSION },
	{ "sqlite3.load_extension", { NO, NO }, SP_SQLITE_LOAD },
	/* $OPENSSL_CONF names files OpenSSL reads and loads: clibs.c */
	{ "os.putenv", { NO, NO }, SP_PUTENV },
};

static PyObject *tuple_at(PyObject *args, int i)
{
	if (i < 0 || py.PyTuple_Size(args) <= i)
		return NULL;
	return py.PyTuple_GetItem(args, i);
}

/* os.symlink: the target, relative to the link's real directory, must be
 * exposed; the link's own location was judged (write) into 'link'. */
static int judge_symlink_target(PyObject *args, const struct sb_fs_paths *link)
{
	char target[PATH_MAX], dir[PATH_MAX];
	struct sb_fs_paths fp;
	char *slash;
	int r = sb_arg_path(tuple_at(args, 0), target);

	if (r <= 0)
		return r;
	strcpy(dir, link->canon);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0'; /* "" for the root */
	if (locate(target, -1, dir, true, &fp) < 0)
		return refuse_not_exposed(target, target);
	return judge_located(target, &fp, RD);
}

static int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool parent_is_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash)
		return true; /* the cwd */
	if ((size_t)(slash - path) >= sizeof(dir))
		return true;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	return stat(dir[0] ? dir : "/", &st) == 0 && S_ISDIR(st.st_mode);
}

/* Decode the part of a SQLite URI after "file:" and its authority into
 * 'out' as sqlite3ParseUri does (sqlite3.c, 3.8 to 3.47): the path, then
 * each query parameter as a name and a value, each ended by a NUL, the
 * list by an empty name. %XX is decoded everywhere (in names too: an
 * encoded '&' or '=' is a plain character), %00 ends the path, name or
 * value it is in, an empty name drops its parameter, '#' ends the URI.
 * false when 'out' is too small. */
static bool sqlite_uri_decode(const char *in, char *out, size_t size)
{
	size_t o = 0;
	int state = 0; /* 0: the path, 1: a name, 2: a value */
	char c;

	while ((c = *in) && c != '#') {
		int h, l;

		in++;
		if (o + 3 >= size)
			return false;
		if (c == '%' && (h = hex_digit(in[0])) >= 0 &&
		    (l = hex_digit(in[1])) >= 0) {
			in += 2;
			if (h == 0 && l == 0) {
				while ((c = *in) && c != '#' &&
				       (state != 0 || c != '?') &&
				       (state != 1 || (c != '=' && c != '&')) &&
				       (state != 2 || c != '&'))
					in++;
				continue;
			}
			c = (char)(h * 16 + l);
		} else if (state == 1 && (c == '&' || c == '=')) {
			if (out[o - 1] == '\0') { /* an empty name */
				while (*in && *in != '#' && in[-1] != '&')
					in++;
				continue;
			}
			if (c == '&')
				out[o++] = '\0'; /* a name without a value */
			else
				state = 2;
			c = '\0';
		} else if ((state == 0 && c == '?') ||
			   (state == 2 && c == '&')) {
			c = '\0';
			state = 1;
		}
		out[o++] = c;
	}
	if (o + 4 >= size)
		return false;
	if (state == 1)
		out[o++] = '\0';
	memset(out + o, 0, 4);
	return true;
}

/* Is the database at 'path' in WAL mode (its header's read and write
 * versions 2)? A FIFO or a device is not read: it is no database. */
static bool sqlite_is_wal(const char *path)
{
	unsigned char h[20];
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	bool wal = false;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h))
		wal = h[18] == 2 || h[19] == 2;
	close(fd);
	return wal;
}

/* A URI boolean SQLite reads as true (sqlite3GetBoolean): only the plain
 * spellings; any other counts as false, which judges more. */
static bool sqlite_uri_true(const char *v)
{
	return strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 ||
	       strcasecmp(v, "yes") == 0 || strcasecmp(v, "on") == 0;
}

/* The VFSes of SQLite's unix build (Debian's, 3.8 to 3.47): a name beside
 * them would be one an extension registered, which opens what it likes. */
static bool sqlite_vfs_known(const char *vfs)
{
	static const char *const known[] = { "",	    "unix",
					     "unix-none",   "unix-excl",
					     "unix-dotfile" };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(known); i++)
		if (strcmp(vfs, known[i]) == 0)
			return true;
	return false;
}

/* The database file 'db' SQLite opens with URI mode 'mode' ("rwc" for a
 * plain name) and VFS 'vfs', and the files it makes beside it by itself,
 * each judged as a write: a database it may write gets its rollback
 * journal ("-journal"), write-ahead log ("-wal") and the log's shared
 * index ("-shm") created there at its first write or change of journal
 * mode. A database in WAL mode opened read-only (mode=ro) gets its -wal
 * and -shm created, and the index written, at its first read: they need
 * the write right too, or immutable=1 (which reads the file alone). The
 * unix-dotfile VFS makes the directory "<db>.lock" at every lock, a
 * read's too. SQLite names them after the database's real path (it
 * resolves its links): so are they judged. */
static int judge_sqlite_file(const char *db, const char *mode,
			     const char *vfs, bool immutable)
{
	static const char *const siblings[] = { "-journal", "-wal", "-shm" };
	bool write = strcmp(mode, "ro") != 0;
	struct sb_fs_paths fp;
	char sib[PATH_MAX];
	size_t i, first = 0, n = 0;
	int len;

	if (!sqlite_vfs_known(vfs)) {
		char msg[PATH_MAX + 512];

		snprintf(msg, sizeof(msg),
			 "SQLite VFS '%.256s' of database '%.4096s' is not one "
			 "of SQLite's own: the file guard cannot judge the "
			 "files it opens",
			 vfs, db);
		return sb_guard_raise(SB_EXC_PERMISSION, msg, NULL);
	}
	fp.canon[0] = '\0';
	if (judge(db, -1, write ? J_WRITE : 0, &fp) < 0)
		return -1;
	if (fp.canon[0] != '/')
		return 0; /* learning, of a path it could not locate */
	if (write)
		n = SB_ARRAY_LEN(siblings);
	else if (!immutable && sqlite_is_wal(fp.canon)) {
		first = 1;
		n = SB_ARRAY_LEN(siblings);
	}
	for (i = first; i < n + (strcmp(vfs, "unix-dotfile") == 0); i++) {
		char why[PATH_MAX + 256];
		int r;

		len = snprintf(sib, sizeof(sib), "%s%s", fp.canon,
			       i < n ? siblings[i] : ".lock");
		if (len < 0 || (size_t)len >= sizeof(sib))
			return refuse_not_exposed(db, db);
		snprintf(why, sizeof(why), "%s '%.4096s'",
			 i == n ? "the unix-dotfile VFS locks by making a "
				  "directory beside database"
			 : write ? "SQLite makes its journal, write-ahead log "
				   "and index beside database"
				 : "SQLite makes and writes the write-ahead "
				   "log and index of a WAL database opened "
				   "read-only (immutable=1 reads it alone), "
				   "beside database",
			 fp.abs);
		refusal_context = why;
		r = judge(sib, -1, J_WRITE, NULL);
		refusal_context = NULL;
		if (r < 0)
			return -1;
	}
	return 0;
}

/* A database name SQLite opens: sqlite3.connect's, an ATTACH's or a
 * VACUUM INTO's (clibs.c). With uri=True (which the event does not tell),
 * or in an ATTACH when SQLite was built with SQLITE_USE_URI (Debian's
 * is), a "file:" name is a URI: both readings are judged. The URI is read
 * as SQLite decodes it: the last "vfs" and "mode" win (a mode can only
 * narrow what came before), and the file each "modeof" names is stat()ed
 * by the unix VFS to copy its mode and owner: judged as a read. Any other
 * parameter opens no file. */
int sb_files_check_sqlite(const char *db)
{
	char uri[2 * PATH_MAX];
	const char *s, *p, *vfs = "", *mode = "rwc";
	bool immutable = false;
	int seen_immutable = 0;

	if (!db[0] || strcmp(db, ":memory:") == 0)
		return 0; /* a private temporary or in-memory database */
	if (strncmp(db, "file:", 5) != 0)
		return judge_sqlite_file(db, mode, vfs, false);
	/* read as a plain name, it can only be opened in a directory that
	 * exists ("file:data" is rarely one) */
	if (parent_is_dir(db) && judge_sqlite_file(db, mode, vfs, false) < 0)
		return -1;
	s = db + 5;
	if (strncmp(s, "//", 2) == 0) { /* authority: empty or localhost */
		s += 2;
		s += strcspn(s, "/");
	}
	if (!sqlite_uri_decode(s, uri, sizeof(uri)))
		return refuse_not_exposed(db, db);
	for (p = uri + strlen(uri) + 1; *p; ) {
		const char *v = p + strlen(p) + 1;

		if (strcmp(p, "vfs") == 0)
			vfs = v;
		else if (strcmp(p, "mode") == 0)
			mode = v;
		else if (strcmp(p, "immutable") == 0 && !seen_immutable++)
			immutable = sqlite_uri_true(v); /* its first one */
		else if (strcmp(p, "modeof") == 0 && judge(v, -1, RD, NULL) < 0)
			return -1;
		p = v + strlen(v) + 1;
	}
	if (strcmp(mode, "memory") == 0 || strcmp(vfs, "memdb") == 0)
		return 0; /* no file at all */
	if (!uri[0] || strcmp(uri, ":memory:") == 0)
		return 0; /* a private temporary or in-memory database */
	return judge_sqlite_file(uri, mode, vfs, immutable);
}

/* sqlite3.connect (database): SQLite opens the file in C, so this event is
 * the only door. */
static int judge_sqlite(PyObject *args)
{
	char db[PATH_MAX];
	int r = refuse_unpinned(tuple_at(args, 0), "sqlite3.connect");

	if (r < 0)
		return -1;
	r = sb_arg_path(tuple_at(args, 0), db);
	return r <= 0 ? r : sb_files_check_sqlite(db);
}

static const struct event_spec *find_event(const char *event)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(events); i++)
		if (strcmp(events[i].name, event) == 0)
			return &events[i];
	return NULL;
}

static bool maybe_ours(const char *event)
{
	switch (event[0]) {
	case 'o':
		return sb_str_starts(event, "os.");
	case 's':
		return sb_str_starts(event, "shutil.") ||
		       sb_str_starts(event, "sqlite3.");
	case 't':
		return sb_str_starts(event, "tempfile.");
	case 'g':
		return sb_str_starts(event, "glob.");
	case 'p':
		return sb_str_starts(event, "pathlib.");
	default:
		return false;
	}
}

int sb_files_event(const char *event, PyObject *args)
{
	const struct event_spec *e;
	struct sb_fs_paths fp;
	bool judged;
	int i, fd;

	if (event[0] == 'o' && strcmp(event, "open") == 0)
		return on_open(args);
	if (!maybe_ours(event) || !(e = find_event(event)))
		return 0;
	switch (e->special) {
	case SP_SQLITE:
		return judge_sqlite(args);
	case SP_SQLITE_HANDLE:
		return sb_clibs_sqlite_opened(tuple_at(args, 0));
	case SP_SQLITE_EXTENSION:
		return sb_clibs_sqlite_extension(tuple_at(args, 1));
	case SP_SQLITE_LOAD:
		return sb_clibs_sqlite_load();
	case SP_PUTENV:
		return sb_clibs_putenv(tuple_at(args, 0), tuple_at(args, 1));
	default:
		break;
	}
	if (e->p[0].flags & J_FORGET)
		sb_dir_cache_forget(&sb_g.files.dirs);
	for (i = 0; i < 2 && e->p[i].path >= 0; i++) {
		PyObject *o = tuple_at(args, e->p[i].path);

		if (!o && !(e->p[i].flags & J_NONE_IS_CWD))
			continue;
		if (fd_value(tuple_at(args, e->p[i].dir_fd), &fd) < 0)
			return -1;
		if (judge_arg(o, fd, e->p[i].flags, &fp, &judged) < 0)
			return -1;
		if (e->special == SP_SYMLINK && judged &&
		    judge_symlink_target(args, &fp) < 0)
			return -1;
	}
	return 0;
}

/* ---- wrappers ---- */

static int kw_dir_fd(PyObject *kwargs, int *fd)
{
	return fd_value(sb_kwarg(kwargs, "dir_fd"), fd);
}

static bool kw_follows(PyObject *kwargs)
{
	PyObject *o = sb_kwarg(kwargs, "follow_symlinks");

	return !o || py.PyObject_IsTrue(o) != 0;
}

/* os.stat(path) of a name that is no symlink, the common case: one
 * lstat(2), whose result is the stat's (both describe the one inode the
 * name holds), judged by the cached directory and the name as it is, with
 * no readlink(2) of the name: a stat costs the program one system call, as
 * under python. NULL with no exception set when that does not apply (a
 * link, an error, keywords, a path not allowed): the general way then
 * judges, refuses or learns, and the call raises its own error. A refused
 * path is looked at first and what was seen thrown away: stat reveals
 * nothing to the program before the verdict. */
static PyObject *stat_entry(PyObject *args, PyObject *kwargs)
{
	struct sb_fs_paths fp;
	struct sb_fs_decision d;
	char buf[PATH_MAX];
	PyObject *o, *res, *mode;
	long m;

	if (!sb_g.files.lstat || (kwargs && py.PyDict_Size(kwargs) != 0) ||
	    !args || py.PyTuple_Size(args) != 1)
		return NULL;
	o = py.PyTuple_GetItem(args, 0);
	if (!o || (py.PyObject_IsInstance(o, py.PyUnicode_Type) != 1 &&
		   py.PyObject_IsInstance(o, py.PyBytes_Type) != 1) ||
	    sb_arg_path(o, buf) != 1) {
		py.PyErr_Clear();
		return NULL;
	}
	res = py.PyObject_Call(sb_g.files.lstat, args, NULL);
	if (!res) {
		py.PyErr_Clear();
		return NULL;
	}
	mode = py.PyTuple_GetItem(res, 0);
	m = mode ? py.PyLong_AsLong(mode) : -1;
	if (m == -1 || S_ISLNK((mode_t)m) ||
	    sb_path_locate_entry(&sb_g.files.dirs, buf, &fp) < 0 ||
	    verdict(buf, &fp, RD | J_ANCESTOR, &d) != SB_FS_ALLOW) {
		py.PyErr_Clear();
		py.Py_DecRef(res);
		return NULL;
	}
	return res;
}

/* os.stat(path, *, dir_fd=None, follow_symlinks=True) */
static PyObject *stat_call(struct sb_wrap *w, PyObject *args, PyObject *kwargs)
{
	PyObject *res = stat_entry(args, kwargs);
	int fd;

	if (res)
		return res;
	if (kw_dir_fd(kwargs, &fd) < 0 ||
	    judge_arg(arg_at(args, kwargs, 0, "path"), fd,
		      RD | J_ANCESTOR | (kw_follows(kwargs) ? 0 : NF), NULL,
		      NULL) < 0)
		return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

/* os.lstat(path, *, dir_fd=None) */
static PyObject *lstat_call(struct sb_wrap *w, PyObject *args, PyObject *kwargs)
{
	int fd;

	if (kw_dir_fd(kwargs, &fd) < 0 ||
	    judge_arg(arg_at(args, kwargs, 0, "path"), fd,
		      RD | NF | J_ANCESTOR, NULL, NULL) < 0)
		return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

/* os.statvfs(path) and os.pathconf(path, name): no audit event, yet
 * what they answer for a path (or their FileNotFoundError) tells what
 * exists outside the rules; judged as stat() is. A descriptor passes
 * (entry 10). */
static PyObject *path_query_call(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	if (judge_arg(arg_at(args, kwargs, 0, "path"), -1, RD | J_ANCESTOR,
		      NULL, NULL) < 0)
		return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

/* os.access(path, mode, *, dir_fd=None, effective_ids=False,
 * follow_symlinks=True): False rather than an error, so that it is no
 * oracle for what exists outside. */
static PyObject *access_call(struct sb_wrap *w, PyObject *args,
			     PyObject *kwargs)
{
	PyObject *mode = arg_at(args, kwargs, 1, "mode");
	unsigned flags = RD | J_ANCESTOR;
	long m = 0;
	int fd;

	if (sb_arg_int(mode, &m) < 0)
		py.PyErr_Clear(); /* the original raises its TypeError */
	if (m & W_OK)
		flags = WR;
	if (!kw_follows(kwargs))
		flags |= NF;
	if (kw_dir_fd(kwargs, &fd) < 0)
		return NULL;
	if (judge_arg(arg_at(args, kwargs, 0, "path"), fd, flags, NULL,
		      NULL) < 0) {
		py.PyErr_Clear();
		py.Py_IncRef(sb_g.files.py_false);
		return sb_g.files.py_false;
	}
	return sb_wrap_call_original(w, args, kwargs);
}

/* os.readlink(path, *, dir_fd=None): the link must be readable, and its
 * target exposed: the program learns no target outside its view. */
static PyObject *readlink_call(struct sb_wrap *w, PyObject *args,
			       PyObject *kwargs)
{
	char target[PATH_MAX], dir[PATH_MAX];
	struct sb_fs_paths link, fp;
	PyObject *res;
	char *slash;
	bool judged;
	int fd, r;

	if (kw_dir_fd(kwargs, &fd) < 0 ||
	    judge_arg(arg_at(args, kwargs, 0, "path"), fd, RD | NF | J_ANCESTOR,
		      &link, &judged) < 0)
		return NULL;
	res = sb_wrap_call_original(w, args, kwargs);
	if (!res || !judged)
		return res;
	r = sb_arg_path(res, target);
	if (r <= 0) {
		if (r == 0)
			return res;
		py.Py_DecRef(res);
		return NULL;
	}
	strcpy(dir, link.canon);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	/* the refusal names the link, never the target it would disclose;
	 * a target that loops leads nowhere and is judged as written */
	fp.abs[0] = '\0';
	if (locate(target, -1, dir, true, &fp) < 0 && fp.abs[0] == '/')
		strcpy(fp.canon, fp.abs);
	else if (fp.abs[0] != '/')
		fp.canon[0] = '\0';
	if (fp.canon[0] != '/' ||
	    judge_located(target, &fp, RD | J_ANCESTOR) < 0) {
		char msg[PATH_MAX + 80];

		py.PyErr_Clear();
		snprintf(msg, sizeof(msg),
			 "Access to the target of '%s' must be accepted by a "
			 "rule.",
			 link.abs);
		r = sb_guard_raise(SB_EXC_FILE_NOT_FOUND, msg, link.abs);
	}
	if (r < 0) {
		py.Py_DecRef(res);
		return NULL;
	}
	return res;
}

/* os.rename, os.replace, os.symlink, os.remove, os.unlink, os.rmdir,
 * os.chdir, os.fchdir: their events judge them; here the directory cache
 * (and the working directory it keeps) learns when they end. */
static PyObject *changing_call(struct sb_wrap *w, PyObject *args,
			       PyObject *kwargs)
{
	PyObject *res;

	sb_dir_cache_forget(&sb_g.files.dirs);
	sb_g.files.dirs.changing++;
	res = sb_wrap_call_original(w, args, kwargs);
	sb_g.files.dirs.changing--;
	sb_dir_cache_forget(&sb_g.files.dirs);
	return res;
}

/* os.chroot(path) */
static PyObject *chroot_call(struct sb_wrap *w, PyObject *args,
			     PyObject *kwargs)
{
	if (judge_arg(arg_at(args, kwargs, 0, "path"), -1, RD, NULL, NULL) < 0)
		return NULL;
	return changing_call(w, args, kwargs);
}

/* os.mkfifo(path, mode=0o666, *, dir_fd=None), os.mknod(path, mode=0o600,
 * device=0, *, dir_fd=None): no audit event; they create a node. */
static PyObject *mknode_call(struct sb_wrap *w, PyObject *args,
			     PyObject *kwargs)
{
	int fd;

	if (kw_dir_fd(kwargs, &fd) < 0 ||
	    judge_arg(arg_at(args, kwargs, 0, "path"), fd, WR | NF | J_NEW,
		      NULL, NULL) < 0)
		return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

/* os.open(path, flags, mode=0o777, *, dir_fd=None): the "open" event has
 * no dir_fd, so a path relative to one is judged here. */
static PyObject *open_call(struct sb_wrap *w, PyObject *args, PyObject *kwargs)
{
	PyObject *path = arg_at(args, kwargs, 0, "path");
	PyObject *flags = arg_at(args, kwargs, 1, "flags");
	PyObject *dfd = sb_kwarg(kwargs, "dir_fd");
	PyObject *saved, *res;
	char buf[PATH_MAX];
	long fl = 0;
	int fd, r;

	if (!dfd || !path || !flags)
		return sb_wrap_call_original(w, args, kwargs);
	if (fd_value(dfd, &fd) < 0)
		return NULL;
	r = sb_arg_int(flags, &fl);
	if (r < 0)
		return NULL;
	if (fd < 0 || r == 0)
		return sb_wrap_call_original(w, args, kwargs);
	r = sb_arg_path(path, buf);
	if (r < 0)
		return NULL;
	if (r == 0 || buf[0] == '/')
		return sb_wrap_call_original(w, args, kwargs);
	if (judge_named(buf, path, fd, flags_write(fl) ? WR : RD, NULL) < 0)
		return NULL;
	saved = open_judged;
	open_judged = path;
	res = sb_wrap_call_original(w, args, kwargs);
	open_judged = saved;
	return res;
}

/* The directory a listing names: None is the cwd, an int a descriptor.
 * 0 with fp set, -1 refused. */
static int listing_dir(PyObject *path, struct sb_fs_paths *fp)
{
	char buf[PATH_MAX];
	long fd;
	int r = path ? sb_arg_int(path, &fd) : 0;

	if (r < 0)
		return -1;
	if (r == 1) {
		if (fd < 0 || fd > INT_MAX ||
		    sb_path_fd_dir((int)fd, fp->canon) < 0) {
			snprintf(buf, sizeof(buf), "<fd %ld>", fd);
			return refuse_not_exposed(buf, NULL);
		}
		strcpy(fp->abs, fp->canon);
		return 0;
	}
	r = path ? sb_arg_path(path, buf) : 0;
	if (r < 0)
		return -1;
	if (r == 0)
		strcpy(buf, ".");
	if (locate(buf, -1, NULL, true, fp) < 0)
		return refuse_not_exposed(buf, buf);
	return 0;
}

/* Is an entry of a listed directory shown? When it is readable itself, or
 * when it is a directory on the way to an exposure. Ignored entries and
 * symlinks leading outside are dropped. */
static bool entry_shown(const struct sb_fs_paths *dir, const char *name)
{
	const struct sb_expose *ex;
	struct sb_fs_paths e;
	struct sb_fs_decision d;
	const char *base = strcmp(dir->canon, "/") == 0 ? "" : dir->canon;

	if (sb_g.learning)
		return true; /* learning lets everything happen */
	if (strchr(name, '/') || sb_path_lexical(e.abs, PATH_MAX, dir->abs, name) < 0)
		return false;
	ex = sb_fs_find_expose(sb_g.policy, dir->canon);
	/* every descriptor of the process's own (verdict); getpid() only
	 * for a directory of /proc, not at every entry of every listing */
	if (!ex && strncmp(dir->canon, "/proc/", 6) == 0 &&
	    sb_path_own_fd_dir(dir->canon, getpid()))
		return true;
	/* expose-list= grants the names in it (ignore= still hides) */
	if (ex && ex->mode == SB_EXPOSE_LIST) {
		sb_fs_decide(sb_g.policy, e.abs, e.abs, NULL, false, &d);
		return d.verdict != SB_FS_IGNORED;
	}
	strcpy(e.canon, base);
	if (sb_path_resolve(e.canon, name, true, NULL) < 0) {
		/* a link that loops (l -> l) leads nowhere: it is shown as
		 * CPython shows it, judged where it sits (shutil.rmtree must
		 * see it to remove it) */
		strcpy(e.canon, base);
		if (sb_path_resolve(e.canon, name, false, NULL) < 0)
			return false;
	}
	return verdict(e.abs, &e, RD | J_ANCESTOR, &d) == SB_FS_ALLOW;
}

/* A new list holding the shown items of 'list' (names, or DirEntry
 * objects whose .name is taken). */
static PyObject *filter_list(PyObject *list, const struct sb_fs_paths *dir,
			     bool entries)
{
	Py_ssize_t i, n = py.PyList_Size(list);
	PyObject *out = py.PyList_New(0);
	char name[PATH_MAX];

	if (!out || n < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		PyObject *item = py.PyList_GetItem(list, i);
		PyObject *nm = entries ? py.PyObject_GetAttrString(item, "name")
				       : item;
		int r;

		if (!nm)
			goto fail;
		r = sb_arg_path(nm, name);
		if (entries)
			py.Py_DecRef(nm);
		if (r < 0)
			goto fail;
		if (r == 1 && entry_shown(dir, name) &&
		    py.PyList_Append(out, item) < 0)
			goto fail;
	}
	return out;
fail:
	py.Py_DecRef(out);
	return NULL;
}

/* Run the original listing with ancestors allowed by the event. */
static PyObject *listing_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs, struct sb_fs_paths *dir)
{
	PyObject *res;

	if (listing_dir(arg_at(args, kwargs, 0, "path"), dir) < 0)
		return NULL;
	listing_filtered++;
	res = sb_wrap_call_original(w, args, kwargs);
	listing_filtered--;
	return res;
}

/* os.listdir(path=None) */
static PyObject *listdir_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	struct sb_fs_paths dir;
	PyObject *res = listing_call(w, args, kwargs, &dir), *out;

	if (!res)
		return NULL;
	out = filter_list(res, &dir, false);
	py.Py_DecRef(res);
	return out;
}

/* The iterator stands in for ScandirIterator (the original cannot be built
 * from a list). Compiled at the first os.scandir() call, not at start-up:
 * most programs never list a directory, and compiling has a cost. */
static const char helpers_src[] =
	"class ScandirIterator:\n"
	"    __slots__ = ('_it', '_open')\n"
	"    def __init__(self, entries):\n"
	"        self._it = iter(entries)\n"
	"        self._open = True\n"
	"    def __iter__(self):\n"
	"        return self\n"
	"    def __next__(self):\n"
	"        try:\n"
	"            return next(self._it)\n"
	"        except StopIteration:\n"
	"            self._open = False\n"
	"            raise\n"
	"    def close(self):\n"
	"        self._it = iter(())\n"
	"        self._open = False\n"
	/* CPython's ScandirIterator warns when dropped open */
	"    def __del__(self, _warn=_warnings_warn):\n"
	"        if self._open:\n"
	"            self._open = False\n"
	"            _warn(f'unclosed scandir iterator {self!r}',\n"
	"                  ResourceWarning, 2, self)\n"
	"    def __enter__(self):\n"
	"        return self\n"
	"    def __exit__(self, *exc):\n"
	"        self.close()\n"
	"        return False\n"
	"def collect(it):\n"
	"    try:\n"
	"        return list(it)\n"
	"    finally:\n"
	"        it.close()\n";

static PyObject *take(PyObject *globals, const char *name)
{
	PyObject *o = py.PyDict_GetItemString(globals, name);

	if (o)
		py.Py_IncRef(o);
	return o;
}

static int make_helpers(void)
{
	PyObject *globals = py.PyDict_New(), *res = NULL, *name;

	if (!globals)
		return -1;
	/* the builtins and _warnings.warn taken at arming: the current
	 * frame's builtins are the program's (a function made with its own
	 * __builtins__ had its __import__ run by the import here, busy) */
	sb_guard_own_compile_enter();
	name = py.PyUnicode_FromString("posix");
	if (name && sb_g.files.helper_builtins && sb_g.files.warn_fn &&
	    py.PyDict_SetItemString(globals, "__name__", name) == 0 &&
	    py.PyDict_SetItemString(globals, "_warnings_warn",
				    sb_g.files.warn_fn) == 0 &&
	    py.PyDict_SetItemString(globals, "__builtins__",
				    sb_g.files.helper_builtins) == 0)
		res = py.PyRun_String(helpers_src, PY_FILE_INPUT, globals,
				      globals);
	sb_guard_own_compile_leave();
	py.Py_DecRef(name);
	if (res) {
		py.Py_DecRef(res);
		sb_g.files.collect_fn = take(globals, "collect");
		sb_g.files.scandir_class = take(globals, "ScandirIterator");
	}
	py.Py_DecRef(globals);
	if (!sb_g.files.scandir_class || !sb_g.files.collect_fn) {
		if (!py.PyErr_Occurred())
			py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
					   "the file guard's scandir iterator");
		return -1;
	}
	return 0;
}

/* os.scandir(path=None): the entries are collected and filtered, then
 * served by an iterator that has close() and the context protocol. */
static PyObject *scandir_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	struct sb_fs_paths dir;
	PyObject *it, *all, *kept, *res;

	if (!sb_g.files.scandir_class && make_helpers() < 0)
		return NULL;
	it = listing_call(w, args, kwargs, &dir);
	if (!it)
		return NULL;
	all = sb_guard_call1(sb_g.files.collect_fn, it);
	py.Py_DecRef(it);
	if (!all)
		return NULL;
	kept = filter_list(all, &dir, true);
	py.Py_DecRef(all);
	if (!kept)
		return NULL;
	res = sb_guard_call1(sb_g.files.scandir_class, kept);
	py.Py_DecRef(kept);
	return res;
}

static struct sb_wrap wraps[] = {
	{ .module = "posix", .attr = "stat", .also = "os", .call = stat_call },
	{ .module = "posix", .attr = "lstat", .also = "os",
	  .call = lstat_call },
	{ .module = "posix", .attr = "access", .also = "os",
	  .call = access_call },
	{ .module = "posix", .attr = "statvfs", .also = "os",
	  .call = path_query_call },
	{ .module = "posix", .attr = "pathconf", .also = "os",
	  .call = path_query_call },
	{ .module = "posix", .attr = "readlink", .also = "os",
	  .call = readlink_call },
	{ .module = "posix", .attr = "chroot", .also = "os",
	  .call = chroot_call },
	{ .module = "posix", .attr = "mkfifo", .also = "os",
	  .call = mknode_call },
	{ .module = "posix", .attr = "mknod", .also = "os",
	  .call = mknode_call },
	{ .module = "posix", .attr = "open", .also = "os", .call = open_call },
	{ .module = "posix", .attr = "listdir", .also = "os",
	  .call = listdir_call },
	{ .module = "posix", .attr = "scandir", .also = "os",
	  .call = scandir_call },
	{ .module = "posix", .attr = "rename", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "replace", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "symlink", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "remove", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "unlink", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "rmdir", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "chdir", .also = "os",
	  .call = changing_call },
	{ .module = "posix", .attr = "fchdir", .also = "os",
	  .call = changing_call },
};

/* ---- arming ---- */

/* Call a method of 'obj' with one argument (new reference or NULL). */
static PyObject *call_method1(PyObject *obj, const char *method,
			      PyObject *arg)
{
	PyObject *fn = py.PyObject_GetAttrString(obj, method), *res;

	if (!fn)
		return NULL;
	res = sb_guard_call1(fn, arg);
	py.Py_DecRef(fn);
	return res;
}

/* os.supports_dir_fd and its kin hold the original functions; code that
 * tests features with them (shutil.rmtree picks its descriptor-based walk
 * so) must find the wrappers there too. */
static int adopt(struct sb_wrap *w)
{
	static const char *const sets[] = {
		"supports_dir_fd", "supports_fd", "supports_follow_symlinks",
		"supports_effective_ids",
	};
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *os = mods ? py.PyDict_GetItemString(mods, "os") : NULL;
	size_t i;

	if (!os || !w->fn || !w->original)
		return 0;
	for (i = 0; i < SB_ARRAY_LEN(sets); i++) {
		PyObject *set = py.PyObject_GetAttrString(os, sets[i]);
		PyObject *has, *added;

		if (!set) {
			py.PyErr_Clear();
			continue;
		}
		has = call_method1(set, "__contains__", w->original);
		if (has && py.PyObject_IsTrue(has) == 1) {
			added = call_method1(set, "add", w->fn);
			py.Py_DecRef(added);
		}
		py.Py_DecRef(set);
		if (!has)
			return -1;
		py.Py_DecRef(has);
		if (py.PyErr_Occurred())
			return -1;
	}
	return 0;
}

/* False, for os.access(): bool() returns it. */
/* The two bools, and whether a bool used as a descriptor warns (3.13+). */
/* posix.DirEntry, taken before the program runs (the program may replace
 * the module's attribute, never the type of what os.scandir yields). */
static void find_direntry(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *posix = mods ? py.PyDict_GetItemString(mods, "posix") : NULL;

	sb_g.files.direntry_type =
		posix ? py.PyObject_GetAttrString(posix, "DirEntry") : NULL;
	py.PyErr_Clear();
}

/* What the scandir helpers need of builtins, taken before the program
 * runs into a dictionary of their own (see make_helpers). */
static void find_helper_builtins(void)
{
	/* __import__: _warnings.warn imports warnings through the frame's
	 * builtins when it is not loaded (the ResourceWarning of an unclosed
	 * iterator was lost with a KeyError) */
	static const char *const names[] = {
		"__build_class__", "iter", "next", "list", "StopIteration",
		"ResourceWarning", "__import__",
	};
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *b = mods ? py.PyDict_GetItemString(mods, "builtins") : NULL;
	PyObject *w = mods ? py.PyDict_GetItemString(mods, "_warnings") : NULL;
	PyObject *d = b ? py.PyModule_GetDict(b) : NULL;
	PyObject *own = d ? py.PyDict_New() : NULL;
	size_t i;

	for (i = 0; own && i < SB_ARRAY_LEN(names); i++) {
		PyObject *v = py.PyDict_GetItemString(d, names[i]);

		if (!v || py.PyDict_SetItemString(own, names[i], v) < 0) {
			py.Py_DecRef(own);
			own = NULL;
		}
	}
	sb_g.files.helper_builtins = own;
	sb_g.files.warn_fn = w ? py.PyObject_GetAttrString(w, "warn") : NULL;
	py.PyErr_Clear();
}

static int make_bools(void)
{
	PyObject *hex = py.PySys_GetObject("hexversion");
	long v = hex ? py.PyLong_AsLong(hex) : -1;

	if (v < 0)
		py.PyErr_Clear();
	sb_g.files.bool_fd_warns = v >= 0x030d0000;
	sb_g.files.py_false = py.PyBool_FromLong(0);
	sb_g.files.py_true = py.PyBool_FromLong(1);
	find_direntry();
	find_helper_builtins();
	return sb_g.files.py_false && sb_g.files.py_true ? 0 : -1;
}

static void expose_implicit(const char *path, const char *origin)
{
	char canon[PATH_MAX];
	struct stat st;

	if (!realpath(path, canon) || stat(canon, &st) < 0)
		return;
	sb_fs_add_implicit(sb_g.policy, canon, S_ISDIR(st.st_mode), origin);
}

static void expose_dir_of(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (strlen(path) >= sizeof(dir))
		return;
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	expose_implicit(dir, "<python>");
}

/* The directory of sys.executable and of every link on its way to the
 * real interpreter (a venv's bin/python3 -> /usr/bin/python3.11). */
static void expose_executable(void)
{
	char path[PATH_MAX], link[PATH_MAX], next[PATH_MAX];
	char *slash;
	ssize_t r;
	int n;

	if (sb_arg_path(py.PySys_GetObject("executable"), path) != 1) {
		py.PyErr_Clear();
		return;
	}
	for (n = 0; n <= SB_MAX_LINKS; n++) {
		expose_dir_of(path);
		r = readlink(path, link, sizeof(link) - 1);
		if (r < 0)
			break;
		link[r] = '\0';
		if (link[0] == '/') {
			strcpy(next, link);
		} else {
			slash = strrchr(path, '/');
			if (slash)
				slash[1] = '\0';
			else
				path[0] = '\0';
			if (snprintf(next, sizeof(next), "%s%s", path, link) >=
			    (int)sizeof(next))
				break;
		}
		strcpy(path, next);
	}
	if (realpath(path, next))
		expose_dir_of(next);
}

static bool sys_flag(const char *name)
{
	PyObject *flags = py.PySys_GetObject("flags");
	PyObject *v;
	bool on;

	if (!flags)
		return false;
	v = py.PyObject_GetAttrString(flags, name);
	if (!v) {
		py.PyErr_Clear();
		return false;
	}
	on = py.PyObject_IsTrue(v) == 1;
	py.Py_DecRef(v);
	return on;
}

/* sys.path entries at arming, within the interpreter's prefixes: where the
 * standard library and installed packages are. sys.path[0] (the script's
 * directory, '' for -c) is the program's: it needs a rule.
 * Learning: the interpreter's start-up imports (site looking for
 * sitecustomize) listed every entry before the guard armed, and importlib
 * reads a later import from that listing, so no listing of the program's
 * own entries would be seen: each is recorded as looked into here, which
 * learn_rules.c turns into expose-list= only when a module was then loaded
 * from it (a script in $HOME importing a module beside it). */
static void expose_sys_path(void)
{
	static const char *const prefixes[] = { "prefix", "base_prefix",
						"exec_prefix",
						"base_exec_prefix" };
	char pre[SB_ARRAY_LEN(prefixes)][PATH_MAX];
	char buf[PATH_MAX], canon[PATH_MAX];
	PyObject *list = py.PySys_GetObject("path");
	Py_ssize_t i, n, first;
	size_t k, np = 0;
	struct stat st;

	for (k = 0; k < SB_ARRAY_LEN(prefixes); k++)
		if (sb_arg_path(py.PySys_GetObject(prefixes[k]), buf) == 1 &&
		    realpath(buf, pre[np]))
			np++;
	py.PyErr_Clear();
	if (!list || (n = py.PyList_Size(list)) < 0) {
		py.PyErr_Clear();
		return;
	}
	/* -I and -P (3.11+) put no script directory first */
	first = sys_flag("isolated") || sys_flag("safe_path") ? 0 : 1;
	for (i = 0; i < n; i++) {
		if (sb_arg_path(py.PyList_GetItem(list, i), buf) != 1 ||
		    !realpath(*buf ? buf : ".", canon) || stat(canon, &st) < 0)
			continue;
		for (k = 0; k < np && i >= first; k++) {
			if (sb_path_under(canon, pre[k])) {
				sb_fs_add_implicit(sb_g.policy, canon,
						   S_ISDIR(st.st_mode),
						   "<python>");
				break;
			}
		}
		if (sb_g.learning && (i < first || k == np) &&
		    S_ISDIR(st.st_mode) && sb_learn_lookup(canon) < 0)
			return;
	}
	py.PyErr_Clear();
}

/* The script python runs (sys.argv[0] at arming, unless -c or -m): the
 * interpreter opens it once armed, and tracebacks read it again. The file
 * alone: its directory needs a rule like any other. */
static void expose_script(void)
{
	PyObject *argv = py.PySys_GetObject("argv");
	char buf[PATH_MAX], canon[PATH_MAX];
	struct stat st;

	if (!argv || py.PyList_Size(argv) < 1) {
		py.PyErr_Clear();
		return;
	}
	if (sb_arg_path(py.PyList_GetItem(argv, 0), buf) != 1) {
		py.PyErr_Clear();
		return;
	}
	if (strcmp(buf, "-c") == 0 || strcmp(buf, "-m") == 0 ||
	    !realpath(buf, canon) || stat(canon, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return;
	sb_fs_add_implicit(sb_g.policy, canon, false, "<python>");
}

/* A path-like argument (an object whose type has __fspath__) is made its
 * os.fspath() here, once: the judgment and the original then see the same
 * path. Handed on as it was, the original called __fspath__ again, which
 * could answer another path (os.stat of a judged file returned
 * /etc/shadow's). NULL (exception set) when __fspath__ raised. */
static PyObject *path_once(PyObject *o)
{
	PyObject *type, *fspath;
	int has, index;

	if (py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1 ||
	    py.PyObject_IsInstance(o, py.PyBytes_Type) == 1 ||
	    py.PyObject_IsInstance(o, py.PyLong_Type) == 1 ||
	    o == py._Py_NoneStruct) {
		py.Py_IncRef(o);
		return o;
	}
	type = py.PyObject_Type(o);
	/* __fspath__ = None says "not a path": the original raises its own
	 * TypeError for it */
	fspath = type ? py.PyObject_GetAttrString(type, "__fspath__") : NULL;
	has = fspath && fspath != py._Py_NoneStruct;
	py.Py_DecRef(fspath);
	py.PyErr_Clear();
	index = type && !has ? py.PyObject_HasAttrString(type, "__index__")
			     : 0;
	py.Py_DecRef(type);
	py.PyErr_Clear();
	if (has)
		return py.PyOS_FSPath(o);
	/* an index that is not an int (a dir_fd): judged as the current
	 * directory, while the original took the descriptor __index__ gave
	 * (another directory); made its int here, once */
	if (index)
		return py.PyNumber_Index(o);
	py.Py_IncRef(o);
	return o;
}

/* follow_symlinks= and effective_ids= are read with truth(): an object
 * whose __bool__ answers twice was judged one way (the link itself) and
 * obeyed the other (its target, outside the rules). Made True or False
 * here, once; any other keyword goes through path_once. A bool dir_fd=
 * warns on 3.13 and later, as the call would before the guard may refuse
 * it; the call is then handed its int, which does not warn again. */
static PyObject *flag_once(PyObject *key, PyObject *v)
{
	const char *k = py.PyObject_IsInstance(key, py.PyUnicode_Type) == 1
				? py.PyUnicode_AsUTF8AndSize(key, NULL)
				: NULL;
	int t;

	py.PyErr_Clear();
	if (k && strcmp(k, "dir_fd") == 0 && sb_g.files.bool_fd_warns &&
	    (v == sb_g.files.py_false || v == sb_g.files.py_true)) {
		if (py.PyErr_WarnEx(PY_EXC(PyExc_RuntimeWarning),
				    "bool is used as a file descriptor", 1) < 0)
			return NULL;
		return py.PyLong_FromLong(v == sb_g.files.py_true);
	}
	if (!k || (strcmp(k, "follow_symlinks") != 0 &&
		   strcmp(k, "effective_ids") != 0))
		return path_once(v);
	t = py.PyObject_IsTrue(v);
	return t < 0 ? NULL : py.PyBool_FromLong(t);
}

static sb_wrap_fn real_calls[SB_ARRAY_LEN(wraps)];

/* Nothing to convert: only str, bytes, int or None, no keywords (the
 * common call, handed on as it came, with no copy). */
static bool plain_args(PyObject *args, PyObject *kwargs)
{
	Py_ssize_t i, n = py.PyTuple_Size(args);

	if (kwargs && py.PyDict_Size(kwargs) != 0)
		return false;
	for (i = 0; i < n; i++) {
		PyObject *o = py.PyTuple_GetItem(args, i);

		if (!o || (o != py._Py_NoneStruct &&
			   py.PyObject_IsInstance(o, py.PyUnicode_Type) != 1 &&
			   py.PyObject_IsInstance(o, py.PyBytes_Type) != 1 &&
			   py.PyObject_IsInstance(o, py.PyLong_Type) != 1)) {
			py.PyErr_Clear();
			return false;
		}
	}
	return true;
}

static PyObject *paths_once_call(struct sb_wrap *w, PyObject *args,
				 PyObject *kwargs)
{
	Py_ssize_t i, n = py.PyTuple_Size(args), pos = 0;
	PyObject *nargs, *nkw = NULL, *k, *v, *res = NULL;

	if (plain_args(args, kwargs))
		return real_calls[w - wraps](w, args, NULL);
	nargs = py.PyTuple_New(n);
	if (!nargs)
		return NULL;
	for (i = 0; i < n; i++) {
		PyObject *o = path_once(py.PyTuple_GetItem(args, i));

		if (!o || py.PyTuple_SetItem(nargs, i, o) < 0)
			goto out;
	}
	if (kwargs) {
		nkw = py.PyDict_Copy(kwargs);
		if (!nkw)
			goto out;
		while (py.PyDict_Next(kwargs, &pos, &k, &v)) {
			PyObject *o = flag_once(k, v);
			int r = o ? py.PyDict_SetItem(nkw, k, o) : -1;

			py.Py_DecRef(o);
			if (r < 0)
				goto out;
		}
	}
	res = real_calls[w - wraps](w, nargs, nkw);
out:
	py.Py_DecRef(nkw);
	py.Py_DecRef(nargs);
	return res;
}

int sb_files_arm(void)
{
	size_t i;

	expose_sys_path();
	expose_executable();
	expose_script();
	for (i = 0; i < sb_n_ca_stores; i++)
		expose_implicit(sb_ca_stores[i].path, CA_ORIGIN);
	if (make_bools() < 0)
		return -1;
	for (i = 0; i < SB_ARRAY_LEN(wraps); i++) {
		if (wraps[i].call != paths_once_call) {
			real_calls[i] = wraps[i].call;
			wraps[i].call = paths_once_call;
		}
		if (sb_wrap_install(&wraps[i]) < 0 || adopt(&wraps[i]) < 0)
			return -1;
		if (real_calls[i] == lstat_call)
			sb_g.files.lstat = wraps[i].original;
	}
	return 0;
}
