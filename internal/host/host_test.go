package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

func write(t *testing.T, root, p, c string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIrqbalanceConfig(t *testing.T) {
	root := hosttest.TempDir(t)
	h := &host.Host{Root: root}
	// No file: unset; setting creates it, unsetting removes it again.
	if v, ok, err := h.IrqbalanceBannedCPUs(); err != nil || ok || v != "" {
		t.Fatalf("missing file: %q %v %v", v, ok, err)
	}
	if err := h.SetIrqbalanceBannedCPUs(cpuset.MustParse("2-3")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := h.IrqbalanceBannedCPUs(); err != nil || !ok || v != "2-3" {
		t.Fatalf("after set: %q %v %v", v, ok, err)
	}
	if err := h.UnsetIrqbalanceBannedCPUs(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, host.DefaultIrqbalanceConfig)); !os.IsNotExist(err) {
		t.Fatalf("file left after unset: %v", err)
	}
	// An existing file keeps its other lines; quoted values are read unquoted; duplicates collapse.
	orig := "# irqbalance\n#IRQBALANCE_BANNED_CPULIST=9\nIRQBALANCE_BANNED_CPULIST=\"1\"\nIRQBALANCE_ARGS=\"-x\"\nIRQBALANCE_BANNED_CPULIST=5\n"
	write(t, root, host.DefaultIrqbalanceConfig, orig)
	if v, ok, _ := h.IrqbalanceBannedCPUs(); !ok || v != "5" {
		t.Fatalf("last assignment should win: %q", v)
	}
	if err := h.SetIrqbalanceBannedCPUs(cpuset.MustParse("1,3")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, host.DefaultIrqbalanceConfig))
	want := "# irqbalance\n#IRQBALANCE_BANNED_CPULIST=9\nIRQBALANCE_BANNED_CPULIST=1,3\nIRQBALANCE_ARGS=\"-x\"\n"
	if string(b) != want {
		t.Fatalf("file:\n%q\nwant\n%q", b, want)
	}
}

// TestDiscoverReportsAnUnreadableCmdline: without /proc/cmdline Discover fails naming it, instead
// of reporting an empty command line on which every kernel argument looks missing.
func TestDiscoverReportsAnUnreadableCmdline(t *testing.T) {
	root := hosttest.TempDir(t)
	write(t, root, "sys/devices/system/cpu/online", "0")
	if _, err := (&host.Host{Root: root}).Discover(); err == nil || !strings.Contains(err.Error(), "/proc/cmdline") {
		t.Fatalf("Discover without /proc/cmdline: %v, want an error naming it", err)
	}
	write(t, root, "proc/cmdline", "root=/dev/sda1")
	if f, err := (&host.Host{Root: root}).Discover(); err != nil || f.KernelCmdline != "root=/dev/sda1" {
		t.Fatalf("Discover with /proc/cmdline: %+v, %v", f, err)
	}
}

// TestDiscoverTree reads facts from a host-root tree describing a 2-socket SMT machine with an
// SR-IOV NIC, which this VM is not.
func TestDiscoverTree(t *testing.T) {
	root := hosttest.TempDir(t)
	files := map[string]string{
		"sys/devices/system/cpu/online":                                            "0-3",
		"sys/devices/system/cpu/isolated":                                          "2-3",
		"sys/devices/system/node/node0/cpulist":                                    "0,2",
		"sys/devices/system/node/node1/cpulist":                                    "1,3",
		"sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages":    "0",
		"sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages": "0",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor":                     "powersave",
		"proc/cmdline": "root=/dev/sda1 isolcpus=2-3",
		"sys/devices/pci0000:00/0000:3b:00.0/sriov_totalvfs":                  "64",
		"sys/devices/pci0000:00/0000:3b:00.0/sriov_numvfs":                    "0",
		"sys/devices/pci0000:00/0000:3b:00.0/vendor":                          "0x8086",
		"sys/devices/pci0000:00/0000:3b:00.0/numa_node":                       "1",
		"sys/devices/pci0000:00/0000:3b:01.0/vendor":                          "0x8086",
		"sys/devices/pci0000:00/0000:3b:01.0/device":                          "0x1889",
		"sys/devices/pci0000:00/0000:3b:01.0/numa_node":                       "-1",
		"sys/devices/pci0000:00/0000:3b:01.0/net/ens1f0v0/ifindex":            "9",
		"sys/devices/pci0000:00/0000:3b:00.0/device":                          "0x159b",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/ifindex":              "5",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/queues/rx-0/rps_cpus": "0",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/queues/tx-0/xps_cpus": "0",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/queues/tx-1/xps_cpus": "0",
		"sys/bus/pci/drivers/ice/bind":                                        "",
	}
	for cpu, topo := range [][3]string{{"0", "0", "0,2"}, {"1", "1", "1,3"}, {"0", "0", "0,2"}, {"1", "1", "1,3"}} {
		base := "sys/devices/system/cpu/cpu" + string(rune('0'+cpu)) + "/topology/"
		files[base+"core_id"] = topo[0]
		files[base+"physical_package_id"] = topo[1]
		files[base+"thread_siblings_list"] = topo[2]
	}
	for p, c := range files {
		write(t, root, p, c)
	}
	for p, target := range map[string]string{
		"sys/class/net/ens1f0":                                    "../../devices/pci0000:00/0000:3b:00.0/net/ens1f0",
		"sys/devices/pci0000:00/0000:3b:00.0/net/ens1f0/device":   "../../../0000:3b:00.0",
		"sys/bus/pci/devices/0000:3b:00.0":                        "../../../devices/pci0000:00/0000:3b:00.0",
		"sys/devices/pci0000:00/0000:3b:00.0/driver":              "../../../bus/pci/drivers/ice",
		"sys/class/net/ens1f0v0":                                  "../../devices/pci0000:00/0000:3b:01.0/net/ens1f0v0",
		"sys/devices/pci0000:00/0000:3b:01.0/net/ens1f0v0/device": "../../../0000:3b:01.0",
		"sys/bus/pci/devices/0000:3b:01.0":                        "../../../devices/pci0000:00/0000:3b:01.0",
		"sys/devices/pci0000:00/0000:3b:01.0/physfn":              "../0000:3b:00.0",
		"sys/devices/pci0000:00/0000:3b:01.0/driver":              "../../../bus/pci/drivers/iavf",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	f, err := (&host.Host{Root: root}).Discover()
	if err != nil {
		t.Fatal(err)
	}
	if f.KernelCmdline != "root=/dev/sda1 isolcpus=2-3" {
		t.Errorf("kernel command line %q", f.KernelCmdline)
	}
	if f.OnlineCPUs.String() != "0-3" || f.IsolatedCPUs.String() != "2-3" || f.Sockets != 2 || f.Cores != 2 || f.ThreadsPerCore != 2 || !f.CPUFreq {
		t.Fatalf("cpu facts: online %s isolated %s sockets %d cores %d threads %d cpufreq %v",
			f.OnlineCPUs, f.IsolatedCPUs, f.Sockets, f.Cores, f.ThreadsPerCore, f.CPUFreq)
	}
	if len(f.NUMANodes) != 2 || f.NUMANodes[1].CPUs.String() != "1,3" || !slices.Equal(f.NUMANodes[0].HugepageSizesKB, []int{2048, 1048576}) {
		t.Fatalf("numa: %+v", f.NUMANodes)
	}
	if f.CPUs[3].Node != 1 || f.CPUs[2].Siblings.String() != "0,2" {
		t.Fatalf("cpu 3: %+v cpu 2: %+v", f.CPUs[3], f.CPUs[2])
	}
	if len(f.Interfaces) != 2 {
		t.Fatalf("interfaces: %+v", f.Interfaces)
	}
	ifc := f.Interfaces[0]
	if ifc.NUMANode == nil || *ifc.NUMANode != 1 {
		t.Fatalf("PF NUMA node: %v", ifc.NUMANode)
	}
	ifc.NUMANode = nil
	want := host.Interface{Name: "ens1f0", Driver: "ice", PCIAddress: "0000:3b:00.0", Vendor: "8086", Device: "159b",
		SRIOVTotalVFs: 64, XDPNative: true, RXQueues: 1, TXQueues: 2}
	if ifc != want {
		t.Fatalf("interface = %+v\nwant %+v", ifc, want)
	}
	vf := f.Interfaces[1]
	want = host.Interface{Name: "ens1f0v0", Driver: "iavf", PCIAddress: "0000:3b:01.0", Vendor: "8086", Device: "1889", PhysicalFunction: "ens1f0"}
	if vf != want {
		t.Fatalf("VF = %+v\nwant %+v", vf, want)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(hosttest.TempDir(t), "a", "b", "f")
	if err := host.WriteFileAtomic(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A temporary file left by a crash is cleaned up by the next write.
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), ".f.tmp-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := host.WriteFileAtomic(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	entries, _ := os.ReadDir(filepath.Dir(p))
	if string(b) != "two" || len(entries) != 1 {
		t.Fatalf("content %q, %d entries (temporary files left?)", b, len(entries))
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}

func TestSysctlPath(t *testing.T) {
	for key, want := range map[string]string{
		"vm.stat_interval":   "/proc/sys/vm/stat_interval",
		"net/core/busy_read": "/proc/sys/net/core/busy_read",
	} {
		if got, err := host.SysctlPath(key); err != nil || got != want {
			t.Errorf("SysctlPath(%q) = %q, %v", key, got, err)
		}
	}
	for _, bad := range []string{"", "../etc/passwd", "/vm", ".vm"} {
		if _, err := host.SysctlPath(bad); err == nil {
			t.Errorf("SysctlPath(%q) accepted", bad)
		}
	}
}

// TestRealHostVeth exercises the real implementations on this machine: IRQ listing, cpuidle,
// discovery of a veth in the test's namespace, ethtool channels through netlink, RPS/XPS masks.
func TestRealHostVeth(t *testing.T) {
	env := hosttest.New(t, "h")
	h := env.Host

	irqs, err := h.IRQs()
	if err != nil || len(irqs) == 0 {
		t.Fatalf("IRQs: %d, %v", len(irqs), err)
	}
	online, err := h.OnlineCPUs()
	if err != nil || online.IsEmpty() {
		t.Fatalf("online CPUs: %v %v", online, err)
	}
	movable := 0
	for _, irq := range irqs {
		if irq.Movable {
			movable++
			if irq.Affinity.IsEmpty() {
				t.Errorf("irq %d: empty affinity", irq.Number)
			}
		}
	}
	if movable == 0 {
		t.Fatal("no movable IRQ found in /proc/irq")
	}
	if _, err := h.DefaultIRQAffinity(); err != nil {
		t.Fatal(err)
	}

	f, err := h.Discover()
	if err != nil {
		t.Fatal(err)
	}
	if !f.OnlineCPUs.Equal(online) || len(f.CPUs) != online.Len() || len(f.NUMANodes) == 0 || f.KernelCmdline == "" {
		t.Fatalf("facts: online %s cpus %d numa %d cmdline %q", f.OnlineCPUs, len(f.CPUs), len(f.NUMANodes), f.KernelCmdline)
	}
	var veth *host.Interface
	for i := range f.Interfaces {
		if f.Interfaces[i].Name == env.A {
			veth = &f.Interfaces[i]
		}
	}
	if veth == nil {
		t.Fatalf("veth %s not discovered in %+v", env.A, f.Interfaces)
	}
	if veth.Driver != "veth" || !veth.XDPNative || veth.RXQueues != env.Queues || veth.PCIAddress != "" {
		t.Fatalf("veth facts: %+v", *veth)
	}

	// Channels through ethtool netlink, checked with the ethtool command.
	ch, err := h.NICParams(env.A, host.Channels)
	if err != nil {
		t.Fatal(err)
	}
	if ch["rx"] != uint32(env.Queues) || ch["max-rx"] < uint32(env.Queues) {
		t.Fatalf("channels: %v", ch)
	}
	if err := h.SetNICParams(env.A, host.Channels, map[string]uint32{"rx": 2, "tx": 3}); err != nil {
		t.Fatal(err)
	}
	out := env.Exec(t, "ethtool", "-l", env.A)
	cur := out[strings.Index(out, "Current hardware settings"):]
	if !strings.Contains(cur, "RX:\t\t2") || !strings.Contains(cur, "TX:\t\t3") {
		t.Fatalf("ethtool -l after set:\n%s", out)
	}
	if q, _ := h.Queues(env.A, host.RXQueue); len(q) != 2 {
		t.Fatalf("rx queues after set: %v", q)
	}
	if err := h.SetNICParams(env.A, host.Channels, map[string]uint32{"bogus": 1}); err == nil {
		t.Fatal("unknown channel parameter accepted")
	}
	for _, g := range []host.NICGroup{host.Rings, host.Coalesce} {
		if _, err := h.NICParams(env.A, g); !errors.Is(err, host.ErrUnsupported) {
			t.Errorf("%s on veth: %v, want ErrUnsupported", g, err)
		}
	}
	if _, err := h.NICParams("tsagnosuchif", host.Channels); err == nil {
		t.Fatal("channels of a missing interface")
	}

	// RPS and XPS masks of the veth's queues.
	last := online.CPUs()[online.Len()-1]
	if err := h.SetQueueCPUs(env.A, host.RXQueue, 1, cpuset.New(last)); err != nil {
		t.Fatal(err)
	}
	if got, err := h.QueueCPUs(env.A, host.RXQueue, 1); err != nil || !got.Equal(cpuset.New(last)) {
		t.Fatalf("rps: %v %v", got, err)
	}
	if err := h.SetQueueCPUs(env.A, host.TXQueue, 0, online); err != nil {
		t.Fatal(err)
	}
	if got, err := h.QueueCPUs(env.A, host.TXQueue, 0); err != nil || !got.Equal(online) {
		t.Fatalf("xps: %v %v", got, err)
	}

	// cpuidle of the real CPUs can be read: the states when the kernel runs a cpuidle driver
	// (haltpoll, intel_idle, acpi_idle), none when it runs none (some VMs: current_driver "none").
	states, err := h.IdleStates(0)
	driver, derr := os.ReadFile("/sys/devices/system/cpu/cpuidle/current_driver")
	switch d := strings.TrimSpace(string(driver)); {
	case err != nil:
		t.Fatalf("idle states: %v", err)
	case derr != nil || d == "none":
		if len(states) != 0 {
			t.Fatalf("no cpuidle driver (%q, %v), yet idle states %v", d, derr, states)
		}
	case len(states) == 0:
		t.Fatalf("cpuidle driver %q, yet no idle states read", d)
	}
	// No cpufreq in this VM: a clear ErrUnsupported.
	if !h.HasCPUFreq(0) {
		if _, err := h.Governor(0); !errors.Is(err, host.ErrUnsupported) {
			t.Fatalf("governor without cpufreq: %v", err)
		}
	}
}

// TestSetIRQAffinityReadOnly: the kernel makes a managed IRQ's smp_affinity_list read-only (0444).
// The NRI plugin's container (no capability) would get EACCES opening it, which is not a refusal
// the callers know (the local cluster's e2e found it on virtio-blk's request queue): SetIRQAffinity
// reports such a file as not movable before writing, for any writer, root included.
func TestSetIRQAffinityReadOnly(t *testing.T) {
	root := hosttest.TempDir(t)
	h := &host.Host{Root: root}
	write(t, root, "/proc/irq/36/smp_affinity_list", "0-1\n")
	write(t, root, "/proc/irq/37/smp_affinity_list", "0-1\n")
	if err := os.Chmod(filepath.Join(root, "proc/irq/36/smp_affinity_list"), 0o444); err != nil {
		t.Fatal(err)
	}
	err := h.SetIRQAffinity(36, cpuset.MustParse("0"))
	if err == nil || !host.IsNotMovable(err) {
		t.Fatalf("read-only irq 36: %v, want an error IsNotMovable recognises", err)
	}
	if got, _ := h.IRQAffinity(36); got.String() != "0-1" {
		t.Errorf("read-only irq 36 is %s after the refused write, want 0-1", got)
	}
	if err := h.SetIRQAffinity(37, cpuset.MustParse("0")); err != nil {
		t.Fatalf("writable irq 37: %v", err)
	}
	if got, _ := h.IRQAffinity(37); got.String() != "0" {
		t.Errorf("irq 37 is %s, want 0", got)
	}
}
