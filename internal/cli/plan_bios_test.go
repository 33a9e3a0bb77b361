package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
	"github.com/tickstack/tickstack/internal/plan"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// sushyURL starts a sushy-tools Redfish emulator (TLS, basic auth) for the test and returns its
// URL and CA bundle.
func sushyURL(t *testing.T, user, password string) (string, []byte) {
	t.Helper()
	e := testutil.StartRedfishEmulator(t, user, password)
	return e.URL, e.CA
}

// TestPlanShowsBIOSChangesAndReboots plans a profile with kernel arguments and a BIOS attribute
// against a real API server and a real Redfish server: the BIOS change is read from the BMC and
// shown, the node's one reboot covers both, a bad attribute is shown refused, a node without a BMC
// and a user who may not read the credentials get "BIOS not planned" with the reason, and nothing
// is PATCHed.
func TestPlanShowsBIOSChangesAndReboots(t *testing.T) {
	const user = "tsbios-admin"
	password := "TsBios-" + rand.Text()
	url, ca := sushyURL(t, user, password)
	env, _ := kubetest.New(t, kubetest.Options{})
	cfg := env.Config
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	bmcCfg := bmc.Config{Endpoint: url, Credentials: bmc.Credentials{Username: user, Password: password}, CABundle: ca}
	bc, err := bmc.Connect(ctx, bmcCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	before, err := bc.ReadBIOS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur := fmt.Sprint(before.Current["ProcTurboMode"])
	want := "Disabled"
	if cur == "Disabled" {
		want = "Enabled"
	}

	role := map[string]string{"tickstack.io/role": "bios"}
	facts := &tsv1.NodeFacts{OnlineCPUs: "0-3", KernelCmdline: "BOOT_IMAGE=/vmlinuz ro"}
	for _, n := range []string{"b-1", "b-nobmc"} {
		mustCreate(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: role}})
		nodeState(t, c, n, "bios", nil, facts)
	}
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bmc"}})
	mustCreate(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "bmc", Name: "b-1"},
		Data: map[string][]byte{"username": []byte(user), "password": []byte(password)}})
	mustCreate(t, c, &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: "b-1"}, Spec: tsv1.BMCSpec{Endpoint: url,
		CredentialsSecret: tsv1.SecretKeyReference{Namespace: "bmc", Name: "b-1"}, TLS: &tsv1.BMCTLS{CABundle: string(ca)}}})

	profile := &tsv1.LatencyProfile{
		TypeMeta:   metav1.TypeMeta{Kind: "LatencyProfile", APIVersion: tsv1.GroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: "bios"},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: role},
			Kernel:       &tsv1.KernelSpec{AdditionalArgs: []string{"tsbios.plan=1"}},
			BIOS:         &tsv1.BIOSSpec{Attributes: []tsv1.BIOSAttribute{{Name: "ProcTurboMode", Value: want}}},
		},
	}
	var out bytes.Buffer
	pl, err := Plan(ctx, c, profile, &out)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	t.Logf("tickstack plan:\n%s", out.String())
	got := map[string]plan.NodePlan{}
	for _, n := range pl.Nodes {
		got[n.Node] = n
	}
	if b := got["b-1"].BIOS; b == nil || !b.Reboot || len(b.Changes) != 1 || !got["b-1"].Reboot {
		t.Errorf("b-1: BIOS plan %+v, reboot %v\n%s", b, got["b-1"].Reboot, out.String())
	}
	testutil.WantContains(t, "plan output", out.String(),
		"node b-1: apply (reboot required: one reboot for the kernel arguments and the BIOS settings)",
		"  BIOS via "+url+":\n  ~ bios/ProcTurboMode: "+cur+" -> "+want,
		"node b-nobmc: apply (reboot required)\n",
		`BIOS not planned: no BMC object "b-nobmc" for the node`,
		"2 would reboot",
	)

	// A value the registry refuses is shown refused, naming the attribute and the allowed values.
	bad := profile.DeepCopy()
	bad.Spec.BIOS.Attributes = []tsv1.BIOSAttribute{{Name: "ProcTurboMode", Value: "Off"}}
	out.Reset()
	if _, err := Plan(ctx, c, bad, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `BIOS refused (nothing would be staged): 1 invalid BIOS attribute(s)`) || !strings.Contains(out.String(), `"ProcTurboMode": value "Off" is not allowed; allowed: Enabled, Disabled`) {
		t.Errorf("refusal not shown:\n%s", out.String())
	}

	// A user who may plan profiles but not read Secrets: the BIOS part is not planned, and says why.
	planner, err := env.AddUser(envtest.User{Name: "tsbios-planner"})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tsbios-planner"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"tickstack.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "create", "update"}},
	}})
	mustCreate(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tsbios-planner"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "tsbios-planner"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "tsbios-planner"}}})
	pc, err := client.New(planner.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := Plan(ctx, pc, profile, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "BIOS not planned: your kubeconfig user may not read the BMC credentials (Secret bmc/b-1: forbidden)") {
		t.Errorf("the forbidden Secret is not explained:\n%s", out.String())
	}

	after, err := bc.ReadBIOS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after.Current) != fmt.Sprint(before.Current) || fmt.Sprint(after.Settings) != fmt.Sprint(before.Settings) {
		t.Errorf("planning changed the BIOS: %v -> %v", before.Current, after.Current)
	}
	if strings.Contains(out.String(), password) {
		t.Errorf("the plan output shows the password")
	}
}
