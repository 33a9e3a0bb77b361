// Command tickstack-cni is a small CNI meta-plugin that gives pods the secondary networks they ask for
// with the k8s.v1.cni.cncf.io/networks annotation, reading NetworkAttachmentDefinitions
// (k8s.cni.cncf.io/v1) and delegating to the standard plugins (macvlan, host-local, ...). It does the
// part of Multus that the local cluster needs, because Multus is neither packaged by Debian nor served
// by the Go module proxy here (docs/local-cluster.md).
//
// It runs as a chained plugin after the default network's plugins in the node's conflist:
//
//	{"type": "tickstack-cni", "kubeconfig": "/path/to/kubeconfig"}
//
// ADD: reads the pod (CNI_ARGS K8S_POD_NAMESPACE/K8S_POD_NAME), runs ADD of each selected network's
// configuration on interface net1, net2, ... (or the requested name), writes the
// k8s.v1.cni.cncf.io/network-status annotation, and passes the default network's result through.
// DEL: runs DEL of every attachment it cached at ADD (the pod and its NADs may be gone by then).
// Honoured in a selection element: name, namespace, interface. Not honoured (refused when present
// so nobody is misled): ips, mac, portMappings, bandwidth, cni-args, default-route.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
)

// defaultCacheDir keeps libcni's record of each delegated attachment, which DEL replays.
const defaultCacheDir = "/var/lib/cni/tickstack-cni"

// pluginConf is this plugin's own configuration in the conflist.
type pluginConf struct {
	types.NetConf
	Kubeconfig string `json:"kubeconfig"`
	CacheDir   string `json:"cacheDir,omitempty"`
}

// podArgs are the CNI_ARGS the container runtime passes for Kubernetes pods; the field names are the
// keys, as types.LoadArgs requires.
type podArgs struct {
	types.CommonArgs
	K8S_POD_NAMESPACE          types.UnmarshallableString
	K8S_POD_NAME               types.UnmarshallableString
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString
	K8S_POD_UID                types.UnmarshallableString
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck},
		version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0"), "tickstack-cni: secondary networks from NetworkAttachmentDefinitions")
}

func loadConf(stdin []byte) (*pluginConf, error) {
	conf := &pluginConf{}
	if err := json.Unmarshal(stdin, conf); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	if conf.RawPrevResult != nil {
		if err := version.ParsePrevResult(&conf.NetConf); err != nil {
			return nil, fmt.Errorf("parse prevResult: %w", err)
		}
	}
	if conf.CacheDir == "" {
		conf.CacheDir = defaultCacheDir
	}
	return conf, nil
}

func cniConfig(conf *pluginConf) *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir(filepath.SplitList(os.Getenv("CNI_PATH")), conf.CacheDir, nil)
}

func cmdAdd(args *skel.CmdArgs) error {
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	if conf.PrevResult == nil {
		return fmt.Errorf("tickstack-cni must be chained after the default network's plugins (no prevResult)")
	}
	pa := podArgs{}
	if err := types.LoadArgs(args.Args, &pa); err != nil {
		return fmt.Errorf("CNI_ARGS: %w", err)
	}
	ns, name := string(pa.K8S_POD_NAMESPACE), string(pa.K8S_POD_NAME)
	if ns == "" || name == "" {
		return types.PrintResult(conf.PrevResult, conf.CNIVersion) // not a Kubernetes pod
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kube, err := newKubeClient(conf.Kubeconfig)
	if err != nil {
		return err
	}
	pod, err := kube.getPod(ctx, ns, name)
	if err != nil {
		return err
	}
	elems, err := parseNetworks(pod.Annotations[networksAnnotation], ns)
	if err != nil {
		return err
	}
	statuses := []nadv1.NetworkStatus{defaultStatus(conf, args.IfName)}
	cni := cniConfig(conf)
	for _, e := range elems {
		if err := refuseUnsupported(e); err != nil {
			return err
		}
		nad, err := kube.getNAD(ctx, e.Namespace, e.Name)
		if err != nil {
			return err
		}
		list, err := delegateList(nad, conf.CNIVersion)
		if err != nil {
			return err
		}
		rt := runtimeConf(args, e.InterfaceRequest)
		res, err := cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			return fmt.Errorf("network %s/%s on %s: %w", e.Namespace, e.Name, e.InterfaceRequest, err)
		}
		st, err := attachmentStatus(e.Namespace+"/"+e.Name, e.InterfaceRequest, res)
		if err != nil {
			return err
		}
		statuses = append(statuses, st)
	}
	if err := kube.setNetworkStatus(ctx, ns, name, statuses); err != nil {
		return err
	}
	return types.PrintResult(conf.PrevResult, conf.CNIVersion)
}

func cmdDel(args *skel.CmdArgs) error {
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	cni := cniConfig(conf)
	atts, err := cni.GetCachedAttachments(args.ContainerID)
	if err != nil {
		return fmt.Errorf("read cached attachments: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []string
	for _, a := range atts {
		list, err := libcni.ConfListFromBytes(a.Config)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", a.Network, err))
			continue
		}
		rt := runtimeConf(args, a.IfName)
		if err := cni.DelNetworkList(ctx, list, rt); err != nil {
			errs = append(errs, fmt.Sprintf("%s on %s: %v", a.Network, a.IfName, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("DEL: %s", strings.Join(errs, "; "))
	}
	return nil
}

func cmdCheck(args *skel.CmdArgs) error {
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	cni := cniConfig(conf)
	atts, err := cni.GetCachedAttachments(args.ContainerID)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, a := range atts {
		list, err := libcni.ConfListFromBytes(a.Config)
		if err != nil {
			return err
		}
		if err := cni.CheckNetworkList(ctx, list, runtimeConf(args, a.IfName)); err != nil {
			return fmt.Errorf("%s on %s: %w", a.Network, a.IfName, err)
		}
	}
	return nil
}

func runtimeConf(args *skel.CmdArgs, ifName string) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{ContainerID: args.ContainerID, NetNS: args.Netns, IfName: ifName}
	for _, kv := range strings.Split(args.Args, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "IgnoreUnknown" {
			rt.Args = append(rt.Args, [2]string{k, v})
		}
	}
	rt.Args = append(rt.Args, [2]string{"IgnoreUnknown", "true"})
	return rt
}

func delegateList(nad *nadv1.NetworkAttachmentDefinition, cniVersion string) (*libcni.NetworkConfigList, error) {
	b, err := delegateConfList(nad.Spec.Config, nad.Namespace+"/"+nad.Name, cniVersion)
	if err != nil {
		return nil, fmt.Errorf("NetworkAttachmentDefinition %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	return libcni.ConfListFromBytes(b)
}

func refuseUnsupported(e nadv1.NetworkSelectionElement) error {
	var unsupported []string
	if len(e.IPRequest) > 0 {
		unsupported = append(unsupported, "ips")
	}
	if e.MacRequest != "" {
		unsupported = append(unsupported, "mac")
	}
	if len(e.PortMappingsRequest) > 0 {
		unsupported = append(unsupported, "portMappings")
	}
	if e.BandwidthRequest != nil {
		unsupported = append(unsupported, "bandwidth")
	}
	if e.CNIArgs != nil {
		unsupported = append(unsupported, "cni-args")
	}
	if len(e.GatewayRequest) > 0 {
		unsupported = append(unsupported, "default-route")
	}
	if len(unsupported) > 0 {
		return fmt.Errorf("network %s/%s: tickstack-cni does not support %s", e.Namespace, e.Name, strings.Join(unsupported, ", "))
	}
	return nil
}

// defaultStatus describes the default network (the chained prevResult) for network-status.
func defaultStatus(conf *pluginConf, ifName string) nadv1.NetworkStatus {
	st := nadv1.NetworkStatus{Name: conf.Name, Interface: ifName, Default: true}
	if s, err := attachmentStatus(conf.Name, ifName, conf.PrevResult); err == nil {
		st.IPs, st.Mac = s.IPs, s.Mac
	}
	return st
}

// attachmentStatus is the network-status entry of one attachment: the addresses and MAC of the
// interface named ifName inside the pod.
func attachmentStatus(network, ifName string, res types.Result) (nadv1.NetworkStatus, error) {
	st := nadv1.NetworkStatus{Name: network, Interface: ifName}
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return st, fmt.Errorf("network %s: result: %w", network, err)
	}
	for i, itf := range r.Interfaces {
		if itf.Name != ifName || itf.Sandbox == "" {
			continue
		}
		st.Mac = itf.Mac
		for _, ip := range r.IPs {
			if ip.Interface != nil && *ip.Interface == i {
				st.IPs = append(st.IPs, ip.Address.IP.String())
			}
		}
	}
	if len(st.IPs) == 0 { // results without interface indexes (0.3.x plugins)
		for _, ip := range r.IPs {
			if ip.Address.IP != nil && !ip.Address.IP.Equal(net.IPv4zero) {
				st.IPs = append(st.IPs, ip.Address.IP.String())
			}
		}
	}
	return st, nil
}
