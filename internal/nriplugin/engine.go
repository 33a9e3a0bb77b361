// Package nriplugin is the node's NRI plugin (containerd 2's Node Resource Interface) that applies
// a latency pod's per-pod runtime controls (docs/agent.md "Per-pod controls") to the container's
// exclusive CPUs before its process starts, and puts the node's values back when it stops.
//
// Engine does the host side: it records every original it is about to change, and each
// container's claim, in a journal of the agent's format (internal/tuning) synced to disk before the
// first write, so a crash, a restart of the plugin or a reboot of the node never loses an original.
// Plugin connects Engine to the runtime's NRI socket (pkg/stub).
package nriplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/policy"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Journal entry name prefixes. A claim's Original holds the claim itself (JSON), the others the
// host value before the plugin first changed it.
const (
	claimPrefix    = "claim/"
	irqPrefix      = "irq/"
	pmqosPrefix    = "pmqos/"
	governorPrefix = "governor/"
	// idlePrefix names cpuidle stateN/disable entries, which earlier versions wrote (they need
	// CAP_SYS_ADMIN, which the plugin's container lacks): still restored from an old journal.
	idlePrefix = "cpuidle/"
)

// Claim is one container's request on its exclusive CPUs.
type Claim struct {
	// Container is the runtime's container ID.
	Container string `json:"container"`
	// Name says which pod and container, for logs ("namespace/pod/container").
	Name string `json:"name"`
	// CPUs are the container's exclusive CPUs (its cpuset).
	CPUs string `json:"cpus"`
	// Request is what the pod's annotations ask for.
	Request policy.PodControlRequest `json:"request"`
}

// Engine applies and restores per-pod controls on one host.
type Engine struct {
	// Host is the machine (its Root is where the host's / is visible).
	Host *host.Host
	// JournalPath is the journal file, on the host (it must survive the plugin's container).
	JournalPath string

	mu sync.Mutex
}

// Claims lists the containers the journal holds claims for.
func (e *Engine) Claims() ([]Claim, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, claims, err := e.load()
	return claims, err
}

// load reads the journal: its entries and the claims among them. The caller holds e.mu.
func (e *Engine) load() ([]tuning.Entry, []Claim, error) {
	entries, err := tuning.LoadJournal(e.JournalPath)
	if err != nil {
		return nil, nil, err
	}
	claims, err := claimsOf(entries)
	return entries, claims, err
}

func claimsOf(entries []tuning.Entry) ([]Claim, error) {
	var out []Claim
	for _, en := range entries {
		if !strings.HasPrefix(en.Name, claimPrefix) {
			continue
		}
		var c Claim
		if err := json.Unmarshal([]byte(en.Original), &c); err != nil {
			return nil, fmt.Errorf("journal entry %s: %w", en.Name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Apply journals the claim and the originals of everything it changes, then writes the values the
// node's claims together ask for. Calling it again for the same container changes nothing more (a
// StartContainer after a CreateContainer, a resync).
func (e *Engine) Apply(c Claim) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	cpus, err := cpuset.Parse(c.CPUs)
	if err != nil || cpus.IsEmpty() {
		return fmt.Errorf("container %s: cpuset %q is not a CPU list", c.Name, c.CPUs)
	}
	entries, claims, err := e.load()
	if err != nil {
		return err
	}
	for _, o := range claims {
		if o.Container == c.Container {
			continue
		}
		if oc, _ := cpuset.Parse(o.CPUs); !oc.Intersection(cpus).IsEmpty() {
			return fmt.Errorf("container %s: CPUs %s are also claimed by container %s (%s): exclusive CPUs cannot be shared", c.Name, cpus.Intersection(oc), o.Name, o.CPUs)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	entries = setEntry(entries, tuning.Entry{Name: claimPrefix + c.Container, Original: string(b)})
	claims = append(slices.DeleteFunc(claims, func(o Claim) bool { return o.Container == c.Container }), c)
	want, err := e.desired(claims, entries)
	if err != nil {
		return fmt.Errorf("container %s: %w", c.Name, err)
	}
	// Originals first, synced, then the writes: a crash in between leaves a journal that restores.
	for _, w := range want {
		if _, ok := findEntry(entries, w.name); !ok {
			cur, err := e.read(w.name)
			if err != nil {
				return fmt.Errorf("container %s: %w", c.Name, err)
			}
			entries = append(entries, tuning.Entry{Name: w.name, Original: cur})
		}
	}
	if err := tuning.SaveJournal(e.JournalPath, entries); err != nil {
		return err
	}
	return e.write(want, c.Name)
}

// Release drops a container's claim and writes back every original no other claim still needs;
// the journal keeps an original until it has been written back.
func (e *Engine) Release(container string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.release(func(id string) bool { return id == container })
}

// Reconcile releases every claim whose container is not in live (the plugin's start, after a
// crash or a reboot of the node: the runtime's Synchronize lists the containers that exist), and
// writes again what the live claims ask for.
func (e *Engine) Reconcile(live map[string]bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.release(func(id string) bool { return !live[id] })
}

func (e *Engine) release(gone func(string) bool) error {
	entries, claims, err := e.load()
	if err != nil {
		return err
	}
	keep := slices.DeleteFunc(slices.Clone(claims), func(c Claim) bool { return gone(c.Container) })
	want, err := e.desired(keep, entries)
	if err != nil {
		return err
	}
	irqClaimed := slices.ContainsFunc(keep, func(c Claim) bool { return c.Request.IRQLoadBalancing != "" })
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.name] = true
	}
	// Write back each original no remaining claim needs, and what the remaining claims ask for.
	var errs []error
	restored := map[string]bool{}
	for _, en := range entries {
		if strings.HasPrefix(en.Name, claimPrefix) || wanted[en.Name] {
			continue
		}
		if en.Refused {
			// A refused IRQ is never wanted (desired skips it), yet it stays journaled while a
			// remaining claim keeps IRQs off its CPUs: it was refused for that claim, and any
			// container's stop (most hold no claim) would otherwise drop the mark.
			if !(strings.HasPrefix(en.Name, irqPrefix) && irqClaimed) {
				restored[en.Name] = true
			}
			continue
		}
		if err := e.set(en.Name, en.Original); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s to %q: %w", en.Name, en.Original, err))
			continue
		}
		restored[en.Name] = true
	}
	if err := e.write(want, "the remaining claims"); err != nil {
		errs = append(errs, err)
	}
	out := slices.DeleteFunc(slices.Clone(entries), func(en tuning.Entry) bool {
		if strings.HasPrefix(en.Name, claimPrefix) {
			return gone(strings.TrimPrefix(en.Name, claimPrefix))
		}
		return restored[en.Name]
	})
	if err := tuning.SaveJournal(e.JournalPath, out); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// value is one host file and what it should hold.
type value struct {
	name  string // journal entry name
	value string
}

// desired is what the claims together ask of the host, in a stable order.
func (e *Engine) desired(claims []Claim, entries []tuning.Entry) ([]value, error) {
	var out []value
	banned := cpuset.New()
	for _, c := range claims {
		if c.Request.IRQLoadBalancing != "" {
			cpus, _ := cpuset.Parse(c.CPUs)
			banned = banned.Union(cpus)
		}
	}
	if !banned.IsEmpty() {
		irqs, err := e.Host.IRQs()
		if err != nil {
			return nil, err
		}
		online, err := e.Host.OnlineCPUs()
		if err != nil {
			return nil, err
		}
		for _, irq := range irqs {
			if !irq.Movable {
				continue
			}
			name := irqPrefix + strconv.Itoa(irq.Number)
			base := irq.Affinity
			if en, ok := findEntry(entries, name); ok {
				if en.Refused {
					continue
				}
				base, _ = cpuset.Parse(en.Original)
			}
			want := base.Difference(banned)
			if want.IsEmpty() {
				want = online.Difference(banned)
			}
			if want.IsEmpty() {
				return nil, fmt.Errorf("irq %d: every online CPU is claimed for irq-load-balancing; no CPU is left for interrupts", irq.Number)
			}
			out = append(out, value{name, want.String()})
		}
	}
	for _, c := range claims {
		cpus, _ := cpuset.Parse(c.CPUs)
		for _, cpu := range cpus.CPUs() {
			// CRI-O's mechanism for cpu-c-states.crio.io: the CPU's PM QoS resume latency limit,
			// which every cpuidle governor honours (cpuidle_governor_latency_req). Writing
			// cpuidle's stateN/disable needs CAP_SYS_ADMIN; this root-owned file needs none.
			if v := resumeLatency(c.Request); v != "" {
				if !e.Host.HasResumeLatency(cpu) {
					return nil, fmt.Errorf("annotation %s: cpu%d has no power/pm_qos_resume_latency_us (Unsupported on this host)", tsv1.CPUCStatesAnnotation, cpu)
				}
				out = append(out, value{fmt.Sprintf("%scpu%d", pmqosPrefix, cpu), v})
			}
			if c.Request.Governor != "" {
				if !e.Host.HasCPUFreq(cpu) {
					return nil, fmt.Errorf("annotation %s: cpu%d has no cpufreq (Unsupported on this host)", tsv1.CPUFreqGovernorAnnotation, cpu)
				}
				avail, err := e.Host.AvailableGovernors(cpu)
				if err != nil {
					return nil, err
				}
				if !slices.Contains(avail, c.Request.Governor) {
					return nil, fmt.Errorf("annotation %s=%s: cpu%d offers the governors %s", tsv1.CPUFreqGovernorAnnotation, c.Request.Governor, cpu, strings.Join(avail, ", "))
				}
				out = append(out, value{fmt.Sprintf("%scpu%d", governorPrefix, cpu), c.Request.Governor})
			}
		}
	}
	return out, nil
}

// resumeLatency is what a request writes to pm_qos_resume_latency_us, "" when it asks nothing.
// The kernel reads "n/a" as a 0 us limit (no idle state with an exit latency: polling only) and
// "0" as no limit (drivers/base/power/sysfs.c pm_qos_resume_latency_us_store), so max_latency:0
// is "n/a" too.
func resumeLatency(r policy.PodControlRequest) string {
	switch r.CStates {
	case "disable":
		return "n/a"
	case "enable":
		return "0"
	case "max_latency":
		if r.CStateMaxLatencyMicroseconds == 0 {
			return "n/a"
		}
		return strconv.Itoa(r.CStateMaxLatencyMicroseconds)
	}
	return ""
}

func boolFile(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// read returns the host's current value of a journal entry's file.
func (e *Engine) read(name string) (string, error) {
	switch {
	case strings.HasPrefix(name, irqPrefix):
		n, err := strconv.Atoi(strings.TrimPrefix(name, irqPrefix))
		if err != nil {
			return "", fmt.Errorf("journal entry %s: %w", name, err)
		}
		s, err := e.Host.IRQAffinity(n)
		return s.String(), err
	case strings.HasPrefix(name, idlePrefix):
		cpu, state, err := parseIdle(name)
		if err != nil {
			return "", err
		}
		d, err := e.Host.IdleStateDisabled(cpu, state)
		return boolFile(d), err
	case strings.HasPrefix(name, pmqosPrefix):
		cpu, err := strconv.Atoi(strings.TrimPrefix(name, pmqosPrefix+"cpu"))
		if err != nil {
			return "", fmt.Errorf("journal entry %s: %w", name, err)
		}
		return e.Host.ResumeLatency(cpu)
	case strings.HasPrefix(name, governorPrefix):
		cpu, err := strconv.Atoi(strings.TrimPrefix(name, governorPrefix+"cpu"))
		if err != nil {
			return "", fmt.Errorf("journal entry %s: %w", name, err)
		}
		return e.Host.Governor(cpu)
	}
	return "", fmt.Errorf("journal entry %s: unknown setting", name)
}

// set writes a journal entry's file.
func (e *Engine) set(name, v string) error {
	switch {
	case strings.HasPrefix(name, irqPrefix):
		n, err := strconv.Atoi(strings.TrimPrefix(name, irqPrefix))
		if err != nil {
			return fmt.Errorf("journal entry %s: %w", name, err)
		}
		s, err := cpuset.Parse(v)
		if err != nil {
			return fmt.Errorf("journal entry %s: %w", name, err)
		}
		return e.Host.SetIRQAffinity(n, s)
	case strings.HasPrefix(name, idlePrefix):
		cpu, state, err := parseIdle(name)
		if err != nil {
			return err
		}
		return e.Host.SetIdleStateDisabled(cpu, state, v == "1")
	case strings.HasPrefix(name, pmqosPrefix):
		cpu, err := strconv.Atoi(strings.TrimPrefix(name, pmqosPrefix+"cpu"))
		if err != nil {
			return fmt.Errorf("journal entry %s: %w", name, err)
		}
		return e.Host.SetResumeLatency(cpu, v)
	case strings.HasPrefix(name, governorPrefix):
		cpu, err := strconv.Atoi(strings.TrimPrefix(name, governorPrefix+"cpu"))
		if err != nil {
			return fmt.Errorf("journal entry %s: %w", name, err)
		}
		return e.Host.SetGovernor(cpu, v)
	}
	return fmt.Errorf("journal entry %s: unknown setting", name)
}

// write sets every value that differs from the host's. An IRQ the kernel refuses to move (a
// managed IRQ, whose affinity the kernel spreads itself) is skipped and marked Refused in the
// journal; any other failure is an error.
func (e *Engine) write(want []value, who string) error {
	var refused []string
	for _, w := range want {
		cur, err := e.read(w.name)
		if err == nil && cur == w.value {
			continue
		}
		if err := e.set(w.name, w.value); err != nil {
			if strings.HasPrefix(w.name, irqPrefix) && host.IsNotMovable(err) {
				refused = append(refused, w.name)
				continue
			}
			return fmt.Errorf("%s: setting %s to %s: %w", who, w.name, w.value, err)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	entries, err := tuning.LoadJournal(e.JournalPath)
	if err != nil {
		return err
	}
	for i := range entries {
		if slices.Contains(refused, entries[i].Name) {
			entries[i].Refused = true
		}
	}
	return tuning.SaveJournal(e.JournalPath, entries)
}

func parseIdle(name string) (cpu, state int, err error) {
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, idlePrefix), "cpu%d/state%d", &cpu, &state); err != nil {
		return 0, 0, fmt.Errorf("journal entry %s: %w", name, err)
	}
	return cpu, state, nil
}

func findEntry(entries []tuning.Entry, name string) (tuning.Entry, bool) {
	for _, en := range entries {
		if en.Name == name {
			return en, true
		}
	}
	return tuning.Entry{}, false
}

func setEntry(entries []tuning.Entry, en tuning.Entry) []tuning.Entry {
	for i := range entries {
		if entries[i].Name == en.Name {
			entries[i] = en
			return entries
		}
	}
	return append(entries, en)
}
