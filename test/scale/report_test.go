package scale

// TestBenchScaleReport runs hack/bench-scale-report.py (make bench-scale's report) over crafted
// results of both designs: the targets it judges for each, and its exit status 1 when a target it
// prints is MISSED. Unlike the rest of this package it needs no build tag: it runs with go test ./...

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

// The designs a run measures (docs/architecture.md, "Fleet scale"): each node's agent resolves
// its own (the manager's --resolve-on-node, its default), or (--resolve-on-node=false) the manager
// resolves every node and writes its node state's spec.tuning. TestScale's Result.Design; here,
// without the build tag, for the report's test too.
const (
	designPerNode       = "per-node"
	designResolveOnNode = "resolve-on-node"
)

// design is the design the manager's flags select: the agents resolve their own node unless
// --resolve-on-node=false (the last of the flag's occurrences wins, as for the flag package). It
// follows this tree's manager: a -scale.manager-src of a revision whose default was off needs
// --resolve-on-node or --resolve-on-node=false named to be labelled right.
func design(managerArgs []string) string {
	d := designResolveOnNode
	for _, a := range managerArgs {
		switch strings.TrimLeft(a, "-") {
		case "resolve-on-node", "resolve-on-node=true":
			d = designResolveOnNode
		case "resolve-on-node=false":
			d = designPerNode
		}
	}
	return d
}

// reportResult is one fleet size's figures as TestScale writes them, all targets met.
func reportResult(d string, nodes int) map[string]any {
	r := map[string]any{
		"nodes": nodes, "createRenderedSeconds": 2.5, "updateRenderedSeconds": 1.5, "DriftSeenS": 1.0, "DriftClearedS": 1.0,
		"WritesPerChangedNode": 1.0, "WritesPerUnchangedNode": 0.0, "Reads": 100, "Writes": 3 * nodes,
		"PeakRSSMiB": 80.0, "CPUSeconds": 0.01 * float64(nodes), "RolloutBudget": nodes / 20, "RolloutMaxHeld": nodes / 20, "RolloutS": 30.0,
		"BenchNodes": min(nodes, 1000), "BenchMaxParallel": min(nodes, 1000) / 20, "BenchMaxAtOnce": min(nodes, 1000) / 20,
		"BenchS": 32.0, "BenchPodsS": 20.0, "BenchStatusWrites": min(nodes, 1000) / 25, "BenchStatusKiB": 300.0, "BenchResultsInStatus": 37, "AgentPatches": 4 * nodes,
		"UpdateManagerWrites": nodes + 4, "UpdateStatusWrites": nodes, "UpdateAgentNodePatches": 0,
		"ChangedWrites":   map[string]int64{"latencynodestates PATCH": int64(nodes), "latencynodestates/status PATCH": int64(nodes), "latencyprofiles/status PATCH": 4},
		"UnchangedWrites": map[string]int64{"latencyprofiles/status PATCH": 1},
	}
	if d != "" {
		r["design"] = d
	}
	if d == designResolveOnNode {
		// No node state write by the manager; the agents' taints on and off.
		r["WritesPerChangedNode"] = 4.0 / float64(nodes)
		r["UpdateManagerWrites"] = 4
		r["UpdateAgentNodePatches"] = 2 * nodes
		r["ChangedWrites"] = map[string]int64{"nodes PATCH": int64(2 * nodes), "latencynodestates/status PATCH": int64(nodes), "latencyprofiles/status PATCH": 4}
	}
	return r
}

// runReport runs the report over results: its Markdown's target rows (what -> met/MISSED) and
// whether it exited 1.
func runReport(t *testing.T, margs string, results ...map[string]any) (map[string]string, string, bool) {
	t.Helper()
	python := testutil.RequireTool(t, "python3")
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	raw, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "bench-scale.json")
	if err := os.WriteFile(src, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "bench-scale.md")
	out, err := exec.Command(python, "-B", filepath.Join(root, "hack/bench-scale-report.py"), src, md, filepath.Join(dir, "bench-scale.svg"), "v0.8.0", margs).CombinedOutput()
	var ee *exec.ExitError
	failed := errors.As(err, &ee) && ee.ExitCode() == 1
	if err != nil && !failed {
		t.Fatalf("the report: %v: %s", err, out)
	}
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatalf("the report wrote no Markdown: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmarks.md")); err != nil {
		t.Errorf("the report wrote no benchmarks.md beside its Markdown: %v", err)
	}
	rows := map[string]string{}
	row := regexp.MustCompile(`^\| (.+) \| .* \| .* \| (met|MISSED) \|$`)
	for _, line := range strings.Split(string(text), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	return rows, string(text), failed
}

// verdict is the verdict of the target row whose text contains what.
func verdict(t *testing.T, rows map[string]string, what string) string {
	t.Helper()
	for k, v := range rows {
		if strings.Contains(k, what) {
			return v
		}
	}
	t.Fatalf("no target row %q in %v", what, rows)
	return ""
}

func TestDesignFromManagerArgs(t *testing.T) {
	for args, want := range map[string]string{
		"":                        designResolveOnNode,
		"--kube-api-qps=100":      designResolveOnNode,
		"--resolve-on-node":       designResolveOnNode,
		"-resolve-on-node=true":   designResolveOnNode,
		"--resolve-on-node=false": designPerNode,
		"-resolve-on-node=false --kube-api-qps=100": designPerNode,
		"--resolve-on-node --resolve-on-node=false": designPerNode,
		"--resolve-on-node=false --resolve-on-node": designResolveOnNode,
	} {
		if got := design(strings.Fields(args)); got != want {
			t.Errorf("%q: %s, want %s", args, got, want)
		}
	}
}

func TestBenchScaleReport(t *testing.T) {
	t.Run("per node, every target met", func(t *testing.T) {
		rows, text, failed := runReport(t, "--resolve-on-node=false", reportResult("", 100), reportResult(designPerNode, 1000))
		if failed || !strings.Contains(text, "## Targets (issue 20)") || strings.Contains(text, "MISSED") {
			t.Fatalf("exit 1 %v, want issue 20's targets all met:\n%s", failed, text)
		}
		if !strings.Contains(text, "- design: the manager resolves every node and writes its node state's spec.tuning (`--resolve-on-node=false`") ||
			!strings.Contains(text, "as in production (webhooks off: nothing here calls them) with `--resolve-on-node=false`") {
			t.Errorf("the run is not labelled the per-node design, --resolve-on-node=false:\n%s", text)
		}
		if verdict(t, rows, "rendered after a profile update") != "met" || verdict(t, rows, "growth of the update's render time") != "met" {
			t.Errorf("rows %v", rows)
		}
	})
	t.Run("per node, a target missed fails the run", func(t *testing.T) {
		slow := reportResult(designPerNode, 5000)
		slow["updateRenderedSeconds"] = 56.9
		rows, _, failed := runReport(t, "--resolve-on-node=false", reportResult(designPerNode, 100), slow)
		if !failed || verdict(t, rows, "5000 nodes rendered after a profile update") != "MISSED" {
			t.Errorf("exit 1 %v, rows %v: want the update MISSED and exit 1", failed, rows)
		}
	})
	t.Run("one size judges no growth", func(t *testing.T) {
		rows, _, failed := runReport(t, "--resolve-on-node=false", reportResult(designPerNode, 100))
		for k := range rows {
			if strings.Contains(k, "growth") {
				t.Errorf("a growth row from one size: %q", k)
			}
		}
		if failed {
			t.Errorf("exit 1 with every target met: %v", rows)
		}
	})
	t.Run("resolving on the node, issue 45's targets met", func(t *testing.T) {
		// The manager's default: no flag named.
		rows, text, failed := runReport(t, "", reportResult(designResolveOnNode, 100), reportResult(designResolveOnNode, 1000))
		if failed || !strings.Contains(text, "## Targets (issue 45)") || strings.Contains(text, "MISSED") {
			t.Fatalf("exit 1 %v, want issue 45's targets all met:\n%s", failed, text)
		}
		if !strings.Contains(text, "- design: agents resolve their own node (the manager's `--resolve-on-node`, its default;") {
			t.Errorf("the run is not labelled the design of agents resolving their own node:\n%s", text)
		}
		for _, what := range []string{"every agent acting on its new tuning after a profile update", "every agent acting on its new tuning after a profile create",
			"manager writes for a profile update", "node state status writes per changed node", "manager peak RSS", "no node", "reboot slots",
			"every verdict, beyond the pods' own run", "benchmark status writes per verdict"} {
			if v := verdict(t, rows, what); v != "met" {
				t.Errorf("%s: %s", what, v)
			}
		}
		if !strings.Contains(text, "< 200 MiB") {
			t.Errorf("no 200 MiB RSS target:\n%s", text)
		}
	})
	t.Run("a small fleet's two status writes a wave of 5 do not count against batching", func(t *testing.T) {
		small := reportResult(designResolveOnNode, 100)
		small["BenchStatusWrites"] = 40 // 20 waves of 5: its Jobs started, its verdicts
		rows, _, failed := runReport(t, "--resolve-on-node", small, reportResult(designResolveOnNode, 1000))
		if v := verdict(t, rows, "benchmark status writes per verdict"); failed || v != "met" {
			t.Errorf("exit 1 %v, %s: want met (judged on the 1,000-node benchmark)", failed, v)
		}
	})
	t.Run("the benchmark step alone judges only the benchmark's targets", func(t *testing.T) {
		only := func(nodes int) map[string]any {
			r := reportResult(designPerNode, nodes)
			r["only"] = "benchmark"
			for _, k := range []string{"updateRenderedSeconds", "DriftSeenS", "DriftClearedS", "RolloutS", "WritesPerChangedNode"} {
				r[k] = 0.0
			}
			r["RolloutBudget"], r["RolloutMaxHeld"] = 0, 0
			return r
		}
		rows, text, failed := runReport(t, "", only(1000), only(5000))
		if failed || !strings.Contains(text, "## Targets (issue 45, the benchmark step)") || strings.Contains(text, "rendered after") || strings.Contains(text, "reboot slots") {
			t.Fatalf("exit 1 %v, want only the benchmark's targets, all met:\n%s", failed, text)
		}
		if v := verdict(t, rows, "every verdict, beyond the pods' own run"); v != "met" {
			t.Errorf("beyond the pods' run: %s", v)
		}
		slow := only(5000)
		slow["BenchS"] = 259.5
		if rows, _, failed := runReport(t, "", only(1000), slow); !failed || verdict(t, rows, "every verdict, beyond the pods' own run") != "MISSED" {
			t.Errorf("exit 1 %v, rows %v: want the benchmark MISSED at 5000 and exit 1", failed, rows)
		}
	})
	for name, c := range map[string]struct {
		change func(r map[string]any)
		row    string
	}{
		"a node state write per changed node": {func(r map[string]any) {
			r["ChangedWrites"].(map[string]int64)["latencynodestates PATCH"] = int64(r["nodes"].(int))
		}, "manager writes for a profile update"},
		"the manager's writes growing with the fleet": {func(r map[string]any) { r["UpdateManagerWrites"] = 4000 }, "manager writes for a profile update"},
		"two status writes per changed node":          {func(r map[string]any) { r["UpdateStatusWrites"] = 2 * r["nodes"].(int) }, "node state status writes per changed node"},
		"250 MiB":                                     {func(r map[string]any) { r["PeakRSSMiB"] = 250.0 }, "manager peak RSS"},
		"12 s to every agent acting":                  {func(r map[string]any) { r["updateRenderedSeconds"] = 12.0 }, "after a profile update"},
		"a benchmark 31 s beyond its pods' run":       {func(r map[string]any) { r["BenchS"] = 51.0 }, "every verdict, beyond the pods' own run"},
		"a status write per verdict":                  {func(r map[string]any) { r["BenchStatusWrites"] = 1000 }, "benchmark status writes per verdict"},
		"the benchmark's status writes not recorded":  {func(r map[string]any) { delete(r, "BenchStatusWrites") }, "benchmark status writes per verdict"},
	} {
		t.Run("resolving on the node, "+name+" fails the run", func(t *testing.T) {
			big := reportResult(designResolveOnNode, 5000)
			c.change(big)
			rows, _, failed := runReport(t, "--resolve-on-node", reportResult(designResolveOnNode, 100), big)
			if v := verdict(t, rows, c.row); !failed || v != "MISSED" {
				t.Errorf("exit 1 %v, %q %s: want MISSED and exit 1 (rows %v)", failed, c.row, v, rows)
			}
		})
	}
}
