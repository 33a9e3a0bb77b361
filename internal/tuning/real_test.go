package tuning

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

// realFiles lists the real kernel files a real-host test may change: every IRQ's affinity, the
// default affinity, every cpuidle disable file, THP, the workqueue mask, node0's 2M pool and the
// given sysctls. Their content is read directly, independent of the code under test.
func realFiles(t *testing.T, sysctls []string) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{
		"/proc/irq/*/smp_affinity_list",
		"/sys/devices/system/cpu/cpu*/cpuidle/state*/disable",
	} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	files = append(files,
		"/proc/irq/default_smp_affinity",
		"/sys/kernel/mm/transparent_hugepage/enabled",
		"/sys/kernel/mm/transparent_hugepage/defrag",
		"/sys/devices/virtual/workqueue/cpumask",
		"/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages",
	)
	for _, k := range sysctls {
		p, _ := host.SysctlPath(k)
		files = append(files, p)
	}
	sort.Strings(files)
	return files
}

// putBack is the last line of defence after a failed test: it writes back, by hand, every real
// file that differs from the snapshot.
func putBack(t *testing.T, before map[string]string) {
	for f, v := range before {
		b, err := os.ReadFile(f)
		if err != nil || strings.TrimSpace(string(b)) == v {
			continue
		}
		if strings.HasPrefix(f, "/sys/kernel/mm/transparent_hugepage/") {
			v, _ = host.ParseBracketChoice(v)
		}
		if err := os.WriteFile(f, []byte(v), 0); err != nil {
			t.Errorf("could not put %s back to %q: %v", f, v, err)
		}
	}
}

// TestRealHostApplyVerifyRestore applies a profile to the real host of this machine — sysctls
// from the allow-list, the affinity of every movable IRQ, a CPU's idle states, THP, the
// workqueue mask, a 2M hugepage pool, and the channels and RPS/XPS masks of a veth in the
// test's own namespace — detects manual drift, re-applies, and restores; the real files must
// then equal what they were before.
func TestRealHostApplyVerifyRestore(t *testing.T) {
	env := hosttest.New(t, "t")
	hosttest.LockRealHost(t) // the agent's real-host test changes IRQ affinity too
	h := env.Host
	// Sysctls other tests of this repository leave alone (net.core.busy_read/busy_poll are
	// global and the data-plane tests use them).
	sysctls := []string{"vm.stat_interval", "kernel.timer_migration", "vm.compaction_proactiveness"}
	files := realFiles(t, sysctls)
	before := hosttest.SnapshotFiles(t, files)
	t.Cleanup(func() {
		// Runs after the engine's own restore below: anything still different is a test failure
		// and is put back by hand so the machine is never left changed.
		if diffs := hosttest.Diff(before, hosttest.SnapshotFiles(t, files)); len(diffs) > 0 {
			t.Errorf("real host differs after the test:\n%s", strings.Join(diffs, "\n"))
			putBack(t, before)
		}
	})
	e := &Engine{Host: h}
	t.Cleanup(func() {
		if _, err := e.Restore(); err != nil {
			t.Errorf("cleanup restore: %v", err)
		}
	})

	online, err := h.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	first := online.CPUs()[0]
	last := online.CPUs()[online.Len()-1]
	cur := func(k string) string {
		v, err := h.Sysctl(k)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	d := &Desired{
		Sysctls: map[string]string{
			"vm.stat_interval":            hosttest.Other(cur("vm.stat_interval"), "7", "8"),
			"kernel.timer_migration":      hosttest.Other(cur("kernel.timer_migration"), "0", "1"),
			"vm.compaction_proactiveness": hosttest.Other(cur("vm.compaction_proactiveness"), "0", "10"),
		},
		IRQAffinity:          &IRQAffinity{CPUs: cpuset.New(first)},
		IrqbalanceBannedCPUs: setp(fmt.Sprint(last)),
		CPUIdle:              &CPUIdle{CPUs: cpuset.New(last), MaxLatencyUs: 0},
		WorkqueueCPUs:        setp(fmt.Sprint(first)),
		Interfaces: []InterfaceTuning{{
			Name:     env.A,
			Channels: map[string]uint32{"rx": 2, "tx": 2},
			RPSCPUs:  setp(fmt.Sprint(last)),
			XPSCPUs:  setp(fmt.Sprint(first)),
		}},
	}
	if sel, _, err := h.THP(host.THPEnabled); err == nil {
		dsel, _, _ := h.THP(host.THPDefrag)
		d.THP = &THP{Enabled: hosttest.Other(sel, "never", "madvise"), Defrag: hosttest.Other(dsel, "never", "madvise")}
	}
	if _, err := h.Hugepages(0, 2048); err == nil {
		n, _ := h.Hugepages(0, 2048)
		d.Hugepages = []HugepageAllocation{{Node: 0, SizeKB: 2048, Count: n + 2}}
	}
	deeper := 0
	idle, _ := h.IdleStates(last)
	for _, s := range idle {
		if s.LatencyUs > 0 {
			deeper++
		}
	}

	rep := applyInSync(t, e, d)
	states := map[State]int{}
	for _, r := range rep.Results {
		states[r.State]++
		if r.State == Unsupported {
			t.Logf("unsupported here: %s (observed %q): %s", r.Name, r.Observed, r.Message)
		}
	}
	t.Logf("applied %d settings, changed %d: %v", len(rep.Results), len(rep.Changed), states)
	byName := resultsByName(rep.Results)
	// Every planned setting is reported, with what is observed.
	for _, name := range []string{"sysctl/vm.stat_interval", "irq/default_smp_affinity", "workqueue/cpumask",
		"channels/" + env.A + "/rx", "rps/" + env.A + "/rx-1", "xps/" + env.A + "/tx-0", "irqbalance/banned-cpus"} {
		if r, ok := byName[name]; !ok || r.Observed == "" {
			t.Errorf("result %s missing or without observed value: %+v", name, r)
		}
	}
	if _, ok := byName["rps/"+env.A+"/rx-3"]; ok {
		t.Errorf("rx-3 planned although channels were reduced to 2")
	}
	// Independent reads of the real files.
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := read("/proc/sys/vm/stat_interval"); got != d.Sysctls["vm.stat_interval"] {
		t.Errorf("vm.stat_interval = %s", got)
	}
	t.Run("cpuidle", func(t *testing.T) {
		// What this host has decides what the engine must say: a CPU without cpuidle states (no
		// cpuidle driver, as on some VMs) is reported Unsupported as a whole; one with only
		// zero-latency states has nothing to disable; otherwise each deeper state is disabled.
		var planned []Result
		for _, r := range rep.Results {
			if strings.HasPrefix(r.Name, fmt.Sprintf("cpuidle/cpu%d", last)) {
				planned = append(planned, r)
			}
		}
		switch {
		case len(idle) == 0:
			if len(planned) != 1 || planned[0].Name != fmt.Sprintf("cpuidle/cpu%d", last) || planned[0].State != Unsupported ||
				!strings.Contains(planned[0].Message, "idle=poll") {
				t.Fatalf("cpu%d has no cpuidle states: want one Unsupported cpuidle/cpu%d naming idle=poll, got %+v", last, last, planned)
			}
			return
		case deeper == 0:
			if len(planned) != 0 {
				t.Fatalf("cpu%d has no idle state deeper than 0 us, yet %+v were planned", last, planned)
			}
			return
		}
		if len(planned) != deeper {
			t.Errorf("cpu%d: %d settings planned for %d deeper states: %+v", last, len(planned), deeper, planned)
		}
		read := func(p string) string {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(b))
		}
		for _, s := range idle {
			if s.LatencyUs > 0 {
				if got := read(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state%d/disable", last, s.Index)); got != "1" {
					t.Errorf("cpu%d state%d (%s, %d us) disable = %s, want 1", last, s.Index, s.Name, s.LatencyUs, got)
				}
			}
		}
	})
	moved := 0
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "irq/") && r.Name != "irq/default_smp_affinity" && r.State == InSync {
			if got := read("/proc/" + r.Name + "/smp_affinity_list"); got != fmt.Sprint(first) {
				t.Errorf("%s affinity = %s, want %d", r.Name, got, first)
			}
			moved++
		}
	}
	if moved == 0 {
		t.Error("no IRQ was moved")
	}
	out := env.Exec(t, "ethtool", "-l", env.A)
	if cur := out[strings.Index(out, "Current hardware settings"):]; !strings.Contains(cur, "RX:\t\t2") {
		t.Errorf("ethtool -l:\n%s", out)
	}
	fp := Fingerprint(rep.Results)

	// Manual drift: a sysctl and an IRQ mask changed behind the agent's back.
	driftIRQ := ""
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "irq/") && r.Name != "irq/default_smp_affinity" && r.State == InSync && first != last {
			driftIRQ = r.Name
			break
		}
	}
	if err := os.WriteFile("/proc/sys/vm/stat_interval", []byte("9"), 0); err != nil {
		t.Fatal(err)
	}
	want := []string{"sysctl/vm.stat_interval"}
	if driftIRQ != "" {
		if err := os.WriteFile("/proc/"+driftIRQ+"/smp_affinity_list", []byte(fmt.Sprint(last)), 0); err != nil {
			t.Fatal(err)
		}
		want = []string{driftIRQ, "sysctl/vm.stat_interval"}
	}
	res, err := e.Verify(d)
	if err != nil {
		t.Fatal(err)
	}
	var drifted []string
	for _, r := range Drift(res) {
		drifted = append(drifted, r.Name)
	}
	if strings.Join(drifted, " ") != strings.Join(want, " ") {
		t.Fatalf("drift = %v, want %v", drifted, want)
	}
	if Fingerprint(res) == fp {
		t.Fatal("fingerprint unchanged by drift")
	}
	rep2, err := e.Apply(d)
	if err != nil {
		t.Fatal(err)
	}
	requireAllInSync(t, rep2.Results)
	if Fingerprint(rep2.Results) != fp {
		t.Fatal("fingerprint differs after re-applying")
	}

	// Restore: every real file is back to what it was (checked independently).
	if _, err := e.Restore(); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if diffs := hosttest.Diff(before, hosttest.SnapshotFiles(t, files)); len(diffs) > 0 {
		t.Fatalf("after Restore the real host differs:\n%s", strings.Join(diffs, "\n"))
	}
	out = env.Exec(t, "ethtool", "-l", env.A)
	if cur := out[strings.Index(out, "Current hardware settings"):]; !strings.Contains(cur, fmt.Sprintf("RX:\t\t%d", env.Queues)) {
		t.Errorf("channels not restored:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(env.Root, "etc/default/irqbalance")); !os.IsNotExist(err) {
		t.Errorf("irqbalance file left: %v", err)
	}
}

// TestRealHostUnsupported: what this host has no knob for (ring sizes on a veth, cpufreq and
// SMT in this VM) is reported Unsupported with the reason, never fails the rest, and never counts
// as drift.
func TestRealHostUnsupported(t *testing.T) {
	env := hosttest.New(t, "u")
	h := env.Host
	files := realFiles(t, nil)
	before := hosttest.SnapshotFiles(t, files)
	e := &Engine{Host: h}
	t.Cleanup(func() {
		if _, err := e.Restore(); err != nil {
			t.Errorf("cleanup restore: %v", err)
		}
		if diffs := hosttest.Diff(before, hosttest.SnapshotFiles(t, files)); len(diffs) > 0 {
			t.Errorf("real host changed:\n%s", strings.Join(diffs, "\n"))
			putBack(t, before)
		}
	})
	d := &Desired{
		CPUFreq: &CPUFreq{Governor: "performance", Turbo: boolp(false)},
		SMT:     boolp(false),
		Interfaces: []InterfaceTuning{{
			Name:     env.A,
			Rings:    map[string]uint32{"rx": 256},
			Coalesce: map[string]uint32{"rx-usecs": 0, "adaptive-rx": 0},
			Channels: map[string]uint32{"rx": 1},
		}},
	}
	rep, err := e.Apply(d)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	byName := resultsByName(rep.Results)
	if r := byName["channels/"+env.A+"/rx"]; r.State != InSync || r.Observed != "1" {
		t.Errorf("channels rx: %+v", r)
	}
	for _, name := range []string{"rings/" + env.A + "/rx", "coalesce/" + env.A + "/rx-usecs", "coalesce/" + env.A + "/adaptive-rx"} {
		if r := byName[name]; r.State != Unsupported || !strings.Contains(r.Message, "not supported") {
			t.Errorf("%s: %+v, want Unsupported saying why", name, r)
		}
	}
	online, _ := h.OnlineCPUs()
	if !h.HasCPUFreq(online.CPUs()[0]) {
		if r := byName[fmt.Sprintf("cpufreq/cpu%d/governor", online.CPUs()[0])]; r.State != Unsupported || !strings.Contains(r.Message, "no cpufreq") {
			t.Errorf("governor without cpufreq: %+v", r)
		}
	}
	if _, err := h.Turbo(); err != nil {
		if r := byName["cpufreq/turbo"]; r.State != Unsupported {
			t.Errorf("turbo without cpufreq: %+v", r)
		}
	}
	if ctl, _ := h.SMTControl(); ctl == host.SMTNotSupported {
		if r := byName["smt/control"]; r.State != Unsupported {
			t.Errorf("smt without siblings: %+v", r)
		}
	}
	if drift := Drift(rep.Results); len(drift) != 0 {
		t.Errorf("unsupported settings counted as drift: %+v", drift)
	}
	for _, r := range rep.Results {
		if r.State == Unsupported && slices.Contains(rep.Changed, r.Name) {
			t.Errorf("unsupported %s was written", r.Name)
		}
	}
	if _, err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	if ch, _ := h.NICParams(env.A, host.Channels); ch["rx"] != uint32(env.Queues) {
		t.Fatalf("channels not restored: %v", ch)
	}
}
