/* ttysup.h - the supervisor's half of a terminal's modes (ttysup.c): the
 * seccomp allowlist sends TCSETS, TCSETSW and TCSETSF to python-sb, which
 * sets them on its own duplicate of the program's descriptor unless they
 * change TOSTOP. netsup.c calls it.
 */
#ifndef SB_TTYSUP_H
#define SB_TTYSUP_H

#include <linux/seccomp.h>
#include <stdbool.h>

/* Is this notified call an ioctl that sets a terminal's modes? */
bool sb_ttysup_handles(const struct seccomp_notif *req);

/* Judge and perform it: true with the program's result in *rc (0 or
 * -errno), false when the caller went away (no answer to send). */
bool sb_ttysup_serve(int listener, const struct seccomp_notif *req,
		     long *rc);

#endif
