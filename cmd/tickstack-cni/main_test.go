package main

import (
	"net"
	"reflect"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
)

func TestAttachmentStatus(t *testing.T) {
	idx := func(i int) *int { return &i }
	ipnet := func(s string) net.IPNet {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return *n
	}
	// A macvlan result: the host-side entry has no sandbox, the pod's interface has.
	res := &current.Result{
		CNIVersion: "1.0.0",
		Interfaces: []*current.Interface{
			{Name: "tslcnet2", Mac: "aa:aa:aa:aa:aa:aa"},
			{Name: "lat0", Mac: "ee:ce:87:4a:ff:69", Sandbox: "/run/netns/x"},
		},
		IPs: []*current.IPConfig{{Interface: idx(1), Address: ipnet("198.19.203.2/24")}},
	}
	got, err := attachmentStatus("default/tslc-net2", "lat0", res)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mac != "ee:ce:87:4a:ff:69" || !reflect.DeepEqual(got.IPs, []string{"198.19.203.2"}) || got.Interface != "lat0" {
		t.Fatalf("got %+v", got)
	}
	// A result whose IPs name no interface (0.3-era plugins) still yields the address.
	res.IPs[0].Interface = nil
	got, err = attachmentStatus("n", "lat0", res)
	if err != nil || !reflect.DeepEqual(got.IPs, []string{"198.19.203.2"}) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestRuntimeConfKeepsPodArgs(t *testing.T) {
	rt := runtimeConf(&skel.CmdArgs{ContainerID: "c1", Netns: "/ns", Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p"}, "net1")
	want := [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "p"}, {"IgnoreUnknown", "true"}}
	if rt.ContainerID != "c1" || rt.NetNS != "/ns" || rt.IfName != "net1" || !reflect.DeepEqual(rt.Args, want) {
		t.Fatalf("got %+v", rt)
	}
}
