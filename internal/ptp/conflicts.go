package ptp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// clockSteerers are the daemons that discipline the system clock by themselves, by the name the
// kernel keeps for them (comm, at most 15 characters), with the name people know them by. On a
// node where PTP owns the clock any of them fights phc2sys (or, with software time stamping,
// ptp4l) for CLOCK_REALTIME: two servos steering one clock make both wrong.
var clockSteerers = map[string]string{
	"chronyd":         "chronyd",
	"ntpd":            "ntpd",
	"systemd-timesyn": "systemd-timesyncd",
	"ptpd":            "ptpd",
	"ptpd2":           "ptpd2",
}

// FindClockConflicts lists the processes under procDir (the host's /proc) that steer the system
// clock, as "chronyd (pid 812)", sorted. chronyd -x leaves the clock alone and is not listed.
// Unreadable entries (processes that exit while read) are skipped.
func FindClockConflicts(procDir string) []string {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procDir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		name, ok := clockSteerers[strings.TrimSpace(string(comm))]
		if !ok {
			continue
		}
		if name == "chronyd" {
			cmdline, _ := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
			if slices.Contains(strings.Split(string(cmdline), "\x00"), "-x") {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s (pid %d)", name, pid))
	}
	slices.Sort(out)
	return out
}
