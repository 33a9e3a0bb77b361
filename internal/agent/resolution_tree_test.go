package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/resolve"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// createProfile creates a LatencyProfile as a user would (the manager does not run here: the
// agent reads it directly) and deletes it at the end.
func createProfile(t *testing.T, name string, spec tsv1.LatencyProfileSpec) {
	t.Helper()
	p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
}

func getProfile(t *testing.T, name string) *tsv1.LatencyProfile {
	t.Helper()
	return getObj[tsv1.LatencyProfile](t, name)
}

// createResolvingLNS creates the node state as a manager with --resolve-on-node would: the
// profile named, resolveOnNode set, no spec.tuning.
func createResolvingLNS(t *testing.T, node, profile string) {
	t.Helper()
	lns := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{tsv1.ProfileLabel: profile}},
		Spec:       tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: profile, ResolveOnNode: true}},
	}
	createNodeState(t, lns)
}

func hasPendingTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == tsv1.TuningPendingTaint })
}

// taintLog records every change of the node's tuning-pending taint the API server reports, in
// order, through a watch of its own: a taint put on and taken off within one reconcile is seen.
type taintLog struct {
	mu     sync.Mutex
	states []bool
}

func watchTaint(t *testing.T, node string) *taintLog {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: agenttest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(context.Background(), &corev1.NodeList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", node)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	l := &taintLog{}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			l.mu.Lock()
			if on := hasPendingTaint(n); len(l.states) == 0 || l.states[len(l.states)-1] != on {
				l.states = append(l.states, on)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// since returns the taint's states recorded from index i on, and the next index.
func (l *taintLog) since(i int) ([]bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.states[i:]...), len(l.states)
}

// wantResolved checks status.resolved and status.tuning against the profile as it is now,
// resolved by the test with the same internal/resolve from the facts the agent reported.
func wantResolved(l *tsv1.LatencyNodeState, p *tsv1.LatencyProfile) error {
	want, err := resolve.Node(&p.Spec, l.Status.Facts)
	if err != nil {
		return fmt.Errorf("resolving profile %s for the test: %w", p.Name, err)
	}
	r := l.Status.Resolved
	if r == nil || r.Profile != p.Name || r.Generation != p.Generation || r.TuningHash != resolve.TuningHash(want) {
		return fmt.Errorf("status.resolved %+v, want profile %s generation %d hash %s", r, p.Name, p.Generation, resolve.TuningHash(want))
	}
	if !equality.Semantic.DeepEqual(l.Status.Tuning, want) {
		return fmt.Errorf("status.tuning %+v, want %+v", l.Status.Tuning, want)
	}
	if resolve.TuningHash(l.Status.Tuning) != r.TuningHash {
		return fmt.Errorf("status.resolved.tuningHash %s is not the hash of status.tuning", r.TuningHash)
	}
	return nil
}

// TestTreeResolveOnNode runs an agent on a host-root tree whose node state says
// spec.profile.resolveOnNode: it resolves its node from the profile and its facts and applies it;
// a profile change that does not move the node writes nothing; spec.tuning, when set, wins; a
// profile that does not fit, or is missing, is Degraded and changes nothing; a change that moves
// the node through a reboot keeps the tuning-pending taint on until Applied.
func TestTreeResolveOnNode(t *testing.T) {
	node, profile := agenttest.Name("resolve"), agenttest.Name("resolve-p")
	a := agenttest.NewTreeAgent(t, node)
	createNode(t, node)
	taints := watchTaint(t, node)
	createProfile(t, profile, tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsagt": "resolve"}},
		Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "10"},
	})
	createResolvingLNS(t, node, profile)
	agenttest.StartAgent(t, cfg, a.R, nil)

	// The agent resolves its node and applies the result.
	tsutil.Poll(t, 20*time.Second, "resolved and applied", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied); err != nil {
			return err
		}
		if tainted(t, node) {
			return fmt.Errorf("node still tainted %s", tsv1.TuningPendingTaint)
		}
		return wantResolved(l, getProfile(t, profile))
	})
	l := getLNS(t, node)
	if !slices.Equal(l.Status.Capabilities, []tsv1.AgentCapability{tsv1.CapabilityResolveOnNode}) {
		t.Errorf("status.capabilities %v, want [%s]", l.Status.Capabilities, tsv1.CapabilityResolveOnNode)
	}
	if l.Spec.Tuning != nil {
		t.Errorf("the agent wrote spec.tuning %+v", l.Spec.Tuning)
	}
	if got := readTree(t, a, "proc/sys/vm/swappiness"); got != "10" {
		t.Errorf("vm.swappiness %q, want the profile's 10", got)
	}
	// The boot unit applies the resolution after an unplanned reboot, as it would spec.tuning.
	var saved struct {
		Profile    string           `json:"profile"`
		Generation int64            `json:"generation"`
		Tuning     *tsv1.NodeTuning `json:"tuning"`
	}
	if err := json.Unmarshal([]byte(readTree(t, a, agent.DesiredPath)), &saved); err != nil {
		t.Fatal(err)
	}
	if saved.Profile != profile || saved.Generation != 1 || resolve.TuningHash(saved.Tuning) != l.Status.Resolved.TuningHash {
		t.Errorf("saved tuning for the boot unit: profile %s generation %d hash %s, want %s 1 %s",
			saved.Profile, saved.Generation, resolve.TuningHash(saved.Tuning), profile, l.Status.Resolved.TuningHash)
	}

	// A profile change that does not move this node writes nothing: neither the node state nor
	// the Node (the agent reconciles every second here, and on the profile's change).
	g := gomega.NewWithT(t)
	rv := func() string { return getLNS(t, node).ResourceVersion + "/" + getNode(t, node).ResourceVersion }
	steady := rv()
	g.Consistently(rv).WithTimeout(2*a.R.CheckPeriod).WithPolling(100*time.Millisecond).Should(gomega.Equal(steady), "writes in the steady state")
	// The node state's first tuning, on a Node without the profile label (no latency pod can land
	// there): never tainted. The watch's first event is the Node as created, untainted (checked after the steady state, so a taint's events had time to arrive).
	if got, _ := taints.since(0); !slices.Equal(got, []bool{false}) {
		t.Errorf("the taint's states %v on the first tuning of an unlabelled node, want [off]: no taint write", got)
	}
	patchObj[tsv1.LatencyProfile](t, profile, func(p *tsv1.LatencyProfile) { p.Spec.Priority = 5 })
	if p := getProfile(t, profile); p.Generation != 2 {
		t.Fatalf("profile generation %d after a spec change, want 2", p.Generation)
	}
	g.Consistently(rv).WithTimeout(3*a.R.CheckPeriod).WithPolling(100*time.Millisecond).Should(gomega.Equal(steady),
		"node state/Node resourceVersion after a profile change that does not move the node")
	if r := getLNS(t, node).Status.Resolved; r == nil || r.Generation != 1 {
		t.Errorf("status.resolved %+v, want generation 1 kept (the one that moved the node)", r)
	}
	_, mark := taints.since(0)

	// spec.tuning, when the operator sets it, wins over resolveOnNode; status.resolved and
	// status.tuning go, as they describe a resolution of the agent's own.
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) {
		l.Spec.Tuning = &tsv1.NodeTuning{Sysctls: map[string]string{"vm.swappiness": "30"}}
	})
	tsutil.Poll(t, 20*time.Second, "spec.tuning applied", func() error {
		l := getLNS(t, node)
		if l.Status.Resolved != nil || l.Status.Tuning != nil {
			return fmt.Errorf("status.resolved %+v, status.tuning %+v kept with spec.tuning set", l.Status.Resolved, l.Status.Tuning)
		}
		if l.Status.ObservedGeneration != l.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", l.Status.ObservedGeneration, l.Generation)
		}
		if got := readTree(t, a, "proc/sys/vm/swappiness"); got != "30" {
			return fmt.Errorf("vm.swappiness %q, want spec.tuning's 30", got)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	// Back to resolving: the resolution differs from spec.tuning's, so it moves the node again.
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning = nil })
	tsutil.Poll(t, 20*time.Second, "resolving again", func() error {
		l := getLNS(t, node)
		if err := wantResolved(l, getProfile(t, profile)); err != nil {
			return err
		}
		if got := readTree(t, a, "proc/sys/vm/swappiness"); got != "10" {
			return fmt.Errorf("vm.swappiness %q, want the profile's 10", got)
		}
		if tainted(t, node) {
			return fmt.Errorf("node still tainted %s", tsv1.TuningPendingTaint)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	if got, _ := taints.since(mark); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("the taint's states while going back to the resolution %v, want [on off]", got)
	}

	// The manager's switch of a live node (docs/architecture.md, "Compatibility"): spec.tuning
	// equal to the agent's resolution, then unset with resolveOnNode. Nothing on the host moves,
	// so the node is not tainted either way.
	_, mark = taints.since(0)
	same := getLNS(t, node).Status.Tuning.DeepCopy()
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning = same })
	tsutil.Poll(t, 20*time.Second, "the same tuning from spec.tuning", func() error {
		l := getLNS(t, node)
		if l.Status.Resolved != nil || l.Status.ObservedGeneration != l.Generation {
			return fmt.Errorf("status.resolved %+v, observedGeneration %d of %d", l.Status.Resolved, l.Status.ObservedGeneration, l.Generation)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	switched := agenttest.Snapshot(t, a.Root)
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning = nil })
	tsutil.Poll(t, 20*time.Second, "switched to resolving", func() error {
		l := getLNS(t, node)
		if err := wantResolved(l, getProfile(t, profile)); err != nil {
			return err
		}
		if l.Status.ObservedGeneration != l.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", l.Status.ObservedGeneration, l.Generation)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	if got, _ := taints.since(mark); len(got) > 0 {
		t.Errorf("the taint moved %v across a switch that changes nothing on the host", got)
	}
	if d := hosttest.Diff(switched, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
		t.Errorf("the host changed across the switch:\n%s", strings.Join(d, "\n"))
	}
	if len(events(t, node, tsv1.NodeDrifted)) > 0 {
		t.Errorf("drift reported across the switch: %v", events(t, node, tsv1.NodeDrifted))
	}

	// A profile that does not fit the node: Degraded naming the field and the fix; the host,
	// status.resolved and status.tuning keep what is in effect, and the node is not tainted.
	before := agenttest.Snapshot(t, a.Root)
	inEffect := getLNS(t, node).Status.DeepCopy()
	_, mark = taints.since(0)
	patchObj[tsv1.LatencyProfile](t, profile, func(p *tsv1.LatencyProfile) {
		p.Spec.Sysctls["vm.swappiness"] = "40"
		p.Spec.NICs = []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"ens9"}}}}
	})
	tsutil.Poll(t, 20*time.Second, "Degraded ResolutionFailed", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeDegraded, metav1.ConditionTrue, agent.ReasonResolutionFailed); err != nil {
			return err
		}
		if msg := condition(l, tsv1.NodeDegraded).Message; !strings.Contains(msg, "spec.nics[md].selector") || !strings.Contains(msg, "fix the selector") || !strings.Contains(msg, profile) {
			return fmt.Errorf("Degraded message %q names neither the profile, the field nor the fix", msg)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionFalse, agent.ReasonResolutionFailed)
	})
	deleteProfile := func() {
		if err := k8s.Delete(context.Background(), getProfile(t, profile)); err != nil {
			t.Fatal(err)
		}
	}
	deleteProfile()
	tsutil.Poll(t, 20*time.Second, "Degraded ProfileNotFound", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeDegraded, metav1.ConditionTrue, agent.ReasonProfileNotFound); err != nil {
			return err
		}
		if msg := condition(l, tsv1.NodeDegraded).Message; !strings.Contains(msg, "spec.profile.name") || !strings.Contains(msg, "create it") {
			return fmt.Errorf("Degraded message %q names neither the field nor the fix", msg)
		}
		return nil
	})
	l = getLNS(t, node)
	if !equality.Semantic.DeepEqual(l.Status.Resolved, inEffect.Resolved) || !equality.Semantic.DeepEqual(l.Status.Tuning, inEffect.Tuning) {
		t.Errorf("status.resolved %+v / status.tuning changed by a failed resolution, want %+v kept", l.Status.Resolved, inEffect.Resolved)
	}
	if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
		t.Errorf("the host changed on a failed resolution:\n%s", strings.Join(d, "\n"))
	}
	if got, _ := taints.since(mark); len(got) > 0 {
		t.Errorf("the taint moved %v on a failed resolution, which changes nothing", got)
	}

	// The profile again, now with a kernel argument: the new resolution needs a reboot. The taint
	// goes on before the runtime settings change and stays on through the pending reboot; the
	// operator grants the slot, and once Applied for the new boot it comes off.
	createProfile(t, profile, tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsagt": "resolve"}},
		Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "20"},
		Kernel:       &tsv1.KernelSpec{AdditionalArgs: []string{"tsagt.resolve=1"}},
	})
	tsutil.Poll(t, 20*time.Second, "reboot requested for the new resolution", func() error {
		l := getLNS(t, node)
		if err := wantResolved(l, getProfile(t, profile)); err != nil {
			return err
		}
		if l.Status.Reboot == nil || l.Status.Reboot.Phase != tsv1.RebootRequested {
			return fmt.Errorf("reboot %+v", l.Status.Reboot)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionFalse, agent.ReasonPendingReboot)
	})
	if got := readTree(t, a, "proc/sys/vm/swappiness"); got != "20" {
		t.Errorf("vm.swappiness %q, want the new resolution's 20 (runtime settings before the reboot)", got)
	}
	if !tainted(t, node) {
		t.Errorf("node not tainted %s while its new resolution waits for a reboot", tsv1.TuningPendingTaint)
	}
	setGranted(t, node, true)
	pollSlotDone(t, node, "applied after the reboot", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
		if tainted(t, node) {
			return fmt.Errorf("node still tainted %s", tsv1.TuningPendingTaint)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	setGranted(t, node, false)
	if n := len(agenttest.Lines(t, a.Reboots)); n != 1 {
		t.Errorf("rebooted %d times, want 1", n)
	}
	if got := readTree(t, a, "proc/cmdline"); !strings.Contains(got, "tsagt.resolve=1") {
		t.Errorf("cmdline after the reboot %q lacks the profile's argument", got)
	}
	deleteLNS(t, node)
	if tainted(t, node) {
		t.Errorf("node left tainted %s after its node state went", tsv1.TuningPendingTaint)
	}
}

// TestTreeActsBeforeNodeState runs an agent with ResolveOnNode on a host-root tree whose node has
// no node state (the manager does not run here): it applies the runtime settings of the profile
// that wins its node, and nothing else, before the node state exists; the node state's arrival
// changes nothing on the host; a profile that does not win the node changes nothing; and once no
// profile wins the node, the agent restores the originals by itself.
func TestTreeActsBeforeNodeState(t *testing.T) {
	a, node, orig := unnamedAgent(t, "unnamed")
	profile := agenttest.Name("unnamed-p")
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
	restoredBefore := len(events(t, node, "Restored"))
	deleteLNS(t, node)
	tsutil.Poll(t, 10*time.Second, "the finalizer's restore", func() error {
		if n := len(events(t, node, "Restored")); n <= restoredBefore {
			return fmt.Errorf("%d Restored events, want more than %d", n, restoredBefore)
		}
		return nil
	})
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

// TestTreeNoReapplyFromALaggingCache: after the finalizer's restore of a node state whose profile
// was deleted, an agent whose profile cache still shows that profile does not tune the node again
// from it (it confirms the winner with the API server first), and once the cache catches up it
// has nothing left to restore.
func TestTreeNoReapplyFromALaggingCache(t *testing.T) {
	lag := &laggingProfiles{}
	a, node, _ := unnamedAgentWrapped(t, "unnamed-lag", lag.wrap)
	profile := agenttest.Name("unnamed-lag-p")
	swappiness := func() string { return readTree(t, a, "proc/sys/vm/swappiness") }
	g := gomega.NewWithT(t)

	createProfile(t, profile, tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsagt-unnamed-lag": "yes"}},
		Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "10"},
	})
	g.Eventually(swappiness).WithTimeout(20*time.Second).WithPolling(50*time.Millisecond).Should(gomega.Equal("10"),
		"vm.swappiness: the winner applied before the node state")
	createResolvingLNS(t, node, profile)
	tsutil.Poll(t, 20*time.Second, "the node state Applied", func() error {
		return wantCondition(getLNS(t, node), tsv1.NodeApplied, metav1.ConditionTrue, "")
	})

	// The profile goes, then its node state (as the manager deletes it); the agent's profile
	// cache lags behind and still lists the profile.
	lag.freeze(t)
	if err := k8s.Delete(context.Background(), getProfile(t, profile)); err != nil {
		t.Fatal(err)
	}
	deleteLNS(t, node)
	g.Consistently(swappiness).WithTimeout(3*a.R.CheckPeriod).WithPolling(50*time.Millisecond).Should(gomega.Equal("60"),
		"vm.swappiness after the restore, the profile cache still showing the deleted profile")
	lag.thaw()
	g.Consistently(swappiness).WithTimeout(2*a.R.CheckPeriod).WithPolling(50*time.Millisecond).Should(gomega.Equal("60"),
		"vm.swappiness once the profile cache caught up")
	if j, err := a.R.Engine.Journal(); err != nil || len(j) != 0 {
		t.Errorf("journal after the restore: %d entries (%v), want none", len(j), err)
	}
	if _, err := os.Stat(a.R.Host.Path(agent.DesiredPath)); !os.IsNotExist(err) {
		t.Errorf("the saved tuning %s is still there (%v)", agent.DesiredPath, err)
	}
}

// laggingProfiles wraps the agent's cached client: while frozen, its LatencyProfile lists and gets
// answer from the list the cache gave when frozen, as an informer that has not seen the later
// changes yet.
type laggingProfiles struct {
	mu     sync.Mutex
	c      client.Client
	frozen *tsv1.LatencyProfileList
}

func (l *laggingProfiles) wrap(c client.Client) client.Client {
	l.c = c
	return &laggingClient{Client: c, lag: l}
}

func (l *laggingProfiles) freeze(t *testing.T) {
	t.Helper()
	list := &tsv1.LatencyProfileList{}
	if err := l.c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("the agent's cache lists no profile to lag with")
	}
	l.mu.Lock()
	l.frozen = list
	l.mu.Unlock()
}

func (l *laggingProfiles) thaw() {
	l.mu.Lock()
	l.frozen = nil
	l.mu.Unlock()
}

type laggingClient struct {
	client.Client
	lag *laggingProfiles
}

func (c *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if p, ok := obj.(*tsv1.LatencyProfile); ok {
		c.lag.mu.Lock()
		frozen := c.lag.frozen
		c.lag.mu.Unlock()
		if frozen != nil {
			for i := range frozen.Items {
				if frozen.Items[i].Name == key.Name {
					frozen.Items[i].DeepCopyInto(p)
					return nil
				}
			}
			return apierrors.NewNotFound(tsv1.GroupVersion.WithResource("latencyprofiles").GroupResource(), key.Name)
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *laggingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if pl, ok := list.(*tsv1.LatencyProfileList); ok {
		c.lag.mu.Lock()
		frozen := c.lag.frozen
		c.lag.mu.Unlock()
		if frozen != nil {
			frozen.DeepCopyInto(pl)
			return nil
		}
	}
	return c.Client.List(ctx, list, opts...)
}

// unnamedAgent starts a tree agent with ResolveOnNode for a new Node labelled tsagt-NAME=yes that
// has no node state; it returns the agent, the node's name and the tree as it was before the start.
func unnamedAgent(t *testing.T, name string) (*agenttest.TreeAgent, string, map[string]string) {
	return unnamedAgentWrapped(t, name, nil)
}

// unnamedAgentWrapped is unnamedAgent with the agent's cached client passed through wrap.
func unnamedAgentWrapped(t *testing.T, name string, wrap func(client.Client) client.Client) (*agenttest.TreeAgent, string, map[string]string) {
	node := agenttest.Name(name)
	a := agenttest.NewTreeAgent(t, node)
	a.R.ResolveOnNode = true
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"tsagt-" + name: "yes"}}}
	if err := k8s.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	orig := agenttest.Snapshot(t, a.Root)
	agenttest.StartAgentWrapped(t, cfg, a.R, nil, wrap)
	return a, node, orig
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

// TestTreeBeforeNodeStateReportAndEmptyJournal: before its node state, an agent honours a
// report-only profile (a change on the host after the apply is left as found, not set back every
// check period), and cleans up a node whose apply journalled nothing (no runtime setting: only the
// saved tuning on disk) when the profile goes.
func TestTreeBeforeNodeStateReportAndEmptyJournal(t *testing.T) {
	a, _, _ := unnamedAgent(t, "unnamed-report")
	profile := agenttest.Name("unnamed-report-p")
	swappiness := func() string { return readTree(t, a, "proc/sys/vm/swappiness") }
	selects := metav1.LabelSelector{MatchLabels: map[string]string{"tsagt-unnamed-report": "yes"}}
	saved := func() bool {
		_, err := os.Stat(a.R.Host.Path(agent.DesiredPath))
		return err == nil
	}

	createProfile(t, profile, tsv1.LatencyProfileSpec{
		NodeSelector: selects,
		Sysctls:      map[string]tsv1.SysctlValue{"vm.swappiness": "10"},
		Drift:        &tsv1.DriftSpec{Action: tsv1.DriftReport},
	})
	tsutil.Poll(t, 20*time.Second, "the report-only profile applied before the node state", func() error {
		if got := swappiness(); got != "10" {
			return fmt.Errorf("vm.swappiness %q, want 10", got)
		}
		if !saved() { // saved once the apply is over
			return fmt.Errorf("no saved tuning at %s yet", agent.DesiredPath)
		}
		return nil
	})
	tsutil.WriteFile(t, a.Root, "proc/sys/vm/swappiness", "33\n")
	gomega.NewWithT(t).Consistently(swappiness).WithTimeout(3*a.R.CheckPeriod).WithPolling(100*time.Millisecond).Should(gomega.Equal("33"),
		"vm.swappiness changed on the host under a report-only profile, before the node state")

	// The profile goes: the journalled original is back.
	if err := k8s.Delete(context.Background(), getProfile(t, profile)); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "the original restored", func() error {
		if got := swappiness(); got != "60" {
			return fmt.Errorf("vm.swappiness %q, want the original 60", got)
		}
		if saved() {
			return fmt.Errorf("the saved tuning %s is still there", agent.DesiredPath)
		}
		return nil
	})

	// A profile with no runtime setting (a kernel argument waits for the node state): the apply
	// journals nothing but saves the tuning; when the profile goes, the saved tuning goes too.
	createProfile(t, profile+"-same", tsv1.LatencyProfileSpec{
		NodeSelector: selects,
		Kernel:       &tsv1.KernelSpec{AdditionalArgs: []string{"tsagt.report=1"}},
	})
	tsutil.Poll(t, 20*time.Second, "the saved tuning of a profile with no runtime setting", func() error {
		if !saved() {
			return fmt.Errorf("no saved tuning at %s", agent.DesiredPath)
		}
		return nil
	})
	if j, err := a.R.Engine.Journal(); err != nil || len(j) != 0 {
		t.Fatalf("journal of an apply with no runtime setting: %d entries (%v), want none", len(j), err)
	}
	if err := k8s.Delete(context.Background(), getProfile(t, profile+"-same")); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "the saved tuning removed with an empty journal", func() error {
		if saved() {
			return fmt.Errorf("the saved tuning %s is still there", agent.DesiredPath)
		}
		return nil
	})
}
