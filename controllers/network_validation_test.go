package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The nics[].network rules (CEL in the CRD) checked by the real API server.
var _ = Describe("LatencyProfile nics[].network validation by the API server", func() {
	withNetwork := func(mutate func(*tsv1.NICSpec)) *tsv1.LatencyProfile {
		p := validProfile("network-validation")
		p.Spec.NICs[0].Network = &tsv1.NICNetwork{Type: tsv1.NetworkSRIOV, Namespace: "trading",
			IPAM: &tsv1.IPAM{Type: "host-local", Subnet: "198.18.0.0/24", RangeStart: "198.18.0.10", RangeEnd: "198.18.0.99"}}
		mutate(&p.Spec.NICs[0])
		return p
	}

	DescribeTable("accepts",
		func(mutate func(*tsv1.NICSpec)) {
			Expect(k8s.Create(ctx, withNetwork(mutate), client.DryRunAll)).To(Succeed())
		},
		Entry("sriov with a resource name", func(*tsv1.NICSpec) {}),
		Entry("the default type (sriov)", func(n *tsv1.NICSpec) { n.Network.Type = "" }),
		Entry("macvlan on one interface", func(n *tsv1.NICSpec) {
			n.Network.Type = tsv1.NetworkMacvlan
			n.Selector = tsv1.NICSelector{InterfaceNames: []string{"eth1"}}
			n.NumVFs, n.ResourceName = nil, ""
		}),
		Entry("dhcp without a subnet", func(n *tsv1.NICSpec) { n.Network.IPAM = &tsv1.IPAM{Type: "dhcp"} }),
		Entry("no ipam", func(n *tsv1.NICSpec) { n.Network.IPAM = nil }),
	)

	DescribeTable("refuses with a message naming the field and the fix",
		func(mutate func(*tsv1.NICSpec), message string) {
			expectInvalid(withNetwork(mutate), message)
		},
		Entry("sriov without a resource name", func(n *tsv1.NICSpec) { n.NumVFs, n.ResourceName = nil, "" },
			"nics[].network.type sriov hands each pod a VF: set nics[].resourceName"),
		Entry("ipvlan on a selector by vendor", func(n *tsv1.NICSpec) { n.Network.Type = tsv1.NetworkIPvlan },
			"list exactly one in nics[].selector.interfaceNames"),
		Entry("hostDevice on two interfaces", func(n *tsv1.NICSpec) {
			n.Network.Type = tsv1.NetworkHostDevice
			n.Selector = tsv1.NICSelector{InterfaceNames: []string{"eth1", "eth2"}}
		}, "list exactly one in nics[].selector.interfaceNames"),
		Entry("an unknown type", func(n *tsv1.NICSpec) { n.Network.Type = "bridge" }, "spec.nics[0].network.type"),
		Entry("host-local without a subnet", func(n *tsv1.NICSpec) { n.Network.IPAM.Subnet = "" },
			"nics[].network.ipam.subnet is required for host-local and whereabouts"),
		Entry("a subnet that is no CIDR", func(n *tsv1.NICSpec) { n.Network.IPAM.Subnet = "198.18.0.0" },
			"nics[].network.ipam.subnet must be a CIDR"),
		Entry("a gateway that is no IP", func(n *tsv1.NICSpec) { n.Network.IPAM.Gateway = "gw" },
			"nics[].network.ipam.gateway must be an IP address"),
		Entry("an unknown ipam type", func(n *tsv1.NICSpec) { n.Network.IPAM.Type = "static" }, "spec.nics[0].network.ipam.type"),
		Entry("a namespace that is no DNS label", func(n *tsv1.NICSpec) { n.Network.Namespace = "Trading" }, "spec.nics[0].network.namespace"),
	)
})
