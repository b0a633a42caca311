/* qemu.h - os-sandbox=qemu (qemu.c): the program runs in a virtual machine
 * with its own kernel, a Debian kernel package's, booted directly with an
 * initramfs python-sb builds for the run (src/guest/init.c as pid 1). The
 * guest sees the exposed paths over virtio-9p and runs python-sb's second
 * stage (stage.h), which applies the kernel layer os-sandbox=landlock
 * applies. Launcher-setup code: it prints its errors and returns
 * python-sb's exit status.
 */
#ifndef SB_QEMU_H
#define SB_QEMU_H

#include "kernel.h"
#include "policy.h"

struct sb_qemu_opts {
	unsigned long long memory_mib; /* qemu.memory, default 2048 (or
					* limit-memory and 256 MiB when that
					* is more) */
	bool use_kvm;                  /* qemu.use_kvm, default true */
	bool show_boot_console;        /* qemu.show_boot_console */
	int start_timeout;             /* qemu.start_timeout; 0: default */
};

/* The qemu.* keys (pure): 0, or -1 with *err naming the rule of an
 * unknown key or a bad value. */
int sb_qemu_options(struct sb_arena *a, const struct sb_policy *p,
		    struct sb_qemu_opts *o, const char **err);

/* Why this policy cannot run under qemu (a bad qemu.* key, a limit-memory
 * that qemu.memory cannot hold beside the guest's own needs), or NULL
 * (pure). */
const char *sb_qemu_refusal(struct sb_arena *a, const struct sb_policy *p);

/* The guest kernel python-sb would boot ($PYSB_QEMU_KERNEL, else the
 * newest /boot/vmlinuz-* whose modules hold 9p), or NULL. */
const char *sb_qemu_kernel(struct sb_arena *a);

/* What os-sandbox=qemu would hold for this policy here, or why it cannot
 * run, for --pysandboxes-explain. */
const char *sb_qemu_describe(struct sb_arena *a, const struct sb_policy *p);

/* Run argv (argv[0] the interpreter) in the guest. 'env' is the
 * program's environment, 'policy_fd' the policy blob, which the guard
 * reads too when 'guarded'. Returns the program's exit status (128+N
 * after signal N), or 255 after a message when the machine could not be
 * started, did not start within qemu.start_timeout, or died. */
int sb_qemu_run(struct sb_arena *a, const struct sb_policy *p,
		const struct sb_kernel_ctx *ctx, char *const argv[],
		char *const env[], int policy_fd, bool guarded);

#endif
