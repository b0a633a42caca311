/* policy_own.c - python-sb's own files are never the program's (issue 21).
 *
 * It owns the list of files that belong to python-sb rather than to the
 * program: the rule file, its includes (present or not), and the backups
 * '<rule file>.old[_N]' that learning left next to it. Each becomes an
 * implicit 'ignore=' rule of origin <own-file>, so that every layer that
 * already hides ignored paths hides these too: the guard (the Python layer
 * of every provider), the masks of unshare and bwrap, firejail's
 * blacklist. Landlock cannot hide a path inside a granted tree; for it the
 * launcher reads the same rules back (selfprotect.c). An exposure that names
 * one of these files exactly hands it over and drops its rule. An include
 * that does not exist inside a writable exposure is an error: nothing can
 * hide a file before it is made. Pure code:
 * it only lists a directory and stats, never prints, never exits.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fsrules.h"
#include "policy_internal.h"

/* The path as an ignore= glob that matches itself only. */
static const char *glob_literal(struct sb_arena *a, const char *path)
{
	struct sb_buf b = { 0 };
	const char *s, *res;

	for (s = path; *s; s++) {
		if (*s == '*' || *s == '?' || *s == '[')
			sb_buf_printf(&b, "[%c]", *s);
		else
			sb_buf_add(&b, s, 1);
	}
	res = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return res;
}

static bool handed_over(const struct sb_policy *p, const char *path)
{
	size_t i;

	for (i = 0; i < p->exposes.n; i++)
		if (strcmp(p->exposes.v[i].path, path) == 0)
			return true;
	return false;
}

static void protect(struct sb_policy *p, const char *path)
{
	struct sb_arena *a = p->arena;
	struct sb_ref ref = { SB_REF_OWN, 0 };
	struct sb_ignore *ig;
	struct sb_rule *r;
	const char *text;
	size_t i;

	if (handed_over(p, path))
		return;
	text = sb_arena_printf(a, "ignore=%s", glob_literal(a, path));
	for (i = 0; i < p->rules.n; i++)
		if (strcmp(p->rules.v[i].text, text) == 0 &&
		    p->rules.v[i].ref.file == ref.file)
			return;
	r = SB_VEC_PUSH(a, p->rules);
	r->text = text;
	r->ref = ref;
	ig = SB_VEC_PUSH(a, p->ignores);
	ig->pattern = text + strlen("ignore=");
	ig->rule = text;
	ig->ref = ref;
}

/* '<base>.old' and '<base>.old_<digits>' next to the rule file. */
static bool is_backup(const char *name, const char *base)
{
	size_t n = strlen(base);
	const char *s;

	if (strncmp(name, base, n) != 0 || strncmp(name + n, ".old", 4) != 0)
		return false;
	s = name + n + 4;
	if (!*s)
		return true;
	if (*s++ != '_' || !*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static void protect_backups(struct sb_policy *p, const char *rule_file)
{
	struct sb_arena *a = p->arena;
	char *dir = sb_arena_strdup(a, rule_file), *slash = strrchr(dir, '/');
	const char *base;
	struct dirent *e;
	DIR *d;

	if (!slash)
		return;
	*slash = '\0';
	base = slash + 1;
	d = opendir(*dir ? dir : "/");
	if (!d)
		return;
	while ((e = readdir(d)))
		if (is_backup(e->d_name, base))
			protect(p, sb_arena_printf(a, "%s/%s", dir, e->d_name));
	closedir(d);
}

const char *sb_own_file(struct sb_arena *a, const struct sb_ignore *ig)
{
	char *out, *o;
	const char *s;

	if (!ig->ref.file || strcmp(ig->ref.file, SB_REF_OWN) != 0)
		return NULL;
	out = o = sb_arena_strdup(a, ig->pattern);
	for (s = ig->pattern; *s; s++) {
		if (s[0] == '[' && s[1] && s[2] == ']') {
			*o++ = s[1];
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

const char *sb_policy_writable_root(const struct sb_policy *p,
				    const char *path)
{
	size_t i;

	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];
		char top[4096];
		struct stat st;

		if (e->mode != SB_EXPOSE_RW)
			continue;
		/* expose-made=: below an entry its pattern names that is not
		 * there (one that is, the program did not make: it cannot
		 * touch it) */
		if (e->made ? sb_fs_made_top(e, path, top, sizeof(top)) &&
				      sb_fs_find_expose(p, path) == e &&
				      lstat(top, &st) < 0 && errno == ENOENT
			    : sb_path_under(path, e->path))
			return e->made ? e->made_dir : e->path;
	}
	return NULL;
}

void sb_protect_own_files(struct sb_policy *p, const char *const *shadows,
			  size_t n_shadows)
{
	const char *root;
	size_t i;

	if (p->learning)
		return; /* the learning run is trusted, and writes them */
	/* a rule file the next run would read before this one: no layer
	 * can hide it either, so the program must not be able to make it
	 * (where nothing is enforced, it may do anything anyway) */
	if (p->provider == SB_PROVIDER_NONE && !p->py_sandbox)
		n_shadows = 0;
	for (i = 0; i < n_shadows && p->files.n; i++)
		if ((root = sb_policy_writable_root(p, shadows[i])))
			sb_error(p, (struct sb_ref){ p->files.v[0].display, 0 },
				 "the next run would read a rule file at %s "
				 "before this one, and 'expose-rw=%s' would let "
				 "the program create it and write its own "
				 "rules; move this rule file there (it is kept "
				 "from the program there), or expose less than "
				 "that tree.",
				 shadows[i], root);
	for (i = 0; i < p->files.n; i++) {
		const struct sb_file *f = &p->files.v[i];

		if (f->state == SB_FILE_ERROR)
			continue;
		if (f->state == SB_FILE_ABSENT && i > 0 &&
		    (root = sb_policy_writable_root(p, f->path))) {
			/* no layer can hide a file that is not there yet */
			sb_error(p, f->included_from,
				 "%s: it does not exist, and 'expose-rw=%s' "
				 "would let the program create it and write "
				 "its own rules; create it (it may be empty), "
				 "or move it out of that tree.",
				 sb_arena_printf(p->arena, "include \"%s\"",
						 f->display),
				 root);
			continue;
		}
		protect(p, f->path);
		if (i == 0 && f->state == SB_FILE_LOADED)
			protect_backups(p, f->path);
	}
}
