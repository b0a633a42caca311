/* suplog.c - the denial log as the supervisor writes it (os-sandbox=
 * landlock): its own refusals, and the Python guard's, which arrive as
 * datagrams on a socket whose other end the program holds. The log's
 * descriptor never enters the sandbox. A datagram is re-written as a
 * record with the sender's pid as the kernel tells it (SCM_CREDENTIALS)
 * and "by": "sandbox": the program may forge those, never a supervisor
 * record, nor a line that is not one record. It must not judge anything.
 */
#include "suplog.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "denial.h"
#include "fsrules.h"
#include "util.h"

static int log_fd = -1, relay_fd = -1, peer_fd = -1;
static uint64_t log_cap;
/* the log is the guest's port to the host (os-sandbox=qemu) */
static bool wire;
/* a guard said SB_RELAY_STARTED */
static bool program_started;

void sb_suplog_set(int log, int relay, int relay_peer, uint64_t cap)
{
	log_fd = log;
	log_cap = cap;
	relay_fd = relay;
	peer_fd = relay_peer;
}

void sb_suplog_fds(int *log, int *relay, int *relay_peer)
{
	*log = log_fd;
	*relay = relay_fd;
	*relay_peer = peer_fd;
}

void sb_suplog_set_wire(bool on)
{
	wire = on;
}

/* One record: to the log, or, in the guest, to the host that writes it. */
static void emit(const struct sb_denial *d)
{
	if (wire)
		sb_denial_send(log_fd, d);
	else
		sb_denial_write(log_fd, d, log_cap);
}

void sb_suplog_record(const struct sb_denial *d)
{
	if (log_fd >= 0)
		emit(d);
}

bool sb_suplog_on(void)
{
	return log_fd >= 0;
}

bool sb_suplog_program_started(void)
{
	return program_started;
}

int sb_suplog_relay_fd(void)
{
	return relay_fd;
}

void sb_suplog_started(void)
{
	if (peer_fd >= 0)
		close(peer_fd);
	peer_fd = -1;
}

static void refused(const char *layer, pid_t pid, const char *kind,
		    const char *target, const char *rule, const char *add)
{
	struct sb_denial d = {
		.layer = layer,
		.by = "supervisor",
		.pid = pid,
		.kind = kind,
		.target = target,
		.rule = rule,
		.add = add,
	};

	emit(&d);
}

void sb_suplog_refused(pid_t pid, const char *kind, const char *target,
		       const char *rule, const char *add)
{
	refused(SB_LAYER_SUPERVISOR, pid, kind, target, rule, add);
}

/* A file refusal on the file rules' decision 'd': the rule that decided
 * (ignore=, expose-ro=) or none, and the exposure to add unless an
 * ignore= rule hides the path whatever is added. */
static void fs_refused(const char *layer, pid_t pid, const char *kind,
		       const char *canon, bool write,
		       const struct sb_fs_decision *d)
{
	const struct sb_ref *ref = NULL;
	const char *rule = NULL;
	char add[PATH_MAX + 16], from[2 * PATH_MAX + 64];
	struct sb_arena *ar;

	if (log_fd < 0)
		return;
	if (d->verdict == SB_FS_IGNORED) {
		rule = d->ignore->rule;
		ref = &d->ignore->ref;
	} else if (d->verdict == SB_FS_READ_ONLY && d->expose) {
		rule = d->expose->rule;
		ref = &d->expose->ref;
	}
	snprintf(add, sizeof(add), "expose-%s=%s", write ? "rw" : "ro", canon);
	ar = sb_arena_new();
	if (rule)
		snprintf(from, sizeof(from), "%s from %s", rule,
			 sb_ref_format(ar, *ref));
	refused(layer, pid, kind, canon, rule ? from : NULL,
		d->verdict == SB_FS_IGNORED ? NULL : add);
	sb_arena_free(ar);
}

void sb_suplog_fs_refused(pid_t pid, const char *kind, const char *canon,
			  const struct sb_fs_decision *d)
{
	fs_refused(SB_LAYER_SUPERVISOR, pid, kind, canon, true, d);
}

void sb_suplog_fs_read_refused(pid_t pid, const char *kind,
			       const char *canon,
			       const struct sb_fs_decision *d)
{
	fs_refused(SB_LAYER_SUPERVISOR, pid, kind, canon, false, d);
}

void sb_suplog_landlock(pid_t pid, const char *canon, bool write,
			const struct sb_fs_decision *d)
{
	fs_refused(SB_LAYER_LANDLOCK, pid, "file", canon, write, d);
}

void sb_suplog_landlock_signal(pid_t pid, const char *target)
{
	refused(SB_LAYER_LANDLOCK, pid, "signal", target,
		"built in: Landlock's signal scope (a process outside the "
		"sandbox)",
		NULL);
}

void sb_suplog_syscall(pid_t pid, const char *name)
{
	refused(SB_LAYER_SECCOMP, pid, "syscall", name,
		"the system-call allowlist (docs/syscalls.md)", NULL);
}

/* kind \t target \t (+|-)rule \t (+|-)add, escaped as sb_buf_put_field
 * does: '-' is "none". A datagram of any other form is dropped. */
static void relay_one(struct sb_arena *a, const char *data, size_t n,
		      pid_t pid)
{
	struct sb_denial d = { .layer = SB_LAYER_PYTHON, .by = "sandbox" };
	bool bad = false;
	char *f[5];

	if (n == sizeof(SB_RELAY_STARTED) - 1 &&
	    memcmp(data, SB_RELAY_STARTED, n) == 0) {
		program_started = true;
		return;
	}
	if (sb_split_fields(a, data, n, f, 5, &bad) != 4 || bad ||
	    !sb_denial_fields(f[0], f[2], f[3], &d.rule, &d.add))
		return;
	d.pid = pid;
	d.kind = f[0];
	d.target = f[1];
	emit(&d);
}

void sb_suplog_drain(void)
{
	static char buf[65536];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;

	if (relay_fd < 0)
		return;
	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl.b,
				    .msg_controllen = sizeof(ctl.b) };
		struct cmsghdr *cm;
		struct sb_arena *a;
		pid_t pid = 0;
		ssize_t n;

		n = recvmsg(relay_fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET &&
			    cm->cmsg_type == SCM_CREDENTIALS) {
				struct ucred uc;

				memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
				pid = uc.pid;
			} else if (cm->cmsg_level == SOL_SOCKET &&
				   cm->cmsg_type == SCM_RIGHTS) {
				/* descriptors have no business here */
				int *fds = (int *)CMSG_DATA(cm);
				size_t k, nf = (cm->cmsg_len - CMSG_LEN(0)) /
					       sizeof(int);

				for (k = 0; k < nf; k++)
					close(fds[k]);
			}
		if (m.msg_flags & MSG_TRUNC)
			continue;
		a = sb_arena_new();
		relay_one(a, buf, (size_t)n, pid);
		sb_arena_free(a);
	}
}
