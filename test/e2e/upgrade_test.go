//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// upgradeBenchmark validates the node: a kernel ping-pong between two pods and oslat on the
// runner's exclusive CPU, short.
const upgradeBenchmark = `
apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata: {name: tse2e-upgrade, namespace: ` + testNS + `}
spec:
  target: {profile: ` + profileName + `}
  stacks: [kernel]
  placement: {mode: TwoPods, runnerCPUs: 1, reflectorCPUs: 0}
  suites:
    pingPong: {protocols: [udp], messageSizes: [64], durationSeconds: 2}
    jitter: {cpus: pod, durationSeconds: 3, tools: [oslat]}
  thresholds:
    maxDropped: 0
    latency:
    - {suite: jitter, statistic: p99, max: 200us}
  timeoutSeconds: 600
`

const journalHost = stateDirHost + "/tuning-journal.json"

// tunedNode is what must not move while the operator is upgraded or rolled back: the host's values,
// the agent's journal of originals, the node state's desired tuning and the rest of its spec, the
// node's labels of the profile, the benchmark's result, and the recorders of reboots and boot
// loader updates. The desired tuning is spec.tuning, or status.tuning on a node whose agent
// resolves its own tuning (spec.profile.resolveOnNode, issue 45): handing a node over moves the
// tuning from one to the other, and nothing else.
type tunedNode struct {
	host             map[string]string
	journal          string
	tuning, spec     string
	profile, valid   string
	benchmark        string
	reboots, updates int
}

// desiredTuning splits a node state into its desired tuning (desiredTuningOf: spec.tuning, else
// status.tuning) and the rest of its spec, both as JSON. The rest leaves out spec.tuning,
// spec.profile.resolveOnNode and spec.profile.generation: the hand-over moves the first two, and
// the generation is the profile's that last moved the node's tuning, which the spec's own profile
// change moves (and the manager taking the node back, or the previous release's manager writing
// spec.tuning back at the rollback, records).
func desiredTuning(lns map[string]any) (tuning, rest string) {
	GinkgoHelper()
	spec, _ := lns["spec"].(map[string]any)
	t := desiredTuningOf(lns)
	r := map[string]any{}
	for k, v := range spec {
		r[k] = v
	}
	delete(r, "tuning")
	if p, ok := r["profile"].(map[string]any); ok {
		q := map[string]any{}
		for k, v := range p {
			q[k] = v
		}
		delete(q, "resolveOnNode")
		delete(q, "generation")
		r["profile"] = q
	}
	tb, err := json.Marshal(t)
	Expect(err).NotTo(HaveOccurred())
	rb, err := json.Marshal(r)
	Expect(err).NotTo(HaveOccurred())
	return string(tb), string(rb)
}

func observeTunedNode() tunedNode {
	GinkgoHelper()
	var lns map[string]any
	Expect(getJSON(&lns, "latencynodestate", nodeName)).To(Succeed())
	tuning, spec := desiredTuning(lns)
	var b map[string]any
	Expect(getJSON(&b, "latencybenchmark", "tse2e-upgrade", "-n", testNS)).To(Succeed())
	status, err := json.Marshal(b["status"])
	Expect(err).NotTo(HaveOccurred())
	labels := nodeLabels()
	return tunedNode{
		host: hostSnapshot(), journal: readHost(journalHost), tuning: tuning, spec: spec,
		profile: labels["tickstack.io/profile"], valid: labels["tickstack.io/validated"], benchmark: string(status),
		reboots: recorded("reboots"), updates: recorded("grub-updates"),
	}
}

// diff names what differs from before.
func (before tunedNode) diff(now tunedNode) []string {
	var d []string
	for p, was := range before.host {
		if is, ok := now.host[p]; ok && is != was && !(strings.HasPrefix(p, "/proc/irq/") && is == absent) {
			d = append(d, fmt.Sprintf("host %s: was %q, is %q", p, was, is))
		}
	}
	if now.journal != before.journal {
		d = append(d, "the agent's journal of originals changed (a restore, or originals recorded again)")
	}
	if now.tuning != before.tuning {
		d = append(d, fmt.Sprintf("the node's desired tuning changed:\nbefore: %s\nafter:  %s", before.tuning, now.tuning))
	}
	if now.spec != before.spec {
		d = append(d, fmt.Sprintf("the node state's spec changed:\nbefore: %s\nafter:  %s", before.spec, now.spec))
	}
	if now.profile != before.profile || now.valid != before.valid {
		d = append(d, fmt.Sprintf("node labels: profile %q -> %q, validated %q -> %q", before.profile, now.profile, before.valid, now.valid))
	}
	if now.benchmark != before.benchmark {
		d = append(d, fmt.Sprintf("the benchmark's status changed:\nbefore: %s\nafter:  %s", before.benchmark, now.benchmark))
	}
	if now.reboots != before.reboots || now.updates != before.updates {
		d = append(d, fmt.Sprintf("reboot recorder %d -> %d, boot loader updates %d -> %d", before.reboots, now.reboots, before.updates, now.updates))
	}
	return d
}

// watchNode samples, every second until stop is called, what an upgrade must never do even for a
// moment: cordon the node, grant it a reboot slot, or change a host value.
func watchNode(host map[string]string) (stop func() []string) {
	var (
		mu     sync.Mutex
		seen   []string
		done   = make(chan struct{})
		wg     sync.WaitGroup
		record = func(s string) {
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(seen, s) {
				seen = append(seen, s)
			}
		}
	)
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			var node corev1.Node
			if getJSON(&node, "node", nodeName) == nil {
				if node.Spec.Unschedulable {
					record("the node was cordoned")
				}
				for _, t := range node.Spec.Taints {
					if t.Key == "tickstack.io/tuning-pending" {
						record("the node was tainted tickstack.io/tuning-pending (its tuning moved)")
					}
				}
			}
			if lns, err := getNodeState(); err == nil && lns.Spec.RebootGranted {
				record("the node state was granted a reboot slot")
			}
			for _, d := range hostDiff(host) {
				record("host value changed: " + d)
			}
		}
	}()
	return func() []string {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// runningImages lists the images of the release's manager and agent pods that are running.
func runningImages() string {
	out, _ := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", "app.kubernetes.io/instance="+release+",app.kubernetes.io/component in (manager,agent)",
		"--field-selector", "status.phase=Running", "-o", "jsonpath={range .items[*]}{.spec.containers[0].image}{\"\\n\"}{end}")
	return out
}

// settled waits until the release's manager and agent run only the images manager and agent and
// are ready.
func settled(manager, agent string) {
	GinkgoHelper()
	for _, w := range []string{"deployment/" + release + "-manager", "daemonset/" + release + "-agent"} {
		out, err := kubectl(nil, "rollout", "status", "-n", releaseNS, w, "--timeout=5m")
		Expect(err).NotTo(HaveOccurred(), out)
	}
	Eventually(func(g Gomega) {
		imgs := strings.Fields(runningImages())
		g.Expect(imgs).To(ContainElement(manager))
		g.Expect(imgs).To(ContainElement(agent))
		for _, img := range imgs {
			g.Expect(img).To(BeElementOf(manager, agent), "a pod of the other version still runs")
		}
	}, 5*time.Minute, 2*time.Second).Should(Succeed())
	// Ready is not yet answering: a pod's webhook server may still refuse connections (CI saw
	// "connection refused" on the webhook Service right after the rollout).
	Eventually(func() error {
		_, err := kubectl([]byte(upgradeProfile), "apply", "--dry-run=server", "-f", "-")
		return err
	}, 2*time.Minute, 2*time.Second).Should(Succeed(), "the operator's webhook does not answer")
}

var _ = Describe("an upgrade of the operator with a profile live", Ordered, func() {
	var prevVersion, prevChart, prevTag string
	var before tunedNode

	BeforeAll(func() {
		clearCluster() // whatever another spec left
		By("the previous release: its chart, and its images on the node (hack/previous-release.sh)")
		out, err := run(30*time.Minute, nil, "hack/previous-release.sh", "--import")
		Expect(err).NotTo(HaveOccurred(), "hack/previous-release.sh --import:\n%s", out)
		for _, l := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
			switch k {
			case "version":
				prevVersion = v
			case "chart":
				prevChart = v
			case "tag":
				prevTag = v
			}
		}
		Expect([]string{prevVersion, prevChart, prevTag}).NotTo(ContainElement(""), "hack/previous-release.sh printed:\n%s", out)
		DeferCleanup(func() {
			By("the profile goes (the agent restores the host) and the release is uninstalled")
			_, _ = kubectl(nil, "delete", "latencybenchmark", "tse2e-upgrade", "-n", testNS, "--ignore-not-found", "--wait=true", "--timeout=60s")
			_, _ = kubectl(nil, "delete", "latencyprofile", profileName, "--ignore-not-found", "--wait=true", "--timeout=180s")
			Eventually(func() string {
				out, _ := kubectl(nil, "get", "latencynodestate", nodeName)
				return out
			}, 2*time.Minute, 2*time.Second).Should(ContainSubstring("NotFound"))
			Expect(hostDiff(snapshot)).To(BeEmpty(), "the host after the restore")
			out, err := helm(5*time.Minute, "uninstall", release, "-n", releaseNS, "--wait", "--timeout", "3m", "--ignore-not-found")
			Expect(err).NotTo(HaveOccurred(), out)
			_, _ = kubectl(nil, "delete", "namespace", testNS, "--ignore-not-found", "--wait=true", "--timeout=180s")
		})
	})

	It("installs the previous release, which tunes the node: Applied and validated", func() {
		resetRecorders()
		out, err := helm(10*time.Minute, "install", release, prevChart, "-n", releaseNS, "--create-namespace",
			"-f", valuesFile(true), "--set", "imageTag="+prevTag, "--wait", "--timeout", "8m")
		Expect(err).NotTo(HaveOccurred(), "helm install of %s:\n%s", prevVersion, out)
		settled("localhost/tickstack-manager:"+prevTag, "localhost/tickstack-agent:"+prevTag)
		apply(holdManifest)
		apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + testNS + "\n")
		Eventually(func() error {
			_, err := kubectl(nil, "get", "serviceaccount", "default", "-n", testNS)
			return err
		}, time.Minute, time.Second).Should(Succeed())
		out, err = kubectl(nil, "label", "node", nodeName, roleLabel+"="+roleValue, "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)
		apply(upgradeProfile)
		Eventually(func(g Gomega) {
			appliedState(g)
			g.Expect(nodeLabels()).To(HaveKeyWithValue("tickstack.io/profile", profileName))
		}, 5*time.Minute, 2*time.Second).Should(Succeed())
		apply(upgradeBenchmark)
		Eventually(func() (string, error) {
			return kubectl(nil, "get", "latencybenchmark", "tse2e-upgrade", "-n", testNS, "-o", "jsonpath={.status.verdict}")
		}, 10*time.Minute, 2*time.Second).Should(Equal("Passed"))
		Eventually(nodeLabels, time.Minute, 2*time.Second).Should(HaveKeyWithValue("tickstack.io/validated", profileName))
		for k, v := range wantSysctls {
			Expect(readHost("/proc/sys/"+strings.ReplaceAll(k, ".", "/"))).To(Equal(v), "the host's %s", k)
		}
		Expect(readHost(journalHost)).NotTo(Equal(absent), "the agent journals the originals")
		before = observeTunedNode()
	})

	// handedOver checks (in an Eventually) that the manager handed the node to its agent
	// (manager.resolveOnNode, on by default): spec.profile.resolveOnNode and no spec.tuning, and
	// the agent's resolution reported (status.resolved, the ResolveOnNode capability), the very
	// tuning the node had (status.tuning).
	handedOver := func(g Gomega) {
		var lns map[string]any
		g.Expect(getJSON(&lns, "latencynodestate", nodeName)).To(Succeed())
		spec, _ := lns["spec"].(map[string]any)
		prof, _ := spec["profile"].(map[string]any)
		g.Expect(prof).To(HaveKeyWithValue("resolveOnNode", true))
		g.Expect(spec).NotTo(HaveKey("tuning"))
		status, _ := lns["status"].(map[string]any)
		g.Expect(status).To(HaveKey("resolved"))
		g.Expect(status["capabilities"]).To(ContainElement("ResolveOnNode"))
		tuning, _ := desiredTuning(lns)
		g.Expect(tuning).To(MatchJSON(before.tuning), "the agent's resolution (status.tuning) is the spec.tuning the node had")
	}
	// specTuningBack checks (in an Eventually) that the node has spec.tuning again, the very tuning
	// it had: the previous release's manager writes it after a rollback (its API has no
	// spec.profile.resolveOnNode, and its agent applies spec.tuning whatever else the spec says).
	specTuningBack := func(g Gomega) map[string]any {
		var lns map[string]any
		g.Expect(getJSON(&lns, "latencynodestate", nodeName)).To(Succeed())
		spec, _ := lns["spec"].(map[string]any)
		g.Expect(spec).To(HaveKey("tuning"))
		tuning, err := json.Marshal(spec["tuning"])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tuning).To(MatchJSON(before.tuning), "spec.tuning is the tuning the node had")
		return spec
	}
	// handedBack checks (in an Eventually) that the manager took the node back
	// (manager.resolveOnNode=false): spec.tuning again, the very tuning it had, and no
	// spec.profile.resolveOnNode.
	handedBack := func(g Gomega) {
		spec := specTuningBack(g)
		prof, _ := spec["profile"].(map[string]any)
		g.Expect(prof).NotTo(HaveKeyWithValue("resolveOnNode", true))
	}

	// untouched runs helm (an upgrade or a rollback) with the node watched, waits until the manager
	// and agent run the images manager and agent and the node's tuning is where this install puts
	// it (at, handedOver or handedBack), then some check periods (10 s) more for the new agent and
	// manager to do whatever they would do, and fails on anything that moved.
	untouched := func(at func(Gomega), manager, agent string, args ...string) {
		stop := sync.OnceValue(watchNode(before.host))
		defer stop()
		out, err := helm(10*time.Minute, append(args, "-n", releaseNS, "--wait", "--timeout", "8m")...)
		Expect(err).NotTo(HaveOccurred(), "helm %s:\n%s", args[0], out)
		settled(manager, agent)
		Eventually(at, 3*time.Minute, 2*time.Second).Should(Succeed(), "where helm %s puts the node's tuning", args[0])
		time.Sleep(25 * time.Second)
		Expect(stop()).To(BeEmpty(), "during helm %s", args[0])
		Expect(before.diff(observeTunedNode())).To(BeEmpty(), "after helm %s", args[0])
	}
	// upgrade is helm upgrade to this tree's chart with the e2e's values and sets.
	upgrade := func(sets ...string) []string {
		args := append(append([]string{"upgrade", release}, chartFromRegistry()...), "-f", valuesFile(false))
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		return args
	}

	It("upgrades to this tree's chart with its default values, which hand the node its own resolution (manager.resolveOnNode): no setting, drain, reboot, restore, spec, label or result moves", func() {
		untouched(handedOver, managerImage, agentImage, upgrade()...)
		By("tickstack-xdpd runs this tree's image (the previous release has no tickstack-xdpd: the upgrade creates it)")
		out, err := kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-xdpd", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred(), out)
		// "<pod> <image> <memory limit>" of each xdpd pod
		xdpdPods := func() (string, error) {
			return kubectl(nil, "get", "pods", "-n", releaseNS, "-l", "app.kubernetes.io/component=xdpd", "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.spec.containers[0].image} {.spec.containers[0].resources.limits.memory}{"\n"}{end}`)
		}
		var first string
		Eventually(func(g Gomega) {
			out, err := xdpdPods()
			g.Expect(err).NotTo(HaveOccurred(), out)
			f := strings.Fields(out)
			g.Expect(f).To(HaveLen(3), out)
			g.Expect(f[1]).To(Equal(agentImage))
			first = f[0]
		}, time.Minute, 2*time.Second).Should(Succeed())

		By("an upgrade that changes tickstack-xdpd's pod: the DaemonSet replaces it by itself (RollingUpdate, no pod deleted by hand); nothing else moves, the node stays handed over")
		untouched(handedOver, managerImage, agentImage, upgrade("xdpd.resources.limits.memory=80Mi")...)
		out, err = kubectl(nil, "get", "daemonset", release+"-xdpd", "-n", releaseNS, "-o", "jsonpath={.spec.updateStrategy.type}")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal("RollingUpdate"))
		out, err = kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-xdpd", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			out, err := xdpdPods()
			g.Expect(err).NotTo(HaveOccurred(), out)
			f := strings.Fields(out)
			g.Expect(f).To(HaveLen(3), out)
			g.Expect(f[0]).NotTo(Equal(first), "a new pod of tickstack-xdpd")
			g.Expect(f[1:]).To(Equal([]string{agentImage, "80Mi"}))
		}, time.Minute, 2*time.Second).Should(Succeed())
	})

	It("changes the profile of the handed-over node: the host follows with no node state write", func() {
		Eventually(handedOver, time.Minute, 2*time.Second).Should(Succeed())
		By("a profile change: the agent re-tunes the host from the profile; the manager writes no node state")
		var lns0 nodeState
		Expect(getJSON(&lns0, "latencynodestate", nodeName)).To(Succeed())
		setStatInterval := func(v string) {
			GinkgoHelper()
			out, err := kubectl(nil, "patch", "latencyprofile", profileName, "--type=merge", "-p", `{"spec":{"sysctls":{"vm.stat_interval":"`+v+`"}}}`)
			Expect(err).NotTo(HaveOccurred(), out)
			gen, err := kubectl(nil, "get", "latencyprofile", profileName, "-o", "jsonpath={.metadata.generation}")
			Expect(err).NotTo(HaveOccurred(), gen)
			Eventually(func(g Gomega) {
				g.Expect(readHost("/proc/sys/vm/stat_interval")).To(Equal(v))
				resolvedGen, err := kubectl(nil, "get", "latencynodestate", nodeName, "-o", "jsonpath={.status.resolved.generation}")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(resolvedGen).To(Equal(gen), "status.resolved.generation")
				lns, err := getNodeState()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(lns.cond("Applied")).To(HaveField("Status", "True"))
				g.Expect(lns.Metadata.Generation).To(Equal(lns0.Metadata.Generation), "the node state's spec was written")
				g.Expect(nodeTaintKeys()).NotTo(ContainElement("tickstack.io/tuning-pending"))
			}, 2*time.Minute, time.Second).Should(Succeed())
		}
		setStatInterval("11")
		Expect(nodeLabels()).To(HaveKeyWithValue("tickstack.io/profile", profileName), "the profile label stays while the node re-tunes")
		setStatInterval(wantSysctls["vm.stat_interval"])
		Expect(before.diff(observeTunedNode())).To(BeEmpty(), "after the profile change and its revert")
	})

	It("turns manager.resolveOnNode off: the node gets spec.tuning back with the same values and nothing moves; on again, it is handed over again", func() {
		untouched(handedBack, managerImage, agentImage, upgrade("xdpd.resources.limits.memory=80Mi", "manager.resolveOnNode=false")...)
		By("manager.resolveOnNode on again (the default): the node is handed over again, nothing moves")
		untouched(handedOver, managerImage, agentImage, upgrade("xdpd.resources.limits.memory=80Mi")...)
	})

	It("rolls back to the previous release: the node gets spec.tuning back from its manager, nothing moves either", func() {
		untouched(func(g Gomega) { specTuningBack(g) }, "localhost/tickstack-manager:"+prevTag, "localhost/tickstack-agent:"+prevTag, "rollback", release, "1")
	})
})
