// SPDX-License-Identifier: Apache-2.0
/* epoll.c - epoll sets holding accelerated sockets. The kernel's set keeps
 * every fd the application registered (ours with a tagged data, translated
 * back); readiness of an accelerated socket comes from its queue. Waiting
 * goes through the one wait primitive: it sleeps in ppoll on the epoll fd
 * itself, the XSKs and the signal eventfd, so no fd of the library ever
 * joins the application's set (no event with a data it never registered).
 *
 * Locking: the list of sets under ep_list_lock; a set's members under its
 * own lock; neither is held across a system call. Set objects are never
 * freed (a closed set's object is reused), so a waiter racing a close of
 * its epoll fd never touches freed memory. */
#include "ts_internal.h"
#include "tcp_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TS_EP_TAG_SOCK 0x7453000000000000ull
#define TS_EP_TAG_MASK 0xffff000000000000ull

struct ts_ep_member {
	int fd;
	uint32_t events;
	epoll_data_t data;
	int disabled; /* EPOLLONESHOT fired */
	/* EPOLLET: reported again once its socket was woken (struct
	 * ts_edges) since seen; fresh: not looked at since ADD or MOD, which
	 * report what is ready, as the kernel's ep_insert/ep_modify do */
	int et_fresh;
	struct ts_edges seen;
};

struct ts_ep {
	pthread_mutex_t lock;
	int epfd;     /* -1: free for reuse */
	int n, cap;
	struct ts_ep_member *m;
	struct ts_ep *next;
};

static pthread_mutex_t ep_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ts_ep *eps;
static int ep_count; /* sets with members of ours (atomic): fast path */
/* fds that are (or were) one of our sets or a member of one: close() of
 * any other fd skips the sets entirely */
static uint8_t ep_known[65536];

static void known_set(int fd)
{
	if (fd >= 0 && fd < (int)sizeof(ep_known))
		__atomic_store_n(&ep_known[fd], 1, __ATOMIC_RELEASE);
}

static int known(int fd)
{
	return fd >= 0 && fd < (int)sizeof(ep_known) &&
	       __atomic_load_n(&ep_known[fd], __ATOMIC_ACQUIRE);
}

static struct ts_ep *ep_of(int epfd)
{
	struct ts_ep *e;

	pthread_mutex_lock(&ep_list_lock);
	for (e = eps; e; e = e->next)
		if (e->epfd == epfd)
			break;
	pthread_mutex_unlock(&ep_list_lock);
	return e;
}

static struct ts_ep *ep_get_or_add(int epfd)
{
	struct ts_ep *e, *spare = NULL;

	pthread_mutex_lock(&ep_list_lock);
	for (e = eps; e; e = e->next) {
		if (e->epfd == epfd)
			break;
		if (e->epfd < 0 && !spare)
			spare = e;
	}
	if (!e && spare) {
		e = spare;
		e->epfd = epfd;
	} else if (!e) {
		e = calloc(1, sizeof(*e));
		if (e) {
			pthread_mutex_init(&e->lock, NULL);
			e->epfd = epfd;
			e->next = eps;
			eps = e;
		}
	}
	pthread_mutex_unlock(&ep_list_lock);
	return e;
}

/* Whether fd joins the kernel's set: every fd but an accelerated stream
 * that is not a listener (an unbound placeholder socket would report
 * EPOLLHUP). */
static int ep_in_kernel(int fd)
{
	struct ts_tcp *t;

	if (ts_sock__of(fd) || !ts_tcp_on || !(t = ts_tcp__of(fd)))
		return 1;
	return ts_tcp__kernel_watch(t);
}

#define EP_EXCLUSIVE_OK                                                        \
	(EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET |    \
	 EPOLLEXCLUSIVE)

/* For a member the kernel's set never holds, the kernel's answers in the
 * order of its do_epoll_ctl. First the set (no lock held): EBADF, or
 * EINVAL for the fd itself or a file that is no epoll; a DEL of an fd the
 * set does not hold says ENOENT when the set is good. */
static int ep_set_check(int epfd, int fd, int op, const struct epoll_event *ev)
{
	if (op != EPOLL_CTL_DEL && !ev) {
		errno = EFAULT;
		return -1;
	}
	if (ts_real_epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL) < 0 &&
	    errno != ENOENT)
		return -1;
	return 0;
}

/* Then EPOLLEXCLUSIVE's rules and the operation against the members
 * (m: the fd's, or NULL): 0 or a negative errno. */
static int ep_op_check(int op, const struct epoll_event *ev,
		       const struct ts_ep_member *m)
{
	if (op != EPOLL_CTL_DEL && (ev->events & EPOLLEXCLUSIVE) &&
	    (op == EPOLL_CTL_MOD || (ev->events & ~EP_EXCLUSIVE_OK)))
		return -EINVAL;
	switch (op) {
	case EPOLL_CTL_ADD:
		return m ? -EEXIST : 0;
	case EPOLL_CTL_DEL:
		return m ? 0 : -ENOENT;
	case EPOLL_CTL_MOD:
		return !m ? -ENOENT : (m->events & EPOLLEXCLUSIVE) ? -EINVAL : 0;
	}
	return -EINVAL;
}

int ts_ep__ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epoll_event kev;
	struct ts_ep *e;
	int i, r, had, kernel = ep_in_kernel(fd);

	memset(&kev, 0, sizeof(kev));
	if (ev) {
		kev.events = ev->events;
		kev.data.u64 = TS_EP_TAG_SOCK | (uint32_t)fd;
	}
	r = kernel ? ts_real_epoll_ctl(epfd, op, fd, ev ? &kev : NULL) :
		     ep_set_check(epfd, fd, op, ev);
	if (r < 0)
		return r;
	e = op == EPOLL_CTL_DEL ? ep_of(epfd) : ep_get_or_add(epfd);
	if (!e) {
		if (kernel)
			return 0;
		errno = op == EPOLL_CTL_DEL ? ENOENT : ENOMEM;
		return -1;
	}
	known_set(epfd);
	known_set(fd);
	pthread_mutex_lock(&e->lock);
	had = e->n;
	for (i = 0; i < e->n; i++)
		if (e->m[i].fd == fd)
			break;
	r = kernel ? 0 : ep_op_check(op, ev, i < e->n ? &e->m[i] : NULL);
	if (r) {
		pthread_mutex_unlock(&e->lock);
		errno = -r;
		return -1;
	}
	if (op == EPOLL_CTL_DEL) {
		if (i < e->n)
			e->m[i] = e->m[--e->n];
	} else if (ev) {
		if (i == e->n) {
			if (e->n == e->cap) {
				int cap = e->cap ? e->cap * 2 : 8;
				void *p = realloc(e->m, (size_t)cap * sizeof(*e->m));

				if (!p) {
					pthread_mutex_unlock(&e->lock);
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
		e->m[i].et_fresh = 1;
	}
	if (!had && e->n)
		__atomic_add_fetch(&ep_count, 1, __ATOMIC_ACQ_REL);
	else if (had && !e->n)
		__atomic_sub_fetch(&ep_count, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

/* fd names another file: every set that holds it as a member drops the
 * kernel's registration of the old file (adopt 0), which it could no
 * longer find by fd, or registers the new one with the member's events
 * (adopt 1), so that the set keeps reporting it. */
static void kernel_member(int fd, int adopt)
{
	struct epoll_event kev;
	struct ts_ep *e;
	int i;

	if (!known(fd))
		return;
	pthread_mutex_lock(&ep_list_lock);
	for (e = eps; e; e = e->next) {
		pthread_mutex_lock(&e->lock);
		for (i = 0; e->epfd >= 0 && i < e->n; i++) {
			if (e->m[i].fd != fd)
				continue;
			if (!adopt) {
				ts_real_epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
				continue;
			}
			memset(&kev, 0, sizeof(kev));
			/* a one-shot member that fired stays quiet */
			kev.events = e->m[i].disabled ? 0 : e->m[i].events;
			kev.data.u64 = TS_EP_TAG_SOCK | (uint32_t)fd;
			if (ts_real_epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &kev) < 0 &&
			    errno == EEXIST)
				ts_real_epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &kev);
		}
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&ep_list_lock);
}

/* fd is about to name another file (a TCP stream or listener shared at a
 * fork, tcp.c): the kernel's sets drop their registration of the old one. */
void ts_ep__kernel_forget(int fd)
{
	kernel_member(fd, 0);
}

/* fd names its new file (a kernel socket to the library): the sets that
 * hold it register that file in the kernel's set. */
void ts_ep__kernel_adopt(int fd)
{
	kernel_member(fd, 1);
}

void ts_ep__forget_fd(int fd)
{
	struct ts_ep *e;
	int i, had;

	if (!known(fd))
		return;
	pthread_mutex_lock(&ep_list_lock);
	for (e = eps; e; e = e->next) {
		pthread_mutex_lock(&e->lock);
		had = e->n;
		if (e->epfd == fd) {
			e->epfd = -1; /* the set is closed: the object is reused */
			e->n = 0;
		}
		for (i = 0; i < e->n; i++)
			if (e->m[i].fd == fd)
				e->m[i--] = e->m[--e->n];
		if (had && !e->n)
			__atomic_sub_fetch(&ep_count, 1, __ATOMIC_ACQ_REL);
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&ep_list_lock);
}

int ts_ep__active(int epfd)
{
	struct ts_ep *e;
	int n = 0;

	if (!__atomic_load_n(&ep_count, __ATOMIC_ACQUIRE))
		return 0;
	e = ep_of(epfd);
	if (e) {
		pthread_mutex_lock(&e->lock);
		n = e->n;
		pthread_mutex_unlock(&e->lock);
	}
	return n > 0;
}

/* ------------------------------------------------------------------ */
/* waiting                                                             */

#define TS_EP_DEDUP 256

struct ep_wait {
	struct ts_ep *e;
	int epfd;
	struct epoll_event *out;
	int max;
	int nout;
	int outfd[TS_EP_DEDUP]; /* the fd of each event, to merge two looks */
};

/* Add an event for member m (caller holds e->lock). */
static void out_add(struct ep_wait *ew, struct ts_ep_member *m, uint32_t ev)
{
	int i, lim = ew->nout < TS_EP_DEDUP ? ew->nout : TS_EP_DEDUP;

	for (i = 0; i < lim; i++) {
		if (ew->outfd[i] == m->fd) {
			ew->out[i].events |= ev;
			return;
		}
	}
	if (ew->nout >= ew->max)
		return;
	if (ew->nout < TS_EP_DEDUP)
		ew->outfd[ew->nout] = m->fd;
	ew->out[ew->nout].events = ev;
	ew->out[ew->nout].data = m->data;
	ew->nout++;
	if (m->events & EPOLLONESHOT)
		m->disabled = 1;
}

/* The kernel's events: our tags back to the application's data; events
 * of fds that are not ours pass as they are. */
static void ep__merge_kernel(struct ep_wait *ew, struct epoll_event *kev,
			     int kn)
{
	struct ts_ep *e = ew->e;
	int i, j;

	for (i = 0; i < kn; i++) {
		if ((kev[i].data.u64 & TS_EP_TAG_MASK) != TS_EP_TAG_SOCK) {
			if (ew->nout < ew->max) {
				if (ew->nout < TS_EP_DEDUP)
					ew->outfd[ew->nout] = -1;
				ew->out[ew->nout++] = kev[i];
			}
			continue;
		}
		for (j = 0; j < e->n; j++) {
			struct ts_ep_member *m = &e->m[j];
			struct ts_sock *s;

			if (m->fd != (int)(uint32_t)kev[i].data.u64)
				continue;
			s = ts_sock__of(m->fd);
			if (s && (kev[i].events & EPOLLIN))
				__atomic_store_n(&s->kernel_hint, 1,
						 __ATOMIC_RELEASE);
			if (!m->disabled)
				out_add(ew, m, kev[i].events);
			break;
		}
		/* an fd closed meanwhile: nothing the application registered */
	}
}

/* An accelerated member's events as poll reports them, and what has
 * woken its socket (for UDP: a datagram queued, a send made; the queue's
 * tail is read before the queue, so an arrival in between is an edge
 * still to come). 0: not accelerated, the kernel's set reports it. */
static int member_ready(const struct ts_ep_member *m, uint32_t *ev,
			struct ts_edges *g)
{
	struct ts_sock *s = ts_sock__of(m->fd);
	struct ts_tcp *t;

	*ev = 0;
	if (s) {
		if (ts_sock__state(s) != TS_S_ACCEL)
			return 0;
		g->in = __atomic_load_n(&s->qtail, __ATOMIC_ACQUIRE);
		g->out = (uint32_t)(__atomic_load_n(&s->stats->tx_accel, __ATOMIC_RELAXED) +
				    __atomic_load_n(&s->stats->tx_kernel, __ATOMIC_RELAXED));
		/* a transmit stamp queued: EPOLLERR, asked or not */
		g->any = __atomic_load_n(&s->errq_tail, __ATOMIC_ACQUIRE);
		if ((m->events & EPOLLIN) && ts_sock__rx_ready(s))
			*ev |= EPOLLIN;
		if (m->events & EPOLLOUT)
			*ev |= EPOLLOUT;
		if (ts_unlikely(ts_sock__errq_ready(s)))
			*ev |= EPOLLERR;
		return 1;
	}
	t = ts_tcp_on ? ts_tcp__of(m->fd) : NULL;
	if (!ts_tcp__accel(t))
		return 0;
	*ev = (uint16_t)ts_tcp__revents(t, (short)m->events, g);
	return 1;
}

/* EPOLLET: what is ready when the socket was woken since the member was
 * last looked at, else nothing. The wake-up is used up even when nothing
 * it asked for is ready, as in the kernel's ep_send_events. */
static uint32_t et_filter(struct ts_ep_member *m, uint32_t ev,
			  const struct ts_edges *g)
{
	int woken = m->et_fresh || g->any != m->seen.any ||
		    ((m->events & EPOLLIN) && g->in != m->seen.in) ||
		    ((m->events & EPOLLOUT) && g->out != m->seen.out);

	if (!woken)
		return 0;
	m->et_fresh = 0;
	m->seen = *g;
	return ev;
}

static int ep_check(struct ts_wait *w, int kernel)
{
	struct ep_wait *ew = w->arg;
	struct ts_ep *e = ew->e;
	struct epoll_event kev[64];
	int i, kn;

	ew->nout = 0;
	pthread_mutex_lock(&e->lock);
	for (i = 0; i < e->n && ew->nout < ew->max; i++) {
		struct ts_ep_member *m = &e->m[i];
		struct ts_edges g;
		uint32_t ev;

		if (m->disabled || !member_ready(m, &ev, &g))
			continue;
		if (m->events & EPOLLET)
			ev = et_filter(m, ev, &g);
		if (ev)
			out_add(ew, m, ev);
	}
	pthread_mutex_unlock(&e->lock);
	if (!kernel)
		return ew->nout;
	kn = ts_real_epoll_wait(ew->epfd, kev, ew->max < 64 ? ew->max : 64, 0);
	if (kn < 0 && errno != EINTR)
		return -errno;
	if (kn > 0) {
		pthread_mutex_lock(&e->lock);
		ep__merge_kernel(ew, kev, kn);
		pthread_mutex_unlock(&e->lock);
	}
	return ew->nout;
}

static int ep_sleep_fds(struct ts_wait *w, struct pollfd *pf, int max)
{
	struct ep_wait *ew = w->arg;

	if (max < 1)
		return 0;
	pf[0].fd = ew->epfd; /* readable when the kernel's set has events */
	pf[0].events = POLLIN;
	return 1;
}

int ts_ep__wait(int epfd, struct epoll_event *out, int max,
		int64_t timeout_ns, const sigset_t *mask)
{
	struct ep_wait ew = { .epfd = epfd, .out = out, .max = max };
	struct ts_wait w = { .check = ep_check, .sleep_fds = ep_sleep_fds,
			     .arg = &ew, .timeout_ns = timeout_ns,
			     .any_signal = 1, .mask = mask };
	int r;

	if (max <= 0) {
		errno = EINVAL;
		return -1;
	}
	ew.e = ep_of(epfd);
	if (!ew.e)
		return ts_real_epoll_pwait(epfd, out, max,
					   timeout_ns < 0 ? -1 :
					   (int)((timeout_ns + 999999) / 1000000),
					   mask);
	r = ts_wait(&w);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

void ts_ep__after_fork_child(void)
{
	struct ts_ep *e;

	pthread_mutex_init(&ep_list_lock, NULL);
	for (e = eps; e; e = e->next)
		pthread_mutex_init(&e->lock, NULL);
}
