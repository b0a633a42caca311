/* selfport.h - the ports a sandbox listens on (net= port 'self'). */
#ifndef SB_SELFPORT_H
#define SB_SELFPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

/* Does a TCP connection to 'dest' port 'port' reach 'root' or a process
 * below it: for every address the kernel connects to for 'dest'
 * (sb_addr_destinations), some listening socket on that port takes it
 * (bound to it or to a wildcard) and every such socket is held by the
 * tree? A listener of the sandbox on another address with the same port
 * number does not make another process's listener 'self'. false when it
 * cannot be told. */
bool sb_self_port(const struct sb_addr *dest, uint16_t port, pid_t root);

/* Does this process hold a listening TCP socket that takes a connection to
 * 'dest' port 'port' (bound to each address the kernel connects to, or
 * to a wildcard that takes it)? Its own descriptors only: no /proc
 * needed. */
bool sb_self_port_own(const struct sb_addr *dest, uint16_t port);

#endif
