package controllers

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/render"
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
//   - ConfigMaps: only the operator's own, those labelled app.kubernetes.io/managed-by=tickstack
//     (OwnConfigMaps): the device plugin's configuration and the benchmarks' results ConfigMaps.
//     No other ConfigMap of the cluster (every namespace's kube-root-ca.crt, every application's
//     configuration) is listed, watched or kept. The manager reads no ConfigMap it did not create;
//     one of its own without the label (made by a release before the label) is read through the
//     API reader and labelled (docs/scale.md, fix 22).
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}:           {Transform: shared.NodeTransform()},
			&batchv1.Job{}:           {Transform: shared.JobTransform()},
			&tsv1.LatencyNodeState{}: {Transform: shared.NodeStateTransform()},
			&corev1.ConfigMap{}:      {Label: OwnConfigMaps()},
		},
	}
}

// OwnConfigMaps selects the ConfigMaps the operator creates, the only ones its cache holds: every
// one carries render.ManagedByLabel (app.kubernetes.io/managed-by=tickstack).
func OwnConfigMaps() labels.Selector {
	return labels.SelectorFromSet(labels.Set{render.ManagedByLabel: render.ManagedBy})
}
