/* policy_net.h - addresses, ports and the net= decision, shared by the parser,
 * the guard and the seccomp supervisor.
 *
 * Everything here is pure: no syscalls, no printing, no resolver. Names are
 * resolved once by the launcher (dns.h) and reach this code as pinned
 * addresses only; the decision must never depend on a fresh lookup.
 */
#ifndef SB_POLICY_NET_H
#define SB_POLICY_NET_H

#include <stdbool.h>
#include <stddef.h>
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

/* A numeric host as getaddrinfo() reads it without a lookup: IPv4 in every
 * form inet_aton() takes ("127.1", "0x7f.1", "2130706433", "0", octal
 * parts) with no trailing text, or an IPv6 literal with an optional
 * "%zone" (left out). No brackets, no trailing dot: those are names.
 * 0, or -EINVAL (a name) with *out untouched. */
int sb_addr_parse_numeric(const char *s, struct sb_addr *out);

/* IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
 * IPv4-compatible (::a.b.c.d, but not :: and ::1), NAT64 (64:ff9b::a.b.c.d)
 * and 6to4 (2002:aabb:ccdd::/48) addresses become a.b.c.d; anything else
 * is copied. 'in' and 'out' may be the same object. */
void sb_addr_canonical(const struct sb_addr *in, struct sb_addr *out);

/* The addresses the kernel may use for 'in' in direction 'dir', canonical
 * (above): for SB_NET_OUT the unspecified 0.0.0.0 and :: are 127.0.0.1 and
 * ::1, and the rest of 0.0.0.0/8 is both itself and 127.0.0.1 (unicast on
 * Linux 5.3 and later, unreachable before); 255.255.255.255 and multicast
 * (224.0.0.0/4, ff00::/8) are themselves and loopback, as they are looped
 * back to this host's sockets too. Returns how many (1 or 2). */
size_t sb_addr_destinations(const struct sb_addr *in, unsigned dir,
			    struct sb_addr out[2]);

/* Judge a socket operation: 'kind' is SB_NET_TCP or SB_NET_UDP, 'dir'
 * SB_NET_IN or SB_NET_OUT. Every DENY rule is tried first, then the ALLOW
 * rules; the first match decides. Returns that rule (look at ->allow), or
 * NULL when nothing matches: denied by the implicit default policy.
 *
 * The address is judged as the kernel will use it (sb_addr_destinations):
 * an IPv4-in-IPv6 form as the IPv4 address, an outbound 0.0.0.0 or :: as
 * loopback; with two destinations both must be allowed. DENY rules are
 * also tried against the forms as written (a DENY of ::/0 still refuses
 * ::ffff:10.1.2.3), ALLOW rules are not (an ALLOW of ::/0 does not open
 * the whole IPv4 internet, an ALLOW of 0.0.0.0 does not open loopback). */
const struct sb_net_rule *sb_net_decide(const struct sb_policy *p,
					unsigned kind, unsigned dir,
					const struct sb_addr *addr,
					uint16_t port);

/* The ALLOW rule with port 'self' (the ports the sandbox listens on) that
 * matches a TCP connection to 'addr' (every address the kernel connects
 * to for it, sb_addr_destinations), or NULL. sb_net_decide never returns
 * such a rule: a caller that got NULL from it asks this, then whether the
 * port is one the sandbox listens on (selfport.c). */
const struct sb_net_rule *sb_net_self_rule(const struct sb_policy *p,
					   unsigned kind, unsigned dir,
					   const struct sb_addr *addr);

/* Are 'a' and 'b' the same host name? ASCII case-insensitive; a trailing
 * dot on either side is ignored. */
bool sb_host_eq(const char *a, const char *b);
/* The pinned addresses of a host name named in net= rules, or NULL,
 * compared as sb_host_eq() does. */
const struct sb_pin *sb_pin_lookup(const struct sb_policy *p,
				   const char *host);

/* Does an ALLOW rule name 'host', which did not resolve when the rules
 * were read? (compared as sb_host_eq() does) */
bool sb_net_unresolved(const struct sb_policy *p, const char *host);

/* Does some ALLOW rule for OUT with a port name every host ('*' as its
 * NETWORK)? Then any name may be resolved; an address, a network or
 * 0.0.0.0/0 allows addresses, never lookups. */
bool sb_net_names_any(const struct sb_policy *p);

/* Does the policy allow the whole network, so that abstract Unix socket
 * names (which no rule can name) are allowed too: an ALLOW rule with every
 * field '*' (net=ALLOW|*|*|*|*), and no DENY rule. */
bool sb_net_allows_abstract(const struct sb_policy *p);

/* May 'host' be resolved: a rule names it (it is pinned), or
 * sb_net_names_any(). */
bool sb_net_name_allowed(const struct sb_policy *p, const char *host);

/* May the name of 'addr' be asked (a reverse lookup): it is an address of
 * a pinned name, or an ALLOW rule for OUT names exactly that address (a
 * /32 or /128), or sb_net_names_any(). A network rule allows none of its
 * addresses' names: a reverse query carries the address bits out. */
bool sb_net_reverse_allowed(const struct sb_policy *p,
			    const struct sb_addr *addr);

#define SB_DNS_PORT 53

/* Judge a DNS message a program sends to port 53: 1 when it is a standard
 * query of one question whose name sb_net_name_allowed(), 0 when the name
 * is not, -EINVAL when it is anything else (a response, another opcode,
 * more questions or records, compression, a byte no host name has, EDNS
 * with options): refused too. 'name' (at least 256 bytes) receives the
 * question's name for the message, "?" when there is none. */
int sb_dns_query_judge(const struct sb_policy *p, const void *msg,
		       size_t len, char *name, size_t size);

#endif
