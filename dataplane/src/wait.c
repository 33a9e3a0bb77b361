// SPDX-License-Identifier: Apache-2.0
/* wait.c - the one wait primitive, in the stack layer: spin, then sleep
 * in ppoll on the caller's kernel fds, the XSKs and the signal eventfd.
 * recv (rx.c), TCP, poll/select (poll.c) and epoll (epoll.c) wait with it.
 * No lock is held while waiting, and nothing is allocated. */
#include "ts_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

int ts_wait_sleepers;

/* Wake-ups. Each sleeping thread waits on an eventfd of its own (a slot
 * here), so that no thread can drain another's wake-up: a deliverer (a
 * thread that moved datagrams into a socket's queue, lwIP's callbacks, a
 * signal) writes the eventfd of every thread marked asleep. A thread
 * without a slot (more than TS_WAKE_SLOTS) falls back to the shared
 * signal eventfd and sleeps at most TS_WAIT_SLEEP_MAX_NS at a time. */
#define TS_WAKE_SLOTS 256
#define TS_WAIT_SLEEP_MAX_NS 10000000ull /* 10 ms, as the TCP waits */

static struct {
	int efd1;     /* eventfd + 1, created once and never closed (a write
		       * racing a thread's exit must never reach a reused fd
		       * number); 0: not created yet */
	int taken;    /* a live thread owns the slot */
	int sleeping;
} wake_slot[TS_WAKE_SLOTS];
static __thread int my_slot = -1;
static pthread_key_t wake_key;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;

static void wake_slot_free(void *arg)
{
	int i = (int)(intptr_t)arg - 1;

	__atomic_store_n(&wake_slot[i].sleeping, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&wake_slot[i].taken, 0, __ATOMIC_RELEASE);
}

static void wake_key_create(void)
{
	(void)pthread_key_create(&wake_key, wake_slot_free);
}

/* This thread's slot (taken at its first sleep), or a negative errno:
 * -ENOSPC when every slot is taken (the thread shares the signal eventfd) */
static int wake_slot_get(void)
{
	int i;

	if (my_slot >= 0)
		return my_slot;
	pthread_once(&wake_once, wake_key_create);
	for (i = 0; i < TS_WAKE_SLOTS; i++) {
		int free_ = 0;

		if (!__atomic_compare_exchange_n(&wake_slot[i].taken, &free_, 1, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		if (!__atomic_load_n(&wake_slot[i].efd1, __ATOMIC_ACQUIRE)) {
			int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

			if (efd < 0) {
				int e = errno;

				__atomic_store_n(&wake_slot[i].taken, 0, __ATOMIC_RELEASE);
				return -e;
			}
			__atomic_store_n(&wake_slot[i].efd1, efd + 1, __ATOMIC_RELEASE);
		}
		my_slot = i;
		(void)pthread_setspecific(wake_key, (void *)(intptr_t)(i + 1));
		return i;
	}
	return -ENOSPC;
}

/* A forked child has one thread: the others' slots are free again. */
void ts_wait__after_fork_child(void)
{
	int i;

	for (i = 0; i < TS_WAKE_SLOTS; i++) {
		if (i == my_slot)
			continue;
		wake_slot[i].taken = 0;
		wake_slot[i].sleeping = 0;
	}
}

/* After a deliverer filled a socket's queue, lwIP changed a stream, or a
 * signal came: wake the threads sleeping in the library (async-signal
 * safe: loads and write(2)). */
void ts_wait__wake_sleepers(void)
{
	uint64_t one = 1;
	int i;

	/* a sequentially consistent read-modify-write: the full barrier
	 * between filling the queue and looking for sleepers (a fence would
	 * do too, but ThreadSanitizer does not model fences) */
	if (!__atomic_fetch_add(&ts_wait_sleepers, 0, __ATOMIC_SEQ_CST))
		return;
	for (i = 0; i < TS_WAKE_SLOTS; i++) {
		int efd1;

		if (!__atomic_load_n(&wake_slot[i].sleeping, __ATOMIC_ACQUIRE))
			continue;
		efd1 = __atomic_load_n(&wake_slot[i].efd1, __ATOMIC_ACQUIRE);
		if (efd1 > 0)
			(void)!ts_real_write(efd1 - 1, &one, sizeof(one));
	}
	if (ts_sig_efd >= 0) /* the TCP waits and threads without a slot */
		(void)!ts_real_write(ts_sig_efd, &one, sizeof(one));
}

void ts_wait__efd_drain(void)
{
	uint64_t v;

	if (ts_sig_efd >= 0)
		(void)!ts_real_read(ts_sig_efd, &v, sizeof(v));
}

static unsigned long sig_gen(const struct ts_wait *w)
{
	return w->any_signal ? ts_sig__gen() : ts_sig__norestart_gen();
}

/* Frames waiting on the XSKs this wait cares about go to their sockets.
 * A ring another thread is polling is left to it (it delivers to all). */
static void wait__poll_rings(const struct ts_wait *w)
{
	int i, n;

	if (!w->stacks) {
		if (ts_stack__any_busy())
			ts_stack__poll_all();
		return;
	}
	n = __atomic_load_n(w->nstacks, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		struct ts_stack *st = __atomic_load_n(&w->stacks[i], __ATOMIC_ACQUIRE);

		if (!ts_stack__usable(st) || !ts_stack__busy(st))
			continue;
		if (w->direct && !w->direct->done)
			ts_stack__poll_direct(st, w->direct);
		else
			ts_stack__poll(st, 0);
	}
}

/* Sleep until one of the caller's fds, an XSK or the signal eventfd is
 * readable, or the deadline. <0: EINTR (errno); >0: the caller's check
 * was done just before sleeping (its result in *res); 0: woken.
 *
 * Another thread (the TCP timer thread, any thread waiting on the same
 * XSK) may take this wait's datagrams from the RX ring into its socket's
 * queue: the XSK is then no longer readable, and only the eventfd wakes
 * this thread. So: count ourselves a sleeper, drain the eventfd, and only
 * then look at the queue once more, while a deliverer fills the queue and
 * then writes the eventfd if it sees a sleeper (ts_wait__wake_sleepers):
 * one of the two always sees the other. */
static int wait__sleep(struct ts_wait *w, uint64_t now, uint64_t deadline,
		       unsigned long g0, int *res)
{
	struct pollfd local[16 + TS_XSK_POLLFDS + 1];
	struct pollfd *pf = w->sleep_buf ? w->sleep_buf : local;
	struct timespec ts, *tsp = NULL;
	int n, i, k, r, slot, efd, xroom = TS_XSK_POLLFDS;

	/* room for the XSKs and the eventfd is kept after the caller's */
	n = w->sleep_fds(w, pf, w->sleep_buf ? w->sleep_cap : 16);
	if (w->stacks) {
		k = __atomic_load_n(w->nstacks, __ATOMIC_ACQUIRE);
		for (i = 0; i < k; i++) {
			struct ts_stack *st = w->stacks[i];

			if (!ts_stack__usable(st))
				continue;
			ts_stack__fill_for_sleep(st);
			r = ts_stack__poll_fds(st, &pf[n], xroom);
			n += r;
			xroom -= r;
		}
	} else {
		k = ts_stack__count();
		for (i = 0; i < k && i < TICKSTACK_STATS_MAX_XSK; i++) {
			struct ts_stack *st = ts_stack__at(i);

			if (!ts_stack__usable(st))
				continue;
			ts_stack__fill_for_sleep(st);
			r = ts_stack__poll_fds(st, &pf[n], xroom);
			n += r;
			xroom -= r;
		}
	}
	slot = wake_slot_get();
	if (slot >= 0)
		efd = __atomic_load_n(&wake_slot[slot].efd1, __ATOMIC_RELAXED) - 1;
	else
		efd = ts_sig_efd;
	if (efd >= 0) {
		pf[n].fd = efd;
		pf[n++].events = POLLIN;
	}
	/* Without a slot of its own, another sleeper may drain the shared
	 * eventfd this thread's wake-up went to: a lost wake-up then costs
	 * at most TS_WAIT_SLEEP_MAX_NS. */
	if (deadline != UINT64_MAX || slot < 0) {
		uint64_t left = deadline == UINT64_MAX ? UINT64_MAX : deadline - now;

		if (slot < 0 && left > TS_WAIT_SLEEP_MAX_NS)
			left = TS_WAIT_SLEEP_MAX_NS;
		ts.tv_sec = (time_t)(left / 1000000000ull);
		ts.tv_nsec = (long)(left % 1000000000ull);
		tsp = &ts;
	}
	/* asleep first, then drain, then the last look: a deliverer fills
	 * the queue and then wakes whoever it sees asleep */
	if (slot >= 0)
		__atomic_store_n(&wake_slot[slot].sleeping, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&ts_wait_sleepers, 1, __ATOMIC_SEQ_CST);
	if (efd >= 0) {
		uint64_t v;

		(void)!ts_real_read(efd, &v, sizeof(v));
	}
	if (sig_gen(w) != g0) {
		r = -EINTR;
		goto out;
	}
	*res = w->check(w, 0);
	if (*res) {
		r = 1;
		goto out;
	}
	r = ts_real_ppoll(pf, (nfds_t)n, tsp, w->mask);
	if (r < 0 && errno == EINTR && (w->any_signal || sig_gen(w) != g0))
		r = -EINTR;
	else
		r = 0;
out:
	__atomic_sub_fetch(&ts_wait_sleepers, 1, __ATOMIC_ACQ_REL);
	if (slot >= 0)
		__atomic_store_n(&wake_slot[slot].sleeping, 0, __ATOMIC_RELEASE);
	return r;
}

int ts_wait(struct ts_wait *w)
{
	unsigned long g0 = sig_gen(w);
	uint64_t start = ts_now_ns(), spin_end, deadline;
	unsigned iter = 0;
	struct ts_spin sp;
	/* a blocking wait looks at the kernel fds only every kernel_poll_ns
	 * of spinning (a short wait makes no system call); a one-look wait
	 * and a wait that ends at its deadline look at them too */
	int kernel = w->timeout_ns == 0 || !w->kernel_lazy, r;

	deadline = w->timeout_ns < 0 ? UINT64_MAX :
				       start + (uint64_t)w->timeout_ns;
	spin_end = ts_cfg.spin_usec < 0 ?
			   UINT64_MAX :
			   start + (uint64_t)ts_cfg.spin_usec * 1000;
	ts_spin__start(&sp, start);
	for (;;) {
		wait__poll_rings(w);
		r = w->check(w, kernel);
		if (r)
			return r;
		if (w->timeout_ns == 0)
			return 0;
		kernel = 0;
		if (sig_gen(w) != g0)
			return -EINTR;
		if ((++iter & 63) != 0) {
			ts_cpu_relax();
			continue;
		}
		{
			uint64_t now = ts_now_ns();

			if (now >= deadline)
				return w->kernel_lazy ? w->check(w, 1) : 0;
			kernel = ts_spin__tick(&sp, now);
			if (now < spin_end)
				continue;
			int res = 0;

			r = wait__sleep(w, now, deadline, g0, &res);
			if (r < 0)
				return r;
			if (r > 0)
				return res;
			kernel = 1; /* what woke us may be a kernel fd */
		}
	}
}
