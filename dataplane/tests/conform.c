// SPDX-License-Identifier: Apache-2.0
/* conform.c - the conformance suite's programs (tests/conform.sh runs each
 * case twice, on the kernel and through the stack, and diffs what it
 * prints).
 *
 *   conform peer PORT              the kernel peer (other namespace): for
 *                                  each request datagram on PORT it acts
 *                                  and answers the request's source
 *   conform CASE PEER-ADDR PORT    one case against the peer: prints a
 *                                  transcript of everything observable
 *
 * Requests to the peer (ASCII, one datagram each):
 *   "S count size tos delay_ms"   send count datagrams of size bytes
 *                                 ("<seq>:" then 'x'), IP_TOS tos, the
 *                                 first after delay_ms
 *   "E..."                        echo this datagram back (up to 9000 bytes)
 *   "A addr count"                send count datagrams ("a:...") to addr at
 *                                 the requester's port
 *   "C"                           send a datagram with a wrong UDP checksum
 *                                 (seq 0, through a raw socket), then a good
 *                                 one (seq 1)
 *   "M group port count size"     send count datagrams to a multicast group
 *                                 and port (conform.sh routes 224.0.0.0/4
 *                                 through the link)
 * and on TCP, the same port, the requests of the stream cases (the TCP
 * section below).
 *
 * A transcript holds only what a program can observe and what must be the
 * same on the kernel and through the stack: return values, errno names,
 * payloads (as sequence numbers and lengths), flags, revents, epoll data,
 * control messages. What legitimately differs is normalised where it is
 * printed, and says so: a timestamp prints as "now" when it is within 1 s
 * of the clock, an interface index as "ifindex of the link", the source
 * port of the peer as "peer". Exit status 0; a broken case exits 1 and
 * prints why (which also differs from nothing). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/errqueue.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/net_tstamp.h>
#include <linux/udp.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in peer;

static void fail(const char *what)
{
	printf("BROKEN: %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *en(int e)
{
	switch (e) {
	case 0: return "0";
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case ENOTCONN: return "ENOTCONN";
	case EMSGSIZE: return "EMSGSIZE";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EDESTADDRREQ: return "EDESTADDRREQ";
	default: return strerrorname_np(e) ? strerrorname_np(e) : "E?";
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int udp(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };

	if (fd < 0)
		fail("socket");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		fail("bind");
	return fd;
}

static void ask(int fd, int count, int size, int tos, int delay_ms)
{
	char req[64];
	int n = snprintf(req, sizeof(req), "S %d %d %d %d", count, size, tos, delay_ms);

	if (sendto(fd, req, (size_t)n, 0, (struct sockaddr *)&peer, sizeof(peer)) != n)
		fail("sendto request");
}

/* "<seq>:" of a peer datagram, or -1 */
static int seq_of(const char *b, ssize_t n)
{
	return n > 0 && b[0] >= '0' && b[0] <= '9' ? atoi(b) : -1;
}

static void print_cmsgs(struct msghdr *m)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			char a[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];
			char ifn[IF_NAMESIZE] = "?";

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			inet_ntop(AF_INET, &pi.ipi_addr, a, sizeof(a));
			inet_ntop(AF_INET, &pi.ipi_spec_dst, d, sizeof(d));
			if_indextoname((unsigned)pi.ipi_ifindex, ifn);
			printf("  cmsg IP_PKTINFO ifindex %s addr %s spec_dst %s\n",
			       strncmp(ifn, "tsdp", 4) ? ifn : "of the link", a, d);
		} else if (c->cmsg_level == SOL_SOCKET &&
			   (c->cmsg_type == SO_TIMESTAMPNS ||
			    c->cmsg_type == SO_TIMESTAMP)) {
			int ns = c->cmsg_type == SO_TIMESTAMPNS;
			struct timespec ts;
			struct timeval tv;
			double t;

			if (ns)
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			else
				memcpy(&tv, CMSG_DATA(c), sizeof(tv));
			t = ns ? (double)ts.tv_sec + ts.tv_nsec / 1e9 :
				 (double)tv.tv_sec + tv.tv_usec / 1e6;
			printf("  cmsg %s %s\n", ns ? "SO_TIMESTAMPNS" : "SO_TIMESTAMP",
			       t <= now_s() + 1e-6 && t > now_s() - 1 ? "now" : "WRONG");
		} else if (c->cmsg_level == SOL_SOCKET &&
			   (c->cmsg_type == SO_TIMESTAMPING_OLD ||
			    c->cmsg_type == SO_TIMESTAMPING_NEW)) {
			struct timespec t3[3];
			double t;

			memcpy(t3, CMSG_DATA(c), sizeof(t3));
			t = (double)t3[0].tv_sec + t3[0].tv_nsec / 1e9;
			printf("  cmsg %s len %zu software %s, legacy %s, hardware %s\n",
			       c->cmsg_type == SO_TIMESTAMPING_NEW ? "SO_TIMESTAMPING_NEW" :
								     "SO_TIMESTAMPING_OLD",
			       (size_t)c->cmsg_len,
			       t <= now_s() + 1e-6 && t > now_s() - 1 ? "now" : "WRONG",
			       t3[1].tv_sec || t3[1].tv_nsec ? "set" : "0",
			       t3[2].tv_sec || t3[2].tv_nsec ? "set" : "0");
		} else if (c->cmsg_level == SOL_SOCKET &&
			   (c->cmsg_type == SO_TIMESTAMPNS_NEW ||
			    c->cmsg_type == SO_TIMESTAMP_NEW)) {
			printf("  cmsg %s\n", c->cmsg_type == SO_TIMESTAMPNS_NEW ?
			       "SO_TIMESTAMPNS_NEW" : "SO_TIMESTAMP_NEW");
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			printf("  cmsg IP_TOS %u\n", *(unsigned char *)CMSG_DATA(c));
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			int ttl;

			memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
			printf("  cmsg IP_TTL %d\n", ttl);
		} else {
			printf("  cmsg level %d type %d\n", c->cmsg_level, c->cmsg_type);
		}
	}
}

/* One datagram by recvmsg with a control buffer of cblen bytes: its
 * length, sequence number, flags and control messages. */
static void recvmsg_show(int fd, char *cb, size_t cblen)
{
	char buf[2048];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = cblen };
	ssize_t n = recvmsg(fd, &m, 0);

	printf("recvmsg %zd seq %d flags 0x%x\n", n, seq_of(buf, n), m.msg_flags);
	print_cmsgs(&m);
}

/* ---- cases */

/* blocking recvmsg with every receive option and a control buffer, before
 * anything is queued (the first waits) and with datagrams queued */
static void c_cmsg(void)
{
	int fd = udp(), one = 1, i;
	char buf[2048], cb[512];

	setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one));
	ask(fd, 3, 200, 0x10, 100);
	for (i = 0; i < 3; i++)
		recvmsg_show(fd, cb, sizeof(cb));
	/* SO_TIMESTAMP instead, and a control buffer too short for all */
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){ 0 }, sizeof(int));
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof(one));
	ask(fd, 1, 64, 0, 0);
	recvmsg_show(fd, cb, sizeof(cb));
	ask(fd, 1, 64, 0, 0);
	{
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb,
				    .msg_controllen = CMSG_SPACE(sizeof(struct in_pktinfo)) };
		ssize_t n = recvmsg(fd, &m, 0);

		printf("short control: recvmsg %zd flags%s\n", n,
		       m.msg_flags & MSG_CTRUNC ? " MSG_CTRUNC" : " none");
		print_cmsgs(&m);
	}
}

/* MSG_PEEK, MSG_TRUNC (both meanings), MSG_DONTWAIT, FIONREAD-free */
static void c_flags(void)
{
	int fd = udp();
	char buf[2048];
	ssize_t n;
	struct iovec iov = { buf, 50 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	printf("empty MSG_DONTWAIT: %zd %s\n", n, n < 0 ? en(errno) : "");
	ask(fd, 2, 100, 0, 0);
	n = recv(fd, buf, 10, MSG_PEEK);
	printf("MSG_PEEK 10: %zd seq %d\n", n, seq_of(buf, n));
	n = recvmsg(fd, &m, MSG_PEEK);
	printf("recvmsg MSG_PEEK into 50: %zd flags%s\n", n,
	       m.msg_flags & MSG_TRUNC ? " MSG_TRUNC" : " none");
	n = recv(fd, buf, 10, MSG_TRUNC);
	printf("recv MSG_TRUNC into 10: %zd seq %d\n", n, seq_of(buf, n));
	n = recv(fd, buf, sizeof(buf), 0);
	printf("recv: %zd seq %d\n", n, seq_of(buf, n));
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	printf("drained MSG_DONTWAIT: %zd %s\n", n, n < 0 ? en(errno) : "");
}

/* readv/writev/sendmsg with several iovecs, through the echo */
static void c_iov(void)
{
	int fd = udp();
	char a[] = "Ehello ", b[] = "multi ", c[] = "iovec", out[64] = { 0 };
	char p1[4], p2[5], p3[64];
	struct iovec w[3] = { { a, strlen(a) }, { b, strlen(b) }, { c, strlen(c) } };
	struct iovec r[3] = { { p1, sizeof(p1) }, { p2, sizeof(p2) }, { p3, sizeof(p3) } };
	struct msghdr m = { .msg_name = &peer, .msg_namelen = sizeof(peer),
			    .msg_iov = w, .msg_iovlen = 3 };
	ssize_t n;

	if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)))
		fail("connect");
	n = writev(fd, w, 3);
	printf("writev %zd\n", n);
	memset(p3, 0, sizeof(p3));
	n = readv(fd, r, 3);
	printf("readv %zd: [%.4s] [%.5s] [%s]\n", n, p1, p2, p3);
	m.msg_name = NULL;
	m.msg_namelen = 0;
	n = sendmsg(fd, &m, 0);
	printf("sendmsg %zd\n", n);
	n = read(fd, out, sizeof(out) - 1);
	printf("read %zd: [%s]\n", n, out);
}

/* recvmmsg with MSG_WAITFORONE: every datagram once, in order (how many
 * each call returns depends on timing and is not printed) */
static void c_mmsg(void)
{
	int fd = udp(), got = 0, calls = 0, i, order = 1, last = -1;
	char bufs[8][256];
	struct iovec iov[8];
	struct mmsghdr mm[8];

	ask(fd, 20, 100, 0, 0);
	while (got < 20 && calls < 100) {
		int n;

		for (i = 0; i < 8; i++) {
			iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(fd, mm, 8, MSG_WAITFORONE, NULL);
		calls++;
		if (n < 0) {
			printf("recvmmsg: %s\n", en(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			int s = seq_of(bufs[i], (ssize_t)mm[i].msg_len);

			order &= s == last + 1 && mm[i].msg_len == 100;
			last = s;
		}
		got += n;
	}
	printf("recvmmsg: %d datagrams, %s\n", got, order ? "in order, each once" : "OUT OF ORDER");
}

/* SO_RCVTIMEO: a blocking receive gives up with EAGAIN; a negative tv_sec
 * (the kernel warns) means no wait at all, and reads back as 0 */
static void c_rcvtimeo(void)
{
	int fd = udp();
	struct timeval tv = { 0, 200000 };
	socklen_t tl = sizeof(tv);
	char buf[64];
	double t0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	t0 = now_s();
	n = recv(fd, buf, sizeof(buf), 0);
	printf("recv: %zd %s after %s\n", n, n < 0 ? en(errno) : "",
	       now_s() - t0 >= 0.15 ? "the timeout" : "TOO EARLY");
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("recv: %zd seq %d\n", n, seq_of(buf, n));
	tv.tv_sec = -1;
	tv.tv_usec = 0;
	printf("SO_RCVTIMEO -1 s: %d\n", setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	t0 = now_s();
	n = recv(fd, buf, sizeof(buf), 0);
	printf("recv: %zd %s %s\n", n, n < 0 ? en(errno) : "",
	       now_s() - t0 < 0.15 ? "at once" : "AFTER A WAIT");
	getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tl);
	printf("SO_RCVTIMEO reads back %ld s %ld us\n", (long)tv.tv_sec, (long)tv.tv_usec);
}

static void on_alarm(int s)
{
	(void)s;
}

/* a signal during a blocking receive: EINTR without SA_RESTART, the call
 * goes on with it; recv, recvfrom, recvmsg, read, poll, epoll_wait */
static void c_eintr(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 100000 } };
	struct sigaction sa = { .sa_handler = on_alarm };
	int fd = udp(), k, ep = epoll_create1(0);
	const char *names[] = { "recv", "recvfrom", "recvmsg", "read", "poll", "epoll_wait" };
	struct epoll_event ev = { .events = EPOLLIN };
	char buf[256];

	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	for (k = 0; k < 6; k++) {
		int restart;

		for (restart = 0; restart < 2; restart++) {
			struct iovec iov = { buf, sizeof(buf) };
			struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
			struct pollfd pf = { fd, POLLIN, 0 };
			ssize_t n = 0;

			sa.sa_flags = restart ? SA_RESTART : 0;
			sigaction(SIGALRM, &sa, NULL);
			/* with SA_RESTART the call resumes: a datagram 300 ms
			 * later ends it (poll and epoll_wait never restart) */
			if (restart)
				ask(fd, 1, 32, 0, 300);
			setitimer(ITIMER_REAL, &it, NULL);
			switch (k) {
			case 0: n = recv(fd, buf, sizeof(buf), 0); break;
			case 1: n = recvfrom(fd, buf, sizeof(buf), 0, NULL, NULL); break;
			case 2: n = recvmsg(fd, &m, 0); break;
			case 3: n = read(fd, buf, sizeof(buf)); break;
			case 4: n = poll(&pf, 1, 2000); break;
			case 5: n = epoll_wait(ep, &ev, 1, 2000); break;
			}
			printf("%s %s: %zd %s\n", names[k], restart ? "SA_RESTART" : "no restart",
			       n, n < 0 ? en(errno) : "");
			/* poll and epoll_wait took no datagram: the one asked
			 * for arrives later */
			if (restart && k >= 4) {
				n = recv(fd, buf, sizeof(buf), 0);
				printf("  then recv: %zd\n", n);
			}
		}
	}
}

/* connect, getpeername, connect(AF_UNSPEC), send without a destination */
static void c_connect(void)
{
	int fd = udp();
	struct sockaddr_in a;
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	socklen_t l = sizeof(a);
	char buf[64];
	int r, k;

	r = getpeername(fd, (struct sockaddr *)&a, &l);
	printf("getpeername unconnected: %d %s\n", r, r ? en(errno) : "");
	r = connect(fd, (struct sockaddr *)&peer, sizeof(peer));
	l = sizeof(a);
	memset(&a, 0, sizeof(a));
	k = getpeername(fd, (struct sockaddr *)&a, &l);
	printf("connect %d; getpeername %d port %s\n", r, k,
	       a.sin_port == peer.sin_port ? "peer" : "OTHER");
	printf("send %zd\n", send(fd, "Eping", 5, 0));
	printf("recv %zd\n", recv(fd, buf, sizeof(buf), 0));
	r = connect(fd, &un, sizeof(un));
	l = sizeof(a);
	k = getpeername(fd, (struct sockaddr *)&a, &l);
	printf("connect AF_UNSPEC %d; getpeername %d %s\n", r, k, k ? en(errno) : "");
	r = (int)send(fd, "Eping", 5, 0);
	printf("send without a destination: %d %s\n", r, r < 0 ? en(errno) : "");
	printf("sendto %zd\n", sendto(fd, "Epong", 5, 0, (struct sockaddr *)&peer, sizeof(peer)));
	printf("recv %zd\n", recv(fd, buf, sizeof(buf), 0));
}

/* epoll: data kept, EPOLLET and EPOLLONESHOT semantics, a closed fd */
static void c_epoll(void)
{
	int fd = udp(), ep = epoll_create1(0), n;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 0xfeed0001 };
	struct epoll_event out[4];
	char buf[256];

	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	ask(fd, 1, 64, 0, 0);
	n = epoll_wait(ep, out, 4, 2000);
	printf("ET: %d event(s) data 0x%llx events 0x%x\n", n,
	       n > 0 ? (unsigned long long)out[0].data.u64 : 0ull, n > 0 ? out[0].events : 0);
	n = epoll_wait(ep, out, 4, 0);
	printf("ET, unread, nothing new: %d\n", n);
	ask(fd, 1, 64, 0, 0);
	n = epoll_wait(ep, out, 4, 2000);
	printf("ET, a second datagram: %d\n", n);
	recv(fd, buf, sizeof(buf), 0);
	n = epoll_wait(ep, out, 4, 0);
	printf("ET after reading one of two: %d\n", n);
	recv(fd, buf, sizeof(buf), 0);
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = 0xfeed0002;
	epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	ask(fd, 1, 64, 0, 0);
	n = epoll_wait(ep, out, 4, 2000);
	printf("ONESHOT: %d data 0x%llx\n", n, n > 0 ? (unsigned long long)out[0].data.u64 : 0ull);
	recv(fd, buf, sizeof(buf), 0);
	ask(fd, 1, 64, 0, 0);
	n = epoll_wait(ep, out, 4, 300);
	printf("ONESHOT disarmed: %d\n", n);
	epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	n = epoll_wait(ep, out, 4, 2000);
	printf("re-armed: %d data 0x%llx\n", n, n > 0 ? (unsigned long long)out[0].data.u64 : 0ull);
	close(fd);
	n = epoll_wait(ep, out, 4, 100);
	printf("after close: %d\n", n);
}

/* SO_RCVBUF: datagrams beyond the buffer are dropped, the rest kept in
 * order, none twice (how many fit is the kernel's accounting: compared
 * as "some, not all") */
static void c_rcvbuf(void)
{
	int fd = udp(), sz = 4096, got = 0, order = 1, last = -1;
	char buf[2048];
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	ask(fd, 200, 1000, 0, 0);
	/* the peer's last datagram has left it when this echo returns */
	usleep(300000);
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		int s = seq_of(buf, n);

		order &= s > last;
		last = s;
		got++;
	}
	printf("200 sent into a %d-byte buffer: %s received, %s\n", sz,
	       got > 0 && got < 200 ? "some, not all," : got ? "ALL" : "NONE",
	       order ? "in order, each once" : "OUT OF ORDER");
}

/* A large SO_RCVBUF holds what it says: 3,000 small datagrams sent while
 * the application does not read (more than the profile's socket queue
 * length of 1,024, and than a UMEM's worth of frames the socket should
 * hold) are all there, in order, when it does; and the socket keeps
 * receiving afterwards. */
static void c_rcvbufbig(void)
{
	int fd = udp(), sz = 4 << 20, got = 0, order = 1, last = -1;
	struct timeval tmo = { .tv_sec = 5 };
	char buf[2048];
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	/* paced a little (20 ms after each 100), so that no queue on the
	 * way but the socket's decides */
	for (int k = 0; k < 30; k++) {
		ask(fd, 100, 64, 0, 0);
		usleep(20000);
	}
	/* the end: a 99-byte datagram the peer sends behind the 3,000 (a
	 * receive timeout, should it never come) */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	ask(fd, 1, 99, 0, 0);
	while ((n = recv(fd, buf, sizeof(buf), 0)) >= 0 && n != 99) {
		int s = seq_of(buf, n);

		order &= got % 100 == 0 || s > last;
		last = s;
		got++;
	}
	printf("3000 sent into a %d-byte buffer without reading: %d received, %s%s\n",
	       sz, got, order ? "in order, each once" : "OUT OF ORDER",
	       n == 99 ? "" : ", NO END MARKER");
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("then one more: %zd bytes\n", n);
}

/* fork with a datagram queued: whoever reads first gets it, once; the
 * socket keeps working in the parent after the child (which never execs)
 * exits */
static void c_fork(void)
{
	int fd = udp(), st;
	char buf[256];
	ssize_t n;
	pid_t p;

	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), MSG_PEEK);
	printf("queued: %zd\n", n);
	p = fork();
	if (p == 0) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		printf("child: %zd %s\n", n, n < 0 ? en(errno) : "");
		fflush(stdout);
		_exit(0);
	}
	waitpid(p, &st, 0);
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	printf("parent after the child: %zd %s\n", n, n < 0 ? en(errno) : "");
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("parent, a new datagram: %zd seq %d\n", n, seq_of(buf, n));
}

/* The parent's side of forkwin and forkexec: a datagram arrives while
 * the child (told by go to read it) has not used the socket yet, the
 * child exits, and the socket is the parent's alone again; settle: a
 * pause before the last datagram. */
static void fork_parent(int fd, int go, pid_t p, useconds_t settle)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	char buf[256];
	ssize_t n;
	int st = 0;

	ask(fd, 1, 64, 0, 0);
	/* the datagram has arrived: the socket both hold is readable (the
	 * parent's look consumes nothing) */
	if (poll(&pf, 1, 2000) != 1)
		fail("poll: the datagram did not arrive");
	if (write(go, "x", 1) != 1)
		fail("write");
	waitpid(p, &st, 0);
	printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	printf("parent after the child: %zd %s\n", n, n < 0 ? en(errno) : "");
	if (settle)
		usleep(settle);
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("parent, a new datagram: %zd seq %d\n", n, seq_of(buf, n));
}

/* a datagram that arrives after a fork, before the child (which never
 * execs) first uses the socket, while the parent only waits for the child:
 * the child reads it. After the child exits the socket is the parent's
 * alone again (conform.sh: accel, so its last datagram came through the
 * XSK once the stack's control thread saw the child go, within 100 ms). */
static void c_forkwin(void)
{
	int fd = udp(), go[2];
	char buf[256], c;
	ssize_t n;
	pid_t p;

	if (pipe(go))
		fail("pipe");
	fflush(stdout);
	p = fork();
	if (p == 0) {
		struct timeval tv = { .tv_sec = 2 };

		if (read(go[0], &c, 1) != 1) /* the datagram has arrived */
			_exit(1);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recv(fd, buf, sizeof(buf), 0);
		printf("child: %zd seq %d %s\n", n, seq_of(buf, n),
		       n < 0 ? en(errno) : "");
		fflush(stdout);
		_exit(0);
	}
	fork_parent(fd, go[1], p, 300000); /* three looks of the control thread */
}

/* dup2 over an accelerated fd, close_range, the fd number reused */
static void c_fds(void)
{
	int fd = udp(), fd2 = udp(), r;
	char buf[256];
	ssize_t n;

	r = dup2(fd, 100);
	close(fd);
	ask(100, 1, 64, 0, 0);
	n = recv(100, buf, sizeof(buf), 0);
	printf("dup2 then close: %d, recv on the copy %zd\n", r, n);
	r = dup2(fd2, 100); /* over the accelerated copy */
	ask(100, 1, 64, 0, 0);
	n = recv(100, buf, sizeof(buf), 0);
	printf("dup2 over it: %d, recv %zd seq %d\n", r, n, seq_of(buf, n));
	r = close_range(100, 100, 0);
	n = recv(100, buf, sizeof(buf), MSG_DONTWAIT);
	printf("close_range %d; recv %zd %s\n", r, n, n < 0 ? en(errno) : "");
	fd = udp();
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("a new socket: recv %zd seq %d\n", n, seq_of(buf, n));
}

/* blocking receives that sleep (the default profile spins briefly) while
 * another thread of the library (the TCP timer thread with TICKSTACK_TCP=1
 * drains the XSKs) may deliver their datagrams: every receive returns its
 * datagram, none waits for SO_RCVTIMEO */
static void c_wakeup(void)
{
	int fd = udp(), i, ok = 0, late = 0;
	struct timeval tv = { 2, 0 };
	char buf[256];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (i = 0; i < 400; i++) {
		ssize_t n;

		ask(fd, 1, 64, 0, i % 7);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 64)
			ok++;
		else
			late++;
	}
	printf("400 receives: %d returned their datagram, %d timed out\n", ok, late);
}

/* Up to want datagrams on fds, waiting at most 1 s after the last one:
 * how many each socket got; a sequence number out of order is printed. */
static void collect(int *fds, int nfd, int want, int *got)
{
	int total = 0, i, last[8];

	for (i = 0; i < nfd; i++) {
		got[i] = 0;
		last[i] = -1;
	}
	while (total < want) {
		struct pollfd p[8];
		int r;

		for (i = 0; i < nfd; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		r = poll(p, (nfds_t)nfd, 1000);
		if (r <= 0)
			break;
		for (i = 0; i < nfd; i++) {
			char buf[2048];
			ssize_t n;

			if (!(p[i].revents & POLLIN))
				continue;
			while ((n = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
				int sq = seq_of(buf, n);

				if (sq <= last[i])
					printf("  socket %d: seq %d after %d\n", i, sq, last[i]);
				last[i] = sq;
				got[i]++;
				total++;
			}
		}
	}
}

static int bound_udp(uint16_t port, int opt)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (fd < 0)
		fail("socket");
	if (opt && setsockopt(fd, SOL_SOCKET, opt, &one, sizeof(one)))
		fail("setsockopt");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		fail("bind");
	return fd;
}

/* SO_REUSEADDR: two sockets on one port; the kernel gives each unicast
 * datagram to one of them (the one bound last), once */
static void c_reuseaddr(void)
{
	int fds[2], got[2];

	fds[0] = bound_udp(12150, SO_REUSEADDR);
	fds[1] = bound_udp(12150, SO_REUSEADDR);
	ask(fds[0], 20, 64, 0, 0);
	collect(fds, 2, 20, got);
	printf("20 sent to the shared port: first bound %d, second bound %d\n", got[0], got[1]);
	close(fds[1]);
	ask(fds[0], 5, 64, 0, 0);
	collect(fds, 1, 5, got);
	printf("the second closed: the first gets %d of 5\n", got[0]);
}

/* fd's SO_RCVTIMEO set to ms milliseconds, or the case fails */
static void rcvtimeo_ms(int fd, long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		fail("SO_RCVTIMEO");
}

/* A thread blocked in recv takes the datagram only when the kernel would
 * give it to its socket (only then does the stack copy it out of the ring
 * straight to the waiting thread, struct ts_direct): a socket on 0.0.0.0
 * beside one bound to the local address gets none (unicast goes to the
 * more specific binding); alone it gets each; connected to another port of
 * the peer, none of the peer's; disconnected (AF_UNSPEC), each again. One
 * datagram at a time, so that each reaches a receive that is already
 * waiting or the ring with nothing before it. */
static void c_direct(void)
{
	struct sockaddr_in me, any = { .sin_family = AF_INET, .sin_port = htons(12160) };
	struct sockaddr_in other = peer;
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	socklen_t ml = sizeof(me);
	int a, b, t, one = 1, i;
	char buf[256];
	ssize_t n;

	t = socket(AF_INET, SOCK_DGRAM, 0); /* the local address toward the peer */
	if (t < 0 || connect(t, (struct sockaddr *)&peer, sizeof(peer)) ||
	    getsockname(t, (struct sockaddr *)&me, &ml))
		fail("local address");
	close(t);
	me.sin_port = any.sin_port;
	a = socket(AF_INET, SOCK_DGRAM, 0);
	b = socket(AF_INET, SOCK_DGRAM, 0);
	if (a < 0 || b < 0 ||
	    setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(b, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(a, (struct sockaddr *)&any, sizeof(any)) ||
	    bind(b, (struct sockaddr *)&me, sizeof(me)))
		fail("two sockets on one port");
	rcvtimeo_ms(a, 300); /* no datagram is due */
	for (i = 0; i < 3; i++) {
		struct pollfd p = { .fd = b, .events = POLLIN };

		ask(a, 1, 64, 0, 0);
		n = recv(a, buf, sizeof(buf), 0);
		printf("0.0.0.0 beside the local address's socket: recv %zd %s\n", n,
		       n < 0 ? en(errno) : "TAKEN");
		n = poll(&p, 1, 1000) > 0 ? recv(b, buf, sizeof(buf), MSG_DONTWAIT) : -1;
		printf("  the local address's socket: %zd seq %d\n", n, seq_of(buf, n));
	}
	close(b);
	rcvtimeo_ms(a, 2300); /* a datagram is due: time enough on a loaded machine */
	for (i = 0; i < 3; i++) {
		ask(a, 1, 64, 0, 0);
		n = recv(a, buf, sizeof(buf), 0);
		printf("alone: recv %zd seq %d\n", n, seq_of(buf, n));
	}
	other.sin_port = htons((uint16_t)(ntohs(peer.sin_port) + 1));
	printf("connect to another port of the peer: %d\n",
	       connect(a, (struct sockaddr *)&other, sizeof(other)));
	rcvtimeo_ms(a, 300);
	ask(a, 1, 64, 0, 0);
	n = recv(a, buf, sizeof(buf), 0);
	printf("connected elsewhere: recv %zd %s\n", n, n < 0 ? en(errno) : "TAKEN");
	printf("disconnect: %d\n", connect(a, &un, sizeof(un)));
	rcvtimeo_ms(a, 2300);
	ask(a, 1, 64, 0, 0);
	n = recv(a, buf, sizeof(buf), 0);
	printf("disconnected: recv %zd seq %d\n", n, seq_of(buf, n));
	close(a);
}

/* SO_REUSEPORT: the group picks one socket per flow. Which socket a flow
 * gets depends on a hash under a secret (the kernel's, or the stack's), so
 * what is printed is what holds for any secret: one flow, one socket;
 * each of 32 flows (two datagrams each, "P 32") to one socket; both
 * sockets get flows (all 32 on one: 2^-31) */
static void c_reuseport(void)
{
	int fds[2], got[2], sock_of[32], total = 0, split = 0, i, used[2] = { 0, 0 };

	fds[0] = bound_udp(12151, SO_REUSEPORT);
	fds[1] = bound_udp(12151, SO_REUSEPORT);
	ask(fds[0], 20, 64, 0, 0);
	collect(fds, 2, 20, got);
	printf("20 sent to the group: %d to one socket, %d to the other\n",
	       got[0] > got[1] ? got[0] : got[1], got[0] > got[1] ? got[1] : got[0]);
	for (i = 0; i < 32; i++)
		sock_of[i] = -1;
	if (sendto(fds[0], "P 32", 4, 0, (struct sockaddr *)&peer, sizeof(peer)) != 4)
		fail("sendto request");
	while (total < 64) {
		struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN },
				       { .fd = fds[1], .events = POLLIN } };
		char buf[256];
		ssize_t n;

		if (poll(p, 2, 1000) <= 0)
			break;
		for (i = 0; i < 2; i++)
			while ((n = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
				int f = seq_of(buf, n);

				total++;
				if (f < 0 || f >= 32)
					continue;
				if (sock_of[f] >= 0 && sock_of[f] != i)
					split++;
				sock_of[f] = i;
				used[i] = 1;
			}
	}
	printf("32 flows, 2 datagrams each: %d received, %d flows split, %s\n", total,
	       split, used[0] && used[1] ? "both sockets got flows" : "ONE SOCKET GOT EVERY FLOW");
}

/* One datagram the peer sent (ask) received: intact when it has the
 * length asked for and the peer's filler 'x' to its end. */
static void recv_asked(int fd, ssize_t want)
{
	static char buf[9100];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);

	printf("received %zd bytes, seq %d, %s\n", n, seq_of(buf, n),
	       n == want && buf[n - 1] == 'x' ? "intact" : "DAMAGED");
}

/* len bytes of fill (behind the 'E' of an echo request) sent to the peer
 * and its echo received: intact when byte-exact. */
static void echo_len(int fd, char fill, size_t len)
{
	static char buf[9100], req[9000];
	ssize_t n;

	memset(req, fill, len);
	req[0] = 'E';
	n = sendto(fd, req, len, 0, (struct sockaddr *)&peer, sizeof(peer));
	printf("sent %zd of %zu\n", n, len);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("echo %zd bytes, %s\n", n,
	       n == (ssize_t)len && !memcmp(buf, req, len) ? "intact" : "DAMAGED");
}

/* datagrams larger than the link's MTU (1500) and than a UMEM frame: they
 * travel as IP fragments both ways, intact */
static void c_bigdgram(void)
{
	int fd = udp(), k;

	ask(fd, 3, 3000, 0, 0);
	for (k = 0; k < 3; k++)
		recv_asked(fd, 3000);
	echo_len(fd, 'y', 2000);
	echo_len(fd, 'y', 9000);
}

/* A 9,000-byte MTU link: each size once both ways. What the MTU carries
 * takes the XSK (a jumbo frame as a chain of frames), one above the MTU
 * is fragmented by the kernel both ways: the stack hands such a send to
 * the kernel (counted: tx_kernel_oversize), and the program passes
 * fragments to the kernel, which reassembles them for the socket's kernel
 * fd; every byte arrives and nothing is written past a frame. */
static void c_jumbo(void)
{
	static const int sz[] = { 1472, 3000, 3800, 8972, 9000 };
	int fd = udp();
	unsigned k;

	for (k = 0; k < sizeof(sz) / sizeof(sz[0]); k++) {
		ask(fd, 1, sz[k], 0, 0);
		recv_asked(fd, sz[k]);
	}
	for (k = 0; k < sizeof(sz) / sizeof(sz[0]); k++)
		echo_len(fd, (char)('a' + k), (size_t)sz[k]);
}

/* A 9,000-byte MTU link, every datagram within the MTU: 3,000 and 8,972
 * bytes (the largest an MTU of 9,000 carries whole) both ways, twice
 * each, byte-exact. Through the stack each takes the XSK as a chain of
 * frames (AF_XDP multi-buffer), none the kernel (conform.sh checks the
 * counters, and runs it with --require: a send handed to the kernel
 * would fail). */
static void c_jumbo9000(void)
{
	static const int sz[] = { 3000, 8972 };
	int fd = udp(), k, j;

	for (k = 0; k < 2; k++) {
		ask(fd, 2, sz[k], 0, 0);
		for (j = 0; j < 2; j++)
			recv_asked(fd, sz[k]);
	}
	for (k = 0; k < 4; k++)
		echo_len(fd, (char)('a' + k), (size_t)sz[k % 2]);
}

/* More datagrams queued on 31 sockets than the stack has UMEM frames,
 * delivered while the program waits on a 32nd: the fill ring runs dry and
 * the kernel drops at the XSK, as full receive buffers drop on the kernel.
 * Once the program has read them, every socket receives again (how many
 * were dropped is each stack's own accounting and is not compared). */
static void c_starve(void)
{
	struct timeval tv = { 1, 0 };
	int fds[32], k, ok = 0, big = 1 << 20;
	char buf[256];
	ssize_t n;

	for (k = 0; k < 32; k++) {
		fds[k] = udp();
		setsockopt(fds[k], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		/* as much as the namespace's rmem_max allows (some hundred
		 * datagrams each: together more than the 8192 frames) */
		setsockopt(fds[k], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	}
	for (k = 1; k < 32; k++)
		ask(fds[k], 600, 64, 0, 0);
	/* waiting here, the stack moves the others' datagrams to their
	 * sockets as they come */
	n = recv(fds[0], buf, sizeof(buf), 0);
	printf("socket 0 while the others fill: %zd %s\n", n, n < 0 ? en(errno) : "");
	for (k = 1; k < 32; k++)
		while (recv(fds[k], buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	for (k = 0; k < 32; k++) {
		ask(fds[k], 1, 64, 0, 0);
		n = recv(fds[k], buf, sizeof(buf), 0);
		if (n == 64 && seq_of(buf, n) == 0)
			ok++;
		else
			printf("socket %d: %zd %s\n", k, n, n < 0 ? en(errno) : "");
	}
	printf("%d of 32 sockets received after draining\n", ok);
}

/* vfork + exec while a socket is open: the socket keeps working */
static void c_vfork(void)
{
	int fd = udp(), st = 0, k;
	char buf[256];
	ssize_t n;
	pid_t p = vfork();

	if (p == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(p, &st, 0);
	printf("vfork+exec child: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	ask(fd, 2, 64, 0, 0);
	for (k = 0; k < 2; k++) {
		n = recv(fd, buf, sizeof(buf), 0);
		printf("after it: %zd seq %d\n", n, seq_of(buf, n));
	}
}

static char self_exe[4096];

/* exec'd with LD_PRELOAD removed: plain kernel sockets, and it says so */
static void c_exec_child(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], buf[256];
	int mapped = 0, fd;
	ssize_t n;

	while (f && fgets(line, sizeof(line), f))
		mapped |= strstr(line, "libtickstack") != NULL;
	if (f)
		fclose(f);
	printf("child: maps the stack: %s\n", mapped ? "YES" : "no");
	fd = udp();
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("child: %zd seq %d\n", n, seq_of(buf, n));
}

static void c_exec(void)
{
	extern char **environ;
	char *env[256], pa[INET_ADDRSTRLEN], pp[8], buf[256];
	int fd = udp(), k = 0, st = 0, i;
	ssize_t n;
	pid_t p;

	for (i = 0; environ[i] && k < 255; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	env[k] = NULL;
	/* one datagram through the socket first (the path check: the
	 * parent's socket is shared with the child until it exits) */
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("parent before: %zd seq %d\n", n, seq_of(buf, n));
	inet_ntop(AF_INET, &peer.sin_addr, pa, sizeof(pa));
	snprintf(pp, sizeof(pp), "%u", ntohs(peer.sin_port));
	p = fork();
	if (p == 0) {
		char *argv[] = { "conform", "exec-child", pa, pp, NULL };

		execve(self_exe, argv, env);
		_exit(127);
	}
	waitpid(p, &st, 0);
	printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("parent: %zd seq %d\n", n, seq_of(buf, n));
}

/* fork and exec, the new image (preloaded) reading the socket it inherited
 * (fd 50) as inetd's children do, once its parent says a datagram has
 * arrived (fd 51) */
static void c_forkexec_child(void)
{
	struct timeval tv = { .tv_sec = 2 };
	char buf[256], c;
	ssize_t n;

	if (read(51, &c, 1) != 1)
		fail("read the go pipe");
	setsockopt(50, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(50, buf, sizeof(buf), 0);
	printf("exec'd child: %zd seq %d %s\n", n, seq_of(buf, n),
	       n < 0 ? en(errno) : "");
}

static void c_forkexec(void)
{
	int fd = udp(), go[2];
	char pa[INET_ADDRSTRLEN], pp[8], buf[256];
	ssize_t n;
	pid_t p;

	/* one datagram through the socket first (the path check) */
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("parent before: %zd seq %d\n", n, seq_of(buf, n));
	if (pipe(go))
		fail("pipe");
	inet_ntop(AF_INET, &peer.sin_addr, pa, sizeof(pa));
	snprintf(pp, sizeof(pp), "%u", ntohs(peer.sin_port));
	p = fork();
	if (p == 0) {
		if (dup2(fd, 50) != 50 || dup2(go[0], 51) != 51)
			_exit(126);
		execl(self_exe, "conform", "forkexec-child", pa, pp, (char *)NULL);
		_exit(127);
	}
	fork_parent(fd, go[1], p, 0);
}

/* fork and exec with a close-on-exec socket: the new image does not hold
 * it, so the parent has it alone while the child still runs (conform.sh:
 * accel, so the parent's datagram came through the XSK) */
static void c_forkcloexec_child(void)
{
	char c;

	const char *e = getenv("CONFORM_FD");

	printf("exec'd child: the socket's fd %s\n",
	       e && fcntl(atoi(e), F_GETFD) < 0 ? "closed" : "OPEN");
	if (write(51, "r", 1) != 1)
		fail("write the ready pipe");
	while (read(52, &c, 1) > 0) /* until the parent closes it */
		;
}

static void c_forkcloexec(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), st = 0;
	int ready[2], hold[2];
	struct sockaddr_in a = { .sin_family = AF_INET };
	char buf[256], c, pa[INET_ADDRSTRLEN], pp[8], fds[12];
	ssize_t n;
	pid_t p;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)))
		fail("socket, bind");
	inet_ntop(AF_INET, &peer.sin_addr, pa, sizeof(pa));
	snprintf(pp, sizeof(pp), "%u", ntohs(peer.sin_port));
	snprintf(fds, sizeof(fds), "%d", fd);
	if (pipe(ready) || pipe(hold))
		fail("pipe");
	p = fork();
	if (p == 0) {
		if (dup2(ready[1], 51) != 51 || dup2(hold[0], 52) != 52 ||
		    setenv("CONFORM_FD", fds, 1))
			_exit(126);
		close(ready[0]);
		close(ready[1]);
		close(hold[0]);
		close(hold[1]); /* EOF on 52 when the parent closes its end */
		execl(self_exe, "conform", "forkcloexec-child", pa, pp, (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) != 1)
		fail("read the ready pipe");
	usleep(300000); /* three looks of the stack's control thread */
	ask(fd, 1, 64, 0, 0);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("parent, the child running: %zd seq %d\n", n, seq_of(buf, n));
	close(hold[1]);
	waitpid(p, &st, 0);
	printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* poll and select over 64 sockets: only the one with data is ready */
static void c_manyfds(void)
{
	struct pollfd p[64];
	int fds[64], i, r, ready = 0, which = -1, maxfd = 0;
	fd_set rs;
	struct timeval tv = { 2, 0 };
	char buf[256];

	for (i = 0; i < 64; i++) {
		fds[i] = udp();
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (fds[i] > maxfd)
			maxfd = fds[i];
	}
	ask(fds[37], 1, 64, 0, 0);
	r = poll(p, 64, 2000);
	for (i = 0; i < 64; i++)
		if (p[i].revents) {
			ready++;
			which = i;
		}
	printf("poll %d: %d ready, socket %d, revents %s\n", r, ready, which,
	       which >= 0 && p[which].revents == POLLIN ? "POLLIN" : "OTHER");
	FD_ZERO(&rs);
	for (i = 0; i < 64; i++)
		FD_SET(fds[i], &rs);
	r = select(maxfd + 1, &rs, NULL, NULL, &tv);
	for (i = 0, ready = 0; i < 64; i++)
		if (FD_ISSET(fds[i], &rs)) {
			ready++;
			which = i;
		}
	printf("select %d: %d ready, socket %d\n", r, ready, which);
	printf("recv %zd\n", recv(fds[37], buf, sizeof(buf), 0));
}

static void mc_req(int fd, const char *group, int port, int count)
{
	char req[64];
	int n = snprintf(req, sizeof(req), "M %s %d %d 64", group, port, count);

	if (sendto(fd, req, (size_t)n, 0, (struct sockaddr *)&peer, sizeof(peer)) != n)
		fail("sendto request");
}

static int mc_join(int fd, const char *group, int join)
{
	struct ip_mreqn m = { .imr_ifindex = 0 };

	inet_pton(AF_INET, group, &m.imr_multiaddr);
	return setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, sizeof(m));
}

/* multicast: two groups on one port (IP_MULTICAST_ALL off: each socket its
 * own group), a membership dropped, and our own datagrams looped back
 * (IP_MULTICAST_LOOP on) or not (off) */
static void c_mcast(void)
{
	int fds[2], got[2], zero = 0, loop, i;
	struct sockaddr_in g = { .sin_family = AF_INET, .sin_port = htons(12160) };

	for (i = 0; i < 2; i++) {
		fds[i] = bound_udp(12160, SO_REUSEADDR);
		setsockopt(fds[i], IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero));
	}
	i = mc_join(fds[0], "239.1.1.1", 1);
	printf("join 239.1.1.1: %d %s\n", i, i ? en(errno) : "");
	i = mc_join(fds[1], "239.1.1.2", 1);
	printf("join 239.1.1.2: %d %s\n", i, i ? en(errno) : "");
	mc_req(fds[0], "239.1.1.1", 12160, 3);
	mc_req(fds[0], "239.1.1.2", 12160, 2);
	collect(fds, 2, 5, got);
	printf("3 to the first group, 2 to the second: %d and %d\n", got[0], got[1]);
	printf("drop the first: %d\n", mc_join(fds[0], "239.1.1.1", 0));
	mc_req(fds[0], "239.1.1.1", 12160, 2);
	mc_req(fds[0], "239.1.1.2", 12160, 1);
	collect(fds, 2, 3, got);
	printf("2 more to the first, 1 to the second: %d and %d\n", got[0], got[1]);
	inet_pton(AF_INET, "239.1.1.2", &g.sin_addr);
	for (loop = 1; loop >= 0; loop--) {
		setsockopt(fds[1], IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop));
		printf("send to our own group, loop %d: %zd\n", loop,
		       sendto(fds[1], "1:own", 5, 0, (struct sockaddr *)&g, sizeof(g)));
		collect(fds, 2, 1, got);
		printf("  looped back: %d and %d\n", got[0], got[1]);
	}
}

/* io_uring on an accelerated socket: the ring reads the kernel socket, so
 * the stack hands the process's sockets to the kernel when the first ring
 * is set up (io_uring_setup through syscall(), as liburing does), and the
 * ring's receive gets the datagram, never hangs */
/* io_uring_setup as liburing linked statically makes it: the system call
 * instruction itself, which no interposed function sees */
static int uring_setup_raw(unsigned entries, struct io_uring_params *p)
{
#ifdef __x86_64__
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"((long)SYS_io_uring_setup), "D"((long)entries), "S"(p)
			 : "rcx", "r11", "memory");
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
#else
	return (int)syscall(SYS_io_uring_setup, entries, p);
#endif
}

struct uring {
	int fd;
	struct io_uring_params p;
	struct io_uring_sqe *sqes;
	uint8_t *sq, *cq;
};

/* a ring with its queues mapped (0), or -1 with the reason printed */
static int uring_open(struct uring *u, int raw)
{
	size_t sq_sz, cq_sz;

	memset(&u->p, 0, sizeof(u->p));
	u->fd = raw ? uring_setup_raw(4, &u->p) :
		      (int)syscall(SYS_io_uring_setup, 4, &u->p);
	if (u->fd < 0) {
		printf("io_uring_setup: %s\n", en(errno));
		return -1;
	}
	sq_sz = u->p.sq_off.array + u->p.sq_entries * sizeof(unsigned);
	cq_sz = u->p.cq_off.cqes + u->p.cq_entries * sizeof(struct io_uring_cqe);
	if (u->p.features & IORING_FEAT_SINGLE_MMAP)
		sq_sz = cq_sz = sq_sz > cq_sz ? sq_sz : cq_sz;
	u->sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
		     IORING_OFF_SQ_RING);
	u->cq = (u->p.features & IORING_FEAT_SINGLE_MMAP) ?
			u->sq :
			mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			     u->fd, IORING_OFF_CQ_RING);
	u->sqes = mmap(NULL, u->p.sq_entries * sizeof(*u->sqes), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
	if (u->sq == MAP_FAILED || u->cq == MAP_FAILED || u->sqes == MAP_FAILED)
		fail("mmap io_uring");
	return 0;
}

/* ask the peer for one datagram and take it with an IORING_OP_RECV, then
 * look for anything left with a plain recv */
static void uring_recv(struct uring *u, int fd)
{
	unsigned *sq_tail = (unsigned *)(u->sq + u->p.sq_off.tail);
	unsigned *sq_array = (unsigned *)(u->sq + u->p.sq_off.array);
	unsigned sq_mask = *(unsigned *)(u->sq + u->p.sq_off.ring_mask);
	unsigned *cq_head = (unsigned *)(u->cq + u->p.cq_off.head);
	unsigned *cq_tail = (unsigned *)(u->cq + u->p.cq_off.tail);
	unsigned cq_mask = *(unsigned *)(u->cq + u->p.cq_off.ring_mask), head;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	char buf[256];
	ssize_t n;
	int r;

	ask(fd, 1, 64, 0, 0);
	sqe = &u->sqes[0];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_RECV;
	sqe->fd = fd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = sizeof(buf);
	sqe->user_data = 7;
	sq_array[*sq_tail & sq_mask] = 0;
	__atomic_store_n(sq_tail, *sq_tail + 1, __ATOMIC_RELEASE);
	r = (int)syscall(SYS_io_uring_enter, u->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	head = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
	if (r < 0 || head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
		printf("io_uring_enter: %d %s, no completion\n", r, r < 0 ? en(errno) : "");
		return;
	}
	cqe = (struct io_uring_cqe *)(u->cq + u->p.cq_off.cqes) + (head & cq_mask);
	printf("io_uring recv: res %d, user_data %llu, seq %d\n", cqe->res,
	       (unsigned long long)cqe->user_data, seq_of(buf, cqe->res));
	__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	printf("recv after it: %zd %s\n", n, n < 0 ? en(errno) : "");
}

/* a ring set up through syscall() after an accelerated bind */
static void c_uring(void)
{
	struct uring u;
	int fd = udp();

	if (!uring_open(&u, 0))
		uring_recv(&u, fd);
}

/* rings set up by the system call instruction itself (liburing linked
 * statically): one before the bind, and, in a child, one after it that
 * the stack can only find later; the child waits 2.5 s before receiving */
static void c_uringraw(void)
{
	char pa[INET_ADDRSTRLEN], pp[8];
	struct uring u;
	pid_t p;
	int fd, st = 0;

	if (uring_open(&u, 1))
		return;
	fd = udp();
	uring_recv(&u, fd);
	fflush(stdout);
	inet_ntop(AF_INET, &peer.sin_addr, pa, sizeof(pa));
	snprintf(pp, sizeof(pp), "%u", ntohs(peer.sin_port));
	p = fork();
	if (p == 0) {
		/* a fresh process (the stack preloaded again), no ring yet */
		execl(self_exe, "conform", "uringraw-late", pa, pp, (char *)NULL);
		_exit(127);
	}
	waitpid(p, &st, 0);
	printf("late ring child: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void c_uringraw_late(void)
{
	struct uring u;
	int fd = udp();

	if (uring_open(&u, 1))
		return;
	sleep(2);
	usleep(500000);
	uring_recv(&u, fd);
}

/* SO_BINDTODEVICE and SO_MARK: routing and filtering the kernel does per
 * device and mark; the stack leaves such sockets on the kernel, counted */
static void c_devmark(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), mark = 7, r, k;
	struct sockaddr_in a = { .sin_family = AF_INET };
	char ifn[IF_NAMESIZE] = "", buf[256];
	struct if_nameindex *l = if_nameindex(), *i;
	ssize_t n;

	for (i = l; i && i->if_index; i++)
		if (!strncmp(i->if_name, "tsdp", 4))
			snprintf(ifn, sizeof(ifn), "%s", i->if_name);
	if (l)
		if_freenameindex(l);
	r = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifn, (socklen_t)strlen(ifn) + 1);
	printf("SO_BINDTODEVICE the link: %d\n", r);
	r = setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	printf("SO_MARK 7: %d\n", r);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		fail("bind");
	ask(fd, 3, 64, 0, 0);
	for (k = 0; k < 3; k++) {
		n = recv(fd, buf, sizeof(buf), 0);
		printf("%zd seq %d\n", n, seq_of(buf, n));
	}
}

/* a datagram with a wrong UDP checksum is dropped (the kernel counts it
 * in InCsumErrors); the good one after it arrives */
static void c_csum(void)
{
	int fd = udp(), k;
	char req[] = "C", buf[256];
	ssize_t n;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (sendto(fd, req, 1, 0, (struct sockaddr *)&peer, sizeof(peer)) != 1)
		fail("sendto request");
	for (k = 0; k < 2 && poll(&p, 1, 1000) > 0; k++) {
		n = recv(fd, buf, sizeof(buf), 0);
		printf("received %zd seq %d\n", n, seq_of(buf, n));
	}
	printf("%d received\n", k);
}

/* a socket bound to 0.0.0.0 and connected: the kernel chose one local
 * address for it, and datagrams to the host's other address on that port
 * are not its (the peer sends two there first, then one to the chosen one) */
static void c_narrow(void)
{
	int fd = udp(), k;
	struct sockaddr_in me;
	socklen_t ml = sizeof(me);
	char buf[256], a[INET_ADDRSTRLEN];
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)))
		fail("connect");
	getsockname(fd, (struct sockaddr *)&me, &ml);
	inet_ntop(AF_INET, &me.sin_addr, a, sizeof(a));
	printf("connected from %s\n", a);
	if (send(fd, "A 198.18.12.3 2", 15, 0) != 15)
		fail("send request");
	ask(fd, 1, 64, 0, 0);
	for (k = 0; k < 3 && poll(&p, 1, 1000) > 0; k++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		printf("received %zd: %s\n", n, n > 0 && buf[0] == 'a' ? "one sent to the other address" :
		       seq_of(buf, n) == 0 ? "seq 0" : "OTHER");
	}
	printf("%d received\n", k);
}

/* ---- TCP (conform.sh runs these with TICKSTACK_TCP=1). The peer's TCP
 * side listens on the same port number; each connection is a child of
 * its own, reading request lines:
 *   "S n ms"   after ms, send n bytes ('a' + i % 26)
 *   "Z ms"     after ms, read to EOF, then answer "got N hash H" (the
 *              bytes after the line, their FNV-1a hash in hex)
 *   "K port"   connect back to the requester's address at port, send
 *              "hi", then read to EOF */

static int tcp_to_peer(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		fail("socket");
	if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)))
		fail("connect");
	return fd;
}

static void tcp_ask(int fd, const char *line)
{
	size_t n = strlen(line);

	if (write(fd, line, n) != (ssize_t)n)
		fail("write request");
}

static void nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* epoll_wait once: the count and each event's data and events */
static void ep_show(const char *what, int ep, int ms)
{
	struct epoll_event out[4];
	int n = epoll_wait(ep, out, 4, ms), i;

	printf("%s: %d%s", what, n, n < 0 ? en(errno) : "");
	for (i = 0; i < n; i++)
		printf(" [0x%llx%s%s%s%s%s]", (unsigned long long)out[i].data.u64,
		       out[i].events & EPOLLIN ? " IN" : "", out[i].events & EPOLLOUT ? " OUT" : "",
		       out[i].events & EPOLLRDHUP ? " RDHUP" : "",
		       out[i].events & EPOLLHUP ? " HUP" : "", out[i].events & EPOLLERR ? " ERR" : "");
	printf("\n");
}

/* read what is there (non-blocking): how many bytes */
static long drain(int fd)
{
	char buf[4096];
	long got = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		got += n;
	return got;
}

/* read exactly n bytes (blocking, 2 s at most each) */
static long read_n(int fd, long n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[4096];
	long got = 0;

	while (got < n && poll(&p, 1, 2000) == 1) {
		ssize_t k = recv(fd, buf, (size_t)(n - got < 4096 ? n - got : 4096), MSG_DONTWAIT);

		if (k <= 0)
			break;
		got += k;
	}
	return got;
}

static void ep_ctl_show(const char *what, int ep, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 0xe0 };
	int r = epoll_ctl(ep, op, fd, &ev);

	printf("%s: %d %s\n", what, r, r ? en(errno) : "");
}

/* EPOLLEXCLUSIVE where the kernel takes it and where it refuses it, and
 * the errors of a set that does not hold the fd */
static void ep_exclusive(int fd)
{
	int ep = epoll_create1(0), other = epoll_create1(0);

	ep_ctl_show("MOD unregistered", ep, EPOLL_CTL_MOD, fd, EPOLLIN);
	ep_ctl_show("DEL unregistered", ep, EPOLL_CTL_DEL, fd, 0);
	ep_ctl_show("ADD to a non-epoll fd", fd, EPOLL_CTL_ADD, fd, EPOLLIN);
	ep_ctl_show("ADD to a closed set", 999, EPOLL_CTL_ADD, fd, EPOLLIN);
	ep_ctl_show("bad op", ep, 99, fd, EPOLLIN);
	ep_ctl_show("ADD IN|EXCLUSIVE|ONESHOT", ep, EPOLL_CTL_ADD, fd,
		    EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT);
	ep_ctl_show("ADD IN|EXCLUSIVE|RDHUP", ep, EPOLL_CTL_ADD, fd,
		    EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDHUP);
	ep_ctl_show("ADD IN|OUT|ET|EXCLUSIVE", ep, EPOLL_CTL_ADD, fd,
		    EPOLLIN | EPOLLOUT | EPOLLET | EPOLLEXCLUSIVE);
	ep_ctl_show("ADD again", ep, EPOLL_CTL_ADD, fd, EPOLLIN);
	ep_ctl_show("MOD an exclusive member", ep, EPOLL_CTL_MOD, fd, EPOLLIN);
	ep_ctl_show("MOD with EXCLUSIVE", ep, EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLEXCLUSIVE);
	ep_show("the exclusive member", ep, 0);
	ep_ctl_show("DEL", ep, EPOLL_CTL_DEL, fd, 0);
	ep_ctl_show("ADD IN (another set)", other, EPOLL_CTL_ADD, fd, EPOLLIN);
	ep_ctl_show("MOD with EXCLUSIVE", other, EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLEXCLUSIVE);
	close(ep);
	close(other);
}

/* An event loop's sender: 4 MiB to a peer that starts reading 300 ms
 * later, writing until EAGAIN and then waiting for EPOLLOUT (edge
 * triggered) each time; what the peer got. */
static void et_sender(int fd, int ep)
{
	static char chunk[65536];
	long sent = 0, total = 4l << 20, i;
	int waits = 0, stuck = 0;
	char line[64] = "";

	memset(chunk, 'z', sizeof(chunk));
	tcp_ask(fd, "Z 300\n");
	while (sent < total) {
		size_t want = (size_t)(total - sent < 65536 ? total - sent : 65536);
		ssize_t n = send(fd, chunk, want, 0);
		struct epoll_event out[4];

		if (n > 0) {
			sent += n;
			continue;
		}
		if (n == 0 || errno != EAGAIN) {
			printf("send: %zd %s\n", n, en(errno));
			break;
		}
		waits++;
		if (epoll_wait(ep, out, 4, 3000) != 1 || !(out[0].events & EPOLLOUT)) {
			stuck = 1;
			break;
		}
	}
	shutdown(fd, SHUT_WR);
	nonblock(fd, 0);
	for (i = 0; i < (long)sizeof(line) - 1; i++)
		if (recv(fd, line + i, 1, 0) != 1 || line[i] == '\n')
			break;
	line[i] = 0;
	printf("sender: %s, %s; peer: %s\n", stuck ? "STUCK waiting for EPOLLOUT" : "all sent",
	       waits ? "waited for EPOLLOUT" : "NEVER WAITED",
	       !strncmp(line, "got ", 4) && atol(line + 4) == total ? "got all" : "NOT ALL");
}

/* Edge-triggered epoll on a connected stream, as the kernel reports it:
 * readiness on ADD, nothing while idle (no repeated EPOLLOUT), one report
 * per arrival (never again after a partial read), EPOLLIN and EPOLLOUT
 * together when data arrives, EPOLLONESHOT, EPOLLOUT after a full send
 * buffer, EPOLLEXCLUSIVE */
static void c_tcpet(void)
{
	int fd = tcp_to_peer(), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 0xfeed0003 };
	char buf[64];

	nonblock(fd, 1);
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	ep_show("ADD IN|OUT|ET", ep, 0);
	ep_show("idle", ep, 0);
	ep_show("idle, 100 ms", ep, 100);
	tcp_ask(fd, "S 100 100\n");
	ep_show("request sent, reply in 100 ms", ep, 2000);
	printf("read 10: %zd\n", recv(fd, buf, 10, 0));
	ep_show("after reading 10 of 100", ep, 0);
	tcp_ask(fd, "S 100 100\n");
	ep_show("100 more", ep, 2000);
	printf("drained %ld\n", drain(fd));
	ep_show("drained", ep, 0);
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = 0xfeed0004;
	epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	ep_show("MOD IN|ONESHOT, nothing queued", ep, 0);
	tcp_ask(fd, "S 10 0\n");
	ep_show("ONESHOT", ep, 2000);
	printf("drained %ld\n", read_n(fd, 10));
	tcp_ask(fd, "S 10 0\n");
	ep_show("ONESHOT disarmed", ep, 300);
	epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	ep_show("re-armed", ep, 2000);
	printf("drained %ld\n", read_n(fd, 10));
	ev.events = EPOLLOUT | EPOLLET;
	ev.data.u64 = 0xfeed0005;
	epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	ep_show("MOD OUT|ET", ep, 0);
	ep_show("idle", ep, 0);
	et_sender(fd, ep);
	close(ep);
	close(fd);
	ep_exclusive(tcp_to_peer());
}

/* The same on a UDP socket: EPOLLIN and EPOLLOUT together on an arrival
 * (the kernel reports what is ready once anything wakes the socket),
 * EPOLLEXCLUSIVE */
static void c_udpet(void)
{
	int fd = udp(), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 0xfeed0006 };
	char buf[256];

	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	ep_show("ADD IN|OUT|ET", ep, 0);
	ep_show("idle", ep, 0);
	ask(fd, 1, 64, 0, 300);
	ep_show("request sent", ep, 100);
	ep_show("reply in 300 ms", ep, 2000);
	ep_show("unread", ep, 0);
	printf("recv %zd\n", recv(fd, buf, sizeof(buf), 0));
	ep_show("read", ep, 0);
	close(ep);
	ep_exclusive(fd);
}

static void show_connect(const char *what, int fd, const struct sockaddr_in *to)
{
	int r = connect(fd, (const struct sockaddr *)to, sizeof(*to));

	printf("%s: %d %s\n", what, r, r ? en(errno) : "");
}

/* a non-blocking connect to, and poll until it ends (2 s at most) */
static int connect_polled(const char *what, const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	show_connect(what, fd, to);
	printf("poll: %d revents 0x%x\n", poll(&p, 1, 2000), p.revents);
	return fd;
}

/* The connect state machine as Linux has it: a non-blocking connect says
 * EINPROGRESS, another while the handshake runs EALREADY (the peer's
 * firewall drops SYNs to PORT+99: conform.sh), the first after it ended
 * 0 (or its error: ECONNREFUSED, ECONNABORTED once SO_ERROR took it),
 * then EISCONN; a blocking connect's next connect EISCONN, a listener's
 * too. */
static void c_tcpconnect(void)
{
	struct sockaddr_in dead = peer, closed = peer;
	int fd, err = 0, l;
	socklen_t el = sizeof(err);

	dead.sin_port = htons((uint16_t)(ntohs(peer.sin_port) + 99));
	closed.sin_port = htons((uint16_t)(ntohs(peer.sin_port) + 98));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	show_connect("unanswered, non-blocking", fd, &dead);
	show_connect("again, in progress", fd, &dead);
	show_connect("again", fd, &dead);
	close(fd);
	fd = connect_polled("non-blocking", &peer);
	show_connect("after it completed", fd, &peer);
	show_connect("again", fd, &peer);
	show_connect("again", fd, &peer);
	close(fd);
	fd = connect_polled("refused, non-blocking", &closed);
	show_connect("after the reset", fd, &closed);
	close(fd);
	fd = connect_polled("refused, non-blocking", &closed);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	printf("SO_ERROR %s\n", en(err));
	show_connect("after SO_ERROR", fd, &closed);
	close(fd);
	fd = tcp_to_peer();
	show_connect("blocking, connected: again", fd, &peer);
	tcp_ask(fd, "S 10 0\n");
	printf("then 10 bytes from the peer: %ld\n", read_n(fd, 10));
	close(fd);
	l = socket(AF_INET, SOCK_STREAM, 0);
	{
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(12171) };

		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4))
			fail("listen");
	}
	show_connect("a listener", l, &peer);
	close(l);
}

static void show_opt(int fd, int level, int opt, const char *name)
{
	union {
		int i;
		struct linger lg;
		struct timeval tv;
	} v;
	socklen_t len = sizeof(v);
	int r;

	memset(&v, 0, sizeof(v));
	r = getsockopt(fd, level, opt, &v, &len);
	if (r)
		printf("  %s: %s\n", name, en(errno));
	else if (len == sizeof(struct linger) && opt == SO_LINGER)
		printf("  %s: on %d, %d s\n", name, v.lg.l_onoff, v.lg.l_linger);
	else if (len == sizeof(struct timeval))
		printf("  %s: %ld.%06ld s\n", name, (long)v.tv.tv_sec, (long)v.tv.tv_usec);
	else
		printf("  %s: %d\n", name, v.i);
}

#define SHOW(fd, level, opt) show_opt(fd, level, opt, #opt)

/* getsockopt on an accepted socket: the options it inherited from its
 * listener, as Linux copies them (the peer connects back to us) */
static void c_tcpaccept(void)
{
	static const struct {
		int level, opt, v;
	} set[] = {
		{ IPPROTO_TCP, TCP_NODELAY, 1 },   { SOL_SOCKET, SO_KEEPALIVE, 1 },
		{ SOL_SOCKET, SO_RCVBUF, 65536 },  { SOL_SOCKET, SO_SNDBUF, 32768 },
		{ SOL_SOCKET, SO_PRIORITY, 3 },    { IPPROTO_IP, IP_TOS, 0x10 },
		{ IPPROTO_TCP, TCP_KEEPIDLE, 30 }, { IPPROTO_TCP, TCP_KEEPINTVL, 5 },
		{ IPPROTO_TCP, TCP_KEEPCNT, 4 },   { IPPROTO_TCP, TCP_USER_TIMEOUT, 7000 },
	};
	int l = socket(AF_INET, SOCK_STREAM, 0), c, a, one = 1;
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(12170) };
	unsigned k;
	struct linger lg = { 1, 5 };
	struct timeval tv = { 3, 0 };
	char buf[8];

	/* the kernel's run leaves its end of the connection in TIME_WAIT */
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&me, sizeof(me)))
		fail("bind");
	for (k = 0; k < sizeof(set) / sizeof(set[0]); k++)
		setsockopt(l, set[k].level, set[k].opt, &set[k].v, sizeof(int));
	setsockopt(l, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (listen(l, 4))
		fail("listen");
	c = tcp_to_peer();
	tcp_ask(c, "K 12170\n");
	a = accept(l, NULL, NULL);
	if (a < 0)
		fail("accept");
	printf("accepted; its options:\n");
	SHOW(a, IPPROTO_TCP, TCP_NODELAY);
	SHOW(a, SOL_SOCKET, SO_KEEPALIVE);
	SHOW(a, SOL_SOCKET, SO_RCVBUF);
	SHOW(a, SOL_SOCKET, SO_SNDBUF);
	SHOW(a, SOL_SOCKET, SO_LINGER);
	SHOW(a, SOL_SOCKET, SO_RCVTIMEO);
	SHOW(a, SOL_SOCKET, SO_PRIORITY);
	SHOW(a, IPPROTO_IP, IP_TOS);
	SHOW(a, IPPROTO_TCP, TCP_KEEPIDLE);
	SHOW(a, IPPROTO_TCP, TCP_KEEPINTVL);
	SHOW(a, IPPROTO_TCP, TCP_KEEPCNT);
	SHOW(a, IPPROTO_TCP, TCP_USER_TIMEOUT);
	SHOW(a, IPPROTO_TCP, TCP_QUICKACK);
	/* the connection's MSS (iperf3 sizes its datagrams by the control
	 * connection's), and a listener's */
	SHOW(a, IPPROTO_TCP, TCP_MAXSEG);
	SHOW(c, IPPROTO_TCP, TCP_MAXSEG);
	SHOW(l, IPPROTO_TCP, TCP_MAXSEG);
	SHOW(a, SOL_SOCKET, SO_ERROR);
	SHOW(a, SOL_SOCKET, SO_TYPE);
	SHOW(a, SOL_SOCKET, SO_ACCEPTCONN);
	SHOW(l, SOL_SOCKET, SO_ACCEPTCONN);
	printf("read: %zd\n", read(a, buf, 3));
	/* the inherited receive timeout: nothing more comes */
	{
		double t0 = now_s();
		ssize_t n = read(a, buf, sizeof(buf));

		printf("read: %zd %s after %s\n", n, n < 0 ? en(errno) : "",
		       now_s() - t0 >= 2.5 ? "the listener's SO_RCVTIMEO" : "TOO EARLY");
	}
	close(a);
	close(c);
	close(l);
}

/* a port this process connected from, its connection closed by us first
 * (TIME_WAIT here), listened on again with SO_REUSEADDR as a restarted
 * server does: once the old connection's TIME_WAIT is over (4.8 s in the
 * stack), the listener still gets its connections (the old connection's
 * end took the port's steering with it: the SYN went to the kernel) */
static void c_tcpholdport(void)
{
	int c = socket(AF_INET, SOCK_STREAM, 0), l, k, a, one = 1;
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(12180) };
	socklen_t ml = sizeof(me);
	char buf[8] = "";
	ssize_t n;

	setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(c, (struct sockaddr *)&me, sizeof(me)))
		fail("bind");
	if (connect(c, (struct sockaddr *)&peer, sizeof(peer)))
		fail("connect");
	getsockname(c, (struct sockaddr *)&me, &ml);
	tcp_ask(c, "S 3 0\n");
	n = recv(c, buf, 3, MSG_WAITALL);
	printf("first connection: read %zd\n", n);
	close(c);
	usleep(200000); /* the peer's FIN: TIME_WAIT */
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	printf("bind the port again: %d\n", bind(l, (struct sockaddr *)&me, sizeof(me)));
	printf("listen: %d\n", listen(l, 4));
	sleep(6);
	k = tcp_to_peer();
	tcp_ask(k, "K 12180\n");
	a = accept(l, NULL, NULL);
	if (a < 0)
		fail("accept");
	memset(buf, 0, sizeof(buf));
	n = recv(a, buf, 3, MSG_WAITALL);
	printf("accepted; read %zd: %.2s\n", n, buf);
	close(a);
	close(k);
	close(l);
}

/* a file of n bytes ('a' + i % 26 at offset i), opened for reading */
static int pattern_file(long n)
{
	char path[] = "/tmp/conform-sendfile-XXXXXX", b[4096];
	int fd = mkstemp(path);
	long i;

	if (fd < 0)
		fail("mkstemp");
	unlink(path);
	for (i = 0; i < n; i++) {
		b[i % 4096] = (char)('a' + i % 26);
		if (i % 4096 == 4095 || i == n - 1)
			if (write(fd, b, (size_t)(i % 4096 + 1)) != i % 4096 + 1)
				fail("write file");
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* end a "Z" request: shut our side, print what the peer got */
static void peer_got(int fd, long want, unsigned long hash)
{
	char line[80] = "";
	unsigned long h = 0;
	long got = -1;
	int i;

	shutdown(fd, SHUT_WR);
	nonblock(fd, 0);
	for (i = 0; i < (int)sizeof(line) - 1; i++)
		if (recv(fd, line + i, 1, 0) != 1 || line[i] == '\n')
			break;
	line[i] = 0;
	sscanf(line, "got %ld hash %lx", &got, &h);
	printf("peer got %s, %s\n", got == want ? "all" : "NOT ALL",
	       h == hash ? "intact" : "DAMAGED");
}

/* the peer's hash (FNV-1a) of the pattern from offset a to b */
static unsigned long pattern_hash(unsigned long h, long a, long b)
{
	for (; a < b; a++)
		h = (h ^ (unsigned char)('a' + a % 26)) * 16777619ul & 0xfffffffful;
	return h;
}

/* sendfile on a stream: blocking with and without an offset (which moves
 * or leaves the file position), at the end of the file, then non-blocking
 * into a peer that reads late: partial sends, EAGAIN, the offset updated,
 * EPOLLOUT|EPOLLET in between; every byte arrives once, in order */
static void c_tcpsendfile(void)
{
	long size = 4l << 20, sent = 0;
	int f = pattern_file(size), fd = tcp_to_peer(), ep = epoll_create1(0);
	int partial = 0, eagain = 0, stuck = 0;
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET };
	unsigned long h = 2166136261ul;
	off_t off = 0;
	ssize_t n;

	tcp_ask(fd, "Z 300\n");
	n = sendfile(fd, f, &off, 100000);
	printf("sendfile 100000 at 0: %zd, offset %ld, file position %ld\n", n, (long)off,
	       (long)lseek(f, 0, SEEK_CUR));
	lseek(f, 100000, SEEK_SET);
	n = sendfile(fd, f, NULL, 50000);
	printf("sendfile 50000 at the position: %zd, file position %ld\n", n,
	       (long)lseek(f, 0, SEEK_CUR));
	off = size;
	n = sendfile(fd, f, &off, 1000);
	printf("sendfile at the end: %zd, offset %ld\n", n, (long)off);
	n = sendfile(fd, f, &off, 0);
	printf("sendfile 0 bytes: %zd\n", n);
	h = pattern_hash(h, 0, 150000);
	nonblock(fd, 1);
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	epoll_wait(ep, &ev, 1, 0);
	off = 150000;
	while (off < size) {
		long want = size - off;

		n = sendfile(fd, f, &off, (size_t)want);
		if (n > 0) {
			partial |= n < want;
			sent += n;
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			eagain = 1;
			if (epoll_wait(ep, &ev, 1, 3000) != 1) {
				stuck = 1;
				break;
			}
			continue;
		}
		printf("sendfile: %zd %s\n", n, en(errno));
		break;
	}
	h = pattern_hash(h, 150000, size);
	printf("non-blocking: %s, %s, %s, offset at the end: %s\n",
	       partial ? "partial sends" : "NONE PARTIAL", eagain ? "EAGAIN" : "NO EAGAIN",
	       stuck ? "STUCK" : "EPOLLOUT each time", off == size ? "yes" : "NO");
	peer_got(fd, 150000 + sent, h);
	n = sendfile(f, fd, NULL, 10);
	printf("sendfile from a socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	close(ep);
	close(fd);
	close(f);
}

/* splice between a pipe and a stream, both ways: received bytes go into
 * the pipe, what the pipe holds goes out; an empty non-blocking socket; an
 * offset on the socket's side; two sockets, no pipe */
static void c_tcpsplice(void)
{
	int fd = tcp_to_peer(), p[2], k, ok = 1;
	unsigned long h = 2166136261ul;
	static char b[65536];
	loff_t o = 0;
	long got = 0, i;
	ssize_t n;

	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < 0)
		fail("pipe");
	tcp_ask(fd, "S 5000 0\n");
	while (got < 5000) {
		n = splice(fd, NULL, p[1], NULL, 65536, 0);
		if (n <= 0) {
			printf("splice from the socket: %zd %s\n", n, en(errno));
			break;
		}
		got += n;
	}
	n = read(p[0], b, sizeof(b));
	for (i = 0; i < n; i++)
		ok &= b[i] == 'a' + i % 26;
	printf("spliced from the socket: %ld, the pipe holds %zd, %s\n", got, n,
	       ok ? "intact" : "DAMAGED");
	/* SPLICE_F_NONBLOCK is about the pipe: a socket waits unless it is
	 * non-blocking itself */
	nonblock(fd, 1);
	n = splice(fd, NULL, p[1], NULL, 100, 0);
	printf("nothing to read, non-blocking: %zd %s\n", n, n < 0 ? en(errno) : "");
	nonblock(fd, 0);
	n = splice(fd, &o, p[1], NULL, 100, 0);
	printf("an offset on the socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	if (write(p[1], "x", 1) != 1)
		fail("write pipe");
	n = splice(p[0], NULL, fd, &o, 100, 0);
	printf("an offset on the socket (out): %zd %s\n", n, n < 0 ? en(errno) : "");
	k = tcp_to_peer();
	n = splice(k, NULL, fd, NULL, 100, 0);
	printf("socket to socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	close(k);
	if (read(p[0], b, 1) != 1)
		fail("read pipe");
	/* 200,000 bytes of the pattern into the pipe (1 MiB) */
	for (i = 0; i < 200000; i += 50000) {
		for (k = 0; k < 50000; k++)
			b[k] = (char)('a' + (i + k) % 26);
		if (write(p[1], b, 50000) != 50000)
			fail("write pipe");
	}
	tcp_ask(fd, "Z 0\n");
	got = 0;
	while (got < 200000) {
		n = splice(p[0], NULL, fd, NULL, (size_t)(200000 - got), 0);
		if (n <= 0) {
			printf("splice to the socket: %zd %s\n", n, en(errno));
			break;
		}
		got += n;
	}
	printf("spliced to the socket: %ld\n", got);
	peer_got(fd, 200000, pattern_hash(h, 0, 200000));
	close(fd);
}

/* sendfile and splice on a connected UDP socket: the file's bytes and the
 * pipe's go out as one datagram (echoed by the peer), a datagram goes into
 * a pipe (up to the length asked: the rest of it is dropped) */
static void c_udpsplice(void)
{
	int fd = udp(), f = pattern_file(3000), p[2];
	char buf[2048];
	off_t off = 0;
	ssize_t n;

	if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)) || pipe(p))
		fail("connect, pipe");
	if (pwrite(f, "E", 1, 0) != 1)
		fail("pwrite");
	n = sendfile(fd, f, &off, 1000);
	printf("sendfile 1000: %zd, offset %ld\n", n, (long)off);
	n = recv(fd, buf, sizeof(buf), 0);
	printf("echo: %zd bytes, %s\n", n, n == 1000 && buf[999] == 'a' + 999 % 26 ? "intact" : "DAMAGED");
	if (write(p[1], "Ehello, pipe", 12) != 12)
		fail("write pipe");
	n = splice(p[0], NULL, fd, NULL, 12, 0);
	printf("splice pipe to socket: %zd\n", n);
	n = splice(fd, NULL, p[1], NULL, 5, 0);
	printf("splice the echo into the pipe, 5 bytes: %zd\n", n);
	n = read(p[0], buf, sizeof(buf));
	printf("the pipe holds %zd: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	printf("then recv: %zd %s\n", n, n < 0 ? en(errno) : "");
	ask(fd, 1, 64, 0, 0);
	n = splice(fd, NULL, p[1], NULL, 2048, 0);
	printf("splice a 64-byte datagram: %zd\n", n);
	close(f);
}

/* The other calls that take a socket on a stream: sendmmsg and recvmmsg
 * (each message in turn), preadv2 and pwritev2 at offset -1 (readv and
 * writev; RWF_NOWAIT is MSG_DONTWAIT), pread, pwrite and preadv at an
 * offset (ESPIPE), copy_file_range (files only), tee and vmsplice (pipes
 * only) */
static void c_tcpcalls(void)
{
	int fd = tcp_to_peer(), f = pattern_file(100), p[2];
	char a[] = "abcdefghij", b[] = "klmnopqrst", r1[64], r2[64];
	struct iovec wi[2] = { { a, 10 }, { b, 10 } }, ri[2] = { { r1, 64 }, { r2, 64 } };
	struct mmsghdr mm[2];
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	unsigned long h = 2166136261ul;
	loff_t o = 0;
	ssize_t n;

	if (pipe(p))
		fail("pipe");
	memset(mm, 0, sizeof(mm));
	tcp_ask(fd, "S 26 0\n");
	poll(&pf, 1, 2000);
	mm[0].msg_hdr.msg_iov = &ri[0];
	mm[0].msg_hdr.msg_iovlen = 1;
	mm[1].msg_hdr.msg_iov = &ri[1];
	mm[1].msg_hdr.msg_iovlen = 1;
	n = recvmmsg(fd, mm, 2, MSG_DONTWAIT, NULL);
	printf("recvmmsg: %zd, first %u bytes\n", n, mm[0].msg_len);
	n = preadv2(fd, ri, 1, -1, RWF_NOWAIT);
	printf("preadv2 at -1, RWF_NOWAIT, nothing there: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = preadv(fd, ri, 1, 0);
	printf("preadv at 0: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = pread(fd, r1, 10, 0);
	printf("pread: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = pwrite(fd, r1, 10, 0);
	printf("pwrite: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = copy_file_range(f, NULL, fd, NULL, 10, 0);
	printf("copy_file_range to the socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = copy_file_range(fd, NULL, f, &o, 10, 0);
	printf("copy_file_range from the socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = tee(fd, p[1], 10, SPLICE_F_NONBLOCK);
	printf("tee from the socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	n = vmsplice(fd, wi, 1, 0);
	printf("vmsplice to the socket: %zd %s\n", n, n < 0 ? en(errno) : "");
	tcp_ask(fd, "Z 0\n");
	mm[0].msg_hdr.msg_iov = &wi[0];
	mm[1].msg_hdr.msg_iov = &wi[1];
	n = sendmmsg(fd, mm, 2, 0);
	printf("sendmmsg: %zd, %u and %u bytes\n", n, mm[0].msg_len, mm[1].msg_len);
	n = pwritev2(fd, wi, 2, -1, 0);
	printf("pwritev2 at -1: %zd\n", n);
	h = pattern_hash(h, 0, 20); /* abc...t twice */
	h = pattern_hash(h, 0, 20);
	peer_got(fd, 40, h);
	close(fd);
	close(f);
}

/* TCP on a 9,000-byte MTU link: the MSS follows the MTU (8,960, 8,948 a
 * segment with timestamps, as the kernel's TCP_INFO and TCP_MAXSEG say),
 * then 8 MiB each way, every byte once and in order (the segments are
 * jumbo frames: a chain of frames each through the stack) */
static void c_tcpjumbo(void)
{
	long size = 8l << 20, got = 0;
	int fd = tcp_to_peer();
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	unsigned long h = 2166136261ul, want = 2166136261ul;
	static char d[65536];
	char l[32];
	socklen_t sl = sizeof(int);
	ssize_t n;
	long k;
	int seg = 0;

	memset(&ti, 0, sizeof(ti));
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &seg, &sl);
	printf("send MSS %u, TCP_MAXSEG %d\n", ti.tcpi_snd_mss, seg);
	n = snprintf(l, sizeof(l), "S %ld 0\n", size);
	tcp_ask(fd, l);
	while (got < size && (n = recv(fd, d, sizeof(d), 0)) > 0) {
		for (k = 0; k < n; k++)
			h = (h ^ (unsigned char)d[k]) * 16777619ul & 0xfffffffful;
		got += n;
	}
	/* what the peer sends (tcp_serve): its 64 KiB buffer, filled as it
	 * fills it, over and over */
	for (k = 0; k < size; k++)
		d[k % (long)sizeof(d)] = (char)('a' + k % 26);
	for (k = 0; k < size; k++)
		want = (want ^ (unsigned char)d[k % (long)sizeof(d)]) * 16777619ul &
		       0xfffffffful;
	printf("received %ld of %ld, %s\n", got, size, h == want ? "intact" : "DAMAGED");
	close(fd);
	fd = tcp_to_peer();
	tcp_ask(fd, "Z 0\n");
	for (k = 0; k < (long)sizeof(d); k++)
		d[k] = (char)('a' + k % 26);
	h = 2166136261ul;
	for (got = 0; got < size; got += n) {
		n = send(fd, d + got % 26, sizeof(d) - 26, 0);
		if (n <= 0) {
			printf("send: %zd %s\n", n, en(errno));
			break;
		}
		h = pattern_hash(h, got, got + n);
	}
	peer_got(fd, got, h);
	close(fd);
}

/* the peer's TCP side: one child per connection, serving its requests */
static int line_in(int fd, char *b, size_t cap)
{
	size_t i;

	for (i = 0; i + 1 < cap; i++)
		if (recv(fd, b + i, 1, 0) != 1 || b[i] == '\n')
			break;
	b[i] = 0;
	return i > 0;
}

/* ---- fork (issue 39): the shapes servers take. Each child reports what
 * it saw and leaves with _exit (LeakSanitizer's exit check in a child of a
 * threaded parent reports its own doubts); the parent waits for it. */

static void child_status(pid_t p)
{
	int st = 0;

	waitpid(p, &st, 0);
	if (WIFSIGNALED(st))
		printf("child killed by signal %d\n", WTERMSIG(st));
	else
		printf("child exit %d\n", WEXITSTATUS(st));
}

/* A child that exits at once, waited for: what a fork alone changes. */
static void fork_idle(void)
{
	pid_t p;

	fflush(stdout);
	p = fork();
	if (p < 0)
		fail("fork");
	if (p == 0)
		_exit(0);
	child_status(p);
}

/* A stream listener on port (any address, SO_REUSEADDR: the kernel's run
 * leaves its end in TIME_WAIT) with a backlog of backlog. */
static int tcp_listener(int port, int backlog)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(port) };

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&me, sizeof(me)) || listen(l, backlog))
		fail("bind/listen");
	return l;
}

/* an accepted or connected stream's names and kind, as the child sees them */
static void stream_show(const char *who, int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	int v = -1;

	if (getpeername(fd, (struct sockaddr *)&a, &l))
		printf("%s: getpeername %s\n", who, en(errno));
	else
		printf("%s: peer %s\n", who,
		       a.sin_family == AF_INET && a.sin_addr.s_addr == peer.sin_addr.s_addr ?
			       "the peer's address" : "OTHER");
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l);
	printf("%s: SO_DOMAIN %s", who, v == AF_INET ? "AF_INET" : "OTHER");
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l);
	printf(", SO_TYPE %s\n", v == SOCK_STREAM ? "SOCK_STREAM" : "OTHER");
}

/* A connection inherited across fork: the parent closes its copy at once
 * (a fork-per-connection server), the child sends 100,000 bytes on it,
 * shuts it down and reads the peer's answer (count and hash). */
static void c_tcpfork(void)
{
	static char d[100000];
	int fd = tcp_to_peer(), nodelay = 1;
	char buf[128];
	size_t i, put = 0;
	ssize_t n, got = 0;
	pid_t p;

	for (i = 0; i < sizeof(d); i++)
		d[i] = (char)('a' + i % 26);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof(nodelay));
	fflush(stdout);
	p = fork();
	if (p < 0)
		fail("fork");
	if (p == 0) {
		socklen_t l = sizeof(nodelay);

		stream_show("child", fd);
		nodelay = -1;
		getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &l);
		printf("child: TCP_NODELAY %d\n", nodelay);
		tcp_ask(fd, "Z 0\n");
		while (put < sizeof(d)) {
			n = write(fd, d + put, sizeof(d) - put);
			if (n <= 0) {
				printf("child: write %s\n", en(errno));
				fflush(stdout);
				_exit(1);
			}
			put += (size_t)n;
		}
		printf("child: wrote %zu\n", put);
		if (shutdown(fd, SHUT_WR))
			printf("child: shutdown %s\n", en(errno));
		while ((n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
			got += n;
		buf[got] = 0;
		printf("child: read %s(then %zd %s)\n", buf, n, n < 0 ? en(errno) : "EOF");
		fflush(stdout);
		_exit(0);
	}
	close(fd);
	child_status(p);
}

/* A fork-per-connection server (socat TCP-LISTEN,fork; inetd's nowait):
 * the parent accepts, forks, closes its copy; the child reads what the
 * client sent. */
static void c_tcpforkconn(void)
{
	int l = tcp_listener(12171, 4), c, a;
	char buf[8];
	ssize_t n;
	pid_t p;

	c = tcp_to_peer();
	tcp_ask(c, "K 12171\n");
	a = accept(l, NULL, NULL);
	if (a < 0)
		fail("accept");
	fflush(stdout);
	p = fork();
	if (p < 0)
		fail("fork");
	if (p == 0) {
		close(l);
		stream_show("child", a);
		n = read(a, buf, 3);
		printf("child: read %zd%s%.*s", n, n < 0 ? en(errno) : " ",
		       n > 0 ? (int)n : 0, buf);
		if (n <= 0)
			printf("\n");
		close(a);
		fflush(stdout);
		_exit(0);
	}
	close(a);
	child_status(p);
	/* the listener still works in the parent */
	tcp_ask(c, "K 12171\n");
	a = accept(l, NULL, NULL);
	n = a < 0 ? -1 : read(a, buf, 3);
	printf("parent: accept %s, read %zd\n", a < 0 ? en(errno) : "ok", n);
	close(a);
	close(c);
	close(l);
}

/* A pre-fork server (nginx's workers, Apache prefork): the parent listens,
 * two children accept a connection each; the parent never accepts. */
static void c_tcpprefork(void)
{
	int l = tcp_listener(12172, 8), c, k;
	pid_t p[2];

	fflush(stdout);
	for (k = 0; k < 2; k++) {
		p[k] = fork();
		if (p[k] < 0)
			fail("fork");
		if (p[k] == 0) {
			struct sockaddr_in from, loc;
			socklen_t fl = sizeof(from), ll = sizeof(loc);
			char buf[8];
			int v = -1, a;
			ssize_t n;

			ll = sizeof(v);
			getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &ll);
			a = accept(l, (struct sockaddr *)&from, &fl);
			if (a < 0) {
				printf("worker: accept %s\n", en(errno));
				fflush(stdout);
				_exit(1);
			}
			ll = sizeof(loc);
			getsockname(a, (struct sockaddr *)&loc, &ll);
			n = read(a, buf, 3);
			printf("worker: SO_ACCEPTCONN %d, accepted from %s to port %d, read %zd\n",
			       v, from.sin_addr.s_addr == peer.sin_addr.s_addr ? "the peer" : "OTHER",
			       ntohs(loc.sin_port), n);
			close(a);
			fflush(stdout);
			_exit(0);
		}
	}
	c = tcp_to_peer();
	tcp_ask(c, "K 12172\nK 12172\n");
	{
		int st[2] = { 0, 0 };

		/* both first: a worker's line comes before either status */
		waitpid(p[0], &st[0], 0);
		waitpid(p[1], &st[1], 0);
		for (k = 0; k < 2; k++)
			printf("worker exit %d\n", WIFEXITED(st[k]) ? WEXITSTATUS(st[k]) : -1);
	}
	close(c);
	close(l);
}

/* A UDP server forking per peer (socat UDP4-RECVFROM,fork; inetd's wait
 * for dgram): the parent peeks at the first datagram and forks; the child
 * waits in select, reads it and talks to the peer. */
static void c_udpforkpeer(void)
{
	int fd = udp();
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	char buf[256];
	ssize_t n;
	pid_t p;

	ask(fd, 1, 64, 0, 0);
	if (poll(&pf, 1, 2000) != 1)
		fail("poll: the datagram did not arrive");
	n = recvfrom(fd, buf, sizeof(buf), MSG_PEEK, (struct sockaddr *)&from, &fl);
	printf("parent peeked %zd from %s\n", n,
	       from.sin_addr.s_addr == peer.sin_addr.s_addr ? "the peer" : "OTHER");
	fflush(stdout);
	p = fork();
	if (p < 0)
		fail("fork");
	if (p == 0) {
		struct timeval tv = { .tv_sec = 2 };
		fd_set r;
		int k;

		FD_ZERO(&r);
		FD_SET(fd, &r);
		k = select(fd + 1, &r, NULL, NULL, &tv);
		printf("child: select %d\n", k);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		printf("child: read %zd seq %d\n", n, seq_of(buf, n));
		ask(fd, 1, 64, 0, 0);
		pf.revents = 0;
		k = poll(&pf, 1, 2000);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		printf("child: poll %d, the answer %zd seq %d\n", k, n, seq_of(buf, n));
		fflush(stdout);
		_exit(0);
	}
	child_status(p);
}

/* A parent that forks a helper and keeps waiting in epoll on a stream and
 * a listener it registered before the fork: the set keeps reporting both. */
static void c_tcpforkepoll(void)
{
	int l = tcp_listener(12173, 4), c = tcp_to_peer(), a;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	char buf[16];

	ev.data.u64 = 1;
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	ev.data.u64 = 2;
	epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	ep_show("before the fork", ep, 0);
	fork_idle();
	tcp_ask(c, "S 5 0\n");
	ep_show("data on the stream", ep, 2000);
	printf("read %zd\n", read(c, buf, sizeof(buf)));
	ep_show("read", ep, 0);
	tcp_ask(c, "K 12173\n");
	ep_show("a connection", ep, 2000);
	a = accept(l, NULL, NULL);
	printf("accept %s, read %zd\n", a < 0 ? en(errno) : "ok", a < 0 ? -1 : read(a, buf, 3));
	ep_show("accepted", ep, 0);
	close(a);
	close(c);
	close(l);
	close(ep);
}

/* The parent keeps using its connection after forking a child that
 * never touches it (a helper that exits): 300,000 bytes each way. */
static void c_tcpforkparent(void)
{
	static char d[300000];
	int fd = tcp_to_peer();
	size_t i, put = 0;
	ssize_t n, got = 0;
	char buf[128];

	for (i = 0; i < sizeof(d); i++)
		d[i] = (char)('a' + i % 26);
	fork_idle();
	tcp_ask(fd, "S 300000 0\n");
	while (got < 300000 && (n = read(fd, d, sizeof(d))) > 0)
		got += n;
	printf("parent: read %zd\n", got);
	for (i = 0; i < sizeof(d); i++)
		d[i] = (char)('a' + i % 26);
	tcp_ask(fd, "Z 0\n");
	while (put < sizeof(d) && (n = write(fd, d + put, sizeof(d) - put)) > 0)
		put += (size_t)n;
	shutdown(fd, SHUT_WR);
	got = 0;
	while ((n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = 0;
	printf("parent: wrote %zu, the peer: %s", put, buf);
	close(fd);
}

static void tcp_serve(int c)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	static char d[65536];
	char l[64];
	int n, ms;

	getpeername(c, (struct sockaddr *)&from, &fl);
	while (line_in(c, l, sizeof(l))) {
		if (sscanf(l, "S %d %d", &n, &ms) == 2 && n >= 0) {
			usleep((useconds_t)ms * 1000);
			for (int k = 0; k < n; k++)
				d[k % (int)sizeof(d)] = (char)('a' + k % 26);
			while (n > 0) {
				ssize_t w = send(c, d, (size_t)(n < (int)sizeof(d) ? n : (int)sizeof(d)), 0);

				if (w <= 0)
					break;
				n -= (int)w;
			}
		} else if (sscanf(l, "Z %d", &ms) == 1) {
			long got = 0;
			ssize_t r;

			unsigned long h = 2166136261ul;

			usleep((useconds_t)ms * 1000);
			while ((r = recv(c, d, sizeof(d), 0)) > 0) {
				for (ssize_t k = 0; k < r; k++)
					h = (h ^ (unsigned char)d[k]) * 16777619ul & 0xfffffffful;
				got += r;
			}
			n = snprintf(l, sizeof(l), "got %ld hash %lx\n", got, h);
			send(c, l, (size_t)n, 0);
			break;
		} else if (sscanf(l, "K %d", &n) == 1) {
			int b = socket(AF_INET, SOCK_STREAM, 0);

			from.sin_port = htons((uint16_t)n);
			if (b >= 0 && !connect(b, (struct sockaddr *)&from, sizeof(from))) {
				send(b, "hi\n", 3, 0);
				while (recv(b, d, sizeof(d), 0) > 0)
					;
			}
			close(b);
		}
	}
	close(c);
}

static void tcp_peer(int port)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	signal(SIGCHLD, SIG_IGN);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 64))
		fail("peer TCP listen");
	for (;;) {
		int c = accept(l, NULL, NULL);

		if (c < 0)
			continue;
		if (fork() == 0) {
			close(l);
			tcp_serve(c);
			_exit(0);
		}
		close(c);
	}
}

/* SO_TIMESTAMPING software receive timestamps (SCM_TIMESTAMPING, taken at
 * the XSK through the stack): reported, with SO_TIMESTAMPNS beside them,
 * the _NEW types after SO_TIMESTAMPING_NEW, generated but not reported */
static void tsing_recv(int fd, const char *what)
{
	char buf[256], cb[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = sizeof(cb) };
	ssize_t n;

	ask(fd, 1, 64, 0, 0);
	n = recvmsg(fd, &m, 0);
	printf("%s: recvmsg %zd seq %d flags 0x%x\n", what, n, seq_of(buf, n), m.msg_flags);
	print_cmsgs(&m);
}

static void c_tsing(void)
{
	int fd = udp(), one = 1, r;
	int f = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;

	r = setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_OLD, &f, sizeof(f));
	printf("SO_TIMESTAMPING rx software: %d\n", r);
	tsing_recv(fd, "rx software");
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS_OLD, &one, sizeof(one));
	tsing_recv(fd, "with SO_TIMESTAMPNS");
	r = setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_NEW, &f, sizeof(f));
	printf("SO_TIMESTAMPING_NEW: %d\n", r);
	tsing_recv(fd, "new");
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS_OLD, &(int){ 0 }, sizeof(int));
	f = SOF_TIMESTAMPING_RX_SOFTWARE;
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_OLD, &f, sizeof(f));
	tsing_recv(fd, "generated, not reported");
	f = 0;
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_OLD, &f, sizeof(f));
	tsing_recv(fd, "off");
}

/* ---- timestamps (SO_TIMESTAMP, SO_TIMESTAMPNS, SO_TIMESTAMPING), the
 * cases tstamp, tcptstamp, tcptxtstamp, udptxtstamp. What is printed:
 * the options as getsockopt reads them back; each control message's level,
 * type, cmsg_len and offset in the buffer and msg_controllen (the layout);
 * whether each stamp is plausible: CLOCK_REALTIME, not before the request
 * that made the peer send (or the send), not after the call returned, and
 * not before the previous stamp of the case ("in window", "monotone"). */
static double ts_prev;

/* The kernel turns its receive stamps on for every socket of the host
 * once one asks (net_enable_timestamp), a moment later (deferred work):
 * a datagram that arrives in between has none. A socket that keeps them
 * on for the whole case makes the kernel's run deterministic. */
static int ts_keep_on(void)
{
	int k = socket(AF_INET, SOCK_DGRAM, 0), one = 1;

	setsockopt(k, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	usleep(100000);
	return k;
}

static double ts_of(const struct cmsghdr *c, int *hw_set)
{
	struct timespec ts[3];
	struct timeval tv;

	*hw_set = -1;
	if (c->cmsg_type == SO_TIMESTAMP_OLD || c->cmsg_type == SO_TIMESTAMP_NEW) {
		/* struct __kernel_sock_timeval for _NEW: 64-bit fields, as
		 * struct timeval here */
		memcpy(&tv, CMSG_DATA(c), sizeof(tv));
		return (double)tv.tv_sec + tv.tv_usec / 1e6;
	}
	memcpy(ts, CMSG_DATA(c), c->cmsg_type == SO_TIMESTAMPING_OLD ||
				 c->cmsg_type == SO_TIMESTAMPING_NEW ?
				 sizeof(ts) : sizeof(ts[0]));
	if (c->cmsg_type == SO_TIMESTAMPING_OLD || c->cmsg_type == SO_TIMESTAMPING_NEW)
		*hw_set = (ts[1].tv_sec || ts[1].tv_nsec) * 2 +
			  !!(ts[2].tv_sec || ts[2].tv_nsec);
	return (double)ts[0].tv_sec + ts[0].tv_nsec / 1e9;
}

static const char *ts_name(int level, int type)
{
	if (level == SOL_SOCKET)
		switch (type) {
		case SO_TIMESTAMP_OLD: return "SO_TIMESTAMP_OLD";
		case SO_TIMESTAMP_NEW: return "SO_TIMESTAMP_NEW";
		case SO_TIMESTAMPNS_OLD: return "SO_TIMESTAMPNS_OLD";
		case SO_TIMESTAMPNS_NEW: return "SO_TIMESTAMPNS_NEW";
		case SO_TIMESTAMPING_OLD: return "SO_TIMESTAMPING_OLD";
		case SO_TIMESTAMPING_NEW: return "SO_TIMESTAMPING_NEW";
		}
	if (level == IPPROTO_IP && type == IP_RECVERR)
		return "IP_RECVERR";
	return "other";
}

/* Every control message of m, its layout and its stamp's plausibility;
 * t0: when the datagram or bytes could first have been stamped. */
static void ts_show(struct msghdr *m, double t0)
{
	double t1 = now_s();
	struct cmsghdr *c;

	printf("  controllen %zu flags%s%s\n", (size_t)m->msg_controllen,
	       m->msg_flags & MSG_CTRUNC ? " MSG_CTRUNC" : "",
	       m->msg_flags & MSG_ERRQUEUE ? " MSG_ERRQUEUE" : "");
	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		int hw = -1;
		double t;

		printf("  cmsg at %zu level %d %s len %zu", (size_t)((char *)c - (char *)m->msg_control),
		       c->cmsg_level, ts_name(c->cmsg_level, c->cmsg_type),
		       (size_t)c->cmsg_len);
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) {
			struct sock_extended_err ee;

			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			printf(": errno %s origin %u type %u code %u info %u data %u\n",
			       en((int)ee.ee_errno), ee.ee_origin, ee.ee_type,
			       ee.ee_code, ee.ee_info, ee.ee_data);
			continue;
		}
		if (c->cmsg_level != SOL_SOCKET || !strcmp(ts_name(c->cmsg_level, c->cmsg_type), "other")) {
			printf("\n");
			continue;
		}
		if (c->cmsg_len < CMSG_LEN(c->cmsg_type == SO_TIMESTAMPING_OLD ||
					   c->cmsg_type == SO_TIMESTAMPING_NEW ?
					   3 * sizeof(struct timespec) : sizeof(struct timeval))) {
			printf(": truncated\n");
			continue;
		}
		t = ts_of(c, &hw);
		if (hw >= 0)
			printf(" (deprecated %s, hardware %s)", hw & 2 ? "set" : "0",
			       hw & 1 ? "set" : "0");
		if (t == 0) {
			printf(": zero\n");
			continue;
		}
		printf(": %s, %s\n",
		       t >= t0 - 1e-6 && t <= t1 + 1e-6 ? "in window" : "OUT OF WINDOW",
		       t >= ts_prev - 1e-6 ? "monotone" : "NOT MONOTONE");
		ts_prev = t;
	}
}

static void ts_opts(int fd)
{
	struct so_timestamping st = { 0 };
	socklen_t l = sizeof(int);
	int a = -1, b = -1, c2 = -1, d = -1;

	getsockopt(fd, SOL_SOCKET, SO_TIMESTAMP_OLD, &a, &l);
	l = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS_OLD, &b, &l);
	l = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_TIMESTAMP_NEW, &c2, &l);
	l = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS_NEW, &d, &l);
	printf("  getsockopt SO_TIMESTAMP %d SO_TIMESTAMPNS %d _NEW %d %d", a, b, c2, d);
	l = sizeof(st);
	getsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_OLD, &st, &l);
	printf(" SO_TIMESTAMPING len %u flags 0x%x", (unsigned)l, st.flags);
	memset(&st, 0, sizeof(st));
	l = sizeof(st);
	getsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_NEW, &st, &l);
	printf(" _NEW flags 0x%x\n", st.flags);
}

static void ts_udp_one(int fd, const char *what, size_t ctl)
{
	char buf[256], cb[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = ctl };
	double t0 = now_s();
	ssize_t n;

	ask(fd, 1, 64, 0, 0);
	n = recvmsg(fd, &m, 0);
	printf("%s: recvmsg %zd seq %d\n", what, n, seq_of(buf, n));
	ts_show(&m, t0);
}

static void ts_set(int fd, int opt, int v)
{
	int r = setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));

	printf("setsockopt %s 0x%x: %d %s\n", ts_name(SOL_SOCKET, opt), v, r,
	       r ? en(errno) : "");
	ts_opts(fd);
}

#ifndef SOF_TIMESTAMPING_OPT_RX_FILTER
#define SOF_TIMESTAMPING_OPT_RX_FILTER (1 << 17) /* Linux 6.12 */
#endif
#define TSF_RX (SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE)

static void c_tstamp(void)
{
	int fd = udp(), i, keep = ts_keep_on();
	char bufs[4][256], cb[4][256];
	struct iovec iov[4];
	struct mmsghdr mm[4];
	double t0;

	ts_opts(fd);
	ts_set(fd, SO_TIMESTAMP_OLD, 1);
	ts_udp_one(fd, "SO_TIMESTAMP", 512);
	ts_set(fd, SO_TIMESTAMPNS_OLD, 1);
	ts_udp_one(fd, "SO_TIMESTAMPNS", 512);
	ts_set(fd, SO_TIMESTAMPNS_NEW, 1);
	ts_udp_one(fd, "SO_TIMESTAMPNS_NEW", 512);
	ts_set(fd, SO_TIMESTAMP_NEW, 1);
	ts_udp_one(fd, "SO_TIMESTAMP_NEW", 512);
	ts_set(fd, SO_TIMESTAMP_NEW, 0);
	ts_set(fd, SO_TIMESTAMPING_OLD, TSF_RX);
	ts_udp_one(fd, "SO_TIMESTAMPING", 512);
	ts_set(fd, SO_TIMESTAMPNS_OLD, 1);
	ts_udp_one(fd, "SO_TIMESTAMPING + SO_TIMESTAMPNS", 512);
	/* room for the first message only, then for a part of the second */
	ts_udp_one(fd, "control for one", CMSG_SPACE(sizeof(struct timespec)));
	ts_udp_one(fd, "control short", CMSG_SPACE(sizeof(struct timespec)) + 24);
	ts_set(fd, SO_TIMESTAMPING_NEW, TSF_RX | SOF_TIMESTAMPING_OPT_RX_FILTER);
	ts_udp_one(fd, "SO_TIMESTAMPING_NEW", 512);
	/* recvmmsg: three datagrams queued, each with its own stamps */
	ask(fd, 3, 100, 0, 0);
	t0 = now_s();
	usleep(200000);
	for (i = 0; i < 4; i++) {
		iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
		mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1,
						 .msg_control = cb[i],
						 .msg_controllen = sizeof(cb[i]) };
	}
	t0 -= 0.2; /* sent after the request, before the recvmmsg */
	i = recvmmsg(fd, mm, 3, MSG_WAITFORONE, NULL);
	printf("recvmmsg %d\n", i);
	for (int k = 0; k < i; k++) {
		printf(" [%d] len %u seq %d\n", k, mm[k].msg_len,
		       seq_of(bufs[k], mm[k].msg_len));
		ts_show(&mm[k].msg_hdr, t0);
	}
	ts_set(fd, SO_TIMESTAMPING_OLD, 0);
	ts_set(fd, SO_TIMESTAMPNS_OLD, 0);
	ts_udp_one(fd, "off", 512);
	close(keep);
}

static void ts_tcp_read_from(int fd, const char *what, const char *req, size_t want,
			     size_t ctl, double t0)
{
	char buf[4096], cb[512];
	size_t got = 0;

	if (req)
		tcp_ask(fd, req);
	while (got < want) {
		struct iovec iov = { buf, want - got < sizeof(buf) ? want - got : sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb, .msg_controllen = ctl };
		ssize_t n = recvmsg(fd, &m, MSG_WAITALL);

		printf("%s: recvmsg %zd\n", what, n);
		if (n <= 0)
			return;
		ts_show(&m, t0);
		got += (size_t)n;
	}
}

static void ts_tcp_read(int fd, const char *what, const char *req, size_t want,
			size_t ctl)
{
	ts_tcp_read_from(fd, what, req, want, ctl, now_s());
}


static void c_tcptstamp(void)
{
	int c = tcp_to_peer(), l, a, one = 1, keep = ts_keep_on();
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(12171) };
	char hi[3];
	double t0;

	ts_opts(c);
	ts_tcp_read(c, "none", "S 100 0\n", 100, 512);
	ts_set(c, SO_TIMESTAMP_OLD, 1);
	ts_tcp_read(c, "SO_TIMESTAMP", "S 100 0\n", 100, 512);
	ts_set(c, SO_TIMESTAMPNS_OLD, 1);
	ts_tcp_read(c, "SO_TIMESTAMPNS", "S 3000 0\n", 3000, 512);
	ts_set(c, SO_TIMESTAMPNS_NEW, 1);
	ts_tcp_read(c, "SO_TIMESTAMPNS_NEW", "S 100 0\n", 100, 512);
	ts_set(c, SO_TIMESTAMPNS_NEW, 0);
	ts_set(c, SO_TIMESTAMPING_OLD, TSF_RX);
	ts_tcp_read(c, "SO_TIMESTAMPING", "S 100 0\n", 100, 512);
	ts_set(c, SO_TIMESTAMP_OLD, 1);
	ts_tcp_read(c, "SO_TIMESTAMPING + SO_TIMESTAMP", "S 100 0\n", 100, 512);
	ts_tcp_read(c, "control short", "S 100 0\n", 100, CMSG_SPACE(sizeof(struct timeval)) + 20);
	ts_set(c, SO_TIMESTAMPING_NEW, TSF_RX);
	ts_tcp_read(c, "SO_TIMESTAMPING_NEW", "S 100 0\n", 100, 512);
	/* transmit stamps refused... on the kernel accepted: not asked here
	 * (case tcptxtstamp); the error queue of a stream is empty */
	{
		char cb[128];
		struct msghdr m = { .msg_control = cb, .msg_controllen = sizeof(cb) };

		ssize_t n = recvmsg(c, &m, MSG_ERRQUEUE | MSG_DONTWAIT);

		printf("MSG_ERRQUEUE: %zd %s\n", n, en(errno));
	}
	ts_set(c, SO_TIMESTAMPING_OLD, 0);
	ts_set(c, SO_TIMESTAMP_OLD, 0);
	ts_tcp_read(c, "off", "S 100 0\n", 100, 512);
	/* an accepted stream inherits its listener's */
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&me, sizeof(me)))
		fail("bind");
	ts_set(l, SO_TIMESTAMPNS_OLD, 1);
	ts_set(l, SO_TIMESTAMPING_OLD, TSF_RX);
	if (listen(l, 4))
		fail("listen");
	t0 = now_s();
	tcp_ask(c, "K 12171\n");
	a = accept(l, NULL, NULL);
	if (a < 0)
		fail("accept");
	printf("accepted:\n");
	ts_opts(a);
	ts_tcp_read_from(a, "accepted", NULL, sizeof(hi), 512, t0);
	close(a);
	close(l);
	close(c);
	close(keep);
}

/* hardware receive stamps asked for: by default the stack hands the
 * socket to the kernel (hwtstamp); with TICKSTACK_RX_HWTSTAMP=1 it serves
 * them from the device-bound program's XDP metadata (hwtstampxdp) or,
 * where the program is not device-bound (generic XDP), with none
 * (hwtstampgen, counted). On veth, which has no hardware clock, the
 * kernel's stamp carries no hardware time (zero: the software slot only,
 * and no message at all when only hardware stamps are asked for) */
static void c_hwtstamp(void)
{
	int fd = udp(), keep = ts_keep_on();

	ts_set(fd, SO_TIMESTAMPING_OLD, SOF_TIMESTAMPING_RX_HARDWARE |
				    SOF_TIMESTAMPING_RAW_HARDWARE | TSF_RX);
	ts_udp_one(fd, "hardware and software", 512);
	ts_set(fd, SO_TIMESTAMPING_OLD, SOF_TIMESTAMPING_RX_HARDWARE |
				    SOF_TIMESTAMPING_RAW_HARDWARE);
	ts_udp_one(fd, "hardware only", 512);
	close(keep);
}

/* transmit software stamps through the error queue: with OPT_ID, with
 * OPT_TSONLY; the payload looped back, sock_extended_err */
static void ts_errq(int fd, const char *what, double t0)
{
	char buf[2048], cb[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct sockaddr_in from;
	ssize_t n;
	int i;

	for (i = 0; i < 200; i++) {
		struct pollfd p = { .fd = fd, .events = 0 };

		poll(&p, 1, 10);
		if (p.revents & POLLERR)
			break;
	}
	m.msg_name = &from;
	m.msg_namelen = sizeof(from);
	n = recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
	printf("%s: errqueue recvmsg %zd %s namelen %u\n", what, n, n < 0 ? en(errno) : "",
	       (unsigned)m.msg_namelen);
	if (n >= 0)
		ts_show(&m, t0);
}

static void c_udptxtstamp(void)
{
	int fd = udp(), f;
	double t0;
	char b[256];

	ts_set(fd, SO_TIMESTAMPING_OLD, SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
				    SOF_TIMESTAMPING_OPT_ID);
	for (int k = 0; k < 3; k++) {
		t0 = now_s();
		if (sendto(fd, "E hello", 7, 0, (struct sockaddr *)&peer, sizeof(peer)) != 7)
			fail("sendto");
		ts_errq(fd, "OPT_ID", t0);
		printf("echo: %zd\n", recv(fd, b, sizeof(b), 0));
	}
	f = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY;
	ts_set(fd, SO_TIMESTAMPING_OLD, f);
	t0 = now_s();
	sendto(fd, "E x", 3, 0, (struct sockaddr *)&peer, sizeof(peer));
	ts_errq(fd, "OPT_TSONLY", t0);
	printf("echo: %zd\n", recv(fd, b, sizeof(b), 0));
	printf("errqueue empty: ");
	{
		struct msghdr m = { 0 };
		ssize_t n = recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);

		printf("%zd %s\n", n, en(errno));
	}
}

/* the same with a datagram the kernel socket sends (a control message
 * on the send): its stamp comes from the kernel's error queue, and its
 * OPT_ID key follows the stack's (SCM_TS_OPT_ID) */
static void c_udptxtstampk(void)
{
	int fd = udp(), ttl = 9;
	char cb[CMSG_SPACE(sizeof(int))], b[256];
	struct iovec iov = { "E hello", 7 };
	struct msghdr m = { .msg_name = &peer, .msg_namelen = sizeof(peer),
			    .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	double t0;

	memset(cb, 0, sizeof(cb));
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TTL;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &ttl, sizeof(ttl));
	ts_set(fd, SO_TIMESTAMPING_OLD, SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
				    SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY);
	for (int k = 0; k < 4; k++) {
		t0 = now_s();
		if (k == 1 || k == 2)
			printf("sendmsg with IP_TTL: %zd\n", sendmsg(fd, &m, 0));
		else if (sendto(fd, "E hello", 7, 0, (struct sockaddr *)&peer, sizeof(peer)) != 7)
			fail("sendto");
		ts_errq(fd, "send", t0);
		printf("echo: %zd\n", recv(fd, b, sizeof(b), 0));
	}
}

static void c_tcptxtstamp(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	double t0;

	/* before connect (OPT_ID needs a connection on TCP): the stream
	 * stays on the kernel */
	ts_set(fd, SO_TIMESTAMPING_OLD, SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
				    SOF_TIMESTAMPING_OPT_TSONLY);
	if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)))
		fail("connect");
	ts_set(fd, SO_TIMESTAMPING_OLD, SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
				    SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY);
	t0 = now_s();
	tcp_ask(fd, "S 10 0\n");
	ts_errq(fd, "first write", t0);
	t0 = now_s();
	tcp_ask(fd, "S 10 0\n");
	ts_errq(fd, "second write (OPT_ID: its last byte)", t0);
	ts_tcp_read(fd, "data", NULL, 20, 512);
	close(fd);
}

/* ---- TICKSTACK_REQUIRE=1 (the stack's run has it, the kernel's not):
 * each call that would move a socket, or a datagram, to the kernel fails
 * there with EOPNOTSUPP and one line on stderr naming the reason and the
 * option; on the kernel the call succeeds. Either prints "as required",
 * so the transcripts are equal only when both happened. stderr is caught
 * around each call (the library's line is checked, not printed). */
static int req_saved = -1;
static char req_path[64];

static int req_on(void)
{
	const char *v = getenv("TICKSTACK_REQUIRE");

	return v && !strcmp(v, "1");
}

static void req_begin(void)
{
	int fd;

	fflush(stderr);
	snprintf(req_path, sizeof(req_path), "/tmp/conform-req.%d", (int)getpid());
	fd = open(req_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		fail("open the stderr file");
	req_saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* r: the call's result, ok_kernel: it succeeded; reason and name: what the
 * library's line must say */
static void req_end(const char *what, int ok_kernel, const char *reason,
		    const char *name)
{
	int e = errno, fd, ok;
	char log[2048] = "";
	ssize_t n;

	fflush(stderr);
	dup2(req_saved, 2);
	close(req_saved);
	fd = open(req_path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, log, sizeof(log) - 1) : -1;
	log[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	unlink(req_path);
	if (req_on())
		ok = !ok_kernel && e == EOPNOTSUPP &&
		     strstr(log, "TICKSTACK_REQUIRE=1") && strstr(log, reason) &&
		     strstr(log, name);
	else
		ok = ok_kernel;
	printf("%s: %s\n", what, ok ? "as required" :
	       req_on() ? "NOT REFUSED, or refused without naming the reason" :
			  "failed on the kernel");
	if (!ok)
		printf("  errno %s, stderr: %s\n", en(e), log);
}

static void req_opt(int level, int opt, const void *val, socklen_t len,
		    const char *name)
{
	int fd = udp(), r;

	req_begin();
	r = setsockopt(fd, level, opt, val, len);
	req_end(name, r == 0, "option", name);
	close(fd);
}

static int link_ifindex(char *name)
{
	struct if_nameindex *l = if_nameindex(), *i;
	int idx = 0;

	for (i = l; i && i->if_index; i++)
		if (!strncmp(i->if_name, "tsdp", 4)) {
			idx = (int)i->if_index;
			if (name)
				snprintf(name, IF_NAMESIZE, "%s", i->if_name);
		}
	if (l)
		if_freenameindex(l);
	return idx;
}

#define REQ_INT(level, opt, v)                                                \
	do {                                                                  \
		int iv_ = (v);                                                \
		req_opt(level, opt, &iv_, sizeof(iv_), #opt);                 \
	} while (0)

/* every row of the option table that moves a socket to the kernel */
static void c_require(void)
{
	struct sock_filter all = BPF_STMT(BPF_RET | BPF_K, 0xffff);
	struct sock_fprog prog = { .len = 1, .filter = &all };
	char ifn[IF_NAMESIZE] = "";
	int idx = link_ifindex(ifn), fd, r;
	unsigned char ipopts[4] = { 1, 1, 1, 0 }; /* NOPs, end */
	struct ip_mreq_source ms = { .imr_multiaddr.s_addr = inet_addr("239.198.18.7"),
				     .imr_interface.s_addr = inet_addr("198.18.12.1"),
				     .imr_sourceaddr = peer.sin_addr };
	struct ip_mreq mr = { .imr_multiaddr.s_addr = inet_addr("239.198.18.7"),
			      .imr_interface.s_addr = inet_addr("198.18.12.1") };
	struct group_req gr = { .gr_interface = (uint32_t)idx };
	struct group_source_req gs = { .gsr_interface = (uint32_t)idx };
	struct sockaddr_in *g = (struct sockaddr_in *)&gr.gr_group;

	/* SO_REUSEPORT is served; a group's own program is the kernel's */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &(int){ 1 }, sizeof(int)) ||
	    bind(fd, (struct sockaddr *)&(struct sockaddr_in){ .sin_family = AF_INET },
		 sizeof(struct sockaddr_in)))
		fail("SO_REUSEPORT socket");
	all = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	req_begin();
	r = setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog));
	req_end("SO_ATTACH_REUSEPORT_CBPF", r == 0, "option", "SO_ATTACH_REUSEPORT_CBPF");
	close(fd);
	all = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffff);
	req_opt(SOL_SOCKET, SO_BINDTODEVICE, ifn, (socklen_t)strlen(ifn) + 1,
		"SO_BINDTODEVICE");
	REQ_INT(SOL_SOCKET, SO_BINDTOIFINDEX, idx);
	REQ_INT(SOL_SOCKET, SO_MARK, 7);
	REQ_INT(SOL_SOCKET, SO_TIMESTAMPING_OLD, /* scheduler stamps: the kernel's */
		SOF_TIMESTAMPING_TX_SCHED | SOF_TIMESTAMPING_SOFTWARE);
	REQ_INT(SOL_SOCKET, SO_TIMESTAMPING_OLD, /* hardware stamps: the kernel's */
		SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE);
	REQ_INT(SOL_SOCKET, SO_RXQ_OVFL, 1);
	REQ_INT(SOL_SOCKET, SO_RCVMARK, 1);
	/* (SO_PASSCRED and SO_PASSSEC: this kernel refuses them on UDP) */
	req_opt(SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog), "SO_ATTACH_FILTER");
	REQ_INT(IPPROTO_IP, IP_RECVERR, 1);
	REQ_INT(IPPROTO_IP, IP_RECVORIGDSTADDR, 1);
	REQ_INT(IPPROTO_IP, IP_RECVOPTS, 1);
	REQ_INT(IPPROTO_IP, IP_RETOPTS, 1);
	REQ_INT(IPPROTO_IP, IP_PASSSEC, 1);
	REQ_INT(IPPROTO_IP, IP_CHECKSUM, 1);
	REQ_INT(IPPROTO_IP, IP_RECVFRAGSIZE, 1);
	REQ_INT(IPPROTO_IP, IP_TRANSPARENT, 1);
	REQ_INT(IPPROTO_IP, IP_UNICAST_IF, (int)htonl((uint32_t)idx));
	req_opt(IPPROTO_IP, IP_OPTIONS, ipopts, sizeof(ipopts), "IP_OPTIONS");
	REQ_INT(IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DONT);
	REQ_INT(IPPROTO_UDP, UDP_CORK, 1);
	REQ_INT(IPPROTO_UDP, UDP_SEGMENT, 1000);
	REQ_INT(IPPROTO_UDP, UDP_GRO, 1);
	/* source filters */
	req_opt(IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, &ms, sizeof(ms),
		"IP_ADD_SOURCE_MEMBERSHIP");
	g->sin_family = AF_INET;
	g->sin_addr.s_addr = inet_addr("239.198.18.8");
	req_opt(IPPROTO_IP, MCAST_JOIN_GROUP, &gr, sizeof(gr), "MCAST_JOIN_GROUP");
	memcpy(&gs.gsr_group, &gr.gr_group, sizeof(gr.gr_group));
	memcpy(&gs.gsr_source, &peer, sizeof(peer));
	req_opt(IPPROTO_IP, MCAST_JOIN_SOURCE_GROUP, &gs, sizeof(gs),
		"MCAST_JOIN_SOURCE_GROUP");
	fd = udp();
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		fail("IP_ADD_MEMBERSHIP");
	req_begin();
	r = setsockopt(fd, IPPROTO_IP, IP_BLOCK_SOURCE, &ms, sizeof(ms));
	req_end("IP_BLOCK_SOURCE", r == 0, "shape", "IP_BLOCK_SOURCE");
	close(fd);
}

static void req_send(int fd, const void *buf, size_t len, int flags,
		     const struct sockaddr_in *to, const char *what,
		     const char *reason)
{
	ssize_t n;

	req_begin();
	n = sendto(fd, buf, len, flags, (const struct sockaddr *)to, sizeof(*to));
	req_end(what, n == (ssize_t)len, reason, reason);
}

/* an io_uring set up (as liburing does, through syscall()) while a socket
 * is accelerated: the ring would read the kernel socket, so under
 * TICKSTACK_REQUIRE=1 the set-up fails, naming the reason */
static void req_uring(void)
{
	struct io_uring_params p;
	int r;

	memset(&p, 0, sizeof(p));
	req_begin();
	r = (int)syscall(SYS_io_uring_setup, 4, &p);
	req_end("io_uring_setup with an accelerated socket open", r >= 0,
		"io_uring", "io_uring");
	if (r >= 0)
		close(r);
}

/* the datagrams the kernel would carry: multicast loopback, a local
 * destination, a size beyond the link, send flags */
static void c_requiresend(void)
{
	static char big[3000];
	struct sockaddr_in mc = { .sin_family = AF_INET, .sin_port = htons(12160),
				  .sin_addr.s_addr = inet_addr("239.198.18.9") };
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(12161),
				  .sin_addr.s_addr = inet_addr("198.18.12.1") };
	char req[] = "E hello";
	int fd = udp();

	req_send(fd, req, sizeof(req), 0, &mc, "multicast send, IP_MULTICAST_LOOP on",
		 "multicast loopback");
	req_send(fd, req, sizeof(req), 0, &me, "send to our own address",
		 "local destination");
	memset(big, 'E', sizeof(big));
	req_send(fd, big, sizeof(big), 0, &peer, "3000 bytes over a 1500-byte link",
		 "size");
	req_send(fd, req, sizeof(req), MSG_MORE, &peer, "send with MSG_MORE", "shape");
	req_uring();
	close(fd);
}

/* A second process finds the interface's queue taken (this one holds it):
 * its bind fails under TICKSTACK_REQUIRE=1, naming the reason */
static void c_queue_child(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), r;
	struct sockaddr_in a = { .sin_family = AF_INET };

	req_begin();
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	req_end("second process: bind", r == 0, "queue taken", "queue");
}

static void c_queue(void)
{
	char pa[INET_ADDRSTRLEN], pp[8], buf[256];
	int fd = udp(), st = 0;
	ssize_t n;
	pid_t p;

	ask(fd, 1, 64, 0, 0); /* this process's XSK holds the queue */
	n = recv(fd, buf, sizeof(buf), 0);
	printf("first process: %zd seq %d\n", n, seq_of(buf, n));
	inet_ntop(AF_INET, &peer.sin_addr, pa, sizeof(pa));
	snprintf(pp, sizeof(pp), "%u", ntohs(peer.sin_port));
	{
		/* posix_spawn: no fork handler runs, our socket stays ours */
		char *argv[] = { "conform", "queue-child", pa, pp, NULL };
		extern char **environ;

		if (posix_spawn(&p, self_exe, NULL, NULL, argv, environ))
			fail("posix_spawn");
	}
	waitpid(p, &st, 0);
	printf("second process exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cases[] = {
		{ "cmsg", c_cmsg },       { "flags", c_flags },
		{ "iov", c_iov },         { "mmsg", c_mmsg },
		{ "rcvtimeo", c_rcvtimeo }, { "eintr", c_eintr },
		{ "connect", c_connect }, { "epoll", c_epoll },
		{ "rcvbuf", c_rcvbuf },   { "rcvbufbig", c_rcvbufbig },
		{ "fork", c_fork }, { "forkwin", c_forkwin },
		{ "fds", c_fds },         { "wakeup", c_wakeup },
		{ "reuseaddr", c_reuseaddr }, { "reuseport", c_reuseport },
		{ "direct", c_direct },
		{ "bigdgram", c_bigdgram }, { "vfork", c_vfork },
		{ "exec", c_exec },       { "exec-child", c_exec_child },
		{ "forkexec", c_forkexec }, { "forkexec-child", c_forkexec_child },
		{ "forkcloexec", c_forkcloexec },
		{ "forkcloexec-child", c_forkcloexec_child },
		{ "manyfds", c_manyfds }, { "mcast", c_mcast },
		{ "uring", c_uring },     { "devmark", c_devmark },
		{ "csum", c_csum },       { "narrow", c_narrow },
		{ "jumbo", c_jumbo },     { "uringraw", c_uringraw },
		{ "jumbo9000", c_jumbo9000 }, { "tcpjumbo", c_tcpjumbo },
		{ "starve", c_starve },
		{ "tcpet", c_tcpet },     { "udpet", c_udpet },
		{ "tcpconnect", c_tcpconnect }, { "tcpaccept", c_tcpaccept },
		{ "tcpholdport", c_tcpholdport },
		{ "tcpsendfile", c_tcpsendfile }, { "tcpsplice", c_tcpsplice },
		{ "udpsplice", c_udpsplice }, { "tcpcalls", c_tcpcalls },
		{ "tcpfork", c_tcpfork }, { "tcpforkconn", c_tcpforkconn },
		{ "tcpprefork", c_tcpprefork }, { "udpforkpeer", c_udpforkpeer },
		{ "tcpforkepoll", c_tcpforkepoll }, { "tcpforkparent", c_tcpforkparent },
		{ "uringraw-late", c_uringraw_late },
		{ "tsing", c_tsing },
		{ "tstamp", c_tstamp },   { "tcptstamp", c_tcptstamp },
		{ "udptxtstamp", c_udptxtstamp }, { "tcptxtstamp", c_tcptxtstamp },
		{ "hwtstamp", c_hwtstamp }, { "udptxtstampk", c_udptxtstampk },
		{ "hwtstampxdp", c_hwtstamp }, { "hwtstampgen", c_hwtstamp },
		{ "require", c_require }, { "requiresend", c_requiresend },
		{ "queue", c_queue },     { "queue-child", c_queue_child },
	};
	unsigned i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) < 0)
		fail("readlink /proc/self/exe");
	if (argc == 3 && !strcmp(argv[1], "peer")) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons((uint16_t)atoi(argv[2])) };
		static char b[65536];

		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)))
			fail("peer bind");
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			tcp_peer(atoi(argv[2]));
		}
		for (;;) {
			struct sockaddr_in src;
			socklen_t sl = sizeof(src);
			ssize_t n = recvfrom(fd, b, sizeof(b) - 1, 0, (struct sockaddr *)&src, &sl);
			int count, size, tos, delay, k;

			if (n <= 0)
				continue;
			b[n] = 0;
			if (b[0] == 'E') {
				sendto(fd, b, (size_t)n, 0, (struct sockaddr *)&src, sl);
				continue;
			}
			if (b[0] == 'A') {
				char ad[INET_ADDRSTRLEN];
				struct sockaddr_in to = src;

				if (sscanf(b, "A %15s %d", ad, &count) != 2 ||
				    inet_pton(AF_INET, ad, &to.sin_addr) != 1)
					continue;
				for (k = 0; k < count; k++)
					sendto(fd, "a:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 64, 0,
					       (struct sockaddr *)&to, sizeof(to));
				continue;
			}
			if (b[0] == 'P' && sscanf(b, "P %d", &count) == 1) {
				/* count flows: two datagrams ("<k>:") from each of
				 * count fresh sockets (source ports) */
				for (k = 0; k < count && k < 1000; k++) {
					int f = socket(AF_INET, SOCK_DGRAM, 0);
					char d[64];
					int dl = snprintf(d, sizeof(d), "%d:flow", k);

					sendto(f, d, (size_t)dl, 0, (struct sockaddr *)&src, sl);
					sendto(f, d, (size_t)dl, 0, (struct sockaddr *)&src, sl);
					close(f);
				}
				continue;
			}
			if (b[0] == 'C') {
				/* UDP header and payload through a raw socket: the
				 * kernel adds the IP header, the checksum is ours */
				int raw = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
				struct sockaddr_in me;
				socklen_t ml = sizeof(me);
				char d[8 + 64];
				uint16_t v;

				getsockname(fd, (struct sockaddr *)&me, &ml);
				memset(d, 'x', sizeof(d));
				v = me.sin_port;
				memcpy(d, &v, 2);
				v = src.sin_port;
				memcpy(d + 2, &v, 2);
				v = htons((uint16_t)sizeof(d));
				memcpy(d + 4, &v, 2);
				v = htons(0x1234); /* wrong */
				memcpy(d + 6, &v, 2);
				snprintf(d + 8, 12, "0:");
				d[10] = 'x';
				if (raw >= 0) {
					sendto(raw, d, sizeof(d), 0, (struct sockaddr *)&src, sl);
					close(raw);
				}
				memset(d, 'x', 64);
				snprintf(d, 12, "1:");
				d[2] = 'x';
				sendto(fd, d, 64, 0, (struct sockaddr *)&src, sl);
				continue;
			}
			if (b[0] == 'M') {
				char g[INET_ADDRSTRLEN];
				int gport;
				struct sockaddr_in ga = { .sin_family = AF_INET };

				if (sscanf(b, "M %15s %d %d %d", g, &gport, &count, &size) != 4 ||
				    size < 8 || size > 1472 || inet_pton(AF_INET, g, &ga.sin_addr) != 1)
					continue;
				ga.sin_port = htons((uint16_t)gport);
				for (k = 0; k < count; k++) {
					char d[1472];

					memset(d, 'x', (size_t)size);
					snprintf(d, 13, "%d:", k); /* room for any int */
					d[strlen(d)] = 'x';
					sendto(fd, d, (size_t)size, 0, (struct sockaddr *)&ga, sizeof(ga));
				}
				continue;
			}
			if (sscanf(b, "S %d %d %d %d", &count, &size, &tos, &delay) != 4 ||
			    size < 8 || size > 9000)
				continue;
			if (delay)
				usleep((useconds_t)delay * 1000);
			setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
			for (k = 0; k < count; k++) {
				static char d[9000];

				memset(d, 'x', (size_t)size);
				snprintf(d, 13, "%d:", k); /* room for any int */
				d[strlen(d)] = 'x';
				sendto(fd, d, (size_t)size, 0, (struct sockaddr *)&src, sl);
			}
		}
	}
	if (argc != 4) {
		fprintf(stderr, "usage: conform peer PORT | conform CASE PEER-ADDR PORT\n");
		return 2;
	}
	peer.sin_family = AF_INET;
	peer.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &peer.sin_addr) != 1)
		return 2;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(argv[1], cases[i].name)) {
			cases[i].fn();
			return 0;
		}
	if (!strcmp(argv[1], "list")) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	fprintf(stderr, "conform: no case %s\n", argv[1]);
	return 2;
}
