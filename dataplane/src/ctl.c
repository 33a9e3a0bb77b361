// SPDX-License-Identifier: Apache-2.0
/* ctl.c - the control thread: the slow path the data path never waits
 * for. It subscribes to rtnetlink (links, addresses, routes, rules,
 * neighbours) and keeps the next-hop cache current, resolves the flows the
 * send path asked for, and runs the chores the layers above registered
 * (ts_ctl__hook: the sockets' forked children, ports shared with other
 * processes, io_uring) and the inspection tools' requests. Started with
 * the first accelerated socket, again in a forked child when it needs
 * one; all signals blocked (the application's handlers run on its own
 * threads). */
#include "ts_internal.h"

#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TS_CTL_TICK_MS 100
#define TS_CTL_PIDFDS 16 /* children watched by poll; more: by the tick */

#define TS_CTL_HOOKS 8

static struct ts_ctl_hook *hooks[TS_CTL_HOOKS];
static int nhooks;
static pthread_t ctl_tid;
static pid_t ctl_pid;  /* process whose thread runs (0: none) */
static int ctl_efd = -1;
static int ctl_nl = -1; /* the thread's rtnetlink socket, opened before it
			 * starts: the process's fds are settled when
			 * ts_ctl__start returns */

/* The thread's rtnetlink socket, subscribed: its fd, or a negative errno. */
static int ctl__nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd;

	fd = ts_real_socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE |
		       RTMGRP_NEIGH | RTMGRP_IPV4_RULE;
	if (ts_real_bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		ts_real_close(fd);
		return -e;
	}
	return fd;
}

static void ctl__nl_drain(int fd)
{
	char buf[8192] __attribute__((aligned(4)));

	for (;;) {
		ssize_t n = ts_real_recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == ENOBUFS) {
				/* notifications were lost: forget everything */
				struct nlmsghdr all = { .nlmsg_type = RTM_NEWROUTE };

				ts_nh__event(&all);
				continue;
			}
			return;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned int)n);
		     h = NLMSG_NEXT(h, n))
			ts_nh__event(h);
	}
}

/* Registered at start, before the thread runs (the process's constructor). */
void ts_ctl__hook(struct ts_ctl_hook *h)
{
	if (nhooks < TS_CTL_HOOKS)
		hooks[nhooks++] = h;
	else
		ts_log("control thread: more than %d hooks: one ignored",
		       TS_CTL_HOOKS);
}

static void *ctl__main(void *arg)
{
	int nl = (int)(intptr_t)arg;

	ts_in_lib = 1; /* this thread's libc calls are never interposed */
	/* It runs for microseconds when the network changes, but must run
	 * then, also on a CPU the application keeps busy spinning (its
	 * threads inherit the application's affinity): a higher priority
	 * where the process may set one (CAP_SYS_NICE), best effort. */
	if (setpriority(PRIO_PROCESS, (id_t)ts_real_syscall(SYS_gettid), -10))
		ts_dbg("control thread keeps its priority: %s", strerror(errno));
	if (nl < 0)
		ts_log("rtnetlink subscription failed: next hops are resolved "
		       "but not refreshed on changes");
	/* a thread started anew (a forked child's) runs every chore at once */
	for (int i = 0; i < nhooks; i++)
		hooks[i]->next_ns = 0;
	for (;;) {
		/* the eventfd, rtnetlink, and the pidfds of forked children
		 * (whose exit gives their sockets back to the XSK) */
		struct pollfd pf[2 + TS_CTL_PIDFDS] = {
			{ .fd = ctl_efd, .events = POLLIN },
			{ .fd = nl, .events = POLLIN } };
		uint64_t now, v;
		int npf = 2, i;

		if (nl < 0)
			pf[1].fd = -1; /* poll ignores it */
		for (i = 0; i < nhooks; i++)
			if (hooks[i]->pollfds)
				npf += hooks[i]->pollfds(pf + npf,
						 (int)(sizeof(pf) / sizeof(pf[0])) - npf);
		ts_real_poll(pf, (nfds_t)npf, TS_CTL_TICK_MS);
		if (pf[0].revents)
			(void)!ts_real_read(ctl_efd, &v, sizeof(v));
		if (nl >= 0 && pf[1].revents)
			ctl__nl_drain(nl);
		ts_nh__resolve_pending();
		/* the upper layers' chores, each on every wake-up or once
		 * its period passed */
		now = ts_now_ns();
		for (i = 0; i < nhooks; i++) {
			struct ts_ctl_hook *h = hooks[i];

			if (h->period_ns && now < h->next_ns)
				continue;
			h->run();
			if (h->period_ns)
				h->next_ns = now + h->period_ns;
		}
		ts_inspect__poll();
	}
	return NULL;
}

/* Start the thread of this process if it has none (caller holds ts_lock). */
void ts_ctl__start(void)
{
	sigset_t all, old;

	if (__atomic_load_n(&ctl_pid, __ATOMIC_ACQUIRE) == ts_getpid())
		return;
	if (ctl_efd < 0)
		ctl_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctl_efd < 0)
		return;
	if (ctl_nl < 0)
		ctl_nl = ctl__nl_open();
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ts_in_lib++;
	if (!pthread_create(&ctl_tid, NULL, ctl__main,
			    (void *)(intptr_t)ctl_nl)) {
		pthread_detach(ctl_tid);
		__atomic_store_n(&ctl_pid, ts_getpid(), __ATOMIC_RELEASE);
	} else {
		ts_log("cannot start the control thread: next hops are not "
		       "resolved, sends use the kernel");
	}
	ts_in_lib--;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void ts_ctl__wake(void)
{
	uint64_t one = 1;

	if (ts_unlikely(__atomic_load_n(&ctl_pid, __ATOMIC_ACQUIRE) !=
			ts_getpid())) {
		ts_lock();
		ts_ctl__start();
		ts_unlock();
	}
	if (ctl_efd >= 0)
		(void)!ts_real_write(ctl_efd, &one, sizeof(one));
}

/* Wake the thread if it runs in this process; never takes a lock (atfork
 * handlers call it with ts_lock held). */
void ts_ctl__poke(void)
{
	uint64_t one = 1;

	if (__atomic_load_n(&ctl_pid, __ATOMIC_ACQUIRE) == ts_getpid() &&
	    ctl_efd >= 0)
		(void)!ts_real_write(ctl_efd, &one, sizeof(one));
}

/* The thread did not survive the fork: the next need starts one, with a
 * cache emptied (nothing kept it current meanwhile). */
void ts_ctl__after_fork_child(void)
{
	__atomic_store_n(&ctl_pid, 0, __ATOMIC_RELEASE);
	/* the parent's eventfd and rtnetlink socket are the parent's
	 * thread's: a wake-up written to a shared eventfd would reach it */
	if (ctl_efd >= 0)
		ts_real_close(ctl_efd);
	if (ctl_nl >= 0)
		ts_real_close(ctl_nl);
	ctl_efd = -1;
	ctl_nl = -1;
	ts_nh__reset();
}
