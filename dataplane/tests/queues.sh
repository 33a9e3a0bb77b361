# shellcheck shell=bash disable=SC2154,SC2153 # here, TSDP_ID: set by harness.sh and lib.sh
# tests/queues.sh - sourced by harness.sh: every receive queue of an
# interface is served (docs/dataplane-design.md "Every queue served").
# Topology: NA (kernel peer, 198.18.14.1) -- veth with 4 RX and 4 TX queues
# on both ends -- NB (accelerated, 198.18.14.2). A veth delivers a frame on
# the peer's receive queue numbered as the sender's transmit queue, which
# the sending kernel picks per flow (a hash of the flow, no XPS map here):
# the peer's eight flows land on several of NB's queues, which the test
# reads from the veth's own per-queue XDP counters (ethtool -S).

# shellcheck disable=SC2034 # harness.sh reads it
QUEUES_ALL="queues queues_xdpd xdp_mode"

# q_pair: the 4-queue pair, NA and NB
q_pair() {
	tsdp_ns NA a
	tsdp_ns NB b
	ip link add "tsdpq${TSDP_ID}a" numtxqueues 4 numrxqueues 4 netns "$NA" type veth \
		peer name "tsdpq${TSDP_ID}b" numtxqueues 4 numrxqueues 4 netns "$NB"
	QIFA=tsdpq${TSDP_ID}a
	QIFB=tsdpq${TSDP_ID}b
	ip -n "$NA" addr add 198.18.14.1/24 dev "$QIFA"
	ip -n "$NB" addr add 198.18.14.2/24 dev "$QIFB"
	ip -n "$NA" link set "$QIFA" up
	ip -n "$NB" link set "$QIFB" up
	IPB=198.18.14.2
}

# q_feed FILE PROTO PORT0 N: a sockperf feed file of N connections
q_feed() {
	local f=$1 p=$2 port=$3 i
	: >"$f"
	for ((i = 0; i < $4; i++)); do
		echo "$p:$IPB:$((port + i))" >>"$f"
	done
}

# q_queues_used: how many of NB's receive queues took frames through XDP
q_queues_used() {
	ip netns exec "$NB" ethtool -S "$QIFB" |
		awk '/rx_queue_[0-9]+_xdp_packets:/ && $2 > 0 {n++} END {print n+0}'
}

q_queue_counts() {
	ip netns exec "$NB" ethtool -S "$QIFB" | awk '/rx_queue_[0-9]+_xdp_packets:/ {printf "%s%s", s, $2; s=" "}'
}

# q_kernel_flat NS: the kernel of NS received no UDP datagram and no TCP
# segment, opened no connection and sent no reset
q_kernel_flat() {
	local c v
	for c in UdpInDatagrams UdpNoPorts TcpInSegs TcpActiveOpens TcpPassiveOpens TcpOutRsts; do
		v=$(kstat "$1" $c)
		[ "${v:-x}" = 0 ] || { die "kernel of $1: $c=$v (a flow of an accelerated socket reached it)"; return 1; }
	done
}

# q_peer_no_resets: the kernel peer received no reset: every established
# connection it saw reset was reset by itself (sockperf's client closes a
# connection with unread data, a reset it sends: kernel to kernel too)
q_peer_no_resets() {
	local er or
	er=$(kstat "$NA" TcpEstabResets)
	or=$(kstat "$NA" TcpOutRsts)
	[ "${er:-x}" -le "${or:-0}" ] ||
		{ die "peer: $er established connections reset, $or resets of its own"; return 1; }
	[ "$(kstat "$NA" TcpInErrs)" = 0 ] || { die "peer: TcpInErrs=$(kstat "$NA" TcpInErrs)"; return 1; }
}

# q_run SERVER-PREFIX OTHER-PREFIX STATS-DIR: eight UDP and eight TCP flows
# from the kernel peer to one accelerated sockperf server (a feed file: one
# process serves both protocols), then a second process in the same
# namespace (OTHER-PREFIX, its stats tag "two", in STATS-DIR)
q_run() {
	local srv=$1 other=$2 sd=$3 used pid
	q_feed "$sd/udp.feed" U 11300 8
	q_feed "$sd/tcp.feed" T 11400 8
	cat "$sd/udp.feed" "$sd/tcp.feed" >"$sd/srv.feed"
	ip netns exec "$NB" nstat -n >/dev/null
	ip netns exec "$NA" nstat -n >/dev/null
	$srv env TICKSTACK_TCP=1 "${CPU_SRV[@]}" sockperf sr -f "$sd/srv.feed" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 11407 || { die "server did not listen"; return 1; }
	# each client socket is a flow of its own (its own source port)
	$(kern "$NA") "${CPU_CLI[@]}" timeout 30 sockperf pp -f "$sd/udp.feed" -t 2 -m 64 >"$TSDP_TMP/client-udp.out" 2>&1 ||
		{ die "UDP client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-udp.out" || return 1
	$(kern "$NA") "${CPU_CLI[@]}" timeout 30 sockperf pp -f "$sd/tcp.feed" -t 2 -m 64 >"$TSDP_TMP/client-tcp.out" 2>&1 ||
		{ die "TCP client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-tcp.out" || return 1
	used=$(q_queues_used)
	log "$CUR: frames per receive queue of $QIFB (XDP): $(q_queue_counts)"
	[ "$used" -ge 2 ] || { die "the peer's flows used $used of 4 receive queues: the test proves nothing"; return 1; }
	q_kernel_flat "$NB" || return 1
	q_peer_no_resets || return 1

	# a second process of the namespace: the first serves every queue, so
	# it finds them taken; its socket works through the kernel, counted,
	# and under TICKSTACK_REQUIRE=1 its bind fails naming the reason
	$other "${CPU_SRV[@]}" sockperf sr -i "$IPB" -p 11500 >"$TSDP_TMP/two.out" 2>&1 &
	pid=$!
	TSDP_PIDS+=("$pid")
	wait_for 10 udp_listening "$NB" 11500 || { die "second server did not listen"; return 1; }
	$(kern "$NA") "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11500 -t 1 -m 64 >"$TSDP_TMP/client-two.out" 2>&1 ||
		{ die "second client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-two.out" || return 1
	kill -INT "$pid"
	wait_exit "$pid" 10
	wait_for 5 ls "$sd"/stats-two-*.txt || { die "second process: no stats dump"; return 1; }
	[ "$(stat_sum "$sd/stats-two-*.txt" sockets_kernel tickstack)" -ge 1 ] ||
		{ die "the second process's socket was not counted on the kernel"; return 1; }
	$other env TICKSTACK_REQUIRE=1 sockperf sr -i "$IPB" -p 11501 >"$TSDP_TMP/two-require.out" 2>&1 &
	pid=$!
	TSDP_PIDS+=("$pid")
	wait_exit "$pid" 10
	grep -q "queue taken" "$TSDP_TMP/two-require.out" ||
		{ die "under TICKSTACK_REQUIRE=1 the second process did not fail with 'queue taken'"; return 1; }

	stop_server || return 1
	[ "$sd" = "$TSDP_TMP" ] || cp "$sd"/stats-srv-*.txt "$TSDP_TMP/"
	check_accel srv || return 1
	tcp_accel srv 8 || return 1
	[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" sockets_kernel tickstack)" = 0 ] ||
		{ die "the server left sockets on the kernel"; return 1; }
}

t_queues() { # standalone: one process serves all four queues of its veth (UDP and TCP)
	rm -f "$TSDP_TMP"/*.out "$TSDP_TMP"/stats-*
	q_pair
	q_run "$(accel "$NB" srv) --require" "$(accel "$NB" two)" "$TSDP_TMP"
}

t_queues_xdpd() { # with tickstack-xdpd: a pod process serves all four queues
	local q
	rm -f "$TSDP_TMP"/*.out "$TSDP_TMP"/stats-*
	Q=4 xd_topo || return 1
	# no XPS map: the peer's flows spread by their hash
	for q in 0 1 2 3; do
		ip netns exec "$NA" sh -c "echo 0 >/sys/class/net/tsdpv${TSDP_ID}a/queues/tx-$q/xps_cpus" ||
			{ die "cannot clear XPS"; return 1; }
	done
	QIFA=tsdpv${TSDP_ID}a
	QIFB=$IFB
	IPB=198.18.12.2
	q_run "$(xd_pod "$NB" pod-b srv --require)" "$(xd_pod "$NB" pod-b two)" "$XD_STATS"
}

t_xdp_mode() { # TICKSTACK_XDP_MODE: the bind mode chosen, reported per XSK, refused where the driver cannot
	local out pid
	# veth: native XDP yes, AF_XDP zero-copy no: refused, said, the bind fails
	out=$(ip netns exec "$NB" env TICKSTACK_XDP_MODE=zerocopy "$RUN" --require "$B"/udpcheck echo "$IPB" 11601 1 2>&1) &&
		{ die "zerocopy on veth: the bind succeeded"; return 1; }
	case "$out" in
	*"TICKSTACK_XDP_MODE=zerocopy: the driver of tsdpv${TSDP_ID}b cannot bind an AF_XDP socket in zero-copy mode"*"TICKSTACK_REQUIRE=1: socket fd"*"cannot be accelerated"*) ;;
	*) die "zerocopy refusal: '$out'"; return 1 ;;
	esac
	log "$CUR: $(echo "$out" | grep -m1 "TICKSTACK_XDP_MODE=zerocopy")"
	# native and copy, asked for: accelerated, and reported so (the exit
	# dump and tickstack-stats)
	start_server "$(accel "$NB" srv) --require env TICKSTACK_XDP_MODE=native,copy" 11602 || return 1
	pid=$(pgrep -f "sockperf sr -i $IPB -p 11602" | head -1)
	out=$("$B/tickstack-stats" "$pid" 2>&1)
	case "$out" in *"queues 0-0, XDP native, bound copy"*) ;; *) die "tickstack-stats: '$out'"; return 1 ;; esac
	$(kern "$NA") "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11602 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	stop_server || return 1
	check_accel srv || return 1
	grep -q "^xsk .* queues=1 mode=native bind=copy " "$TSDP_TMP"/stats-srv-*.txt ||
		{ die "the dump does not say native and copy: $(grep ^xsk "$TSDP_TMP"/stats-srv-*.txt)"; return 1; }
	# the program the server attached (native) stays: generic asked for is refused
	out=$(ip netns exec "$NB" env TICKSTACK_XDP_MODE=skb "$RUN" --require "$B"/udpcheck echo "$IPB" 11603 1 2>&1) &&
		{ die "skb asked over a native program: the bind succeeded"; return 1; }
	case "$out" in *"TICKSTACK_XDP_MODE=skb: the XDP program on tsdpv${TSDP_ID}b runs in native mode, not the one asked for"*) ;;
	*) die "skb refusal: '$out'"; return 1 ;;
	esac
	# a bad value is named, with the accepted ones (exit status 2 under REQUIRE)
	out=$(ip netns exec "$NB" env TICKSTACK_XDP_MODE=skb,zerocopy "$RUN" --require "$B"/udpcheck echo "$IPB" 11604 1 2>&1)
	[ $? = 2 ] || { die "TICKSTACK_XDP_MODE=skb,zerocopy: exit status not 2: '$out'"; return 1; }
	case "$out" in *"invalid TICKSTACK_XDP_MODE=skb,zerocopy"*"zerocopy needs native"*) ;;
	*) die "bad value: '$out'"; return 1 ;;
	esac
}
