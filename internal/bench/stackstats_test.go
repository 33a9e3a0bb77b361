package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// A dump the library wrote for a bypass sockperf client (dataplane/src/stats.c, dump_to), with a
// fill ring that ran empty, a next-hop refresh and a line of a kind this parser does not know.
const statsDump = `tickstack stats pid=7616 profile=latency sockets_accelerated=1 sockets_kernel=0 fallback_events=0 kernel_option=0 kernel_uring=0 kernel_shared=0
xsk if=tsdpv7038a ifindex=2 queue=0 mode=native rx_packets=558346 tx_packets=558347 rx_no_socket=0 rx_bad=0 rx_sockq_full=0 tx_ring_full=0 fill_ring_empty=3 tx_kicks=558347 tx_kick_errors=0 rx_bad_csum=0 fill_wakeups=0 xdp_rx_dropped=0 xdp_rx_invalid=0 xdp_tx_invalid=0 xdp_rx_ring_full=0 xdp_fill_empty=0 xdp_tx_ring_empty=558347 umem_frames_out=1
sock fd=4 local=0.0.0.0:40950 remote=0.0.0.0:0 accelerated=1 closed=1 rx_accel=558346 rx_kernel=0 tx_accel=558340 tx_kernel=7 rx_drops=0 rx_filtered=0 tx_kernel_noroute=0 tx_kernel_neigh=7 tx_kernel_local=0 tx_kernel_oversize=0 tx_kernel_nostack=0 tx_kernel_flags=0 tx_kernel_mcloop=0
sock fd=5 local=0.0.0.0:40951 remote=0.0.0.0:0 accelerated=0 closed=0 rx_accel=0 rx_kernel=2 tx_accel=0 tx_kernel=0 rx_drops=0 rx_filtered=0 tx_kernel_noroute=0 tx_kernel_neigh=0 tx_kernel_local=0 tx_kernel_oversize=0 tx_kernel_nostack=0 tx_kernel_flags=0 tx_kernel_mcloop=0
tcp conns_accel=0 conns_kernel=0 conns_live=0 listen_accel=0 ports_held=0 segs_rx=0 segs_tx=0 rx_csum_completed=0 rx_no_netif=0 tx_noroute=0 tx_neigh=0 tx_ring_full=2 resets=0 newreno_rexmits=0 listen_overflow=0
nh refreshes=1 misses=3 wait_timeouts=1
future_line something=9
`

func TestParseStackStats(t *testing.T) {
	c, err := ParseStackStats(strings.NewReader(statsDump))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{
		"process.sockets_accelerated": 1, "xsk.rx_packets": 558346, "xsk.fill_ring_empty": 3,
		"sock.rx_kernel": 2, "sock.tx_kernel": 7, // summed over the two sockets
		"tcp.tx_ring_full": 2, "xsk.tx_ring_full": 0, // the same name on two lines stays apart
		"nh.refreshes": 1, "nh.misses": 3,
	} {
		if got, ok := c[name]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"process.pid", "xsk.queue", "xsk.ifindex", "sock.fd", "sock.accelerated", "future_line.something"} {
		if _, ok := c[name]; ok {
			t.Errorf("%s read as a counter", name)
		}
	}
	want := []tsv1.StackCounter{{Name: "xsk.fill_ring_empty", Value: 3}, {Name: "nh.refreshes", Value: 1}, {Name: "nh.wait_timeouts", Value: 1},
		{Name: "sock.rx_kernel", Value: 2}, {Name: "sock.tx_kernel", Value: 7}, {Name: "sock.tx_kernel_neigh", Value: 7}, {Name: "tcp.tx_ring_full", Value: 2}}
	if got := c.StallCounters(); !reflect.DeepEqual(got, want) {
		t.Errorf("stall counters %+v, want %+v", got, want)
	}
	var quiet StackCounters
	if got := quiet.StallCounters(); got != nil {
		t.Errorf("no counters gave %+v", got)
	}
}

func TestReadStackStatsDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadStackStatsDir(dir); !errors.Is(err, errNoStatsDump) {
		t.Errorf("empty directory: %v, want errNoStatsDump", err)
	}
	// Two processes (e.g. a wrapper that was preloaded too), each its own file.
	for _, pid := range []string{"11", "12"} {
		if err := os.WriteFile(filepath.Join(dir, "stats-"+pid+".txt"), []byte(statsDump), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte("nh refreshes=100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ReadStackStatsDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c["nh.refreshes"] != 2 || c["xsk.fill_ring_empty"] != 6 {
		t.Errorf("summed counters %v, want nh.refreshes 2 and xsk.fill_ring_empty 6", c)
	}
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// statsDumpScript writes statsDump to the file TICKSTACK_STATS_FILE names, as the library does at
// exit (%p replaced by the pid); nothing when the variable is unset.
// statsDumpDir returns a temporary directory with a file of dump in it, which statsDumpScript
// copies as the stack's statistics file (STATS_DUMP).
func statsDumpDir(t *testing.T, dump string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.txt")
	if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STATS_DUMP", path)
	return dir
}

const statsDumpScript = `dump() {
	[ -n "${TICKSTACK_STATS_FILE:-}" ] || return 0
	f=$(printf '%s' "$TICKSTACK_STATS_FILE" | sed "s/%p/$$/")
	cat "$STATS_DUMP" > "$f"
}
`

// The runner gives a bypass sockperf (and only a bypass one) a statistics file, reads it back
// and puts the counters of both sides into the row's stall report, with the run's stalls.
func TestStackCountersReachTheStallReport(t *testing.T) {
	dir := statsDumpDir(t, statsDump)
	t.Setenv(statsFileEnv, "") // a pod's own setting must not leak into the runner's processes
	log := filepath.Join(dir, "full.csv")
	// A full log with one message 40 ms late among 2 us ones.
	var b strings.Builder
	b.WriteString("packet, txTime(sec), rxTime(sec), latency(usec)\n")
	for i, row := range pingPongLog(3000, 1000, func(i int) int64 {
		if i == 2000 {
			return 40000000
		}
		return 2000
	}) {
		fmt.Fprintf(&b, "%d, %d.%09d, %d.%09d, %s\n", i, row.TxNs/1e9, row.TxNs%1e9, row.RxNs/1e9, row.RxNs%1e9, judge.FormatNanosAsMicros(row.LatencyNs))
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join("testdata", "sockperf", "pp_small.txt")
	abs, _ := filepath.Abs(summary)
	sockperf := writeScript(t, filepath.Join(dir, "sockperf"), statsDumpScript+`
while [ $# -gt 0 ]; do
	if [ "$1" = --full-log ]; then cp "`+log+`" "$2"; fi
	shift
done
cat "`+abs+`"
dump
`)
	launcher := writeScript(t, filepath.Join(dir, "tickstack-run"), "shift 3\nexec \"$@\"\n")
	r := &Runner{Tools: Tools{Sockperf: sockperf, Launcher: launcher}, WorkDir: dir}

	run, err := r.clientRun(context.Background(), tsv1.StackBypass, 1, "pp", "-i", "198.18.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if run.countersErr != nil || run.counters["nh.refreshes"] != 1 || len(run.rows) != 3000 {
		t.Fatalf("bypass run: counters %v (%v), %d rows", run.counters, run.countersErr, len(run.rows))
	}
	refl := &ReflectorCounters{Stack: StackCounters{"xsk.tx_ring_full": 4, "xsk.rx_packets": 9}}
	rep := (&Runner{}).stallReport(tsv1.StackBypass, run, 2000, refl)
	if rep.Count != 1 || rep.Stalls[0].LatencyNs != 40000000 {
		t.Errorf("stalls %+v, want the 40 ms message", rep)
	}
	// a script is no sockperf: its log cannot be placed in time, and the report says so
	if rep.Stalls[0].Cause != "" || !strings.Contains(rep.AttributionMissing, "runner: placing sockperf's full log on CLOCK_MONOTONIC") {
		t.Errorf("attribution of a fake sockperf's stall: %+v, missing %q", rep.Stalls[0], rep.AttributionMissing)
	}
	if len(rep.Counters) != 7 || rep.Counters[1] != (tsv1.StackCounter{Name: "nh.refreshes", Value: 1}) {
		t.Errorf("runner counters %+v", rep.Counters)
	}
	if !reflect.DeepEqual(rep.ReflectorCounters, []tsv1.StackCounter{{Name: "xsk.tx_ring_full", Value: 4}}) || rep.CountersMissing != "" {
		t.Errorf("reflector counters %+v, missing %q", rep.ReflectorCounters, rep.CountersMissing)
	}
	if rep := (&Runner{}).stallReport(tsv1.StackBypass, run, 2000, &ReflectorCounters{StackMissing: "no statistics dump was written"}); !strings.Contains(rep.CountersMissing, "reflector: no statistics dump") {
		t.Errorf("a reflector without counters: missing %q", rep.CountersMissing)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "stats-*"))
	if len(left) != 0 {
		t.Errorf("statistics directories left behind: %v", left)
	}

	// The kernel stack: no statistics file, no counters, nothing said missing.
	run, err = r.clientRun(context.Background(), tsv1.StackKernel, 1, "pp", "-i", "198.18.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if run.counters != nil || run.countersErr != nil {
		t.Errorf("kernel run: counters %v (%v)", run.counters, run.countersErr)
	}
	if rep := (&Runner{}).stallReport(tsv1.StackKernel, run, 2000, &ReflectorCounters{}); rep.Counters != nil || rep.ReflectorCounters != nil || rep.CountersMissing != "" || rep.Count != 1 {
		t.Errorf("kernel stall report %+v", rep)
	}

	// A bypass process that wrote no dump (killed) is said so.
	writeScript(t, sockperf, "while [ $# -gt 0 ]; do if [ \"$1\" = --full-log ]; then cp \""+log+"\" \"$2\"; fi; shift; done\ncat \""+abs+"\"\n")
	run, err = r.clientRun(context.Background(), tsv1.StackBypass, 1, "pp")
	if err != nil {
		t.Fatal(err)
	}
	if rep := (&Runner{}).stallReport(tsv1.StackBypass, run, 2000, refl); !strings.Contains(rep.CountersMissing, "runner: "+errNoStatsDump.Error()) {
		t.Errorf("no dump: missing %q", rep.CountersMissing)
	}
}

// A bypass reflector server's counters come back with its totals when it is stopped.
func TestReflectorReturnsStackCounters(t *testing.T) {
	dir := statsDumpDir(t, statsDump)
	server := writeScript(t, filepath.Join(dir, "sockperf"), statsDumpScript+`
[ "$1" = --version ] && { echo "sockperf: == version #3.7-fake =="; exit 0; }
trap 'echo "sockperf: Total 5 messages received and handled"; dump; exit 0' INT
echo "sockperf: using recvfrom() to block on socket(s)"
while :; do sleep 0.05; done
`)
	c := startSockperfReflector(t, dir, server)
	for _, stack := range []tsv1.Stack{tsv1.StackBypass, tsv1.StackKernel} {
		counters := startStop(t, c, ServerSpec{Stack: stack, Protocol: tsv1.ProtocolUDP, Port: 20000})
		if counters.Received != 5 {
			t.Errorf("%s: received %d, want 5", stack, counters.Received)
		}
		switch stack {
		case tsv1.StackBypass:
			if counters.Stack["xsk.fill_ring_empty"] != 3 || counters.StackMissing != "" {
				t.Errorf("bypass server counters %v, missing %q", counters.Stack, counters.StackMissing)
			}
		default:
			if counters.Stack != nil || counters.StackMissing != "" {
				t.Errorf("kernel server counters %v, missing %q", counters.Stack, counters.StackMissing)
			}
		}
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "work")); len(left) != 0 {
		t.Errorf("the reflector left %d statistics directories", len(left))
	}
}
