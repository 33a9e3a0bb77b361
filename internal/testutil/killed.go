package testutil

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// RunKilled runs the test binary again as a helper process (no test of its own runs: its TestMain
// reads env, the variables added to this process's environment, and acts on them) and fails the
// test unless the helper dies of SIGKILL, as a helper that kills itself at a failpoint does; what
// names the helper in the failure.
func RunKilled(t testing.TB, what string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("%s: want death by SIGKILL, got %v\n%s", what, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s: want death by SIGKILL, got %v (exit code %d)\n%s", what, err, ee.ExitCode(), out)
	}
}
