/* SPDX-License-Identifier: Apache-2.0 */
/* lwipopts.h - the options tickstack builds lwIP 2.1.3 with (Debian's lwip
 * source package, compiled by dataplane/Makefile into build/liblwip-ts.a and
 * linked into libtickstack.so; docs/dataplane-design.md, "The lwIP build").
 *
 * The values are those of Debian's liblwip0 build (its port's lwipopts.h,
 * installed as /usr/include/lwip/lwipopts.h by liblwip-dev), so that lwIP
 * behaves as it did when the library linked Debian's liblwip0, with these
 * changes: LWIP_TCP_TIMESTAMPS is on, initial sequence numbers come from
 * tickstack's RFC 6528 hook, and the window, send buffer and checksums
 * are set for bulk throughput (below). Change a value only with a
 * measured reason, and say it in docs/dataplane-design.md's table. */
#ifndef TS_LWIPOPTS_H
#define TS_LWIPOPTS_H

/* ---- what tickstack changes ----------------------------------------- */

/* RFC 7323 timestamps, offered in our SYNs and accepted in a peer's: every
 * Linux peer offers them (net.ipv4.tcp_timestamps=1), and Linux-to-Linux
 * connections carry them */
#define LWIP_TCP_TIMESTAMPS 1

/* initial sequence numbers: a keyed hash of the 4-tuple plus a clock
 * (RFC 6528, src/tcp_isn.c) instead of lwIP's counter that starts at 6510
 * in every process */
#define LWIP_HOOK_FILENAME "lwip_hooks.h"
#define LWIP_HOOK_TCP_ISN ts_isn__hook
#define LWIP_HOOK_TCP_OUT_REXMIT ts_tcp__rexmit_hook

/* bulk throughput (docs/dataplane-design.md, "The lwIP build"; measured with
 * iperf3 through the stack against the kernel on one veth pair, make
 * bench): a window and send buffer of TS_LWIP_WND (Debian: 64 KiB, at
 * most 64 KiB in flight, and the receiver's ACKs coalesced per batch of
 * segments would stall a sender on it), window scaling with a receive
 * shift that fits it; the send queue's segment count follows the buffer
 * (TCP_SND_QUEUELEN, below). */
#define TS_LWIP_WND (1024 * 1024)
#define TCP_WND TS_LWIP_WND
#define LWIP_WND_SCALE 1
#define TCP_RCV_SCALE 5
#define TCP_SND_BUF TS_LWIP_WND

/* checksums: per netif (the glue verifies received TCP segments itself,
 * in one pass, and lets the interface finish outgoing ones where the XSK
 * takes checksum offload: src/tcp_lwip.c), and lwIP's own sums through the
 * library's 64-bit one (lwIP's algorithm adds 16 bits at a time); no sum
 * while tcp_write copies (an offloaded segment needs none, another gets
 * it when sent) */
#define LWIP_CHECKSUM_CTRL_PER_NETIF 1
unsigned short ts_lwip__chksum(const void *data, int len);
#define LWIP_CHKSUM ts_lwip__chksum
#define LWIP_CHECKSUM_ON_COPY 0
/* received segments reach lwIP as custom pbufs around the glue's copy */
#define LWIP_SUPPORT_CUSTOM_PBUF 1

/* ---- Debian's build, unchanged --------------------------------------- */

/* threads: an OS (pthreads, Debian's unix port sys_arch.c) with the core
 * lock; tickstack takes that lock itself (src/tcp_lwip.c) and never starts
 * lwIP's tcpip thread */
#define NO_SYS 0
#define LWIP_TCPIP_CORE_LOCKING 1

/* memory: libc's malloc for the heap and for every pool */
#define MEM_LIBC_MALLOC 1
#define MEMP_MEM_MALLOC 1
/* tickstack's change: through a bounded cache of freed blocks (src/lwip_mem.c:
 * glibc trimmed and re-faulted the heap's top for every megabyte a bulk
 * transfer moved) */
#ifndef __ASSEMBLER__
#include <stddef.h>
void *ts_mem__malloc(size_t size);
void *ts_mem__calloc(size_t n, size_t size);
void ts_mem__free(void *ptr);
#endif
#define mem_clib_malloc ts_mem__malloc
#define mem_clib_calloc ts_mem__calloc
#define mem_clib_free ts_mem__free
#define MEM_USE_POOLS 0
#if defined __LP64__
#define MEM_ALIGNMENT 8
#else
#define MEM_ALIGNMENT 4
#endif

/* TCP: MSS up to 8960 (a 9,000-byte MTU: each connection's is min(TCP_MSS,
 * its interface's MTU - 40), so 1460 on a standard link); window and send
 * buffer: above. The options lwIP derives from TCP_MSS keep the values
 * they had with 1460: */
#define TCP_MSS 8960
#define TS_TCP_MSS_STD 1460
#define TCP_SND_QUEUELEN ((4 * (TCP_SND_BUF) + (TS_TCP_MSS_STD - 1)) / TS_TCP_MSS_STD)
#define TCP_WND_UPDATE_THRESHOLD LWIP_MIN((TCP_WND / 4), (TS_TCP_MSS_STD * 4))
/* read only by lwIP's netconn API, which the build leaves out; below
 * what lwIP's check for a 16-bit snd_buf wants with TCP_MSS 8960 */
#define TCP_SNDLOWAT (0xFFFF - 4 * TCP_MSS - 1)
/* lwIP's TCP sanity checks (core/init.c) run where its POSIX headers have
 * replaced TCP_MSS with glibc's <netinet/tcp.h> TCP_MSS (512), so they
 * check other values than the build's: the same checks are made at the
 * end of this file with this file's values. */
#define LWIP_DISABLE_TCP_SANITY_CHECKS 1
#define LWIP_TCP_KEEPALIVE 1
/* each outgoing packet is one contiguous pbuf */
#define LWIP_NETIF_TX_SINGLE_PBUF 1
#define LWIP_RANDOMIZE_INITIAL_LOCAL_PORTS 1

/* modules compiled in (tickstack drives TCP over IPv4 through ip4_input;
 * the others are part of Debian's build and cost nothing unused) */
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_IPV4 1
#define LWIP_ICMP 1
#define LWIP_IGMP 1
#define LWIP_RAW 1
#define LWIP_UDP 1
#define LWIP_UDPLITE 1
#define LWIP_TCP 1
#define LWIP_IPV6 1
#define LWIP_ICMP6 1
#define LWIP_IPV6_MLD 1
#define IP_FORWARD 1
#define ARP_QUEUEING 1
#define ARP_QUEUE_LEN 10
#define LWIP_NETIF_LOOPBACK 1
#define LWIP_HAVE_LOOPIF 0
#define LWIP_IPV6_DUP_DETECT_ATTEMPTS 1
#define LWIP_IPV6_SEND_ROUTER_SOLICIT 1
#define LWIP_IPV6_AUTOCONFIG 1
#define LWIP_IPV6_FORWARD 1
#define MEMP_NUM_MLD6_GROUP 16
#define LWIP_IPV6_NUM_ADDRESSES 6

/* lwIP's sockets API (compiled by Debian, not by tickstack: the library
 * uses the raw API); these only shape its headers */
#define LWIP_COMPAT_SOCKETS 0
#define LWIP_SOCKET_OFFSET 1
#define LWIP_POLL 1
#define LWIP_SOCKET_OPEN_COUNT 1
#define LWIP_SOCKET_SELECT 0
#define LWIP_SOCKET_EXTERNAL_HEADERS 1
#define LWIP_SOCKET_EXTERNAL_HEADER_SOCKETS_H "posix/sockets.h"
#define LWIP_SOCKET_EXTERNAL_HEADER_INET_H "posix/inet.h"
#define LWIP_SO_SNDTIMEO 1
#define LWIP_SO_RCVTIMEO 1
#define LWIP_SO_RCVBUF 1
#define LWIP_SO_LINGER 1
#define SO_REUSE 1
#define LWIP_MULTICAST_TX_OPTIONS 1

#define LWIP_STATS 0
#define LWIP_STATS_DISPLAY 0
/* a failed argument check returns an error instead of asserting */
#define LWIP_NOASSERT_ON_ERROR 1

/* the unix port's core-lock hooks (sys_arch.c) */
#if !NO_SYS
void sys_check_core_locking(void);
#define LWIP_ASSERT_CORE_LOCKED() sys_check_core_locking()
void sys_mark_tcpip_thread(void);
#define LWIP_MARK_TCPIP_THREAD() sys_mark_tcpip_thread()
#if LWIP_TCPIP_CORE_LOCKING
void sys_lock_tcpip_core(void);
#define LOCK_TCPIP_CORE() sys_lock_tcpip_core()
void sys_unlock_tcpip_core(void);
#define UNLOCK_TCPIP_CORE() sys_unlock_tcpip_core()
#endif
#endif

/* lwIP's TCP sanity checks, with this file's TCP_MSS (see above) */
#if TCP_SND_BUF < (2 * TCP_MSS) || TCP_WND < TCP_MSS
#error "TCP_SND_BUF and TCP_WND must hold two segments of TCP_MSS"
#endif
#if TCP_SND_QUEUELEN < (2 * (TCP_SND_BUF / TS_TCP_MSS_STD))
#error "TCP_SND_QUEUELEN must hold 2 * TCP_SND_BUF / MSS segments"
#endif
#if TCP_SNDLOWAT >= TCP_SND_BUF || TCP_SNDLOWAT >= (0xFFFF - (4 * TCP_MSS))
#error "TCP_SNDLOWAT must be below TCP_SND_BUF and 4 MSS below 0xFFFF"
#endif

#endif
