/* test_prescan.c - the result channel's opcode pre-scan (src/partial/prescan.c):
 * real pickles of protocols 2 to 5 (from CPython's pickle.dumps), each
 * refused opcode, each budget at and over its limit, and the garbled
 * streams, in objects mode (shapes only); then, in data-only mode, real
 * pickles of every value class and the attacks of issue 21 (BUILD on a
 * class, a range consumed by a constructor, a size argument, a class as a
 * value, far memo indices, the work budget), with their exact messages. */
#include <stdint.h>
#include <stdio.h>

#include "prescan.h"
#include "tap.h"
#include "util.h"

static const struct sb_prescan_limits defaults = {
	.max_bytes = 64 << 20,
	.max_opcodes = 1 << 23,
	.max_memo = 1 << 20,
	.max_depth = 512,
	.max_work = 1 << 26,
};

/* The verdict as one string: "ok", or "refused: msg" / "garbled: msg". */
static const char *verdict_in(const void *data, size_t len,
			      const struct sb_prescan_limits *lim,
			      enum sb_prescan_mode mode)
{
	static char out[SB_PRESCAN_MSG_MAX + 16];
	struct sb_prescan_error err;
	int r;

	memset(&err, 0xa5, sizeof(err));
	r = sb_prescan(data, len, lim, mode, &err);
	if (r != sb_prescan(data, len, lim, mode, NULL))
		return "a verdict that depends on the error struct";
	if (r == 0)
		return "ok";
	if (r != -1 || !memchr(err.message, '\0', sizeof(err.message)))
		return "bad return or unterminated message";
	snprintf(out, sizeof(out), "%s: %s",
		 err.garbled ? "garbled" : "refused", err.message);
	return out;
}

static const char *verdict(const void *data, size_t len,
			   const struct sb_prescan_limits *lim)
{
	return verdict_in(data, len, lim, SB_PRESCAN_SHAPE);
}

#define S(lit) (lit), (sizeof(lit) - 1)

static const struct {
	const char *name;
	size_t len;
	const char *data;
	const char *refused; /* NULL: accepted */
} pickles[] = {
	{ "int p2", 5,
	  "\x80\x02\x4b\x07\x2e",
	  NULL },
	{ "int p3", 5,
	  "\x80\x03\x4b\x07\x2e",
	  NULL },
	{ "int p4", 5,
	  "\x80\x04\x4b\x07\x2e",
	  NULL },
	{ "int p5", 5,
	  "\x80\x05\x4b\x07\x2e",
	  NULL },
	{ "bigint p2", 14,
	  "\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x2e",
	  NULL },
	{ "bigint p3", 14,
	  "\x80\x03\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x2e",
	  NULL },
	{ "bigint p4", 23,
	  "\x80\x04\x95\x0c\x00\x00\x00\x00\x00\x00\x00\x8a\x09\x00\x00\x00"
	  "\x00\x00\x00\x00\x00\x40\x2e",
	  NULL },
	{ "bigint p5", 23,
	  "\x80\x05\x95\x0c\x00\x00\x00\x00\x00\x00\x00\x8a\x09\x00\x00\x00"
	  "\x00\x00\x00\x00\x00\x40\x2e",
	  NULL },
	{ "negint p2", 8,
	  "\x80\x02\x4a\xc0\x1d\xfe\xff\x2e",
	  NULL },
	{ "negint p3", 8,
	  "\x80\x03\x4a\xc0\x1d\xfe\xff\x2e",
	  NULL },
	{ "negint p4", 17,
	  "\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x4a\xc0\x1d\xfe\xff"
	  "\x2e",
	  NULL },
	{ "negint p5", 17,
	  "\x80\x05\x95\x06\x00\x00\x00\x00\x00\x00\x00\x4a\xc0\x1d\xfe\xff"
	  "\x2e",
	  NULL },
	{ "str p2", 16,
	  "\x80\x02\x58\x06\x00\x00\x00\x68\xc3\xa9\x6c\x6c\x6f\x71\x00\x2e",
	  NULL },
	{ "str p3", 16,
	  "\x80\x03\x58\x06\x00\x00\x00\x68\xc3\xa9\x6c\x6c\x6f\x71\x00\x2e",
	  NULL },
	{ "str p4", 21,
	  "\x80\x04\x95\x0a\x00\x00\x00\x00\x00\x00\x00\x8c\x06\x68\xc3\xa9"
	  "\x6c\x6c\x6f\x94\x2e",
	  NULL },
	{ "str p5", 21,
	  "\x80\x05\x95\x0a\x00\x00\x00\x00\x00\x00\x00\x8c\x06\x68\xc3\xa9"
	  "\x6c\x6c\x6f\x94\x2e",
	  NULL },
	{ "nested p2", 69,
	  "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71"
	  "\x02\x28\x4b\x01\x4b\x02\x7d\x71\x03\x58\x01\x00\x00\x00\x62\x71"
	  "\x04\x4b\x03\x47\x40\x12\x00\x00\x00\x00\x00\x00\x86\x71\x05\x73"
	  "\x65\x58\x01\x00\x00\x00\x63\x71\x06\x4e\x58\x01\x00\x00\x00\x64"
	  "\x71\x07\x88\x75\x2e",
	  NULL },
	{ "nested p3", 69,
	  "\x80\x03\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71"
	  "\x02\x28\x4b\x01\x4b\x02\x7d\x71\x03\x58\x01\x00\x00\x00\x62\x71"
	  "\x04\x4b\x03\x47\x40\x12\x00\x00\x00\x00\x00\x00\x86\x71\x05\x73"
	  "\x65\x58\x01\x00\x00\x00\x63\x71\x06\x4e\x58\x01\x00\x00\x00\x64"
	  "\x71\x07\x88\x75\x2e",
	  NULL },
	{ "nested p4", 58,
	  "\x80\x04\x95\x2f\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01"
	  "\x61\x94\x5d\x94\x28\x4b\x01\x4b\x02\x7d\x94\x8c\x01\x62\x94\x4b"
	  "\x03\x47\x40\x12\x00\x00\x00\x00\x00\x00\x86\x94\x73\x65\x8c\x01"
	  "\x63\x94\x4e\x8c\x01\x64\x94\x88\x75\x2e",
	  NULL },
	{ "nested p5", 58,
	  "\x80\x05\x95\x2f\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01"
	  "\x61\x94\x5d\x94\x28\x4b\x01\x4b\x02\x7d\x94\x8c\x01\x62\x94\x4b"
	  "\x03\x47\x40\x12\x00\x00\x00\x00\x00\x00\x86\x94\x73\x65\x8c\x01"
	  "\x63\x94\x4e\x8c\x01\x64\x94\x88\x75\x2e",
	  NULL },
	{ "memo p2", 29,
	  "\x80\x02\x5d\x71\x00\x28\x5d\x71\x01\x28\x4b\x01\x4b\x02\x65\x68"
	  "\x01\x58\x01\x00\x00\x00\x78\x71\x02\x68\x02\x65\x2e",
	  NULL },
	{ "memo p3", 29,
	  "\x80\x03\x5d\x71\x00\x28\x5d\x71\x01\x28\x4b\x01\x4b\x02\x65\x68"
	  "\x01\x58\x01\x00\x00\x00\x78\x71\x02\x68\x02\x65\x2e",
	  NULL },
	{ "memo p4", 32,
	  "\x80\x04\x95\x15\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x5d\x94"
	  "\x28\x4b\x01\x4b\x02\x65\x68\x01\x8c\x01\x78\x94\x68\x02\x65\x2e",
	  NULL },
	{ "memo p5", 32,
	  "\x80\x05\x95\x15\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x5d\x94"
	  "\x28\x4b\x01\x4b\x02\x65\x68\x01\x8c\x01\x78\x94\x68\x02\x65\x2e",
	  NULL },
	{ "sets p2", 77,
	  "\x80\x02\x63\x5f\x5f\x62\x75\x69\x6c\x74\x69\x6e\x5f\x5f\x0a\x73"
	  "\x65\x74\x0a\x71\x00\x5d\x71\x01\x28\x4b\x01\x4b\x02\x65\x85\x71"
	  "\x02\x52\x71\x03\x63\x5f\x5f\x62\x75\x69\x6c\x74\x69\x6e\x5f\x5f"
	  "\x0a\x66\x72\x6f\x7a\x65\x6e\x73\x65\x74\x0a\x71\x04\x5d\x71\x05"
	  "\x4b\x03\x61\x85\x71\x06\x52\x71\x07\x86\x71\x08\x2e",
	  "opcode GLOBAL is refused on the result channel" },
	{ "sets p3", 71,
	  "\x80\x03\x63\x62\x75\x69\x6c\x74\x69\x6e\x73\x0a\x73\x65\x74\x0a"
	  "\x71\x00\x5d\x71\x01\x28\x4b\x01\x4b\x02\x65\x85\x71\x02\x52\x71"
	  "\x03\x63\x62\x75\x69\x6c\x74\x69\x6e\x73\x0a\x66\x72\x6f\x7a\x65"
	  "\x6e\x73\x65\x74\x0a\x71\x04\x5d\x71\x05\x4b\x03\x61\x85\x71\x06"
	  "\x52\x71\x07\x86\x71\x08\x2e",
	  "opcode GLOBAL is refused on the result channel" },
	{ "sets p4", 27,
	  "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8f\x94\x28\x4b\x01"
	  "\x4b\x02\x90\x28\x4b\x03\x91\x94\x86\x94\x2e",
	  NULL },
	{ "sets p5", 27,
	  "\x80\x05\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8f\x94\x28\x4b\x01"
	  "\x4b\x02\x90\x28\x4b\x03\x91\x94\x86\x94\x2e",
	  NULL },
	{ "reply p2", 66,
	  "\x80\x02\x58\x02\x00\x00\x00\x6f\x6b\x71\x00\x63\x5f\x63\x6f\x64"
	  "\x65\x63\x73\x0a\x65\x6e\x63\x6f\x64\x65\x0a\x71\x01\x58\x07\x00"
	  "\x00\x00\x00\x01\x62\x79\x74\x65\x73\x71\x02\x58\x06\x00\x00\x00"
	  "\x6c\x61\x74\x69\x6e\x31\x71\x03\x86\x71\x04\x52\x71\x05\x86\x71"
	  "\x06\x2e",
	  "opcode GLOBAL is refused on the result channel" },
	{ "reply p3", 26,
	  "\x80\x03\x58\x02\x00\x00\x00\x6f\x6b\x71\x00\x43\x07\x00\x01\x62"
	  "\x79\x74\x65\x73\x71\x01\x86\x71\x02\x2e",
	  NULL },
	{ "reply p4", 29,
	  "\x80\x04\x95\x12\x00\x00\x00\x00\x00\x00\x00\x8c\x02\x6f\x6b\x94"
	  "\x43\x07\x00\x01\x62\x79\x74\x65\x73\x94\x86\x94\x2e",
	  NULL },
	{ "reply p5", 29,
	  "\x80\x05\x95\x12\x00\x00\x00\x00\x00\x00\x00\x8c\x02\x6f\x6b\x94"
	  "\x43\x07\x00\x01\x62\x79\x74\x65\x73\x94\x86\x94\x2e",
	  NULL },
};

static void test_pickles(void)
{
	char want[SB_PRESCAN_MSG_MAX + 16];
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(pickles); i++) {
		if (pickles[i].refused)
			snprintf(want, sizeof(want), "refused: %s",
				 pickles[i].refused);
		else
			snprintf(want, sizeof(want), "ok");
		is_str(verdict(pickles[i].data, pickles[i].len, &defaults),
		       want, "pickle %s", pickles[i].name);
	}
}

static void test_refused_opcodes(void)
{
	static const struct {
		unsigned char code;
		const char *name;
	} cases[] = {
		{ 'c', "GLOBAL" }, { 'i', "INST" }, { 'o', "OBJ" },
		{ 0x82, "EXT1" }, { 0x83, "EXT2" }, { 0x84, "EXT4" },
		{ 'P', "PERSID" }, { 'Q', "BINPERSID" },
		{ 0x97, "NEXT_BUFFER" }, { 0x98, "READONLY_BUFFER" },
	};
	char want[SB_PRESCAN_MSG_MAX + 16];
	unsigned char s[4] = { 0x80, 0x05, 0, '.' };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		s[2] = cases[i].code;
		snprintf(want, sizeof(want),
			 "refused: opcode %s is refused on the result channel",
			 cases[i].name);
		is_str(verdict(s, sizeof(s), &defaults), want, "opcode %s",
		       cases[i].name);
	}
}

/* Text opcodes (protocol 0/1) and bytes that are no opcode at all. */
static void test_unknown_bytes(void)
{
	is_str(verdict(S("I7\n."), &defaults),
	       "garbled: byte 0x49 is no pickle opcode", "INT (text)");
	is_str(verdict(S("\x80\x02p0\n."), &defaults),
	       "garbled: byte 0x70 is no pickle opcode", "PUT (text)");
	is_str(verdict(S("\x00"), &defaults),
	       "garbled: byte 0x00 is no pickle opcode", "NUL byte");
	is_str(verdict(S("\xff"), &defaults),
	       "garbled: byte 0xff is no pickle opcode", "0xff");
	is_str(verdict(S("\x99."), &defaults),
	       "garbled: byte 0x99 is no pickle opcode", "past the last");
}

static void test_garbled(void)
{
	struct sb_prescan_error err = { 0 };

	is_str(verdict(NULL, 0, &defaults),
	       "garbled: truncated pickle stream: no STOP opcode", "empty");
	is_str(verdict(S("\x80\x05K\x01"), &defaults),
	       "garbled: truncated pickle stream: no STOP opcode", "no STOP");
	is_str(verdict(S("\x80"), &defaults),
	       "garbled: truncated pickle stream", "PROTO without its byte");
	is_str(verdict(S("\x80\x05G\x01\x02\x03"), &defaults),
	       "garbled: truncated pickle stream", "BINFLOAT cut short");
	is_str(verdict(S("\x80\x05X\x05\x00"), &defaults),
	       "garbled: truncated pickle stream", "a length cut short");
	is_str(verdict(S("\x80\x05X\x05\x00\x00\x00" "abcd"), &defaults),
	       "garbled: truncated pickle stream", "data cut short");
	is_str(verdict(S("\x80\x05X\x04\x00\x00\x00" "abcd."), &defaults), "ok",
	       "data exactly to the STOP");
	is_str(verdict(S("\x8e\xff\xff\xff\xff\xff\xff\xff\xff."), &defaults),
	       "garbled: truncated pickle stream", "a 2**64-1 length");
	is_str(verdict(S("\x8e\xf7\xff\xff\xff\xff\xff\xff\xff."), &defaults),
	       "garbled: truncated pickle stream",
	       "a length that would wrap pos");
	is_str(verdict(S("\x95\xff\xff\xff\xff\xff\xff\xff\xff."), &defaults),
	       "garbled: truncated pickle stream: a frame goes past its end",
	       "a FRAME longer than the stream");
	/* The parent's Unpickler reads a file: an argument that crosses the
	 * end of a frame was read from past it, the rest of the frame
	 * dropped, and it decoded other opcodes than the scan saw (here the
	 * SHORT_BINBYTES hides a BUILD that set an attribute of a class) */
	is_str(verdict(S("\x80\x05\x95\x05\0\0\0\0\0\0\0K\x01" "0M\x07\x07C("
			 "\x8c\x07pathlib\x8c\x08PurePath\x93N}\x8c\x05pwned"
			 "K\x01s\x86" "b0N0N0N0N" "0N."), &defaults),
	       "garbled: an opcode crosses the end of its frame",
	       "an argument across the end of a frame");
	is_str(verdict(S("\x95\x03\0\0\0\0\0\0\0K\x01\x95\x01\0\0\0\0\0\0\0N."),
		       &defaults),
	       "garbled: an opcode crosses the end of its frame",
	       "a FRAME across the end of a frame");
	is_str(verdict(S("\x95\x02\0\0\0\0\0\0\0K\x01\x95\x01\0\0\0\0\0\0\0N."),
		       &defaults),
	       "ok", "a FRAME right at the end of a frame");
	is_str(verdict(S("\x95\x0a\0\0\0\0\0\0\0\x95\x01\0\0\0\0\0\0\0N."),
		       &defaults),
	       "garbled: a frame begins before the end of the one before",
	       "a FRAME within a frame");
	is_str(verdict(S("\x80\x05\x95\x02\0\0\0\0\0\0\0]\x94"
			 "\x95\x02\0\0\0\0\0\0\0K\x01" "aC\x01x\x86."),
		       &defaults),
	       "ok", "frames back to back, then opcodes outside any");
	is_str(verdict(S("\x95\0\0\0\0\0\0\0\0N."), &defaults), "ok",
	       "an empty frame");
	is_str(verdict(S("\x80\x05K\x01.."), &defaults),
	       "garbled: data after the STOP opcode", "two STOPs");
	is_str(verdict(S("\x80\x05K\x01.\x00"), &defaults),
	       "garbled: data after the STOP opcode", "a NUL after STOP");
	is_str(verdict(S("\x80\x05]K\x01" "e."), &defaults),
	       "garbled: unbalanced MARK in the pickle stream",
	       "APPENDS without MARK");
	is_str(verdict(S("(1(t\x91."), &defaults),
	       "garbled: unbalanced MARK in the pickle stream",
	       "FROZENSET after the MARKs are used");
	is_str(verdict(S("((ee."), &defaults), "ok", "balanced MARKs");
	is_str(verdict(S("(."), &defaults), "ok",
	       "an open MARK at STOP is the loader's business");

	is_int(sb_prescan((const unsigned char *)"\x00", 1, &defaults,
			  SB_PRESCAN_SHAPE, NULL),
	       -1, "refused without an error struct");
	is_int(sb_prescan((const unsigned char *)"N.", 2, &defaults,
			  SB_PRESCAN_SHAPE, NULL), 0,
	       "accepted without an error struct");
	is_int(sb_prescan((const unsigned char *)"N.", 2, &defaults,
			  SB_PRESCAN_SHAPE, &err), 0,
	       "accepted");
	is_str(err.message, "", "an accepted stream leaves err alone");
}

static void test_budgets(void)
{
	struct sb_prescan_limits lim = defaults;

	/* below: 10 bytes, 8 opcodes, 2 memo puts, MARK depth 2 */
	lim.max_bytes = 10;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim), "ok",
	       "10 bytes, limit 10");
	lim.max_bytes = 9;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim),
	       "refused: the payload is 10 bytes, over the limit of 9 bytes",
	       "10 bytes, limit 9");
	lim.max_bytes = -1;
	is_str(verdict(NULL, 0, &lim),
	       "refused: the payload is 0 bytes, over the limit of -1 bytes",
	       "a negative byte budget");

	lim = defaults;
	lim.max_opcodes = 8;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim), "ok",
	       "8 opcodes, limit 8");
	lim.max_opcodes = 7;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim),
	       "refused: the payload holds more than 7 opcodes",
	       "8 opcodes, limit 7");
	lim.max_opcodes = 0;
	is_str(verdict(S("\x00"), &lim),
	       "refused: the payload holds more than 0 opcodes",
	       "the opcode budget comes before the opcode check");

	lim = defaults;
	lim.max_memo = 2;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim), "ok",
	       "2 memo puts, limit 2");
	lim.max_memo = 1;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim),
	       "refused: the payload memoizes more than 1 objects",
	       "2 memo puts, limit 1");
	lim.max_memo = 0;
	is_str(verdict(S("Nr\x00\x00\x00\x00."), &lim),
	       "refused: the payload memoizes more than 0 objects",
	       "LONG_BINPUT counts");

	lim = defaults;
	lim.max_depth = 2;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim), "ok",
	       "depth 2, limit 2");
	lim.max_depth = 1;
	is_str(verdict(S("((K\x01q\x00\x94te."), &lim),
	       "refused: MARK nesting deeper than 1", "depth 2, limit 1");
	is_str(verdict(S("(t(t(t."), &lim), "ok",
	       "depth is nesting, not a count of MARKs");

	lim = defaults;
	lim.max_bytes = INT64_MAX;
	lim.max_opcodes = INT64_MAX;
	is_str(verdict(S("N."), &lim), "ok", "the largest budgets");
	lim.max_opcodes = INT64_MIN;
	is_str(verdict(S("N."), &lim),
	       "refused: the payload holds more than -9223372036854775808 "
	       "opcodes",
	       "the smallest budget");
}

/* A deep stream at the default budget: 512 MARKs pass, 513 do not. */
static void test_deep(void)
{
	static unsigned char s[1100];
	size_t depth, i, n;

	for (depth = 512; depth <= 513; depth++) {
		n = 0;
		for (i = 0; i < depth; i++)
			s[n++] = '(';
		for (i = 0; i < depth; i++)
			s[n++] = 't';
		s[n++] = '.';
		is_str(verdict(s, n, &defaults),
		       depth == 512 ? "ok"
				    : "refused: MARK nesting deeper than 512",
		       "%zu MARKs", depth);
	}
}

/* generated with CPython 3.11 pickle.dumps(protocol 5) and by hand */
static const struct {
	const char *name;
	size_t len;
	const char *data;
	const char *want;
} data_cases[] = {
	{ "data types", 90,
	  "\x80\x05\x95\x4f\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x4b"
	  "\x01\x47\x40\x04\x00\x00\x00\x00\x00\x00\x8c\x01\x73\x94\x43"
	  "\x01\x62\x94\x4e\x88\x4b\x01\x85\x94\x7d\x94\x8c\x01\x6b\x94"
	  "\x5d\x94\x4b\x01\x61\x73\x8f\x94\x28\x4b\x01\x90\x28\x4b\x02"
	  "\x91\x94\x96\x01\x00\x00\x00\x00\x00\x00\x00\x78\x94\x8a\x0d"
	  "\x00\x00\x00\x40\xea\xed\x74\x46\xd0\x9c\x2c\x9f\x0c\x65\x2e",
	  "ok" },
	{ "value classes", 522,
	  "\x80\x05\x95\xff\x01\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x8c"
	  "\x08\x62\x75\x69\x6c\x74\x69\x6e\x73\x94\x8c\x07\x63\x6f\x6d"
	  "\x70\x6c\x65\x78\x94\x93\x94\x47\x3f\xf0\x00\x00\x00\x00\x00"
	  "\x00\x47\x40\x00\x00\x00\x00\x00\x00\x00\x86\x94\x52\x94\x68"
	  "\x01\x8c\x05\x72\x61\x6e\x67\x65\x94\x93\x94\x4b\x00\x4b\x03"
	  "\x4b\x01\x87\x94\x52\x94\x8c\x0b\x63\x6f\x6c\x6c\x65\x63\x74"
	  "\x69\x6f\x6e\x73\x94\x8c\x0b\x4f\x72\x64\x65\x72\x65\x64\x44"
	  "\x69\x63\x74\x94\x93\x94\x29\x52\x94\x8c\x01\x61\x94\x4b\x01"
	  "\x73\x68\x0a\x8c\x07\x43\x6f\x75\x6e\x74\x65\x72\x94\x93\x94"
	  "\x7d\x94\x68\x0e\x4b\x01\x73\x85\x94\x52\x94\x68\x0a\x8c\x05"
	  "\x64\x65\x71\x75\x65\x94\x93\x94\x29\x4b\x03\x86\x94\x52\x94"
	  "\x4b\x01\x61\x8c\x07\x70\x61\x74\x68\x6c\x69\x62\x94\x8c\x0d"
	  "\x50\x75\x72\x65\x50\x6f\x73\x69\x78\x50\x61\x74\x68\x94\x93"
	  "\x94\x8c\x01\x2f\x94\x68\x0e\x8c\x01\x62\x94\x87\x94\x52\x94"
	  "\x8c\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x8c\x08\x64\x61"
	  "\x74\x65\x74\x69\x6d\x65\x94\x93\x94\x43\x0a\x07\xe4\x01\x02"
	  "\x00\x00\x00\x00\x00\x00\x94\x68\x1f\x8c\x08\x74\x69\x6d\x65"
	  "\x7a\x6f\x6e\x65\x94\x93\x94\x68\x1f\x8c\x09\x74\x69\x6d\x65"
	  "\x64\x65\x6c\x74\x61\x94\x93\x94\x4b\x00\x4b\x00\x4b\x00\x87"
	  "\x94\x52\x94\x85\x94\x52\x94\x86\x94\x52\x94\x68\x26\x4b\x01"
	  "\x4b\x00\x4b\x00\x87\x94\x52\x94\x8c\x07\x64\x65\x63\x69\x6d"
	  "\x61\x6c\x94\x8c\x07\x44\x65\x63\x69\x6d\x61\x6c\x94\x93\x94"
	  "\x8c\x03\x31\x2e\x35\x94\x85\x94\x52\x94\x8c\x04\x75\x75\x69"
	  "\x64\x94\x8c\x04\x55\x55\x49\x44\x94\x93\x94\x29\x81\x94\x7d"
	  "\x94\x8c\x03\x69\x6e\x74\x94\x4b\x05\x73\x62\x8c\x09\x69\x70"
	  "\x61\x64\x64\x72\x65\x73\x73\x94\x8c\x0b\x49\x50\x76\x34\x41"
	  "\x64\x64\x72\x65\x73\x73\x94\x93\x94\x4a\x04\x03\x02\x01\x85"
	  "\x94\x52\x94\x68\x3b\x8c\x0b\x49\x50\x76\x36\x4e\x65\x74\x77"
	  "\x6f\x72\x6b\x94\x93\x94\x8c\x04\x3a\x3a\x2f\x30\x94\x85\x94"
	  "\x52\x94\x8c\x04\x74\x69\x6d\x65\x94\x8c\x0b\x73\x74\x72\x75"
	  "\x63\x74\x5f\x74\x69\x6d\x65\x94\x93\x94\x28\x4d\xb2\x07\x4b"
	  "\x01\x4b\x01\x4b\x00\x4b\x00\x4b\x00\x4b\x03\x4b\x01\x4b\x00"
	  "\x74\x94\x7d\x94\x28\x8c\x07\x74\x6d\x5f\x7a\x6f\x6e\x65\x94"
	  "\x8c\x03\x47\x4d\x54\x94\x8c\x09\x74\x6d\x5f\x67\x6d\x74\x6f"
	  "\x66\x66\x94\x4b\x00\x75\x86\x94\x52\x94\x65\x2e",
	  "ok" },
	{ "fraction 3.11", 38,
	  "\x80\x05\x8c\x09\x66\x72\x61\x63\x74\x69\x6f\x6e\x73\x94\x8c"
	  "\x08\x46\x72\x61\x63\x74\x69\x6f\x6e\x94\x93\x94\x8c\x03\x31"
	  "\x2f\x33\x94\x85\x94\x52\x94\x2e",
	  "ok" },
	{ "fraction 3.12", 36,
	  "\x80\x05\x8c\x09\x66\x72\x61\x63\x74\x69\x6f\x6e\x73\x94\x8c"
	  "\x08\x46\x72\x61\x63\x74\x69\x6f\x6e\x94\x93\x94\x4b\x01\x4b"
	  "\x03\x86\x94\x52\x94\x2e",
	  "ok" },
	{ "pathlib 3.13", 43,
	  "\x80\x05\x8c\x0e\x70\x61\x74\x68\x6c\x69\x62\x2e\x5f\x6c\x6f"
	  "\x63\x61\x6c\x94\x8c\x09\x50\x6f\x73\x69\x78\x50\x61\x74\x68"
	  "\x94\x93\x94\x8c\x02\x2f\x78\x94\x85\x94\x52\x94\x2e",
	  "ok" },
	{ "BUILD on a class", 36,
	  "\x80\x05\x8c\x07\x70\x61\x74\x68\x6c\x69\x62\x8c\x08\x50\x75"
	  "\x72\x65\x50\x61\x74\x68\x93\x7d\x8c\x04\x5f\x73\x74\x72\x8c"
	  "\x02\x2f\x78\x73\x62\x2e",
	  "refused: class pathlib.PurePath is refused as a value: "
	  "remote-result-mode is data-only (values only)" },
	{ "BUILD on a memoized class", 48,
	  "\x80\x05\x8c\x09\x69\x70\x61\x64\x64\x72\x65\x73\x73\x8c\x0b"
	  "\x49\x50\x76\x34\x41\x64\x64\x72\x65\x73\x73\x93\x94\x30\x68"
	  "\x00\x7d\x8c\x0a\x69\x73\x5f\x70\x72\x69\x76\x61\x74\x65\x88"
	  "\x73\x62\x2e",
	  "refused: class ipaddress.IPv4Address is refused as a value: "
	  "remote-result-mode is data-only (values only)" },
	{ "BUILD on a fresh path", 30,
	  "\x80\x05\x8c\x07\x70\x61\x74\x68\x6c\x69\x62\x8c\x08\x50\x75"
	  "\x72\x65\x50\x61\x74\x68\x93\x8c\x01\x61\x85\x52\x7d\x62\x2e",
	  "refused: BUILD on a pathlib.PurePath is refused: "
	  "remote-result-mode is data-only (it changes only "
	  "containers the stream built)" },
	{ "BUILD twice on a UUID", 38,
	  "\x80\x05\x8c\x04\x75\x75\x69\x64\x8c\x04\x55\x55\x49\x44\x93"
	  "\x29\x81\x7d\x8c\x03int\x4b\x01\x73\x62"
	  "\x7d\x8c\x03int\x4b\x01\x73\x62\x2e",
	  "refused: BUILD on a uuid.UUID is refused: "
	  "remote-result-mode is data-only (it changes only "
	  "containers the stream built)" },
	/* UUID.__setstate__ calls SafeUUID(is_safe), whose error formats
	 * it: a list there was a DAG walked in full */
	{ "BUILD of a UUID with a list as is_safe", 39,
	  "\x80\x05\x8c\x04\x75\x75\x69\x64\x8c\x04\x55\x55\x49\x44\x93"
	  "\x29\x81\x7d\x8c\x03int\x4b\x01\x73\x8c\x07is_safe\x5d\x73\x62\x2e",
	  "refused: BUILD of a uuid.UUID with a state that is not one "
	  "({'int': int, 'is_safe': None, 0 or -1}) is refused: "
	  "remote-result-mode is data-only" },
	{ "SETITEM on a class", 35,
	  "\x80\x05\x8c\x0b\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73"
	  "\x8c\x0b\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x93\x4b"
	  "\x01\x4b\x02\x73\x2e",
	  "refused: SETITEM on a collections.OrderedDict is refused: "
	  "remote-result-mode is data-only (it changes only "
	  "containers the stream built)" },
	{ "deque of a range", 57,
	  "\x80\x05\x8c\x0b\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73"
	  "\x8c\x05\x64\x65\x71\x75\x65\x93\x8c\x08\x62\x75\x69\x6c\x74"
	  "\x69\x6e\x73\x8c\x05\x72\x61\x6e\x67\x65\x93\x8a\x07\x00\x80"
	  "\xc6\xa4\x7e\x8d\x03\x85\x52\x4b\x00\x86\x52\x2e",
	  "refused: REDUCE of collections.deque with these arguments is refused: "
	  "remote-result-mode is data-only (bounded "
	  "arguments only)" },
	{ "bytearray of a size", 32,
	  "\x80\x05\x8c\x08\x62\x75\x69\x6c\x74\x69\x6e\x73\x8c\x09\x62"
	  "\x79\x74\x65\x61\x72\x72\x61\x79\x93\x4a\x00\x28\x6b\xee\x85"
	  "\x52\x2e",
	  "refused: REDUCE of builtins.bytearray with these arguments is refused: "
	  "remote-result-mode is data-only (bounded "
	  "arguments only)" },
	{ "fraction of an exponent", 34,
	  "\x80\x05\x8c\x09\x66\x72\x61\x63\x74\x69\x6f\x6e\x73\x8c\x08"
	  "\x46\x72\x61\x63\x74\x69\x6f\x6e\x93\x8c\x05\x31\x65\x39\x39"
	  "\x39\x85\x52\x2e",
	  "refused: REDUCE of fractions.Fraction with these arguments is refused: "
	  "remote-result-mode is data-only (bounded "
	  "arguments only)" },
	{ "a class as the value", 23,
	  "\x80\x05\x8c\x07\x70\x61\x74\x68\x6c\x69\x62\x8c\x08\x50\x75"
	  "\x72\x65\x50\x61\x74\x68\x93\x2e",
	  "refused: class pathlib.PurePath is refused as a value: "
	  "remote-result-mode is data-only (values only)" },
	{ "a class in a list", 26,
	  "\x80\x05\x5d\x28\x8c\x07\x70\x61\x74\x68\x6c\x69\x62\x8c\x08"
	  "\x50\x75\x72\x65\x50\x61\x74\x68\x93\x65\x2e",
	  "refused: class pathlib.PurePath is refused as a value: "
	  "remote-result-mode is data-only (values only)" },
	{ "an unlisted global", 16,
	  "\x80\x05\x8c\x02\x6f\x73\x8c\x06\x73\x79\x73\x74\x65\x6d\x93"
	  "\x2e",
	  "refused: os.system is refused: "
	  "remote-result-mode is data-only (values only)" },
	{ "NEWOBJ_EX", 19,
	  "\x80\x05\x8c\x04\x75\x75\x69\x64\x8c\x04\x55\x55\x49\x44\x93"
	  "\x29\x7d\x92\x2e",
	  "refused: opcode NEWOBJ_EX is refused: "
	  "remote-result-mode is data-only" },
	{ "REDUCE of a value", 6,
	  "\x80\x05\x4e\x29\x52\x2e",
	  "refused: REDUCE of a value that is no class of the table is refused: "
	  "remote-result-mode is data-only" },
	{ "APPEND to a tuple", 7,
	  "\x80\x05\x29\x4b\x01\x61\x2e",
	  "refused: APPEND on a value that is no fresh container is refused: "
	  "remote-result-mode is data-only" },
	{ "an unset memo index", 5,
	  "\x80\x05\x68\x00\x2e",
	  "garbled: memo index 0 was never set" },
	{ "a far memo index", 9,
	  "\x80\x05\x4e\x72\xff\xff\xff\x7f\x2e",
	  "garbled: memo index 2147483647 out of order" },
	{ "APPEND across a MARK", 8,
	  "\x80\x05\x5d\x28\x4b\x01\x61\x2e",
	  "garbled: stack underflow in the pickle stream" },
};

static void test_data_only(void)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(data_cases); i++)
		is_str(verdict_in(data_cases[i].data, data_cases[i].len,
				  &defaults, SB_PRESCAN_DATA),
		       data_cases[i].want, "data-only: %s", data_cases[i].name);
	/* the same streams pass the shape-only scan of objects mode */
	is_str(verdict(data_cases[4].data, data_cases[4].len, &defaults),
	       "ok", "objects mode: BUILD on a class is the loader's");
}

/* A big dict, then Counter(d) again and again through the memo: each call
 * copies it, so the work grows with the calls, not with the bytes. */
static void test_work_budget(void)
{
	static unsigned char s[4096];
	struct sb_prescan_limits lim = defaults;
	size_t n = 0, i;

	s[n++] = 0x80;
	s[n++] = 5;
	s[n++] = ']'; /* the result list */
	s[n++] = 0x8c;
	s[n++] = 11;
	memcpy(s + n, "collections", 11);
	n += 11;
	s[n++] = 0x8c;
	s[n++] = 7;
	memcpy(s + n, "Counter", 7);
	n += 7;
	s[n++] = 0x93;
	s[n++] = 0x94; /* memo 0: Counter */
	s[n++] = '0';
	s[n++] = '}';
	s[n++] = '(';
	for (i = 0; i < 200; i++) {
		s[n++] = 'M';
		s[n++] = (unsigned char)i;
		s[n++] = 1;
		s[n++] = 'N';
	}
	s[n++] = 'u';
	s[n++] = 0x85;
	s[n++] = 0x94; /* memo 1: (d,) */
	s[n++] = '0';
	for (i = 0; i < 300; i++) {
		s[n++] = 'h';
		s[n++] = 0;
		s[n++] = 'h';
		s[n++] = 1;
		s[n++] = 'R';
		s[n++] = 'a';
	}
	s[n++] = '.';
	lim.max_work = 100000;
	is_str(verdict_in(s, n, &lim, SB_PRESCAN_DATA), "ok",
	       "300 copies of a 200-item dict, budget 100000");
	lim.max_work = 50000;
	is_str(verdict_in(s, n, &lim, SB_PRESCAN_DATA),
	       "refused: decoding the payload needs more than 50000 units of "
	       "work (max_result=)",
	       "300 copies of a 200-item dict, budget 50000");
}

static void test_value_classes(void)
{
	const char *module, *name;
	size_t i;

	for (i = 0; sb_prescan_class(i, &module, &name); i++)
		;
	ok(i > 20, "the table lists the value classes (%zu)", i);
	ok(!sb_prescan_class(i, &module, &name), "and ends");
}

/* The bits of sb_prescan_flags(), in both modes, on streams from
 * CPython's pickle.dumps (protocol 5): only an allowlisted stream gets
 * them, a refused one gets none. */
static void test_flags(void)
{
	static const struct {
		const char *name;
		const char *data;
		size_t len;
		unsigned flags;
	} cases[] = {
		{ "int", S("\x80\x05K\x01."),
		  SB_PRESCAN_NO_CLASS | SB_PRESCAN_TREE },
		{ "[1, 'a', (2.0,)]",
		  S("\x80\x05\x95\x16\x00\x00\x00\x00\x00\x00\x00]\x94"
		    "(K\x01\x8c\x01" "a\x94G@\x00\x00\x00\x00\x00\x00\x00"
		    "\x85\x94" "e."),
		  SB_PRESCAN_NO_CLASS | SB_PRESCAN_TREE },
		{ "{'k': {b'x'}}",
		  S("\x80\x05\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94"
		    "\x8c\x01k\x94\x8f\x94(C\x01x\x94\x90s."),
		  SB_PRESCAN_NO_CLASS | SB_PRESCAN_TREE },
		/* s = 'a'; [s, s]: a memo GET */
		{ "a shared str",
		  S("\x80\x05\x95\x0b\x00\x00\x00\x00\x00\x00\x00]\x94"
		    "(\x8c\x01" "a\x94h\x01" "e."),
		  SB_PRESCAN_NO_CLASS },
		{ "DUP", S("]2\x86."), SB_PRESCAN_NO_CLASS },
		/* l = []; [l, l] */
		{ "a shared list",
		  S("\x80\x05\x95\x09\x00\x00\x00\x00\x00\x00\x00]\x94"
		    "(]\x94h\x01" "e."),
		  SB_PRESCAN_NO_CLASS },
		/* set([1]), by pickle.dumps(protocol=2): GLOBAL is refused */
		{ "a call",
		  S("\x80\x02c__builtin__\nset\nq\x00]q\x01K\x01" "a\x85q\x02Rq"
		    "\x03."), 0 },
		/* frozenset() by protocol 5: STACK_GLOBAL then REDUCE */
		{ "STACK_GLOBAL",
		  S("\x80\x05\x8c\x08" "builtins\x94\x8c\x09" "frozenset\x94"
		    "\x93\x94)R\x94."), 0 },
	};
	unsigned flags;
	size_t i;
	int mode;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (mode = SB_PRESCAN_SHAPE; mode <= SB_PRESCAN_DATA;
		     mode++) {
			int r;

			flags = 0xdead;
			r = sb_prescan_flags((const unsigned char *)
					     cases[i].data, cases[i].len,
					     &defaults,
					     (enum sb_prescan_mode)mode, NULL,
					     &flags);
			if (r != 0) { /* protocol 2's GLOBAL: shape only */
				is_int(flags, 0, "%s: no flags on refusal",
				       cases[i].name);
				continue;
			}
			is_int(flags, cases[i].flags, "%s: flags (mode %d)",
			       cases[i].name, mode);
		}
	flags = 0xdead;
	is_int(sb_prescan_flags((const unsigned char *)"\x80\x05K\x01.", 5,
				&defaults, SB_PRESCAN_DATA, NULL, &flags),
	       0, "an int passes");
	is_int(flags, SB_PRESCAN_NO_CLASS | SB_PRESCAN_TREE, "as a tree");
	flags = 0xdead;
	/* a tree in its opcodes, but refused (the work budget) */
	{
		struct sb_prescan_limits lim = defaults;

		lim.max_work = 1;
		is_int(sb_prescan_flags((const unsigned char *)"]K\x01" "a.", 5,
					&lim, SB_PRESCAN_DATA, NULL, &flags),
		       -1, "over the work budget");
		is_int(flags, 0, "no flags when refused in pass two");
	}
	is_int(sb_prescan_flags((const unsigned char *)"\x80\x05K\x01.", 5,
				&defaults, SB_PRESCAN_DATA, NULL, NULL),
	       0, "flags may be NULL");
}

int main(void)
{
	test_pickles();
	test_refused_opcodes();
	test_unknown_bytes();
	test_garbled();
	test_budgets();
	test_deep();
	test_data_only();
	test_work_budget();
	test_value_classes();
	test_flags();
	return tap_done();
}
