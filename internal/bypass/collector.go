package bypass

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// PodLister lists the pods of the agent's node (from the API server).
type PodLister func(ctx context.Context) ([]corev1.Pod, error)

// DefaultRelist is the least time between two pod lists: a process of a pod the agent has not
// named yet makes the next scrape list the node's pods, at most this often.
const DefaultRelist = 5 * time.Second

// Options configure a Collector.
type Options struct {
	// Proc is the procfs to scan: "/proc" in the agent, which runs with hostPID.
	Proc string
	// Pods lists the node's pods, to name a process's pod from the pod UID of its cgroup. Nil:
	// only the processes outside pods are exported.
	Pods PodLister
	// Relist is the least time between two lists (DefaultRelist when zero).
	Relist time.Duration
	// ListTimeout bounds one list (5s when zero): a scrape does not wait longer for names.
	ListTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Log gets the lists that fail and the regions that cannot be read, at V(1).
	Log logr.Logger
}

// Collector exports the counters of every process under libtickstack on the node, read from their
// statistics regions at scrape time. Every series has the labels namespace, pod and container of the
// process's pod (empty for a process outside a pod) and pid, its PID on the node; docs/monitoring.md
// lists the families.
type Collector struct {
	o Options

	info, packets, bytes, drops, ringFull, messages, sockets, fallbacks, kernelSends *prometheus.Desc
	tcpConns, tcpRexmits, tcpRexmitSegs, tcpDrops, unreadable                        *prometheus.Desc
	hwMeta, hwStamps, hwUnbound                                                      *prometheus.Desc

	mu       sync.Mutex
	pods     map[string]podRef // by UID
	lastList time.Time
}

type podRef struct {
	namespace, name string
	containers      map[string]string // container ID -> name
}

// Label names of every per-process series.
var processLabels = []string{"namespace", "pod", "container", "pid"}

// NewCollector returns a Collector; register it with the agent's metrics registry.
func NewCollector(o Options) *Collector {
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	if o.Relist <= 0 {
		o.Relist = DefaultRelist
	}
	if o.ListTimeout <= 0 {
		o.ListTimeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	with := func(l ...string) []string { return append(append([]string{}, processLabels...), l...) }
	return &Collector{
		o: o,
		info: prometheus.NewDesc("tickstack_bypass_process_info",
			"1 for each process running under the kernel-bypass data plane: its command, its PID in its own PID namespace (what tickstack-stats takes in the pod) and its spin profile.",
			with("process", "pod_pid", "profile"), nil),
		packets: prometheus.NewDesc("tickstack_bypass_packets_total",
			"Frames the process received from (rx) and put on (tx) its AF_XDP sockets on an interface.", with("interface", "direction"), nil),
		bytes: prometheus.NewDesc("tickstack_bypass_packet_bytes_total",
			"Bytes of the frames in tickstack_bypass_packets_total, with their Ethernet header, as the kernel's rx_bytes and tx_bytes of an interface count them (absent for a library of an earlier release, layout version 6).",
			with("interface", "direction"), nil),
		hwMeta: prometheus.NewDesc("tickstack_bypass_rx_hw_metadata_total",
			"Frames received on an interface that carried the device-bound XDP program's metadata (TICKSTACK_RX_HWTSTAMP=1, docs/dataplane.md \"Timestamps\"); absent for a library of an earlier release, layout version 6.",
			with("interface"), nil),
		hwStamps: prometheus.NewDesc("tickstack_bypass_rx_hw_timestamps_total",
			"Of tickstack_bypass_rx_hw_metadata_total, the frames whose metadata held a hardware receive time (the driver gave one through bpf_xdp_metadata_rx_timestamp); absent for layout version 6.",
			with("interface"), nil),
		hwUnbound: prometheus.NewDesc("tickstack_bypass_hw_timestamps_unbound",
			"1 when the process asked for hardware receive timestamps (TICKSTACK_RX_HWTSTAMP=1) and the interface's XDP program is not the device-bound one, so its frames carry none; absent for layout version 6.",
			with("interface"), nil),
		drops: prometheus.NewDesc("tickstack_bypass_drops_total",
			"Frames for the process dropped on an interface, by reason: socket_queue_full (the socket's queue was full), no_socket (steered, no socket wanted it), malformed, bad_checksum, xdp_rx_dropped (the kernel dropped it: no UMEM frame), xdp_invalid (invalid descriptors, RX and TX).",
			with("interface", "reason"), nil),
		ringFull: prometheus.NewDesc("tickstack_bypass_ring_full_total",
			"Ring-full events on an interface: tx (a send waited for the TX ring or a free frame), rx (the kernel found the RX ring full and dropped the frame), fill (the kernel found the fill ring empty).",
			with("interface", "ring"), nil),
		messages: prometheus.NewDesc("tickstack_bypass_socket_messages_total",
			"What the process's sockets received (rx) and sent (tx) through the XSK (path accelerated) and through the kernel (path kernel): datagrams for UDP sockets, bytes for TCP streams; summed over the socket slots, so a reused slot restarts its share.",
			with("direction", "path"), nil),
		sockets: prometheus.NewDesc("tickstack_bypass_sockets_total",
			"Sockets the process opened that got the XSK's steering (accelerated) or were left on the kernel (kernel).", with("path"), nil),
		fallbacks: prometheus.NewDesc("tickstack_bypass_fallbacks_total",
			"Fallbacks to the kernel: every socket or call the stack handed to the kernel's stack (any reason; TICKSTACK_DEBUG=1 names each).", processLabels, nil),
		kernelSends: prometheus.NewDesc("tickstack_bypass_kernel_sends_total",
			"Sends of accelerated sockets that went through the kernel, by reason: no_route, neighbour (unresolved), local (local or broadcast destination), oversize, no_stack (no XSK on that interface), flags, multicast_loop; summed over the socket slots.",
			with("reason"), nil),
		tcpConns: prometheus.NewDesc("tickstack_bypass_tcp_connections_total",
			"TCP connections (connect, accept) through the XSK (accelerated) and stream sockets left on the kernel (kernel).", with("path"), nil),
		tcpRexmits: prometheus.NewDesc("tickstack_bypass_tcp_retransmits_total",
			"TCP retransmissions of two kinds the stack counts apart: newreno (partial ACKs answered with a retransmission), early (RFC 5827 early retransmits); every retransmitted segment is in tickstack_bypass_tcp_retransmitted_segments_total.", with("kind"), nil),
		tcpRexmitSegs: prometheus.NewDesc("tickstack_bypass_tcp_retransmitted_segments_total",
			"TCP segments the stack sent again, whatever resent them (retransmission timer, fast and early retransmit, NewReno; SYNs and FINs included), as the kernel's TcpRetransSegs counts them (absent for a library of an earlier release, layout version 6).",
			processLabels, nil),
		tcpDrops: prometheus.NewDesc("tickstack_bypass_tcp_segment_drops_total",
			"TCP segments dropped by the stack: no_route, neighbour (unresolved), tx_ring_full, listen_overflow (SYNs and handshake ACKs: accept queue full).", with("reason"), nil),
		unreadable: prometheus.NewDesc("tickstack_bypass_processes_unreadable",
			"Processes mapping a statistics region the agent could not read at this scrape: version (the library of an earlier tickstack release), read (an error: the agent's debug log says which).",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.packets, c.bytes, c.drops, c.ringFull, c.messages, c.sockets, c.fallbacks,
		c.kernelSends, c.tcpConns, c.tcpRexmits, c.tcpRexmitSegs, c.tcpDrops, c.unreadable, c.hwMeta, c.hwStamps, c.hwUnbound} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	procs, bad, err := Scan(c.o.Proc)
	if err != nil {
		// Not an invalid metric: that would fail the whole scrape, the agent's other series with it.
		c.o.Log.Error(err, "scanning for bypass processes failed", "proc", c.o.Proc)
		return
	}
	unreadable := map[string]int{"version": 0, "read": 0}
	for _, u := range bad {
		unreadable[u.Reason]++
		c.o.Log.V(1).Info("cannot read a bypass process's statistics", "pid", u.PID, "error", u.Err.Error())
	}
	for reason, n := range unreadable {
		c.send(ch, c.unreadable, prometheus.GaugeValue, float64(n), reason)
	}
	names := c.resolve(procs)
	for i := range procs {
		p := &procs[i]
		ref := names[p.PodUID]
		if p.PodUID != "" && ref.name == "" {
			continue // a pod the API server does not list (yet): exported once it is named
		}
		c.collectProcess(ch, p, []string{ref.namespace, ref.name, ref.containers[p.ContainerID], strconv.Itoa(p.PID)})
	}
}

func (c *Collector) collectProcess(ch chan<- prometheus.Metric, p *Process, base []string) {
	s := p.Stats
	with := func(l ...string) []string { return append(append(make([]string, 0, len(base)+len(l)), base...), l...) }
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		c.send(ch, d, prometheus.CounterValue, float64(v), with(l...)...)
	}
	c.send(ch, c.info, prometheus.GaugeValue, 1, with(label(p.Comm), strconv.Itoa(p.NSPID), label(cString(s.Profile[:])))...)

	// One interface's XSKs are one slot; two slots of one name (never written so) are summed, as
	// a registry refuses two series of the same labels.
	type ifc struct {
		rx, tx, rxBytes, txBytes, sockq, nosock, bad, csum, xdpDropped, invalid, txFull, rxFull, fill uint64
		hwMeta, hwStamps, hwUnbound                                                                   uint64
	}
	ifs := map[string]*ifc{}
	var order []string
	for i := 0; i < int(s.Nxsk) && i < MaxXSK; i++ {
		x := &s.XSK[i]
		if x.InUse == 0 {
			continue
		}
		name := label(cString(x.Ifname[:]))
		a := ifs[name]
		if a == nil {
			a = &ifc{}
			ifs[name] = a
			order = append(order, name)
		}
		a.rx += x.RxPackets
		a.tx += x.TxPackets
		a.rxBytes += s.XSKExt[i].RxBytes
		a.txBytes += s.XSKExt[i].TxBytes
		a.hwMeta += s.XSKExt[i].RxHwMeta
		a.hwStamps += s.XSKExt[i].RxHwTstamps
		if s.XSKExt[i].HwUnbound != 0 { // a flag, not a count: 1 when any slot of the name says so
			a.hwUnbound = 1
		}
		a.sockq += x.RxSockqFull
		a.nosock += x.RxNoSocket
		a.bad += x.RxBad
		a.csum += x.RxBadCsum
		a.xdpDropped += x.XDPRxDropped
		a.invalid += x.XDPRxInvalid + x.XDPTxInvalid
		a.txFull += x.TxRingFull
		a.rxFull += x.XDPRxRingFull
		a.fill += x.XDPFillEmpty
	}
	for _, name := range order {
		a := ifs[name]
		counter(c.packets, a.rx, name, "rx")
		counter(c.packets, a.tx, name, "tx")
		if s.HasV7() {
			counter(c.bytes, a.rxBytes, name, "rx")
			counter(c.bytes, a.txBytes, name, "tx")
			counter(c.hwMeta, a.hwMeta, name)
			counter(c.hwStamps, a.hwStamps, name)
			c.send(ch, c.hwUnbound, prometheus.GaugeValue, float64(a.hwUnbound), with(name)...)
		}
		counter(c.drops, a.sockq, name, "socket_queue_full")
		counter(c.drops, a.nosock, name, "no_socket")
		counter(c.drops, a.bad, name, "malformed")
		counter(c.drops, a.csum, name, "bad_checksum")
		counter(c.drops, a.xdpDropped, name, "xdp_rx_dropped")
		counter(c.drops, a.invalid, name, "xdp_invalid")
		counter(c.ringFull, a.txFull, name, "tx")
		counter(c.ringFull, a.rxFull, name, "rx")
		counter(c.ringFull, a.fill, name, "fill")
	}

	var rxA, rxK, txA, txK, noroute, neigh, local, oversize, nostack, flags, mcloop uint64
	for i := range s.Sock {
		k := &s.Sock[i]
		if k.InUse == 0 {
			continue
		}
		rxA += k.RxAccel
		rxK += k.RxKernel
		txA += k.TxAccel
		txK += k.TxKernel
		noroute += k.TxKernelNoroute
		neigh += k.TxKernelNeigh
		local += k.TxKernelLocal
		oversize += k.TxKernelOversize
		nostack += k.TxKernelNostack
		flags += k.TxKernelFlags
		mcloop += k.TxKernelMcloop
	}
	counter(c.messages, rxA, "rx", "accelerated")
	counter(c.messages, rxK, "rx", "kernel")
	counter(c.messages, txA, "tx", "accelerated")
	counter(c.messages, txK, "tx", "kernel")
	for _, r := range []struct {
		reason string
		v      uint64
	}{{"no_route", noroute}, {"neighbour", neigh}, {"local", local}, {"oversize", oversize}, {"no_stack", nostack}, {"flags", flags}, {"multicast_loop", mcloop}} {
		counter(c.kernelSends, r.v, r.reason)
	}
	counter(c.sockets, s.SocketsAccelerated, "accelerated")
	counter(c.sockets, s.SocketsKernel, "kernel")
	counter(c.fallbacks, s.FallbackEvents)
	counter(c.tcpConns, s.TCP.ConnsAccel, "accelerated")
	counter(c.tcpConns, s.TCP.ConnsKernel, "kernel")
	counter(c.tcpRexmits, s.TCP.NewrenoRexmits, "newreno")
	counter(c.tcpRexmits, s.TCP.EarlyRexmits, "early")
	if s.HasV7() {
		counter(c.tcpRexmitSegs, s.TCPExt.RexmitSegs)
	}
	counter(c.tcpDrops, s.TCP.TxNoroute, "no_route")
	counter(c.tcpDrops, s.TCP.TxNeigh, "neighbour")
	counter(c.tcpDrops, s.TCP.TxRingFull, "tx_ring_full")
	counter(c.tcpDrops, s.TCP.ListenOverflow, "listen_overflow")
}

// send sends one series; one that cannot be made (never expected: the labels are made valid) is
// logged and left out rather than panicking the scrape.
func (c *Collector) send(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		c.o.Log.Error(err, "a bypass series left out", "labels", labels)
		return
	}
	ch <- m
}

// label makes a string the process or its region gives (its command, its profile, an interface
// name: all the process's own to write) a valid label value: UTF-8, at most 64 bytes.
func label(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "")
	}
	return s
}

// resolve names the pods of procs: from what the last list said, listing the node's pods again
// when a pod UID is new and the last list is older than Relist.
func (c *Collector) resolve(procs []Process) map[string]podRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	missing := false
	for i := range procs {
		uid := procs[i].PodUID
		if uid == "" {
			continue
		}
		ref, ok := c.pods[uid]
		if !ok || ref.containers[procs[i].ContainerID] == "" && procs[i].ContainerID != "" {
			missing = true // a new pod, or a container (re)started since the last list
		}
	}
	if missing && c.o.Pods != nil && c.o.Now().Sub(c.lastList) >= c.o.Relist {
		c.lastList = c.o.Now()
		ctx, cancel := context.WithTimeout(context.Background(), c.o.ListTimeout)
		pods, err := c.o.Pods(ctx)
		cancel()
		if err != nil {
			c.o.Log.V(1).Info("listing the node's pods failed", "error", err.Error())
		} else {
			c.pods = podRefs(pods)
		}
	}
	return c.pods
}

func podRefs(pods []corev1.Pod) map[string]podRef {
	m := make(map[string]podRef, len(pods))
	for i := range pods {
		p := &pods[i]
		ref := podRef{namespace: p.Namespace, name: p.Name, containers: map[string]string{}}
		for _, sts := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
			for _, cs := range sts {
				// <runtime>://<id>
				if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok {
					ref.containers[id] = cs.Name
				}
			}
		}
		m[string(p.UID)] = ref
	}
	return m
}
