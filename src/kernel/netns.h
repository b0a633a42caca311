/* netns.h - the network of its own that os-sandbox=unshare and bwrap give a
 * program with net= rules (netns.c): a new network namespace whose only
 * way out is pasta, a user-mode stack started on the host, with the ports
 * of the host's loopback that the rules name forwarded into it and nothing
 * else of the host's loopback. The network supervisor inside still judges
 * every connect, bind and send (netsup.h). Launcher-setup code: it prints
 * its errors and returns python-sb's exit status; the pure half (the
 * ports, the explanation) is netns_plan.c.
 */
#ifndef SB_NETNS_H
#define SB_NETNS_H

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"

/* At most this many ports of the host's loopback are forwarded per
 * protocol: pasta listens on each inside the namespace. */
#define SB_NETNS_MAX_PORTS 1024

/* What the namespace reaches of the host's loopback: pasta's -T and -U
 * specs ("none", or "8080,9000-9010"), the ports an ALLOW rule for OUT to
 * 127.0.0.0/8 or ::1 names, less the ports an ALLOW rule for IN names
 * (the program's own servers, which it binds inside; an IN rule for every
 * port names none). Pure. 0, or -1 with
 * *err naming the rule that names too many ports. */
int sb_netns_plan(struct sb_arena *a, const struct sb_policy *p,
		  const char **tcp, const char **udp, const char **err);

/* Does a bwrap.share-net=yes (or bwrap.unshare-net=no) rule put a bwrap
 * run on the host's network? Otherwise bwrap gives it a network namespace
 * of its own, with pasta when there are net= rules. Pure. */
bool sb_netns_bwrap_shared(const struct sb_policy *p);

/* Does a firejail run get the namespace network: net= rules, no
 * firejail.net= (firejail's own bridge), and python-sb run as root, which
 * can make the network namespace that firejail, exec'd into it, keeps
 * (firejail is setuid: a user namespace ignores it). Otherwise firejail
 * keeps the host's network. Pure. */
bool sb_netns_firejail_own(const struct sb_policy *p, bool root);

/* One paragraph for --pysandboxes-explain: which stack and what the
 * namespace reaches under this provider (pure). */
const char *sb_netns_explain(struct sb_arena *a, const struct sb_policy *p,
			     const char *provider);

/* The stack of one run: forked before the namespace exists (on the host's
 * network), told the namespace's process later. */
struct sb_netns {
	pid_t pid;       /* the launcher, then pasta itself; 0: none */
	int pidfd;       /* of the same process, to end it; -1 */
	int go;          /* the target's pid is written here */
	int dirfd;       /* the private directory of the pid file, the log */
	const char *dir; /* its path, removed by sb_netns_stop */
};

/* Find pasta, plan the ports and fork the launcher, which waits for
 * sb_netns_attach. 0, or 255 after a message naming the package or the
 * rule (nothing started then). Call it before any namespace is entered
 * and before the signals are blocked. */
int sb_netns_prepare(struct sb_arena *a, const struct sb_policy *p,
		     const char *provider, struct sb_netns *n);

/* Start pasta on the network namespace of 'target' (and its user
 * namespace when python-sb is not root) and wait until the namespace is
 * configured. 0, or 255 after a message with pasta's own (the caller ends
 * the run: nothing of the program may start). */
int sb_netns_attach(struct sb_netns *n, pid_t target, const char *provider);

/* End pasta and remove its files; safe on a zeroed or failed one. */
void sb_netns_stop(struct sb_netns *n);

#endif
