package tuning

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/policy"
)

// settingName is a setting's name split at its slashes, kind first.
type settingName struct {
	name  string
	parts []string
}

func (n settingName) bad() error {
	return fmt.Errorf("setting name %q is not one this agent knows", n.name)
}

// num reads a number after prefix ("cpu3" with prefix "cpu": 3).
func (n settingName) num(s, prefix string) (int, error) {
	if !strings.HasPrefix(s, prefix) {
		return 0, n.bad()
	}
	v, err := strconv.Atoi(strings.TrimPrefix(s, prefix))
	if err != nil || v < 0 {
		return 0, n.bad()
	}
	return v, nil
}

// accessorsFor maps a setting name to its accessors on h. Names are the ones the journal keeps
// (kind/key): sysctl/<key>, irq/<n>, irq/default_smp_affinity, irqbalance/banned-cpus,
// cpuidle/cpu<N>/state<M>, cpufreq/cpu<N>/governor, cpufreq/turbo, thp/enabled, thp/defrag,
// workqueue/cpumask, rps/<if>/rx-<q>, xps/<if>/tx-<q>, hugepages/node<N>|all/<size>kB, smt/control,
// channels|rings|coalesce/<if>/<param>, sriov/<pci>/numvfs.
func accessorsFor(h *host.Host, name string) (setting, error) {
	n := settingName{name: name, parts: strings.Split(name, "/")}
	switch {
	case n.parts[0] == "sysctl" && len(n.parts) == 2:
		return sysctlSetting(h, n)
	case n.name == "irq/default_smp_affinity":
		return defaultIRQAffinitySetting(h, n)
	case n.parts[0] == "irq" && len(n.parts) == 2:
		return irqSetting(h, n)
	case n.name == "irqbalance/banned-cpus":
		return irqbalanceSetting(h, n)
	case n.parts[0] == "cpuidle" && len(n.parts) == 3:
		return cpuidleSetting(h, n)
	case n.parts[0] == "cpufreq" && len(n.parts) == 3 && n.parts[2] == "governor":
		return governorSetting(h, n)
	case n.name == "cpufreq/turbo":
		return turboSetting(h, n)
	case n.parts[0] == "thp" && len(n.parts) == 2 && (n.parts[1] == host.THPEnabled || n.parts[1] == host.THPDefrag):
		return thpSetting(h, n)
	case n.name == "workqueue/cpumask":
		return workqueueSetting(h, n)
	case (n.parts[0] == "rps" || n.parts[0] == "xps") && len(n.parts) == 3:
		return queueCPUsSetting(h, n)
	case n.name == "smt/control":
		return smtSetting(h, n)
	case n.parts[0] == "hugepages" && len(n.parts) == 3 && strings.HasSuffix(n.parts[2], "kB"):
		return hugepagesSetting(h, n)
	case (n.parts[0] == string(host.Channels) || n.parts[0] == string(host.Rings) || n.parts[0] == string(host.Coalesce)) && len(n.parts) == 3:
		return nicParamSetting(h, n)
	case n.parts[0] == "sriov" && len(n.parts) == 3 && n.parts[2] == "numvfs":
		return sriovSetting(h, n)
	}
	return setting{}, n.bad()
}

func sysctlSetting(h *host.Host, n settingName) (setting, error) {
	key := n.parts[1]
	canon := func(v string) (string, error) { return host.NormalizeSysctl(v), nil }
	if info, ok := policy.AllowedSysctls()[key]; ok && info.Kind == policy.CPUList {
		canon = canonList
	}
	return setting{
		read: func() (string, error) {
			v, err := h.Sysctl(key)
			if err != nil {
				return "", err
			}
			return canon(v)
		},
		write:  func(v string) error { return h.SetSysctl(key, v) },
		inSync: equal,
		canon:  canon,
	}, nil
}

func defaultIRQAffinitySetting(h *host.Host, n settingName) (setting, error) {
	return setSetting(h.DefaultIRQAffinity, h.SetDefaultIRQAffinity), nil
}

func irqSetting(h *host.Host, n settingName) (setting, error) {
	irq, err := n.num(n.parts[1], "")
	if err != nil {
		return setting{}, err
	}
	s := setSetting(func() (cpuset.Set, error) { return h.IRQAffinity(irq) },
		func(c cpuset.Set) error { return h.SetIRQAffinity(irq, c) })
	// An IRQ already confined to some of the housekeeping CPUs is in sync: irqbalance or the
	// driver may spread IRQs among them.
	s.inSync = func(d, o string) bool {
		ds, err1 := cpuset.Parse(d)
		os, err2 := cpuset.Parse(o)
		return err1 == nil && err2 == nil && !os.IsEmpty() && os.IsSubsetOf(ds)
	}
	return s, nil
}

func irqbalanceSetting(h *host.Host, n settingName) (setting, error) {
	return setting{
		read: func() (string, error) {
			v, ok, err := h.IrqbalanceBannedCPUs()
			if err != nil || !ok {
				return Absent, err
			}
			if c, err := cpuset.Parse(v); err == nil {
				return c.String(), nil
			}
			return v, nil
		},
		write: func(v string) error {
			if v == Absent {
				return h.UnsetIrqbalanceBannedCPUs()
			}
			c, err := cpuset.Parse(v)
			if err != nil {
				return err
			}
			return h.SetIrqbalanceBannedCPUs(c)
		},
		inSync: equal,
		canon:  canonList,
	}, nil
}

func cpuidleSetting(h *host.Host, n settingName) (setting, error) {
	cpu, err1 := n.num(n.parts[1], "cpu")
	st, err2 := n.num(n.parts[2], "state")
	if err1 != nil || err2 != nil {
		return setting{}, n.bad()
	}
	return setting{
		read: func() (string, error) {
			d, err := h.IdleStateDisabled(cpu, st)
			return map[bool]string{true: "1", false: "0"}[d], err
		},
		write:  func(v string) error { return h.SetIdleStateDisabled(cpu, st, v == "1") },
		inSync: equal,
		canon:  identity,
	}, nil
}

func governorSetting(h *host.Host, n settingName) (setting, error) {
	cpu, err := n.num(n.parts[1], "cpu")
	if err != nil {
		return setting{}, err
	}
	return setting{
		read:   func() (string, error) { return h.Governor(cpu) },
		write:  func(v string) error { return h.SetGovernor(cpu, v) },
		inSync: equal,
		canon:  identity,
	}, nil
}

func turboSetting(h *host.Host, n settingName) (setting, error) {
	return setting{
		read: func() (string, error) {
			on, err := h.Turbo()
			return map[bool]string{true: "enabled", false: "disabled"}[on], err
		},
		write:  func(v string) error { return h.SetTurbo(v == "enabled") },
		inSync: equal,
		canon:  identity,
	}, nil
}

func thpSetting(h *host.Host, n settingName) (setting, error) {
	file := n.parts[1]
	return setting{
		read: func() (string, error) {
			sel, _, err := h.THP(file)
			return sel, err
		},
		write:  func(v string) error { return h.SetTHP(file, v) },
		inSync: equal,
		canon:  identity,
	}, nil
}

func workqueueSetting(h *host.Host, n settingName) (setting, error) {
	return setSetting(h.WorkqueueCPUs, h.SetWorkqueueCPUs), nil
}

func queueCPUsSetting(h *host.Host, n settingName) (setting, error) {
	kind := map[string]string{"rps": host.RXQueue, "xps": host.TXQueue}[n.parts[0]]
	q, err := n.num(n.parts[2], kind+"-")
	if err != nil {
		return setting{}, err
	}
	ifname := n.parts[1]
	return setSetting(func() (cpuset.Set, error) { return h.QueueCPUs(ifname, kind, q) },
		func(c cpuset.Set) error { return h.SetQueueCPUs(ifname, kind, q, c) }), nil
}

func smtSetting(h *host.Host, n settingName) (setting, error) {
	return setting{
		read:  h.SMTControl,
		write: h.SetSMTControl,
		// SMT forced off at boot is off.
		inSync: func(d, o string) bool { return d == o || (d == host.SMTOff && o == host.SMTForceOff) },
		canon:  identity,
	}, nil
}

func hugepagesSetting(h *host.Host, n settingName) (setting, error) {
	node, err1 := host.AnyNode, error(nil)
	if n.parts[1] != "all" {
		node, err1 = n.num(n.parts[1], "node")
	}
	size, err2 := strconv.Atoi(strings.TrimSuffix(n.parts[2], "kB"))
	if err1 != nil || err2 != nil {
		return setting{}, n.bad()
	}
	return atoiSetting(func() (int, error) { return h.Hugepages(node, size) },
		func(n int) error { return h.SetHugepages(node, size, n) }), nil
}

func nicParamSetting(h *host.Host, n settingName) (setting, error) {
	group, ifname, param := host.NICGroup(n.parts[0]), n.parts[1], n.parts[2]
	return atoiSetting(func() (int, error) {
		m, err := h.NICParams(ifname, group)
		if err != nil {
			return 0, err
		}
		v, ok := m[param]
		if !ok {
			return 0, fmt.Errorf("%s %s: the driver does not report %q: %w", ifname, group, param, host.ErrUnsupported)
		}
		return int(v), nil
	}, func(n int) error {
		return h.SetNICParams(ifname, group, map[string]uint32{param: uint32(n)})
	}), nil
}

func sriovSetting(h *host.Host, n settingName) (setting, error) {
	pci := n.parts[1]
	return atoiSetting(func() (int, error) { return h.SRIOVNumVFs(pci) },
		func(n int) error { return h.SetSRIOVNumVFs(pci, n) }), nil
}
