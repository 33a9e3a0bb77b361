package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
)

const (
	tspwNamespace = "tspw-pods"
	tspwNetNS     = "tspw-networks"
	tspwImage     = "localhost/tickstack/agent:dev"
)

func bypassProfile(name string) *tsv1.LatencyProfile {
	return &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tspw.test/none": "none"}},
			Hugepages:    &tsv1.HugepagesSpec{DefaultSize: "1Gi", Pages: []tsv1.HugePages{{Size: "1Gi", Count: 4}}},
			NICs: []tsv1.NICSpec{{
				Name: "md", Selector: tsv1.NICSelector{Vendor: "8086", PFNames: []string{"ens1f0#0-3"}},
				NumVFs: ptr.To[int32](8), ResourceName: "md_vf", Acceleration: tsv1.AccelerationBypass,
				Network: &tsv1.NICNetwork{Type: tsv1.NetworkSRIOV},
			}},
		},
	}
}

func guaranteedPod(name, profile string) *corev1.Pod {
	two := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tspwNamespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "trader", Image: "localhost/trader:dev",
			Resources: corev1.ResourceRequirements{Limits: two, Requests: two.DeepCopy()},
		}}},
	}
	if profile != "" {
		pod.Labels = map[string]string{tsv1.ProfileLabel: profile}
	}
	return pod
}

// TestPodWebhookThroughTheAPIServer admits good and bad pods through a real kube-apiserver that
// calls the webhook as configured by config/webhook (objectSelector, failurePolicy), then stops the
// webhook server and checks that only labelled pods are refused.
func TestPodWebhookThroughTheAPIServer(t *testing.T) {
	w := serveWebhooks(t)
	k8s := w.c

	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tspwNamespace}}); err != nil {
		t.Fatal(err)
	}
	profile := bypassProfile("tspw-bypass")
	if err := k8s.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), profile) })
	create := func(t *testing.T, pod *corev1.Pod) error {
		t.Helper()
		err := k8s.Create(ctx, pod)
		if err == nil {
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
		}
		return err
	}

	t.Run("a labelled Guaranteed pod comes back pinned, attached and preloaded", func(t *testing.T) {
		pod := guaranteedPod("tspw-good", profile.Name)
		pod.Annotations = map[string]string{tsv1.HugepagesAnnotation: "2Gi"}
		if err := create(t, pod); err != nil {
			t.Fatal(err)
		}
		c := pod.Spec.Containers[0]
		for _, r := range []corev1.ResourceName{"tickstack.io/md_vf", "hugepages-1Gi", tsv1.XDPDResource} {
			want := map[corev1.ResourceName]string{"tickstack.io/md_vf": "1", "hugepages-1Gi": "2Gi", tsv1.XDPDResource: "1"}[r]
			if q := c.Resources.Limits[r]; q.String() != want {
				t.Errorf("limit %s = %s, want %s", r, q.String(), want)
			}
			if q := c.Resources.Requests[r]; q.String() != want {
				t.Errorf("request %s = %s, want %s", r, q.String(), want)
			}
		}
		if got := pod.Annotations["k8s.v1.cni.cncf.io/networks"]; got != tspwNetNS+"/tspw-bypass-md@lat0" {
			t.Errorf("networks annotation %q", got)
		}
		terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != tsv1.ProfileLabel ||
			terms[0].MatchExpressions[0].Values[0] != profile.Name {
			t.Errorf("node affinity %+v", terms)
		}
		if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Image != tspwImage ||
			!strings.Contains(strings.Join(pod.Spec.InitContainers[0].Command, " "), "cp \"$f\" /opt/tickstack/lib/") ||
			!strings.Contains(strings.Join(pod.Spec.InitContainers[0].Command, " "), "tickstack-dump tickstack-stackdump") {
			t.Errorf("init container %+v", pod.Spec.InitContainers)
		}
		sc := c.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			len(sc.Capabilities.Add) != 0 ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("security context %+v (capabilities %+v): want drop [ALL], nothing added (the node daemon makes the XSKs), allowPrivilegeEscalation false", sc, sc.Capabilities)
		}
		if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccomp profile %+v, want RuntimeDefault", sc.SeccompProfile)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		want := map[string]string{"LD_PRELOAD": "/opt/tickstack/lib/libtickstack.so", "TICKSTACK_PROFILE": "latency", "TICKSTACK_IFACES": "lat0",
			"TICKSTACK_REQUIRE": "1", "TICKSTACK_TCP": "0", "TICKSTACK_XDPD_SOCKET": "/run/tickstack/xdp.sock"}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("env %s = %q, want %q (env %v)", k, env[k], v, env)
			}
		}
		// the daemon's socket comes from the device plugin: no host path anywhere in the spec
		for _, v := range pod.Spec.Volumes {
			if v.HostPath != nil || v.Name == XDPVolume {
				t.Errorf("volume %+v: a bypass pod gets no host path", v)
			}
		}
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		if mounts[DataplaneVolume] != DataplaneLibraryDir || mounts[HugepagesVolume] != "/dev/hugepages" {
			t.Errorf("mounts %v", mounts)
		}
		if isc := pod.Spec.InitContainers[0].SecurityContext; isc == nil || !ptr.Deref(isc.RunAsNonRoot, false) ||
			ptr.Deref(isc.AllowPrivilegeEscalation, true) || !ptr.Deref(isc.ReadOnlyRootFilesystem, false) ||
			isc.SeccompProfile == nil || isc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("init container security context %+v: want Pod Security restricted and a read-only root", isc)
		}
		// The API server computes QoS after admission: the injected init container keeps it Guaranteed.
		if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("QoS %s, want Guaranteed", pod.Status.QOSClass)
		}
	})

	t.Run("bad pods are refused with what to change", func(t *testing.T) {
		cases := []struct {
			name   string
			mutate func(*corev1.Pod)
			want   string
		}{
			{"no limits (BestEffort)", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} },
				"container trader has no cpu limit: latency pods need Guaranteed QoS"},
			{"requests below limits (Burstable)", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
			}, "make resources.requests.memory equal to resources.limits.memory"},
			{"fractional CPUs", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1500m")
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1500m")
			}, "exclusive CPUs need a whole number; set resources.limits.cpu and requests.cpu to an integer such as 2"},
			{"more VFs than offered", func(p *corev1.Pod) { p.Annotations = map[string]string{tsv1.InterfacesAnnotation: "5"} },
				"offers at most 4 per node"},
			{"more VFs than offered, asked as a resource", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits["tickstack.io/md_vf"] = resource.MustParse("9")
				p.Spec.Containers[0].Resources.Requests["tickstack.io/md_vf"] = resource.MustParse("9")
			}, "the pod asks for 9 VFs (tickstack.io/md_vf)"},
			{"a conflicting LD_PRELOAD", func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LD_PRELOAD", Value: "/usr/lib/libvma.so"}}
			}, `container trader sets LD_PRELOAD="/usr/lib/libvma.so"`},
			{"a privileged bypass container", func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}, "spec.containers[0].securityContext.privileged (container trader) is true: remove it; the node daemon tickstack-xdpd attaches XDP"},
			{"a bypass container adding NET_ADMIN", func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
			}, "spec.containers[0].securityContext.capabilities.add[0] (container trader) adds capability NET_ADMIN"},
			{"host networking", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "spec.hostNetwork is true"},
			{"a root init container", func(p *corev1.Pod) {
				c := p.Spec.Containers[0].DeepCopy()
				c.Name = "setup"
				c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
				p.Spec.InitContainers = []corev1.Container{*c}
			}, "spec.initContainers[0].securityContext.runAsUser (container setup) is 0"},
			{"a privileged sidecar", func(p *corev1.Pod) {
				c := p.Spec.Containers[0].DeepCopy()
				c.Name = "side"
				c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}
				p.Spec.Containers = append(p.Spec.Containers, *c)
			}, "spec.containers[1].securityContext.allowPrivilegeEscalation (container side) is true"},
			{"the reserved volume tickstack-xdp, pointing at the host's root", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: XDPVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: XDPVolume, MountPath: "/host"}}
			}, `spec.volumes[0].name "tickstack-xdp" is reserved for the volumes the tickstack webhook injects`},
			{"an unknown profile", func(p *corev1.Pod) { p.Labels[tsv1.ProfileLabel] = "tspw-nosuch" },
				"label tickstack.io/profile=tspw-nosuch names no LatencyProfile"},
			{"huge pages of a size the profile lacks", func(p *corev1.Pod) {
				p.Annotations = map[string]string{tsv1.HugepagesAnnotation: "64Mi", tsv1.HugepageSizeAnnotation: "2Mi"}
			}, "names a page size LatencyProfile tspw-bypass does not reserve"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				pod := guaranteedPod(fmt.Sprintf("tspw-bad-%d", i), profile.Name)
				c.mutate(pod)
				err := create(t, pod)
				if err == nil {
					t.Fatalf("pod admitted, want refusal %q", c.want)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("refusal %q does not say %q", err, c.want)
				}
			})
		}
	})

	t.Run("debug containers of a labelled pod are held to the same rules", func(t *testing.T) {
		pod := guaranteedPod("tspw-debugged", profile.Name)
		if err := create(t, pod); err != nil {
			t.Fatal(err)
		}
		debug := func(name string, sc *corev1.SecurityContext, mounts ...corev1.VolumeMount) error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				t.Fatal(err)
			}
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: name, Image: "localhost/debug:dev", SecurityContext: sc, VolumeMounts: mounts}})
			return k8s.SubResource("ephemeralcontainers").Update(ctx, pod)
		}
		err := debug("root", &corev1.SecurityContext{Privileged: ptr.To(true)})
		if err == nil || !strings.Contains(err.Error(), "vpodephemeral.tickstack.io") ||
			!strings.Contains(err.Error(), "spec.ephemeralContainers[0].securityContext.privileged (container root) is true") {
			t.Errorf("a privileged debug container: want the webhook's refusal naming the field, got %v", err)
		}
		err = debug("peek", nil, corev1.VolumeMount{Name: DataplaneVolume, MountPath: "/lib-rw"})
		if err == nil || !strings.Contains(err.Error(), `spec.ephemeralContainers[0].volumeMounts[0].name "tickstack-dataplane" (container peek) is reserved`) {
			t.Errorf("a debug container mounting the bypass library's volume writable: want a refusal, got %v", err)
		}
		if err := debug("plain", &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}); err != nil {
			t.Errorf("an unprivileged debug container was refused: %v", err)
		}
	})

	unlabelledUntouched := func(t *testing.T, name string) {
		pod := guaranteedPod(name, "")
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{} // BestEffort: would be refused if labelled
		if err := create(t, pod); err != nil {
			t.Fatal(err)
		}
		if pod.Annotations[tsv1.MutatedAnnotation] != "" || pod.Spec.Affinity != nil || len(pod.Spec.InitContainers) != 0 ||
			len(pod.Spec.Containers[0].Env) != 0 || len(pod.Spec.Containers[0].Resources.Limits) != 0 {
			t.Errorf("unlabelled pod was changed: %+v", pod.Spec)
		}
	}
	t.Run("an unlabelled pod is untouched", func(t *testing.T) { unlabelledUntouched(t, "tspw-plain") })

	// Pod Security admission (kube-apiserver's PodSecurity plugin, on by default) judges the pod after
	// the webhook mutated it: a bypass pod of a namespace that enforces "restricted" is admitted when
	// it says what restricted asks of any pod (a non-root user), and the webhook adds nothing
	// restricted refuses (no capability, no host path, seccomp RuntimeDefault).
	t.Run("a bypass pod in a namespace enforcing Pod Security restricted is admitted", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tspw-restricted",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
		if err := k8s.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
		pod := guaranteedPod("tspw-restricted", profile.Name)
		pod.Namespace = ns.Name
		if err := create(t, pod); err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:`) ||
			!strings.Contains(err.Error(), "runAsNonRoot") {
			t.Fatalf("a pod without a non-root user: want Pod Security's refusal naming runAsNonRoot, got %v", err)
		}
		pod = guaranteedPod("tspw-restricted", profile.Name)
		pod.Namespace = ns.Name
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
		if err := create(t, pod); err != nil {
			t.Fatalf("a bypass pod with runAsUser 1000 refused: %v", err)
		}
		c := pod.Spec.Containers[0]
		if q := c.Resources.Limits[tsv1.XDPDResource]; q.Value() != 1 || len(pod.Spec.InitContainers) != 1 {
			t.Errorf("the pod was not set up for the bypass stack: %+v", pod.Spec)
		}
		if sc := c.SecurityContext; !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil ||
			sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("security context %+v: want runAsNonRoot (the pod's uid is 1000) and seccomp RuntimeDefault", sc)
		}
	})

	t.Run("with the webhook down, unlabelled pods still create and labelled ones are refused", func(t *testing.T) {
		w.stop(t)
		testutil.Poll(t, 20*time.Second, "webhook server stopped", func() error {
			if w.serving() == nil {
				return fmt.Errorf("still serving")
			}
			return nil
		})
		unlabelledUntouched(t, "tspw-plain-down")
		err := create(t, guaranteedPod("tspw-labelled-down", profile.Name))
		if err == nil || !strings.Contains(err.Error(), "mpod.tickstack.io") {
			t.Errorf("labelled pod with the webhook down: want a refusal naming mpod.tickstack.io, got %v", err)
		}
	})
}
