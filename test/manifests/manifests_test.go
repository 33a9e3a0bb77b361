// Package manifests checks that the kustomize install (config/default) builds and that every object in
// it is accepted by a real kube-apiserver.
package manifests

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tickstack/tickstack/internal/testutil"
)

func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	assets, err := testutil.EnvtestAssets()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

func TestDefaultInstallIsAcceptedByTheAPIServer(t *testing.T) {
	objs := kustomize(t, filepath.Join("..", "..", "config", "default"))
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "ClusterRole" &&
			o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "ValidatingWebhookConfiguration" && o.GetKind() != "MutatingWebhookConfiguration" &&
			o.GetNamespace() != "tickstack-system" {
			t.Errorf("%s %s is in namespace %q, want tickstack-system", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Deployment", "ClusterRole", "ServiceAccount", "Service", "ValidatingWebhookConfiguration"} {
		if kinds[k] == 0 {
			t.Errorf("config/default has no %s", k)
		}
	}

	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Namespaces and CRDs for real (the rest depends on them), everything else as a server-side dry run.
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if err := c.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}
