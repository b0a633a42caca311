/* prescan.c - the opcode pre-scan of the partial-mode result channel.
 *
 * It owns the opcode table of the result channel (which opcodes pass, the
 * shape of their arguments, which ones are refused by name) and the walk
 * that enforces the budgets of one stream. It must stay the exact twin of
 * _prescan_py() in python/pysandboxes/_unpickle.py, message for message,
 * because the parent picks either one and tests/e2e/test_prescan.py
 * compares them. It must not execute, allocate, print or exit: it runs in
 * the trusted parent on bytes a hostile worker chose, and libFuzzer feeds
 * it (tests/fuzz/fuzz_prescan.c).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "prescan.h"

enum op_kind {
	OP_BAD = 0, /* no pickle opcode: the zero of the table */
	OP_REFUSED,
	OP_PLAIN,
	OP_MARK,
	OP_MARK_USER, /* consumes the topmost MARK */
	OP_MEMO_PUT,
	OP_STOP,
};

/* arg: 0 none, 1/2/4/8 fixed bytes, -1/-4/-8 a little-endian length of
 * that many bytes then the data (_ARGS in _unpickle.py). */
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
	['h'] = PLAIN(1),
	['q'] = { 1, OP_MEMO_PUT, NULL },
	[0x80] = PLAIN(1), /* PROTO */
	['M'] = PLAIN(2),
	['J'] = PLAIN(4),
	['j'] = PLAIN(4),
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

int sb_prescan(const unsigned char *data, size_t len,
	       const struct sb_prescan_limits *lim,
	       struct sb_prescan_error *err)
{
	/* ops <= len + 1 and memo, depth <= ops: no counter can overflow */
	long long ops = 0, memo = 0, depth = 0;
	size_t pos = 0;

	if (lim->max_bytes < 0 ||
	    (unsigned long long)len > (unsigned long long)lim->max_bytes)
		return fail(err, false,
			    "the payload is %zu bytes, over the limit of "
			    "%lld bytes",
			    len, lim->max_bytes);
	for (;;) {
		const struct op *op;
		unsigned char code;

		if (pos >= len)
			return fail(err, true,
				    "truncated pickle stream: no STOP opcode");
		code = data[pos++];
		if (++ops > lim->max_opcodes)
			return fail(err, false,
				    "the payload holds more than %lld opcodes",
				    lim->max_opcodes);
		op = &op_table[code];
		if (op->kind == OP_REFUSED)
			return fail(err, false,
				    "opcode %s is refused on the result "
				    "channel",
				    op->name);
		if (op->kind == OP_BAD)
			return fail(err, true,
				    "byte 0x%02x is no pickle opcode", code);
		/* pos <= len holds here; compare with what is left so that a
		 * 64-bit length cannot wrap pos around */
		if (op->arg > 0) {
			if ((size_t)op->arg > len - pos)
				return fail(err, true,
					    "truncated pickle stream");
			pos += (size_t)op->arg;
		} else if (op->arg < 0) {
			unsigned size = (unsigned)-op->arg;
			uint64_t n;

			if (size > len - pos)
				return fail(err, true,
					    "truncated pickle stream");
			n = read_le(data + pos, size);
			pos += size;
			if (n > (uint64_t)(len - pos))
				return fail(err, true,
					    "truncated pickle stream");
			pos += (size_t)n;
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
		case OP_MEMO_PUT:
			if (++memo > lim->max_memo)
				return fail(err, false,
					    "the payload memoizes more than "
					    "%lld objects",
					    lim->max_memo);
			break;
		case OP_STOP:
			if (pos != len)
				return fail(err, true,
					    "data after the STOP opcode");
			return 0;
		default:
			break;
		}
	}
}

int sb_prescan_abi(void)
{
	return SB_PRESCAN_ABI;
}
