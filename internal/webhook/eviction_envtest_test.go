package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// TestAgentEvictsOnlyOnItsOwnNode: the real API server calls the eviction check, as config/webhook
// configures it, for the agent's account only. The agent of node-a evicts a pod of node-a; a pod of
// node-b, an unscheduled pod, and any pod with a token naming no node are refused, though RBAC
// allows them all; another account's eviction never reaches the check.
func TestAgentEvictsOnlyOnItsOwnNode(t *testing.T) {
	w := serveWebhooks(t)
	ctx := context.Background()
	const ns, agentUser = "tsev", "system:serviceaccount:tickstack-system:tickstack-agent"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tsev-evict"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tsev-evict"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tsev-evict"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: agentUser}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tsev-other"}}},
	} {
		if err := w.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := w.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	as := func(user string, extra map[string][]string) client.Client {
		cfg := rest.CopyConfig(w.cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}, Extra: extra}
		c, err := client.New(cfg, client.Options{Scheme: kubetest.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	evict := func(c client.Client, p *corev1.Pod) error {
		return c.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: new(int64)}})
	}
	agentA := as(agentUser, map[string][]string{nodeNameExtra: {"node-a"}})

	own, other, pending, third := pod("own", "node-a"), pod("other", "node-b"), pod("pending", ""), pod("third", "node-b")
	if err := evict(agentA, own); err != nil {
		t.Errorf("the agent of node-a evicting a pod of node-a: %v", err)
	}
	for _, c := range []struct {
		p    *corev1.Pod
		want string
	}{{other, "runs on node node-b"}, {pending, "is not scheduled"}} {
		if err := evict(agentA, c.p); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "evicts only pods of its own node") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("the agent of node-a evicting %s: got %v, want the webhook's refusal (%s)", c.p.Name, err, c.want)
		}
	}
	if err := evict(as(agentUser, nil), own); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "names no node") {
		t.Errorf("the agent's account with a token naming no node: got %v, want the webhook's refusal", err)
	}
	if err := evict(as("tsev-other", nil), third); err != nil {
		t.Errorf("another account (not checked): %v", err)
	}
}
