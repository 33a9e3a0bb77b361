package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// guardName is the uninstall guard's policy (and binding) the suite's manager keeps.
const guardName = "tsug-guard"

var _ = Describe("the uninstall guard", Ordered, func() {
	ignore := admv1.Ignore
	policy := func() *admv1.ValidatingAdmissionPolicy {
		return &admv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: guardName, Labels: map[string]string{"tsug": "kept"}},
			Spec: admv1.ValidatingAdmissionPolicySpec{FailurePolicy: &ignore,
				MatchConstraints: &admv1.MatchResources{ResourceRules: []admv1.NamedRuleWithOperations{{RuleWithOperations: admv1.RuleWithOperations{
					Operations: []admv1.OperationType{admv1.Delete},
					Rule:       admv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"daemonsets"}}}}},
					ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tsug": "never"}}},
				Validations: []admv1.Validation{{Expression: "false", Message: "guarded"}}}}
	}
	binding := func() *admv1.ValidatingAdmissionPolicyBinding {
		return &admv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: guardName},
			Spec: admv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: guardName, ValidationActions: []admv1.ValidationAction{admv1.Deny}}}
	}
	uid := func(o client.Object) func() types.UID {
		return func() types.UID {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return ""
			}
			return o.GetUID()
		}
	}

	It("puts the policy and its binding back while a profile exists", func() {
		p, b := policy(), binding()
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Expect(k8s.Create(ctx, b)).To(Succeed())
		profile := validProfile("tsug")
		Expect(k8s.Create(ctx, profile)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, profile) })
		time.Sleep(time.Second) // the guard has seen both
		oldP, oldB := p.UID, b.UID
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		Expect(k8s.Delete(ctx, p)).To(Succeed())
		Eventually(uid(policy()), 10*time.Second, 100*time.Millisecond).ShouldNot(Or(BeEmpty(), Equal(oldP)))
		Eventually(uid(binding()), 10*time.Second, 100*time.Millisecond).ShouldNot(Or(BeEmpty(), Equal(oldB)))
		back := policy()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(back), back)).To(Succeed())
		Expect(back.Labels).To(HaveKeyWithValue("tsug", "kept"))
		Expect(back.Spec.Validations).To(HaveLen(1))
		Expect(back.Spec.Validations[0].Message).To(Equal("guarded"))
	})

	It("leaves them deleted when nothing is tuned", func() {
		// The previous spec's cleanup may have deleted it already.
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, validProfile("tsug")))).To(Succeed())
		Eventually(func() bool {
			var ps tsv1.LatencyProfileList
			var ss tsv1.LatencyNodeStateList
			Expect(k8s.List(ctx, &ps)).To(Succeed())
			Expect(k8s.List(ctx, &ss)).To(Succeed())
			return len(ps.Items) == 0 && len(ss.Items) == 0
		}, 30*time.Second, 200*time.Millisecond).Should(BeTrue(), "profiles or node states of other specs are left")
		Expect(k8s.Delete(ctx, binding())).To(Succeed())
		Expect(k8s.Delete(ctx, policy())).To(Succeed())
		Consistently(func() bool {
			err := k8s.Get(ctx, client.ObjectKey{Name: guardName}, policy())
			return apierrors.IsNotFound(err)
		}, 2*time.Second, 100*time.Millisecond).Should(BeTrue(), "the policy came back with nothing tuned")
	})
})
