package bypass

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tickstack/tickstack/internal/testutil"
)

const (
	testPodUID      = "5e0d1c2b-3a49-4f58-8e67-0d1c0ffee041"
	testContainerID = "0dd1c0ffee0dd1c0ffee0dd1c0ffee0dd1c0ffee0dd1c0ffee0dd1c0ffee0001"
)

// fakePodCgroup makes the cgroup a kubelet (cgroupfs driver) gives a container,
// <hierarchy>/podmetrics-<pid>/kubepods/besteffort/pod<uid>/<container id>, in the host's cgroup v2
// hierarchy or else its v1 pids hierarchy, and removes it when the test ends. A process the test
// puts there is, to the collector, that container's.
func fakePodCgroup(t *testing.T, uid, container string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var v2, pids string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mount-point ... - fstype source super-options
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(after) < 3 {
			continue
		}
		switch {
		case after[0] == "cgroup2" && v2 == "":
			v2 = fields[4]
		case after[0] == "cgroup" && pids == "" && strings.Contains(","+after[2]+",", ",pids,"):
			pids = fields[4]
		}
	}
	hier := v2
	if hier == "" {
		hier = pids
	}
	if hier == "" {
		testutil.Unavailable(t, "no cgroup2 or cgroup v1 pids hierarchy mounted")
	}
	top := filepath.Join(hier, fmt.Sprintf("podmetrics-%d", os.Getpid()))
	dirs := []string{top, filepath.Join(top, "kubepods"), filepath.Join(top, "kubepods", "besteffort"),
		filepath.Join(top, "kubepods", "besteffort", "pod"+uid), filepath.Join(top, "kubepods", "besteffort", "pod"+uid, container)}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("making the fake pod's cgroup: %v", err)
		}
	}
	t.Cleanup(func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				t.Errorf("removing the fake pod's cgroup: %v", err)
			}
		}
	})
	return dirs[len(dirs)-1]
}

// dataplane returns the built tickstack-run (make -C dataplane).
func dataplane(t *testing.T) string {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "dataplane", "build", "tickstack-run")
	for _, f := range []string{run, filepath.Join(root, "dataplane", "build", "libtickstack.so")} {
		if _, err := os.Stat(f); err != nil {
			testutil.Unavailable(t, "the dataplane is not built (make -C dataplane): "+err.Error())
		}
	}
	return run
}

// start runs argv through sh, in cgroup when given, until the test ends; it returns the process.
func start(t *testing.T, cgroup string, argv ...string) *exec.Cmd {
	t.Helper()
	script := `exec "$@"`
	if cgroup != "" {
		script = `echo $$ > "$0"/cgroup.procs && exec "$@"`
	}
	cmd := exec.Command("sh", append([]string{"-c", script, cgroup}, argv...)...)
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("%s:\n%s", strings.Join(argv, " "), b)
		}
	})
	return cmd
}

// scrape serves reg as the agent's endpoint does (promhttp) and reads it back in the text format.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the value of the series of family with the given labels (a subset), or -1 without it.
func value(fams map[string]*dto.MetricFamily, family string, labels map[string]string) float64 {
	series, _ := testutil.SeriesWith(fams[family], labels)
	for _, m := range series {
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// A sockperf server runs under libtickstack (TICKSTACK_REQUIRE) on a veth pair, in the cgroup the
// kubelet gives a pod's container; a kernel client ping-pongs with it. The metrics endpoint names
// the server's pod, container and PID and shows its XSK's packets, and the pod's name comes from
// the pod list only: before the API server lists the pod, its process is not exported.
func TestCollectorOnTheRealHost(t *testing.T) {
	testutil.RequireRoot(t)
	run := dataplane(t)
	sockperf := testutil.RequireTool(t, "sockperf")
	link := testutil.VethNamespaces(t, "podmetrics", "198.18.141")
	cg := fakePodCgroup(t, testPodUID, testContainerID)

	// Hardware receive stamps asked for: the standalone library attaches the device-bound
	// steering program (native XDP on veth), so every frame carries its metadata, and veth gives
	// no hardware time (docs/dataplane.md, "Timestamps").
	server := start(t, cg, link.IP, "netns", "exec", link.NSB, "env", "TICKSTACK_RX_HWTSTAMP=1", run, "-p", "latency",
		"--require", sockperf, "sr", "-i", link.AddrB, "-p", "11141")
	pid := server.Process.Pid // sh exec'd ip, which exec'd env, tickstack-run, then sockperf
	pidLabel := strconv.Itoa(pid)

	var listed atomic.Bool
	var lists atomic.Int32
	pods := func(context.Context) ([]corev1.Pod, error) {
		lists.Add(1)
		if !listed.Load() {
			return nil, nil
		}
		return []corev1.Pod{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "trading", Name: "md-feed-0", UID: types.UID(testPodUID)},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "feed", ContainerID: "containerd://" + testContainerID},
			}},
		}}, nil
	}
	now := time.Unix(1_000_000, 0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Options{Proc: "/proc", Pods: pods, Now: func() time.Time { return now }}))

	testutil.Poll(t, 15*time.Second, "the server's region", func() error {
		procs, _, err := Scan("/proc")
		if err != nil {
			return err
		}
		for _, p := range procs {
			if p.PID == pid && p.Stats.Nxsk > 0 {
				if p.PodUID != testPodUID || p.ContainerID != testContainerID || p.Comm != "sockperf" {
					return fmt.Errorf("found %+v, want pod %s container %s comm sockperf", p, testPodUID, testContainerID)
				}
				return nil
			}
		}
		return fmt.Errorf("pid %d not found under libtickstack yet", pid)
	})

	step := func(s string) { t.Log(s) }
	step("a pod the API server does not list: its process is not exported")
	fams := scrape(t, reg)
	if v := value(fams, "tickstack_bypass_process_info", map[string]string{"pid": pidLabel}); v != -1 {
		t.Errorf("process %d of an unlisted pod is exported", pid)
	}
	step("within the relist interval no second list is made")
	listed.Store(true)
	scrape(t, reg)
	if n := lists.Load(); n != 1 {
		t.Errorf("%d pod lists within %s, want 1", n, DefaultRelist)
	}

	step("a ping-pong from the kernel side")
	out, err := exec.Command(link.IP, "netns", "exec", link.NSA, sockperf, "pp", "-i", link.AddrB, "-p", "11141", "-t", "1", "-m", "64").CombinedOutput()
	if err != nil {
		t.Fatalf("sockperf pp: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`ReceivedMessages=(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no ReceivedMessages in:\n%s", out)
	}
	received, _ := strconv.Atoi(string(m[1]))

	now = now.Add(DefaultRelist)
	fams = scrape(t, reg)
	proc := map[string]string{"namespace": "trading", "pod": "md-feed-0", "container": "feed", "pid": pidLabel}
	with := func(kv ...string) map[string]string {
		l := map[string]string{}
		for k, v := range proc {
			l[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	if v := value(fams, "tickstack_bypass_process_info", with("process", "sockperf", "pod_pid", pidLabel, "profile", "latency")); v != 1 {
		t.Errorf("tickstack_bypass_process_info of the server: %v, want 1 with its pod's namespace, name and container", v)
	}
	for _, c := range []struct {
		family string
		labels map[string]string
		min    float64
	}{
		{"tickstack_bypass_packets_total", with("interface", link.IfB, "direction", "rx"), float64(received)},
		{"tickstack_bypass_packets_total", with("interface", link.IfB, "direction", "tx"), float64(received)},
		// a 64-byte payload in UDP, IPv4 and Ethernet: 106 bytes a frame
		{"tickstack_bypass_packet_bytes_total", with("interface", link.IfB, "direction", "rx"), float64(received) * 106},
		{"tickstack_bypass_packet_bytes_total", with("interface", link.IfB, "direction", "tx"), float64(received) * 106},
		{"tickstack_bypass_socket_messages_total", with("direction", "rx", "path", "accelerated"), float64(received)},
		{"tickstack_bypass_rx_hw_metadata_total", with("interface", link.IfB), float64(received)},
		{"tickstack_bypass_sockets_total", with("path", "accelerated"), 1},
	} {
		if v := value(fams, c.family, c.labels); v < c.min {
			t.Errorf("%s%v = %v, want at least %v (%d round trips)", c.family, c.labels, v, c.min, received)
		}
	}
	for _, c := range []struct {
		family string
		labels map[string]string
	}{
		{"tickstack_bypass_fallbacks_total", proc},
		{"tickstack_bypass_socket_messages_total", with("direction", "rx", "path", "kernel")},
		{"tickstack_bypass_drops_total", with("interface", link.IfB, "reason", "socket_queue_full")},
		{"tickstack_bypass_ring_full_total", with("interface", link.IfB, "ring", "rx")},
		{"tickstack_bypass_tcp_retransmits_total", with("kind", "newreno")},
		{"tickstack_bypass_tcp_retransmitted_segments_total", proc},
		{"tickstack_bypass_kernel_sends_total", with("reason", "no_route")},
		{"tickstack_bypass_tcp_segment_drops_total", with("reason", "listen_overflow")},
		{"tickstack_bypass_tcp_connections_total", with("path", "kernel")},
		// veth's bpf_xdp_metadata_rx_timestamp has no time for these frames, as the kernel's
		// SO_TIMESTAMPING has none (conformance hwtstampxdp)
		{"tickstack_bypass_rx_hw_timestamps_total", with("interface", link.IfB)},
		{"tickstack_bypass_hw_timestamps_unbound", with("interface", link.IfB)},
	} {
		if v := value(fams, c.family, c.labels); v != 0 {
			t.Errorf("%s%v = %v, want 0 (present, nothing fell back or dropped)", c.family, c.labels, v)
		}
	}
	// (tickstack_bypass_processes_unreadable counts the whole host's, other tests' processes
	// included: TestCollectorCountsARegionOfAnotherVersion checks it.)
}

// A process mapping a region of an earlier layout version is counted unreadable, not exported.
func TestCollectorCountsARegionOfAnotherVersion(t *testing.T) {
	testutil.RequireRoot(t)
	py := testutil.RequireTool(t, "python3")
	// The region of a library of an earlier release: the magic, version MinStatsVersion-1, mapped.
	cmd := startRegionProcess(t, py, fmt.Sprintf(`m[0:8] = struct.pack("=II", %d, %d)`, StatsMagic, MinStatsVersion-1))
	_, bad, err := Scan("/proc")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range bad {
		if u.PID == cmd.Process.Pid {
			found = true
			if u.Reason != "version" || !strings.Contains(u.Err.Error(), "layout version 5") {
				t.Errorf("process %d: %s %v, want reason version", u.PID, u.Reason, u.Err)
			}
		}
	}
	if !found {
		t.Fatalf("process %d with a version %d region is not among the unreadable: %+v", cmd.Process.Pid, MinStatsVersion-1, bad)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Options{}))
	fams := scrape(t, reg)
	if v := value(fams, "tickstack_bypass_processes_unreadable", map[string]string{"reason": "version"}); v < 1 {
		t.Errorf("tickstack_bypass_processes_unreadable{reason=version} = %v, want at least 1", v)
	}
	if v := value(fams, "tickstack_bypass_process_info", map[string]string{"pid": strconv.Itoa(cmd.Process.Pid)}); v != -1 {
		t.Errorf("the process of an unknown layout is exported")
	}
}

// A process writes what it likes into its own region and its command name: invalid UTF-8 in its
// profile, its interface's name and its comm gives valid label values, and the scrape goes on.
func TestCollectorSurvivesAHostileRegion(t *testing.T) {
	testutil.RequireRoot(t)
	py := testutil.RequireTool(t, "python3")
	xsk := int(unsafe.Offsetof(Stats{}.XSK))
	cmd := startRegionProcess(t, py, fmt.Sprintf(`m[0:32] = struct.pack("=IIiI", %d, %d, os.getpid(), 1) + b"\xff\xfelat\x00" + b"\x00" * 10
m[%d:%d] = b"\xc3\x28eth0\x00" + b"\x00" * 9
m[%d:%d] = struct.pack("=I", 1)
ctypes.CDLL(None).prctl(15, b"\xff\xfebad", 0, 0, 0)`, StatsMagic, StatsVersion, xsk, xsk+16, xsk+24, xsk+28))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Options{}))
	fams := scrape(t, reg)
	pid := strconv.Itoa(cmd.Process.Pid)
	if v := value(fams, "tickstack_bypass_process_info", map[string]string{"pid": pid, "process": "\uFFFDbad", "profile": "\uFFFDlat"}); v != 1 {
		t.Errorf("tickstack_bypass_process_info of the hostile process: %v, want 1 with its comm and profile made valid: %v", v, fams["tickstack_bypass_process_info"])
	}
	if v := value(fams, "tickstack_bypass_packets_total", map[string]string{"pid": pid, "interface": "\uFFFD(eth0", "direction": "rx"}); v != 0 {
		t.Errorf("tickstack_bypass_packets_total of the hostile process's interface: %v, want 0 under its name made valid", v)
	}
}

// startRegionProcess runs a python3 process that creates its own statistics region as the library
// does (/dev/shm/tickstack-<pid>, StatsSize bytes, mapped as m), runs fill over it, and keeps it
// until the test ends.
func startRegionProcess(t *testing.T, py, fill string) *exec.Cmd {
	t.Helper()
	script := fmt.Sprintf(`import ctypes, mmap, os, struct, sys
p = "/dev/shm/tickstack-%%d" %% os.getpid()
try:
    os.unlink(p)  # a region left by a killed process that had this pid, as the library does
except FileNotFoundError:
    pass
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.ftruncate(fd, %d)
m = mmap.mmap(fd, %d)
%s
print("ready", flush=True)
try:
    sys.stdin.read()
finally:
    os.unlink(p)
`, StatsSize, StatsSize, fill)
	cmd := exec.Command(py, "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the region's process: %q %v", line, err)
	}
	return cmd
}
