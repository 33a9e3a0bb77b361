package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/kubeletconf"
)

// The kubelet settings (docs/agent.md "Kubelet settings"): spec.tuning.kubelet becomes the drop-in
// kubeletconf.FileName in the kubelet's --config-dir. The drop-in changes only inside the node's
// rollout slot, the same one a reboot takes:
//
//	drop-in differs --> Requested (action KubeletRestart) --rebootGranted--> Draining --drained-->
//	RestartingKubelet: stop the kubelet, remove the CPU and memory manager checkpoints, write the
//	drop-in, start the kubelet --> Verifying: configz shows the drop-in's values --> uncordon, done
//
// Written only while the kubelet is stopped, and together with new checkpoints: a kubelet that
// restarts on its own never meets a drop-in its checkpoints disagree with (kubernetes#110478).
// When kernel arguments or BIOS settings need a reboot too, the drop-in goes in just before the
// reboot command, so one disruption carries both. A kubelet that does not come back with the
// drop-in's values within KubeletStartTimeout gets the previous drop-in back (Degraded,
// KubeletRestartFailed) and the agent does not try the same drop-in again.

// Defaults of the kubelet options.
const (
	DefaultKubeletConfigDir    = "/etc/kubernetes/kubelet.conf.d"
	DefaultKubeletRootDir      = "/var/lib/kubelet"
	DefaultKubeletStartTimeout = 3 * time.Minute
	// KubeletStateDir keeps, on the host, the drop-in's content before the agent first wrote it
	// (original) and before its last switch (previous).
	KubeletStateDir = "/var/lib/tickstack/kubelet"
)

// Reasons of the kubelet's conditions and events.
const (
	// ReasonKubeletRestartRequired (RebootRequired=True): only the kubelet's settings change.
	ReasonKubeletRestartRequired = "KubeletRestartRequired"
	// ReasonKubeletRestartFailed (Degraded=True): the kubelet did not come back with the drop-in.
	ReasonKubeletRestartFailed = "KubeletRestartFailed"
	// ReasonKubeletNotManaged (Degraded=True): the tuning has kubelet settings and the agent runs
	// without --kubelet-config-dir.
	ReasonKubeletNotManaged = "KubeletNotManaged"
	// ReasonKubeletInvalid (Degraded=True): the drop-in cannot be rendered for this node.
	ReasonKubeletInvalid = "KubeletInvalid"
)

// checkpoints are the kubelet state files that remember CPU and memory assignments under the
// settings they were made with: the kubelet refuses to start when they disagree with its
// configuration.
var checkpoints = []string{"cpu_manager_state", "memory_manager_state"}

// KubeletOptions say where the kubelet keeps its configuration and state on the host, and how the
// agent stops, starts and reads it.
type KubeletOptions struct {
	// HostProcess is a process in the host's mount namespace through whose /proc/PID/root the
	// agent reaches the kubelet's files (hostPID), so that the kubelet's root directory, with the
	// pods' volumes, is never mounted into the agent's pod: a PID ("1", the host's init), or a
	// command name of a host process (a host whose PID 1 is closed to containers), which
	// resolveHostProcess checks is one (docs/agent-host.md).
	// Empty: the files are below Host.Root (the agent runs on the host itself).
	HostProcess string
	// ConfigDir is the kubelet's --config-dir on the host; empty: the agent manages no kubelet
	// settings (a tuning with a kubelet section is Degraded, KubeletNotManaged).
	ConfigDir string
	// RootDir is the kubelet's --root-dir on the host (its checkpoints).
	RootDir string
	// StopCommand and StartCommand stop and start the kubelet (systemctl through nsenter).
	StopCommand, StartCommand []string
	// Config returns the running kubelet's configuration (KubeletConfigReader: the kubelet's own
	// /configz, else its files on the host); an error while it does not answer.
	Config func(ctx context.Context) (KubeletConfig, error)
	// StartTimeout is how long the kubelet may take after its start to show the new values.
	StartTimeout time.Duration
}

// kubeletObs is what one reconcile found about the kubelet.
type kubeletObs struct {
	// desired is the drop-in to have (nil: none), current what the file holds (nil: absent).
	desired, current []byte
	// hash identifies desired.
	hash string
	// want are the values configz must show; have what it showed (nil: not read or no answer).
	want, have map[string]string
	// pending: the drop-in or the running kubelet differs from desired.
	pending bool
	// failed: the kubelet restart for this drop-in failed before (the annotation says so).
	failed bool
	// err is a problem that keeps the agent from managing the kubelet (Degraded).
	err    error
	reason string
	// restartErr is a failed restart (Degraded, KubeletRestartFailed).
	restartErr error
	// cpus, when set, compares the CPUs the running kubelet's CPU manager plans with (its
	// checkpoint) with those the host has online; stale when they differ.
	cpus *kubeletCPUs
}

// kubeletCPUs is the CPU manager's view of the CPUs against the host's.
type kubeletCPUs struct {
	online, known string
}

func (c *kubeletCPUs) stale() bool { return c != nil && c.online != c.known }

// cpuManagerCheckpoint is the part of the kubelet's cpu_manager_state the agent reads: the static
// policy's shared pool and its exclusive assignments, which together are every CPU it plans with.
type cpuManagerCheckpoint struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
}

// checkpointCPUs returns the CPUs a static CPU manager checkpoint covers; false for another
// policy, an empty or unreadable checkpoint (nothing to compare).
func checkpointCPUs(b []byte) (cpuset.Set, bool) {
	var c cpuManagerCheckpoint
	if len(b) == 0 || json.Unmarshal(b, &c) != nil || c.PolicyName != "static" || c.DefaultCPUSet == "" {
		return cpuset.Set{}, false
	}
	all, err := cpuset.Parse(c.DefaultCPUSet)
	if err != nil {
		return cpuset.Set{}, false
	}
	for _, containers := range c.Entries {
		for _, v := range containers {
			if s, err := cpuset.Parse(v); err == nil {
				all = all.Union(s)
			}
		}
	}
	return all, true
}

// observeKubeletCPUs compares the running kubelet's CPU manager checkpoint with the CPUs online
// now. The static CPU manager learns the online CPUs only when it starts (and refuses to start on
// a checkpoint that names others): after CPUs went offline or came back (cpu.offlined, SMT), or a
// reboot brought the offlined CPUs back under a kubelet that then started, the kubelet must
// restart with new checkpoints. Nil when there is nothing to compare.
func (r *Reconciler) observeKubeletCPUs() *kubeletCPUs {
	p, err := r.kubeletPath(filepath.Join(r.Kubelet.RootDir, "cpu_manager_state"))
	if err != nil {
		return nil
	}
	b, err := readOptional(p)
	if err != nil {
		return nil
	}
	known, ok := checkpointCPUs(b)
	if !ok {
		return nil
	}
	online, err := r.Host.OnlineCPUs()
	if err != nil {
		return nil
	}
	return &kubeletCPUs{online: online.String(), known: known.String()}
}

// kubeletPath is a host path of the kubelet's as the agent sees it.
func (r *Reconciler) kubeletPath(p string) (string, error) {
	if r.Kubelet.HostProcess == "" {
		return r.Host.Path(p), nil
	}
	pid, err := resolveHostProcess("/proc", r.Kubelet.HostProcess)
	if err != nil {
		return "", err
	}
	return filepath.Join("/proc", pid, "root", p), nil
}

func (r *Reconciler) kubeletDropIn() (string, error) {
	return r.kubeletPath(filepath.Join(r.Kubelet.ConfigDir, kubeletconf.FileName))
}

// readDropIn reads the kubelet drop-in; absent is (nil, nil).
func (r *Reconciler) readDropIn() ([]byte, error) {
	p, err := r.kubeletDropIn()
	if err != nil {
		return nil, err
	}
	return readOptional(p)
}

func (r *Reconciler) kubeletState(name string) string {
	return r.Host.Path(filepath.Join(KubeletStateDir, name))
}

// readOptional reads a file; absent is (nil, nil).
func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// absentMarker records, in the state directory, that the drop-in did not exist.
const absentMarker = "# tickstack: no drop-in\n"

// record keeps content (nil: absent) durably under name in the state directory, unless keep and
// a record is already there.
func (r *Reconciler) record(name string, content []byte, keep bool) error {
	path := r.kubeletState(name)
	if keep {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	if content == nil {
		content = []byte(absentMarker)
	}
	return writeDurably(path, content)
}

// recorded reads a record: (content, true) or (nil, true) for an absent drop-in; false: none.
func (r *Reconciler) recorded(name string) ([]byte, bool, error) {
	b, err := readOptional(r.kubeletState(name))
	if err != nil || b == nil {
		return nil, false, err
	}
	if string(b) == absentMarker {
		return nil, true, nil
	}
	return b, true, nil
}

// writeDurably writes a file through a synced temporary file and a rename, then syncs the
// directory: after a crash the file is either the old or the new one, never a part.
func writeDurably(path string, content []byte) error { return writeDurablyMode(path, content, 0o644) }

// writeDurablyMode is writeDurably with the file's mode.
func writeDurablyMode(path string, content []byte, mode os.FileMode) error {
	return writeDurablyFrom(path, bytes.NewReader(content), mode)
}

// writeDurablyFrom is writeDurablyMode with the content read from content, in small buffers.
func writeDurablyFrom(path string, content io.Reader, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := io.Copy(f, content); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// setDropIn makes the drop-in hold content (nil: removes it), durably.
func (r *Reconciler) setDropIn(content []byte) error {
	path, err := r.kubeletDropIn()
	if err != nil {
		return err
	}
	if content == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return writeDurably(path, content)
}

// kubeletWant renders the drop-in of spec.tuning.kubelet and the values configz must then show.
func kubeletWant(t *tsv1.NodeTuning, facts *tsv1.NodeFacts) ([]byte, map[string]string, error) {
	k := t.Kubelet
	var numa []tsv1.NUMANode
	if facts != nil {
		numa = facts.NUMANodes
	}
	out, err := kubeletconf.Render(kubeletconf.Settings{
		ReservedCPUs: string(t.ReservedCPUs), SharedCPUs: string(t.SharedCPUs), TopologyPolicy: string(k.TopologyManagerPolicy), TopologyScope: string(k.TopologyManagerScope),
		NUMANodes: numa, SystemMemory: k.SystemReservedMemory, EvictionMemory: k.EvictionHardMemory,
	})
	if err != nil {
		return nil, nil, err
	}
	var d map[string]any
	if err := json.Unmarshal(out, &d); err != nil {
		return nil, nil, err
	}
	want := map[string]string{}
	for _, f := range kubeletconf.Checked {
		want[f] = flatten(lookup(d, f))
	}
	return out, want, nil
}

// lookup finds a field given as a path ("evictionHard/memory.available") in a decoded configuration.
func lookup(m map[string]any, field string) any {
	var v any = m
	for _, part := range strings.Split(field, "/") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[part]
	}
	return v
}

// flatten prints a configuration value for comparison: quantities canonical, the rest as JSON.
func flatten(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		if q, err := resource.ParseQuantity(x); err == nil && strings.ContainsAny(x, "KMGTPEkmi") {
			return q.String()
		}
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// readConfigz reads the running kubelet's values of kubeletconf.Checked (nil while it does not
// answer), and records how it read them (status.kubeletConfig).
func (r *Reconciler) readConfigz(ctx context.Context) (map[string]string, error) {
	have, read, err := r.readKubeletConfig(ctx)
	r.mu.Lock()
	r.configzRead = read
	r.mu.Unlock()
	return have, err
}

func (r *Reconciler) readKubeletConfig(ctx context.Context) (map[string]string, *tsv1.KubeletConfigStatus, error) {
	if r.Kubelet.Config == nil {
		err := errors.New("no reader of the kubelet's configuration")
		return nil, &tsv1.KubeletConfigStatus{Source: tsv1.KubeletConfigUnavailable, Message: err.Error()}, err
	}
	kc, err := r.Kubelet.Config(ctx)
	if err != nil {
		return nil, &tsv1.KubeletConfigStatus{Source: tsv1.KubeletConfigUnavailable, Message: limit(err.Error())}, err
	}
	read := &tsv1.KubeletConfigStatus{Source: kc.Source, Message: kc.Message}
	var doc struct {
		KubeletConfig map[string]any `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(kc.Doc, &doc); err != nil || doc.KubeletConfig == nil {
		err := fmt.Errorf("%s: not a kubelet configuration: %.200s", kc.Source, kc.Doc)
		return nil, &tsv1.KubeletConfigStatus{Source: tsv1.KubeletConfigUnavailable, Message: limit(err.Error())}, err
	}
	have := map[string]string{}
	for _, f := range kubeletconf.Checked {
		have[f] = flatten(lookup(doc.KubeletConfig, f))
	}
	return have, read, nil
}

// ConfigzPeriod is how often the agent reads the kubelet's configuration while nothing about the
// kubelet changes.
const ConfigzPeriod = 5 * time.Minute

// cachedConfigz reads configz when fresh is asked for or the last reading is older than
// ConfigzPeriod, else returns the last reading.
func (r *Reconciler) cachedConfigz(ctx context.Context, fresh bool) (map[string]string, error) {
	r.mu.Lock()
	have, at := r.configz, r.configzAt
	r.mu.Unlock()
	if !fresh && have != nil && r.Clock.Since(at) < ConfigzPeriod {
		return have, nil
	}
	have, err := r.readConfigz(ctx)
	r.mu.Lock()
	r.configz, r.configzAt = have, r.Clock.Now()
	r.mu.Unlock()
	return have, err
}

// kubeletConfigRead is how the agent last read the kubelet's configuration (nil: never).
func (r *Reconciler) kubeletConfigRead() *tsv1.KubeletConfigStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configzRead.DeepCopy()
}

func dropInHash(b []byte) string {
	if b == nil {
		return "none"
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// reconcileKubelet compares the drop-in (and, once it is in place, the running kubelet) with
// spec.tuning.kubelet; a difference is a pending kubelet restart for the reboot protocol. An agent
// that manages the kubelet also reports how it reads the kubelet's configuration, with or without
// a kubelet section (status.kubeletConfig): whether a kubelet section could be verified here.
func (r *Reconciler) reconcileKubelet(ctx context.Context, s *scope) error {
	err := r.reconcileKubeletDropIn(ctx, s)
	if r.Kubelet.ConfigDir != "" {
		// For the status alone, one attempt per ConfigzPeriod, answered or not.
		r.mu.Lock()
		stale := r.configzRead == nil || r.Clock.Since(r.configzAt) >= ConfigzPeriod
		r.mu.Unlock()
		if stale {
			_, _ = r.cachedConfigz(ctx, true)
		}
		s.obs.kubeletConfig = r.kubeletConfigRead()
	}
	return err
}

func (r *Reconciler) reconcileKubeletDropIn(ctx context.Context, s *scope) error {
	t := s.tuning
	if r.Kubelet.ConfigDir == "" {
		if t.Kubelet != nil {
			s.obs.kubelet = &kubeletObs{err: fmt.Errorf("spec.tuning.kubelet is set but the agent manages no kubelet: start it with --kubelet-config-dir (the kubelet's --config-dir) or remove the profile's kubelet section"), reason: ReasonKubeletNotManaged}
		}
		return nil
	}
	var orig []byte
	if t.Kubelet == nil {
		// Without a kubelet section the drop-in is what the host had before tickstack wrote it;
		// never written by tickstack (no record): the kubelet's files are not even read.
		o, ok, err := r.recorded("original")
		if err != nil {
			s.obs.kubelet = &kubeletObs{err: fmt.Errorf("reading %s: %w", KubeletStateDir, err), reason: ReasonKubeletInvalid}
			return nil
		}
		if !ok {
			return nil
		}
		orig = o
	}
	current, err := r.readDropIn()
	if err != nil {
		s.obs.kubelet = &kubeletObs{err: fmt.Errorf("reading the kubelet drop-in: %w", err), reason: ReasonKubeletInvalid}
		return nil
	}
	if t.Kubelet == nil && bytes.Equal(current, orig) && !inKubeletRestart(s.obs.reboot) {
		// Back as the host had it.
		return nil
	}
	o := &kubeletObs{current: current, desired: orig}
	s.obs.kubelet = o
	if t.Kubelet != nil {
		if o.desired, o.want, err = kubeletWant(t, s.lns.Status.Facts); err != nil {
			o.err, o.reason = fmt.Errorf("spec.tuning.kubelet: %w; the kubelet was not changed", err), ReasonKubeletInvalid
			return nil
		}
	}
	o.hash = dropInHash(o.desired)
	if t.Kubelet != nil {
		// Also while the kubelet restarts: its new checkpoint must cover the online CPUs.
		if o.cpus = r.observeKubeletCPUs(); o.cpus.stale() {
			// A restart for the CPUs is its own attempt: it has a hash of its own.
			o.hash = dropInHash(append(slices.Clone(o.desired), "\nonline CPUs "+o.cpus.online...))
		}
	}
	o.failed = s.lns.Annotations[tsv1.KubeletRestartedForAnnotation] == "failed-"+o.hash
	o.pending = !bytes.Equal(current, o.desired) || o.cpus.stale()
	// The running kubelet must show the drop-in too (a crash between the write and the restart,
	// or a drop-in written by hand, leaves it behind); its values are the settings' Observed.
	have, err := r.cachedConfigz(ctx, o.pending || inKubeletRestart(s.obs.reboot))
	switch {
	case err == nil:
		o.have = have
		for f, v := range o.want {
			if have[f] != v {
				o.pending = true
			}
		}
	case inKubeletRestart(s.obs.reboot):
		// Restarted and not answering yet.
		o.pending = true
	}
	// Not answering outside a restart: nothing to compare, nothing changes.
	if o.failed {
		// The restart for this drop-in is over, and failed: not again.
		o.pending = false
	}
	return nil
}

func inKubeletRestart(rs *tsv1.RebootStatus) bool {
	return rs != nil && rs.Action == tsv1.ActionKubeletRestart && rs.Phase != tsv1.RebootRequested && rs.Phase != tsv1.RebootDrainFailed
}

// kubeletPending reports whether the kubelet needs a restart in the slot.
func (o *observation) kubeletPending() bool {
	return o.kubelet != nil && o.kubelet.pending && o.kubelet.err == nil
}

// switchKubelet stops the kubelet (the drop-in's original content recorded first, once), removes
// the checkpoints and puts content in place (nil: no drop-in); then starts the kubelet when start.
// A failure after the stop starts the kubelet again with what it had.
func (r *Reconciler) switchKubelet(ctx context.Context, content []byte, start bool) error {
	current, err := r.readDropIn()
	if err != nil {
		return fmt.Errorf("reading the kubelet drop-in: %w", err)
	}
	// The host's value before tickstack's first write: kept until the restore.
	if err := r.record("original", current, true); err != nil {
		return fmt.Errorf("recording the kubelet drop-in's original content in %s: %w", KubeletStateDir, err)
	}
	if out, err := r.command(ctx, r.Kubelet.StopCommand).CombinedOutput(); err != nil {
		return fmt.Errorf("stopping the kubelet with %v: %v: %s", r.Kubelet.StopCommand, err, strings.TrimSpace(string(out)))
	}
	fail := func(step error) error {
		// Put back what the kubelet ran with, and start it.
		_ = r.setDropIn(current)
		_ = r.removeCheckpoints()
		if out, err := r.command(ctx, r.Kubelet.StartCommand).CombinedOutput(); err != nil {
			return fmt.Errorf("%w; starting the kubelet again with %v failed too: %v: %s", step, r.Kubelet.StartCommand, err, strings.TrimSpace(string(out)))
		}
		return step
	}
	if err := r.removeCheckpoints(); err != nil {
		return fail(err)
	}
	if err := r.setDropIn(content); err != nil {
		return fail(fmt.Errorf("writing the kubelet drop-in in %s: %w", r.Kubelet.ConfigDir, err))
	}
	if !start {
		return nil
	}
	if out, err := r.command(ctx, r.Kubelet.StartCommand).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("starting the kubelet with %v: %v: %s", r.Kubelet.StartCommand, err, strings.TrimSpace(string(out))))
	}
	return nil
}

func (r *Reconciler) removeCheckpoints() error {
	for _, c := range checkpoints {
		p, err := r.kubeletPath(filepath.Join(r.Kubelet.RootDir, c))
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the kubelet checkpoint %s: %w", p, err)
		}
	}
	return nil
}

// restartKubelet is the slot's work for a kubelet-only change: the switch, then Verifying.
func (r *Reconciler) restartKubelet(ctx context.Context, s *scope) error {
	o := s.obs.kubelet
	if err := r.switchKubelet(ctx, o.desired, true); err != nil {
		return r.kubeletFailed(ctx, s, err, false)
	}
	// Announced once, then recorded: the restarted kubelet may restart this agent's container.
	r.announce(ctx, s, fromState(s, o.hash), corev1.EventTypeNormal, "KubeletRestarted", "RestartKubelet", "drained; the kubelet restarted with the drop-in %s and new CPU and memory manager state", kubeletconf.FileName)
	r.setPhase(s, tsv1.RebootVerifying, "the kubelet restarted with the new drop-in; waiting for its configz to show the new values")
	if err := r.recordReboot(ctx, s); err != nil {
		return err
	}
	s.requeue = r.DrainPoll
	return nil
}

// verifyKubelet waits, after the restart, for configz to show the drop-in's values; past the
// start timeout the previous drop-in goes back.
func (r *Reconciler) verifyKubelet(ctx context.Context, s *scope) error {
	o := s.obs.kubelet
	if since := r.Clock.Since(s.obs.reboot.LastTransitionTime.Time); since > r.Kubelet.StartTimeout {
		msg := "the kubelet did not answer configz"
		if o.have != nil {
			msg = "the kubelet runs with " + diffValues(o.want, o.have)
		}
		return r.kubeletFailed(ctx, s, fmt.Errorf("%s %s after its restart with the drop-in %s (check the kubelet's log)", msg, since.Round(time.Second), kubeletconf.FileName), true)
	}
	s.obs.reboot.Message = "the kubelet restarted; waiting for its configz to show the new values"
	s.requeue = r.DrainPoll
	return nil
}

// kubeletFailed gives up on this drop-in: the previous one goes back (rollback: after a start that
// did not show the new values), the node is uncordoned, and the annotation keeps the agent from
// trying the same drop-in again.
func (r *Reconciler) kubeletFailed(ctx context.Context, s *scope, cause error, rollback bool) error {
	if rollback {
		prev, ok, err := r.recorded("previous")
		if err == nil && ok {
			if err := r.switchKubelet(ctx, prev, true); err != nil {
				cause = fmt.Errorf("%w; putting the previous drop-in back failed: %v", cause, err)
			}
		}
	}
	s.obs.kubelet.restartErr = fmt.Errorf("%v; the kubelet runs with its previous drop-in and the node was uncordoned. Fix the profile's kubelet section (or the kubelet), or remove the annotation %s from the node state to try once more", cause, tsv1.KubeletRestartedForAnnotation)
	r.event(s.lns, corev1.EventTypeWarning, ReasonKubeletRestartFailed, "RestartKubelet", "%v", s.obs.kubelet.restartErr)
	if err := r.annotate(ctx, s, tsv1.KubeletRestartedForAnnotation, "failed-"+s.obs.kubelet.hash); err != nil {
		return err
	}
	if err := r.uncordon(ctx); err != nil {
		return err
	}
	s.obs.reboot = nil
	s.obs.kubelet.pending, s.obs.kubelet.failed = false, true
	return nil
}

func (r *Reconciler) annotate(ctx context.Context, s *scope, key, value string) error {
	if s.lns.Annotations[key] == value {
		return nil
	}
	orig := s.lns.DeepCopy()
	if s.lns.Annotations == nil {
		s.lns.Annotations = map[string]string{}
	}
	s.lns.Annotations[key] = value
	if err := r.Client.Patch(ctx, s.lns, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("annotating node state %s with %s: %w", s.lns.Name, key, err)
	}
	return nil
}

func diffValues(want, have map[string]string) string {
	var parts []string
	for _, f := range kubeletconf.Checked {
		if want[f] != have[f] {
			parts = append(parts, fmt.Sprintf("%s %q (want %q)", f, have[f], want[f]))
		}
	}
	return strings.Join(parts, ", ")
}

// kubeletSettings are the kubelet's entries of status.settings.
func kubeletSettings(o *kubeletObs, inRestart bool) []tsv1.SettingStatus {
	if o == nil || o.err != nil {
		return nil
	}
	var out []tsv1.SettingStatus
	for _, f := range kubeletconf.Checked {
		want, ok := o.want[f]
		if !ok && o.want != nil {
			continue
		}
		s := tsv1.SettingStatus{Name: "kubelet/" + f, Desired: want, State: tsv1.SettingInSync}
		if o.have != nil {
			s.Observed = o.have[f]
		}
		switch {
		case o.failed && s.Observed != want:
			s.State, s.Message = tsv1.SettingFailed, "the kubelet did not come back with this value; the previous drop-in is in place (see Degraded)"
		case o.pending || s.Observed != want:
			s.State, s.Message = tsv1.SettingPendingRestart, "in effect once the kubelet restarts in the node's rollout slot"
			if inRestart {
				s.Message = "the kubelet is restarting with it"
			}
		}
		out = append(out, s)
	}
	if c := o.cpus; c != nil {
		s := tsv1.SettingStatus{Name: "kubelet/cpuManagerCPUs", Desired: c.online, Observed: c.known, State: tsv1.SettingInSync}
		if c.stale() {
			s.State, s.Message = tsv1.SettingPendingRestart, "the kubelet's CPU manager plans with other CPUs than are online (CPUs taken offline or brought back since it started): it restarts with new checkpoints in the node's rollout slot"
			if o.failed {
				s.State, s.Message = tsv1.SettingFailed, "the kubelet restarted for the online CPUs did not come back (see Degraded)"
			}
		}
		out = append(out, s)
	}
	if o.want == nil && o.pending {
		// The profile dropped its kubelet section: the drop-in goes at the next restart.
		out = append(out, tsv1.SettingStatus{Name: "kubelet/" + kubeletconf.FileName, Observed: "present", State: tsv1.SettingPendingRestart, Message: "removed when the kubelet restarts in the node's rollout slot"})
	}
	return out
}

// restoreKubelet puts the drop-in's original content back when the node state goes, with the same
// care as a change (cordon, drain, stop, new checkpoints, start, configz answers, uncordon) but
// without a slot: the profile that owned the budget is gone. done reports that nothing is left.
func (r *Reconciler) restoreKubelet(ctx context.Context, s *scope) (done bool, err error) {
	s.requeue = r.DrainPoll
	if r.Kubelet.ConfigDir == "" {
		return true, nil
	}
	orig, ok, err := r.recorded("original")
	if err != nil {
		return false, err
	}
	if !ok {
		return true, nil
	}
	current, err := r.readDropIn()
	if err != nil {
		return false, err
	}
	rs := s.obs.reboot
	if rs == nil || rs.Action != tsv1.ActionKubeletRestart {
		if bytes.Equal(current, orig) {
			return true, r.forgetKubelet()
		}
		if err := r.cordon(ctx); err != nil {
			return false, err
		}
		r.announce(ctx, s, fromState(s, "restore"), corev1.EventTypeNormal, "Draining", "Restore", "the node state is deleted: draining the node to restart the kubelet with its original settings")
		s.obs.reboot = nil
		r.setPhase(s, tsv1.RebootDraining, "restoring the kubelet's original settings: cordoned; evicting pods")
		s.obs.reboot.Action = tsv1.ActionKubeletRestart
		return false, nil
	}
	switch rs.Phase {
	case tsv1.RebootDrainFailed:
		if r.Clock.Since(rs.LastTransitionTime.Time) < r.DrainRetryBackoff {
			s.requeue = r.DrainRetryBackoff
			return false, nil
		}
		if err := r.cordon(ctx); err != nil {
			return false, err
		}
		r.setPhase(s, tsv1.RebootDraining, "restoring the kubelet's original settings: cordoned again; evicting pods")
		return false, nil
	case tsv1.RebootDraining:
		left, blocking, err := r.evictPods(ctx)
		if err != nil {
			return false, err
		}
		if len(left) > 0 {
			if r.Clock.Since(rs.LastTransitionTime.Time) < r.drainTimeout(s.tuning) {
				rs.Message = fmt.Sprintf("restoring the kubelet's original settings: waiting for %d pods to leave: %s", len(left), abbreviate(left, 5))
				return false, nil
			}
			if err := r.uncordon(ctx); err != nil {
				return false, err
			}
			if blocking == "" {
				blocking = left[0]
			}
			r.setPhase(s, tsv1.RebootDrainFailed, fmt.Sprintf("restoring the kubelet's original settings: the drain timed out on pod %s; uncordoned, trying again in %s", blocking, r.DrainRetryBackoff))
			s.obs.reboot.BlockingPod = blocking
			s.requeue = r.DrainRetryBackoff
			return false, nil
		}
		r.setPhase(s, tsv1.RebootRestartingKubelet, "restoring the kubelet's original settings: restarting the kubelet")
		if err := r.patchStatus(ctx, s); err != nil {
			return false, err
		}
		fallthrough
	case tsv1.RebootRestartingKubelet:
		if err := r.switchKubelet(ctx, orig, true); err != nil {
			return false, err
		}
		r.setPhase(s, tsv1.RebootVerifying, "restoring the kubelet's original settings: waiting for the kubelet to answer")
		return false, nil
	default: // Verifying
		if _, err := r.readConfigz(ctx); err != nil && r.Clock.Since(rs.LastTransitionTime.Time) < r.Kubelet.StartTimeout {
			return false, nil
		} else if err != nil {
			r.event(s.lns, corev1.EventTypeWarning, ReasonKubeletRestartFailed, "Restore", "the kubelet does not answer configz %s after its restart with its original settings (check its log): %v", r.Kubelet.StartTimeout, err)
		}
		r.announce(ctx, s, fromState(s, "restore"), corev1.EventTypeNormal, "KubeletRestored", "Restore", "the kubelet runs with its original settings again")
		s.obs.reboot = nil
		return true, r.forgetKubelet()
	}
}

// forgetKubelet removes the records once the original is back.
func (r *Reconciler) forgetKubelet() error {
	for _, n := range []string{"previous", "original"} {
		if err := os.Remove(r.kubeletState(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
