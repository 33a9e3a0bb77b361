package controllers

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/policy"
)

// validProfile is a profile the API server accepts; each case below breaks one thing.
func validProfile(name string) *tsv1.LatencyProfile {
	return &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.test/validation": "none"}},
			CPU:          &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-15", Offlined: "16-31", Shared: "32-33"},
			Hugepages:    &tsv1.HugepagesSpec{DefaultSize: "1Gi", Pages: []tsv1.HugePages{{Size: "1Gi", Count: 4}, {Size: "2Mi", Count: 64, Node: ptr.To[int32](0)}}},
			Power:        &tsv1.PowerSpec{MaxCStateExitLatencyMicroseconds: ptr.To[int32](0), Governor: "performance", Turbo: tsv1.Enabled},
			Kernel:       &tsv1.KernelSpec{AdditionalArgs: []string{"nosoftlockup", "tsc=reliable"}},
			Sysctls:      map[string]tsv1.SysctlValue{"net.core.busy_poll": "50", "kernel.sched_rt_runtime_us": "-1"},
			NICs: []tsv1.NICSpec{{
				Name: "md", Selector: tsv1.NICSelector{Vendor: "8086", PFNames: []string{"ens1f0#0-3"}},
				NumVFs: ptr.To[int32](4), ResourceName: "md_vf", Acceleration: tsv1.AccelerationBypass,
				Coalescing: &tsv1.Coalescing{RxUsecs: ptr.To[int32](0), AdaptiveRx: ptr.To(false)},
			}},
			Kubelet: &tsv1.KubeletSpec{TopologyManagerScope: "pod", SystemReservedMemory: ptr.To(resource.MustParse("2Gi"))},
			Rollout: &tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromString("25%")), DrainTimeout: &metav1.Duration{Duration: 600e9},
				Windows:     []tsv1.MaintenanceWindow{{Days: []tsv1.Weekday{"Sat", "Sun"}, Start: "22:00", End: "04:00", TimeZone: "Europe/London"}},
				TopologyKey: "topology.kubernetes.io/rack", MaxUnavailablePerDomain: ptr.To[int32](1)},
		},
	}
}

// expectInvalid creates obj as a dry run and requires the API server to refuse it as invalid (422)
// with a message that holds each of want (the field, the rule's words).
func expectInvalid(obj client.Object, want ...string) {
	GinkgoHelper()
	err := k8s.Create(ctx, obj, client.DryRunAll)
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

var _ = Describe("LatencyProfile validation by the API server", func() {
	It("accepts a complete valid profile", func() {
		p := validProfile("valid-complete")
		Expect(k8s.Create(ctx, p, client.DryRunAll)).To(Succeed())
	})

	DescribeTable("refuses a bad profile with a message naming the field",
		func(mutate func(*tsv1.LatencyProfile), field, message string) {
			p := validProfile("invalid")
			mutate(p)
			expectInvalid(p, field, message)
		},
		Entry("empty reserved cpuset", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Reserved = "" },
			"spec.cpu.reserved", "at least 1 chars long"),
		Entry("cpuset with a letter", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Isolated = "2-7,a" },
			"spec.cpu.isolated", "should match"),
		Entry("descending cpuset range", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Isolated = "7-2" },
			"spec.cpu.isolated", "not a cpulist"),
		Entry("CPU id no machine has", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Isolated = "2-9000" },
			"spec.cpu.isolated", "CPU 9000 does not exist on any Linux machine"),
		Entry("reserved and isolated overlap", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Isolated = "1-7" },
			"spec.cpu.isolated", "CPUs 1 are also in cpu.reserved (0-1): reserved and isolated must be disjoint"),
		Entry("offlining CPU 0 (CEL)", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Reserved, p.Spec.CPU.Offlined = "1", "0,16-31" },
			"spec.cpu.offlined", "cpu.offlined: CPU 0 cannot be taken offline (the boot CPU; most kernels have no cpu0/online): remove it from cpu.offlined"),
		Entry("offlining a reserved CPU", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Offlined = "1,16-31" },
			"spec.cpu.offlined", "CPUs 1 are also in cpu.reserved: a CPU the node runs work on cannot be offline; remove them from cpu.offlined or from cpu.reserved"),
		Entry("offlining an isolated CPU", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Offlined = "14-31" },
			"spec.cpu.offlined", "CPUs 14-15 are also in cpu.isolated: a CPU the node runs work on cannot be offline; remove them from cpu.offlined or from cpu.isolated"),
		Entry("offlined CPUs that are not a cpulist", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Offlined = "31-16" },
			"spec.cpu.offlined", "not a cpulist"),
		Entry("shared CPUs without a kubelet section (CEL)", func(p *tsv1.LatencyProfile) { p.Spec.Kubelet = nil },
			"spec", "cpu.shared: the kubelet must keep the shared CPUs out of its exclusive allocation through its reservedSystemCPUs, which the profile's kubelet section owns: add a kubelet section (kubelet: {}) or remove cpu.shared"),
		Entry("shared CPUs that are isolated", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Shared = "15,32" },
			"spec.cpu.shared", "CPUs 15 are also in cpu.isolated: the shared pool is a set of CPUs of its own; remove them from cpu.shared or from cpu.isolated"),
		Entry("shared CPUs that are offlined", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Shared = "31-32" },
			"spec.cpu.shared", "CPUs 31 are also in cpu.offlined"),
		Entry("shared CPUs that are reserved", func(p *tsv1.LatencyProfile) { p.Spec.CPU.Shared = "1" },
			"spec.cpu.shared", "CPUs 1 are also in cpu.reserved"),
		Entry("unknown isolation mode", func(p *tsv1.LatencyProfile) { p.Spec.CPU.IsolationMode = "Hard" },
			"spec.cpu.isolationMode", "Unsupported value"),
		Entry("default huge page size without pages of that size", func(p *tsv1.LatencyProfile) {
			p.Spec.Hugepages.DefaultSize = "2Mi"
			p.Spec.Hugepages.Pages = p.Spec.Hugepages.Pages[:1]
		},
			"spec.hugepages", "hugepages.defaultSize must be the size of one of hugepages.pages"),
		Entry("the same size and node twice", func(p *tsv1.LatencyProfile) {
			p.Spec.Hugepages.Pages = append(p.Spec.Hugepages.Pages, tsv1.HugePages{Size: "1Gi", Count: 2})
		}, "spec.hugepages", "each (size, node) pair may appear once"),
		Entry("huge page size x86 has not", func(p *tsv1.LatencyProfile) { p.Spec.Hugepages.Pages[0].Size = "4Mi" },
			"spec.hugepages.pages[0].size", "Unsupported value: \"4Mi\""),
		Entry("zero huge pages", func(p *tsv1.LatencyProfile) { p.Spec.Hugepages.Pages[0].Count = 0 },
			"spec.hugepages.pages[0].count", "should be greater than or equal to 1"),
		Entry("idle poll and a C-state limit together", func(p *tsv1.LatencyProfile) { p.Spec.Power.IdlePoll = ptr.To(true) },
			"spec.power", "power.idlePoll already keeps CPUs out of every C-state"),
		Entry("unknown governor", func(p *tsv1.LatencyProfile) { p.Spec.Power.Governor = "turbo" },
			"spec.power.governor", "Unsupported value"),
		Entry("kernel argument tickstack manages", func(p *tsv1.LatencyProfile) {
			p.Spec.Kernel.AdditionalArgs = append(p.Spec.Kernel.AdditionalArgs, "isolcpus=2-7")
		},
			"spec.kernel.additionalArgs", "isolcpus=2-7 is managed by tickstack: set it through the cpu, hugepages or power section instead"),
		Entry("kernel argument with a space", func(p *tsv1.LatencyProfile) { p.Spec.Kernel.AdditionalArgs = []string{"a b"} },
			"spec.kernel.additionalArgs[0]", "should match"),
		Entry("sysctl outside the allow-list", func(p *tsv1.LatencyProfile) { p.Spec.Sysctls["net.ipv4.ip_forward"] = "1" },
			"spec.sysctls", "sysctls: net.ipv4.ip_forward is not an allowed key"),
		Entry("sysctl value that is not an integer", func(p *tsv1.LatencyProfile) { p.Spec.Sysctls["vm.stat_interval"] = "often" },
			"spec.sysctls.vm.stat_interval", "should match"),
		Entry("sysctl value out of range", func(p *tsv1.LatencyProfile) { p.Spec.Sysctls["vm.swappiness"] = "500" },
			"spec.sysctls[vm.swappiness]", "500 is outside [0, 200]"),
		Entry("NIC selector with nothing to select on", func(p *tsv1.LatencyProfile) { p.Spec.NICs[0].Selector = tsv1.NICSelector{} },
			"spec.nics[0].selector", "needs at least one of interfaceNames, vendor, device, pfNames, drivers"),
		Entry("PCI vendor that is not hex", func(p *tsv1.LatencyProfile) { p.Spec.NICs[0].Selector.Vendor = "intel" },
			"spec.nics[0].selector.vendor", "should match"),
		Entry("device plugin resource without VFs", func(p *tsv1.LatencyProfile) { p.Spec.NICs[0].NumVFs = nil },
			"spec.nics[0]", "nics[].resourceName names the VFs' device plugin resource: set nics[].numVfs above 0 too"),
		Entry("two NIC groups with one name", func(p *tsv1.LatencyProfile) {
			p.Spec.NICs = append(p.Spec.NICs, tsv1.NICSpec{Name: "md", Selector: tsv1.NICSelector{Drivers: []string{"ice"}}})
		}, "spec.nics[1]", "Duplicate value"),
		Entry("unknown acceleration mode", func(p *tsv1.LatencyProfile) { p.Spec.NICs[0].Acceleration = "dpdk" },
			"spec.nics[0].acceleration", "Unsupported value: \"dpdk\""),
		Entry("bad VF range in pfNames", func(p *tsv1.LatencyProfile) { p.Spec.NICs[0].Selector.PFNames = []string{"ens1f0#3-1"} },
			"spec.nics[0].selector.pfNames[0]", "VF range must be NAME#FIRST-LAST with FIRST <= LAST"),
		Entry("maxUnavailable above 100%", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.MaxUnavailable = ptr.To(intstr.FromString("150%")) },
			"spec.rollout.maxUnavailable", "rollout.maxUnavailable must be a count of at least 1 or a percentage from 1% to 100%"),
		Entry("maxUnavailable zero", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.MaxUnavailable = ptr.To(intstr.FromInt32(0)) },
			"spec.rollout.maxUnavailable", "must be a count of at least 1"),
		Entry("drain timeout too short", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.DrainTimeout = &metav1.Duration{Duration: 5e9} },
			"spec.rollout.drainTimeout", "must be between 30s and 24h"),
		Entry("window time zone that is not IANA", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.Windows[0].TimeZone = "Mars/Olympus" },
			"spec.rollout.windows[0]", `timeZone: "Mars/Olympus" is not an IANA time zone name`),
		Entry("window start that is not HH:MM", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.Windows[0].Start = "24:00" },
			"spec.rollout.windows[0].start", "should match"),
		Entry("window of no time", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.Windows[0].End = "22:00" },
			"spec.rollout.windows[0]", "start and end must differ"),
		Entry("kubelet section without a cpu section", func(p *tsv1.LatencyProfile) {
			p.Spec.CPU = nil
			p.Spec.Kubelet = &tsv1.KubeletSpec{}
		}, "spec.cpu", "kubelet: reservedSystemCPUs follows cpu.reserved"),
		Entry("kubelet memory reservation of zero", func(p *tsv1.LatencyProfile) {
			p.Spec.Kubelet = &tsv1.KubeletSpec{SystemReservedMemory: ptr.To(resource.MustParse("0"))}
		}, "spec.kubelet.systemReservedMemory", "must be above 0"),
		Entry("kubelet topology manager policy the kubelet does not know", func(p *tsv1.LatencyProfile) {
			p.Spec.Kubelet = &tsv1.KubeletSpec{TopologyManagerPolicy: "numa"}
		}, "spec.kubelet.topologyManagerPolicy", "Unsupported value: \"numa\""),
		Entry("window on an unknown day", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.Windows[0].Days = []tsv1.Weekday{"Monday"} },
			"spec.rollout.windows[0].days[0]", "Unsupported value: \"Monday\""),
		Entry("window without days", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.Windows[0].Days = nil },
			"spec.rollout.windows[0].days", "Required value"),
		Entry("topology key that is not a label key", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.TopologyKey = "rack name" },
			"spec.rollout.topologyKey", "should match"),
		Entry("per-domain budget zero", func(p *tsv1.LatencyProfile) { p.Spec.Rollout.MaxUnavailablePerDomain = ptr.To[int32](0) },
			"spec.rollout.maxUnavailablePerDomain", "should be greater than or equal to 1"),
		Entry("node selector with an unknown operator", func(p *tsv1.LatencyProfile) {
			p.Spec.NodeSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near", Values: []string{"b"}}}}
		}, "spec.nodeSelector", "is not a valid label selector operator"),
		Entry("unknown drift action", func(p *tsv1.LatencyProfile) { p.Spec.Drift = &tsv1.DriftSpec{Action: "Ignore"} },
			"spec.drift.action", "Unsupported value: \"Ignore\""),
		Entry("priority out of range", func(p *tsv1.LatencyProfile) { p.Spec.Priority = 5000 },
			"spec.priority", "should be less than or equal to 1000"),
	)

	It("accepts every sysctl the agent may set", func() {
		p := validProfile("allowlist")
		p.Spec.Sysctls = map[string]tsv1.SysctlValue{}
		for k, info := range policy.AllowedSysctls() {
			v := fmt.Sprint(info.Min)
			if info.Kind == policy.CPUList {
				v = "0-1"
			}
			p.Spec.Sysctls[k] = tsv1.SysctlValue(v)
		}
		Expect(k8s.Create(ctx, p, client.DryRunAll)).To(Succeed())
	})
})
