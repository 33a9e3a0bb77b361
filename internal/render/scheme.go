package render

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"
)

// AddToScheme registers the NetworkAttachmentDefinition and node-feature-discovery types the
// rendered objects use. NFD's own AddToScheme (v0.17.3) leaves out its list types, which a
// controller's cache needs to list and watch, so they are registered here too.
func AddToScheme(s *runtime.Scheme) error {
	if err := nadv1.AddToScheme(s); err != nil {
		return err
	}
	s.AddKnownTypes(nfdv1alpha1.SchemeGroupVersion,
		&nfdv1alpha1.NodeFeature{}, &nfdv1alpha1.NodeFeatureList{},
		&nfdv1alpha1.NodeFeatureRule{}, &nfdv1alpha1.NodeFeatureRuleList{},
		&nfdv1alpha1.NodeFeatureGroup{}, &nfdv1alpha1.NodeFeatureGroupList{},
	)
	metav1.AddToGroupVersion(s, nfdv1alpha1.SchemeGroupVersion)
	return nil
}
