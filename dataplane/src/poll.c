// SPDX-License-Identifier: Apache-2.0
/* poll.c - poll and select over accelerated and kernel fds mixed, on the
 * wait primitive (wait.c): readiness of accelerated sockets from their
 * queues, the kernel's from a zero-timeout poll now and then. */
#include "ts_internal.h"
#include "tcp_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* poll and select                                                     */

/* An accelerated stream, or NULL. */
static struct ts_tcp *tcp_accel(int fd)
{
	struct ts_tcp *t = ts_tcp_on ? ts_tcp__of(fd) : NULL;

	return ts_tcp__accel(t) ? t : NULL;
}

/* Kernel fds of accelerated streams carry nothing (an accepted one is an
 * unbound socket that would report POLLHUP): hidden from the kernel's
 * poll, except a listener's (connections from other interfaces). */
static int tcp_hidden(int fd)
{
	struct ts_tcp *t = tcp_accel(fd);

	return t && !ts_tcp__kernel_watch(t);
}

static int accel_fd(int fd)
{
	struct ts_sock *s = ts_sock__of(fd);

	if (!s)
		return tcp_accel(fd) != NULL;
	ts_sock__check_owner(s, fd);
	/* on the kernel since a fork, datagrams queued before it still wait
	 * in its queue: readable without the kernel's word */
	return ts_sock__state(s) == TS_S_ACCEL || ts_sock__rx_ready(s);
}

int ts_poll__has_accel(struct pollfd *fds, nfds_t n)
{
	nfds_t i;

	for (i = 0; i < n; i++)
		if (accel_fd(fds[i].fd))
			return 1;
	return 0;
}

/* The kernel's view of the fds, 0-timeout: in a buffer on the stack for
 * up to 256 fds, else in one kept per thread (allocated once). */
#define TS_POLL_STACK 256
static __thread struct pollfd *poll_tls;
static __thread nfds_t poll_tls_n;

struct poll_wait {
	struct pollfd *fds;
	nfds_t n;
	struct pollfd *tmp;
};

static int poll_check(struct ts_wait *w, int kernel)
{
	struct poll_wait *pw = w->arg;
	int ready = 0, r;
	nfds_t i;

	for (i = 0; i < pw->n; i++) {
		struct pollfd *p = &pw->fds[i];
		struct ts_sock *s = ts_sock__of(p->fd);

		p->revents = 0;
		if (!s) {
			struct ts_tcp *t = tcp_accel(p->fd);

			if (t)
				p->revents = ts_tcp__revents(t, p->events, NULL);
		} else if (ts_sock__state(s) == TS_S_ACCEL) {
			if ((p->events & POLLIN) && ts_sock__rx_ready(s))
				p->revents |= POLLIN;
			if (p->events & POLLOUT)
				p->revents |= POLLOUT;
			if (ts_unlikely(ts_sock__errq_ready(s)))
				p->revents |= POLLERR; /* transmit stamps */
		} else if ((p->events & POLLIN) && ts_sock__rx_ready(s)) {
			p->revents |= POLLIN; /* queued before a fork */
		}
	}
	if (kernel) {
		memcpy(pw->tmp, pw->fds, pw->n * sizeof(*pw->tmp));
		for (i = 0; ts_tcp_on && i < pw->n; i++)
			if (tcp_hidden(pw->tmp[i].fd))
				pw->tmp[i].fd = -1;
		r = ts_real_poll(pw->tmp, pw->n, 0);
		if (r < 0 && errno != EINTR)
			return -errno;
		for (i = 0; r > 0 && i < pw->n; i++) {
			struct ts_sock *s;

			if (!pw->tmp[i].revents)
				continue;
			pw->fds[i].revents |= pw->tmp[i].revents;
			s = ts_sock__of(pw->fds[i].fd);
			if (s && (pw->tmp[i].revents & POLLIN))
				__atomic_store_n(&s->kernel_hint, 1,
						 __ATOMIC_RELEASE);
		}
	}
	for (i = 0; i < pw->n; i++)
		ready += pw->fds[i].revents != 0;
	return ready;
}

/* Every one of the caller's fds joins the sleep (the buffer has room). */
static int poll_sleep_all(struct ts_wait *w, struct pollfd *pf, int max)
{
	struct poll_wait *pw = w->arg;
	nfds_t i;

	for (i = 0; i < pw->n && (int)i < max; i++) {
		pf[i].fd = ts_tcp_on && tcp_hidden(pw->fds[i].fd) ? -1 :
								   pw->fds[i].fd;
		pf[i].events = pw->fds[i].events;
	}
	return (int)i;
}

/* timeout_ns < 0: forever. */
int ts_poll__wait(struct pollfd *fds, nfds_t n, int64_t timeout_ns,
		  const sigset_t *mask)
{
	struct pollfd stackbuf[TS_POLL_STACK];
	nfds_t need = n + TS_XSK_POLLFDS + 1;
	struct poll_wait pw = { .fds = fds, .n = n, .tmp = stackbuf };
	struct ts_wait w = { .check = poll_check, .sleep_fds = poll_sleep_all,
			     .arg = &pw, .timeout_ns = timeout_ns,
			     .any_signal = 1, .mask = mask };
	int r;

	if (need > TS_POLL_STACK) {
		if (poll_tls_n < need) {
			struct pollfd *p = realloc(poll_tls, need * sizeof(*p));

			if (!p) {
				errno = ENOMEM;
				return -1;
			}
			poll_tls = p;
			poll_tls_n = need;
		}
		pw.tmp = poll_tls;
	}
	/* the 0-timeout kernel look and the sleep never overlap: one buffer */
	w.sleep_buf = pw.tmp;
	w.sleep_cap = (int)n;
	r = ts_wait(&w);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (r == 0)
		for (nfds_t i = 0; i < n; i++)
			fds[i].revents = 0;
	return r;
}
