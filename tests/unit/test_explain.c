/* test_explain.c - the --pysandboxes-explain text: rules with origins, the
 * files read, environment names without values, pins, provider, mode. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "explain.h"
#include "netns.h"
#include "policy.h"
#include "rulefile.h"
#include "tap.h"

static enum sb_resolve_status fake_resolve(void *ctx, struct sb_arena *a,
					   const char *host,
					   struct sb_addr **addrs, size_t *n,
					   const char **why)
{
	*addrs = sb_arena_alloc(a, sizeof(**addrs));
	(*addrs)->family = 2;
	memcpy((*addrs)->bytes, "\x7f\x00\x00\x01", 4);
	*n = 1;
	return SB_RESOLVE_OK;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *s = text;

	while ((s = strstr(s, line))) {
		if ((s == text || s[-1] == '\n') && (s[n] == '\n' || !s[n]))
			return true;
		s++;
	}
	return false;
}


/* The policy of 'rules' (a rule file in 'dir'); NULL when it fails. */
static struct sb_policy *parse_rules(const char *dir, const char *rules)
{
	return parse_rule_file(dir, rules, fake_resolve);
}

/* pasta's -T and -U for these rules, "tcp|udp", or "error: ..." */
static const char *plan(struct sb_arena *a, const char *dir,
			const char *rules, bool *shared)
{
	struct sb_policy *p = parse_rules(dir, rules);
	const char *tcp, *udp, *err, *out;

	if (!p)
		return "parse failed";
	if (sb_netns_plan(a, p, &tcp, &udp, &err) < 0)
		out = sb_arena_printf(a, "error: %s", err);
	else
		out = sb_arena_printf(a, "%s|%s", tcp, udp);
	if (shared)
		*shared = sb_netns_bwrap_shared(p);
	sb_policy_free(p);
	return out;
}

static void test_netns_plan(const char *dir)
{
	struct sb_arena *a = sb_arena_new();
	bool shared = true;

	is_str(plan(a, dir, "net=ALLOW|TCP|127.0.0.1|8080,9000-9002|OUT\n"
			    "net=ALLOW|TCP|127.0.0.1|9001|IN\n", &shared),
	       "8080,9000,9002|none",
	       "the named host loopback ports, less an IN rule's");
	ok(!shared, "bwrap keeps its own network by default");
	is_str(plan(a, dir, "net=ALLOW|UDP|::1|53|OUT\n"
			    "net=ALLOW|TCP|127.0.0.0/8|7|IN,OUT\n", NULL),
	       "none|53", "::1 for UDP; IN,OUT on one port is the program's");
	is_str(plan(a, dir, "net=ALLOW|TCP|0.0.0.0/0|*|OUT\n"
			    "net=ALLOW|*|*|443|OUT\n"
			    "net=DENY|TCP|127.0.0.1|80|OUT\n", NULL),
	       "none|none", "0.0.0.0/0, '*' and a DENY name no host port");
	is_str(plan(a, dir, "net=ALLOW|TCP|127.0.0.1|8080|OUT\n"
			    "net=ALLOW|TCP|127.0.0.1|*|IN\n", NULL),
	       "8080|none", "an IN rule for every port takes none away");
	is_str(plan(a, dir, "net=ALLOW|TCP|myhost|443|OUT\n", NULL),
	       "443|none", "a name pinned to loopback names its port");
	is_str(plan(a, dir, "net=ALLOW|TCP|127.0.0.1|self|OUT\n", NULL),
	       "none|none", "port self is the sandbox's own");
	is_str(plan(a, dir, "net=ALLOW|TCP|127.0.0.1|*|OUT\n", NULL),
	       "error: .py-sandboxes(1): 'net=ALLOW|TCP|127.0.0.1|*|OUT': "
	       "the rules name more than 1024 TCP ports of the host's "
	       "loopback, and each is forwarded into the sandbox's network "
	       "namespace; name the ports the program needs",
	       "every port stops the run, naming the rule");
	plan(a, dir, "net=ALLOW|TCP|127.0.0.1|1|OUT\nbwrap.share-net=yes\n",
	     &shared);
	ok(shared, "bwrap.share-net=yes: the host's network");
	sb_arena_free(a);
}

int main(void)
{
	char tmp[] = "/tmp/sb-test-explain-XXXXXX", path[300];
	const char *env[] = { "HOME=/nonexistent", "SECRET=hunter2", NULL };
	const char *cli[] = { "os-sandbox=none" };
	const struct sb_rule_src implicit[] = { { "env=TERM=${TERM}", NULL } };
	struct sb_parse_opts o = { 0 };
	const char *limits[] = { "limit-time=2s: the supervisor's timer" };
	struct sb_explain_ctx ctx = {
		.provider_verdict = "none: no guard at all.",
		.interpreter = "/usr/bin/python3",
		.limits = limits,
		.n_limits = 1,
	};
	struct sb_policy *p;
	struct sb_buf b = { 0 };
	FILE *f;

	if (!mkdtemp(tmp))
		return 2;
	snprintf(path, sizeof(path), "%s/.py-sandboxes", tmp);
	f = fopen(path, "w");
	fputs("include \"./absent.profile\"\n"
	      "env=TOKEN=${SECRET}\n"
	      "net=ALLOW|TCP|myhost|443|OUT\n"
	      "python-import=json\n",
	      f);
	fclose(f);
	o.cwd = tmp;
	o.envp = env;
	o.cli_rules = cli;
	o.n_cli_rules = 1;
	o.implicit_rules = implicit;
	o.n_implicit_rules = 1;
	o.resolve = fake_resolve;
	if (sb_policy_parse(&o, &p) != 0)
		return 2;
	is_int(p->errors.n, 0, "the policy parses");
	sb_explain(p, &ctx, &b);
	ok(has_line(b.s, "os-sandbox=none                                 # <arg>"),
	   "a command-line rule with its origin");
	ok(has_line(b.s, "env=TERM=${TERM}                                # <implicit>"),
	   "an implicit rule with its origin");
	ok(has_line(b.s, "python-import=json                              # .py-sandboxes(4)"),
	   "a file rule with file(line)");
	ok(has_line(b.s, "env=TOKEN=${SECRET}                             # .py-sandboxes(2)"),
	   "env= shown as written");
	ok(strstr(b.s, "hunter2") == NULL, "a secret value is never printed");
	ok(has_line(b.s, "#   TOKEN"), "the variable is listed by name");
	ok(has_line(b.s, "#   absent.profile: absent, ignored (included from .py-sandboxes(1))"),
	   "an absent include is shown");
	ok(has_line(b.s, "#   myhost -> 127.0.0.1"), "pinned names are shown");
	ok(has_line(b.s, "# Provider: none, from <arg>"), "provider and why");
	ok(has_line(b.s, "#   none: no guard at all."), "the launcher's verdict");
	ok(has_line(b.s, "# Mode: enforcing: the rule file '.py-sandboxes' exists and no learn= rule asks for learning"),
	   "mode and why");
	ok(has_line(b.s, "# Limits:") &&
		   has_line(b.s, "#   limit-time=2s: the supervisor's timer"),
	   "the launcher's line for each limit");
	if (!ok(b.s != NULL, "output produced"))
		return tap_done();
	sb_buf_free(&b);
	sb_policy_free(p);

	unlink(path);
	if (sb_policy_parse(&o, &p) != 0)
		return 2;
	sb_explain(p, &ctx, &b);
	ok(has_line(b.s, "# Mode: learning: the rule file '.py-sandboxes' does not exist"),
	   "a missing file: learning, and why");
	ok(has_line(b.s, "# Provider: subprocess, forced while learning (the OS layer is never exercised during a learning run)"),
	   "learning forces subprocess, and says so");
	sb_buf_free(&b);
	sb_policy_free(p);
	test_netns_plan(tmp);
	rmdir(tmp);
	return tap_done();
}
