/* policy_net.h - addresses, ports and the net= decision, shared by the parser,
 * the guard and the seccomp supervisor.
 *
 * Everything here is pure: no syscalls, no printing, no resolver. Names are
 * resolved once by the launcher (dns.h) and reach this code as pinned
 * addresses only; the decision must never depend on a fresh lookup.
 */
#ifndef SB_POLICY_NET_H
#define SB_POLICY_NET_H

#include <stdint.h>

#include "policy.h"

/* A plain IPv4 or IPv6 address (no prefix, no zone, no brackets).
 * 0, or -EINVAL with *out untouched. */
int sb_addr_parse(const char *s, struct sb_addr *out);

/* "addr" or "addr/prefix"; IPv4 also takes a dotted netmask or hostmask,
 * as Python's ipaddress does. Host bits are allowed and cleared, so *addr
 * is the network address. A bare address gets /32 or /128.
 * 0, or -EINVAL with the outputs untouched. */
int sb_cidr_parse(const char *s, struct sb_addr *addr, unsigned *prefix);

/* Text form (inet_ntop) in the arena; never NULL ("?" for a bad family). */
const char *sb_addr_format(struct sb_arena *a, const struct sb_addr *addr);

/* PORTS field: "", "*", "80", "80,443", "8000-8010", "8000-" (to 65535),
 * with white space around items. Ranges come back sorted and merged; an
 * empty or blank list gives *n == 0 (matches nothing). 0, or -EINVAL. */
int sb_ports_parse(struct sb_arena *a, const char *s,
		   struct sb_port_range **out, size_t *n);

/* IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d, but not :: and
 * ::1) and NAT64 (64:ff9b::a.b.c.d) addresses become a.b.c.d; anything else
 * is copied. 'in' and 'out' may be the same object. */
void sb_addr_canonical(const struct sb_addr *in, struct sb_addr *out);

/* Judge a socket operation: 'kind' is SB_NET_TCP or SB_NET_UDP, 'dir'
 * SB_NET_IN or SB_NET_OUT. Every DENY rule is tried first, then the ALLOW
 * rules; the first match decides. Returns that rule (look at ->allow), or
 * NULL when nothing matches: denied by the implicit default policy.
 *
 * An address in one of the IPv4-in-IPv6 forms above is judged as the IPv4
 * address. DENY rules are also tried against the IPv6 form as written (a
 * DENY of ::/0 still refuses ::ffff:10.1.2.3), ALLOW rules are not (an
 * ALLOW of ::/0 does not open the whole IPv4 internet). */
const struct sb_net_rule *sb_net_decide(const struct sb_policy *p,
					unsigned kind, unsigned dir,
					const struct sb_addr *addr,
					uint16_t port);

/* The ALLOW rule with port 'self' (the ports the sandbox listens on) that
 * matches a TCP connection to 'addr', or NULL. sb_net_decide never returns
 * such a rule: a caller that got NULL from it asks this, then whether the
 * port is one the sandbox listens on (selfport.c). */
const struct sb_net_rule *sb_net_self_rule(const struct sb_policy *p,
					   unsigned kind, unsigned dir,
					   const struct sb_addr *addr);

/* The pinned addresses of a host name named in net= rules, or NULL.
 * ASCII case-insensitive; a trailing dot on either side is ignored. */
const struct sb_pin *sb_pin_lookup(const struct sb_policy *p,
				   const char *host);

#endif
