#!/usr/bin/env bash
# tests/conform.sh - the conformance suite: each case of tests/conform.c
# runs twice against the same kernel peer in another namespace, first on
# the kernel, then through the stack (tickstack-run -p latency --require),
# and the two transcripts must be identical. Equality through the kernel
# proves nothing, so each case also names the path the stack must take:
#   accel          the process received datagrams through the XSK
#                  (stats: rx_accel > 0 on the case's socket)
#   xskonly        every datagram came through the XSK, none was read
#                  from the kernel socket, and the port was never handed
#                  to the kernel (rx_accel > 0, rx_kernel = 0,
#                  kernel_shared = 0)
#   hwmeta         xskonly, and every datagram's frame came with the
#                  device-bound program's metadata (rx_hw_meta >= rx_accel;
#                  TICKSTACK_RX_HWTSTAMP=1), none with a hardware time on
#                  veth (rx_hw_tstamps = 0)
#   hwunbound      xskonly, the program not device-bound (generic XDP):
#                  counted (hw_unbound > 0), no metadata (rx_hw_meta = 0)
#   xsk            the stack's XSK took the datagrams (rx_packets > 0 on
#                  its xsk line), whichever process then read them (a
#                  forked child's reads are not in the dumps: it _exits)
#   spilled        past the socket queue length, datagrams were kept as
#                  copies (rx_spilled > 0)
#   kernel:FIELD   it left its socket on the kernel, counted (FIELD > 0);
#                  such a case runs without --require (TICKSTACK_REQUIRE=0)
#   tcp            a stream case (TICKSTACK_TCP=1): its connections went
#                  through lwIP and the XSK (conns_accel > 0, rx_accel > 0)
#                  and none stayed on the kernel (conns_kernel = 0)
#   jumbo          every datagram went through the XSK both ways, the
#                  jumbo ones as chains of frames (AF_XDP multi-buffer):
#                  rx_accel > 0, rx_multibuf > 0, tx_multibuf > 0, and
#                  rx_kernel = tx_kernel = 0
#                  and the kernel of the case's namespace received and sent
#                  no UDP datagram meanwhile (nstat UdpInDatagrams,
#                  UdpOutDatagrams)
#   tcpjumbo       tcp, with jumbo segments both ways (rx_multibuf > 0,
#                  tx_multibuf > 0), and the kernel of the case's namespace
#                  received and sent no TCP segment meanwhile (nstat
#                  TcpInSegs, TcpOutSegs)
#   refused        run with --require, every call that would have moved a
#                  socket or a datagram to the kernel failed (the program
#                  checks EOPNOTSUPP and the library's message), and nothing
#                  fell back (sockets_kernel = 0, and no fallback_events but
#                  neighbour misses, which REQUIRE lets through)
# tests/conform/xfail lists the known differences, one "CASE reason" a
# line: such a case's diff is printed and it must still differ (the list
# only shrinks: a case that now passes fails the run until it is removed).
# What the transcripts normalise (and only that) is described at the top
# of tests/conform.c: timestamps, interface indexes, the peer's port.
# Usage: tests/conform.sh [CASE...]   (default: all). Needs root.
# CONFORM_KEEP=DIR keeps every transcript (CASE.kernel, CASE.stack) there.
# Outside CI a missing requirement skips; with CI=true it fails.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tsdp_start

skip() { tsdp_fail_or_skip conform "$@"; }
# kcounts NS COUNTER...: the kernel's SNMP counters of NS (nstat), one line
kcounts() {
	local ns=$1
	shift
	ip netns exec "$ns" nstat -asz "$@" | awk 'NR > 1 {printf "%s=%s ", $1, $2}'
}
# kdelta BEFORE AFTER NAME: how much counter NAME moved between two kcounts
kdelta() {
	local a b
	a=$(tr ' ' '\n' <<<"$1" | sed -n "s/^$3=//p")
	b=$(tr ' ' '\n' <<<"$2" | sed -n "s/^$3=//p")
	echo $((${b:-0} - ${a:-0}))
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, XDP)"
for f in libtickstack.so tickstack-run conform; do
	[ -e "$B/$f" ] || skip "$B/$f missing: run make -C dataplane all build/conform"
done

# CASE PATH [PROFILE [VAR=VALUE...]]  (the stack run's tickstack-run profile,
# default latency, and its extra environment; TICKSTACK_REQUIRE=0 there runs
# it without --require, for a case whose datagrams the stack hands to the
# kernel one by one, which --require would turn into errors; XDP_FRESH=1
# detaches the XDP programs of the case's namespace before and after the
# stack's run)
CASES="cmsg accel
tsing xskonly
tstamp xskonly
tstamp xskonly latency ASAN=1
tcptstamp tcp latency TICKSTACK_TCP=1
tcptstamp tcp latency TICKSTACK_TCP=1 ASAN=1
udptxtstamp xskonly
udptxtstamp xskonly latency ASAN=1
tcptxtstamp kernel:kernel_option latency TICKSTACK_REQUIRE=0 TICKSTACK_TCP=1
hwtstamp kernel:kernel_option latency TICKSTACK_REQUIRE=0
hwtstampxdp hwmeta latency TICKSTACK_RX_HWTSTAMP=1 XDP_FRESH=1
hwtstampxdp hwmeta latency TICKSTACK_RX_HWTSTAMP=1 XDP_FRESH=1 ASAN=1
hwtstampgen hwunbound latency TICKSTACK_RX_HWTSTAMP=1 TICKSTACK_XDP_MODE=skb XDP_FRESH=1
udptxtstampk kernel:tx_kernel_flags latency TICKSTACK_REQUIRE=0
flags accel
iov accel
mmsg accel
rcvtimeo accel
eintr accel
connect accel
epoll accel
rcvbuf accel
rcvbufbig spilled
rcvbufbig spilled latency ASAN=1
fork xsk
forkwin accel
fds accel
wakeup accel default TICKSTACK_TCP=1
reuseaddr xskonly
reuseport xskonly
direct xskonly
direct xskonly latency ASAN=1
bigdgram kernel:tx_kernel_oversize latency TICKSTACK_REQUIRE=0
vfork accel
exec accel
forkexec accel
forkcloexec accel
manyfds accel
mcast accel latency TICKSTACK_REQUIRE=0
uring kernel:kernel_uring latency TICKSTACK_REQUIRE=0
uringraw kernel:kernel_uring latency TICKSTACK_REQUIRE=0
devmark kernel:kernel_option latency TICKSTACK_REQUIRE=0
csum accel
narrow accel
starve accel
jumbo accel latency TICKSTACK_REQUIRE=0
jumbo9000 jumbo
jumbo9000 jumbo latency ASAN=1
tcpjumbo tcpjumbo latency TICKSTACK_TCP=1
tcpjumbo tcpjumbo latency TICKSTACK_TCP=1 ASAN=1
udpet accel
tcpet tcp latency TICKSTACK_TCP=1
tcpconnect tcp latency TICKSTACK_TCP=1
tcpaccept tcp latency TICKSTACK_TCP=1
tcpholdport tcp latency TICKSTACK_TCP=1
tcpsendfile tcp latency TICKSTACK_TCP=1
tcpsplice tcp latency TICKSTACK_TCP=1
tcpcalls tcp latency TICKSTACK_TCP=1
tcpfork tcp latency TICKSTACK_TCP=1
tcpforkconn tcp latency TICKSTACK_TCP=1
tcpprefork tcp latency TICKSTACK_TCP=1
tcpforkepoll tcp latency TICKSTACK_TCP=1
tcpforkparent tcp latency TICKSTACK_TCP=1
udpforkpeer xsk
tcpet tcp latency TICKSTACK_TCP=1 ASAN=1
tcpsendfile tcp latency TICKSTACK_TCP=1 ASAN=1
tcpsplice tcp latency TICKSTACK_TCP=1 ASAN=1
tcpforkconn tcp latency TICKSTACK_TCP=1 ASAN=1
udpsplice accel
require refused
requiresend refused
queue refused"

declare -A XFAIL=()
while read -r c why; do
	[ -n "$c" ] && [ "${c#\#}" = "$c" ] && XFAIL[$c]=$why
done <"$here/conform/xfail"

tsdp_ns NA a
tsdp_ns NB b
tsdp_pair "$NA" "$NB" 198.18.12
IPB=198.18.12.2
PORT=12100
# static neighbours: the first datagram of a flow never waits for ARP
macb=$(ip -n "$NB" -br link | awk '/^tsdp/ {print $3}')
maca=$(ip -n "$NA" -br link | awk '/^tsdp/ {print $3}')
ip -n "$NA" neigh replace $IPB lladdr "$macb" dev "$(ip -n "$NA" -br link | awk '/^tsdp/ {print $1}' | cut -d@ -f1)" nud permanent
ip -n "$NB" neigh replace 198.18.12.1 lladdr "$maca" dev "$(ip -n "$NB" -br link | awk '/^tsdp/ {print $1}' | cut -d@ -f1)" nud permanent
ip netns exec "$NB" "$B/conform" peer $PORT >"$TSDP_TMP/peer.out" 2>&1 &
TSDP_PIDS+=("$!")
disown
wait_for 10 udp_listening "$NB" $PORT || { echo "conform: the peer did not start" >&2; exit 1; }
wait_for 10 tcp_listening "$NB" $PORT || { echo "conform: the peer's TCP side did not start" >&2; exit 1; }
# SYNs to PORT+99 go unanswered (case tcpconnect: a handshake that stays in progress)
ip netns exec "$NB" iptables -A INPUT -p tcp --dport $((PORT + 99)) -j DROP
# a second address on our side (case narrow), reachable from the peer
ip -n "$NA" addr add 198.18.12.3/24 dev "$(ip -n "$NA" -br link | awk '/^tsdp/ {print $1}' | cut -d@ -f1)"
ip -n "$NB" neigh replace 198.18.12.3 lladdr "$maca" dev "$(ip -n "$NB" -br link | awk '/^tsdp/ {print $1}' | cut -d@ -f1)" nud permanent
# multicast goes through the link on both sides (case mcast)
for ns in "$NA" "$NB"; do
	ip -n "$ns" route add 224.0.0.0/4 dev "$(ip -n "$ns" -br link | awk '/^tsdp/ {print $1}' | cut -d@ -f1)"
done

# a second link with a 9,000-byte MTU and its own peer (case jumbo)
tsdp_ns NC c
tsdp_ns ND d
tsdp_pair "$NC" "$ND" 198.18.13 "j${TSDP_ID}a" "j${TSDP_ID}b"
IPJ=198.18.13.2
ip -n "$NC" link set "tsdpj${TSDP_ID}a" mtu 9000
ip -n "$ND" link set "tsdpj${TSDP_ID}b" mtu 9000
# static neighbours there too (the path checks of jumbo9000 and tcpjumbo
# want no send through the kernel, an ARP wait included)
ip -n "$NC" neigh replace $IPJ lladdr "$(ip -n "$ND" -br link | awk '/^tsdp/ {print $3}')" \
	dev "tsdpj${TSDP_ID}a" nud permanent
ip -n "$ND" neigh replace 198.18.13.1 lladdr "$(ip -n "$NC" -br link | awk '/^tsdp/ {print $3}')" \
	dev "tsdpj${TSDP_ID}b" nud permanent
ip netns exec "$ND" "$B/conform" peer $PORT >"$TSDP_TMP/peer-jumbo.out" 2>&1 &
TSDP_PIDS+=("$!")
disown
wait_for 10 udp_listening "$ND" $PORT || { echo "conform: the jumbo peer did not start" >&2; exit 1; }

want=("$@")
passed=0 failed=0 xfailed=0
fails=()
while read -r c path prof extra; do
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$c"; then
		continue
	fi
	k=$TSDP_TMP/$c.kernel s=$TSDP_TMP/$c.stack
	ns=$NA ip=$IPB
	case $c in jumbo | jumbo9000 | tcpjumbo) ns=$NC ip=$IPJ ;; esac
	rm -f "$TSDP_TMP"/stats-*
	ip netns exec "$ns" timeout 60 "$B/conform" "$c" $ip $PORT >"$k" 2>&1
	echo "exit $?" >>"$k"
	# the case's extra environment, one VAR=value a word
	read -ra env_extra <<<"$extra"
	req=(--require)
	case " $extra " in *" TICKSTACK_REQUIRE=0 "*) req=() ;; esac
	bin=$B/conform name=$c
	case " $extra " in *" ASAN=1 "*)
		# the program and the library built with ASan/UBSan: any error aborts it, and its
		# transcript (exit status included) no longer matches the kernel's
		bin=$B/conform-asan name="$c (asan)" s=$TSDP_TMP/$c.asan-stack
		[ -x "$bin" ] && [ -e "$B/libtickstack-asan.so" ] ||
			{ echo "conform: $bin or libtickstack-asan.so missing: make -C dataplane test builds them" >&2; exit 1; }
		env_extra+=("TICKSTACK_LIB=$B/libtickstack-asan.so" ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1
			UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
		;;
	esac
	# XDP_FRESH=1: the case's stack loads its own program (the one an
	# earlier case left attached decides how the XDP runs), and leaves
	# none for the next case
	fresh=
	case " $extra " in *" XDP_FRESH=1 "*) fresh=1 ;; esac
	xdp_off() {
		local l
		for l in $(ip -n "$ns" -br link | awk '/^tsdp/ {sub(/@.*/, "", $1); print $1}'); do
			ip -n "$ns" link set dev "$l" xdp off 2>/dev/null
			ip -n "$ns" link set dev "$l" xdpgeneric off 2>/dev/null
		done
	}
	[ -z "$fresh" ] || xdp_off
	# the kernel's own counters of the case's namespace, for the path checks
	# that want them flat through the stack's run
	kc=(UdpInDatagrams UdpOutDatagrams)
	[ "$path" = tcpjumbo ] && kc=(TcpInSegs TcpOutSegs)
	k0=$(kcounts "$ns" "${kc[@]}")
	ip netns exec "$ns" env TICKSTACK_STATS_FILE="$TSDP_TMP/stats-%p.txt" "${env_extra[@]}" timeout 60 \
		"$B/tickstack-run" -p "${prof:-latency}" "${req[@]}" "$bin" "$c" $ip $PORT >"$s" 2>&1
	echo "exit $?" >>"$s"
	[ -z "$fresh" ] || xdp_off
	k1=$(kcounts "$ns" "${kc[@]}")
	[ -n "${CONFORM_KEEP:-}" ] && mkdir -p "$CONFORM_KEEP" && cp "$k" "$s" "$CONFORM_KEEP/"
	why=""
	if ! cmp -s "$k" "$s"; then
		why="differs from the kernel"
	else
		case $path in
		accel)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_accel)
			[ "$n" -gt 0 ] || why="equal, but nothing came through the XSK (rx_accel=0)"
			;;
		xskonly) # every datagram through the XSK, none read from the kernel socket
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_accel)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_kernel)
			sh=$(stat_sum "$TSDP_TMP/stats-*.txt" kernel_shared tickstack)
			[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$sh" = 0 ] ||
				why="equal, but not all through the XSK (rx_accel=$n rx_kernel=$m kernel_shared=$sh)"
			;;
		hwmeta) # xskonly, each frame with the device-bound program's
			# metadata; veth's kfunc gives the skb's hardware time: none
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_accel)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_kernel)
			md=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_hw_meta xsk)
			hw=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_hw_tstamps xsk)
			[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$md" -ge "$n" ] && [ "$hw" = 0 ] ||
				why="equal, but not through the device-bound program (rx_accel=$n rx_kernel=$m rx_hw_meta=$md rx_hw_tstamps=$hw)"
			;;
		hwunbound) # xskonly, the program not device-bound: counted, no metadata
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_accel)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_kernel)
			md=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_hw_meta xsk)
			ub=$(stat_sum "$TSDP_TMP/stats-*.txt" hw_unbound xsk)
			[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$md" = 0 ] && [ "$ub" -gt 0 ] ||
				why="equal, but not the unbound fallback (rx_accel=$n rx_kernel=$m rx_hw_meta=$md hw_unbound=$ub)"
			;;
		xsk)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_packets xsk)
			[ "$n" -gt 0 ] || why="equal, but the XSK took nothing (rx_packets=0)"
			;;
		jumbo) # both ways through the XSK, the jumbo frames as chains
			# (but for sends made while the control thread resolved the
			# next hop, which REQUIRE lets through: on a loaded machine
			# it may not answer within the send's 5 ms; the kernel's
			# UdpOutDatagrams moves by exactly those, nothing else does)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_accel)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_kernel)
			t=$(stat_sum "$TSDP_TMP/stats-*.txt" tx_kernel)
			nb=$(stat_sum "$TSDP_TMP/stats-*.txt" tx_kernel_neigh)
			r=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_multibuf xsk)
			x=$(stat_sum "$TSDP_TMP/stats-*.txt" tx_multibuf xsk)
			[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$t" = "$nb" ] && [ "$r" -gt 0 ] && [ "$x" -gt 0 ] ||
				why="equal, but not all through the XSK (rx_accel=$n rx_kernel=$m tx_kernel=$t of which next hop unresolved $nb, rx_multibuf=$r tx_multibuf=$x)"
			[ -n "$why" ] || { [ "$(kdelta "$k0" "$k1" UdpInDatagrams)" = 0 ] &&
				[ "$(kdelta "$k0" "$k1" UdpOutDatagrams)" = "$nb" ]; } ||
				why="equal, but the kernel carried datagrams (${kc[*]}: $k0 before, $k1 after; $nb sends while the next hop resolved)"
			;;
		tcpjumbo)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" conns_accel tcp)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" conns_kernel tcp)
			r=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_multibuf xsk)
			x=$(stat_sum "$TSDP_TMP/stats-*.txt" tx_multibuf xsk)
			[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$r" -gt 0 ] && [ "$x" -gt 0 ] ||
				why="equal, but not through the XSK in jumbo segments (conns_accel=$n conns_kernel=$m rx_multibuf=$r tx_multibuf=$x)"
			[ -n "$why" ] || [ "$k0" = "$k1" ] ||
				why="equal, but the kernel carried segments (${kc[*]}: $k0 before, $k1 after)"
			;;
		spilled) # through the XSK, and past the socket queue length as copies
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_spilled)
			[ "$n" -gt 0 ] || why="equal, but no datagram was queued as a copy (rx_spilled=0)"
			;;
		tcp)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" conns_accel tcp)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" conns_kernel tcp)
			r=$(stat_sum "$TSDP_TMP/stats-*.txt" rx_accel)
			[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$r" -gt 0 ] ||
				why="equal, but not through the XSK (conns_accel=$n conns_kernel=$m rx_accel=$r)"
			;;
		refused) # (a neighbour miss, which REQUIRE lets through, may count)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" sockets_kernel tickstack)
			m=$(stat_sum "$TSDP_TMP/stats-*.txt" fallback_events tickstack)
			nb=$(stat_sum "$TSDP_TMP/stats-*.txt" tx_kernel_neigh)
			[ "${#req[@]}" -gt 0 ] && [ "$n" = 0 ] && [ "$m" = "$nb" ] ||
				why="equal, but not refused under --require (sockets_kernel=$n fallback_events=$m tx_kernel_neigh=$nb, --require: ${req:-no})"
			;;
		kernel:*)
			n=$(stat_sum "$TSDP_TMP/stats-*.txt" "${path#kernel:}" -)
			[ "$n" -gt 0 ] || why="equal, but the fallback was not counted (${path#kernel:}=0)"
			;;
		esac
	fi
	if [ -n "${XFAIL[$c]:-}" ]; then
		if [ -n "$why" ]; then
			echo "conform: XFAIL $c (${XFAIL[$c]})"
			diff "$k" "$s" | sed 's/^/    /'
			xfailed=$((xfailed + 1))
		else
			echo "conform: FAIL $c: listed in tests/conform/xfail but now passes: remove it from the list" >&2
			failed=$((failed + 1))
			fails+=("$name")
		fi
	elif [ -n "$why" ]; then
		echo "conform: FAIL $name: $why" >&2
		diff "$k" "$s" | sed 's/^/    /' >&2
		failed=$((failed + 1))
		fails+=("$name")
	else
		echo "conform: PASS $name ($(grep -vc '^exit' "$k") lines)"
		passed=$((passed + 1))
	fi
done <<<"$CASES"
echo "conform: $passed passed, $xfailed known differences, $failed failed ${fails[*]:-}"
[ "$failed" = 0 ]
