package tuning

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

func readTree(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func resultsByName(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

func requireAllInSync(t *testing.T, rs []Result) {
	t.Helper()
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rs {
		if r.State != InSync && r.State != Unsupported {
			t.Errorf("%s (%s): state %s, desired %q, observed %q %s", r.Name, r.Field, r.State, r.Desired, r.Observed, r.Message)
		}
	}
}

// applyInSync applies d and requires every result in sync (or unsupported on this host).
func applyInSync(t *testing.T, e *Engine, d *Desired) *Report {
	t.Helper()
	rep, err := e.Apply(d)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	requireAllInSync(t, rep.Results)
	return rep
}

// TestTreeApplyVerifyRestore runs the whole engine against a host-root tree holding what this VM
// cannot change (cpufreq, turbo, SR-IOV VFs, 1G hugepages, a PCI NIC's queues).
func TestTreeApplyVerifyRestore(t *testing.T) {
	dir, before, e := newTree(t)
	d := treeDesired()

	rep := applyInSync(t, e, d)
	for p, want := range map[string]string{
		"proc/sys/vm/stat_interval":                                                "10",
		"proc/sys/kernel/timer_migration":                                          "0",
		"proc/irq/1/smp_affinity_list":                                             "0-1",
		"proc/irq/0/smp_affinity_list":                                             "0-3", // IRQ 0 (timer) is not movable
		"proc/irq/default_smp_affinity":                                            "3",
		"sys/devices/system/cpu/cpu2/cpufreq/scaling_governor":                     "performance",
		"sys/devices/system/cpu/intel_pstate/no_turbo":                             "1",
		"sys/devices/system/cpu/cpu2/cpuidle/state1/disable":                       "0", // 2 us allowed
		"sys/devices/system/cpu/cpu2/cpuidle/state2/disable":                       "1",
		"sys/devices/system/cpu/cpu3/cpuidle/state3/disable":                       "1",
		"sys/devices/system/cpu/cpu0/cpuidle/state3/disable":                       "0", // CPU 0 not named
		"sys/devices/virtual/workqueue/cpumask":                                    "3",
		"sys/devices/pci0000:00/0000:3b:00.0/sriov_numvfs":                         "4",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/queues/rx-1/rps_cpus":      "3",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/queues/tx-1/xps_cpus":      "1",
		"sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages": "4",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":                    "64",
		"sys/devices/system/cpu/smt/control":                                       "off",
	} {
		if got := readTree(t, dir, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if got := readTree(t, dir, "etc/default/irqbalance"); !strings.Contains(got, "IRQBALANCE_BANNED_CPULIST=2-3") || !strings.Contains(got, `IRQBALANCE_ARGS="--policyscript=/x"`) {
		t.Errorf("irqbalance file:\n%s", got)
	}
	// The tree has no NIC implementation: the coalescing setting is reported, not applied.
	if r := resultsByName(rep.Results)["coalesce/ens1f0/rx-usecs"]; r.State != Unsupported || !strings.Contains(r.Message, "no NIC implementation") {
		t.Errorf("coalesce result = %+v, want Unsupported", r)
	}
	fp := Fingerprint(rep.Results, "isolcpus=2-3")
	if len(fp) != 16 {
		t.Fatalf("fingerprint %q is not 16 hex digits", fp)
	}
	// Applying again changes nothing.
	rep2, err := e.Apply(d)
	if err != nil || len(rep2.Changed) != 0 {
		t.Fatalf("second Apply changed %v, err %v", rep2.Changed, err)
	}

	// Drift: someone changes a sysctl and an IRQ; Verify reports both, the fingerprint moves.
	if err := os.WriteFile(filepath.Join(dir, "proc/sys/vm/stat_interval"), []byte("99"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "proc/irq/24/smp_affinity_list"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.Verify(d)
	if err != nil {
		t.Fatal(err)
	}
	drift := Drift(res)
	var names []string
	for _, r := range drift {
		names = append(names, r.Name+"="+r.Observed)
	}
	if !slices.Equal(names, []string{"irq/24=2", "sysctl/vm.stat_interval=99"}) {
		t.Fatalf("drift = %v", names)
	}
	if Fingerprint(res, "isolcpus=2-3") == fp {
		t.Fatal("fingerprint did not change with drift")
	}
	// Re-apply corrects the drift; the journal still holds the true originals.
	rep3, err := e.Apply(d)
	if err != nil {
		t.Fatal(err)
	}
	requireAllInSync(t, rep3.Results)
	if !slices.Equal(rep3.Changed, []string{"irq/24", "sysctl/vm.stat_interval"}) && !slices.Equal(rep3.Changed, []string{"sysctl/vm.stat_interval", "irq/24"}) {
		t.Fatalf("re-apply changed %v", rep3.Changed)
	}
	if Fingerprint(rep3.Results, "isolcpus=2-3") != fp {
		t.Fatal("fingerprint differs after correcting drift")
	}
	journal, err := e.Journal()
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range journal {
		if en.Name == "sysctl/vm.stat_interval" && en.Original != "1" {
			t.Fatalf("journaled original of vm.stat_interval = %q, want 1", en.Original)
		}
		if en.Name == "irqbalance/banned-cpus" && en.Original != Absent {
			t.Fatalf("journaled original of irqbalance = %q, want %q", en.Original, Absent)
		}
	}

	// A smaller profile puts back what it no longer sets.
	smaller := treeDesired()
	smaller.CPUFreq = nil
	smaller.Hugepages = nil
	rep4, err := e.Apply(smaller)
	if err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"); got != "powersave" {
		t.Fatalf("governor after dropping cpuFreq = %q, want powersave", got)
	}
	if got := readTree(t, dir, "sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"); got != "0" {
		t.Fatalf("1G pool after dropping hugepages = %q, want 0", got)
	}
	if !slices.Contains(rep4.Restored, "cpufreq/turbo") {
		t.Fatalf("Restored = %v, want cpufreq/turbo in it", rep4.Restored)
	}

	// Restore gives back exactly the originals and clears the journal.
	if _, err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	if diffs := hosttest.Diff(before, hosttest.Snapshot(t, dir)); len(diffs) > 0 {
		t.Fatalf("after Restore the tree differs:\n%s", strings.Join(diffs, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultJournalPath)); !os.IsNotExist(err) {
		t.Fatalf("journal still exists: %v", err)
	}
	if restored, err := e.Restore(); err != nil || len(restored) != 0 {
		t.Fatalf("second Restore = %v, %v", restored, err)
	}
}

// TestApplyRefusesBeforeChanging: what this host cannot do is reported with the field and the
// fix, and nothing changes.
func TestApplyRefusesBeforeChanging(t *testing.T) {
	dir, before, e := newTree(t)
	d := treeDesired()
	d.WorkqueueCPUs = setp("0-7")
	d.Interfaces = append(d.Interfaces, InterfaceTuning{Name: "eth9", RPSCPUs: setp("0")})
	d.Interfaces[0].SRIOVNumVFs = intp(16)
	d.Hugepages = append(d.Hugepages, HugepageAllocation{Node: 3, SizeKB: 2048, Count: 1})
	_, err := e.Apply(d)
	if err == nil {
		t.Fatal("Apply accepted a profile this host cannot run")
	}
	for _, want := range []string{
		"interfaces[eth9].name: no interface \"eth9\" on this node",
		"interfaces[ens1f0].sriovNumVFs: 16 is more than the 8 VFs",
		"workqueueCPUs: CPUs 4-7 are not online on this node (online: 0-3)",
		"hugepages[3]: node 3 has no 2048 kB hugepage pool",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if diffs := hosttest.Diff(before, hosttest.Snapshot(t, dir)); len(diffs) > 0 {
		t.Fatalf("a refused Apply changed the host:\n%s", strings.Join(diffs, "\n"))
	}
	// With a valid NIC phase that would change the VF count, the other problems still stop
	// everything before the first write.
	d = treeDesired()
	d.WorkqueueCPUs = setp("0-7")
	d.Hugepages = append(d.Hugepages, HugepageAllocation{Node: 3, SizeKB: 2048, Count: 1})
	_, err = e.Apply(d)
	for _, want := range []string{
		"workqueueCPUs: CPUs 4-7 are not online on this node (online: 0-3)",
		"hugepages[3]: node 3 has no 2048 kB hugepage pool",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if diffs := hosttest.Diff(before, hosttest.Snapshot(t, dir)); len(diffs) > 0 {
		t.Fatalf("a refused Apply changed the host:\n%s", strings.Join(diffs, "\n"))
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		d    Desired
		want []string
	}{
		{name: "empty is valid", d: Desired{}},
		{name: "valid", d: *treeDesired()},
		{
			name: "sysctl not allowed and bad value",
			d:    Desired{Sysctls: map[string]string{"kernel.panic": "1", "vm.stat_interval": "abc", "net.core.busy_read": "-5"}},
			want: []string{"sysctls[kernel.panic]: is not an allowed sysctl; use one of:", "sysctls[vm.stat_interval]: value \"abc\" is not an integer", "sysctls[net.core.busy_read]: value -5 is outside [0, 1000000]"},
		},
		{
			name: "empty cpu sets",
			d:    Desired{IRQAffinity: &IRQAffinity{}, WorkqueueCPUs: &cpuset.Set{}},
			want: []string{"irqAffinity.cpus: is empty", "workqueueCPUs: is empty"},
		},
		{
			name: "modes",
			d:    Desired{THP: &THP{Enabled: "sometimes", Defrag: "madvise"}, CPUFreq: &CPUFreq{Governor: "turbo"}, CPUIdle: &CPUIdle{MaxLatencyUs: -1}},
			want: []string{"thp.enabled: \"sometimes\" is not a THP mode; use one of always, madvise, never", "cpuFreq.governor: \"turbo\" is not a cpufreq governor", "cpuIdle.maxLatencyUs: is negative"},
		},
		{
			name: "interfaces",
			d: Desired{Interfaces: []InterfaceTuning{
				{Name: "eth0", Coalesce: map[string]uint32{"rx-usecs": 0, "adaptive-rx": 2, "bogus": 1}},
				{Name: "eth0"},
				{Name: "a/b"},
			}},
			want: []string{"interfaces[eth0].coalesce[adaptive-rx]: is 2; use 0 (off) or 1 (on)", "interfaces[eth0].coalesce[bogus]: is not an ethtool coalesce parameter", "interfaces[eth0].name: appears twice", "interfaces[a/b].name"},
		},
		{
			name: "hugepages",
			d:    Desired{Hugepages: []HugepageAllocation{{Node: 0, SizeKB: 4096, Count: 1}, {Node: -2, SizeKB: 2048, Count: -2}}},
			want: []string{"hugepages[0].sizeKB: 4096 kB is not a hugepage size", "hugepages[1].node: is negative", "hugepages[1].count: is negative"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(&c.d)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted an invalid profile")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestCorruptJournalStops: a journal that cannot be parsed holds originals nothing else knows;
// the engine stops instead of overwriting it.
func TestCorruptJournalStops(t *testing.T) {
	dir := hosttest.TempDir(t)
	buildTree(t, dir, false)
	jp := filepath.Join(dir, DefaultJournalPath)
	if err := os.MkdirAll(filepath.Dir(jp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jp, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := hosttest.Snapshot(t, dir)
	e := treeEngine(dir)
	if _, err := e.Apply(treeDesired()); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("Apply with a corrupt journal: %v", err)
	}
	if _, err := e.Restore(); err == nil {
		t.Fatal("Restore with a corrupt journal succeeded")
	}
	if diffs := hosttest.Diff(before, hosttest.Snapshot(t, dir)); len(diffs) > 0 {
		t.Fatalf("host changed:\n%s", strings.Join(diffs, "\n"))
	}
	if b, _ := os.ReadFile(jp); string(b) != "{not json" {
		t.Fatalf("journal was overwritten: %q", b)
	}
}
