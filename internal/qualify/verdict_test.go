package qualify

import (
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// good is an interface with everything: native XDP, zero-copy, hardware timestamps, its
// interrupts on its node, every conformance case passed, the bypass stack faster.
func good() *tsv1.QualifyReport {
	yes := true
	return &tsv1.QualifyReport{Interface: "ens1f0v1", Peer: "198.18.0.2", Driver: "iavf", NUMANode: 0, NodeCPUs: "0-7",
		XDP:          tsv1.QualifyXDP{Native: tsv1.QualifyTrial{Works: true, Detail: "XDP native, bound zerocopy"}, ZeroCopy: tsv1.QualifyTrial{Works: true, Detail: "XDP native, bound zerocopy"}},
		Timestamping: tsv1.QualifyTimestamping{HardwareRX: true, HardwareTX: true, PHCIndex: 1},
		IRQs:         []tsv1.QualifyIRQ{{IRQ: 80, Name: "iavf-ens1f0v1-TxRx-0", CPUs: "2", NodeLocal: &yes}},
		Conformance:  []tsv1.QualifyConformance{{Case: "cmsg", Passed: true}},
		PingPong: []tsv1.QualifyPingPong{{Stack: tsv1.StackKernel, MessageSize: 64, MedianNs: 9000, P99Ns: 12000},
			{Stack: tsv1.StackBypass, MessageSize: 64, MedianNs: 3000, P99Ns: 4000}},
	}
}

func TestJudge(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name   string
		change func(r *tsv1.QualifyReport)
		want   tsv1.QualifyVerdict
		checks []string // in order
	}{
		{"everything", func(*tsv1.QualifyReport) {}, tsv1.QualifySupported, nil},
		{"veth: copy mode, software timestamps", func(r *tsv1.QualifyReport) {
			r.XDP.ZeroCopy = tsv1.QualifyTrial{Detail: "TICKSTACK_XDP_MODE=native,zerocopy: the driver of v cannot bind an AF_XDP socket in zero-copy mode"}
			r.Timestamping = tsv1.QualifyTimestamping{PHCIndex: -1}
		}, tsv1.QualifyDegraded, []string{"zeroCopy", "hardwareTimestamps"}},
		{"generic XDP only", func(r *tsv1.QualifyReport) {
			r.XDP.Native = tsv1.QualifyTrial{Detail: "refused"}
			r.XDP.Generic = &tsv1.QualifyTrial{Works: true, Detail: "XDP skb, bound copy"}
			r.XDP.ZeroCopy = tsv1.QualifyTrial{Detail: "not tried"}
		}, tsv1.QualifyDegraded, []string{"nativeXDP", "zeroCopy"}},
		{"no XDP at all", func(r *tsv1.QualifyReport) {
			r.XDP.Native = tsv1.QualifyTrial{Detail: "refused"}
			r.XDP.Generic = &tsv1.QualifyTrial{Detail: "refused too"}
		}, tsv1.QualifyUnsupported, []string{"xdp"}},
		{"a conformance case differs, Unsupported first", func(r *tsv1.QualifyReport) {
			r.Timestamping.HardwareTX = false
			r.Conformance = append(r.Conformance, tsv1.QualifyConformance{Case: "iov", Detail: "differs from the kernel"})
		}, tsv1.QualifyUnsupported, []string{"conformance/iov", "hardwareTimestamps"}},
		{"conformance peer missing", func(r *tsv1.QualifyReport) {
			r.Conformance = []tsv1.QualifyConformance{{Case: conformNotRun, Detail: "the conformance cases did not run: no conform"}}
		}, tsv1.QualifyDegraded, []string{"conformance/notRun"}},
		{"no peer", func(r *tsv1.QualifyReport) { r.Peer, r.Conformance, r.PingPong = "", nil, nil }, tsv1.QualifyDegraded, []string{"peer"}},
		{"bypass ping-pong failed", func(r *tsv1.QualifyReport) {
			r.PingPong[1] = tsv1.QualifyPingPong{Stack: tsv1.StackBypass, Error: "no result"}
		},
			tsv1.QualifyUnsupported, []string{"pingPong/bypass"}},
		{"kernel ping-pong failed", func(r *tsv1.QualifyReport) { r.PingPong[0].Error = "sockperf exited" }, tsv1.QualifyDegraded, []string{"pingPong/kernel"}},
		{"bypass not faster", func(r *tsv1.QualifyReport) { r.PingPong[1].MedianNs = 9500 }, tsv1.QualifyDegraded, []string{"pingPong"}},
		{"interrupt off the node", func(r *tsv1.QualifyReport) {
			r.IRQs = append(r.IRQs, tsv1.QualifyIRQ{IRQ: 81, Name: "iavf-ens1f0v1-TxRx-1", CPUs: "12", NodeLocal: &no})
		}, tsv1.QualifyDegraded, []string{"irqLocality"}},
		{"could not run", func(r *tsv1.QualifyReport) { r.Error = "no IPv4 address" }, tsv1.QualifyUnsupported, []string{"qualify"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.change(r)
			Judge(r)
			var got []string
			for _, re := range r.Reasons {
				got = append(got, re.Check)
				if re.Message == "" {
					t.Errorf("reason %s without a message", re.Check)
				}
			}
			if r.Verdict != tc.want || strings.Join(got, ",") != strings.Join(tc.checks, ",") {
				t.Errorf("verdict %s reasons %v, want %s %v", r.Verdict, got, tc.want, tc.checks)
			}
		})
	}
}
