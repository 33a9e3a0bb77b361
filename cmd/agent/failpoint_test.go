//go:build failpoint

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tickstack/tickstack/internal/tuning"
)

func TestFailpointFileKillsOnceAtTheNamedPoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "failpoint")
	kills := 0
	fp := failpointFile(path, func() { kills++ })
	fp(tuning.FailpointMidApply) // no file: nothing
	if err := os.WriteFile(path, []byte("mid-restore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fp(tuning.FailpointMidApply)
	if kills != 0 {
		t.Fatalf("killed at mid-apply while the file names mid-restore")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file of another point was removed: %v", err)
	}
	fp(tuning.FailpointMidRestore)
	if kills != 1 {
		t.Fatalf("kills = %d at the named point, want 1", kills)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file is still there after the kill (the restarted agent would die again): %v", err)
	}
	fp(tuning.FailpointMidRestore)
	if kills != 1 {
		t.Fatalf("killed again after the file was removed")
	}
}

func TestFailpointFlagReachesReconcilerAndEngine(t *testing.T) {
	r, err := parse(t, "n1", "--boot-loader=none").reconciler()
	if err != nil {
		t.Fatal(err)
	}
	if r.Failpoint != nil || r.Engine.Failpoint != nil {
		t.Fatal("failpoints set without --failpoint-file")
	}
	r, err = parse(t, "n1", "--boot-loader=none", "--failpoint-file=/tse2e/failpoint").reconciler()
	if err != nil {
		t.Fatal(err)
	}
	if r.Failpoint == nil || r.Engine.Failpoint == nil {
		t.Fatal("--failpoint-file did not reach the reconciler and the engine")
	}
}
