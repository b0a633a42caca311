/* ttystate.h - the state of the descriptors a run inherits (0, 1, 2) that
 * its program can change for the caller too: the status flags of their
 * open file descriptions (O_NONBLOCK, O_APPEND, O_ASYNC), which the caller
 * shares, and a terminal's modes. run.c notes them before the run and
 * sets back what changed after it (ttystate.c).
 */
#ifndef SB_TTYSTATE_H
#define SB_TTYSTATE_H

#include <stdbool.h>
#include <sys/types.h>
#include <termios.h>

struct sb_ttystate {
	bool open[3]; /* the descriptor was open: 'flags' holds */
	int flags[3];
	bool tty[3]; /* a terminal: 'modes' holds */
	struct termios modes[3];
	bool pipe[3]; /* an anonymous pipe: 'mode' holds */
	mode_t mode[3];
};

/* Note the state of descriptors 0, 1 and 2. */
void sb_ttystate_save(struct sb_ttystate *s);

/* An anonymous pipe among them can be opened again through
 * /proc/self/fd/N for writing (attack K52: a line written into the
 * caller's stdin pipe, which its next command reads): take the write bits
 * off a pipe the descriptor may only read, so that the program, which
 * holds no capability and whose chmod of a pipe the supervisor refuses,
 * cannot. Set back by sb_ttystate_restore. */
void sb_ttystate_narrow_pipes(const struct sb_ttystate *s);

/* Set back what the run changed of it; errors are ignored (the
 * descriptor may be gone, the terminal hung up). */
void sb_ttystate_restore(const struct sb_ttystate *s);

#endif
