/* trust.c - whether users other than the one running could change a file
 * or the directories above it (trust.h). As ssh(1) judges authorized_keys
 * and the directories above it.
 */
#include "trust.h"

#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

/* True when only the user running can be in group 'gid': it is that
 * user's primary group, no other user names it as theirs, and it lists no
 * other member (a user private group, which umask 002 leaves writable). A
 * group the user database cannot tell about is shared. */
static bool group_is_private(gid_t gid)
{
	uid_t me = geteuid();
	struct passwd *pw = getpwuid(me);
	struct group *gr;
	char name[256];
	bool shared = false;

	if (!pw || pw->pw_gid != gid || strlen(pw->pw_name) >= sizeof(name))
		return false;
	strcpy(name, pw->pw_name);
	gr = getgrgid(gid);
	if (!gr)
		return false;
	for (char **m = gr->gr_mem; m && *m; m++)
		if (strcmp(*m, name) != 0)
			return false;
	setpwent();
	while (!shared && (pw = getpwent()))
		shared = pw->pw_gid == gid && pw->pw_uid != me;
	endpwent();
	return !shared;
}

/* An access ACL's named entries show in the group bits, as the mask. */
int sb_trust_group(int fd, const char *path, const struct stat *st)
{
	static const char acl[] = "system.posix_acl_access";

	if (!(st->st_mode & S_IWGRP))
		return 0;
	if ((fd >= 0 ? fgetxattr(fd, acl, NULL, 0)
		     : getxattr(path, acl, NULL, 0)) > 0)
		return SB_TRUST_ACL;
	return group_is_private(st->st_gid) ? 0 : SB_TRUST_GROUP;
}

int sb_trust_file(int fd, const char *path, const struct stat *st)
{
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return SB_TRUST_FOREIGN;
	if (st->st_mode & S_IWOTH)
		return SB_TRUST_WORLD;
	return sb_trust_group(fd, path, st);
}

int sb_trust_dir(const char *dir, const struct stat *st)
{
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return SB_TRUST_FOREIGN;
	if (st->st_mode & S_ISVTX)
		return 0;
	if (st->st_mode & S_IWOTH)
		return SB_TRUST_WORLD;
	return sb_trust_group(-1, dir, st);
}

int sb_trust_dirs_above(const char *canon, char *bad, size_t n)
{
	char dir[PATH_MAX];
	struct stat st;
	int err;

	if (strlen(canon) >= sizeof(dir))
		return 0; /* realpath() made it: cannot happen */
	strcpy(dir, canon);
	for (;;) {
		char *slash = strrchr(dir, '/');

		if (!slash)
			return 0;
		slash[slash == dir ? 1 : 0] = '\0';
		if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		    (err = sb_trust_dir(dir, &st)) != 0) {
			snprintf(bad, n, "%s", dir);
			return err;
		}
		if (!strcmp(dir, "/"))
			return 0;
	}
}

const char *sb_trust_who(int err)
{
	return err == SB_TRUST_FOREIGN ? "it belongs to another user"
	       : err == SB_TRUST_WORLD ? "every user may write it"
	       : err == SB_TRUST_ACL   ? "an ACL lets other users write it"
				       : "users of its group may write it";
}

const char *sb_trust_dir_fix(int err)
{
	return err == SB_TRUST_FOREIGN ? "chown the directory"
	       : err == SB_TRUST_ACL   ? "setfacl -b the directory, or chmod +t it"
	       : err == SB_TRUST_WORLD ? "chmod o-w the directory, or chmod +t it"
				       : "chmod g-w the directory, or chmod +t it";
}

const char *sb_trust_message(char *buf, size_t n, const char *subject,
			     const char *path, const struct stat *st, int err,
			     const char *harm, const char *fix)
{
	struct stat own;

	if (!st) {
		if (stat(path, &own) < 0)
			memset(&own, 0, sizeof(own));
		st = &own;
	}
	snprintf(buf, n,
		 "%s '%s' (uid %lu, gid %lu, mode %04o) could be changed by "
		 "users other than uid %lu who runs python-sb: %s, so any of "
		 "them could %s. %s",
		 subject, path, (unsigned long)st->st_uid,
		 (unsigned long)st->st_gid, (unsigned)(st->st_mode & 07777),
		 (unsigned long)geteuid(), sb_trust_who(err), harm, fix);
	return buf;
}
