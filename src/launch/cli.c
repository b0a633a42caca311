/* cli.c - split python-sb's argv into interpreter switches, sandbox options
 * (turned into rules) and the command, scanning left to right the way
 * CPython's own getopt does (option string "bBc:dEhiIJm:OPqRsStuvVW:xX:?"),
 * so that a command line means the same thing under python-sb as under
 * python. It owns the usage and help texts too. Pure code: it never prints,
 * never exits and makes no syscall; every string it returns points into argv
 * or into the caller's arena.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* CPython switches that take no argument. -t is still accepted (and ignored)
 * by CPython 3, so it must not be an error here either. */
static const char flag_letters[] = "bBdEiIOPqRsStuvx";

#define CHECK_PYCS "--check-hash-based-pycs"

struct scan {
	struct sb_arena *a;
	int argc;
	char *const *argv;
	int i; /* next element to read */
	struct sb_cli *out;
	const char **err;
};

static int usage_error(struct scan *s, const char *fmt, ...) SB_PRINTF(2, 3);

static int usage_error(struct scan *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*s->err = sb_arena_vprintf(s->a, fmt, ap);
	va_end(ap);
	return 2;
}

/* Everything from here on belongs to the program, even "--learn". */
static void take_rest(struct scan *s)
{
	while (s->i < s->argc)
		*SB_VEC_PUSH(s->a, s->out->command) = s->argv[s->i++];
}

/* Length of the UTF-8 sequence starting at p, so that an unknown non-ASCII
 * switch is quoted whole rather than as half a character. */
static int utf8_len(const char *p)
{
	unsigned char c = (unsigned char)*p;
	int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
	int k;

	for (k = 1; k < n; k++)
		if (((unsigned char)p[k] & 0xc0) != 0x80)
			return k;
	return n;
}

/* A group of short switches such as "-B", "-IB", "-OO", "-BWerror",
 * "-Im" (s->i already points past it). An argument-taking letter ends the
 * group: the rest of the element, or else the next element, is its
 * argument. */
static int scan_short(struct scan *s, const char *arg)
{
	struct sb_cli *out = s->out;
	/* the no-argument letters seen so far, as one "-..." group */
	char *kept = sb_arena_alloc(s->a, strlen(arg) + 1);
	size_t nkept = 1;
	bool dropped = false;
	const char *p;

	kept[0] = '-';
	for (p = arg + 1; *p; p++) {
		char c = *p;
		const char *val;
		bool glued;

		if (c == 'h' || c == '?' || c == 'V') {
			/* python-sb answers these itself, the interpreter
			 * must not see them */
			if (c == 'V')
				out->version = true;
			else
				out->help = true;
			dropped = true;
			continue;
		}
		if (strchr(flag_letters, c)) {
			if (c == 'i')
				out->interactive = true;
			kept[nkept++] = c;
			continue;
		}
		if (c == 'J')
			return usage_error(s, "-J is reserved for Jython");
		if (c == '-')
			return usage_error(s, "Unknown option: %s", arg);
		if (c != 'W' && c != 'X' && c != 'c' && c != 'm')
			return usage_error(s, "Unknown option: -%.*s",
					   utf8_len(p), p);

		if (nkept > 1)
			*SB_VEC_PUSH(s->a, out->interp) = kept;
		val = p + 1;
		glued = *val != '\0';
		if (!glued) {
			if (s->i >= s->argc)
				return usage_error(
					s, "Argument expected for -%c option",
					c);
			val = s->argv[s->i++];
		}
		if (c == 'W' || c == 'X') {
			if (glued) {
				*SB_VEC_PUSH(s->a, out->interp) =
					p == arg + 1 ? arg :
					sb_arena_printf(s->a, "-%c%s", c, val);
			} else {
				*SB_VEC_PUSH(s->a, out->interp) =
					sb_arena_printf(s->a, "-%c", c);
				*SB_VEC_PUSH(s->a, out->interp) = val;
			}
			return 0;
		}
		/* -c / -m: keep the glued spelling glued ("-Imjson.tool"
		 * gives "-mjson.tool"), the interpreter accepts both */
		if (glued) {
			*SB_VEC_PUSH(s->a, out->command) =
				p == arg + 1 ? arg :
				sb_arena_printf(s->a, "-%c%s", c, val);
		} else {
			*SB_VEC_PUSH(s->a, out->command) =
				sb_arena_printf(s->a, "-%c", c);
			*SB_VEC_PUSH(s->a, out->command) = val;
		}
		take_rest(s);
		return 0;
	}
	if (nkept > 1)
		*SB_VEC_PUSH(s->a, out->interp) = dropped ? kept : arg;
	return 0;
}

static int check_pycs_mode(struct scan *s, const char *mode)
{
	if (strcmp(mode, "always") && strcmp(mode, "never") &&
	    strcmp(mode, "default"))
		return usage_error(s, CHECK_PYCS " must be one of 'default', "
				      "'always', or 'never'");
	*SB_VEC_PUSH(s->a, s->out->interp) = CHECK_PYCS;
	*SB_VEC_PUSH(s->a, s->out->interp) = mode;
	return 0;
}

/* An argparse-style value: a following element that looks like an option
 * is not taken as the value ("-" alone is a value). */
static const char *next_value(struct scan *s)
{
	const char *v;

	if (s->i >= s->argc)
		return NULL;
	v = s->argv[s->i];
	if (v[0] == '-' && v[1] != '\0')
		return NULL;
	s->i++;
	return v;
}

/* "--name..." other than "--" itself (s->i already points past it). */
static int scan_long(struct scan *s, const char *arg)
{
	struct sb_cli *out = s->out;
	const char *body = arg + 2;
	const char *eq, *val;
	size_t keylen, k;
	char *key;

	if (!strcmp(arg, "--help")) {
		out->help = true;
		return 0;
	}
	if (!strcmp(arg, "--version")) {
		out->version = true;
		return 0;
	}
	/* CPython's own long options: the interpreter prints that help */
	if (!strcmp(arg, "--help-env") || !strcmp(arg, "--help-xoptions") ||
	    !strcmp(arg, "--help-all")) {
		*SB_VEC_PUSH(s->a, out->interp) = arg;
		return 0;
	}
	if (!strcmp(arg, CHECK_PYCS)) {
		/* CPython takes the next element whatever it looks like */
		if (s->i >= s->argc)
			return usage_error(s, "Argument expected for %s option",
					   arg);
		return check_pycs_mode(s, s->argv[s->i++]);
	}
	/* CPython only knows the two-element spelling: pass it that way */
	if (sb_str_starts(arg, CHECK_PYCS "="))
		return check_pycs_mode(s, arg + strlen(CHECK_PYCS "="));

	eq = strchr(body, '=');
	keylen = eq ? (size_t)(eq - body) : strlen(body);
	key = sb_arena_strndup(s->a, body, keylen);
	for (k = 0; k < keylen; k++)
		if (key[k] == '_')
			key[k] = '-';

	if (!strcmp(key, "pysandboxes-config")) {
		val = eq ? eq + 1 : next_value(s);
		if (!val || !*val)
			return usage_error(s, "argument --pysandboxes-config: "
					      "expected one argument");
		out->config = val;
		return 0;
	}
	if (!strcmp(key, "pysandboxes-log")) {
		/* the rule log-file=, with an argument's priority */
		val = eq ? eq + 1 : next_value(s);
		if (!val || !*val)
			return usage_error(s, "argument --pysandboxes-log: "
					      "expected one argument");
		*SB_VEC_PUSH(s->a, out->rules) =
			sb_arena_printf(s->a, "log-file=%s", val);
		return 0;
	}
	if (!strcmp(key, "pysandboxes-settings")) {
		if (eq)
			return usage_error(s, "argument "
					      "--pysandboxes-settings: ignored "
					      "explicit argument '%s'",
					   eq + 1);
		out->settings = true;
		return 0;
	}
	if (!strcmp(key, "pysandboxes-shadowed")) {
		val = eq ? eq + 1 : next_value(s);
		if (!val || val[0] != '/')
			return usage_error(s, "argument --pysandboxes-shadowed: "
					      "expected an absolute directory");
		*SB_VEC_PUSH(s->a, out->shadowed) = val;
		return 0;
	}
	if (!strcmp(key, "pysandboxes-channel")) {
		char *end;
		long fd = eq ? strtol(eq + 1, &end, 10) : -1;

		if (!eq || !eq[1] || *end || fd < 3 || fd > 1023)
			return usage_error(s, "argument --pysandboxes-channel: "
					      "expected =FD, an open descriptor "
					      "from 3 to 1023");
		out->channel_fd = (int)fd;
		return 0;
	}
	if (!strcmp(key, "pysandboxes-keep-fd")) {
		const char *q = eq ? eq + 1 : "";

		do {
			char *end;
			long fd = strtol(q, &end, 10);

			if (!(*q >= '0' && *q <= '9') ||
			    (*end && *end != ',') || fd < 3 || fd > 1023)
				return usage_error(s, "argument "
						      "--pysandboxes-keep-fd: "
						      "expected =FD[,FD...], "
						      "open descriptors from "
						      "3 to 1023");
			*SB_VEC_PUSH(s->a, out->keep_fds) = (int)fd;
			q = *end ? end + 1 : end;
		} while (*q || q[-1] == ',');
		return 0;
	}
	if (!strcmp(key, "pysandboxes-learn-result")) {
		const char *rest;

		val = eq ? eq + 1 : NULL;
		rest = !val ? NULL
		       : sb_str_starts(val, "objects")	 ? val + 7
		       : sb_str_starts(val, "data-only") ? val + 9
							 : NULL;
		if (rest && sb_str_starts(rest, ",fresh"))
			rest += 6;
		if (rest && sb_str_starts(rest, ",made"))
			rest += 5;
		if (!rest || *rest)
			return usage_error(s, "argument "
					      "--pysandboxes-learn-result: "
					      "expected =objects or "
					      "=data-only, then ',fresh', "
					      "',made', both or nothing");
		out->learn_result = val;
		return 0;
	}
	if (!strcmp(key, "pysandboxes-explain")) {
		if (eq)
			return usage_error(s, "argument --pysandboxes-explain: "
					      "ignored explicit argument '%s'",
					   eq + 1);
		out->explain = true;
		return 0;
	}
	if (!strcmp(key, "python")) {
		/* no two-element form: "--python x.py" would be ambiguous */
		if (!eq || !eq[1])
			return usage_error(s,
					   "argument --python: expected =PATH");
		out->python = eq + 1;
		return 0;
	}
	*SB_VEC_PUSH(s->a, out->rules) =
		sb_arena_printf(s->a, "%s=%s", key, eq ? eq + 1 : "");
	return 0;
}

int sb_cli_parse(struct sb_arena *a, int argc, char *const *argv,
		 struct sb_cli *out, const char **err)
{
	struct scan s = {
		.a = a, .argc = argc, .argv = argv, .i = 1,
		.out = out, .err = err,
	};
	int rc = 0;

	memset(out, 0, sizeof(*out));
	*err = NULL;
	while (s.i < argc) {
		const char *arg = argv[s.i];

		/* a script (any name, even ""), or "-" for stdin */
		if (arg[0] != '-' || arg[1] == '\0') {
			take_rest(&s);
			break;
		}
		s.i++;
		if (!strcmp(arg, "--")) {
			/* the interpreter must see "--" too, or "-x.py" would
			 * be read as switches; a bare "--" is the REPL */
			if (s.i < argc) {
				*SB_VEC_PUSH(a, out->command) = arg;
				take_rest(&s);
			}
			break;
		}
		rc = arg[1] == '-' ? scan_long(&s, arg) : scan_short(&s, arg);
		if (rc)
			break;
	}
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

const char sb_cli_usage[] =
	"usage: python-sb [option] ... [-c cmd | -m mod | file | -] [arg] ...";

const char sb_cli_help[] =
	"usage: python-sb [option] ... [-c cmd | -m mod | file | -] [arg] ...\n"
	"\n"
	"Run a Python program in a sandbox.\n"
	"\n"
	"Interpreter options (passed to the sandboxed Python):\n"
	"  -h, -?, --help        Show this help message and exit.\n"
	"  -V, --version         Print the Python version and exit.\n"
	"  -b                    "
	"Warn about str(bytes) and comparing bytes with str\n"
	"                        or int (-bb: make them errors).\n"
	"  -B                    Do not write .pyc files on import.\n"
	"  -d                    Parser debugging output (debug builds only).\n"
	"  -E                    Ignore the PYTHON* environment variables.\n"
	"  -i                    "
	"Inspect interactively after running the program.\n"
	"  -I                    "
	"Isolate Python from the user's environment (implies\n"
	"                        -E, -P and -s).\n"
	"  -O                    "
	"Remove assert and __debug__-dependent statements.\n"
	"  -OO                   Like -O, and also discard docstrings.\n"
	"  -P                    "
	"Do not prepend a potentially unsafe path to sys.path.\n"
	"  -q                    "
	"Do not print the version and copyright banner.\n"
	"  -R                    No effect: hash randomization is always on.\n"
	"  -s                    "
	"Do not add the user site directory to sys.path.\n"
	"  -S                    Do not imply 'import site' on start-up.\n"
	"  -u                    Unbuffered stdout and stderr.\n"
	"  -v                    "
	"Trace import statements (repeat for more detail).\n"
	"  -W arg                "
	"Warning control (action:message:category:module:line);\n"
	"                        may be repeated.\n"
	"  -x                    "
	"Skip the first line of the source (non-Unix #!).\n"
	"  -X opt                "
	"Set an implementation-specific option; may be repeated.\n"
	"  --check-hash-based-pycs always|default|never\n"
	"                        "
	"Control how Python invalidates hash-based .pyc files.\n"
	"  --help-env            "
	"Print help about Python's environment variables and\n"
	"                        exit.\n"
	"  --help-xoptions       Print help about the -X options and exit.\n"
	"  --help-all            Print Python's complete help and exit.\n"
	"\n"
	"Sandbox options:\n"
	"  --pysandboxes-config FILE\n"
	"                        Where to find the rule file (.py-sandboxes).\n"
	"  --pysandboxes-log FILE\n"
	"                        "
	"Append one JSON line per refusal to FILE (the rule\n"
	"                        log-file=FILE).\n"
	"  --pysandboxes-explain\n"
	"                        "
	"Print the effective policy and what the run would do,\n"
	"                        then exit.\n"
	"  --pysandboxes-keep-fd=FD[,FD...]\n"
	"                        "
	"Pass on these descriptors above 2; python-sb closes\n"
	"                        the others the caller left open.\n"
	"  --python=PATH         "
	"The Python interpreter to run (default: $PYSB_PYTHON,\n"
	"                        then python3 beside python-sb, in $VIRTUAL_ENV,\n"
	"                        on PATH: python-sb(1)).\n"
	"  --<rule>=<value>      Add a rule, e.g. --expose-ro=DIR,\n"
	"                        --os-sandbox=landlock. It has priority.\n"
	"  --pysandboxes-review [--json] [DIFF | - | OLD NEW]\n"
	"                        As the first argument: grade the rules a diff of\n"
	"                        rule files adds or removes; runs nothing.\n"
	"\n"
	"Command (terminates the option list):\n"
	"  -m mod                Run library module as a script.\n"
	"  -c cmd                Program passed in as a string.\n"
	"\n"
	"Arguments:\n"
	"file   : program read from script file\n"
	"-      : program read from stdin (default; interactive mode "
	"if a tty)\n"
	"arg ...: arguments passed to program in sys.argv[1:]\n";

const char *sb_cli_script(const struct sb_cli *cli)
{
	const char *first;

	if (!cli->command.n)
		return NULL;
	first = cli->command.v[0];
	if (strcmp(first, "--") == 0)
		return cli->command.n > 1 ? cli->command.v[1] : NULL;
	return first[0] == '-' ? NULL : first;
}
