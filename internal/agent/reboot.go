package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The reboot protocol (docs/agent.md):
//
//	(none) --kernel args differ--> Requested --rebootGranted--> Draining --drained--> Rebooting
//	Rebooting --new boot ID--> Verifying --args in effect--> (none), RebootRequired=False
//	Draining --timeout--> DrainFailed (uncordoned) --back-off, slot given back--> Requested
//
// The operator grants spec.rebootGranted to at most rollout.maxUnavailable nodes of a profile.
// Before the reboot command runs, status says Rebooting (with the boot ID of the running kernel)
// and the node state carries RebootedForAnnotation, so a crash or a reboot at any point resumes
// the protocol instead of repeating it.

// readBootID reads the kernel's boot ID below the host root.
func (r *Reconciler) readBootID() (string, error) {
	return r.Host.ReadFile(BootIDPath)
}

// drainTimeout is the profile's rollout.drainTimeout, or the agent's default.
func (r *Reconciler) drainTimeout(t *tsv1.NodeTuning) time.Duration {
	if t != nil && t.DrainTimeout != nil && t.DrainTimeout.Duration > 0 {
		return t.DrainTimeout.Duration
	}
	return r.DrainTimeout
}

func (r *Reconciler) setPhase(s *scope, p tsv1.RebootPhase, msg string) {
	now := metav1.NewTime(r.Clock.Now())
	rs := s.obs.reboot
	if rs == nil {
		rs = &tsv1.RebootStatus{BootID: s.bootID}
		s.obs.reboot = rs
	}
	if rs.Phase != p {
		rs.LastTransitionTime = now
	}
	rs.Phase, rs.Message = p, msg
	if p != tsv1.RebootDrainFailed {
		rs.BlockingPod = ""
	}
}

// reconcileReboot moves the node through the reboot protocol, one step per reconcile.
func (r *Reconciler) reconcileReboot(ctx context.Context, s *scope) error {
	bootID, err := r.readBootID()
	if err != nil {
		return fmt.Errorf("reading the boot ID: %w", err)
	}
	s.bootID = bootID
	rs := s.obs.reboot
	argsRequired := s.obs.boot != nil && s.obs.boot.RebootRequired
	// BIOS settings the operator staged for this boot need the same reboot (docs/bios.md).
	s.obs.firmwarePending = s.lns.Spec.Firmware.PendingFor(bootID)
	kubeletPending := s.obs.kubeletPending()
	required := argsRequired || s.obs.firmwarePending || kubeletPending
	// What the slot is for: a reboot carries a kubelet change too (kubelet.go).
	action := tsv1.ActionReboot
	if !argsRequired && !s.obs.firmwarePending {
		action = tsv1.ActionKubeletRestart
	}
	if k := s.obs.kubelet; k != nil && k.err != nil && !argsRequired && !s.obs.firmwarePending &&
		(rs == nil || rs.Action == tsv1.ActionKubeletRestart) {
		// The kubelet's files or its drop-in could not be read or rendered this time: decide
		// nothing about its slot (Degraded says why), as for an unreadable boot loader; a request
		// already made stays as it is.
		return nil
	}
	// The node came back (or rebooted on its own) with another kernel: verify.
	if rs != nil && rs.BootID != "" && rs.BootID != bootID && rs.Phase != tsv1.RebootVerifying {
		r.setPhase(s, tsv1.RebootVerifying, "the node is back with a new boot ID; checking /proc/cmdline")
		rs = s.obs.reboot
	}

	if s.obs.boot == nil && s.obs.hasArgs {
		// The boot loader could not be read: decide nothing (a reboot now could miss the kernel
		// arguments and cost a second one).
		return nil
	}
	hash := rebootHash(s.obs.boot, s.lns.Spec.Firmware)
	if action == tsv1.ActionReboot && !s.obs.firmwarePending && s.lns.Annotations[tsv1.RebootedForAnnotation] == hash &&
		(rs == nil || rs.Phase == tsv1.RebootVerifying && rs.Action != tsv1.ActionKubeletRestart) {
		// The node rebooted for these kernel arguments and still runs without them: no second
		// reboot (a kubelet change still gets its restart).
		if rs != nil {
			if err := r.uncordon(ctx); err != nil {
				return err
			}
			r.announce(ctx, s, fromState(s, hash), corev1.EventTypeWarning, ReasonRebootDidNotApply, "Reboot", "the node rebooted for its kernel arguments and still runs without them: %s", s.obs.boot.Message())
			s.obs.reboot = nil
			if err := r.recordReboot(ctx, s); err != nil {
				return err
			}
		}
		s.obs.reboot, rs = nil, nil
		s.obs.rebootDidNotApply = true
		if !kubeletPending {
			return nil
		}
		action = tsv1.ActionKubeletRestart
	}

	if !required {
		if rs != nil {
			// Done, or no longer needed (a profile change took the arguments back). Announced
			// once (announce), then recorded: an agent restarted in between (the kubelet it just
			// restarted may restart it) ends the same reboot again and says nothing twice.
			if err := r.uncordon(ctx); err != nil {
				return err
			}
			switch {
			case (rs.Phase == tsv1.RebootVerifying || rs.Phase == tsv1.RebootRestartingKubelet) && rs.Action == tsv1.ActionKubeletRestart && (s.obs.kubelet == nil || !s.obs.kubelet.failed):
				// RestartingKubelet: an agent killed after the restart and before recording
				// Verifying finds the kubelet running with the drop-in's values.
				r.announce(ctx, s, fromState(s, hash), corev1.EventTypeNormal, "KubeletVerified", "RestartKubelet", "the kubelet runs with the drop-in's values (configz); uncordoned")
			case rs.Phase == tsv1.RebootVerifying:
				r.announce(ctx, s, fromState(s, hash), corev1.EventTypeNormal, "RebootVerified", "Reboot", "the node rebooted: its kernel arguments are in effect and no staged BIOS setting waits for this boot; uncordoned")
			}
			s.obs.reboot = nil
			if err := r.recordReboot(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}

	switch {
	case rs == nil || rs.Phase == tsv1.RebootVerifying && rs.Action != tsv1.ActionKubeletRestart:
		if rs != nil {
			// Rebooted, and something is still missing.
			if err := r.uncordon(ctx); err != nil {
				return err
			}
		}
		s.obs.reboot = nil
		if action == tsv1.ActionKubeletRestart {
			// A second request for the same drop-in in the same boot (a drop-in removed by hand)
			// follows a restart for it: the annotation tells the two apart.
			r.announce(ctx, s, fromState(s, s.obs.kubelet.hash+"/"+s.lns.Annotations[tsv1.KubeletRestartedForAnnotation]), corev1.EventTypeNormal, "KubeletRestartRequested", "RestartKubelet", "%s; asking the operator for a slot", kubeletCause(s.obs.kubelet))
			r.setPhase(s, tsv1.RebootRequested, "waiting for the operator's slot (rollout.maxUnavailable) to restart the kubelet")
			s.obs.reboot.Action = action
			return r.recordReboot(ctx, s)
		}
		r.announce(ctx, s, fromState(s, hash+"/"+s.lns.Annotations[tsv1.RebootedForAnnotation]), corev1.EventTypeNormal, "RebootRequested", "Reboot", "%s; asking the operator for a reboot slot", rebootCause(&s.obs))
		r.setPhase(s, tsv1.RebootRequested, "waiting for the operator's reboot slot (rollout.maxUnavailable)")
		s.obs.reboot.Action = action
		return r.recordReboot(ctx, s)

	case rs.Phase == tsv1.RebootVerifying:
		return r.verifyKubelet(ctx, s)

	case rs.Phase == tsv1.RebootRestartingKubelet:
		return r.restartKubelet(ctx, s)

	case rs.Phase == tsv1.RebootRequested:
		if action == tsv1.ActionKubeletRestart || s.obs.firmwarePending || s.lns.Annotations[tsv1.RebootedForAnnotation] != hash {
			// A kubelet restart becomes a reboot when kernel arguments come along, unless the
			// node already rebooted for those in vain.
			rs.Action = action
		}
		if !s.lns.Spec.RebootGranted {
			return nil
		}
		what := "reboot"
		if rs.Action == tsv1.ActionKubeletRestart {
			what = "kubelet restart"
		}
		r.announce(ctx, s, fromState(s, hash), corev1.EventTypeNormal, "Draining", "Reboot", "%s slot granted: node cordoned, evicting its pods (timeout %s)", what, r.drainTimeout(s.tuning))
		r.setPhase(s, tsv1.RebootDraining, "cordoned; evicting pods")
		s.obs.reboot.BootID = bootID
		if err := r.recordReboot(ctx, s); err != nil {
			return err
		}
		return r.drainStep(ctx, s, hash)

	case rs.Phase == tsv1.RebootDraining:
		return r.drainStep(ctx, s, hash)

	case rs.Phase == tsv1.RebootDrainFailed:
		wait := rs.LastTransitionTime.Add(r.DrainRetryBackoff).Sub(r.Clock.Now())
		if wait > 0 || s.lns.Spec.RebootGranted {
			// Ask again only after the back-off and once the operator took the slot back, so
			// that other nodes get their turn.
			if wait > 0 && wait < s.requeue {
				s.requeue = wait
			}
			if wait <= 0 {
				s.requeue = r.DrainPoll
			}
			return nil
		}
		r.setPhase(s, tsv1.RebootRequested, "asking again for a reboot slot after a failed drain")
		return nil

	case rs.Phase == tsv1.RebootRebooting:
		return r.runReboot(ctx, s)
	}
	return nil
}

// drainStep evicts the node's pods; when none is left it reboots, when the drain took too long
// it uncordons and reports DrainFailed with the blocking pod.
func (r *Reconciler) drainStep(ctx context.Context, s *scope, hash string) error {
	// Every step: Draining is recorded before the cordon, so a cordon that failed is done here.
	if err := r.cordon(ctx); err != nil {
		return err
	}
	left, blocking, err := r.evictPods(ctx)
	if err != nil {
		return err
	}
	if len(left) == 0 {
		kubeletPending := s.obs.kubeletPending()
		if s.obs.reboot.Action == tsv1.ActionKubeletRestart {
			if !kubeletPending {
				return nil // nothing left to do: the !required branch uncordons next time
			}
			if err := r.record("previous", s.obs.kubelet.current, false); err != nil {
				return fmt.Errorf("recording the kubelet drop-in's content in %s: %w", KubeletStateDir, err)
			}
			if err := r.annotate(ctx, s, tsv1.KubeletRestartedForAnnotation, s.obs.kubelet.hash); err != nil {
				return err
			}
			r.setPhase(s, tsv1.RebootRestartingKubelet, "drained; restarting the kubelet")
			if err := r.patchStatus(ctx, s); err != nil {
				return err
			}
			return r.restartKubelet(ctx, s)
		}
		if err := r.markRebootedFor(ctx, s, hash); err != nil {
			return err
		}
		// No new latency pod until the tuning is confirmed for the next boot.
		if err := r.setTaint(ctx, true); err != nil {
			return err
		}
		if kubeletPending {
			// One disruption for both: the kubelet takes its drop-in when the node comes back.
			if err := r.switchKubelet(ctx, s.obs.kubelet.desired, false); err != nil {
				r.event(s.lns, corev1.EventTypeWarning, ReasonKubeletRestartFailed, "RestartKubelet", "the kubelet drop-in could not go in before the reboot (the kubelet restarts with it after): %v", err)
			}
		}
		r.setPhase(s, tsv1.RebootRebooting, "drained; rebooting")
		return r.runReboot(ctx, s)
	}
	timeout := r.drainTimeout(s.tuning)
	if r.Clock.Since(s.obs.reboot.LastTransitionTime.Time) < timeout {
		s.obs.reboot.Message = fmt.Sprintf("cordoned; waiting for %d pods to leave: %s", len(left), abbreviate(left, 5))
		s.requeue = r.DrainPoll
		return nil
	}
	// Never leave the node cordoned: uncordon first, then report (the operator only moves on
	// once it reads DrainFailed).
	if err := r.uncordon(ctx); err != nil {
		return err
	}
	if blocking == "" {
		blocking = left[0]
	}
	msg := fmt.Sprintf("drain timed out after %s: pod %s could not be evicted (a PodDisruptionBudget allows no disruption, or it does not terminate); the node was uncordoned and asks again in %s. Fix the budget or move the pod, or raise rollout.drainTimeout", timeout, blocking, r.DrainRetryBackoff)
	r.setPhase(s, tsv1.RebootDrainFailed, msg)
	s.obs.reboot.BlockingPod = blocking
	r.event(s.lns, corev1.EventTypeWarning, ReasonDrainFailed, "Drain", "%s", msg)
	s.requeue = r.DrainRetryBackoff
	return nil
}

// markRebootedFor records, before the reboot command runs, which change (kernel arguments and
// staged BIOS settings) the reboot is for.
func (r *Reconciler) markRebootedFor(ctx context.Context, s *scope, hash string) error {
	if s.lns.Annotations[tsv1.RebootedForAnnotation] == hash {
		return nil
	}
	orig := s.lns.DeepCopy()
	if s.lns.Annotations == nil {
		s.lns.Annotations = map[string]string{}
	}
	s.lns.Annotations[tsv1.RebootedForAnnotation] = hash
	if err := r.Client.Patch(ctx, s.lns, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("annotating node state before the reboot: %w", err)
	}
	return nil
}

// runReboot records phase Rebooting durably, then runs the reboot command once per boot ID and
// process (a restarted agent that finds Rebooting with the same boot ID runs it again).
func (r *Reconciler) runReboot(ctx context.Context, s *scope) error {
	s.requeue = r.DrainPoll
	r.mu.Lock()
	issued, ok := r.rebootIssued[s.bootID]
	r.mu.Unlock()
	if ok {
		if since := r.Clock.Since(issued[0]); since >= r.RebootTimeout {
			// The command "succeeded" and the node still runs the same kernel.
			s.obs.rebootEr = fmt.Errorf("the node still runs boot ID %s %s after the reboot command %v succeeded; it stays drained and cordoned and the command runs again every %s: check --reboot-command", s.bootID, since.Round(time.Second), r.RebootCommand, r.RebootTimeout)
		}
		if r.Clock.Since(issued[1]) < r.RebootTimeout {
			return nil
		}
		r.event(s.lns, corev1.EventTypeWarning, ReasonRebootFailed, "Reboot", "%v", s.obs.rebootEr)
	}
	if s.obs.reboot.BootID == "" {
		s.obs.reboot.BootID = s.bootID
	}
	if err := r.patchStatus(ctx, s); err != nil {
		return err
	}
	r.failpoint(FailpointBeforeRebootCommand)
	if len(r.RebootCommand) == 0 {
		s.obs.rebootEr = fmt.Errorf("the node is drained but no reboot command is configured (--reboot-command): reboot it by hand")
		return nil
	}
	r.event(s.lns, corev1.EventTypeNormal, "Rebooting", "Reboot", "drained; running %v", r.RebootCommand)
	out, err := r.command(ctx, r.RebootCommand).CombinedOutput()
	if err != nil {
		s.obs.rebootEr = fmt.Errorf("reboot command %v failed: %v: %s; the agent runs it again after %s", r.RebootCommand, err, strings.TrimSpace(string(out)), r.DrainRetryBackoff)
		r.event(s.lns, corev1.EventTypeWarning, ReasonRebootFailed, "Reboot", "%v", s.obs.rebootEr)
		s.requeue = r.DrainRetryBackoff
		return nil
	}
	r.mu.Lock()
	if r.rebootIssued == nil {
		r.rebootIssued = map[string][2]time.Time{}
	}
	now := r.Clock.Now()
	if prev, ok := r.rebootIssued[s.bootID]; ok {
		r.rebootIssued[s.bootID] = [2]time.Time{prev[0], now}
	} else {
		r.rebootIssued[s.bootID] = [2]time.Time{now, now}
	}
	r.mu.Unlock()
	return nil
}
