// Package v1alpha1 holds the tickstack.io/v1alpha1 API: LatencyProfile, the cluster-wide intent a user
// applies, and LatencyNodeState, the fully resolved settings for one node that the operator writes and
// the node agent applies and reports on.
//
// +kubebuilder:object:generate=true
// +groupName=tickstack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "tickstack.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
