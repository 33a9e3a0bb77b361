package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

// TestRealKubectlRunsThePlugin installs the built binary as kubectl-tickstack, and the completion
// helper docs/cli.md gives, on a PATH of their own, and drives them through a real kubectl (the
// envtest assets' one), with no kubeconfig anywhere.
func TestRealKubectlRunsThePlugin(t *testing.T) {
	assets, err := testutil.EnvtestAssets()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	bin := t.TempDir()
	if out, err := exec.Command(testutil.RequireTool(t, "go"), "build", "-o", filepath.Join(bin, "kubectl-tickstack"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	complete := "#!/bin/sh\nexec kubectl-tickstack __complete \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl_complete-tickstack"), []byte(complete), 0o755); err != nil { // an executable, as docs/cli.md installs it
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(bin, "nonexistent")}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(kubectl, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return string(out), ee.ExitCode()
		case err != nil:
			t.Fatalf("kubectl %v: %v", args, err)
		}
		return string(out), 0
	}

	if out, code := run("plugin", "list"); code != 0 || !strings.Contains(out, filepath.Join(bin, "kubectl-tickstack")) {
		t.Errorf("kubectl plugin list (exit %d) does not list the plugin:\n%s", code, out)
	}
	sample := filepath.Join("..", "..", "config", "samples", "latencyprofile.yaml")
	if out, code := run("tickstack", "validate", "-f", sample); code != 0 || !strings.Contains(out, "(LatencyProfile trading): valid") {
		t.Errorf("kubectl tickstack validate of the sample (exit %d):\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(goodProfile, "isolated:", "isloated:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := run("tickstack", "validate", "-f", bad); code != 1 || !strings.Contains(out, "spec.cpu.isloated: unknown field") {
		t.Errorf("kubectl tickstack validate of a typo: exit %d, want 1 naming the path:\n%s", code, out)
	}
	if out, code := run("tickstack", "validate", "--help"); code != 0 || !strings.Contains(out, "kubectl tickstack validate -f FILE|-") {
		t.Errorf("the plugin's help (exit %d) does not say kubectl tickstack:\n%s", code, out)
	}
	if out, code := run("__complete", "tickstack", "val"); code != 0 || !strings.Contains(out, "validate") {
		t.Errorf("kubectl's completion of the plugin (exit %d):\n%s", code, out)
	}
}
