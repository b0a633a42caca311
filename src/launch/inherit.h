/* inherit.h - the descriptors above 2 that python-sb's caller left open.
 *
 * A descriptor the caller leaves open shares its open file description
 * with the caller: its flock(2) lock, its owner for SIGIO, its status
 * flags, and a pipe's other direction through /proc/self/fd/N (python-sb(1),
 * INHERITED DESCRIPTORS; docs/weaknesses.md 10, 119, 135). None of that is
 * judged by a rule, so python-sb closes them all before it does anything
 * else, as sudo and firejail do, and passes on only those the caller names
 * with --pysandboxes-keep-fd (and partial mode's --pysandboxes-channel).
 */
#ifndef SB_INHERIT_H
#define SB_INHERIT_H

#include <stddef.h>

#define SB_INHERIT_SHOWN 8 /* closed descriptors named in the learning note */

struct sb_inherited {
	size_t n_closed;                /* how many were closed */
	int closed[SB_INHERIT_SHOWN];   /* the lowest of them */
};

/* Close every descriptor above 2 but the n_keep of 'keep' (each from 3 to
 * 1023, checked open by the caller), noting in 'out' what was closed.
 * Returns 0; or -1 with a message in 'err' (size errlen) when a descriptor
 * could not be closed. Nothing of python-sb's may be open yet. */
int sb_inherit_close(const int *keep, size_t n_keep, struct sb_inherited *out,
		     char *err, size_t errlen);

#endif
