package bypass

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// regionPrefix is the path every process under libtickstack maps its region from, as its own
// mount namespace names it (TICKSTACK_STATS_PATH_FMT).
const regionPrefix = "/dev/shm/tickstack-"

// Process is one process under libtickstack found on the node.
type Process struct {
	// PID is its PID in the PID namespace of the /proc scanned (the node's, for the agent with
	// hostPID); NSPID is its PID in its own (innermost) PID namespace, the one its region is named
	// after and tickstack-stats takes inside the pod.
	PID, NSPID int
	// Comm is its command name (/proc/PID/comm).
	Comm string
	// PodUID and ContainerID come from its cgroup path (empty for a process outside a pod).
	PodUID, ContainerID string
	// Stats is its region, read once.
	Stats *Stats
}

// Unreadable is a process that maps a region the scan could not read, with why.
type Unreadable struct {
	PID    int
	Reason string // "version" (an earlier layout: VersionError) or "read"
	Err    error
}

// Scan finds the processes below proc (a procfs mount: "/proc") that map their own statistics
// region, and reads each region through the process's root (/proc/PID/root/dev/shm/...), which
// reaches the /dev/shm of the process's own mount namespace, a pod's included. Reading another
// process's root takes what ptrace's read mode takes (the same user, or CAP_SYS_PTRACE): the agent
// holds it as a privileged container. Processes that exit during the scan are left out.
func Scan(proc string) ([]Process, []Unreadable, error) {
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return nil, nil, err
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, nil, err
	}
	var found []Process
	var bad []Unreadable
	r := bufio.NewReaderSize(nil, 4096)
	for _, p := range procs {
		nspid, ok := ownRegion(proc, p, r)
		if !ok {
			continue
		}
		st, err := readRegion(filepath.Join(proc, strconv.Itoa(p.PID), "root"), nspid)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
				continue // exited meanwhile
			}
			reason := "read"
			var ve *VersionError
			if errors.As(err, &ve) {
				reason = "version"
			}
			bad = append(bad, Unreadable{PID: p.PID, Reason: reason, Err: err})
			continue
		}
		pr := Process{PID: p.PID, NSPID: nspid, Stats: st}
		pr.Comm, _ = p.Comm()
		if cgs, err := p.Cgroups(); err == nil {
			for _, cg := range cgs {
				if uid, cid := PodOfCgroup(cg.Path); uid != "" {
					pr.PodUID, pr.ContainerID = uid, cid
					break
				}
			}
		}
		found = append(found, pr)
	}
	return found, bad, nil
}

// ownRegion tells whether p maps the region of its own PID (a forked child keeps its parent's
// mapping beside its own) and returns that PID, as p's PID namespace numbers it. The maps of every
// process on the node are read at each scrape: they are scanned line by line in one reused buffer
// for the region's path, and only a process that maps one is looked at further.
func ownRegion(proc string, p procfs.Proc, r *bufio.Reader) (int, bool) {
	f, err := os.Open(filepath.Join(proc, strconv.Itoa(p.PID), "maps"))
	if err != nil {
		return 0, false
	}
	defer func() { _ = f.Close() }()
	r.Reset(f)
	var pids []int
	for {
		line, err := r.ReadSlice('\n')
		if n, ok := regionOf(line); ok {
			pids = append(pids, n)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) { // the rest of an overlong line
				_, err = r.ReadSlice('\n')
			}
		}
		if err != nil {
			break
		}
	}
	if len(pids) == 0 {
		return 0, false
	}
	nspid := p.PID
	if st, err := p.NewStatus(); err == nil && len(st.NSpids) > 0 {
		nspid = int(st.NSpids[len(st.NSpids)-1])
	}
	for _, n := range pids {
		if n == nspid {
			return n, true
		}
	}
	return 0, false
}

// regionOf returns n when a maps line's path (its last field) is a statistics region,
// <dir>/shm/tickstack-<n>: /dev/shm/tickstack-<n> as the process's own mount namespace names it
// (what the kernel prints for a process in another mount namespace, a pod's), or the directory a
// runtime mounts at a pod's /dev/shm should a kernel print that instead.
func regionOf(line []byte) (int, bool) {
	const base = "/tickstack-"
	i := bytes.LastIndex(line, []byte(base))
	if i < 0 || !bytes.HasSuffix(line[:i], []byte("/shm")) {
		return 0, false
	}
	n, err := strconv.Atoi(string(bytes.TrimRight(line[i+len(base):], "\n")))
	return n, err == nil && n > 0
}

// readRegion reads /dev/shm/tickstack-<nspid> of the process whose root is root
// (/proc/PID/root). The path is resolved inside that root (openat2 RESOLVE_IN_ROOT): the pod's
// files are the pod's to lay out, so a symbolic link there (/dev/shm -> /etc) stays in the pod's
// tree rather than reaching the agent's; the region itself is never a link (O_NOFOLLOW), only a
// regular file (no FIFO to block on), and no more than the layout is read.
func readRegion(root string, nspid int) (*Stats, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { _ = unix.Close(rfd) }()
	name := strings.TrimPrefix(regionPrefix, "/") + strconv.Itoa(nspid)
	path := filepath.Join(root, name)
	fd, err := unix.Openat2(rfd, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b := make([]byte, StatsSize)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	st, err := ParseStats(b[:n])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// A pod's UID in a cgroup path: the kubelet's cgroupfs driver names the pod's cgroup
// pod<uid> (/kubepods/besteffort/pod<uid>/<container>), the systemd driver
// kubepods-<qos>-pod<uid with _ for ->.slice (.../cri-containerd-<container>.scope).
var podCgroup = regexp.MustCompile(`(?:^|[/-])pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?(?:/([^/]+)|$)`)

// containerID takes the container runtime's 64-hex ID out of a container's cgroup name:
// <id>, cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope.
var containerID = regexp.MustCompile(`^(?:[a-z-]+-)?([0-9a-f]{64})(?:\.scope)?$`)

// PodOfCgroup returns the pod UID and container ID a cgroup path names, or empty strings for a
// path outside a pod. The container ID is empty when the path names the pod but no container.
func PodOfCgroup(path string) (podUID, container string) {
	m := podCgroup.FindStringSubmatch(path)
	if m == nil {
		return "", ""
	}
	podUID = strings.ReplaceAll(m[1], "_", "-")
	if c := containerID.FindStringSubmatch(m[2]); c != nil {
		container = c[1]
	}
	return podUID, container
}
