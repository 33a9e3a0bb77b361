package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/bmc"
)

// lnsOf reads a node state; an empty one when it does not exist yet.
func lnsOf(c client.Client, name string) *tsv1.LatencyNodeState {
	l := &tsv1.LatencyNodeState{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, l); err != nil {
		return &tsv1.LatencyNodeState{}
	}
	return l
}

// biosCondition is status.bios' condition typ, or nil.
func biosCondition(l *tsv1.LatencyNodeState, typ string) *metav1.Condition {
	if l.Status.BIOS == nil {
		return nil
	}
	return meta.FindStatusCondition(l.Status.BIOS.Conditions, typ)
}

func attrState(l *tsv1.LatencyNodeState, name string) *tsv1.BIOSAttributeStatus {
	if l.Status.BIOS == nil {
		return nil
	}
	for i := range l.Status.BIOS.Attributes {
		if l.Status.BIOS.Attributes[i].Name == name {
			return &l.Status.BIOS.Attributes[i]
		}
	}
	return nil
}

// setAgentStatus plays the node agent's part of the reboot protocol on the node state's status.
func setAgentStatus(t *testing.T, c client.Client, name string, required bool, phase tsv1.RebootPhase) {
	t.Helper()
	l := &tsv1.LatencyNodeState{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, l); err != nil {
		t.Fatal(err)
	}
	orig := l.DeepCopy()
	st := metav1.ConditionFalse
	reason := "KernelArgsInEffect"
	if required {
		st, reason = metav1.ConditionTrue, "PendingReboot"
	}
	meta.SetStatusCondition(&l.Status.Conditions, metav1.Condition{Type: tsv1.NodeRebootRequired, Status: st, Reason: reason, Message: "played by the test"})
	l.Status.Reboot = nil
	if phase != "" {
		l.Status.Reboot = &tsv1.RebootStatus{Phase: phase, LastTransitionTime: metav1.Now()}
	}
	if err := c.Status().Patch(context.Background(), l, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

// TestBIOSValidatesStagesAndVerifiesAfterTheReboot runs the real operator (profile and BIOS
// controllers) against a real Redfish server (sushy-tools) and plays the node agent and the
// kubelet: a bad attribute is refused naming it and its allowed values with nothing PATCHed; the
// fixed profile is staged (PATCH Bios/Settings) and marks the node as needing a reboot, the reboot
// slot is granted only after that; after the reboot (a new boot ID) each attribute is verified and
// reported, and a later change at the BMC is reported as drift. No credential appears in logs,
// events or node states.
func TestBIOSValidatesStagesAndVerifiesAfterTheReboot(t *testing.T) {
	g := gomega.NewWithT(t)
	const user = "tsbios-admin"
	password := "TsBios-" + rand.Text()
	e := startSushy(t, user, password)
	logs := &bench.SyncBuffer{}
	c := startOperator(t, logs, 2*time.Second)
	ctx := context.Background()

	ns, node, role := biosName("bmc"), biosName("n1"), biosName("stage")
	namespace(t, c, ns)
	makeNode(t, c, node, role, "boot-1")
	bmcFor(t, c, node, ns, e, user, password, tsv1.BMCTLS{CABundle: string(e.ca)})
	before := e.read(t)
	cur, want := e.otherTurbo(t)

	profile := biosProfile("stage", role,
		tsv1.BIOSAttribute{Name: "ProcTurboMode", Value: "Off"}, // not in the registry's enumeration
		tsv1.BIOSAttribute{Name: "QuietBoot", Value: "true"},
	)
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), profile) })

	// 1. Refused before anything changes, naming the attribute and the allowed values.
	g.Eventually(func() error {
		l := lnsOf(c, node)
		v := biosCondition(l, tsv1.BIOSValid)
		if v == nil || v.Status != metav1.ConditionFalse || v.Reason != tsv1.ReasonBIOSInvalid {
			return fmt.Errorf("BIOSValid %+v", v)
		}
		for _, s := range []string{`"ProcTurboMode"`, `"Off"`, "allowed: Enabled, Disabled", "spec.bios", profile.Name} {
			if !strings.Contains(v.Message, s) {
				return fmt.Errorf("BIOSValid message %q lacks %q", v.Message, s)
			}
		}
		a := attrState(l, "ProcTurboMode")
		if a == nil || a.State != tsv1.BIOSInvalid || !strings.Contains(a.Message, "Enabled, Disabled") {
			return fmt.Errorf("attribute ProcTurboMode %+v", a)
		}
		if fw := l.Spec.Firmware; fw == nil || fw.PendingReboot {
			return fmt.Errorf("spec.firmware %+v: want handled, no reboot", fw)
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	after := e.read(t)
	if fmt.Sprint(after.Current) != fmt.Sprint(before.Current) || fmt.Sprint(after.Settings) != fmt.Sprint(before.Settings) {
		t.Fatalf("a refused profile changed the BIOS:\nbefore %v / %v\nafter  %v / %v", before.Current, before.Settings, after.Current, after.Settings)
	}

	// 2. The profile is fixed, and the agent asks for a slot (for its kernel arguments) as soon as
	// the operator has seen the change: the new BIOS settings must be staged before the slot is
	// granted.
	p := &tsv1.LatencyProfile{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(profile), p); err != nil {
		t.Fatal(err)
	}
	orig := p.DeepCopy()
	p.Spec.BIOS.Attributes = []tsv1.BIOSAttribute{{Name: "ProcTurboMode", Value: want}}
	if err := c.Patch(ctx, p, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error {
		got := &tsv1.LatencyProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(profile), got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("profile observedGeneration %d, want %d", got.Status.ObservedGeneration, p.Generation)
		}
		return nil
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	setAgentStatus(t, c, node, true, tsv1.RebootRequested)
	g.Eventually(func() error {
		l := lnsOf(c, node)
		fw := l.Spec.Firmware
		if fw == nil || !fw.PendingReboot || fw.BootID != "boot-1" {
			if l.Spec.RebootGranted {
				return gomega.StopTrying(fmt.Sprintf("the reboot slot was granted before the BIOS settings were staged (firmware %+v)", fw))
			}
			return fmt.Errorf("spec.firmware %+v", fw)
		}
		if a := biosCondition(l, tsv1.BIOSAppliedCondition); a == nil || a.Reason != tsv1.ReasonBIOSPendingReboot || !strings.Contains(a.Message, "ProcTurboMode") {
			return fmt.Errorf("BIOSApplied %+v", a)
		}
		if a := attrState(l, "ProcTurboMode"); a == nil || a.State != tsv1.BIOSPendingReboot || a.Desired != want {
			return fmt.Errorf("attribute %+v", a)
		}
		if !l.Spec.RebootGranted {
			return fmt.Errorf("staged, but no reboot slot granted yet")
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	if got := fmt.Sprint(e.read(t).Settings["ProcTurboMode"]); got != want {
		t.Fatalf("Bios/Settings ProcTurboMode = %q after staging, want %q (was %q)", got, want, cur)
	}

	// 3. Not verified before the reboot; after it (the kubelet reports a new boot ID, the agent
	// clears RebootRequired) every attribute is verified and reported.
	if a := biosCondition(lnsOf(c, node), tsv1.BIOSAppliedCondition); a.Status == metav1.ConditionTrue {
		t.Fatalf("BIOSApplied True before the reboot: %+v", a)
	}
	setBootID(t, c, node, "boot-2")
	setAgentStatus(t, c, node, false, "")
	g.Eventually(func() error {
		l := lnsOf(c, node)
		if fw := l.Spec.Firmware; fw == nil || fw.PendingReboot {
			return fmt.Errorf("spec.firmware %+v", fw)
		}
		a := attrState(l, "ProcTurboMode")
		if a == nil || a.State != tsv1.BIOSApplied || a.Observed != want || a.Desired != want {
			return fmt.Errorf("attribute %+v", a)
		}
		if ap := biosCondition(l, tsv1.BIOSAppliedCondition); ap == nil || ap.Status != metav1.ConditionTrue || ap.Reason != tsv1.ReasonBIOSInEffect {
			return fmt.Errorf("BIOSApplied %+v", ap)
		}
		if l.Status.BIOS.LastVerifiedTime == nil || l.Status.BIOS.Vendor != string(bmc.VendorSushy) || l.Status.BIOS.Endpoint != e.url {
			return fmt.Errorf("status.bios %+v", l.Status.BIOS)
		}
		if l.Spec.RebootGranted {
			return fmt.Errorf("the slot was not given back")
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())

	// 4. Someone changes the attribute at the BMC: drift is reported, and no reboot is asked for.
	e.set(t, bmc.Attributes{"ProcTurboMode": cur})
	g.Eventually(func() error {
		l := lnsOf(c, node)
		a := attrState(l, "ProcTurboMode")
		if a == nil || a.State != tsv1.BIOSDrifted || a.Observed != cur {
			return fmt.Errorf("attribute %+v", a)
		}
		if ap := biosCondition(l, tsv1.BIOSAppliedCondition); ap == nil || ap.Reason != tsv1.ReasonBIOSDrifted || !strings.Contains(ap.Message, "ProcTurboMode") {
			return fmt.Errorf("BIOSApplied %+v", ap)
		}
		if fw := l.Spec.Firmware; fw == nil || fw.PendingReboot {
			return fmt.Errorf("drift asked for a reboot: %+v", fw)
		}
		return nil
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())

	checkNoSecrets(t, c, logs, user, password)
}

// TestBIOSBMCFailuresAreConditions: an untrusted certificate, a wrong password, a missing Secret
// and a missing BMC object each end as a BMCReachable=False condition with its own reason and a
// message that says what to fix; nothing is staged, and the reboot hold is released so that kernel
// arguments do not wait on a broken BMC. No credential appears anywhere.
func TestBIOSBMCFailuresAreConditions(t *testing.T) {
	g := gomega.NewWithT(t)
	const user = "tsbios-admin"
	password := "TsBios-" + rand.Text()
	wrong := "TsBiosWrong-" + rand.Text()
	e := startSushy(t, user, password)
	logs := &bench.SyncBuffer{}
	c := startOperator(t, logs, 2*time.Second)
	ctx := context.Background()

	ns, role := biosName("fail"), biosName("fail")
	namespace(t, c, ns)
	tlsNode, authNode, noSecret, noBMC := biosName("tls"), biosName("auth"), biosName("nosecret"), biosName("nobmc")
	unreachable := biosName("dead")
	for _, n := range []string{tlsNode, authNode, noSecret, noBMC, unreachable} {
		makeNode(t, c, n, role, "boot-1")
	}
	bmcFor(t, c, tlsNode, ns, e, user, password, tsv1.BMCTLS{CABundle: foreignCA(t)})
	bmcFor(t, c, authNode, ns, e, user, wrong, tsv1.BMCTLS{CABundle: string(e.ca)})
	b := &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: noSecret}, Spec: tsv1.BMCSpec{Endpoint: e.url,
		CredentialsSecret: tsv1.SecretKeyReference{Namespace: ns, Name: "absent"}, TLS: &tsv1.BMCTLS{CABundle: string(e.ca)}}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), b) })
	// A BMC that does not answer: a loopback port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "https://" + l.Addr().String()
	_ = l.Close()
	bmcFor(t, c, unreachable, ns, &emulator{url: deadURL}, user, password, tsv1.BMCTLS{CABundle: string(e.ca)})
	before := e.read(t)
	_, want := e.otherTurbo(t)

	profile := biosProfile("fail", role, tsv1.BIOSAttribute{Name: "ProcTurboMode", Value: want})
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), profile) })

	cases := map[string]struct{ reason, contains string }{
		tlsNode:  {tsv1.ReasonBMCTLS, "give the CA bundle"},
		authNode: {tsv1.ReasonBMCAuth, "check the user name and password"},
		noSecret: {tsv1.ReasonBMCSecret, ns + "/absent does not exist"},
		noBMC:    {tsv1.ReasonNoBMC, "create one"},
	}
	for n, want := range cases {
		g.Eventually(func() error {
			l := lnsOf(c, n)
			r := biosCondition(l, tsv1.BIOSBMCReachable)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != want.reason || !strings.Contains(r.Message, want.contains) {
				return fmt.Errorf("%s: BMCReachable %+v, want reason %s mentioning %q", n, r, want.reason, want.contains)
			}
			if fw := l.Spec.Firmware; fw == nil || fw.PendingReboot || fw.Hash == "" {
				return fmt.Errorf("%s: spec.firmware %+v: want the hold released, no reboot", n, fw)
			}
			return nil
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	}
	// No answer may be a moment's trouble: the reboot slot stays held (HoldTimeout, 5 min by
	// default), so that the kernel arguments do not reboot the node before its BIOS settings.
	g.Eventually(func() error {
		l := lnsOf(c, unreachable)
		r := biosCondition(l, tsv1.BIOSBMCReachable)
		if r == nil || r.Reason != tsv1.ReasonBMCUnreachable || !strings.Contains(r.Message, deadURL) {
			return fmt.Errorf("BMCReachable %+v", r)
		}
		if a := biosCondition(l, tsv1.BIOSAppliedCondition); a == nil || !strings.Contains(a.Message, "waits up to 5m0s") {
			return fmt.Errorf("BIOSApplied %+v", a)
		}
		if l.Spec.Firmware != nil {
			return fmt.Errorf("spec.firmware %+v: the hold was released", l.Spec.Firmware)
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	if after := e.read(t); fmt.Sprint(after.Current) != fmt.Sprint(before.Current) {
		t.Fatalf("a failed BMC login changed the BIOS: %v -> %v", before.Current, after.Current)
	}
	checkNoSecrets(t, c, logs, user, password, wrong)
}
