/* cli.h - split python-sb's argv the way CPython splits its own.
 *
 * Three groups (python-sb(1), SYNOPSIS): interpreter switches, sandbox options
 * (--key=value, turned into rules) and the command with its arguments. Pure
 * code: no I/O; usage errors come back as a message and status 2.
 */
#ifndef SB_CLI_H
#define SB_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct sb_cli {
	/* CPython switches before the command, one argv element each, ready
	 * to pass to the interpreter ("-B", "-W", "error", "-X", "dev"...). */
	SB_VEC(const char *) interp;
	/* sandbox options as rules: "--os_sandbox=x" -> "os-sandbox=x",
	 * "--learn" -> "learn=" */
	SB_VEC(const char *) rules;
	/* the command and its arguments, as the interpreter must get them:
	 * {"-m", "json.tool", "-h"}, {"-c", "code", ...}, {"x.py", ...},
	 * {"-"} or {"--", "x.py"}; empty for the REPL */
	SB_VEC(const char *) command;

	const char *config; /* --pysandboxes-config FILE, else NULL */
	const char *python; /* --python=PATH, else NULL */
	bool explain;       /* --pysandboxes-explain */
	/* partial mode's machine interface (the pysandboxes package):
	 * --pysandboxes-settings prints what it needs of the policy;
	 * --pysandboxes-learn-result=MODE[,fresh] writes the result mode it
	 * learned into the learning run's rule file */
	bool settings;
	const char *learn_result;
	/* --pysandboxes-channel=FD: partial mode's socket to its worker,
	 * which os-sandbox=qemu carries into the guest; 0: none */
	int channel_fd;
	/* --pysandboxes-keep-fd=FD[,FD...], repeatable: the descriptors above
	 * 2 the caller passes on (the others are closed, inherit.h) */
	SB_VEC(int) keep_fds;
	/* --pysandboxes-shadowed=DIR, repeatable (partial mode's package):
	 * a directory where a rule file of the name looked for would have
	 * been read before the one found (seed-spec 2.1.2) */
	SB_VEC(const char *) shadowed;
	bool help;          /* -h, -?, --help (python-sb's own help) */
	bool version;       /* -V, --version */
	bool interactive;   /* -i was given (REPL after the command) */
};

/* Parse argv[1..argc). Returns 0, or 2 with a one-line message in *err
 * (allocated from 'a'), e.g. "Argument expected for -m option". */
int sb_cli_parse(struct sb_arena *a, int argc, char *const *argv,
		 struct sb_cli *out, const char **err);

/* The script the command runs ("x.py", or the word after "--"), or NULL
 * (-c, -m, -, the REPL). */
const char *sb_cli_script(const struct sb_cli *cli);

/* The usage line and the help text (80 columns). */
extern const char sb_cli_usage[];
extern const char sb_cli_help[];

#endif
