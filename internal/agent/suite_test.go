package agent_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// The envtest API server every test of this package shares.
var (
	cfg *rest.Config
	k8s client.Client
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel()))))
	if os.Getenv(crashHelperEnv) != "" {
		os.Exit(crashHelper())
	}
	env, err := kubetest.Start(kubetest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	cfg = env.Config
	k8s, err = client.New(cfg, client.Options{Scheme: agenttest.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// createNode creates a Node object (no kubelet runs in envtest) and deletes it at the end.
func createNode(t *testing.T, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
}

// startOnTree begins a tree test: it creates node and its node state with tuning and starts a's
// agent.
func startOnTree(t *testing.T, a *agenttest.TreeAgent, node string, tuning *tsv1.NodeTuning) (stop func()) {
	t.Helper()
	createNode(t, node)
	createLNS(t, node, tuning)
	return agenttest.StartAgent(t, cfg, a.R, nil)
}

// pollApplied polls until node's node state is Applied.
func pollApplied(t *testing.T, node string, timeout time.Duration) {
	t.Helper()
	tsutil.Poll(t, timeout, "applied", func() error {
		return wantCondition(getLNS(t, node), tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
}

// createLNS creates the node state as the operator would, with the given tuning.
func createLNS(t *testing.T, node string, tuning *tsv1.NodeTuning) {
	t.Helper()
	lns := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{tsv1.ProfileLabel: "tsagt"}},
		Spec:       tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: "tsagt", Generation: 1}, Tuning: tuning},
	}
	createNodeState(t, lns)
}

// createNodeState creates a node state; the test deletes it itself, the cleanup only makes sure
// nothing is left if it failed early.
func createNodeState(t *testing.T, lns *tsv1.LatencyNodeState) {
	t.Helper()
	if err := k8s.Create(context.Background(), lns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		cur := &tsv1.LatencyNodeState{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: lns.Name}, cur); err == nil {
			_ = k8s.Delete(ctx, cur)
		}
	})
}

// getObj reads the cluster-scoped object name.
func getObj[T any, P interface {
	*T
	client.Object
}](t *testing.T, name string) P {
	t.Helper()
	o := P(new(T))
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, o); err != nil {
		t.Fatal(err)
	}
	return o
}

// patchObj writes what mutate changes in the cluster-scoped object name as a merge patch.
func patchObj[T any, P interface {
	*T
	client.Object
}](t *testing.T, name string, mutate func(P)) {
	t.Helper()
	o := getObj[T, P](t, name)
	orig := o.DeepCopyObject().(client.Object)
	mutate(o)
	if err := k8s.Patch(context.Background(), o, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

func getLNS(t *testing.T, name string) *tsv1.LatencyNodeState {
	t.Helper()
	return getObj[tsv1.LatencyNodeState](t, name)
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	return getObj[corev1.Node](t, name)
}

// patchLNS changes the node state's spec as the operator would.
func patchLNS(t *testing.T, name string, mutate func(*tsv1.LatencyNodeState)) {
	t.Helper()
	patchObj[tsv1.LatencyNodeState](t, name, mutate)
}

// setGranted gives the node its reboot (or kubelet restart) slot, or takes it back, as the
// operator would.
func setGranted(t *testing.T, node string, granted bool) {
	t.Helper()
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.RebootGranted = granted })
}

// pollSlotDone polls until the node state shows no reboot or kubelet restart in progress
// (status.reboot cleared) and check passes on it.
func pollSlotDone(t *testing.T, node, what string, timeout time.Duration, check func(*tsv1.LatencyNodeState) error) {
	t.Helper()
	tsutil.Poll(t, timeout, what, func() error {
		l := getLNS(t, node)
		if l.Status.Reboot != nil {
			return fmt.Errorf("reboot %+v", l.Status.Reboot)
		}
		return check(l)
	})
}

// deleteLNS deletes the node state and waits until the agent has restored the host and let it go.
func deleteLNS(t *testing.T, node string) {
	t.Helper()
	if err := k8s.Delete(context.Background(), getLNS(t, node)); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 30*time.Second, "node state gone", func() error {
		l := &tsv1.LatencyNodeState{}
		if err := k8s.Get(context.Background(), clientKey(node), l); err == nil {
			return fmt.Errorf("still there: finalizers %v, reboot %+v, conditions %+v", l.Finalizers, l.Status.Reboot, l.Status.Conditions)
		}
		return nil
	})
}

// condition returns the node state's condition of that type ("" status when absent).
func condition(l *tsv1.LatencyNodeState, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(l.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ}
}

func wantCondition(l *tsv1.LatencyNodeState, typ string, status metav1.ConditionStatus, reason string) error {
	c := condition(l, typ)
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

// pollEvent polls until the agent has emitted an event with reason about node's node state.
func pollEvent(t *testing.T, node, reason string) {
	t.Helper()
	tsutil.Poll(t, 20*time.Second, reason+" announced", func() error {
		if len(events(t, node, reason)) == 0 {
			return fmt.Errorf("no %s event", reason)
		}
		return nil
	})
}

// rebootPhase is the phase of node's reboot status, "none" without one.
func rebootPhase(t *testing.T, node string) string {
	t.Helper()
	if r := getLNS(t, node).Status.Reboot; r != nil {
		return string(r.Phase)
	}
	return "none"
}

// events lists the events about a node state with a reason.
func events(t *testing.T, lns, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == lns && e.Regarding.Kind == "LatencyNodeState" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func zapLevel() int8 {
	if os.Getenv("TSAGT_VERBOSE") != "" {
		return -1
	}
	return 1 // errors only
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
