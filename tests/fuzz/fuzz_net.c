/* fuzz_net.c - libFuzzer target for the net= parser and its helpers.
 *
 * Each input, as a NUL-terminated string, is read as a CIDR, as a numeric
 * host, as a PORTS field and as the value of a net= line; the rules it
 * yields are then ordered and asked about a few addresses, and the raw
 * bytes are judged as a DNS query against them. The resolver fails every name
 * (definitely or, for an odd length, transiently) so no input reaches the
 * network, and the first byte's low bit sets SB_PARSE_NO_DNS so that path
 * is fuzzed too. Everything lives in a fresh arena freed at the end; a
 * crash, a sanitizer report or a leak is the only verdict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy_internal.h"
#include "policy_net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum sb_resolve_status fuzz_resolve(void *ctx, struct sb_arena *arena,
					   const char *host,
					   struct sb_addr **addrs,
					   size_t *n_addrs, const char **why)
{
	*addrs = NULL;
	*n_addrs = 0;
	if (strlen(host) % 2) {
		*why = "Temporary failure in name resolution";
		return SB_RESOLVE_TRANSIENT;
	}
	return SB_RESOLVE_NONAME;
}

static const char *const probes[] = {
	"10.1.2.3", "::ffff:10.1.2.3", "64:ff9b::a01:203", "::1",
	"2001:db8::1", "0.0.0.0", "::", "0.1.2.3", "2002:a01:203::1",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sb_policy p = { 0 };
	struct sb_parse_opts opts = { .resolve = fuzz_resolve };
	struct sb_port_range *ports;
	struct sb_line l = { .key = "net" };
	struct sb_addr a, c;
	char name[256];
	unsigned prefix;
	size_t n, i;
	char *s;

	if (size > 4096)
		return 0;
	p.arena = sb_arena_new();
	s = sb_arena_strndup(p.arena, (const char *)data, size);

	if (!sb_cidr_parse(s, &a, &prefix)) {
		sb_addr_canonical(&a, &c);
		sb_addr_format(p.arena, &c);
	}
	if (!sb_addr_parse_numeric(s, &a))
		sb_addr_format(p.arena, &a);
	sb_ports_parse(p.arena, s, &ports, &n);

	if (size && (data[0] & 1))
		opts.flags = SB_PARSE_NO_DNS;
	l.text = sb_arena_printf(p.arena, "net=%s", s);
	l.value = l.text + 4;
	l.ref = (struct sb_ref){ ".py-sandboxes", 1 };
	sb_parse_net(&p, &opts, &l);
	sb_net_finish(&p);
	for (i = 0; i < SB_ARRAY_LEN(probes); i++) {
		sb_addr_parse(probes[i], &a);
		sb_net_decide(&p, SB_NET_TCP, SB_NET_OUT, &a, 443);
		sb_net_decide(&p, SB_NET_UDP, SB_NET_IN, &a, 0);
	}
	for (i = 0; i < p.nets.n; i++)
		sb_addr_format(p.arena, &p.nets.v[i].addr);
	sb_dns_query_judge(&p, data, size, name, sizeof(name));
	if (size >= 16) {
		a.family = AF_INET6;
		memcpy(a.bytes, data, 16);
		sb_net_reverse_allowed(&p, &a);
	}

	sb_arena_free(p.arena);
	return 0;
}
