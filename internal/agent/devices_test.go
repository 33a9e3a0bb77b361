package agent

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestNodeDevices: a pool the node's NIC groups hand out is reported at 0 when the kubelet has no
// such resource (the plugin found no VF); the kubelet's resources under the prefix are reported
// as it counts them; a NIC group without VFs or resource name is no pool.
func TestNodeDevices(t *testing.T) {
	node := &corev1.Node{Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{"ts.test/b": resource.MustParse("8"), "ts.testx/c": resource.MustParse("2")},
		Allocatable: corev1.ResourceList{"ts.test/b": resource.MustParse("8"), "ts.testx/c": resource.MustParse("2")},
	}}
	tuning := &tsv1.NodeTuning{NICs: []tsv1.NICTuning{
		{Group: "md", Interface: "ens1f0", NumVFs: ptr.To[int32](4), ResourceName: "a"},
		{Group: "mgmt", Interface: "eth1", ResourceName: "notapool"},
		{Group: "zero", Interface: "eth2", NumVFs: ptr.To[int32](0), ResourceName: "zero"},
	}}
	got, vfs := nodeDevices(node, "ts.test", tuning)
	if s := fmt.Sprint(got); s != "[{ts.test/a 0 0} {ts.test/b 8 8}]" {
		t.Errorf("devices %s", s)
	}
	if vfs == nil || *vfs != 8 {
		t.Errorf("vfs %v, want 8", vfs)
	}
	got, vfs = nodeDevices(&corev1.Node{}, "ts.test", nil)
	if got != nil || vfs == nil || *vfs != 0 {
		t.Errorf("no resources: devices %v, vfs %v; want none and 0", got, vfs)
	}
	// the shared CPU pool and the node daemon's socket units share the prefix and are no VFs
	own := corev1.ResourceList{tsv1.XDPDResource: resource.MustParse("1000"), tsv1.SharedCPUsResource: resource.MustParse("2")}
	got, vfs = nodeDevices(&corev1.Node{Status: corev1.NodeStatus{Capacity: own, Allocatable: own}}, "tickstack.io", nil)
	if got != nil || vfs == nil || *vfs != 0 {
		t.Errorf("tickstack's own resources: devices %v, vfs %v; want none and 0", got, vfs)
	}
}
