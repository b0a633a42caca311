/* explain.c - format --pysandboxes-explain. Pure: it reads the parsed policy
 * and what the launcher decided, and writes text. Every line that is not a
 * rule is a comment, so the output can be saved and used as a rule file.
 * Values of environment variables are never printed: env= rules are shown
 * as written (${NAME}), and the resulting variables by name only.
 */
#include "explain.h"

#include <stdlib.h>
#include <unistd.h>

#include "fsrules.h"
#include "netns.h"
#include "policy_net.h"

#define ORIGIN_COLUMN 48

static const char *file_state(enum sb_file_state s)
{
	switch (s) {
	case SB_FILE_LOADED:
		return "loaded";
	case SB_FILE_ABSENT:
		return "absent, ignored";
	case SB_FILE_ERROR:
		return "unreadable";
	}
	return "?";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void explain_rules(const struct sb_policy *p, struct sb_buf *out)
{
	size_t i;

	sb_buf_puts(out, "# Effective rules (after include, ${} expansion, "
			 "command-line and implicit rules):\n");
	for (i = 0; i < p->rules.n; i++) {
		const struct sb_rule *r = &p->rules.v[i];
		const char *text = sb_sanitize(p->arena, r->text);
		size_t len = strlen(text);

		sb_buf_puts(out, text);
		do
			sb_buf_puts(out, " ");
		while (++len < ORIGIN_COLUMN);
		sb_buf_printf(out, "# %s%s\n",
			      sb_sanitize(p->arena,
					  sb_ref_format(p->arena, r->ref)),
			      sb_str_starts(r->text, "expose-list=")
				      ? ": the names in it, none of its files"
				      : "");
	}
	if (!p->rules.n)
		sb_buf_puts(out, "# (none)\n");
}

static void explain_files(const struct sb_policy *p, struct sb_buf *out)
{
	size_t i;

	sb_buf_puts(out, "#\n# Rule files:\n");
	for (i = 0; i < p->files.n; i++) {
		const struct sb_file *f = &p->files.v[i];

		sb_buf_printf(out, "#   %s: %s",
			      sb_sanitize(p->arena, f->display),
			      file_state(f->state));
		if (f->included_from.file)
			sb_buf_printf(out, " (included from %s)",
				      sb_sanitize(p->arena,
						  sb_ref_format(p->arena,
								f->included_from)));
		sb_buf_puts(out, "\n");
	}
}

static void explain_env(const struct sb_policy *p, struct sb_buf *out)
{
	const char **names;
	size_t i;

	sb_buf_puts(out, "#\n# Environment of the program (names only; "
			 "values are not shown):\n#  ");
	if (!p->env.n)
		sb_buf_puts(out, " (empty)");
	names = calloc(p->env.n + 1, sizeof(*names));
	for (i = 0; names && i < p->env.n; i++)
		names[i] = p->env.v[i].name;
	if (names) {
		qsort(names, p->env.n, sizeof(*names), cmp_str);
		for (i = 0; i < p->env.n; i++)
			sb_buf_printf(out, " %s",
				      sb_sanitize(p->arena, names[i]));
	}
	free(names);
	sb_buf_puts(out, "\n");
	if (p->learning)
		sb_buf_puts(out, "#   While learning, the program gets the whole "
				 "environment, so that every read can be "
				 "recorded.\n");
}

static void explain_net(const struct sb_policy *p, struct sb_buf *out)
{
	size_t i, j;

	if (!p->pins.n)
		return;
	sb_buf_puts(out, "#\n# Host names resolved once and pinned (lookups "
			 "inside the sandbox get only these):\n");
	for (i = 0; i < p->pins.n; i++) {
		const struct sb_pin *pin = &p->pins.v[i];

		sb_buf_printf(out, "#   %s ->", sb_sanitize(p->arena, pin->host));
		for (j = 0; j < pin->n_addrs; j++)
			sb_buf_printf(out, " %s",
				      sb_addr_format(p->arena, &pin->addrs[j]));
		sb_buf_puts(out, "\n");
	}
}

/* Which rule decides for the interpreter's standard library: the guard's
 * implicit read-only exposure, longer than a rule on a parent such as
 * expose-rw=/, unless a rule names that directory (or a deeper path). */
static void explain_stdlib(const struct sb_policy *p, const char *dir,
			   struct sb_buf *out)
{
	const struct sb_expose *e = sb_fs_find_expose(p, dir);

	if (e && strlen(e->path) >= strlen(dir))
		sb_buf_printf(out,
			      "#   Standard library %s: %s, rule '%s' from %s "
			      "(it names the tree, so it beats the implicit "
			      "read-only exposure of the interpreter's tree).\n",
			      dir,
			      e->mode == SB_EXPOSE_RW ? "read-write"
						      : "read-only",
			      e->rule, sb_ref_format(p->arena, e->ref));
	else
		sb_buf_printf(out,
			      "#   Standard library %s: read-only, the implicit "
			      "exposure of the interpreter's tree (<python>)%s; "
			      "a rule naming %s itself would decide.\n",
			      dir,
			      e ? ", longer than the rule on its parent" : "",
			      dir);
}

/* What the namespace providers do with the network (netns.h). */
static void explain_provider_net(const struct sb_policy *p,
				 struct sb_buf *out)
{
	bool bwrap = p->provider == SB_PROVIDER_BWRAP;

	if (p->provider != SB_PROVIDER_UNSHARE && !bwrap &&
	    p->provider != SB_PROVIDER_FIREJAIL)
		return;
	if (bwrap && sb_netns_bwrap_shared(p)) {
		sb_buf_puts(out, "#   Network: the host's (bwrap.share-net), "
				 "held only by the supervisor inside, the "
				 "host's loopback services included.\n");
		return;
	}
	if (!p->any_net_rule) {
		sb_buf_puts(out, "#   Network: a namespace of its own with "
				 "loopback only (no net= rule).\n");
		return;
	}
	if (p->provider == SB_PROVIDER_FIREJAIL &&
	    !sb_netns_firejail_own(p, geteuid() == 0)) {
		sb_buf_puts(out,
			    "#   Network: the host's (not run as root, or "
			    "firejail.net= given: firejail is setuid, so "
			    "python-sb cannot give it a network namespace "
			    "of its own), held only by the supervisor inside, "
			    "the host's loopback services included "
			    "(weaknesses.md 95); use unshare or bwrap for a "
			    "network of its own.\n");
		return;
	}
	sb_buf_puts(out, sb_netns_explain(p->arena, p,
					  sb_provider_name(p->provider)));
}

static void explain_modes(const struct sb_policy *p,
			  const struct sb_explain_ctx *ctx, struct sb_buf *out)
{
	size_t i;

	sb_buf_puts(out, "#\n# Provider: ");
	sb_buf_puts(out, sb_provider_name(p->provider));
	if (p->provider_forced)
		sb_buf_puts(out, ", forced while learning (the OS layer is "
				 "never exercised during a learning run)");
	else if (p->provider_ref.file)
		sb_buf_printf(out, ", from %s",
			      sb_ref_format(p->arena, p->provider_ref));
	else
		sb_buf_puts(out, " (the default: no os-sandbox= rule)");
	sb_buf_puts(out, "\n");
	if (ctx && ctx->provider_verdict)
		sb_buf_printf(out, "#   %s\n", ctx->provider_verdict);
	if (ctx && ctx->kept)
		sb_buf_printf(out, "#   %s\n", sb_sanitize(p->arena, ctx->kept));
	explain_provider_net(p, out);
	/* none installs no guard, whatever py-sandbox= says */
	sb_buf_printf(out, "# Python layer: %s",
		      p->provider == SB_PROVIDER_NONE
			      ? "off (os-sandbox=none: no guard)"
		      : p->py_sandbox ? "on"
				      : "off (py-sandbox=false)");
	if (p->provider != SB_PROVIDER_NONE && p->py_sandbox_ref.file)
		sb_buf_printf(out, ", from %s",
			      sb_ref_format(p->arena, p->py_sandbox_ref));
	sb_buf_puts(out, "\n");
	if (ctx && ctx->interpreter)
		sb_buf_printf(out, "# Interpreter: %s\n", ctx->interpreter);
	if (ctx && ctx->stdlib)
		explain_stdlib(p, ctx->stdlib, out);
	if (ctx && ctx->n_limits) {
		sb_buf_puts(out, "# Limits:\n");
		for (i = 0; i < ctx->n_limits; i++)
			sb_buf_printf(out, "#   %s\n",
				      sb_sanitize(p->arena, ctx->limits[i]));
	}
	sb_buf_printf(out, "# Mode: %s\n", p->learning_why);
	if (p->learning)
		sb_buf_printf(out, "#   Learned rules will be written to '%s'.\n",
			      p->learn_path);
	if (p->log_path)
		sb_buf_printf(out, "# Denial log: %s, from %s%s\n", p->log_path,
			      sb_ref_format(p->arena, p->log_ref),
			      p->learning ? " (a learning run refuses nothing)"
			      : p->provider == SB_PROVIDER_LANDLOCK
				      ? "; written by the supervisor, the "
					"guard's refusals relayed"
			      : p->provider == SB_PROVIDER_UNSHARE ||
					p->provider == SB_PROVIDER_BWRAP ||
					p->provider == SB_PROVIDER_FIREJAIL
				      ? "; written by the supervisor inside "
					"the namespaces (pids as the "
					"sandbox numbers them), the guard's "
					"refusals relayed"
			      : p->provider == SB_PROVIDER_SUBPROCESS
				      ? "; written by the guard in the "
					"program's process (weaknesses.md 77)"
			      : p->provider == SB_PROVIDER_AUTO
				      ? "; written as landlock or subprocess "
					"does, whichever auto picks"
				      : "; not written under this provider: "
					"the run would stop");
	if (p->py_sandbox && !p->learning)
		sb_buf_printf(out,
			      "# Denial lines: %s (the Pysandboxes logger, "
			      "stderr unless logging is configured)%s%s\n",
			      p->log_stderr ? "on" : "off",
			      p->log_stderr_ref.file ? ", from " : "",
			      p->log_stderr_ref.file
				      ? sb_ref_format(p->arena,
						      p->log_stderr_ref)
				      : "");
	if (p->locked)
		sb_buf_printf(out,
			      "# Locked by learn=false at %s: no learning, no "
			      "rules from the command line.\n",
			      sb_ref_format(p->arena, p->lock_ref));
	for (i = 0; i < p->warnings.n; i++)
		sb_buf_printf(out, "# Warning: %s\n", p->warnings.v[i].text);
}

void sb_explain(const struct sb_policy *p, const struct sb_explain_ctx *ctx,
		struct sb_buf *out)
{
	explain_rules(p, out);
	explain_files(p, out);
	explain_env(p, out);
	explain_net(p, out);
	explain_modes(p, ctx, out);
}
