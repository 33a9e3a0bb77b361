// Package bmc sets BIOS attributes through a server's BMC over Redfish (DMTF DSP0266), with gofish.
//
// The flow the operator runs for one node, each step a separate call so the reset can sit inside the
// node's reboot slot:
//
//	c, err := bmc.Connect(ctx, bmc.Config{Endpoint: "https://bmc-7", Credentials: creds, CABundle: pem})
//	plan, err := c.Plan(ctx, desired)   // reads registry + current + pending, validates, diffs
//	err = c.Apply(ctx, plan)            // PATCHes the pending settings to Bios/Settings
//	err = c.Reset(ctx, "")              // inside the reboot slot; GracefulRestart by default
//	ver, err := c.Verify(ctx, desired)  // after the reboot: per-attribute desired/observed/state
//
// Validation (unknown attribute, value outside the registry's enumeration, wrong type, read-only) runs
// before anything is sent, and every problem is reported at once. When the BMC publishes no attribute
// registry, names are checked against the current attributes instead and BIOSState.RegistryNote says so.
//
// Transport failures come back as *Error with a Kind (TLS, authentication, unreachable, protocol) so
// a caller can set a precise condition reason. Credentials are only ever put into the Authorization
// header of requests to the configured BMC host: they are never logged, and every error text is
// scrubbed of them before it leaves this package.
//
// The vendor presets in presets.go name the common low-latency BIOS settings (C-states, C1E, turbo,
// SMT, power profile, sub-NUMA clustering, uncore frequency) for Dell iDRAC, HPE iLO, Lenovo XCC,
// Supermicro and the sushy-tools emulator. docs/bios.md describes the whole design.
package bmc
