package agent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// resolveHostProcess turns --host-process into a PID under procRoot ("/proc"): a PID as given, or
// the lowest PID of a host process with that command name. A command name is what any process may
// call itself, so a process counts only when it
//   - shares the agent's PID namespace (the agent runs with hostPID; a pod's processes, unless the
//     pod has hostPID, which Pod Security "baseline" forbids, are in a namespace of their own),
//   - runs as uid 0, and
//   - is in the mount namespace of the host's init (PID 1) where that is readable.
//
// Where PID 1's mount namespace is closed to the agent (the case a name is for), the candidates must
// all share one mount namespace: two namesakes in different ones mean one is not the host's, and the
// agent refuses to guess. docs/agent-host.md says which to give.
func resolveHostProcess(procRoot, proc string) (string, error) {
	if _, err := strconv.Atoi(proc); err == nil {
		return proc, nil
	}
	selfPID, err := os.Readlink(filepath.Join(procRoot, "self", "ns", "pid"))
	if err != nil {
		return "", fmt.Errorf("--host-process=%s: reading the agent's PID namespace: %w", proc, err)
	}
	initMnt, _ := os.Readlink(filepath.Join(procRoot, "1", "ns", "mnt"))
	type cand struct {
		pid int
		mnt string
	}
	var found []cand
	var skipped []string
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return "", fmt.Errorf("--host-process=%s: %w", proc, err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(procRoot, d.Name())
		if comm, err := os.ReadFile(filepath.Join(dir, "comm")); err != nil || strings.TrimSpace(string(comm)) != proc {
			continue
		}
		pidNS, _ := os.Readlink(filepath.Join(dir, "ns", "pid"))
		mnt, _ := os.Readlink(filepath.Join(dir, "ns", "mnt"))
		uid, uidErr := realUID(filepath.Join(dir, "status"))
		switch {
		case pidNS != selfPID:
			skipped = append(skipped, fmt.Sprintf("%d (another PID namespace)", pid))
		case uidErr != nil || uid != 0:
			skipped = append(skipped, fmt.Sprintf("%d (not uid 0)", pid))
		case mnt == "":
			skipped = append(skipped, fmt.Sprintf("%d (mount namespace unreadable)", pid))
		case initMnt != "" && mnt != initMnt:
			skipped = append(skipped, fmt.Sprintf("%d (not in PID 1's mount namespace)", pid))
		default:
			found = append(found, cand{pid, mnt})
		}
	}
	if len(found) == 0 {
		msg := fmt.Sprintf("--host-process=%s: no host process has that name", proc)
		if len(skipped) > 0 {
			msg += "; namesakes that are not host processes: " + strings.Join(skipped, ", ")
		}
		return "", fmt.Errorf("%s: give the PID of a process in the host's mount namespace (1, the host's init, by default)", msg)
	}
	slices.SortFunc(found, func(a, b cand) int { return a.pid - b.pid })
	for _, c := range found[1:] {
		if c.mnt != found[0].mnt {
			return "", fmt.Errorf("--host-process=%s: processes %d and %d have that name in different mount namespaces, so one is not the host's: give the PID of the host's process instead",
				proc, found[0].pid, c.pid)
		}
	}
	return strconv.Itoa(found[0].pid), nil
}

// realUID reads the real uid from a /proc/PID/status file.
func realUID(status string) (int, error) {
	f, err := os.Open(status)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				break
			}
			return strconv.Atoi(fields[0])
		}
	}
	return 0, fmt.Errorf("%s has no Uid line", status)
}
