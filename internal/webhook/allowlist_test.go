package webhook

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/policy"
)

// The CRD's CEL rule on spec.sysctls and the agent's allow-list must name the same keys: a key the
// CRD accepts but the agent refuses would fail on the node instead of at kubectl apply.
func TestCRDSysctlAllowListMatchesTheAgent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "tickstack.io_latencyprofiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`self\.all\(k, k in \[([^\]]*)\]\)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("no sysctl allow-list rule found in the CRD")
	}
	var crd []string
	for _, k := range strings.Split(string(m[1]), ",") {
		crd = append(crd, strings.Trim(strings.TrimSpace(k), "'"))
	}
	slices.Sort(crd)
	if agent := policy.AllowedSysctlKeys(); !slices.Equal(crd, agent) {
		t.Errorf("CRD allow-list %v\nagent allow-list %v\nedit the marker on LatencyProfileSpec.Sysctls and run make manifests", crd, agent)
	}
}

func TestPFNameProblem(t *testing.T) {
	for pf, bad := range map[string]bool{"ens1f0": false, "ens1f0#0-3": false, "ens1f0#2-2": false, "#0-1": true, "ens1f0#3-1": true, "ens1f0#a-b": true, "ens1f0#1": true} {
		if got := pfNameProblem(pf) != ""; got != bad {
			t.Errorf("pfNameProblem(%q) flagged=%v, want %v", pf, got, bad)
		}
	}
}
