package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestTreeDevices: the agent reports the SR-IOV device plugin's resources from its Node: 0 VFs on
// a node whose kubelet reports none (a node without SR-IOV, where the plugin registers nothing),
// then what the kubelet reports once devices register, resources of other prefixes left out.
func TestTreeDevices(t *testing.T) {
	ctx := context.Background()
	node := agenttest.Name("devices")
	a := agenttest.NewTreeAgent(t, node)
	a.R.ResourcePrefix = "tsagt.test"
	startOnTree(t, a, node, &tsv1.NodeTuning{ReservedCPUs: "0-1", IsolatedCPUs: "2-3", Sysctls: map[string]string{"vm.stat_interval": "10"}})

	devices := func(want string, vfs int32) func() error {
		return func() error {
			st := getLNS(t, node).Status
			if st.VFs == nil || *st.VFs != vfs {
				return fmt.Errorf("status.vfs %v, want %d", st.VFs, vfs)
			}
			if got := fmt.Sprint(st.Devices); got != want {
				return fmt.Errorf("status.devices %s, want %s", got, want)
			}
			return nil
		}
	}
	tsutil.Poll(t, 20*time.Second, "no devices reported as 0 VFs", devices("[]", 0))

	// The kubelet's report once the plugin registered VFs (one unhealthy).
	n := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity = corev1.ResourceList{"tsagt.test/md_vfs": resource.MustParse("4"), "other.test/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("4")}
	n.Status.Allocatable = corev1.ResourceList{"tsagt.test/md_vfs": resource.MustParse("3"), "other.test/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("4")}
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	// The agent reads the Node on its next check; a spec change makes that now.
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning.Sysctls["vm.stat_interval"] = "9" })
	tsutil.Poll(t, 20*time.Second, "the kubelet's VFs", devices("[{tsagt.test/md_vfs 4 3}]", 3))
}
