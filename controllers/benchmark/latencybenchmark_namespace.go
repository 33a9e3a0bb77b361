package benchmark

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/phase"
)

// Benchmarks run only in namespaces an administrator opted in. The manager's ClusterRole lets it
// read Jobs and ConfigMaps everywhere (its cache watches the ones it owns) but create nothing a
// benchmark needs: the Jobs, the results ConfigMaps, the reflector Services, and each benchmark's
// service account, Role and RoleBinding come from the ClusterRole DefaultBenchmarkClusterRole,
// which an administrator binds to the manager's service account with a RoleBinding in each
// namespace where benchmarks may run (the chart and config/default bind it in the operator's own
// namespace). Before it creates anything for a run, the controller asks the API server
// (SelfSubjectAccessReview) whether it may; when it may not, the condition NamespaceOptedIn is
// False with the RoleBinding to create, and it asks again every namespaceRecheck.

// DefaultBenchmarkClusterRole is config/default's name of the ClusterRole that opts a namespace in
// to benchmarks (the chart's is <fullname>-benchmark-namespace; the manager's
// --benchmark-cluster-role).
const DefaultBenchmarkClusterRole = "tickstack-benchmark-namespace"

// namespaceRecheck is how often a benchmark in a namespace that is not opted in looks again: the
// manager cannot watch RoleBindings (it has no right to list them).
const namespaceRecheck = 30 * time.Second

// benchRight is one thing the manager does in a benchmark's namespace.
type benchRight struct{ group, resource, verb string }

func (r benchRight) String() string {
	if r.group == "" {
		return r.verb + " " + r.resource
	}
	return r.verb + " " + r.resource + "." + r.group
}

// benchRights lists what a run of b creates: the check asks for each.
func benchRights(b *tsv1.LatencyBenchmark) []benchRight {
	rights := []benchRight{
		{"batch", "jobs", "create"},
		{"", "configmaps", "create"},
		{"", "serviceaccounts", "create"},
		{"rbac.authorization.k8s.io", "roles", "create"},
		{"rbac.authorization.k8s.io", "rolebindings", "create"},
	}
	if mode, _, _, _ := placementOf(b); mode == tsv1.PlacementTwoPods && judge.RunnerSuites(b).NetworkSuites() {
		rights = append(rights, benchRight{"", "services", "create"})
	}
	return rights
}

// createsObjects says whether the current run is still to create objects: a node waits for a
// slot, or its Job is to be created or has not started. Once every Job runs the check is not asked
// again (a create refused later still sets the condition: forbidden).
func createsObjects(b *tsv1.LatencyBenchmark) bool {
	if b.Status.Run == 0 {
		return false
	}
	for _, n := range b.Status.Nodes {
		if n.Phase == tsv1.NodePending || n.Phase == tsv1.NodeWaiting {
			return true
		}
	}
	return false
}

// namespaceOptedIn is benchmarkFacts.namespace when the check found every right.
const namespaceOptedIn = "opted in"

// reconcileNamespace stops the run, before anything is created, while the manager may not create
// the run's objects in the benchmark's namespace. A yes is asked again after namespaceRecheck, not
// on every reconcile of a run's waves (a create refused meanwhile still sets the condition:
// forbidden).
func (r *LatencyBenchmarkReconciler) reconcileNamespace(ctx context.Context, s *benchScope) error {
	b := s.b
	if !createsObjects(b) {
		return nil
	}
	rights := benchRights(b)
	if r.mem.allowedLately(b.Namespace, rights, s.now, namespaceRecheck) {
		s.facts.namespace = namespaceOptedIn
		return nil
	}
	var missing []string
	for _, right := range rights {
		ok, err := r.allowed(ctx, b.Namespace, right)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, right.String())
		}
	}
	if len(missing) == 0 {
		r.mem.rememberAllowed(b.Namespace, rights, s.now)
		s.facts.namespace = namespaceOptedIn
		return nil
	}
	return r.notOptedIn(ctx, s, "may not "+strings.Join(missing, ", ")+" there")
}

// notOptedIn records that the benchmark's namespace is not opted in (why: what the manager may not
// do), looks again after namespaceRecheck, and stops the phases.
func (r *LatencyBenchmarkReconciler) notOptedIn(ctx context.Context, s *benchScope, why string) error {
	b := s.b
	s.facts.namespace = r.notOptedInMessage(ctx, b.Namespace, why)
	s.facts.recheckAt(s.now.Add(namespaceRecheck))
	if !apimeta.IsStatusConditionFalse(b.Status.Conditions, tsv1.BenchmarkNamespaceOptedIn) {
		r.event(b, corev1.EventTypeWarning, tsv1.ReasonNamespaceNotOptedIn, "Check", "%s", s.facts.namespace)
	}
	return phase.ErrStop
}

// forbidden turns a Forbidden answer to a create in the benchmark's namespace (the RoleBinding was
// removed after the check) into the NamespaceOptedIn condition; other errors pass through.
func (r *LatencyBenchmarkReconciler) forbidden(ctx context.Context, s *benchScope, err error) error {
	if err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	var status apierrors.APIStatus
	msg := err.Error()
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	return r.notOptedIn(ctx, s, "was refused there ("+msg+")")
}

// allowed asks the API server whether the manager may do right in namespace ns.
func (r *LatencyBenchmarkReconciler) allowed(ctx context.Context, ns string, right benchRight) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: right.verb, Group: right.group, Resource: right.resource},
	}}
	if err := r.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether the manager may %s in namespace %s: %w", right, ns, err)
	}
	return review.Status.Allowed, nil
}

// notOptedInMessage says which namespace is not opted in and the command that opts it in, naming
// the manager's own service account as the API server knows it.
func (r *LatencyBenchmarkReconciler) notOptedInMessage(ctx context.Context, ns, why string) string {
	role := r.ClusterRole
	subject := "--serviceaccount <the manager's namespace>:<its service account>"
	who := "the manager"
	if user := r.username(ctx); user != "" {
		who = "the manager (" + user + ")"
		if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
			subject = "--serviceaccount " + sa
		} else {
			subject = "--user " + user
		}
	}
	return fmt.Sprintf("namespace %s is not opted in to benchmarks: %s %s, so nothing was created; an administrator opts it in with "+
		"kubectl create rolebinding tickstack-benchmarks --namespace %s --clusterrole %s %s (docs/security.md, \"Benchmark namespaces\"), "+
		"and the run starts within %s",
		ns, who, why, ns, role, subject, namespaceRecheck)
}

// username is the manager's user name as the API server authenticates it (a SelfSubjectReview,
// asked once); "" when it cannot be known.
func (r *LatencyBenchmarkReconciler) username(ctx context.Context) string {
	r.userMu.Lock()
	defer r.userMu.Unlock()
	if r.user != "" {
		return r.user
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := r.Client.Create(ctx, review); err != nil {
		return ""
	}
	r.user = review.Status.UserInfo.Username
	return r.user
}
