/* trust.h - whether users other than the one running could change a file
 * or the directories above it (trust.c). The rule files (policy.c) and
 * python-sb's own support files (support.c) are judged alike. Reads the
 * file system, its ACLs and the user database, nothing else.
 */
#ifndef SB_TRUST_H
#define SB_TRUST_H

#include <stddef.h>
#include <sys/stat.h>

/* The answers; 0 is "only the running user (or root) can change it". */
enum {
	SB_TRUST_FOREIGN = 2, /* another user than the running one or root owns it */
	SB_TRUST_WORLD,	      /* every user may write it */
	SB_TRUST_GROUP,	      /* a group other users are in may write it */
	SB_TRUST_ACL,	      /* an access ACL lets other users write it */
};

/* The file open as fd (or, when fd is -1, the entry path) of mode st,
 * through its group bits only: 0, SB_TRUST_GROUP or SB_TRUST_ACL. */
int sb_trust_group(int fd, const char *path, const struct stat *st);

/* The file itself: its owner, then its mode and ACL. */
int sb_trust_file(int fd, const char *path, const struct stat *st);

/* Directory dir (mode st): could others replace or remove its entries?
 * A sticky directory keeps them to their own entries. */
int sb_trust_dir(const char *dir, const struct stat *st);

/* Every directory that exists from canonical path canon's up to /; the
 * first that others could change is copied to bad. */
int sb_trust_dirs_above(const char *canon, char *bad, size_t n);

/* Short texts for an answer: who could change it, and the fix for a
 * directory. */
const char *sb_trust_who(int err);
const char *sb_trust_dir_fix(int err);

/* The one sentence for a path others could change, as the rule file's,
 * python-sb's own files' and the denial log's judges say it, into buf:
 * "<subject> '<path>' (uid U, gid G, mode M) could be changed by users
 * other than uid N who runs python-sb: <who>, so any of them could
 * <harm>. <fix>". st: the path's (NULL: stat() here). Returns buf. */
const char *sb_trust_message(char *buf, size_t n, const char *subject,
			     const char *path, const struct stat *st, int err,
			     const char *harm, const char *fix);

#endif
