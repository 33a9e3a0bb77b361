package tuning

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
)

// systemdStandIn is systemctl for a host-root tree (this machine runs no systemd): each unit's
// enablement in <state>/<unit>.enabled, a mask as <state>/<unit>.masked plus the link to /dev/null
// in the tree's /etc/systemd/system that systemctl mask makes, activity as <state>/<unit>.active.
// It prints and exits as systemctl does (is-enabled 1 unless enabled, is-active 3 when inactive,
// start of a masked unit refused) and logs each change to <state>/log.
const systemdStandIn = `state=$1 root=$2; shift 2
cmd=$1 unit=$2
[ -e "$state/$unit.enabled" ] || { echo "Failed to get unit file state for $unit: No such file or directory" >&2; exit 1; }
case $cmd in
is-enabled)
  if [ -e "$state/$unit.masked" ]; then echo masked; exit 1; fi
  s=$(cat "$state/$unit.enabled"); echo "$s"; [ "$s" = enabled ] ;;
is-active)
  if [ -e "$state/$unit.active" ]; then echo active; else echo inactive; exit 3; fi ;;
mask)
  touch "$state/$unit.masked"; mkdir -p "$root/etc/systemd/system"; ln -sf /dev/null "$root/etc/systemd/system/$unit"; echo "mask $unit" >> "$state/log" ;;
unmask)
  rm -f "$state/$unit.masked" "$root/etc/systemd/system/$unit"; echo "unmask $unit" >> "$state/log" ;;
start)
  if [ -e "$state/$unit.masked" ]; then echo "Failed to start $unit: Unit $unit is masked." >&2; exit 1; fi
  touch "$state/$unit.active"; echo "start $unit" >> "$state/log" ;;
stop)
  rm -f "$state/$unit.active"; echo "stop $unit" >> "$state/log" ;;
*) echo "unknown command $cmd" >&2; exit 1 ;;
esac`

// TestTreeTimeServices: with PTP owning the clock the engine stops and masks the host's clock
// daemons (chrony enabled and running, timesyncd installed but disabled; ntp not installed, left
// out), journals their states, masks again one unmasked and started behind its back, and restores
// exactly the originals: chrony unmasked and running again, timesyncd unmasked and still stopped.
func TestTreeTimeServices(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	buildTree(t, root, false)
	for _, f := range []string{"lib/systemd/system/chrony.service", "lib/systemd/system/systemd-timesyncd.service"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), []byte("[Service]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{"chrony.service.enabled": "enabled", "chrony.service.active": "", "systemd-timesyncd.service.enabled": "disabled"} {
		if err := os.WriteFile(filepath.Join(state, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := treeEngine(root)
	e.Host.Systemctl = []string{"/bin/sh", "-c", systemdStandIn, "systemctl", state, root}
	unit := func(u string) string {
		s, err := e.Host.UnitState(u)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	log := func() string {
		b, _ := os.ReadFile(filepath.Join(state, "log"))
		return strings.TrimSuffix(strings.ReplaceAll(string(b), "\n", "; "), "; ")
	}

	d := &Desired{TimeServices: slices.Clone(host.TimeServiceUnits)}
	rep, err := e.Apply(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rep.Changed, " "); got != "timeservice/chrony.service timeservice/systemd-timesyncd.service" {
		t.Errorf("changed %q, want chrony and timesyncd (ntp is not installed)", got)
	}
	if rep.Before["timeservice/chrony.service"] != "enabled/active" {
		t.Errorf("chrony found %q, want enabled/active", rep.Before["timeservice/chrony.service"])
	}
	for _, u := range []string{"chrony.service", "systemd-timesyncd.service"} {
		if s := unit(u); s != host.UnitMaskedInactive {
			t.Errorf("%s is %s after apply, want %s", u, s, host.UnitMaskedInactive)
		}
	}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "timeservice/") && r.State != InSync {
			t.Errorf("%s not in sync: %+v", r.Name, r)
		}
	}

	// Someone unmasks chrony and starts it: the next apply masks and stops it again.
	if err := e.Host.SetUnitState("chrony.service", "enabled/active"); err != nil {
		t.Fatal(err)
	}
	if rep, err = e.Apply(d); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rep.Changed, " "); got != "timeservice/chrony.service" || unit("chrony.service") != host.UnitMaskedInactive {
		t.Errorf("drift: changed %q, chrony %s", got, unit("chrony.service"))
	}

	if _, err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	if s := unit("chrony.service"); s != "enabled/active" {
		t.Errorf("chrony is %s after the restore, want enabled/active as found", s)
	}
	if s := unit("systemd-timesyncd.service"); s != "disabled/inactive" {
		t.Errorf("timesyncd is %s after the restore, want disabled/inactive as found", s)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/chrony.service")); err == nil {
		t.Error("chrony's mask is left after the restore")
	}
	want := "mask chrony.service; stop chrony.service; mask systemd-timesyncd.service; " + // apply
		"unmask chrony.service; start chrony.service; " + // behind the agent's back
		"mask chrony.service; stop chrony.service; " + // drift corrected
		"unmask systemd-timesyncd.service; unmask chrony.service; start chrony.service" // restore
	if got := log(); got != want {
		t.Errorf("systemctl calls:\n%s\nwant\n%s", got, want)
	}
}
