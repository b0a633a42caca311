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
	/* where the next run would read a rule file first (canonical, the
	 * first searched first): a file this run makes goes to the first of
	 * them when its rules let the program make one there */
	const char *const *shadows;
	size_t n_shadows;
	bool saved_once;
	size_t refused_told; /* learned.refused already said */
	bool quiet_when_unchanged;
	/* the rule file as this run last read or wrote it (sb_learn_begin):
	 * a save merges into that text only, never into what the program
	 * (which ran unconfined) put there meanwhile */
	bool seen_taken, seen_exists;
	char *seen;
	size_t seen_len;
};

/* Before the program starts: note the rule file as it is. 0, or -1 when
 * it cannot be read (silent: the run goes on, and the save, which then
 * refuses to merge, says why). */
int sb_learn_begin(struct sb_learn_session *s);

/* Take record bytes as they arrive. */
void sb_learn_feed(struct sb_learn_session *s, const char *data, size_t len);
/* Merge and write (4.5); 0, or -1 when the rules could not be saved (they
 * are then printed on stderr). Safe to call more than once. */
int sb_learn_save(struct sb_learn_session *s);

/* Partial mode's learned result mode (sb_learn_result_mode) written into
 * the rule file 'path' as sb_learn_save writes (the same lock, checks and
 * atomic rename). 'fresh': the learning run saved nothing this time, so
 * back the file up first and say what changed. 0 (written, or nothing to
 * add), or -1 with a message, the file untouched. */
int sb_learn_save_result_mode(struct sb_arena *a, const char *path,
			      const char *display, const char *cwd,
			      bool objects, bool in_force,
			      enum sb_mode_origin origin, bool fresh);

#endif
