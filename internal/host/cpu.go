package host

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// OnlineCPUs reads /sys/devices/system/cpu/online.
func (h *Host) OnlineCPUs() (cpuset.Set, error) {
	v, err := h.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return cpuset.Set{}, err
	}
	return cpuset.Parse(v)
}

// numbered is a path whose last element is a prefix and a number (cpu3/cpuidle/state2, node0,
// /proc/irq/19).
type numbered struct {
	path string
	n    int
}

// globNumbered globs pattern and returns the matches whose last element is prefix and a number,
// in ascending order of the number (the glob's order is the names', where 10 comes before 2).
func (h *Host) globNumbered(pattern, prefix string) ([]numbered, error) {
	paths, err := h.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []numbered
	for _, p := range paths {
		if n, err := strconv.Atoi(strings.TrimPrefix(path.Base(p), prefix)); err == nil {
			out = append(out, numbered{p, n})
		}
	}
	slices.SortFunc(out, func(a, b numbered) int { return a.n - b.n })
	return out, nil
}

// IdleState is one cpuidle state of one CPU.
type IdleState struct {
	// Index is the N of stateN.
	Index int
	// Name is the driver's name for it ("POLL", "C1", "C6", "haltpoll idle").
	Name string
	// LatencyUs is the exit latency in microseconds.
	LatencyUs int
	// Disabled is the state of the disable file.
	Disabled bool
}

func idlePath(cpu, state int, file string) string {
	return fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state%d/%s", cpu, state, file)
}

// IdleStates lists a CPU's cpuidle states in index order; a CPU without cpuidle has none.
func (h *Host) IdleStates(cpu int) ([]IdleState, error) {
	dirs, err := h.globNumbered(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state[0-9]*", cpu), "state")
	if err != nil {
		return nil, err
	}
	var out []IdleState
	for _, nd := range dirs {
		d, idx := nd.path, nd.n
		st := IdleState{Index: idx}
		if st.Name, err = h.ReadFile(d + "/name"); err != nil {
			return nil, err
		}
		lat, err := h.ReadFile(d + "/latency")
		if err != nil {
			return nil, err
		}
		if st.LatencyUs, err = strconv.Atoi(lat); err != nil {
			return nil, fmt.Errorf("%s/latency: %w", d, err)
		}
		if st.Disabled, err = h.IdleStateDisabled(cpu, idx); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// IdleStateDisabled reads a cpuidle state's disable file.
func (h *Host) IdleStateDisabled(cpu, state int) (bool, error) {
	v, err := h.ReadFile(idlePath(cpu, state, "disable"))
	if err != nil {
		return false, err
	}
	return v == "1", nil
}

// SetIdleStateDisabled writes a cpuidle state's disable file.
func (h *Host) SetIdleStateDisabled(cpu, state int, disabled bool) error {
	v := "0"
	if disabled {
		v = "1"
	}
	return h.WriteFile(idlePath(cpu, state, "disable"), v)
}

// resumeLatencyPath is a CPU's PM QoS resume latency limit, in microseconds, that the cpuidle
// governors honour (cpuidle_governor_latency_req): no idle state whose exit latency is above it.
func resumeLatencyPath(cpu int) string {
	return fmt.Sprintf("/sys/devices/system/cpu/cpu%d/power/pm_qos_resume_latency_us", cpu)
}

// HasResumeLatency reports whether the CPU exposes its PM QoS resume latency limit.
func (h *Host) HasResumeLatency(cpu int) bool { return h.Exists(resumeLatencyPath(cpu)) }

// ResumeLatency reads a CPU's pm_qos_resume_latency_us as the kernel shows it: "0" for no
// constraint, "n/a" for a 0 us one (polling only), else the limit in microseconds.
func (h *Host) ResumeLatency(cpu int) (string, error) {
	return h.readCPUKnob(cpu, resumeLatencyPath(cpu), "pm_qos_resume_latency_us", "")
}

// SetResumeLatency writes a CPU's pm_qos_resume_latency_us ("0", "n/a" or microseconds). The file
// is root's and needs no capability (cpuidle's stateN/disable needs CAP_SYS_ADMIN).
func (h *Host) SetResumeLatency(cpu int, v string) error {
	return h.writeCPUKnob(cpu, resumeLatencyPath(cpu), "pm_qos_resume_latency_us", "", v)
}

func governorPath(cpu int) string {
	return fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu)
}

// HasCPUFreq reports whether the CPU has a cpufreq policy (absent in most VMs).
func (h *Host) HasCPUFreq(cpu int) bool { return h.Exists(governorPath(cpu)) }

// Governor reads a CPU's scaling governor; ErrUnsupported without cpufreq.
func (h *Host) Governor(cpu int) (string, error) {
	return h.readCPUKnob(cpu, governorPath(cpu), "governor", " (no cpufreq)")
}

// AvailableGovernors lists the governors a CPU offers.
func (h *Host) AvailableGovernors(cpu int) ([]string, error) {
	v, err := h.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpufreq/scaling_available_governors", cpu))
	if err != nil {
		return nil, err
	}
	return strings.Fields(v), nil
}

// SetGovernor writes a CPU's scaling governor.
func (h *Host) SetGovernor(cpu int, governor string) error {
	return h.writeCPUKnob(cpu, governorPath(cpu), "governor", " (no cpufreq)", governor)
}

// readCPUKnob reads p, a CPU's file that some CPUs lack (then ErrUnsupported, naming the file as
// what, with why).
func (h *Host) readCPUKnob(cpu int, p, what, why string) (string, error) {
	if !h.Exists(p) {
		return "", fmt.Errorf("cpu%d %s: %w%s", cpu, what, ErrUnsupported, why)
	}
	return h.ReadFile(p)
}

// writeCPUKnob writes v into p, a CPU's file that some CPUs lack (then ErrUnsupported, naming the
// file as what, with why).
func (h *Host) writeCPUKnob(cpu int, p, what, why, v string) error {
	if !h.Exists(p) {
		return fmt.Errorf("cpu%d %s: %w%s", cpu, what, ErrUnsupported, why)
	}
	return h.WriteFile(p, v)
}

const (
	intelNoTurbo = "/sys/devices/system/cpu/intel_pstate/no_turbo"
	cpufreqBoost = "/sys/devices/system/cpu/cpufreq/boost"
)

// Turbo reports whether turbo/boost is enabled, through intel_pstate's no_turbo or the generic
// cpufreq boost file; ErrUnsupported when neither exists.
func (h *Host) Turbo() (bool, error) {
	if v, err := h.ReadFile(intelNoTurbo); err == nil {
		return v == "0", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if v, err := h.ReadFile(cpufreqBoost); err == nil {
		return v == "1", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return false, fmt.Errorf("turbo: %w (neither intel_pstate/no_turbo nor cpufreq/boost)", ErrUnsupported)
}

// SetTurbo enables or disables turbo/boost.
func (h *Host) SetTurbo(enabled bool) error {
	if h.Exists(intelNoTurbo) {
		return h.WriteFile(intelNoTurbo, map[bool]string{true: "0", false: "1"}[enabled])
	}
	if h.Exists(cpufreqBoost) {
		return h.WriteFile(cpufreqBoost, map[bool]string{true: "1", false: "0"}[enabled])
	}
	return fmt.Errorf("turbo: %w (neither intel_pstate/no_turbo nor cpufreq/boost)", ErrUnsupported)
}

const workqueueMask = "/sys/devices/virtual/workqueue/cpumask"

// WorkqueueCPUs reads the CPUs unbound workqueues may run on.
func (h *Host) WorkqueueCPUs() (cpuset.Set, error) { return h.readMask(workqueueMask) }

// SetWorkqueueCPUs writes the unbound workqueue cpumask.
func (h *Host) SetWorkqueueCPUs(cpus cpuset.Set) error {
	return h.writeNonEmptyMask(workqueueMask, "workqueue cpumask", cpus)
}

// readMask reads a file that holds a CPU set as a hex mask.
func (h *Host) readMask(p string) (cpuset.Set, error) {
	v, err := h.ReadFile(p)
	if err != nil {
		return cpuset.Set{}, err
	}
	return cpuset.ParseMask(v)
}

// writeNonEmptyMask writes a CPU set as a hex mask into a file where an empty set would leave the
// work it places (unbound workqueues, new IRQs) no CPU; it refuses one, naming the file as what.
func (h *Host) writeNonEmptyMask(p, what string, cpus cpuset.Set) error {
	if cpus.IsEmpty() {
		return fmt.Errorf("%s: refusing an empty CPU set", what)
	}
	return h.WriteFile(p, cpus.Mask())
}

const smtControl = "/sys/devices/system/cpu/smt/control"

// SMT control values of /sys/devices/system/cpu/smt/control.
const (
	SMTOn             = "on"
	SMTOff            = "off"
	SMTForceOff       = "forceoff"
	SMTNotSupported   = "notsupported"
	SMTNotImplemented = "notimplemented"
)

// SMTControl reads the runtime SMT control: on, off, forceoff (nosmt=force at boot),
// notsupported (no SMT siblings) or notimplemented. A kernel without the file reads as
// notimplemented.
func (h *Host) SMTControl() (string, error) {
	v, err := h.ReadFile(smtControl)
	if errors.Is(err, os.ErrNotExist) {
		return SMTNotImplemented, nil
	}
	return v, err
}

// SetSMTControl turns SMT on or off at runtime: "off" takes every sibling thread offline.
func (h *Host) SetSMTControl(v string) error {
	if v != SMTOn && v != SMTOff {
		return fmt.Errorf("smt control %q: use %q or %q", v, SMTOn, SMTOff)
	}
	return h.WriteFile(smtControl, v)
}

func cpuOnlinePath(cpu int) string {
	return fmt.Sprintf("/sys/devices/system/cpu/cpu%d/online", cpu)
}

// PresentCPUs reads /sys/devices/system/cpu/present: the CPUs the machine has, online or not.
func (h *Host) PresentCPUs() (cpuset.Set, error) {
	v, err := h.ReadFile("/sys/devices/system/cpu/present")
	if err != nil {
		return cpuset.Set{}, err
	}
	return cpuset.Parse(v)
}

// HotpluggableCPUs lists the CPUs that have an online file (cpuN/online), online or offline:
// those the kernel can take offline and back. CPU 0 often has none.
func (h *Host) HotpluggableCPUs() (cpuset.Set, error) {
	files, err := h.Glob("/sys/devices/system/cpu/cpu[0-9]*/online")
	if err != nil {
		return cpuset.Set{}, err
	}
	var ids []int
	for _, f := range files {
		if n, err := strconv.Atoi(strings.TrimPrefix(path.Base(path.Dir(f)), "cpu")); err == nil {
			ids = append(ids, n)
		}
	}
	return cpuset.New(ids...), nil
}

// HasCPUOnline reports whether the CPU can be taken offline (it has an online file).
func (h *Host) HasCPUOnline(cpu int) bool { return h.Exists(cpuOnlinePath(cpu)) }

// CPUOnline reads a CPU's hotplug state from cpuN/online.
func (h *Host) CPUOnline(cpu int) (bool, error) {
	v, err := h.ReadFile(cpuOnlinePath(cpu))
	if err != nil {
		return false, err
	}
	return v == "1", nil
}

// SetCPUOnline takes a CPU offline or brings it back (CPU hotplug): the kernel migrates its
// tasks, timers and interrupts to the other online CPUs first.
func (h *Host) SetCPUOnline(cpu int, online bool) error {
	return h.WriteFile(cpuOnlinePath(cpu), map[bool]string{true: "1", false: "0"}[online])
}
