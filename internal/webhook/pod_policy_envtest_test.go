package webhook

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

const podPolicyName = "tickstack-latency-pod-security"

// TestPodPolicyRechecksAfterMutation installs config/default's latency pod policy on a real
// kube-apiserver with no webhook at all (as if a later mutating webhook had undone the pod webhook's
// work, or the pod reached the API server some other way): a pod the webhook mutated is admitted,
// and each rule refuses a labelled pod that breaks it, debug containers included.
func TestPodPolicyRechecksAfterMutation(t *testing.T) {
	_, k8s := kubetest.New(t, kubetest.Options{})
	ctx := context.Background()
	installed := 0
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		if (o.GetKind() == "ValidatingAdmissionPolicy" || o.GetKind() == "ValidatingAdmissionPolicyBinding") && o.GetName() == podPolicyName {
			o.SetNamespace("")
			if err := k8s.Create(ctx, o); err != nil {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
			installed++
		}
	}
	if installed != 2 {
		t.Fatalf("config/default has %d of the policy %s and its binding, want 2", installed, podPolicyName)
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tspwNamespace}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	create := func(pod *corev1.Pod) error {
		n++
		pod.Name = fmt.Sprintf("%s-%d", pod.Name, n)
		err := k8s.Create(ctx, pod)
		if err == nil {
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
		}
		return err
	}
	// The binding takes effect asynchronously: poll until a labelled host-network pod is refused.
	testutil.Poll(t, 30*time.Second, "the latency pod policy in force", func() error {
		pod := guaranteedPod("tspw-probe", "p")
		pod.Spec.HostNetwork = true
		if err := create(pod); err == nil || !strings.Contains(err.Error(), "may not use spec.hostNetwork") {
			return fmt.Errorf("not yet refused: %v", err)
		}
		return nil
	})

	mutated := func(t *testing.T) *corev1.Pod {
		t.Helper()
		pod := guaranteedPod("tspw-mutated", "p")
		if err := MutatePod(pod, bypassProfile("p"), PodOptions{DataplaneImage: tspwImage, XDPRunDir: DefaultXDPRunDir, ResourcePrefix: tsv1.DefaultResourcePrefix}); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	t.Run("a pod as the webhook mutates it is admitted", func(t *testing.T) {
		if err := create(mutated(t)); err != nil {
			t.Fatal(err)
		}
	})
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true }, "may not use spec.hostNetwork, spec.hostPID or spec.hostIPC"},
		{"a privileged init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "setup", Image: "i",
				Resources: *p.Spec.Containers[0].Resources.DeepCopy(), SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}})
		}, "may set securityContext.privileged or allowPrivilegeEscalation"},
		{"a latency container adding NET_ADMIN", func(p *corev1.Pod) {
			sc := p.Spec.Containers[0].SecurityContext
			sc.Capabilities.Add = append(sc.Capabilities.Add, "NET_ADMIN")
		}, "may add only the capabilities NET_RAW, IPC_LOCK and SYS_NICE"},
		{"runAsUser 0", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)} },
			"may not set runAsUser 0"},
		{"seccomp Unconfined", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, "may not run with seccompProfile Unconfined"},
		{"a hostPath volume under the reserved name tickstack-xdp", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: XDPVolume, VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, "volume name tickstack-xdp is reserved"},
		{"an emptyDir under the reserved name tickstack-xdp, mounted", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: XDPVolume, VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: XDPVolume, MountPath: "/x"})
		}, "volume name tickstack-xdp is reserved"},
		{"the daemon's socket in a container keeping its capabilities", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Drop = nil
		}, "holding tickstack.io/xdpd must drop ALL capabilities"},
		{"the daemon's socket in a container that does not forbid escalation", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}, "holding tickstack.io/xdpd must drop ALL capabilities and set allowPrivilegeEscalation false"},
		{"an init container tickstack-dataplane running as root", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = nil
		}, "init container tickstack-dataplane of a latency pod (tickstack.io/profile) must run as non-root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := mutated(t)
			c.mutate(pod)
			err := create(pod)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), podPolicyName) {
				t.Errorf("want the policy's refusal %q, got %v", c.want, err)
			}
		})
	}
	t.Run("a debug container is checked too", func(t *testing.T) {
		pod := mutated(t)
		if err := create(pod); err != nil {
			t.Fatal(err)
		}
		pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "i", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}}}}
		err := k8s.SubResource("ephemeralcontainers").Update(ctx, pod)
		if err == nil || !strings.Contains(err.Error(), "may add only the capabilities") {
			t.Errorf("a debug container adding SYS_ADMIN: want the policy's refusal, got %v", err)
		}
	})
}
