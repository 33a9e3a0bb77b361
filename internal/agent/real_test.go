package agent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/tuning"
)

// realSysctls are allow-listed sysctls no other test of this repository changes.
var realSysctls = []string{"vm.swappiness", "vm.dirty_background_ratio"}

// realFiles lists the real kernel files the test's profile may change, read directly.
func realFiles(t *testing.T, veth string) []string {
	t.Helper()
	files := []string{"/proc/irq/default_smp_affinity"}
	for _, pat := range []string{"/proc/irq/*/smp_affinity_list", "/sys/class/net/" + veth + "/queues/rx-*/rps_cpus"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, k := range realSysctls {
		p, _ := host.SysctlPath(k)
		files = append(files, p)
	}
	sort.Strings(files)
	return files
}

// TestRealHost runs the agent in-process against the real host of this machine (host root "/"):
// two allow-listed sysctls, the affinity of every IRQ (housekeeping = every online CPU, so IRQs
// stay where they are), irqbalance's banned CPUs (in a file of the test) and the RPS masks of a
// veth the test creates (down, no address). Status must show every setting with its observed
// value, Applied and the fingerprint label; a manual `sysctl -w` is found as drift (event,
// condition) and set back within the check period; deleting the node state restores every real
// file to its snapshot.
func TestRealHost(t *testing.T) {
	testutil.RequireRoot(t)
	ip := testutil.RequireTool(t, "ip")
	sysctl := testutil.RequireTool(t, "sysctl")
	hosttest.LockRealHost(t)

	pid := os.Getpid()
	vethA := fmt.Sprintf("tsagt%da", pid)
	hosttest.VethPair(t, ip, vethA, fmt.Sprintf("tsagt%db", pid), 2)
	// the last line of defence: anything still different is a failure, put back by hand
	files := realFiles(t, vethA)
	before := hosttest.GuardRealFiles(t, files)

	state := agenttest.TempDir(t, "real")
	irqbalanceFile := filepath.Join(state, "irqbalance") // never the host's own file
	restarts := filepath.Join(state, "irqbalance-restarts")
	h := &host.Host{Root: "/", IrqbalanceConfig: irqbalanceFile, NIC: &host.EthtoolNIC{}}
	eng := &tuning.Engine{Host: h, JournalPath: filepath.Join(state, "journal.json")}
	t.Cleanup(func() { _, _ = eng.Restore() }) // no-op when the agent restored
	node := agenttest.Name("real")
	const period = 2 * time.Second
	r := &agent.Reconciler{
		NodeName: node, Host: h, Engine: eng, CheckPeriod: period,
		IrqbalanceRestartCommand: agenttest.LogCommand(restarts),
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nics, err := host.WatchNICChanges(ctx, 0)
	if err != nil {
		t.Fatalf("watching NIC changes: %v", err)
	}

	online, err := h.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpus := online.CPUs()
	cur := func(k string) string {
		v, err := h.Sysctl(k)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := map[string]string{
		"vm.swappiness":             hosttest.Other(cur("vm.swappiness"), "13", "14"),
		"vm.dirty_background_ratio": hosttest.Other(cur("vm.dirty_background_ratio"), "7", "8"),
	}
	tun := &tsv1.NodeTuning{
		Sysctls: want,
		IRQ:     &tsv1.IRQTuning{HousekeepingCPUs: tsv1.CPUSet(online.String()), BannedCPUs: tsv1.CPUSet(fmt.Sprint(cpus[len(cpus)-1]))},
		NICs:    []tsv1.NICTuning{{Group: "md", Interface: vethA, Driver: "veth", Acceleration: tsv1.AccelerationKernel, RPSCPUs: tsv1.CPUSet(fmt.Sprint(cpus[0]))}},
	}

	createNode(t, node)
	createLNS(t, node, nil)
	agenttest.StartAgent(t, cfg, r, nics)
	testutil.Poll(t, 20*time.Second, "facts of the real host", func() error {
		l := getLNS(t, node)
		if l.Status.Facts == nil || l.Status.Facts.OnlineCPUs != tsv1.CPUSet(online.String()) {
			return fmt.Errorf("facts %+v", l.Status.Facts)
		}
		for _, i := range l.Status.Facts.Interfaces {
			if i.Name == vethA && i.Driver == "veth" {
				return nil
			}
		}
		return fmt.Errorf("facts lack %s (veth): %+v", vethA, l.Status.Facts.Interfaces)
	})
	if _, err := os.Stat(eng.JournalPath); !os.IsNotExist(err) {
		t.Fatalf("journal written before spec.tuning was set: %v", err)
	}

	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning = tun })
	pollApplied(t, node, 20*time.Second)
	l := getLNS(t, node)
	if !controllerutil.ContainsFinalizer(l, tsv1.RestoreFinalizer) {
		t.Error("no restore finalizer on a node whose host was changed")
	}
	seen := map[string]tsv1.SettingStatus{}
	irqs := 0
	for _, s := range l.Status.Settings {
		seen[s.Name] = s
		if strings.HasPrefix(s.Name, "irq/") {
			irqs++
		}
		switch s.State {
		case tsv1.SettingInSync:
			if s.Observed == "" && s.Desired != "" {
				t.Errorf("%s in sync without an observed value", s.Name)
			}
		case tsv1.SettingUnsupported:
			if s.Message == "" {
				t.Errorf("%s unsupported without a reason", s.Name)
			}
		default:
			t.Errorf("%s is %s after applying: %+v", s.Name, s.State, s)
		}
	}
	for k, v := range want {
		if s := seen["sysctl/"+k]; s.Observed != v || s.Desired != v {
			t.Errorf("status of sysctl/%s = %+v, want observed %q", k, s, v)
		}
		if got := cur(k); got != v {
			t.Errorf("real %s = %q, want %q", k, got, v)
		}
	}
	for _, q := range []string{"rx-0", "rx-1"} {
		if s := seen["rps/"+vethA+"/"+q]; s.Observed != fmt.Sprint(cpus[0]) {
			t.Errorf("status of rps/%s/%s = %+v", vethA, q, s)
		}
	}
	if irqs == 0 || seen["irq/default_smp_affinity"].State != tsv1.SettingInSync {
		t.Errorf("IRQ settings missing from status (%d IRQs)", irqs)
	}
	if s := seen["irqbalance/banned-cpus"]; s.State != tsv1.SettingInSync {
		t.Errorf("irqbalance setting %+v", s)
	}
	if n := len(agenttest.Lines(t, restarts)); n != 1 {
		t.Errorf("irqbalance restarted %d times, want 1", n)
	}
	if fp := getNode(t, node).Labels[tsv1.FingerprintLabel]; fp == "" || fp != l.Status.Fingerprint {
		t.Errorf("fingerprint label %q, status.fingerprint %q", fp, l.Status.Fingerprint)
	}

	// Someone changes a sysctl by hand: found at the next check (Drifted and an event) and set
	// back within the check period.
	var driftedSeen atomic.Bool
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			l := &tsv1.LatencyNodeState{}
			if err := k8s.Get(watchCtx, clientKey(node), l); err == nil &&
				wantCondition(l, tsv1.NodeDrifted, metav1.ConditionTrue, agent.ReasonDriftCorrected) == nil {
				driftedSeen.Store(true)
				return
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	manual := hosttest.Other(want["vm.swappiness"], "61", "62")
	if out, err := exec.Command(sysctl, "-w", "vm.swappiness="+manual).CombinedOutput(); err != nil {
		t.Fatalf("sysctl -w: %v: %s", err, out)
	}
	changed := time.Now()
	testutil.Poll(t, period+3*time.Second, "drift set back", func() error {
		if got := cur("vm.swappiness"); got != want["vm.swappiness"] {
			return fmt.Errorf("vm.swappiness is %s", got)
		}
		return nil
	})
	// Within the check period, plus slack for a loaded 2-vCPU machine.
	if took := time.Since(changed); took > period+2*time.Second {
		t.Errorf("drift set back after %s, check period %s", took, period)
	}
	testutil.Poll(t, 10*time.Second, "Drifted event and condition", func() error {
		evs := events(t, node, tsv1.NodeDrifted)
		if len(evs) == 0 {
			return fmt.Errorf("no Drifted event")
		}
		if !strings.Contains(evs[0].Note, "sysctl/vm.swappiness was \""+manual+"\"") {
			return fmt.Errorf("event note %q does not name the setting and its value", evs[0].Note)
		}
		if !driftedSeen.Load() {
			return fmt.Errorf("Drifted=True/%s never seen", agent.ReasonDriftCorrected)
		}
		return nil
	})
	// With nothing changed, the next check turns Drifted back to False.
	testutil.Poll(t, 2*period+3*time.Second, "drift cleared", func() error {
		return wantCondition(getLNS(t, node), tsv1.NodeDrifted, metav1.ConditionFalse, agent.ReasonNoDrift)
	})

	// Deleting the node state puts every original back.
	deleteLNS(t, node)
	after := hosttest.SnapshotFiles(t, files)
	for f, v := range before {
		if after[f] != v {
			t.Errorf("after the restore %s = %q, was %q", f, after[f], v)
		}
	}
	if _, err := os.Stat(irqbalanceFile); !os.IsNotExist(err) {
		t.Errorf("irqbalance file left behind (it did not exist before): %v", err)
	}
	if n := len(agenttest.Lines(t, restarts)); n != 2 {
		t.Errorf("irqbalance restarted %d times, want 2 (apply and restore)", n)
	}
	if _, err := os.Stat(eng.JournalPath); !os.IsNotExist(err) {
		t.Errorf("journal left after the restore: %v", err)
	}
	if _, ok := getNode(t, node).Labels[tsv1.FingerprintLabel]; ok {
		t.Error("fingerprint label left on the node")
	}
}

// TestRealHostNICEvent: a NIC setting changed with ethtool is set back at once, long before the
// periodic check (one hour here), because the kernel's ethtool netlink notification triggers a
// reconcile. The veth pair is the test's own (down, no address).
func TestRealHostNICEvent(t *testing.T) {
	testutil.RequireRoot(t)
	ip := testutil.RequireTool(t, "ip")
	ethtool := testutil.RequireTool(t, "ethtool")
	pid := os.Getpid()
	vethC := fmt.Sprintf("tsagt%dc", pid)
	hosttest.VethPair(t, ip, vethC, fmt.Sprintf("tsagt%dd", pid), 4)

	state := agenttest.TempDir(t, "nic")
	h := &host.Host{Root: "/", IrqbalanceConfig: filepath.Join(state, "irqbalance"), NIC: &host.EthtoolNIC{}}
	channels := func() map[string]uint32 {
		p, err := h.NICParams(vethC, host.Channels)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	orig := channels()
	eng := &tuning.Engine{Host: h, JournalPath: filepath.Join(state, "journal.json")}
	t.Cleanup(func() { _, _ = eng.Restore() })
	node := agenttest.Name("nic")
	r := &agent.Reconciler{NodeName: node, Host: h, Engine: eng, CheckPeriod: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := host.WatchNICChanges(ctx, 0); err != nil {
		t.Fatalf("watching NIC changes: %v", err)
	}
	nics := agent.KeepWatchingNICs(ctx, func(ctx context.Context) (<-chan string, error) { return host.WatchNICChanges(ctx, 0) }, 100*time.Millisecond)
	createNode(t, node)
	createLNS(t, node, &tsv1.NodeTuning{NICs: []tsv1.NICTuning{{Group: "md", Interface: vethC, Driver: "veth",
		Acceleration: tsv1.AccelerationKernel, Channels: &tsv1.Channels{RX: ptr32(2), TX: ptr32(2)}}}})
	agenttest.StartAgent(t, cfg, r, nics)
	pollApplied(t, node, 20*time.Second)
	if c := channels(); c["rx"] != 2 || c["tx"] != 2 {
		t.Fatalf("channels after applying: %v", c)
	}

	if out, err := exec.Command(ethtool, "-L", vethC, "rx", "3", "tx", "3").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -L: %v: %s", err, out)
	}
	// Seconds, on a loaded machine, against a one-hour period.
	testutil.Poll(t, 20*time.Second, "NIC drift set back on the kernel's notification", func() error {
		if c := channels(); c["rx"] != 2 || c["tx"] != 2 {
			return fmt.Errorf("channels %v", c)
		}
		for _, e := range events(t, node, tsv1.NodeDrifted) {
			if strings.Contains(e.Note, "channels/"+vethC+"/rx was \"3\"") {
				return nil
			}
		}
		return fmt.Errorf("no Drifted event naming channels/%s/rx", vethC)
	})

	deleteLNS(t, node)
	if c := channels(); c["rx"] != orig["rx"] || c["tx"] != orig["tx"] {
		t.Errorf("channels after the restore %v, were %v", c, orig)
	}
}

func ptr32(v int32) *int32 { return &v }
