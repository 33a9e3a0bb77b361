package bios

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
	"github.com/tickstack/tickstack/internal/phase"
)

// decide picks what this reconcile does with the BMC, from the node state and the node's boot ID,
// without talking to the BMC.
func (r *BIOSReconciler) decide(ctx context.Context, s *biosScope) error {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: s.lns.Name}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("getting node %s: %w", s.lns.Name, err)
		}
		node = nil
	}
	s.node = node
	fw := s.firmware
	// Staged: recorded in status, or (a cache that has the spec but not yet the status) in
	// spec.firmware. Staging twice would read a real BMC's staged values as AlreadyPending, but an
	// emulator that applies at once as InSync, and take the reboot back.
	staged := s.status.StagedHash == s.hash || (fw != nil && fw.Hash == s.hash && fw.PendingReboot)
	switch {
	case !staged:
		if s.lns.Spec.RebootGranted {
			// The node is in a reboot for an earlier change: a PATCH now could land after the
			// firmware's POST and wait for yet another reboot. Stage once the reboot is over.
			s.facts.judge(tsv1.BIOSAppliedCondition, false, tsv1.ReasonBIOSPendingReboot,
				"the node is rebooting for an earlier change; the new BIOS settings are staged when it is back")
			s.requeue = r.RetryPeriod
			return phase.ErrStop
		}
		s.step = stepStage
	case fw != nil && fw.PendingReboot:
		if bootID(node) == "" || bootID(node) == fw.BootID {
			return phase.ErrStop // waiting for the reboot; status.bios already says so
		}
		s.step = stepVerifyReboot
	default:
		period := r.VerifyPeriod
		if anyAttribute(s.status.Attributes, tsv1.BIOSPending) {
			period = r.RetryPeriod // the firmware may apply it on a second boot of its own
		}
		if last := s.status.LastVerifiedTime; last != nil {
			if wait := last.Add(period).Sub(r.Now()); wait > 0 {
				s.requeue = wait
				return phase.ErrStop
			}
		}
		s.step = stepVerifyDrift
	}
	return nil
}

func anyAttribute(attrs []tsv1.BIOSAttributeStatus, state tsv1.BIOSAttributeState) bool {
	for _, a := range attrs {
		if a.State == state {
			return true
		}
	}
	return false
}

func bootID(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	return n.Status.NodeInfo.BootID
}

// connect resolves the node's BMC and its credentials, logs in, and computes the wanted
// attributes (the preset needs the BMC's vendor).
func (r *BIOSReconciler) connect(ctx context.Context, s *biosScope) error {
	cfg, reason, msg, err := r.bmcConfig(ctx, s)
	if err != nil {
		return err
	}
	if reason != "" {
		r.failed(ctx, s, reason, msg)
		return phase.ErrStop
	}
	c, err := bmc.Connect(ctx, cfg)
	if err != nil {
		r.failed(ctx, s, bmcReason(err), err.Error())
		return phase.ErrStop
	}
	s.client = c
	s.status.Endpoint, s.status.Vendor = c.Endpoint(), string(c.Vendor())
	s.facts.judge(tsv1.BIOSBMCReachable, true, tsv1.ReasonBMCConnected,
		fmt.Sprintf("BMC %s answers for system %s", c.Endpoint(), c.SystemID()))
	wanted, err := bmc.WantedAttributes(s.profile.Spec.BIOS, c.Vendor())
	if err != nil {
		s.facts.judge(tsv1.BIOSValid, false, tsv1.ReasonBIOSPresetUnknown,
			fmt.Sprintf("LatencyProfile %s spec.bios.preset: %v; set bios.preset to the node's vendor or None, and list the attributes in bios.attributes", s.profile.Name, err))
		r.release(s)
		s.requeue = r.RetryPeriod
		return phase.ErrStop
	}
	s.wanted = wanted
	return nil
}

// bmcConfig finds the node's BMC object and reads its credentials. A reason says what is missing
// (no error: the user must act); an error is a failure to read.
func (r *BIOSReconciler) bmcConfig(ctx context.Context, s *biosScope) (bmc.Config, string, string, error) {
	name := s.lns.Name
	if s.node != nil {
		name = bmc.ObjectName(s.node)
	}
	obj := &tsv1.BMC{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return bmc.Config{}, tsv1.ReasonNoBMC, fmt.Sprintf("no BMC object %q for node %s: create one with the node's Redfish endpoint and credentials Secret (docs/bios.md), or name it in the node's %s annotation", name, s.lns.Name, tsv1.BMCAnnotation), nil
		}
		return bmc.Config{}, "", "", fmt.Errorf("getting BMC %s: %w", name, err)
	}
	if reason, msg := bmcRefusal(obj, r.Policy); reason != "" {
		return bmc.Config{}, reason, msg, nil
	}
	ref := obj.Spec.CredentialsSecret
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return bmc.Config{}, tsv1.ReasonBMCSecret, fmt.Sprintf("BMC %s spec.credentialsSecret: Secret %s/%s does not exist; create it with the keys username and password", name, ref.Namespace, ref.Name), nil
		}
		return bmc.Config{}, tsv1.ReasonBMCSecret, fmt.Sprintf("BMC %s spec.credentialsSecret: cannot read Secret %s/%s: %s", name, ref.Namespace, ref.Name, apierrors.ReasonForError(err)), nil
	}
	cfg, err := bmc.ConfigFrom(obj, secret)
	if err != nil {
		return bmc.Config{}, tsv1.ReasonBMCSecret, err.Error(), nil
	}
	cfg.Timeout = r.Timeout
	cfg.Log = ctrl.LoggerFrom(ctx).WithValues("bmcObject", name)
	return cfg, "", "", nil
}

// bmcReason maps a bmc error to the BMCReachable condition's reason.
func bmcReason(err error) string {
	switch {
	case errors.Is(err, bmc.ErrTLS):
		return tsv1.ReasonBMCTLS
	case errors.Is(err, bmc.ErrAuth):
		return tsv1.ReasonBMCAuth
	case errors.Is(err, bmc.ErrUnreachable):
		return tsv1.ReasonBMCUnreachable
	case errors.Is(err, bmc.ErrConfig):
		return tsv1.ReasonBMCConfig
	}
	return tsv1.ReasonBMCProtocol
}

// failed reports that the BMC could not be used: BMCReachable False, the settings unknown. The
// reboot hold is released, so that kernel arguments do not wait on a broken BMC; the BIOS settings
// are tried again after RetryPeriod.
//
// A transient failure (no answer, a Redfish error) keeps the hold for HoldTimeout from the first
// failure, so that a BMC that is slow for a moment does not cost a second reboot; a failure only
// the user can fix (trust, credentials, a missing object) releases it at once.
func (r *BIOSReconciler) failed(ctx context.Context, s *biosScope, reason, msg string) {
	ctrl.LoggerFrom(ctx).Info("BMC not usable", "node", s.lns.Name, "reason", reason, "message", msg)
	s.facts.judge(tsv1.BIOSBMCReachable, false, reason, msg)
	if s.step == stepStage {
		transient := reason == tsv1.ReasonBMCUnreachable || reason == tsv1.ReasonBMCProtocol
		// Since when the BMC has not been usable: the status with this reconcile's judgements so far.
		cur := s.status.DeepCopy()
		setBIOSStatus(cur, &s.facts, s.lns.Generation)
		since := meta.FindStatusCondition(cur.Conditions, tsv1.BIOSBMCReachable).LastTransitionTime
		held := transient && r.Now().Sub(since.Time) < r.HoldTimeout
		note := ""
		if held {
			note = fmt.Sprintf("; the node's reboot waits up to %s for the BMC, so that one reboot carries the kernel arguments and the BIOS settings", r.HoldTimeout)
		} else {
			r.release(s)
		}
		s.facts.judge(tsv1.BIOSAppliedCondition, false, tsv1.ReasonBIOSUnknown, "nothing was staged: the BMC could not be used ("+reason+"); see BMCReachable"+note)
	}
	r.event(s, corev1.EventTypeWarning, reason, "ConnectBMC", "%s", msg)
	s.requeue = r.RetryPeriod
}

// release marks the profile's bios section as handled for this node without staging anything.
func (r *BIOSReconciler) release(s *biosScope) {
	if s.step != stepStage {
		return
	}
	fw := &tsv1.FirmwareSpec{}
	if s.firmware != nil {
		fw = s.firmware.DeepCopy()
	}
	fw.Hash = s.hash
	s.firmware = fw
}

// stage validates the wanted attributes against the node's registry and stages them. On any
// problem nothing is PATCHed.
func (r *BIOSReconciler) stage(ctx context.Context, s *biosScope) error {
	if s.step != stepStage {
		return nil
	}
	boot := bootID(s.node)
	if boot == "" {
		s.facts.judge(tsv1.BIOSAppliedCondition, false, tsv1.ReasonWaitingForBootID,
			fmt.Sprintf("node %s has no status.nodeInfo.bootID yet (its kubelet reports it); BIOS settings are staged once it has, so that the reboot that applies them can be recognised", s.lns.Name))
		s.requeue = r.RetryPeriod
		return phase.ErrStop
	}
	plan, err := s.client.Plan(ctx, s.wanted)
	var verr *bmc.ValidationError
	switch {
	case errors.As(err, &verr):
		msg := fmt.Sprintf("%v; nothing was staged: fix spec.bios of LatencyProfile %s", verr, s.profile.Name)
		s.facts.judge(tsv1.BIOSValid, false, tsv1.ReasonBIOSInvalid, msg)
		s.facts.judge(tsv1.BIOSAppliedCondition, false, tsv1.ReasonBIOSInvalid, "nothing was staged: see BIOSValid")
		s.status.Attributes = invalidAttributeStatuses(s.wanted, verr)
		r.event(s, corev1.EventTypeWarning, tsv1.ReasonBIOSInvalid, "ValidateBIOS", "%s", msg)
		r.release(s)
		s.requeue = r.RetryPeriod
		return phase.ErrStop
	case err != nil:
		r.failed(ctx, s, bmcReason(err), err.Error())
		return phase.ErrStop
	}
	s.facts.judge(tsv1.BIOSValid, true, tsv1.ReasonBIOSValid, validText(plan, len(s.wanted)))
	if plan.NeedsPatch() {
		if err := s.client.Apply(ctx, plan); err != nil {
			r.failed(ctx, s, bmcReason(err), err.Error())
			return phase.ErrStop
		}
	}
	s.status.StagedHash = s.hash
	s.status.Attributes = plannedAttributeStatuses(plan)
	if plan.ResetRequired {
		s.firmware = &tsv1.FirmwareSpec{Hash: s.hash, PendingReboot: true, BootID: boot}
		names := changedNames(plan)
		msg := fmt.Sprintf("%d BIOS attribute(s) staged on the BMC (%s); they take effect at the node's next reboot, in its reboot slot together with its kernel arguments", len(names), strings.Join(names, ", "))
		s.facts.judge(tsv1.BIOSAppliedCondition, false, tsv1.ReasonBIOSPendingReboot, msg)
		r.event(s, corev1.EventTypeNormal, "BIOSStaged", "StageBIOS", "%s", msg)
		return phase.ErrStop
	}
	s.firmware = &tsv1.FirmwareSpec{Hash: s.hash}
	now := metav1.NewTime(r.Now())
	s.status.LastVerifiedTime = &now
	s.facts.judge(tsv1.BIOSAppliedCondition, true, tsv1.ReasonBIOSInEffect,
		fmt.Sprintf("all %d BIOS attribute(s) already in effect; no reboot needed", len(s.wanted)))
	s.requeue = r.VerifyPeriod
	return phase.ErrStop
}

// verify reads the values in effect: after the reboot, to report each attribute, and later for
// drift (reported, never corrected by a reboot of the operator's own).
func (r *BIOSReconciler) verify(ctx context.Context, s *biosScope) error {
	if s.step != stepVerifyReboot && s.step != stepVerifyDrift {
		return nil
	}
	ver, err := s.client.Verify(ctx, s.wanted)
	if err != nil {
		r.failed(ctx, s, bmcReason(err), err.Error())
		return phase.ErrStop
	}
	s.status.Attributes = verifiedAttributeStatuses(ver, s.status.Attributes, s.step == stepVerifyDrift)
	now := metav1.NewTime(r.Now())
	s.status.LastVerifiedTime = &now
	s.requeue = r.VerifyPeriod
	if s.step == stepVerifyReboot {
		s.firmware = &tsv1.FirmwareSpec{Hash: s.hash}
	}
	ok, reason, msg := appliedCondition(s.status.Attributes)
	s.facts.judge(tsv1.BIOSAppliedCondition, ok, reason, msg)
	switch {
	case s.step == stepVerifyReboot && ok:
		r.event(s, corev1.EventTypeNormal, "BIOSVerified", "VerifyBIOS", "after the reboot: %s", msg)
	case !ok:
		if anyAttribute(s.status.Attributes, tsv1.BIOSPending) {
			s.requeue = r.RetryPeriod // some firmware applies settings on a second boot of its own
		}
		r.event(s, corev1.EventTypeWarning, reason, "VerifyBIOS", "%s", msg)
	}
	return phase.ErrStop
}

func (r *BIOSReconciler) event(s *biosScope, kind, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(s.lns, nil, kind, reason, action, note, args...)
	}
}

func changedNames(p *bmc.Plan) []string {
	var names []string
	for _, c := range p.Changes {
		if c.Action == bmc.ActionSet || c.Action == bmc.ActionAlreadyPending {
			names = append(names, c.Attribute)
		}
	}
	sort.Strings(names)
	return names
}

func validText(p *bmc.Plan, n int) string {
	if p.Registry == "" {
		return fmt.Sprintf("%d BIOS attribute(s) checked against the current attributes (the BMC publishes no attribute registry)", n)
	}
	return fmt.Sprintf("%d BIOS attribute(s) accepted by attribute registry %s", n, p.Registry)
}
