package kubeletconf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The kubelet's configuration from its files, for a cluster whose kubelets do not authorize
// nodes/configz (no fine-grained kubelet authorization): the agent holds no nodes/proxy, so it
// reads what the kubelet read. The kubelet is found by PID, never by name (any process may call
// itself kubelet): the process that owns the socket listening on the kubelet's port in the host's
// network namespace. Its command line names its --config file and --config-dir, read through its
// own root (/proc/PID/root), so they are the files it opened, in its mount namespace.

// RunningKubelet is the kubelet process found on the host.
type RunningKubelet struct {
	// PID of the kubelet, in procRoot's PID namespace.
	PID int
	// Config and ConfigDir are its --config and --config-dir, as paths in its mount namespace
	// (ConfigDir empty: none).
	Config, ConfigDir string
	// Started is when the process started.
	Started time.Time
}

// FindKubelet returns the process listening on the kubelet's TCP port, from procRoot ("/proc"):
// the listening sockets are those of netNS (a /proc/PID/net directory of the host's network
// namespace; the agent runs with hostNetwork, so its own). A process in a pod's cgroup (kubepods),
// a port owned by several processes, or one without --config is refused: the agent does not guess.
func FindKubelet(procRoot, netNS string, port int) (*RunningKubelet, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		if err := listeningInodes(filepath.Join(netNS, f), port, inodes); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("no process listens on the kubelet's port %d (the kubelet does not run)", port)
	}
	pids, err := socketOwners(procRoot, inodes)
	if err != nil {
		return nil, err
	}
	switch len(pids) {
	case 0:
		return nil, fmt.Errorf("the socket listening on the kubelet's port %d belongs to no process the agent can see (does it run with hostPID?)", port)
	case 1:
	default:
		return nil, fmt.Errorf("processes %v share the socket listening on the kubelet's port %d: the agent does not guess which is the kubelet", pids, port)
	}
	pid := pids[0]
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil && bytes.Contains(cg, []byte("kubepods")) {
		return nil, fmt.Errorf("process %d listening on the kubelet's port %d runs in a pod's cgroup: not the kubelet", pid, port)
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return nil, fmt.Errorf("reading the kubelet's command line (pid %d): %w", pid, err)
	}
	k := &RunningKubelet{PID: pid}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	k.Config = flagValue(args, "config")
	k.ConfigDir = flagValue(args, "config-dir")
	if k.Config == "" {
		return nil, fmt.Errorf("the kubelet (pid %d) runs without --config: its configuration is in flags, which the agent does not read", pid)
	}
	if k.Started, err = processStart(procRoot, pid); err != nil {
		return nil, err
	}
	return k, nil
}

// listeningInodes adds the inodes of the sockets in a /proc/net/tcp{,6} table that listen on port.
func listeningInodes(table string, port int, into map[string]bool) error {
	f, err := os.Open(table)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		if len(fields) < 10 || fields[3] != "0A" { // TCP_LISTEN
			continue
		}
		i := strings.LastIndexByte(fields[1], ':')
		if p, err := strconv.ParseUint(fields[1][i+1:], 16, 16); err != nil || int(p) != port {
			continue
		}
		into[fields[9]] = true
	}
	return sc.Err()
}

// socketOwners returns the PIDs with a file descriptor on one of the socket inodes.
func socketOwners(procRoot string, inodes map[string]bool) ([]int, error) {
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(procRoot, d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to see
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// flagValue returns the value of --name=V or --name V (also with one dash); the last one wins,
// as in the kubelet's flag parsing.
func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			switch {
			case a == p && i+1 < len(args):
				v = args[i+1]
			case strings.HasPrefix(a, p+"="):
				v = strings.TrimPrefix(a, p+"=")
			}
		}
	}
	return v
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's start time (100 on every Linux architecture
// Kubernetes runs on).
const clockTicks = 100

// StartSlack is how long after the kubelet's start a change of one of its files is still taken
// as read by it: the start time is known to a clock tick, the boot time through /proc/uptime, and
// the agent writes its drop-in just before it starts the kubelet.
const StartSlack = time.Second

// processStart is when process pid started: the boot time (now less /proc/uptime) plus its start
// time after boot (/proc/PID/stat field 22).
func processStart(procRoot string, pid int) (time.Time, error) {
	stat, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the kubelet's start time: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
	rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(rest) < 20 {
		return time.Time{}, fmt.Errorf("reading the kubelet's start time: short /proc/%d/stat", pid)
	}
	ticks, err := strconv.ParseInt(rest[19], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the kubelet's start time: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(procRoot, "uptime"))
	if err != nil {
		return time.Time{}, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return time.Time{}, fmt.Errorf("empty %s/uptime", procRoot)
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s/uptime: %w", procRoot, err)
	}
	boot := time.Now().Add(-time.Duration(up * float64(time.Second)))
	return boot.Add(time.Duration(ticks) * time.Second / clockTicks), nil
}

// ReadFiles returns the configuration the kubelet k read at its start, as configz shows it
// ({"kubeletconfig": {...}}): its --config file with the --config-dir drop-ins (*.conf, in name
// order) merged over it field by field, read through procRoot/PID/root. Defaults the kubelet
// fills in and deprecated flags are not included. A file changed after the kubelet started (more
// than StartSlack after) is an error: the running kubelet may not have read it. Also returns the files read.
func ReadFiles(procRoot string, k *RunningKubelet) ([]byte, []string, error) {
	root := filepath.Join(procRoot, strconv.Itoa(k.PID), "root")
	files := []string{k.Config}
	if k.ConfigDir != "" {
		entries, err := os.ReadDir(filepath.Join(root, k.ConfigDir))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("reading the kubelet's --config-dir %s: %w", k.ConfigDir, err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, filepath.Join(k.ConfigDir, n))
		}
	}
	var merged map[string]any
	for _, f := range files {
		p := f
		if !filepath.IsAbs(p) {
			// Relative to the kubelet's working directory.
			cwd, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(k.PID), "cwd"))
			if err != nil {
				return nil, nil, fmt.Errorf("the kubelet's file %s is relative and its working directory unreadable: %w", f, err)
			}
			p = filepath.Join(cwd, f)
		}
		full := filepath.Join(root, p)
		st, err := os.Stat(full)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the kubelet's configuration: %w", err)
		}
		if st.ModTime().After(k.Started.Add(StartSlack)) {
			return nil, nil, fmt.Errorf("%s changed at %s, after the kubelet (pid %d) started at %s: its running values are unknown until it restarts", f, st.ModTime().UTC().Format(time.RFC3339), k.PID, k.Started.UTC().Format(time.RFC3339))
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the kubelet's configuration: %w", err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, nil, fmt.Errorf("the kubelet's configuration %s: %w", f, err)
		}
		merged = mergeInto(merged, doc)
	}
	out, err := json.Marshal(map[string]any{"kubeletconfig": merged})
	return out, files, err
}

// mergeInto merges over into base: objects field by field, anything else replaced.
func mergeInto(base, over map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = mergeInto(bm, vm)
				continue
			}
		}
		base[k] = v
	}
	return base
}
