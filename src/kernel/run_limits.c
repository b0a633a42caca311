/* run_limits.c - what bounds a run: the limit-* rules and the run's end.
 * limit-memory, limit-processes and limit-cpu go to the run's own cgroup
 * when this process can make one (v2 with memory and pids delegated, or
 * the v1 hierarchies as root) and the provider lets the program join it
 * before exec (all but firejail), which holds the whole process tree: the
 * kernel holds memory and processes, the supervisor reads the CPU time and
 * the OOM kills. Else, and for the others, rlimits set in the program's
 * process before exec, which every process it starts inherits but which
 * count per process (RLIMIT_NPROC: per user). limit-time is the
 * supervisor's timer. At the end of the run every process of it is killed
 * and reaped (the supervisor is a subreaper) and the cgroup removed. It
 * must not decide what a rule means (policy_limits.c does) nor how a
 * provider runs the program.
 */
#include "run_limits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caller.h"
#include "exit_status.h"
#include "fdio.h"
#include "suplog.h"
#include "supervisor.h"

#define CG_ROOT "/sys/fs/cgroup"

/* ---- the plan ---- */

/* Does the comma-separated list 'list' ("cpu,cpuacct") hold 'word'? */
static bool list_has(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (;;) {
		if (strncmp(list, word, n) == 0 &&
		    (list[n] == ',' || !list[n]))
			return true;
		list = strchr(list, ',');
		if (!list++)
			return false;
	}
}

/* This process's cgroup path in the v1 hierarchy with controller 'ctrl'
 * ("" for v2's "0::"), from /proc/self/cgroup, and the hierarchy's name
 * (its controllers, "cpu,cpuacct") in *name; NULL when it has none. */
static const char *own_cgroup(struct sb_arena *a, const char *ctrl,
			      const char **name)
{
	char line[4096];
	const char *found = NULL;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, *nl;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c2 = '\0';
		if ((nl = strchr(c2 + 1, '\n')))
			*nl = '\0';
		if (*ctrl ? list_has(c1 + 1, ctrl)
			  : strncmp(line, "0:", 2) == 0 && !c1[1]) {
			found = sb_arena_strdup(a, c2 + 1);
			if (name)
				*name = sb_arena_strdup(a, c1 + 1);
		}
	}
	fclose(f);
	return found;
}

static bool file_has_word(const char *path, const char *word)
{
	char buf[1024], *tok, *save = NULL;

	if (sb_read_small(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return false;
	for (tok = strtok_r(buf, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (strcmp(tok, word) == 0)
			return true;
	return false;
}

/* The v2 cgroup this process may make children in with 'ctrls' ("memory",
 * "pids") enabled for them: delegated (enabled already, directory
 * writable), or the real root, where it can enable them. Anywhere else
 * enabling them would fail (no internal processes): rlimits then. */
static const char *v2_base(struct sb_arena *a, const char *const *ctrls,
			   size_t n)
{
	const char *own, *dir;
	size_t i;

	if (access(CG_ROOT "/cgroup.controllers", F_OK) != 0)
		return NULL; /* no pure v2 mount at /sys/fs/cgroup */
	own = own_cgroup(a, "", NULL);
	if (!own)
		return NULL;
	dir = sb_path_normalize(a, sb_arena_printf(a, CG_ROOT "/%s", own));
	if (access(dir, W_OK) != 0)
		return NULL;
	for (i = 0; i < n; i++) {
		const char *ctl = sb_arena_printf(a, "%s/cgroup.subtree_control",
						  dir);

		if (file_has_word(ctl, ctrls[i]))
			continue;
		/* only the root may hold processes and enable controllers
		 * for children at once: the real root, which has no
		 * cgroup.freeze (a cgroup namespace's root is no root) */
		if (strcmp(own, "/") != 0 || access(ctl, W_OK) != 0 ||
		    access(sb_arena_printf(a, "%s/cgroup.freeze", dir), F_OK) ==
			    0 ||
		    !file_has_word(sb_arena_printf(a, "%s/cgroup.controllers",
						   dir),
				   ctrls[i]))
			return NULL;
	}
	return dir;
}

/* The v1 hierarchy with controller 'ctrl' mounted at /sys/fs/cgroup/<its
 * controllers>, this process's cgroup in it, when this process may make a
 * child there. */
static const char *v1_base(struct sb_arena *a, const char *ctrl)
{
	const char *name = NULL, *own = own_cgroup(a, ctrl, &name), *dir;

	if (!own)
		return NULL;
	dir = sb_path_normalize(a,
				sb_arena_printf(a, CG_ROOT "/%s/%s", name, own));
	if (access(sb_arena_printf(a, "%s/cgroup.procs", dir), W_OK) != 0 ||
	    access(dir, W_OK) != 0)
		return NULL;
	return dir;
}

static void plan_init(const struct sb_policy *p, struct sb_limits *l)
{
	size_t i;

	memset(l, 0, sizeof(*l));
	l->p = p;
	for (i = 0; i < SB_ARRAY_LEN(l->cg_fd); i++)
		l->cg_procs[i] = l->cg_fd[i] = l->cg_parent[i] = -1;
	l->cg_kill = -1;
	for (i = 0; i < SB_LIMIT_COUNT; i++)
		if (p->limits[i].value)
			l->mech[i] = i == SB_LIMIT_TIME ? SB_MECH_TIMER
							: SB_MECH_RLIMIT;
}

void sb_limits_plan_nested(const struct sb_policy *p, unsigned outside,
			   struct sb_limits *l)
{
	size_t i;

	plan_init(p, l);
	for (i = 0; i < SB_LIMIT_COUNT; i++)
		if (outside & (1u << i))
			l->mech[i] = SB_MECH_NONE;
}

unsigned sb_limits_cgroup_mask(const struct sb_limits *l)
{
	unsigned m = 0;
	size_t i;

	for (i = 0; i < SB_LIMIT_COUNT; i++)
		if (l->mech[i] == SB_MECH_CGROUP_V1 ||
		    l->mech[i] == SB_MECH_CGROUP_V2)
			m |= 1u << i;
	return m;
}

void sb_limits_plan(struct sb_arena *a, const struct sb_policy *p,
		    enum sb_provider provider, uid_t euid, struct sb_limits *l)
{
	bool mem = p->limits[SB_LIMIT_MEMORY].value != 0;
	bool pids = p->limits[SB_LIMIT_PROCESSES].value != 0;
	bool host = provider == SB_PROVIDER_SUBPROCESS ||
		    provider == SB_PROVIDER_NONE ||
		    provider == SB_PROVIDER_LANDLOCK ||
		    provider == SB_PROVIDER_BWRAP ||
		    (provider == SB_PROVIDER_UNSHARE && euid == 0);
	/* limit-cpu: the supervisor reads the cgroup's CPU time, which it
	 * cannot inside bwrap (the second stage's) */
	bool cpu = p->limits[SB_LIMIT_CPU].value != 0 &&
		   provider != SB_PROVIDER_BWRAP;
	const char *ctrls[2];
	const char *base;
	size_t n = 0;

	plan_init(p, l);
	if (provider == SB_PROVIDER_QEMU) {
		/* the guest's kernel is python-sb's: its init makes the
		 * cgroup, as root there, whoever runs qemu here */
		l->guest = true;
		if (mem)
			l->mech[SB_LIMIT_MEMORY] = SB_MECH_GUEST;
		if (pids)
			l->mech[SB_LIMIT_PROCESSES] = SB_MECH_GUEST;
		if (p->limits[SB_LIMIT_CPU].value)
			l->mech[SB_LIMIT_CPU] = SB_MECH_GUEST;
		return;
	}
	if (mem)
		ctrls[n++] = "memory";
	if (pids)
		ctrls[n++] = "pids";
	/* v2 accounts CPU time (cpu.stat) in every cgroup, controller or
	 * not */
	if (host && (n || cpu) && (base = v2_base(a, ctrls, n))) {
		l->cg_version = 2;
		l->cg_dir[0] = base;
		l->n_cg = 1;
		if (mem)
			l->mech[SB_LIMIT_MEMORY] = SB_MECH_CGROUP_V2;
		if (pids)
			l->mech[SB_LIMIT_PROCESSES] = SB_MECH_CGROUP_V2;
		if (cpu)
			l->mech[SB_LIMIT_CPU] = SB_MECH_CGROUP_V2;
	} else if (host && (n || cpu)) {
		/* index 0 memory, 1 pids, 2 cpuacct; setup makes the
		 * children */
		if (mem && (base = v1_base(a, "memory"))) {
			l->cg_dir[0] = base;
			l->mech[SB_LIMIT_MEMORY] = SB_MECH_CGROUP_V1;
			l->cg_version = 1;
		}
		if (pids && (base = v1_base(a, "pids"))) {
			l->cg_dir[1] = base;
			l->mech[SB_LIMIT_PROCESSES] = SB_MECH_CGROUP_V1;
			l->cg_version = 1;
		}
		if (cpu && (base = v1_base(a, "cpuacct"))) {
			l->cg_dir[2] = base;
			l->mech[SB_LIMIT_CPU] = SB_MECH_CGROUP_V1;
			l->cg_version = 1;
		}
		l->n_cg = 3;
	}
	if (l->mech[SB_LIMIT_PROCESSES] == SB_MECH_RLIMIT && euid == 0) {
		l->mech[SB_LIMIT_PROCESSES] = SB_MECH_REFUSED;
		l->why[SB_LIMIT_PROCESSES] =
			host ? "no cgroup can be made here (cgroup v2 with "
			       "the pids controller delegated, or a writable "
			       "v1 pids hierarchy), and RLIMIT_NPROC does not "
			       "bind uid 0"
			     : "python-sb makes no cgroup under "
			       "os-sandbox=firejail, which it execs, and "
			       "RLIMIT_NPROC does not bind uid 0; use "
			       "os-sandbox=bwrap or landlock";
	}
}

static const char *mech_text(struct sb_arena *a, const struct sb_limits *l,
			     enum sb_limit which)
{
	static const char *const rl[SB_LIMIT_COUNT] = {
		[SB_LIMIT_MEMORY] = "RLIMIT_DATA (heap, anonymous mappings "
				    "and stacks) of each process",
		[SB_LIMIT_CPU] = "RLIMIT_CPU of each process: SIGXCPU, then "
				 "SIGKILL a second later",
		[SB_LIMIT_PROCESSES] = "RLIMIT_NPROC: the processes and "
				       "threads of the user, counted for "
				       "all of that user's processes, not "
				       "only the run's",
		[SB_LIMIT_FILE_SIZE] = "RLIMIT_FSIZE of each process: a "
				       "longer write fails with EFBIG",
		[SB_LIMIT_OPEN_FILES] = "RLIMIT_NOFILE of each process: "
					"more fails with EMFILE",
	};
	static const char *const v1[SB_LIMIT_COUNT] = {
		[SB_LIMIT_MEMORY] = "memory.limit_in_bytes",
		[SB_LIMIT_PROCESSES] = "pids.max",
		[SB_LIMIT_CPU] = "cpuacct.usage, read by the supervisor four "
				 "times a second,",
	};
	static const char *const v2[SB_LIMIT_COUNT] = {
		[SB_LIMIT_MEMORY] = "memory.max",
		[SB_LIMIT_PROCESSES] = "pids.max",
		[SB_LIMIT_CPU] = "cpu.stat, read by the supervisor four times "
				 "a second,",
	};
	static const unsigned slot[SB_LIMIT_COUNT] = {
		[SB_LIMIT_PROCESSES] = 1,
		[SB_LIMIT_CPU] = 2,
	};

	switch (l->mech[which]) {
	case SB_MECH_RLIMIT:
		return sb_arena_printf(a, "rlimit, %s", rl[which]);
	case SB_MECH_CGROUP_V1:
		return sb_arena_printf(a,
				       "cgroup v1, %s of the run's own cgroup "
				       "under %s: every process of the run%s",
				       v1[which], l->cg_dir[slot[which]],
				       which == SB_LIMIT_MEMORY
					       ? "; the kernel's OOM killer "
						 "ends a process over it"
					       : "");
	case SB_MECH_CGROUP_V2:
		return sb_arena_printf(a,
				       "cgroup v2, %s of the run's own cgroup "
				       "under %s: every process of the run",
				       v2[which], l->cg_dir[0]);
	case SB_MECH_GUEST:
		return sb_arena_printf(a,
				       "cgroup v2, %s of the program's own "
				       "cgroup in the guest, which its init "
				       "makes: every process of the run",
				       v2[which]);
	case SB_MECH_TIMER:
		if (l->guest)
			return "the timer of the guest's supervisor, from the "
			       "program's start (the boot does not count): at "
			       "expiry every process of the run is killed (and "
			       "the machine stopped from outside, should the "
			       "guest not end the run 30 s later)";
		return "the supervisor's timer: at expiry every process of "
		       "the run is killed";
	case SB_MECH_REFUSED:
		return sb_arena_printf(a, "cannot be held: %s; nothing would "
					  "run",
				       l->why[which]);
	case SB_MECH_NONE:
		break;
	}
	return "no limit";
}

const char *sb_limits_describe(struct sb_arena *a, const struct sb_limits *l,
			       enum sb_limit which)
{
	if (l->mech[which] == SB_MECH_NONE)
		return NULL;
	return sb_arena_printf(a, "%s: %s", l->p->limits[which].rule,
			       mech_text(a, l, which));
}

const char *sb_limits_refusal(struct sb_arena *a, const struct sb_limits *l)
{
	size_t i;

	for (i = 0; i < SB_LIMIT_COUNT; i++)
		if (l->mech[i] == SB_MECH_REFUSED)
			return sb_arena_printf(a, "%s (%s) cannot be held: %s",
					       l->p->limits[i].rule,
					       sb_ref_format(a,
							     l->p->limits[i].ref),
					       l->why[i]);
	return NULL;
}

/* ---- the cgroup ---- */

static int write_text(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	int fd, r = 0;
	size_t n = strlen(text);

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != (ssize_t)n)
		r = -errno;
	close(fd);
	return r;
}

/* The cgroups of earlier runs whose python-sb was killed (SIGKILL gives
 * it no chance to remove them): empty once their processes died with it
 * (PR_SET_PDEATHSIG), and removed here. A live python-sb's is kept. */
static void remove_stale(int parent)
{
	int fd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(e->d_name, "pysb-", 5) != 0)
			continue;
		pid = strtol(e->d_name + 5, &end, 10);
		if (pid > 0 && !*end && kill((pid_t)pid, 0) < 0 &&
		    errno == ESRCH)
			unlinkat(parent, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static int make_cg(struct sb_arena *a, struct sb_limits *l, unsigned k,
		   const char **err)
{
	const char *dir, *procs;

	l->cg_name = sb_arena_printf(a, "pysb-%ld", (long)getpid());
	dir = sb_arena_printf(a, "%s/%s", l->cg_dir[k], l->cg_name);
	procs = sb_arena_printf(a, "%s/cgroup.procs", dir);
	l->cg_parent[k] = open(l->cg_dir[k],
			       O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (l->cg_parent[k] < 0) {
		*err = sb_arena_printf(a, "open %s: %s", l->cg_dir[k],
				       strerror(errno));
		return -1;
	}
	remove_stale(l->cg_parent[k]);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		*err = sb_arena_printf(a, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	l->cg_dir[k] = dir;
	l->cg_fd[k] = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	l->cg_procs[k] = open(procs, O_WRONLY | O_CLOEXEC);
	if (l->cg_fd[k] < 0 || l->cg_procs[k] < 0) {
		*err = sb_arena_printf(a, "open %s: %s", procs, strerror(errno));
		return -1;
	}
	if (l->cg_version == 2)
		l->cg_kill = openat(l->cg_fd[k], "cgroup.kill",
				    O_WRONLY | O_CLOEXEC);
	return 0;
}

static int set_cg(struct sb_arena *a, const char *dir, const char *file,
		  uint64_t v, const char **err)
{
	int r = write_text(dir, file,
			   sb_arena_printf(a, "%llu", (unsigned long long)v));

	if (r < 0)
		*err = sb_arena_printf(a, "write %s/%s: %s", dir, file,
				       strerror(-r));
	return r;
}

int sb_limits_setup(struct sb_arena *a, struct sb_limits *l, const char **err)
{
	const struct sb_policy *p = l->p;
	uint64_t mem = p->limits[SB_LIMIT_MEMORY].value;
	uint64_t pids = p->limits[SB_LIMIT_PROCESSES].value;
	int r;

	if (l->cg_version == 2) {
		const char *ctl = sb_arena_printf(a, "%s/cgroup.subtree_control",
						  l->cg_dir[0]);
		const char *want = sb_arena_printf(
			a, "%s%s", mem ? "+memory " : "", pids ? "+pids" : "");

		if ((mem && !file_has_word(ctl, "memory")) ||
		    (pids && !file_has_word(ctl, "pids"))) {
			r = write_text(l->cg_dir[0], "cgroup.subtree_control",
				       want);
			if (r < 0) {
				*err = sb_arena_printf(a, "write %s: %s", ctl,
						       strerror(-r));
				return -1;
			}
		}
		if (make_cg(a, l, 0, err) < 0)
			return -1;
		if (mem) {
			if (set_cg(a, l->cg_dir[0], "memory.max", mem, err) < 0)
				return -1;
			/* no way around it through swap, where there is one */
			write_text(l->cg_dir[0], "memory.swap.max", "0");
		}
		if (pids && set_cg(a, l->cg_dir[0], "pids.max", pids, err) < 0)
			return -1;
		return 0;
	}
	if (l->mech[SB_LIMIT_MEMORY] == SB_MECH_CGROUP_V1) {
		if (make_cg(a, l, 0, err) < 0 ||
		    set_cg(a, l->cg_dir[0], "memory.limit_in_bytes", mem,
			   err) < 0)
			return -1;
		/* memory+swap too where the kernel accounts swap; not an
		 * error where it does not */
		set_cg(a, l->cg_dir[0], "memory.memsw.limit_in_bytes", mem,
		       err);
		/* v1 charges TCP buffers apart, unlimited unless told: a
		 * program that filled its sockets held 260 MB under 50 MB
		 * (weaknesses 150); where the kernel has no such account,
		 * none is kept */
		set_cg(a, l->cg_dir[0], "memory.kmem.tcp.limit_in_bytes", mem,
		       err);
		*err = NULL;
	}
	if (l->mech[SB_LIMIT_PROCESSES] == SB_MECH_CGROUP_V1 &&
	    (make_cg(a, l, 1, err) < 0 ||
	     set_cg(a, l->cg_dir[1], "pids.max", pids, err) < 0))
		return -1;
	if (l->mech[SB_LIMIT_CPU] == SB_MECH_CGROUP_V1 &&
	    make_cg(a, l, 2, err) < 0)
		return -1;
	return 0;
}

int sb_limits_join(const struct sb_limits *l)
{
	unsigned k;

	for (k = 0; k < SB_ARRAY_LEN(l->cg_procs); k++)
		if (l->cg_procs[k] >= 0 && write(l->cg_procs[k], "0", 1) != 1)
			return -errno;
	return 0;
}

/* SIGKILL the pids of a list read from a cgroup.procs or a task's
 * children file: how many were signalled. A full page may have been cut:
 * the callers look again. */
static int kill_pids(const char *buf)
{
	const char *p;
	char *end;
	int n = 0;

	for (p = buf;; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
			n++;
	}
	return n;
}

/* SIGKILL the pids listed in 'path' under 'dirfd' (a cgroup.procs, a
 * task's children file). The count, or -1 without the file. */
static int kill_listed(int dirfd, const char *path)
{
	char buf[4096];

	if (sb_read_small(dirfd, path, buf, sizeof(buf)) < 0)
		return -1;
	return kill_pids(buf);
}

static void kill_cgroups(const struct sb_limits *l)
{
	unsigned k;
	int round;

	if (l->cg_kill >= 0 && write(l->cg_kill, "1", 1) != 1) {
		/* the listing below does it the old way */
	}
	for (k = 0; k < SB_ARRAY_LEN(l->cg_fd); k++) {
		if (l->cg_fd[k] < 0)
			continue;
		/* processes forked meanwhile show on the next read */
		for (round = 0;
		     round < 1000 && kill_listed(l->cg_fd[k], "cgroup.procs") > 0;
		     round++)
			;
	}
}

void sb_limits_cleanup(struct sb_limits *l)
{
	unsigned k;
	int tries;

	kill_cgroups(l);
	for (k = 0; k < SB_ARRAY_LEN(l->cg_fd); k++) {
		if (l->cg_procs[k] >= 0)
			close(l->cg_procs[k]);
		l->cg_procs[k] = -1;
		/* a killed process leaves its cgroup when it is reaped,
		 * which can lag a little */
		for (tries = 0;
		     tries < 200 && l->cg_fd[k] >= 0 &&
		     unlinkat(l->cg_parent[k], l->cg_name, AT_REMOVEDIR) < 0 &&
		     errno == EBUSY;
		     tries++) {
			kill_cgroups(l);
			usleep(10 * 1000);
		}
		if (l->cg_fd[k] >= 0)
			close(l->cg_fd[k]);
		if (l->cg_parent[k] >= 0)
			close(l->cg_parent[k]);
		l->cg_fd[k] = l->cg_parent[k] = -1;
	}
	if (l->cg_kill >= 0)
		close(l->cg_kill);
	l->cg_kill = -1;
}

/* ---- rlimits, the timer and the verdict ---- */

int sb_limits_set_rlimits(const struct sb_limits *l, int *which)
{
	static const int res[SB_LIMIT_COUNT] = {
		[SB_LIMIT_MEMORY] = RLIMIT_DATA,
		[SB_LIMIT_CPU] = RLIMIT_CPU,
		[SB_LIMIT_TIME] = -1,
		[SB_LIMIT_PROCESSES] = RLIMIT_NPROC,
		[SB_LIMIT_FILE_SIZE] = RLIMIT_FSIZE,
		[SB_LIMIT_OPEN_FILES] = RLIMIT_NOFILE,
	};
	int i;

	for (i = 0; i < SB_LIMIT_COUNT; i++) {
		struct rlimit cur, want;
		rlim_t v = (rlim_t)l->p->limits[i].value;

		if (l->mech[i] != SB_MECH_RLIMIT || res[i] < 0)
			continue;
		if (getrlimit(res[i], &cur) < 0)
			goto fail;
		want.rlim_cur = v;
		/* SIGXCPU at the soft limit, which Python could catch; the
		 * hard limit's SIGKILL a second later */
		want.rlim_max = i == SB_LIMIT_CPU ? v + 1 : v;
		/* never above what python-sb was given */
		if (cur.rlim_max != RLIM_INFINITY) {
			if (want.rlim_max > cur.rlim_max)
				want.rlim_max = cur.rlim_max;
			if (want.rlim_cur > cur.rlim_max)
				want.rlim_cur = cur.rlim_max;
		}
		if (setrlimit(res[i], &want) < 0)
			goto fail;
	}
	return 0;
fail:
	*which = i;
	return -errno;
}

int sb_limits_timer(const struct sb_limits *l)
{
	struct itimerspec its = { 0 };
	int fd;

	if (l->mech[SB_LIMIT_TIME] != SB_MECH_TIMER)
		return -1;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0)
		return -1;
	its.it_value.tv_sec = (time_t)l->p->limits[SB_LIMIT_TIME].value;
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void sb_limits_expire(struct sb_limits *l, pid_t pid)
{
	l->timed_out = true;
	kill(pid, SIGKILL);
	kill_cgroups(l);
}

static bool p_has_mem_cgroup(const struct sb_limits *l)
{
	return (l->mech[SB_LIMIT_MEMORY] == SB_MECH_CGROUP_V1 ||
		l->mech[SB_LIMIT_MEMORY] == SB_MECH_CGROUP_V2) &&
	       l->cg_fd[0] >= 0;
}

/* The kernel's OOM killer ended a process of the run's memory cgroup. */
static bool oom_killed(const struct sb_limits *l)
{
	char buf[1024], *at;

	if (!p_has_mem_cgroup(l))
		return false;
	if (sb_read_small(l->cg_fd[0],
			  l->cg_version == 2 ? "memory.events"
					     : "memory.oom_control",
			  buf, sizeof(buf)) <= 0)
		return false;
	at = strstr(buf, "oom_kill ");
	return at && strtol(at + 9, NULL, 10) > 0;
}

int sb_limits_oom_fd(const struct sb_limits *l, short *events)
{
	char buf[64];
	int efd, ofd, cfd, n, ok;

	if (!p_has_mem_cgroup(l))
		return -1;
	if (l->cg_version == 2) {
		*events = POLLPRI;
		return openat(l->cg_fd[0], "memory.events",
			      O_RDONLY | O_CLOEXEC);
	}
	*events = POLLIN;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ofd = openat(l->cg_fd[0], "memory.oom_control", O_RDONLY | O_CLOEXEC);
	cfd = openat(l->cg_fd[0], "cgroup.event_control", O_WRONLY | O_CLOEXEC);
	n = snprintf(buf, sizeof(buf), "%d %d", efd, ofd);
	ok = efd >= 0 && ofd >= 0 && cfd >= 0 && write(cfd, buf, (size_t)n) == n;
	if (ofd >= 0)
		close(ofd);
	if (cfd >= 0)
		close(cfd);
	if (!ok && efd >= 0) {
		close(efd);
		efd = -1;
	}
	return efd;
}

void sb_limits_oom_event(struct sb_limits *l, int fd, pid_t pid)
{
	uint64_t v;
	char buf[512];
	int tries;

	/* drain it: an eventfd counts, memory.events is read again */
	if (l->cg_version == 2) {
		if (pread(fd, buf, sizeof(buf), 0) < 0) {
			/* the check below reads it again anyway */
		}
	} else if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
	if (l->oom_ended)
		return;
	/* the event comes when the cgroup meets its limit, a moment before
	 * the OOM killer's count goes up: wait for it a little (a cgroup
	 * that reclaimed memory instead has no kill to count) */
	for (tries = 0; !oom_killed(l); tries++) {
		if (tries == 50)
			return;
		usleep(2 * 1000);
	}
	l->oom_ended = true;
	kill(pid, SIGKILL);
	kill_cgroups(l);
}

/* memory.events' "max": how many times the cgroup met memory.max */
static unsigned long long max_count(const struct sb_limits *l)
{
	char buf[1024], *at;

	if (sb_read_small(l->cg_fd[0], "memory.events", buf, sizeof(buf)) <= 0)
		return 0;
	at = strstr(buf, "\nmax ");
	return at ? strtoull(at + 5, NULL, 10) : 0;
}

int sb_limits_stall_fd(const struct sb_limits *l)
{
	static const char trig[] = "full 1000000 2000000";
	int fd;

	if (!p_has_mem_cgroup(l) || l->cg_version != 2)
		return -1;
	fd = openat(l->cg_fd[0], "memory.pressure",
		    O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && write(fd, trig, sizeof(trig)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void sb_limits_stall_event(struct sb_limits *l, pid_t pid)
{
	unsigned long long n;

	if (l->oom_ended)
		return;
	n = max_count(l);
	if (n <= l->max_seen)
		return; /* stalled below the limit: the machine's, not its */
	l->max_seen = n;
	l->oom_ended = true;
	kill(pid, SIGKILL);
	kill_cgroups(l);
}

/* limit-cpu is the run's cgroup's, checked by the supervisor */
static bool cpu_by_cgroup(const struct sb_limits *l)
{
	return (l->mech[SB_LIMIT_CPU] == SB_MECH_CGROUP_V1 ||
		l->mech[SB_LIMIT_CPU] == SB_MECH_CGROUP_V2) &&
	       l->cg_fd[l->cg_version == 2 ? 0 : 2] >= 0;
}

int sb_limits_cpu_fd(const struct sb_limits *l)
{
	struct itimerspec its = { { 0, 250 * 1000 * 1000 },
				  { 0, 250 * 1000 * 1000 } };
	int fd;

	if (!cpu_by_cgroup(l))
		return -1;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd >= 0 && timerfd_settime(fd, 0, &its, NULL) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int sb_limits_watch_open(const struct sb_limits *l, struct sb_limit_watch *w)
{
	w->tfd = w->ofd = w->cfd = w->sfd = -1;
	w->oev = 0;
	w->failed = NULL;
	if (!l)
		return 0;
	w->tfd = sb_limits_timer(l);
	if (w->tfd < 0 && l->mech[SB_LIMIT_TIME] == SB_MECH_TIMER) {
		w->failed = l->p->limits[SB_LIMIT_TIME].rule;
		return -1;
	}
	w->cfd = sb_limits_cpu_fd(l);
	if (w->cfd < 0 && cpu_by_cgroup(l)) {
		int e = errno;

		sb_limits_watch_close(w);
		w->failed = l->p->limits[SB_LIMIT_CPU].rule;
		errno = e;
		return -1;
	}
	/* without it the kernel's OOM killer still holds limit-memory; the
	 * run just does not end with the process it killed */
	w->ofd = sb_limits_oom_fd(l, &w->oev);
	w->sfd = sb_limits_stall_fd(l);
	return 0;
}

void sb_limits_watch_poll(const struct sb_limit_watch *w, struct pollfd *p)
{
	p[0] = (struct pollfd){ w->tfd, POLLIN, 0 };
	p[1] = (struct pollfd){ w->ofd, w->oev, 0 };
	p[2] = (struct pollfd){ w->cfd, POLLIN, 0 };
	p[3] = (struct pollfd){ w->sfd, POLLPRI, 0 };
}

void sb_limits_watch_handle(struct sb_limits *l, struct sb_limit_watch *w,
			    const struct pollfd *p, pid_t pid)
{
	if (!l)
		return;
	if (w->ofd >= 0 && (p[1].revents & w->oev))
		sb_limits_oom_event(l, w->ofd, pid);
	if (w->cfd >= 0 && (p[2].revents & POLLIN))
		sb_limits_cpu_check(l, w->cfd, pid);
	if (w->sfd >= 0 && p[3].revents) {
		if (p[3].revents & POLLPRI)
			sb_limits_stall_event(l, pid);
		if (p[3].revents & (POLLERR | POLLNVAL)) {
			/* the cgroup is gone: nothing more to watch */
			close(w->sfd);
			w->sfd = -1;
		}
	}
	if (w->tfd >= 0 && (p[0].revents & POLLIN)) {
		sb_limits_expire(l, pid);
		close(w->tfd);
		w->tfd = -1;
	}
}

void sb_limits_watch_close(struct sb_limit_watch *w)
{
	if (w->tfd >= 0)
		close(w->tfd);
	if (w->ofd >= 0)
		close(w->ofd);
	if (w->cfd >= 0)
		close(w->cfd);
	if (w->sfd >= 0)
		close(w->sfd);
	w->tfd = w->ofd = w->cfd = w->sfd = -1;
}

/* The CPU time of every process of the run, in nanoseconds; 0 when it
 * cannot be read. */
static uint64_t run_cpu_ns(const struct sb_limits *l)
{
	char buf[1024], *at;

	if ((l->cg_version == 2
		     ? sb_read_small(l->cg_fd[0], "cpu.stat", buf, sizeof(buf))
		     : sb_read_small(l->cg_fd[2], "cpuacct.usage", buf,
				     sizeof(buf))) <= 0)
		return 0;
	if (l->cg_version != 2)
		return strtoull(buf, NULL, 10);
	at = strstr(buf, "usage_usec ");
	return at ? strtoull(at + 11, NULL, 10) * 1000 : 0;
}

void sb_limits_cpu_check(struct sb_limits *l, int fd, pid_t pid)
{
	uint64_t ticks;

	if (read(fd, &ticks, sizeof(ticks)) < 0) {
		/* EAGAIN: a spurious wake-up; the check is cheap anyway */
	}
	if (l->cpu_ended || l->timed_out || l->oom_ended ||
	    run_cpu_ns(l) < l->p->limits[SB_LIMIT_CPU].value * 1000000000ull)
		return;
	l->cpu_ended = true;
	kill(pid, SIGKILL);
	kill_cgroups(l);
}

/* A limit ended the run: said on stderr, and a record in the denial log
 * (kind "limit", the rule as target and as what decided, nothing to add
 * but a larger limit), for the process the run started. */
int sb_limits_reached(const struct sb_limits *l, enum sb_limit which)
{
	const struct sb_limit_rule *r = &l->p->limits[which];
	struct sb_arena *a;

	fprintf(stderr, "python-sb: %s reached: the run was stopped\n",
		sb_sanitize(l->p->arena, r->rule));
	if (sb_suplog_on()) {
		a = sb_arena_new();
		sb_suplog_refused(l->pid > 0 ? l->pid : getpid(), "limit",
				  r->rule,
				  sb_arena_printf(a, "%s from %s", r->rule,
						  sb_ref_format(a, r->ref)),
				  NULL);
		sb_arena_free(a);
	}
	return SB_EXIT_LIMIT;
}

int sb_limits_outer_verdict(const struct sb_limits *l, int rc)
{
	if (rc != 128 + SIGKILL || !oom_killed(l))
		return rc;
	return sb_limits_reached(l, SB_LIMIT_MEMORY);
}

int sb_limits_verdict(const struct sb_limits *l, int wstatus,
		      const struct rusage *ru)
{
	const struct sb_policy *p = l->p;
	int which = -1, sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
	uint64_t cpu = 0;

	if (ru)
		cpu = (uint64_t)ru->ru_utime.tv_sec +
		      (uint64_t)ru->ru_stime.tv_sec;
	if (l->timed_out)
		which = SB_LIMIT_TIME;
	else if (l->oom_ended)
		which = SB_LIMIT_MEMORY;
	else if (l->cpu_ended)
		which = SB_LIMIT_CPU;
	else if (p->limits[SB_LIMIT_CPU].value &&
		 (sig == SIGXCPU ||
		  (sig == SIGKILL && cpu >= p->limits[SB_LIMIT_CPU].value)))
		which = SB_LIMIT_CPU;
	else if (p->limits[SB_LIMIT_FILE_SIZE].value && sig == SIGXFSZ)
		which = SB_LIMIT_FILE_SIZE;
	else if (sig == SIGKILL && oom_killed(l))
		which = SB_LIMIT_MEMORY;
	if (which >= 0)
		return sb_limits_reached(l, (enum sb_limit)which);
	return sb_sup_exit_status(wstatus);
}

/* ---- the end of the run ---- */

void sb_sweep_reserve(struct sb_sweep *w)
{
	size_t i;

	w->proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; i < SB_SWEEP_SPARE; i++)
		w->spare[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void sb_sweep_release(struct sb_sweep *w)
{
	size_t i;

	if (w->proc >= 0)
		close(w->proc);
	w->proc = -1;
	for (i = 0; i < SB_SWEEP_SPARE; i++) {
		if (w->spare[i] >= 0)
			close(w->spare[i]);
		w->spare[i] = -1;
	}
}

/* A directory of /proc, "self/task" or ".", through the reserved
 * descriptor when there is one. */
static DIR *proc_dir(int proc, const char *rel)
{
	char path[64];
	int fd;
	DIR *d;

	if (proc >= 0) {
		fd = openat(proc, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		snprintf(path, sizeof(path), "/proc/%s", rel);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* sb_read_small of a file of /proc, by its name under /proc. */
static int proc_read(int proc, const char *rel, char *buf, size_t size)
{
	char path[320];

	if (proc >= 0)
		return (int)sb_read_small(proc, rel, buf, size);
	snprintf(path, sizeof(path), "/proc/%s", rel);
	return (int)sb_read_small(AT_FDCWD, path, buf, size);
}

/* SIGKILL the pids of a task's children file: the count, or -1 without
 * the file. */
static int kill_task_children(int proc, const char *task)
{
	char rel[300], buf[4096];

	snprintf(rel, sizeof(rel), "self/task/%s/children", task);
	if (proc_read(proc, rel, buf, sizeof(buf)) < 0)
		return -1;
	return kill_pids(buf);
}

/* SIGKILL every process whose parent is this one (any of its threads):
 * the program's orphans come here (PR_SET_CHILD_SUBREAPER). Through
 * /proc/self/task/T/children where the kernel has it, else a scan of
 * /proc. How many were found, or -1 when /proc could not be read. */
static int kill_children(int proc, pid_t self)
{
	DIR *d = proc_dir(proc, "self/task");
	struct dirent *e;
	int n = 0;
	bool listed = d != NULL;

	while (d && (e = readdir(d))) {
		int k;

		if (e->d_name[0] == '.')
			continue;
		k = kill_task_children(proc, e->d_name);
		if (k < 0)
			listed = false;
		else
			n += k;
	}
	if (d)
		closedir(d);
	if (listed)
		return n;
	d = proc_dir(proc, ".");
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char rel[64], buf[512], *close_paren;
		int ppid = -1;
		long pid = strtol(e->d_name, NULL, 10);

		if (pid <= 0 || pid == self)
			continue;
		snprintf(rel, sizeof(rel), "%ld/stat", pid);
		if (proc_read(proc, rel, buf, sizeof(buf)) <= 0)
			continue;
		/* "pid (comm) S ppid ...": comm may hold anything */
		close_paren = strrchr(buf, ')');
		if (close_paren &&
		    sscanf(close_paren + 1, " %*c %d", &ppid) == 1 &&
		    ppid == self) {
			kill((pid_t)pid, SIGKILL);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* Nothing the program started outlives python-sb: kill and reap every
 * descendant, including those that come here while we sweep. */
void sb_sweep_descendants(struct sb_sweep *w, const struct sb_limits *l)
{
	pid_t self = getpid();
	unsigned idle = 0, blind = 0;
	int proc = w ? w->proc : -1;
	size_t i;

	/* room for the descriptors the listing opens, whatever the
	 * program made python-sb hold */
	for (i = 0; w && i < SB_SWEEP_SPARE; i++) {
		if (w->spare[i] >= 0)
			close(w->spare[i]);
		w->spare[i] = -1;
	}
	/* the run's cgroup holds every process of it, in any pid
	 * namespace; not when python-sb is inside it (a second stage) */
	if (l && (l->cg_parent[0] >= 0 || l->cg_parent[1] >= 0 ||
		  l->cg_parent[2] >= 0))
		kill_cgroups(l);
	for (;;) {
		int n;
		pid_t r = waitpid(-1, NULL, WNOHANG);

		/* the common case: the program left nothing behind */
		if (r < 0 && errno == ECHILD)
			break;
		if (r > 0)
			continue;
		n = kill_children(proc, self);
		r = waitpid(-1, NULL, n > 0 ? 0 : WNOHANG);

		if (r < 0 && errno == ECHILD)
			break; /* none left */
		if (r == 0 && n < 0) {
			/* /proc cannot be read (descriptors or memory short
			 * for a moment): a child is left, so look again,
			 * without end; said once */
			if (++blind == 100)
				fprintf(stderr, "python-sb: the end of the run: "
						"/proc cannot be read (%s); "
						"still trying to end its "
						"processes\n",
					strerror(errno));
			usleep(blind < 100 ? 10 * 1000 : 100 * 1000);
			continue;
		}
		/* a child /proc did not show (yet): look again, for a while;
		 * a /proc of another pid namespace never shows them, and the
		 * provider's pid namespace ends them then */
		if (r == 0 && n == 0) {
			if (++idle > 200)
				break;
			usleep(10 * 1000);
		} else {
			idle = 0;
		}
	}
}


/* What the child reports before exec: the step that failed and errno. */
struct child_err {
	int step; /* 0 join the cgroup, 1 an rlimit, 2 exec */
	int which;
	int err;
};

static void child_fail(int fd, int step, int which, int err)
{
	struct child_err ce = { step, which, err };

	if (write(fd, &ce, sizeof(ce)) < 0) {
		/* nothing more to say: the parent reports a silent child */
	}
	_exit(SB_EXIT_SETUP);
}

/* What the limited run's child (sb_sup_spawn) is given. */
struct limits_child {
	const struct sb_sup *s;
	struct sb_limits *l;
	pid_t parent;
	int rep;
	const char *path;
	char *const *argv;
	char *const *envp;
};

/* The child, in python-sb's memory while python-sb waits in a read of
 * the report pipe (it ends at the exec, or with a report): system calls
 * only. */
static int limits_child(void *arg)
{
	struct limits_child *c = arg;
	int r, which = 0;

	sb_sup_child(c->s);
	/* the program dies with its supervisor */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != c->parent)
		_exit(SB_EXIT_SETUP);
	if ((r = sb_limits_join(c->l)) < 0)
		child_fail(c->rep, 0, 0, -r);
	if ((r = sb_limits_set_rlimits(c->l, &which)) < 0)
		child_fail(c->rep, 1, which, -r);
	sb_caller_give();
	execve(c->path, c->argv, c->envp);
	child_fail(c->rep, 2, 0, errno);
	return 0;
}

int sb_limits_run(struct sb_limits *l, const char *path, char *const argv[],
		  char *const envp[], int channel)
{
	struct child_err ce;
	struct limits_child c;
	struct sb_sup s;
	int rep[2], rc;
	pid_t pid, parent = getpid();
	ssize_t n;

	/* the terminal's signals reach the program, which shares our
	 * process group; those another process sent are passed on */
	if (sb_sup_init(&s, SB_SUP_SAME_GROUP) < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ||
	    pipe2(rep, O_CLOEXEC) < 0) {
		fprintf(stderr, "python-sb: limits supervisor set-up: %s; "
				"nothing was run.\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	c = (struct limits_child){ &s, l, parent, rep[1], path, argv, envp };
	pid = sb_sup_spawn(&s, limits_child, &c);
	if (pid < 0) {
		fprintf(stderr, "python-sb: clone: %s; nothing was run.\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	close(rep[1]);
	n = read(rep[0], &ce, sizeof(ce));
	close(rep[0]);
	if (n == (ssize_t)sizeof(ce)) {
		waitpid(pid, NULL, 0);
		sigprocmask(SIG_SETMASK, &s.old, NULL);
		if (ce.step == 0)
			fprintf(stderr, "python-sb: join the run's cgroup %s: "
					"%s; nothing was run.\n",
				l->cg_dir[0] ? l->cg_dir[0] : l->cg_dir[1],
				strerror(ce.err));
		else if (ce.step == 1)
			fprintf(stderr, "python-sb: setrlimit for %s: %s; "
					"nothing was run.\n",
				l->p->limits[ce.which].rule, strerror(ce.err));
		else
			fprintf(stderr, "python-sb: exec %s: %s\n", path,
				strerror(ce.err));
		return SB_EXIT_SETUP;
	}
	if (sb_sup_watch(&s, l) < 0) {
		fprintf(stderr, "python-sb: timerfd for %s: %s; the run was "
				"stopped.\n",
			s.lw.failed, strerror(errno));
		sb_sup_abort(&s);
		sb_sweep_descendants(&s.sweep, l);
		sb_sup_end(&s);
		return SB_EXIT_SETUP;
	}
	if (channel > 0)
		sb_sup_channel(&s, channel, SB_SUP_CHANNEL_GRACE_MS);
	rc = sb_sup_loop(&s, NULL, NULL);
	/* nothing the program started outlives the run */
	sb_sup_stop(&s, true);
	sb_sup_end(&s);
	return rc < 0 ? SB_EXIT_SETUP : sb_limits_verdict(l, s.wstatus, &s.ru);
}
