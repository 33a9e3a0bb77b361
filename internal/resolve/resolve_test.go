package resolve

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
)

func facts8() *tsv1.NodeFacts {
	return &tsv1.NodeFacts{
		OnlineCPUs: "0-7",
		NUMANodes:  []tsv1.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}},
		Interfaces: []tsv1.InterfaceFacts{
			{Name: "ens1f0", Driver: "ice", PCIAddress: "0000:3b:00.0", Vendor: "8086", Device: "1592", SRIOVTotalVFs: 64},
			{Name: "ens1f1", Driver: "ice", PCIAddress: "0000:3b:00.1", Vendor: "8086", Device: "1592", SRIOVTotalVFs: 64},
			{Name: "ens1f0v0", Driver: "iavf", PCIAddress: "0000:3b:01.0", Vendor: "8086", Device: "1889", PhysicalFunction: "ens1f0"},
			{Name: "eno1", Driver: "igb", PCIAddress: "0000:01:00.0", Vendor: "8086", Device: "1521"},
		},
	}
}

// nodeOrErr resolves spec for facts. With wantErr it checks that the resolution fails with an
// error containing it and returns nil; without, it fails the test on any error.
func nodeOrErr(t *testing.T, spec *tsv1.LatencyProfileSpec, facts *tsv1.NodeFacts, wantErr string) *tsv1.NodeTuning {
	t.Helper()
	got, err := Node(spec, facts)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want one containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return got
}

func TestNodeCPUsAndKernelArgs(t *testing.T) {
	tests := []struct {
		name         string
		spec         tsv1.LatencyProfileSpec
		facts        *tsv1.NodeFacts
		wantReserved tsv1.CPUSet
		wantIsolated tsv1.CPUSet
		wantArgs     []string
		wantErr      string
	}{{
		name:         "isolated clipped to the node's CPUs",
		spec:         tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-63"}},
		facts:        facts8(),
		wantReserved: "0-1", wantIsolated: "2-7",
		wantArgs: []string{"isolcpus=managed_irq,2-7", "nohz_full=2-7", "rcu_nocbs=2-7", "irqaffinity=0-1"},
	}, {
		name:         "strict isolation adds the domain flag; irq placement can be turned off",
		spec:         tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0", Isolated: "1-3", IsolationMode: tsv1.IsolationStrict}, IRQ: &tsv1.IRQSpec{KeepOffIsolated: ptr.To(false)}},
		facts:        facts8(),
		wantReserved: "0", wantIsolated: "1-3",
		wantArgs: []string{"isolcpus=managed_irq,domain,1-3", "nohz_full=1-3", "rcu_nocbs=1-3"},
	}, {
		name: "hugepages, idle poll, nosmt and user args in a stable order",
		spec: tsv1.LatencyProfileSpec{
			CPU:       &tsv1.CPUSpec{Reserved: "0"},
			Hugepages: &tsv1.HugepagesSpec{DefaultSize: "1Gi", Pages: []tsv1.HugePages{{Size: "1Gi", Count: 4}, {Size: "2Mi", Count: 512, Node: ptr.To[int32](1)}}},
			Power:     &tsv1.PowerSpec{IdlePoll: ptr.To(true), SMT: tsv1.Disabled},
			Kernel:    &tsv1.KernelSpec{AdditionalArgs: []string{"tsc=reliable", "nosoftlockup"}},
		},
		facts:        facts8(),
		wantReserved: "0",
		wantArgs:     []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=4", "idle=poll", "nosmt", "tsc=reliable", "nosoftlockup"},
	}, {
		name:    "reserved CPUs absent from the node",
		spec:    tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "16-17", Isolated: "2-7"}},
		facts:   facts8(),
		wantErr: "spec.cpu.reserved: none of CPUs 16-17 exist on this node (online: 0-7)",
	}, {
		name:    "isolated CPUs absent from the node",
		spec:    tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0", Isolated: "32-63"}},
		facts:   facts8(),
		wantErr: "spec.cpu.isolated: none of CPUs 32-63 exist",
	}, {
		name:    "overlapping reserved and isolated",
		spec:    tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-2", Isolated: "2-7"}},
		facts:   facts8(),
		wantErr: "CPUs 2 are both reserved and isolated",
	}, {
		name:    "hugepages on a NUMA node the host lacks",
		spec:    tsv1.LatencyProfileSpec{Hugepages: &tsv1.HugepagesSpec{Pages: []tsv1.HugePages{{Size: "2Mi", Count: 8, Node: ptr.To[int32](3)}}}},
		facts:   facts8(),
		wantErr: "spec.hugepages.pages[0].node: NUMA node 3 does not exist",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nodeOrErr(t, &tt.spec, tt.facts, tt.wantErr)
			if got == nil {
				return
			}
			if got.ReservedCPUs != tt.wantReserved || got.IsolatedCPUs != tt.wantIsolated {
				t.Errorf("cpus = reserved %q isolated %q, want %q %q", got.ReservedCPUs, got.IsolatedCPUs, tt.wantReserved, tt.wantIsolated)
			}
			if !reflect.DeepEqual(got.KernelArgs, tt.wantArgs) {
				t.Errorf("kernel args = %q, want %q", got.KernelArgs, tt.wantArgs)
			}
		})
	}
}

func TestNodeWaitsForFacts(t *testing.T) {
	spec := tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0"}}
	for _, f := range []*tsv1.NodeFacts{nil, {}} {
		if _, err := Node(&spec, f); !errors.Is(err, ErrNoFacts) {
			t.Errorf("Node(%v) error = %v, want ErrNoFacts", f, err)
		}
	}
}

func TestNodeIRQAndHousekeeping(t *testing.T) {
	got, err := Node(&tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-7"}}, facts8())
	if err != nil {
		t.Fatal(err)
	}
	want := &tsv1.IRQTuning{HousekeepingCPUs: "0-1", BannedCPUs: "2-7"}
	if !reflect.DeepEqual(got.IRQ, want) || got.WorkqueueCPUs != "0-1" {
		t.Errorf("irq = %+v workqueue = %q, want %+v and 0-1", got.IRQ, got.WorkqueueCPUs, want)
	}
	// Without isolated CPUs there is nothing to keep IRQs off.
	got, err = Node(&tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1"}}, facts8())
	if err != nil {
		t.Fatal(err)
	}
	if got.IRQ != nil || got.WorkqueueCPUs != "" || len(got.KernelArgs) != 0 {
		t.Errorf("reserved only: irq %+v workqueue %q args %q, want none", got.IRQ, got.WorkqueueCPUs, got.KernelArgs)
	}
}

func TestNodeNICs(t *testing.T) {
	tests := []struct {
		name      string
		nics      []tsv1.NICSpec
		sysctls   map[string]tsv1.SysctlValue
		wantIfs   []string
		wantCtl   map[string]string
		wantErr   string
		wantGroup string
	}{{
		name:    "vendor and device pick both PFs, never their VFs",
		nics:    []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{Vendor: "8086", Device: "1592"}, NumVFs: ptr.To[int32](8)}},
		wantIfs: []string{"ens1f0", "ens1f1"},
	}, {
		name:    "pfNames with a VF range and a driver",
		nics:    []tsv1.NICSpec{{Name: "oe", Selector: tsv1.NICSelector{PFNames: []string{"ens1f1#0-3"}, Drivers: []string{"ice"}}}},
		wantIfs: []string{"ens1f1"},
	}, {
		name:    "busyPoll sets busy_poll and busy_read unless the profile does",
		nics:    []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eno1"}}, Acceleration: tsv1.AccelerationBusyPoll}},
		sysctls: map[string]tsv1.SysctlValue{"net.core.busy_read": "20"},
		wantIfs: []string{"eno1"},
		wantCtl: map[string]string{"net.core.busy_poll": "50", "net.core.busy_read": "20"},
	}, {
		name:    "selector that matches nothing",
		nics:    []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{Vendor: "15b3"}}},
		wantErr: "spec.nics[md].selector matches no interface on this node (it has ens1f0, ens1f1, eno1)",
	}, {
		name: "two groups on one interface",
		nics: []tsv1.NICSpec{
			{Name: "a", Selector: tsv1.NICSelector{Drivers: []string{"igb"}}},
			{Name: "b", Selector: tsv1.NICSelector{InterfaceNames: []string{"eno1"}}},
		},
		wantErr: `interface eno1 is selected by both "a" and "b"`,
	}, {
		name:    "more VFs than the NIC has",
		nics:    []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"ens1f0"}}, NumVFs: ptr.To[int32](65)}},
		wantErr: "spec.nics[md].numVfs: interface ens1f0 supports at most 64 VFs, 65 asked",
	}, {
		name:    "VFs on a NIC without SR-IOV",
		nics:    []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eno1"}}, NumVFs: ptr.To[int32](2)}},
		wantErr: "interface eno1 (driver igb) is not SR-IOV capable",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0", Isolated: "1-7"}, NICs: tt.nics, Sysctls: tt.sysctls}
			got := nodeOrErr(t, &spec, facts8(), tt.wantErr)
			if got == nil {
				return
			}
			var ifs []string
			for _, n := range got.NICs {
				ifs = append(ifs, n.Interface)
				if n.RPSCPUs != "0" || n.Acceleration == "" {
					t.Errorf("%s: rps %q acceleration %q, want 0 and a mode", n.Interface, n.RPSCPUs, n.Acceleration)
				}
			}
			if !reflect.DeepEqual(ifs, tt.wantIfs) {
				t.Errorf("interfaces = %v, want %v", ifs, tt.wantIfs)
			}
			if tt.wantCtl != nil && !reflect.DeepEqual(got.Sysctls, tt.wantCtl) {
				t.Errorf("sysctls = %v, want %v", got.Sysctls, tt.wantCtl)
			}
		})
	}
}

func TestNodeIsDeterministic(t *testing.T) {
	spec := tsv1.LatencyProfileSpec{
		CPU:     &tsv1.CPUSpec{Reserved: "0", Isolated: "1-7"},
		NICs:    []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{Vendor: "8086"}}},
		Sysctls: map[string]tsv1.SysctlValue{"vm.stat_interval": "10", "kernel.timer_migration": "0"},
	}
	a, err := Node(&spec, facts8())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		b, _ := Node(&spec, facts8())
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("run %d differs:\n%+v\n%+v", i, a, b)
		}
	}
}

// The agent's drain limit comes from the profile's rollout.drainTimeout; without one the agent
// uses its own default, so the tuning leaves it unset.
func TestNodeDrainTimeout(t *testing.T) {
	spec := tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-7"}}
	got, err := Node(&spec, facts8())
	if err != nil {
		t.Fatal(err)
	}
	if got.DrainTimeout != nil {
		t.Errorf("drainTimeout = %v without rollout.drainTimeout, want unset", got.DrainTimeout)
	}
	spec.Rollout = &tsv1.RolloutSpec{DrainTimeout: &metav1.Duration{Duration: 90 * time.Second}}
	if got, err = Node(&spec, facts8()); err != nil {
		t.Fatal(err)
	}
	if got.DrainTimeout == nil || got.DrainTimeout.Duration != 90*time.Second {
		t.Errorf("drainTimeout = %v, want 1m30s", got.DrainTimeout)
	}
	spec.Rollout.DrainTimeout.Duration = time.Hour // the tuning holds a copy, not the profile's value
	if got.DrainTimeout.Duration != 90*time.Second {
		t.Errorf("drainTimeout follows the profile after resolution: %v", got.DrainTimeout)
	}
}

// The ptp section reaches the node with nicGroup turned into that group's interface there and the
// CRD's defaults filled in; a group with no or several interfaces on the node is an error.
func TestNodePTP(t *testing.T) {
	defaults := func(iface string) *tsv1.PTPTuning {
		return &tsv1.PTPTuning{
			Role: tsv1.PTPRoleSlave, Interface: iface, Transport: tsv1.PTPTransportUDPv4,
			Timestamping: tsv1.PTPTimestampingHardware, MaxOffsetNs: 1000, MaxSystemOffsetNs: 1000, HoldTime: metav1.Duration{Duration: 10 * time.Second},
			SchedulingPolicy: tsv1.PTPSchedulingFIFO, SchedulingPriority: 10,
		}
	}
	nics := []tsv1.NICSpec{
		{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"ens1f0"}}},
		{Name: "both", Selector: tsv1.NICSelector{InterfaceNames: []string{"ens1f1", "eno1"}}},
	}
	tests := []struct {
		name    string
		ptp     *tsv1.PTPSpec
		cpu     *tsv1.CPUSpec
		want    *tsv1.PTPTuning
		wantErr string
	}{{
		name: "no ptp section, no ptp tuning",
	}, {
		name: "interface by name, defaults filled in",
		ptp:  &tsv1.PTPSpec{Interface: "eno1"},
		want: defaults("eno1"),
	}, {
		name: "nicGroup becomes the group's interface on this node",
		ptp:  &tsv1.PTPSpec{NICGroup: "md"},
		want: defaults("ens1f0"),
	}, {
		name: "every field given is kept",
		ptp: &tsv1.PTPSpec{
			Role: tsv1.PTPRoleGrandmaster, Interface: "eno1", Domain: 24, Transport: tsv1.PTPTransportL2,
			Timestamping: tsv1.PTPTimestampingSoftware, Ptp4lOptions: map[string]string{"priority1": "10"},
			MaxOffsetNs: 50000, MaxSystemOffsetNs: 2500, HoldTime: &metav1.Duration{Duration: 0},
			SchedulingPolicy: tsv1.PTPSchedulingOther,
		},
		want: &tsv1.PTPTuning{
			Role: tsv1.PTPRoleGrandmaster, Interface: "eno1", Domain: 24, Transport: tsv1.PTPTransportL2,
			Timestamping: tsv1.PTPTimestampingSoftware, Ptp4lOptions: map[string]string{"priority1": "10"},
			MaxOffsetNs: 50000, MaxSystemOffsetNs: 2500, SchedulingPolicy: tsv1.PTPSchedulingOther,
		},
	}, {
		name: "a boundary clock: its ports as given, the first one the interface",
		ptp:  &tsv1.PTPSpec{Role: tsv1.PTPRoleBoundary, Interfaces: []string{"ens1f0", "ens2f0"}, OwnsSystemClock: true},
		want: func() *tsv1.PTPTuning {
			w := defaults("ens1f0")
			w.Role, w.Interfaces, w.OwnsSystemClock = tsv1.PTPRoleBoundary, []string{"ens1f0", "ens2f0"}, true
			return w
		}(),
	}, {
		name: "a SCHED_FIFO priority given, and linuxptp on the reserved CPUs",
		ptp:  &tsv1.PTPSpec{Interface: "eno1", SchedulingPolicy: tsv1.PTPSchedulingFIFO, SchedulingPriority: ptr.To[int32](40)},
		cpu:  &tsv1.CPUSpec{Reserved: "0-1"},
		want: func() *tsv1.PTPTuning {
			w := defaults("eno1")
			w.SchedulingPriority, w.CPUs = 40, "0-1"
			return w
		}(),
	}, {
		name:    "nicGroup that is not a group",
		ptp:     &tsv1.PTPSpec{NICGroup: "feed"},
		wantErr: `spec.ptp.nicGroup: "feed" is not a spec.nics[] group`,
	}, {
		name:    "nicGroup with two interfaces on the node",
		ptp:     &tsv1.PTPSpec{NICGroup: "both"},
		wantErr: `group "both" selects 2 interfaces on this node (eno1, ens1f1)`,
	}, {
		name:    "neither interface nor nicGroup",
		ptp:     &tsv1.PTPSpec{},
		wantErr: "spec.ptp: neither interface, nicGroup nor interfaces is set",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tsv1.LatencyProfileSpec{NICs: nics, PTP: tc.ptp, CPU: tc.cpu}
			got, err := Node(&spec, facts8())
			if !testutil.WantError(t, "Node", err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(got.PTP, tc.want) {
				t.Errorf("ptp = %+v, want %+v", got.PTP, tc.want)
			}
		})
	}
}

func TestNodeDriftAction(t *testing.T) {
	for action, want := range map[tsv1.DriftAction]tsv1.DriftAction{"": "", tsv1.DriftCorrect: "", tsv1.DriftReport: tsv1.DriftReport} {
		spec := tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0"}}
		if action != "" {
			spec.Drift = &tsv1.DriftSpec{Action: action}
		}
		got, err := Node(&spec, facts8())
		if err != nil {
			t.Fatal(err)
		}
		if got.DriftAction != want {
			t.Errorf("drift action %q resolves to %q, want %q", action, got.DriftAction, want)
		}
	}
}

// TestNodeOfflinedCPUs: cpu.offlined is checked per node against the CPUs it has (present, also
// once offline) and those it can take offline (a cpuN/online file).
func TestNodeOfflinedCPUs(t *testing.T) {
	withHotplug := func(online, present, hotplug tsv1.CPUSet) *tsv1.NodeFacts {
		f := facts8()
		f.OnlineCPUs, f.PresentCPUs, f.HotpluggableCPUs = online, present, hotplug
		return f
	}
	tests := []struct {
		name    string
		offline tsv1.CPUSet
		facts   *tsv1.NodeFacts
		want    tsv1.CPUSet
		wantErr string
	}{
		{"none asked", "", withHotplug("0-7", "0-7", "1-7"), "", ""},
		{"hotpluggable CPUs", "6-7", withHotplug("0-7", "0-7", "1-7"), "6-7", ""},
		{"already offline: still present, still resolved", "6-7", withHotplug("0-5", "0-7", "1-7"), "6-7", ""},
		{"a CPU the node does not have", "6-9", withHotplug("0-7", "0-7", "1-7"), "", "spec.cpu.offlined: CPUs 8-9 do not exist on this node (present: 0-7)"},
		{"a CPU without an online file", "5-7", withHotplug("0-7", "0-7", "1-4,6-7"), "", "spec.cpu.offlined: CPUs 5 cannot be taken offline on this node"},
		{"an agent that reports no hotpluggable CPUs", "7", withHotplug("0-7", "", ""), "", "spec.cpu.offlined: CPUs 7 cannot be taken offline on this node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-5", Offlined: tt.offline}}
			got := nodeOrErr(t, &spec, tt.facts, tt.wantErr)
			if got == nil {
				return
			}
			if got.OfflinedCPUs != tt.want {
				t.Errorf("offlinedCPUs = %q, want %q", got.OfflinedCPUs, tt.want)
			}
		})
	}
}

// TestNodeSharedCPUs: cpu.shared is clipped to the node's CPUs like cpu.isolated, and refused on a
// node that has none of them.
func TestNodeSharedCPUs(t *testing.T) {
	kubelet := &tsv1.KubeletSpec{}
	for _, tt := range []struct {
		name, shared string
		want         tsv1.CPUSet
		wantErr      string
	}{
		{"none", "", "", ""},
		{"on the node", "6-7", "6-7", ""},
		{"clipped to the node's CPUs", "6-9", "6-7", ""},
		{"none of them on the node", "16-17", "", "spec.cpu.shared: none of CPUs 16-17 exist on this node (online: 0-7)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-5", Shared: tsv1.CPUSet(tt.shared)}, Kubelet: kubelet}
			got := nodeOrErr(t, &spec, facts8(), tt.wantErr)
			if got == nil {
				return
			}
			if got.SharedCPUs != tt.want || got.ReservedCPUs != "0-1" || got.Kubelet == nil {
				t.Errorf("shared %q reserved %q kubelet %v, want shared %q, reserved 0-1 and the kubelet section", got.SharedCPUs, got.ReservedCPUs, got.Kubelet, tt.want)
			}
		})
	}
}
