/* test_kernel.c - the kernel layer's wording and plans, whatever the running
 * kernel offers (sb_kernel_describe takes the capabilities as an argument,
 * so a kernel without Landlock is checked here too), and one enforcing run
 * in a forked child (Landlock and seccomp cannot be undone).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel.h"
#include "landlock.h"
#include "seccomp_filter.h"
#include "tap.h"

static const struct sb_port_range all_ports = { 0, 65535 };
static const struct sb_port_range two_ports[] = { { 80, 80 }, { 443, 443 } };

static void add_net(struct sb_policy *p, unsigned dirs,
		    const struct sb_port_range *ports, size_t n)
{
	struct sb_net_rule *r = SB_VEC_PUSH(p->arena, p->nets);

	r->allow = true;
	r->kinds = SB_NET_TCP;
	r->dirs = dirs;
	r->ports = ports;
	r->n_ports = n;
	p->any_net_rule = true;
}

static void test_describe(void)
{
	struct sb_policy p = { 0 };
	struct sb_kernel_caps none = { 0, true }, old = { 3, true };
	struct sb_kernel_caps v5 = { 5, true }, v7 = { 7, true };
	struct sb_kernel_caps nosec = { 7, false };
	struct sb_ignore *ig;

	p.arena = sb_arena_new();
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_LANDLOCK, &none),
	       "landlock cannot run here: this kernel has no Landlock (not "
	       "built in, or not in the lsm= list)",
	       "no Landlock: the reason");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_LANDLOCK, &old),
	       "landlock cannot run here: this kernel's Landlock ABI is 3, and "
	       "ABI 4 (Linux 6.7) is needed for the TCP rules of net=",
	       "ABI 3: names the ABI needed");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_LANDLOCK, &nosec),
	       "landlock cannot run here: this kernel cannot load seccomp "
	       "filters",
	       "no seccomp");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_LANDLOCK, &v7),
	       "landlock (ABI 7) + seccomp: files, TCP ports, abstract Unix "
	       "sockets and signals confined by the kernel; no inet socket can "
	       "be made (no net= rule); named Unix sockets judged by python-sb "
	       "as the network supervisor.",
	       "ABI 7, no net= rule");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_LANDLOCK, &v5),
	       "landlock (ABI 5) + seccomp: files, TCP ports confined by the "
	       "kernel; no inet socket can be made (no net= rule); named Unix "
	       "sockets judged by python-sb as the network supervisor; abstract "
	       "Unix sockets refused and signals kept to the sandbox by "
	       "python-sb (Landlock scopes them from ABI 6).",
	       "ABI 5: no scoping");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_AUTO, &none),
	       "auto picks subprocess, the Python layer only: landlock cannot "
	       "run here: this kernel has no Landlock (not built in, or not in "
	       "the lsm= list).",
	       "auto without Landlock");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_QEMU, &v7),
	       "a virtual machine with its own kernel; inside, python-sb's "
	       "second stage applies landlock + seccomp as under "
	       "os-sandbox=landlock, under the guest's kernel; no network "
	       "device.",
	       "qemu: the layer inside the guest");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_BWRAP, &v7),
	       "bubblewrap's namespaces and a root holding only the exposed "
	       "paths and the interpreter, then, in python-sb's second stage "
	       "inside, landlock (ABI 7) + seccomp: files, TCP ports, abstract "
	       "Unix sockets and signals confined by the kernel; no inet "
	       "socket can be made (no net= rule); named Unix sockets judged "
	       "by python-sb as the network supervisor.",
	       "bwrap: the kernel layer in the second stage");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_FIREJAIL, &none),
	       "firejail cannot run here: this kernel has no Landlock (not "
	       "built in, or not in the lsm= list).",
	       "firejail needs Landlock for the second stage");
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_UNSHARE, &none),
	       "unshare cannot run here: this kernel has no Landlock (not built "
	       "in, or not in the lsm= list).",
	       "unshare needs Landlock");

	add_net(&p, SB_NET_OUT, &all_ports, 1);
	add_net(&p, SB_NET_IN, two_ports, 2);
	ig = SB_VEC_PUSH(p.arena, p.ignores);
	ig->pattern = "*.key";
	is_str(sb_kernel_describe(p.arena, &p, SB_PROVIDER_AUTO, &v7),
	       "auto picks the strongest provider here, landlock (ABI 7) + "
	       "seccomp: files, TCP bind ports, abstract Unix sockets and "
	       "signals confined by the kernel; net= (TCP and UDP, addresses "
	       "and ports, bind and listen) and named Unix sockets judged by "
	       "python-sb as the network supervisor; ignore= is not enforced "
	       "by the kernel.",
	       "auto with Landlock, a wide net= and ignore=");
	sb_arena_free(p.arena);
}

static void test_supervisor_choice(void)
{
	struct sb_policy p = { 0 };
	const char *s;

	p.arena = sb_arena_new();
	/* named Unix sockets need the supervisor even without net= (D26):
	 * under landlock it always runs (run.c) */
	s = sb_seccomp_summary(p.arena, &p);
	ok(strstr(s, "socket of AF_INET or AF_INET6 (no net= rule)") &&
		   strstr(s, "; connect, bind, listen, sendmsg, sendmmsg, "
			     "sendto with an address: the network supervisor"),
	   "no net= rule: inet sockets refused, Unix sockets notified");
	add_net(&p, SB_NET_OUT, two_ports, 1);
	s = sb_seccomp_summary(p.arena, &p);
	ok(!strstr(s, "AF_INET or AF_INET6") &&
		   strstr(s, "; connect, bind, listen, sendmsg, sendmmsg, "
			     "sendto with an address: the network supervisor"),
	   "a net= rule: socket calls notified");
	sb_arena_free(p.arena);
}

static void test_net_plan(void)
{
	struct sb_policy p = { 0 };
	struct sb_landlock_net n;

	p.arena = sb_arena_new();
	sb_landlock_net_plan(&p, 4, &n);
	ok(n.connect_handled && n.bind_handled && !n.n_connect && !n.n_bind,
	   "no net= rule: TCP handled, no port allowed");
	add_net(&p, SB_NET_IN | SB_NET_OUT, two_ports, 2);
	add_net(&p, SB_NET_OUT, two_ports, 1); /* 80 again */
	sb_landlock_net_plan(&p, 6, &n);
	is_int((int)n.n_connect, 2, "ports are counted once");
	is_int((int)n.n_bind, 2, "IN rules become bind ports");
	sb_landlock_net_plan(&p, 3, &n);
	ok(!n.connect_handled && !n.bind_handled, "ABI 3: TCP not handled");
	add_net(&p, SB_NET_OUT, &all_ports, 1);
	sb_landlock_net_plan(&p, 7, &n);
	ok(!n.connect_handled && n.connect_all && n.bind_handled,
	   "'*' ports: connect left to the Python layer, bind still handled");
	sb_arena_free(p.arena);
}

/* Enforce in a child: /etc/passwd unreadable, ptrace and AF_INET refused,
 * /dev/null still writable. */
static void test_apply_in_a_child(void)
{
	struct sb_kernel_caps caps;
	int status;
	pid_t pid;

	sb_kernel_probe(&caps);
	if (caps.landlock_abi < SB_LANDLOCK_MIN_ABI || !caps.seccomp) {
		printf("ok %d # skip Landlock ABI %d here\n", ++tap_n,
		       caps.landlock_abi);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct sb_policy p = { 0 };
		struct sb_kernel_ctx ctx = { 0 };
		const char *err, *hint;
		int bad = 0;

		p.arena = sb_arena_new();
		p.provider = SB_PROVIDER_LANDLOCK;
		ctx.cwd = "/";
		if (sb_kernel_apply(p.arena, &p, &ctx, NULL, &err, &hint) < 0)
			_exit(10);
		if (open("/etc/passwd", O_RDONLY) >= 0 || errno != EACCES)
			bad |= 1;
		if (ptrace(PTRACE_ATTACH, getppid(), 0, 0) == 0 ||
		    errno != EPERM)
			bad |= 2;
		if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM)
			bad |= 4;
		if (open("/dev/null", O_WRONLY) < 0)
			bad |= 8;
		/* no supervisor (NULL listener): a named Unix socket is
		 * never connected to or sent to unjudged */
		{
			struct sockaddr_un sun = { AF_UNIX, "/run/pysb-none" };
			int s = socket(AF_UNIX, SOCK_DGRAM, 0);

			if (s < 0 ||
			    connect(s, (struct sockaddr *)&sun, sizeof(sun)) ==
				    0 ||
			    errno != EPERM)
				bad |= 16;
			if (s < 0 ||
			    sendto(s, "x", 1, 0, (struct sockaddr *)&sun,
				   sizeof(sun)) >= 0 ||
			    errno != EPERM)
				bad |= 32;
		}
		sb_arena_free(p.arena);
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0,
	       "applied in a child: files, ptrace, AF_INET, unjudged Unix "
	       "connect and sendto refused; /dev/null kept");
}

static void add_expose(struct sb_policy *p, const char *path,
		       enum sb_expose_mode mode)
{
	struct sb_expose *e = SB_VEC_PUSH(p->arena, p->exposes);

	e->path = sb_arena_strdup(p->arena, path);
	e->rule = e->path;
	e->mode = mode;
	e->is_dir = true;
}

/* What the denial log takes for a Landlock refusal (filelog.c): the
 * rights each access needs, compared with the ruleset as data. */
static void test_landlock_view(void)
{
	char tmpl[] = "/tmp/pysb-view-XXXXXX", ro[64], rw[64], f[80];
	struct sb_policy p = { 0 };
	struct sb_kernel_ctx ctx = { 0 };
	struct sb_landlock_view *v;
	const char *dir = mkdtemp(tmpl);
	static const struct {
		enum sb_fc_op op;
		uint64_t flags;
		unsigned type; /* of the access, or of the file there */
		bool exists;
		int where; /* 0 ro, 1 rw, 2 ro/f, 3 ro/new, 4 rw/new, 5 /etc */
		bool refused, writes;
		const char *what;
	} cases[] = {
		{ SB_FC_OPEN, O_RDONLY, S_IFREG, true, 2, false, false,
		  "read a file under expose-ro" },
		{ SB_FC_OPEN, O_WRONLY, S_IFREG, true, 2, true, true,
		  "write a file under expose-ro" },
		{ SB_FC_OPEN, O_RDWR | O_TRUNC, S_IFREG, true, 2, true, true,
		  "truncate on open under expose-ro" },
		{ SB_FC_OPEN, O_WRONLY | O_CREAT, 0, false, 3, true, true,
		  "make a file under expose-ro" },
		{ SB_FC_OPEN, O_WRONLY | O_CREAT, 0, false, 4, false, true,
		  "make a file under expose-rw" },
		{ SB_FC_OPEN, O_RDONLY | O_DIRECTORY, S_IFDIR, true, 0, false,
		  false, "list a directory under expose-ro" },
		{ SB_FC_OPEN, O_RDONLY, S_IFDIR, true, 5, true, false,
		  "list a directory nothing exposes" },
		{ SB_FC_OPEN, O_PATH, S_IFDIR, true, 5, false, false,
		  "O_PATH needs no right" },
		{ SB_FC_EXEC, 0, S_IFREG, true, 2, false, false,
		  "exec a file under expose-ro" },
		{ SB_FC_MAKE, 0, S_IFDIR, true, 0, true, true,
		  "mkdir under expose-ro" },
		{ SB_FC_MAKE, 0, S_IFLNK, true, 1, false, true,
		  "symlink under expose-rw" },
		{ SB_FC_REMOVE, 0, S_IFREG, true, 0, true, true,
		  "unlink under expose-ro" },
		{ SB_FC_REMOVE, AT_REMOVEDIR, 0, true, 1, false, true,
		  "rmdir under expose-rw" },
		{ SB_FC_TRUNCATE, 0, S_IFREG, true, 2, true, true,
		  "truncate under expose-ro" },
	};
	size_t i;

	if (!dir) {
		printf("ok %d # skip mkdtemp: %s\n", ++tap_n, strerror(errno));
		return;
	}
	snprintf(ro, sizeof(ro), "%s/ro", dir);
	snprintf(rw, sizeof(rw), "%s/rw", dir);
	snprintf(f, sizeof(f), "%s/f", ro);
	mkdir(ro, 0755);
	mkdir(rw, 0755);
	close(open(f, O_WRONLY | O_CREAT, 0644));
	p.arena = sb_arena_new();
	add_expose(&p, rw, SB_EXPOSE_RW);
	add_expose(&p, ro, SB_EXPOSE_RO);
	ctx.cwd = "/";
	v = sb_landlock_view_new(p.arena, &p, &ctx, 7);
	for (i = 0; i < SB_ARRAY_LEN(cases); i++) {
		const char *at[] = { ro, rw, f,
				     sb_arena_printf(p.arena, "%s/new", ro),
				     sb_arena_printf(p.arena, "%s/new", rw),
				     "/etc" };
		struct sb_fc_access x = { cases[i].op, AT_FDCWD, 0,
					  cases[i].flags, 0, false };
		uint64_t need;

		if (cases[i].op == SB_FC_MAKE)
			x.type = cases[i].type;
		need = sb_landlock_need(&x, cases[i].exists, cases[i].type);
		ok(!!sb_landlock_view_missing(v, at[cases[i].where], need) ==
				   cases[i].refused &&
			   (!need ||
			    sb_landlock_need_writes(need) == cases[i].writes),
		   "landlock view: %s", cases[i].what);
	}
	/* a file rule holds file rights only, on that file alone */
	add_expose(&p, f, SB_EXPOSE_RW);
	p.exposes.v[p.exposes.n - 1].is_dir = false;
	v = sb_landlock_view_new(p.arena, &p, &ctx, 7);
	{
		struct sb_fc_access w = { SB_FC_OPEN, AT_FDCWD, 0, O_WRONLY, 0,
					  false };

		ok(!sb_landlock_view_missing(v, f,
					     sb_landlock_need(&w, true, S_IFREG)),
		   "landlock view: expose-rw of one file under expose-ro "
		   "grants writing it");
	}
	unlink(f);
	rmdir(ro);
	rmdir(rw);
	rmdir(dir);
	sb_arena_free(p.arena);
}

/* The log flavour's C copy of the argument rules (sb_seccomp_args_refused,
 * sb_seccomp_lets_through) against the filter itself: in a child under the
 * filter, each call refused with EPERM exactly when the copy says so. */
static void test_args_copy_matches_the_filter(void)
{
	static const struct {
		const char *name;
		long nr;
		uint64_t a1, a2;
	} calls[] = {
		{ "openat O_CREAT 0644", __NR_openat, O_WRONLY | O_CREAT, 0644 },
		{ "openat O_CREAT 04755", __NR_openat, O_WRONLY | O_CREAT, 04755 },
		{ "openat O_CREAT 02700", __NR_openat, O_WRONLY | O_CREAT, 02700 },
		{ "openat no O_CREAT 04755", __NR_openat, O_RDONLY, 04755 },
		{ "mknodat S_IFIFO", __NR_mknodat, S_IFIFO | 0600, 0 },
		{ "mknodat S_IFREG|S_ISUID", __NR_mknodat, S_IFREG | 04600, 0 },
		{ "mknodat S_IFCHR", __NR_mknodat, S_IFCHR | 0600, 0 },
		{ "mknodat 0", __NR_mknodat, 0600, 0 },
	};
	char tmpl[] = "/tmp/pysb-args-XXXXXX";
	const char *dir = mkdtemp(tmpl);
	bool copy[SB_ARRAY_LEN(calls)];
	int status;
	size_t i;
	pid_t pid;

	if (!dir || !sb_seccomp_available()) {
		printf("ok %d # skip no temporary directory or no seccomp\n",
		       ++tap_n);
		return;
	}
	for (i = 0; i < SB_ARRAY_LEN(calls); i++) {
		__u64 args[6] = { (__u64)AT_FDCWD, 0, calls[i].a1, calls[i].a2 };

		if (calls[i].nr == __NR_mknodat)
			args[2] = calls[i].a1, args[3] = 0;
		copy[i] = !sb_seccomp_lets_through((int)calls[i].nr, args);
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct sb_policy p = { 0 };
		const char *err;
		int bad = 0;

		p.arena = sb_arena_new();
		if (chdir(dir) < 0 ||
		    sb_seccomp_apply(p.arena, &p, true, false, NULL, &err))
			_exit(255);
		for (i = 0; i < SB_ARRAY_LEN(calls); i++) {
			char name[16];
			long r;

			snprintf(name, sizeof(name), "f%zu", i);
			r = syscall(calls[i].nr, AT_FDCWD, name, calls[i].a1,
				    calls[i].a2);
			if ((r < 0 && errno == EPERM) != copy[i])
				bad |= 1 << i;
		}
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	for (i = 0; i < SB_ARRAY_LEN(calls); i++) {
		char path[64];

		snprintf(path, sizeof(path), "%s/f%zu", dir, i);
		unlink(path);
	}
	rmdir(dir);
	is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0,
	       "the log flavour's argument rules refuse what the filter "
	       "refuses (bit i: calls[i] differs)");
}

int main(void)
{
	test_args_copy_matches_the_filter();
	test_describe();
	test_landlock_view();
	test_supervisor_choice();
	test_net_plan();
	test_apply_in_a_child();
	return tap_done();
}
