package nriplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/policy"
)

const (
	// DefaultSocketPath is containerd's NRI socket.
	DefaultSocketPath = "/var/run/nri/nri.sock"
	// DefaultPolicyPath is the NodePolicy file the agent writes, on the host.
	DefaultPolicyPath = "/var/lib/tickstack/pod-controls.json"
	// DefaultJournalPath is the plugin's journal of originals and claims, on the host.
	DefaultJournalPath = "/var/lib/tickstack/pod-controls-journal.json"
)

// NodePolicy is what the node's profile allows, written by the agent from its node state
// (spec.tuning.podControls and the CPUs that are never exclusive) into a file on the host that the
// plugin reads at every container it sees: the plugin needs no API access.
type NodePolicy struct {
	// Allow lists the controls the node's profile allows.
	Allow []tsv1.PodControl `json:"allow"`
	// NotExclusiveCPUs are the reserved and shared CPUs: a container whose cpuset holds one of them
	// has no exclusive CPUs (the kubelet's static CPU manager never hands them out).
	NotExclusiveCPUs string `json:"notExclusiveCPUs"`
}

// ReadNodePolicy reads the agent's policy file; a missing file allows nothing.
func ReadNodePolicy(path string) (NodePolicy, error) {
	var p NodePolicy
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("node policy %s: %w", path, err)
	}
	return p, nil
}

// WriteNodePolicy writes the policy file durably; a policy that allows nothing removes it.
func WriteNodePolicy(path string, p NodePolicy) error {
	if len(p.Allow) == 0 {
		return host.RemoveFileDurable(path)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return host.WriteFileAtomic(path, append(b, '\n'), 0o644)
}

// Plugin is the NRI plugin: it hands each container of a pod with per-pod control annotations to
// the Engine before the container is created, and releases it when it stops.
type Plugin struct {
	Engine *Engine
	// PolicyPath is the agent's NodePolicy file.
	PolicyPath string
	Log        *slog.Logger
	// Synchronized, when set, is called after each Synchronize succeeded: the plugin is registered
	// with the runtime and the journal matches the live containers (a readiness signal).
	Synchronized func()
}

// Run connects to the runtime's NRI socket and serves until the connection ends.
func (p *Plugin) Run(ctx context.Context, socket string) error {
	s, err := stub.New(p, stub.WithPluginName(tsv1.NRIPluginName), stub.WithPluginIdx("50"), stub.WithSocketPath(socket))
	if err != nil {
		return fmt.Errorf("nri plugin: %w", err)
	}
	return s.Run(ctx)
}

// claim is what a container asks for, or nil when its pod asks for nothing.
func (p *Plugin) claim(pod *api.PodSandbox, ctr *api.Container) (*Claim, error) {
	req, err := policy.ParsePodControls(pod.GetAnnotations())
	if err != nil {
		return nil, err
	}
	if req.Empty() {
		return nil, nil
	}
	name := pod.GetNamespace() + "/" + pod.GetName() + "/" + ctr.GetName()
	np, err := ReadNodePolicy(p.PolicyPath)
	if err != nil {
		return nil, err
	}
	if err := policy.PodControlsNotAllowed(req, np.Allow, "the profile of this node"); err != nil {
		return nil, fmt.Errorf("container %s: %w", name, err)
	}
	cpu := ctr.GetLinux().GetResources().GetCpu()
	cpus := cpu.GetCpus()
	set, err := cpuset.Parse(cpus)
	shared, _ := cpuset.Parse(np.NotExclusiveCPUs)
	if !wholeCPUs(cpu) && (err != nil || set.IsEmpty() || !set.Intersection(shared).IsEmpty()) {
		// A container of the pod with a fraction of a CPU (the init container the pod webhook
		// adds on a bypass profile, a sidecar) runs on the shared pool: it holds no exclusive
		// CPU, so the pod's controls are not its to apply, and it starts untouched.
		return nil, nil
	}
	if err != nil || set.IsEmpty() {
		return nil, fmt.Errorf("container %s: annotation %s needs exclusive CPUs, and the container has no cpuset (%q): a Guaranteed pod with whole CPUs under the kubelet's static CPU manager has one",
			name, req.Controls()[0].Annotation(), cpus)
	}
	if both := set.Intersection(shared); !both.IsEmpty() {
		return nil, fmt.Errorf("container %s: annotation %s needs exclusive CPUs, and its cpuset %s holds the node's reserved or shared CPUs %s: the container must be Guaranteed with whole CPUs",
			name, req.Controls()[0].Annotation(), set, both)
	}
	return &Claim{Container: ctr.GetId(), Name: name, CPUs: set.String(), Request: req}, nil
}

// wholeCPUs says whether a container asks for a whole number of CPUs: its CPU shares are a
// multiple of 1024 (the kubelet's request in millicores times 1024/1000), at least one. In a
// Guaranteed pod (the pod webhook admits no other with these annotations) such a container gets
// exclusive CPUs from the kubelet's static CPU manager; one with a fraction of a CPU never does.
func wholeCPUs(cpu *api.LinuxCPU) bool {
	sh := cpu.GetShares().GetValue()
	return sh >= 1024 && sh%1024 == 0
}

// CreateContainer applies the pod's controls before the container exists: the runtime waits for
// the answer, so nothing of the container runs before the values are in effect. An error fails
// the creation (the kubelet retries): a pod that asked for quiet CPUs never runs without them.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	c, err := p.claim(pod, ctr)
	if err != nil || c == nil {
		if err != nil {
			p.Log.Error("refusing container", "err", err)
		}
		return nil, nil, err
	}
	if err := p.Engine.Apply(*c); err != nil {
		p.Log.Error("applying per-pod controls", "container", c.Name, "err", err)
		return nil, nil, err
	}
	p.Log.Info("per-pod controls applied", "container", c.Name, "id", c.Container, "cpus", c.CPUs, "controls", c.Request.Controls())
	if !c.Request.DisableCPUQuota {
		return nil, nil, nil
	}
	adj := &api.ContainerAdjustment{}
	adj.SetLinuxCPUQuota(-1)
	return adj, nil, nil
}

// StartContainer applies again just before the process starts (a plugin restarted between create
// and start, a value changed in between).
func (p *Plugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	c, err := p.claim(pod, ctr)
	if err != nil || c == nil {
		return err
	}
	return p.Engine.Apply(*c)
}

// StopContainer puts the node's values back once the container's process is gone.
func (p *Plugin) StopContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, p.release(ctr)
}

// RemoveContainer releases a container that was removed without a stop event.
func (p *Plugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	return p.release(ctr)
}

func (p *Plugin) release(ctr *api.Container) error {
	if err := p.Engine.Release(ctr.GetId()); err != nil {
		p.Log.Error("restoring after container", "id", ctr.GetId(), "err", err)
		return err
	}
	return nil
}

// Synchronize runs when the plugin connects (its start, a restart of the runtime): claims of
// containers that no longer exist (a crash, a reboot of the node) are released, the originals
// written back, and the live claims applied again.
func (p *Plugin) Synchronize(_ context.Context, _ []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	live := map[string]bool{}
	for _, c := range ctrs {
		if c.GetState() != api.ContainerState_CONTAINER_STOPPED {
			live[c.GetId()] = true
		}
	}
	if err := p.Engine.Reconcile(live); err != nil {
		p.Log.Error("reconciling the journal with the live containers", "err", err)
		return nil, err
	}
	p.Log.Info("synchronized with the runtime", "containers", len(ctrs))
	if p.Synchronized != nil {
		p.Synchronized()
	}
	return nil, nil
}
