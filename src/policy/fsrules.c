/* fsrules.c - decide a file access (py-sandboxes(5), expose-* and ignore=):
 * ignore= first, then the longest expose-* rule that contains the canonical
 * path. Pure code. */
#include "fsrules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NAME_MAX, without <limits.h> in pure code */
#define NAME_MAX_HERE 255

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return path;
	if (slash[1])
		return slash + 1;
	/* "dir/" : the last real component */
	while (slash > path && slash[-1] != '/' && slash[-1])
		slash--;
	return slash;
}

/* The first component of 'canon' below 'dir' (canon strictly below),
 * into comp: its length, or 0. */
static size_t first_below(const char *dir, const char *canon, char *comp,
			  size_t size)
{
	size_t dl = strcmp(dir, "/") == 0 ? 0 : strlen(dir), n;

	if (strncmp(canon, dir, dl) != 0 || canon[dl] != '/' || !canon[dl + 1])
		return 0;
	n = strcspn(canon + dl + 1, "/");
	if (n >= size)
		return 0;
	memcpy(comp, canon + dl + 1, n);
	comp[n] = '\0';
	return n;
}

/* Does expose-made= rule 'e' contain 'canon'? A name made right in its
 * directory matches the pattern; a leading '.' only a pattern's own
 * ("*" never reaches ~/.bashrc). */
static bool made_match(const struct sb_expose *e, const char *canon)
{
	char comp[NAME_MAX_HERE + 1];

	if (!first_below(e->made_dir, canon, comp, sizeof(comp)))
		return false;
	if (comp[0] == '.' && e->pattern[0] != '.')
		return false;
	return sb_fnmatch(e->pattern, comp);
}

size_t sb_fs_made_top(const struct sb_expose *e, const char *canon,
		      char *out, size_t size)
{
	char comp[NAME_MAX_HERE + 1];
	const char *dir = strcmp(e->made_dir, "/") == 0 ? "" : e->made_dir;
	int n;

	if (!e->made || !first_below(e->made_dir, canon, comp, sizeof(comp)))
		return 0;
	n = snprintf(out, size, "%s/%s", dir, comp);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

const struct sb_expose *sb_fs_find_expose(const struct sb_policy *p,
					   const char *canon)
{
	const struct sb_expose *best = NULL;
	size_t i, best_len = 0;

	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];
		size_t len;

		/* a listed directory decides for itself only: what lies
		 * below is judged by the other rules */
		if (e->mode == SB_EXPOSE_LIST && strcmp(canon, e->path) != 0)
			continue;
		if (e->made) {
			if (!made_match(e, canon))
				continue;
			len = strlen(e->made_dir);
			/* a rule of the same directory wins */
			if (best && best_len >= len)
				continue;
		} else {
			if (!(e->is_dir ? sb_path_under(canon, e->path)
					: strcmp(canon, e->path) == 0))
				continue;
			len = strlen(e->path);
			/* longest first: the first plain match is the
			 * best, but an expose-made= one seen before it may
			 * be shorter than it */
			if (best && !best->made)
				continue;
			if (best && best_len > len)
				continue;
		}
		best = e;
		best_len = len;
		if (!e->made)
			break;
	}
	return best;
}

/* Does a relative pattern match a component of 'canon' below 'root'? That
 * hides files under a directory of that name, but never the exposed root
 * itself or what lies above it (2.6.3). */
static bool component_match(const char *pat, const char *canon,
			    const char *root)
{
	size_t rl = root ? strlen(root) : 0, n;
	const char *s = canon + (rl > 1 ? rl : 0);
	char comp[4096];

	for (s = sb_path_next(s, &n); n; s = sb_path_next(s + n, &n)) {
		if (n < sizeof(comp)) {
			memcpy(comp, s, n);
			comp[n] = '\0';
			if (sb_fnmatch(pat, comp))
				return true;
		}
	}
	return false;
}

static const struct sb_ignore *find_ignore(const struct sb_policy *p,
					   const char *spelled, const char *abs,
					   const char *canon,
					   const struct sb_expose *e)
{
	const char *spellings[3] = { spelled, abs, canon };
	size_t i, k;

	for (i = 0; i < p->ignores.n; i++) {
		const struct sb_ignore *ig = &p->ignores.v[i];
		bool absolute = ig->pattern[0] == '/';

		for (k = 0; k < 3; k++) {
			if (!spellings[k])
				continue;
			if (absolute ? sb_fnmatch(ig->pattern, spellings[k])
				     : sb_fnmatch(ig->pattern,
						  base_name(spellings[k])))
				return ig;
		}
		if (!absolute && canon && e && e->is_dir &&
		    component_match(ig->pattern, canon, e->path))
			return ig;
	}
	return NULL;
}

void sb_fs_decide(const struct sb_policy *p, const char *spelled,
		  const char *abs, const char *canon, bool write,
		  struct sb_fs_decision *d)
{
	const struct sb_expose *e = canon ? sb_fs_find_expose(p, canon) : NULL;

	memset(d, 0, sizeof(*d));
	d->expose = e;
	d->ignore = find_ignore(p, spelled, abs, canon, e);
	if (d->ignore)
		d->verdict = SB_FS_IGNORED;
	else if (!e)
		d->verdict = SB_FS_NOT_EXPOSED;
	else if (write && e->mode != SB_EXPOSE_RW)
		d->verdict = SB_FS_READ_ONLY;
	else
		d->verdict = SB_FS_ALLOW;
}

static int cmp_longest(const void *x, const void *y)
{
	const struct sb_expose *a = x, *b = y;
	size_t la = strlen(a->path), lb = strlen(b->path);

	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(a->path, b->path);
}

void sb_fs_add_implicit(struct sb_policy *p, const char *path, bool is_dir,
			const char *origin)
{
	struct sb_expose *e;
	size_t i;

	for (i = 0; i < p->exposes.n; i++)
		if (strcmp(p->exposes.v[i].path, path) == 0)
			return;
	e = SB_VEC_PUSH(p->arena, p->exposes);
	/* the arena does not zero: no field left to chance (entry) */
	memset(e, 0, sizeof(*e));
	e->path = sb_arena_strdup(p->arena, path);
	e->rule = sb_arena_printf(p->arena, "expose-ro=%s", path);
	e->ref.file = origin;
	e->ref.line = 0;
	e->mode = SB_EXPOSE_RO;
	e->is_dir = is_dir;
	qsort(p->exposes.v, p->exposes.n, sizeof(*p->exposes.v), cmp_longest);
}
