// Package bios holds the BIOS controller, which stages each node's BIOS attributes through its BMC
// over Redfish for the node's next reboot and verifies them after it (docs/bios.md), and the BMC
// controller, which reports whether each BMC object's endpoint and credentials are accepted.
package bios
