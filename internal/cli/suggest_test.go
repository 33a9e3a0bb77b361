package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/webhook"
)

// hostFacts are this machine's facts as its agent reports them: the agent's own discovery and
// mapping, run on the real host.
func hostFacts(t *testing.T) (*host.Facts, *tsv1.NodeFacts) {
	t.Helper()
	f, err := (&host.Host{Root: "/", NIC: &host.EthtoolNIC{}}).Discover()
	if err != nil {
		t.Fatalf("discovering this host's facts: %v", err)
	}
	return f, agent.NodeFacts(f)
}

// runSuggest runs `tickstack profile suggest` with args and returns its output.
func runSuggest(t *testing.T, c client.Client, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runSuggestIn(t, c, "", args...)
}

// runSuggestIn runs it with stdin as standard input.
func runSuggestIn(t *testing.T, c client.Client, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := NewProfileCmd(func() (client.Client, error) { return c, nil })
	cmd.SetIn(strings.NewReader(stdin))
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"suggest"}, args...))
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// readSuggested reads the printed profile strictly and checks it against the host's topology and
// the webhook's rules.
func readSuggested(t *testing.T, out string, f *host.Facts) *tsv1.LatencyProfile {
	t.Helper()
	p := &tsv1.LatencyProfile{}
	if err := yaml.UnmarshalStrict([]byte(out), p); err != nil {
		t.Fatalf("the output is not a LatencyProfile: %v\n%s", err, out)
	}
	if _, errs := webhook.ValidateProfileSpec(&p.Spec, field.NewPath("spec")); len(errs) > 0 {
		t.Errorf("the webhook refuses the printed profile: %v", errs.ToAggregate())
	}
	reserved, err1 := cpuset.Parse(string(p.Spec.CPU.Reserved))
	isolated, err2 := cpuset.Parse(string(p.Spec.CPU.Isolated))
	if err1 != nil || err2 != nil || reserved.IsEmpty() || !reserved.Intersection(isolated).IsEmpty() {
		t.Fatalf("reserved %q isolated %q: not two disjoint CPU lists", p.Spec.CPU.Reserved, p.Spec.CPU.Isolated)
	}
	for _, c := range f.CPUs {
		if !c.Siblings.Contains(c.ID) {
			t.Fatalf("CPU %d: siblings %s", c.ID, c.Siblings)
		}
		for _, s := range c.Siblings.CPUs() {
			if reserved.Contains(c.ID) != reserved.Contains(s) || isolated.Contains(c.ID) != isolated.Contains(s) {
				t.Errorf("CPU %d and its sibling %d are split: reserved %s isolated %s", c.ID, s, reserved, isolated)
			}
		}
	}
	for _, id := range reserved.Union(isolated).List() {
		if !f.OnlineCPUs.Contains(id) {
			t.Errorf("CPU %d is not online here (%s)", id, f.OnlineCPUs)
		}
	}
	return p
}

// writeJSON writes v as facts.json in a temporary directory and returns its path.
func writeJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.WriteFile(t, t.TempDir(), "facts.json", string(raw))
}

func TestSuggestFromThisHostsFactsFile(t *testing.T) {
	f, facts := hostFacts(t)
	path := writeJSON(t, facts)
	out, _, err := runSuggest(t, nil, "-f", path, "--node", "this-host")
	if err != nil {
		t.Fatalf("suggest -f: %v", err)
	}
	p := readSuggested(t, out, f)
	if p.Name != "latency-this-host" || p.Spec.NodeSelector.MatchLabels[corev1.LabelHostname] != "this-host" {
		t.Errorf("name %q selector %v", p.Name, p.Spec.NodeSelector)
	}
	if !strings.HasPrefix(out, "# Suggested by tickstack profile suggest") || !strings.Contains(out, "\n    # Housekeeping") && !strings.Contains(out, "# Too small to split") {
		t.Errorf("the YAML lacks its comments:\n%s", out)
	}
	// The NIC group, when there is one, names interfaces of this host with their drivers.
	for _, g := range p.Spec.NICs {
		for _, name := range g.Selector.InterfaceNames {
			found := false
			for _, i := range f.Interfaces {
				found = found || (i.Name == name && (len(g.Selector.Drivers) == 0 || i.Driver == g.Selector.Drivers[0]))
			}
			if !found {
				t.Errorf("NIC %s (drivers %v) is not an interface of this host", name, g.Selector.Drivers)
			}
		}
	}

	// -o json prints the same profile.
	j, _, err := runSuggest(t, nil, "-f", path, "--node", "this-host", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	pj := &tsv1.LatencyProfile{}
	if err := json.Unmarshal([]byte(j), pj); err != nil || !reflect.DeepEqual(pj.Spec, p.Spec) {
		t.Errorf("-o json: %v\n%s", err, j)
	}

	// -f - reads the facts from standard input.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if in, _, err := runSuggestIn(t, nil, string(raw), "-f", "-", "--node", "this-host"); err != nil || in != out {
		t.Errorf("-f -: %v\n%s", err, in)
	}

	// A suggestion the webhook's rules refuse is an error, and nothing is printed.
	out, _, err = runSuggest(t, nil, "-f", path, "--name", "fleet", "--selector", "bad key!=x")
	if err == nil || !strings.Contains(err.Error(), "webhook would refuse") || !strings.Contains(err.Error(), "spec.nodeSelector") || out != "" {
		t.Errorf("bad selector: error %v, output %q", err, out)
	}
}

func TestSuggestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	good := write("good.json", `{"onlineCPUs":"0-3","numaNodes":[{"id":0,"cpus":"0-3","hugepageSizes":["2Mi"]}]}`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "needs --node NAME"},
		{[]string{"-f", write("empty.json", "\n")}, "is empty"},
		{[]string{"-f", write("typo.json", `{"onlineCPU":"0-3"}`)}, `unknown field "onlineCPU"`},
		{[]string{"-f", write("lns.json", `{"onlineCPUs":"0-3","facts":{}}`)}, "not a node state's status.facts"},
		{[]string{"-f", filepath.Join(dir, "missing.json")}, "reading the facts"},
		{[]string{"-f", good}, "--node"},
		{[]string{"-f", good, "--node", "n", "-o", "table"}, `-o "table": choose yaml or json`},
		{[]string{"-f", good, "--node", "n", "--hugepages", "lots"}, "--hugepages \"lots\""},
	} {
		_, _, err := runSuggest(t, nil, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	out, _, err := runSuggest(t, nil, "-f", good, "--node", "n", "--hugepages", "64Mi")
	if err != nil || !strings.Contains(out, "count: 32") {
		t.Errorf("--hugepages 64Mi: %v\n%s", err, out)
	}
}

// TestSuggestFromTheCluster reads a node state holding this host's real facts from a real API
// server, and checks that the printed profile is one the API server accepts (schema and CEL) and
// the same as the one suggested from the facts file kubectl makes of that node state.
func TestSuggestFromTheCluster(t *testing.T) {
	f, facts := hostFacts(t)
	c := startAPIServer(t)
	ctx := context.Background()
	mustCreate(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-7", Labels: map[string]string{corev1.LabelHostname: "worker-7-host"}}})
	nodeState(t, c, "worker-7", "bootstrap", nil, facts)

	out, _, err := runSuggest(t, c, "--node", "worker-7")
	if err != nil {
		t.Fatalf("suggest --node: %v", err)
	}
	p := readSuggested(t, out, f)
	if p.Spec.NodeSelector.MatchLabels[corev1.LabelHostname] != "worker-7-host" {
		t.Errorf("selector %v, want the node's hostname label", p.Spec.NodeSelector)
	}
	if err := c.Create(ctx, p.DeepCopy()); err != nil {
		t.Errorf("the API server refuses the suggested profile: %v", err)
	}

	// kubectl get lns worker-7 -o jsonpath='{.status.facts}' > facts.json: the field as stored.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(tsv1.GroupVersion.WithKind("LatencyNodeState"))
	if err := c.Get(ctx, client.ObjectKey{Name: "worker-7"}, u); err != nil {
		t.Fatal(err)
	}
	stored, ok, err := unstructured.NestedMap(u.Object, "status", "facts")
	if err != nil || !ok {
		t.Fatalf("status.facts: %v %v", ok, err)
	}
	offline, _, err := runSuggest(t, c, "-f", writeJSON(t, stored), "--node", "worker-7")
	if err != nil {
		t.Fatal(err)
	}
	po := readSuggested(t, offline, f)
	po.Spec.NodeSelector, p.Spec.NodeSelector = metav1.LabelSelector{}, metav1.LabelSelector{}
	if !reflect.DeepEqual(po.Spec, p.Spec) {
		t.Errorf("from the facts file:\n%s\nfrom the cluster:\n%s", offline, out)
	}

	// A node without a node state, and one whose agent has not reported yet.
	if _, _, err := runSuggest(t, c, "--node", "worker-9"); err == nil || !strings.Contains(err.Error(), "no LatencyNodeState worker-9") {
		t.Errorf("missing node state: %v", err)
	}
	nodeState(t, c, "worker-8", "bootstrap", nil, nil)
	if _, _, err := runSuggest(t, c, "--node", "worker-8"); err == nil || !strings.Contains(err.Error(), "no status.facts yet") {
		t.Errorf("node state without facts: %v", err)
	}
}
