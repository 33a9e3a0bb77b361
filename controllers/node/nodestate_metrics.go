package node

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// NodeMetrics are the operator's per-node series, read from each LatencyNodeState (what the node's
// agent reports), the source of the chart's per-node alerts (docs/monitoring.md):
//
//	tickstack_node_condition{node,profile,type,status}            1, one series per condition type, status the current one
//	tickstack_node_reboot_phase{node,phase,action}                1 while the node is in a reboot (or kubelet restart) phase
//	tickstack_node_reboot_phase_start_timestamp_seconds{node}     when that phase began
//	tickstack_node_drain_timeout_seconds{node}                    the profile's rollout.drainTimeout, when it sets one
//
// At most eight series a node: the node state's condition types of nodeConditionTypes, one reboot
// phase, its start and the drain timeout. A node's series go with its node state.
type NodeMetrics struct {
	condition, rebootPhase, rebootStart, drainTimeout *prometheus.Desc

	mu sync.Mutex
	// metrics are each node's series as exported, made when its node state changes: a scrape sends
	// them as they are. Made at each scrape instead, 5,000 nodes' label pairs were most of what the
	// manager allocated in the scale test, and all live at once during a scrape (docs/scale.md).
	metrics map[string][]prometheus.Metric
	// pairs are the label pairs every node's series share (type, status, profile, phase, action):
	// a const metric per series kept its own, 13.5 MiB of the manager's 69 MiB live heap at 5,000
	// nodes (docs/scale.md, fix 26). A node's own pair is shared by its series.
	pairs map[[2]string]*dto.LabelPair
}

// series is one exported series: its labels sorted by name, as prometheus.MakeLabelPairs sorts
// them, shared and never changed (a scrape reads them, as it reads a const metric's).
type series struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
}

// Desc implements prometheus.Metric.
func (s *series) Desc() *prometheus.Desc { return s.desc }

// Write implements prometheus.Metric.
func (s *series) Write(m *dto.Metric) error {
	m.Label = s.labels
	m.Gauge = &dto.Gauge{Value: proto.Float64(s.value)}
	return nil
}

// pair is the shared label pair name=value; m.mu is held.
func (m *NodeMetrics) pair(name, value string) *dto.LabelPair {
	k := [2]string{name, value}
	p, ok := m.pairs[k]
	if !ok {
		p = &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
		m.pairs[k] = p
	}
	return p
}

// nodeSeries is what NodeMetrics exports of one node state.
type nodeSeries struct {
	profile string
	// conditions maps a condition type of nodeConditionTypes to its status.
	conditions map[string]string
	// phase and action of the reboot in progress; phase "" when none.
	phase, action string
	// phaseStart is the phase's start in Unix seconds; 0 when unknown.
	phaseStart float64
	// drainTimeout is spec.tuning.drainTimeout in seconds; 0 when the profile sets none (the agent's
	// --drain-timeout applies).
	drainTimeout float64
}

// nodeConditionTypes are the node state conditions exported: the agent's, documented in api/. Any
// other type is left out, which bounds the series a node has.
func nodeConditionTypes() []string {
	return []string{tsv1.NodeApplied, tsv1.NodeDegraded, tsv1.NodeRebootRequired, tsv1.NodeDrifted, tsv1.NodeTimeSynced}
}

// NewNodeMetrics makes the collector and registers it with reg (controller-runtime's
// metrics.Registry in the manager).
func NewNodeMetrics(reg prometheus.Registerer) *NodeMetrics {
	m := &NodeMetrics{
		condition: prometheus.NewDesc("tickstack_node_condition",
			"1 for each condition of a node's LatencyNodeState (Applied, Degraded, RebootRequired, Drifted, TimeSynced), status the current one.",
			[]string{"node", "profile", "type", "status"}, nil),
		rebootPhase: prometheus.NewDesc("tickstack_node_reboot_phase",
			"1 while a node is in this phase of a reboot or kubelet restart (status.reboot of its LatencyNodeState); absent when none is in progress.",
			[]string{"node", "phase", "action"}, nil),
		rebootStart: prometheus.NewDesc("tickstack_node_reboot_phase_start_timestamp_seconds",
			"When the node's current reboot phase began, in Unix seconds.",
			[]string{"node"}, nil),
		drainTimeout: prometheus.NewDesc("tickstack_node_drain_timeout_seconds",
			"The drain timeout of the node's profile (rollout.drainTimeout); absent when the profile sets none and the agent's --drain-timeout applies.",
			[]string{"node"}, nil),
		metrics: map[string][]prometheus.Metric{},
		pairs:   map[[2]string]*dto.LabelPair{},
	}
	reg.MustRegister(m)
	return m
}

// nodeSeriesOf is what a node state exports (pure).
func nodeSeriesOf(lns *tsv1.LatencyNodeState) nodeSeries {
	s := nodeSeries{profile: lns.Spec.Profile.Name, conditions: map[string]string{}}
	for _, c := range lns.Status.Conditions {
		if slices.Contains(nodeConditionTypes(), c.Type) {
			s.conditions[c.Type] = string(c.Status)
		}
	}
	if r := lns.Status.Reboot; r != nil && r.Phase != "" {
		s.phase, s.action = string(r.Phase), string(r.Action)
		if s.action == "" {
			s.action = string(tsv1.ActionReboot)
		}
		if !r.LastTransitionTime.IsZero() {
			s.phaseStart = float64(r.LastTransitionTime.Unix())
		}
	}
	if t := resolve.DesiredTuning(lns); t != nil && t.DrainTimeout != nil && t.DrainTimeout.Duration > 0 {
		s.drainTimeout = t.DrainTimeout.Seconds()
	}
	return s
}

func (s nodeSeries) equal(o nodeSeries) bool {
	return s.profile == o.profile && maps.Equal(s.conditions, o.conditions) && s.phase == o.phase &&
		s.action == o.action && s.phaseStart == o.phaseStart && s.drainTimeout == o.drainTimeout
}

// observe records a node state; its previous series are replaced at once.
func (m *NodeMetrics) observe(lns *tsv1.LatencyNodeState) {
	if m == nil {
		return
	}
	s := nodeSeriesOf(lns)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.metrics[lns.Name] = m.series(lns.Name, s)
}

// series are the metrics node exports for s, each label list sorted by name; m.mu is held.
func (m *NodeMetrics) series(node string, s nodeSeries) []prometheus.Metric {
	var ms []prometheus.Metric
	own := &dto.LabelPair{Name: proto.String("node"), Value: proto.String(node)}
	for _, typ := range slices.Sorted(maps.Keys(s.conditions)) {
		ms = append(ms, &series{m.condition, []*dto.LabelPair{own, m.pair("profile", s.profile), m.pair("status", s.conditions[typ]), m.pair("type", typ)}, 1})
	}
	if s.phase != "" {
		ms = append(ms, &series{m.rebootPhase, []*dto.LabelPair{m.pair("action", s.action), own, m.pair("phase", s.phase)}, 1})
		if s.phaseStart != 0 {
			ms = append(ms, &series{m.rebootStart, []*dto.LabelPair{own}, s.phaseStart})
		}
	}
	if s.drainTimeout != 0 {
		ms = append(ms, &series{m.drainTimeout, []*dto.LabelPair{own}, s.drainTimeout})
	}
	return ms
}

// forget drops the series of a node whose node state is gone.
func (m *NodeMetrics) forget(node string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.metrics, node)
}

// Describe implements prometheus.Collector.
func (m *NodeMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.condition, m.rebootPhase, m.rebootStart, m.drainTimeout} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *NodeMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ms := range m.metrics {
		for _, metric := range ms {
			ch <- metric
		}
	}
}

// NodeMetricsReconciler feeds NodeMetrics from the node states: it writes nothing.
type NodeMetricsReconciler struct {
	Client  client.Client
	Metrics *NodeMetrics
}

// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch

// Reconcile records one node state, or forgets its node when it is gone.
func (r *NodeMetricsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lns := &tsv1.LatencyNodeState{}
	if err := r.Client.Get(ctx, req.NamespacedName, lns); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Metrics.observe(lns)
	return ctrl.Result{}, nil
}

// SetupWithManager watches node states; an update that changes nothing exported is dropped (the
// agents write their status often, the exported part rarely changes).
func (r *NodeMetricsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	changed := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, oldOK := e.ObjectOld.(*tsv1.LatencyNodeState)
		n, newOK := e.ObjectNew.(*tsv1.LatencyNodeState)
		return !oldOK || !newOK || !nodeSeriesOf(o).equal(nodeSeriesOf(n))
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.LatencyNodeState{}, builder.WithPredicates(changed)).
		Named("nodemetrics").
		Complete(r)
}
