package controllers

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
)

// CacheOptions are the manager's informers' options: what its caches keep of a fleet's objects
// (docs/scale.md). cmd/manager runs with them, and so does the envtest suite of the controllers,
// so every controller's test reads through the same lean caches.
//   - No managedFields on any object: no controller reads them, and on a Node they are a large
//     part of the object.
//   - Nodes through shared.NodeTransform: metadata (tickstack.io/ annotations only), taints,
//     unschedulable, the boot ID and the TimeSynced condition; no images, capacity, addresses or
//     kubelet conditions.
//   - Jobs (the benchmark's, up to one per node measured) through shared.JobTransform: metadata
//     and status, no pod template.
//   - Node states through shared.NodeStateTransform: no status.settings or status.tuning (read by
//     the agent, the CLI and kubectl, never by the manager), and one copy of each distinct set of
//     status.facts.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}:           {Transform: shared.NodeTransform()},
			&batchv1.Job{}:           {Transform: shared.JobTransform()},
			&tsv1.LatencyNodeState{}: {Transform: shared.NodeStateTransform()},
		},
	}
}
