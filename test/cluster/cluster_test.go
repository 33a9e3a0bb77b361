//go:build e2e

// The local cluster's own tests (hack/local-cluster): a pod runs from an image built here and imported
// without a registry, another from the same image pushed to the cluster's registry and pulled by the
// node (plain HTTP on loopback); a pod reaches the API server (pod and host network), a Service reaches its pod from the host
// and from another pod, a Guaranteed pod gets a CPU of its own from the static CPU manager, pods get
// a secondary interface on the second network (macvlan) and on the point-to-point latency link (veth,
// native XDP) and talk over them.
//
//	go test -tags e2e -v -timeout 40m ./test/cluster/
//
// It starts the cluster and stops it at the end, unless one already runs (then it is left running).
// TSLC_KEEP=1 leaves a cluster it started running.

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tickstack/tickstack/internal/testutil"
)

const (
	imageTag  = "e2e-test"
	namespace = "tslc-e2e"
	net2CIDR  = "198.19.203.0/24"
)

// repoRoot is the repository's top directory; kubectl runs through hack/local-cluster kubectl.
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	script := filepath.Join(repoRoot, "hack", "local-cluster")

	started := false
	if err := exec.Command(script, "status").Run(); err != nil {
		fmt.Println("starting the local cluster (hack/local-cluster start)")
		out, err := command(30*time.Minute, script, "start")
		if err != nil {
			fmt.Printf("hack/local-cluster start: %v\n%s", err, out)
			return 1
		}
		started = true
	}
	if started && os.Getenv("TSLC_KEEP") == "" {
		defer func() {
			if out, err := command(5*time.Minute, script, "stop"); err != nil {
				fmt.Printf("hack/local-cluster stop: %v\n%s", err, out)
			}
		}()
	}
	// Images: the stand-in binary in every Dockerfile target, imported into the node's containerd.
	bin := filepath.Join(os.TempDir(), "tslc-e2e-hello")
	if out, err := command(10*time.Minute, "go", "build", "-o", bin, "./test/cluster/testdata/hello"); err != nil {
		fmt.Printf("build hello: %v\n%s", err, out)
		return 1
	}
	build := filepath.Join(repoRoot, "hack", "images", "build.sh")
	if out, err := command(30*time.Minute, build, "--import", "--tag", imageTag,
		"--bin", "manager="+bin, "--bin", "agent="+bin, "--bin", "tickstack="+bin, "--bin", "tickstack-bench="+bin,
		"manager", "agent", "bench"); err != nil {
		fmt.Printf("hack/images/build.sh: %v\n%s", err, out)
		return 1
	}
	_, _ = kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=true", "--timeout=120s")
	if out, err := kubectl("create", "namespace", namespace); err != nil {
		fmt.Printf("create namespace: %v\n%s", err, out)
		return 1
	}
	// The namespace's default service account appears a moment after the namespace.
	if err := eventually(time.Minute, func() error {
		_, err := kubectl("get", "serviceaccount", "default", "-n", namespace)
		return err
	}); err != nil {
		fmt.Println(err)
		return 1
	}
	code := m.Run()
	_, _ = kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=120s")
	return code
}

// helloPod is a Pod named name in the test namespace that runs image (a tickstack image: its
// entrypoint says hello and exits) once, pulled by pull (an imagePullPolicy), with spec holding
// further lines of its spec.
func helloPod(name, image, pull, spec string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  restartPolicy: Never%s
  containers:
  - name: hello
    image: %s
    imagePullPolicy: %s
`, name, namespace, spec, image, pull)
}

// TestPodFromLocalImage runs the manager image built by hack/images/build.sh: the pod starts with
// imagePullPolicy Never, and its in-cluster client reaches the API server through the kubernetes
// Service (kube-proxy).
func TestPodFromLocalImage(t *testing.T) {
	apply(t, helloPod("hello", "localhost/tickstack-manager:"+imageTag, "Never", ""))
	waitPhase(t, "hello", "Succeeded", 3*time.Minute)
	logs := podLogs(t, "hello")
	for _, want := range []string{"hello from a locally built tickstack image", "apiserver: v1.32.3 via https://198.19.202.1:443"} {
		if !strings.Contains(logs, want) {
			t.Errorf("pod log lacks %q:\n%s", want, logs)
		}
	}
}

// TestPodPullsFromLocalRegistry pushes the manager image to the cluster's registry (TSLC_REGISTRY,
// the CNCF distribution registry on loopback) under a name the node has never seen, and runs a pod of
// it with imagePullPolicy Always: containerd pulls it over plain HTTP (its hosts.toml for the
// registry), the kubelet says so, and the pod runs the image.
func TestPodPullsFromLocalRegistry(t *testing.T) {
	env, err := command(time.Minute, filepath.Join(repoRoot, "hack", "local-cluster"), "env")
	if err != nil {
		t.Fatalf("hack/local-cluster env: %v\n%s", err, env)
	}
	m := regexp.MustCompile(`(?m)^export TSLC_REGISTRY=(\S+)$`).FindStringSubmatch(env)
	if m == nil {
		t.Fatalf("hack/local-cluster env names no TSLC_REGISTRY:\n%s", env)
	}
	// a tag of its own per run, so the node cannot have it from an earlier one
	image := fmt.Sprintf("%s/tslc-e2e/hello:%d", m[1], time.Now().UnixNano())
	if out, err := command(5*time.Minute, "buildah", "push", "-q", "--tls-verify=false",
		"localhost/tickstack-manager:"+imageTag, "docker://"+image); err != nil {
		t.Fatalf("buildah push: %v\n%s", err, out)
	}
	apply(t, helloPod("pulled", image, "Always", ""))
	defer deletePods(t, "pulled")
	waitPhase(t, "pulled", "Succeeded", 3*time.Minute)
	if logs := podLogs(t, "pulled"); !strings.Contains(logs, "hello from a locally built tickstack image") {
		t.Errorf("pod log lacks the image's greeting:\n%s", logs)
	}
	events, err := kubectl("get", "events", "-n", namespace, "--field-selector", "involvedObject.name=pulled,reason=Pulled", "-o", "jsonpath={.items[*].message}")
	if err != nil || !strings.Contains(events, fmt.Sprintf("Successfully pulled image %q", image)) {
		t.Errorf("no Pulled event for %s: %v\n%s", image, err, events)
	}
}

// TestHostNetworkPodReachesAPIServer runs the agent image as the node agent will run: on the host's
// network, where the kubernetes Service address works through kube-proxy's OUTPUT rules.
func TestHostNetworkPodReachesAPIServer(t *testing.T) {
	apply(t, helloPod("hello-host", "localhost/tickstack-agent:"+imageTag, "Never", "\n  hostNetwork: true"))
	waitPhase(t, "hello-host", "Succeeded", 3*time.Minute)
	if logs := podLogs(t, "hello-host"); !strings.Contains(logs, "apiserver: v1.32.3 via https://198.19.202.1:443") {
		t.Errorf("host-network pod did not reach the API server through its Service:\n%s", logs)
	}
}

// TestServiceReachesPod checks kube-proxy's rules both ways a webhook and a benchmark need them: from
// the host (where the API server calls admission webhooks) and from another pod on the same bridge.
func TestServiceReachesPod(t *testing.T) {
	apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: srv, namespace: %[1]s, labels: {app: srv}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sockperf
    image: localhost/tickstack-bench:%[2]s
    imagePullPolicy: Never
    command: [sockperf, server, --tcp, -i, 0.0.0.0, -p, "5001"]
---
apiVersion: v1
kind: Service
metadata: {name: srv, namespace: %[1]s}
spec:
  selector: {app: srv}
  ports: [{port: 443, targetPort: 5001, protocol: TCP}]
---`, namespace, imageTag)+benchPod("cli", "", "", ""))
	waitPhase(t, "srv", "Running", 3*time.Minute)
	waitPhase(t, "cli", "Running", 3*time.Minute)
	out, err := kubectl("get", "service", "-n", namespace, "srv", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		t.Fatalf("service: %v\n%s", err, out)
	}
	addr := net.JoinHostPort(out, "443")
	if !strings.HasPrefix(out, "198.19.202.") {
		t.Fatalf("cluster IP %q is outside the service range 198.19.202.0/24", out)
	}
	err = eventually(time.Minute, func() error {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return fmt.Errorf("from the host: %w", err)
		}
		return c.Close()
	})
	if err != nil {
		t.Error(err)
	}
	if out, err := kubectl("exec", "-n", namespace, "cli", "--", "bash", "-c",
		"timeout 5 bash -c 'exec 3<>/dev/tcp/"+out+"/443'"); err != nil {
		t.Errorf("from a pod: %v\n%s", err, out)
	}
	deletePods(t, "srv", "cli")
}

// printCPUs is a bench pod's command that prints the CPUs it may run on, then sleeps.
const printCPUs = "[sh, -c, 'grep Cpus_allowed_list /proc/self/status; exec sleep infinity']"

// benchPod is a Pod named name of the bench image in the test namespace, running command ([sleep,
// infinity] when empty), attached to networks (the Multus annotation) when not empty, its container
// followed by the lines of extra (resources, securityContext).
func benchPod(name, networks, command, extra string) string {
	meta := ""
	if networks != "" {
		meta = "\n  annotations:\n    k8s.v1.cni.cncf.io/networks: " + networks
	}
	if command == "" {
		command = "[sleep, infinity]"
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s%s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: bench
    image: localhost/tickstack-bench:%s
    imagePullPolicy: Never
    command: %s%s
`, name, namespace, meta, imageTag, command, extra)
}

// TestGuaranteedPodGetsExclusiveCPU checks the static CPU manager: a Guaranteed pod asking for one CPU
// gets CPU 1 alone (CPU 0 is reserved for the system), and a BestEffort pod started after it is kept
// off that CPU. On a 2-CPU node the allocatable CPU is 1, so the BestEffort pod asks for none.
func TestGuaranteedPodGetsExclusiveCPU(t *testing.T) {
	apply(t, benchPod("pinned", "", printCPUs, `
    resources:
      requests: {cpu: "1", memory: 64Mi}
      limits: {cpu: "1", memory: 64Mi}`))
	waitPhase(t, "pinned", "Running", 3*time.Minute)
	if qos := jsonpath(t, "pinned", "{.status.qosClass}"); qos != "Guaranteed" {
		t.Fatalf("qosClass = %q, want Guaranteed", qos)
	}
	pinned := cpusAllowed(t, "pinned")
	if pinned != "1" {
		t.Errorf("Guaranteed pod runs on CPUs %q, want exactly CPU 1", pinned)
	}
	apply(t, benchPod("shared", "", printCPUs, ""))
	waitPhase(t, "shared", "Running", 3*time.Minute)
	if shared := cpusAllowed(t, "shared"); shared != "0" {
		t.Errorf("BestEffort pod runs on CPUs %q while CPU 1 is exclusive, want 0 (the shared pool)", shared)
	}
	deletePods(t, "pinned", "shared")
}

// TestSecondaryInterface attaches two pods to the second network (NetworkAttachmentDefinition
// default/tslc-net2, macvlan over the node's tslcnet2) and pings one from the other over it.
func TestSecondaryInterface(t *testing.T) {
	for _, name := range []string{"net-a", "net-b"} {
		apply(t, benchPod(name, "default/tslc-net2@lat0", "", ""))
	}
	_, subnet, _ := net.ParseCIDR(net2CIDR)
	ips := map[string]string{}
	for _, name := range []string{"net-a", "net-b"} {
		waitPhase(t, name, "Running", 3*time.Minute)
		var statuses []struct {
			Name      string   `json:"name"`
			Interface string   `json:"interface"`
			IPs       []string `json:"ips"`
		}
		raw := jsonpath(t, name, `{.metadata.annotations.k8s\.v1\.cni\.cncf\.io/network-status}`)
		if err := json.Unmarshal([]byte(raw), &statuses); err != nil {
			t.Fatalf("%s: network-status %q: %v", name, raw, err)
		}
		for _, s := range statuses {
			if s.Interface == "lat0" && s.Name == "default/tslc-net2" && len(s.IPs) == 1 && subnet.Contains(net.ParseIP(s.IPs[0])) {
				ips[name] = s.IPs[0]
			}
		}
		if ips[name] == "" {
			t.Fatalf("%s: no lat0 address in %s in network-status %s", name, net2CIDR, raw)
		}
		out, err := kubectl("exec", "-n", namespace, name, "--", "ip", "-o", "-4", "addr", "show", "dev", "lat0")
		if err != nil || !strings.Contains(out, ips[name]+"/") {
			t.Fatalf("%s: lat0 inside the pod: %v\n%s", name, err, out)
		}
	}
	out, err := kubectl("exec", "-n", namespace, "net-a", "--", "ping", "-c", "3", "-W", "2", "-I", "lat0", ips["net-b"])
	if err != nil {
		t.Fatalf("ping net-b over lat0: %v\n%s", err, out)
	}
	deletePods(t, "net-a", "net-b")
}

// TestPointToPointLatencyLink attaches two pods to the two ends of the node's veth latency link
// (NADs default/tslc-lat-a and -b, host-device), pings across it, and, when the bench image carries
// the dataplane's xsk-floor, runs an AF_XDP ping-pong in native XDP mode across it.
func TestPointToPointLatencyLink(t *testing.T) {
	ends := map[string]string{"lat-a": "198.19.204.1", "lat-b": "198.19.204.2"}
	for name := range ends {
		apply(t, benchPod(name, "default/tslc-"+name+"@lat0", "", `
    securityContext: {privileged: true}`))
	}
	for name, ip := range ends {
		waitPhase(t, name, "Running", 3*time.Minute)
		out, err := kubectl("exec", "-n", namespace, name, "--", "ip", "-o", "-4", "addr", "show", "dev", "lat0")
		if err != nil || !strings.Contains(out, ip+"/24") {
			t.Fatalf("%s: lat0 should carry %s: %v\n%s", name, ip, err, out)
		}
	}
	if out, err := kubectl("exec", "-n", namespace, "lat-a", "--", "ping", "-c", "3", "-W", "2", "-I", "lat0", ends["lat-b"]); err != nil {
		t.Fatalf("ping lat-b over the latency link: %v\n%s", err, out)
	}
	const xsk = "/opt/tickstack/dataplane/xsk-floor"
	t.Run("AF_XDP", func(t *testing.T) {
		if _, err := kubectl("exec", "-n", namespace, "lat-a", "--", "test", "-x", xsk); err != nil {
			testutil.Unavailable(t, "the bench image has no xsk-floor (dataplane not built: make dataplane)")
		}
		mac, err := kubectl("exec", "-n", namespace, "lat-a", "--", "cat", "/sys/class/net/lat0/address")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl("exec", "-n", namespace, "lat-a", "--", "sh", "-c",
			"nohup "+xsk+" reflect lat0 "+ends["lat-a"]+" 5000 >/tmp/reflect.log 2>&1 &"); err != nil {
			t.Fatalf("start the reflector: %v\n%s", err, out)
		}
		// The reflector starts in the background: wait for its ready line, then ping until it
		// answers (each ping runs 2 s and detaches its XDP program when it exits).
		var out string
		err = eventually(30*time.Second, func() error {
			var perr error
			out, perr = kubectl("exec", "-n", namespace, "lat-a", "--", "cat", "/tmp/reflect.log")
			if perr != nil || !strings.Contains(out, "xsk-floor: ready") {
				return fmt.Errorf("the reflector is not ready: %v", perr)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("AF_XDP reflector on lat-a: %v\n%s", err, out)
		}
		err = eventually(30*time.Second, func() error {
			var perr error
			out, perr = kubectl("exec", "-n", namespace, "lat-b", "--", xsk, "ping", "lat0", ends["lat-b"], ends["lat-a"], mac, "5000", "64", "2")
			m := regexp.MustCompile(`observations=(\d+)`).FindStringSubmatch(out)
			if perr != nil || m == nil || m[1] == "0" {
				return fmt.Errorf("no answer yet: %v", perr)
			}
			return nil
		})
		if err != nil {
			t.Errorf("AF_XDP ping-pong over the latency link: %v\n%s", err, out)
		}
	})
	deletePods(t, "lat-a", "lat-b")
}

func cpusAllowed(t *testing.T, pod string) string {
	t.Helper()
	re := regexp.MustCompile(`Cpus_allowed_list:\s*(\S+)`)
	var got string
	err := eventually(time.Minute, func() error {
		m := re.FindStringSubmatch(podLogs(t, pod))
		if m == nil {
			return fmt.Errorf("%s: no Cpus_allowed_list in its log yet", pod)
		}
		got = m[1]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func apply(t *testing.T, manifest string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "local-cluster"), "kubectl", "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

func waitPhase(t *testing.T, pod, phase string, timeout time.Duration) {
	t.Helper()
	err := eventually(timeout, func() error {
		got, err := kubectl("get", "pod", "-n", namespace, pod, "-o", "jsonpath={.status.phase}")
		if err != nil {
			return err
		}
		if got == "Failed" && phase != "Failed" {
			return fmt.Errorf("pod %s failed", pod)
		}
		if got != phase {
			return fmt.Errorf("pod %s is %q, want %q", pod, got, phase)
		}
		return nil
	})
	if err != nil {
		desc, _ := kubectl("describe", "pod", "-n", namespace, pod)
		// A pod left Pending is about the node: what it has and who holds it.
		node, _ := kubectl("describe", "node")
		pods, _ := kubectl("get", "pods", "--all-namespaces", "-o", "wide")
		t.Fatalf("%v\n%s\n\nthe node:\n%s\n\nevery pod:\n%s", err, desc, node, pods)
	}
}

func jsonpath(t *testing.T, pod, path string) string {
	t.Helper()
	out, err := kubectl("get", "pod", "-n", namespace, pod, "-o", "jsonpath="+path)
	if err != nil {
		t.Fatalf("get pod %s: %v\n%s", pod, err, out)
	}
	return out
}

func podLogs(t *testing.T, pod string) string {
	t.Helper()
	out, err := kubectl("logs", "-n", namespace, pod)
	if err != nil {
		t.Fatalf("logs %s: %v\n%s", pod, err, out)
	}
	return out
}

func deletePods(t *testing.T, pods ...string) {
	t.Helper()
	args := append([]string{"delete", "pod", "-n", namespace, "--wait=true", "--timeout=120s"}, pods...)
	if out, err := kubectl(args...); err != nil {
		t.Errorf("delete pods: %v\n%s", err, out)
	}
}

func kubectl(args ...string) (string, error) {
	return command(2*time.Minute, filepath.Join(repoRoot, "hack", "local-cluster"), append([]string{"kubectl"}, args...)...)
}

func command(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(out.String() + "\n" + errOut.String()), err
	}
	return strings.TrimSpace(out.String()), nil
}

func eventually(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(2 * time.Second)
	}
}
