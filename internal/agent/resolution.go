package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Agent-side resolution (docs/architecture.md, "Fleet scale"; docs/agent.md, "Resolving its own
// node"). When the operator leaves spec.tuning unset and sets spec.profile.resolveOnNode, the
// agent resolves its node's tuning itself, from the LatencyProfile spec.profile.name names and
// the facts it reports, with internal/resolve (the function the manager and `tickstack plan`
// call), and applies the result exactly as it applies spec.tuning. It writes status.resolved and
// status.tuning only when its resolution changed, so a profile change that does not move this
// node costs no write.

// capabilities are what this agent reports in status.capabilities.
func capabilities() []tsv1.AgentCapability {
	return []tsv1.AgentCapability{tsv1.CapabilityResolveOnNode}
}

// resolution is what the status patch writes in status.resolved and status.tuning (set: write
// them, nil clears them), set in the scope rather than in the object: a phase's own patch decodes
// the API server's object into it.
type resolution struct {
	set      bool
	resolved *tsv1.ResolvedTuning
	tuning   *tsv1.NodeTuning
}

// reportResolution writes what this reconcile resolved into the status about to be patched.
func reportResolution(s *scope) {
	s.lns.Status.Capabilities = capabilities()
	if s.resolution.set {
		s.lns.Status.Resolved, s.lns.Status.Tuning = s.resolution.resolved, s.resolution.tuning.DeepCopy()
	}
}

// resolutionError is a resolution that failed for a reason the profile or the node must fix (the
// profile is missing, it does not fit this node): the host keeps the tuning in effect.
type resolutionError struct {
	reason string
	err    error
}

func (e *resolutionError) Error() string { return e.err.Error() }
func (e *resolutionError) Unwrap() error { return e.err }

// desiredTuning sets s.tuning, the tuning this reconcile applies: spec.tuning when the operator
// set it (an old manager, or a node not switched), else the agent's own resolution when
// spec.profile.resolveOnNode is set. It reports stop when there is nothing to apply: no tuning
// yet (obs.noTuning), or a resolution error (obs.resolveErr; the host is left as it is).
func (r *Reconciler) desiredTuning(ctx context.Context, s *scope) (stop bool, err error) {
	lns := s.lns
	if lns.Spec.Tuning != nil {
		s.tuning = lns.Spec.Tuning
		// status.resolved and status.tuning describe only a resolution of this agent's own.
		s.resolution.set = true
		return false, nil
	}
	if !lns.Spec.Profile.ResolveOnNode {
		// Never touch the host before the operator resolved the tuning.
		s.obs.noTuning = true
		s.resolution.set = true
		return true, nil
	}
	t, p, err := r.resolveNode(ctx, s)
	var re *resolutionError
	if errors.As(err, &re) {
		s.obs.resolveErr = re
		r.event(lns, corev1.EventTypeWarning, re.reason, "Resolve", "%s", resolutionMessage(re))
		return true, nil
	}
	if err != nil {
		return true, err
	}
	s.tuning = t
	s.hash = resolve.TuningHash(t)
	// Only a changed resolution is written: a profile change that leaves this node's tuning as it
	// is costs no status write (the Generation column then keeps the generation that moved it).
	if prev := s.base.Status.Resolved; prev == nil || prev.TuningHash != s.hash || prev.Profile != p.Name {
		s.resolution = resolution{set: true, resolved: &tsv1.ResolvedTuning{Profile: p.Name, Generation: p.Generation, TuningHash: s.hash}, tuning: t}
		s.resolvedGeneration = p.Generation
	} else {
		s.resolvedGeneration = prev.Generation
	}
	s.retune = s.hash != r.inEffectHash(s)
	if s.retune {
		ctrl.LoggerFrom(ctx).Info("the node's resolution moved: tainting the node until Applied",
			"profile", p.Name, "generation", p.Generation, "tuningHash", s.hash, "taint", tsv1.TuningPendingTaint)
	}
	return false, nil
}

// resolveNode reads the profile the node state names (from the manager's cache) and resolves
// this node from its facts. A problem the profile or the node must fix is a *resolutionError.
func (r *Reconciler) resolveNode(ctx context.Context, s *scope) (*tsv1.NodeTuning, *tsv1.LatencyProfile, error) {
	name := s.lns.Spec.Profile.Name
	if name == "" {
		return nil, nil, &resolutionError{ReasonProfileNotFound, errors.New("spec.profile.resolveOnNode is set but spec.profile.name is empty: the operator names the profile that wins this node; check the manager's logs")}
	}
	p := &tsv1.LatencyProfile{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &resolutionError{ReasonProfileNotFound, fmt.Errorf("spec.profile.name: LatencyProfile %s does not exist: create it, or let the operator move the node to another profile", name)}
		}
		return nil, nil, fmt.Errorf("reading LatencyProfile %s: %w", name, err)
	}
	if s.obs.factsErr != nil {
		return nil, nil, &resolutionError{ReasonResolutionFailed, fmt.Errorf("LatencyProfile %s cannot be resolved: the host's facts could not be read: %w", name, s.obs.factsErr)}
	}
	t, err := resolve.Node(&p.Spec, s.lns.Status.Facts)
	if err != nil {
		return nil, nil, &resolutionError{ReasonResolutionFailed, fmt.Errorf("LatencyProfile %s (generation %d) does not fit this node: %w", name, p.Generation, err)}
	}
	// What the apply would refuse is refused here, before the taint goes on.
	d, err := Desired(t)
	if err == nil {
		err = tuning.Validate(d)
	}
	if err != nil {
		return nil, nil, &resolutionError{ReasonResolutionFailed, fmt.Errorf("LatencyProfile %s (generation %d) resolves to a tuning this agent refuses: %s", name, p.Generation, joinErrs(err))}
	}
	return t, p, nil
}

// resolutionMessage is the Degraded message of a resolution error.
func resolutionMessage(err error) string {
	return "spec.profile.resolveOnNode: " + joinErrs(err) + "; nothing on the host was changed, the tuning in effect stays (status.tuning)"
}

// inEffectHash is the TuningHash of the tuning in effect on the host: the agent's last
// resolution, or, on a node the operator just switched from spec.tuning, the tuning the agent
// last applied (the boot unit's saved tuning); "" when none.
func (r *Reconciler) inEffectHash(s *scope) string {
	if prev := s.base.Status.Resolved; prev != nil {
		return prev.TuningHash
	}
	b, err := os.ReadFile(r.Host.Path(DesiredPath))
	if err != nil {
		return ""
	}
	var st savedTuning
	if json.Unmarshal(b, &st) != nil {
		return ""
	}
	return resolve.TuningHash(st.Tuning)
}

// taintRetune puts the tuning-pending taint on before the host changes for a new resolution that
// moves the node (docs/architecture.md, "The profile label while a node re-tunes"): no new
// latency pod lands while its tuning moves. confirmBoot takes it off once Applied, as after a
// boot: the taint has one rule for going off, whoever put it on. A node state's first tuning on a
// node no latency pod can land on is not tainted (RetuneNeedsTaint).
func (r *Reconciler) taintRetune(ctx context.Context, s *scope) error {
	if !s.retune {
		return nil
	}
	node := s.node
	if node == nil && s.labelled != nil && !RetuneNeedsTaint(s.base, s.labelled) {
		node = s.labelled // the decision needs the labels only; a taint is written from a read Node
	}
	if node == nil {
		var err error
		if node, err = r.getNode(ctx); err != nil {
			return err
		}
	}
	if !RetuneNeedsTaint(s.base, node) {
		ctrl.LoggerFrom(ctx).V(1).Info("first tuning of a node without the profile label: no latency pod can land, no taint")
		return nil
	}
	return r.taintNode(ctx, node, true)
}

// RetuneNeedsTaint says whether a node whose resolution moves needs the tuning-pending taint while
// its host changes, given its node state as last written (base) and its Node as just read. It does
// unless this is the node state's first tuning (nothing resolved, never Applied) and the Node has no
// profile label: a latency pod lands only on a node labelled with its profile (the webhook's
// affinity), and the label is given only once this agent reports Applied, which it has not. So a
// profile's create costs no taint writes, two Node patches per node fewer on the API server
// while the fleet's node states are being created (docs/scale.md, fix 23). A label left from a
// node state that went, a status that says anything was in effect: tainted, as before.
func RetuneNeedsTaint(base *tsv1.LatencyNodeState, node *corev1.Node) bool {
	if _, labelled := node.Labels[tsv1.ProfileLabel]; labelled {
		return true
	}
	st := &base.Status
	return st.Resolved != nil || st.Tuning != nil || meta.IsStatusConditionTrue(st.Conditions, tsv1.NodeApplied)
}

// profileEvents maps a LatencyProfile's create, spec change and deletion to this agent's own node
// state when it names that profile, or, with ResolveOnNode, when the node has no node state (the
// agent arbitrates for itself then, unnamed.go). A status change of the profile, the manager's
// roll-ups, is not one.
func (r *Reconciler) profileEvents(c client.Reader) (handler.TypedEventHandler[client.Object, reconcile.Request], predicate.Predicate) {
	h := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		lns := &tsv1.LatencyNodeState{}
		err := c.Get(ctx, r.nodeKey(), lns)
		unnamed := r.ResolveOnNode && apierrors.IsNotFound(err)
		if !unnamed && (err != nil || lns.Spec.Profile.Name != o.GetName()) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: r.nodeKey()}}
	})
	return h, predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
	}}
}
