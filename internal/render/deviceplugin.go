package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The SR-IOV network device plugin's configuration (k8snetworkplumbingwg/sriov-network-device-plugin,
// README "Config parameters", and deployments/configMap.yaml). Its Go module is not served by the
// module proxy this project builds with (its pinned source is built on its own, hack/third-party.sh),
// so the documented JSON format is written here as typed structs, tested against the README's and
// deployments' examples (testdata/sriovdp-*.json) and, in test/thirdparty, against the real plugin's
// parser and validation, which must accept what DevicePluginConfigMap renders.

// DevicePluginConfigKey is the key of the device plugin's ConfigMap that holds the JSON
// (its -config-file default is /etc/pcidp/config.json, mounted from this key).
const DevicePluginConfigKey = "config.json"

// DevicePluginConfig is the device plugin's whole configuration file.
type DevicePluginConfig struct {
	// ResourceList holds one resource pool per entry.
	ResourceList []DevicePluginResource `json:"resourceList"`
}

// DevicePluginResource is one resource pool: the devices its selectors match are advertised as the
// extended resource <resourcePrefix>/<resourceName>.
type DevicePluginResource struct {
	// ResourceName is the pool's name, unique within its prefix.
	ResourceName string `json:"resourceName"`
	// ResourcePrefix overrides the plugin's -resource-prefix for this pool.
	ResourcePrefix string `json:"resourcePrefix,omitempty"`
	// DeviceType is netDevice (the default), accelerator or auxNetDevice.
	DeviceType string `json:"deviceType,omitempty"`
	// ExcludeTopology leaves NUMA topology out of the advertised devices.
	ExcludeTopology bool `json:"excludeTopology,omitempty"`
	// IsRdma at the pool level is the older place of the selector's isRdma.
	IsRdma bool `json:"isRdma,omitempty"`
	// Selectors pick the pool's devices; a device in any selector is in the pool.
	Selectors NetDeviceSelectors `json:"selectors,omitempty"`
}

// NetDeviceSelector narrows the host's PCI network devices; every field given must match.
type NetDeviceSelector struct {
	// Vendors are PCI vendor ids in hex.
	Vendors []string `json:"vendors,omitempty"`
	// Devices are PCI device ids in hex (of the VF, not its PF).
	Devices []string `json:"devices,omitempty"`
	// Drivers are kernel driver names (of the VF).
	Drivers []string `json:"drivers,omitempty"`
	// PCIAddresses are full PCI addresses.
	PCIAddresses []string `json:"pciAddresses,omitempty"`
	// PFNames are PF interface names, each with an optional VF list: ens1f0#0,2-7,9.
	PFNames []string `json:"pfNames,omitempty"`
	// RootDevices are PF PCI addresses.
	RootDevices []string `json:"rootDevices,omitempty"`
	// LinkTypes are link types such as ether or infiniband.
	LinkTypes []string `json:"linkTypes,omitempty"`
	// DDPProfiles are Intel DDP profile names.
	DDPProfiles []string `json:"ddpProfiles,omitempty"`
	// IsRdma mounts the RDMA devices of the VF.
	IsRdma bool `json:"isRdma,omitempty"`
	// NeedVhostNet mounts /dev/vhost-net and /dev/net/tun.
	NeedVhostNet bool `json:"needVhostNet,omitempty"`
}

// NetDeviceSelectors is the pool's selectors. The current format is a list of selector objects;
// the README's older examples give one object, which is read as a list of one. Written as a list.
type NetDeviceSelectors []NetDeviceSelector

// UnmarshalJSON reads both the list and the older single-object form.
func (s *NetDeviceSelectors) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var one NetDeviceSelector
		if err := json.Unmarshal(b, &one); err != nil {
			return fmt.Errorf("selectors: %w", err)
		}
		*s = NetDeviceSelectors{one}
		return nil
	}
	var list []NetDeviceSelector
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("selectors: %w", err)
	}
	*s = list
	return nil
}

// PoolOf is the device plugin pool a NIC group's VFs are advertised in, or false when the group
// has no VFs for pods (no resourceName, no VFs, or a network type other than sriov).
func PoolOf(nic *tsv1.NICSpec) bool {
	if nic.ResourceName == "" || nic.NumVFs == nil || *nic.NumVFs == 0 {
		return false
	}
	return nic.Network == nil || nic.Network.Type == "" || nic.Network.Type == tsv1.NetworkSRIOV
}

// DevicePluginResources renders one pool per NIC group that hands VFs to pods, over all profiles,
// sorted by resource name. The selector names the PFs (pfNames, with their VF ranges, and
// interfaceNames as PF names) and the vendor; the profile's device and drivers describe the PF,
// not its VFs, so they are not copied. When two groups give the same resource name different
// selectors, the first (by profile name, then group order) keeps the pool, and the returned error
// names both; the other pools are still returned, so one bad profile does not hold the rest back.
func DevicePluginResources(profiles []tsv1.LatencyProfile, prefix string) ([]DevicePluginResource, error) {
	byName := map[string]DevicePluginResource{}
	from := map[string]string{}
	var conflicts []error
	profiles = append([]tsv1.LatencyProfile(nil), profiles...)
	sort.Slice(profiles, func(i, j int) bool { return profiles[i].Name < profiles[j].Name })
	for i := range profiles {
		p := &profiles[i]
		for j := range p.Spec.NICs {
			nic := &p.Spec.NICs[j]
			if !PoolOf(nic) {
				continue
			}
			sel := NetDeviceSelector{}
			if nic.Selector.Vendor != "" {
				sel.Vendors = []string{nic.Selector.Vendor}
			}
			sel.PFNames = append(append([]string{}, nic.Selector.PFNames...), nic.Selector.InterfaceNames...)
			sort.Strings(sel.PFNames)
			r := DevicePluginResource{ResourceName: nic.ResourceName, ResourcePrefix: prefix, DeviceType: "netDevice",
				Selectors: NetDeviceSelectors{sel}}
			where := fmt.Sprintf("LatencyProfile %s spec.nics[%s]", p.Name, nic.Name)
			if prev, ok := byName[nic.ResourceName]; ok {
				a, _ := json.Marshal(prev)
				b, _ := json.Marshal(r)
				if !bytes.Equal(a, b) {
					conflicts = append(conflicts, fmt.Errorf("%s and %s both name resourceName %q with different selectors: give one of them another resourceName (the pool keeps the first)",
						from[nic.ResourceName], where, nic.ResourceName))
				}
				continue
			}
			byName[nic.ResourceName] = r
			from[nic.ResourceName] = where
		}
	}
	out := make([]DevicePluginResource, 0, len(byName))
	for _, r := range byName {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ResourceName < out[j].ResourceName })
	return out, errors.Join(conflicts...)
}

// DevicePluginConfigMap renders the device plugin's ConfigMap for all profiles. A resource name
// conflict is returned as an error together with the ConfigMap of the pools that do not conflict.
func DevicePluginConfigMap(profiles []tsv1.LatencyProfile, prefix, name, namespace string) (*corev1.ConfigMap, error) {
	res, conflicts := DevicePluginResources(profiles, prefix)
	data, err := json.MarshalIndent(DevicePluginConfig{ResourceList: res}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the device plugin config: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{ManagedByLabel: ManagedBy}},
		Data:       map[string]string{DevicePluginConfigKey: string(data) + "\n"},
	}, conflicts
}

// ManagedByLabel marks every object the network controller renders.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedBy is the value of ManagedByLabel.
const ManagedBy = "tickstack"
