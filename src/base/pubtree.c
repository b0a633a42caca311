/* pubtree.c - the parts of a system tree that every user may read
 * (pubtree.h). */
#include "pubtree.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const struct sb_ca_store sb_ca_stores[] = {
	{ "/etc/ssl", true },
	{ "/etc/pki", true },
	{ "/etc/ca-certificates", true },
	{ "/usr/share/ca-certificates", false },
	{ "/usr/share/pki", false },
};
const size_t sb_n_ca_stores = sizeof(sb_ca_stores) / sizeof(*sb_ca_stores);

/* Red Hat's deepest: /etc/pki/ca-trust/extracted/pem/directory-hash; a
 * store holds a few hundred entries */
#define MAX_DEPTH 6
#define MAX_ENTRIES 16384

struct walk {
	void (*add)(void *ctx, const char *path, bool is_dir);
	void *ctx;
	size_t budget; /* entries left to look at */
};

/* An entry public whole and already judged, kept until its directory's
 * verdict says whether it is a part of its own. */
struct part {
	struct part *next;
	bool dir;
	char name[];
};

/* What every user may read: a regular file readable by others, a
 * directory others may list and enter. Devices, sockets and FIFOs are no
 * one's to read through a grant. */
static bool public_mode(mode_t m)
{
	if (S_ISDIR(m))
		return (m & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH);
	return S_ISREG(m) && (m & S_IROTH);
}

static int walk_dir(struct walk *w, int dfd, const char *path, int depth);

/* Is the entry 'name' of the directory 'd' (named 'path') public whole?
 * A directory public in part adds its parts itself. */
static bool entry_public(struct walk *w, DIR *d, const char *path,
			 const char *name, int depth, bool *is_dir)
{
	char child[PATH_MAX];
	struct stat st;
	int sub;

	if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	*is_dir = S_ISDIR(st.st_mode);
	if (!public_mode(st.st_mode))
		return false;
	if (!*is_dir)
		return true;
	if (depth >= MAX_DEPTH ||
	    snprintf(child, sizeof(child), "%s/%s", path, name) >=
		    (int)sizeof(child))
		return false;
	sub = openat(dirfd(d), name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return sub >= 0 && walk_dir(w, sub, child, depth + 1) == 1;
}

/* 1 when the directory 'path' (open as dfd, taken) is public whole; else
 * 0, and its public parts were added. */
static int walk_dir(struct walk *w, int dfd, const char *path, int depth)
{
	DIR *d = fdopendir(dfd);
	struct part *parts = NULL, *p;
	struct dirent *de;
	char full[PATH_MAX];
	bool whole = true;

	if (!d) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		bool dir = false;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (!w->budget) { /* cut: the rest is left out */
			whole = false;
			break;
		}
		w->budget--;
		if (de->d_type == DT_LNK)
			continue; /* judged where it leads */
		if (!entry_public(w, d, path, n, depth, &dir)) {
			whole = false;
			continue;
		}
		p = malloc(sizeof(*p) + strlen(n) + 1);
		if (!p) {
			whole = false;
			continue;
		}
		p->dir = dir;
		strcpy(p->name, n);
		p->next = parts;
		parts = p;
	}
	closedir(d);
	while ((p = parts)) {
		parts = p->next;
		if (!whole && snprintf(full, sizeof(full), "%s/%s", path,
				       p->name) < (int)sizeof(full))
			w->add(w->ctx, full, p->dir);
		free(p);
	}
	return whole;
}

void sb_public_parts(const char *root,
		     void (*add)(void *ctx, const char *path, bool is_dir),
		     void *ctx)
{
	struct walk w = { .add = add, .ctx = ctx, .budget = MAX_ENTRIES };
	char canon[PATH_MAX];
	struct stat st;
	int fd;

	if (!realpath(root, canon) || stat(canon, &st) < 0 ||
	    !public_mode(st.st_mode))
		return;
	if (!S_ISDIR(st.st_mode)) {
		add(ctx, canon, false);
		return;
	}
	fd = open(canon, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && walk_dir(&w, fd, canon, 0) == 1)
		add(ctx, canon, true);
}

bool sb_public_path(const char *root, const char *canon)
{
	size_t n = strlen(root);
	char part[PATH_MAX];
	struct stat st;
	const char *c;

	if (strncmp(canon, root, n) != 0 || (canon[n] && canon[n] != '/') ||
	    strlen(canon) >= sizeof(part))
		return false;
	/* root, then each component below it, the last one included */
	for (c = canon + n;; c = strchr(c + 1, '/')) {
		size_t len = c ? (size_t)(c - canon) : strlen(canon);

		memcpy(part, canon, len);
		part[len] = '\0';
		if (lstat(part, &st) < 0 || !public_mode(st.st_mode))
			return false;
		if (!c || !*c)
			return true;
	}
}
