/* ttystate.h - the state of the descriptors a run inherits (0, 1, 2) that
 * its program can change for the caller too: the status flags of their
 * open file descriptions (O_NONBLOCK, O_APPEND, O_ASYNC), which the caller
 * shares, and a terminal's modes. run.c notes them before the run and
 * sets back what changed after it (ttystate.c).
 */
#ifndef SB_TTYSTATE_H
#define SB_TTYSTATE_H

#include <stdbool.h>
#include <termios.h>

struct sb_ttystate {
	bool open[3]; /* the descriptor was open: 'flags' holds */
	int flags[3];
	bool tty[3]; /* a terminal: 'modes' holds */
	struct termios modes[3];
};

/* Note the state of descriptors 0, 1 and 2. */
void sb_ttystate_save(struct sb_ttystate *s);

/* Set back what the run changed of it; errors are ignored (the
 * descriptor may be gone, the terminal hung up). */
void sb_ttystate_restore(const struct sb_ttystate *s);

#endif
