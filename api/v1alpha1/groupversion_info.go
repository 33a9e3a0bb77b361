// Package v1alpha1 holds the tickstack.io/v1alpha1 API: LatencyProfile, the cluster-wide intent a user
// applies, and LatencyNodeState, the fully resolved settings for one node that the operator writes and
// the node agent applies and reports on.
//
// +kubebuilder:object:generate=true
// +groupName=tickstack.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "tickstack.io", Version: "v1alpha1"}

// knownTypes lists the API's kinds with their lists; a new kind adds itself here.
func knownTypes() []runtime.Object {
	return []runtime.Object{
		&LatencyProfile{}, &LatencyProfileList{},
		&LatencyNodeState{}, &LatencyNodeStateList{},
		&BMC{}, &BMCList{},
		&LatencyBenchmark{}, &LatencyBenchmarkList{},
	}
}

// AddToScheme adds the types of this API to a scheme. The API package depends only on apimachinery,
// so that clients can import it cheaply.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes()...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
