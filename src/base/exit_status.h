/* exit_status.h - the one vocabulary of python-sb's own exit statuses.
 * A run ends with the program's status, or with one of these when python-sb
 * itself stops it; python-sb(1) EXIT STATUS documents them. Every file that
 * exits or returns a status for python-sb's own reasons uses these names,
 * never a bare number.
 */
#ifndef SB_EXIT_STATUS_H
#define SB_EXIT_STATUS_H

/* A command line python-sb cannot read. */
#define SB_EXIT_USAGE 2
/* python-sb refused or could not set up the run: a policy error, a rule
 * the provider cannot enforce, a setup step that failed. Nothing of the
 * program ran, or what ran was stopped: never a half-sandboxed run. */
#define SB_EXIT_SETUP 255
/* A limit-* rule ended the run (run_limits.c): the timer of limit-time, the
 * SIGXCPU or SIGKILL of limit-cpu, the SIGXFSZ of limit-file-size, the
 * OOM kill of the run's memory cgroup. 124, as timeout(1) says a time
 * limit ended its command. */
#define SB_EXIT_LIMIT 124

#endif
