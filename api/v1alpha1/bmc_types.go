package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretKeyReference names a Secret in a namespace.
type SecretKeyReference struct {
	// Namespace of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BMCTLS is how the operator trusts the BMC's certificate: exactly one choice.
// +kubebuilder:validation:XValidation:rule="(has(self.caBundle) ? 1 : 0) + (has(self.systemRoots) && self.systemRoots ? 1 : 0) + (has(self.insecureSkipVerify) && self.insecureSkipVerify ? 1 : 0) == 1",message="bmc tls: choose exactly one of caBundle, systemRoots: true and insecureSkipVerify: true"
type BMCTLS struct {
	// CABundle is the PEM bundle of the CA that signed the BMC's certificate.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle string `json:"caBundle,omitempty"`
	// SystemRoots trusts the operator's system CA pool.
	// +optional
	SystemRoots bool `json:"systemRoots,omitempty"`
	// InsecureSkipVerify accepts any certificate: the credentials can then be stolen by anyone on
	// the path to the BMC. Only for labs: refused unless the manager runs with --allow-insecure-bmc,
	// and condition InsecureTransport is True while it is in use.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// BMCSpec is where a node's BMC answers Redfish and how the operator logs in.
// +kubebuilder:validation:XValidation:rule="self.endpoint.startsWith('https://') ? has(self.tls) : (has(self.allowPlainHTTP) && self.allowPlainHTTP)",message="bmc: an https endpoint needs tls (caBundle, systemRoots or insecureSkipVerify); an http endpoint needs allowPlainHTTP: true (the password then travels in clear)"
type BMCSpec struct {
	// Endpoint is the BMC's base URL, https://host[:port], without credentials.
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^/@\s]+(/[^@\s]*)?$`
	Endpoint string `json:"endpoint"`
	// SystemID is the Redfish ComputerSystem Id of the node; empty when the BMC has only one.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SystemID string `json:"systemID,omitempty"`
	// CredentialsSecret holds the keys username and password. Only the operator reads it, and only
	// in its own namespace: a Secret elsewhere is refused (condition Accepted False).
	// +required
	CredentialsSecret SecretKeyReference `json:"credentialsSecret"`
	// TLS says which certificate the BMC must present.
	// +optional
	TLS *BMCTLS `json:"tls,omitempty"`
	// AllowPlainHTTP permits an http:// endpoint. Refused unless the manager runs with
	// --allow-insecure-bmc; condition InsecureTransport is True while it is in use.
	// +optional
	AllowPlainHTTP bool `json:"allowPlainHTTP,omitempty"`
}

// BMC is a node's baseboard management controller: the operator sets the node's BIOS attributes
// through it over Redfish. It is named after its node (or a Node's tickstack.io/bmc annotation
// names it). The node agent never reads it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=tickstack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Insecure",type=string,JSONPath=`.status.conditions[?(@.type=="InsecureTransport")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BMC struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how to reach the BMC.
	// +required
	Spec BMCSpec `json:"spec"`
	// Status is what the operator makes of the object.
	// +optional
	Status BMCStatus `json:"status,omitempty"`
}

// BMCStatus is the operator's verdict on a BMC object (conditions Accepted and InsecureTransport).
type BMCStatus struct {
	// Conditions: Accepted (the operator uses the object), InsecureTransport (a TLS opt-out is in
	// use: a warning).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// BMCList is a list of BMCs.
// +kubebuilder:object:root=true
type BMCList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BMC `json:"items"`
}
