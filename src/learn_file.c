/* learn_file.c - learning mode's side effects in the launcher: collect the
 * guard's records, and write the learned rules into the rule file (seed-spec
 * 4.4, 4.5): under a lock on its directory (two learning runs on one file
 * merge one after the other, neither loses rules), with a backup
 * '<name>.old[_N]', an atomic rename that keeps the permission bits, and
 * never over a file that has errors. What cannot be saved goes to stderr.
 */
#include "learn_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RULE_FILE (16u << 20)

void sb_learn_feed(struct sb_learn_session *s, const char *data, size_t len)
{
	size_t used;

	sb_buf_add(&s->pending, data, len);
	used = sb_learn_parse(s->arena, s->pending.s, s->pending.len,
			      &s->learned);
	if (used) {
		memmove(s->pending.s, s->pending.s + used,
			s->pending.len - used);
		s->pending.len -= used;
		s->pending.s[s->pending.len] = '\0';
	}
}

/* The whole file, or NULL with errno (ENOENT: no file yet). */
static char *read_text(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size > MAX_RULE_FILE) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return NULL;
	}
	*len = 0;
	while (*len < (size_t)st.st_size) {
		r = read(fd, buf + *len, (size_t)st.st_size - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		*len += (size_t)r;
	}
	buf[*len] = '\0';
	close(fd);
	return buf;
}

/* '<name>.old', else '<name>.old_1', '<name>.old_2'... (the first free) */
static char *backup_name(const char *path)
{
	char *name = malloc(strlen(path) + 32);
	struct stat st;
	int i;

	if (!name)
		return NULL;
	sprintf(name, "%s.old", path);
	for (i = 1; lstat(name, &st) == 0 && i < 100000; i++)
		sprintf(name, "%s.old_%d", path, i);
	return name;
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t r;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		int err = -errno;

		close(in);
		return err;
	}
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)r) != r) {
			r = -1;
			break;
		}
	close(in);
	if (r < 0 || fsync(out) < 0) {
		int err = -errno;

		close(out);
		unlink(to);
		return err ? err : -EIO;
	}
	return close(out) < 0 ? -errno : 0;
}

static int write_atomic(const char *path, const char *text, size_t len,
			mode_t mode)
{
	char tmp[PATH_MAX];
	size_t off = 0;
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path,
			     (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
	if (fd < 0)
		return -errno;
	/* open() applies the umask: set the previous file's bits exactly */
	if (fchmod(fd, mode & 07777) < 0)
		goto fail;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
fail: {
	int err = errno ? -errno : -EIO;

	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return err;
}
}

/* Lock the directory that holds 'path': the read-merge-write of two
 * learning runs on one file happen one after the other. */
static int lock_dir(const char *path)
{
	char *dir = strdup(path), *slash;
	int fd;

	if (!dir)
		return -1;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	fd = open(slash && *dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void date_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, n, "%Y/%m/%d at %H:%M", &tm);
}

/* What learned the rules, for "# Learned by" (seed 10.4): PYSB_LEARNED_BY
 * (a test runner sets it to the test's name), as one line of printable
 * characters; NULL when unset. */
static const char *learned_by(struct sb_arena *a, const char *const *envp)
{
	const char *v = sb_envp_get(envp, "PYSB_LEARNED_BY");
	char *t;
	size_t i;

	if (!v || !*v)
		return NULL;
	t = sb_arena_strndup(a, v, strnlen(v, 200));
	for (i = 0; t[i]; i++)
		if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
			t[i] = '?';
	return t;
}

/* Checking an existing file is about its syntax: every name resolves. */
static enum sb_resolve_status any_name(void *ctx, struct sb_arena *a,
				       const char *host, struct sb_addr **addrs,
				       size_t *n, const char **why)
{
	*addrs = sb_arena_alloc(a, sizeof(**addrs));
	(*addrs)->family = 2; /* AF_INET, 0.0.0.0 */
	*n = 1;
	return SB_RESOLVE_OK;
}

/* The learned lines alone, for stderr when the file cannot take them. */
static void dump_rules(struct sb_learn_session *s, const char *why)
{
	struct sb_learn_ctx ctx = s->ctx;
	struct sb_buf out = { 0 };
	bool added = false;
	char date[64];

	date_now(date, sizeof(date));
	ctx.date = date;
	ctx.learned_by = learned_by(s->arena, ctx.envp);
	sb_learn_merge(s->arena, "", &s->learned, &ctx, &out, &added);
	fprintf(stderr,
		"python-sb: the learned rules were NOT saved in '%s': %s.\n"
		"python-sb: here they are:\n%s",
		s->display, why, added && out.s ? out.s : "(none)\n");
	sb_buf_free(&out);
}

/* A rule must name a path that exists (the parser checks): a probe of a
 * missing file is no use, and a file written then removed stands for its
 * directory, which the writer turns into a rule only inside the program's
 * own trees. */
static void settle_files(struct sb_learn_session *s)
{
	struct sb_learned_file *f = s->learned.files.v;
	size_t i, out = 0;
	struct stat st;

	for (i = 0; i < s->learned.files.n; i++) {
		char *parent;

		if (stat(f[i].path, &st) == 0) {
			f[out++] = f[i];
			continue;
		}
		if (!f[i].write)
			continue;
		parent = sb_arena_strdup(s->arena, f[i].path);
		*strrchr(parent, '/') = '\0';
		if (!*parent || stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		f[out] = f[i];
		f[out].path = parent;
		f[out].is_dir = true;
		out++;
	}
	s->learned.files.n = out;
}

int sb_learn_save(struct sb_learn_session *s)
{
	struct sb_policy *check = NULL;
	struct sb_parse_opts o = { 0 };
	struct sb_learn_ctx ctx = s->ctx;
	struct sb_buf out = { 0 };
	char *old, *backup = NULL, date[64], why[PATH_MAX + 128];
	size_t len = 0;
	bool added = false, existed;
	mode_t mode = 0644;
	struct stat st;
	int lock, r;

	settle_files(s);
	lock = lock_dir(s->path);
	old = read_text(s->path, &len);
	existed = old != NULL;
	if (!old && errno != ENOENT) {
		snprintf(why, sizeof(why), "cannot read it: %s",
			 strerror(errno));
		goto unsaved;
	}
	if (existed) {
		/* a file with errors is never overwritten */
		o.config_path = s->path;
		o.cwd = s->ctx.cwd;
		o.envp = s->ctx.envp;
		o.resolve = any_name;
		if (sb_policy_parse(&o, &check) == 0 && check->errors.n) {
			snprintf(why, sizeof(why),
				 "it has errors (%s)", check->errors.v[0].text);
			goto unsaved;
		}
		if (stat(s->path, &st) == 0)
			mode = st.st_mode;
	}
	date_now(date, sizeof(date));
	ctx.date = date;
	ctx.learned_by = learned_by(s->arena, ctx.envp);
	sb_learn_merge(s->arena, existed ? old : NULL, &s->learned, &ctx, &out,
		       &added);
	/* a missing rule file is created even when nothing was learned: the
	 * next run enforces it (4.5 leaves an existing file untouched) */
	if (!added && existed) {
		if (!s->quiet_when_unchanged)
			fprintf(stderr,
				"\npython-sb: nothing new to learn; '%s' is "
				"unchanged.\n",
				s->display);
		r = 0;
		goto out;
	}
	if (existed) {
		backup = backup_name(s->path);
		r = backup ? copy_file(s->path, backup, mode) : -ENOMEM;
		if (r < 0) {
			snprintf(why, sizeof(why), "cannot back it up: %s",
				 strerror(-r));
			goto unsaved;
		}
	}
	r = write_atomic(s->path, out.s, out.len, mode);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot write it: %s",
			 strerror(-r));
		if (backup)
			unlink(backup);
		goto unsaved;
	}
	fprintf(stderr, "\nWrite all learning rules in '%s'.%s\n", s->display,
		strstr(out.s, "\nlearn") || sb_str_starts(out.s, "learn")
			? " [ Remove the 'learn' parameter to use the "
			  "sandboxes. ]"
			: "");
	if (backup) {
		/* named as the rule file is: relative to the cwd when below */
		size_t n = strlen(s->ctx.cwd);
		const char *shown = backup;

		if (strncmp(backup, s->ctx.cwd, n) == 0 && backup[n] == '/')
			shown = backup + n + 1;
		fprintf(stderr, "The old version is here '%s'.\n", shown);
	}
	fprintf(stderr, "Check and update this file to validate the rules.\n");
	s->saved_once = true;
	r = 0;
	goto out;
unsaved:
	dump_rules(s, why);
	r = -1;
out:
	if (lock >= 0)
		close(lock);
	free(old);
	free(backup);
	sb_buf_free(&out);
	sb_policy_free(check);
	return r;
}
