// SPDX-License-Identifier: Apache-2.0
/* sock.c - the shadow socket layer: every application socket stays a real
 * kernel fd; the shadow holds the accelerated state (steering, RX queue).
 * Here: the socket objects and their life, the port table the RX path
 * delivers through, activation (steering), options. The receive path is
 * rx.c, the send path tx.c, waiting wait.c and epoll.c. */
#include "ts_internal.h"
#include "steer_common.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/net_tstamp.h>
#include <sodium/crypto_shorthash_siphash24.h>
#include <sys/random.h>
#include <linux/rtnetlink.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <unistd.h>

struct ts_sock **ts_fdtab;
int ts_fdtab_size;
struct ts_sock **ts_port_tab;
int ts_uring_used;
static void sock__uring_used_locked(void);

static int ifindex_of_addr(uint32_t addr)
{
	int idx[1];

	return ts_iface__for(addr, idx, 1) == 1 ? idx[0] : 0;
}

/* ------------------------------------------------------------------ */
/* shadow sockets                                                      */

/* The port table: chains of accelerated sockets by local port, read by
 * the RX path (ts_sock__deliver) under the read lock; changed under the
 * control lock and the write lock. */
pthread_rwlock_t ts_port_lock = PTHREAD_RWLOCK_INITIALIZER;

void ts_sock__deliver_begin(void)
{
	pthread_rwlock_rdlock(&ts_port_lock);
}

void ts_sock__deliver_end(void)
{
	pthread_rwlock_unlock(&ts_port_lock);
}

static void port_link(struct ts_sock *s)
{
	uint16_t p = ntohs(s->lport);

	pthread_rwlock_wrlock(&ts_port_lock);
	s->next_port = ts_port_tab[p];
	ts_port_tab[p] = s;
	pthread_rwlock_unlock(&ts_port_lock);
}

static void port_unlink(struct ts_sock *s)
{
	struct ts_sock **pp = &ts_port_tab[ntohs(s->lport)];

	pthread_rwlock_wrlock(&ts_port_lock);
	while (*pp) {
		if (*pp == s) {
			*pp = s->next_port;
			s->next_port = NULL;
			break;
		}
		pp = &(*pp)->next_port;
	}
	pthread_rwlock_unlock(&ts_port_lock);
}

/* Closed sockets wait in a FIFO before reuse, so that a thread which
 * loaded the pointer just before the close only ever sees a socket, never
 * freed memory (ts_sock__get checks the fd table again). ts_lock. */
#define TS_POOL_DELAY 64
static struct ts_sock *pool_head, *pool_tail;
static int pool_n;

static struct ts_sock *pool__take(void)
{
	struct ts_sock *s;
	struct ts_rxent *q;
	uint32_t qcap;

	if (pool_n <= TS_POOL_DELAY)
		return calloc(1, sizeof(struct ts_sock));
	s = pool_head;
	pool_head = s->next_free;
	if (!pool_head)
		pool_tail = NULL;
	pool_n--;
	q = s->q;
	qcap = s->qcap;
	/* users stays as it is: a late ts_sock__get may hold it a moment */
	memset(&s->fd, 0, sizeof(*s) - offsetof(struct ts_sock, fd));
	s->refs = 0;
	__atomic_store_n(&s->dead, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->fin, 0, __ATOMIC_RELEASE);
	s->q = q;
	s->qcap = qcap;
	return s;
}

static void pool__give(struct ts_sock *s)
{
	s->gen++; /* a fork watch holding it sees another incarnation */
	s->next_free = NULL;
	if (pool_tail)
		pool_tail->next_free = s;
	else
		pool_head = s;
	pool_tail = s;
	pool_n++;
}

struct ts_sock *ts_sock__new(int fd, int nonblock)
{
	struct ts_sock *s;

	if (fd < 0 || fd >= ts_fdtab_size || !ts_fdtab)
		return NULL;
	ts_lock();
	s = pool__take();
	ts_unlock();
	if (!s)
		return NULL;
	pthread_mutex_init(&s->qlock, NULL);
	s->kfd = -1;
	s->refs = 1;
	s->fd = fd;
	__atomic_store_n(&s->owner, ts_getpid(), __ATOMIC_RELEASE);
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
	ts_lock(); /* the slots are shared with finalize */
	s->stats = ts_stats__sock_slot(fd);
	ts_unlock();
	if (!s->stats)
		s->stats = &s->dummy_stats;
	__atomic_store_n(&ts_fdtab[fd], s, __ATOMIC_RELEASE);
	return s;
}

/* Whether another accelerated socket of ours still needs the steering
 * entry (key, s's port) on st: then taking s down leaves it. ts_lock. */
static int key_in_use(const struct ts_sock *s, const struct ts_stack *st,
		      uint32_t key)
{
	const struct ts_sock *o;
	int i, g, on;

	for (o = ts_port_tab[ntohs(s->lport)]; o; o = o->next_port) {
		if (o == s || o->state != TS_S_ACCEL || o->lport != s->lport)
			continue;
		for (i = 0, on = 0; i < o->nrx; i++)
			on |= o->rx_stacks[i] == st;
		if (!on)
			continue;
		if (!IN_MULTICAST(ntohl(o->laddr)) && o->laddr == key)
			return 1;
		for (g = 0; g < o->ngroups; g++)
			if (o->groups[g] == key &&
			    o->group_ifindex[g] == ts_stack__ifindex(st))
				return 1;
	}
	return 0;
}

static void sock__steer_del(struct ts_sock *s, struct ts_stack *st,
			    uint32_t key)
{
	if (!key_in_use(s, st, key))
		ts_stack__steer_del(st, key, s->lport, 1);
}

/* What sock__steer_all does with each steering entry of a socket. */
enum steer_op {
	STEER_DEL,    /* take it down (unless another socket of ours needs it) */
	STEER_SHARE,  /* mark it shared: the kernel delivers (park) */
	STEER_AGAIN,  /* steer it to our XSK again, or shared (sock__steer) */
};

static int sock__steer(struct ts_sock *s, struct ts_stack *st, uint32_t key);

static void sock__steer_key(struct ts_sock *s, struct ts_stack *st,
			    uint32_t key, enum steer_op op)
{
	switch (op) {
	case STEER_DEL:
		sock__steer_del(s, st, key);
		break;
	case STEER_SHARE:
		ts_stack__steer_shared(st, key, s->lport);
		break;
	case STEER_AGAIN:
		sock__steer(s, st, key);
		break;
	}
}

/* op on every steering entry of s: its address and its groups, on each of
 * its XSKs. ts_lock. */
static void sock__steer_all(struct ts_sock *s, enum steer_op op)
{
	int i, g;

	for (i = 0; i < s->nrx; i++) {
		struct ts_stack *st = s->rx_stacks[i];

		if (!ts_stack__usable(st))
			continue;
		if (!IN_MULTICAST(ntohl(s->laddr)))
			sock__steer_key(s, st, s->laddr, op);
		for (g = 0; g < s->ngroups; g++)
			if (s->group_ifindex[g] == ts_stack__ifindex(st))
				sock__steer_key(s, st, s->groups[g], op);
	}
}

/* The table's sockets, each once (at its first fd), from after *fd on:
 *   for (fd = -1; (s = sock__next(&fd));) */
static struct ts_sock *sock__next(int *fd)
{
	if (!ts_fdtab)
		return NULL;
	while (++*fd < ts_fdtab_size) {
		struct ts_sock *s = ts_sock__of(*fd);

		if (s && s->fd == *fd)
			return s;
	}
	return NULL;
}

/* ---- datagrams queued before a fork (struct ts_claim) ---------------- */

static struct ts_claim *claim_of(const struct ts_sock *s, uint32_t pos)
{
	struct ts_claim *c;

	for (c = s->claims; c; c = c->next)
		if ((int32_t)(pos - c->from) >= 0 && (int32_t)(pos - c->to) < 0)
			return c;
	return NULL;
}

/* Whether this process may deliver the datagram at queue position pos:
 * one queued before a fork is taken once, by whichever process reads it
 * first (peek: only looks). qlock held. */
int ts_sock__claim(struct ts_sock *s, uint32_t pos, int peek)
{
	struct ts_claim *c = claim_of(s, pos);
	uint8_t *b;

	if (!c)
		return 1;
	b = &c->taken[pos - c->from];
	if (peek)
		return !__atomic_load_n(b, __ATOMIC_ACQUIRE);
	return !__atomic_exchange_n(b, 1, __ATOMIC_ACQ_REL);
}

/* Forget the regions the reader has passed. qlock held. */
static void claims_trim(struct ts_sock *s)
{
	struct ts_claim **pp = &s->claims, *c;

	while ((c = *pp)) {
		if ((int32_t)(s->qhead - c->to) >= 0) {
			*pp = c->next;
			munmap(c->taken, c->to - c->from);
			free(c);
		} else {
			pp = &c->next;
		}
	}
}

/* Drop datagrams from the head of the queue, giving their frames back:
 * all of them (close), or those the other side of a fork took. */
static void sock__drop_head(struct ts_sock *s, int all)
{
	for (;;) {
		struct ts_rxent e;

		pthread_mutex_lock(&s->qlock);
		if (s->qhead == s->qtail || (!all && ts_sock__claim(s, s->qhead, 1))) {
			claims_trim(s);
			pthread_mutex_unlock(&s->qlock);
			return;
		}
		e = s->q[s->qhead & (s->qcap - 1)];
		__atomic_store_n(&s->qhead, s->qhead + 1, __ATOMIC_RELEASE);
		s->qbytes -= ts_rx_truesize(e.len);
		s->qframes -= !e.spilled;
		claims_trim(s);
		pthread_mutex_unlock(&s->qlock);
		ts_rxent_release(&e);
	}
}

void ts_sock__skip_taken(struct ts_sock *s)
{
	sock__drop_head(s, 0);
}

/* ---- sockets shared with forked children ------------------------------
 * A child forked without exec shares each socket with its parent, as the
 * kernel shares it: a datagram goes to whichever process reads first. The
 * XSK is the parent's alone, so from the fork until the child is gone (or
 * has closed its copy) the parent's steering entries for the socket are
 * marked shared and the kernel socket both hold takes the port's
 * datagrams ("parked"). The datagrams already queued are claimed once
 * (struct ts_claim). Each fork that parks sockets gets a record in memory
 * both processes map; the parent's control thread watches the child
 * (pidfd) and its record, and steers each socket to the XSK again when no
 * child holds it any more. A child that execs keeps its copies (a plain
 * kernel socket in the new image) until it exits, as the kernel would. */

struct ts_forkrec {           /* MAP_SHARED: parent and child */
	pid_t pid;            /* the child's, written by it (0: not yet) */
	uint32_t n;
	uint8_t held[];       /* the child still holds socket i */
};

struct ts_forkwatch {         /* the parent's, under ts_lock */
	struct ts_forkwatch *next;
	struct ts_forkrec *rec;
	size_t bytes;
	uint64_t since;
	int pidfd;            /* -1: not opened yet; -2: unavailable */
	uint32_t n;
	struct { struct ts_sock *s; uint32_t gen; int parked; } socks[];
};

/* A fork that never produced a child (fork failed) leaves a record no
 * child writes: its sockets come back after this long. */
#define TS_FORK_NOCHILD_NS (10ull * 1000000000ull)

static struct ts_forkwatch *fork_watches; /* children being watched */
static struct ts_forkwatch *fork_pending; /* the fork under way */

static int sock__parkable(const struct ts_sock *s)
{
	return s->q && s->state == TS_S_ACCEL && s->nrx > 0 &&
	       s->owner == ts_getpid();
}

/* atfork prepare: park every socket of ours and make its record. */
static void fork__park(void)
{
	struct ts_forkwatch *w;
	struct ts_sock *s;
	uint32_t n = 0, i = 0;
	size_t bytes;
	int fd;

	for (fd = -1; (s = sock__next(&fd));)
		n += (uint32_t)sock__parkable(s);
	if (!n)
		return;
	w = calloc(1, sizeof(*w) + n * sizeof(w->socks[0]));
	if (!w)
		return;
	bytes = sizeof(struct ts_forkrec) + n;
	w->rec = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->rec == MAP_FAILED) {
		free(w);
		return;
	}
	w->bytes = bytes;
	w->pidfd = -1;
	w->n = n;
	w->rec->n = n;
	for (fd = -1; (s = sock__next(&fd)) && i < n;) {
		if (!sock__parkable(s))
			continue;
		s->fork_rec = w->rec;
		s->fork_idx = i;
		w->rec->held[i] = 1;
		w->socks[i].s = s;
		w->socks[i].gen = s->gen;
		w->socks[i].parked = 1;
		if (!s->parked++) {
			sock__steer_all(s, STEER_SHARE);
			ts_sock__fallback(s, TS_FB_FORK, "shared with a forked "
					  "child: the kernel delivers until the "
					  "child lets it go",
					  &ts_stats->kernel_shared);
		}
		i++;
	}
	fork_pending = w;
}

/* A child closed its copy of s. */
static void fork__released(struct ts_sock *s)
{
	struct ts_forkrec *r = s->fork_rec;

	if (s->fork_idx < r->n)
		__atomic_store_n(&r->held[s->fork_idx], 0, __ATOMIC_RELEASE);
	s->fork_rec = NULL;
}

static int fork__child_gone(struct ts_forkwatch *w)
{
	pid_t pid = __atomic_load_n(&w->rec->pid, __ATOMIC_ACQUIRE);
	struct pollfd p;

	if (!pid)
		return ts_now_ns() - w->since > TS_FORK_NOCHILD_NS;
	if (w->pidfd == -1) {
		w->pidfd = (int)ts_real_syscall(SYS_pidfd_open, pid, 0);
		if (w->pidfd < 0) {
			if (errno == ESRCH)
				return 1;
			w->pidfd = -2;
		}
	}
	if (w->pidfd >= 0) {
		p.fd = w->pidfd;
		p.events = POLLIN;
		return ts_real_poll(&p, 1, 0) > 0; /* exited (a zombie too) */
	}
	/* no pidfd (seccomp, old kernel): gone once reaped */
	return kill(pid, 0) && errno == ESRCH;
}

static void fork__watch_free(struct ts_forkwatch *w)
{
	if (w->pidfd >= 0)
		ts_real_close(w->pidfd);
	munmap(w->rec, w->bytes);
	free(w);
}

/* The control thread, now and then: sockets no child holds any more are
 * steered to the XSK again. */
void ts_sock__check_forks(void)
{
	struct ts_forkwatch **pp, *w;
	uint32_t i;

	if (!__atomic_load_n(&fork_watches, __ATOMIC_ACQUIRE))
		return;
	ts_lock();
	for (pp = &fork_watches; (w = *pp);) {
		int gone = fork__child_gone(w);

		for (i = 0; i < w->n; i++) {
			struct ts_sock *s = w->socks[i].s;

			if (!w->socks[i].parked ||
			    (!gone && __atomic_load_n(&w->rec->held[i],
						      __ATOMIC_ACQUIRE)))
				continue;
			w->socks[i].parked = 0;
			if (s->gen != w->socks[i].gen || s->parked <= 0)
				continue; /* closed meanwhile */
			if (!--s->parked && s->state == TS_S_ACCEL &&
			    s->owner == ts_getpid()) {
				sock__steer_all(s, STEER_AGAIN);
				ts_dbg("fd %d: no forked child holds it any more, "
				       "the XSK takes it again", s->fd);
			}
		}
		if (gone) {
			*pp = w->next;
			fork__watch_free(w);
		} else {
			pp = &w->next;
		}
	}
	ts_unlock();
}

/* The pidfds of the children being watched, for the control thread's
 * poll: a child's exit wakes it at once. */
int ts_sock__fork_pollfds(struct pollfd *pf, int max)
{
	struct ts_forkwatch *w;
	int n = 0;

	if (!__atomic_load_n(&fork_watches, __ATOMIC_ACQUIRE))
		return 0;
	ts_lock();
	for (w = fork_watches; w && n < max; w = w->next)
		if (w->pidfd >= 0) {
			pf[n].fd = w->pidfd;
			pf[n].events = POLLIN;
			pf[n].revents = 0;
			n++;
		}
	ts_unlock();
	return n;
}

/* A forked child about to exec: the sockets it inherited that no fd
 * keeps across the exec (close-on-exec) are let go now; the new image
 * holds the others, plain kernel sockets there, until it exits. */
void ts_sock__before_exec(void)
{
	struct ts_sock *s;
	int fd;

	if (!ts_fdtab)
		return;
	ts_lock();
	/* one pass over the fds: which sockets an fd keeps (exec_let_go -1) */
	for (fd = 0; fd < ts_fdtab_size; fd++) {
		int fl;

		s = ts_sock__of(fd);
		if (!s || !s->fork_rec || s->exec_let_go < 0)
			continue;
		fl = ts_real_fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			s->exec_let_go = -1;
	}
	for (fd = -1; (s = sock__next(&fd));) {
		if (!s->fork_rec)
			continue;
		if (s->exec_let_go < 0 || s->fork_idx >= s->fork_rec->n) {
			s->exec_let_go = 0;
			continue;
		}
		s->exec_let_go = 1;
		__atomic_store_n(&s->fork_rec->held[s->fork_idx], 0,
				 __ATOMIC_RELEASE);
	}
	ts_unlock();
}

/* The exec failed: this process still holds what it let go. */
void ts_sock__exec_failed(void)
{
	struct ts_sock *s;
	int fd;

	if (!ts_fdtab)
		return;
	ts_lock();
	for (fd = -1; (s = sock__next(&fd));) {
		if (!s->exec_let_go)
			continue;
		s->exec_let_go = 0;
		if (s->fork_rec)
			__atomic_store_n(&s->fork_rec->held[s->fork_idx], 1,
					 __ATOMIC_RELEASE);
	}
	ts_unlock();
}

/* atfork prepare (ts_lock held): the sockets are parked, what the RX rings
 * hold goes into the queues, every queue stays still across the fork, and
 * what it holds that no region covers yet gets a shared region. */
void ts_sock__fork_prepare(void)
{
	struct ts_sock *s;
	int fd, i, n;

	fork__park();
	if (fork_pending) {
		/* datagrams steered before the entries changed: into the
		 * queues, where the claims below cover them; then once more
		 * for one that an XDP program was redirecting meanwhile */
		for (int round = 0; round < 2; round++) {
			uint64_t until = ts_now_ns() + 20000;

			n = ts_stack__count();
			for (i = 0; i < n; i++)
				if (ts_stack__usable(ts_stack__at(i)))
					ts_stack__drain_rx(ts_stack__at(i));
			while (!round && ts_now_ns() < until)
				ts_cpu_relax();
		}
	}
	for (fd = -1; (s = sock__next(&fd));) {
		struct ts_claim *c, *last = NULL;
		uint32_t from;

		if (!s->q)
			continue;
		pthread_mutex_lock(&s->qlock);
		s->fork_locked = 1;
		from = s->qhead;
		for (c = s->claims; c; c = c->next) {
			last = c;
			if ((int32_t)(c->to - from) > 0)
				from = c->to;
		}
		if ((int32_t)(s->qtail - from) <= 0)
			continue;
		c = calloc(1, sizeof(*c));
		if (!c)
			continue;
		c->taken = mmap(NULL, s->qtail - from, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (c->taken == MAP_FAILED) {
			free(c);
			continue;
		}
		c->from = from;
		c->to = s->qtail;
		if (last)
			last->next = c;
		else
			s->claims = c;
	}
}

/* atfork parent: the queues move again, and the child is watched. */
void ts_sock__fork_parent(void)
{
	struct ts_forkwatch *w = fork_pending;
	struct ts_sock *s;
	int fd;

	for (fd = -1; (s = sock__next(&fd));) {
		if (s->fork_locked) {
			s->fork_locked = 0;
			pthread_mutex_unlock(&s->qlock);
		}
	}
	if (w) {
		fork_pending = NULL;
		w->since = ts_now_ns();
		w->next = fork_watches;
		__atomic_store_n(&fork_watches, w, __ATOMIC_RELEASE);
		ts_ctl__poke(); /* to open the child's pidfd */
	}
}

static void sock__drain(struct ts_sock *s)
{
	sock__drop_head(s, 1);
}

/* Move an accelerated socket to the kernel path (caller holds ts_lock).
 * Datagrams already queued are still read first. */
static void sock__to_kernel(struct ts_sock *s)
{
	if (s->state == TS_S_ACCEL) {
		sock__steer_all(s, STEER_DEL);
		port_unlink(s);
		TS_INC(ts_stats->sockets_kernel);
	}
	__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
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
	__atomic_store_n(&s->rx_stacks[s->nrx], st, __ATOMIC_RELEASE);
	__atomic_store_n(&s->nrx, s->nrx + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Whether a socket of another process (or one of ours on the kernel path)
 * is bound to port and would receive some of what a steering entry for
 * (key, port) takes: /proc/net/udp of this namespace, our own accelerated
 * sockets recognised by inode. Only sockets with SO_REUSEADDR can share a
 * port with another, so only those are checked. */
static int port__foreign(const struct ts_sock *s, uint32_t key, uint16_t port)
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
		if (mine || ino == s->ino) /* ours, or s itself (not linked yet) */
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
	if (s->parked || ((s->reuse || s->reuseport) &&
			  port__foreign(s, key, s->lport))) {
		int r = ts_stack__steer_shared(st, key, s->lport);

		if (r < 0) {
			ts_stack__steer_add(st, key, s->lport);
			r = ts_stack__steer_shared(st, key, s->lport);
		}
		if (r > 0 && !s->parked)
			ts_sock__fallback(s, TS_FB_SHARED, "another socket of the "
					  "namespace shares the port: the "
					  "kernel delivers",
					  &ts_stats->kernel_shared);
		return 0; /* our entry, marked shared: read from the kernel fd */
	}
	return ts_stack__steer_add(st, key, s->lport);
}

/* The socket, or a call on it, uses the kernel: ts_fallback decides. */
int ts_sock__fallback(struct ts_sock *s, enum ts_fb_why why,
		      const char *detail, uint64_t *counter)
{
	struct ts_fb f = { .fd = s->fd, .laddr = s->laddr, .lport = s->lport,
			   .why = why, .detail = detail, .counter = counter };

	return ts_fallback(&f);
}

/* As ts_sock__fallback; while a forked child adopts an inherited socket
 * (ts_log_quiet), whatever the reason, it is that of the fork. */
static int sock__fallback_quiet(struct ts_sock *s, enum ts_fb_why why,
				const char *detail, uint64_t *counter)
{
	if (ts_log_quiet)
		return ts_sock__fallback(s, TS_FB_FORK, detail, counter);
	return ts_sock__fallback(s, why, detail, counter);
}

/* Why no interface of the socket's took it: a taken queue, or no XSK. */
static enum ts_fb_why sock__why_none(const int *idx, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (ts_stack__why_none(idx[i]) == TS_FB_QUEUE)
			return TS_FB_QUEUE;
	return TS_FB_NOXSK;
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
		__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
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
	/* a ring set up where we did not see it: every socket moves, this
	 * one included, and is counted there */
	if (ts_uring__unseen())
		sock__uring_used_locked();
	if (__atomic_load_n(&ts_uring_used, __ATOMIC_ACQUIRE)) {
		if (s->state != TS_S_KERNEL) {
			int r = sock__fallback_quiet(s, TS_FB_URING,
						     "the process uses io_uring",
						     &ts_stats->kernel_uring);

			if (r < 0)
				return r;
			__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
			TS_INC(ts_stats->sockets_kernel);
		}
		return 0;
	}
	s->stats->laddr = s->laddr;
	s->stats->lport = s->lport;
	__atomic_store_n(&s->owner, ts_getpid(), __ATOMIC_RELEASE);
	if (!s->q) {
		uint32_t cap = 16;

		while (cap < ts_cfg.sockq_len)
			cap <<= 1;
		s->q = calloc(cap, sizeof(*s->q));
		if (!s->q) {
			int r = sock__fallback_quiet(s, TS_FB_MEMORY,
						     "no memory for its queue",
						     NULL);

			if (r < 0)
				return r;
			__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
			TS_INC(ts_stats->sockets_kernel);
			return 0;
		}
		s->qcap = cap;
	}
	if (IN_MULTICAST(ntohl(s->laddr)))
		n = 0; /* the memberships choose the interfaces */
	else if (s->laddr)
		n = ts_iface__for(s->laddr, idx, TS_MAX_RX_STACKS);
	else
		n = ts_iface__for(0, idx, TS_MAX_RX_STACKS);
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
		enum ts_fb_why why = sock__why_none(idx, n);
		int r = sock__fallback_quiet(s, why, why == TS_FB_QUEUE ?
			"another process holds the queue of its interface" :
			"no XDP-capable interface owns its local address", NULL);

		if (r < 0)
			return r;
		__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
		TS_INC(ts_stats->sockets_kernel);
		return 0;
	}
	ts_ctl__start();
	__atomic_store_n(&s->state, TS_S_ACCEL, __ATOMIC_RELEASE);
	s->stats->accelerated = s->nrx > 0;
	TS_INC(ts_stats->sockets_accelerated);
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
	__atomic_store_n(&s->nrx, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->owner, ts_getpid(), __ATOMIC_RELEASE);
	__atomic_store_n(&s->state, TS_S_NEW, __ATOMIC_RELEASE);
	/* The parent's process usually still holds the interface's queue:
	 * the socket then reads through the kernel, shared with the parent as
	 * the kernel shares it, counted (sockets_kernel, fallback_events) and
	 * not an error, even under TICKSTACK_REQUIRE (the parent's socket was
	 * accelerated; nothing falls back silently that was asked for). */
	ts_log_quiet++;
	sock__activate(s, fd, 0);
	ts_log_quiet--;
	if (s->state != TS_S_ACCEL)
		__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
}

/* A socket used for the first time in a forked child: adopt it. */
void ts_sock__check_owner(struct ts_sock *s, int fd)
{
	if (ts_likely(__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) ==
		      ts_getpid()))
		return;
	ts_lock();
	if (s->owner != ts_getpid())
		sock__adopt(s, fd);
	ts_unlock();
}

/* The last call on a closed socket is over (or there was none): take the
 * steering down, give the queued frames back, and pool the object. */
void ts_sock__finalize(struct ts_sock *s)
{
	int zero = 0;

	if (!__atomic_compare_exchange_n(&s->fin, &zero, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	ts_lock();
	if (s->state == TS_S_ACCEL && s->owner == ts_getpid()) {
		sock__steer_all(s, STEER_DEL);
		port_unlink(s);
	}
	__atomic_store_n(&s->state, TS_S_KERNEL, __ATOMIC_RELEASE);
	s->parked = 0;
	if (s->fork_rec) /* a forked child closed its copy */
		fork__released(s);
	ts_unlock();
	sock__drain(s);
	if (ts_unlikely(s->errq))
		ts_sock__errq_free(s);
	if (s->kfd >= 0)
		ts_real_close(s->kfd);
	ts_lock();
	if (s->stats != &s->dummy_stats)
		s->stats->in_use = 2; /* closed: counters kept for the dump */
	pool__give(s);
	ts_unlock();
}

void ts_sock__release(int fd)
{
	struct ts_sock *s;

	ts_lock();
	s = ts_sock__of(fd);
	if (!s) {
		ts_unlock();
		return;
	}
	__atomic_store_n(&ts_fdtab[fd], NULL, __ATOMIC_RELEASE);
	if (--s->refs > 0) {
		ts_unlock();
		return;
	}
	/* a call still running (a recv blocked in another thread) keeps the
	 * socket, as in the kernel: it goes on with a dup of the kernel fd,
	 * which the caller is about to close */
	if (__atomic_load_n(&s->users, __ATOMIC_ACQUIRE) > 0)
		__atomic_store_n(&s->kfd, ts_real_fcntl(fd, F_DUPFD_CLOEXEC, 0),
				 __ATOMIC_RELEASE);
	__atomic_store_n(&s->dead, 1, __ATOMIC_RELEASE);
	ts_unlock();
	if (!__atomic_load_n(&s->users, __ATOMIC_ACQUIRE))
		ts_sock__finalize(s);
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

	if (ts_sock__state(s) != TS_S_ACCEL || s->lport != m->dport)
		return 0;
	if (s->laddr && s->laddr != m->daddr)
		return 0;
	if (s->connected && (s->raddr != m->saddr || s->rport != m->sport))
		return 0;
	/* connect narrowed a wildcard socket to one local address */
	if (s->conn_laddr && s->conn_laddr != m->daddr)
		return 0;
	if (!mc || s->mc_all)
		return 1;
	for (g = 0; g < s->ngroups; g++)
		if (s->groups[g] == m->daddr)
			return 1;
	return 0;
}

/* Double s's queue ring (positions are absolute, so each entry moves to
 * its position in the larger ring). 0, or -1 out of memory. qlock. */
static int sock__grow(struct ts_sock *s)
{
	uint32_t cap = s->qcap * 2, i;
	struct ts_rxent *q;

	if (cap > TS_SOCKQ_MAX || !(q = calloc(cap, sizeof(*q))))
		return -1;
	for (i = s->qhead; i != s->qtail; i++)
		q[i & (cap - 1)] = s->q[i & (s->qcap - 1)];
	free(s->q);
	s->q = q;
	s->qcap = cap;
	return 0;
}

/* Queue a datagram on s: 0 holding the frame (a reference the caller
 * counts), 1 as a copy (the frame is not needed), -1 full (dropped).
 *
 * As __udp_enqueue_schedule_skb, a socket is full once what is queued
 * exceeds SO_RCVBUF (one datagram always fits). A socket whose
 * application never set SO_RCVBUF holds the profile's socket queue length
 * of datagrams. Queued datagrams hold their UMEM frame up to that length;
 * past it, when SO_RCVBUF still has room, a datagram is copied and its
 * frame goes back to the fill ring, so a large SO_RCVBUF holds as many
 * datagrams as the kernel's would without starving the ring. A joined
 * jumbo frame (lin, not a UMEM frame) is always queued as a copy. */
static int sock__enqueue(struct ts_sock *s, struct ts_stack *st,
			 uint64_t frame, const uint8_t *lin,
			 const struct ts_udp_meta *m, uint64_t rx_ns)
{
	struct ts_rxent *e;
	void *copy = NULL;

	pthread_mutex_lock(&s->qlock);
	if (s->rcvbuf ? s->qbytes > s->rcvbuf :
			s->qtail - s->qhead >= s->qcap)
		goto full;
	if (lin || s->qframes >= ts_cfg.sockq_len) {
		copy = malloc(m->payload_len ? m->payload_len : 1);
		if (!copy)
			goto full;
		memcpy(copy, (lin ? lin : ts_stack__frame_data(st, frame)) +
			     m->payload_off, m->payload_len);
	}
	if (s->qtail - s->qhead >= s->qcap && sock__grow(s)) {
		free(copy);
		goto full;
	}
	s->qbytes += ts_rx_truesize(m->payload_len);
	s->qframes += !copy;
	e = &s->q[s->qtail & (s->qcap - 1)];
	e->st = st;
	e->frame = copy ? (uint64_t)(uintptr_t)copy : frame;
	e->spilled = copy != NULL;
	e->rx_ns = rx_ns;
	e->off = copy ? 0 : m->payload_off;
	e->len = m->payload_len;
	e->saddr = m->saddr;
	e->sport = m->sport;
	e->daddr = m->daddr;
	e->tos = m->tos;
	e->ttl = m->ttl;
	__atomic_store_n(&s->qtail, s->qtail + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->qlock);
	if (copy && !lin)
		TS_INC(s->stats->rx_spilled);
	return copy != NULL;
full:
	pthread_mutex_unlock(&s->qlock);
	TS_INC(s->stats->rx_drops);
	return -1;
}

/* A SO_REUSEPORT group of this process (sockets of the port bound to the
 * same address, unconnected, with the option): the kernel picks one
 * socket per flow by a hash of the 4-tuple under a secret of its own
 * (reciprocal_scale(udp_ehashfn(...), n) over the group in bind order);
 * the stack does the same with SipHash under a key of the process: each
 * flow to one socket, flows spread evenly, not the kernel's choice of
 * socket for a given flow, which nobody outside the kernel can know. */
static unsigned char reuseport_key[crypto_shorthash_siphash24_KEYBYTES];
static int reuseport_keyed;

static int reuseport__member(const struct ts_sock *s, const struct ts_sock *g)
{
	return s->reuseport && !s->connected && s->laddr == g->laddr;
}

static struct ts_sock *reuseport__pick(struct ts_sock *best,
				       const struct ts_udp_meta *m)
{
	unsigned char in[12], h[crypto_shorthash_siphash24_BYTES];
	struct ts_sock *s;
	uint32_t n = 0, i, hash;

	for (s = ts_port_tab[ntohs(m->dport)]; s; s = s->next_port)
		n += s->state == TS_S_ACCEL && reuseport__member(s, best);
	if (n < 2)
		return best;
	memcpy(in, &m->saddr, 4);
	memcpy(in + 4, &m->daddr, 4);
	memcpy(in + 8, &m->sport, 2);
	memcpy(in + 10, &m->dport, 2);
	crypto_shorthash_siphash24(h, in, sizeof(in), reuseport_key);
	memcpy(&hash, h, sizeof(hash));
	/* the list is newest first: member i of the bind order is n-1-i */
	i = n - 1 - (uint32_t)(((uint64_t)hash * n) >> 32);
	for (s = ts_port_tab[ntohs(m->dport)]; s; s = s->next_port)
		if (s->state == TS_S_ACCEL && reuseport__member(s, best) && !i--)
			return s;
	return best;
}

/* The kernel hands a unicast datagram to ONE socket, the best match
 * (address bound exactly beats the wildcard, a connected peer beats none;
 * among equals the one bound last), and a multicast one to every socket
 * that wants it. lin: the datagram's frame joined from a chain (a jumbo
 * frame), copied to each socket; frame is then unused. */
int ts_sock__deliver(struct ts_stack *st, uint64_t frame, const uint8_t *lin,
		     const struct ts_udp_meta *m, uint64_t rx_ns,
		     struct ts_direct *dir)
{
	struct ts_sock *s = ts_port_tab[ntohs(m->dport)], *best = NULL;
	int k = 0, full = 0, copied = 0, best_score = -1, r;
	int mc = IN_MULTICAST(ntohl(m->daddr));

	for (; s; s = s->next_port) {
		int score;

		if (!sock__wants(s, m, mc)) {
			if (s->state == TS_S_ACCEL && s->connected &&
			    (!s->laddr || s->laddr == m->daddr))
				TS_INC(s->stats->rx_filtered);
			continue;
		}
		if (mc) {
			if (k >= 255)
				break; /* the frame's reference count is 8 bits */
			r = sock__enqueue(s, st, frame, lin, m, rx_ns);
			full += r < 0;
			k += r == 0;
			copied += r > 0;
			continue;
		}
		score = (s->laddr ? 4 : 0) + (s->connected ? 4 : 0);
		if (score > best_score) {
			best = s;
			best_score = score;
		}
	}
	if (best && best->reuseport && !best->connected)
		best = reuseport__pick(best, m);
	if (best && dir && best == dir->s && !dir->done &&
	    __atomic_load_n(&best->qhead, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&best->qtail, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&best->claims, __ATOMIC_ACQUIRE)) {
		/* the receiving thread's own, and nothing queued before it */
		struct ts_rxent e = { .st = st, .frame = frame, .rx_ns = rx_ns,
				      .spilled = lin != NULL,
				      .off = m->payload_off,
				      .len = m->payload_len, .saddr = m->saddr,
				      .sport = m->sport, .daddr = m->daddr,
				      .tos = m->tos, .ttl = m->ttl };

		if (lin) /* read from the joined copy (off: its payload) */
			e.frame = (uint64_t)(uintptr_t)lin;
		dir->ret = ts_rx__copyout(best, &e, dir->msg, dir->flags);
		dir->done = 1;
		TS_INC(best->stats->rx_accel);
		return TS_DELIVER_TAKEN;
	}
	if (best) {
		r = sock__enqueue(best, st, frame, lin, m, rx_ns);
		full += r < 0;
		k += r == 0;
		copied += r > 0;
	}
	if (k)
		ts_stack__frame_refs(st, frame, k);
	return k ? k : copied ? TS_DELIVER_COPIED : (full ? -1 : 0);
}

/* ------------------------------------------------------------------ */
/* bind / connect / options                                            */

int ts_sock__activate_for_send(struct ts_sock *s, int fd)
{
	int r;

	ts_lock();
	r = sock__activate(s, fd, 1);
	ts_unlock();
	return r;
}

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
		struct sockaddr_in now;
		socklen_t nl = sizeof(now);
		uint32_t narrow = 0;

		/* a socket bound to 0.0.0.0 now has the local address the
		 * kernel chose for the peer: it receives only what is sent to
		 * that address, and sends from it */
		if (!s->laddr && !IN_MULTICAST(ntohl(sa->sin_addr.s_addr)) &&
		    !ts_real_getsockname(fd, (struct sockaddr *)&now, &nl) &&
		    now.sin_family == AF_INET)
			narrow = now.sin_addr.s_addr;
		pthread_rwlock_wrlock(&ts_port_lock);
		s->raddr = sa->sin_addr.s_addr;
		s->rport = sa->sin_port;
		s->connected = 1;
		s->conn_laddr = narrow;
		pthread_rwlock_unlock(&ts_port_lock);
		s->stats->raddr = s->raddr;
		s->stats->rport = s->rport;
		if (s->state == TS_S_NEW)
			r = sock__activate(s, fd, 0);
	} else {
		struct sockaddr_in now;
		socklen_t nl = sizeof(now);

		pthread_rwlock_wrlock(&ts_port_lock);
		s->connected = 0;
		s->raddr = 0;
		s->rport = 0;
		s->conn_laddr = 0; /* as __udp_disconnect: the wildcard again */
		pthread_rwlock_unlock(&ts_port_lock);
		/* AF_UNSPEC also gives back a port the kernel chose (the socket
		 * was not bound explicitly): the steering goes with it */
		if (s->state == TS_S_ACCEL &&
		    (ts_real_getsockname(fd, (struct sockaddr *)&now, &nl) ||
		     now.sin_port != s->lport)) {
			sock__steer_all(s, STEER_DEL);
			port_unlink(s);
			__atomic_store_n(&s->nrx, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&s->state, TS_S_NEW, __ATOMIC_RELEASE);
		}
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

/* SO_TIMESTAMPING flags the stack serves: software receive timestamps,
 * taken when the datagram leaves the XSK's RX ring, reported as the
 * kernel reports them (SOF_TIMESTAMPING_SOFTWARE with RX_SOFTWARE; RX_SOFTWARE
 * alone generates without reporting); software transmit stamps, taken
 * when the datagram enters the TX ring, in the socket's error queue
 * (TX_SOFTWARE, OPT_ID, OPT_TSONLY: rx.c, ts_sock__tx_stamp). Hardware
 * stamps and the other options need the kernel (the NIC's clock, its
 * scheduler and ACK stamps). The value is an int or a struct
 * so_timestamping (flags, bind_phc). */
#ifndef SOF_TIMESTAMPING_OPT_RX_FILTER
#define SOF_TIMESTAMPING_OPT_RX_FILTER (1 << 17) /* Linux 6.12 */
#endif
#define TS_TSING_RX_SOFT (SOF_TIMESTAMPING_RX_SOFTWARE | \
			  SOF_TIMESTAMPING_SOFTWARE | \
			  SOF_TIMESTAMPING_OPT_RX_FILTER)
#define TS_TSING_TX_SOFT (SOF_TIMESTAMPING_TX_SOFTWARE | \
			  SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY)
/* hardware receive stamps: served with TICKSTACK_RX_HWTSTAMP=1 from the
 * device-bound program's XDP metadata (docs/dataplane.md, "Hardware
 * receive timestamps"); else the socket goes to the kernel */
#define TS_TSING_RX_HW (SOF_TIMESTAMPING_RX_HARDWARE | \
			SOF_TIMESTAMPING_RAW_HARDWARE)

static int tstamping__rx_soft(int flags, socklen_t len)
{
	unsigned ok = TS_TSING_RX_SOFT | TS_TSING_TX_SOFT;

	if (len < sizeof(int))
		return 0;
	if (ts_cfg.rx_hwtstamp)
		ok |= TS_TSING_RX_HW;
	if ((unsigned)flags & ~ok)
		return 0;
	/* SOFTWARE without RX_SOFTWARE reports whatever receive stamp the
	 * kernel took for another socket: the kernel's business, unless it
	 * is there for transmit stamps (the stack reports none received,
	 * as the kernel when no other socket has it take them) */
	return !(flags & SOF_TIMESTAMPING_SOFTWARE) ||
	       (flags & (SOF_TIMESTAMPING_RX_SOFTWARE |
			 SOF_TIMESTAMPING_TX_SOFTWARE));
}

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
			return iv != 0;
		case SO_TIMESTAMPING_OLD:
		case SO_TIMESTAMPING_NEW:
			return !tstamping__rx_soft(iv, len);
		case SO_RXQ_OVFL:
		case SO_RCVMARK:
		case SO_RCVPRIORITY:
		case SO_PASSCRED:
		case SO_PASSSEC:
			return iv != 0;
		case SO_ATTACH_FILTER: /* socket filters run in the kernel */
		case SO_ATTACH_BPF:
		case SO_ATTACH_REUSEPORT_CBPF: /* the group's program picks */
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

static int option__int(const void *val, socklen_t len)
{
	int iv = 0;

	if (len >= sizeof(int) && val)
		memcpy(&iv, val, sizeof(int));
	else if (len >= 1 && val)
		iv = *(const unsigned char *)val;
	return iv;
}

/* Source filters: the kernel implements them */
static int option__filter(int level, int opt)
{
	return level == IPPROTO_IP &&
	       (opt == IP_ADD_SOURCE_MEMBERSHIP || opt == IP_BLOCK_SOURCE ||
		opt == MCAST_JOIN_SOURCE_GROUP || opt == MCAST_JOIN_GROUP);
}

#define OPT_NAME(l, o) { l, o, #o }
static const struct { int level, opt; const char *name; } option_names[] = {
	OPT_NAME(SOL_SOCKET, SO_BINDTODEVICE), OPT_NAME(SOL_SOCKET, SO_BINDTOIFINDEX),
	OPT_NAME(SOL_SOCKET, SO_MARK),
	OPT_NAME(SOL_SOCKET, SO_TIMESTAMPING_OLD),
	OPT_NAME(SOL_SOCKET, SO_TIMESTAMPING_NEW),
	OPT_NAME(SOL_SOCKET, SO_RXQ_OVFL), OPT_NAME(SOL_SOCKET, SO_RCVMARK),
	OPT_NAME(SOL_SOCKET, SO_RCVPRIORITY), OPT_NAME(SOL_SOCKET, SO_PASSCRED),
	OPT_NAME(SOL_SOCKET, SO_PASSSEC), OPT_NAME(SOL_SOCKET, SO_ATTACH_FILTER),
	OPT_NAME(SOL_SOCKET, SO_ATTACH_BPF),
	OPT_NAME(SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF),
	OPT_NAME(SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF),
	OPT_NAME(IPPROTO_IP, IP_RECVOPTS), OPT_NAME(IPPROTO_IP, IP_RETOPTS),
	OPT_NAME(IPPROTO_IP, IP_RECVORIGDSTADDR), OPT_NAME(IPPROTO_IP, IP_RECVERR),
	OPT_NAME(IPPROTO_IP, IP_PASSSEC), OPT_NAME(IPPROTO_IP, IP_CHECKSUM),
	OPT_NAME(IPPROTO_IP, IP_RECVFRAGSIZE), OPT_NAME(IPPROTO_IP, IP_TRANSPARENT),
	OPT_NAME(IPPROTO_IP, IP_UNICAST_IF), OPT_NAME(IPPROTO_IP, IP_OPTIONS),
	OPT_NAME(IPPROTO_IP, IP_MTU_DISCOVER),
	OPT_NAME(IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP),
	OPT_NAME(IPPROTO_IP, IP_BLOCK_SOURCE),
	OPT_NAME(IPPROTO_IP, MCAST_JOIN_GROUP),
	OPT_NAME(IPPROTO_IP, MCAST_JOIN_SOURCE_GROUP),
	OPT_NAME(IPPROTO_UDP, UDP_CORK), OPT_NAME(IPPROTO_UDP, UDP_SEGMENT),
	OPT_NAME(IPPROTO_UDP, UDP_GRO), OPT_NAME(IPPROTO_UDP, UDP_ENCAP),
};

static const char *option__name(int level, int opt)
{
	size_t i;

	for (i = 0; i < sizeof(option_names) / sizeof(option_names[0]); i++)
		if (option_names[i].level == level && option_names[i].opt == opt)
			return option_names[i].name;
	return "option";
}

/* Before the kernel sees the option: one the stack does not reproduce
 * moves the socket to the kernel, or, refused (TICKSTACK_REQUIRE=1),
 * fails the call and the kernel never sees it. 0 or -EOPNOTSUPP. */
int ts_sock__setsockopt_pre(struct ts_sock *s, int fd, int level, int opt,
			    const void *val, socklen_t len)
{
	int iv = option__int(val, len), kern, filter, r = 0;
	char what[64];

	filter = option__filter(level, opt);
	kern = filter || option__needs_kernel(level, opt, iv, val, len);
	if (!kern)
		return 0;
	ts_lock();
	if (s->state != TS_S_KERNEL) {
		snprintf(what, sizeof(what), "%s (level %d, option %d)",
			 option__name(level, opt), level, opt);
		r = ts_sock__fallback(s, filter ? TS_FB_SHAPE : TS_FB_OPTION,
				      what, filter ? NULL :
				      &ts_stats->kernel_option);
		if (!r) {
			ts_dbg("fd %d moves to the kernel: %s", fd, what);
			if (s->state == TS_S_NEW)
				TS_INC(ts_stats->sockets_kernel);
			sock__to_kernel(s);
		}
	}
	ts_unlock();
	return r;
}

/* A membership the stack cannot steer (no interface, too many groups, the
 * interface's queue taken): the socket moves to the kernel, or, refused,
 * the kernel's join is undone and the call fails. */
static int sock__join_kernel(struct ts_sock *s, int fd, enum ts_fb_why why,
			     const char *detail, const void *val, socklen_t len)
{
	int r = ts_sock__fallback(s, why, detail, NULL);

	if (r < 0) {
		ts_real_setsockopt(fd, IPPROTO_IP, IP_DROP_MEMBERSHIP, val, len);
		return r;
	}
	if (s->state == TS_S_NEW)
		TS_INC(ts_stats->sockets_kernel);
	sock__to_kernel(s);
	return 0;
}

/* What the stack keeps of a control-message option (IP_PKTINFO, ...). */
static void sockopt__cmsg(struct ts_sock *s, int flag, int on)
{
	if (on)
		__atomic_or_fetch(&s->cmsgs, flag, __ATOMIC_RELAXED);
	else
		__atomic_and_fetch(&s->cmsgs, ~flag, __ATOMIC_RELAXED);
}

/* SO_TIMESTAMP(NS)_OLD/_NEW, as sock_set_timestamp: the last one set wins. */
static void sockopt__timestamp(struct ts_sock *s, int opt, int iv)
{
	int nw = opt == SO_TIMESTAMP_NEW || opt == SO_TIMESTAMPNS_NEW;
	int ns = opt == SO_TIMESTAMPNS_OLD || opt == SO_TIMESTAMPNS_NEW;

	__atomic_and_fetch(&s->cmsgs, ~(TS_CM_TSTAMP | TS_CM_TSTAMPNS),
			   __ATOMIC_RELAXED);
	if (iv) {
		s->tstamp_new = nw;
		__atomic_or_fetch(&s->cmsgs,
				  ns ? TS_CM_TSTAMPNS : TS_CM_TSTAMP,
				  __ATOMIC_RELAXED);
		/* the RX path reads the clock from now on */
		__atomic_store_n(&ts_tstamp_wanted, 1,
				 __ATOMIC_RELAXED);
	}
}

/* SO_TIMESTAMPING_OLD/_NEW: receive stamps as control messages, transmit
 * stamps on the error queue. */
static void sockopt__timestamping(struct ts_sock *s, int opt, int iv)
{
	/* as sock_set_timestamping: the cmsg types follow */
	s->tstamp_new = opt == SO_TIMESTAMPING_NEW;
	__atomic_and_fetch(&s->cmsgs, ~(TS_CM_TSTAMPING | TS_CM_TSHW),
			   __ATOMIC_RELAXED);
	/* as __sock_recv_timestamp: raw hardware stamps
	 * reported, received ones unless OPT_RX_FILTER
	 * leaves them out (only here with
	 * TICKSTACK_RX_HWTSTAMP) */
	if ((iv & SOF_TIMESTAMPING_RAW_HARDWARE) &&
	    ((iv & SOF_TIMESTAMPING_RX_HARDWARE) ||
	     !(iv & SOF_TIMESTAMPING_OPT_RX_FILTER)))
		__atomic_or_fetch(&s->cmsgs, TS_CM_TSHW,
				  __ATOMIC_RELAXED);
	/* as sock_set_timestamping: OPT_ID turned on starts
	 * the keys at 0 */
	if ((iv & SOF_TIMESTAMPING_OPT_ID) &&
	    !(s->txts & SOF_TIMESTAMPING_OPT_ID)) {
		pthread_mutex_lock(&s->qlock);
		s->tskey = 0;
		pthread_mutex_unlock(&s->qlock);
	}
	/* read by sends and error-queue reads of other threads */
	__atomic_store_n(&s->txts,
			 iv & SOF_TIMESTAMPING_TX_SOFTWARE ? iv : 0,
			 __ATOMIC_RELAXED);
	if ((iv & SOF_TIMESTAMPING_SOFTWARE) &&
	    (iv & SOF_TIMESTAMPING_RX_SOFTWARE)) {
		__atomic_or_fetch(&s->cmsgs, TS_CM_TSTAMPING,
				  __ATOMIC_RELAXED);
		__atomic_store_n(&ts_tstamp_wanted, 1,
				 __ATOMIC_RELAXED);
	}
}

/* SOL_SOCKET: what the stack reproduces of an option the kernel took. */
static void sockopt__socket(struct ts_sock *s, int fd, int opt, int iv,
			    const void *val, socklen_t len)
{
	switch (opt) {
	case SO_RCVTIMEO_OLD:
	case SO_RCVTIMEO_NEW:
		ts_timeo__set(&s->rcvtimeo_ns, val, len);
		break;
	case SO_SNDTIMEO_OLD:
	case SO_SNDTIMEO_NEW:
		ts_timeo__set(&s->sndtimeo_ns, val, len);
		break;
	case SO_REUSEADDR:
		s->reuse = iv != 0;
		break;
	case SO_REUSEPORT:
		if (iv && !reuseport_keyed &&
		    getrandom(reuseport_key, sizeof(reuseport_key), 0) ==
			    (ssize_t)sizeof(reuseport_key))
			reuseport_keyed = 1;
		s->reuseport = iv != 0;
		break;
	case SO_RCVBUF:
	case SO_RCVBUFFORCE: {
		/* the kernel's value: doubled, clamped by rmem_max
		 * (SO_RCVBUF) and the minimum */
		int v = 0;
		socklen_t vl = sizeof(v);

		if (!ts_real_getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &vl) && v > 0) {
			pthread_mutex_lock(&s->qlock);
			s->rcvbuf = (uint32_t)v;
			pthread_mutex_unlock(&s->qlock);
			/* what the buffer holds may arrive while the
			 * application does not read: the fill rings a frame
			 * deep for each 512 bytes of it (the kernel charges
			 * every datagram its buffer's true size, more than
			 * that even for an empty one) */
			ts_stack__fill_want((uint32_t)v / 512);
		}
		break;
	}
	case SO_TIMESTAMP_OLD:
	case SO_TIMESTAMP_NEW:
	case SO_TIMESTAMPNS_OLD:
	case SO_TIMESTAMPNS_NEW:
		sockopt__timestamp(s, opt, iv);
		break;
	case SO_TIMESTAMPING_OLD:
	case SO_TIMESTAMPING_NEW:
		sockopt__timestamping(s, opt, iv);
		break;
	}
}

/* IP_ADD_MEMBERSHIP: steer (group, port) on the join's interface, or move
 * the socket to the kernel. 0, or -EOPNOTSUPP (TICKSTACK_REQUIRE=1). */
static int sockopt__join(struct ts_sock *s, int fd, const void *val,
			 socklen_t len)
{
	struct ip_mreqn mr;
	int idx;

	memset(&mr, 0, sizeof(mr));
	if (len >= sizeof(struct ip_mreqn))
		memcpy(&mr, val, sizeof(mr));
	else if (len >= sizeof(struct ip_mreq))
		memcpy(&mr, val, sizeof(struct ip_mreq));
	else
		return 0;
	idx = group_ifindex(mr.imr_multiaddr.s_addr,
			    mr.imr_address.s_addr,
			    len >= sizeof(struct ip_mreqn) ?
				    mr.imr_ifindex :
				    0);
	if (s->ngroups >= TS_MAX_GROUPS || idx <= 0) {
		return sock__join_kernel(s, fd, idx <= 0 ?
			TS_FB_NOXSK : TS_FB_SHAPE, idx <= 0 ?
			"no interface for the group" :
			"more memberships than the stack steers",
			val, len);
	}
	if (s->state != TS_S_KERNEL && !ts_stack__get(idx, 1)) {
		return sock__join_kernel(s, fd,
			ts_stack__why_none(idx),
			"no XSK on the group's interface",
			val, len);
	}
	pthread_rwlock_wrlock(&ts_port_lock);
	s->groups[s->ngroups] = mr.imr_multiaddr.s_addr;
	s->group_ifindex[s->ngroups++] = idx;
	pthread_rwlock_unlock(&ts_port_lock);
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
	return 0;
}

/* IP_DROP_MEMBERSHIP: the group's steering entry goes. */
static void sockopt__leave(struct ts_sock *s, const void *val, socklen_t len)
{
	struct ip_mreq mr;
	int g;

	if (len < sizeof(struct ip_mreq))
		return;
	memcpy(&mr, val, sizeof(mr));
	for (g = 0; g < s->ngroups; g++) {
		if (s->groups[g] != mr.imr_multiaddr.s_addr)
			continue;
		if (s->state == TS_S_ACCEL) {
			struct ts_stack *st = ts_stack__get(
				s->group_ifindex[g], 0);

			if (st)
				sock__steer_del(s, st,
						s->groups[g]);
		}
		pthread_rwlock_wrlock(&ts_port_lock);
		s->groups[g] = s->groups[s->ngroups - 1];
		s->group_ifindex[g] =
			s->group_ifindex[s->ngroups - 1];
		s->ngroups--;
		pthread_rwlock_unlock(&ts_port_lock);
		break;
	}
}

/* IPPROTO_IP: what the stack reproduces of an option the kernel took.
 * 0, or -EOPNOTSUPP when a membership is refused. */
static int sockopt__ip(struct ts_sock *s, int fd, int opt, int iv,
		       const void *val, socklen_t len)
{
	switch (opt) {
	case IP_PKTINFO:
		sockopt__cmsg(s, TS_CM_PKTINFO, iv);
		break;
	case IP_RECVTTL:
		sockopt__cmsg(s, TS_CM_TTL, iv);
		break;
	case IP_RECVTOS:
		sockopt__cmsg(s, TS_CM_TOS, iv);
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
	case IP_ADD_MEMBERSHIP:
		return sockopt__join(s, fd, val, len);
	case IP_DROP_MEMBERSHIP:
		sockopt__leave(s, val, len);
		break;
	}
	return 0;
}

/* Called after the kernel accepted the option. 0, or -EOPNOTSUPP when a
 * membership is refused (TICKSTACK_REQUIRE=1). */
int ts_sock__setsockopt(struct ts_sock *s, int fd, int level, int opt,
			const void *val, socklen_t len)
{
	int iv = option__int(val, len), ret = 0;

	ts_lock();
	if (option__filter(level, opt) ||
	    option__needs_kernel(level, opt, iv, val, len)) {
		/* moved by ts_sock__setsockopt_pre */
	} else if (level == SOL_SOCKET) {
		sockopt__socket(s, fd, opt, iv, val, len);
	} else if (level == IPPROTO_IP) {
		ret = sockopt__ip(s, fd, opt, iv, val, len);
	}
	ts_unlock();
	return ret;
}

/* io_uring reads and writes the kernel socket behind the library's back:
 * from the first io_uring on, every socket is a kernel socket. */
void ts_sock__uring_used(void)
{
	if (__atomic_load_n(&ts_uring_used, __ATOMIC_ACQUIRE))
		return;
	ts_lock();
	sock__uring_used_locked();
	ts_unlock();
}

/* Under TICKSTACK_REQUIRE=1 a ring may not be set up while a socket is
 * accelerated: the ring would move it to the kernel, so the set-up call
 * fails instead (EOPNOTSUPP, said naming the socket); 0: go ahead. A ring
 * the library does not see being set up (ts_uring__unseen) leaves no call
 * to fail: its sockets move, said on stderr. */
int ts_sock__uring_gate(void)
{
	struct ts_sock *s;
	int fd, ret = 0;

	if (!ts_cfg.require ||
	    __atomic_load_n(&ts_uring_used, __ATOMIC_ACQUIRE))
		return 0;
	ts_lock();
	for (fd = -1; !ret && (s = sock__next(&fd));)
		if (s->state == TS_S_ACCEL)
			ret = ts_sock__fallback(s, TS_FB_URING, "an io_uring "
						"set up while it is accelerated",
						NULL);
	ts_unlock();
	return ret;
}

/* The caller holds ts_lock. */
static void sock__uring_used_locked(void)
{
	struct ts_sock *s;
	int fd;

	if (__atomic_exchange_n(&ts_uring_used, 1, __ATOMIC_ACQ_REL))
		return;
	ts_dbg("io_uring in use: UDP sockets stay on the kernel stack");
	for (fd = -1; (s = sock__next(&fd));) {
		if (s->state == TS_S_KERNEL)
			continue;
		if (s->state == TS_S_NEW)
			TS_INC(ts_stats->sockets_kernel);
		/* the ring exists: the socket moves even when REQUIRE refuses
		 * (then said, and counted here) */
		if (ts_sock__fallback(s, TS_FB_URING, "the process set up an "
				      "io_uring", &ts_stats->kernel_uring) < 0)
			TS_INC(ts_stats->kernel_uring);
		sock__to_kernel(s);
	}
}

/* A ring whose set-up the library did not see (liburing linked statically
 * makes the system call itself), found by its mapping: every ring maps its
 * queues from the io_uring file (IORING_SETUP_NO_MMAP rings, whose memory
 * the program provides, excepted). Looked for at each bind while no ring
 * is known, and every second by the control thread. */
int ts_uring__unseen(void)
{
	static const char pat[] = "anon_inode:[io_uring]";
	char buf[4096 + sizeof(pat)];
	size_t keep = 0;
	int fd, found = 0;
	ssize_t n;

	if (__atomic_load_n(&ts_uring_used, __ATOMIC_ACQUIRE))
		return 0;
	fd = ts_real_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (!found &&
	       (n = ts_real_read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
		size_t len = keep + (size_t)n;

		found = memmem(buf, len, pat, sizeof(pat) - 1) != NULL;
		/* a match may straddle two reads */
		keep = len < sizeof(pat) - 1 ? len : sizeof(pat) - 1;
		memmove(buf, buf + len - keep, keep);
	}
	ts_real_close(fd);
	return found;
}

int ts_sock__fionread(struct ts_sock *s, int *out)
{
	int r = 0, i, n;

	if (ts_sock__state(s) != TS_S_ACCEL)
		return 0;
	n = __atomic_load_n(&s->nrx, __ATOMIC_ACQUIRE);
	for (i = 0; i < n && !ts_sock__rx_ready(s); i++)
		if (ts_stack__usable(s->rx_stacks[i]))
			ts_stack__poll(s->rx_stacks[i], 1);
	if (s->claims)
		ts_sock__skip_taken(s);
	pthread_mutex_lock(&s->qlock);
	if (s->qhead != s->qtail) {
		*out = s->q[s->qhead & (s->qcap - 1)].len;
		r = 1;
	}
	pthread_mutex_unlock(&s->qlock);
	return r;
}

/* ------------------------------------------------------------------ */
/* fork                                                                */

void ts_sock__after_fork_child(struct tickstack_stats *old,
			       struct tickstack_stats *now)
{
	struct ts_forkrec *rec = NULL;
	struct ts_sock *s;
	int fd;

	if (!ts_fdtab)
		return;
	pthread_rwlock_init(&ts_port_lock, NULL);
	/* the parent's watches are the parent's; this fork's record is
	 * where the child says what it lets go */
	while (fork_watches) {
		struct ts_forkwatch *w = fork_watches;

		fork_watches = w->next;
		fork__watch_free(w);
	}
	if (fork_pending) {
		rec = fork_pending->rec;
		__atomic_store_n(&rec->pid, ts_getpid(), __ATOMIC_RELEASE);
		free(fork_pending); /* the mapping stays: rec */
		fork_pending = NULL;
	}
	for (fd = -1; (s = sock__next(&fd));) {
		pthread_mutex_init(&s->qlock, NULL); /* only this thread runs */
		s->fork_locked = 0;
		s->parked = 0;
		if (s->fork_rec != rec)
			s->fork_rec = NULL; /* an earlier fork's */
		if (s->stats != &s->dummy_stats && old != now)
			s->stats = (struct tickstack_sock_stats *)((char *)now +
				   ((char *)s->stats - (char *)old));
	}
}

/* a ring set up behind the library's back since the last bind
 * (statically linked liburing): the control thread looks every second */
static void sock__uring_tick(void)
{
	if (ts_uring__unseen())
		ts_sock__uring_used();
}

static int sock__owns(int fd)
{
	return ts_sock__of(fd) != NULL;
}

/* what the stack hands up, and the control thread's chores: forked
 * children's pidfds and sockets, ports shared with another process */
static const struct ts_stack_udp_up sock_up = {
	.deliver = ts_sock__deliver,
	.begin = ts_sock__deliver_begin,
	.end = ts_sock__deliver_end,
};
static struct ts_ctl_hook sock_hooks[] = {
	{ .pollfds = ts_sock__fork_pollfds, .run = ts_sock__check_forks },
	{ .run = ts_sock__check_shared, .period_ns = 100000000ull },
	{ .run = sock__uring_tick, .period_ns = 1000000000ull },
};

int ts_sock__init_tables(void)
{
	size_t i;

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
	ts_stack__register_udp(&sock_up);
	ts_dump__part(ts_sock__snapshot);
	ts_xdpd__register_owner(TS_STEER_UDP, sock__owns);
	for (i = 0; i < sizeof(sock_hooks) / sizeof(sock_hooks[0]); i++)
		ts_ctl__hook(&sock_hooks[i]);
	return 0;
}

/* A socket with SO_REUSEADDR may be joined on its port by a socket of
 * another process after its steering went in: the control thread looks
 * now and then, and hands such a port to the kernel. */
void ts_sock__check_shared(void)
{
	struct ts_sock *s;
	int fd, g, i;

	ts_lock();
	for (fd = -1; (s = sock__next(&fd));) {
		if (!(s->reuse || s->reuseport) || s->parked || s->state != TS_S_ACCEL ||
		    s->owner != ts_getpid())
			continue;
		for (i = 0; i < s->nrx; i++) {
			struct ts_stack *st = s->rx_stacks[i];

			if (!ts_stack__usable(st))
				continue;
			if (!IN_MULTICAST(ntohl(s->laddr)))
				sock__steer(s, st, s->laddr);
			for (g = 0; g < s->ngroups; g++)
				if (s->group_ifindex[g] == ts_stack__ifindex(st))
					sock__steer(s, st, s->groups[g]);
		}
	}
	ts_unlock();
}


/* The snapshot's datagram sockets (tickstack-stackdump; the control
 * thread, on request): one entry per fd. */
void ts_sock__snapshot(struct tickstack_dump *d)
{
	int fd;

	if (!ts_fdtab)
		return;
	ts_lock(); /* sockets are pooled, not freed: the lock keeps a slot's
		    * incarnation while it is read */
	for (fd = 0; fd < ts_fdtab_size; fd++) {
		struct ts_sock *s = __atomic_load_n(&ts_fdtab[fd],
						    __ATOMIC_ACQUIRE);
		struct tickstack_dump_sock *o;

		if (!s || __atomic_load_n(&s->dead, __ATOMIC_RELAXED))
			continue;
		o = ts_dump__sock_slot(d);
		if (!o)
			break;
		o->fd = fd;
		o->proto = IPPROTO_UDP;
		o->state = (uint32_t)__atomic_load_n(&s->state, __ATOMIC_RELAXED);
		o->laddr = s->conn_laddr ? s->conn_laddr : s->laddr;
		o->lport = s->lport;
		o->raddr = s->raddr;
		o->rport = s->rport;
		pthread_mutex_lock(&s->qlock);
		o->rxq = s->qtail - s->qhead;
		o->rxq_bytes = s->qbytes;
		pthread_mutex_unlock(&s->qlock);
		if (s->stats) {
			o->rx = s->stats->rx_accel;
			o->tx = s->stats->tx_accel;
		}
	}
	ts_unlock();
}
