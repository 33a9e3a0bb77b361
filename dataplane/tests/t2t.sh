# shellcheck shell=bash disable=SC2154,SC2153 # here, TSDP_ID: set by harness.sh and lib.sh
# tests/t2t.sh - the tick-to-trade rig's cases of the harness (sourced by
# harness.sh, which provides accel, kern, taccel, die, log, wait_for,
# stat_sum and the cleanup). Publisher, strategy and exchange simulator
# each have a namespace (one XSK queue per interface: one accelerated
# process per namespace), joined by a bridge in a fourth, as a switch
# would; the feed is UDP multicast (a route for 224.0.0.0/4 in the
# publisher's namespace), the order leg a FIX 4.4 session over TCP. Each case checks exact counts: every tick the publisher
# sent was received in sequence, every BUY was filled and closed by a SELL,
# the exchange saw every order and both ends' FIX sequence numbers came in
# order; and the path each leg took, from the stack's statistics files.

T2T_GRP=239.198.18.17
T2T_RATE=${T2T_RATE:-10000}
T2T_SECONDS=${T2T_SECONDS:-2}
T2T_EVERY=${T2T_EVERY:-100}
# T2T_KEEP=DIR keeps each run's JSON lines there (<case>-pub.json,
# -strategy.json, -exchange.json)
T2T_KEEP=${T2T_KEEP:-}
# the strategy's SO_RCVTIMEO: it gives up after this long without a tick
T2T_IDLE=${T2T_IDLE:-20}

# jget FILE EXPR: a value of the one-line JSON in FILE (python3 expression
# on j)
jget() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# t2t_topology: namespaces NP (publisher, 198.18.21.1), NB (strategy,
# .2), NX (exchange, .3) on a bridge in NBR
t2t_topology() {
	local n i=1
	rm -f "$TSDP_TMP"/*.out "$TSDP_TMP"/*.json "$TSDP_TMP"/stats-*
	tsdp_ns NP p; tsdp_ns NB s; tsdp_ns NX x; tsdp_ns NBR br
	ip -n "$NBR" link add "tsdp${TSDP_ID}br" type bridge mcast_snooping 0
	ip -n "$NBR" link set "tsdp${TSDP_ID}br" up
	for n in "$NP" "$NB" "$NX"; do
		ip link add "tsdp${TSDP_ID}t$i" netns "$n" type veth peer name "tsdp${TSDP_ID}u$i" netns "$NBR"
		ip -n "$n" addr add "198.18.21.$i/24" dev "tsdp${TSDP_ID}t$i"
		ip -n "$n" link set "tsdp${TSDP_ID}t$i" up
		ip -n "$NBR" link set "tsdp${TSDP_ID}u$i" master "tsdp${TSDP_ID}br" up
		i=$((i + 1))
	done
	ip -n "$NP" route add 224.0.0.0/4 dev "tsdp${TSDP_ID}t1"
	IPB=198.18.21.2
}

# t2t_run PUB-PREFIX STRATEGY-PREFIX EXCHANGE-PREFIX: one run at T2T_RATE,
# the exact counts checked
t2t_run() {
	local pub=$1 strat=$2 exch=$3 ex st sent buys
	$exch timeout 120 "$B"/t2t-exchange --timeout 100 12017 >"$TSDP_TMP/exchange.json" 2>"$TSDP_TMP/exchange.out" &
	ex=$!
	TSDP_PIDS+=("$ex")
	wait_for 10 tcp_listening "$NX" 12017 || { die "exchange did not listen"; return 1; }
	$strat timeout 120 "$B"/t2t-strategy --every "$T2T_EVERY" --if "$IPB" --idle "$T2T_IDLE" \
		$T2T_GRP 12018 198.18.21.3 12017 >"$TSDP_TMP/strategy.json" 2>"$TSDP_TMP/strategy.out" &
	st=$!
	TSDP_PIDS+=("$st")
	wait_for 30 grep -q "logged on, subscribed" "$TSDP_TMP/strategy.out" || { die "strategy did not log on"; return 1; }
	wait_for 5 sh -c "ip netns exec $NB ip maddr show | grep -q $T2T_GRP" || { die "no IGMP join in NB"; return 1; }
	$pub timeout 60 "$B"/t2t-pub --rate "$T2T_RATE" --seconds "$T2T_SECONDS" --if 198.18.21.1 "${T2T_PUB_EXTRA[@]}" \
		$T2T_GRP 12018 >"$TSDP_TMP/pub.json" 2>"$TSDP_TMP/pub.out" || { die "publisher: exit code $?"; return 1; }
	wait_exit "$st" 60 || { die "strategy did not finish"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "strategy: exit code $WAIT_RC (something unaccounted for)"; return 1; }
	wait_exit "$ex" 30 || { die "exchange did not finish"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "exchange: exit code $WAIT_RC"; return 1; }
	cat "$TSDP_TMP/strategy.out"
	if [ -n "$T2T_KEEP" ]; then
		for f in pub strategy exchange; do cp "$TSDP_TMP/$f.json" "$T2T_KEEP/$CUR-$f.json"; done
	fi
	sent=$(jget "$TSDP_TMP/pub.json" 'j["sent"]')
	buys=$((sent / T2T_EVERY))
	[ "$sent" -ge $((T2T_RATE * T2T_SECONDS * 99 / 100)) ] || { die "publisher sent only $sent"; return 1; }
	[ "$(jget "$TSDP_TMP/strategy.json" 'j["ticks"]["sent"], j["ticks"]["received"], j["ticks"]["lost"], j["ticks"]["out_of_sequence"]')" = "($sent, $sent, 0, 0)" ] ||
		{ die "ticks: published $sent, strategy saw $(jget "$TSDP_TMP/strategy.json" 'j["ticks"]')"; return 1; }
	[ "$(jget "$TSDP_TMP/strategy.json" 'j["orders"]["buy"], j["orders"]["sell"], j["orders"]["unfilled"], j["latency_ns"]["tick_to_trade"]["count"]')" = "($buys, $buys, 0, $buys)" ] ||
		{ die "orders: want $buys BUY and SELL filled, got $(jget "$TSDP_TMP/strategy.json" 'j["orders"]')"; return 1; }
	[ "$(jget "$TSDP_TMP/strategy.json" 'j["fix"]')" = "{'seq_errors': 0, 'recovery': 0, 'bad_reports': 0, 'send_errors': 0}" ] ||
		{ die "strategy's FIX session: $(jget "$TSDP_TMP/strategy.json" 'j["fix"]')"; return 1; }
	[ "$(jget "$TSDP_TMP/exchange.json" 'j["orders"], j["buy"], j["sell"], j["fix_seq_errors"], j["fix_recovery"]')" = "($((2 * buys)), $buys, $buys, 0, 0)" ] ||
		{ die "exchange: $(cat "$TSDP_TMP/exchange.json")"; return 1; }
	log "$CUR: $sent ticks, $buys BUY + $buys SELL filled, tick-to-trade median $(jget "$TSDP_TMP/strategy.json" 'j["latency_ns"]["tick_to_trade"]["median"] / 1000') us"
}

# t2t_paths: which path each leg took, from the stats files (market data:
# the strategy's UDP receive and the publisher's send; orders: the FIX
# connections of the strategy and the exchange); sets T2T_MD and T2T_ORD
t2t_paths() {
	local conns
	T2T_MD="kernel"
	T2T_ORD="kernel"
	if ls "$TSDP_TMP"/stats-strat-*.txt >/dev/null 2>&1; then
		[ "$(stat_sum "$TSDP_TMP/stats-strat-*.txt" rx_accel)" -gt 0 ] && T2T_MD="bypass"
		conns=$(cat "$TSDP_TMP"/stats-strat-*.txt | grep '^tcp ' | tr ' ' '\n' | grep '^conns_accel=' |
			cut -d= -f2 | awk '{s+=$1} END {print s+0}')
		[ "$conns" -gt 0 ] && T2T_ORD="bypass"
	fi
	log "$CUR: market data took the $T2T_MD path, orders the $T2T_ORD path"
}

t_t2t_kernel() {
	t2t_topology
	t2t_run "$(kern "$NP")" "$(kern "$NB")" "$(kern "$NX")" || return 1
	t2t_paths
	[ "$T2T_MD/$T2T_ORD" = kernel/kernel ] || { die "the kernel run took $T2T_MD/$T2T_ORD"; return 1; }
}

t_t2t_bypass() { # both legs through the stack (TICKSTACK_TCP=1 for the FIX session)
	local sent
	# correctness, not speed: three processes on two CPUs, none spins
	# shellcheck disable=SC2034 # accel and taccel read it
	local PROFILE=default
	t2t_topology
	t2t_run "$(accel "$NP" pub)" "$(taccel "$NB" strat)" "$(taccel "$NX" exch)" || return 1
	t2t_paths
	[ "$T2T_MD/$T2T_ORD" = bypass/bypass ] || { die "the bypass run took $T2T_MD/$T2T_ORD"; return 1; }
	sent=$(jget "$TSDP_TMP/pub.json" 'j["sent"]')
	# every tick came through the XSK, and the publisher sent through it
	[ "$(stat_sum "$TSDP_TMP/stats-strat-*.txt" rx_accel)" -ge "$sent" ] ||
		{ die "strategy: rx_accel $(stat_sum "$TSDP_TMP/stats-strat-*.txt" rx_accel) of $sent ticks"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-pub-*.txt" tx_accel)" -ge "$sent" ] ||
		{ die "publisher: tx_accel $(stat_sum "$TSDP_TMP/stats-pub-*.txt" tx_accel) of $sent ticks"; return 1; }
	tcp_accel strat 1 && tcp_accel exch 1 && kernel_silent "$NB" "$NX"
}

t_t2t_mix() { # seed 003's mix and bursts from the publisher, on the kernel
	local T2T_RATE=5000 T2T_SECONDS=2 sent
	local -a T2T_PUB_EXTRA=(--mix seed003 --burst 10000)
	t2t_topology
	t2t_run "$(kern "$NP")" "$(kern "$NB")" "$(kern "$NX")" || return 1
	sent=$(jget "$TSDP_TMP/pub.json" 'j["sent"]')
	# second 0 at 5,000/s, second 1 at 15,000/s
	[ "$sent" -ge 19900 ] && [ "$sent" -le 20100 ] || { die "publisher sent $sent, want about 20000"; return 1; }
	# every third tick 600 bytes, the others 100
	[ "$(jget "$TSDP_TMP/strategy.json" 'j["ticks"]["bytes"]')" = $(( (sent / 3) * 600 + (sent - sent / 3) * 100 )) ] ||
		{ die "strategy received $(jget "$TSDP_TMP/strategy.json" 'j["ticks"]["bytes"]') bytes, not seed 003's mix"; return 1; }
}

# shellcheck disable=SC2034 # harness.sh reads it
T2T_ALL="t2t_kernel t2t_bypass t2t_mix"
