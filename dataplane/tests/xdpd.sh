# shellcheck shell=bash disable=SC2154,SC2153 # here, TSDP_ID: set by harness.sh and lib.sh
# tests/xdpd.sh - sourced by harness.sh: the library in a "pod" whose XDP
# belongs to the node daemon (tickstack-xdpd, docs/dataplane.md "Privilege
# model"). The daemon runs in this (the node's) namespace and attaches the
# steering program to the pod's veth end inside the pod's namespace; the
# pod's processes run as uid 65534 with no capability at all (Pod Security
# "restricted"), RLIMIT_MEMLOCK at its 8 MiB default and
# TICKSTACK_REQUIRE=1: the daemon makes each XSK from the process's UMEM
# memfd (the default 16 MiB, twice the memlock limit, which the daemon's
# registration does not charge). xdpd_netraw runs the fallback, where the
# process makes its XSK with CAP_NET_RAW and a 2 MiB UMEM under that limit.
# Topology: NA (peer, 198.18.12.1) -- 2-queue veth -- NB (pod "pod-b",
# 198.18.12.2); NC (pod "pod-c", 198.18.13.1) -- veth -- NA (198.18.13.2).
# The peer's transmit queue follows the sending CPU (XPS: CPU 0 -> queue 0,
# CPU 1 -> queue 1), which picks the pod's receive queue on a veth.

# shellcheck disable=SC2034 # harness.sh reads it
XDPD_ALL="xdpd_pp xdpd_node xdpd_umem xdpd_umem_limit xdpd_netraw xdpd_jumbo xdpd_two xdpd_kill xdpd_foreign xdpd_tcp xdpd_fork xdpd_absent xdpd_restart xdpd_recover xdpd_gap xdpd_termpp xdpd_hwtstamp xdpd_symlink xdpd_limits xdpd_fuzz statsfile"

# a pod's process: no capability in any set
XD_CAPS=(--inh-caps=-all --ambient-caps=-all --bounding-set=-all)
# the fallback's (TICKSTACK_XDPD_MODE=netraw) and a hostile client's that
# can pass AF_XDP sockets: CAP_NET_RAW alone
# shellcheck disable=SC2054 # setpriv's capability lists are comma-separated words
XD_CAPS_RAW=(--inh-caps=-all,+net_raw --ambient-caps=-all,+net_raw --bounding-set=-all,+net_raw)
# RLIMIT_MEMLOCK at Linux's default, whatever the harness's shell has
XD_MEMLOCK="prlimit --memlock=8388608:8388608"
XD_CLIENT="$here/xdpd_client.py"
XD_FUZZ="$here/xdpd_fuzz.py"
# the black-box fuzzer's length in sessions (tests/xdpd_fuzz.py, about
# 10 s); its seed is printed, XDPD_FUZZ_SEED replays it
XDPD_FUZZ_ITER=${XDPD_FUZZ_ITER:-8000}
# Debian's python3: the test runs it as uid 65534, which may not read a
# per-user interpreter (pyenv) found first on root's PATH
XD_PY=/usr/bin/python3

# xd_pod NS POD TAG [--require]: a command prefix running a program in pod
# POD the way the webhook sets it up, without root and capabilities (with
# XD_MODE=netraw: the fallback, CAP_NET_RAW and a 2 MiB UMEM; with
# XD_SOCK=node: on the node socket, as the device plugin mounts it)
xd_pod() {
	if [ "${XD_MODE:-}" = netraw ]; then
		echo "ip netns exec $1 $XD_MEMLOCK setpriv --reuid=65534 --regid=65534 --clear-groups ${XD_CAPS_RAW[*]}" \
			"env TICKSTACK_XDPD_MODE=netraw TICKSTACK_UMEM_FRAMES=1024"
	else
		echo "ip netns exec $1 $XD_MEMLOCK setpriv --reuid=65534 --regid=65534 --clear-groups ${XD_CAPS[*]} env"
	fi
	local sock=$XD_RUN/pods/$2/xdp.sock
	[ "${XD_SOCK:-}" != node ] || sock=$XD_RUN/node/xdp.sock
	echo "TICKSTACK_XDPD_SOCKET=$sock" \
		"TICKSTACK_STATS_FILE=$XD_STATS/stats-$3-%p.txt $RUN -p latency ${4:-}"
}

# as uid 65534 in netns NS, no capabilities: the hostile client
xd_nobody() {
	local ns=$1
	shift
	ip netns exec "$ns" setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all --bounding-set=-all "$@"
}

# as uid 65534 in netns NS with CAP_NET_RAW, a pod's lot: the hostile
# client that can pass AF_XDP sockets
xd_hostile() {
	local ns=$1
	shift
	ip netns exec "$ns" setpriv --reuid=65534 --regid=65534 --clear-groups "${XD_CAPS_RAW[@]}" "$@"
}

# as uid 0 without any capability: a container running as root, which
# owns (and may write) its pod's directory unless it is mounted read-only
xd_root_pod() {
	setpriv --reuid=0 --regid=0 --clear-groups --inh-caps=-all --bounding-set=-all "$@"
}

# the number of fds the daemon holds
xd_fds() { find "/proc/$XD_DPID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
xd_fds_are() { [ "$(xd_fds)" = "$1" ]; }

xd_status() { "$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" status; }
# xd_status_is POD "CLIENTS ENTRIES": the daemon's status line of POD says so
xd_status_is() { xd_status | grep -q "^$1 [^ ]* [0-9]* $2\$"; }

# Stop the daemon: SIGTERM, a clean exit (ASan/UBSan/LeakSanitizer quiet).
# The programs it attached stay (the next daemon takes them over: xdpd_recover);
# the pods' namespaces go with the test.
xd_stop() {
	local rc=0
	if [ -n "${XD_PID:-}" ]; then
		kill -TERM "${XD_DPID:-$XD_PID}" 2>/dev/null
		if ! wait_exit "$XD_PID" 10 || [ "$WAIT_RC" != 0 ]; then
			echo "harness: $CUR: FAIL: tickstack-xdpd exit code $WAIT_RC after SIGTERM" >&2
			rc=1
		fi
		XD_PID=
		XD_DPID=
		if grep -q "Sanitizer\|runtime error" "$TSDP_TMP/xdpd.out"; then
			echo "harness: $CUR: FAIL: sanitizer report from tickstack-xdpd:" >&2
			cat "$TSDP_TMP/xdpd.out" >&2
			rc=1
		fi
	fi
	[ -z "${XD:-}" ] || rm -rf "$XD"
	XD=
	return $rc
}

# The topology above, the daemon, pod-b attached (pod-c with C=1; a
# single-queue veth with Q=1; the daemon run under the command XD_WRAP,
# which must run it as its child: XD_PID is the wrapper, XD_DPID the
# daemon; XD_BIN another daemon binary, an older build to see a test
# fail on it; XD_ARGS: one more argument of the daemon, e.g. --rx-hwtstamp).
xd_topo() {
	local ia="tsdpv${TSDP_ID}a" ib="tsdpv${TSDP_ID}b" nq=${Q:-2}
	trap 'XD_RC=$?; xd_stop || XD_RC=1; tsdp_cleanup_netns; exit $XD_RC' EXIT
	tsdp_ns NA a
	tsdp_ns NB b
	ip link add "$ia" netns "$NA" numtxqueues "$nq" numrxqueues "$nq" type veth \
		peer name "$ib" netns "$NB" numtxqueues "$nq" numrxqueues "$nq"
	ip -n "$NA" addr add 198.18.12.1/24 dev "$ia"
	ip -n "$NB" addr add 198.18.12.2/24 dev "$ib"
	ip -n "$NA" link set "$ia" up
	ip -n "$NB" link set "$ib" up
	[ "$nq" = 1 ] || ip netns exec "$NA" sh -c "echo 1 >/sys/class/net/$ia/queues/tx-0/xps_cpus &&
		echo 2 >/sys/class/net/$ia/queues/tx-1/xps_cpus" ||
		{ die "cannot set XPS on the peer"; return 1; }
	IFB=$ib
	IPB=198.18.12.2
	XD=$(mktemp -d "/tmp/tsdp${TSDP_ID}xd.XXXXXX")
	chmod 0711 "$XD" # the pod's uid reaches its socket below
	XD_RUN=$XD/run
	# the stats files: a directory only the pod's uid writes
	XD_STATS=$XD/stats
	install -d -o 65534 -g 65534 -m 0700 "$XD_STATS"
	# the daemon built with ASan and UBSan: it parses what pods send
	[ -x "$B/tickstack-xdpd-asan" ] ||
		{ die "$B/tickstack-xdpd-asan missing: make -C dataplane build/tickstack-xdpd-asan"; return 1; }
	# (LeakSanitizer cannot run under a tracer)
	ASAN_OPTIONS="detect_leaks=$([ -z "${XD_WRAP:-}" ] && echo 1 || echo 0)" \
		UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" \
		${XD_WRAP:-} "${XD_BIN:-$B/tickstack-xdpd-asan}" --run-dir "$XD_RUN" ${XD_ARGS:+"$XD_ARGS"} >"$TSDP_TMP/xdpd.out" 2>&1 &
	XD_PID=$!
	XD_DPID=$XD_PID
	wait_for 10 xd_status || { die "tickstack-xdpd did not start"; return 1; }
	if [ -n "${XD_WRAP:-}" ]; then
		XD_DPID=$(pgrep -P "$XD_PID")
		[ -n "$XD_DPID" ] || { die "no daemon under $XD_WRAP"; return 1; }
	fi
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-b "$IFB" "/run/netns/$NB" ||
		{ die "attach pod-b failed"; return 1; }
	ip -n "$NB" link show "$IFB" | grep -q "prog/xdp" || { die "no XDP program on $IFB after attach"; return 1; }
	if [ "${C:-0}" = 1 ]; then
		tsdp_ns NC c
		tsdp_pair "$NC" "$NA" 198.18.13 "v${TSDP_ID}c" "v${TSDP_ID}d"
		"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-c "tsdpv${TSDP_ID}c" "/run/netns/$NC" ||
			{ die "attach pod-c failed"; return 1; }
	fi
}

# xd_server TAG PORT [--require]: sockperf server in pod-b (XS_ENV: one more
# VAR=value for it)
xd_server() {
	local tag=$1 port=$2 req=${3:-}
	$(xd_pod "$NB" pod-b "$tag" "$req") env TICKSTACK_SPIN_USEC=0 ${XS_ENV:+"$XS_ENV"} \
		sockperf sr -i "$IPB" -p "$port" >"$TSDP_TMP/server-$tag.out" 2>&1 &
	XS=$!
	TSDP_PIDS+=("$XS")
	wait_for 10 udp_listening "$NB" "$port" || { die "$tag did not listen on $port"; return 1; }
}

# xd_pp CPU PORT OUT: a kernel sockperf client in the peer, pinned to CPU
xd_pp() {
	ip netns exec "$NA" taskset -c "$1" timeout 30 sockperf pp -i "$IPB" -p "$2" -t 2 -m 64 \
		>"$TSDP_TMP/$3" 2>&1
}

# xd_stop_server PID TAG: SIGINT, clean exit, stats copied for check_accel
xd_stop_server() {
	kill -INT "$1"
	wait_exit "$1" 10 && [ "$WAIT_RC" = 0 ] || { die "$2 exit code $WAIT_RC after SIGINT"; return 1; }
	wait_for 5 ls "$XD_STATS"/stats-"$2"-*.txt || { die "$2: no stats dump"; return 1; }
	cp "$XD_STATS"/stats-"$2"-*.txt "$TSDP_TMP/"
}

# xd_served TAG PORT: a sockperf server of pod-b, alone in it, accelerated
# through the daemon for a ping-pong from the peer
xd_served() {
	xd_server "$1" "$2" --require || return 1
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	xd_pp 0 "$2" client.out || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	xd_stop_server "$XS" "$1" || return 1
	check_accel "$1"
}

# xd_caps PID: the process runs as uid 65534 with every capability set
# empty and RLIMIT_MEMLOCK at 8 MiB
xd_caps() {
	local s
	for s in CapInh CapPrm CapEff CapBnd CapAmb; do
		grep -q "^$s:[[:space:]]*0000000000000000$" "/proc/$1/status" || return 1
	done
	grep -q "^Uid:[[:space:]]*65534" "/proc/$1/status" &&
		grep -q "^Max locked memory *8388608 *8388608 " "/proc/$1/limits"
}

# xd_still_served PORT: after hostile requests, pod-b's one entry is
# untouched and its server srv on PORT still accelerated
xd_still_served() {
	xd_status_is pod-b "1 1" || { die "pod-b's entry changed: $(xd_status)"; return 1; }
	xd_pp 0 "$1" client.out || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	xd_stop_server "$XS" srv || return 1
	check_accel srv
}

# ---------------------------------------------------------------- tests

t_xdpd_pp() { # accelerated ping-pong in a pod without any capability
	local prog udp0
	xd_topo || return 1
	prog=$(ip -n "$NB" link show "$IFB" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	udp0=$(kstat "$NB" UdpInDatagrams)
	xd_server srv 11201 --require || return 1
	xd_caps "$(pgrep -P "$XS" -x sockperf || echo "$XS")" ||
		{ die "the server is not uid 65534 without capabilities, memlock 8 MiB: $(grep -E '^(Uid|Cap)' "/proc/$XS/status")"; return 1; }
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	xd_pp 0 11201 client.out || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	xd_stop_server "$XS" srv || return 1
	check_accel srv || return 1
	# the pod's kernel saw (almost) none of the ping-pong's datagrams
	[ $(($(kstat "$NB" UdpInDatagrams) - ${udp0:-0})) -le 20 ] ||
		{ die "the pod's kernel received $(($(kstat "$NB" UdpInDatagrams) - ${udp0:-0})) datagrams"; return 1; }
	# every queue, native XDP, copy mode (veth has no zero-copy)
	grep -q "queue=0 queues=2 mode=native bind=copy" "$TSDP_TMP"/stats-srv-*.txt ||
		{ die "not on queues 0-1 natively in copy mode: $(grep ^xsk "$TSDP_TMP"/stats-srv-*.txt)"; return 1; }
	# the library attached nothing: the daemon's program is still there
	[ "$(ip -n "$NB" link show "$IFB" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')" = "$prog" ] ||
		{ die "the XDP program on $IFB changed"; return 1; }
	wait_for 1 xd_status_is pod-b "0 0" || { die "entries left after exit: $(xd_status)"; return 1; }
}

# The node socket (DIR/node/xdp.sock, what the device plugin mounts into
# every bypass container): one socket for every pod, each caller served as
# the pod attached in its network namespace, a caller in any other
# namespace refused.
t_xdpd_node() {
	local r sock
	C=1 xd_topo || return 1
	sock=$XD_RUN/node/xdp.sock
	[ "$(stat -c '%a %u %F' "$XD_RUN/node")" = "755 0 directory" ] &&
		[ "$(stat -c '%a %u %F' "$sock")" = "666 0 socket" ] &&
		[ "$(ls -A "$XD_RUN/node")" = xdp.sock ] ||
		{ die "node socket: $(stat -c '%n %a %u %F' "$XD_RUN/node" "$sock") $(ls -A "$XD_RUN/node")"; return 1; }
	# each pod's process sees its own pod: its interfaces, and no other's
	r=$(xd_nobody "$NC" $XD_PY "$XD_CLIENT" "$sock" hello 2>&1)
	[ "$r" = "ok tsdpv${TSDP_ID}c" ] || { die "pod-c's hello on the node socket: '$r'"; return 1; }
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" hello 2>&1)
	[ "$r" = "ok $IFB" ] || { die "pod-b's hello on the node socket: '$r'"; return 1; }
	r=$(xd_nobody "$NC" $XD_PY "$XD_CLIENT" "$sock" "add $IFB udp $IPB 11241" --udp "198.18.13.1:11241" 2>&1)
	case "$r" in "error 19 "*) ;; *) die "pod-c asking for pod-b's interface on the node socket: '$r'"; return 1 ;; esac
	# a namespace no pod is attached in (the peer's, the node's): refused, logged
	for ns in "$NA" ""; do
		if [ -n "$ns" ]; then
			r=$(xd_nobody "$ns" $XD_PY "$XD_CLIENT" "$sock" hello 2>&1)
		else
			r=$(setpriv --reuid=65534 --regid=65534 --clear-groups $XD_PY "$XD_CLIENT" "$sock" hello 2>&1)
		fi
		case "$r" in "error 13 refused: the caller's network namespace is no pod's"*) ;;
		*) die "unattached netns ${ns:-node} on the node socket: '$r'"; return 1 ;; esac
	done
	grep -q "node socket: refused pid .* no attached pod's" "$TSDP_TMP/xdpd.out" ||
		{ die "the daemon did not log the refusal"; return 1; }
	# a two-pod namespace would make the node socket ambiguous: refused
	r=$("$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-x lo "/run/netns/$NB" 2>&1) &&
		{ die "a second pod attached in pod-b's namespace: '$r'"; return 1; }
	case "$r" in *"pod pod-b is attached in that network namespace"*) ;; *) die "second pod in a netns: '$r'"; return 1 ;; esac
	# the library through the node socket: accelerated, no capability
	XD_SOCK=node xd_server srv 11241 --require || return 1
	xd_caps "$(pgrep -P "$XS" -x sockperf || echo "$XS")" ||
		{ die "the server is not uid 65534 without capabilities"; return 1; }
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	xd_pp 0 11241 client.out || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	xd_stop_server "$XS" srv || return 1
	check_accel srv || return 1
	wait_for 1 xd_status_is pod-b "0 0" || { die "entries left after exit: $(xd_status)"; return 1; }
}

# The daemon makes an XSK from a pod process's memfd ("umem") only in that
# pod's namespace, on that pod's interface, on a queue no other process of
# the pod holds; it keeps no copy of what it passes back.
t_xdpd_umem() {
	local r sock before
	C=1 xd_topo || return 1
	sock=$XD_RUN/pods/pod-b/xdp.sock
	# (on queue 0 alone: queue 1 is the test client's)
	XS_ENV=TICKSTACK_QUEUE=0 xd_server srv 11202 --require || return 1
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	before=$(xd_fds)
	# without any capability: an AF_XDP socket back, its rings mapped
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 1 2048 64" --memfd 1048576 2>&1)
	case "$r" in "ok native "[02]*" fd=AF_XDP rings=mapped") ;; *) die "umem: '$r'"; return 1 ;; esac
	# a queue another process of the pod holds
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 0 2048 64" --memfd 1048576 2>&1)
	case "$r" in "error 16 queue 0 of $IFB is used by another process of the pod"*) ;; *) die "a held queue: '$r'"; return 1 ;; esac
	# a process of pod-c: on pod-b's socket refused, on its own socket
	# pod-b's interface is not there, nor is an interface of the node
	r=$(xd_nobody "$NC" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 1 2048 64" --memfd 1048576 2>&1)
	case "$r" in "error 13 refused"*) ;; *) die "pod-c on pod-b's socket: '$r'"; return 1 ;; esac
	r=$(xd_nobody "$NC" $XD_PY "$XD_CLIENT" "$XD_RUN/pods/pod-c/xdp.sock" "umem $IFB 1 2048 64" --memfd 1048576 2>&1)
	case "$r" in "error 19 interface '$IFB' is not attached for this pod") ;; *) die "pod-c asking for pod-b's interface: '$r'"; return 1 ;; esac
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem lo 1 2048 64" --memfd 1048576 2>&1)
	case "$r" in "error 19 interface 'lo' is not attached for this pod") ;; *) die "another interface: '$r'"; return 1 ;; esac
	# what the memfd and the request must be
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 64 2048 64" --memfd 1048576 2>&1)
	case "$r" in "error 22 queue '64' out of range [0, 64)") ;; *) die "queue 64: '$r'"; return 1 ;; esac
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 1 1000 64" --memfd 1048576 2>&1)
	case "$r" in "error 22 frame size '1000' must be 2048 or 4096"*) ;; *) die "frame 1000: '$r'"; return 1 ;; esac
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 1 2048 64" --udp "$IPB:11203" 2>&1)
	case "$r" in "error 22 the request must carry the UMEM as a memfd"*) ;; *) die "a UDP socket as UMEM: '$r'"; return 1 ;; esac
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 1 2048 64" --memfd-cold 1048576 2>&1)
	case "$r" in "error 14 the UMEM memfd has pages not written yet"*) ;; *) die "unwritten UMEM: '$r'"; return 1 ;; esac
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$sock" "umem $IFB 1 2048 64" --memfd-cold 1073741824 2>&1)
	case "$r" in "error 22 the UMEM memfd holds 1073741824 bytes"*"at most 536870912") ;; *) die "1 GiB UMEM: '$r'"; return 1 ;; esac
	# every fd passed either way is closed, no XSK is left in the daemon
	wait_for 5 xd_fds_are "$before" || { die "the daemon holds $(xd_fds) fds, $before before"; return 1; }
	xd_still_served 11202
}

# The UMEM a pod's XSKs may pin through the daemon: 1 GiB. A process
# without any capability holds two 512 MiB XSKs on a 4-queue interface; a
# third is refused with the limit, and all goes when it exits.
t_xdpd_umem_limit() {
	local r before
	Q=4 xd_topo || return 1
	before=$(xd_fds)
	r=$(xd_nobody "$NB" $XD_PY "$XD_FUZZ" umems "$XD_RUN/pods/pod-b/xdp.sock" "$IFB" 3 536870912 2>&1) ||
		{ die "umems: $r"; return 1; }
	echo "$r" | grep -q "^conn 0 ok native " && echo "$r" | grep -q "^conn 1 ok native " &&
		echo "$r" | grep -q "^conn 2 error 28 pod pod-b's XSKs hold 1073741824 bytes of UMEM, the daemon registers at most 1073741824 per pod$" ||
		{ die "three 512 MiB UMEMs: $r"; return 1; }
	wait_for 5 xd_status_is pod-b "0 0" || { die "connections left: $(xd_status)"; return 1; }
	wait_for 5 xd_fds_are "$before" || { die "the daemon holds $(xd_fds) fds, $before before"; return 1; }
}

# The fallback (TICKSTACK_XDPD_MODE=netraw): the process makes its XSK with
# CAP_NET_RAW and hands it over; without it, it says so.
t_xdpd_netraw() {
	local out
	xd_topo || return 1
	XD_MODE=netraw xd_served raw 11206 || return 1
	out=$(ip netns exec "$NB" setpriv --reuid=65534 --regid=65534 --clear-groups "${XD_CAPS[@]}" \
		env TICKSTACK_XDPD_MODE=netraw TICKSTACK_UMEM_FRAMES=1024 \
		TICKSTACK_XDPD_SOCKET="$XD_RUN"/pods/pod-b/xdp.sock "$RUN" --require "$B"/udpcheck echo "$IPB" 11207 1 2>&1) &&
		{ die "bind succeeded under TICKSTACK_REQUIRE=1 without CAP_NET_RAW in netraw mode"; return 1; }
	case "$out" in *"TICKSTACK_XDPD_MODE=netraw: an XSK needs CAP_NET_RAW"*) ;;
	*) die "netraw without CAP_NET_RAW: '$out'"; return 1 ;; esac
	out=$(env TICKSTACK_XDPD_MODE=bogus "$RUN" /bin/true 2>&1)
	case "$out" in *"invalid TICKSTACK_XDPD_MODE=bogus: memfd"*) ;; *) die "a bad mode: '$out'"; return 1 ;; esac
}

# MTU 3500 on the pod's link: datagrams longer than one UMEM frame go both
# ways through the XSK as chains of frames (XDP_USE_SG), byte-exact, with
# the XSK made by the daemon (its reply says "sg", its steering entries let
# jumbo frames through) and with the fallback's (the process says "sg").
t_xdpd_jumbo() {
	local mode e port=11230 n
	Q=1 xd_topo || return 1
	ip -n "$NA" link set "tsdpv${TSDP_ID}a" mtu 3500
	ip -n "$NB" link set "$IFB" mtu 3500
	for mode in memfd netraw; do
		port=$((port + 1))
		XD_MODE=$mode
		$(xd_pod "$NB" pod-b "jumbo-$mode" --require) env UDPCHECK_BIG=1 \
			"$B"/udpcheck echo "$IPB" $port 90 >"$TSDP_TMP/server-$mode.out" 2>&1 &
		e=$!
		TSDP_PIDS+=("$e")
		XD_MODE=
		wait_for 10 udp_listening "$NB" $port || { die "$mode: echo did not listen"; return 1; }
		# its steering entry is in (the kernel's bind is seen first)
		wait_for 5 xd_status_is pod-b "1 1" || { die "$mode: status: $(xd_status)"; return 1; }
		ip netns exec "$NA" env UDPCHECK_BIG=1 timeout 30 "$B"/udpcheck send "$IPB" $port 90 \
			>"$TSDP_TMP/client-$mode.out" 2>&1 || { die "$mode: large datagrams failed"; return 1; }
		wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] ||
			{ die "$mode: echo failed ($WAIT_RC): $(cat "$TSDP_TMP/server-$mode.out")"; return 1; }
		wait_for 5 ls "$XD_STATS"/stats-jumbo-$mode-*.txt || { die "$mode: no stats dump"; return 1; }
		cp "$XD_STATS"/stats-jumbo-$mode-*.txt "$TSDP_TMP/"
		n="$TSDP_TMP/stats-jumbo-$mode-*.txt" # a glob for stat_sum
		# (as bigmtu: 40 of the 90 came in as chains, and chains went out)
		[ "$(stat_sum "$n" rx_multibuf xsk)" = 40 ] && [ "$(stat_sum "$n" tx_multibuf xsk)" -gt 0 ] ||
			{ die "$mode: not every datagram larger than a frame went through the XSK as a chain: $(grep ^xsk "$TSDP_TMP"/stats-jumbo-"$mode"-*.txt)"; return 1; }
		# every one received through the XSK; sent too, but for the first
		# replies, which may wait for ARP on the kernel (tx_kernel_neigh)
		[ "$(stat_sum "$n" rx_accel)" = 90 ] && [ "$(stat_sum "$n" rx_kernel)" = 0 ] &&
			[ "$(stat_sum "$n" tx_kernel_oversize)" = 0 ] ||
			{ die "$mode: datagrams within the MTU went through the kernel: $(grep ^sock "$TSDP_TMP"/stats-jumbo-"$mode"-*.txt)"; return 1; }
	done
}

t_xdpd_two() { # two processes share the pod's interface, one queue each (TICKSTACK_QUEUE=any)
	local s1 s2 s3 XS_ENV=TICKSTACK_QUEUE=any
	xd_topo || return 1
	xd_server one 11211 --require || return 1
	s1=$XS
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	xd_server two 11212 --require || return 1
	s2=$XS
	wait_for 5 xd_status_is pod-b "2 2" || { die "status: $(xd_status)"; return 1; }
	# both queues taken: a third process stays on the kernel, counted
	xd_server three 11213 || return 1
	s3=$XS
	# (said once the daemon refused the queue, which may come after the
	# kernel socket is bound and listed)
	wait_for 5 grep -q "not accelerated: Device or resource busy" "$TSDP_TMP/server-three.out" ||
		{ die "the third process did not report the busy queues"; return 1; }
	xd_pp 0 11211 client-one.out &
	local c1=$!
	xd_pp 1 11212 client-two.out || { die "client two exit code $?"; return 1; }
	wait "$c1" || { die "client one exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-one.out" 50 && check_pp_output "$TSDP_TMP/client-two.out" 50 || return 1
	xd_pp 0 11213 client-three.out || { die "client three exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-three.out" 50 || return 1
	xd_stop_server "$s1" one && xd_stop_server "$s2" two && xd_stop_server "$s3" three || return 1
	check_accel one && check_accel two || return 1
	grep -q "^xsk .* queue=0 " "$TSDP_TMP"/stats-one-*.txt && grep -q "^xsk .* queue=1 " "$TSDP_TMP"/stats-two-*.txt ||
		{ die "the two processes did not get a queue each"; return 1; }
	grep -q "sockets_accelerated=0 sockets_kernel=1" "$TSDP_TMP"/stats-three-*.txt ||
		{ die "the third process's socket was not counted on the kernel"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-three-*.txt" rx_kernel)" -gt 0 ] || { die "three received nothing"; return 1; }
}

t_xdpd_kill() { # SIGKILL: the entries go at once, a replacement is accelerated
	xd_topo || return 1
	xd_server old 11221 --require || return 1
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	kill -KILL "$XS"
	wait "$XS" 2>/dev/null
	# the connection closed with the process: within a second, no entry
	wait_for 1 xd_status_is pod-b "0 0" || { die "entries left 1 s after SIGKILL: $(xd_status)"; return 1; }
	xd_served new 11221
}

# xd_refused WRAP: a sockperf server of pod-c (under WRAP) on pod-b's socket
# is refused, says why, and fails its bind (TICKSTACK_REQUIRE=1)
xd_refused() {
	local out="$TSDP_TMP/refused.out"
	# shellcheck disable=SC2046 # $1 and xd_pod print command prefixes, split into words on purpose
	$1 $(xd_pod "$NC" pod-b refused --require) timeout 20 sockperf sr -i 198.18.13.1 -p 11236 \
		>"$out" 2>&1
	[ $? != 124 ] || { die "a server on another pod's socket ran (${1:-no wrapper})"; return 1; }
	grep -q "tickstack-xdpd refused '[^']*': 13 refused: the caller is not in pod pod-b's network namespace" "$out" &&
		grep -q "TICKSTACK_REQUIRE=1: socket fd [0-9]* (198.18.13.1:11236) cannot be accelerated" "$out" ||
		{ die "refused library (${1:-no wrapper}) did not say so:"; cat "$out" >&2; return 1; }
}

t_xdpd_foreign() { # nothing reaches another pod's interface or entries
	local r
	C=1 xd_topo || return 1
	# (on queue 0 alone: queue 1 is the hostile client's)
	XS_ENV=TICKSTACK_QUEUE=0 xd_server srv 11231 --require || return 1
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	# a process of pod-c (another netns) on pod-b's socket: refused
	r=$(xd_nobody "$NC" $XD_PY "$XD_CLIENT" "$XD_RUN/pods/pod-b/xdp.sock" hello 2>&1)
	case "$r" in "error 13 refused"*) ;; *) die "foreign netns on pod-b's socket: '$r'"; return 1 ;; esac
	grep -q "refused pid .* not in the pod's network namespace" "$TSDP_TMP/xdpd.out" ||
		{ die "the daemon did not log the refusal"; return 1; }
	# the library there, refused: it says so and stays on the kernel, whether
	# its request went out before the daemon closed the connection or after
	# (strace holds the request back 300 ms, past the close)
	xd_refused "" || return 1
	xd_refused "strace -f -o /dev/null -e trace=sendmsg -e inject=sendmsg:delay_enter=300000" || return 1
	# pod-c's own socket, asking for pod-b's interface: refused
	r=$(xd_nobody "$NC" $XD_PY "$XD_CLIENT" "$XD_RUN/pods/pod-c/xdp.sock" "add $IFB udp $IPB 11231" 2>&1)
	case "$r" in "error 19 "*) ;; *) die "pod-c asking for pod-b's interface: '$r'"; return 1 ;; esac
	# in pod-b, a port the caller did not bind: refused
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$XD_RUN/pods/pod-b/xdp.sock" \
		"add $IFB udp $IPB 11239" --udp "$IPB:11238" 2>&1)
	case "$r" in "error 13 the socket is not bound"*) ;; *) die "unbound port: '$r'"; return 1 ;; esac
	# in pod-b, another process's entry: neither removed nor taken
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$XD_RUN/pods/pod-b/xdp.sock" "del $IFB udp $IPB 11231" 2>&1)
	case "$r" in "error 1 "*) ;; *) die "deleting another process's entry: '$r'"; return 1 ;; esac
	# an XSK slot with something that is not an XSK: refused
	r=$(xd_nobody "$NB" $XD_PY "$XD_CLIENT" "$XD_RUN/pods/pod-b/xdp.sock" "xsk $IFB 1" --udp "$IPB:11237" 2>&1)
	case "$r" in "error 22 "*) ;; *) die "a UDP socket as XSK: '$r'"; return 1 ;; esac
	# the node's own namespace is never a pod's
	r=$("$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-x lo /proc/self/ns/net 2>&1) &&
		{ die "attached in the node's namespace: '$r'"; return 1; }
	case "$r" in *"the namespace passed is the node's own"*) ;; *) die "node netns: '$r'"; return 1 ;; esac
	# the control socket is root's
	r=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" status 2>&1) &&
		{ die "uid 65534 read the status: '$r'"; return 1; }
	xd_still_served 11231
}

# TCP through the daemon: a listener in the pod, then a connection out of
# it. A single queue: the peer's kernel answers a connection from the CPU
# that took its segment, so on two queues its segments would reach the
# pod on either, and one on the queue without the XSK goes to the pod's
# kernel, which knows no such connection and resets it (docs/dataplane.md,
# "Known limits": a NIC steers a process's flows to its queue).
t_xdpd_tcp() {
	local srv
	Q=1 xd_topo || return 1
	$(xd_pod "$NB" pod-b tsrv --require) env TICKSTACK_TCP=1 TICKSTACK_SPIN_USEC=0 \
		sockperf sr --tcp -i "$IPB" -p 11241 >"$TSDP_TMP/server-tsrv.out" 2>&1 &
	srv=$!
	TSDP_PIDS+=("$srv")
	wait_for 10 tcp_listening "$NB" 11241 || { die "the pod's TCP server did not listen"; return 1; }
	xd_caps "$srv" || { die "the TCP server is not uid 65534 without capabilities, memlock 8 MiB"; return 1; }
	# the listener's steering entry may reach the daemon's status a moment after listen()
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	ip netns exec "$NA" taskset -c 0 timeout 30 sockperf pp --tcp -i "$IPB" -p 11241 -t 2 -m 64 \
		>"$TSDP_TMP/client.out" 2>&1 || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	xd_stop_server "$srv" tsrv || return 1
	# then out of the pod: a connecting socket's ephemeral port, steered
	ip netns exec "$NA" taskset -c 1 sockperf sr --tcp -i 198.18.12.1 -p 11242 >"$TSDP_TMP/server.out" 2>&1 &
	TSDP_PIDS+=("$!")
	wait_for 10 tcp_listening "$NA" 11242 || { die "the peer's TCP server did not listen"; return 1; }
	$(xd_pod "$NB" pod-b tcli --require) env TICKSTACK_TCP=1 taskset -c 0 timeout 30 \
		sockperf pp --tcp -i 198.18.12.1 -p 11242 -t 2 -m 64 >"$TSDP_TMP/client-out.out" 2>&1 ||
		{ die "the pod's client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-out.out" || return 1
	wait_for 5 ls "$XD_STATS"/stats-tcli-*.txt || { die "tcli: no stats dump"; return 1; }
	cp "$XD_STATS"/stats-tcli-*.txt "$TSDP_TMP/"
	tcp_accel tsrv 1 && tcp_accel tcli 1 || return 1
	kernel_silent "$NB" || return 1
	wait_for 5 xd_status_is pod-b "0 0" || { die "entries left: $(xd_status)"; return 1; }
}

t_statsfile() { # the library's files: nothing followed, nothing truncated
	local d=$TSDP_TMP/sf out
	mkdir -p "$d"
	echo keep >"$d/target"
	ln -s "$d/target" "$d/link.txt"
	ln "$d/target" "$d/hard.txt"
	out=$(TICKSTACK_STATS_FILE=$d/link.txt $RUN /bin/true 2>&1)
	case "$out" in *"TICKSTACK_STATS_FILE=$d/link.txt"*symlink*) ;; *) die "symlink: '$out'"; return 1 ;; esac
	out=$(TICKSTACK_STATS_FILE=$d/hard.txt $RUN /bin/true 2>&1)
	case "$out" in *"TICKSTACK_STATS_FILE=$d/hard.txt exists and is not"*) ;; *) die "hard link: '$out'"; return 1 ;; esac
	# the statistics region's name, planted as a symlink before the
	# process (same pid: sh execs it) creates it
	sh -c 'ln -s "$1" /dev/shm/tickstack-$$ && exec env LD_PRELOAD="$2" TICKSTACK_STATS_FILE="$3" /bin/true' \
		sh "$d/target" "$B/libtickstack.so" "$d/plain.txt" || { die "the planted region's process failed"; return 1; }
	[ "$(cat "$d/target")" = keep ] || { die "the target was written: $(cat "$d/target")"; return 1; }
	TICKSTACK_STATS_FILE=$d/plain.txt $RUN /bin/true
	[ "$(grep -c '^tickstack stats' "$d/plain.txt")" = 2 ] || { die "the plain file was not appended to"; return 1; }
}

t_xdpd_fork() { # a forked child takes its parent's socket over, on its own queue
	local e ia="tsdpv${TSDP_ID}a"
	xd_topo || return 1
	# static neighbours both ways: the child's first echo does not wait for
	# ARP (on a loaded machine that wait can time out and the echo go
	# through the kernel, tx_kernel_neigh; harness tp_check covers it)
	ip -n "$NA" neigh replace "$IPB" lladdr "$(ip -n "$NB" -br link show "$IFB" | awk '{print $3}')" dev "$ia" nud permanent &&
		ip -n "$NB" neigh replace 198.18.12.1 lladdr "$(ip -n "$NA" -br link show "$ia" | awk '{print $3}')" dev "$IFB" nud permanent ||
		{ die "cannot set static neighbours"; return 1; }
	# one queue each (TICKSTACK_QUEUE=any): the parent's, then the child's
	$(xd_pod "$NB" pod-b srv --require) env TICKSTACK_QUEUE=any "$B"/udpcheck fork-echo "$IPB" 11261 100 \
		>"$TSDP_TMP/server.out" 2>&1 &
	e=$!
	TSDP_PIDS+=("$e")
	wait_for 10 udp_listening "$NB" 11261 || { die "fork-echo did not listen"; return 1; }
	# the child has made its first call on the socket, and so taken its
	# queue and the socket's steering (a datagram sent before that reads
	# through the kernel socket both hold: udpcheck's fork-echo)
	wait_for 10 grep -q ready "$TSDP_TMP/server.out" || { die "fork-echo's child not ready"; return 1; }
	# the child holds queue 1: the peer sends from CPU 1 (XPS)
	ip netns exec "$NA" taskset -c 1 timeout 30 "$B"/udpcheck send "$IPB" 11261 100 \
		>"$TSDP_TMP/client.out" 2>&1 || { die "echo through the forked child failed"; return 1; }
	wait_exit "$e" 10 && [ "$WAIT_RC" = 0 ] || { die "fork-echo failed ($WAIT_RC)"; return 1; }
	cp "$XD_STATS"/stats-srv-*.txt "$TSDP_TMP/"
	grep -l "^xsk .* queue=1 " "$TSDP_TMP"/stats-srv-*.txt >/dev/null ||
		{ die "the child did not get queue 1"; return 1; }
	[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" tx_accel)" -ge 100 ] &&
		[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)" -ge 100 ] ||
		{ die "the child did not echo through its XSK"; return 1; }
	wait_for 1 xd_status_is pod-b "0 0" || { die "entries left: $(xd_status)"; return 1; }
}

t_xdpd_absent() { # no daemon: the library attaches nothing itself
	local out
	new_pair
	out=$(ip netns exec "$NB" setpriv --reuid=65534 --regid=65534 --clear-groups "${XD_CAPS[@]}" \
		env TICKSTACK_XDPD_SOCKET=/nonexistent/xdp.sock "$RUN" --require "$B"/udpcheck echo "$IPB" 11271 1 2>&1) &&
		{ die "bind succeeded under TICKSTACK_REQUIRE=1 without a daemon"; return 1; }
	case "$out" in *"TICKSTACK_XDPD_SOCKET=/nonexistent/xdp.sock: cannot connect"*"fail (TICKSTACK_REQUIRE=1)"*) ;;
	*) die "no message naming the daemon: '$out'"; return 1 ;; esac
	# as root too: with the variable set, never the standalone attach
	ip netns exec "$NB" env TICKSTACK_XDPD_SOCKET=/nonexistent/xdp.sock TICKSTACK_STATS=1 \
		"$RUN" "$B"/udpcheck echo "$IPB" 11272 0 >"$TSDP_TMP/server.out" 2>&1 ||
		{ die "the kernel fallback failed"; return 1; }
	grep -q "sockets_accelerated=0 sockets_kernel=1" "$TSDP_TMP/server.out" ||
		{ die "the socket was not counted on the kernel"; return 1; }
	! ip -n "$NB" link show | grep -q "prog/xdp" || { die "the library attached XDP"; return 1; }
}

# xd_restart [ARG...]: the daemon (its ASan build) started again on the
# same run directory, its output added to xdpd.out; xd_restart_ready also
# waits until it answers
xd_restart() {
	ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" \
		"$B/tickstack-xdpd-asan" --run-dir "$XD_RUN" "$@" >>"$TSDP_TMP/xdpd.out" 2>&1 &
	XD_PID=$!
	XD_DPID=$XD_PID
}
xd_restart_ready() {
	xd_restart "$@"
	wait_for 10 xd_status || { die "the daemon did not start again"; return 1; }
}

# xd_again: the daemon killed outright (SIGKILL) and started again on the
# same run directory
xd_again() {
	kill -KILL "$XD_PID"
	wait "$XD_PID" 2>/dev/null
	xd_restart_ready || return 1
}

# xd_hw_case TAG: conformance case hwtstampxdp in pod-b (uid 65534, no
# capability, TICKSTACK_RX_HWTSTAMP=1) against the peer's conform on
# 11301: its transcript is the kernel's ($TSDP_TMP/hw.kernel), every
# datagram came through the XSK with the device-bound program's metadata
# and, on veth, no hardware time (conform.sh's path check hwmeta)
xd_hw_case() {
	local s=$TSDP_TMP/$1.stack n m md hw ub
	$(xd_pod "$NB" pod-b "$1" --require) env TICKSTACK_RX_HWTSTAMP=1 timeout 60 "$B/conform" hwtstampxdp 198.18.12.1 11301 \
		>"$s" 2>&1
	echo "exit $?" >>"$s"
	cmp -s "$TSDP_TMP/hw.kernel" "$s" ||
		{ die "$1: differs from the kernel: $(diff "$TSDP_TMP/hw.kernel" "$s" | head -20)"; return 1; }
	wait_for 5 ls "$XD_STATS"/stats-"$1"-*.txt || { die "$1: no stats dump"; return 1; }
	cp "$XD_STATS"/stats-"$1"-*.txt "$TSDP_TMP/"
	n=$(stat_sum "$TSDP_TMP/stats-$1-*.txt" rx_accel)
	m=$(stat_sum "$TSDP_TMP/stats-$1-*.txt" rx_kernel)
	md=$(stat_sum "$TSDP_TMP/stats-$1-*.txt" rx_hw_meta xsk)
	hw=$(stat_sum "$TSDP_TMP/stats-$1-*.txt" rx_hw_tstamps xsk)
	ub=$(stat_sum "$TSDP_TMP/stats-$1-*.txt" hw_unbound xsk)
	[ "$n" -gt 0 ] && [ "$m" = 0 ] && [ "$md" -ge "$n" ] && [ "$hw" = 0 ] && [ "$ub" = 0 ] ||
		{ die "$1: not through the device-bound program (rx_accel=$n rx_kernel=$m rx_hw_meta=$md rx_hw_tstamps=$hw hw_unbound=$ub)"; return 1; }
}

# xd_prog_name: the name of the program on pod-b's interface
xd_prog_name() {
	local id
	id=$(ip -n "$NB" link show "$IFB" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	[ -n "$id" ] && bpftool prog show id "$id" | sed -n 's/^[0-9]*: xdp *name \([^ ]*\) .*/\1/p'
}

# --rx-hwtstamp: the daemon attaches the device-bound ts_steer_hw in native
# mode, and a pod's process asking for hardware receive stamps gets the
# program's metadata on every datagram and observes what the kernel does
# (conformance hwtstampxdp, here through the daemon; its XSK made by the
# daemon, and by the process in the netraw fallback); a daemon restarted
# (SIGKILL, its state file kept) takes the device-bound program over and
# keeps it bound, and one that lost its state replaces it at the next
# attach (its leftover check knows the name).
t_xdpd_hwtstamp() {
	local ia="tsdpv${TSDP_ID}a" prog
	XD_ARGS=--rx-hwtstamp xd_topo || return 1
	grep -q "pod pod-b: $IFB attached (native, device-bound: hardware receive stamps)" "$TSDP_TMP/xdpd.out" ||
		{ die "not attached device-bound: $(tail -3 "$TSDP_TMP/xdpd.out")"; return 1; }
	[ "$(xd_prog_name)" = ts_steer_hw ] || { die "the program on $IFB is '$(xd_prog_name)'"; return 1; }
	# static neighbours: the first datagram never waits for ARP
	ip -n "$NA" neigh replace "$IPB" lladdr "$(ip -n "$NB" -br link show "$IFB" | awk '{print $3}')" dev "$ia" nud permanent
	ip -n "$NB" neigh replace 198.18.12.1 lladdr "$(ip -n "$NA" -br link show "$ia" | awk '{print $3}')" dev "$IFB" nud permanent
	ip netns exec "$NA" "$B/conform" peer 11301 >"$TSDP_TMP/peer.out" 2>&1 &
	TSDP_PIDS+=("$!")
	wait_for 10 udp_listening "$NA" 11301 || { die "the conform peer did not start"; return 1; }
	# the kernel's transcript: the same case in the pod's namespace, no library
	ip netns exec "$NB" timeout 60 "$B/conform" hwtstampxdp 198.18.12.1 11301 >"$TSDP_TMP/hw.kernel" 2>&1
	echo "exit $?" >>"$TSDP_TMP/hw.kernel"
	xd_hw_case hw1 || return 1
	# the fallback (the process makes its XSK, CAP_NET_RAW): "xsk" says so too
	XD_MODE=netraw xd_hw_case hw1n || return 1
	# a daemon killed and started again (without the flag: it takes over
	# what is attached, as it is)
	prog=$(ip -n "$NB" link show "$IFB" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	xd_again || return 1
	grep -q "pod pod-b: $IFB taken over from the previous daemon (program $prog, now [0-9]*;" "$TSDP_TMP/xdpd.out" ||
		{ die "the device-bound program was not taken over: $(tail -3 "$TSDP_TMP/xdpd.out")"; return 1; }
	[ "$(xd_prog_name)" = ts_steer_hw ] || { die "after the takeover the program is '$(xd_prog_name)'"; return 1; }
	xd_hw_case hw2 || return 1
	# a daemon that lost its state: the attach replaces the program left
	# (the device-bound one, recognised by its name) rather than refusing
	: >"$XD_RUN/state"
	kill -KILL "$XD_PID"
	wait "$XD_PID" 2>/dev/null
	xd_restart_ready --rx-hwtstamp || return 1
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-b "$IFB" "/run/netns/$NB" ||
		{ die "attach over the device-bound program left attached failed"; return 1; }
	grep -q "replaced a steering program an earlier tickstack-xdpd left attached" "$TSDP_TMP/xdpd.out" ||
		{ die "the left device-bound program was not replaced"; return 1; }
	[ "$(xd_prog_name)" = ts_steer_hw ] || { die "after the replace the program is '$(xd_prog_name)'"; return 1; }
	xd_hw_case hw3 || return 1
	# without the flag a pod asking for stamps gets none, counted
	# (hw_unbound): the daemon attaches the plain program over the left one
	: >"$XD_RUN/state"
	xd_again || return 1
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-b "$IFB" "/run/netns/$NB" ||
		{ die "attach without --rx-hwtstamp failed"; return 1; }
	[ "$(xd_prog_name)" = ts_steer ] || { die "without --rx-hwtstamp the program is '$(xd_prog_name)'"; return 1; }
	$(xd_pod "$NB" pod-b plain --require) env TICKSTACK_RX_HWTSTAMP=1 timeout 60 "$B/conform" hwtstampxdp 198.18.12.1 11301 \
		>"$TSDP_TMP/plain.stack" 2>&1
	echo "exit $?" >>"$TSDP_TMP/plain.stack"
	wait_for 5 ls "$XD_STATS"/stats-plain-*.txt || { die "plain: no stats dump"; return 1; }
	cp "$XD_STATS"/stats-plain-*.txt "$TSDP_TMP/"
	[ "$(stat_sum "$TSDP_TMP/stats-plain-*.txt" hw_unbound xsk)" -gt 0 ] &&
		[ "$(stat_sum "$TSDP_TMP/stats-plain-*.txt" rx_hw_meta xsk)" = 0 ] ||
		{ die "the plain program: hw_unbound not counted, or metadata seen"; return 1; }
}

t_xdpd_restart() { # a daemon killed outright with its state file damaged: a clear line, no crash; the CNI's attach takes the interface back
	local old
	xd_topo || return 1
	xd_server old 11281 --require || return 1
	old=$XS
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	grep -q "^att pod-b $IFB " "$XD_RUN/state" || { die "no state record of pod-b: $(cat "$XD_RUN/state")"; return 1; }
	# a file that is no state at all: ignored, said so; the program stays
	# attached (and keeps passing what it cannot redirect)
	head -c 300 /dev/urandom | tr '\n' x >"$XD_RUN/state"
	xd_again || return 1
	ip -n "$NB" link show "$IFB" | grep -q "prog/xdp" || { die "the program went with the daemon"; return 1; }
	grep -aq "state file $XD_RUN/state: first line .* is not 'tickstack-xdpd-state 1': the file is ignored" "$TSDP_TMP/xdpd.out" ||
		{ die "no line about the damaged state file"; return 1; }
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-b "$IFB" "/run/netns/$NB" ||
		{ die "attach after a daemon crash failed"; return 1; }
	grep -q "replaced a steering program an earlier tickstack-xdpd left attached" "$TSDP_TMP/xdpd.out" ||
		{ die "the left program was not replaced"; return 1; }
	xd_stop_server "$old" old || return 1
	xd_served new 11281 || return 1
	# records that do not parse and a pod that is gone: each dropped with
	# a line, the rest taken over
	{
		echo "att pod-gone eth0 2 1 1 7 2"
		echo "att ../x eth0 2 1 1 7 2"
		echo "q pod-b $IFB nonsense"
	} >>"$XD_RUN/state"
	mkdir -p "$XD_RUN/pods/pod-gone"
	xd_again || return 1
	grep -q "state: pod pod-gone: its network namespace (inode 1) is gone: the pod is, its record dropped" "$TSDP_TMP/xdpd.out" &&
		grep -q "state file $XD_RUN/state line [0-9]*: cannot parse 'att ../x eth0" "$TSDP_TMP/xdpd.out" &&
		grep -q "state file $XD_RUN/state line [0-9]*: cannot parse 'q pod-b" "$TSDP_TMP/xdpd.out" &&
		grep -q "pod pod-b: $IFB taken over from the previous daemon" "$TSDP_TMP/xdpd.out" ||
		{ die "the damaged records were not each said and dropped"; return 1; }
	[ ! -e "$XD_RUN/pods/pod-gone" ] && ! grep -q pod-gone "$XD_RUN/state" ||
		{ die "the gone pod's record or directory stayed: $(cat "$XD_RUN/state")"; return 1; }
	# copies of the real file cut short or with bytes changed: the daemon
	# starts each time (ASan, UBSan), whatever it takes over
	local good=$TSDP_TMP/state.good i
	cp "$XD_RUN/state" "$good"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		$XD_PY - "$good" "$XD_RUN/state" "$i" <<-'PY'
		import random, sys
		d = bytearray(open(sys.argv[1], "rb").read())
		r = random.Random(int(sys.argv[3]))
		if r.random() < 0.3:
		    d = d[:r.randrange(len(d))]
		for _ in range(r.randrange(1, 6)):
		    if d:
		        d[r.randrange(len(d))] = r.choice(b"0123456789 \n-x\xff")
		open(sys.argv[2], "wb").write(d)
		PY
		xd_again || { die "no start on damaged state $i: $(od -c "$XD_RUN/state" | head -5)"; return 1; }
	done
	cp "$good" "$XD_RUN/state"
	xd_again || return 1
	xd_served again 11282
}

# t_xdpd_gap: the daemon stopped for an upgrade (SIGTERM) and not yet back:
# a process that starts in the gap finds its pod's socket refusing (the
# stopped daemon leaves it), waits for the next daemon (TICKSTACK_XDPD_WAIT_MS)
# and is accelerated once it serves the pod again; a missing socket would
# have failed it at once (the rolling update of the e2e)
t_xdpd_gap() {
	xd_topo || return 1
	xd_served before 11295 || return 1
	kill -TERM "$XD_PID"
	wait_exit "$XD_PID" 10 && [ "$WAIT_RC" = 0 ] || { die "tickstack-xdpd exit code $WAIT_RC after SIGTERM"; return 1; }
	[ -S "$XD_RUN/pods/pod-b/xdp.sock" ] && [ -S "$XD_RUN/node/xdp.sock" ] ||
		{ die "the stopped daemon took the sockets away: $(ls -la "$XD_RUN/pods/pod-b" "$XD_RUN/node" 2>&1)"; return 1; }
	$(xd_pod "$NB" pod-b gap --require) env TICKSTACK_SPIN_USEC=0 \
		sockperf sr -i "$IPB" -p 11296 >"$TSDP_TMP/server-gap.out" 2>&1 &
	XS=$!
	TSDP_PIDS+=("$XS")
	sleep 1 # the server's first request to a daemon waits for one
	xd_restart
	wait_for 10 udp_listening "$NB" 11296 || { die "the server did not listen after the daemon came back: $(cat "$TSDP_TMP/server-gap.out")"; return 1; }
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	xd_pp 0 11296 client.out || { die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	xd_stop_server "$XS" gap || return 1
	check_accel gap
}

# termpp_client SECS OUT WHAT: pod-a's sockperf ping-pong client to pod-b's
# server on 11297 for SECS, in the background (its pid in pp, output in
# $TSDP_TMP/OUT), until its socket is steered (a process can take seconds
# to start on a loaded machine); WHAT names it when it is not
termpp_client() {
	$(xd_pod "$NA" pod-a cli --require) taskset -c 0 timeout 60 sockperf pp -i "$IPB" -p 11297 -t "$1" -m 64 --mps=20000 \
		>"$TSDP_TMP/$2" 2>&1 &
	pp=$!
	TSDP_PIDS+=("$pp")
	wait_for 10 xd_status_is pod-a "1 1" || { die "$3: $(xd_status)"; return 1; }
}

# t_xdpd_termpp: the e2e's rolling update on veth pairs: a ping-pong between
# two pods, both ends accelerated through the daemon, runs through the
# daemon's SIGTERM, a gap and the next daemon: nothing lost, both ends on
# their XSKs. Then a ping-pong whose client exits in the gap (its close asks
# for a daemon that is away): it waits for the next one and exits clean,
# its stats written, its entry gone.
t_xdpd_termpp() {
	local pp ia="tsdpv${TSDP_ID}a"
	xd_topo || return 1
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-a "$ia" "/run/netns/$NA" ||
		{ die "attach pod-a failed"; return 1; }
	xd_server srv 11297 --require || return 1
	wait_for 5 xd_status_is pod-b "1 1" || { die "status: $(xd_status)"; return 1; }
	termpp_client 8 client.out "the client's entry" || return 1
	xd_term_gap 3 || return 1
	grep -q "pod pod-a: $ia taken over from the previous daemon (program [0-9]*, now [0-9]*; 1 steering entries)" "$TSDP_TMP/xdpd.out" &&
		grep -q "pod pod-b: $IFB taken over from the previous daemon (program [0-9]*, now [0-9]*; 1 steering entries)" "$TSDP_TMP/xdpd.out" ||
		{ die "not taken over: $(grep -v '^tickstack-xdpd: serving' "$TSDP_TMP/xdpd.out" | tail -5)"; return 1; }
	wait_exit "$pp" 30 && [ "$WAIT_RC" = 0 ] ||
		{ die "the ping-pong through the SIGTERM: exit code $WAIT_RC: $(tail -5 "$TSDP_TMP/client.out")"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" 1000 || return 1
	cp "$XD_STATS"/stats-cli-*.txt "$TSDP_TMP/" && check_accel cli || return 1
	wait_for 5 xd_status_is pod-a "0 0" || { die "the client's entry stayed: $(xd_status)"; return 1; }
	# the client ends while no daemon runs: -t 3 in a gap of 6 s
	rm -f "$XD_STATS"/stats-cli-*.txt "$TSDP_TMP"/stats-cli-*.txt
	termpp_client 3 client2.out "the second client's entry" || return 1
	xd_term_gap 6 || return 1
	wait_exit "$pp" 30 && [ "$WAIT_RC" = 0 ] ||
		{ die "the client that ended in the gap: exit code $WAIT_RC: $(tail -5 "$TSDP_TMP/client2.out")"; return 1; }
	check_pp_output "$TSDP_TMP/client2.out" 1000 || return 1
	# its close found the daemon away and waited for the next one
	grep -q "tickstack-xdpd at .*: connection closed .*: the daemon restarts; connecting again" "$TSDP_TMP/client2.out" &&
		grep -q "tickstack-xdpd at .*: connected again" "$TSDP_TMP/client2.out" ||
		{ die "the second client did not end in the gap: $(grep tickstack "$TSDP_TMP/client2.out")"; return 1; }
	cp "$XD_STATS"/stats-cli-*.txt "$TSDP_TMP/" && check_accel cli || return 1
	wait_for 5 xd_status_is pod-a "0 0" || { die "the client's entry stayed: $(xd_status)"; return 1; }
	xd_stop_server "$XS" srv || return 1
	check_accel srv
}

# xd_term_gap SECS: the daemon stopped by SIGTERM (an upgrade), away for
# SECS, and started again
xd_term_gap() {
	kill -TERM "$XD_PID"
	wait_exit "$XD_PID" 10 && [ "$WAIT_RC" = 0 ] || { die "tickstack-xdpd exit code $WAIT_RC after SIGTERM"; return 1; }
	sleep "$1" # the gap: the data path goes on without a daemon
	xd_restart_ready || return 1
}

# t_xdpd_recover: a ping-pong runs through the daemon's SIGKILL and restart:
# nothing lost, and its successor serves the pod again without the CNI: a
# socket the running process opens after the restart is steered to its XSK
# (the library connects again and gets its queues back), a process's
# entries go when it exits, a namespace attached after the restart is
# served, and the programs stay attached over a SIGTERM too (an upgrade).
t_xdpd_recover() {
	local pp py i0 XS_ENV=TICKSTACK_QUEUE=0
	xd_topo || return 1
	# sockperf on queue 0 (the peer's CPU 0), a process that opens a
	# socket later on queue 1 (CPU 1)
	xd_server srv 11291 --require || return 1
	$(xd_pod "$NB" pod-b py --require) env TICKSTACK_QUEUE=1 $XD_PY "$here/xdpd_rebind.py" "$IPB" 11292 11293 "$XD_STATS/go" \
		>"$TSDP_TMP/rebind.out" 2>&1 &
	py=$!
	TSDP_PIDS+=("$py")
	wait_for 10 udp_listening "$NB" 11292 || { die "the rebind process did not listen"; return 1; }
	wait_for 5 xd_status_is pod-b "2 2" || { die "status: $(xd_status)"; return 1; }
	ip netns exec "$NA" taskset -c 0 timeout 30 sockperf pp -i "$IPB" -p 11291 -t 6 -m 64 \
		>"$TSDP_TMP/client.out" 2>&1 &
	pp=$!
	sleep 1.5
	i0=$(ip -n "$NB" link show "$IFB" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	kill -KILL "$XD_PID"
	wait "$XD_PID" 2>/dev/null
	sleep 1 # no daemon: the steering goes on
	xd_restart_ready || return 1
	# taken over from its state: no attach, the processes' entries kept
	grep -q "pod pod-b: $IFB taken over from the previous daemon (program $i0, now [0-9]*; 2 steering entries)" "$TSDP_TMP/xdpd.out" ||
		{ die "pod-b was not taken over: $(grep -v '^tickstack-xdpd: serving' "$TSDP_TMP/xdpd.out" | tail -5)"; return 1; }
	[ "$(grep -c "attached (" "$TSDP_TMP/xdpd.out")" = 1 ] || { die "attached more than once"; return 1; }
	xd_status_is pod-b "2 2" || { die "status after the restart: $(xd_status)"; return 1; }
	wait "$pp" || { die "the ping-pong through the restart: exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" 1000 || return 1
	# a socket the running process opens now: steered (its third entry)
	touch "$XD_STATS/go"
	wait_for 10 grep -q "^bound 11293" "$TSDP_TMP/rebind.out" ||
		{ die "the running process's new socket: $(cat "$TSDP_TMP/rebind.out")"; return 1; }
	grep -q "tickstack-xdpd at .*: connected again" "$TSDP_TMP/rebind.out" &&
		grep -q "pod pod-b: pid [0-9]* connected again: its 1 steering entries and 1 queues" "$TSDP_TMP/xdpd.out" ||
		{ die "the process did not get its queue back: $(cat "$TSDP_TMP/rebind.out")"; return 1; }
	xd_status_is pod-b "2 3" || { die "status after the new socket: $(xd_status)"; return 1; }
	local udp0
	udp0=$(kstat "$NB" UdpInDatagrams)
	ip netns exec "$NA" taskset -c 1 timeout 20 "$B"/udpcheck send "$IPB" 11293 500 >"$TSDP_TMP/send.out" 2>&1 ||
		{ die "echo on the new socket: $(cat "$TSDP_TMP/send.out")"; return 1; }
	[ $(($(kstat "$NB" UdpInDatagrams) - ${udp0:-0})) -le 20 ] ||
		{ die "the new socket's datagrams went through the pod's kernel"; return 1; }
	# once more: a process killed while it has not spoken to the new
	# daemon takes its entries with it
	xd_again || return 1
	xd_status_is pod-b "2 3" || { die "status after the second restart: $(xd_status)"; return 1; }
	kill -KILL "$py"
	wait "$py" 2>/dev/null
	wait_for 2 xd_status_is pod-b "1 1" || { die "the killed process's entries stayed: $(xd_status)"; return 1; }
	grep -q "pod pod-b: pid [0-9]*, which held 2 steering entries before the restart, exited: they are removed" "$TSDP_TMP/xdpd.out" ||
		{ die "no line about the killed process's entries"; return 1; }
	# sockperf's close speaks to the daemon: connected again, its entry goes
	xd_stop_server "$XS" srv || return 1
	check_accel srv || return 1
	wait_for 2 xd_status_is pod-b "0 0" || { die "sockperf's entry stayed after it exited: $(xd_status)"; return 1; }
	# a namespace plumbed after the restart: served
	tsdp_ns NC c
	tsdp_pair "$NC" "$NA" 198.18.13 "v${TSDP_ID}c" "v${TSDP_ID}d"
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-c "tsdpv${TSDP_ID}c" "/run/netns/$NC" ||
		{ die "attach pod-c after the restart failed"; return 1; }
	$(xd_pod "$NC" pod-c c --require) env TICKSTACK_SPIN_USEC=0 sockperf sr -i 198.18.13.1 -p 11294 \
		>"$TSDP_TMP/server-c.out" 2>&1 &
	local sc=$!
	TSDP_PIDS+=("$sc")
	wait_for 10 udp_listening "$NC" 11294 || { die "pod-c's server did not listen"; return 1; }
	wait_for 5 xd_status_is pod-c "1 1" || { die "status: $(xd_status)"; return 1; }
	ip netns exec "$NA" timeout 30 sockperf pp -i 198.18.13.1 -p 11294 -t 2 -m 64 >"$TSDP_TMP/client-c.out" 2>&1 ||
		{ die "pod-c's client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client-c.out" || return 1
	xd_stop_server "$sc" c || return 1
	check_accel c || return 1
	# SIGTERM (an upgrade's): the programs stay, the state names them
	kill -TERM "$XD_PID"
	wait_exit "$XD_PID" 10 && [ "$WAIT_RC" = 0 ] || { die "exit code $WAIT_RC after SIGTERM"; return 1; }
	XD_PID=
	ip -n "$NB" link show "$IFB" | grep -q "prog/xdp" && ip -n "$NC" link show "tsdpv${TSDP_ID}c" | grep -q "prog/xdp" ||
		{ die "a program went with the daemon's SIGTERM"; return 1; }
	grep -q "^att pod-b " "$XD_RUN/state" && grep -q "^att pod-c " "$XD_RUN/state" ||
		{ die "state after SIGTERM: $(cat "$XD_RUN/state")"; return 1; }
	! grep -q "Sanitizer\|runtime error" "$TSDP_TMP/xdpd.out" || { die "sanitizer report"; return 1; }
}

# A pod that can write its own directory (a container running as uid 0,
# were the directory not mounted read-only) swaps a link to a host file in
# for its socket, or plants one before the daemon binds: the daemon never
# changes the host file. The daemon runs under strace, which holds it
# 300 ms after every bind: the window in which a chmod(path) after the
# bind (what the daemon did before) followed the pod's link, every time.
t_xdpd_symlink() {
	local d t r racer
	XD_WRAP="strace -o /dev/null -e trace=bind -e inject=bind:delay_exit=300000" C=1 xd_topo || return 1
	# the modes are given at the bind
	[ "$(stat -c '%a %u' "$XD_RUN/ctl.sock")" = "600 0" ] &&
		[ "$(stat -c '%a %u' "$XD_RUN/pods/pod-b/xdp.sock")" = "666 0" ] &&
		[ "$(stat -c '%a %u %F' "$XD_RUN/pods/pod-b")" = "755 0 directory" ] ||
		{ die "modes: $(stat -c '%n %a %u %F' "$XD_RUN/ctl.sock" "$XD_RUN/pods/pod-b" "$XD_RUN/pods/pod-b/xdp.sock")"; return 1; }
	t=$XD/host-file
	echo host >"$t"
	chmod 0600 "$t"
	d=$XD_RUN/pods/pod-c
	# a re-bind (the pod plumbed again): the pod swaps its socket for a
	# link to the host file as soon as the socket exists
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" detach pod-c || { die "detach pod-c failed"; return 1; }
	[ ! -e "$d" ] || { die "$d stayed after the detach"; return 1; }
	# shellcheck disable=SC2016 # the script's $1 and $2 are sh -c's arguments
	xd_root_pod timeout 20 sh -c 'until [ -S "$1/xdp.sock" ]; do :; done
		ln -s "$2" "$1/.link" && mv -T "$1/.link" "$1/xdp.sock"' sh "$d" "$t" &
	racer=$!
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-c "tsdpv${TSDP_ID}c" "/run/netns/$NC" ||
		{ die "attach pod-c failed"; return 1; }
	wait "$racer" || { die "the pod's swap failed ($?)"; return 1; }
	[ -L "$d/xdp.sock" ] || { die "the pod's link is not in place: the race did not happen"; return 1; }
	[ "$(stat -c %a "$t")" = 600 ] || { die "the daemon changed the host file's mode to $(stat -c %a "$t")"; return 1; }
	# the detach removes the link, not what it points at
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" detach pod-c || { die "detach pod-c failed"; return 1; }
	[ "$(cat "$t")" = host ] && [ ! -e "$d" ] || { die "the detach followed the link, or left $d"; return 1; }
	# a link planted before the bind (the pod's directory outlives a
	# daemon restart: the kubelet mounted it): refused, nothing followed
	mkdir -m 0755 "$d"
	xd_root_pod ln -s "$t" "$d/xdp.sock" || { die "the pod could not plant its link"; return 1; }
	r=$("$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-c "tsdpv${TSDP_ID}c" "/run/netns/$NC" 2>&1) &&
		{ die "attached over a planted link: '$r'"; return 1; }
	case "$r" in *"$d/xdp.sock exists and is not a socket: remove it"*) ;; *) die "planted link: '$r'"; return 1 ;; esac
	[ "$(stat -c %a "$t")" = 600 ] && [ -L "$d/xdp.sock" ] || { die "the planted link was followed or removed"; return 1; }
	# the directory itself a link: refused, the target left as it was
	rm "$d/xdp.sock"
	rmdir "$d"
	mkdir -m 0700 "$XD/elsewhere"
	ln -s "$XD/elsewhere" "$d"
	r=$("$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-c "tsdpv${TSDP_ID}c" "/run/netns/$NC" 2>&1) &&
		{ die "attached through a directory link: '$r'"; return 1; }
	case "$r" in *"$d is not a directory"*"remove it"*) ;; *) die "directory link: '$r'"; return 1 ;; esac
	[ "$(stat -c %a "$XD/elsewhere")" = 700 ] && [ -z "$(ls -A "$XD/elsewhere")" ] ||
		{ die "the daemon changed the link's target directory"; return 1; }
	rm "$d"
	"$B/tickstack-xdpd" ctl --run-dir "$XD_RUN" attach pod-c "tsdpv${TSDP_ID}c" "/run/netns/$NC" ||
		{ die "attach pod-c after the cleanup failed"; return 1; }
	[ "$(stat -c '%a %u' "$d/xdp.sock")" = "666 0" ] || { die "pod-c's socket: $(stat -c '%a %u' "$d/xdp.sock")"; return 1; }
}

# The per-pod limits, each refused with an error naming it and a log line
# (at most 10 per 5 s per pod, the rest counted): more than 64 connections,
# more than 1024 entries on one connection and 4096 on one pod interface,
# oversized messages, several fds, truncated control data, a NUL byte, an
# empty line.
t_xdpd_limits() {
	local before r sock
	Q=1 xd_topo || return 1
	sock=$XD_RUN/pods/pod-b/xdp.sock
	before=$(xd_fds)
	r=$(xd_hostile "$NB" $XD_PY "$XD_FUZZ" conns "$sock" 80) || { die "conns: $r"; return 1; }
	[ "$r" = "ok=64 refused=16" ] || { die "80 connections: '$r', want ok=64 refused=16"; return 1; }
	# 10 refusals logged, 6 counted when the interval ends
	wait_for 8 grep -q "pod pod-b: 6 more refusals in 5 s not logged (at most 10 per 5 s)" "$TSDP_TMP/xdpd.out" ||
		{ die "no count of the refusals held back"; cat "$TSDP_TMP/xdpd.out" >&2; return 1; }
	[ "$(grep -c "pod pod-b: refused pid [0-9]* uid 65534: the pod holds 64 connections, the limit" "$TSDP_TMP/xdpd.out")" = 10 ] ||
		{ die "not 10 refusal lines"; cat "$TSDP_TMP/xdpd.out" >&2; return 1; }
	wait_for 5 xd_status_is pod-b "0 0" || { die "connections left: $(xd_status)"; return 1; }
	# entries: 1024 per connection, 4096 per pod interface (its map)
	r=$(xd_hostile "$NB" $XD_PY "$XD_FUZZ" entries "$sock" "$IFB" 5 1025) || { die "entries: $r"; return 1; }
	echo "$r" | grep -q "^conn 0 ok=1024 last=error 28 this connection holds 1024 steering entries, the most one connection may" &&
		[ "$(echo "$r" | grep -c "^conn [0-3] ok=1024 last=error 28 this connection holds 1024")" = 4 ] &&
		echo "$r" | grep -q "^conn 4 ok=0 last=error 28 pod pod-b holds 4096 steering entries on $IFB, the most a pod interface may" ||
		{ die "entries: $r"; return 1; }
	grep -q "pod pod-b: pid [0-9]*: refused a steering entry: the connection holds 1024, the limit" "$TSDP_TMP/xdpd.out" &&
		grep -q "pod pod-b: pid [0-9]*: refused a steering entry: $IFB holds 4096, the limit" "$TSDP_TMP/xdpd.out" ||
		{ die "the entry refusals were not logged"; cat "$TSDP_TMP/xdpd.out" >&2; return 1; }
	wait_for 5 xd_status_is pod-b "0 0" || { die "entries left: $(xd_status)"; return 1; }
	# malformed messages: refused, the connection still answers
	r=$(xd_hostile "$NB" $XD_PY "$XD_FUZZ" proto "$sock" "$IFB") || { die "proto: $r"; return 1; }
	[ "$(echo "$r" | grep -c "^[a-z0-9+-]* then hello: ok $IFB\$")" = 8 ] &&
		[ "$(echo "$r" | grep -c "^[a-z0-9+-]*: error 71 a request is one message of at most 511 bytes with at most one fd")" = 5 ] &&
		[ "$(echo "$r" | grep -c "^nul[a-z-]*: error 74 a request is one line of text, without NUL bytes")" = 2 ] &&
		echo "$r" | grep -q "^newline-fd: error 22 bad request ''" ||
		{ die "malformed messages: $r"; return 1; }
	grep -q "pod pod-b: pid [0-9]*: refused a malformed message (too long, or more than one fd)" "$TSDP_TMP/xdpd.out" ||
		{ die "no log of a malformed message"; return 1; }
	# and every fd those brought is closed again
	wait_for 5 xd_fds_are "$before" || { die "the daemon holds $(xd_fds) fds, $before before"; return 1; }
}

# The black-box fuzzer (tests/xdpd_fuzz.py) as a hostile pod process: the
# daemon stays up, answers every message, closes every fd it was passed,
# and serves the pod's accelerated processes afterwards.
t_xdpd_fuzz() {
	local before r seed=${XDPD_FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
	xd_topo || return 1
	before=$(xd_fds)
	r=$(xd_hostile "$NB" timeout 120 $XD_PY "$XD_FUZZ" fuzz "$XD_RUN/pods/pod-b/xdp.sock" "$IFB" \
		"$XDPD_FUZZ_ITER" "$seed" 2>&1) || { die "fuzzer (XDPD_FUZZ_SEED=$seed): $r"; return 1; }
	log "$CUR: $r"
	kill -0 "$XD_DPID" 2>/dev/null || { die "the daemon died"; return 1; }
	wait_for 5 xd_status_is pod-b "0 0" || { die "connections or entries left: $(xd_status)"; return 1; }
	wait_for 5 xd_fds_are "$before" || { die "the daemon holds $(xd_fds) fds, $before before (XDPD_FUZZ_SEED=$seed)"; return 1; }
	xd_served srv 11291
}
