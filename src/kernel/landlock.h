/* landlock.h - the Landlock half of os-sandbox=landlock: which file trees
 * and TCP ports the program keeps, and the scoping of abstract Unix sockets
 * and signals. kernel.c calls it; qemu_net.c calls sb_landlock_egress for
 * passt.
 */
#ifndef SB_LANDLOCK_H
#define SB_LANDLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "filecall.h"
#include "kernel.h"

/* Below this ABI a named landlock refuses to run: without TCP rules (ABI 4,
 * Linux 6.7) the default network boundary would silently be missing. */
#define SB_LANDLOCK_MIN_ABI 4

/* Landlock cannot judge more ports than this without a huge ruleset; past
 * it the access right is left unhandled and the Python layer filters. */
#define SB_LANDLOCK_MAX_PORTS 4096

/* The running kernel's Landlock ABI version, 0 when it has none (not built,
 * or not in the lsm= list). */
/* The kernel's Landlock ABI (0: none), or $PYSB_LANDLOCK_ABI when that is
 * lower (a digit: the tests' older kernel). */
int sb_landlock_abi(void);

/* What net= becomes under Landlock (pure: no syscall). A right that is not
 * handled stays open to native code (too many ports, or an ABI below 4). */
struct sb_landlock_net {
	bool connect_handled, bind_handled;
	size_t n_connect, n_bind; /* distinct ports allowed */
	bool connect_all, bind_all; /* the limit was passed */
};
void sb_landlock_net_plan(const struct sb_policy *p, int abi,
			  struct sb_landlock_net *out);

/* One implicit rule: a path the interpreter needs, and how. */
enum sb_landlock_use {
	SB_LL_READ,      /* read files, list directories */
	SB_LL_EXEC,      /* read and execute one file */
	SB_LL_LIST,      /* list a directory, no file contents */
	SB_LL_READWRITE, /* a device node written to (/dev/null) */
	SB_LL_SCRIPT,    /* the script run: read that file */
};
struct sb_landlock_path {
	const char *path;
	enum sb_landlock_use use;
};

/* The implicit rules for this interpreter, guard and package directory,
 * and ctx->script (the file the interpreter runs, or NULL) as the guard
 * exposes it; paths that do not exist are left out. Reads the file system (symlinks,
 * ELF headers), never writes. */
void sb_landlock_implicit(struct sb_arena *a, const struct sb_kernel_ctx *ctx,
			  struct sb_landlock_path **out, size_t *n);

/* Restrict the calling process: handle every right of 'abi', allow the
 * policy's exposures, the implicit paths and the TCP ports of net=, scope
 * abstract sockets and signals (ABI 6), set no_new_privs and restrict_self.
 * Returns 0, or -1 with *err naming the step. Irreversible once it returns
 * 0; a -1 after restrict_self cannot happen (it is the last step). */
int sb_landlock_apply(struct sb_arena *a, const struct sb_policy *p,
		      const struct sb_kernel_ctx *ctx, int abi,
		      const char **err);

/* The host's side of os-sandbox=qemu's network (qemu_net.c): restrict
 * the calling process (passt, about to be exec'd) to connecting to the TCP
 * ports the policy's ALLOW rules name (every port when there are more
 * than SB_LANDLOCK_MAX_PORTS) and binding none, with abstract sockets and
 * signals scoped; no file right is handled. 0, or -1 with *err. */
int sb_landlock_egress(struct sb_arena *a, const struct sb_policy *p,
		       int abi, const char **err);

/* The ruleset sb_landlock_apply would build, as data: what a denial log
 * compares a file call with (filelog.c) to record the refusals Landlock
 * makes. Reads the file system as sb_landlock_apply does. */
struct sb_landlock_view;
struct sb_landlock_view *sb_landlock_view_new(struct sb_arena *a,
					      const struct sb_policy *p,
					      const struct sb_kernel_ctx *ctx,
					      int abi);
/* The Landlock rights access 'x' needs: on the file (open, exec,
 * truncate; for an open that makes the file, on the path it will have),
 * or on the directory that holds the entry (make, remove). 'exists' and
 * 'type' (S_IF*) say what is there now; for rename's target, 'type' is the
 * type of the entry moved. Landlock's REFER right (a link or rename across
 * directories) is not modelled. */
uint64_t sb_landlock_need(const struct sb_fc_access *x, bool exists,
			  unsigned type);
/* Does 'need' hold a right beyond reading and executing? */
bool sb_landlock_need_writes(uint64_t need);
/* The rights of 'need' the ruleset handles and does not grant at the
 * canonical path 'canon': 0 when Landlock lets the access happen. */
uint64_t sb_landlock_view_missing(const struct sb_landlock_view *v,
				  const char *canon, uint64_t need);

#endif
