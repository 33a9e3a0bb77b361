// Package kubetest starts a real kube-apiserver for tests and reads manifests. It is apart from
// testutil because it imports the API, which packages the API imports (internal/bench) must not.
package kubetest

import (
	"bytes"
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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
)

// Scheme returns a scheme with the Kubernetes built-ins, CRDs and tickstack's API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(tsv1.AddToScheme(s))
	return s
}

// StartAPIServer runs a real kube-apiserver and etcd (envtest) for the test, with the CRDs found in
// crdDirs installed, and stops it when the test ends.
func StartAPIServer(t testing.TB, crdDirs ...string) (*rest.Config, client.Client) {
	t.Helper()
	if _, err := testutil.EnvtestAssets(); err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: len(crdDirs) > 0}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver (envtest): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// DecodeObjects splits a multi-document YAML or JSON stream into objects, skipping empty documents.
func DecodeObjects(t testing.TB, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding manifests: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// Kustomize builds a kustomize directory with the kubectl of the envtest assets.
func Kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
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
	return DecodeObjects(t, out)
}
