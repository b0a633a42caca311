/* caller.c - the caller's closed standard descriptors and ignored SIGCHLD,
 * held aside and given back (caller.h). */
#include "caller.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static bool std_closed[3];
static bool chld_ignored;
static struct sigaction chld_given;

/* Is 'fd' still the /dev/null that holds its place? Something python-sb
 * put there on purpose stays. */
static bool placeholder(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(1, 3);
}

int sb_caller_take(int *bad)
{
	struct sigaction now, dfl = { .sa_handler = SIG_DFL };
	int fd, got;

	for (fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* the lowest free number: this one, the lower ones held */
		got = open("/dev/null", O_RDWR);
		if (got != fd) {
			if (got >= 0)
				close(got);
			if (got >= 0 || errno == 0)
				errno = EBADF;
			*bad = fd;
			return -1;
		}
		std_closed[fd] = true;
	}
	if (sigaction(SIGCHLD, NULL, &now) == 0 &&
	    (now.sa_handler == SIG_IGN || (now.sa_flags & SA_NOCLDWAIT))) {
		chld_given = now;
		chld_ignored = true;
		sigaction(SIGCHLD, &dfl, NULL);
	}
	return 0;
}

void sb_caller_give(void)
{
	int fd;

	for (fd = 0; fd < 3; fd++)
		if (std_closed[fd] && placeholder(fd))
			close(fd);
	if (chld_ignored)
		sigaction(SIGCHLD, &chld_given, NULL);
}
