/* fuzz_policy.c - libFuzzer target for the rule-file parser.
 *
 * Each input is one .py-sandboxes file, optionally preceded by one command
 * line rule: the bytes before the first 0xff become that rule (a byte no
 * valid UTF-8 text contains, so corpus files stay readable), the rest is the
 * file. The file is rewritten in place for every input under a private
 * directory made once per process, so that bare-name includes resolve next
 * to it into an empty, known place. Host names never resolve (the fake
 * resolver fails every name, definitely or transiently), so no input can
 * reach the network. This file must not print: a crash, a sanitizer report
 * or a leak is the only verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[] = "/tmp/sb-fuzz-policy.XXXXXX";
static char fuzz_file[sizeof(fuzz_dir) + sizeof("/.py-sandboxes")];
static int fuzz_fd = -1;

static const char *const fuzz_envp[] = { "HOME=/root", "A=1", NULL };

static void fuzz_cleanup(void)
{
	if (fuzz_fd >= 0) {
		close(fuzz_fd);
		unlink(fuzz_file);
		rmdir(fuzz_dir);
	}
}

/* Fails every name; an odd-length name fails "temporarily" so that both
 * messages of the unresolvable-host path are reached. */
static enum sb_resolve_status fuzz_resolve(void *ctx, struct sb_arena *arena,
					   const char *host,
					   struct sb_addr **addrs,
					   size_t *n_addrs, const char **why)
{
	*addrs = NULL;
	*n_addrs = 0;
	if (strlen(host) % 2) {
		*why = "Temporary failure in name resolution";
		return SB_RESOLVE_TRANSIENT;
	}
	return SB_RESOLVE_NONAME;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (!mkdtemp(fuzz_dir)) {
		perror("fuzz_policy: mkdtemp");
		abort();
	}
	snprintf(fuzz_file, sizeof(fuzz_file), "%s/.py-sandboxes", fuzz_dir);
	fuzz_fd = open(fuzz_file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fuzz_fd < 0) {
		perror("fuzz_policy: open");
		abort();
	}
	atexit(fuzz_cleanup);
	return 0;
}

static void write_rule_file(const uint8_t *data, size_t size)
{
	size_t off = 0;

	if (ftruncate(fuzz_fd, 0) < 0)
		abort();
	while (off < size) {
		ssize_t n = pwrite(fuzz_fd, data + off, size - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			abort();
		off += (size_t)n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, 0xff, size);
	const char *cli[1];
	char *cli_rule = NULL;
	struct sb_parse_opts opts = {
		.config_path = fuzz_file,
		.envp = fuzz_envp,
		.cwd = "/tmp",
		.resolve = fuzz_resolve,
		.flags = 0,
	};
	struct sb_policy *p = NULL;

	if (sep) {
		size_t n = (size_t)(sep - data);

		cli_rule = malloc(n + 1);
		if (!cli_rule)
			abort();
		memcpy(cli_rule, data, n);
		cli_rule[n] = '\0';
		cli[0] = cli_rule;
		opts.cli_rules = cli;
		opts.n_cli_rules = 1;
		size -= n + 1;
		data = sep + 1;
	}
	write_rule_file(data, size);

	if (sb_policy_parse(&opts, &p) == 0 && p) {
		/* The error formatter is what the user sees: fuzz it too. */
		if (p->errors.n) {
			struct sb_buf out = { 0 };

			sb_policy_format_errors(p, &out);
			sb_buf_free(&out);
		}
		sb_policy_free(p);
	}
	free(cli_rule);
	return 0;
}
