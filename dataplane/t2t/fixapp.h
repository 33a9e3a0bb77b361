// SPDX-License-Identifier: Apache-2.0
// fixapp.h - what the rig's two FIX ends and the FIX session test
// (tests/fixcheck.cpp) share: the session settings (FIX 4.4, no data
// dictionary) and the checks that the session never had to recover and its
// sequence numbers came in order.
#ifndef TICKSTACK_T2T_FIXAPP_H
#define TICKSTACK_T2T_FIXAPP_H

#include "feed.h"

#include <quickfix/Application.h>
#include <quickfix/Message.h>
#include <quickfix/MessageCracker.h>
#include <quickfix/Values.h>
#include <quickfix/fix44/NewOrderSingle.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>

namespace t2t {

inline std::string fix_settings(bool acceptor, const std::string &host,
				const std::string &port)
{
	std::ostringstream s;

	s << "[DEFAULT]\n"
	  << "ConnectionType=" << (acceptor ? "acceptor" : "initiator") << "\n"
	  << "StartTime=00:00:00\nEndTime=00:00:00\n"
	  << "HeartBtInt=30\nUseDataDictionary=N\nResetOnLogon=Y\n"
	  << "ReconnectInterval=1\nSocketNodelay=Y\n"
	  << (acceptor ? "SocketAcceptPort=" + port + "\n" :
			 "SocketConnectHost=" + host +
				 "\nSocketConnectPort=" + port + "\n")
	  << "[SESSION]\nBeginString=FIX.4.4\n"
	  << "SenderCompID=" << (acceptor ? "EXCH" : "STRAT") << "\n"
	  << "TargetCompID=" << (acceptor ? "STRAT" : "EXCH") << "\n";
	return s.str();
}

// OrderFields: what an acceptor reads of a NewOrderSingle to answer it with
// an ExecutionReport.
struct OrderFields {
	explicit OrderFields(const FIX44::NewOrderSingle &o)
	{
		o.get(cl);
		o.get(sym);
		o.get(side);
		o.get(qty);
	}
	FIX::ClOrdID cl;
	FIX::Symbol sym;
	FIX::Side side;
	FIX::OrderQty qty;
};

// Session: logon/logout state and the sequence checks of one end.
class Session {
public:
	void logon(const FIX::SessionID &id)
	{
		std::lock_guard<std::mutex> g(mu_);
		id_ = id;
		on_ = true;
		cv_.notify_all();
	}
	void logout()
	{
		std::lock_guard<std::mutex> g(mu_);
		off_ = true;
		cv_.notify_all();
	}
	// admin: every message the session received; counts recovery messages
	// (ResendRequest, SequenceReset, Reject), which a stream that loses
	// nothing never needs
	void admin(const FIX::Message &m)
	{
		FIX::MsgType t;

		m.getHeader().getField(t);
		if (t == FIX::MsgType_ResendRequest ||
		    t == FIX::MsgType_SequenceReset || t == FIX::MsgType_Reject)
			recovery_++;
		seq(m);
	}
	// seq: MsgSeqNum must grow by one with every message received
	void seq(const FIX::Message &m)
	{
		FIX::MsgSeqNum n;

		m.getHeader().getField(n);
		std::lock_guard<std::mutex> g(mu_);
		if (last_seq_ && n != last_seq_ + 1)
			seq_errors_++;
		last_seq_ = n;
	}
	template <class Pred> bool wait(int secs, Pred p)
	{
		std::unique_lock<std::mutex> g(mu_);
		return cv_.wait_for(g, std::chrono::seconds(secs), p);
	}
	bool wait_logon(int secs)
	{
		return wait(secs, [this] { return on_; });
	}
	bool wait_logout(int secs)
	{
		return wait(secs, [this] { return off_; });
	}
	void notify()
	{
		std::lock_guard<std::mutex> g(mu_);
		cv_.notify_all();
	}
	FIX::SessionID id()
	{
		std::lock_guard<std::mutex> g(mu_);
		return id_;
	}
	long seq_errors()
	{
		std::lock_guard<std::mutex> g(mu_);
		return seq_errors_;
	}
	int last_seq()
	{
		std::lock_guard<std::mutex> g(mu_);
		return last_seq_;
	}
	long recovery() const { return recovery_; }

	std::mutex mu_; // also guards the application's own state
	std::condition_variable cv_;

private:
	FIX::SessionID id_;
	bool on_ = false, off_ = false;
	int last_seq_ = 0;
	long seq_errors_ = 0;
	std::atomic<long> recovery_{ 0 };
};

// App: what both ends do with every callback but the message they handle:
// the session's logon/logout and sequence checks, and the time each
// application message arrived (taken first, before any lock), handed to
// received() before the message is cracked to the end's onMessage.
class App : public FIX::Application, public FIX::MessageCracker {
public:
	void onCreate(const FIX::SessionID &) override {}
	void onLogon(const FIX::SessionID &id) override { s_.logon(id); }
	void onLogout(const FIX::SessionID &) override { s_.logout(); }
	void toAdmin(FIX::Message &, const FIX::SessionID &) override {}
	void toApp(FIX::Message &, const FIX::SessionID &)
		throw(FIX::DoNotSend) override {}
	void fromAdmin(const FIX::Message &m, const FIX::SessionID &)
		throw(FIX::FieldNotFound, FIX::IncorrectDataFormat,
		      FIX::IncorrectTagValue, FIX::RejectLogon) override
	{
		s_.admin(m);
	}
	void fromApp(const FIX::Message &m, const FIX::SessionID &id)
		throw(FIX::FieldNotFound, FIX::IncorrectDataFormat,
		      FIX::IncorrectTagValue,
		      FIX::UnsupportedMessageType) override
	{
		uint64_t rx = now_ns();

		s_.seq(m);
		received(rx);
		crack(m, id);
	}

	Session s_;

protected:
	// received: an application message arrived at rx (QuickFIX's thread)
	virtual void received(uint64_t rx) = 0;
};

} // namespace t2t

#endif
