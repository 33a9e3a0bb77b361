package bios

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
)

// biosFacts is what the phases of one reconcile found about the BMC, the settings' validity and
// whether they are in effect: each judgement in the order the phases made it (a BMC that answered
// at connect and then failed while staging is both). setBIOSStatus turns them into conditions.
type biosFacts struct {
	judged []biosJudgement
}

// biosJudgement is one phase's verdict on one condition type.
type biosJudgement struct {
	condition string
	ok        bool
	reason    string
	message   string
}

// judge records a phase's verdict on condition typ.
func (f *biosFacts) judge(typ string, ok bool, reason, msg string) {
	f.judged = append(f.judged, biosJudgement{condition: typ, ok: ok, reason: reason, message: msg})
}

// setBIOSStatus sets the conditions of st (BMCReachable, BIOSValid, BIOSApplied) from what the
// phases judged, in their order, for the node state's generation; a condition no phase judged
// keeps what it said. A condition's LastTransitionTime moves when its status changes, also between
// two judgements of one reconcile. Pure: the table tests need no client.
func setBIOSStatus(st *tsv1.BIOSStatus, f *biosFacts, generation int64) {
	for _, j := range f.judged {
		status := metav1.ConditionFalse
		if j.ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: j.condition, Status: status, Reason: j.reason, Message: j.message, ObservedGeneration: generation,
		})
	}
}

// plannedAttributeStatuses is the per-attribute report right after staging.
func plannedAttributeStatuses(p *bmc.Plan) []tsv1.BIOSAttributeStatus {
	out := make([]tsv1.BIOSAttributeStatus, 0, len(p.Changes))
	for _, c := range p.Changes {
		a := tsv1.BIOSAttributeStatus{Name: c.Attribute, Desired: c.Desired, Observed: c.Current}
		switch c.Action {
		case bmc.ActionSet, bmc.ActionAlreadyPending:
			a.State = tsv1.BIOSPendingReboot
			a.Message = "staged; applied by the firmware at the next reboot"
		default:
			a.State = tsv1.BIOSApplied
		}
		out = append(out, a)
	}
	return out
}

// invalidAttributeStatuses reports every wanted attribute, the refused ones Invalid with the
// registry's reason.
func invalidAttributeStatuses(wanted bmc.Attributes, verr *bmc.ValidationError) []tsv1.BIOSAttributeStatus {
	problems := map[string]string{}
	for _, p := range verr.Problems {
		msg := p.Problem
		if len(p.Allowed) > 0 {
			msg += "; allowed: " + strings.Join(p.Allowed, ", ")
		}
		problems[p.Attribute] = msg
	}
	names := make([]string, 0, len(wanted))
	for n := range wanted {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]tsv1.BIOSAttributeStatus, 0, len(names))
	for _, n := range names {
		msg, bad := problems[n]
		if !bad {
			continue
		}
		out = append(out, tsv1.BIOSAttributeStatus{Name: n, Desired: fmt.Sprint(wanted[n]), State: tsv1.BIOSInvalid, Message: msg})
	}
	return out
}

// verifiedAttributeStatuses turns a verification into the per-attribute report. On a drift check,
// a value that was in effect before and no longer is becomes Drifted.
func verifiedAttributeStatuses(v *bmc.Verification, prev []tsv1.BIOSAttributeStatus, driftCheck bool) []tsv1.BIOSAttributeStatus {
	was := map[string]tsv1.BIOSAttributeState{}
	for _, a := range prev {
		was[a.Name] = a.State
	}
	out := make([]tsv1.BIOSAttributeStatus, 0, len(v.Results))
	for _, r := range v.Results {
		a := tsv1.BIOSAttributeStatus{Name: r.Attribute, Desired: r.Desired, Observed: r.Observed}
		switch r.State {
		case bmc.StateApplied:
			a.State = tsv1.BIOSApplied
		case bmc.StateUnverifiable:
			a.State, a.Message = tsv1.BIOSApplied, "a password: BMCs never report its value"
		case bmc.StatePending:
			a.State, a.Message = tsv1.BIOSPending, "still staged after the reboot: the firmware has not applied it (some apply on a second boot of their own)"
		case bmc.StateMissing:
			a.State, a.Message = tsv1.BIOSMissing, "the BIOS no longer reports this attribute (a BIOS update may have renamed it): fix spec.bios.attributes"
		default:
			a.State, a.Message = tsv1.BIOSMismatch, "not in effect after the reboot and not staged: the BIOS refused or lost it"
			if driftCheck && (was[r.Attribute] == tsv1.BIOSApplied || was[r.Attribute] == tsv1.BIOSDrifted) {
				a.State, a.Message = tsv1.BIOSDrifted, "was in effect and changed since, outside tickstack: set it back on the BMC, or change the profile"
			}
		}
		out = append(out, a)
	}
	return out
}

// appliedCondition sums the per-attribute report into the BIOSApplied condition.
func appliedCondition(attrs []tsv1.BIOSAttributeStatus) (bool, string, string) {
	var drifted, other []string
	for _, a := range attrs {
		switch a.State {
		case tsv1.BIOSApplied:
		case tsv1.BIOSDrifted:
			drifted = append(drifted, fmt.Sprintf("%s=%s (want %s)", a.Name, a.Observed, a.Desired))
		default:
			other = append(other, fmt.Sprintf("%s %s (observed %s, want %s)", a.Name, a.State, a.Observed, a.Desired))
		}
	}
	switch {
	case len(other) > 0:
		return false, tsv1.ReasonBIOSNotApplied, "not in effect: " + strings.Join(other, "; ")
	case len(drifted) > 0:
		return false, tsv1.ReasonBIOSDrifted, "changed since they were applied: " + strings.Join(drifted, "; ") + "; set them back on the BMC (the operator reports drift and does not reboot for it)"
	}
	return true, tsv1.ReasonBIOSInEffect, fmt.Sprintf("all %d BIOS attribute(s) in effect", len(attrs))
}
