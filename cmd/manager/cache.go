package main

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
)

// cacheOptions are the manager's informers' options: what its caches keep of a fleet's objects
// (docs/scale.md).
//   - No managedFields on any object: no controller reads them, and on a Node they are a large
//     part of the object.
//   - Node states through shared.NodeStateTransform: no status.settings or status.tuning (read by
//     the agent, the CLI and kubectl, never by the manager), and one copy of each distinct set of
//     status.facts.
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&tsv1.LatencyNodeState{}: {Transform: shared.NodeStateTransform()},
		},
	}
}
