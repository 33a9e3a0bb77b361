package plan

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestAddBIOSFoldsTheRebootIntoOne(t *testing.T) {
	p := &Plan{Profile: "x", Nodes: []NodePlan{
		{Node: "kernel-and-bios", Action: Apply, Reboot: true},
		{Node: "bios-only", Action: Unchanged},
		{Node: "in-effect", Action: Unchanged},
	}}
	p.AddBIOS("kernel-and-bios", &BIOSPlan{BMC: "https://b1", Reboot: true, Changes: []Change{{Setting: "bios/A", From: "on", To: "off"}}})
	p.AddBIOS("bios-only", &BIOSPlan{BMC: "https://b2", Reboot: true, Changes: []Change{{Setting: "bios/A", To: "off"}}})
	p.AddBIOS("in-effect", &BIOSPlan{BMC: "https://b3"})
	var out bytes.Buffer
	p.Print(&out)
	for _, want := range []string{
		"3 nodes in the plan, 2 would change, 2 would reboot",
		"node kernel-and-bios: apply (reboot required: one reboot for the kernel arguments and the BIOS settings)\n  BIOS via https://b1:\n  ~ bios/A: on -> off",
		"node bios-only: apply (reboot required: BIOS settings)\n  BIOS via https://b2:\n  ~ bios/A: (none) -> off",
		"node in-effect: unchanged\n  BIOS via https://b3: every attribute already in effect",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBMCConfigNamesTheMissingKey(t *testing.T) {
	obj := &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: tsv1.BMCSpec{Endpoint: "https://b",
		CredentialsSecret: tsv1.SecretKeyReference{Namespace: "ns", Name: "s"}, TLS: &tsv1.BMCTLS{InsecureSkipVerify: true}}}
	_, err := BMCConfig(obj, &corev1.Secret{Data: map[string][]byte{"username": []byte("u")}})
	if err == nil || !strings.Contains(err.Error(), "Secret ns/s has no password key") {
		t.Errorf("got %v", err)
	}
	cfg, err := BMCConfig(obj, &corev1.Secret{Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}})
	if err != nil || !cfg.InsecureSkipVerify || cfg.CABundle != nil || cfg.Credentials.Password != "p" {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if BMCName(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{tsv1.BMCAnnotation: "rack7-bmc"}}}) != "rack7-bmc" {
		t.Error("the node's annotation must name its BMC object")
	}
}
