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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		} else if (b[0] == 0x20 && b[1] == 0x02) {
			/* 6to4, 2002:aabb:ccdd::/48: a sit tunnel sends it
			 * to the IPv4 address a.b.c.d (RFC 3056) */
			memcpy(v4.bytes, b + 2, 4);
			a = v4;
		}
	}
	*out = a;
}

size_t sb_addr_destinations(const struct sb_addr *in, unsigned dir,
			    struct sb_addr out[2])
{
	static const struct sb_addr loop4 = { AF_INET, { 127, 0, 0, 1 } };
	static const struct sb_addr loop6 = { AF_INET6, { [15] = 1 } };
	static const uint8_t zero[16], bcast[4] = { 255, 255, 255, 255 };
	struct sb_addr c;

	sb_addr_canonical(in, &c);
	out[0] = c;
	if (!(dir & SB_NET_OUT))
		return 1;
	/* a broadcast or multicast datagram also reaches this host's own
	 * sockets (bound to the wildcard), whatever a rule calls loopback */
	if (c.family == AF_INET6 && c.bytes[0] == 0xff) {
		out[1] = loop6;
		return 2;
	}
	if (c.family == AF_INET &&
	    ((c.bytes[0] & 0xf0) == 0xe0 || !memcmp(c.bytes, bcast, 4))) {
		out[1] = loop4;
		return 2;
	}
	/* connect() and sendto() to the unspecified address reach this host:
	 * the kernel routes 0.0.0.0 to 127.0.0.1 and :: to ::1 */
	if (c.family == AF_INET6 && !memcmp(c.bytes, zero, 16)) {
		out[0] = loop6;
		return 1;
	}
	if (c.family != AF_INET || c.bytes[0] != 0)
		return 1;
	if (!memcmp(c.bytes, zero, 4)) {
		out[0] = loop4;
		return 1;
	}
	/* The rest of 0.0.0.0/8 is unreachable on one kernel and unicast on
	 * another (Linux 5.3): it must be allowed both ways. */
	out[1] = loop4;
	return 2;
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

/* The first rule that matches 'dest', DENY rules first; a DENY rule is
 * also tried against the forms the program wrote ('also'), an ALLOW rule
 * only against the address the kernel will use. */
static const struct sb_net_rule *decide_dest(const struct sb_policy *p,
					     unsigned kind, unsigned dir,
					     const struct sb_addr *dest,
					     const struct sb_addr *also,
					     size_t n_also, uint16_t port)
{
	int pass;
	size_t i, k;

	/* Two passes rather than trusting the order of p->nets, so that a
	 * DENY wins even if sb_net_finish() was not called. */
	for (pass = 0; pass < 2; pass++) {
		bool allow = pass == 1;

		for (i = 0; i < p->nets.n; i++) {
			const struct sb_net_rule *r = &p->nets.v[i];

			if (r->allow != allow || !(r->kinds & kind) ||
			    !(r->dirs & dir) || !port_match(r, port))
				continue;
			if (net_match(r, dest))
				return r;
			for (k = 0; !allow && k < n_also; k++)
				if (net_match(r, &also[k]))
					return r;
		}
	}
	return NULL;
}

const struct sb_net_rule *sb_net_decide(const struct sb_policy *p,
					unsigned kind, unsigned dir,
					const struct sb_addr *addr,
					uint16_t port)
{
	const struct sb_net_rule *r, *first = NULL;
	struct sb_addr dest[2], also[2];
	size_t n, i;

	if (!addr || !addr_bits(addr->family))
		return NULL;
	n = sb_addr_destinations(addr, dir, dest);
	/* Fail closed both ways: a DENY of a form as written (::/0, 0.0.0.0)
	 * still refuses, an ALLOW of it (::/0) does not open the address
	 * the kernel uses behind it. */
	also[0] = *addr;
	sb_addr_canonical(addr, &also[1]);
	for (i = 0; i < n; i++) {
		r = decide_dest(p, kind, dir, &dest[i], also, 2, port);
		if (!r || !r->allow)
			return r;
		if (!first)
			first = r;
	}
	return first;
}

const struct sb_net_rule *sb_net_self_rule(const struct sb_policy *p,
					   unsigned kind, unsigned dir,
					   const struct sb_addr *addr)
{
	const struct sb_net_rule *first = NULL;
	struct sb_addr dest[2];
	size_t i, k, n;

	if (!addr || !addr_bits(addr->family))
		return NULL;
	/* where the kernel connects, as sb_net_decide judges it: all of
	 * the destinations must match */
	n = sb_addr_destinations(addr, dir, dest);
	for (k = 0; k < n; k++) {
		const struct sb_net_rule *m = NULL;

		for (i = 0; i < p->nets.n && !m; i++) {
			const struct sb_net_rule *r = &p->nets.v[i];

			if (r->allow && r->self && (r->kinds & kind) &&
			    (r->dirs & dir) && net_match(r, &dest[k]))
				m = r;
		}
		if (!m)
			return NULL;
		if (!first)
			first = m;
	}
	return first;
}

/* A host name's length, one trailing dot left out. */
static size_t host_len(const char *h)
{
	size_t n = strlen(h);

	return n && h[n - 1] == '.' ? n - 1 : n;
}

static int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

bool sb_host_eq(const char *a, const char *b)
{
	size_t n = host_len(a);

	return n == host_len(b) && sb_mem_ieq(a, b, n);
}

const struct sb_pin *sb_pin_lookup(const struct sb_policy *p,
				   const char *host)
{
	size_t i;

	if (!host)
		return NULL;
	for (i = 0; i < p->pins.n; i++)
		if (p->pins.v[i].host && sb_host_eq(p->pins.v[i].host, host))
			return &p->pins.v[i];
	return NULL;
}

bool sb_net_unresolved(const struct sb_policy *p, const char *host)
{
	size_t i;

	for (i = 0; p && host && i < p->unresolved.n; i++)
		if (sb_host_eq(p->unresolved.v[i], host))
			return true;
	return false;
}

/* One part of an inet_aton address: decimal, 0-prefixed octal or 0x hex,
 * as C writes numbers. The end of the digits, or NULL. */
static const char *aton_part(const char *s, uint32_t *out)
{
	unsigned base = 10, d;
	uint64_t v = 0;
	bool digit = false;

	if (*s < '0' || *s > '9')
		return NULL;
	if (*s == '0') {
		digit = true;
		s++;
		base = 8;
		if (*s == 'x' || *s == 'X') {
			base = 16; /* "0x" needs a digit of its own */
			digit = false;
			s++;
		}
	}
	for (;; s++) {
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (d >= base)
			return NULL;
		v = v * base + d;
		if (v > 0xffffffffu)
			return NULL;
		digit = true;
	}
	if (!digit)
		return NULL;
	*out = (uint32_t)v;
	return s;
}

/* glibc's inet_aton without its tolerance of trailing text, which is what
 * getaddrinfo() takes as a numeric IPv4 host: "127.1", "0x7f.1",
 * "2130706433", "0", "017.0.0.1". */
static bool parse_aton(const char *s, struct sb_addr *out)
{
	uint32_t part[4], v;
	size_t n = 0;

	for (;;) {
		s = aton_part(s, &part[n]);
		if (!s)
			return false;
		n++;
		if (*s != '.')
			break;
		if (n == 4 || part[n - 1] > 0xff)
			return false;
		s++;
	}
	if (*s)
		return false;
	/* the last part fills the bytes the others left */
	if (n > 1 && part[n - 1] >> (8 * (5 - n)))
		return false;
	v = part[n - 1];
	switch (n) {
	case 4:
		v |= part[2] << 8;
		/* fall through */
	case 3:
		v |= part[1] << 16;
		/* fall through */
	case 2:
		v |= part[0] << 24;
		break;
	}
	memset(out, 0, sizeof(*out));
	out->family = AF_INET;
	out->bytes[0] = (uint8_t)(v >> 24);
	out->bytes[1] = (uint8_t)(v >> 16);
	out->bytes[2] = (uint8_t)(v >> 8);
	out->bytes[3] = (uint8_t)v;
	return true;
}

int sb_addr_parse_numeric(const char *s, struct sb_addr *out)
{
	char tmp[INET6_ADDRSTRLEN + 1];
	const char *pct;
	struct sb_addr a = { 0 };
	size_t n;

	if (!s)
		return -EINVAL;
	if (parse_aton(s, out))
		return 0;
	pct = strchr(s, '%');
	n = pct ? (size_t)(pct - s) : strlen(s);
	if (n >= sizeof(tmp) || (pct && !pct[1]))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET6, tmp, a.bytes) != 1)
		return -EINVAL;
	a.family = AF_INET6;
	*out = a;
	return 0;
}

bool sb_net_names_any(const struct sb_policy *p)
{
	size_t i;

	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (r->allow && r->any_host && (r->dirs & SB_NET_OUT) &&
		    r->n_ports)
			return true;
	}
	return false;
}

bool sb_net_allows_abstract(const struct sb_policy *p)
{
	bool all = false;
	size_t i;

	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (!r->allow)
			return false;
		if (r->any_host && !r->self &&
		    r->kinds == (SB_NET_TCP | SB_NET_UDP) &&
		    r->dirs == (SB_NET_IN | SB_NET_OUT) && r->n_ports == 1 &&
		    r->ports[0].lo == 0 && r->ports[0].hi == PORT_MAX)
			all = true;
	}
	return all;
}

bool sb_net_name_allowed(const struct sb_policy *p, const char *host)
{
	return sb_pin_lookup(p, host) || sb_net_names_any(p);
}

bool sb_net_reverse_allowed(const struct sb_policy *p,
			    const struct sb_addr *addr)
{
	struct sb_addr c, pc;
	unsigned bits;
	size_t i, k;

	if (!addr || !addr_bits(addr->family))
		return false;
	if (sb_net_names_any(p))
		return true;
	sb_addr_canonical(addr, &c);
	bits = addr_bits(c.family);
	for (i = 0; i < p->pins.n; i++)
		for (k = 0; k < p->pins.v[i].n_addrs; k++) {
			sb_addr_canonical(&p->pins.v[i].addrs[k], &pc);
			if (pc.family == c.family &&
			    !memcmp(pc.bytes, c.bytes, bits / 8))
				return true;
		}
	for (i = 0; i < p->nets.n; i++) {
		const struct sb_net_rule *r = &p->nets.v[i];

		if (r->allow && r->n_ports && (r->dirs & SB_NET_OUT) &&
		    r->addr.family == c.family &&
		    r->prefix >= bits && !memcmp(r->addr.bytes, c.bytes,
						 bits / 8))
			return true;
	}
	return false;
}

/* ---- DNS queries ---- */

#define DNS_HEADER 12
#define DNS_TYPE_OPT 41

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static bool host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* A question name in plain labels of host name characters (no
 * compression, no dot or other byte inside a label, which would make
 * "a.b" of one label look like two), as text without the final dot. The
 * offset after it, or 0. */
static size_t dns_name(const uint8_t *m, size_t len, size_t at, char *out,
		       size_t size)
{
	size_t o = 0, l, i;

	for (;;) {
		if (at >= len)
			return 0;
		l = m[at++];
		if (l == 0)
			break;
		if (l > 63 || at + l > len || o + l + 2 > size)
			return 0;
		if (o)
			out[o++] = '.';
		for (i = 0; i < l; i++) {
			uint8_t c = m[at + i];

			if (!host_char(c))
				return 0;
			out[o++] = (char)c;
		}
		at += l;
	}
	out[o] = '\0';
	return o ? at : 0;
}

int sb_dns_query_judge(const struct sb_policy *p, const void *msg,
		       size_t len, char *name, size_t size)
{
	const uint8_t *m = msg;
	size_t at;

	if (size)
		snprintf(name, size, "?");
	if (!msg || len < DNS_HEADER || size < 256)
		return -EINVAL;
	/* a standard query (QR 0, opcode 0) of one question and at most an
	 * empty EDNS record: nothing else to carry data in */
	if ((m[2] & 0xf8) || get16(m + 4) != 1 || get16(m + 6) ||
	    get16(m + 8) || get16(m + 10) > 1)
		return -EINVAL;
	at = dns_name(m, len, DNS_HEADER, name, size);
	if (!at || at + 4 > len)
		return -EINVAL;
	at += 4; /* QTYPE, QCLASS: any */
	if (get16(m + 10)) {
		/* OPT: the root name, type 41, class, TTL, RDLENGTH 0 */
		if (at + 11 != len || m[at] != 0 ||
		    get16(m + at + 1) != DNS_TYPE_OPT || get16(m + at + 9))
			return -EINVAL;
		at += 11;
	}
	if (at != len)
		return -EINVAL;
	return sb_net_name_allowed(p, name) ? 1 : 0;
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

		if (!host_char((uint8_t)c) && c != '.' && c != '*')
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

static struct sb_net_rule *add_rule(struct sb_policy *p,
				    const struct sb_line *l,
				    const struct net_fields *f,
				    const struct sb_addr *a, unsigned prefix,
				    const char *host)
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
	return r;
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
	if (f->allow && st == SB_RESOLVE_NONAME && host_syntax_ok(host) &&
	    !strchr(host, '*') && !sb_net_unresolved(p, host))
		*SB_VEC_PUSH(p->arena, p->unresolved) =
			host_key(p->arena, host);
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
	size_t n_parts = 1, errors = p->errors.n + p->errors_dropped, i;
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
	if (f.self && (!f.allow || f.dirs != SB_NET_OUT))
		sb_error(p, l->ref,
			 "In '%s', port 'self' (the ports this sandbox listens on) is for ALLOW|...|OUT rules.",
			 l->text);
	else if (!f.self &&
		 sb_ports_parse(p->arena, field[3], &ports, &f.n_ports))
		sb_error(p, l->ref, "In '%s', invalid port list.", l->text);
	f.ports = ports;
	if (p->errors.n + p->errors_dropped != errors)
		return;

	if (!strcmp(network, "*")) {
		a = (struct sb_addr){ .family = AF_INET };
		add_rule(p, l, &f, &a, 0, NULL)->any_host = true;
		a = (struct sb_addr){ .family = AF_INET6 };
		add_rule(p, l, &f, &a, 0, NULL)->any_host = true;
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
