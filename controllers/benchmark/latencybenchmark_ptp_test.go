package benchmark

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/bench/judge/judgetest"
)

// benchPodSpec is a pod spec shaped like BuildBenchJob's: the runner, and the reflector beside it
// when withReflector.
func benchPodSpec(withReflector bool) corev1.PodSpec {
	results := []corev1.VolumeMount{{Name: benchResultsVolume, MountPath: benchResultsDir}}
	ps := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Volumes:       []corev1.Volume{{Name: benchResultsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers:    []corev1.Container{{Name: benchRunnerContainer, Image: "img:1", VolumeMounts: results}},
	}
	if withReflector {
		ps.Containers = append(ps.Containers, corev1.Container{Name: BenchReflectorContainer, Image: "img:1", VolumeMounts: results})
	}
	return ps
}

func TestAddPTPSocket(t *testing.T) {
	withPTP := &tsv1.LatencyBenchmark{}
	withPTP.Spec.Suites.PTP = &tsv1.PTPSuite{}
	withoutPTP := &tsv1.LatencyBenchmark{}
	withoutPTP.Spec.Suites.Jitter = &tsv1.JitterSpec{CPUs: "pod"}

	t.Run("ptp selected: the runner gets the agent's read-only PTP directory, read-only", func(t *testing.T) {
		ps := benchPodSpec(true)
		addPTPSocket(&ps, withPTP)
		if len(ps.Volumes) != 2 {
			t.Fatalf("volumes %+v, want results and ptp", ps.Volumes)
		}
		v := ps.Volumes[1]
		if v.Name != benchPTPVolume || v.HostPath == nil || v.HostPath.Path != "/run/tickstack/ptp-ro" ||
			v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
			t.Errorf("ptp volume %+v, want hostPath /run/tickstack/ptp-ro (DirectoryOrCreate), never ptp4l's own /run/tickstack/ptp", v)
		}
		runner := ps.Containers[0]
		if len(runner.VolumeMounts) != 2 || !reflect.DeepEqual(runner.VolumeMounts[1], corev1.VolumeMount{Name: benchPTPVolume, MountPath: "/run/tickstack/ptp", ReadOnly: true}) {
			t.Errorf("runner mounts %+v, want the read-only ptp directory at /run/tickstack/ptp, read-only", runner.VolumeMounts)
		}
		if got := ps.Containers[1].VolumeMounts; len(got) != 1 {
			t.Errorf("reflector mounts %+v, want only the results", got)
		}
		// The default socket of the suite lies in the mounted directory, as the runner sees it.
		if s := (tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{}}).Defaulted().PTP.Socket; s != runner.VolumeMounts[1].MountPath+"/ptp4l.sock" {
			t.Errorf("default socket %s is not in the mounted %s", s, runner.VolumeMounts[1].MountPath)
		}
	})
	t.Run("no ptp suite: nothing changes", func(t *testing.T) {
		ps := benchPodSpec(false)
		addPTPSocket(&ps, withoutPTP)
		if len(ps.Volumes) != 1 || len(ps.Containers[0].VolumeMounts) != 1 {
			t.Errorf("pod spec changed without the ptp suite: %+v", ps)
		}
	})
	t.Run("no runner container: nothing changes", func(t *testing.T) {
		ps := benchPodSpec(false)
		ps.Containers[0].Name = BenchReflectorContainer
		addPTPSocket(&ps, withPTP)
		if len(ps.Volumes) != 1 || len(ps.Containers[0].VolumeMounts) != 1 {
			t.Errorf("a pod without the runner got the ptp directory: %+v", ps)
		}
	})
}

func TestJudgeNodePTP(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 3, 0, 0, time.UTC)
	pending := tsv1.BenchmarkNodeStatus{Node: "n1", Job: "lb-1-abc", Phase: tsv1.NodePending}
	limit := func(max string) tsv1.Thresholds {
		return tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: max}}}
	}
	for _, tc := range []struct {
		name     string
		notSlave int64
		th       tsv1.Thresholds
		verdict  tsv1.VerdictResult
		message  string
	}{
		{"locked and within the bound", 0, limit("1us"), tsv1.VerdictPassed, "Passed: 2 checks"},
		{"locked but over the bound", 0, limit("200ns"), tsv1.VerdictFailed, "Failed: ptp/p99: p99 0.250 us at |offset from master| over 120 SLAVE samples exceeds 200ns"},
		{"not SLAVE for a while", 3, tsv1.Thresholds{}, tsv1.VerdictFailed, "Failed: ptp/slave: 3 of 123 samples of /run/tickstack/ptp/ptp4l.sock not in SLAVE state (SLAVE 120, UNCALIBRATED 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := judge.MarshalResults(judgetest.PTPResults(tc.notSlave))
			if err != nil {
				t.Fatal(err)
			}
			got := judgeNode(pending, benchJobFacts{jobFound: true, results: string(doc), exitCode: "0"}, tc.th, now)
			if got.Phase != tsv1.NodeCompleted || got.Verdict == nil || got.Verdict.Result != tc.verdict || !strings.HasPrefix(got.Message, tc.message) {
				t.Fatalf("judged %+v (verdict %+v), want Completed, %s, message %q", got, got.Verdict, tc.verdict, tc.message)
			}
			if !reflect.DeepEqual(got.Results.PTP, judgetest.PTPResults(tc.notSlave).PTP) {
				t.Errorf("status ptp table %+v, want the runner's", got.Results.PTP)
			}
		})
	}
}

// The ptp suite's offset distribution is exported per node and statistic, in seconds, and goes with
// the node's next judged run.
func TestBenchmarkPTPOffsetMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewBenchmarkMetrics(reg)
	b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "trading", Name: "nightly"}}
	b.Status.Nodes = []tsv1.BenchmarkNodeStatus{{Node: "n1", Phase: tsv1.NodeCompleted,
		Verdict: &tsv1.Verdict{Result: tsv1.VerdictPassed}, Results: judgetest.PTPResults(0)}}
	m.observe(b)
	want := map[string]float64{"median": 60e-9, "p99": 250e-9, "max": 310e-9}
	for stat, v := range want {
		got := promtest.ToFloat64(m.ptp.WithLabelValues("trading", "nightly", "n1", stat))
		if math.Abs(got-v) > 1e-15 {
			t.Errorf("tickstack_benchmark_ptp_offset_seconds{statistic=%q} = %g, want %g", stat, got, v)
		}
	}
	if got := promtest.ToFloat64(m.ptpSys.WithLabelValues("trading", "nightly", "n1", "p99")); math.Abs(got-90e-9) > 1e-15 {
		t.Errorf("tickstack_benchmark_ptp_system_offset_seconds{statistic=\"p99\"} = %g, want 90e-9", got)
	}
	// The next run, without the ptp suite, leaves no stale offset behind.
	b.Status.Run++
	b.Status.Nodes[0].Results = &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: "n1"}
	m.observe(b)
	if n := promtest.CollectAndCount(m.ptp) + promtest.CollectAndCount(m.ptpSys); n != 0 {
		t.Errorf("%d ptp offset series after a run without the suite, want 0", n)
	}
}

// Per-row series exist for the nodes whose tables are in the status; every judged node has its
// verdict; a node leaving the status takes its series along.
func TestBenchmarkMetricsFollowTheStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewBenchmarkMetrics(reg)
	b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "trading", Name: "fleet"}}
	b.Status.Run = 1
	node := func(name string, tables bool) tsv1.BenchmarkNodeStatus {
		n := tsv1.BenchmarkNodeStatus{Node: name, Job: "job-" + name, Phase: tsv1.NodeCompleted, Verdict: &tsv1.Verdict{Result: tsv1.VerdictPassed}}
		if tables {
			n.Results = judgetest.SampleResults(name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000})
		} else {
			n.ResultsConfigMap = n.Job
		}
		return n
	}
	b.Status.Nodes = []tsv1.BenchmarkNodeStatus{node("a", true), node("b", true), node("c", false)}
	m.observe(b)
	m.observe(b)
	perNode := promtest.CollectAndCount(m.latency) / 2
	if perNode == 0 {
		t.Fatal("no latency series for the nodes with tables")
	}
	if got := promtest.CollectAndCount(m.verdict); got != 9 {
		t.Errorf("%d verdict series, want 3 nodes x 3 verdicts", got)
	}
	if got := promtest.ToFloat64(m.verdict.WithLabelValues("trading", "fleet", "c", "Passed")); got != 1 {
		t.Errorf("node c's Passed = %g, want 1", got)
	}
	// b's tables move to its ConfigMap (a node before it judged late), then b leaves the status.
	b.Status.Nodes[1] = node("b", false)
	m.observe(b)
	if got := promtest.CollectAndCount(m.latency); got != perNode {
		t.Errorf("%d latency series after b's tables moved, want a's %d alone", got, perNode)
	}
	b.Status.Nodes = b.Status.Nodes[:1]
	m.observe(b)
	if got := promtest.CollectAndCount(m.verdict); got != 3 {
		t.Errorf("%d verdict series after b and c left the status, want a's 3", got)
	}
}
