// SPDX-License-Identifier: Apache-2.0
/* nexthop.c - the next-hop cache, beside route.c in the packet and route
 * layer: the control thread (ctl.c) fills it and keeps it current from
 * rtnetlink; the send paths (UDP's tx.c, TCP's tcp_lwip.c) read it and
 * never wait for netlink: a flow the cache does not know yet goes through
 * the kernel socket once (counted in tx_kernel_neigh) while the control
 * thread resolves it. */
#include "ts_internal.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* next-hop cache                                                      */

#define TS_NH_CACHE 64
#define TS_NH_REQ 16

struct nh_entry {
	struct ts_nexthop nh;
	int valid;
	int why;          /* NH_OK, NH_NOROUTE, NH_LOCAL, NH_NEIGH */
};

/* Guards the cache and the request list: data only, no system call. */
static pthread_mutex_t nh_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nh_cond = PTHREAD_COND_INITIALIZER; /* an answer came */
static struct nh_entry nh_cache[TS_NH_CACHE];
static struct ts_flow nh_req[TS_NH_REQ];
static int nh_nreq;
/* Moves on with every change of the cache (under nh_lock): the send
 * path's memo of a destination's headers (tx.c) is good while it has not
 * moved since the lookup the memo was made from. */
uint32_t ts_nh_gen;

static void nh__changed(void)
{
	__atomic_add_fetch(&ts_nh_gen, 1, __ATOMIC_RELEASE);
}

static int flow_eq(const struct ts_flow *a, const struct ts_flow *b)
{
	return a->daddr == b->daddr && a->saddr == b->saddr &&
	       a->oif == b->oif && a->sport == b->sport &&
	       a->dport == b->dport && a->tos == b->tos;
}

static struct nh_entry *nh_slot(const struct ts_flow *fl)
{
	uint32_t h = (ntohl(fl->daddr) ^ ntohl(fl->saddr) ^ fl->sport ^
		      ((uint32_t)fl->dport << 16) ^ (uint32_t)fl->oif) *
		     2654435761u;

	return &nh_cache[h >> 26];
}

/* How long a send waits for the control thread on a cache miss (the
 * first datagram of a flow, or the first after a change): asleep, so that
 * the control thread runs even on the sender's CPU. */
#define TS_NH_WAIT_NS 5000000ll

/* NH_OK and *out, a cached failure, or NH_PENDING: the control thread did
 * not answer in time (the datagram goes through the kernel). */
int ts_nh__get(const struct ts_flow *fl, struct ts_nexthop *out)
{
	struct nh_entry *c = nh_slot(fl);
	struct timespec until;
	int why = NH_PENDING, i, wake = 0;

	pthread_mutex_lock(&nh_lock);
	if (ts_likely(c->valid && flow_eq(&c->nh.fl, fl))) {
		/* an unresolved neighbour is asked again after a while: the
		 * neighbour event may be waiting for the control thread, which
		 * a spinning thread on its CPU keeps from running */
		if (ts_likely(c->why != NH_NEIGH) ||
		    ts_now_ns() < c->nh.expires_ns) {
			why = c->why;
			*out = c->nh;
			pthread_mutex_unlock(&nh_lock);
			return why;
		}
		c->valid = 0;
	}
	TS_INC(ts_stats->nh.misses);
	for (i = 0; i < nh_nreq; i++)
		if (flow_eq(&nh_req[i], fl))
			break;
	if (i == nh_nreq && nh_nreq < TS_NH_REQ) {
		nh_req[nh_nreq++] = *fl;
		wake = 1;
	}
	pthread_mutex_unlock(&nh_lock);
	if (wake)
		ts_ctl__wake();
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += TS_NH_WAIT_NS;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&nh_lock);
	for (;;) {
		if (c->valid && flow_eq(&c->nh.fl, fl)) {
			why = c->why;
			*out = c->nh;
			break;
		}
		if (pthread_cond_timedwait(&nh_cond, &nh_lock, &until))
			break;
	}
	pthread_mutex_unlock(&nh_lock);
	if (why == NH_PENDING)
		TS_INC(ts_stats->nh.wait_timeouts);
	return why;
}

static uint32_t iface_first_addr(int ifindex)
{
	struct ifaddrs *ifa, *i;
	char name[IF_NAMESIZE];
	uint32_t a = 0;

	if (!if_indextoname((unsigned)ifindex, name) || getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !strcmp(i->ifa_name, name)) {
			a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			break;
		}
	freeifaddrs(ifa);
	return a;
}

/* The control thread: resolve what the send path asked for (netlink round
 * trips here, never on the send path). */
void ts_nh__resolve_pending(void)
{
	for (;;) {
		struct ts_nexthop nh;
		struct ts_flow fl;
		struct nh_entry *c;
		int why = NH_OK;

		pthread_mutex_lock(&nh_lock);
		if (!nh_nreq) {
			pthread_mutex_unlock(&nh_lock);
			return;
		}
		fl = nh_req[0];
		pthread_mutex_unlock(&nh_lock);

		memset(&nh, 0, sizeof(nh));
		if (ts_route__lookup_flow(&fl, &nh)) {
			why = NH_NOROUTE;
		} else if (IN_MULTICAST(ntohl(fl.daddr))) {
			if (fl.oif)
				nh.ifindex = fl.oif;
			ts_pkt__mcast_mac(fl.daddr, nh.mac);
		} else if (nh.type != RTN_UNICAST) {
			why = NH_LOCAL;
		} else if (ts_neigh__lookup(nh.ifindex, nh.gw ? nh.gw : fl.daddr,
					    nh.mac)) {
			/* the kernel send of the datagram resolves it (ARP);
			 * the neighbour event then clears this entry */
			why = NH_NEIGH;
		}
		if (why == NH_OK && !nh.prefsrc)
			nh.prefsrc = iface_first_addr(nh.ifindex);
		nh.fl = fl;
		nh.daddr = fl.daddr;
		nh.resolved = why == NH_OK;
		nh.expires_ns = ts_now_ns() + 1000000ull;
		ts_dbg("next hop for %08x: %s", ntohl(fl.daddr),
		       why == NH_OK ? "resolved" : why == NH_NEIGH ?
		       "neighbour unresolved" : why == NH_LOCAL ? "local" :
		       "no route");

		pthread_mutex_lock(&nh_lock);
		c = nh_slot(&fl);
		c->nh = nh;
		c->why = why;
		c->valid = 1;
		nh__changed();
		/* drop the request (it may have moved: find it again) */
		for (int i = 0; i < nh_nreq; i++) {
			if (flow_eq(&nh_req[i], &fl)) {
				nh_req[i] = nh_req[--nh_nreq];
				break;
			}
		}
		pthread_cond_broadcast(&nh_cond);
		pthread_mutex_unlock(&nh_lock);
	}
}

/* An rtnetlink notification. A neighbour that became reachable with the
 * same address changes nothing; anything else about a neighbour drops the
 * entries through it; a route, rule, address or link change drops all. */
void ts_nh__event(const struct nlmsghdr *h)
{
	int i, dropped = 0;

	pthread_mutex_lock(&nh_lock);
	if (h->nlmsg_type == RTM_NEWNEIGH || h->nlmsg_type == RTM_DELNEIGH) {
		const struct ndmsg *nd = NLMSG_DATA(h);
		const struct rtattr *a;
		int len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
		uint32_t dst = 0;
		const uint8_t *mac = NULL;
		int ok = h->nlmsg_type == RTM_NEWNEIGH &&
			 (nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY |
					   NUD_PROBE | NUD_PERMANENT | NUD_NOARP));

		if (nd->ndm_family != AF_INET)
			goto out;
		ts_dbg("neighbour event %d state %#x", h->nlmsg_type,
		       nd->ndm_state);
		for (a = (const struct rtattr *)((const char *)nd +
						 NLMSG_ALIGN(sizeof(*nd)));
		     RTA_OK(a, len); a = RTA_NEXT(a, len)) {
			if (a->rta_type == NDA_DST && RTA_PAYLOAD(a) == 4)
				memcpy(&dst, RTA_DATA(a), 4);
			else if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6)
				mac = RTA_DATA(a);
		}
		for (i = 0; i < TS_NH_CACHE; i++) {
			struct nh_entry *c = &nh_cache[i];
			uint32_t via = c->nh.gw ? c->nh.gw : c->nh.daddr;

			if (!c->valid)
				continue;
			if (c->why == NH_NEIGH && ok)
				c->valid = 0; /* resolved now: look again */
			else if (c->why == NH_OK && via == dst &&
				 c->nh.ifindex == nd->ndm_ifindex &&
				 (!ok || !mac || memcmp(mac, c->nh.mac, 6)))
				c->valid = 0;
			dropped += !c->valid;
		}
		goto out;
	}
	for (i = 0; i < TS_NH_CACHE; i++) {
		dropped += nh_cache[i].valid;
		nh_cache[i].valid = 0;
	}
out:
	if (dropped)
		nh__changed();
	pthread_mutex_unlock(&nh_lock);
	if (dropped)
		TS_INC(ts_stats->nh.refreshes);
}

static void nh__cond_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&nh_cond, &a);
	pthread_condattr_destroy(&a);
}

void ts_nh__init(void)
{
	nh__cond_init();
}

void ts_nh__reset(void)
{
	pthread_mutex_init(&nh_lock, NULL);
	nh__cond_init();
	memset(nh_cache, 0, sizeof(nh_cache));
	nh_nreq = 0;
	nh__changed();
}
