package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/nriplugin"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Boot before pods (docs/agent.md, "Boot before pods"). After an unplanned reboot the kubelet
// restarts the node's pods at once, before this agent (itself a pod) could apply anything. So:
//
//   - the agent keeps the last tuning it applied in DesiredPath, and installs a systemd unit,
//     ordered before kubelet.service, that runs a copy of its binary with --boot-apply: the runtime
//     settings (sysctls, IRQ masks, VFs, huge pages, governor, ...) are back before any pod starts,
//     from the same journal of originals;
//   - the taint tickstack.io/tuning-pending keeps new latency pods off the node until the node state
//     is Applied for the running boot (status.appliedBootID): the kubelet drop-in registers it for
//     a joining node, the agent puts it on before a reboot it runs, when it finds a boot it has not
//     applied yet, and when its own resolution of the profile moves the node's tuning
//     (taintRetune, resolution.go), and takes it off in one place only, confirmBoot, once Applied
//     for this boot (and when the node state goes). Whatever put it on, it goes off by that one rule.

// Paths on the host.
const (
	// DesiredPath holds the last spec.tuning the agent applied (BootApply reads it).
	DesiredPath = "/var/lib/tickstack/boot/desired.json"
	// DefaultBootBinary is where the agent copies its own binary for the boot unit.
	DefaultBootBinary = "/var/lib/tickstack/bin/tickstack-agent"
	// DefaultBootUnitDir is systemd's directory for administrator units.
	DefaultBootUnitDir = "/etc/systemd/system"
	// BootUnitName is the unit's file name.
	BootUnitName = "tickstack-boot.service"
)

// BootOptions say where the boot unit goes.
type BootOptions struct {
	// UnitDir is systemd's unit directory on the host; empty: no boot unit (the runtime settings
	// come back only when the agent runs after the kubelet).
	UnitDir string
	// Binary is the host path of the agent's copy the unit runs.
	Binary string
	// Self is the agent's own executable to copy (os.Executable when empty).
	Self string
	// Args are the unit's agent arguments besides --boot-apply and --host-root=/ (the journal's
	// and irqbalance's paths, as this agent runs).
	Args []string
}

// bootUnit is the unit's text.
func (r *Reconciler) bootUnit() string {
	args := append([]string{r.BootUnit.Binary, "--boot-apply", "--host-root=/"}, r.BootUnit.Args...)
	return `# Written by tickstack's node agent and removed with the node's profile (docs/agent.md, "Boot before pods").
[Unit]
Description=tickstack: the node's last tuning, applied before the kubelet starts its pods
DefaultDependencies=no
After=local-fs.target systemd-modules-load.service systemd-udevd.service systemd-sysctl.service
Before=kubelet.service network-pre.target
Wants=network-pre.target
ConditionPathExists=` + DesiredPath + `

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=` + strings.Join(args, " ") + `
TimeoutStartSec=120

[Install]
WantedBy=kubelet.service multi-user.target
`
}

// bootFiles are the boot unit's files on the host, as the agent sees them: the unit, its two
// enablement links, and the binary.
func (r *Reconciler) bootFiles() (unit string, links []string, binary string) {
	dir := r.Host.Path(r.BootUnit.UnitDir)
	unit = filepath.Join(dir, BootUnitName)
	for _, w := range []string{"kubelet.service.wants", "multi-user.target.wants"} {
		links = append(links, filepath.Join(dir, w, BootUnitName))
	}
	return unit, links, r.Host.Path(r.BootUnit.Binary)
}

// reconcileBootUnit installs (or updates) the boot unit and the agent's binary it runs, and keeps
// the last applied tuning for it. A failure is reported, not a stop: the tuning itself is in
// effect.
func (r *Reconciler) reconcileBootUnit(_ context.Context, s *scope) error {
	if r.BootUnit.UnitDir == "" {
		return nil
	}
	if err := r.installBootUnit(); err != nil {
		s.obs.bootUnitErr = err
	}
	return nil
}

func (r *Reconciler) installBootUnit() error {
	unit, links, binary := r.bootFiles()
	self := r.BootUnit.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the agent's binary: %w", err)
		}
	}
	same, err := sameContent(self, binary)
	if err != nil {
		return fmt.Errorf("reading the agent's binary: %w", err)
	}
	if !same {
		if err := copyDurably(binary, self, 0o755); err != nil {
			return fmt.Errorf("copying the agent's binary to %s: %w", r.BootUnit.Binary, err)
		}
	}
	content := []byte(r.bootUnit())
	if have, err := os.ReadFile(unit); err != nil || !bytes.Equal(have, content) {
		if err := writeDurably(unit, content); err != nil {
			return fmt.Errorf("writing the boot unit %s: %w", unit, err)
		}
	}
	for _, l := range links {
		if t, err := os.Readlink(l); err == nil && t == "../"+BootUnitName {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			return err
		}
		_ = os.Remove(l)
		if err := os.Symlink("../"+BootUnitName, l); err != nil {
			return fmt.Errorf("enabling the boot unit: %w", err)
		}
	}
	return nil
}

// sameContent tells whether the file copy holds what the file src holds (false when copy is
// missing or unreadable). Both are streamed through a hash, never read whole: the agent's binary
// is about 55 MiB, and reading it and its copy on every reconcile took more than the agent's
// memory limit (the cgroup OOM-killed it on its first reconcile).
func sameContent(src, copy string) (bool, error) {
	want, wantSize, err := fileSum(src)
	if err != nil {
		return false, err
	}
	if st, err := os.Stat(copy); err != nil || st.Size() != wantSize {
		return false, nil
	}
	have, _, err := fileSum(copy)
	return err == nil && have == want, nil
}

// fileSum is the SHA-256 of a file's content and its size, streamed.
func fileSum(path string) (sum [sha256.Size]byte, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return sum, 0, err
	}
	defer f.Close()
	h := sha256.New()
	if size, err = io.Copy(h, f); err != nil {
		return sum, 0, err
	}
	return [sha256.Size]byte(h.Sum(nil)), size, nil
}

// copyDurably is writeDurablyMode with the content streamed from the file src.
func copyDurably(path, src string, mode os.FileMode) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeDurablyFrom(path, f, mode)
}

// removeBootUnit takes the boot unit, its links, the binary copy and the saved tuning away.
func (r *Reconciler) removeBootUnit() error {
	var paths []string
	if r.BootUnit.UnitDir != "" {
		unit, links, binary := r.bootFiles()
		paths = append(append(links, unit), binary)
	}
	paths = append(paths, r.Host.Path(DesiredPath), r.Host.Path(nriplugin.DefaultPolicyPath))
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if r.BootUnit.UnitDir != "" {
		// The wants directory the agent made, if nothing else is in it (an error says it is not).
		_ = os.Remove(filepath.Join(r.Host.Path(r.BootUnit.UnitDir), "kubelet.service.wants"))
	}
	return errors.Join(errs...)
}

// savedTuning is DesiredPath's content.
type savedTuning struct {
	Profile    string           `json:"profile"`
	Generation int64            `json:"generation"`
	Tuning     *tsv1.NodeTuning `json:"tuning"`
}

// saveDesired keeps the tuning this reconcile applied for the boot unit (only when it changed),
// and hands the per-pod controls the profile allows to the node's NRI plugin (savePodControls).
func (r *Reconciler) saveDesired(s *scope) error {
	if err := r.savePodControls(s.tuning); err != nil {
		return err
	}
	saved := savedTuning{Profile: s.lns.Spec.Profile.Name, Generation: s.lns.Generation, Tuning: s.tuning}
	if s.hash != "" {
		// The agent's own resolution: the profile generation that moved the node to it.
		saved.Generation = s.resolvedGeneration
	}
	b, err := json.MarshalIndent(saved, "", "  ")
	if err != nil {
		return err
	}
	path := r.Host.Path(DesiredPath)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, b) {
		return nil
	}
	return writeDurably(path, b)
}

// BootApply is --boot-apply: the runtime settings of the last tuning the agent applied, from
// DesiredPath, through the same engine and journal, before the kubelet starts. It never needs the
// API server. A setting that fails is reported on out and the others are applied; the agent
// reports and corrects the rest once it runs. No saved tuning: nothing to do.
func BootApply(r *Reconciler, out io.Writer) error {
	b, err := os.ReadFile(r.Host.Path(DesiredPath))
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "tickstack-boot: no saved tuning (%s): nothing to apply\n", DesiredPath)
		return nil
	}
	if err != nil {
		return err
	}
	var st savedTuning
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", DesiredPath, err)
	}
	d, err := Desired(st.Tuning)
	if err == nil {
		err = tuning.Validate(d)
	}
	if err != nil {
		return fmt.Errorf("the saved tuning of profile %s is not valid here, nothing changed: %w", st.Profile, err)
	}
	rep, err := r.Engine.Apply(d)
	if rep != nil {
		var failed []string
		for _, res := range rep.Results {
			if res.State == tuning.Failed || res.State == tuning.Drifted {
				failed = append(failed, res.Name)
			}
		}
		fmt.Fprintf(out, "tickstack-boot: profile %s generation %d: %d settings written, %d in effect already, %d not in effect (%s)\n",
			st.Profile, st.Generation, len(rep.Changed), len(rep.Results)-len(rep.Changed)-len(failed), len(failed), strings.Join(failed, ", "))
	}
	return err
}

// appliedNow reports whether this reconcile leaves the node state Applied.
func appliedNow(s *scope) bool {
	st := s.lns.Status.DeepCopy()
	o := s.obs
	applyStatus(st, &o)
	return meta.IsStatusConditionTrue(st.Conditions, tsv1.NodeApplied)
}

// taintUnconfirmedBoot, the first phase, puts the tuning-pending taint on when the tuning was
// Applied under another boot than the running one (an unplanned reboot: the boot unit applied it,
// but this agent has not confirmed it yet), before anything else can stop the reconcile.
func (r *Reconciler) taintUnconfirmedBoot(ctx context.Context, s *scope) error {
	id, err := r.readBootID()
	if err != nil {
		return fmt.Errorf("reading the boot ID: %w", err)
	}
	s.bootID = id
	if prev := s.lns.Status.AppliedBootID; prev != "" && prev != strings.TrimSpace(id) {
		return r.setTaint(ctx, true)
	}
	return nil
}

// confirmBoot, the last phase, records the boot the tuning is Applied under and takes the
// tuning-pending taint off once it is the running one.
func (r *Reconciler) confirmBoot(ctx context.Context, s *scope) error {
	if !appliedNow(s) {
		return nil
	}
	s.obs.appliedBootID = strings.TrimSpace(s.bootID)
	node, err := r.getNode(ctx)
	if err != nil {
		return err
	}
	// reportDevices reads the same Node: one GET per reconcile.
	s.node = node
	return r.taintNode(ctx, node, false)
}

// setTaint puts the tuning-pending taint on the node or takes it off.
func (r *Reconciler) setTaint(ctx context.Context, on bool) error {
	node, err := r.getNode(ctx)
	if err != nil {
		return err
	}
	return r.taintNode(ctx, node, on)
}

// TuningPendingTaints returns taints with the tuning-pending taint put on (on) or taken off, and
// whether that changed them; taints itself is left as it was.
func TuningPendingTaints(taints []corev1.Taint, on bool) ([]corev1.Taint, bool) {
	i := slices.IndexFunc(taints, func(t corev1.Taint) bool { return t.Key == tsv1.TuningPendingTaint })
	switch {
	case (i >= 0) == on:
		return taints, false
	case on:
		return append(slices.Clip(taints), corev1.Taint{Key: tsv1.TuningPendingTaint, Effect: corev1.TaintEffectNoSchedule}), true
	default:
		return slices.Delete(slices.Clone(taints), i, i+1), true
	}
}

// taintNode puts the tuning-pending taint on node or takes it off (node as just read).
func (r *Reconciler) taintNode(ctx context.Context, node *corev1.Node, on bool) error {
	taints, changed := TuningPendingTaints(node.Spec.Taints, on)
	if !changed {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Taints = taints
	// Optimistic lock: the taint list is shared with the node controller and others.
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("%s the taint %s on node %s: %w", map[bool]string{true: "putting", false: "taking off"}[on], tsv1.TuningPendingTaint, r.NodeName, err)
	}
	return nil
}

// savePodControls writes the NRI plugin's node policy (docs/agent.md "Per-pod controls"): the
// controls spec.tuning.podControls allows and the CPUs that are never exclusive (reserved and
// shared). A tuning that allows none removes the file, and the plugin then refuses every container
// asking for a control.
func (r *Reconciler) savePodControls(t *tsv1.NodeTuning) error {
	p := nriplugin.NodePolicy{}
	if t != nil {
		p.Allow = t.PodControls
		reserved, err := cpuset.Parse(string(t.ReservedCPUs))
		if err != nil {
			return fmt.Errorf("spec.tuning.reservedCPUs: %w", err)
		}
		shared, err := cpuset.Parse(string(t.SharedCPUs))
		if err != nil {
			return fmt.Errorf("spec.tuning.sharedCPUs: %w", err)
		}
		p.NotExclusiveCPUs = reserved.Union(shared).String()
	}
	return nriplugin.WriteNodePolicy(r.Host.Path(nriplugin.DefaultPolicyPath), p)
}
