package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// TimeServiceUnits are the systemd units of the daemons that steer the system clock by themselves
// (Debian's and Red Hat's names): on a node where PTP owns the clock, each fights phc2sys (or
// ptp4l with software time stamping) for it.
var TimeServiceUnits = []string{
	"chrony.service", "chronyd.service", "ntp.service", "ntpd.service", "ntpsec.service",
	"openntpd.service", "systemd-timesyncd.service",
}

// UnitMaskedInactive is the state of a unit stopped and masked ("<is-enabled>/<is-active>").
const UnitMaskedInactive = "masked/inactive"

// unitDirs are where systemd finds unit files, relative to Root.
var unitDirs = []string{"/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}

// InstalledUnits returns those of units whose unit file the host has. A mask (a link to
// /dev/null) is not a unit file: a unit masked and not installed is not listed.
func (h *Host) InstalledUnits(units []string) []string {
	var out []string
	for _, u := range units {
		for _, dir := range unitDirs {
			p := h.Path(dir + "/" + u)
			if target, err := os.Readlink(p); err == nil {
				if target == "/dev/null" {
					continue
				}
				out = append(out, u) // an alias or a link to a unit file elsewhere
				break
			}
			if _, err := os.Stat(p); err == nil {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// systemctl runs the host's systemctl (Host.Systemctl) with args and returns its standard output,
// trimmed. systemctl's is-enabled and is-active exit non-zero for states other than enabled and
// active and still print them: the output is returned with the error.
func (h *Host) systemctl(args ...string) (string, error) {
	if len(h.Systemctl) == 0 {
		return "", errors.New("no systemctl command is configured (the agent's --systemctl-command)")
	}
	cmd := exec.Command(h.Systemctl[0], append(h.Systemctl[1:len(h.Systemctl):len(h.Systemctl)], args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", strings.Join(h.Systemctl, " "), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), err
}

// UnitState is unit's state as "<is-enabled>/<is-active>": "enabled/active", "disabled/inactive",
// "masked/inactive". Every active state other than active (failed, activating) reads inactive.
func (h *Host) UnitState(unit string) (string, error) {
	enabled, err := h.systemctl("is-enabled", unit)
	if enabled == "" {
		return "", fmt.Errorf("reading whether %s is enabled: %w", unit, err)
	}
	active, _ := h.systemctl("is-active", unit)
	if active != "active" {
		active = "inactive"
	}
	return enabled + "/" + active, nil
}

// SetUnitState brings unit to state (UnitState's form): masked and stopped
// (UnitMaskedInactive), or, restoring an original, unmasked and started when it was active.
// Whether the unit is enabled is never changed: a mask overrides it, and unmasking gives it back.
func (h *Host) SetUnitState(unit, state string) error {
	wantEnabled, wantActive, ok := strings.Cut(state, "/")
	if !ok {
		return fmt.Errorf("unit state %q is not <is-enabled>/<is-active>", state)
	}
	cur, err := h.UnitState(unit)
	if err != nil {
		return err
	}
	curEnabled, curActive, _ := strings.Cut(cur, "/")
	run := func(args ...string) error {
		_, err := h.systemctl(args...)
		return err
	}
	if wantEnabled == "masked" {
		if curEnabled != "masked" {
			if err := run("mask", unit); err != nil {
				return err
			}
		}
		if curActive == "active" {
			return run("stop", unit)
		}
		return nil
	}
	if curEnabled == "masked" {
		if err := run("unmask", unit); err != nil {
			return err
		}
	}
	switch {
	case wantActive == "active" && curActive != "active":
		return run("start", unit)
	case wantActive != "active" && curActive == "active":
		return run("stop", unit)
	}
	return nil
}
