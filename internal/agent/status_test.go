package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bootloader"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/tuning"
)

type condWant struct {
	status metav1.ConditionStatus
	reason string
	// msg is a substring the message must contain.
	msg string
}

func inSync(name, v string) tuning.Result {
	return tuning.Result{Name: name, Desired: v, Observed: v, State: tuning.InSync}
}

func TestApplyStatus(t *testing.T) {
	pending := &bootloader.Status{Desired: []string{"nohz_full=2-3"}, Missing: []string{"nohz_full=2-3"}, RebootRequired: true}
	inEffect := &bootloader.Status{Desired: []string{"nohz_full=2-3"}}
	drift := []tuning.Result{{Name: "sysctl/vm.swappiness", Desired: "10", Observed: "60", State: tuning.Drifted}}
	tests := []struct {
		name    string
		obs     observation
		want    map[string]condWant
		wantGen bool
	}{{
		name: "waiting for the operator",
		obs:  observation{noTuning: true},
		want: map[string]condWant{
			tsv1.NodeApplied:  {metav1.ConditionFalse, ReasonWaitingForTuning, "nothing on the host is changed"},
			tsv1.NodeDegraded: {metav1.ConditionFalse, ReasonAsExpected, ""},
		},
	}, {
		name: "invalid tuning names the field and the fix",
		obs: observation{invalid: errors.Join(&tuning.FieldError{Field: "sysctls[vm.swappiness]", Problem: "value 900 out of range", Fix: "use 0..200"},
			&tuning.FieldError{Field: "interfaces[x].name", Problem: "bad", Fix: "rename"})},
		want: map[string]condWant{
			tsv1.NodeApplied:  {metav1.ConditionFalse, ReasonValidationFailed, "nothing was changed"},
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonValidationFailed, "sysctls[vm.swappiness]: value 900 out of range; use 0..200; interfaces[x].name: bad; rename"},
		},
	}, {
		name: "a profile that does not fit the resolving node",
		obs: observation{resolveErr: &resolutionError{ReasonResolutionFailed,
			errors.New("LatencyProfile p (generation 4) does not fit this node: spec.nics[md].selector matches no interface on this node (it has ens1f0): fix the selector or the profile's nodeSelector")}},
		want: map[string]condWant{
			tsv1.NodeApplied:  {metav1.ConditionFalse, ReasonResolutionFailed, "nothing on the host was changed"},
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonResolutionFailed, "spec.profile.resolveOnNode: LatencyProfile p (generation 4) does not fit this node: spec.nics[md].selector matches no interface on this node (it has ens1f0): fix the selector"},
		},
	}, {
		name: "the resolving node's profile is missing",
		obs:  observation{resolveErr: &resolutionError{ReasonProfileNotFound, errors.New("spec.profile.name: LatencyProfile p does not exist: create it")}},
		want: map[string]condWant{
			tsv1.NodeApplied:  {metav1.ConditionFalse, ReasonProfileNotFound, "the tuning in effect stays"},
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonProfileNotFound, "LatencyProfile p does not exist: create it"},
		},
	}, {
		name: "all in effect",
		obs:  observation{results: []tuning.Result{inSync("sysctl/vm.swappiness", "10"), {Name: "cpufreq/turbo", State: tuning.Unsupported, Message: "no cpufreq"}}},
		want: map[string]condWant{
			tsv1.NodeApplied:        {metav1.ConditionTrue, ReasonApplied, "1 settings in effect, 1 not supported"},
			tsv1.NodeDegraded:       {metav1.ConditionFalse, ReasonAsExpected, ""},
			tsv1.NodeRebootRequired: {metav1.ConditionFalse, ReasonNoKernelArgs, ""},
			tsv1.NodeDrifted:        {metav1.ConditionFalse, ReasonNoDrift, ""},
		},
		wantGen: true,
	}, {
		name: "kernel arguments wait for the slot",
		obs: observation{results: []tuning.Result{inSync("sysctl/vm.swappiness", "10")}, hasArgs: true, boot: pending,
			reboot: &tsv1.RebootStatus{Phase: tsv1.RebootRequested, Message: "waiting for the operator's reboot slot"}},
		want: map[string]condWant{
			tsv1.NodeApplied:        {metav1.ConditionFalse, ReasonPendingReboot, "lacks"},
			tsv1.NodeRebootRequired: {metav1.ConditionTrue, "RebootRequested", "waiting for the operator's reboot slot; reboot required"},
			tsv1.NodeDegraded:       {metav1.ConditionFalse, ReasonAsExpected, ""},
		},
		wantGen: true,
	}, {
		name: "drain failed",
		obs: observation{hasArgs: true, boot: pending,
			reboot: &tsv1.RebootStatus{Phase: tsv1.RebootDrainFailed, BlockingPod: "ns/p", Message: "drain timed out: pod ns/p could not be evicted"}},
		want: map[string]condWant{
			tsv1.NodeRebootRequired: {metav1.ConditionTrue, ReasonDrainFailed, "pod ns/p"},
		},
		wantGen: true,
	}, {
		name: "kernel arguments in effect after the reboot",
		obs:  observation{results: []tuning.Result{inSync("sysctl/vm.swappiness", "10")}, hasArgs: true, boot: inEffect, cmdline: "ro nohz_full=2-3"},
		want: map[string]condWant{
			tsv1.NodeApplied:        {metav1.ConditionTrue, ReasonApplied, "1 kernel arguments in effect"},
			tsv1.NodeRebootRequired: {metav1.ConditionFalse, ReasonKernelArgsInEffect, ""},
		},
		wantGen: true,
	}, {
		name: "rebooted in vain: no second reboot, Degraded says what to check",
		obs:  observation{hasArgs: true, boot: pending, rebootDidNotApply: true},
		want: map[string]condWant{
			tsv1.NodeDegraded:       {metav1.ConditionTrue, ReasonRebootDidNotApply, tsv1.RebootedForAnnotation},
			tsv1.NodeRebootRequired: {metav1.ConditionFalse, ReasonRebootDidNotApply, "no further reboot"},
			tsv1.NodeApplied:        {metav1.ConditionFalse, ReasonRebootDidNotApply, "still runs without them"},
		},
		wantGen: true,
	}, {
		name: "BIOS-only change waits for the slot: the firmware reason, a message to act on",
		obs: observation{results: []tuning.Result{inSync("sysctl/vm.swappiness", "10")}, hasArgs: true, boot: inEffect, cmdline: "ro nohz_full=2-3", firmwarePending: true,
			reboot: &tsv1.RebootStatus{Phase: tsv1.RebootRequested, Message: "waiting for the operator's reboot slot"}},
		want: map[string]condWant{
			tsv1.NodeRebootRequired: {metav1.ConditionTrue, ReasonFirmwarePendingReboot, "waiting for the operator's reboot slot; BIOS settings staged on the BMC"},
			tsv1.NodeApplied:        {metav1.ConditionTrue, ReasonApplied, "1 kernel arguments in effect"},
			tsv1.NodeDegraded:       {metav1.ConditionFalse, ReasonAsExpected, ""},
		},
		wantGen: true,
	}, {
		name: "BIOS-only change, tuning without kernel arguments, draining",
		obs: observation{results: []tuning.Result{inSync("sysctl/vm.swappiness", "10")}, firmwarePending: true,
			reboot: &tsv1.RebootStatus{Phase: tsv1.RebootDraining, Message: "cordoned; evicting pods"}},
		want: map[string]condWant{
			tsv1.NodeRebootRequired: {metav1.ConditionTrue, ReasonFirmwarePendingReboot, "reboot it by hand"},
		},
		wantGen: true,
	}, {
		name: "BIOS-only change whose drain failed keeps DrainFailed",
		obs: observation{firmwarePending: true,
			reboot: &tsv1.RebootStatus{Phase: tsv1.RebootDrainFailed, BlockingPod: "ns/p", Message: "drain timed out: pod ns/p could not be evicted"}},
		want: map[string]condWant{
			tsv1.NodeRebootRequired: {metav1.ConditionTrue, ReasonDrainFailed, "pod ns/p"},
		},
		wantGen: true,
	}, {
		name: "kernel arguments and BIOS in one reboot: the phase reason, both named",
		obs: observation{hasArgs: true, boot: pending, firmwarePending: true,
			reboot: &tsv1.RebootStatus{Phase: tsv1.RebootRequested}},
		want: map[string]condWant{
			tsv1.NodeRebootRequired: {metav1.ConditionTrue, "RebootRequested", `lacks ["nohz_full=2-3"]; BIOS settings staged`},
		},
		wantGen: true,
	}, {
		name: "boot loader unreadable and BIOS pending: RebootRequired kept, no panic",
		obs:  observation{hasArgs: true, bootErr: errors.New("grub: EIO"), firmwarePending: true},
		want: map[string]condWant{
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonBootLoaderFailed, "EIO"},
		},
	}, {
		name: "arguments without a boot loader",
		obs:  observation{hasArgs: true, bootErr: errNoBootLoader},
		want: map[string]condWant{
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonNoBootLoader, "--boot-loader"},
		},
	}, {
		name: "drift corrected",
		obs:  observation{results: []tuning.Result{inSync("sysctl/vm.swappiness", "10")}, drifted: drift, corrected: true},
		want: map[string]condWant{
			tsv1.NodeDrifted: {metav1.ConditionTrue, ReasonDriftCorrected, `sysctl/vm.swappiness was "60" (want "10")`},
			tsv1.NodeApplied: {metav1.ConditionTrue, ReasonApplied, ""},
		},
		wantGen: true,
	}, {
		name: "write failed",
		obs:  observation{results: drift, applyErr: errors.New("sysctls[vm.swappiness] (sysctl/vm.swappiness): permission denied")},
		want: map[string]condWant{
			tsv1.NodeApplied:  {metav1.ConditionFalse, ReasonApplyFailed, "permission denied"},
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonApplyFailed, "permission denied"},
		},
	}, {
		name: "restore failed while deleting",
		obs:  observation{deleting: true, restoreErr: errors.New("restore irq/5: EIO")},
		want: map[string]condWant{
			tsv1.NodeApplied:  {metav1.ConditionFalse, ReasonRestoring, ""},
			tsv1.NodeDegraded: {metav1.ConditionTrue, ReasonRestoreFailed, "the journal keeps them"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.generation = 7
			st := &tsv1.LatencyNodeStateStatus{}
			applyStatus(st, &tt.obs)
			for typ, w := range tt.want {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.msg) {
					t.Errorf("%s = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.msg)
				}
			}
			if got := st.ObservedGeneration == 7; got != tt.wantGen {
				t.Errorf("observedGeneration set = %v, want %v", got, tt.wantGen)
			}
		})
	}
}

func TestSettingsListsRuntimeAndKernelArguments(t *testing.T) {
	o := &observation{
		results: []tuning.Result{inSync("sysctl/vm.swappiness", "10"), {Name: "cpufreq/turbo", Desired: "disabled", State: tuning.Unsupported, Message: "no cpufreq"}},
		boot:    &bootloader.Status{Desired: []string{"nohz_full=2-3", "idle=poll"}, Missing: []string{"idle=poll"}, Stale: []string{"nosmt"}, RebootRequired: true},
		cmdline: "ro nohz_full=2-3 nosmt",
	}
	got := map[string]tsv1.SettingStatus{}
	for _, s := range settings(o) {
		got[s.Name] = s
	}
	for name, want := range map[string]tsv1.SettingState{
		"sysctl/vm.swappiness": tsv1.SettingInSync, "cpufreq/turbo": tsv1.SettingUnsupported,
		"kernel/nohz_full=2-3": tsv1.SettingInSync, "kernel/idle=poll": tsv1.SettingPendingReboot, "kernel/nosmt": tsv1.SettingPendingReboot,
	} {
		if got[name].State != want {
			t.Errorf("%s = %+v, want state %s", name, got[name], want)
		}
	}
	if got["kernel/nohz_full=2-3"].Observed != "nohz_full=2-3" || got["kernel/nosmt"].Desired != "" || got["cpufreq/turbo"].Message == "" {
		t.Errorf("settings %+v", got)
	}
}

func TestDesired(t *testing.T) {
	d, err := Desired(&tsv1.NodeTuning{
		Sysctls:                          map[string]string{"vm.swappiness": "10"},
		IRQ:                              &tsv1.IRQTuning{HousekeepingCPUs: "0-1", BannedCPUs: "2-3"},
		MaxCStateExitLatencyMicroseconds: ptr.To[int32](2),
		Governor:                         "performance", Turbo: tsv1.Disabled, SMT: tsv1.Enabled,
		WorkqueueCPUs:        "0-1",
		TransparentHugepages: "never",
		Hugepages: []tsv1.HugepageAllocation{{Size: tsv1.HugePageSize2Mi, Count: 64, Node: ptr.To[int32](0)},
			{Size: tsv1.HugePageSize2Mi, Count: 8}, {Size: tsv1.HugePageSize1Gi, Count: 4, AtBoot: true}},
		NICs: []tsv1.NICTuning{{Interface: "ens2", NumVFs: ptr.To[int32](4), RPSCPUs: "0-1",
			Channels: &tsv1.Channels{Combined: ptr.To[int32](2)}, Coalescing: &tsv1.Coalescing{RxUsecs: ptr.To[int32](0), AdaptiveRx: ptr.To(false)}},
			{Interface: "ens1", Rings: &tsv1.Rings{RX: ptr.To[int32](512)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tuning.Validate(d); err != nil {
		t.Fatalf("the mapped Desired is not valid: %v", err)
	}
	if !d.IRQAffinity.CPUs.Equal(cpuset.MustParse("0-1")) || !d.IrqbalanceBannedCPUs.Equal(cpuset.MustParse("2-3")) || d.CPUIdle.MaxLatencyUs != 2 ||
		d.CPUFreq.Governor != "performance" || *d.CPUFreq.Turbo || !*d.SMT || d.THP.Enabled != "never" || d.WorkqueueCPUs.String() != "0-1" {
		t.Errorf("CPU settings %+v", d)
	}
	if len(d.Hugepages) != 2 || d.Hugepages[0] != (tuning.HugepageAllocation{Node: 0, SizeKB: 2048, Count: 64}) || d.Hugepages[1].Node != host.AnyNode {
		t.Errorf("hugepages %+v (1Gi at boot is a kernel argument, not a runtime pool)", d.Hugepages)
	}
	if len(d.Interfaces) != 2 || d.Interfaces[0].Name != "ens1" || d.Interfaces[0].Rings["rx"] != 512 {
		t.Fatalf("interfaces %+v", d.Interfaces)
	}
	ens2 := d.Interfaces[1]
	if *ens2.SRIOVNumVFs != 4 || ens2.RPSCPUs.String() != "0-1" || ens2.Channels["combined"] != 2 || ens2.Coalesce["rx-usecs"] != 0 ||
		ens2.Coalesce["adaptive-rx"] != 0 || len(ens2.Coalesce) != 2 || ens2.Rings != nil {
		t.Errorf("ens2 %+v", ens2)
	}

	_, err = Desired(&tsv1.NodeTuning{IRQ: &tsv1.IRQTuning{HousekeepingCPUs: "zero"}, WorkqueueCPUs: "1-"})
	for _, want := range []string{"spec.tuning.irq.housekeepingCPUs", "spec.tuning.workqueueCPUs", "write CPUs as a list"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestNodeFacts(t *testing.T) {
	n := 1
	f := NodeFacts(&host.Facts{
		OnlineCPUs: cpuset.MustParse("0-7"), ThreadsPerCore: 2, Sockets: 1, KernelCmdline: "ro", KernelRelease: "6.18",
		NUMANodes: []host.NUMANode{{ID: 0, CPUs: cpuset.MustParse("0-1,4-5"), HugepageSizesKB: []int{2048, 1048576}},
			{ID: 1, CPUs: cpuset.MustParse("2-3,6-7"), HugepageSizesKB: []int{2048}}},
		CPUs: []host.CPU{
			{ID: 0, Node: 0, Siblings: cpuset.MustParse("0,4")}, {ID: 1, Node: 0, Siblings: cpuset.MustParse("1,5")},
			{ID: 2, Node: 1, Siblings: cpuset.MustParse("2,6")}, {ID: 3, Node: 1, Siblings: cpuset.MustParse("3,7")},
			{ID: 4, Node: 0, Siblings: cpuset.MustParse("0,4")}, {ID: 5, Node: 0, Siblings: cpuset.MustParse("1,5")},
			{ID: 6, Node: 1, Siblings: cpuset.MustParse("2,6")}, {ID: 7, Node: 1, Siblings: cpuset.MustParse("3,7")},
		},
		Interfaces: []host.Interface{{Name: "ens2", Driver: "ice", PCIAddress: "0000:3b:00.0", Vendor: "8086", Device: "159b", SRIOVTotalVFs: 8, NUMANode: &n}, {Name: "eth0", Driver: "virtio_net"}},
	})
	if f.OnlineCPUs != "0-7" || f.ThreadsPerCore != 2 || len(f.NUMANodes) != 2 || f.NUMANodes[1].CPUs != "2-3,6-7" || f.KernelRelease != "6.18" {
		t.Errorf("facts %+v", f)
	}
	if got := fmt.Sprint(f.NUMANodes[0].Cores, f.NUMANodes[1].Cores); got != "[0,4 1,5] [2,6 3,7]" {
		t.Errorf("cores per NUMA node %s, want each core once with its siblings", got)
	}
	if got := fmt.Sprint(f.NUMANodes[0].HugepageSizes, f.NUMANodes[1].HugepageSizes); got != "[2Mi 1Gi] [2Mi]" {
		t.Errorf("huge page sizes %s", got)
	}
	if i := f.Interfaces[0]; i.Name != "ens2" || i.SRIOVTotalVFs != 8 || *i.NUMANode != 1 || i.Vendor != "8086" {
		t.Errorf("interface %+v", i)
	}
}

func TestEvictable(t *testing.T) {
	ctrl := true
	for _, tt := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"plain pod", corev1.Pod{}, true},
		{"DaemonSet pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: &ctrl}}}}, false},
		{"ReplicaSet pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: &ctrl}}}}, true},
		{"mirror pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mirrorPodAnnotation: "x"}}}, false},
		{"finished pod", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
	} {
		if got := evictable(&tt.pod); got != tt.want {
			t.Errorf("%s: evictable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRebootHashIncludesTheFirmware(t *testing.T) {
	args := &bootloader.Status{Desired: []string{"nohz_full=2-3"}}
	h1 := rebootHash(args, &tsv1.FirmwareSpec{Hash: "bios-1", PendingReboot: true, BootID: "b"})
	if h1 != rebootHash(args, &tsv1.FirmwareSpec{Hash: "bios-1"}) {
		t.Errorf("the hash depends on pendingReboot/bootID, not only on the change")
	}
	if h1 == rebootHash(args, &tsv1.FirmwareSpec{Hash: "bios-2"}) {
		t.Errorf("a BIOS-only change keeps the hash: it would read as a reboot that did not apply")
	}
	if rebootHash(args, nil) != rebootHash(args, &tsv1.FirmwareSpec{}) || rebootHash(args, nil) == h1 {
		t.Errorf("without firmware the hash must be the kernel arguments' alone")
	}
	if rebootHash(nil, nil) != rebootHash(&bootloader.Status{}, nil) {
		t.Errorf("no boot loader status must hash as no kernel arguments")
	}
}
