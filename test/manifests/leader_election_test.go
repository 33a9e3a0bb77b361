package manifests

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// managerLease is the Lease cmd/manager elects its leader on (its leaderElectionID).
const managerLease = "tickstack-manager.tickstack.io"

// TestLeaderElectionRoleIsEnough installs config/default's leader election Role and its binding on
// a real kube-apiserver and runs controller-runtime's leader election as the manager's service
// account with nothing else granted: it creates the Lease, is elected and renews it. The same
// account can neither list nor delete Leases, nor touch another Lease of the namespace.
func TestLeaderElectionRoleIsEnough(t *testing.T) {
	e, admin := kubetest.New(t, kubetest.Options{})
	ctx := context.Background()
	const ns = "tickstack-system"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	installed := 0
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		if (o.GetKind() != "Role" && o.GetKind() != "RoleBinding") || o.GetName() != "tickstack-leader-election" {
			continue
		}
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		installed++
	}
	if installed != 2 {
		t.Fatalf("config/default has %d of the leader election Role and RoleBinding, want both", installed)
	}
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-else"}}
	if err := admin.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":tickstack-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: kubetest.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionID: managerLease, LeaderElectionNamespace: ns,
		LeaseDuration: ptr.To(4 * time.Second), RenewDeadline: ptr.To(3 * time.Second), RetryPeriod: ptr.To(300 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("the manager stopped before it was elected: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not elected within 60s with the leader election Role alone")
	}
	lease := &coordinationv1.Lease{}
	renewTime := func() time.Time {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: managerLease}, lease); err != nil {
			t.Fatal(err)
		}
		if lease.Spec.RenewTime == nil {
			return time.Time{}
		}
		return lease.Spec.RenewTime.Time
	}
	first := renewTime()
	deadline := time.Now().Add(30 * time.Second)
	for !renewTime().After(first) {
		if time.Now().After(deadline) {
			t.Fatalf("the Lease was not renewed within 30s (renewTime %v)", first)
		}
		time.Sleep(100 * time.Millisecond)
	}

	as, err := client.New(cfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("listing Leases: got %v, want forbidden", err)
	}
	if err := as.Get(ctx, client.ObjectKeyFromObject(other), &coordinationv1.Lease{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading another Lease: got %v, want forbidden", err)
	}
	if err := as.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: managerLease}}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting its Lease: got %v, want forbidden", err)
	}
	if err := as.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: managerLease}}); !apierrors.IsForbidden(err) {
		t.Errorf("creating a Lease in another namespace: got %v, want forbidden", err)
	}
}
