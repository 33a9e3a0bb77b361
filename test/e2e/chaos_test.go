//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The chaos specs (docs/e2e.md "Chaos"): one profile on the one real node, and in turn the
// kube-apiserver, etcd, the manager, the agent with tickstack-xdpd, and the node itself (a reboot
// that never ends) fail in the middle of what the node is doing. After each the node reaches the
// desired state or its originals, the agent's journal holds the host's true originals, no reboot
// slot or cordon is left behind, and the events say what happened. They run in this order and
// reuse the node's state: each starts from where the previous one left the node.

// journalPath is the agent's journal of originals on the host (--journal-path).
var journalPath = filepath.Join(stateDirHost, "tuning-journal.json")

// journal reads the agent's journal: setting name -> original value; nil when there is none.
func journal() map[string]string {
	GinkgoHelper()
	b, err := os.ReadFile(journalPath)
	if os.IsNotExist(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	var j struct {
		Entries []struct {
			Name     string `json:"name"`
			Original string `json:"original"`
		} `json:"entries"`
	}
	Expect(json.Unmarshal(b, &j)).To(Succeed(), "the journal:\n%s", b)
	m := map[string]string{}
	for _, e := range j.Entries {
		m[e.Name] = e.Original
	}
	return m
}

// expectTuned checks a node that converged to the profile: its state Applied for the current
// generation, every runtime setting in sync with the host showing it, the journal holding the
// values from before the install (never a value the agent wrote itself) for every sysctl it
// changed, and no slot, cordon or taint left.
func expectTuned(g Gomega) *nodeState {
	lns := appliedState(g)
	for k, v := range wantSysctls {
		desired, observed, state, ok := lns.setting("sysctl/" + k)
		g.Expect(ok).To(BeTrue(), "status.settings lacks sysctl/%s", k)
		g.Expect([]string{desired, observed, state}).To(Equal([]string{v, v, "InSync"}), "sysctl/%s", k)
		g.Expect(readHost("/proc/sys/"+strings.ReplaceAll(k, ".", "/"))).To(Equal(v), "the host's %s", k)
	}
	j := journal()
	for k, v := range wantSysctls {
		p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
		if snapshot[p] == v {
			continue // nothing to change, nothing journaled
		}
		g.Expect(j).To(HaveKeyWithValue("sysctl/"+k, snapshot[p]), "the journal's original of %s", k)
	}
	for name, orig := range j {
		if k, ok := strings.CutPrefix(name, "sysctl/"); ok {
			if was, snap := snapshot["/proc/sys/"+strings.ReplaceAll(k, ".", "/")]; snap {
				g.Expect(orig).To(Equal(was), "the journal's original of %s is not the value before the install", name)
			}
		}
	}
	expectNoSlot(g, lns)
	return lns
}

// expectNoSlot checks that the node holds no reboot slot and is not cordoned or tainted by the
// agent, and that the profile counts no node waiting for a reboot.
func expectNoSlot(g Gomega, lns *nodeState) {
	if lns != nil {
		g.Expect(lns.Spec.RebootGranted).To(BeFalse(), "the node still holds its slot")
		g.Expect(lns.Status.Reboot).To(BeNil())
		g.Expect(lns.cond("RebootRequired")).To(HaveField("Status", "False"))
		var prof struct {
			Status struct {
				RebootPendingNodes int `json:"rebootPendingNodes"`
			} `json:"status"`
		}
		g.Expect(getJSON(&prof, "latencyprofile", profileName)).To(Succeed())
		g.Expect(prof.Status.RebootPendingNodes).To(BeZero())
	}
	node := getNode(g)
	g.Expect(node.Spec.Unschedulable).To(BeFalse(), "the node is left cordoned")
	g.Expect(node.Annotations).NotTo(HaveKey("tickstack.io/cordoned"))
	for _, t := range node.Spec.Taints {
		g.Expect(t.Key).NotTo(Equal("tickstack.io/tuning-pending"))
	}
}

// events counts the events of reason about the object uid (an aggregated event by its count).
func events(uid, reason string) int {
	out, err := kubectl(nil, "get", "events", "-A", "--field-selector", "reason="+reason+",involvedObject.uid="+uid,
		"-o", "jsonpath={range .items[*]}n{.count}{\" \"}{end}")
	if err != nil {
		return 0
	}
	// The agent's events (events.k8s.io) carry no count: one each; the kubelet's aggregate.
	n := 0
	for _, c := range strings.Fields(out) {
		v, _ := strconv.Atoi(strings.TrimPrefix(c, "n"))
		n += max(v, 1)
	}
	return n
}

// expectEvents waits until, for each reason, the events about uid number want more than before.
func expectEvents(uid string, before map[string]int, want map[string]int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for reason, n := range want {
			g.Expect(events(uid, reason)-before[reason]).To(Equal(n), "%s events since the fault", reason)
		}
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
}

// countEvents is events for each reason.
func countEvents(uid string, reasons ...string) map[string]int {
	m := map[string]int{}
	for _, r := range reasons {
		m[r] = events(uid, r)
	}
	return m
}

// killContainer kills a running pod's container with SIGKILL through the node's containerd (a
// crash, not a deletion: the kubelet restarts it in the same pod).
func killContainer(selector, container string) {
	GinkgoHelper()
	id, err := podContainer(selector, container)
	Expect(err).NotTo(HaveOccurred())
	env, err := run(time.Minute, nil, "hack/local-cluster", "env")
	Expect(err).NotTo(HaveOccurred(), env)
	// The cluster's own ctr (hack/local-cluster env): a machine need not have one on its PATH.
	out, err := run(time.Minute, nil, envValue(env, "TSLC_CTR"), "--address", envValue(env, "TSLC_CONTAINERD_ADDRESS"), "-n", "k8s.io",
		"tasks", "kill", "-s", "SIGKILL", id[strings.Index(id, "://")+3:])
	Expect(err).NotTo(HaveOccurred(), "killing %s of %s: %s", container, selector, out)
}

// restartCount is the restart count of a container of the release's pod on the node.
func restartCount(component, container string) int {
	GinkgoHelper()
	out, err := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", "app.kubernetes.io/instance="+release+",app.kubernetes.io/component="+component,
		"-o", "jsonpath={.items[*].status.containerStatuses[?(@.name=='"+container+"')].restartCount}")
	Expect(err).NotTo(HaveOccurred(), out)
	n := 0
	for _, f := range strings.Fields(out) {
		v, _ := strconv.Atoi(f)
		n += v
	}
	return n
}

// rebootPhase is the node state's status.reboot.phase ("" when none).
func rebootPhase() string {
	out, _ := kubectl(nil, "get", "latencynodestate", nodeName, "-o", "jsonpath={.status.reboot.phase}")
	return strings.TrimSpace(out)
}

// ContinueOnFailure: a fault that leaves the node unconverged does not hide what the next ones do
// (each applies the profile it needs); the report then says which ones failed.
var _ = Describe("chaos on the local cluster", Ordered, ContinueOnFailure, Label("chaos"), func() {
	var uid string

	AfterEach(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		reportComponentLogs(300, 100)
		reportEvents()
		out, _ := kubectl(nil, "get", "pods", "-n", releaseNS, "-o",
			`jsonpath={range .items[*]}{.metadata.name}{" "}{range .status.containerStatuses[*]}{.name}{" restarts="}{.restartCount}{" last="}{.lastState.terminated}{"; "}{end}{"\n"}{end}`)
		AddReportEntry("release pods' containers", out)
		out, _ = kubectl(nil, "get", "latencynodestate", nodeName, "-o", "yaml")
		AddReportEntry("node state", out)
	})

	It("installs the chart and labels the node for the profile", func() {
		clearCluster()
		resetRecorders()
		installRelease()
		out, err := kubectl(nil, "label", "node", nodeName, roleLabel+"="+roleValue, "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(journal()).To(BeNil(), "a journal before any profile")
	})

	It("a: converges when the kube-apiserver is killed and restarted while the agent applies the profile", func() {
		apply(profile(false))
		// The journal is written before the agent's first change: from then on it is applying.
		Eventually(journalPath, 2*time.Minute, 5*time.Millisecond).Should(BeAnExistingFile())
		out, err := run(5*time.Minute, nil, "hack/local-cluster", "restart", "--kill", "kube-apiserver")
		Expect(err).NotTo(HaveOccurred(), out)
		var lns *nodeState
		Eventually(func(g Gomega) { lns = expectTuned(g) }, 5*time.Minute, 2*time.Second).Should(Succeed())
		uid = lns.Metadata.UID
		Eventually(nodeLabels, 2*time.Minute, 2*time.Second).Should(HaveKeyWithValue("tickstack.io/profile", profileName))
		By("the agent's Applied event reached the API server once it was back")
		expectEvents(uid, nil, map[string]int{"Applied": 1, "ApplyFailed": 0})
	})

	It("b: converges when etcd is killed and restarted while the kubelet restarts in the node's slot", func() {
		before := countEvents(uid, "KubeletRestartRequested", "Draining", "KubeletRestarted", "KubeletVerified", "KubeletRestartFailed")
		env, err := run(time.Minute, nil, "hack/local-cluster", "env")
		Expect(err).NotTo(HaveOccurred(), env)
		pidFile := filepath.Join(envValue(env, "TICKSTACK_CLUSTER_DIR"), "pids", "kubelet")
		kubeletPID := readHost(pidFile)
		Expect(kubeletPID).NotTo(Equal(absent))
		withKubelet := strings.Replace(profile(false), `reserved: "0"`, `reserved: "1"`, 1) + "  kubelet: {topologyManagerPolicy: single-numa-node}\n"
		apply(withKubelet)
		// The agent stops the kubelet in its slot (hack/local-cluster kubelet-stop): its pid file
		// goes, then names the new one.
		Eventually(func() string { return readHost(pidFile) }, 5*time.Minute, 20*time.Millisecond).ShouldNot(Equal(kubeletPID))
		out, err := run(5*time.Minute, nil, "hack/local-cluster", "restart", "--kill", "etcd")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			expectTuned(g)
			out, err := kubectl(nil, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/configz")
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(`"reservedSystemCPUs":"1"`))
			g.Expect(out).To(ContainSubstring(`"topologyManagerPolicy":"single-numa-node"`))
		}, 8*time.Minute, 3*time.Second).Should(Succeed())
		By("one restart, announced once: requested, draining, restarted, verified")
		expectEvents(uid, before, map[string]int{"KubeletRestartRequested": 1, "Draining": 1, "KubeletRestarted": 1, "KubeletVerified": 1, "KubeletRestartFailed": 0})
		Expect(recorded("reboots")).To(BeZero())
		operatorBack()
	})

	It("c: converges when the manager is killed while the node is Draining for its slot", func() {
		before := countEvents(uid, "Draining", "KubeletRestarted", "KubeletVerified")
		leaderEvents := func() int {
			out, _ := kubectl(nil, "get", "events", "-n", releaseNS, "--field-selector", "reason=LeaderElection", "-o", "name")
			return len(strings.Fields(out))
		}
		leaders := leaderEvents()
		// The kubelet section goes: the kubelet restarts once more, with its main file.
		apply(profile(false))
		Eventually(rebootPhase, 5*time.Minute, 50*time.Millisecond).Should(Equal("Draining"))
		killContainer("app.kubernetes.io/instance="+release+",app.kubernetes.io/component=manager", "manager")
		Eventually(func(g Gomega) {
			expectTuned(g)
			out, err := kubectl(nil, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/configz")
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(`"reservedSystemCPUs":"0"`))
		}, 8*time.Minute, 3*time.Second).Should(Succeed())
		operatorBack()
		By("a new manager took the lead (its LeaderElection event) and took the slot back")
		Eventually(leaderEvents, 2*time.Minute, 2*time.Second).Should(BeNumerically(">", leaders))
		Consistently(func(g Gomega) { expectTuned(g) }, 10*time.Second, 2*time.Second).Should(Succeed())
		expectEvents(uid, before, map[string]int{"Draining": 1, "KubeletRestarted": 1, "KubeletVerified": 1})
	})

	It("d: converges when the node's agent and tickstack-xdpd are killed together", func() {
		for _, ds := range []string{"agent", "xdpd"} {
			out, err := kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-"+ds, "--timeout=3m")
			Expect(err).NotTo(HaveOccurred(), out)
		}
		journalBefore, err := os.ReadFile(journalPath)
		Expect(err).NotTo(HaveOccurred())
		agents, xdpds := restartCount("agent", "agent"), restartCount("xdpd", "xdpd")
		before := countEvents(uid, "Applied", "ApplyFailed", "Drifted", "Restored")
		killContainer("app.kubernetes.io/instance="+release+",app.kubernetes.io/component=agent", "agent")
		killContainer("app.kubernetes.io/instance="+release+",app.kubernetes.io/component=xdpd", "xdpd")
		Eventually(func() int { return restartCount("agent", "agent") }, 3*time.Minute, 2*time.Second).Should(BeNumerically(">", agents))
		Eventually(func() int { return restartCount("xdpd", "xdpd") }, 3*time.Minute, 2*time.Second).Should(BeNumerically(">", xdpds))
		for _, ds := range []string{"agent", "xdpd"} {
			out, err := kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-"+ds, "--timeout=3m")
			Expect(err).NotTo(HaveOccurred(), out)
		}
		Eventually(func() error {
			out, err := kubectl(nil, "exec", "-n", releaseNS, "ds/"+release+"-xdpd", "--", "/opt/tickstack/dataplane/tickstack-xdpd", "ctl", "status")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}, time.Minute, 2*time.Second).Should(Succeed(), "the restarted tickstack-xdpd answers")
		By("the restarted agent finds the host tuned: nothing rewritten, the journal as it was")
		Consistently(func(g Gomega) { expectTuned(g) }, 20*time.Second, 2*time.Second).Should(Succeed())
		after, err := os.ReadFile(journalPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(after)).To(Equal(string(journalBefore)))
		By("the pods say both containers were killed (exit 137) and run again; the node state's events, that nothing was re-applied or failed")
		// (the pods' status, not the kubelet's Started events: those are
		// aggregated and rate-limited per pod by the kubelet's recorder,
		// and a restart's second one was missing in a CI run)
		for _, c := range []string{"agent", "xdpd"} {
			out, err := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", "app.kubernetes.io/instance="+release+",app.kubernetes.io/component="+c,
				"-o", "jsonpath={.items[*].status.containerStatuses[?(@.name=='"+c+"')].lastState.terminated.exitCode}")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(strings.Fields(out)).To(ContainElement("137"), "the %s container's last state: killed by SIGKILL", c)
		}
		expectEvents(uid, before, map[string]int{"Applied": 0, "ApplyFailed": 0, "Drifted": 0, "Restored": 0})
	})

	It("e: restores the node's originals when the profile is deleted while the node is rebooting", func() {
		// The reboot command only records (values); the hold policy of the whole flow refuses reboot
		// slots, so it is lifted here and put back after.
		if _, err := kubectl(nil, "get", "validatingadmissionpolicy", holdPolicy); err == nil {
			out, err := kubectl(nil, "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", holdPolicy)
			Expect(err).NotTo(HaveOccurred(), out)
			DeferCleanup(func() { apply(holdManifest) })
		}
		before := countEvents(uid, "RebootRequested", "Draining", "Rebooting", "RebootAbandoned", "Restored", "RestoreFailed")
		reboots := recorded("reboots")
		apply(profile(true)) // CPU 1 isolated: kernel arguments, a reboot
		Eventually(rebootPhase, 5*time.Minute, time.Second).Should(Equal("Rebooting"))
		Eventually(func() int { return recorded("reboots") }, time.Minute, time.Second).Should(Equal(reboots + 1))
		Expect(filepath.Join(scratchDir, "grub.d", "99-tickstack.cfg")).To(BeAnExistingFile())
		// The boot never comes (the command only recorded): the node stays drained, cordoned and
		// tainted. On this one node the drain evicted the manager, which a real cluster runs on
		// another node: it is let onto the cordoned node so that it can act on the deletion.
		out, err := kubectl([]byte(`[{"op":"add","path":"/spec/template/spec/tolerations","value":[{"operator":"Exists"}]}]`),
			"patch", "deployment", release+"-manager", "-n", releaseNS, "--type=json", "--patch-file=/dev/stdin")
		Expect(err).NotTo(HaveOccurred(), out)
		operatorBack()
		out, err = kubectl(nil, "delete", "latencyprofile", profileName, "--wait=true", "--timeout=180s")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() string {
			out, _ := kubectl(nil, "get", "latencynodestate", nodeName)
			return out
		}, 2*time.Minute, 2*time.Second).Should(ContainSubstring("NotFound"))
		By("the host's originals back, no journal, no drop-in, the node schedulable and untainted, no second reboot")
		Expect(hostDiff(snapshot)).To(BeEmpty())
		Expect(journal()).To(BeNil(), "the journal is left after the restore")
		Expect(filepath.Join(scratchDir, "grub.d", "99-tickstack.cfg")).NotTo(BeAnExistingFile())
		Eventually(func(g Gomega) { expectNoSlot(g, nil) }, time.Minute, 2*time.Second).Should(Succeed())
		Expect(nodeLabels()).NotTo(HaveKey("tickstack.io/profile"))
		Consistently(func() int { return recorded("reboots") }, 10*time.Second, 2*time.Second).Should(Equal(reboots + 1))
		By("the events: the reboot asked, drained, run; then that it is abandoned, and the restore")
		expectEvents(uid, before, map[string]int{"RebootRequested": 1, "Draining": 1, "Rebooting": 1, "RebootAbandoned": 1, "Restored": 1, "RestoreFailed": 0})
	})
})
