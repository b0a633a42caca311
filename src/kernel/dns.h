/* dns.h - the launcher's resolver for host names in net= rules.
 *
 * Not pure: it reads the hosts file and asks the system resolver. It runs
 * once, at parse time, in the launcher; the sandbox only ever sees the
 * pinned result (policy_net.h).
 */
#ifndef SB_DNS_H
#define SB_DNS_H

#include <netdb.h>

#include "policy.h"

struct sb_dns_opts {
	const char *hosts_path; /* NULL: /etc/hosts */
	/* Seams for the tests, NULL in real use: getaddrinfo/freeaddrinfo and
	 * the pause between retries. */
	int (*gai)(const char *node, const char *service,
		   const struct addrinfo *hints, struct addrinfo **res);
	void (*gai_free)(struct addrinfo *res);
	void (*sleep_ms)(unsigned ms);
};

/* An sb_resolve_fn; 'ctx' is NULL or a struct sb_dns_opts *. In order: every
 * address of 'host' in the hosts file (ASCII case-insensitive, both
 * families, file order); else the built-in localhost -> 127.0.0.1 and
 * ip6-localhost, ip6-loopback -> ::1; else getaddrinfo(AF_UNSPEC), results
 * deduplicated. EAI_AGAIN and EAI_SYSTEM are retried after 0.2 s and 0.4 s
 * and then give SB_RESOLVE_TRANSIENT with *why = gai_strerror();
 * EAI_NONAME, EAI_FAIL and EAI_NODATA give SB_RESOLVE_NONAME at once. */
enum sb_resolve_status sb_dns_resolve(void *ctx, struct sb_arena *arena,
				      const char *host, struct sb_addr **addrs,
				      size_t *n, const char **why);

#endif
