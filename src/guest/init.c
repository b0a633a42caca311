/* init.c - pid 1 of the os-sandbox=qemu guest (src/launch/qemu.c builds
 * its initramfs). A static program, apart from python-sb's other code: it
 * loads the virtio-mmio and 9p modules the initramfs carries, builds the
 * program's root from the run record the launcher wrote (a tmpfs holding
 * only the 9p shares of the exposed directories, the copies of the files
 * exposed alone, the links and the masks, /dev's few nodes
 * and /proc), moves it over the initramfs, and runs python-sb's second
 * stage (stage.c) with the stage record and the policy blob on the
 * descriptors it names, its stdin, stdout and stderr on their own
 * virtio-serial ports. It passes on the signals the launcher sends on the
 * control port, reaps every process, tells the launcher the exit status
 * and powers the machine off. Any step that fails is reported on the
 * control port ("fail ...") and the program is never started. With the
 * record's "net" entry (net= rules), it loads the virtio-net modules and
 * gives the card the address, and the machine the route, the launcher
 * names (passt on the host is the gateway), and brings the loopback up.
 * With "log" (a log-file= rule) it opens the pysb.log port, on which the
 * stage sends its denial records to the launcher (the host writes the
 * log), and makes the guard's relay to the stage, at the numbers the
 * records name. With "limits" (limit-memory, limit-processes, limit-cpu)
 * it makes the program's cgroup v2 and hands the stage its cgroup.procs
 * (which the program joins before exec) and its directory.
 *
 * The control port's lines: guest -> host "up" (the root is built, the
 * stage starts), "exit N", "fail TEXT"; host -> guest "sig N".
 */
#include "bufio.h"
#include "exit_status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4
#endif

#define ROOT "/newroot"
#define MAX_ARGS 4096

static int ctl_fd = -1;

static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* the console, when the control port is not there (yet) */
	if (ctl_fd < 0 || write(ctl_fd, line, (size_t)n) < 0)
		if (write(2, line, (size_t)n) < 0)
			return;
}

/* qemu.show_boot_console's breadcrumbs: each step of this init on the
 * console, through the kernel's log so that each has the kernel's time
 * (python-sb sets pysb_diag=1 on the kernel's command line, which the
 * kernel passes on to init's environment). */
static bool diag;
static int kmsg = -1; /* kept open: the new root has no /dev/kmsg */

static void crumb(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n, fd;

	if (!diag)
		return;
	n = snprintf(line, sizeof(line), "<6>pysb-init: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (kmsg < 0 && (fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC)) >= 0) {
		/* above the numbers the stage is given, closed on exec */
		kmsg = fcntl(fd, F_DUPFD_CLOEXEC, 900);
		close(fd);
	}
	if (kmsg >= 0)
		(void)!write(kmsg, line, (size_t)n);
}

static void power_off(void)
{
	crumb("power off");
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void die(const char *what, const char *path)
{
	say("fail %s %s: %s", what, path ? path : "", strerror(errno));
	power_off();
}

/* The virtio-serial port whose name is 'name', opened read-write. */
static int open_port(const char *name)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;
	int fd = -1;

	if (!d)
		return -1;
	while (fd < 0 && (e = readdir(d))) {
		char path[300], got[64] = { 0 };
		int nf;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name",
			 e->d_name);
		nf = open(path, O_RDONLY | O_CLOEXEC);
		if (nf < 0)
			continue;
		n = read(nf, got, sizeof(got) - 1);
		close(nf);
		if (n <= 0)
			continue;
		got[strcspn(got, "\n")] = '\0';
		if (strcmp(got, name) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	}
	closedir(d);
	return fd;
}

/* The modules of 'order' that the initramfs carries, in that order. A
 * failure is said on the console when the control port is not open yet. */
static void load_modules(const char *const *order, size_t n)
{
	static const char *const exts[] = { ".ko.xz", ".ko.zst", ".ko.gz",
					    ".ko" };
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(exts) / sizeof(exts[0]); j++) {
			char path[128];
			int fd;

			snprintf(path, sizeof(path), "/modules/%s%s", order[i],
				 exts[j]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (syscall(SYS_finit_module, fd, "",
				    j + 1 < sizeof(exts) / sizeof(exts[0])
					    ? MODULE_INIT_COMPRESSED_FILE
					    : 0) < 0 &&
			    errno != EEXIST)
				die("load the module", path);
			close(fd);
			break;
		}
}

/* the initramfs's modules (qemu.c's table), in the order they load */
static const char *const transport[] = { "virtio_mmio" };
static const char *const share_modules[] = { "netfs", "9pnet",
					     "9pnet_virtio", "9p" };

static const char *const net_modules[] = { "failover", "net_failover",
					   "virtio_net" };

/* ---- the network card (the record's "net ADDR PREFIX GATEWAY") ---- */

static void sin_set(struct sockaddr *sa, const char *text)
{
	struct sockaddr_in *in = (struct sockaddr_in *)sa;

	memset(in, 0, sizeof(*in));
	in->sin_family = AF_INET;
	if (inet_pton(AF_INET, text, &in->sin_addr) != 1) {
		errno = EINVAL;
		die("an address of the run record's net entry:", text);
	}
}

static void if_up(int s, const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("SIOCGIFFLAGS", name);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("SIOCSIFFLAGS", name);
}

/* The first interface that is not the loopback, once the driver made it. */
static void card_name(char *out, size_t size)
{
	for (int tries = 0; tries < 3000; tries++) {
		DIR *d = opendir("/sys/class/net");
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.' && strcmp(e->d_name, "lo") &&
			    strlen(e->d_name) < size) {
				memcpy(out, e->d_name, strlen(e->d_name) + 1);
				closedir(d);
				return;
			}
		if (d)
			closedir(d);
		usleep(10000);
	}
	errno = ENODEV;
	die("find the network card", NULL);
}

static void net_up(const char *addr, const char *prefix, const char *gw)
{
	struct ifreq ifr;
	struct rtentry rt;
	char name[IFNAMSIZ];
	int bits = atoi(prefix), s;
	uint32_t mask;

	if (bits < 1 || bits > 30) {
		errno = EINVAL;
		die("the prefix of the run record's net entry:", prefix);
	}
	load_modules(net_modules,
		     sizeof(net_modules) / sizeof(net_modules[0]));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		die("socket", NULL);
	if_up(s, "lo");
	card_name(name, sizeof(name));
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	sin_set(&ifr.ifr_addr, addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		die("SIOCSIFADDR", name);
	mask = htonl(~0u << (32 - bits));
	memset(&ifr.ifr_netmask, 0, sizeof(ifr.ifr_netmask));
	((struct sockaddr_in *)&ifr.ifr_netmask)->sin_family = AF_INET;
	((struct sockaddr_in *)&ifr.ifr_netmask)->sin_addr.s_addr = mask;
	if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
		die("SIOCSIFNETMASK", name);
	if_up(s, name);
	memset(&rt, 0, sizeof(rt));
	sin_set(&rt.rt_dst, "0.0.0.0");
	sin_set(&rt.rt_genmask, "0.0.0.0");
	sin_set(&rt.rt_gateway, gw);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	if (ioctl(s, SIOCADDRT, &rt) < 0)
		die("SIOCADDRT (the default route) via", gw);
	close(s);
}

static void close_all(int a, int b, int c, int d)
{
	int fds[] = { a, b, c, d };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static char *at(const char *path)
{
	static char buf[8192];

	if (snprintf(buf, sizeof(buf), ROOT "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		die("path", path);
	}
	return buf;
}

static void mkdirs(const char *full)
{
	char p[8192];
	size_t i;

	snprintf(p, sizeof(p), "%s", full);
	for (i = 1; p[i]; i++)
		if (p[i] == '/') {
			p[i] = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				die("mkdir", p);
			p[i] = '/';
		}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		die("mkdir", p);
}

static void parent_dirs(const char *full)
{
	char p[8192], *slash;

	snprintf(p, sizeof(p), "%s", full);
	slash = strrchr(p, '/');
	if (slash && slash != p) {
		*slash = '\0';
		mkdirs(p);
	}
}

/* An exposed directory: its 9p share, mounted in place. */
static void mount_share(const char *tag, const char *path, bool rw)
{
	char opts[256];
	unsigned long flags = MS_NOSUID | MS_NODEV | (rw ? 0 : MS_RDONLY);
	const char *t;

	snprintf(opts, sizeof(opts),
		 "trans=virtio,version=9p2000.L,msize=512000,cache=%s",
		 rw ? "mmap" : "loose");
	t = at(path);
	mkdirs(t);
	if (mount(tag, t, "9p", flags, opts) < 0)
		die("mount the share of", path);
}

/* A file exposed alone: the copy the initramfs carries, bound read-only
 * (inside a share already mounted, the mount point is there). */
static void bind_file(const char *copy, const char *path)
{
	char src[300];
	const char *t;

	snprintf(src, sizeof(src), "/%s", copy);
	t = at(path);
	if (access(t, F_OK) != 0) {
		int fd;

		parent_dirs(t);
		fd = open(t, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			die("make the mount point", path);
		close(fd);
	}
	if (mount(src, t, NULL, MS_BIND, NULL) < 0)
		die("bind the file", path);
	if (mount(NULL, t, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		die("remount", path);
}

static void mask(const char *path, bool is_dir)
{
	const char *src = is_dir ? ROOT "/.pysb-empty-dir" : ROOT "/.pysb-empty";
	int fd;

	if (is_dir)
		mkdirs(src);
	else if ((fd = open(src, O_WRONLY | O_CREAT | O_CLOEXEC, 0)) >= 0)
		close(fd);
	if (chmod(src, 0) < 0)
		die("chmod", src);
	if (mount(src, at(path), NULL, MS_BIND, NULL) < 0)
		die("mask (ignore=)", path);
	if (mount(NULL, at(path), NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
			  MS_NOEXEC,
		  NULL) < 0)
		die("remount the mask", path);
}

static void build_dev(void)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = { { "null", 1, 3 },	{ "zero", 1, 5 },
		      { "full", 1, 7 },	{ "random", 1, 8 },
		      { "urandom", 1, 9 }, { "tty", 5, 0 } };
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" },
		{ "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" },
		{ "stderr", "/proc/self/fd/2" },
	};
	char p[64];
	size_t i;

	mkdirs(ROOT "/dev");
	if (mount("tmpfs", ROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
		  "mode=0755,size=64k") < 0)
		die("mount tmpfs on", "/dev");
	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(p, sizeof(p), ROOT "/dev/%s", nodes[i].name);
		if (mknod(p, S_IFCHR | 0666,
			  makedev(nodes[i].maj, nodes[i].min)) < 0)
			die("mknod", p);
		chmod(p, 0666);
	}
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), ROOT "/dev/%s", links[i][0]);
		if (symlink(links[i][1], p) < 0)
			die("symlink", p);
	}
	mkdirs(ROOT "/dev/shm");
	if (mount("tmpfs", ROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=1777") < 0)
		die("mount tmpfs on", "/dev/shm");
}

/* The whole of a file into a new memfd at fd number 'want'. */
static void file_to_fd(const char *path, int want)
{
	char buf[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC);
	int out = memfd_create("pysb", 0);
	ssize_t n;

	if (in < 0 || out < 0)
		die("open", path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die("copy", path);
	if (n < 0 || lseek(out, 0, SEEK_SET) < 0)
		die("read", path);
	close(in);
	if (out != want) {
		if (dup2(out, want) < 0)
			die("dup2", path);
		close(out);
	}
	unlink(path);
}

struct rec {
	char *data;
	size_t len, pos;
};

static const char *tok(struct rec *r)
{
	const char *s;
	char *nul;

	if (r->pos >= r->len)
		return NULL;
	s = r->data + r->pos;
	nul = memchr(s, '\0', r->len - r->pos);
	if (!nul)
		return NULL;
	r->pos = (size_t)(nul - r->data) + 1;
	return s;
}

static const char *need(struct rec *r)
{
	const char *s = tok(r);

	if (!s) {
		errno = EINVAL;
		die("the run record is truncated", NULL);
	}
	return s;
}

static void read_record(struct rec *r)
{
	int fd = open("/pysb/run", O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		die("open", "/pysb/run");
	r->len = (size_t)st.st_size;
	r->data = malloc(r->len + 1);
	if (!r->data || read(fd, r->data, r->len) != (ssize_t)r->len)
		die("read", "/pysb/run");
	r->data[r->len] = '\0';
	r->pos = 0;
	close(fd);
}

/* Partial mode's channel (the record's "channel N"): the worker gets one
 * end of a socket pair as descriptor N, as it would on the host, and this
 * process moves the bytes between the other end and the pysb.rpc port,
 * each way through a buffer. The launcher closing its end is the port's
 * end of file, passed on as the worker's; what the worker wrote last is
 * flushed before the machine stops. */
struct chan {
	int port, sock; /* -1: none, or closed */
	char to_worker[65536], to_host[65536];
	size_t tw_len, tw_off, th_len, th_off;
	bool port_eof;
};

static struct chan ch = { .port = -1, .sock = -1 };

static void chan_open(int want, int policy_fd, int stage_fd)
{
	int sv[2];

	if (want < 3 || want > 800 || want == policy_fd || want == stage_fd) {
		errno = EINVAL;
		die("the channel's descriptor number", NULL);
	}
	for (int tries = 0; ch.port < 0 && tries < 3000; tries++) {
		ch.port = open_port("pysb.rpc");
		if (ch.port < 0)
			usleep(10000);
	}
	if (ch.port < 0)
		die("open the virtio-serial port", "pysb.rpc");
	ch.port = fcntl(ch.port, F_DUPFD_CLOEXEC, 900);
	if (ch.port < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    dup2(sv[1], want) < 0)
		die("the channel's socket pair", NULL);
	close(sv[1]);
	ch.sock = fcntl(sv[0], F_DUPFD_CLOEXEC, 900);
	close(sv[0]);
	if (ch.sock < 0 || fcntl(ch.sock, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(ch.port, F_SETFL, O_NONBLOCK) < 0)
		die("the channel's descriptors", NULL);
}

/* The poll entries of the channel: [0] the port, [1] the socket. */
static void chan_events(struct pollfd pf[2])
{
	pf[0].fd = ch.port;
	pf[0].events = (ch.th_len ? POLLOUT : 0) |
		       (!ch.tw_len && !ch.port_eof ? POLLIN : 0);
	pf[1].fd = ch.sock;
	pf[1].events = (ch.tw_len ? POLLOUT : 0) | (!ch.th_len ? POLLIN : 0);
	if (!pf[0].events)
		pf[0].fd = -1;
	if (!pf[1].events)
		pf[1].fd = -1;
}

static void chan_move(const struct pollfd pf[2])
{
	ssize_t n;

	if (pf[0].fd >= 0 && (pf[0].revents & (POLLIN | POLLHUP)) &&
	    !ch.tw_len) {
		n = read(ch.port, ch.to_worker, sizeof(ch.to_worker));
		if (n > 0)
			ch.tw_len = (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			ch.port_eof = true; /* the launcher closed its end */
	}
	if (pf[1].fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP)) &&
	    !ch.th_len) {
		n = read(ch.sock, ch.to_host, sizeof(ch.to_host));
		if (n > 0) {
			ch.th_len = (size_t)n;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(ch.sock); /* the worker closed its end */
			ch.sock = -1;
		}
	}
	if (ch.th_len && ch.port >= 0 && (pf[0].revents & POLLOUT) &&
	    !sb_flush_some(ch.port, ch.to_host, &ch.th_off, &ch.th_len))
		ch.th_len = ch.th_off = 0;
	if (ch.tw_len && ch.sock >= 0 && (pf[1].revents & POLLOUT) &&
	    !sb_flush_some(ch.sock, ch.to_worker, &ch.tw_off, &ch.tw_len))
		ch.tw_len = ch.tw_off = 0;
	if (ch.port_eof && !ch.tw_len && ch.sock >= 0)
		shutdown(ch.sock, SHUT_WR);
}

/* Before the machine stops: what the worker wrote, to the launcher. */
static void chan_drain(void)
{
	if (ch.port < 0)
		return;
	fcntl(ch.port, F_SETFL, 0);
	for (;;) {
		ssize_t n;

		while (ch.th_len)
			if (!sb_flush_some(ch.port, ch.to_host, &ch.th_off,
					&ch.th_len))
				return;
		if (ch.sock < 0)
			return;
		n = read(ch.sock, ch.to_host, sizeof(ch.to_host));
		if (n <= 0)
			return;
		ch.th_len = (size_t)n;
	}
}

/* ---- the denial log and the limits: descriptors for the stage ---- */

/* fd moved out of the way of the numbers the stage is given */
static int out_of_way(int fd, const char *what)
{
	int h = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 900);

	if (h < 0)
		die(what, NULL);
	close(fd);
	return h;
}

/* fd at number 'want', inherited by the stage; a number already taken
 * (the policy's, the stage's, a port's) stops the run */
static void place(int fd, int want, const char *what)
{
	if (want < 3 || want > 800 || fcntl(want, F_GETFD) >= 0) {
		errno = EBADF;
		die(what, NULL);
	}
	if (dup2(fd, want) < 0)
		die(what, NULL);
	close(fd);
}

/* The record's "log LOG RELAY PEER": the pysb.log port at LOG, where the
 * stage's supervisor writes its records for the host; a datagram socket
 * pair, the supervisor's end at RELAY (SO_PASSCRED: the kernel tells the
 * sender), the guard's at PEER (the number the policy blob names). */
static void log_open(int log, int relay, int peer)
{
	int port = -1, sv[2], on = 1;

	for (int tries = 0; port < 0 && tries < 3000; tries++) {
		port = open_port("pysb.log");
		if (port < 0)
			usleep(10000);
	}
	if (port < 0)
		die("open the virtio-serial port", "pysb.log");
	port = out_of_way(port, "move the log port");
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0)
		die("the denial log's relay", NULL);
	shutdown(sv[0], SHUT_WR);
	shutdown(sv[1], SHUT_RD);
	sv[0] = out_of_way(sv[0], "move the relay");
	sv[1] = out_of_way(sv[1], "move the relay");
	place(port, log, "the log port's descriptor number");
	place(sv[0], relay, "the relay's descriptor number");
	place(sv[1], peer, "the relay's descriptor number");
}

/* 'must': any failure stops the run; else only a file the kernel does
 * not have (ENOENT: memory.swap.max without swap accounting) is let go. */
static void cg_write(const char *file, const char *text, bool must)
{
	char path[128];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && !must && errno == ENOENT)
		return;
	n = fd < 0 ? -1 : write(fd, text, strlen(text));
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)strlen(text))
		die("write the cgroup's", path);
}

/* The record's "limits MEM PIDS CPU PROCS DIR": the program's cgroup v2,
 * with memory.max MEM (bytes) and pids.max PIDS ("0": none; CPU "1": the
 * stage reads its cpu.stat), its cgroup.procs at PROCS and its directory
 * (O_PATH) at DIR. The stage's supervisor stays outside it, in the root
 * cgroup with this init. Any step that fails stops the run: a limit is
 * never dropped. */
static void cgroup_make(const char *mem, const char *pids, int procs, int dir)
{
	int fd;

	mkdir("/sys/fs/cgroup", 0755);
	if (mount("cgroup2", "/sys/fs/cgroup", "cgroup2",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die("mount cgroup2 on", "/sys/fs/cgroup");
	if (strcmp(mem, "0") != 0)
		cg_write("cgroup.subtree_control", "+memory", true);
	if (strcmp(pids, "0") != 0)
		cg_write("cgroup.subtree_control", "+pids", true);
	if (mkdir("/sys/fs/cgroup/pysb", 0755) < 0)
		die("mkdir", "/sys/fs/cgroup/pysb");
	if (strcmp(mem, "0") != 0) {
		cg_write("pysb/memory.max", mem, true);
		/* no way around it through swap, where there is one */
		cg_write("pysb/memory.swap.max", "0", false);
	}
	if (strcmp(pids, "0") != 0)
		cg_write("pysb/pids.max", pids, true);
	fd = open("/sys/fs/cgroup/pysb/cgroup.procs", O_WRONLY | O_CLOEXEC);
	fd = out_of_way(fd, "open the cgroup's cgroup.procs");
	place(fd, procs, "the cgroup's descriptor number");
	fd = open("/sys/fs/cgroup/pysb", O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = out_of_way(fd, "open the cgroup");
	place(fd, dir, "the cgroup's descriptor number");
}

/* Wait for the stage, passing on the signals the launcher sends; returns
 * its status as an exit code. */
static int supervise(pid_t child)
{
	sigset_t set;
	int sfd, status = 0;
	char buf[256];
	size_t have = 0;
	bool ctl_open = true;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd", NULL);
	for (;;) {
		struct pollfd pf[4] = { { .fd = sfd, .events = POLLIN },
					{ .fd = ctl_open ? ctl_fd : -1,
					  .events = POLLIN },
					{ .fd = -1 },
					{ .fd = -1 } };
		pid_t w;

		while ((w = waitpid(-1, &status, WNOHANG)) > 0)
			if (w == child)
				return WIFEXITED(status)
					       ? WEXITSTATUS(status)
					       : 128 + WTERMSIG(status);
		if (ch.port >= 0)
			chan_events(pf + 2);
		if (poll(pf, 4, -1) < 0 && errno != EINTR)
			die("poll", NULL);
		if (ch.port >= 0)
			chan_move(pf + 2);
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) < 0 && errno != EINTR)
				die("read", "the signalfd");
		}
		if (pf[1].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(ctl_fd, buf + have,
					 sizeof(buf) - 1 - have);
			char *nl;

			if (n <= 0) {
				/* the launcher went away: end the run */
				kill(child, SIGKILL);
				ctl_open = false;
				continue;
			}
			have += (size_t)n;
			buf[have] = '\0';
			while ((nl = strchr(buf, '\n'))) {
				int sig;

				*nl = '\0';
				if (sscanf(buf, "sig %d", &sig) == 1 &&
				    sig > 0 && sig < 65)
					kill(child, sig);
				have -= (size_t)(nl + 1 - buf);
				memmove(buf, nl + 1, have + 1);
			}
			if (have >= sizeof(buf) - 1)
				have = 0;
		}
	}
}

int main(void)
{
	struct rec r;
	const char *k, *cwd = "/";
	char *args[MAX_ARGS];
	int n_args = 0, policy_fd = -1, stage_fd = -1, channel = 0, in, out,
	    err, con;
	const char *net[3] = { NULL, NULL, NULL }, *lims[5] = { NULL },
		   *logs[3] = { NULL };
	sigset_t set;
	pid_t child;
	int status;

	if (getpid() != 1)
		return 1;
	diag = getenv("pysb_diag") != NULL;
	/* the program runs as root here too, without capabilities: it must
	 * not reach this process's descriptors (the control port) through
	 * /proc/1/fd */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	mkdir("/dev", 0755);
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, NULL) < 0)
		return 1;
	con = open("/dev/console", O_RDWR | O_NOCTTY);
	if (con >= 0) {
		dup2(con, 0);
		dup2(con, 1);
		dup2(con, 2);
		if (con > 2)
			close(con);
	}
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		die("mount", "/sys");
	/* microvm's devices are virtio-mmio ones, a module in Debian's
	 * kernels; the serial ports appear once it is loaded, and their
	 * names a moment later (the device announces each port) */
	load_modules(transport, sizeof(transport) / sizeof(transport[0]));
	for (int tries = 0;; tries++) {
		ctl_fd = open_port("pysb.ctl");
		in = open_port("pysb.in");
		out = open_port("pysb.out");
		err = open_port("pysb.err");
		if ((ctl_fd >= 0 && in >= 0 && out >= 0 && err >= 0) ||
		    tries == 3000)
			break;
		close_all(ctl_fd, in, out, err);
		usleep(10000);
	}
	if (ctl_fd < 0 || in < 0 || out < 0 || err < 0)
		die("open the virtio-serial ports", NULL);
	crumb("the virtio-serial ports are open");
	/* out of the way of the descriptor numbers the stage is given */
	ctl_fd = fcntl(ctl_fd, F_DUPFD_CLOEXEC, 900);
	in = fcntl(in, F_DUPFD_CLOEXEC, 900);
	out = fcntl(out, F_DUPFD_CLOEXEC, 900);
	err = fcntl(err, F_DUPFD_CLOEXEC, 900);
	if (ctl_fd < 0 || in < 0 || out < 0 || err < 0)
		die("move the virtio-serial ports", NULL);
	for (int fd = 3; fd < 900; fd++)
		close(fd);
	load_modules(share_modules,
		     sizeof(share_modules) / sizeof(share_modules[0]));
	crumb("the 9p modules are loaded");
	read_record(&r);
	if (mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") <
		    0 &&
	    (mkdir(ROOT, 0755),
	     mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV,
		   "mode=0755") < 0))
		die("mount tmpfs on", ROOT);
	while ((k = tok(&r)) && strcmp(k, "end") != 0) {
		if (strcmp(k, "dir") == 0) {
			mkdirs(at(need(&r)));
		} else if (strcmp(k, "link") == 0) {
			const char *path = need(&r), *target = need(&r);

			parent_dirs(at(path));
			if (symlink(target, at(path)) < 0 && errno != EEXIST)
				die("symlink", path);
		} else if (strcmp(k, "bind") == 0) {
			const char *tag = need(&r), *path = need(&r),
				   *rw = need(&r);

			mount_share(tag, path, *rw == '1');
		} else if (strcmp(k, "file") == 0) {
			const char *copy = need(&r);

			bind_file(copy, need(&r));
		} else if (strcmp(k, "mask") == 0) {
			const char *path = need(&r);

			mask(path, *need(&r) == '1');
		} else if (strcmp(k, "cwd") == 0) {
			cwd = need(&r);
		} else if (strcmp(k, "policy-fd") == 0) {
			policy_fd = atoi(need(&r));
		} else if (strcmp(k, "channel") == 0) {
			channel = atoi(need(&r));
		} else if (strcmp(k, "net") == 0) {
			net[0] = need(&r);
			net[1] = need(&r);
			net[2] = need(&r);
		} else if (strcmp(k, "log") == 0) {
			for (int i = 0; i < 3; i++)
				logs[i] = need(&r);
		} else if (strcmp(k, "limits") == 0) {
			for (int i = 0; i < 5; i++)
				lims[i] = need(&r);
		} else if (strcmp(k, "stage-fd") == 0) {
			stage_fd = atoi(need(&r));
		} else if (strcmp(k, "arg") == 0) {
			if (n_args >= MAX_ARGS - 1) {
				errno = E2BIG;
				die("the command line", NULL);
			}
			args[n_args++] = (char *)need(&r);
		} else {
			errno = EINVAL;
			die("unknown entry in the run record:", k);
		}
	}
	args[n_args] = NULL;
	if (stage_fd < 0)
		stage_fd = policy_fd + 1;
	if (!k || n_args < 4 || policy_fd < 3 || policy_fd > 800 ||
	    stage_fd < 3 || stage_fd > 800 || stage_fd == policy_fd) {
		errno = EINVAL;
		die("the run record is incomplete", NULL);
	}
	crumb("the shares are mounted");
	if (channel)
		chan_open(channel, policy_fd, stage_fd);
	if (net[0])
		net_up(net[0], net[1], net[2]);
	build_dev();
	mkdirs(ROOT "/proc");
	if (mount("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		die("mount proc on", "/proc");
	/* the blobs onto memfds before the initramfs is hidden */
	file_to_fd("/pysb/policy", policy_fd);
	file_to_fd("/pysb/stage", stage_fd);
	/* after them: their numbers are taken, the new ones go elsewhere
	 * first (out_of_way), then where the records say */
	if (logs[0])
		log_open(atoi(logs[0]), atoi(logs[1]), atoi(logs[2]));
	if (lims[0])
		cgroup_make(lims[0], lims[1], atoi(lims[3]), atoi(lims[4]));
	if (chdir(ROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 ||
	    chroot(".") < 0 || chdir("/") < 0)
		die("switch to the new root", NULL);
	if (mount(NULL, "/", NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		die("remount read-only", "/");
	if (chdir(cwd) < 0)
		die("chdir", cwd);
	if (sethostname("sandbox", 7) < 0)
		die("sethostname", "sandbox");
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	say("up");
	crumb("the second stage starts: %s", args[0]);
	child = fork();
	if (child < 0)
		die("fork", NULL);
	if (child == 0) {
		char *env[] = { NULL };

		sigprocmask(SIG_UNBLOCK, &set, NULL);
		setsid();
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(SB_EXIT_SETUP);
		execve(args[0], args, env);
		dprintf(2, "python-sb: the guest: exec %s: %s\n", args[0],
			strerror(errno));
		_exit(SB_EXIT_SETUP);
	}
	close(policy_fd);
	close(stage_fd);
	close(in);
	close(out);
	close(err);
	if (channel)
		close(channel); /* the worker's end is the worker's alone */
	for (int i = 0; logs[0] && i < 3; i++)
		close(atoi(logs[i])); /* the stage's */
	if (lims[0]) {
		close(atoi(lims[3]));
		close(atoi(lims[4]));
	}
	status = supervise(child);
	crumb("the program ended: status %d", status);
	chan_drain();
	say("exit %d", status);
	power_off();
	return 0;
}
