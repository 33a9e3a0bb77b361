package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func bmcObject(name, ns string, tls *tsv1.BMCTLS, endpoint string, plain bool) *tsv1.BMC {
	return &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tsv1.BMCSpec{
		Endpoint: endpoint, CredentialsSecret: tsv1.SecretKeyReference{Namespace: ns, Name: "creds"}, TLS: tls, AllowPlainHTTP: plain}}
}

var _ = Describe("BMC objects", func() {
	It("are accepted only with verified TLS and a Secret in the operator's namespace, and say so in their status", func() {
		objs := map[string]*tsv1.BMC{
			"tsbmc-ok":        bmcObject("tsbmc-ok", operatorNS, &tsv1.BMCTLS{SystemRoots: true}, "https://b", false),
			"tsbmc-elsewhere": bmcObject("tsbmc-elsewhere", "default", &tsv1.BMCTLS{SystemRoots: true}, "https://b", false),
			"tsbmc-skip":      bmcObject("tsbmc-skip", operatorNS, &tsv1.BMCTLS{InsecureSkipVerify: true}, "https://b", false),
		}
		want := map[string][2]string{
			"tsbmc-ok":        {tsv1.ReasonBMCAccepted, tsv1.ReasonBMCTransportVerified},
			"tsbmc-elsewhere": {tsv1.ReasonBMCSecretNamespace, tsv1.ReasonBMCTransportVerified},
			"tsbmc-skip":      {tsv1.ReasonBMCInsecureRefused, tsv1.ReasonBMCInsecureSkipVerify},
		}
		for _, o := range objs {
			Expect(k8s.Create(ctx, o)).To(Succeed())
			DeferCleanup(func() { _ = k8s.Delete(ctx, o) })
		}
		for name, reasons := range want {
			Eventually(func(g Gomega) {
				got := &tsv1.BMC{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
				acc := meta.FindStatusCondition(got.Status.Conditions, tsv1.BMCAccepted)
				ins := meta.FindStatusCondition(got.Status.Conditions, tsv1.BMCInsecureTransport)
				g.Expect(acc).NotTo(BeNil())
				g.Expect(ins).NotTo(BeNil())
				g.Expect([2]string{acc.Reason, ins.Reason}).To(Equal(reasons), "BMC %s: Accepted %s, InsecureTransport %s", name, acc.Message, ins.Message)
			}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
		}
	})
})
