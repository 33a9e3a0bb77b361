package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/kubeletconf"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// treeKubelet stands in for the kubelet of a host-root tree (envtest runs none; the e2e restarts
// the real one): stopping it forgets what it loaded; starting it refuses a CPU manager checkpoint
// left from before (as the real kubelet refuses one made under other settings), writes a new one
// over the tree's online CPUs and loads the drop-in, unless the test made it ignore drop-ins; configz answers while it runs
// with the main file's values overridden by what it loaded.
type treeKubelet struct {
	logs, root string
}

const treeKubeletStart = `set -e
logs=$1 root=$2 dropin=$3
if [ -e "$root/cpu_manager_state" ]; then echo "could not restore state from checkpoint" >&2; exit 1; fi
echo "{\"policyName\":\"static\",\"defaultCpuSet\":\"$(cat "$root/../../../sys/devices/system/cpu/online")\"}" > "$root/cpu_manager_state"
rm -f "$logs/loaded"
if [ -e "$dropin" ] && [ ! -e "$logs/ignore-drop-ins" ]; then cp "$dropin" "$logs/loaded"; fi
touch "$logs/running"
echo start >> "$logs/log"`

func newTreeKubelet(t *testing.T, a *agenttest.TreeAgent) *treeKubelet {
	t.Helper()
	logs := agenttest.TempDir(t, "kubelet")
	root := filepath.Join(a.Root, "var/lib/kubelet")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// Running, with a checkpoint of its main file's settings.
	for p, c := range map[string]string{filepath.Join(root, "cpu_manager_state"): `{"policyName":"static"}`, filepath.Join(logs, "running"): ""} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return treeKubeletOn(a, logs)
}

// treeKubeletOn gives a's agent the tree kubelet whose state is in logs (newTreeKubelet made it).
func treeKubeletOn(a *agenttest.TreeAgent, logs string) *treeKubelet {
	k := &treeKubelet{logs: logs, root: filepath.Join(a.Root, "var/lib/kubelet")}
	dropIn := filepath.Join(a.Root, "etc/kubernetes/kubelet.conf.d", kubeletconf.FileName)
	a.R.Kubelet = agent.KubeletOptions{
		ConfigDir: "/etc/kubernetes/kubelet.conf.d", RootDir: "/var/lib/kubelet",
		StopCommand:  []string{"/bin/sh", "-c", `rm -f "$1/running" "$1/loaded"; echo stop >> "$1/log"`, "stop", k.logs},
		StartCommand: []string{"/bin/sh", "-c", treeKubeletStart, "start", k.logs, k.root, dropIn},
		Config:       agent.KubeletConfigReader{Configz: k.configz}.Read,
		StartTimeout: 3 * time.Second,
	}
	return k
}

func (k *treeKubelet) configz(context.Context) ([]byte, error) {
	if _, err := os.Stat(filepath.Join(k.logs, "running")); err != nil {
		return nil, errors.New("the kubelet does not run")
	}
	conf := map[string]any{
		"reservedSystemCPUs": "0", "cpuManagerPolicy": "static", "memoryManagerPolicy": "None",
		"topologyManagerPolicy": "none", "topologyManagerScope": "container",
		"evictionHard": map[string]any{"memory.available": "200Mi", "nodefs.available": "2%"},
	}
	if b, err := os.ReadFile(filepath.Join(k.logs, "loaded")); err == nil {
		var d map[string]any
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, err
		}
		for key, v := range d {
			if m, ok := v.(map[string]any); ok {
				if base, ok := conf[key].(map[string]any); ok {
					for mk, mv := range m {
						base[mk] = mv
					}
					continue
				}
			}
			conf[key] = v
		}
	}
	return json.Marshal(map[string]any{"kubeletconfig": conf})
}

func (k *treeKubelet) log(t *testing.T) string {
	t.Helper()
	return strings.Join(agenttest.Lines(t, filepath.Join(k.logs, "log")), " ")
}

func kubeletTuning(policy tsv1.TopologyManagerPolicy) *tsv1.NodeTuning {
	return &tsv1.NodeTuning{
		ReservedCPUs: "0-1", IsolatedCPUs: "2-3",
		Kubelet: &tsv1.KubeletTuning{
			TopologyManagerPolicy: policy, TopologyManagerScope: tsv1.DefaultTopologyManagerScope,
			SystemReservedMemory: resource.MustParse("512Mi"), EvictionHardMemory: resource.MustParse("100Mi"),
		},
	}
}

func kubeletSetting(l *tsv1.LatencyNodeState, name string) tsv1.SettingStatus {
	return setting(l, "kubelet/"+name)
}

// TestTreeKubeletRestart: a kubelet section waits for the slot, then the kubelet is stopped, its
// checkpoints removed, the drop-in written and the kubelet started and checked through configz,
// once; a kubelet that does not take up a drop-in gets the previous one back (Degraded, no retry);
// deleting the node state restarts it with the host's original (no drop-in).
func TestTreeKubeletRestart(t *testing.T) {
	node := agenttest.Name("kubelet")
	a := agenttest.NewTreeAgent(t, node)
	k := newTreeKubelet(t, a)
	dropIn := filepath.Join(a.Root, "etc/kubernetes/kubelet.conf.d", kubeletconf.FileName)
	startOnTree(t, a, node, kubeletTuning(tsv1.DefaultTopologyManagerPolicy))

	tsutil.Poll(t, 20*time.Second, "a kubelet restart requested", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionTrue, agent.ReasonKubeletRestartRequired); err != nil {
			return err
		}
		if r := l.Status.Reboot; r == nil || r.Phase != tsv1.RebootRequested || r.Action != tsv1.ActionKubeletRestart {
			return fmt.Errorf("reboot status %+v", r)
		}
		if s := kubeletSetting(l, "reservedSystemCPUs"); s.State != tsv1.SettingPendingRestart || s.Desired != "0-1" || s.Observed != "0" {
			return fmt.Errorf("setting %+v", s)
		}
		if k := l.Status.KubeletConfig; k == nil || k.Source != tsv1.KubeletConfigFromConfigz {
			return fmt.Errorf("status.kubeletConfig %+v, want source Configz", k)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionFalse, agent.ReasonPendingKubeletRestart)
	})
	// Nothing before the slot.
	if _, err := os.Stat(dropIn); !os.IsNotExist(err) {
		t.Fatalf("the drop-in was written before the slot: %v", err)
	}
	if got := k.log(t); got != "" {
		t.Fatalf("the kubelet was touched before the slot: %s", got)
	}

	setGranted(t, node, true)
	pollSlotDone(t, node, "the kubelet restarted with the drop-in", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
		if err := wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionFalse, ""); err != nil {
			return err
		}
		if s := kubeletSetting(l, "reservedSystemCPUs"); s.State != tsv1.SettingInSync || s.Observed != "0-1" {
			return fmt.Errorf("setting %+v", s)
		}
		if s := kubeletSetting(l, "memoryManagerPolicy"); s.State != tsv1.SettingInSync || s.Observed != "Static" {
			return fmt.Errorf("setting %+v", s)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	if got := k.log(t); got != "stop start" {
		t.Errorf("kubelet log %q, want one stop and one start", got)
	}
	if getNode(t, node).Spec.Unschedulable {
		t.Error("the node stays cordoned after the restart")
	}
	tsutil.Poll(t, 10*time.Second, "one event of each step", func() error {
		for _, reason := range []string{"KubeletRestartRequested", "Draining", "KubeletRestarted", "KubeletVerified"} {
			if n := len(events(t, node, reason)); n != 1 {
				return fmt.Errorf("%d %s events, want 1", n, reason)
			}
		}
		return nil
	})
	if got := readTree(t, a, "var/lib/tickstack/kubelet/original"); got != "# tickstack: no drop-in" {
		t.Errorf("the original drop-in recorded as %q, want absent", got)
	}
	good, err := os.ReadFile(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	setGranted(t, node, false) // as the operator does

	// A kubelet that ignores the new drop-in: rolled back after the start timeout, once.
	if err := os.WriteFile(filepath.Join(k.logs, "ignore-drop-ins"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning = kubeletTuning("restricted") })
	tsutil.Poll(t, 20*time.Second, "a second kubelet restart requested", func() error {
		l := getLNS(t, node)
		if r := l.Status.Reboot; r == nil || r.Phase != tsv1.RebootRequested {
			return fmt.Errorf("reboot status %+v", r)
		}
		return nil
	})
	setGranted(t, node, true)
	pollSlotDone(t, node, "the previous drop-in back", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
		if err := wantCondition(l, tsv1.NodeDegraded, metav1.ConditionTrue, agent.ReasonKubeletRestartFailed); err != nil {
			return err
		}
		if !strings.HasPrefix(l.Annotations[tsv1.KubeletRestartedForAnnotation], "failed-") {
			return fmt.Errorf("annotation %q", l.Annotations[tsv1.KubeletRestartedForAnnotation])
		}
		return wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionFalse, "")
	})
	if b, _ := os.ReadFile(dropIn); string(b) != string(good) {
		t.Errorf("after the rollback the drop-in is\n%s\nwant the previous one\n%s", b, good)
	}
	if getNode(t, node).Spec.Unschedulable {
		t.Error("the node stays cordoned after the rollback")
	}
	// Two stops and starts: the failed attempt and the rollback; no retry of the same drop-in.
	gomega.NewWithT(t).Consistently(func() string { return k.log(t) }).
		WithTimeout(3*time.Second).WithPolling(100*time.Millisecond).
		Should(gomega.Equal("stop start stop start stop start"), "the first restart, the failed one and the rollback, then no retry")
	setGranted(t, node, false)
	if err := os.Remove(filepath.Join(k.logs, "ignore-drop-ins")); err != nil {
		t.Fatal(err)
	}

	// Deletion: the kubelet restarts with no drop-in, without a slot.
	deleteLNS(t, node)
	if _, err := os.Stat(dropIn); !os.IsNotExist(err) {
		t.Errorf("the drop-in is still there after the restore: %v", err)
	}
	if _, err := os.Stat(filepath.Join(a.Root, "var/lib/tickstack/kubelet/original")); !os.IsNotExist(err) {
		t.Errorf("the original's record is still there after the restore: %v", err)
	}
	if got := k.log(t); got != "stop start stop start stop start stop start" {
		t.Errorf("kubelet log %q, want one more restart for the restore", got)
	}
	if getNode(t, node).Spec.Unschedulable {
		t.Error("the node stays cordoned after the restore")
	}
}

// TestTreeRebootAnnouncedOnce: a transition of the reboot protocol is recorded in status.reboot
// before it is done, and said exactly once however often it is tried. While the API server
// refuses to record Draining (an admission policy on the status subresource), the granted node is
// not cordoned and has been told Draining once, not once per attempt; once the record goes
// through, there is still one Draining event and the restart completes. The end likewise.
func TestTreeRebootAnnouncedOnce(t *testing.T) {
	ctx := context.Background()
	node := agenttest.Name("recorded")
	startKubeletRestartRequested(t, node)

	statusWrites := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{tsv1.GroupVersion.Group}, APIVersions: []string{"*"},
			Resources: []string{"latencynodestates/status"}},
	}
	liftDraining := denyByPolicy(t, node, statusWrites,
		fmt.Sprintf("object.metadata.name != %q || !has(object.status.reboot) || object.status.reboot.phase != 'Draining'", node),
		"the test refuses to record Draining")
	// In force once a dry-run write of Draining is refused.
	tsutil.Poll(t, 20*time.Second, "the policy in force", func() error {
		l := getLNS(t, node)
		orig := l.DeepCopy()
		l.Status.Reboot = &tsv1.RebootStatus{Phase: tsv1.RebootDraining, Action: tsv1.ActionKubeletRestart}
		if err := k8s.Status().Patch(ctx, l, client.MergeFrom(orig), client.DryRunAll); err == nil {
			return errors.New("a write of Draining still goes through")
		}
		return nil
	})

	setGranted(t, node, true)
	pollEvent(t, node, "Draining")
	gomega.NewWithT(t).Consistently(func() string {
		return fmt.Sprintf("phase %s, cordoned %t, Draining events %d", rebootPhase(t, node), getNode(t, node).Spec.Unschedulable, len(events(t, node, "Draining")))
	}).WithTimeout(4*time.Second).WithPolling(200*time.Millisecond).
		Should(gomega.Equal("phase Requested, cordoned false, Draining events 1"), "nothing is done before Draining is recorded, and it is said once")

	// The end likewise: KubeletVerified is said once however often the end is tried (an agent the
	// restarted kubelet restarts must not say it again). A second policy refuses recording it,
	// proved in force on a probe node state first.
	probe := node + "-probe"
	createLNS(t, probe, nil)
	liftEnd := denyByPolicy(t, node+"-end", statusWrites,
		fmt.Sprintf("!(object.metadata.name in [%q, %q]) || has(object.status.reboot) || !has(oldObject.status.reboot) || oldObject.status.reboot.phase != 'Verifying'", node, probe),
		"the test refuses to record the end of Verifying")
	p := getLNS(t, probe)
	orig := p.DeepCopy()
	p.Status.Reboot = &tsv1.RebootStatus{Phase: tsv1.RebootVerifying, Action: tsv1.ActionKubeletRestart}
	if err := k8s.Status().Patch(ctx, p, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "the second policy in force", func() error {
		l := getLNS(t, probe)
		orig := l.DeepCopy()
		l.Status.Reboot = nil
		if err := k8s.Status().Patch(ctx, l, client.MergeFrom(orig), client.DryRunAll); err == nil {
			return errors.New("the end of Verifying is still recorded")
		}
		return nil
	})

	liftDraining()
	tsutil.Poll(t, 60*time.Second, "the kubelet restarted and verified", func() error {
		if r := getLNS(t, node).Status.Reboot; r == nil || r.Phase != tsv1.RebootVerifying {
			return fmt.Errorf("reboot status %+v", r)
		}
		if !getNode(t, node).Spec.Unschedulable {
			return nil // uncordoned: the end is being recorded
		}
		return errors.New("still cordoned")
	})
	pollEvent(t, node, "KubeletVerified")
	gomega.NewWithT(t).Consistently(func() string {
		return fmt.Sprintf("phase %s, KubeletVerified events %d", rebootPhase(t, node), len(events(t, node, "KubeletVerified")))
	}).WithTimeout(4*time.Second).WithPolling(200*time.Millisecond).
		Should(gomega.Equal("phase Verifying, KubeletVerified events 1"), "the end, tried again and again, is said once")

	liftEnd()
	pollSlotDone(t, node, "the reboot over", 60*time.Second, func(l *tsv1.LatencyNodeState) error {
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	for _, reason := range []string{"Draining", "KubeletRestarted", "KubeletVerified"} {
		if n := len(events(t, node, reason)); n != 1 {
			t.Errorf("%d %s events, want 1", n, reason)
		}
	}
}

// TestTreeAnnouncementOutlivesAnAPIOutage: a reboot-protocol step whose event cannot be written
// (the API server or etcd down for a moment; here a policy refuses it) is still said, once, when
// the API takes it again: the agent writes it again in the background, not holding the node up.
func TestTreeAnnouncementOutlivesAnAPIOutage(t *testing.T) {
	ctx := context.Background()
	node := agenttest.Name("outage")
	eventWrites := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"events.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"events"}},
	}
	liftEvents := denyByPolicy(t, node, eventWrites, fmt.Sprintf("object.regarding.name != %q", node),
		"the test refuses this node state's events")
	probe := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: node + ".probe", Namespace: metav1.NamespaceDefault},
		EventTime: metav1.NowMicro(), ReportingController: "test", ReportingInstance: "test", Action: "Probe", Reason: "Probe", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "LatencyNodeState", Name: node}}
	tsutil.Poll(t, 20*time.Second, "the policy in force", func() error {
		if err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll); err == nil {
			return errors.New("an event of the node state is still written")
		}
		return nil
	})

	startKubeletRestartRequested(t, node)
	if n := len(events(t, node, "KubeletRestartRequested")); n != 0 {
		t.Fatalf("%d KubeletRestartRequested events written through the policy", n)
	}
	liftEvents()
	tsutil.Poll(t, 30*time.Second, "the step said once the API takes it", func() error {
		if n := len(events(t, node, "KubeletRestartRequested")); n != 1 {
			return fmt.Errorf("%d KubeletRestartRequested events", n)
		}
		return nil
	})
}

// denyByPolicy refuses, until the test ends or the returned lift is called, the writes that rule
// matches where expression is false: a ValidatingAdmissionPolicy named name (failing closed) and
// its Deny binding. The caller proves it in force with a dry run before relying on it.
func denyByPolicy(t *testing.T, name string, rule admissionregistrationv1.RuleWithOperations, expression, message string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: rule,
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, o) })
	}
	return func() {
		t.Helper()
		for _, o := range []client.Object{binding, policy} {
			if err := k8s.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// startKubeletRestartRequested starts an agent over a tree with a kubelet for a node state whose
// kubelet settings want a restart, and waits until the agent asks for its slot.
func startKubeletRestartRequested(t *testing.T, node string) (*agenttest.TreeAgent, *treeKubelet) {
	t.Helper()
	a := agenttest.NewTreeAgent(t, node)
	k := newTreeKubelet(t, a)
	startOnTree(t, a, node, kubeletTuning(tsv1.DefaultTopologyManagerPolicy))
	tsutil.Poll(t, 20*time.Second, "a kubelet restart requested", func() error {
		if r := getLNS(t, node).Status.Reboot; r == nil || r.Phase != tsv1.RebootRequested {
			return fmt.Errorf("reboot status %+v", r)
		}
		return nil
	})
	return a, k
}
