/* prescan.h - the opcode pre-scan of the partial-mode result channel.
 *
 * sb_prescan() walks a pickle stream from a sandboxed worker without
 * executing anything: an opcode allowlist and budgets on bytes, opcodes,
 * memo entries and MARK depth. It is the C form of _prescan_py() in
 * python/pysandboxes/_unpickle.py and gives the same verdict and the same
 * message for every input; the parent loads it with ctypes from
 * libpysb-prescan.so, so this ABI is what _unpickle.py declares: change
 * both together and bump SB_PRESCAN_ABI.
 */
#ifndef SB_PRESCAN_H
#define SB_PRESCAN_H

#include <stdbool.h>
#include <stddef.h>

#define SB_PRESCAN_ABI 1
#define SB_PRESCAN_MSG_MAX 160

/* Budgets of one stream; a negative one refuses everything it bounds, as
 * Python's comparisons do. */
struct sb_prescan_limits {
	long long max_bytes;
	long long max_opcodes;
	long long max_memo;
	long long max_depth;
};

struct sb_prescan_error {
	/* true: no well-formed pickle at all (the worker is out of step);
	 * false: a refused opcode or a budget overrun */
	bool garbled;
	char message[SB_PRESCAN_MSG_MAX];
};

/* 0 when the stream of 'len' bytes at 'data' passes, else -1 and, when
 * 'err' is not NULL, the reason in it (message NUL-terminated, the text
 * _prescan_py raises). 'data' may be NULL when 'len' is 0. Reads nothing
 * past data[len - 1], allocates nothing, never prints. */
int sb_prescan(const unsigned char *data, size_t len,
	       const struct sb_prescan_limits *lim,
	       struct sb_prescan_error *err);

/* SB_PRESCAN_ABI of the library: the loader refuses another one. */
int sb_prescan_abi(void);

#endif
