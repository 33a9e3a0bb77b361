// Package hosttest builds what tests of the host layer need on the real machine: a network
// namespace with a veth pair, and a host root whose /sys is a sysfs mounted from inside that
// namespace (so /sys/class/net shows the test's veth) while /proc is the real one. Every name
// carries the "tsag" prefix and the test process's PID; everything is removed when the test ends.
package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Env is a namespace with a veth pair and a host root that sees it.
type Env struct {
	// NS is the network namespace name (ip netns).
	NS string
	// NSFd is an open descriptor of the namespace (for host.EthtoolNIC).
	NSFd int
	// A and B are the veth ends, both inside NS, each with Queues RX and TX queues.
	A, B   string
	Queues int
	// Root is the host root: proc -> /proc, sys = sysfs of NS, etc and var empty directories.
	Root string
	// Host is a host.Host on Root whose NIC speaks ethtool netlink inside NS.
	Host *host.Host
}

// New creates the namespace, the veth pair and the host root; tag distinguishes several Envs of
// one test process.
func New(t testing.TB, tag string) *Env {
	t.Helper()
	testutil.RequireRoot(t)
	ip := testutil.RequireTool(t, "ip")
	pid := os.Getpid()
	e := &Env{
		NS:     fmt.Sprintf("tsag%d%s", pid, tag),
		A:      fmt.Sprintf("tsag%d%sa", pid, tag),
		B:      fmt.Sprintf("tsag%d%sb", pid, tag),
		Queues: 4,
	}
	if len(e.A) > 15 {
		t.Fatalf("interface name %s too long; use a shorter tag", e.A)
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", e.NS)
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", e.NS).Run() })
	q := fmt.Sprint(e.Queues)
	run("-n", e.NS, "link", "add", e.A, "numrxqueues", q, "numtxqueues", q, "type", "veth",
		"peer", "name", e.B, "numrxqueues", q, "numtxqueues", q)
	run("-n", e.NS, "link", "set", e.A, "up")
	run("-n", e.NS, "link", "set", e.B, "up")

	h, err := netns.GetFromName(e.NS)
	if err != nil {
		t.Fatalf("open netns %s: %v", e.NS, err)
	}
	t.Cleanup(func() { h.Close() })
	e.NSFd = int(h)

	root, err := os.MkdirTemp("", fmt.Sprintf("tsag%d%s-root-", pid, tag))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	e.Root = root
	for _, d := range []string{"sys", "etc/default", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/proc", filepath.Join(root, "proc")); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(root, "sys")
	if err := mountSysfsIn(h, sys); err != nil {
		t.Fatalf("mount sysfs of %s: %v", e.NS, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(sys, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", sys, err)
		}
	})
	e.Host = &host.Host{Root: root, NIC: &host.EthtoolNIC{NetNS: e.NSFd}}
	return e
}

// mountSysfsIn mounts a sysfs whose network class belongs to ns (sysfs takes the namespace of
// the mounting thread).
func mountSysfsIn(ns netns.NsHandle, dir string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		return err
	}
	merr := unix.Mount("sysfs", dir, "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if err := netns.Set(orig); err != nil {
		// The thread stays locked and is discarded by the runtime.
		runtime.LockOSThread()
		return fmt.Errorf("return to the original netns: %w", err)
	}
	return merr
}

// Exec runs a command inside the namespace and returns its output.
func (e *Env) Exec(t testing.TB, name string, args ...string) string {
	t.Helper()
	ip := testutil.RequireTool(t, "ip")
	out, err := exec.Command(ip, append([]string{"netns", "exec", e.NS, name}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v in %s: %v: %s", name, args, e.NS, err, out)
	}
	return string(out)
}

// TempDir returns a new directory named tsag<pid>-<test>-*, removed when the test ends, so that
// concurrent test runs of other areas can tell whose it is.
func TempDir(t testing.TB) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	d, err := os.MkdirTemp("", fmt.Sprintf("tsag%d-%s-", os.Getpid(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// RealHostLock is the file whose flock serialises tests of different packages that change the
// same real kernel settings (IRQ affinity, for one): `go test ./...` runs packages in parallel,
// and two engines journaling each other's values as originals could leave the host changed.
const RealHostLock = "/tmp/tickstack-real-host.lock"

// LockRealHost holds RealHostLock until the test (and its cleanups registered earlier) ends.
// Call it before taking any snapshot of real host values.
func LockRealHost(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(RealHostLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("real-host test lock: %v", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("real-host test lock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
}

// Other returns the first of choices that differs from cur (the first when none does): a value to
// write on a real host that is not the one it has.
func Other(cur string, choices ...string) string {
	for _, c := range choices {
		if c != cur {
			return c
		}
	}
	return choices[0]
}
