// SPDX-License-Identifier: Apache-2.0
/* udpcheck - payload-checking UDP peer for the harness (runs under the
 * interposer like any program).
 *   udpcheck send IP PORT COUNT            send COUNT datagrams of sizes
 *                                          1..1472 with a pattern, wait for
 *                                          each echo, compare bytes
 *   udpcheck echo IP PORT COUNT MUX        echo COUNT datagrams, waiting
 *                                          with MUX: block|poll|select|epoll
 *   udpcheck fork-echo IP PORT COUNT       bind, fork; the child polls the
 *                                          inherited socket once without
 *                                          waiting, prints "ready" and
 *                                          echoes on it
 *   udpcheck send-connected IP PORT COUNT  like send, through connect(),
 *                                          write() and read() on a dup()
 *                                          of the socket, after checking
 *                                          that SO_RCVTIMEO times out
 *   udpcheck exec-echo IP PORT COUNT       bind, then execve() itself with
 *                                          its environment: the new image
 *                                          is preloaded again and echoes
 *                                          on the inherited fd
 *   udpcheck forkq-echo IP PORT COUNT      bind, wait until a datagram is
 *                                          queued, fork; the child reads it
 *                                          and echoes COUNT
 * MUX mmsg: recvmmsg/sendmmsg in batches; MUX poll also checks FIONREAD;
 * MUX cmsg: blocking recvmsg with IP_PKTINFO, IP_RECVTTL, IP_RECVTOS and
 * SO_TIMESTAMPNS, each control message checked.
 * UDPCHECK_BIG=1: sizes up to 3000 bytes too (for a 3500-byte MTU).
 * Exit 0 on success; any mismatch or timeout prints why and exits 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void fill(unsigned char *b, size_t n, unsigned seq)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seq * 131u + i * 7u + (i >> 8));
}

#define BUFSZ 9216

static size_t size_of(unsigned seq)
{
	static const size_t sizes[] = { 1, 14, 63, 64, 65, 255, 256, 1000, 1471, 1472 };
	static const size_t big[] = { 1, 1472, 1700, 1746, 1747, 1800, 2000, 2048, 3000 };
	const char *b = getenv("UDPCHECK_BIG");

	if (b && !strcmp(b, "1"))
		return big[seq % (sizeof(big) / sizeof(big[0]))];
	return sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* MUX cmsg: what the kernel writes for IP_PKTINFO, IP_RECVTTL, IP_RECVTOS
 * and SO_TIMESTAMPNS, in its order; 0 when all is as expected. */
static int check_cmsgs(struct msghdr *m, struct in_addr local)
{
	struct cmsghdr *c;
	struct timespec now;
	int seen = 0, k = 0;
	static const int order[] = { SO_TIMESTAMPNS, IP_PKTINFO, IP_TTL, IP_TOS };

	clock_gettime(CLOCK_REALTIME, &now);
	if (m->msg_flags & MSG_CTRUNC) {
		fprintf(stderr, "udpcheck: MSG_CTRUNC with a large control buffer\n");
		return 1;
	}
	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c), k++) {
		if (k >= 4 || c->cmsg_type != order[k]) {
			fprintf(stderr, "udpcheck: control message %d is type %d, want %d\n",
				k, c->cmsg_type, k < 4 ? order[k] : -1);
			return 1;
		}
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			if (ts.tv_sec < now.tv_sec - 5 || ts.tv_sec > now.tv_sec + 1) {
				fprintf(stderr, "udpcheck: SO_TIMESTAMPNS %ld is not now (%ld)\n",
					(long)ts.tv_sec, (long)now.tv_sec);
				return 1;
			}
			seen |= 1;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			if (pi.ipi_addr.s_addr != local.s_addr ||
			    pi.ipi_spec_dst.s_addr != local.s_addr || pi.ipi_ifindex <= 0) {
				fprintf(stderr, "udpcheck: IP_PKTINFO addr %08x spec_dst %08x ifindex %d\n",
					pi.ipi_addr.s_addr, pi.ipi_spec_dst.s_addr, pi.ipi_ifindex);
				return 1;
			}
			seen |= 2;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			int ttl;

			memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
			if (ttl != 64) {
				fprintf(stderr, "udpcheck: IP_TTL %d, want 64\n", ttl);
				return 1;
			}
			seen |= 4;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS &&
			   c->cmsg_len == CMSG_LEN(1)) {
			seen |= 8;
		}
	}
	if (seen != 15) {
		fprintf(stderr, "udpcheck: control messages missing (seen %#x of 0xf)\n", seen);
		return 1;
	}
	return 0;
}

static int mksock(const char *ip, int port, int do_bind, struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)port);
	if (fd < 0 || !inet_aton(ip, &sa->sin_addr)) {
		fprintf(stderr, "udpcheck: bad socket or address %s\n", ip);
		exit(1);
	}
	if (do_bind && bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0) {
		perror("udpcheck: bind");
		exit(1);
	}
	return fd;
}

static int wait_readable(int fd, const char *mux, int ms)
{
	if (!strcmp(mux, "poll")) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		return poll(&p, 1, ms);
	}
	if (!strcmp(mux, "select")) {
		fd_set r;
		struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

		FD_ZERO(&r);
		FD_SET(fd, &r);
		return select(fd + 1, &r, NULL, NULL, &tv);
	}
	if (!strcmp(mux, "epoll")) {
		static int ep = -1;
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0xabcdef };
		struct epoll_event out[4];
		int n;

		if (ep < 0) {
			ep = epoll_create1(0);
			if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
				perror("udpcheck: epoll");
				exit(1);
			}
		}
		n = epoll_wait(ep, out, 4, ms);
		if (n > 0 && out[0].data.u64 != 0xabcdef) {
			fprintf(stderr, "udpcheck: epoll returned wrong data %llx\n",
				(unsigned long long)out[0].data.u64);
			exit(1);
		}
		return n;
	}
	return 1; /* block in recvfrom */
}

static int echo_mmsg(int fd, unsigned count)
{
	static unsigned char bufs[8][2048];
	struct mmsghdr v[8];
	struct iovec iov[8];
	struct sockaddr_in from[8];
	unsigned done = 0;
	int i, n;

	while (done < count) {
		for (i = 0; i < 8; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			memset(&v[i], 0, sizeof(v[i]));
			v[i].msg_hdr.msg_iov = &iov[i];
			v[i].msg_hdr.msg_iovlen = 1;
			v[i].msg_hdr.msg_name = &from[i];
			v[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(fd, v, 8, MSG_WAITFORONE, NULL);
		if (n <= 0) {
			perror("udpcheck echo: recvmmsg");
			return 1;
		}
		for (i = 0; i < n; i++)
			iov[i].iov_len = v[i].msg_len;
		if (sendmmsg(fd, v, (unsigned)n, 0) != n) {
			perror("udpcheck echo: sendmmsg");
			return 1;
		}
		done += (unsigned)n;
	}
	return 0;
}

static int echo_cmsg(int fd, unsigned count)
{
	static unsigned char buf[BUFSZ];
	char cbuf[512];
	struct sockaddr_in local;
	socklen_t ll = sizeof(local);
	int one = 1;
	unsigned i;

	if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0) {
		perror("udpcheck echo: control message options");
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct sockaddr_in from;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from),
				    .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(fd, &m, 0); /* blocking, with a control buffer */

		if (n < 0) {
			perror("udpcheck echo: recvmsg");
			return 1;
		}
		if (check_cmsgs(&m, local.sin_addr))
			return 1;
		if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from,
			   sizeof(from)) != n) {
			perror("udpcheck echo: sendto");
			return 1;
		}
	}
	return 0;
}

static int echo(int fd, unsigned count, const char *mux)
{
	static unsigned char buf[BUFSZ];
	unsigned i;

	if (!strcmp(mux, "mmsg"))
		return echo_mmsg(fd, count);
	if (!strcmp(mux, "cmsg"))
		return echo_cmsg(fd, count);
	for (i = 0; i < count; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n;
		int r = wait_readable(fd, mux, 10000);

		int pending = -1;

		if (r <= 0) {
			fprintf(stderr, "udpcheck echo: %s timed out after %u datagrams\n", mux, i);
			return 1;
		}
		if (!strcmp(mux, "poll") && ioctl(fd, FIONREAD, &pending) < 0) {
			perror("udpcheck echo: FIONREAD");
			return 1;
		}
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n < 0) {
			perror("udpcheck echo: recvfrom");
			return 1;
		}
		if (pending >= 0 && pending != n) {
			fprintf(stderr, "udpcheck echo: FIONREAD said %d, datagram has %zd bytes\n",
				pending, n);
			return 1;
		}
		if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) != n) {
			perror("udpcheck echo: sendto");
			return 1;
		}
	}
	return 0;
}

static int sender_connected(int fd, struct sockaddr_in *to, unsigned count)
{
	unsigned char out[BUFSZ], in[BUFSZ];
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	struct timespec t0, t1;
	double waited;
	unsigned i;
	int d;

	if (connect(fd, (struct sockaddr *)to, sizeof(*to)) < 0) {
		perror("udpcheck: connect");
		return 1;
	}
	/* nothing was sent yet: a receive must time out after SO_RCVTIMEO */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		perror("udpcheck: SO_RCVTIMEO");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (read(fd, in, sizeof(in)) >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
		fprintf(stderr, "udpcheck: read on an idle socket did not time out (%s)\n",
			strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (waited < 0.15 || waited > 2.0) {
		fprintf(stderr, "udpcheck: SO_RCVTIMEO of 0.2 s took %.3f s\n", waited);
		return 1;
	}
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	d = dup(fd);
	if (d < 0 || close(fd) < 0) {
		perror("udpcheck: dup/close");
		return 1;
	}
	for (i = 0; i < count; i++) {
		size_t len = size_of(i);
		ssize_t n;

		fill(out, len, i);
		if (write(d, out, len) != (ssize_t)len) {
			perror("udpcheck send-connected: write");
			return 1;
		}
		n = read(d, in, sizeof(in));
		if (n != (ssize_t)len || memcmp(in, out, len)) {
			fprintf(stderr, "udpcheck send-connected: datagram %u: got %zd bytes, want %zu (%s)\n",
				i, n, len, n < 0 ? strerror(errno) : "content differs?");
			return 1;
		}
	}
	printf("udpcheck: %u datagrams echoed intact (connected, read/write, dup)\n", count);
	return 0;
}

static int sender(int fd, struct sockaddr_in *to, unsigned count)
{
	unsigned char out[BUFSZ], in[BUFSZ];
	unsigned i;

	for (i = 0; i < count; i++) {
		size_t len = size_of(i);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		fill(out, len, i);
		if (sendto(fd, out, len, 0, (struct sockaddr *)to, sizeof(*to)) != (ssize_t)len) {
			perror("udpcheck send: sendto");
			return 1;
		}
		if (poll(&p, 1, 5000) != 1) {
			fprintf(stderr, "udpcheck send: no echo for datagram %u (%zu bytes)\n", i, len);
			return 1;
		}
		n = recv(fd, in, sizeof(in), 0);
		if (n != (ssize_t)len || memcmp(in, out, len)) {
			fprintf(stderr, "udpcheck send: datagram %u: got %zd bytes, want %zu (or content differs)\n",
				i, n, len);
			return 1;
		}
	}
	printf("udpcheck: %u datagrams echoed intact\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	unsigned count;
	int fd;

	if (argc < 5 && !(argc == 4 && !strcmp(argv[1], "echo-fd"))) {
		fprintf(stderr, "usage: udpcheck send|echo|fork-echo IP PORT COUNT [MUX]\n");
		return 2;
	}
	count = (unsigned)strtoul(argv[argc == 4 ? 3 : 4], NULL, 10);
	if (!strcmp(argv[1], "send")) {
		fd = mksock(argv[2], atoi(argv[3]), 0, &sa);
		return sender(fd, &sa, count);
	}
	if (!strcmp(argv[1], "send-connected")) {
		fd = mksock(argv[2], atoi(argv[3]), 0, &sa);
		return sender_connected(fd, &sa, count);
	}
	if (!strcmp(argv[1], "exec-echo")) {
		char fdarg[16];
		char *args[] = { argv[0], "echo-fd", fdarg, argv[4], NULL };
		extern char **environ;

		fd = mksock(argv[2], atoi(argv[3]), 1, &sa);
		snprintf(fdarg, sizeof(fdarg), "%d", fd);
		execve("/proc/self/exe", args, environ);
		perror("udpcheck: execve");
		return 1;
	}
	if (!strcmp(argv[1], "echo-fd")) {
		/* after exec-echo: the environment was passed on */
		const char *pre = getenv("LD_PRELOAD");

		if (!pre || !strstr(pre, "libtickstack")) {
			fprintf(stderr, "udpcheck: exec lost the preload (LD_PRELOAD=%s)\n",
				pre ? pre : "(unset)");
			return 1;
		}
		printf("ready (after exec, LD_PRELOAD=%s)\n", pre);
		fflush(stdout);
		return echo(atoi(argv[2]), count, "poll");
	}
	if (!strcmp(argv[1], "echo")) {
		fd = mksock(argv[2], atoi(argv[3]), 1, &sa);
		printf("ready\n");
		fflush(stdout);
		return echo(fd, count, argc > 5 ? argv[5] : "block");
	}
	if (!strcmp(argv[1], "forkq-echo")) {
		struct pollfd p;
		pid_t pid;
		int st;

		fd = mksock(argv[2], atoi(argv[3]), 1, &sa);
		printf("ready\n");
		fflush(stdout);
		/* a datagram is queued (by the library: in its own queue) */
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 10000) != 1) {
			fprintf(stderr, "udpcheck forkq-echo: nothing came\n");
			return 1;
		}
		pid = fork();
		if (pid < 0) {
			perror("udpcheck: fork");
			return 1;
		}
		if (pid == 0)
			_exit(echo(fd, count, "block"));
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "udpcheck forkq-echo: child failed (status %#x)\n", st);
			return 1;
		}
		return 0;
	}
	if (!strcmp(argv[1], "fork-echo")) {
		pid_t pid;
		int st;

		fd = mksock(argv[2], atoi(argv[3]), 1, &sa);
		pid = fork();
		if (pid < 0) {
			perror("udpcheck: fork");
			return 1;
		}
		if (pid == 0) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			/* ready after a first call on the socket that does
			 * not wait (where the interposer adopts it: its own
			 * XSK and steering). What arrives before it waits in
			 * the kernel socket both processes hold (the parent's
			 * steering was parked at the fork), as with the
			 * kernel; a test that requires every datagram through
			 * the child's XSK sends after "ready". */
			if (poll(&p, 1, 0) < 0) {
				perror("udpcheck fork-echo: poll");
				exit(1);
			}
			printf("ready\n");
			fflush(stdout);
			exit(echo(fd, count, "poll"));
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
			fprintf(stderr, "udpcheck: child did not exit cleanly\n");
			return 1;
		}
		return WEXITSTATUS(st);
	}
	fprintf(stderr, "udpcheck: unknown mode %s\n", argv[1]);
	return 2;
}
