/* selfport.h - the ports a sandbox listens on (net= port 'self'). */
#ifndef SB_SELFPORT_H
#define SB_SELFPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Is 'port' a TCP port on which 'root', or a process below it, holds a
 * listening socket? false when it cannot be told. */
bool sb_self_port(uint16_t port, pid_t root);

/* Does this process hold a listening TCP socket on 'port'? Its own
 * descriptors only: no /proc needed. */
bool sb_self_port_own(uint16_t port);

#endif
