#!/bin/sh
# tickstack-run [-p latency|throughput|default] [--stats] CMD [ARGS...]
# Runs an unmodified program with libtickstack.so preloaded: its AF_INET UDP
# sockets go through the AF_XDP bypass path. See docs/dataplane.md.
set -eu

usage() {
	cat >&2 <<USAGE
usage: tickstack-run [-p latency|throughput|default] [--stats] [--require] CMD [ARGS...]
  -p PROFILE   spin/poll profile (sets TICKSTACK_PROFILE); explicit
               TICKSTACK_* variables still win
  --stats      print per-socket and per-XSK counters at exit (TICKSTACK_STATS=1)
  --require    fail instead of silently using the kernel (TICKSTACK_REQUIRE=1)
environment: TICKSTACK_LIB overrides the library path.
USAGE
	exit 2
}

here=$(dirname "$(readlink -f "$0")")
lib=${TICKSTACK_LIB:-$here/libtickstack.so}

while [ $# -gt 0 ]; do
	case "$1" in
	-p|--profile)
		[ $# -ge 2 ] || usage
		case "$2" in
		latency|throughput|default) TICKSTACK_PROFILE=$2; export TICKSTACK_PROFILE ;;
		*) echo "tickstack-run: unknown profile '$2': use latency, throughput or default" >&2; exit 2 ;;
		esac
		shift 2 ;;
	--stats) TICKSTACK_STATS=1; export TICKSTACK_STATS; shift ;;
	--require) TICKSTACK_REQUIRE=1; export TICKSTACK_REQUIRE; shift ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) echo "tickstack-run: unknown option '$1'" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
if [ ! -r "$lib" ]; then
	echo "tickstack-run: $lib not found: build it with 'make -C dataplane' or set TICKSTACK_LIB" >&2
	exit 2
fi
LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}"
export LD_PRELOAD
exec "$@"
