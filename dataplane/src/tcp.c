// SPDX-License-Identifier: Apache-2.0
/* tcp.c - accelerated AF_INET/SOCK_STREAM sockets (TICKSTACK_TCP=1).
 *
 * Same model as UDP: the application's socket stays a real kernel fd; the
 * shadow (struct ts_tcp) holds an lwIP pcb. A connecting socket is bound
 * by the kernel first (the kernel picks and reserves the port), then
 * (local address, port, TCP) is steered to the XSK, so the kernel never
 * sees the connection's segments and never answers them. A listener
 * listens on the kernel too (connections from loopback or another
 * interface reach the kernel's queue, and accept() takes those as kernel
 * sockets) while its steered SYNs go to lwIP. An accepted connection gets
 * an unbound kernel socket as its fd. After close(), the steering stays
 * until lwIP has finished the connection (FIN exchange, TIME_WAIT); a
 * connecting socket's port stays reserved by a duplicate of its fd until
 * TIME_WAIT. Everything here runs under lwIP's core lock (tcp_lwip.c). */
#include "tcp_lwip.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <poll.h>
#include <linux/types.h>
#include <linux/net_tstamp.h>

#include "steer_common.h"

struct ts_tcp **ts_tcp_tab;

enum {
	T_NEW = 0,    /* not connected or listening yet */
	T_LISTEN,     /* lwIP listener + kernel listener */
	T_CONNECTING, /* SYN sent */
	T_CONN,       /* established (or closing) */
	T_CLOSED,     /* lwIP is done with it (reset, refused, ended) */
};

#define RXQ_CAP 1024

/* Steering entries for (laddr, lport, TCP) on some XSKs, shared by a
 * listener and its connections, and by every socket of the process on
 * that address and port (the steering map has one entry per key), released
 * with the last of them. */
struct ts_hold {
	int refs;
	uint32_t laddr;
	uint16_t lport;
	int n;
	struct ts_stack *st[8];
	struct ts_hold *next;
};

/* every live hold, under lwIP's core lock */
static struct ts_hold *holds;

struct ts_tcp {
	int refs; /* fds (dup) pointing here */
	int fd;
	int state;
	int nonblock;
	struct tcp_pcb *pcb;
	struct ts_hold *hold;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	/* received, not yet read: pbuf chains in a ring */
	struct pbuf *rxq[RXQ_CAP];
	uint32_t rxh, rxt;
	uint16_t rx_off;  /* read offset in the head chain */
	size_t rx_avail;
	int rx_eof;
	int so_error;     /* for SO_ERROR and the next call */
	int shut_rd, shut_wr;
	/* listener */
	int backlog;
	struct ts_tcp *acq_head, *acq_tail, *acq_next;
	int acq_len;
	/* options (applied when the pcb exists) */
	int nodelay, quickack, keepalive, linger0;
	/* an immediate ACK held back until the application has read what
	 * it acknowledges and has nothing to send (cb_recv) */
	int ack_owed;
	int ack_batched; /* on ack_batch: its ACK waits for the batch's end */
	u32_t recover; /* snd_nxt when fast recovery began (NewReno) */
	int keep_idle, keep_intvl, keep_cnt;
	/* retransmission limits as Linux applies them (see rexmit_limits) */
	int syncnt;             /* TCP_SYNCNT, 0: the namespace's default */
	unsigned user_timeout;  /* TCP_USER_TIMEOUT in ms, 0: none */
	int syn_rexmits;        /* SYNs retransmitted so far */
	s16_t rto0;             /* lwIP's initial RTO */
	uint64_t syn_start;     /* ns: the first SYN */
	uint64_t syn_next;      /* ns: the SYN timer fires */
	uint64_t rexmit_since;  /* ns: first retransmission of unacked data */
	int64_t rcvtimeo_ns, sndtimeo_ns; /* ts_timeo__set */
	struct tickstack_sock_stats *stats, dummy;
	/* what woke its waiters (epoll's EPOLLET); nospace: a send found no
	 * room, or a poll found it not writable, since the last room made
	 * (Linux's SOCK_NOSPACE: only then does room wake the socket) */
	struct ts_edges edges;
	int nospace;
	/* connect has reported how the handshake ended (Linux's socket
	 * state SS_CONNECTED): a connect now says EISCONN */
	int connect_done;
	/* shared with forked children: pumped through a unix socket (fork) */
	int fwd;
	/* receive timestamps the application asked for (TS_CM_*, as the
	 * kernel socket holds them: tstamp_from_kernel), the _NEW cmsg types,
	 * and when each queued chain arrived (CLOCK_REALTIME ns, beside rxq;
	 * allocated by the first stamped segment) */
	int tscm, tsnew;
	uint64_t *rxq_ns;
};

/* A closed connection lwIP still carries (FIN_WAIT, LAST_ACK, TIME_WAIT). */
struct ts_linger {
	struct tcp_pcb *pcb; /* compared, never dereferenced unless listed */
	uint16_t lport, rport;
	int kfd;             /* kernel fd keeping the port reserved, or -1 */
	struct ts_hold *hold;
	struct ts_linger *next;
};

static struct ts_linger *lingers;

static void set_v4(ip_addr_t *a, uint32_t v)
{
	ip4_addr_set_u32(ip_2_ip4(a), v);
	IP_SET_TYPE_VAL(*a, IPADDR_TYPE_V4);
}

struct ts_tcp *ts_tcp__of(int fd)
{
	if (!ts_tcp_tab || fd < 0 || fd >= 65536)
		return NULL;
	return __atomic_load_n(&ts_tcp_tab[fd], __ATOMIC_ACQUIRE);
}

static void tab_set(int fd, struct ts_tcp *t)
{
	if (fd >= 0 && fd < 65536)
		__atomic_store_n(&ts_tcp_tab[fd], t, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------ */
/* steering                                                           */

/* The hold of (laddr, lport): the live one, or a new one. A port the
 * kernel gives out again while a closed connection of this process still
 * holds it in lwIP (its reservation ends in TIME_WAIT, see ts_tcp__tick)
 * shares that connection's hold: with a hold of its own, the old one's
 * release, up to TIME_WAIT's 4.8 s later, deleted the steering entry the
 * new connection uses, whose segments then went to the kernel (stalls of
 * tens of seconds in redis-benchmark, conformance case tcpholdport). */
static struct ts_hold *hold_new(uint32_t laddr, uint16_t lport)
{
	struct ts_hold *h;

	for (h = holds; h; h = h->next)
		if (h->laddr == laddr && h->lport == lport) {
			h->refs++;
			return h;
		}
	h = calloc(1, sizeof(*h));
	if (h) {
		h->refs = 1;
		h->laddr = laddr;
		h->lport = lport;
		h->next = holds;
		holds = h;
	}
	return h;
}

static int hold_add(struct ts_hold *h, struct ts_stack *st)
{
	int r, i;

	for (i = 0; i < h->n; i++)
		if (h->st[i] == st)
			return 0; /* shared: already steered there */
	if (h->n >= (int)(sizeof(h->st) / sizeof(h->st[0])))
		return -ENOSPC;
	r = ts_stack__steer_add_proto(st, h->laddr, h->lport, TS_STEER_TCP);
	if (r)
		return r;
	h->st[h->n++] = st;
	return 0;
}

static void hold_put(struct ts_hold *h)
{
	struct ts_hold **pp;
	int i;

	if (!h || --h->refs > 0)
		return;
	for (pp = &holds; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	for (i = 0; i < h->n; i++)
		if (ts_stack__usable(h->st[i]))
			ts_stack__steer_del_proto(h->st[i], h->laddr, h->lport,
						  TS_STEER_TCP, 1);
	free(h);
}

/* ------------------------------------------------------------------ */
/* shadows                                                             */

/* O_NONBLOCK as fcntl or FIONBIO last set it (ts_tcp__set_nonblock), read
 * by any thread's call on the socket */
static inline int tcp_nonblock(const struct ts_tcp *t)
{
	return __atomic_load_n(&t->nonblock, __ATOMIC_RELAXED);
}

static struct ts_tcp *shadow_new(int fd, int nonblock)
{
	struct ts_tcp *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->refs = 1;
	t->fd = fd;
	t->nonblock = nonblock;
	t->stats = &t->dummy;
	return t;
}

static void tcp_stats_slot(struct ts_tcp *t)
{
	struct tickstack_sock_stats *s = ts_stats__sock_slot(t->fd);

	if (s) /* what arrived before accept */
		s->rx_accel += t->dummy.rx_accel;
	t->stats = s ? s : &t->dummy;
	t->stats->accelerated = 1;
	t->stats->laddr = t->laddr;
	t->stats->lport = t->lport;
	t->stats->raddr = t->raddr;
	t->stats->rport = t->rport;
}

static void rxq_free(struct ts_tcp *t)
{
	while (t->rxh != t->rxt)
		pbuf_free(t->rxq[t->rxh++ % RXQ_CAP]);
	t->rx_avail = 0;
	t->rx_off = 0;
	free(t->rxq_ns);
	t->rxq_ns = NULL;
}

/* A connection no one accepted (under lwIP's lock): reset, as the kernel
 * does, and freed. */
static void conn_drop(struct ts_tcp *c)
{
	if (c->pcb) {
		tcp_arg(c->pcb, NULL);
		tcp_abort(c->pcb);
		ts_stats->tcp.conns_live--;
	}
	hold_put(c->hold);
	rxq_free(c);
	free(c);
}

/* Leave the fd to the kernel: forget the shadow. */
/* TICKSTACK_TCP=connect: listeners stay on the kernel (pre-fork servers) */
static int tcp_connect_only;
/* a forked child: streams accelerated before the fork are the parent's */
static int tcp_forked;

static void to_kernel(struct ts_tcp *t, int fd)
{
	tab_set(fd, NULL);
	ts_stats->tcp.conns_kernel++;
	TS_INC(ts_stats->sockets_kernel);
	free(t);
}

/* The stream goes to the kernel (ts_fallback decides and counts, in
 * counter too unless NULL), or the call fails: -1 with errno EOPNOTSUPP
 * (TICKSTACK_REQUIRE=1), the shadow kept. */
static int tcp_fallback(struct ts_tcp *t, int fd, enum ts_fb_why why,
			const char *detail, uint64_t *counter)
{
	struct ts_fb f = { .fd = fd, .stream = 1, .laddr = t->laddr,
			   .lport = t->lport, .why = why, .detail = detail,
			   .counter = counter };
	int r = ts_fallback(&f);

	if (r < 0) {
		errno = -r;
		return -1;
	}
	to_kernel(t, fd);
	return 0;
}

/* Retransmission limits. lwIP (src/lwipopts.h) gives up a connect after
 * TCP_SYNMAXRTX (6) SYNs one initial RTO apart (under a second with the
 * ticks here) and a connection after TCP_MAXRTX (12) retransmissions
 * (under a minute here), and knows neither TCP_SYNCNT nor
 * TCP_USER_TIMEOUT. Linux (net/ipv4/tcp_timer.c) retransmits a SYN 1 s
 * after the last while it has retransmitted at most
 * tcp_syn_linear_timeouts of them, then doubling (up to 120 s), and gives
 * up when its timer fires after syn_retries + linear retransmissions or
 * (2^(syn_retries+1) - 1) s after the first SYN, whichever comes first
 * (default 6 and 4: eleven SYNs, ETIMEDOUT after about 131 s); data after
 * TCP_USER_TIMEOUT, or without it after tcp_retries2 (15) retransmission
 * timeouts modelled from a 200 ms RTO (924.6 s). So the library takes
 * over: it sends a connecting socket's SYNs on Linux's schedule itself
 * (lwIP's own timer disarmed), keeps lwIP's data retransmission count
 * below its limit, and gives up as Linux does: no reset, ETIMEDOUT
 * (lwIP's abandon, ERR_ABRT). The sysctls are read from the process's
 * network namespace at the first connect or the first tick after. */
#define MS (1000000ull)

static struct {
	int loaded, syn_retries, syn_linear, retries2;
} lx;

static int sysctl_int(const char *name, int dflt)
{
	char path[96], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	fd = ts_real_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dflt;
	n = ts_real_read(fd, buf, sizeof(buf) - 1);
	ts_real_close(fd);
	if (n <= 0)
		return dflt;
	buf[n] = 0;
	return atoi(buf);
}

static void lx_load(void)
{
	if (lx.loaded)
		return;
	lx.syn_retries = sysctl_int("tcp_syn_retries", 6);
	lx.syn_linear = sysctl_int("tcp_syn_linear_timeouts", 0); /* 6.5+ */
	lx.retries2 = sysctl_int("tcp_retries2", 15);
	lx.loaded = 1;
}

/* Linux's tcp_model_timeout: ms of `boundary` timeouts from rto_base ms */
static uint64_t model_timeout_ms(int boundary, uint64_t rto_base)
{
	int thresh = 0;

	while ((rto_base << (thresh + 1)) <= 120000)
		thresh++;
	if (boundary <= thresh)
		return ((2ull << boundary) - 1) * rto_base;
	return ((2ull << thresh) - 1) * rto_base +
	       (uint64_t)(boundary - thresh) * 120000;
}

/* 1: the pcb was given up (freed) */
static int rexmit_limits(struct tcp_pcb *p, struct ts_tcp *t, uint64_t now)
{
	lx_load(); /* an accepted connection: nothing read them yet */
	if (p->state == SYN_SENT) {
		int cnt = t->syncnt ? t->syncnt : lx.syn_retries;
		uint64_t rto;

		t->syn_rexmits += p->nrtx;
		p->nrtx = 0;
		if (now < t->syn_next)
			return 0;
		if (t->syn_rexmits >= cnt + lx.syn_linear ||
		    now - t->syn_start >= model_timeout_ms(cnt, 1000) * MS) {
			tcp_abandon(p, 0);
			return 1;
		}
		p->rtime = p->rto; /* lwIP resends the SYN at its next tick */
		rto = t->syn_rexmits + 1 > lx.syn_linear ?
			      1000ull << (t->syn_rexmits + 1 - lx.syn_linear) : 1000;
		t->syn_next = now + (rto > 120000 ? 120000 : rto) * MS;
		return 0;
	}
	if (!p->nrtx) {
		t->rexmit_since = 0;
		return 0;
	}
	if (!t->rexmit_since)
		t->rexmit_since = now;
	if (now - t->rexmit_since >=
	    (t->user_timeout ? t->user_timeout : model_timeout_ms(lx.retries2, 200)) * MS) {
		tcp_abandon(p, 0);
		return 1;
	}
	/* lwIP's backoff is already at its largest (x128) from the 7th */
	if (p->nrtx >= TCP_MAXRTX - 1)
		p->nrtx = TCP_MAXRTX - 2;
	return 0;
}

/* Keepalive: seconds as Linux counts them (defaults 7200, 75, 9) in
 * lwIP's milliseconds, which pass TS_TCP_TICK_SCALE times faster here
 * than lwIP counts them (its ticks run that much faster); the interval
 * bounded so that lwIP's idle + count * interval fits its 32 bits. */
static void keep_times(struct tcp_pcb *p, const struct ts_tcp *t)
{
	uint64_t ms = 1000ull * TS_TCP_TICK_SCALE, idle, intvl;
	u32_t cnt = (u32_t)(t->keep_cnt > 0 ? t->keep_cnt : 9);

	idle = (uint64_t)(t->keep_idle > 0 ? t->keep_idle : 7200) * ms;
	intvl = (uint64_t)(t->keep_intvl > 0 ? t->keep_intvl : 75) * ms;
	if (idle > UINT32_MAX / 2)
		idle = UINT32_MAX / 2;
	if (intvl > (UINT32_MAX - idle) / cnt)
		intvl = (UINT32_MAX - idle) / cnt;
	p->keep_idle = (u32_t)idle;
	p->keep_intvl = (u32_t)intvl;
	p->keep_cnt = cnt;
}

static void apply_opts(struct ts_tcp *t)
{
	struct tcp_pcb *p = t->pcb;

	if (!p)
		return;
	if (t->nodelay)
		tcp_nagle_disable(p);
	else
		tcp_nagle_enable(p);
	if (t->keepalive)
		ip_set_option(p, SOF_KEEPALIVE);
	else
		ip_reset_option(p, SOF_KEEPALIVE);
	keep_times(p, t);
}

/* ------------------------------------------------------------------ */
/* lwIP callbacks (under the locks)                                    */

static int tcp_event;
static int ready_tx(struct ts_tcp *t);
static void fw_note(struct ts_tcp *t);
static void fw_after_fork_child(void);
static void fw_fini(void);

int ts_tcp__events(void)
{
	int ev = tcp_event;

	tcp_event = 0;
	return ev;
}

/* Streams whose immediate ACK cb_recv held back until the end of the
 * batch of segments lwIP is taking in (under the core lock; emptied by
 * ts_tcp__batch_end before the lock is released, so no stream on it can
 * be closed meanwhile). A full list holds no more back. */
#define ACK_BATCH_MAX 64
static struct ts_tcp *ack_batch[ACK_BATCH_MAX];
static int ack_batch_n;

static int ack_batch_add(struct ts_tcp *t)
{
	if (t->ack_batched)
		return 1;
	if (ack_batch_n == ACK_BATCH_MAX)
		return 0;
	t->ack_batched = 1;
	ack_batch[ack_batch_n++] = t;
	return 1;
}

void ts_tcp__batch_end(void)
{
	int i;

	for (i = 0; i < ack_batch_n; i++) {
		struct ts_tcp *t = ack_batch[i];

		t->ack_batched = 0;
		/* still owed: no segment of ours carried it meanwhile */
		if (t->pcb && (t->pcb->flags & TF_ACK_DELAY)) {
			tcp_ack_now(t->pcb);
			tcp_output(t->pcb);
		}
	}
	ack_batch_n = 0;
}

static err_t cb_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct ts_tcp *t = arg;

	(void)err;
	tcp_event = 1;
	fw_note(t);
	if (!t) {
		if (p) {
			tcp_recved(pcb, p->tot_len);
			pbuf_free(p);
		}
		return ERR_OK;
	}
	if (!p) {
		t->rx_eof = 1;
		t->edges.any++;
		return ERR_OK;
	}
	/* a full ring chains onto its last entry, whose tot_len (16 bits)
	 * must not wrap: past that (hundreds of small segments unread in a
	 * window of TCP_WND) lwIP keeps the data (refused_data) and offers
	 * it again once the application has read (rx_copy), or at its next
	 * timer tick */
	if (!t->shut_rd && t->rxt - t->rxh == RXQ_CAP &&
	    (uint32_t)t->rxq[(t->rxt - 1) % RXQ_CAP]->tot_len + p->tot_len > 0xffff)
		return ERR_MEM;
	t->edges.in++;
	if (t->shut_rd) {
		tcp_recved(pcb, p->tot_len);
		pbuf_free(p);
		return ERR_OK;
	}
	t->rx_avail += p->tot_len;
	t->stats->rx_accel += p->tot_len;
	if (ts_unlikely(t->tscm) && !t->rxq_ns)
		t->rxq_ns = calloc(RXQ_CAP, sizeof(*t->rxq_ns));
	if (t->rxt - t->rxh < RXQ_CAP)
		t->rxq[t->rxt++ % RXQ_CAP] = p;
	else
		pbuf_cat(t->rxq[(t->rxt - 1) % RXQ_CAP], p);
	if (ts_unlikely(t->rxq_ns)) /* the segment's, or the one that
				     * completed it (out of order) */
		t->rxq_ns[(t->rxt - 1) % RXQ_CAP] = ts_tcp_seg_rx_ns;
	if (t->quickack) {
		tcp_ack_now(pcb);
	} else if ((pcb->flags & TF_ACK_NOW) && pcb->ooseq == NULL &&
		   ts_lwip_batch_more && ack_batch_add(t)) {
		/* more segments of this batch follow: one ACK for them all,
		 * at the batch's end (ts_tcp__batch_end), as Linux's GRO
		 * acknowledges a train of segments once; lwIP alone sends one
		 * for every second segment, and each costs the receiver a
		 * frame through the kernel's TX path and the sender one to
		 * take in. Never for out-of-order data (the duplicate ACKs
		 * of a loss go out at once). */
		tcp_clear_flags(pcb, TF_ACK_NOW);
		tcp_set_flags(pcb, TF_ACK_DELAY);
	} else if ((pcb->flags & TF_ACK_NOW) && pcb->ooseq == NULL &&
		   t->rx_avail < 2u * pcb->mss) {
		/* lwIP acknowledges every second segment at once, here
		 * before the application has seen the data: a message of
		 * two segments (1,472 bytes) then costs a bare ACK and a TX
		 * wake-up on the way to the application. Linux sends that
		 * ACK only when its window would open (the application has
		 * read); the reply the application is about to send carries
		 * it. Held back while under two segments are unread and no
		 * hole is being filled; sent when the application looks for
		 * more and finds nothing (ack_owed_flush), else by lwIP's
		 * delayed ACK (within one tick, TS_TCP_TMR_MS). */
		tcp_clear_flags(pcb, TF_ACK_NOW);
		tcp_set_flags(pcb, TF_ACK_DELAY);
		t->ack_owed = 1;
	}
	return ERR_OK;
}

/* The ACK cb_recv held back, if the application has read everything and
 * no segment it sent carried the ACK meanwhile. Under the lwIP lock. */
static void ack_owed_flush(struct ts_tcp *t)
{
	if (!t->ack_owed || t->rx_avail)
		return;
	t->ack_owed = 0;
	if (t->pcb && (t->pcb->flags & TF_ACK_DELAY)) {
		tcp_ack_now(t->pcb);
		tcp_output(t->pcb);
	}
}

static void cb_err(void *arg, err_t err)
{
	struct ts_tcp *t = arg;

	tcp_event = 1;
	if (!t)
		return;
	fw_note(t);
	t->edges.any++;
	t->pcb = NULL;
	if (err == ERR_RST)
		t->so_error = t->state == T_CONNECTING ? ECONNREFUSED : ECONNRESET;
	else if (err == ERR_ABRT)
		t->so_error = ETIMEDOUT;
	if (err != ERR_CLSD)
		ts_stats->tcp.resets++;
	t->state = T_CLOSED;
	t->rx_eof = 1;
	ts_stats->tcp.conns_live--;
}

static err_t cb_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct ts_tcp *t = arg;

	tcp_event = 1;
	fw_note(t);
	if (t && err == ERR_OK && t->state == T_CONNECTING) {
		t->state = T_CONN;
		t->edges.any++;
		/* lwIP takes no RTT sample from a handshake: its initial RTO,
		 * which the SYN schedule had replaced, applies again */
		pcb->rto = t->rto0;
	}
	return ERR_OK;
}

/* Acknowledged data freed send room: a writer that found none is woken
 * once the stream is writable again (Linux's sk_stream_write_space). */
static err_t cb_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct ts_tcp *t = arg;

	(void)pcb;
	(void)len;
	fw_note(t);
	if (t && t->nospace && ready_tx(t)) {
		t->nospace = 0;
		t->edges.out++;
		tcp_event = 1;
	}
	return ERR_OK;
}

static void callbacks(struct tcp_pcb *pcb, struct ts_tcp *t)
{
	tcp_arg(pcb, t);
	tcp_recv(pcb, cb_recv);
	tcp_sent(pcb, cb_sent);
	tcp_err(pcb, cb_err);
}

/* An accepted socket inherits its listener's options, as Linux's copy
 * of the listening socket (sk_clone_lock) does. */
static void inherit_opts(const struct ts_tcp *l, struct ts_tcp *t)
{
	t->nodelay = l->nodelay;
	t->keepalive = l->keepalive;
	t->linger0 = l->linger0;
	t->keep_idle = l->keep_idle;
	t->keep_intvl = l->keep_intvl;
	t->keep_cnt = l->keep_cnt;
	t->user_timeout = l->user_timeout;
	/* the listener's may change meanwhile; t is not published yet */
	t->rcvtimeo_ns = __atomic_load_n(&l->rcvtimeo_ns, __ATOMIC_RELAXED);
	t->sndtimeo_ns = __atomic_load_n(&l->sndtimeo_ns, __ATOMIC_RELAXED);
	t->tscm = l->tscm;
	t->tsnew = l->tsnew;
}

static err_t cb_accept(void *arg, struct tcp_pcb *npcb, err_t err)
{
	struct ts_tcp *l = arg, *t;

	tcp_event = 1;
	if (!l || err != ERR_OK || !npcb)
		return ERR_VAL;
	/* Linux queues backlog + 1; lwIP aborts the one beyond: a reset */
	if (l->acq_len > l->backlog)
		return ERR_MEM;
	t = shadow_new(-1, 0);
	if (!t)
		return ERR_MEM;
	t->pcb = npcb;
	t->state = T_CONN;
	t->laddr = ip4_addr_get_u32(ip_2_ip4(&npcb->local_ip));
	t->lport = htons(npcb->local_port);
	t->raddr = ip4_addr_get_u32(ip_2_ip4(&npcb->remote_ip));
	t->rport = htons(npcb->remote_port);
	inherit_opts(l, t);
	t->connect_done = 1;
	t->hold = l->hold;
	t->hold->refs++;
	callbacks(npcb, t);
	tcp_bind_netif(npcb, ip_current_input_netif());
	apply_opts(t);
	if (l->acq_tail)
		l->acq_tail->acq_next = t;
	else
		l->acq_head = t;
	l->acq_tail = t;
	l->acq_len++;
	l->edges.in++;
	fw_note(l);
	ts_stats->tcp.conns_accel++;
	ts_stats->tcp.conns_live++;
	return ERR_OK;
}

/* ------------------------------------------------------------------ */
/* NewReno (RFC 6582) around lwIP: lwIP 2.1.3 leaves fast recovery on
 * the first new ACK, so when a window lost two segments the second waits
 * for a retransmission timeout (no SACK either). The input glue looks at
 * the connection before and after each segment: a partial ACK during
 * recovery retransmits the next missing segment at once and stays in
 * recovery until everything sent before it began is acknowledged. And
 * for small windows, limited transmit (RFC 3042) and early retransmit
 * (RFC 5827): a loss that could never collect three duplicate ACKs is
 * repaired without waiting for the retransmission timeout. */

static struct tcp_pcb *active_pcb(uint32_t saddr, uint16_t sport,
				  uint16_t dport)
{
	struct tcp_pcb *p;

	for (p = tcp_active_pcbs; p; p = p->next)
		if (p->local_port == ntohs(dport) &&
		    p->remote_port == ntohs(sport) &&
		    ip4_addr_get_u32(ip_2_ip4(&p->remote_ip)) == saddr)
			return p;
	return NULL;
}

/* Whether a SYN may end connection p in TIME_WAIT, as Linux decides it
 * (tcp_timewait_state_process): when both ends used timestamps, a SYN
 * whose TSval is older than the last one seen is refused (PAWS); the SYN
 * is accepted when its sequence number is beyond what p received, or its
 * TSval newer than the last one seen. */
static int tw_syn_ok(const struct tcp_pcb *p, const struct ts_rx_probe *pr,
		     uint32_t seq)
{
	int ts = pr->syn_ts && (p->flags & TF_TIMESTAMP);
	int32_t age = (int32_t)(p->ts_recent - pr->syn_tsval);

	if (ts && age > 0)
		return 0;
	return TCP_SEQ_GT(seq, p->rcv_nxt) || (ts && age < 0);
}

/* A connection in TIME_WAIT for this 4-tuple ends (lwIP would answer the
 * SYN with a reset or an ACK) when a new SYN may reuse the tuple (pr: its
 * sequence number and timestamp), or unconditionally (pr NULL: the kernel
 * gave the port out again for a connect of ours). */
static void tw_reuse(uint32_t raddr, uint16_t rport, uint16_t lport,
		     uint32_t seq, const struct ts_rx_probe *pr)
{
	struct tcp_pcb *p;

	for (p = tcp_tw_pcbs; p; p = p->next) {
		if (p->local_port != ntohs(lport) ||
		    p->remote_port != ntohs(rport) ||
		    ip4_addr_get_u32(ip_2_ip4(&p->remote_ip)) != raddr)
			continue;
		if (!pr || tw_syn_ok(p, pr, seq))
			tcp_abort(p); /* TIME_WAIT: freed, no segment sent */
		return;
	}
}

/* Whether a listener's accept queue is full, as Linux counts it
 * (sk_acceptq_is_full: more than backlog connections queued). */
static int acq_full(const struct tcp_pcb_listen *lp)
{
	const struct ts_tcp *l = lp ? lp->callback_arg : NULL;

	return l && l->acq_len > l->backlog;
}

/* Linux with a full accept queue (tcp_abort_on_overflow 0, its default)
 * drops a new SYN, and drops the ACK that would complete a handshake, so
 * that the client retransmits until the application accepts; lwIP would
 * complete the handshake and then abort it with a reset. So: a SYN to a
 * listener whose queue is full, and a segment completing a handshake on
 * such a listener, never reach lwIP (lwIP's SYN-ACK retransmission and
 * the client's own SYN retransmission then carry on as on Linux). */
static int listen_overflow(struct tcp_pcb *p, uint16_t dport, uint8_t flags)
{
	struct tcp_pcb_listen *lp;

	if ((flags & (TCP_SYN | TCP_ACK | TCP_RST)) == TCP_SYN && !p) {
		for (lp = tcp_listen_pcbs.listen_pcbs; lp; lp = lp->next)
			if (lp->local_port == ntohs(dport))
				break;
		if (!acq_full(lp))
			return 0;
	} else if (p && p->state == SYN_RCVD &&
		   (flags & (TCP_SYN | TCP_ACK | TCP_RST)) == TCP_ACK) {
		if (!acq_full(p->listener))
			return 0;
	} else {
		return 0;
	}
	ts_stats->tcp.listen_overflow++;
	return 1;
}

int ts_tcp__rx_pre(uint32_t saddr, uint16_t sport, uint16_t dport,
		   uint32_t seq, uint8_t flags, struct ts_rx_probe *pr)
{
	struct tcp_pcb *p;

	pr->pcb = NULL;
	if ((flags & (TCP_SYN | TCP_ACK)) == TCP_SYN)
		tw_reuse(saddr, sport, dport, seq, pr);
	p = active_pcb(saddr, sport, dport);
	if (listen_overflow(p, dport, flags))
		return 1;

	pr->pcb = p && p->callback_arg && p->unacked ? p : NULL;
	if (pr->pcb) {
		pr->infr = !!(p->flags & TF_INFR);
		pr->lastack = p->lastack;
		pr->dupacks = p->dupacks;
	}
	return 0;
}

void ts_tcp__rx_post(struct ts_rx_probe *pr)
{
	struct tcp_pcb *p;
	struct ts_tcp *t;

	if (!pr->pcb)
		return;
	for (p = tcp_active_pcbs; p && p != pr->pcb; p = p->next)
		;
	if (!p || !(t = p->callback_arg))
		return; /* gone during the input */
	if (!pr->infr && (p->flags & TF_INFR)) {
		t->recover = p->snd_nxt;
		return;
	}
	if (pr->infr && p->lastack != pr->lastack && p->unacked &&
	    TCP_SEQ_LT(p->lastack, t->recover) && tcp_rexmit(p) == ERR_OK) {
		tcp_set_flags(p, TF_INFR);
		ts_stats->tcp.newreno_rexmits++;
		tcp_output(p);
		return;
	}
	if (!pr->infr && p->lastack == pr->lastack && p->dupacks > pr->dupacks &&
	    p->dupacks < 3 && p->unacked) {
		/* A duplicate ACK before lwIP's fast retransmit (at three).
		 * Limited transmit (RFC 3042): the first two each let one new
		 * segment out beyond cwnd, so that a small window still
		 * collects three duplicate ACKs. When no new segment can go,
		 * early retransmit (RFC 5827): with N < 4 segments out, N - 1
		 * duplicate ACKs are all there will ever be, and waiting for
		 * three means waiting for the retransmission timeout. */
		const struct tcp_seg *s = p->unacked;
		u32_t before = p->snd_nxt;
		unsigned n = 0;

		if (p->unsent) {
			tcpwnd_size_t cwnd = p->cwnd;

			p->cwnd = (tcpwnd_size_t)(cwnd + p->dupacks * p->mss);
			tcp_output(p);
			p->cwnd = cwnd;
		}
		if (p->snd_nxt != before)
			return; /* a new segment went: its ACK will tell */
		for (; s && n < 4; s = s->next)
			n++;
		if (n >= 2 && n < 4 && p->dupacks >= n - 1) {
			tcp_rexmit_fast(p);
			if (p->flags & TF_INFR) {
				t->recover = p->snd_nxt;
				ts_stats->tcp.early_rexmits++;
				tcp_output(p);
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* waiting                                                             */

/* Drive the XSKs and wait until ready(t) (checked under the locks) or the
 * timeout (ns, <0 forever). kfd >= 0: also wake when that kernel fd is
 * readable (returns 1 then). 0 ready, 1 kernel fd, -EAGAIN timeout,
 * -EINTR. Called and returns without the locks. */
static int tcp_wait(struct ts_tcp *t, int (*ready)(struct ts_tcp *),
		    int64_t timeout_ns, int kfd)
{
	unsigned long g0 = ts_sig__norestart_gen();
	uint64_t start = ts_now_ns(), deadline, spin_end;
	unsigned iter = 0;
	struct ts_spin sp;
	int kdue = 0;

	deadline = timeout_ns < 0 ? UINT64_MAX : start + (uint64_t)timeout_ns;
	spin_end = ts_cfg.spin_usec < 0 ? UINT64_MAX :
					  start + (uint64_t)ts_cfg.spin_usec * 1000;
	ts_spin__start(&sp, start);
	for (;;) {
		int r;

		if (ts_stack__any_busy() || ready(t) || (iter & 1023) == 0) {
			ts_lwip__lock();
			if (ts_stack__any_busy())
				ts_stack__poll_all();
			r = ready(t);
			ts_lwip__unlock();
			if (r)
				return 0;
		}
		if (kfd >= 0 && (kdue || iter == 0)) {
			struct pollfd pf = { .fd = kfd, .events = POLLIN };

			kdue = 0;
			if (ts_real_poll(&pf, 1, 0) > 0)
				return 1;
		}
		if (ts_sig__norestart_gen() != g0)
			return -EINTR;
		iter++;
		if ((iter & 63) == 0) {
			uint64_t now = ts_now_ns();

			if (now >= deadline)
				return -EAGAIN;
			kdue |= ts_spin__tick(&sp, now);
			if (now >= spin_end) {
				struct pollfd pf[TS_XSK_POLLFDS + 2];
				int n = 0, k, ms = 10, helped = 0;
				uint64_t v;

				/* a receiver leaves the XSKs to the helper
				 * thread (tcp_lwip.c, rx_sleepers); a sender
				 * waits for ACKs, which wake nobody */
				if (ready != ready_tx)
					helped = ts_lwip__rx_sleep_begin();
				for (k = 0; !helped && k < ts_stack__count(); k++) {
					struct ts_stack *st = ts_stack__at(k);

					if (!ts_stack__usable(st))
						continue;
					n += ts_stack__poll_fds(st, &pf[n],
								TS_XSK_POLLFDS - n);
				}
				if (ts_sig_efd >= 0) {
					pf[n].fd = ts_sig_efd;
					pf[n++].events = POLLIN;
				}
				if (kfd >= 0) {
					pf[n].fd = kfd;
					pf[n++].events = POLLIN;
				}
				if (deadline != UINT64_MAX &&
				    (deadline - now) / 1000000 < (uint64_t)ms)
					ms = (int)((deadline - now) / 1000000) + 1;
				__atomic_add_fetch(&ts_wait_sleepers, 1, __ATOMIC_ACQ_REL);
				if (ts_sig_efd >= 0)
					(void)!ts_real_read(ts_sig_efd, &v, sizeof(v));
				/* a wake-up written after the read above ends
				 * the poll; one before it is seen by ready();
				 * a change that wrote none (the kernel fd) is
				 * caught by the bounded sleep */
				if (ts_sig__norestart_gen() == g0 && !ready(t))
					ts_real_poll(pf, (nfds_t)n, ms);
				__atomic_sub_fetch(&ts_wait_sleepers, 1, __ATOMIC_ACQ_REL);
				if (helped)
					ts_lwip__rx_sleep_end();
				iter = 0;
				kdue = 1;
			}
		} else {
			ts_cpu_relax();
		}
	}
}

static int ready_connect(struct ts_tcp *t)
{
	return t->state != T_CONNECTING;
}

static int ready_rx(struct ts_tcp *t)
{
	return t->rx_avail || t->rx_eof || t->so_error || t->shut_rd ||
	       t->state == T_CLOSED;
}

static int ready_tx(struct ts_tcp *t)
{
	return !t->pcb || t->so_error || t->state != T_CONN ||
	       (tcp_sndbuf(t->pcb) > 0 &&
		tcp_sndqueuelen(t->pcb) < TCP_SND_QUEUELEN / 2);
}

static int ready_accept(struct ts_tcp *t)
{
	return t->acq_head != NULL;
}

/* After lwIP ran on this thread: wake the threads sleeping in the
 * library when a callback changed something they may wait for. */
static void unlock_wake(void)
{
	int ev = tcp_event;

	tcp_event = 0;
	ts_lwip__unlock();
	if (ev && __atomic_load_n(&ts_wait_sleepers, __ATOMIC_ACQUIRE))
		ts_lwip__wake();
}

/* ------------------------------------------------------------------ */
/* socket, bind, listen, connect, accept                               */

void ts_tcp__socket(int fd, int type)
{
	struct ts_tcp *t;

	if (!ts_tcp_on || fd < 0 || fd >= 65536)
		return;
	t = shadow_new(fd, !!(type & SOCK_NONBLOCK));
	if (t)
		tab_set(fd, t);
}

int ts_tcp__bind(struct ts_tcp *t, int fd, const struct sockaddr *addr,
		 socklen_t len)
{
	(void)t;
	return ts_real_bind(fd, addr, len);
}

static int local_of(int fd, uint32_t *addr, uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof(sa);

	if (ts_real_getsockname(fd, (struct sockaddr *)&sa, &l) < 0 ||
	    sa.sin_family != AF_INET)
		return -1;
	*addr = sa.sin_addr.s_addr;
	*port = sa.sin_port;
	return 0;
}

int ts_tcp__listen(struct ts_tcp *t, int fd, int backlog)
{
	int idx[8], n, i, r, kernel_first;
	struct ts_stack *sts[8];
	struct tcp_pcb *pcb, *lp;
	ip_addr_t a;
	err_t err;

	if (t->state == T_LISTEN) {
		t->backlog = backlog < 0 ? 0 : backlog;
		return ts_real_listen(fd, backlog);
	}
	if (t->state != T_NEW)
		return ts_real_listen(fd, backlog);
	/* The kernel listens too: connections it can see (loopback, other
	 * interfaces) queue there; steered SYNs never reach it. On a bound
	 * port it listens last, once the steering and lwIP's listener exist:
	 * a client that knew the port and connected in between would
	 * otherwise complete its handshake with the kernel and lose the
	 * connection when the steering started. An unbound socket gets its
	 * port from listen() itself, which nobody can reach before it
	 * returns. */
	kernel_first = local_of(fd, &t->laddr, &t->lport) < 0 || !t->lport ||
		       tcp_connect_only;
	if (kernel_first) {
		r = ts_real_listen(fd, backlog);
		if (r < 0)
			return r;
	}
	if (tcp_connect_only)
		return tcp_fallback(t, fd, TS_FB_ASKED, "TICKSTACK_TCP=connect "
				    "keeps listeners on the kernel", NULL);
	if (kernel_first && local_of(fd, &t->laddr, &t->lport) < 0)
		return tcp_fallback(t, fd, TS_FB_SHAPE, "no local address",
				    NULL);
	n = (ntohl(t->laddr) >> 24) == 127 ? 0 : ts_iface__for(t->laddr, idx, 8);
	/* XSKs are created under the control lock, never under lwIP's */
	ts_lock();
	for (i = 0; i < n; i++)
		sts[i] = ts_stack__get(idx[i], 1);
	ts_unlock();
	ts_lwip__lock();
	t->hold = hold_new(t->laddr, t->lport);
	for (i = 0; t->hold && i < n; i++)
		if (sts[i])
			hold_add(t->hold, sts[i]);
	if (!t->hold || !t->hold->n) {
		enum ts_fb_why why = TS_FB_NOXSK;

		hold_put(t->hold);
		t->hold = NULL;
		ts_lwip__unlock();
		for (i = 0; i < n; i++)
			if (ts_stack__why_none(idx[i]) == TS_FB_QUEUE)
				why = TS_FB_QUEUE;
		if (!kernel_first && ts_real_listen(fd, backlog) < 0)
			return -1;
		return tcp_fallback(t, fd, why, why == TS_FB_QUEUE ?
				    "another process holds the queue of its "
				    "interface" : "no XDP-capable interface "
				    "owns its local address", NULL);
	}
	pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
	if (!pcb)
		goto out_nomem;
	ip_set_option(pcb, SOF_REUSEADDR);
	set_v4(&a, t->laddr);
	err = tcp_bind(pcb, &a, ntohs(t->lport));
	if (err != ERR_OK) {
		tcp_abort(pcb);
		goto out_nomem;
	}
	lp = tcp_listen_with_backlog_and_err(pcb, 255, &err);
	if (!lp) {
		tcp_abort(pcb);
		goto out_nomem;
	}
	t->pcb = lp;
	t->backlog = backlog < 0 ? 0 : backlog;
	tcp_arg(lp, t);
	tcp_accept(lp, cb_accept);
	if (!kernel_first && ts_real_listen(fd, backlog) < 0) {
		/* the kernel refused (EADDRINUSE ...): so does listen(), with
		 * nothing left behind; a SYN lwIP took meanwhile is reset, as
		 * the kernel resets a SYN to a port nobody listens on */
		r = errno;
		tcp_arg(lp, NULL);
		tcp_accept(lp, NULL);
		tcp_close(lp);
		t->pcb = NULL;
		hold_put(t->hold);
		t->hold = NULL;
		ts_lwip__unlock();
		errno = r;
		return -1;
	}
	t->state = T_LISTEN;
	tcp_stats_slot(t);
	ts_stats->tcp.listen_accel++;
	TS_INC(ts_stats->sockets_accelerated);
	ts_lwip__unlock();
	ts_ctl__wake(); /* the control thread: it answers the inspection
			 * tools (capture.c) of a TCP-only process too */
	return 0;
out_nomem:
	hold_put(t->hold);
	t->hold = NULL;
	ts_lwip__unlock();
	if (!kernel_first && ts_real_listen(fd, backlog) < 0)
		return -1;
	return tcp_fallback(t, fd, TS_FB_MEMORY, "lwIP refused the listener",
			    NULL);
}

/* How the handshake ended, said once: 0, or -1 with its error (none: the
 * error when SO_ERROR took it); EISCONN once said. */
static int connect_report(struct ts_tcp *t, int none)
{
	int r;

	ts_lwip__lock();
	if (t->connect_done) {
		r = EISCONN;
	} else if (t->state == T_CONN) {
		r = 0;
	} else {
		r = t->so_error ? t->so_error : none;
		t->so_error = 0;
	}
	t->connect_done = 1;
	ts_lwip__unlock();
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

/* connect on a stream already connecting or connected, as Linux's
 * __inet_stream_connect answers it: EALREADY while the handshake runs (a
 * blocking socket waits for its end, up to SO_SNDTIMEO); once it ended,
 * the next connect reports how (0, or the error, ECONNABORTED when
 * SO_ERROR took it), and every later one says EISCONN. */
static int connect_again(struct ts_tcp *t)
{
	int r = 0;

	if (t->state == T_CONNECTING) {
		int nb = tcp_nonblock(t);

		if (!nb)
			r = tcp_wait(t, ready_connect, ts_timeo__wait_ns(&t->sndtimeo_ns), -1);
		if (nb || r == -EAGAIN) {
			errno = EALREADY;
			return -1;
		}
		if (r == -EINTR) {
			errno = EINTR;
			return -1;
		}
	}
	return connect_report(t, ECONNABORTED);
}

/* Why a connect leaves for the kernel, and the reason counted. */
struct conn_fb {
	enum ts_fb_why fb;
	const char *why;
};

/* connect, step 1: the route, the interface and the local address (the
 * kernel binds the port and keeps it reserved). 0, or -1 with f set. */
static int connect__route(struct ts_tcp *t, int fd,
			  const struct sockaddr_in *sa, struct ts_nexthop *nh,
			  struct conn_fb *f)
{
	char ifname[IF_NAMESIZE];
	int r;

	r = ts_lwip__resolve(sa->sin_addr.s_addr, 1000);
	if (r == -EAGAIN) {
		f->why = "the next hop's MAC address did not resolve";
		f->fb = TS_FB_NOROUTE;
		return -1;
	}
	if (r) {
		f->why = "destination is local, broadcast or has no route";
		f->fb = TS_FB_LOCAL;
		return -1;
	}
	ts_lwip__lock();
	r = ts_lwip__nexthop(sa->sin_addr.s_addr, nh);
	ts_lwip__unlock();
	if (r || !if_indextoname((unsigned)nh->ifindex, ifname) ||
	    !ts_iface__allowed(ifname)) {
		f->why = "the route leaves through an interface not accelerated";
		return -1;
	}
	if (local_of(fd, &t->laddr, &t->lport) < 0) {
		f->why = "no local address";
		return -1;
	}
	if (!t->lport) {
		struct sockaddr_in any = { .sin_family = AF_INET,
					   .sin_addr.s_addr = t->laddr };

		/* the kernel picks the port and keeps it reserved */
		if (ts_real_bind(fd, (struct sockaddr *)&any, sizeof(any)) < 0 ||
		    local_of(fd, &t->laddr, &t->lport) < 0) {
			f->why = "the kernel could not bind a local port";
			return -1;
		}
	}
	if (!t->laddr)
		t->laddr = nh->prefsrc;
	t->raddr = sa->sin_addr.s_addr;
	t->rport = sa->sin_port;
	return 0;
}

/* connect, step 2: the outgoing interface's XSK, lwIP's netif for the
 * local address, the steering entry. 0 with the core lock held and *nifp
 * set; -1 with f set and the lock released. */
static int connect__steer(struct ts_tcp *t, const struct ts_nexthop *nh,
			  struct netif **nifp, struct conn_fb *f)
{
	struct ts_stack *st;
	struct netif *nif;

	ts_lock();
	st = ts_stack__get(nh->ifindex, 1);
	ts_unlock();
	ts_lwip__lock();
	nif = st ? ts_lwip__netif(st, t->laddr) : NULL;
	if (!nif) {
		ts_lwip__unlock();
		f->why = st ? "its local address is not on the outgoing interface" :
			      "no XSK on the outgoing interface";
		f->fb = st ? TS_FB_NOXSK : ts_stack__why_none(nh->ifindex);
		return -1;
	}
	t->hold = hold_new(t->laddr, t->lport);
	if (!t->hold || hold_add(t->hold, st)) {
		hold_put(t->hold);
		t->hold = NULL;
		ts_lwip__unlock();
		f->why = "the steering entry could not be installed";
		return -1;
	}
	*nifp = nif;
	return 0;
}

/* connect, step 3 (under the core lock): lwIP's pcb bound to the local
 * address and port and connecting, its SYNs on Linux's schedule. 0, or -1
 * when lwIP refused (no pcb left on t). */
static int connect__pcb(struct ts_tcp *t, struct netif *nif)
{
	struct tcp_pcb *pcb;
	ip_addr_t a;

	pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
	if (!pcb)
		return -1;
	ip_set_option(pcb, SOF_REUSEADDR);
	tcp_bind_netif(pcb, nif);
	set_v4(&a, t->laddr);
	if (tcp_bind(pcb, &a, ntohs(t->lport)) != ERR_OK) {
		tcp_abort(pcb);
		return -1;
	}
	t->pcb = pcb;
	callbacks(pcb, t);
	apply_opts(t);
	t->state = T_CONNECTING;
	/* lwIP refuses a tuple it still holds in TIME_WAIT; the kernel gave
	 * this port out again, so that connection is over */
	tw_reuse(t->raddr, t->rport, t->lport, 0, NULL);
	set_v4(&a, t->raddr);
	if (tcp_connect(pcb, &a, ntohs(t->rport), cb_connected) != ERR_OK) {
		tcp_arg(pcb, NULL);
		tcp_abort(pcb);
		t->pcb = NULL;
		t->state = T_NEW;
		return -1;
	}
	/* the SYNs follow Linux's schedule (rexmit_limits), not lwIP's */
	lx_load();
	t->rto0 = pcb->rto; /* lwIP's initial RTO, back once connected */
	pcb->rto = 0x7fff;
	t->syn_start = ts_now_ns();
	t->syn_next = t->syn_start + 1000 * MS;
	return 0;
}

/* connect: through lwIP when the route, the XSK and lwIP allow it (steps
 * 1-3), else on the kernel socket (counted). As the libc call: 0, or -1
 * with errno (EINPROGRESS for a non-blocking socket). */
int ts_tcp__connect(struct ts_tcp *t, int fd, const struct sockaddr *addr,
		    socklen_t len)
{
	const struct sockaddr_in *sa = (const struct sockaddr_in *)addr;
	struct conn_fb f = { .fb = TS_FB_NOXSK };
	struct ts_nexthop nh;
	struct netif *nif;
	int r;

	if (t->state == T_LISTEN) {
		errno = EISCONN;
		return -1;
	}
	if (t->state != T_NEW)
		return connect_again(t);
	if (!addr || len < sizeof(*sa) || sa->sin_family != AF_INET)
		goto kernel_quiet;
	if (connect__route(t, fd, sa, &nh, &f) ||
	    connect__steer(t, &nh, &nif, &f))
		goto kernel;
	if (connect__pcb(t, nif))
		goto out_lwip;
	tcp_stats_slot(t);
	ts_stats->tcp.conns_accel++;
	ts_stats->tcp.conns_live++;
	TS_INC(ts_stats->sockets_accelerated);
	unlock_wake();
	ts_ctl__wake(); /* as for a listener */
	if (tcp_nonblock(t)) {
		errno = EINPROGRESS;
		return -1;
	}
	r = tcp_wait(t, ready_connect, -1, -1);
	if (r == -EINTR) {
		errno = EINTR; /* the connection goes on, as on the kernel */
		return -1;
	}
	return connect_report(t, ECONNREFUSED);
out_lwip:
	hold_put(t->hold);
	t->hold = NULL;
	ts_lwip__unlock();
	f.why = "lwIP refused the connection";
	f.fb = TS_FB_MEMORY;
kernel:
	if (tcp_fallback(t, fd, f.fb, f.why, NULL) < 0)
		return -1;
	return ts_real_connect(fd, addr, len);
kernel_quiet: /* the kernel's answer (AF_UNSPEC, a bad address...) */
	to_kernel(t, fd);
	return ts_real_connect(fd, addr, len);
}

/* The options an accepted socket inherits from its listener (Linux
 * copies the listening socket), copied from the listener's kernel socket
 * to the accepted one's placeholder, which answers getsockopt for it. The
 * kernel reports SO_RCVBUF and SO_SNDBUF doubled and doubles what it is
 * given: halved on the way. */
static void inherit_kernel_opts(int lfd, int nfd)
{
	static const struct {
		int level, opt;
	} opts[] = {
		{ SOL_SOCKET, SO_KEEPALIVE },	 { SOL_SOCKET, SO_RCVBUF },
		{ SOL_SOCKET, SO_SNDBUF },	 { SOL_SOCKET, SO_LINGER },
		{ SOL_SOCKET, SO_RCVLOWAT },
		{ SOL_SOCKET, SO_RCVTIMEO },	 { SOL_SOCKET, SO_SNDTIMEO },
		{ IPPROTO_IP, IP_TOS },		 { IPPROTO_IP, IP_TTL },
		{ IPPROTO_TCP, TCP_NODELAY },	 { IPPROTO_TCP, TCP_KEEPIDLE },
		{ IPPROTO_TCP, TCP_KEEPINTVL },	 { IPPROTO_TCP, TCP_KEEPCNT },
		{ IPPROTO_TCP, TCP_USER_TIMEOUT }, { IPPROTO_TCP, TCP_LINGER2 },
		/* receive timestamps (SO_TIMESTAMPING_NEW last: it reads the
		 * flags only when they were set through it) */
		{ SOL_SOCKET, SO_TIMESTAMPING_OLD }, { SOL_SOCKET, SO_TIMESTAMP_OLD },
		{ SOL_SOCKET, SO_TIMESTAMPNS_OLD }, { SOL_SOCKET, SO_TIMESTAMP_NEW },
		{ SOL_SOCKET, SO_TIMESTAMPNS_NEW }, { SOL_SOCKET, SO_TIMESTAMPING_NEW },
	};
	union {
		int i;
		struct linger lg;
		struct timeval tv;
	} v;
	unsigned i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		socklen_t l = sizeof(v);

		if (ts_real_getsockopt(lfd, opts[i].level, opts[i].opt, &v, &l) < 0)
			continue;
		if (opts[i].level == SOL_SOCKET &&
		    (opts[i].opt == SO_RCVBUF || opts[i].opt == SO_SNDBUF))
			v.i /= 2;
		/* a timestamp flag that is off is left alone: turning one
		 * off clears what another turned on */
		if (opts[i].level == SOL_SOCKET && !v.i &&
		    (opts[i].opt == SO_TIMESTAMP_OLD || opts[i].opt == SO_TIMESTAMP_NEW ||
		     opts[i].opt == SO_TIMESTAMPNS_OLD ||
		     opts[i].opt == SO_TIMESTAMPNS_NEW ||
		     opts[i].opt == SO_TIMESTAMPING_NEW))
			continue;
		ts_real_setsockopt(nfd, opts[i].level, opts[i].opt, &v, l);
	}
	/* not the listener's SO_PRIORITY: Linux gives the child the SYN's
	 * (0 off the wire); IP_TOS above set the placeholder's from the TOS */
	v.i = 0;
	ts_real_setsockopt(nfd, SOL_SOCKET, SO_PRIORITY, &v, sizeof(v.i));
}

int ts_tcp__accept(struct ts_tcp *t, int fd, struct sockaddr *addr,
		   socklen_t *len, int flags)
{
	struct ts_tcp *c;
	int r, nfd;

	if (t->state != T_LISTEN)
		return ts_real_accept4(fd, addr, len, flags);
	for (;;) {
		ts_lwip__lock();
		if (ts_stack__any_busy())
			ts_stack__poll_all();
		c = t->acq_head;
		if (c) {
			t->acq_head = c->acq_next;
			if (!t->acq_head)
				t->acq_tail = NULL;
			t->acq_len--;
			c->acq_next = NULL;
		}
		unlock_wake();
		if (c)
			break;
		if (!tcp_nonblock(t)) {
			r = tcp_wait(t, ready_accept, -1, fd);
			if (r == -EINTR) {
				errno = EINTR;
				return -1;
			}
			if (r == 0)
				continue;
		}
		/* the kernel's own queue (other interfaces, loopback) */
		{
			struct pollfd pf = { .fd = fd, .events = POLLIN };

			if (ts_real_poll(&pf, 1, 0) > 0) {
				r = ts_real_accept4(fd, addr, len, flags);
				if (r >= 0)
					ts_stats->tcp.conns_kernel++;
				return r;
			}
		}
		if (tcp_nonblock(t)) {
			errno = EAGAIN;
			return -1;
		}
	}
	/* its fd: an unbound kernel stream socket */
	nfd = ts_real_socket(AF_INET,
			     SOCK_STREAM | (flags & (SOCK_NONBLOCK | SOCK_CLOEXEC)),
			     0);
	ts_lwip__lock();
	if (nfd < 0 || nfd >= 65536) {
		int e = nfd < 0 ? errno : EMFILE;

		if (nfd >= 0)
			ts_real_close(nfd);
		conn_drop(c);
		ts_lwip__unlock();
		errno = e;
		return -1;
	}
	c->fd = nfd;
	c->nonblock = !!(flags & SOCK_NONBLOCK);
	tcp_stats_slot(c);
	tab_set(nfd, c);
	TS_INC(ts_stats->sockets_accelerated);
	ts_lwip__unlock();
	inherit_kernel_opts(fd, nfd);
	if (addr && len) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = c->rport,
					  .sin_addr.s_addr = c->raddr };

		memcpy(addr, &sa, *len < sizeof(sa) ? *len : sizeof(sa));
		*len = sizeof(sa);
	}
	return nfd;
}

/* ------------------------------------------------------------------ */
/* receive and send                                                    */

#define TCP_RECV_FLAGS (MSG_DONTWAIT | MSG_PEEK | MSG_WAITALL | MSG_NOSIGNAL)

/* Whether pcb has taken in the peer's FIN. */
static int fin_in(const struct tcp_pcb *pcb)
{
	return pcb->state == CLOSE_WAIT || pcb->state == CLOSING ||
	       pcb->state == LAST_ACK || pcb->state == TIME_WAIT;
}

/* Copy up to want bytes from the queue into msg's iov at *done; consume
 * unless peek. Under the locks. */
static size_t rx_copy(struct ts_tcp *t, struct msghdr *msg, size_t *done,
		      int peek, uint64_t *rx_ns)
{
	size_t iov_i = 0, iov_off = *done, copied = 0;
	uint32_t h = t->rxh;
	uint16_t off = t->rx_off;

	/* find the iov position of *done */
	while (iov_i < (size_t)msg->msg_iovlen &&
	       iov_off >= msg->msg_iov[iov_i].iov_len) {
		iov_off -= msg->msg_iov[iov_i].iov_len;
		iov_i++;
	}
	while (h != t->rxt && iov_i < (size_t)msg->msg_iovlen) {
		struct pbuf *p = t->rxq[h % RXQ_CAP];
		size_t room = msg->msg_iov[iov_i].iov_len - iov_off;
		size_t left = (size_t)p->tot_len - off;
		size_t c = room < left ? room : left;

		if (c > 0xffff)
			c = 0xffff;
		pbuf_copy_partial(p, (char *)msg->msg_iov[iov_i].iov_base + iov_off,
				  (u16_t)c, off);
		if (ts_unlikely(t->rxq_ns)) /* tcp_recvmsg: the last skb's */
			*rx_ns = t->rxq_ns[h % RXQ_CAP];
		copied += c;
		off = (uint16_t)(off + c);
		iov_off += c;
		if (iov_off == msg->msg_iov[iov_i].iov_len) {
			iov_i++;
			iov_off = 0;
		}
		if (off == p->tot_len) {
			if (!peek)
				pbuf_free(p);
			h++;
			off = 0;
		}
	}
	if (!peek) {
		t->rxh = h;
		t->rx_off = off;
		t->rx_avail -= copied;
		if (t->pcb && copied) {
			size_t n = copied;

			if (fin_in(t->pcb)) {
				/* the peer's FIN is in: it sends nothing more,
				 * and a window update (tcp_recved sends one per
				 * TCP_WND_UPDATE_THRESHOLD read) would reach a
				 * peer that may have exited, whose kernel resets
				 * it; Linux sends none then (its socket is closed
				 * for receiving). The window is still given back,
				 * silently: lwIP resets on close a connection
				 * whose window is not whole (unread data). */
				tcpwnd_size_t w = t->pcb->rcv_wnd;

				t->pcb->rcv_wnd = n >= (size_t)(TCP_WND_MAX(t->pcb) - w) ?
							  TCP_WND_MAX(t->pcb) :
							  (tcpwnd_size_t)(w + n);
				n = 0;
			}
			while (n) {
				u16_t k = (u16_t)(n > 0xffff ? 0xffff : n);

				tcp_recved(t->pcb, k);
				n -= k;
			}
			/* data cb_recv could not queue: room now */
			if (t->pcb && t->pcb->refused_data)
				tcp_process_refused_data(t->pcb);
		}
	}
	*done += copied;
	return copied;
}

static size_t iov_total(const struct msghdr *msg)
{
	size_t n = 0, i;

	for (i = 0; i < (size_t)msg->msg_iovlen; i++)
		n += msg->msg_iov[i].iov_len;
	return n;
}

/* tcp_recvmsg's end: the receive timestamp of the last segment read
 * from (tcp_recv_timestamp), when the socket asked for one. */
static ssize_t tcp_recv_done(struct ts_tcp *t, struct msghdr *msg, size_t ctl,
			     size_t done, uint64_t rx_ns)
{
	if (ts_unlikely(rx_ns) && t->tscm) {
		size_t used = 0;

		msg->msg_controllen = ctl;
		ts_rx__tstamp_cmsgs(msg, &used, t->tscm, t->tsnew, rx_ns);
		msg->msg_controllen = used;
	}
	return (ssize_t)done;
}

ssize_t ts_tcp__recvmsg(struct ts_tcp *t, int fd, struct msghdr *msg,
			int flags)
{
	int nonblock = tcp_nonblock(t) || (flags & MSG_DONTWAIT);
	size_t want = iov_total(msg), done = 0, ctl = msg->msg_controllen;
	uint64_t rx_ns = 0;
	int r;

	if (t->state == T_NEW || t->state == T_LISTEN ||
	    (flags & MSG_ERRQUEUE)) /* the stack queues no error: the
				     * kernel's (empty) queue answers */
		return ts_real_recvmsg(fd, msg, flags);
	if (flags & ~TCP_RECV_FLAGS) {
		ts_dbg("fd %d: recv flags 0x%x not supported on an accelerated "
		       "stream", fd, flags);
		errno = EOPNOTSUPP;
		return -1;
	}
	msg->msg_namelen = 0;
	msg->msg_controllen = 0;
	msg->msg_flags = 0;
	if (!want)
		return 0;
	for (;;) {
		int err = 0, eof;

		ts_lwip__lock();
		if (ts_stack__any_busy())
			ts_stack__poll_all();
		if (t->rx_avail)
			rx_copy(t, msg, &done, !!(flags & MSG_PEEK), &rx_ns);
		if (!done)
			ack_owed_flush(t); /* about to wait or say EAGAIN */
		eof = t->rx_eof || t->shut_rd || t->state == T_CLOSED;
		if (!done && t->so_error && !t->rx_avail) {
			err = t->so_error;
			t->so_error = 0;
		}
		unlock_wake();
		if (err) {
			errno = err;
			return -1;
		}
		if (done == want || eof || (done && !(flags & MSG_WAITALL)) ||
		    (flags & MSG_PEEK && done))
			return tcp_recv_done(t, msg, ctl, done, rx_ns);
		if (nonblock) {
			if (done)
				return tcp_recv_done(t, msg, ctl, done, rx_ns);
			errno = EAGAIN;
			return -1;
		}
		r = tcp_wait(t, ready_rx, ts_timeo__wait_ns(&t->rcvtimeo_ns), -1);
		if (r < 0) {
			if (done)
				return tcp_recv_done(t, msg, ctl, done, rx_ns);
			errno = r == -EINTR ? EINTR : EAGAIN;
			return -1;
		}
	}
}

#define TCP_SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE)

static ssize_t send_fail(int err, int flags)
{
	if (err == EPIPE && !(flags & MSG_NOSIGNAL))
		pthread_kill(pthread_self(), SIGPIPE);
	errno = err;
	return -1;
}

static ssize_t tcp_send(struct ts_tcp *t, int fd, const struct msghdr *msg,
			int flags, int nonblock)
{
	size_t want = iov_total(msg), done = 0, iov_i = 0, iov_off = 0;
	int r;

	if (t->state == T_NEW || t->state == T_LISTEN)
		return ts_real_sendmsg(fd, msg, flags);
	if (flags & ~TCP_SEND_FLAGS) {
		ts_dbg("fd %d: send flags 0x%x not supported on an accelerated "
		       "stream", fd, flags);
		errno = EOPNOTSUPP;
		return -1;
	}
	for (;;) {
		int err = 0;

		ts_lwip__lock();
		if (ts_stack__any_busy())
			ts_stack__poll_all();
		if (t->so_error) {
			/* reported by this call unless it already queued
			 * bytes: then by the next, as Linux does */
			err = t->so_error;
			if (!done)
				t->so_error = 0;
		} else if (t->state == T_CLOSED || t->shut_wr || !t->pcb) {
			err = t->state == T_CONNECTING ? 0 : EPIPE;
		} else if (t->state == T_CONN) {
			while (done < want && iov_i < (size_t)msg->msg_iovlen) {
				size_t room = tcp_sndbuf(t->pcb);
				size_t c = msg->msg_iov[iov_i].iov_len - iov_off;
				u8_t wf = TCP_WRITE_FLAG_COPY;

				if (tcp_sndqueuelen(t->pcb) >= TCP_SND_QUEUELEN - 4)
					room = 0;
				if (c > room)
					c = room;
				if (c > 0xffff)
					c = 0xffff;
				if (!c && msg->msg_iov[iov_i].iov_len) {
					break;
				}
				if (done + c < want || (flags & MSG_MORE))
					wf |= TCP_WRITE_FLAG_MORE;
				if (c && tcp_write(t->pcb,
						   (char *)msg->msg_iov[iov_i].iov_base +
							   iov_off,
						   (u16_t)c, wf) != ERR_OK)
					break;
				done += c;
				iov_off += c;
				if (iov_off == msg->msg_iov[iov_i].iov_len) {
					iov_i++;
					iov_off = 0;
				}
			}
			if (done < want)
				t->nospace = 1; /* room wakes it (cb_sent) */
			if (!(flags & MSG_MORE) || done < want)
				tcp_output(t->pcb);
		}
		unlock_wake();
		if (err) {
			if (done)
				break;
			return send_fail(err, flags);
		}
		if (done == want)
			break;
		if (nonblock) {
			if (done)
				break;
			errno = EAGAIN;
			return -1;
		}
		r = tcp_wait(t, ready_tx, ts_timeo__wait_ns(&t->sndtimeo_ns), -1);
		if (r < 0) {
			if (done)
				break;
			errno = r == -EINTR ? EINTR : EAGAIN;
			return -1;
		}
	}
	t->stats->tx_accel += done;
	return (ssize_t)done;
}

ssize_t ts_tcp__sendmsg(struct ts_tcp *t, int fd, const struct msghdr *msg,
			int flags)
{
	return tcp_send(t, fd, msg, flags, tcp_nonblock(t) || (flags & MSG_DONTWAIT));
}

/* What the queue can take now (sendfile and splice read no more than that
 * from a pipe, which cannot take bytes back), waiting for room on a
 * blocking stream (SO_SNDTIMEO); -1 with errno as a send would set it. */
ssize_t ts_tcp__send_room(struct ts_tcp *t, int flags)
{
	for (;;) {
		size_t room = 0;
		int err = 0, r;

		ts_lwip__lock();
		if (t->so_error) {
			err = t->so_error;
			t->so_error = 0;
		} else if (t->state == T_CLOSED || t->shut_wr || !t->pcb) {
			err = EPIPE;
		} else if (t->state == T_CONN &&
			   tcp_sndqueuelen(t->pcb) < TCP_SND_QUEUELEN - 4) {
			room = tcp_sndbuf(t->pcb);
		}
		if (!room && !err)
			t->nospace = 1;
		ts_lwip__unlock();
		if (err)
			return send_fail(err, flags);
		if (room)
			return (ssize_t)room;
		if (tcp_nonblock(t) || (flags & MSG_DONTWAIT)) {
			errno = EAGAIN;
			return -1;
		}
		r = tcp_wait(t, ready_tx, ts_timeo__wait_ns(&t->sndtimeo_ns), -1);
		if (r < 0) {
			errno = r == -EINTR ? EINTR : EAGAIN;
			return -1;
		}
	}
}

/* Bytes already taken from their source (a pipe): all sent, waiting for
 * room whatever O_NONBLOCK says. */
ssize_t ts_tcp__send_all(struct ts_tcp *t, int fd, const void *buf,
			 size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	return tcp_send(t, fd, &msg, flags, 0);
}

/* ------------------------------------------------------------------ */
/* shutdown, close, dup                                                */

int ts_tcp__shutdown(struct ts_tcp *t, int fd, int how)
{
	if (t->state == T_NEW || t->state == T_LISTEN)
		return ts_real_shutdown(fd, how);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	if (t->state != T_CONN && t->state != T_CLOSED) {
		errno = ENOTCONN;
		return -1;
	}
	ts_lwip__lock();
	if (how != SHUT_WR)
		t->shut_rd = 1;
	if (how != SHUT_RD && !t->shut_wr) {
		t->shut_wr = 1;
		if (t->pcb) {
			tcp_shutdown(t->pcb, 0, 1);
			tcp_output(t->pcb);
		}
	}
	unlock_wake();
	return 0;
}

static void linger_add(struct tcp_pcb *pcb, struct ts_tcp *t, int kfd)
{
	struct ts_linger *l = calloc(1, sizeof(*l));

	if (!l) {
		hold_put(t->hold);
		if (kfd >= 0)
			ts_real_close(kfd);
		return;
	}
	l->pcb = pcb;
	l->lport = pcb->local_port;
	l->rport = pcb->remote_port;
	l->kfd = kfd;
	l->hold = t->hold;
	l->next = lingers;
	lingers = l;
	ts_stats->tcp.ports_held++;
}

static void cb_err_linger(void *arg, err_t err)
{
	(void)arg;
	(void)err; /* the tick finds the pcb gone */
}

/* Under the locks; the shadow is gone from the table. */
static void tcp_destroy(struct ts_tcp *t)
{
	struct ts_tcp *c;

	if (t->state == T_LISTEN) {
		tcp_arg(t->pcb, NULL);
		tcp_close(t->pcb);
		/* connections never accepted are reset, as the kernel does */
		while ((c = t->acq_head)) {
			t->acq_head = c->acq_next;
			conn_drop(c);
		}
		hold_put(t->hold);
	} else if (t->pcb) {
		struct tcp_pcb *pcb = t->pcb;
		int unread = t->rx_avail > 0;
		int kfd = -1;

		tcp_arg(pcb, NULL);
		tcp_recv(pcb, NULL); /* lwIP's tcp_recv_null from here on */
		tcp_err(pcb, cb_err_linger);
		rxq_free(t);
		if (t->linger0 || unread || t->state == T_CONNECTING) {
			/* the kernel's rules: unread data or SO_LINGER 0 ->
			 * reset; a connect in progress just ends (lwIP sends
			 * nothing for a pcb in SYN_SENT) */
			tcp_abort(pcb);
			ts_stats->tcp.conns_live--;
			hold_put(t->hold);
		} else {
			if (tcp_close(pcb) != ERR_OK) {
				tcp_abort(pcb);
				ts_stats->tcp.conns_live--;
				hold_put(t->hold);
			} else {
				/* a connecting socket's own port: keep it
				 * reserved while lwIP finishes */
				if (t->hold && t->hold->refs == 1 && t->fd >= 0)
					kfd = ts_real_fcntl(t->fd,
							    F_DUPFD_CLOEXEC, 0);
				linger_add(pcb, t, kfd);
			}
		}
	} else {
		rxq_free(t);
		hold_put(t->hold);
	}
	if (t->stats != &t->dummy)
		t->stats->in_use = 2;
	free(t);
}

void ts_tcp__close(int fd)
{
	struct ts_tcp *t = ts_tcp__of(fd);

	if (!t)
		return;
	ts_lwip__lock();
	tab_set(fd, NULL);
	if (--t->refs == 0)
		tcp_destroy(t);
	unlock_wake();
}

void ts_tcp__dup(int oldfd, int newfd)
{
	struct ts_tcp *t = ts_tcp__of(oldfd);

	if (!t || newfd < 0 || newfd >= 65536)
		return;
	ts_lwip__lock();
	t->refs++;
	tab_set(newfd, t);
	ts_lwip__unlock();
}

/* Timer thread, under the locks: closed connections lwIP no longer
 * lists release their steering; in TIME_WAIT their port reservation. */
void ts_tcp__tick(void)
{
	struct ts_linger **pp = &lingers, *l;
	uint64_t now = ts_now_ns();
	struct tcp_pcb *q;

again:
	for (q = tcp_active_pcbs; q; q = q->next) {
		struct ts_tcp *t = q->callback_arg;

		if (t && t->pcb == q && rexmit_limits(q, t, now))
			goto again; /* freed: the list changed */
	}

	while ((l = *pp)) {
		struct tcp_pcb *p;
		int active = 0, tw = 0;

		for (p = tcp_active_pcbs; p && !active; p = p->next)
			active = p == l->pcb && p->local_port == l->lport &&
				 p->remote_port == l->rport;
		for (p = tcp_tw_pcbs; p && !active && !tw; p = p->next)
			tw = p == l->pcb && p->local_port == l->lport &&
			     p->remote_port == l->rport;
		if (tw && l->kfd >= 0) {
			ts_real_close(l->kfd);
			l->kfd = -1;
		}
		if (active || tw) {
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		if (l->kfd >= 0)
			ts_real_close(l->kfd);
		hold_put(l->hold);
		ts_stats->tcp.ports_held--;
		ts_stats->tcp.conns_live--;
		free(l);
	}
}

/* ------------------------------------------------------------------ */
/* names and options                                                   */

static int put_addr(struct sockaddr *addr, socklen_t *len, uint32_t a,
		    uint16_t p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = p,
				  .sin_addr.s_addr = a };

	if (!addr || !len) {
		errno = EFAULT;
		return -1;
	}
	memcpy(addr, &sa, *len < sizeof(sa) ? *len : sizeof(sa));
	*len = sizeof(sa);
	return 0;
}

int ts_tcp__getpeername(struct ts_tcp *t, int fd, struct sockaddr *addr,
			socklen_t *len)
{
	if (t->state == T_CONN || (t->state == T_CLOSED && t->rport))
		return put_addr(addr, len, t->raddr, t->rport);
	if (t->state == T_CONNECTING) {
		errno = ENOTCONN;
		return -1;
	}
	return ts_real_getpeername(fd, addr, len);
}

int ts_tcp__getsockname(struct ts_tcp *t, int fd, struct sockaddr *addr,
			socklen_t *len)
{
	if (t->state == T_CONN || t->state == T_CONNECTING ||
	    t->state == T_CLOSED)
		return put_addr(addr, len, t->laddr, t->lport);
	return ts_real_getsockname(fd, addr, len);
}

/* Linux's TCP state numbers (include/net/tcp_states.h) of lwIP's */
static uint8_t linux_state(const struct ts_tcp *t)
{
	static const uint8_t map[] = {
		[CLOSED] = 7,      [LISTEN] = 10,    [SYN_SENT] = 2,
		[SYN_RCVD] = 3,    [ESTABLISHED] = 1, [FIN_WAIT_1] = 4,
		[FIN_WAIT_2] = 5,  [CLOSE_WAIT] = 8, [CLOSING] = 11,
		/* Linux hands TIME_WAIT to a mini socket: the application's
		 * socket reports TCP_CLOSE from then on */
		[LAST_ACK] = 9,    [TIME_WAIT] = 7,
	};

	if (t->state == T_LISTEN)
		return 10;
	if (!t->pcb || (unsigned)t->pcb->state >= sizeof(map))
		return 7; /* TCP_CLOSE */
	return map[t->pcb->state];
}

/* TCP_INFO from the connection lwIP carries (the kernel socket is only a
 * placeholder): the kernel's answer for the length and the fields lwIP
 * does not keep (zero), then what it does. */
static int tcp_info(struct ts_tcp *t, int fd, void *val, socklen_t *len)
{
	struct tcp_info ti;
	struct tcp_pcb *p;
	struct tcp_seg *sg;
	socklen_t n;
	int r;

	r = ts_real_getsockopt(fd, IPPROTO_TCP, TCP_INFO, val, len);
	if (r < 0)
		return r;
	n = *len < sizeof(ti) ? *len : (socklen_t)sizeof(ti);
	memset(val, 0, *len);
	memset(&ti, 0, sizeof(ti));
	ts_lwip__lock();
	ti.tcpi_state = linux_state(t);
	p = t->state == T_LISTEN ? NULL : t->pcb;
	if (p) {
		ti.tcpi_retransmits = p->nrtx;
		ti.tcpi_backoff = p->nrtx;
		if (p->flags & TF_WND_SCALE) {
			ti.tcpi_options |= TCPI_OPT_WSCALE;
			ti.tcpi_snd_wscale = p->snd_scale & 0xf;
			ti.tcpi_rcv_wscale = p->rcv_scale & 0xf;
		}
#if LWIP_TCP_TIMESTAMPS
		if (p->flags & TF_TIMESTAMP)
			ti.tcpi_options |= TCPI_OPT_TIMESTAMPS;
#endif
		ti.tcpi_rto = (uint32_t)p->rto * 2 * TS_TCP_TMR_MS * 1000;
		/* payload per segment, the timestamps option taken off, as
		 * Linux's mss_cache; advmss is the MSS itself */
		ti.tcpi_snd_mss = tcp_mss(p);
		ti.tcpi_rcv_mss = tcp_mss(p);
		ti.tcpi_advmss = p->mss;
		ti.tcpi_pmtu = p->mss + 40u;
		for (sg = p->unacked; sg; sg = sg->next)
			ti.tcpi_unacked++;
		/* lwIP keeps srtt * 8 and rttvar in timer ticks */
		ti.tcpi_rtt = (uint32_t)(p->sa >> 3) * 2 * TS_TCP_TMR_MS * 1000;
		ti.tcpi_rttvar = (uint32_t)p->sv * 2 * TS_TCP_TMR_MS * 1000;
		ti.tcpi_snd_cwnd = p->mss ? p->cwnd / p->mss : 0;
		ti.tcpi_snd_ssthresh = p->mss ? p->ssthresh / p->mss : 0;
		ti.tcpi_rcv_space = p->rcv_wnd;
		ti.tcpi_rcv_ssthresh = p->rcv_ann_wnd;
	}
	ts_lwip__unlock();
	memcpy(val, &ti, n);
	return 0;
}

int ts_tcp__getsockopt(struct ts_tcp *t, int fd, int level, int opt,
		       void *val, socklen_t *len, int *r)
{
	if (level == IPPROTO_TCP && opt == TCP_INFO && val && len &&
	    ts_tcp__accel(t)) {
		*r = tcp_info(t, fd, val, len);
		return 1;
	}
	/* TCP_MAXSEG of a connection lwIP carries: its payload per segment,
	 * as Linux's mss_cache (the placeholder kernel socket, never
	 * connected, would answer its default 536: iperf3 then warns that its
	 * datagrams exceed the MSS); a listener's and an unconnected
	 * socket's come from the kernel socket, as before */
	if (level == IPPROTO_TCP && opt == TCP_MAXSEG && val && len &&
	    *len >= sizeof(int) && t->state == T_CONN) {
		int mss = -1;

		ts_lwip__lock();
		if (t->pcb)
			mss = tcp_mss(t->pcb);
		ts_lwip__unlock();
		if (mss > 0) {
			*(int *)val = mss;
			*len = sizeof(int);
			*r = 0;
			return 1;
		}
	}
	if (level == SOL_SOCKET && opt == SO_ERROR && val && len &&
	    *len >= sizeof(int)) {
		ts_lwip__lock();
		*(int *)val = t->so_error;
		t->so_error = 0;
		ts_lwip__unlock();
		*len = sizeof(int);
		*r = 0;
		return 1;
	}
	return 0;
}

/* The receive timestamps the kernel socket kfd would write, from what
 * it reports of its flags (sk_getsockopt): SOCK_RCVTSTAMP(NS),
 * SOCK_TSTAMP_NEW and sk_tsflags. A stamp exists when this socket asks
 * the kernel to take them (SO_TIMESTAMP*, SOF_TIMESTAMPING_RX_SOFTWARE);
 * tcp_recv_timestamp reports it as SCM_TIMESTAMPING with
 * SOF_TIMESTAMPING_SOFTWARE, unless OPT_RX_FILTER without RX_SOFTWARE. */
#ifndef SOF_TIMESTAMPING_OPT_RX_FILTER
#define SOF_TIMESTAMPING_OPT_RX_FILTER (1 << 17) /* Linux 6.12 */
#endif
static void tstamp_from_kernel(struct ts_tcp *t, int kfd)
{
	static const int opts[] = { SO_TIMESTAMP_OLD, SO_TIMESTAMPNS_OLD,
				    SO_TIMESTAMP_NEW, SO_TIMESTAMPNS_NEW,
				    SO_TIMESTAMPING_OLD };
	int v[5] = { 0 }, cm = 0, rcv, i;

	for (i = 0; i < 5; i++) {
		socklen_t l = sizeof(v[i]);

		ts_real_getsockopt(kfd, SOL_SOCKET, opts[i], &v[i], &l);
	}
	rcv = v[0] || v[1] || v[2] || v[3];
	if (rcv)
		cm |= v[1] || v[3] ? TS_CM_TSTAMPNS : TS_CM_TSTAMP;
	if ((rcv || (v[4] & SOF_TIMESTAMPING_RX_SOFTWARE)) &&
	    (v[4] & SOF_TIMESTAMPING_SOFTWARE) &&
	    ((v[4] & SOF_TIMESTAMPING_RX_SOFTWARE) ||
	     !(v[4] & SOF_TIMESTAMPING_OPT_RX_FILTER)))
		cm |= TS_CM_TSTAMPING;
	if (cm)
		__atomic_store_n(&ts_tstamp_wanted, 1, __ATOMIC_RELAXED);
	ts_lwip__lock();
	t->tscm = cm;
	t->tsnew = v[2] || v[3];
	if (!t->tsnew && v[4]) {
		int f = 0;
		socklen_t l = sizeof(f);

		ts_real_getsockopt(kfd, SOL_SOCKET, SO_TIMESTAMPING_NEW, &f, &l);
		t->tsnew = f != 0;
	}
	ts_lwip__unlock();
}

/* SO_TIMESTAMPING flags an accelerated stream serves: software receive
 * stamps (the kernel's transmit stamps count bytes acknowledged or sent
 * by its TCP, which lwIP does not report). */
#define TCP_TSING_OK (SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | \
		      SOF_TIMESTAMPING_OPT_RX_FILTER)

/* Before the kernel sees the option: SO_TIMESTAMPING with flags the stack
 * does not serve (transmit, hardware, SOFTWARE alone) moves a socket not yet connected or listening to the
 * kernel (counted: kernel_option), or fails (TICKSTACK_REQUIRE=1, and on
 * a stream already accelerated, which cannot move). 0 or -1 with errno. */
int ts_tcp__setsockopt_pre(struct ts_tcp *t, int fd, int level, int opt,
			   const void *val, socklen_t len)
{
	int iv = 0;

	if (level != SOL_SOCKET ||
	    (opt != SO_TIMESTAMPING_OLD && opt != SO_TIMESTAMPING_NEW))
		return 0;
	if (val && len >= sizeof(int))
		memcpy(&iv, val, sizeof(int));
	/* SOFTWARE without RX_SOFTWARE reports stamps other sockets made the
	 * kernel take: the kernel's business, as on UDP */
	if (!((unsigned)iv & ~TCP_TSING_OK) &&
	    (!(iv & SOF_TIMESTAMPING_SOFTWARE) ||
	     (iv & SOF_TIMESTAMPING_RX_SOFTWARE)))
		return 0;
	if (t->state == T_NEW)
		return tcp_fallback(t, fd, TS_FB_OPTION,
				    "SO_TIMESTAMPING (transmit or hardware "
				    "stamps, or SOFTWARE without RX_SOFTWARE)",
				    &ts_stats->kernel_option);
	ts_log("fd %d: SO_TIMESTAMPING flags 0x%x (transmit or hardware stamps, "
	       "or SOFTWARE without RX_SOFTWARE) on an accelerated stream: "
	       "refused (EOPNOTSUPP); set them before connect or listen, and "
	       "the socket stays on the kernel", fd, iv);
	errno = EOPNOTSUPP;
	return -1;
}

void ts_tcp__setsockopt(struct ts_tcp *t, int fd, int level, int opt,
			const void *val, socklen_t len)
{
	int iv = 0;

	if (val && len >= sizeof(int))
		memcpy(&iv, val, sizeof(int));
	if (level == SOL_SOCKET &&
	    (opt == SO_TIMESTAMP_OLD || opt == SO_TIMESTAMP_NEW ||
	     opt == SO_TIMESTAMPNS_OLD || opt == SO_TIMESTAMPNS_NEW ||
	     opt == SO_TIMESTAMPING_OLD || opt == SO_TIMESTAMPING_NEW))
		tstamp_from_kernel(t, fd);
	ts_lwip__lock();
	if (level == SOL_SOCKET) {
		if (opt == SO_RCVTIMEO_OLD || opt == SO_RCVTIMEO_NEW)
			ts_timeo__set(&t->rcvtimeo_ns, val, len);
		else if (opt == SO_SNDTIMEO_OLD || opt == SO_SNDTIMEO_NEW)
			ts_timeo__set(&t->sndtimeo_ns, val, len);
		else if (opt == SO_KEEPALIVE)
			t->keepalive = !!iv;
		else if (opt == SO_LINGER && len >= sizeof(struct linger)) {
			const struct linger *lg = val;

			t->linger0 = lg->l_onoff && !lg->l_linger;
		}
	} else if (level == IPPROTO_TCP) {
		if (opt == TCP_NODELAY)
			t->nodelay = !!iv;
		else if (opt == TCP_QUICKACK)
			t->quickack = !!iv;
		else if (opt == TCP_KEEPIDLE)
			t->keep_idle = iv;
		else if (opt == TCP_KEEPINTVL)
			t->keep_intvl = iv;
		else if (opt == TCP_KEEPCNT)
			t->keep_cnt = iv;
		else if (opt == TCP_SYNCNT && iv >= 1 && iv <= 127)
			t->syncnt = iv;
		else if (opt == TCP_USER_TIMEOUT && iv >= 0)
			t->user_timeout = (unsigned)iv;
	}
	if (t->state != T_LISTEN)
		apply_opts(t);
	ts_lwip__unlock();
}

void ts_tcp__set_nonblock(struct ts_tcp *t, int on)
{
	/* read by other threads' calls on the socket */
	__atomic_store_n(&t->nonblock, on, __ATOMIC_RELAXED);
}

int ts_tcp__fionread(struct ts_tcp *t, int *out)
{
	if (t->state != T_CONN && t->state != T_CLOSED)
		return 0;
	ts_lwip__lock();
	*out = (int)t->rx_avail;
	ts_lwip__unlock();
	return 1;
}

/* ------------------------------------------------------------------ */
/* readiness                                                           */

int ts_tcp__accel(struct ts_tcp *t)
{
	return t && t->state != T_NEW;
}

int ts_tcp__stream(struct ts_tcp *t)
{
	return t && t->state != T_NEW && t->state != T_LISTEN;
}

int ts_tcp__kernel_watch(struct ts_tcp *t)
{
	return t->state == T_LISTEN;
}

/* As Linux's tcp_poll reports it (which also notes a writer waiting for
 * room when the stream is not writable). */
short ts_tcp__revents(struct ts_tcp *t, short events, struct ts_edges *edges)
{
	short ev = 0;

	ts_lwip__lock();
	if (edges)
		*edges = t->edges;
	switch (t->state) {
	case T_LISTEN:
		if (t->acq_head)
			ev |= POLLIN;
		break;
	case T_CONNECTING:
		break;
	case T_CONN:
		if (t->rx_avail)
			ev |= POLLIN;
		else
			ack_owed_flush(t);
		if (t->rx_eof || t->shut_rd)
			ev |= POLLIN | POLLRDHUP;
		if (t->shut_wr || (t->pcb && tcp_sndbuf(t->pcb) > 0 &&
				   tcp_sndqueuelen(t->pcb) < TCP_SND_QUEUELEN / 2))
			ev |= POLLOUT;
		else
			t->nospace = 1;
		if (t->rx_eof && t->shut_wr)
			ev |= POLLHUP;
		break;
	default: /* T_CLOSED */
		ev |= POLLIN | POLLRDHUP | POLLOUT | POLLHUP;
		if (t->so_error)
			ev |= POLLERR;
	}
	ts_lwip__unlock();
	return (short)(ev & (events | POLLERR | POLLHUP));
}

/* ------------------------------------------------------------------ */
/* life cycle                                                          */

static int tcp__owns(int fd)
{
	return ts_tcp__of(fd) != NULL;
}

int ts_tcp__init(void)
{
	static const struct ts_stack_tcp_up up = {
		.input = ts_tcp__input,
		.drain = ts_tcp__input_drain,
	};
	static const struct ts_lwip_up lwip_up = {
		.tick = ts_tcp__tick,
		.rx_pre = ts_tcp__rx_pre,
		.rx_post = ts_tcp__rx_post,
		.batch_end = ts_tcp__batch_end,
		.events = ts_tcp__events,
		.fw_due = ts_tcp__fw_due,
		.fw_active = ts_tcp__fw_active,
		.fw_pollfds = ts_tcp__fw_pollfds,
		.fw_run = ts_tcp__fw_run,
	};
	const char *v = getenv("TICKSTACK_TCP");
	int err;

	/* with TCP off too: a segment steered by an older program is
	 * counted (tcp.rx_no_netif) and dropped */
	ts_stack__register_tcp(&up);
	ts_lwip__register(&lwip_up);
	ts_dump__part(ts_tcp__snapshot);
	ts_xdpd__register_owner(TS_STEER_TCP, tcp__owns);
	if (!v || !*v || !strcmp(v, "0"))
		return 0;
	if (!strcmp(v, "connect")) {
		tcp_connect_only = 1;
	} else if (strcmp(v, "1")) {
		ts_log("invalid TICKSTACK_TCP=%s: expected 0, 1 or connect; fix or "
		       "unset it", v);
		return -EINVAL;
	}
	ts_tcp_tab = calloc(65536, sizeof(*ts_tcp_tab));
	if (!ts_tcp_tab)
		return -ENOMEM;
	err = ts_lwip__start();
	if (err) {
		ts_log("TCP acceleration unavailable: %s", strerror(-err));
		free(ts_tcp_tab);
		ts_tcp_tab = NULL;
		return 0;
	}
	__atomic_store_n(&ts_tcp_on, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Connections still closing (under the core lock): closed by the
 * application and not yet in TIME_WAIT, or with a FIN of ours not yet
 * acknowledged, or acknowledged and the peer's FIN not yet come
 * (FIN_WAIT_2: a peer that closes when it reads our end, as a server
 * does, sends its FIN a moment later; once the process is gone the kernel
 * would reset it: redis-cli's exit against redis-server). */
static int closing_count(void)
{
	struct ts_linger *l;
	struct tcp_pcb *p;
	int n = 0;

	for (p = tcp_active_pcbs; p; p = p->next)
		n += p->callback_arg &&
		     (p->state == FIN_WAIT_1 || p->state == FIN_WAIT_2 ||
		      p->state == CLOSING || p->state == LAST_ACK);
	for (l = lingers; l; l = l->next)
		for (p = tcp_active_pcbs; p; p = p->next)
			if (p == l->pcb && p->local_port == l->lport &&
			    p->remote_port == l->rport) {
				n++;
				break;
			}
	/* TIME_WAIT, recently entered or re-entered (lwIP restarts tmr on a
	 * retransmitted FIN): our last ACK may have been lost, and the peer's
	 * next FIN would find only the kernel, which resets it. Quiet means
	 * twice our own RTO estimate, at least 400 ms, without a FIN. */
	for (p = tcp_tw_pcbs; p; p = p->next) {
		u32_t quiet = (u32_t)p->rto * 2;

		if (quiet < 400 / (2 * TS_TCP_TMR_MS))
			quiet = 400 / (2 * TS_TCP_TMR_MS);
		n += (u32_t)(tcp_ticks - p->tmr) < quiet;
	}
	return n;
}

/* At exit: send a FIN on every open accelerated connection, then give the
 * closing ones up to 1.5 s to finish their FIN exchange. On the kernel a
 * process's exit leaves that to the kernel; here nothing answers for the
 * connection once the process is gone (the kernel then gets its segments
 * and resets them), so the library waits, driving the XSKs, until each
 * has closed, or reached TIME_WAIT and stayed there quiet long enough
 * for a lost last ACK to have shown (see closing_count). */
void ts_tcp__fini(void)
{
	uint64_t end;
	int fd, n;

	if (!ts_tcp_on)
		return;
	ts_lwip__lock();
	for (fd = 0; fd < 65536; fd++) {
		struct ts_tcp *t = ts_tcp_tab[fd];

		if (t && t->fd == fd && t->pcb && t->state == T_CONN)
			tcp_shutdown(t->pcb, 0, 1);
	}
	fw_fini();
	ts_lwip__unlock();
	end = ts_now_ns() + 1500000000ull;
	do {
		ts_lwip__lock();
		ts_stack__poll_all();
		n = closing_count();
		ts_lwip__unlock();
		if (n)
			usleep(1000);
	} while (n && ts_now_ns() < end);
}

/* A forked child has no timer thread and no XSK of its own: its streams
 * are the parent's. New sockets of the child use the kernel. */
void ts_tcp__after_fork_child(void)
{
	int fd, n = 0;

	fw_after_fork_child();
	ts_tcp_on = 0;
	tcp_forked = 1;
	for (fd = 0; ts_tcp_tab && fd < 65536; fd++) {
		struct ts_tcp *t = ts_tcp_tab[fd];
		int sp[2], cloexec;

		if (!t || t->state != T_LISTEN)
			continue;
		if (n++ < 4)
			ts_log("fd %d is a listener the parent accelerates: its "
			       "connections go to the parent, so accept in this "
			       "child fails (EOPNOTSUPP); run a server that accepts "
			       "in forked children with TICKSTACK_TCP=connect "
			       "(listeners on the kernel)", fd);
		/* This process's fd becomes a dead stream that poll, select
		 * and epoll report readable, so that the child's accept runs
		 * and fails at once; the kernel listener, shared with the
		 * parent, is left alone. */
		cloexec = ts_real_fcntl(fd, F_GETFD);
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
			continue;
		ts_real_close(sp[1]);
		if (sp[0] != fd)
			ts_real_syscall(SYS_dup3, sp[0], fd,
				cloexec > 0 && (cloexec & FD_CLOEXEC) ? O_CLOEXEC : 0);
		ts_real_close(sp[0]);
	}
}

int ts_tcp__inherited_listener(int fd)
{
	struct ts_tcp *t;

	if (!tcp_forked || !ts_tcp_tab || fd < 0 || fd >= 65536)
		return 0;
	t = ts_tcp_tab[fd];
	return t && t->state == T_LISTEN;
}

/* ------------------------------------------------------------------ */
/* fork: streams and listeners shared with forked children             *
 *
 * lwIP's connections live in this process's memory and only this
 * process has the XSK: a forked child cannot run them, and a live TCP
 * connection cannot move to the kernel (the kernel knows no such
 * connection). So at the fork this process (the owner) hands every
 * accelerated connection to a kernel object both processes can share: a
 * connected AF_UNIX stream pair. One end (A) replaces the application's
 * fd, in the parent too, before the fork, so that parent and child hold
 * the same open file as they would a kernel socket: either may read,
 * write, poll, shut down or close it, and the last close ends it. The
 * owner's TCP thread pumps bytes between the other end (B) and lwIP,
 * with flow control both ways (lwIP's window opens as B takes bytes;
 * B's bytes are taken as lwIP's send buffer has room). A listener becomes
 * a SOCK_SEQPACKET pair: every process's fd is the end C, readable when a
 * connection waits, and accept on it receives one (an end A of a new
 * pair and its placeholder socket, passed with SCM_RIGHTS), so that any
 * number of processes (pre-fork workers) accept, each connection once.
 * Connections the kernel listener takes (loopback, other interfaces) are
 * passed the same way as the kernel sockets they are. What the owner
 * records per shared object (struct fw_name, copied into the child by
 * the fork) answers getsockname, getpeername and the options that a
 * unix socket cannot. The owner must outlive its children's use of
 * them: its exit ends them (docs/dataplane-design.md, "Fork"). */

struct fw_conn {              /* owner: a connection pumped through b */
	struct fw_conn *next;
	struct ts_tcp *t;     /* out of the table: fd -1 */
	int b;                /* our end of the pair */
	int kfd;              /* its placeholder kernel socket (options) */
	int b_eof;            /* b said end of stream: our FIN is queued */
	int eof_sent;         /* the peer's FIN passed on (shutdown(b)) */
	int want_out;         /* b was full */
	/* bytes taken from b that lwIP did not queue yet: sent first,
	 * never dropped (FW_PEND_MAX) */
	char *pend;
	size_t pend_len, pend_off;
};

struct fw_lis {               /* owner: a listener passing connections */
	struct fw_lis *next;
	struct ts_tcp *t;
	int p;                /* our end of the SEQPACKET pair */
	int klfd;             /* the kernel listener (non-blocking) */
	int want_out;         /* p was full */
	short rev, krev;
};

struct fw_name {              /* every process: what a shared fd is */
	struct fw_name *next;
	ino_t ino;            /* of the unix socket (fstat) */
	int listener;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	int kfd;              /* kernel socket answering options, or -1 */
};

struct fw_msg {               /* one connection passed to an acceptor */
	uint32_t kernel;      /* 1: the fd is the kernel's own connection */
	uint32_t laddr, raddr;
	uint16_t lport, rport;
};

static struct fw_conn *fw_conns;
static struct fw_lis *fw_liss;
static int fw_kick;           /* under the core lock: the pump has work */
static struct fw_name *fw_names;
static pthread_mutex_t fw_names_lock = PTHREAD_MUTEX_INITIALIZER;
static int fw_moved[256]; /* fds the last prepare replaced */
static int fw_moved_any;    /* the pump moved bytes or a connection */
static int fw_nmoved;

static void fw_note(struct ts_tcp *t)
{
	if (t && t->fwd)
		fw_kick = 1;
}

int ts_tcp__fw_due(void)
{
	int k = fw_kick;

	fw_kick = 0;
	return k;
}

int ts_tcp__fw_active(void)
{
	return __atomic_load_n(&fw_conns, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&fw_liss, __ATOMIC_RELAXED);
}

static ino_t fd_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static void name_add(int fd, int listener, uint32_t laddr, uint16_t lport,
		     uint32_t raddr, uint16_t rport, int kfd)
{
	struct fw_name *n = calloc(1, sizeof(*n));

	if (!n)
		return;
	n->ino = fd_ino(fd);
	n->listener = listener;
	n->laddr = laddr;
	n->lport = lport;
	n->raddr = raddr;
	n->rport = rport;
	n->kfd = kfd;
	pthread_mutex_lock(&fw_names_lock);
	n->next = fw_names;
	__atomic_store_n(&fw_names, n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fw_names_lock);
}

/* The record of fd when it is a shared stream or listener; a copy. */
static int name_of(int fd, struct fw_name *out)
{
	struct fw_name *n;
	ino_t ino;

	if (!__atomic_load_n(&fw_names, __ATOMIC_ACQUIRE))
		return 0;
	ino = fd_ino(fd);
	if (!ino)
		return 0;
	pthread_mutex_lock(&fw_names_lock);
	for (n = fw_names; n && n->ino != ino; n = n->next)
		;
	if (n)
		*out = *n;
	pthread_mutex_unlock(&fw_names_lock);
	return n != NULL;
}

/* Options the application set on the placeholder (its setsockopt goes
 * there: a unix socket takes no TCP option) that lwIP's connection
 * follows. */
static void opts_from_kernel(struct ts_tcp *t, int kfd)
{
	struct linger lg;
	socklen_t l = sizeof(int);
	int v;

	if (kfd < 0)
		return;
	if (!ts_real_getsockopt(kfd, IPPROTO_TCP, TCP_NODELAY, &v, &l))
		t->nodelay = !!v;
	l = sizeof(int);
	if (!ts_real_getsockopt(kfd, SOL_SOCKET, SO_KEEPALIVE, &v, &l))
		t->keepalive = !!v;
	l = sizeof(lg);
	if (!ts_real_getsockopt(kfd, SOL_SOCKET, SO_LINGER, &lg, &l))
		t->linger0 = lg.l_onoff && !lg.l_linger;
	apply_opts(t);
}

static struct fw_conn *fw_conn_new(struct ts_tcp *t, int b, int kfd)
{
	struct fw_conn *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->t = t;
	f->b = b;
	f->kfd = kfd;
	t->fwd = 1;
	t->fd = -1;
	t->refs = 1;
	f->next = fw_conns;
	fw_conns = f;
	fw_kick = 1;
	ts_stats->tcp.fork_shared++;
	return f;
}

/* A new pair for a connection: *a (the application's end, blocking and
 * close-on-exec) and *b (ours, non-blocking); 0 or -1. */
static int stream_pair(int *a, int *b)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
		return -1;
	*a = sp[0];
	*b = sp[1];
	ts_real_fcntl(*b, F_SETFL, O_NONBLOCK);
	return 0;
}

/* Put new (an open file) at every fd of the table pointing at t, with
 * that fd's close-on-exec flag; the file's own flags from t. */
static void fds_replace(struct ts_tcp *t, int newf)
{
	int fd;

	if (tcp_nonblock(t))
		ts_real_fcntl(newf, F_SETFL, O_NONBLOCK);
	for (fd = 0; fd < 65536; fd++) {
		int fl;

		if (ts_tcp_tab[fd] != t)
			continue;
		fl = ts_real_fcntl(fd, F_GETFD);
		if (ts_real_dup3(newf, fd, fl > 0 && (fl & FD_CLOEXEC) ?
				 O_CLOEXEC : 0) < 0)
			continue;
		tab_set(fd, NULL);
		if (fw_nmoved < (int)(sizeof(fw_moved) / sizeof(fw_moved[0])))
			fw_moved[fw_nmoved++] = fd;
	}
}

/* atfork prepare, under the core lock: a connection goes to a pair. */
static void fw_share_conn(struct ts_tcp *t)
{
	int a, b, kfd;

	kfd = ts_real_fcntl(t->fd, F_DUPFD_CLOEXEC, 0);
	if (kfd < 0 || stream_pair(&a, &b)) {
		ts_log("fd %d: the accelerated stream cannot be shared with the "
		       "forked child (%s): it stays this process's, the child "
		       "sees an unconnected socket", t->fd, strerror(errno));
		if (kfd >= 0)
			ts_real_close(kfd);
		return;
	}
	name_add(a, 0, t->laddr, t->lport, t->raddr, t->rport, kfd);
	fds_replace(t, a);
	ts_real_close(a);
	if (!fw_conn_new(t, b, kfd)) {
		ts_real_close(b); /* the peer sees the stream end */
		ts_real_close(kfd);
	}
}

static void fw_share_listener(struct ts_tcp *t)
{
	struct fw_lis *f;
	int sp[2], klfd;

	klfd = ts_real_fcntl(t->fd, F_DUPFD_CLOEXEC, 0);
	f = calloc(1, sizeof(*f));
	if (klfd < 0 || !f ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp)) {
		ts_log("fd %d: the accelerated listener cannot be shared with the "
		       "forked child (%s): it stays this process's", t->fd,
		       strerror(errno ? errno : ENOMEM));
		if (klfd >= 0)
			ts_real_close(klfd);
		free(f);
		return;
	}
	ts_real_fcntl(sp[1], F_SETFL, O_NONBLOCK);
	ts_real_fcntl(klfd, F_SETFL, O_NONBLOCK);
	name_add(sp[0], 1, t->laddr, t->lport, 0, 0, klfd);
	fds_replace(t, sp[0]);
	ts_real_close(sp[0]);
	f->t = t;
	f->p = sp[1];
	f->klfd = klfd;
	t->fwd = 1;
	t->fd = -1;
	t->refs = 1;
	f->next = fw_liss;
	fw_liss = f;
	fw_kick = 1;
	ts_stats->tcp.fork_shared++;
}

/* The fds of accelerated streams and listeners (done 0: those the
 * prepare below will share; done 1: those it did share: they no longer
 * name a shadow). */

int ts_tcp__fork_fds(int *fds, int max, int done)
{
	int fd, n = 0;

	if (done) {
		for (n = 0; n < fw_nmoved && n < max; n++)
			fds[n] = fw_moved[n];
		fw_nmoved = 0;
		return n;
	}
	if (!ts_tcp_on)
		return 0;
	for (fd = 0; fd < 65536 && n < max; fd++) {
		struct ts_tcp *t = __atomic_load_n(&ts_tcp_tab[fd], __ATOMIC_ACQUIRE);

		if (t && t->state != T_NEW)
			fds[n++] = fd;
	}
	return n;
}

/* atfork prepare (the control lock held): every accelerated stream and
 * listener of the table becomes shared (above). */
void ts_tcp__fork_prepare(void)
{
	int fd;

	if (!ts_tcp_on)
		return;
	ts_lwip__lock();
	for (fd = 0; fd < 65536; fd++) {
		struct ts_tcp *t = ts_tcp_tab[fd];

		if (!t || t->fd != fd)
			continue;
		if (t->state == T_LISTEN)
			fw_share_listener(t);
		else if (t->state == T_CONN || t->state == T_CONNECTING ||
			 (t->state == T_CLOSED && (t->rx_avail || t->pcb)))
			fw_share_conn(t);
	}
	ts_lwip__unlock();
}

/* ---- the pump (the TCP thread, under the core lock) ---- */

static void fw_conn_end(struct fw_conn *f)
{
	struct ts_tcp *t = f->t;

	opts_from_kernel(t, f->kfd); /* SO_LINGER 0: a reset */
	t->fd = f->kfd; /* a connecting socket's port stays reserved */
	tcp_destroy(t);
	ts_real_close(f->kfd);
	ts_real_close(f->b);
	free(f->pend);
	ts_stats->tcp.fork_shared--;
}

/* lwIP's bytes into b; the peer's FIN as end of stream. */
static void fw_rx(struct fw_conn *f, char *buf, size_t cap)
{
	struct ts_tcp *t = f->t;

	f->want_out = 0;
	while (t->rx_avail) {
		struct iovec iov = { .iov_base = buf, .iov_len = cap };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		size_t done = 0;
		ssize_t w;

		rx_copy(t, &m, &done, 1, &(uint64_t){ 0 });
		w = ts_real_send(f->b, buf, done, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0) {
			f->want_out = w < 0 && errno == EAGAIN;
			return;
		}
		iov.iov_len = (size_t)w;
		done = 0;
		rx_copy(t, &m, &done, 0, &(uint64_t){ 0 });
		fw_moved_any = 1;
		if ((size_t)w < done) {
			f->want_out = 1; /* b is full: its room wakes the pump */
			break;
		}
	}
	ack_owed_flush(t);
	if (!t->rx_avail && (t->rx_eof || t->state == T_CLOSED) &&
	    !f->eof_sent) {
		ts_real_shutdown(f->b, SHUT_WR);
		f->eof_sent = 1;
	}
}

/* The bytes the processes wrote that lwIP has no room for yet wait in
 * f->pend, up to FW_PEND_MAX: the send buffer a kernel socket would
 * have (Linux grows one to tcp_wmem's 4 MiB), so that a writer sees the
 * room it would see on the kernel (a program that stops reading while it
 * cannot write, as socat's PIPE echo does, needs it). */
#define FW_PEND_MAX (4u << 20)

static size_t pend_left(const struct fw_conn *f)
{
	return f->pend_len - f->pend_off;
}

/* Queue f->pend on lwIP's connection, as much as it takes. */
static void fw_flush(struct fw_conn *f)
{
	struct ts_tcp *t = f->t;
	size_t done = 0, n = pend_left(f);
	const char *buf = f->pend + f->pend_off;

	while (done < n && t->pcb && t->state == T_CONN) {
		size_t c = n - done, room = tcp_sndbuf(t->pcb);

		if (tcp_sndqueuelen(t->pcb) >= TCP_SND_QUEUELEN - 4)
			room = 0;
		if (c > room)
			c = room;
		if (c > (size_t)tcp_mss(t->pcb))
			c = (size_t)tcp_mss(t->pcb);
		if (!c || tcp_write(t->pcb, buf + done, (u16_t)c,
				    TCP_WRITE_FLAG_COPY) != ERR_OK)
			break;
		done += c;
	}
	t->stats->tx_accel += done;
	fw_moved_any |= done > 0;
	f->pend_off += done;
	if (done < n && t->pcb)
		t->nospace = 1; /* cb_sent kicks the pump */
	if (!pend_left(f))
		f->pend_off = f->pend_len = 0;
}

/* b's bytes into lwIP (through f->pend); 1: the connection ended (every
 * process closed its end) and f is to be freed. */
static int fw_tx(struct fw_conn *f, char *buf, size_t cap)
{
	struct ts_tcp *t = f->t;

	(void)buf;
	(void)cap;
	if (!t->pcb) /* the connection is gone: as a reset drops them */
		f->pend_off = f->pend_len = 0;
	fw_flush(f);
	while (!f->b_eof && t->state != T_CONNECTING &&
	       pend_left(f) < FW_PEND_MAX) {
		size_t want = FW_PEND_MAX - pend_left(f);
		ssize_t n;

		if (want > 65536)
			want = 65536;
		if (f->pend_off && f->pend_len + want > FW_PEND_MAX) {
			memmove(f->pend, f->pend + f->pend_off, pend_left(f));
			f->pend_len -= f->pend_off;
			f->pend_off = 0;
		}
		if (!f->pend) {
			f->pend = malloc(FW_PEND_MAX);
			if (!f->pend)
				return 1;
		}
		n = ts_real_recv(f->b, f->pend + f->pend_len, want, MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) { /* ECONNRESET: closed with bytes unread */
			ts_dbg("shared stream: %s from the unix end: reset",
			       strerror(errno));
			t->linger0 = 1;
			return 1;
		}
		if (n == 0) {
			f->b_eof = 1;
			break;
		}
		if (!t->pcb)
			continue; /* dropped */
		f->pend_len += (size_t)n;
		fw_moved_any = 1;
		opts_from_kernel(t, f->kfd);
		fw_flush(f);
	}
	/* end of stream from the processes: our FIN once all is queued */
	if (f->b_eof && !pend_left(f) && t->pcb && !t->shut_wr) {
		t->shut_wr = 1;
		tcp_shutdown(t->pcb, 0, 1);
	}
	if (t->pcb)
		tcp_output(t->pcb);
	if (f->pend && !pend_left(f) && f->b_eof) {
		free(f->pend);
		f->pend = NULL;
		f->pend_off = f->pend_len = 0;
	}
	if (f->b_eof && !pend_left(f)) {
		struct pollfd pf = { .fd = f->b, .events = 0 };

		/* POLLHUP: every end A is closed (a shutdown alone says
		 * end of stream without it) */
		if (ts_real_poll(&pf, 1, 0) > 0 && (pf.revents & POLLHUP))
			return 1;
	}
	return 0;
}

static int fw_send(int p, const struct fw_msg *m, const int *fds, int nfds)
{
	char ctl[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl,
			    .msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int)) };
	struct cmsghdr *c;

	memset(ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&h);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	return ts_real_sendmsg(p, &h, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* Pass lwIP's accepted connections, and the kernel listener's, to the
 * acceptors; 1: no process holds the listener any more. */
static int fw_lis_run(struct fw_lis *f)
{
	struct ts_tcp *l = f->t, *c;
	struct fw_msg m;
	int fds[2], a, b, pk, k;

	f->want_out = 0;
	while ((c = l->acq_head)) {
		if (stream_pair(&a, &b))
			return 0;
		pk = ts_real_socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (pk < 0) {
			ts_real_close(a);
			ts_real_close(b);
			return 0;
		}
		inherit_kernel_opts(f->klfd, pk);
		m = (struct fw_msg){ .laddr = c->laddr, .raddr = c->raddr,
				     .lport = c->lport, .rport = c->rport };
		fds[0] = a;
		fds[1] = pk;
		if (fw_send(f->p, &m, fds, 2)) {
			int e = errno;

			f->want_out = e == EAGAIN; /* stays queued in lwIP */
			ts_real_close(a);
			ts_real_close(b);
			ts_real_close(pk);
			return e == EPIPE || e == ECONNREFUSED;
		}
		ts_real_close(a);
		fw_moved_any = 1;
		l->acq_head = c->acq_next;
		if (!l->acq_head)
			l->acq_tail = NULL;
		l->acq_len--;
		c->acq_next = NULL;
		tcp_stats_slot(c); /* its bytes, under fd -1: no fd of ours */
		opts_from_kernel(c, pk);
		if (!fw_conn_new(c, b, pk)) {
			ts_real_close(b);
			ts_real_close(pk);
		}
	}
	/* the kernel's own queue waits in the kernel while the acceptors'
	 * is full */
	while (!f->want_out &&
	       (k = ts_real_accept4(f->klfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		m = (struct fw_msg){ .kernel = 1 };
		if (fw_send(f->p, &m, &k, 1))
			f->want_out = errno == EAGAIN; /* (lost: a full queue) */
		else
			ts_stats->tcp.conns_kernel++;
		ts_real_close(k);
	}
	{
		struct pollfd pf = { .fd = f->p, .events = 0 };

		return ts_real_poll(&pf, 1, 0) > 0 && (pf.revents & POLLHUP);
	}
}

/* The TCP thread's poll: what the pump waits for. */
int ts_tcp__fw_pollfds(struct pollfd *pf, int max)
{
	struct fw_conn *f;
	struct fw_lis *l;
	int n = 0;

	for (f = fw_conns; f && n < max; f = f->next) {
		struct ts_tcp *t = f->t;
		/* b's bytes are taken when lwIP has room for them (cb_sent
		 * kicks the pump), or dropped once the connection is gone */
		int in = !f->b_eof && t->state != T_CONNECTING &&
			 pend_left(f) < FW_PEND_MAX;

		pf[n].fd = f->b;
		pf[n].events = (short)((in ? POLLIN : 0) |
				       (f->want_out ? POLLOUT : 0));
		pf[n++].revents = 0;
	}
	for (l = fw_liss; l && n + 1 < max; l = l->next) {
		pf[n].fd = l->p;
		pf[n].events = l->want_out ? POLLOUT : 0;
		pf[n++].revents = 0;
		pf[n].fd = l->klfd;
		pf[n].events = l->want_out ? 0 : POLLIN;
		pf[n++].revents = 0;
	}
	return n;
}

/* Under the core lock, after that poll: move what can move; 1 when
 * something moved. */
int ts_tcp__fw_run(void)
{
	static char buf[65535];
	struct fw_conn **pp, *f;
	struct fw_lis **lp, *l;
	int i;

	for (pp = &fw_conns; (f = *pp);) {
		int end;

		fw_rx(f, buf, sizeof(buf));
		end = fw_tx(f, buf, sizeof(buf));
		if (!end && f->t->state == T_CLOSED && !f->t->pcb &&
		    f->eof_sent && !f->want_out)
			end = 1; /* reset or timed out: b closes, A's writes fail */
		if (end) {
			*pp = f->next;
			fw_conn_end(f);
			free(f);
			continue;
		}
		pp = &f->next;
	}
	for (lp = &fw_liss; (l = *lp);) {
		if (fw_lis_run(l)) {
			*lp = l->next;
			tcp_destroy(l->t);
			ts_real_close(l->p);
			ts_real_close(l->klfd);
			ts_stats->tcp.fork_shared--;
			free(l);
			continue;
		}
		lp = &l->next;
	}
	i = fw_moved_any;
	fw_moved_any = 0;
	return i;
}

/* ---- every process: calls on a shared fd ---- */

/* accept on a shared listener: 1 (the result in *r) or 0 (not one). */
int ts_tcp__fw_accept(int fd, struct sockaddr *addr, socklen_t *len,
		      int flags, int *r)
{
	struct fw_name n;
	struct fw_msg m;
	char ctl[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	int fds[2] = { -1, -1 }, nf = 0;
	ssize_t got;

	if (!name_of(fd, &n) || !n.listener)
		return 0;
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
		errno = EINVAL;
		*r = -1;
		return 1;
	}
	got = ts_real_recvmsg(fd, &h, (flags & SOCK_CLOEXEC) ? MSG_CMSG_CLOEXEC : 0);
	if (got < 0) {
		*r = -1;
		return 1;
	}
	for (c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			nf = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (nf > 2)
				nf = 2;
			memcpy(fds, CMSG_DATA(c), (size_t)nf * sizeof(int));
		}
	if (got != (ssize_t)sizeof(m) || nf < 1 || (!m.kernel && nf < 2)) {
		/* the owner is gone (end of stream): as a closed listener */
		if (nf > 0)
			ts_real_close(fds[0]);
		if (nf > 1)
			ts_real_close(fds[1]);
		errno = EINVAL;
		*r = -1;
		return 1;
	}
	ts_real_fcntl(fds[0], F_SETFL, (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
	if (m.kernel) {
		if (addr && len && ts_real_getpeername(fds[0], addr, len) < 0)
			*len = 0;
	} else {
		name_add(fds[0], 0, m.laddr, m.lport, m.raddr, m.rport, fds[1]);
		if (addr && len)
			put_addr(addr, len, m.raddr, m.rport);
	}
	*r = fds[0];
	return 1;
}

/* getsockname (peer 0) and getpeername (peer 1) on a shared fd */
int ts_tcp__fw_name(int fd, int peer, struct sockaddr *addr, socklen_t *len,
		    int *r)
{
	struct fw_name n;

	if (!name_of(fd, &n))
		return 0;
	if (peer && n.listener) {
		errno = ENOTCONN;
		*r = -1;
	} else {
		*r = peer ? put_addr(addr, len, n.raddr, n.rport) :
			    put_addr(addr, len, n.laddr, n.lport);
	}
	return 1;
}

/* Options of a shared fd: the unix socket keeps what it has itself
 * (timeouts, the pending error, buffer sizes are the placeholder's);
 * the rest is the placeholder's. set: 1 for setsockopt. */
int ts_tcp__fw_sockopt(int fd, int set, int level, int opt, void *val,
		       socklen_t *len, int *r)
{
	struct fw_name n;
	int v;

	if (!name_of(fd, &n))
		return 0;
	if (!set && level == SOL_SOCKET &&
	    (opt == SO_TYPE || opt == SO_DOMAIN || opt == SO_PROTOCOL ||
	     opt == SO_ACCEPTCONN)) {
		v = opt == SO_TYPE ? SOCK_STREAM :
		    opt == SO_DOMAIN ? AF_INET :
		    opt == SO_PROTOCOL ? IPPROTO_TCP : n.listener;
		if (!val || !len || *len < sizeof(int)) {
			errno = EINVAL;
			*r = -1;
			return 1;
		}
		memcpy(val, &v, sizeof(v));
		*len = sizeof(int);
		*r = 0;
		return 1;
	}
	if (level == SOL_SOCKET &&
	    (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO || opt == SO_RCVLOWAT ||
	     opt == SO_ERROR || n.kfd < 0)) {
		if (set && n.kfd >= 0)
			ts_real_setsockopt(n.kfd, level, opt, val, *len);
		*r = set ? ts_real_setsockopt(fd, level, opt, val, *len) :
			   ts_real_getsockopt(fd, level, opt, val, len);
		return 1;
	}
	if (n.kfd < 0)
		return 0;
	*r = set ? ts_real_setsockopt(n.kfd, level, opt, val, *len) :
		   ts_real_getsockopt(n.kfd, level, opt, val, len);
	return 1;
}

/* atfork child: the pump's ends are the owner's (an end kept here would
 * keep the other side from seeing every process close), and so are the
 * kernel listeners it takes connections from. */
static void fw_after_fork_child(void)
{
	struct fw_name *n;

	pthread_mutex_init(&fw_names_lock, NULL);
	while (fw_conns) {
		struct fw_conn *f = fw_conns;

		fw_conns = f->next;
		ts_real_close(f->b);
		free(f);
	}
	while (fw_liss) {
		struct fw_lis *l = fw_liss;

		fw_liss = l->next;
		ts_real_close(l->p);
		ts_real_close(l->klfd);
		for (n = fw_names; n; n = n->next)
			if (n->kfd == l->klfd)
				n->kfd = -1;
		free(l);
	}
}

/* At exit, under the core lock: the shared connections end with a FIN
 * (nothing serves them once the owner is gone). */
static void fw_fini(void)
{
	struct fw_conn *f;

	for (f = fw_conns; f; f = f->next)
		if (f->t->pcb && f->t->state == T_CONN && !f->t->shut_wr)
			tcp_shutdown(f->t->pcb, 0, 1);
}

/* The snapshot's stream sockets (tickstack-stackdump; the control thread,
 * on request): one entry per fd with what lwIP's pcb holds, in the units
 * TCP_INFO reports (tcp_info above). State: Linux's numbering (ss), with
 * TIME_WAIT as such. */
void ts_tcp__snapshot(struct tickstack_dump *d)
{
	int fd;

	if (!ts_tcp_tab)
		return;
	ts_lwip__lock();
	for (fd = 0; fd < 65536; fd++) {
		struct ts_tcp *t = __atomic_load_n(&ts_tcp_tab[fd],
						   __ATOMIC_ACQUIRE);
		struct tickstack_dump_sock *o;
		struct tcp_pcb *p;

		if (!t || t->state == T_NEW)
			continue;
		o = ts_dump__sock_slot(d);
		if (!o)
			break;
		o->fd = fd;
		o->proto = IPPROTO_TCP;
		o->state = linux_state(t);
		o->laddr = t->laddr;
		o->lport = t->lport;
		o->raddr = t->raddr;
		o->rport = t->rport;
		o->rxq = (uint32_t)t->rx_avail;
		o->rxq_bytes = (uint32_t)t->rx_avail;
		o->backlog = t->state == T_LISTEN ? (uint32_t)t->acq_len : 0;
		if (t->stats) {
			o->rx = t->stats->rx_accel;
			o->tx = t->stats->tx_accel;
		}
		p = t->state == T_LISTEN ? NULL : t->pcb;
		if (!p)
			continue;
		if (p->state == TIME_WAIT)
			o->state = 6;
		o->txq = p->snd_nxt - p->lastack;
		o->txq_segs = p->snd_queuelen;
		o->cwnd = p->cwnd;
		o->ssthresh = p->ssthresh;
		o->snd_wnd = p->snd_wnd;
		o->rcv_wnd = p->rcv_wnd;
		o->mss = p->mss;
		o->srtt_us = (uint32_t)(p->sa >> 3) * 2 * TS_TCP_TMR_MS * 1000;
		o->rto_ms = (uint32_t)p->rto * 2 * TS_TCP_TMR_MS;
		o->nrtx = p->nrtx;
	}
	ts_lwip__unlock();
}
