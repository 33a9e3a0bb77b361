// SPDX-License-Identifier: Apache-2.0
/* tx.c - the send path: the next hop from a cache the control thread
 * (ctl.c) fills and keeps current, the headers built in a UMEM frame, the
 * XSK's TX ring. The send path never waits for netlink: a flow the cache
 * does not know yet goes through the kernel socket once (counted in
 * tx_kernel_neigh) while the control thread resolves it. */
#include "ts_internal.h"

#include <linux/net_tstamp.h>

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
}

/* ------------------------------------------------------------------ */
/* send                                                                */

#define TS_SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_CONFIRM)

/* Kick what a batch (sendmmsg) left on the TX ring. */
void ts_sock__flush(struct ts_sock *s)
{
	struct ts_stack *st;

	if (!__atomic_load_n(&s->tx_pending_st, __ATOMIC_ACQUIRE))
		return;
	st = __atomic_exchange_n(&s->tx_pending_st, NULL, __ATOMIC_ACQ_REL);
	if (st && ts_stack__usable(st))
		ts_stack__flush(st);
}

#ifndef SCM_TS_OPT_ID
#define SCM_TS_OPT_ID 81 /* Linux 6.13 */
#endif

/* A kernel that does not know SCM_TS_OPT_ID (before 6.13): its own
 * OPT_ID count then numbers what it sends. */
static int ts_opt_id_cmsg = 1;

/* A datagram of a socket with transmit stamps and OPT_ID that the kernel
 * socket sends: its key is the socket's next (SCM_TS_OPT_ID), so that the
 * keys number every datagram, whichever path took it. */
static ssize_t kernel_send_keyed(struct ts_sock *s, int kfd,
				 const struct msghdr *msg, int flags)
{
	size_t cl = CMSG_ALIGN(msg->msg_controllen), sp = CMSG_SPACE(sizeof(uint32_t));
	char stackbuf[512], *buf = stackbuf;
	struct msghdr m = *msg;
	struct cmsghdr *c;
	uint32_t key;
	ssize_t r;

	if (cl + sp > sizeof(stackbuf) && !(buf = malloc(cl + sp)))
		return ts_real_sendmsg(kfd, msg, flags);
	memset(buf, 0, cl + sp);
	if (msg->msg_controllen)
		memcpy(buf, msg->msg_control, msg->msg_controllen);
	pthread_mutex_lock(&s->qlock);
	key = s->tskey++;
	pthread_mutex_unlock(&s->qlock);
	c = (struct cmsghdr *)(void *)(buf + cl);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_TS_OPT_ID;
	c->cmsg_len = CMSG_LEN(sizeof(key));
	memcpy(CMSG_DATA(c), &key, sizeof(key));
	m.msg_control = buf;
	m.msg_controllen = cl + sp;
	r = ts_real_sendmsg(kfd, &m, flags);
	if (r < 0 && errno == EINVAL) {
		/* the cmsg unknown (or the caller's own refused) */
		r = ts_real_sendmsg(kfd, msg, flags);
		if (r >= 0)
			__atomic_store_n(&ts_opt_id_cmsg, 0, __ATOMIC_RELAXED);
	}
	if (buf != stackbuf)
		free(buf);
	return r;
}

static ssize_t kernel_send(struct ts_sock *s, int fd, const struct msghdr *msg,
			   int flags)
{
	ssize_t r;

	ts_sock__flush(s); /* what the batch queued before goes out first */
	if (ts_unlikely(__atomic_load_n(&s->txts, __ATOMIC_RELAXED) &
			SOF_TIMESTAMPING_OPT_ID) &&
	    __atomic_load_n(&ts_opt_id_cmsg, __ATOMIC_RELAXED))
		r = kernel_send_keyed(s, ts_sock__kfd(s, fd), msg, flags);
	else
		r = ts_real_sendmsg(ts_sock__kfd(s, fd), msg, flags);
	if (r >= 0)
		TS_INC(s->stats->tx_kernel);
	return r;
}

/* This datagram goes through the kernel (ts_fallback decides, and counts
 * it in *reason), or the send fails (TICKSTACK_REQUIRE=1). */
static ssize_t fallback_send(struct ts_sock *s, int fd, const struct msghdr *msg,
			     int flags, enum ts_fb_why why, const char *detail,
			     uint64_t *reason)
{
	int r = ts_sock__fallback(s, why, detail, reason);

	if (r < 0) {
		errno = -r;
		return -1;
	}
	return kernel_send(s, fd, msg, flags);
}

/* The XSK of ifindex: found without a lock, created under ts_lock. */
static struct ts_stack *tx_stack(int ifindex)
{
	int i, n = ts_stack__count();
	struct ts_stack *st;

	for (i = 0; i < n; i++) {
		st = ts_stack__at(i);
		if (ts_stack__ifindex(st) == ifindex && ts_stack__usable(st))
			return st;
	}
	ts_lock();
	st = ts_stack__get(ifindex, 1);
	ts_unlock();
	return st;
}

ssize_t ts_sock__sendmsg(struct ts_sock *s, int fd, const struct msghdr *msg,
			 int flags, int more)
{
	int nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	struct ts_udp_hdr_spec h;
	struct ts_nexthop nh;
	struct ts_flow fl;
	struct ts_stack *st;
	uint32_t daddr;
	uint16_t dport;
	size_t len = 0, i;
	int r, why, mc;

	ts_sock__check_owner(s, fd);
	if (ts_sock__state(s) == TS_S_KERNEL)
		return kernel_send(s, fd, msg, flags);
	if ((flags & ~TS_SEND_FLAGS) || msg->msg_controllen)
		return fallback_send(s, fd, msg, flags, TS_FB_SHAPE,
				     "send flags or control messages",
				     &s->stats->tx_kernel_flags);
	if (msg->msg_name) {
		const struct sockaddr_in *sa = msg->msg_name;

		if (msg->msg_namelen < sizeof(*sa) || sa->sin_family != AF_INET)
			return kernel_send(s, fd, msg, flags); /* its error */
		daddr = sa->sin_addr.s_addr;
		dport = sa->sin_port;
	} else if (s->connected) {
		daddr = s->raddr;
		dport = s->rport;
	} else {
		return kernel_send(s, fd, msg, flags); /* EDESTADDRREQ */
	}
	for (i = 0; i < (size_t)msg->msg_iovlen; i++)
		len += msg->msg_iov[i].iov_len;

	if (ts_sock__state(s) == TS_S_NEW) {
		r = ts_sock__activate_for_send(s, fd);
		if (r < 0) {
			errno = -r;
			return -1;
		}
	}
	if (ts_sock__state(s) != TS_S_ACCEL)
		return kernel_send(s, fd, msg, flags);
	if (!dport || !daddr || daddr == INADDR_BROADCAST)
		return fallback_send(s, fd, msg, flags, TS_FB_LOCAL,
				     "broadcast, port 0 or address 0",
				     &s->stats->tx_kernel_local);
	mc = IN_MULTICAST(ntohl(daddr));
	if (mc && s->mcast_loop)
		/* IP_MULTICAST_LOOP (on by default) gives a copy to the host's
		 * own members, which only the kernel path does */
		return fallback_send(s, fd, msg, flags, TS_FB_MCLOOP,
				     "a multicast send with IP_MULTICAST_LOOP on",
				     &s->stats->tx_kernel_mcloop);
	memset(&fl, 0, sizeof(fl));
	fl.daddr = daddr;
	fl.saddr = s->laddr && !IN_MULTICAST(ntohl(s->laddr)) ? s->laddr :
		   !mc && s->conn_laddr ? s->conn_laddr :
		   mc ? s->mcast_if : 0;
	fl.oif = mc ? s->mcast_ifindex : 0;
	fl.sport = s->lport;
	fl.dport = dport;
	fl.tos = s->tos & 0x1c; /* the routing bits (RT_TOS) */
	why = ts_nh__get(&fl, &nh);
	if (why == NH_LOCAL)
		return fallback_send(s, fd, msg, flags, TS_FB_LOCAL,
				     "the destination is local or broadcast",
				     &s->stats->tx_kernel_local);
	if (why == NH_NOROUTE)
		return fallback_send(s, fd, msg, flags, TS_FB_NOROUTE,
				     "no route to the destination",
				     &s->stats->tx_kernel_noroute);
	if (why != NH_OK) /* being resolved, or a neighbour miss: the
			   * kernel send resolves it (ARP) */
		return fallback_send(s, fd, msg, flags, TS_FB_NEIGH,
				     "next hop not resolved yet",
				     &s->stats->tx_kernel_neigh);
	st = tx_stack(nh.ifindex);
	if (!st)
		return fallback_send(s, fd, msg, flags,
				     ts_stack__why_none(nh.ifindex),
				     "no XSK on the outgoing interface",
				     &s->stats->tx_kernel_nostack);
	if (len > ts_stack__max_payload(st))
		return fallback_send(s, fd, msg, flags, TS_FB_SIZE,
				     "datagram larger than the MTU or an XSK "
				     "frame", &s->stats->tx_kernel_oversize);
	memset(&h, 0, sizeof(h));
	memcpy(h.dmac, nh.mac, 6);
	h.saddr = fl.saddr ? fl.saddr : nh.prefsrc;
	h.daddr = daddr;
	h.sport = s->lport;
	h.dport = dport;
	h.ttl = mc ? s->mcast_ttl : s->ttl;
	h.tos = s->tos;
	if (ts_unlikely(__atomic_load_n(&s->tx_pending_st, __ATOMIC_ACQUIRE) &&
			__atomic_load_n(&s->tx_pending_st, __ATOMIC_ACQUIRE) != st))
		ts_sock__flush(s); /* the batch changes interface */
	r = ts_stack__send(st, &h, msg->msg_iov, (int)msg->msg_iovlen, len,
			   nonblock, more);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (more)
		__atomic_store_n(&s->tx_pending_st, st, __ATOMIC_RELEASE);
	TS_INC(s->stats->tx_accel);
	if (ts_unlikely(__atomic_load_n(&s->txts, __ATOMIC_RELAXED)))
		/* SOF_TIMESTAMPING_TX_SOFTWARE */
		ts_sock__tx_stamp(s, &h, msg, len);
	return (ssize_t)len;
}
