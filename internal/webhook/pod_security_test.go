package webhook

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestPodSecurityRefusals: every container kind of a labelled pod is held to the rules, and each
// refusal names the field.
func TestPodSecurityRefusals(t *testing.T) {
	opts := PodOptions{ResourcePrefix: "example.com", DataplaneImage: "img", NetworkNamespace: "ops"}
	limited := guaranteedPod("x", "p").Spec.Containers[0].Resources
	side := func(sc *corev1.SecurityContext) corev1.Container {
		return corev1.Container{Name: "side", Image: "i", Resources: *limited.DeepCopy(), SecurityContext: sc}
	}
	cases := []struct {
		name string
		pod  func(*corev1.Pod)
		want string
	}{
		{"hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "spec.hostNetwork is true"},
		{"hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true }, "spec.hostPID is true"},
		{"hostIPC", func(p *corev1.Pod) { p.Spec.HostIPC = true }, "spec.hostIPC is true"},
		{"pod runAsUser 0", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)} },
			"spec.securityContext.runAsUser is 0"},
		{"pod seccomp Unconfined", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}, "spec.securityContext.seccompProfile.type is Unconfined"},
		{"a privileged second container", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, side(&corev1.SecurityContext{Privileged: ptr.To(true)}))
		}, "spec.containers[1].securityContext.privileged (container side) is true"},
		{"a privileged init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{side(&corev1.SecurityContext{Privileged: ptr.To(true)})}
		}, "spec.initContainers[0].securityContext.privileged (container side) is true"},
		{"an init container adding SYS_ADMIN", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{side(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}})}
		}, "spec.initContainers[0].securityContext.capabilities.add[0] (container side) adds capability SYS_ADMIN"},
		{"the latency container adding CAP_NET_ADMIN", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW", "CAP_NET_ADMIN"}}}
		}, "spec.containers[0].securityContext.capabilities.add[1] (container trader) adds capability CAP_NET_ADMIN"},
		{"a second container running as root", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, side(&corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}))
		}, "spec.containers[1].securityContext.runAsUser (container side) is 0"},
		{"an unmasked /proc", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
		}, "spec.containers[0].securityContext.procMount (container trader) is Unmasked"},
		{"a container seccomp Unconfined", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}, "spec.containers[0].securityContext.seccompProfile.type (container trader) is Unconfined"},
		{"an ephemeral container with privilege", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
		}, "spec.ephemeralContainers[0].securityContext.privileged (container debug) is true"},
		{"a volume named tickstack-xdp", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tickstack-xdp", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, `spec.volumes[0].name "tickstack-xdp" is reserved`},
		{"a volume named tickstack-hugepages", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data"}, {Name: HugepagesVolume}}
		}, `spec.volumes[1].name "tickstack-hugepages" is reserved`},
		{"a mount named tickstack-dataplane", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: DataplaneVolume, MountPath: "/x"}}
		}, `spec.containers[0].volumeMounts[0].name "tickstack-dataplane" (container trader) is reserved`},
		{"an init container named tickstack-dataplane", func(p *corev1.Pod) {
			c := side(nil)
			c.Name = DataplaneInitContainer
			p.Spec.InitContainers = []corev1.Container{c}
		}, `spec.initContainers[0].name "tickstack-dataplane" is reserved`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := guaranteedPod("x", "p")
			c.pod(pod)
			before := pod.DeepCopy()
			err := MutatePod(pod, bypassProfile("p"), opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want refusal %q, got %v", c.want, err)
			}
			if len(pod.Spec.InitContainers) != len(before.Spec.InitContainers) {
				t.Error("a refused pod was changed")
			}
		})
	}
}

// TestPodSecurityAllows: what the rules leave alone (image-default users, SYS_NICE, RuntimeDefault
// seccomp, an unprivileged sidecar) is admitted, and the injected init container is restricted.
func TestPodSecurityAllows(t *testing.T) {
	pod := guaranteedPod("x", "p")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_NICE"}}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Resources: *pod.Spec.Containers[0].Resources.DeepCopy(),
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}})
	if err := MutatePod(pod, bypassProfile("p"), PodOptions{DataplaneImage: "img"}); err != nil {
		t.Fatal(err)
	}
	init := pod.Spec.InitContainers[0]
	sc := init.SecurityContext
	if init.Name != DataplaneInitContainer || sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.RunAsUser, 0) == 0 ||
		ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("init container %s security context %+v: want runAsNonRoot, a non-zero uid, no escalation, read-only root, drop ALL, seccomp RuntimeDefault", init.Name, sc)
	}
	if pod.Spec.Containers[1].SecurityContext.Capabilities != nil {
		t.Errorf("a sidecar got capabilities: %+v", pod.Spec.Containers[1].SecurityContext)
	}
}
