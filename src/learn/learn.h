/* learn.h - learning mode (py-sandboxes(5), LEARNING): what a trusted run did,
 * and the rule file text made from it.
 *
 * The guard streams one record per line as things happen (guard/learn.c);
 * the supervising launcher parses them (sb_learn_parse) and, when the run
 * ends or on the first SIGINT/SIGTERM/SIGQUIT, merges them into the rule
 * file (sb_learn_merge, pure) and writes it atomically (learn_file.c).
 *
 * Record lines, fields separated by one tab, escaped as in policy_blob.c
 * (\t \n \\):
 *   env     NAME                       a variable the program read
 *   file    r|w|l  d|f  CANONICAL-PATH   an access, with its intent
 *                                      (l: importlib looked into it)
 *   net     tcp|udp  in|out  ADDR  PORT|self  HOST|-   a socket operation
 *                                      (self: a port the run listened on)
 *   import  TOP-LEVEL-NAME
 *   api     QUALNAME                   a registry entry the program called
 */
#ifndef SB_LEARN_H
#define SB_LEARN_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

struct sb_learned_file {
	const char *path; /* canonical, absolute */
	bool write;
	bool is_dir;
	bool read;   /* intent 'r' seen */
	/* importlib looked into it (intent 'l'): a reason for a rule only
	 * when a module was loaded from it */
	bool lookup;
};

struct sb_learned_net {
	unsigned kind; /* SB_NET_TCP or SB_NET_UDP */
	unsigned dir;  /* SB_NET_IN or SB_NET_OUT */
	struct sb_addr addr;
	uint16_t port;
	bool self; /* a port the run itself listened on (record port "self") */
	/* a name looked up, no connection (record port "-"): 'host' only */
	bool lookup;
	const char *host; /* the name the program resolved, else NULL */
};

/* Everything seen, de-duplicated by the parser, in the order first seen. */
struct sb_learned {
	SB_VEC(const char *) env;
	SB_VEC(struct sb_learned_file) files;
	SB_VEC(struct sb_learned_net) nets;
	SB_VEC(const char *) imports;
	SB_VEC(const char *) apis;
	/* whole rules "eval-KEY=token" an evaluation of the trusted run
	 * needed, and "eval-on" for each evaluation (seed 4.3) */
	SB_VEC(const char *) evals;
	/* what an enforcing run refuses whatever rule is learned (a socket
	 * option, a control message no net= rule evaluates): told on
	 * stderr at the save, never written as a rule */
	SB_VEC(const char *) refused;
};

/* Add the complete lines of data[0..len) to 'l'; returns the number of bytes
 * consumed (a trailing partial line is left for the next call). Bad lines
 * are skipped: a record is information, never an instruction. */
size_t sb_learn_parse(struct sb_arena *a, const char *data, size_t len,
		      struct sb_learned *l);

/* What the writer needs to know besides the records. */
struct sb_learn_ctx {
	const struct sb_policy *policy; /* the rules in force (may be empty):
					 * what they allow is not learned again */
	const char *const *envp;        /* the host environment */
	const char *cwd;                /* absolute */
	const char *home;               /* may be NULL */
	const char *rule_file; /* absolute: the file written (its bare-name
				* includes sit next to it); NULL: in cwd */
	/* the interpreter's trees (prefix, base prefix...), whose files are
	 * never learned: the implicit rules cover them */
	const char *const *python_trees;
	size_t n_python_trees;
	const char *date; /* "2026/11/29 at 14:22" */
	/* whether a learned file is still there when the rules are written
	 * (a file rule for one the program removed again could not be read
	 * back); NULL: every file is taken to be there */
	bool (*exists)(const char *path);
	/* the real path of 'path' now, or NULL when it cannot be resolved.
	 * The records hold real paths: a place the environment names ($HOME,
	 * $TMPDIR...) through a symbolic link is known by its target, and a
	 * learned path that is a link when the rules are written (the
	 * program swapped it) is not written as a rule, which the parser
	 * would follow. NULL: paths are taken as spelled */
	const char *(*real_path)(struct sb_arena *a, const char *path);
	/* what learned the rules (a test's name, else the program), written
	 * as "# Learned by ..." under each block; NULL: no such line */
	const char *learned_by;
	/* the host's name, a part of names one run makes (learn_rules.c,
	 * one_run_pattern); NULL: unknown */
	const char *hostname;
};

/* Merge the learned rules into 'existing' (the rule file's text, or NULL
 * for a new file: the template of 2.10 is used). 'out' gets the new text;
 * *added says whether any rule was added (if not, the file must not be
 * touched). Pure: no I/O. */
void sb_learn_merge(struct sb_arena *a, const char *existing,
		    const struct sb_learned *l, const struct sb_learn_ctx *ctx,
		    struct sb_buf *out, bool *added);

/* Where the result mode in force came from, for
 * sb_learn_result_mode(). */
enum sb_mode_origin {
	SB_MODE_IMPLICIT, /* no rule: data-only */
	SB_MODE_ARG,      /* a command-line rule */
	SB_MODE_FILE,     /* a line of the rule file or of an include */
};

/* Partial mode's learned result mode (the parent saw a result that
 * data-only refuses: 'objects'; else only data), added to 'text', the
 * learn target's content, in its '# <learning_remote_result>' block:
 * 'remote-result-mode=objects' with its warning (an active data-only line
 * of the file is superseded, commented out), or data-only when no mode is
 * set anywhere; when an include sets the mode, a note to set objects
 * there. 'in_force' is the mode the run had. Lines already in the file
 * are not written again. Returns whether 'out' got a new text (false:
 * leave the file as it is). Pure. */
bool sb_learn_result_mode(const char *text, bool objects, bool in_force,
			  enum sb_mode_origin origin, const char *date,
			  struct sb_buf *out);

/* The template of a new rule file (2.10). */
extern const char sb_learn_template[];

/* Does 's' hold control characters, bidirectional-text or zero-width marks,
 * or bytes that are not UTF-8 (what a reviewer could not see as it is)? */
bool sb_learn_hidden_chars(const char *s);
/* 's' with each such character (and '\\') as \xNN per byte (pure). */
const char *sb_learn_escape(struct sb_arena *a, const char *s);

#endif
