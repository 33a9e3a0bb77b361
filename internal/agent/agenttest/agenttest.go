// Package agenttest holds what the node agent's tests share: an envtest API server with the CRDs,
// a host-root directory tree for what a VM cannot change (boot loader, SR-IOV, cpufreq), a fake
// reboot command that "reboots" such a tree (new boot ID, /proc/cmdline from the GRUB drop-in),
// and a way to run an agent in-process with a manager, exactly as cmd/agent wires it. Every name
// carries the "tsagt" prefix and the test process's PID.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/bootloader"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Scheme is the agent's scheme (agent.Scheme).
func Scheme() *k8sruntime.Scheme { return agent.Scheme() }

// Name returns a name with the test area's prefix and the PID ("tsagt<pid>-<suffix>").
func Name(suffix string) string { return fmt.Sprintf("tsagt%d-%s", os.Getpid(), suffix) }

// TempDir returns a new directory tsagt<pid>-<tag>-*, removed when the test ends.
func TempDir(t testing.TB, tag string) string {
	t.Helper()
	d, err := os.MkdirTemp("", Name(tag)+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// InitialCmdline is the kernel command line a tree boots with.
const InitialCmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"

// BuildTree creates a host root for what this VM cannot change: four CPUs with cpuidle, cpufreq
// (governor, intel_pstate turbo) and hotplug (cpu1-3/online), IRQs, a NUMA node with hugepage pools, an SR-IOV
// capable PCI NIC ens1f0 (ice, 8 VFs) with two queues, sysctls, irqbalance's file, /proc/cmdline
// and a boot ID.
func BuildTree(t testing.TB, dir string) {
	t.Helper()
	files := map[string]string{
		"sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages":    "0",
		"sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages": "0",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":                    "0",
		"sys/kernel/mm/transparent_hugepage/enabled":                               "always [madvise] never",
		"proc/irq/default_smp_affinity":                                            "f",
		"proc/cmdline":                                                             InitialCmdline,
		"proc/sys/kernel/random/boot_id":                                           "00000000-0000-4000-8000-000000000001",
		"proc/sys/kernel/osrelease":                                                "6.18.0-tsagt",
		"proc/sys/vm/stat_interval":                                                "1",
		"proc/sys/vm/swappiness":                                                   "60",
		"proc/sys/kernel/timer_migration":                                          "1",
		"etc/default/irqbalance":                                                   "#IRQBALANCE_ONESHOT=",
		"etc/default/grub.d/.keep":                                                 "",
	}
	hosttest.AddCPUs(files, 4, false)
	for _, irq := range []int{0, 1, 24, 25} {
		files[fmt.Sprintf("proc/irq/%d/smp_affinity_list", irq)] = "0-3"
	}
	links := map[string]string{}
	hosttest.AddNIC(files, links)
	hosttest.WriteTree(t, dir, files, links)
}

// Snapshot returns every regular file of the tree (trimmed content) except the agent's own state
// under var/lib and what a reboot changes (/proc/cmdline, the boot ID).
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	return hosttest.Snapshot(t, dir, "proc/cmdline", "proc/sys/kernel/random/boot_id")
}

// fakeReboot "reboots" the tree at $TICKSTACK_HOST_ROOT: the kernel now runs with the arguments
// of the GRUB drop-in, under a new boot ID. $1 is a log that gets one line per reboot.
const fakeReboot = `set -eu
root="$TICKSTACK_HOST_ROOT"
args=$(sed -n 's/^# tickstack-args: //p' "$root/etc/default/grub.d/99-tickstack.cfg" 2>/dev/null || true)
printf '%s %s\n' "` + InitialCmdline + `" "$args" > "$root/proc/cmdline"
cat /proc/sys/kernel/random/uuid > "$root/proc/sys/kernel/random/boot_id"
echo "$TICKSTACK_NODE_NAME" >> "$1"
`

// RebootCommand returns a reboot command for a tree that logs each reboot in log.
func RebootCommand(log string) []string {
	return []string{"/bin/sh", "-c", fakeReboot, "fake-reboot", log}
}

// LogCommand returns a command that appends a line to log (a fake grub update or irqbalance
// restart).
func LogCommand(log string) []string {
	return []string{"/bin/sh", "-c", `echo ran >> "$1"`, "fake", log}
}

// Lines returns the non-empty lines of a file (none when it does not exist).
func Lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// Run runs r in its own manager, wired as cmd/agent wires it (cache limited to the node's
// state, the API reader for nodes and pods, the events recorder), until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, r *agent.Reconciler, nicChanges <-chan string) error {
	return RunWrapped(ctx, cfg, r, nicChanges, nil)
}

// RunWrapped is Run with the agent's cached client passed through wrap (nil: as it is), for a
// test that makes the cache lag behind the API server.
func RunWrapped(ctx context.Context, cfg *rest.Config, r *agent.Reconciler, nicChanges <-chan string, wrap func(client.Client) client.Client) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Cache:                  agent.CacheOptions(r.NodeName),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several agents run in one test process; each cmd/agent process has one controller.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	r.Client, r.APIReader = mgr.GetClient(), mgr.GetAPIReader()
	if wrap != nil {
		r.Client = wrap(r.Client)
	}
	r.Recorder = mgr.GetEventRecorder("tickstack-agent")
	if err := r.SetupWithManager(mgr, nicChanges); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// StartAgent runs r in-process (see Run) until the returned stop function is called or the test
// ends.
func StartAgent(t testing.TB, cfg *rest.Config, r *agent.Reconciler, nicChanges <-chan string) (stop func()) {
	t.Helper()
	return StartAgentWrapped(t, cfg, r, nicChanges, nil)
}

// StartAgentWrapped is StartAgent with RunWrapped's wrap.
func StartAgentWrapped(t testing.TB, cfg *rest.Config, r *agent.Reconciler, nicChanges <-chan string, wrap func(client.Client) client.Client) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunWrapped(ctx, cfg, r, nicChanges, wrap) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("agent %s: %v", r.NodeName, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("agent %s did not stop", r.NodeName)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// restConfig is what a re-executed test process needs to reach the envtest API server.
type restConfig struct {
	Host                 string
	CA, Cert, Key, Token []byte
}

// WriteConfig saves cfg for a child process (ReadConfig).
func WriteConfig(cfg *rest.Config, path string) error {
	b, err := json.Marshal(restConfig{Host: cfg.Host, CA: cfg.CAData, Cert: cfg.CertData, Key: cfg.KeyData, Token: []byte(cfg.BearerToken)})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// ReadConfig loads what WriteConfig saved.
func ReadConfig(path string) (*rest.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c restConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &rest.Config{Host: c.Host, BearerToken: string(c.Token),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA, CertData: c.Cert, KeyData: c.Key}}, nil
}

// TreeAgent is an agent on a host-root tree, with the logs of its fake commands.
type TreeAgent struct {
	// Root is the tree.
	Root string
	// Reboots, GrubUpdates and Irqbalance log one line per reboot, GRUB update and irqbalance
	// restart.
	Reboots, GrubUpdates, Irqbalance string
	// R is the agent, built as cmd/agent builds it with --host-root=Root --boot-loader=grub.
	R *agent.Reconciler
}

// NewTreeAgent builds a tree (BuildTree) and its agent.
func NewTreeAgent(t testing.TB, node string) *TreeAgent {
	t.Helper()
	root := TempDir(t, "root")
	BuildTree(t, root)
	return TreeAgentOn(node, root, TempDir(t, "logs"))
}

// TreeAgentOn is the agent of an existing tree, with its command logs in logs: fake reboot,
// GRUB update and irqbalance restart commands, a one-second check period, short drain polls and
// back-offs, and evictions with a zero grace period (no kubelet finishes graceful deletions in
// envtest).
func TreeAgentOn(node, root, logs string) *TreeAgent {
	a := &TreeAgent{
		Root:        root,
		Reboots:     filepath.Join(logs, "reboots"),
		GrubUpdates: filepath.Join(logs, "grub-updates"),
		Irqbalance:  filepath.Join(logs, "irqbalance-restarts"),
	}
	h := &host.Host{Root: root}
	a.R = &agent.Reconciler{
		NodeName: node,
		Host:     h,
		Engine:   &tuning.Engine{Host: h},
		Boot: &bootloader.Manager{
			Writer:      &bootloader.GRUB{Host: h, UpdateCommand: LogCommand(a.GrubUpdates)},
			RetiredPath: h.Path(bootloader.DefaultStateDir + "/retired-args"),
		},
		CheckPeriod:              time.Second,
		RebootCommand:            RebootCommand(a.Reboots),
		IrqbalanceRestartCommand: LogCommand(a.Irqbalance),
		DrainTimeout:             5 * time.Second,
		DrainRetryBackoff:        time.Second,
		DrainPoll:                100 * time.Millisecond,
		EvictionGracePeriod:      ptr.To[int64](0),
	}
	return a
}
