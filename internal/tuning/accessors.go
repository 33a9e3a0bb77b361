package tuning

import (
	"fmt"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/policy"
)

// accessorsFor returns the accessors of one setting on h.
func accessorsFor(h *host.Host, k settingKey) setting {
	switch k.kind {
	case kindSysctl:
		return sysctlSetting(h, k.name)
	case kindIRQ:
		return irqSetting(h, k.n)
	case kindDefaultIRQAffinity:
		return setSetting(h.DefaultIRQAffinity, h.SetDefaultIRQAffinity)
	case kindIrqbalanceBanned:
		return irqbalanceSetting(h)
	case kindCPUIdle:
		return cpuidleSetting(h, k.n, k.index)
	case kindGovernor:
		return governorSetting(h, k.n)
	case kindTurbo:
		return turboSetting(h)
	case kindTHP:
		return thpSetting(h, k.name)
	case kindWorkqueue:
		return setSetting(h.WorkqueueCPUs, h.SetWorkqueueCPUs)
	case kindQueueCPUs:
		return queueCPUsSetting(h, k.name, k.queue, k.n)
	case kindSMT:
		return smtSetting(h)
	case kindHugepages:
		return hugepagesSetting(h, k.n, k.index)
	case kindNICParam:
		return nicParamSetting(h, k.group, k.name, k.param)
	case kindSRIOVNumVFs:
		return sriovSetting(h, k.name)
	case kindCPUOnline:
		return setting{
			read: func() (string, error) {
				on, err := h.CPUOnline(k.n)
				return map[bool]string{true: "1", false: "0"}[on], err
			},
			write:  func(v string) error { return h.SetCPUOnline(k.n, v == "1") },
			inSync: equal,
			canon:  identity,
		}
	case kindTimeService:
		return setting{
			read:   func() (string, error) { return h.UnitState(k.name) },
			write:  func(v string) error { return h.SetUnitState(k.name, v) },
			inSync: equal,
			canon:  identity,
		}
	}
	panic(fmt.Sprintf("tuning: no accessors for %v", k))
}

func sysctlSetting(h *host.Host, key string) setting {
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
	}
}

func irqSetting(h *host.Host, irq int) setting {
	s := setSetting(func() (cpuset.Set, error) { return h.IRQAffinity(irq) },
		func(c cpuset.Set) error { return h.SetIRQAffinity(irq, c) })
	// An IRQ already confined to some of the housekeeping CPUs is in sync: irqbalance or the
	// driver may spread IRQs among them.
	s.inSync = func(d, o string) bool {
		ds, err1 := cpuset.Parse(d)
		os, err2 := cpuset.Parse(o)
		return err1 == nil && err2 == nil && !os.IsEmpty() && os.IsSubsetOf(ds)
	}
	return s
}

func irqbalanceSetting(h *host.Host) setting {
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
	}
}

func cpuidleSetting(h *host.Host, cpu, st int) setting {
	return setting{
		read: func() (string, error) {
			d, err := h.IdleStateDisabled(cpu, st)
			return map[bool]string{true: "1", false: "0"}[d], err
		},
		write:  func(v string) error { return h.SetIdleStateDisabled(cpu, st, v == "1") },
		inSync: equal,
		canon:  identity,
	}
}

func governorSetting(h *host.Host, cpu int) setting {
	return setting{
		read:   func() (string, error) { return h.Governor(cpu) },
		write:  func(v string) error { return h.SetGovernor(cpu, v) },
		inSync: equal,
		canon:  identity,
	}
}

func turboSetting(h *host.Host) setting {
	return setting{
		read: func() (string, error) {
			on, err := h.Turbo()
			return map[bool]string{true: "enabled", false: "disabled"}[on], err
		},
		write:  func(v string) error { return h.SetTurbo(v == "enabled") },
		inSync: equal,
		canon:  identity,
	}
}

func thpSetting(h *host.Host, file string) setting {
	return setting{
		read: func() (string, error) {
			sel, _, err := h.THP(file)
			return sel, err
		},
		write:  func(v string) error { return h.SetTHP(file, v) },
		inSync: equal,
		canon:  identity,
	}
}

func queueCPUsSetting(h *host.Host, ifname, kind string, q int) setting {
	return setSetting(func() (cpuset.Set, error) { return h.QueueCPUs(ifname, kind, q) },
		func(c cpuset.Set) error { return h.SetQueueCPUs(ifname, kind, q, c) })
}

func smtSetting(h *host.Host) setting {
	return setting{
		read:  h.SMTControl,
		write: h.SetSMTControl,
		// SMT forced off at boot is off.
		inSync: func(d, o string) bool { return d == o || (d == host.SMTOff && o == host.SMTForceOff) },
		canon:  identity,
	}
}

func hugepagesSetting(h *host.Host, node, size int) setting {
	return atoiSetting(func() (int, error) { return h.Hugepages(node, size) },
		func(n int) error { return h.SetHugepages(node, size, n) })
}

func nicParamSetting(h *host.Host, group host.NICGroup, ifname, param string) setting {
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
	})
}

func sriovSetting(h *host.Host, pci string) setting {
	return atoiSetting(func() (int, error) { return h.SRIOVNumVFs(pci) },
		func(n int) error { return h.SetSRIOVNumVFs(pci, n) })
}
