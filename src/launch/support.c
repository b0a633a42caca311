/* support.c - where python-sb's own files are (support.h): found from
 * /proc/self/exe, so that a build tree, a pip venv and an installation
 * each use their own copies.
 */
#include "support.h"

#include <dirent.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

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

int sb_find_support(struct sb_arena *a, const char **guard,
		    const char **pkgdir)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *g;

	if (n > 0) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		g = sb_arena_printf(a, "%s/%s", self, SB_GUARD_LIB);
		if (exists(g) && exists(SB_SOURCE_ROOT "/python/pysandboxes")) {
			*guard = g;
			*pkgdir = SB_SOURCE_ROOT "/python";
			return 0;
		}
		if (find_in_venv(a, self, guard, pkgdir) == 0)
			return 0;
	}
	g = SB_INSTALL_LIBDIR "/" SB_GUARD_LIB;
	if (exists(g) && exists(SB_INSTALL_PKGDIR "/pysandboxes")) {
		*guard = g;
		*pkgdir = SB_INSTALL_PKGDIR;
		return 0;
	}
	return -1;
}
