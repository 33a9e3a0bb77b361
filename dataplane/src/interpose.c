// SPDX-License-Identifier: Apache-2.0
/* interpose.c - the LD_PRELOAD shim. The real libc functions are listed
 * once (TS_REAL_CALLS) and resolved once; an fd that is not one of our
 * UDP sockets, or a call before initialisation, goes straight to libc. */
#include "ts_internal.h"
#include "tcp_internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <limits.h>
#include <linux/if_xdp.h>
#include <unistd.h>

#define TS_API __attribute__((visibility("default")))

static int ts_ready;

#define REAL(name)                                                             \
	(ts_likely(ts_real_##name) ? ts_real_##name :                          \
				     (ts_real__resolve(), ts_real_##name))

/* Our socket for fd, with a reference for the call (ts_sock__put, or
 * done()), or NULL: not ours, not ready, or a call made from inside the
 * library (libxdp calling socket/close, ...). */
static inline struct ts_sock *ours(int fd)
{
	if (ts_unlikely(!ts_ready || ts_in_lib))
		return NULL;
	return ts_sock__get(fd);
}

static inline int is_ours(int fd)
{
	return ts_likely(ts_ready && !ts_in_lib) && ts_sock__of(fd);
}

/* A vfork child (no fork handler ran) shares the parent's memory: what
 * it closes before its exec is its own copy of the fd, the parent's
 * sockets stay as they are. */
static int in_vfork_child(void)
{
	return (pid_t)ts_real_syscall(SYS_getpid) != ts_pid;
}

/* End of a call on s: drop its reference, keep its errno. */
static inline ssize_t done(struct ts_sock *s, ssize_t r)
{
	int e = errno;

	ts_sock__put(s);
	errno = e;
	return r;
}

/* Our stream socket for fd (TICKSTACK_TCP=1), or NULL. */
static inline struct ts_tcp *tcp_ours(int fd)
{
	if (ts_likely(!ts_tcp_on) || ts_unlikely(!ts_ready || ts_in_lib))
		return NULL;
	return ts_tcp__of(fd);
}

/* ------------------------------------------------------------------ */
/* signals: a blocking call returns EINTR when a handler installed
 * without SA_RESTART ran, as the kernel's own blocking calls do.      */

static struct sigaction user_act[_NSIG];

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *a = &user_act[sig];
	int saved = errno;
	uint64_t one = 1;

	ts_sig__note(!!(a->sa_flags & SA_RESTART));
	(void)one;
	ts_wait__wake_sleepers();
	errno = saved;
	if (a->sa_flags & SA_SIGINFO) {
		if (a->sa_sigaction)
			a->sa_sigaction(sig, si, uc);
	} else if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN) {
		a->sa_handler(sig);
	}
}

static int wrap_sig(int sig)
{
	return sig > 0 && sig < _NSIG && sig != SIGKILL && sig != SIGSTOP;
}

TS_API int sigaction(int sig, const struct sigaction *act,
		     struct sigaction *old)
{
	struct sigaction prev_user, mine;
	int r;

	if (!wrap_sig(sig) || !ts_ready)
		return REAL(sigaction)(sig, act, old);
	prev_user = user_act[sig];
	if (act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN) {
		mine = *act;
		mine.sa_sigaction = trampoline;
		mine.sa_flags |= SA_SIGINFO;
		user_act[sig] = *act;
		r = REAL(sigaction)(sig, &mine, old);
	} else {
		r = REAL(sigaction)(sig, act, old);
	}
	if (r == 0 && old && old->sa_sigaction == trampoline)
		*old = prev_user;
	return r;
}

TS_API sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = h;
	act.sa_flags = SA_RESTART; /* glibc's BSD semantics */
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig > 0 && sig < _NSIG ? sig : 1);
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ------------------------------------------------------------------ */
/* socket creation, binding, closing                                   */

TS_API int socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol);
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0 || !ts_ready || ts_in_lib || domain != AF_INET)
		return fd;
	if (base == SOCK_STREAM && (!protocol || protocol == IPPROTO_TCP)) {
		ts_tcp__socket(fd, type);
		return fd;
	}
	if (base != SOCK_DGRAM || (protocol && protocol != IPPROTO_UDP))
		return fd;
	if (in_vfork_child())
		return fd; /* the parent's tables are not the child's */
	if (!ts_sock__new(fd, !!(type & SOCK_NONBLOCK))) {
		struct ts_fb f = { .fd = fd, .why = TS_FB_MEMORY,
				   .detail = "no socket object (memory, or an fd "
					     "beyond the table)",
				   .counter = &ts_stats->sockets_kernel };

		if (ts_fallback(&f) < 0) {
			REAL(close)(fd);
			errno = EOPNOTSUPP;
			return -1;
		}
	}
	return fd;
}

TS_API int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct ts_sock *s = ours(fd);
	int r = REAL(bind)(fd, addr, len);

	if (r == 0 && s) {
		int e = ts_sock__after_bind(s, fd);

		if (e < 0) {
			errno = -e;
			r = -1;
		}
	}
	return s ? (int)done(s, r) : r;
}

TS_API int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct ts_tcp *t = tcp_ours(fd);
	struct ts_sock *s;
	int r;

	if (t)
		return ts_tcp__connect(t, fd, addr, len);
	s = ours(fd);
	r = REAL(connect)(fd, addr, len);

	if (r == 0 && s) {
		int e = ts_sock__after_connect(s, fd, addr, len);

		if (e < 0) {
			errno = -e;
			r = -1;
		}
	}
	return s ? (int)done(s, r) : r;
}

TS_API int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct ts_tcp *t = tcp_ours(fd);

	/* the kernel socket is really bound: it knows the answer (an
	 * accepted or connected stream's is the shadow's) */
	int r;

	if (t)
		return ts_tcp__getsockname(t, fd, addr, len);
	if (ts_unlikely(ts_ready && !ts_in_lib) &&
	    ts_tcp__fw_name(fd, 0, addr, len, &r))
		return r; /* shared with a forked child (tcp.c, fork) */
	return REAL(getsockname)(fd, addr, len);
}

TS_API int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct ts_tcp *t = tcp_ours(fd);

	int r;

	if (t)
		return ts_tcp__getpeername(t, fd, addr, len);
	if (ts_unlikely(ts_ready && !ts_in_lib) &&
	    ts_tcp__fw_name(fd, 1, addr, len, &r))
		return r;
	return REAL(getpeername)(fd, addr, len);
}

TS_API int listen(int fd, int backlog)
{
	struct ts_tcp *t = tcp_ours(fd);

	if (t)
		return ts_tcp__listen(t, fd, backlog);
	return REAL(listen)(fd, backlog);
}

TS_API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct ts_tcp *t = tcp_ours(fd);

	int r;

	if (t)
		return ts_tcp__accept(t, fd, addr, len, flags);
	if (ts_unlikely(ts_tcp__inherited_listener(fd))) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (ts_unlikely(ts_ready && !ts_in_lib) &&
	    ts_tcp__fw_accept(fd, addr, len, flags, &r))
		return r;
	return REAL(accept4)(fd, addr, len, flags);
}

TS_API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct ts_tcp *t = tcp_ours(fd);

	int r;

	if (t)
		return ts_tcp__accept(t, fd, addr, len, 0);
	if (ts_unlikely(ts_tcp__inherited_listener(fd))) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (ts_unlikely(ts_ready && !ts_in_lib) &&
	    ts_tcp__fw_accept(fd, addr, len, 0, &r))
		return r;
	return REAL(accept)(fd, addr, len);
}

TS_API int shutdown(int fd, int how)
{
	struct ts_tcp *t = tcp_ours(fd);

	if (t)
		return ts_tcp__shutdown(t, fd, how);
	return REAL(shutdown)(fd, how);
}

/* The fd is going away (close, dup2 target, close_range). */
static void forget(int fd)
{
	if (ts_sock__of(fd)) {
		if (in_vfork_child())
			return;
		ts_sock__release(fd);
	} else if (ts_tcp_on && ts_tcp__of(fd)) {
		if (in_vfork_child())
			return;
		ts_tcp__close(fd);
	}
	ts_ep__forget_fd(fd);
}

TS_API int close(int fd)
{
	if (ts_ready && !ts_in_lib)
		forget(fd);
	return REAL(close)(fd);
}

/* close_range closes (or marks close-on-exec) without close(): forget
 * the shadows of the fds it closed, or a later fd with the same number
 * would be taken for the socket. */
TS_API int close_range(unsigned int first, unsigned int last, int flags)
{
	int r = REAL(close_range)(first, last, flags);
	unsigned int fd;

	if (r < 0 || (flags & CLOSE_RANGE_CLOEXEC) || !ts_ready || ts_in_lib)
		return r;
	for (fd = first; fd <= last && fd < (unsigned int)ts_fdtab_size; fd++) {
		forget((int)fd);
		if (fd == last)
			break;
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* receive                                                             */

/* A stream's receive: no source address (recvfrom leaves it unset). */
static ssize_t tcp_recv_one(struct ts_tcp *t, int fd, void *buf, size_t len,
			    int flags, socklen_t *fromlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r = ts_tcp__recvmsg(t, fd, &msg, flags);

	if (r >= 0 && fromlen)
		*fromlen = 0;
	return r;
}

static ssize_t tcp_send_one(struct ts_tcp *t, int fd, const void *buf,
			    size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	return ts_tcp__sendmsg(t, fd, &msg, flags);
}

static ssize_t recv_one(struct ts_sock *s, int fd, void *buf, size_t len,
			int flags, struct sockaddr *from, socklen_t *fromlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (from && fromlen) {
		msg.msg_name = from;
		msg.msg_namelen = *fromlen;
	}
	r = ts_sock__recvmsg(s, fd, &msg, flags);
	if (r >= 0 && from && fromlen)
		*fromlen = msg.msg_namelen;
	return r;
}

TS_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
			struct sockaddr *from, socklen_t *fromlen)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return tcp_recv_one(t, fd, buf, len, flags, fromlen);
		return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
	}
	return done(s, recv_one(s, fd, buf, len, flags, from, fromlen));
}

TS_API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return tcp_recv_one(t, fd, buf, len, flags, NULL);
		return REAL(recv)(fd, buf, len, flags);
	}
	return done(s, recv_one(s, fd, buf, len, flags, NULL, NULL));
}

TS_API ssize_t read(int fd, void *buf, size_t len)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return tcp_recv_one(t, fd, buf, len, 0, NULL);
		return REAL(read)(fd, buf, len);
	}
	return done(s, recv_one(s, fd, buf, len, 0, NULL, NULL));
}

TS_API ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct ts_sock *s = ours(fd);
	struct msghdr msg = { .msg_iov = (struct iovec *)iov,
			      .msg_iovlen = (size_t)iovcnt };

	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)) && iovcnt >= 0 && iovcnt <= IOV_MAX)
			return ts_tcp__recvmsg(t, fd, &msg, 0);
		return REAL(readv)(fd, iov, iovcnt);
	}
	if (iovcnt < 0 || iovcnt > IOV_MAX) {
		errno = EINVAL;
		return done(s, -1);
	}
	return done(s, ts_sock__recvmsg(s, fd, &msg, 0));
}

TS_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return ts_tcp__recvmsg(t, fd, msg, flags);
		return REAL(recvmsg)(fd, msg, flags);
	}
	return done(s, ts_sock__recvmsg(s, fd, msg, flags));
}

/* End of a call on a datagram socket (s) or a stream (s NULL). */
static inline ssize_t done_any(struct ts_sock *s, ssize_t r)
{
	return s ? done(s, r) : r;
}

/* One message of recvmmsg, from a datagram socket or a stream. */
static ssize_t recv_msg_any(struct ts_sock *s, struct ts_tcp *t, int fd,
			    struct msghdr *m, int flags)
{
	return s ? ts_sock__recvmsg(s, fd, m, flags) :
		   ts_tcp__recvmsg(t, fd, m, flags);
}

/* As the kernel's do_recvmmsg: every datagram (or a stream's next bytes)
 * waits as the socket does, MSG_WAITFORONE turns MSG_DONTWAIT on after
 * the first, and the timeout is looked at (and written back) after each
 * message only. */
TS_API int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags,
		    struct timespec *tmo)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t = s ? NULL : tcp_ours(fd);
	struct timespec end = { 0, 0 };
	int f = flags & ~MSG_WAITFORONE;
	unsigned int i;

	if (!s && !ts_tcp__stream(t))
		return REAL(recvmmsg)(fd, vec, n, flags, tmo);
	if (tmo) {
		if (tmo->tv_sec < 0 || tmo->tv_nsec < 0 || tmo->tv_nsec >= 1000000000) {
			errno = EINVAL;
			return (int)done_any(s, -1);
		}
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += tmo->tv_sec;
		end.tv_nsec += tmo->tv_nsec;
		if (end.tv_nsec >= 1000000000) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000;
		}
	}
	for (i = 0; i < n; i++) {
		ssize_t r = recv_msg_any(s, t, fd, &vec[i].msg_hdr, f);

		if (r < 0) {
			if (i > 0)
				break;
			return (int)done_any(s, -1);
		}
		vec[i].msg_len = (unsigned int)r;
		if (flags & MSG_WAITFORONE)
			f |= MSG_DONTWAIT;
		if (tmo) {
			struct timespec now;
			int64_t left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = ((int64_t)end.tv_sec - now.tv_sec) * 1000000000 +
			       (end.tv_nsec - now.tv_nsec);
			if (left <= 0) {
				tmo->tv_sec = tmo->tv_nsec = 0;
				i++;
				break;
			}
			tmo->tv_sec = (time_t)(left / 1000000000);
			tmo->tv_nsec = (long)(left % 1000000000);
		}
	}
	return (int)done_any(s, (ssize_t)i);
}

/* glibc's _FORTIFY_SOURCE entry point: no header declares it */
TS_API ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
			  int flags);
TS_API ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
			  int flags)
{
	if (len > buflen)
		abort();
	return recv(fd, buf, len, flags);
}

/* glibc's _FORTIFY_SOURCE entry point: no header declares it */
TS_API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
			      int flags, struct sockaddr *from,
			      socklen_t *fromlen);
TS_API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
			      int flags, struct sockaddr *from,
			      socklen_t *fromlen)
{
	if (len > buflen)
		abort();
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

/* glibc's _FORTIFY_SOURCE entry point: no header declares it */
TS_API ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
TS_API ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort();
	return read(fd, buf, len);
}

/* ------------------------------------------------------------------ */
/* send                                                                */

static ssize_t send_one(struct ts_sock *s, int fd, const void *buf,
			size_t len, int flags, const struct sockaddr *to,
			socklen_t tolen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_name = (void *)to,
			      .msg_namelen = to ? tolen : 0,
			      .msg_iov = &iov,
			      .msg_iovlen = 1 };

	return ts_sock__sendmsg(s, fd, &msg, flags, 0);
}

TS_API ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return tcp_send_one(t, fd, buf, len, flags);
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	}
	return done(s, send_one(s, fd, buf, len, flags, to, tolen));
}

TS_API ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return tcp_send_one(t, fd, buf, len, flags);
		return REAL(send)(fd, buf, len, flags);
	}
	return done(s, send_one(s, fd, buf, len, flags, NULL, 0));
}

TS_API ssize_t write(int fd, const void *buf, size_t len)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return tcp_send_one(t, fd, buf, len, 0);
		return REAL(write)(fd, buf, len);
	}
	return done(s, send_one(s, fd, buf, len, 0, NULL, 0));
}

TS_API ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct ts_sock *s = ours(fd);
	struct msghdr msg = { .msg_iov = (struct iovec *)iov,
			      .msg_iovlen = (size_t)iovcnt };

	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)) && iovcnt >= 0 && iovcnt <= IOV_MAX)
			return ts_tcp__sendmsg(t, fd, &msg, 0);
		return REAL(writev)(fd, iov, iovcnt);
	}
	if (iovcnt < 0 || iovcnt > IOV_MAX) {
		errno = EINVAL;
		return done(s, -1);
	}
	return done(s, ts_sock__sendmsg(s, fd, &msg, 0, 0));
}

/* preadv2 and pwritev2 at offset -1 are readv and writev on a socket
 * (RWF_NOWAIT is MSG_DONTWAIT there, the kernel's other flags change
 * nothing for a socket); at an offset the kernel says ESPIPE. */
#define TS_RWF_KNOWN (RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND)

static int rw2_ours(int fd, off64_t off, int cnt, int flags)
{
	return off == -1 && cnt >= 0 && cnt <= IOV_MAX &&
	       !(flags & ~TS_RWF_KNOWN) &&
	       (is_ours(fd) || ts_tcp__stream(tcp_ours(fd)));
}

static ssize_t rw2(int fd, const struct iovec *iov, int cnt, int flags,
		   int out)
{
	struct msghdr msg = { .msg_iov = (struct iovec *)iov,
			      .msg_iovlen = (size_t)cnt };
	int mf = (flags & RWF_NOWAIT) ? MSG_DONTWAIT : 0;
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t = s ? NULL : tcp_ours(fd);

	if (!s && !t) { /* gone meanwhile: the kernel's answer */
		errno = EBADF;
		return -1;
	}
	if (s)
		return done(s, out ? ts_sock__sendmsg(s, fd, &msg, mf, 0) :
				     ts_sock__recvmsg(s, fd, &msg, mf));
	return out ? ts_tcp__sendmsg(t, fd, &msg, mf) :
		     ts_tcp__recvmsg(t, fd, &msg, mf);
}

#define TS_RW2(name, off_type, out)                                            \
	TS_API ssize_t name(int fd, const struct iovec *iov, int cnt,          \
			    off_type off, int flags)                           \
	{                                                                      \
		if (!rw2_ours(fd, off, cnt, flags))                            \
			return REAL(name)(fd, iov, cnt, off, flags);           \
		return rw2(fd, iov, cnt, flags, out);                          \
	}
TS_RW2(preadv2, off_t, 0)
TS_RW2(preadv64v2, off64_t, 0)
TS_RW2(pwritev2, off_t, 1)
TS_RW2(pwritev64v2, off64_t, 1)
#undef TS_RW2

TS_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;

	if (!s) {
		if ((t = tcp_ours(fd)))
			return ts_tcp__sendmsg(t, fd, msg, flags);
		return REAL(sendmsg)(fd, msg, flags);
	}
	return done(s, ts_sock__sendmsg(s, fd, msg, flags, 0));
}

/* sendmmsg on a stream: each message in turn, as the kernel's. */
static int stream_sendmmsg(struct ts_tcp *t, int fd, struct mmsghdr *vec,
			   unsigned int n, int flags)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		ssize_t r = ts_tcp__sendmsg(t, fd, &vec[i].msg_hdr, flags);

		if (r < 0)
			return i ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

TS_API int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags)
{
	struct ts_sock *s = ours(fd);
	struct ts_tcp *t;
	unsigned int i;

	if (!s) {
		if (ts_tcp__stream(t = tcp_ours(fd)))
			return stream_sendmmsg(t, fd, vec, n, flags);
		return REAL(sendmmsg)(fd, vec, n, flags);
	}
	/* one batch: the TX ring is kicked once, after the last datagram */
	for (i = 0; i < n; i++) {
		ssize_t r = ts_sock__sendmsg(s, fd, &vec[i].msg_hdr, flags,
					     i + 1 < n);

		if (r < 0) {
			int e = errno;

			ts_sock__flush(s);
			if (i > 0)
				break;
			errno = e;
			return (int)done(s, -1);
		}
		vec[i].msg_len = (unsigned int)r;
	}
	ts_sock__flush(s);
	return (int)done(s, (ssize_t)i);
}

/* ------------------------------------------------------------------ */
/* sendfile, splice: the kernel copies between its own files, so on an
 * accelerated stream it would reach the placeholder socket (EPIPE,
 * ENOTCONN, or a wait for bytes that go to the shadow). The bytes go
 * through a buffer instead, with the kernel's semantics: a non-blocking
 * stream takes what it can and the rest stays in the file (the offset,
 * or the file position, moves by what was sent) or in the pipe (no more
 * is read from a pipe than the stream or the pipe can take now, since a
 * pipe cannot take bytes back); EAGAIN when nothing fits; SIGPIPE and
 * EPIPE on a closed stream. A UDP socket's datagram goes out through its
 * kernel socket (the kernel sends it, counted as tx_kernel) and its
 * datagrams come from the stack's queue. */

#define TS_COPY_CHUNK 65536
#define TS_MAX_RW 0x7ffff000 /* Linux's MAX_RW_COUNT */

_Static_assert(sizeof(off_t) == sizeof(off64_t), "sendfile64 passes its offset as sendfile's");

/* the calling thread's buffer, freed when the thread ends */
static pthread_key_t copy_key;
static pthread_once_t copy_once = PTHREAD_ONCE_INIT;

static void copy_key_init(void)
{
	if (pthread_key_create(&copy_key, free))
		copy_key = (pthread_key_t)-1;
}

static char *copy_buffer(void)
{
	char *b = NULL;

	pthread_once(&copy_once, copy_key_init);
	if (copy_key != (pthread_key_t)-1)
		b = pthread_getspecific(copy_key);
	if (!b && copy_key != (pthread_key_t)-1 && (b = malloc(TS_COPY_CHUNK)) &&
	    pthread_setspecific(copy_key, b)) {
		free(b);
		b = NULL;
	}
	if (!b)
		errno = ENOMEM;
	return b;
}

static int is_pipe(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISFIFO(st.st_mode);
}

/* One chunk of a file (at *pos, which moves by what was sent) or of a
 * pipe (pos NULL: no more read than the stream takes now) to a stream:
 * bytes sent, 0 at the end of the file, -1. */
static ssize_t chunk_to_stream(struct ts_tcp *t, int out, int in, off_t *pos,
			       size_t want, int flags)
{
	char *buf = copy_buffer();
	ssize_t r, s;

	if (!buf)
		return -1;
	if (want > TS_COPY_CHUNK)
		want = TS_COPY_CHUNK;
	if (!pos) {
		s = ts_tcp__send_room(t, flags);
		if (s < 0)
			return -1;
		if ((size_t)s < want)
			want = (size_t)s;
	}
	r = pos ? pread(in, buf, want, *pos) : REAL(read)(in, buf, want);
	if (r <= 0)
		return r;
	if (!pos)
		return ts_tcp__send_all(t, out, buf, (size_t)r, flags);
	s = tcp_send_one(t, out, buf, (size_t)r, flags);
	if (s > 0)
		*pos += s;
	return s;
}

/* sendfile to a stream: from *off (moved, the file position kept) or
 * from the file position (moved); a pipe as the source too. */
static ssize_t stream_sendfile(struct ts_tcp *t, int out, int in, off_t *off,
			       size_t count)
{
	off_t pos = off ? *off : lseek(in, 0, SEEK_CUR);
	int seekable = off || pos >= 0;
	size_t done = 0;

	if (count > TS_MAX_RW)
		count = TS_MAX_RW;
	while (done < count) {
		size_t want = count - done < TS_COPY_CHUNK ? count - done :
							     TS_COPY_CHUNK;
		ssize_t n = chunk_to_stream(t, out, in, seekable ? &pos : NULL,
					    want, 0);

		if (n < 0 && done)
			break;
		if (n < 0)
			return -1;
		done += (size_t)n;
		if ((size_t)n < want) /* the end, or what fits now */
			break;
	}
	if (off)
		*off = pos;
	else if (seekable)
		lseek(in, pos, SEEK_SET);
	return (ssize_t)done;
}

/* A UDP socket's sendfile or splice: the kernel socket sends. */
static ssize_t udp_kernel_sent(int fd, ssize_t r)
{
	struct ts_sock *s = r > 0 ? ours(fd) : NULL;

	if (s)
		TS_INC(s->stats->tx_kernel);
	return s ? done(s, r) : r;
}

TS_API ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	struct ts_tcp *t = tcp_ours(out);

	if (ts_tcp__stream(t))
		return stream_sendfile(t, out, in, off, count);
	return udp_kernel_sent(out, REAL(sendfile)(out, in, off, count));
}

TS_API ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	struct ts_tcp *t = tcp_ours(out);

	if (ts_tcp__stream(t))
		return stream_sendfile(t, out, in, (off_t *)off, count);
	return udp_kernel_sent(out, REAL(sendfile64)(out, in, off, count));
}

/* What the pipe can take now (its size less what it holds), waiting for
 * room unless it or the call is non-blocking. */
static ssize_t pipe_room(int fd, unsigned int flags)
{
	for (;;) {
		int size = REAL(fcntl)(fd, F_GETPIPE_SZ), held = 0;
		struct pollfd pf = { .fd = fd, .events = POLLOUT };

		if (size < 0 || REAL(ioctl)(fd, FIONREAD, &held) < 0)
			return -1;
		if (size - held >= 4096)
			return size - held - 4096; /* a partly filled page */
		if ((flags & SPLICE_F_NONBLOCK) ||
		    (REAL(fcntl)(fd, F_GETFL) & O_NONBLOCK)) {
			errno = EAGAIN;
			return -1;
		}
		if (REAL(poll)(&pf, 1, -1) < 0)
			return -1;
	}
}

/* A socket's bytes (a stream's, or one datagram) into a pipe, as the
 * kernel's do_splice: EINVAL for an offset on the socket or no pipe. */
static ssize_t splice_from_sock(struct ts_sock *s, struct ts_tcp *t, int in,
				const loff_t *off_in, int out,
				const loff_t *off_out, size_t len,
				unsigned int flags)
{
	ssize_t room, r, w, k = 0;
	char *buf;

	if (!is_pipe(out) || off_in) {
		errno = EINVAL;
		return -1;
	}
	if (off_out) {
		errno = ESPIPE;
		return -1;
	}
	room = pipe_room(out, flags);
	buf = copy_buffer();
	if (room < 0 || !buf)
		return -1;
	if (len > (size_t)room)
		len = (size_t)room;
	if (len > TS_COPY_CHUNK)
		len = TS_COPY_CHUNK;
	r = s ? recv_one(s, in, buf, len, 0, NULL, NULL) :
		tcp_recv_one(t, in, buf, len, 0, NULL);
	while (r > 0 && k < r) {
		w = REAL(write)(out, buf + k, (size_t)(r - k));
		if (w < 0 && errno != EINTR)
			return k ? k : -1; /* the pipe's reader went */
		k += w > 0 ? w : 0;
	}
	return r;
}

/* A pipe's bytes to a stream, as the kernel's do_splice: ESPIPE for an
 * offset on the pipe, EINVAL for one on the socket or no pipe; EAGAIN
 * from an empty pipe with SPLICE_F_NONBLOCK (or a non-blocking pipe). */
static ssize_t splice_to_stream(struct ts_tcp *t, int in, const loff_t *off_in,
				int out, const loff_t *off_out, size_t len,
				unsigned int flags)
{
	struct pollfd pf = { .fd = in, .events = POLLIN };

	if (!is_pipe(in) || (!off_in && off_out)) {
		errno = EINVAL;
		return -1;
	}
	if (off_in) {
		errno = ESPIPE;
		return -1;
	}
	if (!len)
		return 0;
	if (((flags & SPLICE_F_NONBLOCK) ||
	     (REAL(fcntl)(in, F_GETFL) & O_NONBLOCK)) &&
	    REAL(poll)(&pf, 1, 0) == 0) {
		errno = EAGAIN;
		return -1;
	}
	return chunk_to_stream(t, out, in, NULL, len,
			       (flags & SPLICE_F_MORE) ? MSG_MORE : 0);
}

TS_API ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out,
		      size_t len, unsigned int flags)
{
	struct ts_tcp *tin = tcp_ours(in), *tout = tcp_ours(out);
	struct ts_sock *s;

	if (ts_tcp__stream(tout))
		return splice_to_stream(tout, in, off_in, out, off_out, len, flags);
	if (ts_tcp__stream(tin))
		return splice_from_sock(NULL, tin, in, off_in, out, off_out, len,
					flags);
	s = ours(in);
	if (s)
		return done(s, splice_from_sock(s, NULL, in, off_in, out,
						off_out, len, flags));
	return udp_kernel_sent(out, REAL(splice)(in, off_in, out, off_out, len,
						 flags));
}

/* ------------------------------------------------------------------ */
/* poll, select, epoll                                                 */

static int64_t ms_ns(int ms)
{
	return ms < 0 ? -1 : (int64_t)ms * 1000000;
}

TS_API int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!ts_ready || ts_in_lib || !ts_poll__has_accel(fds, n))
		return REAL(poll)(fds, n, timeout);
	return ts_poll__wait(fds, n, ms_ns(timeout), NULL);
}

/* glibc's _FORTIFY_SOURCE entry point: no header declares it */
TS_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);
TS_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
	if (len / sizeof(*fds) < n)
		abort();
	return poll(fds, n, timeout);
}

TS_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		 const sigset_t *mask)
{
	int64_t ns = tmo ? (int64_t)tmo->tv_sec * 1000000000 + tmo->tv_nsec : -1;

	if (!ts_ready || ts_in_lib || !ts_poll__has_accel(fds, n))
		return REAL(ppoll)(fds, n, tmo, mask);
	return ts_poll__wait(fds, n, ns, mask);
}

static int select_common(int nfds, fd_set *r, fd_set *w, fd_set *e,
			 int64_t ns, const sigset_t *mask)
{
	struct pollfd pf[FD_SETSIZE]; /* no allocation: 8 KiB of stack */
	int i, n = 0, ret, cnt = 0;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < nfds; i++) {
		short ev = 0;

		if (r && FD_ISSET(i, r))
			ev |= POLLIN;
		if (w && FD_ISSET(i, w))
			ev |= POLLOUT;
		if (e && FD_ISSET(i, e))
			ev |= POLLPRI;
		if (!ev)
			continue;
		pf[n].fd = i;
		pf[n++].events = ev;
	}
	ret = ts_poll__wait(pf, (nfds_t)n, ns, mask);
	if (ret < 0)
		goto out;
	if (r)
		FD_ZERO(r);
	if (w)
		FD_ZERO(w);
	if (e)
		FD_ZERO(e);
	for (i = 0; i < n; i++) {
		short rev = pf[i].revents;

		if (r && (pf[i].events & POLLIN) &&
		    (rev & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(pf[i].fd, r);
			cnt++;
		}
		if (w && (pf[i].events & POLLOUT) && (rev & (POLLOUT | POLLERR))) {
			FD_SET(pf[i].fd, w);
			cnt++;
		}
		if (e && (pf[i].events & POLLPRI) && (rev & POLLPRI)) {
			FD_SET(pf[i].fd, e);
			cnt++;
		}
	}
	ret = cnt;
out:
	return ret;
}

static int sets_have_accel(int nfds, fd_set *r, fd_set *w)
{
	int i;

	if (!ts_ready || ts_in_lib || nfds > FD_SETSIZE)
		return 0;
	for (i = 0; i < nfds; i++)
		if (((r && FD_ISSET(i, r)) || (w && FD_ISSET(i, w))) &&
		    (ts_sock__of(i) || tcp_ours(i)) &&
		    ts_poll__has_accel(&(struct pollfd){ .fd = i }, 1))
			return 1;
	return 0;
}

TS_API int select(int nfds, fd_set *r, fd_set *w, fd_set *e,
		  struct timeval *tv)
{
	if (!sets_have_accel(nfds, r, w))
		return REAL(select)(nfds, r, w, e, tv);
	return select_common(nfds, r, w, e,
			     tv ? (int64_t)tv->tv_sec * 1000000000 +
					  (int64_t)tv->tv_usec * 1000 :
				  -1,
			     NULL);
}

TS_API int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
		   const struct timespec *ts, const sigset_t *mask)
{
	if (!sets_have_accel(nfds, r, w))
		return REAL(pselect)(nfds, r, w, e, ts, mask);
	return select_common(nfds, r, w, e,
			     ts ? (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec :
				  -1,
			     mask);
}

TS_API int epoll_create(int size)
{
	return REAL(epoll_create)(size);
}

TS_API int epoll_create1(int flags)
{
	return REAL(epoll_create1)(flags);
}

TS_API int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	if (!is_ours(fd) && !tcp_ours(fd))
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	return ts_ep__ctl(epfd, op, fd, ev);
}

TS_API int epoll_wait(int epfd, struct epoll_event *ev, int max, int tmo)
{
	if (!ts_ready || ts_in_lib || !ts_ep__active(epfd))
		return REAL(epoll_wait)(epfd, ev, max, tmo);
	return ts_ep__wait(epfd, ev, max, ms_ns(tmo), NULL);
}

TS_API int epoll_pwait(int epfd, struct epoll_event *ev, int max, int tmo,
		       const sigset_t *mask)
{
	if (!ts_ready || ts_in_lib || !ts_ep__active(epfd))
		return REAL(epoll_pwait)(epfd, ev, max, tmo, mask);
	return ts_ep__wait(epfd, ev, max, ms_ns(tmo), mask);
}

TS_API int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			const struct timespec *tmo, const sigset_t *mask)
{
	if (!ts_ready || ts_in_lib || !ts_ep__active(epfd))
		return REAL(epoll_pwait2)(epfd, ev, max, tmo, mask);
	return ts_ep__wait(epfd, ev, max,
			   tmo ? (int64_t)tmo->tv_sec * 1000000000 + tmo->tv_nsec :
				 -1,
			   mask);
}

/* ------------------------------------------------------------------ */
/* fcntl, ioctl, options, dup                                          */

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd,
			va_list ap)
{
	struct ts_sock *s;
	struct ts_tcp *t;
	long arg = va_arg(ap, long);
	int r = real(fd, cmd, arg);

	if (r >= 0 && (t = tcp_ours(fd))) {
		if (cmd == F_SETFL)
			ts_tcp__set_nonblock(t, !!(arg & O_NONBLOCK));
		else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			ts_tcp__dup(fd, r);
		return r;
	}
	if (r < 0 || !(s = ours(fd)))
		return r;
	if (cmd == F_SETFL)
		/* read by other threads' calls on the socket */
		__atomic_store_n(&s->nonblock, !!(arg & O_NONBLOCK), __ATOMIC_RELAXED);
	else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		ts_sock__dup(fd, r);
	return (int)done(s, r);
}

TS_API int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	int r;

	va_start(ap, cmd);
	r = fcntl_common(REAL(fcntl), fd, cmd, ap);
	va_end(ap);
	return r;
}

/* glibc's large-file name of fcntl: the same function */
TS_API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

TS_API int ioctl(int fd, unsigned long req, ...)
{
	struct ts_sock *s;
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	s = ours(fd);
	if (!s) {
		struct ts_tcp *t = tcp_ours(fd);
		int v;

		if (t && req == FIONREAD && arg && ts_tcp__fionread(t, &v)) {
			*(int *)arg = v;
			return 0;
		}
		r = REAL(ioctl)(fd, req, arg);
		if (t && r == 0 && req == FIONBIO && arg)
			ts_tcp__set_nonblock(t, !!*(int *)arg);
		return r;
	}
	if (s && req == FIONREAD && arg) {
		int v;

		if (ts_sock__fionread(s, &v)) {
			*(int *)arg = v;
			return (int)done(s, 0);
		}
	}
	r = REAL(ioctl)(fd, req, arg);
	if (r == 0 && s && req == FIONBIO && arg)
		__atomic_store_n(&s->nonblock, !!*(int *)arg, __ATOMIC_RELAXED);
	return s ? (int)done(s, r) : r;
}


/* The stack's own UMEM registration (through libxdp, ts_umem_txmd_len set):
 * struct xdp_umem_reg as Linux 6.8 has it, tx_metadata_len in what was the
 * padding after flags, which the flag XDP_UMEM_TX_METADATA_LEN says is set
 * (without it the kernel ignores the field). A kernel that refuses either
 * gets libxdp's registration as it was. */
static int umem_reg(int fd, const void *val, socklen_t len)
{
	struct {
		uint64_t addr, len;
		uint32_t chunk_size, headroom, flags, tx_metadata_len;
	} mr;

	memset(&mr, 0, sizeof(mr));
	memcpy(&mr, val, len < 28 ? len : 28);
	mr.tx_metadata_len = ts_umem_txmd_len;
	mr.flags |= 1u << 2; /* XDP_UMEM_TX_METADATA_LEN: the field is meant */
	if (REAL(setsockopt)(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) == 0) {
		ts_umem_txmd_ok = 1;
		return 0;
	}
	return REAL(setsockopt)(fd, SOL_XDP, XDP_UMEM_REG, val, len);
}

TS_API int setsockopt(int fd, int level, int opt, const void *val,
		      socklen_t len)
{
	struct ts_sock *s;
	struct ts_tcp *t;
	int r;

	if (ts_unlikely(ts_umem_txmd_len) && level == SOL_XDP &&
	    opt == XDP_UMEM_REG && val && len >= 24 && len <= 32)
		return umem_reg(fd, val, len);
	s = ours(fd);
	t = s ? NULL : tcp_ours(fd);
	if (!s && !t && ts_unlikely(ts_ready && !ts_in_lib) &&
	    ts_tcp__fw_sockopt(fd, 1, level, opt, (void *)val, &len, &r))
		return r; /* shared with a forked child (tcp.c, fork) */
	r = s ? ts_sock__setsockopt_pre(s, fd, level, opt, val, len) :
	    t ? ts_tcp__setsockopt_pre(t, fd, level, opt, val, len) : 0;
	if (r == 0 && t && ts_tcp__of(fd) != t)
		t = NULL; /* moved to the kernel */
	if (r == 0) /* else refused (TICKSTACK_REQUIRE=1): the kernel never sees it */
		r = REAL(setsockopt)(fd, level, opt, val, len);

	if (r == 0 && s)
		r = ts_sock__setsockopt(s, fd, level, opt, val, len);
	else if (r == 0 && t)
		ts_tcp__setsockopt(t, fd, level, opt, val, len);
	if (r < -1) {
		errno = -r;
		r = -1;
	}
	return s ? (int)done(s, r) : r;
}

TS_API int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	struct ts_tcp *t = tcp_ours(fd);
	int r;

	/* every option was passed to the kernel socket, which reports it;
	 * an accelerated stream's pending error is the shadow's */
	if (t && ts_tcp__getsockopt(t, fd, level, opt, val, len, &r))
		return r;
	if (!t && ts_unlikely(ts_ready && !ts_in_lib) &&
	    ts_tcp__fw_sockopt(fd, 0, level, opt, val, len, &r))
		return r;
	return REAL(getsockopt)(fd, level, opt, val, len);
}

TS_API int dup(int fd)
{
	int r = REAL(dup)(fd);

	if (r >= 0 && is_ours(fd) && !in_vfork_child())
		ts_sock__dup(fd, r);
	else if (r >= 0 && tcp_ours(fd))
		ts_tcp__dup(fd, r);
	return r;
}

static void release_target(int newfd, int oldfd)
{
	if (newfd != oldfd && ts_ready && !ts_in_lib)
		forget(newfd);
}

/* dup2/dup3 close newfd first: its shadow goes before the call, while
 * newfd still names its socket (a call running on it in another thread
 * keeps a dup of the right one). */
TS_API int dup2(int oldfd, int newfd)
{
	int r;

	if (newfd != oldfd && REAL(fcntl)(oldfd, F_GETFD) >= 0)
		release_target(newfd, oldfd);
	r = REAL(dup2)(oldfd, newfd);
	if (r >= 0 && r != oldfd && is_ours(oldfd) && !in_vfork_child())
		ts_sock__dup(oldfd, r);
	else if (r >= 0 && r != oldfd && tcp_ours(oldfd))
		ts_tcp__dup(oldfd, r);
	return r;
}

TS_API int dup3(int oldfd, int newfd, int flags)
{
	int r;

	if (newfd != oldfd && REAL(fcntl)(oldfd, F_GETFD) >= 0)
		release_target(newfd, oldfd);
	r = REAL(dup3)(oldfd, newfd, flags);
	if (r >= 0 && is_ours(oldfd) && !in_vfork_child())
		ts_sock__dup(oldfd, r);
	else if (r >= 0 && tcp_ours(oldfd))
		ts_tcp__dup(oldfd, r);
	return r;
}

/* ------------------------------------------------------------------ */
/* io_uring: the ring reads and writes kernel sockets behind the library's
 * back, so the first ring moves every UDP socket to the kernel. Caught
 * where liburing (linked dynamically) or syscall() sets one up; a program
 * with liburing linked statically is not seen. */

static void *uring_real(const char *name)
{
	void *p;

	ts_in_lib++;
	p = dlsym(RTLD_NEXT, name);
	ts_in_lib--;
	return p;
}

static void uring_seen(void)
{
	if (ts_ready && !ts_in_lib)
		ts_sock__uring_used();
}

/* Before a ring is set up: under TICKSTACK_REQUIRE=1 with a socket
 * accelerated, the negative errno that fails the set-up; else 0, the
 * ring seen (uring_seen). */
static int uring_admit(void)
{
	int e = ts_ready && !ts_in_lib ? ts_sock__uring_gate() : 0;

	if (!e)
		uring_seen();
	return e;
}

struct io_uring;
struct io_uring_params;

/* liburing's entry point (this library does not include liburing.h) */
TS_API int io_uring_setup(unsigned int entries, struct io_uring_params *p);
TS_API int io_uring_setup(unsigned int entries, struct io_uring_params *p)
{
	int e = uring_admit();

	if (e) {
		errno = -e;
		return -1;
	}
	return (int)REAL(syscall)(SYS_io_uring_setup, (long)entries, p);
}

/* liburing's entry point (this library does not include liburing.h) */
TS_API int io_uring_queue_init_params(unsigned int entries,
				      struct io_uring *ring,
				      struct io_uring_params *p);
TS_API int io_uring_queue_init_params(unsigned int entries,
				      struct io_uring *ring,
				      struct io_uring_params *p)
{
	int (*real)(unsigned int, struct io_uring *, struct io_uring_params *) =
		uring_real("io_uring_queue_init_params");
	int e = uring_admit();

	if (e)
		return e; /* liburing's convention: -errno */
	return real ? real(entries, ring, p) : -ENOSYS;
}

/* liburing's entry point (this library does not include liburing.h) */
TS_API int io_uring_queue_init(unsigned int entries, struct io_uring *ring,
			       unsigned int flags);
TS_API int io_uring_queue_init(unsigned int entries, struct io_uring *ring,
			       unsigned int flags)
{
	int (*real)(unsigned int, struct io_uring *, unsigned int) =
		uring_real("io_uring_queue_init");
	int e = uring_admit();

	if (e)
		return e; /* liburing's convention: -errno */
	return real ? real(entries, ring, flags) : -ENOSYS;
}

TS_API long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_io_uring_setup) {
		int e = uring_admit();

		if (e) {
			errno = -e;
			return -1;
		}
	}
	else if (n == SYS_close && ts_ready && !ts_in_lib)
		forget((int)a[0]);
	return REAL(syscall)(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ------------------------------------------------------------------ */
/* exec: the new image gets exactly the arguments and environment passed.
 * A forked child notes first which sockets it inherited the new image
 * will not hold (close-on-exec), so that its parent takes them back at
 * once (ts_sock__before_exec); the rest stay shared until it exits. The
 * exec* functions of libc call the system call directly, so each is
 * wrapped; the list forms are turned into the vector forms, as libc does. */

static void *exec_real(const char *name)
{
	void *p;

	ts_in_lib++;
	p = ts_real__sym(name);
	ts_in_lib--;
	return p;
}

#define TS_EXEC_WRAP(call)                                                     \
	do {                                                                   \
		int r_, e_;                                                    \
		if (!real) {                                                   \
			errno = ENOSYS; /* this libc has no such call */       \
			return -1;                                             \
		}                                                              \
		if (ts_ready && !in_vfork_child())                             \
			ts_sock__before_exec();                                \
		r_ = (call);                                                   \
		e_ = errno;                                                    \
		if (ts_ready && !in_vfork_child())                             \
			ts_sock__exec_failed();                                \
		errno = e_;                                                    \
		return r_;                                                     \
	} while (0)

typedef int (*exec_vec_fn)(const char *, char *const[]);
typedef int (*exec_env_fn)(const char *, char *const[], char *const[]);

TS_API int execve(const char *path, char *const argv[], char *const envp[])
{
	static exec_env_fn real;

	if (!real)
		real = (exec_env_fn)exec_real("execve");
	TS_EXEC_WRAP(real(path, argv, envp));
}

TS_API int execv(const char *path, char *const argv[])
{
	static exec_vec_fn real;

	if (!real)
		real = (exec_vec_fn)exec_real("execv");
	TS_EXEC_WRAP(real(path, argv));
}

TS_API int execvp(const char *file, char *const argv[])
{
	static exec_vec_fn real;

	if (!real)
		real = (exec_vec_fn)exec_real("execvp");
	TS_EXEC_WRAP(real(file, argv));
}

TS_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static exec_env_fn real;

	if (!real)
		real = (exec_env_fn)exec_real("execvpe");
	TS_EXEC_WRAP(real(file, argv, envp));
}

TS_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	static int (*real)(int, char *const[], char *const[]);

	if (!real)
		real = (int (*)(int, char *const[], char *const[]))exec_real("fexecve");
	TS_EXEC_WRAP(real(fd, argv, envp));
}

TS_API int execveat(int dirfd, const char *path, char *const argv[],
		    char *const envp[], int flags)
{
	static int (*real)(int, const char *, char *const[], char *const[], int);

	if (!real)
		real = (int (*)(int, const char *, char *const[], char *const[],
				int))exec_real("execveat");
	TS_EXEC_WRAP(real(dirfd, path, argv, envp, flags));
}

/* the arguments of execl, execlp, execle up to the terminating NULL */
#define TS_EXEC_ARGS(arg, ap, argv)                                            \
	size_t n_ = 1;                                                         \
	va_list c_;                                                            \
	va_copy(c_, ap);                                                       \
	while (va_arg(c_, char *))                                             \
		n_++;                                                          \
	va_end(c_);                                                            \
	char *argv[n_ + 1];                                                    \
	argv[0] = (char *)(arg);                                               \
	for (size_t i_ = 1; i_ <= n_; i_++)                                    \
		argv[i_] = va_arg(ap, char *)

TS_API int execl(const char *path, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	TS_EXEC_ARGS(arg, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

TS_API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	TS_EXEC_ARGS(arg, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

TS_API int execle(const char *path, const char *arg, ...)
{
	char **envp;
	va_list ap;

	va_start(ap, arg);
	TS_EXEC_ARGS(arg, ap, argv);
	envp = va_arg(ap, char **);
	va_end(ap);
	return execve(path, argv, envp);
}

/* ------------------------------------------------------------------ */
/* fork                                                                */

/* TCP streams and listeners become unix sockets at the fork (tcp.c): the
 * epoll sets that hold them follow the fd to its new file. */
static int fork_tcp_fds[256];

static void atfork_prepare(void)
{
	int i, n;

	ts_lock();
	n = ts_tcp__fork_fds(fork_tcp_fds, 256, 0);
	for (i = 0; i < n; i++)
		ts_ep__kernel_forget(fork_tcp_fds[i]);
	ts_tcp__fork_prepare();
	ts_sock__fork_prepare();
	ts_mem__fork_prepare();
}

static void atfork_parent(void)
{
	int i, n;

	ts_mem__fork_parent();
	ts_sock__fork_parent();
	ts_unlock();
	n = ts_tcp__fork_fds(fork_tcp_fds, 256, 1);
	for (i = 0; i < n; i++)
		ts_ep__kernel_adopt(fork_tcp_fds[i]);
}

static void atfork_child(void)
{
	struct tickstack_stats *old = ts_stats;

	ts_pid = getpid();
	ts_mem__fork_child();
	ts_unlock();
	ts_in_lib++;
	ts_stack__after_fork_child();
	ts_route__reset_after_fork();
	ts_stats__reinit_after_fork();
	ts_sock__after_fork_child(old, ts_stats);
	ts_ep__after_fork_child();
	ts_ctl__after_fork_child();
	ts_cap__after_fork_child();
	ts_tcp__after_fork_child();
	ts_wait__after_fork_child();
	if (old != ts_stats)
		munmap(old, sizeof(*old));
	ts_in_lib--;
}

/* ------------------------------------------------------------------ */
/* life cycle                                                          */

__attribute__((constructor)) static void ts_init(void)
{
	ts_pid = getpid();
	ts_real__resolve();
	if (ts_config__load() < 0) {
		ts_log("configuration error (see above): running without "
		       "acceleration");
		if (getenv("TICKSTACK_REQUIRE") &&
		    !strcmp(getenv("TICKSTACK_REQUIRE"), "1"))
			_exit(2);
		return;
	}
	if (ts_cfg.disabled)
		return;
	ts_stack__init();
	if (ts_sock__init_tables() < 0) {
		ts_log("out of memory: running without acceleration");
		return;
	}
	ts_stats__init();
	ts_nh__init();
	if (ts_tcp__init() < 0) {
		ts_log("configuration error (see above): running without "
		       "acceleration");
		if (ts_cfg.require)
			_exit(2);
		return;
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	__atomic_store_n(&ts_ready, 1, __ATOMIC_RELEASE);
	ts_dbg("ready, profile %s, spin %ld us", ts_cfg.profile,
	       ts_cfg.spin_usec);
}

__attribute__((destructor)) static void ts_fini(void)
{
	if (!ts_ready)
		return;
	ts_tcp__fini();
	ts_stack__fini_all();
	ts_stats__dump();
	ts_cap__fini();
	ts_stats__fini();
}
