/* supervise.h - the launcher stays as the program's parent (learning). */
#ifndef SB_SUPERVISE_H
#define SB_SUPERVISE_H

#include <sys/types.h>

#include "learn_file.h"
#include "learn_native.h"

struct sb_limits;

/* Run argv with envp in a child, 'keep_fd' inherited (the write end of
 * the record pipe), 'rec_fd' the read end. Until the child ends: feed the
 * records to 's', forward the signals another process sends (supervisor.h),
 * and save the rules on the first SIGINT/SIGTERM/SIGQUIT; save them again
 * at the end.
 * With 'native', the child loads the learning seccomp filter before it
 * execs (the whole process tree inherits it) and this process serves its
 * notifications through 'native'; a kernel that cannot load it is warned
 * about once, and the run learns what the Python layer sees. NULL: none.
 * With 'lim' (run_limits.h, set up), the child joins the run's cgroup and
 * sets the rlimits, and this process holds the rest of the limits as the
 * other supervisors do; a limit that ends the run ends every process of
 * it. NULL: no limit.
 * Returns python-sb's exit status: the program's (128+N for a signal),
 * 124 when a limit ended the run, or 255 when the child could not start
 * or the rules could not be saved.
 * 'channel': partial mode's socket (supervisor.h, sb_sup_channel), else
 * -1: the run ends with the caller, and nothing of it outlives it. */
int sb_supervise_learning(const char *path, char *const argv[],
			  char *const envp[], int keep_fd, int rec_fd,
			  struct sb_learn_session *s,
			  struct sb_learn_native *native, struct sb_limits *lim,
			  int channel);

#endif
