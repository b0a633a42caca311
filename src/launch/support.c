/* support.c - where python-sb's own files are (support.h): found from
 * /proc/self/exe, so that a build tree, a pip venv and an installation
 * each use their own copies.
 */
#include "support.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "trust.h"

/* How deep the pysandboxes package is walked: pysandboxes/_lib/ and
 * __pycache__/ are one level down. */
#define MAX_DEPTH 4

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* A wheel installed by pip: <venv>/bin/python-sb, and the package with
 * the guard in <venv>/lib/pythonX.Y/site-packages/pysandboxes/_lib/. */
static int find_in_venv(struct sb_arena *a, const char *bindir,
			const char **guard, const char **pkgdir)
{
	const char *lib = sb_arena_printf(a, "%s/../lib", bindir);
	DIR *d = opendir(lib);
	struct dirent *e;
	int r = -1;

	if (!d)
		return -1;
	while (r < 0 && (e = readdir(d))) {
		const char *site, *g;

		if (strncmp(e->d_name, "python3", 7) != 0)
			continue;
		site = sb_path_normalize(
			a, sb_arena_printf(a, "%s/%s/site-packages", lib,
					   e->d_name));
		g = sb_arena_printf(a, "%s/pysandboxes/_lib/%s", site,
				    SB_GUARD_LIB);
		if (exists(g)) {
			*guard = g;
			*pkgdir = site;
			r = 0;
		}
	}
	closedir(d);
	return r;
}

/* The message for a support file or directory others could change. */
static const char *distrust(struct sb_arena *a, const char *path,
			    const struct stat *st, int err)
{
	char msg[PATH_MAX + 512];
	bool dir = S_ISDIR(st->st_mode);

	return sb_arena_printf(
		a, "python-sb: %s; nothing was run.\n",
		sb_trust_message(
			msg, sizeof(msg),
			dir ? "its own directory" : "its own file", path, st,
			err, "put their code in place of the guard",
			sb_arena_printf(a,
					"Install python-sb where only root or "
					"you may write (%s)",
					dir ? sb_trust_dir_fix(err)
					: err == SB_TRUST_FOREIGN
						? "chown the file"
						: "chmod go-w the file")));
}

/* Could users other than the one running change path, what it holds
 * (depth levels down) or, when above, a directory above it? NULL, or the
 * message. A path that cannot be read is not judged: it is not loaded. */
static const char *judge(struct sb_arena *a, const char *path, int depth,
			 bool above)
{
	char canon[PATH_MAX], bad[PATH_MAX];
	const char *why = NULL;
	struct stat st;
	DIR *d;
	struct dirent *e;
	int err;

	/* an entry below a canonical directory is canonical unless it is a
	 * link, which is judged where it leads, and above it */
	if (!above && lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) &&
	    strlen(path) < sizeof(canon))
		strcpy(canon, path);
	else if (!realpath(path, canon) || lstat(canon, &st) < 0)
		return NULL;
	else
		above = true;
	/* above the path as named too: a link on the way lies in a directory
	 * that may be another's than the ones above where it leads */
	if (above && ((path[0] == '/' &&
		       (err = sb_trust_dirs_above(path, bad, sizeof(bad)))) ||
		      (err = sb_trust_dirs_above(canon, bad, sizeof(bad))))) {
		struct stat bst;

		if (stat(bad, &bst) < 0)
			memset(&bst, 0, sizeof(bst));
		return distrust(a, bad, &bst, err);
	}
	if (!S_ISDIR(st.st_mode))
		return (err = sb_trust_file(-1, canon, &st))
			       ? distrust(a, canon, &st, err)
			       : NULL;
	/* a directory: it must be as safe as what it holds, sticky or not */
	err = sb_trust_file(-1, canon, &st);
	if (err)
		return distrust(a, canon, &st, err);
	/* a directory below the depth judged: what it holds would go
	 * unjudged, so it is refused (the package is 2 levels deep) */
	if (depth <= 0 && !above)
		return sb_arena_printf(
			a,
			"python-sb: its own directory '%s' lies deeper than "
			"the %d levels python-sb judges, so what it holds "
			"cannot be judged. Reinstall python-sb; nothing was "
			"run.\n",
			canon, MAX_DEPTH);
	if (depth <= 0)
		return NULL;
	/* one that cannot be listed could hold files Python opens by name */
	if (!(d = opendir(canon)))
		return sb_arena_printf(
			a,
			"python-sb: its own directory '%s' cannot be listed "
			"(%s), so what it holds cannot be judged. Make it "
			"readable; nothing was run.\n",
			canon, strerror(errno));
	while (!why && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			why = judge(a,
				    sb_arena_printf(a, "%s/%s", canon,
						    e->d_name),
				    depth - 1, false);
	closedir(d);
	return why;
}

const char *sb_support_untrusted(struct sb_arena *a, const char *path)
{
	return judge(a, path, 0, true);
}

/* The guard and the package found: judged before either is used. */
static int found(struct sb_arena *a, const char *g, const char *pkg,
		 const char **guard, const char **pkgdir, const char **why)
{
	const char *w = judge(a, g, 0, true);

	if (!w)
		w = judge(a, sb_arena_printf(a, "%s/pysandboxes", pkg),
			  MAX_DEPTH, true);
	if (w) {
		if (why)
			*why = w;
		return -2;
	}
	*guard = g;
	*pkgdir = pkg;
	return 0;
}

int sb_find_support(struct sb_arena *a, const char **guard,
		    const char **pkgdir, const char **why)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *g, *pkg;

	if (n > 0) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		g = sb_arena_printf(a, "%s/%s", self, SB_GUARD_LIB);
		if (exists(g) && exists(SB_SOURCE_ROOT "/python/pysandboxes"))
			return found(a, g, SB_SOURCE_ROOT "/python", guard,
				     pkgdir, why);
		if (find_in_venv(a, self, &g, &pkg) == 0)
			return found(a, g, pkg, guard, pkgdir, why);
	}
	g = SB_INSTALL_LIBDIR "/" SB_GUARD_LIB;
	if (exists(g) && exists(SB_INSTALL_PKGDIR "/pysandboxes"))
		return found(a, g, SB_INSTALL_PKGDIR, guard, pkgdir, why);
	return -1;
}
