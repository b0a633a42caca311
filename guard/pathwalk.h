/* pathwalk.h - locating a path the way the kernel will walk it, for the
 * file guard's decisions (files.c): the lexical absolute form that messages
 * show, the canonical form with symlinks resolved that rules are matched
 * against, and the cache of canonical directories that keeps an open()
 * from walking every component again. No Python here: pathwalk.c calls
 * readlink(2), getcwd(3) and /proc/self/fd only, and is unit-tested alone
 * (tests/unit/test_pathwalk.c).
 */
#ifndef SB_PATHWALK_H
#define SB_PATHWALK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* the kernel's own limit on symlinks followed in one lookup */
#define SB_MAX_LINKS 40

struct sb_fs_paths {
	char abs[PATH_MAX];   /* absolute, lexically normalised: messages */
	char canon[PATH_MAX]; /* what the kernel will reach: the decision */
};

/* Canonical directories met lately. An open() costs CPython five
 * syscalls; walking every component again would double that. A directory
 * is remembered only when it resolved completely, and everything is
 * forgotten when the program renames, removes or links anything: what it
 * cannot see (C code, other processes) it could exploit without the cache
 * as well, since the check always precedes the call. The last component is
 * never remembered: it is checked on every call. GIL held: no lock.
 * Another thread may rename while this one resolves (the GIL is released
 * during the syscall): the wrappers of the calls that change what a path
 * reaches forget before and after, and nothing is remembered meanwhile;
 * their events forget too, for a caller holding the original function.
 * The working directory is remembered the same way: os.chdir and
 * os.fchdir are such calls (and their event, os.chdir, forgets), so
 * getcwd(3) runs once per change, not at every relative path. A chdir(2)
 * made by C code is not seen: relative paths are then judged from the
 * directory the program last chose, as the rest of the cache is. */
#define SB_DIR_CACHE_SLOTS 64
#define SB_DIR_CACHE_LEN 512

struct sb_dir_cache_slot {
	unsigned gen;
	char key[SB_DIR_CACHE_LEN];   /* the directory as reached, unresolved */
	char canon[SB_DIR_CACHE_LEN]; /* "" for the root */
};

/* Zeroed is empty. */
struct sb_dir_cache {
	struct sb_dir_cache_slot slot[SB_DIR_CACHE_SLOTS];
	unsigned gen;
	int changing; /* calls that may change what a path reaches, in flight:
		       * nothing is remembered meanwhile */
	char cwd[PATH_MAX]; /* the working directory, for generation cwd_gen */
	unsigned cwd_gen;
};

/* Forget every directory (a rename, remove, link... began or ended). */
void sb_dir_cache_forget(struct sb_dir_cache *dc);

/* Fill fp for 'path', relative to 'base' (a canonical directory) when
 * given, else to dir_fd when >= 0, else to the cwd; the directory part
 * goes through the cache 'dc', the last component never does. 'follow':
 * a final symlink is followed (a trailing slash always follows). -1 when
 * it cannot be located (unresolvable descriptor, no cwd, too long, a
 * loop): the caller refuses. */
int sb_path_locate(struct sb_dir_cache *dc, const char *path, int dir_fd,
		   const char *base, bool follow, struct sb_fs_paths *fp);

/* Fill fp for 'path' (relative to the cwd when not absolute) whose last
 * component the caller has just seen with lstat(2) to be no symlink: the
 * directory part goes through the cache and the name is appended as it
 * is, with no readlink(2). -1 when the name is ".", ".." or empty (or the
 * path is "/"), or the path cannot be located: take sb_path_locate(). */
int sb_path_locate_entry(struct sb_dir_cache *dc, const char *path,
			 struct sb_fs_paths *fp);


/* Resolve 'rest' on top of 'out' (a canonical directory, "" for the root)
 * as the kernel walks it; see pathwalk.c. *complete (may be NULL): every
 * component existed. 0, or -1 when too long or a loop. */
int sb_path_resolve(char out[PATH_MAX], const char *rest, bool follow,
		    bool *complete);

/* The directory a descriptor is open on, as the kernel names it: 0, or -1
 * (closed, a socket or pipe, deleted). */
int sb_path_fd_dir(int fd, char out[PATH_MAX]);
/* What descriptor fd is open on, as /proc/self/fd names it: 0 with the
 * path in out (" (deleted)" taken off, *unlinked set: an O_TMPFILE, a
 * file removed since); 1 when it is no file of a tree (a socket, a pipe,
 * an anonymous inode, a memfd); -1 when /proc cannot say (errno; ENOENT:
 * no such descriptor). */
int sb_path_fd_file(int fd, char out[PATH_MAX], bool *unlinked);

#endif
