/* policy.h - the parsed .py-sandboxes policy and the parser's public API.
 *
 * One parser serves the launcher, the guard library and the tests. It is pure
 * code: it reads rule files, stats and canonicalises exposed paths, and asks an
 * injected resolver for host names; it never prints and never exits. Every
 * problem is collected in policy->errors (sorted by file and line) so that all
 * of them are reported at once, and nothing runs while there is one.
 */
#ifndef SB_POLICY_H
#define SB_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Where a rule came from: "file(line)", "<arg>" or "<implicit>". 'file' is
 * the display form (relative to the cwd, else ~/..., else absolute); line 0
 * means "no line" (command line and implicit rules). */
struct sb_ref {
	const char *file;
	unsigned line;
};

#define SB_REF_ARG "<arg>"
#define SB_REF_IMPLICIT "<implicit>"
/* python-sb's own files, hidden from the program (policy_own.c) */
#define SB_REF_OWN "<own-file>"

/* The denial log's size cap without a log-max-size= rule: 100 MiB. */
#define SB_LOG_MAX_DEFAULT (UINT64_C(100) << 20)

/* One diagnostic. 'text' is the whole line as printed, prefix included
 * ("<ref>: message"); 'ref' is its sort key. */
struct sb_diag {
	struct sb_ref ref;
	const char *text;
};

/* One effective rule line, after includes and ${} expansion. */
struct sb_rule {
	const char *text;
	struct sb_ref ref;
};

struct sb_env_var {
	const char *name;
	const char *value;
	struct sb_ref ref;
};

/* LIST: the names in one directory, none of its files' contents (beyond
 * the seed: what Landlock's READ_DIR right grants, for a learned listing) */
enum sb_expose_mode { SB_EXPOSE_RO, SB_EXPOSE_RW, SB_EXPOSE_LIST };

struct sb_expose {
	const char *path; /* canonical, absolute */
	/* absolute as written, its links unresolved (NULL: none other than
	 * path): a namespace's root makes those links, so that the rule, read
	 * again inside by the guard, names a path that is there */
	const char *spelled;
	const char *rule; /* e.g. "expose-ro=./data", for messages */
	struct sb_ref ref;
	enum sb_expose_mode mode;
	bool is_dir; /* false: a single file (beyond the seed) */
	/* expose-new=: an entry the program may make, which need not exist
	 * (its directory must); read-write like expose-rw= once there. The
	 * kernel layer cannot name it, so the supervisor performs the calls
	 * on it (entrysup.c) */
	bool entry;
	/* expose-made=DIR/PATTERN (entry too): the entries whose names match
	 * 'pattern' that the program makes in 'made_dir' in this run, and
	 * what lies below them; never one that was there before. 'path' is
	 * made_dir + "/" + pattern, a name no call reaches by chance, and
	 * sb_fs_find_expose() matches the pattern (fsrules.c) */
	bool made;
	const char *made_dir;
	const char *pattern;
};

struct sb_ignore {
	const char *pattern;
	const char *rule;
	struct sb_ref ref;
};

/* ---- network ---- */

enum { SB_NET_TCP = 1, SB_NET_UDP = 2 };
enum { SB_NET_IN = 1, SB_NET_OUT = 2 };

/* An address: family is AF_INET (4 bytes used) or AF_INET6 (16 bytes). */
struct sb_addr {
	int family;
	uint8_t bytes[16];
};

struct sb_port_range {
	uint16_t lo, hi;
};

/* One net= line yields one sb_net_rule per network: '*' gives two (0.0.0.0/0
 * and ::/0), a host name one per resolved address. */
struct sb_net_rule {
	bool allow;
	unsigned kinds; /* SB_NET_TCP | SB_NET_UDP */
	unsigned dirs;  /* SB_NET_IN | SB_NET_OUT */
	struct sb_addr addr;
	unsigned prefix; /* 0..32 or 0..128 */
	const struct sb_port_range *ports;
	size_t n_ports; /* 0: the rule matches nothing (empty PORTS) */
	/* PORTS is 'self': the ports a process of the sandbox listens on
	 * (TCP, OUT; judged by sb_net_self_rule and selfport.c) */
	bool self;
	const char *host; /* the host name the rule named, else NULL */
	bool any_host;    /* NETWORK was '*': every host, names included */
	const char *rule;
	struct sb_ref ref;
};

/* A host name resolved once at parse time; lookups inside the sandbox are
 * answered from here only. */
struct sb_pin {
	const char *host;
	const struct sb_addr *addrs;
	size_t n_addrs;
};

/* Resolver injected into the parser. Fills *addrs (allocated from 'arena')
 * and returns SB_RESOLVE_OK, or SB_RESOLVE_NONAME for a definite failure, or
 * SB_RESOLVE_TRANSIENT (retries already exhausted) with a reason in *why. */
enum sb_resolve_status {
	SB_RESOLVE_OK,
	SB_RESOLVE_NONAME,
	SB_RESOLVE_TRANSIENT,
};
typedef enum sb_resolve_status (*sb_resolve_fn)(void *ctx,
						 struct sb_arena *arena,
						 const char *host,
						 struct sb_addr **addrs,
						 size_t *n_addrs,
						 const char **why);

/* ---- imports ---- */

struct sb_import {
	const char *name; /* top-level module name */
	struct sb_ref ref;
};

/* ---- eval-* ---- */

enum sb_eval_list {
	SB_EVAL_SYNTAX,
	SB_EVAL_CALL,
	SB_EVAL_ATTRIBUTE,
	SB_EVAL_IMPORT,
	SB_EVAL_MAGIC,
	SB_EVAL_LIST_COUNT
};

enum sb_eval_scalar {
	SB_EVAL_NAMESPACE,
	SB_EVAL_TIMEOUT, /* milliseconds */
	SB_EVAL_MAX_ITERATIONS,
	SB_EVAL_MAX_CALL_DEPTH,
	SB_EVAL_MAX_DEPTH,
	SB_EVAL_MAX_NODES,
	SB_EVAL_MAX_ALLOC, /* bytes */
	SB_EVAL_MAX_LEAKED_THREADS,
	SB_EVAL_SCALAR_COUNT
};

enum sb_eval_namespace {
	SB_EVAL_NS_ADAPTIVE,
	SB_EVAL_NS_CLOSED,
	SB_EVAL_NS_CALLER
};

struct sb_strlist {
	const char **v;
	size_t n, cap;
};

/* A named eval profile ("" is the default one). Syntax tokens are stored
 * expanded to AST node class names; the other lists keep names and patterns
 * as written. */
struct sb_eval_profile {
	const char *name;
	struct sb_strlist allow[SB_EVAL_LIST_COUNT];
	struct sb_strlist deny[SB_EVAL_LIST_COUNT];
	int64_t scalar[SB_EVAL_SCALAR_COUNT];
	struct sb_ref scalar_ref[SB_EVAL_SCALAR_COUNT]; /* file NULL: default */
};

/* The eval-syntax group an AST node class belongs to, or NULL. */
const char *sb_eval_syntax_group(const char *node);
/* The i-th eval-syntax group's name, its node classes in *nodes
 * (NULL-terminated); NULL past the last group. */
const char *sb_eval_syntax_group_at(size_t i, const char *const **nodes);
/* Set every scalar of 'e' (budgets, namespace) to its default. */
void sb_eval_profile_defaults(struct sb_eval_profile *e);
/* Node classes every profile allows (Module, Name, Constant...). */
bool sb_eval_core_node(const char *node);
/* Builtins that hand evaluated code a way around the guard (getattr...). */
bool sb_eval_sensitive_builtin(const char *name);
/* The first of builtins.eval, exec and compile that granted(k, ctx) says is
 * granted (k: its index in the API registry), or NULL. A grant of one of
 * them sends code strings to the raw builtins, so that eval-* rules guard
 * nothing: the policy refuses the two together, learning writes the eval-*
 * lines commented out. */
const char *sb_eval_raw_grant(bool (*granted)(long k, const void *ctx),
			      const void *ctx);

/* ---- single-valued directives and providers ---- */

enum sb_provider {
	SB_PROVIDER_NONE,
	SB_PROVIDER_SUBPROCESS,
	SB_PROVIDER_LANDLOCK,
	SB_PROVIDER_BWRAP,
	SB_PROVIDER_FIREJAIL,
	SB_PROVIDER_UNSHARE,
	SB_PROVIDER_QEMU,
	SB_PROVIDER_AUTO,
	SB_PROVIDER_COUNT
};

const char *sb_provider_name(enum sb_provider p);
/* -1 when unknown; 'name' is compared as written (callers lower-case). */
int sb_provider_from_name(const char *name);

enum sb_result_mode { SB_RESULT_DATA_ONLY, SB_RESULT_OBJECTS };

struct sb_provider_opt {
	enum sb_provider provider;
	const char *key; /* without the "<provider>." prefix */
	const char *value;
	const char *rule;
	struct sb_ref ref;
};

/* Where an included (or root) rule file stands. */
enum sb_file_state { SB_FILE_LOADED, SB_FILE_ABSENT, SB_FILE_ERROR };

/* ---- limit-* (policy_limits.c) ---- */

/* Resource limits of the run, in enum order of their keys. Sizes are in
 * bytes, times in seconds, counts as counts; 0 means no limit. */
enum sb_limit {
	SB_LIMIT_MEMORY,     /* limit-memory=512M */
	SB_LIMIT_CPU,        /* limit-cpu=10s: CPU seconds */
	SB_LIMIT_TIME,       /* limit-time=30s: wall-clock seconds */
	SB_LIMIT_PROCESSES,  /* limit-processes=64: processes and threads */
	SB_LIMIT_FILE_SIZE,  /* limit-file-size=100M */
	SB_LIMIT_OPEN_FILES, /* limit-open-files=256 */
	SB_LIMIT_COUNT
};

struct sb_limit_rule {
	uint64_t value;   /* 0: no limit */
	const char *rule; /* "limit-time=30s" as written, for messages */
	struct sb_ref ref;
};

/* "limit-memory"... */
const char *sb_limit_key(enum sb_limit l);

struct sb_file {
	const char *path;    /* absolute */
	const char *display; /* as in refs */
	enum sb_file_state state;
	struct sb_ref included_from; /* file NULL for the root file */
	/* an include outside the root file's directory: its lines are not
	 * quoted in messages (diag.c) */
	bool outside;
};

struct sb_api_state; /* private to api_registry.c */

struct sb_policy {
	struct sb_arena *arena;

	/* the root rule file */
	const char *config_path;
	const char *config_display;
	bool config_exists;

	SB_VEC(struct sb_file) files; /* root first, then includes in order */
	SB_VEC(struct sb_rule) rules; /* effective rules, in order */

	SB_VEC(struct sb_env_var) env;
	SB_VEC(struct sb_expose) exposes; /* sorted longest path first */
	SB_VEC(struct sb_ignore) ignores;
	SB_VEC(struct sb_net_rule) nets; /* DENY rules first, then ALLOW */
	bool any_net_rule;               /* some net= line was given */
	SB_VEC(struct sb_pin) pins;
	/* the names of ALLOW rules that did not resolve (the rule allows
	 * nothing): a lookup of one is answered "no such name", as the
	 * resolver answered, not refused */
	SB_VEC(const char *) unresolved;
	SB_VEC(struct sb_import) imports;
	bool import_all;
	uint8_t *api_allow; /* indexed like sb_api_registry, 1 = allowed */
	struct sb_api_state *api_state; /* pending python-api= rules */
	SB_VEC(struct sb_eval_profile) eval_profiles;
	SB_VEC(struct sb_provider_opt) provider_opts;

	/* single-valued directives; a ref with file NULL means "default" */
	enum sb_provider provider;
	struct sb_ref provider_ref;
	bool py_sandbox;
	struct sb_ref py_sandbox_ref;
	bool result_guard;
	struct sb_ref result_guard_ref;
	enum sb_result_mode result_mode;
	struct sb_ref result_mode_ref;
	int port; /* -1: pick a free one */
	struct sb_ref port_ref;
	struct sb_limit_rule limits[SB_LIMIT_COUNT];
	bool any_limit;
	const char *learn_path; /* learn=<file> (resolved), else NULL */
	/* where the next run would read a rule file before this one
	 * (sb_parse_opts.shadows, canonical): a learned file whose rules let
	 * the program make one is written there instead (learn_file.c) */
	const char **shadows;
	size_t n_shadows;
	struct sb_ref learn_ref;
	bool locked; /* learn=false in a rule file */
	struct sb_ref lock_ref;
	/* log-file=<file> (--pysandboxes-log): the denial log, absolute
	 * (its directory canonical), else NULL */
	const char *log_path;
	/* the same, as written (joined, not resolved): a directory on the
	 * way that a program could re-point is judged where it stands */
	const char *log_lexical;
	struct sb_ref log_ref;
	/* log-stderr=on|off: each refusal of the Python layer is also one
	 * line on the `Pysandboxes` logger (on by default) */
	bool log_stderr;
	struct sb_ref log_stderr_ref;
	/* log-max-size=: the denial log stops growing at about this size
	 * (SB_LOG_MAX_DEFAULT without the rule) */
	uint64_t log_max;
	struct sb_ref log_max_ref;
	/* The outcome: does this run learn, and why (for --pysandboxes-explain)?
	 * When learning, learn_path is where the rules go and the provider is
	 * forced to subprocess (provider_forced says so). */
	bool learning;
	const char *learning_why;
	bool provider_forced;

	SB_VEC(struct sb_diag) errors;   /* sorted by file, then line */
	SB_VEC(struct sb_diag) warnings; /* in the order found */
	/* errors past SB_MAX_DIAGS, counted, not kept (a hostile file of
	 * millions of bad lines made gigabytes of messages) */
	size_t errors_dropped;
};

/* The errors, and the warnings, a parse keeps at most. */
#define SB_MAX_DIAGS 100

enum {
	/* Do not resolve host names; a name in net= is then an error. */
	SB_PARSE_NO_DNS = 1 << 0,
	/* Do not add the own-file rules (policy_own.c): the learning writer
	 * checks a file's syntax, not the run it would make. */
	SB_PARSE_NO_OWN_FILES = 1 << 1,
};

/* A rule already through include and ${} expansion, with its origin: what
 * the launcher hands to the guard (policy_blob.c). */
struct sb_flat_rule {
	const char *text;
	struct sb_ref ref;
};

/* A rule the launcher adds by itself (env=TERM=${TERM}, the interpreter's
 * directories...). 'origin' prints in place of file(line): "<implicit>",
 * "<python>", "<ca-certificates>". Implicit rules are not subject to the
 * learn=false lock. */
struct sb_rule_src {
	const char *text;
	const char *origin;
};

struct sb_parse_opts {
	const char *config_path;  /* the root rule file, as given; may be absent */
	const char *const *cli_rules; /* "key=value" texts, origin <arg> */
	size_t n_cli_rules;
	const struct sb_rule_src *implicit_rules;
	size_t n_implicit_rules;
	const char *const *envp;  /* host environment for ${} and env= */
	const char *cwd;          /* absolute; relative paths are against it */
	const char *home;         /* for '~'; NULL: HOME from envp */
	/* Where a rule file would be read from next time before this one
	 * (the script's directory, a package's: seed-spec 2.1.1 and 2.1.2),
	 * canonical: an enforced policy that lets the program make one is
	 * an error, as for an absent include (policy_own.c). */
	const char *const *shadows;
	size_t n_shadows;
	sb_resolve_fn resolve;    /* NULL: every host name fails to resolve */
	void *resolve_ctx;
	unsigned flags;
	/* Flat mode: parse these effective rules instead of reading files and
	 * command-line rules; nothing is expanded again, and config_exists is
	 * taken from flat_config_exists. */
	const struct sb_flat_rule *flat_rules;
	size_t n_flat_rules;
	bool flat;
	bool flat_config_exists;
};

/* Parse. Returns 0 with *out set (check (*out)->errors.n), or -errno for a
 * failure that leaves nothing to report (bad arguments). */
int sb_policy_parse(const struct sb_parse_opts *opts, struct sb_policy **out);
void sb_policy_free(struct sb_policy *p);

/* One line of a rule file as the lexer reads it (2.3): SB_LINE_NONE for a
 * blank line or a comment, else *text is the line stripped of blanks and of
 * its trailing comment (a rule, or an include "path" line). The one lexer:
 * the parser and the rule review (review.c) both use it. */
enum sb_line_kind { SB_LINE_NONE, SB_LINE_RULE, SB_LINE_INCLUDE };
enum sb_line_kind sb_policy_lex_line(struct sb_arena *a, const char *s,
				     size_t n, const char **text);
/* The absolute path an 'include "path"' line of the file 'including_abs'
 * reads, resolved as the parser does (a bare name next to that file, else
 * from 'cwd' after "~" from 'home'); NULL when the line is no include. */
const char *sb_policy_include_target(struct sb_arena *a, const char *line,
				     const char *including_abs,
				     const char *cwd, const char *home);

/* Format "Syntax error in config files." and the error lines. */
void sb_policy_format_errors(const struct sb_policy *p, struct sb_buf *out);

/* "file(line)", "<arg>"... into the arena. */
const char *sb_ref_format(struct sb_arena *a, struct sb_ref ref);

/* A copy of s safe to print on a terminal: control characters and invalid
 * UTF-8 become \xNN. Every diagnostic goes through it. */
char *sb_sanitize(struct sb_arena *a, const char *s);

/* The path of an ignore= rule that hides one of python-sb's own files (the
 * rule file, an include, a backup: origin SB_REF_OWN, policy_own.c), or
 * NULL for any other ignore= rule. */
const char *sb_own_file(struct sb_arena *a, const struct sb_ignore *ig);

/* The first expose-rw= that holds 'path' (the path itself or below it),
 * or the directory of an expose-made= whose pattern names it, or NULL:
 * what a message names as the tree the program could write. */
const char *sb_policy_writable_root(const struct sb_policy *p,
				    const char *path);

/* Look up a variable in an envp array; NULL when unset. */
const char *sb_envp_get(const char *const *envp, const char *name);

#endif
