package bios

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func bmcObject(name, ns string, tls *tsv1.BMCTLS, endpoint string, plain bool) *tsv1.BMC {
	return &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tsv1.BMCSpec{
		Endpoint: endpoint, CredentialsSecret: tsv1.SecretKeyReference{Namespace: ns, Name: "creds"}, TLS: tls, AllowPlainHTTP: plain}}
}

func TestBMCConditions(t *testing.T) {
	ca := &tsv1.BMCTLS{CABundle: "pem"}
	skip := &tsv1.BMCTLS{InsecureSkipVerify: true}
	strict := BMCPolicy{SecretNamespace: "ops"}
	lab := BMCPolicy{SecretNamespace: "ops", AllowInsecure: true}
	cases := []struct {
		name                    string
		obj                     *tsv1.BMC
		pol                     BMCPolicy
		accepted, insecure      metav1.ConditionStatus
		acceptReason, insReason string
		msg                     string
	}{
		{"verified, own namespace", bmcObject("a", "ops", ca, "https://b", false), strict,
			metav1.ConditionTrue, metav1.ConditionFalse, tsv1.ReasonBMCAccepted, tsv1.ReasonBMCTransportVerified, ""},
		{"a Secret elsewhere", bmcObject("a", "kube-system", ca, "https://b", false), strict,
			metav1.ConditionFalse, metav1.ConditionFalse, tsv1.ReasonBMCSecretNamespace, tsv1.ReasonBMCTransportVerified,
			"BMC a spec.credentialsSecret.namespace is kube-system: the operator reads credentials Secrets only in its own namespace ops"},
		{"insecureSkipVerify without consent", bmcObject("a", "ops", skip, "https://b", false), strict,
			metav1.ConditionFalse, metav1.ConditionTrue, tsv1.ReasonBMCInsecureRefused, tsv1.ReasonBMCInsecureSkipVerify,
			"BMC a spec.tls.insecureSkipVerify is set, and the manager runs without --allow-insecure-bmc"},
		{"plain HTTP without consent", bmcObject("a", "ops", nil, "http://b", true), strict,
			metav1.ConditionFalse, metav1.ConditionTrue, tsv1.ReasonBMCInsecureRefused, tsv1.ReasonBMCPlainHTTP, "spec.allowPlainHTTP is set"},
		{"insecureSkipVerify allowed: accepted with a warning", bmcObject("a", "ops", skip, "https://b", false), lab,
			metav1.ConditionTrue, metav1.ConditionTrue, tsv1.ReasonBMCAccepted, tsv1.ReasonBMCInsecureSkipVerify, ""},
		{"plain HTTP allowed: accepted with a warning", bmcObject("a", "ops", nil, "http://b", true), lab,
			metav1.ConditionTrue, metav1.ConditionTrue, tsv1.ReasonBMCAccepted, tsv1.ReasonBMCPlainHTTP, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conds := bmcConditions(c.obj, c.pol)
			acc := meta.FindStatusCondition(conds, tsv1.BMCAccepted)
			ins := meta.FindStatusCondition(conds, tsv1.BMCInsecureTransport)
			if acc == nil || acc.Status != c.accepted || acc.Reason != c.acceptReason || !strings.Contains(acc.Message, c.msg) {
				t.Errorf("Accepted %+v, want %s %s %q", acc, c.accepted, c.acceptReason, c.msg)
			}
			if ins == nil || ins.Status != c.insecure || ins.Reason != c.insReason {
				t.Errorf("InsecureTransport %+v, want %s %s", ins, c.insecure, c.insReason)
			}
		})
	}
}
