package agent

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// The shared CPU pool (spec.tuning.sharedCPUs, docs/agent.md "Shared CPUs"): the agent advertises
// it on its own Node as the extended resource tsv1.SharedCPUsResource, one unit per shared CPU,
// through the Node's status (capacity and allocatable, the way Kubernetes documents advertising a
// node-level extended resource; the kubelet keeps both). Its own-node admission policy lets it
// change nothing else there. The count is 0 until the kubelet runs with the pool in its
// reservedSystemCPUs (before, the kubelet could still hand those CPUs out exclusively); the
// resource goes when the tuning has no pool or the node state is deleted.

// sharedSettingName is the pool's entry in status.settings.
const sharedSettingName = "node/" + string(tsv1.SharedCPUsResource)

// sharedObs is the pool's resource: the count wanted and the one the Node showed.
type sharedObs struct {
	desired, observed string
	// waiting says why the count is held at 0; failed that it stays 0 until the kubelet is fixed.
	waiting string
	failed  bool
}

// sharedWanted is the count to advertise (absent: no resource) and, when it is held at 0, why.
func sharedWanted(t *tsv1.NodeTuning, o *observation) (count int64, present bool, held *sharedObs) {
	if t == nil || t.SharedCPUs == "" {
		return 0, false, nil
	}
	cpus, err := cpuset.Parse(string(t.SharedCPUs))
	if err != nil {
		return 0, false, nil
	}
	switch k := o.kubelet; {
	case k == nil || k.err != nil || k.want == nil || k.failed:
		return 0, true, &sharedObs{failed: true, waiting: "held at 0: the kubelet does not run with this tuning's drop-in (see Degraded), so it could hand the shared CPUs out as exclusive CPUs"}
	case o.kubeletPending():
		return 0, true, &sharedObs{waiting: "held at 0 until the kubelet runs with the shared CPUs in its reservedSystemCPUs (kubelet restart in the node's slot)"}
	}
	return int64(cpus.Len()), true, &sharedObs{}
}

// advertiseSharedCPUs makes the Node's capacity and allocatable of the shared CPU resource what
// the tuning wants, patching its status only when they differ.
func (r *Reconciler) advertiseSharedCPUs(ctx context.Context, s *scope) error {
	count, present, o := sharedWanted(s.tuning, &s.obs)
	node, err := r.setSharedCPUs(ctx, s.node, count, present)
	if err != nil {
		return err
	}
	s.node = node
	if present {
		o.desired = strconv.FormatInt(count, 10)
		if q, ok := node.Status.Allocatable[tsv1.SharedCPUsResource]; ok {
			o.observed = q.String()
		}
		s.obs.shared = o
	}
	return nil
}

// setSharedCPUs sets (present) or removes the resource in the Node's status; node may be nil
// (read here). It returns the Node as patched.
func (r *Reconciler) setSharedCPUs(ctx context.Context, node *corev1.Node, count int64, present bool) (*corev1.Node, error) {
	if node == nil {
		var err error
		if node, err = r.getNode(ctx); err != nil {
			return nil, err
		}
	}
	want := *resource.NewQuantity(count, resource.DecimalSI)
	same := func(l corev1.ResourceList) bool {
		q, ok := l[tsv1.SharedCPUsResource]
		return ok == present && (!ok || q.Cmp(want) == 0)
	}
	if same(node.Status.Capacity) && same(node.Status.Allocatable) {
		return node, nil
	}
	orig := node.DeepCopy()
	for _, l := range []*corev1.ResourceList{&node.Status.Capacity, &node.Status.Allocatable} {
		if !present {
			delete(*l, tsv1.SharedCPUsResource)
			continue
		}
		if *l == nil {
			*l = corev1.ResourceList{}
		}
		(*l)[tsv1.SharedCPUsResource] = want
	}
	if err := r.Client.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return nil, fmt.Errorf("advertising %s on node %s: %w", tsv1.SharedCPUsResource, node.Name, err)
	}
	return node, nil
}

// sharedSettings is the pool's entry of status.settings.
func sharedSettings(o *sharedObs) []tsv1.SettingStatus {
	if o == nil {
		return nil
	}
	s := tsv1.SettingStatus{Name: sharedSettingName, Desired: o.desired, Observed: o.observed, State: tsv1.SettingInSync}
	switch {
	case o.failed:
		s.State, s.Message = tsv1.SettingFailed, o.waiting
	case o.waiting != "":
		s.State, s.Message = tsv1.SettingPendingRestart, o.waiting
	case o.observed != o.desired:
		s.State, s.Message = tsv1.SettingDrifted, "the Node's status does not show the count the agent advertised"
	}
	return []tsv1.SettingStatus{s}
}
