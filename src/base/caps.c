/* caps.c - emptying the calling process's capability sets (caps.h). */
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SB_SECUREBITS                                                          \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |       \
	 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |             \
	 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

bool sb_caps_held(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
						0 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	/* an ambient capability is permitted and inheritable too */
	if (syscall(SYS_capget, &hdr, data) < 0)
		return true;
	return data[0].effective || data[0].permitted || data[0].inheritable ||
	       data[1].effective || data[1].permitted || data[1].inheritable;
}

int sb_caps_drop(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
						0 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	bool kept = false;
	int cap;

	/* root stays without capabilities across exec and setuid (uid 0
	 * gains nothing, ambient ones cannot be raised), locked: this needs
	 * CAP_SETPCAP, so it comes first; without it (not root, no user
	 * namespace) there is nothing to keep */
	if (prctl(PR_SET_SECUREBITS, SB_SECUREBITS, 0, 0, 0) < 0) {
		if (errno != EPERM)
			return -errno;
		kept = true;
	}
	/* the bounding set first: dropping it needs CAP_SETPCAP, which the
	 * last step takes away. Without CAP_SETPCAP (a tool dropped it) the
	 * set and the securebits stay, and an exec by root would get every
	 * capability of the set back: no_new_privs, set below in that case
	 * (the kernel layer sets it anyway), keeps an exec from gaining any.
	 * A cap this kernel does not know ends the loop. */
	for (cap = 0; cap <= 63; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			break;
		if (in && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno != EPERM)
				return -errno;
			kept = true;
		}
	}
	if (kept && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &hdr, data) < 0 ||
	    syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (data[0].effective || data[0].permitted || data[0].inheritable ||
	    data[1].effective || data[1].permitted || data[1].inheritable)
		return -EPERM;
	return 0;
}
