package ptp

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRenderPtp4lConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "hardware slave over L2",
			cfg:  Config{Role: RoleSlave, Interface: "ens1f0", Domain: 24, Transport: TransportL2, Timestamping: TimestampingHardware, MaxOffsetNs: 100},
			want: `# ptp4l configuration rendered by the tickstack agent (role slave); edits are overwritten.
[global]
domainNumber 24
slaveOnly 1
time_stamping hardware
uds_address /run/tickstack/ptp4l.sock
[ens1f0]
network_transport L2
`,
		},
		{
			name: "software grandmaster over UDPv4",
			cfg:  Config{Role: RoleGrandmaster, Interface: "veth0", Domain: 0, Transport: TransportUDPv4, Timestamping: TimestampingSoftware, MaxOffsetNs: 100},
			want: `# ptp4l configuration rendered by the tickstack agent (role grandmaster); edits are overwritten.
[global]
domainNumber 0
time_stamping software
uds_address /run/tickstack/ptp4l.sock
[veth0]
network_transport UDPv4
masterOnly 1
`,
		},
		{
			name: "hardware boundary clock: a section per port, the port options in each",
			cfg: Config{Role: RoleBoundary, Interface: "ens1f0", Interfaces: []string{"ens1f0", "ens2f0"}, Domain: 24, Transport: TransportL2,
				Timestamping: TimestampingHardware, MaxOffsetNs: 100, Ptp4lOptions: map[string]string{"logSyncInterval": "-4"}},
			want: `# ptp4l configuration rendered by the tickstack agent (role boundary); edits are overwritten.
[global]
domainNumber 24
boundary_clock_jbod 1
time_stamping hardware
uds_address /run/tickstack/ptp4l.sock
[ens1f0]
network_transport L2
logSyncInterval -4
[ens2f0]
network_transport L2
logSyncInterval -4
`,
		},
		{
			name: "options split by scope and sorted",
			cfg: Config{Role: RoleSlave, Interface: "eth1", Domain: 7, Transport: TransportUDPv4, Timestamping: TimestampingSoftware, MaxOffsetNs: 100,
				Ptp4lOptions: map[string]string{
					"logSyncInterval":        "-3",
					"priority2":              "100",
					"announceReceiptTimeout": " 3 ",
					"clock_servo":            "linreg",
					"productDescription":     ";;",
				}},
			want: `# ptp4l configuration rendered by the tickstack agent (role slave); edits are overwritten.
[global]
domainNumber 7
slaveOnly 1
time_stamping software
uds_address /run/tickstack/ptp4l.sock
clock_servo linreg
priority2 100
productDescription ;;
[eth1]
network_transport UDPv4
announceReceiptTimeout 3
logSyncInterval -3
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderPtp4lConfig(tt.cfg, "/run/tickstack/ptp4l.sock")
			if err != nil {
				t.Fatalf("RenderPtp4lConfig() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("RenderPtp4lConfig() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestRenderRefusesInvalid(t *testing.T) {
	bad := Config{Role: RoleSlave, Interface: "eth0", Domain: 200, Transport: TransportL2, Timestamping: TimestampingHardware, MaxOffsetNs: 1}
	if _, err := RenderPtp4lConfig(bad, "/x.sock"); err == nil || !strings.Contains(err.Error(), "ptp.domain") {
		t.Errorf("RenderPtp4lConfig(domain 200) error = %v, want a ptp.domain error", err)
	}
	if _, err := Phc2sysArgs(bad, "/x.sock"); err == nil || !strings.Contains(err.Error(), "ptp.domain") {
		t.Errorf("Phc2sysArgs(domain 200) error = %v, want a ptp.domain error", err)
	}
	good := validConfig()
	if _, err := RenderPtp4lConfig(good, ""); err == nil {
		t.Error("RenderPtp4lConfig with an empty socket path: want an error")
	}
	good.Timestamping = TimestampingSoftware
	if _, err := Phc2sysArgs(good, "/x.sock"); err == nil || !strings.Contains(err.Error(), "software") {
		t.Errorf("Phc2sysArgs(software) error = %v, want a refusal naming software timestamping", err)
	}
}

func TestPhc2sysArgs(t *testing.T) {
	base := Config{Interface: "ens1f0", Domain: 24, Transport: TransportL2, Timestamping: TimestampingHardware, MaxOffsetNs: 100, HoldTime: time.Second}
	tests := []struct {
		name    string
		role    Role
		options map[string]string
		want    []string
	}{
		{name: "slave", role: RoleSlave,
			want: []string{"-a", "-r", "-n", "24", "-z", "/s.sock", "-m", "-q"}},
		{name: "grandmaster also uses the system clock as source", role: RoleGrandmaster,
			want: []string{"-a", "-r", "-r", "-n", "24", "-z", "/s.sock", "-m", "-q"}},
		{name: "options: short flags, long options, boolean flag", role: RoleSlave,
			options: map[string]string{"step_threshold": "0.1", "-R": "16", "-x": "true", "-N": "3"},
			want:    []string{"-a", "-r", "-n", "24", "-z", "/s.sock", "-m", "-q", "-N", "3", "-R", "16", "-x", "--step_threshold", "0.1"}},
		{name: "boolean flag off is left out", role: RoleSlave,
			options: map[string]string{"-x": "false"},
			want:    []string{"-a", "-r", "-n", "24", "-z", "/s.sock", "-m", "-q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.Role, c.Phc2sysOptions = tt.role, tt.options
			got, err := Phc2sysArgs(c, "/s.sock")
			if err != nil {
				t.Fatalf("Phc2sysArgs() error = %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Phc2sysArgs() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPtp4lArgs(t *testing.T) {
	if got, want := Ptp4lArgs("/etc/p.conf"), []string{"-f", "/etc/p.conf", "-m", "-q"}; !slices.Equal(got, want) {
		t.Errorf("Ptp4lArgs() = %q, want %q", got, want)
	}
}
