/* pathwalk.c - locating a path the way the kernel will walk it (see
 * pathwalk.h): lexical normalisation, the symlink walk, the directory of a
 * descriptor and the cache of canonical directories. It judges nothing and
 * knows nothing of Python: the file guard (files.c) decides with what it
 * returns. It must not allocate: every buffer is the caller's or on the
 * stack, since an open() of the program runs through here.
 */
#include "pathwalk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Resolve 'rest' on top of 'out' (a canonical directory, "" for the root)
 * the way the kernel walks it: symlinks followed (the last component only
 * when 'follow' or when a slash trails it), '..' pops the real parent.
 * From the first component that does not exist on, the rest is taken as
 * written: it names what the call would create. A dangling link is thus
 * judged by where it points, not by where it sits. -1 when the path is too
 * long or loops (errno ELOOP: the call itself would fail). */
int sb_path_resolve(char out[PATH_MAX], const char *rest_in, bool follow,
		    bool *complete)
{
	char rest[PATH_MAX], link[PATH_MAX];
	size_t olen = strlen(out);
	const char *p;
	int links = 0;
	bool missing = false;

	if (strlen(rest_in) >= sizeof(rest))
		return -1;
	strcpy(rest, rest_in);
	p = rest;
	for (;;) {
		const char *comp;
		size_t n, tail;
		ssize_t r;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		n = strcspn(p, "/");
		p += n;
		if (n == 1 && comp[0] == '.')
			continue;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			while (olen > 0 && out[olen - 1] != '/')
				olen--;
			if (olen > 0)
				olen--;
			out[olen] = '\0';
			continue;
		}
		if (olen + 1 + n >= PATH_MAX)
			return -1;
		out[olen] = '/';
		memcpy(out + olen + 1, comp, n);
		olen += 1 + n;
		out[olen] = '\0';
		if (missing || (!*p && !follow))
			continue;
		r = readlink(out, link, sizeof(link) - 1);
		if (r < 0) {
			if (errno != EINVAL) /* ENOENT, ENOTDIR, EACCES... */
				missing = true;
			continue;
		}
		if (++links > SB_MAX_LINKS) {
			errno = ELOOP;
			return -1;
		}
		/* the target replaces the component; what followed stays */
		tail = strlen(p);
		if ((size_t)r + tail >= sizeof(link))
			return -1;
		memcpy(link + r, p, tail + 1);
		memcpy(rest, link, (size_t)r + tail + 1);
		p = rest;
		if (link[0] == '/')
			olen = 0;
		else
			olen -= 1 + n;
		out[olen] = '\0';
	}
	if (olen == 0)
		strcpy(out, "/");
	if (complete)
		*complete = !missing;
	return 0;
}

int sb_path_fd_file(int fd, char out[PATH_MAX], bool *unlinked)
{
	static const char deleted[] = " (deleted)";
	const size_t dl = sizeof(deleted) - 1;
	char proc[64];
	ssize_t r;

	*unlinked = false;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = readlink(proc, out, PATH_MAX - 1);
	if (r < 0)
		return -1;
	out[r] = '\0';
	if (r == 0 || out[0] != '/' || strncmp(out, "/memfd:", 7) == 0)
		return 1; /* a socket, pipe, anonymous inode, memfd */
	if ((size_t)r > dl && strcmp(out + r - dl, deleted) == 0) {
		out[r - dl] = '\0';
		*unlinked = true;
	}
	return 0;
}

int sb_path_fd_dir(int fd, char out[PATH_MAX])
{
	bool unlinked;

	return sb_path_fd_file(fd, out, &unlinked) == 0 && !unlinked ? 0
								      : -1;
}

/* A slot holds for the generation it was stored in. An empty slot's key
 * is "", which no lookup asks for (a key holds a slash). When the
 * generation wraps, the slots of its first round would hold again: they
 * are cleared. */
void sb_dir_cache_forget(struct sb_dir_cache *dc)
{
	if (++dc->gen == 0) {
		memset(dc->slot, 0, sizeof(dc->slot));
		dc->cwd[0] = '\0';
	}
}

/* The working directory, canonical (getcwd(3) returns it so), through the
 * cache: remembered for the generation it was read in, never while a call
 * that may change it is in flight. */
static int cwd_of(struct sb_dir_cache *dc, char c[PATH_MAX])
{
	if (dc->cwd[0] == '/' && dc->cwd_gen == dc->gen) {
		strcpy(c, dc->cwd);
		return 0;
	}
	if (!getcwd(c, PATH_MAX) || c[0] != '/')
		return -1; /* removed, or outside our root */
	if (!dc->changing) {
		strcpy(dc->cwd, c);
		dc->cwd_gen = dc->gen;
	}
	return 0;
}

static struct sb_dir_cache_slot *dir_cache_slot(struct sb_dir_cache *dc,
						const char *key)
{
	unsigned h = 2166136261u; /* FNV-1a */

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return &dc->slot[h % SB_DIR_CACHE_SLOTS];
}

/* Resolve the directory part 'dir' (n bytes of a path) on top of 'c' (a
 * canonical directory, "" for the root), through the cache. */
static int resolve_dir(struct sb_dir_cache *dc, char c[PATH_MAX],
		       const char *dir, size_t n)
{
	char key[SB_DIR_CACHE_LEN], part[PATH_MAX];
	struct sb_dir_cache_slot *slot = NULL;
	bool complete;
	int k;

	if (n >= sizeof(part))
		return -1;
	memcpy(part, dir, n);
	part[n] = '\0';
	k = snprintf(key, sizeof(key), "%s/%s", dir[0] == '/' ? "" : c, part);
	if (k > 0 && (size_t)k < sizeof(key)) {
		slot = dir_cache_slot(dc, key);
		if (slot->gen == dc->gen && strcmp(slot->key, key) == 0) {
			strcpy(c, slot->canon);
			return 0;
		}
	}
	if (dir[0] == '/')
		c[0] = '\0';
	if (sb_path_resolve(c, part, true, &complete) < 0)
		return -1;
	if (strcmp(c, "/") == 0)
		c[0] = '\0';
	if (slot && complete && !dc->changing && strlen(c) < SB_DIR_CACHE_LEN) {
		strcpy(slot->key, key);
		strcpy(slot->canon, c);
		slot->gen = dc->gen;
	}
	return 0;
}

static bool is_dot_name(const char *name)
{
	return !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* Where a relative 'path' starts, into c: 'base' when given, else the
 * directory of dir_fd when >= 0, else the cwd; "" for the root. */
static int start_of(struct sb_dir_cache *dc, const char *path, int dir_fd,
		    const char *base, char c[PATH_MAX])
{
	if (path[0] == '/') {
		c[0] = '\0';
	} else if (base) {
		if (strlen(base) >= PATH_MAX)
			return -1;
		strcpy(c, base);
	} else if (dir_fd >= 0) {
		if (sb_path_fd_dir(dir_fd, c) < 0)
			return -1;
	} else if (cwd_of(dc, c) < 0) {
		return -1;
	}
	if (strcmp(c, "/") == 0)
		c[0] = '\0';
	return 0;
}

/* Fill fp for 'path', relative to 'base' (a canonical directory) when
 * given, else to dir_fd when >= 0, else to the cwd. -1 when it cannot be
 * located (unresolvable descriptor, no cwd, too long, a loop). */
int sb_path_locate(struct sb_dir_cache *dc, const char *path, int dir_fd,
		   const char *base, bool follow, struct sb_fs_paths *fp)
{
	char *c = fp->canon;
	const char *slash;

	if (start_of(dc, path, dir_fd, base, c) < 0)
		return -1;
	if (sb_path_lexical(fp->abs, PATH_MAX, c, path) < 0)
		return -1;
	slash = strrchr(path, '/');
	if (!slash || slash == path || is_dot_name(slash + 1))
		return sb_path_resolve(c, path, follow, NULL);
	if (resolve_dir(dc, c, path, (size_t)(slash - path)) < 0)
		return -1;
	return sb_path_resolve(c, slash + 1, follow, NULL);
}

int sb_path_locate_entry(struct sb_dir_cache *dc, const char *path,
			 struct sb_fs_paths *fp)
{
	char *c = fp->canon;
	const char *slash = strrchr(path, '/'), *name;
	size_t n;

	name = slash ? slash + 1 : path;
	if (is_dot_name(name))
		return -1;
	if (start_of(dc, path, -1, NULL, c) < 0 ||
	    sb_path_lexical(fp->abs, PATH_MAX, c, path) < 0)
		return -1;
	if (slash && slash != path &&
	    resolve_dir(dc, c, path, (size_t)(slash - path)) < 0)
		return -1;
	n = strlen(c);
	if (n + 1 + strlen(name) >= PATH_MAX)
		return -1;
	c[n] = '/';
	strcpy(c + n + 1, name);
	return 0;
}
