package main

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// cacheOptions are the manager's informers' options: what its caches keep of a fleet's objects
// (docs/scale.md).
//   - No managedFields on any object: no controller reads them, and on a Node they are a large
//     part of the object.
//   - No status.settings on a node state: every setting's desired and observed value, the largest
//     part of an agent's report (up to 1,024 entries), read by the agent, the CLI and kubectl,
//     never by the manager. The manager changes node states only by patches computed against
//     its cached copy (never an Update), so a field its cache lacks is never written back.
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&tsv1.LatencyNodeState{}: {Transform: stripNodeStateForManager},
		},
	}
}

// stripNodeStateForManager drops from a cached node state what the manager never reads.
func stripNodeStateForManager(obj any) (any, error) {
	if lns, ok := obj.(*tsv1.LatencyNodeState); ok {
		lns.ManagedFields = nil
		lns.Status.Settings = nil
	}
	return obj, nil
}
