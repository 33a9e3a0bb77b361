// Package network is the network controller: from every LatencyProfile, the SR-IOV device plugin's
// ConfigMap (its DaemonSet rolled once per change), the profiles' NetworkAttachmentDefinitions and
// node-feature-discovery's NodeFeatureRule (internal/render).
package network
