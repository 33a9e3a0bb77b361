/* SPDX-License-Identifier: Apache-2.0 */
/* tcp_lwip.h - what tcp.c and tcp_lwip.c share: lwIP's raw API and the
 * glue's locking, netifs and wake-up. Only these two files see lwIP. */
#ifndef TS_TCP_LWIP_H
#define TS_TCP_LWIP_H

#include "tcp_internal.h"

#include <lwip/init.h>
#include <lwip/ip.h>
#include <lwip/ip4.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>
#include <lwip/priv/tcp_priv.h>
#include <lwip/sys.h>
#include <lwip/tcp.h>
#include <lwip/tcpip.h>
#include <lwip/timeouts.h>

/* The process lock, then lwIP's core lock (nested, per thread depth):
 * every lwIP call runs under both. The RX dispatch already holds the
 * process lock and only adds the core lock. */
TS_HIDDEN void ts_lwip__lock(void);
TS_HIDDEN void ts_lwip__unlock(void);
TS_HIDDEN void ts_lwip__core_enter(void);
TS_HIDDEN void ts_lwip__core_exit(void);

/* The lwIP netif carrying local address addr on st's interface (created
 * on first use); NULL when the address is not on that interface. */
TS_HIDDEN struct netif *ts_lwip__netif(struct ts_stack *st, uint32_t addr);
TS_HIDDEN struct ts_stack *ts_lwip__stack(const struct netif *n);

/* Where daddr goes: 0 with nh filled (unicast via an interface whose MAC
 * is known), -EHOSTUNREACH (no route), -EADDRNOTAVAIL (local, broadcast,
 * multicast), -EAGAIN (neighbour unresolved: a probe was sent). */
TS_HIDDEN int ts_lwip__nexthop(uint32_t daddr, struct ts_nexthop *nh);
/* Probe daddr's neighbour through the kernel and wait up to ms for it. */
TS_HIDDEN int ts_lwip__resolve(uint32_t daddr, int ms);

/* Wake threads sleeping in the library (a state change they wait for
 * happened on the timer thread). */
TS_HIDDEN void ts_lwip__wake(void);
TS_HIDDEN int ts_lwip__start(void);

/* tcp.c: called by the timer thread under the locks after lwIP's timers */
TS_HIDDEN void ts_tcp__tick(void);

#endif
