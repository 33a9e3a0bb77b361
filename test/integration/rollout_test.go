// Package integration runs the real operator and several node agents in-process against one
// envtest API server: the reboot rollout across nodes, with each agent on its own host-root tree.
package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/testutil"
)

// cordonRecorder watches the nodes and records, event by event, which are cordoned.
type cordonRecorder struct {
	mu       sync.Mutex
	cordoned map[string]bool
	// max is the most nodes ever cordoned at once; cordons lists each cordon in order.
	max     int
	cordons []string
}

func (c *cordonRecorder) observe(n *corev1.Node, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := n.Spec.Unschedulable && !deleted
	if now && !c.cordoned[n.Name] {
		c.cordons = append(c.cordons, n.Name)
	}
	c.cordoned[n.Name] = now
	count := 0
	for _, v := range c.cordoned {
		if v {
			count++
		}
	}
	c.max = max(c.max, count)
}

// run records every change of the nodes matching sel until ctx ends (watchAll).
func (c *cordonRecorder) run(ctx context.Context, cl client.WithWatch, sel client.MatchingLabels) {
	watchAll(ctx, cl, func() client.ObjectList { return &corev1.NodeList{} }, sel, func(o client.Object, deleted bool) {
		if n, ok := o.(*corev1.Node); ok {
			c.observe(n, deleted)
		}
	})
}

// watchAll lists the objects of newList's kind matching sel, then watches them from the list's
// resource version, so that no change is missed; a watch that ends or fails (the API server may
// still be warming its watch cache) is resumed from the last resource version seen. observe gets
// every object listed and every change, in order, until ctx ends.
func watchAll(ctx context.Context, cl client.WithWatch, newList func() client.ObjectList, sel client.MatchingLabels, observe func(o client.Object, deleted bool)) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			list := newList()
			if err := cl.List(ctx, list, sel); err != nil {
				continue
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				panic(err) // a list type without items: the caller's mistake
			}
			for _, it := range items {
				if o, ok := it.(client.Object); ok {
					observe(o, false)
				}
			}
			rv = list.GetResourceVersion()
		}
		w, err := cl.Watch(ctx, newList(), sel, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		for ev := range w.ResultChan() {
			o, isObject := ev.Object.(client.Object)
			if ev.Type == watch.Error || !isObject {
				break
			}
			rv = o.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				observe(o, ev.Type == watch.Deleted)
			}
		}
		w.Stop()
	}
}

func (c *cordonRecorder) snapshot() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max, append([]string(nil), c.cordons...)
}

// TestRolloutRebootsEachNodeOnceWithOneSlot runs the operator (LatencyProfileReconciler in a
// manager) and three agents with their own host-root trees. A profile with kernel arguments and
// rollout.maxUnavailable 1 must reboot each node exactly once, never with two nodes cordoned at
// once. A PodDisruptionBudget blocks the drain of the first node: it ends DrainFailed naming the
// pod, uncordoned, and the next node proceeds; once the budget is gone the first node reboots
// too. Deleting the profile restores every tree.
func TestRolloutRebootsEachNodeOnceWithOneSlot(t *testing.T) {
	g := gomega.NewWithT(t)
	scheme := agenttest.Scheme()
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The operator.
	mgr := newOperator(t, c, ctrl.Options{}, bios.BIOSReconciler{})
	testutil.RunInBackground(t, ctx, "operator", mgr.Start)

	role := agenttest.Name("trading")
	names := []string{agenttest.Name("a"), agenttest.Name("b"), agenttest.Name("c")}
	rec := &cordonRecorder{cordoned: map[string]bool{}}
	go rec.run(ctx, c, client.MatchingLabels{"tickstack.io/role": role})

	agents := map[string]*agenttest.TreeAgent{}
	before := map[string]map[string]string{}
	for _, n := range names {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"tickstack.io/role": role}}}); err != nil {
			t.Fatal(err)
		}
		a := agenttest.NewTreeAgent(t, n)
		a.R.DrainPoll = 200 * time.Millisecond
		agents[n] = a
		before[n] = agenttest.Snapshot(t, a.Root)
		agenttest.StartAgent(t, restCfg, a.R, nil)
	}

	// Pods on the nodes (no kubelet: created with nodeName and marked running and ready).
	ns := agenttest.Name("apps")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	blocker := runningPod(t, c, ns, "blocker", names[0], map[string]string{"app": "blocker"}, nil, nil)
	evicted := runningPod(t, c, ns, "web", names[1], map[string]string{"app": "web"}, nil, nil)
	dsPod := runningPod(t, c, ns, "ds-pod", names[2], nil, []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: types.UID("tsagt-ds"), Controller: ptr.To(true)}}, nil)
	mirror := runningPod(t, c, ns, "static", names[2], nil, nil, map[string]string{"kubernetes.io/config.mirror": "x"})
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blocker"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "blocker"}}},
	}
	if err := c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	// The disruption controller does not run in envtest: write the status it would (one healthy
	// pod, one needed, no disruption allowed).
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, DisruptionsAllowed: 0}
	if err := c.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}

	profile := &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: agenttest.Name("rollout")},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": role}},
			CPU:          &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-3"},
			Sysctls:      map[string]tsv1.SysctlValue{"vm.stat_interval": "10"},
			Rollout:      &tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), DrainTimeout: &metav1.Duration{Duration: 3 * time.Second}},
		},
	}
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}

	lns := func(n string) *tsv1.LatencyNodeState {
		l := &tsv1.LatencyNodeState{}
		if err := c.Get(ctx, client.ObjectKey{Name: n}, l); err != nil {
			return &tsv1.LatencyNodeState{}
		}
		return l
	}
	// The first node in name order gets the slot; the budget stops its drain.
	g.Eventually(func() error {
		l := lns(names[0])
		r := l.Status.Reboot
		if r == nil || r.Phase != tsv1.RebootDrainFailed {
			return fmt.Errorf("%s reboot %+v", names[0], r)
		}
		if r.BlockingPod != ns+"/blocker" || !strings.Contains(r.Message, ns+"/blocker") {
			return fmt.Errorf("drain failure does not name the pod: %+v", r)
		}
		c := meta.FindStatusCondition(l.Status.Conditions, tsv1.NodeRebootRequired)
		if c == nil || c.Reason != agent.ReasonDrainFailed || !strings.Contains(c.Message, ns+"/blocker") {
			return fmt.Errorf("RebootRequired %+v", c)
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	if n := nodeOf(t, c, names[0]); n.Spec.Unschedulable {
		t.Errorf("%s left cordoned after its drain failed", names[0])
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(blocker), &corev1.Pod{}); err != nil {
		t.Errorf("the budget's pod was evicted: %v", err)
	}

	// The other nodes proceed, one at a time, while the budget still blocks the first.
	done := func(n string) error {
		l := lns(n)
		c := meta.FindStatusCondition(l.Status.Conditions, tsv1.NodeRebootRequired)
		if l.Status.Reboot != nil || c == nil || c.Status != metav1.ConditionFalse || c.Reason != agent.ReasonKernelArgsInEffect {
			return fmt.Errorf("%s: reboot %+v, RebootRequired %+v", n, l.Status.Reboot, c)
		}
		return nil
	}
	for _, n := range names[1:] {
		g.Eventually(func() error { return done(n) }).WithTimeout(90 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(evicted), &corev1.Pod{}); err == nil {
		t.Errorf("pod %s/%s on %s was not evicted", ns, evicted.Name, names[1])
	}
	for _, p := range []*corev1.Pod{dsPod, mirror} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
			t.Errorf("pod %s (DaemonSet or mirror) was evicted: %v", p.Name, err)
		}
	}

	// The budget goes: the first node reboots too.
	if err := c.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error { return done(names[0]) }).WithTimeout(90 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	g.Eventually(profileReady(ctx, c, profile)).WithTimeout(30 * time.Second).Should(gomega.Succeed())

	max, cordons := rec.snapshot()
	if max != 1 {
		t.Errorf("at most %d nodes were cordoned at once, want exactly 1 (cordons in order: %v)", max, cordons)
	}
	for _, n := range names {
		if got := agenttest.Lines(t, agents[n].Reboots); len(got) != 1 {
			t.Errorf("%s rebooted %d times, want exactly 1", n, len(got))
		}
		if nodeOf(t, c, n).Spec.Unschedulable {
			t.Errorf("%s left cordoned", n)
		}
	}
	// The first node was cordoned for its failed drain and again once the budget was gone; the
	// others once each, in between (they proceeded while the budget still blocked it).
	count := map[string]int{}
	for _, n := range cordons {
		count[n]++
	}
	firstA, lastA := -1, -1
	for i, n := range cordons {
		if n == names[0] {
			if firstA < 0 {
				firstA = i
			}
			lastA = i
		}
	}
	if count[names[0]] < 2 || count[names[1]] != 1 || count[names[2]] != 1 || lastA-firstA < 2 {
		t.Errorf("cordons in order %v: want %s twice (its drain failed, then the retry) and each other node once in between", cordons, names[0])
	}
	t.Logf("cordons in order: %v", cordons)

	// Deleting the profile deletes the node states; each agent restores its tree.
	if err := c.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error {
		var list tsv1.LatencyNodeStateList
		if err := c.List(ctx, &list); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d node states left", len(list.Items))
		}
		return nil
	}).WithTimeout(60 * time.Second).Should(gomega.Succeed())
	for _, n := range names {
		if d := hosttest.Diff(before[n], agenttest.Snapshot(t, agents[n].Root)); len(d) > 0 {
			t.Errorf("%s's tree differs after the restore:\n%s", n, strings.Join(d, "\n"))
		}
	}
}

// runningPod creates a pod bound to node and marks it running and ready (what a kubelet would).
func runningPod(t *testing.T, c client.Client, ns, name, node string, labels map[string]string, owners []metav1.OwnerReference, annotations map[string]string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "tsagt/pause"}}},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func nodeOf(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}
