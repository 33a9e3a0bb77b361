// SPDX-License-Identifier: Apache-2.0
// fixcheck.cpp - a FIX 4.4 session with QuickFIX (Debian libquickfix-dev),
// an ordinary program the harness runs through the interposer:
//
//   fixcheck acceptor PORT N        answers every NewOrderSingle with an
//                                   ExecutionReport, exits after the logout
//   fixcheck initiator HOST PORT N  logs on, sends N NewOrderSingle, waits
//                                   for the N ExecutionReports, logs out
//
// Both ends check that the application messages arrive in order, each
// exactly once (ClOrdID 1..N, MsgSeqNum consecutive), and that the
// session never had to recover (no ResendRequest, SequenceReset or Reject).
// Exit status 0 on success, 1 with a message otherwise.
#include "../t2t/fixapp.h"

#include <quickfix/NullStore.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketAcceptor.h>
#include <quickfix/SocketInitiator.h>
#include <quickfix/fix44/ExecutionReport.h>
#include <quickfix/fix44/NewOrderSingle.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace {

// App: the session's logon/logout and its sequence and recovery checks are
// t2t::App's (the tick-to-trade rig's two FIX ends); this adds the ClOrdID
// check of both ends and the acceptor's ExecutionReport.
class App : public t2t::App {
public:
	explicit App(bool acceptor) : acceptor_(acceptor) {}

	void onMessage(const FIX44::NewOrderSingle &o,
		       const FIX::SessionID &id) override
	{
		const t2t::OrderFields f(o);

		check_id(f.cl);
		FIX44::ExecutionReport r(FIX::OrderID("O" + f.cl.getString()),
					 FIX::ExecID("E" + f.cl.getString()),
					 FIX::ExecType(FIX::ExecType_NEW),
					 FIX::OrdStatus(FIX::OrdStatus_NEW), f.side,
					 FIX::LeavesQty(f.qty), FIX::CumQty(0),
					 FIX::AvgPx(0));
		r.set(f.cl);
		r.set(f.sym);
		FIX::Session::sendToTarget(r, id);
	}
	void onMessage(const FIX44::ExecutionReport &r,
		       const FIX::SessionID &) override
	{
		FIX::ClOrdID cl;

		r.get(cl);
		check_id(cl);
	}

	bool wait_count(long n, int secs)
	{
		return s_.wait(secs, [this, n] { return count_ >= n; });
	}
	long count()
	{
		std::lock_guard<std::mutex> g(s_.mu_);
		return count_;
	}
	// failed: a ClOrdID out of order, a MsgSeqNum that did not grow by
	// one, or a recovery message (ResendRequest, SequenceReset, Reject),
	// which a stream that loses nothing never needs
	bool failed()
	{
		if (s_.seq_errors())
			fail(std::to_string(s_.seq_errors()) +
			     " MsgSeqNum out of order");
		if (s_.recovery())
			fail(std::to_string(s_.recovery()) +
			     " session recovery messages");
		return failed_;
	}

protected:
	void received(uint64_t) override {}

private:
	void check_id(const FIX::ClOrdID &cl)
	{
		long want;
		{
			std::lock_guard<std::mutex> g(s_.mu_);
			want = ++count_;
			s_.cv_.notify_all();
		}
		if (cl.getString() != std::to_string(want))
			fail("ClOrdID " + cl.getString() + ", want " +
			     std::to_string(want));
	}
	void fail(const std::string &why)
	{
		std::fprintf(stderr, "fixcheck %s: %s\n",
			     acceptor_ ? "acceptor" : "initiator", why.c_str());
		failed_ = true;
	}

	bool acceptor_;
	long count_ = 0; // under s_.mu_
	std::atomic<bool> failed_{ false };
};

int usage()
{
	std::fprintf(stderr, "usage: fixcheck acceptor PORT N | fixcheck "
			     "initiator HOST PORT N\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	std::string mode = argv[1];
	bool acc = mode == "acceptor";

	if (!((acc && argc == 4) || (mode == "initiator" && argc == 5)))
		return usage();
	long n = std::atol(argv[argc - 1]);
	std::istringstream cfg(
		t2t::fix_settings(acc, acc ? "" : argv[2],
				  acc ? argv[2] : argv[3]));
	FIX::SessionSettings ss(cfg);
	FIX::NullStoreFactory store;
	App app(acc);

	try {
		if (acc) {
			FIX::SocketAcceptor a(app, store, ss);

			a.start();
			if (!app.s_.wait_logon(30) || !app.s_.wait_logout(300)) {
				std::fprintf(stderr, "fixcheck acceptor: no logon "
						     "or logout in time\n");
				a.stop(true);
				return 1;
			}
			a.stop();
		} else {
			FIX::SocketInitiator i(app, store, ss);

			i.start();
			if (!app.s_.wait_logon(30)) {
				std::fprintf(stderr, "fixcheck initiator: no "
						     "logon\n");
				i.stop(true);
				return 1;
			}
			FIX::SessionID id = app.s_.id();
			auto t0 = std::chrono::steady_clock::now();

			for (long k = 1; k <= n; k++) {
				FIX44::NewOrderSingle o(
					FIX::ClOrdID(std::to_string(k)),
					FIX::Side(FIX::Side_BUY),
					FIX::TransactTime(),
					FIX::OrdType(FIX::OrdType_MARKET));
				o.set(FIX::Symbol("TICK"));
				o.set(FIX::OrderQty(100));
				FIX::Session::sendToTarget(o, id);
			}
			if (!app.wait_count(n, 120)) {
				std::fprintf(stderr, "fixcheck initiator: %ld of "
						     "%ld execution reports\n",
					     app.count(), n);
				i.stop(true);
				return 1;
			}
			auto us = std::chrono::duration_cast<std::chrono::microseconds>(
					  std::chrono::steady_clock::now() - t0)
					  .count();
			FIX::Session::lookupSession(id)->logout();
			if (!app.s_.wait_logout(30))
				std::fprintf(stderr, "fixcheck initiator: logout "
						     "not confirmed\n");
			i.stop();
			std::printf("fixcheck: %ld orders, %ld execution reports "
				    "in %lld us\n",
				    n, app.count(), (long long)us);
		}
	} catch (std::exception &e) {
		std::fprintf(stderr, "fixcheck %s: %s\n", mode.c_str(), e.what());
		return 1;
	}
	if (app.failed() || app.count() != n) {
		std::fprintf(stderr, "fixcheck %s: %ld of %ld messages\n",
			     mode.c_str(), app.count(), n);
		return 1;
	}
	return 0;
}
