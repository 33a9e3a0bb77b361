package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestTreeDriftReportOnly: with spec.drift.action Report, a setting changed on the host after the
// apply is reported (Drifted=True, DriftReported, the setting's state Drifted with the value found)
// and left as found, check after check.
func TestTreeDriftReportOnly(t *testing.T) {
	node := agenttest.Name("report")
	a := agenttest.NewTreeAgent(t, node)
	startOnTree(t, a, node, &tsv1.NodeTuning{
		Sysctls:     map[string]string{"vm.stat_interval": "10", "vm.swappiness": "10"},
		DriftAction: tsv1.DriftReport,
	})
	pollApplied(t, node, 20*time.Second)
	if got := readTree(t, a, "proc/sys/vm/stat_interval"); got != "10" {
		t.Fatalf("stat_interval %q after the apply, want 10", got)
	}

	// Someone changes a setting on the host.
	if err := os.WriteFile(filepath.Join(a.Root, "proc/sys/vm/stat_interval"), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "drift reported", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeDrifted, metav1.ConditionTrue, agent.ReasonDriftReported); err != nil {
			return err
		}
		for _, st := range l.Status.Settings {
			if st.Name == "sysctl/vm.stat_interval" {
				if st.State != tsv1.SettingDrifted || st.Observed != "3" {
					return fmt.Errorf("setting %+v, want Drifted with observed 3", st)
				}
				return nil
			}
		}
		return fmt.Errorf("no status.settings entry for sysctl/vm.stat_interval: %+v", l.Status.Settings)
	})
	// Several check periods (1 s in the tree agent) later, the host still has the value found.
	gomega.NewWithT(t).Consistently(func() string { return readTree(t, a, "proc/sys/vm/stat_interval") }).
		WithTimeout(3500*time.Millisecond).WithPolling(100*time.Millisecond).
		Should(gomega.Equal("3"), "stat_interval set back although spec.drift.action is Report")
	if got := readTree(t, a, "proc/sys/vm/swappiness"); got != "10" {
		t.Errorf("an undrifted setting changed: swappiness %q", got)
	}
}
