/* dns.c - resolve the host names of net= rules for the launcher: the hosts
 * file first, then the loopback names a minimal hosts file may lack, then
 * the system resolver with a short retry on a transient failure. It reads
 * files and may query DNS, so it stays out of the pure core: the parser gets
 * it as an injected sb_resolve_fn and the sandbox never calls it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "dns.h"
#include "policy_net.h"

#define DEFAULT_HOSTS "/etc/hosts"

struct addr_list {
	struct sb_arena *arena;
	SB_VEC(struct sb_addr) v;
};

static void add_addr(struct addr_list *l, int family, const void *bytes)
{
	size_t i, len = family == AF_INET ? 4 : 16;
	struct sb_addr *a;

	for (i = 0; i < l->v.n; i++)
		if (l->v.v[i].family == family &&
		    !memcmp(l->v.v[i].bytes, bytes, len))
			return;
	a = SB_VEC_PUSH(l->arena, l->v);
	a->family = family;
	memcpy(a->bytes, bytes, len);
}

static bool add_text_addr(struct addr_list *l, const char *s)
{
	uint8_t b[16];

	if (inet_pton(AF_INET, s, b) == 1)
		add_addr(l, AF_INET, b);
	else if (inet_pton(AF_INET6, s, b) == 1)
		add_addr(l, AF_INET6, b);
	else
		return false;
	return true;
}

/* Every address the hosts file gives 'host', in file order. A missing or
 * unreadable file is simply empty: the resolver comes next anyway. */
static void hosts_lookup(const char *path, const char *host,
			 struct addr_list *l)
{
	static const char sep[] = " \t\r\n";
	char *line = NULL, *save, *addr, *name;
	size_t cap = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) >= 0) {
		line[strcspn(line, "#")] = '\0';
		addr = strtok_r(line, sep, &save);
		if (!addr)
			continue;
		while ((name = strtok_r(NULL, sep, &save))) {
			if (sb_host_eq(name, host)) {
				/* A bad address (or one with a %zone) is
				 * skipped, the rest of the file still
				 * counts. */
				add_text_addr(l, addr);
				break;
			}
		}
	}
	free(line);
	fclose(f);
}

/* Only names the hosts file lacks: some container images ship an empty
 * one. "localhost" stays IPv4 alone, as the standard file has it, so that
 * a rule naming it does not silently grow an IPv6 twin. */
static void loopback_fallback(const char *host, struct addr_list *l)
{
	if (sb_host_eq(host, "localhost"))
		add_text_addr(l, "127.0.0.1");
	else if (sb_host_eq(host, "ip6-localhost") ||
		 sb_host_eq(host, "ip6-loopback"))
		add_text_addr(l, "::1");
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static bool is_transient(int rc)
{
	return rc == EAI_AGAIN || rc == EAI_SYSTEM;
}

enum sb_resolve_status sb_dns_resolve(void *ctx, struct sb_arena *arena,
				      const char *host, struct sb_addr **addrs,
				      size_t *n, const char **why)
{
	/* A resolver that is still starting (a container's) answers a
	 * moment later; parsing must not hang on one that is down. */
	static const unsigned delays_ms[] = { 200, 400 };
	const struct sb_dns_opts *o = ctx;
	struct addr_list l = { .arena = arena };
	struct addrinfo hints = { .ai_family = AF_UNSPEC };
	struct addrinfo *res = NULL, *ai;
	size_t attempt;
	int rc;

	*addrs = NULL;
	*n = 0;
	*why = NULL;
	if (!host || !*host)
		return SB_RESOLVE_NONAME;

	hosts_lookup(o && o->hosts_path ? o->hosts_path : DEFAULT_HOSTS, host,
		     &l);
	if (!l.v.n)
		loopback_fallback(host, &l);
	if (l.v.n)
		goto found;

	for (attempt = 0;; attempt++) {
		rc = (o && o->gai ? o->gai : getaddrinfo)(host, NULL, &hints,
							  &res);
		if (!is_transient(rc) || attempt == SB_ARRAY_LEN(delays_ms))
			break;
		(o && o->sleep_ms ? o->sleep_ms : sleep_ms)(delays_ms[attempt]);
	}
	if (rc) {
		if (!is_transient(rc))
			return SB_RESOLVE_NONAME;
		*why = sb_arena_strdup(arena, gai_strerror(rc));
		return SB_RESOLVE_TRANSIENT;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET && ai->ai_addr)
			add_addr(&l, AF_INET,
				 &((struct sockaddr_in *)(void *)ai->ai_addr)
					  ->sin_addr);
		else if (ai->ai_family == AF_INET6 && ai->ai_addr)
			add_addr(&l, AF_INET6,
				 &((struct sockaddr_in6 *)(void *)ai->ai_addr)
					  ->sin6_addr);
	}
	if (res)
		(o && o->gai_free ? o->gai_free : freeaddrinfo)(res);
	if (!l.v.n)
		return SB_RESOLVE_NONAME;
found:
	*addrs = l.v.v;
	*n = l.v.n;
	return SB_RESOLVE_OK;
}
