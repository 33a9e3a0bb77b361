package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

func TestContents(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "results.json")
	if err := os.WriteFile(good, []byte(`{"schemaVersion":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, bytes.Repeat([]byte("x"), MaxResultsBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, results, errContains, exit string
		code                             int
	}{
		{good, `{"schemaVersion":"x"}`, "", "0", 0},
		{filepath.Join(dir, "missing.json"), "", "no results file (exit code 2)", "2", 2},
		{empty, "", "empty", "1", 1},
		{huge, "", "more than", "0", 0},
	} {
		d := contents(tc.file, tc.code)
		if d[tsv1.BenchResultsKey] != tc.results || d[tsv1.BenchExitCodeKey] != tc.exit || !strings.Contains(d[tsv1.BenchErrorKey], tc.errContains) {
			t.Errorf("%s: %v", filepath.Base(tc.file), d)
		}
		if (tc.errContains == "") != (d[tsv1.BenchErrorKey] == "") {
			t.Errorf("%s: error %q", filepath.Base(tc.file), d[tsv1.BenchErrorKey])
		}
	}
}

func TestParseFlagsNamesWhatIsMissing(t *testing.T) {
	t.Setenv("RESULTS_CONFIGMAP", "")
	t.Setenv("POD_NAMESPACE", "")
	for args, want := range map[string]string{
		"":                          "--file is required",
		"--file=x":                  "--configmap and --namespace are required",
		"--file=x --configmap=c":    "--configmap and --namespace are required",
		"--file=x --configmap=c xx": "unexpected arguments",
	} {
		_, err := parseFlags(strings.Fields(args), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", args, err, want)
		}
	}
	t.Setenv("RESULTS_CONFIGMAP", "cm")
	t.Setenv("POD_NAMESPACE", "ns")
	o, err := parseFlags([]string{"--file=f", "--exit-code=4"}, &bytes.Buffer{})
	if err != nil || o.configMap != "cm" || o.namespace != "ns" || o.exitCode != 4 {
		t.Fatalf("defaults from the environment: %+v %v", o, err)
	}
}

// TestUploadAsTheBenchServiceAccount uploads against a real API server as a service account that,
// like the benchmark pods', may only update one named ConfigMap.
func TestUploadAsTheBenchServiceAccount(t *testing.T) {
	env, _ := kubetest.New(t, kubetest.Options{NoCRDs: true})
	cfg := env.Config
	admin := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "tslb-upload"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	for _, name := range []string{"run-1-node-a", "someone-elses"} {
		_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		must(err)
	}
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "update", "patch"}, ResourceNames: []string{"run-1-node-a"}}}}, metav1.CreateOptions{})
	must(err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bench"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bench", Namespace: ns}}}, metav1.CreateOptions{})
	must(err)
	// The API server's RBAC authorizer learns of a new binding from its informer: wait until it does.
	sa := "system:serviceaccount:" + ns + ":bench"
	testutil.Poll(t, 30*time.Second, "the Role to take effect for "+sa, func() error {
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Resource: "configmaps", Name: "run-1-node-a"}}}, metav1.CreateOptions{})
		must(err)
		if !sar.Status.Allowed {
			return fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
		}
		return nil
	})
	pod := rest.CopyConfig(cfg)
	pod.Impersonate = rest.ImpersonationConfig{UserName: sa}
	cs := kubernetes.NewForConfigOrDie(pod)

	file := filepath.Join(t.TempDir(), "results.json")
	must(os.WriteFile(file, []byte(`{"schemaVersion":"bench.tickstack.io/v1alpha1"}`), 0o600))
	o := &options{file: file, configMap: "run-1-node-a", namespace: ns, exitCode: 1}
	must(Upload(ctx, cs, o, 10*time.Millisecond))
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "run-1-node-a", metav1.GetOptions{})
	must(err)
	if cm.Data[tsv1.BenchResultsKey] != `{"schemaVersion":"bench.tickstack.io/v1alpha1"}` || cm.Data[tsv1.BenchExitCodeKey] != "1" {
		t.Fatalf("ConfigMap data %v", cm.Data)
	}

	o.configMap = "someone-elses"
	err = Upload(ctx, cs, o, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "this run's") {
		t.Fatalf("uploading to another ConfigMap: %v, want a final forbidden error", err)
	}
}
