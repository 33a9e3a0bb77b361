# shellcheck shell=bash disable=SC2154,SC2153 # here, TSDP_ID: set by harness.sh and lib.sh
# tests/tcp.sh - the TCP cases of the harness (sourced by harness.sh, which
# provides new_pair, accel, kern, die, log, wait_for, stat_sum and the
# cleanup). Every accelerated end runs with TICKSTACK_TCP=1 and
# TICKSTACK_REQUIRE=1: a connection the stack would leave on the kernel
# fails the test instead of passing quietly. Besides the programs' own
# checks, each case proves the path from both sides: the library's
# counters (connections through the XSK, bytes per socket) and the
# kernel's own TCP counters in the accelerated namespaces (nstat): the
# kernel opened no connection there and sent no reset, so it neither
# carried nor answered the steered segments.

TCP_LOSS_MIB=${TCP_LOSS_MIB:-256}
TCP_LOSS5_MIB=${TCP_LOSS5_MIB:-32}

taccel() { echo "$(accel "$1" "$2") --require env TICKSTACK_TCP=1"; }

kstat() { # kstat NS COUNTER: the kernel's TCP counter in NS
	ip netns exec "$1" nstat -asz "$2" | awk -v c="$2" '$1 == c {print $2}'
}

# kernel_silent NS...: the kernel of each namespace carried no TCP
# connection and sent no reset
kernel_silent() {
	local ns c v
	for ns in "$@"; do
		for c in TcpActiveOpens TcpPassiveOpens TcpOutRsts; do
			v=$(kstat "$ns" $c)
			[ "${v:-x}" = 0 ] || { die "kernel of $ns: $c=$v (it saw the connection)"; return 1; }
		done
	done
}

# tcp_accel TAG MIN_CONNS [rx|tx|both]: the process(es) with stats tag TAG
# carried at least MIN_CONNS connections through the XSK, with bytes
# received, sent or both (default) through it
tcp_accel() {
	local tag=$1 min=$2 way=${3:-both} conns rxa txa
	wait_for 5 ls "$TSDP_TMP"/stats-"$tag"-*.txt || { die "$tag: no stats dump"; return 1; }
	conns=$(cat "$TSDP_TMP"/stats-"$tag"-*.txt | grep '^tcp ' | tr ' ' '\n' | grep '^conns_accel=' |
		cut -d= -f2 | awk '{s+=$1} END {print s+0}')
	rxa=$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" rx_accel)
	txa=$(stat_sum "$TSDP_TMP/stats-$tag-*.txt" tx_accel)
	[ "$conns" -ge "$min" ] || { die "$tag: $conns connections through the XSK, want >= $min"; return 1; }
	case $way in
	rx) txa=1 ;;
	tx) rxa=1 ;;
	esac
	[ "$rxa" -gt 0 ] && [ "$txa" -gt 0 ] || { die "$tag: no bytes through the XSK (rx=$rxa tx=$txa)"; return 1; }
}

# tcp_pp SERVER-PREFIX CLIENT-PREFIX PORT SIZE: sockperf --tcp ping-pong
tcp_pp() {
	local srv=$1 cli=$2 port=$3 size=$4
	$srv "${CPU_SRV[@]}" sockperf sr --tcp -i "$IPB" -p "$port" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" "$port" || { die "server did not listen on $port"; return 1; }
	$cli "${CPU_CLI[@]}" timeout 30 sockperf pp --tcp -i "$IPB" -p "$port" -t 2 -m "$size" >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	stop_server
}

t_tcp_pp_both() {
	tcp_pp "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" 12001 64 || return 1
	tcp_accel cli 1 && tcp_accel srv 1 && kernel_silent "$NA" "$NB"
}

t_tcp_pp_kernel_server() {
	tcp_pp "$(kern "$NB")" "$(taccel "$NA" cli)" 12002 1472 || return 1
	tcp_accel cli 1 && kernel_silent "$NA"
}

t_tcp_pp_kernel_client() {
	tcp_pp "$(taccel "$NB" srv)" "$(kern "$NA")" 12003 256 || return 1
	tcp_accel srv 1 && kernel_silent "$NB"
}

# tcp_ul SRV-PREFIX CLI-PREFIX PORT: sockperf ul --tcp, 10,000 msg/s for 2 s
tcp_ul() {
	$1 "${CPU_SRV[@]}" sockperf sr --tcp -i "$IPB" -p "$3" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" "$3" || { die "server did not listen on $3"; return 1; }
	$2 env TICKSTACK_SPIN_USEC=0 "${CPU_CLI[@]}" timeout 30 sockperf ul --tcp -i "$IPB" -p "$3" -t 2 -m 64 \
		--mps 10000 >"$TSDP_TMP/client.out" 2>&1 || { die "client exit code $?"; return 1; }
	stop_server || return 1
	check_tcp_ul_output "$TSDP_TMP/client.out" "$TSDP_TMP/server.out"
}

# check_tcp_ul_output CLIENT-OUT SERVER-OUT: sockperf counts as "dropped" every
# reply not back by its end (requests sent up to 50 ms before it): a late
# reply, on a loaded machine (kernel to kernel here, under two CPU hogs, had
# such "drops" in 8 of 8 runs of UDP). TCP loses nothing, so a stream is
# judged by what it carried: the server handled every message the client sent,
# no reply was duplicated or out of order; late replies are logged.
check_tcp_ul_output() {
	local sent handled late
	grep -q "interrupted by timer" "$1" || { die "client did not end on its timer"; return 1; }
	grep -q "# duplicated messages = 0; # out-of-order messages = 0" "$1" ||
		{ die "duplicated or reordered replies"; return 1; }
	sent=$(sed -n 's/.*\[Total Run\].*SentMessages=\([0-9]*\).*/\1/p' "$1")
	handled=$(sed -n 's/.*Total \([0-9]*\) messages received and handled.*/\1/p' "$2")
	[ "${sent:-0}" -gt 1000 ] && [ "$sent" = "$handled" ] ||
		{ die "client sent ${sent:-?} messages, server handled ${handled:-?}"; return 1; }
	late=$(sed -n 's/.*# dropped messages = \([0-9]*\);.*/\1/p' "$1")
	[ "${late:-0}" = 0 ] || log "$CUR: ${late} replies not back by the client's end (late, not lost: the server handled all $sent)"
	check_pp_output "$1" 100 nodrops
}

t_tcp_under_load() { # sockperf ul --tcp: both ends accelerated, then each end on the kernel
	# both client threads share one CPU here: the receiver sleeps instead
	# of spinning (see t_under_load); medians are logged, not judged
	tcp_ul "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" 12006 || return 1
	tcp_accel cli 1 && tcp_accel srv 1 && kernel_silent "$NA" "$NB" || return 1
	rm -f "$TSDP_TMP"/stats-*
	tcp_ul "$(kern "$NB")" "$(taccel "$NA" cli)" 12016 || return 1
	tcp_accel cli 1 || return 1
	rm -f "$TSDP_TMP"/stats-*
	tcp_ul "$(taccel "$NB" srv)" "$(kern "$NA")" 12026 || return 1
	tcp_accel srv 1
}

# tcp_tp SRV-PREFIX CLI-PREFIX PORT: sockperf tp --tcp unpaced for 2 s;
# every message sent is received
tcp_tp() {
	local sent got
	$1 "${CPU_SRV[@]}" sockperf sr --tcp -i "$IPB" -p "$3" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" "$3" || { die "server did not listen on $3"; return 1; }
	$2 "${CPU_CLI[@]}" timeout 30 sockperf tp --tcp -i "$IPB" -p "$3" -t 2 -m 256 \
		>"$TSDP_TMP/client.out" 2>&1 || { die "client exit code $?"; return 1; }
	grep -q "interrupted by timer" "$TSDP_TMP/client.out" || { die "client did not end on its timer"; return 1; }
	stop_server || return 1
	sent=$(sed -n 's/.*Total of \([0-9]*\) messages sent.*/\1/p' "$TSDP_TMP/client.out")
	got=$(sed -n 's/.*Total \([0-9]*\) messages received.*/\1/p' "$TSDP_TMP/server.out")
	[ "${sent:-0}" -gt 1000 ] && [ "$sent" = "$got" ] || { die "sent ${sent:-?} received ${got:-?}"; return 1; }
	log "$CUR: $sent sent, $got received ($(sed -n 's/.*Summary: BandWidth is \([0-9.]* MBps\).*/\1/p' "$TSDP_TMP/client.out"))"
}

t_tcp_throughput() { # sockperf tp --tcp unpaced, every message received: both ends accelerated, then each on the kernel
	tcp_tp "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" 12007 || return 1
	tcp_accel cli 1 tx && tcp_accel srv 1 rx && kernel_silent "$NA" "$NB" || return 1
	rm -f "$TSDP_TMP"/stats-*
	tcp_tp "$(kern "$NB")" "$(taccel "$NA" cli)" 12017 || return 1
	tcp_accel cli 1 tx || return 1
	rm -f "$TSDP_TMP"/stats-*
	tcp_tp "$(taccel "$NB" srv)" "$(kern "$NA")" 12027 || return 1
	tcp_accel srv 1 rx
}

t_tcp_cycles() { # 1,000 connect/accept/close cycles leak no fd, port or UMEM frame
	$(taccel "$NB" srv) "$B"/tcpcheck cycles-server 12004 1000 >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12004 || { die "server did not listen"; return 1; }
	$(taccel "$NA" cli) timeout 120 "$B"/tcpcheck cycles-client "$IPB" 12004 1000 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client: exit code $?"; return 1; }
	wait_exit "$SRV" 60 || { die "server did not finish"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "server: exit code $WAIT_RC"; return 1; }
	log "$CUR: $(grep -h 'cycles;' "$TSDP_TMP/client.out" "$TSDP_TMP/server.out" | tr '\n' ' ')"
	tcp_accel cli 1000 && tcp_accel srv 1000 && kernel_silent "$NA" "$NB" || return 1
	# the kernel holds no socket of theirs any more (ports released)
	[ -z "$(ip netns exec "$NA" ss -Htan)" ] || { die "client namespace still holds sockets"; return 1; }
}

t_tcp_fix() { # a QuickFIX session: logon, 10,000 NewOrderSingle / ExecutionReport pairs in order, logout
	$(taccel "$NB" srv) timeout 120 "$B"/fixcheck acceptor 12008 10000 >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12008 || { die "acceptor did not listen"; return 1; }
	$(taccel "$NA" cli) timeout 120 "$B"/fixcheck initiator "$IPB" 12008 10000 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "initiator: exit code $?"; return 1; }
	wait_exit "$SRV" 60 || { die "acceptor did not finish"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "acceptor: exit code $WAIT_RC"; return 1; }
	log "$CUR: $(cat "$TSDP_TMP/client.out")"
	tcp_accel cli 1 && tcp_accel srv 1 && kernel_silent "$NA" "$NB"
}

# scenario SRV-PREFIX CLI-PREFIX MODE PORT TAG: tcpcheck MODE-server and
# MODE-client; what each observed in $TSDP_TMP/TAG.txt (server, then client)
scenario() {
	local srv=$1 cli=$2 mode=$3 port=$4 tag=$5 p
	$srv "$B"/tcpcheck "$mode"-server "$port" >"$TSDP_TMP/$tag-srv.txt" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: server did not listen"; return 1; }
	$cli timeout 30 "$B"/tcpcheck "$mode"-client "$IPB" "$port" >"$TSDP_TMP/$tag-cli.txt" 2>&1 ||
		{ die "$tag: client exit code $?"; return 1; }
	wait_exit "$p" 30 || { die "$tag: server did not finish"; return 1; }
	cat "$TSDP_TMP/$tag-srv.txt" "$TSDP_TMP/$tag-cli.txt" >"$TSDP_TMP/$tag.txt"
}

t_tcp_vs_kernel() { # half-close, a reset mid-transfer, TCP_INFO's states and options, a refused connect: the stack observes what the kernel does
	local m i=0 ends
	for m in halfclose reset tcpinfo; do
		i=$((i + 1))
		scenario "$(kern "$NB")" "$(kern "$NA")" $m $((12020 + i)) kernel-$m || return 1
		scenario "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" $m $((12030 + i)) stack-$m || return 1
		same_as_kernel $m || return 1
	done
	# the options each end's TCP_INFO shows (timestamps, window scaling, send
	# MSS) with the stack on one end, passive then active open, and on both:
	# the kernel's view of the stack shows what the stack offered/accepted
	scenario "$(kern "$NB")" "$(kern "$NA")" options 12035 kernel-options || return 1
	grep -q 'timestamps on, window scaling on' "$TSDP_TMP/kernel-options.txt" ||
		{ die "options: the kernels negotiated no timestamps/window scaling: $(cat "$TSDP_TMP/kernel-options.txt")"; return 1; }
	for ends in passive active both; do
		case $ends in
		passive) scenario "$(taccel "$NB" srv)" "$(kern "$NA")" options 12036 stack-options ;;
		active) scenario "$(kern "$NB")" "$(taccel "$NA" cli)" options 12037 stack-options ;;
		both) scenario "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" options 12038 stack-options ;;
		esac || return 1
		cmp -s "$TSDP_TMP/kernel-options.txt" "$TSDP_TMP/stack-options.txt" ||
			{ die "options, stack $ends: otherwise than kernel to kernel:"; diff "$TSDP_TMP/kernel-options.txt" \
				"$TSDP_TMP/stack-options.txt" >&2; return 1; }
	done
	log "$CUR: options as kernel to kernel, stack passive, active and both: $(tr '\n' ';' <"$TSDP_TMP/stack-options.txt")"
	# a connect where nobody listens: the peer's kernel resets the SYN
	$(kern "$NA") timeout 30 "$B"/tcpcheck refused-client "$IPB" 12039 >"$TSDP_TMP/kernel-refused.txt" 2>&1
	$(taccel "$NA" cli) timeout 30 "$B"/tcpcheck refused-client "$IPB" 12039 >"$TSDP_TMP/stack-refused.txt" 2>&1
	same_as_kernel refused || return 1
	tcp_accel cli 2 && tcp_accel srv 2
}

# tcpcheck_pair SRV-PREFIX CLI-PREFIX PORT TAG MODE: tcpcheck MODE-server
# and MODE-client (sharing the go file $TSDP_TMP/go-TAG), both ending with
# status 0; their output in $TSDP_TMP/TAG-srv.txt and TAG-cli.txt
tcpcheck_pair() {
	local srv=$1 cli=$2 port=$3 tag=$4 mode=$5 p
	rm -f "$TSDP_TMP/go-$tag" "$TSDP_TMP/go-$tag".*
	$srv timeout 60 "$B"/tcpcheck "$mode"-server "$port" "$TSDP_TMP/go-$tag" >"$TSDP_TMP/$tag-srv.txt" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: server did not listen"; return 1; }
	$cli timeout 60 "$B"/tcpcheck "$mode"-client "$IPB" "$port" "$TSDP_TMP/go-$tag" >"$TSDP_TMP/$tag-cli.txt" 2>&1 ||
		{ die "$tag: client exit code $?"; return 1; }
	wait_exit "$p" 30 || { die "$tag: server did not finish"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "$tag: server exit code $WAIT_RC: $(cat "$TSDP_TMP/$tag-srv.txt")"; return 1; }
}

# tailwin_run SRV-PREFIX CLI-PREFIX PORT TAG: tcpcheck tailwin-*; the
# transcript (the client's) in $TSDP_TMP/TAG.txt
tailwin_run() {
	tcpcheck_pair "$@" tailwin && cp "$TSDP_TMP/$4-cli.txt" "$TSDP_TMP/$4.txt"
}

t_tcp_tailwin() { # a stream's last segment, its FIN on it, meets a nearly closed window (the reader waits): every byte arrives before the EOF, as on the kernel; reads after the peer's FIN send nothing
	# lwIP's persist timer splits the unsent head to fill a small window
	# (tcp_split_unsent_seg); lwIP 2.1.3 left the FIN on the first part
	# too, and the reader took the EOF there, the bytes after it lost
	# (tests/tcpcheck.c tailwin; lwip-patches/0001-*). Reads after the
	# peer's FIN sent lwIP's window updates, which the kernel of an exited
	# peer reset (prog_asyncio's server namespace, now and then)
	tailwin_run "$(kern "$NB")" "$(kern "$NA")" 12050 kernel-tailwin || return 1
	local rsts
	rsts=$(kstat "$NB" TcpOutRsts)
	tailwin_run "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" 12051 stack-tailwin || return 1
	# the reader's window updates after the FIN reach nobody once the
	# server has exited: the kernel there must see none (it would reset)
	sleep 0.5
	[ "$(kstat "$NB" TcpOutRsts)" = "$rsts" ] ||
		{ die "tailwin: the server's kernel sent $(($(kstat "$NB" TcpOutRsts) - rsts)) resets (segments after the server exited)"; return 1; }
	grep -q 'connection 2: sent 100800, received 100800, intact' "$TSDP_TMP/kernel-tailwin.txt" ||
		{ die "tailwin: the kernel run is not the reference: $(cat "$TSDP_TMP/kernel-tailwin.txt")"; return 1; }
	same_as_kernel tailwin || return 1
	tcp_accel cli 3 rx && tcp_accel srv 3 tx
}

# backlog_run SRV-PREFIX CLI-PREFIX PORT TAG: tcpcheck backlog-*; the
# transcript (server, then client) in $TSDP_TMP/TAG.txt
backlog_run() {
	tcpcheck_pair "$@" backlog && cat "$TSDP_TMP/$4-srv.txt" "$TSDP_TMP/$4-cli.txt" >"$TSDP_TMP/$4.txt"
}

t_tcp_backlog() { # a listener's queue overflows: the stack drops SYNs and handshake ACKs like the kernel, no reset
	local ko so
	backlog_run "$(kern "$NB")" "$(kern "$NA")" 12041 kernel-backlog || return 1
	ko=$(kstat "$NB" TcpExtListenOverflows)
	[ "${ko:-0}" -gt 0 ] || { die "the kernel's queue never overflowed (TcpExtListenOverflows=$ko): the case tests nothing"; return 1; }
	backlog_run "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" 12042 stack-backlog || return 1
	as_kernel backlog || return 1
	wait_for 5 ls "$TSDP_TMP"/stats-srv-*.txt || { die "no server stats"; return 1; }
	so=$(cat "$TSDP_TMP"/stats-srv-*.txt | grep '^tcp ' | tr ' ' '\n' | grep '^listen_overflow=' | cut -d= -f2 |
		awk '{s+=$1} END {print s+0}')
	[ "$so" -gt 0 ] || { die "the stack's queue never overflowed (listen_overflow=0): the case tests nothing"; return 1; }
	log "$CUR: as on the kernel (kernel overflows $ko, stack $so): $(tr '\n' ';' <"$TSDP_TMP/stack-backlog.txt")"
	tcp_accel cli 5 && tcp_accel srv 5
}

# silent_run CLI-PREFIX MODE PORT TAG: a kernel server that goes silent
# once the client (tcpcheck MODE) is connected: iptables in its namespace
# drops the port, then the client is told by a file; the client's
# transcript in $TSDP_TMP/TAG.txt
silent_run() {
	local cli=$1 mode=$2 port=$3 tag=$4 p c
	ip netns exec "$NB" iptables -F INPUT
	rm -f "$TSDP_TMP/go-$tag"
	$(kern "$NB") timeout 60 "$B"/tcpcheck recv-server "$port" /dev/null >"$TSDP_TMP/$tag-srv.txt" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: server did not listen"; return 1; }
	$cli timeout 60 "$B"/tcpcheck "$mode" "$IPB" "$port" "$TSDP_TMP/go-$tag" >"$TSDP_TMP/$tag.txt" 2>&1 &
	c=$!
	TSDP_PIDS+=("$c")
	wait_for 10 grep -q connected "$TSDP_TMP/$tag.txt" || { die "$tag: client did not connect"; return 1; }
	ip netns exec "$NB" iptables -A INPUT -p tcp --dport "$port" -j DROP
	touch "$TSDP_TMP/go-$tag"
	wait_exit "$c" 30 || { die "$tag: the client's read never ended"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "$tag: client exit code $WAIT_RC"; return 1; }
	kill "$p" 2>/dev/null
	ip netns exec "$NB" iptables -F INPUT
}

# conns_through_xsk TAG N: the processes tagged TAG opened N connections
# through the XSK (for cases where no payload crosses)
conns_through_xsk() {
	[ "$(cat "$TSDP_TMP"/stats-"$1"-*.txt | grep '^tcp ' | tr ' ' '\n' | grep '^conns_accel=' | cut -d= -f2 |
		awk '{s+=$1} END {print s+0}')" -ge "$2" ] || { die "$1: fewer than $2 connections through the XSK"; return 1; }
}

t_tcp_timeouts() { # keepalive, TCP_USER_TIMEOUT and TCP_SYNCNT against a silent peer: ETIMEDOUT when and as the kernel gives it
	local m syn
	command -v iptables >/dev/null || { die "iptables not installed"; return 1; }
	for m in keepalive usertimeout; do
		silent_run "$(kern "$NA")" $m-client 12043 kernel-$m || return 1
		silent_run "$(taccel "$NA" cli)" $m-client 12044 stack-$m || return 1
		same_as_kernel $m || return 1
		grep -q 'read ETIMEDOUT' "$TSDP_TMP/stack-$m.txt" || { die "$m: no ETIMEDOUT"; return 1; }
	done
	# a connect whose SYNs all go unanswered: TCP_SYNCNT 2 is three SYNs
	# (1 s, then 2 s apart) and ETIMEDOUT 4 s after the last; lwIP alone
	# gives up after six SYNs in under a second
	for m in kernel stack; do
		ip netns exec "$NB" iptables -F INPUT
		ip netns exec "$NB" iptables -A INPUT -p tcp --dport 12045 -j DROP
		if [ $m = kernel ]; then
			$(kern "$NA") timeout 30 "$B"/tcpcheck syncnt-client "$IPB" 12045 >"$TSDP_TMP/$m-syncnt.txt" 2>&1
		else
			$(taccel "$NA" cli) timeout 30 "$B"/tcpcheck syncnt-client "$IPB" 12045 >"$TSDP_TMP/$m-syncnt.txt" 2>&1
		fi || { die "syncnt ($m): exit code $?"; return 1; }
		syn=$(ip netns exec "$NB" iptables -nvxL INPUT | awk '/DROP/ {print $1}')
		echo "peer: $syn SYNs" >>"$TSDP_TMP/$m-syncnt.txt"
	done
	ip netns exec "$NB" iptables -F INPUT
	same_as_kernel syncnt || return 1
	conns_through_xsk cli 3
}

t_tcp_prefork() { # a listener accepted on in forked children (pre-fork): accelerated, through the parent's stack
	# TICKSTACK_TCP=1 under --require: the parent's lwIP takes the
	# connection and passes it to the child that accepts (docs: Fork); the
	# kernels of both ends carry nothing
	ip netns exec "$NB" nstat -n >/dev/null
	ip netns exec "$NA" nstat -n >/dev/null
	$(taccel "$NB" srv) timeout 30 python3 "$here/prefork.py" 12046 "$IPB" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12046 || { die "prefork (1): server did not listen"; return 1; }
	[ "$($(taccel "$NA" cli) timeout 10 python3 "$here/tcp_hello.py" "$IPB" 12046)" = hi ] ||
		{ die "prefork (1): no answer from the child: $(cat "$TSDP_TMP/server.out")"; return 1; }
	wait_exit "$SRV" 20 && [ "$WAIT_RC" = 0 ] || { die "prefork (1): server exit $WAIT_RC"; return 1; }
	grep -q 'child: accepted' "$TSDP_TMP/server.out" || { die "prefork (1): child did not accept: $(cat "$TSDP_TMP/server.out")"; return 1; }
	tcp_accel srv 1 tx && tcp_accel cli 1 rx && kernel_silent "$NA" "$NB" || return 1
	# TICKSTACK_TCP=connect: the listener stays on the kernel (counted),
	# the child accepts as on the kernel
	rm -f "$TSDP_TMP"/stats-*
	ip netns exec "$NB" env TICKSTACK_TCP=connect TICKSTACK_STATS_FILE="$TSDP_TMP"/stats-srv-%p.txt "$RUN" \
		timeout 30 python3 "$here/prefork.py" 12047 "$IPB" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12047 || { die "prefork (connect): server did not listen"; return 1; }
	[ "$(ip netns exec "$NA" timeout 10 python3 "$here/tcp_hello.py" "$IPB" 12047)" = hi ] ||
		{ die "prefork (connect): no answer from the child"; return 1; }
	wait_exit "$SRV" 20 && [ "$WAIT_RC" = 0 ] || { die "prefork (connect): server exit $WAIT_RC"; return 1; }
	grep -q 'child: accepted' "$TSDP_TMP/server.out" || { die "prefork (connect): child did not accept"; return 1; }
	# (polled, as tcp_accel does: the dump of the process that exits last)
	wait_for 5 sh -c "cat '$TSDP_TMP'/stats-srv-*.txt | grep '^tcp ' | grep -q ' conns_kernel=1 '" ||
		{ die "prefork (connect): the listener on the kernel was not counted"; return 1; }
	# and a connect from a TICKSTACK_TCP=connect process is accelerated
	rm -f "$TSDP_TMP"/stats-*
	tcp_pp "$(kern "$NB")" "$(accel "$NA" cli) --require env TICKSTACK_TCP=connect" 12048 64 || return 1
	tcp_accel cli 1
}

# socat_echo_clients PORT N: N socat clients in a row (accelerated, in NA)
# each send 256 KiB through an echo and must get every byte back in order
socat_echo_clients() {
	local port=$1 n=$2 i
	head -c 262144 /dev/urandom >"$TSDP_TMP/socat.in"
	for i in $(seq 1 "$n"); do
		$(taccel "$NA" cli) timeout 20 socat -t 5 -T 10 - "TCP4:$IPB:$port" <"$TSDP_TMP/socat.in" \
			>"$TSDP_TMP/socat.out.$i" 2>"$TSDP_TMP/socat.err.$i" ||
			{ die "socat client $i: exit $?: $(cat "$TSDP_TMP/socat.err.$i")"; return 1; }
		cmp -s "$TSDP_TMP/socat.in" "$TSDP_TMP/socat.out.$i" ||
			{ die "socat client $i: the echo differs ($(stat -c %s "$TSDP_TMP/socat.out.$i") of 262144 bytes)"; return 1; }
	done
}

t_tcp_socat_fork() { # socat TCP-LISTEN,fork: a child per connection relays the stream its parent accepted to cat
	ip netns exec "$NB" nstat -n >/dev/null
	ip netns exec "$NA" nstat -n >/dev/null
	$(taccel "$NB" srv) timeout 60 socat -T 10 "TCP4-LISTEN:12060,bind=$IPB,reuseaddr,fork" EXEC:cat \
		>"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12060 || { die "socat did not listen"; return 1; }
	# (cat, not socat's PIPE: a socat that writes 8 KiB blocking into its
	# own full pipe stops itself, on the kernel too, whenever the stream
	# brings the bytes faster than it drains them)
	socat_echo_clients 12060 3 || return 1
	kill -TERM "$SRV"
	wait_exit "$SRV" 10
	! grep -qi 'E \|error' "$TSDP_TMP/server.out" || { die "socat server: $(cat "$TSDP_TMP/server.out")"; return 1; }
	tcp_accel srv 3 && tcp_accel cli 3 && kernel_silent "$NA" "$NB"
}

t_tcp_listen_race() { # a client connecting while the server starts listening (refused until it does) gets a connection that carries its stream: the steering and lwIP's listener exist before the kernel listens
	# a client that reached the kernel's listener in between would lose
	# its connection once the steering started (its segments steered to a
	# stack that knows no such connection): a reset or a stall here. Five
	# servers one after the other (one accelerated process per interface)
	local i p srv
	ip netns exec "$NB" nstat -n >/dev/null
	for i in 1 2 3 4 5; do
		$(kern "$NA") timeout 30 python3 "$here/listenrace.py" "$IPB" $((12069 + i)) 65536 "$TSDP_TMP/race-$i.ready" \
			>"$TSDP_TMP/race-$i.txt" 2>&1 &
		p=$!
		TSDP_PIDS+=("$p")
		wait_for 10 test -e "$TSDP_TMP/race-$i.ready" || { die "listen race $i: the client never tried"; return 1; }
		$(taccel "$NB" srv) timeout 30 socat -T 10 "TCP4-LISTEN:$((12069 + i)),bind=$IPB,reuseaddr" EXEC:cat \
			>"$TSDP_TMP/race-srv-$i.out" 2>&1 &
		srv=$!
		TSDP_PIDS+=("$srv")
		wait_exit "$p" 30 || { die "listen race $i: client did not finish"; return 1; }
		[ "$WAIT_RC" = 0 ] || { die "listen race $i: $(cat "$TSDP_TMP/race-$i.txt")"; return 1; }
		grep -q ', echoed 65536 of 65536, intact' "$TSDP_TMP/race-$i.txt" ||
			{ die "listen race $i: $(cat "$TSDP_TMP/race-$i.txt")"; return 1; }
		# the client was there before the server: refused first
		! grep -q '^attempts 1,' "$TSDP_TMP/race-$i.txt" ||
			{ die "listen race $i: the client's first connect succeeded: it did not race the listen"; return 1; }
		wait_exit "$srv" 15 || { die "listen race $i: socat did not end with its connection"; return 1; }
	done
	log "$CUR: $(cat "$TSDP_TMP"/race-*.txt | tr '\n' ';')"
	# (the server's kernel refuses the early SYNs with resets: only a
	# connection it accepted would be wrong)
	[ "$(kstat "$NB" TcpPassiveOpens)" = 0 ] ||
		{ die "the server's kernel accepted $(kstat "$NB" TcpPassiveOpens) connections"; return 1; }
	tcp_accel srv 5 rx
}

t_tcp_require() { # a stream the stack cannot carry fails loudly under REQUIRE, else uses the kernel, counted
	ip netns exec "$NA" env TICKSTACK_TCP=1 TICKSTACK_REQUIRE=1 "$RUN" timeout 10 sockperf pp --tcp -i 127.0.0.1 -p 12005 -t 1 \
		>"$TSDP_TMP/client.out" 2>&1
	grep -q "TICKSTACK_REQUIRE=1: stream socket fd" "$TSDP_TMP/client.out" ||
		{ die "REQUIRE did not refuse a loopback connection clearly"; return 1; }
	ip netns exec "$NA" env TICKSTACK_TCP=1 TICKSTACK_STATS_FILE="$TSDP_TMP"/stats-lo-%p.txt "$RUN" \
		timeout 10 sockperf pp --tcp -i 127.0.0.1 -p 12005 -t 1 >"$TSDP_TMP/client.out" 2>&1
	grep -q "conns_kernel=1" "$TSDP_TMP"/stats-lo-*.txt || { die "the kernel fallback was not counted"; return 1; }
	ip netns exec "$NA" env TICKSTACK_TCP=maybe "$RUN" true 2>"$TSDP_TMP/client.out"
	grep -q "invalid TICKSTACK_TCP=maybe" "$TSDP_TMP/client.out" || { die "bad TICKSTACK_TCP not reported"; return 1; }
}

# port_twice SRV-PREFIX CLI-PREFIX PORT LPORT TAG: two client processes in
# a row from local port LPORT to a greet-server that closes first, so that
# it holds the first connection in TIME_WAIT when the second SYN comes: the
# second connects at once, as between two kernels (a refused SYN would
# cost at least one SYN retransmission, 1 s)
port_twice() {
	local srv=$1 cli=$2 port=$3 lport=$4 tag=$5 p i ms
	$srv timeout 30 "$B"/tcpcheck greet-server "$port" 2 >"$TSDP_TMP/$tag-srv.out" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: server did not listen"; return 1; }
	for i in 1 2; do
		$cli timeout 20 "$B"/tcpcheck port-client "$IPB" "$port" "$lport" >"$TSDP_TMP/$tag-cli$i.out" \
			2>"$TSDP_TMP/$tag-cli$i.err" || { die "$tag: client $i: exit code $?: $(cat "$TSDP_TMP/$tag-cli$i.err")"; return 1; }
		grep -q '^client: read hi then EOF$' "$TSDP_TMP/$tag-cli$i.out" || { die "$tag: client $i got no greeting"; return 1; }
		ms=$(sed -n 's/^connect ms //p' "$TSDP_TMP/$tag-cli$i.err")
		[ "${ms:-99999}" -lt 900 ] || { die "$tag: client $i took ${ms:-?} ms to connect"; return 1; }
		log "$CUR: $tag: client $i from port $lport connected in $ms ms"
	done
	wait_exit "$p" 10 && [ "$WAIT_RC" = 0 ] || { die "$tag: server exit code $WAIT_RC"; return 1; }
}

t_tcp_port_reuse() { # two client processes in a row on one local port: the second connects at once while the server holds TIME_WAIT
	port_twice "$(kern "$NB")" "$(kern "$NA")" 12050 42050 kernel || return 1
	port_twice "$(taccel "$NB" srv)" "$(taccel "$NA" cli)" 12051 42051 stack || return 1
	tcp_accel srv 2 tx && conns_through_xsk cli 2 || return 1
	port_twice "$(kern "$NB")" "$(taccel "$NA" cli)" 12052 42052 stack-kernel-server || return 1
	port_twice "$(taccel "$NB" srv)" "$(kern "$NA")" 12053 42053 kernel-client
}

# isn_check TAG: the ISNs a kernel server saw (tcpcheck greet-server ...
# isn, in $TSDP_TMP/TAG-srv.out): the first two are one 4-tuple from two
# processes in a row and differ, the second above the first by the clock
# (less than 2^31 ahead); the others, one process each from other local
# ports, are no counter: most steps between successive ones are large
isn_check() {
	awk -v tag="$1" 'BEGIN { n = 0; big = 0 } $1 == "isn" { port[n] = $2; isn[n++] = $3 }
	END {
		if (n < 10) { print tag ": " n " ISNs, want 10"; exit 1 }
		if (port[0] != port[1]) { print tag ": the first two came from different ports"; exit 1 }
		d = (isn[1] - isn[0] + 4294967296) % 4294967296
		if (d == 0 || d >= 2147483648) { print tag ": same 4-tuple: ISN " isn[0] " then " isn[1]; exit 1 }
		for (i = 3; i < n; i++) {
			s = (isn[i] - isn[i - 1] + 4294967296) % 4294967296
			if (s > 16777216 && s < 4294967296 - 16777216) big++
		}
		if (big < 5) { print tag ": ISNs of successive 4-tuples step by less than 2^24 " (7 - big) " times of 7: a counter"; exit 1 }
		print tag ": same 4-tuple ISNs " isn[0] " then " isn[1] " (+" d "), " big " of 7 steps across 4-tuples above 2^24"
	}' "$TSDP_TMP/$1-srv.out"
}

isn_run() { # isn_run CLI-PREFIX PORT TAG: ten client processes against a kernel server printing ISNs
	local cli=$1 port=$2 tag=$3 p i
	$(kern "$NB") timeout 60 "$B"/tcpcheck greet-server "$port" 10 isn >"$TSDP_TMP/$tag-srv.out" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: server did not listen"; return 1; }
	for i in 0 0 1 2 3 4 5 6 7 8; do
		$cli timeout 20 "$B"/tcpcheck port-client "$IPB" "$port" $((43000 + port % 100 * 10 + i)) \
			>/dev/null 2>"$TSDP_TMP/$tag-cli.err" || { die "$tag: client: exit code $?: $(cat "$TSDP_TMP/$tag-cli.err")"; return 1; }
	done
	wait_exit "$p" 10 && [ "$WAIT_RC" = 0 ] || { die "$tag: server exit code $WAIT_RC: $(cat "$TSDP_TMP/$tag-srv.out")"; return 1; }
	log "$CUR: $(isn_check "$tag")" && isn_check "$tag" >/dev/null || { die "$(isn_check "$tag")"; return 1; }
}

t_tcp_isn() { # initial sequence numbers as RFC 6528 has them: per 4-tuple unpredictable, rising with a clock, on the kernel and through the stack
	isn_run "$(kern "$NA")" 12054 kernel || return 1
	isn_run "$(taccel "$NA" cli)" 12055 stack || return 1
	conns_through_xsk cli 10
}

t_tcp_txcsum() { # TCP checksums left to the interface (AF_XDP TX metadata) are right: with both links' TX checksumming off the kernel finishes each from the stack's pseudo-header sum, and a bypass receiver, then a kernel receiver, verify every one
	txcsum_run 1500 12060
}

t_tcp_txcsum_jumbo() { # tcp_txcsum on MTU-9000 links: a jumbo segment, a chain of frames, carries its checksum request in its first frame's TX metadata, and the kernel finishes the sum over the whole chain
	txcsum_run 9000 12070
}

# txcsum_run MTU PORT: tcp_txcsum on links of MTU bytes
txcsum_run() {
	local d ifc srv pre mtu=$1 port=$2
	for d in "$NA" "$NB"; do
		ifc=$(ip -n "$d" -br link | awk '/^tsdp/ {sub(/@.*/, "", $1); print $1}')
		ip netns exec "$d" ethtool -K "$ifc" tx off >/dev/null || { die "ethtool -K $ifc tx off"; return 1; }
		ip -n "$d" link set "$ifc" mtu "$mtu" || { die "mtu $mtu on $ifc"; return 1; }
	done
	head -c 16M /dev/urandom >"$TSDP_TMP/in"
	for srv in accel kern; do
		rm -f "$TSDP_TMP"/out "$TSDP_TMP"/stats-*
		port=$((port + 1))
		if [ $srv = accel ]; then pre=$(taccel "$NB" srv); else pre=$(kern "$NB"); fi
		$pre "${CPU_SRV[@]}" "$B"/tcpcheck recv-server $port "$TSDP_TMP/out" >"$TSDP_TMP/server.out" 2>&1 &
		SRV=$!
		TSDP_PIDS+=("$SRV")
		wait_for 10 tcp_listening "$NB" $port || { die "$srv receiver did not listen"; return 1; }
		$(taccel "$NA" cli) "${CPU_CLI[@]}" timeout 120 "$B"/tcpcheck send-client "$IPB" $port "$TSDP_TMP/in" \
			>"$TSDP_TMP/client.out" 2>&1 || { die "$srv receiver: client exit code $? (segments refused?)"; return 1; }
		wait_exit "$SRV" 60 && [ "$WAIT_RC" = 0 ] || { die "$srv receiver: server failed ($WAIT_RC)"; return 1; }
		cmp -s "$TSDP_TMP/in" "$TSDP_TMP/out" || { die "$srv receiver: the bytes differ"; return 1; }
		grep -q "tx_csum=offload" "$TSDP_TMP"/stats-cli-*.txt ||
			{ die "the client summed its checksums itself: $(grep '^xsk' "$TSDP_TMP"/stats-cli-*.txt)"; return 1; }
		tcp_accel cli 1 tx || return 1
		# on a jumbo link the segments went out as chains of frames
		[ "$mtu" -le 1500 ] || [ "$(stat_sum "$TSDP_TMP/stats-cli-*.txt" tx_multibuf xsk)" -gt 0 ] ||
			{ die "no jumbo segment went out as a chain: $(grep -h '^xsk' "$TSDP_TMP"/stats-cli-*.txt)"; return 1; }
		if [ $srv = accel ]; then
			tcp_accel srv 1 rx || return 1
			[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_bad_csum xsk)" = 0 ] || { die "the stack refused checksums"; return 1; }
			# the kernel finished every sum: none reached the receiver partial
			[ "$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_csum_completed tcp)" = 0 ] ||
				{ die "partial checksums reached the receiver with TX checksumming off"; return 1; }
		else
			[ "$(kstat "$NB" TcpInCsumErrors)" = 0 ] || { die "the kernel receiver counted checksum errors"; return 1; }
		fi
	done
}

# ---- integrity under loss: A - router R - B, R drops at random

loss_topology() {
	tsdp_ns NA a
	tsdp_ns NB b
	tsdp_ns NR r
	tsdp_pair "$NA" "$NR" 198.18.20 v"${TSDP_ID}"ar v"${TSDP_ID}"ra
	tsdp_pair "$NR" "$NB" 198.18.21 v"${TSDP_ID}"rb v"${TSDP_ID}"br
	ip -n "$NA" route add default via 198.18.20.2
	ip -n "$NB" route add default via 198.18.21.1
	ip netns exec "$NR" sysctl -qw net.ipv4.ip_forward=1
	IPB=198.18.21.2
}

# loss_why: after a failed transfer, what each accelerated namespace's
# kernel did (a reset or abort there means a segment missed the XSK)
loss_why() {
	local ns
	for ns in "$NA" "$NB"; do
		echo "---- kernel TCP counters of $ns (nonzero)" >&2
		ip netns exec "$ns" nstat -asz 2>/dev/null | awk '$1 ~ /^Tcp/ && $2 != 0' >&2
	done
}

# transfer DIRECTION PORT: DIRECTION up (A sends to B) or down (B to A)
transfer() {
	local dir=$1 port=$2 s e
	rm -f "$TSDP_TMP"/out "$TSDP_TMP"/stats-*
	if [ "$dir" = up ]; then
		$(taccel "$NB" srv) "$B"/tcpcheck recv-server "$port" "$TSDP_TMP/out" >"$TSDP_TMP/server.out" 2>&1 &
	else
		$(taccel "$NB" srv) "$B"/tcpcheck send-server "$port" "$TSDP_TMP/in" >"$TSDP_TMP/server.out" 2>&1 &
	fi
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" "$port" || { die "server did not listen"; return 1; }
	s=$(date +%s%N)
	if [ "$dir" = up ]; then
		$(taccel "$NA" cli) timeout 900 "$B"/tcpcheck send-client "$IPB" "$port" "$TSDP_TMP/in" >"$TSDP_TMP/client.out" 2>&1
	else
		$(taccel "$NA" cli) timeout 900 "$B"/tcpcheck recv-client "$IPB" "$port" "$TSDP_TMP/out" >"$TSDP_TMP/client.out" 2>&1
	fi || { die "$dir: client exit code $?: $(tail -n 3 "$TSDP_TMP/client.out" | tr '\n' ' ')"; loss_why; return 1; }
	wait_exit "$SRV" 60 || { die "$dir: server did not finish"; loss_why; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "$dir: server exit code $WAIT_RC: $(tail -n 3 "$TSDP_TMP/server.out" | tr '\n' ' ')"; loss_why; return 1; }
	e=$(date +%s%N)
	[ "$(sha256sum <"$TSDP_TMP/out")" = "$IN_SUM" ] || { die "$dir: sha256 differs"; return 1; }
	if [ "$dir" = up ]; then
		tcp_accel cli 1 tx && tcp_accel srv 1 rx || return 1
	else
		tcp_accel cli 1 rx && tcp_accel srv 1 tx || return 1
	fi
	LOSS_ER=$(stat_sum "$TSDP_TMP/stats-*.txt" early_rexmits tcp)
	log "$CUR: $dir ${LOSS_MIB} MiB intact in $(((e - s) / 1000000)) ms, router dropped" \
		"$(ip netns exec "$NR" iptables -nvxL FORWARD | awk '/statistic/ {print $1}') packets," \
		"NewReno retransmissions $(stat_sum "$TSDP_TMP/stats-*.txt" newreno_rexmits tcp)," \
		"early retransmits $LOSS_ER"
}

# 256 MiB each way at 1 % loss, sha256 compared; 32 MiB at 5 %, where lwIP
# (no SACK) recovers most losses by its retransmission timer: about 2,000
# drops each way already, and 256 MiB took 100-185 s a direction
t_tcp_loss() { # 256 MiB each way, sha256 compared, through a router dropping 1 %; 32 MiB at 5 %
	local p mib
	command -v iptables >/dev/null || { die "iptables not installed"; return 1; }
	loss_topology
	for p in 0.01 0.05; do
		mib=$TCP_LOSS_MIB
		[ "$p" = 0.05 ] && mib=$TCP_LOSS5_MIB
		head -c "${mib}M" /dev/urandom >"$TSDP_TMP/in"
		IN_SUM=$(sha256sum <"$TSDP_TMP/in")
		LOSS_MIB=$mib
		ip netns exec "$NR" iptables -F FORWARD
		ip netns exec "$NR" iptables -A FORWARD -m statistic --mode random --probability $p -j DROP
		transfer up 12010 || return 1
		ip netns exec "$NR" iptables -Z FORWARD
		transfer down 12011 || return 1
	done
	kernel_silent "$NA" "$NB"
}

# ifbytes NS IFACE tx|rx: the interface's byte counter as the kernel keeps it
ifbytes() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/${3}_bytes"; }

# rexmit_run accel|kernel PORT: 4 MiB up from A through R, with the loss
# rules R has; RX_DROPS: the frames they dropped, TXB: the bytes A's
# interface sent meanwhile (the kernel's count)
rexmit_run() {
	local pre=$1 port=$2 tx0
	ip netns exec "$NR" iptables -Z FORWARD
	tx0=$(ifbytes "$NA" tsdpv"${TSDP_ID}"ar tx)
	transfer_plain "$pre" "$port" || return 1
	RX_DROPS=$(ip netns exec "$NR" iptables -nvxL FORWARD | awk '/statistic/ {s += $1} END {print s + 0}')
	TXB=$(($(ifbytes "$NA" tsdpv"${TSDP_ID}"ar tx) - tx0))
}

# transfer_plain accel|kernel PORT: A sends $TSDP_TMP/in to B, compared
transfer_plain() {
	local ka kb
	ka=$(kern "$NA")
	kb=$(kern "$NB")
	if [ "$1" = accel ]; then
		ka=$(taccel "$NA" cli)
		kb=$(taccel "$NB" srv)
	fi
	rm -f "$TSDP_TMP"/out "$TSDP_TMP"/stats-*
	$kb "$B"/tcpcheck recv-server "$2" "$TSDP_TMP/out" >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" "$2" || { die "server did not listen"; return 1; }
	$ka timeout 120 "$B"/tcpcheck send-client "$IPB" "$2" "$TSDP_TMP/in" >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?: $(tail -n 3 "$TSDP_TMP/client.out" | tr '\n' ' ')"; return 1; }
	wait_exit "$SRV" 60 && [ "$WAIT_RC" = 0 ] || { die "server exit code $WAIT_RC"; return 1; }
	[ "$(sha256sum <"$TSDP_TMP/out")" = "$IN_SUM" ] || { die "sha256 differs"; return 1; }
}

t_tcp_rexmit() { # every dropped data segment is retransmitted and counted (rexmit_segs, as the kernel's TcpRetransSegs); the XSK's byte counters match the interface's
	local k0 k1 kr rs txb rxb
	command -v iptables >/dev/null || { die "iptables not installed"; return 1; }
	loss_topology
	head -c 4M /dev/urandom >"$TSDP_TMP/in"
	IN_SUM=$(sha256sum <"$TSDP_TMP/in")
	# frames from A longer than a bare ACK (with timestamps: 66 bytes),
	# and A's first SYN of each connection (a SYN resent by the timer)
	ip netns exec "$NR" iptables -A FORWARD -i tsdpv"${TSDP_ID}"ra -m length --length 200:65535 \
		-m statistic --mode nth --every 25 --packet 0 -j DROP
	ip netns exec "$NR" iptables -A FORWARD -i tsdpv"${TSDP_ID}"ra -p tcp --syn \
		-m statistic --mode nth --every 2 --packet 0 -j DROP
	# the reference: the kernel on both ends, its TcpRetransSegs
	k0=$(kstat "$NA" TcpRetransSegs)
	rexmit_run kernel 12020 || return 1
	k1=$(kstat "$NA" TcpRetransSegs)
	kr=$((k1 - k0))
	log "$CUR: kernel: router dropped $RX_DROPS frames, TcpRetransSegs +$kr"
	[ "$RX_DROPS" -gt 0 ] && [ "$kr" -ge "$RX_DROPS" ] ||
		{ die "kernel reference: $kr retransmissions for $RX_DROPS drops"; return 1; }
	# the stack on both ends
	rexmit_run accel 12021 || return 1
	tcp_accel cli 1 tx && tcp_accel srv 1 rx || return 1
	rs=$(stat_sum "$TSDP_TMP/stats-cli-*.txt" rexmit_segs tcp)
	log "$CUR: stack: router dropped $RX_DROPS frames, rexmit_segs $rs" \
		"(newreno $(stat_sum "$TSDP_TMP/stats-cli-*.txt" newreno_rexmits tcp)," \
		"early $(stat_sum "$TSDP_TMP/stats-cli-*.txt" early_rexmits tcp))"
	[ "$RX_DROPS" -gt 0 ] && [ "$rs" -ge "$RX_DROPS" ] ||
		{ die "stack: rexmit_segs $rs for $RX_DROPS dropped segments"; return 1; }
	# a transfer without loss retransmits nothing
	ip netns exec "$NR" iptables -F FORWARD
	rexmit_run accel 12022 || return 1
	rs=$(stat_sum "$TSDP_TMP/stats-cli-*.txt" rexmit_segs tcp)
	[ "$rs" = 0 ] || { die "stack: rexmit_segs $rs without loss"; return 1; }
	# bytes: what the client's XSK sent is what its interface sent (the
	# kernel's own ARP or neighbour probes aside), the server took the file
	txb=$(stat_sum "$TSDP_TMP/stats-cli-*.txt" tx_bytes xsk)
	rxb=$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_bytes xsk)
	log "$CUR: client XSK tx_bytes $txb, its interface $TXB; server XSK rx_bytes $rxb"
	[ "$txb" -le "$TXB" ] && [ "$txb" -ge $((TXB - 1000)) ] ||
		{ die "client XSK tx_bytes $txb, the interface sent $TXB"; return 1; }
	[ "$rxb" -gt $((4 * 1048576)) ] || { die "server XSK rx_bytes $rxb, below the file's 4 MiB"; return 1; }
}

# shellcheck disable=SC2034 # harness.sh reads it
TCP_ALL="tcp_socat_fork tcp_listen_race tcp_tailwin tcp_pp_both tcp_pp_kernel_server tcp_pp_kernel_client tcp_under_load tcp_throughput tcp_cycles tcp_fix tcp_vs_kernel tcp_backlog tcp_timeouts tcp_prefork tcp_require tcp_port_reuse tcp_isn tcp_txcsum tcp_txcsum_jumbo tcp_loss tcp_rexmit"
