/* netns_plan.c - the pure half of netns.h: which ports of the host's
 * loopback the namespace of an unshare or bwrap run reaches (pasta's -T
 * and -U specs), whether bwrap keeps the host's network, and the words
 * --pysandboxes-explain says about it. No syscall, no printing: the
 * launcher (netns.c) and the explain test link it.
 */
#include "netns.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy_net.h"

bool sb_netns_bwrap_shared(const struct sb_policy *p)
{
	bool share = false;
	size_t i;

	for (i = 0; i < p->provider_opts.n; i++) {
		const struct sb_provider_opt *o = &p->provider_opts.v[i];
		const char *v = o->value;

		if (o->provider != SB_PROVIDER_BWRAP)
			continue;
		if (strcmp(o->key, "share-net") == 0)
			share = sb_str_ieq(v, "yes") || sb_str_ieq(v, "true") ||
				sb_str_ieq(v, "1") || sb_str_ieq(v, "on");
		if (strcmp(o->key, "unshare-net") == 0)
			share = sb_str_ieq(v, "no") || sb_str_ieq(v, "false") ||
				sb_str_ieq(v, "0") || sb_str_ieq(v, "off");
	}
	return share;
}

static bool is_loopback(const struct sb_net_rule *r)
{
	static const uint8_t lo6[16] = { [15] = 1 };

	if (r->addr.family == AF_INET)
		return r->prefix >= 8 && r->addr.bytes[0] == 127;
	return r->prefix == 128 && memcmp(r->addr.bytes, lo6, 16) == 0;
}

struct ports {
	uint8_t out[65536 / 8], in[65536 / 8];
};

static void mark(uint8_t *bits, const struct sb_net_rule *r)
{
	size_t i;
	unsigned port;

	for (i = 0; i < r->n_ports; i++)
		for (port = r->ports[i].lo; port <= r->ports[i].hi; port++)
			bits[port / 8] |= (uint8_t)(1u << (port % 8));
}

static bool every_port(const struct sb_net_rule *r)
{
	return r->n_ports == 1 && r->ports[0].lo <= 1 &&
	       r->ports[0].hi == 65535;
}

static bool has(const uint8_t *bits, unsigned port)
{
	return bits[port / 8] & (1u << (port % 8));
}

/* The spec of the ports in 'out' and not in 'in'; NULL past the limit. */
static const char *spec(struct sb_arena *a, const struct ports *ps)
{
	struct sb_buf b = { 0 };
	unsigned port, lo, count = 0;
	const char *s;

	for (port = 1; port < 65536; port++) {
		if (!has(ps->out, port) || has(ps->in, port))
			continue;
		lo = port;
		while (port + 1 < 65536 && has(ps->out, port + 1) &&
		       !has(ps->in, port + 1))
			port++;
		count += port - lo + 1;
		if (b.len)
			sb_buf_puts(&b, ",");
		if (lo == port)
			sb_buf_printf(&b, "%u", lo);
		else
			sb_buf_printf(&b, "%u-%u", lo, port);
	}
	s = count > SB_NETNS_MAX_PORTS ? NULL
	    : count			  ? sb_arena_strdup(a, b.s)
					  : "none";
	sb_buf_free(&b);
	return s;
}

static int plan_kind(struct sb_arena *a, const struct sb_policy *p,
		     unsigned kind, const char **out, const char **err)
{
	struct ports *ps = calloc(1, sizeof(*ps));
	const struct sb_net_rule *last = NULL;
	size_t i;

	if (!ps) {
		*err = "out of memory";
		return -1;
	}
	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (!r->allow || !(r->kinds & kind))
			continue;
		/* a port an IN rule names is the program's own server's,
		 * bound inside; an IN rule for every port names none */
		if ((r->dirs & SB_NET_IN) && !every_port(r))
			mark(ps->in, r);
		if ((r->dirs & SB_NET_OUT) && !r->self && is_loopback(r)) {
			mark(ps->out, r);
			last = r;
		}
	}
	*out = spec(a, ps);
	free(ps);
	if (*out)
		return 0;
	*err = sb_arena_printf(
		a,
		"%s: '%s': the rules name more than %d %s ports of the "
		"host's loopback, and each is forwarded into the sandbox's "
		"network namespace; name the ports the program needs",
		sb_ref_format(a, last->ref), sb_sanitize(a, last->rule),
		SB_NETNS_MAX_PORTS, kind == SB_NET_TCP ? "TCP" : "UDP");
	return -1;
}

int sb_netns_plan(struct sb_arena *a, const struct sb_policy *p,
		  const char **tcp, const char **udp, const char **err)
{
	*err = NULL;
	if (plan_kind(a, p, SB_NET_TCP, tcp, err) < 0 ||
	    plan_kind(a, p, SB_NET_UDP, udp, err) < 0)
		return -1;
	return 0;
}

bool sb_netns_firejail_own(const struct sb_policy *p, bool root)
{
	size_t i;

	if (p->provider != SB_PROVIDER_FIREJAIL || !p->any_net_rule || !root)
		return false;
	for (i = 0; i < p->provider_opts.n; i++)
		if (p->provider_opts.v[i].provider == SB_PROVIDER_FIREJAIL &&
		    strcmp(p->provider_opts.v[i].key, "net") == 0)
			return false;
	return true;
}

const char *sb_netns_explain(struct sb_arena *a, const struct sb_policy *p,
			     const char *provider)
{
	const char *tcp, *udp, *err;

	if (sb_netns_plan(a, p, &tcp, &udp, &err) < 0)
		return sb_arena_printf(a, "#   Network: the run would stop: "
					  "%s.\n",
				       err);
	return sb_arena_printf(
		a,
		"#   Network: a namespace of its own (os-sandbox=%s with "
		"net= rules), its way out through pasta (package passt), a "
		"user-mode stack on the host that does not map the gateway "
		"to the host (--no-map-gw); the supervisor inside judges "
		"every connection by the rules.\n"
		"#   Host loopback reached from inside: TCP ports %s, UDP "
		"ports %s (the ports that ALLOW rules for OUT to 127.0.0.0/8 "
		"or ::1 name, less those an IN rule opens); 127.0.0.1 is "
		"otherwise the sandbox's own.\n",
		provider, tcp, udp);
}

