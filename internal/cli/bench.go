package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/report"
)

// BenchOptions says which benchmark `tickstack bench` runs and how it waits.
type BenchOptions struct {
	// Benchmark, when set, is created, or replaces the spec of the existing one of that name.
	Benchmark *tsv1.LatencyBenchmark
	// Namespace and Name name an existing benchmark to rerun (when Benchmark is nil); Namespace
	// also applies to a Benchmark without one.
	Namespace, Name string
	// Wait for the run to finish (default in the command); without it, Bench returns once the run
	// started.
	Wait bool
	// Timeout bounds the wait; 0 means 1 hour.
	Timeout time.Duration
	// Poll is the interval between status reads; 0 means 2 seconds.
	Poll time.Duration
	// AllowInconclusive makes an Inconclusive verdict succeed.
	AllowInconclusive bool
	// Now is the clock (the rerun token); nil means time.Now.
	Now func() time.Time
}

// VerdictError is returned when the run's verdict is not a pass.
type VerdictError struct {
	Verdict tsv1.VerdictResult
	Message string
}

func (e *VerdictError) Error() string {
	return fmt.Sprintf("verdict %s: %s", e.Verdict, e.Message)
}

// Bench creates or reruns a benchmark, shows progress on out, waits for the run it started,
// prints every node's tables in the papers' shape and returns a *VerdictError unless it passed.
func Bench(ctx context.Context, c client.Client, o BenchOptions, out io.Writer) (*tsv1.LatencyBenchmark, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	token := fmt.Sprintf("tickstack-bench-%d", now().UnixNano())
	b, err := startRun(ctx, c, o, token)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(b)
	fmt.Fprintf(out, "benchmark %s: run requested (%s=%s)\n", key, tsv1.RerunAnnotation, token)
	timeout, poll := o.Timeout, o.Poll
	if timeout == 0 {
		timeout = time.Hour
	}
	if poll == 0 {
		poll = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := map[string]string{}
	for {
		cur := &tsv1.LatencyBenchmark{}
		if err := c.Get(ctx, key, cur); err != nil {
			return nil, fmt.Errorf("reading benchmark %s: %w", key, err)
		}
		if v := apimeta.FindStatusCondition(cur.Status.Conditions, tsv1.BenchmarkValid); v != nil && v.Status == metav1.ConditionFalse && v.ObservedGeneration == cur.Generation {
			return cur, fmt.Errorf("benchmark %s cannot run: %s", key, v.Message)
		}
		if cur.Status.Rerun == token {
			progress(out, cur, seen)
			if !o.Wait {
				return cur, nil
			}
			if cond := apimeta.FindStatusCondition(cur.Status.Conditions, tsv1.BenchmarkComplete); cond != nil {
				switch {
				case cond.Status == metav1.ConditionTrue && cur.Status.Verdict == "":
					// a status written without its summary (another writer's patch between
					// the controller's): the controller writes both together, so wait
				case cond.Status == metav1.ConditionTrue:
					if err := LoadResults(ctx, c, cur); err != nil {
						return cur, err
					}
					PrintBenchmark(out, cur)
					return cur, verdictErr(cur, o.AllowInconclusive)
				case cond.Reason == tsv1.ReasonNoTargetNodes:
					return cur, fmt.Errorf("benchmark %s: %s: check spec.target", key, cond.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return cur, fmt.Errorf("benchmark %s: run not finished after %s (kubectl get lbench -n %s %s; raise --timeout): %w", key, timeout, key.Namespace, key.Name, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// startRun creates or updates the benchmark with the rerun token.
func startRun(ctx context.Context, c client.Client, o BenchOptions, token string) (*tsv1.LatencyBenchmark, error) {
	if o.Benchmark == nil {
		if o.Name == "" {
			return nil, errors.New("give a benchmark: NAME of an existing one, or -f FILE")
		}
		b := &tsv1.LatencyBenchmark{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, b); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("benchmark %s/%s does not exist: create it with -f FILE (kubectl get lbench -A lists them)", o.Namespace, o.Name)
			}
			return nil, fmt.Errorf("reading benchmark %s/%s: %w", o.Namespace, o.Name, err)
		}
		orig := b.DeepCopy()
		setToken(b, token)
		if err := c.Patch(ctx, b, client.MergeFrom(orig)); err != nil {
			return nil, fmt.Errorf("requesting a run of %s/%s: %w", o.Namespace, o.Name, err)
		}
		return b, nil
	}
	want := o.Benchmark.DeepCopy()
	if want.Namespace == "" {
		want.Namespace = o.Namespace
	}
	have := &tsv1.LatencyBenchmark{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		setToken(want, token)
		if err := c.Create(ctx, want); err != nil {
			return nil, fmt.Errorf("creating benchmark %s/%s: %w", want.Namespace, want.Name, err)
		}
		return want, nil
	case err != nil:
		return nil, fmt.Errorf("reading benchmark %s/%s: %w", want.Namespace, want.Name, err)
	}
	orig := have.DeepCopy()
	have.Spec = want.Spec
	setToken(have, token)
	if err := c.Patch(ctx, have, client.MergeFrom(orig)); err != nil {
		return nil, fmt.Errorf("updating benchmark %s/%s: %w", want.Namespace, want.Name, err)
	}
	return have, nil
}

func setToken(b *tsv1.LatencyBenchmark, token string) {
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[tsv1.RerunAnnotation] = token
}

// progress prints each node's phase when it changes.
func progress(out io.Writer, b *tsv1.LatencyBenchmark, seen map[string]string) {
	for _, n := range b.Status.Nodes {
		line := fmt.Sprintf("%s: %s", n.Phase, n.Message)
		if seen[n.Node] != line {
			seen[n.Node] = line
			fmt.Fprintf(out, "run %d  %-20s %s\n", b.Status.Run, n.Node, line)
		}
	}
}

func verdictErr(b *tsv1.LatencyBenchmark, allowInconclusive bool) error {
	switch b.Status.Verdict {
	case tsv1.VerdictPassed:
		return nil
	case tsv1.VerdictInconclusive:
		if allowInconclusive {
			return nil
		}
	}
	msg := ""
	if c := apimeta.FindStatusCondition(b.Status.Conditions, tsv1.BenchmarkPassed); c != nil {
		msg = c.Message
	}
	return &VerdictError{Verdict: b.Status.Verdict, Message: msg}
}

// PrintBenchmark prints every node's tables in the papers' shapes (internal/report's text form:
// latencies in microseconds, half round trips), the kernel vs bypass ratios, and the verdict with
// every check.
func PrintBenchmark(out io.Writer, b *tsv1.LatencyBenchmark) {
	fmt.Fprintf(out, "\nLatencyBenchmark %s/%s run %d: %s (%d of %d nodes passed)\n", b.Namespace, b.Name, b.Status.Run, orDash(string(b.Status.Verdict)), b.Status.NodesPassed, b.Status.NodesTotal)
	nodes := append([]tsv1.BenchmarkNodeStatus(nil), b.Status.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node < nodes[j].Node })
	for _, n := range nodes {
		fmt.Fprintf(out, "\n== node %s: %s: %s\n", n.Node, n.Phase, n.Message)
		if n.Results != nil {
			if err := report.WriteText(out, report.NodeResults{Node: n.Node, Results: n.Results, Verdict: n.Verdict, TickToTradeBaseline: n.TickToTradeBaseline}); err != nil {
				fmt.Fprintf(out, "(tables unavailable: %v)\n", err)
			}
		}
		if v := n.Verdict; v != nil {
			fmt.Fprintf(out, "\nchecks of node %s: %s\n", n.Node, v.Result)
			for _, c := range v.Reasons {
				fmt.Fprintf(out, "  %-12s %s: %s\n", c.Result, c.Name, c.Message)
			}
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// BenchAll runs the benchmarks of a file in turn (o.Name's when benchmarks is empty) with the
// options of o. With output json|yaml the progress and tables go to progress and the benchmarks,
// with their results and verdicts, to out as a list. An error stops at once; a verdict that is not
// a pass does not stop the next benchmark, and the worst one (Failed before Inconclusive) is
// returned at the end.
func BenchAll(ctx context.Context, c client.Client, o BenchOptions, benchmarks []*tsv1.LatencyBenchmark, output string, out, progress io.Writer) error {
	text := out
	if output != OutputText {
		text = progress
	}
	runs := []BenchOptions{o}
	if len(benchmarks) > 0 {
		runs = runs[:0]
		for _, b := range benchmarks {
			ob := o
			ob.Benchmark = b
			runs = append(runs, ob)
		}
	}
	var done []*tsv1.LatencyBenchmark
	var worst *VerdictError
	var err error
	for _, run := range runs {
		var b *tsv1.LatencyBenchmark
		b, err = Bench(ctx, c, run, text)
		if b != nil {
			done = append(done, b)
		}
		var v *VerdictError
		if errors.As(err, &v) {
			if worst == nil || v.Verdict == tsv1.VerdictFailed {
				worst = v
			}
			err = nil
			continue
		}
		if err != nil {
			break
		}
	}
	if output != OutputText {
		if werr := writeAs(out, output, done); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	if worst != nil {
		return worst
	}
	return nil
}
