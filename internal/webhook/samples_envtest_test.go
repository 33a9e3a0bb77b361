package webhook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// TestSamplesPassTheAPIServerAndTheWebhook sends every object of config/samples, and the demo's
// profile, through a real kube-apiserver as a server-side dry run: its schema and CEL rules and the
// validating webhook it calls, so the documented examples never rot. (cmd/tickstack's
// TestSamplesAreValid checks the same files offline with tickstack validate.) A profile the webhook
// refuses shows that the dry run reaches it.
func TestSamplesPassTheAPIServerAndTheWebhook(t *testing.T) {
	w := serveWebhooks(t)
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("want the samples in config/samples, found %v (%v)", files, err)
	}
	files = append(files, filepath.Join(root, "hack", "demo-profile.yaml"))
	ctx := context.Background()
	kinds := map[string]int{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range kubetest.DecodeObjects(t, raw) {
			kinds[o.GetKind()]++
			if err := w.c.Create(ctx, o, client.DryRunAll); err != nil {
				t.Errorf("%s: the API server refuses %s %s: %v", filepath.Base(f), o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, k := range []string{"LatencyProfile", "LatencyBenchmark", "BMC"} {
		if kinds[k] == 0 {
			t.Errorf("no sample of kind %s", k)
		}
	}

	// The webhook answers the dry run: overlapping CPU lists pass the schema and CEL rules and are
	// refused by the webhook alone.
	raw, err := os.ReadFile(filepath.Join(root, "config", "samples", "latencyprofile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := kubetest.DecodeObjects(t, []byte(strings.Replace(string(raw), `isolated: "1-63"`, `isolated: "0-63"`, 1)))[0]
	err = w.c.Create(ctx, bad, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "vlatencyprofile.tickstack.io") || !strings.Contains(err.Error(), "spec.cpu.isolated") {
		t.Errorf("overlapping CPU lists: want the webhook's refusal naming spec.cpu.isolated, got %v", err)
	}
}
