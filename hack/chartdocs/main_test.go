package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `
# -- The registry.
imageRegistry: localhost
agent:
  # -- Its resources.
  resources:
    requests: {cpu: 10m}
  # The boot unit.
  bootUnit:
    # -- Where it goes;
    # empty: none.
    unitDir: /etc/systemd/system
`
	groups, err := parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []group{
		{values: []value{{"imageRegistry", `"localhost"`, "The registry."}}},
		{name: "agent", values: []value{
			{"agent.resources", `{"requests":{"cpu":"10m"}}`, "Its resources."},
			{"agent.bootUnit.*", "", "The boot unit."},
			{"agent.bootUnit.unitDir", `"/etc/systemd/system"`, "Where it goes; empty: none."},
		}},
	}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("parse:\n got %+v\nwant %+v", groups, want)
	}
}

// A value without a "# --" comment is refused by its path, so the README never leaves one out.
func TestUndocumentedValueRefused(t *testing.T) {
	for src, path := range map[string]string{
		"top: 1\n": "top",
		"agent:\n  # just a note\n  checkPeriod: 30s\n": "agent.checkPeriod",
		"agent:\n  bootUnit:\n    unitDir: /x\n":        "agent.bootUnit.unitDir",
	} {
		_, err := parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want one naming %s", src, err, path)
		}
	}
}

// The committed README is what the generator makes of the committed values.yaml.
func TestChartREADMECurrent(t *testing.T) {
	dir := filepath.Join("..", "..", "charts", "tickstack")
	want, err := readme(dir)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Error("charts/tickstack/README.md is stale: run make manifests (go run ./hack/chartdocs charts/tickstack)")
	}
}
