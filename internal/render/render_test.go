package render

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func readJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(m) // maps marshal with sorted keys
	return string(b)
}

// The typed structs read every documented example and write it back without losing a field
// (selectors come back in the current list form).
func TestDevicePluginConfigReadsUpstreamExamples(t *testing.T) {
	for _, name := range []string{"sriovdp-readme-config.json", "sriovdp-configmap-config.json", "sriovdp-pfnames-ranges.json"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			var cfg DevicePluginConfig
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			if len(cfg.ResourceList) == 0 {
				t.Fatal("no resources read")
			}
			want := readJSON(t, name)
			for _, r := range want["resourceList"].([]any) {
				r := r.(map[string]any)
				if s, ok := r["selectors"].(map[string]any); ok {
					r["selectors"] = []any{s}
				}
			}
			if got, w := canonical(t, cfg), canonical(t, want); got != w {
				t.Errorf("round trip lost fields:\n got %s\nwant %s", got, w)
			}
		})
	}
}

func TestDevicePluginResourcesFromProfiles(t *testing.T) {
	profiles := []tsv1.LatencyProfile{
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{
			{Name: "md", Selector: tsv1.NICSelector{Vendor: "8086", Device: "1592", Drivers: []string{"ice"}, PFNames: []string{"netpf0#0,2-7,9"}},
				NumVFs: ptr.To[int32](10), ResourceName: "pool"},
			{Name: "mgmt", Selector: tsv1.NICSelector{InterfaceNames: []string{"eth1"}}, Network: &tsv1.NICNetwork{Type: tsv1.NetworkMacvlan}},
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{
			{Name: "orders", Selector: tsv1.NICSelector{InterfaceNames: []string{"ens2f0"}}, NumVFs: ptr.To[int32](4), ResourceName: "orders_vf"},
			{Name: "novf", Selector: tsv1.NICSelector{InterfaceNames: []string{"ens3f0"}}},
		}}},
	}
	cm, err := DevicePluginConfigMap(profiles, "tickstack.io", "sriovdp-config", "tickstack-system")
	if err != nil {
		t.Fatal(err)
	}
	var got DevicePluginConfig
	if err := json.Unmarshal([]byte(cm.Data[DevicePluginConfigKey]), &got); err != nil {
		t.Fatal(err)
	}
	// The README's pfNames range example, produced from a profile: the PF's device and driver
	// are not copied (they describe the PF, the pool holds VFs).
	want := DevicePluginConfig{ResourceList: []DevicePluginResource{
		{ResourceName: "orders_vf", ResourcePrefix: "tickstack.io", DeviceType: "netDevice", Selectors: NetDeviceSelectors{{PFNames: []string{"ens2f0"}}}},
		{ResourceName: "pool", ResourcePrefix: "tickstack.io", DeviceType: "netDevice", Selectors: NetDeviceSelectors{{Vendors: []string{"8086"}, PFNames: []string{"netpf0#0,2-7,9"}}}},
	}}
	if canonical(t, got) != canonical(t, want) {
		t.Errorf("got %s\nwant %s", canonical(t, got), canonical(t, want))
	}
	upstream := readJSON(t, "sriovdp-pfnames-ranges.json")["resourceList"].([]any)[0].(map[string]any)["selectors"]
	if canonical(t, []NetDeviceSelector{{PFNames: got.ResourceList[1].Selectors[0].PFNames}}) != canonical(t, upstream) {
		t.Errorf("pfNames selector %v differs from the README's %v", got.ResourceList[1].Selectors, upstream)
	}

	// Two groups claiming one resource name with different selectors are refused, naming both.
	// The first by profile name keeps the pool.
	profiles[1].Spec.NICs[0].ResourceName = "pool"
	res, err := DevicePluginResources(profiles, "tickstack.io")
	if err == nil || !strings.Contains(err.Error(), "LatencyProfile a spec.nics[orders] and LatencyProfile b spec.nics[md]") || !strings.Contains(err.Error(), "another resourceName") {
		t.Errorf("want a conflict naming both groups, got %v", err)
	}
	if len(res) != 1 || res[0].Selectors[0].PFNames[0] != "ens2f0" {
		t.Errorf("want profile a's pool kept, got %+v", res)
	}
}

// withoutKeys drops keys upstream examples leave out (cniVersion and name: Multus fills the name
// from the NetworkAttachmentDefinition's).
func withoutKeys(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		delete(m, k)
	}
	return m
}

func TestNetworkAttachmentsMatchUpstreamExamples(t *testing.T) {
	cases := []struct {
		golden string
		nic    tsv1.NICSpec
		annot  string
	}{
		{
			golden: "nad-sriov-network-device-plugin.json",
			nic: tsv1.NICSpec{Name: "md", Selector: tsv1.NICSelector{Vendor: "8086"}, NumVFs: ptr.To[int32](8), ResourceName: "sriov",
				Network: &tsv1.NICNetwork{IPAM: &tsv1.IPAM{Type: "host-local", Subnet: "198.18.217.0/24", Gateway: "198.18.217.1"}}},
			annot: "intel.com/sriov",
		},
		{
			golden: "nad-multus-quickstart-macvlan.json",
			nic: tsv1.NICSpec{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eth0"}},
				Network: &tsv1.NICNetwork{Type: tsv1.NetworkMacvlan, IPAM: &tsv1.IPAM{Type: "host-local", Subnet: "198.19.1.0/24",
					RangeStart: "198.19.1.200", RangeEnd: "198.19.1.216", Gateway: "198.19.1.1"}}},
		},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "prof"}, Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{c.nic}}}
			nads, err := NetworkAttachments(p, "intel.com", "tickstack-system", "/run/tickstack/xdp")
			if err != nil {
				t.Fatal(err)
			}
			if len(nads) != 1 {
				t.Fatalf("want 1 NAD, got %d", len(nads))
			}
			nad := nads[0]
			if nad.Name != "prof-md" || nad.Namespace != "tickstack-system" {
				t.Errorf("NAD %s/%s, want tickstack-system/prof-md", nad.Namespace, nad.Name)
			}
			if got := nad.Annotations[ResourceNameAnnotation]; got != c.annot {
				t.Errorf("resourceName annotation %q, want %q", got, c.annot)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(nad.Spec.Config), &got); err != nil {
				t.Fatal(err)
			}
			if got["cniVersion"] != CNIVersion || got["name"] != "prof-md" {
				t.Errorf("config %s: want cniVersion %s and name prof-md", nad.Spec.Config, CNIVersion)
			}
			want := withoutKeys(readJSON(t, c.golden), "cniVersion", "name")
			if canonical(t, withoutKeys(got, "cniVersion", "name")) != canonical(t, want) {
				t.Errorf("config differs from the upstream example:\n got %s\nwant %s", canonical(t, got), canonical(t, want))
			}
		})
	}
}

// A bypass group's attachment is a plugin list: the group's own plugin, then tickstack-xdp with the
// node daemon's run directory. libcni (what Multus and the container runtimes use) must parse it.
func TestBypassAttachmentChainsTheXDPPlugin(t *testing.T) {
	nic := tsv1.NICSpec{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eth1"}}, Acceleration: tsv1.AccelerationBypass,
		Network: &tsv1.NICNetwork{Type: tsv1.NetworkMacvlan, IPAM: &tsv1.IPAM{Type: "host-local", Subnet: "198.18.5.0/24"}}}
	p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "prof"}, Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{nic}}}
	nads, err := NetworkAttachments(p, "intel.com", "ns", "/var/run/xdp")
	if err != nil {
		t.Fatal(err)
	}
	list, err := libcni.ConfListFromBytes([]byte(nads[0].Spec.Config))
	if err != nil {
		t.Fatalf("libcni cannot parse %s: %v", nads[0].Spec.Config, err)
	}
	if list.Name != "prof-md" || list.CNIVersion != CNIVersion || len(list.Plugins) != 2 {
		t.Fatalf("list %s: want name prof-md, cniVersion %s, two plugins", nads[0].Spec.Config, CNIVersion)
	}
	single, err := CNIConfig("prof-md", &nic)
	if err != nil {
		t.Fatal(err)
	}
	var first, want map[string]any
	if err := json.Unmarshal(list.Plugins[0].Bytes, &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(single), &want); err != nil {
		t.Fatal(err)
	}
	if canonical(t, withoutKeys(first, "cniVersion", "name")) != canonical(t, withoutKeys(want, "cniVersion", "name")) {
		t.Errorf("first plugin %s, want the group's own %s", list.Plugins[0].Bytes, single)
	}
	if list.Plugins[1].Network.Type != XDPPluginType || !strings.Contains(string(list.Plugins[1].Bytes), `"runDir":"/var/run/xdp"`) {
		t.Errorf("second plugin %s, want %s with runDir /var/run/xdp", list.Plugins[1].Bytes, XDPPluginType)
	}
	nic.Acceleration = tsv1.AccelerationKernel
	p.Spec.NICs[0] = nic
	if nads, err = NetworkAttachments(p, "intel.com", "ns", "/var/run/xdp"); err != nil || nads[0].Spec.Config != single {
		t.Errorf("a kernel group's attachment %v (%v), want the single plugin %s", nads[0].Spec.Config, err, single)
	}
}

func TestCNIConfigTypes(t *testing.T) {
	one := tsv1.NICSelector{InterfaceNames: []string{"eth1"}}
	cases := []struct {
		nic  tsv1.NICSpec
		want string
		err  string
	}{
		{nic: tsv1.NICSpec{Name: "a", Selector: one, Network: &tsv1.NICNetwork{Type: tsv1.NetworkIPvlan}},
			want: `{"cniVersion":"1.0.0","master":"eth1","mode":"l2","name":"n","type":"ipvlan"}`},
		{nic: tsv1.NICSpec{Name: "a", Selector: one, Network: &tsv1.NICNetwork{Type: tsv1.NetworkHostDevice, IPAM: &tsv1.IPAM{Type: "dhcp"}}},
			want: `{"cniVersion":"1.0.0","device":"eth1","ipam":{"type":"dhcp"},"name":"n","type":"host-device"}`},
		{nic: tsv1.NICSpec{Name: "a", Selector: tsv1.NICSelector{Vendor: "8086"}, Network: &tsv1.NICNetwork{IPAM: &tsv1.IPAM{Type: "whereabouts", Subnet: "198.18.0.0/24", RangeStart: "198.18.0.10", RangeEnd: "198.18.0.20"}}},
			want: `{"cniVersion":"1.0.0","ipam":{"range":"198.18.0.0/24","range_end":"198.18.0.20","range_start":"198.18.0.10","type":"whereabouts"},"name":"n","type":"sriov"}`},
		{nic: tsv1.NICSpec{Name: "a", Selector: tsv1.NICSelector{Vendor: "8086"}, Network: &tsv1.NICNetwork{Type: tsv1.NetworkMacvlan}},
			err: "spec.nics[a].network.type macvlan needs exactly one spec.nics[a].selector.interfaceNames entry"},
		{nic: tsv1.NICSpec{Name: "a", Selector: one, Network: &tsv1.NICNetwork{Type: "bridge"}},
			err: `spec.nics[a].network.type "bridge" is unknown`},
		{nic: tsv1.NICSpec{Name: "a", Selector: one}, err: "spec.nics[a].network is not set"},
	}
	for _, c := range cases {
		got, err := CNIConfig("n", &c.nic)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: want error %q, got %v", c.nic.Network, c.err, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var m any
		_ = json.Unmarshal([]byte(got), &m)
		if canonical(t, m) != c.want {
			t.Errorf("got %s\nwant %s", canonical(t, m), c.want)
		}
	}
}

func TestNodeFeatureRule(t *testing.T) {
	profiles := []tsv1.LatencyProfile{{Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{
		{Name: "a", Selector: tsv1.NICSelector{Vendor: "15B3"}}, {Name: "b", Selector: tsv1.NICSelector{Vendor: "8086"}}, {Name: "c", Selector: tsv1.NICSelector{Vendor: "8086"}},
	}}}}
	r := NodeFeatureRule(profiles, "tickstack")
	var names, labels []string
	for _, rule := range r.Spec.Rules {
		names = append(names, rule.Name)
		for k := range rule.Labels {
			labels = append(labels, k)
		}
		if len(rule.MatchFeatures) == 0 {
			t.Errorf("rule %q matches nothing", rule.Name)
		}
	}
	want := []string{"tickstack-sriov.capable", "tickstack-xdp.native", "tickstack-kernel.nohz_full", "tickstack-tuning.applied", "tickstack-nic-vendor.15b3", "tickstack-nic-vendor.8086"}
	if strings.Join(labels, ",") != strings.Join(want, ",") {
		t.Errorf("labels %v, want %v (rules %v)", labels, want, names)
	}
	if r.Spec.Rules[0].MatchFeatures[0].Feature != "network.device" {
		t.Errorf("sriov rule reads %s", r.Spec.Rules[0].MatchFeatures[0].Feature)
	}
}
