// SPDX-License-Identifier: Apache-2.0
/* fuzz_sock - libFuzzer target for the socket layer: each input is a
 * sequence of socket calls (socket, bind, connect, options, send, receive
 * with control buffers of any size, readv/writev, dup/dup2/dup3, close,
 * close_range, poll, epoll, fcntl, ioctl, recvmmsg/sendmmsg) on a few
 * UDP sockets over loopback. The library's objects are linked in, so its
 * interposers are this program's calls; ASan and UBSan watch the shadow
 * sockets' life (pool, references, fd table, epoll sets). Nothing blocks:
 * receives are MSG_DONTWAIT, waits have a zero timeout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuzz_input.h"

/* Loopback only: before the library's own constructor reads the
 * settings, allow no interface at all, so that a socket bound to 0.0.0.0
 * (a send from an unbound one) never attaches XDP to the host's NICs. */
__attribute__((constructor(101))) static void loopback_only(void)
{
	setenv("TICKSTACK_IFACES", "tickstack-test-none", 1);
}

#define SLOTS 6

static void addr_of(struct sockaddr_in *sa, unsigned port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa->sin_port = port ? htons((uint16_t)(47000 + port % 64)) : 0;
}

static const struct {
	int level, opt;
} opts[] = {
	{ SOL_SOCKET, SO_REUSEADDR },  { SOL_SOCKET, SO_REUSEPORT },
	{ SOL_SOCKET, SO_TIMESTAMP },  { SOL_SOCKET, SO_TIMESTAMPNS },
	{ SOL_SOCKET, SO_RCVBUF },     { SOL_SOCKET, SO_MARK },
	{ SOL_SOCKET, SO_RXQ_OVFL },   { IPPROTO_IP, IP_PKTINFO },
	{ IPPROTO_IP, IP_RECVTOS },    { IPPROTO_IP, IP_RECVTTL },
	{ IPPROTO_IP, IP_TTL },        { IPPROTO_IP, IP_TOS },
	{ IPPROTO_IP, IP_MULTICAST_LOOP }, { IPPROTO_IP, IP_MULTICAST_TTL },
	{ IPPROTO_IP, IP_MULTICAST_ALL }, { IPPROTO_IP, IP_RECVERR },
	{ IPPROTO_IP, IP_MTU_DISCOVER }, { IPPROTO_UDP, 1 /* UDP_CORK */ },
	{ SOL_SOCKET, SO_TIMESTAMPING }, /* receive and transmit stamps */
};

/* libFuzzer's entry point, called by its runtime */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	int fd[SLOTS], ep = -1, i;
	char buf[2048], cbuf[128];

	for (i = 0; i < SLOTS; i++)
		fd[i] = -1;
	while (in.n) {
		unsigned op = take(&in), a = take(&in), b = take(&in);
		int s = fd[a % SLOTS], t = fd[b % SLOTS];
		struct sockaddr_in sa;

		switch (op % 16) {
		case 0:
			if (s >= 0)
				close(s);
			fd[a % SLOTS] = socket(AF_INET, SOCK_DGRAM |
							(b & 1 ? SOCK_NONBLOCK : 0), 0);
			break;
		case 1:
			addr_of(&sa, b);
			bind(s, (struct sockaddr *)&sa, sizeof(sa));
			break;
		case 2:
			addr_of(&sa, b);
			if (b & 0x80)
				sa.sin_family = AF_UNSPEC;
			connect(s, (struct sockaddr *)&sa, sizeof(sa));
			break;
		case 3: {
			int v = (int)(b & 0x7f), k = (int)(a % (sizeof(opts) / sizeof(opts[0])));

			setsockopt(s, opts[k].level, opts[k].opt, &v, sizeof(v));
			break;
		}
		case 4: {
			socklen_t l = sizeof(sa);

			if (t < 0 || getsockname(t, (struct sockaddr *)&sa, &l))
				addr_of(&sa, b);
			memset(buf, (int)a, sizeof(buf));
			sendto(s, buf, 1 + b * 7, MSG_DONTWAIT,
			       (struct sockaddr *)&sa, sizeof(sa));
			break;
		}
		case 5: {
			struct iovec iov[2] = { { buf, b % 64 }, { buf + 64, 1500 } };
			struct msghdr m = { .msg_name = &sa,
					    .msg_namelen = (socklen_t)(a % 20),
					    .msg_iov = iov, .msg_iovlen = 2,
					    .msg_control = a & 1 ? cbuf : NULL,
					    .msg_controllen = a & 1 ? b % sizeof(cbuf) : 0 };

			recvmsg(s, &m, MSG_DONTWAIT | (a & 2 ? MSG_PEEK : 0) |
					       (a & 4 ? MSG_TRUNC : 0) |
					       (a & 8 ? MSG_ERRQUEUE : 0));
			break;
		}
		case 6: {
			struct iovec iov[2] = { { buf, a % 32 }, { buf + 32, b } };

			if (s >= 0 && (a & 1)) {
				int fl = fcntl(s, F_GETFL);

				fcntl(s, F_SETFL, fl | O_NONBLOCK);
				readv(s, iov, 2);
			} else {
				writev(s, iov, 2);
			}
			break;
		}
		case 7:
			if (s < 0)
				break;
			if (a & 1) {
				int d = dup(s);

				if (d >= 0 && fd[b % SLOTS] < 0)
					fd[b % SLOTS] = d;
				else if (d >= 0)
					close(d);
			} else if (t >= 0 && t != s) {
				if (a & 2)
					dup2(s, t);
				else
					dup3(s, t, O_CLOEXEC);
			}
			break;
		case 8:
			if (s >= 0) {
				close(s);
				for (i = 0; i < SLOTS; i++)
					if (fd[i] == s)
						fd[i] = -1;
			}
			break;
		case 9:
			if (s >= 0) {
				close_range((unsigned)s, (unsigned)s, 0);
				for (i = 0; i < SLOTS; i++)
					if (fd[i] == s)
						fd[i] = -1;
			}
			break;
		case 10: {
			struct pollfd pf[SLOTS];

			for (i = 0; i < SLOTS; i++) {
				pf[i].fd = fd[i];
				pf[i].events = (short)((a >> i) & 1 ? POLLIN : POLLOUT);
			}
			poll(pf, SLOTS, 0);
			break;
		}
		case 11: {
			struct epoll_event ev = { .events = EPOLLIN | (b & 1 ? EPOLLONESHOT : 0),
						  .data.u64 = a };
			struct epoll_event out[4];

			if (ep < 0)
				ep = epoll_create1(0);
			epoll_ctl(ep, b & 2 ? EPOLL_CTL_DEL : b & 4 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
				  s, &ev);
			epoll_wait(ep, out, 1 + (int)(b % 4), 0);
			break;
		}
		case 12: {
			int v = (int)(b & 1);

			ioctl(s, a & 1 ? FIONREAD : FIONBIO, &v);
			break;
		}
		case 13: {
			struct iovec iov[2] = { { buf, 100 }, { buf + 100, 100 } };
			struct mmsghdr mm[2];
			struct timespec z = { 0, 0 };

			memset(mm, 0, sizeof(mm));
			mm[0].msg_hdr.msg_iov = &iov[0];
			mm[0].msg_hdr.msg_iovlen = 1;
			mm[1].msg_hdr.msg_iov = &iov[1];
			mm[1].msg_hdr.msg_iovlen = 1;
			if (a & 1)
				recvmmsg(s, mm, 2, MSG_DONTWAIT, &z);
			else
				sendmmsg(s, mm, 2, MSG_DONTWAIT);
			break;
		}
		case 14: {
			int v;
			socklen_t l = sizeof(v);
			int k = (int)(a % (sizeof(opts) / sizeof(opts[0])));

			getsockopt(s, opts[k].level, opts[k].opt, &v, &l);
			break;
		}
		case 15: {
			struct sockaddr_in from;
			socklen_t fl = (socklen_t)(b % 20);

			recvfrom(s, buf, a, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
			break;
		}
		}
	}
	for (i = 0; i < SLOTS; i++) {
		int k;

		if (fd[i] < 0)
			continue;
		close(fd[i]);
		for (k = i + 1; k < SLOTS; k++)
			if (fd[k] == fd[i])
				fd[k] = -1;
	}
	if (ep >= 0)
		close(ep);
	return 0;
}
