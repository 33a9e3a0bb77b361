/* SPDX-License-Identifier: Apache-2.0 */
/* tcp_internal.h - the TCP layer's interface to the rest of the library
 * (no lwIP types here: stack.c, sock.c and interpose.c include it).
 * tcp.c holds the shadow stream sockets, tcp_lwip.c the lwIP glue. */
#ifndef TS_TCP_INTERNAL_H
#define TS_TCP_INTERNAL_H

#include "ts_internal.h"

struct ts_tcp;

TS_HIDDEN extern int ts_tcp_on; /* TICKSTACK_TCP=1 and the tables exist */
/* a forked child: fd is a listener its parent accelerated (the parent's
 * lwIP gets its connections: accept here would wait forever) */
TS_HIDDEN int ts_tcp__inherited_listener(int fd);
TS_HIDDEN extern struct ts_tcp **ts_tcp_tab;

/* The shadow of fd when it is an accelerated (or still undecided) stream
 * socket; NULL for kernel-only ones and every other fd. */
TS_HIDDEN struct ts_tcp *ts_tcp__of(int fd);

static inline int ts_tcp__is_tcp(const uint8_t *p, uint32_t len)
{
	return len >= 14 + 20 + 20 && p[12] == 0x08 && p[13] == 0x00 &&
	       (p[14] >> 4) == 4 && p[23] == 6;
}

/* RX dispatch (stack.c, under the ring's lock): one Ethernet frame
 * holding an IPv4/TCP segment is copied to the TCP layer's input queue
 * (the caller frees the frame), its checksum verified on the copy;
 * -EBADMSG: a wrong checksum, dropped (the caller counts it, as for UDP).
 * ts_tcp__input_drain, called once the ring lock is released, hands the
 * queue to lwIP under its core lock. */
TS_HIDDEN int ts_tcp__input(struct ts_stack *st, const uint8_t *frame,
			    uint32_t len, uint64_t rx_ns);
/* The receive time of the segment lwIP is processing (CLOCK_REALTIME ns,
 * 0 when no socket asked for timestamps); under the core lock. */
TS_HIDDEN extern uint64_t ts_tcp_seg_rx_ns;
TS_HIDDEN void ts_tcp__input_drain(void);

/* life cycle */
TS_HIDDEN int ts_tcp__init(void);
TS_HIDDEN void ts_tcp__fini(void);
TS_HIDDEN void ts_tcp__after_fork_child(void);
/* fork (tcp.c, Fork): at the fork every accelerated stream and listener
 * becomes a unix socket shared with the child, pumped by this process's
 * TCP thread; calls on such an fd in any process (1: answered, the
 * result in *r; 0: not a shared fd) */
TS_HIDDEN void ts_tcp__fork_prepare(void);
/* the fds that ts_tcp__fork_prepare will replace (before it), and did
 * replace (after it): up to max into fds, the count returned */
TS_HIDDEN int ts_tcp__fork_fds(int *fds, int max, int done);
TS_HIDDEN int ts_tcp__fw_accept(int fd, struct sockaddr *addr, socklen_t *len,
				int flags, int *r);
TS_HIDDEN int ts_tcp__fw_name(int fd, int peer, struct sockaddr *addr,
			      socklen_t *len, int *r);
TS_HIDDEN int ts_tcp__fw_sockopt(int fd, int set, int level, int opt,
				 void *val, socklen_t *len, int *r);

/* the socket calls (interpose.c); each returns like the libc call */
TS_HIDDEN void ts_tcp__socket(int fd, int type);
TS_HIDDEN int ts_tcp__bind(struct ts_tcp *t, int fd,
			   const struct sockaddr *addr, socklen_t len);
TS_HIDDEN int ts_tcp__listen(struct ts_tcp *t, int fd, int backlog);
TS_HIDDEN int ts_tcp__connect(struct ts_tcp *t, int fd,
			      const struct sockaddr *addr, socklen_t len);
TS_HIDDEN int ts_tcp__accept(struct ts_tcp *t, int fd, struct sockaddr *addr,
			     socklen_t *len, int flags);
TS_HIDDEN ssize_t ts_tcp__recvmsg(struct ts_tcp *t, int fd,
				  struct msghdr *msg, int flags);
TS_HIDDEN ssize_t ts_tcp__sendmsg(struct ts_tcp *t, int fd,
				  const struct msghdr *msg, int flags);
/* sendfile and splice (interpose.c): room for a send now (waiting on a
 * blocking stream), and a send of bytes taken from a pipe that waits for
 * room whatever O_NONBLOCK says */
TS_HIDDEN ssize_t ts_tcp__send_room(struct ts_tcp *t, int flags);
TS_HIDDEN ssize_t ts_tcp__send_all(struct ts_tcp *t, int fd, const void *buf,
				   size_t len, int flags);
TS_HIDDEN int ts_tcp__shutdown(struct ts_tcp *t, int fd, int how);
TS_HIDDEN void ts_tcp__close(int fd);
TS_HIDDEN void ts_tcp__dup(int oldfd, int newfd);
TS_HIDDEN int ts_tcp__getpeername(struct ts_tcp *t, int fd,
				  struct sockaddr *addr, socklen_t *len);
TS_HIDDEN int ts_tcp__getsockname(struct ts_tcp *t, int fd,
				  struct sockaddr *addr, socklen_t *len);
/* 1 when answered (ret in *r), 0 to ask the kernel socket */
TS_HIDDEN int ts_tcp__getsockopt(struct ts_tcp *t, int fd, int level, int opt,
				 void *val, socklen_t *len, int *r);
TS_HIDDEN int ts_tcp__setsockopt_pre(struct ts_tcp *t, int fd, int level,
				      int opt, const void *val, socklen_t len);
TS_HIDDEN void ts_tcp__setsockopt(struct ts_tcp *t, int fd, int level,
				  int opt, const void *val, socklen_t len);
TS_HIDDEN void ts_tcp__set_nonblock(struct ts_tcp *t, int on);
TS_HIDDEN int ts_tcp__fionread(struct ts_tcp *t, int *out);

/* readiness (sock.c's poll, select and epoll loops): poll-style revents
 * of an accelerated stream for the wanted events, and what has woken it
 * (edges, NULL when not wanted); whether the kernel fd must be looked at
 * too (a listener: connections on other interfaces reach the kernel's
 * queue). */
TS_HIDDEN int ts_tcp__accel(struct ts_tcp *t);
/* connecting, connected or closed: its bytes are the shadow's */
TS_HIDDEN int ts_tcp__stream(struct ts_tcp *t);
TS_HIDDEN short ts_tcp__revents(struct ts_tcp *t, short events,
				struct ts_edges *edges);
TS_HIDDEN int ts_tcp__kernel_watch(struct ts_tcp *t);

#endif
