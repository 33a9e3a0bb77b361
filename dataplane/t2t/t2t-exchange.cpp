// SPDX-License-Identifier: Apache-2.0
// t2t-exchange - the tick-to-trade rig's exchange simulator: a QuickFIX
// FIX 4.4 acceptor that fills every NewOrderSingle at once (one
// ExecutionReport, ExecType FILL) and records when the order arrived
// (CLOCK_MONOTONIC at its fromApp, sent back in tag 9003). It exits after
// the initiator's logout and prints one line of JSON: orders by side, the
// FIX sequence checks.
//
//   t2t-exchange [--timeout SECONDS] PORT
#include "feed.h"
#include "fixapp.h"

#include <quickfix/MessageCracker.h>
#include <quickfix/NullStore.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketAcceptor.h>
#include <quickfix/fix44/ExecutionReport.h>
#include <quickfix/fix44/NewOrderSingle.h>

#include <cstdlib>
#include <cstring>

namespace {

class Exchange : public t2t::App {
public:
	void received(uint64_t rx) override { arrival_ = rx; }

	void onMessage(const FIX44::NewOrderSingle &o,
		       const FIX::SessionID &id) override
	{
		const t2t::OrderFields f(o);

		long n = ++orders_;
		if (f.side == FIX::Side_BUY)
			buys_++;
		else
			sells_++;
		FIX::Price px(100.0);
		FIX44::ExecutionReport r(FIX::OrderID("X" + std::to_string(n)),
					 FIX::ExecID("E" + std::to_string(n)),
					 FIX::ExecType(FIX::ExecType_FILL),
					 FIX::OrdStatus(FIX::OrdStatus_FILLED),
					 f.side, FIX::LeavesQty(0),
					 FIX::CumQty(f.qty), FIX::AvgPx(px));
		r.set(f.cl);
		r.set(f.sym);
		r.set(FIX::LastQty(f.qty));
		r.set(FIX::LastPx(px));
		r.setField(t2t::TAG_ARRIVAL_NS, std::to_string(arrival_));
		FIX::Session::sendToTarget(r, id);
	}

	uint64_t arrival_ = 0; // QuickFIX calls fromApp from one thread
	long orders_ = 0, buys_ = 0, sells_ = 0;
};

int usage(const char *why)
{
	if (why)
		std::fprintf(stderr, "t2t-exchange: %s\n", why);
	std::fprintf(stderr, "usage: t2t-exchange [--timeout SECONDS] PORT\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	int timeout = 600, i = 1;

	if (argc > 2 && !std::strcmp(argv[1], "--timeout")) {
		timeout = std::atoi(argv[2]);
		if (timeout <= 0)
			return usage("--timeout: a number of seconds above 0");
		i = 3;
	}
	if (argc - i != 1)
		return usage(nullptr);
	int port = std::atoi(argv[i]);
	if (port <= 0 || port > 65535)
		return usage("PORT: 1..65535");
	std::istringstream cfg(t2t::fix_settings(true, "", argv[i]));
	FIX::SessionSettings ss(cfg);
	FIX::NullStoreFactory store;
	Exchange app;

	try {
		FIX::SocketAcceptor a(app, store, ss);

		a.start();
		std::fprintf(stderr, "t2t-exchange: listening on %d\n", port);
		if (!app.s_.wait_logon(timeout) || !app.s_.wait_logout(timeout)) {
			std::fprintf(stderr, "t2t-exchange: no logon or logout "
					     "in %d s\n",
				     timeout);
			a.stop(true);
			return 1;
		}
		a.stop();
	} catch (std::exception &e) {
		std::fprintf(stderr, "t2t-exchange: %s\n", e.what());
		return 1;
	}
	std::printf("{\"orders\":%ld,\"buy\":%ld,\"sell\":%ld,"
		    "\"fix_seq_errors\":%ld,\"fix_recovery\":%ld,"
		    "\"fix_last_seq\":%d}\n",
		    app.orders_, app.buys_, app.sells_, app.s_.seq_errors(),
		    app.s_.recovery(), app.s_.last_seq());
	return app.s_.seq_errors() || app.s_.recovery() ? 1 : 0;
}
