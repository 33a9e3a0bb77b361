package benchmark

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestBuildBenchJobMountsPTP checks BuildBenchJob calls addPTPSocket: the runner of a benchmark
// with the ptp suite gets the agent's read-only PTP directory, read-only, alone or beside a
// reflector container, and no other host path.
func TestBuildBenchJobMountsPTP(t *testing.T) {
	mk := func(suites tsv1.BenchmarkSuites) BenchJobInput {
		b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "trading", UID: "u1"}}
		b.Spec.Target.Profile = "p"
		b.Spec.Suites = suites
		return BenchJobInput{Benchmark: b, Run: 3, Node: "worker-1", Profile: "p", Image: "img:1"}
	}
	mounted := func(c corev1.Container) bool {
		for _, m := range c.VolumeMounts {
			if m.Name == benchPTPVolume && m.MountPath == tsv1.PTPRunDir && m.ReadOnly {
				return true
			}
		}
		return false
	}
	hostPTP := func(ps corev1.PodSpec) bool {
		for _, v := range ps.Volumes {
			if v.Name == benchPTPVolume && v.HostPath != nil && v.HostPath.Path == tsv1.PTPReadOnlyDir {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name       string
		suites     tsv1.BenchmarkSuites
		containers int
		want       bool
	}{
		{"ptp alone", tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{}}, 1, true},
		{"ptp beside pingPong", tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{}, PTP: &tsv1.PTPSuite{}}, 2, true},
		{"no ptp", tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{}}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := BuildBenchJob(mk(tc.suites))
			if err != nil {
				t.Fatal(err)
			}
			ps := job.Spec.Template.Spec
			if len(ps.Containers) != tc.containers || ps.Containers[0].Name != benchRunnerContainer {
				t.Fatalf("containers %+v", ps.Containers)
			}
			if got := hostPTP(ps) && mounted(ps.Containers[0]); got != tc.want {
				t.Errorf("runner has the PTP directory: %v, want %v (volumes %+v, mounts %+v)", got, tc.want, ps.Volumes, ps.Containers[0].VolumeMounts)
			}
			for _, c := range ps.Containers[1:] {
				if mounted(c) {
					t.Errorf("%s mounts the PTP directory", c.Name)
				}
			}
			for _, v := range ps.Volumes {
				if v.HostPath != nil && v.HostPath.Path != tsv1.PTPReadOnlyDir {
					t.Errorf("volume %s is the host's %s: only %s may be mounted", v.Name, v.HostPath.Path, tsv1.PTPReadOnlyDir)
				}
			}
		})
	}
}
