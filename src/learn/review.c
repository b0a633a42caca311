/* review.c - the rule review (python-sb(1), RULE REVIEW): reads a unified diff
 * of rule files, or two versions of one, and grades every added and removed
 * rule as high, medium or low risk, with the reason and the test that learned
 * it.
 *
 * Each line goes through the parser's lexer (sb_policy_lex_line) and then
 * through sb_policy_parse in flat mode, alone: the grade is read off the
 * parsed policy (its imports, networks, API grants, provider...), so a
 * spelling the enforcer reads differently is graded as the enforcer reads
 * it, and a line the enforcer refuses is graded "invalid". Paths and env=
 * are graded as written: the files they name may not exist where the review
 * runs. Pure: never prints, never exits, reads nothing.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_registry.h"
#include "modtab.h"
#include "policy.h"
#include "review.h"

static const char *const risk_names[SB_RISK_COUNT] = {
	"invalid", "high", "medium", "low",
};

const char *sb_risk_name(enum sb_risk r)
{
	return r < SB_RISK_COUNT ? risk_names[r] : "?";
}

/* Every host name "resolves" to one documentation address (RFC 5737): the
 * grade of net= depends on the rule's network, never on DNS. */
static enum sb_resolve_status doc_address(void *ctx, struct sb_arena *a,
					  const char *host,
					  struct sb_addr **addrs, size_t *n,
					  const char **why)
{
	(void)ctx;
	(void)host;
	(void)why;
	*addrs = sb_arena_alloc(a, sizeof(**addrs));
	(*addrs)->family = AF_INET;
	memcpy((*addrs)->bytes, "\xc0\x00\x02\x01", 4);
	*n = 1;
	return SB_RESOLVE_OK;
}

/* ---- grading one rule ---- */

struct grade {
	enum sb_risk risk;
	const char *why;
	bool restricts; /* removing it widens the profile */
};

static struct grade G(enum sb_risk risk, const char *why)
{
	return (struct grade){ risk, why, false };
}

/* A denial or a lock: low when added, a widening when removed. */
static struct grade R(const char *why)
{
	return (struct grade){ SB_RISK_LOW, why, true };
}

/* The home directory or '/', however spelled: '~/.', '${HOME}//',
 * '$HOME/x/..', '/./' (the flat parse knows no HOME, so a home prefix is
 * normalised here as a path of its own). */
static bool is_home_or_root(struct sb_arena *a, const char *v)
{
	static const char *const homes[] = { "${HOME}", "$HOME", "~" };
	const char *n;
	size_t i, len;

	if (!*v)
		return true;
	for (i = 0; i < SB_ARRAY_LEN(homes); i++) {
		len = strlen(homes[i]);
		if (strncmp(v, homes[i], len) == 0 &&
		    (v[len] == '\0' || v[len] == '/')) {
			n = sb_path_normalize(a, sb_arena_printf(a, "/h%s",
								 v + len));
			return strcmp(n, "/h") == 0 || strcmp(n, "/") == 0;
		}
	}
	return v[0] == '/' && strcmp(sb_path_normalize(a, v), "/") == 0;
}

/* A path whose last component comes from the environment: the text after
 * its last ${} reference (at the top level) does not end in a component of
 * its own ('${A}', '${HOME:-x}', '${A}/..', '${A}x'). The variable's value
 * is the reviewer's guess, not the run's: ${OLDPWD} or ${HOME:-x} is the
 * home directory in many shells, ${A:-/} is '/' wherever A is unset. A
 * reference followed by '/name' ends in that name, wherever it is. */
static bool env_decides(struct sb_arena *a, const char *v)
{
	const char *p, *tail = NULL;
	const char *n;
	unsigned depth = 0;

	for (p = v; *p; p++) {
		if (p[0] == '$' && p[1] == '{') {
			depth++;
			p++;
		} else if (*p == '}' && depth && --depth == 0) {
			tail = p + 1;
		}
	}
	if (depth)
		return true; /* unbalanced: the parser refuses it anyway */
	if (!tail)
		return false;
	if (*tail != '/')
		return true; /* the last component is partly the variable's */
	n = sb_path_normalize(a, sb_arena_printf(a, "/r%s", tail));
	return !sb_str_starts(n, "/r/");
}

static bool secret_like(const char *name)
{
	static const char *const words[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL",
	};
	size_t i, j, n = strlen(name);

	for (i = 0; i < SB_ARRAY_LEN(words); i++) {
		size_t w = strlen(words[i]);

		for (j = 0; j + w <= n; j++)
			if (strncasecmp(name + j, words[i], w) == 0)
				return true;
	}
	return false;
}

/* expose-ro=, expose-rw=, expose-new=, expose-made=: a path graded as
 * such */
static bool path_key(const char *key)
{
	return sb_str_starts(key, "expose-r") ||
	       strcmp(key, "expose-new") == 0 ||
	       strcmp(key, "expose-made") == 0;
}

/* expose-made=DIR/PATTERN: new entries of the program's own in DIR, and
 * nothing that was there; in the home directory (or /) a new one may be
 * a start-up file another program then runs (~/bin on PATH). */
static struct grade grade_made(struct sb_arena *a, const struct sb_policy *p,
			       const char *v)
{
	const char *slash = strrchr(v, '/');
	const char *dir = slash ? sb_arena_strndup(a, v, (size_t)(slash - v))
				: ".";

	if (p->errors.n && !strstr(p->errors.v[0].text, "must exist") && *v)
		return G(SB_RISK_INVALID, p->errors.v[0].text);
	if (!*dir || is_home_or_root(a, dir))
		return G(SB_RISK_HIGH, "new files and directories in the home "
				       "directory or /, which other programs "
				       "may read at their start");
	if (env_decides(a, dir))
		return G(SB_RISK_MEDIUM, "new files and directories of its "
					 "own in a directory the environment "
					 "decides");
	return G(SB_RISK_LOW, "new files and directories of its own; "
			      "nothing that was there before");
}

static struct grade grade_expose(struct sb_arena *a, const struct sb_policy *p,
				 const char *key, const char *value)
{
	/* expose-new= is read-write on its entry */
	bool rw = strcmp(key, "expose-rw") == 0 ||
		  strcmp(key, "expose-new") == 0;
	const char *v = sb_strip(a, value, strlen(value));
	bool wide = is_home_or_root(a, v);

	if (strcmp(key, "expose-made") == 0)
		return grade_made(a, p, v);
	/* the parser's own refusals other than a path missing here */
	if (p->errors.n && !strstr(p->errors.v[0].text, "must exist") &&
	    *v)
		return G(SB_RISK_INVALID, p->errors.v[0].text);
	if (p->exposes.n && strcmp(p->exposes.v[0].path, "/") == 0)
		wide = true;
	if (!wide && env_decides(a, v))
		return rw ? G(SB_RISK_HIGH, "write access to a path the "
					    "environment decides: it may be "
					    "the home directory or /")
			  : G(SB_RISK_MEDIUM, "read access to a path the "
					      "environment decides: it may be "
					      "the home directory or /");
	if (rw)
		return wide ? G(SB_RISK_HIGH, "write access to the whole home "
					      "directory or file system")
			    : G(SB_RISK_MEDIUM, "write access to files");
	return wide ? G(SB_RISK_MEDIUM, "read access to the whole home "
					"directory or file system")
		    : G(SB_RISK_LOW, "read access to files");
}

/* A variable that decides which code runs in the sandboxed process: the
 * dynamic linker's (LD_PRELOAD: a library beside the guard), the
 * interpreter's (PYTHONPATH, PYTHONSTARTUP, PYTHONWARNINGS imports a
 * category's module...), a shell's start-up file. */
static bool loads_code(const char *name)
{
	static const char *const harmless[] = {
		"PYTHONIOENCODING", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
		"PYTHONDONTWRITEBYTECODE", "PYTHONUTF8", "PYTHONNOUSERSITE",
		"PYTHONFAULTHANDLER", "PYTHONCOERCECLOCALE",
	};
	size_t i;

	if (sb_str_starts(name, "LD_") || strcmp(name, "BASH_ENV") == 0 ||
	    strcmp(name, "ENV") == 0 || strcmp(name, "GCONV_PATH") == 0)
		return true;
	if (!sb_str_starts(name, "PYTHON"))
		return false;
	for (i = 0; i < SB_ARRAY_LEN(harmless); i++)
		if (strcmp(name, harmless[i]) == 0)
			return false;
	return true;
}

static struct grade grade_env(const char *key, const char *value)
{
	size_t n = strcspn(value, "=");
	char name[256];

	if (strcmp(key, "unenv") == 0)
		return R("removes variables");
	if (!*value)
		return G(SB_RISK_INVALID, "env= needs a variable name");
	if (memchr(value, '*', n))
		return G(SB_RISK_HIGH, "passes every matching variable of the "
				       "host, secrets included");
	snprintf(name, sizeof(name), "%.*s", (int)n, value);
	if (loads_code(name))
		return G(SB_RISK_HIGH, "decides which code the sandboxed "
				       "process loads");
	if (secret_like(name))
		return G(SB_RISK_MEDIUM, "passes a variable whose name looks "
					 "like a secret");
	return G(SB_RISK_LOW, "passes a variable");
}

static struct grade grade_api(const struct sb_policy *p)
{
	size_t i, allowed = 0, in_cat[SB_API_CATEGORY_COUNT] = { 0 },
		  cat_size[SB_API_CATEGORY_COUNT] = { 0 };
	int c;

	for (i = 0; i < sb_api_registry_len; i++) {
		c = sb_api_registry[i].category;
		cat_size[c]++;
		if (p->api_allow[i]) {
			allowed++;
			in_cat[c]++;
		}
	}
	if (!allowed)
		return R("denies sensitive calls");
	if (allowed == sb_api_registry_len)
		return G(SB_RISK_HIGH, "allows every sensitive call");
	for (c = 0; c < SB_API_CATEGORY_COUNT; c++)
		if (sb_api_category_is_dangerous(c) && cat_size[c] &&
		    in_cat[c] == cat_size[c])
			return G(SB_RISK_HIGH,
				 "allows a whole warning category of "
				 "sensitive calls");
	return G(SB_RISK_MEDIUM, "allows a sensitive call");
}

static struct grade grade_net(const struct sb_policy *p)
{
	bool allow = false;
	size_t i;

	for (i = 0; i < p->nets.n; i++) {
		if (!p->nets.v[i].allow)
			continue;
		if (p->nets.v[i].prefix == 0)
			return G(SB_RISK_HIGH, "allows connections to or from "
					       "any address");
		allow = true;
	}
	return allow ? G(SB_RISK_MEDIUM, "allows network access")
		     : R("denies network access");
}

static struct grade grade_import(struct sb_arena *a, const struct sb_policy *p)
{
	size_t i;

	if (p->import_all)
		return G(SB_RISK_HIGH, "allows every module");
	for (i = 0; i < p->imports.n; i++) {
		const char *m = p->imports.v[i].name;

		if (!sb_modtab_is_dangerous(m))
			continue;
		return G(SB_RISK_HIGH,
			 sb_arena_printf(a, "'%s' %s", m,
					 sb_modtab_is_native(m)
						 ? "is native code with raw "
						   "memory access"
						 : "can undo the guard or run "
						   "code around it"));
	}
	return G(SB_RISK_LOW, "an ordinary module");
}

static bool any_caller_namespace(const struct sb_policy *p)
{
	size_t i;

	for (i = 0; i < p->eval_profiles.n; i++)
		if (p->eval_profiles.v[i].scalar[SB_EVAL_NAMESPACE] ==
			    SB_EVAL_NS_CALLER &&
		    p->eval_profiles.v[i].scalar_ref[SB_EVAL_NAMESPACE].file)
			return true;
	return false;
}

static struct grade grade_parsed(struct sb_arena *a, const struct sb_policy *p,
				 const char *key)
{
	if (strcmp(key, "python-import") == 0)
		return grade_import(a, p);
	if (strcmp(key, "python-api") == 0)
		return grade_api(p);
	if (strcmp(key, "net") == 0)
		return grade_net(p);
	if (strcmp(key, "learn") == 0)
		return p->locked ? R("locks the rule file")
				 : G(SB_RISK_HIGH, "the program's behaviour "
						   "becomes rules");
	if (strcmp(key, "log-file") == 0 || strcmp(key, "log-stderr") == 0 ||
	    strcmp(key, "log-max-size") == 0)
		return G(SB_RISK_LOW, "how refusals are reported, grants "
				      "nothing");
	if (strcmp(key, "py-sandbox") == 0 && !p->py_sandbox)
		return G(SB_RISK_HIGH, "turns the Python guard off");
	if (strcmp(key, "remote-result-guard") == 0 && !p->result_guard)
		return G(SB_RISK_HIGH, "turns the result guard off");
	if (strcmp(key, "remote-result-mode") == 0 &&
	    p->result_mode == SB_RESULT_OBJECTS)
		return G(SB_RISK_HIGH, "results may carry objects (pickle)");
	if (strcmp(key, "os-sandbox") == 0 &&
	    p->provider == SB_PROVIDER_NONE)
		return G(SB_RISK_HIGH, "turns the kernel layer off");
	if (strcmp(key, "os-sandbox") == 0 &&
	    p->provider == SB_PROVIDER_SUBPROCESS)
		return G(SB_RISK_MEDIUM, "no kernel layer: the Python guard "
					 "alone");
	if (strcmp(key, "py-sandbox") == 0 ||
	    strcmp(key, "remote-result-guard") == 0)
		return R("keeps a guard on");
	if (strcmp(key, "os-sandbox") == 0)
		return (struct grade){ SB_RISK_MEDIUM, "pins the provider",
				       true };
	/* a bound on the run: adding one narrows, removing one widens */
	if (sb_str_starts(key, "limit-"))
		return R("bounds what the run may consume");
	if (strcmp(key, "eval-namespace") == 0 && any_caller_namespace(p))
		return G(SB_RISK_HIGH, "evaluated code sees the caller's "
				       "namespace");
	return G(SB_RISK_MEDIUM, "changes the sandbox");
}

bool sb_review_grade(struct sb_arena *a, const char *line,
		     struct sb_review_item *it)
{
	struct sb_flat_rule fr = { 0 };
	struct sb_parse_opts o = { 0 };
	struct sb_policy *p = NULL;
	enum sb_line_kind kind;
	const char *text, *eq;
	char *key;
	struct grade g;
	size_t i;

	kind = sb_policy_lex_line(a, line, strlen(line), &text);
	if (kind == SB_LINE_NONE)
		return false;
	it->rule = text;
	if (kind == SB_LINE_INCLUDE) {
		g = G(SB_RISK_MEDIUM, "adds every rule of another file");
		goto out;
	}
	eq = strchr(text, '=');
	key = sb_arena_strndup(a, text, eq ? (size_t)(eq - text)
					   : strlen(text));
	if (eq && (strcmp(key, "env") == 0 || strcmp(key, "unenv") == 0)) {
		/* env= is applied at exec, not by the flat parser */
		g = grade_env(key, eq + 1);
		goto out;
	}
	/* The review's flat parse has no environment: a reference in any
	 * other value was graded as its text, 'invalid' for most keys
	 * (python-import=${X} is no module name), though the run accepts
	 * what the variable holds there: python-import=*, os-sandbox=none
	 * (K62). Paths have their own grade (env_decides), env= its own,
	 * ignore= only hides. */
	if (eq && strstr(eq + 1, "${") && !path_key(key) &&
	    strcmp(key, "ignore") != 0) {
		g = G(SB_RISK_HIGH, "the environment decides its value at the "
				    "run: it may be any value this rule takes");
		goto out;
	}
	fr.text = text;
	fr.ref = (struct sb_ref){ "review", 1 };
#define REF_PREFIX "review(1): "
	o.cwd = "/";
	o.flat = true;
	o.flat_config_exists = true; /* else "no file" would mean learning */
	o.flat_rules = &fr;
	o.n_flat_rules = 1;
	o.resolve = doc_address;
	if (sb_policy_parse(&o, &p) < 0 || !p) {
		g = G(SB_RISK_INVALID, "the parser refuses it");
		goto out;
	}
	for (i = 0; i < p->errors.n; i++) /* drop "review(1): " */
		if (sb_str_starts(p->errors.v[i].text, REF_PREFIX))
			p->errors.v[i].text += strlen(REF_PREFIX);
	if (eq && path_key(key))
		g = grade_expose(a, p, key, eq + 1);
	else if (p->errors.n)
		g = G(SB_RISK_INVALID, p->errors.v[0].text);
	else
		g = grade_parsed(a, p, key);
	/* the texts live in p's arena */
	g.why = sb_arena_strdup(a, g.why);
	sb_policy_free(p);
out:
	it->risk = g.risk;
	it->why = g.why;
	it->restricts = g.restricts;
	return true;
}

/* ---- collecting ---- */

bool sb_review_is_rule_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	/* the template's own includes too: global-py-sandboxes.profile,
	 * user-py-sandboxes.profile */
	return strstr(base, ".py-sandboxes") != NULL ||
	       strstr(base, "py-sandboxes.profile") != NULL;
}

/* "# Learned by X" gives X; "# Add rules (...)" and a learning marker end
 * the previous attribution (NULL); other lines leave it (*by unchanged). */
static void track_learned_by(struct sb_arena *a, const char *line,
			     const char **by)
{
	const char *s = line;

	while (sb_is_space((unsigned char)*s))
		s++;
	if (*s != '#')
		return;
	s++;
	while (sb_is_space((unsigned char)*s))
		s++;
	if (sb_str_starts(s, "Learned by ")) {
		s += strlen("Learned by ");
		*by = sb_strip(a, s, strlen(s));
	} else if (sb_str_starts(s, "Add rules") ||
		   sb_str_starts(s, "<learning_guard_") ||
		   sb_str_starts(s, "</learning_guard_")) {
		*by = NULL;
	}
}

static void add_line(struct sb_review *r, const char *file, const char *line,
		     bool removed, const char *by)
{
	struct sb_review_item g = { 0 }, *it;

	if (!sb_review_grade(r->arena, line, &g))
		return;
	it = SB_VEC_PUSH(r->arena, r->items);
	*it = g;
	it->file = file;
	it->learned_by = by;
	it->removed = removed;
}

/* "a/x" and "b/x" lose their git prefix; "path<TAB>date" its date. */
static const char *diff_path(struct sb_arena *a, const char *s, bool git)
{
	size_t n = strcspn(s, "\t");

	while (n && sb_is_space((unsigned char)s[n - 1]))
		n--;
	if (git && n > 2 && (s[0] == 'a' || s[0] == 'b') && s[1] == '/') {
		s += 2;
		n -= 2;
	}
	return sb_arena_strndup(a, s, n);
}

static unsigned long hunk_count(const char **s)
{
	unsigned long v = 1;

	if (**s == ',') {
		(*s)++;
		v = strtoul(*s, (char **)s, 10);
	}
	return v;
}

size_t sb_review_add_diff(struct sb_review *r, const char *text)
{
	struct sb_arena *a = r->arena;
	const char *s = text, *old_path = NULL, *file = NULL;
	const char *by_new = NULL, *by_old = NULL;
	unsigned long left_old = 0, left_new = 0;
	bool git = false, grading = false;
	size_t files = 0;

	while (*s) {
		size_t n = strcspn(s, "\n");
		char *line = sb_arena_strndup(a, s, n);

		s += n + (s[n] == '\n');
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		if (left_old || left_new) {
			/* inside a hunk: counts decide, not the look */
			if (line[0] == '\\')
				continue;
			if (line[0] == '-' && left_old) {
				left_old--;
				track_learned_by(a, line + 1, &by_old);
				if (grading)
					add_line(r, file, line + 1, true,
						 by_old);
				continue;
			}
			if (line[0] == '+' && left_new) {
				left_new--;
				track_learned_by(a, line + 1, &by_new);
				if (grading)
					add_line(r, file, line + 1, false,
						 by_new);
				continue;
			}
			if ((line[0] == ' ' || line[0] == '\0') && left_old &&
			    left_new) {
				left_old--;
				left_new--;
				track_learned_by(a, line + (line[0] != 0),
						 &by_new);
				by_old = by_new;
				continue;
			}
			left_old = left_new = 0; /* a malformed hunk ends */
		}
		if (sb_str_starts(line, "diff --git ")) {
			git = true;
			grading = false;
		} else if (sb_str_starts(line, "--- ")) {
			old_path = diff_path(a, line + 4, git);
			grading = false;
		} else if (sb_str_starts(line, "+++ ")) {
			file = diff_path(a, line + 4, git);
			if (strcmp(file, "/dev/null") == 0 && old_path)
				file = old_path;
			grading = sb_review_is_rule_file(file);
			files += grading;
		} else if (sb_str_starts(line, "@@ -") && file) {
			const char *h = line + 4;

			strtoul(h, (char **)&h, 10);
			left_old = hunk_count(&h);
			if (sb_str_starts(h, " +")) {
				h += 2;
				strtoul(h, (char **)&h, 10);
				left_new = hunk_count(&h);
			} else {
				left_old = 0;
			}
			by_new = by_old = NULL;
		}
	}
	return files;
}

/* The rules of a text, each with its attribution, in file order. */
struct lexed {
	const char *rule, *raw, *by;
};
typedef SB_VEC(struct lexed) lexed_vec;

static void lex_all(struct sb_arena *a, const char *text, lexed_vec *out)
{
	const char *s = text ? text : "", *by = NULL, *t;

	while (*s) {
		size_t n = strcspn(s, "\n");
		char *line = sb_arena_strndup(a, s, n);
		struct lexed *l;

		s += n + (s[n] == '\n');
		track_learned_by(a, line, &by);
		if (sb_policy_lex_line(a, line, n, &t) == SB_LINE_NONE)
			continue;
		l = SB_VEC_PUSH(a, *out);
		l->rule = t;
		l->raw = line;
		l->by = by;
	}
}

static bool has_rule(const lexed_vec *v, const char *rule)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (strcmp(v->v[i].rule, rule) == 0)
			return true;
	return false;
}

void sb_review_add_files(struct sb_review *r, const char *old_name,
			 const char *old_text, const char *new_name,
			 const char *new_text)
{
	lexed_vec old = { 0 }, new = { 0 };
	size_t i, j;

	lex_all(r->arena, old_text, &old);
	lex_all(r->arena, new_text, &new);
	for (i = 0; i < new.n; i++) {
		bool dup = has_rule(&old, new.v[i].rule);

		for (j = 0; j < i && !dup; j++)
			dup = strcmp(new.v[j].rule, new.v[i].rule) == 0;
		if (!dup)
			add_line(r, new_name, new.v[i].raw, false,
				 new.v[i].by);
	}
	for (i = 0; i < old.n; i++) {
		bool dup = has_rule(&new, old.v[i].rule);

		for (j = 0; j < i && !dup; j++)
			dup = strcmp(old.v[j].rule, old.v[i].rule) == 0;
		if (!dup)
			add_line(r, old_name, old.v[i].raw, true,
				 old.v[i].by);
	}
}

/* ---- the report ---- */

enum sb_risk sb_review_worst(const struct sb_review *r)
{
	enum sb_risk worst = SB_RISK_COUNT;
	size_t i;

	for (i = 0; i < r->items.n; i++)
		if (!r->items.v[i].removed && r->items.v[i].risk < worst)
			worst = r->items.v[i].risk;
	return worst;
}

/* A table cell: '|' escaped, control characters and '`' shown safely. */
static void md_cell(struct sb_buf *out, const char *s, bool code)
{
	if (!s || !*s) {
		sb_buf_puts(out, code ? "" : "-");
		return;
	}
	if (code)
		sb_buf_puts(out, "`");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '|')
			sb_buf_puts(out, "\\|");
		else if (c == '`')
			sb_buf_puts(out, "'");
		else if (c < 0x20 || c == 0x7f)
			sb_buf_printf(out, "\\x%02x", c);
		else
			sb_buf_add(out, s, 1);
	}
	if (code)
		sb_buf_puts(out, "`");
}

static void json_str(struct sb_buf *out, const char *s)
{
	if (!s) {
		sb_buf_puts(out, "null");
		return;
	}
	sb_buf_puts(out, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			sb_buf_printf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			sb_buf_printf(out, "\\u%04x", c);
		else
			sb_buf_add(out, s, 1);
	}
	sb_buf_puts(out, "\"");
}

static void format_json(const struct sb_review *r, struct sb_buf *out)
{
	int pass, risk;
	size_t i;

	sb_buf_puts(out, "{");
	for (pass = 0; pass < 2; pass++) {
		bool first = true;

		sb_buf_puts(out, pass ? ", \"removed\": [" : "\"added\": [");
		for (risk = 0; risk < SB_RISK_COUNT; risk++) {
			for (i = 0; i < r->items.n; i++) {
				const struct sb_review_item *it =
					&r->items.v[i];

				if (it->removed != (pass == 1) ||
				    (int)it->risk != risk)
					continue;
				sb_buf_puts(out, first ? "\n  {" : ",\n  {");
				first = false;
				sb_buf_puts(out, "\"risk\": ");
				json_str(out, sb_risk_name(it->risk));
				sb_buf_puts(out, ", \"file\": ");
				json_str(out, it->file);
				sb_buf_puts(out, ", \"rule\": ");
				json_str(out, it->rule);
				sb_buf_puts(out, ", \"why\": ");
				json_str(out, it->why);
				sb_buf_puts(out, ", \"learned_by\": ");
				json_str(out, it->learned_by);
				if (it->removed)
					sb_buf_printf(out, ", \"widens\": %s",
						      it->restricts ? "true"
								    : "false");
				sb_buf_puts(out, "}");
			}
		}
		sb_buf_puts(out, first ? "]" : "\n]");
	}
	sb_buf_puts(out, "}\n");
}

static const char removed_narrows[] =
	"\nRemoved, which narrows the profile:\n\n";
static const char removed_widens[] =
	"\nRemoved, which widens the profile (a denial or a lock):\n\n";

void sb_review_format(const struct sb_review *r, bool json,
		      struct sb_buf *out)
{
	size_t i, added = 0, removed = 0;
	int risk, pass;

	if (json) {
		format_json(r, out);
		return;
	}
	for (i = 0; i < r->items.n; i++) {
		if (r->items.v[i].removed)
			removed++;
		else
			added++;
	}
	if (!added && !removed) {
		sb_buf_puts(out, "No rule added or removed.\n");
		return;
	}
	if (added) {
		sb_buf_puts(out, "| Risk | File | Rule | Why | Learned by |\n"
				 "|---|---|---|---|---|\n");
		for (risk = 0; risk < SB_RISK_COUNT; risk++) {
			for (i = 0; i < r->items.n; i++) {
				const struct sb_review_item *it =
					&r->items.v[i];

				if (it->removed || (int)it->risk != risk)
					continue;
				sb_buf_printf(out, "| %s | ",
					      sb_risk_name(it->risk));
				md_cell(out, it->file, false);
				sb_buf_puts(out, " | ");
				md_cell(out, it->rule, true);
				sb_buf_puts(out, " | ");
				md_cell(out, it->why, false);
				sb_buf_puts(out, " | ");
				md_cell(out, it->learned_by, false);
				sb_buf_puts(out, " |\n");
			}
		}
	}
	for (pass = 0; removed && pass < 2; pass++) {
		bool first = true;

		for (i = 0; i < r->items.n; i++) {
			const struct sb_review_item *it = &r->items.v[i];

			if (!it->removed || it->restricts != (pass == 1))
				continue;
			if (first)
				sb_buf_puts(out, pass ? removed_widens
						    : removed_narrows);
			first = false;
			sb_buf_puts(out, "- ");
			md_cell(out, it->rule, true);
			sb_buf_puts(out, " (");
			md_cell(out, it->file, false);
			sb_buf_puts(out, ")\n");
		}
	}
}
