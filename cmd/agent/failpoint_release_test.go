package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseBuildHasNoFailpointFlag builds the agent as hack/images/build.sh builds a release
// (no build tags) and as the e2e's test build (-tags failpoint): only the test build carries
// --failpoint-file, so agent.extraArgs cannot reach it in production.
func TestReleaseBuildHasNoFailpointFlag(t *testing.T) {
	dir := t.TempDir()
	build := func(name string, args ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", append(append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", out}, args...), ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, b)
		}
		bin, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		info, err := exec.Command("go", "version", "-m", out).Output()
		if err != nil {
			t.Fatal(err)
		}
		if tagged := strings.Contains(string(info), "-tags=failpoint"); tagged != (len(args) > 0) {
			t.Errorf("%s: go version -m says tags failpoint %v, want %v:\n%s", name, tagged, len(args) > 0, info)
		}
		return bin
	}
	flag := []byte("failpoint-file")
	if bin := build("agent-release"); bytes.Contains(bin, flag) {
		t.Error("a release build of the agent contains --failpoint-file")
	}
	if bin := build("agent-test", "-tags", "failpoint"); !bytes.Contains(bin, flag) {
		t.Error("a -tags failpoint build lacks --failpoint-file: this test could not see it")
	}
}
