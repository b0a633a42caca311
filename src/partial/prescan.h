/* prescan.h - the opcode pre-scan of the partial-mode result channel.
 *
 * sb_prescan() walks a pickle stream from a sandboxed worker without
 * executing anything. In every mode: an opcode allowlist and budgets on
 * bytes, opcodes, memo entries and MARK depth, memo indices that stay
 * dense (a 5-byte LONG_BINPUT cannot make the unpickler allocate gigabytes)
 * and frames that hold whole opcodes (an unpickler that reads a file reads
 * an argument across a frame's end from past it: other opcodes than these).
 * In data-only mode it also runs the stream symbolically, on a stack of
 * shapes, and admits only the data opcodes and argument shapes of its table:
 * a global is one of the value classes and may only be called; a call takes
 * only the argument shapes listed for its class, whose cost is bounded (no
 * range or iterator for a constructor that consumes it, no size argument);
 * BUILD, SETITEM(S), APPEND(S) and ADDITEMS change only objects the stream
 * itself just built; and the work of the calls is charged to a budget
 * proportional to the stream, before anything is decoded.
 *
 * The partial-mode parent calls it through the _pysbframe extension
 * (python/pysandboxes/_pysbframe.c), libFuzzer through fuzz_prescan.c.
 */
#ifndef SB_PRESCAN_H
#define SB_PRESCAN_H

#include <stdbool.h>
#include <stddef.h>

#define SB_PRESCAN_ABI 3
#define SB_PRESCAN_MSG_MAX 160

enum sb_prescan_mode {
	SB_PRESCAN_SHAPE = 0, /* objects mode: opcodes and budgets only */
	SB_PRESCAN_DATA = 1,  /* data-only: plus the table of shapes */
};

/* Budgets of one stream; a negative one refuses everything it bounds.
 * max_work bounds, in data-only mode, the opcodes plus the elements and
 * bytes that the calls of the stream consume or copy. */
struct sb_prescan_limits {
	long long max_bytes;
	long long max_opcodes;
	long long max_memo;
	long long max_depth;
	long long max_work;
};

struct sb_prescan_error {
	/* true: no well-formed pickle at all (the worker is out of step);
	 * false: a refused opcode, shape or a budget overrun */
	bool garbled;
	char message[SB_PRESCAN_MSG_MAX];
};

/* 0 when the stream of 'len' bytes at 'data' passes, else -1 and, when
 * 'err' is not NULL, the reason in it (message NUL-terminated). 'data' may
 * be NULL when 'len' is 0. Reads nothing past data[len - 1], never prints;
 * in data-only mode it allocates work arrays proportional to the opcodes
 * of the stream (freed before it returns; "out of memory" is a refusal). */
int sb_prescan(const unsigned char *data, size_t len,
	       const struct sb_prescan_limits *lim, enum sb_prescan_mode mode,
	       struct sb_prescan_error *err);

/* What sb_prescan_flags() says of a stream that passes, in either mode:
 * NO_CLASS: no opcode names a class or calls or builds one (no
 * STACK_GLOBAL, REDUCE, NEWOBJ, NEWOBJ_EX, BUILD), so an unpickler never
 * calls find_class or persistent_load on it. TREE: NO_CLASS, and no memo
 * GET or DUP either: every object it makes is referenced once in the
 * result, which is a tree of at most as many values as the stream has
 * opcodes (CPython's own shared constants, such as the empty tuple,
 * aside), never a cycle. Each bit is set only when every opcode of the
 * stream is on its list (an allowlist in prescan.c). */
#define SB_PRESCAN_NO_CLASS 1u
#define SB_PRESCAN_TREE 2u

/* sb_prescan(), and on success *flags (when not NULL) the bits above;
 * 0 on refusal. */
int sb_prescan_flags(const unsigned char *data, size_t len,
		     const struct sb_prescan_limits *lim,
		     enum sb_prescan_mode mode, struct sb_prescan_error *err,
		     unsigned *flags);

/* The value classes of data-only mode, as pickle names them: the i-th
 * module and name, or false past the end. The parent's find_class admits
 * exactly these. */
bool sb_prescan_class(size_t i, const char **module, const char **name);

#endif
