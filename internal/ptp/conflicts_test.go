package ptp

import (
	"fmt"
	"os"
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
	cmd := tsutil.StartChronyd(t, "-x")
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
	if got := FindClockConflicts(filepath.Join(t.TempDir(), "no-proc")); got != nil {
		t.Errorf("an unreadable proc dir: %v, want none", got)
	}
}
