// SPDX-License-Identifier: Apache-2.0
/* test_sock - unit tests of the socket layer, built with ASan and UBSan,
 * the library's objects linked in (its interposers are this program's
 * calls). Over loopback, which is never accelerated: what is checked is
 * the shadow sockets' bookkeeping the data path relies on: the fd table
 * through dup/dup2/dup3/fcntl/close/close_range, options that move a
 * socket to the kernel (and their counter), the control messages a socket
 * asked for, references held by calls in flight, and the pool. */
#define _GNU_SOURCE
#include "ts_internal.h"

#include <linux/net_tstamp.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* Loopback only: before the library's own constructor reads the
 * settings, allow no interface at all, so that a socket bound to 0.0.0.0
 * (a send from an unbound one) never attaches XDP to the host's NICs. */
__attribute__((constructor(101))) static void loopback_only(void)
{
	setenv("TICKSTACK_IFACES", "tickstack-test-none", 1);
}

static int udp(void)
{
	return socket(AF_INET, SOCK_DGRAM, 0);
}

static void test_fd_table(void)
{
	int a = udp(), b = udp(), c, d, f;
	struct ts_sock *sa = ts_sock__of(a);

	CHECK(sa && ts_sock__of(b) && sa != ts_sock__of(b), "two shadows");
	c = dup(a);
	CHECK(ts_sock__of(c) == sa && sa->refs == 2, "dup shares (refs %d)", sa->refs);
	d = fcntl(a, F_DUPFD_CLOEXEC, 100);
	CHECK(d >= 100 && ts_sock__of(d) == sa && sa->refs == 3, "F_DUPFD shares");
	/* dup2 over another socket: b's shadow goes, a's takes the fd */
	CHECK(dup2(a, b) == b, "dup2");
	CHECK(ts_sock__of(b) == sa && sa->refs == 4, "dup2 target shares a's");
	close(c);
	close(d);
	close(b);
	CHECK(ts_sock__of(c) == NULL && sa->refs == 1, "closes drop refs (%d)", sa->refs);
	/* close_range forgets; a plain file then reuses the number */
	CHECK(close_range((unsigned)a, (unsigned)a, 0) == 0, "close_range");
	CHECK(ts_sock__of(a) == NULL, "close_range forgot the shadow");
	f = open("/dev/null", O_RDONLY);
	CHECK(f == a && ts_sock__of(f) == NULL, "a file on the old number is not a socket");
	close(f);
	/* CLOSE_RANGE_CLOEXEC closes nothing */
	a = udp();
	sa = ts_sock__of(a);
	CHECK(close_range((unsigned)a, (unsigned)a, CLOSE_RANGE_CLOEXEC) == 0 &&
		      ts_sock__of(a) == sa,
	      "CLOEXEC keeps the shadow");
	close(a);
	/* other domains and types have none */
	a = socket(AF_INET, SOCK_STREAM, 0);
	b = socket(AF_INET6, SOCK_DGRAM, 0);
	CHECK(!ts_sock__of(a) && (b < 0 || !ts_sock__of(b)), "TCP and IPv6 are not ours");
	close(a);
	if (b >= 0)
		close(b);
}

static void test_options(void)
{
	uint64_t before = ts_stats->kernel_option;
	int one = 1, a = udp(), b = udp(), c = udp();
	struct ts_sock *s = ts_sock__of(a);

	CHECK(setsockopt(a, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) == 0 &&
		      (s->cmsgs & TS_CM_PKTINFO),
	      "IP_PKTINFO tracked");
	CHECK(setsockopt(a, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) == 0 &&
		      (s->cmsgs & TS_CM_TSTAMPNS) && !s->tstamp_new,
	      "SO_TIMESTAMPNS tracked");
	CHECK(setsockopt(a, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof(one)) == 0 &&
		      (s->cmsgs & TS_CM_TSTAMP) && !(s->cmsgs & TS_CM_TSTAMPNS),
	      "SO_TIMESTAMP replaces SO_TIMESTAMPNS, as in the kernel");
	CHECK(setsockopt(a, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)) == 0 &&
		      setsockopt(a, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) == 0 &&
		      (s->cmsgs & TS_CM_TTL) && (s->cmsgs & TS_CM_TOS),
	      "IP_RECVTTL, IP_RECVTOS tracked");
	one = 0;
	CHECK(setsockopt(a, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) == 0 &&
		      !(s->cmsgs & TS_CM_PKTINFO),
	      "IP_PKTINFO off");
	CHECK(ts_sock__state(s) == TS_S_NEW, "still undecided");
	one = 1;
	CHECK(setsockopt(a, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0 &&
		      s->reuseport && ts_sock__state(s) == TS_S_NEW,
	      "SO_REUSEPORT: a group the stack serves");
	CHECK(setsockopt(a, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) == 0, "IP_RECVERR");
	CHECK(ts_sock__state(s) == TS_S_KERNEL && ts_stats->kernel_option == before + 1,
	      "IP_RECVERR moves the socket to the kernel, counted");
	one = 7;
	CHECK(setsockopt(b, IPPROTO_IP, IP_TTL, &one, sizeof(one)) == 0 &&
		      ts_sock__of(b)->ttl == 7,
	      "IP_TTL kept");
	one = -1;
	CHECK(setsockopt(b, IPPROTO_IP, IP_TTL, &one, sizeof(one)) == 0 &&
		      ts_sock__of(b)->ttl == 64,
	      "IP_TTL -1 is the default again (%u)", ts_sock__of(b)->ttl);
	one = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
	CHECK(setsockopt(c, SOL_SOCKET, SO_TIMESTAMPING_NEW, &one, sizeof(one)) == 0 &&
		      (ts_sock__of(c)->cmsgs & TS_CM_TSTAMPING) && ts_sock__of(c)->tstamp_new &&
		      ts_sock__state(ts_sock__of(c)) != TS_S_KERNEL,
	      "SO_TIMESTAMPING software RX served by the stack, _NEW cmsgs");
	one |= SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_OPT_ID;
	CHECK(setsockopt(c, SOL_SOCKET, SO_TIMESTAMPING_OLD, &one, sizeof(one)) == 0 &&
		      ts_sock__of(c)->txts == one && !ts_sock__of(c)->tskey &&
		      ts_sock__state(ts_sock__of(c)) != TS_S_KERNEL,
	      "SO_TIMESTAMPING software TX stamps served by the stack (error queue)");
	one |= SOF_TIMESTAMPING_TX_SCHED;
	CHECK(setsockopt(c, SOL_SOCKET, SO_TIMESTAMPING_OLD, &one, sizeof(one)) == 0 &&
		      ts_sock__state(ts_sock__of(c)) == TS_S_KERNEL,
	      "SO_TIMESTAMPING with scheduler stamps moves the socket to the kernel");
	close(c);
	one = 0;
	CHECK(setsockopt(b, SOL_SOCKET, SO_MARK, &one, sizeof(one)) == 0 &&
		      ts_sock__state(ts_sock__of(b)) == TS_S_NEW,
	      "SO_MARK 0 changes nothing");
	close(a);
	close(b);
}

static void test_references(void)
{
	int a = udp();
	struct ts_sock *s = ts_sock__get(a);

	CHECK(s && s->users == 1, "a call holds a reference");
	close(a); /* another thread's close while the call runs */
	CHECK(ts_sock__of(a) == NULL, "the fd is gone");
	CHECK(s->dead && !s->fin && s->kfd >= 0,
	      "the socket stays, on a dup of the kernel fd (kfd %d)", s->kfd);
	CHECK(fcntl(s->kfd, F_GETFD) >= 0, "the dup is open");
	ts_sock__put(s);
	CHECK(s->fin, "the last reference finalises it");
}

static void test_loopback_io(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	char out[100], in[100], cbuf[64];
	struct iovec iov[2] = { { out, 40 }, { out + 40, 60 } };
	int a = udp(), b = udp(), one = 1;
	struct msghdr m;
	ssize_t n;

	CHECK(bind(a, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		      getsockname(a, (struct sockaddr *)&sa, &l) == 0,
	      "bind on loopback");
	CHECK(ts_sock__state(ts_sock__of(a)) == TS_S_KERNEL,
	      "loopback is never accelerated");
	CHECK(connect(b, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect");
	memset(out, 'q', sizeof(out));
	CHECK(writev(b, iov, 2) == 100, "writev");
	iov[0].iov_base = in;
	iov[0].iov_len = 10;
	iov[1].iov_base = in + 10;
	iov[1].iov_len = 90;
	CHECK(readv(a, iov, 2) == 100 && !memcmp(in, out, 100), "readv");
	setsockopt(a, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	CHECK(write(b, out, 10) == 10, "write");
	memset(&m, 0, sizeof(m));
	iov[0].iov_len = sizeof(in);
	m.msg_iov = iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	n = recvmsg(a, &m, MSG_DONTWAIT);
	CHECK(n == 10 && m.msg_controllen > 0 && CMSG_FIRSTHDR(&m) &&
		      CMSG_FIRSTHDR(&m)->cmsg_type == IP_PKTINFO,
	      "the kernel path gives its control messages (n %zd)", n);
	close(a);
	close(b);
}

static void test_pool(void)
{
	struct ts_sock *first;
	int i, fd;

	/* a closed socket's object is not reused at once (a late lookup may
	 * still hold the pointer): the pool hands it out only much later */
	fd = udp();
	first = ts_sock__of(fd);
	close(fd);
	fd = udp();
	CHECK(ts_sock__of(fd) != first, "not reused at once");
	close(fd);
	for (i = 0; i < 200; i++)
		close(udp());
	fd = udp();
	CHECK(ts_sock__of(fd) && ts_sock__of(fd)->refs == 1 &&
		      !ts_sock__of(fd)->dead && ts_sock__of(fd)->kfd == -1,
	      "a pooled object comes back clean");
	close(fd);
}

/* A hardware receive time from XDP metadata in SCM_TIMESTAMPING's third
 * slot (veth gives none, so the conformance cases cannot show one): with
 * the software stamp, alone, and no message without either (the
 * kernel's __sock_recv_timestamp) */
static void test_hw_stamp_cmsg(void)
{
	char cb[256];
	struct msghdr m;
	struct cmsghdr *c;
	struct timespec tss[3];
	size_t used;

	memset(&m, 0, sizeof(m));
	m.msg_control = cb;
	m.msg_controllen = sizeof(cb);
	used = 0;
	ts_rx__tstamp_cmsgs_hw(&m, &used, TS_CM_TSHW | TS_CM_TSTAMPING, 0,
			       2000000001ull, 1234567890123456789ull);
	m.msg_controllen = used;
	c = CMSG_FIRSTHDR(&m);
	CHECK(c && c->cmsg_type == SO_TIMESTAMPING_OLD &&
		      c->cmsg_len == CMSG_LEN(sizeof(tss)),
	      "one SCM_TIMESTAMPING");
	if (c) {
		memcpy(tss, CMSG_DATA(c), sizeof(tss));
		CHECK(tss[0].tv_sec == 2 && tss[0].tv_nsec == 1 &&
			      tss[1].tv_sec == 0 && tss[1].tv_nsec == 0 &&
			      tss[2].tv_sec == 1234567890 &&
			      tss[2].tv_nsec == 123456789,
		      "software %ld.%09ld hardware %ld.%09ld",
		      (long)tss[0].tv_sec, tss[0].tv_nsec,
		      (long)tss[2].tv_sec, tss[2].tv_nsec);
	}
	/* hardware only, a stamp: the message with the software slot zero */
	m.msg_controllen = sizeof(cb);
	used = 0;
	ts_rx__tstamp_cmsgs_hw(&m, &used, TS_CM_TSHW, 1, 5, 7000000008ull);
	c = used ? (struct cmsghdr *)(void *)cb : NULL;
	CHECK(c && c->cmsg_type == SO_TIMESTAMPING_NEW, "_NEW message");
	if (c) {
		memcpy(tss, CMSG_DATA(c), sizeof(tss));
		CHECK(tss[0].tv_sec == 0 && tss[0].tv_nsec == 0 &&
			      tss[2].tv_sec == 7 && tss[2].tv_nsec == 8,
		      "hardware only");
	}
	/* hardware only, no stamp (veth): no message */
	m.msg_controllen = sizeof(cb);
	used = 0;
	ts_rx__tstamp_cmsgs_hw(&m, &used, TS_CM_TSHW, 0, 5, 0);
	CHECK(used == 0, "no message without a time (%zu bytes)", used);
}

int main(void)
{
	if (!ts_fdtab) {
		fprintf(stderr, "test_sock: the library did not initialise\n");
		return 1;
	}
	test_fd_table();
	test_options();
	test_references();
	test_loopback_io();
	test_pool();
	test_hw_stamp_cmsg();
	return check_exit("test_sock");
}
