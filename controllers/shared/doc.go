// Package shared holds the few helpers the operator's controller packages share: the BIOS gate of
// the reboot slots (the profile controller holds a slot until the BIOS controller has staged),
// setting a label or annotation key, and the enqueue mappers. The controller packages
// (controllers/profile, benchmark, bios, network, node, guard) import it and never each other
// (docs/architecture.md, test/architecture).
package shared
