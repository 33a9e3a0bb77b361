// SPDX-License-Identifier: Apache-2.0
// t2t-pub - the tick-to-trade rig's market-data publisher: ticks (feed.h)
// to a UDP multicast group at a steady rate, optionally with seed 003's
// mix (2/3 of the messages 100 bytes, 1/3 600 bytes) and one-second bursts
// every other second. Then the end marker (three times), and one line of
// JSON on stdout: {"sent":N,...}. IP_MULTICAST_LOOP is off unless --loop
// (a subscriber in the publisher's own network namespace needs it; the
// bypass stack sends looped datagrams through the kernel).
//
//   t2t-pub [--rate MSG/S] [--seconds S] [--size BYTES] [--mix seed003]
//           [--burst MSG/S] [--if ADDR] [--ttl N] [--loop] GROUP PORT
#include "feed.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int usage(const char *why)
{
	if (why)
		std::fprintf(stderr, "t2t-pub: %s\n", why);
	std::fprintf(stderr,
		     "usage: t2t-pub [--rate MSG/S] [--seconds S] [--size BYTES] "
		     "[--mix seed003] [--burst MSG/S] [--if ADDR] [--ttl N] "
		     "[--loop] GROUP PORT\n");
	return 2;
}

bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	long v = std::strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

void wait_until(uint64_t t)
{
	uint64_t now = t2t::now_ns();

	// sleep when the next tick is far, spin the last 50 us
	if (t > now + 100000) {
		uint64_t w = t - 50000;
		struct timespec ts = { (time_t)(w / 1000000000ull),
				       (long)(w % 1000000000ull) };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
	}
	while (t2t::now_ns() < t)
		;
}

} // namespace

int main(int argc, char **argv)
{
	long rate = 1000, seconds = 5, size = 32, burst = 0, ttl = 1;
	bool mix = false;
	unsigned char loop = 0;
	const char *ifaddr = nullptr;
	static const struct option opts[] = {
		{ "rate", required_argument, nullptr, 'r' },
		{ "seconds", required_argument, nullptr, 's' },
		{ "size", required_argument, nullptr, 'z' },
		{ "mix", required_argument, nullptr, 'm' },
		{ "burst", required_argument, nullptr, 'b' },
		{ "if", required_argument, nullptr, 'i' },
		{ "ttl", required_argument, nullptr, 't' },
		{ "loop", no_argument, nullptr, 'l' },
		{ nullptr, 0, nullptr, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, nullptr)) != -1) {
		switch (c) {
		case 'r':
			if (!parse_long(optarg, 1, 10000000, &rate))
				return usage("--rate: a rate in messages per second, 1..10000000");
			break;
		case 's':
			if (!parse_long(optarg, 1, 86400, &seconds))
				return usage("--seconds: 1..86400");
			break;
		case 'z':
			if (!parse_long(optarg, sizeof(t2t::Tick), 1472, &size))
				return usage("--size: 32..1472 bytes");
			break;
		case 'm':
			if (std::strcmp(optarg, "seed003"))
				return usage("--mix: the only mix is seed003");
			mix = true;
			break;
		case 'b':
			if (!parse_long(optarg, 0, 10000000, &burst))
				return usage("--burst: extra messages per second in every other second, 0..10000000");
			break;
		case 'i':
			ifaddr = optarg;
			break;
		case 't':
			if (!parse_long(optarg, 1, 255, &ttl))
				return usage("--ttl: 1..255");
			break;
		case 'l':
			loop = 1;
			break;
		default:
			return usage(nullptr);
		}
	}
	if (argc - optind != 2)
		return usage("GROUP and PORT are required");
	struct sockaddr_in dst = {};
	long port;
	dst.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[optind], &dst.sin_addr) != 1)
		return usage("GROUP: an IPv4 address");
	if (!parse_long(argv[optind + 1], 1, 65535, &port))
		return usage("PORT: 1..65535");
	dst.sin_port = htons((uint16_t)port);

	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		std::perror("t2t-pub: socket");
		return 1;
	}
	unsigned char t = (unsigned char)ttl;
	setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &t, sizeof(t));
	// no copy to this namespace's own members unless --loop: the
	// subscribers are elsewhere, and a looped copy only the kernel can
	// give (the stack sends such datagrams through the kernel)
	setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop));
	if (ifaddr) {
		struct in_addr a;
		if (inet_pton(AF_INET, ifaddr, &a) != 1)
			return usage("--if: an IPv4 address of this host");
		if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &a, sizeof(a))) {
			std::perror("t2t-pub: IP_MULTICAST_IF");
			return 1;
		}
	}

	char buf[1472] = {};
	auto *tk = reinterpret_cast<t2t::Tick *>(buf);
	uint64_t t0 = t2t::now_ns() + 1000000, next = t0;
	uint64_t end = t0 + (uint64_t)seconds * 1000000000ull;
	uint64_t seq = 0, errors = 0, late_max = 0;
	int64_t price = 1000000; // 100.0000
	uint32_t lcg = 4; // seed 004

	while (next < end) {
		wait_until(next);
		uint64_t now = t2t::now_ns();
		if (now - next > late_max)
			late_max = now - next;
		lcg = lcg * 1664525u + 1013904223u;
		price += (int64_t)(lcg >> 28) - 7;
		tk->seq = ++seq;
		tk->instrument = 1;
		tk->flags = 0;
		tk->price = price;
		size_t len = mix ? (seq % 3 == 0 ? 600 : 100) : (size_t)size;
		tk->send_ns = t2t::now_ns();
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&dst,
			   sizeof(dst)) != (ssize_t)len)
			errors++;
		// seed 003: the burst rate adds in every other second
		long r = rate;
		if (burst && ((next - t0) / 1000000000ull) % 2 == 1)
			r += burst;
		next += 1000000000ull / (uint64_t)r;
	}
	uint64_t took = t2t::now_ns() - t0;
	tk->seq = seq;
	tk->flags = t2t::TICK_END;
	for (int i = 0; i < 3; i++) {
		tk->send_ns = t2t::now_ns();
		sendto(fd, buf, sizeof(t2t::Tick), 0, (struct sockaddr *)&dst,
		       sizeof(dst));
		usleep(1000);
	}
	close(fd);
	std::printf("{\"sent\":%llu,\"send_errors\":%llu,\"rate\":%ld,"
		    "\"burst\":%ld,\"mix\":\"%s\",\"seconds\":%.3f,"
		    "\"late_max_ns\":%llu}\n",
		    (unsigned long long)seq, (unsigned long long)errors, rate,
		    burst, mix ? "seed003" : "steady", took / 1e9,
		    (unsigned long long)late_max);
	return errors ? 1 : 0;
}
