package tuning

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/testutil"
)

// Environment of the crash child: the test binary re-executed to apply or restore with a
// failpoint that SIGKILLs the process.
const (
	envCrashChild = "TSAG_CRASH_CHILD"     // apply | restore
	envCrashRoot  = "TSAG_CRASH_ROOT"      // host root of the tree
	envFailpoint  = "TSAG_CRASH_FAILPOINT" // name:n — kill at the n-th time the failpoint fires
	exitNoFire    = 3
)

func TestMain(m *testing.M) {
	if op := os.Getenv(envCrashChild); op != "" {
		os.Exit(crashChild(op))
	}
	os.Exit(m.Run())
}

// crashChild runs one engine operation with the failpoint armed. It returns only if the process
// was not killed.
func crashChild(op string) int {
	name, nStr, _ := strings.Cut(os.Getenv(envFailpoint), ":")
	n, _ := strconv.Atoi(nStr)
	seen := 0
	e := &Engine{
		Host: &host.Host{Root: os.Getenv(envCrashRoot)},
		Failpoint: func(p string) {
			if p != name {
				return
			}
			if seen++; seen == n {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never returns
			}
		},
	}
	var err error
	switch op {
	case "apply":
		_, err = e.Apply(treeDesired())
	case "apply-smaller":
		_, err = e.Apply(smallerDesired())
	case "restore":
		_, err = e.Restore()
	default:
		err = fmt.Errorf("unknown crash child op %q", op)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "crash child: failpoint %s never fired\n", os.Getenv(envFailpoint))
	return exitNoFire
}

// runCrashChild re-executes the test binary as a crash child and requires that it died of
// SIGKILL at the failpoint.
func runCrashChild(t *testing.T, root, op, failpoint string) {
	t.Helper()
	testutil.RunKilled(t, "crash child "+op+" "+failpoint,
		envCrashChild+"="+op, envCrashRoot+"="+root, envFailpoint+"="+failpoint)
}

// crashSnapshot is the tree's files plus, when the tree links the real /proc/sys, the real
// sysctls the profile sets.
func crashSnapshot(t *testing.T, dir string, real bool) map[string]string {
	t.Helper()
	s := hosttest.Snapshot(t, dir)
	if real {
		h := &host.Host{}
		for k := range treeDesired().Sysctls {
			v, err := h.Sysctl(k)
			if err != nil {
				t.Fatal(err)
			}
			s["real sysctl "+k] = v
		}
	}
	return s
}

// TestCrashAtFailpoints kills an applying (or restoring) agent with SIGKILL at several points
// and checks that a rerun converges and that Restore gives back the exact originals. Each case
// runs on a tree, and again with the real host's sysctls (the tree links /proc/sys, root needed:
// testutil.Unavailable otherwise), where the crash leaves real values changed that only the
// journal can put back.
func TestCrashAtFailpoints(t *testing.T) {
	for _, real := range []bool{false, true} {
		name := "tree"
		if real {
			name = "real sysctls"
		}
		t.Run(name, func(t *testing.T) {
			if real {
				testutil.RequireRoot(t)
			}
			crashAtFailpoints(t, real)
		})
	}
}

func crashAtFailpoints(t *testing.T, real bool) {
	cases := []struct {
		name      string
		op        string
		failpoint string
		rerun     string // apply-then-restore | restore
	}{
		{"after first journal write", "apply", FailpointAfterJournal + ":1", "apply-then-restore"},
		{"after second journal write", "apply", FailpointAfterJournal + ":2", "apply-then-restore"},
		{"after first write", "apply", FailpointMidApply + ":1", "apply-then-restore"},
		{"mid apply", "apply", FailpointMidApply + ":4", "apply-then-restore"},
		{"late in apply", "apply", FailpointMidApply + ":12", "apply-then-restore"},
		{"mid apply, restore only", "apply", FailpointMidApply + ":6", "restore"},
		{"first restore write", "restore", FailpointMidRestore + ":1", "restore"},
		{"mid restore", "restore", FailpointMidRestore + ":5", "restore"},
		{"profile change, restoring dropped settings", "apply-smaller", FailpointMidRestore + ":2", "apply-smaller-then-restore"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", fmt.Sprintf("tsag%d-crash-", os.Getpid()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			buildTree(t, dir, real)
			e := treeEngine(dir)
			before := crashSnapshot(t, dir, real)
			t.Cleanup(func() {
				if _, err := e.Restore(); err != nil {
					t.Errorf("cleanup restore: %v", err)
				}
			})
			if c.op == "restore" || c.op == "apply-smaller" {
				if _, err := e.Apply(treeDesired()); err != nil {
					t.Fatal(err)
				}
			}
			runCrashChild(t, dir, c.op, c.failpoint)
			if _, err := os.Stat(filepath.Join(dir, DefaultJournalPath)); err != nil {
				t.Fatalf("no journal after the crash: %v", err)
			}
			if c.rerun == "apply-smaller-then-restore" {
				applyInSync(t, e, smallerDesired())
				if got := readTree(t, dir, "etc/default/irqbalance"); strings.Contains(got, "IRQBALANCE_BANNED_CPULIST") {
					t.Fatalf("irqbalance file still bans CPUs after the smaller profile converged:\n%s", got)
				}
				if got := readTree(t, dir, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); got != "powersave" {
					t.Fatalf("governor after the smaller profile converged = %q, want the original powersave", got)
				}
			}
			if c.rerun == "apply-then-restore" {
				applyInSync(t, e, treeDesired())
			}
			if _, err := e.Restore(); err != nil {
				t.Fatalf("Restore after crash: %v", err)
			}
			if diffs := hosttest.Diff(before, crashSnapshot(t, dir, real)); len(diffs) > 0 {
				t.Fatalf("after crash and Restore the host differs from before:\n%s", strings.Join(diffs, "\n"))
			}
			if _, err := os.Stat(filepath.Join(dir, DefaultJournalPath)); !os.IsNotExist(err) {
				t.Fatalf("journal left after Restore: %v", err)
			}
		})
	}
}

// smallerDesired is treeDesired without cpufreq, hugepages and the irqbalance setting: applying it
// after treeDesired restores those.
func smallerDesired() *Desired {
	d := treeDesired()
	d.CPUFreq = nil
	d.Hugepages = nil
	d.IrqbalanceBannedCPUs = nil
	return d
}
