package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// validPTPProfile is validProfile with a ptp section the API server accepts.
func validPTPProfile(name string) *tsv1.LatencyProfile {
	p := validProfile(name)
	p.Spec.PTP = &tsv1.PTPSpec{
		NICGroup: "md", Domain: 24, Transport: tsv1.PTPTransportL2, Timestamping: tsv1.PTPTimestampingHardware,
		Ptp4lOptions: map[string]string{"priority1": "128"}, Phc2sysOptions: map[string]string{"-R": "16"},
		MaxOffsetNs: 500, HoldTime: &metav1.Duration{Duration: 30e9},
	}
	return p
}

var _ = Describe("LatencyProfile ptp validation by the API server", func() {
	It("accepts a valid ptp section and fills in the defaults", func() {
		p := validProfile("ptp-defaults")
		p.Spec.PTP = &tsv1.PTPSpec{Interface: "ens1f0"}
		Expect(k8s.Create(ctx, p, client.DryRunAll)).To(Succeed())
		Expect(p.Spec.PTP.Role).To(Equal(tsv1.PTPRoleSlave))
		Expect(p.Spec.PTP.Transport).To(Equal(tsv1.PTPTransportUDPv4))
		Expect(p.Spec.PTP.Timestamping).To(Equal(tsv1.PTPTimestampingHardware))
		Expect(p.Spec.PTP.MaxOffsetNs).To(Equal(int64(1000)))
		Expect(p.Spec.PTP.MaxSystemOffsetNs).To(Equal(int64(1000)))
		Expect(p.Spec.PTP.SchedulingPolicy).To(Equal(tsv1.PTPSchedulingFIFO))
		Expect(p.Spec.PTP.HoldTime).To(Equal(&metav1.Duration{Duration: 10e9}))

		Expect(k8s.Create(ctx, validPTPProfile("ptp-complete"), client.DryRunAll)).To(Succeed())

		bc := validProfile("ptp-boundary")
		bc.Spec.PTP = &tsv1.PTPSpec{Role: tsv1.PTPRoleBoundary, Interfaces: []string{"ens1f0", "ens2f0"}, OwnsSystemClock: true}
		Expect(k8s.Create(ctx, bc, client.DryRunAll)).To(Succeed())
	})

	DescribeTable("refuses a bad ptp section with a message naming the field",
		func(mutate func(*tsv1.PTPSpec), field, message string) {
			p := validPTPProfile("ptp-invalid")
			mutate(p.Spec.PTP)
			expectInvalid(p, field, message)
		},
		Entry("both interface and nicGroup", func(s *tsv1.PTPSpec) { s.Interface = "ens1f0" },
			"spec.ptp", "set exactly one of ptp.interface"),
		Entry("neither interface nor nicGroup", func(s *tsv1.PTPSpec) { s.NICGroup = "" },
			"spec.ptp", "set exactly one of ptp.interface"),
		Entry("interfaces beside nicGroup", func(s *tsv1.PTPSpec) {
			s.Role, s.Interfaces = tsv1.PTPRoleBoundary, []string{"ens1f0", "ens1f1"}
		}, "spec.ptp", "set exactly one of ptp.interface"),
		Entry("a grandmaster owning the system clock", func(s *tsv1.PTPSpec) { s.Role, s.OwnsSystemClock = tsv1.PTPRoleGrandmaster, true },
			"spec.ptp", "ptp.ownsSystemClock: a grandmaster's system clock is its source"),
		Entry("a boundary clock without its ports", func(s *tsv1.PTPSpec) { s.Role = tsv1.PTPRoleBoundary },
			"spec.ptp", "a boundary clock (ptp.role boundary) runs over ptp.interfaces"),
		Entry("ports for a slave", func(s *tsv1.PTPSpec) { s.NICGroup, s.Interfaces = "", []string{"ens1f0", "ens1f1"} },
			"spec.ptp", "a boundary clock (ptp.role boundary) runs over ptp.interfaces"),
		Entry("a boundary clock with one port", func(s *tsv1.PTPSpec) {
			s.Role, s.NICGroup, s.Interfaces = tsv1.PTPRoleBoundary, "", []string{"ens1f0"}
		}, "spec.ptp.interfaces", "should have at least 2 items"),
		Entry("a port twice", func(s *tsv1.PTPSpec) {
			s.Role, s.NICGroup, s.Interfaces = tsv1.PTPRoleBoundary, "", []string{"ens1f0", "ens1f0"}
		}, "spec.ptp.interfaces[1]", "Duplicate value"),
		Entry("nicGroup that is no nics[] group", func(s *tsv1.PTPSpec) { s.NICGroup = "feed" },
			"spec", "ptp.nicGroup must name one of the profile's spec.nics[] groups"),
		Entry("interface name longer than Linux allows", func(s *tsv1.PTPSpec) { s.NICGroup, s.Interface = "", "a-very-long-interface" },
			"spec.ptp.interface", "may not be more than 15"),
		Entry("interface name with a slash", func(s *tsv1.PTPSpec) { s.NICGroup, s.Interface = "", "eth/0" },
			"spec.ptp.interface", "should match"),
		Entry("domain above 127", func(s *tsv1.PTPSpec) { s.Domain = 128 },
			"spec.ptp.domain", "ptp.domain must be in 0..127"),
		Entry("negative domain", func(s *tsv1.PTPSpec) { s.Domain = -1 },
			"spec.ptp.domain", "ptp.domain must be in 0..127"),
		Entry("unknown role", func(s *tsv1.PTPSpec) { s.Role = "transparent" },
			"spec.ptp.role", "Unsupported value: \"transparent\""),
		Entry("unknown transport", func(s *tsv1.PTPSpec) { s.Transport = "UDPv6" },
			"spec.ptp.transport", "Unsupported value: \"UDPv6\""),
		Entry("unknown timestamping", func(s *tsv1.PTPSpec) { s.Timestamping = "onestep" },
			"spec.ptp.timestamping", "Unsupported value: \"onestep\""),
		Entry("phc2sys options with software timestamping", func(s *tsv1.PTPSpec) { s.Timestamping = tsv1.PTPTimestampingSoftware },
			"spec.ptp", "ptp.phc2sysOptions: phc2sys does not run with software timestamping"),
		Entry("ptp4l option value too long", func(s *tsv1.PTPSpec) { s.Ptp4lOptions["priority1"] = string(make([]byte, 300)) },
			"spec.ptp.ptp4lOptions", "names must be 1 to 64 characters and values at most 256"),
		Entry("negative offset threshold", func(s *tsv1.PTPSpec) { s.MaxOffsetNs = -5 },
			"spec.ptp.maxOffsetNs", "should be greater than or equal to 1"),
		Entry("negative system clock threshold", func(s *tsv1.PTPSpec) { s.MaxSystemOffsetNs = -5 },
			"spec.ptp.maxSystemOffsetNs", "should be greater than or equal to 1"),
		Entry("SCHED_FIFO priority above the PTP operator's range", func(s *tsv1.PTPSpec) { s.SchedulingPriority = ptr.To[int32](66) },
			"spec.ptp.schedulingPriority", "should be less than or equal to 65"),
		Entry("a priority with SCHED_OTHER", func(s *tsv1.PTPSpec) {
			s.SchedulingPolicy, s.SchedulingPriority = tsv1.PTPSchedulingOther, ptr.To[int32](5)
		}, "spec.ptp", "SCHED_OTHER has no priority"),
		Entry("an unknown scheduling policy", func(s *tsv1.PTPSpec) { s.SchedulingPolicy = "SCHED_RR" },
			"spec.ptp.schedulingPolicy", "Unsupported value"),
		Entry("hold time that is not a duration", func(s *tsv1.PTPSpec) { s.HoldTime = &metav1.Duration{Duration: -1e9} },
			"spec.ptp.holdTime", "should match"),
	)
})
