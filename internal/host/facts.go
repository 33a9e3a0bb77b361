package host

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Facts is what the operator needs to know about a node to resolve a profile for it.
type Facts struct {
	// KernelRelease is /proc/sys/kernel/osrelease.
	KernelRelease string
	// KernelCmdline is /proc/cmdline.
	KernelCmdline string
	// OnlineCPUs are the CPUs the kernel runs.
	OnlineCPUs cpuset.Set
	// PresentCPUs are the CPUs the machine has, online or not (/sys/devices/system/cpu/present).
	PresentCPUs cpuset.Set
	// HotpluggableCPUs are the CPUs with a cpuN/online file, online or not: those that can be
	// taken offline.
	HotpluggableCPUs cpuset.Set
	// IsolatedCPUs are the CPUs isolated at boot (/sys/devices/system/cpu/isolated).
	IsolatedCPUs cpuset.Set
	// NohzFullCPUs are the adaptive-tick CPUs (/sys/devices/system/cpu/nohz_full).
	NohzFullCPUs cpuset.Set
	// CPUs is the topology of every online CPU.
	CPUs []CPU
	// Sockets, Cores and ThreadsPerCore summarise the topology.
	Sockets, Cores, ThreadsPerCore int
	// NUMANodes are the memory nodes with their CPUs and hugepage sizes.
	NUMANodes []NUMANode
	// Interfaces are the network interfaces except loopback.
	Interfaces []Interface
	// CPUFreq says whether the CPUs have cpufreq (false in most VMs).
	CPUFreq bool
	// IdleStates are CPU 0's cpuidle states (the others normally match).
	IdleStates []IdleState
}

// CPU is one logical CPU's place in the topology.
type CPU struct {
	ID     int
	Core   int
	Socket int
	Node   int
	// Siblings are the SMT threads of the same core, this CPU included.
	Siblings cpuset.Set
}

// NUMANode is one memory node.
type NUMANode struct {
	ID   int
	CPUs cpuset.Set
	// HugepageSizesKB are the hugepage sizes the node offers (2048, 1048576, ...).
	HugepageSizesKB []int
}

// Interface is one network interface.
type Interface struct {
	Name string
	// Driver is the kernel driver ("ice", "mlx5_core", "virtio_net", "veth").
	Driver string
	// PCIAddress, Vendor and Device identify the PCI function ("0000:3b:00.0", "8086", "159b");
	// empty for virtual interfaces.
	PCIAddress, Vendor, Device string
	// SRIOVTotalVFs is how many VFs the function supports (0: no SR-IOV); SRIOVNumVFs how many
	// are enabled.
	SRIOVTotalVFs, SRIOVNumVFs int
	// NUMANode is the NUMA node the device is attached to; nil when unknown.
	NUMANode *int
	// PhysicalFunction is the PF's interface name when this interface is an SR-IOV VF.
	PhysicalFunction string
	// XDPNative guesses, from the driver name, whether the driver runs XDP programs natively.
	XDPNative bool
	// RXQueues and TXQueues count the queues in sysfs.
	RXQueues, TXQueues int
}

// xdpNativeDrivers have native (driver-mode) XDP support in mainline Linux.
var xdpNativeDrivers = []string{
	"bnxt_en", "ena", "enetc", "fec", "gve", "hv_netvsc", "i40e", "ice", "idpf", "igb", "igc",
	"ixgbe", "ixgbevf", "mlx4_core", "mlx4_en", "mlx5_core", "mvneta", "mvpp2", "netsec", "nfp",
	"qede", "sfc", "stmmac", "thunder-nicvf", "tun", "veth", "virtio_net", "xennet",
}

// XDPNativeDriver reports whether a driver is known to run XDP natively.
func XDPNativeDriver(driver string) bool { return slices.Contains(xdpNativeDrivers, driver) }

// DriverNamer is implemented by NICs that can name the driver of a virtual interface (which has
// no device link in sysfs).
type DriverNamer interface {
	Driver(ifname string) (string, error)
}

// Discover reads the node's facts. Missing optional parts (no NUMA directory, no cpuidle) leave
// zero values; unreadable mandatory parts (online CPUs, the kernel command line) are errors.
func (h *Host) Discover() (*Facts, error) {
	f := &Facts{}
	var err error
	if f.OnlineCPUs, err = h.OnlineCPUs(); err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	f.KernelRelease, _ = h.ReadFile("/proc/sys/kernel/osrelease")
	// An unreadable command line is an error, not an empty one: every kernel argument would look
	// missing and ask for a reboot.
	if f.KernelCmdline, err = h.ReadFile("/proc/cmdline"); err != nil {
		return nil, fmt.Errorf("discover: reading the kernel command line: %w", err)
	}
	// Optional: a kernel without CPU hotplug has neither; nothing can be taken offline there.
	f.PresentCPUs, _ = h.PresentCPUs()
	f.HotpluggableCPUs, _ = h.HotpluggableCPUs()
	if v, err := h.ReadFile("/sys/devices/system/cpu/isolated"); err == nil {
		f.IsolatedCPUs, _ = cpuset.Parse(v)
	}
	if v, err := h.ReadFile("/sys/devices/system/cpu/nohz_full"); err == nil && v != "(null)" {
		f.NohzFullCPUs, _ = cpuset.Parse(v)
	}
	if f.NUMANodes, err = h.numaNodes(); err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	nodeOf := map[int]int{}
	for _, n := range f.NUMANodes {
		for _, c := range n.CPUs.CPUs() {
			nodeOf[c] = n.ID
		}
	}
	sockets, cores := map[int]bool{}, map[[2]int]bool{}
	for _, id := range f.OnlineCPUs.CPUs() {
		c := CPU{ID: id, Node: nodeOf[id], Siblings: cpuset.New(id)}
		base := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/", id)
		if v, err := h.ReadFile(base + "core_id"); err == nil {
			c.Core, _ = strconv.Atoi(v)
		}
		if v, err := h.ReadFile(base + "physical_package_id"); err == nil {
			c.Socket, _ = strconv.Atoi(v)
		}
		if v, err := h.ReadFile(base + "thread_siblings_list"); err == nil {
			if s, err := cpuset.Parse(v); err == nil {
				c.Siblings = s
			}
		}
		sockets[c.Socket] = true
		cores[[2]int{c.Socket, c.Core}] = true
		if c.Siblings.Len() > f.ThreadsPerCore {
			f.ThreadsPerCore = c.Siblings.Len()
		}
		f.CPUs = append(f.CPUs, c)
	}
	f.Sockets, f.Cores = len(sockets), len(cores)
	if len(f.CPUs) > 0 {
		f.CPUFreq = h.HasCPUFreq(f.CPUs[0].ID)
		f.IdleStates, _ = h.IdleStates(f.CPUs[0].ID)
	}
	if f.Interfaces, err = h.interfaces(); err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	return f, nil
}

func (h *Host) numaNodes() ([]NUMANode, error) {
	dirs, err := h.globNumbered("/sys/devices/system/node/node[0-9]*", "node")
	if err != nil {
		return nil, err
	}
	var out []NUMANode
	for _, nd := range dirs {
		d := nd.path
		n := NUMANode{ID: nd.n}
		if v, err := h.ReadFile(d + "/cpulist"); err == nil {
			n.CPUs, _ = cpuset.Parse(v)
		}
		sizes, _ := h.Glob(d + "/hugepages/hugepages-*kB")
		for _, s := range sizes {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path.Base(s), "hugepages-"), "kB"))
			if err == nil {
				n.HugepageSizesKB = append(n.HugepageSizesKB, kb)
			}
		}
		slices.Sort(n.HugepageSizesKB)
		out = append(out, n)
	}
	return out, nil
}

func (h *Host) interfaces() ([]Interface, error) {
	entries, err := os.ReadDir(h.Path("/sys/class/net"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var out []Interface
	for _, e := range entries {
		name := e.Name()
		if name == "lo" || !h.Exists("/sys/class/net/"+name+"/ifindex") {
			continue
		}
		ifc := Interface{Name: name}
		if t, err := os.Readlink(h.Path("/sys/class/net/" + name + "/device/driver")); err == nil {
			ifc.Driver = filepath.Base(t)
		} else if dn, ok := h.NIC.(DriverNamer); ok {
			ifc.Driver, _ = dn.Driver(name)
		}
		if ifc.PCIAddress, err = h.PCIAddress(name); err != nil {
			return nil, err
		}
		if ifc.PCIAddress != "" {
			dev := "/sys/bus/pci/devices/" + ifc.PCIAddress + "/"
			if v, err := h.ReadFile(dev + "vendor"); err == nil {
				ifc.Vendor = strings.TrimPrefix(v, "0x")
			}
			if v, err := h.ReadFile(dev + "device"); err == nil {
				ifc.Device = strings.TrimPrefix(v, "0x")
			}
			ifc.SRIOVTotalVFs, _ = h.SRIOVTotalVFs(ifc.PCIAddress)
			ifc.SRIOVNumVFs, _ = h.SRIOVNumVFs(ifc.PCIAddress)
			if v, err := h.ReadFile(dev + "numa_node"); err == nil {
				if n, err := strconv.Atoi(v); err == nil && n >= 0 {
					ifc.NUMANode = &n
				}
			}
			if pf, err := os.Readlink(h.Path(dev + "physfn")); err == nil {
				pfNets, _ := os.ReadDir(h.Path("/sys/bus/pci/devices/" + filepath.Base(pf) + "/net"))
				if len(pfNets) > 0 {
					ifc.PhysicalFunction = pfNets[0].Name()
				}
			}
		}
		ifc.XDPNative = XDPNativeDriver(ifc.Driver)
		rx, _ := h.Queues(name, RXQueue)
		tx, _ := h.Queues(name, TXQueue)
		ifc.RXQueues, ifc.TXQueues = len(rx), len(tx)
		out = append(out, ifc)
	}
	return out, nil
}

// Driver implements DriverNamer with the ETHTOOL_GDRVINFO ioctl in the NIC's namespace.
func (e *EthtoolNIC) Driver(ifname string) (string, error) {
	fd, err := e.socket()
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
	if err != nil {
		return "", fmt.Errorf("%s driver info: %w", ifname, err)
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
}

// socket opens a datagram socket in the NIC's network namespace.
func (e *EthtoolNIC) socket() (int, error) {
	if e.NetNS == 0 {
		return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return -1, fmt.Errorf("current netns: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(netns.NsHandle(e.NetNS)); err != nil {
		return -1, fmt.Errorf("enter netns: %w", err)
	}
	fd, serr := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err := netns.Set(orig); err != nil {
		// The thread is in the wrong namespace: keep it locked so the runtime discards it.
		runtime.LockOSThread()
		if serr == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("return to original netns: %w", err)
	}
	return fd, serr
}
