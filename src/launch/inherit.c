/* inherit.c - close the descriptors the caller left open (inherit.h). */
#include "inherit.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FALLBACK_MAX 65536 /* the last descriptor tried without close_range */

static bool kept(const int *keep, size_t n, int fd)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (keep[i] == fd)
			return true;
	return false;
}

static void note(struct sb_inherited *out, int fd)
{
	size_t i, n = out->n_closed < SB_INHERIT_SHOWN ? out->n_closed
						       : SB_INHERIT_SHOWN;

	out->n_closed++;
	/* keep the lowest: /proc lists in no promised order */
	for (i = n; i > 0 && out->closed[i - 1] > fd; i--)
		if (i < SB_INHERIT_SHOWN)
			out->closed[i] = out->closed[i - 1];
	if (i < SB_INHERIT_SHOWN)
		out->closed[i] = fd;
}

/* What is open above 2 and not kept, for the learning note. */
static void list_open(const int *keep, size_t n_keep, struct sb_inherited *out)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return; /* no /proc: closed all the same, unnamed */
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || fd < 3 || fd == dirfd(d) ||
		    kept(keep, n_keep, (int)fd))
			continue;
		note(out, (int)fd);
	}
	closedir(d);
}

/* Close [lo, hi]; without close_range (before Linux 5.9) one at a time,
 * up to the soft limit of descriptors or FALLBACK_MAX. */
static int close_span(unsigned lo, unsigned hi)
{
	struct rlimit rl;
	unsigned fd, last = hi;

	if (lo > hi)
		return 0;
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur - 1 < last)
		last = (unsigned)rl.rlim_cur - 1;
	if (last > FALLBACK_MAX)
		last = FALLBACK_MAX;
	for (fd = lo; fd <= last; fd++)
		(void)close((int)fd);
	return 0;
}

int sb_inherit_close(const int *keep, size_t n_keep, struct sb_inherited *out,
		     char *err, size_t errlen)
{
	unsigned lo = 3;
	int k;

	memset(out, 0, sizeof(*out));
	list_open(keep, n_keep, out);
	/* the gaps between the kept ones, in ascending order */
	for (k = 3; k <= 1023; k++) {
		if (!kept(keep, n_keep, k))
			continue;
		if (close_span(lo, (unsigned)k - 1) < 0)
			goto fail;
		lo = (unsigned)k + 1;
	}
	if (close_span(lo, ~0U) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen,
		 "cannot close the descriptors the caller left open: %s",
		 strerror(errno));
	return -1;
}
