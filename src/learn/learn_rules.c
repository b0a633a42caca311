/* learn_rules.c - learning mode's pure half (py-sandboxes(5), LEARNING): parse
 * the records the guard streams, turn them into the narrowest rules that cover
 * them, and merge those into the rule file's text at the learning markers. It
 * owns the template of a new file (2.10) and the module tables the import
 * groups need. It does no I/O, never prints and never exits: the launcher reads
 * and writes the file (learn_file.c). Records come from code that was running
 * unguarded, so every field is treated as data: anything that could not be
 * written back as one plain rule line is dropped, and a name that holds what a
 * reviewer could not see (control characters, bidirectional marks, bytes that
 * are not UTF-8) is shown escaped in a comment under a REVIEW header, never raw
 * and never as a rule.
 */
#include "learn.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>

#include "api_registry.h"
#include "fsrules.h"
#include "modtab.h"
#include "policy_net.h"

/* ---- the template of a new rule file (2.10) ---- */

const char sb_learn_template[] =
	"# .py-sandboxes - what this Python program may do.\n"
	"# Nothing is allowed unless a line below allows it: no environment\n"
	"# variable, file, socket, import or sensitive call. Learning mode\n"
	"# adds what a trusted run used between the learning markers; it\n"
	"# records what the code did, good or bad: review every added line.\n"
	"\n"
	"# CONFIGURATION COMPOSITION (rules of these files are added)\n"
	"#include \"./.local.py-sandboxes\"  # May be added to .gitignore\n"
	"include \"~/.config/py-sandboxes/user-py-sandboxes.profile\"  "
	"# For user\n"
	"include \"/etc/py-sandboxes/global-py-sandboxes.profile\"  "
	"# For node\n"
	"\n"
	"# ENVIRONMENT VARIABLES (the program starts with these only)\n"
	"#env=USER=sandbox\n"
	"#env=TMPDIR=${TMPDIR:-${TEMP:-${TMP:-/tmp}}}\n"
	"#env=*_API_KEY=${*_API_KEY}\n"
	"#env=*_BASE_URL=${*_BASE_URL}\n"
	"#unenv=OPENAI_API_KEY\n"
	"# <learning_guard_envs>\n"
	"# </learning_guard_envs>\n"
	"\n"
	"# FILE SYSTEM ACCESS\n"
	"# expose-ro= reads, expose-rw= also writes, a directory tree or one\n"
	"# file; ignore= hides matching names even inside an exposed tree.\n"
	"#ignore=.env\n"
	"#ignore=*.log\n"
	"#expose-ro=/usr\n"
	"#expose-ro=.\n"
	"#expose-rw=./data\n"
	"#expose-rw=/tmp\n"
	"# <learning_guard_files>\n"
	"# </learning_guard_files>\n"
	"\n"
	"# NETWORK ACCESS CONTROL\n"
	"# net=ALLOW|DENY | TCP,UDP or * | address, network, host or * | ports "
	"| IN,OUT\n"
	"# Every DENY rule is tried before any ALLOW rule.\n"
	"#net=ALLOW|TCP|*|443|OUT                      # HTTPS to anywhere\n"
	"#net=ALLOW|TCP|*|80|OUT                       # HTTP to anywhere\n"
	"#net=ALLOW|tcp|0.0.0.0/0|${PORT:-8000}|IN     # a local server\n"
	"#net=DENY|*|10.0.0.0/8|*|OUT                  # private networks\n"
	"#net=DENY|*|172.16.0.0/12|*|OUT\n"
	"#net=DENY|*|192.168.0.0/16|*|OUT\n"
	"#net=DENY|*|169.254.0.0/16|*|OUT              # link-local, cloud "
	"metadata\n"
	"#net=DENY|*|127.0.0.0/8|*|OUT                 # this host\n"
	"#net=DENY|*|fc00::/7|*|OUT\n"
	"#net=DENY|*|fe80::/10|*|OUT\n"
	"# <learning_guard_socket>\n"
	"# </learning_guard_socket>\n"
	"\n"
	"# PYTHON IMPORTS CONTROL\n"
	"# python-import=<top-level module>, ... grants the modules and their\n"
	"# submodules; python-import=* grants every import.\n"
	"# <learning_guard_import>\n"
	"# </learning_guard_import>\n"
	"\n"
	"# PYTHON API CONTROL\n"
	"# python-api=ALLOW:<category or module.function>, DENY: likewise.\n"
	"# Categories: process-exec, process-control, privileges, threads,\n"
	"# native, introspection, dynamic-code, deserialization.\n"
	"# Some functions call others (subprocess.run ends in\n"
	"# os.posix_spawn): each refusal names the function where it\n"
	"# stopped, so allow that one too, or the whole category.\n"
	"# <learning_guard_api>\n"
	"# </learning_guard_api>\n"
	"\n"
	"# DYNAMICALLY EVALUATED CODE (eval-syntax=, eval-call=, ...)\n"
	"# <learning_guard_eval>\n"
	"# </learning_guard_eval>\n"
	"\n"
	"# <learning_remote_result>\n"
	"# </learning_remote_result>\n"
	"\n"
	"# PYTHON SANDBOX ACTIVATION\n"
	"py-sandbox=true\n"
	"\n"
	"# OS-LEVEL SANDBOX PROVIDER\n"
	"# auto picks the strongest provider this machine offers (the\n"
	"# kernel's landlock and seccomp when available);\n"
	"# OS_SANDBOX=subprocess in the environment downgrades to the\n"
	"# Python layer alone.\n"
	"os-sandbox=${OS_SANDBOX:-auto}\n"
	"\n"
	"# TRANSPORT RESULT GUARD (partial mode)\n"
	"remote-result-guard=true\n"
	"\n"
	"# LEARNING MODE LOCK\n"
	"# learn=false        # uncomment once reviewed: locks the rules\n"
	"\n"
	"# OS PROVIDER PARAMETERS (only read by the selected provider)\n"
	"# bwrap.share-net=yes          # host network, no socket filtering\n"
	"# bwrap.hostname=my-sandbox    # any bwrap.<opt>=<v> is --<opt>=<v>\n"
	"# firejail.net=docker0\n"
	"# firejail.rlimit-as=600m\n"
	"# unshare.<opt>=<v>            # passed to unshare as --<opt>=<v>\n"
	"# qemu.memory=2G\n"
	"# qemu.use_kvm=true\n"
	"# qemu.start_timeout=90\n";

/* ---- parsing the records ---- */

static bool parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

static bool same_net(const struct sb_learned_net *x,
		     const struct sb_learned_net *y)
{
	if (x->kind != y->kind || x->dir != y->dir || x->port != y->port ||
	    x->self != y->self || x->lookup != y->lookup ||
	    x->addr.family != y->addr.family ||
	    memcmp(x->addr.bytes, y->addr.bytes, sizeof(x->addr.bytes)) != 0)
		return false;
	if (!x->host || !y->host)
		return x->host == y->host;
	return strcmp(x->host, y->host) == 0;
}

/* One record; malformed ones are ignored. Dedupe is a linear scan: a run
 * records hundreds of distinct things, not millions. */
static void parse_record(struct sb_arena *a, const char *line, size_t n,
			 struct sb_learned *l)
{
	char *f[7];
	bool bad = false;
	size_t nf = sb_split_fields(a, line, n, f, SB_ARRAY_LEN(f), &bad), i;

	if (bad || nf < 2 || nf > 6)
		return;
	if (strcmp(f[0], "eval") == 0) {
		if (nf == 2 &&
		    (strcmp(f[1], "eval-on") == 0 ||
		     (strncmp(f[1], "eval-", 5) == 0 && strchr(f[1], '='))) &&
		    !sb_str_in(f[1], l->evals.v, l->evals.n))
			*SB_VEC_PUSH(a, l->evals) = f[1];
	} else if (strcmp(f[0], "refused") == 0) {
		if (nf == 2 && *f[1] &&
		    !sb_str_in(f[1], l->refused.v, l->refused.n))
			*SB_VEC_PUSH(a, l->refused) = f[1];
	} else if (strcmp(f[0], "env") == 0 || strcmp(f[0], "import") == 0 ||
		   strcmp(f[0], "api") == 0) {
		bool env = f[0][0] == 'e', imp = f[0][0] == 'i';

		if (nf != 2 || !*f[1])
			return;
		if (env) {
			if (!sb_str_in(f[1], l->env.v, l->env.n))
				*SB_VEC_PUSH(a, l->env) = f[1];
		} else if (imp) {
			if (!sb_str_in(f[1], l->imports.v, l->imports.n))
				*SB_VEC_PUSH(a, l->imports) = f[1];
		} else if (!sb_str_in(f[1], l->apis.v, l->apis.n)) {
			*SB_VEC_PUSH(a, l->apis) = f[1];
		}
	} else if (strcmp(f[0], "file") == 0) {
		struct sb_learned_file *lf;
		bool w, d;

		if (nf != 4 || f[3][0] != '/' || strlen(f[1]) != 1 ||
		    strlen(f[2]) != 1 || !strchr("rwl", f[1][0]) ||
		    !strchr("df", f[2][0]))
			return;
		w = f[1][0] == 'w';
		d = f[2][0] == 'd';
		for (i = 0; i < l->files.n; i++) {
			lf = &l->files.v[i];
			if (strcmp(lf->path, f[3]) == 0) {
				lf->write |= w;
				lf->is_dir |= d;
				lf->read |= f[1][0] == 'r';
				lf->lookup |= f[1][0] == 'l';
				return;
			}
		}
		lf = SB_VEC_PUSH(a, l->files);
		lf->path = f[3];
		lf->write = w;
		lf->is_dir = d;
		lf->read = f[1][0] == 'r';
		lf->lookup = f[1][0] == 'l';
	} else if (strcmp(f[0], "net") == 0) {
		struct sb_learned_net rec = { 0 }, *ln;

		if (nf != 6)
			return;
		if (strcmp(f[1], "tcp") == 0)
			rec.kind = SB_NET_TCP;
		else if (strcmp(f[1], "udp") == 0)
			rec.kind = SB_NET_UDP;
		else
			return;
		if (strcmp(f[2], "in") == 0)
			rec.dir = SB_NET_IN;
		else if (strcmp(f[2], "out") == 0)
			rec.dir = SB_NET_OUT;
		else
			return;
		rec.self = rec.dir == SB_NET_OUT && strcmp(f[4], "self") == 0;
		rec.lookup = rec.kind == SB_NET_TCP && rec.dir == SB_NET_OUT &&
			     strcmp(f[4], "-") == 0;
		if (sb_addr_parse(f[3], &rec.addr) != 0 ||
		    (!rec.self && !rec.lookup && !parse_port(f[4], &rec.port)) ||
		    !*f[5])
			return;
		rec.host = strcmp(f[5], "-") == 0 ? NULL : f[5];
		if (rec.lookup && !rec.host)
			return;
		for (i = 0; i < l->nets.n; i++)
			if (same_net(&l->nets.v[i], &rec))
				return;
		ln = SB_VEC_PUSH(a, l->nets);
		*ln = rec;
	}
}

size_t sb_learn_parse(struct sb_arena *a, const char *data, size_t len,
		      struct sb_learned *l)
{
	size_t pos = 0;

	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t n;

		if (!nl)
			break;
		n = (size_t)(nl - (data + pos));
		if (n)
			parse_record(a, data + pos, n, l);
		pos += n + 1;
	}
	return pos;
}

/* ---- what can be written back ---- */

/* A path that reads back as itself: no byte the lexer or ${} expansion
 * would act on (2.2, 2.3), no comma (one path per rule). */
/* A name that can sit inside ${...} and a rule: identifier-like. */
static bool safe_name(const char *s, bool dots)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' ||
		      (dots && *s == '.')))
			return false;
	return true;
}

/* A module name as the import system takes it: identifier characters,
 * '-' inside (CPython's own _sysconfigdata__linux_x86_64-linux-gnu), and a
 * leading digit (mypyc helpers). */
static bool safe_module(const char *s)
{
	/* a leading digit too: mypyc's 81d243bd2c585b0f4821__mypyc */
	if (!*s || *s == '-')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

static bool safe_host(const char *s)
{
	if (!*s || *s == '-' || *s == '.')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' ||
		      *s == '_'))
			return false;
	return true;
}

/* ---- names a reviewer could not see as they are ---- */

bool sb_learn_hidden_chars(const char *s)
{
	return sb_text_hidden(s, strlen(s), true, NULL) != NULL;
}

const char *sb_learn_escape(struct sb_arena *a, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, len, k;
	struct sb_buf b = { 0 };
	const char *res;
	unsigned cp;

	while (i < n) {
		len = sb_utf8_seq(u + i, n - i, &cp);
		if (len && !sb_hidden_cp(cp) && cp != '\\') {
			sb_buf_add(&b, s + i, len);
			i += len;
			continue;
		}
		if (!len)
			len = 1;
		for (k = 0; k < len; k++)
			sb_buf_printf(&b, "\\x%02x", u[i + k]);
		i += len;
	}
	res = sb_arena_strdup(a, b.s ? b.s : "");
	sb_buf_free(&b);
	return res;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static bool in_sorted(const char *const *v, size_t n, const char *s)
{
	return bsearch(&s, v, n, sizeof(*v), cmp_str) != NULL;
}

typedef SB_VEC(const char *) str_vec;

/* The lines of one family, in groups: a group's header comment is written
 * only if some of its rule lines survive the duplicate check. */
struct group {
	const char *header; /* NULL: none */
	str_vec lines;
	bool blank_after; /* imports: each group ends with an empty line */
};

struct family {
	const char *marker; /* X of # <learning_guard_X> */
	SB_VEC(struct group) groups;
};

static struct group *new_group(struct sb_arena *a, struct family *fam,
			       const char *header)
{
	struct group *g = SB_VEC_PUSH(a, fam->groups);

	g->header = header;
	return g;
}

static const char review_header[] =
	"# REVIEW: the program used these names, which hold control "          \
	"characters,\n# bidirectional-text marks or bytes that are not "     \
	"UTF-8. They are shown\n# escaped (\\xNN), as comments: no rule "    \
	"was written for them.";

static const char unspellable_header[] =
	"# REVIEW: the program used these paths, which no rule can spell (a "  \
	"'#', ',',\n# quote or '${', or a trailing space): no rule was "     \
	"written for them.\n# Rename them, or grant a directory that holds " \
	"them.";

static const char swapped_header[] =
	"# REVIEW: the program used these paths, which are symbolic links "   \
	"now (or lie\n# under one), leading elsewhere: a rule would follow " \
	"the link. No rule\n# was written for them.";

static const char too_wide_header[] =
	"# REVIEW: the program made, removed or renamed entries right in "    \
	"these\n# directories (or these entries), which no rule grants "    \
	"without all that\n# lies below (the home directory, one above "    \
	"it, or /), and no entry made there\n# got a rule of its own (its "  \
	"name was not learned, or no rule can\n# spell it): the next run "   \
	"is refused there. Name each entry with\n# expose-new=, or run the " \
	"program from a directory of its own (it is\n# then expose-rw=.).";

/* At most this many entries are named under too_wide_header. */
#define TOO_WIDE_SHOWN 20

static void flag_under(struct sb_arena *a, struct family *fam,
		       const char *header, const char *rule)
{
	struct group *g = NULL;
	size_t i;

	for (i = 0; i < fam->groups.n; i++)
		if (fam->groups.v[i].header == header)
			g = &fam->groups.v[i];
	if (!g)
		g = new_group(a, fam, header);
	*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(a, "# %s", rule);
}

/* A name that is not written as a rule because a reviewer could not see
 * it as it is: shown escaped, as a comment, under one header. */
static void flag_name(struct sb_arena *a, struct family *fam,
		      const char *rule)
{
	flag_under(a, fam, review_header, rule);
}

/* ---- environment ---- */

static void gen_env(struct sb_arena *a, const struct sb_learned *l,
		    const struct sb_learn_ctx *ctx, struct family *fam)
{
	const struct sb_policy *p = ctx->policy;
	str_vec names = { 0 };
	struct group *g;
	size_t i, j;

	for (i = 0; i < l->env.n; i++) {
		const char *name = l->env.v[i];
		bool skip = !safe_name(name, true);

		if (skip && sb_learn_hidden_chars(name))
			flag_name(a, fam, sb_arena_printf(
						  a, "env=%s",
						  sb_learn_escape(a, name)));

		for (j = 0; p && !skip && j < p->env.n; j++)
			skip = strcmp(p->env.v[j].name, name) == 0;
		/* a glob rule covers the name even when the host value was
		 * empty at parse time; unenv= would undo a rule anyway */
		for (j = 0; p && !skip && j < p->rules.n; j++) {
			const char *t = p->rules.v[j].text, *eq;
			char *pat;
			bool unenv = sb_str_starts(t, "unenv=");

			if (unenv) {
				pat = sb_strip(a, t + 6, strlen(t + 6));
			} else if (sb_str_starts(t, "env=") &&
				   (eq = strchr(t + 4, '='))) {
				pat = sb_arena_strndup(a, t + 4,
						       (size_t)(eq - t - 4));
				if (!strchr(pat, '*'))
					continue;
			} else {
				continue;
			}
			skip = sb_glob_star_match(pat, name);
		}
		if (!skip)
			*SB_VEC_PUSH(a, names) = name;
	}
	if (!names.n)
		return;
	qsort(names.v, names.n, sizeof(*names.v), cmp_str);
	g = new_group(a, fam, NULL);
	for (i = 0; i < names.n; i++)
		*SB_VEC_PUSH(a, g->lines) =
			sb_arena_printf(a, "env=%s=${%s}", names.v[i],
					names.v[i]);
}

/* ---- files ---- */

/* The variables of 4.3 whose trees are written ${VAR}/...; all of them
 * belong to the program (the interpreter, its venv, model caches). */
static const char *const tree_vars[] = {
	"PYENV_ROOT",	     "VIRTUAL_ENV",	 "CONDA_HOME",
	"HF_HOME",	     "HF_DATASETS_CACHE", "HF_MODULES_CACHE",
	"HF_HUB_CACHE",	     "TRANSFORMERS_CACHE", "TORCH_HOME",
	"KERAS_HOME",	     "TFHUB_CACHE_DIR",	 "MXNET_HOME",
	"NLTK_DATA",	     "SPACY_DATA",
};

/* A known location: paths under 'dir' are written 'spelling' + rest. */
struct place {
	const char *dir;
	const char *spelling;
	bool tree;      /* files below may become directory rules */
	bool per_child; /* ~/.cache: each child directory is a tree */
	bool shared;    /* a temporary directory: other programs' files too */
};

typedef SB_VEC(struct place) place_vec;

/* A place named by the environment, as the records name it (its real
 * path), or NULL for the root. */
static const char *place_dir(struct sb_arena *a,
			     const struct sb_learn_ctx *ctx, const char *v)
{
	const char *r = ctx->real_path ? ctx->real_path(a, v) : NULL;

	v = sb_path_normalize(a, r ? r : v);
	return strcmp(v, "/") == 0 ? NULL : v;
}

static const char *env_dir(struct sb_arena *a, const struct sb_learn_ctx *ctx,
			   const char *name)
{
	const char *v = sb_envp_get(ctx->envp, name);

	/* "/" would make every path ${VAR}/...: not a location */
	if (!v || v[0] != '/')
		return NULL;
	return place_dir(a, ctx, v);
}

static void add_place(struct sb_arena *a, place_vec *pv, const char *dir,
		      const char *spelling, bool tree, bool per_child)
{
	struct place *pl;

	if (!dir)
		return;
	pl = SB_VEC_PUSH(a, *pv);
	pl->dir = dir;
	pl->spelling = spelling;
	pl->tree = tree;
	pl->per_child = per_child;
	pl->shared = false;
}

/* A temporary directory: a tree for what lies in its subdirectories (a
 * job's own directory), not for the files right in it (shared_file). */
static void add_temp(struct sb_arena *a, place_vec *pv, const char *dir,
		     const char *spelling)
{
	size_t n = pv->n;

	add_place(a, pv, dir, spelling, true, false);
	if (pv->n > n)
		pv->v[n].shared = true;
}

/* In order of preference when two values are equally long (4.3). */
static void collect_places(struct sb_arena *a, const struct sb_learn_ctx *ctx,
			   place_vec *pv)
{
	const char *home = ctx->home && ctx->home[0] == '/'
				   ? sb_path_normalize(a, ctx->home)
				   : NULL;
	const char *cwd = sb_path_normalize(a, ctx->cwd);
	const char *tmpdir = env_dir(a, ctx, "TMPDIR"), *x;
	size_t i;

	if (home && strcmp(home, "/") == 0)
		home = NULL;
	for (i = 0; i < SB_ARRAY_LEN(tree_vars); i++)
		add_place(a, pv, env_dir(a, ctx, tree_vars[i]),
			  sb_arena_printf(a, "${%s}", tree_vars[i]), true,
			  false);
	/* The working directory is the program's own tree, unless it is /
	 * or holds the home directory: then it says nothing about what the
	 * program owns and would turn ~/.ssh into a directory rule. */
	if (strcmp(cwd, "/") != 0)
		add_place(a, pv, cwd, ".", !(home && sb_path_under(home, cwd)),
			  false);
	if (home) {
		x = env_dir(a, ctx, "XDG_CACHE_HOME");
		if (x)
			add_place(a, pv, x, "${XDG_CACHE_HOME}", false, true);
		add_place(a, pv, sb_path_join(a, home, ".cache"), "~/.cache",
			  false, true);
		add_place(a, pv, home, "~", false, false);
	}
	/* ${TMPDIR:-/tmp} only where it expands back to the same place */
	add_temp(a, pv, tmpdir ? tmpdir : "/tmp", "${TMPDIR:-/tmp}");
	if (tmpdir && strcmp(tmpdir, "/tmp") != 0)
		add_temp(a, pv, "/tmp", "/tmp");
	add_temp(a, pv, env_dir(a, ctx, "TMP"), "${TMP}");
	add_temp(a, pv, env_dir(a, ctx, "TEMP"), "${TEMP}");
	/* POSIX shared memory and semaphores (multiprocessing): shared with
	 * every other program as /tmp is */
	add_temp(a, pv, "/dev/shm", "/dev/shm");
}

/* The longest place containing 'path' (first on ties), or NULL. */
static const struct place *find_place(const place_vec *pv, const char *path)
{
	const struct place *best = NULL;
	size_t i, bl = 0;

	for (i = 0; i < pv->n; i++) {
		size_t len = strlen(pv->v[i].dir);

		if (sb_path_under(path, pv->v[i].dir) && (!best || len > bl)) {
			best = &pv->v[i];
			bl = len;
		}
	}
	return best;
}

/* Can 'path' be written as a rule's value? The part of it below its place
 * (a place is spelled ".", "~", "${TMPDIR:-/tmp}"...) must hold nothing the
 * rule grammar reads otherwise: a comment, a list, a quote, a variable, a
 * trailing space the parser strips. */
static bool spellable(const place_vec *pv, const char *path)
{
	const struct place *pl = find_place(pv, path);
	const unsigned char *c = (const unsigned char *)path;
	size_t n = strlen(path);

	if (pl)
		c += strlen(pl->dir);
	if (n && sb_is_space((unsigned char)path[n - 1]) && *c)
		return false;
	for (; *c; c++)
		if (*c < 0x20 || *c == 0x7f || *c == '#' || *c == ',' ||
		    *c == '"' || *c == '\'' || (*c == '$' && c[1] == '{'))
			return false;
	return true;
}

static const char *spell_path(struct sb_arena *a, const place_vec *pv,
			      const char *path)
{
	const struct place *pl = find_place(pv, path);
	const char *rest;

	if (!pl)
		return path;
	rest = path + strlen(pl->dir);
	if (!*rest)
		return pl->spelling;
	return sb_arena_printf(a, "%s%s", pl->spelling, rest);
}

/* The root of the program tree holding 'path', or NULL. The innermost
 * known place decides, so a home directory inside a temp tree stays a home
 * directory; ~/.cache/<x> is one tree per child. */
static const char *tree_root(struct sb_arena *a, const place_vec *pv,
			     const char *path)
{
	const struct place *pl = find_place(pv, path);
	const char *rest;
	size_t n;

	if (!pl || (!pl->tree && !pl->per_child))
		return NULL;
	if (!pl->per_child)
		return pl->dir;
	rest = path + strlen(pl->dir);
	if (*rest != '/')
		return NULL;
	n = strcspn(rest + 1, "/");
	if (!n || !rest[1 + n])
		return NULL; /* ~/.cache itself, or a file right in it */
	return sb_arena_strndup(a, path, (size_t)(rest + 1 + n - path));
}

/* A file right in a temporary directory, read, or written and still there
 * when the rules are written: it gets a rule of its own, not the whole
 * directory, which holds every other program's temporary files (weaknesses
 * 85). A file made and removed again still needs the directory (Landlock's
 * MAKE_REG), and a file in a subdirectory gets that subdirectory. */
static bool shared_file(const place_vec *pv, const struct sb_learn_ctx *ctx,
			const struct sb_learned_file *f, const char *path,
			const char *dir)
{
	const struct place *pl = find_place(pv, path);

	return pl && pl->shared && !f->is_dir && strcmp(pl->dir, dir) == 0 &&
	       (!f->write || !ctx->exists || ctx->exists(path));
}

/* A name with parts that change from run to run: a run of 4 digits or
 * more (a time, a process id), the host's name, tempfile's "tmp" and 8
 * random letters. Those parts become '*' in the pattern returned; NULL
 * when there is none (or the name holds a character a pattern reads). */
static const char *one_run_pattern(struct sb_arena *a, const char *name,
				   const char *host)
{
	size_t n = strlen(name), hl = host ? strlen(host) : 0, i = 0, k;
	char *out = sb_arena_alloc(a, n + 2), *o = out;
	bool changed = false;

	if (strpbrk(name, "*?[]\\"))
		return NULL;
	if (strncmp(name, "tmp", 3) == 0 && n >= 11 &&
	    strspn(name + 3, "abcdefghijklmnopqrstuvwxyz0123456789_") >= 8) {
		/* tempfile's: the letters may run into a suffix */
		memcpy(o, "tmp*", 4);
		o += 4;
		i = 11;
		changed = true;
	}
	while (i < n) {
		if (hl && strncmp(name + i, host, hl) == 0) {
			k = hl;
		} else {
			for (k = 0; i + k < n && name[i + k] >= '0' &&
				    name[i + k] <= '9';
			     k++)
				;
			if (k < 4) {
				k = k ? k : 1;
				memcpy(o, name + i, k);
				o += k;
				i += k;
				continue;
			}
		}
		if (o == out || o[-1] != '*')
			*o++ = '*';
		i += k;
		changed = true;
	}
	*o = '\0';
	return changed ? out : NULL;
}

/* Is 'dir' a temporary directory itself ($TMPDIR, /tmp...)? */
static bool temp_dir(const place_vec *pv, const char *dir)
{
	const struct place *pl = find_place(pv, dir);

	return pl && pl->shared && strcmp(pl->dir, dir) == 0;
}

static char *dir_name(struct sb_arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		return sb_arena_strdup(a, "/");
	return sb_arena_strndup(a, path, (size_t)(slash - path));
}

struct want {
	const char *path;
	bool write, is_dir;
	bool list; /* expose-list=: the names in a directory outside a tree */
	/* expose-new=: an entry gone when the rules are written, right in a
	 * directory no rule may grant (is_dir: it covers what lies below) */
	bool entry;
	/* expose-made=: entries the run made right in a temporary
	 * directory; path is that directory + "/ *" (no space) */
	bool made;
	const char *value; /* as written */
	bool dropped;
};

/* The program's own places first, as in 2.9: ./..., ${VAR}/...,
 * absolute, ~/... */
static int spelling_rank(const char *v)
{
	switch (v[0]) {
	case '.':
		return 0;
	case '$':
		return 1;
	case '/':
		return 2;
	default:
		return 3;
	}
}

static int cmp_want(const void *x, const void *y)
{
	const struct want *a = x, *b = y;
	int c = spelling_rank(a->value) - spelling_rank(b->value);

	if (!c)
		c = strcmp(a->value, b->value);

	return c ? c : (int)a->write - (int)b->write;
}

/* Is 'path' the very path of an existing rule of another mode? A second
 * rule would be the parser's "invalidate another rule" error. */
static bool clashes(const struct sb_policy *p, const char *path,
		    enum sb_expose_mode mode)
{
	size_t i;

	for (i = 0; p && i < p->exposes.n; i++)
		if (strcmp(p->exposes.v[i].path, path) == 0 &&
		    p->exposes.v[i].mode != mode)
			return true;
	return false;
}

static enum sb_expose_mode want_mode(const struct want *w)
{
	if (w->list)
		return SB_EXPOSE_LIST;
	return w->write ? SB_EXPOSE_RW : SB_EXPOSE_RO;
}

/* What follows "expose-" in the rule. */
static const char *want_kind(const struct want *w)
{
	if (w->made)
		return "made";
	if (w->entry)
		return "new";
	if (w->list)
		return "list";
	return w->write ? "rw" : "ro";
}

/* A directory no rule may grant whole: the root, the home directory and
 * what holds it (a working directory that is $HOME included). */
static bool too_wide(const struct sb_learn_ctx *ctx, const char *dir)
{
	return strcmp(dir, "/") == 0 ||
	       (ctx->home && ctx->home[0] == '/' &&
		sb_path_under(ctx->home, dir));
}

/* Outside the program's trees a directory becomes the narrowest rule the
 * kernel can enforce for what was done to it: read (listed) alone it is
 * expose-list=, its names and none of its files; entries made, removed or
 * renamed in it need Landlock's MAKE_* and REMOVE_* rights on the
 * directory, which only expose-rw= of that directory gives. Never for the
 * home directory or the root: Landlock's rights reach the whole tree below
 * (weaknesses.md 60). */
static bool outside_dir(const struct sb_learn_ctx *ctx,
			const struct sb_learned_file *f, bool *list)
{
	*list = !f->write;
	/* the names in the home directory itself, when they were needed */
	if (*list && ctx->home && strcmp(f->path, ctx->home) == 0)
		return true;
	return !too_wide(ctx, f->path);
}

static bool module_suffix(const char *name)
{
	static const char *const suffixes[] = { ".py", ".pyc", ".so", ".pyw" };
	size_t i, n = strlen(name);

	for (i = 0; i < SB_ARRAY_LEN(suffixes); i++) {
		size_t k = strlen(suffixes[i]);

		if (n > k && strcmp(name + n - k, suffixes[i]) == 0)
			return true;
	}
	return false;
}

/* A directory importlib looked into is needed when a module was loaded from
 * it: a module file right in it, or a package's module one level down
 * (else the import failed, or found the module elsewhere, and a refused
 * listing changes nothing). */
static bool lookup_used(const struct sb_learned *l, const char *dir)
{
	size_t i, n = strcmp(dir, "/") == 0 ? 0 : strlen(dir);

	for (i = 0; i < l->files.n; i++) {
		const char *p = l->files.v[i].path, *rest, *slash;

		if (!l->files.v[i].read || l->files.v[i].is_dir ||
		    !sb_path_under(p, dir) || strcmp(p, dir) == 0)
			continue;
		rest = p + n + 1;
		slash = strchr(rest, '/');
		if (!module_suffix(rest))
			continue;
		if (!slash || !strchr(slash + 1, '/'))
			return true;
	}
	return false;
}

/* The paths the run wrote (made, or made an entry in), sorted: asked once
 * for each directory up from each path gone, so a search, not a scan. */
static str_vec written_paths(struct sb_arena *a, const struct sb_learned *l)
{
	str_vec v = { 0 };
	size_t i;

	for (i = 0; i < l->files.n; i++)
		if (l->files.v[i].write)
			*SB_VEC_PUSH(a, v) = l->files.v[i].path;
	if (v.n)
		qsort(v.v, v.n, sizeof(*v.v), cmp_str);
	return v;
}

/* Did the run write 'path'? */
static bool written(const str_vec *wr, const char *path)
{
	return wr->n && in_sorted(wr->v, wr->n, path);
}

/* What stands for 'path', written and gone when the rules are written (a
 * journal, a temporary file, a scratch tree): a rule for it could not be
 * read back, and making it again needs Landlock's MAKE_* rights on the
 * nearest directory up that is still there, through directories the run
 * made itself (a write that failed for want of its directory stands for
 * nothing: NULL, *review false). That directory becomes expose-rw=, as
 * writable as one outside the program's trees can be; where no rule may
 * grant it (home, above it, /), the entry right in it becomes expose-new=
 * instead (*entry): the entry's rule covers what was made below it, and
 * grants nothing else in the directory. NULL with *review: the entry is
 * itself too wide. */
static const char *gone_rule(struct sb_arena *a, const str_vec *wr,
			     const struct sb_learn_ctx *ctx,
			     const place_vec *pv, const char *path,
			     bool *entry, bool *made, bool *review)
{
	const char *dir = dir_name(a, path), *pattern;

	*review = false;
	*made = false;
	while (strcmp(dir, "/") != 0 && !ctx->exists(dir)) {
		if (!written(wr, dir))
			return NULL;
		path = dir;
		dir = dir_name(a, path);
	}
	/* right in a temporary directory: expose-made= of it, the entries
	 * the program makes there, never the other programs' files */
	if (temp_dir(pv, dir)) {
		*made = true;
		return sb_path_join(a, dir, "*");
	}
	*entry = too_wide(ctx, dir);
	if (!*entry)
		return dir;
	*review = too_wide(ctx, path);
	if (*review)
		return NULL;
	/* a name of one run: the next makes another, which expose-made=
	 * of its pattern lets it make (and nothing that is there) */
	pattern = one_run_pattern(a, path + strlen(dir) +
					     (strcmp(dir, "/") != 0),
				  ctx->hostname);
	if (pattern) {
		*entry = false;
		*made = true;
		return sb_path_join(a, dir, pattern);
	}
	return path;
}

/* Is 'path' an entry right in 'dir'? */
static bool right_in(const char *path, const char *dir)
{
	const char *slash = strrchr(path, '/');
	size_t len = strcmp(dir, "/") == 0 ? 0 : strlen(dir);

	return slash && slash[1] && (size_t)(slash - path) == len &&
	       strncmp(path, dir, len) == 0;
}

/* Did the entries made, removed or renamed right in 'dir' (a directory no
 * rule may grant) get rules: a written rule learned for an entry right in
 * it, or one in force? The records name the entries Python code and
 * native code made (learn_native.c records the directory and the entry);
 * a directory with no such rule (an entry's name no rule can spell, or a
 * record of the directory alone) is named for review. */
static bool entries_granted(const struct sb_policy *p, const struct want *w,
			    size_t n, const char *dir)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (w[i].write && !w[i].dropped && right_in(w[i].path, dir))
			return true;
	for (i = 0; p && i < p->exposes.n; i++)
		if (p->exposes.v[i].mode == SB_EXPOSE_RW &&
		    right_in(p->exposes.v[i].path, dir))
			return true;
	return false;
}

/* An entry made or removed where no rule may grant its directory: named
 * for review (the first TOO_WIDE_SHOWN, then how many more). */
static void flag_too_wide(struct sb_arena *a, struct family *fam,
			  const place_vec *pv, const char *path, bool dir,
			  size_t *n)
{
	const char *v = spell_path(a, pv, path);
	size_t i;

	++*n;
	if (*n <= TOO_WIDE_SHOWN) {
		flag_under(a, fam, too_wide_header,
			   sb_learn_escape(a, dir && strcmp(v, "/") != 0
						      ? sb_arena_printf(
								a, "%s/", v)
						      : v));
		return;
	}
	for (i = 0; i < fam->groups.n; i++) {
		struct group *g = &fam->groups.v[i];

		const char *more;

		if (g->header != too_wide_header)
			continue;
		more = sb_arena_printf(a, "# ... and %zu more",
				       *n - TOO_WIDE_SHOWN);
		if (g->lines.n > TOO_WIDE_SHOWN)
			g->lines.v[TOO_WIDE_SHOWN] = more;
		else
			*SB_VEC_PUSH(a, g->lines) = more;
	}
}

static void gen_files(struct sb_arena *a, const struct sb_learned *l,
		      const struct sb_learn_ctx *ctx, struct family *fam)
{
	const struct sb_policy *p = ctx->policy;
	place_vec places = { 0 };
	SB_VEC(struct want) w = { 0 };
	str_vec wide = { 0 }; /* written, and no rule may grant them */
	str_vec wr = written_paths(a, l);
	struct group *g;
	size_t i, j, k, n_too_wide = 0;

	collect_places(a, ctx, &places);
	for (i = 0; i < l->files.n; i++) {
		const struct sb_learned_file *f = &l->files.v[i];
		const char *path = sb_path_normalize(a, f->path), *root, *d;
		struct sb_fs_decision dec;
		/* the system's files of /proc (meminfo, cpuinfo) are learned,
		 * a process's own (its pid changes) never */
		bool skip = path[0] != '/' || sb_path_proc_own(path) ||
			    (sb_path_under(path, "/proc") && f->write);
		bool as_dir, list, listed, entry = false, made = false;
		struct want *nw;

		if (sb_learn_hidden_chars(path)) {
			flag_name(a, fam, sb_arena_printf(
						  a, "expose-%s=%s",
						  f->write ? "rw" : "ro",
						  sb_learn_escape(a, path)));
			continue;
		}

		for (k = 0; !skip && k < ctx->n_python_trees; k++)
			skip = sb_path_under(path, ctx->python_trees[k]);
		listed = f->read || (f->lookup && lookup_used(l, f->path));
		if (skip || (!listed && !f->write && f->lookup))
			continue;
		if (p) {
			/* what is allowed is not learned again; what an
			 * ignore= rule hides stays hidden */
			sb_fs_decide(p, path, path, path, f->write, &dec);
			if (dec.verdict == SB_FS_ALLOW ||
			    dec.verdict == SB_FS_IGNORED)
				continue;
		}
		root = tree_root(a, &places, path);
		d = f->is_dir ? path : dir_name(a, path);
		as_dir = root && sb_path_under(d, root) &&
			 !shared_file(&places, ctx, f, path, d);
		list = false;
		if (ctx->exists && !ctx->exists(path)) {
			/* a probe of what is gone is no use */
			if (!f->write)
				continue;
			bool review;

			d = gone_rule(a, &wr, ctx, &places, path, &entry,
				      &made, &review);
			if (!d) {
				if (review)
					flag_too_wide(a, fam, &places, path,
						      f->is_dir, &n_too_wide);
				continue;
			}
			path = d;
			as_dir = !made;
		} else if (f->is_dir && f->write && temp_dir(&places, path)) {
			/* entries made or removed right in a temporary
			 * directory (the kernel's record of the directory
			 * changed): those the run makes, not the directory */
			path = sb_path_join(a, path, "*");
			as_dir = false;
			made = true;
		} else if (as_dir) {
			path = d;
		} else if (f->is_dir) {
			struct sb_learned_file r = *f;

			/* written where no rule may grant it (home): its
			 * listing may still be needed; whether the entries
			 * made in it got rules is known once all are seen */
			r.write = false;
			if (!outside_dir(ctx, f, &list) &&
			    (!listed || !outside_dir(ctx, &r, &list))) {
				if (f->write &&
				    !sb_str_in(path, wide.v, wide.n))
					*SB_VEC_PUSH(a, wide) = path;
				continue;
			}
			as_dir = true;
			/* a directory the run made, removed or changed right
			 * in a working directory no rule may grant ($HOME):
			 * a program's output, which it may clear and make
			 * again; that needs expose-new=, which the supervisor
			 * performs (elsewhere, ~/.cache/app, it stays the
			 * expose-rw= of the directory) */
			entry = f->write && !list && !too_wide(ctx, path) &&
				too_wide(ctx, dir_name(a, path)) && ctx->cwd &&
				strcmp(dir_name(a, path), ctx->cwd) == 0;
		}
		for (k = 0; k < w.n; k++)
			if (strcmp(w.v[k].path, path) == 0)
				break;
		if (k < w.n) {
			w.v[k].write |= f->write || made;
			w.v[k].list = w.v[k].list && list;
			w.v[k].entry |= entry;
			w.v[k].made |= made;
			continue;
		}
		nw = SB_VEC_PUSH(a, w);
		nw->path = path;
		nw->write = f->write || made;
		nw->is_dir = as_dir;
		nw->list = list;
		nw->entry = entry;
		nw->made = made;
	}
	/* a path no rule can spell is shown for review, never written (and
	 * covers nothing below it) */
	for (i = 0; i < w.n; i++) {
		const char *real = ctx->real_path
					   ? ctx->real_path(a, w.v[i].path)
					   : NULL;
		const char *header = unspellable_header;

		/* there (lstat) but not resolved: a dangling link, which
		 * would reach whatever is made at its target later */
		if ((real && strcmp(real, w.v[i].path) != 0) ||
		    (!real && ctx->real_path && ctx->exists &&
		     ctx->exists(w.v[i].path)))
			header = swapped_header;
		else if (spellable(&places, w.v[i].path))
			continue;
		flag_under(a, fam, header,
			   sb_arena_printf(a, "expose-%s=%s",
					   want_kind(&w.v[i]),
					   sb_learn_escape(a, w.v[i].path)));
		w.v[i].dropped = true;
	}
	for (i = 0; i < wide.n; i++)
		if (!entries_granted(p, w.v, w.n, wide.v[i]))
			flag_too_wide(a, fam, &places, wide.v[i], true,
				      &n_too_wide);
	/* a learned directory covers what lies below it with the same or a
	 * narrower mode: that line would add nothing */
	for (i = 0; i < w.n; i++) {
		for (j = 0; j < w.n && !w.v[i].dropped; j++)
			if (j != i && w.v[j].is_dir && !w.v[j].list &&
			    !w.v[j].dropped &&
			    strcmp(w.v[j].path, w.v[i].path) != 0 &&
			    sb_path_under(w.v[i].path, w.v[j].path) &&
			    (w.v[j].write || !w.v[i].write))
				w.v[i].dropped = true;
		if (!w.v[i].dropped &&
		    clashes(p, w.v[i].path, want_mode(&w.v[i])))
			w.v[i].dropped = true;
		w.v[i].value = spell_path(a, &places, w.v[i].path);
	}
	if (!w.n)
		return;
	qsort(w.v, w.n, sizeof(*w.v), cmp_want);
	g = new_group(a, fam, NULL);
	for (i = 0; i < w.n; i++)
		if (!w.v[i].dropped)
			*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(
				a, "expose-%s=%s", want_kind(&w.v[i]),
				w.v[i].value);
}

/* ---- network ---- */

/* The smallest variable name whose value is 'value' (and whose name
 * contains "port" when 'port_only'), or NULL. */
static const char *env_named(struct sb_arena *a, const char *const *envp,
			     const char *value, bool port_only)
{
	const char *best = NULL;
	size_t n = strlen(value);

	for (; envp && *envp; envp++) {
		const char *eq = strchr(*envp, '=');
		char *name, *c;
		bool has_port;

		if (!eq || strcmp(eq + 1, value) != 0 || !n)
			continue;
		name = sb_arena_strndup(a, *envp, (size_t)(eq - *envp));
		if (!safe_name(name, false))
			continue;
		for (c = name, has_port = false; *c && !has_port; c++)
			has_port = (c[0] | 0x20) == 'p' &&
				   (c[1] | 0x20) == 'o' &&
				   (c[2] | 0x20) == 'r' &&
				   (c[3] | 0x20) == 't';
		if (port_only && !has_port)
			continue;
		if (!best || strcmp(name, best) < 0)
			best = name;
	}
	return best;
}

static bool addr_is_any(const struct sb_addr *ad)
{
	size_t k, len = ad->family == AF_INET6 ? 16 : 4;

	for (k = 0; k < len; k++)
		if (ad->bytes[k])
			return false;
	return true;
}

struct net_key {
	const char *dest; /* as written */
	unsigned kind, dir;
	bool self; /* port 'self': the ports the sandbox listens on */
	SB_VEC(uint16_t) ports;
	const char *line;
};

static int cmp_u16(const void *x, const void *y)
{
	return (int)*(const uint16_t *)x - (int)*(const uint16_t *)y;
}

static int cmp_net_line(const void *x, const void *y)
{
	return strcmp(((const struct net_key *)x)->line,
		      ((const struct net_key *)y)->line);
}

/* Does a learned connection (not a lookup) name 'host'? */
static bool named_out(const struct sb_learned *l, const char *host)
{
	size_t i;

	for (i = 0; i < l->nets.n; i++)
		if (!l->nets.v[i].lookup && l->nets.v[i].host &&
		    l->nets.v[i].dir == SB_NET_OUT &&
		    sb_host_eq(l->nets.v[i].host, host))
			return true;
	return false;
}

static void gen_net(struct sb_arena *a, const struct sb_learned *l,
		    const struct sb_learn_ctx *ctx, struct family *fam)
{
	SB_VEC(struct net_key) keys = { 0 };
	struct group *g;
	size_t i, k;

	for (i = 0; i < l->nets.n; i++) {
		const struct sb_learned_net *n = &l->nets.v[i];
		const struct sb_net_rule *r = NULL;
		const char *dest, *var;
		struct net_key *key;

		if (n->lookup) {
			/* a name looked up only: the rule that names it with
			 * no port lets it resolve and reach nothing, unless
			 * a connection to it, or a rule in force, names it */
			if (!safe_host(n->host) || named_out(l, n->host) ||
			    (ctx->policy &&
			     (sb_pin_lookup(ctx->policy, n->host) ||
			      sb_net_names_any(ctx->policy))))
				continue;
		} else if (ctx->policy) {
			r = n->self ? sb_net_self_rule(ctx->policy, n->kind,
						       n->dir, &n->addr)
				    : sb_net_decide(ctx->policy, n->kind,
						    n->dir, &n->addr, n->port);
		}
		if (r && r->allow)
			continue;
		if (n->dir == SB_NET_IN && addr_is_any(&n->addr)) {
			dest = "*";
		} else if (n->host && safe_host(n->host)) {
			var = env_named(a, ctx->envp, n->host, false);
			dest = var ? sb_arena_printf(a, "${%s}", var)
				   : n->host;
		} else {
			const char *txt = sb_addr_format(a, &n->addr);

			var = env_named(a, ctx->envp, txt, false);
			dest = var ? sb_arena_printf(a, "${%s}", var)
				   : sb_arena_printf(a, "%s/%d", txt,
						     n->addr.family == AF_INET6
							     ? 128
							     : 32);
		}
		for (k = 0; k < keys.n; k++)
			if (keys.v[k].kind == n->kind &&
			    keys.v[k].dir == n->dir &&
			    keys.v[k].self == n->self &&
			    strcmp(keys.v[k].dest, dest) == 0)
				break;
		key = k < keys.n ? &keys.v[k] : SB_VEC_PUSH(a, keys);
		key->dest = dest;
		key->kind = n->kind;
		key->dir = n->dir;
		key->self = n->self;
		if (n->self || n->lookup)
			continue;
		for (k = 0; k < key->ports.n; k++)
			if (key->ports.v[k] == n->port)
				break;
		if (k == key->ports.n)
			*SB_VEC_PUSH(a, key->ports) = n->port;
	}
	if (!keys.n)
		return;
	for (i = 0; i < keys.n; i++) {
		struct net_key *key = &keys.v[i];
		struct sb_buf ports = { 0 };

		if (key->self)
			sb_buf_puts(&ports, "self");
		if (key->ports.n) /* a 'self' key may have no port */
			qsort(key->ports.v, key->ports.n,
			      sizeof(*key->ports.v), cmp_u16);
		for (k = 0; k < key->ports.n; k++) {
			char num[8];
			const char *var;

			snprintf(num, sizeof(num), "%u", key->ports.v[k]);
			var = env_named(a, ctx->envp, num, true);
			if (k)
				sb_buf_puts(&ports, ",");
			if (var)
				sb_buf_printf(&ports, "${%s}", var);
			else
				sb_buf_puts(&ports, num);
		}
		key->line = sb_arena_printf(
			a, "net=ALLOW|%s|%s|%s|%s",
			key->kind == SB_NET_TCP ? "TCP" : "UDP", key->dest,
			ports.s ? ports.s : "",
			key->dir == SB_NET_IN ? "IN" : "OUT");
		sb_buf_free(&ports);
	}
	qsort(keys.v, keys.n, sizeof(*keys.v), cmp_net_line);
	g = new_group(a, fam, NULL);
	for (i = 0; i < keys.n; i++)
		*SB_VEC_PUSH(a, g->lines) = keys.v[i].line;
}

/* ---- imports ---- */

/* PEP 594 and its companions: deprecated or removed, still importable on
 * some supported CPython. */
static const char *const deprecated_modules[] = {
	"aifc",	   "asynchat", "asyncore",  "audioop",	"cgi",
	"cgitb",   "chunk",    "crypt",	    "distutils", "imghdr",
	"imp",	   "mailcap",  "msilib",    "nis",	"nntplib",
	"ossaudiodev", "pipes", "smtpd",    "sndhdr",	"spwd",
	"sunau",   "telnetlib", "uu",	    "xdrlib",
};

/* The union of sys.stdlib_module_names of CPython 3.10 to 3.13, plus what
 * 3.9 had and 3.10 removed (formatter, parser, symbol) and what 3.14 adds
 * (annotationlib, compression). Names starting with '_' are standard by
 * rule and not listed. Sorted (strcmp) for bsearch. */
static const char *const stdlib_modules[] = {
	"abc", "aifc", "annotationlib", "antigravity", "argparse", "array",
	"ast", "asynchat", "asyncio", "asyncore", "atexit", "audioop",
	"base64", "bdb", "binascii", "binhex", "bisect", "builtins", "bz2",
	"cProfile", "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd",
	"code", "codecs", "codeop", "collections", "colorsys", "compileall",
	"compression", "concurrent", "configparser", "contextlib",
	"contextvars", "copy", "copyreg", "crypt", "csv", "ctypes", "curses",
	"dataclasses", "datetime", "dbm", "decimal", "difflib", "dis",
	"distutils", "doctest", "email", "encodings", "ensurepip", "enum",
	"errno", "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch",
	"formatter", "fractions", "ftplib", "functools", "gc", "genericpath",
	"getopt", "getpass", "gettext", "glob", "graphlib", "grp", "gzip",
	"hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib",
	"imghdr", "imp", "importlib", "inspect", "io", "ipaddress",
	"itertools", "json", "keyword", "lib2to3", "linecache", "locale",
	"logging", "lzma", "mailbox", "mailcap", "marshal", "math",
	"mimetypes", "mmap", "modulefinder", "msilib", "msvcrt",
	"multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath",
	"nturl2path", "numbers", "opcode", "operator", "optparse", "os",
	"ossaudiodev", "parser", "pathlib", "pdb", "pickle", "pickletools",
	"pipes", "pkgutil", "platform", "plistlib", "poplib", "posix",
	"posixpath", "pprint", "profile", "pstats", "pty", "pwd",
	"py_compile", "pyclbr", "pydoc", "pydoc_data", "pyexpat", "queue",
	"quopri", "random", "re", "readline", "reprlib", "resource",
	"rlcompleter", "runpy", "sched", "secrets", "select", "selectors",
	"shelve", "shlex", "shutil", "signal", "site", "smtpd", "smtplib",
	"sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile",
	"sre_constants", "sre_parse", "ssl", "stat", "statistics", "string",
	"stringprep", "struct", "subprocess", "sunau", "symbol", "symtable",
	"sys", "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib",
	"tempfile", "termios", "textwrap", "this", "threading", "time",
	"timeit", "tkinter", "token", "tokenize", "tomllib", "trace",
	"traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types",
	"typing", "unicodedata", "unittest", "urllib", "uu", "uuid", "venv",
	"warnings", "wave", "weakref", "webbrowser", "winreg", "winsound",
	"wsgiref", "xdrlib", "xml", "xmlrpc", "zipapp", "zipfile",
	"zipimport", "zlib", "zoneinfo",
};

enum { G_DANGEROUS, G_STANDARD, G_DEPRECATED, G_EXTERNAL, G_COUNT };

static const char *const import_headers[G_COUNT] = {
	"# \u26a0 Dangerous!",
	"# Standard Python",
	"# \u26a0 Deprecated Python module",
	"# External modules (Are you sure about the origin?)",
};

static int import_group(const char *name)
{
	if (sb_modtab_is_dangerous(name))
		return G_DANGEROUS;
	if (sb_str_in(name, deprecated_modules,
		      SB_ARRAY_LEN(deprecated_modules)))
		return G_DEPRECATED;
	if (name[0] == '_' ||
	    in_sorted(stdlib_modules, SB_ARRAY_LEN(stdlib_modules), name))
		return G_STANDARD;
	return G_EXTERNAL;
}

/* The module names the existing text already grants, so that a packed
 * line never repeats a name another packed line holds. */
static void names_in_text(struct sb_arena *a, const char *text,
			  str_vec *out)
{
	const char *s = text;

	while (s && *s) {
		size_t n = strcspn(s, "\n");
		char *line = sb_strip(a, s, n), *v, *item, *save = NULL;

		s += n + (s[n] == '\n');
		if (!sb_str_starts(line, "python-import="))
			continue;
		v = line + strlen("python-import=");
		v[strcspn(v, "#")] = '\0';
		for (item = strtok_r(v, ",", &save); item;
		     item = strtok_r(NULL, ",", &save))
			*SB_VEC_PUSH(a, *out) =
				sb_strip(a, item, strlen(item));
	}
}

#define IMPORT_WIDTH 70

static void gen_imports(struct sb_arena *a, const struct sb_learned *l,
			const struct sb_learn_ctx *ctx, const char *existing,
			struct family *fam)
{
	const struct sb_policy *p = ctx->policy;
	str_vec groups[G_COUNT] = { { 0 } }, have = { 0 };
	size_t i, j, gi;

	if (p && p->import_all)
		return;
	names_in_text(a, existing, &have);
	for (i = 0; i < l->imports.n; i++) {
		const char *name = l->imports.v[i];
		bool skip;

		if (sb_learn_hidden_chars(name)) {
			flag_name(a, fam, sb_arena_printf(
						  a, "python-import=%s",
						  sb_learn_escape(a, name)));
			continue;
		}
		skip = !safe_module(name) ||
			    strcmp(name, "pysandboxes") == 0 ||
			    sb_str_in(name, have.v, have.n);

		for (j = 0; p && !skip && j < p->imports.n; j++)
			skip = strcmp(p->imports.v[j].name, name) == 0;
		if (!skip)
			*SB_VEC_PUSH(a, groups[import_group(name)]) = name;
	}
	for (gi = 0; gi < G_COUNT; gi++) {
		str_vec *v = &groups[gi];
		struct group *g;
		struct sb_buf cur = { 0 };

		if (!v->n)
			continue;
		qsort(v->v, v->n, sizeof(*v->v), cmp_str);
		g = new_group(a, fam, import_headers[gi]);
		g->blank_after = true;
		for (i = 0; i < v->n; i++) {
			bool fits = cur.len &&
				    cur.len + 2 + strlen(v->v[i]) <=
					    IMPORT_WIDTH &&
				    gi != G_EXTERNAL;

			if (cur.len && !fits) {
				*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(
					a, "python-import=%s", cur.s);
				cur.len = 0;
			}
			if (cur.len)
				sb_buf_puts(&cur, ", ");
			sb_buf_puts(&cur, v->v[i]);
		}
		*SB_VEC_PUSH(a, g->lines) =
			sb_arena_printf(a, "python-import=%s", cur.s);
		sb_buf_free(&cur);
	}
}

/* ---- sensitive calls ---- */

/* The tokens of the records "key=token", sorted, once each. */
static void eval_tokens(struct sb_arena *a, const struct sb_learned *l,
			const char *key, str_vec *out)
{
	size_t i, n = strlen(key);

	for (i = 0; i < l->evals.n; i++) {
		const char *r = l->evals.v[i];

		if (strncmp(r, key, n) == 0 && r[n] == '=' && r[n + 1] &&
		    !sb_str_in(r + n + 1, out->v, out->n))
			*SB_VEC_PUSH(a, *out) = r + n + 1;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
}


struct raw_grant_ctx {
	const struct sb_learned *l;
	const struct sb_policy *p;
};

/* Granted by the rules in force, or learned in this run (sb_eval_raw_grant:
 * a raw eval, exec or compile makes eval-* rules moot). */
static bool raw_granted(long k, const void *v)
{
	const struct raw_grant_ctx *c = v;
	size_t i;

	if (c->p && c->p->api_allow && c->p->api_allow[k])
		return true;
	for (i = 0; i < c->l->apis.n; i++)
		if (sb_api_lookup(c->l->apis.v[i]) == k)
			return true;
	return false;
}


static void gen_api(struct sb_arena *a, const struct sb_learned *l,
		    const struct sb_learn_ctx *ctx, struct family *fam)
{
	const struct sb_policy *p = ctx->policy;
	const uint8_t *allowed = p ? p->api_allow : NULL;
	uint8_t *learned = sb_arena_alloc(a, sb_api_registry_len + 1);
	size_t i;
	int c;

	const struct raw_grant_ctx rc = { l, p };
	str_vec via = { 0 };

	for (i = 0; i < l->apis.n; i++) {
		long k = sb_api_lookup(l->apis.v[i]);

		if (k >= 0 && !(allowed && allowed[k]))
			learned[k] = 1;
	}
	/* with a raw eval, exec or compile granted the eval-* rules are
	 * written commented out (gen_eval): the evaluations need the raw
	 * builtins they went through (records "eval-on=builtins.eval") */
	if (sb_eval_raw_grant(raw_granted, &rc))
		eval_tokens(a, l, "eval-on", &via);
	for (i = 0; i < via.n; i++) {
		long k = sb_api_lookup(via.v[i]);

		if (k >= 0 && !(allowed && allowed[k]))
			learned[k] = 1;
	}
	for (c = 0; c < SB_API_CATEGORY_COUNT; c++) {
		bool any = false, whole = true;
		struct group *g;

		/* Windows-only entries never apply here; version bounds are
		 * ignored so one file serves every CPython on the machine */
		for (i = 0; i < sb_api_registry_len; i++) {
			const struct sb_api_entry *e = &sb_api_registry[i];

			if ((int)e->category != c)
				continue;
			any |= learned[i];
			if (!(e->tags & SB_API_WINDOWS) && !learned[i] &&
			    !(allowed && allowed[i]))
				whole = false;
		}
		if (!any)
			continue;
		g = new_group(
			a, fam,
			sb_arena_printf(
				a, "# %s%s: %s",
				sb_api_category_is_dangerous(c) ? "\u26a0 "
								: "",
				sb_api_category_name(c),
				sb_api_category_doc(c)));
		if (whole) {
			*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(
				a, "python-api=ALLOW:%s",
				sb_api_category_name(c));
			continue;
		}
		for (i = 0; i < sb_api_registry_len; i++)
			if (learned[i] && (int)sb_api_registry[i].category == c)
				*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(
					a, "python-api=ALLOW:%s",
					sb_api_registry[i].qualname);
	}
}

/* ---- dynamically evaluated code (<learning_guard_eval>) ---- */

/* A syntax group replaces its nodes only if every node of it was seen. */
static void syntax_groups(struct sb_arena *a, str_vec *t)
{
	const char *const *nodes;
	const char *name;
	bool *gone = sb_arena_alloc(a, t->n + 1);
	str_vec out = { 0 };
	size_t i, k, j;

	for (i = 0; (name = sb_eval_syntax_group_at(i, &nodes)); i++) {
		bool all = nodes[0] != NULL;

		for (k = 0; all && nodes[k]; k++)
			all = sb_str_in(nodes[k], t->v, t->n);
		if (!all)
			continue;
		for (j = 0; j < t->n; j++)
			for (k = 0; nodes[k]; k++)
				gone[j] |= strcmp(t->v[j], nodes[k]) == 0;
		*SB_VEC_PUSH(a, out) = name;
	}
	for (j = 0; j < t->n; j++)
		if (!gone[j])
			*SB_VEC_PUSH(a, out) = t->v[j];
	if (out.n)
		qsort(out.v, out.n, sizeof(*out.v), cmp_str);
	*t = out;
}

static bool default_eval_profile(const struct sb_policy *p)
{
	size_t i;

	for (i = 0; p && i < p->eval_profiles.n; i++)
		if (!p->eval_profiles.v[i].name[0])
			return true;
	return false;
}

/* The narrowest eval-* lines for what the trusted run evaluated: the
 * guard checked each source against the default profile and recorded
 * the rule each refusal named (never python-api=ALLOW:builtins.eval for
 * a source string). */
static void gen_eval(struct sb_arena *a, const struct sb_learned *l,
		     const struct sb_learn_ctx *ctx, struct family *fam)
{
	static const char *const lists[] = {
		"eval-syntax", "eval-import", "eval-call", "eval-attribute",
		"eval-magic",
	};
	static const char *const maxima[] = { "eval-max-depth",
					      "eval-max-nodes" };
	static const char observed[] = "                    # \u26a0 "
				       "runtime-observed";
	const struct raw_grant_ctx rc = { l, ctx->policy };
	/* the run also needed a raw eval, exec or compile (a code object the
	 * guard did not compile): the policy refuses eval-* lines beside its
	 * grant, so they are written for review, commented out */
	const char *raw = sb_eval_raw_grant(raw_granted, &rc);
	const char *off = raw ? "# " : "";
	struct group *g;
	size_t i, k;

	if (!l->evals.n)
		return;
	g = new_group(a, fam,
		      raw ? sb_arena_printf(
				    a, "# Not in force: python-api=ALLOW:%s "
				       "runs code strings unguarded, and the "
				       "eval-* rules below would guard "
				       "nothing (the two are refused together)",
				    raw)
			  : NULL);
	for (i = 0; i < SB_ARRAY_LEN(lists); i++) {
		str_vec t = { 0 };
		struct sb_buf b = { 0 };
		bool hidden = false;

		eval_tokens(a, l, lists[i], &t);
		if (i == 0)
			syntax_groups(a, &t);
		if (!t.n)
			continue;
		sb_buf_printf(&b, "%s=", lists[i]);
		for (k = 0; k < t.n; k++) {
			hidden |= sb_learn_hidden_chars(t.v[k]);
			sb_buf_printf(&b, "%s%s", k ? ", " : "", t.v[k]);
		}
		if (hidden)
			flag_name(a, fam, sb_learn_escape(a, b.s));
		else
			*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(
				a, "%s%s%s", off, b.s, i >= 3 ? observed : "");
		sb_buf_free(&b);
	}
	for (i = 0; i < SB_ARRAY_LEN(maxima); i++) {
		str_vec t = { 0 };
		long best = 0;

		eval_tokens(a, l, maxima[i], &t);
		for (k = 0; k < t.n; k++)
			if (atol(t.v[k]) > best)
				best = atol(t.v[k]);
		if (best > 0)
			*SB_VEC_PUSH(a, g->lines) = sb_arena_printf(
				a, "%s%s=%ld", off, maxima[i], best);
	}
	/* an evaluation that needed nothing beyond the defaults still needs
	 * the default profile on, or eval() stays refused */
	if (!raw && !g->lines.n && !default_eval_profile(ctx->policy))
		*SB_VEC_PUSH(a, g->lines) = "eval-namespace=adaptive";
}

/* ---- the merge (4.5) ---- */

static bool family_empty(const struct family *fam)
{
	size_t i;

	for (i = 0; i < fam->groups.n; i++)
		if (fam->groups.v[i].lines.n)
			return false;
	return true;
}

/* Drop the lines the text already holds (compared stripped), and the
 * duplicates among the generated ones. */
static void drop_present(struct sb_arena *a, struct family *fam,
			 str_vec *present)
{
	size_t i, j, o;

	for (i = 0; i < fam->groups.n; i++) {
		struct group *g = &fam->groups.v[i];

		for (j = o = 0; j < g->lines.n; j++) {
			const char *t = g->lines.v[j];

			if (present->n &&
			    bsearch(&t, present->v, present->n,
				    sizeof(*present->v), cmp_str))
				continue;
			if (sb_str_in(t, g->lines.v, o))
				continue;
			g->lines.v[o++] = t;
		}
		g->lines.n = o;
	}
}

static void put_block(struct sb_buf *out, const struct family *fam,
		      const struct sb_learn_ctx *ctx)
{
	size_t i, j;

	sb_buf_printf(out, "# Add rules (%s)\n", ctx->date);
	/* provenance for the rule review (seed 10.4) */
	if (ctx->learned_by)
		sb_buf_printf(out, "# Learned by %s\n", ctx->learned_by);
	for (i = 0; i < fam->groups.n; i++) {
		const struct group *g = &fam->groups.v[i];
		bool last = true;

		if (!g->lines.n)
			continue;
		for (j = i + 1; j < fam->groups.n; j++)
			last &= !fam->groups.v[j].lines.n;
		if (g->header)
			sb_buf_printf(out, "%s\n", g->header);
		for (j = 0; j < g->lines.n; j++)
			sb_buf_printf(out, "%s\n", g->lines.v[j]);
		/* the block's own empty line ends the last group */
		if (g->blank_after && !last)
			sb_buf_puts(out, "\n");
	}
	sb_buf_puts(out, "\n");
}

/* A learned rule's path as the parser will read it: "~" from HOME, "."
 * from the working directory. */
static const char *rule_path(struct sb_arena *a, const struct sb_learn_ctx *ctx,
			     const char *v)
{
	if ((v[0] == '~' && (!v[1] || v[1] == '/')) && ctx->home)
		return sb_path_normalize(a, sb_arena_printf(a, "%s%s",
							     ctx->home, v + 1));
	if (v[0] == '/')
		return sb_path_normalize(a, v);
	return sb_path_normalize(a, sb_arena_printf(a, "%s/%s", ctx->cwd, v));
}

/* The directory a learned value names: its place's spelling
 * ("${TMPDIR:-/tmp}", "~/.cache"...) read back as collect_places() spelled
 * it, else a path as the parser reads it. */
static const char *unspell(struct sb_arena *a, const struct sb_learn_ctx *ctx,
			   const char *v)
{
	place_vec pv = { 0 };
	size_t i, n;

	collect_places(a, ctx, &pv);
	for (i = 0; i < pv.n; i++) {
		n = strlen(pv.v[i].spelling);
		if (pv.v[i].spelling[0] != '.' && pv.v[i].spelling[0] != '~' &&
		    strncmp(v, pv.v[i].spelling, n) == 0 &&
		    (!v[n] || v[n] == '/'))
			return sb_path_normalize(
				a, sb_arena_printf(a, "%s%s", pv.v[i].dir,
						   v + n));
	}
	return rule_path(a, ctx, v);
}

/* Could a learned expose-made= of 'made' (DIR + "/" + pattern) make
 * 'path': is it below DIR, with no entry there yet on its way (the one
 * right in DIR)? As sb_policy_writable_root() judges it. */
static bool made_could_make(struct sb_arena *a, const struct sb_learn_ctx *ctx,
			    const char *made, const char *path)
{
	const char *dir = dir_name(a, made), *rest;
	size_t n;

	if (strcmp(path, dir) == 0 || !sb_path_under(path, dir))
		return false;
	rest = path + (strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1);
	n = strcspn(rest, "/");
	return !ctx->exists ||
	       !ctx->exists(sb_arena_strndup(a, path,
					     (size_t)(rest + n - path)));
}

/* The expose-rw=, expose-new= or expose-made= that holds 'path', learned
 * or already in force, or NULL: the enforcer refuses an absent include
 * under either. */
static const char *learned_rw_over(struct sb_arena *a,
				   const struct sb_learn_ctx *ctx,
				   const struct family *fam, const char *path)
{
	const struct sb_policy *p = ctx->policy;
	size_t i, j;

	for (i = 0; p && i < p->exposes.n; i++)
		if (p->exposes.v[i].mode == SB_EXPOSE_RW &&
		    sb_path_under(path, p->exposes.v[i].path))
			return sb_arena_printf(a, "expose-rw=%s",
					       p->exposes.v[i].path);

	for (i = 0; i < fam->groups.n; i++)
		for (j = 0; j < fam->groups.v[i].lines.n; j++) {
			const char *line = fam->groups.v[i].lines.v[j];
			size_t n = sb_str_starts(line, "expose-rw=")    ? 10
				   : sb_str_starts(line, "expose-new=") ? 11
									: 0;

			if (n && sb_path_under(path, unspell(a, ctx, line + n)))
				return line;
			if (sb_str_starts(line, "expose-made=") &&
			    made_could_make(a, ctx, unspell(a, ctx, line + 12),
					    path))
				return line;
		}
	return NULL;
}

/* An active 'include "X"' whose file is absent and that a learned
 * expose-rw= tree would hold: the enforcing run refuses it (the program
 * could create it and write its own rules), so it is written commented
 * out, with why, for the reviewer. NULL: keep the line. */
static const char *disabled_include(struct sb_arena *a,
				    const struct sb_learn_ctx *ctx,
				    const struct family *files, const char *line)
{
	const char *path, *rw, *file;

	if (!ctx->exists)
		return NULL;
	/* the parser's own lexer and resolution: a bare name is next to the
	 * rule file, not in the working directory */
	file = ctx->rule_file;
	if (!file)
		file = sb_arena_printf(a, "%s/.py-sandboxes", ctx->cwd);
	path = sb_policy_include_target(a, line, file, ctx->cwd, ctx->home);
	if (!path || ctx->exists(path) ||
	    !(rw = learned_rw_over(a, ctx, files, path)))
		return NULL;
	return sb_arena_printf(a,
			       "# REVIEW: the include below is absent and '%s' "
			       "would let the program create it and write its "
			       "own rules: python-sb refuses that, so learning "
			       "turned it off. Create the file (it may be "
			       "empty), then uncomment the line.\n#%s",
			       rw, line);
}

enum { F_ENVS, F_FILES, F_SOCKET, F_IMPORT, F_API, F_EVAL, F_COUNT };

void sb_learn_merge(struct sb_arena *a, const char *existing,
		    const struct sb_learned *l, const struct sb_learn_ctx *ctx,
		    struct sb_buf *out, bool *added)
{
	static const char *const markers[F_COUNT] = {
		"envs", "files", "socket", "import", "api", "eval",
	};
	struct family fams[F_COUNT];
	bool done[F_COUNT] = { false };
	const char *text = existing ? existing : sb_learn_template;
	const char *s;
	str_vec present = { 0 };
	size_t i;

	memset(fams, 0, sizeof(fams));
	for (i = 0; i < F_COUNT; i++)
		fams[i].marker = markers[i];
	gen_env(a, l, ctx, &fams[F_ENVS]);
	gen_files(a, l, ctx, &fams[F_FILES]);
	gen_net(a, l, ctx, &fams[F_SOCKET]);
	gen_imports(a, l, ctx, text, &fams[F_IMPORT]);
	gen_api(a, l, ctx, &fams[F_API]);
	gen_eval(a, l, ctx, &fams[F_EVAL]);

	for (s = text; *s;) {
		size_t n = strcspn(s, "\n");

		*SB_VEC_PUSH(a, present) = sb_strip(a, s, n);
		s += n + (s[n] == '\n');
	}
	if (present.n)
		qsort(present.v, present.n, sizeof(*present.v), cmp_str);
	*added = false;
	for (i = 0; i < F_COUNT; i++) {
		drop_present(a, &fams[i], &present);
		if (family_empty(&fams[i]))
			done[i] = true;
		else
			*added = true;
	}

	for (s = text; *s;) {
		size_t n = strcspn(s, "\n");
		char *line = sb_strip(a, s, n);
		const char *off;

		for (i = 0; i < F_COUNT; i++) {
			char *close;

			if (done[i])
				continue;
			close = sb_arena_printf(a, "# </learning_guard_%s>",
						fams[i].marker);
			if (strcmp(line, close) == 0) {
				put_block(out, &fams[i], ctx);
				done[i] = true;
			}
		}
		off = disabled_include(a, ctx, &fams[F_FILES], line);
		if (off)
			sb_buf_puts(out, off);
		else
			sb_buf_add(out, s, n);
		sb_buf_puts(out, "\n");
		s += n + (s[n] == '\n');
	}
	/* A family whose closing marker is gone (a hand-written file) gets
	 * its block at the end, inside a fresh pair of markers so that the
	 * next run finds them. */
	for (i = 0; i < F_COUNT; i++) {
		if (done[i])
			continue;
		sb_buf_printf(out, "\n# <learning_guard_%s>\n", fams[i].marker);
		put_block(out, &fams[i], ctx);
		sb_buf_printf(out, "# </learning_guard_%s>\n", fams[i].marker);
	}
	if (!out->s)
		sb_buf_puts(out, "");
}

/* ---- partial mode's result mode (sb_learn_result_mode) ---- */

#define RESULT_OPEN "# <learning_remote_result>"
#define RESULT_CLOSE "# </learning_remote_result>"
#define RESULT_WARNING                                                       \
	"# WARNING: observed return pickles reconstruct application objects. " \
	"Deserialization may execute class-defined code in the parent "        \
	"process."
#define RESULT_INCLUDED                                                       \
	"# remote-result-mode=objects is needed: set it in the included "     \
	"profile that sets the mode."
#define MODE_OBJECTS "remote-result-mode=objects"
#define MODE_DATA "remote-result-mode=data-only"

struct span {
	const char *s;
	size_t n;
};

static struct span strip_span(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return (struct span){ s, n };
}

/* The line that starts at p, without its newline; *nl: the newline, or NULL
 * for the last line. */
static struct span line_at(const char *p, const char *end, const char **nl)
{
	*nl = memchr(p, '\n', (size_t)(end - p));
	return (struct span){ p, *nl ? (size_t)(*nl - p) : (size_t)(end - p) };
}

static bool span_is(struct span sp, const char *word)
{
	return sp.n == strlen(word) && !memcmp(sp.s, word, sp.n);
}

/* The value of an active 'remote-result-mode=' line, or NULL. */
static bool mode_line(struct span line, struct span *value)
{
	struct span t = strip_span(line.s, line.n), key;
	const char *eq = memchr(t.s, '=', t.n);

	if (!t.n || t.s[0] == '#')
		return false;
	key = strip_span(t.s, eq ? (size_t)(eq - t.s) : t.n);
	if (key.n != strlen("remote-result-mode") ||
	    strncasecmp(key.s, "remote-result-mode", key.n))
		return false;
	*value = eq ? strip_span(eq + 1, t.n - (size_t)(eq + 1 - t.s))
		    : (struct span){ "", 0 };
	return true;
}

static bool value_is(struct span v, const char *word)
{
	return v.n == strlen(word) && !strncasecmp(v.s, word, v.n);
}

bool sb_learn_result_mode(const char *text, bool objects, bool in_force,
			  enum sb_mode_origin origin, const char *date,
			  struct sb_buf *out)
{
	bool has_objects = false, has_data = false, has_note = false;
	bool any_active = false, objects_set = false, included, supersede;
	const char *block[3], *p, *end = text + strlen(text), *close = NULL;
	size_t n_block = 0, i;
	struct span value;

	for (p = text; p <= end;) {
		const char *nl;
		struct span line = line_at(p, end, &nl);
		struct span t = strip_span(line.s, line.n);

		has_objects |= span_is(t, MODE_OBJECTS);
		has_data |= span_is(t, MODE_DATA);
		has_note |= span_is(t, RESULT_INCLUDED);
		if (!close && span_is(t, RESULT_CLOSE))
			close = p;
		if (mode_line(line, &value)) {
			any_active = true;
			objects_set |= value_is(value, "objects") ||
				       value_is(value, "default");
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	included = origin == SB_MODE_FILE && !any_active;
	supersede = false;
	if (objects) {
		if (objects_set || (included && in_force))
			return false; /* objects is set already */
		block[n_block++] = RESULT_WARNING;
		if (included) {
			if (has_note)
				return false;
			block[n_block++] = RESULT_INCLUDED;
		} else {
			if (has_objects && !any_active)
				return false;
			block[n_block++] = MODE_OBJECTS;
			supersede = true;
		}
	} else {
		if (any_active || origin != SB_MODE_IMPLICIT || has_data)
			return false;
		block[n_block++] = MODE_DATA;
	}

	/* the text, active mode lines superseded, the block before the
	 * block's closing marker (or a new block at the end) */
	for (p = text; p <= end;) {
		const char *nl;
		struct span line = line_at(p, end, &nl);

		if (p == close) {
			sb_buf_printf(out, "# Add rules (%s)\n", date);
			for (i = 0; i < n_block; i++)
				sb_buf_printf(out, "%s\n", block[i]);
			sb_buf_puts(out, "\n");
		}
		if (supersede && mode_line(line, &value)) {
			struct span t = strip_span(line.s, line.n);

			sb_buf_printf(out,
				      "# Previous mode superseded by learning "
				      "on %s:\n# %.*s",
				      date, (int)t.n, t.s);
		} else {
			sb_buf_add(out, line.s, line.n);
		}
		if (!nl)
			break;
		sb_buf_puts(out, "\n");
		p = nl + 1;
	}
	if (!close) {
		if (*text && end[-1] != '\n')
			sb_buf_puts(out, "\n");
		sb_buf_printf(out, RESULT_OPEN "\n# Add rules (%s)\n", date);
		for (i = 0; i < n_block; i++)
			sb_buf_printf(out, "%s\n", block[i]);
		sb_buf_puts(out, "\n" RESULT_CLOSE "\n");
	}
	return true;
}
