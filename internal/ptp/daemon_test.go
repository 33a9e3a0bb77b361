package ptp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

func TestNewDaemon(t *testing.T) {
	sw := Config{Interface: "eth0", Timestamping: TimestampingSoftware}
	hw := Config{Interface: "eth0", Timestamping: TimestampingHardware}
	dir := t.TempDir()
	tests := []struct {
		name    string
		cfg     Config
		opts    DaemonOptions
		wantErr string
		check   func(t *testing.T, d *Daemon)
	}{
		{name: "invalid config is refused with its field", cfg: Config{Interface: "eth0", Domain: 300},
			opts: DaemonOptions{RunDir: dir}, wantErr: "ptp.domain"},
		{name: "run dir required", cfg: sw, wantErr: "RunDir is required"},
		{name: "socket path too long", cfg: sw, opts: DaemonOptions{RunDir: "/" + strings.Repeat("d", 100)}, wantErr: "longer than 107 bytes"},
		{name: "missing ptp4l", cfg: sw, opts: DaemonOptions{RunDir: dir, Ptp4lPath: "/nonexistent/tsptp-ptp4l"}, wantErr: "finding ptp4l"},
		{name: "missing phc2sys with hardware timestamping", cfg: hw,
			opts: DaemonOptions{RunDir: dir, Ptp4lPath: "/bin/true", Phc2sysPath: "/nonexistent/tsptp-phc2sys"}, wantErr: "finding phc2sys"},
		{name: "software: ptp4l only, pmc reader", cfg: sw,
			opts: DaemonOptions{RunDir: dir, Ptp4lPath: "/bin/true", PmcPath: "/bin/true"},
			check: func(t *testing.T, d *Daemon) {
				if d.Phc2sys() != nil {
					t.Error("phc2sys supervisor with software timestamping")
				}
				if p, ok := d.reader.(PMC); !ok || p.UDSAddress != filepath.Join(dir, "ptp4l.sock") || p.Domain != 0 {
					t.Errorf("reader = %#v, want pmc on the daemon's socket", d.reader)
				}
				if d.Config().MaxOffsetNs != DefaultMaxOffsetNs || d.Config().Role != RoleSlave {
					t.Errorf("Config() = %+v, want defaults applied", d.Config())
				}
				if st := d.Status(); st.Synced || st.Reason != ReasonNoSample {
					t.Errorf("Status() before Run = %+v, want not synced, %s", st, ReasonNoSample)
				}
			}},
		{name: "no pmc: ptp4l output is the fallback", cfg: hw,
			opts: DaemonOptions{RunDir: dir, Ptp4lPath: "/bin/true", Phc2sysPath: "/bin/true", PmcPath: "/nonexistent/tsptp-pmc"},
			check: func(t *testing.T, d *Daemon) {
				if d.reader != Reader(d.logParser) {
					t.Errorf("reader = %#v, want the LogParser", d.reader)
				}
				if d.Phc2sys() == nil {
					t.Error("no phc2sys supervisor with hardware timestamping")
				}
			}},
		{name: "relative run dir is made absolute", cfg: sw,
			opts: DaemonOptions{RunDir: "tsptp-rel", Ptp4lPath: "/bin/true", PmcPath: "/bin/true"},
			check: func(t *testing.T, d *Daemon) {
				if !filepath.IsAbs(d.UDSAddress()) || !filepath.IsAbs(d.ConfigFile()) {
					t.Errorf("paths %s, %s are not absolute", d.UDSAddress(), d.ConfigFile())
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Logger = logr.Discard()
			d, err := NewDaemon(tt.cfg, tt.opts)
			if !tsutil.WantError(t, "NewDaemon()", err, tt.wantErr) {
				return
			}
			tt.check(t, d)
		})
	}
}

func TestPeriodicLineVerbosity(t *testing.T) {
	tests := []struct {
		line string
		want int
	}{
		{"ptp4l[339.690]: master offset        -12 s2 freq   +1234 path delay      5678", 1},
		{"ptp4l[339.690]: rms  774 max 1285 freq     +0 +/-   0 delay  2343 +/-   0", 1},
		{"phc2sys[100.1]: CLOCK_REALTIME phc offset       -17 s2 freq   -2345 delay    512", 1},
		{"ptp4l[316.037]: port 1: LISTENING to UNCALIBRATED on RS_SLAVE", 0},
		{"ptp4l[1073.389]: interface 'eth0' does not support requested timestamping mode", 0},
		{"phc2sys[1074.401]: Waiting for ptp4l...", 0},
	}
	for _, tt := range tests {
		if got := periodicLineVerbosity(tt.line); got != tt.want {
			t.Errorf("periodicLineVerbosity(%q) = %d, want %d", tt.line, got, tt.want)
		}
	}
}
