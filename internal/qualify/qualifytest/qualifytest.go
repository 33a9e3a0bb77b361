// Package qualifytest holds what the tests of the NIC qualification (tickstack qualify, the
// benchmark runner's qualify suite) share: the data plane build they run and the checks of a
// report every qualification over a working link must pass.
package qualifytest

import (
	"fmt"
	"path/filepath"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/testutil"
)

// RequireConform returns the bypass launcher of this repository's data plane build, beside which
// the conformance program is; the test is unavailable (skipped, failed in CI) when the data plane
// is not built.
func RequireConform(t testing.TB) string {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	launcher := filepath.Join(root, bench.DefaultLauncherPath)
	if _, err := (bench.Tools{Launcher: launcher}).FindConform(); err != nil {
		testutil.Unavailable(t, fmt.Sprintf("the data plane is not built (make -C dataplane all build/conform): %v", err))
	}
	return launcher
}

// CheckMeasured fails the test unless the report ran the conformance cases and every one passed,
// and measured a ping-pong median on both stacks.
func CheckMeasured(t testing.TB, r *tsv1.QualifyReport) {
	t.Helper()
	if len(r.Conformance) == 0 {
		t.Error("no conformance case ran")
	}
	for _, c := range r.Conformance {
		if !c.Passed {
			t.Errorf("conformance %s: %s", c.Case, c.Detail)
		}
	}
	medians := map[tsv1.Stack]int64{}
	for _, p := range r.PingPong {
		if p.Error != "" || p.MedianNs <= 0 {
			t.Errorf("ping-pong %+v", p)
		}
		medians[p.Stack] = p.MedianNs
	}
	if len(r.PingPong) != 2 || medians[tsv1.StackKernel] == 0 || medians[tsv1.StackBypass] == 0 {
		t.Errorf("ping-pong %+v, want one median of the kernel and one of the bypass", r.PingPong)
	}
}
