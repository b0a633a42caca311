/* metasup.h - the supervisor's half of the metadata rule (metasup.c): the
 * mode and time changes the seccomp allowlist sends to python-sb are
 * performed there, on the supervisor's own descriptor of the object, when
 * the object's real path lies in an expose-rw tree; so are inotify
 * watches, when it lies in an exposed one. netsup.c calls it.
 */
#ifndef SB_METASUP_H
#define SB_METASUP_H

#include <linux/seccomp.h>
#include <stdbool.h>

#include "policy.h"

/* Is this notified call one of the mode or time changes, or a watch? */
bool sb_metasup_handles(int nr);

/* Judge and perform it: true with the program's result in *rc (0, a watch
 * descriptor, or -errno), false when the caller went away (no answer to
 * send). */
bool sb_metasup_serve(const struct sb_policy *p, int listener,
		      const struct seccomp_notif *req, long *rc);

#endif
