package agent

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// reportDevices, the last phase, reports the SR-IOV network device plugin's resources on this node
// (status.devices, status.vfs) from the Node the kubelet keeps: every resource under the resource
// prefix, and every pool this node's NIC groups hand VFs out from, at 0 when the plugin registered
// none there (a node without SR-IOV VFs: the plugin then creates no resource at all).
func (r *Reconciler) reportDevices(ctx context.Context, s *scope) error {
	node := s.node
	if node == nil {
		var err error
		if node, err = r.getNode(ctx); err != nil {
			return err
		}
	}
	s.lns.Status.Devices, s.lns.Status.VFs = nodeDevices(node, r.ResourcePrefix, s.tuning)
	return nil
}

// nodeDevices lists the node's resources under prefix and the pools tuning's NIC groups name,
// sorted by name, with the allocatable count summed.
func nodeDevices(node *corev1.Node, prefix string, tuning *tsv1.NodeTuning) ([]tsv1.DeviceResource, *int32) {
	names := map[corev1.ResourceName]bool{}
	for name := range node.Status.Capacity {
		// The shared CPU pool is the agent's own resource, and the node daemon's socket units are
		// tickstack-xdpd's device plugin's (one per bypass container): neither is a VF.
		if strings.HasPrefix(string(name), prefix+"/") && name != tsv1.SharedCPUsResource && name != tsv1.XDPDResource {
			names[name] = true
		}
	}
	if tuning != nil {
		for _, nic := range tuning.NICs {
			if nic.ResourceName != "" && nic.NumVFs != nil && *nic.NumVFs > 0 {
				names[corev1.ResourceName(prefix+"/"+nic.ResourceName)] = true
			}
		}
	}
	out := make([]tsv1.DeviceResource, 0, len(names))
	var vfs int32
	for name := range names {
		d := tsv1.DeviceResource{Name: string(name)}
		if q, ok := node.Status.Capacity[name]; ok {
			d.Capacity = int32(q.Value())
		}
		if q, ok := node.Status.Allocatable[name]; ok {
			d.Allocatable = int32(q.Value())
		}
		vfs += d.Allocatable
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		out = nil
	}
	return out, &vfs
}
