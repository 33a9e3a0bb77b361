package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// The crash helper is this test binary re-executed as an agent that kills itself with SIGKILL
// at a failpoint of the reconciler.
const (
	crashHelperEnv = "TSAGT_CRASH_FAILPOINT"
	crashConfigEnv = "TSAGT_CRASH_CONFIG"
	crashNodeEnv   = "TSAGT_CRASH_NODE"
	crashRootEnv   = "TSAGT_CRASH_ROOT"
	crashLogsEnv   = "TSAGT_CRASH_LOGS"
	// crashKubeletEnv, when set, is the state directory of the tree kubelet (newTreeKubelet).
	crashKubeletEnv = "TSAGT_CRASH_KUBELET"
)

func crashHelper() int {
	restCfg, err := agenttest.ReadConfig(os.Getenv(crashConfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	a := agenttest.TreeAgentOn(os.Getenv(crashNodeEnv), os.Getenv(crashRootEnv), os.Getenv(crashLogsEnv))
	if k := os.Getenv(crashKubeletEnv); k != "" {
		treeKubeletOn(a, k)
	}
	point := os.Getenv(crashHelperEnv)
	a.R.Failpoint = func(p string) {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = agenttest.Run(ctx, restCfg, a.R, nil)
	fmt.Fprintf(os.Stderr, "failpoint %s never reached\n", point)
	return 3
}

// crashAt runs the agent of a tree in a child process until it kills itself at point.
func crashAt(t *testing.T, point, node, root, logs string) {
	t.Helper()
	crashWith(t, point, node, root, logs, nil)
}

// crashWith is crashAt with more of the child's environment (crashKubeletEnv).
func crashWith(t *testing.T, point, node, root, logs string, env []string) {
	t.Helper()
	cfgPath := filepath.Join(logs, "rest.json")
	if err := agenttest.WriteConfig(cfg, cfgPath); err != nil {
		t.Fatal(err)
	}
	env = append([]string{crashHelperEnv + "=" + point, crashConfigEnv + "=" + cfgPath,
		crashNodeEnv + "=" + node, crashRootEnv + "=" + root, crashLogsEnv + "=" + logs}, env...)
	tsutil.RunKilled(t, "agent at failpoint "+point, env...)
}

// TestCrashWindowsOfTheRebootProtocol kills the agent where the reboot protocol has new crash
// windows: after the boot loader was written and before the status asks for a reboot, and after
// the status says Rebooting and before the reboot command ran. An agent restarted after each
// converges: it asks for the slot (with the GRUB update run once), then runs the reboot, and the
// node reboots exactly once and ends uncordoned; deleting the node state restores the tree.
func TestCrashWindowsOfTheRebootProtocol(t *testing.T) {
	node := agenttest.Name("crash")
	root := agenttest.TempDir(t, "crashroot")
	logs := agenttest.TempDir(t, "crashlogs")
	agenttest.BuildTree(t, root)
	before := agenttest.Snapshot(t, root)
	createNode(t, node)
	createLNS(t, node, treeTuning())

	// Killed right after writing the kernel arguments: nothing in status says so yet.
	crashAt(t, agent.FailpointAfterKernelArgs, node, root, logs)
	a := agenttest.TreeAgentOn(node, root, logs)
	if b, err := os.ReadFile(filepath.Join(root, "etc/default/grub.d/99-tickstack.cfg")); err != nil || !strings.Contains(string(b), "nohz_full=2-3") {
		t.Fatalf("the killed agent had not written the GRUB drop-in: %v", err)
	}
	if l := getLNS(t, node); l.Status.Reboot != nil {
		t.Fatalf("status already had the reboot before the crash window: %+v", l.Status.Reboot)
	}
	stop := agenttest.StartAgent(t, cfg, a.R, nil)
	tsutil.Poll(t, 20*time.Second, "reboot requested after the restart", func() error {
		l := getLNS(t, node)
		if l.Status.Reboot == nil || l.Status.Reboot.Phase != tsv1.RebootRequested {
			return fmt.Errorf("reboot %+v", l.Status.Reboot)
		}
		return wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionTrue, "RebootRequested")
	})
	stop()
	if n := len(agenttest.Lines(t, a.GrubUpdates)); n != 1 {
		t.Errorf("grub update ran %d times, want 1", n)
	}

	// Granted; killed after recording Rebooting, before the reboot command.
	setGranted(t, node, true)
	crashAt(t, agent.FailpointBeforeRebootCommand, node, root, logs)
	if l := getLNS(t, node); l.Status.Reboot == nil || l.Status.Reboot.Phase != tsv1.RebootRebooting {
		t.Fatalf("status before the reboot command: %+v", l.Status.Reboot)
	}
	if n := len(agenttest.Lines(t, a.Reboots)); n != 0 {
		t.Fatalf("rebooted %d times before the failpoint", n)
	}
	if !getNode(t, node).Spec.Unschedulable {
		t.Fatal("node not cordoned while Rebooting")
	}
	a = agenttest.TreeAgentOn(node, root, logs)
	stop = agenttest.StartAgent(t, cfg, a.R, nil)
	pollSlotDone(t, node, "reboot done after the restart", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
		return wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionFalse, agent.ReasonKernelArgsInEffect)
	})
	if n := len(agenttest.Lines(t, a.Reboots)); n != 1 {
		t.Errorf("rebooted %d times, want exactly 1", n)
	}
	if getNode(t, node).Spec.Unschedulable {
		t.Error("node left cordoned")
	}
	setGranted(t, node, false)

	deleteLNS(t, node)
	stop()
	if d := hosttest.Diff(before, agenttest.Snapshot(t, root)); len(d) > 0 {
		t.Errorf("the tree differs from its originals after the restore:\n%s", strings.Join(d, "\n"))
	}
}

// TestCrashAnnouncedOnce kills the agent right after it announced each step of a kubelet restart
// and of a reboot, before the step is recorded (the kubelet the agent restarts may restart the
// agent's container just there). The agent started after each kill makes the step again from
// what is recorded, and in the end every step was said exactly once.
func TestCrashAnnouncedOnce(t *testing.T) {
	steps := func(t *testing.T, node string, crash func(reason string), requested, end string, start func()) {
		crash(requested)
		if l := getLNS(t, node); l.Status.Reboot != nil {
			t.Fatalf("the request was recorded before the failpoint: %+v", l.Status.Reboot)
		}
		setGranted(t, node, true)
		crash("Draining")
		crash(map[string]string{"KubeletRestartRequested": "KubeletRestarted", "RebootRequested": "Rebooting"}[requested])
		crash(end)
		start()
		pollSlotDone(t, node, "the restart over", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
			return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
		})
		reasons := []string{requested, "Draining", end}
		if requested == "KubeletRestartRequested" {
			reasons = append(reasons, "KubeletRestarted")
		}
		for _, reason := range reasons {
			if n := len(events(t, node, reason)); n != 1 {
				t.Errorf("%d %s events, want 1", n, reason)
			}
		}
		if getNode(t, node).Spec.Unschedulable {
			t.Error("node left cordoned")
		}
	}

	t.Run("kubelet", func(t *testing.T) {
		node := agenttest.Name("announced-kubelet")
		a := agenttest.NewTreeAgent(t, node)
		k := newTreeKubelet(t, a)
		logs := agenttest.TempDir(t, "crashlogs")
		createNode(t, node)
		createLNS(t, node, kubeletTuning(tsv1.DefaultTopologyManagerPolicy))
		steps(t, node, func(reason string) {
			crashWith(t, agent.FailpointAnnounced+reason, node, a.Root, logs, []string{crashKubeletEnv + "=" + k.logs})
		}, "KubeletRestartRequested", "KubeletVerified", func() { agenttest.StartAgent(t, cfg, a.R, nil) })
		// Killed between the restart and its record: the next agent finds the kubelet running
		// with the drop-in and verifies it, without a second restart.
		if got := k.log(t); got != "stop start" {
			t.Errorf("kubelet log %q, want one restart", got)
		}
	})

	t.Run("reboot", func(t *testing.T) {
		node := agenttest.Name("announced-reboot")
		a := agenttest.NewTreeAgent(t, node)
		logs := agenttest.TempDir(t, "crashlogs")
		createNode(t, node)
		createLNS(t, node, treeTuning())
		steps(t, node, func(reason string) {
			if reason == "Rebooting" {
				// Not a transition announce says: the step before the reboot command instead.
				crashAt(t, agent.FailpointBeforeRebootCommand, node, a.Root, logs)
				return
			}
			crashAt(t, agent.FailpointAnnounced+reason, node, a.Root, logs)
		}, "RebootRequested", "RebootVerified", func() { agenttest.StartAgent(t, cfg, a.R, nil) })
		if n := len(agenttest.Lines(t, filepath.Join(logs, "reboots"))) + len(agenttest.Lines(t, a.Reboots)); n != 1 {
			t.Errorf("rebooted %d times, want 1", n)
		}
	})
}
