package testutil

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedfishEmulator is a sushy-tools Redfish emulator (libvirt test:///default) started by
// hack/sushy/sushy.sh on a free loopback port, with TLS and basic auth: a real Redfish server.
type RedfishEmulator struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// CA is the PEM bundle that signed its certificate.
	CA []byte
}

// StartRedfishEmulator builds the cached venv when missing (tens of seconds, once per cache),
// starts an emulator accepting user and password, and stops it when the test ends, failed or not
// (its --parent watchdog stops it if this process dies). Missing prerequisites go through
// Unavailable.
func StartRedfishEmulator(t testing.TB, user, password string) *RedfishEmulator {
	t.Helper()
	for _, tool := range []string{"bash", "openssl", "curl"} {
		RequireTool(t, tool)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "hack", "sushy", "sushy.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	if out, err := exec.CommandContext(ctx, script, "venv").CombinedOutput(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			Unavailable(t, "sushy-tools prerequisites: "+strings.TrimSpace(string(out)))
		}
		Unavailable(t, "cannot prepare the sushy-tools venv: "+err.Error()+": "+strings.TrimSpace(string(out)))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("sushy venv prepared in %s", d.Round(time.Second))
	}
	dir, err := os.MkdirTemp("", "tssushy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stop emulator: %v: %s", err, out)
		}
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(dir, "emulator.log")); err == nil {
				lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
				t.Logf("emulator log (tail):\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
		_ = os.RemoveAll(dir)
	})
	startCtx, cancelStart := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelStart()
	cmd := exec.CommandContext(startCtx, script, "start", dir, "--tls", "--user", user, "--parent", strconv.Itoa(os.Getpid()))
	cmd.Env = append(os.Environ(), "SUSHY_PASSWORD="+password)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("start emulator: %v: %s", err, stderr.String())
	}
	e := &RedfishEmulator{URL: strings.TrimSpace(string(out))}
	if !strings.HasPrefix(e.URL, "https://127.0.0.1:") {
		t.Fatalf("emulator URL %q is not a loopback https URL", e.URL)
	}
	if e.CA, err = os.ReadFile(filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	return e
}
