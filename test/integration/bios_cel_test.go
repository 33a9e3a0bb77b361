package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
)

// TestBIOSAndBMCValidationOnTheAPIServer: the real API server refuses a bios section without a
// preset or attributes, a bad attribute name, and BMC objects with no or two TLS trust choices, an
// https endpoint without tls, an http endpoint without allowPlainHTTP and credentials in the URL,
// each with a message naming the field.
func TestBIOSAndBMCValidationOnTheAPIServer(t *testing.T) {
	c, err := client.New(restCfg, client.Options{Scheme: agenttest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secret := tsv1.SecretKeyReference{Namespace: "ns", Name: "s"}
	cases := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"empty bios", &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-empty")},
			Spec: tsv1.LatencyProfileSpec{BIOS: &tsv1.BIOSSpec{Preset: tsv1.BIOSPresetNone}}},
			"bios needs a preset other than None or at least one entry in bios.attributes"},
		{"bad attribute name", &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-name")},
			Spec: tsv1.LatencyProfileSpec{BIOS: &tsv1.BIOSSpec{Attributes: []tsv1.BIOSAttribute{{Name: "Proc Turbo", Value: "x"}}}}},
			"spec.bios.attributes[0].name"},
		{"unknown preset", &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-preset")},
			Spec: tsv1.LatencyProfileSpec{BIOS: &tsv1.BIOSSpec{Preset: "Acme"}}},
			"spec.bios.preset"},
		{"two trust choices", &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-two")}, Spec: tsv1.BMCSpec{
			Endpoint: "https://b", CredentialsSecret: secret, TLS: &tsv1.BMCTLS{SystemRoots: true, InsecureSkipVerify: true}}},
			"choose exactly one of caBundle, systemRoots: true and insecureSkipVerify: true"},
		{"https without tls", &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-notls")}, Spec: tsv1.BMCSpec{
			Endpoint: "https://b", CredentialsSecret: secret}},
			"an https endpoint needs tls"},
		{"plain http", &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-http")}, Spec: tsv1.BMCSpec{
			Endpoint: "http://b", CredentialsSecret: secret}},
			"an http endpoint needs allowPlainHTTP: true"},
		{"credentials in the URL", &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-userinfo")}, Spec: tsv1.BMCSpec{
			Endpoint: "https://root:calvin@b", CredentialsSecret: secret, TLS: &tsv1.BMCTLS{SystemRoots: true}}},
			"spec.endpoint"},
	}
	for _, tc := range cases {
		err := c.Create(ctx, tc.obj)
		if err == nil {
			_ = c.Delete(ctx, tc.obj)
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: refused with %q, want it to mention %q", tc.name, err, tc.want)
		}
	}
	// The good forms are accepted.
	for _, obj := range []client.Object{
		&tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-ok")}, Spec: tsv1.BMCSpec{Endpoint: "https://b:8443", CredentialsSecret: secret, TLS: &tsv1.BMCTLS{CABundle: "pem"}}},
		&tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-ok-http")}, Spec: tsv1.BMCSpec{Endpoint: "http://b", CredentialsSecret: secret, AllowPlainHTTP: true}},
		&tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: biosName("cel-ok")}, Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": biosName("none")}},
			BIOS:         &tsv1.BIOSSpec{Preset: tsv1.BIOSPresetAuto}}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Errorf("%s refused: %v", obj.GetName(), err)
			continue
		}
		_ = c.Delete(ctx, obj)
	}
}
