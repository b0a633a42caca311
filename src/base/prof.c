/* prof.c - the start-up profile (prof.h). Off unless $PYSB_PROFILE is set:
 * then each phase of a launch records CLOCK_MONOTONIC at its end, and the
 * process that execs the interpreter prints them on one line before it
 * does (the supervisor's child inherits the launcher's marks by fork). The
 * guard, in the interpreter, marks its own phases against the launcher's
 * start, which it gets in $PYSB_PROFILE_T0 (removed before Python starts).
 * scripts/profile runs launches and prints the medians (make profile).
 */
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_MARKS 32

static struct {
	bool on;
	uint64_t t0;
	size_t n;
	struct {
		const char *phase;
		uint64_t at;
	} marks[MAX_MARKS];
} prof;

uint64_t sb_prof_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sb_prof_start(void)
{
	const char *v = getenv(SB_PROF_ENV);

	prof.on = v && *v;
	prof.n = 0;
	prof.t0 = prof.on ? sb_prof_now() : 0;
}

void sb_prof_start_at(uint64_t t0)
{
	prof.on = true;
	prof.n = 0;
	prof.t0 = t0;
}

bool sb_prof_on(void)
{
	return prof.on;
}

uint64_t sb_prof_t0(void)
{
	return prof.t0;
}

void sb_prof_mark(const char *phase)
{
	if (!prof.on)
		return;
	if (prof.n < MAX_MARKS) {
		prof.marks[prof.n].phase = phase;
		prof.marks[prof.n].at = sb_prof_now();
		prof.n++;
	}
}

void sb_prof_dump(const char *who)
{
	size_t i;

	if (!prof.n)
		return;
	fprintf(stderr, "pysb-profile %s", who);
	for (i = 0; i < prof.n; i++)
		fprintf(stderr, " %s=%.1f", prof.marks[i].phase,
			(double)(prof.marks[i].at - prof.t0) / 1e3);
	fputc('\n', stderr);
	fflush(stderr);
	prof.n = 0;
}
