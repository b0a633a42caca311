/* interp.c - find the interpreter to run. It reads the file system and the
 * environment it is given, never executes anything: a pyenv shim is followed
 * by reading pyenv's own version files, so no shell script ever runs inside
 * (or before) the sandbox, and the ~100 ms the shim costs are saved.
 */
#include "interp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "policy.h"

static bool is_executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* Does the file start with "#!"? */
static bool is_script(const char *path)
{
	char head[2] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool script;

	if (fd < 0)
		return false;
	script = read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';
	close(fd);
	return script;
}

static const char *search_path(struct sb_arena *a, const char *name,
			       const char *path_var, const char *skip_dir)
{
	const char *p = path_var;

	while (p && *p) {
		size_t n = strcspn(p, ":");
		char *dir = sb_arena_strndup(a, p, n);
		const char *cand;

		p += n + (p[n] == ':');
		if (!*dir)
			dir = ".";
		if (skip_dir && strcmp(dir, skip_dir) == 0)
			continue;
		cand = sb_arena_printf(a, "%s/%s", dir, name);
		if (is_executable_file(cand))
			return cand;
	}
	return NULL;
}

/* First non-empty, non-comment word of a pyenv version file. */
static const char *read_version_file(struct sb_arena *a, const char *path)
{
	char buf[512];
	char *s;

	if (sb_read_small(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return NULL;
	for (s = strtok(buf, " \t\r\n"); s; s = strtok(NULL, " \t\r\n"))
		if (s[0] != '#')
			return sb_arena_strdup(a, s);
	return NULL;
}

/* Follow a pyenv shim: PYENV_VERSION, else .python-version from the cwd
 * up, else $PYENV_ROOT/version; "system" means the next one on PATH. */
static const char *resolve_pyenv(struct sb_arena *a, const char *shim,
				 const char *const *envp, const char *cwd,
				 const char **err)
{
	const char *root = sb_envp_get(envp, "PYENV_ROOT");
	const char *version = sb_envp_get(envp, "PYENV_VERSION");
	const char *prog = strrchr(shim, '/') + 1;
	char *shim_dir = sb_arena_strdup(a, shim), *dir, *cut;
	const char *cand;

	*strrchr(shim_dir, '/') = '\0';
	if (!root || !*root) {
		/* the shims live in $PYENV_ROOT/shims */
		char *r = sb_arena_strdup(a, shim_dir);

		cut = strrchr(r, '/');
		if (!cut)
			return NULL;
		*cut = '\0';
		root = r;
	}
	if (version && *version)
		version = sb_arena_strndup(a, version, strcspn(version, ":"));
	for (dir = sb_arena_strdup(a, cwd); !version || !*version;) {
		version = read_version_file(
			a, sb_arena_printf(a, "%s/.python-version", dir));
		if (version || !*dir)
			break;
		cut = strrchr(dir, '/');
		if (!cut)
			break;
		*cut = '\0';
	}
	if (!version)
		version = read_version_file(
			a, sb_arena_printf(a, "%s/version", root));
	if (!version || strcmp(version, "system") == 0) {
		cand = search_path(a, prog, sb_envp_get(envp, "PATH"), shim_dir);
		if (!cand)
			*err = sb_arena_printf(a, "the pyenv shim '%s' selects "
						  "the system Python, and no "
						  "'%s' is on PATH",
					       shim, prog);
		return cand;
	}
	cand = sb_arena_printf(a, "%s/versions/%s/bin/%s", root, version, prog);
	if (!is_executable_file(cand)) {
		*err = sb_arena_printf(a, "the pyenv shim '%s' selects version "
					  "'%s', but '%s' does not exist",
				       shim, version, cand);
		return NULL;
	}
	return cand;
}

static bool is_pyenv_shim(const char *path)
{
	char buf[4096];

	if (sb_read_small(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return false;
	return strstr(buf, "pyenv") && strstr(path, "/shims/");
}

int sb_interp_find(struct sb_arena *a, const char *explicit_path,
		   const char *const *envp, const char *cwd,
		   struct sb_interp *out, const char **err)
{
	const char *path = NULL, *source = NULL, *v;
	char self[PATH_MAX], real[PATH_MAX];
	ssize_t n;

	*err = NULL;
	if (explicit_path) {
		path = explicit_path;
		source = "--python";
	} else if ((v = sb_envp_get(envp, "PYSB_PYTHON")) && *v) {
		path = v;
		source = "$PYSB_PYTHON";
	}
	if (!path) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			*strrchr(self, '/') = '\0';
			v = sb_arena_printf(a, "%s/python3", self);
			if (is_executable_file(v)) {
				path = v;
				source = "next to python-sb";
			}
		}
	}
	if (!path && (v = sb_envp_get(envp, "VIRTUAL_ENV")) && *v) {
		v = sb_arena_printf(a, "%s/bin/python", v);
		if (is_executable_file(v)) {
			path = v;
			source = "$VIRTUAL_ENV";
		}
	}
	if (!path) {
		path = search_path(a, "python3", sb_envp_get(envp, "PATH"), NULL);
		source = "PATH";
	}
	if (!path) {
		*err = "no python3 found: give --python=PATH or set "
		       "PYSB_PYTHON";
		return -1;
	}
	if (!strchr(path, '/')) {
		const char *found = search_path(a, path,
						sb_envp_get(envp, "PATH"), NULL);

		if (!found) {
			*err = sb_arena_printf(a, "'%s' (from %s) is not on "
						  "PATH", path, source);
			return -1;
		}
		path = found;
	}
	path = sb_path_join(a, cwd, path);
	if (!is_executable_file(path)) {
		*err = sb_arena_printf(a, "the interpreter '%s' (from %s) is "
					  "not an executable file",
				       path, source);
		return -1;
	}
	if (is_script(path)) {
		const char *shim = path;

		if (!is_pyenv_shim(path)) {
			*err = sb_arena_printf(
				a, "the interpreter '%s' (from %s) is a script, "
				   "not a Python binary: give --python= the "
				   "interpreter it runs",
				path, source);
			return -1;
		}
		path = resolve_pyenv(a, shim, envp, cwd, err);
		if (!path)
			return -1;
		source = sb_arena_printf(a, "%s, through the pyenv shim %s",
					 source, shim);
	}
	if (!realpath(path, real)) {
		*err = sb_arena_printf(a, "the interpreter '%s': %s", path,
				       strerror(errno));
		return -1;
	}
	out->path = path;
	out->real = sb_arena_strdup(a, real);
	out->source = source;
	return 0;
}
