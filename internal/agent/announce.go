package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// FailpointAnnounced prefixes the failpoint fired after a reboot-protocol transition was
// announced and before it is recorded ("announced:Draining").
const FailpointAnnounced = "announced:"

// announce says a step of the reboot protocol exactly once, before the step is recorded in
// status.reboot. The event is written now (not queued: a queued event dies with the process,
// and the kubelet the agent has just restarted may restart the agent's container), under a name
// derived from the node state, the reason and the recorded state the step leaves (from). An
// agent killed between the announcement and the record makes the same step again from the same
// recorded state, finds the name taken and says nothing twice. An event that cannot be written
// is logged and the step goes on: events never hold the node up.
func (r *Reconciler) announce(ctx context.Context, s *scope, from, typ, reason, action, msg string, args ...any) {
	defer r.failpoint(FailpointAnnounced + reason)
	if r.Recorder == nil {
		return
	}
	sum := sha256.Sum256([]byte(string(s.lns.UID) + "\x00" + reason + "\x00" + from))
	note := fmt.Sprintf(msg, args...)
	if len(note) > 1024 {
		note = note[:1021] + "..."
	}
	instance := "tickstack-agent-" + r.NodeName
	if len(instance) > 128 {
		instance = instance[:128]
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: eventName(s.lns.Name, sum[:8]), Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NewMicroTime(r.Clock.Now()),
		ReportingController: "tickstack-agent",
		ReportingInstance:   instance,
		Action:              action,
		Reason:              reason,
		Type:                typ,
		Note:                note,
		Regarding: corev1.ObjectReference{
			APIVersion: tsv1.GroupVersion.String(), Kind: "LatencyNodeState",
			Name: s.lns.Name, UID: s.lns.UID, ResourceVersion: s.lns.ResourceVersion,
		},
	}
	if err := r.Client.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		ctrl.LoggerFrom(ctx).Error(err, "announcing a reboot-protocol step; trying again in the background", "reason", reason, "note", note)
		// An API server or etcd that is down for a moment (the chaos e2e restarts etcd while the
		// kubelet restarts) would lose the step's one event: it is written again in the
		// background, never holding the node up; the same name keeps it said once.
		log := ctrl.LoggerFrom(ctx)
		ev := ev.DeepCopy()
		go func() {
			if r.announceLater(ev) {
				log.Info("announced a reboot-protocol step after a failed write", "reason", ev.Reason)
				return
			}
			log.Info("gave up announcing a reboot-protocol step", "reason", ev.Reason, "note", ev.Note)
		}()
	}
}

// announceRetries and announceRetryEvery bound announceLater: about two minutes.
const (
	announceRetries    = 24
	announceRetryEvery = 5 * time.Second
)

// announceLater writes an announcement whose first write failed, until it is written (true) or
// the retries run out.
func (r *Reconciler) announceLater(ev *eventsv1.Event) bool {
	for range announceRetries {
		time.Sleep(announceRetryEvery)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.Client.Create(ctx, ev.DeepCopy())
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return true
		}
	}
	return false
}

// eventName is "<node state>.<hash in hex>", the node state's name cut so that the whole stays a
// DNS subdomain of at most 253 characters.
func eventName(lns string, sum []byte) string {
	suffix := "." + hex.EncodeToString(sum)
	if max := 253 - len(suffix); len(lns) > max {
		lns = strings.TrimRight(lns[:max], ".-")
	}
	return lns + suffix
}

// fromState names the recorded state a reboot-protocol step leaves, for announce: the recorded
// phase and when it began, or, with no reboot recorded, the boot and the cause of the request
// (what the slot is for, and what the last one was for: see the callers).
func fromState(s *scope, cause string) string {
	if rs := s.base.Status.Reboot; rs != nil {
		return fmt.Sprintf("%s/%s/%s", rs.Action, rs.Phase, rs.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("none/%s/%s", s.bootID, cause)
}
