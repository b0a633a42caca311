/* policy_blob.h - the policy as the launcher hands it to the guard library:
 * the effective rules with their origins, the pinned names, and the few facts
 * the guard cannot know by itself. Text, one record per line. */
#ifndef SB_POLICY_BLOB_H
#define SB_POLICY_BLOB_H

#include "policy.h"

struct sb_blob {
	SB_VEC(struct sb_flat_rule) rules;
	SB_VEC(struct sb_pin) pins;
	const char *pkgdir; /* the directory holding the pysandboxes package */
	const char *cwd;    /* the launcher's working directory */
	const char *home;   /* the launcher's HOME, for '~' in rules */
	bool config_exists;
	bool learning;
	/* the interpreter will run with CPython's debug allocator hooks
	 * (-X dev, PYTHONMALLOC=*debug, PYTHONDEVMODE) */
	bool debug_malloc;
	/* an interactive REPL will run: the guard prints the sandbox banner
	 * (the launcher asked CPython for -q) */
	bool repl_banner;
	const char *config; /* the rule file, as messages name it */
	int learn_fd;       /* learning: where records go, else -1 */
	int log_fd;         /* the denial log, or the relay to it; -1 */
	bool log_relay;     /* log_fd is the supervisor's relay socket */
	/* when the launcher started (CLOCK_REALTIME_COARSE, the clock file
	 * systems stamp births with): an entry of an expose-made= rule born
	 * before it was not made by this run; 0: not told */
	int64_t started_sec;
	long started_nsec;
};

struct sb_blob_facts {
	const char *pkgdir;
	const char *cwd;
	const char *home; /* NULL: none */
	bool debug_malloc;
	bool repl_banner;
	int learn_fd; /* -1 unless learning */
	/* the denial log's descriptor (log_fd_set: zero-initialised facts
	 * mean no log), and whether it is the supervisor's relay */
	bool log_fd_set;
	int log_fd;
	bool log_relay;
	int64_t started_sec; /* as in struct sb_blob */
	long started_nsec;
};

/* Serialise p (env= rules are left out: they were applied at exec). */
void sb_blob_write(const struct sb_policy *p, const struct sb_blob_facts *f,
		   struct sb_buf *out);
/* Parse a blob; 0, or -1 with a message in *err. */
int sb_blob_read(struct sb_arena *a, const char *data, size_t len,
		 struct sb_blob *out, const char **err);
/* An sb_resolve_fn answering from the blob's pins only (ctx: the blob). */
enum sb_resolve_status sb_blob_resolve(void *ctx, struct sb_arena *arena,
				       const char *host, struct sb_addr **addrs,
				       size_t *n_addrs, const char **why);
/* sb_policy_parse() of a blob, in flat mode. */
int sb_blob_parse_policy(const struct sb_blob *b, struct sb_policy **out);

#endif
