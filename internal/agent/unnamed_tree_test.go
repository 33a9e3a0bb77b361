package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestTreeActsBeforeNodeState runs an agent with ResolveOnNode on a host-root tree whose node has
// no node state (the manager does not run here): it applies the runtime settings of the profile
// that wins its node, and nothing else, before the node state exists; the node state's arrival
// changes nothing on the host; a profile that does not win the node changes nothing; and once no
// profile wins the node, the agent restores the originals by itself.
func TestTreeActsBeforeNodeState(t *testing.T) {
	node, profile := agenttest.Name("unnamed"), agenttest.Name("unnamed-p")
	a := agenttest.NewTreeAgent(t, node)
	a.R.ResolveOnNode = true
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"tsagt-unnamed": "yes"}}}
	if err := k8s.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	orig := agenttest.Snapshot(t, a.Root)
	agenttest.StartAgent(t, cfg, a.R, nil)
	swappiness := func() string { return readTree(t, a, "proc/sys/vm/swappiness") }
	g := gomega.NewWithT(t)

	// Profiles that do not win the node: one selecting other nodes, two tied for it. Nothing moves.
	createProfile(t, profile+"-other", tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsagt-unnamed": "no"}},
		Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "5"},
	})
	for _, tie := range []string{"-tie1", "-tie2"} {
		createProfile(t, profile+tie, tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsagt-unnamed": "yes"}},
			Priority:     50,
			Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "7"},
		})
	}
	g.Consistently(swappiness).WithTimeout(3*a.R.CheckPeriod).WithPolling(100*time.Millisecond).Should(gomega.Equal("60"),
		"vm.swappiness with profiles that select other nodes, or tie for this one")

	// The winner (the highest priority): its runtime settings before any node state exists.
	createProfile(t, profile, tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsagt-unnamed": "yes"}},
		Priority:     100,
		Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "10"},
		Kernel:       &tsv1.KernelSpec{AdditionalArgs: []string{"tsagt.unnamed=1"}},
	})
	tsutil.Poll(t, 20*time.Second, "the winner's runtime settings applied before the node state", func() error {
		if got := swappiness(); got != "10" {
			return fmt.Errorf("vm.swappiness %q, want the winner's 10", got)
		}
		return nil
	})
	// Nothing but the runtime settings, the journal of their originals and the saved tuning: no
	// kernel argument in the boot configuration, no reboot, no taint, no node state.
	if d := hosttest.Diff(orig, agenttest.Snapshot(t, a.Root)); !diffOnly(d, "proc/sys/vm/swappiness:", "var/lib/tickstack/tuning-journal.json:",
		strings.TrimPrefix(agent.DesiredPath, "/")+":", "var/lib/tickstack/pod-controls.json:") {
		t.Errorf("the host changed before the node state beyond the runtime settings:\n%s", strings.Join(d, "\n"))
	}
	if n := len(agenttest.Lines(t, a.Reboots)); n != 0 {
		t.Errorf("rebooted %d times before the node state", n)
	}
	if tainted(t, node) {
		t.Errorf("node tainted %s on the first tuning of an unlabelled node", tsv1.TuningPendingTaint)
	}
	if err := k8s.Get(context.Background(), clientKey(node), &tsv1.LatencyNodeState{}); !apierrors.IsNotFound(err) {
		t.Errorf("a node state exists (%v): the agent never creates one", err)
	}

	// The manager's node state arrives, handed over: Applied but for the kernel argument, which
	// waits for a reboot slot; the runtime settings are not applied again (no drift, no taint).
	before := agenttest.Snapshot(t, a.Root)
	createResolvingLNS(t, node, profile)
	tsutil.Poll(t, 20*time.Second, "the node state reports the resolution in effect", func() error {
		l := getLNS(t, node)
		if err := wantResolved(l, getProfile(t, profile)); err != nil {
			return err
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionFalse, agent.ReasonPendingReboot)
	})
	if got := swappiness(); got != "10" {
		t.Errorf("vm.swappiness %q after the node state came, want 10", got)
	}
	if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); !diffOnly(d, "etc/default/grub.d", "var/lib/tickstack") {
		t.Errorf("the node state's arrival changed the host beyond the boot configuration:\n%s", strings.Join(d, "\n"))
	}
	if len(events(t, node, tsv1.NodeDrifted)) > 0 {
		t.Errorf("drift reported when the node state came: %v", events(t, node, tsv1.NodeDrifted))
	}
	// The Applied event, which needs the node state, names what was applied before it.
	tsutil.Poll(t, 10*time.Second, "an Applied event for the settings applied before the node state", func() error {
		for _, e := range events(t, node, agent.ReasonApplied) {
			if strings.Contains(e.Note, "before its node state existed") && strings.Contains(e.Note, "vm.swappiness") {
				return nil
			}
		}
		return fmt.Errorf("Applied events %v", events(t, node, agent.ReasonApplied))
	})
	if tainted(t, node) {
		t.Errorf("node tainted %s when the node state came for a tuning already in effect", tsv1.TuningPendingTaint)
	}

	// The node state goes while the profile still wins the node: the agent restores through its
	// finalizer, then acts again before the next node state (the manager would create it).
	deleteLNS(t, node)
	tsutil.Poll(t, 20*time.Second, "acting again before the next node state", func() error {
		if got := swappiness(); got != "10" {
			return fmt.Errorf("vm.swappiness %q, want the winner's 10", got)
		}
		return nil
	})

	// The winner goes before a node state came: the tie is back, nobody wins, the agent restores
	// the originals itself and removes the saved tuning.
	if err := k8s.Delete(context.Background(), getProfile(t, profile)); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "the originals restored without a node state", func() error {
		if got := swappiness(); got != "60" {
			return fmt.Errorf("vm.swappiness %q, want the original 60", got)
		}
		if _, err := os.Stat(a.R.Host.Path(agent.DesiredPath)); !os.IsNotExist(err) {
			return fmt.Errorf("the saved tuning %s is still there (%v)", agent.DesiredPath, err)
		}
		return nil
	})
	j, err := a.R.Engine.Journal()
	if err != nil || len(j) != 0 {
		t.Errorf("journal after the restore: %d entries (%v), want none", len(j), err)
	}
}

// diffOnly says whether every line of a hosttest.Diff is about a path that starts with one of the
// prefixes.
func diffOnly(diff []string, prefixes ...string) bool {
	for _, d := range diff {
		ok := false
		for _, p := range prefixes {
			ok = ok || strings.HasPrefix(d, p)
		}
		if !ok {
			return false
		}
	}
	return true
}
