package webhook

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestOfferedVFs(t *testing.T) {
	cases := []struct {
		sel  tsv1.NICSelector
		num  *int32
		want int
	}{
		{tsv1.NICSelector{Vendor: "8086"}, ptr.To[int32](8), 8},
		{tsv1.NICSelector{PFNames: []string{"ens1f0#0-3", "ens1f1#4-7"}}, ptr.To[int32](8), 8},
		{tsv1.NICSelector{PFNames: []string{"ens1f0#0-15"}}, ptr.To[int32](4), 4},
		{tsv1.NICSelector{PFNames: []string{"ens1f0"}, InterfaceNames: []string{"ens2f0"}}, ptr.To[int32](2), 4},
		{tsv1.NICSelector{Vendor: "8086"}, nil, 0},
	}
	for _, c := range cases {
		if got := OfferedVFs(&tsv1.NICSpec{Selector: c.sel, NumVFs: c.num}); got != c.want {
			t.Errorf("%+v numVfs %v: got %d, want %d", c.sel, c.num, got, c.want)
		}
	}
}

func TestMutatePodCases(t *testing.T) {
	opts := PodOptions{ResourcePrefix: "example.com", DataplaneImage: "img", NetworkNamespace: "ops"}
	cases := []struct {
		name    string
		profile func(*tsv1.LatencyProfile)
		pod     func(*corev1.Pod)
		check   func(*testing.T, *corev1.Pod)
		refusal string
	}{
		{
			name: "existing affinity terms each get the profile (and validated when asked)",
			profile: func(p *tsv1.LatencyProfile) {
				p.Annotations = map[string]string{tsv1.RequireValidatedAnnotation: "true"}
			},
			pod: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{
						{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
						{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
					}}}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					var keys []string
					for _, e := range term.MatchExpressions {
						keys = append(keys, e.Key+"="+strings.Join(e.Values, ","))
					}
					if got := strings.Join(keys, " "); !strings.HasSuffix(got, "tickstack.io/profile=p tickstack.io/validated=p") {
						t.Errorf("term %s", got)
					}
				}
			},
		},
		{
			name: "a benchmark's own pods are not held to validated nodes",
			profile: func(p *tsv1.LatencyProfile) {
				p.Annotations = map[string]string{tsv1.RequireValidatedAnnotation: "true"}
			},
			pod: func(p *corev1.Pod) { p.Labels[tsv1.BenchmarkLabel] = "nightly" },
			check: func(t *testing.T, p *corev1.Pod) {
				for _, e := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions {
					if e.Key == tsv1.ValidatedLabel {
						t.Errorf("benchmark pod requires %v", e)
					}
				}
			},
		},
		{
			name: "shared CPUs: no Guaranteed QoS required, the network and the stack all the same, an init container without CPU",
			pod: func(p *corev1.Pod) {
				p.Annotations = map[string]string{tsv1.ExclusiveCPUsAnnotation: "false"}
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if got := p.Annotations["k8s.v1.cni.cncf.io/networks"]; got != "ops/p-md@lat0" {
					t.Errorf("networks %q", got)
				}
				if len(p.Spec.InitContainers) != 1 {
					t.Fatalf("init containers %v", p.Spec.InitContainers)
				}
				if r := p.Spec.InitContainers[0].Resources; r.Limits.Cpu().Value() != 0 || r.Requests.Cpu().Value() != 0 || r.Limits.Memory().IsZero() {
					t.Errorf("init container resources %+v", r)
				}
				if _, ok := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; ok {
					t.Errorf("the webhook set a CPU limit: %+v", p.Spec.Containers[0].Resources)
				}
			},
		},
		{
			name: "shared CPUs annotation neither true nor false",
			pod: func(p *corev1.Pod) {
				p.Annotations = map[string]string{tsv1.ExclusiveCPUsAnnotation: "no"}
			},
			refusal: `annotation tickstack.io/exclusive-cpus="no" must be "true"`,
		},
		{
			name: "JSON networks annotation is extended in JSON, one element per interface, in the profile's namespace",
			pod: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"k8s.v1.cni.cncf.io/networks": `[{"name":"mgmt"}]`, tsv1.InterfacesAnnotation: "2"}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				want := `[{"name":"mgmt"},{"interface":"lat0","name":"p-md","namespace":"ops"},{"interface":"lat1","name":"p-md","namespace":"ops"}]`
				if got := p.Annotations["k8s.v1.cni.cncf.io/networks"]; got != want {
					t.Errorf("got %s, want %s", got, want)
				}
				if q := p.Spec.Containers[0].Resources.Limits["example.com/md_vf"]; q.Value() != 2 {
					t.Errorf("VF limit %s", q.String())
				}
			},
		},
		{
			name: "the named container gets the stack; the pod's own TICKSTACK_PROFILE and matching LD_PRELOAD stay",
			pod: func(p *corev1.Pod) {
				side := p.Spec.Containers[0]
				side.Name = "sidecar"
				p.Spec.Containers = append(p.Spec.Containers, side)
				p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "TICKSTACK_PROFILE", Value: "throughput"}, {Name: "LD_PRELOAD", Value: "/opt/tickstack/lib/libtickstack.so"}}
				p.Annotations = map[string]string{tsv1.ContainerAnnotation: "sidecar"}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Containers[0].Env) != 0 {
					t.Errorf("first container got env %v", p.Spec.Containers[0].Env)
				}
				if env := p.Spec.Containers[1].Env; len(env) != 6 || env[0].Value != "throughput" || env[2].Name != "TICKSTACK_IFACES" || env[5].Name != EnvXDPDSocket {
					t.Errorf("sidecar env %v", env)
				}
			},
		},
		{
			name:    "a container annotation naming nothing",
			pod:     func(p *corev1.Pod) { p.Annotations = map[string]string{tsv1.ContainerAnnotation: "nope"} },
			refusal: "annotation tickstack.io/container=nope names no container of the pod",
		},
		{
			name:    "hugepages from a profile without any",
			profile: func(p *tsv1.LatencyProfile) { p.Spec.Hugepages = nil },
			pod:     func(p *corev1.Pod) { p.Annotations = map[string]string{tsv1.HugepagesAnnotation: "1Gi"} },
			refusal: "LatencyProfile p reserves none: remove the annotation or add spec.hugepages.pages",
		},
		{
			name:    "hugepages not a whole number of pages",
			pod:     func(p *corev1.Pod) { p.Annotations = map[string]string{tsv1.HugepagesAnnotation: "1500Mi"} },
			refusal: "is not a whole number of 1Gi pages",
		},
		{
			name: "hostDevice hands out one interface",
			profile: func(p *tsv1.LatencyProfile) {
				p.Spec.NICs[0] = tsv1.NICSpec{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eth1"}}, Network: &tsv1.NICNetwork{Type: tsv1.NetworkHostDevice}}
			},
			pod:     func(p *corev1.Pod) { p.Annotations = map[string]string{tsv1.InterfacesAnnotation: "2"} },
			refusal: "moves its one host interface into the pod",
		},
		{
			name:    "a bad interfaces annotation",
			pod:     func(p *corev1.Pod) { p.Annotations = map[string]string{tsv1.InterfacesAnnotation: "many"} },
			refusal: `annotation tickstack.io/interfaces="many" must be a whole number from 1 to 64`,
		},
		{
			name: "an init container without limits",
			pod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
			},
			refusal: "container setup has no cpu limit",
		},
		{
			name: "spec.bypass: require off, TCP for outgoing connections; the container's own capabilities kept",
			profile: func(p *tsv1.LatencyProfile) {
				p.Spec.Bypass = &tsv1.BypassSpec{Require: ptr.To(false), TCP: tsv1.BypassTCPConnect}
			},
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_NICE"}}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				env := map[string]string{}
				for _, e := range p.Spec.Containers[0].Env {
					env[e.Name] = e.Value
				}
				if env[EnvRequire] != "0" || env[EnvTCP] != "connect" {
					t.Errorf("env %v: want %s=0 and %s=connect", env, EnvRequire, EnvTCP)
				}
				caps := p.Spec.Containers[0].SecurityContext.Capabilities
				if !slices.Equal(caps.Add, []corev1.Capability{"SYS_NICE"}) || !slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("capabilities %+v: want the container's SYS_NICE kept, nothing added, ALL dropped", caps)
				}
			},
		},
		{
			name: "the node daemon's socket: one unit of the device plugin's resource, no volume, no host path; restricted's securityContext",
			pod:  func(*corev1.Pod) {},
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.Containers[0]
				if q := c.Resources.Limits[tsv1.XDPDResource]; q.Value() != 1 {
					t.Errorf("limits %v: want 1 %s", c.Resources.Limits, tsv1.XDPDResource)
				}
				if q := c.Resources.Requests[tsv1.XDPDResource]; q.Value() != 1 {
					t.Errorf("requests %v: want 1 %s", c.Resources.Requests, tsv1.XDPDResource)
				}
				for _, v := range p.Spec.Volumes {
					if v.HostPath != nil || v.Name == XDPVolume {
						t.Errorf("volume %+v: a bypass pod gets no host path", v)
					}
				}
				for _, m := range c.VolumeMounts {
					if m.Name == XDPVolume {
						t.Errorf("mount %+v: the socket comes from the device plugin", m)
					}
				}
				sc := c.SecurityContext
				if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("seccomp %+v, want RuntimeDefault", sc.SeccompProfile)
				}
				if sc.RunAsNonRoot != nil {
					t.Errorf("runAsNonRoot %v set for a pod whose uid the image decides", *sc.RunAsNonRoot)
				}
				if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 || *sc.AllowPrivilegeEscalation {
					t.Errorf("security context %+v: want ALL dropped, nothing added, no escalation", sc)
				}
			},
		},
		{
			name: "a pod of a known non-root uid: runAsNonRoot; its own seccomp profile kept",
			pod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("trading.json")}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				sc := p.Spec.Containers[0].SecurityContext
				if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
					t.Errorf("runAsNonRoot %v, want true for runAsUser 1000", sc.RunAsNonRoot)
				}
				if sc.SeccompProfile != nil {
					t.Errorf("seccomp %+v set over the pod's own Localhost profile", sc.SeccompProfile)
				}
			},
		},
		{
			name: "a pod that says runAsNonRoot false itself keeps it",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(int64(1000)), RunAsNonRoot: ptr.To(false)}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if sc := p.Spec.Containers[0].SecurityContext; *sc.RunAsNonRoot {
					t.Errorf("runAsNonRoot %v, want the container's false", *sc.RunAsNonRoot)
				}
			},
		},
		{
			name: "a bypass container that asks for privilege escalation",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}
			},
			refusal: "spec.containers[0].securityContext.allowPrivilegeEscalation (container trader) is true",
		},
		{
			name:    "kernel acceleration: no preload",
			profile: func(p *tsv1.LatencyProfile) { p.Spec.NICs[0].Acceleration = tsv1.AccelerationKernel },
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LD_PRELOAD", Value: "/usr/lib/libvma.so"}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.InitContainers) != 0 || len(p.Spec.Containers[0].Env) != 1 {
					t.Errorf("kernel profile got the bypass stack: %+v", p.Spec)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := bypassProfile("p")
			if c.profile != nil {
				c.profile(p)
			}
			pod := guaranteedPod("x", "p")
			c.pod(pod)
			before := pod.DeepCopy()
			err := MutatePod(pod, p, opts)
			if c.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), c.refusal) {
					t.Fatalf("want refusal %q, got %v", c.refusal, err)
				}
				if pod.Annotations[tsv1.MutatedAnnotation] != "" || len(pod.Spec.InitContainers) != len(before.Spec.InitContainers) {
					t.Error("a refused pod was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, pod)
		})
	}
}
