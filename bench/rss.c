/* rss.c - run a command and report its peak RSS. Measured from a small
 * process: a child forked from the (large) benchmark driver would carry the
 * driver's own pages into ru_maxrss. Prints "maxrss <KiB>" on stderr and
 * exits with the command's status. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;

	if (argc < 2)
		return 2;
	pid = fork();
	if (pid < 0)
		return 127;
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return 127;
	fprintf(stderr, "maxrss %ld\n", ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
