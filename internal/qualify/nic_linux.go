package qualify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// SIOCETHTOOL commands (include/uapi/linux/ethtool.h). mdlayher/ethtool v0.7.0 has no driver
// info, timestamping or RSS calls, and ethtool netlink has no driver info at all, so these go
// through the ioctl, as ethtool -i, -T, -k, -n and -x do; the channels through the host layer's
// ethtool netlink.
const (
	ethtoolGFlags      = 0x25
	ethtoolGRXRings    = 0x2d
	ethtoolGRXClsRlCnt = 0x2e
	ethtoolGRXFHIndir  = 0x38
	ethtoolGetTSInfo   = 0x41

	ethFlagNTuple = 1 << 27
	ethFlagRXHash = 1 << 28
)

// sofTimestamping are the SOF_TIMESTAMPING_* capability bits as ethtool -T names them.
var sofTimestamping = []string{"hardware-transmit", "software-transmit", "hardware-receive", "software-receive",
	"software-system-clock", "hardware-legacy-clock", "hardware-raw-clock"}

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// ethtool sends one SIOCETHTOOL command whose buffer starts with the command word.
func ethtool(ifname string, buf []byte) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&buf[0])
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if e != 0 {
		return e
	}
	return nil
}

func cmdBuf(size int, cmd uint32) []byte {
	b := make([]byte, size)
	*(*uint32)(unsafe.Pointer(&b[0])) = cmd
	return b
}

func u32(b []byte, off int) uint32 { return *(*uint32)(unsafe.Pointer(&b[off])) }

func probeNIC(o *Options, r *tsv1.QualifyReport) {
	if u := new(unix.Utsname); unix.Uname(u) == nil {
		r.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		if di, err := unix.IoctlGetEthtoolDrvinfo(fd, o.Interface); err == nil {
			r.Driver = unix.ByteSliceToString(di.Driver[:])
			r.DriverVersion = unix.ByteSliceToString(di.Version[:])
			r.Firmware = unix.ByteSliceToString(di.Fw_version[:])
			r.BusInfo = unix.ByteSliceToString(di.Bus_info[:])
		} else {
			r.Driver = "unknown (" + err.Error() + ")"
		}
		unix.Close(fd)
	}
	// queues
	nic := &host.EthtoolNIC{}
	if ch, err := nic.NICParams(o.Interface, host.Channels); err == nil {
		r.Queues.RX, r.Queues.TX, r.Queues.Combined, r.Queues.MaxCombined = int32(ch["rx"]), int32(ch["tx"]), int32(ch["combined"]), int32(ch["max-combined"])
	} else {
		r.Queues.ChannelsError = err.Error()
	}
	if qs, err := filepath.Glob(filepath.Join(o.sys(), "class/net", o.Interface, "queues/rx-*")); err == nil {
		r.Queues.ReceiveQueues = int32(len(qs))
	}
	// steering
	r.Steering.NTuple, r.Steering.RXHash = "unsupported", "unsupported"
	flags := cmdBuf(8, ethtoolGFlags)
	flagsErr := ethtool(o.Interface, flags)
	onOff := func(bit uint32) string {
		if u32(flags, 4)&bit != 0 {
			return "on"
		}
		return "off"
	}
	rxnfc := cmdBuf(512, ethtoolGRXClsRlCnt)
	if err := ethtool(o.Interface, rxnfc); err == nil {
		n := int32(u32(rxnfc, 184)) // ethtool_rxnfc.rule_cnt, after the 168-byte flow spec
		r.Steering.NTupleRules = &n
		if flagsErr == nil {
			r.Steering.NTuple = onOff(ethFlagNTuple)
		}
	}
	rings := cmdBuf(512, ethtoolGRXRings)
	if err := ethtool(o.Interface, rings); err == nil {
		r.Steering.RSSRings = int32(*(*uint64)(unsafe.Pointer(&rings[8])))
		if flagsErr == nil {
			r.Steering.RXHash = onOff(ethFlagRXHash)
		}
	}
	indir := cmdBuf(8, ethtoolGRXFHIndir)
	if err := ethtool(o.Interface, indir); err == nil {
		r.Steering.IndirectionTableSize = int32(u32(indir, 4))
	}
	// timestamping
	ts := cmdBuf(44, ethtoolGetTSInfo)
	if err := ethtool(o.Interface, ts); err != nil {
		r.Timestamping.Error = err.Error()
		r.Timestamping.PHCIndex = -1
	} else {
		caps := u32(ts, 4)
		for i, n := range sofTimestamping {
			if caps&(1<<i) != 0 {
				r.Timestamping.Capabilities = append(r.Timestamping.Capabilities, n)
			}
		}
		r.Timestamping.HardwareTX = caps&unix.SOF_TIMESTAMPING_TX_HARDWARE != 0
		r.Timestamping.HardwareRX = caps&unix.SOF_TIMESTAMPING_RX_HARDWARE != 0
		r.Timestamping.PHCIndex = int32(u32(ts, 8))
	}
	probeIRQs(o, r)
}

// probeIRQs reads the device's NUMA node and, for each of its MSI interrupts, the affinity and
// whether it stays on that node.
func probeIRQs(o *Options, r *tsv1.QualifyReport) {
	dev := filepath.Join(o.sys(), "class/net", o.Interface, "device")
	if b, err := os.ReadFile(filepath.Join(dev, "numa_node")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			r.NUMANode = int32(n)
		}
	}
	var node cpuset.Set
	haveNode := false
	if r.NUMANode >= 0 {
		if b, err := os.ReadFile(filepath.Join(o.sys(), "devices/system/node", fmt.Sprintf("node%d", r.NUMANode), "cpulist")); err == nil {
			if s, err := cpuset.Parse(strings.TrimSpace(string(b))); err == nil {
				node, haveNode = s, true
				r.NodeCPUs = strings.TrimSpace(string(b))
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(dev, "msi_irqs"))
	if err != nil {
		return // a virtual interface, or a device without MSI
	}
	names := irqNames(o.proc())
	var irqs []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			irqs = append(irqs, n)
		}
	}
	sort.Ints(irqs)
	for _, n := range irqs {
		q := tsv1.QualifyIRQ{IRQ: int32(n), Name: names[n]}
		b, err := os.ReadFile(filepath.Join(o.proc(), "irq", strconv.Itoa(n), "smp_affinity_list"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			q.CPUs = "unreadable: " + err.Error()
		} else {
			q.CPUs = strings.TrimSpace(string(b))
			if aff, err := cpuset.Parse(q.CPUs); err == nil && haveNode {
				local := true
				for _, c := range aff.CPUs() {
					local = local && node.Contains(c)
				}
				q.NodeLocal = &local
			}
		}
		r.IRQs = append(r.IRQs, q)
	}
}

// irqNames maps each interrupt of /proc/interrupts to its action name (the last field).
func irqNames(proc string) map[int]string {
	out := map[int]string{}
	b, err := os.ReadFile(filepath.Join(proc, "interrupts"))
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil {
			continue
		}
		out[n] = f[len(f)-1]
	}
	return out
}
