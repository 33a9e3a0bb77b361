/* SPDX-License-Identifier: Apache-2.0 */
/* tcp_lwip.h - what tcp.c and tcp_lwip.c share: lwIP's raw API and the
 * glue's locking, netifs and wake-up. Only these two files see lwIP. */
#ifndef TS_TCP_LWIP_H
#define TS_TCP_LWIP_H

#include "tcp_internal.h"

#include <poll.h>

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

/* lwIP's core lock, reentrant per thread (depth counted): every lwIP
 * call runs under it. Lock order: the control lock (ts_lock) is never
 * taken under it; an XSK's ring lock is taken under it (output). Released
 * last, it first feeds lwIP the segments queued by RX polls and wakes the
 * TX path once. */
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
/* A receiver about to sleep: 1 when the helper thread watches the XSKs
 * for it (then it sleeps on the wake-up eventfd alone, and calls
 * ts_lwip__rx_sleep_end after), 0 when it must watch them itself. */
TS_HIDDEN int ts_lwip__rx_sleep_begin(void);
TS_HIDDEN void ts_lwip__rx_sleep_end(void);
TS_HIDDEN int ts_lwip__start(void);

/* lwIP's TCP timer period (tcp_lwip.c) and how much faster than lwIP's
 * nominal TCP_TMR_INTERVAL that makes its ticks */
#define TS_TCP_TMR_MS 10
#define TS_TCP_TICK_SCALE (TCP_TMR_INTERVAL / TS_TCP_TMR_MS)

/* tcp.c: called by the timer thread under the locks after tcp_tmr();
 * ts_tcp__events: whether callbacks ran since the last call (clears) */
TS_HIDDEN void ts_tcp__tick(void);
struct ts_rx_probe {
	/* in: the segment's timestamp option (for a SYN's TIME_WAIT check) */
	int syn_ts;
	u32_t syn_tsval;
	/* out */
	struct tcp_pcb *pcb;
	int infr;
	u32_t lastack;
	u8_t dupacks;
};
/* 1: drop the segment before lwIP sees it (a full accept queue) */
TS_HIDDEN int ts_tcp__rx_pre(uint32_t saddr, uint16_t sport, uint16_t dport,
			     uint32_t seq, uint8_t flags,
			     struct ts_rx_probe *pr);
TS_HIDDEN void ts_tcp__rx_post(struct ts_rx_probe *pr);
/* While lwIP takes a batch of received segments (under the core lock):
 * more segments follow the current one; at its end tcp_lwip.c calls
 * ts_tcp__batch_end (tcp.c), which sends the ACKs cb_recv held back. */
TS_HIDDEN extern int ts_lwip_batch_more;
TS_HIDDEN void ts_tcp__batch_end(void);
TS_HIDDEN int ts_tcp__events(void);
/* the fork pump (tcp.c): whether it has work (clears), whether any
 * shared object exists, its fds for the TCP thread's poll, and its run
 * (under the core lock) */
TS_HIDDEN int ts_tcp__fw_due(void);
TS_HIDDEN int ts_tcp__fw_active(void);
TS_HIDDEN int ts_tcp__fw_pollfds(struct pollfd *pf, int max);
TS_HIDDEN int ts_tcp__fw_run(void); /* 1: it moved something */

/* What the lwIP glue (tcp_lwip.c, the TCP engine, a layer below the
 * stream sockets) hands up to tcp.c: lwIP's batch and timer callbacks and
 * the fork pump, registered by ts_tcp__init before anything runs.
 * tcp_lwip.c calls nothing of tcp.c but through it (tests/layers.py). */
struct ts_lwip_up {
	void (*tick)(void);
	int (*rx_pre)(uint32_t saddr, uint16_t sport, uint16_t dport,
		      uint32_t seq, uint8_t flags, struct ts_rx_probe *pr);
	void (*rx_post)(struct ts_rx_probe *pr);
	void (*batch_end)(void);
	int (*events)(void);
	int (*fw_due)(void);
	int (*fw_active)(void);
	int (*fw_pollfds)(struct pollfd *pf, int max);
	int (*fw_run)(void);
};
TS_HIDDEN void ts_lwip__register(const struct ts_lwip_up *up);

#endif
