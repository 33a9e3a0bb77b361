//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The per-pod runtime controls (issue 42, docs/agent.md "Per-pod controls") on the local cluster's
// containerd 2 through the agent's NRI plugin (agent.nriPlugin.enabled, which the e2e install sets):
// a Guaranteed pod pinned to CPU 1 (and an init container with a fraction of a CPU, which the
// plugin leaves alone) with tickstack.io/irq-load-balancing: disable, and
// tickstack.io/cpu-c-states: disable where the host's CPU 1 has a PM QoS resume latency limit
// (power/pm_qos_resume_latency_us; reported Unsupported where it has none), on a node whose profile
// allows both. Its own profile: the whole flow's keeps every
// IRQ off CPU 1 and limits the C-states node-wide, which would hide what the pod's annotations do.

const (
	podControlsPod     = "quiet"
	podControlsJournal = stateDirHost + "/pod-controls-journal.json"
)

func podControlsProfile() string {
	return profileHead + `
  cpu: {reserved: "0"}
  podControls:
    allow: [irqLoadBalancing, cpuCStates]
`
}

// irqAffinities reads every IRQ's requested (smp_affinity_list) or effective
// (effective_affinity_list) affinity, by IRQ number.
func irqAffinities(file string) map[string]string {
	out := map[string]string{}
	paths, _ := filepath.Glob("/proc/irq/[0-9]*/" + file)
	for _, p := range paths {
		if v := readHost(p); v != absent {
			out[filepath.Base(filepath.Dir(p))] = v
		}
	}
	return out
}

// resumeLatencyFile is cpuN's PM QoS resume latency limit, through which the plugin limits its
// C-states (CRI-O's mechanism): "n/a" is a 0 us limit (polling only), "0" none.
func resumeLatencyFile(cpu int) string {
	return fmt.Sprintf("/sys/devices/system/cpu/cpu%d/power/pm_qos_resume_latency_us", cpu)
}

// listHas says whether a CPU list (0-3,5) names cpu.
func listHas(list string, cpu int) bool {
	for _, r := range strings.Split(strings.TrimSpace(list), ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		if a <= cpu && cpu <= b {
			return true
		}
	}
	return false
}

// refusedIRQs are the IRQs the NRI plugin's journal marks refused by the kernel (managed IRQs,
// whose affinity the kernel spreads itself, such as virtio-blk's request queues).
func refusedIRQs() map[string]bool {
	GinkgoHelper()
	b, err := os.ReadFile(podControlsJournal)
	Expect(err).NotTo(HaveOccurred(), "the NRI plugin's journal while the pod runs")
	var j struct {
		Entries []struct {
			Name    string `json:"name"`
			Refused bool   `json:"refused"`
		} `json:"entries"`
	}
	Expect(json.Unmarshal(b, &j)).To(Succeed(), string(b))
	out := map[string]bool{}
	for _, e := range j.Entries {
		if n, ok := strings.CutPrefix(e.Name, "irq/"); ok && e.Refused {
			out[n] = true
		}
	}
	return out
}

// interruptsOn is one CPU's column of /proc/interrupts, by IRQ number.
func interruptsOn(cpu int) map[string]int {
	GinkgoHelper()
	lines := strings.Split(readHost("/proc/interrupts"), "\n")
	col := -1
	for i, f := range strings.Fields(lines[0]) {
		if f == "CPU"+strconv.Itoa(cpu) {
			col = i
		}
	}
	Expect(col).To(BeNumerically(">=", 0), "/proc/interrupts has no CPU%d column", cpu)
	out := map[string]int{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) > col+1 && strings.HasSuffix(f[0], ":") {
			if n, err := strconv.Atoi(f[col+1]); err == nil {
				out[strings.TrimSuffix(f[0], ":")] = n
			}
		}
	}
	return out
}

var _ = Describe("per-pod runtime controls through the NRI plugin", Ordered, func() {
	const cpu = 1 // the node's one allocatable CPU (CPU 0 is reserved): a pinned pod gets it
	_, statErr := os.Stat(resumeLatencyFile(cpu))
	pmQoS := statErr == nil

	BeforeAll(func() {
		clearCluster() // whatever another spec left
		resetRecorders()
		installRelease()
		out, err := kubectl(nil, "label", "node", nodeName, roleLabel+"="+roleValue, "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)
		apply(podControlsProfile())
		Eventually(func(g Gomega) {
			appliedState(g)
			g.Expect(nodeLabels()).To(HaveKeyWithValue("tickstack.io/profile", profileName))
		}, 5*time.Minute, 2*time.Second).Should(Succeed())
		// the agent's node policy for the plugin (written from its desired tuning before Applied:
		// spec.tuning, or its own resolution on a node handed to it)
		Expect(readHost(stateDirHost + "/pod-controls.json")).To(ContainSubstring("irqLoadBalancing"))
	})
	AfterAll(func() {
		if CurrentSpecReport().Failed() {
			out, _ := kubectl(nil, "logs", "-n", releaseNS, "daemonset/"+release+"-agent", "-c", "nri-plugin", "--tail=200", "--timestamps")
			AddReportEntry("nri-plugin log", out)
			out, _ = kubectl(nil, "describe", "pod", podControlsPod, "-n", testNS)
			AddReportEntry("pod", out)
		}
		clearCluster()
	})

	podManifest := func(annotations map[string]string) string {
		var ann []string
		for k, v := range annotations {
			ann = append(ann, fmt.Sprintf("%s: %q", k, v))
		}
		sort.Strings(ann)
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: {tickstack.io/profile: %s}
  annotations: {%s}
spec:
  terminationGracePeriodSeconds: 1
  # a fraction of a CPU, as the webhook's init container on a bypass profile: it holds no
  # exclusive CPU, so the plugin starts it untouched (refusing it kept the pod from starting)
  initContainers:
%s
  containers:
%s
`, podControlsPod, testNS, profileName, strings.Join(ann, ", "),
			benchContainer("  ", "setup", `["true"]`, "{cpu: 100m, memory: 16Mi}"),
			benchContainer("  ", "quiet", "[sleep, infinity]", `{cpu: "1", memory: 64Mi}`))
	}
	deletePod := func() {
		GinkgoHelper()
		out, err := kubectl(nil, "delete", "pod", podControlsPod, "-n", testNS, "--ignore-not-found", "--wait=true", "--timeout=120s")
		Expect(err).NotTo(HaveOccurred(), out)
	}

	It("keeps every IRQ off a pod's exclusive CPU and its C-states off while it runs, and puts the node's values back exactly when it goes", func() {
		smpBefore := irqAffinities("smp_affinity_list")
		latencyBefore := readHost(resumeLatencyFile(cpu))
		Expect(smpBefore).NotTo(BeEmpty())
		annotations := map[string]string{"tickstack.io/irq-load-balancing": "disable"}
		if pmQoS {
			annotations["tickstack.io/cpu-c-states"] = "disable"
		}
		apply(podManifest(annotations))
		Eventually(func() (string, error) {
			return kubectl(nil, "get", "pod", podControlsPod, "-n", testNS, "-o", "jsonpath={.status.phase}")
		}, 3*time.Minute, 2*time.Second).Should(Equal("Running"))
		out, err := kubectl(nil, "exec", "-n", testNS, podControlsPod, "--", "grep", "Cpus_allowed_list", "/proc/self/status")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`Cpus_allowed_list:\s+%d\n?$`, cpu), "the pod's exclusive CPU")
		p, err := podJSON(podControlsPod)
		Expect(err).NotTo(HaveOccurred())
		Expect(p["metadata"].(map[string]any)["annotations"]).To(HaveKeyWithValue("required-plugins.noderesource.dev/pod", ContainSubstring("tickstack")),
			"the pod webhook asks the runtime for the plugin")

		By("while it runs: no IRQ's requested affinity names its CPU, and none's effective one (the kernel refuses to move managed IRQs: journaled as refused)")
		refused := refusedIRQs()
		for irq, list := range irqAffinities("smp_affinity_list") {
			if refused[irq] {
				GinkgoWriter.Printf("irq %s: the kernel refuses to move it (managed): %s\n", irq, list)
				continue
			}
			Expect(listHas(list, cpu)).To(BeFalse(), "irq %s's smp_affinity_list is %s while the pod on CPU %d runs", irq, list, cpu)
		}
		Expect(len(smpBefore)-len(refused)).To(BeNumerically(">", 0), "no IRQ left to check")
		// x86 without interrupt remapping moves an IRQ when it next fires: its effective affinity
		// follows then. Polled until a deadline; an IRQ still pending then has had no interrupt on
		// the CPU since the pod started (its first one would have moved it).
		atStart := interruptsOn(cpu)
		var pending []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
			pending = nil
			for irq, list := range irqAffinities("effective_affinity_list") {
				if !refused[irq] && listHas(list, cpu) {
					pending = append(pending, irq)
				}
			}
			if len(pending) == 0 || time.Now().After(deadline) {
				break
			}
		}
		now := interruptsOn(cpu)
		for _, irq := range pending {
			Expect(now[irq]).To(Equal(atStart[irq]), "irq %s: its effective affinity %s still names CPU %d after 30 s, and it had interrupts there",
				irq, readHost("/proc/irq/"+irq+"/effective_affinity_list"), cpu)
			GinkgoWriter.Printf("irq %s: its move is pending until it next fires; no interrupt on CPU %d meanwhile\n", irq, cpu)
		}
		if pmQoS {
			By("while it runs: its CPU's PM QoS resume latency limit is 0 us (n/a): no idle state with an exit latency")
			Expect(readHost(resumeLatencyFile(cpu))).To(Equal("n/a"), "%s while the pod on CPU %d runs (it was %s)", resumeLatencyFile(cpu), cpu, latencyBefore)
		}

		By("after the pod is deleted: every IRQ's affinity and the resume latency limit are back exactly, the journal gone")
		deletePod()
		Eventually(func(g Gomega) {
			g.Expect(irqAffinities("smp_affinity_list")).To(Equal(smpBefore))
			g.Expect(readHost(resumeLatencyFile(cpu))).To(Equal(latencyBefore))
			g.Expect(podControlsJournal).NotTo(BeAnExistingFile())
		}, time.Minute, time.Second).Should(Succeed())

		if !pmQoS {
			By("no pm_qos_resume_latency_us on this host: the C-state annotation is reported Unsupported and the container never created")
			apply(podManifest(map[string]string{"tickstack.io/cpu-c-states": "disable"}))
			Eventually(func() (string, error) {
				return kubectl(nil, "get", "events", "-n", testNS, "--field-selector", "involvedObject.name="+podControlsPod, "-o", "jsonpath={.items[*].message}")
			}, 2*time.Minute, 2*time.Second).Should(ContainSubstring("Unsupported on this host"))
			out, err := kubectl(nil, "get", "pod", podControlsPod, "-n", testNS, "-o", "jsonpath={.status.phase}")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(out).To(Equal("Pending"), "the container was not created")
			deletePod()
		}
	})
})
