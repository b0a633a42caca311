/* qemu_net.c - the life of passt, os-sandbox=qemu's network (qemu_net.h):
 * found, forked on one end of a socket pair before qemu starts, restricted
 * by a host Landlock ruleset (sb_landlock_egress) before its exec, ended
 * with the run. The child says on a close-on-exec pipe why it could not
 * exec (end of file: passt runs), so that a run never starts with a stack
 * other than the one planned.
 *
 * passt's options: --fd (the socket pair, no socket file), one client,
 * foreground, IPv4 only; the guest's address, netmask and gateway fixed
 * (the guest's init sets them: no DHCP, no NDP, no router advertisement);
 * --no-map-gw (the gateway is not the host's loopback, which the guest
 * never reaches: its 127.0.0.1 is its own); no port of the host forwarded
 * into the guest; no ICMP; UDP only when a rule allows UDP or names a host
 * whose lookups the guest may make.
 */
#include "qemu_net.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exit_status.h"
#include "landlock.h"
#include "policy_net.h"

#define PASST_PACKAGE "passt"
#define PASST_FD 3

static const char *find_passt(void)
{
	static const char *const cands[] = { "/usr/bin/passt",
					     "/usr/local/bin/passt",
					     "/bin/passt" };
	const char *env = getenv("PYSB_PASST");
	size_t i;

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (i = 0; i < SB_ARRAY_LEN(cands); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return NULL;
}

/* May the guest send UDP at all: a rule allows it, or a lookup may go out
 * (a host named by a rule, or every name). */
static bool wants_udp(const struct sb_policy *p)
{
	size_t i;

	if (p->pins.n || sb_net_names_any(p))
		return true;
	for (i = 0; i < p->nets.n; i++)
		if (p->nets.v[i].allow && (p->nets.v[i].kinds & SB_NET_UDP))
			return true;
	return false;
}

static int fail(const char *what, const char *detail, const char *hint)
{
	fprintf(stderr,
		"python-sb: os-sandbox=qemu: %s%s%s; nothing was run.\n", what,
		detail ? ": " : "", detail ? detail : "");
	if (hint)
		fprintf(stderr, "Hint: %s\n", hint);
	return SB_EXIT_SETUP;
}

/* Between fork and exec: passt's descriptors, its ruleset, its exec. A
 * failure is written to 'report' and ends the child. */
static void child(struct sb_arena *a, const struct sb_policy *p,
		  const char *tool, char **argv, int sock, int report,
		  pid_t parent)
{
	const char *err = NULL;
	char msg[512];
	int null, n;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(SB_EXIT_SETUP);
	setpgid(0, 0); /* not the terminal's Ctrl-C: the run ends it */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    (!getenv("PYSB_DEBUG") && dup2(null, 2) < 0) ||
	    dup2(sock, PASST_FD) < 0) {
		err = sb_arena_printf(a, "passt's descriptors: %s",
				      strerror(errno));
		goto out;
	}
	if (report != PASST_FD + 1 &&
	    (dup2(report, PASST_FD + 1) < 0 ||
	     fcntl(PASST_FD + 1, F_SETFD, FD_CLOEXEC) < 0)) {
		err = sb_arena_printf(a, "passt's descriptors: %s",
				      strerror(errno));
		goto out;
	}
	report = PASST_FD + 1;
	/* nothing else of python-sb's: the policy, qemu's channels */
	syscall(SYS_close_range, PASST_FD + 2, ~0U, 0);
	if (sb_landlock_egress(a, p, sb_landlock_abi(), &err) < 0)
		goto out;
	execv(tool, argv);
	err = sb_arena_printf(a, "exec %s: %s", tool, strerror(errno));
out:
	n = snprintf(msg, sizeof(msg), "%s", err);
	if (write(report, msg, (size_t)n) < 0)
		_exit(SB_EXIT_SETUP);
	_exit(SB_EXIT_SETUP);
}

int sb_qemu_net_start(struct sb_arena *a, const struct sb_policy *p,
		      struct sb_qemu_net *n)
{
	const char *tool = find_passt();
	SB_VEC(char *) v = { 0 };
	int sv[2], rep[2], abi = sb_landlock_abi();
	char msg[512];
	ssize_t got;
	pid_t parent = getpid();

	n->pid = 0;
	n->qemu_fd = -1;
	if (!tool)
		return fail("net= rules give the guest a network card whose "
			    "way out is passt, and passt is not installed",
			    getenv("PYSB_PASST") ? "$PYSB_PASST" : NULL,
			    "sudo apt-get install " PASST_PACKAGE
			    "; or use os-sandbox=landlock");
	if (abi < SB_LANDLOCK_MIN_ABI)
		return fail("net= rules: passt, the guest's way out, runs "
			    "under a Landlock ruleset of TCP ports, and this "
			    "kernel's Landlock is too old or off",
			    sb_arena_printf(a, "ABI %d, %d needed (Linux 6.7)",
					    abi, SB_LANDLOCK_MIN_ABI),
			    "use os-sandbox=landlock, or a newer kernel");
	*SB_VEC_PUSH(a, v) = (char *)"passt";
	*SB_VEC_PUSH(a, v) = (char *)"--foreground";
	*SB_VEC_PUSH(a, v) = (char *)"--quiet";
	*SB_VEC_PUSH(a, v) = (char *)"--one-off";
	*SB_VEC_PUSH(a, v) = (char *)"--fd";
	*SB_VEC_PUSH(a, v) = sb_arena_printf(a, "%d", PASST_FD);
	*SB_VEC_PUSH(a, v) = (char *)"--ipv4-only";
	*SB_VEC_PUSH(a, v) = (char *)"--address";
	*SB_VEC_PUSH(a, v) = (char *)SB_QEMU_NET_ADDR;
	*SB_VEC_PUSH(a, v) = (char *)"--netmask";
	*SB_VEC_PUSH(a, v) = (char *)SB_QEMU_NET_PREFIX;
	*SB_VEC_PUSH(a, v) = (char *)"--gateway";
	*SB_VEC_PUSH(a, v) = (char *)SB_QEMU_NET_GW;
	*SB_VEC_PUSH(a, v) = (char *)"--no-map-gw";
	*SB_VEC_PUSH(a, v) = (char *)"--no-icmp";
	*SB_VEC_PUSH(a, v) = (char *)"--no-dhcp";
	*SB_VEC_PUSH(a, v) = (char *)"--no-dhcpv6";
	*SB_VEC_PUSH(a, v) = (char *)"--no-ndp";
	*SB_VEC_PUSH(a, v) = (char *)"--no-ra";
	if (!wants_udp(p))
		*SB_VEC_PUSH(a, v) = (char *)"--no-udp";
	*SB_VEC_PUSH(a, v) = (char *)"-t";
	*SB_VEC_PUSH(a, v) = (char *)"none";
	*SB_VEC_PUSH(a, v) = (char *)"-u";
	*SB_VEC_PUSH(a, v) = (char *)"none";
	*SB_VEC_PUSH(a, v) = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(rep, O_CLOEXEC) < 0)
		return fail("passt's socket pair", strerror(errno), NULL);
	fflush(NULL);
	n->pid = fork();
	if (n->pid < 0) {
		n->pid = 0;
		close(sv[0]);
		close(sv[1]);
		close(rep[0]);
		close(rep[1]);
		return fail("fork", strerror(errno), NULL);
	}
	if (n->pid == 0)
		child(a, p, tool, v.v, sv[1], rep[1], parent);
	close(sv[1]);
	close(rep[1]);
	n->qemu_fd = sv[0];
	do
		got = read(rep[0], msg, sizeof(msg) - 1);
	while (got < 0 && errno == EINTR);
	close(rep[0]);
	if (got != 0) {
		msg[got > 0 ? got : 0] = '\0';
		sb_qemu_net_stop(n);
		return fail("starting passt, the guest's way out",
			    got > 0 ? msg : strerror(errno), NULL);
	}
	return 0;
}

void sb_qemu_net_stop(struct sb_qemu_net *n)
{
	if (n->pid <= 0)
		return;
	if (n->qemu_fd >= 0)
		close(n->qemu_fd);
	n->qemu_fd = -1;
	kill(n->pid, SIGKILL);
	while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR)
		;
	n->pid = 0;
}
