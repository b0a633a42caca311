/* learn_file.c - learning mode's side effects in the launcher: collect the
 * guard's records, and write the learned rules into the rule file
 * (py-sandboxes(5), LEARNING): under a lock on its directory (two learning runs
 * on one file merge one after the other, neither loses rules), with a backup
 * '<name>.old[_N]', an atomic rename that keeps the permission bits (never
 * wider, never set-id), and never over a file that has errors.
 *
 * The directory may be writable by a program that ran sandboxed in it, and
 * a learning run may be root: every name is opened relative to the locked
 * directory's descriptor, created with O_EXCL|O_NOFOLLOW under a random
 * temporary name, and a rule file that is anything but the user's own
 * regular file stops the save. What cannot be saved goes to stderr and the
 * run ends with 255, the old file untouched.
 */
#include "learn_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_RULE_FILE (16u << 20)
/* A record is a line of a few paths; an unended one longer than this is
 * not the guard's: dropped, so that the program cannot grow python-sb
 * without end through the record pipe. */
#define MAX_PENDING (1u << 20)

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
	if (s->pending.len > MAX_PENDING) {
		s->pending.len = 0;
		s->pending.s[0] = '\0';
	}
}

/* The rule file's directory, held open and locked for the whole save:
 * every name below is looked up relative to it, never through a path
 * that the program could have re-pointed, and nothing is followed. */
struct rule_dir {
	int fd;
	const char *dir;  /* for messages */
	const char *base; /* the rule file's name in it */
	struct stat st;   /* the rule file as found (st_mode 0: absent) */
};

#define LOCK_WAIT_SECONDS 30

/* Does the directory's name still lead to the directory held open? Moved
 * away and replaced (while the lock was awaited, or during the save), the
 * file would be written into the moved directory, not where the name
 * points: -ESTALE, nothing is saved. */
static int dir_still_named(const struct rule_dir *d)
{
	struct stat held, named;

	if (fstat(d->fd, &held) < 0)
		return -errno;
	if (lstat(d->dir, &named) < 0 || held.st_dev != named.st_dev ||
	    held.st_ino != named.st_ino)
		return -ESTALE;
	return 0;
}

/* Open and lock the directory; 0, or -1 with 'why' filled. A second
 * learning run on the same file waits its turn (bounded: a lock that is
 * never released, by a stuck run or by a program that took it, ends this
 * run with the reason instead of a hang). */
static int open_dir(struct sb_arena *a, const char *path, struct rule_dir *d,
		    bool lock, char *why, size_t n)
{
	char *dir = sb_arena_strdup(a, path), *slash = strrchr(dir, '/');
	int waited;

	d->fd = -1;
	if (!slash || !slash[1]) {
		snprintf(why, n, "it is no file name");
		return -1;
	}
	*slash = '\0';
	d->dir = *dir ? dir : "/";
	d->base = slash + 1;
	d->fd = open(d->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0) {
		snprintf(why, n, "cannot open its directory '%s': %s%s", d->dir,
			 strerror(errno),
			 errno == ELOOP ? " (a symbolic link is not "
					  "followed: name the real directory)"
					: "");
		return -1;
	}
	for (waited = 0; lock && flock(d->fd, LOCK_EX | LOCK_NB) < 0;
	     waited++) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(why, n, "cannot lock its directory '%s': %s",
				 d->dir, strerror(errno));
			return -1;
		}
		if (waited == 0)
			fprintf(stderr,
				"python-sb: waiting for the lock on '%s' "
				"(another learning run)...\n",
				d->dir);
		if (waited >= LOCK_WAIT_SECONDS * 10) {
			snprintf(why, n,
				 "its directory '%s' is locked by another "
				 "process (another learning run?) since %d s",
				 d->dir, LOCK_WAIT_SECONDS);
			return -1;
		}
		usleep(100000);
	}
	if (dir_still_named(d) < 0) {
		snprintf(why, n,
			 "its directory '%s' was replaced while python-sb "
			 "was opening it",
			 d->dir);
		return -1;
	}
	return 0;
}

/* What may be rewritten: a regular file with one link, owned by the user
 * who runs python-sb. Anything else was not made by python-sb or by its
 * user for this purpose (a link planted by a sandboxed program, a device,
 * a file of another user that root would take over) and stops the run. */
static int check_rule_file(struct rule_dir *d, char *why, size_t n)
{
	if (fstatat(d->fd, d->base, &d->st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT) {
			memset(&d->st, 0, sizeof(d->st));
			return 0;
		}
		snprintf(why, n, "cannot stat it: %s", strerror(errno));
		return -1;
	}
	if (S_ISLNK(d->st.st_mode)) {
		snprintf(why, n,
			 "it is a symbolic link, which python-sb never writes "
			 "through; replace it with the file itself");
		return -1;
	}
	if (!S_ISREG(d->st.st_mode)) {
		snprintf(why, n, "it is not a regular file");
		return -1;
	}
	if (d->st.st_nlink != 1) {
		snprintf(why, n,
			 "it has %lu hard links; python-sb rewrites only a "
			 "file with one name",
			 (unsigned long)d->st.st_nlink);
		return -1;
	}
	if (d->st.st_uid != geteuid()) {
		snprintf(why, n,
			 "it belongs to uid %u, not to uid %u who runs "
			 "python-sb; run the learning as its owner",
			 (unsigned)d->st.st_uid, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

/* The whole file, through the checked name, or NULL with errno. */
static char *read_text(const struct rule_dir *d, size_t *len)
{
	struct stat st;
	char *buf;
	ssize_t r;
	int fd = openat(d->fd, d->base,
			O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
				O_NOFOLLOW);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_dev != d->st.st_dev || st.st_ino != d->st.st_ino ||
	    (unsigned long long)st.st_size > MAX_RULE_FILE) {
		close(fd);
		errno = ESTALE;
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

static int write_all(int fd, const char *text, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	return 0;
}

/* Create 'name' in the directory, never over anything (O_EXCL: not even a
 * dangling link is followed), write 'text' and give it 'mode' (the old
 * file's permission bits at most, no set-id bits). 0, -EEXIST to try
 * another name, or -errno with nothing left behind. */
static int create_file(const struct rule_dir *d, const char *name,
		       const char *text, size_t len, mode_t mode, bool chmod)
{
	int fd = openat(d->fd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			chmod ? 0600 : 0644);
	int r;

	if (fd < 0)
		return -errno;
	r = write_all(fd, text, len);
	if (!r && chmod && fchmod(fd, mode & 0777) < 0)
		r = -errno;
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r)
		unlinkat(d->fd, name, 0);
	return r;
}

/* '<name>.old', else '<name>.old_1', '<name>.old_2'... (the first free;
 * whatever holds a name, a planted link included, is skipped). */
static char *write_backup(const struct rule_dir *d, const char *text,
			  size_t len, int *err)
{
	char *name = malloc(strlen(d->base) + 32);
	int i;

	if (!name) {
		*err = -ENOMEM;
		return NULL;
	}
	for (i = 0; i < 100000; i++) {
		if (i)
			sprintf(name, "%s.old_%d", d->base, i);
		else
			sprintf(name, "%s.old", d->base);
		*err = create_file(d, name, text, len, d->st.st_mode, true);
		if (*err != -EEXIST)
			break;
	}
	if (*err) {
		free(name);
		return NULL;
	}
	return name;
}

/* Write a temporary file under a random name, then rename it over the rule
 * file, provided the name still holds what was checked (or nothing, for a
 * new file): a swap in between stops the save instead of being followed. */
static int write_atomic(const struct rule_dir *d, const char *text,
			size_t len)
{
	bool existed = d->st.st_mode != 0;
	char tmp[64];
	struct stat now;
	uint64_t rnd;
	int r = -EEXIST, i;

	for (i = 0; i < 100 && r == -EEXIST; i++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -errno;
		snprintf(tmp, sizeof(tmp), ".py-sandboxes.%016llx.tmp",
			 (unsigned long long)rnd);
		r = create_file(d, tmp, text, len, d->st.st_mode, existed);
	}
	if (r)
		return r;
	r = dir_still_named(d);
	if (r) {
		unlinkat(d->fd, tmp, 0);
		return r;
	}
	if (existed) {
		if (fstatat(d->fd, d->base, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now.st_dev != d->st.st_dev || now.st_ino != d->st.st_ino)
			r = -ESTALE;
		else if (renameat(d->fd, tmp, d->fd, d->base) < 0)
			r = -errno;
	} else if (syscall(SYS_renameat2, d->fd, tmp, d->fd, d->base,
			   RENAME_NOREPLACE) < 0) {
		r = -errno;
		/* a file system without RENAME_NOREPLACE: a link never
		 * replaces a name either */
		if (r == -EINVAL &&
		    linkat(d->fd, tmp, d->fd, d->base, 0) == 0) {
			unlinkat(d->fd, tmp, 0);
			r = 0;
		}
	}
	if (r) {
		unlinkat(d->fd, tmp, 0);
		return r;
	}
	fsync(d->fd);
	return 0;
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
 * missing file is no use. What was written and is gone stays: the writer
 * (learn_rules.c) names what stands for it, its directory or, where no rule
 * may grant that, the entry (expose-new=). */
static void settle_files(struct sb_learn_session *s)
{
	struct sb_learned_file *f = s->learned.files.v;
	size_t i, out = 0;
	struct stat st;

	for (i = 0; i < s->learned.files.n; i++) {
		if (!f[i].write && stat(f[i].path, &st) < 0)
			continue;
		/* a directory the run made was recorded before it was one
		 * (mkdir's path): what is there now says, so that its rule
		 * covers what was written below it */
		if (lstat(f[i].path, &st) == 0 && S_ISDIR(st.st_mode))
			f[i].is_dir = true;
		f[out++] = f[i];
	}
	s->learned.files.n = out;
}

/* What a reviewer could not see as it is goes to the file as an escaped
 * comment (learn_rules.c); say so where the user is looking, too. */
static void warn_hidden(struct sb_learn_session *s)
{
	const struct sb_learned *l = &s->learned;
	const char *what[3] = { "variable", "path", "module" };
	size_t i, k, n[3] = { l->env.n, l->files.n, l->imports.n };

	for (k = 0; k < 3; k++)
		for (i = 0; i < n[k]; i++) {
			const char *name = k == 0   ? l->env.v[i]
					   : k == 1 ? l->files.v[i].path
						    : l->imports.v[i];

			if (!sb_learn_hidden_chars(name))
				continue;
			fprintf(stderr,
				"python-sb: warning: the program used a %s "
				"holding control characters, bidirectional-"
				"text marks or bytes that are not UTF-8: '%s'; "
				"it is written escaped, as a comment to review, "
				"not as a rule.\n",
				what[k], sb_learn_escape(s->arena, name));
		}
}

/* What no learned rule can grant: say so at each save, once each. */
static void warn_refused(struct sb_learn_session *s)
{
	const struct sb_learned *l = &s->learned;

	for (; s->refused_told < l->refused.n; s->refused_told++)
		fprintf(stderr,
			"python-sb: warning: learning cannot grant %s: no "
			"net= rule evaluates it, and an enforcing run refuses "
			"it unless the policy allows the whole network.\n",
			sb_learn_escape(s->arena,
					l->refused.v[s->refused_told]));
}

static const char *write_error(int err)
{
	return err == -ESTALE ? "it was replaced while python-sb was saving"
			      : strerror(-err);
}

/* Back 'old' up first (when given), then put 'out' in the file's place.
 * 0 with *backup the backup's name (or NULL), or -1 with 'why' and
 * nothing changed. */
static int replace_text(const struct rule_dir *d, const char *old,
			size_t len, const struct sb_buf *out, char **backup,
			char *why, size_t n)
{
	int r = 0;

	*backup = NULL;
	if (old) {
		*backup = write_backup(d, old, len, &r);
		if (!*backup) {
			snprintf(why, n, "cannot back it up: %s",
				 strerror(-r));
			return -1;
		}
	}
	r = write_atomic(d, out->s, out->len);
	if (r < 0) {
		snprintf(why, n, "cannot write it: %s", write_error(r));
		if (*backup) {
			unlinkat(d->fd, *backup, 0);
			free(*backup);
			*backup = NULL;
		}
		return -1;
	}
	return 0;
}

/* Open and lock the directory (unless only reading: a save renames a
 * whole file into place), check the rule file and read it when it exists
 * (*old, malloc'ed, *len bytes; NULL when absent): 0, or -1 with 'why'
 * filled. */
static int open_rules(struct sb_arena *a, const char *path, struct rule_dir *d,
		      bool lock, char **old, size_t *len, char *why, size_t n)
{
	if (open_dir(a, path, d, lock, why, n) < 0 ||
	    check_rule_file(d, why, n) < 0)
		return -1;
	if (!d->st.st_mode)
		return 0;
	*old = read_text(d, len);
	if (!*old) {
		snprintf(why, n, "cannot read it: %s", write_error(-errno));
		return -1;
	}
	return 0;
}

/* What a save held, let go (the lock with the directory). */
static void close_rules(struct rule_dir *d, char *old, char *backup,
			struct sb_buf *out)
{
	if (d->fd >= 0)
		close(d->fd);
	free(old);
	free(backup);
	sb_buf_free(out);
}

/* What a save says: where the rules went, where the old version is
 * (named as the rule file is: relative to the cwd when below). */
static void announce(struct sb_arena *a, const struct rule_dir *d,
		     const char *display, const char *cwd, const char *text,
		     const char *backup)
{
	fprintf(stderr, "\nWrite all learning rules in '%s'.%s\n", display,
		strstr(text, "\nlearn") || sb_str_starts(text, "learn")
			? " [ Remove the 'learn' parameter to use the "
			  "sandboxes. ]"
			: "");
	if (backup) {
		const char *full = sb_arena_printf(
			a, "%s/%s", strcmp(d->dir, "/") ? d->dir : "", backup);
		size_t n = strlen(cwd);
		const char *shown = full;

		if (strncmp(full, cwd, n) == 0 && full[n] == '/')
			shown = full + n + 1;
		fprintf(stderr, "The old version is here '%s'.\n", shown);
	}
	fprintf(stderr, "Check and update this file to validate the rules.\n");
}

static void remember(struct sb_learn_session *s, bool exists,
		     const char *text, size_t len)
{
	s->seen_taken = true;
	s->seen_exists = exists;
	s->seen_len = exists ? len : 0;
	s->seen = exists ? sb_arena_strndup(s->arena, text ? text : "", len)
			 : NULL;
}

int sb_learn_begin(struct sb_learn_session *s)
{
	struct sb_buf none = { 0 };
	struct rule_dir d;
	char *old = NULL, why[PATH_MAX + 256];
	size_t len = 0;
	int r = 0;

	/* what stops it here stops the save too, which says why */
	if (open_rules(s->arena, s->path, &d, false, &old, &len, why,
		       sizeof(why)) < 0) {
		r = -1;
	} else {
		remember(s, d.st.st_mode != 0, old, len);
	}
	close_rules(&d, old, NULL, &none);
	return r;
}

/* The lines of 'text' outside the learning blocks (# <learning_X> to
 * # </learning_X>), stripped: what the user wrote, which a learning run
 * never changes. */
static const char *outside_blocks(struct sb_arena *a, const char *text,
				  size_t len)
{
	struct sb_buf b = { 0 };
	const char *s = text, *end = text + len, *res;
	bool inside = false;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		char *line = sb_strip(a, s, n);

		if (sb_str_starts(line, "# <learning_"))
			inside = true;
		else if (sb_str_starts(line, "# </learning_"))
			inside = false;
		else if (!inside && *line)
			sb_buf_printf(&b, "%s\n", line);
		s += n + 1;
	}
	res = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return res;
}

/* May the learned rules be merged into the rule file as it is now? It is
 * as this run last saw it, or another learning run added to its learning
 * blocks meanwhile (two runs at once lose nothing). Anything else was
 * written by someone else, most likely the program, which ran
 * unconfined: its lines would pass for the user's own. */
static bool as_seen(struct sb_learn_session *s, const struct sb_learn_ctx *ctx,
		    bool exists, const char *text, size_t len)
{
	const char *base;
	size_t base_len;

	if (!s->seen_taken || (s->seen_exists && !exists))
		return false;
	if (!exists)
		return true;
	if (s->seen_exists && len == s->seen_len &&
	    memcmp(text, s->seen, len) == 0)
		return true;
	if (s->seen_exists) {
		base = s->seen;
		base_len = s->seen_len;
	} else {
		/* made meanwhile: a learning run makes it from the template */
		struct sb_learned none = { 0 };
		struct sb_buf t = { 0 };
		bool added;

		sb_learn_merge(s->arena, NULL, &none, ctx, &t, &added);
		base = sb_arena_strndup(s->arena, t.s ? t.s : "", t.len);
		base_len = t.len;
		sb_buf_free(&t);
	}
	return strcmp(outside_blocks(s->arena, base, base_len),
		      outside_blocks(s->arena, text, len)) == 0;
}

/* A rule file this run made where the next run reads another first (the
 * script's or module's directory, a package's: seed-spec 2.1.1, 2.1.2),
 * with rules that let the program make that other one: enforcing would stop
 * on it (policy_own.c). The file moves to the first place searched, where
 * the next run reads it first and keeps it from the program. Said either
 * way; the file stays where it is when it cannot move. */
static void move_to_shadow(struct sb_learn_session *s, const struct rule_dir *d,
			   const struct sb_buf *out)
{
	struct sb_parse_opts o = { 0 };
	struct sb_policy *check = NULL;
	struct rule_dir to = { .fd = -1 };
	struct sb_buf none = { 0 };
	const char *root = NULL, *dest = s->shadows[0], *shown;
	char *old = NULL, *backup = NULL, why[PATH_MAX + 256];
	size_t i, len = 0;

	o.config_path = s->path;
	o.cwd = s->ctx.cwd;
	o.envp = s->ctx.envp;
	o.resolve = any_name;
	o.flags = SB_PARSE_NO_OWN_FILES;
	/* as the next run reads it (where nothing is enforced, no check) */
	if (sb_policy_parse(&o, &check) == 0 && !check->errors.n &&
	    (check->provider != SB_PROVIDER_NONE || check->py_sandbox))
		for (i = 0; i < s->n_shadows && !root; i++)
			root = sb_policy_writable_root(check, s->shadows[i]);
	if (root)
		root = sb_arena_strdup(s->arena, root);
	sb_policy_free(check);
	if (!root)
		return;
	shown = sb_path_shown(dest, s->ctx.cwd);
	if (open_rules(s->arena, dest, &to, true, &old, &len, why,
		       sizeof(why)) < 0) {
		/* why says it */
	} else if (to.st.st_mode) {
		snprintf(why, sizeof(why), "it exists now (made by the program?)");
	} else if (replace_text(&to, NULL, 0, out, &backup, why,
				sizeof(why)) == 0) {
		unlinkat(d->fd, d->base, 0);
		fprintf(stderr,
			"\npython-sb: the learned rule 'expose-rw=%s' lets the "
			"program write where the next run looks for its rule "
			"file first; the rules go there, where the program "
			"cannot change them: '%s'.\n",
			root, shown);
		s->path = dest;
		s->ctx.rule_file = dest;
		s->display = shown;
		close_rules(&to, old, backup, &none);
		return;
	}
	fprintf(stderr,
		"\npython-sb: warning: the learned rule 'expose-rw=%s' lets "
		"the program write where the next run looks for its rule file "
		"first, and the rules could not be moved to '%s' (%s): the "
		"next run stops until the file is moved there, or the rule "
		"exposes less.\n",
		root, shown, why);
	close_rules(&to, old, backup, &none);
}

int sb_learn_save(struct sb_learn_session *s)
{
	struct sb_policy *check = NULL;
	struct sb_parse_opts o = { 0 };
	struct sb_learn_ctx ctx = s->ctx;
	struct sb_buf out = { 0 };
	struct rule_dir d;
	char *old = NULL, *backup = NULL, date[64], why[PATH_MAX + 256];
	size_t len = 0;
	bool added = false, existed;
	int r;

	settle_files(s);
	if (!s->saved_once)
		warn_hidden(s);
	warn_refused(s);
	if (open_rules(s->arena, s->path, &d, true, &old, &len, why,
		       sizeof(why)) < 0)
		goto unsaved;
	existed = d.st.st_mode != 0;
	date_now(date, sizeof(date));
	ctx.date = date;
	ctx.learned_by = learned_by(s->arena, ctx.envp);
	if (!as_seen(s, &ctx, existed, old, len)) {
		if (!s->seen_taken)
			snprintf(why, sizeof(why),
				 "it could not be read when the run started; "
				 "the learned rules are not merged into lines "
				 "this run did not read");
		else
			snprintf(why, sizeof(why),
				 "it was %s while the program ran, outside "
				 "the learning blocks (by the program?); the "
				 "learned rules are not merged into lines this "
				 "run did not read: check the file",
				 s->seen_exists && !existed ? "removed"
				 : !s->seen_exists	    ? "made"
							    : "changed");
		goto unsaved;
	}
	if (existed) {
		/* a file with errors is never overwritten */
		o.config_path = s->path;
		o.cwd = s->ctx.cwd;
		o.envp = s->ctx.envp;
		o.resolve = any_name;
		o.flags = SB_PARSE_NO_OWN_FILES;
		if (sb_policy_parse(&o, &check) == 0 && check->errors.n) {
			snprintf(why, sizeof(why),
				 "it has errors (%s)", check->errors.v[0].text);
			goto unsaved;
		}
	}
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
	if (replace_text(&d, existed ? old : NULL, len, &out, &backup, why,
			 sizeof(why)) < 0)
		goto unsaved;
	if (!existed && s->n_shadows)
		move_to_shadow(s, &d, &out);
	announce(s->arena, &d, s->display, s->ctx.cwd, out.s, backup);
	remember(s, true, out.s, out.len);
	s->saved_once = true;
	r = 0;
	goto out;
unsaved:
	dump_rules(s, why);
	r = -1;
out:
	close_rules(&d, old, backup, &out);
	sb_policy_free(check);
	return r;
}

int sb_learn_save_result_mode(struct sb_arena *a, const char *path,
			      const char *display, const char *cwd,
			      bool objects, bool in_force,
			      enum sb_mode_origin origin, bool fresh)
{
	struct sb_buf out = { 0 };
	struct rule_dir d;
	char *old = NULL, *backup = NULL, date[64], why[PATH_MAX + 256];
	size_t len = 0;
	int r = -1;

	if (open_rules(a, path, &d, true, &old, &len, why, sizeof(why)) < 0)
		goto unsaved;
	date_now(date, sizeof(date));
	if (!sb_learn_result_mode(old ? old : "", objects, in_force, origin,
				  date, &out)) {
		r = 0;
		goto out;
	}
	/* the learning run saved nothing (it backs up when it does) */
	if (replace_text(&d, fresh ? old : NULL, len, &out, &backup, why,
			 sizeof(why)) < 0)
		goto unsaved;
	if (fresh)
		announce(a, &d, display, cwd, out.s, backup);
	r = 0;
	goto out;
unsaved:
	fprintf(stderr, "python-sb: the result mode was NOT saved in '%s': "
			"%s.\n",
		display, why);
	r = -1;
out:
	close_rules(&d, old, backup, &out);
	return r;
}
