package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

func TestRenewAt(t *testing.T) {
	end := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := renewAt(end, 90*time.Hour); !got.Equal(end.Add(-30 * time.Hour)) {
		t.Errorf("renewAt = %v", got)
	}
}

// With short lifetimes the serving certificate and then the CA are renewed while the API server
// keeps calling the webhook: the Secret and the caBundle change, and every admission succeeds.
func TestRotationKeepsTheWebhookServing(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	env, _ := kubetest.New(t, kubetest.Options{NoCRDs: true, Webhooks: true})
	cfg := env.Config
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns = "tspw-certs"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	certs := &Manager{Client: k8s, Options: Options{
		Namespace: ns, SecretName: "tspw-webhook-cert", ServiceName: "webhook-service", IPAddresses: []string{"127.0.0.1"},
		MutatingWebhooks: []string{"mutating-webhook-configuration"}, ValidatingWebhooks: []string{"validating-webhook-configuration"},
		CertLifetime: 3 * time.Second, CALifetime: 7 * time.Second,
	}}
	host, port := env.WebhookHostPort()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: host, Port: port,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = certs.GetCertificate }},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// A stand-in for the pod webhook: it marks the pods it admitted.
	mgr.GetWebhookServer().Register("/mutate--v1-pod", &webhook.Admission{Handler: admission.HandlerFunc(
		func(_ context.Context, req admission.Request) admission.Response {
			pod := &corev1.Pod{}
			if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
				return admission.Errored(http.StatusBadRequest, err)
			}
			pod.Annotations = map[string]string{"tspw.test/admitted": "true"}
			raw, _ := json.Marshal(pod)
			return admission.PatchResponseFromRaw(req.Object.Raw, raw)
		})})
	if err := mgr.Add(certs); err != nil {
		t.Fatal(err)
	}
	testutil.RunInBackground(t, ctx, "manager", mgr.Start)

	secret := func() map[string][]byte {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tspw-webhook-cert"}, s); err != nil {
			return nil
		}
		return s.Data
	}
	caBundles := func() ([]byte, []byte) {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if k8s.Get(ctx, client.ObjectKey{Name: "mutating-webhook-configuration"}, m) != nil ||
			k8s.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, v) != nil {
			return nil, nil
		}
		return m.Webhooks[0].ClientConfig.CABundle, v.Webhooks[0].ClientConfig.CABundle
	}
	published := func() error {
		d := secret()
		if d == nil {
			return fmt.Errorf("no Secret yet")
		}
		m, v := caBundles()
		if !bytes.Equal(m, d[KeyBundle]) || !bytes.Equal(v, d[KeyBundle]) {
			return fmt.Errorf("caBundles differ from the Secret's bundle")
		}
		return nil
	}
	n := 0
	admit := func(t *testing.T) {
		t.Helper()
		n++
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tspw-pod-%d", n), Namespace: ns, Labels: map[string]string{"tickstack.io/profile": "x"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "localhost/x:dev"}}},
		}
		// The webhook may be mid-rotation for the first attempt; it must admit within a few tries.
		testutil.Poll(t, 10*time.Second, "admitting a pod through the webhook", func() error { return k8s.Create(ctx, pod) })
		if pod.Annotations["tspw.test/admitted"] != "true" {
			t.Fatalf("pod %s was not admitted by the webhook", pod.Name)
		}
	}

	testutil.Poll(t, 20*time.Second, "certificate issued and published", published)
	admit(t)
	first := secret()

	testutil.Poll(t, 20*time.Second, "serving certificate renewed", func() error {
		if bytes.Equal(secret()[KeyCert], first[KeyCert]) {
			return fmt.Errorf("tls.crt unchanged")
		}
		return published()
	})
	admit(t)

	testutil.Poll(t, 20*time.Second, "CA renewed, the old one still in the bundle", func() error {
		d := secret()
		if bytes.Equal(d[KeyCACert], first[KeyCACert]) {
			return fmt.Errorf("ca.crt unchanged")
		}
		if old := parseCerts(first[KeyCACert]); time.Now().Before(old[0].NotAfter) && !bytes.Contains(d[KeyBundle], first[KeyCACert]) {
			t.Fatalf("the bundle lost the previous CA while it is still valid (until %v)", old[0].NotAfter)
		}
		return published()
	})
	admit(t)
	testutil.Poll(t, 20*time.Second, "a serving certificate of the new CA", func() error {
		d := secret()
		cas, served := parseCerts(d[KeyCACert]), parseCerts(d[KeyCert])
		if len(cas) == 0 || len(served) == 0 || served[0].CheckSignatureFrom(cas[0]) != nil {
			return fmt.Errorf("tls.crt not yet signed by the current CA")
		}
		return published()
	})
	admit(t)
	m, _ := caBundles()
	if bytes.Equal(m, first[KeyBundle]) {
		t.Error("caBundle did not change with the CA")
	}
}
