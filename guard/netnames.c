/* netnames.c - the host names and literals of the network guard, pure:
 * which pin a name stands for and which texts CPython's socket functions
 * read as addresses without a query (netnames.h). No Python, no lookup;
 * tests/unit/test_netnames.c checks it by tables.
 */
#include "netnames.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "util.h"

const struct sb_addr sb_loop4 = { AF_INET, { 127, 0, 0, 1 } };
const struct sb_addr sb_loop6 = { AF_INET6, { [15] = 1 } };

static const struct sb_pin loopback_pins[] = {
	{ "localhost", &sb_loop4, 1 },
	{ "ip6-localhost", &sb_loop6, 1 },
	{ "ip6-loopback", &sb_loop6, 1 },
};

const struct sb_pin *sb_netname_pin(const struct sb_policy *p,
				    const char *host)
{
	const struct sb_pin *pin = p ? sb_pin_lookup(p, host) : NULL;
	size_t i;

	if (pin)
		return pin;
	for (i = 0; i < SB_ARRAY_LEN(loopback_pins); i++)
		if (sb_host_eq(loopback_pins[i].host, host))
			return &loopback_pins[i];
	return NULL;
}

bool sb_netname_socket_literal(int family, const char *host,
			       struct sb_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (!host[0]) {
		out->family = family == AF_INET6 ? AF_INET6 : AF_INET;
		return true;
	}
	if (family == AF_INET && strcmp(host, "<broadcast>") == 0) {
		out->family = AF_INET;
		memset(out->bytes, 0xff, 4);
		return true;
	}
	return sb_addr_parse_numeric(host, out) == 0;
}

bool sb_netname_resolver_literal(const char *host, struct sb_addr *out)
{
	return sb_addr_parse_numeric(host, out) == 0;
}

bool sb_netname_strict_literal(const char *host, struct sb_addr *out)
{
	const char *c;

	for (c = host; *c; c++)
		if ((*c < '0' || *c > '9') && *c != '.')
			return false;
	return c != host && c[-1] != '.' &&
	       sb_netname_resolver_literal(host, out);
}
