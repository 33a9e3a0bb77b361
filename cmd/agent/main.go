// Command agent is tickstack's node agent: it runs on every node (a privileged DaemonSet with the
// host's root mounted at --host-root), reports the node's facts on its LatencyNodeState, applies
// the resolved tuning, keeps it in effect, runs the coordinated reboot protocol and restores the
// host's originals when the node state is deleted. docs/agent.md describes it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/bootloader"
	"github.com/tickstack/tickstack/internal/bypass"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/metricsauth"
	"github.com/tickstack/tickstack/internal/tuning"
	"github.com/tickstack/tickstack/internal/version"
)

// options are the agent's flags.
type options struct {
	nodeName, namespace, hostRoot, journalPath, irqbalanceConfig string
	bootLoader, resourcePrefix                                   string
	grubUpdate, rebootCmd, irqbalanceCmd, systemctlCmd           commandFlag
	kubeletConfigDir, kubeletRootDir, hostProcess                string
	kubeletCAFile                                                string
	kubeletStop, kubeletStart                                    commandFlag
	kubeletStartTO                                               time.Duration
	bootApply                                                    bool
	bootUnitDir, bootBinary                                      string
	checkPeriod, drainTimeout, drainBackoff, rebootTO            time.Duration
	evictionGrace                                                int64
	watchNICs, confineSelf, resolveOnNode                        bool
	metricsAddr, probeAddr                                       string
	metricsSecure                                                bool
	ptp4lPath, phc2sysPath, pmcPath, ptpRunDir                   string
	// applyTestFlags sets what the flags of a test build say (--failpoint-file, failpoint.go); a
	// release build has none and does nothing.
	applyTestFlags func(*agent.Reconciler)
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default: $NODE_NAME, set from the downward API)")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the agent's namespace, where it publishes this node's NodeFeature for node-feature-discovery (default: $POD_NAMESPACE, set from the downward API); empty: none")
	fs.StringVar(&o.resourcePrefix, "resource-prefix", tsv1.DefaultResourcePrefix, "the SR-IOV device plugin resource prefix (the operator's --resource-prefix): the node's resources under it are reported in status.devices")
	fs.StringVar(&o.hostRoot, "host-root", "/", "where the host's / is visible (/host in the DaemonSet)")
	fs.StringVar(&o.journalPath, "journal-path", tuning.DefaultJournalPath, "the journal of original values, on the host (below --host-root)")
	fs.StringVar(&o.irqbalanceConfig, "irqbalance-config", host.DefaultIrqbalanceConfig, "irqbalance's environment file, on the host")
	fs.StringVar(&o.bootLoader, "boot-loader", "grub", "how kernel arguments are written: grub (a /etc/default/grub.d drop-in), bls (/boot/loader/entries) or none")
	o.grubUpdate = commandFlag{argv: strings.Fields("nsenter --target 1 --mount -- update-grub")}
	o.rebootCmd = commandFlag{argv: strings.Fields("nsenter --target 1 --mount -- systemctl reboot")}
	o.irqbalanceCmd = commandFlag{argv: strings.Fields("nsenter --target 1 --mount -- systemctl try-restart irqbalance.service")}
	fs.Var(&o.grubUpdate, "grub-update-command", "regenerates grub.cfg after the drop-in changed (grub2-mkconfig -o /boot/grub2/grub.cfg on Fedora/RHEL); empty runs nothing"+commandHelp)
	fs.Var(&o.rebootCmd, "reboot-command", "reboots the node once it is drained; runs with TICKSTACK_NODE_NAME and TICKSTACK_HOST_ROOT set"+commandHelp)
	fs.Var(&o.irqbalanceCmd, "irqbalance-restart-command", "restarts irqbalance, if it runs, after its banned CPUs changed; empty runs nothing"+commandHelp)
	o.systemctlCmd = commandFlag{argv: strings.Fields("nsenter --target 1 --mount -- systemctl")}
	fs.Var(&o.systemctlCmd, "systemctl-command", "the host's systemctl, which stops and masks the host's clock daemons for a profile with ptp.ownsSystemClock and unmasks them after; empty: such a profile fails on them"+commandHelp)
	o.kubeletStop = commandFlag{argv: strings.Fields("nsenter --target 1 --mount -- systemctl stop kubelet.service")}
	o.kubeletStart = commandFlag{argv: strings.Fields("nsenter --target 1 --mount -- systemctl start kubelet.service")}
	fs.StringVar(&o.kubeletConfigDir, "kubelet-config-dir", agent.DefaultKubeletConfigDir, "the kubelet's --config-dir on the host, where the agent writes its drop-in for a profile's kubelet section; empty: the agent never touches the kubelet")
	fs.StringVar(&o.hostProcess, "host-process", "1", "a process in the host's mount namespace, through whose /proc/PID/root the agent (with hostPID) reaches the kubelet's files: a PID, or a command name of a uid-0 process in the agent's PID namespace and the host's mount namespace (for a host whose PID 1 is closed to containers; namesakes in different mount namespaces are refused); ignored with --host-root=/")
	fs.StringVar(&o.kubeletCAFile, "kubelet-ca-file", "", "the CA that signs the kubelet's serving certificate, for the agent's direct read of its kubelet's /configz (nodes/configz); empty: the cluster's CA (the service account's ca.crt). A kubelet whose certificate it does not verify is read from its files on the host instead (status.kubeletConfig)")
	fs.StringVar(&o.kubeletRootDir, "kubelet-root-dir", agent.DefaultKubeletRootDir, "the kubelet's --root-dir on the host (its CPU and memory manager checkpoints)")
	fs.Var(&o.kubeletStop, "kubelet-stop-command", "stops the kubelet (in the node's rollout slot, after the drain)"+commandHelp)
	fs.Var(&o.kubeletStart, "kubelet-start-command", "starts the kubelet again; it must not be a child of the agent's container (systemd starts it on a host)"+commandHelp)
	fs.DurationVar(&o.kubeletStartTO, "kubelet-start-timeout", agent.DefaultKubeletStartTimeout, "how long the restarted kubelet may take to show its new settings in configz before the agent puts the previous drop-in back")
	fs.BoolVar(&o.bootApply, "boot-apply", false, "apply the runtime settings of the last tuning this agent applied ("+agent.DesiredPath+") and exit, without the API server: what the boot unit runs before the kubelet starts")
	fs.StringVar(&o.bootUnitDir, "boot-unit-dir", agent.DefaultBootUnitDir, "systemd's unit directory on the host, where the agent installs "+agent.BootUnitName+" (ordered before kubelet.service) while a profile tunes the node; empty: no boot unit")
	fs.StringVar(&o.bootBinary, "boot-binary", agent.DefaultBootBinary, "where on the host the agent copies its binary for the boot unit")
	fs.DurationVar(&o.checkPeriod, "check-period", agent.DefaultCheckPeriod, "how often the host is checked for drift (NIC changes are seen at once)")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", agent.DefaultDrainTimeout, "drain limit when the profile has no rollout.drainTimeout")
	fs.DurationVar(&o.drainBackoff, "drain-retry-backoff", agent.DefaultDrainRetryBackoff, "wait after a failed drain before asking for a reboot slot again")
	fs.DurationVar(&o.rebootTO, "reboot-timeout", agent.DefaultRebootTimeout, "how long the node may keep its boot ID after the reboot command before the agent reports it and runs the command again")
	fs.Int64Var(&o.evictionGrace, "eviction-grace-period", -1, "termination grace period (seconds) for evicted pods; -1 uses each pod's own")
	fs.BoolVar(&o.confineSelf, "confine-to-reserved-cpus", true, "keep the agent's own threads on spec.tuning.reservedCPUs while a tuning is in force, so it never runs on an isolated CPU")
	fs.BoolVar(&o.resolveOnNode, "resolve-on-node", true, "act on the LatencyProfile that wins this node before the operator creates its node state (set it as the manager's --resolve-on-node, on by default; docs/agent.md, \"Before its node state exists\"): the agent arbitrates between the profiles as the manager does and applies the runtime settings; the rest waits for the node state. false: the agent waits for its node state")
	fs.BoolVar(&o.watchNICs, "watch-nic-changes", true, "verify at once when the kernel announces a NIC setting change (ethtool netlink monitor)")
	fs.StringVar(&o.ptp4lPath, "ptp4l-path", "", "the ptp4l executable: an absolute path, or empty to look ptp4l up on PATH")
	fs.StringVar(&o.phc2sysPath, "phc2sys-path", "", "the phc2sys executable: an absolute path, or empty to look phc2sys up on PATH")
	fs.StringVar(&o.pmcPath, "pmc-path", "", "the pmc executable: an absolute path, or empty to look pmc up on PATH")
	fs.StringVar(&o.ptpRunDir, "ptp-run-dir", "", "directory of ptp4l's configuration and management socket, as the agent sees it (default: "+agent.PTPRunDir+" below --host-root)")
	o.applyTestFlags = addTestFlags(fs) // test builds only (-tags failpoint): failpoint.go
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "address the metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve the metrics over HTTPS to clients the API server authenticates and authorizes (get on the non-resource URL /metrics); false: plain HTTP to anyone who reaches the port")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8082", "address the health probes bind to")
}

// reconciler builds the agent's reconciler from the flags (without the Kubernetes clients).
func (o *options) reconciler() (*agent.Reconciler, error) {
	if o.nodeName == "" && !o.bootApply {
		return nil, errors.New("--node-name (or $NODE_NAME) is required: set it from the downward API (spec.nodeName)")
	}
	for _, f := range []struct{ flag, value string }{{"boot-unit-dir", o.bootUnitDir}, {"boot-binary", o.bootBinary}} {
		if f.value != "" && !filepath.IsAbs(f.value) {
			return nil, fmt.Errorf("--%s=%q: give an absolute path on the host", f.flag, f.value)
		}
	}
	if o.bootUnitDir != "" && o.bootBinary == "" {
		return nil, errors.New("--boot-binary is empty: the boot unit needs the agent's binary on the host; give a path, or --boot-unit-dir= for no boot unit")
	}
	if err := o.checkPTP(); err != nil {
		return nil, err
	}
	h := &host.Host{Root: o.hostRoot, IrqbalanceConfig: o.irqbalanceConfig, NIC: &host.EthtoolNIC{}, Systemctl: o.systemctlCmd.argv}
	r := &agent.Reconciler{
		NodeName:                 o.nodeName,
		Namespace:                o.namespace,
		ResourcePrefix:           o.resourcePrefix,
		Host:                     h,
		Engine:                   &tuning.Engine{Host: h, JournalPath: o.journalPath},
		CheckPeriod:              o.checkPeriod,
		RebootCommand:            o.rebootCmd.argv,
		IrqbalanceRestartCommand: o.irqbalanceCmd.argv,
		ConfineSelf:              o.confineSelf,
		ResolveOnNode:            o.resolveOnNode,
		DrainTimeout:             o.drainTimeout,
		DrainRetryBackoff:        o.drainBackoff,
		RebootTimeout:            o.rebootTO,
		BootUnit: agent.BootOptions{
			UnitDir: o.bootUnitDir, Binary: o.bootBinary,
			Args: []string{"--journal-path=" + o.journalPath, "--irqbalance-config=" + o.irqbalanceConfig},
		},
		Kubelet: agent.KubeletOptions{
			ConfigDir: o.kubeletConfigDir, RootDir: o.kubeletRootDir,
			StopCommand: o.kubeletStop.argv, StartCommand: o.kubeletStart.argv, StartTimeout: o.kubeletStartTO,
		},
		PTP: agent.PTPOptions{
			Ptp4lPath: o.ptp4lPath, Phc2sysPath: o.phc2sysPath, PmcPath: o.pmcPath, RunDir: o.ptpRunDir,
			Metrics: ctrlmetrics.Registry,
		},
	}
	if err := o.checkKubelet(); err != nil {
		return nil, err
	}
	if o.hostRoot != "/" {
		// In the DaemonSet (hostPID): the kubelet's files through a host process's root.
		if o.hostProcess == "" {
			return nil, errors.New("--host-process is empty: give the PID (1) or command name of a process in the host's mount namespace")
		}
		r.Kubelet.HostProcess = o.hostProcess
	}
	o.applyTestFlags(r)
	if o.evictionGrace >= 0 {
		g := o.evictionGrace
		r.EvictionGracePeriod = &g
	}
	retired := h.Path(bootloader.DefaultStateDir + "/retired-args")
	switch o.bootLoader {
	case "grub":
		r.Boot = &bootloader.Manager{Writer: &bootloader.GRUB{Host: h, UpdateCommand: o.grubUpdate.argv}, RetiredPath: retired}
	case "bls":
		r.Boot = &bootloader.Manager{Writer: &bootloader.BLS{Host: h}, RetiredPath: retired}
	case "none":
	default:
		return nil, fmt.Errorf("--boot-loader=%q: use grub, bls or none", o.bootLoader)
	}
	return r, nil
}

// checkKubelet refuses kubelet flags the agent could not use, when it manages the kubelet.
func (o *options) checkKubelet() error {
	if o.kubeletConfigDir == "" {
		return nil
	}
	for _, f := range []struct{ flag, value string }{{"kubelet-config-dir", o.kubeletConfigDir}, {"kubelet-root-dir", o.kubeletRootDir}} {
		if !filepath.IsAbs(f.value) {
			return fmt.Errorf("--%s=%q: give an absolute path on the host", f.flag, f.value)
		}
	}
	for _, f := range []struct {
		flag string
		argv []string
	}{{"kubelet-stop-command", o.kubeletStop.argv}, {"kubelet-start-command", o.kubeletStart.argv}} {
		if len(f.argv) == 0 {
			return fmt.Errorf("--%s is empty: the agent cannot restart the kubelet without it; give the command, or --kubelet-config-dir= to leave the kubelet alone", f.flag)
		}
	}
	return nil
}

// maxPTPSocketPath is the longest UNIX socket path Linux accepts (sun_path minus its NUL); ptp4l's
// socket is <run dir>/ptp4l.sock.
const maxPTPSocketPath = 107

// checkPTP refuses linuxptp flags the daemon could not use: an executable that is neither empty
// nor an absolute path to an executable file, a run directory that is not absolute or too long for
// ptp4l's socket.
func (o *options) checkPTP() error {
	for _, f := range []struct{ flag, value string }{{"ptp4l-path", o.ptp4lPath}, {"phc2sys-path", o.phc2sysPath}, {"pmc-path", o.pmcPath}} {
		if f.value == "" {
			continue
		}
		if !filepath.IsAbs(f.value) {
			return fmt.Errorf("--%s=%q: give an absolute path, or leave it empty to look the executable up on PATH", f.flag, f.value)
		}
		if _, err := exec.LookPath(f.value); err != nil {
			return fmt.Errorf("--%s=%q is not an executable file (%v): install linuxptp in the agent's image or fix the path", f.flag, f.value, err)
		}
	}
	if o.ptpRunDir == "" {
		return nil
	}
	if !filepath.IsAbs(o.ptpRunDir) {
		return fmt.Errorf("--ptp-run-dir=%q: give an absolute directory, or leave it empty for %s below --host-root", o.ptpRunDir, agent.PTPRunDir)
	}
	if sock := filepath.Join(o.ptpRunDir+"-ro", "ptp4l.sock"); len(sock) > maxPTPSocketPath { // the longer of the two: the read-only one
		return fmt.Errorf("--ptp-run-dir=%q: ptp4l's socket %s would be %d bytes, more than the %d Linux allows: choose a shorter directory", o.ptpRunDir, sock, len(sock), maxPTPSocketPath)
	}
	return nil
}

const commandHelp = " (given once: split on blanks; given several times: one argument each)"

// commandFlag is a command line: one flag value is split on blanks ("systemctl reboot"); a flag
// repeated gives one argument per occurrence (--reboot-command=sh --reboot-command="-c" ...), as a
// Helm list renders it.
type commandFlag struct {
	argv []string
	// set counts the occurrences on the command line (the default does not count); first is the
	// first one as given.
	set   int
	first string
}

func (c *commandFlag) String() string {
	if c == nil {
		return ""
	}
	return strings.Join(c.argv, " ")
}

func (c *commandFlag) Set(v string) error {
	c.set++
	switch c.set {
	case 1:
		c.argv = strings.Fields(v)
		c.first = v
	case 2:
		c.argv = []string{c.first, v}
	default:
		c.argv = append(c.argv, v)
	}
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == nriCommand {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := runNRIPlugin(ctx, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "nri plugin:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	o.bind(flag.CommandLine)
	zo := zap.Options{}
	zo.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo)))
	log := ctrl.Log.WithName("setup")
	if err := run(ctrl.SetupSignalHandler(), &o); err != nil {
		log.Error(err, "agent failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, o *options) error {
	r, err := o.reconciler()
	if err != nil {
		return err
	}
	if o.bootApply {
		return agent.BootApply(r, os.Stdout)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 agent.Scheme(),
		Cache:                  agent.CacheOptions(o.nodeName),
		Metrics:                metricsauth.Options(o.metricsAddr, o.metricsSecure),
		HealthProbeBindAddress: o.probeAddr,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	r.Client, r.APIReader = mgr.GetClient(), mgr.GetAPIReader()
	configz, err := agent.KubeletConfigz(mgr.GetConfig(), mgr.GetAPIReader(), o.nodeName, o.kubeletCAFile)
	if err != nil {
		return fmt.Errorf("creating the configz reader: %w", err)
	}
	// The agent runs with hostPID and hostNetwork: /proc shows the kubelet, /proc/self/net the
	// host's sockets.
	r.Kubelet.Config = agent.KubeletConfigReader{
		Configz: configz, Files: agent.KubeletFiles(mgr.GetAPIReader(), o.nodeName, "/proc", "/proc/self/net"),
	}.Read
	r.Recorder = mgr.GetEventRecorder("tickstack-agent")
	if o.metricsAddr != "0" {
		// The counters of the node's kernel-bypass processes, per pod (docs/monitoring.md): found
		// through /proc (hostPID), named from the pods the API server lists on this node.
		reader := mgr.GetAPIReader()
		ctrlmetrics.Registry.MustRegister(bypass.NewCollector(bypass.Options{
			Proc: "/proc",
			Pods: func(ctx context.Context) ([]corev1.Pod, error) {
				var pods corev1.PodList
				err := reader.List(ctx, &pods, client.MatchingFields{"spec.nodeName": o.nodeName})
				return pods.Items, err
			},
			Log: ctrl.Log.WithName("bypass"),
		}))
	}
	var nics <-chan string
	if o.watchNICs {
		// The agent runs with hostNetwork: its network namespace is the host's.
		nics = agent.KeepWatchingNICs(ctx, func(ctx context.Context) (<-chan string, error) {
			return host.WatchNICChanges(ctx, 0)
		}, 10*time.Second)
	}
	if err := r.SetupWithManager(mgr, nics); err != nil {
		return fmt.Errorf("setting up the agent controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting the node agent", append([]any{"node", o.nodeName, "hostRoot", o.hostRoot}, version.Get().KeysAndValues()...)...)
	return mgr.Start(ctx)
}
