package profile

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// ProfileMetrics are the operator's per-profile gauges, the source of the chart's alerts.
type ProfileMetrics struct {
	nodes     *prometheus.GaugeVec
	condition *prometheus.GaugeVec
}

// NewProfileMetrics makes the gauges and registers them with reg (controller-runtime's
// metrics.Registry in the manager).
func NewProfileMetrics(reg prometheus.Registerer) *ProfileMetrics {
	m := &ProfileMetrics{
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickstack_profile_nodes",
			Help: "Nodes of a LatencyProfile by state: matched, owned, applied, reboot_pending, degraded.",
		}, []string{"profile", "state"}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickstack_profile_condition",
			Help: "1 for the current status of each condition of a LatencyProfile.",
		}, []string{"profile", "type", "status"}),
	}
	reg.MustRegister(m.nodes, m.condition)
	return m
}

// observe records a profile's status.
func (m *ProfileMetrics) observe(p *tsv1.LatencyProfile) {
	if m == nil {
		return
	}
	st := p.Status
	for state, v := range map[string]int32{
		"matched": st.MatchedNodes, "owned": st.OwnedNodes, "applied": st.AppliedNodes,
		"reboot_pending": st.RebootPendingNodes, "degraded": st.DegradedNodes,
	} {
		m.nodes.WithLabelValues(p.Name, state).Set(float64(v))
	}
	for _, c := range st.Conditions {
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			m.condition.WithLabelValues(p.Name, c.Type, string(s)).Set(v)
		}
	}
}

// forget drops the series of a deleted profile.
func (m *ProfileMetrics) forget(name string) {
	if m == nil {
		return
	}
	m.nodes.DeletePartialMatch(prometheus.Labels{"profile": name})
	m.condition.DeletePartialMatch(prometheus.Labels{"profile": name})
}
