package benchmark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// statusPatch is the benchmark's status write: a JSON patch (RFC 6902) of what changed, the
// summary fields that differ and the node entries that differ, each behind a test of the node it
// replaces, rather than a merge patch, which would carry every node's entry (a JSON merge patch
// replaces a list whole: hundreds of KiB at fleet size, marshalled and diffed by the manager and
// parsed by the API server on every write). When the node list itself changed (a new run, a node
// that joined) or the status is new, it is the merge patch of the whole status. A patch the API
// server refuses (a test that fails: the stored list is not the one this patch was made from) is
// sent again as that merge patch (Reconcile), as every status write was before.
func statusPatch(orig, b *tsv1.LatencyBenchmark) client.Patch {
	whole := client.MergeFrom(orig)
	o, n := orig.Status, b.Status
	if len(o.Nodes) != len(n.Nodes) || equality.Semantic.DeepEqual(o, tsv1.LatencyBenchmarkStatus{}) {
		// A status written for the first time: there is no /status to patch into.
		return whole
	}
	for i := range o.Nodes {
		if o.Nodes[i].Node != n.Nodes[i].Node {
			return whole
		}
	}
	o.Nodes, n.Nodes = nil, nil
	before, err1 := fields(o)
	after, err2 := fields(n)
	if err1 != nil || err2 != nil {
		return whole
	}
	var ops []jsonPatchOp
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if !bytes.Equal(before[k], after[k]) {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/status/" + k, Value: after[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[k]; ok {
			continue
		}
		ops = append(ops, jsonPatchOp{Op: "remove", Path: "/status/" + k})
	}
	for i := range b.Status.Nodes {
		if equality.Semantic.DeepEqual(orig.Status.Nodes[i], b.Status.Nodes[i]) {
			continue
		}
		path := fmt.Sprintf("/status/nodes/%d", i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: path + "/node", Value: b.Status.Nodes[i].Node},
			jsonPatchOp{Op: "replace", Path: path, Value: b.Status.Nodes[i]})
	}
	data, err := json.Marshal(ops)
	if err != nil || len(ops) == 0 {
		return whole
	}
	return client.RawPatch(types.JSONPatchType, data)
}

// fields is a status's top-level fields as JSON, by name.
func fields(st tsv1.LatencyBenchmarkStatus) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	return out, json.Unmarshal(raw, &out)
}
