package agent

// The agent's metrics are served behind controller-runtime's authentication and authorization
// filter (internal/metricsauth): it asks the API server who a scraper is and whether it may get
// /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
