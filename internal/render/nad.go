package render

import (
	"encoding/json"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// ResourceNameAnnotation on a NetworkAttachmentDefinition names the device plugin resource whose
// device the CNI plugin attaches (Multus reads it and passes the allocated device id on).
const ResourceNameAnnotation = "k8s.v1.cni.cncf.io/resourceName"

// CNIVersion is the CNI spec version the rendered configurations declare.
const CNIVersion = "1.0.0"

// cniConfig is the CNI network configuration of one attachment. Only the fields the four plugin
// types use are here; each is documented by its plugin: sriov (k8snetworkplumbingwg/sriov-cni),
// macvlan, ipvlan and host-device (containernetworking/plugins).
type cniConfig struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	// Master is the host interface macvlan and ipvlan children hang off.
	Master string `json:"master,omitempty"`
	// Mode is macvlan's bridge|private|vepa|passthru or ipvlan's l2|l3|l3s.
	Mode string `json:"mode,omitempty"`
	// Device is the host interface host-device moves into the pod.
	Device string   `json:"device,omitempty"`
	IPAM   *cniIPAM `json:"ipam,omitempty"`
}

type cniRoute struct {
	Dst string `json:"dst"`
}

// cniIPAM is host-local's and dhcp's configuration; whereabouts reads range/range_start/range_end.
type cniIPAM struct {
	Type       string     `json:"type"`
	Subnet     string     `json:"subnet,omitempty"`
	Range      string     `json:"range,omitempty"`
	RangeStart string     `json:"rangeStart,omitempty"`
	RangeEnd   string     `json:"rangeEnd,omitempty"`
	WRangeS    string     `json:"range_start,omitempty"`
	WRangeE    string     `json:"range_end,omitempty"`
	Routes     []cniRoute `json:"routes,omitempty"`
	Gateway    string     `json:"gateway,omitempty"`
}

// NADName is the name of the NetworkAttachmentDefinition of a profile's NIC group.
func NADName(profile, nic string) string { return profile + "-" + nic }

// NADNamespace is where a NIC group's NetworkAttachmentDefinition lives.
func NADNamespace(net *tsv1.NICNetwork, defaultNamespace string) string {
	if net != nil && net.Namespace != "" {
		return net.Namespace
	}
	return defaultNamespace
}

// CNIConfig renders the CNI configuration of a NIC group's attachment.
func CNIConfig(name string, nic *tsv1.NICSpec) (string, error) {
	net := nic.Network
	if net == nil {
		return "", fmt.Errorf("spec.nics[%s].network is not set", nic.Name)
	}
	c := cniConfig{CNIVersion: CNIVersion, Name: name}
	one := ""
	if len(nic.Selector.InterfaceNames) == 1 {
		one = nic.Selector.InterfaceNames[0]
	}
	switch net.Type {
	case "", tsv1.NetworkSRIOV:
		c.Type = "sriov"
	case tsv1.NetworkMacvlan:
		c.Type, c.Master, c.Mode = "macvlan", one, "bridge"
	case tsv1.NetworkIPvlan:
		c.Type, c.Master, c.Mode = "ipvlan", one, "l2"
	case tsv1.NetworkHostDevice:
		c.Type, c.Device = "host-device", one
	default:
		return "", fmt.Errorf("spec.nics[%s].network.type %q is unknown: use sriov, macvlan, ipvlan or hostDevice", nic.Name, net.Type)
	}
	if c.Type != "sriov" && one == "" {
		return "", fmt.Errorf("spec.nics[%s].network.type %s needs exactly one spec.nics[%s].selector.interfaceNames entry", nic.Name, net.Type, nic.Name)
	}
	if ip := net.IPAM; ip != nil {
		c.IPAM = &cniIPAM{Type: string(ip.Type), Gateway: ip.Gateway}
		switch ip.Type {
		case "whereabouts":
			c.IPAM.Range, c.IPAM.WRangeS, c.IPAM.WRangeE = ip.Subnet, ip.RangeStart, ip.RangeEnd
		case "host-local":
			c.IPAM.Subnet, c.IPAM.RangeStart, c.IPAM.RangeEnd = ip.Subnet, ip.RangeStart, ip.RangeEnd
		}
		if ip.Gateway != "" {
			c.IPAM.Routes = []cniRoute{{Dst: "0.0.0.0/0"}}
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encoding the CNI config of spec.nics[%s]: %w", nic.Name, err)
	}
	return string(b), nil
}

// XDPPluginType is the CNI plugin (cmd/tickstack-xdp-cni, installed on the node as tickstack-xdp)
// chained last in a bypass group's attachment: it asks the node daemon tickstack-xdpd to attach the
// steering program to the pod's interface in the pod's network namespace.
const XDPPluginType = "tickstack-xdp"

// DefaultXDPRunDir is tickstack-xdpd's run directory on the node unless the chart says otherwise.
const DefaultXDPRunDir = "/run/tickstack/xdp"

// xdpPluginConf is tickstack-xdp's entry in a bypass attachment's plugin list.
type xdpPluginConf struct {
	Type string `json:"type"`
	// RunDir is tickstack-xdpd's --run-dir on the node (its ctl.sock is there).
	RunDir string `json:"runDir"`
}

// BypassConfList chains tickstack-xdp after a group's attachment: a CNI network configuration list
// whose first plugin is cfg (a single plugin's configuration, as CNIConfig renders it).
func BypassConfList(name, cfg, runDir string) (string, error) {
	var first map[string]any
	if err := json.Unmarshal([]byte(cfg), &first); err != nil {
		return "", fmt.Errorf("the CNI config of %s: %w", name, err)
	}
	delete(first, "cniVersion")
	delete(first, "name")
	b, err := json.Marshal(map[string]any{
		"cniVersion": CNIVersion, "name": name,
		"plugins": []any{first, xdpPluginConf{Type: XDPPluginType, RunDir: runDir}},
	})
	if err != nil {
		return "", fmt.Errorf("encoding the CNI config list of %s: %w", name, err)
	}
	return string(b), nil
}

// NetworkAttachments renders the NetworkAttachmentDefinitions of a profile: one per NIC group with
// a network. Groups backed by VFs carry the resourceName annotation <prefix>/<resourceName>. Bypass
// groups chain tickstack-xdp (BypassConfList) with xdpRunDir, the node daemon's run directory.
func NetworkAttachments(p *tsv1.LatencyProfile, prefix, defaultNamespace, xdpRunDir string) ([]*nadv1.NetworkAttachmentDefinition, error) {
	var out []*nadv1.NetworkAttachmentDefinition
	for i := range p.Spec.NICs {
		nic := &p.Spec.NICs[i]
		if nic.Network == nil {
			continue
		}
		name := NADName(p.Name, nic.Name)
		cfg, err := CNIConfig(name, nic)
		if err == nil && nic.Acceleration == tsv1.AccelerationBypass {
			cfg, err = BypassConfList(name, cfg, xdpRunDir)
		}
		if err != nil {
			return nil, fmt.Errorf("LatencyProfile %s: %w", p.Name, err)
		}
		nad := &nadv1.NetworkAttachmentDefinition{
			TypeMeta: metav1.TypeMeta{APIVersion: nadv1.SchemeGroupVersion.String(), Kind: "NetworkAttachmentDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: NADNamespace(nic.Network, defaultNamespace),
				Labels: map[string]string{ManagedByLabel: ManagedBy, tsv1.ProfileLabel: p.Name}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: cfg},
		}
		if PoolOf(nic) {
			nad.Annotations = map[string]string{ResourceNameAnnotation: prefix + "/" + nic.ResourceName}
		}
		out = append(out, nad)
	}
	return out, nil
}
