/* qemu.c - os-sandbox=qemu: the qemu.* keys, the guest kernel, the
 * initramfs of the run, qemu's command line, and the relay python-sb
 * stays as while the guest runs.
 *
 * Nothing is downloaded: the kernel is a Debian package's /boot/vmlinuz-*
 * (unpacked into a memfd by vmlinux.c and booted at its PVH entry, else
 * booted as it is with -kernel), and the initramfs is made for each run in
 * a memfd (a few megabytes: the static guest init, the kernel's virtio-mmio
 * and 9p modules, the files exposed alone and the run's records; built in
 * milliseconds, so there is no cache to trust or to be tampered with). The
 * machine is a microvm (no PCI bus, no firmware tables to walk, virtio-mmio
 * devices), which with the unpacked kernel halves the boot. The guest sees
 * the paths sb_ns_plan() lists, the same root os-sandbox=unshare builds,
 * each directory as a virtio-9p share that qemu serves read-only unless
 * the rule is expose-rw=; a file exposed alone travels as a copy in the
 * initramfs (read-only; expose-rw= of a single file is refused), so that
 * qemu never serves its directory. /dev, /proc and /sys are the guest's
 * own, never shared. Inside, python-sb's second stage (stage.c)
 * applies the Python layer, Landlock and seccomp as under landlock.
 *
 * stdin, stdout and stderr are virtio-serial ports relayed here; a fourth
 * port carries the guest's "up", "exit N" or "fail TEXT" and our "sig N";
 * a fifth, with --pysandboxes-channel, is partial mode's socket to its
 * worker (chan_move); a sixth, with log-file=, carries the guest's denial
 * records as lines, which this launcher checks and writes to the log it
 * opened (log_data): the guest never names the file. limit-* are held in
 * the guest (its init's cgroup, its stage's rlimits and timer), and
 * limit-time from here too, should the guest not end the run; the serial
 * console is shown only with qemu.show_boot_console. The relay is a
 * mode of the one supervisor loop (supervisor.c, SB_SUP_BY_MODE): its
 * ports, stdin and the channel are the mode's descriptors, its deadlines
 * the loop's wait, and each signal goes to the guest as "sig N". qemu runs
 * in a process group of its own, so that a terminal's Ctrl-C reaches the
 * program through us and not qemu. With net= rules the guest has one
 * virtio-net card whose back end is passt on the host (qemu_net.c), under
 * a host Landlock ruleset of the rules' TCP ports; the guest's init sets
 * its address, and the second stage's network supervisor judges every
 * call by the rules. Without them it has no network device.
 */
#include "qemu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "bufio.h"
#include "kcache.h"
#include "exit_status.h"
#include "denial.h"
#include "fdio.h"
#include "ns.h"
#include "qemu_net.h"
#include "run_limits.h"
#include "stage.h"
#include "suplog.h"
#include "supervisor.h"
#include "support.h"
#include "vmlinux.h"

#define INIT_NAME "pysb-guest-init"
#define QEMU_NAME "qemu-system-x86_64"
/* microvm has 24 virtio-mmio slots, the serial ports take one, and a
 * guest given all 24 hangs loading 9p (seen with Debian's 6.12, with and
 * without the second IO-APIC): 23 devices boot, the test pins it */
#define MAX_SHARES 22
#define MAX_FILE (64 << 20) /* bytes of a file exposed alone */
#define CONSOLE_LOG ".pysandbox-qemu-console.log"
/* MiB of the guest beside limit-memory: its kernel, the init, the stage */
#define GUEST_RESERVE_MIB 256
/* seconds past limit-time after which the launcher ends a guest that did
 * not end the run itself (its own timer counts from the program's start,
 * a moment after "up") */
#define LIMIT_TIME_GRACE 30

static bool truthy(const char *v)
{
	return sb_str_ieq(v, "true") || strcmp(v, "1") == 0 ||
	       sb_str_ieq(v, "yes");
}

static bool falsy(const char *v)
{
	return sb_str_ieq(v, "false") || strcmp(v, "0") == 0 ||
	       sb_str_ieq(v, "no");
}

/* "512M", "2G", "2048" (MiB): MiB, or 0 when malformed. */
static unsigned long long parse_memory(const char *v)
{
	char *end;
	unsigned long long n;
	int shift = 0;

	if (!*v || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || n == 0)
		return 0;
	if (!*end)
		return n;
	if (end[1])
		return 0;
	switch (*end) {
	case 'k': case 'K': shift = -10; break;
	case 'm': case 'M': shift = 0; break;
	case 'g': case 'G': shift = 10; break;
	case 't': case 'T': shift = 20; break;
	default: return 0;
	}
	if (shift < 0)
		return n >> 10;
	if (n > (1ULL << 40) >> shift)
		return 0;
	return n << shift;
}

int sb_qemu_options(struct sb_arena *a, const struct sb_policy *p,
		    struct sb_qemu_opts *o, const char **err)
{
	const struct sb_provider_opt *mem_rule = NULL;
	uint64_t lim = p->limits[SB_LIMIT_MEMORY].value;
	unsigned long long need;
	size_t i;

	o->memory_mib = 2048;
	o->use_kvm = true;
	o->show_boot_console = false;
	o->start_timeout = 0;
	*err = NULL;
	for (i = 0; i < p->provider_opts.n; i++) {
		const struct sb_provider_opt *po = &p->provider_opts.v[i];
		const char *k = po->key, *v = po->value, *want = NULL;
		char *end;
		long t;

		if (po->provider != SB_PROVIDER_QEMU)
			continue;
		if (strcmp(k, "memory") == 0) {
			mem_rule = po;
			o->memory_mib = parse_memory(v);
			if (o->memory_mib < 64 || o->memory_mib > 1048576)
				want = "a size of 64M to 1T (512M, 2G; a plain "
				       "number is MiB)";
		} else if (strcmp(k, "use_kvm") == 0) {
			o->use_kvm = truthy(v);
			if (!o->use_kvm && !falsy(v))
				want = "true or false";
		} else if (strcmp(k, "show_boot_console") == 0) {
			o->show_boot_console = truthy(v);
			if (!o->show_boot_console && !falsy(v))
				want = "true or false";
		} else if (strcmp(k, "start_timeout") == 0) {
			errno = 0;
			t = strtol(v, &end, 10);
			if (errno || end == v || *end || t <= 0 || t > 86400)
				want = "seconds, 1 to 86400";
			else
				o->start_timeout = (int)t;
		} else {
			*err = sb_arena_printf(
				a,
				"%s: Unknown key 'qemu.%s': os-sandbox=qemu "
				"knows qemu.memory, qemu.use_kvm, "
				"qemu.start_timeout and qemu.show_boot_console",
				sb_ref_format(a, po->ref), sb_sanitize(a, k));
			return -1;
		}
		if (want) {
			*err = sb_arena_printf(
				a, "%s: Invalid value '%s' for 'qemu.%s': %s",
				sb_ref_format(a, po->ref), sb_sanitize(a, v),
				k, want);
			return -1;
		}
	}
	if (!lim)
		return 0;
	/* limit-memory holds the program's cgroup in the guest: the machine
	 * holds it, and the guest's kernel, init and supervisor beside it,
	 * or the guest's own OOM killer would end the program first */
	need = (lim + (1ULL << 20) - 1) / (1ULL << 20) + GUEST_RESERVE_MIB;
	if (!mem_rule && o->memory_mib < need)
		o->memory_mib = need;
	else if (mem_rule && o->memory_mib < need) {
		*err = sb_arena_printf(
			a,
			"%s: %s does not fit in %s (from %s): the guest needs "
			"at least %lluM, the limit and %d MiB for its kernel "
			"and python-sb's supervisor; raise qemu.memory or "
			"lower the limit",
			sb_ref_format(a, p->limits[SB_LIMIT_MEMORY].ref),
			sb_sanitize(a, p->limits[SB_LIMIT_MEMORY].rule),
			sb_sanitize(a, mem_rule->rule),
			sb_ref_format(a, mem_rule->ref), need,
			GUEST_RESERVE_MIB);
		return -1;
	}
	if (o->memory_mib > 1048576) {
		*err = sb_arena_printf(
			a, "%s: %s: the guest cannot have the memory it needs "
			   "(more than 1T)",
			sb_ref_format(a, p->limits[SB_LIMIT_MEMORY].ref),
			sb_sanitize(a, p->limits[SB_LIMIT_MEMORY].rule));
		return -1;
	}
	return 0;
}

const char *sb_qemu_refusal(struct sb_arena *a, const struct sb_policy *p)
{
	struct sb_qemu_opts o;
	const char *err;

	/* log-file= and limit-* are the guest's (the stage's supervisor),
	 * the log written here: what is left is a bad qemu.* key, or a
	 * limit-memory that qemu.memory cannot hold */
	return sb_qemu_options(a, p, &o, &err) < 0 ? err : NULL;
}

/* ---- the host's pieces: qemu, the kernel, its modules, the init ---- */

static bool is_exec(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

static const char *find_qemu(struct sb_arena *a)
{
	const char *env = getenv("PYSB_QEMU"), *path = getenv("PATH");
	char *dirs, *d, *save = NULL;

	if (env && *env)
		return is_exec(env) ? env : NULL;
	dirs = sb_arena_strdup(a, path && *path ? path : "/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		const char *c;

		if (*d != '/')
			continue;
		c = sb_arena_printf(a, "%s/" QEMU_NAME, d);
		if (is_exec(c))
			return c;
	}
	return is_exec("/usr/bin/" QEMU_NAME) ? "/usr/bin/" QEMU_NAME : NULL;
}

/* /lib/modules/VER/kernel/REL.ko* */
static const char *module_file(struct sb_arena *a, const char *ver,
			       const char *rel)
{
	static const char *const exts[] = { ".ko.xz", ".ko.zst", ".ko.gz",
					    ".ko" };
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(exts); i++) {
		const char *f = sb_arena_printf(a, "/lib/modules/%s/kernel/%s%s",
						ver, rel, exts[i]);

		if (access(f, R_OK) == 0)
			return f;
	}
	return NULL;
}

/* the modules the guest loads (init.c's tables), the last three only
 * with a network card */
#define NET_MODULES 3
static const char *const modules[][2] = {
	{ "virtio_mmio", "drivers/virtio/virtio_mmio" },
	{ "netfs", "fs/netfs/netfs" },
	{ "9pnet", "net/9p/9pnet" },
	{ "9pnet_virtio", "net/9p/9pnet_virtio" },
	{ "9p", "fs/9p/9p" },
	{ "failover", "net/core/failover" },
	{ "net_failover", "drivers/net/net_failover" },
	{ "virtio_net", "drivers/net/virtio_net" },
};

/* The version a /boot/vmlinuz-VER names. */
static const char *kernel_version(const char *kernel)
{
	const char *b = strrchr(kernel, '/');

	b = b ? b + 1 : kernel;
	return strncmp(b, "vmlinuz-", 8) == 0 ? b + 8 : NULL;
}

const char *sb_qemu_kernel(struct sb_arena *a)
{
	const char *env = getenv("PYSB_QEMU_KERNEL"), *best = NULL;
	DIR *d;
	struct dirent *e;

	if (env && *env) {
		const char *v = kernel_version(env);

		return access(env, R_OK) == 0 && v &&
				       module_file(a, v, "fs/9p/9p")
			       ? env
			       : NULL;
	}
	d = opendir("/boot");
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		const char *v;

		if (strncmp(e->d_name, "vmlinuz-", 8) != 0)
			continue;
		v = e->d_name + 8;
		if (!module_file(a, v, "fs/9p/9p") ||
		    access(sb_arena_printf(a, "/boot/%s", e->d_name), R_OK))
			continue;
		if (!best || strverscmp(v, best) > 0)
			best = sb_arena_strdup(a, v);
	}
	closedir(d);
	return best ? sb_arena_printf(a, "/boot/vmlinuz-%s", best) : NULL;
}

/* The whole file at 'path' in *d (freed on failure): 0 or -errno. */
static int read_path(const char *path, struct sb_buf *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = sb_fd_read_all(fd, d);
	close(fd);
	if (r < 0)
		sb_buf_free(d);
	return r < 0 ? r : 0;
}

/* The kernel qemu boots: the bzImage's kernel unpacked, kept by root's
 * runs (kcache.c) or else into a memfd (vmlinux.c: the guest skips its
 * own decompressor, a second and more under TCG), else the bzImage
 * itself. *fd: the descriptor to pass, or -1. */
static const char *boot_kernel(struct sb_arena *a, const char *kernel,
			       int *fd)
{
	bool debug = getenv("PYSB_DEBUG") != NULL;
	struct sb_buf img = { 0 };
	const char *why = NULL, *keep;
	struct stat st;
	int kfd = open(kernel, O_RDONLY | O_CLOEXEC), r = 0;

	*fd = -1;
	if (kfd < 0 || fstat(kfd, &st) < 0) {
		why = strerror(errno);
		goto as_it_is;
	}
	*fd = sb_kcache_open(SB_KCACHE_DIR, &st, &why);
	if (*fd >= 0) {
		if (debug)
			fprintf(stderr,
				"python-sb: os-sandbox=qemu: the kernel of "
				"%s as kept in %s\n",
				kernel, SB_KCACHE_DIR);
		close(kfd);
		return sb_arena_printf(a, "/proc/self/fd/%d", *fd);
	}
	if (debug)
		fprintf(stderr,
			"python-sb: os-sandbox=qemu: no kernel kept in %s: "
			"%s\n",
			SB_KCACHE_DIR, why);
	r = sb_fd_read_all(kfd, &img);
	if (r < 0)
		why = strerror(-r);
	else if ((r = sb_vmlinux_unpack((const unsigned char *)img.s,
					img.len, &why)) >= 0)
		*fd = r;
	sb_buf_free(&img);
	if (*fd >= 0) {
		close(kfd);
		if (geteuid() == 0 &&
		    sb_kcache_store(SB_KCACHE_DIR, &st, *fd, &keep) < 0 &&
		    debug)
			fprintf(stderr,
				"python-sb: os-sandbox=qemu: the unpacked "
				"kernel is not kept in %s: %s\n",
				SB_KCACHE_DIR, keep);
		return sb_arena_printf(a, "/proc/self/fd/%d", *fd);
	}
as_it_is:
	if (kfd >= 0)
		close(kfd);
	if (debug)
		fprintf(stderr,
			"python-sb: os-sandbox=qemu: booting %s as it is: %s\n",
			kernel, why);
	return kernel;
}

/* Under TCG the guest's TSC is the host's. microvm has no HPET and no ACPI
 * PM timer, so a guest left to calibrate the TSC against the emulated PIT
 * alone can fail on a loaded host (the PIT's ticks come late) and then
 * hang; told the rate, it does not calibrate. Measured here against
 * CLOCK_MONOTONIC_RAW over some 5 ms, the shortest reading of a few kept
 * (a preempted one is long). "tsc_early_khz=N " or "" off x86-64. */
static const char *tsc_khz(struct sb_arena *a)
{
#if defined(__x86_64__)
	double best = 0;

	for (int i = 0; i < 3; i++) {
		struct timespec t0, t1;
		unsigned long long c0, c1;
		double ns;

		clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
		c0 = __builtin_ia32_rdtsc();
		do
			clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
		while ((t1.tv_sec - t0.tv_sec) * 1e9 +
			       (t1.tv_nsec - t0.tv_nsec) <
		       5e6);
		c1 = __builtin_ia32_rdtsc();
		ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
		if (ns > 0 && (best == 0 || (c1 - c0) * 1e6 / ns < best))
			best = (c1 - c0) * 1e6 / ns;
	}
	if (best > 1e5 && best < 1e8)
		return sb_arena_printf(a, "tsc_early_khz=%.0f ", best);
#else
	(void)a;
#endif
	return "";
}

static bool kvm_usable(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The guest init: beside the binary in a build tree, beside the guard
 * library in a wheel (pysandboxes/_lib/), else installed. The guard is
 * looked for even when the run loads none (py-sandbox=false): in a venv
 * the init lies beside it all the same. */
static const char *find_init(struct sb_arena *a, const char *self,
			     const char *guard)
{
	const char *near[] = { self, guard }, *pkgdir, *c;
	size_t i;

	if (!guard && sb_find_support(a, &near[1], &pkgdir, NULL) < 0)
		near[1] = NULL;
	for (i = 0; i < SB_ARRAY_LEN(near); i++) {
		char *dir = near[i] ? sb_arena_strdup(a, near[i]) : NULL;

		if (!dir || !strrchr(dir, '/'))
			continue;
		*strrchr(dir, '/') = '\0';
		c = sb_arena_printf(a, "%s/" INIT_NAME, dir);
		if (access(c, R_OK) == 0)
			return c;
	}
	c = SB_INSTALL_LIBDIR "/" INIT_NAME;
	return access(c, R_OK) == 0 ? c : NULL;
}

const char *sb_qemu_describe(struct sb_arena *a, const struct sb_policy *p)
{
	struct sb_qemu_opts o;
	const char *err, *kernel, *qemu = find_qemu(a);
	bool kvm;

	if (sb_qemu_options(a, p, &o, &err) < 0 ||
	    (err = sb_qemu_refusal(a, p)))
		return sb_arena_printf(a, "qemu cannot run this policy: %s.",
				       err);
	if (!qemu)
		return "qemu cannot run here: " QEMU_NAME " is not installed "
		       "(apt-get install qemu-system-x86).";
	kernel = sb_qemu_kernel(a);
	if (!kernel)
		return "qemu cannot run here: no guest kernel with the 9p "
		       "modules in /boot (apt-get install -t "
		       "bookworm-backports linux-image-amd64).";
	kvm = o.use_kvm && kvm_usable();
	return sb_arena_printf(
		a,
		"a virtual machine of its own (%s, %s, %llu MiB, one vCPU, %s) "
		"booting %s; its root holds only the exposed "
		"paths and the interpreter, which %s serves over virtio-9p, "
		"read-only unless expose-rw=; inside, python-sb's second stage "
		"applies the Python layer, Landlock and seccomp as "
		"os-sandbox=landlock does, under the guest's kernel. The guest "
		"must answer within %d s (qemu.start_timeout).",
		qemu,
		kvm ? "KVM" : o.use_kvm ? "TCG emulation: /dev/kvm is not usable"
					: "TCG emulation: qemu.use_kvm=false",
		o.memory_mib,
		p->any_net_rule
			? "a virtio-net card whose way out is passt on the "
			  "host, which may connect only to the rules' TCP "
			  "ports (Landlock) and never reaches the host's "
			  "loopback; the guest's own network supervisor "
			  "judges every connect, bind and send by the rules"
			: "no network device",
		kernel, QEMU_NAME,
		o.start_timeout ? o.start_timeout : kvm ? 90 : 180);
}

/* ---- the initramfs: cpio newc ---- */

static void cpio_entry(struct sb_buf *b, const char *name, unsigned mode,
		       const char *data, size_t len)
{
	unsigned ino = (unsigned)(b->len / 4) + 1; /* unique in the archive */
	size_t namesize = strlen(name) + 1;

	sb_buf_printf(b,
		      "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X"
		      "%08zX%08X",
		      ino++, mode, 0u, 0u, 1u, 0u, len, 0u, 0u, 0u, 0u,
		      namesize, 0u);
	sb_buf_add(b, name, namesize);
	while (b->len % 4)
		sb_buf_add(b, "", 1);
	if (len)
		sb_buf_add(b, data, len);
	while (b->len % 4)
		sb_buf_add(b, "", 1);
}

static int cpio_file(struct sb_buf *b, const char *name, unsigned mode,
		     const char *path)
{
	struct sb_buf d = { 0 };
	int r = read_path(path, &d);

	if (r < 0)
		return r;
	cpio_entry(b, name, S_IFREG | mode, d.s ? d.s : "", d.len);
	sb_buf_free(&d);
	return 0;
}

/* A kernel module for the guest's init (init.c's load_modules): unpacked
 * here when it is xz or zstd, which the guest would otherwise unpack under
 * emulation at every boot (0.07 to 0.17 s for the 9p modules under TCG
 * here, A/B); as it is when this build cannot unpack it. The module's signature
 * is kept: the guest's kernel checks it as before. */
#define MAX_MODULE (64u << 20)
static int cpio_module(struct sb_arena *a, struct sb_buf *b, const char *name,
		       const char *path)
{
	struct sb_buf d = { 0 };
	const char *ext = strstr(path, ".ko"), *why;
	unsigned char *out;
	size_t len;
	int r = read_path(path, &d);

	if (r < 0)
		return r;
	/* pages are made as they are written */
	out = mmap(NULL, MAX_MODULE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (out != MAP_FAILED &&
	    sb_unpack((const unsigned char *)d.s, d.len, out, MAX_MODULE,
		      &len, &why) == 0)
		cpio_entry(b, sb_arena_printf(a, "modules/%s.ko", name),
			   S_IFREG | 0600, (const char *)out, len);
	else
		cpio_entry(b, sb_arena_printf(a, "modules/%s%s", name, ext),
			   S_IFREG | 0600, d.s ? d.s : "", d.len);
	if (out != MAP_FAILED)
		munmap(out, MAX_MODULE);
	sb_buf_free(&d);
	return 0;
}

static void put0(struct sb_buf *b, const char *s)
{
	sb_buf_add(b, s, strlen(s) + 1);
}

struct share {
	const char *dir; /* the host directory qemu serves */
	bool rw;
};

/* The run record (src/guest/init.c) and the shares it names. */
static const char *plan_record(struct sb_arena *a, const struct sb_policy *p,
			       const struct sb_kernel_ctx *ctx,
			       const char *self, struct sb_buf *rec,
			       struct sb_buf *img, struct share *shares,
			       size_t *n_shares, size_t max_shares)
{
	struct sb_ns_op *ops = NULL, selfop = { 0 };
	size_t n = 0, i;
	const char *err = NULL;

	if (sb_ns_plan(a, p, ctx, &ops, &n, &err) < 0)
		return sb_arena_printf(a, "cannot expose %s", err);
	*n_shares = 0;
	for (i = 0; i <= n; i++) {
		const struct sb_ns_op *o = i < n ? &ops[i] : &selfop;

		if (i == n) {
			/* python-sb itself, for the second stage */
			selfop.kind = SB_NS_BIND;
			selfop.path = self;
			selfop.fd = -1;
			selfop.what = "python-sb's second stage";
		}
		if (o->kind == SB_NS_DIR) {
			put0(rec, "dir");
			put0(rec, o->path);
		} else if (o->kind == SB_NS_LINK) {
			put0(rec, "link");
			put0(rec, o->path);
			put0(rec, o->link);
		} else if (o->kind == SB_NS_MASK) {
			put0(rec, "mask");
			put0(rec, o->path);
			put0(rec, o->is_dir ? "1" : "0");
		} else if (o->kind == SB_NS_BIND &&
			   (sb_path_under(o->path, "/dev") ||
			    sb_path_under(o->path, "/proc") ||
			    sb_path_under(o->path, "/sys"))) {
			/* the guest's own (init.c): qemu never serves the
			 * host's device nodes or kernel files */
		} else if (o->kind == SB_NS_BIND && !o->is_dir) {
			struct stat fst;
			const char *name = sb_arena_printf(a, "files/%zu", i);
			int r;

			/* a file alone: its copy travels in the initramfs,
			 * so that qemu serves none of its directory */
			if (o->writable)
				return sb_arena_printf(
					a,
					"%s: %s is a single file, which the "
					"guest cannot share writable without "
					"its directory; expose-rw= its "
					"directory instead",
					o->what ? o->what : "expose-rw=",
					o->path);
			if (stat(o->path, &fst) < 0 || !S_ISREG(fst.st_mode) ||
			    fst.st_size > MAX_FILE)
				return sb_arena_printf(
					a,
					"%s: %s is not a regular file of at "
					"most %d MiB, which the guest gets as "
					"a copy",
					o->what ? o->what : "implicit path",
					o->path, MAX_FILE >> 20);
			r = cpio_file(img, name, fst.st_mode & 0555, o->path);
			if (r < 0)
				return sb_arena_printf(a, "reading %s: %s",
						       o->path, strerror(-r));
			put0(rec, "file");
			put0(rec, name);
			put0(rec, o->path);
		} else if (o->kind == SB_NS_BIND) {
			if (*n_shares == max_shares)
				return sb_arena_printf(
					a,
					"more than %zu exposed directories "
					"(at %s)%s",
					max_shares, o->path,
					max_shares < MAX_SHARES
						? ": the network card takes a "
						  "device slot"
						: "");
			shares[*n_shares].dir = o->path;
			shares[*n_shares].rw = o->writable;
			put0(rec, "bind");
			put0(rec, sb_arena_printf(a, "s%zu", *n_shares));
			put0(rec, o->path);
			put0(rec, o->writable ? "1" : "0");
			(*n_shares)++;
		}
		if (i < n && o->fd >= 0)
			close(o->fd);
	}
	put0(rec, "cwd");
	put0(rec, ctx->cwd);
	return NULL;
}

/* A descriptor number for the guest's stage: the first from 'from' on
 * that 'used' does not hold, which it then holds. */
static int guest_fd(int *used, int *n, int from)
{
	for (int fd = from < 3 ? 3 : from;; fd++) {
		bool taken = false;

		for (int i = 0; i < *n; i++)
			taken = taken || used[i] == fd;
		if (!taken) {
			used[(*n)++] = fd;
			return fd;
		}
	}
}

/* qemu's option values: a comma is doubled. */
static const char *qarg(struct sb_arena *a, const char *s)
{
	struct sb_buf b = { 0 };
	const char *r;

	for (; *s; s++) {
		sb_buf_add(&b, s, 1);
		if (*s == ',')
			sb_buf_add(&b, ",", 1);
	}
	r = sb_arena_strndup(a, b.s ? b.s : "", b.len);
	sb_buf_free(&b);
	return r;
}

/* ---- the relay ---- */

/* P_RPC: partial mode's channel, only when the run has one; P_LOG: the
 * guest's denial records, only with log-file= */
enum { P_CTL, P_IN, P_OUT, P_ERR, P_CON, P_RPC, P_LOG, N_PORTS };

struct relay {
	struct sb_arena *a; /* the run's: ctl_lines' messages */
	int sock[N_PORTS];  /* our ends */
	int con_log;
	pid_t qemu;
	bool show_console, up, exited;
	int exit_code, timeout;
	long long t0; /* when qemu started, ms */
	char ctl[512];
	size_t ctl_len;
	char con_tail[4096];
	size_t con_len;
	char pending[65536]; /* stdin not yet taken by the guest */
	size_t pend_len, pend_off;
	bool stdin_open;
	/* partial mode's channel (--pysandboxes-channel): the caller's socket
	 * and a buffer each way to and from the P_RPC port; -1: none */
	int chan;
	char to_guest[65536], to_host[65536];
	size_t tg_len, tg_off, th_len, th_off;
	const char *fail;
	/* the denial log (log-file=): the file, opened here before the run,
	 * and the guest's lines from P_LOG; each one sb_denial_unwire takes
	 * becomes a record written here, anything else is counted and
	 * dropped: a line cut at the buffer's end is dropped to its
	 * newline */
	bool log_on; /* written through sb_suplog_record */
	char log_line[SB_DENIAL_WIRE_MAX + 1];
	size_t log_len;
	bool log_skip;
	unsigned long long log_bad;
	/* limit-time (ms, 0: none): the guest's supervisor ends the run;
	 * should it not, this launcher does LIMIT_TIME_GRACE s later */
	long long limit_ms, up_at;
	bool limit_hit;
	/* qemu.start_timeout's end (ms); when the machine is killed (again),
	 * -1: not yet; the guest did not come up in time */
	long long deadline, kill_at;
	bool timed_out;
};

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static void console_data(struct relay *r, const char *s, size_t n)
{
	if (r->show_console) {
		(void)write_all(2, s, n);
		if (r->con_log >= 0)
			(void)write_all(r->con_log, s, n);
	}
	if (n >= sizeof(r->con_tail)) {
		s += n - sizeof(r->con_tail);
		n = sizeof(r->con_tail);
	}
	if (r->con_len + n > sizeof(r->con_tail)) {
		size_t drop = r->con_len + n - sizeof(r->con_tail);

		memmove(r->con_tail, r->con_tail + drop, r->con_len - drop);
		r->con_len -= drop;
	}
	memcpy(r->con_tail + r->con_len, s, n);
	r->con_len += n;
}

static long long now_ms(void);

static void ctl_lines(struct sb_arena *a, struct relay *r)
{
	char *nl;

	while ((nl = memchr(r->ctl, '\n', r->ctl_len))) {
		int code;

		*nl = '\0';
		if (strcmp(r->ctl, "up") == 0) {
			if (!r->up)
				r->up_at = now_ms();
			r->up = true;
			if (getenv("PYSB_DEBUG"))
				fprintf(stderr,
					"python-sb: qemu: the guest is up "
					"after %lld ms\n",
					now_ms() - r->t0);
		}
		else if (sscanf(r->ctl, "exit %d", &code) == 1 && r->up &&
			 !r->exited) {
			r->exited = true;
			r->exit_code = code;
		} else if (strncmp(r->ctl, "fail ", 5) == 0 && !r->fail)
			r->fail = sb_arena_strdup(a, r->ctl + 5);
		r->ctl_len -= (size_t)(nl + 1 - r->ctl);
		memmove(r->ctl, nl + 1, r->ctl_len);
	}
	if (r->ctl_len == sizeof(r->ctl))
		r->ctl_len = 0;
}

/* One line of the guest's log port, without its newline. */
static void log_record(struct relay *r, const char *line, size_t n)
{
	struct sb_arena *a = sb_arena_new();
	struct sb_denial d;

	if (sb_denial_unwire(a, line, n, &d))
		sb_suplog_record(&d);
	else
		r->log_bad++;
	sb_arena_free(a);
}

/* What the log port brought: whole lines to log_record, a line longer
 * than the buffer dropped (the guest may send anything, as fast as it
 * likes: nothing here grows nor waits for it). */
static void log_data(struct relay *r, const char *buf, size_t n)
{
	while (n) {
		const char *nl = memchr(buf, '\n', n);
		size_t k = nl ? (size_t)(nl - buf) : n;

		if (r->log_skip) {
			/* the rest of a line too long to be a record */
		} else if (r->log_len + k > SB_DENIAL_WIRE_MAX) {
			r->log_skip = true;
			r->log_len = 0;
		} else {
			memcpy(r->log_line + r->log_len, buf, k);
			r->log_len += k;
		}
		if (!nl)
			return;
		if (r->log_skip)
			r->log_bad++;
		else
			log_record(r, r->log_line, r->log_len);
		r->log_skip = false;
		r->log_len = 0;
		buf += k + 1;
		n -= k + 1;
	}
}

/* After the run: a last line without its newline is no record, and what
 * was dropped is said once, in the log. */
static void log_finish(struct relay *r)
{
	char what[160];
	struct sb_denial d = {
		.layer = SB_LAYER_SUPERVISOR,
		.kind = "log-malformed",
		.target = what,
		.rule = "built in: the guest's records (os-sandbox=qemu)",
		.by = "supervisor",
		.pid = r->qemu,
	};

	if (!r->log_on)
		return;
	if (r->log_len || r->log_skip)
		r->log_bad++;
	if (!r->log_bad)
		return;
	snprintf(what, sizeof(what),
		 "%llu line%s from the guest's log port %s not a record and "
		 "%s dropped",
		 r->log_bad, r->log_bad == 1 ? "" : "s",
		 r->log_bad == 1 ? "was" : "were",
		 r->log_bad == 1 ? "was" : "were");
	sb_suplog_record(&d);
}

/* What one port brought: the program's stdout and stderr to ours, the
 * console to its buffer, the log port's lines to the log, the control
 * port's lines to ctl_lines(). */
static void deliver(struct sb_arena *a, struct relay *r, int port,
		    const char *buf, size_t n)
{
	size_t room, k;

	if (port == P_OUT) {
		(void)write_all(1, buf, n);
	} else if (port == P_ERR) {
		(void)write_all(2, buf, n);
	} else if (port == P_CON) {
		console_data(r, buf, n);
	} else if (port == P_LOG) {
		log_data(r, buf, n);
	} else {
		room = sizeof(r->ctl) - r->ctl_len;
		k = n < room ? n : room;
		memcpy(r->ctl + r->ctl_len, buf, k);
		r->ctl_len += k;
		ctl_lines(a, r);
	}
}

/* A poll(2) timeout for 'ms' from now: a limit-time of years would wrap
 * an int (an endless or a spinning wait); the loop wakes and looks again. */
static int poll_ms(long long ms)
{
	return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Partial mode's channel. The caller's socket (r->chan) and the P_RPC
 * port move bytes through a buffer each way, the guest's init doing the
 * same inside; the caller closing its end closes the port, which the
 * init passes on to the worker as its end of file. pf[0]: the port,
 * pf[1]: the caller's socket. */
static void chan_events(const struct relay *r, struct pollfd *port,
			struct pollfd *chan)
{
	port->fd = r->sock[P_RPC];
	port->events = (r->tg_len ? POLLOUT : 0) | (!r->th_len ? POLLIN : 0);
	chan->fd = r->chan;
	/* read once the guest is up: a KVM boot that fails before is
	 * started again, and must find the caller's first request unread */
	chan->events = (r->th_len ? POLLOUT : 0) |
		       (!r->tg_len && r->up ? POLLIN : 0);
	if (!port->events || port->fd < 0)
		port->fd = -1;
	if (!chan->events || chan->fd < 0)
		chan->fd = -1;
}

static void chan_close(struct relay *r, bool port)
{
	int *fd = port ? &r->sock[P_RPC] : &r->chan;

	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void chan_move(struct relay *r, const struct pollfd *port,
		      const struct pollfd *chan)
{
	ssize_t n;

	if (port->fd >= 0 && (port->revents & (POLLIN | POLLHUP | POLLERR)) &&
	    !r->th_len) {
		n = read(r->sock[P_RPC], r->to_host, sizeof(r->to_host));
		if (n > 0)
			r->th_len = (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			chan_close(r, true);
	}
	if (chan->fd >= 0 && (chan->revents & (POLLIN | POLLHUP | POLLERR)) &&
	    !r->tg_len) {
		n = read(r->chan, r->to_guest, sizeof(r->to_guest));
		if (n > 0) {
			r->tg_len = (size_t)n;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			/* the caller is done: the worker's end of file */
			chan_close(r, false);
			chan_close(r, true);
			r->th_len = r->th_off = 0;
		}
	}
	if (r->tg_len && r->sock[P_RPC] >= 0 && (port->revents & POLLOUT) &&
	    !sb_flush_some(r->sock[P_RPC], r->to_guest, &r->tg_off, &r->tg_len))
		chan_close(r, true);
	if (r->th_len && r->chan >= 0 && (chan->revents & POLLOUT) &&
	    !sb_flush_some(r->chan, r->to_host, &r->th_off, &r->th_len))
		chan_close(r, false);
	/* the worker's side is gone and all it said was passed on (before
	 * the guest is up, a failed KVM boot that is started again keeps
	 * the caller's socket) */
	if (r->up && r->sock[P_RPC] < 0 && !r->th_len && r->chan >= 0)
		chan_close(r, false);
}

/* After qemu ended: what the worker said last, to the caller, then the
 * caller's end of file (unless the guest never came up: see chan_move). */
static void chan_drain(struct relay *r)
{
	if (r->chan < 0 || !r->up)
		return;
	fcntl(r->chan, F_SETFL, 0);
	for (;;) {
		ssize_t n;

		while (r->th_len)
			if (!sb_flush_some(r->chan, r->to_host, &r->th_off,
					&r->th_len) ||
			    r->chan < 0)
				goto done;
		if (r->sock[P_RPC] < 0)
			break;
		fcntl(r->sock[P_RPC], F_SETFL, O_NONBLOCK);
		n = read(r->sock[P_RPC], r->to_host, sizeof(r->to_host));
		if (n <= 0)
			break;
		r->th_len = (size_t)n;
	}
done:
	chan_close(r, false);
}

/* The relay's descriptors in the supervisor's loop: the ports, then stdin,
 * then the caller's socket of partial mode's channel. */
enum { F_STDIN = N_PORTS, F_CHAN, N_FDS };
_Static_assert(N_FDS <= SB_SUP_MODE_FDS, "the loop polls fewer descriptors");

static void relay_fds(struct sb_sup *s, void *ctx, struct pollfd *pf)
{
	struct relay *r = ctx;
	int i;

	(void)s;
	for (i = 0; i < N_PORTS; i++) {
		pf[i].fd = r->sock[i];
		pf[i].events = i == P_IN ? 0 : POLLIN;
	}
	chan_events(r, &pf[P_RPC], &pf[F_CHAN]);
	if (r->pend_len > r->pend_off)
		pf[P_IN].events = POLLOUT;
	else
		pf[P_IN].fd = -1; /* nothing to write: not polled */
	if (r->pend_len <= r->pend_off && !r->stdin_open &&
	    r->sock[P_IN] >= 0) {
		shutdown(r->sock[P_IN], SHUT_WR);
		close(r->sock[P_IN]);
		r->sock[P_IN] = -1;
		pf[P_IN].fd = -1;
	}
	pf[F_STDIN].fd =
		r->stdin_open && r->pend_len <= r->pend_off && r->up ? 0 : -1;
	pf[F_STDIN].events = POLLIN;
}

/* SIGKILL qemu now, and again each minute until it is gone. */
static void stop_machine(const struct sb_sup *s, struct relay *r,
			 long long now)
{
	kill(s->pid, SIGKILL);
	r->kill_at = now + 60000;
}

/* Before each poll: end the machine when the guest did not come up in
 * time, failed, or outlived its limit-time; how long the poll may wait. */
static int relay_wait(struct sb_sup *s, void *ctx)
{
	struct relay *r = ctx;
	long long now = now_ms();

	if (r->exited && r->kill_at < 0)
		r->kill_at = now + 10000; /* it powers off now */
	if (r->kill_at < 0 && !r->up && !r->fail && now >= r->deadline) {
		r->timed_out = true;
		r->fail = "timed out";
	}
	if (r->kill_at < 0 && r->fail)
		stop_machine(s, r, now);
	if (r->kill_at < 0 && r->up && r->limit_ms && !r->exited &&
	    now >= r->up_at + r->limit_ms) {
		/* the guest's timer did not end the run */
		r->limit_hit = true;
		stop_machine(s, r, now);
	}
	if (r->kill_at >= 0 && now >= r->kill_at)
		stop_machine(s, r, now);
	if (r->kill_at >= 0)
		return poll_ms(r->kill_at - now);
	if (!r->up)
		return poll_ms(r->deadline - now);
	if (r->limit_ms && !r->exited)
		return poll_ms(r->up_at + r->limit_ms - now);
	return -1;
}

static void relay_ready(struct sb_sup *s, void *ctx, const struct pollfd *pf)
{
	struct relay *r = ctx;
	char buf[65536];
	ssize_t n;
	int i;

	(void)s;
	chan_move(r, &pf[P_RPC], &pf[F_CHAN]);
	for (i = 0; i < N_PORTS; i++) {
		if (pf[i].fd < 0 || i == P_IN || i == P_RPC ||
		    !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(r->sock[i], buf, sizeof(buf));
		if (n <= 0) {
			close(r->sock[i]);
			r->sock[i] = -1;
			continue;
		}
		deliver(r->a, r, i, buf, (size_t)n);
	}
	if (pf[P_IN].fd >= 0 &&
	    (pf[P_IN].revents & (POLLOUT | POLLERR | POLLHUP))) {
		n = write(r->sock[P_IN], r->pending + r->pend_off,
			  r->pend_len - r->pend_off);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			r->pend_len = r->pend_off = 0;
			r->stdin_open = false;
		} else if (n > 0) {
			r->pend_off += (size_t)n;
		}
	}
	if (pf[F_STDIN].fd >= 0 &&
	    (pf[F_STDIN].revents & (POLLIN | POLLHUP | POLLERR))) {
		n = read(0, r->pending, sizeof(r->pending));
		if (n <= 0 && !(n < 0 && errno == EINTR))
			r->stdin_open = false;
		else if (n > 0) {
			r->pend_len = (size_t)n;
			r->pend_off = 0;
		}
	}
}

/* A signal python-sb got goes to the guest's init over the control port
 * (SB_SUP_BY_MODE); before the program started, it just stops. */
static void relay_signal(struct sb_sup *s, void *ctx,
			 const struct signalfd_siginfo *si)
{
	struct relay *r = ctx;
	char line[32];
	int len;

	(void)s;
	if (si->ssi_signo == SIGCHLD)
		return;
	len = snprintf(line, sizeof(line), "sig %u\n", si->ssi_signo);
	if (r->up && r->sock[P_CTL] >= 0)
		(void)write_all(r->sock[P_CTL], line, (size_t)len);
	else if (!r->up)
		r->fail = "interrupted before the program started";
}

/* Relay until qemu ends (the supervisor's loop); returns its wait
 * status. */
static int relay(struct sb_sup *s, struct relay *r)
{
	static const struct sb_sup_ops ops = { .fds = relay_fds,
					       .wait_ms = relay_wait,
					       .ready = relay_ready,
					       .signal = relay_signal };

	r->deadline = now_ms() + (long long)r->timeout * 1000;
	r->kill_at = -1;
	if (sb_sup_loop(s, &ops, r) < 0 && !r->fail)
		r->fail = "the relay's poll failed";
	/* what the guest wrote before it stopped */
	chan_drain(r);
	for (int i = 0; i < N_PORTS; i++) {
		ssize_t n;
		char buf[65536];

		if (r->sock[i] < 0 || i == P_IN || i == P_RPC)
			continue;
		fcntl(r->sock[i], F_SETFL, O_NONBLOCK);
		while ((n = read(r->sock[i], buf, sizeof(buf))) > 0) {
			deliver(r->a, r, i, buf, (size_t)n);
		}
	}
	log_finish(r);
	if (r->timed_out)
		r->fail = sb_arena_printf(
			r->a,
			"the guest did not start within %d s "
			"(qemu.start_timeout)",
			r->timeout);
	return s->wstatus;
}

static int fail_setup(const char *what, const char *detail)
{
	fprintf(stderr, "python-sb: os-sandbox=qemu: %s%s%s; nothing was run.\n",
		what, detail ? ": " : "", detail ? detail : "");
	return SB_EXIT_SETUP;
}

/* One boot of the machine; with 'try_kvm', under KVM when /dev/kvm opens.
 * *kvm_broke: qemu ended under KVM before the guest was up, with nothing
 * run, nothing read from stdin and nothing said (a nested hypervisor
 * that opens /dev/kvm and then refuses the host CPU's model). */
static int boot(struct sb_arena *a, const struct sb_policy *p,
		const struct sb_kernel_ctx *ctx, char *const argv[],
		char *const env[], int policy_fd, bool guarded, bool try_kvm,
		bool *kvm_broke)
{
	struct sb_qemu_opts o;
	struct share shares[MAX_SHARES];
	size_t n_shares = 0, i;
	struct sb_buf rec = { 0 }, img = { 0 }, blob = { 0 }, srec = { 0 };
	struct sb_stage st = { 0 };
	const char *err, *qemu, *kernel, *init, *ver, *why;
	char self[PATH_MAX];
	ssize_t len;
	int stage_fd, stage_gfd, initrd_fd, kernel_fd, pairs[N_PORTS][2], r,
		net_fd = -1;
	struct sb_qemu_net net = { 0 };
	struct sb_limits own_lim;
	const struct sb_limits *lim = ctx->limits;
	int used[10], n_used = 0, log_file = -1, log_relay = -1, log_peer = -1;
	unsigned lim_mask = 0;
	bool kvm, log_on;
	SB_VEC(char *) qa = { 0 };
	struct relay rl = { 0 };
	struct sb_sup sup;
	pid_t parent;
	int status;

	if (sb_qemu_options(a, p, &o, &err) < 0) {
		fprintf(stderr, "python-sb: %s; nothing was run.\n", err);
		return SB_EXIT_SETUP;
	}
	if ((err = sb_qemu_refusal(a, p))) {
		fprintf(stderr, "python-sb: %s; nothing was run.\n", err);
		return SB_EXIT_SETUP;
	}
	qemu = find_qemu(a);
	if (!qemu) {
		fprintf(stderr,
			"python-sb: os-sandbox=qemu: %s is not installed%s; "
			"nothing was run.\nHint: sudo apt-get install "
			"qemu-system-x86\n",
			getenv("PYSB_QEMU") ? getenv("PYSB_QEMU") : QEMU_NAME,
			getenv("PYSB_QEMU") ? " ($PYSB_QEMU)" : "");
		return SB_EXIT_SETUP;
	}
	kernel = sb_qemu_kernel(a);
	if (!kernel) {
		fprintf(stderr,
			"python-sb: os-sandbox=qemu: no guest kernel: %s; "
			"nothing was run.\nHint: sudo apt-get install -t "
			"bookworm-backports linux-image-amd64 (a kernel with "
			"Landlock ABI 4 or later and 9p modules)\n",
			getenv("PYSB_QEMU_KERNEL")
				? sb_arena_printf(a,
						  "$PYSB_QEMU_KERNEL=%s is not "
						  "a readable vmlinuz-VERSION "
						  "with 9p modules in "
						  "/lib/modules/VERSION",
						  getenv("PYSB_QEMU_KERNEL"))
				: "no /boot/vmlinuz-* with the 9p modules in "
				  "/lib/modules");
		return SB_EXIT_SETUP;
	}
	ver = kernel_version(kernel);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return fail_setup("cannot find python-sb's own binary",
				  len < 0 ? strerror(errno) : "empty link");
	self[len] = '\0';
	init = find_init(a, self, ctx->guard);
	if (!init)
		return fail_setup("the guest init " INIT_NAME " is missing",
				  "the installation is incomplete");
	if ((why = sb_support_untrusted(a, init))) {
		fputs(why, stderr);
		return SB_EXIT_SETUP;
	}
	if (policy_fd < 0)
		return fail_setup("no policy descriptor", NULL);
	/* the guest gives the program its own 0, 1 and 2 */
	if (policy_fd < 3)
		return fail_setup("stdin, stdout or stderr is closed, and the "
				  "policy took its descriptor number",
				  "give the run one (</dev/null)");

	/* the denial log the launcher opened (run.c) and the numbers of its
	 * relay, which the blob gave the guard: the guest makes its own */
	sb_suplog_fds(&log_file, &log_relay, &log_peer);
	log_on = log_file >= 0 && log_relay >= 0 && log_peer >= 0;
	/* a log the rules ask for and the launcher could not hand on: the
	 * run would go without it */
	if (p->log_path && !p->learning && !log_on)
		return fail_setup("the denial log cannot be carried into the "
				  "guest",
				  NULL);
	if (!lim) {
		sb_limits_plan(a, p, SB_PROVIDER_QEMU, geteuid(), &own_lim);
		lim = &own_lim;
	}
	for (i = 0; i < SB_LIMIT_COUNT; i++)
		if (lim->mech[i] == SB_MECH_GUEST)
			lim_mask |= 1u << i;

	/* the run record, the stage record, the policy */
	cpio_entry(&img, "modules", S_IFDIR | 0700, NULL, 0);
	cpio_entry(&img, "pysb", S_IFDIR | 0700, NULL, 0);
	cpio_entry(&img, "files", S_IFDIR | 0700, NULL, 0);
	err = plan_record(a, p, ctx, self, &rec, &img, shares, &n_shares,
			  p->any_net_rule ? MAX_SHARES - 1 : MAX_SHARES);
	if (err)
		return fail_setup(err, NULL);
	/* the numbers the guest's stage gets: the policy's, the channel's
	 * and the guard's end of the log's relay are the blob's (the host's
	 * own); the others are free ones after the policy's */
	used[n_used++] = policy_fd;
	if (ctx->channel_fd > 0)
		used[n_used++] = ctx->channel_fd;
	if (log_on) {
		used[n_used++] = log_relay;
		used[n_used++] = log_peer;
	}
	stage_gfd = guest_fd(used, &n_used, policy_fd + 1);
	put0(&rec, "policy-fd");
	put0(&rec, sb_arena_printf(a, "%d", policy_fd));
	put0(&rec, "stage-fd");
	put0(&rec, sb_arena_printf(a, "%d", stage_gfd));
	if (ctx->channel_fd > 0) {
		/* the same number in the guest; python-sb's own copy is not
		 * qemu's (its end of file would wait for the machine) */
		if (ctx->channel_fd == policy_fd ||
		    fcntl(ctx->channel_fd, F_SETFD, FD_CLOEXEC) < 0)
			return fail_setup("partial mode's channel descriptor",
					  strerror(EBADF));
		put0(&rec, "channel");
		put0(&rec, sb_arena_printf(a, "%d", ctx->channel_fd));
	}
	if (p->any_net_rule) {
		put0(&rec, "net");
		put0(&rec, SB_QEMU_NET_ADDR);
		put0(&rec, SB_QEMU_NET_PREFIX);
		put0(&rec, SB_QEMU_NET_GW);
	}
	sb_stage_init(&st, ctx, policy_fd, guarded, env);
	if (log_on) {
		/* the guest's supervisor sends its records on the log port,
		 * this launcher writes them to the file the host's rules
		 * name (relay() and log_data) */
		st.log_fd = guest_fd(used, &n_used, stage_gfd + 1);
		st.relay_fd = log_relay;
		st.log_wire = true;
		put0(&rec, "log");
		put0(&rec, sb_arena_printf(a, "%d", st.log_fd));
		put0(&rec, sb_arena_printf(a, "%d", log_relay));
		put0(&rec, sb_arena_printf(a, "%d", log_peer));
	}
	if (lim_mask) {
		/* the program's cgroup v2 in the guest, made by its init:
		 * the stage joins the program to it and watches it */
		st.cgroup_mask = lim_mask;
		st.cgroup_version = 2;
		st.cgroup_fd[0] = guest_fd(used, &n_used, stage_gfd + 1);
		st.cgroup_dir_fd = guest_fd(used, &n_used, stage_gfd + 1);
		put0(&rec, "limits");
		put0(&rec, sb_arena_printf(
				   a, "%llu",
				   (unsigned long long)
					   p->limits[SB_LIMIT_MEMORY].value));
		put0(&rec, sb_arena_printf(
				   a, "%llu",
				   (unsigned long long)
					   p->limits[SB_LIMIT_PROCESSES].value));
		put0(&rec, lim_mask & (1u << SB_LIMIT_CPU) ? "1" : "0");
		put0(&rec, sb_arena_printf(a, "%d", st.cgroup_fd[0]));
		put0(&rec, sb_arena_printf(a, "%d", st.cgroup_dir_fd));
	}
	put0(&rec, "arg");
	put0(&rec, self);
	put0(&rec, "arg");
	put0(&rec, sb_arena_printf(a, SB_STAGE_FLAG "%d", stage_gfd));
	put0(&rec, "arg");
	put0(&rec, "--");
	for (i = 0; argv[i]; i++) {
		put0(&rec, "arg");
		put0(&rec, argv[i]);
	}
	put0(&rec, "end");
	stage_fd = sb_stage_write(&st);
	if (stage_fd < 0)
		return fail_setup("memfd for the stage record",
				  strerror(-stage_fd));
	r = sb_fd_read_all(stage_fd, &srec);
	close(stage_fd);
	if (r >= 0 && lseek(policy_fd, 0, SEEK_SET) == 0)
		r = sb_fd_read_all(policy_fd, &blob);
	else if (r >= 0)
		r = -errno;
	lseek(policy_fd, 0, SEEK_SET);
	if (r < 0)
		return fail_setup("reading the records", strerror(-r));

	/* the rest of the initramfs */
	r = cpio_file(&img, "init", 0700, init);
	for (i = 0; r >= 0 && i < SB_ARRAY_LEN(modules); i++) {
		const char *f = module_file(a, ver, modules[i][1]);

		if (!p->any_net_rule && i >= SB_ARRAY_LEN(modules) - NET_MODULES)
			break;
		if (f)
			r = cpio_module(a, &img, modules[i][0], f);
	}
	if (r < 0)
		return fail_setup("building the initramfs", strerror(-r));
	cpio_entry(&img, "pysb/run", S_IFREG | 0600, rec.s, rec.len);
	cpio_entry(&img, "pysb/stage", S_IFREG | 0600, srec.s, srec.len);
	cpio_entry(&img, "pysb/policy", S_IFREG | 0600, blob.s ? blob.s : "",
		   blob.len);
	cpio_entry(&img, "TRAILER!!!", 0, NULL, 0);
	initrd_fd = sb_memfd_text("pysb-initrd", img.s, img.len);
	sb_buf_free(&img);
	sb_buf_free(&rec);
	sb_buf_free(&srec);
	sb_buf_free(&blob);
	if (initrd_fd < 0)
		return fail_setup("memfd for the initramfs",
				  strerror(-initrd_fd));

	/* the channels */
	for (i = 0; i < N_PORTS; i++)
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
			       pairs[i]) < 0)
			return fail_setup("socketpair", strerror(errno));
	kvm = try_kvm && o.use_kvm && kvm_usable();
	if (!o.start_timeout)
		o.start_timeout = kvm ? 90 : 180;
	kernel = boot_kernel(a, kernel, &kernel_fd);
	if (p->any_net_rule) {
		/* before the signals are blocked: passt keeps its own */
		r = sb_qemu_net_start(a, p, &net);
		if (r != 0) {
			close(initrd_fd);
			if (kernel_fd >= 0)
				close(kernel_fd);
			return r;
		}
		net_fd = net.qemu_fd;
	}

#define ARG(...) (*SB_VEC_PUSH(a, qa) = sb_arena_printf(a, __VA_ARGS__))
	ARG("%s", qemu);
	ARG("-nodefaults");
	ARG("-no-user-config");
	ARG("-display");
	ARG("none");
	ARG("-monitor");
	ARG("none");
	ARG("-no-reboot");
	/* qemu's own seccomp filter: no exec, no set*id, no obsolete calls,
	 * no scheduler or resource changes, should the guest take qemu */
	ARG("-sandbox");
	ARG("on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	    "resourcecontrol=deny");
	ARG("-machine");
	/* no PCI, no firmware tables to walk: virtio-mmio devices */
	ARG("microvm,accel=%s", kvm ? "kvm" : "tcg");
	ARG("-cpu");
	ARG("%s", kvm ? "host" : "max");
	ARG("-smp");
	ARG("1");
	ARG("-m");
	ARG("%lluM", o.memory_mib);
	ARG("-kernel");
	ARG("%s", qarg(a, kernel));
	ARG("-initrd");
	ARG("/proc/self/fd/%d", initrd_fd);
	ARG("-append");
	/* a virtual machine's usual settings, and the boot's slow checks
	 * left out: the TSC's stability watchdog and the IO-APIC timer
	 * check (both made for real hardware), the crypto self-tests */
	ARG("console=ttyS0 panic=-1 rdinit=/init tsc=reliable no_timer_check "
	    "cryptomgr.notests %s%s",
	    kvm ? "" : tsc_khz(a),
	    o.show_boot_console ? "loglevel=7 pysb_diag=1" : "quiet loglevel=1");
	ARG("-chardev");
	ARG("socket,id=con,fd=%d", pairs[P_CON][1]);
	ARG("-serial");
	ARG("chardev:con");
	ARG("-device");
	ARG("virtio-serial-device,id=vs");
	{
		static const char *const names[] = { "pysb.ctl", "pysb.in",
						     "pysb.out", "pysb.err" };

		for (i = 0; i < 4; i++) {
			ARG("-chardev");
			ARG("socket,id=p%zu,fd=%d", i, pairs[i][1]);
			ARG("-device");
			ARG("virtserialport,bus=vs.0,chardev=p%zu,name=%s", i,
			    names[i]);
		}
	}
	if (log_on) {
		ARG("-chardev");
		ARG("socket,id=log,fd=%d", pairs[P_LOG][1]);
		ARG("-device");
		ARG("virtserialport,bus=vs.0,chardev=log,name=pysb.log");
	}
	if (ctx->channel_fd > 0) {
		ARG("-chardev");
		ARG("socket,id=rpc,fd=%d", pairs[P_RPC][1]);
		ARG("-device");
		ARG("virtserialport,bus=vs.0,chardev=rpc,name=pysb.rpc");
	}
	if (net_fd >= 0) {
		ARG("-netdev");
		ARG("stream,id=net0,server=off,addr.type=fd,addr.str=%d",
		    net_fd);
		ARG("-device");
		ARG("virtio-net-device,netdev=net0");
	}
	for (i = 0; i < n_shares; i++) {
		ARG("-fsdev");
		ARG("local,id=f%zu,path=%s,security_model=none%s", i,
		    qarg(a, shares[i].dir), shares[i].rw ? "" : ",readonly=on");
		ARG("-device");
		ARG("virtio-9p-device,fsdev=f%zu,mount_tag=s%zu", i, i);
	}
	*SB_VEC_PUSH(a, qa) = NULL;
#undef ARG
	if (getenv("PYSB_DEBUG")) {
		fprintf(stderr, "python-sb:");
		for (i = 0; qa.v[i]; i++)
			fprintf(stderr, " %s", qa.v[i]);
		fprintf(stderr, "\n");
	}

	rl.show_console = o.show_boot_console;
	rl.con_log = -1;
	if (o.show_boot_console) {
		rl.con_log = open(CONSOLE_LOG,
				  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
					  O_CLOEXEC,
				  0600);
		if (rl.con_log < 0)
			fprintf(stderr,
				"python-sb: warning: os-sandbox=qemu: %s: %s; "
				"the console is shown, not kept.\n",
				CONSOLE_LOG, strerror(errno));
	}
	if (sb_sup_init(&sup, SB_SUP_BY_MODE) < 0) {
		sb_qemu_net_stop(&net);
		return fail_setup("signals", strerror(errno));
	}
	rl.t0 = now_ms();
	parent = getpid();
	rl.qemu = sb_sup_fork(&sup);
	if (rl.qemu < 0) {
		sb_sup_end(&sup);
		sb_qemu_net_stop(&net);
		return fail_setup("fork", strerror(errno));
	}
	if (rl.qemu == 0) {
		char *const no_env[] = { NULL };
		int dn = open("/dev/null", O_RDWR);

		setpgid(0, 0); /* not the terminal's Ctrl-C */
		/* the machine never outlives python-sb */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
		    getppid() != parent)
			_exit(SB_EXIT_SETUP);
		sb_sup_child(&sup);
		if (dn < 0 || dup2(dn, 0) < 0 || dup2(dn, 1) < 0)
			_exit(SB_EXIT_SETUP);
		fcntl(initrd_fd, F_SETFD, 0);
		if (kernel_fd >= 0)
			fcntl(kernel_fd, F_SETFD, 0);
		for (i = 0; i < N_PORTS; i++)
			fcntl(pairs[i][1], F_SETFD, 0);
		if (net_fd >= 0)
			fcntl(net_fd, F_SETFD, 0);
		execve(qemu, qa.v, no_env);
		fprintf(stderr, "python-sb: exec %s: %s\n", qemu,
			strerror(errno));
		_exit(SB_EXIT_SETUP);
	}
	close(initrd_fd);
	if (kernel_fd >= 0)
		close(kernel_fd);
	for (i = 0; i < N_PORTS; i++) {
		close(pairs[i][1]);
		rl.sock[i] = pairs[i][0];
	}
	fcntl(rl.sock[P_IN], F_SETFL, O_NONBLOCK);
	rl.chan = -1;
	if (ctx->channel_fd > 0) {
		rl.chan = ctx->channel_fd;
		fcntl(rl.chan, F_SETFL, O_NONBLOCK);
		fcntl(rl.sock[P_RPC], F_SETFL, O_NONBLOCK);
	} else {
		close(rl.sock[P_RPC]);
		rl.sock[P_RPC] = -1;
	}
	rl.log_on = log_on;
	if (!log_on) {
		close(rl.sock[P_LOG]);
		rl.sock[P_LOG] = -1;
	}
	if (p->limits[SB_LIMIT_TIME].value)
		rl.limit_ms = ((long long)p->limits[SB_LIMIT_TIME].value +
			       LIMIT_TIME_GRACE) *
			      1000;
	if (net_fd >= 0) {
		/* qemu's now: passt sees the end of file when qemu ends */
		close(net_fd);
		net.qemu_fd = -1;
	}
	rl.timeout = o.start_timeout;
	rl.stdin_open = fcntl(0, F_GETFD) >= 0;
	rl.a = a;
	signal(SIGPIPE, SIG_IGN);
	status = relay(&sup, &rl);
	sb_sup_stop(&sup, false);
	sb_sup_end(&sup);
	sb_qemu_net_stop(&net);
	if (rl.con_log >= 0)
		close(rl.con_log);
	for (i = 0; i < N_PORTS; i++)
		if (rl.sock[i] >= 0)
			close(rl.sock[i]);
	if (rl.exited && !rl.fail)
		return rl.exit_code;
	if (rl.limit_hit) {
		fprintf(stderr,
			"python-sb: os-sandbox=qemu: the guest did not end the "
			"run %d s past its limit-time; the machine was "
			"stopped.\n",
			LIMIT_TIME_GRACE);
		return sb_limits_reached(lim, SB_LIMIT_TIME);
	}
	if (kvm && !rl.up && !rl.fail) {
		*kvm_broke = true;
		return SB_EXIT_SETUP;
	}
	if (!rl.fail)
		rl.fail = sb_arena_printf(
			a, "the virtual machine ended before the program did "
			   "(qemu %s %d)",
			WIFEXITED(status) ? "exit status" : "killed by signal",
			WIFEXITED(status) ? WEXITSTATUS(status)
					  : WTERMSIG(status));
	if (!rl.show_console && rl.con_len && !rl.up) {
		fprintf(stderr, "python-sb: os-sandbox=qemu: the guest's "
				"console ended with:\n");
		(void)write_all(2, rl.con_tail, rl.con_len);
		if (rl.con_tail[rl.con_len - 1] != '\n')
			fputc('\n', stderr);
	}
	fprintf(stderr, "python-sb: os-sandbox=qemu: %s; %s.\n", rl.fail,
		rl.up ? "the run was ended" : "nothing was run");
	return SB_EXIT_SETUP;
}

int sb_qemu_run(struct sb_arena *a, const struct sb_policy *p,
		const struct sb_kernel_ctx *ctx, char *const argv[],
		char *const env[], int policy_fd, bool guarded)
{
	bool kvm_broke = false;
	int log, relay, peer, rc;

	/* the relay's ends are the guest's to make (init.c): qemu inherits
	 * neither */
	sb_suplog_fds(&log, &relay, &peer);
	if (peer >= 0)
		fcntl(peer, F_SETFD, FD_CLOEXEC);
	rc = boot(a, p, ctx, argv, env, policy_fd, guarded, true, &kvm_broke);

	if (!kvm_broke)
		return rc;
	fprintf(stderr, "python-sb: warning: os-sandbox=qemu: qemu ended "
			"under KVM before the guest started; starting again "
			"under TCG emulation (slower; qemu.use_kvm=false skips "
			"KVM).\n");
	return boot(a, p, ctx, argv, env, policy_fd, guarded, false,
		    &kvm_broke);
}
