/* policy.c - the .py-sandboxes parser (the language of py-sandboxes(5)).
 *
 * It owns the pipeline of 2.5: lexing, include, env=/unenv=, ${} expansion,
 * the single-valued directives, provider keys, files and imports, and it
 * hands net=, python-api= and eval-* lines to their own modules. It reads
 * rule files and stats exposed paths (and, through trust.c, asks the user
 * database who is in the group of a group-writable one), nothing else: no
 * printing, no exit, no network (host names go through the injected
 * resolver). Every problem becomes one "<ref>: message" error, and all of
 * them are reported at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_registry.h"
#include "policy_internal.h"
#include "trust.h"

/* Bounds that keep hostile rule files from exhausting the parser. */
#define MAX_INCLUDE_DEPTH 32
#define MAX_FILE_SIZE (64u << 20)
/* ... and the rule file with all its includes: their sum, and how many
 * (already_loaded() compares each new one with all the others) */
#define MAX_TOTAL_SIZE MAX_FILE_SIZE
#define MAX_FILES 1024
/* include directives, repeats of a file included (each costs an lstat, a
 * realpath and a look through the files loaded) */
#define MAX_NAMED (4 * MAX_FILES)
#define ERR_TOTAL 1 /* load_file(): past MAX_TOTAL_SIZE (not an errno) */
/* read_file(): owned by another user than the one running, or root */
#define ERR_FOREIGN SB_TRUST_FOREIGN
/* read_file(): every user may write it */
#define ERR_WORLD SB_TRUST_WORLD
/* read_file(): users other than the one running may write it, through
 * its group or through an access ACL */
#define ERR_GROUP SB_TRUST_GROUP
#define ERR_ACL SB_TRUST_ACL

struct parser {
	struct sb_policy *p;
	const struct sb_parse_opts *o;
	const char *home;
	SB_VEC(struct sb_line) lines;
	bool *claimed;
	/* per line: a variable whose reference expanded to nothing because it
	 * is not set (named by the line's errors), else NULL */
	const char **unset_var;
	const char *last_unset;
	/* bytes the ${} references of the whole parse expanded to */
	size_t expanded;
	/* bytes of the rule files read */
	size_t loaded;
	/* files named: the root, each include directive, repeats included */
	size_t named;
};

static const char *const provider_names[SB_PROVIDER_COUNT] = {
	[SB_PROVIDER_NONE] = "none",
	[SB_PROVIDER_SUBPROCESS] = "subprocess",
	[SB_PROVIDER_LANDLOCK] = "landlock",
	[SB_PROVIDER_BWRAP] = "bwrap",
	[SB_PROVIDER_FIREJAIL] = "firejail",
	[SB_PROVIDER_UNSHARE] = "unshare",
	[SB_PROVIDER_QEMU] = "qemu",
	[SB_PROVIDER_AUTO] = "auto",
};

const char *sb_provider_name(enum sb_provider prov)
{
	return (unsigned)prov < SB_PROVIDER_COUNT ? provider_names[prov] : "?";
}

int sb_provider_from_name(const char *name)
{
	int i;

	for (i = 0; i < SB_PROVIDER_COUNT; i++)
		if (strcmp(provider_names[i], name) == 0)
			return i;
	return -1;
}

const char *sb_envp_get(const char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static bool ref_is_arg(struct sb_ref ref)
{
	return ref.file && strcmp(ref.file, SB_REF_ARG) == 0;
}

static bool ref_is_file(struct sb_ref ref)
{
	return ref.line > 0;
}

/* ---- paths ---- */

/* "~" and "~/x" against HOME; "~user" is left alone. */
static const char *expand_tilde(struct parser *ps, const char *path)
{
	if (path[0] != '~' || (path[1] != '\0' && path[1] != '/') || !ps->home)
		return path;
	return sb_arena_printf(ps->p->arena, "%s%s", ps->home, path + 1);
}

/* 'rel' beside the rule file that says it ('ref' names a line of a file):
 * joined to that file's directory. */
static const char *beside_rule_file(struct sb_policy *p, struct sb_ref ref,
				    const char *rel)
{
	const char *base = NULL;
	char *parent;
	size_t i;

	for (i = 0; i < p->files.n; i++)
		if (strcmp(p->files.v[i].display, ref.file) == 0)
			base = p->files.v[i].path;
	parent = sb_arena_strdup(p->arena, base ? base : p->config_path);
	*strrchr(parent, '/') = '\0';
	return sb_path_join(p->arena, *parent ? parent : "/", rel);
}

/* How a file is named in messages (2.8): relative to the cwd when below it,
 * else ~/... when below HOME, else absolute. */
static const char *display_path(struct parser *ps, const char *abs)
{
	const char *cwd = ps->o->cwd;
	size_t n = strlen(cwd);

	if (sb_path_under(abs, cwd) && strcmp(abs, cwd) != 0)
		return n == 1 ? abs + 1 : abs + n + 1;
	if (ps->home && ps->home[0] == '/' && strcmp(ps->home, "/") != 0 &&
	    sb_path_under(abs, ps->home) && strcmp(abs, ps->home) != 0)
		return sb_arena_printf(ps->p->arena, "~%s",
				       abs + strlen(ps->home));
	return abs;
}

/* os.path.relpath(abs, cwd) for messages such as "path 'data' must exist". */
static const char *relative_path(struct sb_arena *a, const char *abs,
				 const char *cwd)
{
	struct sb_buf b = { 0 };
	size_t common = 0, i;
	const char *rest, *res;

	if (strcmp(abs, cwd) == 0)
		return ".";
	/* the longest common directory prefix */
	for (i = 0; abs[i] && abs[i] == cwd[i]; i++)
		if (abs[i] == '/')
			common = i;
	if ((abs[i] == '/' && cwd[i] == '\0') ||
	    (abs[i] == '\0' && cwd[i] == '/'))
		common = i;
	if (strcmp(cwd, "/") == 0)
		common = 0;
	for (i = common; cwd[i]; i++)
		if (cwd[i] == '/' && cwd[i + 1] != '\0')
			sb_buf_puts(&b, b.len ? "/.." : "..");
	rest = abs + common;
	while (*rest == '/')
		rest++;
	if (*rest) {
		if (b.len)
			sb_buf_puts(&b, "/");
		sb_buf_puts(&b, rest);
	}
	res = sb_arena_strdup(a, b.s ? b.s : ".");
	sb_buf_free(&b);
	return res;
}

/* ---- lexing (2.2) ---- */

/* Cut a comment that starts outside quotes; a quote after a backslash does
 * not open or close a string. Returns the new length. */
static size_t comment_cut(const char *s, size_t n)
{
	char quote = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if ((c == '\'' || c == '"') && (i == 0 || s[i - 1] != '\\')) {
			if (!quote)
				quote = c;
			else if (quote == c)
				quote = 0;
		} else if (c == '#' && !quote) {
			return i;
		}
	}
	return n;
}

static void push_line(struct parser *ps, const char *text, struct sb_ref ref)
{
	struct sb_line *l = SB_VEC_PUSH(ps->p->arena, ps->lines);

	l->text = text;
	l->ref = ref;
}

static void load_file(struct parser *ps, const char *abs, const char *display,
		      const char *label, struct sb_ref from, unsigned depth);

/* include "path" (2.4): exactly that shape, else it is not an include. */
static bool parse_include(const char *s, const char **path, size_t *len)
{
	const char *q;

	if (strncmp(s, "include", 7) != 0 || !sb_is_space((unsigned char)s[7]))
		return false;
	s += 7;
	while (sb_is_space((unsigned char)*s))
		s++;
	if (*s != '"')
		return false;
	q = strchr(s + 1, '"');
	if (!q)
		return false;
	*path = s + 1;
	*len = (size_t)(q - s - 1);
	for (q++; *q; q++)
		if (!sb_is_space((unsigned char)*q))
			return false;
	return true;
}

/* Where an include's path points: a bare name sits next to the including
 * file, anything else is from the working directory after "~". */
static const char *include_abs(struct sb_arena *a, const char *incl_path,
			       const char *including_abs, const char *cwd,
			       const char *home)
{
	char *dir;

	if (!strchr(incl_path, '/')) {
		dir = sb_arena_strdup(a, including_abs);
		*strrchr(dir, '/') = '\0';
		return sb_path_join(a, *dir ? dir : "/", incl_path);
	}
	if (incl_path[0] == '~' && (!incl_path[1] || incl_path[1] == '/') &&
	    home)
		incl_path = sb_arena_printf(a, "%s%s", home, incl_path + 1);
	return sb_path_join(a, cwd, incl_path);
}

const char *sb_policy_include_target(struct sb_arena *a, const char *line,
				     const char *including_abs,
				     const char *cwd, const char *home)
{
	const char *text, *ipath;
	size_t ilen;

	if (home && !*home)
		home = NULL;
	if (sb_policy_lex_line(a, line, strlen(line), &text) !=
		    SB_LINE_INCLUDE ||
	    !parse_include(text, &ipath, &ilen) || !ilen)
		return NULL;
	return include_abs(a, sb_arena_strndup(a, ipath, ilen), including_abs,
			   cwd, home);
}

static void do_include(struct parser *ps, const char *incl_path,
		       const char *including_abs, struct sb_ref ref,
		       unsigned depth)
{
	struct sb_arena *a = ps->p->arena;
	const char *abs;

	if (!*incl_path) {
		sb_error(ps->p, ref, "In 'include \"\"', path must be set.");
		return;
	}
	abs = include_abs(a, incl_path, including_abs, ps->o->cwd, ps->home);
	if (depth >= MAX_INCLUDE_DEPTH) {
		sb_error(ps->p, ref,
			 "include \"%s\": more than %d nested includes.",
			 incl_path, MAX_INCLUDE_DEPTH);
		return;
	}
	load_file(ps, abs, display_path(ps, abs),
		  sb_arena_printf(a, "include \"%s\"", incl_path), ref,
		  depth + 1);
}

enum sb_line_kind sb_policy_lex_line(struct sb_arena *a, const char *s,
				     size_t n, const char **text)
{
	const char *ipath;
	char *line = sb_strip(a, s, n);
	size_t ilen;

	*text = line;
	if (line[0] == '#' || line[0] == '\0')
		return SB_LINE_NONE;
	n = comment_cut(line, strlen(line));
	while (n && sb_is_space((unsigned char)line[n - 1]))
		n--;
	line[n] = '\0';
	if (line[0] == '\0' || line[0] == '{')
		return SB_LINE_NONE;
	if (parse_include(line, &ipath, &ilen))
		return SB_LINE_INCLUDE;
	return SB_LINE_RULE;
}

/* The first character of the line a reviewer could not see (a tab, and
 * a CR that ends the line, are text), or NULL. */
static const char *hidden_in_line(const char *s, size_t n, unsigned *cp)
{
	const char *h;

	if (n && s[n - 1] == '\r')
		n--;
	while ((h = sb_text_hidden(s, n, false, cp)) && *h == '\t') {
		n -= (size_t)(h + 1 - s);
		s = h + 1;
	}
	return h;
}

static void lex_buffer(struct parser *ps, const char *buf, size_t len,
		       const char *abs, const char *display, unsigned depth)
{
	struct sb_arena *a = ps->p->arena;
	unsigned lineno = 0;
	const char *end = buf + len, *s = buf;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		struct sb_ref ref = { display, ++lineno };
		const char *ipath, *line, *hidden;
		enum sb_line_kind kind;
		unsigned cp;
		size_t ilen;

		if (memchr(s, '\0', n)) {
			sb_error(ps->p, ref, "the line holds a NUL byte: "
					     "this is not a text rule file.");
			s += n + 1;
			continue;
		}
		/* what a terminal or an editor would not show (a CR mid-line
		 * hides what comes before it, a bidirectional mark reorders):
		 * the file must read as it is parsed. A tab, and a CR that
		 * ends the line, are text */
		hidden = hidden_in_line(s, n, &cp);
		if (hidden) {
			sb_error(ps->p, ref,
				 "the line holds U+%04X, a character a terminal "
				 "or an editor may not show (or shows in another "
				 "order): write the rule without it.",
				 cp);
			s += n + 1;
			continue;
		}
		kind = sb_policy_lex_line(a, s, n, &line);
		s += n + 1;
		if (kind == SB_LINE_NONE)
			continue;
		if (kind == SB_LINE_INCLUDE) {
			parse_include(line, &ipath, &ilen);
			do_include(ps, sb_arena_strndup(a, ipath, ilen), abs,
				   ref, depth);
			continue;
		}
		push_line(ps, line, ref);
	}
}

static bool already_loaded(struct parser *ps, const char *canon)
{
	size_t i;

	for (i = 0; i < ps->p->files.n; i++)
		if (ps->p->files.v[i].state == SB_FILE_LOADED &&
		    strcmp(ps->p->files.v[i].path, canon) == 0)
			return true;
	return false;
}

/* A rule file is only as safe as the directories above it: one that
 * another user may change lets them replace the file (a file of the
 * running user's they made a copy of, or a directory moved in) or remove
 * it, and a missing rule file makes the next run a learning run, a
 * missing include takes its rules (its DENY rules too) with it. So every
 * directory from the file's up to / is judged (sb_trust_dirs_above()).
 * The message for its answer: */
static void dir_error(struct parser *ps, struct sb_ref at, const char *label,
		      const char *dir, int err)
{
	char msg[PATH_MAX + 512];

	sb_error(ps->p, at, "%s: %s.", label,
		 sb_trust_message(msg, sizeof(msg), "the directory", dir,
				  NULL, err,
				  "replace or remove the rule file (a "
				  "removed rule file makes the next run a "
				  "learning run)",
				  err == ERR_FOREIGN
					  ? "Move the rule file to a directory "
					    "of yours, or chown the directory"
					  : sb_trust_dir_fix(err)));
}

/* Read a whole regular file; -errno on failure, ERR_FOREIGN or ERR_WORLD
 * for a file whose rules are not the running user's: one that another
 * user owns (root's are everyone's: /etc), or that every user may write.
 * Its owner could rewrite the rules of this run at any time, after any
 * review (a project checked out by another user, a file in /tmp), and
 * the program they sandbox would run with the rights of the user who
 * runs python-sb. Judged on the file that is read (fstat), not on a path.
 * Only a regular file is opened: opening a FIFO wakes its writer, a
 * device's open() acts (a tape rewinds, a watchdog starts), so the path
 * is judged by lstat() first, and the file opened (O_NOFOLLOW) must be
 * the one judged. O_NONBLOCK, should one be swapped in all the same. */
static int read_file(struct sb_arena *a, const char *path, char **buf,
		     size_t *len)
{
	struct stat st, lst;
	size_t got = 0;
	int fd, err = 0;

	if (lstat(path, &lst) < 0)
		return -errno;
	if (S_ISDIR(lst.st_mode))
		return -EISDIR;
	if (!S_ISREG(lst.st_mode))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
				O_NOFOLLOW);
	if (fd < 0)
		return errno == ELOOP ? -ESTALE : -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
	} else if (st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
		err = -ESTALE;
	} else if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
	} else if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
	} else if ((err = sb_trust_file(fd, NULL, &st)) != 0) {
		/* err says which */
	} else if ((unsigned long long)st.st_size > MAX_FILE_SIZE) {
		err = -EFBIG;
	} else {
		*buf = sb_arena_alloc(a, (size_t)st.st_size + 1);
		while (got < (size_t)st.st_size) {
			ssize_t r = read(fd, *buf + got,
					 (size_t)st.st_size - got);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				err = -errno;
				break;
			}
			if (r == 0)
				break;
			got += (size_t)r;
		}
		*len = got;
	}
	close(fd);
	return err;
}

static const char *read_error_text(int err)
{
	switch (err) {
	case -EISDIR:
		return "it is a directory, not a rule file";
	case -EINVAL:
		return "it is not a regular file (python-sb did not open it)";
	case -ESTALE:
		return "it was replaced while python-sb opened it";
	case -EFBIG:
		return "it is larger than 64 MiB";
	default:
		return strerror(-err);
	}
}

/* The owner of a file, for a message (read_file() judged it). */
static uid_t owner_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

static gid_t group_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_gid : (gid_t)-1;
}

/* 'label' names the file in messages: 'include "x"' or the root file. */
/* The canonical spelling of 'abs' (absolute, normalised), which does not
 * exist: its longest existing ancestor through realpath, the rest as it
 * is. NULL when an entry on the way is a symbolic link that leads nowhere
 * (what it would make cannot be told). */
static const char *canon_absent(struct sb_arena *a, const char *abs)
{
	char *dir = sb_arena_strdup(a, abs), canon[PATH_MAX];
	struct stat st;

	for (;;) {
		char *slash = strrchr(dir, '/');

		if (!slash)
			return NULL;
		if (slash == dir) {
			strcpy(canon, "/");
			dir[0] = '\0';
			break;
		}
		*slash = '\0';
		if (realpath(dir, canon))
			break;
		if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			return NULL;
	}
	return sb_arena_printf(a, "%s%s", strcmp(canon, "/") ? canon : "",
			       abs + strlen(dir));
}

/* Is path inside the directory of the root rule file (the first file)? */
static bool under_root_dir(const struct sb_policy *p, const char *path)
{
	const char *root = p->files.n ? p->files.v[0].path : NULL;
	const char *slash = root ? strrchr(root, '/') : NULL;
	size_t n;

	if (!slash)
		return false;
	n = (size_t)(slash - root);
	if (n == 0)
		return true; /* a rule file in / */
	return strncmp(path, root, n) == 0 && path[n] == '/';
}

static void load_file(struct parser *ps, const char *abs, const char *display,
		      const char *label, struct sb_ref from, unsigned depth)
{
	struct sb_arena *a = ps->p->arena;
	struct sb_file *f;
	struct sb_ref at = from.file ? from : (struct sb_ref){ display, 0 };
	char canon[PATH_MAX];
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int err;

	if (ps->p->files.n >= MAX_FILES || ++ps->named > MAX_NAMED) {
		sb_error(ps->p, at, "%s: the rule file and its includes name "
			 "more than %d files (or include them more than %d "
			 "times).", label, MAX_FILES, MAX_NAMED);
		return;
	}
	if (lstat(abs, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR) {
			sb_error(ps->p, at, "%s: %s.", label, strerror(errno));
			return;
		}
		/* absent: an include is skipped, the root file means learning;
		 * kept under its canonical spelling, which the exposures are
		 * compared with (a writable tree could make it exist) */
		f = SB_VEC_PUSH(a, ps->p->files);
		f->path = canon_absent(a, abs);
		f->display = display;
		f->state = SB_FILE_ABSENT;
		f->included_from = from;
		if (f->path &&
		    (err = sb_trust_dirs_above(f->path, canon, sizeof(canon)))) {
			f->state = SB_FILE_ERROR;
			dir_error(ps, at, label, canon, err);
		} else if (!f->path) {
			f->path = abs;
			f->state = SB_FILE_ERROR;
			sb_error(ps->p, at,
				 "%s: it does not exist, and its path goes "
				 "through a symbolic link that leads nowhere, "
				 "so where it would be made cannot be known; "
				 "name the path without the link.",
				 label);
		}
		return;
	}
	if (S_ISLNK(st.st_mode)) {
		/* a link is where a program that could write next to the rule
		 * file would point it (issue 21): never read through it */
		f = SB_VEC_PUSH(a, ps->p->files);
		f->path = abs;
		f->display = display;
		f->state = SB_FILE_ERROR;
		f->included_from = from;
		sb_error(ps->p, at,
			 "%s: it is a symbolic link, which python-sb does not "
			 "follow; name the file it points to, or replace the "
			 "link with the file.",
			 label);
		return;
	}
	if (!realpath(abs, canon)) {
		sb_error(ps->p, at, "%s: %s.", label, strerror(errno));
		return;
	}
	if (already_loaded(ps, canon))
		return; /* include loops and repeats are harmless (2.4) */
	f = SB_VEC_PUSH(a, ps->p->files);
	f->path = sb_arena_strdup(a, canon);
	f->display = display;
	f->included_from = from;
	f->outside = from.file && !under_root_dir(ps->p, f->path);
	if ((err = sb_trust_dirs_above(f->path, canon, sizeof(canon))) != 0) {
		f->state = SB_FILE_ERROR;
		dir_error(ps, at, label, canon, err);
		return;
	}
	/* their sum is bounded: by the size lstat() saw, before anything is
	 * read (the first file alone: read_file()'s own bound), then by
	 * what was read */
	err = ps->loaded && (size_t)st.st_size > MAX_TOTAL_SIZE - ps->loaded
		      ? ERR_TOTAL
		      : read_file(a, canon, &buf, &len);
	if (!err && len > MAX_TOTAL_SIZE - ps->loaded)
		err = ERR_TOTAL;
	if (err) {
		f->state = SB_FILE_ERROR;
		if (err == ERR_TOTAL)
			sb_error(ps->p, at,
				 "%s: the rule file and its includes hold "
				 "more than %u MiB.",
				 label, MAX_TOTAL_SIZE >> 20);
		else if (err == ERR_FOREIGN)
			sb_error(ps->p, at,
				 "%s: it belongs to uid %lu, not to uid %lu "
				 "who runs python-sb: its owner could change "
				 "the rules of this run at any time. python-sb "
				 "takes rules only from files of the user who "
				 "runs it or of root; review it, then copy it "
				 "or chown it.",
				 label, (unsigned long)owner_of(canon),
				 (unsigned long)geteuid());
		else if (err == ERR_GROUP)
			sb_error(ps->p, at,
				 "%s: the members of its group (gid %lu) may "
				 "write it, and users other than uid %lu are "
				 "in that group: any of them could change the "
				 "rules of this run at any time. Review it, "
				 "then chmod g-w it.",
				 label, (unsigned long)group_of(canon),
				 (unsigned long)geteuid());
		else if (err == ERR_ACL)
			sb_error(ps->p, at,
				 "%s: an ACL lets other users write it: any "
				 "of them could change the rules of this run "
				 "at any time. Review it, then setfacl -b it "
				 "and chmod g-w it.",
				 label);
		else if (err == ERR_WORLD)
			sb_error(ps->p, at,
				 "%s: every user may write it: any of them "
				 "could change the rules of this run at any "
				 "time. Review it, then chmod o-w it.",
				 label);
		else
			sb_error(ps->p, at, "%s: %s.", label,
				 read_error_text(err));
		return;
	}
	ps->loaded += len;
	f->state = SB_FILE_LOADED;
	lex_buffer(ps, buf, len, canon, display, depth);
}

/* ---- ${} expansion (2.3) ---- */

/* The whole of a bad reference, "${A:B}", for the message. */
static const char *bad_reference(struct sb_arena *a, const char *start)
{
	const char *p = start + 2;
	int depth = 1;

	for (; *p && depth; p++) {
		if (*p == '{')
			depth++;
		else if (*p == '}')
			depth--;
	}
	return sb_arena_strndup(a, start, (size_t)(p - start));
}

/* Defaults nest (${A:-${B:-x}}), each level a call of expand_into(): a
 * rule file nesting thousands of them overflowed the stack (the
 * launcher died of SIGSEGV). Deeper than this is refused. */
#define MAX_DEFAULT_DEPTH 16
static const char too_deep[] = "";
/* What all the references of a parse may expand to: a 64 MiB file of
 * "${LS_COLORS}" (1.5 KB in many environments) would ask for 24 GB. */
#define MAX_EXPANDED (16u << 20)
static const char too_much[] = "";

/* Append a variable's value, counted against MAX_EXPANDED: false when it
 * would pass it. */
static bool put_value(struct parser *ps, struct sb_buf *out, const char *v,
		      size_t n)
{
	if (n > MAX_EXPANDED - ps->expanded)
		return false;
	ps->expanded += n;
	sb_buf_add(out, v, n);
	return true;
}

/* Expand from *pp into out. In a default (nested 'depth' deep), stop at the
 * '}' that closes it. Returns false and sets *bad on an invalid reference
 * (too_deep: defaults nested deeper than MAX_DEFAULT_DEPTH). */
static bool expand_into(struct parser *ps, const char **pp, struct sb_buf *out,
			unsigned depth, bool *had_ref, const char **bad)
{
	const char *p = *pp;
	bool in_default = depth > 0;

	while (*p) {
		const char *start, *name_end, *val;
		struct sb_buf def = { 0 };
		char *name;

		if (in_default && *p == '}')
			break;
		if (p[0] != '$' || p[1] != '{') {
			sb_buf_add(out, p, 1);
			p++;
			continue;
		}
		start = p;
		p += 2;
		name_end = p + strcspn(p, "{}:-");
		if (name_end == p) {
			*bad = bad_reference(ps->p->arena, start);
			return false;
		}
		name = sb_arena_strndup(ps->p->arena, p, (size_t)(name_end - p));
		p = name_end;
		*had_ref = true;
		val = sb_envp_get(ps->o->envp, name);
		if (*p == '}') {
			if (val && !put_value(ps, out, val, strlen(val))) {
				*bad = too_much;
				return false;
			}
			if (!val)
				ps->last_unset = name;
			p++;
			continue;
		}
		if (p[0] != ':' || p[1] != '-') {
			*bad = bad_reference(ps->p->arena, start);
			return false;
		}
		p += 2;
		if (depth == MAX_DEFAULT_DEPTH) {
			*bad = too_deep;
			return false;
		}
		if (!expand_into(ps, &p, &def, depth + 1, had_ref, bad)) {
			sb_buf_free(&def);
			return false;
		}
		if (*p != '}') {
			sb_buf_free(&def);
			*bad = bad_reference(ps->p->arena, start);
			return false;
		}
		p++;
		if ((val && *val && !put_value(ps, out, val, strlen(val))) ||
		    (!(val && *val) && def.len &&
		     !put_value(ps, out, def.s, def.len))) {
			sb_buf_free(&def);
			*bad = too_much;
			return false;
		}
		if (!val && !def.len)
			ps->last_unset = name;
		sb_buf_free(&def);
	}
	*pp = p;
	return true;
}

/* Returns the expansion, or NULL after recording the error. */
static const char *expand(struct parser *ps, const char *s, struct sb_ref ref,
			  bool *had_ref)
{
	struct sb_buf out = { 0 };
	const char *bad = NULL, *res;
	bool dummy = false;

	if (!strstr(s, "${")) {
		if (had_ref)
			*had_ref = false;
		return s;
	}
	if (!expand_into(ps, &s, &out, 0, had_ref ? had_ref : &dummy,
			 &bad)) {
		if (bad == too_deep)
			sb_error(ps->p, ref,
				 "Variable defaults nested more than %d deep "
				 "(${A:-${B:-...}}): write the rule with fewer "
				 "levels",
				 MAX_DEFAULT_DEPTH);
		else if (bad == too_much)
			sb_error(ps->p, ref,
				 "Variable references expand to more than %u "
				 "MiB in all: the rule file is refused",
				 MAX_EXPANDED >> 20);
		else
			sb_error(ps->p, ref,
				 "Invalid variable reference '%s', use ${NAME} "
				 "or ${NAME:-default}",
				 bad);
		sb_buf_free(&out);
		return NULL;
	}
	res = sb_arena_strndup(ps->p->arena, out.s ? out.s : "", out.len);
	sb_buf_free(&out);
	return res;
}

/* ---- the lines ---- */

static void split_key(struct sb_arena *a, struct sb_line *l)
{
	const char *eq = strchr(l->text, '=');

	if (!eq) {
		l->key = l->text;
		l->value = NULL;
		return;
	}
	l->key = sb_arena_strndup(a, l->text, (size_t)(eq - l->text));
	l->value = eq + 1;
}

/* ---- env= / unenv= (2.6.2) ---- */

struct env_entry {
	const char *name, *value;
	struct sb_ref ref;
	bool exact;
};

struct env_vec {
	struct env_entry *v;
	size_t n, cap;
};

static void env_set(struct sb_policy *p, struct env_vec *vec,
		    const char *name, const char *value, struct sb_ref ref,
		    bool exact)
{
	struct env_entry *e;
	size_t i;

	for (i = 0; i < vec->n; i++) {
		e = &vec->v[i];
		if (strcmp(e->name, name) != 0)
			continue;
		/* an exact rule beats a wildcard one whatever their order; among
		 * equals the command line wins, then the later line */
		if (e->exact && !exact)
			return;
		if (e->exact == exact && ref_is_arg(e->ref) && !ref_is_arg(ref))
			return;
		e->value = value;
		e->ref = ref;
		e->exact = exact;
		return;
	}
	e = SB_VEC_PUSH(p->arena, *vec);
	e->name = name;
	e->value = value;
	e->ref = ref;
	e->exact = exact;
}

static void stage_env(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	struct env_vec vars = { 0 };
	SB_VEC(const char *) unset = { 0 };
	size_t i, j;

	for (i = 0; i < ps->lines.n; i++) {
		struct sb_line *l = &ps->lines.v[i];
		const char *eq, *name, *val, *wild_self;
		bool had_ref = false;

		if (strcmp(l->key, "unenv") == 0 && l->value) {
			ps->claimed[i] = true;
			name = sb_strip(a, l->value, strlen(l->value));
			if (!*name)
				sb_error(p, l->ref,
					 "In '%s', the variable name must be "
					 "set.",
					 l->text);
			else
				*SB_VEC_PUSH(a, unset) = name;
			continue;
		}
		if (strcmp(l->key, "env") != 0 || !l->value)
			continue;
		ps->claimed[i] = true;
		eq = strchr(l->value, '=');
		if (!eq) {
			sb_error(p, l->ref, "Detect a missing '=' in rule: %s.",
				 l->text);
			continue;
		}
		name = sb_arena_strndup(a, l->value, (size_t)(eq - l->value));
		if (!*name) {
			sb_error(p, l->ref,
				 "In '%s', the variable name must be set.",
				 l->text);
			continue;
		}
		if (!strchr(name, '*')) {
			val = expand(ps, eq + 1, l->ref, &had_ref);
			/* a reference that expands to nothing creates nothing,
			 * so os.getenv(NAME, default) sees the default */
			if (val && !(had_ref && !*val))
				env_set(p, &vars, name, val, l->ref,
					true);
			continue;
		}
		/* NAME is a glob over the host's variable names */
		wild_self = sb_arena_printf(a, "${%s}", name);
		if (strcmp(eq + 1, wild_self) == 0) {
			val = NULL;
		} else {
			val = expand(ps, eq + 1, l->ref, &had_ref);
			if (!val)
				continue;
		}
		for (j = 0; ps->o->envp && ps->o->envp[j]; j++) {
			const char *hv = ps->o->envp[j], *heq = strchr(hv, '=');
			const char *hname;

			if (!heq)
				continue;
			hname = sb_arena_strndup(a, hv, (size_t)(heq - hv));
			if (!sb_glob_star_match(name, hname))
				continue;
			if (!val && !heq[1])
				continue; /* empty host values are skipped */
			env_set(p, &vars, hname, val ? val : heq + 1,
				l->ref, false);
		}
	}
	/* unenv= wins wherever it is written */
	for (i = 0; i < vars.n; i++) {
		struct sb_env_var *v;
		bool removed = false;

		for (j = 0; j < unset.n && !removed; j++)
			removed = sb_glob_star_match(unset.v[j], vars.v[i].name);
		if (removed)
			continue;
		v = SB_VEC_PUSH(a, p->env);
		v->name = vars.v[i].name;
		v->value = vars.v[i].value;
		v->ref = vars.v[i].ref;
	}
}

/* ---- single-valued directives (2.6.9 - 2.6.15, 2.7) ---- */

enum single {
	S_OS_SANDBOX,
	S_PY_SANDBOX,
	S_RESULT_GUARD,
	S_RESULT_MODE,
	S_PORT,
	S_LEARN,
	S_LOG_FILE,
	S_LOG_STDERR,
	S_LOG_MAX_SIZE,
	S_LIMIT, /* S_LIMIT + enum sb_limit: limit-memory... */
	S_COUNT = S_LIMIT + SB_LIMIT_COUNT
};

static const char *const single_keys[S_COUNT] = {
	"os-sandbox", "py-sandbox", "remote-result-guard",
	"remote-result-mode", "port", "learn", "log-file", "log-stderr",
	"log-max-size", "limit-memory", "limit-cpu", "limit-time", "limit-processes",
	"limit-file-size", "limit-open-files",
};

const char *sb_limit_key(enum sb_limit l)
{
	return (unsigned)l < SB_LIMIT_COUNT ? single_keys[S_LIMIT + l] : "?";
}

/* "", true, 1 (and on) / false, none, 0 (and off) */
static int parse_bool(const char *v, bool on_off)
{
	if (!*v || sb_str_ieq(v, "true") || strcmp(v, "1") == 0 ||
	    (on_off && sb_str_ieq(v, "on")))
		return 1;
	if (sb_str_ieq(v, "false") || sb_str_ieq(v, "none") ||
	    strcmp(v, "0") == 0 || (on_off && sb_str_ieq(v, "off")))
		return 0;
	return -1;
}

/* A boolean single-valued directive: the value into *out and its ref, or
 * "Invalid value 'v' for key. Use <use>." */
static void apply_bool(struct sb_policy *p, const struct sb_line *l,
		       const char *v, const char *key, bool on_off,
		       const char *use, bool *out, struct sb_ref *ref)
{
	int b = parse_bool(v, on_off);

	if (b < 0) {
		sb_error(p, l->ref, "Invalid value '%s' for %s. Use %s.", v,
			 key, use);
		return;
	}
	*out = b;
	*ref = l->ref;
}

static void apply_single(struct parser *ps, enum single s,
			 const struct sb_line *l)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *v = sb_strip(a, l->value, strlen(l->value));
	char *lower, *end;
	int prov;
	long port;
	size_t i;

	switch (s) {
	case S_OS_SANDBOX:
		lower = sb_arena_strdup(a, v);
		for (i = 0; lower[i]; i++)
			if (lower[i] >= 'A' && lower[i] <= 'Z')
				lower[i] += 'a' - 'A';
		prov = sb_provider_from_name(lower);
		if (prov < 0) {
			sb_error(p, l->ref, "Invalid os-sandbox '%s'.", v);
			return;
		}
		p->provider = (enum sb_provider)prov;
		p->provider_ref = l->ref;
		return;
	case S_PY_SANDBOX:
		apply_bool(p, l, v, "py-sandbox", false, "true or false",
			   &p->py_sandbox, &p->py_sandbox_ref);
		return;
	case S_RESULT_GUARD:
		apply_bool(p, l, v, "remote-result-guard", true,
			   "true or false", &p->result_guard,
			   &p->result_guard_ref);
		return;
	case S_LOG_STDERR:
		apply_bool(p, l, v, "log-stderr", true, "on or off",
			   &p->log_stderr, &p->log_stderr_ref);
		return;
	case S_LOG_MAX_SIZE:
		if (sb_parse_size(p, l, "log-max-size", &p->log_max) == 0)
			p->log_max_ref = l->ref;
		return;
	case S_RESULT_MODE:
		if (sb_str_ieq(v, "objects") || sb_str_ieq(v, "default")) {
			p->result_mode = SB_RESULT_OBJECTS;
		} else if (sb_str_ieq(v, "data-only") ||
			   sb_str_ieq(v, "data_only")) {
			p->result_mode = SB_RESULT_DATA_ONLY;
		} else {
			sb_error(p, l->ref,
				 "Invalid value '%s' for remote-result-mode. "
				 "Use objects or data-only.",
				 v);
			return;
		}
		p->result_mode_ref = l->ref;
		return;
	case S_PORT:
		errno = 0;
		port = strtol(v, &end, 10);
		if (!*v || *end || errno || port < -1 || port > 65535) {
			sb_error(p, l->ref, "Port must be a positive value");
			return;
		}
		p->port = (int)port;
		p->port_ref = l->ref;
		return;
	case S_LEARN:
	case S_LOG_FILE:
		break;
	default:
		sb_parse_limit(p, (enum sb_limit)(s - S_LIMIT), l);
		break;
	}
}

/* learn=<file>, learn= and the learn=false lock (2.6.15, 2.11). */
static void apply_learn(struct parser *ps, const struct sb_line *l)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *v = sb_strip(a, l->value, strlen(l->value));
	const char *path;
	char *parent;
	struct stat st;

	if (sb_str_ieq(v, "true") || sb_str_ieq(v, "false") ||
	    strcmp(v, "0") == 0 || strcmp(v, "1") == 0) {
		sb_error(p, l->ref,
			 "Invalid value '%s' for 'learn'. Use the filename "
			 "instead.",
			 v);
		return;
	}
	if (!*v) {
		/* a bare --learn: into the rule file itself */
		path = p->config_path;
	} else if (!strchr(v, '/') && ref_is_file(l->ref)) {
		/* a bare name sits next to the rule file that says it */
		path = beside_rule_file(p, l->ref, v);
	} else {
		path = sb_path_join(a, ps->o->cwd, expand_tilde(ps, v));
	}
	parent = sb_arena_strdup(a, path);
	*strrchr(parent, '/') = '\0';
	if (stat(*parent ? parent : "/", &st) < 0 || !S_ISDIR(st.st_mode)) {
		sb_error(p, l->ref,
			 "Invalid value '%s' for 'learn'. The parent path must "
			 "exist.",
			 v);
		return;
	}
	p->learn_path = path;
	p->learn_ref = l->ref;
}

/* log-file=<file>: where the denial log goes. The launcher opens it before
 * the sandbox is applied; here it only has to name a file in a directory
 * that exists. Whether the program could write to it is checked once the
 * exposures are known (check_log_file). A relative name is relative to the
 * rule file that says it, or to the working directory for an argument. */
static void apply_log(struct parser *ps, const struct sb_line *l)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *v = sb_strip(a, l->value, strlen(l->value));
	const char *path, *last;
	char *parent, real[PATH_MAX];
	struct stat st;

	if (!*v) {
		sb_error(p, l->ref,
			 "Invalid value '' for 'log-file'. Use the name of "
			 "the file the denials are written to.");
		return;
	}
	v = expand_tilde(ps, v);
	if (v[0] != '/' && ref_is_file(l->ref))
		path = beside_rule_file(p, l->ref, v);
	else
		path = sb_path_join(a, ps->o->cwd, v);
	if (ps->o->flat) {
		/* the launcher checked it and holds it open already */
		p->log_path = path;
		p->log_ref = l->ref;
		return;
	}
	p->log_lexical = path;
	last = strrchr(path, '/') + 1;
	if (!*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0) {
		sb_error(p, l->ref,
			 "Invalid value '%s' for 'log-file'. It must name a "
			 "file, not a directory.",
			 l->value);
		return;
	}
	parent = sb_arena_strndup(a, path, (size_t)(last - path));
	if (!realpath(parent, real) || stat(real, &st) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		sb_error(p, l->ref,
			 "Invalid value '%s' for 'log-file'. The parent path "
			 "must exist.",
			 l->value);
		return;
	}
	path = sb_path_join(a, real, last);
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		sb_error(p, l->ref,
			 "Invalid value '%s' for 'log-file'. '%s' is %s.",
			 l->value, path,
			 S_ISDIR(st.st_mode) ? "a directory"
			 : S_ISLNK(st.st_mode)
				 ? "a symbolic link, which is not followed"
				 : "not a regular file");
		return;
	}
	p->log_path = path;
	p->log_ref = l->ref;
}

/* The program must not be able to write the log by its path: no expose-rw=
 * may cover it (Landlock's rights add up, so an expose-ro= nearer to it
 * does not take away the write right of an expose-rw= above it), neither
 * where it resolves to nor where it is written: a directory on the way
 * that lies in such a tree can be re-pointed by the program (a link to
 * anywhere, which python-sb, perhaps as root, would then write through). */
static void check_log_file(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	const char *paths[2];
	size_t i, k;

	if (!p->log_path || ps->o->flat)
		return;
	paths[0] = p->log_path;
	paths[1] = p->log_lexical ? p->log_lexical : p->log_path;
	for (i = 0; i < p->exposes.n; i++) {
		const struct sb_expose *e = &p->exposes.v[i];

		if (e->mode != SB_EXPOSE_RW)
			continue;
		for (k = 0; k < 2; k++) {
			if (!sb_path_under(paths[k], e->path))
				continue;
			sb_error(p, p->log_ref,
				 "The log file '%s' is inside '%s', which "
				 "rule '%s' from %s lets the program write: "
				 "it could forge or erase the log. Put the "
				 "log file outside every expose-rw= tree.",
				 paths[k], e->path, e->rule,
				 sb_ref_format(p->arena, e->ref));
			return;
		}
	}
}

struct idx_vec {
	size_t *v;
	size_t n, cap;
};

static void stage_singles(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	size_t i, k;

	for (k = 0; k < S_COUNT; k++) {
		struct idx_vec from_arg = { 0 }, from_file = { 0 }, locks = { 0 };
		struct idx_vec *use;
		const char *what = single_keys[k];

		for (i = 0; i < ps->lines.n; i++) {
			struct sb_line *l = &ps->lines.v[i];

			if (ps->claimed[i] || !l->value ||
			    strcmp(l->key, single_keys[k]) != 0)
				continue;
			ps->claimed[i] = true;
			if (k == S_LEARN && ref_is_file(l->ref) &&
			    sb_str_ieq(sb_strip(a, l->value, strlen(l->value)),
				       "false"))
				*SB_VEC_PUSH(a, locks) = i;
			else if (ref_is_file(l->ref))
				*SB_VEC_PUSH(a, from_file) = i;
			else
				*SB_VEC_PUSH(a, from_arg) = i;
		}
		if (k == S_LEARN && locks.n) {
			if (locks.n > 1) {
				struct sb_ref *refs = sb_arena_alloc(
					a, locks.n * sizeof(*refs));

				for (i = 0; i < locks.n; i++)
					refs[i] = ps->lines.v[locks.v[i]].ref;
				sb_error_at_refs(p, refs, locks.n,
						 "Multiple learn parameters.");
			}
			p->locked = true;
			p->lock_ref = ps->lines.v[locks.v[0]].ref;
		}
		/* the command line wins over any number of file lines; the
		 * same value given twice there is no conflict */
		use = from_arg.n ? &from_arg : &from_file;
		if (use->n > 1 && from_arg.n) {
			const char *first = ps->lines.v[use->v[0]].value;

			for (i = 1; i < use->n; i++)
				if (strcmp(ps->lines.v[use->v[i]].value,
					   first) != 0)
					break;
			if (i == use->n)
				use->n = 1;
		}
		if (use->n > 1) {
			struct sb_ref *refs =
				sb_arena_alloc(a, use->n * sizeof(*refs));

			for (i = 0; i < use->n; i++)
				refs[i] = ps->lines.v[use->v[i]].ref;
			if (k == S_LEARN)
				what = "learning_path";
			sb_error_at_refs(p, refs, use->n,
					 "Multiple %s parameters.", what);
			continue;
		}
		if (use->n == 1) {
			if (k == S_LEARN)
				apply_learn(ps, &ps->lines.v[use->v[0]]);
			else if (k == S_LOG_FILE)
				apply_log(ps, &ps->lines.v[use->v[0]]);
			else
				apply_single(ps, (enum single)k,
					     &ps->lines.v[use->v[0]]);
		}
	}
}

/* ---- provider keys (2.6.14) ---- */

static void stage_provider_keys(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	size_t i;

	for (i = 0; i < ps->lines.n; i++) {
		struct sb_line *l = &ps->lines.v[i];
		const char *dot;
		struct sb_provider_opt *o;
		char *prov;
		int id;

		if (ps->claimed[i] || !l->value || !(dot = strchr(l->key, '.')))
			continue;
		ps->claimed[i] = true;
		prov = sb_arena_strndup(a, l->key, (size_t)(dot - l->key));
		id = sb_provider_from_name(prov);
		if (id < 0) {
			sb_error(p, l->ref,
				 "In '%s', unknown provider '%s'. Provider "
				 "options are <provider>.<key>=<value> with a "
				 "provider among bwrap, firejail, unshare and "
				 "qemu.",
				 l->text, prov);
			continue;
		}
		if (id != SB_PROVIDER_BWRAP && id != SB_PROVIDER_FIREJAIL &&
		    id != SB_PROVIDER_UNSHARE && id != SB_PROVIDER_QEMU) {
			sb_error(p, l->ref,
				 "In '%s', the provider '%s' takes no options.",
				 l->text, prov);
			continue;
		}
		if (!dot[1]) {
			sb_error(p, l->ref, "In '%s', the option name is empty.",
				 l->text);
			continue;
		}
		o = SB_VEC_PUSH(a, p->provider_opts);
		o->provider = (enum sb_provider)id;
		o->key = dot + 1;
		if (id == SB_PROVIDER_QEMU) {
			/* qemu's keys are written with underscores, which a
			 * command-line option turns into dashes
			 * (--qemu.use_kvm=no is the rule qemu.use-kvm=no):
			 * both spellings name one key */
			char *k = sb_arena_strdup(a, dot + 1), *c;

			for (c = k; *c; c++)
				if (*c == '-')
					*c = '_';
			o->key = k;
		}
		o->value = l->value;
		o->rule = l->text;
		o->ref = l->ref;
	}
}

/* ---- files (2.6.3) ---- */

/* A relative ignore= pattern is matched against the names of a path's
 * components, which hold no '/': one with a slash (./secret.pem, ~/.ssh,
 * logs/) would hide nothing while the file says it hides something.
 * Refused, naming the two forms that hide what was meant. */
static void ignore_with_slash(struct parser *ps, const struct sb_line *l)
{
	struct sb_arena *a = ps->p->arena;
	const char *v = l->value, *name, *abs;
	size_t n = strlen(v);
	char *trim = sb_arena_strdup(a, v);

	while (n > 1 && trim[n - 1] == '/')
		trim[--n] = '\0';
	name = strrchr(trim, '/') ? strrchr(trim, '/') + 1 : trim;
	abs = expand_tilde(ps, trim);
	if (abs[0] != '/')
		abs = sb_path_join(a, ps->o->cwd,
				   strncmp(abs, "./", 2) == 0 ? abs + 2 : abs);
	sb_error(ps->p, l->ref,
		 "In '%s', a relative pattern is matched against file names, "
		 "which hold no '/': it would hide nothing. Write the path "
		 "absolute (ignore=%s) or a name alone (ignore=%s).",
		 l->text, abs, *name ? name : "*");
}

/* The exposure rule 'l' makes, of canonical path 'canon'. */
static struct sb_expose *push_expose(struct sb_policy *p,
				     const struct sb_line *l,
				     const char *canon,
				     enum sb_expose_mode mode, bool is_dir)
{
	struct sb_expose *e = SB_VEC_PUSH(p->arena, p->exposes);

	memset(e, 0, sizeof(*e));
	e->path = sb_arena_strdup(p->arena, canon);
	e->rule = l->text;
	e->ref = l->ref;
	e->mode = mode;
	e->is_dir = is_dir;
	return e;
}

/* expose-new=PATH: the entry need not exist, its directory must. The
 * directory is made canonical, the last component is kept as written (a
 * symbolic link by that name is refused: the rule names the entry, never
 * what a link leads to). */
static void parse_entry(struct parser *ps, const struct sb_line *l,
			const char *v, const char *abs, bool made)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *norm = sb_path_normalize(a, abs), *slash, *name;
	const char *written = strrchr(v, '/');
	char canon[PATH_MAX];
	struct sb_expose *e;
	struct stat st;

	/* as written: "." or "dir/.." names no entry of its own */
	written = written ? written + 1 : v;
	slash = strrchr(norm, '/');
	name = slash ? slash + 1 : norm;
	if (!slash || !*name || !*written || !strcmp(written, ".") ||
	    !strcmp(written, "..") || !strcmp(v, "~")) {
		sb_error(p, l->ref,
			 "In '%s', path must name an entry in a directory.",
			 l->text);
		return;
	}
	if (!realpath(slash == norm ? "/"
				    : sb_arena_strndup(a, norm,
						       (size_t)(slash - norm)),
		      canon) ||
	    stat(canon, &st) < 0 || !S_ISDIR(st.st_mode)) {
		sb_error(p, l->ref,
			 "In '%s', the directory that holds '%s' must exist.",
			 l->text, name);
		return;
	}
	if (strlen(canon) + strlen(name) + 2 > PATH_MAX) {
		sb_error(p, l->ref, "In '%s', path is invalid.", l->text);
		return;
	}
	if (made) {
		const char *dir = sb_arena_strdup(a, canon);

		if (strcmp(canon, "/") != 0)
			strcat(canon, "/");
		strcat(canon, name);
		e = push_expose(p, l, canon, SB_EXPOSE_RW, true);
		e->entry = true;
		e->made = true;
		e->made_dir = dir;
		e->pattern = sb_arena_strdup(a, name);
		return;
	}
	if (strcmp(canon, "/") != 0)
		strcat(canon, "/");
	strcat(canon, name);
	if (lstat(canon, &st) == 0 && S_ISLNK(st.st_mode)) {
		sb_error(p, l->ref,
			 "In '%s', '%s' is a symbolic link: name what it "
			 "leads to with expose-rw=.",
			 l->text, canon);
		return;
	}
	/* it covers what the program makes below it */
	e = push_expose(p, l, canon, SB_EXPOSE_RW, true);
	e->entry = true;
}

static void parse_expose(struct parser *ps, const struct sb_line *l,
			 enum sb_expose_mode mode, bool entry, bool made)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *v = sb_strip(a, l->value, strlen(l->value));
	const char *abs;
	char canon[PATH_MAX];
	struct stat st;

	if (strchr(v, ',')) {
		sb_error(p, l->ref,
			 "In '%s', expected a single path (no comma).",
			 l->text);
		return;
	}
	if (!*v) {
		sb_error(p, l->ref, "In '%s', path must be set.", l->text);
		return;
	}
	abs = sb_path_join(a, ps->o->cwd, expand_tilde(ps, v));
	if (entry) {
		parse_entry(ps, l, v, abs, made);
		return;
	}
	if (!realpath(abs, canon)) {
		/* a path written absolute is shown absolute */
		if (errno == ENOENT)
			sb_error(p, l->ref, "In '%s', path '%s' must exist.",
				 l->text,
				 expand_tilde(ps, v)[0] == '/'
					 ? abs
					 : relative_path(a, abs, ps->o->cwd));
		else
			sb_error(p, l->ref, "In '%s', path is invalid.",
				 l->text);
		return;
	}
	if (stat(canon, &st) < 0) {
		sb_error(p, l->ref, "In '%s', path is invalid.", l->text);
		return;
	}
	if (mode == SB_EXPOSE_LIST && !S_ISDIR(st.st_mode)) {
		sb_error(p, l->ref, "In '%s', path must be a directory.",
			 l->text);
		return;
	}
	if (strcmp(abs, canon))
		push_expose(p, l, canon, mode, S_ISDIR(st.st_mode))->spelled =
			abs;
	else
		push_expose(p, l, canon, mode, S_ISDIR(st.st_mode));
}

static int cmp_expose_path(const void *x, const void *y)
{
	const struct sb_expose *a = x, *b = y;
	size_t la = strlen(a->path), lb = strlen(b->path);

	/* longest first, so that the first match is the most specific */
	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(a->path, b->path);
}

/* The same path twice in one mode is one rule; in both modes an error,
 * but for expose-list=, which the other two include. */
static void finish_exposes(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	size_t i, j, out = 0;

	for (i = 0; i < p->exposes.n; i++) {
		struct sb_expose *e = &p->exposes.v[i];
		bool drop = false;

		for (j = 0; j < out && !drop; j++) {
			struct sb_expose *k = &p->exposes.v[j];

			/* expose-made=./d/x and a file named "x": two rules */
			if (strcmp(k->path, e->path) != 0 || k->made != e->made)
				continue;
			drop = true;
			/* expose-list= is part of both others: the wider stays */
			if (k->mode == SB_EXPOSE_LIST && e->mode != k->mode)
				*k = *e;
			else if (k->mode != e->mode && e->mode != SB_EXPOSE_LIST)
				sb_error(p, e->ref,
					 "In '%s', invalidate another rule "
					 "from '%s'.",
					 e->rule, sb_ref_format(p->arena, k->ref));
		}
		if (!drop)
			p->exposes.v[out++] = *e;
	}
	p->exposes.n = out;
	if (out > 1)
		qsort(p->exposes.v, p->exposes.n, sizeof(*p->exposes.v),
		      cmp_expose_path);
}

/* ---- imports (2.6.5) ---- */

static bool is_module_name(const char *s)
{
	bool start = true;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		/* Not only identifiers: the import system takes '-'
		 * (_sysconfigdata__linux_x86_64-linux-gnu) and a leading
		 * digit (mypyc's 81d243bd2c585b0f4821__mypyc), imported
		 * through the C API */
		if (!(c == '_' || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || c >= 0x80 ||
		      (c >= '0' && c <= '9') || (!start && c == '-')))
			return false;
		start = false;
	}
	return !start;
}

static void parse_import(struct parser *ps, const struct sb_line *l)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *s = l->value;
	bool any = false;

	while (*s || !any) {
		size_t n = strcspn(s, ",");
		char *name = sb_strip(a, s, n);
		struct sb_import *im;

		s += n;
		if (*name) {
			any = true;
			if (strcmp(name, "*") == 0) {
				p->import_all = true;
			} else if (!is_module_name(name)) {
				sb_error(p, l->ref,
					 "In '%s', '%s' is not a module name.",
					 l->text, name);
			} else if (strchr(name, '.')) {
				sb_warning(p, l->ref,
					   "In '%s', '%s' never matches: "
					   "rules name top-level modules, use "
					   "'%.*s' instead.",
					   l->text, name,
					   (int)strcspn(name, "."), name);
			} else {
				im = SB_VEC_PUSH(a, p->imports);
				im->name = name;
				im->ref = l->ref;
			}
		}
		if (!*s)
			break;
		s++;
	}
	if (!any)
		sb_error(p, l->ref, "In '%s', a module name must be set.",
			 l->text);
}

/* ---- the other directives, and what is left ---- */

static const struct {
	const char *key;
	const char *hint;
} historical[] = {
	{ "set-env", "Use 'env=' instead." },
	{ "--set-env", "Use 'env=' instead." },
	{ "--unset-env", "Use 'unenv=' instead." },
	{ "bind", "Paths are not remapped: use 'expose-rw=' or 'expose-ro='." },
	{ "ro-bind", "Paths are not remapped: use 'expose-ro='." },
	{ "--bind", "Paths are not remapped: use 'expose-rw=' or 'expose-ro='." },
	{ "--ro-bind", "Paths are not remapped: use 'expose-ro='." },
	{ "--ignore", "Use 'ignore=' instead." },
	{ "import", "Use 'python-import=' instead." },
	{ "os-provider", "Use 'os-sandbox=' instead." },
	{ "lock", "Use 'learn=false' instead." },
};

/* The next line from *i on that no stage has claimed, with a value and the
 * key 'key' (with 'prefix': a key starting with it), now claimed; *i moves
 * past it. NULL when none is left. */
static const struct sb_line *claim_next(struct parser *ps, size_t *i,
					const char *key, bool prefix)
{
	for (; *i < ps->lines.n; (*i)++) {
		const struct sb_line *l = &ps->lines.v[*i];

		if (ps->claimed[*i] || !l->value)
			continue;
		if (prefix ? sb_str_starts(l->key, key)
			   : strcmp(l->key, key) == 0) {
			ps->claimed[(*i)++] = true;
			return l;
		}
	}
	return NULL;
}

static void stage_directives(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	const struct sb_line *line;
	size_t i, k;

	/* net= first, then files, python-api, python-import, eval-* (2.5) */
	for (i = 0; (line = claim_next(ps, &i, "net", false));)
		sb_parse_net(p, ps->o, line);
	sb_net_finish(p);
	for (i = 0; i < ps->lines.n; i++) {
		struct sb_line *l = &ps->lines.v[i];
		struct sb_ignore *ig;

		if (ps->claimed[i] || !l->value)
			continue;
		if (strcmp(l->key, "expose-ro") == 0) {
			parse_expose(ps, l, SB_EXPOSE_RO, false, false);
		} else if (strcmp(l->key, "expose-rw") == 0) {
			parse_expose(ps, l, SB_EXPOSE_RW, false, false);
		} else if (strcmp(l->key, "expose-new") == 0) {
			parse_expose(ps, l, SB_EXPOSE_RW, true, false);
		} else if (strcmp(l->key, "expose-made") == 0) {
			parse_expose(ps, l, SB_EXPOSE_RW, true, true);
		} else if (strcmp(l->key, "expose-list") == 0) {
			parse_expose(ps, l, SB_EXPOSE_LIST, false, false);
		} else if (strcmp(l->key, "ignore") == 0) {
			if (!*l->value) {
				sb_error(p, l->ref,
					 "In '%s', a pattern must be set.",
					 l->text);
			} else if (l->value[0] != '/' &&
				   strchr(l->value, '/')) {
				ignore_with_slash(ps, l);
			} else {
				ig = SB_VEC_PUSH(p->arena, p->ignores);
				ig->pattern = l->value;
				ig->rule = l->text;
				ig->ref = l->ref;
			}
		} else {
			continue;
		}
		ps->claimed[i] = true;
	}
	finish_exposes(ps);
	for (i = 0; (line = claim_next(ps, &i, "python-api", false));)
		sb_parse_api(p, line);
	sb_api_finish(p);
	for (i = 0; (line = claim_next(ps, &i, "python-import", false));)
		parse_import(ps, line);
	for (i = 0; (line = claim_next(ps, &i, "eval-", true));)
		sb_parse_eval(p, line);
	sb_eval_finish(p);
	for (i = 0; i < ps->lines.n; i++) {
		struct sb_line *l = &ps->lines.v[i];
		const char *hint = NULL;

		if (ps->claimed[i])
			continue;
		for (k = 0; k < SB_ARRAY_LEN(historical); k++)
			if (strcmp(l->key, historical[k].key) == 0)
				hint = historical[k].hint;
		if (hint)
			sb_error(p, l->ref, "Invalid rule '%s'. %s", l->text,
				 hint);
		else
			sb_error(p, l->ref, "Invalid rule '%s'", l->text);
	}
}

/* A grant of eval/exec/compile sends them to the raw builtins; eval-* rules
 * would then guard nothing, so the two together are refused (2.6.6). */
static bool api_allowed(long k, const void *ctx)
{
	const struct sb_policy *p = ctx;

	return p->api_allow && p->api_allow[k];
}

static void check_eval_grant(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	const char *granted = sb_eval_raw_grant(api_allowed, p);
	size_t i;

	if (!granted)
		return;
	for (i = 0; i < ps->lines.n; i++) {
		struct sb_line *l = &ps->lines.v[i];

		if (l->value && sb_str_starts(l->key, "eval-"))
			sb_error(p, l->ref,
				 "'%s' has no effect: python-api grants %s, "
				 "which runs code strings unguarded. Comment "
				 "out this eval-* line, or remove the "
				 "python-api grant.",
				 l->text, granted);
	}
}

/* Learning or enforcing, and why (2.6.15, 2.11). */
static void decide_learning(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	const char *cause = NULL;

	if (p->learn_path) {
		cause = sb_ref_format(a, p->learn_ref);
		p->learning_why = sb_arena_printf(
			a, "learning: '%s' from %s asks for it",
			sb_arena_printf(a, "learn=%s",
					display_path(ps, p->learn_path)),
			cause);
	} else if (!p->config_exists) {
		p->learn_path = p->config_path;
		cause = sb_arena_printf(a, "the missing rule file '%s'",
					p->config_display);
		p->learning_why = sb_arena_printf(
			a, "learning: the rule file '%s' does not exist",
			p->config_display);
	}
	if (!cause) {
		p->learning_why = sb_arena_printf(
			a, "enforcing: the rule file '%s' exists and no learn= "
			   "rule asks for learning",
			p->config_display);
		return;
	}
	if (p->locked) {
		sb_error(p, p->lock_ref,
			 "learning mode is forbidden, but requested by %s.",
			 cause);
		return;
	}
	if (!p->py_sandbox) {
		p->learning_why = sb_arena_printf(
			a, "enforcing: learning would be on (%s), but "
			   "py-sandbox=false turns it off",
			cause);
		return;
	}
	p->learning = true;
	if (p->provider != SB_PROVIDER_SUBPROCESS) {
		/* the OS layer is never exercised while learning */
		p->provider = SB_PROVIDER_SUBPROCESS;
		p->provider_forced = true;
	}
}

/* A rule that fails after one of its variables expanded to nothing (a
 * learned 'net=ALLOW|TCP|${DB_HOST}|5432|OUT' run without DB_HOST): its
 * errors name the variable, or the user is left guessing at an empty
 * field. */
static void name_unset_vars(struct parser *ps)
{
	struct sb_policy *p = ps->p;
	size_t i, j;

	if (!ps->unset_var)
		return;
	for (i = 0; i < p->errors.n; i++) {
		struct sb_diag *d = &p->errors.v[i];

		for (j = 0; j < ps->lines.n; j++) {
			const struct sb_ref *r = &ps->lines.v[j].ref;

			if (!ps->unset_var[j] || r->line != d->ref.line ||
			    !r->file || !d->ref.file ||
			    strcmp(r->file, d->ref.file) != 0)
				continue;
			d->text = sb_sanitize(
				p->arena,
				sb_arena_printf(
					p->arena,
					"%s (the variable %s is not set: set it, "
					"or give a default with ${%s:-value})",
					d->text, ps->unset_var[j],
					ps->unset_var[j]));
			break;
		}
	}
}

/* Steps 1 to 4 of 2.5: command-line and implicit rules, the file with its
 * includes, env= and unenv=, then ${} expansion of everything else. */
static void read_rules(struct parser *ps)
{
	const struct sb_parse_opts *o = ps->o;
	struct sb_policy *p = ps->p;
	struct sb_arena *a = p->arena;
	size_t i;

	/* 1. command-line rules first, then implicit ones, then the file */
	for (i = 0; i < o->n_cli_rules; i++)
		push_line(ps, sb_arena_strdup(a, o->cli_rules[i]),
			  (struct sb_ref){ SB_REF_ARG, 0 });
	for (i = 0; i < o->n_implicit_rules; i++) {
		const struct sb_rule_src *r = &o->implicit_rules[i];

		push_line(ps, sb_arena_strdup(a, r->text),
			  (struct sb_ref){ r->origin ? r->origin
						     : SB_REF_IMPLICIT,
					   0 });
	}
	/* 2. the file, with its includes spliced in place */
	load_file(ps, p->config_path, p->config_display, "the rule file",
		  (struct sb_ref){ 0 }, 0);
	p->config_exists = p->files.n && p->files.v[0].state != SB_FILE_ABSENT;

	ps->claimed = sb_arena_alloc(a, ps->lines.n + 1);
	ps->unset_var = sb_arena_alloc(a, (ps->lines.n + 1) *
						  sizeof(*ps->unset_var));
	for (i = 0; i < ps->lines.n; i++)
		split_key(a, &ps->lines.v[i]);
	/* 3. env= and unenv= expand their own values */
	stage_env(ps);
	/* 4. ${} everywhere else */
	for (i = 0; i < ps->lines.n; i++) {
		struct sb_line *l = &ps->lines.v[i];
		const char *t;

		if (ps->claimed[i])
			continue;
		ps->last_unset = NULL;
		t = expand(ps, l->text, l->ref, NULL);
		ps->unset_var[i] = ps->last_unset;
		if (!t) {
			ps->claimed[i] = true; /* reported already */
			continue;
		}
		l->text = t;
		split_key(a, l);
	}
}

int sb_policy_parse(const struct sb_parse_opts *o, struct sb_policy **out)
{
	struct parser ps = { 0 };
	struct sb_policy *p;
	struct sb_arena *a;
	const char *cfg;
	size_t i;

	*out = NULL;
	if (!o || !o->cwd || o->cwd[0] != '/')
		return -EINVAL;
	a = sb_arena_new();
	p = sb_arena_alloc(a, sizeof(*p));
	p->arena = a;
	p->provider = SB_PROVIDER_SUBPROCESS;
	p->py_sandbox = true;
	p->result_guard = true;
	p->log_stderr = true;
	p->log_max = SB_LOG_MAX_DEFAULT;
	p->result_mode = SB_RESULT_DATA_ONLY;
	p->port = -1;
	ps.p = p;
	ps.o = o;
	ps.home = o->home ? o->home : sb_envp_get(o->envp, "HOME");
	if (ps.home && !*ps.home)
		ps.home = NULL;

	cfg = o->config_path && *o->config_path ? o->config_path
						: ".py-sandboxes";
	p->config_path = sb_path_join(a, o->cwd, expand_tilde(&ps, cfg));
	p->config_display = display_path(&ps, p->config_path);
	p->shadows = sb_arena_alloc(a, (o->n_shadows + 1) * sizeof(char *));
	for (i = 0; i < o->n_shadows; i++)
		p->shadows[p->n_shadows++] = sb_arena_strdup(a, o->shadows[i]);

	if (o->flat) {
		/* the launcher did steps 1 to 4; env= was applied at exec */
		for (i = 0; i < o->n_flat_rules; i++)
			push_line(&ps, sb_arena_strdup(a, o->flat_rules[i].text),
				  o->flat_rules[i].ref);
		p->config_exists = o->flat_config_exists;
		ps.claimed = sb_arena_alloc(a, ps.lines.n + 1);
		for (i = 0; i < ps.lines.n; i++) {
			split_key(a, &ps.lines.v[i]);
			ps.claimed[i] = ps.lines.v[i].value &&
					(strcmp(ps.lines.v[i].key, "env") == 0 ||
					 strcmp(ps.lines.v[i].key, "unenv") == 0);
		}
	} else {
		read_rules(&ps);
	}
	for (i = 0; i < ps.lines.n; i++) {
		struct sb_rule *r = SB_VEC_PUSH(a, p->rules);

		r->text = ps.lines.v[i].text;
		r->ref = ps.lines.v[i].ref;
	}
	/* 5. single-valued, 6. provider keys, 7. the rest, 8. leftovers */
	stage_singles(&ps);
	stage_provider_keys(&ps);
	stage_directives(&ps);
	check_eval_grant(&ps);
	check_log_file(&ps);
	decide_learning(&ps);
	if (!o->flat && !(o->flags & SB_PARSE_NO_OWN_FILES))
		sb_protect_own_files(p, o->shadows, o->n_shadows);
	name_unset_vars(&ps);
	sb_diag_sort(p);
	*out = p;
	return 0;
}

void sb_policy_free(struct sb_policy *p)
{
	if (p)
		sb_arena_free(p->arena);
}
