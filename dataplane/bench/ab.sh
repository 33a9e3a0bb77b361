#!/usr/bin/env bash
# bench/ab.sh - interleaved A/B of dataplane builds: the bypass sockperf UDP ping-pong over one veth
# pair, each round running every build once, so that the VM's speed-mode changes hit all builds
# alike (a single benchmark run per build cannot resolve a few percent on a shared VM); odd rounds
# in the order given, even rounds in reverse (counterbalanced: give an even ROUNDS).
# Usage: bench/ab.sh ROUNDS SIZE DIR...   (as root; DIR: a dataplane directory with build/)
# Prints each round's medians (us), then per build the median over rounds and the median of the
# per-round ratios against the first DIR. AB_SECONDS sets each run's length (default 3); AB_TCP=1
# runs sockperf --tcp with TICKSTACK_TCP=1 instead; AB_QUEUES=N gives the veth N queues (each
# bypass end then serves all N, polled together, unless a DIR's tickstack-run sets TICKSTACK_QUEUE).
# Two pseudo-builds judge the issue-40 ratios on alternated runs: floor=DIR runs DIR's raw AF_XDP
# floor tool (build/xsk-floor, UDP only) and kernel runs sockperf --nonblocked on the kernel
# (spinning), in the same rounds: e.g. bench/ab.sh 20 14 floor=. kernel . gives bypass / floor and
# kernel / floor per round (bypass / kernel spinning: their quotient). floorcopy=DIR is the floor
# tool with XSK_FLOOR_COPY=1: every payload copied out of its frame and the reply's back in, the
# copies a recvfrom and a sendto make (the size-dependent part of the gap to the bare floor).
# min=DIR and minkernel run build/udp-pp (DIR's; minkernel: this tree's), the least a socket-API
# ping-pong can do (one sendto and one recvfrom per message), over DIR's bypass (-p latency) and
# over the kernel (spinning, MSG_DONTWAIT) instead of sockperf: sockperf's own per-message work is
# sockperf's run less udp-pp's on the same stack, and min=DIR / floorcopy=DIR the stack's part of
# the gap to the floor with no tool of its own in it.
# (xsk-floor's XSK_FLOOR_THREAD=1, through a DIR whose build/xsk-floor is a wrapper setting it, makes
# the floor multi-threaded, as a process with the library's control thread is.)
# A revision's build: git worktree add /tmp/rev REV && make -C /tmp/rev/dataplane all
# DIR@capture: that build with tickstack-dump attached to the server for the whole run (written to
# /dev/null, no filter): the cost of a capture while attached (docs/dataplane.md, "Seeing inside the
# bypass"). The same DIR may be named with and without it.
set -uo pipefail

[ $# -ge 3 ] || { echo "usage: $0 ROUNDS SIZE DIR..." >&2; exit 2; }
rounds=$1 size=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=../tests/lib.sh
. "$top/tests/lib.sh"
tcp_listening() { ip netns exec "$1" ss -Hnlt "sport = :$2" | grep -q .; }
floor_up() { grep -q "xsk-floor: ready" "$TSDP_TMP/floor.out" || ! kill -0 "$1" 2>/dev/null; }
# the pinger's median (us) from its sockperf-worded output on stdin
p50() { sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p'; }
# end_run SRV M: stops the reflector/server SRV, leaves no XDP program on either end, and keeps the
# run's median M (none when empty) as build $i's in this round
end_run() {
	kill -INT "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	ip -n "$NA" link set dev "$IFA" xdp off 2>/dev/null
	ip -n "$NB" link set dev "$IFB" xdp off 2>/dev/null
	med[i]=${2:-none}
}
tsdp_start
[ "$(id -u)" = 0 ] || { echo "ab: needs root" >&2; exit 1; }
for a in "$@"; do
	d=${a%@capture}
	case $d in
	kernel) continue ;;
	minkernel)
		[ -x "$top/build/udp-pp" ] || { echo "ab: $top/build/udp-pp missing: make -C $top all" >&2; exit 1; }
		continue ;;
	min=*)
		[ -z "${AB_TCP:-}" ] || { echo "ab: udp-pp is UDP only (unset AB_TCP)" >&2; exit 2; }
		[ -x "${d#*=}/build/udp-pp" ] || { echo "ab: ${d#*=}/build/udp-pp missing: make -C ${d#*=} all" >&2; exit 1; }
		continue ;;
	floor=* | floorcopy=*)
		[ -z "${AB_TCP:-}" ] || { echo "ab: the floor tool is UDP only (unset AB_TCP)" >&2; exit 2; }
		[ -x "${d#*=}/build/xsk-floor" ] || { echo "ab: ${d#*=}/build/xsk-floor missing: make -C ${d#*=} all" >&2; exit 1; }
		continue ;;
	esac
	[ -x "$d/build/tickstack-run" ] || { echo "ab: $d/build/tickstack-run missing: make -C $d all" >&2; exit 1; }
	[ "$d" = "$a" ] || [ -x "$d/build/tickstack-dump" ] || { echo "ab: $d/build/tickstack-dump missing: make -C $d all" >&2; exit 1; }
done

tsdp_ns NA a
tsdp_ns NB b
TSDP_QUEUES=${AB_QUEUES:-} tsdp_pair "$NA" "$NB" 198.18.31
IFA=tsdpv${TSDP_ID}a IFB=tsdpv${TSDP_ID}b IPA=198.18.31.1 IPB=198.18.31.2
MACB=$(ip -n "$NB" -br link show "$IFB" | awk '{print $3}')
MACA=$(ip -n "$NA" -br link show "$IFA" | awk '{print $3}')
ip -n "$NA" neigh replace $IPB lladdr "$MACB" dev "$IFA" nud permanent
ip -n "$NB" neigh replace $IPA lladdr "$MACA" dev "$IFB" nud permanent

out=$(mktemp)
PORT=21000
builds=("$@")
for r in $(seq 1 "$rounds"); do
	# counterbalanced: odd rounds run the builds in the order given, even rounds in reverse, so
	# that neither a build's place in the round (what ran just before it) nor a drift of the VM's
	# speed across a round favours one build over another (an even ROUNDS balances them exactly)
	order=$(seq 0 $(($# - 1)))
	[ $((r % 2)) = 0 ] && order=$(seq $(($# - 1)) -1 0)
	med=()
	# AB_TCP=1: sockperf --tcp, the bypass with TICKSTACK_TCP=1
	tcp=() tcpenv=()
	[ -n "${AB_TCP:-}" ] && tcp=(--tcp) tcpenv=(TICKSTACK_TCP=1)
	for i in $order; do
		a=${builds[i]}
		d=${a%@capture}
		PORT=$((PORT + 1))
		if [ "${d%%=*}" = floor ] || [ "${d%%=*}" = floorcopy ]; then
			f=${d#*=}/build/xsk-floor cp=0
			[ "${d%%=*}" = floorcopy ] && cp=1
			# the XSK of the run before may still be closing (EBUSY):
			# up to three tries, a second apart
			for try in 1 2 3; do
				ip netns exec "$NB" env XSK_FLOOR_COPY=$cp taskset -c 1 "$f" reflect "$IFB" $IPB $PORT >"$TSDP_TMP/floor.out" 2>&1 &
				srv=$!
				wait_for 10 floor_up "$srv"
				grep -q "xsk-floor: ready" "$TSDP_TMP/floor.out" && break
				kill -INT "$srv" 2>/dev/null
				wait "$srv" 2>/dev/null
				[ "$try" = 3 ] && { echo "ab: the floor reflector did not start: $(cat "$TSDP_TMP/floor.out")" >&2; exit 1; }
				ip -n "$NB" link set dev "$IFB" xdp off 2>/dev/null
				sleep 1
			done
			m=$(ip netns exec "$NA" env XSK_FLOOR_COPY=$cp taskset -c 0 "$f" ping "$IFA" $IPA $IPB "$MACB" $PORT "$size" "${AB_SECONDS:-3}" 2>&1 |
				p50)
			end_run "$srv" "$m"
			continue
		fi
		if [ "$d" = minkernel ] || [ "${d%%=*}" = min ]; then
			f=$top/build/udp-pp run=() spin=1
			[ "$d" = minkernel ] || f=${d#*=}/build/udp-pp run=("${d#*=}/build/tickstack-run" -p latency) spin=0
			ip netns exec "$NB" env UDP_PP_SPIN=$spin "${run[@]}" taskset -c 1 "$f" reflect $IPB $PORT >/dev/null 2>&1 &
			srv=$!
			wait_for 10 udp_listening "$NB" $PORT || { echo "ab: udp-pp reflector of $d did not start" >&2; exit 1; }
			m=$(ip netns exec "$NA" env UDP_PP_SPIN=$spin "${run[@]}" taskset -c 0 "$f" ping $IPA $IPB $PORT "$size" "${AB_SECONDS:-3}" 2>&1 |
				p50)
			end_run "$srv" "$m"
			continue
		fi
		run=("$d/build/tickstack-run" -p latency) nb=()
		[ "$d" = kernel ] && run=() nb=(--nonblocked)
		ip netns exec "$NB" env "${tcpenv[@]}" "${run[@]}" taskset -c 1 \
			sockperf sr "${tcp[@]}" "${nb[@]}" -i $IPB -p $PORT >/dev/null 2>&1 &
		srv=$!
		listening=udp_listening
		[ "${#tcp[@]}" -gt 0 ] && listening=tcp_listening
		wait_for 10 $listening "$NB" $PORT || { echo "ab: server of $d did not start" >&2; exit 1; }
		cap=
		if [ "$d" != "$a" ]; then
			"$d/build/tickstack-dump" -p "$(pgrep -n -f "sockperf sr ${AB_TCP:+--tcp }-i $IPB -p $PORT")" -w /dev/null \
				2>"$out.cap" &
			cap=$!
			wait_for 10 grep -q "capturing from" "$out.cap" || { echo "ab: capture of $d did not attach" >&2; exit 1; }
		fi
		m=$(ip netns exec "$NA" env "${tcpenv[@]}" "${run[@]}" taskset -c 0 \
			sockperf pp "${tcp[@]}" "${nb[@]}" -i $IPB -p $PORT -m "$size" -t "${AB_SECONDS:-3}" 2>&1 |
			p50)
		if [ -n "$cap" ]; then
			kill -INT "$cap"
			wait "$cap"
			echo "ab: $a: $(tail -n 1 "$out.cap")" >&2
		fi
		end_run "$srv" "$m"
	done
	echo "round $r: ${med[*]}" | tee -a "$out"
done
python3 "$here/ab-report.py" "$out" "$@"
rm -f "$out" "$out.cap"
