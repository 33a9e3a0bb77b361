package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/report"
)

// ReportInput reads a benchmark and turns its nodes' results into the report's input.
func ReportInput(ctx context.Context, c client.Client, namespace, name string, generated time.Time) (report.Input, error) {
	b := &tsv1.LatencyBenchmark{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return report.Input{}, fmt.Errorf("benchmark %s/%s does not exist (kubectl get lbench -A lists them)", namespace, name)
		}
		return report.Input{}, fmt.Errorf("reading benchmark %s/%s: %w", namespace, name, err)
	}
	if err := LoadResults(ctx, c, b); err != nil {
		return report.Input{}, err
	}
	in := report.Input{Title: fmt.Sprintf("LatencyBenchmark %s/%s, run %d", namespace, name, b.Status.Run), Generated: generated}
	for _, n := range b.Status.Nodes {
		if n.Results == nil {
			continue
		}
		in.Nodes = append(in.Nodes, report.NodeResults{Node: n.Node, Results: n.Results, Verdict: n.Verdict, TickToTradeBaseline: n.TickToTradeBaseline})
	}
	if len(in.Nodes) == 0 {
		return in, fmt.Errorf("benchmark %s/%s has no results yet (run %d): wait for its run to finish (tickstack bench %s -n %s)", namespace, name, b.Status.Run, name, namespace)
	}
	return in, nil
}

// Report writes the benchmark's self-contained HTML report to path ("-" is out).
func Report(ctx context.Context, c client.Client, namespace, name, path string, out io.Writer) error {
	in, err := ReportInput(ctx, c, namespace, name, time.Time{})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, in); err != nil {
		return fmt.Errorf("rendering the report: %w", err)
	}
	if path == "-" {
		_, err := out.Write(buf.Bytes())
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tickstack-report-*.html")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(out, "wrote %s: %d nodes\n", path, len(in.Nodes))
	return nil
}

// LoadResults fills in, in b as read, the results and the verdict's checks of every node whose
// tables a large run keeps in the run's results ConfigMap rather than in the status
// (status.nodes[].resultsConfigMap).
func LoadResults(ctx context.Context, c client.Client, b *tsv1.LatencyBenchmark) error {
	for i := range b.Status.Nodes {
		n := &b.Status.Nodes[i]
		if n.Results != nil || n.ResultsConfigMap == "" {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: n.ResultsConfigMap}, cm); err != nil {
			return fmt.Errorf("node %s: reading its results from ConfigMap %s/%s: %w", n.Node, b.Namespace, n.ResultsConfigMap, err)
		}
		res, err := judge.UnmarshalResults([]byte(cm.Data[tsv1.BenchResultsKey]))
		if err != nil {
			return fmt.Errorf("node %s: ConfigMap %s/%s, key %s: %w", n.Node, b.Namespace, n.ResultsConfigMap, tsv1.BenchResultsKey, err)
		}
		n.Results = res
		if n.Verdict != nil && len(n.Verdict.Reasons) == 0 {
			// The status keeps only the result of a moved node's verdict: its checks again, from
			// its tables and the thresholds.
			v := judge.Evaluate(res, b.Spec.Thresholds)
			n.Verdict = &tsv1.Verdict{Result: n.Verdict.Result, Reasons: v.Reasons}
		}
	}
	return nil
}
