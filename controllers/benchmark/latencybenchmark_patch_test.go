package benchmark

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestStatusPatch: a write during a run's waves carries the node entries that changed (each
// behind a test of its node) and the summary fields that changed, not every node's entry; a
// changed node list, or a status written for the first time, is the merge patch of the whole.
// (The envtest specs in controllers send these patches to a real API server.)
func TestStatusPatch(t *testing.T) {
	run := func(n int) *tsv1.LatencyBenchmark {
		b := &tsv1.LatencyBenchmark{}
		b.Status.Run, b.Status.RunReason = 1, RunReasonCreated
		for i := range n {
			node := fmt.Sprintf("node-%04d", i)
			b.Status.Nodes = append(b.Status.Nodes, tsv1.BenchmarkNodeStatus{Node: node, Job: "bench-" + node, Phase: tsv1.NodePending, Message: "measuring"})
		}
		return b
	}
	ops := func(t *testing.T, p client.Patch, b *tsv1.LatencyBenchmark) []jsonPatchOp {
		t.Helper()
		if p.Type() != types.JSONPatchType {
			t.Fatalf("patch type %s, want a JSON patch", p.Type())
		}
		raw, err := p.Data(b)
		if err != nil {
			t.Fatal(err)
		}
		var out []jsonPatchOp
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return out
	}

	orig := run(1000)
	b := orig.DeepCopy()
	b.Status.Nodes[7].Phase, b.Status.Nodes[7].Message = tsv1.NodeCompleted, "Passed: 1 checks"
	b.Status.Nodes[7].Verdict = &tsv1.Verdict{Result: tsv1.VerdictPassed}
	b.Status.Nodes[500].Phase = tsv1.NodeFailed
	b.Status.NodesPassed, b.Status.RunReason = 1, ""
	got := ops(t, statusPatch(orig, b), b)
	var paths []string
	for _, o := range got {
		paths = append(paths, o.Op+" "+o.Path)
	}
	want := []string{"add /status/nodesPassed", "remove /status/runReason",
		"test /status/nodes/7/node", "replace /status/nodes/7", "test /status/nodes/500/node", "replace /status/nodes/500"}
	if strings.Join(paths, ", ") != strings.Join(want, ", ") {
		t.Errorf("operations %v, want %v", paths, want)
	}
	if got[2].Value != "node-0007" {
		t.Errorf("the test of node 7 tests %v, want its name", got[2].Value)
	}
	raw, _ := statusPatch(orig, b).Data(b)
	if len(raw) > 2048 {
		t.Errorf("two nodes' verdicts of a 1,000-node run: a patch of %d bytes", len(raw))
	}

	for name, change := range map[string]func(o, b *tsv1.LatencyBenchmark){
		"a node joined": func(_, b *tsv1.LatencyBenchmark) {
			b.Status.Nodes = append(b.Status.Nodes, tsv1.BenchmarkNodeStatus{Node: "zz"})
		},
		"a new run":        func(_, b *tsv1.LatencyBenchmark) { b.Status.Nodes[0].Node = "other" },
		"a status at last": func(o, b *tsv1.LatencyBenchmark) { o.Status, b.Status.Nodes = tsv1.LatencyBenchmarkStatus{}, nil },
	} {
		o, b := run(3), run(3)
		b.Status.Nodes[1].Phase = tsv1.NodeCompleted
		change(o, b)
		if p := statusPatch(o, b); p.Type() != types.MergePatchType {
			t.Errorf("%s: a %s patch, want the merge patch of the whole status", name, p.Type())
		}
	}
}
