package ptp

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// Role is the PTP role this node plays.
type Role string

const (
	// RoleSlave is an ordinary clock that only ever follows a master (ptp4l slaveOnly). The normal
	// role of a trading node.
	RoleSlave Role = "slave"
	// RoleGrandmaster is an ordinary clock that only ever serves time (masterOnly on its port). Meant
	// for labs and tests where no real grandmaster exists.
	RoleGrandmaster Role = "grandmaster"
	// RoleBoundary is a boundary clock: one ptp4l over several ports (Interfaces), neither
	// slaveOnly nor masterOnly. The best master algorithm makes the port towards the best master
	// SLAVE, and this clock, locked to it, the master of the others.
	RoleBoundary Role = "boundary"
)

// Transport is the network transport of PTP messages.
type Transport string

const (
	// TransportL2 sends PTP over Ethernet frames (IEEE 802.3, ethertype 0x88F7).
	TransportL2 Transport = "L2"
	// TransportUDPv4 sends PTP over UDP/IPv4 multicast (ports 319 and 320), linuxptp's default.
	TransportUDPv4 Transport = "UDPv4"
)

// Timestamping says where packet time stamps are taken.
type Timestamping string

const (
	// TimestampingHardware uses the NIC's PTP hardware clock (PHC); phc2sys then copies the PHC's
	// time to the system clock.
	TimestampingHardware Timestamping = "hardware"
	// TimestampingSoftware uses kernel software time stamps (ptp4l -S) and disciplines the system
	// clock directly; for NICs without a PHC. Expect microseconds, not nanoseconds.
	TimestampingSoftware Timestamping = "software"
)

// SchedPolicy is the Linux scheduling policy ptp4l and phc2sys run with.
type SchedPolicy string

const (
	// SchedFIFO: real-time, at SchedPriority, ahead of every ordinary thread on their CPUs, so a
	// loaded node still answers sync messages and steers its clock on time.
	SchedFIFO SchedPolicy = "SCHED_FIFO"
	// SchedOther: the kernel's ordinary time-sharing policy.
	SchedOther SchedPolicy = "SCHED_OTHER"
)

// MaxSchedPriority is the highest SCHED_FIFO priority accepted for linuxptp: as the PTP
// operator's ptpSchedulingPriority, below the kernel's interrupt threads (50) plus margin for
// what a trading node runs above them.
const MaxSchedPriority = 65

// Defaults applied by WithDefaults to fields left at their zero value: the API's
// (tsv1.DefaultPTP*), which the CRD and internal/resolve give a profile too.
const (
	DefaultRole              = Role(tsv1.DefaultPTPRole)
	DefaultTransport         = Transport(tsv1.DefaultPTPTransport)
	DefaultTimestamping      = Timestamping(tsv1.DefaultPTPTimestamping)
	DefaultMaxOffsetNs       = tsv1.DefaultPTPMaxOffsetNs
	DefaultMaxSystemOffsetNs = tsv1.DefaultPTPMaxSystemOffsetNs
	DefaultSchedPolicy       = SchedPolicy(tsv1.DefaultPTPSchedulingPolicy)
	DefaultSchedPriority     = tsv1.DefaultPTPSchedulingPriority
	// DefaultHoldTime is how long the node may stay out of sync before TimeSynced turns false, for
	// the profile API to default an absent holdTime to. WithDefaults leaves HoldTime alone: zero is
	// a valid choice (react at once).
	DefaultHoldTime = tsv1.DefaultPTPHoldTime
)

// MaxDomain is the highest PTP domain number ptp4l 3.1 accepts (IEEE 1588-2008 reserves 128-255).
const MaxDomain = 127

// Config is the node-side view of a LatencyProfile's ptp section: what to run and how to judge it.
// Field names in errors use the profile's spelling (ptp.role, ptp.interface, ...).
type Config struct {
	// Role is slave (follow a master) or grandmaster (serve time; labs).
	Role Role
	// Interface is the network interface ptp4l runs on (one port), the first port of a boundary
	// clock.
	Interface string
	// Interfaces are a boundary clock's ports, in order (the first is Interface; ptp4l numbers
	// them 1, 2, ...). Empty for an ordinary clock.
	Interfaces []string
	// Domain is the PTP domain number, 0..127.
	Domain int
	// Transport is L2 or UDPv4.
	Transport Transport
	// Timestamping is hardware (NIC PHC + phc2sys) or software (ptp4l -S, no phc2sys).
	Timestamping Timestamping
	// Ptp4lOptions are extra ptp4l configuration file options (ptp4l(8)), option name to value.
	// Port options go to the interface's section, the others to [global]. Options the other fields
	// control are refused.
	Ptp4lOptions map[string]string
	// Phc2sysOptions are extra phc2sys options: a configuration option name (passed as --name
	// value) or a short flag such as "-R" (update rate) or "-N". Only valid with hardware
	// time stamping.
	Phc2sysOptions map[string]string
	// MaxOffsetNs is the largest |offsetFromMaster| in nanoseconds that still counts as in sync.
	MaxOffsetNs int64
	// MaxSystemOffsetNs is the largest |offset| of the system clock (CLOCK_REALTIME) from the
	// NIC's clock, as phc2sys reports it, that still counts as in sync (slaves only; with software
	// time stamping ptp4l steers the system clock itself and its offset is the system clock's).
	// Zero (only before WithDefaults) leaves the system clock unjudged.
	MaxSystemOffsetNs int64
	// HoldTime is how long the port may be out of SLAVE state or above MaxOffsetNs, without
	// interruption, before TimeSynced turns false. Zero means at once.
	HoldTime time.Duration
	// SchedPolicy and SchedPriority (1..MaxSchedPriority, SCHED_FIFO only) are the scheduling of
	// ptp4l and phc2sys.
	SchedPolicy   SchedPolicy
	SchedPriority int
	// CPUs, a CPU list ("0-1"), pins ptp4l and phc2sys there: the node's reserved CPUs, off the
	// isolated ones the trading threads own. Empty: no pinning.
	CPUs string
}

// WithDefaults returns a copy of c with empty Role, Transport, Timestamping, MaxOffsetNs and
// MaxSystemOffsetNs set to
// the package defaults. Domain 0 and HoldTime 0 are valid choices and stay as they are.
func (c Config) WithDefaults() Config {
	if c.Role == "" {
		c.Role = DefaultRole
	}
	if c.Interface == "" && len(c.Interfaces) > 0 {
		c.Interface = c.Interfaces[0]
	}
	if c.Transport == "" {
		c.Transport = DefaultTransport
	}
	if c.Timestamping == "" {
		c.Timestamping = DefaultTimestamping
	}
	if c.MaxOffsetNs == 0 {
		c.MaxOffsetNs = DefaultMaxOffsetNs
	}
	if c.MaxSystemOffsetNs == 0 {
		c.MaxSystemOffsetNs = DefaultMaxSystemOffsetNs
	}
	if c.SchedPolicy == "" {
		c.SchedPolicy = DefaultSchedPolicy
	}
	if c.SchedPolicy == SchedFIFO && c.SchedPriority == 0 {
		c.SchedPriority = DefaultSchedPriority
	}
	return c
}

// Ports are the interfaces ptp4l runs on, in its port order.
func (c Config) Ports() []string {
	if len(c.Interfaces) > 0 {
		return c.Interfaces
	}
	return []string{c.Interface}
}

// scheduling is the SCHED_FIFO priority (0: ordinary scheduling) and the CPUs (none: unpinned)
// for ptp4l and phc2sys; c is valid.
func (c Config) scheduling() (fifoPriority int, cpus []int) {
	if c.SchedPolicy == SchedFIFO {
		fifoPriority = c.SchedPriority
	}
	if c.CPUs != "" {
		cpus = cpuset.MustParse(c.CPUs).CPUs()
	}
	return fifoPriority, cpus
}

// RunsPhc2sys reports whether the agent runs phc2sys for c: only with hardware time stamping, where a
// NIC clock must be copied to the system clock (or, for a grandmaster, the other way round).
func (c Config) RunsPhc2sys() bool { return c.Timestamping == TimestampingHardware }

// FieldError is one invalid field of a Config: which field, what is wrong, and how to fix it.
type FieldError struct {
	// Field is the profile path of the field, e.g. "ptp.domain" or "ptp.ptp4lOptions[priority1]".
	Field string
	// Problem says what is wrong.
	Problem string
	// Fix says what to do instead.
	Fix string
}

// Error renders "field: problem; fix".
func (e *FieldError) Error() string {
	if e.Fix == "" {
		return e.Field + ": " + e.Problem
	}
	return e.Field + ": " + e.Problem + "; " + e.Fix
}

// Validate checks c as given (call WithDefaults first to accept empty fields) and returns every
// problem found, joined; each is a *FieldError naming the field and the fix.
func (c Config) Validate() error {
	var errs []error
	add := func(field, problem, fix string) {
		errs = append(errs, &FieldError{Field: field, Problem: problem, Fix: fix})
	}

	switch c.Role {
	case RoleSlave, RoleGrandmaster, RoleBoundary:
	default:
		add("ptp.role", fmt.Sprintf("unknown role %q", c.Role), `use "slave", "grandmaster" or "boundary"`)
	}
	switch {
	case c.Role == RoleBoundary && len(c.Interfaces) < 2:
		add("ptp.interfaces", fmt.Sprintf("a boundary clock has %d ports", len(c.Interfaces)),
			"list at least two interfaces in ptp.interfaces: the one towards the grandmaster and those it serves")
	case c.Role != RoleBoundary && len(c.Interfaces) > 1:
		add("ptp.interfaces", fmt.Sprintf("%d ports with role %s", len(c.Interfaces), c.Role),
			`several ports make a boundary clock: set ptp.role to "boundary", or give one interface`)
	case len(c.Interfaces) > 0 && c.Interfaces[0] != c.Interface:
		add("ptp.interfaces", fmt.Sprintf("the first port %q is not ptp.interface %q", c.Interfaces[0], c.Interface),
			"give the ports in ptp.interfaces alone")
	}
	seen := map[string]bool{}
	for i, name := range c.Interfaces {
		if p := checkInterfaceName(name); p != "" {
			add(fmt.Sprintf("ptp.interfaces[%d]", i), p, "give the name of a network interface, e.g. ens1f1")
		} else if seen[name] {
			add(fmt.Sprintf("ptp.interfaces[%d]", i), fmt.Sprintf("%q is listed twice", name), "list each port once")
		}
		seen[name] = true
	}
	if p := checkInterfaceName(c.Interface); p != "" {
		add("ptp.interface", p, "give the name of the network interface ptp4l runs on, e.g. ens1f0")
	}
	if c.Domain < 0 || c.Domain > MaxDomain {
		add("ptp.domain", fmt.Sprintf("%d is out of range 0..%d", c.Domain, MaxDomain),
			"ptp4l refuses domains above 127 (reserved by IEEE 1588); use the domain your grandmaster announces, e.g. 0 (default profile) or 24 (G.8275.1)")
	}
	switch c.Transport {
	case TransportL2, TransportUDPv4:
	default:
		add("ptp.transport", fmt.Sprintf("unknown transport %q", c.Transport), `use "L2" or "UDPv4"`)
	}
	switch c.Timestamping {
	case TimestampingHardware, TimestampingSoftware:
	default:
		add("ptp.timestamping", fmt.Sprintf("unknown timestamping %q", c.Timestamping),
			`use "hardware" (NIC with a PTP hardware clock) or "software"`)
	}
	if c.MaxOffsetNs <= 0 {
		add("ptp.maxOffsetNs", fmt.Sprintf("%d is not a positive number of nanoseconds", c.MaxOffsetNs),
			"set the largest |offsetFromMaster| that still counts as in sync, e.g. 1000")
	}
	switch c.SchedPolicy {
	case "", SchedOther:
		if c.SchedPriority != 0 {
			add("ptp.schedulingPriority", fmt.Sprintf("%d is set with policy %s, which has no priority", c.SchedPriority, SchedOther),
				"remove ptp.schedulingPriority, or set ptp.schedulingPolicy to SCHED_FIFO")
		}
	case SchedFIFO:
		if c.SchedPriority < 1 || c.SchedPriority > MaxSchedPriority {
			add("ptp.schedulingPriority", fmt.Sprintf("%d is out of range 1..%d", c.SchedPriority, MaxSchedPriority),
				"use a SCHED_FIFO priority from 1 to 65 (the PTP operator's range), e.g. 10")
		}
	default:
		add("ptp.schedulingPolicy", fmt.Sprintf("unknown policy %q", c.SchedPolicy), `use "SCHED_FIFO" or "SCHED_OTHER"`)
	}
	if c.CPUs != "" {
		if set, err := cpuset.Parse(c.CPUs); err != nil || set.IsEmpty() {
			add("ptp.cpus", fmt.Sprintf("%q is not a CPU list", c.CPUs), "the agent pins linuxptp to the node's reserved CPUs: fix spec.cpu.reserved")
		}
	}
	if c.MaxSystemOffsetNs < 0 {
		add("ptp.maxSystemOffsetNs", fmt.Sprintf("%d is negative", c.MaxSystemOffsetNs),
			"set the largest |offset| of the system clock from the NIC's clock that still counts as in sync, e.g. 1000")
	}
	if c.HoldTime < 0 {
		add("ptp.holdTime", fmt.Sprintf("%s is negative", c.HoldTime),
			"use 0 to react at once, or a duration such as 10s")
	}

	for _, k := range slices.Sorted(maps.Keys(c.Ptp4lOptions)) {
		errs = append(errs, checkPtp4lOption(k, c.Ptp4lOptions[k])...)
	}
	if len(c.Phc2sysOptions) > 0 && c.Timestamping == TimestampingSoftware {
		add("ptp.phc2sysOptions", "phc2sys does not run with software timestamping: there is no NIC clock to copy, ptp4l disciplines the system clock itself",
			`remove ptp.phc2sysOptions, or set ptp.timestamping to "hardware" if the NIC has a PTP hardware clock`)
	} else {
		for _, k := range slices.Sorted(maps.Keys(c.Phc2sysOptions)) {
			errs = append(errs, checkPhc2sysOption(k, c.Phc2sysOptions[k])...)
		}
	}
	return errors.Join(errs...)
}

func checkInterfaceName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > 15:
		return fmt.Sprintf("%q is longer than the 15 characters Linux allows", name)
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not an interface name", name)
	case strings.ContainsAny(name, "/: \t\r\n[]"):
		return fmt.Sprintf("%q contains a character Linux interface names cannot hold", name)
	}
	return ""
}

// checkValue refuses values that would break the line-oriented ptp4l file or a command line.
func checkValue(field, value string) error {
	switch {
	case strings.TrimSpace(value) == "":
		return &FieldError{Field: field, Problem: "value is empty", Fix: "give a value, see ptp4l(8) for the option's range"}
	case strings.ContainsAny(value, "\r\n"):
		return &FieldError{Field: field, Problem: "value holds a line break", Fix: "give a single-line value"}
	}
	return nil
}

func checkPtp4lOption(key, value string) []error {
	field := fmt.Sprintf("ptp.ptp4lOptions[%s]", key)
	if owner, ok := ptp4lManaged(key); ok {
		return []error{&FieldError{Field: field, Problem: "is set by the agent", Fix: owner}}
	}
	if _, ok := ptp4lOptionScope(key); !ok {
		fix := "see ptp4l(8) of linuxptp 3.1 for the options it accepts"
		if s := suggest(key, ptp4lKnown()); s != "" {
			fix = fmt.Sprintf("did you mean %q? (option names are case-sensitive)", s)
		}
		return []error{&FieldError{Field: field, Problem: fmt.Sprintf("unknown ptp4l option %q", key), Fix: fix}}
	}
	if err := checkValue(field, value); err != nil {
		return []error{err}
	}
	return nil
}

func checkPhc2sysOption(key, value string) []error {
	field := fmt.Sprintf("ptp.phc2sysOptions[%s]", key)
	if owner, ok := phc2sysManaged(key); ok {
		return []error{&FieldError{Field: field, Problem: "is set by the agent", Fix: owner}}
	}
	long := phc2sysLongOption(key)
	takesArg, short := phc2sysShortOption(key)
	if !long && !short {
		known := append(strings.Fields(phc2sysLongOptionNames), strings.Fields(phc2sysShortFlags)...)
		fix := "use a phc2sys(8) configuration option name (e.g. step_threshold) or a short flag (e.g. -R)"
		if s := suggest(key, known); s != "" {
			fix = fmt.Sprintf("did you mean %q?", s)
		}
		return []error{&FieldError{Field: field, Problem: fmt.Sprintf("unknown phc2sys option %q", key), Fix: fix}}
	}
	if short && !takesArg {
		// A flag without an argument (-x): the value must say whether it is on.
		if value != "true" && value != "false" {
			return []error{&FieldError{Field: field, Problem: fmt.Sprintf("flag %s takes no argument, got %q", key, value), Fix: `use "true" to pass the flag or "false" to leave it out`}}
		}
		return nil
	}
	if err := checkValue(field, value); err != nil {
		return []error{err}
	}
	return nil
}

// suggest returns the known name equal to key ignoring case, dashes and underscores, if any.
func suggest(key string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(s))
	}
	n := norm(key)
	for _, k := range known {
		if norm(k) == n {
			return k
		}
	}
	return ""
}
