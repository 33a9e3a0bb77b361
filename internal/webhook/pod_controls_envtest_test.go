package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestPodControlsThroughTheAPIServer admits and refuses the per-pod control annotations
// (tickstack.io/irq-load-balancing, ...) through a real kube-apiserver calling the pod webhook:
// only a Guaranteed pod with whole CPUs whose profile allows the control passes, and every refusal
// names the annotation.
func TestPodControlsThroughTheAPIServer(t *testing.T) {
	w := serveWebhooks(t)
	k8s := w.c
	ctx := context.Background()
	const ns = "tspc-pods"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	allowing := bypassProfile("tspc-allows")
	allowing.Spec.PodControls = &tsv1.PodControlsSpec{Allow: []tsv1.PodControl{tsv1.PodControlIRQLoadBalancing, tsv1.PodControlCPUCStates}}
	plain := bypassProfile("tspc-plain")
	for _, p := range []*tsv1.LatencyProfile{allowing, plain} {
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	}
	pod := func(name, profile string, ann map[string]string) *corev1.Pod {
		p := guaranteedPod(name, profile)
		p.Namespace = ns
		p.Annotations = ann
		return p
	}

	t.Run("an allowed control on a Guaranteed pod with whole CPUs is admitted and kept", func(t *testing.T) {
		p := pod("ok", allowing.Name, map[string]string{tsv1.IRQLoadBalancingAnnotation: "disable", tsv1.CPUCStatesAnnotation: "max_latency:10"})
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatalf("refused: %v", err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		if p.Annotations[tsv1.IRQLoadBalancingAnnotation] != "disable" || p.Annotations[tsv1.MutatedAnnotation] != allowing.Name ||
			p.Annotations[tsv1.NRIRequiredPluginsAnnotation] != `["tickstack"]` {
			t.Errorf("annotations after admission: %v (want the NRI plugin required)", p.Annotations)
		}
	})

	t.Run("a pod's own required NRI plugins are kept", func(t *testing.T) {
		p := pod("own", allowing.Name, map[string]string{tsv1.IRQLoadBalancingAnnotation: "disable", tsv1.NRIRequiredPluginsAnnotation: `["other"]`})
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatalf("refused: %v", err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		if got := p.Annotations[tsv1.NRIRequiredPluginsAnnotation]; got != `["other","tickstack"]` {
			t.Errorf("required NRI plugins %s", got)
		}
	})

	t.Run("a pod without controls gets no required NRI plugin", func(t *testing.T) {
		p := pod("none", allowing.Name, nil)
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatalf("refused: %v", err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		if _, ok := p.Annotations[tsv1.NRIRequiredPluginsAnnotation]; ok {
			t.Errorf("annotations %v", p.Annotations)
		}
	})

	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"a control the profile does not allow", pod("gov", allowing.Name, map[string]string{tsv1.CPUFreqGovernorAnnotation: "performance"}),
			[]string{"annotation tickstack.io/cpu-freq-governor", "LatencyProfile tspc-allows", "does not allow the control cpuFreqGovernor", "spec.podControls.allow"}},
		{"a profile without podControls", pod("plain", plain.Name, map[string]string{tsv1.IRQLoadBalancingAnnotation: "disable"}),
			[]string{"annotation tickstack.io/irq-load-balancing", "LatencyProfile tspc-plain", "does not allow the control irqLoadBalancing"}},
		{"a bad value", pod("bad", allowing.Name, map[string]string{tsv1.CPUCStatesAnnotation: "max_latency:soon"}),
			[]string{`annotation tickstack.io/cpu-c-states="max_latency:soon"`, "max_latency:10"}},
		{"a pod on shared CPUs", pod("shared", allowing.Name, map[string]string{tsv1.IRQLoadBalancingAnnotation: "disable", tsv1.ExclusiveCPUsAnnotation: "false"}),
			[]string{"annotation tickstack.io/irq-load-balancing acts on the pod's exclusive CPUs", "tickstack.io/exclusive-cpus=false"}},
		{"a fractional CPU", func() *corev1.Pod {
			p := pod("frac", allowing.Name, map[string]string{tsv1.IRQLoadBalancingAnnotation: "disable"})
			half := resource.MustParse("1500m")
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = half
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = half
			return p
		}(), []string{"annotation tickstack.io/irq-load-balancing needs a Guaranteed pod with whole CPUs", "whole number"}},
		{"a Burstable pod", func() *corev1.Pod {
			p := pod("burst", allowing.Name, map[string]string{tsv1.CPUCStatesAnnotation: "disable"})
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
			return p
		}(), []string{"annotation tickstack.io/cpu-c-states needs a Guaranteed pod with whole CPUs", "Guaranteed QoS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused naming the annotation", func(t *testing.T) {
			err := k8s.Create(ctx, tc.pod)
			if err == nil {
				_ = k8s.Delete(context.Background(), tc.pod, client.GracePeriodSeconds(0))
				t.Fatal("admitted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestPodControlsAgainstNodeWidePower: a profile may not allow a per-pod control on a setting it
// also sets node-wide (the agent would write its own value back over the pod's).
func TestPodControlsAgainstNodeWidePower(t *testing.T) {
	spec := bypassProfile("x").Spec
	max := int32(10)
	spec.Power = &tsv1.PowerSpec{MaxCStateExitLatencyMicroseconds: &max, Governor: "performance"}
	spec.PodControls = &tsv1.PodControlsSpec{Allow: []tsv1.PodControl{tsv1.PodControlIRQLoadBalancing, tsv1.PodControlCPUCStates, tsv1.PodControlCPUFreqGovernor}}
	_, errs := ValidateProfileSpec(&spec, field.NewPath("spec"))
	got := errs.ToAggregate()
	if got == nil || !strings.Contains(got.Error(), "spec.podControls.allow[1]") || !strings.Contains(got.Error(), "spec.podControls.allow[2]") ||
		strings.Contains(got.Error(), "allow[0]") {
		t.Errorf("errors %v: want allow[1] (C-states) and allow[2] (governor) refused, allow[0] not", got)
	}
}
