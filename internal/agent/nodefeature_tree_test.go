package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestTreeNodeFeature: the agent publishes its node's tuning for node-feature-discovery in the
// NodeFeature tickstack-<node> of its namespace (the feature the operator's NodeFeatureRule
// matches): the profile's name, and applied "false" until the node state is Applied for its
// generation, then "true"; a NodeFeature deleted by someone else comes back; a tuning it cannot
// apply makes it "false" again; the restore deletes it.
func TestTreeNodeFeature(t *testing.T) {
	ctx := context.Background()
	node := agenttest.Name("feature")
	a := agenttest.NewTreeAgent(t, node)
	a.R.Namespace = "default"
	a.R.FeatureRecheck = 2 * time.Second
	createNode(t, node)
	createLNS(t, node, &tsv1.NodeTuning{ReservedCPUs: "0-1", IsolatedCPUs: "2-3", Sysctls: map[string]string{"vm.stat_interval": "10"}})
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) {
		l.Labels = map[string]string{tsv1.ProfileLabel: "trading"}
	})
	agenttest.StartAgent(t, cfg, a.R, nil)

	key := client.ObjectKey{Namespace: "default", Name: tsv1.NodeFeaturePrefix + node}
	feature := func(want string) func() error {
		return func() error {
			nf := &nfdv1alpha1.NodeFeature{}
			if err := k8s.Get(ctx, key, nf); err != nil {
				return err
			}
			if nf.Labels[nfdv1alpha1.NodeFeatureObjNodeNameLabel] != node {
				return fmt.Errorf("labels %v", nf.Labels)
			}
			got := fmt.Sprint(nf.Spec.Features.Attributes[tsv1.TuningFeature].Elements)
			if got != want {
				return fmt.Errorf("%s elements %s, want %s", tsv1.TuningFeature, got, want)
			}
			return nil
		}
	}
	pollApplied(t, node, 20*time.Second)
	tsutil.Poll(t, 10*time.Second, "the feature says applied", feature("map[applied:true profile:trading]"))

	// Deleted behind the agent's back while nothing changes: made again at the next read back
	// (FeatureRecheck), though the agent makes no request for it in between.
	if err := k8s.Delete(ctx, &nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "the feature made again", feature("map[applied:true profile:trading]"))

	// A setting the host refuses (a sysctl that is not there): not applied.
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning.Sysctls["net.core.not_a_sysctl"] = "1" })
	tsutil.Poll(t, 20*time.Second, "the feature says not applied", feature("map[applied:false profile:trading]"))

	l := getLNS(t, node)
	if err := k8s.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 30*time.Second, "the feature withdrawn", func() error {
		if err := k8s.Get(ctx, key, &nfdv1alpha1.NodeFeature{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodeFeature %s: %v", key, err)
		}
		return nil
	})
}
