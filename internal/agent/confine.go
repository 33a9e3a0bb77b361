package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// ReasonConfineFailed is the warning event of an agent that could not keep its own threads on
// the node's reserved CPUs (the tuning itself is not affected).
const ReasonConfineFailed = "ConfineFailed"

// confineSelf keeps the agent's own threads on the node's reserved (housekeeping) CPUs while a
// tuning is in force, so that the agent never runs on, and never wakes, a CPU the profile
// isolates for latency pods. Checked on every reconcile: a container runtime that rewrites the
// container's cpuset may reset the threads' affinity.
func (r *Reconciler) confineSelf(_ context.Context, s *scope) error {
	if r.ConfineSelf {
		r.setSelfAffinity(s.lns, string(s.tuning.ReservedCPUs))
	}
	return nil
}

// releaseSelf gives the agent's threads back the affinity the process started with.
func (r *Reconciler) releaseSelf(lns *tsv1.LatencyNodeState) {
	if r.ConfineSelf {
		r.setSelfAffinity(lns, "")
	}
}

// setSelfAffinity confines every thread of this process to cpus, or to the affinity it started
// with when cpus is empty.
func (r *Reconciler) setSelfAffinity(lns *tsv1.LatencyNodeState, cpus string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.selfOrig == nil {
		orig, err := host.ThreadAffinity()
		if err != nil {
			r.event(lns, corev1.EventTypeWarning, ReasonConfineFailed, "Confine", "reading the agent's own CPU affinity: %v", err)
			return
		}
		r.selfOrig = &orig
	}
	want := *r.selfOrig
	if cpus != "" {
		set, err := cpuset.Parse(cpus)
		if err != nil || set.IsEmpty() {
			return // validate reported it
		}
		want = set
	}
	if cur, err := host.ThreadAffinity(); err == nil && cur.String() == want.String() {
		return
	}
	if err := host.ConfineProcess(want); err != nil {
		r.event(lns, corev1.EventTypeWarning, ReasonConfineFailed, "Confine", "keeping the agent's threads on CPUs %s: %v", want, err)
	}
}
