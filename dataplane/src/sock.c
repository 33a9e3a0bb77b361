// SPDX-License-Identifier: Apache-2.0
/* sock.c - the shadow socket layer: every application socket stays a real
 * kernel fd; the shadow holds the accelerated state (steering, RX queue),
 * and the receive, send, poll and epoll paths that mix XSK and kernel. */
#include "ts_internal.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/rtnetlink.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

struct ts_sock **ts_fdtab;
int ts_fdtab_size;
struct ts_sock **ts_port_tab;
int ts_sig_efd = -1;
int ts_uring_used;

/* ------------------------------------------------------------------ */
/* interfaces                                                          */

static int iface_allowed(const char *name)
{
	const char *p = ts_cfg.ifaces;
	size_t n = strlen(name);

	if (!*p)
		return 1;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == n && !strncmp(p, name, n))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* Interfaces for addr (0: every candidate). Returns how many. */
static int ifaces_for(uint32_t addr, int *out, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0, k;

	if (getifaddrs(&ifa) < 0)
		return 0;
	for (i = ifa; i && n < max; i = i->ifa_next) {
		uint32_t a;
		int idx, dup = 0;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		if (addr && a != addr)
			continue;
		if (!iface_allowed(i->ifa_name))
			continue;
		idx = (int)if_nametoindex(i->ifa_name);
		for (k = 0; k < n; k++)
			dup |= out[k] == idx;
		if (idx > 0 && !dup)
			out[n++] = idx;
	}
	freeifaddrs(ifa);
	return n;
}

static int ifindex_of_addr(uint32_t addr)
{
	int idx[1];

	return ifaces_for(addr, idx, 1) == 1 ? idx[0] : 0;
}

/* ------------------------------------------------------------------ */
/* next-hop cache                                                      */

#define TS_NH_CACHE 64
static struct ts_nexthop nh_cache[TS_NH_CACHE];

/* 0 and nh filled; or a positive TICKSTACK_SOCK counter reason. */
enum { NH_OK = 0, NH_NOROUTE, NH_LOCAL, NH_NEIGH };

/* The next hop for a flow, as the kernel's output route lookup for this
 * socket would find it: source address, outgoing interface (multicast),
 * ports and uid go into the query, so policy routing (ip rule) applies. */
static int nexthop(const struct ts_flow *fl, struct ts_nexthop *out)
{
	uint32_t daddr = fl->daddr;
	uint32_t h = (ntohl(daddr) ^ ntohl(fl->saddr) ^ fl->sport ^
		      ((uint32_t)fl->dport << 16) ^ (uint32_t)fl->oif) *
		     2654435761u;
	struct ts_nexthop *c = &nh_cache[h >> 26];
	uint64_t now = ts_now_ns();
	struct ts_nexthop nh;

	if (c->daddr == daddr && c->resolved && c->expires_ns > now &&
	    c->fl.saddr == fl->saddr && c->fl.oif == fl->oif &&
	    c->fl.sport == fl->sport && c->fl.dport == fl->dport &&
	    c->fl.tos == fl->tos) {
		*out = *c;
		return NH_OK;
	}
	if (ts_route__lookup_flow(fl, &nh))
		return NH_NOROUTE;
	nh.fl = *fl;
	if (IN_MULTICAST(ntohl(daddr))) {
		if (fl->oif)
			nh.ifindex = fl->oif;
		ts_pkt__mcast_mac(daddr, nh.mac);
		nh.resolved = 1;
	} else if (nh.type != RTN_UNICAST) {
		return NH_LOCAL;
	} else if (ts_neigh__lookup(nh.ifindex, nh.gw ? nh.gw : daddr,
				    nh.mac)) {
		return NH_NEIGH;
	}
	if (!nh.prefsrc) {
		/* pick the interface's first address */
		struct ifaddrs *ifa, *i;
		char name[IF_NAMESIZE];

		if (if_indextoname((unsigned)nh.ifindex, name) &&
		    !getifaddrs(&ifa)) {
			for (i = ifa; i; i = i->ifa_next)
				if (i->ifa_addr &&
				    i->ifa_addr->sa_family == AF_INET &&
				    !strcmp(i->ifa_name, name)) {
					nh.prefsrc = ((struct sockaddr_in *)
							      i->ifa_addr)
							     ->sin_addr.s_addr;
					break;
				}
			freeifaddrs(ifa);
		}
	}
	nh.resolved = 1;
	nh.expires_ns = now + 1000000000ull;
	*c = nh;
	*out = nh;
	return NH_OK;
}

/* ------------------------------------------------------------------ */
/* shadow sockets                                                      */

static void port_link(struct ts_sock *s)
{
	uint16_t p = ntohs(s->lport);

	s->next_port = ts_port_tab[p];
	ts_port_tab[p] = s;
}

static void port_unlink(struct ts_sock *s)
{
	struct ts_sock **pp = &ts_port_tab[ntohs(s->lport)];

	while (*pp) {
		if (*pp == s) {
			*pp = s->next_port;
			s->next_port = NULL;
			return;
		}
		pp = &(*pp)->next_port;
	}
}

struct ts_sock *ts_sock__new(int fd, int nonblock)
{
	struct ts_sock *s;

	if (fd < 0 || fd >= ts_fdtab_size || !ts_fdtab)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->refs = 1;
	s->fd = fd;
	s->owner = ts_getpid();
	s->nonblock = nonblock;
	s->ttl = 64;
	{
		int v = 0;
		socklen_t vl = sizeof(v);

		if (!ts_real_getsockopt(fd, IPPROTO_IP, IP_TTL, &v, &vl))
			s->ttl = (uint8_t)v; /* net.ipv4.ip_default_ttl */
	}
	s->mcast_ttl = 1;
	s->mcast_loop = 1;
	s->mc_all = 1;
	s->stats = ts_stats__sock_slot(fd);
	if (!s->stats)
		s->stats = &s->dummy_stats;
	__atomic_store_n(&ts_fdtab[fd], s, __ATOMIC_RELEASE);
	return s;
}

static void sock__steer_all(struct ts_sock *s, int add)
{
	int i, g;

	for (i = 0; i < s->nrx; i++) {
		struct ts_stack *st = s->rx_stacks[i];

		if (!ts_stack__usable(st))
			continue;
		if (!IN_MULTICAST(ntohl(s->laddr))) {
			if (add)
				ts_stack__steer_add(st, s->laddr, s->lport);
			else
				ts_stack__steer_del(st, s->laddr, s->lport, 1);
		}
		for (g = 0; g < s->ngroups; g++) {
			if (s->group_ifindex[g] != ts_stack__ifindex(st))
				continue;
			if (add)
				ts_stack__steer_add(st, s->groups[g], s->lport);
			else
				ts_stack__steer_del(st, s->groups[g], s->lport,
						    1);
		}
	}
}

static void sock__drain(struct ts_sock *s)
{
	while (s->qhead != s->qtail) {
		struct ts_rxent *e = &s->q[s->qhead & (s->qcap - 1)];

		ts_stack__frame_put(e->st, e->frame);
		s->qhead++;
	}
}

/* Move an accelerated socket to the kernel path (caller holds the lock). */
static void sock__to_kernel(struct ts_sock *s)
{
	if (s->state == TS_S_ACCEL) {
		sock__steer_all(s, 0);
		port_unlink(s);
		ts_stats->sockets_kernel++;
	}
	s->state = TS_S_KERNEL;
	s->nrx = 0;
	s->stats->accelerated = 0;
}

static int sock__add_rx_stack(struct ts_sock *s, struct ts_stack *st)
{
	int i;

	for (i = 0; i < s->nrx; i++)
		if (s->rx_stacks[i] == st)
			return 0;
	if (s->nrx >= TS_MAX_RX_STACKS)
		return -ENOSPC;
	s->rx_stacks[s->nrx++] = st;
	return 0;
}

/* Whether a socket of another process (or one of ours on the kernel path)
 * is bound to port and would receive some of what a steering entry for
 * (key, port) takes: /proc/net/udp of this namespace, our own accelerated
 * sockets recognised by inode. Only sockets with SO_REUSEADDR can share a
 * port with another, so only those are checked. */
static int port__foreign(uint32_t key, uint16_t port)
{
	char line[256];
	int found = 0;
	FILE *f;

	f = fopen("/proc/net/udp", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int la, lp, ra, rp, st;
		unsigned long long ino;
		struct ts_sock *o;
		int mine = 0;

		if (sscanf(line, " %*d: %x:%x %x:%x %x %*x:%*x %*x:%*x %*x %*u %*u %llu",
			   &la, &lp, &ra, &rp, &st, &ino) != 6)
			continue;
		if (lp != ntohs(port))
			continue;
		for (o = ts_port_tab[ntohs(port)]; o && !mine; o = o->next_port)
			mine = o->ino == ino;
		if (mine)
			continue;
		if (IN_MULTICAST(ntohl(key)))
			found = la == 0 || la == key;
		else
			found = !key || la == key;
	}
	fclose(f);
	return found;
}

/* Install (key, port) on st, or leave it to the kernel (shared) when
 * another socket needs some of it. 0 when the XSK takes it. */
static int sock__steer(struct ts_sock *s, struct ts_stack *st, uint32_t key)
{
	if (s->reuse && port__foreign(key, s->lport)) {
		ts_stats->kernel_shared++;
		ts_stats->fallback_events++;
		ts_dbg("port %u is shared with another socket: kernel delivers",
		       ntohs(s->lport));
		ts_stack__steer_add(st, key, s->lport);
		ts_stack__steer_shared(st, key, s->lport);
		return 0; /* our entry, marked shared: read from the kernel fd */
	}
	return ts_stack__steer_add(st, key, s->lport);
}

static int require_fail(struct ts_sock *s, const char *why)
{
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &s->laddr, a, sizeof(a));
	ts_log("TICKSTACK_REQUIRE=1: socket fd %d (%s:%u) cannot be "
	       "accelerated: %s; fix that or unset TICKSTACK_REQUIRE to let "
	       "it use the kernel stack",
	       s->fd, a, ntohs(s->lport), why);
	return -EOPNOTSUPP;
}

/* Install steering once the socket has a local port. for_send: bind an
 * unbound socket to an ephemeral port first (the kernel picks it). The
 * caller holds the lock. Returns 0 or -errno (only with REQUIRE). */
static int sock__activate(struct ts_sock *s, int fd, int for_send)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int idx[TS_MAX_RX_STACKS], n, i, g;

	if (s->state != TS_S_NEW)
		return 0;
	if (ts_real_getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
	    sa.sin_family != AF_INET) {
		s->state = TS_S_KERNEL;
		return 0;
	}
	if (!sa.sin_port) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		if (!for_send)
			return 0;
		if (ts_real_bind(fd, (struct sockaddr *)&any, sizeof(any)) < 0)
			return 0; /* the kernel send will report the problem */
		len = sizeof(sa);
		if (ts_real_getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
			return 0;
	}
	s->laddr = sa.sin_addr.s_addr;
	s->lport = sa.sin_port;
	{
		struct stat stb;

		if (!fstat(fd, &stb))
			s->ino = (uint64_t)stb.st_ino;
	}
	if (__atomic_load_n(&ts_uring_used, __ATOMIC_ACQUIRE)) {
		s->state = TS_S_KERNEL;
		ts_stats->sockets_kernel++;
		ts_stats->kernel_uring++;
		return 0;
	}
	s->stats->laddr = s->laddr;
	s->stats->lport = s->lport;
	s->owner = ts_getpid();
	if (!s->q) {
		uint32_t cap = 16;

		while (cap < ts_cfg.sockq_len)
			cap <<= 1;
		s->q = calloc(cap, sizeof(*s->q));
		if (!s->q) {
			s->state = TS_S_KERNEL;
			return 0;
		}
		s->qcap = cap;
	}
	if (IN_MULTICAST(ntohl(s->laddr)))
		n = 0; /* the memberships choose the interfaces */
	else if (s->laddr)
		n = ifaces_for(s->laddr, idx, TS_MAX_RX_STACKS);
	else
		n = ifaces_for(0, idx, TS_MAX_RX_STACKS);
	for (i = 0; i < n; i++) {
		struct ts_stack *st = ts_stack__get(idx[i], 1);

		if (st && !sock__steer(s, st, s->laddr))
			sock__add_rx_stack(s, st);
		else if (!st)
			ts_stack__share(idx[i], s->laddr, s->lport);
	}
	for (g = 0; g < s->ngroups; g++) {
		struct ts_stack *st = ts_stack__get(s->group_ifindex[g], 1);

		if (st && !sock__steer(s, st, s->groups[g]))
			sock__add_rx_stack(s, st);
		else if (!st)
			ts_stack__share(s->group_ifindex[g], s->groups[g],
					s->lport);
	}
	if (!s->nrx && !IN_MULTICAST(ntohl(s->laddr))) {
		s->state = TS_S_KERNEL;
		ts_stats->sockets_kernel++;
		ts_stats->fallback_events++;
		ts_dbg("fd %d stays on the kernel: no XSK for its address", fd);
		if (ts_cfg.require)
			return require_fail(s, "no XDP-capable interface owns "
					       "its local address");
		return 0;
	}
	s->state = TS_S_ACCEL;
	s->stats->accelerated = s->nrx > 0;
	ts_stats->sockets_accelerated++;
	port_link(s);
	return 0;
}

/* A socket inherited over fork: the parent's XSK holds its steering.
 * Give the datagrams back to the kernel socket, which this process can
 * read, and try to accelerate it again with our own XSK. */
static void sock__adopt(struct ts_sock *s, int fd)
{
	int i, g;

	/* Delete the parent's steering entries through the map fds the
	 * child inherited: the datagrams go back to the kernel socket. */
	if (s->state == TS_S_ACCEL) {
		for (i = 0; i < s->nrx; i++) {
			struct ts_stack *st = s->rx_stacks[i];

			if (!IN_MULTICAST(ntohl(s->laddr)))
				ts_stack__steer_del(st, s->laddr, s->lport, 0);
			for (g = 0; g < s->ngroups; g++)
				ts_stack__steer_del(st, s->groups[g], s->lport,
						    0);
		}
		port_unlink(s);
	}
	s->nrx = 0;
	s->owner = ts_getpid();
	s->state = TS_S_NEW;
	sock__activate(s, fd, 0);
	if (s->state != TS_S_ACCEL)
		s->state = TS_S_KERNEL;
}

static inline void sock__check_owner(struct ts_sock *s, int fd)
{
	if (ts_unlikely(s->owner != ts_getpid()))
		sock__adopt(s, fd);
}

void ts_sock__release(int fd)
{
	struct ts_sock *s = ts_sock__of(fd);

	if (!s)
		return;
	ts_lock();
	__atomic_store_n(&ts_fdtab[fd], NULL, __ATOMIC_RELEASE);
	if (--s->refs > 0) {
		ts_unlock();
		return;
	}
	if (s->state == TS_S_ACCEL && s->owner == ts_getpid()) {
		sock__steer_all(s, 0);
		port_unlink(s);
	}
	sock__drain(s);
	if (s->stats != &s->dummy_stats)
		s->stats->in_use = 2; /* closed: counters kept for the dump */
	ts_unlock();
	free(s->q);
	free(s);
}

void ts_sock__dup(int oldfd, int newfd)
{
	struct ts_sock *s = ts_sock__of(oldfd);

	if (!s || newfd < 0 || newfd >= ts_fdtab_size)
		return;
	ts_lock();
	s->refs++;
	__atomic_store_n(&ts_fdtab[newfd], s, __ATOMIC_RELEASE);
	ts_unlock();
}

/* Whether s would receive m from the kernel: its address and connected
 * peer match; for a group, a membership, or IP_MULTICAST_ALL (on by
 * default: a socket bound to the port gets every group the host joined). */
static int sock__wants(const struct ts_sock *s, const struct ts_udp_meta *m,
		       int mc)
{
	int g;

	if (s->state != TS_S_ACCEL)
		return 0;
	if (s->laddr && s->laddr != m->daddr)
		return 0;
	if (s->connected && (s->raddr != m->saddr || s->rport != m->sport))
		return 0;
	if (!mc || s->mc_all)
		return 1;
	for (g = 0; g < s->ngroups; g++)
		if (s->groups[g] == m->daddr)
			return 1;
	return 0;
}

static int sock__enqueue(struct ts_sock *s, struct ts_stack *st,
			 uint64_t frame, const struct ts_udp_meta *m,
			 uint64_t rx_ns)
{
	struct ts_rxent *e;

	if (s->qtail - s->qhead >= s->qcap) {
		s->stats->rx_drops++;
		return -1;
	}
	e = &s->q[s->qtail & (s->qcap - 1)];
	e->st = st;
	e->frame = frame;
	e->rx_ns = rx_ns;
	e->off = m->payload_off;
	e->len = m->payload_len;
	e->saddr = m->saddr;
	e->sport = m->sport;
	e->daddr = m->daddr;
	e->tos = m->tos;
	e->ttl = m->ttl;
	__atomic_store_n(&s->qtail, s->qtail + 1, __ATOMIC_RELEASE);
	return 0;
}

/* The kernel hands a unicast datagram to ONE socket, the best match
 * (address bound exactly beats the wildcard, a connected peer beats none;
 * among equals the one bound last), and a multicast one to every socket
 * that wants it. */
int ts_sock__deliver(struct ts_stack *st, uint64_t frame,
		     const struct ts_udp_meta *m, uint64_t rx_ns)
{
	struct ts_sock *s = ts_port_tab[ntohs(m->dport)], *best = NULL;
	int k = 0, full = 0, best_score = -1;
	int mc = IN_MULTICAST(ntohl(m->daddr));

	for (; s; s = s->next_port) {
		int score;

		if (!sock__wants(s, m, mc)) {
			if (s->state == TS_S_ACCEL && s->connected &&
			    (!s->laddr || s->laddr == m->daddr))
				s->stats->rx_filtered++;
			continue;
		}
		if (mc) {
			if (k >= 255)
				break; /* the frame's reference count is 8 bits */
			if (sock__enqueue(s, st, frame, m, rx_ns))
				full++;
			else
				k++;
			continue;
		}
		score = (s->laddr ? 4 : 0) + (s->connected ? 4 : 0);
		if (score > best_score) {
			best = s;
			best_score = score;
		}
	}
	if (best) {
		if (sock__enqueue(best, st, frame, m, rx_ns))
			full++;
		else
			k++;
	}
	if (k)
		ts_stack__frame_refs(st, frame, k);
	return k ? k : (full ? -1 : 0);
}

/* ------------------------------------------------------------------ */
/* signals and waiting                                                 */

static int64_t tv_ns(const struct timeval *tv)
{
	if (!tv->tv_sec && !tv->tv_usec)
		return -1;
	return (int64_t)tv->tv_sec * 1000000000ll + tv->tv_usec * 1000ll;
}

static void efd_drain(void)
{
	uint64_t v;

	if (ts_sig_efd >= 0)
		(void)!ts_real_read(ts_sig_efd, &v, sizeof(v));
}

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

/* The control messages the kernel's udp_recvmsg writes, in its order: the
 * timestamp (sock_recv_cmsgs), then IP_PKTINFO, IP_TTL, IP_TOS. */
static void sock__cmsgs(const struct ts_sock *s, const struct ts_rxent *e,
			struct msghdr *msg)
{
	size_t used = 0;

	if (s->cmsgs & TS_CM_TSTAMPNS) {
		struct timespec ts = { .tv_sec = (time_t)(e->rx_ns / 1000000000ull),
				       .tv_nsec = (long)(e->rx_ns % 1000000000ull) };

		cmsg_put(msg, &used, SOL_SOCKET, s->tstamp_type, &ts, sizeof(ts));
	} else if (s->cmsgs & TS_CM_TSTAMP) {
		struct timeval tv = { .tv_sec = (time_t)(e->rx_ns / 1000000000ull),
				      .tv_usec = (long)(e->rx_ns % 1000000000ull) / 1000 };

		cmsg_put(msg, &used, SOL_SOCKET, s->tstamp_type, &tv, sizeof(tv));
	}
	if (s->cmsgs & TS_CM_PKTINFO) {
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
	if (s->cmsgs & TS_CM_TTL) {
		int ttl = e->ttl;

		cmsg_put(msg, &used, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
	}
	if (s->cmsgs & TS_CM_TOS)
		cmsg_put(msg, &used, IPPROTO_IP, IP_TOS, &e->tos, 1);
	msg->msg_controllen = used;
}

/* Copy the head datagram into msg; the caller holds the lock. */
static ssize_t sock__pop(struct ts_sock *s, struct msghdr *msg, int flags)
{
	struct ts_rxent *e = &s->q[s->qhead & (s->qcap - 1)];
	const uint8_t *p = ts_stack__frame_data(e->st, e->frame) + e->off;
	size_t off = 0, i;
	ssize_t ret;

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
	if (s->cmsgs)
		sock__cmsgs(s, e, msg);
	else
		msg->msg_controllen = 0;
	ret = (flags & MSG_TRUNC) ? (ssize_t)e->len : (ssize_t)off;
	if (!(flags & MSG_PEEK)) {
		ts_stack__frame_put(e->st, e->frame);
		s->qhead++;
		s->stats->rx_accel++;
	}
	return ret;
}

static void sock__poll_stacks(struct ts_sock *s)
{
	int i;

	for (i = 0; i < s->nrx; i++)
		if (ts_stack__usable(s->rx_stacks[i]))
			ts_stack__poll_rx(s->rx_stacks[i]);
}

/* Lock-free: could a locked look find something for this socket? */
static int sock__rx_hint(struct ts_sock *s)
{
	int i;

	if (__atomic_load_n(&s->qtail, __ATOMIC_ACQUIRE) != s->qhead)
		return 1;
	for (i = 0; i < s->nrx; i++)
		if (ts_stack__busy(s->rx_stacks[i]))
			return 1;
	return 0;
}

#define TS_RECV_FLAGS (MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC | MSG_NOSIGNAL | \
		       MSG_WAITALL | MSG_CMSG_CLOEXEC)

ssize_t ts_sock__recvmsg(struct ts_sock *s, int fd, struct msghdr *msg,
			 int flags)
{
	unsigned long g0 = ts_sig__norestart_gen();
	int nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	uint64_t start = 0, spin_end = 0, deadline = 0;
	struct ts_spin sp;
	int64_t tmo;
	unsigned iter = 0;
	int kdue = 0;
	ssize_t r;

	ts_lock();
	sock__check_owner(s, fd);
	if (s->state == TS_S_NEW && !nonblock && !(flags & ~TS_RECV_FLAGS)) {
		/* Not bound yet: another thread's first send will bind it and
		 * install the steering, so do not sleep in the kernel's recv
		 * (the replies would then arrive on the XSK). */
		ts_unlock();
		for (;;) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			int pr = ts_real_poll(&pf, 1, 10);

			if (pr > 0) {
				r = ts_real_recvmsg(fd, msg, flags | MSG_DONTWAIT);
				if (r >= 0) {
					s->stats->rx_kernel++;
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
			if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TS_S_NEW)
				break;
		}
		ts_lock();
	}
	if (s->state != TS_S_ACCEL || (flags & ~TS_RECV_FLAGS)) {
		if (s->qhead != s->qtail && !(flags & ~TS_RECV_FLAGS)) {
			r = sock__pop(s, msg, flags);
			ts_unlock();
			return r;
		}
		ts_unlock();
		r = ts_real_recvmsg(fd, msg, flags);
		if (r >= 0)
			s->stats->rx_kernel++;
		return r;
	}
	ts_unlock();
	for (;;) {
		if (sock__rx_hint(s)) {
			ts_lock();
			if (s->qhead == s->qtail)
				sock__poll_stacks(s);
			if (s->qhead != s->qtail) {
				r = sock__pop(s, msg, flags);
				ts_unlock();
				return r;
			}
			ts_unlock();
		}
		if (nonblock || s->kernel_hint || kdue) {
			s->kernel_hint = 0;
			kdue = 0;
			r = ts_real_recvmsg(fd, msg, flags | MSG_DONTWAIT);
			if (r >= 0) {
				s->stats->rx_kernel++;
				return r;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return r;
		}
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (ts_sig__norestart_gen() != g0) {
			errno = EINTR;
			return -1;
		}
		if (!start) {
			start = ts_now_ns();
			tmo = tv_ns(&s->rcvtimeo);
			deadline = tmo > 0 ? start + (uint64_t)tmo : 0;
			spin_end = ts_cfg.spin_usec < 0 ?
					   UINT64_MAX :
					   start + (uint64_t)ts_cfg.spin_usec * 1000;
			ts_spin__start(&sp, start);
		}
		iter++;
		if ((iter & 63) == 0 || spin_end <= start) {
			uint64_t now = ts_now_ns();

			if (deadline && now >= deadline) {
				errno = EAGAIN;
				return -1;
			}
			kdue |= ts_spin__tick(&sp, now);
			if (now >= spin_end) {
				struct pollfd pf[TS_MAX_RX_STACKS + 2];
				int n = 0, i, t = -1, pr;

				pf[n].fd = fd;
				pf[n++].events = POLLIN;
				for (i = 0; i < s->nrx; i++) {
					if (!ts_stack__usable(s->rx_stacks[i]))
						continue;
					pf[n].fd = ts_stack__fd(s->rx_stacks[i]);
					pf[n++].events = POLLIN;
				}
				if (ts_sig_efd >= 0) {
					pf[n].fd = ts_sig_efd;
					pf[n++].events = POLLIN;
				}
				if (deadline)
					t = (int)((deadline - now) / 1000000) + 1;
				efd_drain();
				if (ts_sig__norestart_gen() != g0) {
					errno = EINTR;
					return -1;
				}
				pr = ts_real_poll(pf, (nfds_t)n, t);
				if (pr > 0 && (pf[0].revents & POLLIN))
					s->kernel_hint = 1;
				if (pr < 0 && errno != EINTR)
					return -1;
				iter = 1;
			}
		} else {
			ts_cpu_relax();
		}
	}
}

/* ------------------------------------------------------------------ */
/* send                                                                */

#define TS_SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_CONFIRM)

/* Kick what a batch (sendmmsg) left on the TX ring. */
void ts_sock__flush(struct ts_sock *s)
{
	struct ts_stack *st = s->tx_pending_st;

	if (!st)
		return;
	ts_lock();
	s->tx_pending_st = NULL;
	if (ts_stack__usable(st))
		ts_stack__flush(st);
	ts_unlock();
}

static ssize_t kernel_send(struct ts_sock *s, int fd, const struct msghdr *msg,
			   int flags, uint64_t *reason)
{
	ssize_t r;

	ts_sock__flush(s); /* what the batch queued before goes out first */
	r = ts_real_sendmsg(fd, msg, flags);

	if (reason)
		(*reason)++;
	if (r >= 0)
		s->stats->tx_kernel++;
	return r;
}

ssize_t ts_sock__sendmsg(struct ts_sock *s, int fd, const struct msghdr *msg,
			 int flags, int more)
{
	struct ts_udp_hdr_spec h;
	struct ts_nexthop nh;
	struct ts_flow fl;
	int mc;
	struct ts_stack *st;
	uint32_t daddr;
	uint16_t dport;
	size_t len = 0, i;
	int nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	int r, why;

	if (s->state == TS_S_KERNEL && s->owner == ts_getpid())
		return kernel_send(s, fd, msg, flags, NULL);
	if ((flags & ~TS_SEND_FLAGS) || msg->msg_controllen)
		return kernel_send(s, fd, msg, flags, &s->stats->tx_kernel_flags);
	if (msg->msg_name) {
		const struct sockaddr_in *sa = msg->msg_name;

		if (msg->msg_namelen < sizeof(*sa) || sa->sin_family != AF_INET)
			return kernel_send(s, fd, msg, flags, NULL);
		daddr = sa->sin_addr.s_addr;
		dport = sa->sin_port;
	} else if (s->connected) {
		daddr = s->raddr;
		dport = s->rport;
	} else {
		return kernel_send(s, fd, msg, flags, NULL);
	}
	for (i = 0; i < (size_t)msg->msg_iovlen; i++)
		len += msg->msg_iov[i].iov_len;

	ts_lock();
	sock__check_owner(s, fd);
	if (s->state == TS_S_NEW) {
		r = sock__activate(s, fd, 1);
		if (r < 0) {
			ts_unlock();
			errno = -r;
			return -1;
		}
	}
	if (s->state != TS_S_ACCEL) {
		ts_unlock();
		return kernel_send(s, fd, msg, flags, NULL);
	}
	if (!dport || !daddr || daddr == INADDR_BROADCAST) {
		ts_unlock();
		return kernel_send(s, fd, msg, flags,
				   &s->stats->tx_kernel_local);
	}
	mc = IN_MULTICAST(ntohl(daddr));
	if (mc && s->mcast_loop) {
		/* IP_MULTICAST_LOOP (on by default) gives a copy to the host's
		 * own members, which only the kernel path does */
		ts_unlock();
		return kernel_send(s, fd, msg, flags,
				   &s->stats->tx_kernel_mcloop);
	}
	memset(&fl, 0, sizeof(fl));
	fl.daddr = daddr;
	fl.saddr = s->laddr && !IN_MULTICAST(ntohl(s->laddr)) ? s->laddr :
	           mc ? s->mcast_if : 0;
	fl.oif = mc ? s->mcast_ifindex : 0;
	fl.sport = s->lport;
	fl.dport = dport;
	fl.tos = s->tos & 0x1c; /* the routing bits (RT_TOS) */
	why = nexthop(&fl, &nh);
	if (why != NH_OK) {
		uint64_t *c = why == NH_NEIGH ? &s->stats->tx_kernel_neigh :
			      why == NH_LOCAL ? &s->stats->tx_kernel_local :
						&s->stats->tx_kernel_noroute;

		ts_stats->fallback_events++;
		ts_unlock();
		if (ts_cfg.require && why != NH_NEIGH) {
			(*c)++;
			errno = -require_fail(s, why == NH_LOCAL ?
						"destination is local or broadcast" :
						"no route to the destination");
			return -1;
		}
		/* a neighbour miss: the kernel send resolves it (ARP) */
		return kernel_send(s, fd, msg, flags, c);
	}
	st = ts_stack__get(nh.ifindex, 1);
	if (!st || len > ts_stack__max_payload(st)) {
		uint64_t *c = st ? &s->stats->tx_kernel_oversize :
				   &s->stats->tx_kernel_nostack;

		ts_stats->fallback_events++;
		ts_unlock();
		if (ts_cfg.require) {
			(*c)++;
			errno = -require_fail(s, st ? "datagram larger than the MTU" :
						      "no XSK on the outgoing "
						      "interface");
			return -1;
		}
		return kernel_send(s, fd, msg, flags, c);
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.dmac, nh.mac, 6);
	h.saddr = fl.saddr ? fl.saddr : nh.prefsrc;
	h.daddr = daddr;
	h.sport = s->lport;
	h.dport = dport;
	h.ttl = mc ? s->mcast_ttl : s->ttl;
	h.tos = s->tos;
	r = ts_stack__send(st, &h, msg->msg_iov, (int)msg->msg_iovlen, len,
			   nonblock, more);
	if (more && !r)
		s->tx_pending_st = st;
	else if (s->tx_pending_st && s->tx_pending_st != st)
		ts_stack__flush(s->tx_pending_st);
	if (!more)
		s->tx_pending_st = NULL;
	ts_unlock();
	if (r < 0) {
		errno = -r;
		return -1;
	}
	s->stats->tx_accel++;
	return (ssize_t)len;
}

/* ------------------------------------------------------------------ */
/* bind / connect / options                                            */

int ts_sock__after_bind(struct ts_sock *s, int fd)
{
	int r;

	ts_lock();
	r = sock__activate(s, fd, 0);
	ts_unlock();
	return r;
}

int ts_sock__after_connect(struct ts_sock *s, int fd,
			   const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_in *sa = (const struct sockaddr_in *)addr;
	int r = 0;

	ts_lock();
	if (addr && len >= sizeof(*sa) && sa->sin_family == AF_INET) {
		s->raddr = sa->sin_addr.s_addr;
		s->rport = sa->sin_port;
		s->connected = 1;
		s->stats->raddr = s->raddr;
		s->stats->rport = s->rport;
		if (s->state == TS_S_NEW)
			r = sock__activate(s, fd, 0);
	} else {
		s->connected = 0;
		s->raddr = 0;
		s->rport = 0;
	}
	ts_unlock();
	return r;
}

static int group_ifindex(uint32_t group, uint32_t ifaddr, int ifindex)
{
	struct ts_nexthop nh;

	if (ifindex > 0)
		return ifindex;
	if (ifaddr)
		return ifindex_of_addr(ifaddr);
	if (!ts_route__lookup(group, &nh))
		return nh.ifindex;
	return 0;
}

#ifndef SO_TIMESTAMP_OLD
#define SO_TIMESTAMP_OLD 29
#define SO_TIMESTAMPNS_OLD 35
#define SO_TIMESTAMPING_OLD 37
#define SO_RCVTIMEO_OLD 20
#define SO_SNDTIMEO_OLD 21
#endif
#ifndef SO_TIMESTAMP_NEW
#define SO_TIMESTAMP_NEW 63
#define SO_TIMESTAMPNS_NEW 64
#define SO_TIMESTAMPING_NEW 65
#define SO_RCVTIMEO_NEW 66
#define SO_SNDTIMEO_NEW 67
#endif
#ifndef SO_RCVMARK
#define SO_RCVMARK 75
#endif
#ifndef SO_RCVPRIORITY
#define SO_RCVPRIORITY 82
#endif
#ifndef UDP_CORK
#define UDP_CORK 1
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Options whose effect the stack does not reproduce: the socket moves to
 * the kernel (counted in kernel_option) as soon as one is turned on. */
static int option__needs_kernel(int level, int opt, int iv, const void *val,
				socklen_t len)
{
	if (level == SOL_SOCKET) {
		switch (opt) {
		case SO_BINDTODEVICE: /* routing and delivery per device */
			return len > 0 && val && *(const char *)val;
		case SO_BINDTOIFINDEX:
		case SO_MARK:          /* policy routing, netfilter */
		case SO_REUSEPORT:     /* the kernel's group picks one socket */
		case SO_TIMESTAMPING_OLD:
		case SO_TIMESTAMPING_NEW:
		case SO_RXQ_OVFL:
		case SO_RCVMARK:
		case SO_RCVPRIORITY:
		case SO_PASSCRED:
		case SO_PASSSEC:
			return iv != 0;
		case SO_ATTACH_FILTER: /* socket filters run in the kernel */
		case SO_ATTACH_BPF:
		case SO_ATTACH_REUSEPORT_CBPF:
		case SO_ATTACH_REUSEPORT_EBPF:
			return 1;
		}
		return 0;
	}
	if (level == IPPROTO_IP) {
		switch (opt) {
		case IP_RECVOPTS:
		case IP_RETOPTS:
		case IP_RECVORIGDSTADDR:
		case IP_RECVERR:
		case IP_PASSSEC:
		case IP_CHECKSUM:
		case IP_RECVFRAGSIZE:
		case IP_TRANSPARENT:
		case IP_UNICAST_IF:
			return iv != 0;
		case IP_OPTIONS: /* options in every header sent */
			return len > 0;
		case IP_MTU_DISCOVER: /* the stack always sets DF */
			return iv == IP_PMTUDISC_DONT;
		}
		return 0;
	}
	if (level == IPPROTO_UDP)
		return iv != 0 && (opt == UDP_CORK || opt == UDP_SEGMENT ||
				   opt == UDP_GRO || opt == UDP_ENCAP);
	return 0;
}

/* Called after the kernel accepted the option. */
void ts_sock__setsockopt(struct ts_sock *s, int fd, int level, int opt,
			 const void *val, socklen_t len)
{
	int iv = 0;

	if (len >= sizeof(int) && val)
		memcpy(&iv, val, sizeof(int));
	else if (len >= 1 && val)
		iv = *(const unsigned char *)val;
	ts_lock();
	if (option__needs_kernel(level, opt, iv, val, len)) {
		if (s->state != TS_S_KERNEL) {
			ts_dbg("fd %d moves to the kernel: option %d/%d", fd,
			       level, opt);
			ts_stats->kernel_option++;
			ts_stats->fallback_events++;
			if (s->state == TS_S_NEW)
				ts_stats->sockets_kernel++;
			sock__to_kernel(s);
		}
	} else if (level == SOL_SOCKET) {
		switch (opt) {
		case SO_RCVTIMEO_OLD:
		case SO_RCVTIMEO_NEW:
			if (len >= sizeof(struct timeval))
				memcpy(&s->rcvtimeo, val, sizeof(struct timeval));
			break;
		case SO_SNDTIMEO_OLD:
		case SO_SNDTIMEO_NEW:
			if (len >= sizeof(struct timeval))
				memcpy(&s->sndtimeo, val, sizeof(struct timeval));
			break;
		case SO_REUSEADDR:
			s->reuse = iv != 0;
			break;
		case SO_TIMESTAMP_OLD:
		case SO_TIMESTAMP_NEW:
		case SO_TIMESTAMPNS_OLD:
		case SO_TIMESTAMPNS_NEW: {
			/* as sock_set_timestamp: the last one set wins */
			int nw = opt == SO_TIMESTAMP_NEW || opt == SO_TIMESTAMPNS_NEW;
			int ns = opt == SO_TIMESTAMPNS_OLD || opt == SO_TIMESTAMPNS_NEW;

			s->cmsgs &= ~(TS_CM_TSTAMP | TS_CM_TSTAMPNS);
			if (iv) {
				s->cmsgs |= ns ? TS_CM_TSTAMPNS : TS_CM_TSTAMP;
				s->tstamp_type = ns ? (nw ? SO_TIMESTAMPNS_NEW :
							    SO_TIMESTAMPNS_OLD) :
						      (nw ? SO_TIMESTAMP_NEW :
							    SO_TIMESTAMP_OLD);
			}
			break;
		}
		}
	} else if (level == IPPROTO_IP) {
		switch (opt) {
		case IP_PKTINFO:
			s->cmsgs = iv ? s->cmsgs | TS_CM_PKTINFO :
					s->cmsgs & ~TS_CM_PKTINFO;
			break;
		case IP_RECVTTL:
			s->cmsgs = iv ? s->cmsgs | TS_CM_TTL : s->cmsgs & ~TS_CM_TTL;
			break;
		case IP_RECVTOS:
			s->cmsgs = iv ? s->cmsgs | TS_CM_TOS : s->cmsgs & ~TS_CM_TOS;
			break;
		case IP_MULTICAST_ALL:
			s->mc_all = iv != 0;
			break;
		case IP_TTL:
		case IP_TOS: {
			/* what the kernel keeps (-1 restores the default) */
			int v = 0;
			socklen_t vl = sizeof(v);

			if (ts_real_getsockopt(fd, IPPROTO_IP, opt, &v, &vl))
				break;
			if (opt == IP_TTL)
				s->ttl = (uint8_t)v;
			else
				s->tos = (uint8_t)v;
			break;
		}
		case IP_MULTICAST_TTL:
			s->mcast_ttl = (uint8_t)iv;
			break;
		case IP_MULTICAST_LOOP:
			s->mcast_loop = (uint8_t)iv;
			break;
		case IP_MULTICAST_IF: {
			struct ip_mreqn mr;

			memset(&mr, 0, sizeof(mr));
			if (len >= sizeof(struct ip_mreqn))
				memcpy(&mr, val, sizeof(mr));
			else if (len >= sizeof(struct in_addr))
				memcpy(&mr.imr_address, val, sizeof(struct in_addr));
			s->mcast_if = mr.imr_address.s_addr;
			s->mcast_ifindex = mr.imr_ifindex ?
						   mr.imr_ifindex :
						   (s->mcast_if ?
							    ifindex_of_addr(s->mcast_if) :
							    0);
			break;
		}
		case IP_ADD_MEMBERSHIP: {
			struct ip_mreqn mr;
			int idx;

			memset(&mr, 0, sizeof(mr));
			if (len >= sizeof(struct ip_mreqn))
				memcpy(&mr, val, sizeof(mr));
			else if (len >= sizeof(struct ip_mreq))
				memcpy(&mr, val, sizeof(struct ip_mreq));
			else
				break;
			idx = group_ifindex(mr.imr_multiaddr.s_addr,
					    mr.imr_address.s_addr,
					    len >= sizeof(struct ip_mreqn) ?
						    mr.imr_ifindex :
						    0);
			if (s->ngroups >= TS_MAX_GROUPS || idx <= 0) {
				sock__to_kernel(s);
				break;
			}
			s->groups[s->ngroups] = mr.imr_multiaddr.s_addr;
			s->group_ifindex[s->ngroups++] = idx;
			if (s->state == TS_S_NEW) {
				sock__activate(s, fd, 0);
			} else if (s->state == TS_S_ACCEL) {
				struct ts_stack *st = ts_stack__get(idx, 1);

				if (st && !sock__steer(s, st,
						       mr.imr_multiaddr.s_addr)) {
					sock__add_rx_stack(s, st);
					s->stats->accelerated = 1;
				} else if (!st) {
					ts_stack__share(idx,
							mr.imr_multiaddr.s_addr,
							s->lport);
				}
			}
			break;
		}
		case IP_DROP_MEMBERSHIP: {
			struct ip_mreq mr;
			int g;

			if (len < sizeof(struct ip_mreq))
				break;
			memcpy(&mr, val, sizeof(mr));
			for (g = 0; g < s->ngroups; g++) {
				if (s->groups[g] != mr.imr_multiaddr.s_addr)
					continue;
				if (s->state == TS_S_ACCEL) {
					struct ts_stack *st = ts_stack__get(
						s->group_ifindex[g], 0);

					if (st)
						ts_stack__steer_del(
							st, s->groups[g],
							s->lport, 1);
				}
				s->groups[g] = s->groups[s->ngroups - 1];
				s->group_ifindex[g] =
					s->group_ifindex[s->ngroups - 1];
				s->ngroups--;
				break;
			}
			break;
		}
		case IP_ADD_SOURCE_MEMBERSHIP:
		case IP_BLOCK_SOURCE:
		case MCAST_JOIN_SOURCE_GROUP:
		case MCAST_JOIN_GROUP:
			/* source filters: the kernel implements them */
			ts_stats->fallback_events++;
			sock__to_kernel(s);
			break;
		}
	}
	ts_unlock();
}

/* io_uring reads and writes the kernel socket behind the library's back:
 * from the first io_uring on, every socket is a kernel socket. */
void ts_sock__uring_used(void)
{
	int fd;

	if (__atomic_exchange_n(&ts_uring_used, 1, __ATOMIC_ACQ_REL))
		return;
	ts_log("io_uring in use: UDP sockets stay on the kernel stack");
	ts_lock();
	for (fd = 0; fd < ts_fdtab_size; fd++) {
		struct ts_sock *s = ts_fdtab[fd];

		if (!s || s->fd != fd || s->state == TS_S_KERNEL)
			continue;
		if (s->state == TS_S_NEW)
			ts_stats->sockets_kernel++;
		ts_stats->kernel_uring++;
		sock__to_kernel(s);
	}
	ts_unlock();
}

int ts_sock__fionread(struct ts_sock *s, int *out)
{
	int r = 0;

	ts_lock();
	if (s->state == TS_S_ACCEL) {
		if (s->qhead == s->qtail)
			sock__poll_stacks(s);
		if (s->qhead != s->qtail) {
			*out = s->q[s->qhead & (s->qcap - 1)].len;
			r = 1;
		}
	}
	ts_unlock();
	return r;
}

/* ------------------------------------------------------------------ */
/* poll and select                                                     */

static struct ts_sock *accel_of(int fd)
{
	struct ts_sock *s = ts_sock__of(fd);

	if (!s)
		return NULL;
	if (s->owner != ts_getpid()) {
		ts_lock();
		sock__check_owner(s, fd);
		ts_unlock();
	}
	return s->state == TS_S_ACCEL ? s : NULL;
}

int ts_poll__has_accel(struct pollfd *fds, nfds_t n)
{
	nfds_t i;

	for (i = 0; i < n; i++)
		if (accel_of(fds[i].fd))
			return 1;
	return 0;
}

/* timeout_ns < 0: forever. */
int ts_poll__wait(struct pollfd *fds, nfds_t n, int64_t timeout_ns,
		  const sigset_t *mask)
{
	unsigned long g0 = ts_sig__gen();
	uint64_t start = ts_now_ns(), spin_end, deadline;
	unsigned iter = 0;
	struct pollfd *tmp;
	struct ts_spin sp;
	nfds_t i;
	int kdue = 0, ready, r;

	tmp = calloc(n + TICKSTACK_STATS_MAX_XSK + 1, sizeof(*tmp));
	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	deadline = timeout_ns < 0 ? UINT64_MAX : start + (uint64_t)timeout_ns;
	spin_end = ts_cfg.spin_usec < 0 ?
			   UINT64_MAX :
			   start + (uint64_t)ts_cfg.spin_usec * 1000;
	ts_spin__start(&sp, start);
	for (;;) {
		int kernel_checked = 0;

		ready = 0;
		ts_lock();
		if (ts_stack__any_busy())
			ts_stack__poll_all();
		for (i = 0; i < n; i++) {
			struct ts_sock *s = ts_sock__of(fds[i].fd);

			fds[i].revents = 0;
			if (s && s->state == TS_S_ACCEL) {
				if ((fds[i].events & POLLIN) &&
				    s->qhead != s->qtail)
					fds[i].revents |= POLLIN;
				if (fds[i].events & POLLOUT)
					fds[i].revents |= POLLOUT;
			}
		}
		ts_unlock();
		if (iter == 0 || kdue) {
			kdue = 0;
			memcpy(tmp, fds, n * sizeof(*tmp));
			r = ts_real_poll(tmp, n, 0);
			if (r < 0 && errno != EINTR)
				goto out;
			kernel_checked = 1;
			for (i = 0; r > 0 && i < n; i++) {
				struct ts_sock *s = ts_sock__of(fds[i].fd);

				fds[i].revents |= tmp[i].revents;
				if (s && (tmp[i].revents & POLLIN))
					s->kernel_hint = 1;
			}
		}
		for (i = 0; i < n; i++)
			ready += fds[i].revents != 0;
		if (ready || timeout_ns == 0) {
			if (ready || kernel_checked) {
				r = ready;
				goto out;
			}
		}
		if (ts_sig__gen() != g0) {
			errno = EINTR;
			r = -1;
			goto out;
		}
		iter++;
		if ((iter & 63) == 0 || timeout_ns == 0) {
			uint64_t now = ts_now_ns();

			if (now >= deadline) {
				r = 0;
				goto out;
			}
			kdue |= ts_spin__tick(&sp, now);
			if (now >= spin_end) {
				nfds_t m = n;
				int k;
				struct timespec ts, *tsp = NULL;

				memcpy(tmp, fds, n * sizeof(*tmp));
				for (k = 0; k < ts_stack__count(); k++) {
					struct ts_stack *st = ts_stack__at(k);

					if (!ts_stack__usable(st))
						continue;
					tmp[m].fd = ts_stack__fd(st);
					tmp[m++].events = POLLIN;
				}
				if (ts_sig_efd >= 0) {
					tmp[m].fd = ts_sig_efd;
					tmp[m++].events = POLLIN;
				}
				if (deadline != UINT64_MAX) {
					uint64_t left = deadline - now;

					ts.tv_sec = (time_t)(left / 1000000000ull);
					ts.tv_nsec = (long)(left % 1000000000ull);
					tsp = &ts;
				}
				efd_drain();
				if (ts_sig__gen() != g0) {
					errno = EINTR;
					r = -1;
					goto out;
				}
				r = ts_real_ppoll(tmp, m, tsp, mask);
				if (r < 0)
					goto out; /* EINTR as the kernel does */
				ready = 0;
				for (i = 0; i < n; i++) {
					struct ts_sock *s = ts_sock__of(fds[i].fd);

					if (s && s->state == TS_S_ACCEL &&
					    (tmp[i].revents & POLLIN))
						s->kernel_hint = 1;
				}
				iter = 0; /* recompute, including the kernel */
			}
		} else {
			ts_cpu_relax();
		}
	}
out:
	free(tmp);
	return r;
}

/* ------------------------------------------------------------------ */
/* epoll                                                               */

#define TS_EP_TAG_SOCK 0x7453000000000000ull
#define TS_EP_TAG_XSK 0x7458000000000000ull
#define TS_EP_TAG_MASK 0xffff000000000000ull

struct ts_ep_member {
	int fd;
	uint32_t events;
	epoll_data_t data;
	int disabled; /* EPOLLONESHOT fired */
};

struct ts_ep {
	int epfd;
	int n, cap;
	struct ts_ep_member *m;
	int xsk_fds[TICKSTACK_STATS_MAX_XSK + 1];
	int nxsk;
	struct ts_ep *next;
};

static struct ts_ep *eps;
static void ep__del_xsks(struct ts_ep *e);

static struct ts_ep *ep_of(int epfd)
{
	struct ts_ep *e;

	for (e = eps; e; e = e->next)
		if (e->epfd == epfd)
			return e;
	return NULL;
}

int ts_ep__ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct ts_sock *s = ts_sock__of(fd);
	struct ts_ep *e;
	struct epoll_event kev;
	int i, r;

	if (!s)
		return ts_real_epoll_ctl(epfd, op, fd, ev);
	memset(&kev, 0, sizeof(kev));
	if (ev) {
		kev.events = ev->events;
		kev.data.u64 = TS_EP_TAG_SOCK | (uint32_t)fd;
	}
	r = ts_real_epoll_ctl(epfd, op, fd, ev ? &kev : NULL);
	if (r < 0)
		return r;
	ts_lock();
	e = ep_of(epfd);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			ts_unlock();
			return 0;
		}
		e->epfd = epfd;
		e->next = eps;
		eps = e;
	}
	for (i = 0; i < e->n; i++)
		if (e->m[i].fd == fd)
			break;
	if (op == EPOLL_CTL_DEL) {
		if (i < e->n)
			e->m[i] = e->m[--e->n];
		if (!e->n)
			ep__del_xsks(e);
	} else if (ev) {
		if (i == e->n) {
			if (e->n == e->cap) {
				int cap = e->cap ? e->cap * 2 : 8;
				void *p = realloc(e->m, (size_t)cap * sizeof(*e->m));

				if (!p) {
					ts_unlock();
					return 0;
				}
				e->m = p;
				e->cap = cap;
			}
			e->n++;
		}
		e->m[i].fd = fd;
		e->m[i].events = ev->events;
		e->m[i].data = ev->data;
		e->m[i].disabled = 0;
	}
	ts_unlock();
	return 0;
}

void ts_ep__forget_fd(int fd)
{
	struct ts_ep *e, **pp;
	int i;

	if (!__atomic_load_n(&eps, __ATOMIC_ACQUIRE))
		return; /* no epoll holds one of our sockets: nothing to do */
	ts_lock();
	for (pp = &eps; (e = *pp);) {
		if (e->epfd == fd) {
			*pp = e->next;
			free(e->m);
			free(e);
			continue;
		}
		for (i = 0; i < e->n; i++)
			if (e->m[i].fd == fd)
				e->m[i--] = e->m[--e->n];
		if (!e->n && e->nxsk)
			ep__del_xsks(e);
		pp = &e->next;
	}
	ts_unlock();
}

/* The XSK and signal fds joined the set for sleeping; once no socket of
 * ours is left in it they must leave too, or the application would get
 * their events (with a data it never registered). Caller holds the lock. */
static void ep__del_xsks(struct ts_ep *e)
{
	int j;

	for (j = 0; j < e->nxsk; j++)
		ts_real_epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->xsk_fds[j], NULL);
	e->nxsk = 0;
}

int ts_ep__active(int epfd)
{
	struct ts_ep *e = __atomic_load_n(&eps, __ATOMIC_ACQUIRE) ? ep_of(epfd) :
								    NULL;

	return e && (e->n > 0 || e->nxsk > 0);
}

static void ep__add_xsks(struct ts_ep *e)
{
	int k, j;

	for (k = 0; k < ts_stack__count(); k++) {
		struct ts_stack *st = ts_stack__at(k);
		int fd, have = 0;
		struct epoll_event ev;

		if (!ts_stack__usable(st))
			continue;
		fd = ts_stack__fd(st);
		for (j = 0; j < e->nxsk; j++)
			have |= e->xsk_fds[j] == fd;
		if (have || e->nxsk >= TICKSTACK_STATS_MAX_XSK)
			continue;
		ev.events = EPOLLIN;
		ev.data.u64 = TS_EP_TAG_XSK | (uint32_t)fd;
		if (!ts_real_epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) ||
		    errno == EEXIST)
			e->xsk_fds[e->nxsk++] = fd;
	}
	if (ts_sig_efd >= 0 && e->nxsk < TICKSTACK_STATS_MAX_XSK + 1) {
		int have = 0;
		struct epoll_event ev;

		for (j = 0; j < e->nxsk; j++)
			have |= e->xsk_fds[j] == ts_sig_efd;
		ev.events = EPOLLIN;
		ev.data.u64 = TS_EP_TAG_XSK | (uint32_t)ts_sig_efd;
		if (!have &&
		    (!ts_real_epoll_ctl(e->epfd, EPOLL_CTL_ADD, ts_sig_efd, &ev) ||
		     errno == EEXIST))
			e->xsk_fds[e->nxsk++] = ts_sig_efd;
	}
}

static int out_add(struct epoll_event *out, int *nout, int max,
		   struct ts_ep_member *m, uint32_t ev)
{
	int i;

	for (i = 0; i < *nout; i++) {
		if (out[i].data.u64 == m->data.u64 && (out[i].events & ev)) {
			out[i].events |= ev;
			return 0;
		}
	}
	if (*nout >= max)
		return -1;
	out[*nout].events = ev;
	out[*nout].data = m->data;
	(*nout)++;
	if (m->events & EPOLLONESHOT)
		m->disabled = 1;
	return 0;
}

/* Translate the kernel's events: our tags back to the user's data. */
static void ep__merge_kernel(struct ts_ep *e, struct epoll_event *kev, int kn,
			     struct epoll_event *out, int *nout, int max)
{
	int i, j;

	for (i = 0; i < kn; i++) {
		uint64_t tag = kev[i].data.u64 & TS_EP_TAG_MASK;

		if (tag == TS_EP_TAG_XSK)
			continue;
		if (tag != TS_EP_TAG_SOCK) {
			if (*nout < max)
				out[(*nout)++] = kev[i];
			continue;
		}
		for (j = 0; j < e->n; j++) {
			struct ts_ep_member *m = &e->m[j];

			if (m->fd != (int)(uint32_t)kev[i].data.u64)
				continue;
			if (kev[i].events & EPOLLIN) {
				struct ts_sock *s = ts_sock__of(m->fd);

				if (s)
					s->kernel_hint = 1;
			}
			if (!m->disabled)
				out_add(out, nout, max, m, kev[i].events);
			break;
		}
	}
}

int ts_ep__wait(int epfd, struct epoll_event *out, int max, int timeout_ms,
		const sigset_t *mask)
{
	unsigned long g0 = ts_sig__gen();
	uint64_t start = ts_now_ns(), spin_end, deadline;
	struct epoll_event kev[64];
	unsigned iter = 0;
	int kdue = 0, nout, kn, i;
	struct ts_spin sp;
	struct ts_ep *e;

	if (max <= 0) {
		errno = EINVAL;
		return -1;
	}
	deadline = timeout_ms < 0 ? UINT64_MAX :
				    start + (uint64_t)timeout_ms * 1000000ull;
	spin_end = ts_cfg.spin_usec < 0 ?
			   UINT64_MAX :
			   start + (uint64_t)ts_cfg.spin_usec * 1000;
	ts_spin__start(&sp, start);
	for (;;) {
		nout = 0;
		ts_lock();
		e = ep_of(epfd);
		if (!e || !e->n) {
			if (e)
				ep__del_xsks(e);
			ts_unlock();
			return ts_real_epoll_pwait(epfd, out, max, timeout_ms,
						   mask);
		}
		if (ts_stack__any_busy())
			ts_stack__poll_all();
		for (i = 0; i < e->n && nout < max; i++) {
			struct ts_ep_member *m = &e->m[i];
			struct ts_sock *s = ts_sock__of(m->fd);
			uint32_t ev = 0;

			if (m->disabled || !s || s->state != TS_S_ACCEL)
				continue;
			if ((m->events & EPOLLIN) && s->qhead != s->qtail)
				ev |= EPOLLIN;
			if (m->events & EPOLLOUT)
				ev |= EPOLLOUT;
			if (ev)
				out_add(out, &nout, max, m, ev);
		}
		ts_unlock();
		if (iter == 0 || kdue || timeout_ms == 0) {
			kdue = 0;
			kn = ts_real_epoll_wait(epfd, kev,
						max < 64 ? max : 64, 0);
			if (kn > 0) {
				ts_lock();
				e = ep_of(epfd);
				if (e)
					ep__merge_kernel(e, kev, kn, out, &nout,
							 max);
				ts_unlock();
			}
			if (nout || timeout_ms == 0)
				return nout;
		} else if (nout) {
			return nout;
		}
		if (ts_sig__gen() != g0) {
			errno = EINTR;
			return -1;
		}
		iter++;
		if ((iter & 63) == 0) {
			uint64_t now = ts_now_ns();
			int t;

			if (now >= deadline)
				return 0;
			kdue |= ts_spin__tick(&sp, now);
			if (now < spin_end)
				continue;
			ts_lock();
			e = ep_of(epfd);
			if (e)
				ep__add_xsks(e);
			ts_unlock();
			t = deadline == UINT64_MAX ?
				    -1 :
				    (int)((deadline - now + 999999) / 1000000);
			efd_drain();
			if (ts_sig__gen() != g0) {
				errno = EINTR;
				return -1;
			}
			kn = ts_real_epoll_pwait(epfd, kev, max < 64 ? max : 64,
						 t, mask);
			if (kn < 0)
				return -1;
			if (kn > 0) {
				ts_lock();
				e = ep_of(epfd);
				if (e)
					ep__merge_kernel(e, kev, kn, out, &nout,
							 max);
				ts_unlock();
				if (nout)
					return nout;
			}
			iter = 1;
		} else {
			ts_cpu_relax();
		}
	}
}

/* ------------------------------------------------------------------ */
/* fork                                                                */

void ts_sock__after_fork_child(struct tickstack_stats *old,
			       struct tickstack_stats *now)
{
	int fd;

	if (!ts_fdtab)
		return;
	for (fd = 0; fd < ts_fdtab_size; fd++) {
		struct ts_sock *s = ts_fdtab[fd];

		if (!s || s->fd != fd)
			continue;
		if (s->stats != &s->dummy_stats && old != now)
			s->stats = (struct tickstack_sock_stats *)((char *)now +
				   ((char *)s->stats - (char *)old));
	}
}

int ts_sock__init_tables(void)
{
	ts_fdtab_size = 65536;
	ts_fdtab = calloc((size_t)ts_fdtab_size, sizeof(*ts_fdtab));
	ts_port_tab = calloc(65536, sizeof(*ts_port_tab));
	if (!ts_fdtab || !ts_port_tab) {
		free(ts_fdtab);
		free(ts_port_tab);
		ts_fdtab = NULL;
		ts_port_tab = NULL;
		ts_fdtab_size = 0;
		return -ENOMEM;
	}
	ts_sig_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return 0;
}
