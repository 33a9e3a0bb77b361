package qualify

import (
	"fmt"
	"slices"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Judge sets r's verdict and reasons from its findings (pure: the report alone decides).
//
// Unsupported: the qualification could not run; no XDP mode attaches; a conformance case differs
// from the kernel; the bypass ping-pong could not run. Degraded: generic XDP only; no zero-copy;
// no hardware timestamps; an interrupt of the device served outside its NUMA node; the bypass
// stack not faster than the kernel; conformance or ping-pong not run (no peer, or the peer could
// not). Supported: none of these.
func Judge(r *tsv1.QualifyReport) {
	var reasons []tsv1.QualifyReason
	add := func(v tsv1.QualifyVerdict, check, format string, a ...any) {
		reasons = append(reasons, tsv1.QualifyReason{Check: check, Verdict: v, Message: fmt.Sprintf(format, a...)})
	}
	if r.Error != "" {
		add(tsv1.QualifyUnsupported, "qualify", "the qualification could not run: %s", r.Error)
	} else {
		judgeXDP(r, add)
		judgeNIC(r, add)
		judgeTraffic(r, add)
	}
	// Unsupported first, then in the order found.
	slices.SortStableFunc(reasons, func(a, b tsv1.QualifyReason) int { return rank(a.Verdict) - rank(b.Verdict) })
	r.Reasons = reasons
	r.Verdict = tsv1.QualifySupported
	if len(reasons) > 0 {
		r.Verdict = reasons[0].Verdict
	}
}

func rank(v tsv1.QualifyVerdict) int {
	if v == tsv1.QualifyUnsupported {
		return 0
	}
	return 1
}

type addFunc func(v tsv1.QualifyVerdict, check, format string, a ...any)

func judgeXDP(r *tsv1.QualifyReport, add addFunc) {
	x := r.XDP
	switch {
	case x.Native.Works:
	case x.Generic != nil && x.Generic.Works:
		add(tsv1.QualifyDegraded, "nativeXDP", "native XDP does not attach (%s): the stack runs on generic XDP, after the kernel built an skb, which costs latency and rules out zero-copy", x.Native.Detail)
	default:
		generic := "not tried"
		if x.Generic != nil {
			generic = x.Generic.Detail
		}
		add(tsv1.QualifyUnsupported, "xdp", "no XDP mode works on %s (native: %s; generic: %s): the bypass stack cannot run there, every socket stays on the kernel", r.Interface, x.Native.Detail, generic)
		return
	}
	if !x.ZeroCopy.Works {
		add(tsv1.QualifyDegraded, "zeroCopy", "AF_XDP zero-copy is not available (%s): the stack binds in copy mode, one copy per frame each way", x.ZeroCopy.Detail)
	}
}

func judgeNIC(r *tsv1.QualifyReport, add addFunc) {
	t := r.Timestamping
	switch {
	case t.Error != "":
		add(tsv1.QualifyDegraded, "hardwareTimestamps", "the timestamping capability could not be read: %s", t.Error)
	case !t.HardwareRX || !t.HardwareTX:
		add(tsv1.QualifyDegraded, "hardwareTimestamps", "no hardware timestamps (rx %t, tx %t, PTP clock %d): PTP and SO_TIMESTAMPING fall back to software timestamps", t.HardwareRX, t.HardwareTX, t.PHCIndex)
	}
	var remote []string
	for _, q := range r.IRQs {
		if q.NodeLocal != nil && !*q.NodeLocal {
			remote = append(remote, fmt.Sprintf("%d (%s) on CPUs %s", q.IRQ, q.Name, q.CPUs))
		}
	}
	if len(remote) > 0 {
		add(tsv1.QualifyDegraded, "irqLocality", "interrupts served outside the device's NUMA node %d (CPUs %s): %v; pin them to the node's CPUs (the profile's irq settings)", r.NUMANode, r.NodeCPUs, remote)
	}
}

func judgeTraffic(r *tsv1.QualifyReport, add addFunc) {
	if r.Peer == "" {
		add(tsv1.QualifyDegraded, "peer", "no peer given: the conformance cases and the kernel vs bypass ping-pong did not run (pass --peer-interface, a second VF of the port, or --peer, a tickstack-bench --role=server on another node)")
		return
	}
	for _, c := range r.Conformance {
		if !c.Passed {
			v := tsv1.QualifyUnsupported
			if c.Case == conformNotRun {
				v = tsv1.QualifyDegraded
			}
			add(v, "conformance/"+c.Case, "%s", c.Detail)
		}
	}
	var kernel, bypass *tsv1.QualifyPingPong
	for i := range r.PingPong {
		switch r.PingPong[i].Stack {
		case tsv1.StackKernel:
			kernel = &r.PingPong[i]
		case tsv1.StackBypass:
			bypass = &r.PingPong[i]
		}
	}
	switch {
	case bypass == nil || bypass.Error != "":
		why := "not run"
		if bypass != nil {
			why = bypass.Error
		}
		add(tsv1.QualifyUnsupported, "pingPong/bypass", "the bypass stack's ping-pong did not run: %s", why)
	case kernel == nil || kernel.Error != "":
		why := "not run"
		if kernel != nil {
			why = kernel.Error
		}
		add(tsv1.QualifyDegraded, "pingPong/kernel", "the kernel's ping-pong did not run, nothing to compare the bypass stack with: %s", why)
	case bypass.MedianNs >= kernel.MedianNs:
		add(tsv1.QualifyDegraded, "pingPong", "the bypass stack is not faster than the kernel here: median %d ns against the kernel's %d ns at %d B", bypass.MedianNs, kernel.MedianNs, bypass.MessageSize)
	}
}
