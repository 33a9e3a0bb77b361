package manifests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// Every object config/default installs carries the uninstall guard's label, so the guard knows it.
func TestEveryInstalledObjectIsGuarded(t *testing.T) {
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		if o.GetLabels()[tsv1.UninstallGuardLabel] != "protected" {
			t.Errorf("%s %s lacks %s=protected", o.GetKind(), o.GetName(), tsv1.UninstallGuardLabel)
		}
	}
}

// TestUninstallGuard installs config/default's uninstall guard on a real kube-apiserver with the
// objects a restore needs, then: while a LatencyProfile exists, deleting the agent DaemonSet, the
// manager Deployment, the namespace, a ClusterRole or a CRD is refused with a message naming the
// profile, and so is creating the chart's uninstall check ConfigMap, while tickstack-xdpd may go; while only a LatencyNodeState
// exists, refused naming it; with neither, everything goes.
func TestUninstallGuard(t *testing.T) {
	_, c := kubetest.New(t, kubetest.Options{CRDs: []string{"config/crd/bases"}})
	ctx := context.Background()
	var guard []client.Object
	var ds, xdpd *appsv1.DaemonSet
	var deploy *appsv1.Deployment
	var role *rbacv1.ClusterRole
	var ns *corev1.Namespace
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		switch {
		case strings.Contains(o.GetName(), "uninstall-guard"):
			o.SetNamespace("")
			guard = append(guard, o)
		case o.GetKind() == "Namespace":
			ns = &corev1.Namespace{}
			fromUnstructured(t, o, ns)
		case o.GetKind() == "DaemonSet" && o.GetName() == "tickstack-agent":
			ds = &appsv1.DaemonSet{}
			fromUnstructured(t, o, ds)
		case o.GetKind() == "DaemonSet" && o.GetName() == "tickstack-xdpd":
			xdpd = &appsv1.DaemonSet{}
			fromUnstructured(t, o, xdpd)
		case o.GetKind() == "Deployment":
			deploy = &appsv1.Deployment{}
			fromUnstructured(t, o, deploy)
		case o.GetKind() == "ClusterRole" && role == nil:
			role = &rbacv1.ClusterRole{}
			fromUnstructured(t, o, role)
		}
	}
	if len(guard) != 4 || ds == nil || xdpd == nil || deploy == nil || role == nil || ns == nil {
		t.Fatalf("config/default: %d uninstall guard objects (want two policies, two bindings), agent %v, manager %v, ClusterRole %v, Namespace %v",
			len(guard), ds != nil, deploy != nil, role != nil, ns != nil)
	}
	role.Namespace = ""
	for _, o := range []client.Object{ns, ds, xdpd, deploy, role} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, o := range guard {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	// the CRDs as config/default installs them: labelled
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "latencybenchmarks.tickstack.io"}, crd); err != nil {
		t.Fatal(err)
	}
	base := crd.DeepCopy()
	crd.Labels = map[string]string{tsv1.UninstallGuardLabel: "protected"}
	if err := c.Patch(ctx, crd, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	profile := sampleProfile(t)
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	check := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tickstack-uninstall-check", Namespace: ns.Name,
			Labels: map[string]string{tsv1.UninstallGuardLabel: "check"}}}
	}
	// dryDelete asks the API server to delete o without deleting it (admission runs on a dry run)
	dryDelete := func(o client.Object) error { return c.Delete(ctx, o, client.DryRunAll) }
	refused := func(what string, err error, name string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "no agent to restore") {
			t.Errorf("%s: got %v, want the uninstall guard's refusal naming %s", what, err, name)
		}
	}

	// the policies are enforced, and see their params, a moment after they are created
	want := "LatencyProfile " + profile.Name
	err := eventually(func() error { return dryDelete(ds) }, func(err error) bool { return err != nil && strings.Contains(err.Error(), want) })
	refused("deleting the agent DaemonSet with a profile", err, want)
	refused("deleting the manager Deployment with a profile", dryDelete(deploy), want)
	refused("deleting the namespace with a profile", dryDelete(ns), want)
	refused("deleting a ClusterRole with a profile", dryDelete(role), want)
	refused("deleting a CRD with a profile", dryDelete(crd), want)
	refused("creating the uninstall check with a profile", c.Create(ctx, check(), client.DryRunAll), want)
	// tickstack-xdpd serves bypass pods; a restore does not need it (a rollback may remove it)
	if err := dryDelete(xdpd); err != nil {
		t.Errorf("deleting tickstack-xdpd with a profile: %v", err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns.Name,
		Labels: map[string]string{tsv1.UninstallGuardLabel: "protected"}}}
	if err := c.Create(ctx, other); err != nil {
		t.Errorf("creating a ConfigMap that is not the uninstall check, with a profile: %v", err)
	}

	if err := c.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	state := &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	state.Spec.Profile.Name = profile.Name
	if err := c.Create(ctx, state); err != nil {
		t.Fatal(err)
	}
	want = "LatencyNodeState node-a (profile " + profile.Name + ") still tunes node node-a"
	err = eventually(func() error { return dryDelete(ds) }, func(err error) bool { return err != nil && strings.Contains(err.Error(), want) })
	refused("deleting the agent DaemonSet with a node state left", err, want)
	refused("creating the uninstall check with a node state left", c.Create(ctx, check(), client.DryRunAll), want)

	if err := c.Delete(ctx, state); err != nil {
		t.Fatal(err)
	}
	err = eventually(func() error { return dryDelete(ds) }, func(err error) bool { return err == nil })
	if err != nil {
		t.Errorf("deleting the agent DaemonSet with no profile and no node state: %v", err)
	}
	for _, o := range []client.Object{deploy, ns, role, crd} {
		if err := dryDelete(o); err != nil {
			t.Errorf("deleting %T %s with no profile and no node state: %v", o, o.GetName(), err)
		}
	}
	if err := c.Create(ctx, check()); err != nil {
		t.Errorf("creating the uninstall check with no profile and no node state: %v", err)
	}
}

// eventually retries f for up to 30 s until done says its error is the one awaited, and returns
// the last error.
func eventually(f func() error, done func(error) bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if done(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into client.Object) {
	t.Helper()
	if err := kubetest.Scheme().Convert(u, into, nil); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// sampleProfile is config/samples/latencyprofile.yaml.
func sampleProfile(t *testing.T) *tsv1.LatencyProfile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "latencyprofile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range kubetest.DecodeObjects(t, raw) {
		if o.GetKind() == "LatencyProfile" {
			p := &tsv1.LatencyProfile{}
			fromUnstructured(t, o, p)
			return p
		}
	}
	t.Fatal("config/samples/latencyprofile.yaml has no LatencyProfile")
	return nil
}
