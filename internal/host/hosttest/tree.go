package hosttest

// Host-root trees made of plain files, for what a test machine cannot change itself (cpufreq,
// SR-IOV, a boot loader), and snapshots to compare them before and after.

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// WriteTree writes files (path below dir: content, a newline added to non-empty content) and
// links (path below dir: symlink target) into dir, creating the directories they need.
func WriteTree(t testing.TB, dir string, files, links map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if c != "" {
			c += "\n"
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
}

// AddCPUs adds to a tree's files n CPUs as sysfs shows them, all online and on NUMA node 0, turbo
// on, the unbound workqueues on every CPU; each CPU with four cpuidle states (POLL, C1, C1E, C6),
// cpufreq's powersave governor, an online file but on CPU 0 (which most x86 kernels cannot take
// offline) and its topology. With smt, CPU c and CPU c+n/2 are the two threads of one core;
// without, every CPU is a core of its own.
func AddCPUs(files map[string]string, n int, smt bool) {
	all := fmt.Sprintf("0-%d", n-1)
	files["sys/devices/system/cpu/online"] = all
	files["sys/devices/system/cpu/present"] = all
	files["sys/devices/system/cpu/intel_pstate/no_turbo"] = "0"
	files["sys/devices/virtual/workqueue/cpumask"] = fmt.Sprintf("%x", 1<<n-1)
	files["sys/devices/system/node/node0/cpulist"] = all
	for cpu := 0; cpu < n; cpu++ {
		base := fmt.Sprintf("sys/devices/system/cpu/cpu%d/", cpu)
		for i, st := range []struct {
			name string
			lat  int
		}{{"POLL", 0}, {"C1", 2}, {"C1E", 10}, {"C6", 133}} {
			files[fmt.Sprintf("%scpuidle/state%d/name", base, i)] = st.name
			files[fmt.Sprintf("%scpuidle/state%d/latency", base, i)] = fmt.Sprint(st.lat)
			files[fmt.Sprintf("%scpuidle/state%d/disable", base, i)] = "0"
		}
		if cpu > 0 {
			files[base+"online"] = "1"
		}
		files[base+"cpufreq/scaling_governor"] = "powersave"
		files[base+"cpufreq/scaling_available_governors"] = "performance powersave"
		files[base+"topology/physical_package_id"] = "0"
		if smt {
			core := cpu % (n / 2)
			files[base+"topology/core_id"] = fmt.Sprint(core)
			files[base+"topology/thread_siblings_list"] = fmt.Sprintf("%d,%d", core, core+n/2)
		} else {
			files[base+"topology/core_id"] = fmt.Sprint(cpu)
			files[base+"topology/thread_siblings_list"] = fmt.Sprint(cpu)
		}
	}
}

// AddNIC adds to a tree's files and links an SR-IOV capable PCI NIC: ens1f0 at 0000:3b:00.0,
// Intel E810 (ice, 8 VFs, none created), two receive and two transmit queues.
func AddNIC(files, links map[string]string) {
	const dev = "sys/devices/pci0000:00/0000:3b:00.0/"
	for p, c := range map[string]string{
		"sriov_totalvfs":                  "8",
		"sriov_numvfs":                    "0",
		"vendor":                          "0x8086",
		"device":                          "0x159b",
		"net/ens1f0/ifindex":              "5",
		"net/ens1f0/queues/rx-0/rps_cpus": "0",
		"net/ens1f0/queues/rx-1/rps_cpus": "0",
		"net/ens1f0/queues/tx-0/xps_cpus": "1",
		"net/ens1f0/queues/tx-1/xps_cpus": "2",
	} {
		files[dev+p] = c
	}
	files["sys/bus/pci/drivers/ice/bind"] = ""
	links["sys/class/net/ens1f0"] = "../../devices/pci0000:00/0000:3b:00.0/net/ens1f0"
	links[dev+"net/ens1f0/device"] = "../../../0000:3b:00.0"
	links["sys/bus/pci/devices/0000:3b:00.0"] = "../../../devices/pci0000:00/0000:3b:00.0"
	links[dev+"driver"] = "../../../bus/pci/drivers/ice"
}

// Snapshot returns every regular file of the tree with its trimmed content, except the agent's own
// state under var/lib and the paths in ignore (relative to dir).
func Snapshot(t testing.TB, dir string, ignore ...string) map[string]string {
	t.Helper()
	skip := map[string]bool{}
	for _, p := range ignore {
		skip[p] = true
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && rel == filepath.Join("var", "lib") {
			return filepath.SkipDir
		}
		if skip[rel] {
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = strings.TrimSpace(string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SnapshotFiles reads real files (absolute paths) for a later Diff: content trimmed, files that do
// not exist left out.
func SnapshotFiles(t testing.TB, files []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[f] = strings.TrimSpace(string(b))
	}
	return out
}

// Diff lists the differences between two snapshots, sorted.
func Diff(before, after map[string]string) []string {
	var diffs []string
	for k, v := range before {
		if a, ok := after[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: removed (was %q)", k, v))
		} else if a != v {
			diffs = append(diffs, fmt.Sprintf("%s: %q, was %q", k, a, v))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: new file %q", k, v))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// GuardRealFiles snapshots real host files now and returns the snapshot; when the test ends
// (after the cleanups registered later, such as the code's own restore), it fails the test for
// every file that differs and writes its snapshot back, so that the machine is never left changed.
func GuardRealFiles(t testing.TB, files []string) map[string]string {
	t.Helper()
	before := SnapshotFiles(t, files)
	t.Cleanup(func() {
		after := SnapshotFiles(t, files)
		for f, v := range before {
			if after[f] != v {
				t.Errorf("real host file %s is %q after the test, was %q; putting it back", f, after[f], v)
				_ = os.WriteFile(f, []byte(v), 0)
			}
		}
	})
	return before
}

// VethPair creates the veth pair nameA-nameB with queues RX and TX queues each (down, no
// address), deleted when the test ends.
func VethPair(t testing.TB, ip, nameA, nameB string, queues int) {
	t.Helper()
	q := fmt.Sprint(queues)
	if out, err := exec.Command(ip, "link", "add", nameA, "numrxqueues", q, "numtxqueues", q, "type", "veth",
		"peer", "name", nameB, "numrxqueues", q, "numtxqueues", q).CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(ip, "link", "del", nameA).Run() })
}
