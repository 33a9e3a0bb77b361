// SPDX-License-Identifier: Apache-2.0
/* rx.c - the receive path: datagrams queued to a socket by the RX ring
 * poll, control messages, and the kernel fd for what reached the kernel. */
#include "ts_internal.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* put_cmsg as the kernel does it: a control buffer too small for a message
 * gets what fits and MSG_CTRUNC. *used counts the bytes consumed. */
static void cmsg_put(struct msghdr *msg, size_t *used, int level, int type,
		     const void *data, size_t len)
{
	size_t room = msg->msg_controllen - *used;
	size_t cmlen = CMSG_LEN(len), space = CMSG_SPACE(len);
	struct cmsghdr h;
	char *p = (char *)msg->msg_control + *used;

	if (!msg->msg_control || room < sizeof(struct cmsghdr)) {
		msg->msg_flags |= MSG_CTRUNC;
		return;
	}
	if (room < cmlen) {
		msg->msg_flags |= MSG_CTRUNC;
		cmlen = room;
	}
	h.cmsg_level = level;
	h.cmsg_type = type;
	h.cmsg_len = cmlen;
	memcpy(p, &h, sizeof(h));
	memcpy(p + CMSG_LEN(0), data, cmlen - CMSG_LEN(0));
	*used += space < room ? space : room;
}

/* The timestamp control messages of data received (or, for the error
 * queue, sent) at ns (CLOCK_REALTIME), as the kernel's
 * __sock_recv_timestamp and tcp_recv_timestamp write them: SO_TIMESTAMPNS
 * or SO_TIMESTAMP, then SCM_TIMESTAMPING (software; deprecated and raw
 * hardware zero: the stack takes no hardware stamp). cm: TS_CM_*. */
void ts_rx__tstamp_cmsgs(struct msghdr *msg, size_t *used, int cm, int tsnew,
			 uint64_t ns)
{
	ts_rx__tstamp_cmsgs_hw(msg, used, cm, tsnew, ns, 0);
}

/* hw_ns: the frame's hardware receive time (TS_CM_TSHW, raw hardware
 * reported): SCM_TIMESTAMPING's third slot, as the kernel's
 * __sock_recv_timestamp puts skb_hwtstamps there; the message goes out
 * when one of its slots has a time (none: no message, as the kernel's) */
void ts_rx__tstamp_cmsgs_hw(struct msghdr *msg, size_t *used, int cm,
			    int tsnew, uint64_t ns, uint64_t hw_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	if (cm & TS_CM_TSTAMPNS) {
		cmsg_put(msg, used, SOL_SOCKET, tsnew ?
			 SO_TIMESTAMPNS_NEW : SO_TIMESTAMPNS_OLD, &ts, sizeof(ts));
	} else if (cm & TS_CM_TSTAMP) {
		struct timeval tv = { .tv_sec = ts.tv_sec,
				      .tv_usec = ts.tv_nsec / 1000 };

		cmsg_put(msg, used, SOL_SOCKET, tsnew ?
			 SO_TIMESTAMP_NEW : SO_TIMESTAMP_OLD, &tv, sizeof(tv));
	}
	if (cm & (TS_CM_TSTAMPING | TS_CM_TSHW)) {
		/* struct scm_timestamping(64): software, (deprecated), raw
		 * hardware; the same layout on 64-bit */
		struct timespec tss[3];

		memset(tss, 0, sizeof(tss));
		if (cm & TS_CM_TSTAMPING)
			tss[0] = ts;
		if ((cm & TS_CM_TSHW) && hw_ns) {
			tss[2].tv_sec = (time_t)(hw_ns / 1000000000ull);
			tss[2].tv_nsec = (long)(hw_ns % 1000000000ull);
		}
		if ((cm & TS_CM_TSTAMPING) || hw_ns)
			cmsg_put(msg, used, SOL_SOCKET, tsnew ?
				 SO_TIMESTAMPING_NEW : SO_TIMESTAMPING_OLD,
				 tss, sizeof(tss));
	}
}

/* The control messages the kernel's udp_recvmsg writes, in its order: the
 * timestamp (sock_recv_cmsgs), then IP_PKTINFO, IP_TTL, IP_TOS. */
static void sock__cmsgs(const struct ts_sock *s, int cm,
			const struct ts_rxent *e, struct msghdr *msg)
{
	size_t used = 0;

	if (cm & (TS_CM_TSTAMP_ANY | TS_CM_TSHW))
		ts_rx__tstamp_cmsgs_hw(msg, &used, cm, s->tstamp_new, e->rx_ns,
				       cm & TS_CM_TSHW && !e->spilled ?
					       ts_stack__frame_hw(e->st, e->frame) :
					       0);
	if (cm & TS_CM_PKTINFO) {
		struct in_pktinfo pi;

		memset(&pi, 0, sizeof(pi));
		pi.ipi_ifindex = ts_stack__ifindex(e->st);
		pi.ipi_addr.s_addr = e->daddr;
		/* the kernel's fib_compute_spec_dst: the destination for a
		 * local address, the interface's address for a group */
		pi.ipi_spec_dst.s_addr = IN_MULTICAST(ntohl(e->daddr)) ?
						 ts_stack__addr(e->st) :
						 e->daddr;
		cmsg_put(msg, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
	}
	if (cm & TS_CM_TTL) {
		int ttl = e->ttl;

		cmsg_put(msg, &used, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
	}
	if (cm & TS_CM_TOS)
		cmsg_put(msg, &used, IPPROTO_IP, IP_TOS, &e->tos, 1);
	msg->msg_controllen = used;
}

/* Copy datagram e into msg as recvmsg returns it: payload, source, flags,
 * control messages. Its length (MSG_TRUNC: the whole datagram's). */
ssize_t ts_rx__copyout(const struct ts_sock *s, const struct ts_rxent *e,
		       struct msghdr *msg, int flags)
{
	const uint8_t *p = (e->spilled ? (const uint8_t *)(uintptr_t)e->frame :
				   ts_stack__frame_data(e->st, e->frame)) +
			   e->off;
	size_t off = 0, i;
	int cm;

	for (i = 0; i < (size_t)msg->msg_iovlen && off < e->len; i++) {
		size_t c = msg->msg_iov[i].iov_len;

		if (c > e->len - off)
			c = e->len - off;
		memcpy(msg->msg_iov[i].iov_base, p + off, c);
		off += c;
	}
	msg->msg_flags = off < e->len ? MSG_TRUNC : 0;
	if (msg->msg_name && msg->msg_namelen >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *sa = msg->msg_name;

		memset(sa, 0, sizeof(*sa));
		sa->sin_family = AF_INET;
		sa->sin_addr.s_addr = e->saddr;
		sa->sin_port = e->sport;
		msg->msg_namelen = sizeof(*sa);
	} else if (msg->msg_name) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = e->sport,
					  .sin_addr.s_addr = e->saddr };

		memcpy(msg->msg_name, &sa, msg->msg_namelen);
		msg->msg_namelen = sizeof(sa);
	}
	/* setsockopt of another thread may change them: read once */
	cm = __atomic_load_n(&s->cmsgs, __ATOMIC_RELAXED);
	if (cm)
		sock__cmsgs(s, cm, e, msg);
	else
		msg->msg_controllen = 0;
	return (flags & MSG_TRUNC) ? (ssize_t)e->len : (ssize_t)off;
}

/* A transmit stamp waiting in the error queue: what the kernel's clone of
 * the sent skb holds (the frame, from its Ethernet header; nothing with
 * SOF_TIMESTAMPING_OPT_TSONLY). */
struct ts_errent {
	uint64_t ns;
	uint32_t key;
	uint32_t len;
	uint8_t *data;
};
/* Stamps kept unread; past that the newest are dropped, as the kernel
 * drops them when the socket's receive buffer is full (sock_queue_err_skb). */
#define TS_ERRQ_CAP 256u

void ts_sock__tx_stamp(struct ts_sock *s, struct ts_udp_hdr_spec *h,
		       const struct msghdr *msg, size_t len)
{
	struct timespec now;
	struct ts_errent e = { 0 };
	int f = __atomic_load_n(&s->txts, __ATOMIC_RELAXED);

	clock_gettime(CLOCK_REALTIME, &now);
	e.ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	if (!(f & SOF_TIMESTAMPING_OPT_TSONLY)) {
		size_t off = 0, i;
		int n;

		e.data = malloc(TS_HDRS_LEN + len);
		if (!e.data)
			return;
		for (i = 0; i < (size_t)msg->msg_iovlen && off < len; i++) {
			size_t c = msg->msg_iov[i].iov_len;

			if (c > len - off)
				c = len - off;
			memcpy(e.data + TS_HDRS_LEN + off, msg->msg_iov[i].iov_base, c);
			off += c;
		}
		n = ts_pkt__build_udp(e.data, TS_HDRS_LEN + len, len, h);
		if (n < 0) {
			free(e.data);
			return;
		}
		e.len = (uint32_t)n;
	}
	pthread_mutex_lock(&s->qlock);
	/* OPT_ID: counted per datagram stamped (__ip_append_data) */
	if (f & SOF_TIMESTAMPING_OPT_ID)
		e.key = s->tskey++;
	if (!s->errq)
		s->errq = calloc(TS_ERRQ_CAP, sizeof(*s->errq));
	if (!s->errq || s->errq_tail - s->errq_head >= TS_ERRQ_CAP) {
		pthread_mutex_unlock(&s->qlock);
		free(e.data);
		return;
	}
	s->errq[s->errq_tail % TS_ERRQ_CAP] = e;
	__atomic_store_n(&s->errq_tail, s->errq_tail + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->qlock);
	if (__atomic_load_n(&ts_wait_sleepers, __ATOMIC_ACQUIRE))
		ts_wait__wake_sleepers(); /* a poll for POLLERR */
}

/* recvmsg(MSG_ERRQUEUE) as the kernel's ip_recv_error answers it for a
 * transmit stamp: the data (cut to the buffer, MSG_TRUNC), no address,
 * SO_TIMESTAMP(NS) when asked, SCM_TIMESTAMPING with
 * SOF_TIMESTAMPING_SOFTWARE, then IP_RECVERR (sock_extended_err ENOMSG,
 * SO_EE_ORIGIN_TIMESTAMPING, SCM_TSTAMP_SND, the OPT_ID key; the
 * offender's address zero without SOF_TIMESTAMPING_OPT_CMSG), and
 * MSG_ERRQUEUE in msg_flags. */
ssize_t ts_sock__errq_pop(struct ts_sock *s, struct msghdr *msg)
{
	struct {
		struct sock_extended_err ee;
		struct sockaddr_in offender;
	} eh;
	struct ts_errent e;
	size_t off = 0, used = 0, i;
	int cm, txts;

	pthread_mutex_lock(&s->qlock);
	if (s->errq_head == s->errq_tail) {
		pthread_mutex_unlock(&s->qlock);
		return -1;
	}
	e = s->errq[s->errq_head % TS_ERRQ_CAP];
	__atomic_store_n(&s->errq_head, s->errq_head + 1, __ATOMIC_RELEASE);
	txts = __atomic_load_n(&s->txts, __ATOMIC_RELAXED);
	cm = (__atomic_load_n(&s->cmsgs, __ATOMIC_RELAXED) &
	      (TS_CM_TSTAMP | TS_CM_TSTAMPNS)) |
	     (txts & SOF_TIMESTAMPING_SOFTWARE ? TS_CM_TSTAMPING : 0);
	if (!(txts & SOF_TIMESTAMPING_OPT_ID))
		e.key = 0;
	pthread_mutex_unlock(&s->qlock);
	for (i = 0; i < (size_t)msg->msg_iovlen && off < e.len; i++) {
		size_t c = msg->msg_iov[i].iov_len;

		if (c > e.len - off)
			c = e.len - off;
		memcpy(msg->msg_iov[i].iov_base, e.data + off, c);
		off += c;
	}
	free(e.data);
	msg->msg_flags = MSG_ERRQUEUE | (off < e.len ? MSG_TRUNC : 0);
	msg->msg_namelen = 0;
	ts_rx__tstamp_cmsgs(msg, &used, cm, s->tstamp_new, e.ns);
	memset(&eh, 0, sizeof(eh));
	eh.ee.ee_errno = ENOMSG;
	eh.ee.ee_origin = SO_EE_ORIGIN_TIMESTAMPING;
	eh.ee.ee_info = SCM_TSTAMP_SND;
	eh.ee.ee_data = e.key;
	cmsg_put(msg, &used, IPPROTO_IP, IP_RECVERR, &eh, sizeof(eh));
	msg->msg_controllen = used;
	return (ssize_t)off;
}

void ts_sock__errq_free(struct ts_sock *s)
{
	uint32_t h;

	/* a poll may still look at a closed socket's counts: atomics, and
	 * they only move forward */
	pthread_mutex_lock(&s->qlock);
	for (h = s->errq_head; s->errq && h != s->errq_tail; h++)
		free(s->errq[h % TS_ERRQ_CAP].data);
	__atomic_store_n(&s->errq_head, s->errq_tail, __ATOMIC_RELEASE);
	free(s->errq);
	s->errq = NULL;
	pthread_mutex_unlock(&s->qlock);
}

/* Copy the head datagram into msg: its length (MSG_TRUNC: the whole
 * datagram's), or -1 when the queue is empty. */
ssize_t ts_sock__pop(struct ts_sock *s, struct msghdr *msg, int flags)
{
	struct ts_rxent e;
	ssize_t ret;

again:
	pthread_mutex_lock(&s->qlock);
	if (s->qhead == s->qtail) {
		pthread_mutex_unlock(&s->qlock);
		return -1;
	}
	e = s->q[s->qhead & (s->qcap - 1)];
	if (ts_unlikely(s->claims != NULL) &&
	    !ts_sock__claim(s, s->qhead, flags & MSG_PEEK)) {
		/* queued before a fork and read by the other process */
		pthread_mutex_unlock(&s->qlock);
		ts_sock__skip_taken(s);
		goto again;
	}
	/* copied under the lock: a concurrent pop must not recycle the
	 * frame first (the head moves only after the copy) */
	ret = ts_rx__copyout(s, &e, msg, flags);
	if (!(flags & MSG_PEEK)) {
		__atomic_store_n(&s->qhead, s->qhead + 1, __ATOMIC_RELEASE);
		s->qbytes -= ts_rx_truesize(e.len);
		s->qframes -= !e.spilled;
	}
	pthread_mutex_unlock(&s->qlock);
	if (!(flags & MSG_PEEK)) {
		ts_rxent_release(&e);
		TS_INC(s->stats->rx_accel);
	}
	return ret;
}

#define TS_RECV_FLAGS (MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC | MSG_NOSIGNAL | \
		       MSG_WAITALL | MSG_CMSG_CLOEXEC)

struct rx_wait {
	struct ts_sock *s;
	int fd;
	struct msghdr *msg;
	int flags;
	ssize_t r;
	int err;
};

/* One look for a blocking or non-blocking receive: our queue first (the
 * RX rings were polled by ts_wait), then the kernel fd when a look is due
 * or poll reported it readable. */
static int rx_check(struct ts_wait *w, int kernel)
{
	struct rx_wait *rw = w->arg;
	struct ts_sock *s = rw->s;

	if (w->direct && w->direct->done) { /* taken from the ring */
		rw->r = w->direct->ret;
		return 1;
	}
	if (ts_sock__rx_ready(s)) {
		rw->r = ts_sock__pop(s, rw->msg, rw->flags);
		if (rw->r >= 0)
			return 1;
	}
	/* a plain load first: no read-modify-write while spinning */
	if (kernel || (__atomic_load_n(&s->kernel_hint, __ATOMIC_RELAXED) &&
		       __atomic_exchange_n(&s->kernel_hint, 0, __ATOMIC_ACQ_REL))) {
		rw->r = ts_real_recvmsg(ts_sock__kfd(s, rw->fd), rw->msg,
					rw->flags | MSG_DONTWAIT);
		if (rw->r >= 0) {
			TS_INC(s->stats->rx_kernel);
			return 1;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			rw->err = errno;
			return 1;
		}
	}
	return 0;
}

static int rx_sleep_fds(struct ts_wait *w, struct pollfd *pf, int max)
{
	struct rx_wait *rw = w->arg;

	if (max < 1)
		return 0;
	pf[0].fd = ts_sock__kfd(rw->s, rw->fd);
	pf[0].events = POLLIN;
	return 1;
}

/* Not bound yet: another thread's first send will bind it and install the
 * steering, so do not sleep in the kernel's recv (the replies would then
 * arrive on the XSK): wait in short kernel polls until it is decided. */
static ssize_t rx_unbound(struct ts_sock *s, int fd, struct msghdr *msg,
			  int flags)
{
	unsigned long g0 = ts_sig__norestart_gen();
	int64_t tmo = ts_timeo__wait_ns(&s->rcvtimeo_ns);
	uint64_t deadline = tmo >= 0 ? ts_now_ns() + (uint64_t)tmo : 0;
	ssize_t r;

	for (;;) {
		struct pollfd pf = { .fd = ts_sock__kfd(s, fd), .events = POLLIN };
		int pr = ts_real_poll(&pf, 1, tmo == 0 ? 0 : 10);

		if (pr > 0) {
			r = ts_real_recvmsg(pf.fd, msg, flags | MSG_DONTWAIT);
			if (r >= 0) {
				TS_INC(s->stats->rx_kernel);
				return r;
			}
			if (errno != EAGAIN)
				return r;
		}
		if (pr < 0 && errno != EINTR)
			return -1;
		if (ts_sig__norestart_gen() != g0) {
			errno = EINTR;
			return -1;
		}
		if (ts_sock__state(s) != TS_S_NEW)
			return -2; /* decided: go on with the ordinary path */
		if (deadline && ts_now_ns() >= deadline) {
			errno = EAGAIN; /* SO_RCVTIMEO */
			return -1;
		}
	}
}

ssize_t ts_sock__recvmsg(struct ts_sock *s, int fd, struct msghdr *msg,
			 int flags)
{
	int nonblock = __atomic_load_n(&s->nonblock, __ATOMIC_RELAXED) ||
		       (flags & MSG_DONTWAIT);
	struct rx_wait rw = { .s = s, .fd = fd, .msg = msg, .flags = flags };
	struct ts_direct dir = { .s = s, .msg = msg, .flags = flags };
	struct ts_wait w = { .check = rx_check, .sleep_fds = rx_sleep_fds,
			     .arg = &rw, .stacks = s->rx_stacks,
			     .nstacks = &s->nrx, .kernel_lazy = 1,
			     .direct = (flags & MSG_PEEK) ? NULL : &dir };
	ssize_t r;
	int state;

	ts_sock__check_owner(s, fd);
	state = ts_sock__state(s);
	if (state == TS_S_NEW && !nonblock && !(flags & ~TS_RECV_FLAGS)) {
		r = rx_unbound(s, fd, msg, flags);
		if (r != -2)
			return r;
		state = ts_sock__state(s);
	}
	if (state != TS_S_ACCEL || (flags & ~TS_RECV_FLAGS)) {
		if ((flags & MSG_ERRQUEUE) && ts_sock__errq_ready(s)) {
			/* the stack's transmit stamps, then the kernel's */
			r = ts_sock__errq_pop(s, msg);
			if (r >= 0)
				return r;
		}
		if (ts_sock__rx_ready(s) && !(flags & ~TS_RECV_FLAGS)) {
			/* queued before it moved to the kernel */
			r = ts_sock__pop(s, msg, flags);
			if (r >= 0)
				return r;
		}
		r = ts_real_recvmsg(ts_sock__kfd(s, fd), msg, flags);
		if (r >= 0)
			TS_INC(s->stats->rx_kernel);
		return r;
	}
	if (nonblock) {
		w.timeout_ns = 0;
	} else {
		w.timeout_ns = ts_timeo__wait_ns(&s->rcvtimeo_ns);
	}
	r = ts_wait(&w);
	switch (r) {
	case 1:
		if (rw.r < 0)
			errno = rw.err;
		return rw.r;
	case 0: /* SO_RCVTIMEO, or nothing for a non-blocking call */
		errno = EAGAIN;
		return -1;
	default:
		errno = -r; /* EINTR */
		return -1;
	}
}
