package manifests

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// agentUser is the agent's service account as its projected token presents it on node-a: the
// kubelet binds the node name into the token, and the API server passes it on as an extra.
func agentUser(node string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{
		UserName: "system:serviceaccount:tickstack-system:tickstack-agent",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:tickstack-system", "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {node}},
	}
}

// TestAgentMayChangeOnlyItsOwnNode installs config/default's RBAC and own-node policy on a real
// kube-apiserver and acts as the agent of node-a: its own Node and LatencyNodeState can be
// changed, node-b's are refused by the policy (not by RBAC, which allows both); so is a change
// by the same account without a node name.
func TestAgentMayChangeOnlyItsOwnNode(t *testing.T) {
	e, admin := kubetest.New(t, kubetest.Options{CRDs: []string{"config/crd/bases", "internal/render/testdata/crds"}})
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tickstack-system"}}); err != nil {
		t.Fatal(err)
	}
	installed := map[string]bool{}
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			o.SetNamespace("") // cluster-scoped: kustomize sets it, the API server drops it
		case "ServiceAccount":
		default:
			continue
		}
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		installed[o.GetKind()] = true
	}
	for _, k := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRoleBinding"} {
		if !installed[k] {
			t.Fatalf("config/default has no %s", k)
		}
	}
	for _, n := range []string{"node-a", "node-b"} {
		if err := admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(ctx, &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = agentUser("node-a")
	scheme := kubetest.Scheme()
	if err := nfdv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	agent, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// the agent patches (its role grants patch, not update); a patch is an UPDATE to admission.
	// On a Node the probe is the one label the agent owns.
	label := func(o client.Object) error {
		if err := agent.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		base := o.DeepCopyObject().(client.Object)
		key := "probe"
		if _, node := o.(*corev1.Node); node {
			key = tsv1.FingerprintLabel
		}
		o.SetLabels(map[string]string{key: time.Now().Format("150405.000000")})
		return agent.Patch(ctx, o, client.MergeFrom(base))
	}

	// the policy is enforced a moment after it is created: probe until node-b is refused
	var err2 error
	deadline := time.Now().Add(30 * time.Second)
	for {
		err2 = label(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
		if err2 != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !apierrors.IsForbidden(err2) || !strings.Contains(err2.Error(), "only its own node") {
		t.Fatalf("the agent of node-a changing Node node-b: got %v, want the policy's refusal", err2)
	}
	if err := label(&tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "only its own node") {
		t.Errorf("the agent of node-a changing LatencyNodeState node-b: got %v, want the policy's refusal", err)
	}
	if err := label(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}); err != nil {
		t.Errorf("the agent of node-a changing its own Node: %v", err)
	}
	if err := label(&tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}); err != nil {
		t.Errorf("the agent of node-a changing its own LatencyNodeState: %v", err)
	}
	// patchNode reads node as the agent and patches it (its status, with status) as mutate changes it.
	patchNode := func(node string, status bool, mutate func(*corev1.Node)) error {
		n := &corev1.Node{}
		if err := agent.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		base := n.DeepCopy()
		mutate(n)
		if status {
			return agent.Status().Patch(ctx, n, client.MergeFrom(base))
		}
		return agent.Patch(ctx, n, client.MergeFrom(base))
	}
	// its Node itself: only the label, taint, annotation and cordon the agent owns
	nodeSpec := func(node string, mutate func(*corev1.Node)) error { return patchNode(node, false, mutate) }
	const notOwned = "may change on its Node only the label tickstack.io/fingerprint"
	for what, mutate := range map[string]func(*corev1.Node){
		"another label": func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" },
		"another tickstack.io label": func(n *corev1.Node) {
			n.Labels[tsv1.ProfileLabel] = "stolen"
		},
		"an annotation":            func(n *corev1.Node) { n.Annotations = map[string]string{"example.com/x": "y"} },
		"removing another's taint": func(n *corev1.Node) { n.Spec.Taints = nil }, // the API server's not-ready taint
		"another taint": func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/evict-me", Effect: corev1.TaintEffectNoExecute})
		},
		"a cordon without its annotation": func(n *corev1.Node) { n.Spec.Unschedulable = true },
		"the pod CIDR":                    func(n *corev1.Node) { n.Spec.PodCIDR = "198.18.0.0/24" },
		"a finalizer":                     func(n *corev1.Node) { n.Finalizers = append(n.Finalizers, "example.com/hold") },
	} {
		if err := nodeSpec("node-a", mutate); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), notOwned) {
			t.Errorf("the agent of node-a changing %s on its Node: got %v, want the policy's refusal", what, err)
		}
	}
	pendingTaint := corev1.Taint{Key: tsv1.TuningPendingTaint, Effect: corev1.TaintEffectNoSchedule}
	for _, c := range []struct {
		what   string
		mutate func(*corev1.Node)
	}{
		{"adding its taint", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, pendingTaint) }},
		{"cordoning with its annotation", func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			n.Annotations = map[string]string{tsv1.CordonedAnnotation: "true"}
		}},
		{"uncordoning what it cordoned", func(n *corev1.Node) {
			n.Spec.Unschedulable = false
			delete(n.Annotations, tsv1.CordonedAnnotation)
		}},
		{"removing its taint", func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == tsv1.TuningPendingTaint })
		}},
	} {
		if err := nodeSpec("node-a", c.mutate); err != nil {
			t.Errorf("the agent of node-a %s: %v", c.what, err)
		}
	}
	// a node someone else cordoned stays cordoned
	cordoned := &corev1.Node{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "node-a"}, cordoned); err != nil {
		t.Fatal(err)
	}
	cordoned.Spec.Unschedulable = true
	if err := admin.Update(ctx, cordoned); err != nil {
		t.Fatal(err)
	}
	if err := nodeSpec("node-a", func(n *corev1.Node) { n.Spec.Unschedulable = false }); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), notOwned) {
		t.Errorf("the agent of node-a uncordoning a node an administrator cordoned: got %v, want the policy's refusal", err)
	}
	// its Node's status: only the shared CPU pool's extended resource, on its own Node
	status := func(node string, mutate func(*corev1.Node)) error { return patchNode(node, true, mutate) }
	setPool := func(count int64) func(*corev1.Node) {
		return func(n *corev1.Node) {
			q := *resource.NewQuantity(count, resource.DecimalSI)
			n.Status.Capacity = corev1.ResourceList{tsv1.SharedCPUsResource: q}
			n.Status.Allocatable = corev1.ResourceList{tsv1.SharedCPUsResource: q}
		}
	}
	if err := status("node-a", setPool(4)); err != nil {
		t.Errorf("the agent of node-a advertising its shared CPUs: %v", err)
	}
	if err := status("node-b", setPool(4)); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only its own node") {
		t.Errorf("the agent of node-a advertising node-b's shared CPUs: got %v, want the policy's refusal", err)
	}
	for what, mutate := range map[string]func(*corev1.Node){
		"another resource": func(n *corev1.Node) { n.Status.Capacity["example.com/dongle"] = resource.MustParse("1") },
		"a condition": func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "Probe", Status: corev1.ConditionTrue})
		},
		"an address": func(n *corev1.Node) {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "198.18.0.1"})
		},
	} {
		if err := status("node-a", mutate); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only the capacity and allocatable of tickstack.io/shared-cpus") {
			t.Errorf("the agent of node-a changing %s in its Node's status: got %v, want the policy's refusal", what, err)
		}
	}
	if err := status("node-a", func(n *corev1.Node) {
		delete(n.Status.Capacity, tsv1.SharedCPUsResource)
		delete(n.Status.Allocatable, tsv1.SharedCPUsResource)
	}); err != nil {
		t.Errorf("the agent of node-a withdrawing its shared CPUs: %v", err)
	}
	// its NodeFeature for node-feature-discovery: only tickstack-<its node>, naming its node
	feature := func(name, node string) error {
		return agent.Create(ctx, &nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "tickstack-system", Labels: map[string]string{nfdv1alpha1.NodeFeatureObjNodeNameLabel: node}}})
	}
	for _, c := range []struct{ name, node string }{{"tickstack-node-b", "node-b"}, {"tickstack-node-a", "node-b"}, {"nfd-node-a", "node-a"}} {
		if err := feature(c.name, c.node); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only its own node's NodeFeature") {
			t.Errorf("the agent of node-a creating NodeFeature %s for %s: got %v, want the policy's refusal", c.name, c.node, err)
		}
	}
	if err := feature(tsv1.NodeFeaturePrefix+"node-a", "node-a"); err != nil {
		t.Errorf("the agent of node-a creating its own NodeFeature: %v", err)
	}
	agentReadsProfilesOnly(ctx, t, admin, cfg)
	// a token without the node name (not a pod's) changes nothing
	cfg.Impersonate = agentUser("node-a")
	cfg.Impersonate.Extra = nil
	anon, err := client.New(cfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := anon.Get(ctx, client.ObjectKey{Name: "node-a"}, n); err != nil {
		t.Fatal(err)
	}
	base := n.DeepCopy()
	n.Labels = map[string]string{"probe": "none"}
	if err := anon.Patch(ctx, n, client.MergeFrom(base)); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "only its own node") {
		t.Errorf("the agent's account without a node name changing Node node-a: got %v, want the policy's refusal", err)
	}
}

// agentReadsProfilesOnly: the agent's role reads LatencyProfiles (a node with
// spec.profile.resolveOnNode resolves its own tuning from one) and can write none: creating,
// updating, patching, deleting one and writing its status are refused by RBAC.
func agentReadsProfilesOnly(ctx context.Context, t *testing.T, admin client.Client, cfg *rest.Config) {
	t.Helper()
	p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "probe-profile"},
		Spec: tsv1.LatencyProfileSpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"probe": "a"}}}}
	if err := admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	agent, err := client.NewWithWatch(cfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	got := &tsv1.LatencyProfile{}
	if err := agent.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Errorf("the agent reading LatencyProfile %s: %v", p.Name, err)
	}
	if err := agent.List(ctx, &tsv1.LatencyProfileList{}); err != nil {
		t.Errorf("the agent listing LatencyProfiles: %v", err)
	}
	w, err := agent.Watch(ctx, &tsv1.LatencyProfileList{})
	if err != nil {
		t.Errorf("the agent watching LatencyProfiles: %v", err)
	} else {
		w.Stop()
	}
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("the agent %s: got %v, want RBAC's refusal (its role reads profiles only)", what, err)
		}
	}
	other := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "probe-agent-made"}, Spec: p.Spec}
	refused("creating a LatencyProfile", agent.Create(ctx, other))
	upd := got.DeepCopy()
	upd.Spec.Priority = 7
	refused("updating a LatencyProfile", agent.Update(ctx, upd))
	refused("patching a LatencyProfile", agent.Patch(ctx, upd, client.MergeFrom(got)))
	refused("patching a LatencyProfile's status", agent.Status().Patch(ctx, upd, client.MergeFrom(got)))
	refused("deleting a LatencyProfile", agent.Delete(ctx, got))
	refused("deleting every LatencyProfile", agent.DeleteAllOf(ctx, &tsv1.LatencyProfile{}))
}
