/* sockopt.h - the socket options a sandboxed program may set: one table,
 * compiled into the seccomp filter (src/kernel/seccomp.c) and judged by
 * the guard's setsockopt wrapper (guard/net.c) under os-sandbox=subprocess;
 * and the control messages a send may carry, passed by the supervisor
 * (src/kernel/netsup.c) and judged by the guard's sendmsg wrappers.
 */
#ifndef SB_SOCKOPT_H
#define SB_SOCKOPT_H

#include <stdbool.h>
#include <stddef.h>

struct sb_sockopt {
	int level, name;
};

/* The (level, name) pairs allowed, whatever the socket's family. */
extern const struct sb_sockopt sb_sockopt_ok[];
extern const size_t sb_sockopt_ok_len;

/* Is (level, name) in sb_sockopt_ok? */
bool sb_sockopt_allowed(int level, int name);

/* May a sendmsg carry a control message of (level, type): descriptors
 * (SCM_RIGHTS), IP_TOS, IP_TTL, IPV6_TCLASS, IPV6_HOPLIMIT, IPV6_DONTFRAG
 * and UDP_SEGMENT. */
bool sb_cmsg_allowed(int level, int type);
/* Those names, for a refusal's message. */
#define SB_CMSG_ALLOWED_TEXT                                              \
	"descriptors (SCM_RIGHTS), IP_TOS, IP_TTL, IPV6_TCLASS, "         \
	"IPV6_HOPLIMIT, IPV6_DONTFRAG and UDP_SEGMENT"

#endif
