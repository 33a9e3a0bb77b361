#!/usr/bin/env bash
# bench/bench.sh - the dataplane benchmark (make -C dataplane bench).
# In one run on one veth pair between two network namespaces:
#  - sockperf ping-pong at 14, 64, 256, 1024, 1472 bytes for: kernel
#    blocking, kernel spinning (--nonblocked), the bypass stack
#    (tickstack-run -p latency), and the raw AF_XDP floor (build/xsk-floor);
#  - issue 40's ratios on alternated runs (bench/ab.sh, BENCH_ALT_ROUNDS
#    rounds per size): the floor, the floor with the copies a socket API
#    makes (XSK_FLOOR_COPY=1), udp-pp (the least a socket ping-pong does)
#    over the bypass and over the kernel, kernel spinning and the bypass;
#  - sockperf under-load at 10k, 100k, 250k, 500k msg/s and the highest
#    rate sustained without drops (kernel blocking, kernel spinning, bypass);
#  - microburst: the largest back-to-back burst of 256-byte datagrams
#    received without a drop (seed 002's method), kernel vs bypass receiver,
#    at equal buffering: the receiver's SO_RCVBUF (sockperf --buffer-size),
#    which the bypass honours as the kernel does, at each BENCH_BUFFERS size;
#  - TCP (sockperf --tcp): ping-pong at the same sizes and under-load at 10k
#    and 100k msg/s for kernel blocking, kernel spinning and the bypass
#    (TICKSTACK_TCP=1);
#  - TCP bulk throughput: Debian's iperf3, one stream, kernel and bypass
#    alternated BENCH_TPUT_REPS times (default 5) on the same veth pair,
#    BENCH_TPUT_SECONDS each (default 4, after 1 s left out), at each link
#    MTU of BENCH_TPUT_MTUS (default "1500 9000"; both ends set to it, then
#    back to 1,500); the target is bypass / kernel >= 0.5 (the median of
#    the alternated pairs' ratios) at the first MTU; beside each pair the
#    raw AF_XDP TX floor for packets of the MTU (build/xsk-floor blast ->
#    sink), and bypass / floor. The bypass runs iperf3 under the
#    profile BENCH_TPUT_PROFILE (default throughput: spin 20 us, then sleep;
#    the latency profile's 100 ms spin loses to other jobs on a shared VM).
# Writes docs/bench-dataplane.md, .json and .svg (bench/report.py); exits 3
# when the throughput target is missed, 4 when another target the report
# prints is MISSED (the report is written all the same).
# A search that reaches its bound (the highest rate tried, BENCH_MAXBURST)
# is recorded as such and reported as "at least N", never as a measurement.
# Ping-pong runs keep sockperf's full log until report.py has found its
# stalls (build/bench-runs/stalls-PORT.json; BENCH_KEEP_FULL_LOGS=1 keeps the
# logs too, ~25 MB each), and the bypass processes dump the stack's counters
# (stats-*.txt), which the report lists with the stalls.
# Settings: BENCH_SECONDS (per run, default 3), BENCH_OUT (md path),
# BENCH_BUFFERS (receive buffer sizes of the microburst, default
# "65536 212992"), BENCH_MAXBURST (the burst search's bound, default 262144),
# BENCH_QUICK=1 (one size, one rate, one throughput pair of 2 s unless
# BENCH_TPUT_REPS/BENCH_TPUT_SECONDS say otherwise, the alternated ratios in
# 2 rounds: a smoke test of this script), BENCH_ALT_SIZES (default: every size),
# BENCH_ALT_ROUNDS (default 6: even, as bench/ab.sh's counterbalanced order
# wants), BENCH_ALT_SECONDS (default 2): the
# alternated ratios (bench/ab.sh), issue 40's targets.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=../tests/lib.sh
. "$top/tests/lib.sh"
tsdp_start

DUR=${BENCH_SECONDS:-3}
TDUR=${BENCH_TPUT_SECONDS:-4}
TREPS=${BENCH_TPUT_REPS:-5}
TMTUS=${BENCH_TPUT_MTUS:-1500 9000}
TPROF=${BENCH_TPUT_PROFILE:-throughput}
OUT=${BENCH_OUT:-$top/../docs/bench-dataplane.md}
[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
for t in sockperf iperf3 ip ss taskset python3; do
	command -v $t >/dev/null || { echo "bench: $t missing (hack/install-deps.sh)" >&2; exit 1; }
done
for f in libtickstack.so tickstack-run tickstack-stackdump xsk-floor udp-pp; do
	[ -e "$B/$f" ] || { echo "bench: $B/$f missing: make -C dataplane" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "bench: needs 2 CPUs (the two ends spin on different CPUs)" >&2; exit 1; }

# raw outputs of every run are kept (build/bench-runs) for inspection
R=$B/bench-runs
rm -rf "$R"
mkdir -p "$R"
MAN=$R/manifest
: >"$MAN"

tsdp_ns NA a
tsdp_ns NB b
tsdp_pair "$NA" "$NB" 198.18.30
IFA=tsdpv${TSDP_ID}a
IFB=tsdpv${TSDP_ID}b
IPA=198.18.30.1
IPB=198.18.30.2
MACB=$(ip -n "$NB" -br link show "$IFB" | awk '{print $3}')
# static neighbours: no ARP in the measured path of any mode
MACA=$(ip -n "$NA" -br link show "$IFA" | awk '{print $3}')
ip -n "$NA" neigh replace $IPB lladdr "$MACB" dev "$IFA" nud permanent
ip -n "$NB" neigh replace $IPA lladdr "$MACA" dev "$IFB" nud permanent

META=$R/meta
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "sockperf=$(sockperf --version 2>&1 | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -n1)"
	echo "iperf3=$(iperf3 --version 2>&1 | sed -n 's/^iperf \([^ ]*\).*/\1/p' | head -n1)"
	echo "tput_seconds=$TDUR"
	echo "tput_mtus=$TMTUS"
	echo "tput_profile=$TPROF"
	echo "seconds=$DUR"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "rmem_default=$(cat /proc/sys/net/core/rmem_default)"
	echo "rmem_max=$(cat /proc/sys/net/core/rmem_max)"
	# the bypass's buffering below the socket (dataplane/src/config.c, ts_internal.h)
	echo "umem_frames=${TICKSTACK_UMEM_FRAMES:-$(sed -n 's/^\tts_cfg.umem_frames = \([0-9]*\);/\1/p' "$top/src/config.c")}"
	echo "sockq_len=${TICKSTACK_SOCKQ_LEN:-$(sed -n 's/^\tts_cfg.sockq_len = \([0-9]*\);/\1/p' "$top/src/config.c")}"
	echo "rx_ring=$(sed -n 's/^#define TS_RING_SIZE \([0-9]*\)u.*/\1/p' "$top/src/ts_internal.h")"
	echo "command=${BENCH_QUICK:+BENCH_QUICK=$BENCH_QUICK }${BENCH_TPUT_REPS:+BENCH_TPUT_REPS=$BENCH_TPUT_REPS }${BENCH_TPUT_SECONDS:+BENCH_TPUT_SECONDS=$BENCH_TPUT_SECONDS }${BENCH_TPUT_MTUS:+BENCH_TPUT_MTUS=\"$BENCH_TPUT_MTUS\" }${BENCH_TPUT_PROFILE:+BENCH_TPUT_PROFILE=$BENCH_TPUT_PROFILE }${BENCH_ALT_ROUNDS:+BENCH_ALT_ROUNDS=$BENCH_ALT_ROUNDS }${BENCH_ALT_SIZES:+BENCH_ALT_SIZES=\"$BENCH_ALT_SIZES\" }make -C dataplane bench"
} >"$META"

detach() {
	ip -n "$NA" link set dev "$IFA" xdp off 2>/dev/null
	ip -n "$NB" link set dev "$IFB" xdp off 2>/dev/null
	ip -n "$NA" link set dev "$IFA" xdpgeneric off 2>/dev/null
	ip -n "$NB" link set dev "$IFB" xdpgeneric off 2>/dev/null
}

# prefix NS MODE TAG [tcp [PROFILE]]: how a program runs in NS for MODE
prefix() {
	local tcp=
	[ "${4:-}" = tcp ] && tcp=TICKSTACK_TCP=1
	case $2 in
	bypass) echo "ip netns exec $1 env $tcp TICKSTACK_STATS_FILE=$R/stats-$3-%p.txt $B/tickstack-run -p ${5:-latency}" ;;
	*) echo "ip netns exec $1" ;;
	esac
}
# shellcheck disable=SC2317 # called as ${tcp:-udp}_listening
tcp_listening() { ip netns exec "$1" ss -Hnlt "sport = :$2" | grep -q .; }
# accel_listening PID: the bypass process PID's listener is lwIP's, its port
# steered. The library's listen() makes the kernel listen first (ss shows it)
# and then sets up the XSK and the steering: a client that connected in
# between would reach the kernel's listener, and its connection would break
# when the steering starts (its segments then go to lwIP, which resets them;
# seen once as an iperf3 "Broken pipe" under load)
# shellcheck disable=SC2317 # called through wait_for
accel_listening() { "$B/tickstack-stackdump" -p "$1" 2>/dev/null | grep -q " LISTEN "; }
nbflag() { [ "$1" = kspin ] && echo --nonblocked; }

PORT=20000
SRV=
SRV_BUF= # the server's SO_RCVBUF (sockperf --buffer-size), empty: the system's
start_server() { # MODE [tcp]
	local tcp=${2:-}
	PORT=$((PORT + 1))
	# shellcheck disable=SC2046 # nbflag prints no word or one flag
	$(prefix "$NB" "$1" srv$PORT "$tcp") taskset -c 1 sockperf sr ${tcp:+--tcp} -i $IPB -p $PORT \
		$(nbflag "$1") ${SRV_BUF:+--buffer-size $SRV_BUF} >"$R/srv-$PORT.out" 2>&1 &
	SRV=$!
	wait_for 10 "${tcp:-udp}"_listening "$NB" $PORT || { echo "bench: server did not start" >&2; return 1; }
	if [ "$1" = bypass ] && [ -n "$tcp" ]; then
		wait_for 10 accel_listening "$SRV" || { echo "bench: the server's listener is not accelerated" >&2; return 1; }
	fi
}
stop_server() {
	kill -INT "$SRV" 2>/dev/null
	wait_exit "$SRV" 10 || echo "bench: server $SRV killed" >&2
}

# record KIND MODE PARAM [MTU]: the client/server outputs of the run on PORT,
# the prefixes of its stack counter dumps, its stalls (when its full log was
# kept), the link MTU of a throughput run
record() { echo "$1 $2 $3 $R/cli-$PORT.out $R/srv-$PORT.out $R/stats-cli$PORT $R/stats-srv$PORT $R/stalls-$PORT.json${4:+ $4}" >>"$MAN"; }

# setmtu MTU: both ends of the pair
setmtu() {
	ip -n "$NA" link set dev "$IFA" mtu "$1" && ip -n "$NB" link set dev "$IFB" mtu "$1"
}

# stalls: the stalls of the run on PORT from its full log (after the run, off
# the measured path), which is then removed unless BENCH_KEEP_FULL_LOGS=1
stalls() {
	[ -s "$R/full-$PORT.csv" ] || return 0
	python3 "$here/report.py" --stalls "$R/full-$PORT.csv" >"$R/stalls-$PORT.json" ||
		{ echo "bench: no stalls from $R/full-$PORT.csv" >&2; rm -f "$R/stalls-$PORT.json"; }
	[ "${BENCH_KEEP_FULL_LOGS:-0}" = 1 ] || rm -f "$R/full-$PORT.csv"
}

pp() { # MODE SIZE
	start_server "$1" || return
	# shellcheck disable=SC2046 # nbflag prints no word or one flag
	$(prefix "$NA" "$1" cli$PORT) taskset -c 0 timeout $((DUR + 30)) sockperf pp -i $IPB -p $PORT \
		-m "$2" -t "$DUR" $(nbflag "$1") --full-log "$R/full-$PORT.csv" >"$R/cli-$PORT.out" 2>&1
	stop_server
	stalls
	record pp "$1" "$2"
}

ul() { # MODE RATE
	local cenv=()
	# sockperf's under-load client runs a pacing sender thread and a
	# receiver thread on one CPU: the bypass receiver sleeps when idle
	# there (two spinners on one CPU starve each other)
	[ "$1" = bypass ] && cenv=(env TICKSTACK_SPIN_USEC=0)
	start_server "$1" || return
	# shellcheck disable=SC2046 # nbflag prints no word or one flag
	$(prefix "$NA" "$1" cli$PORT) "${cenv[@]}" taskset -c 0 timeout $((DUR + 30)) sockperf ul -i $IPB -p $PORT \
		-m 64 --mps "$2" -t "$DUR" $(nbflag "$1") >"$R/cli-$PORT.out" 2>&1
	stop_server
	record ul "$1" "$2"
}

tpp() { # MODE SIZE: TCP ping-pong
	start_server "$1" tcp || return
	# shellcheck disable=SC2046 # nbflag prints no word or one flag
	$(prefix "$NA" "$1" cli$PORT tcp) taskset -c 0 timeout $((DUR + 30)) sockperf pp --tcp -i $IPB \
		-p $PORT -m "$2" -t "$DUR" $(nbflag "$1") --full-log "$R/full-$PORT.csv" >"$R/cli-$PORT.out" 2>&1
	stop_server
	stalls
	record tcp_pp "$1" "$2"
}

tul() { # MODE RATE: TCP under load (the client's receiver sleeps, as in ul)
	local cenv=()
	[ "$1" = bypass ] && cenv=(env TICKSTACK_SPIN_USEC=0)
	start_server "$1" tcp || return
	# shellcheck disable=SC2046 # nbflag prints no word or one flag
	$(prefix "$NA" "$1" cli$PORT tcp) "${cenv[@]}" taskset -c 0 timeout $((DUR + 30)) sockperf ul --tcp \
		-i $IPB -p $PORT -m 64 --mps "$2" -t "$DUR" $(nbflag "$1") >"$R/cli-$PORT.out" 2>&1
	stop_server
	record tcp_ul "$1" "$2"
}

# MODE REP MTU: iperf3, one TCP stream from NA to NB for TDUR s (the first
# second, slow start, left out), the link at MTU; the bypass under
# TICKSTACK_REQUIRE=1, so a connection left on the kernel fails the run
# instead of measuring the kernel
tput() {
	local req=()
	[ "$1" = bypass ] && req=(env TICKSTACK_REQUIRE=1)
	PORT=$((PORT + 1))
	$(prefix "$NB" "$1" srv$PORT tcp "$TPROF") "${req[@]}" taskset -c 1 iperf3 -s -1 -B $IPB -p $PORT \
		>"$R/srv-$PORT.out" 2>&1 &
	SRV=$!
	wait_for 10 tcp_listening "$NB" $PORT || { log "iperf3 server did not start"; return 1; }
	if [ "$1" = bypass ]; then
		wait_for 10 accel_listening "$SRV" || { log "iperf3 server's listener is not accelerated"; return 1; }
	fi
	$(prefix "$NA" "$1" cli$PORT tcp "$TPROF") "${req[@]}" taskset -c 0 timeout $((TDUR + 30)) iperf3 -c $IPB -p $PORT \
		-t "$TDUR" -O 1 -J >"$R/cli-$PORT.out" 2>&1
	wait_exit "$SRV" 10 || log "iperf3 server $SRV killed"
	record tput "$1" "$2" "$3"
}

# REP MTU: the raw AF_XDP TX floor for MTU-sized frames: xsk-floor blast
# sends UDP payloads of MTU - 28 bytes (IPv4 packets of the MTU; chains of
# frames past a frame's 2,048 bytes) for TDUR s through its copy-mode TX
# ring, xsk-floor sink counts what its XSK receives (printed when it is
# stopped)
tfloor() {
	PORT=$((PORT + 1))
	detach
	ip netns exec "$NB" taskset -c 1 "$B/xsk-floor" sink "$IFB" $IPB $PORT >"$R/srv-$PORT.out" 2>&1 &
	SRV=$!
	wait_for 10 grep -q "xsk-floor: ready" "$R/srv-$PORT.out" || { log "sink did not start"; return 1; }
	ip netns exec "$NA" taskset -c 0 "$B/xsk-floor" blast "$IFA" $IPA $IPB "$MACB" $PORT $(($2 - 28)) "$TDUR" \
		>"$R/cli-$PORT.out" 2>&1
	sleep 0.2 # the last frames in flight
	stop_server
	detach
	record tfloor floor "$1" "$2"
}

floor() { # SIZE
	PORT=$((PORT + 1))
	detach
	ip netns exec "$NB" taskset -c 1 "$B/xsk-floor" reflect "$IFB" $IPB $PORT >"$R/srv-$PORT.out" 2>&1 &
	SRV=$!
	wait_for 10 grep -q "xsk-floor: ready" "$R/srv-$PORT.out" || { echo "bench: reflector did not start" >&2; return; }
	ip netns exec "$NA" taskset -c 0 "$B/xsk-floor" ping "$IFA" $IPA $IPB "$MACB" $PORT "$1" "$DUR" \
		>"$R/cli-$PORT.out" 2>&1
	stop_server
	detach
	record floor floor "$1"
}

burst() { # MODE N: kernel sender, MODE receiver, one burst of N x 256 B
	start_server "$1" || return
	ip netns exec "$NA" taskset -c 0 timeout 30 sockperf tp -i $IPB -p $PORT -m 256 -b "$2" \
		--mps "$2" -t 1 >"$R/cli-$PORT.out" 2>&1
	stop_server
	record burst "$1" "$2"
}

# drops of the last recorded run (from the sent/received totals)
last_ok() { python3 "$here/report.py" --check-last "$MAN"; }

# MODE N: a burst of N absorbed. One that dropped is sent again, and N fails only when both
# dropped: one pause of a shared VM during one burst does not end the search there.
burst_ok() {
	burst "$1" "$2"
	last_ok && return 0
	log "microburst $1 $2 dropped: once more"
	burst "$1" "$2"
	last_ok
}

log() { echo "bench: $*" >&2; }

SIZES="14 64 256 1024 1472"
ALT_SIZES=${BENCH_ALT_SIZES:-$SIZES}
ALT_ROUNDS=${BENCH_ALT_ROUNDS:-6}
ALT_DUR=${BENCH_ALT_SECONDS:-2}
RATES="10000 100000 250000 500000"
MAXBURST=${BENCH_MAXBURST:-262144}
BUFFERS=${BENCH_BUFFERS:-65536 212992}
if [ "${BENCH_QUICK:-0}" = 1 ]; then # smoke test of the script itself
	SIZES="64"
	ALT_ROUNDS=${BENCH_ALT_ROUNDS:-2}
	RATES="10000"
	MAXBURST=128
	BUFFERS=65536
	TREPS=${BENCH_TPUT_REPS:-1}
	TDUR=${BENCH_TPUT_SECONDS:-2}
fi
for m in kernel kspin bypass; do
	detach
	for s in $SIZES; do log "ping-pong $m $s B"; pp $m "$s"; done
done
for s in $SIZES; do log "ping-pong floor $s B"; floor "$s"; done
# issue 40's ratios on alternated runs: bench/ab.sh runs the floor, the
# copying floor, udp-pp over the bypass and over the kernel, kernel spinning
# and the bypass one after the other (in reverse in every second round),
# ALT_ROUNDS times per size, so that the ratios come from runs seconds apart (the sequential runs above are minutes
# apart, and the VM changes speed in between); report.py takes the median
# of the per-round ratios and their spread
for s in $ALT_SIZES; do
	log "alternated ratios $s B ($ALT_ROUNDS rounds)"
	AB_SECONDS=$ALT_DUR "$here/ab.sh" "$ALT_ROUNDS" "$s" floor="$top" floorcopy="$top" min="$top" \
		minkernel kernel "$top" >"$R/alt-$s.out" 2>&1 || log "alternated ratios $s B failed: $R/alt-$s.out"
	echo "alt $s $R/alt-$s.out floor,floorcopy,min,minkernel,kspin,bypass" >>"$MAN"
done
for m in kernel kspin bypass; do
	detach
	for s in $SIZES; do log "TCP ping-pong $m $s B"; tpp $m "$s"; done
	for r in ${TCP_RATES:-10000 100000}; do log "TCP under-load $m $r msg/s"; tul $m "$r"; done
done
# bulk throughput: kernel, bypass and the raw AF_XDP floor alternated, so
# that all three see the VM alike, at each MTU in turn
for mtu in $TMTUS; do
	setmtu "$mtu" || { log "MTU $mtu refused by the veth pair"; exit 1; }
	for i in $(seq 1 "$TREPS"); do
		for m in kernel bypass; do
			detach # an XDP program on the veth slows the kernel's own path
			log "TCP throughput (iperf3) $m, MTU $mtu, pair $i"
			tput $m "$i" "$mtu"
		done
		log "raw AF_XDP TX floor, $mtu-byte packets, pair $i"
		tfloor "$i" "$mtu"
	done
done
setmtu 1500

for m in kernel kspin bypass; do
	detach
	best=0
	bad=0
	for r in $RATES; do
		log "under-load $m $r msg/s"
		ul $m "$r"
		if last_ok; then
			[ "$bad" = 0 ] && best=$r
		else
			[ "$bad" = 0 ] && bad=$r
		fi
	done
	if [ "$bad" = 0 ] && [ "${BENCH_QUICK:-0}" != 1 ]; then
		log "under-load $m 1000000 msg/s"
		ul $m 1000000
		if last_ok; then best=1000000; else bad=1000000; fi
	fi
	# the highest sustained rate: bisect between the best and the first failure
	if [ "$bad" != 0 ]; then
		for _ in 1 2 3; do
			mid=$(((best + bad) / 2))
			[ $((bad - best)) -lt 10000 ] && break
			log "under-load $m $mid msg/s (search)"
			ul $m $mid
			if last_ok; then best=$mid; else bad=$mid; fi
		done
	fi
	# no rate failed: the search stopped at its bound, the real limit is higher
	echo "maxrate $m $best $([ "$bad" = 0 ] && echo bound || echo measured) - - -" >>"$MAN"
done

for buf in $BUFFERS; do
	SRV_BUF=$buf
	for m in kernel bypass; do
		detach
		n=64
		good=0
		bad=0
		while [ $n -le "$MAXBURST" ]; do
			log "microburst $m $n (SO_RCVBUF $buf)"
			if burst_ok $m $n; then good=$n; n=$((n * 2)); else bad=$n; break; fi
		done
		if [ $bad -gt 0 ]; then
			for _ in 1 2 3 4; do
				mid=$(((good + bad) / 2))
				[ $((bad - good)) -le $((good / 16 + 1)) ] && break
				log "microburst $m $mid (search, SO_RCVBUF $buf)"
				if burst_ok $m $mid; then good=$mid; else bad=$mid; fi
			done
		fi
		# no burst dropped: the search stopped at its bound, the real limit is higher
		echo "maxburst $m $good $([ $bad = 0 ] && echo bound || echo measured) $buf - -" >>"$MAN"
	done
done
SRV_BUF=
detach
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$META"

# 3: the throughput target missed, 4: another target missed (report.py); the
# report is written all the same
python3 "$here/report.py" --meta "$META" --manifest "$MAN" --out "$OUT"
exit $?
