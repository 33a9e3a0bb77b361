package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// sharedPool is the Node's tickstack.io/shared-cpus capacity and allocatable ("-" when absent).
func sharedPool(n *corev1.Node) (capacity, allocatable string) {
	capacity, allocatable = "-", "-"
	if q, ok := n.Status.Capacity[tsv1.SharedCPUsResource]; ok {
		capacity = q.String()
	}
	if q, ok := n.Status.Allocatable[tsv1.SharedCPUsResource]; ok {
		allocatable = q.String()
	}
	return capacity, allocatable
}

// TestTreeSharedCPUs: a tuning with a shared pool advertises tickstack.io/shared-cpus on the
// agent's Node (status capacity and allocatable), held at 0 until the kubelet runs with the pool
// in its reservedSystemCPUs, then one unit per shared CPU; a count changed by someone else is put
// back, the pool is no SR-IOV device in status.devices, and it goes with the node state.
func TestTreeSharedCPUs(t *testing.T) {
	node := agenttest.Name("shared")
	a := agenttest.NewTreeAgent(t, node)
	newTreeKubelet(t, a)
	createNode(t, node)
	tun := kubeletTuning(tsv1.DefaultTopologyManagerPolicy)
	tun.ReservedCPUs, tun.SharedCPUs = "0", "1"
	createLNS(t, node, tun)
	agenttest.StartAgent(t, cfg, a.R, nil)

	tsutil.Poll(t, 20*time.Second, "the pool held at 0 before the kubelet restart", func() error {
		l := getLNS(t, node)
		if r := l.Status.Reboot; r == nil || r.Phase != tsv1.RebootRequested || r.Action != tsv1.ActionKubeletRestart {
			return fmt.Errorf("reboot status %+v", r)
		}
		if s := setting(l, "node/tickstack.io/shared-cpus"); s.State != tsv1.SettingPendingRestart || s.Desired != "0" || s.Observed != "0" {
			return fmt.Errorf("setting %+v", s)
		}
		if c, al := sharedPool(getNode(t, node)); c != "0" || al != "0" {
			return fmt.Errorf("node capacity %s allocatable %s, want 0 0", c, al)
		}
		return nil
	})

	setGranted(t, node, true)
	tsutil.Poll(t, 30*time.Second, "the pool advertised once the kubelet reserves it", func() error {
		l := getLNS(t, node)
		if s := kubeletSetting(l, "reservedSystemCPUs"); s.State != tsv1.SettingInSync || s.Observed != "0-1" {
			return fmt.Errorf("kubelet setting %+v", s)
		}
		if s := setting(l, "node/tickstack.io/shared-cpus"); s.State != tsv1.SettingInSync || s.Desired != "1" || s.Observed != "1" {
			return fmt.Errorf("setting %+v", s)
		}
		if c, al := sharedPool(getNode(t, node)); c != "1" || al != "1" {
			return fmt.Errorf("node capacity %s allocatable %s, want 1 1", c, al)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, "")
	})
	setGranted(t, node, false)
	if l := getLNS(t, node); len(l.Status.Devices) != 0 || l.Status.VFs == nil || *l.Status.VFs != 0 {
		t.Errorf("the shared pool counted as a device: devices %+v vfs %v", l.Status.Devices, l.Status.VFs)
	}

	// Someone takes the count away: the agent's next check puts it back.
	n := getNode(t, node)
	base := n.DeepCopy()
	n.Status.Capacity[tsv1.SharedCPUsResource] = resource.MustParse("7")
	delete(n.Status.Allocatable, tsv1.SharedCPUsResource)
	if err := k8s.Status().Patch(context.Background(), n, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "the pool advertised again", func() error {
		if c, al := sharedPool(getNode(t, node)); c != "1" || al != "1" {
			return fmt.Errorf("node capacity %s allocatable %s, want 1 1", c, al)
		}
		return nil
	})

	deleteLNS(t, node)
	if c, al := sharedPool(getNode(t, node)); c != "-" || al != "-" {
		t.Errorf("after the restore the node still advertises the pool: capacity %s allocatable %s", c, al)
	}
}
