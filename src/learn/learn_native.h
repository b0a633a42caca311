/* learn_native.h - learning sees native code too (learn_native.c): the
 * opens, execs, directory changes and socket addresses of the whole process
 * tree, shown to the
 * learning supervisor by a seccomp user-notification filter, become the
 * same records the guard writes (learn.h).
 */
#ifndef SB_LEARN_NATIVE_H
#define SB_LEARN_NATIVE_H

#include <sys/types.h>

#include "kernel.h"
#include "learn_file.h"

struct sb_learn_native;

/* What is never recorded is fixed here: the implicit paths of 'ctx' as
 * os-sandbox=landlock grants them (the interpreter, its trees, shared
 * libraries, CA stores, the guard...), ctx->script, the file the
 * interpreter runs (or NULL), /proc, /sys and /dev. Records go to 's'. Reads the file
 * system (realpath), never writes. */
struct sb_learn_native *sb_learn_native_new(struct sb_arena *a,
					    struct sb_learn_session *s,
					    const struct sb_kernel_ctx *ctx);

/* Take one pending notification from 'listener': record what the call
 * names, and let it go on as the program asked (learning refuses nothing).
 * Returns 0, or -1 when nothing could be received (the caller went away). */
/* The program's pid, once forked: a connection to a port it or its
 * children listen on is learned as port 'self' (selfport.c). */
void sb_learn_native_set_root(struct sb_learn_native *n, pid_t root);

int sb_learn_native_serve(struct sb_learn_native *n, int listener);

/* Free what serving allocated outside the arena. */
void sb_learn_native_done(struct sb_learn_native *n);

#endif
