# shellcheck shell=bash disable=SC2154,SC2153 # here, TSDP_ID: set by harness.sh and lib.sh
# tests/programs.sh - unmodified Debian servers and clients through the
# stack (sourced by harness.sh, which provides new_pair, accel, kern, die,
# log, wait_for, stat_sum and the cleanup; tcp.sh provides taccel and
# tcp_accel). Both ends of every run are accelerated, TCP included
# (TICKSTACK_TCP=1, TICKSTACK_REQUIRE=1: a socket the stack would leave on
# the kernel fails the run). Each case runs the same programs on the kernel
# first and must observe the same result through the stack (a transcript
# compared line by line), and the kernel's own counters in both namespaces
# must show that it carried next to nothing of the stack's run: no TCP
# connection opened, no reset, at most a few segments and datagrams
# (kernel_idle). Every server runs with its own configuration and
# directories under the test's temporary directory, bound to the namespace
# address in 198.18.0.0/15.
#   prog_nginx          nginx, one process, sendfile on and off: a 64 MiB
#                       file fetched by curl (sha256 compared), wrk
#   prog_nginx_workers  the same with a master and 2 workers (fork)
#   prog_redis          redis-server, redis-benchmark -P 16 with 50 clients
#   prog_socat_tcp      socat TCP4-LISTEN,fork echoing through cat to 4 socat clients in turn
#   prog_socat_udp      socat UDP4-RECVFROM,fork echoing to 6 socat clients in turn
#                       (each child answers through the kernel: the parent
#                       holds the link's one queue)
#   prog_iperf3         iperf3 TCP (64 MiB) and UDP (5,000 datagrams)
#   prog_asyncio        tests/asyncecho.py: asyncio echo server and client

# shellcheck disable=SC2034 # harness.sh reads it
PROG_ALL="prog_nginx prog_nginx_workers prog_redis prog_socat_tcp prog_socat_udp prog_iperf3 prog_asyncio"

# pacc NS TAG: a program through the stack, as taccel, with the throughput
# profile (servers with many connections and both ends of a run share the
# machine's CPUs: short spins)
pacc() { PROFILE=throughput taccel "$1" "$2"; }

prog_need() { # prog_need PROGRAM...: installed (hack/apt-packages.txt), else the case fails
	local p
	for p in "$@"; do
		command -v "$p" >/dev/null || { die "$p not installed (hack/install-deps.sh)"; return 1; }
	done
}

# kcounters NS: the kernel's TCP and UDP counters in NS, "name value" lines
kcounters() {
	ip netns exec "$1" nstat -asz 2>/dev/null |
		awk '$1 ~ /^(Tcp(ActiveOpens|PassiveOpens|OutRsts|InSegs|OutSegs)|Udp(InDatagrams|OutDatagrams))$/ {print $1, $2}' | sort
}

ksnap() { # ksnap NS...: remember the counters kernel_idle compares with
	local ns
	for ns in "$@"; do
		kcounters "$ns" >"$TSDP_TMP/ksnap-$ns"
		ip netns exec "$ns" nstat -asz 2>/dev/null | awk 'NR > 1 {print $1, $2}' | sort >"$TSDP_TMP/ksnapall-$ns"
	done
}

# kernel_idle NS...: since ksnap, the kernel of each NS opened and accepted
# no TCP connection, sent no reset, and carried at most 16 TCP segments and
# 4 UDP datagrams each way (a connect to a neighbour the kernel has not
# resolved yet sends one UDP datagram to make it resolve; the kernel ran
# everything before, in the same namespaces)
kernel_idle() {
	local ns d
	for ns in "$@"; do
		kcounters "$ns" >"$TSDP_TMP/know-$ns"
		d=$(join "$TSDP_TMP/ksnap-$ns" "$TSDP_TMP/know-$ns" | awk '{printf "%s=%d ", $1, $3 - $2}')
		echo "$d" | awk '{
			for (i = 1; i <= NF; i++) {
				split($i, kv, "=")
				lim = kv[1] ~ /Opens|Rsts/ ? 0 : kv[1] ~ /Segs/ ? 16 : 4
				if (kv[2] > lim) { bad = bad " " kv[1] "=" kv[2] " (at most " lim ")" }
			}
			if (bad) { print bad; exit 1 }
		}' >"$TSDP_TMP/kidle" || {
			# every counter that moved, for the reason
			ip netns exec "$ns" nstat -asz 2>/dev/null | awk 'NR > 1 {print $1, $2}' | sort |
				join "$TSDP_TMP/ksnapall-$ns" - | awk '$3 != $2 {printf "%s+%d ", $1, $3 - $2}' >"$TSDP_TMP/kmoved"
			die "the kernel of $ns carried the stack's traffic:$(cat "$TSDP_TMP/kidle"); moved: $(cat "$TSDP_TMP/kmoved")"
			return 1
		}
		log "$CUR: kernel of ${ns#tsdp"$TSDP_ID"}: $d"
	done
}

# stop_pid PID SIGNAL WHAT: the server ends on SIGNAL with status 0
stop_pid() {
	kill -"$2" "$1" 2>/dev/null
	wait_exit "$1" 20 || { die "$3 did not end on SIG$2"; return 1; }
	[ "$WAIT_RC" = 0 ] || { die "$3: exit code $WAIT_RC after SIG$2"; return 1; }
}

# ---- nginx

# nginx_conf DIR PORT WORKERS SENDFILE: a configuration serving DIR/www on
# IPB:PORT; WORKERS 0 is one process (master_process off), else a master
# and WORKERS workers; every path under DIR
nginx_conf() {
	local dir=$1 port=$2 workers=$3 sendfile=$4 mp=on
	[ "$workers" = 0 ] && { mp=off; workers=1; }
	mkdir -p "$dir/tmp"
	cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process $mp;
worker_processes $workers;
# root: the workers write their statistics into the test's private directory
user root;
pid $dir/nginx.pid;
error_log $dir/error.log notice;
events { worker_connections 256; }
http {
	access_log off;
	sendfile $sendfile;
	keepalive_requests 100000;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	types { application/octet-stream bin; }
	server {
		listen $IPB:$port;
		root $TSDP_TMP/www;
	}
}
EOF
}

# nginx_run SRV-PREFIX CLI-PREFIX WRK-PREFIX PORT WORKERS SENDFILE TAG:
# nginx started under SRV-PREFIX; curl fetches the 64 MiB file and wrk
# loads the small one for 1 s; what they saw (sha256 compared, wrk's
# requests and errors) in $TSDP_TMP/TAG.txt
nginx_run() {
	local srv=$1 cli=$2 wrk=$3 port=$4 workers=$5 sendfile=$6 tag=$7 dir=$TSDP_TMP/nginx-$7 p sum n
	rm -rf "$dir"
	mkdir -p "$dir"
	nginx_conf "$dir" "$port" "$workers" "$sendfile"
	$srv nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$TSDP_TMP/$tag-nginx.out" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: nginx did not listen: $(cat "$dir/error.log")"; return 1; }
	if [ "$workers" != 0 ]; then
		wait_for 10 sh -c "[ \$(pgrep -c -P $p) -ge $workers ]" || { die "$tag: nginx started no $workers workers"; return 1; }
	fi
	sum=$($cli timeout 60 curl -sS --fail --max-time 15 "http://$IPB:$port/big.bin" 2>"$TSDP_TMP/$tag-curl.err" | sha256sum)
	if [ "$sum" = "$BIG_SUM" ]; then
		echo "curl: 64 MiB, sha256 as sent" >"$TSDP_TMP/$tag.txt"
	else
		echo "curl: sha256 differs: $(cat "$TSDP_TMP/$tag-curl.err")" >"$TSDP_TMP/$tag.txt"
	fi
	$wrk timeout 30 wrk -t 2 -c 16 -d 1s "http://$IPB:$port/small.bin" >"$TSDP_TMP/$tag-wrk.out" 2>&1 ||
		echo "wrk: exit code $?" >>"$TSDP_TMP/$tag.txt"
	n=$(awk '/requests in/ {print $1}' "$TSDP_TMP/$tag-wrk.out")
	[ "${n:-0}" -gt 0 ] && echo "wrk: requests answered" >>"$TSDP_TMP/$tag.txt" ||
		echo "wrk: no request answered" >>"$TSDP_TMP/$tag.txt"
	grep -E 'Socket errors|Non-2xx' "$TSDP_TMP/$tag-wrk.out" | sed 's/^ */wrk: /' >>"$TSDP_TMP/$tag.txt"
	stop_pid "$p" TERM "$tag: nginx" || return 1
	grep -E '\[(error|crit|alert|emerg)\]' "$dir/error.log" | sed 's/^[0-9/]* [0-9:]* /nginx: /; s/ [0-9]*#[0-9]*: / /' |
		sed 's/, client: .*//' | sort -u >>"$TSDP_TMP/$tag.txt"
	log "$CUR: $tag: wrk $n requests in 1 s"
}

nginx_case() { # nginx_case WORKERS PORT: sendfile on and off, kernel then stack
	local workers=$1 port=$2 sf
	prog_need nginx curl wrk || return 1
	mkdir -p "$TSDP_TMP/www"
	head -c 64M /dev/urandom >"$TSDP_TMP/www/big.bin"
	head -c 4096 /dev/urandom >"$TSDP_TMP/www/small.bin"
	BIG_SUM=$(sha256sum <"$TSDP_TMP/www/big.bin")
	for sf in on off; do
		nginx_run "$(kern "$NB")" "$(kern "$NA")" "$(kern "$NA")" "$port" "$workers" $sf kernel-sendfile-$sf || return 1
		port=$((port + 1))
		ksnap "$NA" "$NB"
		rm -f "$TSDP_TMP"/stats-*
		nginx_run "$(pacc "$NB" srv)" "$(pacc "$NA" cli)" "$(pacc "$NA" wrk)" $port "$workers" $sf stack-sendfile-$sf || return 1
		port=$((port + 1))
		same_as_kernel sendfile-$sf || return 1
		# curl's connection, and wrk's 16
		tcp_accel srv 17 && tcp_accel cli 1 && tcp_accel wrk 16 && kernel_idle "$NA" "$NB" || return 1
	done
}

t_prog_nginx() { # nginx in one process, sendfile on and off: curl (64 MiB, sha256) and wrk
	nginx_case 0 15000
}

t_prog_nginx_workers() { # nginx, a master and 2 workers, sendfile on and off: curl (64 MiB, sha256) and wrk
	nginx_case 2 15010
}

# ---- redis

# redis_run SRV-PREFIX CLI-PREFIX PORT TAG: redis-server under SRV-PREFIX,
# redis-benchmark pipelined (-P 16) with 50 clients, then redis-cli reads
# what the commands left; the transcript in $TSDP_TMP/TAG.txt
redis_run() {
	local srv=$1 cli=$2 port=$3 tag=$4 dir=$TSDP_TMP/redis-$4 p t
	mkdir -p "$dir"
	$srv redis-server --bind "$IPB" --port "$port" --save '' --appendonly no --dir "$dir" --daemonize no \
		--protected-mode no --logfile "$dir/redis.log" >"$TSDP_TMP/$tag-redis.out" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: redis-server did not listen: $(tail -n 5 "$dir/redis.log")"; return 1; }
	$cli timeout 60 redis-benchmark -h "$IPB" -p "$port" -c 50 -n 20000 -P 16 -t set,get,incr,lpush,lpop \
		--csv >"$TSDP_TMP/$tag-bench.out" 2>&1 || echo "redis-benchmark: exit code $?" >"$TSDP_TMP/$tag.txt"
	{
		for t in SET GET INCR LPUSH LPOP; do
			grep -q "^\"$t\",\"[0-9.]*\"" "$TSDP_TMP/$tag-bench.out" && echo "redis-benchmark: $t done" ||
				echo "redis-benchmark: no $t result"
		done
		grep -i 'error' "$TSDP_TMP/$tag-bench.out" | head -n 3
	} >>"$TSDP_TMP/$tag.txt"
	# what the commands left: INCR 20,000 times, as many LPUSH as LPOP
	{
		echo "dbsize $($cli timeout 10 redis-cli -h "$IPB" -p "$port" dbsize)"
		echo "counter $($cli timeout 10 redis-cli -h "$IPB" -p "$port" get counter:__rand_int__)"
		echo "llen $($cli timeout 10 redis-cli -h "$IPB" -p "$port" llen mylist)"
	} >>"$TSDP_TMP/$tag.txt"
	stop_pid "$p" TERM "$tag: redis-server" || return 1
	log "$CUR: $tag: $(tr '\n' ' ' <"$TSDP_TMP/$tag-bench.out" | cut -c1-300)"
}

t_prog_redis() { # redis-server and redis-benchmark -P 16 -c 50 (SET, GET, INCR, LPUSH, LPOP), then redis-cli
	prog_need redis-server redis-benchmark redis-cli || return 1
	redis_run "$(kern "$NB")" "$(kern "$NA")" 15020 kernel-redis || return 1
	ksnap "$NA" "$NB"
	redis_run "$(pacc "$NB" srv)" "$(pacc "$NA" cli)" 15021 stack-redis || return 1
	same_as_kernel redis || return 1
	tcp_accel srv 50 && tcp_accel cli 50 && kernel_idle "$NA" "$NB"
}

# ---- socat in fork mode

# socat_run SRV-PREFIX CLI-PREFIX PROTO PORT TAG: a socat server in fork
# mode echoing (TCP: through `cat`, the usual shape of a fork-per-connection
# relay; UDP: PIPE) and socat clients one after the other (each client
# process takes the link's one queue in turn: an XSK per queue and process),
# each with its own data; the transcript in $TSDP_TMP/TAG.txt
socat_run() {
	local srv=$1 cli=$2 proto=$3 port=$4 tag=$5 p i n
	if [ "$proto" = tcp ]; then
		# -t 10: after the client's end, a child keeps echoing what cat
		# still holds for up to 10 s (socat's 0.5 s default cuts the echo
		# short on a loaded machine, on the kernel too). Not PIPE: socat
		# writes its 8 KiB blocks into its own pipe once select says it has
		# room for one page, and blocks there for good when its socket
		# cannot take the pipe's other end (seen through the stack's
		# forked streams, whose unix socket buffers are smaller than a
		# kernel TCP socket's; a socat limit, not a stream's)
		$srv socat -t 10 TCP4-LISTEN:"$port",bind="$IPB",fork,reuseaddr EXEC:cat >"$TSDP_TMP/$tag-socat.out" 2>&1 &
		p=$!
		TSDP_PIDS+=("$p")
		wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: socat did not listen"; return 1; }
		n=4
	else
		# a child per datagram, which ends after 1 s without another
		$srv socat -T 1 UDP4-RECVFROM:"$port",bind="$IPB",fork PIPE >"$TSDP_TMP/$tag-socat.out" 2>&1 &
		p=$!
		TSDP_PIDS+=("$p")
		wait_for 10 udp_listening "$NB" "$port" || { die "$tag: socat did not listen"; return 1; }
		n=6
	fi
	: >"$TSDP_TMP/$tag.txt"
	for i in $(seq 1 $n); do
		if [ "$proto" = tcp ]; then
			# 1 MiB each; after its end the client waits up to 5 s for the rest of the echo
			$cli timeout 15 socat -t 5 - TCP4:"$IPB:$port" <"$TSDP_TMP/in$i" >"$TSDP_TMP/$tag-out$i" 2>"$TSDP_TMP/$tag-cli$i.err"
		else
			# one 1,000-byte datagram each; the reply within 1 s (the
			# children of the ones before are still alive)
			$cli timeout 30 socat -t 1 - UDP4-SENDTO:"$IPB:$port" <"$TSDP_TMP/in$i" >"$TSDP_TMP/$tag-out$i" 2>"$TSDP_TMP/$tag-cli$i.err"
		fi || echo "client $i: exit code $?: $(head -c 200 "$TSDP_TMP/$tag-cli$i.err")" >>"$TSDP_TMP/$tag.txt"
		if cmp -s "$TSDP_TMP/in$i" "$TSDP_TMP/$tag-out$i"; then
			echo "client $i: $(stat -c %s "$TSDP_TMP/in$i") bytes echoed intact"
		else
			echo "client $i: echo differs: $(stat -c %s "$TSDP_TMP/$tag-out$i") of $(stat -c %s "$TSDP_TMP/in$i") bytes"
		fi >>"$TSDP_TMP/$tag.txt"
	done
	# every child has ended (UDP: after its 1 s of silence)
	wait_for 10 sh -c "! pgrep -P $p >/dev/null" || echo "server: a child did not end" >>"$TSDP_TMP/$tag.txt"
	grep -v ' W ' "$TSDP_TMP/$tag-socat.out" | sed 's/^[0-9/]* [0-9:]* socat\[[0-9]*\] /socat: /' | head -n 5 >>"$TSDP_TMP/$tag.txt"
	# socat's parent ends on SIGTERM with status 143 (its own exit(128+15))
	kill -TERM "$p" 2>/dev/null
	wait_exit "$p" 10 || { die "$tag: socat did not end on SIGTERM"; return 1; }
}

socat_case() { # socat_case tcp|udp PORT: kernel then stack
	local proto=$1 port=$2 i
	prog_need socat || return 1
	for i in 1 2 3 4 5 6; do
		if [ "$proto" = tcp ]; then head -c 1M /dev/urandom; else head -c 999 /dev/urandom | base64 -w 0 | head -c 999; echo; fi >"$TSDP_TMP/in$i"
	done
	socat_run "$(kern "$NB")" "$(kern "$NA")" "$proto" "$port" kernel-socat-"$proto" || return 1
	ksnap "$NA" "$NB"
	socat_run "$(pacc "$NB" srv)" "$(pacc "$NA" cli)" "$proto" $((port + 1)) stack-socat-"$proto" || return 1
	same_as_kernel socat-"$proto" || return 1
	if [ "$proto" = tcp ]; then
		tcp_accel srv 4 && tcp_accel cli 4 || return 1
	else
		check_accel cli || return 1
		# every datagram came through the server's XSK (its parent's, each
		# read once by the child it forked); the children answer through the
		# kernel socket they share with it, counted (tx_kernel in their
		# dumps, at exit): the parent holds the link's one queue, so a child
		# gets no XSK of its own (docs/dataplane.md, fork). So the clients'
		# kernel carries nothing; the server's only the children's answers.
		local rxa txk
		rxa=$(stat_sum "$TSDP_TMP/stats-srv-*.txt" rx_accel)
		txk=$(stat_sum "$TSDP_TMP/stats-srv-*.txt" tx_kernel)
		[ "$rxa" -ge 6 ] && [ "$txk" -ge 6 ] ||
			{ die "srv: rx_accel=$rxa (want 6, the XSK's), tx_kernel=$txk (want 6, the children's)"; return 1; }
		kernel_idle "$NA" || return 1
		return 0
	fi
	kernel_idle "$NA" "$NB"
}

t_prog_socat_tcp() { # socat TCP4-LISTEN:...,fork,reuseaddr EXEC:cat: 4 clients, 1 MiB echoed each
	socat_case tcp 15030
}

t_prog_socat_udp() { # socat UDP4-RECVFROM:...,fork PIPE: 6 clients, a datagram echoed each, the children alive together
	socat_case udp 15040
}

# ---- iperf3

# iperf3_run SRV-PREFIX CLI-PREFIX PORT TAG ARGS...: a one-off iperf3
# server and a client with ARGS (-J); what the client's report says in
# $TSDP_TMP/TAG.txt. TCP: the client sent every byte asked (in whole
# blocks: at times one more, on the kernel too); the receiver counts
# what it read before the sender's TEST_END came on the control
# connection, so less than that (what was in flight and in its socket
# buffer then: on the kernel as through the stack). UDP: every datagram
# sent, none lost (4 MiB socket buffers: the kernel's receiver keeps up).
iperf3_run() {
	local srv=$1 cli=$2 port=$3 tag=$4 p
	shift 4
	$srv iperf3 -s -1 -B "$IPB" -p "$port" >"$TSDP_TMP/$tag-srv.out" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: iperf3 did not listen"; return 1; }
	$cli timeout 60 iperf3 -c "$IPB" -p "$port" -J "$@" >"$TSDP_TMP/$tag-cli.json" 2>"$TSDP_TMP/$tag-cli.err" ||
		echo "iperf3 client: exit code $?" >"$TSDP_TMP/$tag.txt"
	python3 "$here/iperf3_summary.py" "$TSDP_TMP/$tag-cli.json" >>"$TSDP_TMP/$tag.txt" 2>"$TSDP_TMP/$tag-rate.txt" ||
		echo "iperf3 client: no report: $(head -c 300 "$TSDP_TMP/$tag-cli.json")" >>"$TSDP_TMP/$tag.txt"
	# its warnings (a TCP_MAXSEG smaller than the datagrams: iperf3 reads it on the control connection)
	sed 's/^/iperf3 client: /' "$TSDP_TMP/$tag-cli.err" >>"$TSDP_TMP/$tag.txt"
	wait_exit "$p" 10 || { die "$tag: the one-off iperf3 server did not end"; return 1; }
	[ "$WAIT_RC" = 0 ] || echo "iperf3 server: exit code $WAIT_RC: $(tail -n 2 "$TSDP_TMP/$tag-srv.out")" >>"$TSDP_TMP/$tag.txt"
	log "$CUR: $tag: $(tr '\n' ' ' <"$TSDP_TMP/$tag.txt") $(cat "$TSDP_TMP/$tag-rate.txt")"
}

t_prog_iperf3() { # iperf3 TCP (64 MiB) and UDP (5,000 datagrams of 1,400 bytes at 50 Mbit/s): every byte arrives
	prog_need iperf3 || return 1
	iperf3_run "$(kern "$NB")" "$(kern "$NA")" 15050 kernel-iperf3-tcp -n 64M || return 1
	iperf3_run "$(kern "$NB")" "$(kern "$NA")" 15051 kernel-iperf3-udp -u -b 50M -l 1400 -n 7000000 -w 4M || return 1
	ksnap "$NA" "$NB"
	iperf3_run "$(pacc "$NB" srv)" "$(pacc "$NA" cli)" 15052 stack-iperf3-tcp -n 64M || return 1
	same_as_kernel iperf3-tcp || return 1
	tcp_accel srv 2 && tcp_accel cli 2 && kernel_idle "$NA" "$NB" || return 1
	rm -f "$TSDP_TMP"/stats-*
	ksnap "$NA" "$NB"
	iperf3_run "$(pacc "$NB" srv)" "$(pacc "$NA" cli)" 15053 stack-iperf3-udp -u -b 50M -l 1400 -n 7000000 -w 4M || return 1
	same_as_kernel iperf3-udp || return 1
	# the control connection, and the datagrams through the XSK
	tcp_accel srv 1 && tcp_accel cli 1 && check_accel srv && kernel_idle "$NA" "$NB"
}

# ---- python asyncio

asyncio_run() { # asyncio_run SRV-PREFIX CLI-PREFIX PORT TAG: 16 connections of 1 MiB echoed
	local srv=$1 cli=$2 port=$3 tag=$4 p
	$srv python3 "$here/asyncecho.py" server "$IPB" "$port" 16 >"$TSDP_TMP/$tag-srv.out" 2>&1 &
	p=$!
	TSDP_PIDS+=("$p")
	wait_for 10 tcp_listening "$NB" "$port" || { die "$tag: the asyncio server did not listen"; return 1; }
	$cli timeout 60 python3 "$here/asyncecho.py" client "$IPB" "$port" 16 1048576 >"$TSDP_TMP/$tag.txt" 2>&1 ||
		echo "client: exit code $?" >>"$TSDP_TMP/$tag.txt"
	wait_exit "$p" 20 || { die "$tag: the asyncio server did not end"; return 1; }
	[ "$WAIT_RC" = 0 ] || echo "server: exit code $WAIT_RC" >>"$TSDP_TMP/$tag.txt"
	grep -v listening "$TSDP_TMP/$tag-srv.out" >>"$TSDP_TMP/$tag.txt"
}

t_prog_asyncio() { # tests/asyncecho.py: an asyncio echo server and 16 concurrent asyncio connections, 1 MiB each
	asyncio_run "$(kern "$NB")" "$(kern "$NA")" 15060 kernel-asyncio || return 1
	ksnap "$NA" "$NB"
	asyncio_run "$(pacc "$NB" srv)" "$(pacc "$NA" cli)" 15061 stack-asyncio || return 1
	same_as_kernel asyncio || return 1
	tcp_accel srv 16 && tcp_accel cli 16 && kernel_idle "$NA" "$NB"
}
