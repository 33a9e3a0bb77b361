package agent_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/ptp"
	"github.com/tickstack/tickstack/internal/render"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestAgentPTPOverVeth runs two agents against envtest: one node's tuning makes it a software
// time stamping grandmaster, the other's a slave, in two network namespaces joined by a veth pair.
// The slave's node state shows TimeSynced=True with a live offset; when the grandmaster's tuning
// loses its ptp section (its agent stops ptp4l), TimeSynced turns False once the hold time passed;
// when the section comes back (its agent starts ptp4l again), TimeSynced returns True with a new
// offset.
func TestAgentPTPOverVeth(t *testing.T) {
	tsutil.RequireRoot(t)
	tsutil.RequireTool(t, "ptp4l")
	tsutil.RequireTool(t, "pmc")
	prefix := fmt.Sprintf("tsptpa%d", os.Getpid())
	v := tsutil.VethNamespaces(t, prefix, "198.18.81")
	ipPath, nsGM, nsSl, ifGM, ifSl := v.IP, v.NSA, v.NSB, v.IfA, v.IfB
	tsutil.KeepSystemClockFrequency(t)

	const hold = 2 * time.Second
	fast := map[string]string{"logAnnounceInterval": "-2", "announceReceiptTimeout": "3", "logSyncInterval": "-3", "logMinDelayReqInterval": "-3"}
	// The slave steers the machine-wide system clock: no steps, at most 100 ppb, and PI constants
	// that lock at once (as internal/ptp's netns test does).
	slaveOpts := map[string]string{"first_step_threshold": "0.0", "max_frequency": "100", "pi_proportional_const": "0.1", "pi_integral_const": "0.05"}
	for k, v := range fast {
		slaveOpts[k] = v
	}
	tuningFor := func(role tsv1.PTPRole, iface string, opts map[string]string) *tsv1.NodeTuning {
		return &tsv1.NodeTuning{PTP: &tsv1.PTPTuning{
			Role: role, Interface: iface, Domain: 24, Transport: tsv1.PTPTransportUDPv4,
			Timestamping: tsv1.PTPTimestampingSoftware, Ptp4lOptions: opts, MaxOffsetNs: 1_000_000,
			HoldTime: metav1.Duration{Duration: hold},
		}}
	}
	startAgent := func(node, ns string, tuning *tsv1.NodeTuning) {
		startPTPAgent(t, node, ns, ipPath, tuning, nil)
	}
	gmNode, slNode := prefix+"-gm", prefix+"-sl"
	gmTuning := tuningFor(tsv1.PTPRoleGrandmaster, ifGM, fast)
	startAgent(gmNode, nsGM, gmTuning.DeepCopy())
	startAgent(slNode, nsSl, tuningFor(tsv1.PTPRoleSlave, ifSl, slaveOpts))
	// The operator's readiness gate and node validation, and the slave node passed for its profile
	// as a benchmark would have left it: the validated label follows the real TimeSynced.
	startOperator(t)
	patchNode(t, slNode, func(n *corev1.Node) { n.Annotations = map[string]string{tsv1.BenchmarkPassedAnnotation: "tsagt"} })

	tsutil.Poll(t, 60*time.Second, "the grandmaster's TimeSynced=True with port MASTER", func() error {
		l := getLNS(t, gmNode)
		if err := wantCondition(l, tsv1.NodeTimeSynced, metav1.ConditionTrue, ptp.ReasonSynchronized); err != nil {
			return err
		}
		if l.Status.PTP == nil || l.Status.PTP.PortState != string(ptp.PortStateMaster) {
			return fmt.Errorf("status.ptp = %+v, want port MASTER", l.Status.PTP)
		}
		return nil
	})
	var first *tsv1.PTPStatus
	tsutil.Poll(t, 60*time.Second, "the slave's TimeSynced=True with port SLAVE and an offset", func() error {
		l := getLNS(t, slNode)
		if err := wantCondition(l, tsv1.NodeTimeSynced, metav1.ConditionTrue, ptp.ReasonSynchronized); err != nil {
			return err
		}
		if p := l.Status.PTP; p == nil || p.PortState != string(ptp.PortStateSlave) || p.OffsetNs == nil || p.LastSample == nil {
			return fmt.Errorf("status.ptp = %+v, want port SLAVE with an offset", p)
		}
		// Software time stamping: ptp4l steers the system clock, so its offset is the system clock's.
		if p := l.Status.PTP; p.SystemOffsetNs == nil || *p.SystemOffsetNs != *p.OffsetNs {
			return fmt.Errorf("status.ptp.systemOffsetNs = %v, want ptp4l's offset %d", p.SystemOffsetNs, *p.OffsetNs)
		}
		first = l.Status.PTP
		return nil
	})
	t.Logf("slave synced: offset %d ns, port %s", *first.OffsetNs, first.PortState)
	tsutil.Poll(t, 30*time.Second, "the slave's status.ptp to be refreshed (a live offset)", func() error {
		p := getLNS(t, slNode).Status.PTP
		if p == nil || p.LastSample == nil || !p.LastSample.After(first.LastSample.Time) {
			return fmt.Errorf("status.ptp.lastSample = %v, want later than %v", p, first.LastSample)
		}
		return nil
	})

	tsutil.Poll(t, 30*time.Second, "the slave node validated with TimeSynced True", func() error {
		return wantValidation(t, slNode, "tsagt", "tsagt", corev1.ConditionTrue)
	})

	// A real chronyd starts on the host beside the slave's ptp4l: two servos on one clock. The
	// slave's node state names it (ClockConflict), and the node loses tickstack.io/validated until
	// chronyd is gone.
	chronyd := tsutil.StartChronyd(t)
	tsutil.Poll(t, 60*time.Second, "the slave's TimeSynced=False naming chronyd", func() error {
		l := getLNS(t, slNode)
		if err := wantCondition(l, tsv1.NodeTimeSynced, metav1.ConditionFalse, ptp.ReasonClockConflict); err != nil {
			return err
		}
		if p := l.Status.PTP; p == nil || len(p.ClockConflicts) != 1 || p.ClockConflicts[0] != fmt.Sprintf("chronyd (pid %d)", chronyd.Process.Pid) {
			return fmt.Errorf("status.ptp = %+v, want clockConflicts [chronyd (pid %d)]", p, chronyd.Process.Pid)
		}
		return nil
	})
	tsutil.Poll(t, 30*time.Second, "the slave node to lose tickstack.io/validated to chronyd", func() error {
		return wantValidation(t, slNode, "", "tsagt", corev1.ConditionFalse)
	})
	_ = chronyd.Process.Kill()
	_ = chronyd.Wait()
	tsutil.Poll(t, 60*time.Second, "the slave's TimeSynced=True and tickstack.io/validated back without chronyd", func() error {
		if err := wantCondition(getLNS(t, slNode), tsv1.NodeTimeSynced, metav1.ConditionTrue, ptp.ReasonSynchronized); err != nil {
			return err
		}
		return wantValidation(t, slNode, "tsagt", "tsagt", corev1.ConditionTrue)
	})

	// The grandmaster's tuning loses its ptp section: its agent stops ptp4l and drops the status.
	patchLNS(t, gmNode, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning.PTP = nil })
	stopped := time.Now()
	tsutil.Poll(t, 60*time.Second, "the slave's TimeSynced=False after the grandmaster stopped", func() error {
		c := condition(getLNS(t, slNode), tsv1.NodeTimeSynced)
		if c.Status != metav1.ConditionFalse {
			return fmt.Errorf("TimeSynced = %s/%s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	if d := time.Since(stopped); d < hold {
		t.Errorf("TimeSynced turned False %v after the grandmaster stopped, before the %v hold time", d, hold)
	}
	tsutil.Poll(t, 30*time.Second, "the slave node to lose tickstack.io/validated (its pass kept) and show TimeSynced False", func() error {
		return wantValidation(t, slNode, "", "tsagt", corev1.ConditionFalse)
	})
	tsutil.Poll(t, 30*time.Second, "the grandmaster's node state to drop status.ptp and TimeSynced", func() error {
		l := getLNS(t, gmNode)
		if l.Status.PTP != nil || meta.FindStatusCondition(l.Status.Conditions, tsv1.NodeTimeSynced) != nil {
			return fmt.Errorf("status.ptp = %+v, conditions %+v", l.Status.PTP, l.Status.Conditions)
		}
		return nil
	})

	// The grandmaster's ptp section comes back: its agent starts ptp4l again and the slave locks on.
	lost := condition(getLNS(t, slNode), tsv1.NodeTimeSynced)
	patchLNS(t, gmNode, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning.PTP = gmTuning.PTP.DeepCopy() })
	restarted := metav1.Now()
	tsutil.Poll(t, 90*time.Second, "the slave's TimeSynced=True again with port SLAVE and a new offset", func() error {
		l := getLNS(t, slNode)
		if err := wantCondition(l, tsv1.NodeTimeSynced, metav1.ConditionTrue, ptp.ReasonSynchronized); err != nil {
			return err
		}
		if c := condition(l, tsv1.NodeTimeSynced); c.LastTransitionTime.Before(&lost.LastTransitionTime) {
			return fmt.Errorf("TimeSynced last changed at %v, before it turned False at %v", c.LastTransitionTime, lost.LastTransitionTime)
		}
		// lastSample is kept to the second: a sample read in the restart's second counts.
		p := l.Status.PTP
		if p == nil || p.PortState != string(ptp.PortStateSlave) || p.OffsetNs == nil || p.LastSample == nil || p.LastSample.Before(&metav1.Time{Time: restarted.Truncate(time.Second)}) {
			return fmt.Errorf("status.ptp = %+v, want port SLAVE with an offset read after %v", p, restarted)
		}
		if off := *p.OffsetNs; off > 1_000_000 || off < -1_000_000 {
			return fmt.Errorf("offset %d ns is above maxOffsetNs 1000000", off)
		}
		return nil
	})
	tsutil.Poll(t, 30*time.Second, "the slave node to get tickstack.io/validated back and show TimeSynced True", func() error {
		return wantValidation(t, slNode, "tsagt", "tsagt", corev1.ConditionTrue)
	})
	back := getLNS(t, slNode).Status.PTP
	t.Logf("slave synced again: offset %d ns, %v after the grandmaster's ptp section came back", *back.OffsetNs, time.Since(restarted.Time).Round(time.Millisecond))

	// Deleting the node states stops the slave's ptp4l too; the agents remove their finalizers.
	for _, n := range []string{gmNode, slNode} {
		if err := k8s.Delete(context.Background(), getLNS(t, n)); err != nil {
			t.Fatal(err)
		}
	}
	tsutil.Poll(t, 30*time.Second, "both node states to be gone", func() error {
		for _, n := range []string{gmNode, slNode} {
			err := k8s.Get(context.Background(), clientKey(n), &tsv1.LatencyNodeState{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("node state %s: %v", n, err)
			}
		}
		return nil
	})
}

// startOperator runs the operator's controllers (SetupControllers: among them the PTP gate and node
// validation) against the test's API server until the test ends.
func startOperator(t *testing.T) {
	t.Helper()
	scheme := agenttest.Scheme()
	utilruntime.Must(render.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "tsagt-operator"
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(mgr, controllers.Options{Network: network.NetworkOptions{Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	tsutil.RunInBackground(t, context.Background(), "the operator's manager", mgr.Start)
}

func patchNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	tsutil.Poll(t, 10*time.Second, "patching node "+name, func() error {
		n := &corev1.Node{}
		if err := k8s.Get(context.Background(), clientKey(name), n); err != nil {
			return err
		}
		orig := n.DeepCopy()
		change(n)
		return k8s.Patch(context.Background(), n, client.MergeFrom(orig))
	})
}

// wantValidation checks a node's tickstack.io/validated label, tickstack.io/benchmark-passed
// annotation and tickstack.io/TimeSynced condition.
func wantValidation(t *testing.T, name, validated, passed string, synced corev1.ConditionStatus) error {
	t.Helper()
	n := &corev1.Node{}
	if err := k8s.Get(context.Background(), clientKey(name), n); err != nil {
		return err
	}
	if v, p := n.Labels[tsv1.ValidatedLabel], n.Annotations[tsv1.BenchmarkPassedAnnotation]; v != validated || p != passed {
		return fmt.Errorf("label %q, passed annotation %q; want %q, %q", v, p, validated, passed)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == tsv1.NodeTimeSyncedCondition {
			if c.Status != synced {
				return fmt.Errorf("node condition %s = %s (%s), want %s", c.Type, c.Status, c.Reason, synced)
			}
			return nil
		}
	}
	return fmt.Errorf("node has no %s condition", tsv1.NodeTimeSyncedCondition)
}

// startPTPAgent runs node's agent on a tree with its linuxptp in network namespace ns (through
// ip netns exec), its PTP metrics registered with reg when set, and creates the node and its node
// state with tuning.
func startPTPAgent(t *testing.T, node, ns, ipPath string, tuning *tsv1.NodeTuning, reg prometheus.Registerer) {
	t.Helper()
	ptp4lPath, pmcPath := tsutil.RequireTool(t, "ptp4l"), tsutil.RequireTool(t, "pmc")
	createNode(t, node)
	a := agenttest.NewTreeAgent(t, node)
	runDir, err := os.MkdirTemp("", "tsptpa-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	a.R.PTP = agent.PTPOptions{
		Ptp4lPath: ptp4lPath, PmcPath: pmcPath, RunDir: runDir, PollInterval: 200 * time.Millisecond,
		StatusPeriod: time.Second, Metrics: reg,
		Wrap: func(c ptp.Command) ptp.Command {
			c.Path, c.Args = ipPath, append([]string{"netns", "exec", ns, c.Path}, c.Args...)
			return c
		},
		Supervisor: ptp.SupervisorOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, StopTimeout: 3 * time.Second},
	}
	createLNS(t, node, tuning)
	agenttest.StartAgent(t, cfg, a.R, nil)
}
