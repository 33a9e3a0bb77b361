// SPDX-License-Identifier: Apache-2.0
/* tx.c - the send path: the next hop from the cache the control thread
 * keeps current (nexthop.c), the headers built in a UMEM frame, the XSK's
 * TX ring. The send path never waits for netlink: a flow the cache
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

/* The last unicast destination this thread sent to through the stack,
 * with its headers prepared (struct ts_udp_tmpl): a send to the same
 * destination copies them instead of looking up the next hop and the XSK
 * and building the headers field by field. A memo, not a cache to keep
 * current: every input of the headers is in its key (the route lookup's
 * flow, the TTL and the TOS, the next-hop cache's generation, which moves
 * with every neighbour, route, address or link change the control thread
 * sees), so a send that matches gets what the full path would build. Per
 * thread: no lock, and a socket closed and reused matches only what its
 * own sends would build. seq is odd while the memo changes: a signal
 * handler's send may interrupt a send of the same thread. */
struct tx_memo {
	uint32_t seq;
	int valid;
	uint32_t gen;
	struct ts_flow fl;
	uint8_t ttl, tos;
	struct ts_stack *st;
	struct ts_udp_hdr_spec h;
	struct ts_udp_tmpl t;
};
static __thread struct tx_memo tx_memo;

static inline int memo_match(const struct tx_memo *mo, const struct ts_flow *fl,
			     uint8_t ttl, uint8_t tos)
{
	return mo->valid && mo->fl.daddr == fl->daddr &&
	       mo->fl.dport == fl->dport && mo->fl.sport == fl->sport &&
	       mo->fl.saddr == fl->saddr && mo->fl.tos == fl->tos &&
	       mo->ttl == ttl && mo->tos == tos &&
	       mo->gen == __atomic_load_n(&ts_nh_gen, __ATOMIC_ACQUIRE);
}

ssize_t ts_sock__sendmsg(struct ts_sock *s, int fd, const struct msghdr *msg,
			 int flags, int more)
{
	struct tx_memo *mo = &tx_memo;
	const struct ts_udp_tmpl *t = NULL;
	struct ts_udp_tmpl tl;
	uint32_t gen;
	int nonblock = __atomic_load_n(&s->nonblock, __ATOMIC_RELAXED) ||
		       (flags & MSG_DONTWAIT);
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
	if (!mc) {
		uint32_t seq = mo->seq;

		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (!(seq & 1) && memo_match(mo, &fl, s->ttl, s->tos)) {
			st = mo->st;
			h = mo->h;
			tl = mo->t;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			/* a signal handler's send in between may have
			 * changed it: then the full path */
			if (mo->seq == seq && ts_stack__usable(st)) {
				t = &tl;
				goto send;
			}
		}
	}
	gen = __atomic_load_n(&ts_nh_gen, __ATOMIC_ACQUIRE);
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
	memset(&h, 0, sizeof(h));
	memcpy(h.dmac, nh.mac, 6);
	h.saddr = fl.saddr ? fl.saddr : nh.prefsrc;
	h.daddr = daddr;
	h.sport = s->lport;
	h.dport = dport;
	h.ttl = mc ? s->mcast_ttl : s->ttl;
	h.tos = s->tos;
	if (!mc) {
		ts_stack__udp_tmpl(st, &h, &tl);
		t = &tl;
		/* odd while it changes (struct tx_memo) */
		mo->seq++;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		mo->valid = 1;
		mo->gen = gen;
		mo->fl = fl;
		mo->ttl = s->ttl;
		mo->tos = s->tos;
		mo->st = st;
		mo->h = h;
		mo->t = tl;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		mo->seq++;
	}
send:
	if (len > ts_stack__max_payload(st))
		return fallback_send(s, fd, msg, flags, TS_FB_SIZE,
				     "datagram larger than the MTU or an XSK "
				     "frame", &s->stats->tx_kernel_oversize);
	if (ts_unlikely(__atomic_load_n(&s->tx_pending_st, __ATOMIC_ACQUIRE) &&
			__atomic_load_n(&s->tx_pending_st, __ATOMIC_ACQUIRE) != st))
		ts_sock__flush(s); /* the batch changes interface */
	r = ts_stack__send(st, &h, t, msg->msg_iov, (int)msg->msg_iovlen, len,
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
