package nriplugin_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/nriplugin"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/tuning"
)

const probeImage = "localhost/tickstack-nri-probe:test"

// TestContainerdNRIRealHost runs a private containerd 2 (the pinned build of hack/third-party.sh:
// its own root, state, sockets and NRI socket under a temporary directory; Debian's runc) with the
// plugin connected to its NRI socket, on the real host (host root /): a pod with
// tickstack.io/irq-load-balancing: disable, tickstack.io/cpu-c-states: disable and
// tickstack.io/cpu-quota: disable, whose container is pinned to the host's last CPU, records at the
// start of its process every IRQ's affinity, that CPU's PM QoS resume latency limit and its CFS quota:
// they are in effect then. After the container is removed every value is back exactly; a second
// container removed while the plugin is down is restored when the plugin connects again
// (Synchronize against the journal).
func TestContainerdNRIRealHost(t *testing.T) {
	testutil.RequireRoot(t)
	// Other real-host tests (internal/agent, internal/tuning, test/agentcost) change IRQ affinity
	// too: one at a time, held until every cleanup below has run.
	hosttest.LockRealHost(t)
	runc := testutil.RequireTool(t, "runc")
	ctrdBin := testutil.ThirdParty(t, "containerd")
	crictlBin := filepath.Join(testutil.ThirdParty(t, "cri-tools"), "crictl")
	h := &host.Host{Root: "/"}
	online, err := h.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if online.Len() < 2 {
		testutil.Unavailable(t, "needs two online CPUs: one for the container, one for everything else")
	}
	cpus := online.CPUs()
	cpu := cpus[len(cpus)-1]
	others := online.Difference(cpuset.New(cpu))
	if !h.HasResumeLatency(cpu) {
		testutil.Unavailable(t, fmt.Sprintf("cpu%d has no power/pm_qos_resume_latency_us", cpu))
	}

	dir, err := os.MkdirTemp("", "tsnri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"out", "logs", "etc", "plugins", "cni/bin", "cni/net.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The pods' cgroup parent, once containerd and its shims are gone (cleanups run last first).
	t.Cleanup(func() {
		hiers, _ := filepath.Glob("/sys/fs/cgroup/*/tickstack-nri-test")
		for _, d := range append(hiers, "/sys/fs/cgroup/tickstack-nri-test") {
			_ = os.Remove(d)
		}
	})
	archive := buildProbeImage(t, dir)
	sock := filepath.Join(dir, "containerd.sock")
	nriSock := filepath.Join(dir, "nri.sock")
	startContainerd(t, dir, ctrdBin, runc, sock, nriSock)
	ctr := func(args ...string) string {
		return run(t, filepath.Join(ctrdBin, "ctr"), append([]string{"--address", sock, "-n", "k8s.io"}, args...)...)
	}
	ctr("images", "import", "--platform", "linux/amd64", archive)
	crictl := func(args ...string) string {
		return strings.TrimSpace(run(t, crictlBin, append([]string{"--runtime-endpoint", "unix://" + sock, "--image-endpoint", "unix://" + sock, "--timeout", "30s"}, args...)...))
	}

	// The node policy the agent would write: the three controls allowed, every CPU but the last one
	// never exclusive.
	policyPath := filepath.Join(dir, "pod-controls.json")
	if err := nriplugin.WriteNodePolicy(policyPath, nriplugin.NodePolicy{
		Allow:            []tsv1.PodControl{tsv1.PodControlIRQLoadBalancing, tsv1.PodControlCPUCStates, tsv1.PodControlCPUQuota},
		NotExclusiveCPUs: others.String(),
	}); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal.json")
	startPlugin := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		synced := make(chan struct{}, 1)
		p := &nriplugin.Plugin{
			Engine:       &nriplugin.Engine{Host: h, JournalPath: journal},
			PolicyPath:   policyPath,
			Log:          slog.New(slog.NewTextHandler(testWriter{t}, nil)),
			Synchronized: func() { synced <- struct{}{} },
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx, nriSock) }()
		select {
		case <-synced:
		case err := <-done:
			cancel()
			t.Fatalf("the plugin did not register: %v", err)
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatal("the plugin did not register with containerd within 30s")
		}
		return func() {
			cancel()
			select {
			case err := <-done:
				t.Logf("the plugin stopped: %v", err)
			case <-time.After(10 * time.Second):
				t.Error("the plugin did not stop")
			}
		}
	}
	stopPlugin := startPlugin()
	defer func() { stopPlugin() }()

	before := snapshot(t, h, cpu)
	podCfg := writeJSON(t, dir, "pod.json", map[string]any{
		"metadata": map[string]any{"name": "probe", "namespace": "tickstack-nri-test", "uid": "tickstack-nri-test-probe", "attempt": 0},
		"annotations": map[string]string{
			tsv1.IRQLoadBalancingAnnotation: "disable",
			tsv1.CPUCStatesAnnotation:       "disable",
			tsv1.CPUQuotaAnnotation:         "disable",
			// what the pod webhook adds to such a pod
			tsv1.NRIRequiredPluginsAnnotation: `["` + tsv1.NRIPluginName + `"]`,
		},
		"log_directory": filepath.Join(dir, "logs"),
		"linux": map[string]any{
			"cgroup_parent":    "/tickstack-nri-test",
			"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}},
		},
	})
	ctrCfg := func(name string) string {
		return writeJSON(t, dir, name+".json", map[string]any{
			"metadata": map[string]any{"name": name},
			"image":    map[string]any{"image": probeImage},
			"command":  []string{"/probe"},
			"args":     []string{"record"},
			"envs":     []map[string]string{{"key": "PROBE_CPUS", "value": strconv.Itoa(cpu)}},
			"mounts":   []map[string]any{{"container_path": "/out", "host_path": filepath.Join(dir, "out", name)}},
			"log_path": name + ".log",
			"linux": map[string]any{"resources": map[string]any{
				"cpu_period": 100000, "cpu_quota": 100000, "cpuset_cpus": strconv.Itoa(cpu), "memory_limit_in_bytes": 64 << 20,
			}},
		})
	}
	pod := crictl("runp", podCfg)
	t.Cleanup(func() {
		_ = exec.Command(crictlBin, "--runtime-endpoint", "unix://"+sock, "stopp", pod).Run()
		_ = exec.Command(crictlBin, "--runtime-endpoint", "unix://"+sock, "rmp", "-f", pod).Run()
	})

	startProbe := func(name string) (string, map[string]string) {
		if err := os.MkdirAll(filepath.Join(dir, "out", name), 0o755); err != nil {
			t.Fatal(err)
		}
		id := crictl("create", pod, ctrCfg(name), podCfg)
		crictl("start", id)
		var rec map[string]string
		testutil.Poll(t, 30*time.Second, "the probe's record of its start", func() error {
			b, err := os.ReadFile(filepath.Join(dir, "out", name, "start.json"))
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &rec)
		})
		return id, rec
	}

	id, rec := startProbe("probe")
	refused := refusedIRQs(t, journal)
	pending := checkAtStart(t, rec, cpu, refused)
	checkNoInterrupts(t, h, rec, cpu, pending)

	crictl("stop", id)
	crictl("rm", id)
	if after := snapshot(t, h, cpu); !equalMaps(before, after) {
		t.Errorf("after the container's removal the host differs:\n%s", diffMaps(before, after))
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal is still there after the last claim went: %v", err)
	}

	// A container that goes while the plugin is down: restored when it connects again.
	id2, rec2 := startProbe("probe2")
	checkAtStart(t, rec2, cpu, refusedIRQs(t, journal))
	stopPlugin()
	crictl("stop", id2)
	crictl("rm", id2)
	if mid := snapshot(t, h, cpu); equalMaps(before, mid) {
		t.Fatal("the values went back without the plugin: the test cannot tell a restore on reconnect")
	}
	// While the plugin is away no container of the pod is created (containerd's default validator
	// and the pod's required plugin): none runs without its controls.
	if err := os.MkdirAll(filepath.Join(dir, "out", "probe3"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(crictlBin, "--runtime-endpoint", "unix://"+sock, "--image-endpoint", "unix://"+sock,
		"create", pod, ctrCfg("probe3"), podCfg).CombinedOutput()
	if err == nil {
		t.Errorf("a container was created while the plugin was not connected: %s", out)
	} else if o := strings.ReplaceAll(string(out), `\"`, `"`); !strings.Contains(o, `required plugin "`+tsv1.NRIPluginName+`" not present`) {
		t.Errorf("creating a container without the plugin failed, but not for the missing plugin: %s", out)
	}
	stopPlugin = startPlugin()
	if after := snapshot(t, h, cpu); !equalMaps(before, after) {
		t.Errorf("after the plugin's restart the host differs:\n%s", diffMaps(before, after))
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal is still there after the plugin's restart: %v", err)
	}
}

// checkAtStart asserts what the probe saw when its process started.
func checkAtStart(t *testing.T, rec map[string]string, cpu int, refused map[string]bool) (pending []string) {
	t.Helper()
	n := 0
	for k, v := range rec {
		irq, ok := strings.CutPrefix(k, "irq/")
		if !ok {
			continue
		}
		num, file, _ := strings.Cut(irq, "/")
		if refused[num] {
			t.Logf("irq %s: the kernel refuses to move it (a managed IRQ): %s %s", num, file, v)
			continue
		}
		if strings.HasPrefix(v, "error") {
			continue
		}
		set, err := cpuset.Parse(v)
		if err != nil {
			t.Errorf("%s: %q", k, v)
			continue
		}
		switch {
		case !set.Contains(cpu):
		case file == "smp_affinity_list":
			t.Errorf("at the container's start irq %s's %s is %s: it includes the container's CPU %d", num, file, v, cpu)
		default:
			// x86 without interrupt remapping moves an IRQ when it next fires: until then its
			// effective affinity is the old one. checkNoInterrupts checks that none arrives.
			pending = append(pending, num)
		}
		n++
	}
	if n == 0 {
		t.Error("the probe saw no IRQ it could check")
	}
	// cpu-c-states: disable is a 0 us PM QoS resume latency limit ("n/a"): polling only.
	if k := fmt.Sprintf("pmqos/cpu%d", cpu); rec[k] != "n/a" {
		t.Errorf("at the container's start %s is %q, want n/a (a 0 us resume latency limit)", k, rec[k])
	}
	if q := rec["cpu-quota"]; q != "-1" && !strings.HasPrefix(q, "max") {
		t.Errorf("at the container's start its CFS quota is %q, want none (-1 or max)", q)
	}
	return pending
}

// checkNoInterrupts: an IRQ whose effective affinity still named cpu at the container's start (its
// move pending until it fires) got no interrupt on cpu while the container ran, or has moved off
// it since (its first interrupt after the change moves it).
func checkNoInterrupts(t *testing.T, h *host.Host, rec map[string]string, cpu int, pending []string) {
	t.Helper()
	then := interruptCounts(t, rec["interrupts"], cpu)
	now, err := h.ReadFile("/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	counts := interruptCounts(t, now, cpu)
	for _, n := range pending {
		eff, err := h.ReadFile("/proc/irq/" + n + "/effective_affinity_list")
		if err != nil {
			continue
		}
		if set, _ := cpuset.Parse(eff); !set.Contains(cpu) {
			t.Logf("irq %s: moved off cpu%d when it fired (effective %s)", n, cpu, eff)
			continue
		}
		if counts[n] != then[n] {
			t.Errorf("irq %s: %d interrupts on the container's cpu%d while it ran, and its effective affinity is still %s", n, counts[n]-then[n], cpu, eff)
		} else {
			t.Logf("irq %s: its move is pending until it fires (x86 without interrupt remapping); no interrupt on cpu%d while the container ran", n, cpu)
		}
	}
}

// interruptCounts reads one CPU's column of /proc/interrupts, by IRQ number.
func interruptCounts(t *testing.T, text string, cpu int) map[string]int {
	t.Helper()
	lines := strings.Split(text, "\n")
	if len(lines) == 0 {
		t.Fatal("empty /proc/interrupts")
	}
	col := -1
	for i, f := range strings.Fields(lines[0]) {
		if f == "CPU"+strconv.Itoa(cpu) {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("/proc/interrupts has no column CPU%d: %q", cpu, lines[0])
	}
	out := map[string]int{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) <= col+1 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		n, err := strconv.Atoi(f[col+1])
		if err != nil {
			continue
		}
		out[strings.TrimSuffix(f[0], ":")] = n
	}
	return out
}

// refusedIRQs lists the IRQs the journal marks as refused by the kernel.
func refusedIRQs(t *testing.T, journal string) map[string]bool {
	t.Helper()
	entries, err := tuning.LoadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name, "irq/"); ok && e.Refused {
			out[n] = true
		}
	}
	return out
}

// snapshot is every value the plugin may change for a container on cpu.
func snapshot(t *testing.T, h *host.Host, cpu int) map[string]string {
	t.Helper()
	out := map[string]string{}
	irqs, err := h.IRQs()
	if err != nil {
		t.Fatal(err)
	}
	for _, irq := range irqs {
		if irq.Movable {
			out[fmt.Sprintf("irq/%d", irq.Number)] = irq.Affinity.String()
		}
	}
	states, err := h.IdleStates(cpu)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		out[fmt.Sprintf("cpuidle/cpu%d/state%d", cpu, st.Index)] = strconv.FormatBool(st.Disabled)
	}
	if out[fmt.Sprintf("pmqos/cpu%d", cpu)], err = h.ResumeLatency(cpu); err != nil {
		t.Fatal(err)
	}
	return out
}

func equalMaps(a, b map[string]string) bool { return diffMaps(a, b) == "" }

func diffMaps(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: (none) -> %q", k, v))
		}
	}
	return strings.Join(out, "\n")
}

// startContainerd runs the pinned containerd with everything under dir and NRI on nriSock.
func startContainerd(t *testing.T, dir, bin, runc, sock, nriSock string) {
	t.Helper()
	conf := fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[metrics]
  address = ""

[plugins.'io.containerd.internal.v1.opt']
  path = %[5]q

[plugins.'io.containerd.nri.v1.nri']
  disable = false
  disable_connections = false
  socket_path = %[6]q
  plugin_path = %[7]q
  plugin_config_path = %[7]q
  plugin_registration_timeout = "10s"
  plugin_request_timeout = "10s"
  # The default validator fails a container whose pod requires a plugin that did not see it
  # (required-plugins.noderesource.dev/pod, which the pod webhook sets).
  [plugins.'io.containerd.nri.v1.nri'.default_validator]
    enable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[8]q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[9]q
        Root = %[10]q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[11]q]
    conf_dir = %[12]q

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc", filepath.Join(dir, "opt"),
		nriSock, filepath.Join(dir, "plugins"), probeImage, runc, filepath.Join(dir, "runc"),
		filepath.Join(dir, "cni/bin"), filepath.Join(dir, "cni/net.d"))
	confPath := filepath.Join(dir, "etc", "containerd.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "containerd"), "--config", confPath)
	// Its own runc shim first on PATH: the host's may be Debian's 1.6 one.
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		// Shims outlive containerd by design: end the ones of this test (their sockets are its).
		out, _ := exec.Command("pgrep", "-f", "containerd-shim-runc-v2 -namespace k8s.io -address "+sock).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscallKill(pid)
			}
		}
		_ = exec.Command("umount", "-R", filepath.Join(dir, "state")).Run()
		_ = exec.Command("umount", "-R", filepath.Join(dir, "root")).Run()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("containerd's log (last 4 KiB):\n%s", tail(b, 4096))
		}
	})
	testutil.Poll(t, 60*time.Second, "the private containerd answering", func() error {
		select {
		case <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("containerd exited:\n%s", tail(b, 4096))
		default:
		}
		return exec.Command(filepath.Join(bin, "ctr"), "--address", sock, "version").Run()
	})
}

// buildProbeImage builds testdata/probe statically and writes an OCI image archive of it (one
// layer, /probe; entry point /probe, command pause, so it is also the pod's sandbox image).
func buildProbeImage(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "probe")
	build := exec.Command("go", "build", "-o", bin, "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	probe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, d := range []string{"out/", "proc/", "sys/", "dev/", "etc/"} {
		_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
	}
	_ = tw.WriteHeader(&tar.Header{Name: "probe", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(probe))})
	_, _ = tw.Write(probe)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(layer.Bytes())
	_ = zw.Close()
	digest := func(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/probe"}, "Cmd": []string{"pause"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(layer.Bytes())}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config), "size": len(config)},
		"layers": []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(gz.Bytes()), "size": gz.Len()}},
	})
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []map[string]any{{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest(manifest), "size": len(manifest),
			"platform":    map[string]string{"architecture": "amd64", "os": "linux"},
			"annotations": map[string]string{"org.opencontainers.image.ref.name": probeImage, "io.containerd.image.name": probeImage},
		}},
	})
	path := filepath.Join(dir, "probe-image.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	aw := tar.NewWriter(f)
	add := func(name string, b []byte) {
		_ = aw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		_, _ = aw.Write(b)
	}
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, b := range [][]byte{config, manifest, gz.Bytes()} {
		add("blobs/sha256/"+strings.TrimPrefix(digest(b), "sha256:"), b)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
