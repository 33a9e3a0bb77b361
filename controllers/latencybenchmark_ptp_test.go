package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/bench/judge/judgetest"
)

var _ = Describe("LatencyBenchmark ptp suite", func() {
	It("is a suite of its own, and a runner Job with the PTP directory is valid", func() {
		b := validBenchmark("default", "tslb-ptp-only", "p")
		b.Spec.Suites = tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{IntervalMillis: 500, DurationSeconds: 10}}
		b.Spec.Thresholds = tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "1us"}}}
		Expect(k8s.Create(ctx, b, client.DryRunAll)).To(Succeed())

		b.UID = "tslb-ptp-only" // the Job's owner reference needs one
		job, err := benchmark.BuildBenchJob(benchmark.BenchJobInput{Benchmark: b, Run: 1, Node: "tslb-ptp-node", Image: "tslb.test/bench:1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Create(ctx, job, client.DryRunAll)).To(Succeed())
	})
	It("refuses a socket outside the directory the runner pod mounts", func() {
		b := validBenchmark("default", "tslb-ptp-socket", "p")
		b.Spec.Suites.PTP = &tsv1.PTPSuite{Socket: "/var/run/ptp4l"}
		expectInvalid(b, "suites.ptp.socket: the benchmark pod mounts only the node agent's read-only PTP directory: give a socket under /run/tickstack/ptp/")

		b.Spec.Suites.PTP = &tsv1.PTPSuite{Socket: "/run/tickstack/ptp/ptp4l.sock"}
		Expect(k8s.Create(ctx, b, client.DryRunAll)).To(Succeed())
	})
	It("keeps every field of a node's ptp table in the status", func() {
		b := validBenchmark("default", "tslb-ptp-status", "")
		b.Spec.Target = tsv1.BenchmarkTarget{NodeNames: []string{"tslb-ptp-status-node"}}
		b.Spec.Suites = tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{}}
		b.Spec.Thresholds = tsv1.Thresholds{}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		want := judgetest.PTPResults(2)
		v := judge.Evaluate(want, tsv1.Thresholds{})
		// A dry-run status update goes through the schema (and its pruning) without racing the
		// controller's own status writes for more than a conflict.
		Eventually(func(g Gomega) {
			cur := getBenchmark("default", b.Name)(g)
			cur.Status.Nodes = []tsv1.BenchmarkNodeStatus{{Node: "tslb-ptp-status-node", Phase: tsv1.NodeCompleted, Results: want, Verdict: &v}}
			g.Expect(k8s.Status().Update(ctx, cur, client.DryRunAll)).To(Succeed())
			g.Expect(cur.Status.Nodes).To(HaveLen(1))
			g.Expect(cur.Status.Nodes[0].Results.PTP).To(Equal(want.PTP))
			g.Expect(cur.Status.Nodes[0].Verdict.Reasons[0].Name).To(Equal("ptp/slave"))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})
	It("refuses a ptp latency limit with an unknown suite name", func() {
		b := validBenchmark("default", "tslb-ptp-suite", "p")
		b.Spec.Thresholds.Latency[0].Suite = "ptp4l"
		expectInvalid(b, "spec.thresholds.latency[0].suite")
	})
})
