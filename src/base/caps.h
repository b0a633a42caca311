/* caps.h - emptying the calling process's capability sets: the kernel
 * layer does it before its filter (src/kernel/kernel.c), the guard at its
 * start under os-sandbox=subprocess (guard/guard.c), so that a program run
 * as root holds no capability under any provider.
 */
#ifndef SB_CAPS_H
#define SB_CAPS_H

#include <stdbool.h>

/* Does the calling process hold any capability (effective, permitted or
 * inheritable)? true when it cannot tell. */
bool sb_caps_held(void);

/* Empty the calling process's capability sets, bounding and ambient
 * included, and lock the securebits, so that an exec as uid 0 gains none
 * back. 0, or -errno. */
int sb_caps_drop(void);

#endif
