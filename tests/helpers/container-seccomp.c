/* container-seccomp.c - run a program the way a container runtime would
 * start it, for the restricted-environment tests (issue 19 item 5): under
 * no_new_privs and the runtime's default seccomp profile (podman's and
 * CRI-O's /usr/share/containers/seccomp.json, derived from Docker's), read
 * at run time and compiled with libseccomp as runc/crun compile it, with
 * the entries a container holding CAPS (none by default: a non-root pod)
 * gets; optionally with user namespaces refused (clone/unshare with
 * CLONE_NEWUSER: EPERM, clone3: ENOSYS, as Docker's profile does for a
 * container without CAP_SYS_ADMIN). It owns the JSON reading (a small
 * parser: the profile is trusted test input) and the filter; it decides
 * nothing about python-sb.
 *
 *   container-seccomp [--profile FILE] [--caps CAP_X,CAP_Y] [--no-userns]
 *                     -- PROGRAM [ARG...]
 *
 * Exits 125 (as a runtime does) when the profile cannot be read or loaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#define EXIT_RUNTIME 125

/* ---- a small JSON reader ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	double num;
	char *str;
	struct jval **items; /* J_ARR, J_OBJ values */
	char **keys;         /* J_OBJ */
	size_t n;
};

struct jparser {
	const char *s;
	const char *err;
};

static void skip_ws(struct jparser *p)
{
	while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r')
		p->s++;
}

static struct jval *jnew(enum jtype t)
{
	struct jval *v = calloc(1, sizeof(*v));

	if (!v) {
		perror("container-seccomp: calloc");
		exit(EXIT_RUNTIME);
	}
	v->type = t;
	return v;
}

static struct jval *jparse(struct jparser *p, int depth);

static char *jstring(struct jparser *p)
{
	size_t cap = 16, n = 0;
	char *out = malloc(cap);

	p->s++; /* '"' */
	while (out && *p->s && *p->s != '"') {
		char c = *p->s++;

		if (c == '\\') {
			c = *p->s++;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'u') { /* the profile is ASCII */
				c = '?';
				p->s += strnlen(p->s, 4) < 4 ? 0 : 4;
			}
		}
		if (n + 2 > cap)
			out = realloc(out, cap *= 2);
		if (out)
			out[n++] = c;
	}
	if (!out || *p->s != '"') {
		p->err = "unterminated string";
		free(out);
		return NULL;
	}
	p->s++;
	out[n] = '\0';
	return out;
}

static struct jval *jlist(struct jparser *p, bool obj, int depth)
{
	struct jval *v = jnew(obj ? J_OBJ : J_ARR);
	char close = obj ? '}' : ']';

	p->s++;
	skip_ws(p);
	if (*p->s == close) {
		p->s++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct jval *item;

		skip_ws(p);
		if (obj) {
			if (*p->s != '"') {
				p->err = "expected a key";
				return NULL;
			}
			key = jstring(p);
			skip_ws(p);
			if (!key || *p->s != ':') {
				p->err = "expected ':'";
				return NULL;
			}
			p->s++;
		}
		item = jparse(p, depth + 1);
		if (!item)
			return NULL;
		v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
		v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
		if (!v->items || !v->keys) {
			p->err = "out of memory";
			return NULL;
		}
		v->items[v->n] = item;
		v->keys[v->n++] = key;
		skip_ws(p);
		if (*p->s == ',') {
			p->s++;
			continue;
		}
		if (*p->s == close) {
			p->s++;
			return v;
		}
		p->err = "expected ',' or a closing bracket";
		return NULL;
	}
}

static struct jval *jparse(struct jparser *p, int depth)
{
	struct jval *v;
	char *end;

	skip_ws(p);
	if (depth > 64) {
		p->err = "nested too deeply";
		return NULL;
	}
	switch (*p->s) {
	case '{':
	case '[':
		return jlist(p, *p->s == '{', depth);
	case '"':
		v = jnew(J_STR);
		v->str = jstring(p);
		return v->str ? v : NULL;
	case 't':
	case 'f':
	case 'n':
		v = jnew(*p->s == 'n' ? J_NULL : J_BOOL);
		v->num = *p->s == 't';
		p->s += strspn(p->s, "truefalsn");
		return v;
	default:
		v = jnew(J_NUM);
		v->num = strtod(p->s, &end);
		if (end == p->s) {
			p->err = "unexpected character";
			return NULL;
		}
		p->s = end;
		return v;
	}
}

static const struct jval *jget(const struct jval *o, const char *key)
{
	size_t i;

	if (!o || o->type != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return o->items[i];
	return NULL;
}

static bool jlist_has(const struct jval *a, const char *s)
{
	size_t i;

	for (i = 0; a && a->type == J_ARR && i < a->n; i++)
		if (a->items[i]->type == J_STR &&
		    strcmp(a->items[i]->str, s) == 0)
			return true;
	return false;
}

/* ---- the profile ---- */

struct ctx {
	const char *caps; /* ",CAP_A,CAP_B," */
	const char *arch; /* the profile's name of this architecture */
	int kmajor, kminor;
};

static bool has_cap(const struct ctx *c, const char *cap)
{
	char buf[128];

	snprintf(buf, sizeof(buf), ",%s,", cap);
	return strstr(c->caps, buf) != NULL;
}

/* Does an entry's includes/excludes select it for this container? */
static bool selected(const struct ctx *c, const struct jval *e)
{
	const struct jval *inc = jget(e, "includes");
	const struct jval *exc = jget(e, "excludes");
	const struct jval *caps, *arches, *kern;
	size_t i;

	arches = jget(inc, "arches");
	if (arches && arches->n && !jlist_has(arches, c->arch))
		return false;
	if (jlist_has(jget(exc, "arches"), c->arch))
		return false;
	caps = jget(inc, "caps");
	for (i = 0; caps && i < caps->n; i++)
		if (!has_cap(c, caps->items[i]->str))
			return false;
	caps = jget(exc, "caps");
	for (i = 0; caps && i < caps->n; i++)
		if (has_cap(c, caps->items[i]->str))
			return false;
	kern = jget(inc, "minKernel");
	if (kern && kern->type == J_STR) {
		int ma = 0, mi = 0;

		sscanf(kern->str, "%d.%d", &ma, &mi);
		if (c->kmajor < ma || (c->kmajor == ma && c->kminor < mi))
			return false;
	}
	return true;
}

static int parse_action(const char *a, const struct jval *errno_ret,
			int default_errno, uint32_t *out)
{
	int e = errno_ret && errno_ret->type == J_NUM ? (int)errno_ret->num
						      : default_errno;

	if (!strcmp(a, "SCMP_ACT_ALLOW"))
		*out = SCMP_ACT_ALLOW;
	else if (!strcmp(a, "SCMP_ACT_ERRNO"))
		*out = SCMP_ACT_ERRNO(e);
	else if (!strcmp(a, "SCMP_ACT_KILL") ||
		 !strcmp(a, "SCMP_ACT_KILL_THREAD"))
		*out = SCMP_ACT_KILL;
	else if (!strcmp(a, "SCMP_ACT_KILL_PROCESS"))
		*out = SCMP_ACT_KILL_PROCESS;
	else if (!strcmp(a, "SCMP_ACT_TRAP"))
		*out = SCMP_ACT_TRAP;
	else if (!strcmp(a, "SCMP_ACT_LOG"))
		*out = SCMP_ACT_LOG;
	else if (!strcmp(a, "SCMP_ACT_TRACE"))
		*out = SCMP_ACT_ERRNO(ENOSYS); /* no tracer in a container */
	else
		return -EINVAL;
	return 0;
}

static int parse_op(const char *op, enum scmp_compare *out)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
		{ "SCMP_CMP_NE", SCMP_CMP_NE }, { "SCMP_CMP_LT", SCMP_CMP_LT },
		{ "SCMP_CMP_LE", SCMP_CMP_LE }, { "SCMP_CMP_EQ", SCMP_CMP_EQ },
		{ "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
		{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
	};
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(op, ops[i].name)) {
			*out = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

/* With --no-userns the profile's rules for these are replaced. */
static bool userns_call(const char *name)
{
	return !strcmp(name, "clone") || !strcmp(name, "clone3") ||
	       !strcmp(name, "unshare");
}

static int add_entry(scmp_filter_ctx f, const struct ctx *c,
		     const struct jval *e, int default_errno, bool no_userns)
{
	const struct jval *names = jget(e, "names"), *args = jget(e, "args");
	const struct jval *act = jget(e, "action");
	struct scmp_arg_cmp cmp[6];
	unsigned n_cmp = 0;
	uint32_t action;
	size_t i;

	if (!names || names->type != J_ARR || !act || act->type != J_STR)
		return -EINVAL;
	if (!selected(c, e))
		return 0;
	if (parse_action(act->str, jget(e, "errnoRet"), default_errno,
			 &action) < 0)
		return -EINVAL;
	for (i = 0; args && args->type == J_ARR && i < args->n; i++) {
		const struct jval *a = args->items[i];
		const struct jval *op = jget(a, "op"), *two;

		if (n_cmp == 6 || !op || op->type != J_STR ||
		    parse_op(op->str, &cmp[n_cmp].op) < 0 ||
		    !jget(a, "index") || !jget(a, "value"))
			return -EINVAL;
		cmp[n_cmp].arg = (unsigned)jget(a, "index")->num;
		cmp[n_cmp].datum_a = (scmp_datum_t)jget(a, "value")->num;
		two = jget(a, "valueTwo");
		cmp[n_cmp].datum_b = two ? (scmp_datum_t)two->num : 0;
		n_cmp++;
	}
	for (i = 0; i < names->n; i++) {
		int nr = seccomp_syscall_resolve_name(names->items[i]->str);
		int r;

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		if (no_userns && userns_call(names->items[i]->str))
			continue;
		r = seccomp_rule_add_array(f, action, nr, n_cmp, cmp);
		/* the default action again, or a second rule for a call
		 * already ruled: the first rule stands, as in the runtimes */
		if (r == -EACCES || r == -EEXIST || r == -EINVAL)
			continue;
		if (r < 0)
			return r;
	}
	return 0;
}

/* -EACCES: the rule's action is the default one: nothing to add. */
static int tolerate_default(int r)
{
	return r == -EACCES ? 0 : r;
}

static int add_no_userns(scmp_filter_ctx f)
{
	/* unshare and clone: refused with CLONE_NEWUSER, else allowed */
	static const struct {
		int nr;
		uint32_t action;
		scmp_datum_t want;
	} rules[] = {
		{ SCMP_SYS(unshare), SCMP_ACT_ERRNO(EPERM), CLONE_NEWUSER },
		{ SCMP_SYS(unshare), SCMP_ACT_ALLOW, 0 },
		{ SCMP_SYS(clone), SCMP_ACT_ERRNO(EPERM), CLONE_NEWUSER },
		{ SCMP_SYS(clone), SCMP_ACT_ALLOW, 0 },
	};
	size_t i;
	int r;

	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		r = tolerate_default(seccomp_rule_add(
			f, rules[i].action, rules[i].nr, 1,
			SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER,
				rules[i].want)));
		if (r < 0)
			return r;
	}
	/* clone3's flags are behind a pointer: make libc fall back */
	return tolerate_default(seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS),
						 SCMP_SYS(clone3), 0));
}

static char *read_all(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	long n;

	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) < 0 || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) < 0 || !(buf = malloc((size_t)n + 1))) {
		fclose(fp);
		return NULL;
	}
	buf[fread(buf, 1, (size_t)n, fp)] = '\0';
	fclose(fp);
	return buf;
}

static int usage(void)
{
	fprintf(stderr, "usage: container-seccomp [--profile FILE] "
			"[--caps CAP_A,CAP_B] [--no-userns] -- PROGRAM "
			"[ARG...]\n");
	return EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
	const char *profile = NULL, *caps = "";
	bool no_userns = false;
	scmp_filter_ctx f;
	struct utsname u;
	struct ctx c;
	char capbuf[1024];
	int i, r, default_errno = EPERM;
	uint32_t def = SCMP_ACT_ALLOW;
	struct jval *root = NULL;
	const struct jval *calls;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--profile") && i + 1 < argc)
			profile = argv[++i];
		else if (!strcmp(argv[i], "--caps") && i + 1 < argc)
			caps = argv[++i];
		else if (!strcmp(argv[i], "--no-userns"))
			no_userns = true;
		else
			return usage();
	}
	if (i + 1 >= argc)
		return usage();
	snprintf(capbuf, sizeof(capbuf), ",%s,", caps);
	uname(&u);
	c.caps = capbuf;
	c.arch = !strcmp(u.machine, "x86_64")	 ? "amd64"
		 : !strcmp(u.machine, "aarch64") ? "arm64"
						 : u.machine;
	c.kmajor = c.kminor = 0;
	sscanf(u.release, "%d.%d", &c.kmajor, &c.kminor);

	if (profile) {
		struct jparser p = { 0 };
		const struct jval *d;
		char *text = read_all(profile);

		if (!text) {
			fprintf(stderr, "container-seccomp: read %s: %s\n",
				profile, strerror(errno));
			return EXIT_RUNTIME;
		}
		p.s = text;
		root = jparse(&p, 0);
		if (!root || root->type != J_OBJ) {
			fprintf(stderr, "container-seccomp: parse %s: %s\n",
				profile, p.err ? p.err : "not an object");
			return EXIT_RUNTIME;
		}
		d = jget(root, "defaultErrnoRet");
		if (d && d->type == J_NUM)
			default_errno = (int)d->num;
		d = jget(root, "defaultAction");
		if (!d || d->type != J_STR ||
		    parse_action(d->str, NULL, default_errno, &def) < 0) {
			fprintf(stderr, "container-seccomp: %s: no usable "
					"defaultAction\n", profile);
			return EXIT_RUNTIME;
		}
	}
	f = seccomp_init(def);
	if (!f) {
		fprintf(stderr, "container-seccomp: seccomp_init failed\n");
		return EXIT_RUNTIME;
	}
	r = no_userns ? add_no_userns(f) : 0;
	calls = jget(root, "syscalls");
	for (size_t k = 0; !r && calls && k < calls->n; k++)
		r = add_entry(f, &c, calls->items[k], default_errno,
			      no_userns);
	if (r < 0) {
		fprintf(stderr, "container-seccomp: a rule of %s: %s\n",
			profile ? profile : "--no-userns", strerror(-r));
		return EXIT_RUNTIME;
	}
	/* a runtime sets no_new_privs for a container that may not gain
	 * privileges (allowPrivilegeEscalation: false); seccomp needs it too */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		perror("container-seccomp: prctl PR_SET_NO_NEW_PRIVS");
		return EXIT_RUNTIME;
	}
	r = seccomp_load(f);
	if (r < 0) {
		fprintf(stderr, "container-seccomp: seccomp_load: %s\n",
			strerror(-r));
		return EXIT_RUNTIME;
	}
	seccomp_release(f);
	execvp(argv[i + 1], argv + i + 1);
	fprintf(stderr, "container-seccomp: exec %s: %s\n", argv[i + 1],
		strerror(errno));
	return 127;
}
