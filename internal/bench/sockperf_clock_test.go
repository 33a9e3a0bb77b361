package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	"github.com/tickstack/tickstack/internal/testutil"
)

// A real sockperf ping-pong on loopback with the sampler finding its clock: every full-log time,
// placed on CLOCK_MONOTONIC, falls between the process's start and its end, and the first timed
// send comes after sockperf's 100 ms calibration and 400 ms warm-up.
func TestSockperfClockPlacesFullLogOnMonotonic(t *testing.T) {
	sp := testutil.RequireTool(t, "sockperf")
	ts := testutil.RequireTool(t, "taskset")
	port := strconv.Itoa(20000 + (os.Getpid()+7)%20000)
	srv := exec.Command(sp, "sr", "-i", "127.0.0.1", "-p", port)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	time.Sleep(300 * time.Millisecond)
	log := filepath.Join(t.TempDir(), "full.csv")
	// through taskset, as the runner starts it: the sampler must follow the exec
	cli := exec.Command(ts, "-c", "0-1023", sp, "pp", "-i", "127.0.0.1", "-p", port, "-t", "2", "--full-log", log)
	var out SyncBuffer
	cli.Stdout, cli.Stderr = &out, &out
	start := monoNow()
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	s := startProcSampler("/proc", cli.Process.Pid, nil, true)
	if err := cli.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	end := monoNow()
	tr := s.Stop()
	if tr.Clock == nil {
		t.Fatalf("no clock: %s", tr.ClockErr)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ParseFullLog(f)
	if err != nil || len(rows) < 100 {
		t.Fatalf("full log: %d rows, %v", len(rows), err)
	}
	first, last := tr.Clock.ToMono(rows[0].TxNs), tr.Clock.ToMono(rows[len(rows)-1].RxNs)
	t.Logf("start %d, first send +%s, last reply +%s, end +%s", start, time.Duration(first-start), time.Duration(last-start), time.Duration(end-start))
	if first < start+int64(500*time.Millisecond) || last > end || last < first+int64(time.Second) {
		t.Errorf("full log placed at +%s..+%s, outside the process's run 0..+%s", time.Duration(first-start), time.Duration(last-start), time.Duration(end-start))
	}
	if want := (end - start) / int64(SchedSampleInterval) / 2; int64(len(tr.Sched)) < want {
		t.Errorf("%d run-queue samples in a %s run, want at least %d (one every %s)", len(tr.Sched), time.Duration(end-start), want, SchedSampleInterval)
	}

	// A stall 100 ms into the run is attributed from the client's samples; the reflector side is
	// said missing.
	rep := &tsv1.StallReport{Count: 1, Stalls: []tsv1.Stall{{OffsetNs: int64(100 * time.Millisecond), DurationNs: int64(5 * time.Millisecond)}}}
	(&Runner{}).attribute(rep, tsv1.StackKernel, clientOutcome{rows: rows, sched: tr}, nil)
	if rep.Stalls[0].Cause == "" || !strings.Contains(rep.AttributionMissing, "reflector:") {
		t.Errorf("attributed stall %+v, missing %q", rep.Stalls[0], rep.AttributionMissing)
	}
}

// A real pingPong row between a runner and a reflector on loopback, each pinned as the demo
// pins them (first and last CPU of this test): every stall the row has comes attributed from
// both sides, nothing is said missing (this found the runner reading the executable while
// taskset exec'd sockperf).
func TestPingPongRowAttributesItsStalls(t *testing.T) {
	testutil.RequireTool(t, "sockperf")
	testutil.RequireTool(t, "taskset")
	cpus := affinityOf(0)
	if len(cpus) == 0 {
		t.Fatal("no CPU affinity")
	}
	c := startReflector(t, &Reflector{DataAddress: "127.0.0.1", CPUs: strconv.Itoa(cpus[0])})
	r := &Runner{Reflector: c, LocalAddress: "127.0.0.1", CPUs: strconv.Itoa(cpus[len(cpus)-1]), WorkDir: t.TempDir(),
		Logf: t.Logf, BasePort: 20000 + (os.Getpid()+11)%20000}
	row, _, err := r.pingPongRow(t.Context(), tsv1.StackKernel, tsv1.ProtocolUDP, 64, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", judge.StallSummary(row.Stalls))
	if row.Samples == 0 || row.Stalls == nil {
		t.Fatalf("row %+v", row)
	}
	if row.Stalls.Count > 0 && row.Stalls.AttributionMissing != "" {
		t.Errorf("attribution missing: %s", row.Stalls.AttributionMissing)
	}
	for _, s := range row.Stalls.Stalls {
		t.Logf("%+v", s)
		if s.Cause == "" {
			t.Errorf("stall without a cause: %+v", s)
		}
	}
}
