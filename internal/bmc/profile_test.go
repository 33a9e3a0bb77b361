package bmc

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestBMCConfigNamesTheMissingKey(t *testing.T) {
	obj := &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: tsv1.BMCSpec{Endpoint: "https://b",
		CredentialsSecret: tsv1.SecretKeyReference{Namespace: "ns", Name: "s"}, TLS: &tsv1.BMCTLS{InsecureSkipVerify: true}}}
	_, err := ConfigFrom(obj, &corev1.Secret{Data: map[string][]byte{"username": []byte("u")}})
	if err == nil || !strings.Contains(err.Error(), "Secret ns/s has no password key") {
		t.Errorf("got %v", err)
	}
	cfg, err := ConfigFrom(obj, &corev1.Secret{Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}})
	if err != nil || !cfg.InsecureSkipVerify || cfg.CABundle != nil || cfg.Credentials.Password != "p" {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if ObjectName(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{tsv1.BMCAnnotation: "rack7-bmc"}}}) != "rack7-bmc" {
		t.Error("the node's annotation must name its BMC object")
	}
}
