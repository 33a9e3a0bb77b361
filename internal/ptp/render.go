package ptp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RenderPtp4lConfig returns the ptp4l configuration file for c: a [global] section with the clock
// settings and a section per port (c.Interface, or a boundary clock's c.Interfaces) with the port
// settings. udsAddress is the path of ptp4l's
// management socket (pmc and phc2sys talk to it). c must be valid (see Config.Validate).
func RenderPtp4lConfig(c Config, udsAddress string) (string, error) {
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("rendering ptp4l configuration: %w", err)
	}
	if udsAddress == "" {
		return "", fmt.Errorf("rendering ptp4l configuration: empty management socket path")
	}
	var global, port []string
	for _, k := range slices.Sorted(maps.Keys(c.Ptp4lOptions)) {
		line := k + " " + strings.TrimSpace(c.Ptp4lOptions[k])
		if scope, _ := ptp4lOptionScope(k); scope == scopePort {
			port = append(port, line)
		} else {
			global = append(global, line)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# ptp4l configuration rendered by the tickstack agent (role %s); edits are overwritten.\n", c.Role)
	b.WriteString("[global]\n")
	fmt.Fprintf(&b, "domainNumber %d\n", c.Domain)
	if c.Role == RoleSlave {
		b.WriteString("slaveOnly 1\n")
	}
	if c.Role == RoleBoundary && c.Timestamping == TimestampingHardware {
		// Each port may have a clock of its own (two NICs): phc2sys -a keeps them in step.
		b.WriteString("boundary_clock_jbod 1\n")
	}
	fmt.Fprintf(&b, "time_stamping %s\n", c.Timestamping)
	fmt.Fprintf(&b, "uds_address %s\n", udsAddress)
	for _, l := range global {
		b.WriteString(l + "\n")
	}
	for _, iface := range c.Ports() {
		fmt.Fprintf(&b, "[%s]\n", iface)
		fmt.Fprintf(&b, "network_transport %s\n", c.Transport)
		if c.Role == RoleGrandmaster {
			b.WriteString("masterOnly 1\n")
		}
		for _, l := range port {
			b.WriteString(l + "\n")
		}
	}
	return b.String(), nil
}

// Ptp4lArgs is ptp4l's command line for a rendered configuration file: the ports come from the
// file's sections, -m prints messages to stdout (the agent forwards them to its log) and -q keeps
// them out of syslog.
func Ptp4lArgs(configFile string) []string {
	return []string{"-f", configFile, "-m", "-q"}
}

// Phc2sysArgs is phc2sys's command line for c (hardware time stamping only, see
// Config.RunsPhc2sys). phc2sys runs in automatic mode against ptp4l's management socket: as a slave
// (-a -r) it copies the NIC clock to the system clock once ptp4l's port is SLAVE; as a grandmaster
// (-a -r -r) it copies the system clock to the NIC clock ptp4l serves. The user's options follow,
// sorted by name.
func Phc2sysArgs(c Config, udsAddress string) ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("rendering phc2sys command line: %w", err)
	}
	if !c.RunsPhc2sys() {
		return nil, fmt.Errorf("rendering phc2sys command line: phc2sys does not run with %s timestamping", c.Timestamping)
	}
	args := []string{"-a", "-r"}
	if c.Role == RoleGrandmaster {
		args = append(args, "-r")
	}
	args = append(args, "-n", fmt.Sprint(c.Domain), "-z", udsAddress, "-m", "-q")
	for _, k := range slices.Sorted(maps.Keys(c.Phc2sysOptions)) {
		v := strings.TrimSpace(c.Phc2sysOptions[k])
		if takesArg, short := phc2sysShortOption(k); short {
			switch {
			case takesArg:
				args = append(args, k, v)
			case v == "true":
				args = append(args, k)
			}
			continue
		}
		args = append(args, "--"+k, v)
	}
	return args, nil
}
