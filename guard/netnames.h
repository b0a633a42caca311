/* netnames.h - how the network guard reads a host it is given, with no
 * Python and no query (netnames.c): the pinned name it stands for (the
 * policy's pins, then the loopback names), and the literals CPython's
 * socket functions take without a lookup, each by its own rules.
 */
#ifndef SB_NETNAMES_H
#define SB_NETNAMES_H

#include <stdbool.h>

#include "policy_net.h"

/* 127.0.0.1 and ::1, which the loopback names stand for. */
extern const struct sb_addr sb_loop4, sb_loop6;

/* The pin of 'host' in p (ASCII case-insensitive, one trailing dot
 * ignored), else of a loopback name (localhost, ip6-localhost,
 * ip6-loopback: they answer without a query even when the hosts file
 * lacks them; a net= rule naming one pins it like any other name), else
 * NULL. */
const struct sb_pin *sb_netname_pin(const struct sb_policy *p,
				    const char *host);

/* The address CPython's setipaddr() makes of a literal host for a socket
 * of 'family', without a lookup: '' is the wildcard, '<broadcast>' the
 * IPv4 broadcast, and otherwise what getaddrinfo() takes as numeric (all
 * the inet_aton forms, a zone after an IPv6 literal). False for a name. */
bool sb_netname_socket_literal(int family, const char *host,
			       struct sb_addr *out);

/* A literal for getaddrinfo() and gethostbyname(): what getaddrinfo reads
 * as numeric, no query. */
bool sb_netname_resolver_literal(const char *host, struct sb_addr *out);

/* gethostbyname_ex() also hands the text to gethostbyname_r(), which takes
 * only digits and dots (and IPv6) as numeric: "0x7f.1" is a query there. */
bool sb_netname_strict_literal(const char *host, struct sb_addr *out);

#endif
