/* prof.h - the start-up profile (make profile): where the time of one
 * launch goes, phase by phase.
 */
#ifndef SB_PROF_H
#define SB_PROF_H

#include <stdbool.h>
#include <stdint.h>

/* The environment variable that turns it on (any non-empty value), and
 * the one that hands the launcher's start time to the guard. */
#define SB_PROF_ENV "PYSB_PROFILE"
#define SB_PROF_T0_ENV "PYSB_PROFILE_T0"

/* Start the profile of this launch if $PYSB_PROFILE is set: the first
 * mark, "start", is now. */
void sb_prof_start(void);

/* The guard's start: the launcher's start time, from $PYSB_PROFILE_T0. */
void sb_prof_start_at(uint64_t t0);

/* Is a profile being taken? */
bool sb_prof_on(void);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t sb_prof_now(void);

/* The start's clock value (0 when off), for the guard's marks. */
uint64_t sb_prof_t0(void);

/* Mark the end of a phase: 'phase' must be a string literal (kept, not
 * copied). At most 32 marks; nothing when off. */
void sb_prof_mark(const char *phase);

/* One line on stderr, "pysb-profile <who> phase=us ...", microseconds
 * since the launcher's start, then the marks are forgotten. Called just
 * before an exec: the process is single-threaded there. */
void sb_prof_dump(const char *who);

#endif
