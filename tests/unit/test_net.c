/* test_net.c - net= parsing (every field form, every message), host names
 * through a fake resolver (pinning, failures), the DENY-first decision with
 * its IPv4-in-IPv6 forms, the address helpers, and sb_dns_resolve against
 * temporary hosts files and a fake getaddrinfo: no test asks real DNS
 * anything but a ".invalid" name.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy_internal.h"
#include "policy_net.h"
#include "tap.h"

/* tests/meson.build links test_net with the core library only; the
 * resolver lives outside it, so it is compiled in here. */
#include "dns.h"

static const struct sb_ref FILE_REF = { ".py-sandboxes", 3 };
static const struct sb_ref ARG_REF = { SB_REF_ARG, 0 };

/* ---- a fake resolver ---- */

struct fake {
	int calls;
	const char *last_host;
};

static enum sb_resolve_status fake_resolve(void *ctx, struct sb_arena *arena,
					   const char *host,
					   struct sb_addr **addrs, size_t *n,
					   const char **why)
{
	struct fake *f = ctx;
	struct sb_addr *a;

	f->calls++;
	f->last_host = host;
	if (sb_str_ieq(host, "ok.example") ||
	    sb_str_ieq(host, "ok.example.")) {
		a = sb_arena_alloc(arena, 3 * sizeof(*a));
		sb_addr_parse("192.0.2.10", &a[0]);
		sb_addr_parse("2001:db8::10", &a[1]);
		sb_addr_parse("192.0.2.10", &a[2]); /* a duplicate */
		*addrs = a;
		*n = 3;
		return SB_RESOLVE_OK;
	}
	if (!strcmp(host, "empty.example")) {
		*addrs = NULL;
		*n = 0;
		return SB_RESOLVE_OK;
	}
	if (!strcmp(host, "slow.example")) {
		*why = "Temporary failure in name resolution";
		return SB_RESOLVE_TRANSIENT;
	}
	if (!strcmp(host, "weird.example"))
		return (enum sb_resolve_status)42;
	return SB_RESOLVE_NONAME;
}

struct t {
	struct sb_policy p;
	struct sb_parse_opts o;
	struct fake f;
};

static void t_init(struct t *t)
{
	memset(t, 0, sizeof(*t));
	t->p.arena = sb_arena_new();
	t->o.resolve = fake_resolve;
	t->o.resolve_ctx = &t->f;
}

static void t_free(struct t *t)
{
	sb_arena_free(t->p.arena);
}

static void parse_at(struct t *t, const char *text, struct sb_ref ref)
{
	struct sb_line l = { .text = text, .key = "net", .ref = ref };

	l.value = strchr(text, '=') + 1;
	sb_parse_net(&t->p, &t->o, &l);
}

static void parse(struct t *t, const char *text)
{
	parse_at(t, text, FILE_REF);
}

static const char *err(const struct t *t, size_t i)
{
	return i < t->p.errors.n ? t->p.errors.v[i].text : NULL;
}

static const char *warn(const struct t *t, size_t i)
{
	return i < t->p.warnings.n ? t->p.warnings.v[i].text : NULL;
}

static const char *rule_net(struct t *t, size_t i)
{
	const struct sb_net_rule *r;

	if (i >= t->p.nets.n)
		return NULL;
	r = &t->p.nets.v[i];
	return sb_arena_printf(t->p.arena, "%s/%u",
			       sb_addr_format(t->p.arena, &r->addr),
			       r->prefix);
}

static const char *rule_ports(struct t *t, size_t i)
{
	struct sb_buf b = { 0 };
	const struct sb_net_rule *r;
	const char *s;
	size_t k;

	if (i >= t->p.nets.n)
		return NULL;
	r = &t->p.nets.v[i];
	sb_buf_puts(&b, "");
	for (k = 0; k < r->n_ports; k++)
		sb_buf_printf(&b, "%s%u-%u", k ? "," : "", r->ports[k].lo,
			      r->ports[k].hi);
	s = sb_arena_strdup(t->p.arena, b.s ? b.s : "");
	sb_buf_free(&b);
	return s;
}

/* Parse one line alone; expect no diagnostics and n rules. */
static struct t *one(struct t *t, const char *text, size_t n_rules)
{
	t_init(t);
	parse(t, text);
	if (t->p.errors.n || t->p.warnings.n)
		diag("unexpected: %s", t->p.errors.n ? err(t, 0) : warn(t, 0));
	is_int(t->p.errors.n + t->p.warnings.n, 0, "%s: no diagnostics", text);
	is_int(t->p.nets.n, n_rules, "%s: %zu rule(s)", text, n_rules);
	return t;
}

/* ---- valid forms ---- */

static void test_action(void)
{
	struct t t;

	one(&t, "net=ALLOW|TCP|1.1.1.1|53|OUT", 1);
	ok(t.p.nets.n && t.p.nets.v[0].allow, "ALLOW allows");
	ok(t.p.any_net_rule, "any_net_rule set");
	is_str(t.p.nets.n ? t.p.nets.v[0].rule : NULL,
	       "net=ALLOW|TCP|1.1.1.1|53|OUT", "rule text kept");
	is_str(t.p.nets.n ? t.p.nets.v[0].ref.file : NULL, ".py-sandboxes",
	       "ref file kept");
	is_int(t.p.nets.n ? t.p.nets.v[0].ref.line : 0, 3, "ref line kept");
	ok(t.p.nets.n && !t.p.nets.v[0].host, "no host for an address");
	t_free(&t);

	one(&t, "net=DENY|TCP|1.1.1.1|53|OUT", 1);
	ok(t.p.nets.n && !t.p.nets.v[0].allow, "DENY denies");
	t_free(&t);
}

static void test_kinds(void)
{
	static const struct {
		const char *field;
		unsigned kinds;
	} cases[] = {
		{ "TCP", SB_NET_TCP },
		{ "udp", SB_NET_UDP },
		{ "Tcp", SB_NET_TCP },
		{ "tcp,UDP", SB_NET_TCP | SB_NET_UDP },
		{ " TCP , udp ", SB_NET_TCP | SB_NET_UDP },
		{ "TCP,,TCP", SB_NET_TCP },
		{ "*", SB_NET_TCP | SB_NET_UDP },
		{ "any", SB_NET_TCP | SB_NET_UDP },
		{ " ANY ", SB_NET_TCP | SB_NET_UDP },
	};
	size_t i;
	struct t t;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		char text[128];

		snprintf(text, sizeof(text), "net=ALLOW|%s|1.1.1.1|53|OUT", cases[i].field);
		one(&t, text, 1);
		is_int(t.p.nets.n ? t.p.nets.v[0].kinds : 0, cases[i].kinds,
		       "kinds '%s'", cases[i].field);
		t_free(&t);
	}
}

static void test_network(void)
{
	struct t t;

	one(&t, "net=ALLOW|TCP|1.1.1.1|53|OUT", 1);
	is_str(rule_net(&t, 0), "1.1.1.1/32", "IPv4 address is a /32");
	t_free(&t);

	one(&t, "net=ALLOW|TCP|2001:db8::1|53|OUT", 1);
	is_str(rule_net(&t, 0), "2001:db8::1/128", "IPv6 address is a /128");
	t_free(&t);

	one(&t, "net=DENY|*|10.0.0.0/8|*|OUT", 1);
	is_str(rule_net(&t, 0), "10.0.0.0/8", "IPv4 CIDR");
	t_free(&t);

	one(&t, "net=DENY|*|10.1.2.3/8|*|OUT", 1);
	is_str(rule_net(&t, 0), "10.0.0.0/8", "host bits allowed, cleared");
	t_free(&t);

	one(&t, "net=DENY|*|fc00::/7|*|OUT", 1);
	is_str(rule_net(&t, 0), "fc00::/7", "IPv6 CIDR");
	t_free(&t);

	one(&t, "net=DENY|*|fd12:3456::1/7|*|OUT", 1);
	is_str(rule_net(&t, 0), "fc00::/7", "IPv6 host bits cleared");
	t_free(&t);

	one(&t, "net=DENY|*|10.0.0.0/255.0.0.0|*|OUT", 1);
	is_str(rule_net(&t, 0), "10.0.0.0/8", "IPv4 netmask form");
	t_free(&t);

	one(&t, "net=ALLOW|TCP|0.0.0.0/32|8000|IN", 1);
	is_str(rule_net(&t, 0), "0.0.0.0/32", "wildcard bind address");
	t_free(&t);

	one(&t, "net=ALLOW|TCP| 10.0.0.1 |53|OUT", 1);
	is_str(rule_net(&t, 0), "10.0.0.1/32", "spaces around the network");
	t_free(&t);

	one(&t, "net=ALLOW|*|*|*|*", 2);
	is_str(rule_net(&t, 0), "0.0.0.0/0", "'*' gives 0.0.0.0/0");
	is_str(rule_net(&t, 1), "::/0", "... and ::/0");
	ok(t.p.nets.n == 2 && t.p.nets.v[1].allow &&
		   t.p.nets.v[1].kinds == (SB_NET_TCP | SB_NET_UDP) &&
		   t.p.nets.v[1].dirs == (SB_NET_IN | SB_NET_OUT) &&
		   t.p.nets.v[1].n_ports == 1,
	   "both rules carry the fields");
	t_free(&t);
}

static void test_ports(void)
{
	static const struct {
		const char *field, *want;
	} cases[] = {
		{ "", "" },
		{ "  ", "" },
		{ ",", "" },
		{ "*", "0-65535" },
		{ " * ", "0-65535" },
		{ "443", "443-443" },
		{ "0", "0-0" },
		{ "65535", "65535-65535" },
		{ "080", "80-80" },
		{ "80,443", "80-80,443-443" },
		{ " 80 , 443 ", "80-80,443-443" },
		{ "8000-8010", "8000-8010" },
		{ "8000 - 8010", "8000-8010" },
		{ "8000-", "8000-65535" },
		{ "0-65535", "0-65535" },
		{ "90-90", "90-90" },
		{ "443,81,80", "80-81,443-443" },
		{ "1-10,5-20,22", "1-20,22-22" },
	};
	size_t i;
	struct t t;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		char text[128];

		snprintf(text, sizeof(text), "net=ALLOW|TCP|1.1.1.1|%s|OUT", cases[i].field);
		one(&t, text, 1);
		is_str(rule_ports(&t, 0), cases[i].want, "ports '%s'",
		       cases[i].field);
		t_free(&t);
	}
}

static void test_dirs(void)
{
	static const struct {
		const char *field;
		unsigned dirs;
	} cases[] = {
		{ "IN", SB_NET_IN },
		{ "OUT", SB_NET_OUT },
		{ "IN,OUT", SB_NET_IN | SB_NET_OUT },
		{ "OUT,IN", SB_NET_IN | SB_NET_OUT },
		{ " IN , OUT ", SB_NET_IN | SB_NET_OUT },
		{ "*", SB_NET_IN | SB_NET_OUT },
	};
	size_t i;
	struct t t;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		char text[128];

		snprintf(text, sizeof(text), "net=ALLOW|TCP|1.1.1.1|53|%s", cases[i].field);
		one(&t, text, 1);
		is_int(t.p.nets.n ? t.p.nets.v[0].dirs : 0, cases[i].dirs,
		       "directions '%s'", cases[i].field);
		t_free(&t);
	}
}

/* ---- errors ---- */

/* Parse one line; expect exactly one error with this text and no rule. */
static void bad(const char *text, struct sb_ref ref, const char *want)
{
	struct t t;

	t_init(&t);
	parse_at(&t, text, ref);
	is_str(err(&t, 0), want, "error for %s", text);
	is_int(t.p.errors.n, 1, "one error for %s", text);
	is_int(t.p.nets.n, 0, "no rule for %s", text);
	ok(t.p.any_net_rule, "any_net_rule set even for %s", text);
	t_free(&t);
}

#define FMT_TAIL                                                               \
	" Format: <DENY,ALLOW>|<TCP,UDP list or *>|<ip/mask>, *|<port "        \
	"list>|<IN, OUT>."

/* port 'self': the ports the sandbox listens on, TCP going out only */
static void test_self_port(void)
{
	struct sb_addr lo, other, any;
	struct t t;

	one(&t, "net=ALLOW|TCP|127.0.0.1/32| self |OUT", 1);
	ok(t.p.nets.n == 1 && t.p.nets.v[0].self && !t.p.nets.v[0].n_ports,
	   "self: a rule with no numbered port");
	sb_addr_parse("127.0.0.1", &lo);
	sb_addr_parse("10.0.0.1", &other);
	ok(sb_net_decide(&t.p, SB_NET_TCP, SB_NET_OUT, &lo, 8000) == NULL,
	   "self: sb_net_decide never matches it (no port number does)");
	ok(sb_net_self_rule(&t.p, SB_NET_TCP, SB_NET_OUT, &lo) ==
		   &t.p.nets.v[0],
	   "self: sb_net_self_rule finds it for its address");
	ok(sb_net_self_rule(&t.p, SB_NET_TCP, SB_NET_OUT, &other) == NULL,
	   "self: not for another address");
	ok(sb_net_self_rule(&t.p, SB_NET_UDP, SB_NET_OUT, &lo) == NULL,
	   "self: a TCP rule is not for UDP");
	/* judged where the kernel connects, as sb_net_decide does */
	sb_addr_parse("0.0.0.0", &any);
	ok(sb_net_self_rule(&t.p, SB_NET_TCP, SB_NET_OUT, &any) ==
		   &t.p.nets.v[0],
	   "self: 0.0.0.0 going out is 127.0.0.1");
	sb_addr_parse("0.1.2.3", &any);
	ok(sb_net_self_rule(&t.p, SB_NET_TCP, SB_NET_OUT, &any) == NULL,
	   "self: 0.1.2.3 is itself too, which the rule does not name");
	t_free(&t);
	bad("net=ALLOW|TCP|127.0.0.1|self|IN", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|TCP|127.0.0.1|self|IN', port "
	    "'self' (the ports this sandbox listens on) is for "
	    "ALLOW|...|OUT rules.");
	one(&t, "net=ALLOW|UDP|127.0.0.1|self|OUT", 1);
	sb_addr_parse("127.0.0.1", &lo);
	ok(sb_net_self_rule(&t.p, SB_NET_UDP, SB_NET_OUT, &lo) ==
		   &t.p.nets.v[0] &&
		   sb_net_self_rule(&t.p, SB_NET_TCP, SB_NET_OUT, &lo) == NULL,
	   "self: a UDP rule, for UDP only (a datagram to the sandbox's own "
	   "bound socket)");
	t_free(&t);
	bad("net=DENY|TCP|127.0.0.1|self|OUT", FILE_REF,
	    ".py-sandboxes(3): In 'net=DENY|TCP|127.0.0.1|self|OUT', port "
	    "'self' (the ports this sandbox listens on) is for "
	    "ALLOW|...|OUT rules.");
}

static void test_errors(void)
{
	struct t t;

	bad("net=ALLOW|TCP|1.2.3.4|443", FILE_REF,
	    ".py-sandboxes(3): 'net=ALLOW|TCP|1.2.3.4|443' has incorrect "
	    "number of parts separated by '|'. Expected 5, got 4." FMT_TAIL);
	bad("net=", ARG_REF,
	    "<arg>: 'net=' has incorrect number of parts separated by '|'. "
	    "Expected 5, got 1." FMT_TAIL);
	bad("net=ALLOW|TCP|1.2.3.4|443|OUT|x", ARG_REF,
	    "<arg>: 'net=ALLOW|TCP|1.2.3.4|443|OUT|x' has incorrect number of "
	    "parts separated by '|'. Expected 5, got 6." FMT_TAIL);
	bad("net=allow|TCP|1.2.3.4|443|OUT", FILE_REF,
	    ".py-sandboxes(3): 'net=allow|TCP|1.2.3.4|443|OUT' use an invalid "
	    "action. Must be 'ALLOW' or 'DENY'.");
	bad("net=|TCP|1.2.3.4|443|OUT", ARG_REF,
	    "<arg>: 'net=|TCP|1.2.3.4|443|OUT' use an invalid action. Must be "
	    "'ALLOW' or 'DENY'.");
	bad("net=ALLOW||1.2.3.4|443|OUT", FILE_REF,
	    ".py-sandboxes(3): 'net=ALLOW||1.2.3.4|443|OUT' has empty socket "
	    "specs.");
	bad("net=ALLOW| , |1.2.3.4|443|OUT", FILE_REF,
	    ".py-sandboxes(3): 'net=ALLOW| , |1.2.3.4|443|OUT' has empty "
	    "socket specs.");
	bad("net=ALLOW|*,TCP|1.2.3.4|443|OUT", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|*,TCP|1.2.3.4|443|OUT', '*' must "
	    "be used alone, not combined with other specifiers.");
	bad("net=ALLOW|udp, any|1.2.3.4|443|OUT", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|udp, any|1.2.3.4|443|OUT', 'ANY' "
	    "must be used alone, not combined with other specifiers.");
	bad("net=ALLOW|tcp,sctp|1.2.3.4|443|OUT", FILE_REF,
	    ".py-sandboxes(3): 'net=ALLOW|tcp,sctp|1.2.3.4|443|OUT' has "
	    "unknown socket specifier 'SCTP'. Valid specifiers: any, TCP, "
	    "UDP.");
	bad("net=ALLOW|TCP|  |443|OUT", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|TCP|  |443|OUT', network part "
	    "must be set.");
	bad("net=ALLOW|TCP||443|OUT", ARG_REF,
	    "<arg>: In 'net=ALLOW|TCP||443|OUT', network part must be set.");
	bad("net=ALLOW|TCP|1.2.3.4|443|out", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|TCP|1.2.3.4|443|out', direction "
	    "is not 'IN' or 'OUT'.");
	bad("net=ALLOW|TCP|1.2.3.4|443|", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|TCP|1.2.3.4|443|', direction is "
	    "not 'IN' or 'OUT'.");
	bad("net=ALLOW|TCP|1.2.3.4|443|IN,", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|TCP|1.2.3.4|443|IN,', direction "
	    "is not 'IN' or 'OUT'.");
	bad("net=ALLOW|TCP|1.2.3.4|443|IN OUT", FILE_REF,
	    ".py-sandboxes(3): In 'net=ALLOW|TCP|1.2.3.4|443|IN OUT', "
	    "direction is not 'IN' or 'OUT'.");

	{
		static const char *const ports[] = {
			"abc",	 "-80",	    "90-80",   "65536",	 "*,80",
			"80-90-100", "1-65536", "+80",	   "8 0",	 "99999999999999999999",
			"-",	 "80-x",
		};
		size_t i;

		for (i = 0; i < SB_ARRAY_LEN(ports); i++) {
			char *text, *want;

			t_init(&t);
			text = sb_arena_printf(t.p.arena,
					       "net=ALLOW|TCP|1.2.3.4|%s|OUT",
					       ports[i]);
			want = sb_arena_printf(t.p.arena,
					       "<arg>: In '%s', invalid port "
					       "list.",
					       text);
			bad(text, ARG_REF, want);
			t_free(&t);
		}
	}

	/* All the problems of one line, in the reference parser's order. */
	t_init(&t);
	parse(&t, "net=allow| |  |x|up");
	is_int(t.p.errors.n, 5, "five errors on one line");
	is_str(err(&t, 0),
	       ".py-sandboxes(3): 'net=allow| |  |x|up' use an invalid action. "
	       "Must be 'ALLOW' or 'DENY'.",
	       "1st: action");
	is_str(err(&t, 1),
	       ".py-sandboxes(3): 'net=allow| |  |x|up' has empty socket specs.",
	       "2nd: kinds");
	is_str(err(&t, 2),
	       ".py-sandboxes(3): In 'net=allow| |  |x|up', network part must "
	       "be set.",
	       "3rd: network");
	is_str(err(&t, 3),
	       ".py-sandboxes(3): In 'net=allow| |  |x|up', direction is not "
	       "'IN' or 'OUT'.",
	       "4th: directions");
	is_str(err(&t, 4),
	       ".py-sandboxes(3): In 'net=allow| |  |x|up', invalid port list.",
	       "5th: ports");
	is_int(t.f.calls, 0, "no resolution for a bad line");
	t_free(&t);

	/* Each offending kind is reported. */
	t_init(&t);
	parse(&t, "net=ALLOW|any,foo|1.2.3.4|1|IN");
	is_int(t.p.errors.n, 2, "'any,foo': two errors");
	is_str(err(&t, 1),
	       ".py-sandboxes(3): 'net=ALLOW|any,foo|1.2.3.4|1|IN' has unknown "
	       "socket specifier 'FOO'. Valid specifiers: any, TCP, UDP.",
	       "'any,foo': unknown FOO");
	t_free(&t);

	/* A bad line does not stop the next one. */
	t_init(&t);
	parse(&t, "net=ALLOW|TCP|1.2.3.4|x|IN");
	parse(&t, "net=ALLOW|TCP|1.2.3.5|1|IN");
	is_int(t.p.nets.n, 1, "next line still parsed");
	t_free(&t);
}

/* ---- host names ---- */

static void test_hosts(void)
{
	const struct sb_pin *pin;
	struct t t;

	one(&t, "net=ALLOW|TCP|ok.example|443|OUT", 2);
	is_int(t.f.calls, 1, "resolved once");
	is_str(t.f.last_host, "ok.example", "resolver got the name");
	is_str(rule_net(&t, 0), "192.0.2.10/32", "IPv4 result is a /32");
	is_str(rule_net(&t, 1), "2001:db8::10/128", "IPv6 result is a /128");
	is_str(t.p.nets.n > 1 ? t.p.nets.v[1].host : NULL, "ok.example",
	       "rule keeps the host name");
	is_int(t.p.pins.n, 1, "one pin");
	pin = sb_pin_lookup(&t.p, "ok.example");
	ok(pin && pin->n_addrs == 2, "pin has the two distinct addresses");
	ok(sb_pin_lookup(&t.p, "OK.Example.") == pin,
	   "pin lookup ignores case and a trailing dot");
	ok(!sb_pin_lookup(&t.p, "ok.example.org"), "no pin for another name");
	ok(!sb_pin_lookup(&t.p, "ok.exampl"), "no pin for a prefix");
	ok(sb_host_eq("Foo.Test.", "foo.test") &&
		   sb_host_eq("foo.test", "FOO.TEST."),
	   "host names: case and one trailing dot ignored, either side");
	ok(!sb_host_eq("foo.test..", "foo.test") &&
		   !sb_host_eq("foo.tes", "foo.test") &&
		   !sb_host_eq("foo.test", "foo.tesx"),
	   "host names: two dots, a prefix, another letter differ");
	is_str(pin ? pin->host : NULL, "ok.example", "pin host normalised");

	/* the same host again, in another spelling: one pin, no new query */
	parse(&t, "net=DENY|UDP|OK.Example.|53|OUT");
	is_int(t.f.calls, 1, "second rule reuses the pin");
	is_int(t.p.pins.n, 1, "still one pin");
	is_int(t.p.nets.n, 4, "two more rules");
	ok(t.p.nets.n == 4 && !t.p.nets.v[3].allow &&
		   t.p.nets.v[3].kinds == SB_NET_UDP,
	   "reused pin gives rules of the second line");
	is_str(t.p.nets.n == 4 ? t.p.nets.v[2].host : NULL, "OK.Example.",
	       "second rule keeps its own spelling");
	t_free(&t);

	/* NONAME */
	t_init(&t);
	parse(&t, "net=ALLOW|TCP|nowhere.example|443|OUT");
	is_str(warn(&t, 0),
	       ".py-sandboxes(3): In 'net=ALLOW|TCP|nowhere.example|443|OUT', "
	       "invalid network specification. That does not resolve to any "
	       "network. Rule ignored: it allows nothing.",
	       "ALLOW + NONAME: warning");
	is_int(t.p.errors.n, 0, "ALLOW + NONAME: no error");
	is_int(t.p.nets.n, 0, "ALLOW + NONAME: no rule");
	is_int(t.p.pins.n, 0, "ALLOW + NONAME: no pin");
	parse_at(&t, "net=DENY|TCP|nowhere.example|443|OUT", ARG_REF);
	is_str(err(&t, 0),
	       "<arg>: In 'net=DENY|TCP|nowhere.example|443|OUT', invalid "
	       "network specification. That does not resolve to any network.",
	       "DENY + NONAME: error");
	is_int(t.p.warnings.n, 1, "DENY + NONAME: no new warning");
	is_int(t.f.calls, 2, "a failed name is asked again");
	t_free(&t);

	/* TRANSIENT */
	t_init(&t);
	parse(&t, "net=ALLOW|TCP|slow.example|443|OUT");
	is_str(warn(&t, 0),
	       ".py-sandboxes(3): In 'net=ALLOW|TCP|slow.example|443|OUT', the "
	       "name resolution failed temporarily (Temporary failure in name "
	       "resolution). Check the resolver, not the rule. Rule ignored: "
	       "it allows nothing.",
	       "ALLOW + TRANSIENT: warning");
	parse(&t, "net=DENY|TCP|slow.example|443|OUT");
	is_str(err(&t, 0),
	       ".py-sandboxes(3): In 'net=DENY|TCP|slow.example|443|OUT', the "
	       "name resolution failed temporarily (Temporary failure in name "
	       "resolution). Check the resolver, not the rule.",
	       "DENY + TRANSIENT: error");
	is_int(t.p.nets.n, 0, "TRANSIENT: no rule");
	t_free(&t);

	/* OK without addresses, an unknown status, no resolver */
	t_init(&t);
	parse(&t, "net=DENY|TCP|empty.example|443|OUT");
	is_str(err(&t, 0),
	       ".py-sandboxes(3): In 'net=DENY|TCP|empty.example|443|OUT', "
	       "invalid network specification. That does not resolve to any "
	       "network.",
	       "OK with no address is a failure");
	parse(&t, "net=DENY|TCP|weird.example|443|OUT");
	is_str(err(&t, 1),
	       ".py-sandboxes(3): In 'net=DENY|TCP|weird.example|443|OUT', "
	       "invalid network specification. That does not resolve to any "
	       "network.",
	       "unknown status is a failure");
	is_int(t.p.pins.n, 0, "no pin for failures");
	t.o.resolve = NULL;
	parse(&t, "net=ALLOW|TCP|ok.example|443|OUT");
	is_str(warn(&t, 0),
	       ".py-sandboxes(3): In 'net=ALLOW|TCP|ok.example|443|OUT', "
	       "invalid network specification. That does not resolve to any "
	       "network. Rule ignored: it allows nothing.",
	       "no resolver: NONAME");
	t_free(&t);

	/* Not names: never reach the resolver. */
	{
		static const char *const notnames[] = {
			"*.example.com", "*",	      "10.1",
			"0x7f000001",	 "017.0.0.1", "10.0.0.0/33",
			"::1/129",	 "fe80::1%lo", "a b",
			"[::1]",	 "1.2.3.4/",
		};
		size_t i;

		for (i = 0; i < SB_ARRAY_LEN(notnames); i++) {
			char *text, *want;

			t_init(&t);
			text = sb_arena_printf(t.p.arena,
					       "net=DENY|TCP|%s|443|OUT",
					       notnames[i]);
			want = sb_arena_printf(
				t.p.arena,
				".py-sandboxes(3): In '%s', invalid network "
				"specification. That does not resolve to any "
				"network.",
				text);
			parse(&t, text);
			if (!strcmp(notnames[i], "*")) {
				/* the field wildcard, not a name */
				is_int(t.p.nets.n, 2, "'*' is the wildcard");
			} else {
				is_str(err(&t, 0), want, "not a name: '%s'",
				       notnames[i]);
			}
			is_int(t.f.calls, 0, "'%s' not resolved",
			       notnames[i]);
			t_free(&t);
		}
	}

	/* SB_PARSE_NO_DNS */
	t_init(&t);
	t.o.flags = SB_PARSE_NO_DNS;
	parse(&t, "net=ALLOW|TCP|ok.example|443|OUT");
	is_str(err(&t, 0),
	       ".py-sandboxes(3): In 'net=ALLOW|TCP|ok.example|443|OUT', host "
	       "names are not resolved here: use an address.",
	       "NO_DNS: error");
	is_int(t.f.calls, 0, "NO_DNS: resolver not called");
	is_int(t.p.nets.n, 0, "NO_DNS: no rule");
	parse(&t, "net=ALLOW|TCP|10.0.0.1|443|OUT");
	is_int(t.p.nets.n, 1, "NO_DNS: addresses still fine");
	t_free(&t);
}

/* ---- ordering ---- */

static void test_finish(void)
{
	static const char *const lines[] = {
		"net=ALLOW|TCP|1.0.0.1|1|IN", "net=DENY|TCP|2.0.0.1|1|IN",
		"net=ALLOW|TCP|1.0.0.2|1|IN", "net=DENY|TCP|2.0.0.2|1|IN",
		"net=ALLOW|TCP|1.0.0.3|1|IN",
	};
	static const char *const want[] = {
		"2.0.0.1/32", "2.0.0.2/32", "1.0.0.1/32",
		"1.0.0.2/32", "1.0.0.3/32",
	};
	struct t t;
	size_t i;

	t_init(&t);
	sb_net_finish(&t.p);
	is_int(t.p.nets.n, 0, "finish on no rule");
	for (i = 0; i < SB_ARRAY_LEN(lines); i++)
		parse(&t, lines[i]);
	sb_net_finish(&t.p);
	for (i = 0; i < SB_ARRAY_LEN(want); i++)
		is_str(rule_net(&t, i), want[i], "finish: position %zu", i);
	t_free(&t);
}

/* ---- decision ---- */

static struct sb_addr A(const char *s)
{
	struct sb_addr a = { 0 };

	if (sb_addr_parse(s, &a))
		diag("bad test address %s", s);
	return a;
}

/* "allow:<rule>", "deny:<rule>" or "default" */
static const char *decide(struct t *t, unsigned kind, unsigned dir,
			  const char *addr, unsigned port)
{
	struct sb_addr a = A(addr);
	const struct sb_net_rule *r =
		sb_net_decide(&t->p, kind, dir, &a, (uint16_t)port);

	if (!r)
		return "default";
	return sb_arena_printf(t->p.arena, "%s:%s", r->allow ? "allow" : "deny",
			       r->rule);
}

static void test_decide(void)
{
	const char *allow_all = "net=ALLOW|*|*|*|*";
	const char *deny10 = "net=DENY|*|10.0.0.0/8|*|OUT";
	struct t t;

	t_init(&t);
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.2.3.4", 80), "default",
	       "no rule: implicit default");
	parse(&t, allow_all);
	parse(&t, deny10);
	/* no sb_net_finish(): DENY must win anyway */
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "10.1.2.3", 80),
	       sb_arena_printf(t.p.arena, "deny:%s", deny10),
	       "DENY first whatever the order");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "11.0.0.1", 80),
	       sb_arena_printf(t.p.arena, "allow:%s", allow_all),
	       "outside the DENY: ALLOW");
	is_str(decide(&t, SB_NET_TCP, SB_NET_IN, "10.1.2.3", 80),
	       sb_arena_printf(t.p.arena, "allow:%s", allow_all),
	       "DENY is OUT only");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "10.255.255.255", 0),
	       sb_arena_printf(t.p.arena, "deny:%s", deny10),
	       "last address of /8, port 0");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "9.255.255.255", 65535),
	       sb_arena_printf(t.p.arena, "allow:%s", allow_all),
	       "just below /8, port 65535");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "::ffff:10.1.2.3", 443),
	       sb_arena_printf(t.p.arena, "deny:%s", deny10),
	       "IPv4-mapped is judged by the IPv4 DENY");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "::10.1.2.3", 443),
	       sb_arena_printf(t.p.arena, "deny:%s", deny10),
	       "IPv4-compatible is judged by the IPv4 DENY");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "64:ff9b::10.1.2.3", 443),
	       sb_arena_printf(t.p.arena, "deny:%s", deny10),
	       "NAT64 is judged by the IPv4 DENY");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "2001:db8::10.1.2.3", 443),
	       sb_arena_printf(t.p.arena, "allow:%s", allow_all),
	       "an ordinary IPv6 address is not");
	t_free(&t);

	/* /0 per family, /32, /128, partial bytes */
	t_init(&t);
	parse(&t, "net=ALLOW|TCP|0.0.0.0/0|1|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "255.255.255.255", 1),
	       "allow:net=ALLOW|TCP|0.0.0.0/0|1|OUT", "/0 takes any IPv4");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::2", 1), "default",
	       "/0 IPv4 does not take IPv6");
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|::/0|1|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::1", 1),
	       "allow:net=ALLOW|TCP|::/0|1|OUT", "::/0 takes any IPv6");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.2.3.4", 1), "default",
	       "::/0 does not take IPv4");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::ffff:1.2.3.4", 1),
	       "default", "ALLOW ::/0 does not open IPv4-mapped");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "64:ff9b::1.2.3.4", 1),
	       "default", "ALLOW ::/0 does not open NAT64");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::1", 1),
	       "allow:net=ALLOW|TCP|::/0|1|OUT", "::1 stays IPv6");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::", 1),
	       "allow:net=ALLOW|TCP|::/0|1|OUT", ":: stays IPv6");
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|1.2.3.4|1|OUT");
	parse(&t, "net=DENY|TCP|::/0|1|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.2.3.4", 1),
	       "allow:net=ALLOW|TCP|1.2.3.4|1|OUT", "/32 matches itself");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.2.3.5", 1), "default",
	       "/32 only itself");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::ffff:1.2.3.4", 1),
	       "deny:net=DENY|TCP|::/0|1|OUT",
	       "DENY ::/0 still refuses the IPv6 form of an allowed IPv4");
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|1.2.3.4|1|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::ffff:1.2.3.4", 1),
	       "allow:net=ALLOW|TCP|1.2.3.4|1|OUT",
	       "ALLOW IPv4 takes the mapped form");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "64:ff9b::102:304", 1),
	       "allow:net=ALLOW|TCP|1.2.3.4|1|OUT",
	       "ALLOW IPv4 takes the NAT64 form");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::1.2.3.4", 1),
	       "allow:net=ALLOW|TCP|1.2.3.4|1|OUT",
	       "ALLOW IPv4 takes the compatible form");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::ffff:1.2.3.5", 1),
	       "default", "mapped neighbour is not allowed");
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|::ffff:1.2.3.0/120|1|OUT");
	parse(&t, "net=DENY|TCP|64:ff9b::5.0.0.0/104|1|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.2.3.200", 1),
	       "allow:net=ALLOW|TCP|::ffff:1.2.3.0/120|1|OUT",
	       "a mapped-form rule covers the IPv4 addresses");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "::ffff:1.2.3.7", 1),
	       "allow:net=ALLOW|TCP|::ffff:1.2.3.0/120|1|OUT",
	       "... and their mapped form");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.2.4.0", 1), "default",
	       "... not beyond its prefix");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "5.6.7.8", 1),
	       "deny:net=DENY|TCP|64:ff9b::5.0.0.0/104|1|OUT",
	       "a NAT64-form DENY covers the IPv4 addresses");
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|10.0.0.0/9|1|OUT");
	parse(&t, "net=ALLOW|TCP|2001:db8::/127|1|OUT");
	parse(&t, "net=ALLOW|TCP|2001:db8::1:0/128|1|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "10.127.255.255", 1),
	       "allow:net=ALLOW|TCP|10.0.0.0/9|1|OUT", "/9 upper edge");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "10.128.0.0", 1), "default",
	       "/9 just outside");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::1", 1),
	       "allow:net=ALLOW|TCP|2001:db8::/127|1|OUT", "/127 edge");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::2", 1), "default",
	       "/127 just outside");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::1:0", 1),
	       "allow:net=ALLOW|TCP|2001:db8::1:0/128|1|OUT", "/128 itself");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::1:1", 1),
	       "default", "/128 only itself");
	t_free(&t);

	/* ports, kinds, directions, empty PORTS */
	t_init(&t);
	parse(&t, "net=ALLOW|TCP|1.1.1.1|8000-8010,9000-|OUT");
	parse(&t, "net=ALLOW|UDP|2.2.2.2|53|IN");
	parse(&t, "net=ALLOW|*|3.3.3.3||*");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.1.1.1", 7999), "default",
	       "port below range");
	ok(strcmp(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.1.1.1", 8000),
		  "default"),
	   "range start");
	ok(strcmp(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.1.1.1", 8010),
		  "default"),
	   "range end");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.1.1.1", 8011), "default",
	       "port above range");
	ok(strcmp(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.1.1.1", 65535),
		  "default"),
	   "open range to 65535");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "1.1.1.1", 8999), "default",
	       "below the open range");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "1.1.1.1", 8000), "default",
	       "TCP rule does not take UDP");
	is_str(decide(&t, SB_NET_TCP, SB_NET_IN, "1.1.1.1", 8000), "default",
	       "OUT rule does not take IN");
	is_str(decide(&t, SB_NET_UDP, SB_NET_IN, "2.2.2.2", 53),
	       "allow:net=ALLOW|UDP|2.2.2.2|53|IN", "UDP IN");
	is_str(decide(&t, SB_NET_TCP, SB_NET_IN, "2.2.2.2", 53), "default",
	       "UDP rule does not take TCP");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "2.2.2.2", 53), "default",
	       "IN rule does not take OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "3.3.3.3", 80), "default",
	       "empty PORTS matches nothing");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "3.3.3.3", 0), "default",
	       "empty PORTS matches not even port 0");
	t_free(&t);

	/* host-name rules decide like their addresses */
	t_init(&t);
	parse(&t, "net=ALLOW|TCP|ok.example|443|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "2001:db8::10", 443),
	       "allow:net=ALLOW|TCP|ok.example|443|OUT", "pinned IPv6");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "192.0.2.11", 443),
	       "default", "not a pinned address");
	{
		struct sb_addr bad_family = { .family = AF_UNIX };

		ok(!sb_net_decide(&t.p, SB_NET_TCP, SB_NET_OUT, &bad_family,
				  443),
		   "unknown family: default");
	}
	t_free(&t);
}

/* ---- helpers ---- */

static void test_helpers(void)
{
	struct sb_arena *ar = sb_arena_new();
	struct sb_port_range *pr;
	struct sb_addr a, c;
	unsigned pfx;
	size_t n;

	ok(!sb_addr_parse("192.0.2.1", &a) && a.family == AF_INET,
	   "addr_parse IPv4");
	ok(!sb_addr_parse("::1", &a) && a.family == AF_INET6,
	   "addr_parse IPv6");
	is_int(sb_addr_parse("1.2.3", &a), -EINVAL, "addr_parse 1.2.3");
	is_int(sb_addr_parse("1.2.3.4/8", &a), -EINVAL, "addr_parse CIDR");
	is_int(sb_addr_parse("", &a), -EINVAL, "addr_parse empty");
	is_int(sb_addr_parse("::g", &a), -EINVAL, "addr_parse ::g");
	is_int(sb_addr_parse(NULL, &a), -EINVAL, "addr_parse NULL");

	{
		static const struct {
			const char *in, *addr;
			unsigned prefix;
		} good[] = {
			{ "10.0.0.0/8", "10.0.0.0", 8 },
			{ "10.1.2.3/8", "10.0.0.0", 8 },
			{ "10.0.0.0/08", "10.0.0.0", 8 },
			{ "1.2.3.4", "1.2.3.4", 32 },
			{ "1.2.3.4/32", "1.2.3.4", 32 },
			{ "1.2.3.4/0", "0.0.0.0", 0 },
			{ "1.2.3.255/25", "1.2.3.128", 25 },
			{ "10.0.0.0/255.255.0.0", "10.0.0.0", 16 },
			{ "10.0.0.0/0.0.255.255", "10.0.0.0", 16 },
			{ "10.0.0.0/255.255.255.255", "10.0.0.0", 32 },
			{ "::/0", "::", 0 },
			{ "::1", "::1", 128 },
			{ "2001:db8::1/128", "2001:db8::1", 128 },
			{ "2001:db8:ffff::1/33", "2001:db8:8000::", 33 },
		};
		size_t i;

		for (i = 0; i < SB_ARRAY_LEN(good); i++) {
			int rc = sb_cidr_parse(good[i].in, &a, &pfx);

			is_int(rc, 0, "cidr_parse %s", good[i].in);
			if (!rc) {
				is_str(sb_addr_format(ar, &a), good[i].addr,
				       "cidr_parse %s: address", good[i].in);
				is_int(pfx, good[i].prefix,
				       "cidr_parse %s: prefix", good[i].in);
			}
		}
	}
	{
		static const char *const badc[] = {
			"1.2.3.4/33", "::/129",	    "10.0.0.0/",
			"/8",	      "10.0.0.0/8/8", "10.0.0.0/-1",
			"10.0.0.0/+8", "10.0.0.0/255.0.255.0",
			"::1/ffff::", "10.0.0.0/ 8", " 10.0.0.0/8",
			"example.com", "",
		};
		size_t i;

		for (i = 0; i < SB_ARRAY_LEN(badc); i++)
			is_int(sb_cidr_parse(badc[i], &a, &pfx), -EINVAL,
			       "cidr_parse rejects '%s'", badc[i]);
	}

	a = A("2001:db8::1");
	is_str(sb_addr_format(ar, &a), "2001:db8::1", "format IPv6");
	a = A("::ffff:1.2.3.4");
	is_str(sb_addr_format(ar, &a), "::ffff:1.2.3.4", "format mapped");
	a.family = AF_UNIX;
	is_str(sb_addr_format(ar, &a), "?", "format bad family");
	is_str(sb_addr_format(ar, NULL), "?", "format NULL");

	{
		static const struct {
			const char *in, *out;
		} canon[] = {
			{ "::ffff:1.2.3.4", "1.2.3.4" },
			{ "::ffff:0:1.2.3.4", "1.2.3.4" }, /* RFC 2765 */
			{ "::1.2.3.4", "1.2.3.4" },
			{ "::0.0.0.2", "0.0.0.2" },
			{ "64:ff9b::1.2.3.4", "1.2.3.4" },
			{ "::ffff:0.0.0.0", "0.0.0.0" },
			{ "::", "::" },
			{ "::1", "::1" },
			{ "64:ff9b:1::1.2.3.4", "64:ff9b:1::102:304" },
			{ "::fffe:1.2.3.4", "::fffe:102:304" },
			{ "2001:db8::1", "2001:db8::1" },
			{ "1.2.3.4", "1.2.3.4" },
		};
		size_t i;

		for (i = 0; i < SB_ARRAY_LEN(canon); i++) {
			a = A(canon[i].in);
			sb_addr_canonical(&a, &c);
			is_str(sb_addr_format(ar, &c), canon[i].out,
			       "canonical %s", canon[i].in);
		}
		a = A("::ffff:1.2.3.4");
		sb_addr_canonical(&a, &a);
		ok(a.family == AF_INET && a.bytes[0] == 1 && a.bytes[3] == 4 &&
			   a.bytes[4] == 0 && a.bytes[15] == 0,
		   "canonical in place, unused bytes cleared");
	}

	is_int(sb_ports_parse(ar, NULL, &pr, &n), -EINVAL, "ports NULL");
	ok(!sb_ports_parse(ar, "", &pr, &n) && n == 0 && !pr, "ports empty");
	ok(!sb_ports_parse(ar, "22,22,21", &pr, &n) && n == 1 &&
		   pr[0].lo == 21 && pr[0].hi == 22,
	   "ports deduplicated and merged");
	ok(!sb_ports_parse(ar, "65535,0-65534", &pr, &n) && n == 1 &&
		   pr[0].lo == 0 && pr[0].hi == 65535,
	   "ports merged up to 65535");
	is_int(sb_ports_parse(ar, "1,x", &pr, &n), -EINVAL, "ports 1,x");
	sb_arena_free(ar);
}

/* ---- sb_dns_resolve ---- */

static char hosts_path[64], empty_path[64];

static void write_tmp(char *path, size_t size, const char *content)
{
	FILE *f;
	int fd;

	snprintf(path, size, "/tmp/test_net_XXXXXX");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	f = fdopen(fd, "w");
	fputs(content, f);
	fclose(f);
}

static const char *addrs_str(struct sb_arena *ar, const struct sb_addr *v,
			     size_t n)
{
	const char *s = "";
	size_t i;

	for (i = 0; i < n; i++)
		s = sb_arena_printf(ar, "%s%s%s", s, i ? " " : "",
				    sb_addr_format(ar, &v[i]));
	return s;
}

/* resolve through the given options: "OK <addrs>", "NONAME" or
 * "TRANSIENT (<why>)" */
static const char *res(struct sb_arena *ar, struct sb_dns_opts *o,
		       const char *host)
{
	struct sb_addr *v = (struct sb_addr *)1;
	const char *why = "x";
	size_t n = 99;

	switch (sb_dns_resolve(o, ar, host, &v, &n, &why)) {
	case SB_RESOLVE_OK:
		return sb_arena_printf(ar, "OK %s", addrs_str(ar, v, n));
	case SB_RESOLVE_NONAME:
		return !v && !n && !why ? "NONAME" : "NONAME (outputs set)";
	case SB_RESOLVE_TRANSIENT:
		return sb_arena_printf(ar, "TRANSIENT (%s)", why ? why : "");
	}
	return "?";
}

/* A scripted getaddrinfo: returns codes[i] on call i (the last one
 * repeating); 0 answers with a fixed list holding a duplicate. */
static struct {
	int codes[4];
	size_t n_codes, calls, frees;
	unsigned slept[4];
	size_t n_slept;
	const char *node;
} gai;

static struct sockaddr_in sin_a, sin_b;
static struct sockaddr_in6 sin6_a;
static struct addrinfo ai_list[4];

static int fake_gai(const char *node, const char *service,
		    const struct addrinfo *hints, struct addrinfo **out)
{
	size_t i = gai.calls < gai.n_codes ? gai.calls : gai.n_codes - 1;

	gai.calls++;
	gai.node = node;
	if (hints->ai_family != AF_UNSPEC || service)
		return EAI_BADFLAGS;
	if (gai.codes[i])
		return gai.codes[i];
	sin_a.sin_family = AF_INET;
	inet_pton(AF_INET, "198.51.100.1", &sin_a.sin_addr);
	sin_b = sin_a;
	sin6_a.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::99", &sin6_a.sin6_addr);
	ai_list[0] = (struct addrinfo){ .ai_family = AF_INET,
					.ai_addr = (void *)&sin_a,
					.ai_next = &ai_list[1] };
	ai_list[1] = (struct addrinfo){ .ai_family = AF_INET6,
					.ai_addr = (void *)&sin6_a,
					.ai_next = &ai_list[2] };
	ai_list[2] = (struct addrinfo){ .ai_family = AF_INET,
					.ai_addr = (void *)&sin_b,
					.ai_next = &ai_list[3] };
	ai_list[3] = (struct addrinfo){ .ai_family = AF_UNIX };
	*out = ai_list;
	return 0;
}

static void fake_free(struct addrinfo *r)
{
	gai.frees += r == ai_list;
}

static void fake_sleep(unsigned ms)
{
	if (gai.n_slept < SB_ARRAY_LEN(gai.slept))
		gai.slept[gai.n_slept] = ms;
	gai.n_slept++;
}

static void script(int c0, int c1, int c2)
{
	memset(&gai, 0, sizeof(gai));
	gai.codes[0] = c0;
	gai.codes[1] = c1;
	gai.codes[2] = c2;
	gai.n_codes = 3;
}

static void test_dns(void)
{
	struct sb_arena *ar = sb_arena_new();
	struct sb_dns_opts o = { .gai = fake_gai,
				 .gai_free = fake_free,
				 .sleep_ms = fake_sleep };

	write_tmp(hosts_path, sizeof(hosts_path),
		  "# test hosts\n"
		  "127.0.1.1\tlocalhost\n"
		  "10.9.8.7 Foo.Test alias.test # a comment\n"
		  "2001:db8::7   foo.test\n"
		  "10.9.8.7 foo.test\n"
		  "#10.0.0.1 commented.test\n"
		  "bad-address broken.test\n"
		  "fe80::1%lo scoped.test\n"
		  "192.0.2.1 scoped.test\r\n"
		  "192.0.2.2");
	write_tmp(empty_path, sizeof(empty_path), "");

	o.hosts_path = hosts_path;
	script(EAI_NONAME, EAI_NONAME, EAI_NONAME);
	is_str(res(ar, &o, "foo.test"), "OK 10.9.8.7 2001:db8::7",
	       "hosts: every address, both families, deduplicated");
	is_str(res(ar, &o, "FOO.TEST."), "OK 10.9.8.7 2001:db8::7",
	       "hosts: case and trailing dot ignored");
	is_str(res(ar, &o, "alias.test"), "OK 10.9.8.7", "hosts: alias");
	is_str(res(ar, &o, "scoped.test"), "OK 192.0.2.1",
	       "hosts: a zoned address is skipped, CRLF ok");
	is_str(res(ar, &o, "localhost"), "OK 127.0.1.1",
	       "hosts file wins over the localhost fallback");
	is_int(gai.calls, 0, "hosts hits never ask the resolver");
	is_str(res(ar, &o, "commented.test"), "NONAME",
	       "commented entry: resolver, NONAME");
	is_str(res(ar, &o, "broken.test"), "NONAME",
	       "bad address: not an answer");
	is_str(res(ar, &o, ""), "NONAME", "empty name");
	is_int(gai.calls, 2, "NONAME is not retried");
	is_int(gai.n_slept, 0, "NONAME: no sleep");

	o.hosts_path = empty_path;
	is_str(res(ar, &o, "localhost"), "OK 127.0.0.1",
	       "fallback: localhost is IPv4 only");
	is_str(res(ar, &o, "LocalHost"), "OK 127.0.0.1",
	       "fallback: case-insensitive");
	is_str(res(ar, &o, "ip6-localhost"), "OK ::1", "fallback ip6-localhost");
	is_str(res(ar, &o, "ip6-loopback"), "OK ::1", "fallback ip6-loopback");
	o.hosts_path = "/nonexistent/hosts";
	is_str(res(ar, &o, "localhost"), "OK 127.0.0.1",
	       "missing hosts file: fallback");

	script(0, 0, 0);
	is_str(res(ar, &o, "svc.test"), "OK 198.51.100.1 2001:db8::99",
	       "getaddrinfo results deduplicated, other families dropped");
	is_str(gai.node, "svc.test", "getaddrinfo got the name");
	is_int(gai.frees, 1, "results freed");

	script(EAI_AGAIN, EAI_AGAIN, EAI_AGAIN);
	is_str(res(ar, &o, "svc.test"),
	       "TRANSIENT (Temporary failure in name resolution)",
	       "EAI_AGAIN thrice: TRANSIENT with gai_strerror");
	is_int(gai.calls, 3, "EAI_AGAIN: three attempts");
	is_int(gai.n_slept, 2, "EAI_AGAIN: two pauses");
	is_int(gai.slept[0], 200, "first pause 0.2 s");
	is_int(gai.slept[1], 400, "second pause 0.4 s");

	script(EAI_SYSTEM, EAI_SYSTEM, EAI_SYSTEM);
	is_str(res(ar, &o, "svc.test"),
	       sb_arena_printf(ar, "TRANSIENT (%s)", gai_strerror(EAI_SYSTEM)),
	       "EAI_SYSTEM: TRANSIENT");
	is_int(gai.calls, 3, "EAI_SYSTEM: three attempts");

	script(EAI_AGAIN, EAI_SYSTEM, 0);
	is_str(res(ar, &o, "svc.test"), "OK 198.51.100.1 2001:db8::99",
	       "third attempt succeeds");
	is_int(gai.n_slept, 2, "after two pauses");

	script(EAI_AGAIN, EAI_NONAME, 0);
	is_str(res(ar, &o, "svc.test"), "NONAME",
	       "a definite failure after a transient one");
	is_int(gai.calls, 2, "and no more attempts");

	script(EAI_FAIL, 0, 0);
	is_str(res(ar, &o, "svc.test"), "NONAME", "EAI_FAIL: NONAME");
	is_int(gai.calls, 1, "EAI_FAIL: not retried");
#ifdef EAI_NODATA
	script(EAI_NODATA, 0, 0);
	is_str(res(ar, &o, "svc.test"), "NONAME", "EAI_NODATA: NONAME");
	is_int(gai.calls, 1, "EAI_NODATA: not retried");
#endif

	/* The real getaddrinfo, on a name that cannot exist. */
	{
		struct sb_dns_opts real = { .hosts_path = empty_path };

		is_str(res(ar, &real, "no-such-host.invalid"), "NONAME",
		       "real resolver: .invalid is NONAME");
		is_str(res(ar, &real, "localhost"), "OK 127.0.0.1",
		       "real resolver path: localhost fallback");
	}

	unlink(hosts_path);
	unlink(empty_path);
	sb_arena_free(ar);
}

/* The resolver drives the parser end to end. */
static void test_parse_with_dns(void)
{
	struct sb_dns_opts o = { 0 };
	struct t t;

	write_tmp(hosts_path, sizeof(hosts_path),
		  "10.9.8.7 db.test\n2001:db8::7 db.test\n");
	o.hosts_path = hosts_path;
	t_init(&t);
	t.o.resolve = sb_dns_resolve;
	t.o.resolve_ctx = &o;
	parse(&t, "net=ALLOW|TCP|db.test|5432|OUT");
	is_int(t.p.nets.n, 2, "db.test: two rules");
	is_str(rule_net(&t, 0), "10.9.8.7/32", "db.test IPv4");
	is_str(rule_net(&t, 1), "2001:db8::7/128", "db.test IPv6");
	is_int(t.p.pins.n, 1, "db.test pinned");
	t_free(&t);
	unlink(hosts_path);
}

/* ---- addresses as the kernel will use them ---- */

/* The unspecified addresses reach loopback; every IPv4-in-IPv6 form is
 * its IPv4 address; one verdict for every spelling of one destination. */
static void test_destinations(void)
{
	static const char *const deny_loop[] = {
		"net=DENY|*|127.0.0.0/8|*|OUT", "net=DENY|*|::1|*|OUT",
		"net=ALLOW|*|*|*|*",
	};
	static const struct {
		const char *addr;
		unsigned dir;
		const char *want; /* "allow", "deny" or "default" */
	} loop_cases[] = {
		{ "0.0.0.0", SB_NET_OUT, "deny" },
		{ "::", SB_NET_OUT, "deny" },
		{ "::ffff:0.0.0.0", SB_NET_OUT, "deny" },
		{ "::ffff:127.0.0.1", SB_NET_OUT, "deny" },
		{ "::ffff:0:127.0.0.1", SB_NET_OUT, "deny" },
		{ "::127.0.0.1", SB_NET_OUT, "deny" },
		{ "64:ff9b::127.0.0.1", SB_NET_OUT, "deny" },
		{ "2002:7f00:1::", SB_NET_OUT, "deny" },
		{ "2002:7f00:1:ffff::1", SB_NET_OUT, "deny" },
		{ "0.1.2.3", SB_NET_OUT, "deny" },
		{ "127.255.0.9", SB_NET_OUT, "deny" },
		{ "0.0.0.0", SB_NET_IN, "allow" }, /* a bind: any address */
		{ "::", SB_NET_IN, "allow" },
		{ "192.0.2.1", SB_NET_OUT, "allow" },
		{ "2002:c000:201::", SB_NET_OUT, "allow" },
		{ "2001:db8::2", SB_NET_OUT, "allow" },
	};
	static const struct {
		const char *addr;
		const char *want;
	} only_loop[] = {
		{ "0.0.0.0", "allow" },	     { "::ffff:0.0.0.0", "allow" },
		{ "127.0.0.1", "allow" },    { "::ffff:127.0.0.1", "allow" },
		{ "::", "default" },	     /* ::1 has no rule */
		{ "0.1.2.3", "default" },    /* also unicast: not allowed */
		{ "127.0.0.2", "default" },
	};
	struct sb_addr a, d[2];
	struct t t;
	size_t i, n;

	t_init(&t);
	for (i = 0; i < SB_ARRAY_LEN(deny_loop); i++)
		parse(&t, deny_loop[i]);
	for (i = 0; i < SB_ARRAY_LEN(loop_cases); i++) {
		const char *r = decide(&t, SB_NET_TCP, loop_cases[i].dir,
				       loop_cases[i].addr, 80);

		ok(!strncmp(r, loop_cases[i].want, strlen(loop_cases[i].want)),
		   "DENY loopback, ALLOW *: %s %s is %s (%s)",
		   loop_cases[i].dir == SB_NET_IN ? "IN" : "OUT",
		   loop_cases[i].addr, loop_cases[i].want, r);
	}
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|127.0.0.1|8080|OUT");
	for (i = 0; i < SB_ARRAY_LEN(only_loop); i++) {
		const char *r = decide(&t, SB_NET_TCP, SB_NET_OUT,
				       only_loop[i].addr, 8080);

		ok(!strncmp(r, only_loop[i].want, strlen(only_loop[i].want)),
		   "ALLOW 127.0.0.1: %s is %s (%s)", only_loop[i].addr,
		   only_loop[i].want, r);
	}
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "0.0.0.0", 8081), "default",
	       "ALLOW 127.0.0.1: another port of 0.0.0.0 is not allowed");
	t_free(&t);

	t_init(&t);
	parse(&t, "net=ALLOW|TCP|0.0.0.0|8080|OUT");
	is_str(decide(&t, SB_NET_TCP, SB_NET_OUT, "0.0.0.0", 8080), "default",
	       "ALLOW 0.0.0.0 OUT does not open loopback");
	t_free(&t);

	a = A("::ffff:0.0.0.0");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 1 && d[0].family == AF_INET && d[0].bytes[0] == 127 &&
		   d[0].bytes[3] == 1,
	   "destinations: ::ffff:0.0.0.0 OUT is 127.0.0.1");
	n = sb_addr_destinations(&a, SB_NET_IN, d);
	ok(n == 1 && d[0].family == AF_INET && d[0].bytes[0] == 0,
	   "destinations: ::ffff:0.0.0.0 IN is 0.0.0.0");
	a = A("0.9.9.9");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 2 && d[0].bytes[0] == 0 && d[1].bytes[0] == 127,
	   "destinations: 0.9.9.9 OUT is itself and loopback");
	a = A("::");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 1 && d[0].family == AF_INET6 && d[0].bytes[15] == 1,
	   "destinations: :: OUT is ::1");
	a = A("255.255.255.255");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 2 && d[0].bytes[0] == 255 && d[1].bytes[0] == 127,
	   "destinations: the broadcast OUT is itself and loopback");
	a = A("239.1.2.3");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 2 && d[0].bytes[0] == 239 && d[1].bytes[0] == 127,
	   "destinations: multicast OUT is itself and loopback");
	a = A("::ffff:224.0.0.1");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 2 && d[0].bytes[0] == 224 && d[1].bytes[0] == 127,
	   "destinations: mapped multicast OUT is itself and loopback");
	a = A("ff02::1");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 2 && d[0].bytes[0] == 0xff && d[1].family == AF_INET6 &&
		   d[1].bytes[15] == 1,
	   "destinations: IPv6 multicast OUT is itself and ::1");
	n = sb_addr_destinations(&a, SB_NET_IN, d);
	ok(n == 1, "destinations: multicast IN is itself");
	a = A("192.0.2.255");
	n = sb_addr_destinations(&a, SB_NET_OUT, d);
	ok(n == 1, "destinations: a unicast address is itself");

	t_init(&t);
	parse(&t, "net=DENY|*|127.0.0.0/8|*|OUT");
	parse(&t, "net=ALLOW|*|*|*|*");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "255.255.255.255", 9),
	       "deny:net=DENY|*|127.0.0.0/8|*|OUT",
	       "a loopback DENY refuses the broadcast");
	is_str(decide(&t, SB_NET_UDP, SB_NET_OUT, "224.0.0.1", 9),
	       "deny:net=DENY|*|127.0.0.0/8|*|OUT",
	       "a loopback DENY refuses multicast");
	t_free(&t);
}

/* sb_addr_parse_numeric against glibc's getaddrinfo(AI_NUMERICHOST), the
 * function CPython calls for a host that is not a strict literal: the
 * same spellings are numbers, the same are names. */
static void test_numeric(void)
{
	static const char *const v4[] = {
		"127.0.0.1", "127.1", "127.0.1", "0x7f.1", "0X7F.0.0.1",
		"2130706433", "0x7f000001", "017700000001", "0", "00", "0x",
		"0x0", "017.0.0.1", "127.0.0.01", "255.255.255.255",
		"4294967295", "4294967296", "0x100000000", "256.0.0.1",
		"1.256.0.1", "1.2.65535", "1.2.65536", "1.16777215",
		"1.16777216", "1.2.3.256", "1.2.3.4.5", "127.0.0.1.",
		".127.0.0.1", "127..1", "127.0.0.1 x", " 127.0.0.1",
		"127.0.0.1 ", "08", "09.1", "0x1g", "1e2", "", "-1",
		"+1", "localhost", "0x7f.1.", "1.2.3.04", "0xffffffff",
		"037777777777", "040000000000", "1.0xffffff", "1.0x1000000",
		"0x.1", "0x1.0x", "1.2.3.0x", "0xFf.1",
	};
	static const struct {
		const char *in, *out; /* out NULL: a name */
	} v6[] = {
		{ "::1", "::1" },
		{ "::1%lo", "::1" },
		{ "fe80::1%eth0", "fe80::1" },
		{ "::ffff:127.0.0.1", "::ffff:127.0.0.1" },
		{ "::ffff:127.1", NULL },
		{ "[::1]", NULL },
		{ "::1%", NULL },
		{ "::1.", NULL },
		{ "::g", NULL },
	};
	struct sb_arena *ar = sb_arena_new();
	struct addrinfo hints = { 0 }, *res;
	struct sb_addr a;
	size_t i;
	int rc;

	hints.ai_family = AF_INET;
	hints.ai_flags = AI_NUMERICHOST;
	for (i = 0; i < SB_ARRAY_LEN(v4); i++) {
		const char *want = "name", *got = "name";

		res = NULL;
		rc = getaddrinfo(v4[i], NULL, &hints, &res);
		if (rc == 0 && res && res->ai_family == AF_INET) {
			struct sb_addr g = { .family = AF_INET };

			memcpy(g.bytes,
			       &((struct sockaddr_in *)res->ai_addr)->sin_addr,
			       4);
			want = sb_addr_format(ar, &g);
		}
		if (res)
			freeaddrinfo(res);
		if (!sb_addr_parse_numeric(v4[i], &a))
			got = sb_addr_format(ar, &a);
		is_str(got, want, "numeric '%s' as getaddrinfo reads it", v4[i]);
	}
	for (i = 0; i < SB_ARRAY_LEN(v6); i++) {
		rc = sb_addr_parse_numeric(v6[i].in, &a);
		if (v6[i].out)
			is_str(rc ? "name" : sb_addr_format(ar, &a), v6[i].out,
			       "numeric '%s'", v6[i].in);
		else
			is_int(rc, -EINVAL, "numeric '%s' is a name", v6[i].in);
	}
	is_int(sb_addr_parse_numeric(NULL, &a), -EINVAL, "numeric NULL");
	sb_arena_free(ar);
}

/* A name is resolved only when a rule names it. */
static void test_names(void)
{
	static const char *const addr_rules[] = {
		"net=ALLOW|TCP|127.0.0.1|8080|OUT",
		"net=ALLOW|UDP|127.0.0.53|53|OUT",
		"net=ALLOW|TCP|0.0.0.0/0|443|OUT",
		"net=ALLOW|TCP|::/0|443|OUT",
		"net=ALLOW|TCP|*|8080|IN",
		"net=ALLOW|TCP|*||OUT",
		"net=DENY|*|*|*|OUT",
	};
	struct sb_addr a;
	struct t t;
	size_t i;

	t_init(&t);
	for (i = 0; i < SB_ARRAY_LEN(addr_rules); i++)
		parse(&t, addr_rules[i]);
	ok(!sb_net_names_any(&t.p), "address rules name no host");
	ok(!sb_net_name_allowed(&t.p, "secret.attacker.example"),
	   "address rules: no lookup of an unnamed host");
	ok(!sb_net_name_allowed(&t.p, "localhost"),
	   "address rules: not even localhost (the guard answers it)");
	a = A("127.0.0.1");
	ok(sb_net_reverse_allowed(&t.p, &a),
	   "reverse: an address a rule names exactly");
	a = A("::ffff:127.0.0.1");
	ok(sb_net_reverse_allowed(&t.p, &a), "reverse: its mapped form");
	a = A("10.1.2.3");
	ok(!sb_net_reverse_allowed(&t.p, &a),
	   "reverse: an address 0.0.0.0/0 allows is not named");
	a = A("2001:db8::1");
	ok(!sb_net_reverse_allowed(&t.p, &a),
	   "reverse: an address ::/0 allows is not named");
	parse(&t, "net=ALLOW|TCP|ok.example|443|OUT");
	ok(sb_net_name_allowed(&t.p, "ok.example"), "a named host resolves");
	ok(sb_net_name_allowed(&t.p, "OK.EXAMPLE."),
	   "a named host: case and trailing dot");
	ok(!sb_net_name_allowed(&t.p, "x.ok.example"),
	   "a named host: not its subdomains");
	a = A("192.0.2.10");
	ok(sb_net_reverse_allowed(&t.p, &a), "reverse: a pinned address");
	ok(!sb_net_reverse_allowed(&t.p, NULL), "reverse: NULL");
	parse(&t, "net=ALLOW|UDP|*|53|OUT");
	ok(sb_net_names_any(&t.p), "'*' for OUT names every host");
	ok(sb_net_name_allowed(&t.p, "anything.example"),
	   "'*': any name resolves");
	a = A("10.1.2.3");
	ok(sb_net_reverse_allowed(&t.p, &a), "'*': any reverse lookup");
	t_free(&t);
}

/* Abstract Unix names: only a policy that allows the whole network. */
static void test_abstract(void)
{
	static const struct {
		const char *rules[2];
		bool allows;
	} cases[] = {
		{ { "net=ALLOW|*|*|*|*" }, true },
		{ { "net=ALLOW|any|*|*|*" }, true },
		{ { "net=ALLOW|TCP,UDP|*|*|IN,OUT" }, true },
		{ { "net=ALLOW|TCP|*|*|*" }, false },
		{ { "net=ALLOW|*|*|*|OUT" }, false },
		{ { "net=ALLOW|*|*|1-65535|*" }, false },
		{ { "net=ALLOW|*|0.0.0.0/0|*|*" }, false },
		{ { "net=ALLOW|*|*|*|*", "net=DENY|TCP|10.0.0.0/8|*|*" },
		  false },
		{ { NULL }, false },
	};
	size_t i, k;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		struct t t;

		t_init(&t);
		for (k = 0; k < 2 && cases[i].rules[k]; k++)
			parse(&t, cases[i].rules[k]);
		is_int(sb_net_allows_abstract(&t.p), cases[i].allows,
		       "abstract names: %s%s%s",
		       cases[i].rules[0] ? cases[i].rules[0] : "no rule",
		       cases[i].rules[1] ? " + " : "",
		       cases[i].rules[1] ? cases[i].rules[1] : "");
		t_free(&t);
	}
}

/* DNS messages a program sends to port 53. */
static size_t dns_msg(uint8_t *b, uint16_t flags, uint16_t qd, uint16_t an,
		      uint16_t ar, const char *qname, bool opt)
{
	size_t n = 12, l;
	const char *s = qname, *dot;

	memset(b, 0, 512);
	b[0] = 0x12;
	b[1] = 0x34;
	b[2] = (uint8_t)(flags >> 8);
	b[3] = (uint8_t)flags;
	b[5] = (uint8_t)qd;
	b[7] = (uint8_t)an;
	b[11] = (uint8_t)ar;
	while (*s) {
		dot = strchr(s, '.');
		l = dot ? (size_t)(dot - s) : strlen(s);
		b[n++] = (uint8_t)l;
		memcpy(b + n, s, l);
		n += l;
		s += l;
		if (*s)
			s++;
	}
	b[n++] = 0;
	b[n++] = 0;
	b[n++] = 1; /* A */
	b[n++] = 0;
	b[n++] = 1; /* IN */
	if (opt) {
		b[n++] = 0;
		b[n++] = 0;
		b[n++] = 41;
		b[n++] = 0x04;
		b[n++] = 0xd0;
		n += 4;
		b[n++] = 0;
		b[n++] = 0;
	}
	return n;
}

static void test_dns_query(void)
{
	uint8_t b[512];
	char name[256];
	size_t n;
	struct t t;

	t_init(&t);
	parse(&t, "net=ALLOW|UDP|127.0.0.53|53|OUT");
	parse(&t, "net=ALLOW|TCP|ok.example|443|OUT");
	n = dns_msg(b, 0x0100, 1, 0, 0, "ok.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), 1,
	       "dns: a query for a named host");
	is_str(name, "ok.example", "dns: its name");
	n = dns_msg(b, 0x0100, 1, 0, 1, "OK.example", true);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), 1,
	       "dns: with an empty EDNS record, any case");
	n = dns_msg(b, 0x0100, 1, 0, 0, "s3cr3t.attacker.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), 0,
	       "dns: a query for an unnamed host is refused");
	is_str(name, "s3cr3t.attacker.example", "dns: the refused name");
	n = dns_msg(b, 0x0100, 1, 0, 0, "ok.example", false);
	b[12] = 10; /* one label "ok.example": a dot inside a label */
	memmove(b + 13, "ok.example", 10);
	is_int(sb_dns_query_judge(&t.p, b, 12 + 1 + 10 + 1 + 4, name,
				  sizeof(name)),
	       -EINVAL, "dns: a dot inside a label");
	n = dns_msg(b, 0x8180, 1, 0, 0, "ok.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: a response");
	n = dns_msg(b, 0x2800, 1, 0, 0, "ok.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: an UPDATE");
	n = dns_msg(b, 0x0100, 2, 0, 0, "ok.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: two questions");
	n = dns_msg(b, 0x0100, 1, 1, 0, "ok.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: an answer record in a query");
	n = dns_msg(b, 0x0100, 1, 0, 1, "ok.example", true);
	b[n - 1] = 4;
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: EDNS with option data");
	n = dns_msg(b, 0x0100, 1, 0, 0, "ok.example", false);
	b[n++] = 'x';
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: trailing bytes");
	n = dns_msg(b, 0x0100, 1, 0, 0, "ok.example", false);
	b[12 + 1 + 2] = 0xc0; /* a compression pointer for the 2nd label */
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: compression");
	n = dns_msg(b, 0x0100, 1, 0, 0, "ok.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n - 5, name, sizeof(name)),
	       -EINVAL, "dns: truncated");
	is_int(sb_dns_query_judge(&t.p, b, 11, name, sizeof(name)), -EINVAL,
	       "dns: shorter than a header");
	is_int(sb_dns_query_judge(&t.p, NULL, 40, name, sizeof(name)), -EINVAL,
	       "dns: NULL");
	n = dns_msg(b, 0x0100, 1, 0, 0, "ok\x01.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), -EINVAL,
	       "dns: a control byte in a label");
	parse(&t, "net=ALLOW|UDP|*|53|OUT");
	n = dns_msg(b, 0x0100, 1, 0, 0, "s3cr3t.attacker.example", false);
	is_int(sb_dns_query_judge(&t.p, b, n, name, sizeof(name)), 1,
	       "dns: '*' lets any name through");
	t_free(&t);
}

int main(void)
{
	test_action();
	test_kinds();
	test_network();
	test_ports();
	test_dirs();
	test_errors();
	test_self_port();
	test_hosts();
	test_finish();
	test_decide();
	test_destinations();
	test_numeric();
	test_names();
	test_abstract();
	test_dns_query();
	test_helpers();
	test_dns();
	test_parse_with_dns();
	return tap_done();
}
