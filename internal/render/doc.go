// Package render turns LatencyProfiles into the objects other projects read: the SR-IOV network
// device plugin's ConfigMap, Multus NetworkAttachmentDefinitions and node-feature-discovery
// NodeFeatureRules. Everything here is pure: no client, no cluster; the network controller applies
// what these functions return.
package render
