package tuning

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/policy"
)

// Absent is the journaled original of a setting that did not exist (an unset irqbalance
// variable): restoring it removes the setting.
const Absent = "<absent>"

// setting is one value on the host, addressed by a stable name such as "sysctl/vm.stat_interval"
// or "irq/26". read returns the value in canonical form; inSync compares a desired value with
// an observed one (equality unless the setting says otherwise).
type setting struct {
	read   func() (string, error)
	write  func(string) error
	inSync func(desired, observed string) bool
	// canon puts a desired value in the form read returns.
	canon func(string) (string, error)
}

func equal(d, o string) bool { return d == o }

func identity(v string) (string, error) { return v, nil }

func canonList(v string) (string, error) {
	s, err := cpuset.Parse(v)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

func atoiSetting(read func() (int, error), write func(int) error) setting {
	return setting{
		read: func() (string, error) {
			n, err := read()
			return strconv.Itoa(n), err
		},
		write: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			return write(n)
		},
		inSync: equal,
		canon: func(v string) (string, error) {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return strconv.Itoa(n), err
		},
	}
}

func setSetting(read func() (cpuset.Set, error), write func(cpuset.Set) error) setting {
	return setting{
		read: func() (string, error) {
			s, err := read()
			return s.String(), err
		},
		write: func(v string) error {
			s, err := cpuset.Parse(v)
			if err != nil {
				return err
			}
			return write(s)
		},
		inSync: equal,
		canon:  canonList,
	}
}

// resolve maps a setting name to its accessors on h. Names are
// kind/key: sysctl/<key>, irq/<n>, irq/default_smp_affinity, irqbalance/banned-cpus,
// cpuidle/cpu<N>/state<M>, cpufreq/cpu<N>/governor, cpufreq/turbo, thp/enabled, thp/defrag,
// workqueue/cpumask, rps/<if>/rx-<q>, xps/<if>/tx-<q>, hugepages/node<N>|all/<size>kB, smt/control,
// channels|rings|coalesce/<if>/<param>, sriov/<pci>/numvfs.
func resolve(h *host.Host, name string) (setting, error) {
	parts := strings.Split(name, "/")
	bad := fmt.Errorf("setting name %q is not one this agent knows", name)
	num := func(s, prefix string) (int, error) {
		if !strings.HasPrefix(s, prefix) {
			return 0, bad
		}
		n, err := strconv.Atoi(strings.TrimPrefix(s, prefix))
		if err != nil || n < 0 {
			return 0, bad
		}
		return n, nil
	}
	switch {
	case parts[0] == "sysctl" && len(parts) == 2:
		key := parts[1]
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
	case name == "irq/default_smp_affinity":
		return setSetting(h.DefaultIRQAffinity, h.SetDefaultIRQAffinity), nil
	case parts[0] == "irq" && len(parts) == 2:
		n, err := num(parts[1], "")
		if err != nil {
			return setting{}, err
		}
		s := setSetting(func() (cpuset.Set, error) { return h.IRQAffinity(n) },
			func(c cpuset.Set) error { return h.SetIRQAffinity(n, c) })
		// An IRQ already confined to some of the housekeeping CPUs is in sync: irqbalance or the
		// driver may spread IRQs among them.
		s.inSync = func(d, o string) bool {
			ds, err1 := cpuset.Parse(d)
			os, err2 := cpuset.Parse(o)
			return err1 == nil && err2 == nil && !os.IsEmpty() && os.IsSubsetOf(ds)
		}
		return s, nil
	case name == "irqbalance/banned-cpus":
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
	case parts[0] == "cpuidle" && len(parts) == 3:
		cpu, err1 := num(parts[1], "cpu")
		st, err2 := num(parts[2], "state")
		if err1 != nil || err2 != nil {
			return setting{}, bad
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
	case parts[0] == "cpufreq" && len(parts) == 3 && parts[2] == "governor":
		cpu, err := num(parts[1], "cpu")
		if err != nil {
			return setting{}, err
		}
		return setting{
			read:   func() (string, error) { return h.Governor(cpu) },
			write:  func(v string) error { return h.SetGovernor(cpu, v) },
			inSync: equal,
			canon:  identity,
		}, nil
	case name == "cpufreq/turbo":
		return setting{
			read: func() (string, error) {
				on, err := h.Turbo()
				return map[bool]string{true: "enabled", false: "disabled"}[on], err
			},
			write:  func(v string) error { return h.SetTurbo(v == "enabled") },
			inSync: equal,
			canon:  identity,
		}, nil
	case parts[0] == "thp" && len(parts) == 2 && (parts[1] == host.THPEnabled || parts[1] == host.THPDefrag):
		file := parts[1]
		return setting{
			read: func() (string, error) {
				sel, _, err := h.THP(file)
				return sel, err
			},
			write:  func(v string) error { return h.SetTHP(file, v) },
			inSync: equal,
			canon:  identity,
		}, nil
	case name == "workqueue/cpumask":
		return setSetting(h.WorkqueueCPUs, h.SetWorkqueueCPUs), nil
	case (parts[0] == "rps" || parts[0] == "xps") && len(parts) == 3:
		kind := map[string]string{"rps": host.RXQueue, "xps": host.TXQueue}[parts[0]]
		q, err := num(parts[2], kind+"-")
		if err != nil {
			return setting{}, err
		}
		ifname := parts[1]
		return setSetting(func() (cpuset.Set, error) { return h.QueueCPUs(ifname, kind, q) },
			func(c cpuset.Set) error { return h.SetQueueCPUs(ifname, kind, q, c) }), nil
	case name == "smt/control":
		return setting{
			read:  h.SMTControl,
			write: h.SetSMTControl,
			// SMT forced off at boot is off.
			inSync: func(d, o string) bool { return d == o || (d == host.SMTOff && o == host.SMTForceOff) },
			canon:  identity,
		}, nil
	case parts[0] == "hugepages" && len(parts) == 3 && strings.HasSuffix(parts[2], "kB"):
		node, err1 := host.AnyNode, error(nil)
		if parts[1] != "all" {
			node, err1 = num(parts[1], "node")
		}
		size, err2 := strconv.Atoi(strings.TrimSuffix(parts[2], "kB"))
		if err1 != nil || err2 != nil {
			return setting{}, bad
		}
		return atoiSetting(func() (int, error) { return h.Hugepages(node, size) },
			func(n int) error { return h.SetHugepages(node, size, n) }), nil
	case (parts[0] == string(host.Channels) || parts[0] == string(host.Rings) || parts[0] == string(host.Coalesce)) && len(parts) == 3:
		group, ifname, param := host.NICGroup(parts[0]), parts[1], parts[2]
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
	case parts[0] == "sriov" && len(parts) == 3 && parts[2] == "numvfs":
		pci := parts[1]
		return atoiSetting(func() (int, error) { return h.SRIOVNumVFs(pci) },
			func(n int) error { return h.SetSRIOVNumVFs(pci, n) }), nil
	}
	return setting{}, bad
}
