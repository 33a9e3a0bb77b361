package main

import (
	"encoding/json"
	"fmt"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
)

// Annotations of the Network Plumbing Working Group's multi-network specification (v1.2) that this
// plugin reads and writes.
const (
	networksAnnotation      = "k8s.v1.cni.cncf.io/networks"
	networkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
)

// parseNetworks reads a pod's k8s.v1.cni.cncf.io/networks annotation: either the short form
// "name", "ns/name", "ns/name@ifname" separated by commas, or a JSON list of NetworkSelectionElement.
// Elements without a namespace get the pod's; elements without an interface name get net1, net2, ...
// in order, as the specification says.
func parseNetworks(annotation, podNamespace string) ([]nadv1.NetworkSelectionElement, error) {
	annotation = strings.TrimSpace(annotation)
	if annotation == "" {
		return nil, nil
	}
	var elems []nadv1.NetworkSelectionElement
	if strings.HasPrefix(annotation, "[") {
		if err := json.Unmarshal([]byte(annotation), &elems); err != nil {
			return nil, fmt.Errorf("%s: invalid JSON: %w", networksAnnotation, err)
		}
	} else {
		for _, item := range strings.Split(annotation, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			var e nadv1.NetworkSelectionElement
			if at := strings.LastIndex(item, "@"); at >= 0 {
				e.InterfaceRequest = item[at+1:]
				item = item[:at]
			}
			if slash := strings.Index(item, "/"); slash >= 0 {
				e.Namespace = item[:slash]
				item = item[slash+1:]
			}
			e.Name = item
			elems = append(elems, e)
		}
	}
	seen := map[string]bool{}
	for i := range elems {
		e := &elems[i]
		if e.Name == "" || strings.ContainsAny(e.Name, "/@") {
			return nil, fmt.Errorf("%s: element %d: invalid network name %q", networksAnnotation, i, e.Name)
		}
		if e.Namespace == "" {
			e.Namespace = podNamespace
		}
		if e.InterfaceRequest == "" {
			e.InterfaceRequest = fmt.Sprintf("net%d", i+1)
		}
		if e.InterfaceRequest == "eth0" || seen[e.InterfaceRequest] {
			return nil, fmt.Errorf("%s: interface %q requested twice or taken by the default network", networksAnnotation, e.InterfaceRequest)
		}
		seen[e.InterfaceRequest] = true
	}
	return elems, nil
}

// delegateConfList turns a NetworkAttachmentDefinition's spec.config (a single plugin or a plugin list)
// into plugin-list JSON, filling the name (ns/name when absent) and cniVersion (the runtime's when
// absent) as Multus does.
func delegateConfList(config, defaultName, cniVersion string) ([]byte, error) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(config), &raw); err != nil {
		return nil, fmt.Errorf("spec.config is not a JSON object: %w", err)
	}
	if _, ok := raw["name"].(string); !ok {
		raw["name"] = defaultName
	}
	if v, ok := raw["cniVersion"].(string); !ok || v == "" {
		raw["cniVersion"] = cniVersion
	}
	if _, isList := raw["plugins"]; !isList {
		if _, ok := raw["type"].(string); !ok {
			return nil, fmt.Errorf("spec.config has neither \"type\" nor \"plugins\"")
		}
		plugin := map[string]any{}
		for k, v := range raw {
			plugin[k] = v
		}
		raw = map[string]any{"name": raw["name"], "cniVersion": raw["cniVersion"], "plugins": []any{plugin}}
	}
	return json.Marshal(raw)
}
