package tuning

import (
	"testing"

	"github.com/tickstack/tickstack/internal/host"
)

// TestSettingKeys: every kind of key reads back from its name (the journal's form), and the names
// are the ones earlier agents journaled.
func TestSettingKeys(t *testing.T) {
	for _, c := range []struct {
		key  settingKey
		name string
	}{
		{sysctlKey("vm.stat_interval"), "sysctl/vm.stat_interval"},
		{irqKey(26), "irq/26"},
		{defaultIRQAffinityKey, "irq/default_smp_affinity"},
		{irqbalanceBannedKey, "irqbalance/banned-cpus"},
		{cpuIdleKey(3, 2), "cpuidle/cpu3/state2"},
		{cpuIdleNoStatesKey(1), "cpuidle/cpu1"},
		{governorKey(1), "cpufreq/cpu1/governor"},
		{turboKey, "cpufreq/turbo"},
		{thpKey(host.THPDefrag), "thp/defrag"},
		{workqueueKey, "workqueue/cpumask"},
		{queueCPUsKey("ens1f0", host.RXQueue, 1), "rps/ens1f0/rx-1"},
		{queueCPUsKey("ens1f0", host.TXQueue, 0), "xps/ens1f0/tx-0"},
		{smtKey, "smt/control"},
		{hugepagesKey(host.AnyNode, 2048), "hugepages/all/2048kB"},
		{hugepagesKey(1, 1048576), "hugepages/node1/1048576kB"},
		{nicParamKey(host.Rings, "ens1f0", "rx"), "rings/ens1f0/rx"},
		{sriovKey("0000:3b:00.0"), "sriov/0000:3b:00.0/numvfs"},
		{timeServiceKey("chrony.service"), "timeservice/chrony.service"},
		{cpuOnlineKey(5), "hotplug/cpu5/online"},
	} {
		if got := c.key.String(); got != c.name {
			t.Errorf("%+v: name %q, want %q", c.key, got, c.name)
		}
		back, err := parseSettingKey(c.name)
		if err != nil || back != c.key {
			t.Errorf("parseSettingKey(%q) = %+v, %v; want %+v", c.name, back, err, c.key)
		}
	}
	for _, bad := range []string{"", "sysctl", "irq/x", "cpuidle/cpux", "cpuidle/1/state2", "thp/other", "rps/ens1f0/tx-1", "hugepages/nodeX/2048kB", "hugepages/all/2048", "nosuch/thing"} {
		if k, err := parseSettingKey(bad); err == nil {
			t.Errorf("parseSettingKey(%q) = %+v, want an error", bad, k)
		}
	}
}
