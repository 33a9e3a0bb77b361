package webhook

// RBAC of the pod webhook and of the operator-managed webhook certificate (internal/certs), kept
// here so controller-gen's paths (./internal/webhook/...) pick them up.
//
// The pod webhook reads profiles. The certificate manager keeps one Secret in the operator's
// namespace (a namespaced Role, not cluster-wide Secret access) and patches the caBundle of the two
// webhook configurations.

// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;create;update
// Only its own two webhook configurations (config/default's names; hack/sync-chart.py renames them
// for the chart, as the manager's --mutating/--validating-webhook-configuration flags name them).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;patch,resourceNames=tickstack-mutating-webhook-configuration
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;patch,resourceNames=tickstack-validating-webhook-configuration
