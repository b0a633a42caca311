/* denial.h - the denial log: one JSON object per line for every refusal,
 * written by C with one write(2) per record on a descriptor the launcher
 * opened with O_APPEND before the sandbox was applied.
 *
 * sb_denial_format is pure (a record into a buffer, strings escaped for
 * JSON, bytes that are not UTF-8 as \udcXX like Python's surrogateescape);
 * sb_denial_write adds the time and makes the one write(2): nothing is
 * buffered, so a record written is never lost when the program crashes.
 */
#ifndef SB_DENIAL_H
#define SB_DENIAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* Where a refusal was decided ("layer"): the Python guard in the program's
 * process, python-sb's supervisor outside the sandbox, or the kernel's
 * seccomp filter (a call outside the allowlist) or Landlock (a file call),
 * both reported by the supervisor. */
#define SB_LAYER_PYTHON "python"
#define SB_LAYER_SUPERVISOR "supervisor"
#define SB_LAYER_SECCOMP "seccomp"
/* a file call Landlock refuses, recorded by the supervisor before the
 * kernel judged it (filelog.c) */
#define SB_LAYER_LANDLOCK "landlock"

/* The one datagram on the guard's relay that is no record: the guard is
 * armed, the program's code starts (suplog.c begins the Landlock records
 * then; what the interpreter's start did is not the program's). */
#define SB_RELAY_STARTED "started"

struct sb_denial {
	const char *layer;  /* SB_LAYER_* */
	const char *kind;   /* "file", "network", "import", "api"... */
	const char *target; /* the path, address, module, API */
	const char *rule;   /* the rule that decided, NULL: "no rule" */
	const char *add;    /* the rule to add, NULL: none is known */
	/* who wrote the record: "sandbox" (the program's own process, which
	 * could have forged it) or "supervisor" (outside the sandbox) */
	const char *by;
	pid_t pid;
};

/* Append JSON string 's' (quotes included) to b. */
void sb_json_string(struct sb_buf *b, const char *s);

/* Append one record, newline included, to b. 'ms' is the time in
 * milliseconds since the epoch (UTC). */
void sb_denial_format(struct sb_buf *b, const struct sb_denial *d,
		      int64_t ms);

/* Format 'd' with the current time and write it to fd in one write(2).
 * 0 or -errno; a fd < 0 is no log (0). Never blocks on a lock. 'cap' (0:
 * none) is the log-max-size=: a record that would take a regular file
 * past it is replaced by one of kind "log-full", padded to the cap, and
 * nothing is written to a file at the cap (-EFBIG). */
int sb_denial_write(int fd, const struct sb_denial *d, uint64_t cap);

/* The guest's log under os-sandbox=qemu: the second stage in the guest
 * sends each record as one line of tab-separated fields on a virtio-serial
 * port ("rec", layer, kind, target, +rule or -, +add or -, by, pid), and
 * the launcher on the host, which takes nothing else from that port,
 * writes the log's record with its own time (sb_denial_write). The guest
 * names no path and no time; a line longer than SB_DENIAL_WIRE_MAX is not
 * a record. */
#define SB_DENIAL_WIRE_MAX 65536
/* Append the line, newline included, to b. */
void sb_denial_wire(struct sb_buf *b, const struct sb_denial *d);
/* The line of 'd' on fd (a blocking port: every byte of it, in order). 0
 * or -errno. */
int sb_denial_send(int fd, const struct sb_denial *d);
/* The record of one line (without its newline), its strings in 'a'; false
 * when the line is not one sb_denial_wire writes: another layer, a "by"
 * other than "supervisor" or "sandbox", an empty kind or one over 32
 * bytes, a pid that is not a number. */
bool sb_denial_unwire(struct sb_arena *a, const char *line, size_t n,
		      struct sb_denial *d);
/* The fields a relayed record shares with a wired one (the guard's
 * datagrams, suplog.c): 'kind' non-empty and at most 32 bytes, 'rule' and
 * 'add' each "+text" or exactly "-". True when they are; then *rule and
 * *add point at the text or are NULL. */
bool sb_denial_fields(const char *kind, const char *rule_f,
		      const char *add_f, const char **rule, const char **add);

#endif
