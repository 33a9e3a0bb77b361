package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
)

// grantRecorder watches a profile's node states and checks, at every event, the rollout's
// invariants: no node is granted a reboot slot twice, and no more nodes hold a slot at once than
// the budget allows. It keeps every violation with the event that showed it.
type grantRecorder struct {
	budget int

	mu         sync.Mutex
	granted    map[string]bool
	grants     map[string]int
	grantTimes map[string]time.Time
	maxHeld    int
	violations []string
	// timeline is every change seen, for the failure message.
	timeline []string
}

func (g *grantRecorder) observe(l *tsv1.LatencyNodeState, deleted bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := l.Spec.RebootGranted && !deleted
	if now && !g.granted[l.Name] {
		g.grants[l.Name]++
		g.grantTimes[l.Name] = time.Now()
		if g.grants[l.Name] > 1 {
			g.violations = append(g.violations, fmt.Sprintf("%s granted a reboot slot a second time (resourceVersion %s)", l.Name, l.ResourceVersion))
		}
	}
	g.granted[l.Name] = now
	phase := ""
	if l.Status.Reboot != nil {
		phase = string(l.Status.Reboot.Phase)
	}
	g.timeline = append(g.timeline, fmt.Sprintf("rv %s %s granted=%v phase=%q rebootRequired=%v deleted=%v", l.ResourceVersion, l.Name, now, phase,
		meta.IsStatusConditionTrue(l.Status.Conditions, tsv1.NodeRebootRequired), deleted))
	held := 0
	for _, v := range g.granted {
		if v {
			held++
		}
	}
	g.maxHeld = max(g.maxHeld, held)
	if held > g.budget {
		g.violations = append(g.violations, fmt.Sprintf("%d nodes hold a reboot slot at once after %s's change (resourceVersion %s), budget %d",
			held, l.Name, l.ResourceVersion, g.budget))
	}
}

// run records every change of the node states matching sel until ctx ends (watchAll).
func (g *grantRecorder) run(ctx context.Context, cl client.WithWatch, sel client.MatchingLabels) {
	watchAll(ctx, cl, func() client.ObjectList { return &tsv1.LatencyNodeStateList{} }, sel, func(o client.Object, deleted bool) {
		if l, ok := o.(*tsv1.LatencyNodeState); ok {
			g.observe(l, deleted)
		}
	})
}

// grantedCount is how many nodes were granted a slot so far.
func (g *grantRecorder) grantedCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.grants)
}

func (g *grantRecorder) snapshot() (grants map[string]int, times map[string]time.Time, maxHeld int, violations []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	grants, times = map[string]int{}, map[string]time.Time{}
	for k, v := range g.grants {
		grants[k] = v
	}
	for k, v := range g.grantTimes {
		times[k] = v
	}
	return grants, times, g.maxHeld, append([]string(nil), g.violations...)
}

// failoverLease is the Lease the test's operator replicas elect their leader on.
const failoverLease = "tsint-failover.tickstack.io"

// replica is one operator instance: a manager with leader election and every controller.
type replica struct {
	name   string
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startReplica runs an operator replica as cmd/manager runs it with --leader-elect, but with short
// lease durations and without releasing the Lease when it stops: a stopped replica is a crashed
// one, and the other must wait out the lease before it takes over.
func startReplica(t *testing.T, c client.Client, name string) *replica {
	t.Helper()
	mgr := newOperator(t, c, ctrl.Options{
		LeaderElection:          true,
		LeaderElectionID:        failoverLease,
		LeaderElectionNamespace: operatorNS,
		// Short, but with room for a loaded machine: a leader that misses its renewals would stop
		// on its own (and fail the test).
		LeaseDuration: ptr.To(10 * time.Second),
		RenewDeadline: ptr.To(7 * time.Second),
		RetryPeriod:   ptr.To(500 * time.Millisecond),
	}, bios.BIOSReconciler{})
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the replica (once) and reports an error it ended with.
func (r *replica) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("replica %s: %v", r.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("replica %s did not stop", r.name)
		}
	})
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// TestLeaderKilledMidRolloutNewLeaderContinues runs two operator replicas with leader election
// against one API server and four agents on host-root trees. A profile with kernel arguments
// rolls out with rollout.maxUnavailable 2. Once the leader has granted the first slots, it is
// stopped without handing over its Lease (a crash); the other replica takes the Lease when it
// expires and finishes the rollout. A watch on the node states checks at every change that no node
// is granted a slot twice and that no more than two nodes hold one at once; a watch on the nodes
// that no more than two are cordoned at once. At the end every node rebooted exactly once and
// none is left cordoned.
func TestLeaderKilledMidRolloutNewLeaderContinues(t *testing.T) {
	g := gomega.NewWithT(t)
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: agenttest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const budget = 2

	role := agenttest.Name("failover")
	names := []string{agenttest.Name("fa"), agenttest.Name("fb"), agenttest.Name("fc"), agenttest.Name("fd")}
	profileName := agenttest.Name("failover")
	grants := &grantRecorder{budget: budget, granted: map[string]bool{}, grants: map[string]int{}, grantTimes: map[string]time.Time{}}
	go grants.run(ctx, c, client.MatchingLabels{tsv1.ProfileLabel: profileName})
	cordons := &cordonRecorder{cordoned: map[string]bool{}}
	go cordons.run(ctx, c, client.MatchingLabels{"tickstack.io/role": role})

	// Two replicas; the first to win the Lease is the leader.
	replicas := []*replica{startReplica(t, c, "a"), startReplica(t, c, "b")}
	var leader, follower *replica
	g.Eventually(func() error {
		for i, r := range replicas {
			if r.elected() {
				leader, follower = r, replicas[1-i]
				return nil
			}
		}
		return fmt.Errorf("no replica elected yet")
	}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	t.Logf("replica %s leads, %s follows", leader.name, follower.name)

	agents := map[string]*agenttest.TreeAgent{}
	for _, n := range names {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"tickstack.io/role": role}}}); err != nil {
			t.Fatal(err)
		}
		a := agenttest.NewTreeAgent(t, n)
		agents[n] = a
		agenttest.StartAgent(t, restCfg, a.R, nil)
	}
	profile := &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: profileName},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": role}},
			CPU:          &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-3"},
			Rollout:      &tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(budget))},
		},
	}
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}

	// The leader grants the first wave; then it dies, its Lease held.
	g.Eventually(grants.grantedCount).WithTimeout(90 * time.Second).WithPolling(20 * time.Millisecond).Should(gomega.BeNumerically(">=", budget))
	if follower.elected() {
		t.Fatalf("replica %s was elected while %s led", follower.name, leader.name)
	}
	leader.stop(t)
	killed := time.Now()
	t.Logf("stopped the leader %s after %d grants", leader.name, grants.grantedCount())

	// The follower takes the Lease once it expires.
	g.Eventually(follower.elected).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.BeTrue())
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: failoverLease}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("the Lease records no transition: %+v", lease.Spec)
	}
	t.Logf("replica %s took over %v after the kill (holder %s)", follower.name, time.Since(killed).Round(time.Millisecond), ptr.Deref(lease.Spec.HolderIdentity, ""))

	// The new leader finishes the rollout.
	done := func(n string) error {
		l := &tsv1.LatencyNodeState{}
		if err := c.Get(ctx, client.ObjectKey{Name: n}, l); err != nil {
			return err
		}
		rc := meta.FindStatusCondition(l.Status.Conditions, tsv1.NodeRebootRequired)
		if l.Status.Reboot != nil || rc == nil || rc.Status != metav1.ConditionFalse || rc.Reason != agent.ReasonKernelArgsInEffect {
			return fmt.Errorf("%s: reboot %+v, RebootRequired %+v", n, l.Status.Reboot, rc)
		}
		if l.Spec.RebootGranted {
			return fmt.Errorf("%s still holds its slot", n)
		}
		return nil
	}
	for _, n := range names {
		g.Eventually(func() error { return done(n) }).WithTimeout(120 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	}
	g.Eventually(profileReady(ctx, c, profile)).WithTimeout(60 * time.Second).Should(gomega.Succeed())

	granted, times, maxHeld, violations := grants.snapshot()
	for _, v := range violations {
		t.Error(v)
	}
	if len(violations) > 0 {
		grants.mu.Lock()
		t.Logf("every node state change seen:\n%s", strings.Join(grants.timeline, "\n"))
		grants.mu.Unlock()
	}
	var after []string
	for _, n := range names {
		if granted[n] != 1 {
			t.Errorf("%s was granted a reboot slot %d times, want exactly 1", n, granted[n])
		}
		if times[n].After(killed) {
			after = append(after, n)
		}
		if got := agenttest.Lines(t, agents[n].Reboots); len(got) != 1 {
			t.Errorf("%s rebooted %d times, want exactly 1", n, len(got))
		}
		if nodeOf(t, c, n).Spec.Unschedulable {
			t.Errorf("%s left cordoned", n)
		}
	}
	if len(after) == 0 {
		t.Errorf("no slot was granted after the leader was stopped: the new leader did not continue the rollout")
	}
	if maxHeld > budget || maxHeld < 1 {
		t.Errorf("at most %d nodes held a slot at once, want 1 to %d", maxHeld, budget)
	}
	maxCordoned, order := cordons.snapshot()
	if maxCordoned > budget {
		t.Errorf("%d nodes were cordoned at once, budget %d (cordons in order: %v)", maxCordoned, budget, order)
	}
	slices.Sort(after)
	t.Logf("granted by the new leader: %s; most slots held at once: %d; cordons in order: %v", strings.Join(after, ", "), maxHeld, order)

	// Deleting the profile restores every node, through the new leader.
	if err := c.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error {
		var list tsv1.LatencyNodeStateList
		if err := c.List(ctx, &list, client.MatchingLabels{tsv1.ProfileLabel: profileName}); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d node states left", len(list.Items))
		}
		return nil
	}).WithTimeout(60 * time.Second).Should(gomega.Succeed())
}
