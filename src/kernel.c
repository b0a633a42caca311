/* kernel.c - placeholder: the kernel layer is not built yet. */
#include "kernel.h"

void sb_kernel_probe(struct sb_kernel_caps *caps)
{
	caps->landlock_abi = 0;
	caps->seccomp = false;
}

const char *sb_kernel_describe(struct sb_arena *a, const struct sb_policy *p,
			       enum sb_provider provider,
			       const struct sb_kernel_caps *caps)
{
	return "not available in this build yet: the run fails closed (exit "
	       "255) rather than run with less isolation.";
}

int sb_kernel_apply(struct sb_arena *a, const struct sb_policy *p,
		    const struct sb_kernel_ctx *ctx, const char **err,
		    const char **hint)
{
	*err = "the kernel layer is not built yet";
	*hint = NULL;
	return -1;
}
