// SPDX-License-Identifier: Apache-2.0
/* stress - many threads on many sockets, with closes while receiving, for
 * the ThreadSanitizer and AddressSanitizer builds of the library (the
 * harness's "stress" test runs it through both).
 *   stress echo IP PORT0 NSOCK SECONDS   NSOCK sockets on PORT0.., receiver
 *        threads waiting with recvfrom (SO_RCVTIMEO), recvmsg with
 *        IP_PKTINFO, poll and epoll, echoing what they get (every other
 *        socket with receive and transmit timestamps, its error queue read
 *        by the recvmsg threads, or left to fill); a closer thread
 *        closes a socket while others block on it, dup2()s another over
 *        one, binds a new one on the port, and changes a live socket's
 *        SO_RCVTIMEO while others wait on it; exits 0 after SECONDS
 *   stress blast IP PORT0 NSOCK SECONDS  two senders (sendto, sendmmsg)
 *        to random ports, a receiver (recvmmsg) of the echoes; exits 0
 *        when some echoes came back
 * The program's own fd table is shared through atomics: using an fd that
 * another thread just closed is the application's race, which the library
 * must survive (EBADF or the new socket), never a crash. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/net_tstamp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXS 64

static int nsock, seconds, port0;
static struct in_addr ip;
static int fds[MAXS];
static int epfd;
static int stop;
static unsigned long echoed, got;

static int sfd(int i)
{
	return __atomic_load_n(&fds[i], __ATOMIC_ACQUIRE);
}

/* A new socket whose receives time out (SO_RCVTIMEO), and never reachable
 * without that: a closed socket's number is reused at once, and a receiver
 * still holding it may call into the new socket the moment socket() returns.
 * It is non-blocking until its timeout is set, so such a call returns EAGAIN
 * rather than block with no timeout on a socket that, near the end of the
 * run, may never get a datagram (a hang of this program's own making, on the
 * kernel as through the library). */
static int timed_socket(void)
{
	struct timeval tv = { .tv_usec = 20000 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		perror("stress: the new socket's timeout");
		exit(1);
	}
	return fd;
}

static int mksock(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr = ip };
	int one = 1, fd, tries, rcvbuf = 1 << 20;

	fd = timed_socket();
	if (fd < 0)
		return -1;
	/* room past the socket queue length: the stack queues copies there */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	if (port & 1) { /* stamps both ways: the error queue fills */
		int f = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_TX_SOFTWARE |
			SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID;

		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof(f));
	}
	/* a receiver still blocked on the closed socket keeps the port bound
	 * for up to its SO_RCVTIMEO, as in the kernel: retry */
	for (tries = 0; tries < 200; tries++) {
		if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		if (errno != EADDRINUSE)
			break;
		usleep(1000);
	}
	close(fd);
	return -1;
}

static void echo(int fd, char *buf, ssize_t n, struct sockaddr_in *from)
{
	if (n >= 0 && sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)from,
			     sizeof(*from)) == n)
		__atomic_add_fetch(&echoed, 1, __ATOMIC_RELAXED);
}

static void *receiver(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	char buf[2048], cbuf[256];

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int i = (int)(rand_r(&seed) % (unsigned)nsock);
		int fd = sfd(i), how = (int)(rand_r(&seed) % 4);
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		if (fd < 0)
			continue;
		if (how == 0) {
			n = recvfrom(fd, buf, sizeof(buf), 0,
				     (struct sockaddr *)&from, &fl);
			echo(fd, buf, n, &from);
		} else if (how == 1) {
			struct iovec iov = { buf, sizeof(buf) };
			struct msghdr m = { .msg_name = &from,
					    .msg_namelen = sizeof(from),
					    .msg_iov = &iov, .msg_iovlen = 1,
					    .msg_control = cbuf,
					    .msg_controllen = sizeof(cbuf) };

			n = recvmsg(fd, &m, 0);
			echo(fd, buf, n, &from);
			m.msg_controllen = sizeof(cbuf);
			recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
		} else if (how == 2) {
			struct pollfd pf[2] = { { .fd = fd, .events = POLLIN },
						{ .fd = sfd((i + 1) % nsock),
						  .events = POLLIN } };
			int k;

			if (poll(pf, 2, 10) <= 0)
				continue;
			for (k = 0; k < 2; k++) {
				if (!(pf[k].revents & POLLIN))
					continue;
				n = recvfrom(pf[k].fd, buf, sizeof(buf),
					     MSG_DONTWAIT,
					     (struct sockaddr *)&from, &fl);
				echo(pf[k].fd, buf, n, &from);
			}
		} else {
			struct epoll_event ev[8];
			int k, r = epoll_wait(epfd, ev, 8, 10);

			for (k = 0; k < r; k++) {
				int efd = (int)ev[k].data.u64;

				n = recvfrom(efd, buf, sizeof(buf), MSG_DONTWAIT,
					     (struct sockaddr *)&from, &fl);
				echo(efd, buf, n, &from);
			}
		}
	}
	return NULL;
}

/* Close sockets others block on, dup2 over one, bind new ones. */
static void *closer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int i = (int)(rand_r(&seed) % (unsigned)nsock);
		int old = sfd(i), fd;
		struct epoll_event ev = { .events = EPOLLIN };

		usleep(2000);
		/* a live socket's timeout changed while receivers wait on it
		 * (they read it; 10-30 ms, so the stop is still seen) */
		{
			struct timeval tv = { .tv_usec = 10000 + (long)(rand_r(&seed) % 20000) };
			int j = sfd((int)(rand_r(&seed) % (unsigned)nsock));

			if (j >= 0)
				setsockopt(j, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		}
		if (old < 0)
			continue;
		if (rand_r(&seed) % 4 == 0) {
			/* dup2 a fresh socket over the old fd number
			 * (receivers holding the number block on it) */
			int t = timed_socket();

			if (t >= 0) {
				dup2(t, old);
				close(t);
			}
		}
		__atomic_store_n(&fds[i], -1, __ATOMIC_RELEASE);
		close(old);
		/* a receiver holding the old number may send on the new
		 * socket before the bind (binding it elsewhere): try again */
		for (int k = 0; k < 5 && (fd = mksock(port0 + i)) < 0; k++)
			;
		if (fd < 0) {
			perror("stress: rebinding");
			continue;
		}
		ev.data.u64 = (uint64_t)fd;
		epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
		__atomic_store_n(&fds[i], fd, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int run_echo(void)
{
	pthread_t t[6];
	int i;

	epfd = epoll_create1(0);
	for (i = 0; i < nsock; i++) {
		struct epoll_event ev = { .events = EPOLLIN };

		fds[i] = mksock(port0 + i);
		if (fds[i] < 0) {
			perror("stress: bind");
			return 1;
		}
		ev.data.u64 = (uint64_t)fds[i];
		epoll_ctl(epfd, EPOLL_CTL_ADD, fds[i], &ev);
	}
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < 5; i++)
		pthread_create(&t[i], NULL, receiver, (void *)(uintptr_t)(i + 1));
	pthread_create(&t[5], NULL, closer, (void *)(uintptr_t)99);
	sleep((unsigned)seconds);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < nsock; i++)
		close(fds[i]);
	close(epfd);
	printf("echoed %lu\n", echoed);
	return 0;
}

static int cli_fd;

static void *blaster(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	char buf[256];

	memset(buf, 'x', sizeof(buf));
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		struct sockaddr_in to[8];
		struct mmsghdr mm[8];
		struct iovec iov[8];
		int k;

		for (k = 0; k < 8; k++) {
			memset(&to[k], 0, sizeof(to[k]));
			to[k].sin_family = AF_INET;
			to[k].sin_addr = ip;
			to[k].sin_port = htons(port0 + (int)(rand_r(&seed) % (unsigned)nsock));
			iov[k].iov_base = buf;
			iov[k].iov_len = 1 + rand_r(&seed) % sizeof(buf);
			memset(&mm[k], 0, sizeof(mm[k]));
			mm[k].msg_hdr.msg_name = &to[k];
			mm[k].msg_hdr.msg_namelen = sizeof(to[k]);
			mm[k].msg_hdr.msg_iov = &iov[k];
			mm[k].msg_hdr.msg_iovlen = 1;
		}
		if (seed & 1)
			sendmmsg(cli_fd, mm, 8, 0);
		else
			for (k = 0; k < 8; k++)
				sendto(cli_fd, buf, iov[k].iov_len, 0,
				       (struct sockaddr *)&to[k], sizeof(to[k]));
		usleep(200);
	}
	return NULL;
}

static void *catcher(void *arg)
{
	char bufs[8][2048];
	struct mmsghdr mm[8];
	struct iovec iov[8];
	struct timespec tmo = { 0, 10000000 };
	int k, r;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		for (k = 0; k < 8; k++) {
			iov[k].iov_base = bufs[k];
			iov[k].iov_len = sizeof(bufs[k]);
			memset(&mm[k], 0, sizeof(mm[k]));
			mm[k].msg_hdr.msg_iov = &iov[k];
			mm[k].msg_hdr.msg_iovlen = 1;
		}
		r = recvmmsg(cli_fd, mm, 8, MSG_WAITFORONE, &tmo);
		if (r > 0)
			__atomic_add_fetch(&got, (unsigned long)r, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int run_blast(void)
{
	struct timeval tv = { .tv_usec = 10000 };
	pthread_t t[3];
	int i;

	cli_fd = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(cli_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	pthread_create(&t[0], NULL, blaster, (void *)(uintptr_t)1);
	pthread_create(&t[1], NULL, blaster, (void *)(uintptr_t)2);
	pthread_create(&t[2], NULL, catcher, NULL);
	sleep((unsigned)seconds);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	close(cli_fd);
	printf("echoes received %lu\n", got);
	if (!got) {
		fprintf(stderr, "stress: no echo came back\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6 || inet_pton(AF_INET, argv[2], &ip) != 1) {
		fprintf(stderr, "usage: stress echo|blast IP PORT0 NSOCK SECONDS\n");
		return 2;
	}
	port0 = atoi(argv[3]);
	nsock = atoi(argv[4]);
	seconds = atoi(argv[5]);
	if (nsock < 2 || nsock > MAXS || seconds < 1) {
		fprintf(stderr, "stress: NSOCK 2..%d, SECONDS >= 1\n", MAXS);
		return 2;
	}
	if (!strcmp(argv[1], "echo"))
		return run_echo();
	if (!strcmp(argv[1], "blast"))
		return run_blast();
	fprintf(stderr, "stress: unknown mode %s\n", argv[1]);
	return 2;
}
