package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tickstack/tickstack/internal/testutil"
)

// monitoringOn renders every monitoring object: the ServiceMonitor, the agents' metrics and their
// PodMonitor, the PrometheusRule and the dashboard.
var monitoringOn = []string{"metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
	"agent.metrics.enabled=true", "metrics.dashboard.enabled=true"}

// promtool is the promtool of the prometheus package pinned in hack/promtool.sha256
// (hack/promtool.sh fetches it into the cache once; hack/install-deps.sh does in make test). Where it
// cannot be had the test is skipped, and fails in CI.
func promtool(t *testing.T) string {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", "promtool.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		testutil.Unavailable(t, "promtool from the pinned prometheus package: hack/promtool.sh: "+err.Error()+"\n"+stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

func one(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	of := ofKind(objs, kind)
	if len(of) != 1 {
		t.Fatalf("want one %s, got %d", kind, len(of))
	}
	return of[0]
}

// writeRules writes the rendered PrometheusRule's spec as a plain rules file in dir.
func writeRules(t *testing.T, objs []*unstructured.Unstructured, dir string) (string, []map[string]any) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(one(t, objs, "PrometheusRule").Object, "spec")
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "tickstack-rules.yaml")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var rules []map[string]any
	groups, _, _ := unstructured.NestedSlice(spec, "groups")
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			rules = append(rules, r.(map[string]any))
		}
	}
	return f, rules
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// TestPrometheusRules runs promtool check rules on the chart's rules, as it renders them with and
// without the agents' PodMonitor, and promtool test rules with testdata/rules_test.yaml, which must
// hold for every alert a case where it fires and one where it does not.
func TestPrometheusRules(t *testing.T) {
	pt := promtool(t)

	t.Run("without the agents' PodMonitor", func(t *testing.T) {
		dir := t.TempDir()
		f, rules := writeRules(t, mustRender(t, "metrics.prometheusRule.enabled=true"), dir)
		run(t, dir, pt, "check", "rules", f)
		for _, r := range rules {
			if strings.HasPrefix(r["alert"].(string), "TickstackAgent") {
				t.Errorf("alert %s renders without the PodMonitor whose job it watches", r["alert"])
			}
		}
	})

	dir := t.TempDir()
	f, rules := writeRules(t, mustRender(t, monitoringOn...), dir)
	run(t, dir, pt, "check", "rules", f)
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, pt, "test", "rules", "rules_test.yaml")

	// Every alert has a firing and a quiet case, and every alert keeps a severity, a summary and a
	// description.
	var file struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &file); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, r := range rules {
		name, _ := r["alert"].(string)
		alerts = append(alerts, name)
		if !fires[name] || !quiet[name] {
			t.Errorf("alert %s: testdata/rules_test.yaml needs a case where it fires (%v) and one where it does not (%v)", name, fires[name], quiet[name])
		}
		sev, _, _ := unstructured.NestedString(r, "labels", "severity")
		summary, _, _ := unstructured.NestedString(r, "annotations", "summary")
		desc, _, _ := unstructured.NestedString(r, "annotations", "description")
		if sev == "" || summary == "" || desc == "" {
			t.Errorf("alert %s lacks a severity, summary or description", name)
		}
	}
	for _, want := range []string{"TickstackNodeDrifted", "TickstackNodeDegraded", "TickstackTimeSyncLost", "TickstackSystemClockOffset",
		"TickstackBenchmarkFailed", "TickstackBenchmarkStale", "TickstackRebootStuck", "TickstackAgentDown", "TickstackAgentMetricsAbsent"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("the PrometheusRule lacks %s: %v", want, alerts)
		}
	}
}

// TestPrometheusRuleThresholds: the thresholds' values reach the expressions, in the units the
// expressions compare.
func TestPrometheusRuleThresholds(t *testing.T) {
	objs := mustRender(t, "metrics.prometheusRule.enabled=true", "metrics.prometheusRule.maxSystemOffsetNs=100000",
		"metrics.prometheusRule.benchmarkStaleAfter=36h", "metrics.prometheusRule.drainTimeout=20m", "metrics.prometheusRule.rebootGrace=90s")
	_, rules := writeRules(t, objs, t.TempDir())
	exprs := map[string]string{}
	for _, r := range rules {
		exprs[r["alert"].(string)] = r["expr"].(string)
	}
	for alert, want := range map[string][]string{
		"TickstackSystemClockOffset": {"> 100000"},
		"TickstackBenchmarkStale":    {"> 129600"},
		"TickstackRebootStuck":       {"+ 1200", "+ 90"},
	} {
		for _, w := range want {
			if !strings.Contains(exprs[alert], w) {
				t.Errorf("%s: %q lacks %q", alert, exprs[alert], w)
			}
		}
	}
	if _, err := render(t, "metrics.prometheusRule.enabled=true", "metrics.prometheusRule.benchmarkStaleAfter=1w"); err == nil ||
		!strings.Contains(err.Error(), "/metrics/prometheusRule/benchmarkStaleAfter") {
		t.Errorf("a duration in weeks: error %v, want the schema to refuse it", err)
	}
}

// TestMonitoringObjects: the agents' metrics endpoint and its PodMonitor, off by default; the
// PodMonitor scrapes the port the agent serves, and the rules watch the job it makes.
func TestMonitoringObjects(t *testing.T) {
	for _, kind := range []string{"PodMonitor", "ConfigMap"} {
		for _, sets := range [][]string{nil, {"metrics.serviceMonitor.enabled=true"}, {"agent.metrics.enabled=true"}} {
			for _, o := range ofKind(mustRender(t, sets...), kind) {
				if kind == "PodMonitor" || strings.HasSuffix(o.GetName(), "-dashboard") {
					t.Errorf("--set %v renders %s %s", sets, kind, o.GetName())
				}
			}
		}
	}
	if args := agentContainer(t, mustRender(t))["args"]; strings.Contains(strings.Join(toStrings(args), " "), "--metrics-bind-address") {
		t.Errorf("the agent serves metrics by default: %v", args)
	}

	objs := mustRender(t, append(slices.Clone(monitoringOn), "agent.metrics.port=9555")...)
	c := agentContainer(t, objs)
	if !slices.Contains(toStrings(c["args"]), "--metrics-bind-address=:9555") {
		t.Errorf("agent args %v lack --metrics-bind-address=:9555", c["args"])
	}
	var portName string
	ports, _ := c["ports"].([]any)
	for _, p := range ports {
		pm := p.(map[string]any)
		if fmt.Sprint(pm["containerPort"]) == "9555" {
			portName, _ = pm["name"].(string)
		}
	}
	pm := one(t, objs, "PodMonitor")
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(eps) != 1 || portName == "" || eps[0].(map[string]any)["port"] != portName {
		t.Errorf("PodMonitor endpoints %v, want the agent's port %q (9555)", eps, portName)
	}
	if honor, _ := eps[0].(map[string]any)["honorLabels"].(bool); !honor {
		t.Error("the PodMonitor must honour the series' labels: a bypass process's namespace and pod are its own, not the agent's")
	}
	relabel, _ := json.Marshal(eps[0].(map[string]any)["relabelings"])
	if !strings.Contains(string(relabel), `"sourceLabels":["__meta_kubernetes_pod_node_name"],"targetLabel":"node"`) {
		t.Errorf("the PodMonitor does not label the agents' series with their node: %s", relabel)
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	ds := agentDaemonSet(t, objs)
	podLabels, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "template", "metadata", "labels")
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("the PodMonitor selects %s=%s, the agent pods have %v", k, v, podLabels)
		}
	}
	// prometheus-operator names a PodMonitor's job <namespace>/<name>: the agent alerts watch it.
	job := `up{job="` + pm.GetNamespace() + "/" + pm.GetName() + `"}`
	_, rules := writeRules(t, objs, t.TempDir())
	for _, r := range rules {
		if strings.HasPrefix(r["alert"].(string), "TickstackAgent") && !strings.Contains(r["expr"].(string), job) {
			t.Errorf("%s: %q does not watch %s", r["alert"], r["expr"], job)
		}
	}
	sm := one(t, objs, "ServiceMonitor")
	smEps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if honor, _, _ := unstructured.NestedBool(smEps[0].(map[string]any), "honorLabels"); !honor {
		t.Error("the ServiceMonitor must honour the series' labels: a benchmark's namespace is its own, not the manager's")
	}
}

func agentDaemonSet(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, o := range ofKind(objs, "DaemonSet") {
		if strings.HasSuffix(o.GetName(), "-agent") {
			return o
		}
	}
	t.Fatal("no agent DaemonSet rendered")
	return nil
}

func agentContainer(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(agentDaemonSet(t, objs).Object, "spec", "template", "spec", "containers")
	return cs[0].(map[string]any)
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// metricName is a tickstack metric named in a query.
var metricName = regexp.MustCompile(`\btickstack_[a-z0-9_]+\b`)

// exportedMetrics are the metric names the code declares: the Name of a GaugeVec/CounterVec's
// options and the first argument of prometheus.NewDesc, in the module's non-test Go sources.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// a metric is declared by its options' Name, a NewDesc or controllers/benchmark's gaugeVec
	decl := regexp.MustCompile(`(?:\bName:\s*|\bNewDesc\(\s*|\bgaugeVec\(\s*)"(tickstack_[a-z0-9_]+)"`)
	names := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata" || n == "vendor" || n == "dataplane") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The collection must see each exporter, or a broken pattern would let every query pass.
	for _, known := range []string{"tickstack_profile_nodes", "tickstack_benchmark_verdict", "tickstack_node_condition", "tickstack_ptp_time_synced"} {
		if !names[known] {
			t.Fatalf("the metrics found in the sources lack %s: %v", known, names)
		}
	}
	return names
}

// dashboardQueries are the PromQL queries of a Grafana dashboard: every target's expr, in rows too,
// and the template variables' queries, by where they are.
func dashboardQueries(t *testing.T, dash map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(panels []any)
	walk = func(panels []any) {
		for _, p := range panels {
			pm := p.(map[string]any)
			title, _ := pm["title"].(string)
			if sub, ok := pm["panels"].([]any); ok {
				walk(sub)
			}
			if pm["type"] == "row" {
				continue
			}
			targets, _ := pm["targets"].([]any)
			if len(targets) == 0 {
				t.Errorf("panel %q queries nothing", title)
			}
			for _, tg := range targets {
				tm := tg.(map[string]any)
				expr, _ := tm["expr"].(string)
				if expr == "" {
					t.Errorf("panel %q has a target without expr", title)
				}
				out["panel "+title+" "+tm["refId"].(string)] = expr
			}
		}
	}
	panels, _ := dash["panels"].([]any)
	if len(panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	walk(panels)
	vars, _, _ := unstructured.NestedSlice(dash, "templating", "list")
	for _, v := range vars {
		vm := v.(map[string]any)
		if vm["type"] != "query" {
			continue
		}
		q, _, _ := unstructured.NestedString(vm, "query", "query")
		if q == "" {
			q, _ = vm["query"].(string)
		}
		out["variable "+vm["name"].(string)] = q
	}
	return out
}

// TestMonitoringQueriesUseExportedMetrics: the dashboard ConfigMap (off by default, labelled for the
// Grafana sidecar) holds valid JSON, and every query of the dashboard and every alert expression
// names only metrics the code exports, so that renaming a metric breaks this test rather than a panel
// or an alert.
func TestMonitoringQueriesUseExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	objs := mustRender(t, append(slices.Clone(monitoringOn), "metrics.dashboard.labels.grafana_dashboard=null",
		"metrics.dashboard.labels.dashboards=tickstack", "metrics.dashboard.annotations.grafana_folder=Trading")...)
	var cm *unstructured.Unstructured
	for _, o := range ofKind(objs, "ConfigMap") {
		if strings.HasSuffix(o.GetName(), "-dashboard") {
			cm = o
		}
	}
	if cm == nil {
		t.Fatal("metrics.dashboard.enabled renders no dashboard ConfigMap")
	}
	if cm.GetNamespace() != namespace || cm.GetLabels()["dashboards"] != "tickstack" || cm.GetAnnotations()["grafana_folder"] != "Trading" {
		t.Errorf("dashboard ConfigMap %s/%s labels %v annotations %v: want the release namespace, the labels and annotations asked for",
			cm.GetNamespace(), cm.GetName(), cm.GetLabels(), cm.GetAnnotations())
	}
	if _, has := cm.GetLabels()["grafana_dashboard"]; has {
		t.Error("the default sidecar label stays although the values removed it")
	}
	for _, o := range ofKind(mustRender(t, "metrics.dashboard.enabled=true"), "ConfigMap") {
		if strings.HasSuffix(o.GetName(), "-dashboard") && o.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("the dashboard ConfigMap is not labelled grafana_dashboard: \"1\" by default: %v", o.GetLabels())
		}
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 {
		t.Fatalf("the dashboard ConfigMap holds %d files, want one", len(data))
	}
	queries := map[string]string{}
	for file, raw := range data {
		var dash map[string]any
		if err := json.Unmarshal([]byte(raw), &dash); err != nil {
			t.Fatalf("%s is not valid JSON: %v", file, err)
		}
		if dash["uid"] == "" || dash["title"] == "" {
			t.Errorf("%s lacks a uid or title", file)
		}
		queries = dashboardQueries(t, dash)
	}
	_, rules := writeRules(t, objs, t.TempDir())
	for _, r := range rules {
		queries["alert "+r["alert"].(string)] = r["expr"].(string)
	}
	used := map[string]bool{}
	for where, q := range queries {
		names := metricName.FindAllString(q, -1)
		if len(names) == 0 && !strings.HasPrefix(where, "alert TickstackAgent") {
			t.Errorf("%s names no tickstack metric: %q", where, q)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s queries %s, which the code does not export: %q", where, n, q)
			}
		}
	}
	// The dashboard covers the views (per-node offsets, time sync, the last benchmark's
	// percentiles, node conditions and drift, reboot phases).
	for _, n := range []string{"tickstack_ptp_offset_nanoseconds", "tickstack_ptp_system_offset_nanoseconds", "tickstack_ptp_time_synced",
		"tickstack_benchmark_latency_seconds", "tickstack_node_condition", "tickstack_node_reboot_phase"} {
		if !used[n] {
			t.Errorf("no query uses %s", n)
		}
	}
	var all []string
	for n := range used {
		all = append(all, n)
	}
	sort.Strings(all)
	t.Logf("metrics queried: %s", strings.Join(all, " "))
}
