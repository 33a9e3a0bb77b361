package controllers

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/node"
)

// createGatedProfile creates a profile of the nodes labelled key=value that keeps the unvalidated
// taint on them until they are validated; it is deleted when the spec ends.
func createGatedProfile(name, key, value string) *tsv1.LatencyProfile {
	GinkgoHelper()
	p := &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
			Validation:   &tsv1.ValidationSpec{TaintUntilValidated: true},
		},
	}
	Expect(k8s.Create(ctx, p)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed()) })
	return p
}

var _ = Describe("Node validation", func() {
	It("keeps the agent's tuning-pending taint when its cached Node is behind", func() {
		p := createGatedProfile("nv-stale", "nv/select", "none")
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nv-stale"}}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, n))).To(Succeed()) })

		// What a cache that has not caught up shows: the node in the gated profile, without the
		// taint its agent has put on since.
		stale := n.DeepCopy()
		stale.Labels = map[string]string{tsv1.ProfileLabel: p.Name}
		cur := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), cur)).To(Succeed())
		cur.Spec.Taints = append(cur.Spec.Taints, corev1.Taint{Key: tsv1.TuningPendingTaint, Effect: corev1.TaintEffectNoSchedule})
		Expect(k8s.Update(ctx, cur)).To(Succeed())

		ww, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		behind := interceptor.NewClient(ww, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if got, ok := obj.(*corev1.Node); ok && key.Name == n.Name {
					stale.DeepCopyInto(got)
					return nil
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		r := &node.NodeValidationReconciler{Client: behind}
		_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(n)})
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a taint patch over an old version is refused: %v", err)

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), cur)).To(Succeed())
		Expect(cur.Spec.Taints).To(ContainElement(HaveField("Key", tsv1.TuningPendingTaint)), "the agent's taint stays")
	})
})
