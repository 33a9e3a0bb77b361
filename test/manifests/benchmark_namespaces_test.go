package manifests

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	benchctrl "github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/internal/render"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// TestBenchmarksOnlyInOptedInNamespaces installs config/default's RBAC on a real kube-apiserver
// and runs the operator's controllers as the manager's service account with nothing else granted.
// In its own namespace (opted in by config/default's RoleBinding) a TwoPods LatencyBenchmark gets
// its Jobs, Service, service account, Role and RoleBinding. In another namespace the manager may
// not create a Job, the benchmark's condition NamespaceOptedIn is False naming the namespace and
// the RoleBinding to create, and nothing is created; once an administrator creates that
// RoleBinding, the run starts.
func TestBenchmarksOnlyInOptedInNamespaces(t *testing.T) {
	e, admin := kubetest.New(t, kubetest.Options{})
	ctx := context.Background()
	const ns, other, node = "tickstack-system", "tsbn-other", "tsbn-node"
	for _, n := range []string{ns, other} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := admin.Create(ctx, o); err != nil {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	if err := admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":tickstack-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	scheme := kubetest.Scheme()
	if err := render.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(mgr, controllers.Options{
		Network: network.NetworkOptions{Namespace: ns}, BMC: bios.BMCPolicy{SecretNamespace: ns},
		BenchImage: "tsbn.test/bench:1", BenchmarkClusterRole: benchctrl.DefaultBenchmarkClusterRole,
	}); err != nil {
		t.Fatal(err)
	}
	testutil.RunInBackground(t, ctx, "manager", mgr.Start)

	benchmark := func(namespace string) *tsv1.LatencyBenchmark {
		return &tsv1.LatencyBenchmark{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "tsbn"},
			Spec: tsv1.LatencyBenchmarkSpec{
				Target:    tsv1.BenchmarkTarget{NodeNames: []string{node}},
				Placement: &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods},
				Suites:    tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{Protocols: []tsv1.Protocol{tsv1.ProtocolUDP}, MessageSizes: []int32{64}, DurationSeconds: 1}},
			},
		}
	}
	optedIn := func(namespace string) *metav1.Condition {
		t.Helper()
		var c *metav1.Condition
		testutil.PollTrue(t, 30*time.Second, "the NamespaceOptedIn condition of the benchmark in "+namespace, func() bool {
			b := &tsv1.LatencyBenchmark{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "tsbn"}, b); err != nil {
				t.Fatal(err)
			}
			c = apimeta.FindStatusCondition(b.Status.Conditions, tsv1.BenchmarkNamespaceOptedIn)
			return c != nil
		})
		return c
	}
	jobName := func(namespace string) string {
		b := &tsv1.LatencyBenchmark{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "tsbn"}, b); err != nil || len(b.Status.Nodes) != 1 {
			t.Fatalf("the benchmark in %s has no node entry: %v %+v", namespace, err, b.Status)
		}
		return b.Status.Nodes[0].Job
	}
	exists := func(namespace, name string, o client.Object) bool {
		err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, o)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	// The operator's namespace is opted in: the run's objects are created.
	if err := admin.Create(ctx, benchmark(ns)); err != nil {
		t.Fatal(err)
	}
	if c := optedIn(ns); c.Status != metav1.ConditionTrue {
		t.Fatalf("in the operator's namespace: NamespaceOptedIn %s %s: %s", c.Status, c.Reason, c.Message)
	}
	job := jobName(ns)
	testutil.PollTrue(t, 30*time.Second, "the runner Job, the reflector Job and Service, the service account, Role and RoleBinding in "+ns, func() bool {
		return exists(ns, job, &batchv1.Job{}) && exists(ns, job+"-r", &batchv1.Job{}) && exists(ns, job, &corev1.Service{}) &&
			exists(ns, "bench-tsbn", &corev1.ServiceAccount{}) && exists(ns, "bench-tsbn", &rbacv1.Role{}) && exists(ns, "bench-tsbn", &rbacv1.RoleBinding{})
	})

	// Another namespace is not: the manager itself is refused a Job there, and the benchmark says
	// which RoleBinding opts it in.
	as, err := client.New(cfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	probe := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "tsbn-probe"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "tsbn.test/x:1"}}}}}}
	if err := as.Create(ctx, probe); !apierrors.IsForbidden(err) {
		t.Fatalf("the manager creating a Job in %s, not opted in: got %v, want forbidden", other, err)
	}
	if err := admin.Create(ctx, benchmark(other)); err != nil {
		t.Fatal(err)
	}
	c := optedIn(other)
	if c.Status != metav1.ConditionFalse || c.Reason != tsv1.ReasonNamespaceNotOptedIn {
		t.Fatalf("in %s: NamespaceOptedIn %s %s, want False %s", other, c.Status, c.Reason, tsv1.ReasonNamespaceNotOptedIn)
	}
	for _, want := range []string{"namespace " + other + " is not opted in", "may not create jobs.batch", "nothing was created",
		"kubectl create rolebinding tickstack-benchmarks --namespace " + other + " --clusterrole " + benchctrl.DefaultBenchmarkClusterRole +
			" --serviceaccount " + ns + ":tickstack-manager"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("the condition's message lacks %q:\n%s", want, c.Message)
		}
	}
	job = jobName(other)
	for _, o := range []struct {
		name string
		obj  client.Object
	}{{job, &batchv1.Job{}}, {job, &corev1.ConfigMap{}}, {job, &corev1.Service{}}, {"bench-tsbn", &corev1.ServiceAccount{}}, {"bench-tsbn", &rbacv1.Role{}}, {"bench-tsbn", &rbacv1.RoleBinding{}}} {
		if exists(other, o.name, o.obj) {
			t.Errorf("%T %s/%s was created in a namespace that is not opted in", o.obj, other, o.name)
		}
	}

	// The administrator opts it in as the message says; the next look starts the run (an
	// annotation makes it look now instead of within 30s).
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "tickstack-benchmarks"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: benchctrl.DefaultBenchmarkClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "tickstack-manager"}}}
	if err := admin.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	b := &tsv1.LatencyBenchmark{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: other, Name: "tsbn"}, b); err != nil {
		t.Fatal(err)
	}
	orig := b.DeepCopy()
	b.Annotations = map[string]string{"tsbn.test/poke": "1"}
	if err := admin.Patch(ctx, b, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testutil.PollTrue(t, 30*time.Second, "the run's Jobs in "+other+" once opted in", func() bool {
		return exists(other, job, &batchv1.Job{}) && exists(other, job+"-r", &batchv1.Job{})
	})
	testutil.PollTrue(t, 30*time.Second, "NamespaceOptedIn True in "+other, func() bool {
		return apimeta.IsStatusConditionTrue(getBenchmark(t, admin, other).Status.Conditions, tsv1.BenchmarkNamespaceOptedIn)
	})
}

func getBenchmark(t *testing.T, c client.Client, ns string) *tsv1.LatencyBenchmark {
	t.Helper()
	b := &tsv1.LatencyBenchmark{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tsbn"}, b); err != nil {
		t.Fatal(err)
	}
	return b
}
