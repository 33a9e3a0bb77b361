package agent_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/bypass"
)

// bootBinarySize is the size of the stand-in for the agent's binary: the image's agent (static,
// stripped) is about 55 MiB. Reading it and its copy whole on every reconcile took more than the
// container's 128 MiB limit (the memory cgroup OOM-killed the agent right after "Starting workers").
const bootBinarySize = 64 << 20

// bootUnitHeapBound is what installing, then checking, the boot unit may allocate on the Go heap in
// all: buffers of a streamed copy and hash, never the binary's size.
const bootUnitHeapBound = 4 << 20

// TestBootUnitMemoryBound: the agent copies its binary for the boot unit, and on every reconcile
// checks the copy, without holding the binary in memory. A 64 MiB binary is copied and then
// checked (unchanged, and again after the copy went stale) with at most 4 MiB allocated in all,
// measured with runtime.ReadMemStats; the copy is byte for byte the binary.
func TestBootUnitMemoryBound(t *testing.T) {
	a := agenttest.NewTreeAgent(t, "")
	self := filepath.Join(agenttest.TempDir(t, "self"), "agent")
	f, err := os.Create(self)
	if err != nil {
		t.Fatal(err)
	}
	// Not all zeros: a marker every MiB, so a copy that drops or shifts a chunk differs.
	for i := 0; i < bootBinarySize>>20; i++ {
		chunk := bytes.Repeat([]byte{byte(i)}, 1<<20)
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	a.R.BootUnit = agent.BootOptions{UnitDir: "/etc/systemd/system", Binary: agent.DefaultBootBinary, Self: self}
	copyPath := filepath.Join(a.Root, agent.DefaultBootBinary)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for step, prepare := range []func(){
		func() {}, // the first install: copies
		func() {}, // unchanged: only checks
		func() { // a stale copy of the same size (zeros, allocating nothing): copies again
			if err := os.Truncate(copyPath, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(copyPath, bootBinarySize); err != nil {
				t.Fatal(err)
			}
		},
	} {
		prepare()
		if err := a.R.InstallBootUnit(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("installing and checking the boot unit (a %d MiB binary) allocated %d KiB", bootBinarySize>>20, got>>10)
	if got > bootUnitHeapBound {
		t.Errorf("installing and checking the boot unit allocated %d MiB, want at most %d MiB (the binary is %d MiB)",
			got>>20, bootUnitHeapBound>>20, bootBinarySize>>20)
	}
	if sum(t, self) != sum(t, copyPath) {
		t.Errorf("the copy %s differs from the binary", copyPath)
	}
	if st, err := os.Stat(copyPath); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("the copy: %v, %v (want mode 0755)", st, err)
	}
}

func sum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// reconcileHeapBound is what the agent may allocate, in all, from its start to a profile Applied
// (several reconciles: the first, the status updates, the periodic checks) plus one scrape of the
// bypass metrics of this host's processes. Measured: 2.5 MiB with this test's 52 MiB binary; the
// agent that read its binary and the boot unit's copy whole allocated 107 MiB in the same test.
const reconcileHeapBound = 32 << 20

// TestReconcileMemoryBound: an agent (with the boot unit, its source this test's own binary, as
// large as the agent's) reconciles a LatencyNodeState to Applied, and the bypass collector scrapes
// the real host's processes once, with at most 32 MiB allocated in all (runtime.ReadMemStats),
// whatever the binary's size: the agent's 128Mi container limit is not approached.
func TestReconcileMemoryBound(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(self)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < reconcileHeapBound/2 {
		t.Fatalf("the test binary %s is %d MiB: the test needs one of at least %d MiB, so that reading it and its copy whole exceeds the bound", self, st.Size()>>20, reconcileHeapBound>>21)
	}
	node := agenttest.Name("memory")
	a := agenttest.NewTreeAgent(t, node)
	a.R.BootUnit = agent.BootOptions{UnitDir: "/etc/systemd/system", Binary: agent.DefaultBootBinary, Self: self}
	// No kubelet section: never read.
	a.R.Kubelet = agent.KubeletOptions{ConfigDir: "/proc/sys/vm/swappiness/kubelet.conf.d", StopCommand: []string{"false"}, StartCommand: []string{"false"}}
	createNode(t, node)
	createLNS(t, node, &tsv1.NodeTuning{ReservedCPUs: "0-1", IsolatedCPUs: "2-3", Sysctls: map[string]string{"vm.swappiness": "10"}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(bypass.NewCollector(bypass.Options{Proc: "/proc"}))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stop := agenttest.StartAgent(t, cfg, a.R, nil)
	pollApplied(t, node, 30*time.Second)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	stop()
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("reconciling to Applied (boot unit from a %d MiB binary) and one scrape allocated %d KiB", st.Size()>>20, got>>10)
	if got > reconcileHeapBound {
		t.Errorf("reconciling to Applied and one scrape allocated %d MiB, want at most %d MiB", got>>20, reconcileHeapBound>>20)
	}
	if sum(t, self) != sum(t, filepath.Join(a.Root, agent.DefaultBootBinary)) {
		t.Error("the boot unit's copy differs from the agent's binary")
	}
}
