package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/bootloader"
)

func parse(t *testing.T, env string, args ...string) *options {
	t.Helper()
	t.Setenv("NODE_NAME", env)
	o := &options{}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestFlagsBuildTheReconciler(t *testing.T) {
	r, err := parse(t, "node-1", "--host-root=/host", "--reboot-command=/bin/true now", "--eviction-grace-period=0").reconciler()
	if err != nil {
		t.Fatal(err)
	}
	if r.NodeName != "node-1" || r.Host.Root != "/host" || r.Engine.Host != r.Host || strings.Join(r.RebootCommand, " ") != "/bin/true now" {
		t.Errorf("reconciler %+v", r)
	}
	if r.EvictionGracePeriod == nil || *r.EvictionGracePeriod != 0 {
		t.Errorf("eviction grace period %v, want 0", r.EvictionGracePeriod)
	}
	g, ok := r.Boot.Writer.(*bootloader.GRUB)
	if !ok || strings.Join(g.UpdateCommand, " ") != "nsenter --target 1 --mount -- update-grub" || r.Boot.RetiredPath != "/host/var/lib/tickstack/bootloader/retired-args" {
		t.Errorf("boot loader %+v", r.Boot)
	}

	r, err = parse(t, "", "--node-name=n2", "--boot-loader=none").reconciler()
	if err != nil || r.NodeName != "n2" || r.Boot != nil || r.EvictionGracePeriod != nil {
		t.Errorf("--node-name overrides $NODE_NAME, --boot-loader=none: %+v %v", r, err)
	}
	if r, _ := parse(t, "n3", "--boot-loader=bls").reconciler(); r == nil {
		t.Error("--boot-loader=bls refused")
	} else if _, ok := r.Boot.Writer.(*bootloader.BLS); !ok {
		t.Errorf("--boot-loader=bls gives %T", r.Boot.Writer)
	}

	for _, tt := range []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, "--node-name (or $NODE_NAME) is required"},
		{"n", []string{"--boot-loader=lilo"}, `--boot-loader="lilo": use grub, bls or none`},
	} {
		if _, err := parse(t, tt.env, tt.args...).reconciler(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestCommandFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"nsenter", "--target", "1", "--mount", "--", "systemctl", "reboot"}},
		{[]string{"--reboot-command=systemctl reboot"}, []string{"systemctl", "reboot"}},
		{[]string{"--reboot-command=/bin/sh", "--reboot-command=-c", "--reboot-command=echo a b"}, []string{"/bin/sh", "-c", "echo a b"}},
		{[]string{"--reboot-command="}, nil},
	} {
		r, err := parse(t, "n", tt.args...).reconciler()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(r.RebootCommand, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%v: reboot command %q, want %q", tt.args, r.RebootCommand, tt.want)
		}
	}
}

func TestPTPFlags(t *testing.T) {
	r, err := parse(t, "n", "--host-root=/host").reconciler()
	if err != nil {
		t.Fatal(err)
	}
	if p := r.PTP; p.Ptp4lPath != "" || p.Phc2sysPath != "" || p.PmcPath != "" || p.RunDir != "" || p.Metrics == nil {
		t.Errorf("defaults: PTP options %+v, want PATH lookup, the run dir below the host root and metrics", p)
	}

	// Any executable file stands in for the linuxptp tools: the flags only check the path.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err = parse(t, "n", "--ptp4l-path="+exe, "--phc2sys-path="+exe, "--pmc-path="+exe, "--ptp-run-dir="+dir).reconciler()
	if err != nil {
		t.Fatal(err)
	}
	if p := r.PTP; p.Ptp4lPath != exe || p.Phc2sysPath != exe || p.PmcPath != exe || p.RunDir != dir {
		t.Errorf("PTP options %+v, want %s for the tools and run dir %s", p, exe, dir)
	}

	long := "/" + strings.Repeat("d", 100)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--ptp4l-path=sbin/ptp4l"}, `--ptp4l-path="sbin/ptp4l": give an absolute path`},
		{[]string{"--pmc-path=" + dir}, "--pmc-path=" + `"` + dir + `" is not an executable file`},
		{[]string{"--phc2sys-path=" + dir + "/phc2sys"}, "install linuxptp in the agent's image or fix the path"},
		{[]string{"--ptp-run-dir=run/ptp"}, `--ptp-run-dir="run/ptp": give an absolute directory`},
		{[]string{"--ptp-run-dir=" + long}, "more than the 107 Linux allows: choose a shorter directory"},
	} {
		if _, err := parse(t, "n", tt.args...).reconciler(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
