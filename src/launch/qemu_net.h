/* qemu_net.h - the network of os-sandbox=qemu with net= rules
 * (qemu_net.c): the guest's one network card is a virtio-net device whose
 * back end is passt, a user-mode stack on the host, over a socket pair; no
 * bridge, no tap device, nothing of the host forwarded in. passt runs under
 * a host Landlock ruleset that lets it connect only to the TCP ports the
 * rules name and bind none; inside the guest, python-sb's network
 * supervisor judges every connect, bind and send by the rules, as under
 * os-sandbox=landlock. Launcher-setup code: it prints its errors and
 * returns python-sb's exit status.
 */
#ifndef SB_QEMU_NET_H
#define SB_QEMU_NET_H

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"

/* The guest's address, its network's prefix length and its gateway (passt,
 * which answers for every address outside the network): what the guest's
 * init configures (the run record's "net" entry). */
#define SB_QEMU_NET_ADDR "10.0.2.15"
#define SB_QEMU_NET_PREFIX "24"
#define SB_QEMU_NET_GW "10.0.2.2"

struct sb_qemu_net {
	pid_t pid;    /* passt; 0: none */
	int qemu_fd;  /* qemu's end of the socket pair, for -netdev; -1 */
};

/* Start passt on one end of a new socket pair; n->qemu_fd is the other
 * end, close-on-exec (qemu's child clears the flag). Returns 0, or 255
 * after a message (passt missing, no Landlock for its ruleset, fork). */
int sb_qemu_net_start(struct sb_arena *a, const struct sb_policy *p,
		      struct sb_qemu_net *n);

/* End passt and close qemu's end if still open (nothing on a zeroed or
 * stopped one: pid 0). */
void sb_qemu_net_stop(struct sb_qemu_net *n);

#endif
