package guard

import (
	"context"
	"fmt"
	"time"

	admv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The guard reads only its own policies (config/default's names; hack/sync-chart.py renames them for
// the chart). RBAC cannot limit create by name (the name is not known when it is authorised).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=tickstack-uninstall-guard-profiles;tickstack-uninstall-guard-node-states;tickstack-agent-own-node
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=create

// DefaultUninstallGuardPeriod is how often the uninstall guard's policies are looked at.
const DefaultUninstallGuardPeriod = 2 * time.Second

// UninstallGuard keeps the uninstall guard's admission policies and their bindings (config/default's
// uninstall_guard.yaml, the chart's uninstall-guard.yaml) in place while a LatencyProfile or a
// LatencyNodeState exists. No admission policy can guard another, so kubectl delete -k deletes them
// even though they refuse it everything a restore needs; the manager, which they kept running, puts
// them back from the copies it read, so that a second delete is refused as well (and so the agent's
// own-node policy, deleted with them). With no profile and no node state left it leaves them alone:
// an uninstall goes through.
type UninstallGuard struct {
	// Client reads the profiles and node states (the manager's cache).
	Client client.Client
	// APIReader reads the policies and bindings by name, uncached.
	APIReader client.Reader
	// Names are the policies'; each binding is named as its policy.
	Names []string
	// Period between looks (DefaultUninstallGuardPeriod by default).
	Period time.Duration

	copies map[string]client.Object // "kind/name": the object as last seen, to create it again
}

// NeedLeaderElection: one manager puts the policies back.
func (g *UninstallGuard) NeedLeaderElection() bool { return true }

// Start looks every Period until ctx ends.
func (g *UninstallGuard) Start(ctx context.Context) error {
	t := time.NewTicker(g.Period)
	defer t.Stop()
	for {
		if err := g.look(ctx); err != nil {
			logf.FromContext(ctx).Error(err, "keeping the uninstall guard")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// look refreshes the copies of the objects that exist and, while anything is tuned, creates again
// those that are gone.
func (g *UninstallGuard) look(ctx context.Context) error {
	if g.copies == nil {
		g.copies = map[string]client.Object{}
	}
	tuned, err := g.tuned(ctx)
	if err != nil {
		return err
	}
	for _, name := range g.Names {
		for _, o := range []client.Object{&admv1.ValidatingAdmissionPolicy{}, &admv1.ValidatingAdmissionPolicyBinding{}} {
			key := fmt.Sprintf("%T/%s", o, name)
			err := g.APIReader.Get(ctx, client.ObjectKey{Name: name}, o)
			switch {
			case err == nil:
				g.copies[key] = o
				continue
			case !apierrors.IsNotFound(err):
				return err
			}
			c, ok := g.copies[key]
			if !tuned || !ok {
				continue // nothing to guard, or never seen: nothing to put back
			}
			again := c.DeepCopyObject().(client.Object)
			again.SetResourceVersion("")
			again.SetUID("")
			again.SetCreationTimestamp(metav1.Time{})
			again.SetManagedFields(nil)
			again.SetDeletionTimestamp(nil)
			again.SetGeneration(0)
			if err := g.Client.Create(ctx, again); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("putting back %s: %w", key, err)
			}
			logf.FromContext(ctx).Info("put the uninstall guard back: it was deleted while nodes are tuned", "object", key)
		}
	}
	return nil
}

// tuned reports whether a LatencyProfile or a LatencyNodeState exists.
func (g *UninstallGuard) tuned(ctx context.Context) (bool, error) {
	var p tsv1.LatencyProfileList
	if err := g.Client.List(ctx, &p, client.Limit(1)); err != nil {
		return false, err
	}
	if len(p.Items) > 0 {
		return true, nil
	}
	var s tsv1.LatencyNodeStateList
	if err := g.Client.List(ctx, &s, client.Limit(1)); err != nil {
		return false, err
	}
	return len(s.Items) > 0, nil
}
