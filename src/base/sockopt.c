/* sockopt.c - the socket options a sandboxed program may set (sockopt.h).
 * Options that tune the program's own socket. Never IP_OPTIONS (source
 * routing), IP_HDRINCL, IP_TRANSPARENT, IP_FREEBIND, IPV6 routing or
 * hop-by-hop headers, IPV6_PKTINFO (a source address), SO_BINDTODEVICE,
 * socket filters, TCP_ULP (kernel TLS), TCP_MD5SIG, TCP_REPAIR,
 * UDP_ENCAP, nor a multicast group's membership: joining one sends an IGMP
 * or MLD report carrying the group's address (28 or 112 bits of the
 * program's choice) on the local network, which no net= rule judges, nor
 * SO_ZEROCOPY: a sendmsg goes through the supervisor, which sends a copy
 * (never with MSG_ZEROCOPY: netsup.c), so its completions would never come
 * (attack K33). Pure: no system call.
 */
#include "sockopt.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "util.h"

const struct sb_sockopt sb_sockopt_ok[] = {
	{ SOL_SOCKET, SO_REUSEADDR },	 { SOL_SOCKET, SO_REUSEPORT },
	{ SOL_SOCKET, SO_KEEPALIVE },	 { SOL_SOCKET, SO_BROADCAST },
	{ SOL_SOCKET, SO_SNDBUF },	 { SOL_SOCKET, SO_RCVBUF },
	{ SOL_SOCKET, SO_LINGER },	 { SOL_SOCKET, SO_OOBINLINE },
	{ SOL_SOCKET, SO_PASSCRED },	 { SOL_SOCKET, SO_RCVLOWAT },
	{ SOL_SOCKET, SO_SNDLOWAT },	 { SOL_SOCKET, 20 },
	{ SOL_SOCKET, 21 },		 { SOL_SOCKET, 66 },
	{ SOL_SOCKET, 67 }, /* SO_{RCV,SND}TIMEO old and new */
	{ SOL_SOCKET, SO_TIMESTAMP },	 { SOL_SOCKET, SO_TIMESTAMPNS },
	{ SOL_SOCKET, SO_PRIORITY },	 { SOL_SOCKET, SO_DONTROUTE },
	{ SOL_SOCKET, SO_INCOMING_CPU },
	{ SOL_SOCKET, SO_PASSSEC },	 { SOL_SOCKET, SO_NO_CHECK },
	{ IPPROTO_IP, IP_TOS },		 { IPPROTO_IP, IP_TTL },
	{ IPPROTO_IP, IP_RECVERR },	 { IPPROTO_IP, IP_MTU_DISCOVER },
	{ IPPROTO_IP, IP_MULTICAST_IF }, { IPPROTO_IP, IP_MULTICAST_TTL },
	{ IPPROTO_IP, IP_MULTICAST_LOOP },
	{ IPPROTO_IP, IP_PKTINFO },	 { IPPROTO_IP, IP_RECVTOS },
	{ IPPROTO_IP, IP_RECVTTL },
	{ IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT },
	{ IPPROTO_IPV6, IPV6_V6ONLY },
	{ IPPROTO_IPV6, IPV6_UNICAST_HOPS },
	{ IPPROTO_IPV6, IPV6_MULTICAST_IF },
	{ IPPROTO_IPV6, IPV6_MULTICAST_HOPS },
	{ IPPROTO_IPV6, IPV6_MULTICAST_LOOP },
	{ IPPROTO_IPV6, IPV6_RECVPKTINFO },
	{ IPPROTO_IPV6, IPV6_RECVERR },
	{ IPPROTO_IPV6, IPV6_MTU_DISCOVER },
	{ IPPROTO_IPV6, IPV6_TCLASS },
	{ IPPROTO_IPV6, IPV6_RECVTCLASS },
	{ IPPROTO_IPV6, IPV6_DONTFRAG },
	/* TCP's and UDP's own tuning */
	{ IPPROTO_TCP, TCP_NODELAY },	   { IPPROTO_TCP, TCP_MAXSEG },
	{ IPPROTO_TCP, TCP_CORK },	   { IPPROTO_TCP, TCP_KEEPIDLE },
	{ IPPROTO_TCP, TCP_KEEPINTVL },	   { IPPROTO_TCP, TCP_KEEPCNT },
	{ IPPROTO_TCP, TCP_SYNCNT },	   { IPPROTO_TCP, TCP_LINGER2 },
	{ IPPROTO_TCP, TCP_DEFER_ACCEPT },
	{ IPPROTO_TCP, TCP_WINDOW_CLAMP },
	{ IPPROTO_TCP, TCP_QUICKACK },	   { IPPROTO_TCP, TCP_CONGESTION },
	{ IPPROTO_TCP, TCP_USER_TIMEOUT }, { IPPROTO_TCP, TCP_FASTOPEN },
	{ IPPROTO_TCP, TCP_NOTSENT_LOWAT },
	{ IPPROTO_TCP, 30 /* TCP_FASTOPEN_CONNECT */ },
	{ IPPROTO_UDP, 1 /* UDP_CORK */ },
	{ IPPROTO_UDP, 103 /* UDP_SEGMENT */ },
	{ IPPROTO_UDP, 104 /* UDP_GRO */ },
};

const size_t sb_sockopt_ok_len = SB_ARRAY_LEN(sb_sockopt_ok);

bool sb_sockopt_allowed(int level, int name)
{
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(sb_sockopt_ok); i++)
		if (sb_sockopt_ok[i].level == level &&
		    sb_sockopt_ok[i].name == name)
			return true;
	return false;
}

/* The ancillary data a send may carry: descriptors, and at IP level its
 * own TOS, TTL, traffic class, hop limit, fragmentation and GSO size.
 * Never SCM_CREDENTIALS (sent by the supervisor, they would be its own;
 * as root, any), SO_MARK or SO_PRIORITY (routing by mark), SCM_TXTIME,
 * IP_RETOPTS or IPv6 routing, hop-by-hop or destination headers (source
 * routing past the judged address), nor IP(V6)_PKTINFO (another source
 * address or interface). */
bool sb_cmsg_allowed(int level, int type)
{
	switch (level) {
	case SOL_SOCKET:
		return type == SCM_RIGHTS;
	case IPPROTO_IP:
		return type == IP_TOS || type == IP_TTL;
	case IPPROTO_IPV6:
		return type == IPV6_TCLASS || type == IPV6_HOPLIMIT ||
		       type == IPV6_DONTFRAG;
	case IPPROTO_UDP:
		return type == 103; /* UDP_SEGMENT */
	default:
		return false;
	}
}
