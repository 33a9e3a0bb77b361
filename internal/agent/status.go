package agent

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bootloader"
	"github.com/tickstack/tickstack/internal/host/kubeletconf"
	"github.com/tickstack/tickstack/internal/ptp"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Condition reasons the agent writes on its LatencyNodeState. docs/install.md (Reading status)
// explains each and what to do about it; test/docs fails when one is missing there.
const (
	// ReasonApplied (Applied=True): every setting the host supports is in effect.
	ReasonApplied = "Applied"
	// ReasonWaitingForTuning (Applied=False): spec.tuning is unset; the operator resolves it from
	// the facts this agent reported. The agent changes nothing meanwhile.
	ReasonWaitingForTuning = "WaitingForTuning"
	// ReasonValidationFailed (Applied=False, Degraded=True): spec.tuning is invalid for this host;
	// nothing was changed. The message names each field and the fix.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonProfileNotFound (Applied=False, Degraded=True): the node resolves its own tuning
	// (spec.profile.resolveOnNode) and the LatencyProfile spec.profile.name names does not exist;
	// nothing on the host was changed, the tuning in effect stays.
	ReasonProfileNotFound = "ProfileNotFound"
	// ReasonResolutionFailed (Applied=False, Degraded=True): the node resolves its own tuning and
	// the profile does not fit it (the message names the profile's field and the fix); nothing on
	// the host was changed, the tuning in effect stays.
	ReasonResolutionFailed = "ResolutionFailed"
	// ReasonApplyFailed (Applied=False, Degraded=True): a write failed; the message says which.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonNotInSync (Applied=False, Degraded=True): after applying, some settings still differ.
	ReasonNotInSync = "SettingsNotInSync"
	// ReasonPendingReboot (Applied=False): runtime settings are in effect, kernel arguments wait
	// for the reboot.
	ReasonPendingReboot = "PendingReboot"
	// ReasonBootUnitFailed (Degraded=True): the boot unit, its binary or the saved tuning could not
	// be written (boot.go).
	ReasonBootUnitFailed = "BootUnitFailed"
	// ReasonPendingKubeletRestart (Applied=False): runtime settings are in effect, the kubelet's
	// settings wait for its restart in the node's rollout slot.
	ReasonPendingKubeletRestart = "PendingKubeletRestart"
	// ReasonRestoring (Applied=False): the node state is being deleted; originals are put back.
	ReasonRestoring = "Restoring"
	// ReasonAsExpected (Degraded=False): nothing is wrong.
	ReasonAsExpected = "AsExpected"
	// ReasonFactsFailed (Degraded=True): the host's facts could not be read.
	ReasonFactsFailed = "FactsFailed"
	// ReasonBootLoaderFailed (Degraded=True): the kernel arguments could not be written.
	ReasonBootLoaderFailed = "BootLoaderFailed"
	// ReasonNoBootLoader (Degraded=True): the tuning has kernel arguments but the agent runs
	// without a boot loader (--boot-loader=none).
	ReasonNoBootLoader = "NoBootLoader"
	// ReasonRebootDidNotApply (Degraded=True, RebootRequired=False, Applied=False): the node
	// rebooted for these kernel arguments and still runs without them; the agent does not reboot
	// again for them, and gives the reboot slot back.
	ReasonRebootDidNotApply = "RebootDidNotApply"
	// ReasonRebootFailed (Degraded=True): the reboot command failed; it is retried after a back-off.
	ReasonRebootFailed = "RebootCommandFailed"
	// ReasonDrainFailed (RebootRequired=True): the drain timed out; the node was uncordoned and
	// the request is repeated after a back-off.
	ReasonDrainFailed = "DrainFailed"
	// ReasonRebootAbandoned (event): the node state was deleted while its node was draining or
	// rebooting for its kernel arguments; the agent restores the host without waiting for the boot.
	ReasonRebootAbandoned = "RebootAbandoned"
	// ReasonRestoreFailed (Degraded=True): an original value could not be written back; the
	// finalizer stays and the agent retries.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonKernelArgsInEffect (RebootRequired=False): the running kernel has every argument.
	ReasonKernelArgsInEffect = "KernelArgsInEffect"
	// ReasonNoKernelArgs (RebootRequired=False): the tuning has no kernel arguments.
	ReasonNoKernelArgs = "NoKernelArgs"
	// ReasonFirmwarePendingReboot (RebootRequired=True): the kernel arguments are in effect (or
	// there are none) and BIOS settings the operator staged on the BMC wait for a reboot of this
	// boot (spec.firmware); the agent asks for a reboot slot for them. The reboot phase is in
	// status.reboot and the message; a failed drain keeps reason DrainFailed.
	ReasonFirmwarePendingReboot = "FirmwarePendingReboot"
	// ReasonNoDrift (Drifted=False): the last check found every setting as applied.
	ReasonNoDrift = "NoDrift"
	// ReasonDriftCorrected (Drifted=True): the last check found settings changed on the host and
	// set them back. It turns False at the first later check that finds no drift.
	ReasonDriftCorrected = "DriftCorrected"
	// ReasonDriftNotCorrected (Drifted=True): settings were changed on the host and could not be
	// set back.
	ReasonDriftNotCorrected = "DriftNotCorrected"
	// ReasonDriftReported (Drifted=True): settings were changed on the host and, as the profile's
	// spec.drift.action is Report, left as found.
	ReasonDriftReported = "DriftReported"
)

// Reboot phase reasons of RebootRequired=True are the phase names themselves (Requested,
// Draining, Rebooting, Verifying, DrainFailed), prefixed "Reboot" where the phase alone is vague.
func rebootReason(p tsv1.RebootPhase, a tsv1.RebootAction) string {
	if a == tsv1.ActionKubeletRestart {
		switch p {
		case tsv1.RebootRequested:
			return ReasonKubeletRestartRequired
		case tsv1.RebootVerifying:
			return "VerifyingKubelet"
		}
	}
	switch p {
	case tsv1.RebootRestartingKubelet:
		return "RestartingKubelet"
	case tsv1.RebootRequested:
		return "RebootRequested"
	case tsv1.RebootDraining:
		return "Draining"
	case tsv1.RebootRebooting:
		return "Rebooting"
	case tsv1.RebootVerifying:
		return "VerifyingKernelArgs"
	case tsv1.RebootDrainFailed:
		return ReasonDrainFailed
	}
	return "RebootRequired"
}

// firmwareMessage says what a reboot for staged BIOS settings waits for, and what to do.
const firmwareMessage = "BIOS settings staged on the BMC by the operator wait for a reboot (spec.firmware.pendingReboot); the agent reboots the node in its reboot slot (rollout.maxUnavailable), or reboot it by hand; status.bios says which attributes"

// rebootCause says why the node needs a reboot: its kernel arguments, staged BIOS settings, or both.
func rebootCause(o *observation) string {
	argsReboot := o.boot != nil && o.boot.RebootRequired
	switch {
	case argsReboot && o.firmwarePending:
		return o.boot.Message() + "; " + firmwareMessage
	case o.firmwarePending:
		return firmwareMessage
	}
	return bootMessage(o.boot)
}

// kubeletCause says what a kubelet restart is for.
func kubeletCause(k *kubeletObs) string {
	if k == nil {
		return "the kubelet's settings change"
	}
	if k.want == nil {
		return "the profile no longer has kubelet settings: the drop-in " + kubeletconf.FileName + " goes back to what the host had"
	}
	if k.cpus.stale() && bytes.Equal(k.current, k.desired) {
		return "the kubelet's CPU manager plans with CPUs " + k.cpus.known + " but CPUs " + k.cpus.online + " are online (CPUs taken offline or brought back since it started): it restarts with new checkpoints"
	}
	if k.have != nil && bytes.Equal(k.current, k.desired) {
		return "the kubelet drop-in is in place but the running kubelet has " + diffValues(k.want, k.have)
	}
	return "the kubelet's settings change (drop-in " + kubeletconf.FileName + ": reservedSystemCPUs, CPU, topology and memory managers)"
}

// bootMessage is the boot loader's account of the kernel arguments, safe when it was not read.
func bootMessage(b *bootloader.Status) string {
	if b == nil {
		return "the kernel arguments could not be checked"
	}
	return b.Message()
}

// maxSettings is the API's cap on status.settings.
const maxSettings = 1024

// observation is what one reconcile found and did; the status is computed from it alone.
type observation struct {
	generation int64
	deleting   bool
	noTuning   bool
	factsErr   error
	// invalid holds the validation problems of spec.tuning (nothing was changed).
	invalid error
	// resolveErr is the agent's own resolution's failure (nothing was changed).
	resolveErr *resolutionError
	// applyErr is a failure of Apply (planning against the host, or writes).
	applyErr error
	results  []tuning.Result
	// hasArgs reports that the tuning has kernel arguments (or stale ones are configured).
	hasArgs  bool
	boot     *bootloader.Status
	bootErr  error
	cmdline  string
	reboot   *tsv1.RebootStatus
	rebootEr error
	// rebootDidNotApply is set when the node already rebooted for these arguments in vain.
	rebootDidNotApply bool
	// firmwarePending: spec.firmware has BIOS settings staged that wait for a reboot of the
	// running boot (FirmwareSpec.PendingFor).
	firmwarePending bool
	// drifted are the settings found changed before this reconcile's apply; corrected reports
	// that the apply set them back.
	drifted   []tuning.Result
	corrected bool
	// reportOnly: the settings were only checked (spec.tuning.driftAction Report), not applied.
	reportOnly bool
	// restoreErr is a failure to put originals back while deleting.
	restoreErr error
	// ptpWanted: spec.tuning has a ptp section; ptpInvalid is its validation failure, ptpErr a
	// failure to set up linuxptp, ptp the running daemon's snapshot read at ptpRead.
	ptpWanted  bool
	ptpInvalid error
	ptpErr     error
	ptp        *ptp.Snapshot
	ptpRead    time.Time
	// kubelet is the kubelet drop-in's state (nil: the tuning has none and none is on the host).
	kubelet *kubeletObs
	// kubeletConfig is how the kubelet's configuration was last read (nil: the agent manages no
	// kubelet).
	kubeletConfig *tsv1.KubeletConfigStatus
	// shared is the shared CPU pool's extended resource on the Node (nil: none wanted or found).
	shared *sharedObs
	// bootUnitErr: the boot unit or the saved tuning could not be written (boot.go).
	bootUnitErr error
	// appliedBootID is the boot the tuning was last found Applied under.
	appliedBootID string
}

// applyStatus writes the conditions, settings and observedGeneration computed from o into st.
// It is pure: tests call it as a table.
func applyStatus(st *tsv1.LatencyNodeStateStatus, o *observation) {
	set := func(t string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: o.generation})
	}
	st.Reboot = o.reboot
	if o.appliedBootID != "" {
		st.AppliedBootID = o.appliedBootID
	}
	setPTPStatus(st, o, set)
	if o.kubeletConfig != nil {
		st.KubeletConfig = o.kubeletConfig
	}

	switch {
	case o.deleting:
		set(tsv1.NodeApplied, false, ReasonRestoring, "the node state is being deleted: the agent restores the host's original values")
		if o.restoreErr != nil {
			set(tsv1.NodeDegraded, true, ReasonRestoreFailed, fmt.Sprintf("restoring originals failed (the agent retries; the journal keeps them): %v", o.restoreErr))
		} else {
			set(tsv1.NodeDegraded, false, ReasonAsExpected, "restoring")
		}
		return
	case o.noTuning:
		set(tsv1.NodeApplied, false, ReasonWaitingForTuning, "spec.tuning is not set yet: the operator resolves it from the facts this agent reported; nothing on the host is changed meanwhile")
		degradedFacts(set, o.factsErr)
		return
	case o.resolveErr != nil:
		msg := resolutionMessage(o.resolveErr)
		set(tsv1.NodeApplied, false, o.resolveErr.reason, msg)
		set(tsv1.NodeDegraded, true, o.resolveErr.reason, msg)
		return
	case o.invalid != nil:
		msg := "spec.tuning is not valid for this node, nothing was changed: " + joinErrs(o.invalid)
		set(tsv1.NodeApplied, false, ReasonValidationFailed, msg)
		set(tsv1.NodeDegraded, true, ReasonValidationFailed, msg)
		return
	}

	if o.results != nil || o.boot != nil || o.applyErr != nil {
		// A reconcile cut short before it read the host keeps the last settings.
		st.Settings = settings(o)
	}
	notInSync := notInSync(o.results)
	switch {
	case o.applyErr != nil:
		set(tsv1.NodeApplied, false, ReasonApplyFailed, "applying failed: "+joinErrs(o.applyErr))
	case len(notInSync) > 0:
		set(tsv1.NodeApplied, false, ReasonNotInSync, "settings not in effect after applying: "+strings.Join(notInSync, ", "))
	case o.rebootDidNotApply:
		set(tsv1.NodeApplied, false, ReasonRebootDidNotApply, "runtime settings are in effect; the node rebooted for its kernel arguments and still runs without them (see Degraded)")
	case o.boot != nil && o.boot.RebootRequired:
		set(tsv1.NodeApplied, false, ReasonPendingReboot, "runtime settings are in effect; "+o.boot.Message())
	case o.hasArgs && o.boot == nil:
		set(tsv1.NodeApplied, false, ReasonBootLoaderFailed, "runtime settings are in effect; the kernel arguments could not be checked")
	case o.kubelet != nil && o.kubelet.err != nil:
		set(tsv1.NodeApplied, false, o.kubelet.reason, "runtime settings are in effect; "+o.kubelet.err.Error())
	case o.kubeletPending():
		set(tsv1.NodeApplied, false, ReasonPendingKubeletRestart, "runtime settings are in effect; "+kubeletCause(o.kubelet)+": the kubelet restarts in the node's rollout slot")
	case o.kubelet != nil && o.kubelet.failed:
		set(tsv1.NodeApplied, false, ReasonKubeletRestartFailed, "runtime settings are in effect; the kubelet did not come back with its new settings (see Degraded)")
	default:
		set(tsv1.NodeApplied, true, ReasonApplied, appliedMessage(o.results, o.boot))
	}

	switch {
	case o.applyErr != nil:
		set(tsv1.NodeDegraded, true, ReasonApplyFailed, "applying failed: "+joinErrs(o.applyErr))
	case o.bootErr != nil && o.hasArgs && errors.Is(o.bootErr, errNoBootLoader):
		set(tsv1.NodeDegraded, true, ReasonNoBootLoader, o.bootErr.Error())
	case o.bootErr != nil:
		set(tsv1.NodeDegraded, true, ReasonBootLoaderFailed, "writing kernel arguments failed: "+o.bootErr.Error())
	case o.rebootDidNotApply:
		set(tsv1.NodeDegraded, true, ReasonRebootDidNotApply, "the node rebooted for its kernel arguments and still runs without them: "+bootMessage(o.boot)+"; check the boot loader configuration (--grub-update-command, BLS entries) and the LatencyNodeState annotation "+tsv1.RebootedForAnnotation+"; remove that annotation to let the agent reboot once more")
	case o.rebootEr != nil:
		set(tsv1.NodeDegraded, true, ReasonRebootFailed, o.rebootEr.Error())
	case o.kubelet != nil && o.kubelet.err != nil:
		set(tsv1.NodeDegraded, true, o.kubelet.reason, o.kubelet.err.Error())
	case o.kubelet != nil && o.kubelet.restartErr != nil:
		set(tsv1.NodeDegraded, true, ReasonKubeletRestartFailed, o.kubelet.restartErr.Error())
	case o.bootUnitErr != nil:
		set(tsv1.NodeDegraded, true, ReasonBootUnitFailed, "the tuning is in effect, but after an unplanned reboot it would not be back before the kubelet starts pods: "+o.bootUnitErr.Error())
	case o.kubelet != nil && o.kubelet.failed:
		set(tsv1.NodeDegraded, true, ReasonKubeletRestartFailed, "the kubelet did not come back with the drop-in "+kubeletconf.FileName+" the profile asks for, so the previous one is in place; fix the profile's kubelet section (or the kubelet), or remove the annotation "+tsv1.KubeletRestartedForAnnotation+" from the node state to try once more")
	case len(notInSync) > 0:
		set(tsv1.NodeDegraded, true, ReasonNotInSync, "settings not in effect after applying: "+strings.Join(notInSync, ", "))
	case o.ptpInvalid != nil:
		set(tsv1.NodeDegraded, true, ReasonPTPInvalid, "spec.tuning.ptp is not valid, linuxptp does not run: "+joinErrs(o.ptpInvalid))
	case o.factsErr != nil:
		degradedFacts(set, o.factsErr)
	default:
		set(tsv1.NodeDegraded, false, ReasonAsExpected, "no problem found")
	}

	argsReboot := o.boot != nil && o.boot.RebootRequired
	switch {
	case o.boot == nil && o.hasArgs:
		// Writing failed: keep what was known.
	case o.rebootDidNotApply:
		// False: the agent will not reboot for these arguments again, so the operator takes the
		// reboot slot back and the rollout goes on with the other nodes.
		set(tsv1.NodeRebootRequired, false, ReasonRebootDidNotApply, bootMessage(o.boot)+"; the node already rebooted for them: no further reboot (see Degraded)")
	case argsReboot || o.firmwarePending:
		reason, msg := "RebootRequired", rebootCause(o)
		if o.kubeletPending() {
			msg += "; " + kubeletCause(o.kubelet) + " (in the same reboot)"
		}
		if o.reboot != nil {
			reason = rebootReason(o.reboot.Phase, o.reboot.Action)
			if o.reboot.Message != "" {
				msg = o.reboot.Message + "; " + msg
			}
		}
		if !argsReboot && reason != ReasonDrainFailed && (o.reboot == nil || o.reboot.Action != tsv1.ActionKubeletRestart) {
			reason = ReasonFirmwarePendingReboot
		}
		set(tsv1.NodeRebootRequired, true, reason, msg)
	case o.kubeletPending():
		// The slot is the reboot's (RebootRequired is what the operator's budget counts); the
		// action is a kubelet restart.
		reason, msg := ReasonKubeletRestartRequired, kubeletCause(o.kubelet)+": the agent restarts the kubelet in the node's rollout slot (rollout.maxUnavailable), not the node"
		if o.reboot != nil {
			reason = rebootReason(o.reboot.Phase, o.reboot.Action)
			if o.reboot.Message != "" {
				msg = o.reboot.Message + "; " + msg
			}
		}
		set(tsv1.NodeRebootRequired, true, reason, msg)
	case o.boot == nil:
		set(tsv1.NodeRebootRequired, false, ReasonNoKernelArgs, "the tuning has no kernel arguments")
	default:
		set(tsv1.NodeRebootRequired, false, ReasonKernelArgsInEffect, o.boot.Message())
	}

	switch {
	case len(o.drifted) > 0 && o.reportOnly:
		set(tsv1.NodeDrifted, true, ReasonDriftReported, "changed on the host, left as found (the profile's spec.drift.action is Report): "+describeDrift(o.drifted))
	case len(o.drifted) > 0 && o.corrected:
		set(tsv1.NodeDrifted, true, ReasonDriftCorrected, "changed on the host and set back: "+describeDrift(o.drifted))
	case len(o.drifted) > 0:
		set(tsv1.NodeDrifted, true, ReasonDriftNotCorrected, "changed on the host, not set back: "+describeDrift(o.drifted))
	case o.applyErr == nil:
		set(tsv1.NodeDrifted, false, ReasonNoDrift, "every setting is as applied")
	}
	if o.applyErr == nil && o.bootErr == nil && o.factsErr == nil {
		st.ObservedGeneration = o.generation
	}
}

func degradedFacts(set func(string, bool, string, string), err error) {
	if err != nil {
		set(tsv1.NodeDegraded, true, ReasonFactsFailed, "reading the host's facts failed: "+err.Error())
		return
	}
	set(tsv1.NodeDegraded, false, ReasonAsExpected, "no problem found")
}

func joinErrs(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

func notInSync(results []tuning.Result) []string {
	var out []string
	for _, r := range results {
		if r.State == tuning.Drifted || r.State == tuning.Failed {
			out = append(out, fmt.Sprintf("%s (want %q, have %q)", r.Name, r.Desired, r.Observed))
		}
	}
	return out
}

func describeDrift(rs []tuning.Result) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s was %q (want %q)", r.Name, r.Observed, r.Desired))
	}
	return strings.Join(parts, ", ")
}

func appliedMessage(results []tuning.Result, boot *bootloader.Status) string {
	inSync, unsupported := 0, 0
	for _, r := range results {
		switch r.State {
		case tuning.InSync:
			inSync++
		case tuning.Unsupported:
			unsupported++
		}
	}
	msg := fmt.Sprintf("%d settings in effect", inSync)
	if boot != nil && len(boot.Desired) > 0 {
		msg += fmt.Sprintf(", %d kernel arguments in effect", len(boot.Desired))
	}
	if unsupported > 0 {
		msg += fmt.Sprintf(", %d not supported by this host (see status.settings)", unsupported)
	}
	return msg
}

var settingStates = map[tuning.State]tsv1.SettingState{
	tuning.InSync:      tsv1.SettingInSync,
	tuning.Drifted:     tsv1.SettingDrifted,
	tuning.Unsupported: tsv1.SettingUnsupported,
	tuning.Failed:      tsv1.SettingFailed,
}

// settings lists every runtime setting and kernel argument with its desired and observed value.
func settings(o *observation) []tsv1.SettingStatus {
	out := make([]tsv1.SettingStatus, 0, len(o.results))
	for _, r := range o.results {
		s := tsv1.SettingStatus{Name: r.Name, Desired: r.Desired, Observed: r.Observed, State: settingStates[r.State], Message: r.Message}
		if r.State == tuning.Drifted && s.Message == "" {
			s.Message = "differs from the desired value after applying"
		}
		out = append(out, s)
	}
	if o.boot != nil {
		for _, a := range o.boot.Args(o.cmdline) {
			s := tsv1.SettingStatus{Name: "kernel/" + a.Arg, Desired: a.Arg, Observed: a.Observed, State: tsv1.SettingInSync}
			switch a.State {
			case bootloader.ArgPendingReboot:
				s.State, s.Message = tsv1.SettingPendingReboot, "written to the boot configuration; in effect after the next reboot"
			case bootloader.ArgPendingRemoval:
				s.Desired = ""
				s.State, s.Message = tsv1.SettingPendingReboot, "removed from the boot configuration; the running kernel keeps it until the next reboot"
			}
			out = append(out, s)
		}
	}
	out = append(out, kubeletSettings(o.kubelet, inKubeletRestart(o.reboot))...)
	out = append(out, sharedSettings(o.shared)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	// The map key must be unique: a kernel argument could repeat (hugepages=N for two sizes).
	uniq := make([]tsv1.SettingStatus, 0, len(out))
	for _, s := range out {
		if n := len(uniq); n > 0 && uniq[n-1].Name == s.Name {
			continue
		}
		uniq = append(uniq, s)
	}
	if len(uniq) > maxSettings {
		uniq = uniq[:maxSettings]
	}
	return uniq
}
