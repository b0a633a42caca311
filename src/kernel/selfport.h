/* selfport.h - the ports a sandbox listens on (net= port 'self'). */
#ifndef SB_SELFPORT_H
#define SB_SELFPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

/* Does a TCP connection (type SOCK_STREAM) or a datagram (SOCK_DGRAM: a
 * UDP socket bound to the port takes it) to 'dest' port 'port' reach
 * 'root' or a process below it: for every address the kernel connects to for 'dest'
 * (sb_addr_destinations), some listening socket on that port takes it
 * (bound to it or to a wildcard) and every such socket is held by the
 * tree? A listener of the sandbox on another address with the same port
 * number does not make another process's listener 'self'. false when it
 * cannot be told. */
bool sb_self_port(int type, const struct sb_addr *dest, uint16_t port,
		  pid_t root);

/* A bind of a socket of 'type' (SOCK_STREAM, SOCK_DGRAM) to 'local' port
 * 'port' that shares the port (SO_REUSEPORT; SO_REUSEADDR for UDP) would
 * take traffic from every socket already there: is one of them, bound to
 * the same address or either side a wildcard (a TCP listener or a socket
 * bound to become one; any UDP socket), held by no process of the tree
 * under 'root'? A host service's port is then not the program's to
 * share. 1 yes, 0 no (and for port 0), -1 when it cannot be told (the
 * tables cannot be read: under Landlock, from inside). */
int sb_port_held_outside(int type, const struct sb_addr *local,
			 uint16_t port, pid_t root);

/* Does this process hold a listening TCP socket that takes a connection to
 * 'dest' port 'port' (bound to each address the kernel connects to, or
 * to a wildcard that takes it)? Its own descriptors only: no /proc
 * needed. */
bool sb_self_port_own(int type, const struct sb_addr *dest, uint16_t port);

#endif
