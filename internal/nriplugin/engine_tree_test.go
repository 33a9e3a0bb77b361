package nriplugin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/nriplugin"
	"github.com/tickstack/tickstack/internal/policy"
	"github.com/tickstack/tickstack/internal/tuning"
)

// engineTree is a host-root tree of four CPUs with two cpuidle states, a PM QoS resume latency
// limit (none) and cpufreq each, and three IRQs: what the VM cannot show (cpufreq, four CPUs).
func engineTree(t *testing.T) (*host.Host, func(string) string) {
	t.Helper()
	root := t.TempDir()
	write := func(p, v string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/devices/system/cpu/online", "0-3")
	for _, cpu := range []string{"0", "1", "2", "3"} {
		d := "sys/devices/system/cpu/cpu" + cpu
		write(d+"/cpuidle/state0/name", "POLL")
		write(d+"/cpuidle/state0/latency", "0")
		write(d+"/cpuidle/state0/disable", "0")
		write(d+"/cpuidle/state1/name", "C6")
		write(d+"/cpuidle/state1/latency", "133")
		write(d+"/cpuidle/state1/disable", "0")
		write(d+"/power/pm_qos_resume_latency_us", "0")
		write(d+"/cpufreq/scaling_governor", "powersave")
		write(d+"/cpufreq/scaling_available_governors", "performance powersave")
	}
	write("proc/irq/10/smp_affinity_list", "0-3")
	write("proc/irq/11/smp_affinity_list", "2-3")
	write("proc/irq/12/smp_affinity_list", "3")
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return &host.Host{Root: root}, read
}

// Two containers' claims never undo each other: each IRQ's affinity is its original minus the CPUs
// of every live claim, and a release writes back only what no claim still needs.
func TestEngineOverlappingClaims(t *testing.T) {
	h, read := engineTree(t)
	journal := filepath.Join(t.TempDir(), "journal.json")
	e := &nriplugin.Engine{Host: h, JournalPath: journal}
	a := nriplugin.Claim{Container: "a", Name: "ns/a/c", CPUs: "2", Request: policy.PodControlRequest{IRQLoadBalancing: "disable", Governor: "performance", CStates: "disable"}}
	b := nriplugin.Claim{Container: "b", Name: "ns/b/c", CPUs: "3", Request: policy.PodControlRequest{IRQLoadBalancing: "disable", CStates: "max_latency", CStateMaxLatencyMicroseconds: 10}}
	if err := e.Apply(a); err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(b); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"proc/irq/10/smp_affinity_list":                        "0-1",
		"proc/irq/11/smp_affinity_list":                        "0-1", // its original CPUs all claimed: every other online CPU
		"proc/irq/12/smp_affinity_list":                        "0-1",
		"sys/devices/system/cpu/cpu2/cpufreq/scaling_governor": "performance",
		"sys/devices/system/cpu/cpu3/cpufreq/scaling_governor": "powersave",
		// C-states through the CPU's PM QoS resume latency limit (CRI-O's mechanism): "n/a" is a
		// 0 us limit (polling only), N a limit of N us; cpuidle's disable files stay as they are.
		"sys/devices/system/cpu/cpu2/power/pm_qos_resume_latency_us": "n/a",
		"sys/devices/system/cpu/cpu3/power/pm_qos_resume_latency_us": "10",
		"sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us": "0",
		"sys/devices/system/cpu/cpu3/cpuidle/state1/disable":         "0",
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		for p, v := range want {
			if got := read(p); got != v {
				t.Errorf("%s: %s is %q, want %q", when, p, got, v)
			}
		}
	}
	check("both claims", want)
	if err := e.Apply(nriplugin.Claim{Container: "c", Name: "ns/c/c", CPUs: "3", Request: policy.PodControlRequest{CStates: "disable"}}); err == nil ||
		!strings.Contains(err.Error(), "also claimed by container ns/b/c") {
		t.Errorf("a claim on a claimed CPU: %v", err)
	}
	if err := e.Release("a"); err != nil {
		t.Fatal(err)
	}
	check("b's claim alone", map[string]string{
		"proc/irq/10/smp_affinity_list":                              "0-2",
		"proc/irq/11/smp_affinity_list":                              "2",
		"proc/irq/12/smp_affinity_list":                              "0-2",
		"sys/devices/system/cpu/cpu2/cpufreq/scaling_governor":       "powersave",
		"sys/devices/system/cpu/cpu2/power/pm_qos_resume_latency_us": "0",
		"sys/devices/system/cpu/cpu3/power/pm_qos_resume_latency_us": "10",
	})
	// The plugin restarts with no live container: b's claim is restored from the journal.
	e2 := &nriplugin.Engine{Host: h, JournalPath: journal}
	if err := e2.Reconcile(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	check("no claim", map[string]string{
		"proc/irq/10/smp_affinity_list":                              "0-3",
		"proc/irq/11/smp_affinity_list":                              "2-3",
		"proc/irq/12/smp_affinity_list":                              "3",
		"sys/devices/system/cpu/cpu3/power/pm_qos_resume_latency_us": "0",
	})
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("journal still there: %v", err)
	}
}

// A governor the CPU does not offer, and C-states on a CPU without a PM QoS resume latency file,
// fail before any write.
func TestEngineRefusesBeforeWriting(t *testing.T) {
	h, read := engineTree(t)
	journal := filepath.Join(t.TempDir(), "journal.json")
	e := &nriplugin.Engine{Host: h, JournalPath: journal}
	err := e.Apply(nriplugin.Claim{Container: "a", Name: "ns/a/c", CPUs: "2", Request: policy.PodControlRequest{IRQLoadBalancing: "disable", Governor: "schedutil"}})
	if err == nil || !strings.Contains(err.Error(), "tickstack.io/cpu-freq-governor=schedutil: cpu2 offers the governors performance, powersave") {
		t.Errorf("an unknown governor: %v", err)
	}
	if got := read("proc/irq/10/smp_affinity_list"); got != "0-3" {
		t.Errorf("irq 10 changed to %s by a refused claim", got)
	}
	if err := os.RemoveAll(filepath.Join(h.Root, "sys/devices/system/cpu/cpu1/power")); err != nil {
		t.Fatal(err)
	}
	err = e.Apply(nriplugin.Claim{Container: "b", Name: "ns/b/c", CPUs: "1", Request: policy.PodControlRequest{CStates: "disable"}})
	if err == nil || !strings.Contains(err.Error(), "Unsupported on this host") {
		t.Errorf("C-states without pm_qos_resume_latency_us: %v", err)
	}
}

// A journal of an earlier plugin, which wrote cpuidle's stateN/disable for the C-state control,
// is still restored: the plugin's start writes the original back and drops the entry.
func TestEngineRestoresCPUIdleEntries(t *testing.T) {
	h, read := engineTree(t)
	journal := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(filepath.Join(h.Root, "sys/devices/system/cpu/cpu3/cpuidle/state1/disable"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tuning.SaveJournal(journal, []tuning.Entry{
		{Name: "claim/old", Original: `{"container":"old","name":"ns/old/c","cpus":"3","request":{"CStates":"disable"}}`},
		{Name: "cpuidle/cpu3/state1", Original: "0"},
	}); err != nil {
		t.Fatal(err)
	}
	e := &nriplugin.Engine{Host: h, JournalPath: journal}
	if err := e.Reconcile(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if got := read("sys/devices/system/cpu/cpu3/cpuidle/state1/disable"); got != "0" {
		t.Errorf("cpu3 state1 disable is %q after the old claim's release, want 0", got)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("journal still there: %v", err)
	}
}

// An IRQ the kernel refuses to move (a read-only smp_affinity_list: a managed IRQ) is journaled
// refused while a claim keeps IRQs off its CPUs, also across the stop of another container (every
// container's stop reaches the plugin), and leaves the journal with the last such claim.
func TestEngineKeepsRefusedIRQ(t *testing.T) {
	h, read := engineTree(t)
	journal := filepath.Join(t.TempDir(), "journal.json")
	if err := os.Chmod(filepath.Join(h.Root, "proc/irq/12/smp_affinity_list"), 0o444); err != nil {
		t.Fatal(err)
	}
	e := &nriplugin.Engine{Host: h, JournalPath: journal}
	if err := e.Apply(nriplugin.Claim{Container: "a", Name: "ns/a/c", CPUs: "3", Request: policy.PodControlRequest{IRQLoadBalancing: "disable"}}); err != nil {
		t.Fatal(err)
	}
	refused := func() bool {
		t.Helper()
		entries, err := tuning.LoadJournal(journal)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Name == "irq/12" {
				return en.Refused
			}
		}
		return false
	}
	if !refused() {
		t.Fatal("irq 12 (read-only) is not journaled refused")
	}
	if got := read("proc/irq/12/smp_affinity_list"); got != "3" {
		t.Errorf("irq 12 is %s, want untouched 3", got)
	}
	// Another container, with no claim, stops.
	if err := e.Release("other"); err != nil {
		t.Fatal(err)
	}
	if !refused() {
		t.Error("irq 12's refused mark went with another container's stop while a's claim stays")
	}
	if got := read("proc/irq/10/smp_affinity_list"); got != "0-2" {
		t.Errorf("irq 10 is %s after another container's stop, want 0-2", got)
	}
	if err := e.Release("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("journal still there after the last claim: %v", err)
	}
}
