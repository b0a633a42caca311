/* prescan.c - the opcode pre-scan of the partial-mode result channel.
 *
 * It owns the opcode table of the result channel (which opcodes pass, the
 * shape of their arguments, which ones are refused by name), the table of
 * data-only value classes with the argument shapes each one may be called
 * with, and the walk that enforces both and the budgets of one stream. It
 * runs in the trusted parent on bytes a hostile worker chose, before the
 * restricted unpickler (_unpickle.py) decodes them, so it must not execute,
 * print or exit; libFuzzer feeds it (tests/fuzz/fuzz_prescan.c). It also
 * says which streams are plain data (the flags of sb_prescan_flags()), for
 * the parent's shorter way to decode them. The
 * contract it enforces is stated in docs/security-model.md ("Partial mode:
 * the result channel").
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prescan.h"

enum op_kind {
	OP_BAD = 0, /* no pickle opcode: the zero of the table */
	OP_REFUSED,
	OP_PLAIN,
	OP_MARK,
	OP_MARK_USER, /* consumes the topmost MARK */
	OP_MEMO_PUT,
	OP_MEMO_GET,
	OP_STOP,
};

/* arg: 0 none, 1/2/4/8 fixed bytes, -1/-4/-8 a little-endian length of
 * that many bytes then the data. */
struct op {
	signed char arg;
	unsigned char kind;
	const char *name; /* of a refused opcode */
};

#define PLAIN(a) { (a), OP_PLAIN, NULL }
#define REFUSED(n) { 0, OP_REFUSED, (n) }

static const struct op op_table[256] = {
	['('] = { 0, OP_MARK, NULL },
	['.'] = { 0, OP_STOP, NULL },
	['0'] = PLAIN(0),
	['1'] = { 0, OP_MARK_USER, NULL },
	['2'] = PLAIN(0),
	['N'] = PLAIN(0),
	['a'] = PLAIN(0),
	['e'] = { 0, OP_MARK_USER, NULL },
	['b'] = PLAIN(0),
	['d'] = { 0, OP_MARK_USER, NULL },
	['}'] = PLAIN(0),
	[']'] = PLAIN(0),
	[')'] = PLAIN(0),
	['l'] = { 0, OP_MARK_USER, NULL },
	['R'] = PLAIN(0),
	['s'] = PLAIN(0),
	['u'] = { 0, OP_MARK_USER, NULL },
	['t'] = { 0, OP_MARK_USER, NULL },
	[0x81] = PLAIN(0), /* NEWOBJ */
	[0x85] = PLAIN(0), /* TUPLE1 */
	[0x86] = PLAIN(0),
	[0x87] = PLAIN(0),
	[0x88] = PLAIN(0), /* NEWTRUE */
	[0x89] = PLAIN(0),
	[0x8f] = PLAIN(0), /* EMPTY_SET */
	[0x90] = { 0, OP_MARK_USER, NULL }, /* ADDITEMS */
	[0x91] = { 0, OP_MARK_USER, NULL }, /* FROZENSET */
	[0x92] = PLAIN(0), /* NEWOBJ_EX */
	[0x93] = PLAIN(0), /* STACK_GLOBAL */
	[0x94] = { 0, OP_MEMO_PUT, NULL }, /* MEMOIZE */
	['K'] = PLAIN(1),
	['h'] = { 1, OP_MEMO_GET, NULL },
	['q'] = { 1, OP_MEMO_PUT, NULL },
	[0x80] = PLAIN(1), /* PROTO */
	['M'] = PLAIN(2),
	['J'] = PLAIN(4),
	['j'] = { 4, OP_MEMO_GET, NULL },
	['r'] = { 4, OP_MEMO_PUT, NULL },
	['G'] = PLAIN(8),
	[0x95] = PLAIN(8), /* FRAME */
	['C'] = PLAIN(-1),
	[0x8c] = PLAIN(-1), /* SHORT_BINUNICODE */
	[0x8a] = PLAIN(-1), /* LONG1 */
	['X'] = PLAIN(-4),
	['B'] = PLAIN(-4),
	[0x8b] = PLAIN(-4), /* LONG4 */
	[0x8d] = PLAIN(-8), /* BINUNICODE8 */
	[0x8e] = PLAIN(-8), /* BINBYTES8 */
	[0x96] = PLAIN(-8), /* BYTEARRAY8 */
	['c'] = REFUSED("GLOBAL"),
	['i'] = REFUSED("INST"),
	['o'] = REFUSED("OBJ"),
	[0x82] = REFUSED("EXT1"),
	[0x83] = REFUSED("EXT2"),
	[0x84] = REFUSED("EXT4"),
	['P'] = REFUSED("PERSID"),
	['Q'] = REFUSED("BINPERSID"),
	[0x97] = REFUSED("NEXT_BUFFER"),
	[0x98] = REFUSED("READONLY_BUFFER"),
};

/* The opcodes of a stream that the parent may decode the short way
 * (SB_PRESCAN_NO_CLASS, SB_PRESCAN_TREE in prescan.h), listed one by one:
 * an opcode missing here only loses the short way. NC: it names no class
 * and calls nothing (no STACK_GLOBAL, REDUCE, NEWOBJ, NEWOBJ_EX, BUILD),
 * so find_class and persistent_load never run. NR: it brings back no
 * second reference to an object (no memo GET, no DUP): each value the
 * stream makes is pushed once and consumed once. */
#define NC 1
#define NR 2

static const unsigned char op_short[256] = {
	['('] = NC | NR, ['.'] = NC | NR, ['0'] = NC | NR, ['1'] = NC | NR,
	['N'] = NC | NR, ['a'] = NC | NR, ['e'] = NC | NR, ['}'] = NC | NR,
	[']'] = NC | NR, [')'] = NC | NR, ['l'] = NC | NR, ['s'] = NC | NR,
	['u'] = NC | NR, ['t'] = NC | NR, ['d'] = NC | NR,
	[0x85] = NC | NR, [0x86] = NC | NR, [0x87] = NC | NR, /* TUPLE1-3 */
	[0x88] = NC | NR, [0x89] = NC | NR, /* NEWTRUE, NEWFALSE */
	[0x8f] = NC | NR, [0x90] = NC | NR, /* EMPTY_SET, ADDITEMS */
	[0x91] = NC | NR, /* FROZENSET */
	[0x94] = NC | NR, ['q'] = NC | NR, ['r'] = NC | NR, /* memo PUTs */
	[0x80] = NC | NR, [0x95] = NC | NR, /* PROTO, FRAME */
	['K'] = NC | NR, ['M'] = NC | NR, ['J'] = NC | NR, ['G'] = NC | NR,
	[0x8a] = NC | NR, [0x8b] = NC | NR, /* LONG1, LONG4 */
	['X'] = NC | NR, [0x8c] = NC | NR, [0x8d] = NC | NR, /* str */
	['C'] = NC | NR, ['B'] = NC | NR, [0x8e] = NC | NR, /* bytes */
	[0x96] = NC | NR, /* BYTEARRAY8 */
	['h'] = NC, ['j'] = NC, ['2'] = NC, /* memo GETs, DUP */
};

/* ---- the data-only table ---- */

enum { C_BUILD = 1, C_SETITEMS = 2, C_APPENDS = 4 };

/* call: the argument shapes REDUCE may pass, alternatives split by '|';
 * "*" is any number of str. newobj: the same for NEWOBJ (NULL: refused).
 * Letters (shape_of): N None, B bool, i int of up to 8 bytes, I up to 16,
 * L up to 512, H longer, f float, s str, d a str of digits, signs and '/',
 * b bytes, A bytearray, T tuple, l list, D dict, S set, F frozenset, G a
 * class, O an instance, z a timedelta, Z a timezone. In a pattern, n is a
 * number (i, I, L or f) and x is i or N. No pattern takes a range, a class
 * or another lazy object, and no int is a size: what a call consumes is
 * what the stream spelled out, and is charged to max_work. */
struct cls {
	const char *module, *name;
	const char *call, *newobj;
	unsigned flags;
	char letter;
};

#define PATH(m, n) { (m), (n), "*", NULL, 0, 'O' }

static const struct cls classes[] = {
	{ "builtins", "complex", "nn|n|", NULL, 0, 'O' },
	{ "builtins", "bytearray", "b|", NULL, 0, 'A' },
	{ "builtins", "range", "i|ii|iii", NULL, 0, 'O' },
	{ "builtins", "set", "l|", NULL, 0, 'S' },
	{ "builtins", "frozenset", "l|", NULL, 0, 'F' },
	{ "collections", "OrderedDict", "", NULL, C_SETITEMS, 'O' },
	{ "collections", "Counter", "D|", NULL, 0, 'O' },
	{ "collections", "deque", "T|Tx|l|lx", NULL, C_APPENDS, 'O' },
	PATH("pathlib", "PurePath"),
	PATH("pathlib", "PurePosixPath"),
	PATH("pathlib", "PureWindowsPath"),
	PATH("pathlib", "Path"),
	PATH("pathlib", "PosixPath"),
	PATH("pathlib", "WindowsPath"),
	PATH("pathlib._local", "PurePosixPath"),
	PATH("pathlib._local", "PosixPath"),
	PATH("pathlib._local", "PureWindowsPath"),
	PATH("pathlib._local", "WindowsPath"),
	PATH("pathlib._local", "Path"),
	{ "datetime", "date", "b", NULL, 0, 'O' },
	{ "datetime", "time", "b|bZ", NULL, 0, 'O' },
	{ "datetime", "datetime", "b|bZ", NULL, 0, 'O' },
	{ "datetime", "timedelta", "iii", NULL, 0, 'z' },
	{ "datetime", "timezone", "z|zs", NULL, 0, 'Z' },
	{ "time", "struct_time", "TD|T", NULL, 0, 'O' },
	{ "decimal", "Decimal", "s", NULL, 0, 'O' },
	{ "fractions", "Fraction", "LL|d", NULL, 0, 'O' },
	{ "uuid", "UUID", NULL, "", C_BUILD, 'O' },
	{ "ipaddress", "IPv4Address", "i", NULL, 0, 'O' },
	{ "ipaddress", "IPv6Address", "I|s", NULL, 0, 'O' },
	{ "ipaddress", "IPv4Network", "s", NULL, 0, 'O' },
	{ "ipaddress", "IPv6Network", "s", NULL, 0, 'O' },
	{ "ipaddress", "IPv4Interface", "s", NULL, 0, 'O' },
	{ "ipaddress", "IPv6Interface", "s", NULL, 0, 'O' },
};

#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

bool sb_prescan_class(size_t i, const char **module, const char **name)
{
	if (i >= NCLASSES)
		return false;
	*module = classes[i].module;
	*name = classes[i].name;
	return true;
}

/* ---- the symbolic machine of data-only mode ---- */

enum kind {
	K_MARK,
	K_NONE,
	K_BOOL,
	K_INT,
	K_FLOAT,
	K_STR,
	K_BYTES,
	K_BYTEARRAY,
	K_TUPLE, /* from here on the value has an objs[] record */
	K_LIST,
	K_DICT,
	K_SET,
	K_FROZENSET,
	K_INST,
	K_GLOBAL, /* a class: only ever called */
};

#define NO_OBJ UINT32_MAX
/* CPython's numeric hash (Python/pyhash.c, Objects/longobject.c) and
 * tuple hash (Objects/tupleobject.c, 3.8 and later) */
#define HASH_BITS 61
#define HASH_MODULUS ((UINT64_C(1) << HASH_BITS) - 1)
#define XXPRIME_1 UINT64_C(11400714785074694791)
#define XXPRIME_2 UINT64_C(14029467366897019727)
#define XXPRIME_5 UINT64_C(2870177450012600261)
#define TUPLE_SIG 8
#define TUPLE_ELEMS 4

/* How the parent's hash() of a value can be known from the stream:
 * HK_OPAQUE, predictable but not computed here (None, NaN, frozensets,
 * instances, tuples of them): any two may collide; HK_SEEDED, randomised
 * by PYTHONHASHSEED (str, bytes, a tuple holding one) or unhashable;
 * HK_VAL, the hash is hv (ints, bools, floats, tuples of them: CPython's
 * numeric hash is the value mod 2^61-1, whatever the seed). */
enum { HK_OPAQUE = 0, HK_SEEDED, HK_VAL };

struct ent {
	unsigned char kind;
	unsigned char cls;
	unsigned char hk; /* scalars: HK_* (objects keep theirs in objs[]) */
	uint32_t obj;  /* objs[] index; for K_MARK the previous mark */
	uint64_t size; /* K_INT bytes; K_STR, K_BYTES, K_BYTEARRAY length */
	size_t off;    /* K_STR: where its bytes are in the stream */
	uint64_t hv;   /* hk == HK_VAL: the hash */
};

struct obj {
	uint64_t count; /* elements */
	uint64_t cost;  /* tuple: bytes of its str and bytes elements */
	/* tuple, instance: the work of hash() on it, its tuples expanded
	 * (shared ones once per use: hash() caches no tuple's); list: that
	 * of its elements, which set() and frozenset() hash */
	uint64_t hcost;
	/* every object: how deep it nests (its own level is 1), the depth
	 * a recursive dealloc, repr(), == or hash() goes down in C */
	uint64_t hdepth;
	uint64_t off0, size0; /* tuple: where its first element, a str, is */
	uint64_t weight; /* instance: what a reference to it expands to */
	/* a hashed collection (or a list set() may hash): the probes its
	 * keys' collisions cost, besides those of equal HK_VAL hashes, which
	 * are counted at the end (coll_work); npred: its keys that are not
	 * HK_SEEDED, nopaque: the HK_OPAQUE ones among them */
	uint64_t ccost, npred, nopaque;
	uint64_t mult;   /* how many times its keys are hashed into a table */
	uint64_t thv;    /* tuple: the hash accumulator of its elements */
	uint32_t elem[TUPLE_ELEMS]; /* tuple: objs[] of its first elements */
	char sig[TUPLE_SIG];        /* tuple: letters of its first elements */
	unsigned char thk; /* tuple: HK_* of the tuple so far */
	bool all_str;
	bool str0;       /* tuple: its first element is a str */
	bool bytes0;     /* tuple: its first element is bytes */
	bool built;
	/* it is an element of another object (or a call's argument, a
	 * BUILD state): nothing may be added to it any more, so the depth
	 * and collisions recorded where it was used are final */
	bool nested;
	/* dict: holds only a UUID's state, {'int': int, 'is_safe': None or
	 * a small int}, with its 'int' */
	bool uuid_state, uuid_int;
};

/* A HK_VAL key hashed into the collection objs[coll]. */
struct ins {
	uint64_t hv;
	uint32_t coll;
};

struct sim {
	const unsigned char *data;
	const struct sb_prescan_limits *lim;
	struct sb_prescan_error *err;
	struct ent *stack, *memo;
	struct obj *objs;
	struct ins *ins;
	size_t depth, cap, nmemo, nobjs, maxmemo, maxobjs, nins, capins;
	uint32_t top_mark;
	long long work;
};

__attribute__((format(printf, 3, 4))) static int
fail(struct sb_prescan_error *err, bool garbled, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	err->garbled = garbled;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t read_le(const unsigned char *p, unsigned size)
{
	uint64_t v = 0;

	while (size--)
		v = v << 8 | p[size];
	return v;
}

static int charge(struct sim *s, uint64_t units)
{
	if (units > (uint64_t)INT64_MAX - (uint64_t)s->work ||
	    s->work + (long long)units > s->lim->max_work)
		return fail(s->err, false,
			    "decoding the payload needs more than %lld units "
			    "of work (max_result=)",
			    s->lim->max_work);
	s->work += (long long)units;
	return 0;
}

static int push(struct sim *s, struct ent e)
{
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct ent *n = realloc(s->stack, cap * sizeof(*n));

		if (!n)
			return fail(s->err, false, "out of memory");
		s->stack = n;
		s->cap = cap;
	}
	s->stack[s->depth++] = e;
	return 0;
}

static int new_obj(struct sim *s, unsigned char kind, unsigned char cls)
{
	struct ent e = { .kind = kind, .cls = cls };
	struct obj *o;

	/* pass one counted the opcodes that make one: cannot overflow */
	if (s->nobjs >= s->maxobjs)
		return fail(s->err, true, "object table overflow");
	o = &s->objs[s->nobjs];
	memset(o, 0, sizeof(*o));
	memset(o->elem, 0xff, sizeof(o->elem));
	o->all_str = true;
	o->hcost = 1;
	o->hdepth = 1;
	o->thk = HK_VAL;
	o->thv = XXPRIME_5;
	o->uuid_state = kind == K_DICT;
	/* the keys of these are hashed into a table once they are added */
	o->mult = kind == K_DICT || kind == K_SET || kind == K_FROZENSET;
	e.obj = (uint32_t)s->nobjs++;
	return push(s, e);
}

/* The entry 'back' below the top, which must be a value: a MARK there is
 * an underflow (pickle's fence), a class is refused. */
static int top_value(struct sim *s, size_t back, struct ent **out)
{
	struct ent *e;

	if (s->depth <= back || s->stack[s->depth - 1 - back].kind == K_MARK)
		return fail(s->err, true, "stack underflow in the pickle "
					  "stream");
	e = &s->stack[s->depth - 1 - back];
	if (e->kind == K_GLOBAL)
		return fail(s->err, false,
			    "class %s.%s is refused as a value: "
			    "remote-result-mode is data-only (values only)",
			    classes[e->cls].module, classes[e->cls].name);
	*out = e;
	return 0;
}

/* The two entries on top, neither a MARK (classes are the caller's). */
static int top_two(struct sim *s)
{
	if (s->depth < 2 || s->stack[s->depth - 1].kind == K_MARK ||
	    s->stack[s->depth - 2].kind == K_MARK)
		return fail(s->err, true, "stack underflow in the pickle "
					  "stream");
	return 0;
}

static char shape_of(const struct ent *e)
{
	switch (e->kind) {
	case K_NONE:
		return 'N';
	case K_BOOL:
		return 'B';
	case K_INT:
		return e->size <= 8 ? 'i' : e->size <= 16 ? 'I' :
		       e->size <= 512 ? 'L' : 'H';
	case K_FLOAT:
		return 'f';
	case K_STR:
		return e->cls ? 'd' : 's';
	case K_BYTES:
		return 'b';
	case K_BYTEARRAY:
		return 'A';
	case K_TUPLE:
		return 'T';
	case K_LIST:
		return 'l';
	case K_DICT:
		return 'D';
	case K_SET:
		return 'S';
	case K_FROZENSET:
		return 'F';
	case K_INST:
		return classes[e->cls].letter;
	default:
		return '?';
	}
}

static bool fits(char pat, char got)
{
	switch (pat) {
	case 'n':
		return got == 'i' || got == 'I' || got == 'L' || got == 'f';
	case 'I':
		return got == 'i' || got == 'I';
	case 'L':
		return got == 'i' || got == 'I' || got == 'L';
	case 's':
		return got == 's' || got == 'd';
	case 'x':
		return got == 'i' || got == 'N';
	default:
		return pat == got;
	}
}

/* Does the tuple o match one alternative of the patterns? */
static bool args_fit(const char *patterns, const struct obj *o)
{
	const char *alt = patterns;

	for (;;) {
		size_t n = strcspn(alt, "|"), i;

		if (n == 1 && alt[0] == '*') {
			if (o->all_str)
				return true;
		} else if (o->count == n && n <= TUPLE_SIG) {
			for (i = 0; i < n && fits(alt[i], o->sig[i]); i++)
				;
			if (i == n)
				return true;
		}
		if (!alt[n])
			return false;
		alt += n + 1;
	}
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* What hashing the value e costs, and how deep hash() recurses into it:
 * CPython's tuple hash is neither cached nor guarded against recursion, so
 * a DAG of shared tuples costs 2^depth and a deep chain overflows the C
 * stack (a crash of the parent). */
static uint64_t ent_hcost(const struct obj *objs, const struct ent *e)
{
	return e->kind == K_TUPLE || e->kind == K_INST ? objs[e->obj].hcost :
							 1;
}

static bool has_obj(const struct ent *e)
{
	return e->kind >= K_TUPLE && e->kind != K_GLOBAL;
}

/* How deep the value e nests: what deque's dealloc (no trashcan), a
 * struct_time's hidden fields, repr(), == and hash() recurse through. */
static uint64_t ent_hdepth(const struct obj *objs, const struct ent *e)
{
	return has_obj(e) ? objs[e->obj].hdepth : 0;
}

/* x * 2^k mod 2^61-1, for x < 2^61 and k < 61 */
static uint64_t rotl61(uint64_t x, unsigned k)
{
	return k ? ((x << k) & HASH_MODULUS) | x >> (HASH_BITS - k) : x;
}

/* hash() of the int whose n bytes (little-endian, two's complement when
 * 'sign') are at p: its magnitude mod 2^61-1, negated, -1 made -2 */
static uint64_t int_hash(const unsigned char *p, uint64_t n, bool sign)
{
	bool neg = sign && n && p[n - 1] & 0x80;
	uint64_t x = 0, i = n;

	/* a negative v: |v| = ~v + 1, ~v read byte by byte */
	while (i--) {
		x = rotl61(x, 8) + (neg ? 0xffu ^ p[i] : p[i]);
		if (x >= HASH_MODULUS)
			x -= HASH_MODULUS;
	}
	if (neg && ++x == HASH_MODULUS)
		x = 0;
	if (neg)
		x = -x;
	return x == UINT64_MAX ? (uint64_t)-2 : x;
}

/* hash() of the double whose 8 big-endian bytes are at p; false for a
 * NaN (its hash is 0 before 3.10, its address after) */
static bool float_hash(const unsigned char *p, uint64_t *hv)
{
	uint64_t bits = 0, m, x;
	unsigned i;
	int e;

	for (i = 0; i < 8; i++)
		bits = bits << 8 | p[i];
	e = (int)(bits >> 52 & 0x7ff);
	m = bits & ((UINT64_C(1) << 52) - 1);
	if (e == 0x7ff) {
		if (m)
			return false;
		*hv = bits >> 63 ? (uint64_t)-314159 : 314159;
		return true;
	}
	/* the value is m * 2^e exactly; 2^61 = 1 mod 2^61-1 */
	if (e)
		m |= UINT64_C(1) << 52;
	else
		e = 1;
	e -= 1075;
	x = rotl61(m, (unsigned)(((e % HASH_BITS) + HASH_BITS) % HASH_BITS));
	if (x >= HASH_MODULUS)
		x -= HASH_MODULUS;
	if (bits >> 63)
		x = -x;
	*hv = x == UINT64_MAX ? (uint64_t)-2 : x;
	return true;
}

/* How the parent's hash() of e can be known (HK_*), and the hash. */
static unsigned char ent_hash(const struct obj *objs, const struct ent *e,
			      uint64_t *hv)
{
	const struct obj *o;
	uint64_t acc;

	switch (e->kind) {
	case K_TUPLE:
		o = &objs[e->obj];
		if (o->thk != HK_VAL)
			return o->thk;
		acc = o->thv + (o->count ^ (XXPRIME_5 ^ UINT64_C(3527539)));
		*hv = acc == UINT64_MAX ? UINT64_C(1546275796) : acc;
		return HK_VAL;
	case K_LIST:
	case K_DICT:
	case K_SET:
	case K_BYTEARRAY:
		return HK_SEEDED; /* unhashable: the decode fails */
	case K_FROZENSET:
	case K_INST:
		return HK_OPAQUE;
	default:
		*hv = e->hv;
		return e->hk;
	}
}

/* The value e is a key hashed into (or, a list, an item set() may hash
 * into) the collection objs[coll]: two keys of one hash cost the second
 * a probe past the first, so equal HK_VAL hashes are counted at the end
 * (coll_work), and an HK_OPAQUE key may collide with any key that is not
 * HK_SEEDED. */
static int add_key(struct sim *s, uint32_t coll, const struct ent *e)
{
	struct obj *c = &s->objs[coll];
	uint64_t hv = 0;

	switch (ent_hash(s->objs, e, &hv)) {
	case HK_VAL:
		if (s->nins == s->capins) {
			size_t cap = s->capins ? s->capins * 2 : 256;
			struct ins *n = realloc(s->ins, cap * sizeof(*n));

			if (!n)
				return fail(s->err, false, "out of memory");
			s->ins = n;
			s->capins = cap;
		}
		s->ins[s->nins++] = (struct ins){ .hv = hv, .coll = coll };
		c->ccost = sat_add(c->ccost, c->nopaque);
		c->npred++;
		return 0;
	case HK_OPAQUE:
		c->ccost = sat_add(c->ccost, c->npred);
		c->nopaque++;
		c->npred++;
		return 0;
	default:
		return 0;
	}
}

static int by_coll_hash(const void *a, const void *b)
{
	const struct ins *x = a, *y = b;

	if (x->coll != y->coll)
		return x->coll < y->coll ? -1 : 1;
	return x->hv < y->hv ? -1 : x->hv > y->hv;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* The probes the parent's dicts and sets spend on colliding keys: c keys
 * of one hash in one table cost c(c-1)/2, each time the table is made
 * (a list's items each time set() takes it, a dict's keys once more for
 * Counter()). All ints k*(2^61-1) hash to 0 whatever PYTHONHASHSEED. */
static uint64_t coll_work(struct sim *s)
{
	uint64_t sum = 0, run;
	size_t i, j;

	for (i = 0; i < s->nobjs; i++)
		sum = sat_add(sum, sat_mul(s->objs[i].ccost, s->objs[i].mult));
	if (s->nins)
		qsort(s->ins, s->nins, sizeof(*s->ins), by_coll_hash);
	for (i = 0; i < s->nins; i = j) {
		for (j = i + 1; j < s->nins && s->ins[j].coll == s->ins[i].coll &&
				s->ins[j].hv == s->ins[i].hv; j++)
			;
		run = j - i;
		sum = sat_add(sum, sat_mul(run * (run - 1) / 2,
					   s->objs[s->ins[i].coll].mult));
	}
	return sum;
}

/* The magnitude of the exponent of a Decimal spelled data[0, n): the
 * digits a format such as '{:f}' writes out ('1e999999999' is a GB). */
static uint64_t decimal_exponent(const unsigned char *data, uint64_t n)
{
	uint64_t i = n, v = 0;

	while (i && data[i - 1] != 'e' && data[i - 1] != 'E')
		i--;
	for (; i && i < n; i++) {
		if (data[i] >= '0' && data[i] <= '9')
			v = v > (UINT64_MAX - 9) / 10 ? UINT64_MAX :
			    v * 10 + (data[i] - '0');
		else if (data[i] != '_' && data[i] != '+' && data[i] != '-' &&
			 data[i] != ' ')
			break;
	}
	return v;
}

/* The value e becomes an element of the object o: o nests one level
 * more than e, and e can no longer change. */
static void adopt(struct sim *s, struct obj *o, const struct ent *e)
{
	uint64_t d = ent_hdepth(s->objs, e) + 1;

	if (d > o->hdepth)
		o->hdepth = d;
	if (has_obj(e))
		s->objs[e->obj].nested = true;
}

static bool ascii_only(const unsigned char *p, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i] & 0x80)
			return false;
	return true;
}

/* Record a value as the next element of the tuple o. */
static void tuple_add(struct sim *s, struct obj *o, const struct ent *e)
{
	const struct obj *objs = s->objs;
	uint64_t hv = 0;
	unsigned char hk = ent_hash(objs, e, &hv);

	if (o->count == 0 && (e->kind == K_STR || e->kind == K_BYTES)) {
		o->str0 = e->kind == K_STR;
		o->bytes0 = e->kind == K_BYTES;
		o->off0 = e->off;
		o->size0 = e->size;
	}
	if (hk == HK_SEEDED || o->thk == HK_SEEDED)
		o->thk = HK_SEEDED;
	else if (hk == HK_OPAQUE || o->thk == HK_OPAQUE)
		o->thk = HK_OPAQUE;
	else {
		uint64_t acc = o->thv + hv * XXPRIME_2;

		o->thv = (acc << 31 | acc >> 33) * XXPRIME_1;
	}

	o->hcost = sat_add(o->hcost, ent_hcost(objs, e));
	adopt(s, o, e);
	if (o->count < TUPLE_SIG)
		o->sig[o->count] = shape_of(e);
	if (o->count < TUPLE_ELEMS && e->kind >= K_TUPLE)
		o->elem[o->count] = e->obj;
	if (e->kind != K_STR)
		o->all_str = false;
	if (e->kind == K_STR || e->kind == K_BYTES ||
	    (e->kind == K_INT && e->size > 8))
		o->cost = sat_add(o->cost, e->size);
	o->count++;
}

/* Pop the n values above the topmost mark (n counted by the caller), and
 * the mark; into the tuple 'into' when it is not NULL. */
static int pop_mark(struct sim *s, struct obj *into)
{
	size_t mark = s->top_mark, i;

	if (mark == NO_OBJ)
		return fail(s->err, true, "unbalanced MARK in the pickle "
					  "stream");
	for (i = mark + 1; i < s->depth; i++) {
		if (s->stack[i].kind == K_GLOBAL)
			return fail(s->err, false,
				    "class %s.%s is refused as a value: "
				    "remote-result-mode is data-only (values "
				    "only)",
				    classes[s->stack[i].cls].module,
				    classes[s->stack[i].cls].name);
		if (into)
			tuple_add(s, into, &s->stack[i]);
	}
	s->top_mark = s->stack[mark].obj;
	s->depth = mark;
	return 0;
}

static size_t items_above_mark(const struct sim *s)
{
	return s->top_mark == NO_OBJ ? 0 : s->depth - s->top_mark - 1;
}

/* The hash() work of the stack entries from, from + step, ... below to. */
static uint64_t hash_work(const struct sim *s, size_t from, size_t to,
			  size_t step)
{
	uint64_t sum = 0;

	for (; from < to; from += step)
		sum = sat_add(sum, ent_hcost(s->objs, &s->stack[from]));
	return sum;
}

/* A tuple (or an instance) just made: hash() on it in the parent, later,
 * must stay within the budgets too. */
static int hash_bounded(struct sim *s, const struct obj *o)
{
	if (o->hdepth > (uint64_t)s->lim->max_depth)
		return fail(s->err, false,
			    "values nested deeper than %lld are refused: "
			    "remote-result-mode is data-only",
			    s->lim->max_depth);
	if (o->hcost > (uint64_t)s->lim->max_work)
		return fail(s->err, false,
			    "a tuple that expands to more than %lld "
			    "elements is refused: remote-result-mode is "
			    "data-only",
			    s->lim->max_work);
	return 0;
}

/* Any object: deque's dealloc has no trashcan, struct_time's hidden
 * fields and the arguments of an instance nest as well as tuples do. */
static int depth_bounded(struct sim *s, const struct obj *o)
{
	if (o->hdepth > (uint64_t)s->lim->max_depth)
		return fail(s->err, false,
			    "values nested deeper than %lld are refused: "
			    "remote-result-mode is data-only",
			    s->lim->max_depth);
	return 0;
}

/* The item k: v of the dict o: does o stay a UUID's state, as
 * UUID.__getstate__ writes it? (BUILD hands it to UUID.__setstate__,
 * which calls SafeUUID(is_safe): a container there is formatted whole in
 * the error.) */
static void uuid_item(const struct sim *s, struct obj *o,
		      const struct ent *k, const struct ent *v)
{
	if (!v || k->kind != K_STR) {
		o->uuid_state = false;
	} else if (k->size == 3 && !memcmp(s->data + k->off, "int", 3) &&
		   v->kind == K_INT && v->size <= 17) {
		o->uuid_int = true;
	} else if (k->size == 7 && !memcmp(s->data + k->off, "is_safe", 7) &&
		   (v->kind == K_NONE ||
		    /* SafeUUID's 0 and -1 (whose hash is -2) */
		    (v->kind == K_INT && v->size <= 8 &&
		     (v->hv == 0 || v->hv == (uint64_t)-2)))) {
		/* is_safe */
	} else {
		o->uuid_state = false;
	}
}

static int refuse_target(struct sim *s, const char *opname,
			 const struct ent *t)
{
	if (t->kind == K_INST || t->kind == K_GLOBAL)
		return fail(s->err, false,
			    "%s on a %s.%s is refused: remote-result-mode is "
			    "data-only (it changes only containers the "
			    "stream built)",
			    opname, classes[t->cls].module,
			    classes[t->cls].name);
	return fail(s->err, false,
		    "%s on a value that is no fresh container is refused: "
		    "remote-result-mode is data-only",
		    opname);
}

/* SETITEM(S), APPEND(S), ADDITEMS: the target below the n items must be a
 * container of 'kind' the stream built, or an instance of a class with
 * 'flag' (OrderedDict, deque) that a call of this stream just made. */
static int fill(struct sim *s, const char *opname, unsigned char kind,
		unsigned flag, size_t n, bool marked)
{
	struct ent *t, *v;
	struct obj *o;
	size_t ti, i, j;

	if (marked && s->top_mark == NO_OBJ)
		return fail(s->err, true, "unbalanced MARK in the pickle "
					  "stream");
	if (!marked && s->depth < n)
		return fail(s->err, true, "stack underflow in the pickle "
					  "stream");
	/* the target sits right below the mark, or below the n values */
	ti = marked ? s->top_mark : s->depth - n;
	if (ti == 0 || s->stack[ti - 1].kind == K_MARK)
		return fail(s->err, true, "stack underflow in the pickle "
					  "stream");
	t = &s->stack[ti - 1];
	if (t->kind == K_GLOBAL || !(t->kind == kind ||
	    (t->kind == K_INST && (classes[t->cls].flags & flag))))
		return refuse_target(s, opname, t);
	o = &s->objs[t->obj];
	/* an object inside another is final: its depth and its keys were
	 * counted where it was used (a deque made shallow, appended to
	 * another, then deepened would hide a chain of any depth) */
	if (o->nested)
		return fail(s->err, false,
			    "%s on a value that is inside another one is "
			    "refused: remote-result-mode is data-only",
			    opname);
	/* the keys of a dict and the items of a set are hashed now; those of
	 * a list when set() or frozenset() takes it, a dict's values when
	 * BUILD makes it an instance's state */
	i = ti + (marked ? 1 : 0);
	for (j = i; j < s->depth; j++) {
		const struct ent *e = &s->stack[j];

		if (e->kind == K_GLOBAL)
			continue; /* refused below */
		adopt(s, o, e);
		if (flag == C_SETITEMS && (j - i) % 2 == 0) {
			if (add_key(s, t->obj, e) < 0)
				return -1;
			if (kind == K_DICT && t->kind == K_DICT)
				uuid_item(s, o, e, j + 1 < s->depth ?
					  &s->stack[j + 1] : NULL);
		} else if (flag != C_SETITEMS && t->kind != K_INST &&
			   add_key(s, t->obj, e) < 0) {
			return -1;
		}
	}
	if (depth_bounded(s, o) < 0)
		return -1;
	if (t->kind == K_LIST || t->kind == K_DICT)
		s->objs[t->obj].hcost = sat_add(s->objs[t->obj].hcost,
						hash_work(s, i, s->depth, 1));
	if (kind != K_LIST &&
	    charge(s, hash_work(s, i, s->depth,
				flag == C_SETITEMS ? 2 : 1)) < 0)
		return -1;
	if (marked) {
		if (pop_mark(s, NULL) < 0)
			return -1;
	} else {
		for (i = 0; i < n; i++) {
			if (top_value(s, 0, &v) < 0)
				return -1;
			s->depth--;
		}
	}
	/* SETITEM(S) add pairs */
	s->objs[t->obj].count += flag == C_SETITEMS ? n / 2 : n;
	return charge(s, n);
}

/* datetime's date, time and datetime from their pickled state (bytes):
 * CPython checks the month (date, datetime) or the hour (time) only, so
 * date(b'\0\0\1\1'), year 0, got through, and its ctime() read a day
 * name before its table (a crash of the parent). Every field in range. */
static bool datetime_state_ok(const char *name, const unsigned char *b,
			      uint64_t n)
{
	static const unsigned char mdays[] = { 31, 28, 31, 30, 31, 30,
					       31, 31, 30, 31, 30, 31 };
	unsigned year, month, day, dim;
	const unsigned char *t = b; /* the time of day's fields */

	if (!strcmp(name, "time")) {
		if (n != 6)
			return false;
		if ((t[0] & 0x7f) > 23) /* the high bit is fold */
			return false;
		t++;
		goto clock;
	}
	if (n != (strcmp(name, "date") ? 10u : 4u))
		return false;
	year = (unsigned)b[0] << 8 | b[1];
	/* datetime keeps fold in the month's high bit */
	month = strcmp(name, "date") ? (b[2] & 0x7f) : b[2];
	day = b[3];
	if (year < 1 || year > 9999 || month < 1 || month > 12)
		return false;
	dim = mdays[month - 1] +
	      (month == 2 && year % 4 == 0 &&
	       (year % 100 != 0 || year % 400 == 0));
	if (day < 1 || day > dim)
		return false;
	if (n == 4)
		return true;
	if (b[4] > 23)
		return false;
	t = b + 5;
clock:
	return t[0] < 60 && t[1] < 60 &&
	       ((uint32_t)t[2] << 16 | (uint32_t)t[3] << 8 | t[4]) < 1000000;
}

/* ipaddress's networks and interfaces from a str: CPython keeps every
 * prefix spelling it parses in a cache for good ('24', '024', '0024'...,
 * up to 4300 digits), so results within max_result= grew the parent from
 * call to call. A prefix of digits must be spelled as str(int) spells it
 * (a dotted mask has few spellings that parse). */
static bool ip_prefix_ok(const unsigned char *p, uint64_t n)
{
	uint64_t i, slash = n;

	for (i = 0; i < n; i++)
		if (p[i] == '/')
			slash = i;
	if (slash == n)
		return true;
	p += slash + 1;
	n -= slash + 1;
	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return true; /* not digits: a mask, or an error */
	return n >= 1 && n <= 3 && (n == 1 || p[0] != '0');
}

/* REDUCE and NEWOBJ: a class of the table, called with a tuple whose
 * shapes one of its patterns admits; the result is a fresh instance. */
static int call(struct sim *s, bool newobj)
{
	const char *what = newobj ? "NEWOBJ" : "REDUCE";
	struct ent *f, *a;
	const struct cls *c;
	struct obj *o;
	uint64_t cost, hcost, hdepth, weight, dexp = 0;
	size_t i;

	if (top_two(s) < 0)
		return -1;
	f = &s->stack[s->depth - 2];
	a = &s->stack[s->depth - 1];
	if (f->kind != K_GLOBAL)
		return fail(s->err, false,
			    "%s of a value that is no class of the table is "
			    "refused: remote-result-mode is data-only",
			    what);
	c = &classes[f->cls];
	if (a->kind == K_GLOBAL)
		return fail(s->err, false,
			    "class %s.%s is refused as an argument: "
			    "remote-result-mode is data-only",
			    classes[a->cls].module, classes[a->cls].name);
	if (a->kind != K_TUPLE ||
	    !(newobj ? c->newobj : c->call) ||
	    !args_fit(newobj ? c->newobj : c->call, &s->objs[a->obj]))
		return fail(s->err, false,
			    "%s of %s.%s with these arguments is refused: "
			    "remote-result-mode is data-only (bounded "
			    "arguments only)",
			    what, c->module, c->name);
	o = &s->objs[a->obj];
	if (!strcmp(c->module, "datetime") && o->bytes0 &&
	    !datetime_state_ok(c->name, s->data + o->off0, o->size0))
		return fail(s->err, false,
			    "a datetime.%s whose state is out of range is "
			    "refused: remote-result-mode is data-only",
			    c->name);
	if (!strcmp(c->module, "ipaddress") && o->str0 &&
	    !ip_prefix_ok(s->data + o->off0, o->size0))
		return fail(s->err, false,
			    "an ipaddress.%s whose prefix length is not "
			    "spelled as a plain number is refused: "
			    "remote-result-mode is data-only",
			    c->name);
	cost = 1 + o->count + o->cost;
	/* Decimal('1e999999999'): 13 bytes, a GB when the parent formats it.
	 * Decimal() reads any Unicode digit ('1e' and nine U+0669 is the
	 * same number): only ASCII spellings, whose exponent is read here */
	if (!strcmp(c->module, "decimal")) {
		if (!o->str0 || !ascii_only(s->data + o->off0, o->size0))
			return fail(s->err, false,
				    "a Decimal spelled with other characters "
				    "than ASCII is refused: remote-result-mode "
				    "is data-only");
		dexp = decimal_exponent(s->data + o->off0, o->size0);
		cost = sat_add(cost, dexp);
	}
	for (i = 0; i < TUPLE_ELEMS; i++)
		if (o->elem[i] != NO_OBJ) {
			struct obj *arg = &s->objs[o->elem[i]];

			cost += arg->count;
			/* set(list), frozenset(list) hash its items, Counter
			 * (dict) its keys again: their collisions too */
			if (c->letter == 'S' || c->letter == 'F')
				cost = sat_add(cost, arg->hcost);
			if (c->letter == 'S' || c->letter == 'F' ||
			    (c->call && c->call[0] == 'D' && arg->mult))
				arg->mult++;
		}
	if (charge(s, cost) < 0)
		return -1;
	hcost = o->hcost;
	hdepth = o->hdepth + 1;
	weight = sat_add(1 + o->cost, dexp);
	s->depth -= 2;
	if (new_obj(s, K_INST, f->cls) < 0)
		return -1;
	/* an instance hashes like its arguments (struct_time is a tuple) and
	 * nests one level more (struct_time's hidden fields, in the dict) */
	o = &s->objs[s->stack[s->depth - 1].obj];
	o->hcost = hcost;
	o->hdepth = hdepth;
	o->weight = weight;
	o->mult = (c->flags & C_SETITEMS) != 0; /* OrderedDict */
	return hash_bounded(s, o);
}

/* A name from the stream, printable: at most 60 bytes, '?' for a byte
 * that is not printable ASCII (the message must be text). */
static const char *printable(const struct sim *s, const struct ent *e,
			     char out[61])
{
	size_t i, n = e->size < 60 ? (size_t)e->size : 60;

	for (i = 0; i < n; i++) {
		unsigned char c = s->data[e->off + i];

		out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = '\0';
	return out;
}

static int stack_global(struct sim *s)
{
	char mod[61], name[61];
	const struct ent *m, *n;
	size_t i;

	if (top_two(s) < 0)
		return -1;
	m = &s->stack[s->depth - 2];
	n = &s->stack[s->depth - 1];
	if (m->kind != K_STR || n->kind != K_STR)
		return fail(s->err, false,
			    "STACK_GLOBAL of values that are no names is "
			    "refused");
	for (i = 0; i < NCLASSES; i++) {
		const struct cls *c = &classes[i];

		if (strlen(c->module) == m->size &&
		    !memcmp(c->module, s->data + m->off, m->size) &&
		    strlen(c->name) == n->size &&
		    !memcmp(c->name, s->data + n->off, n->size)) {
			s->depth -= 2;
			return push(s, (struct ent){ .kind = K_GLOBAL,
						     .cls = (unsigned char)i,
						     .obj = NO_OBJ });
		}
	}
	return fail(s->err, false,
		    "%s.%s is refused: remote-result-mode is data-only "
		    "(values only)",
		    printable(s, m, mod), printable(s, n, name));
}

static int tuple_of(struct sim *s, size_t n)
{
	struct ent *v;
	struct obj *o;
	size_t i;

	for (i = 0; i < n; i++)
		if (top_value(s, i, &v) < 0)
			return -1;
	if (new_obj(s, K_TUPLE, 0) < 0)
		return -1;
	/* the new tuple sits above its n elements: record, then move down */
	o = &s->objs[s->stack[s->depth - 1].obj];
	for (i = 0; i < n; i++)
		tuple_add(s, o, &s->stack[s->depth - 1 - n + i]);
	s->stack[s->depth - 1 - n] = s->stack[s->depth - 1];
	s->depth -= n;
	return hash_bounded(s, o);
}

static int marked_container(struct sim *s, unsigned char kind, bool pairs)
{
	size_t n = items_above_mark(s);
	uint64_t hw;
	struct ent e;
	int r;

	if (s->top_mark == NO_OBJ)
		return fail(s->err, true, "unbalanced MARK in the pickle "
					  "stream");
	if (pairs && n % 2)
		return fail(s->err, true, "odd number of items for DICT");
	/* the keys of DICT and the items of FROZENSET are hashed now, those
	 * of LIST when set() or frozenset() takes it */
	hw = kind == K_TUPLE || kind == K_LIST ? 0 :
	     hash_work(s, s->top_mark + 1, s->depth, pairs ? 2 : 1);
	if (kind == K_TUPLE) {
		if (new_obj(s, K_TUPLE, 0) < 0)
			return -1;
		e = s->stack[--s->depth];
		r = pop_mark(s, &s->objs[e.obj]);
		if (r == 0)
			r = hash_bounded(s, &s->objs[e.obj]);
	} else {
		struct obj *o;
		size_t i;

		if (new_obj(s, kind, 0) < 0)
			return -1;
		e = s->stack[--s->depth];
		o = &s->objs[e.obj];
		o->count = pairs ? n / 2 : n;
		for (i = s->top_mark + 1; i < s->depth; i++) {
			const struct ent *v = &s->stack[i];

			if (v->kind == K_GLOBAL)
				continue; /* pop_mark refuses it */
			adopt(s, o, v);
			if (pairs && (i - s->top_mark - 1) % 2)
				continue;
			if (add_key(s, e.obj, v) < 0)
				return -1;
			if (pairs)
				uuid_item(s, o, v, &s->stack[i + 1]);
		}
		if (depth_bounded(s, o) < 0)
			return -1;
		if (kind == K_LIST || kind == K_DICT)
			s->objs[e.obj].hcost = hash_work(s, s->top_mark + 1,
							 s->depth, 1);
		r = pop_mark(s, NULL);
	}
	if (r < 0 || charge(s, n) < 0 || charge(s, hw) < 0)
		return -1;
	return push(s, e);
}

static int scalar(struct sim *s, unsigned char kind, uint64_t size,
		  size_t off)
{
	struct ent e = { .kind = kind, .obj = NO_OBJ, .size = size,
			 .off = off,
			 .hk = kind == K_STR || kind == K_BYTES ||
			       kind == K_BYTEARRAY ? HK_SEEDED : HK_OPAQUE };
	uint64_t i;

	/* a str of digits, signs and '/' (cls 1) once, not per use */
	if (kind == K_STR && size) {
		for (i = 0; i < size; i++) {
			unsigned char c = s->data[off + i];

			if (!((c >= '0' && c <= '9') || c == '-' ||
			      c == '+' || c == '/'))
				break;
		}
		e.cls = i == size;
	}
	return push(s, e);
}

/* An int, bool or float whose hash is hv when 'known'. */
static int number(struct sim *s, unsigned char kind, uint64_t size,
		  uint64_t hv, bool known)
{
	return push(s, (struct ent){ .kind = kind, .obj = NO_OBJ,
				     .size = size, .hv = hv,
				     .hk = known ? HK_VAL : HK_OPAQUE });
}

/* What one more reference to e (DUP, a memo GET) adds to the result
 * walked as a tree (json.dumps, repr, ==): a str or bytes its length, a
 * long int its digits (fewer than 3 a byte), an instance its
 * arguments' (a Decimal its exponent's digits); at least 1. Containers
 * are 1 here: the parent's walk (_unpickle._check_acyclic) counts them
 * at each use. */
static uint64_t ref_weight(const struct sim *s, const struct ent *e)
{
	uint64_t w = 1;

	if (e->kind == K_STR || e->kind == K_BYTES || e->kind == K_BYTEARRAY)
		w = e->size;
	else if (e->kind == K_INT && e->size > 8)
		w = sat_mul(e->size, 3);
	else if (e->kind == K_INST)
		w = s->objs[e->obj].weight;
	return w ? w : 1;
}

/* One opcode of data-only mode. 'arg' is where its argument starts, 'n'
 * the length of a counted argument (its data follows at arg + width). */
static int step(struct sim *s, unsigned char code, size_t arg, uint64_t n,
		unsigned width)
{
	const unsigned char *p = s->data + arg;
	struct ent *e;

	if (charge(s, 1) < 0)
		return -1;
	switch (code) {
	case 0x80: /* PROTO */
	case 0x95: /* FRAME */
		return 0;
	case '.':
		if (top_value(s, 0, &e) < 0)
			return -1;
		if (e->kind == K_MARK)
			return fail(s->err, true, "STOP on a MARK");
		return 0;
	case '(':
		if (push(s, (struct ent){ .kind = K_MARK,
					  .obj = s->top_mark }) < 0)
			return -1;
		s->top_mark = (uint32_t)(s->depth - 1);
		return 0;
	case '0': /* POP: the mark when it is on top, as pickle does */
		if (s->depth && s->stack[s->depth - 1].kind == K_MARK)
			return pop_mark(s, NULL);
		if (!s->depth)
			return fail(s->err, true, "stack underflow in the "
						  "pickle stream");
		s->depth--;
		return 0;
	case '1':
		return pop_mark(s, NULL);
	case '2':
		if (top_value(s, 0, &e) < 0 ||
		    charge(s, ref_weight(s, e) - 1) < 0)
			return -1;
		return push(s, *e);
	case 'N':
		return scalar(s, K_NONE, 0, 0);
	case 0x88:
	case 0x89:
		return number(s, K_BOOL, 0, code == 0x88, true);
	case 'K':
		return number(s, K_INT, 1, p[0], true);
	case 'M':
		return number(s, K_INT, 2, read_le(p, 2), true);
	case 'J':
		return number(s, K_INT, 4, int_hash(p, 4, true), true);
	case 0x8a:
	case 0x8b:
		return number(s, K_INT, n, int_hash(p + width, n, true), true);
	case 'G': {
		uint64_t hv = 0;
		bool known = float_hash(p, &hv);

		return number(s, K_FLOAT, 8, hv, known);
	}
	case 0x8c:
	case 'X':
	case 0x8d:
		return scalar(s, K_STR, n, arg + width);
	case 'C':
	case 'B':
	case 0x8e:
		return scalar(s, K_BYTES, n, arg + width);
	case 0x96:
		return scalar(s, K_BYTEARRAY, n, 0);
	case ')':
		return tuple_of(s, 0);
	case 0x85:
		return tuple_of(s, 1);
	case 0x86:
		return tuple_of(s, 2);
	case 0x87:
		return tuple_of(s, 3);
	case 't':
		return marked_container(s, K_TUPLE, false);
	case ']':
		return new_obj(s, K_LIST, 0);
	case '}':
		return new_obj(s, K_DICT, 0);
	case 0x8f:
		return new_obj(s, K_SET, 0);
	case 'l':
		return marked_container(s, K_LIST, false);
	case 'd':
		return marked_container(s, K_DICT, true);
	case 0x91:
		return marked_container(s, K_FROZENSET, false);
	case 'a':
		return fill(s, "APPEND", K_LIST, C_APPENDS, 1, false);
	case 'e':
		return fill(s, "APPENDS", K_LIST, C_APPENDS,
			    items_above_mark(s), true);
	case 's':
		return fill(s, "SETITEM", K_DICT, C_SETITEMS, 2, false);
	case 'u':
		if (items_above_mark(s) % 2)
			return fail(s->err, true,
				    "odd number of items for SETITEMS");
		return fill(s, "SETITEMS", K_DICT, C_SETITEMS,
			    items_above_mark(s), true);
	case 0x90:
		return fill(s, "ADDITEMS", K_SET, 0, items_above_mark(s),
			    true);
	case 'b': {
		struct ent *t, *st;

		if (top_value(s, 0, &st) < 0 || top_value(s, 1, &t) < 0)
			return -1;
		if (t->kind != K_INST || !(classes[t->cls].flags & C_BUILD) ||
		    s->objs[t->obj].built)
			return refuse_target(s, "BUILD", t);
		if (st->kind != K_DICT || !s->objs[st->obj].uuid_state ||
		    !s->objs[st->obj].uuid_int)
			return fail(s->err, false,
				    "BUILD of a %s.%s with a state that is "
				    "not one ({'int': int, 'is_safe': None, 0 "
				    "or -1}) is refused: remote-result-mode is "
				    "data-only",
				    classes[t->cls].module,
				    classes[t->cls].name);
		s->objs[t->obj].built = true;
		adopt(s, &s->objs[t->obj], st);
		if (depth_bounded(s, &s->objs[t->obj]) < 0)
			return -1;
		if (charge(s, s->objs[st->obj].count) < 0)
			return -1;
		/* the instance hashes its state (UUID: hash(self.int)) */
		s->objs[t->obj].hcost = sat_add(s->objs[t->obj].hcost,
						s->objs[st->obj].hcost);
		if (hash_bounded(s, &s->objs[t->obj]) < 0)
			return -1;
		s->depth--;
		return 0;
	}
	case 'R':
		return call(s, false);
	case 0x81:
		return call(s, true);
	case 0x92:
		return fail(s->err, false,
			    "opcode NEWOBJ_EX is refused: remote-result-mode "
			    "is data-only");
	case 0x93:
		return stack_global(s);
	case 0x94:
	case 'q':
	case 'r': {
		uint64_t idx = code == 0x94 ? s->nmemo :
			       code == 'q' ? p[0] : read_le(p, 4);

		if (!s->depth || s->stack[s->depth - 1].kind == K_MARK)
			return fail(s->err, true, "memoizing a MARK or an "
						  "empty stack");
		/* pass one checked idx <= nmemo < maxmemo */
		s->memo[idx] = s->stack[s->depth - 1];
		if (idx == s->nmemo)
			s->nmemo++;
		return 0;
	}
	case 'h':
	case 'j': {
		uint64_t idx = code == 'h' ? p[0] : read_le(p, 4);

		if (charge(s, ref_weight(s, &s->memo[idx]) - 1) < 0)
			return -1;
		return push(s, s->memo[idx]);
	}
	default:
		return fail(s->err, true, "byte 0x%02x is no pickle opcode",
			    code);
	}
}

/* Pass one: opcodes, argument lengths, the budgets, dense memo indices.
 * When 'sim' is not NULL, each opcode then runs on it (pass two). */
static int walk(const unsigned char *data, size_t len,
		const struct sb_prescan_limits *lim,
		struct sb_prescan_error *err, struct sim *sim,
		size_t *nmemo, size_t *nobjs, unsigned *flags)
{
	/* ops <= len + 1 and memo, depth <= ops: no counter can overflow */
	long long ops = 0, memo = 0, depth = 0;
	size_t pos = 0, objs = 0, frame_end = 0;
	unsigned short_way = NC | NR;

	for (;;) {
		const struct op *op;
		unsigned char code;
		size_t arg, start = pos;
		uint64_t n = 0;
		unsigned width = 0;

		if (pos >= len)
			return fail(err, true,
				    "truncated pickle stream: no STOP opcode");
		code = data[pos++];
		if (++ops > lim->max_opcodes)
			return fail(err, false,
				    "the payload holds more than %lld opcodes",
				    lim->max_opcodes);
		op = &op_table[code];
		short_way &= op_short[code];
		if (op->kind == OP_REFUSED)
			return fail(err, false,
				    "opcode %s is refused on the result "
				    "channel",
				    op->name);
		if (op->kind == OP_BAD)
			return fail(err, true,
				    "byte 0x%02x is no pickle opcode", code);
		arg = pos;
		/* pos <= len holds here; compare with what is left so that a
		 * 64-bit length cannot wrap pos around */
		if (op->arg > 0) {
			if ((size_t)op->arg > len - pos)
				return fail(err, true,
					    "truncated pickle stream");
			pos += (size_t)op->arg;
		} else if (op->arg < 0) {
			width = (unsigned)-op->arg;
			if (width > len - pos)
				return fail(err, true,
					    "truncated pickle stream");
			n = read_le(data + pos, width);
			pos += width;
			if (n > (uint64_t)(len - pos))
				return fail(err, true,
					    "truncated pickle stream");
			pos += (size_t)n;
		}
		/* Frames as CPython's pickler writes them: no opcode crosses the
		 * end of its frame, and a frame begins only after the end of the
		 * one before. The parent's Unpickler reads from a file, and an
		 * argument that crosses a frame's end is read from past it, the
		 * rest of the frame dropped: it would decode other opcodes than
		 * this walk sees (pickle.loads and pickle.py read on). */
		if (start < frame_end && pos > frame_end)
			return fail(err, true,
				    "an opcode crosses the end of its frame");
		if (code == 0x95) {
			uint64_t flen = read_le(data + arg, 8);

			if (start < frame_end)
				return fail(err, true,
					    "a frame begins before the end of "
					    "the one before");
			if (flen > (uint64_t)(len - pos))
				return fail(err, true,
					    "truncated pickle stream: a frame "
					    "goes past its end");
			frame_end = pos + (size_t)flen;
		}
		switch (op->kind) {
		case OP_MARK:
			if (++depth > lim->max_depth)
				return fail(err, false,
					    "MARK nesting deeper than %lld",
					    lim->max_depth);
			break;
		case OP_MARK_USER:
			if (--depth < 0)
				return fail(err, true,
					    "unbalanced MARK in the pickle "
					    "stream");
			break;
		case OP_MEMO_PUT: {
			/* indices stay dense: the unpickler's memo array grows
			 * to the largest index it is given */
			uint64_t idx = code == 0x94 ? (uint64_t)memo :
				       code == 'q' ? data[arg] :
				       read_le(data + arg, 4);

			if (idx > (uint64_t)memo)
				return fail(err, true,
					    "memo index %llu out of order",
					    (unsigned long long)idx);
			if (idx == (uint64_t)memo && ++memo > lim->max_memo)
				return fail(err, false,
					    "the payload memoizes more than "
					    "%lld objects",
					    lim->max_memo);
			break;
		}
		case OP_MEMO_GET: {
			uint64_t idx = code == 'h' ? data[arg] :
				       read_le(data + arg, 4);

			if (idx >= (uint64_t)memo)
				return fail(err, true,
					    "memo index %llu was never set",
					    (unsigned long long)idx);
			break;
		}
		default:
			break;
		}
		if (strchr(")]}\x8f\x85\x86\x87tldR\x81\x91", code) && code)
			objs++;
		if (sim && step(sim, code, arg, n, width) < 0)
			return -1;
		if (op->kind == OP_STOP) {
			if (pos != len)
				return fail(err, true,
					    "data after the STOP opcode");
			if (nmemo)
				*nmemo = (size_t)memo;
			if (nobjs)
				*nobjs = objs;
			if (flags)
				*flags = (short_way & NC ?
					  SB_PRESCAN_NO_CLASS : 0u) |
					 ((short_way & (NC | NR)) == (NC | NR) ?
					  SB_PRESCAN_TREE : 0u);
			return 0;
		}
	}
}

int sb_prescan(const unsigned char *data, size_t len,
	       const struct sb_prescan_limits *lim, enum sb_prescan_mode mode,
	       struct sb_prescan_error *err)
{
	return sb_prescan_flags(data, len, lim, mode, err, NULL);
}

int sb_prescan_flags(const unsigned char *data, size_t len,
		     const struct sb_prescan_limits *lim,
		     enum sb_prescan_mode mode, struct sb_prescan_error *err,
		     unsigned *flags)
{
	struct sim sim = { .data = data, .lim = lim, .err = err,
			   .top_mark = NO_OBJ };
	size_t nmemo = 0, nobjs = 0;
	unsigned found = 0;
	int r;

	if (flags)
		*flags = 0;
	if (lim->max_bytes < 0 ||
	    (unsigned long long)len > (unsigned long long)lim->max_bytes)
		return fail(err, false,
			    "the payload is %zu bytes, over the limit of "
			    "%lld bytes",
			    len, lim->max_bytes);
	if (walk(data, len, lim, err, NULL, &nmemo, &nobjs, &found) < 0)
		return -1;
	if (mode != SB_PRESCAN_DATA) {
		if (flags)
			*flags = found;
		return 0;
	}
	if (nobjs > UINT32_MAX - 1 || len > UINT32_MAX - 1)
		return fail(err, false, "the payload holds too many objects");
	sim.maxmemo = nmemo;
	sim.maxobjs = nobjs;
	sim.memo = calloc(nmemo ? nmemo : 1, sizeof(*sim.memo));
	sim.objs = calloc(nobjs ? nobjs : 1, sizeof(*sim.objs));
	if (!sim.memo || !sim.objs)
		r = fail(err, false, "out of memory");
	else
		r = walk(data, len, lim, err, &sim, NULL, NULL, NULL);
	if (r == 0)
		r = charge(&sim, coll_work(&sim));
	free(sim.ins);
	free(sim.memo);
	free(sim.objs);
	free(sim.stack);
	if (r == 0 && flags)
		*flags = found;
	return r;
}
