package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/plan"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// startAPIServer runs a real kube-apiserver with tickstack's CRDs.
func startAPIServer(t *testing.T) client.Client {
	t.Helper()
	_, c := kubetest.New(t, kubetest.Options{})
	return c
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// nodeState stores a node state the way the operator and the agent would have left it.
func nodeState(t *testing.T, c client.Client, node, profile string, tuning *tsv1.NodeTuning, facts *tsv1.NodeFacts) {
	t.Helper()
	lns := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{tsv1.ProfileLabel: profile}},
		Spec:       tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: profile}, Tuning: tuning},
	}
	mustCreate(t, c, lns)
	lns.Status.Facts = facts
	if err := c.Status().Update(context.Background(), lns); err != nil {
		t.Fatal(err)
	}
}

func TestPlanAgainstTheAPIServer(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()
	label := func(role string) map[string]string { return map[string]string{"tickstack.io/role": role} }
	for name, role := range map[string]string{"n-tuned": "trading", "n-new": "trading", "n-tie": "trading", "n-gone": "batch"} {
		mustCreate(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: label(role)}})
	}
	mustCreate(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-tie-extra", Labels: map[string]string{"tickstack.io/role": "trading", "tie": "yes"}}})

	samples, err := ReadProfiles(ctx, filepath.Join("..", "..", "config", "samples", "latencyprofile.yaml"), nil)
	if err != nil || len(samples) != 1 {
		t.Fatalf("the sample profile must read cleanly: %v", err)
	}
	sample := samples[0]
	// The sample as it stands in the cluster today, without the NIC group.
	current := sample.DeepCopy()
	current.Spec.NICs = nil
	mustCreate(t, c, current)
	// Another profile at the same priority that also selects n-tie.
	other := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tie": "yes"}},
	}}
	mustCreate(t, c, other)

	facts := &tsv1.NodeFacts{
		OnlineCPUs: "0-3", KernelCmdline: "BOOT_IMAGE=/vmlinuz root=/dev/vda ro isolcpus=managed_irq,1-3 nohz_full=1-3 rcu_nocbs=1-3 irqaffinity=0 default_hugepagesz=2M",
		Interfaces: []tsv1.InterfaceFacts{{Name: "md0", Driver: "ice"}},
	}
	tuned := &tsv1.NodeTuning{ReservedCPUs: "0", IsolatedCPUs: "1-3",
		KernelArgs: []string{"isolcpus=managed_irq,1-3", "nohz_full=1-3", "rcu_nocbs=1-3", "irqaffinity=0"}}
	nodeState(t, c, "n-tuned", sample.Name, tuned, facts)
	nodeState(t, c, "n-gone", sample.Name, tuned, facts)

	var out bytes.Buffer
	got := planNodes(t, c, sample, &out)
	want := map[string]plan.Action{
		"n-tuned": plan.Apply, "n-new": plan.WaitFacts, "n-tie": plan.WaitFacts,
		"n-tie-extra": plan.Conflict, "n-gone": plan.Restore,
	}
	for node, action := range want {
		if got[node].Action != action {
			t.Errorf("node %s: action %q, want %q\n%s", node, got[node].Action, action, out.String())
		}
	}
	if got["n-tuned"].Reboot {
		t.Errorf("n-tuned already runs the wanted kernel arguments: no reboot expected\n%s", out.String())
	}
	if !got["n-gone"].Reboot {
		t.Errorf("n-gone must reboot to drop tickstack's kernel arguments\n%s", out.String())
	}
	testutil.WantContains(t, "plan output", out.String(),
		"Profile trading: 5 nodes in the plan, 2 would change, 1 would reboot",
		"node n-tuned: apply\n  when: now: applied as soon as the agent sees the change (no drain, no reboot)",
		"+ nic/md0.acceleration: busyPoll",
		"+ sysctls.net.core.busy_poll: 50",
		"node n-tie-extra: conflict\n  also selected by other at priority 0",
		"node n-gone: restore (reboot required)\n  when: reboot wave 1 of 1, now: the first reboot slots are free",
	)

	// -o json: the same plan as data.
	out.Reset()
	if err := PlanAll(ctx, c, []*tsv1.LatencyProfile{sample}, OutputJSON, &out); err != nil {
		t.Fatal(err)
	}
	var plans []plan.Plan
	if err := json.Unmarshal(out.Bytes(), &plans); err != nil {
		t.Fatalf("-o json is not a list of plans: %v\n%s", err, out.String())
	}
	if len(plans) != 1 || plans[0].Profile != "trading" || len(plans[0].Nodes) != len(got) {
		t.Fatalf("plans %+v, want the one plan of profile trading", plans)
	}
	if !strings.Contains(out.String(), `"action": "conflict"`) || !strings.Contains(out.String(), `"setting": "nic/md0.acceleration"`) {
		t.Errorf("-o json lacks the node actions and changes:\n%s", out.String())
	}

	// Nothing was written: the stored profile still has no NIC group.
	stored := &tsv1.LatencyProfile{}
	if err := c.Get(ctx, client.ObjectKey{Name: sample.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.NICs) != 0 || stored.Generation != 1 {
		t.Errorf("plan wrote to the cluster: stored profile generation %d, nics %v", stored.Generation, stored.Spec.NICs)
	}

	// A profile the API server refuses is reported with the field, before any planning.
	bad := sample.DeepCopy()
	bad.Name = "bad"
	bad.Spec.Kernel = &tsv1.KernelSpec{AdditionalArgs: []string{"nohz_full=1"}}
	_, err = Plan(ctx, c, bad, &out)
	if err == nil || !strings.Contains(err.Error(), "spec.kernel.additionalArgs") {
		t.Fatalf("want a refusal naming spec.kernel.additionalArgs, got %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "bad"}, &tsv1.LatencyProfile{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused profile must not be stored: %v", err)
	}
}

func TestReadProfilesNamesTheDocument(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return testutil.WriteFile(t, dir, name, body) }
	good := "apiVersion: tickstack.io/v1alpha1\nkind: LatencyProfile\nmetadata: {name: x}\nspec: {nodeSelector: {}}\n"
	for _, tc := range []struct{ name, body, want string }{
		{"typo.yaml", "apiVersion: tickstack.io/v1alpha1\nkind: LatencyProfile\nmetadata: {name: x}\nspec:\n  nodeSelector: {}\n  cpu: {reserved: '0', isolatd: '1-3'}\n", `typo.yaml document 1 (LatencyProfile x): spec.cpu.isolatd: unknown field`},
		{"kind.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", `kind.yaml document 1 (ConfigMap x): plan takes LatencyProfile, not ConfigMap`},
		{"noname.yaml", "apiVersion: tickstack.io/v1alpha1\nkind: LatencyProfile\nspec: {nodeSelector: {}}\n", "metadata.name: Required value"},
		{"second.yaml", good + "---\n" + strings.Replace(good, "spec: {nodeSelector: {}}", "spec: {nodeSelector: {}, priority: high}", 1), "second.yaml document 2 (LatencyProfile x) is invalid:\n  spec.priority: Invalid value"},
	} {
		_, err := ReadProfiles(context.Background(), write(tc.name, tc.body), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	ps, err := ReadProfiles(context.Background(), "-", strings.NewReader(good+"---\n"+strings.Replace(good, "name: x", "name: second", 1)))
	if err != nil || len(ps) != 2 || ps[0].Name != "x" || ps[1].Name != "second" {
		t.Errorf("reading two profiles from standard input: %v, %v", ps, err)
	}
}

// planNodes plans profile p, writing the text plan to out, and returns the plan of each node.
func planNodes(t *testing.T, c client.Client, p *tsv1.LatencyProfile, out io.Writer) map[string]plan.NodePlan {
	t.Helper()
	pl, err := Plan(context.Background(), c, p, out)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	got := map[string]plan.NodePlan{}
	for _, n := range pl.Nodes {
		got[n.Node] = n
	}
	return got
}
