/* net.c - the network guard: judges every socket bind, connect, sendto and
 * sendmsg against the net= rules (src/policy/policy_net.h decides, nothing here
 * matches rules by itself), refuses the socket kinds no rule can name (raw,
 * packet, netlink), answers name resolutions from the addresses pinned at
 * parse time, and refuses a name no rule could allow before any query
 * leaves. The socket's family, type and protocol come from the kernel
 * (getsockopt on the descriptor), never from Python attributes a subclass
 * could override. It must not resolve a name itself, and it must not
 * allocate per event from the guard arena (messages use a heap sb_buf that
 * is freed at once).
 */
#include "guard.h"
#include "sockopt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netnames.h"
#include "policy_net.h"
#include "selfport.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif
#define SOCK_TYPE_MASK 0xf

/* A host as written: names are at most 253 bytes, literals with a zone a
 * little more than INET6_ADDRSTRLEN. Longer text is never a pinned name. */
#define HOST_MAX SB_HOST_MAX

#define PY_NONE ((PyObject *)py._Py_NoneStruct)

enum net_op { OP_CONNECT, OP_BIND, OP_SENDTO, OP_SENDMSG, OP_SETSOCKOPT };

static const char *const op_names[] = {
	[OP_CONNECT] = "connect",
	[OP_BIND] = "bind",
	[OP_SENDTO] = "sendto",
	[OP_SENDMSG] = "sendmsg",
	[OP_SETSOCKOPT] = "setsockopt",
};

/* What the kernel says about the socket behind a Python socket object. */
struct sock_info {
	long fd;
	int family, type, proto;
};

/* sb_g.net.c_fileno, _socket.socket.fileno, reads the C object's
 * descriptor, whatever a subclass claims. */

/* ---- names ---- */

static const struct sb_pin *find_pin(const char *host)
{
	return sb_netname_pin(sb_g.policy, host);
}

/* May any name be resolved? Only when a '*' rule names every host: an
 * address rule allows addresses, not lookups (weakness 15). */
static bool names_can_be_allowed(void)
{
	return sb_net_names_any(sb_g.policy);
}

/* The text of a host argument (str, bytes or bytearray, as CPython's idna
 * converter takes). 1 with buf set; 0 when it is not text; 2 for text we
 * cannot read here (undecodable, NUL, too long): a name no pin can match. */
/* Is the type of o exactly t (no subclass)? */
static bool exact(PyObject *o, PyObject *t)
{
	PyObject *type = py.PyObject_Type(o);

	py.Py_DecRef(type);
	py.PyErr_Clear();
	return type == t;
}

static int host_text(PyObject *o, char buf[HOST_MAX])
{
	PyObject *b = NULL;
	const char *s = NULL;
	char *bs;
	Py_ssize_t n;
	int r = 1;

	if (py.PyObject_IsInstance(o, py.PyUnicode_Type) == 1) {
		s = py.PyUnicode_AsUTF8AndSize(o, &n);
	} else if (py.PyObject_IsInstance(o, py.PyBytes_Type) == 1) {
		if (py.PyBytes_AsStringAndSize(o, &bs, &n) == 0)
			s = bs;
	} else if (exact(o, py.PyByteArray_Type)) {
		/* a subclass: CPython reads its bytes, PyBytes_FromObject its
		 * __buffer__ (3.12+), which may answer another host */
		b = py.PyBytes_FromObject(o);
		if (b && py.PyBytes_AsStringAndSize(b, &bs, &n) == 0)
			s = bs;
	} else {
		py.PyErr_Clear();
		return 0;
	}
	if (!s || n < 0 || (size_t)n >= HOST_MAX ||
	    memchr(s, '\0', (size_t)n)) {
		py.PyErr_Clear();
		snprintf(buf, HOST_MAX, "?");
		r = 2;
	} else {
		memcpy(buf, s, (size_t)n);
		buf[n] = '\0';
	}
	py.Py_DecRef(b);
	return r;
}

static const char *addr_text(const struct sb_addr *a,
			     char buf[INET6_ADDRSTRLEN])
{
	if (!inet_ntop(a->family, a->bytes, buf, INET6_ADDRSTRLEN))
		snprintf(buf, INET6_ADDRSTRLEN, "?");
	return buf;
}

/* ---- learning: which name an address came from ---- */

/* sb_g.net.resolved[] */

/* getaddrinfo's result: a list of (family, type, proto, canonname,
 * sockaddr); sockaddr[0] is the address text. */
static void note_resolution(const char *host, PyObject *res)
{
	Py_ssize_t i, n = py.PyList_Size(res);
	char buf[HOST_MAX];

	if (n < 0) {
		py.PyErr_Clear();
		return;
	}
	for (i = 0; i < n && sb_g.net.n_resolved <
				     SB_ARRAY_LEN(sb_g.net.resolved);
	     i++) {
		PyObject *t = py.PyList_GetItem(res, i);
		PyObject *sa = t ? py.PyTuple_GetItem(t, 4) : NULL;
		PyObject *ip = sa ? py.PyTuple_GetItem(sa, 0) : NULL;
		struct sb_addr a;

		if (!ip || host_text(ip, buf) != 1 ||
		    !sb_netname_resolver_literal(buf, &a)) {
			py.PyErr_Clear();
			continue;
		}
		sb_g.net.resolved[sb_g.net.n_resolved].addr = a;
		snprintf(sb_g.net.resolved[sb_g.net.n_resolved].host, HOST_MAX,
			 "%s", host);
		sb_g.net.n_resolved++;
	}
}

static const char *learned_host(const struct sb_addr *a)
{
	size_t i;

	for (i = sb_g.net.n_resolved; i-- > 0;)
		if (sb_g.net.resolved[i].addr.family == a->family &&
		    !memcmp(sb_g.net.resolved[i].addr.bytes, a->bytes,
			    a->family == AF_INET6 ? 16 : 4))
			return sb_g.net.resolved[i].host;
	return "-";
}

/* ---- permits: a wrapper that judged more than its event can see ---- */

/* A wrapper that judged a call's payload or flags (which the audit event
 * does not carry) passes the original arguments of exact types only, so
 * that no Python code runs between here and the event, and leaves a
 * one-shot permit that the event of the same thread takes. */
enum permit { PERMIT_NONE, PERMIT_DNS_QUERY, PERMIT_NAMEINFO_FLAGS };

static struct {
	enum permit kind;
	long flags; /* PERMIT_NAMEINFO_FLAGS: getnameinfo's flags */
	pthread_t owner;
} permit;

static PyObject *call_with_permit_flags(PyObject *fn, PyObject *args,
					enum permit kind, long flags)
{
	PyObject *res;

	permit.kind = kind;
	permit.flags = flags;
	permit.owner = pthread_self();
	res = py.PyObject_Call(fn, args, NULL);
	permit.kind = PERMIT_NONE;
	return res;
}

static PyObject *call_with_permit(PyObject *fn, PyObject *args,
				  enum permit kind)
{
	return call_with_permit_flags(fn, args, kind, 0);
}

static bool permit_take(enum permit kind)
{
	if (permit.kind != kind || !pthread_equal(permit.owner, pthread_self()))
		return false;
	permit.kind = PERMIT_NONE;
	return true;
}

/* ---- refusals ---- */

static int raise_buf(struct sb_buf *b)
{
	int r = sb_guard_raise(SB_EXC_SOCKET, b->s ? b->s : "", NULL);

	sb_buf_free(b);
	return r;
}

static int raise_msg(const char *msg)
{
	return sb_guard_raise(SB_EXC_SOCKET, msg, NULL);
}

/* A refusal the denial log records with its target and the rule to add
 * (add NULL: none can lift it, SB_RULE_BUILTIN). The refusals that judge
 * by the rules (judge(), refuse_unpinned(), refuse_resolution()) note
 * their own record, with the rule that decided. */
static int refuse_buf(const char *target, const char *add, struct sb_buf *b)
{
	sb_guard_note("network", target, add ? NULL : SB_RULE_BUILTIN, add);
	return raise_buf(b);
}

static int refuse_msg(const char *target, const char *add, const char *msg)
{
	sb_guard_note("network", target, add ? NULL : SB_RULE_BUILTIN, add);
	return raise_msg(msg);
}

/* The one rule that lets every DNS query out (weakness 15). */
static const char every_query[] = "net=ALLOW|UDP|*|53|OUT";

/* "Guard <op> to <repr(addr)> DENIED: <why>"; add as refuse_buf(). */
static int refuse_addr(enum net_op op, PyObject *addr, const char *why,
		       const char *add)
{
	struct sb_buf b = { 0 };
	PyObject *r = addr ? py.PyObject_Repr(addr) : NULL;
	const char *s = r ? py.PyUnicode_AsUTF8AndSize(r, NULL) : NULL;
	int ret;

	py.PyErr_Clear();
	sb_buf_printf(&b, "Guard %s to %s DENIED: %s", op_names[op],
		      s ? s : "?", why);
	ret = refuse_buf(s ? s : "?", add, &b);
	py.Py_DecRef(r);
	return ret;
}

/* socket.gaierror(code), as the resolver raises it. */
static int raise_gai(int code)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod = mods ? py.PyDict_GetItemString(mods, "_socket") : NULL;
	PyObject *cls = mod ? py.PyObject_GetAttrString(mod, "gaierror") : NULL;
	PyObject *args;

	if (!cls) {
		/* an answer, as the resolver's, not a refusal: no record */
		sb_guard_no_log();
		return raise_msg(gai_strerror(code));
	}
	args = py.PyTuple_New(2);
	if (!args) {
		py.Py_DecRef(cls);
		return -1;
	}
	py.PyTuple_SetItem(args, 0, py.PyLong_FromLong(code));
	py.PyTuple_SetItem(args, 1,
			   py.PyUnicode_FromString(gai_strerror(code)));
	py.PyErr_SetObject(cls, args);
	py.Py_DecRef(args);
	py.Py_DecRef(cls);
	return -1;
}

/* socket.gaierror(EAI_AGAIN): what a pinned name without an address of the
 * wanted family gets, as a resolver that cannot answer would say. */
static int raise_eai_again(void)
{
	return raise_gai(EAI_AGAIN);
}

/* The answer made of a pinned name's addresses: 'list', or, when the pin
 * has none of the family asked, EAI_AGAIN (the list is released). */
static PyObject *pinned_answer(PyObject *list)
{
	if (py.PyList_Size(list) > 0)
		return list;
	py.Py_DecRef(list);
	raise_eai_again();
	return NULL;
}

static void format_ref(struct sb_ref ref, char *buf, size_t size)
{
	if (!ref.file)
		snprintf(buf, size, "%s", SB_REF_IMPLICIT);
	else if (!ref.line)
		snprintf(buf, size, "%s", ref.file);
	else
		snprintf(buf, size, "%s(%u)", ref.file, ref.line);
}

/* The rules alone, every address judged where the kernel connects
 * (sb_net_decide canonicalises; port 'self' is decide()'s). */
static const struct sb_net_rule *decide_rules(unsigned kind, unsigned dir,
					      const struct sb_addr *a,
					      uint16_t port)
{
	return sb_net_decide(sb_g.policy, kind, dir, a, port);
}

/* Is the address the kernel uses not the one written (canonical)? The
 * unspecified addresses, outbound. */
static bool note_differs(const struct sb_addr *a, unsigned dir)
{
	struct sb_addr d[2], c;
	size_t n = sb_addr_destinations(a, dir, d);

	sb_addr_canonical(a, &c);
	return n != 1 || c.family != d[0].family ||
	       memcmp(c.bytes, d[0].bytes, sizeof(c.bytes));
}

/* " The kernel connects to 127.0.0.1." when note_differs(), else "". */
static void dest_note(const struct sb_addr *a, unsigned dir, char *out,
		      size_t size)
{
	char ip[INET6_ADDRSTRLEN];
	struct sb_addr d[2];
	size_t n = sb_addr_destinations(a, dir, d);

	out[0] = '\0';
	if (note_differs(a, dir))
		snprintf(out, size, " The kernel connects to %s%s.",
			 addr_text(&d[n - 1], ip),
			 n > 1 ? " or beyond" : "");
}

/* A connection this process listens for (net= port 'self'), or, where
 * /proc can be read (not under Landlock), one it started listens for;
 * never another process's port, whoever owns it. */
static bool own_port(unsigned kind, unsigned dir, const struct sb_addr *a,
		     uint16_t port)
{
	int type = kind == SB_NET_UDP ? SOCK_DGRAM : SOCK_STREAM;

	return (kind == SB_NET_TCP || kind == SB_NET_UDP) &&
	       dir == SB_NET_OUT &&
	       (sb_self_port_own(type, a, port) ||
		sb_self_port(type, a, port, getpid()));
}

static const struct sb_net_rule *decide(unsigned kind, unsigned dir,
					const struct sb_addr *a, uint16_t port)
{
	const struct sb_net_rule *r = decide_rules(kind, dir, a, port);
	const struct sb_net_rule *self;

	if (r || !(self = sb_net_self_rule(sb_g.policy, kind, dir, a)))
		return r;
	return own_port(kind, dir, a, port) ? self : NULL;
}

/* The denial log's note of a refused address: the rule that decided and
 * the net= rule that would allow it (for the name when one was given). */
static void note_net(unsigned kind, unsigned dir, const char *name,
		     const struct sb_addr *a, unsigned port,
		     const struct sb_net_rule *r)
{
	char ip[INET6_ADDRSTRLEN], target[HOST_MAX + 64], add[HOST_MAX + 64];
	char rule[PATH_MAX + 512], ref[PATH_MAX + 32];
	const char *t;
	bool v6;

	if (sb_g.log_fd < 0)
		return;
	t = addr_text(a, ip);
	v6 = strchr(t, ':') != NULL;

	snprintf(target, sizeof(target), "%s%s%s:%u", v6 ? "[" : "", t,
		 v6 ? "]" : "", port);
	snprintf(add, sizeof(add), "net=ALLOW|%s|%s|%u|%s",
		 kind == SB_NET_UDP ? "UDP" : "TCP", name ? name : t, port,
		 dir == SB_NET_IN ? "IN" : "OUT");
	if (r) {
		format_ref(r->ref, ref, sizeof(ref));
		snprintf(rule, sizeof(rule), "%s from %s", r->rule, ref);
	}
	/* an explicit DENY is tried before every ALLOW: no rule to add */
	sb_guard_note("network", target, r ? rule : NULL, r ? NULL : add);
}

/* Judge every address a host stands for (E13): all must be allowed. 'name'
 * is the host name as written, NULL for a literal. Messages follow the
 * seed (5.3), except that an explicit refusal prints DENIED and drops the
 * stray ')' its source appended. */
static int judge(unsigned kind, unsigned dir, const char *name,
		 const struct sb_addr *addrs, size_t n, unsigned port)
{
	char ip[INET6_ADDRSTRLEN], ref[PATH_MAX + 32];
	const struct sb_net_rule *r;
	char note[INET6_ADDRSTRLEN + 40];
	struct sb_buf b = { 0 };
	size_t i, j;

	for (i = 0; i < n; i++) {
		r = decide(kind, dir, &addrs[i], (uint16_t)port);
		if (r && r->allow)
			continue;
		if (sb_g.learning) {
			char pbuf[16];
			struct sb_addr d[2];
			size_t nd, k;

			/* the rules name where the kernel connects (all of
			 * it: a broadcast is itself and loopback); an
			 * outbound 0.0.0.0 is learned as 127.0.0.1 */
			nd = sb_addr_destinations(&addrs[i], dir, d);
			/* a port of this run is learned as 'self': the next
			 * run listens on another */
			if (own_port(kind, dir, &addrs[i], (uint16_t)port))
				snprintf(pbuf, sizeof(pbuf), "self");
			else
				snprintf(pbuf, sizeof(pbuf), "%u", port);
			for (k = 0; k < nd; k++)
				if (sb_learn_record("net",
						kind == SB_NET_UDP ? "udp"
								   : "tcp",
						dir == SB_NET_IN ? "in" : "out",
						addr_text(&d[k], ip), pbuf,
						name ? name
						     : learned_host(&addrs[i]),
						NULL) < 0) {
					sb_buf_free(&b);
					return sb_guard_refuse_halted();
				}
			continue;
		}
		dest_note(&addrs[i], dir, note, sizeof(note));
		note_net(kind, dir, name, &addrs[i], port, r);
		if (r) {
			format_ref(r->ref, ref, sizeof(ref));
			sb_buf_printf(&b,
				      "Guard network connection to [%s]:%u DENIED by rule '%s' from %s.",
				      addr_text(&addrs[i], ip), port, r->rule,
				      ref);
		} else if (name) {
			sb_buf_printf(&b,
				      "Guard network connection to \"'[%s]:%u' (",
				      name, port);
			for (j = 0; j < n; j++)
				sb_buf_printf(&b, "%s%s", j ? ", " : "",
					      addr_text(&addrs[j], ip));
			sb_buf_printf(&b,
				      ":%u) \" DENIED by implicit default policy.",
				      port);
		} else {
			sb_buf_printf(&b,
				      "Guard network connection to '[%s]:%u' DENIED by implicit default policy.",
				      addr_text(&addrs[i], ip), port);
		}
		sb_buf_puts(&b, note);
		return raise_buf(&b);
	}
	return 0;
}

static int refuse_unpinned(const char *host, unsigned port)
{
	struct sb_buf b = { 0 };

	if (sb_g.learning)
		return 0; /* the address it resolves to is judged, and learned */
	{
		char t[HOST_MAX + 16], add[HOST_MAX + 40];

		snprintf(t, sizeof(t), "%s:%u", host, port);
		snprintf(add, sizeof(add), "net=ALLOW|TCP|%s|%u|OUT", host,
			 port);
		sb_guard_note("network", t, NULL, add);
	}
	sb_buf_printf(&b,
		      "Guard network connection to '[%s]:%u' DENIED: the name '%s' is not pinned by a net= rule.",
		      host, port, host);
	return raise_buf(&b);
}

static int refuse_resolution(const char *host)
{
	struct sb_buf b = { 0 };

	if (sb_g.learning)
		return 0; /* learned when the program uses an address */
	{
		char add[HOST_MAX + 40];

		snprintf(add, sizeof(add), "net=ALLOW|TCP|%s|<port>|OUT", host);
		sb_guard_note("network", host, NULL, add);
	}
	sb_buf_printf(&b,
		      "Guard name resolution of '%s' DENIED: no net= rule names this host. Add net=ALLOW|TCP|%s|<port>|OUT to resolve and reach it (an address rule allows addresses, not lookups).",
		      host, host);
	return raise_buf(&b);
}

/* ---- the socket behind an object ---- */

/* Is fn a method written in C (a method descriptor, like str.join's
 * type) that the class cls defines itself? A Python class has none: its
 * methods are functions, and a C method taken from another class belongs
 * to that one. */
static bool c_method_of(PyObject *fn, PyObject *cls)
{
	PyObject *join = py.PyObject_GetAttrString(py.PyUnicode_Type, "join");
	PyObject *mtype = join ? py.PyObject_Type(join) : NULL;
	PyObject *ftype = py.PyObject_Type(fn);
	PyObject *owner = ftype && ftype == mtype
				  ? py.PyObject_GetAttrString(fn, "__objclass__")
				  : NULL;
	bool ok = owner && owner == cls;

	py.Py_DecRef(join);
	py.Py_DecRef(mtype);
	py.Py_DecRef(ftype);
	py.Py_DecRef(owner);
	py.PyErr_Clear();
	return ok;
}

static int capture_socket_class(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod = mods ? py.PyDict_GetItemString(mods, "_socket") : NULL;
	PyObject *cls, *fileno;

	if (sb_g.net.c_fileno || !mod)
		return 0;
	cls = py.PyObject_GetAttrString(mod, "socket");
	if (!cls)
		return -1;
	fileno = py.PyObject_GetAttrString(cls, "fileno");
	if (!fileno) {
		py.Py_DecRef(cls);
		return -1;
	}
	/* the C class's own method: a module the program put in
	 * sys.modules as _socket gave a fileno() that answered -1 (a closed
	 * socket, let through) for every socket */
	if (!c_method_of(fileno, cls)) {
		py.Py_DecRef(fileno);
		py.Py_DecRef(cls);
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "python-sb: _socket.socket is not the "
				   "interpreter's");
		return -1;
	}
	sb_g.net.c_fileno = fileno;
	sb_g.net.c_socket_class = cls; /* kept for the life of the process */
	return 0;
}

/* 0 with *si filled (fd < 0: a closed socket, the call fails by itself),
 * -1 with an exception set. */
static int sock_info(enum net_op op, PyObject *sock, struct sock_info *si)
{
	PyObject *args, *res;
	const struct sb_net_copy *c;
	socklen_t len;
	int err;

	if (!sb_g.net.c_fileno &&
	    (capture_socket_class() < 0 ||
	     (!sb_g.net.c_fileno && !sb_g.net.copies)))
		return refuse_addr(op, NULL, "the socket cannot be inspected.",
				   NULL);
	args = py.PyTuple_New(1);
	if (!args)
		return -1;
	py.Py_IncRef(sock);
	py.PyTuple_SetItem(args, 0, sock);
	/* the C method, which raises no event: not busy; a socket of a copy
	 * of _socket is read by its own class's (the method checks the
	 * object's real type and refuses any other) */
	res = sb_g.net.c_fileno
		      ? py.PyObject_CallObject(sb_g.net.c_fileno, args)
		      : NULL;
	for (c = sb_g.net.copies;
	     !res && c &&
	     (!py.PyErr_Occurred() ||
	      py.PyErr_ExceptionMatches(PY_EXC(PyExc_TypeError)) == 1);
	     c = c->next) {
		py.PyErr_Clear();
		res = py.PyObject_CallObject(c->fileno, args);
	}
	py.Py_DecRef(args);
	if (!res)
		return -1;
	si->fd = py.PyLong_AsLong(res);
	py.Py_DecRef(res);
	if (si->fd == -1 && py.PyErr_Occurred())
		return -1;
	if (si->fd < 0)
		return 0;
	len = sizeof(int);
	err = getsockopt((int)si->fd, SOL_SOCKET, SO_DOMAIN, &si->family, &len);
	len = sizeof(int);
	if (!err)
		err = getsockopt((int)si->fd, SOL_SOCKET, SO_TYPE, &si->type,
				 &len);
	len = sizeof(int);
	if (!err)
		err = getsockopt((int)si->fd, SOL_SOCKET, SO_PROTOCOL,
				 &si->proto, &len);
	if (err) {
		struct sb_buf b = { 0 };

		sb_buf_printf(&b,
			      "Guard %s DENIED: the socket cannot be inspected (%s).",
			      op_names[op], strerror(errno));
		return refuse_buf("?", NULL, &b);
	}
	return 0;
}

static const char *const kind_names[] = {
	[SOCK_STREAM] = "SOCK_STREAM",	 [SOCK_DGRAM] = "SOCK_DGRAM",
	[SOCK_RAW] = "SOCK_RAW",	 [SOCK_RDM] = "SOCK_RDM",
	[SOCK_SEQPACKET] = "SOCK_SEQPACKET", [SOCK_DCCP] = "SOCK_DCCP",
	[SOCK_PACKET] = "SOCK_PACKET",
};

/* SB_NET_TCP or SB_NET_UDP, or 0 (refused, exception set). */
static unsigned sock_kind(enum net_op op, PyObject *addr,
			  const struct sock_info *si)
{
	struct sb_buf b = { 0 };
	PyObject *r;
	const char *s;
	int t = si->type;

	if (t == SOCK_STREAM &&
	    (si->proto == IPPROTO_TCP || si->proto == IPPROTO_MPTCP))
		return SB_NET_TCP;
	if (t == SOCK_DGRAM &&
	    (si->proto == IPPROTO_UDP || si->proto == IPPROTO_UDPLITE))
		return SB_NET_UDP;
	r = py.PyObject_Repr(addr);
	s = r ? py.PyUnicode_AsUTF8AndSize(r, NULL) : NULL;
	py.PyErr_Clear();
	if (t == SOCK_STREAM || t == SOCK_DGRAM)
		sb_buf_printf(&b,
			      "Guard %s to %s DENIED: socket protocol %d cannot be evaluated by a net= rule.",
			      op_names[op], s ? s : "?", si->proto);
	else if (t > 0 && (size_t)t < SB_ARRAY_LEN(kind_names) &&
		 kind_names[t])
		sb_buf_printf(&b,
			      "Guard %s to %s DENIED: socket type <SocketKind.%s: %d> cannot be evaluated by a net= rule.",
			      op_names[op], s ? s : "?", kind_names[t], t);
	else
		sb_buf_printf(&b,
			      "Guard %s to %s DENIED: socket type %d cannot be evaluated by a net= rule.",
			      op_names[op], s ? s : "?", t);
	refuse_buf(s ? s : "?", NULL, &b);
	py.Py_DecRef(r);
	return 0;
}

/* ---- AF_UNIX ---- */

/* A path address needs write access through the file rules (5.2); an
 * abstract one (leading NUL, or empty: the kernel autobinds an abstract
 * name) is refused, since no rule can name it, unless the policy allows
 * the whole network (sb_net_allows_abstract). */
static int check_unix(enum net_op op, PyObject *addr)
{
	char path[PATH_MAX], add[PATH_MAX + 16];
	struct sb_buf b = { 0 };
	PyObject *bytes;
	char *s;
	Py_ssize_t n;
	size_t len;
	bool ro;

	/* only what the socket reads as the guard does: a str's text, the
	 * bytes of a bytes, bytearray or memoryview. Any other bytes-like
	 * object (a subclass, a class with __buffer__ on 3.12+) gives its
	 * buffer once to the call and once here, maybe another path each
	 * time (a connect that reached a socket outside the rules) */
	if (py.PyObject_IsInstance(addr, py.PyUnicode_Type) == 1)
		bytes = py.PyUnicode_EncodeFSDefault(addr);
	else if (exact(addr, py.PyBytes_Type) ||
		 exact(addr, py.PyByteArray_Type) ||
		 exact(addr, py.PyMemoryView_Type))
		bytes = py.PyBytes_FromObject(addr);
	else
		bytes = NULL;
	if (!bytes || py.PyBytes_AsStringAndSize(bytes, &s, &n) < 0) {
		py.Py_DecRef(bytes);
		return refuse_addr(op, addr,
				   "unsupported address format, no rule can be evaluated.",
				   NULL);
	}
	if (n == 0 || s[0] == '\0') {
		py.Py_DecRef(bytes);
		/* a policy that allows the whole network allows these too */
		if (sb_net_allows_abstract(sb_g.policy))
			return 0;
		return refuse_addr(op, addr,
				   "abstract AF_UNIX addresses cannot be evaluated by a rule.",
				   NULL);
	}
	len = strnlen(s, (size_t)n); /* the kernel stops at the first NUL */
	if (len >= sizeof(path)) {
		py.Py_DecRef(bytes);
		return refuse_addr(op, addr,
				   "unsupported address format, no rule can be evaluated.",
				   NULL);
	}
	memcpy(path, s, len);
	path[len] = '\0';
	py.Py_DecRef(bytes);
	/* the file guard's refusal is not logged: this one is, as a socket */
	sb_guard_no_log();
	if (sb_files_check(path, -1, true) == 0) {
		sb_guard_note_clear();
		return 0;
	}
	/* the file guard said why in its own terms; say it as a socket */
	ro = py.PyErr_ExceptionMatches(PY_EXC(PyExc_PermissionError)) == 1;
	py.PyErr_Clear();
	snprintf(add, sizeof(add), "expose-rw=%s", path);
	if (ro)
		sb_buf_printf(&b,
			      "Guard %s to AF_UNIX socket '%s' DENIED: it is exposed read-only; a socket needs expose-rw=.",
			      op_names[op], path);
	else
		sb_buf_printf(&b,
			      "Guard %s to AF_UNIX socket '%s' DENIED: no expose-ro=/expose-rw= rule covers this path.",
			      op_names[op], path);
	return refuse_buf(path, add, &b);
}

/* ---- AF_INET / AF_INET6 ---- */

/* Host and port of an (host, port[, flowinfo, scope]) tuple. 1 when it has
 * that shape, 0 when not; *port is -1 when the port is not an int. */
static int inet_tuple(PyObject *addr, int family, char host[HOST_MAX],
		      int *host_kind, long *port)
{
	Py_ssize_t n;
	PyObject *p;

	if (py.PyObject_IsInstance(addr, py.PyTuple_Type) != 1)
		return 0;
	n = py.PyTuple_Size(addr);
	if (n < 2 || n > (family == AF_INET6 ? 4 : 2))
		return 0;
	*host_kind = host_text(py.PyTuple_GetItem(addr, 0), host);
	if (*host_kind == 0)
		return 0;
	p = py.PyTuple_GetItem(addr, 1);
	*port = -1;
	if (py.PyObject_IsInstance(p, py.PyLong_Type) == 1) {
		*port = py.PyLong_AsLong(p);
		if (*port == -1 && py.PyErr_Occurred())
			py.PyErr_Clear();
		if (*port > 65535 || *port < 0)
			*port = -1;
	}
	py.PyErr_Clear();
	return 1;
}

/* Port 53 carries DNS queries, which a resolver passes on to whoever
 * serves the name: an address rule for the resolver must not let any name
 * out (weakness 15). A UDP query is let through when the sendto wrapper
 * read it and a rule names its host; a connected socket or a stream
 * would send what this guard never sees, so only a '*' rule opens them. */
static int check_dns_port(enum net_op op, PyObject *addr, unsigned kind,
			  unsigned port)
{
	if (op == OP_BIND || port != SB_DNS_PORT || names_can_be_allowed() ||
	    sb_g.learning)
		return 0;
	if (op == OP_SENDTO && kind == SB_NET_UDP &&
	    permit_take(PERMIT_DNS_QUERY))
		return 0;
	return refuse_addr(op, addr,
			   "port 53 carries DNS queries; one is sent only with sendto() on a UDP socket, for a host a net= rule names (net=ALLOW|TCP|<host>|<port>|OUT). net=ALLOW|UDP|*|53|OUT lets every name through.",
			   every_query);
}

/* Judge an inet address as the event sees it: after CPython parsed it
 * (and, for a name, already resolved it: the socket.socket wrappers below
 * stop names before that). */
/* A bind that shares its port (SO_REUSEPORT, or SO_REUSEADDR on UDP) with
 * a socket of another program takes part of that program's connections or
 * datagrams, or all of them with a more specific address: an IN rule
 * grants the port, not a host service's traffic. Judged here where this
 * process can read the socket tables (the Python layer alone); under
 * Landlock, which hides them, the network supervisor judges the bind
 * itself (netsup.c). 0, or -1 (raised). */
static int check_shared_port(enum net_op op, PyObject *addr,
			     const struct sock_info *si,
			     const struct sb_addr *a, unsigned port)
{
	int reuseport = 0, reuseaddr = 0;
	socklen_t ol = sizeof(int);

	if (op != OP_BIND || sb_g.learning)
		return 0;
	(void)getsockopt((int)si->fd, SOL_SOCKET, SO_REUSEPORT, &reuseport,
			 &ol);
	ol = sizeof(int);
	if (si->type == SOCK_DGRAM)
		(void)getsockopt((int)si->fd, SOL_SOCKET, SO_REUSEADDR,
				 &reuseaddr, &ol);
	if ((!reuseport && !reuseaddr) ||
	    sb_port_held_outside(si->type, a, (uint16_t)port, getpid()) != 1)
		return 0;
	return refuse_addr(op, addr,
			   "another program listens on this port and shares "
			   "it (SO_REUSEPORT, SO_REUSEADDR): a bind that "
			   "shares it would take that program's traffic; an "
			   "IN rule grants the port, not another program's "
			   "connections.",
			   NULL);
}

static int check_inet(enum net_op op, PyObject *addr,
		      const struct sock_info *si)
{
	char host[HOST_MAX];
	const struct sb_pin *pin;
	struct sb_addr a;
	int hk;
	long port;
	unsigned kind, dir = op == OP_BIND ? SB_NET_IN : SB_NET_OUT;

	if (!inet_tuple(addr, si->family, host, &hk, &port) || port < 0)
		return refuse_addr(op, addr,
				   "unsupported address format, no rule can be evaluated.",
				   NULL);
	kind = sock_kind(op, addr, si);
	if (!kind)
		return -1;
	if (hk == 1 && sb_netname_socket_literal(si->family, host, &a)) {
		if (judge(kind, dir, NULL, &a, 1, (unsigned)port) < 0 ||
		    check_shared_port(op, addr, si, &a, (unsigned)port) < 0)
			return -1;
		return check_dns_port(op, addr, kind, (unsigned)port);
	}
	pin = hk == 1 ? find_pin(host) : NULL;
	if (!pin && sb_g.learning) {
		/* a name the program connects to: the rule names it (4.3) */
		char pbuf[24];

		snprintf(pbuf, sizeof(pbuf), "%ld", port);
		if (sb_learn_record("net", kind == SB_NET_UDP ? "udp" : "tcp",
				    dir == SB_NET_IN ? "in" : "out",
				    si->family == AF_INET6 ? "::" : "0.0.0.0",
				    pbuf, host, NULL) < 0)
			return sb_guard_refuse_halted();
		return 0;
	}
	if (!pin)
		return refuse_unpinned(host, (unsigned)port);
	if (judge(kind, dir, host, pin->addrs, pin->n_addrs,
		  (unsigned)port) < 0)
		return -1;
	for (size_t i = 0; i < pin->n_addrs; i++)
		if (check_shared_port(op, addr, si, &pin->addrs[i],
				      (unsigned)port) < 0)
			return -1;
	return check_dns_port(op, addr, kind, (unsigned)port);
}

static int check_address(enum net_op op, PyObject *sock, PyObject *addr)
{
	struct sock_info si;

	if (!sock)
		return refuse_msg("?", NULL,
				  "Guard network operation DENIED: its arguments cannot be read.");
	if (!addr || addr == PY_NONE) /* sendmsg on a connected socket */
		return 0;
	if (sock_info(op, sock, &si) < 0)
		return -1;
	if (si.fd < 0)
		return 0;
	switch (si.family) {
	case AF_UNIX:
		return check_unix(op, addr);
	case AF_INET:
	case AF_INET6:
		return check_inet(op, addr, &si);
	default:
		return refuse_addr(op, addr,
				   "unsupported address format, no rule can be evaluated.",
				   NULL);
	}
}

/* ---- socket options ---- */

/* Learning: what the enforcing run will refuse and no rule learned can
 * grant ('target'), for the learner to say at the save. 0, or -1 (the
 * recorder is gone: halted, raised). */
static int learn_refused(const char *target)
{
	/* once each (a send in a loop): the learner dedupes the rest */
	__typeof__(sb_g.net) *n = &sb_g.net;
	size_t i;

	for (i = 0; i < n->n_told; i++)
		if (strcmp(n->told[i], target) == 0)
			return 0;
	if (n->n_told < SB_ARRAY_LEN(n->told))
		snprintf(n->told[n->n_told++], sizeof(n->told[0]), "%s",
			 target);
	if (sb_learn_record("refused", target, NULL) < 0) {
		sb_guard_refuse_halted();
		return -1;
	}
	return 0;
}

int sb_net_judge_sockopt(PyObject *sock, long level, long name)
{
	struct sock_info si;
	char msg[320], target[64];

	if (!sb_g.armed || sb_guard_is_busy() ||
	    sb_net_allows_abstract(sb_g.policy) ||
	    (level == (int)level && name == (int)name &&
	     sb_sockopt_allowed((int)level, (int)name)))
		return 0;
	if (sock_info(OP_SETSOCKOPT, sock, &si) < 0)
		return -1;
	/* a Unix socket's options stay on the host; the other families
	 * need an address no rule can judge, refused at connect, bind and
	 * send */
	if (si.fd < 0 || (si.family != AF_INET && si.family != AF_INET6))
		return 0;
	snprintf(target, sizeof(target), "setsockopt(%ld, %ld)", level, name);
	if (sb_g.learning)
		return learn_refused(target);
	snprintf(msg, sizeof(msg),
		 "Guard setsockopt(%ld, %ld) DENIED: the option is not one a "
		 "net= rule can evaluate (a multicast membership reports its "
		 "group on the local network; source routing, a device "
		 "binding, kernel TLS...): only a policy that allows the whole "
		 "network lets it be set.",
		 level, name);
	return refuse_msg(target, NULL, msg);
}

/* ---- control messages of sendmsg ---- */

/* (level, type) of a control message; 0 allowed, -1 refused (raised). */
static int judge_cmsg(long level, long type)
{
	char msg[480], target[64];

	if (level == (int)level && type == (int)type &&
	    sb_cmsg_allowed((int)level, (int)type))
		return 0;
	snprintf(target, sizeof(target), "sendmsg control (%ld, %ld)", level,
		 type);
	if (sb_g.learning)
		return learn_refused(target);
	snprintf(msg, sizeof(msg),
		 "Guard sendmsg control message (%ld, %ld) DENIED: it is not "
		 "one a net= rule can evaluate (IP_PKTINFO chooses the source "
		 "address or interface, SCM_CREDENTIALS speaks for a process, "
		 "SO_MARK routes, IP_RETOPTS source-routes...): only "
		 SB_CMSG_ALLOWED_TEXT " pass, unless the policy allows the "
		 "whole network.",
		 level, type);
	return refuse_msg(target, NULL, msg);
}

/* One ancillary item, (level, type, data) read once: a new tuple of exact
 * ints, judged. Not a 3-tuple: itself (CPython refuses it). */
static PyObject *frozen_cmsg(PyObject *item, bool judge_it)
{
	PyObject *t, *o;
	long v[2];
	int i;

	if (py.PyObject_IsInstance(item, py.PyTuple_Type) != 1 ||
	    py.PyTuple_Size(item) != 3) {
		py.PyErr_Clear();
		py.Py_IncRef(item);
		return item;
	}
	t = py.PyTuple_New(3);
	if (!t)
		return NULL;
	for (i = 0; i < 2; i++) {
		o = py.PyNumber_Index(py.PyTuple_GetItem(item, i));
		if (!o)
			goto fail; /* its TypeError, as the call's */
		v[i] = py.PyLong_AsLong(o);
		py.PyTuple_SetItem(t, i, o);
		if (v[i] == -1 && py.PyErr_Occurred())
			goto fail; /* its OverflowError */
	}
	o = py.PyTuple_GetItem(item, 2);
	py.Py_IncRef(o);
	py.PyTuple_SetItem(t, 2, o);
	if (judge_it && judge_cmsg(v[0], v[1]) < 0)
		goto fail;
	return t;
fail:
	py.Py_DecRef(t);
	return NULL;
}

PyObject *sb_net_sendmsg_args(PyObject *args)
{
	bool judge_it = sb_g.armed && !sb_guard_is_busy() &&
			!sb_net_allows_abstract(sb_g.policy);
	Py_ssize_t n = py.PyTuple_Size(args), i, k;
	PyObject *anc, *list, *nargs, *item;

	if (n < 3) { /* no ancillary data */
		py.Py_IncRef(args);
		return args;
	}
	anc = py.PySequence_List(py.PyTuple_GetItem(args, 2));
	if (!anc)
		return NULL; /* not iterable: its TypeError */
	k = py.PyList_Size(anc);
	list = py.PyList_New(0);
	for (i = 0; list && i < k; i++) {
		item = frozen_cmsg(py.PyList_GetItem(anc, i), judge_it);
		if (!item || py.PyList_Append(list, item) < 0) {
			py.Py_DecRef(list);
			list = NULL;
		}
		py.Py_DecRef(item);
	}
	py.Py_DecRef(anc);
	if (!list)
		return NULL;
	nargs = py.PyTuple_New(n);
	if (!nargs) {
		py.Py_DecRef(list);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		item = i == 2 ? list : py.PyTuple_GetItem(args, i);
		if (i != 2)
			py.Py_IncRef(item);
		py.PyTuple_SetItem(nargs, i, item);
	}
	return nargs;
}

/* ---- socket creation ---- */

static int check_new(PyObject *args)
{
	long family = -1, type = -1, proto = -1;
	char msg[160], target[96];

	if (py.PyTuple_Size(args) < 4 ||
	    sb_arg_int(py.PyTuple_GetItem(args, 1), &family) < 0 ||
	    sb_arg_int(py.PyTuple_GetItem(args, 2), &type) < 0 ||
	    sb_arg_int(py.PyTuple_GetItem(args, 3), &proto) < 0)
		return refuse_msg("socket()", NULL,
				  "Guard socket creation DENIED: its arguments cannot be read.");
	snprintf(target, sizeof(target), "socket(%ld, %ld, %ld)", family, type,
		 proto);
	if (family == AF_PACKET || family == AF_NETLINK) {
		snprintf(msg, sizeof(msg),
			 "Guard socket creation DENIED: address family %s cannot be evaluated by a net= rule.",
			 family == AF_PACKET ? "AF_PACKET" : "AF_NETLINK");
		return refuse_msg(target, NULL, msg);
	}
	if (type != -1 && ((type & SOCK_TYPE_MASK) == SOCK_RAW ||
			   (type & SOCK_TYPE_MASK) == SOCK_PACKET)) {
		snprintf(msg, sizeof(msg),
			 "Guard socket creation DENIED: raw sockets (%s) cannot be evaluated by a net= rule.",
			 (type & SOCK_TYPE_MASK) == SOCK_RAW ? "SOCK_RAW"
							     : "SOCK_PACKET");
		return refuse_msg(target, NULL, msg);
	}
	/* ICMP "ping" sockets, SCTP...: not what TCP and UDP rules mean */
	if ((family == -1 || family == AF_INET || family == AF_INET6) &&
	    proto != -1 && proto != 0 && proto != IPPROTO_TCP &&
	    proto != IPPROTO_UDP && proto != IPPROTO_UDPLITE &&
	    proto != IPPROTO_MPTCP) {
		snprintf(msg, sizeof(msg),
			 "Guard socket creation DENIED: protocol %ld cannot be evaluated by a net= rule.",
			 proto);
		return refuse_msg(target, NULL, msg);
	}
	return 0;
}

/* ---- resolution and reverse lookups (events) ---- */

/* A forward lookup the wrappers did not answer (they pass literals and, when
 * some rule could allow it, unpinned names). */
static int check_resolution(PyObject *host_obj, PyObject *flags_obj)
{
	long flags = 0;

	char host[HOST_MAX];
	struct sb_addr a;
	int hk;

	if (!host_obj || host_obj == PY_NONE)
		return 0;
	hk = host_text(host_obj, host);
	if (hk == 0)
		return 0; /* CPython refuses it by itself */
	if (sb_arg_int(flags_obj, &flags) < 0)
		py.PyErr_Clear();
	if (flags & AI_NUMERICHOST)
		return 0; /* getaddrinfo asks nobody */
	if (hk == 1 && (sb_netname_resolver_literal(host, &a) || find_pin(host)))
		return 0;
	if (names_can_be_allowed())
		return 0;
	return refuse_resolution(host);
}

/* May the name of this address be asked: a rule names the address
 * (sb_net_reverse_allowed), or it is one the loopback names stand for. */
static bool reverse_allowed(const struct sb_addr *a)
{
	struct sb_addr c;

	sb_addr_canonical(a, &c);
	if ((c.family == AF_INET && !memcmp(c.bytes, sb_loop4.bytes, 4)) ||
	    (c.family == AF_INET6 && !memcmp(c.bytes, sb_loop6.bytes, 16)))
		return true;
	return sb_net_reverse_allowed(sb_g.policy, a);
}

/* gethostbyaddr(ip) and getnameinfo((ip, port), flags): a reverse query
 * carries the address's bits to whoever serves its zone, so it is asked
 * only for an address a rule names (E5, weakness 15). A name is first
 * resolved by CPython: it must be pinned. */
static int check_reverse(PyObject *host_obj)
{
	char host[HOST_MAX], add[HOST_MAX + 40];
	struct sb_buf b = { 0 };
	const struct sb_pin *pin = NULL;
	struct sb_addr a;
	size_t i;
	int hk = host_obj ? host_text(host_obj, host) : 0;

	if (hk == 0)
		return 0; /* not text: CPython raises TypeError */
	if (hk == 1 && sb_netname_resolver_literal(host, &a)) {
		if (reverse_allowed(&a))
			return 0;
	} else if (hk == 1 && (pin = find_pin(host)) != NULL) {
		for (i = 0; i < pin->n_addrs; i++)
			if (!reverse_allowed(&pin->addrs[i]))
				break;
		if (i == pin->n_addrs)
			return 0;
	}
	sb_buf_printf(&b,
		      "Guard reverse lookup of '%s' DENIED: no net= rule names this address. Name its host in a net= rule (net=ALLOW|TCP|<host>|<port>|OUT), or ask with NI_NUMERICHOST.",
		      host);
	snprintf(add, sizeof(add), "net=ALLOW|TCP|%s|<port>|OUT", host);
	return refuse_buf(host, add, &b);
}

/* Is getaddrinfo's port 'o' a service name, which glibc looks up in
 * /etc/services (a text strtoul does not read whole)? An int is a number;
 * text the guard cannot read (a NUL, too long) counts as a name. */
static bool service_name(PyObject *o)
{
	char buf[HOST_MAX], *end;

	if (!o || o == PY_NONE ||
	    py.PyObject_IsInstance(o, py.PyLong_Type) == 1) {
		py.PyErr_Clear();
		return false;
	}
	switch (host_text(o, buf)) {
	case 0:
		return false; /* CPython refuses it: "Int or String expected" */
	case 1:
		(void)strtoul(buf, &end, 10);
		return *end != '\0';
	default:
		return true;
	}
}

int sb_net_event(const char *event, PyObject *args)
{
	const char *e = event + 7; /* after "socket." */
	Py_ssize_t n = py.PyTuple_Size(args);
	PyObject *a0 = n > 0 ? py.PyTuple_GetItem(args, 0) : NULL;
	PyObject *a1 = n > 1 ? py.PyTuple_GetItem(args, 1) : NULL;

	sb_net_module_loaded(); /* in case an import went unseen */
	if (strcmp(e, "connect") == 0)
		return check_address(OP_CONNECT, a0, a1);
	if (strcmp(e, "bind") == 0)
		return check_address(OP_BIND, a0, a1);
	if (strcmp(e, "sendto") == 0)
		return check_address(OP_SENDTO, a0, a1);
	if (strcmp(e, "sendmsg") == 0)
		return check_address(OP_SENDMSG, a0, a1);
	if (strcmp(e, "__new__") == 0)
		return check_new(args);
	if (strcmp(e, "getaddrinfo") == 0) {
		if (check_resolution(a0, n > 5 ? py.PyTuple_GetItem(args, 5)
					       : NULL) < 0)
			return -1;
		/* a service name, even with AI_NUMERICSERV (the event of
		 * 3.11 carries no flags): /etc/services, as getservbyname */
		return service_name(a1) ? sb_sysfiles_services() : 0;
	}
	if (strcmp(e, "gethostbyname") == 0)
		return check_resolution(a0, NULL);
	if (strcmp(e, "gethostbyaddr") == 0)
		return check_reverse(a0);
	if (strcmp(e, "getnameinfo") == 0) {
		/* the flags, which the event does not carry, when the wrapper
		 * read them; else the worst: a service and a reverse query */
		long flags = permit_take(PERMIT_NAMEINFO_FLAGS) ? permit.flags
								: 0;

		if (!(flags & NI_NUMERICHOST) && a0 &&
		    py.PyObject_IsInstance(a0, py.PyTuple_Type) == 1 &&
		    py.PyTuple_Size(a0) >= 1 &&
		    check_reverse(py.PyTuple_GetItem(a0, 0)) < 0)
			return -1;
		return flags & NI_NUMERICSERV ? 0 : sb_sysfiles_services();
	}
	return 0;
}

/* ---- socket.socket methods: names stopped before CPython resolves ---- */

/* CPython resolves a host name in connect(), bind() and sendto() before it
 * raises the audit event, so an event alone cannot stop the query (E15) nor
 * make the connection go to the address it judged (E13). These wrappers on
 * socket.socket refuse an unpinned name and put the judged pinned address
 * in place of a pinned one; the events then judge that literal again. The C
 * class _socket.socket is still judged by the events, after its lookup. */

struct meth_wrap {
	const char *name;
	PyObject *(*call)(struct meth_wrap *m, PyObject *args);
	enum net_op op;
	int nargs[2]; /* accepted counts of arguments after self */
	int addr_at;  /* index of the address in args (self is 0); -1: last */
	PyObject *original;
	PyObject *fn;
	struct py_method_def def;
};

static PyObject *call_original(struct meth_wrap *m, PyObject *args)
{
	return py.PyObject_Call(m->original, args, NULL);
}

/* The address to pass on instead of 'addr' (a new reference), or NULL with
 * an exception (refused). */
static PyObject *address_for(enum net_op op, PyObject *sock, PyObject *addr)
{
	char host[HOST_MAX], lit[INET6_ADDRSTRLEN];
	const struct sb_addr *use = NULL;
	const struct sb_pin *pin;
	struct sock_info si;
	struct sb_addr a;
	PyObject *out, *item;
	Py_ssize_t i, n;
	unsigned kind;
	long port;
	int hk;
	size_t k;

	if (sock_info(op, sock, &si) < 0)
		return NULL;
	if (si.fd < 0 || (si.family != AF_INET && si.family != AF_INET6) ||
	    !inet_tuple(addr, si.family, host, &hk, &port) ||
	    (hk == 1 && sb_netname_socket_literal(si.family, host, &a))) {
		py.Py_IncRef(addr);
		return addr;
	}
	pin = hk == 1 ? find_pin(host) : NULL;
	if (!pin && sb_g.learning) {
		py.Py_IncRef(addr);
		return addr;
	}
	if (!pin) {
		refuse_unpinned(host, port < 0 ? 0 : (unsigned)port);
		return NULL;
	}
	/* a bad port: CPython reports it, with the literal, without a query */
	if (port >= 0) {
		kind = sock_kind(op, addr, &si);
		if (!kind ||
		    judge(kind, op == OP_BIND ? SB_NET_IN : SB_NET_OUT, host,
			  pin->addrs, pin->n_addrs, (unsigned)port) < 0)
			return NULL;
	}
	for (k = 0; k < pin->n_addrs && !use; k++)
		if (pin->addrs[k].family == si.family)
			use = &pin->addrs[k];
	if (!use) {
		raise_eai_again();
		return NULL;
	}
	n = py.PyTuple_Size(addr);
	out = py.PyTuple_New(n);
	if (!out)
		return NULL;
	py.PyTuple_SetItem(out, 0,
			   py.PyUnicode_FromString(addr_text(use, lit)));
	for (i = 1; i < n; i++) {
		item = py.PyTuple_GetItem(addr, i);
		py.Py_IncRef(item);
		py.PyTuple_SetItem(out, i, item);
	}
	return out;
}

/* Is the socket corked (UDP_CORK), or can that not be told? */
static bool udp_corked(int fd)
{
	socklen_t ol = sizeof(int);
	int v = 1;

	return getsockopt(fd, IPPROTO_UDP, 1 /* UDP_CORK */, &v, &ol) < 0 ||
	       v != 0;
}

/* sendto(data[, flags], address) of a UDP socket to port 53: the query
 * is read and judged (sb_dns_query_judge), then sent with arguments of
 * exact types under a permit for check_dns_port(). NULL with an exception,
 * or the result; *done false when this is not such a call. */
static PyObject *dns_sendto_call(struct meth_wrap *m, PyObject *args,
				 PyObject *addr, bool *done)
{
	char host[HOST_MAX], name[256], lit[INET6_ADDRSTRLEN];
	struct sb_buf b = { 0 };
	struct sock_info si;
	struct sb_addr a;
	PyObject *data, *nargs, *naddr, *res, *self;
	Py_ssize_t n = py.PyTuple_Size(args), len;
	long port, flags = 0;
	char *buf;
	int hk, r;

	*done = false;
	if (names_can_be_allowed() || sb_g.learning ||
	    sock_info(OP_SENDTO, py.PyTuple_GetItem(args, 0), &si) < 0 ||
	    si.fd < 0 || si.type != SOCK_DGRAM ||
	    (si.family != AF_INET && si.family != AF_INET6) ||
	    !inet_tuple(addr, si.family, host, &hk, &port) ||
	    port != SB_DNS_PORT || hk != 1 ||
	    !sb_netname_socket_literal(si.family, host, &a)) {
		py.PyErr_Clear();
		return NULL;
	}
	if (n == 4 && sb_arg_int(py.PyTuple_GetItem(args, 2), &flags) != 1) {
		py.PyErr_Clear();
		return NULL; /* CPython's TypeError, then the event refuses */
	}
	*done = true;
	if ((flags & MSG_MORE) || udp_corked(si.fd)) {
		/* the query would stay pending and a send() nobody judges
		 * would append to it */
		sb_buf_printf(&b,
			      "Guard sendto to port %ld DENIED: a corked datagram (MSG_MORE, UDP_CORK) is not a plain DNS query; unless net=ALLOW|UDP|*|53|OUT lets every name through, a query goes out alone.",
			      port);
		refuse_buf(host, every_query, &b);
		return NULL;
	}
	data = py.PyBytes_FromObject(py.PyTuple_GetItem(args, 1));
	if (!data)
		return NULL;
	if (py.PyBytes_AsStringAndSize(data, &buf, &len) < 0) {
		py.Py_DecRef(data);
		return NULL;
	}
	r = sb_dns_query_judge(sb_g.policy, buf, (size_t)len, name,
			       sizeof(name));
	if (r != 1) {
		py.Py_DecRef(data);
		if (r == 0) {
			char add[sizeof(name) + 40];

			sb_buf_printf(&b,
				      "Guard DNS query for '%s' DENIED: no net= rule names this host. Add net=ALLOW|TCP|%s|<port>|OUT to resolve and reach it (an address rule allows addresses, not lookups).",
				      name, name);
			snprintf(add, sizeof(add),
				 "net=ALLOW|TCP|%s|<port>|OUT", name);
			refuse_buf(name, add, &b);
		} else {
			sb_buf_printf(&b,
				      "Guard sendto to port %ld DENIED: not a plain DNS query of one name, which is all a program may send to a resolver unless net=ALLOW|UDP|*|53|OUT lets every name through.",
				      port);
			refuse_buf(host, every_query, &b);
		}
		return NULL;
	}
	naddr = py.PyTuple_New(2);
	nargs = py.PyTuple_New(n);
	if (!naddr || !nargs) {
		py.Py_DecRef(naddr);
		py.Py_DecRef(nargs);
		py.Py_DecRef(data);
		return NULL;
	}
	py.PyTuple_SetItem(naddr, 0,
			   py.PyUnicode_FromString(addr_text(&a, lit)));
	py.PyTuple_SetItem(naddr, 1, py.PyLong_FromLong(port));
	self = py.PyTuple_GetItem(args, 0);
	py.Py_IncRef(self);
	py.PyTuple_SetItem(nargs, 0, self);
	py.PyTuple_SetItem(nargs, 1, data);
	if (n == 4)
		py.PyTuple_SetItem(nargs, 2, py.PyLong_FromLong(flags));
	py.PyTuple_SetItem(nargs, n - 1, naddr);
	res = call_with_permit(m->original, nargs, PERMIT_DNS_QUERY);
	py.Py_DecRef(nargs);
	return res;
}

/* connect(address), connect_ex(address), bind(address),
 * sendto(data[, flags], address), sendmsg(buffers, ancdata, flags, address) */
static PyObject *addr_method_call(struct meth_wrap *m, PyObject *args)
{
	Py_ssize_t n = py.PyTuple_Size(args), at, i;
	PyObject *self, *addr, *naddr, *nargs, *res, *item;

	if (n - 1 != m->nargs[0] && n - 1 != m->nargs[1])
		return call_original(m, args); /* its own TypeError */
	at = m->addr_at < 0 ? n - 1 : m->addr_at;
	if (at >= n)
		return call_original(m, args); /* no address given */
	self = py.PyTuple_GetItem(args, 0);
	addr = py.PyTuple_GetItem(args, at);
	naddr = address_for(m->op, self, addr);
	if (!naddr)
		return NULL;
	if (m->op == OP_SENDTO) {
		bool done;

		res = dns_sendto_call(m, args, naddr, &done);
		if (done) {
			py.Py_DecRef(naddr);
			return res;
		}
	}
	if (naddr == addr) {
		py.Py_DecRef(naddr);
		return call_original(m, args);
	}
	nargs = py.PyTuple_New(n);
	if (!nargs) {
		py.Py_DecRef(naddr);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (i == at) {
			py.PyTuple_SetItem(nargs, i, naddr);
			continue;
		}
		item = py.PyTuple_GetItem(args, i);
		py.Py_IncRef(item);
		py.PyTuple_SetItem(nargs, i, item);
	}
	res = call_original(m, nargs);
	py.Py_DecRef(nargs);
	return res;
}

/* sendmsg(buffers[, ancdata[, flags[, address]]]): its control messages
 * read once and judged (sb_net_sendmsg_args), then its address. */
static PyObject *sendmsg_call(struct meth_wrap *m, PyObject *args)
{
	PyObject *nargs = sb_net_sendmsg_args(args), *res;

	if (!nargs)
		return NULL;
	res = py.PyTuple_Size(nargs) == 5 ? addr_method_call(m, nargs)
					  : call_original(m, nargs);
	py.Py_DecRef(nargs);
	return res;
}

/* listen() on an unbound socket: the kernel binds it to the wildcard
 * address on a port of its choice, a bind no event reports (E10). Judged
 * as bind(('', 0)). */
static PyObject *listen_call(struct meth_wrap *m, PyObject *args)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct sock_info si;
	struct sb_addr a = { 0 };
	unsigned kind;
	in_port_t port;
	PyObject *self;

	if (py.PyTuple_Size(args) < 1)
		return call_original(m, args);
	self = py.PyTuple_GetItem(args, 0);
	if (sock_info(OP_BIND, self, &si) < 0)
		return NULL;
	if (si.fd < 0 || (si.family != AF_INET && si.family != AF_INET6) ||
	    si.type != SOCK_STREAM)
		return call_original(m, args);
	if (getsockname((int)si.fd, (struct sockaddr *)&ss, &len) < 0)
		return call_original(m, args); /* listen reports it */
	port = ss.ss_family == AF_INET6
		       ? ((struct sockaddr_in6 *)&ss)->sin6_port
		       : ((struct sockaddr_in *)&ss)->sin_port;
	if (port != 0)
		return call_original(m, args); /* bound: bind was judged */
	a.family = si.family;
	kind = si.proto == IPPROTO_TCP || si.proto == IPPROTO_MPTCP
		       ? SB_NET_TCP
		       : 0;
	if (!kind) {
		char msg[128];

		snprintf(msg, sizeof(msg),
			 "Guard listen DENIED: socket protocol %d cannot be evaluated by a net= rule.",
			 si.proto);
		refuse_msg("listen()", NULL, msg);
		return NULL;
	}
	if (judge(kind, SB_NET_IN, NULL, &a, 1, 0) < 0)
		return NULL;
	return call_original(m, args);
}

#define METH(n, c, o, a, b, at)                                                \
	{ .name = n, .call = c, .op = o, .nargs = { a, b }, .addr_at = at }
static struct meth_wrap meth_wraps[] = {
	METH("connect", addr_method_call, OP_CONNECT, 1, 1, 1),
	METH("connect_ex", addr_method_call, OP_CONNECT, 1, 1, 1),
	METH("bind", addr_method_call, OP_BIND, 1, 1, 1),
	METH("sendto", addr_method_call, OP_SENDTO, 2, 3, -1),
	METH("sendmsg", sendmsg_call, OP_SENDMSG, 4, 4, 4),
	METH("listen", listen_call, OP_BIND, 0, 1, 0),
};
#undef METH

static PyObject *meth_trampoline(PyObject *self, PyObject *args,
				 PyObject *kwargs)
{
	struct meth_wrap *m = py.PyCapsule_GetPointer(self, "pysb.net.meth");

	if (!m)
		return NULL;
	if (sb_g.halted) {
		sb_guard_refuse_halted();
		return NULL;
	}
	if (!sb_g.armed || sb_guard_is_busy() ||
	    (kwargs && py.PyDict_Size(kwargs) > 0))
		return py.PyObject_Call(m->original, args, kwargs);
	return m->call(m, args);
}

/* Replace cls.<name> by a method (an instancemethod binds self, which a
 * builtin function would not). cls is _socket's C class: CPython resolves
 * a host name given to its connect, bind or sendto before it raises the
 * event, so a wrapper on socket.socket alone let
 * socket.socket.__mro__[1].connect(s, ("<secret>.example", 80)) send the
 * query (weaknesses.md 14); every subclass (socket.socket, ssl.SSLSocket)
 * reaches these through its bases. */
static int install_method(PyObject *cls, struct meth_wrap *m)
{
	PyObject *capsule, *cfn;

	if (m->fn)
		return 0;
	m->original = py.PyObject_GetAttrString(cls, m->name);
	if (!m->original) {
		py.PyErr_Clear();
		return 0;
	}
	m->def.ml_name = m->name;
	m->def.ml_meth = (void *)meth_trampoline;
	m->def.ml_flags = PY_METH_VARARGS | PY_METH_KEYWORDS;
	m->def.ml_doc = NULL;
	capsule = py.PyCapsule_New(m, "pysb.net.meth", NULL);
	if (!capsule)
		goto fail;
	cfn = py.PyCFunction_NewEx(&m->def, capsule, NULL);
	py.Py_DecRef(capsule);
	if (!cfn)
		goto fail;
	m->fn = py.PyInstanceMethod_New(cfn);
	py.Py_DecRef(cfn);
	if (!m->fn)
		goto fail;
	if (sb_wrap_set_on_class(cls, m->name, m->fn) < 0) {
		py.Py_DecRef(m->fn);
		m->fn = NULL;
		goto fail;
	}
	return 0;
fail:
	py.Py_DecRef(m->original);
	m->original = NULL;
	return -1;
}

static bool known_class(PyObject *cls)
{
	const struct sb_net_copy *c;

	if (cls == sb_g.net.c_socket_class)
		return true;
	for (c = sb_g.net.copies; c; c = c->next)
		if (cls == c->cls)
			return true;
	return false;
}

/* A copy of _socket made outside sys.modules (module_from_spec, then
 * exec_module): from 3.12 on _socket is a multi-phase module whose exec
 * makes its class anew, one without the wrappers, on which a name given
 * to connect was resolved before the event (weaknesses.md 14). It gets a
 * set of its own; the class a single-phase copy shares is wrapped
 * already, and the import's own module is install()'s. A copy refused
 * here is emptied by the caller (exec_module_call). */
int sb_net_adopt_module(PyObject *mod, const char *as)
{
	PyObject *mods, *cls, *fileno = NULL;
	struct meth_wrap *set;
	struct sb_net_copy *copy;
	size_t i;

	if (strcmp(as, "_socket") != 0 || !sb_g.policy)
		return 0;
	mods = py.PyImport_GetModuleDict();
	if (mods && py.PyDict_GetItemString(mods, "_socket") == mod)
		return 0;
	cls = py.PyObject_GetAttrString(mod, "socket");
	if (cls && known_class(cls)) {
		py.Py_DecRef(cls);
		return 0;
	}
	fileno = cls ? py.PyObject_GetAttrString(cls, "fileno") : NULL;
	if (!fileno || !c_method_of(fileno, cls)) {
		py.Py_DecRef(fileno);
		py.Py_DecRef(cls);
		py.PyErr_Clear();
		py.PyErr_SetString(PY_EXC(PyExc_RuntimeError),
				   "python-sb: this copy of _socket is refused: "
				   "its socket class cannot carry the network "
				   "guard's checks");
		return -1;
	}
	set = sb_arena_alloc(sb_g.arena, sizeof(meth_wraps));
	for (i = 0; i < SB_ARRAY_LEN(meth_wraps); i++) {
		set[i] = (struct meth_wrap){ .name = meth_wraps[i].name,
					     .call = meth_wraps[i].call,
					     .op = meth_wraps[i].op,
					     .nargs = { meth_wraps[i].nargs[0],
							meth_wraps[i].nargs[1] },
					     .addr_at = meth_wraps[i].addr_at };
		if (install_method(cls, &set[i]) < 0)
			break;
	}
	if (i < SB_ARRAY_LEN(meth_wraps)) {
		py.Py_DecRef(fileno);
		py.Py_DecRef(cls);
		return -1;
	}
	/* kept for the life of the process, as the interpreter's class */
	copy = sb_arena_alloc(sb_g.arena, sizeof(*copy));
	*copy = (struct sb_net_copy){ cls, fileno, sb_g.net.copies };
	sb_g.net.copies = copy;
	return 0;
}

/* ---- resolver wrappers (_socket; socket holds the same objects) ---- */

/* getaddrinfo(host, port, family=0, type=0, proto=0, flags=0) */
static const char *const gai_params[] = { "host",  "port",  "family",
					  "type",  "proto", "flags" };

static PyObject *gai_answer(struct sb_wrap *w, const char *host,
			    const struct sb_pin *pin, PyObject *const *argv,
			    long family, long flags)
{
	char lit[INET6_ADDRSTRLEN];
	PyObject *all, *args, *res, *first, *fixed, *item;
	Py_ssize_t i, n;
	size_t k;
	int j;

	all = py.PyList_New(0);
	if (!all)
		return NULL;
	for (k = 0; k < pin->n_addrs; k++) {
		if (family && pin->addrs[k].family != family)
			continue;
		args = py.PyTuple_New(6);
		if (!args)
			goto fail;
		addr_text(&pin->addrs[k], lit);
		py.PyTuple_SetItem(args, 0, py.PyUnicode_FromString(lit));
		for (j = 1; j < 6; j++) {
			item = argv[j] ? argv[j] : py.PyLong_FromLong(0);
			if (argv[j])
				py.Py_IncRef(item);
			py.PyTuple_SetItem(args, j, item);
		}
		res = sb_wrap_call_original(w, args, NULL);
		py.Py_DecRef(args);
		if (!res)
			goto fail;
		n = py.PyList_Size(res);
		for (i = 0; i < n; i++) {
			item = py.PyList_GetItem(res, i);
			if (py.PyList_Append(all, item) < 0) {
				py.Py_DecRef(res);
				goto fail;
			}
		}
		py.Py_DecRef(res);
	}
	all = pinned_answer(all);
	if (!all)
		return NULL;
	/* the canonical name of a literal is the literal: give the name */
	first = py.PyList_GetItem(all, 0);
	if ((flags & AI_CANONNAME) && py.PyTuple_Size(first) == 5) {
		fixed = py.PyTuple_New(5);
		if (!fixed)
			goto fail;
		for (j = 0; j < 5; j++) {
			item = j == 3 ? py.PyUnicode_FromString(host)
				      : py.PyTuple_GetItem(first, j);
			if (j != 3)
				py.Py_IncRef(item);
			py.PyTuple_SetItem(fixed, j, item);
		}
		/* PyList_SetItem is not in the table: rebuild the head */
		args = py.PyList_New(0);
		if (!args || py.PyList_Append(args, fixed) < 0) {
			py.Py_DecRef(fixed);
			py.Py_DecRef(args);
			goto fail;
		}
		py.Py_DecRef(fixed);
		n = py.PyList_Size(all);
		for (i = 1; i < n; i++)
			if (py.PyList_Append(args, py.PyList_GetItem(all, i)) <
			    0) {
				py.Py_DecRef(args);
				goto fail;
			}
		py.Py_DecRef(all);
		all = args;
	}
	return all;
fail:
	py.Py_DecRef(all);
	return NULL;
}

/* Learning: a name looked up. Learned as a rule that names it with no
 * port (it resolves, and reaches nothing), unless a connection to it is
 * learned too (learn_rules.c): a lookup with no connection (a check that
 * the name exists, gethostbyname) was not learned at all, and the
 * enforcing run refused it. */
static int learn_lookup(const char *host)
{
	return sb_learn_record("net", "tcp", "out", "0.0.0.0", "-", host,
			       NULL);
}

/* The port of a getaddrinfo() call: an int, a number or a service name
 * (looked up as the resolver would), else -1 (None: no port). */
static long gai_port(PyObject *o, bool udp)
{
	char buf[HOST_MAX], *end;
	struct servent *se;
	long port = -1;
	int hk;

	if (!o || o == PY_NONE)
		return -1;
	if (sb_arg_int(o, &port) == 1)
		return port >= 0 && port <= 65535 ? port : -1;
	py.PyErr_Clear();
	hk = host_text(o, buf);
	if (hk != 1 || !buf[0] || strlen(buf) >= sizeof(buf))
		return -1;
	port = strtol(buf, &end, 10);
	if (!*end)
		return port >= 0 && port <= 65535 ? port : -1;
	se = getservbyname(buf, udp ? "udp" : "tcp");
	return se ? (long)ntohs((uint16_t)se->s_port) : -1;
}

/* Learning: a name that did not resolve while learning (socket.gaierror:
 * offline, a resolver down) is still a name the program asked for. The
 * rule that names it lets the enforcing run resolve it (and reach it, on
 * that port) when it does resolve; nothing was learned before, and the
 * lookup was refused, not answered. The exception stays as it was. */
static int learn_failed_lookup(const char *host, PyObject *port_arg,
			       PyObject *type_arg)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *mod = mods ? py.PyDict_GetItemString(mods, "_socket") : NULL;
	PyObject *cls, *et, *ev, *tb;
	char pbuf[24];
	long type = 0, port;
	int r = 0;

	/* no call with the exception pending: set it aside first */
	py.PyErr_Fetch(&et, &ev, &tb);
	cls = mod ? py.PyObject_GetAttrString(mod, "gaierror") : NULL;
	if (!cls || !et || !py.PyErr_GivenExceptionMatches(et, cls))
		goto out;
	if (sb_arg_int(type_arg, &type) < 0)
		py.PyErr_Clear();
	port = gai_port(port_arg, type == SOCK_DGRAM);
	if (port > 0) {
		snprintf(pbuf, sizeof(pbuf), "%ld", port);
		if (sb_learn_record("net", type == SOCK_DGRAM ? "udp" : "tcp",
				    "out", "0.0.0.0", pbuf, host, NULL) < 0)
			r = -1;
	} else if (learn_lookup(host) < 0) {
		r = -1;
	}
out:
	py.Py_DecRef(cls);
	py.PyErr_Clear();
	py.PyErr_Restore(et, ev, tb);
	if (r < 0) {
		sb_guard_refuse_halted();
		return -1;
	}
	return 0;
}

static PyObject *getaddrinfo_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	PyObject *argv[6] = { 0 };
	Py_ssize_t n = py.PyTuple_Size(args), found = 0;
	char host[HOST_MAX];
	const struct sb_pin *pin;
	struct sb_addr a;
	long family = 0, flags = 0;
	int i, hk;

	if (n > 6)
		return sb_wrap_call_original(w, args, kwargs);
	for (i = 0; i < 6; i++) {
		if (i < n) {
			argv[i] = py.PyTuple_GetItem(args, i);
		} else if ((argv[i] = sb_kwarg(kwargs, gai_params[i]))) {
			found++;
		}
	}
	/* unknown or doubled keywords, a missing argument: CPython's error */
	if ((kwargs && py.PyDict_Size(kwargs) != found) || !argv[0] ||
	    !argv[1])
		return sb_wrap_call_original(w, args, kwargs);
	if (argv[0] == PY_NONE)
		return sb_wrap_call_original(w, args, kwargs);
	hk = host_text(argv[0], host);
	if (hk == 0)
		return sb_wrap_call_original(w, args, kwargs);
	if (sb_arg_int(argv[2], &family) < 0 || sb_arg_int(argv[5], &flags) < 0)
		return NULL;
	if (hk == 1 && sb_netname_resolver_literal(host, &a))
		return sb_wrap_call_original(w, args, kwargs);
	pin = hk == 1 ? find_pin(host) : NULL;
	if (pin && !(flags & AI_NUMERICHOST)) {
		PyObject *res = gai_answer(w, host, pin, argv, family, flags);

		if (res && sb_g.learning)
			note_resolution(host, res);
		return res;
	}
	if (sb_g.learning && hk == 1) {
		/* learning: resolve, and remember which name each address
		 * came from, so that the rule names the host (4.3) */
		PyObject *res = sb_wrap_call_original(w, args, kwargs);

		if (res) {
			note_resolution(host, res);
			if (learn_lookup(host) < 0) {
				py.Py_DecRef(res);
				sb_guard_refuse_halted();
				return NULL;
			}
		} else if (learn_failed_lookup(host, argv[1], argv[3]) < 0) {
			return NULL;
		}
		return res;
	}
	if (pin || names_can_be_allowed())
		return sb_wrap_call_original(w, args, kwargs);
	if (hk == 1 && sb_net_unresolved(sb_g.policy, host)) {
		/* a rule names it, and it had no address when the rules
		 * were read: the resolver's answer, not a refusal */
		raise_gai(EAI_NONAME);
		return NULL;
	}
	refuse_resolution(host);
	return NULL;
}

/* The pinned IPv4 addresses of a name (gethostbyname answers IPv4 only). */
static PyObject *pinned_v4_list(const struct sb_pin *pin)
{
	char lit[INET6_ADDRSTRLEN];
	PyObject *list = py.PyList_New(0), *s;
	size_t k;

	if (!list)
		return NULL;
	for (k = 0; k < pin->n_addrs; k++) {
		if (pin->addrs[k].family != AF_INET)
			continue;
		s = py.PyUnicode_FromString(addr_text(&pin->addrs[k], lit));
		if (!s || py.PyList_Append(list, s) < 0) {
			py.Py_DecRef(s);
			py.Py_DecRef(list);
			return NULL;
		}
		py.Py_DecRef(s);
	}
	return pinned_answer(list);
}

/* gethostbyname(host) and gethostbyname_ex(host). NULL result with no
 * exception set: not ours to answer, call the original. */
static const struct sb_pin *byname_pin(PyObject *args, PyObject *kwargs,
				       bool ex, char host[HOST_MAX],
				       int *refused)
{
	struct sb_addr a;
	int hk;

	*refused = 0;
	if (py.PyTuple_Size(args) != 1 || kwargs)
		return NULL;
	hk = host_text(py.PyTuple_GetItem(args, 0), host);
	if (hk == 0 || (hk == 1 && (ex ? sb_netname_strict_literal(host, &a)
				       : sb_netname_resolver_literal(host, &a))))
		return NULL;
	if (hk == 1 && find_pin(host))
		return find_pin(host);
	if (sb_g.learning) {
		if (hk == 1 && learn_lookup(host) < 0) {
			*refused = 1;
			sb_guard_refuse_halted();
		}
		return NULL;
	}
	if (!names_can_be_allowed()) {
		*refused = 1;
		if (hk == 1 && sb_net_unresolved(sb_g.policy, host))
			raise_gai(EAI_NONAME);
		else
			refuse_resolution(host);
	}
	return NULL;
}

/* (host, [], [addresses]): gethostbyname_ex's answer; 'list' is taken. */
static PyObject *byname_ex_answer(const char *host, PyObject *list)
{
	PyObject *aliases = py.PyList_New(0);
	PyObject *res = aliases ? py.PyTuple_New(3) : NULL;

	if (!res) {
		py.Py_DecRef(aliases);
		py.Py_DecRef(list);
		return NULL;
	}
	py.PyTuple_SetItem(res, 0, py.PyUnicode_FromString(host));
	py.PyTuple_SetItem(res, 1, aliases);
	py.PyTuple_SetItem(res, 2, list);
	return res;
}

/* gethostbyname(host) answers the first pinned IPv4 address,
 * gethostbyname_ex(host) all of them. */
static PyObject *byname_call(struct sb_wrap *w, PyObject *args,
			     PyObject *kwargs, bool ex)
{
	char host[HOST_MAX];
	const struct sb_pin *pin;
	PyObject *list, *res;
	int refused;

	pin = byname_pin(args, kwargs, ex, host, &refused);
	if (refused)
		return NULL;
	if (!pin)
		return sb_wrap_call_original(w, args, kwargs);
	list = pinned_v4_list(pin);
	if (!list)
		return NULL;
	if (ex)
		return byname_ex_answer(host, list);
	res = py.PyList_GetItem(list, 0);
	py.Py_IncRef(res);
	py.Py_DecRef(list);
	return res;
}

static PyObject *gethostbyname_call(struct sb_wrap *w, PyObject *args,
				    PyObject *kwargs)
{
	return byname_call(w, args, kwargs, false);
}

static PyObject *gethostbyname_ex_call(struct sb_wrap *w, PyObject *args,
				       PyObject *kwargs)
{
	return byname_call(w, args, kwargs, true);
}

/* getnameinfo(sockaddr, flags): with NI_NUMERICHOST no query is made, with
 * NI_NUMERICSERV no service name is looked up (/etc/services), but its
 * event does not carry the flags: pass them as an exact int (no Python
 * code between here and the event) with a permit that carries them. */
static PyObject *getnameinfo_call(struct sb_wrap *w, PyObject *args,
				  PyObject *kwargs)
{
	PyObject *nargs, *sa, *res;
	long flags;

	if (kwargs || py.PyTuple_Size(args) != 2 ||
	    sb_arg_int(py.PyTuple_GetItem(args, 1), &flags) != 1) {
		py.PyErr_Clear();
		return sb_wrap_call_original(w, args, kwargs);
	}
	nargs = py.PyTuple_New(2);
	if (!nargs)
		return NULL;
	sa = py.PyTuple_GetItem(args, 0);
	py.Py_IncRef(sa);
	py.PyTuple_SetItem(nargs, 0, sa);
	py.PyTuple_SetItem(nargs, 1, py.PyLong_FromLong(flags));
	res = call_with_permit_flags(w->original, nargs,
				     PERMIT_NAMEINFO_FLAGS, flags);
	py.Py_DecRef(nargs);
	return res;
}

static struct sb_wrap resolver_wraps[] = {
	{ .module = "_socket", .attr = "getnameinfo", .also = "socket",
	  .call = getnameinfo_call },
	{ .module = "_socket", .attr = "getaddrinfo", .also = "socket",
	  .call = getaddrinfo_call },
	{ .module = "_socket", .attr = "gethostbyname", .also = "socket",
	  .call = gethostbyname_call },
	{ .module = "_socket", .attr = "gethostbyname_ex", .also = "socket",
	  .call = gethostbyname_ex_call },
};

/* ---- installation ---- */

/* socket.py copies _socket's functions with 'from _socket import *': when it
 * ran before our wrapper existed, point its names at the wrapper too. */
static int sync_socket_module(PyObject *mod, struct sb_wrap *w)
{
	PyObject *cur = py.PyObject_GetAttrString(mod, w->attr);
	int r = 0;

	if (!cur) {
		py.PyErr_Clear();
		return 0;
	}
	if (cur == w->original)
		r = py.PyObject_SetAttrString(mod, w->attr, w->fn);
	py.Py_DecRef(cur);
	return r;
}

static int install(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *c_mod, *s_mod;
	size_t i;

	if (sb_g.net.all_installed || !mods)
		return 0;
	c_mod = py.PyDict_GetItemString(mods, "_socket");
	s_mod = py.PyDict_GetItemString(mods, "socket");
	if (c_mod) {
		if (capture_socket_class() < 0)
			return -1;
		for (i = 0; i < SB_ARRAY_LEN(meth_wraps); i++)
			if (install_method(sb_g.net.c_socket_class,
					   &meth_wraps[i]) < 0)
				return -1;
		for (i = 0; i < SB_ARRAY_LEN(resolver_wraps); i++)
			if (sb_wrap_install(&resolver_wraps[i]) < 0)
				return -1;
	}
	if (c_mod && s_mod && !sb_g.net.socket_synced) {
		for (i = 0; i < SB_ARRAY_LEN(resolver_wraps); i++)
			if (resolver_wraps[i].fn &&
			    sync_socket_module(s_mod, &resolver_wraps[i]) < 0)
				return -1;
		sb_g.net.socket_synced = true;
	}
	sb_g.net.all_installed = c_mod && s_mod && sb_g.net.socket_synced &&
				 meth_wraps[0].fn;
	return 0;
}

void sb_net_module_loaded(void)
{
	PyObject *t, *v, *tb;

	if (sb_g.net.all_installed || !sb_g.policy)
		return;
	/* keep a pending exception of the caller's intact */
	py.PyErr_Fetch(&t, &v, &tb);
	if (install() < 0) /* no event of its own: not busy */
		py.PyErr_Clear(); /* the events still judge every address */
	py.PyErr_Restore(t, v, tb);
}

int sb_net_arm(void)
{
	return install();
}
