// Package architecture enforces the import rules of docs/architecture.md over the module's real
// dependency graph (`go list -deps`, test files excluded): the API depends on nothing of the
// implementation, the operator never links the node's host code, the agent never links the
// operator's, and nothing links the test helpers into a binary.
package architecture

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tickstack/tickstack/"

// rule forbids the packages matching from (a path, or a path followed by /... for it and those below
// it), except those matching except, to depend, directly or not, on any package matching one of
// never, except those in but.
type rule struct {
	from   []string
	except []string
	never  []string
	but    []string
	why    string
}

var rules = []rule{
	{from: []string{"api/..."}, never: []string{"..."}, but: []string{"api/..."},
		why: "the API is types, constants and validation markers: it imports nothing of this module"},
	{from: []string{"internal/..."}, never: []string{"controllers/...", "cmd/...", "test/..."},
		why: "the libraries under internal/ never depend on the controllers, the binaries or the test suites"},
	{from: []string{"cmd/manager", "controllers/...", "internal/webhook/..."},
		never: []string{"internal/agent/...", "internal/host/...", "internal/tuning/...", "internal/bootloader/...", "internal/bypass/...",
			"internal/nriplugin/...", "internal/cli/...", "internal/plan/...", "internal/report/...", "internal/manifest/...", "internal/qualify/...",
			"internal/bench", "internal/ptp/..."},
		but: []string{"internal/host/cpuset"},
		why: "the operator links no host-tuning code, no CLI code, no NIC qualification, not the benchmark runner and not linuxptp's supervision (the CPU list parser excepted; it judges with internal/bench/judge, and the PTP defaults are the API's)"},
	{from: []string{"internal/bench/judge/..."}, never: []string{"..."}, but: []string{"api/...", "internal/bench/judge/..."},
		why: "the benchmark judge is pure (validation, verdict, comparisons, results I/O over the API's types): the operator, the report and the CLI link it"},
	{from: []string{"..."}, except: []string{"cmd/tickstack-bench", "cmd/tickstack", "internal/qualify/..."}, never: []string{"internal/bench"},
		why: "the benchmark runner (sockperf, rt-tests, the reflector, PTP reads) is linked by tickstack-bench and the CLI's NIC qualification only: everything else judges with internal/bench/judge"},
	{from: []string{"internal/bench/..."}, never: []string{"internal/qualify/...", "internal/host/..."}, but: []string{"internal/host/cpuset"},
		why: "the NIC qualification that reads the host sits above the benchmark runner, in cmd/tickstack and cmd/tickstack-bench"},
	{from: []string{"cmd/agent", "internal/agent/..."},
		never: []string{"controllers/...", "internal/webhook/...", "internal/render/...", "internal/bench/...", "internal/bmc/...",
			"internal/cli/...", "internal/plan/...", "internal/resolve/...", "internal/report/...", "internal/manifest/..."},
		but: []string{"internal/resolve"},
		why: "the node agent links the host layer (host, tuning, bootloader, ptp), none of the operator's; its one exception is internal/resolve, the resolution a node with spec.profile.resolveOnNode makes of itself (shared with the manager and tickstack plan, not copied)"},
	{from: []string{"internal/resolve/..."}, never: []string{"..."}, but: []string{"api/...", "internal/resolve/..."},
		why: "the resolution is pure (a profile and a node's facts in, a tuning out): the manager, the CLI's plan and the agent link it, so it links nothing else of this module"},
	{from: []string{"internal/suggest/..."}, never: []string{"..."}, but: []string{"api/...", "internal/suggest/..."},
		why: "the profile suggestion is pure (facts in, profile out): the CLI reads the facts and runs the webhook's rules on it"},
	{from: []string{"cmd/..."}, never: []string{"internal/testutil/...", "internal/host/hosttest/...", "internal/agent/agenttest/...", "internal/bench/judge/judgetest/...",
		"internal/qualify/qualifytest/..."},
		why: "no binary links a test helper"},
}

// controllerPackages are the operator's controller packages, one per concern. Only the wiring,
// controllers (SetupControllers), imports them.
var controllerPackages = []string{"profile", "benchmark", "bios", "network", "node", "guard"}

func init() {
	for _, c := range controllerPackages {
		rules = append(rules, rule{from: []string{"controllers/" + c + "/..."}, never: []string{"controllers/..."},
			but: []string{"controllers/" + c + "/...", "controllers/shared/..."},
			why: "a controller package imports no other controller package: what two share is in controllers/shared"})
	}
	rules = append(rules, rule{from: []string{"controllers/shared/..."}, never: []string{"controllers/..."}, but: []string{"controllers/shared/..."},
		why: "the controllers' shared helpers import no controller package"})
}

func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return pkg == pattern
}

// applies says whether the rule holds pkg to its never list.
func (r rule) applies(pkg string) bool {
	return matchAny(r.from, pkg) && !matchAny(r.except, pkg)
}

func matchAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if match(p, pkg) {
			return true
		}
	}
	return false
}

// graph returns every package of the module (tagged ones too) with its module dependencies, both
// relative to the module path.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tags := range []string{"", "e2e"} {
		cmd := exec.Command("go", "list", "-tags="+tags, "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...")
		cmd.Dir = "../.."
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, stderr.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			pkg, ok := strings.CutPrefix(f[0], module)
			if !ok {
				continue
			}
			var deps []string
			for _, d := range f[1:] {
				if rel, ok := strings.CutPrefix(d, module); ok {
					deps = append(deps, rel)
				}
			}
			out[pkg] = deps
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	g := graph(t)
	if len(g) < 20 {
		t.Fatalf("go list found %d packages of the module: the test does not see the tree", len(g))
	}
	for _, r := range rules {
		matched := 0
		for pkg, deps := range g {
			if !r.applies(pkg) {
				continue
			}
			matched++
			for _, d := range deps {
				if matchAny(r.never, d) && !matchAny(r.but, d) {
					t.Errorf("%s depends on %s: %s (docs/architecture.md)", pkg, d, r.why)
				}
			}
		}
		if matched == 0 {
			t.Errorf("rule %v matches no package: fix the rule", r.from)
		}
	}
}

// clients are the Kubernetes client libraries; a pure package links none of them.
var clients = []string{"k8s.io/client-go/", "sigs.k8s.io/controller-runtime/"}

// TestSuggestLinksNoClient checks what the module rules cannot see: the profile suggestion links no
// Kubernetes client, directly or through the API package.
func TestSuggestLinksNoClient(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", module+"internal/suggest")
	cmd.Dir = "../.."
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(b))
	if len(deps) < 10 {
		t.Fatalf("go list -deps found %d packages: the test does not see the package", len(deps))
	}
	for _, d := range deps {
		for _, c := range clients {
			if strings.HasPrefix(d, c) {
				t.Errorf("internal/suggest depends on %s: it computes a profile from facts and reaches no API server (docs/architecture.md)", d)
			}
		}
	}
}

// TestRulesCanFail checks the matcher on a graph that breaks every rule, so a rule that matches
// nothing by mistake cannot pass silently.
func TestRulesCanFail(t *testing.T) {
	bad := map[string]string{
		"api/v1alpha1":          "internal/bench",
		"internal/bench":        "controllers",
		"cmd/manager":           "internal/tuning",
		"controllers":           "internal/bypass",
		"internal/agent":        "internal/webhook",
		"cmd/agent":             "internal/plan",
		"internal/resolve":      "internal/host",
		"cmd/tickstack":         "internal/testutil",
		"internal/webhook":      "internal/host",
		"internal/suggest":      "internal/webhook",
		"controllers/benchmark": "internal/bench",
		"internal/report":       "internal/bench",
		"internal/bench/judge":  "internal/ptp",
		"controllers/profile":   "internal/ptp",
		"controllers/bios":      "controllers/profile",
		"controllers/node":      "controllers/benchmark",
		"controllers/guard":     "controllers",
		"controllers/shared":    "controllers/bios",
		"cmd/manager/x":         "internal/bench/judge/judgetest",
	}
	for pkg, dep := range bad {
		broken := false
		for _, r := range rules {
			if r.applies(pkg) && matchAny(r.never, dep) && !matchAny(r.but, dep) {
				broken = true
			}
		}
		if !broken {
			t.Errorf("no rule forbids %s -> %s", pkg, dep)
		}
	}
	if !matchAny(rules[2].but, "internal/host/cpuset") || matchAny(rules[2].but, "internal/host") {
		t.Error("the CPU list parser exception matches the wrong packages")
	}
	// the agent's one exception is internal/resolve: every other operator package stays refused
	forbids := func(pkg, dep string) bool {
		for _, r := range rules {
			if r.applies(pkg) && matchAny(r.never, dep) && !matchAny(r.but, dep) {
				return true
			}
		}
		return false
	}
	if forbids("internal/agent", "internal/resolve") || forbids("cmd/agent", "internal/resolve") {
		t.Error("a rule forbids the agent internal/resolve, its one exception")
	}
	for _, dep := range []string{"internal/plan", "internal/render", "internal/webhook", "internal/bmc", "internal/resolve/x", "controllers/profile"} {
		if !forbids("internal/agent", dep) || !forbids("cmd/agent", dep) {
			t.Errorf("no rule forbids the agent %s: the exception for internal/resolve lets more through", dep)
		}
	}
	if !forbids("internal/resolve", "internal/tuning") || !forbids("internal/resolve", "controllers/shared") {
		t.Error("no rule keeps internal/resolve pure: the agent's exception would link what it imports")
	}
	// the judge is not the runner: the operator may link it
	for _, r := range rules {
		if r.applies("cmd/manager") && matchAny(r.never, "internal/bench/judge") && !matchAny(r.but, "internal/bench/judge") {
			t.Error("a rule forbids the operator the benchmark judge")
		}
	}
	// a controller package may import its own subpackages and the shared helpers; the wiring all of them
	for pkg, dep := range map[string]string{"controllers/profile": "controllers/shared", "controllers/bios/x": "controllers/bios",
		"controllers": "controllers/benchmark", "cmd/manager": "controllers/node"} {
		for _, r := range rules {
			if r.applies(pkg) && matchAny(r.never, dep) && !matchAny(r.but, dep) {
				t.Errorf("a rule forbids %s -> %s", pkg, dep)
			}
		}
	}
	for _, pkg := range []string{"cmd/tickstack-bench", "cmd/tickstack", "internal/qualify"} {
		for _, r := range rules {
			if r.applies(pkg) && matchAny(r.never, "internal/bench") {
				t.Errorf("a rule forbids %s the benchmark runner it runs", pkg)
			}
		}
	}
}

// runner is the benchmark runner's package: the node-side code that execs the tools.
const runner = module + "internal/bench"

// linked returns what the binary of package pkg links: `go list -deps`, the way the Go linker sees it.
func linked(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", module+pkg)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	return strings.Fields(string(b))
}

// links reports whether deps hold the package p itself (not one below it).
func links(deps []string, p string) bool {
	return slices.Contains(deps, p)
}

// TestManagerLinksNoRunner checks the manager's binary: it judges benchmarks (internal/bench/judge)
// and links no benchmark runner. The same check over tickstack-bench, which must link the runner,
// shows it can fail.
func TestManagerLinksNoRunner(t *testing.T) {
	manager := linked(t, "cmd/manager")
	if !links(manager, module+"controllers") || !links(manager, module+"internal/bench/judge") {
		t.Fatalf("go list -deps cmd/manager holds neither the controllers nor the judge (%d packages): the test does not see the binary", len(manager))
	}
	if links(manager, runner) {
		t.Errorf("cmd/manager links %s: the operator judges with internal/bench/judge and never links the runner (docs/architecture.md)", runner)
	}
	if links(manager, module+"internal/ptp") {
		t.Errorf("cmd/manager links internal/ptp: the node's linuxptp supervision; the operator reads the PTP defaults from the API (docs/architecture.md)")
	}
	if !links(linked(t, "cmd/tickstack-bench"), runner) {
		t.Errorf("the check finds no %s in tickstack-bench, which runs it: the check cannot fail", runner)
	}
}
