package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bootloader"
	"github.com/tickstack/tickstack/internal/phase"
	"github.com/tickstack/tickstack/internal/tuning"
)

// irqbalanceSetting is the engine's name of irqbalance's banned-CPU list.
const irqbalanceSetting = "irqbalance/banned-cpus"

// errNoBootLoader: the tuning has kernel arguments and the agent manages no boot loader.
var errNoBootLoader = errors.New("the tuning has kernel arguments but the agent runs with --boot-loader=none: start it with --boot-loader=grub or bls, or remove the profile's kernel arguments")

// validate checks spec.tuning without touching the host; a problem stops the reconcile with
// Degraded naming each field and its fix.
func (r *Reconciler) validate(_ context.Context, s *scope) error {
	d, err := Desired(s.tuning)
	if err == nil {
		err = tuning.Validate(d)
	}
	if err != nil {
		s.obs.invalid = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonValidationFailed, "Validate", "spec.tuning is not valid for this node, nothing was changed: %s", joinErrs(err))
		// A new spec triggers the next reconcile; no periodic retry of an invalid one.
		s.requeue = 0
		return phase.ErrStop
	}
	s.desired = d
	return nil
}

// wasApplied reports whether the previous reconcile applied this generation (and resolution)
// completely, so that any difference found now was made by someone else: drift.
func (r *Reconciler) wasApplied(s *scope) bool {
	lns := s.lns
	r.mu.Lock()
	prev, ok := r.applied[lns.UID]
	early := r.early
	r.mu.Unlock()
	if lns.UID == "" {
		// Before the node state (unnamed.go): an earlier apply of the same resolution that left
		// nothing drifted, so that a report-only profile leaves a later change on the host as
		// found here too.
		return early != nil && early.hash == s.hash && early.complete
	}
	if ok && prev == (appliedTuning{lns.Generation, s.hash}) {
		return true
	}
	// After a restart: what the last status says (as read: this reconcile may have set a new
	// resolution in s.lns already).
	if s.hash != "" && (s.base.Status.Resolved == nil || s.base.Status.Resolved.TuningHash != s.hash) {
		return false
	}
	c := meta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeApplied)
	if lns.Status.ObservedGeneration != lns.Generation {
		return false
	}
	// Drift left in place on purpose (report-only) must survive an agent restart unchanged.
	if d := meta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeDrifted); d != nil && d.Reason == ReasonDriftReported {
		return true
	}
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonPendingReboot || c.Reason == ReasonPendingKubeletRestart || c.Reason == ReasonKubeletRestartFailed)
}

// checkOnly is the report-only drift mode (spec.tuning.driftAction Report): once this generation
// was applied, the agent reads every setting back and reports what changed, writing nothing.
func (r *Reconciler) checkOnly(s *scope) error {
	res, err := r.Engine.Verify(s.desired)
	if err != nil {
		s.obs.applyErr = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonApplyFailed, "Verify", "reading the settings back failed: %s", joinErrs(err))
		return nil
	}
	s.obs.results = res
	s.obs.reportOnly = true
	for _, d := range tuning.Drift(res) {
		if d.State == tuning.Drifted {
			s.obs.drifted = append(s.obs.drifted, d)
		}
	}
	if len(s.obs.drifted) > 0 {
		r.event(s.lns, corev1.EventTypeWarning, tsv1.NodeDrifted, "Verify", "settings changed on the host: %s; left as found (spec.drift.action is Report)", describeDrift(s.obs.drifted))
	}
	return nil
}

// applyRuntime applies the runtime settings (the engine journals originals before any write)
// and restarts irqbalance when its configuration changed. Once a generation was applied
// completely, every write of a later apply corrects a change made on the host: that is drift,
// reported with the value the engine found just before it wrote (no separate check, so a change
// made while the reconcile runs cannot slip through unreported).
func (r *Reconciler) applyRuntime(ctx context.Context, s *scope) error {
	applied := r.wasApplied(s)
	if applied && s.tuning.DriftAction == tsv1.DriftReport {
		return r.checkOnly(s)
	}
	rep, err := r.Engine.Apply(s.desired)
	if rep != nil {
		s.obs.results = rep.Results
		if slices.Contains(rep.Changed, irqbalanceSetting) || slices.Contains(rep.Restored, irqbalanceSetting) {
			r.restartIrqbalance(ctx, s.lns)
		}
		if applied {
			s.obs.drifted = driftFrom(rep)
		}
		if len(s.obs.drifted) > 0 {
			r.event(s.lns, corev1.EventTypeWarning, tsv1.NodeDrifted, "Verify", "settings changed on the host: %s; set back", describeDrift(s.obs.drifted))
		}
	}
	var fe *tuning.FieldError
	if err != nil && (rep == nil || len(rep.Changed) == 0 && len(rep.Results) == 0) && errors.As(err, &fe) {
		// The host cannot take this tuning (a CPU offline, an interface missing, beyond the
		// driver's limits): checked before any write, so nothing changed.
		s.obs.invalid = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonValidationFailed, "Validate", "spec.tuning does not fit this host, nothing was changed: %s", joinErrs(err))
		return phase.ErrStop
	}
	if err != nil {
		s.obs.applyErr = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonApplyFailed, "Apply", "applying the tuning failed: %s", joinErrs(err))
		return nil
	}
	// complete: every setting is now in effect.
	complete := len(tuning.Drift(rep.Results)) == 0
	if len(s.obs.drifted) > 0 {
		s.obs.corrected = complete
	}
	// What the boot unit applies after an unplanned reboot.
	if err := r.saveDesired(s); err != nil {
		s.obs.bootUnitErr = fmt.Errorf("saving the tuning in %s: %w", DesiredPath, err)
	}
	if complete && s.lns.UID != "" {
		r.mu.Lock()
		if r.applied == nil {
			r.applied = map[types.UID]appliedTuning{}
		}
		r.applied[s.lns.UID] = appliedTuning{s.lns.Generation, s.hash}
		r.mu.Unlock()
	}
	changed, before := r.appliedEarly(s, rep.Changed, complete)
	if len(changed) > 0 && len(s.obs.drifted) == 0 {
		r.event(s.lns, corev1.EventTypeNormal, ReasonApplied, "Apply", "applied %d settings%s: %s", len(changed), before, abbreviate(changed, 8))
	}
	return nil
}

func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

// restartIrqbalance runs the configured restart command; irqbalance reads its banned CPUs only
// when it starts. A failure is an event, not a stop: the settings are in the file.
func (r *Reconciler) restartIrqbalance(ctx context.Context, lns *tsv1.LatencyNodeState) {
	if len(r.IrqbalanceRestartCommand) == 0 {
		return
	}
	out, err := r.command(ctx, r.IrqbalanceRestartCommand).CombinedOutput()
	if err != nil {
		r.event(lns, corev1.EventTypeWarning, "IrqbalanceRestartFailed", "RestartIrqbalance", "restarting irqbalance with %v failed: %v: %s; restart it by hand so it reads its banned CPUs", r.IrqbalanceRestartCommand, err, strings.TrimSpace(string(out)))
		return
	}
	ctrl.LoggerFrom(ctx).Info("restarted irqbalance after its banned CPUs changed")
}

func (r *Reconciler) command(ctx context.Context, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "TICKSTACK_NODE_NAME="+r.NodeName, "TICKSTACK_HOST_ROOT="+r.Host.Path("/"))
	return cmd
}

// kernelArgsConfigured reports whether the boot loader holds arguments of ours, or remembers
// retired ones: then it must be reconciled even for a tuning without arguments.
func (r *Reconciler) kernelArgsConfigured() bool {
	if r.Boot == nil {
		return false
	}
	prev, err := r.Boot.Writer.Configured()
	if err != nil || len(prev) > 0 {
		return true
	}
	_, err = os.Stat(r.Boot.RetiredPath)
	return err == nil
}

// reconcileKernelArgs writes the kernel arguments through the boot loader (idempotent: an
// unchanged configuration is not rewritten) and compares them with /proc/cmdline. While a
// reboot command has been issued the boot configuration is left alone.
func (r *Reconciler) reconcileKernelArgs(ctx context.Context, s *scope) error {
	args := s.tuning.KernelArgs
	s.obs.hasArgs = len(args) > 0
	if !s.obs.hasArgs && !r.kernelArgsConfigured() {
		return nil
	}
	s.obs.hasArgs = true
	if r.Boot == nil {
		s.obs.bootErr = errNoBootLoader
		return nil
	}
	cmdline, err := r.Host.ReadFile("/proc/cmdline")
	if err != nil {
		s.obs.bootErr = err
		return nil
	}
	s.obs.cmdline = cmdline
	var st bootloader.Status
	if p := s.obs.reboot; p != nil && p.Phase == tsv1.RebootRebooting {
		// The reboot is under way for what is configured: compare only.
		st = bootloader.Status{Desired: args, Missing: bootloader.Compare(args, cmdline).Missing}
		st.RebootRequired = len(st.Missing) > 0
	} else {
		st, err = r.Boot.Reconcile(ctx, args, cmdline)
		if err != nil {
			s.obs.bootErr = err
			r.event(s.lns, corev1.EventTypeWarning, ReasonBootLoaderFailed, "WriteKernelArgs", "writing kernel arguments failed: %v", err)
			return nil
		}
		r.failpoint(FailpointAfterKernelArgs)
		if st.Written {
			r.event(s.lns, corev1.EventTypeNormal, "KernelArgsWritten", "WriteKernelArgs", "kernel arguments %q written to the boot configuration; %s", args, st.Message())
		}
	}
	s.obs.boot = &st
	return nil
}

// rebootHash identifies the change a reboot is for: the kernel arguments (st, nil when the tuning
// has none) and the operator's spec.firmware.hash, so that a BIOS-only change after a reboot for
// the same kernel arguments is a new change. Without firmware the hash is the kernel arguments'
// alone, as agents before the firmware support recorded it.
func rebootHash(st *bootloader.Status, fw *tsv1.FirmwareSpec) string {
	in := "|"
	if st != nil {
		in = strings.Join(st.Desired, " ") + "|" + strings.Join(st.Stale, " ")
	}
	if fw != nil && fw.Hash != "" {
		in += "|firmware=" + fw.Hash
	}
	h := sha256.Sum256([]byte(in))
	return hex.EncodeToString(h[:8])
}

// publishFingerprint computes the fingerprint of what is in effect and labels the node with it.
func (r *Reconciler) publishFingerprint(ctx context.Context, s *scope) error {
	if s.obs.results == nil {
		return nil
	}
	var extra []string
	if s.obs.boot != nil {
		for _, a := range s.obs.boot.Args(s.obs.cmdline) {
			if a.State != bootloader.ArgPendingReboot {
				extra = append(extra, "kernel/"+a.Observed)
			}
		}
	}
	fp := tuning.Fingerprint(s.obs.results, extra...)
	s.lns.Status.Fingerprint = fp
	return r.labelNode(ctx, fp)
}

// labelNode sets (fp != "") or removes the fingerprint label on the Node.
func (r *Reconciler) labelNode(ctx context.Context, fp string) error {
	node, err := r.getNode(ctx)
	if err != nil {
		return err
	}
	if node.Labels[tsv1.FingerprintLabel] == fp {
		return nil
	}
	orig := node.DeepCopy()
	if fp == "" {
		delete(node.Labels, tsv1.FingerprintLabel)
	} else {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[tsv1.FingerprintLabel] = fp
	}
	if err := r.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("labelling node %s with %s: %w", r.NodeName, tsv1.FingerprintLabel, err)
	}
	return nil
}

// reconcileDelete restores the host's originals (runtime values from the journal, and the boot
// configuration), uncordons a node the agent cordoned, removes the fingerprint label, then the
// finalizer. Kernel arguments the running kernel still has stay in effect until the next reboot:
// the agent does not reboot a node for a deleted node state (an event says so).
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.obs.deleting = true
	if s.obs.reboot != nil && s.obs.reboot.Action != tsv1.ActionKubeletRestart {
		if p := s.obs.reboot.Phase; (p == tsv1.RebootDraining || p == tsv1.RebootRebooting) && controllerutil.ContainsFinalizer(s.lns, tsv1.RestoreFinalizer) {
			// The operator deleted the profile (or the node left it) in the middle of the node's
			// reboot: said once, because nothing else tells them the reboot is no longer awaited.
			r.announce(ctx, s, fromState(s, "delete"), corev1.EventTypeNormal, ReasonRebootAbandoned, "Restore",
				"the node state was deleted while the node was %s for its reboot: the agent no longer waits for the boot; it restores the host's originals, takes the kernel arguments out of the boot configuration and uncordons the node (a reboot already under way boots without them)", p)
		}
		s.obs.reboot = nil
	}
	if !controllerutil.ContainsFinalizer(s.lns, tsv1.RestoreFinalizer) {
		return ctrl.Result{}, nil
	}
	restored, err := r.Engine.Restore()
	r.forgetEarly()
	if slices.Contains(restored, irqbalanceSetting) {
		r.restartIrqbalance(ctx, s.lns)
	}
	if err != nil {
		s.obs.restoreErr = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonRestoreFailed, "Restore", "restoring originals failed, retrying: %v", err)
		return ctrl.Result{RequeueAfter: r.DrainPoll}, nil
	}
	if r.Boot != nil {
		cmdline, _ := r.Host.ReadFile("/proc/cmdline")
		st, err := r.Boot.Remove(ctx, cmdline)
		if err != nil {
			s.obs.restoreErr = err
			r.event(s.lns, corev1.EventTypeWarning, ReasonRestoreFailed, "Restore", "removing kernel arguments from the boot configuration failed, retrying: %v", err)
			return ctrl.Result{RequeueAfter: r.DrainPoll}, nil
		}
		if st.RebootRequired {
			r.event(s.lns, corev1.EventTypeNormal, "KernelArgsPendingRemoval", "Restore", "kernel arguments %q were removed from the boot configuration; the running kernel keeps them until the node's next reboot (the agent does not reboot a node for a deleted node state)", st.Stale)
		}
	}
	if done, err := r.restoreKubelet(ctx, s); err != nil || !done {
		if err != nil {
			s.obs.restoreErr = err
			r.event(s.lns, corev1.EventTypeWarning, ReasonRestoreFailed, "Restore", "restoring the kubelet's drop-in failed, retrying: %v", err)
		}
		return ctrl.Result{RequeueAfter: s.requeue}, nil
	}
	if err := r.removeBootUnit(); err != nil {
		s.obs.restoreErr = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonRestoreFailed, "Restore", "removing the boot unit failed, retrying: %v", err)
		return ctrl.Result{RequeueAfter: r.DrainPoll}, nil
	}
	if err := r.setTaint(ctx, false); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.uncordon(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.labelNode(ctx, ""); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.withdrawFeature(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.setSharedCPUs(ctx, nil, 0, false); err != nil {
		return ctrl.Result{}, err
	}
	r.releaseSelf(s.lns)
	r.event(s.lns, corev1.EventTypeNormal, "Restored", "Restore", "restored the host's original values of %d settings", len(restored))
	orig := s.lns.DeepCopy()
	controllerutil.RemoveFinalizer(s.lns, tsv1.RestoreFinalizer)
	if err := r.Client.Patch(ctx, s.lns, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer %s: %w", tsv1.RestoreFinalizer, err))
	}
	if r.ResolveOnNode {
		r.setConfirmLive(true)
	}
	return ctrl.Result{}, nil
}

// driftFrom lists what Apply wrote, with the value it found and the desired one.
func driftFrom(rep *tuning.Report) []tuning.Result {
	desired := map[string]tuning.Result{}
	for _, res := range rep.Results {
		desired[res.Name] = res
	}
	out := make([]tuning.Result, 0, len(rep.Changed))
	for _, name := range rep.Changed {
		res := desired[name]
		out = append(out, tuning.Result{Name: name, Field: res.Field, Desired: res.Desired, Observed: rep.Before[name], State: tuning.Drifted})
	}
	return out
}
