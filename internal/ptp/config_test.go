package ptp

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{
		Role:         RoleSlave,
		Interface:    "ens1f0",
		Domain:       24,
		Transport:    TransportL2,
		Timestamping: TimestampingHardware,
		MaxOffsetNs:  100,
		HoldTime:     5 * time.Second,
	}
}

func TestWithDefaults(t *testing.T) {
	got := Config{Interface: "eth0"}.WithDefaults()
	want := Config{Interface: "eth0", Role: RoleSlave, Transport: TransportUDPv4,
		Timestamping: TimestampingHardware, MaxOffsetNs: DefaultMaxOffsetNs}
	if got.Role != want.Role || got.Transport != want.Transport || got.Timestamping != want.Timestamping ||
		got.MaxOffsetNs != want.MaxOffsetNs || got.HoldTime != want.HoldTime || got.Domain != 0 {
		t.Fatalf("WithDefaults() = %+v, want %+v", got, want)
	}
	if got.SchedPolicy != SchedFIFO || got.SchedPriority != 10 || got.MaxSystemOffsetNs != 1000 {
		t.Fatalf("WithDefaults() scheduling %s %d, system offset %d, want SCHED_FIFO 10 and 1000", got.SchedPolicy, got.SchedPriority, got.MaxSystemOffsetNs)
	}
	if o := (Config{Interface: "eth0", SchedPolicy: SchedOther}).WithDefaults(); o.SchedPriority != 0 {
		t.Fatalf("WithDefaults() gave SCHED_OTHER priority %d", o.SchedPriority)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("defaulted config must be valid: %v", err)
	}
	kept := validConfig().WithDefaults()
	if kept.Transport != TransportL2 || kept.MaxOffsetNs != 100 || kept.HoldTime != 5*time.Second {
		t.Fatalf("WithDefaults overwrote set fields: %+v", kept)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		// wantErr lists substrings that must all appear in the error; empty means valid.
		wantErr []string
	}{
		{name: "valid hardware slave", mutate: func(*Config) {}},
		{name: "valid software grandmaster", mutate: func(c *Config) {
			c.Role, c.Timestamping, c.Transport = RoleGrandmaster, TimestampingSoftware, TransportUDPv4
		}},
		{name: "valid options", mutate: func(c *Config) {
			c.Ptp4lOptions = map[string]string{"logSyncInterval": "-4", "priority1": "10", "G.8275.portDS.localPriority": "128"}
			c.Phc2sysOptions = map[string]string{"-R": "8", "step_threshold": "0.1", "-x": "true"}
		}},
		{name: "domain 127 is the top", mutate: func(c *Config) { c.Domain = 127 }},
		{name: "valid boundary clock", mutate: func(c *Config) {
			c.Role, c.Interfaces = RoleBoundary, []string{"ens1f0", "ens1f1", "ens2f0"}
		}},
		{name: "boundary clock with one port", mutate: func(c *Config) { c.Role, c.Interfaces = RoleBoundary, []string{"ens1f0"} },
			wantErr: []string{"ptp.interfaces: a boundary clock has 1 ports", "list at least two interfaces"}},
		{name: "several ports on a slave", mutate: func(c *Config) { c.Interfaces = []string{"ens1f0", "ens1f1"} },
			wantErr: []string{"ptp.interfaces: 2 ports with role slave", `set ptp.role to "boundary"`}},
		{name: "a port twice", mutate: func(c *Config) { c.Role, c.Interfaces = RoleBoundary, []string{"ens1f0", "ens1f0"} },
			wantErr: []string{`ptp.interfaces[1]: "ens1f0" is listed twice`}},
		{name: "SCHED_FIFO 65 pinned", mutate: func(c *Config) { c.SchedPolicy, c.SchedPriority, c.CPUs = SchedFIFO, 65, "0-1,4" }},
		{name: "SCHED_FIFO above 65", mutate: func(c *Config) { c.SchedPolicy, c.SchedPriority = SchedFIFO, 66 },
			wantErr: []string{"ptp.schedulingPriority: 66 is out of range 1..65"}},
		{name: "priority with SCHED_OTHER", mutate: func(c *Config) { c.SchedPolicy, c.SchedPriority = SchedOther, 5 },
			wantErr: []string{"ptp.schedulingPriority: 5 is set with policy SCHED_OTHER", "set ptp.schedulingPolicy to SCHED_FIFO"}},
		{name: "unknown policy", mutate: func(c *Config) { c.SchedPolicy = "SCHED_RR" },
			wantErr: []string{`ptp.schedulingPolicy: unknown policy "SCHED_RR"`}},
		{name: "bad CPU list", mutate: func(c *Config) { c.CPUs = "0-" },
			wantErr: []string{`ptp.cpus: "0-" is not a CPU list`}},
		{name: "domain too high", mutate: func(c *Config) { c.Domain = 128 },
			wantErr: []string{"ptp.domain: 128 is out of range 0..127", "refuses domains above 127"}},
		{name: "domain negative", mutate: func(c *Config) { c.Domain = -1 },
			wantErr: []string{"ptp.domain: -1 is out of range"}},
		{name: "unknown role", mutate: func(c *Config) { c.Role = "transparent" },
			wantErr: []string{`ptp.role: unknown role "transparent"`, `use "slave", "grandmaster" or "boundary"`}},
		{name: "empty interface", mutate: func(c *Config) { c.Interface = "" },
			wantErr: []string{"ptp.interface: is empty"}},
		{name: "interface too long", mutate: func(c *Config) { c.Interface = "averyveryverylongname" },
			wantErr: []string{"ptp.interface:", "longer than the 15 characters"}},
		{name: "interface with bracket", mutate: func(c *Config) { c.Interface = "eth0]\n[global" },
			wantErr: []string{"ptp.interface:", "cannot hold"}},
		{name: "unknown transport", mutate: func(c *Config) { c.Transport = "UDPv6" },
			wantErr: []string{`ptp.transport: unknown transport "UDPv6"`}},
		{name: "unknown timestamping", mutate: func(c *Config) { c.Timestamping = "legacy" },
			wantErr: []string{`ptp.timestamping: unknown timestamping "legacy"`}},
		{name: "zero max offset", mutate: func(c *Config) { c.MaxOffsetNs = 0 },
			wantErr: []string{"ptp.maxOffsetNs: 0 is not a positive"}},
		{name: "negative hold time", mutate: func(c *Config) { c.HoldTime = -time.Second },
			wantErr: []string{"ptp.holdTime: -1s is negative"}},
		{name: "unknown ptp4l option", mutate: func(c *Config) { c.Ptp4lOptions = map[string]string{"noSuchOption": "1"} },
			wantErr: []string{`ptp.ptp4lOptions[noSuchOption]: unknown ptp4l option "noSuchOption"`, "ptp4l(8)"}},
		{name: "ptp4l option with wrong case gets a suggestion", mutate: func(c *Config) { c.Ptp4lOptions = map[string]string{"logsyncinterval": "-3"} },
			wantErr: []string{`unknown ptp4l option "logsyncinterval"`, `did you mean "logSyncInterval"?`}},
		{name: "managed ptp4l option", mutate: func(c *Config) { c.Ptp4lOptions = map[string]string{"domainNumber": "3"} },
			wantErr: []string{"ptp.ptp4lOptions[domainNumber]: is set by the agent; set ptp.domain instead"}},
		{name: "slaveOnly belongs to role", mutate: func(c *Config) { c.Ptp4lOptions = map[string]string{"slaveOnly": "1"} },
			wantErr: []string{"set ptp.role instead"}},
		{name: "ptp4l option with empty value", mutate: func(c *Config) { c.Ptp4lOptions = map[string]string{"priority1": " "} },
			wantErr: []string{"ptp.ptp4lOptions[priority1]: value is empty"}},
		{name: "ptp4l option value injecting a section", mutate: func(c *Config) { c.Ptp4lOptions = map[string]string{"priority1": "1\n[global]"} },
			wantErr: []string{"ptp.ptp4lOptions[priority1]: value holds a line break"}},
		{name: "phc2sys with software timestamping", mutate: func(c *Config) {
			c.Timestamping = TimestampingSoftware
			c.Phc2sysOptions = map[string]string{"-R": "8"}
		}, wantErr: []string{"ptp.phc2sysOptions: phc2sys does not run with software timestamping", `set ptp.timestamping to "hardware"`}},
		{name: "unknown phc2sys option", mutate: func(c *Config) { c.Phc2sysOptions = map[string]string{"-Q": "1"} },
			wantErr: []string{`ptp.phc2sysOptions[-Q]: unknown phc2sys option "-Q"`}},
		{name: "managed phc2sys option", mutate: func(c *Config) { c.Phc2sysOptions = map[string]string{"-s": "eth0"} },
			wantErr: []string{"ptp.phc2sysOptions[-s]: is set by the agent", "automatic mode"}},
		{name: "phc2sys flag without argument", mutate: func(c *Config) { c.Phc2sysOptions = map[string]string{"-x": "1"} },
			wantErr: []string{"flag -x takes no argument"}},
		{name: "every problem is reported", mutate: func(c *Config) { c.Domain, c.Transport, c.MaxOffsetNs = 300, "x", -1 },
			wantErr: []string{"ptp.domain", "ptp.transport", "ptp.maxOffsetNs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "ptp.") {
				t.Errorf("Validate() error %v does not carry a *FieldError with a ptp.* field", err)
			}
		})
	}
}
