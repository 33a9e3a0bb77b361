// Package agentcost measures what the node agent itself costs the node it tunes (issue 22): the
// real agent binary, against a real kube-apiserver (envtest), applies a full non-reboot profile to
// the real host of this machine; the test reports the time to Applied, the agent's CPU while idle,
// and how often it ran on the CPUs the profile isolates (perf, sched:sched_switch), then deletes
// the node state and checks that every host value came back. The agent's peak resident memory
// (VmHWM) over the run must stay at most 96 MiB, under its container's 128Mi limit.
//
// `go test ./test/agentcost/` (in `make test`) is the short form: a 3-second idle window, and it
// asserts what must hold however loaded the machine is: the node state Applied and then restored,
// the agent's threads confined to the reserved CPUs while the tuning is in force and given back
// their affinity after, and no agent thread on an isolated CPU. `make bench` runs it with
// -agentcost.idle=60s -agentcost.out=FILE and puts the figures, against the targets, in
// docs/benchmarks.md; times are never asserted by the test.
package agentcost

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/resolve"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

var (
	idleFlag = flag.Duration("agentcost.idle", 3*time.Second, "how long the agent's idle CPU and its runs on isolated CPUs are measured")
	outFlag  = flag.String("agentcost.out", "", "write the figures there as JSON (make bench)")
)

// agentComm is the agent binary's name here, so that perf names its threads unambiguously.
const agentComm = "tsagentcost"

// profileYAML is a full profile without a reboot: the sample profile's sections (kernel
// arguments are dropped from the resolved tuning), its NIC group on a veth pair of the test.
const profileYAML = `
cpu:
  reserved: "0"
  isolated: "1-63"
hugepages:
  pages:
  - size: 2Mi
    count: 8
  transparent: never
power:
  maxCStateExitLatencyMicroseconds: 2
  governor: performance
irq:
  keepOffIsolated: true
sysctls:
  kernel.timer_migration: "0"
  kernel.numa_balancing: "0"
  vm.stat_interval: "10"
  net.core.rmem_max: "33554432"
nics:
- name: md
  selector:
    interfaceNames: [%s]
  acceleration: busyPoll
`

// Figures are what make bench reads (hack/bench.sh).
type Figures struct {
	Settings          int     `json:"settings"`
	Changed           int     `json:"changed"`
	ApplySeconds      float64 `json:"applySeconds"`
	RestoreSeconds    float64 `json:"restoreSeconds"`
	IdleSeconds       float64 `json:"idleSeconds"`
	IdleCPUPercent    float64 `json:"idleCPUPercent"`
	IdleRunsPerSecond float64 `json:"idleRunsPerSecond"`
	IsolatedCPUs      string  `json:"isolatedCPUs"`
	IsolatedRuns      int     `json:"isolatedRuns"`
	OnlineCPUs        string  `json:"onlineCPUs"`
	PeakRSSMiB        int     `json:"peakRSSMiB"`
}

// peakRSSBound is the most the agent process may have resident at any time of the run (VmHWM):
// the chart's agent.resources limit is 128Mi, which its memory cgroup enforces on anonymous memory
// and page cache together; a quarter of it is left for the page cache and for growth.
const peakRSSBound = 96 << 20

func TestAgentCost(t *testing.T) {
	testutil.RequireRoot(t)
	perf := testutil.RequireTool(t, "perf")
	ip := testutil.RequireTool(t, "ip")
	goTool := testutil.RequireTool(t, "go")
	online, err := (&host.Host{Root: "/"}).OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if online.Len() < 2 {
		testutil.Unavailable(t, "needs 2 CPUs or more: one reserved, one isolated")
	}
	hosttest.LockRealHost(t)
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, agentComm)
	if out, err := exec.Command(goTool, "build", "-C", root, "-o", bin, "./cmd/agent").CombinedOutput(); err != nil {
		t.Fatalf("building the agent: %v: %s", err, out)
	}

	// the NIC group's interface: a veth pair with two queues, down, no address
	pid := os.Getpid()
	vethA := fmt.Sprintf("tsac%da", pid)
	hosttest.VethPair(t, ip, vethA, fmt.Sprintf("tsac%db", pid), 2)
	// the last line of defence: every real file the profile may touch, compared at the end
	hosttest.GuardRealFiles(t, realFiles(t, vethA))

	env, c := kubetest.New(t, kubetest.Options{})
	_, kubeconfig := env.AddAdmin(t, "tickstack-agent-cost")

	ctx := context.Background()
	node := fmt.Sprintf("agentcost-%d", pid)
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "--node-name", node, "--host-root", "/",
		"--journal-path", filepath.Join(dir, "journal.json"),
		"--irqbalance-config", filepath.Join(dir, "irqbalance"), "--irqbalance-restart-command", "",
		"--boot-loader", "none", "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
		"--kubeconfig", kubeconfig)
	logs, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			raw, _ := os.ReadFile(logs.Name())
			t.Logf("agent log:\n%s", raw)
		}
	})
	agentPID := cmd.Process.Pid
	startAffinity := threadAffinities(t, agentPID)

	get := func() *tsv1.LatencyNodeState {
		l := &tsv1.LatencyNodeState{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	var facts *tsv1.NodeFacts
	testutil.Poll(t, 60*time.Second, "the agent's facts", func() error {
		facts = get().Status.Facts
		if facts == nil {
			return fmt.Errorf("no facts yet")
		}
		for _, i := range facts.Interfaces {
			if i.Name == vethA {
				return nil
			}
		}
		return fmt.Errorf("facts lack %s", vethA)
	})

	var spec tsv1.LatencyProfileSpec
	if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(profileYAML, vethA)), &spec); err != nil {
		t.Fatal(err)
	}
	tun, err := resolve.Node(&spec, facts)
	if err != nil {
		t.Fatalf("resolving the profile for this host: %v", err)
	}
	tun.KernelArgs = nil // runtime settings only: no reboot
	isolated := cpuset.MustParse(string(tun.IsolatedCPUs))
	reserved := cpuset.MustParse(string(tun.ReservedCPUs))

	// time to Applied: from the spec's patch to the condition, seen by polling every 5 ms
	l := get()
	orig := l.DeepCopy()
	l.Spec.Tuning = tun
	t0 := time.Now()
	if err := c.Patch(ctx, l, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	var applied *tsv1.LatencyNodeState
	deadline := t0.Add(2 * time.Minute)
	for {
		applied = get()
		cond := meta.FindStatusCondition(applied.Status.Conditions, tsv1.NodeApplied)
		if cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == applied.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Applied after 2 minutes: %+v", applied.Status.Conditions)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f := Figures{ApplySeconds: time.Since(t0).Seconds(), Settings: len(applied.Status.Settings),
		IsolatedCPUs: isolated.String(), OnlineCPUs: online.String()}
	for _, s := range applied.Status.Settings {
		if s.State == tsv1.SettingInSync && s.Observed != "" {
			f.Changed++
		}
	}

	// confined to the reserved CPUs while the tuning is in force
	for tid, aff := range threadAffinities(t, agentPID) {
		if aff != reserved.String() {
			t.Errorf("agent thread %d may run on CPUs %s with the tuning in force, want the reserved %s", tid, aff, reserved)
		}
	}

	// idle: CPU time of every thread (schedstat, ns) and runs on the isolated CPUs (perf)
	time.Sleep(time.Second) // not a wait for a condition: the apply's last writes stay out of the idle window
	perfData := filepath.Join(dir, "perf.data")
	pr := exec.Command(perf, "record", "-q", "-e", "sched:sched_switch", "-C", isolated.String(), "-o", perfData,
		"--", "sleep", strconv.FormatFloat(idleFlag.Seconds(), 'f', 3, 64))
	cpu0, runs0 := schedstat(t, agentPID)
	w0 := time.Now()
	if out, err := pr.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v: %s", err, out)
	}
	cpu1, runs1 := schedstat(t, agentPID)
	f.IdleSeconds = time.Since(w0).Seconds()
	f.IdleCPUPercent = 100 * float64(cpu1-cpu0) / 1e9 / f.IdleSeconds
	f.IdleRunsPerSecond = float64(runs1-runs0) / f.IdleSeconds
	script, err := exec.Command(perf, "script", "-i", perfData, "-F", "cpu,trace").CombinedOutput()
	if err != nil {
		t.Fatalf("perf script: %v: %s", err, script)
	}
	switches := 0
	for _, line := range strings.Split(string(script), "\n") {
		if strings.Contains(line, "next_comm=") {
			switches++
		}
		if strings.Contains(line, "next_comm="+agentComm+" ") {
			f.IsolatedRuns++
		}
	}
	if switches == 0 {
		t.Fatalf("perf recorded no context switch at all on CPUs %s in %v: the measurement sees nothing", isolated, *idleFlag)
	}
	if f.IsolatedRuns != 0 {
		t.Errorf("the agent ran %d times on the isolated CPUs %s while idle", f.IsolatedRuns, isolated)
	}

	// restore: delete the node state; the finalizer goes when every original is back
	t1 := time.Now()
	if err := c.Delete(ctx, get()); err != nil {
		t.Fatal(err)
	}
	testutil.Poll(t, 2*time.Minute, "the node state restored and gone", func() error {
		err := c.Get(ctx, client.ObjectKey{Name: node}, &tsv1.LatencyNodeState{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return client.IgnoreNotFound(err)
	})
	f.RestoreSeconds = time.Since(t1).Seconds()
	testutil.Poll(t, 10*time.Second, "the agent's threads given their affinity back", func() error {
		for tid, aff := range threadAffinities(t, agentPID) {
			if want := startAffinity[agentPID]; aff != want {
				return fmt.Errorf("thread %d may run on %s, started with %s", tid, aff, want)
			}
		}
		return nil
	})

	// the agent's peak resident memory over the whole run: facts, apply, the boot unit (the copy of
	// its binary), idle checks, restore
	hwm, err := vmHWM(agentPID)
	if err != nil {
		t.Fatal(err)
	}
	f.PeakRSSMiB = int(hwm >> 20)
	if hwm > peakRSSBound {
		t.Errorf("the agent's peak resident memory (VmHWM) is %d MiB, want at most %d MiB: its container's limit is 128Mi", hwm>>20, peakRSSBound>>20)
	}

	t.Logf("agent cost: peak RSS %d MiB; %d settings (%d in effect) applied in %.3f s, restored in %.3f s; idle %.1f s: CPU %.4f %%, %.1f runs/s, %d runs on isolated CPUs %s",
		f.PeakRSSMiB, f.Settings, f.Changed, f.ApplySeconds, f.RestoreSeconds, f.IdleSeconds, f.IdleCPUPercent, f.IdleRunsPerSecond, f.IsolatedRuns, f.IsolatedCPUs)
	if *outFlag != "" {
		raw, _ := json.MarshalIndent(f, "", "  ")
		if err := os.WriteFile(*outFlag, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// vmHWM is the peak resident set size of pid, in bytes (VmHWM of /proc/PID/status).
func vmHWM(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// threadAffinities maps each thread of pid to the CPUs it may run on.
func threadAffinities(t *testing.T, pid int) map[int]string {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			continue // exited
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				set, err := cpuset.Parse(strings.TrimSpace(v))
				if err != nil {
					t.Fatal(err)
				}
				out[tid] = set.String()
			}
		}
	}
	return out
}

// schedstat sums, over the threads of pid, the time spent on a CPU (ns) and the number of times
// each was scheduled in (/proc/PID/task/TID/schedstat).
func schedstat(t *testing.T, pid int) (ns, runs uint64) {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, e.Name()))
		if err != nil {
			continue
		}
		var run, wait, slices uint64
		if _, err := fmt.Sscan(string(raw), &run, &wait, &slices); err != nil {
			t.Fatalf("schedstat %q: %v", raw, err)
		}
		ns += run
		runs += slices
	}
	return ns, runs
}

// realFiles lists the real kernel files the profile may change.
func realFiles(t *testing.T, veth string) []string {
	t.Helper()
	files := []string{"/proc/irq/default_smp_affinity", "/sys/kernel/mm/transparent_hugepage/enabled",
		"/sys/devices/virtual/workqueue/cpumask", "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"}
	for _, pat := range []string{"/proc/irq/*/smp_affinity_list", "/sys/class/net/" + veth + "/queues/*/[rx]ps_cpus",
		"/sys/devices/system/cpu/cpu*/cpuidle/state*/disable", "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
		"/sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, k := range []string{"kernel.timer_migration", "kernel.numa_balancing", "vm.stat_interval", "net.core.rmem_max"} {
		p, _ := host.SysctlPath(k)
		files = append(files, p)
	}
	var out []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	return out
}
