// SPDX-License-Identifier: Apache-2.0
// feed.h - the tick-to-trade rig's market-data feed and what its three
// programs share (docs/benchmark-methods.md, "Tick-to-trade").
//
// One UDP datagram per tick, host byte order (publisher and strategy run on
// one host: tick-to-trade needs one clock):
//   seq      1, 2, 3, ... per run; the end marker carries the total
//   send_ns  CLOCK_MONOTONIC when the publisher handed it to sendto()
//   instrument, price (1/10,000 units)
// padded with zeros to the message size (32 bytes at least; seed 003's mix
// sends 100 and 600 bytes).
//
// FIX tags of the rig (user-defined range 5000-9999):
//   9001 on a NewOrderSingle: send_ns of the tick that triggered it
//   9002 on a NewOrderSingle: seq of that tick (0 on a closing SELL)
//   9003 on an ExecutionReport: CLOCK_MONOTONIC when the order arrived at
//        the exchange simulator (its fromApp)
#ifndef TICKSTACK_T2T_FEED_H
#define TICKSTACK_T2T_FEED_H

#include <cstdint>
#include <ctime>

namespace t2t {

struct Tick {
	uint64_t seq;
	uint64_t send_ns;
	uint32_t instrument;
	uint32_t flags;
	int64_t price;
} __attribute__((packed));

static_assert(sizeof(Tick) == 32, "the feed's header is 32 bytes");

constexpr uint32_t TICK_END = 1; // end marker: seq is the number of ticks sent
constexpr int TAG_TICK_NS = 9001;
constexpr int TAG_TICK_SEQ = 9002;
constexpr int TAG_ARRIVAL_NS = 9003;

inline uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

} // namespace t2t

#endif
