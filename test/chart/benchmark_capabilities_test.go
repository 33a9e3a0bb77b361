package chart

import (
	"os"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/benchmark"
)

// podGrants is what one container of a benchmark pod gets beyond an ordinary pod: capability and
// host path, each with its reason.
type podGrants struct {
	Add       map[string]string `json:"add,omitempty"`
	HostPaths map[string]string `json:"hostPaths,omitempty"`
}

// TestBenchmarkPodCapabilitiesAsListed builds the Jobs of every kind of LatencyBenchmark (SamePod
// and TwoPods, kernel and bypass, with the ptp and jitter suites) and checks each container against
// testdata/benchmark-capabilities.yaml: every capability dropped and privilege escalation off, no
// privilege or host namespace, and exactly the listed capabilities added and host paths mounted
// (read-only).
func TestBenchmarkPodCapabilitiesAsListed(t *testing.T) {
	raw, err := os.ReadFile("testdata/benchmark-capabilities.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]podGrants
	if err := yaml.UnmarshalStrict(raw, &want); err != nil {
		t.Fatalf("testdata/benchmark-capabilities.yaml: %v", err)
	}
	got := map[string]map[string]bool{} // container -> "add X" / "hostPath P"
	note := func(container, what string) {
		if got[container] == nil {
			got[container] = map[string]bool{}
		}
		got[container][what] = true
	}
	check := func(name string, ps corev1.PodSpec) {
		if ps.HostNetwork || ps.HostPID || ps.HostIPC {
			t.Errorf("%s: host namespaces %v/%v/%v", name, ps.HostNetwork, ps.HostPID, ps.HostIPC)
		}
		for _, c := range ps.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Privileged != nil && *sc.Privileged {
				t.Errorf("%s, container %s: security context %+v, want ALL dropped, no privilege escalation, not privileged", name, c.Name, sc)
				continue
			}
			note(c.Name, "")
			for _, a := range sc.Capabilities.Add {
				note(c.Name, "add "+string(a))
			}
			for _, m := range c.VolumeMounts {
				for _, v := range ps.Volumes {
					if v.Name == m.Name && v.HostPath != nil {
						if !m.ReadOnly {
							t.Errorf("%s, container %s: host path %s mounted writable", name, c.Name, v.HostPath.Path)
						}
						note(c.Name, "hostPath "+v.HostPath.Path)
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		name string
		spec tsv1.LatencyBenchmarkSpec
	}{
		{"SamePod, kernel, pingPong, jitter and ptp", tsv1.LatencyBenchmarkSpec{Suites: tsv1.BenchmarkSuites{
			PingPong: &tsv1.PingPongSpec{}, Jitter: &tsv1.JitterSpec{}, PTP: &tsv1.PTPSuite{}}}},
		{"TwoPods, kernel and bypass, pingPong and ptp", tsv1.LatencyBenchmarkSpec{Stacks: []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass},
			Placement: &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods}, Suites: tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{}, PTP: &tsv1.PTPSuite{}}}},
		{"jitter alone", tsv1.LatencyBenchmarkSpec{Suites: tsv1.BenchmarkSuites{Jitter: &tsv1.JitterSpec{}}}},
		// qualify's trials attach XDP and bind AF_XDP sockets through the profile's tickstack-xdpd
		// (the pod webhook's socket), so it adds nothing to the list
		{"TwoPods, kernel and bypass, qualify", tsv1.LatencyBenchmarkSpec{Stacks: []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass},
			Placement: &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods}, Suites: tsv1.BenchmarkSuites{Qualify: &tsv1.QualifySpec{}}}},
	} {
		b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "caps", Namespace: "bench", UID: "u1"}, Spec: tc.spec}
		b.Spec.Target.Profile = "p"
		in := benchmark.BenchJobInput{Benchmark: b, Run: 1, Node: "n1", Profile: "p", Image: "img:1", ReflectorAddress: "198.18.0.1"}
		job, err := benchmark.BuildBenchJob(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		check(tc.name, job.Spec.Template.Spec)
		if b.Spec.Placement != nil && b.Spec.Placement.Mode == tsv1.PlacementTwoPods {
			refl, err := benchmark.BuildReflectorJob(in)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			check(tc.name+", reflector", refl.Spec.Template.Spec)
		}
	}
	for container, grants := range got {
		w, ok := want[container]
		if !ok {
			t.Errorf("container %s is not in testdata/benchmark-capabilities.yaml: add it with the reason for each grant", container)
			continue
		}
		for g := range grants {
			switch {
			case g == "":
			case len(g) > 4 && g[:4] == "add ":
				if w.Add[g[4:]] == "" {
					t.Errorf("container %s adds capability %s, which the list lacks: add it with its reason", container, g[4:])
				}
			default:
				if w.HostPaths[g[len("hostPath "):]] == "" {
					t.Errorf("container %s mounts the host's %s, which the list lacks: add it with its reason", container, g[len("hostPath "):])
				}
			}
		}
		for c := range w.Add {
			if !grants["add "+c] {
				t.Errorf("container %s no longer adds %s: remove it from the list", container, c)
			}
		}
		for p := range w.HostPaths {
			if !grants["hostPath "+p] {
				t.Errorf("container %s no longer mounts the host's %s: remove it from the list", container, p)
			}
		}
	}
	for container := range want {
		if got[container] == nil {
			t.Errorf("container %s is listed but no benchmark pod has it", container)
		}
	}
}
