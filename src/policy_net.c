/* policy_net.c - the net= directive: parsing its five fields, turning host
 * names into pinned addresses through the injected resolver, ordering the
 * rules, and the pure decision the guard and the seccomp supervisor share.
 * It must stay pure: no socket, no lookup of its own (inet_pton and friends
 * only parse text), no printing; every problem goes through sb_error() or
 * sb_warning(), and all memory comes from the policy arena.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>

#include "policy_internal.h"
#include "policy_net.h"

#define PORT_MAX 65535u

/* The 96-bit prefixes under which an IPv6 address carries an IPv4 one. */
static const uint8_t v4_mapped_prefix[12] = { [10] = 0xff, [11] = 0xff };
static const uint8_t nat64_prefix[12] = { 0, 0x64, 0xff, 0x9b };

static unsigned addr_bits(int family)
{
	return family == AF_INET ? 32 : family == AF_INET6 ? 128 : 0;
}

int sb_addr_parse(const char *s, struct sb_addr *out)
{
	struct sb_addr a = { 0 };

	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, a.bytes) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, s, a.bytes) == 1)
		a.family = AF_INET6;
	else
		return -EINVAL;
	*out = a;
	return 0;
}

/* Decimal digits only (Python's int() would also take "+8" or "8_0", which
 * no one means in a port list), value at most 'max'. */
static bool parse_uint(const char *s, size_t len, unsigned max, unsigned *out)
{
	unsigned long v = 0;
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > max)
			return false;
	}
	*out = (unsigned)v;
	return true;
}

/* Leading ones then zeros: their count, else -1. */
static int mask_to_prefix(uint32_t m)
{
	int n = 0;

	while (n < 32 && (m & (0x80000000u >> n)))
		n++;
	if (n < 32 && (m << n) != 0)
		return -1;
	return n;
}

static bool parse_prefix(int family, const char *s, unsigned *out)
{
	struct in_addr mask;
	int n;

	if (parse_uint(s, strlen(s), addr_bits(family), out))
		return true;
	/* Python's ip_network() also reads 10.0.0.0/255.0.0.0 and, failing
	 * that, the hostmask form 10.0.0.0/0.255.255.255. */
	if (family != AF_INET || inet_pton(AF_INET, s, &mask) != 1)
		return false;
	n = mask_to_prefix(ntohl(mask.s_addr));
	if (n < 0)
		n = mask_to_prefix(~ntohl(mask.s_addr));
	if (n < 0)
		return false;
	*out = (unsigned)n;
	return true;
}

static void clear_host_bits(struct sb_addr *a, unsigned prefix)
{
	unsigned i, nbytes = addr_bits(a->family) / 8;

	for (i = 0; i < nbytes; i++) {
		unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;

		if (keep < 8)
			a->bytes[i] &= (uint8_t)(0xff00 >> keep);
	}
}

int sb_cidr_parse(const char *s, struct sb_addr *addr, unsigned *prefix)
{
	char buf[64];
	const char *slash;
	struct sb_addr a;
	unsigned pfx;
	size_t len;

	if (!s)
		return -EINVAL;
	slash = strchr(s, '/');
	len = slash ? (size_t)(slash - s) : strlen(s);
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (sb_addr_parse(buf, &a))
		return -EINVAL;
	if (!slash)
		pfx = addr_bits(a.family);
	else if (!parse_prefix(a.family, slash + 1, &pfx))
		return -EINVAL;
	clear_host_bits(&a, pfx);
	*addr = a;
	*prefix = pfx;
	return 0;
}

const char *sb_addr_format(struct sb_arena *a, const struct sb_addr *addr)
{
	char buf[INET6_ADDRSTRLEN];

	if (!addr || !addr_bits(addr->family) ||
	    !inet_ntop(addr->family, addr->bytes, buf, sizeof(buf)))
		return "?";
	return sb_arena_strdup(a, buf);
}

/* The next comma-separated item of [cur, end), trimmed. */
struct items {
	const char *cur, *end;
	bool done;
};

static bool next_item(struct items *it, const char **item, size_t *len)
{
	const char *s = it->cur, *e, *comma;

	if (it->done)
		return false;
	comma = memchr(s, ',', (size_t)(it->end - s));
	e = comma ? comma : it->end;
	it->done = !comma;
	it->cur = comma ? comma + 1 : it->end;
	while (s < e && sb_is_space(*s))
		s++;
	while (e > s && sb_is_space(e[-1]))
		e--;
	*item = s;
	*len = (size_t)(e - s);
	return true;
}

static struct items items_of(const char *s)
{
	return (struct items){ .cur = s, .end = s + strlen(s) };
}

static bool item_is(const char *item, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(item, word, len) == 0;
}

static bool trimmed_is(const char *s, const char *word)
{
	size_t len = strlen(s);

	while (len && sb_is_space(s[len - 1]))
		len--;
	while (len && sb_is_space(*s)) {
		s++;
		len--;
	}
	return item_is(s, len, word);
}

static bool parse_port_item(const char *item, size_t len,
			    struct sb_port_range *r)
{
	const char *dash = memchr(item, '-', len);
	const char *lo = item, *hi;
	size_t lo_len, hi_len;
	unsigned a, b = PORT_MAX;

	if (!dash) {
		if (!parse_uint(item, len, PORT_MAX, &a))
			return false;
		r->lo = r->hi = (uint16_t)a;
		return true;
	}
	lo_len = (size_t)(dash - item);
	hi = dash + 1;
	hi_len = len - lo_len - 1;
	while (lo_len && sb_is_space(lo[lo_len - 1]))
		lo_len--;
	while (hi_len && sb_is_space(*hi)) {
		hi++;
		hi_len--;
	}
	/* "-80" has no start (and negative ports do not exist); "8000-"
	 * runs to the last port. */
	if (!parse_uint(lo, lo_len, PORT_MAX, &a))
		return false;
	if (hi_len && !parse_uint(hi, hi_len, PORT_MAX, &b))
		return false;
	if (a > b)
		return false;
	r->lo = (uint16_t)a;
	r->hi = (uint16_t)b;
	return true;
}

static int cmp_range(const void *x, const void *y)
{
	const struct sb_port_range *a = x, *b = y;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->hi < b->hi ? -1 : a->hi > b->hi;
}

int sb_ports_parse(struct sb_arena *a, const char *s,
		   struct sb_port_range **out, size_t *n)
{
	SB_VEC(struct sb_port_range) v = { 0 };
	struct sb_port_range r;
	struct items it;
	const char *item;
	size_t len, i, m;

	if (!s)
		return -EINVAL;
	if (trimmed_is(s, "*")) {
		r.lo = 0;
		r.hi = PORT_MAX;
		*SB_VEC_PUSH(a, v) = r;
	} else {
		it = items_of(s);
		while (next_item(&it, &item, &len)) {
			if (!len)
				continue;
			if (!parse_port_item(item, len, &r))
				return -EINVAL;
			*SB_VEC_PUSH(a, v) = r;
		}
	}
	/* Sorted and merged, so a reader of the policy sees each port once
	 * and a lookup can stop early. */
	if (v.n > 1)
		qsort(v.v, v.n, sizeof(*v.v), cmp_range);
	for (i = 0, m = 0; i < v.n; i++) {
		if (m && (unsigned)v.v[i].lo <= (unsigned)v.v[m - 1].hi + 1) {
			if (v.v[i].hi > v.v[m - 1].hi)
				v.v[m - 1].hi = v.v[i].hi;
			continue;
		}
		v.v[m++] = v.v[i];
	}
	*out = m ? v.v : NULL;
	*n = m;
	return 0;
}

void sb_addr_canonical(const struct sb_addr *in, struct sb_addr *out)
{
	struct sb_addr a = *in, v4 = { .family = AF_INET };
	static const uint8_t zero[12];
	/* ::ffff:0:a.b.c.d, the IPv4-translated form of RFC 2765 */
	static const uint8_t translated[12] = { 0, 0, 0, 0, 0,    0,
						0, 0, 0xff, 0xff, 0, 0 };
	const uint8_t *b = a.bytes;
	bool embeds;

	if (a.family == AF_INET6) {
		/* ::a.b.c.d is IPv4-compatible, but :: and ::1 are the IPv6
		 * unspecified and loopback addresses. */
		embeds = !memcmp(b, v4_mapped_prefix, 12) ||
			 !memcmp(b, translated, 12) ||
			 !memcmp(b, nat64_prefix, 12) ||
			 (!memcmp(b, zero, 12) &&
			  (b[12] | b[13] | b[14] || b[15] > 1));
		if (embeds) {
			memcpy(v4.bytes, b + 12, 4);
			a = v4;
		}
	}
	*out = a;
}

static bool prefix_match(const uint8_t *addr, const uint8_t *net,
			 unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;
	uint8_t mask;

	if (memcmp(addr, net, full))
		return false;
	if (!rest)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return ((addr[full] ^ net[full]) & mask) == 0;
}

static bool net_match(const struct sb_net_rule *r, const struct sb_addr *a)
{
	unsigned bits = addr_bits(r->addr.family);
	unsigned prefix = r->prefix > bits ? bits : r->prefix;

	if (!bits)
		return false;
	if (r->addr.family == a->family)
		return prefix_match(a->bytes, r->addr.bytes, prefix);
	/* A rule written as ::ffff:a.b.c.d/N or 64:ff9b::a.b.c.d/N with
	 * N >= 96 names IPv4 addresses: judge them the same way as the
	 * addresses themselves. */
	if (a->family == AF_INET && r->addr.family == AF_INET6 &&
	    prefix >= 96 &&
	    (!memcmp(r->addr.bytes, v4_mapped_prefix, 12) ||
	     !memcmp(r->addr.bytes, nat64_prefix, 12)))
		return prefix_match(a->bytes, r->addr.bytes + 12, prefix - 96);
	return false;
}

static bool port_match(const struct sb_net_rule *r, uint16_t port)
{
	size_t i;

	for (i = 0; i < r->n_ports; i++)
		if (r->ports[i].lo <= port && port <= r->ports[i].hi)
			return true;
	return false;
}

const struct sb_net_rule *sb_net_decide(const struct sb_policy *p,
					unsigned kind, unsigned dir,
					const struct sb_addr *addr,
					uint16_t port)
{
	struct sb_addr canon;
	bool embedded;
	int pass;
	size_t i;

	if (!addr || !addr_bits(addr->family))
		return NULL;
	sb_addr_canonical(addr, &canon);
	embedded = canon.family != addr->family;
	/* Two passes rather than trusting the order of p->nets, so that a
	 * DENY wins even if sb_net_finish() was not called. */
	for (pass = 0; pass < 2; pass++) {
		bool allow = pass == 1;

		for (i = 0; i < p->nets.n; i++) {
			const struct sb_net_rule *r = &p->nets.v[i];

			if (r->allow != allow || !(r->kinds & kind) ||
			    !(r->dirs & dir) || !port_match(r, port))
				continue;
			if (net_match(r, &canon))
				return r;
			/* Fail closed both ways: a DENY of the IPv6 form
			 * still refuses, an ALLOW of it (::/0) does not
			 * open the IPv4 address behind it. */
			if (!allow && embedded && net_match(r, addr))
				return r;
		}
	}
	return NULL;
}

const struct sb_net_rule *sb_net_self_rule(const struct sb_policy *p,
					   unsigned kind, unsigned dir,
					   const struct sb_addr *addr)
{
	struct sb_addr canon;
	size_t i;

	if (!addr || !addr_bits(addr->family))
		return NULL;
	sb_addr_canonical(addr, &canon);
	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (r->allow && r->self && (r->kinds & kind) &&
		    (r->dirs & dir) && net_match(r, &canon))
			return r;
	}
	return NULL;
}

/* Equal host names: ASCII case folded, one trailing dot ignored. */
static size_t host_len(const char *h)
{
	size_t n = strlen(h);

	return n && h[n - 1] == '.' ? n - 1 : n;
}

static int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool host_eq(const char *a, const char *b)
{
	size_t i, n = host_len(a);

	if (n != host_len(b))
		return false;
	for (i = 0; i < n; i++)
		if (ascii_lower((unsigned char)a[i]) !=
		    ascii_lower((unsigned char)b[i]))
			return false;
	return true;
}

const struct sb_pin *sb_pin_lookup(const struct sb_policy *p,
				   const char *host)
{
	size_t i;

	if (!host)
		return NULL;
	for (i = 0; i < p->pins.n; i++)
		if (p->pins.v[i].host && host_eq(p->pins.v[i].host, host))
			return &p->pins.v[i];
	return NULL;
}

/* Loose on purpose: the resolver is the judge of what exists. What is
 * refused here never reaches it: characters no name has, and the legacy
 * numeric forms ("10.1", "0x7f000001", "017.0.0.1") that getaddrinfo would
 * quietly turn into some other address than the writer meant. A '*' passes,
 * so that "*.example.com" is reported as a name that does not resolve. */
static bool host_syntax_ok(const char *h)
{
	struct in_addr ia;
	size_t i, n = host_len(h);

	if (n == 0 || n > 253)
		return false;
	for (i = 0; h[i]; i++) {
		char c = h[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      c == '_' || c == '*'))
			return false;
	}
	return inet_aton(h, &ia) == 0;
}

/* The parsed fields of one net= line, shared by all its rules. */
struct net_fields {
	bool allow;
	unsigned kinds, dirs;
	const struct sb_port_range *ports;
	size_t n_ports;
	bool self;
};

static void add_rule(struct sb_policy *p, const struct sb_line *l,
		     const struct net_fields *f, const struct sb_addr *a,
		     unsigned prefix, const char *host)
{
	struct sb_net_rule *r = SB_VEC_PUSH(p->arena, p->nets);

	r->allow = f->allow;
	r->kinds = f->kinds;
	r->dirs = f->dirs;
	r->addr = *a;
	r->prefix = prefix;
	r->ports = f->ports;
	r->n_ports = f->n_ports;
	r->self = f->self;
	r->host = host;
	r->rule = l->text;
	r->ref = l->ref;
}

static char *host_key(struct sb_arena *a, const char *host)
{
	char *k = sb_arena_strndup(a, host, host_len(host));
	char *c;

	for (c = k; *c; c++)
		*c = (char)ascii_lower((unsigned char)*c);
	return k;
}

/* Resolve once and pin; NULL with *st and *why set on failure. */
static const struct sb_pin *resolve_and_pin(struct sb_policy *p,
					    const struct sb_parse_opts *opts,
					    const char *host,
					    enum sb_resolve_status *st,
					    const char **why)
{
	struct sb_addr *got = NULL, *keep;
	struct sb_pin *pin;
	size_t n = 0, m = 0, i, j;

	*st = SB_RESOLVE_NONAME;
	*why = NULL;
	if (!opts || !opts->resolve)
		return NULL;
	*st = opts->resolve(opts->resolve_ctx, p->arena, host, &got, &n, why);
	if (*st != SB_RESOLVE_OK) {
		/* An unknown status is a failure, and not a temporary one. */
		if (*st != SB_RESOLVE_TRANSIENT)
			*st = SB_RESOLVE_NONAME;
		return NULL;
	}
	keep = sb_arena_alloc(p->arena, (n ? n : 1) * sizeof(*keep));
	for (i = 0; got && i < n; i++) {
		if (!addr_bits(got[i].family))
			continue;
		for (j = 0; j < m; j++)
			if (keep[j].family == got[i].family &&
			    !memcmp(keep[j].bytes, got[i].bytes,
				    addr_bits(got[i].family) / 8))
				break;
		if (j == m) {
			keep[m] = (struct sb_addr){ .family = got[i].family };
			memcpy(keep[m].bytes, got[i].bytes,
			       addr_bits(got[i].family) / 8);
			m++;
		}
	}
	if (!m) {
		*st = SB_RESOLVE_NONAME;
		return NULL;
	}
	pin = SB_VEC_PUSH(p->arena, p->pins);
	pin->host = host_key(p->arena, host);
	pin->addrs = keep;
	pin->n_addrs = m;
	return pin;
}

static void net_host(struct sb_policy *p, const struct sb_parse_opts *opts,
		     const struct sb_line *l, const struct net_fields *f,
		     const char *host)
{
	enum sb_resolve_status st = SB_RESOLVE_NONAME;
	const struct sb_pin *pin = NULL;
	const char *why = NULL, *reason;
	size_t i;

	if (host_syntax_ok(host) && !strchr(host, '*')) {
		/* One resolution per name: a second rule naming it gets the
		 * same addresses, which are the ones the sandbox will see. */
		pin = sb_pin_lookup(p, host);
		if (!pin && opts && (opts->flags & SB_PARSE_NO_DNS)) {
			sb_error(p, l->ref,
				 "In '%s', host names are not resolved here: use an address.",
				 l->text);
			return;
		}
		if (!pin)
			pin = resolve_and_pin(p, opts, host, &st, &why);
	}
	if (pin) {
		for (i = 0; i < pin->n_addrs; i++)
			add_rule(p, l, f, &pin->addrs[i],
				 addr_bits(pin->addrs[i].family), host);
		return;
	}
	if (st == SB_RESOLVE_TRANSIENT)
		reason = sb_arena_printf(
			p->arena,
			"the name resolution failed temporarily (%s). Check the resolver, not the rule.",
			why ? why : "unknown error");
	else
		reason = "invalid network specification. That does not resolve to any network.";
	/* Dropping an ALLOW grants nothing; dropping a DENY would lift a
	 * restriction its author wrote on purpose, so that one is fatal. */
	if (f->allow)
		sb_warning(p, l->ref, "In '%s', %s Rule ignored: it allows nothing.",
			   l->text, reason);
	else
		sb_error(p, l->ref, "In '%s', %s", l->text, reason);
}

static char *upper_copy(struct sb_arena *a, const char *s, size_t len)
{
	char *u = sb_arena_strndup(a, s, len), *c;

	for (c = u; *c; c++)
		if (*c >= 'a' && *c <= 'z')
			*c = (char)(*c - 'a' + 'A');
	return u;
}

/* Every bad item is reported, as the reference parser does. */
static unsigned parse_kinds(struct sb_policy *p, const struct sb_line *l,
			    const char *field)
{
	struct items it = items_of(field);
	const char *item;
	unsigned kinds = 0;
	size_t len, n = 0;
	char *up;

	while (next_item(&it, &item, &len))
		n += len != 0;
	if (!n) {
		sb_error(p, l->ref, "'%s' has empty socket specs.", l->text);
		return 0;
	}
	it = items_of(field);
	while (next_item(&it, &item, &len)) {
		if (!len)
			continue;
		up = upper_copy(p->arena, item, len);
		if (!strcmp(up, "ANY") || !strcmp(up, "*")) {
			if (n > 1)
				sb_error(p, l->ref,
					 "In '%s', '%s' must be used alone, not combined with other specifiers.",
					 l->text, up);
			else
				kinds = SB_NET_TCP | SB_NET_UDP;
		} else if (!strcmp(up, "TCP")) {
			kinds |= SB_NET_TCP;
		} else if (!strcmp(up, "UDP")) {
			kinds |= SB_NET_UDP;
		} else {
			sb_error(p, l->ref,
				 "'%s' has unknown socket specifier '%s'. Valid specifiers: any, TCP, UDP.",
				 l->text, up);
		}
	}
	return kinds;
}

/* Case-sensitive, as the spec says; "*" anywhere means both. */
static unsigned parse_dirs(const char *field)
{
	struct items it = items_of(field);
	const char *item;
	unsigned dirs = 0;
	size_t len;

	while (next_item(&it, &item, &len)) {
		if (item_is(item, len, "IN"))
			dirs |= SB_NET_IN;
		else if (item_is(item, len, "OUT"))
			dirs |= SB_NET_OUT;
		else if (item_is(item, len, "*"))
			dirs |= SB_NET_IN | SB_NET_OUT;
		else
			return 0;
	}
	return dirs;
}

void sb_parse_net(struct sb_policy *p, const struct sb_parse_opts *opts,
		  const struct sb_line *l)
{
	const char *value = l->value ? l->value : "";
	const char *field[5], *s, *bar;
	struct sb_port_range *ports = NULL;
	struct net_fields f = { 0 };
	size_t n_parts = 1, errors = p->errors.n, i;
	struct sb_addr a;
	unsigned prefix;
	char *network;

	p->any_net_rule = true;
	for (s = value; (s = strchr(s, '|')); s++)
		n_parts++;
	if (n_parts != 5) {
		sb_error(p, l->ref,
			 "'%s' has incorrect number of parts separated by '|'. Expected 5, got %zu. Format: <DENY,ALLOW>|<TCP,UDP list or *>|<ip/mask>, *|<port list>|<IN, OUT>.",
			 l->text, n_parts);
		return;
	}
	for (s = value, i = 0; i < 5; i++) {
		bar = strchr(s, '|');
		field[i] = bar ? sb_arena_strndup(p->arena, s,
						  (size_t)(bar - s))
			       : s;
		s = bar ? bar + 1 : s;
	}

	f.allow = !strcmp(field[0], "ALLOW");
	if (!f.allow && strcmp(field[0], "DENY"))
		sb_error(p, l->ref,
			 "'%s' use an invalid action. Must be 'ALLOW' or 'DENY'.",
			 l->text);
	f.kinds = parse_kinds(p, l, field[1]);
	network = sb_strip(p->arena, field[2], strlen(field[2]));
	if (!*network)
		sb_error(p, l->ref, "In '%s', network part must be set.",
			 l->text);
	f.dirs = parse_dirs(field[4]);
	if (!f.dirs)
		sb_error(p, l->ref, "In '%s', direction is not 'IN' or 'OUT'.",
			 l->text);
	f.self = !strcasecmp(sb_strip(p->arena, field[3], strlen(field[3])),
			     "self");
	if (f.self && (!f.allow || f.kinds != SB_NET_TCP ||
		       f.dirs != SB_NET_OUT))
		sb_error(p, l->ref,
			 "In '%s', port 'self' (the ports this sandbox listens on) is for ALLOW|TCP|...|OUT rules.",
			 l->text);
	else if (!f.self &&
		 sb_ports_parse(p->arena, field[3], &ports, &f.n_ports))
		sb_error(p, l->ref, "In '%s', invalid port list.", l->text);
	f.ports = ports;
	if (p->errors.n != errors)
		return;

	if (!strcmp(network, "*")) {
		a = (struct sb_addr){ .family = AF_INET };
		add_rule(p, l, &f, &a, 0, NULL);
		a = (struct sb_addr){ .family = AF_INET6 };
		add_rule(p, l, &f, &a, 0, NULL);
	} else if (!sb_cidr_parse(network, &a, &prefix)) {
		add_rule(p, l, &f, &a, prefix, NULL);
	} else {
		net_host(p, opts, l, &f, network);
	}
}

void sb_net_finish(struct sb_policy *p)
{
	struct sb_net_rule *tmp;
	size_t i, k = 0;
	int pass;

	if (p->nets.n < 2)
		return;
	tmp = sb_arena_alloc(p->arena, p->nets.n * sizeof(*tmp));
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < p->nets.n; i++)
			if (p->nets.v[i].allow == (pass == 1))
				tmp[k++] = p->nets.v[i];
	memcpy(p->nets.v, tmp, p->nets.n * sizeof(*tmp));
}
