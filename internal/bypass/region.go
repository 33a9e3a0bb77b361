// Package bypass reads the statistics regions that processes running under the kernel-bypass data
// plane (libtickstack, dataplane/) publish in /dev/shm/tickstack-<pid>, finds those processes on the
// node through /proc, names the pod and container each runs in from its cgroup, and exports their
// counters as Prometheus metrics labelled with the pod's namespace and name (Collector). The node
// agent registers the Collector on its metrics endpoint (docs/monitoring.md, "Bypass pods").
package bypass

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The layout of struct tickstack_stats in dataplane/include/tickstack.h, at the version this
// reader knows. From version 6 on the layout only grows at its end (the header says so), each
// growth raising the version: a region of a later version is read by the prefix this reader knows,
// one of an earlier version from MinStatsVersion on by its own prefix (the members it lacks read 0,
// and Stats.Version says which exist).
// region_test.go compiles a C program with the header and fails when a member this reader knows
// moves, or the header's version is below this reader's, so a change that breaks the rule cannot
// land without this reader following it.
const (
	// StatsMagic is TICKSTACK_STATS_MAGIC ("TSKS").
	StatsMagic = 0x54534b53
	// StatsVersion is the TICKSTACK_STATS_VERSION whose layout the types below mirror; later
	// versions extend it at the end.
	StatsVersion = 7
	// MinStatsVersion is the earliest version read: version 6, whose layout ends before
	// XSKExt (the libtickstack of the release before, until its pod restarts).
	MinStatsVersion = 6
	// MaxXSK and MaxSock are TICKSTACK_STATS_MAX_XSK and TICKSTACK_STATS_MAX_SOCK.
	MaxXSK  = 8
	MaxSock = 256
)

// XSKStats mirrors struct tickstack_xsk_stats: the counters of the XSKs of one interface.
type XSKStats struct {
	Ifname         [16]byte
	Ifindex        uint32
	Queue          uint32
	InUse          uint32
	Mode           uint32
	TxCsumOffload  uint32
	Zerocopy       uint32
	Nqueues        uint32
	Reserved       uint32
	RxPackets      uint64
	TxPackets      uint64
	RxNoSocket     uint64
	RxBad          uint64
	RxSockqFull    uint64
	TxRingFull     uint64
	FillRingEmpty  uint64
	TxKicks        uint64
	TxKickErrors   uint64
	RxBadCsum      uint64
	FillWakeups    uint64
	XDPRxDropped   uint64
	XDPRxInvalid   uint64
	XDPTxInvalid   uint64
	XDPRxRingFull  uint64
	XDPFillEmpty   uint64
	XDPTxRingEmpty uint64
	UmemFramesOut  uint64
	RxMultibuf     uint64
	TxMultibuf     uint64
}

// SockStats mirrors struct tickstack_sock_stats: the counters of one socket slot (InUse 1: open,
// 2: closed, its slot not yet reused).
type SockStats struct {
	Fd               int32
	InUse            uint32
	Accelerated      uint32
	Laddr, Raddr     uint32
	Lport, Rport     uint16
	RxAccel          uint64
	RxKernel         uint64
	TxAccel          uint64
	TxKernel         uint64
	RxDrops          uint64
	RxFiltered       uint64
	TxKernelNoroute  uint64
	TxKernelNeigh    uint64
	TxKernelLocal    uint64
	TxKernelOversize uint64
	TxKernelNostack  uint64
	TxKernelFlags    uint64
	TxKernelMcloop   uint64
	RxSpilled        uint64
}

// TCPStats mirrors the tcp member of struct tickstack_stats (TICKSTACK_TCP_COUNTERS).
type TCPStats struct {
	ConnsAccel      uint64
	ConnsKernel     uint64
	ConnsLive       uint64
	ListenAccel     uint64
	PortsHeld       uint64
	SegsRx          uint64
	SegsTx          uint64
	RxCsumCompleted uint64
	RxNoNetif       uint64
	TxNoroute       uint64
	TxNeigh         uint64
	TxRingFull      uint64
	Resets          uint64
	NewrenoRexmits  uint64
	ListenOverflow  uint64
	EarlyRexmits    uint64
	ForkShared      uint64
}

// XSKExtStats mirrors struct tickstack_xsk_ext (TICKSTACK_XSK_EXT_COUNTERS, version 7): more
// counters of the XSK slot of the same index.
type XSKExtStats struct {
	RxBytes     uint64
	TxBytes     uint64
	RxHwMeta    uint64
	RxHwTstamps uint64
	HwUnbound   uint64
}

// TCPExtStats mirrors the tcp_ext member (TICKSTACK_TCP_EXT_COUNTERS, version 7).
type TCPExtStats struct {
	RexmitSegs uint64
}

// NHStats mirrors the nh member (TICKSTACK_NH_COUNTERS).
type NHStats struct {
	Refreshes    uint64
	Misses       uint64
	WaitTimeouts uint64
}

// Stats mirrors struct tickstack_stats, version StatsVersion.
type Stats struct {
	Magic              uint32
	Version            uint32
	Pid                int32
	Nxsk               uint32
	Profile            [16]byte
	SocketsAccelerated uint64
	SocketsKernel      uint64
	FallbackEvents     uint64
	KernelOption       uint64
	KernelUring        uint64
	KernelShared       uint64
	XSK                [MaxXSK]XSKStats
	Sock               [MaxSock]SockStats
	TCP                TCPStats
	NH                 NHStats
	// the inspection tools' requests (tickstack-dump, tickstack-stackdump)
	CapReq, CapAtt, DumpReq, DumpDone uint32
	// version 7
	XSKExt [MaxXSK]XSKExtStats
	TCPExt TCPExtStats
}

// StatsSize is sizeof(struct tickstack_stats) at StatsVersion.
const StatsSize = int(unsafe.Sizeof(Stats{}))

// statsSizeV6 is sizeof(struct tickstack_stats) at version 6: the layout up to XSKExt.
const statsSizeV6 = int(unsafe.Offsetof(Stats{}.XSKExt))

// HasV7 says whether the region carries the members of version 7 (XSKExt, TCPExt).
func (s *Stats) HasV7() bool { return s.Version >= 7 }

// ParseStats decodes a region's bytes (the file /dev/shm/tickstack-<pid>): the prefix of
// StatsSize bytes, which a later version extends; a version 6 region by its shorter layout, the
// members of version 7 left zero. It refuses a region without the magic (not yet initialised, or
// not a tickstack region), of a version before MinStatsVersion, or shorter than its version's
// layout.
func ParseStats(b []byte) (*Stats, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%d bytes: shorter than the region's header", len(b))
	}
	if m := binary.NativeEndian.Uint32(b); m != StatsMagic {
		return nil, fmt.Errorf("magic %#x, want %#x: not (yet) a tickstack statistics region", m, StatsMagic)
	}
	v := binary.NativeEndian.Uint32(b[4:])
	if v < MinStatsVersion {
		return nil, &VersionError{Version: v}
	}
	want := StatsSize
	if v < 7 {
		want = statsSizeV6
	}
	if len(b) < want {
		return nil, fmt.Errorf("%d bytes, want %d: truncated region", len(b), want)
	}
	full := make([]byte, StatsSize)
	copy(full, b[:want])
	var s Stats
	if err := binary.Read(bytes.NewReader(full), binary.NativeEndian, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// VersionError is a region of a layout version before the one this reader knows: a library of an
// earlier tickstack release than the agent's (during an upgrade, until the pod restarts).
type VersionError struct{ Version uint32 }

func (e *VersionError) Error() string {
	return fmt.Sprintf("layout version %d, this reader knows %d and later: the process runs a libtickstack of an earlier release than the agent", e.Version, MinStatsVersion)
}

// cString is a NUL-terminated C string of a fixed array.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
