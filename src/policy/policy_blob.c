/* policy_blob.c - serialise the effective policy for the guard, and read it
 * back. Pure code. The format is versioned text so that a mismatch between a
 * launcher and a guard of different builds is an error, not a misreading:
 *
 *   PYSB-POLICY 1
 *   pkgdir <path>
 *   cwd <path>
 *   home <path>          (optional: the HOME '~' stands for)
 *   config-exists 0|1
 *   learning 0|1
 *   debug-malloc 0|1
 *   repl-banner 0|1
 *   config <display name of the rule file>
 *   learn-fd <descriptor for learning records, -1 when not learning>
 *   log-fd <descriptor of the denial log, -1: none>
 *   log-relay 0|1        (1: log-fd is the supervisor's relay socket)
 *   started <sec>.<nsec> (optional: when the launcher started)
 *   pin <host> <family>:<hex bytes> ...
 *   rule <file> <line> <text>
 *   end
 *
 * Fields are separated by one tab; tab, newline and backslash inside a field
 * are escaped as \t, \n and \\.
 */
#include "policy_blob.h"

#include <stdlib.h>
#include <sys/socket.h>

#define MAGIC "PYSB-POLICY 1"

void sb_blob_write(const struct sb_policy *p, const struct sb_blob_facts *f,
		   struct sb_buf *out)
{
	size_t i, j, k;

	sb_buf_puts(out, MAGIC "\npkgdir\t");
	sb_buf_put_field(out, f->pkgdir ? f->pkgdir : "");
	sb_buf_puts(out, "\ncwd\t");
	sb_buf_put_field(out, f->cwd);
	if (f->home && *f->home) {
		sb_buf_puts(out, "\nhome\t");
		sb_buf_put_field(out, f->home);
	}
	sb_buf_puts(out, "\nconfig\t");
	sb_buf_put_field(out, p->config_display);
	sb_buf_printf(out,
		      "\nconfig-exists\t%d\nlearning\t%d\ndebug-malloc\t%d\n"
		      "repl-banner\t%d\nlearn-fd\t%d\n",
		      p->config_exists, p->learning, f->debug_malloc,
		      f->repl_banner, f->learn_fd);
	sb_buf_printf(out, "log-fd\t%d\nlog-relay\t%d\n",
		      f->log_fd_set ? f->log_fd : -1, f->log_relay);
	if (f->started_sec > 0)
		sb_buf_printf(out, "started\t%lld.%09ld\n",
			      (long long)f->started_sec, f->started_nsec);
	for (i = 0; i < p->pins.n; i++) {
		const struct sb_pin *pin = &p->pins.v[i];

		sb_buf_puts(out, "pin\t");
		sb_buf_put_field(out, pin->host);
		for (j = 0; j < pin->n_addrs; j++) {
			const struct sb_addr *ad = &pin->addrs[j];
			size_t len = ad->family == AF_INET6 ? 16 : 4;

			sb_buf_printf(out, "\t%d:", ad->family == AF_INET6 ? 6 : 4);
			for (k = 0; k < len; k++)
				sb_buf_printf(out, "%02x", ad->bytes[k]);
		}
		sb_buf_puts(out, "\n");
	}
	for (i = 0; i < p->rules.n; i++) {
		const struct sb_rule *r = &p->rules.v[i];

		if (sb_str_starts(r->text, "env=") ||
		    sb_str_starts(r->text, "unenv="))
			continue;
		sb_buf_puts(out, "rule\t");
		sb_buf_put_field(out,
				 r->ref.file ? r->ref.file : SB_REF_IMPLICIT);
		sb_buf_printf(out, "\t%u\t", r->ref.line);
		sb_buf_put_field(out, r->text);
		sb_buf_puts(out, "\n");
	}
	sb_buf_puts(out, "end\n");
}

static int parse_addr(const char *s, struct sb_addr *ad)
{
	size_t len, k;

	memset(ad, 0, sizeof(*ad));
	if ((s[0] != '4' && s[0] != '6') || s[1] != ':')
		return -1;
	ad->family = s[0] == '6' ? AF_INET6 : AF_INET;
	len = ad->family == AF_INET6 ? 16 : 4;
	s += 2;
	if (strlen(s) != len * 2)
		return -1;
	for (k = 0; k < len; k++) {
		char hex[3] = { s[2 * k], s[2 * k + 1], 0 };
		char *end;
		unsigned long v = strtoul(hex, &end, 16);

		if (*end || !hex[0] || hex[0] == '-' || hex[0] == '+' ||
		    hex[0] == ' ')
			return -1;
		ad->bytes[k] = (uint8_t)v;
	}
	return 0;
}

int sb_blob_read(struct sb_arena *a, const char *data, size_t len,
		 struct sb_blob *out, const char **err)
{
	const char *s = data, *end = data + len;
	bool seen_end = false, first = true;

	memset(out, 0, sizeof(*out));
	out->learn_fd = -1;
	out->log_fd = -1;
	while (s < end && !seen_end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		char *f[4];
		bool bad = false;
		size_t nf;

		if (!nl)
			break;
		if (first) {
			if (n != strlen(MAGIC) || memcmp(s, MAGIC, n) != 0) {
				*err = "not a python-sb policy (bad header): "
				       "the launcher and the guard library "
				       "come from different builds?";
				return -1;
			}
			first = false;
			s = nl + 1;
			continue;
		}
		nf = sb_split_fields(a, s, n, f, 4, &bad);
		s = nl + 1;
		if (bad) {
			*err = "corrupt policy: bad escape or NUL byte";
			return -1;
		}
		if (nf == 1 && strcmp(f[0], "end") == 0) {
			seen_end = true;
		} else if (nf == 2 && strcmp(f[0], "pkgdir") == 0) {
			out->pkgdir = f[1];
		} else if (nf == 2 && strcmp(f[0], "cwd") == 0) {
			out->cwd = f[1];
		} else if (nf == 2 && strcmp(f[0], "home") == 0) {
			out->home = f[1];
		} else if (nf == 2 && strcmp(f[0], "config-exists") == 0) {
			out->config_exists = strcmp(f[1], "1") == 0;
		} else if (nf == 2 && strcmp(f[0], "learning") == 0) {
			out->learning = strcmp(f[1], "1") == 0;
		} else if (nf == 2 && strcmp(f[0], "debug-malloc") == 0) {
			out->debug_malloc = strcmp(f[1], "1") == 0;
		} else if (nf == 2 && strcmp(f[0], "repl-banner") == 0) {
			out->repl_banner = strcmp(f[1], "1") == 0;
		} else if (nf == 2 && strcmp(f[0], "config") == 0) {
			out->config = f[1];
		} else if (nf == 2 && strcmp(f[0], "learn-fd") == 0) {
			char *e;
			long v = strtol(f[1], &e, 10);

			if (*e || v < -1 || v > 65535) {
				*err = "corrupt policy: bad learn-fd";
				return -1;
			}
			out->learn_fd = (int)v;
		} else if (nf == 2 && strcmp(f[0], "log-fd") == 0) {
			char *e;
			long v = strtol(f[1], &e, 10);

			if (*e || v < -1 || v > 65535) {
				*err = "corrupt policy: bad log-fd";
				return -1;
			}
			out->log_fd = (int)v;
		} else if (nf == 2 && strcmp(f[0], "log-relay") == 0) {
			out->log_relay = strcmp(f[1], "1") == 0;
		} else if (nf == 2 && strcmp(f[0], "started") == 0) {
			char *e;
			long long sec = strtoll(f[1], &e, 10);
			long nsec = *e == '.' ? strtol(e + 1, &e, 10) : -1;

			if (*e || sec <= 0 || nsec < 0 || nsec > 999999999) {
				*err = "corrupt policy: bad started";
				return -1;
			}
			out->started_sec = sec;
			out->started_nsec = nsec;
		} else if (nf >= 2 && strcmp(f[0], "pin") == 0) {
			/* re-split without the 4-field cap */
			char **all = sb_arena_alloc(a, (nf + 1) * sizeof(*all));
			struct sb_pin *pin;
			struct sb_addr *addrs;
			size_t i;

			sb_split_fields(a, nl - n, n, all, nf, &bad);
			pin = SB_VEC_PUSH(a, out->pins);
			pin->host = all[1];
			addrs = sb_arena_alloc(a, (nf - 2 + 1) * sizeof(*addrs));
			for (i = 2; i < nf; i++)
				if (parse_addr(all[i], &addrs[i - 2]) != 0) {
					*err = "corrupt policy: bad pinned "
					       "address";
					return -1;
				}
			pin->addrs = addrs;
			pin->n_addrs = nf - 2;
		} else if (nf == 4 && strcmp(f[0], "rule") == 0) {
			struct sb_flat_rule *r = SB_VEC_PUSH(a, out->rules);
			char *e;
			unsigned long line = strtoul(f[2], &e, 10);

			if (*e || !f[2][0] || line > 1000000000ul) {
				*err = "corrupt policy: bad line number";
				return -1;
			}
			r->ref.file = f[1];
			r->ref.line = (unsigned)line;
			r->text = f[3];
		} else {
			*err = "corrupt policy: unknown record";
			return -1;
		}
	}
	if (first) {
		*err = "not a python-sb policy (no header): the descriptor is "
		       "empty or not the one python-sb wrote";
		return -1;
	}
	if (!seen_end) {
		*err = "truncated policy: no end record";
		return -1;
	}
	if (!out->cwd || out->cwd[0] != '/') {
		*err = "corrupt policy: no working directory";
		return -1;
	}
	return 0;
}

enum sb_resolve_status sb_blob_resolve(void *ctx, struct sb_arena *arena,
				       const char *host, struct sb_addr **addrs,
				       size_t *n_addrs, const char **why)
{
	const struct sb_blob *b = ctx;
	size_t i;

	for (i = 0; i < b->pins.n; i++) {
		const struct sb_pin *pin = &b->pins.v[i];

		if (strcmp(pin->host, host) != 0)
			continue;
		*addrs = sb_arena_alloc(arena, (pin->n_addrs + 1) *
						       sizeof(**addrs));
		memcpy(*addrs, pin->addrs, pin->n_addrs * sizeof(**addrs));
		*n_addrs = pin->n_addrs;
		return pin->n_addrs ? SB_RESOLVE_OK : SB_RESOLVE_NONAME;
	}
	return SB_RESOLVE_NONAME;
}

int sb_blob_parse_policy(const struct sb_blob *b, struct sb_policy **out)
{
	struct sb_parse_opts o = { 0 };

	o.cwd = b->cwd;
	o.home = b->home; /* '~' in a rule means what it meant to python-sb */
	o.flat = true;
	o.flat_rules = b->rules.v;
	o.n_flat_rules = b->rules.n;
	o.flat_config_exists = b->config_exists;
	o.resolve = sb_blob_resolve;
	o.resolve_ctx = (void *)b;
	return sb_policy_parse(&o, out);
}
