package tuning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host/hosttest"
)

// TestTreeOfflineCPUs takes CPUs offline through their cpuN/online files in a host-root tree (this
// VM cannot safely take one of its two CPUs offline): applied, verified, drift corrected, restored
// to each CPU's own original (a CPU already offline stays offline).
func TestTreeOfflineCPUs(t *testing.T) {
	dir := hosttest.TempDir(t)
	buildTree(t, dir, false)
	online := func(cpu string) string { return "sys/devices/system/cpu/cpu" + cpu + "/online" }
	// CPU 1 was offline before tickstack: its original is 0.
	if err := os.WriteFile(filepath.Join(dir, online("1")), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := hosttest.Snapshot(t, dir)
	e := treeEngine(dir)
	d := &Desired{OfflineCPUs: setp("1-3")}

	rep := applyInSync(t, e, d)
	for _, cpu := range []string{"1", "2", "3"} {
		if got := readTree(t, dir, online(cpu)); got != "0" {
			t.Errorf("cpu%s/online = %q, want 0", cpu, got)
		}
	}
	res := resultsByName(rep.Results)
	if r := res["hotplug/cpu2/online"]; r.State != InSync || r.Field != "offlineCPUs" || r.Desired != "0" {
		t.Errorf("hotplug/cpu2/online = %+v", r)
	}
	if len(rep.Changed) != 2 {
		t.Errorf("Changed = %v, want CPUs 2 and 3 only (CPU 1 was offline already)", rep.Changed)
	}

	// Drift: someone brings CPU 3 back.
	if err := os.WriteFile(filepath.Join(dir, online("3")), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := e.Verify(d)
	if err != nil {
		t.Fatal(err)
	}
	drift := Drift(got)
	if len(drift) != 1 || drift[0].Name != "hotplug/cpu3/online" || drift[0].Observed != "1" {
		t.Fatalf("drift = %+v, want hotplug/cpu3/online observed 1", drift)
	}
	applyInSync(t, e, d)
	if got := readTree(t, dir, online("3")); got != "0" {
		t.Fatalf("cpu3/online after correcting drift = %q, want 0", got)
	}

	// Restore brings back exactly what each CPU was: 2 and 3 online, 1 offline as before.
	if _, err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	if diffs := hosttest.Diff(before, hosttest.Snapshot(t, dir)); len(diffs) > 0 {
		t.Fatalf("after Restore the tree differs:\n%s", strings.Join(diffs, "\n"))
	}
}

// TestOfflineCPUsRefused: CPU 0 is refused before the host is read, a CPU without an online file
// (CPU 0 of the tree, like most x86 kernels) or absent (CPU 7) when planned; nothing changes.
func TestOfflineCPUsRefused(t *testing.T) {
	if err := Validate(&Desired{OfflineCPUs: setp("0,3")}); err == nil || !strings.Contains(err.Error(), "offlineCPUs: names CPU 0") {
		t.Fatalf("Validate = %v, want CPU 0 refused", err)
	}
	dir, before, e := newTree(t)
	_, err := e.Apply(&Desired{OfflineCPUs: setp("3,7")})
	if err == nil || !strings.Contains(err.Error(), "offlineCPUs: CPUs 7 cannot be taken offline on this node") {
		t.Fatalf("Apply = %v, want CPU 7 refused", err)
	}
	if diffs := hosttest.Diff(before, hosttest.Snapshot(t, dir)); len(diffs) > 0 {
		t.Fatalf("a refused Apply changed the host:\n%s", strings.Join(diffs, "\n"))
	}
}
