package bmc

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

	"github.com/tickstack/tickstack/internal/testutil"
)

// emulator is a sushy-tools Redfish emulator started by hack/sushy/sushy.sh for one test.
type emulator struct {
	url string
	ca  []byte
	dir string
}

// startSushy prepares the cached venv (building it the first time), starts an emulator with TLS and
// basic auth on a free loopback port, and stops it when the test ends, failed or not.
func startSushy(t *testing.T, user, password string) *emulator {
	t.Helper()
	testutil.RequireTool(t, "bash")
	testutil.RequireTool(t, "openssl")
	testutil.RequireTool(t, "curl")
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "sushy", "sushy.sh"))
	if err != nil {
		t.Fatal(err)
	}

	// The venv is built once per cache (tens of seconds) and reused afterwards.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, script, "venv").CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			testutil.Unavailable(t, "sushy-tools prerequisites: "+strings.TrimSpace(string(out)))
		}
		testutil.Unavailable(t, "cannot prepare the sushy-tools venv: "+err.Error()+": "+strings.TrimSpace(string(out)))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("sushy venv prepared in %s", d.Round(time.Second))
	}

	dir, err := os.MkdirTemp("", "tsbmc-sushy-")
	if err != nil {
		t.Fatal(err)
	}
	e := &emulator{dir: dir}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stop emulator: %v: %s", err, out)
		}
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(dir, "emulator.log")); err == nil {
				t.Logf("emulator log (tail):\n%s", tail(string(log), 30))
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
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("start emulator: %v: %s", err, stderr.String())
	}
	e.url = strings.TrimSpace(string(stdout))
	if !strings.HasPrefix(e.url, "https://127.0.0.1:") {
		t.Fatalf("emulator URL %q is not a loopback https URL", e.url)
	}
	if e.ca, err = os.ReadFile(filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	return e
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
