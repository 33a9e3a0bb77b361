#!/usr/bin/env bash
# tests/harness.sh - runs UNMODIFIED Debian sockperf (and udpcheck) through
# tickstack-run between network namespaces joined by veth pairs, and checks:
# zero drops/duplicates/reordering, intact payloads, that the datagrams
# really took the XSK path (the library's own counters), and that sockperf
# ends cleanly on its timer and on SIGINT.
# Usage: tests/harness.sh [TEST...]   (default: all). Needs root.
# Outside CI a missing requirement skips; with CI=true it fails.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tsdp_start

fail_or_skip() { tsdp_fail_or_skip harness "$@"; }

[ "$(id -u)" = 0 ] || fail_or_skip "needs root (network namespaces, XDP)"
for t in sockperf ip ss taskset setpriv python3; do
	command -v $t >/dev/null || fail_or_skip "$t not installed (hack/install-deps.sh)"
done
for f in libtickstack.so tickstack-run tickstack-stats tickstack-xdpd udpcheck tcpcheck fixcheck t2t-pub t2t-strategy t2t-exchange; do
	[ -e "$B/$f" ] || fail_or_skip "$B/$f missing: run make -C dataplane all t2t build/udpcheck build/tcpcheck build/fixcheck"
done

RUN=$B/tickstack-run
if [ "$(nproc)" -ge 2 ]; then
	CPU_SRV=(taskset -c 1)
	CPU_CLI=(taskset -c 0)
else
	CPU_SRV=()
	CPU_CLI=()
fi
PASSED=0
FAILED=0
FAILS=()
FAIL_NOTES=$TSDP_TMP/.fails
mkdir -p "$FAIL_NOTES"

log() { echo "harness: $*"; }
# die MESSAGE: the test's failure, with the tails of its outputs; the first
# message of each failed test is repeated in the summary (CI shows the end)
die() {
	echo "harness: $CUR: FAIL: $*" >&2
	[ -s "$FAIL_NOTES/$CUR" ] || echo "$*" >"$FAIL_NOTES/$CUR"
	for f in "$TSDP_TMP"/*.out "$TSDP_TMP"/stats-*; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n 25 "$f" >&2; }
	done
	return 1
}

# as_kernel NAME: $TSDP_TMP/kernel-NAME.txt and stack-NAME.txt, one program's
# transcripts on the kernel and through the stack, agree (else their diff)
as_kernel() {
	cmp -s "$TSDP_TMP/kernel-$1.txt" "$TSDP_TMP/stack-$1.txt" ||
		{ die "$1: the stack observed otherwise than the kernel:"; diff "$TSDP_TMP/kernel-$1.txt" \
			"$TSDP_TMP/stack-$1.txt" >&2; return 1; }
}
# same_as_kernel NAME: as_kernel, and the start of the stack's transcript logged
same_as_kernel() {
	as_kernel "$1" || return 1
	log "$CUR: $1 as on the kernel: $(tr '\n' ';' <"$TSDP_TMP/stack-$1.txt" | cut -c1-300)"
}

# accel NS: command prefix running a program through the interposer with a
# stats file; kern NS: plain kernel stack.
accel() { echo "ip netns exec $1 env TICKSTACK_STATS_FILE=$TSDP_TMP/stats-$2-%p.txt $RUN -p ${PROFILE:-latency}"; }
kern() { echo "ip netns exec $1"; }
# noadmin NS TAG: like accel, without CAP_SYS_ADMIN (a container's lot) and
# with TICKSTACK_REQUIRE: the process cannot open a program already attached
noadmin() { echo "ip netns exec $1 setpriv --bounding-set=-sys_admin env TICKSTACK_STATS_FILE=$TSDP_TMP/stats-$2-%p.txt $RUN -p ${PROFILE:-latency} --require"; }

new_pair() {
	rm -f "$TSDP_TMP"/*.out "$TSDP_TMP"/stats-*
	tsdp_ns NA a
	tsdp_ns NB b
	tsdp_pair "$NA" "$NB" 198.18.10
	IPB=198.18.10.2
}

del_pair() {
	local n p
	for n in "$NA" "$NB"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do tsdp_kill "$p"; done
		ip netns del "$n" 2>/dev/null
	done
	TSDP_NETNS=()
}

# start_server PREFIX PORT [extra sockperf args]: sockperf server in NB
start_server() {
	local pre=$1 port=$2
	shift 2
	$pre "${CPU_SRV[@]}" sockperf sr -i "$IPB" -p "$port" "$@" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 udp_listening "$NB" "$port" || { die "server did not listen on $port"; return 1; }
}

# stop_server: SIGINT, must exit 0 on its own, printing its total
stop_server() {
	kill -INT "$SRV"
	wait_exit "$SRV" 10 || { die "server ignored SIGINT (blocking call did not return EINTR)"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "server exit code $WAIT_RC after SIGINT"; return 1; }
	grep -q "Total [0-9]* messages received" "$TSDP_TMP/server.out" ||
		{ die "server printed no total"; return 1; }
}

check_pp_output() { # FILE [MIN_ROUND_TRIPS [nodrops: the caller judged drops]]
	local f=$1 min=${2:-100} recv
	grep -q "interrupted by timer" "$f" || { die "client did not end on its timer"; return 1; }
	[ "${3:-}" = nodrops ] ||
		grep -q "# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0" "$f" ||
		{ die "drops, duplicates or reordering"; return 1; }
	recv=$(sed -n 's/.*\[Valid Duration\].*ReceivedMessages=\([0-9]*\).*/\1/p' "$f")
	[ "${recv:-0}" -gt "$min" ] || { die "only ${recv:-0} round trips"; return 1; }
	log "$CUR: $recv round trips, median $(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$f") us"
}

# check_accel TAG: the process with stats tag TAG really used the XSK
check_accel() {
	local tag=$1 rxa rxk txa
	wait_for 5 ls "$TSDP_TMP"/stats-"$tag"-*.txt || { die "$tag: no stats dump"; return 1; }
	rxa=$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" rx_accel)
	rxk=$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" rx_kernel)
	txa=$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" tx_accel)
	[ "$rxa" -gt 0 ] && [ "$txa" -gt 0 ] || { die "$tag: not accelerated (rx_accel=$rxa tx_accel=$txa)"; return 1; }
	[ "$rxk" -le $((rxa / 100 + 2)) ] || { die "$tag: $rxk datagrams came through the kernel"; return 1; }
}

# neigh_known: NA's kernel knows IPB's MAC (its own ARP, for one datagram sent through
# it to the discard port) before a short exchange whose sends check_accel counts. A flow
# to a neighbour the kernel has not resolved goes through the kernel (tx_kernel_neigh)
# until the control thread hears of the ARP answer, or for a millisecond at most; on a
# loaded machine the control thread waits for the CPU the client spins on, and 100 round
# trips fit in that millisecond whole. tp_check excuses those sends in the long runs,
# which keep that path covered.
neigh_known() {
	ip netns exec "$NA" bash -c "echo >/dev/udp/$IPB/9" || { die "the kernel could not send to $IPB"; return 1; }
	wait_for 5 neigh_resolved "$NA" "$IPB" || { die "NA's kernel did not resolve $IPB: $(ip -n "$NA" neigh)"; return 1; }
}

# pingpong SRV-PREFIX CLI-PREFIX PORT SIZE: sockperf's ping-pong of SIZE-byte
# messages for 2 s, server and client under their prefixes (accel or kern),
# the client's output checked, the server stopped
pingpong() {
	local cli=$2 port=$3 size=$4
	start_server "$1" "$port" || return 1
	$cli "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p "$port" -t 2 -m "$size" >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	stop_server
}

# ---------------------------------------------------------------- tests

t_pp_both() {
	pingpong "$(accel "$NB" srv)" "$(accel "$NA" cli)" 11111 64 || return 1
	check_accel cli && check_accel srv
}

t_pp_kernel_server() {
	pingpong "$(kern "$NB")" "$(accel "$NA" cli)" 11112 256 || return 1
	check_accel cli
}

t_pp_kernel_client() {
	pingpong "$(accel "$NB" srv)" "$(kern "$NA")" 11113 1472 || return 1
	check_accel srv
}

t_under_load() {
	# On a shared 2-vCPU machine a spinning server loses its CPU to other
	# jobs for milliseconds, and sockperf counts replies still in flight at
	# its end as dropped: both ends sleep when idle here (SPIN_USEC=0).
	start_server "$(accel "$NB" srv) env TICKSTACK_SPIN_USEC=0" 11114 || return 1
	# sockperf's under-load client has a pacing sender thread and a receiver
	# thread on one CPU: the receiver sleeps instead of spinning (SPIN_USEC=0)
	$(accel "$NA" cli) env TICKSTACK_SPIN_USEC=0 "${CPU_CLI[@]}" timeout 30 sockperf ul -i "$IPB" -p 11114 -t 2 -m 64 \
		--mps 10000 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	stop_server || return 1
	check_accel cli && check_accel srv
}

t_throughput() {
	local sent got
	# the receiving end sleeps when idle (see t_under_load)
	start_server "$(accel "$NB" srv) env TICKSTACK_SPIN_USEC=0" 11115 || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf tp -i "$IPB" -p 11115 -t 2 -m 512 --mps 10000 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	grep -q "interrupted by timer" "$TSDP_TMP/client.out" || { die "client did not end on its timer"; return 1; }
	stop_server || return 1
	sent=$(sed -n 's/.*Total of \([0-9]*\) messages sent.*/\1/p' "$TSDP_TMP/client.out")
	got=$(sed -n 's/.*Total \([0-9]*\) messages received.*/\1/p' "$TSDP_TMP/server.out")
	[ "${sent:-0}" -gt 1000 ] && [ "$sent" = "$got" ] || { die "sent ${sent:-?} received ${got:-?}"; return 1; }
	log "$CUR: $sent sent, $got received"
	local rxa
	rxa=$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)
	[ "$rxa" -ge $((sent * 99 / 100)) ] || { die "server rx_accel=$rxa of $sent"; return 1; }
}

# under-load and throughput with one end on the kernel stack (gentler
# rates: the kernel end drops first when the machine is loaded)
t_ul_kernel_server() {
	# a larger receive buffer for the kernel end: it is the one that drops
	# when the other jobs of the machine take its CPU
	start_server "$(kern "$NB")" 11118 --buffer-size 4194304 || return 1
	$(accel "$NA" cli) env TICKSTACK_SPIN_USEC=0 "${CPU_CLI[@]}" timeout 30 sockperf ul -i "$IPB" -p 11118 -t 2 -m 64 \
		--mps 5000 >"$TSDP_TMP/client.out" 2>&1 || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" 50 || return 1
	stop_server || return 1
	check_accel cli
}

tp_check() { # STATS-TAG: sent == received, and TAG's end used the XSK
	local sent got tag=$1 field=$2
	grep -q "interrupted by timer" "$TSDP_TMP/client.out" || { die "client did not end on its timer"; return 1; }
	stop_server || return 1
	sent=$(sed -n 's/.*Total of \([0-9]*\) messages sent.*/\1/p' "$TSDP_TMP/client.out")
	got=$(sed -n 's/.*Total \([0-9]*\) messages received.*/\1/p' "$TSDP_TMP/server.out")
	[ "${sent:-0}" -gt 1000 ] && [ "$sent" = "$got" ] ||
		{ ip netns exec "$NB" nstat -az 2>/dev/null | grep -E "^Udp|IpInDiscards|IpInHdrErrors" | grep -v " 0 " >&2
		  cat /proc/net/softnet_stat >&2; die "sent ${sent:-?} received ${got:-?}"; return 1; }
	log "$CUR: $sent sent, $got received"
	# A sender's first datagrams go through the kernel while the neighbour is being resolved
	# (tx_kernel_neigh, as the kernel's own ARP takes): how many depends on the machine's load, not
	# on the stack. They are excused, up to a tenth of the run; everything after must be XSK.
	local neigh=0
	[ "$field" != tx_accel ] || neigh=$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" tx_kernel_neigh)
	[ "$neigh" -le $((sent / 10)) ] || { die "$tag: $neigh of $sent sent through the kernel waiting for the neighbour"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" "$field")" -ge $(((sent - neigh) * 99 / 100)) ] ||
		{ die "$tag: $field below 99 % of the $((sent - neigh)) sent after the neighbour was known ($sent in all)"; return 1; }
}

t_tp_kernel_server() { # bypass sender -> kernel receiver
	start_server "$(kern "$NB")" 11119 --buffer-size 4194304 || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf tp -i "$IPB" -p 11119 -t 2 -m 256 --mps 5000 \
		>"$TSDP_TMP/client.out" 2>&1 || { die "client exit code $?"; return 1; }
	tp_check cli tx_accel
}

t_tp_kernel_client() { # kernel sender -> bypass receiver
	start_server "$(accel "$NB" srv) env TICKSTACK_SPIN_USEC=0" 11121 || return 1
	$(kern "$NA") "${CPU_CLI[@]}" timeout 30 sockperf tp -i "$IPB" -p 11121 -t 2 -m 256 --mps 10000 \
		>"$TSDP_TMP/client.out" 2>&1 || { die "client exit code $?"; return 1; }
	tp_check srv rx_accel
}

t_sigint_client() {
	local cli rxa
	start_server "$(accel "$NB" srv)" 11116 || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" stdbuf -oL sockperf pp -i "$IPB" -p 11116 -t 300 -m 64 >"$TSDP_TMP/client.out" 2>&1 &
	cli=$!
	TSDP_PIDS+=("$cli")
	# the live counters (tickstack-stats) show round trips going on
	wait_for 30 sh -c "$B/tickstack-stats $cli | grep -q 'rx_accel *[1-9]'" ||
		{ die "tickstack-stats shows no accelerated traffic"; return 1; }
	# sockperf discards its first 400 ms: interrupt it 600 ms after it
	# started measuring (its output is line-buffered by stdbuf), so that it
	# has results to print
	wait_for 30 grep -q "Starting test" "$TSDP_TMP/client.out" || { die "client did not start"; return 1; }
	local t0
	t0=$(date +%s%N)
	wait_for 5 sh -c "[ \$((\$(date +%s%N) - $t0)) -ge 600000000 ]"
	kill -INT "$cli"
	wait_exit "$cli" 10 || { die "client ignored SIGINT"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "client exit code $WAIT_RC after SIGINT"; return 1; }
	grep -q "interrupted by user" "$TSDP_TMP/client.out" || { die "client not interrupted by user"; return 1; }
	grep -q "# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0" "$TSDP_TMP/client.out" ||
		{ die "drops"; return 1; }
	stop_server || return 1
	rxa=$(stat_sum "$TSDP_TMP/stats-cli-*.txt" rx_accel)
	[ "$rxa" -gt 0 ] || { die "client rx_accel=0"; return 1; }
}

t_mux() { # the server waits with select, poll and epoll (sockperf -F)
	local m port=11120
	# correctness, not speed: the default profile sleeps after 50 us, which
	# keeps the test steady on a loaded machine
	local PROFILE=default
	echo "U:$IPB:11120" >"$TSDP_TMP/feed"
	for m in s p e; do
		$(accel "$NB" srv) "${CPU_SRV[@]}" sockperf sr -f "$TSDP_TMP/feed" -F $m >"$TSDP_TMP/server.out" 2>&1 &
		SRV=$!
		wait_for 10 udp_listening "$NB" $port || { die "-F $m: server did not listen"; return 1; }
		$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p $port -t 2 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
			{ die "-F $m: client exit code $?"; return 1; }
		grep -q "using $( case $m in s) echo select;; p) echo poll;; e) echo epoll;; esac)" "$TSDP_TMP/server.out" ||
			{ die "server did not use -F $m"; return 1; }
		check_pp_output "$TSDP_TMP/client.out" || return 1
		stop_server || return 1
		check_accel srv || return 1
		rm -f "$TSDP_TMP"/stats-*
	done
}

# echo_check SERVER-PREFIX PORT MUX WHAT: udpcheck's echo side in NB (run under SERVER-PREFIX:
# accel or kern) waiting with MUX, and an accelerated sender in NA: sizes 1..1472, 200 rounds,
# every echo byte-exact; WHAT names the run in failures
echo_check() {
	local e
	$($1 "$NB" srv) "${CPU_SRV[@]}" "$B"/udpcheck echo "$IPB" "$2" 200 ${3:+"$3"} >"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 udp_listening "$NB" "$2" || { die "$4: echo did not listen"; return 1; }
	neigh_known || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 "$B"/udpcheck send "$IPB" "$2" 200 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "$4: payload check failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "$4: echo side failed ($WAIT_RC)"; return 1; }
}

t_payload() { # udpcheck: sizes 1..1472, byte-exact echoes, all multiplexers
	local mux
	for mux in block poll select epoll mmsg; do
		echo_check accel 11130 $mux "$mux" || return 1
		check_accel srv && check_accel cli || return 1
		rm -f "$TSDP_TMP"/stats-*
	done
}

t_txcsum() { # UDP checksums left to the interface (AF_XDP TX metadata) are right: with both links' TX checksumming off the kernel finishes them from the stack's partial sums, and the receivers (the stack, then the kernel) verify every one
	local d ifc side
	for d in "$NA" "$NB"; do
		ifc=$(ip -n "$d" -br link | awk '/^tsdp/ {sub(/@.*/, "", $1); print $1}')
		ip netns exec "$d" ethtool -K "$ifc" tx off >/dev/null || { die "ethtool -K $ifc tx off"; return 1; }
	done
	for side in accel kern; do
		rm -f "$TSDP_TMP"/stats-*
		echo_check $side 11134 block "$side echo (checksums the receiver refused?)" || return 1
		check_accel cli || return 1
		grep -q "tx_csum=offload" "$TSDP_TMP"/stats-cli-*.txt ||
			{ die "the client summed its checksums itself: $(grep '^xsk' "$TSDP_TMP"/stats-cli-*.txt)"; return 1; }
		if [ $side = accel ]; then
			check_accel srv || return 1
			[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_bad_csum xsk)" = 0 ] || { die "the stack refused checksums"; return 1; }
		fi
	done
}

t_connected() { # connect + write/read on a dup, SO_RCVTIMEO; echo side after an exec
	local e
	$(accel "$NB" srv) "${CPU_SRV[@]}" "$B"/udpcheck exec-echo "$IPB" 11132 100 >"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 grep -q "ready (after exec" "$TSDP_TMP/server.out" || { die "exec-echo not ready"; return 1; }
	neigh_known || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 "$B"/udpcheck send-connected "$IPB" 11132 100 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "connected client failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "exec-echo failed ($WAIT_RC)"; return 1; }
	check_accel cli || return 1
	# the image after exec still wrote its exit statistics: it was
	# preloaded again and read the inherited socket
	ls "$TSDP_TMP"/stats-srv-*.txt >/dev/null 2>&1 || { die "no stats after exec"; return 1; }
}

t_nonblocked() { # sockperf --nonblocked (fcntl O_NONBLOCK, EAGAIN loop) through the bypass
	start_server "$(accel "$NB" srv)" 11117 --nonblocked || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11117 -t 1 -m 64 --nonblocked >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	stop_server || return 1
	check_accel cli && check_accel srv
}

t_fork() { # a forked child echoes on the socket its parent bound
	local e
	$(accel "$NB" srv) "${CPU_SRV[@]}" "$B"/udpcheck fork-echo "$IPB" 11131 100 >"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 udp_listening "$NB" 11131 || { die "fork-echo did not listen"; return 1; }
	# the child runs (see udpcheck's fork-echo: datagrams before its first call wait in the shared kernel socket)
	wait_for 10 grep -q ready "$TSDP_TMP/server.out" || { die "fork-echo's child not ready"; return 1; }
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 "$B"/udpcheck send "$IPB" 11131 100 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "echo through the forked child failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "fork-echo failed ($WAIT_RC)"; return 1; }
	# the child (its own stats file) answered everything
	local child
	child=$(for f in "$TSDP_TMP"/stats-srv-*.txt; do
		grep -q "^sock .*tx_accel=\|^sock .*tx_kernel=" "$f" 2>/dev/null && echo "$f"; done | head -n 2 | wc -l)
	[ "$child" -ge 1 ] || { die "no stats from the child"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_kernel)" -ge 0 ]
	local tot=$(( $(stat_sum "$TSDP_TMP/stats-srv-*.txt" tx_accel) + $(stat_sum "$TSDP_TMP/stats-srv-*.txt" tx_kernel) ))
	[ "$tot" -ge 100 ] || { die "child sent $tot of 100"; return 1; }
}

t_multicast() { # one sender, two receivers in two namespaces, a bridge
	local NS NR1 NR2 NBR r1 r2 r3 n i grp=239.198.18.1
	rm -f "$TSDP_TMP"/*.out "$TSDP_TMP"/stats-*
	tsdp_ns NS s; tsdp_ns NR1 r1; tsdp_ns NR2 r2; tsdp_ns NBR br
	ip -n "$NBR" link add "tsdp${TSDP_ID}br" type bridge mcast_snooping 0
	ip -n "$NBR" link set "tsdp${TSDP_ID}br" up
	i=1
	for n in "$NS" "$NR1" "$NR2"; do
		ip link add "tsdp${TSDP_ID}m$i" netns "$n" type veth peer name "tsdp${TSDP_ID}p$i" netns "$NBR"
		ip -n "$n" addr add "198.18.20.$i/24" dev "tsdp${TSDP_ID}m$i"
		ip -n "$n" link set "tsdp${TSDP_ID}m$i" up
		ip -n "$n" route add 224.0.0.0/4 dev "tsdp${TSDP_ID}m$i"
		ip -n "$NBR" link set "tsdp${TSDP_ID}p$i" master "tsdp${TSDP_ID}br" up
		i=$((i + 1))
	done
	mc_recv() { # NS TAG
		ip netns exec "$1" env TICKSTACK_STATS_FILE="$TSDP_TMP"/stats-"$2"-%p.txt "$RUN" -p throughput \
			sockperf sr -i $grp -p 11140 >"$TSDP_TMP/$2.out" 2>&1 &
		MC_PID=$!
		TSDP_PIDS+=("$MC_PID")
	}
	mc_send() { # RATE: sets SENT
		rm -f "$TSDP_TMP"/stats-snd-*
		ip netns exec "$NS" env TICKSTACK_STATS_FILE="$TSDP_TMP"/stats-snd-%p.txt "$RUN" -p throughput \
			timeout 30 sockperf tp -i $grp -p 11140 -t 2 -m 128 --mps "$1" >"$TSDP_TMP/client.out" 2>&1 ||
			{ die "sender exit code $?"; return 1; }
		SENT=$(sed -n 's/.*Total of \([0-9]*\) messages sent.*/\1/p' "$TSDP_TMP/client.out")
		[ "$(stat_sum "$TSDP_TMP/stats-snd-*.txt" tx_accel)" -ge $((SENT * 99 / 100)) ] ||
			{ die "sender did not transmit through the XSK"; return 1; }
	}
	mc_stop() { # TAG PID: SIGINT, then the receiver's total must equal SENT
		local got
		kill -INT "$2"
		wait_exit "$2" 10 && [ "$WAIT_RC" = 0 ] || { die "$1 did not exit on SIGINT ($WAIT_RC)"; return 1; }
		got=$(sed -n 's/.*Total \([0-9]*\) messages received.*/\1/p' "$TSDP_TMP/$1.out")
		log "$CUR: $1 received ${got:-?} of ${SENT:-?}"
		[ "${SENT:-0}" -gt 500 ] && [ "$SENT" = "$got" ] ||
			{ ip netns exec "$NR1" nstat -az 2>/dev/null | grep -i "udp\|IpExt.*Mcast" | grep -v " 0 " >&2; die "$1: multicast counts differ"; return 1; }
	}
	mc_recv "$NR1" r1; r1=$MC_PID
	mc_recv "$NR2" r2; r2=$MC_PID
	wait_for 10 udp_listening "$NR1" 11140 && wait_for 10 udp_listening "$NR2" 11140 ||
		{ die "receivers did not listen"; return 1; }
	# the IGMP joins went through the kernel sockets
	wait_for 5 sh -c "ip netns exec $NR1 ip maddr show | grep -q $grp" || { die "no IGMP join in r1"; return 1; }
	mc_send 10000 || return 1
	mc_stop r1 $r1 && mc_stop r2 $r2 || return 1
	for n in r1 r2; do
		[ "$(stat_sum "$TSDP_TMP/stats-$n-*.txt" rx_accel)" -ge $((SENT * 99 / 100)) ] ||
			{ die "$n: multicast not received through the XSK"; return 1; }
	done
	# two receivers in ONE namespace: the second cannot own the queue, so
	# the pair is marked shared and the kernel delivers to both (no loss,
	# no duplicate); the kernel path is slower, hence the lower rate
	mc_recv "$NR1" r1; r1=$MC_PID
	wait_for 10 udp_listening "$NR1" 11140 || { die "r1 did not listen again"; return 1; }
	mc_recv "$NR1" r3; r3=$MC_PID
	wait_for 10 sh -c "[ \$(ip netns exec $NR1 ss -Hnlu 'sport = :11140' | wc -l) -ge 2 ]" ||
		{ die "third receiver did not listen"; return 1; }
	mc_send 1000 || return 1
	mc_stop r1 $r1 && mc_stop r3 $r3 || return 1
	[ "$(stat_sum "$TSDP_TMP/stats-r3-*.txt" rx_kernel)" -ge $((SENT * 99 / 100)) ] ||
		{ die "r3: expected delivery by the kernel (shared entry)"; return 1; }
	TSDP_NETNS=("$NS" "$NR1" "$NR2" "$NBR")
	for n in "${TSDP_NETNS[@]}"; do ip netns del "$n"; done
	TSDP_NETNS=()
}

t_require() { # TICKSTACK_REQUIRE=1 makes a silent fallback an error
	# loopback cannot be accelerated: with REQUIRE the bind must fail loudly
	ip netns exec "$NA" env TICKSTACK_REQUIRE=1 "$RUN" timeout 10 sockperf sr -i 127.0.0.1 -p 11150 \
		>"$TSDP_TMP/client.out" 2>&1 &
	local p=$!
	TSDP_PIDS+=("$p")
	wait_exit $p 10
	[ "$WAIT_RC" != 124 ] || { die "sockperf hung"; return 1; }
	# sockperf reports the failed bind (and exits 0 anyway)
	grep -q "Can.t bind socket" "$TSDP_TMP/client.out" && grep -q "errno=95 Operation not supported" "$TSDP_TMP/client.out" || { die "REQUIRE did not fail the bind"; return 1; }
	grep -q "TICKSTACK_REQUIRE=1: socket fd" "$TSDP_TMP/client.out" || { die "no clear REQUIRE message"; return 1; }
	! grep -q "SERVER\] listen on" "$TSDP_TMP/client.out" || { die "server listened anyway"; return 1; }
	# a bad setting names itself and the fix
	ip netns exec "$NA" env TICKSTACK_SPIN_USEC=fast "$RUN" true 2>"$TSDP_TMP/client.out"
	grep -q "invalid TICKSTACK_SPIN_USEC=fast" "$TSDP_TMP/client.out" || { die "bad setting not reported"; return 1; }
	! $RUN -p fastest true 2>/dev/null || { die "tickstack-run accepted an unknown profile"; return 1; }
}

t_noadmin() { # program left attached, no CAP_SYS_ADMIN: the next process replaces it, a live one is kept
	local i
	for i in 1 2; do
		rm -f "$TSDP_TMP"/stats-*
		start_server "$(noadmin "$NB" srv)" 11111 || return 1
		$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11111 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
			{ die "run $i: client exit code $?"; return 1; }
		check_pp_output "$TSDP_TMP/client.out" || return 1
		if [ $i = 2 ]; then
			# a second process without CAP_SYS_ADMIN while the server uses the program
			ip netns exec "$NB" setpriv --bounding-set=-sys_admin "$RUN" --require timeout 10 sockperf sr -i "$IPB" -p 11112 \
				>"$TSDP_TMP/second.out" 2>&1
			grep -q "another process of this network namespace uses its XDP program" "$TSDP_TMP/second.out" ||
				{ die "the second process did not refuse clearly"; cat "$TSDP_TMP/second.out" >&2; return 1; }
			$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11111 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
				{ die "client after the refused process: exit code $?"; return 1; }
			check_pp_output "$TSDP_TMP/client.out" || return 1
		fi
		stop_server || return 1
		check_accel srv || return 1
		ip -n "$NB" link show | grep -q "prog/xdp" || { die "run $i: no XDP program left attached"; return 1; }
	done
	grep -q "replaced XDP program id" "$TSDP_TMP/server.out" || { die "run 2 did not replace the program run 1 left"; return 1; }
}

t_cmsg() { # blocking recvmsg with a control buffer on the XSK path: no hang, every cmsg right
	local e
	$(accel "$NB" srv) "${CPU_SRV[@]}" "$B"/udpcheck echo "$IPB" 11133 100 cmsg >"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 udp_listening "$NB" 11133 || { die "echo did not listen"; return 1; }
	neigh_known || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 "$B"/udpcheck send "$IPB" 11133 100 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "echo with control messages failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "cmsg echo failed ($WAIT_RC)"; return 1; }
	check_accel srv && check_accel cli
}

t_bigmtu() { # MTU 3500: datagrams larger than one UMEM frame both ways, byte-exact, through the XSK as chains
	local e n
	for n in "$NA" "$NB"; do
		ip -n "$n" link set dev "$(ip -n "$n" -o link show type veth | awk -F': ' '{print $2}' | cut -d@ -f1)" mtu 3500
	done
	$(accel "$NB" srv) env UDPCHECK_BIG=1 "${CPU_SRV[@]}" "$B"/udpcheck echo "$IPB" 11134 90 >"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 udp_listening "$NB" 11134 || { die "echo did not listen"; return 1; }
	neigh_known || return 1
	$(accel "$NA" cli) env UDPCHECK_BIG=1 "${CPU_CLI[@]}" timeout 30 "$B"/udpcheck send "$IPB" 11134 90 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "large datagrams failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "echo failed ($WAIT_RC)"; return 1; }
	# every size within the MTU took the XSK both ways, what one frame does
	# not hold as a chain (AF_XDP multi-buffer): of the 90 datagrams each
	# way (udpcheck's sizes, each 10 times), the 40 above 1,750 bytes (a
	# received frame's 1,792 less the headers) came in as chains on both
	# sides; chains went out (the 30 above 1,982 bytes, a sent frame's 2,048
	# less TX metadata and headers, but for those a send hands to the kernel
	# while the next hop resolves, tx_kernel_neigh), and no send was handed
	# to the kernel for its size.
	[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)" -gt 0 ] &&
		[ "$(stat_sum "$TSDP_TMP/stats-cli-*.txt" tx_accel)" -gt 0 ] ||
		{ die "nothing took the XSK"; return 1; }
	for n in srv cli; do
		[ "$(stat_sum "$TSDP_TMP/stats-$n-*.txt" rx_multibuf xsk)" = 40 ] &&
			[ "$(stat_sum "$TSDP_TMP/stats-$n-*.txt" tx_multibuf xsk)" -gt 0 ] &&
			[ "$(stat_sum "$TSDP_TMP/stats-$n-*.txt" tx_kernel_oversize)" = 0 ] ||
			{ die "$n: not every datagram larger than a frame went through the XSK as a chain: $(grep -h '^xsk\|^sock' "$TSDP_TMP"/stats-$n-*.txt)"; return 1; }
	done
}

t_forkq() { # fork with a datagram queued: the child reads it and echoes the rest
	local e
	$(accel "$NB" srv) "${CPU_SRV[@]}" "$B"/udpcheck forkq-echo "$IPB" 11135 50 >"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 grep -q ready "$TSDP_TMP/server.out" || { die "forkq-echo not ready"; return 1; }
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 "$B"/udpcheck send "$IPB" 11135 50 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "echo through the forked child failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "forkq-echo failed ($WAIT_RC)"; return 1; }
}

t_socat_udp_fork() { # socat UDP4-RECVFROM,fork (the inetd pattern): each peer's child answers through cat
	local i
	$(accel "$NB" srv) --require timeout 60 socat -T 3 "UDP4-RECVFROM:11137,bind=$IPB,fork" EXEC:cat \
		>"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 udp_listening "$NB" 11137 || { die "socat did not listen"; return 1; }
	for i in 1 2 3; do
		echo "peer $i" | $(accel "$NA" cli) --require timeout 10 socat -t 2 - "UDP4:$IPB:11137" \
			>"$TSDP_TMP/client.out.$i" 2>&1 || { die "client $i: exit $?"; return 1; }
		[ "$(cat "$TSDP_TMP/client.out.$i")" = "peer $i" ] ||
			{ die "client $i: answer '$(cat "$TSDP_TMP/client.out.$i")', want 'peer $i'"; return 1; }
	done
	kill -TERM "$SRV"
	wait_exit "$SRV" 10
	# the first peer's datagram came through the server's XSK (a peer that
	# comes while a child still holds the socket reaches the kernel socket
	# they share: docs/dataplane.md, fork), every answer through the
	# clients' XSKs
	[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)" -ge 1 ] ||
		{ die "nothing came through the server's XSK"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-cli-*.txt" rx_accel)" -ge 3 ] ||
		{ die "the clients' XSKs took $(stat_sum "$TSDP_TMP/stats-cli-*.txt" rx_accel) answers, want 3"; return 1; }
}

t_policy() { # ip rule: a socket bound to the second link's address leaves through that link
	local ia="tsdp${TSDP_ID}q1" ib="tsdp${TSDP_ID}q2" before1 before2 d1 d2
	ip link add "${ia}a" netns "$NA" type veth peer name "${ia}b" netns "$NB"
	ip link add "${ib}a" netns "$NA" type veth peer name "${ib}b" netns "$NB"
	ip -n "$NA" addr add 198.18.40.1/24 dev "${ia}a"; ip -n "$NB" addr add 198.18.40.2/24 dev "${ia}b"
	ip -n "$NA" addr add 198.18.41.1/24 dev "${ib}a"; ip -n "$NB" addr add 198.18.41.2/24 dev "${ib}b"
	for l in "${ia}a" "${ib}a"; do ip -n "$NA" link set "$l" up; done
	for l in "${ia}b" "${ib}b"; do ip -n "$NB" link set "$l" up; done
	ip -n "$NB" addr add 198.18.42.1/32 dev lo
	ip -n "$NA" route add 198.18.42.0/24 via 198.18.40.2 dev "${ia}a"
	ip -n "$NA" route add 198.18.42.0/24 via 198.18.41.2 dev "${ib}a" table 100
	ip -n "$NA" rule add from 198.18.41.1 lookup 100
	before1=$(ip netns exec "$NB" cat /sys/class/net/"${ia}"b/statistics/rx_packets)
	before2=$(ip netns exec "$NB" cat /sys/class/net/"${ib}"b/statistics/rx_packets)
	$(accel "$NA" cli) python3 "$here/udp_cases.py" send 198.18.42.1 15000 50 p 32 0.002 --bind 198.18.41.1 >"$TSDP_TMP/client.out" 2>&1 || { die "sender failed"; return 1; }
	d1=$(( $(ip netns exec "$NB" cat /sys/class/net/"${ia}"b/statistics/rx_packets) - before1 ))
	d2=$(( $(ip netns exec "$NB" cat /sys/class/net/"${ib}"b/statistics/rx_packets) - before2 ))
	log "$CUR: $d1 frames on the main table's link, $d2 on the rule's"
	[ "$d2" -ge 50 ] && [ "$d1" -lt 5 ] || { die "datagrams left through the wrong link"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-cli-*.txt" tx_accel)" -ge 45 ] || { die "the sends did not take the XSK"; return 1; }
}

t_mcshare() { # an accelerated socket on 0.0.0.0:P takes nothing from a plain receiver of a group on P
	local h r got grp=239.198.18.7
	ip -n "$NA" route add 224.0.0.0/4 dev "$(ip -n "$NA" -o link show type veth | awk -F': ' '{print $2}' | cut -d@ -f1)"
	$(accel "$NB" srv) python3 "$here/udp_cases.py" mcshare-holder >"$TSDP_TMP/server.out" 2>&1 &
	h=$!
	TSDP_PIDS+=("$h")
	wait_for 10 grep -q ready "$TSDP_TMP/server.out" || { die "holder not ready"; return 1; }
	$(kern "$NB") python3 "$here/udp_cases.py" mcshare-plain "$grp" "$IPB" >"$TSDP_TMP/plain.out" 2>&1 &
	r=$!
	TSDP_PIDS+=("$r")
	wait_for 10 grep -q ready "$TSDP_TMP/plain.out" || { die "plain receiver not ready"; return 1; }
	$(kern "$NA") python3 "$here/udp_cases.py" send "$grp" 14000 100 m 64 0.002 --ttl 2 || { die "sender failed"; return 1; }
	wait_exit "$r" 10
	wait_exit "$h" 10
	got=$(sed -n 's/^received //p' "$TSDP_TMP/plain.out")
	log "$CUR: the plain receiver got ${got:-0} of 100"
	[ "${got:-0}" = 100 ] || { die "the plain receiver lost datagrams to the accelerated socket"; return 1; }
}

# udp_case CASE: tests/udp_cases.py CASE serving on the accelerated end, ready;
# its pid in UDP_CASE
udp_case() {
	$(accel "$NB" srv) python3 "$here/udp_cases.py" "$1" "$IPB" >"$TSDP_TMP/server.out" 2>&1 &
	UDP_CASE=$!
	TSDP_PIDS+=("$UDP_CASE")
	wait_for 10 grep -q ready "$TSDP_TMP/server.out" || { die "not ready"; return 1; }
}

t_epollset() { # epoll never returns an fd the application did not register
	udp_case epollset || return 1
	$(kern "$NA") python3 "$here/udp_cases.py" send "$IPB" 14010 20 e 32 0.01 || { die "sender failed"; return 1; }
	wait_exit "$UDP_CASE" 10 && [ "$WAIT_RC" = 0 ] || { die "epoll returned events nobody registered"; return 1; }
}

t_reuseport() { # two SO_REUSEPORT sockets of one process: each datagram is delivered once, through the XSK
	udp_case reuseport || return 1
	$(kern "$NA") python3 "$here/udp_cases.py" send "$IPB" 14011 100 r 32 0.002 || { die "sender failed"; return 1; }
	wait_exit "$UDP_CASE" 10 && [ "$WAIT_RC" = 0 ] || { die "$(grep received "$TSDP_TMP/server.out") of 100"; return 1; }
	# the group is served by the stack (it went to the kernel before)
	wait_for 5 ls "$TSDP_TMP"/stats-srv-*.txt || { die "srv: no stats dump"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)" = 100 ] && [ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_kernel)" = 0 ] ||
		{ die "not every datagram came through the XSK"; return 1; }
}

t_readv() { # readv/writev on an accelerated socket (blocking readv sees what took the XSK)
	udp_case readv || return 1
	$(kern "$NA") timeout 10 python3 "$here/udp_cases.py" readv-peer "$IPB" || { die "writev from the accelerated side did not arrive"; return 1; }
	wait_exit "$UDP_CASE" 10 && [ "$WAIT_RC" = 0 ] || { die "readv did not get every datagram ($WAIT_RC)"; return 1; }
	check_accel srv
}

t_stress() { # many threads, many sockets, closes while receiving: TSan and ASan builds of the library
	# (the echo side's socket queue is 16 datagrams and its sockets' SO_RCVBUF 1 MiB, so datagrams
	# past the 16th are queued as copies when the receivers fall behind: under TSan they do, by
	# thousands; conformance case rcvbufbig runs that path under ASan every time)
	local v e got
	for v in tsan asan; do
		[ -e "$B/stress-$v" ] && [ -e "$B/libtickstack-$v.so" ] ||
			{ die "$B/stress-$v or libtickstack-$v.so missing: make -C dataplane test builds them"; return 1; }
		rm -f "$TSDP_TMP"/stats-*
		# exitcode 66 on any TSan report; ASan/UBSan abort on the first
		# error; LeakSanitizer checks the exit
		TSAN_OPTIONS="halt_on_error=1 exitcode=66 external_symbolizer_path=$(command -v llvm-symbolizer || true)"
		export TSAN_OPTIONS
		export ASAN_OPTIONS="verify_asan_link_order=0 detect_leaks=1"
		export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
		ip netns exec "$NB" env TICKSTACK_STATS_FILE="$TSDP_TMP"/stats-srv-%p.txt TICKSTACK_LIB="$B"/libtickstack-$v.so TICKSTACK_SOCKQ_LEN=16 \
			"$RUN" -p throughput "$B"/stress-$v echo "$IPB" 13000 8 4 >"$TSDP_TMP/server.out" 2>&1 &
		e=$!
		TSDP_PIDS+=("$e")
		wait_for 20 grep -q ready "$TSDP_TMP/server.out" || { die "$v: echo side not ready"; return 1; }
		# (timeout outside: only the sanitizer-built program can load
		# the sanitizer-built library)
		timeout 60 ip netns exec "$NA" env TICKSTACK_STATS_FILE="$TSDP_TMP"/stats-cli-%p.txt TICKSTACK_LIB="$B"/libtickstack-$v.so \
			"$RUN" -p throughput "$B"/stress-$v blast "$IPB" 13000 8 3 >"$TSDP_TMP/client.out" 2>&1 ||
			{ die "$v: blast side failed ($?)"; return 1; }
		wait_exit "$e" 60 && [ "$WAIT_RC" = 0 ] || { die "$v: echo side failed ($WAIT_RC)"; return 1; }
		! grep -q "ThreadSanitizer\|AddressSanitizer\|LeakSanitizer\|runtime error" "$TSDP_TMP"/*.out ||
			{ die "$v: sanitizer report"; return 1; }
		got=$(sed -n 's/^echoes received \([0-9]*\)/\1/p' "$TSDP_TMP/client.out")
		log "$CUR: $v: ${got:-0} echoes, $(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel) datagrams through the XSK, $(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_spilled) of them queued as copies"
		[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)" -gt 0 ] || { die "$v: nothing took the XSK"; return 1; }
	done
}

# the TCP cases (TICKSTACK_TCP=1)
. "$here/tcp.sh"
# the node daemon and the unprivileged library
. "$here/xdpd.sh"
# the tick-to-trade rig
. "$here/t2t.sh"
# real programs: nginx, redis, socat, iperf3, python asyncio
. "$here/programs.sh"
# every receive queue served
. "$here/queues.sh"
# the inspection tools (tickstack-dump, tickstack-stackdump)
. "$here/inspect.sh"

ALL="pp_both pp_kernel_server pp_kernel_client under_load ul_kernel_server throughput tp_kernel_server tp_kernel_client sigint_client mux nonblocked payload txcsum connected fork multicast require noadmin cmsg bigmtu forkq socat_udp_fork policy mcshare epollset reuseport readv stress $TCP_ALL $PROG_ALL $XDPD_ALL $T2T_ALL $QUEUES_ALL $INSPECT_ALL"
TESTS=${*:-$ALL}
for t in $TESTS; do
	CUR=$t
	start=$(date +%s%N)
	if [ "$t" = multicast ] || [ "$t" = tcp_loss ] || [ "$t" = tcp_rexmit ] || [ "${t#xdpd_}" != "$t" ] || [ "${t#t2t_}" != "$t" ] || [ "${t#queues}" != "$t" ]; then # own topology
		( trap tsdp_cleanup_netns EXIT; t_"$t" ) && ok=1 || ok=0
	else
		new_pair
		( t_"$t" ) && ok=1 || ok=0
		del_pair
	fi
	ms=$((($(date +%s%N) - start) / 1000000))
	if [ "$ok" = 1 ]; then
		log "PASS $t (${ms} ms)"
		PASSED=$((PASSED + 1))
	else
		log "FAIL $t (${ms} ms)"
		FAILED=$((FAILED + 1))
		FAILS+=("$t")
	fi
done
for t in "${FAILS[@]}"; do
	log "FAIL $t: $(cat "$FAIL_NOTES/$t" 2>/dev/null || echo "no message")"
done
log "$PASSED passed, $FAILED failed ${FAILS[*]:-}"
[ "$FAILED" = 0 ]
