// Package metricsauth is how the manager and the agent serve their metrics: over HTTPS behind
// controller-runtime's authentication and authorization filter, so that only a client the API
// server authenticates (TokenReview) and allows get on the non-resource URL /metrics
// (SubjectAccessReview; the metrics-reader ClusterRole) reads them.
package metricsauth

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options serves the metrics at addr ("0": off); secure puts them behind the filter, on a
// certificate controller-runtime makes itself; otherwise plain HTTP to anyone who reaches the port.
func Options(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing, o.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	return o
}
