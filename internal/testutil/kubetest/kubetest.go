// Package kubetest starts a real kube-apiserver for tests (the one envtest start helper) and reads
// manifests. It is apart from testutil because it imports the API.
package kubetest

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

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

// Options choose what an Env installs besides the API server.
type Options struct {
	// NoCRDs starts the API server with the built-in resources only.
	NoCRDs bool
	// CRDs replaces the default CRD directories or files (relative to the repository root).
	CRDs []string
	// Webhooks installs the admission webhook configurations of config/webhook, pointed at a
	// local webhook server (Env.WebhookServer).
	Webhooks bool
}

// DefaultCRDs are the CRDs an Env installs unless told otherwise: tickstack's own and the
// third-party kinds its controllers watch (NetworkAttachmentDefinition, NodeFeatureRule), relative
// to the repository root.
func DefaultCRDs() []string { return []string{"config/crd/bases", "internal/render/testdata/crds"} }

// Env is a real kube-apiserver and etcd (envtest): the one way the tests start one.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	env    *envtest.Environment
}

// Start starts an Env. Stop it with Stop.
func Start(o Options) (*Env, error) {
	if _, err := testutil.EnvtestAssets(); err != nil {
		return nil, err
	}
	root, err := testutil.RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{}
	if !o.NoCRDs {
		dirs := o.CRDs
		if dirs == nil {
			dirs = DefaultCRDs()
		}
		for _, d := range dirs {
			env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, filepath.Join(root, d))
		}
		env.ErrorIfCRDPathMissing = true
	}
	if o.Webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver (envtest): %w", err)
	}
	return &Env{Config: cfg, env: env}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// WebhookServer is a webhook server serving where the installed webhook configurations point.
func (e *Env) WebhookServer() webhook.Server {
	wh := &e.env.WebhookInstallOptions
	return webhook.NewServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir})
}

// WebhookHostPort is where the installed webhook configurations call: a webhook server that brings
// its own certificate listens there.
func (e *Env) WebhookHostPort() (string, int) {
	wh := &e.env.WebhookInstallOptions
	return wh.LocalServingHost, wh.LocalServingPort
}

// AddUser adds an authenticated user without permissions (bind roles to it), for tests of what a
// restricted user sees.
func (e *Env) AddUser(u envtest.User) (*envtest.AuthenticatedUser, error) {
	return e.env.AddUser(u, nil)
}

// AddAdmin adds a system:masters user named name and writes its kubeconfig to a file of the
// test's, for the processes a test starts (an agent, kwok, the manager): it returns the user and
// the file.
func (e *Env) AddAdmin(t testing.TB, name string) (*envtest.AuthenticatedUser, string) {
	t.Helper()
	admin, err := e.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return admin, kubeconfig
}

// WebhookAddress is the host:port the installed webhook configurations call.
func (e *Env) WebhookAddress() string {
	wh := &e.env.WebhookInstallOptions
	return net.JoinHostPort(wh.LocalServingHost, fmt.Sprint(wh.LocalServingPort))
}

// WaitForWebhooks polls until the local webhook server accepts TLS connections.
func (e *Env) WaitForWebhooks(timeout time.Duration) error {
	addr := e.WebhookAddress()
	deadline := time.Now().Add(timeout)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // local test server
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server at %s not serving after %v: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// New starts an Env for one test, stopped when the test ends, and returns it with a client.
func New(t testing.TB, o Options) (*Env, client.Client) {
	t.Helper()
	e, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	c, err := client.New(e.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return e, c
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
