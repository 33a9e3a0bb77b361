// SPDX-License-Identifier: Apache-2.0
// t2t-strategy - the tick-to-trade rig's reference strategy. It subscribes
// to the feed (feed.h) on a UDP multicast group and, on a deterministic
// rule (every Nth tick, by sequence number), sends a FIX 4.4 BUY
// NewOrderSingle through QuickFIX; when the ExecutionReport fills it, it
// sends the closing SELL (seed 004: market data -> BUY -> fill -> SELL).
//
// Measured, all on CLOCK_MONOTONIC (one host, one clock):
//   tick_to_trade  BUY's arrival at the exchange (tag 9003) - tick send_ns
//   in_app         tick received (recv returned) -> BUY sent (QuickFIX's
//                  send returned)
//   round_trip     order handed to QuickFIX -> its fill received (BUY
//                  and SELL)
//   sell           BUY's fill received -> SELL's arrival at the exchange
//                  (seed 004's SELL row)
// and the accounting: ticks received, lost (sequence gaps and a short
// total), out of sequence, orders without a fill, FIX sequence errors.
// Prints one line of JSON on stdout and a table on stderr; exit status 0
// when every tick and every order is accounted for, 1 otherwise.
//
//   t2t-strategy [--every N] [--if ADDR] [--idle SECONDS] [--json FILE]
//                GROUP PORT EXCHANGE-HOST EXCHANGE-PORT
#include "feed.h"
#include "fixapp.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <quickfix/MessageCracker.h>
#include <quickfix/NullStore.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketInitiator.h>
#include <quickfix/fix44/ExecutionReport.h>
#include <quickfix/fix44/NewOrderSingle.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Order {
	char side; // 'B' or 'S'
	uint64_t tick_ns = 0, tick_rx = 0; // BUY: the tick's send and receipt
	uint64_t pre_send = 0, sent = 0; // around QuickFIX's send
	uint64_t arrival = 0, fill_rx = 0; // exchange arrival, fill received
	long buy = -1; // SELL: the BUY it closes
};

class Strategy : public t2t::App {
public:
	void received(uint64_t rx) override { fill_rx_ = rx; }

	void onMessage(const FIX44::ExecutionReport &r,
		       const FIX::SessionID &) override
	{
		FIX::ClOrdID cl;
		FIX::ExecType et;

		r.get(cl);
		r.get(et);
		if (et != FIX::ExecType_FILL) {
			bad_reports_++;
			return;
		}
		long n = std::atol(cl.getString().c_str() + 1);
		uint64_t arrival = std::strtoull(
			r.getField(t2t::TAG_ARRIVAL_NS).c_str(), nullptr, 10);
		bool close = false;
		{
			std::lock_guard<std::mutex> g(s_.mu_);
			if (n < 0 || n >= (long)orders_.size() ||
			    orders_[n].fill_rx) {
				bad_reports_++;
				return;
			}
			orders_[n].arrival = arrival;
			orders_[n].fill_rx = fill_rx_;
			filled_++;
			close = orders_[n].side == 'B';
			s_.cv_.notify_all();
		}
		if (close)
			send('S', 0, 0, n, 0);
	}

	// send: one order; returns its number
	void send(char side, uint64_t tick_ns, uint64_t tick_rx, long buy,
		  uint64_t tick_seq)
	{
		long n;
		{
			std::lock_guard<std::mutex> g(s_.mu_);
			n = (long)orders_.size();
			Order o;
			o.side = side;
			o.tick_ns = tick_ns;
			o.tick_rx = tick_rx;
			o.buy = buy;
			orders_.push_back(o);
		}
		FIX44::NewOrderSingle o(
			FIX::ClOrdID(std::string(1, side) + std::to_string(n)),
			FIX::Side(side == 'B' ? FIX::Side_BUY : FIX::Side_SELL),
			FIX::TransactTime(), FIX::OrdType(FIX::OrdType_MARKET));
		o.set(FIX::Symbol("T2T"));
		o.set(FIX::OrderQty(100));
		o.setField(t2t::TAG_TICK_NS, std::to_string(tick_ns));
		o.setField(t2t::TAG_TICK_SEQ, std::to_string(tick_seq));
		uint64_t pre = t2t::now_ns();
		bool ok = FIX::Session::sendToTarget(o, s_.id());
		uint64_t sent = t2t::now_ns();
		std::lock_guard<std::mutex> g(s_.mu_);
		orders_[n].pre_send = pre;
		orders_[n].sent = sent;
		if (!ok)
			send_errors_++;
	}

	bool all_filled(int secs)
	{
		return s_.wait(secs, [this] {
			return filled_ == (long)orders_.size() &&
			       filled_ == 2 * buys_;
		});
	}

	std::vector<Order> orders_;
	long filled_ = 0, buys_ = 0; // under s_.mu_
	uint64_t fill_rx_ = 0; // QuickFIX's thread only
	std::atomic<long> bad_reports_{ 0 }, send_errors_{ 0 };
};

struct Stats {
	std::vector<uint64_t> v;
	void add(uint64_t a, uint64_t b) { v.push_back(b > a ? b - a : 0); }
	uint64_t pct(double p) const
	{
		if (v.empty())
			return 0;
		size_t k = (size_t)std::ceil(p / 100.0 * (double)v.size());
		return v[k ? k - 1 : 0];
	}
	std::string json()
	{
		std::sort(v.begin(), v.end());
		double sum = 0, sq = 0;
		for (uint64_t x : v)
			sum += (double)x;
		double mean = v.empty() ? 0 : sum / (double)v.size();
		for (uint64_t x : v)
			sq += ((double)x - mean) * ((double)x - mean);
		sd_ = v.size() > 1 ? std::sqrt(sq / (double)(v.size() - 1)) : 0;
		mean_ = mean;
		char b[400];
		std::snprintf(b, sizeof(b),
			      "{\"count\":%zu,\"min\":%llu,\"median\":%llu,"
			      "\"p95\":%llu,\"p99\":%llu,\"p999\":%llu,"
			      "\"max\":%llu,\"mean\":%.0f,\"stddev\":%.0f}",
			      v.size(), (unsigned long long)pct(0),
			      (unsigned long long)pct(50),
			      (unsigned long long)pct(95),
			      (unsigned long long)pct(99),
			      (unsigned long long)pct(99.9),
			      (unsigned long long)(v.empty() ? 0 : v.back()),
			      mean, sd_);
		return b;
	}
	void row(const char *name) const
	{
		std::fprintf(stderr,
			     "%-14s %8zu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f "
			     "%9.2f\n",
			     name, v.size(), pct(0) / 1e3, pct(50) / 1e3,
			     pct(99) / 1e3, pct(99.9) / 1e3,
			     (v.empty() ? 0 : v.back()) / 1e3, mean_ / 1e3,
			     sd_ / 1e3);
	}
	double mean_ = 0, sd_ = 0;
};

int usage(const char *why)
{
	if (why)
		std::fprintf(stderr, "t2t-strategy: %s\n", why);
	std::fprintf(stderr,
		     "usage: t2t-strategy [--every N] [--if ADDR] [--idle SECONDS] "
		     "GROUP PORT EXCHANGE-HOST EXCHANGE-PORT\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	long every = 100, idle = 10;
	const char *ifaddr = "0.0.0.0";
	static const struct option opts[] = {
		{ "every", required_argument, nullptr, 'e' },
		{ "if", required_argument, nullptr, 'i' },
		{ "idle", required_argument, nullptr, 'w' },
		{ nullptr, 0, nullptr, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, nullptr)) != -1) {
		switch (c) {
		case 'e':
			every = std::atol(optarg);
			if (every < 1)
				return usage("--every: send a BUY on every Nth tick, N >= 1");
			break;
		case 'i':
			ifaddr = optarg;
			break;
		case 'w':
			idle = std::atol(optarg);
			if (idle < 1)
				return usage("--idle: seconds without a tick before giving up, >= 1");
			break;
		default:
			return usage(nullptr);
		}
	}
	if (argc - optind != 4)
		return usage("GROUP PORT EXCHANGE-HOST EXCHANGE-PORT are required");
	struct ip_mreq mr = {};
	if (inet_pton(AF_INET, argv[optind], &mr.imr_multiaddr) != 1)
		return usage("GROUP: an IPv4 multicast address");
	if (inet_pton(AF_INET, ifaddr, &mr.imr_interface) != 1)
		return usage("--if: an IPv4 address of this host");
	int port = std::atoi(argv[optind + 1]);
	if (port <= 0 || port > 65535)
		return usage("PORT: 1..65535");

	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int one = 1, rcvbuf = 8 << 20;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	a.sin_addr = mr.imr_multiaddr;
	a.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr))) {
		std::perror("t2t-strategy: bind or IP_ADD_MEMBERSHIP");
		return 1;
	}
	struct timeval tv = { (time_t)idle, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	std::istringstream cfg(t2t::fix_settings(false, argv[optind + 2],
						 argv[optind + 3]));
	FIX::SessionSettings ss(cfg);
	FIX::NullStoreFactory store;
	Strategy app;
	app.orders_.reserve(1 << 16);
	uint64_t received = 0, lost = 0, ooo = 0, last = 0, total = 0, bytes = 0;
	bool end_seen = false;

	try {
		FIX::SocketInitiator ini(app, store, ss);

		ini.start();
		if (!app.s_.wait_logon(30)) {
			std::fprintf(stderr, "t2t-strategy: no FIX logon at %s:%s in 30 s\n",
				     argv[optind + 2], argv[optind + 3]);
			ini.stop(true);
			return 1;
		}
		std::fprintf(stderr, "t2t-strategy: logged on, subscribed\n");
		char buf[2048];
		for (;;) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);
			uint64_t rx = t2t::now_ns();
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				std::fprintf(stderr, "t2t-strategy: no tick in %ld s, "
						     "no end marker\n",
					     idle);
				break;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < (ssize_t)sizeof(t2t::Tick)) {
				std::perror("t2t-strategy: recv");
				break;
			}
			t2t::Tick tk;
			std::memcpy(&tk, buf, sizeof(tk));
			if (tk.flags & t2t::TICK_END) {
				end_seen = true;
				total = tk.seq;
				break;
			}
			received++;
			bytes += (uint64_t)n;
			if (tk.seq <= last) {
				ooo++;
				continue;
			}
			lost += tk.seq - last - 1;
			last = tk.seq;
			if (tk.seq % (uint64_t)every == 0) {
				{
					std::lock_guard<std::mutex> g(app.s_.mu_);
					app.buys_++;
				}
				app.send('B', tk.send_ns, rx, -1, tk.seq);
			}
		}
		if (end_seen && total > last)
			lost += total - last; // the tail never came
		if (!app.all_filled(30))
			std::fprintf(stderr, "t2t-strategy: fills missing after 30 s\n");
		FIX::Session *s = FIX::Session::lookupSession(app.s_.id());
		if (s)
			s->logout();
		if (!app.s_.wait_logout(10))
			std::fprintf(stderr, "t2t-strategy: logout not confirmed\n");
		ini.stop();
	} catch (std::exception &e) {
		std::fprintf(stderr, "t2t-strategy: %s\n", e.what());
		return 1;
	}
	close(fd);

	Stats t2t, inapp, rtt, sell;
	long unfilled = 0, nbuy = 0, nsell = 0;
	{
		std::lock_guard<std::mutex> g(app.s_.mu_);
		for (const Order &o : app.orders_) {
			if (!o.fill_rx) {
				unfilled++;
				continue;
			}
			rtt.add(o.pre_send, o.fill_rx);
			if (o.side == 'B') {
				nbuy++;
				t2t.add(o.tick_ns, o.arrival);
				inapp.add(o.tick_rx, o.sent);
			} else {
				nsell++;
				sell.add(app.orders_[o.buy].fill_rx, o.arrival);
			}
		}
	}
	long buys = app.buys_;
	bool ok = end_seen && lost == 0 && ooo == 0 && unfilled == 0 &&
		  nsell == buys && app.s_.seq_errors() == 0 &&
		  app.s_.recovery() == 0 && app.bad_reports_ == 0 &&
		  app.send_errors_ == 0 && received == total;
	std::string jt = t2t.json(), ji = inapp.json(), jr = rtt.json(),
		    js = sell.json();
	std::printf("{\"ok\":%s,\"ticks\":{\"sent\":%llu,\"received\":%llu,"
		    "\"lost\":%llu,\"out_of_sequence\":%llu,\"end_marker\":%s,"
		    "\"bytes\":%llu},"
		    "\"orders\":{\"sent\":%zu,\"buy\":%ld,\"sell\":%ld,"
		    "\"unfilled\":%ld,\"every\":%ld},"
		    "\"fix\":{\"seq_errors\":%ld,\"recovery\":%ld,"
		    "\"bad_reports\":%ld,\"send_errors\":%ld},"
		    "\"latency_ns\":{\"tick_to_trade\":%s,\"in_app\":%s,"
		    "\"round_trip\":%s,\"sell\":%s}}\n",
		    ok ? "true" : "false", (unsigned long long)total,
		    (unsigned long long)received, (unsigned long long)lost,
		    (unsigned long long)ooo, end_seen ? "true" : "false",
		    (unsigned long long)bytes, app.orders_.size(), nbuy, nsell, unfilled, every,
		    app.s_.seq_errors(), app.s_.recovery(),
		    (long)app.bad_reports_, (long)app.send_errors_, jt.c_str(),
		    ji.c_str(), jr.c_str(), js.c_str());
	std::fprintf(stderr,
		     "ticks: %llu sent, %llu received, %llu lost, %llu out of "
		     "sequence; orders: %ld BUY, %ld SELL, %ld without a fill\n"
		     "%-14s %8s %9s %9s %9s %9s %9s %9s %9s\n",
		     (unsigned long long)total, (unsigned long long)received,
		     (unsigned long long)lost, (unsigned long long)ooo, nbuy,
		     nsell, unfilled, "(us)", "count", "min", "median", "p99",
		     "p99.9", "max", "mean", "sd");
	t2t.row("tick-to-trade");
	inapp.row("in-app");
	rtt.row("order->fill");
	sell.row("fill->SELL");
	return ok ? 0 : 1;
}
