package render

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Node labels the NodeFeatureRule below makes node-feature-discovery set. Rule labels without a
// namespace get NFD's default one, feature.node.kubernetes.io/, which NFD allows without extra
// configuration; profiles select on the full names.
const (
	// LabelSRIOVCapable: the node has a NIC that can create VFs.
	LabelSRIOVCapable = "feature.node.kubernetes.io/tickstack-sriov.capable"
	// LabelNICVendorPrefix + vendor id: the node has a network PCI device of that vendor.
	LabelNICVendorPrefix = "feature.node.kubernetes.io/tickstack-nic-vendor."
	// LabelXDPNative: a driver with native XDP (and AF_XDP zero-copy on most) is loaded.
	LabelXDPNative = "feature.node.kubernetes.io/tickstack-xdp.native"
	// LabelNoHzFull: the kernel can stop the tick on isolated CPUs (CONFIG_NO_HZ_FULL).
	LabelNoHzFull = "feature.node.kubernetes.io/tickstack-kernel.nohz_full"
	// LabelTuningApplied: the node agent reports the profile's tuning in effect (its NodeFeature).
	LabelTuningApplied = "feature.node.kubernetes.io/tickstack-tuning.applied"
)

// TuningFeature is the feature the node agent publishes in its NodeFeature object (api keys.go).
const TuningFeature = tsv1.TuningFeature

// XDPNativeDrivers returns the kernel drivers with native XDP in upstream Linux, which the
// xdp.native rule looks for.
func XDPNativeDrivers() []string {
	return []string{"bnxt_en", "i40e", "ice", "igb", "igc", "ixgbe", "mlx4_en", "mlx5_core", "nfp", "qede", "sfc", "virtio_net", "veth"}
}

func short(label string) string { return strings.TrimPrefix(label, "feature.node.kubernetes.io/") }

func exprs(m map[string]*nfdv1alpha1.MatchExpression) *nfdv1alpha1.MatchExpressionSet {
	s := nfdv1alpha1.MatchExpressionSet(m)
	return &s
}

// NodeFeatureRule renders the one rule object that labels nodes with what profiles select on:
// SR-IOV capable NICs, each NIC vendor some profile names, native-XDP drivers, a NO_HZ_FULL kernel
// and the agent's "tuning applied" fact.
func NodeFeatureRule(profiles []tsv1.LatencyProfile, name string) *nfdv1alpha1.NodeFeatureRule {
	rules := []nfdv1alpha1.Rule{
		{
			Name:   "tickstack sriov capable NIC",
			Labels: map[string]string{short(LabelSRIOVCapable): "true"},
			MatchFeatures: nfdv1alpha1.FeatureMatcher{{
				Feature: "network.device",
				MatchExpressions: exprs(map[string]*nfdv1alpha1.MatchExpression{
					"sriov_totalvfs": {Op: nfdv1alpha1.MatchGt, Value: nfdv1alpha1.MatchValue{"0"}},
				}),
			}},
		},
		{
			Name:   "tickstack native XDP driver",
			Labels: map[string]string{short(LabelXDPNative): "true"},
			MatchFeatures: nfdv1alpha1.FeatureMatcher{{
				Feature:   "kernel.loadedmodule",
				MatchName: &nfdv1alpha1.MatchExpression{Op: nfdv1alpha1.MatchIn, Value: nfdv1alpha1.MatchValue(XDPNativeDrivers())},
			}},
		},
		{
			Name:   "tickstack nohz_full kernel",
			Labels: map[string]string{short(LabelNoHzFull): "true"},
			MatchFeatures: nfdv1alpha1.FeatureMatcher{{
				Feature: "kernel.config",
				MatchExpressions: exprs(map[string]*nfdv1alpha1.MatchExpression{
					"NO_HZ_FULL": {Op: nfdv1alpha1.MatchIn, Value: nfdv1alpha1.MatchValue{"y"}},
				}),
			}},
		},
		{
			Name:   "tickstack tuning applied",
			Labels: map[string]string{short(LabelTuningApplied): "true"},
			MatchFeatures: nfdv1alpha1.FeatureMatcher{{
				Feature: TuningFeature,
				MatchExpressions: exprs(map[string]*nfdv1alpha1.MatchExpression{
					"applied": {Op: nfdv1alpha1.MatchIsTrue},
				}),
			}},
		},
	}
	vendors := map[string]bool{}
	for i := range profiles {
		for _, nic := range profiles[i].Spec.NICs {
			if v := strings.ToLower(nic.Selector.Vendor); v != "" {
				vendors[v] = true
			}
		}
	}
	sorted := make([]string, 0, len(vendors))
	for v := range vendors {
		sorted = append(sorted, v)
	}
	sort.Strings(sorted)
	for _, v := range sorted {
		rules = append(rules, nfdv1alpha1.Rule{
			Name:   "tickstack NIC vendor " + v,
			Labels: map[string]string{short(LabelNICVendorPrefix + v): "true"},
			MatchFeatures: nfdv1alpha1.FeatureMatcher{{
				Feature: "pci.device",
				MatchExpressions: exprs(map[string]*nfdv1alpha1.MatchExpression{
					"class":  {Op: nfdv1alpha1.MatchIn, Value: nfdv1alpha1.MatchValue{"0200"}},
					"vendor": {Op: nfdv1alpha1.MatchIn, Value: nfdv1alpha1.MatchValue{v}},
				}),
			}},
		})
	}
	return &nfdv1alpha1.NodeFeatureRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: nfdv1alpha1.SchemeGroupVersion.String(), Kind: "NodeFeatureRule"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ManagedByLabel: ManagedBy}},
		Spec:       nfdv1alpha1.NodeFeatureRuleSpec{Rules: rules},
	}
}
