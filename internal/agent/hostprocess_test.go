package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickstack/tickstack/internal/testutil"
)

// TestResolveHostProcessRefusesNamesakes runs real processes under one name: the host's (this
// test's namespaces, uid 0) and namesakes a pod could start (another user, another PID namespace,
// another mount namespace); only the host's is taken, or, where PID 1's mount namespace cannot be
// read (the case a name is for), two candidates in different mount namespaces are refused.
func TestResolveHostProcessRefusesNamesakes(t *testing.T) {
	testutil.RequireRoot(t)
	sleep := testutil.RequireTool(t, "sleep")
	setpriv := testutil.RequireTool(t, "setpriv")
	unshare := testutil.RequireTool(t, "unshare")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	// a fresh name per run, at most 15 characters (the kernel's comm)
	name := fmt.Sprintf("tshp%d", os.Getpid()%1000000)
	exe := filepath.Join(dir, name)
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(argv ...string) int {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	// waitComm polls until some process has the name (unshare and setpriv exec it after a fork).
	waitComm := func(n int) {
		testutil.Poll(t, 10*time.Second, fmt.Sprintf("%d processes named %s", n, name), func() error {
			got := 0
			dirs, _ := os.ReadDir("/proc")
			for _, d := range dirs {
				if c, err := os.ReadFile(filepath.Join("/proc", d.Name(), "comm")); err == nil && strings.TrimSpace(string(c)) == name {
					got++
				}
			}
			if got != n {
				return fmt.Errorf("%d running", got)
			}
			return nil
		})
	}

	if _, err := resolveHostProcess("/proc", name); err == nil || !strings.Contains(err.Error(), "no host process has that name") {
		t.Fatalf("no process yet: err %v", err)
	}
	// Namesakes that are not host processes: another user, another PID namespace.
	start(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", exe, "300")
	start(unshare, "--pid", "--fork", exe, "300")
	waitComm(2)
	_, err = resolveHostProcess("/proc", name)
	if err == nil || !strings.Contains(err.Error(), "(not uid 0)") || !strings.Contains(err.Error(), "(another PID namespace)") {
		t.Fatalf("only namesakes running: err %v, want both named as not host processes", err)
	}

	host := start(exe, "300")
	waitComm(3)
	got, err := resolveHostProcess("/proc", name)
	if err != nil || got != strconv.Itoa(host) {
		t.Fatalf("resolved %q (%v), want the host's process %d", got, err, host)
	}
	if got, err := resolveHostProcess("/proc", "42"); err != nil || got != "42" {
		t.Errorf("a PID is taken as given: %q %v", got, err)
	}

	// A root namesake in its own mount namespace (a pod with hostPID and root).
	start(unshare, "--mount", exe, "300")
	waitComm(4)
	got, err = resolveHostProcess("/proc", name)
	if _, initErr := os.Readlink("/proc/1/ns/mnt"); initErr == nil {
		if err != nil || got != strconv.Itoa(host) {
			t.Errorf("PID 1's mount namespace readable: resolved %q (%v), want %d", got, err, host)
		}
	} else if err == nil || !strings.Contains(err.Error(), "in different mount namespaces, so one is not the host's") {
		t.Errorf("PID 1's mount namespace unreadable: resolved %q (%v), want a refusal", got, err)
	}
}
