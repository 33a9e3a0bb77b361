package testutil

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ThirdParty is the directory of the binaries of an upstream component built from its source
// pinned in hack/third-party.lock (component: multus-cni, sriov-network-device-plugin,
// node-feature-discovery); its source is beside it, in ../src. hack/third-party.sh builds it when
// the cache lacks it (make test runs it first); where it cannot, the test is skipped, and fails in
// CI.
func ThirdParty(t testing.TB, component string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", "third-party.sh"), component)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		Unavailable(t, fmt.Sprintf("%s from its pinned source: hack/third-party.sh: %v\n%s", component, err, stderr.String()))
	}
	_, dir, ok := strings.Cut(strings.TrimSpace(stdout.String()), "=")
	if !ok {
		t.Fatalf("hack/third-party.sh %s printed %q, want NAME=BINDIR", component, stdout.String())
	}
	return dir
}
