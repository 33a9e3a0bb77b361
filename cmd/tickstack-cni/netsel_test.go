package main

import (
	"encoding/json"
	"reflect"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
)

func TestParseNetworks(t *testing.T) {
	tests := []struct {
		name, in string
		want     []nadv1.NetworkSelectionElement
		wantErr  bool
	}{
		{name: "empty", in: " "},
		{name: "short forms", in: "net-a, other/net-b@lat0,net-c", want: []nadv1.NetworkSelectionElement{
			{Name: "net-a", Namespace: "pods", InterfaceRequest: "net1"},
			{Name: "net-b", Namespace: "other", InterfaceRequest: "lat0"},
			{Name: "net-c", Namespace: "pods", InterfaceRequest: "net3"},
		}},
		// The specification's own example of the JSON form (section 4.1.2.1).
		{name: "json", in: `[{"name":"net-a","namespace":"other","interface":"lat0","ips":["198.19.203.9/24"]},{"name":"net-b"}]`,
			want: []nadv1.NetworkSelectionElement{
				{Name: "net-a", Namespace: "other", InterfaceRequest: "lat0", IPRequest: []string{"198.19.203.9/24"}},
				{Name: "net-b", Namespace: "pods", InterfaceRequest: "net2"},
			}},
		{name: "bad json", in: `[{"name":`, wantErr: true},
		{name: "empty name", in: "other/", wantErr: true},
		{name: "eth0 taken", in: "net-a@eth0", wantErr: true},
		{name: "interface twice", in: "net-a@x,net-b@x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNetworks(tt.in, "pods")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDelegateConfList(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]any
		wantErr  bool
	}{
		{name: "single plugin gets wrapped, name and version filled",
			in: `{"type":"macvlan","master":"tslcnet2"}`,
			want: map[string]any{"name": "ns/n", "cniVersion": "0.4.0", "plugins": []any{
				map[string]any{"name": "ns/n", "cniVersion": "0.4.0", "type": "macvlan", "master": "tslcnet2"}}}},
		{name: "list kept", in: `{"name":"x","cniVersion":"1.0.0","plugins":[{"type":"macvlan"}]}`,
			want: map[string]any{"name": "x", "cniVersion": "1.0.0", "plugins": []any{map[string]any{"type": "macvlan"}}}},
		{name: "not an object", in: `"x"`, wantErr: true},
		{name: "no type", in: `{"name":"x"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := delegateConfList(tt.in, "ns/n", "0.4.0")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}
