/* entrysup.h - the file calls on an entry a rule names that Landlock cannot
 * grant, performed by the supervisor (entrysup.c). netsup.c calls it for
 * every file call when sb_entrysup_wanted() says the rules have such an
 * entry, and the seccomp filter then notifies every file call (seccomp.c).
 */
#ifndef SB_ENTRYSUP_H
#define SB_ENTRYSUP_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"

/* Does the policy name an entry whose making, removal or replacement
 * Landlock cannot grant: an expose-new=, or the expose-rw= of a file?
 * Only for os-sandbox=landlock (and auto): a namespace binds what it
 * exposes, and a bound file cannot be replaced. */
bool sb_entrysup_wanted(const struct sb_policy *p);

enum sb_entrysup_answer {
	SB_ENTRYSUP_PASS,     /* not such an entry's: the kernel judges */
	SB_ENTRYSUP_REPLY,    /* performed or refused: send *rc */
	SB_ENTRYSUP_ANSWERED, /* answered already (a descriptor sent), or
			       * the caller went away */
};

/* Judge notified file call 'req' and perform it when it acts on such an
 * entry and the rules allow it; with the program's rights (the caller
 * narrows the capabilities). */
enum sb_entrysup_answer sb_entrysup_serve(const struct sb_policy *p,
					  int listener,
					  const struct seccomp_notif *req,
					  long *rc);

/* expose-made=: rule 'e' decided for 'canon' (a file call the supervisor
 * judges elsewhere: metasup.c, a Unix socket in netsup.c). May the
 * program use it: is the entry right in the rule's directory that holds
 * it one the program made, or (create: a call that makes canon itself)
 * not there yet? */
bool sb_entrysup_made_ok(const struct sb_expose *e, pid_t pid,
			 const char *canon, bool create);

/* (dirfd, name) was just made for the program (a Unix socket bound):
 * remember it as made. */
void sb_entrysup_made_at(int dirfd, const char *name);

#endif
