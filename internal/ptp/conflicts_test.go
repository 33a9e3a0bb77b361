package ptp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// A chronyd started with -x leaves the system clock alone and is no conflict; the same chronyd
// without it is one (the veth test shows a slave losing TimeSynced to it).
func TestFindClockConflictsChronydX(t *testing.T) {
	tsutil.RequireRoot(t)
	chronyd := tsutil.RequireTool(t, "chronyd")
	dir := t.TempDir()
	conf := filepath.Join(dir, "chrony.conf")
	if err := os.WriteFile(conf, []byte("pidfile "+filepath.Join(dir, "chronyd.pid")+"\nport 0\ncmdport 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chronyd, "-x", "-d", "-u", "root", "-f", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	self := fmt.Sprintf("chronyd (pid %d)", cmd.Process.Pid)
	// Running (its comm is chronyd once it has exec'd) and not listed.
	tsutil.Poll(t, 5*time.Second, "chronyd -x running", func() error {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); string(comm) != "chronyd\n" {
			return fmt.Errorf("comm %q", comm)
		}
		return nil
	})
	if got := FindClockConflicts("/proc"); slices.Contains(got, self) {
		t.Errorf("FindClockConflicts = %v lists chronyd -x, which does not steer the clock", got)
	}
	if got := FindClockConflicts(filepath.Join(dir, "no-proc")); got != nil {
		t.Errorf("an unreadable proc dir: %v, want none", got)
	}
}
