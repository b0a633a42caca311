/* test_netnames.c - the network guard's reading of hosts (guard/netnames.c)
 * by tables: the literals a socket takes without a lookup (the wildcard,
 * '<broadcast>', every inet_aton spelling, an IPv6 zone), the stricter
 * literals of gethostbyname_ex, and the names that stand for a pin (the
 * policy's, then the loopback names; case and one trailing dot ignored). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netnames.h"
#include "policy.h"
#include "rulefile.h"
#include "tap.h"

enum which { SOCKET4, SOCKET6, RESOLVER, STRICT };

struct lit_case {
	enum which which;
	const char *host;
	const char *want; /* the address's text, or NULL: not a literal */
};

static const struct lit_case lits[] = {
	{ SOCKET4, "", "0.0.0.0" },
	{ SOCKET6, "", "::" },
	{ SOCKET4, "<broadcast>", "255.255.255.255" },
	{ SOCKET6, "<broadcast>", NULL },
	{ SOCKET4, "127.0.0.1", "127.0.0.1" },
	{ SOCKET4, "127.1", "127.0.0.1" },
	{ SOCKET4, "0x7f.1", "127.0.0.1" },
	{ SOCKET4, "2130706433", "127.0.0.1" },
	{ SOCKET4, "0177.0.0.1", "127.0.0.1" },
	{ SOCKET6, "::1", "::1" },
	{ SOCKET6, "fe80::1%lo", "fe80::1" },
	{ SOCKET4, "example.com", NULL },
	{ SOCKET4, "localhost", NULL },
	{ RESOLVER, "10.1.2.3", "10.1.2.3" },
	{ RESOLVER, "0x7f.1", "127.0.0.1" },
	{ RESOLVER, "", NULL },
	{ RESOLVER, "<broadcast>", NULL },
	{ RESOLVER, "host.invalid", NULL },
	{ STRICT, "127.0.0.1", "127.0.0.1" },
	{ STRICT, "127.1", "127.0.0.1" },
	{ STRICT, "0x7f.1", NULL },
	{ STRICT, "1.2.3.", NULL },
	{ STRICT, "", NULL },
	{ STRICT, "::1", NULL },
};

static const char *text(const struct sb_addr *a, char buf[INET6_ADDRSTRLEN])
{
	if (!inet_ntop(a->family, a->bytes, buf, INET6_ADDRSTRLEN))
		snprintf(buf, INET6_ADDRSTRLEN, "?");
	return buf;
}

static void test_literals(void)
{
	static const char *const names[] = { "socket(AF_INET)",
					     "socket(AF_INET6)", "resolver",
					     "strict" };
	char buf[INET6_ADDRSTRLEN];
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(lits); i++) {
		const struct lit_case *c = &lits[i];
		struct sb_addr a;
		bool r;

		switch (c->which) {
		case SOCKET4:
			r = sb_netname_socket_literal(AF_INET, c->host, &a);
			break;
		case SOCKET6:
			r = sb_netname_socket_literal(AF_INET6, c->host, &a);
			break;
		case RESOLVER:
			r = sb_netname_resolver_literal(c->host, &a);
			break;
		default:
			r = sb_netname_strict_literal(c->host, &a);
		}
		if (!c->want)
			ok(!r, "%s '%s' is not a literal", names[c->which],
			   c->host);
		else
			ok(r && strcmp(text(&a, buf), c->want) == 0,
			   "%s '%s' is %s (got %s)", names[c->which], c->host,
			   c->want, r ? text(&a, buf) : "no literal");
	}
}

static enum sb_resolve_status fake_resolve(void *ctx, struct sb_arena *a,
					   const char *host,
					   struct sb_addr **addrs, size_t *n,
					   const char **why)
{
	(void)ctx;
	(void)host;
	(void)why;
	*addrs = sb_arena_alloc(a, sizeof(**addrs));
	memset(*addrs, 0, sizeof(**addrs));
	(*addrs)->family = AF_INET;
	memcpy((*addrs)->bytes, "\x0a\x00\x00\x07", 4);
	*n = 1;
	return SB_RESOLVE_OK;
}

struct pin_case {
	const char *host;
	const char *want; /* the pin's first address, or NULL: no pin */
};

static const struct pin_case pins[] = {
	{ "localhost", "127.0.0.1" },
	{ "LocalHost.", "127.0.0.1" },
	{ "ip6-localhost", "::1" },
	{ "ip6-loopback", "::1" },
	{ "localhost..", NULL },
	{ "localhost.localdomain", NULL },
	{ "example.com", "10.0.0.7" },
	{ "EXAMPLE.com.", "10.0.0.7" },
	{ "www.example.com", NULL },
	{ "127.0.0.1", NULL },
};

static void test_pins(void)
{
	char dir[] = "/tmp/pysb-netnames-XXXXXX", buf[64];
	struct sb_policy *p;
	size_t i;

	if (!mkdtemp(dir)) {
		ok(false, "mkdtemp");
		return;
	}
	p = parse_rule_file(dir, "net=ALLOW|TCP|example.com|443|OUT\n",
			    fake_resolve);
	ok(p != NULL, "a policy pinning example.com");
	rmdir(dir);
	for (i = 0; p && i < SB_ARRAY_LEN(pins); i++) {
		const struct sb_pin *pin = sb_netname_pin(p, pins[i].host);

		if (!pins[i].want)
			ok(!pin, "'%s' stands for no pin", pins[i].host);
		else
			ok(pin && pin->n_addrs &&
				   strcmp(text(&pin->addrs[0], buf),
					  pins[i].want) == 0,
			   "'%s' stands for %s", pins[i].host, pins[i].want);
	}
	ok(sb_netname_pin(NULL, "localhost") != NULL &&
		   sb_netname_pin(NULL, "example.com") == NULL,
	   "without a policy only the loopback names are pinned");
	if (p)
		sb_policy_free(p);
}

int main(void)
{
	test_literals();
	test_pins();
	return tap_done();
}
