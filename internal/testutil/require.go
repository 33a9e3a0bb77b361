// Package testutil holds helpers shared by tests that need something of the host (root, a tool, a
// kernel feature). Outside CI such a test is skipped with the reason; in CI (CI=true) a missing
// requirement fails the test instead, so CI can never go green by skipping what it must run.
package testutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// InCI reports whether the tests run under CI (CI=true), where every requirement is mandatory.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips the test with reason outside CI and fails it in CI.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("required in CI but unavailable: %s", reason)
	}
	t.Skipf("skipped: %s (set CI=true to make this a failure)", reason)
}

// RequireRoot needs uid 0 (netns, sysctl writes, AF_XDP).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root")
	}
}

// RequireTool needs an executable on PATH and returns its path.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, name+" not on PATH (hack/install-deps.sh installs it)")
	}
	return p
}

// Poll calls cond every 20 ms until it returns nil, and fails the test with what and cond's last
// error when timeout passes first. Tests wait on a condition this way, never for a fixed time.
func Poll(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PollTrue is Poll for a condition that says only whether it holds.
func PollTrue(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Poll(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("it does not hold yet")
	})
}

// StartChronyd runs a real chronyd (Debian's chrony) in the foreground with no sources, no
// command socket and its pid file in a temporary directory, plus args (e.g. "-x"), until the test
// ends or the caller kills it. Without -x it takes the system clock, as every chronyd does.
func StartChronyd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe := RequireTool(t, "chronyd")
	dir := t.TempDir()
	conf := filepath.Join(dir, "chrony.conf")
	if err := os.WriteFile(conf, []byte("pidfile "+filepath.Join(dir, "chronyd.pid")+"\nport 0\ncmdport 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append(append([]string{}, args...), "-d", "-u", "root", "-f", conf)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chronyd: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}
