// SPDX-License-Identifier: Apache-2.0
/* udp-pp - the least a UDP ping-pong through the socket API can do: one
 * sendto and one recvfrom per message on each end, nothing else (no event
 * loop, no per-message bookkeeping beyond a sequence number), so that
 * sockperf's own per-message work can be told apart from the stack's: the
 * same tool over the kernel and over the bypass (tickstack-run).
 *   udp-pp reflect LOCAL_IP PORT
 *   udp-pp ping LOCAL_IP PEER_IP PORT SIZE SECONDS
 * UDP_PP_SPIN=1 reads with MSG_DONTWAIT in a loop (the kernel spinning, as
 * sockperf --nonblocked); without it recvfrom blocks (the bypass's -p
 * latency spins inside it, as sockperf without --nonblocked). ping prints
 * half round trips (usec) in sockperf's words, after 400 ms of warm-up and
 * without the last 50 ms, as xsk-floor does. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pingpong.h"

static int spin;
static uint8_t buf[65536];

static int die(const char *what)
{
	fprintf(stderr, "udp-pp: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int sock(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	if (!inet_aton(ip, &a.sin_addr)) {
		errno = EINVAL;
		die("LOCAL_IP");
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		die("bind");
	return fd;
}

static ssize_t rx(int fd, struct sockaddr_in *from)
{
	socklen_t fl = sizeof(*from);
	ssize_t n;

	do
		n = recvfrom(fd, buf, sizeof(buf), spin ? MSG_DONTWAIT : 0,
			     (struct sockaddr *)from, &fl);
	while (n < 0 && (errno == EAGAIN || errno == EINTR) && !stop);
	return n;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sig }; /* no SA_RESTART */
	struct sockaddr_in peer = { .sin_family = AF_INET }, from;
	uint8_t msg[65536] = { 0 };
	struct pp_lat l;
	size_t size;
	double secs;
	uint64_t seq = 0;
	int fd;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	spin = getenv("UDP_PP_SPIN") && atoi(getenv("UDP_PP_SPIN")) > 0;
	if (argc == 4 && !strcmp(argv[1], "reflect")) {
		fd = sock(argv[2], atoi(argv[3]));
		printf("udp-pp: ready\n");
		fflush(stdout);
		while (!stop) {
			ssize_t got = rx(fd, &from);

			if (got >= 0)
				sendto(fd, buf, (size_t)got, 0, (struct sockaddr *)&from, sizeof(from));
		}
		return 0;
	}
	if (argc != 7 || strcmp(argv[1], "ping")) {
		fprintf(stderr, "usage: udp-pp reflect LOCAL_IP PORT\n"
				"       udp-pp ping LOCAL_IP PEER_IP PORT SIZE SECONDS\n");
		return 2;
	}
	fd = sock(argv[2], 0);
	if (!inet_aton(argv[3], &peer.sin_addr)) {
		errno = EINVAL;
		die("PEER_IP");
	}
	peer.sin_port = htons((uint16_t)atoi(argv[4]));
	size = (size_t)atoi(argv[5]);
	secs = atof(argv[6]);
	if (size < sizeof(seq) || size > sizeof(msg)) {
		errno = EINVAL;
		die("SIZE (8-65536)");
	}
	if (pp_lat_init(&l, secs))
		die("calloc");
	while (!stop && now_ns() < l.end) {
		uint64_t t0, t1, got;

		memcpy(msg, &seq, sizeof(seq));
		t0 = now_ns();
		if (sendto(fd, msg, size, 0, (struct sockaddr *)&peer, sizeof(peer)) < 0)
			die("sendto");
		do {
			if (rx(fd, &from) < 0)
				break;
			memcpy(&got, buf, sizeof(got));
		} while (got != seq && !stop);
		t1 = now_ns();
		seq++;
		pp_lat_add(&l, t0, t1);
	}
	if (pp_lat_sort(&l, "udp-pp"))
		return 1;
	printf("udp-pp: observations=%zu\n", l.n);
	pp_lat_print(&l, "udp-pp");
	return 0;
}
