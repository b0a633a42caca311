/* learn_file.h - collecting records and saving learned rules (launcher). */
#ifndef SB_LEARN_FILE_H
#define SB_LEARN_FILE_H

#include "learn.h"

struct sb_learn_session {
	struct sb_arena *arena;
	struct sb_learned learned;
	struct sb_buf pending;   /* a partial record line */
	struct sb_learn_ctx ctx; /* ctx.date is filled at each save */
	const char *path;        /* the rule file learned into (absolute) */
	const char *display;     /* as messages name it */
	bool saved_once;
	bool quiet_when_unchanged;
};

/* Take record bytes as they arrive. */
void sb_learn_feed(struct sb_learn_session *s, const char *data, size_t len);
/* Merge and write (4.5); 0, or -1 when the rules could not be saved (they
 * are then printed on stderr). Safe to call more than once. */
int sb_learn_save(struct sb_learn_session *s);

#endif
