# shellcheck shell=bash disable=SC2154,SC2153 # here, TSDP_ID: set by harness.sh and lib.sh
# tests/inspect.sh - the inspection tools' cases of the harness (sourced by
# harness.sh, which provides new_pair, accel, kern, die, log, wait_for,
# wait_exit and the cleanup): tickstack-dump captures what a process's XSKs
# carry, both ways, into pcapng that tshark and tcpdump read; its filter,
# its limits and its drop count when the reader stalls; tickstack-stackdump
# lists the process's sockets and rings (docs/dataplane.md, "Seeing inside
# the bypass").

# shellcheck disable=SC2034 # harness.sh reads it
INSPECT_ALL="dump_udp dump_tcp dump_filter dump_drops dump_reattach stackdump filldepth"
DUMP=$B/tickstack-dump
SDUMP=$B/tickstack-stackdump

inspect_tools() {
	local t
	for t in tshark tcpdump; do
		command -v $t >/dev/null || { fail_or_skip "$t not installed (hack/install-deps.sh)"; return 1; }
	done
	[ -x "$DUMP" ] && [ -x "$SDUMP" ] || { die "$DUMP or $SDUMP missing: make -C dataplane all"; return 1; }
}

# proc_of PATTERN: the pid of the newest process whose command line matches
proc_of() { pgrep -n -f "$1"; }

# dump_start PID FILE [ARGS...]: tickstack-dump in the background (DUMP_PID),
# attached once it says so
dump_start() {
	local pid=$1 file=$2
	shift 2
	: >"$TSDP_TMP/dump.out" # emptied before the wait below reads it
	"$DUMP" -p "$pid" -w "$file" "$@" 2>>"$TSDP_TMP/dump.out" &
	DUMP_PID=$!
	TSDP_PIDS+=("$DUMP_PID")
	wait_for 10 grep -q "capturing from" "$TSDP_TMP/dump.out" ||
		{ die "tickstack-dump did not attach: $(cat "$TSDP_TMP/dump.out")"; return 1; }
}

# dump_stop: SIGINT; it must exit 0 and print its counts
dump_stop() {
	kill -INT "$DUMP_PID" 2>/dev/null
	wait_exit "$DUMP_PID" 10 && [ "$WAIT_RC" = 0 ] || { die "tickstack-dump exit code $WAIT_RC"; return 1; }
	grep -q "frames written" "$TSDP_TMP/dump.out" || { die "tickstack-dump printed no counts"; return 1; }
}

# dump_count WHAT: a number from tickstack-dump's last line ("written",
# "captured", "dropped", "filtered")
dump_count() {
	sed -n "s/.* \([0-9]*\) $1.*/\1/p; s/.* \([0-9]*\) frames $1.*/\1/p" "$TSDP_TMP/dump.out" | tail -n 1
}

# tcount FILE FILTER: frames of FILE tshark's display filter matches
tcount() { tshark -r "$1" -Y "$2" 2>/dev/null | wc -l; }

# pcap_sane FILE: tshark reads the file without error and finds nothing
# malformed; tcpdump reads the same number of frames
pcap_sane() {
	local f=$1 n m
	tshark -r "$f" >"$TSDP_TMP/tshark.txt" 2>"$TSDP_TMP/tshark.err" ||
		{ die "tshark cannot read $f: $(cat "$TSDP_TMP/tshark.err")"; return 1; }
	n=$(wc -l <"$TSDP_TMP/tshark.txt")
	[ "$(tcount "$f" _ws.malformed)" = 0 ] || { die "tshark finds malformed frames"; return 1; }
	m=$(tcpdump -nr "$f" 2>/dev/null | wc -l)
	[ "$n" = "$m" ] && [ "$n" -gt 0 ] || { die "tshark reads $n frames, tcpdump $m"; return 1; }
}

t_dump_udp() { # a UDP ping-pong captured at the server: every request in, every reply out, pcapng read by tshark and tcpdump
	local pid f=$TSDP_TMP/udp.pcapng in out sent
	inspect_tools || return 1
	start_server "$(accel "$NB" srv)" 11301 || return 1
	pid=$(proc_of "sockperf sr -i $IPB -p 11301") || { die "no server pid"; return 1; }
	dump_start "$pid" "$f" || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11301 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	dump_stop || return 1
	stop_server || return 1
	pcap_sane "$f" || return 1
	in=$(tcount "$f" "frame.packet_flags_direction == 1 && udp.dstport == 11301 && udp.length == 72")
	out=$(tcount "$f" "frame.packet_flags_direction == 2 && udp.srcport == 11301 && udp.length == 72")
	sent=$(sed -n 's/.*\[Total Run\].*SentMessages=\([0-9]*\).*/\1/p' "$TSDP_TMP/client.out")
	log "$CUR: client sent ${sent:-?}, captured $in in, $out out; $(tail -n 1 "$TSDP_TMP/dump.out")"
	[ "$(dump_count dropped)" = 0 ] || { die "the stack dropped frames of a ping-pong"; return 1; }
	[ "${sent:-0}" -gt 100 ] && [ "$in" = "$sent" ] && [ "$out" = "$sent" ] ||
		{ die "captured $in in and $out out of ${sent:-?} round trips"; return 1; }
	check_accel srv
}

t_dump_tcp() { # a TCP ping-pong captured at the client: handshake and data both ways, tshark finds the stream whole
	local pid f=$TSDP_TMP/tcp.pcapng syn synack din dout fin_in fin_out rst_in
	inspect_tools || return 1
	$(taccel "$NB" srv) "${CPU_SRV[@]}" sockperf sr --tcp -i "$IPB" -p 12301 >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12301 || { die "server did not listen"; return 1; }
	pid=$(proc_of "sockperf sr --tcp -i $IPB -p 12301") || { die "no server pid"; return 1; }
	dump_start "$pid" "$f" tcp port 12301 || return 1
	$(taccel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp --tcp -i "$IPB" -p 12301 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" || return 1
	# the connection's last segments (FIN, ACK): captured once the server's
	# stack, which sees them after the capture does, has closed the connection
	wait_for 10 sd_only_listener "$pid" || { die "the server's connection did not close"; return 1; }
	dump_stop || return 1
	stop_server || return 1
	pcap_sane "$f" || return 1
	syn=$(tcount "$f" "frame.packet_flags_direction == 1 && tcp.flags.syn == 1 && tcp.flags.ack == 0")
	synack=$(tcount "$f" "frame.packet_flags_direction == 2 && tcp.flags.syn == 1 && tcp.flags.ack == 1")
	din=$(tcount "$f" "frame.packet_flags_direction == 1 && tcp.len > 0")
	dout=$(tcount "$f" "frame.packet_flags_direction == 2 && tcp.len > 0")
	log "$CUR: SYN in $syn, SYN-ACK out $synack, data segments in $din, out $dout; $(tail -n 1 "$TSDP_TMP/dump.out")"
	[ "$syn" -ge 1 ] && [ "$synack" -ge 1 ] && [ "$din" -gt 100 ] && [ "$dout" -gt 100 ] ||
		{ die "handshake or data missing"; return 1; }
	# the connection's end: the client's FIN and the server's, or the client's
	# RST (sockperf may exit with its last reply unread: close() then resets,
	# on the kernel as here)
	fin_in=$(tcount "$f" "frame.packet_flags_direction == 1 && tcp.flags.fin == 1")
	rst_in=$(tcount "$f" "frame.packet_flags_direction == 1 && tcp.flags.reset == 1")
	fin_out=$(tcount "$f" "frame.packet_flags_direction == 2 && tcp.flags.fin == 1")
	{ [ "$fin_in" -ge 1 ] && [ "$fin_out" -ge 1 ]; } || [ "$rst_in" -ge 1 ] ||
		{ die "the connection's end is missing (FIN in $fin_in, out $fin_out, RST in $rst_in)"; return 1; }
	# every data segment tshark sees is in order: nothing lost or reordered
	# between the stack and the file (a retransmission is the stack's own,
	# sent again and captured again: on a loaded machine lwIP may make one)
	[ "$(tcount "$f" "tcp.analysis.lost_segment || tcp.analysis.out_of_order")" = 0 ] ||
		{ die "tshark sees lost or reordered segments: $(tshark -r "$f" -Y "tcp.analysis.lost_segment || tcp.analysis.out_of_order" 2>/dev/null | head -n 5)"; return 1; }
	tcp_accel srv 1
}

t_dump_filter() { # the pcap filter keeps only what it matches (RX only here), -c stops at a count, a bad filter is refused before anything changes
	local pid f=$TSDP_TMP/filter.pcapng n
	inspect_tools || return 1
	start_server "$(accel "$NB" srv)" 11302 || return 1
	pid=$(proc_of "sockperf sr -i $IPB -p 11302") || { die "no server pid"; return 1; }
	if "$DUMP" -p "$pid" -w "$TSDP_TMP/bad.pcapng" udp prt 5 2>"$TSDP_TMP/bad.out"; then
		die "a bad filter was accepted"; return 1
	fi
	grep -q "filter 'udp prt 5'" "$TSDP_TMP/bad.out" || { die "no message naming the filter: $(cat "$TSDP_TMP/bad.out")"; return 1; }
	[ ! -e "/dev/shm/tickstack-$pid.cap" ] && [ ! -e "$TSDP_TMP/bad.pcapng" ] || { die "a refused filter left files"; return 1; }
	dump_start "$pid" "$f" -c 50 udp dst port 11302 || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11302 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	wait_exit "$DUMP_PID" 10 && [ "$WAIT_RC" = 0 ] || { die "tickstack-dump -c 50 did not end by itself ($WAIT_RC)"; return 1; }
	stop_server || return 1
	pcap_sane "$f" || return 1
	n=$(tshark -r "$f" 2>/dev/null | wc -l)
	log "$CUR: $n frames; $(tail -n 1 "$TSDP_TMP/dump.out")"
	[ "$n" = 50 ] || { die "-c 50 wrote $n frames"; return 1; }
	[ "$(tcount "$f" "frame.packet_flags_direction == 1 && udp.dstport == 11302")" = 50 ] ||
		{ die "frames the filter should have dropped were written"; return 1; }
	[ "$(dump_count filtered)" -gt 0 ] || { die "nothing was filtered out (the replies should have been)"; return 1; }
	[ ! -e "/dev/shm/tickstack-$pid.cap" ] || { die "the capture ring was left behind"; return 1; }
}

t_dump_drops() { # a stalled reader: the stack drops and counts, never waits (every datagram still delivered), and the count is reported
	local pid f=$TSDP_TMP/drops.pcapng written captured dropped
	inspect_tools || return 1
	start_server "$(accel "$NB" srv)" 11303 || return 1
	pid=$(proc_of "sockperf sr -i $IPB -p 11303") || { die "no server pid"; return 1; }
	# a 4 KiB ring: about 40 frames
	dump_start "$pid" "$f" -B 4 || return 1
	kill -STOP "$DUMP_PID"
	# a ping-pong paces itself: a drop or a wait of the stack would show
	# as a lost reply or fewer round trips, not as the server falling behind
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11303 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ kill -CONT "$DUMP_PID"; die "client exit code $?"; return 1; }
	kill -CONT "$DUMP_PID"
	dump_stop || return 1
	check_pp_output "$TSDP_TMP/client.out" 1000 || return 1
	stop_server || return 1
	check_accel srv || return 1
	written=$(dump_count written)
	captured=$(dump_count captured)
	dropped=$(dump_count dropped)
	log "$CUR: $(tail -n 1 "$TSDP_TMP/dump.out")"
	[ "${dropped:-0}" -gt 1000 ] || { die "a stalled 4 KiB ring dropped only ${dropped:-0} frames"; return 1; }
	[ "$written" = "$captured" ] && [ "$written" -gt 0 ] || { die "captured $captured, written $written"; return 1; }
	[ "$(tshark -r "$f" 2>/dev/null | wc -l)" = "$written" ] || { die "the file does not hold the $written frames written"; return 1; }
}

# sd_only_listener PID: tickstack-stackdump shows PID's TCP sockets all listening
sd_only_listener() {
	"$SDUMP" -p "$1" -o json | python3 -c '
import json, sys
socks = json.load(sys.stdin)["processes"][0]["sockets"]
tcp = [s for s in socks if s["proto"] == "tcp"]
sys.exit(0 if tcp and all(s["state"] == "LISTEN" for s in tcp) else 1)'
}

# sd_ok PID FILE: tickstack-stackdump -o json of PID into FILE shows the
# listener and an established connection with data both ways
sd_ok() {
	"$SDUMP" -p "$1" -o json >"$2" 2>"$TSDP_TMP/sd.err" || return 1
	python3 "$here/stackdump_check.py" "$2" "$IPB" 2>>"$TSDP_TMP/sd.err"
}

t_stackdump() { # tickstack-stackdump lists a process's TCP sockets (json parsed, table), its XSK rings and UMEM, here and through /proc/PID/root
	local pid f=$TSDP_TMP/sd.json
	inspect_tools || return 1
	$(taccel "$NB" srv) "${CPU_SRV[@]}" sockperf sr --tcp -i "$IPB" -p 12302 >"$TSDP_TMP/server.out" 2>&1 &
	SRV=$!
	TSDP_PIDS+=("$SRV")
	wait_for 10 tcp_listening "$NB" 12302 || { die "server did not listen"; return 1; }
	$(taccel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp --tcp -i "$IPB" -p 12302 -t 4 -m 64 >"$TSDP_TMP/client.out" 2>&1 &
	CLI=$!
	TSDP_PIDS+=("$CLI")
	pid=$(proc_of "sockperf sr --tcp -i $IPB -p 12302") || { die "no server pid"; return 1; }
	# the client's round trips under way (a loaded machine starts it late)
	wait_for 10 sd_ok "$pid" "$f" ||
		{ die "stackdump json: $(cat "$TSDP_TMP/sd.err") $(head -c 3000 "$f")"; return 1; }
	"$SDUMP" -p "$pid" >"$TSDP_TMP/sd.txt" 2>&1 || { die "stackdump table failed"; return 1; }
	grep -q "LISTEN" "$TSDP_TMP/sd.txt" && grep -q "ESTABLISHED" "$TSDP_TMP/sd.txt" && grep -q "cwnd" "$TSDP_TMP/sd.txt" ||
		{ die "table: $(cat "$TSDP_TMP/sd.txt")"; return 1; }
	# as from the node: the process's own /dev/shm through /proc/PID/root
	"$SDUMP" -r "/proc/$pid/root" -p all -o json >"$TSDP_TMP/sd-root.json" 2>"$TSDP_TMP/sd.err" &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["processes"]) >= 2, d' "$TSDP_TMP/sd-root.json" ||
		{ die "stackdump -r /proc/$pid/root -p all: $(cat "$TSDP_TMP/sd.err")"; return 1; }
	[ ! -e "/dev/shm/tickstack-$pid.dump" ] || { die "the snapshot file was left behind"; return 1; }
	wait_exit "$CLI" 30 && [ "$WAIT_RC" = 0 ] || { die "client exit code $WAIT_RC"; return 1; }
	stop_server
}

# sd_xsk PID KEY: KEY of PID's first XSK in tickstack-stackdump's JSON
# (fill_depth: the depth its fill ring is topped up to; fill: entries now)
sd_xsk() {
	"$SDUMP" -p "$1" -o json 2>"$TSDP_TMP/sd.err" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["processes"][0]["xsks"][0][sys.argv[1]])' "$2"
}
# xsk_above PID KEY N: that value is above N
xsk_above() { local v; v=$(sd_xsk "$1" "$2") && [ "$v" -gt "$3" ]; }

t_filldepth() { # the fill ring starts as deep as TICKSTACK_FILL_FRAMES says, a ping-pong leaves it so, a sleeping receiver's is filled full, a burst that finds it three quarters used doubles it; stackdump shows it (a large SO_RCVBUF deepens it at once: conform rcvbufbig)
	local pid d
	inspect_tools || return 1
	export TICKSTACK_FILL_FRAMES=64
	start_server "$(accel "$NB" srv)" 11304 || return 1
	unset TICKSTACK_FILL_FRAMES
	pid=$(proc_of "sockperf sr -i $IPB -p 11304") || { die "no server pid"; return 1; }
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11304 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	check_pp_output "$TSDP_TMP/client.out" 1000 || return 1
	d=$(sd_xsk "$pid" fill_depth) || { die "stackdump: $(cat "$TSDP_TMP/sd.err")"; return 1; }
	[ "$d" = 64 ] || { die "fill ring $d deep after a ping-pong, not TICKSTACK_FILL_FRAMES=64"; return 1; }
	"$SDUMP" -p "$pid" | grep -q "DEPTH" || { die "the table shows no DEPTH"; return 1; }
	# idle, the server sleeps (after 100 ms of spinning): no one tops the
	# ring up while it does, so it was filled as deep as it goes first
	wait_for 10 xsk_above "$pid" fill 1000 || { die "a sleeping server's fill ring holds $(sd_xsk "$pid" fill)"; return 1; }
	# 3,200 datagrams while the server, asleep with a full ring (4,096),
	# is stopped: the next refill finds over three quarters of it used
	kill -STOP "$pid"
	ip netns exec "$NA" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3200):
    s.sendto(b"x" * 64, (sys.argv[1], 11304))' "$IPB"
	kill -CONT "$pid"
	wait_for 10 xsk_above "$pid" fill_depth 64 || { die "the fill ring stayed $(sd_xsk "$pid" fill_depth) deep after a burst"; return 1; }
	stop_server
}

t_dump_reattach() { # a reader killed with SIGKILL leaves its ring behind: the next tickstack-dump takes the process over at once and captures; from the node (-r /proc/PID/root) the process's exit ends a capture
	local pid f=$TSDP_TMP/re.pcapng
	inspect_tools || return 1
	start_server "$(accel "$NB" srv)" 11304 || return 1
	pid=$(proc_of "sockperf sr -i $IPB -p 11304") || { die "no server pid"; return 1; }
	dump_start "$pid" "$TSDP_TMP/killed.pcapng" || return 1
	kill -KILL "$DUMP_PID"
	wait "$DUMP_PID" 2>/dev/null
	[ -e "/dev/shm/tickstack-$pid.cap" ] || { die "the killed reader's ring is not there (the case tests nothing)"; return 1; }
	dump_start "$pid" "$f" -c 20 || return 1
	$(accel "$NA" cli) "${CPU_CLI[@]}" timeout 30 sockperf pp -i "$IPB" -p 11304 -t 1 -m 64 >"$TSDP_TMP/client.out" 2>&1 ||
		{ die "client exit code $?"; return 1; }
	wait_exit "$DUMP_PID" 10 && [ "$WAIT_RC" = 0 ] || { die "the second tickstack-dump did not end on -c 20 ($WAIT_RC)"; return 1; }
	[ "$(tshark -r "$f" 2>/dev/null | wc -l)" = 20 ] || { die "the second capture holds $(tshark -r "$f" 2>/dev/null | wc -l) frames"; return 1; }
	[ ! -e "/dev/shm/tickstack-$pid.cap" ] || { die "the ring was left behind"; return 1; }
	# as from the node (through /proc/PID/root, where the tool cannot ask the
	# kernel whether the pid lives): the process's exit ends the capture
	: >"$TSDP_TMP/dump-node.out"
	"$DUMP" -r "/proc/$pid/root" -p "$pid" -w "$TSDP_TMP/node.pcapng" 2>>"$TSDP_TMP/dump-node.out" &
	DUMP_PID=$!
	TSDP_PIDS+=("$DUMP_PID")
	wait_for 10 grep -q "capturing from" "$TSDP_TMP/dump-node.out" ||
		{ die "no attach through /proc/$pid/root: $(cat "$TSDP_TMP/dump-node.out")"; return 1; }
	stop_server || return 1
	wait_exit "$DUMP_PID" 5 && [ "$WAIT_RC" = 0 ] ||
		{ die "the capture did not end with the process ($WAIT_RC): $(cat "$TSDP_TMP/dump-node.out")"; return 1; }
	grep -q "frames written" "$TSDP_TMP/dump-node.out" || { die "no counts at the end"; return 1; }
}
