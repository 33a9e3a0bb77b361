# shellcheck shell=bash
# tests/lib.sh - netns/veth helpers for the dataplane harness and benchmark.
# Every name carries the tsdp prefix and the PID, so concurrent runs never
# collide; cleanup removes everything, also on failure (trap).
# Addresses: 198.18.0.0/15 only (RFC 2544 benchmarking range); the multicast
# test uses the administratively scoped group 239.198.18.1, which never
# leaves the test's own namespaces.

TSDP_ID=${TSDP_ID:-$$}
TSDP_TMP=${TSDP_TMP:-$(mktemp -d "/tmp/tsdp${TSDP_ID}.XXXXXX")}
TSDP_NETNS=()
TSDP_PIDS=()

# kill a process and remove the statistics region its library could not
# remove (a SIGKILL skips the library's exit handler)
tsdp_kill() {
	kill -KILL "$1" 2>/dev/null || true
	rm -f "/dev/shm/tickstack-$1"
}

# the namespaces this run created, and every process inside them (ours)
tsdp_cleanup_netns() {
	local p n
	for p in "${TSDP_PIDS[@]}"; do
		# only if it still runs in one of our namespaces (no pid reuse)
		case "$(ip netns identify "$p" 2>/dev/null)" in
		"tsdp${TSDP_ID}"*) tsdp_kill "$p" ;;
		esac
	done
	for n in "${TSDP_NETNS[@]}"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do
			tsdp_kill "$p"
		done
		ip netns del "$n" 2>/dev/null || true
	done
}

# tsdp_fail_or_skip WHO MESSAGE: a missing requirement ends the script:
# a failure under CI=true (a test that skips in CI is a defect), else a skip
tsdp_fail_or_skip() {
	local who=$1
	shift
	if [ "${CI:-}" = true ]; then
		echo "$who: FAIL: $*" >&2
		exit 1
	fi
	echo "$who: SKIP: $*" >&2
	exit 0
}

tsdp_cleanup() {
	tsdp_cleanup_netns
	rm -rf "$TSDP_TMP"
}

# tsdp_start: what every script sourcing this library does first: B, the
# dataplane's build directory, and the cleanup of all the script creates,
# on exit and when interrupted
tsdp_start() {
	# shellcheck disable=SC2034 # B is the sourcing script's
	B=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build
	trap tsdp_cleanup EXIT
	trap 'exit 130' INT TERM
}

tsdp_ns() { # tsdp_ns VAR NAME: creates netns tsdp<ID>NAME, its name in VAR
	local n="tsdp${TSDP_ID}$2"
	ip netns add "$n"
	TSDP_NETNS+=("$n") # not in a subshell: the cleanup must know it
	ip -n "$n" link set lo up
	printf -v "$1" '%s' "$n"
}

# tsdp_pair A B SUBNET: veth between netns A and B, A gets SUBNET.1, B .2
# Interface names: <A>v / <B>v (kept under 15 chars by short suffixes).
# TSDP_QUEUES=N: N receive and transmit queues on both ends.
tsdp_pair() {
	local a=$1 b=$2 net=$3 ia="${4:-v${TSDP_ID}a}" ib="${5:-v${TSDP_ID}b}" q=()
	[ -z "${TSDP_QUEUES:-}" ] || q=(numtxqueues "$TSDP_QUEUES" numrxqueues "$TSDP_QUEUES")
	ip link add "tsdp$ia" netns "$a" "${q[@]}" type veth peer name "tsdp$ib" netns "$b" "${q[@]}"
	ip -n "$a" addr add "$net.1/24" dev "tsdp$ia"
	ip -n "$b" addr add "$net.2/24" dev "tsdp$ib"
	ip -n "$a" link set "tsdp$ia" up
	ip -n "$b" link set "tsdp$ib" up
}

# wait_for TIMEOUT_S CMD...: poll CMD until it succeeds (bounded).
wait_for() {
	local t=$1 end
	shift
	end=$(($(date +%s%N) + t * 1000000000))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$(date +%s%N)" -gt "$end" ]; then
			return 1
		fi
		sleep 0.05
	done
}

neigh_resolved() { # neigh_resolved NS IP: NS's kernel has IP's MAC
	ip -n "$1" neigh show "$2" | grep -qE "REACHABLE|STALE|DELAY|PROBE|PERMANENT"
}

udp_listening() { # udp_listening NS PORT
	ip netns exec "$1" ss -Hnlu "sport = :$2" | grep -q .
}

tcp_listening() { # tcp_listening NS PORT
	ip netns exec "$1" ss -Hnlt "sport = :$2" | grep -q .
}

# hang_report PID: where each thread of PID (and of its children) waits, before the caller
# kills it: the system call it is in (number and arguments), its kernel wait channel, and with gdb
# installed every thread's stack
hang_report() {
	local p t
	for p in "$1" $(pgrep -P "$1" 2>/dev/null); do
		echo "---- hang: pid $p ($(cat /proc/"$p"/comm 2>/dev/null)) did not exit in time"
		for t in /proc/"$p"/task/*; do
			[ -d "$t" ] || continue
			echo "thread ${t##*/} $(cat "$t"/comm 2>/dev/null): state $(awk '{print $3}' "$t"/stat 2>/dev/null)," \
				"wchan $(cat "$t"/wchan 2>/dev/null), syscall $(cat "$t"/syscall 2>/dev/null)"
		done
		if command -v gdb >/dev/null; then
			timeout 30 gdb -p "$p" -batch -nx -ex "thread apply all bt" 2>/dev/null | grep -E "^(Thread|#)" | head -n 200
		fi
	done
}

# wait_exit PID TIMEOUT_S: wait for a background pid to exit, bounded;
# sets WAIT_RC to its exit code (or 124 on timeout, after a KILL).
wait_exit() {
	local pid=$1 t=$2 end
	end=$(($(date +%s%N) + t * 1000000000))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$(date +%s%N)" -gt "$end" ]; then
			hang_report "$pid" >&2
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			WAIT_RC=124
			return 1
		fi
		sleep 0.05
	done
	wait "$pid"
	# shellcheck disable=SC2034 # the callers read it
	WAIT_RC=$?
	return 0
}

# stat_sum GLOB KEY [LINE]: KEY summed over the stack's stats dumps GLOB (a
# pattern, expanded here), on the lines of kind LINE (default sock; "-":
# every line)
stat_sum() {
	local line=${3:-sock} pat='^'
	[ "$line" = - ] || pat="^$line "
	# shellcheck disable=SC2086 # $1 is a glob (stats-NAME-*.txt): expanded here, on purpose
	cat $1 2>/dev/null | grep "$pat" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2 |
		awk '{s+=$1} END {print s+0}'
}
