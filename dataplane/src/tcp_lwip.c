// SPDX-License-Identifier: Apache-2.0
/* tcp_lwip.c - lwIP 2.1.3 (Debian's source, built with src/lwipopts.h
 * into build/liblwip-ts.a and linked in) as the TCP engine: its raw
 * API runs on the application's threads under lwIP's core lock (the TCP
 * layer's lock); its timers run on one helper thread. A netif per (interface,
 * local address) feeds ip4_input() with segments taken from the XSK and
 * sends lwIP's IPv4 packets into UMEM frames behind an Ethernet header
 * whose next hop comes from the kernel's route and neighbour tables
 * (route.c), never from lwIP's ARP. lwIP's own thread (tcpip_init) is not
 * started: nothing else would need it, and without it every lwIP call
 * happens where the library decides, under its locks. */
#include "tcp_lwip.h"
#include "lwip_hooks.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <linux/types.h>

#include "steer_common.h"

/* lwIP's core mutex, normally created by tcpip_init() */
extern sys_mutex_t lock_tcpip_core;

#define TS_LWIP_NETIFS 32

struct ts_nif {
	struct netif nif;
	struct ts_stack *st;
	uint32_t addr;
};

static struct ts_nif nifs[TS_LWIP_NETIFS];
static int nnifs;
static __thread int core_depth;
static pthread_t timer_thread;
static int timer_running;

/* ------------------------------------------------------------------ */
/* locks                                                               */

void ts_lwip__core_enter(void)
{
	if (!core_depth++)
		LOCK_TCPIP_CORE();
}

static void input_process(void);

static int helper_efd = -1;
/* TICKSTACK_TCP=1 and the tables exist (set by ts_tcp__init) */
int ts_tcp_on;
/* tcp.c's callbacks (ts_lwip__register) */
static struct ts_lwip_up up;

void ts_lwip__register(const struct ts_lwip_up *u)
{
	up = *u;
}

void ts_lwip__core_exit(void)
{
	uint64_t one = 1;
	int i, fw;

	if (core_depth == 1)
		input_process(); /* segments queued meanwhile by other threads */
	if (--core_depth)
		return;
	/* one wake-up of the kernel's TX path for what lwIP queued */
	for (i = 0; i < ts_stack__count(); i++)
		if (ts_stack__usable(ts_stack__at(i)))
			ts_stack__flush(ts_stack__at(i));
	fw = up.fw_due();
	UNLOCK_TCPIP_CORE();
	if (fw && helper_efd >= 0) /* the TCP thread pumps (tcp.c, fork) */
		(void)!ts_real_write(helper_efd, &one, sizeof(one));
}

void ts_lwip__lock(void)
{
	ts_lwip__core_enter();
}

void ts_lwip__unlock(void)
{
	ts_lwip__core_exit();
}

void ts_lwip__wake(void)
{
	ts_wait__wake_sleepers();
}

/* ------------------------------------------------------------------ */
/* next hop                                                            */

#define TS_NH_SLOTS 64

struct nh_slot {
	struct ts_nexthop nh;
	uint64_t probed_ns;
};

static struct nh_slot nh_tab[TS_NH_SLOTS];

static void neigh_probe(uint32_t daddr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(9), /* discard */
				  .sin_addr.s_addr = daddr };
	int fd = ts_real_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	/* an empty datagram makes the kernel resolve the next hop (ARP) */
	(void)!ts_real_sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&sa,
			      sizeof(sa));
	ts_real_close(fd);
}

int ts_lwip__nexthop(uint32_t daddr, struct ts_nexthop *out)
{
	struct nh_slot *c = &nh_tab[(ntohl(daddr) * 2654435761u) >> 26];
	uint64_t now = ts_now_ns();
	struct ts_nexthop nh;

	if (c->nh.daddr == daddr && c->nh.resolved && c->nh.expires_ns > now) {
		*out = c->nh;
		return 0;
	}
	if (ts_route__lookup(daddr, &nh))
		return -EHOSTUNREACH;
	if (nh.type != RTN_UNICAST || IN_MULTICAST(ntohl(daddr)))
		return -EADDRNOTAVAIL;
	if (ts_neigh__lookup(nh.ifindex, nh.gw ? nh.gw : daddr, nh.mac)) {
		if (c->nh.daddr != daddr || now - c->probed_ns > 1000000000ull) {
			c->nh.daddr = daddr;
			c->nh.resolved = 0;
			c->probed_ns = now;
			neigh_probe(daddr);
		}
		return -EAGAIN;
	}
	nh.resolved = 1;
	nh.expires_ns = now + 1000000000ull;
	c->nh = nh;
	*out = nh;
	return 0;
}

int ts_lwip__resolve(uint32_t daddr, int ms)
{
	struct ts_nexthop nh;
	int i, r = -EAGAIN;

	for (i = 0; i <= ms; i++) {
		ts_lwip__lock();
		r = ts_lwip__nexthop(daddr, &nh);
		ts_lwip__unlock();
		if (r != -EAGAIN)
			break;
		usleep(1000);
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* netifs                                                              */

/* lwIP's checksum (LWIP_CHKSUM, src/lwipopts.h): the folded ones'
 * complement sum, not inverted, as the bytes lie in memory */
/* LWIP_HOOK_TCP_OUT_REXMIT (lwip-patches/0002): a segment sent again,
 * under lwIP's lock like every TCP counter */
void ts_tcp__rexmit_hook(const struct tcp_pcb *pcb)
{
	(void)pcb;
	ts_stats->tcp_ext.rexmit_segs++;
}

unsigned short ts_lwip__chksum(const void *data, int len)
{
	return htons(ts_csum__fold(ts_csum__partial(data, (size_t)len, 0)));
}

/* The IPv4 pseudo-header's sum (host order) of a TCP segment of seglen
 * bytes behind the IPv4 header ip. */
static uint32_t tcp_pseudo(const uint8_t *ip, uint32_t seglen)
{
	uint8_t ph[12];

	memcpy(ph, ip + 12, 8);
	ph[8] = 0;
	ph[9] = 6;
	ph[10] = (uint8_t)(seglen >> 8);
	ph[11] = (uint8_t)seglen;
	return ts_csum__partial(ph, sizeof(ph), 0);
}

/* A TCP segment lwIP left unsummed (its netif has NETIF_CHECKSUM_GEN_TCP
 * off: the interface of the netif's XSK finishes checksums): the
 * pseudo-header sum in the field for the interface to finish; 1 when st
 * does that, else the whole sum here (0): the route may have chosen an
 * XSK other than the netif's. */
static int tcp_csum_out(struct ts_stack *st, uint8_t *ip, uint32_t len,
			uint32_t ihl)
{
	uint8_t *th = ip + ihl;
	uint32_t pseudo = tcp_pseudo(ip, len - ihl);
	/* the offload rides on the TX metadata of the packet's first frame,
	 * a jumbo segment's chain of frames included (ts_stack__send_ip) */
	int off = ts_stack__tx_csum(st);
	uint16_t sum;

	if (off) {
		sum = ts_csum__fold(pseudo);
	} else {
		th[16] = th[17] = 0;
		sum = (uint16_t)~ts_csum__fold(
			ts_csum__partial(th, len - ihl, pseudo));
	}
	th[16] = (uint8_t)(sum >> 8);
	th[17] = (uint8_t)sum;
	return off;
}

static err_t nif_output(struct netif *n, struct pbuf *p,
			const ip4_addr_t *ipaddr)
{
	struct ts_nexthop nh;
	struct ts_stack *st;
	uint8_t *ip = p->payload;
	uint32_t daddr, ihl;
	uint16_t cstart = 0;
	int r;

	(void)ipaddr;
	/* LWIP_NETIF_TX_SINGLE_PBUF=1 (src/lwipopts.h): one contiguous
	 * buffer holding the whole packet */
	if (p->len != p->tot_len || p->len < 20)
		return ERR_VAL;
	ihl = (uint32_t)(ip[0] & 0xf) * 4;
	memcpy(&daddr, ip + 16, 4);
	r = ts_lwip__nexthop(daddr, &nh);
	if (r) {
		if (r == -EAGAIN)
			ts_stats->tcp.tx_neigh++;
		else
			ts_stats->tcp.tx_noroute++;
		return ERR_OK; /* dropped: TCP retransmits */
	}
	st = ts_stack__get(nh.ifindex, 0);
	if (!st) {
		ts_stats->tcp.tx_noroute++;
		return ERR_OK;
	}
	/* lwIP rewrites the field at every transmission (tcp_output_segment)
	 * and builds its ACKs and resets anew: writing it here is safe */
	if (ip[9] == 6 && ihl >= 20 && p->len >= ihl + 20 &&
	    !(n->chksum_flags & NETIF_CHECKSUM_GEN_TCP) &&
	    tcp_csum_out(st, ip, p->len, ihl))
		cstart = (uint16_t)ihl;
	if (ts_stack__send_ip(st, nh.mac, ip, p->len, 1, cstart, 16)) {
		ts_stats->tcp.tx_ring_full++;
		return ERR_OK;
	}
	ts_stats->tcp.segs_tx++;
	return ERR_OK;
}

#if LWIP_IPV6
static err_t nif_output6(struct netif *n, struct pbuf *p,
			 const ip6_addr_t *ipaddr)
{
	(void)n;
	(void)p;
	(void)ipaddr;
	return ERR_OK; /* IPv6 stays on the kernel */
}
#endif

static err_t nif_init(struct netif *n)
{
	struct ts_nif *t = n->state;
	n->name[0] = 't';
	n->name[1] = 's';
	n->output = nif_output;
#if LWIP_IPV6
	n->output_ip6 = nif_output6;
#endif
	/* a segment must fit what the XSK carries behind its 14-byte header:
	 * one frame (TS_XSK_MAX_FRAME), or a jumbo frame as a chain
	 * (XDP_USE_SG); lwIP's MSS is min(TCP_MSS = 8960, mtu - 40), what it
	 * offers in a SYN and what it takes of the peer's */
	n->mtu = (u16_t)(ts_stack__max_payload(t->st) + 28);
	n->flags = NETIF_FLAG_LINK_UP;
	/* received TCP segments are verified by the glue (ts_tcp__input, one
	 * pass over the copy it makes anyway); outgoing ones are left to the
	 * interface where the XSK takes checksum offload (nif_output) */
	NETIF_SET_CHECKSUM_CTRL(n, NETIF_CHECKSUM_ENABLE_ALL &
					   ~(NETIF_CHECKSUM_CHECK_TCP |
					     (ts_stack__tx_csum(t->st) ?
						      NETIF_CHECKSUM_GEN_TCP :
						      0)));
	return ERR_OK;
}

struct netif *ts_lwip__netif(struct ts_stack *st, uint32_t addr)
{
	struct ifaddrs *ifa, *i;
	char name[IF_NAMESIZE];
	int k, found = 0;

	for (k = 0; k < nnifs; k++)
		if (nifs[k].st == st && nifs[k].addr == addr)
			return &nifs[k].nif;
	if (nnifs >= TS_LWIP_NETIFS ||
	    !if_indextoname((unsigned)ts_stack__ifindex(st), name) ||
	    getifaddrs(&ifa))
		return NULL;
	for (i = ifa; i && !found; i = i->ifa_next)
		found = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			!strcmp(i->ifa_name, name) &&
			((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
				addr;
	freeifaddrs(ifa);
	if (!found)
		return NULL;
	{
		struct ts_nif *t = &nifs[nnifs];
		ip4_addr_t a, m, g;

		t->st = st;
		t->addr = addr;
		a.addr = addr;
		/* routing is route.c's: lwIP only needs the address */
		m.addr = 0xffffffffu;
		g.addr = 0;
		ts_lwip__core_enter();
		if (!netif_add(&t->nif, &a, &m, &g, t, nif_init, ip4_input)) {
			ts_lwip__core_exit();
			return NULL;
		}
		netif_set_up(&t->nif);
		netif_set_link_up(&t->nif);
		if (!netif_default)
			netif_set_default(&t->nif);
		ts_lwip__core_exit();
		nnifs++;
		return &t->nif;
	}
}

struct ts_stack *ts_lwip__stack(const struct netif *n)
{
	return n ? ((const struct ts_nif *)n->state)->st : NULL;
}

/* ------------------------------------------------------------------ */
/* input                                                               */

/* Whether a received segment's TCP checksum is right (lwIP checks none:
 * NETIF_CHECKSUM_CHECK_TCP is off on every netif). Senders on veth (the
 * kernel's CHECKSUM_PARTIAL, and this library's own offloaded sends)
 * leave the field holding only the folded pseudo-header sum, for hardware
 * that is not there: the sender is on this host, nothing crossed a wire,
 * and that form is taken as the kernel takes it. */
static int csum_ok(const uint8_t *ip, uint32_t ihl, uint32_t tot)
{
	const uint8_t *th = ip + ihl;
	uint32_t pseudo = tcp_pseudo(ip, tot - ihl);

	if (ts_csum__fold(ts_csum__partial(th, tot - ihl, pseudo)) == 0xffff)
		return 1;
	if ((uint16_t)(th[16] << 8 | th[17]) != ts_csum__fold(pseudo))
		return 0;
	ts_stats->tcp.rx_csum_completed++;
	return 1;
}

/* Segments from the RX path (which holds an XSK's ring lock, taken after
 * the core lock elsewhere: lwIP cannot run there) wait here for the next
 * holder of the core lock. Each is one allocation that becomes the pbuf
 * lwIP keeps (a custom pbuf around ip, freed with it): one copy out of
 * the UMEM frame, none into lwIP. Allocated as lwIP's own memory is
 * (lwip_mem.c's cache): a receive window's worth of them is freed and
 * allocated again every megabyte a bulk transfer moves. */
struct ts_seg {
	struct pbuf_custom pc; /* first: the pbuf lwIP frees */
	struct ts_seg *next;
	struct ts_stack *st;
	uint32_t len;
	uint64_t rx_ns;
	uint8_t ip[];
};

uint64_t ts_tcp_seg_rx_ns;

static void seg_free(struct pbuf *p)
{
	ts_mem__free(p); /* the ts_seg it heads */
}

int ts_lwip_batch_more;
static pthread_mutex_t inq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ts_seg *inq_head, *inq_tail;
static int inq_len;

int ts_tcp__input(struct ts_stack *st, const uint8_t *frame, uint32_t len,
		  uint64_t rx_ns)
{
	const uint8_t *ip = frame + 14;
	uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4, tot;
	struct ts_seg *g;

	tot = (uint32_t)(ip[2] << 8 | ip[3]);
	if (!ts_tcp_on || ihl < 20 || tot < ihl + 20 || tot > len - 14) {
		ts_stats->tcp.rx_no_netif++;
		return -EINVAL;
	}
	/* copied: lwIP may keep a segment (out of order, unread) for long,
	 * and the UMEM frame goes straight back to the fill ring */
	g = ts_mem__malloc(sizeof(*g) + tot);
	if (!g)
		return -ENOMEM;
	g->next = NULL;
	g->st = st;
	g->len = tot;
	g->rx_ns = rx_ns;
	memcpy(g->ip, ip, tot);
	/* summed on the copy, which the copy just brought into the cache */
	if (!csum_ok(g->ip, ihl, tot)) {
		ts_mem__free(g);
		return -EBADMSG;
	}
	pthread_mutex_lock(&inq_lock);
	if (inq_tail)
		inq_tail->next = g;
	else
		inq_head = g;
	inq_tail = g;
	__atomic_store_n(&inq_len, inq_len + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&inq_lock);
	return 0;
}

/* A SYN's timestamp option (RFC 7323: kind 8, length 10), for the TIME_WAIT
 * check; th: the TCP header, len: the bytes from it to the end. */
static void syn_tsval(const uint8_t *th, uint32_t len, struct ts_rx_probe *pr)
{
	uint32_t off = 20, end = (uint32_t)(th[12] >> 4) * 4;

	pr->syn_ts = 0;
	if (!(th[13] & TCP_SYN) || end > len)
		return;
	while (off < end && th[off] != 0) { /* 0: end of options */
		if (th[off] == 1) { /* no-op */
			off++;
			continue;
		}
		if (off + 1 >= end || th[off + 1] < 2 || off + th[off + 1] > end)
			return;
		if (th[off] == 8 && th[off + 1] == 10) {
			memcpy(&pr->syn_tsval, th + off + 2, 4);
			pr->syn_tsval = ntohl(pr->syn_tsval);
			pr->syn_ts = 1;
			return;
		}
		off += th[off + 1];
	}
}

/* Hands g to lwIP (which frees it, as a pbuf) or frees it. */
static void seg_input(struct ts_seg *g)
{
	uint8_t *ip = g->ip;
	uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4, tot = g->len, daddr;
	struct ts_rx_probe pr;
	uint32_t saddr, seq;
	uint16_t sport, dport;
	struct netif *n;
	struct pbuf *p;

	memcpy(&daddr, ip + 16, 4);
	n = ts_lwip__netif(g->st, daddr);
	if (!n) {
		ts_stats->tcp.rx_no_netif++;
		ts_mem__free(g);
		return;
	}
	g->pc.custom_free_function = seg_free;
	p = pbuf_alloced_custom(PBUF_RAW, (u16_t)tot, PBUF_RAM, &g->pc, g->ip,
				(u16_t)tot);
	if (!p) {
		ts_mem__free(g);
		return;
	}
	ts_stats->tcp.segs_rx++;
	memcpy(&saddr, ip + 12, 4);
	memcpy(&sport, ip + ihl, 2);
	memcpy(&dport, ip + ihl + 2, 2);
	memcpy(&seq, ip + ihl + 4, 4);
	syn_tsval(ip + ihl, tot - ihl, &pr);
	if (up.rx_pre(saddr, sport, dport, ntohl(seq), ip[ihl + 13], &pr)) {
		pbuf_free(p);
		return;
	}
	ts_tcp_seg_rx_ns = g->rx_ns;
	if (ip4_input(p, n) != ERR_OK)
		pbuf_free(p);
	up.rx_post(&pr);
}

/* Under the core lock: everything queued, in order. */
static void input_process(void)
{
	while (__atomic_load_n(&inq_len, __ATOMIC_ACQUIRE)) {
		struct ts_seg *g;

		pthread_mutex_lock(&inq_lock);
		g = inq_head;
		inq_head = NULL;
		inq_tail = NULL;
		__atomic_store_n(&inq_len, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&inq_lock);
		while (g) {
			struct ts_seg *next = g->next;

			ts_lwip_batch_more = next != NULL;
			seg_input(g);
			g = next;
		}
	}
	ts_lwip_batch_more = 0;
	up.batch_end(); /* the ACKs held back for the batch */
}

/* After an RX poll released its ring lock (no lock held, or the core
 * lock by this thread). */
void ts_tcp__input_drain(void)
{
	/* a forked child (ts_tcp_on 0) never takes the core lock: another
	 * thread of the parent may have held it at the fork */
	if (!__atomic_load_n(&ts_tcp_on, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&inq_len, __ATOMIC_ACQUIRE))
		return;
	ts_lwip__core_enter();
	input_process();
	ts_lwip__core_exit();
}

/* ------------------------------------------------------------------ */
/* timers. lwIP's TCP_TMR_INTERVAL is 250 ms (its default, which
 * src/lwipopts.h keeps, as Debian's build did) and lwIP counts
 * retransmission timeouts, TIME_WAIT and keepalive in slow-timer ticks of
 * two intervals: with it, the shortest RTO is 3 ticks (1.5 s), so every
 * loss that fast retransmit does not repair stalls a stream for seconds.
 * The helper thread calls tcp_tmr() every TS_TCP_TMR_MS instead (ticks of
 * 2 * TS_TCP_TMR_MS): RTOs from 150 ms (Linux's floor is 200 ms), delayed
 * ACKs within 25 ms (Linux: 40 ms), TIME_WAIT 12 s instead of lwIP's 120 s
 * (Linux: 60 s). Keepalive times are scaled back by tcp.c
 * (TS_TCP_TICK_SCALE). lwIP's other cyclic timers (ARP, IP reassembly,
 * IGMP, IPv6) serve nothing here and are not run. The thread also drains
 * XSKs that nobody polled, so that connections move on while no
 * application thread is in the library, and then wakes sleepers. */

/* Receivers asleep in tcp.c do not watch the XSKs themselves: every
 * segment would wake them, the bare ACKs of their own thread's sends
 * too, and a thread that wakes thousands of times a second for nothing
 * loses its turn on a shared CPU to the scheduler's fairness (sockperf's
 * TCP under-load client, whose sender and receiver share a CPU, waited
 * hundreds of microseconds for each reply that way; a kernel socket
 * wakes its reader only for data). While one sleeps, the helper thread
 * watches the XSKs instead and wakes sleepers only when a callback
 * changed something (data, a connection, an error): the wake-up a
 * receiver gets is for its data. rx_sleepers and helper_watching are a
 * Dekker pair: a sleeper counts itself, then writes helper_efd if it sees
 * the helper not watching; the helper clears helper_watching, then looks
 * at rx_sleepers (and sets it again if it watches). */
static int rx_sleepers;
static int helper_watching;

int ts_lwip__rx_sleep_begin(void)
{
	uint64_t one = 1;

	if (!timer_running || helper_efd < 0)
		return 0;
	__atomic_fetch_add(&rx_sleepers, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&helper_watching, __ATOMIC_SEQ_CST))
		(void)!ts_real_write(helper_efd, &one, sizeof(one));
	return 1;
}

void ts_lwip__rx_sleep_end(void)
{
	__atomic_fetch_sub(&rx_sleepers, 1, __ATOMIC_SEQ_CST);
}

/* Until the next timer tick (due, ns): asleep on helper_efd, and on the
 * XSKs while a receiver sleeps. */
#define FW_POLL_MAX 1024

/* ns: the fork pump last moved something (the TCP thread's own) */
static uint64_t fw_busy_ns;

static void helper_sleep(uint64_t due)
{
	static struct pollfd pf[TS_XSK_POLLFDS + 1 + FW_POLL_MAX];
	uint64_t now = ts_now_ns(), v;
	int n = 0, k, watch, fw;

	pf[n].fd = helper_efd;
	pf[n++].events = POLLIN;
	/* objects shared with forked children: their unix sockets, and the
	 * XSKs, whose segments nobody else may be there to take */
	fw = up.fw_active(); /* a hint: the list is read under the lock */
	if (fw) {
		ts_lwip__core_enter();
		n += up.fw_pollfds(pf + n, FW_POLL_MAX);
		ts_lwip__core_exit();
	}
	__atomic_store_n(&helper_watching, 0, __ATOMIC_SEQ_CST);
	watch = fw || __atomic_load_n(&rx_sleepers, __ATOMIC_SEQ_CST) > 0;
	if (watch)
		__atomic_store_n(&helper_watching, 1, __ATOMIC_SEQ_CST);
	for (k = 0; watch && k < ts_stack__count(); k++) {
		struct ts_stack *st = ts_stack__at(k);

		if (!ts_stack__usable(st))
			continue;
		n += ts_stack__poll_fds(st, &pf[n],
				       (int)(sizeof(pf) / sizeof(pf[0])) - n);
	}
	/* While the fork pump is busy, the thread spins as the profile's
	 * blocking calls do (TICKSTACK_SPIN_USEC): every connection a child
	 * uses passes through it, and a sleep would cost each message two
	 * wake-ups of this thread */
	if (fw && (ts_cfg.spin_usec < 0 ||
		   now - fw_busy_ns < (uint64_t)ts_cfg.spin_usec * 1000)) {
		if (ts_real_poll(pf, (nfds_t)n, 0) > 0 && (pf[0].revents & POLLIN))
			(void)!ts_real_read(helper_efd, &v, sizeof(v));
		return;
	}
	if (now < due &&
	    ts_real_poll(pf, (nfds_t)n, (int)((due - now + 999999) / 1000000)) > 0 &&
	    (pf[0].revents & POLLIN))
		(void)!ts_real_read(helper_efd, &v, sizeof(v));
}

/* lwIP 2.1.3 starts its persist timer when the next unsent segment does
 * not fit the peer's window, and stops it only when tcp_output sends one;
 * but an ACK may take every unsent segment (after a retransmission timeout
 * moved the unacknowledged ones there), leaving the timer running with
 * nothing to probe, and tcp_slowtmr then asserts ("persist ticking with
 * empty send buffer") and aborts the process: seen in the harness's 5 %
 * loss transfer on a loaded machine. Nothing waits: stop the timer, as
 * tcp_output would have. Under the core lock, just before tcp_tmr(). */
static void persist_idle_stop(void)
{
	struct tcp_pcb *p;

	for (p = tcp_active_pcbs; p; p = p->next)
		if (p->persist_backoff && !p->unsent)
			p->persist_backoff = 0;
}

/* set by the helper thread once its fds are open (ts_lwip__start) */
static int helper_ready;

static void *timer_main(void *arg)
{
	uint64_t due = ts_now_ns() + TS_TCP_TMR_MS * 1000000ull;
	unsigned n = 0;

	(void)arg;
	/* the process's route lookup socket (route.c) now: the helper sends
	 * segments (ACKs, retransmissions) whose next hop it may look up, and
	 * a socket opened at the first lookup would appear at a random point
	 * of the process's life (tcp_cycles counts fds) */
	ts_route__open();
	__atomic_store_n(&helper_ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		int got = 0, ev, tick;

		helper_sleep(due);
		tick = ts_now_ns() >= due;
		ts_lwip__lock();
		if (ts_stack__any_busy())
			got = ts_stack__poll_all();
		if (up.fw_active() && (up.fw_run() || got))
			fw_busy_ns = ts_now_ns();
		if (tick) {
			due += TS_TCP_TMR_MS * 1000000ull;
			if (due < ts_now_ns()) /* not to catch up on missed ticks */
				due = ts_now_ns() + TS_TCP_TMR_MS * 1000000ull;
			persist_idle_stop();
			tcp_tmr();
			up.tick();
			if (++n % 4 == 0) /* the XDP and UMEM counters, live */
				ts_stack__refresh_stats();
		}
		ev = up.events();
		ts_lwip__unlock();
		if (got || ev)
			ts_lwip__wake();
	}
	return NULL;
}

int ts_lwip__start(void)
{
	sigset_t all, old;
	int err, i;

	err = ts_isn__init();
	if (err)
		return err;
	if (sys_mutex_new(&lock_tcpip_core) != ERR_OK)
		return -ENOMEM;
	helper_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	lwip_init();
	sigfillset(&all);
	/* the helper thread takes no signals: the application's own threads
	 * must see them (sockperf's timer, SIGINT) */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&timer_thread, NULL, timer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_setname_np(timer_thread, "tickstack-tcp");
	timer_running = 1;
	/* the process's fds are settled when this returns (as ts_ctl__start's) */
	for (i = 0; i < 1000 && !__atomic_load_n(&helper_ready, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return 0;
}
