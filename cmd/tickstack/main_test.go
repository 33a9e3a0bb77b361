package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

const goodProfile = `apiVersion: tickstack.io/v1alpha1
kind: LatencyProfile
metadata: {name: good}
spec:
  nodeSelector: {matchLabels: {tickstack.io/role: trading}}
  cpu: {reserved: "0", isolated: "1-3"}
`

const goodBenchmark = `apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata: {name: gate, namespace: default}
spec:
  target: {profile: good}
  suites:
    pingPong: {messageSizes: [64]}
`

// run runs the command tree as the binary does, with no kubeconfig reachable: what it prints and
// the error it exits with.
func run(t *testing.T, program string, stdin string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "nonexistent"))
	t.Setenv("HOME", "")
	root := newRoot(program)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// indent makes a YAML document one item of a YAML list.
func indent(doc string) string {
	lines := strings.Split(strings.TrimSuffix(doc, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	lines[0] = "-" + lines[0][1:]
	return strings.Join(lines, "\n") + "\n"
}

// TestBadInputsAreNamed feeds each kind of bad input to validate, plan and bench -f, with no
// cluster and no kubeconfig, and checks that the message names the field path or the document.
func TestBadInputsAreNamed(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cmd  string
		body string // "" with missing: the file does not exist
		want []string
	}{
		{"typo'd field", "validate", strings.Replace(goodProfile, "isolated:", "isloated:", 1),
			[]string{"document 1 (LatencyProfile good)", "spec.cpu.isloated: unknown field"}},
		{"typo'd metadata field", "validate", strings.Replace(goodProfile, "{name: good}", "{name: good, lables: {a: b}}", 1),
			[]string{"metadata.lables: unknown field"}},
		{"wrong type", "validate", strings.Replace(goodProfile, `reserved: "0"`, "reserved: 0", 1),
			[]string{"spec.cpu.reserved", "must be of type string"}},
		{"duplicate field", "validate", goodProfile + "  priority: 1\n  priority: 2\n",
			[]string{"document 1", "duplicate field", "priority"}},
		{"empty file", "validate", "# only a comment\n---\n", []string{"empty.yaml is empty"}},
		{"missing file", "validate", "", []string{"missing.yaml", "no such file"}},
		{"not YAML", "validate", "apiVersion: [tickstack.io\n", []string{"not-yaml.yaml document 1", "not YAML"}},
		{"a scalar", "validate", "just some words\n", []string{"document 1", "not an object"}},
		{"garbage second document", "validate", goodProfile + "---\n{{{ not: yaml\n",
			[]string{"document 1 (LatencyProfile good): valid", "document 2: invalid", "not YAML"}},
		{"overlapping CPU lists", "validate", strings.Replace(goodProfile, `isolated: "1-3"`, `isolated: "0-3"`, 1),
			[]string{"spec.cpu.isolated", "also in cpu.reserved"}},
		{"a CEL rule", "validate", goodProfile + "  hugepages: {defaultSize: 1Gi, pages: [{size: 2Mi, count: 4}]}\n",
			[]string{"spec.hugepages", "defaultSize must be the size of one of hugepages.pages"}},
		{"unknown kind", "validate", strings.Replace(goodProfile, "kind: LatencyProfile", "kind: LatencyProfil", 1),
			[]string{"document 1 (LatencyProfil good)", "kind: unknown kind \"LatencyProfil\"", "LatencyProfile"}},
		{"not a tickstack object", "validate", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			[]string{"(ConfigMap x)", "apiVersion", "not a tickstack object"}},
		{"an unserved version", "validate", strings.Replace(goodProfile, "v1alpha1", "v1", 1),
			[]string{"apiVersion", "tickstack.io/v1 is not served"}},
		{"a bad name", "validate", strings.Replace(goodProfile, "{name: good}", "{name: Good_Profile}", 1),
			[]string{"(LatencyProfile Good_Profile)", "metadata.name: Invalid value"}},
		{"a List with a bad item", "validate", "apiVersion: v1\nkind: List\nitems:\n" + indent(goodProfile) + indent(strings.Replace(goodBenchmark, "[64]", "[1]", 1)),
			[]string{"document 1 item 1 (LatencyProfile good): valid", "document 1 item 2 (LatencyBenchmark default/gate): invalid", "spec.suites: invalid benchmark spec: pingPong.messageSizes[0]", "Valid=False"}},
		{"no name", "validate", strings.Replace(goodProfile, "metadata: {name: good}", "metadata: {}", 1),
			[]string{"metadata.name", "Required"}},
		{"the benchmark controller's rule", "validate", goodBenchmark + "  schedule: \"61 * * * *\"\n",
			[]string{"(LatencyBenchmark default/gate)", "spec.schedule"}},
		{"a profile given to bench", "bench", goodBenchmark + "---\n" + goodProfile,
			[]string{"document 2 (LatencyProfile good)", "bench takes LatencyBenchmark, not LatencyProfile"}},
		{"a benchmark given to plan", "plan", goodBenchmark,
			[]string{"document 1 (LatencyBenchmark default/gate)", "plan takes LatencyProfile, not LatencyBenchmark"}},
		{"plan: a garbage second document", "plan", goodProfile + "---\n- 1\n- 2\n",
			[]string{"document 2", "not an object"}},
		{"plan: a typo", "plan", strings.Replace(goodProfile, "isolated:", "isloated:", 1),
			[]string{"(LatencyProfile good)", "spec.cpu.isloated: unknown field"}},
		{"plan: an empty file", "plan", "\n", []string{"empty.yaml is empty"}},
		{"bench: wrong type", "bench", strings.Replace(goodBenchmark, "[64]", "64", 1),
			[]string{"(LatencyBenchmark default/gate)", "spec.suites.pingPong.messageSizes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.NewReplacer(" ", "-", "'", "", ":", "").Replace(tc.name) + ".yaml"
			switch {
			case tc.name == "missing file":
				name = "missing.yaml"
			case strings.Contains(tc.name, "empty file"):
				name = "empty.yaml"
			case tc.name == "not YAML":
				name = "not-yaml.yaml"
			}
			path := filepath.Join(dir, tc.cmd, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				testutil.WriteFile(t, filepath.Dir(path), name, tc.body)
			}
			out, err := run(t, "tickstack", "", tc.cmd, "-f", path)
			if err == nil {
				t.Fatalf("accepted:\n%s", out)
			}
			all := out + err.Error()
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("the message does not say %q:\n%s", w, all)
				}
			}
			if strings.Contains(all, "kubeconfig") {
				t.Errorf("an offline refusal reached for the kubeconfig:\n%s", all)
			}
		})
	}
}

// TestValidateWithoutKubeconfig checks a good file from standard input with no kubeconfig anywhere,
// in text and as JSON, and a warning from the webhook's rules.
func TestValidateWithoutKubeconfig(t *testing.T) {
	in := goodProfile + "---\n" + goodBenchmark
	// The environment has no kubeconfig: a command that needs the cluster says so.
	if out, err := run(t, "tickstack", goodProfile, "plan", "-f", "-"); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("plan found a cluster without a kubeconfig: %v\n%s", err, out)
	}
	out, err := run(t, "tickstack", in, "validate", "-f", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"- document 1 (LatencyProfile good): valid", "- document 2 (LatencyBenchmark default/gate): valid"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	out, err = run(t, "tickstack", strings.Replace(in, `isolated: "1-3"`, `isolated: "0-3"`, 1), "validate", "-f", "-", "-o", "json")
	if err == nil {
		t.Fatal("an overlapping profile was accepted")
	}
	var results []struct {
		Document int    `json:"document"`
		Kind     string `json:"kind"`
		Valid    bool   `json:"valid"`
		Errors   []struct{ Field, Message string }
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	if len(results) != 2 || results[0].Valid || !results[1].Valid || len(results[0].Errors) != 1 || results[0].Errors[0].Field != "spec.cpu.isolated" {
		t.Errorf("results %+v, want document 1 refused at spec.cpu.isolated and document 2 valid", results)
	}
	out, _ = run(t, "tickstack", strings.Replace(goodProfile, "cpu:", "cpu: {reserved: \"0\", isolationMode: Strict}\n  x:", 1), "validate", "-f", "-", "-o", "yaml")
	if !strings.Contains(out, "document: 1") {
		t.Errorf("-o yaml:\n%s", out)
	}
}

// TestSamplesAreValid checks every sample of config/samples as `tickstack validate` does.
func TestSamplesAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want the samples in config/samples, found %v (%v)", files, err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		out, err := run(t, "tickstack", "", "validate", "-f", f)
		if err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
		if strings.Contains(out, "warning") {
			t.Errorf("%s: a sample with a warning:\n%s", f, out)
		}
	}
}

// TestKubectlPlugin checks that as kubectl-tickstack the usage says "kubectl tickstack" and the
// completion kubectl asks of a plugin answers.
func TestKubectlPlugin(t *testing.T) {
	out, err := run(t, "kubectl-tickstack", "", "validate", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubectl tickstack validate -f FILE|-") {
		t.Errorf("plugin usage does not say kubectl tickstack:\n%s", out)
	}
	// kubectl completes a plugin's arguments by running kubectl_complete-tickstack, which runs
	// kubectl-tickstack __complete (docs/cli.md).
	out, err = run(t, "kubectl-tickstack", "", "__complete", "val")
	if err != nil || !strings.Contains(out, "validate") {
		t.Errorf("the plugin's completion: %v\n%s", err, out)
	}
	out, err = run(t, "kubectl-tickstack", "", "__complete", "validate", "-")
	if err != nil || !strings.Contains(out, "--filename") || !strings.Contains(out, "--output") {
		t.Errorf("the plugin's flag completion: %v\n%s", err, out)
	}
	out, err = run(t, "tickstack", "", "__complete", "")
	if err != nil || !strings.Contains(out, "validate") {
		t.Errorf("completion of the subcommands: %v\n%s", err, out)
	}
}
