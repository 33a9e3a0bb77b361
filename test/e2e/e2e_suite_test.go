//go:build e2e

// Package e2e tests tickstack's whole flow on the real local cluster (hack/local-cluster): the Helm
// chart, a profile that isolates CPU 1 of this machine, the agent's real tuning and what its
// LatencyNodeState reports, a latency pod admitted by the pod webhook, a LatencyBenchmark and its
// verdict, the restore of the host when the profile goes, and an uninstall that leaves nothing.
// docs/e2e.md describes what it covers, its timings and how to debug it.
//
//	go test -tags e2e -v -timeout 60m ./test/e2e/      (root; make e2e)
//
// It starts the cluster when none runs and stops it at the end (TSE2E_KEEP_CLUSTER=1 keeps it). As a
// user does, it builds and pushes the images and the chart to a registry (make images push; the
// cluster's own, on loopback) and installs from there (helm install oci://...): the node pulls every
// image of the release, none is imported. It rebuilds them when their sources changed or the registry
// lacks them (TSE2E_BUILD_IMAGES=1 always rebuilds).
// The node is this machine: the agent tunes it for real, and the test checks that every value it
// snapshotted before the install is back at the end. The agent's reboot command only records, its
// boot loader drop-in goes to a scratch directory, and an admission policy holds every reboot slot:
// this machine never reboots.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

const (
	nodeName     = "tslc-node"
	release      = "tickstack"
	releaseNS    = "tickstack-system"
	testNS       = "tse2e"
	profileName  = "tse2e"
	roleLabel    = "tickstack.io/role"
	roleValue    = "trading"
	holdPolicy   = "tse2e-reboot-hold"
	scratchDir   = "/tmp/tse2e-agent" // hostPath the agent mounts at /tse2e (recorders, boot loader drop-in)
	helmBinary   = "bin/helm-v3.22.0"
	net2CIDR     = "198.19.203."
	libInPod     = "/opt/tickstack/lib/libtickstack.so"
	stateDirHost = "/var/lib/tickstack"
	grubDirHost  = "/etc/default/grub.d"
)

// profileHead starts the LatencyProfile profileName, which selects the node by its role label;
// its spec goes on from there.
const profileHead = `
apiVersion: tickstack.io/v1alpha1
kind: LatencyProfile
metadata:
  name: ` + profileName + `
spec:
  nodeSelector:
    matchLabels: {` + roleLabel + `: ` + roleValue + `}`

var (
	repoRoot string
	// The local cluster's registry (hack/local-cluster env: TSLC_REGISTRY), this tree's version
	// (hack/version.sh) and the images pushed there, by digest (the chart's <component>.imageDigest).
	registry, version                    string
	managerImage, agentImage, benchImage string
	sriovdpImage                         string
	clusterStarted                       bool
	// Host facts before the test, for the cleanup.
	hadStateDir, hadGrubDir, hadRoleLabel bool
	snapshot                              map[string]string
	// stateDirBefore lists the agent's state directory before the install: the run removes what it
	// added there (journal lock, boot loader stamp), and the directory itself if it made it.
	stateDirBefore map[string]bool
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "tickstack e2e")
}

var _ = SynchronizedBeforeSuite(func() []byte { return nil }, func([]byte) {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	Expect(os.Geteuid()).To(BeZero(), "the e2e needs root: containerd, the kubelet and the agent's host tuning")

	By("the local cluster runs")
	if err := exec.Command(filepath.Join(repoRoot, "hack", "local-cluster"), "status").Run(); err != nil {
		out, err := run(60*time.Minute, nil, "hack/local-cluster", "start") // cold: builds Kubernetes (~20 min)
		Expect(err).NotTo(HaveOccurred(), "hack/local-cluster start:\n%s", out)
		clusterStarted = true
	}
	DeferCleanup(stopCluster)

	By("the images and the chart are in the cluster's registry (make images push)")
	env, err := run(time.Minute, nil, "hack/local-cluster", "env")
	Expect(err).NotTo(HaveOccurred(), env)
	registry = envValue(env, "TSLC_REGISTRY")
	v, err := run(time.Minute, nil, "hack/version.sh")
	Expect(err).NotTo(HaveOccurred(), v)
	// A test build (the agent's --failpoint-file, build.sh --test-build) gets a version of its own, so
	// it never takes the tag of a build without it.
	version = strings.TrimSpace(v) + ".failpoint"
	if !strings.Contains(version, "-") {
		version = strings.TrimSuffix(version, ".failpoint") + "-failpoint"
	}
	stamp, stampFile := sourceStamp()
	if have, _ := os.ReadFile(stampFile); os.Getenv("TSE2E_BUILD_IMAGES") != "" || !registryHasRelease() || string(have) != stamp {
		out, err := run(45*time.Minute, nil, "make", "--no-print-directory", "images", "push",
			"REGISTRY="+registry, "VERSION="+version, "IMAGE_BASES=local", "IMAGE_FLAGS=--test-build")
		Expect(err).NotTo(HaveOccurred(), "make images push:\n%s", out)
		// The SR-IOV device plugin the chart deploys: built by hack/local-cluster from its pinned source.
		out, err = run(10*time.Minute, nil, "hack/images/build.sh", "--registry", registry, "--push", "sriovdp")
		Expect(err).NotTo(HaveOccurred(), "hack/images/build.sh --push sriovdp:\n%s", out)
		Expect(registryHasRelease()).To(BeTrue(), "the registry lacks the images or the chart after make images push")
		Expect(os.WriteFile(stampFile, []byte(stamp), 0o644)).To(Succeed())
	}
	managerImage = registry + "/tickstack-manager@" + registryDigest("tickstack-manager", version)
	agentImage = registry + "/tickstack-agent@" + registryDigest("tickstack-agent", version)
	benchImage = registry + "/tickstack-bench@" + registryDigest("tickstack-bench", version)
	sriovdpImage = registry + "/sriov-network-device-plugin:" + thirdPartyVersion("sriov-network-device-plugin")
	_, err = os.Stat(filepath.Join(repoRoot, helmBinary))
	Expect(err).NotTo(HaveOccurred(), "%s: run make helm", helmBinary)

	By("a snapshot of every host setting the profile touches, before the install")
	hadStateDir = exists(stateDirHost)
	stateDirBefore = map[string]bool{}
	if entries, err := os.ReadDir(stateDirHost); err == nil {
		for _, e := range entries {
			stateDirBefore[e.Name()] = true
		}
	}
	hadGrubDir = exists(grubDirHost)
	snapshot = hostSnapshot()
	Expect(snapshot).To(HaveKey("/proc/sys/kernel/timer_migration"))
	labels := nodeLabels()
	_, hadRoleLabel = labels[roleLabel]
	// Runs before stopCluster (cleanups run last-in first-out).
	DeferCleanup(cleanup)
})

// stopCluster stops the cluster if this run started it, unless asked to keep it.
func stopCluster() {
	if !clusterStarted || os.Getenv("TSE2E_KEEP_CLUSTER") != "" {
		return
	}
	out, err := run(10*time.Minute, nil, "hack/local-cluster", "stop")
	Expect(err).NotTo(HaveOccurred(), "hack/local-cluster stop:\n%s", out)
}

// cleanup undoes everything the test may have left, whatever failed: the profile (so the agent
// restores the host), the release, the CRDs, the namespaces, the hold policy, the node's labels,
// and the host's scratch paths. Any setting still differing from the snapshot is written back and
// reported.
func cleanup() {
	By("cleanup")
	clearCluster()
	_, _ = kubectl(nil, "delete", "crd", "latencyprofiles.tickstack.io", "latencynodestates.tickstack.io",
		"latencybenchmarks.tickstack.io", "bmcs.tickstack.io", "--ignore-not-found", "--timeout=120s")
	_, _ = kubectl(nil, "delete", "validatingadmissionpolicybinding", holdPolicy, "--ignore-not-found")
	_, _ = kubectl(nil, "delete", "validatingadmissionpolicy", holdPolicy, "--ignore-not-found")
	_, _ = kubectl(nil, "delete", "namespace", testNS, releaseNS, "--ignore-not-found", "--wait=true", "--timeout=180s")
	if !hadRoleLabel {
		_, _ = kubectl(nil, "label", "node", nodeName, roleLabel+"-")
	}
	_, _ = kubectl(nil, "annotate", "node", nodeName, "tickstack.io/benchmark-passed-")
	_, _ = kubectl(nil, "label", "node", nodeName, "tickstack.io/profile-", "tickstack.io/validated-", "tickstack.io/fingerprint-")
	restoreHost()
	_ = os.Remove(kustomizedFile)
}

// reportComponentLogs adds the operator's and the agent's last tail log lines to the spec's report,
// and, when previousTail is above 0, as many of their previous containers' (one a fault restarted).
func reportComponentLogs(tail, previousTail int) {
	for _, c := range []string{"deployment/" + release + "-manager", "daemonset/" + release + "-agent"} {
		out, _ := kubectl(nil, "logs", "-n", releaseNS, c, "--all-containers", fmt.Sprintf("--tail=%d", tail), "--timestamps")
		AddReportEntry(c+" log", out)
		if previousTail > 0 {
			out, _ = kubectl(nil, "logs", "-n", releaseNS, c, "--all-containers", fmt.Sprintf("--tail=%d", previousTail), "--timestamps", "--previous")
			AddReportEntry(c+" log, previous container", out)
		}
	}
}

// reportEvents adds every namespace's events, oldest first, to the spec's report.
func reportEvents() {
	out, _ := kubectl(nil, "get", "events", "-A", "--sort-by", ".metadata.creationTimestamp",
		"-o", "custom-columns=TIME:.metadata.creationTimestamp,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message")
	AddReportEntry("events", out)
}

// clearCluster removes what a spec may have left of tickstack, so that the next spec starts from
// nothing whatever failed before it: benchmarks, pods and profiles (the agent restores the host; if
// it cannot, the finalizers are dropped and restoreHost puts the values back), the Helm release and
// the kustomize install. The CRDs, namespaces and hold policy stay.
func clearCluster() {
	_, _ = kubectl(nil, "delete", "latencybenchmarks.tickstack.io", "--all", "-n", testNS, "--ignore-not-found", "--wait=true", "--timeout=60s")
	_, _ = kubectl(nil, "delete", "pods", "--all", "-n", testNS, "--ignore-not-found", "--wait=true", "--timeout=60s")
	if out, err := kubectl(nil, "delete", "latencyprofiles.tickstack.io", "--all", "--ignore-not-found", "--wait=true", "--timeout=180s"); err != nil {
		GinkgoWriter.Printf("deleting profiles: %v\n%s\n", err, out)
	}
	// The agent restores the host before the node state's finalizer goes; if it could not, drop
	// the finalizers so the CRDs can go, and put the values back below.
	if out, err := kubectl(nil, "wait", "--for=delete", "latencynodestates.tickstack.io", "--all", "--timeout=120s"); err != nil {
		GinkgoWriter.Printf("node states still there: %v\n%s\n", err, out)
		for _, kind := range []string{"latencynodestates.tickstack.io", "latencyprofiles.tickstack.io"} {
			names, _ := kubectl(nil, "get", kind, "-o", "name")
			for _, n := range strings.Fields(names) {
				_, _ = kubectl(nil, "patch", n, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
			}
		}
	}
	_, _ = helm(5*time.Minute, "uninstall", release, "-n", releaseNS, "--wait", "--timeout", "3m", "--ignore-not-found")
	if f, err := kustomized(); err == nil {
		_, _ = kubectl(nil, "delete", "-f", f, "--ignore-not-found", "--wait=true", "--timeout=180s")
	} else {
		GinkgoWriter.Printf("the kustomize install is not deleted: %v\n", err)
	}
	restoreHost()
}

// restoreHost writes back any snapshotted host value that still differs and removes the scratch
// paths the run created.
func restoreHost() {
	// Host: write back whatever still differs (reported as a failure by the restore spec when it
	// ran; here it only protects the machine), then remove the scratch paths the run created.
	if snapshot != nil {
		for path, was := range snapshot {
			now := readHost(path)
			if now == was || was == absent || strings.HasSuffix(path, "/") || path == "/proc/cmdline" {
				continue
			}
			GinkgoWriter.Printf("cleanup: %s is %q, writing back %q\n", path, now, was)
			_ = os.WriteFile(path, []byte(was+"\n"), 0o644)
		}
		if snapshot["/etc/default/irqbalance"] == absent {
			_ = os.Remove("/etc/default/irqbalance")
		}
	}
	_ = os.RemoveAll(scratchDir)
	if !hadStateDir {
		_ = os.RemoveAll(stateDirHost)
	} else if entries, err := os.ReadDir(stateDirHost); err == nil {
		for _, e := range entries {
			if !stateDirBefore[e.Name()] {
				_ = os.RemoveAll(filepath.Join(stateDirHost, e.Name()))
			}
		}
	}
	if !hadGrubDir {
		_ = os.Remove(grubDirHost) // only if empty: never delete a real drop-in
	}
}

// run runs a command from the repository root with a deadline and returns its combined output.
func run(timeout time.Duration, stdin []byte, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	// Stdout alone on success: kubectl's client-side log lines (such as its websocket's "Unknown stream
	// id" on exec) go to stderr and must not become part of what a test compares. On failure both, to
	// say why.
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// kubectl runs the cluster's kubectl with the admin kubeconfig.
func kubectl(stdin []byte, args ...string) (string, error) {
	return run(5*time.Minute, stdin, "hack/local-cluster", append([]string{"kubectl"}, args...)...)
}

// helm runs the pinned helm against the local cluster.
func helm(timeout time.Duration, args ...string) (string, error) {
	kc, err := run(time.Minute, nil, "hack/local-cluster", "kubeconfig")
	if err != nil {
		return kc, err
	}
	return run(timeout, nil, "/usr/bin/env", append([]string{"KUBECONFIG=" + strings.TrimSpace(kc), helmBinary}, args...)...)
}

// inPod runs a shell script in a pod of the test namespace and returns its output, trimmed.
func inPod(pod, script string) string {
	GinkgoHelper()
	out, err := kubectl(nil, "exec", "-n", testNS, pod, "--", "/bin/sh", "-c", script)
	Expect(err).NotTo(HaveOccurred(), out)
	return strings.TrimSpace(out)
}

// xskRoundTrips checks the output of a `TICKSTACK_STATS=1 sockperf pp` client: the ping-pong ran
// (more than 100 round trips) and the client's XSK on lat0 received at least one packet a round
// trip. It returns the round trips and the packets that XSK sent.
func xskRoundTrips(out string) (received, tx int) {
	GinkgoHelper()
	m := regexp.MustCompile(`ReceivedMessages=(\d+)`).FindStringSubmatch(out)
	Expect(m).NotTo(BeNil(), out)
	received, _ = strconv.Atoi(m[1])
	Expect(received).To(BeNumerically(">", 100), out) // the ping-pong ran: a loaded 2-CPU machine does a few hundred round trips in 2 s (15:54 run: 390)
	m = regexp.MustCompile(`xsk if=lat0 [^\n]* rx_packets=(\d+) tx_packets=(\d+)`).FindStringSubmatch(out)
	Expect(m).NotTo(BeNil(), "no XSK counters of lat0 in the client's stats:\n%s", out)
	rx, _ := strconv.Atoi(m[1])
	tx, _ = strconv.Atoi(m[2])
	Expect(rx).To(BeNumerically(">=", received), out)
	return received, tx
}

// apply applies a manifest.
func apply(manifest string) {
	GinkgoHelper()
	out, err := kubectl([]byte(manifest), "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), "kubectl apply:\n%s\n%s", out, manifest)
}

// getJSON reads an object into v.
func getJSON(v any, args ...string) error {
	out, err := kubectl(nil, append([]string{"get", "-o", "json"}, args...)...)
	if err != nil {
		return fmt.Errorf("kubectl get %v: %v: %s", args, err, out)
	}
	return json.Unmarshal([]byte(out), v)
}

// getNode reads the test node; g is an Eventually's Gomega, or Default outside one.
func getNode(g Gomega) *corev1.Node {
	GinkgoHelper()
	node := &corev1.Node{}
	g.Expect(getJSON(node, "node", nodeName)).To(Succeed())
	return node
}

func nodeLabels() map[string]string {
	GinkgoHelper()
	return getNode(Default).Labels
}

// nodeTaintKeys lists the keys of the node's taints.
func nodeTaintKeys() []string {
	GinkgoHelper()
	node := getNode(Default)
	keys := make([]string, 0, len(node.Spec.Taints))
	for _, t := range node.Spec.Taints {
		keys = append(keys, t.Key)
	}
	return keys
}

// sourceStamp identifies the sources the images are built from (the commit and any uncommitted
// change below them), and the file that records the stamp of the images and chart this test last
// pushed: they are rebuilt only when the sources changed.
func sourceStamp() (stamp, file string) {
	GinkgoHelper()
	paths := []string{"api", "cmd", "controllers", "internal", "dataplane", "Dockerfile", "hack/images", "go.mod", "go.sum",
		"charts/tickstack", "Makefile", "hack/version.sh", "hack/ldflags.sh"}
	head, err := run(time.Minute, nil, "git", "rev-parse", "HEAD")
	Expect(err).NotTo(HaveOccurred(), head)
	diff, err := run(time.Minute, nil, "git", append([]string{"diff", "HEAD", "--"}, paths...)...)
	Expect(err).NotTo(HaveOccurred(), diff)
	untracked, err := run(time.Minute, nil, "git", append([]string{"status", "--porcelain", "--"}, paths...)...)
	Expect(err).NotTo(HaveOccurred(), untracked)
	sum := sha256.Sum256([]byte(head + diff + untracked))
	cache := os.Getenv("TICKSTACK_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		Expect(err).NotTo(HaveOccurred())
		cache = filepath.Join(base, "tickstack")
	}
	Expect(os.MkdirAll(filepath.Join(cache, "images"), 0o755)).To(Succeed())
	return hex.EncodeToString(sum[:]), filepath.Join(cache, "images", "e2e-sources.stamp")
}

// envValue is NAME's value in hack/local-cluster env's exports.
func envValue(env, name string) string {
	GinkgoHelper()
	m := regexp.MustCompile(`(?m)^export ` + name + `=(\S+)$`).FindStringSubmatch(env)
	Expect(m).NotTo(BeNil(), "hack/local-cluster env names no %s:\n%s", name, env)
	return m[1]
}

// registryDigest is the digest of REPO:TAG in the cluster's registry (its manifest's), empty when
// the registry does not have it.
func registryDigest(repo, tag string) string {
	req, err := http.NewRequest(http.MethodHead, "http://"+registry+"/v2/"+repo+"/manifests/"+tag, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Accept", strings.Join([]string{"application/vnd.oci.image.manifest.v1+json",
		"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.v2+json"}, ", "))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return resp.Header.Get("Docker-Content-Digest")
}

// registryHasRelease reports whether the registry has this tree's three images, its chart and the
// device plugin's image.
func registryHasRelease() bool {
	for _, repo := range []string{"tickstack-manager", "tickstack-agent", "tickstack-bench", "charts/tickstack"} {
		if registryDigest(repo, version) == "" {
			return false
		}
	}
	return registryDigest("sriov-network-device-plugin", thirdPartyVersion("sriov-network-device-plugin")) != ""
}

// thirdPartyVersion is NAME's pinned version in hack/third-party.lock.
func thirdPartyVersion(name string) string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "hack", "third-party.lock"))
	Expect(err).NotTo(HaveOccurred())
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, "\t"); len(f) > 1 && f[0] == name {
			return f[1]
		}
	}
	Fail("hack/third-party.lock has no " + name)
	return ""
}

// chartFromRegistry is how the tests install or upgrade to this tree: the chart pushed to the
// cluster's registry, its images from there by digest (every one pulled by the node).
func chartFromRegistry() []string {
	return []string{"oci://" + registry + "/charts/tickstack", "--version", version, "--plain-http",
		"--set", "imageRegistry=" + registry,
		"--set", "manager.imageDigest=" + strings.SplitN(managerImage, "@", 2)[1],
		"--set", "agent.imageDigest=" + strings.SplitN(agentImage, "@", 2)[1],
		"--set", "bench.imageDigest=" + strings.SplitN(benchImage, "@", 2)[1],
		"--set", "sriovDevicePlugin.image.repository=" + registry + "/sriov-network-device-plugin",
	}
}

const absent = "<absent>"

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// readHost reads one host file, trimmed; absent when it does not exist.
func readHost(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return absent
	}
	return strings.TrimSpace(string(b))
}

// hostSnapshot reads every host value the e2e profile can make the agent change: its sysctls,
// transparent huge pages, every IRQ's affinity and the default one, the idle states, the
// workqueue mask, the RPS/XPS masks of the NIC group's interface, irqbalance's file, the boot
// loader's drop-in directory and the kernel command line.
func hostSnapshot() map[string]string {
	s := map[string]string{}
	for _, p := range []string{
		"/proc/sys/kernel/timer_migration", "/proc/sys/kernel/numa_balancing", "/proc/sys/vm/stat_interval",
		"/proc/sys/net/core/rmem_max", "/proc/sys/net/core/busy_poll", "/proc/sys/net/core/busy_read",
		"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag",
		"/proc/irq/default_smp_affinity", "/sys/devices/virtual/workqueue/cpumask",
		"/etc/default/irqbalance", "/proc/cmdline",
	} {
		s[p] = readHost(p)
	}
	for _, glob := range []string{
		"/proc/irq/*/smp_affinity",
		"/sys/devices/system/cpu/cpu*/cpuidle/state*/disable",
		"/sys/class/net/tslcnet2/queues/*/rps_cpus",
		"/sys/class/net/tslcnet2/queues/*/xps_cpus",
	} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			s[p] = readHost(p)
		}
	}
	entries, _ := os.ReadDir(grubDirHost)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	s[grubDirHost+"/"] = strings.Join(names, " ")
	return s
}

// hostDiff lists the snapshot's values that differ now (paths that vanished, like the IRQ of a
// device that went, are left out).
func hostDiff(before map[string]string) []string {
	now := hostSnapshot()
	var diff []string
	for p, was := range before {
		is, ok := now[p]
		if !ok || (strings.HasPrefix(p, "/proc/irq/") && is == absent) {
			continue
		}
		if is != was {
			diff = append(diff, fmt.Sprintf("%s: was %q, is %q", p, was, is))
		}
	}
	return diff
}

// forgetRegistryImages removes from the node's containerd every image of the cluster's registry
// (each name, and the image IDs they point at), so that what follows must pull them.
func forgetRegistryImages() {
	GinkgoHelper()
	env, err := run(time.Minute, nil, "hack/local-cluster", "env")
	Expect(err).NotTo(HaveOccurred(), env)
	ctr := []string{"--address", envValue(env, "TSLC_CONTAINERD_ADDRESS"), "-n", "k8s.io", "images"}
	ctrBin := envValue(env, "TSLC_CTR")
	out, err := run(time.Minute, nil, ctrBin, append(ctr, "ls")...)
	Expect(err).NotTo(HaveOccurred(), out)
	targets := map[string]bool{}
	var refs []string
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[0], registry+"/") {
			targets[f[2]] = true
		}
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 2 && targets[f[2]] {
			refs = append(refs, f[0])
		}
	}
	if len(refs) > 0 {
		out, err := run(time.Minute, nil, ctrBin, append(append(ctr, "rm"), refs...)...)
		Expect(err).NotTo(HaveOccurred(), out)
	}
}

// expectPulledFromRegistry checks that the release's pods run exactly the images of want, each from
// the cluster's registry, and that the kubelet pulled every one of them (its Pulled event).
func expectPulledFromRegistry(want map[string]bool) {
	GinkgoHelper()
	var pods struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				InitContainers []struct {
					Image string `json:"image"`
				} `json:"initContainers"`
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
			Status struct {
				InitContainerStatuses []struct {
					ImageID string `json:"imageID"`
				} `json:"initContainerStatuses"`
				ContainerStatuses []struct {
					ImageID string `json:"imageID"`
				} `json:"containerStatuses"`
			} `json:"status"`
		} `json:"items"`
	}
	// A container that is (re)starting has no image ID yet (the SR-IOV device plugin restarts once
	// when the operator renders its pool): wait until every container has run.
	Eventually(func() error {
		if err := getJSON(&pods, "pods", "-n", releaseNS); err != nil {
			return err
		}
		for _, p := range pods.Items {
			for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				if c.ImageID == "" {
					return fmt.Errorf("pod %s: a container has not started", p.Metadata.Name)
				}
			}
		}
		return nil
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	seen := map[string]bool{}
	for _, p := range pods.Items {
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			Expect(want).To(HaveKey(c.Image), "pod %s runs an image that is not the release's from the registry", p.Metadata.Name)
			seen[c.Image] = true
		}
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			Expect(c.ImageID).To(HavePrefix(registry+"/"), "pod %s: the image the runtime ran", p.Metadata.Name)
		}
	}
	Expect(seen).To(HaveLen(len(want)), "the release's pods run %v", seen)
	var events struct {
		Items []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"items"`
	}
	Expect(getJSON(&events, "events", "-n", releaseNS)).To(Succeed())
	pulled := map[string]bool{}
	for _, e := range events.Items {
		for img := range want {
			if e.Reason == "Pulled" && strings.HasPrefix(e.Message, fmt.Sprintf("Successfully pulled image %q", img)) {
				pulled[img] = true
			}
		}
	}
	for img := range want {
		Expect(pulled).To(HaveKey(img), "no kubelet event says it pulled %s", img)
	}
}
