package qualify

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// WriteText prints the report for a person, or to attach to a support request: every finding,
// then the verdict and its reasons.
func WriteText(w io.Writer, r *tsv1.QualifyReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	fmt.Fprintf(tw, "tickstack qualify: %s\n\n", r.Interface)
	p("interface", "%s (address %s)", r.Interface, orNone(r.Address))
	p("peer", "%s", orNone(r.Peer))
	p("kernel", "%s", orNone(r.Kernel))
	p("driver", "%s %s", r.Driver, r.DriverVersion)
	p("firmware", "%s", orNone(r.Firmware))
	p("bus", "%s", orNone(r.BusInfo))
	if r.NUMANode >= 0 {
		p("NUMA node", "%d (CPUs %s)", r.NUMANode, r.NodeCPUs)
	} else {
		p("NUMA node", "not reported")
	}
	q := r.Queues
	if q.ChannelsError != "" {
		p("channels", "unknown: %s", q.ChannelsError)
	} else {
		p("channels", "rx %d, tx %d, combined %d (max combined %d)", q.RX, q.TX, q.Combined, q.MaxCombined)
	}
	p("receive queues", "%d (an XSK on each)", q.ReceiveQueues)
	s := r.Steering
	rules := "not reported"
	if s.NTupleRules != nil {
		rules = fmt.Sprint(*s.NTupleRules)
	}
	p("ntuple filters", "%s, rules installed: %s", s.NTuple, rules)
	p("RSS", "receive hashing %s, %d rings, indirection table %d", s.RXHash, s.RSSRings, s.IndirectionTableSize)
	t := r.Timestamping
	if t.Error != "" {
		p("timestamping", "unknown: %s", t.Error)
	} else {
		p("timestamping", "hardware rx %s, tx %s, PTP clock %s; %s", yes(t.HardwareRX), yes(t.HardwareTX), phc(t.PHCIndex), strings.Join(t.Capabilities, ", "))
	}
	if len(r.IRQs) == 0 {
		p("interrupts", "none (a virtual interface, or no MSI)")
	}
	for _, i := range r.IRQs {
		local := ""
		if i.NodeLocal != nil {
			local = map[bool]string{true: ", on the device's node", false: ", OFF the device's node"}[*i.NodeLocal]
		}
		p(fmt.Sprintf("irq %d", i.IRQ), "%s: CPUs %s%s", i.Name, i.CPUs, local)
	}
	p("XDP native", "%s: %s", yes(r.XDP.Native.Works), r.XDP.Native.Detail)
	if g := r.XDP.Generic; g != nil {
		p("XDP generic", "%s: %s", yes(g.Works), g.Detail)
	}
	p("AF_XDP zero-copy", "%s: %s", yes(r.XDP.ZeroCopy.Works), r.XDP.ZeroCopy.Detail)
	for _, c := range r.Conformance {
		res := "passed"
		if !c.Passed {
			res = "FAILED: " + c.Detail
		}
		p("conformance "+c.Case, "%s", res)
	}
	for _, pp := range r.PingPong {
		if pp.Error != "" {
			p("ping-pong "+string(pp.Stack), "not measured: %s", pp.Error)
			continue
		}
		p("ping-pong "+string(pp.Stack), "UDP %d B: median %s, p99 %s", pp.MessageSize, us(pp.MedianNs), us(pp.P99Ns))
	}
	if r.Error != "" {
		p("error", "%s", r.Error)
	}
	fmt.Fprintf(tw, "\nverdict: %s\n", r.Verdict)
	for _, re := range r.Reasons {
		fmt.Fprintf(tw, "  - %s (%s): %s\n", re.Check, re.Verdict, re.Message)
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func phc(i int32) string {
	if i < 0 {
		return "none"
	}
	return fmt.Sprintf("/dev/ptp%d", i)
}

func us(ns int64) string { return fmt.Sprintf("%.2f us", float64(ns)/1000) }
