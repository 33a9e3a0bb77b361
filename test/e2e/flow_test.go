//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// values configure the chart for this machine: images pulled from the cluster's registry (the
// previous release's imported by hand); no CPU requests for the
// operator, the agent and tickstack-xdpd, so the node's one allocatable CPU stays whole for a pinned
// pod; the local cluster's CNI directory for the tickstack-xdp plugin; a reboot command and a GRUB
// update command that only record into the scratch directory; and the GRUB drop-in directory
// replaced by that scratch directory, so the real boot configuration is never written. The agent
// watches a failpoint file there: the test names a point in it to have the agent kill itself there.
// previous: the values of the previous release's chart (hack/previous-release), which has neither
// tickstack-xdpd nor the agent's extraArgs (nor its NRI plugin, which this tree's values enable:
// agent.nriPlugin on the cluster's NRI socket directory, nriSocketDir).
func values(cniBinDir, clusterDir, nriSocketDir string, previous bool) string {
	policy := "IfNotPresent"
	if previous {
		policy = "Never"
	}
	v := `
imagePullPolicy: ` + policy + `
crds: {keep: true}
manager:
  # one node: with two replicas and their PodDisruptionBudget, a drain of the only node could not
  # evict the second replica (the first one's replacement waits for the uncordon)
  replicas: 1
  resources: {requests: {cpu: null, memory: 64Mi}}
agent:
  checkPeriod: 10s
  resources: {requests: {cpu: null, memory: 32Mi}}
  rebootCommand: [/bin/sh, -c, 'date +%s >> /tse2e/reboots']
  bootLoader:
    type: grub
    grubUpdateCommand: [/bin/sh, -c, 'date +%s >> /tse2e/grub-updates']
  extraVolumes:
  - {name: tse2e-scratch, hostPath: {path: ` + scratchDir + `, type: DirectoryOrCreate}}
  extraVolumeMounts:
  - {name: tse2e-scratch, mountPath: /tse2e}
  - {name: tse2e-scratch, mountPath: /host/etc/default/grub.d, subPath: grub.d}
`
	if previous {
		return v
	}
	// The kubelet is hack/local-cluster's process: its config dir and root dir are in the cluster's
	// state directory, and it is stopped and started by hack/local-cluster (outside the agent's
	// cgroups) through the host's mount namespace.
	cache := os.Getenv("TICKSTACK_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		Expect(err).NotTo(HaveOccurred())
		cache = filepath.Join(base, "tickstack")
	}
	// This VM's PID 1 is closed to containers: the host's mount namespace is containerd's.
	local := func(verb string) string {
		return fmt.Sprintf(`[/bin/sh, -c, 'exec nsenter --target "$(pgrep -o -x containerd)" --mount -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TICKSTACK_CACHE=%s TICKSTACK_CLUSTER_DIR=%s %s/hack/local-cluster %s']`,
			cache, clusterDir, repoRoot, verb)
	}
	return v + `  - {name: tse2e-scratch, mountPath: /host/etc/systemd/system, subPath: systemd}
  extraArgs: [--failpoint-file=/tse2e/failpoint]
  hostProcess: containerd
  # the per-pod controls' NRI plugin, on the cluster's containerd 2 NRI socket (its state directory)
  # (no CPU request either: the node's one allocatable CPU stays whole for a pinned pod)
  nriPlugin: {enabled: true, socketDir: ` + nriSocketDir + `, resources: {requests: {cpu: null, memory: 16Mi}}}
  # the agent's metrics endpoint (port 8083 of this machine): the bypass pods' counters
  metrics: {enabled: true}
  kubelet:
    configDir: ` + clusterDir + `/etc/kubelet.conf.d
    rootDir: ` + clusterDir + `/kubelet
    stopCommand: ` + local("kubelet-stop") + `
    startCommand: ` + local("kubelet-start") + `
xdpd:
  cniBinDir: ` + cniBinDir + `
  resources: {requests: {cpu: null, memory: 16Mi}}
sriovDevicePlugin:
  enabled: true
`
}

// valuesFile writes values for this machine into a file of the running spec.
func valuesFile(previous bool) string {
	GinkgoHelper()
	env, err := run(time.Minute, nil, "hack/local-cluster", "env")
	Expect(err).NotTo(HaveOccurred(), env)
	cniBinDir := regexp.MustCompile(`(?m)^export TSLC_CNI_BIN_DIR=(\S+)$`).FindStringSubmatch(env)
	Expect(cniBinDir).NotTo(BeNil(), "hack/local-cluster env names no TSLC_CNI_BIN_DIR:\n%s", env)
	clusterDir := regexp.MustCompile(`(?m)^export TICKSTACK_CLUSTER_DIR=(\S+)$`).FindStringSubmatch(env)
	Expect(clusterDir).NotTo(BeNil(), "hack/local-cluster env names no TICKSTACK_CLUSTER_DIR:\n%s", env)
	f := filepath.Join(GinkgoT().TempDir(), "values.yaml")
	Expect(os.WriteFile(f, []byte(values(cniBinDir[1], clusterDir[1], envValue(env, "TSLC_NRI_SOCKET_DIR"), previous)), 0o644)).To(Succeed())
	Expect(os.MkdirAll(filepath.Join(scratchDir, "grub.d"), 0o755)).To(Succeed())
	Expect(os.MkdirAll(filepath.Join(scratchDir, "systemd"), 0o755)).To(Succeed())
	return f
}

// resetRecorders empties the scratch directory's recorders and failpoint before an install: the
// agents of another spec (the previous release's too) may have run the commands.
func resetRecorders() {
	GinkgoHelper()
	for _, r := range []string{"reboots", "grub-updates", "failpoint"} {
		Expect(os.RemoveAll(filepath.Join(scratchDir, r))).To(Succeed())
	}
}

// holdManifest refuses every reboot slot at the API server: the operator cannot grant
// spec.rebootGranted, so the agent never drains or reboots this machine, and the node keeps asking.
// A slot for a kubelet restart (status.reboot.action KubeletRestart) is let through.
const holdManifest = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ` + holdPolicy + `}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [tickstack.io]
      apiVersions: ["*"]
      operations: [CREATE, UPDATE]
      resources: [latencynodestates]
  validations:
  - expression: "!has(object.spec.rebootGranted) || !object.spec.rebootGranted || (oldObject != null && has(oldObject.spec.rebootGranted) && oldObject.spec.rebootGranted) || (has(object.status) && has(object.status.reboot) && has(object.status.reboot.action) && object.status.reboot.action == 'KubeletRestart')"
    message: this machine must never reboot; the e2e test holds every reboot slot (a kubelet restart's slot is let through)
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ` + holdPolicy + `}
spec:
  policyName: ` + holdPolicy + `
  validationActions: [Deny]
`

// profile is config/samples/latencyprofile.yaml adapted to this node: CPU 0 keeps the system and
// CPU 1 is isolated, C-states deeper than 2 us exit latency off, the sample's sysctls, THP never,
// IRQs kept off CPU 1, and the second network's veth (tslcnet2) as the latency NIC group, on which
// latency pods get a macvlan interface and the bypass stack. Huge pages, the governor (no cpufreq
// in this VM) and coalescing (veth has none) are left out.
func profile(isolate bool) string { return profileOf(isolate, true) }

// upgradeProfile tunes what the previous release and this tree both know, without kernel arguments
// (so the node becomes Applied with no reboot) and without a NIC group (the previous release's
// images carry no bypass stack of their own). On a host whose CPUs have no cpuidle states it leaves
// power out too: the previous release refused the whole profile there ("remove cpuIdle for this
// node"), where this tree reports that one setting Unsupported (the whole flow's profile keeps it).
var upgradeProfile = upgradeProfileFor(hostHasCPUIdle())

func upgradeProfileFor(cpuIdle bool) string {
	p := profileOf(false, false)
	if cpuIdle {
		return p
	}
	return strings.Replace(p, "  power:\n    maxCStateExitLatencyMicroseconds: 2\n", "", 1)
}

// hostHasCPUIdle says whether this host's CPUs have cpuidle states (a cpuidle driver runs).
func hostHasCPUIdle() bool {
	states, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*")
	return len(states) > 0
}

func profileOf(isolate, nics bool) string {
	cpu := `{reserved: "0"}`
	if isolate {
		cpu = `{reserved: "0", isolated: "1"}`
	}
	// The profile with a NIC group outranks the device plugin step's profile (vfProfile), which
	// selects this node too.
	nicGroup, priority := "", ""
	if nics {
		priority = "\n  priority: 10"
		nicGroup = `
  nics:
  - name: net2
    selector:
      drivers: [veth]
      interfaceNames: [tslcnet2]
    acceleration: bypass
    network:
      type: macvlan
      namespace: ` + testNS + `
      ipam: {type: host-local, subnet: 198.19.203.0/24, rangeStart: 198.19.203.100, rangeEnd: 198.19.203.150}`
	}
	return profileHead + priority + `
  cpu: ` + cpu + `
  hugepages:
    transparent: never
  power:
    maxCStateExitLatencyMicroseconds: 2
  irq:
    keepOffIsolated: true
  sysctls:
    kernel.timer_migration: "0"
    vm.stat_interval: "10"
    net.core.rmem_max: "33554432"` + nicGroup + `
  rollout:
    maxUnavailable: 1
    drainTimeout: 10m
`
}

// operatorBack waits for the operator after a drain of the only node evicted it: its webhooks
// answer again once its pod runs.
func operatorBack() {
	GinkgoHelper()
	out, err := kubectl(nil, "rollout", "status", "-n", releaseNS, "deployment/"+release+"-manager", "--timeout=5m")
	Expect(err).NotTo(HaveOccurred(), out)
	Eventually(func() error {
		_, err := kubectl([]byte(profile(false)), "apply", "--dry-run=server", "-f", "-")
		return err
	}, 2*time.Minute, 2*time.Second).Should(Succeed(), "the operator's webhook does not answer")
}

// The wanted sysctls, as the host shows them.
var wantSysctls = map[string]string{
	"kernel.timer_migration": "0",
	"vm.stat_interval":       "10",
	"net.core.rmem_max":      "33554432",
}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type nodeState struct {
	Metadata struct {
		UID        string `json:"uid"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		RebootGranted bool `json:"rebootGranted"`
	} `json:"spec"`
	// Tuning is the node's desired tuning where it is (desiredTuningOf): spec.tuning, or
	// status.tuning on a node its agent resolves. getNodeState fills it; nil: none yet.
	Tuning *struct {
		KernelArgs []string `json:"kernelArgs"`
	} `json:"-"`
	Status struct {
		ObservedGeneration int64       `json:"observedGeneration"`
		AppliedBootID      string      `json:"appliedBootID"`
		Conditions         []condition `json:"conditions"`
		Settings           []struct {
			Name     string `json:"name"`
			Desired  string `json:"desired"`
			Observed string `json:"observed"`
			State    string `json:"state"`
		} `json:"settings"`
		Reboot *struct {
			Phase string `json:"phase"`
		} `json:"reboot"`
		KubeletConfig *struct {
			Source  string `json:"source"`
			Message string `json:"message"`
		} `json:"kubeletConfig"`
	} `json:"status"`
}

func (s *nodeState) cond(t string) condition {
	for _, c := range s.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return condition{Type: t, Status: "Unknown"}
}

func (s *nodeState) setting(name string) (desired, observed, state string, ok bool) {
	for _, x := range s.Status.Settings {
		if x.Name == name {
			return x.Desired, x.Observed, x.State, true
		}
	}
	return "", "", "", false
}

func getNodeState() (*nodeState, error) {
	var raw json.RawMessage
	if err := getJSON(&raw, "latencynodestate", nodeName); err != nil {
		return nil, err
	}
	var s nodeState
	var m map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	t, err := json.Marshal(desiredTuningOf(m))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(t, &s.Tuning); err != nil {
		return nil, err
	}
	return &s, nil
}

// desiredTuningOf is a node state's desired tuning, as decoded JSON: spec.tuning, or, on a node
// whose agent resolves its own (spec.profile.resolveOnNode: the manager's default hands over every
// node whose agent reports the ResolveOnNode capability; docs/architecture.md, "Fleet scale"), the
// tuning the agent resolved, status.tuning. nil: none yet. It reads objects of the previous
// release (no status.tuning) the same way.
func desiredTuningOf(lns map[string]any) any {
	spec, _ := lns["spec"].(map[string]any)
	if t := spec["tuning"]; t != nil {
		return t
	}
	status, _ := lns["status"].(map[string]any)
	return status["tuning"]
}

// appliedState is the node's state, checked (in an Eventually) to be Applied for its current
// generation.
func appliedState(g Gomega) *nodeState {
	lns, err := getNodeState()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lns.Status.ObservedGeneration).To(Equal(lns.Metadata.Generation))
	g.Expect(lns.cond("Applied")).To(HaveField("Status", "True"), "%+v", lns.Status.Conditions)
	return lns
}

// recorded counts the lines a recorder command wrote into the scratch directory.
func recorded(name string) int {
	b, err := os.ReadFile(filepath.Join(scratchDir, name))
	if err != nil {
		return 0
	}
	return len(strings.Fields(string(b)))
}

// agentRestarts is the agent container's restart count on the node.
func agentRestarts() int {
	GinkgoHelper()
	out, err := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", "app.kubernetes.io/instance="+release+",app.kubernetes.io/component=agent",
		"--field-selector", "spec.nodeName="+nodeName, "-o", "jsonpath={.items[*].status.containerStatuses[?(@.name=='agent')].restartCount}")
	Expect(err).NotTo(HaveOccurred(), out)
	fields := strings.Fields(out)
	Expect(fields).To(HaveLen(1), "one agent pod on %s: %q", nodeName, out)
	var n int
	_, err = fmt.Sscan(fields[0], &n)
	Expect(err).NotTo(HaveOccurred(), out)
	return n
}

// killAgentAt has the agent kill itself with SIGKILL when it reaches failpoint (--failpoint-file):
// it removes the file first, so the restarted agent goes on. The returned function waits until it
// happened: the file gone and the kubelet restarted the container.
func killAgentAt(failpoint string) (waitKilled func()) {
	GinkgoHelper()
	restarts := agentRestarts()
	file := filepath.Join(scratchDir, "failpoint")
	Expect(os.WriteFile(file, []byte(failpoint+"\n"), 0o644)).To(Succeed())
	return func() {
		GinkgoHelper()
		Eventually(func() string { return readHost(file) }, 3*time.Minute, time.Second).Should(Equal(absent),
			"the agent never reached failpoint %s", failpoint)
		Eventually(agentRestarts, 3*time.Minute, 2*time.Second).Should(BeNumerically(">", restarts),
			"the kubelet did not restart the agent killed at %s", failpoint)
	}
}

func podJSON(name string) (map[string]any, error) {
	var p map[string]any
	err := getJSON(&p, "pod", name, "-n", testNS)
	return p, err
}

// installRelease installs this tree's chart from the cluster's registry with the values of this
// machine (and any extra helm arguments), pulling every image of the release, and waits until the
// operator, the agents and tickstack-xdpd are ready.
func installRelease(extra ...string) {
	GinkgoHelper()
	f := valuesFile(false)
	// Whatever an earlier run pulled goes: the install must pull every image of the release.
	forgetRegistryImages()
	args := append(append([]string{"install", release}, chartFromRegistry()...),
		"-n", releaseNS, "--create-namespace", "-f", f, "--wait", "--timeout", "8m")
	out, err := helm(10*time.Minute, append(args, extra...)...)
	Expect(err).NotTo(HaveOccurred(), "helm install:\n%s", out)
	out, err = kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-agent", "--timeout=5m")
	Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-xdpd", "--timeout=5m")
	Expect(err).NotTo(HaveOccurred(), out)
	By("every image of the release was pulled from the registry, by digest where the chart was given one")
	expectPulledFromRegistry(map[string]bool{managerImage: true, agentImage: true, sriovdpImage: true})
	apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + testNS + "\n")
	Eventually(func() error {
		_, err := kubectl(nil, "get", "serviceaccount", "default", "-n", testNS)
		return err
	}, time.Minute, time.Second).Should(Succeed())
	By("the test namespace is opted in to benchmarks as docs/security.md tells an administrator")
	apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tickstack-benchmarks, namespace: ` + testNS + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + release + `-benchmark-namespace}
subjects: [{kind: ServiceAccount, name: ` + release + `-manager, namespace: ` + releaseNS + `}]
`)
}

var _ = Describe("the whole flow on the local cluster", Ordered, func() {
	// A failed step carries what the operator and the agent said meanwhile, and the node state's
	// events: an intermittent failure on CI is read from the report, not rerun blind.
	AfterEach(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		reportComponentLogs(400, 0)
		reportEvents()
	})

	It("installs the chart and the operator and agent become ready", func() {
		clearCluster() // whatever another spec left
		resetRecorders()
		installRelease()
	})

	It("holds every reboot slot at the API server", func() {
		apply(holdManifest)
		// The policy is enforced a moment after it is created: probe it with a dry run.
		probe := `{"apiVersion":"tickstack.io/v1alpha1","kind":"LatencyNodeState","metadata":{"name":"tse2e-probe"},
"spec":{"nodeName":"tse2e-probe","profile":{"name":"tse2e"},"rebootGranted":true}}`
		Eventually(func() string {
			out, _ := kubectl([]byte(probe), "create", "--dry-run=server", "-f", "-")
			return out
		}, 2*time.Minute, 2*time.Second).Should(ContainSubstring("must never reboot"))
	})

	It("applies a profile isolating CPU 1, though the agent is killed in the middle: runtime settings in effect, kernel arguments pending a reboot that never happens", func() {
		out, err := kubectl(nil, "label", "node", nodeName, roleLabel+"="+roleValue, "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)
		// The agent dies (SIGKILL) after the first value it writes; the restarted one must finish from
		// its journal, and the restore at the end must still bring back the values from before.
		killed := killAgentAt("mid-apply")
		apply(profile(true))
		killed()

		var lns *nodeState
		Eventually(func(g Gomega) {
			var err error
			lns, err = getNodeState()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(lns.Spec.Profile.Name).To(Equal(profileName))
			g.Expect(lns.Tuning).NotTo(BeNil(), "no desired tuning (spec.tuning, or status.tuning on a node its agent resolves)")
			g.Expect(lns.Status.ObservedGeneration).To(Equal(lns.Metadata.Generation))
			g.Expect(lns.cond("RebootRequired")).To(And(
				HaveField("Status", "True"), HaveField("Reason", "RebootRequested")))
		}, 5*time.Minute, 2*time.Second).Should(Succeed())

		By("every runtime setting shows its observed value, in sync, and the host has it")
		for k, v := range wantSysctls {
			desired, observed, state, ok := lns.setting("sysctl/" + k)
			Expect(ok).To(BeTrue(), "status.settings lacks sysctl/%s", k)
			Expect([]string{desired, observed, state}).To(Equal([]string{v, v, "InSync"}), "sysctl/%s", k)
			Expect(readHost("/proc/sys/"+strings.ReplaceAll(k, ".", "/"))).To(Equal(v), "the host's %s", k)
		}
		_, observed, state, ok := lns.setting("thp/enabled")
		Expect(ok).To(BeTrue())
		Expect(state).To(Equal("InSync"))
		Expect(observed).To(Equal("never"))
		Expect(readHost("/sys/kernel/mm/transparent_hugepage/enabled")).To(ContainSubstring("[never]"))
		for _, x := range lns.Status.Settings {
			if !strings.HasPrefix(x.Name, "kernel/") {
				Expect(x.State).To(BeElementOf("InSync", "Unsupported"), "setting %s: %+v", x.Name, x)
			}
		}

		By("the kernel arguments are listed as pending, and Applied says why it is not True")
		Expect(lns.Tuning.KernelArgs).To(ContainElements("isolcpus=managed_irq,1", "nohz_full=1", "rcu_nocbs=1", "irqaffinity=0"))
		for _, arg := range lns.Tuning.KernelArgs {
			_, _, state, ok := lns.setting("kernel/" + arg)
			Expect(ok).To(BeTrue(), "status.settings lacks kernel/%s", arg)
			Expect(state).To(Equal("PendingReboot"), "kernel/%s", arg)
			Expect(lns.cond("RebootRequired").Message).To(ContainSubstring(arg))
		}
		Expect(lns.cond("Applied")).To(And(HaveField("Status", "False"), HaveField("Reason", "PendingReboot")))
		Expect(lns.cond("Degraded").Status).To(Equal("False"), "%+v", lns.cond("Degraded"))
		Expect(lns.Status.Reboot).NotTo(BeNil())
		Expect(lns.Status.Reboot.Phase).To(Equal("Requested"))

		By("the drop-in went to the scratch directory, the real boot configuration is untouched")
		dropIn := filepath.Join(scratchDir, "grub.d", "99-tickstack.cfg")
		b, err := os.ReadFile(dropIn)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(ContainSubstring("isolcpus=managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"))
		Expect(recorded("grub-updates")).To(Equal(1), "the GRUB update command ran once for one change")
		Expect(readHost("/proc/cmdline")).To(Equal(snapshot["/proc/cmdline"]))

		By("no reboot: the slot is held, the node stays schedulable, the recorder never ran")
		Consistently(func(g Gomega) {
			lns, err := getNodeState()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(lns.Spec.RebootGranted).To(BeFalse())
			g.Expect(lns.Status.Reboot.Phase).To(Equal("Requested"))
			g.Expect(recorded("reboots")).To(BeZero())
			g.Expect(recorded("grub-updates")).To(Equal(1))
			g.Expect(getNode(g).Spec.Unschedulable).To(BeFalse())
		}, 25*time.Second, 5*time.Second).Should(Succeed())
		out, _ = kubectl(nil, "get", "events", "-A", "--field-selector", "reason=RebootRequested,involvedObject.uid="+lns.Metadata.UID, "-o", "name")
		Expect(strings.Fields(out)).To(HaveLen(1), "one reboot requested for one change:\n%s", out)
		// Not Applied: the operator must not offer the node to latency pods.
		Expect(nodeLabels()).NotTo(HaveKey("tickstack.io/profile"))
	})

	It("takes the kernel arguments back without a reboot: the node becomes Applied and labelled", func() {
		apply(profile(false))
		Eventually(func(g Gomega) {
			lns := appliedState(g)
			g.Expect(lns.cond("RebootRequired")).To(HaveField("Status", "False"))
			g.Expect(lns.Status.Reboot).To(BeNil())
			g.Expect(nodeLabels()).To(HaveKeyWithValue("tickstack.io/profile", profileName))
		}, 5*time.Minute, 2*time.Second).Should(Succeed())
		By("node-feature-discovery labels the node from the agent's NodeFeature and the operator's NodeFeatureRule")
		Eventually(func(g Gomega) {
			var nf struct {
				Spec struct {
					Features struct {
						Attributes map[string]struct {
							Elements map[string]string `json:"elements"`
						} `json:"attributes"`
					} `json:"features"`
				} `json:"spec"`
			}
			g.Expect(getJSON(&nf, "nodefeatures.nfd.k8s-sigs.io", "tickstack-"+nodeName, "-n", releaseNS)).To(Succeed())
			g.Expect(nf.Spec.Features.Attributes["tickstack.tuning"].Elements).To(Equal(map[string]string{"applied": "true", "profile": profileName}))
			var rule struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			g.Expect(getJSON(&rule, "nodefeaturerules.nfd.k8s-sigs.io", "tickstack")).To(Succeed())
			// Put on the node by the real nfd-master (hack/local-cluster runs it), not by tickstack.
			g.Expect(nodeLabels()).To(HaveKeyWithValue("feature.node.kubernetes.io/tickstack-tuning.applied", "true"))
		}, 2*time.Minute, 2*time.Second).Should(Succeed())
		Expect(filepath.Join(scratchDir, "grub.d", "99-tickstack.cfg")).NotTo(BeAnExistingFile())
		Expect(recorded("reboots")).To(BeZero())
		for k, v := range wantSysctls {
			Expect(readHost("/proc/sys/"+strings.ReplaceAll(k, ".", "/"))).To(Equal(v), "the host's %s", k)
		}
	})

	It("refuses the agent's token an exec into a running pod, at the API server and at the kubelet; the agent reads its kubelet's configuration from configz", agentTokenSteps)

	It("runs the SR-IOV device plugin on the configuration the operator renders: the pool accepted, 0 VFs on this VM in kubectl get lns, one restart per pool change; a profile selects the node by an operator-rendered NFD label", devicePluginSteps)

	It("owns the kubelet's settings: a kubelet section with cpu.reserved 1 restarts the kubelet in its slot, configz and a Guaranteed pod show CPU 1 reserved; removing the section puts the kubelet back", func() {
		configz := func(g Gomega) map[string]any {
			out, err := kubectl(nil, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/configz")
			g.Expect(err).NotTo(HaveOccurred(), out)
			var doc struct {
				KubeletConfig map[string]any `json:"kubeletconfig"`
			}
			g.Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
			return doc.KubeletConfig
		}
		env, err := run(time.Minute, nil, "hack/local-cluster", "env")
		Expect(err).NotTo(HaveOccurred(), env)
		clusterDir := regexp.MustCompile(`(?m)^export TICKSTACK_CLUSTER_DIR=(\S+)$`).FindStringSubmatch(env)[1]
		dropIn := filepath.Join(clusterDir, "etc", "kubelet.conf.d", "50-tickstack.conf")
		// The main file's values: what the kubelet must come back to.
		Eventually(func(g Gomega) {
			c := configz(g)
			g.Expect(c).To(HaveKeyWithValue("reservedSystemCPUs", "0"))
			g.Expect(c).To(HaveKeyWithValue("memoryManagerPolicy", "None"))
		}, time.Minute, 2*time.Second).Should(Succeed())
		Expect(dropIn).NotTo(BeAnExistingFile())

		// A Guaranteed pod outside the profile: the kubelet's static CPU manager pins it.
		apply(fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: pinned, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: pinned}}
  template:
    metadata: {labels: {app: pinned}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
%s
`, testNS, benchContainer("      ", "pinned", "[sleep, infinity]", `{cpu: "1", memory: 32Mi}`)))
		pinnedCPUs := func(g Gomega) string {
			out, err := kubectl(nil, "exec", "-n", testNS, "deploy/pinned", "--", "/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status")
			g.Expect(err).NotTo(HaveOccurred(), out)
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "Cpus_allowed_list:"))
		}
		Eventually(pinnedCPUs, 3*time.Minute, 2*time.Second).Should(Equal("1"))
		defer func() {
			_, _ = kubectl(nil, "delete", "deployment", "pinned", "-n", testNS, "--ignore-not-found", "--wait=false")
		}()

		withKubelet := strings.Replace(profile(false), `reserved: "0"`, `reserved: "1"`, 1) + "  kubelet: {topologyManagerPolicy: single-numa-node, systemReservedMemory: 512Mi}\n"
		// held: the node asks for its slot and nothing starts.
		held := func(why string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				lns, err := getNodeState()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(lns.cond("RebootRequired")).To(HaveField("Reason", "KubeletRestartRequired"))
			}, 2*time.Minute, 2*time.Second).Should(Succeed())
			Consistently(func(g Gomega) {
				lns, err := getNodeState()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(lns.Spec.RebootGranted).To(BeFalse(), "granted %s", why)
				g.Expect(configz(g)).To(HaveKeyWithValue("reservedSystemCPUs", "0"))
			}, 20*time.Second, 2*time.Second).Should(Succeed())
			Expect(dropIn).NotTo(BeAnExistingFile())
		}
		rollout := func(extra string) string {
			return strings.Replace(withKubelet, "  rollout:\n", "  rollout:\n"+extra, 1)
		}

		By("a paused rollout starts nothing")
		apply(rollout("    paused: true\n"))
		held("while the rollout is paused")

		By("a maintenance window closed now delays the restart")
		now := time.Now().UTC()
		window := func(from, to time.Time) string {
			return fmt.Sprintf("    windows: [{days: [Mon, Tue, Wed, Thu, Fri, Sat, Sun], start: %q, end: %q, timeZone: UTC}]\n", from.Format("15:04"), to.Format("15:04"))
		}
		apply(rollout(window(now.Add(6*time.Hour), now.Add(7*time.Hour))))
		held("outside the maintenance window")
		var prof struct {
			Status struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		}
		Expect(getJSON(&prof, "latencyprofile", profileName)).To(Succeed())
		Expect(fmt.Sprint(prof.Status.Conditions)).To(ContainSubstring("window"), "the profile says why the rollout waits")

		By("the window open: the kubelet restarts in the node's slot")
		apply(rollout(window(now.Add(-time.Hour), now.Add(2*time.Hour))))
		Eventually(func(g Gomega) {
			lns := appliedState(g)
			g.Expect(lns.cond("RebootRequired")).To(HaveField("Status", "False"))
			g.Expect(lns.Status.Reboot).To(BeNil())
			c := configz(g)
			g.Expect(c).To(HaveKeyWithValue("reservedSystemCPUs", "1"))
			g.Expect(c).To(HaveKeyWithValue("cpuManagerPolicy", "static"))
			g.Expect(c).To(HaveKeyWithValue("memoryManagerPolicy", "Static"))
			g.Expect(c).To(HaveKeyWithValue("topologyManagerPolicy", "single-numa-node"))
			g.Expect(getNode(g).Spec.Unschedulable).To(BeFalse())
		}, 8*time.Minute, 3*time.Second).Should(Succeed())
		Expect(dropIn).To(BeAnExistingFile())
		lns, err := getNodeState()
		Expect(err).NotTo(HaveOccurred())
		for _, reason := range []string{"KubeletRestartRequested", "Draining", "KubeletRestarted", "KubeletVerified"} {
			out, _ := kubectl(nil, "get", "events", "-A", "--field-selector", "reason="+reason+",involvedObject.uid="+lns.Metadata.UID, "-o", "name")
			if len(strings.Fields(out)) != 1 {
				// What the node state went through, for the failure message.
				all, _ := kubectl(nil, "get", "events", "-A", "--field-selector", "involvedObject.uid="+lns.Metadata.UID,
					"--sort-by", ".metadata.creationTimestamp", "-o", "custom-columns=TIME:.metadata.creationTimestamp,TYPE:.type,REASON:.reason,MESSAGE:.message")
				AddReportEntry("node state events", all)
			}
			Expect(strings.Fields(out)).To(HaveLen(1), "one %s event for one kubelet change:\n%s", reason, out)
		}
		Expect(recorded("reboots")).To(BeZero(), "a kubelet change never reboots")
		// The Guaranteed pod was drained and came back on the CPU that is no longer reserved.
		Eventually(pinnedCPUs, 3*time.Minute, 2*time.Second).Should(Equal("0"))

		By("the kubelet section removed: the drop-in goes and the kubelet runs with its main file again")
		operatorBack()
		apply(profile(false))
		Eventually(func(g Gomega) {
			lns := appliedState(g)
			g.Expect(lns.Status.Reboot).To(BeNil())
			c := configz(g)
			g.Expect(c).To(HaveKeyWithValue("reservedSystemCPUs", "0"))
			g.Expect(c).To(HaveKeyWithValue("memoryManagerPolicy", "None"))
		}, 8*time.Minute, 3*time.Second).Should(Succeed())
		Expect(dropIn).NotTo(BeAnExistingFile())
		Eventually(pinnedCPUs, 3*time.Minute, 2*time.Second).Should(Equal("1"))
		Expect(recorded("reboots")).To(BeZero())
		operatorBack()
	})

	It("boots before pods: after an unplanned restart the boot unit puts the tuning back before the kubelet, and no profile pod runs until the node is Applied for the running boot and the taint is gone", func() {
		unitFile := filepath.Join(scratchDir, "systemd", "tickstack-boot.service")
		Eventually(unitFile, time.Minute, time.Second).Should(BeAnExistingFile())
		unit, err := os.ReadFile(unitFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(unit)).To(ContainSubstring("Before=kubelet.service"))
		for _, w := range []string{"kubelet.service.wants", "multi-user.target.wants"} {
			Expect(os.Readlink(filepath.Join(scratchDir, "systemd", w, "tickstack-boot.service"))).To(Equal("../tickstack-boot.service"))
		}
		execStart := regexp.MustCompile(`(?m)^ExecStart=(.+)$`).FindStringSubmatch(string(unit))
		Expect(execStart).NotTo(BeNil(), "no ExecStart in\n%s", unit)
		Expect(filepath.Join(stateDirHost, "boot", "desired.json")).To(BeAnExistingFile())
		bootID := readHost("/proc/sys/kernel/random/boot_id")
		lns, err := getNodeState()
		Expect(err).NotTo(HaveOccurred())
		Expect(lns.Status.AppliedBootID).To(Equal(bootID))

		By("the unplanned restart: kubelet and agent stopped, the host's defaults back, the node marked as booted anew")
		out, err := run(time.Minute, nil, "hack/local-cluster", "kubelet-stop")
		Expect(err).NotTo(HaveOccurred(), out)
		kubeletStarted := false
		defer func() {
			if !kubeletStarted {
				_, _ = run(time.Minute, nil, "hack/local-cluster", "kubelet-start")
			}
		}()
		out, err = run(time.Minute, nil, "pkill", "-KILL", "-f", "^/usr/local/bin/agent ")
		Expect(err).NotTo(HaveOccurred(), "killing the agent: %s", out)
		for k := range wantSysctls {
			p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
			Expect(os.WriteFile(p, []byte(snapshot[p]), 0o644)).To(Succeed())
			Expect(readHost(p)).To(Equal(snapshot[p]))
		}
		// What the agent finds after a reboot: the tuning Applied under another boot. The taint
		// is on as the agent puts it on at a new boot (and as the kubelet registers it for a node
		// that joins): this test cannot reboot, so it sets both.
		_, err = kubectl([]byte(`{"status":{"appliedBootID":"00000000-0000-4000-8000-0000000e2eb0"}}`), "patch", "latencynodestate", nodeName, "--subresource=status", "--type=merge", "--patch-file=/dev/stdin")
		Expect(err).NotTo(HaveOccurred())
		out, err = kubectl(nil, "taint", "node", nodeName, "tickstack.io/tuning-pending:NoSchedule", "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)

		By("the boot unit, before the kubelet")
		argv := strings.Fields(execStart[1])
		out, err = run(2*time.Minute, nil, argv[0], argv[1:]...)
		Expect(err).NotTo(HaveOccurred(), "the boot unit's %s:\n%s", execStart[1], out)
		Expect(out).To(ContainSubstring("settings written"))
		for k, v := range wantSysctls {
			Expect(readHost("/proc/sys/"+strings.ReplaceAll(k, ".", "/"))).To(Equal(v), "%s after the boot unit, before the kubelet", k)
		}

		By("a latency pod waiting, then the kubelet")
		// Owned by a ReplicaSet, as latency pods are: a kubelet that has just started may refuse a
		// pod the scheduler bound a moment after the node's labels changed ("Predicate
		// NodeAffinity failed": its node watch lags its pod watch), and only a controller replaces
		// such a Failed pod. Every pod of it is checked.
		apply(fmt.Sprintf(`
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: early
  namespace: %[1]s
spec:
  replicas: 1
  selector: {matchLabels: {app: early}}
  template:
    metadata:
      labels: {app: early, tickstack.io/profile: %[2]s}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: early
        image: %[3]s
        imagePullPolicy: IfNotPresent
        command: [sleep, infinity]
        resources:
          requests: {cpu: "1", memory: 32Mi}
          limits: {cpu: "1", memory: 32Mi}
`, testNS, profileName, benchImage))
		defer func() {
			_, _ = kubectl(nil, "delete", "replicaset", "early", "-n", testNS, "--ignore-not-found", "--wait=false")
		}()
		out, err = run(time.Minute, nil, "hack/local-cluster", "kubelet-start")
		Expect(err).NotTo(HaveOccurred(), out)
		kubeletStarted = true
		// Sampled every second until the pod runs: it never runs while the taint is on or before
		// the node state says Applied for this boot.
		Eventually(func(g Gomega) {
			out, _ := kubectl(nil, "get", "pods", "-n", testNS, "-l", "app=early", "-o", "jsonpath={.items[*].status.phase}")
			phase := "none"
			if strings.Contains(" "+out+" ", " Running ") {
				phase = "Running"
			}
			tainted := false
			for _, t := range getNode(g).Spec.Taints {
				tainted = tainted || t.Key == "tickstack.io/tuning-pending"
			}
			lns, err := getNodeState()
			g.Expect(err).NotTo(HaveOccurred())
			if phase == "Running" {
				Expect(tainted).To(BeFalse(), "the latency pod runs on a node with the tuning-pending taint")
				Expect(lns.Status.AppliedBootID).To(Equal(bootID), "the latency pod runs before the node state is Applied for this boot")
				Expect(lns.cond("Applied")).To(HaveField("Status", "True"))
			}
			g.Expect(phase).To(Equal("Running"))
			g.Expect(tainted).To(BeFalse())
		}, 4*time.Minute, time.Second).Should(Succeed())
		for k, v := range wantSysctls {
			Expect(readHost("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))).To(Equal(v))
		}
		Expect(recorded("reboots")).To(BeZero())
		_, _ = kubectl(nil, "delete", "replicaset", "early", "-n", testNS, "--wait=true", "--timeout=60s")
		_, _ = kubectl(nil, "wait", "--for=delete", "pods", "-l", "app=early", "-n", testNS, "--timeout=60s")
	})

	It("admits a latency pod: the exclusive CPU, the secondary interface, the bypass stack", func() {
		apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: trader
  namespace: %s
  labels: {tickstack.io/profile: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
%s
`, testNS, profileName, benchContainer("  ", "trader", "[sleep, infinity]", `{cpu: "1", memory: 64Mi}`)))
		Eventually(func(g Gomega) {
			out, err := kubectl(nil, "get", "pod", "trader", "-n", testNS, "-o", "jsonpath={.status.phase}")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal("Running"))
		}, 3*time.Minute, 2*time.Second).Should(Succeed())
		p, err := podJSON("trader")
		Expect(err).NotTo(HaveOccurred())
		meta := p["metadata"].(map[string]any)
		ann := meta["annotations"].(map[string]any)
		Expect(ann).To(HaveKeyWithValue("tickstack.io/mutated", ContainSubstring(profileName)))
		Expect(ann).To(HaveKeyWithValue("k8s.v1.cni.cncf.io/networks", ContainSubstring(testNS+"/"+profileName+"-net2")))

		exec := func(script string) string {
			GinkgoHelper()
			out, err := kubectl(nil, "exec", "-n", testNS, "trader", "-c", "trader", "--", "/bin/sh", "-c", script)
			Expect(err).NotTo(HaveOccurred(), out)
			return strings.TrimSpace(out)
		}
		By("CPU 1 alone, from the static CPU manager")
		Expect(exec("grep Cpus_allowed_list /proc/self/status")).To(MatchRegexp(`Cpus_allowed_list:\s+1$`))

		By("the secondary interface: in network-status and inside the pod")
		var status []struct {
			Name      string   `json:"name"`
			Interface string   `json:"interface"`
			IPs       []string `json:"ips"`
		}
		// Multus writes it while it plumbs the pod; without it the pod ran on the pod network alone.
		netStatus, _ := ann["k8s.v1.cni.cncf.io/network-status"].(string)
		Expect(netStatus).NotTo(BeEmpty(), "Multus did not plumb the pod (no network-status annotation): %v", ann)
		Expect(json.Unmarshal([]byte(netStatus), &status)).To(Succeed())
		var ifname, ip string
		for _, s := range status {
			if s.Name == testNS+"/"+profileName+"-net2" {
				ifname = s.Interface
				Expect(s.IPs).NotTo(BeEmpty())
				ip = s.IPs[0]
			}
		}
		Expect(ifname).NotTo(BeEmpty(), "network-status has no entry for the profile's network: %v", status)
		Expect(ip).To(HavePrefix(net2CIDR))
		Expect(exec("ip -o -4 addr show dev " + ifname)).To(ContainSubstring(ip + "/24"))

		By("the bypass stack: preloaded, the library in place")
		Expect(exec(`echo "$LD_PRELOAD"`)).To(Equal(libInPod))
		Expect(exec("test -s " + libInPod + " && echo present")).To(Equal("present"))

		By("no capability at all, no escalation, the node daemon's socket from the device plugin, read-only")
		// tickstack-xdpd makes the pod's AF_XDP sockets from its UMEM memfds: every capability is dropped.
		Expect(exec("grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status")).To(MatchRegexp(`^CapPrm:\s+0000000000000000\nCapEff:\s+0000000000000000\nCapBnd:\s+0000000000000000$`))
		Expect(exec("grep NoNewPrivs /proc/self/status")).To(MatchRegexp(`NoNewPrivs:\s+1$`))
		Expect(exec(`echo "$TICKSTACK_XDPD_SOCKET $TICKSTACK_REQUIRE"`)).To(Equal("/run/tickstack/xdp.sock 1"))
		Expect(exec("ls -A /run/tickstack; test -S /run/tickstack/xdp.sock && echo socket")).To(Equal("xdp.sock\nsocket"))
		// read-only: the pod cannot swap its socket for a link before the daemon binds it again
		Expect(exec("ln -s /etc/hostname /run/tickstack/probe 2>&1 || true")).To(ContainSubstring("Read-only file system"))
		uid := meta["uid"].(string)
		Eventually(func() (string, error) {
			return kubectl(nil, "exec", "-n", releaseNS, "ds/"+release+"-xdpd", "--",
				"/opt/tickstack/dataplane/tickstack-xdpd", "ctl", "status")
		}, time.Minute, 2*time.Second).Should(ContainSubstring(uid+" "+ifname), "tickstack-xdpd plumbed the pod's interface")

		out, err := kubectl(nil, "delete", "pod", "trader", "-n", testNS, "--wait=true", "--timeout=120s")
		Expect(err).NotTo(HaveOccurred(), out)
		By("the pod's plumbing goes with it (the CNI DEL)")
		Eventually(func() (string, error) {
			return kubectl(nil, "exec", "-n", releaseNS, "ds/"+release+"-xdpd", "--",
				"/opt/tickstack/dataplane/tickstack-xdpd", "ctl", "status")
		}, time.Minute, 2*time.Second).ShouldNot(ContainSubstring(uid))
	})

	It("keeps unprivileged bypass pods apart: a pod's ping-pong, a killed process's entries, another pod refused", func() {
		// Two bypass pods on the node's shared CPUs (no CPU request): the webhook gives each the
		// profile's network, the daemon's socket of its own pod and no admin capability. pod-b also
		// mounts the node's whole pods directory, as a hostile pod might, to try pod-a's socket.
		for _, name := range []string{"bp-a", "bp-b"} {
			extra := ""
			if name == "bp-b" {
				extra = `
    volumeMounts: [{name: all-pods, mountPath: /xdp-pods}]
  volumes:
  - {name: all-pods, hostPath: {path: /run/tickstack/xdp/pods, type: Directory}}`
			}
			apply(bypassPodManifest(name, "", extra))
		}
		addr := map[string]string{}
		uid := map[string]string{}
		for _, name := range []string{"bp-a", "bp-b"} {
			uid[name] = runningUID(name)
			addr[name] = lat0Addr(name)
		}
		in := func(pod, script string) (string, error) {
			return kubectl(nil, "exec", "-n", testNS, pod, "--", "/bin/sh", "-c", script)
		}
		status := func() (string, error) {
			return kubectl(nil, "exec", "-n", releaseNS, "ds/"+release+"-xdpd", "--",
				"/opt/tickstack/dataplane/tickstack-xdpd", "ctl", "status")
		}
		// entries of a pod's lat0 in the daemon's status: "<uid> lat0 <netns> <clients> <entries>".
		entries := func(pod string) func() (string, error) {
			return func() (string, error) {
				out, err := status()
				m := regexp.MustCompile(`(?m)^` + uid[pod] + ` lat0 \d+ (\d+) (\d+)$`).FindStringSubmatch(out)
				if m == nil {
					return "", fmt.Errorf("no line for %s in %q (%v)", pod, out, err)
				}
				return m[2], err
			}
		}
		startServer := func() {
			out, err := in("bp-a", "nohup sockperf sr -i "+addr["bp-a"]+" -p 11111 >/tmp/sr.log 2>&1 & echo $! > /tmp/sr.pid")
			Expect(err).NotTo(HaveOccurred(), out)
			Eventually(entries("bp-a"), 30*time.Second, 200*time.Millisecond).Should(Equal("1"), "the server's port steered to its XSK")
		}

		By("a ping-pong between the two pods, both ends accelerated (TICKSTACK_REQUIRE=1)")
		startServer()
		pp := "sockperf pp -i " + addr["bp-a"] + " -p 11111 -t 2 -m 64"
		out, err := in("bp-b", pp)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`percentile 50.000 =\s+[0-9.]+`))

		By("a process killed with SIGKILL: its entries go, and its replacement is accelerated")
		out, err = in("bp-a", "kill -9 $(cat /tmp/sr.pid)")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(entries("bp-a"), 10*time.Second, 100*time.Millisecond).Should(Equal("0"))
		startServer()
		out, err = in("bp-b", pp)
		Expect(err).NotTo(HaveOccurred(), out)

		By("a second process in bp-a: its interface has one queue, which the first holds; the daemon arbitrates")
		// macvlan has a single queue. With TICKSTACK_REQUIRE=0 the second server runs on the kernel
		// (said and counted) and answers; with the default TICKSTACK_REQUIRE=1 it fails at bind.
		out, err = in("bp-a", "TICKSTACK_REQUIRE=0 nohup sockperf sr -i "+addr["bp-a"]+" -p 11113 >/tmp/sr2.log 2>&1 &")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() (string, error) { return in("bp-a", "cat /tmp/sr2.log") }, 30*time.Second, time.Second).
			Should(ContainSubstring("not accelerated: Device or resource busy"))
		out, err = in("bp-b", "sockperf pp -i "+addr["bp-a"]+" -p 11113 -t 2 -m 64")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`percentile 50.000 =\s+[0-9.]+`), "the second server, on the kernel, answers")
		out, err = in("bp-b", pp)
		Expect(err).NotTo(HaveOccurred(), "the first server keeps its queue:\n%s", out)
		out, err = in("bp-a", "timeout 20 sockperf sr -i "+addr["bp-a"]+" -p 11114 2>&1; echo status=$?")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).NotTo(ContainSubstring("status=124"), "a third server under TICKSTACK_REQUIRE=1 ran on the kernel")
		Expect(out).To(MatchRegexp(`TICKSTACK_REQUIRE=1: socket fd \d+ \(` + regexp.QuoteMeta(addr["bp-a"]) + `:11114\) cannot be accelerated`))

		By("another pod on bp-a's socket: refused by the daemon, bp-a's entry untouched")
		// A server that started would run until timeout ends it (status 124); refused, its bind fails
		// at once (sockperf then exits 0, so the words are what is checked).
		out, err = in("bp-b", "TICKSTACK_XDPD_SOCKET=/xdp-pods/"+uid["bp-a"]+"/xdp.sock timeout 20 sockperf sr -i "+addr["bp-b"]+" -p 11112 2>&1; echo status=$?")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).NotTo(ContainSubstring("status=124"), "a server on another pod's socket ran")
		// Which request the daemon answers with the refusal depends on timing (hello, or one after it).
		Expect(out).To(MatchRegexp(`tickstack-xdpd refused '[^']+': 13 refused: the caller is not in pod ` + uid["bp-a"] + `'s network namespace`))
		Expect(out).To(MatchRegexp(`TICKSTACK_REQUIRE=1: socket fd \d+ \(` + regexp.QuoteMeta(addr["bp-b"]) + `:11112\) cannot be accelerated`))
		logs, _ := kubectl(nil, "logs", "-n", releaseNS, "ds/"+release+"-xdpd")
		Expect(logs).To(MatchRegexp(`refused pid .* not in the pod's network namespace`))
		Expect(entries("bp-a")()).To(Equal("1"))
		out, err = in("bp-b", pp)
		Expect(err).NotTo(HaveOccurred(), "bp-a still serves after the refusal:\n%s", out)

		out, err = kubectl(nil, "delete", "pod", "bp-a", "bp-b", "-n", testNS, "--wait=true", "--timeout=120s")
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("serves running bypass pods again when tickstack-xdpd restarts: a SIGKILL and a rolling update under a ping-pong lose nothing; sockets and a pod after them are accelerated", xdpdRestartSteps)

	It("runs bypass pods under Pod Security restricted: no capability, no host path, accelerated with the pods' kernel counters flat, the server's counters on the node's metrics endpoint under its pod; a reserved volume name refused", func() {
		// The test namespace enforces "restricted" for this spec (Pod Security judges pods at creation,
		// so the pods of other specs are not affected). The pods say what restricted asks of any pod
		// (a non-root user); the webhook adds the rest (capabilities dropped, no escalation, seccomp
		// RuntimeDefault) and the node daemon's socket as one unit of tickstack.io/xdpd, a read-only
		// mount the kubelet adds from the device plugin: no volume of the pod's points at the host.
		out, err := kubectl(nil, "label", "namespace", testNS, "--overwrite",
			"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest")
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() {
			_, _ = kubectl(nil, "delete", "pod", "rp-a", "rp-b", "-n", testNS, "--ignore-not-found", "--wait=true", "--timeout=120s")
			_, _ = kubectl(nil, "label", "namespace", testNS, "pod-security.kubernetes.io/enforce-", "pod-security.kubernetes.io/enforce-version-")
		})
		nonRoot := `
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532}`

		By("Pod Security enforces restricted here: a pod without a non-root user is refused")
		out, err = kubectl([]byte(bypassPodManifest("rp-root", "", "")), "create", "-f", "-")
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`violates PodSecurity "restricted:latest"`))
		Expect(out).To(ContainSubstring("runAsNonRoot"))

		By("a pod declaring the reserved volume name tickstack-xdp is refused with the webhook's message")
		out, err = kubectl([]byte(bypassPodManifest("rp-reserved", nonRoot, `
    volumeMounts: [{name: tickstack-xdp, mountPath: /run/tickstack}]
  volumes:
  - {name: tickstack-xdp, emptyDir: {}}`)), "create", "-f", "-")
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`admission webhook "mpod.tickstack.io" denied the request: spec.volumes[0].name "tickstack-xdp" is reserved for the volumes the tickstack webhook injects`))

		By("two bypass pods are admitted and run: no host path, the daemon's socket as a device, restricted's security context")
		for _, name := range []string{"rp-a", "rp-b"} {
			apply(bypassPodManifest(name, nonRoot, ""))
		}
		addr := map[string]string{}
		uid := map[string]string{}
		for _, name := range []string{"rp-a", "rp-b"} {
			uid[name] = runningUID(name)
			var p struct {
				Spec struct {
					Volumes    []map[string]any `json:"volumes"`
					Containers []struct {
						Resources struct {
							Limits map[string]string `json:"limits"`
						} `json:"resources"`
						SecurityContext map[string]any `json:"securityContext"`
					} `json:"containers"`
				} `json:"spec"`
			}
			Expect(getJSON(&p, "pod", name, "-n", testNS)).To(Succeed())
			for _, v := range p.Spec.Volumes {
				Expect(v).NotTo(HaveKey("hostPath"), "volume %v of %s", v, name)
			}
			c := p.Spec.Containers[0]
			Expect(c.Resources.Limits).To(HaveKeyWithValue("tickstack.io/xdpd", "1"))
			Expect(c.SecurityContext).To(HaveKeyWithValue("allowPrivilegeEscalation", false))
			Expect(c.SecurityContext).To(HaveKeyWithValue("capabilities", HaveKeyWithValue("drop", ConsistOf("ALL"))))
			Expect(c.SecurityContext).To(HaveKeyWithValue("seccompProfile", HaveKeyWithValue("type", "RuntimeDefault")))
			addr[name] = lat0Addr(name)
		}
		in := inPod
		Expect(in("rp-a", "id -u; ls -A /run/tickstack")).To(Equal("65532\nxdp.sock"))
		entries := func() (string, error) {
			out, err := kubectl(nil, "exec", "-n", releaseNS, "ds/"+release+"-xdpd", "-c", "xdpd", "--",
				"/opt/tickstack/dataplane/tickstack-xdpd", "ctl", "status")
			m := regexp.MustCompile(`(?m)^` + uid["rp-a"] + ` lat0 \d+ \d+ (\d+)$`).FindStringSubmatch(out)
			if m == nil {
				return "", fmt.Errorf("no line for rp-a in %q (%v)", out, err)
			}
			return m[1], err
		}

		By("a server in rp-a: its port steered to its XSK; the process holds no capability")
		in("rp-a", "nohup sockperf sr -i "+addr["rp-a"]+" -p 11121 >/tmp/sr.log 2>&1 & echo $! > /tmp/sr.pid")
		Eventually(entries, 30*time.Second, 200*time.Millisecond).Should(Equal("1"), "the server's port steered to its XSK")
		Expect(in("rp-a", "grep -E '^Cap(Prm|Eff|Bnd):' /proc/$(cat /tmp/sr.pid)/status")).
			To(MatchRegexp(`^CapPrm:\s+0000000000000000\nCapEff:\s+0000000000000000\nCapBnd:\s+0000000000000000$`))

		By("a ping-pong from rp-b: through the XSKs, the pods' kernel UDP and TCP counters flat")
		// /proc/net/snmp is the pod's network namespace's: "Udp: InDatagrams NoPorts InErrors
		// OutDatagrams ..." and "Tcp: ... InSegs OutSegs ..." (names on one line, values on the next).
		snmp := func(pod string) map[string]int64 {
			GinkgoHelper()
			lines := strings.Split(in(pod, "cat /proc/net/snmp"), "\n")
			v := map[string]int64{}
			for i := 0; i+1 < len(lines); i += 2 {
				names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
				for j := 1; j < len(names) && j < len(vals); j++ {
					n, _ := strconv.ParseInt(vals[j], 10, 64)
					v[strings.TrimSuffix(names[0], ":")+names[j]] = n
				}
			}
			Expect(v).To(HaveKey("UdpInDatagrams"))
			return v
		}
		// A flow's first datagrams go through the kernel until the neighbour is resolved (ARP),
		// counted as tx_kernel_neigh: up to 1 ms when the stack's control thread waits for a CPU
		// (docs/dataplane.md). A first short run resolves it, so the run below is all XSK.
		in("rp-b", "sockperf pp -i "+addr["rp-a"]+" -p 11121 -t 1 -m 64 >/dev/null 2>&1")
		before := map[string]map[string]int64{"rp-a": snmp("rp-a"), "rp-b": snmp("rp-b")}
		out = in("rp-b", "TICKSTACK_STATS=1 sockperf pp -i "+addr["rp-a"]+" -p 11121 -t 2 -m 64 2>&1")
		Expect(out).To(MatchRegexp(`percentile 50.000 =\s+[0-9.]+`))
		// the stack's own counters: the client's datagrams went through its XSK on lat0
		received, tx := xskRoundTrips(out)
		Expect(tx).To(BeNumerically(">=", received), out)
		for _, name := range []string{"rp-a", "rp-b"} {
			after := snmp(name)
			for _, k := range []string{"UdpInDatagrams", "UdpOutDatagrams", "TcpInSegs", "TcpOutSegs"} {
				Expect(after[k]-before[name][k]).To(BeNumerically("<=", 20),
					"%s's kernel counted %d %s during %d round trips", name, after[k]-before[name][k], k, received)
			}
		}

		By("the node agent's metrics endpoint shows the server's counters under rp-a's namespace and name")
		expectBypassMetrics("rp-a", "bench", in("rp-a", "cat /tmp/sr.pid"), "lat0", received)

		By("tickstack-dump by kubectl exec in rp-a (no capability) captures a ping-pong both ways; tshark reads it")
		// The webhook copied the tools beside the library; the tool runs as the pod's user and talks
		// to the server through the pod's /dev/shm (docs/dataplane.md, "Seeing inside the bypass").
		in("rp-a", "nohup /opt/tickstack/lib/tickstack-dump -p $(cat /tmp/sr.pid) -w /tmp/cap.pcapng -G 60 "+
			"udp port 11121 >/tmp/dump.log 2>&1 & echo $! > /tmp/dump.pid")
		dumpLog := func() string {
			out, _ := kubectl(nil, "exec", "-n", testNS, "rp-a", "--", "cat", "/tmp/dump.log")
			return out
		}
		Eventually(dumpLog, 30*time.Second, 200*time.Millisecond).Should(ContainSubstring("capturing from 1 process"))
		out = in("rp-b", "sockperf pp -i "+addr["rp-a"]+" -p 11121 -t 1 -m 64 2>&1")
		m := regexp.MustCompile(`\[Total Run\][^\n]*SentMessages=(\d+)`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), out)
		sent, _ := strconv.Atoi(m[1])
		in("rp-a", "kill -INT $(cat /tmp/dump.pid)")
		Eventually(dumpLog, 30*time.Second, 200*time.Millisecond).Should(MatchRegexp(`frames written, \d+ captured by the stack, 0 dropped`))
		pcap, err := kubectl(nil, "exec", "-n", testNS, "rp-a", "--", "cat", "/tmp/cap.pcapng")
		Expect(err).NotTo(HaveOccurred())
		f := filepath.Join(GinkgoT().TempDir(), "rp-a.pcapng")
		Expect(os.WriteFile(f, []byte(pcap), 0o644)).To(Succeed())
		frames := func(filter string) int {
			GinkgoHelper()
			out, err := run(time.Minute, nil, "tshark", "-r", f, "-Y", filter)
			Expect(err).NotTo(HaveOccurred(), "tshark (Debian's; hack/apt-packages.txt) reads the capture: %s", out)
			return len(strings.Split(strings.TrimSpace(out), "\n"))
		}
		// every request the server received and every reply it sent (64-byte payloads: sockperf's
		// warm-up messages are of other sizes), on lat0, as the stack saw them
		Expect(frames("frame.packet_flags_direction == 1 && ip.dst == " + addr["rp-a"] + " && udp.dstport == 11121 && udp.length == 72")).To(Equal(sent))
		Expect(frames("frame.packet_flags_direction == 2 && ip.src == " + addr["rp-a"] + " && udp.srcport == 11121 && udp.length == 72")).To(Equal(sent))
		Expect(frames(`frame.interface_name == "lat0" && udp.length == 72`)).To(Equal(2 * sent))

		By("tickstack-stackdump in rp-a lists the server's socket on its XSK")
		var sd struct {
			Processes []struct {
				Sockets []struct {
					Proto, State, Local string
					Rx                  int64
				} `json:"sockets"`
				Xsks []struct {
					Ifname     string `json:"ifname"`
					UmemFrames int    `json:"umem_frames"`
				} `json:"xsks"`
			} `json:"processes"`
		}
		Expect(json.Unmarshal([]byte(in("rp-a", "/opt/tickstack/lib/tickstack-stackdump -p $(cat /tmp/sr.pid) -o json")), &sd)).To(Succeed())
		Expect(sd.Processes).To(HaveLen(1))
		Expect(sd.Processes[0].Sockets).To(ContainElement(And(
			HaveField("Proto", "udp"), HaveField("State", "ACCELERATED"), HaveField("Local", addr["rp-a"]+":11121"),
			HaveField("Rx", BeNumerically(">=", received+sent)))))
		Expect(sd.Processes[0].Xsks).To(ContainElement(And(HaveField("Ifname", "lat0"), HaveField("UmemFrames", BeNumerically(">", 0)))))
	})

	It("benchmarks the node: kernel and bypass ping-pong and tick-to-trade between two pods over the secondary network, a verdict, the validated label", func() {
		// TwoPods: the runner has the exclusive CPU 1 (ping-pong client, then oslat on it), the
		// reflector runs on the shared CPU 0 with no CPU request (this node's allocatable CPU is 1).
		// The pod webhook gives both the profile's macvlan network (lat0) and the bypass stack; the
		// reflector serves sockperf on lat0's address. tickToTrade at one low rate: the reflector
		// runs the venue (exchange simulator, publisher), the runner the strategy, every tick and
		// order accounted for on both stacks; the profile leaves TCP on the kernel (spec.bypass.tcp
		// Off), so the bypass rows' feed takes the XSK and their orders the kernel. oslat only: cyclictest needs SCHED_FIFO,
		// which this kernel (cgroup v1 with RT group scheduling) refuses in every pod: the kubelet
		// leaves kubepods' cpu.rt_runtime_us at 0.
		manifest := fmt.Sprintf(`
apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata: {name: tse2e, namespace: %s}
spec:
  target: {profile: %s}
  stacks: [kernel, bypass]
  placement: {mode: TwoPods, runnerCPUs: 1, reflectorCPUs: 0}
  suites:
    pingPong: {protocols: [udp], messageSizes: [64, 1024], durationSeconds: 3}
    tickToTrade: {ratesMps: [1000], durationSeconds: 2, orderEvery: 50}
    jitter: {cpus: pod, durationSeconds: 5, tools: [oslat]}
    qualify: {durationSeconds: 1}
  thresholds:
    maxDropped: 0
    latency:
    - {suite: pingPong, statistic: median, max: 2ms}
    - {suite: tickToTrade, statistic: p99, max: 200ms}
    - {suite: jitter, statistic: p99, max: 200us}
  timeoutSeconds: 600
`, testNS, profileName)
		f := filepath.Join(GinkgoT().TempDir(), "bench.yaml")
		Expect(os.WriteFile(f, []byte(manifest), 0o644)).To(Succeed())
		kc, err := run(time.Minute, nil, "hack/local-cluster", "kubeconfig")
		Expect(err).NotTo(HaveOccurred())
		out, err := run(15*time.Minute, nil, "go", "run", "./cmd/tickstack", "--kubeconfig", strings.TrimSpace(kc),
			"bench", "-f", f, "-n", testNS, "--timeout", "12m")
		GinkgoWriter.Println(out)
		if err != nil {
			logs, _ := kubectl(nil, "logs", "-n", testNS, "-l", "tickstack.io/benchmark=tse2e", "--all-containers", "--prefix", "--tail=200")
			pods, _ := kubectl(nil, "get", "pods", "-n", testNS, "-o", "wide")
			events, _ := kubectl(nil, "get", "events", "-n", testNS, "--sort-by=.lastTimestamp")
			Fail(fmt.Sprintf("tickstack bench: %v\n%s\npod logs:\n%s\npods:\n%s\nevents:\n%s", err, out, logs, pods, events))
		}
		type row struct {
			Protocol    string `json:"protocol"`
			MessageSize int    `json:"messageSize"`
			Samples     int64  `json:"samples"`
			MedianNs    int64  `json:"medianNs"`
			Dropped     int64  `json:"dropped"`
		}
		type stats struct {
			Samples  int64 `json:"samples"`
			MinNs    int64 `json:"minNs"`
			MedianNs int64 `json:"medianNs"`
			P99Ns    int64 `json:"p99Ns"`
			MaxNs    int64 `json:"maxNs"`
		}
		type t2tRow struct {
			RateMps        int64    `json:"rateMps"`
			TicksSent      int64    `json:"ticksSent"`
			TicksReceived  int64    `json:"ticksReceived"`
			TicksLost      int64    `json:"ticksLost"`
			Orders         int64    `json:"orders"`
			OrdersUnfilled int64    `json:"ordersUnfilled"`
			ExchangeOrders int64    `json:"exchangeOrders"`
			TickToTrade    stats    `json:"tickToTrade"`
			InApplication  stats    `json:"inApplication"`
			OrderToFill    stats    `json:"orderToFill"`
			Unaccounted    []string `json:"unaccounted"`
			MarketDataPath string   `json:"marketDataPath"`
			OrderPath      string   `json:"orderPath"`
		}
		var b struct {
			Status struct {
				Verdict     string `json:"verdict"`
				NodesPassed int    `json:"nodesPassed"`
				Nodes       []struct {
					Node    string `json:"node"`
					Results struct {
						Path struct {
							ClientAddress    string `json:"clientAddress"`
							ReflectorAddress string `json:"reflectorAddress"`
							Interface        string `json:"interface"`
						} `json:"path"`
						Qualify *struct {
							Verdict string `json:"verdict"`
							Driver  string `json:"driver"`
							Reasons []struct {
								Check   string `json:"check"`
								Verdict string `json:"verdict"`
							} `json:"reasons"`
						} `json:"qualify"`
						Stacks []struct {
							Stack       string `json:"stack"`
							Unavailable string `json:"unavailable"`
							PingPong    struct {
								Rows  []row  `json:"rows"`
								Error string `json:"error"`
							} `json:"pingPong"`
							TickToTrade struct {
								Rows  []t2tRow `json:"rows"`
								Error string   `json:"error"`
							} `json:"tickToTrade"`
						} `json:"stacks"`
					} `json:"results"`
				} `json:"nodes"`
			} `json:"status"`
		}
		Expect(getJSON(&b, "latencybenchmark", "tse2e", "-n", testNS)).To(Succeed())
		Expect(b.Status.Verdict).To(Equal("Passed"))
		Expect(b.Status.NodesPassed).To(Equal(1))
		Expect(b.Status.Nodes).To(HaveLen(1))
		res := b.Status.Nodes[0].Results

		By("the traffic went between the two pods' lat0 interfaces on the profile's network")
		Expect(res.Path.Interface).To(Equal("lat0"))
		Expect(res.Path.ClientAddress).To(HavePrefix(net2CIDR))
		Expect(res.Path.ReflectorAddress).To(HavePrefix(net2CIDR))
		Expect(res.Path.ClientAddress).NotTo(Equal(res.Path.ReflectorAddress))

		By("the qualify suite judged lat0 in the pod: a macvlan, degraded (no zero-copy there), never unsupported")
		Expect(res.Qualify).NotTo(BeNil(), "no qualify report in the results")
		Expect(res.Qualify.Driver).To(Equal("macvlan"))
		Expect(res.Qualify.Verdict).To(Equal("Degraded"), "reasons: %+v", res.Qualify.Reasons)
		for _, r := range res.Qualify.Reasons {
			Expect(r.Verdict).NotTo(Equal("Unsupported"), "qualify check %s", r.Check)
		}

		By("both stacks measured every size, nothing dropped")
		Expect(res.Stacks).To(HaveLen(2))
		for _, st := range res.Stacks {
			Expect(st.Unavailable).To(BeEmpty(), "%s stack", st.Stack)
			Expect(st.PingPong.Error).To(BeEmpty(), "%s stack", st.Stack)
			Expect(st.PingPong.Rows).To(HaveLen(2), "%s stack", st.Stack)
			for _, r := range st.PingPong.Rows {
				Expect(r.Protocol).To(Equal("udp"))
				Expect(r.Samples).To(BeNumerically(">", 100), "%s stack, %d B", st.Stack, r.MessageSize)
				Expect(r.MedianNs).To(BeNumerically(">", 0))
				Expect(r.Dropped).To(BeZero())
			}
		}

		By("tick-to-trade at 1000 msg/s on both stacks: every tick and order accounted for, the path each leg took")
		for _, st := range res.Stacks {
			Expect(st.TickToTrade.Error).To(BeEmpty(), "%s stack", st.Stack)
			Expect(st.TickToTrade.Rows).To(HaveLen(1), "%s stack", st.Stack)
			r := st.TickToTrade.Rows[0]
			Expect(r.RateMps).To(BeEquivalentTo(1000))
			Expect(r.TicksSent).To(BeNumerically("~", 2000, 20), "%s stack", st.Stack)
			Expect(r.Unaccounted).To(BeEmpty(), "%s stack", st.Stack)
			Expect(r.TicksReceived).To(Equal(r.TicksSent), "%s stack", st.Stack)
			Expect(r.TicksLost).To(BeZero())
			Expect(r.Orders).To(Equal(2*(r.TicksSent/50)), "%s stack: a BUY every 50 ticks, each closed by a SELL", st.Stack)
			Expect(r.OrdersUnfilled).To(BeZero())
			Expect(r.ExchangeOrders).To(Equal(r.Orders))
			Expect(r.TickToTrade.Samples).To(Equal(r.TicksSent / 50))
			Expect(r.OrderToFill.Samples).To(Equal(r.Orders))
			Expect(r.TickToTrade.MinNs).To(BeNumerically(">", r.InApplication.MinNs), "%s stack: tick-to-trade spans the strategy's own time", st.Stack)
			Expect(r.TickToTrade.MedianNs).To(BeNumerically("<=", r.TickToTrade.P99Ns))
			want := map[string][2]string{"kernel": {"kernel", "kernel"}, "bypass": {"bypass", "kernel"}}[st.Stack]
			Expect([2]string{r.MarketDataPath, r.OrderPath}).To(Equal(want), "%s stack: market data and order paths", st.Stack)
		}

		By("the results table: the path, both stacks' rows, their comparison, oslat on CPU 1, the checks")
		Expect(out).To(ContainSubstring("path: " + res.Path.ClientAddress + " on lat0 to reflector " + res.Path.ReflectorAddress))
		Expect(out).To(ContainSubstring("pingPong, kernel stack"))
		Expect(out).To(ContainSubstring("pingPong, bypass stack"))
		Expect(out).To(ContainSubstring("kernel vs bypass"))
		Expect(out).To(ContainSubstring("tick-to-trade, kernel stack (us; columns: market data msg/s)"))
		Expect(out).To(ContainSubstring("tick-to-trade, bypass stack (us; columns: market data msg/s)"))
		Expect(out).To(MatchRegexp(`(?m)^BUY\s+[0-9]+\.[0-9]{3}$`))
		Expect(out).To(MatchRegexp(`Passed\s+tickToTrade/bypass/1000msgps/accounted: at 1000 msg/s on bypass every tick is accounted for`))
		Expect(out).To(MatchRegexp(`(?m)^\s*oslat\s+1\s+\d+`))
		Expect(out).To(ContainSubstring("checks of node " + nodeName + ": Passed"))
		Expect(out).To(MatchRegexp(`Passed\s+.*worst p99 [0-9.]+ us at oslat cpu 1 is within 200us`))
		Eventually(nodeLabels, time.Minute, 2*time.Second).Should(HaveKeyWithValue("tickstack.io/validated", profileName))
	})

	It("refuses helm uninstall while the profile tunes the node, before deleting anything", func() {
		out, err := helm(5*time.Minute, "uninstall", release, "-n", releaseNS, "--wait", "--timeout", "3m")
		Expect(err).To(HaveOccurred(), "helm uninstall with a live profile succeeded:\n%s", out)
		Expect(out).To(ContainSubstring("no agent to restore"), "the uninstall guard refused")
		Expect(out).To(MatchRegexp(`(LatencyProfile `+profileName+` still tunes nodes|LatencyNodeState `+nodeName+` \(profile `+profileName+`\) still tunes node)`),
			"helm's refusal names the profile")
		for _, o := range []string{"daemonset/" + release + "-agent", "deployment/" + release + "-manager", "serviceaccount/" + release + "-agent",
			"validatingadmissionpolicy/" + release + "-uninstall-guard-profiles"} {
			_, err := kubectl(nil, "get", "-n", releaseNS, o)
			Expect(err).NotTo(HaveOccurred(), "%s is gone after the refused uninstall", o)
		}
		out, err = kubectl(nil, "get", "configmap", "-n", releaseNS, release+"-uninstall-check", "--ignore-not-found", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(BeEmpty(), "the refused check ConfigMap exists")
		lns, err := getNodeState()
		Expect(err).NotTo(HaveOccurred())
		Expect(lns.cond("Applied").Status).To(Equal("True"))
		Expect(agentRestarts()).To(BeNumerically(">=", 1)) // the agent pod is still the one killed mid-apply
	})

	It("restores the host when the profile is deleted, though the agent is killed in the middle of the restore", func() {
		killed := killAgentAt("mid-restore")
		out, err := kubectl(nil, "delete", "latencyprofile", profileName, "--wait=true", "--timeout=180s")
		Expect(err).NotTo(HaveOccurred(), out)
		killed()
		Eventually(func() string {
			out, _ := kubectl(nil, "get", "latencynodestate", nodeName)
			return out
		}, 2*time.Minute, 2*time.Second).Should(ContainSubstring("NotFound"))
		Expect(hostDiff(snapshot)).To(BeEmpty())
		Expect(nodeLabels()).NotTo(HaveKey("tickstack.io/profile"))
		// The agent withdrew its NodeFeature: nfd-master takes the label off.
		Eventually(nodeLabels, time.Minute, 2*time.Second).ShouldNot(HaveKey("feature.node.kubernetes.io/tickstack-tuning.applied"))
		Expect(recorded("reboots")).To(BeZero())
	})

	It("uninstalls and leaves nothing behind but the kept CRDs", func() {
		out, err := helm(5*time.Minute, "uninstall", release, "-n", releaseNS, "--wait", "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() string {
			out, _ := kubectl(nil, "get", "pods,services,deployments,daemonsets,secrets,configmaps,serviceaccounts,roles,rolebindings",
				"-n", releaseNS, "-l", "app.kubernetes.io/instance="+release, "-o", "name")
			return out
		}, 2*time.Minute, 2*time.Second).Should(BeEmpty())
		Eventually(func() string {
			out, _ := kubectl(nil, "get", "pods", "-n", releaseNS, "-o", "name")
			return out
		}, 2*time.Minute, 2*time.Second).Should(BeEmpty())
		for _, kind := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations", "clusterroles",
			"clusterrolebindings", "validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
			out, err := kubectl(nil, "get", kind, "-l", "app.kubernetes.io/instance="+release, "-o", "name")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(strings.TrimSpace(out)).To(BeEmpty(), "%s of the release left behind", kind)
			out, err = kubectl(nil, "get", kind, "-o", "name")
			Expect(err).NotTo(HaveOccurred(), out)
			for _, n := range strings.Fields(out) {
				if strings.Contains(n, "tickstack") {
					Fail(fmt.Sprintf("%s left behind", n))
				}
			}
		}
		out, err = kubectl(nil, "get", "secrets", "-n", releaseNS, "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).NotTo(ContainSubstring("tickstack"))
		// crds.keep: true keeps the CRDs (and no object of them remains).
		for _, crd := range []string{"latencyprofiles.tickstack.io", "latencynodestates.tickstack.io"} {
			out, err := kubectl(nil, "get", "crd", crd, "-o", "name")
			Expect(err).NotTo(HaveOccurred(), "crds.keep should keep %s: %s", crd, out)
		}
		out, err = kubectl(nil, "get", "latencyprofiles,latencynodestates", "-A", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(BeEmpty())
	})
})

// bypassPodManifest is a bypass pod of the test namespace on the node's
// shared CPUs (the webhook injects the stack), sleeping until deleted;
// podExtra is added to its spec (a security context), extra to its container
// (volume mounts and the pod's volumes).
func bypassPodManifest(name, podExtra, extra string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: {tickstack.io/profile: %s}
  annotations: {tickstack.io/exclusive-cpus: "false"}
spec:
  terminationGracePeriodSeconds: 1%s
  containers:
%s%s
`, name, testNS, profileName, podExtra, benchContainer("  ", "bench", "[sleep, infinity]", "{memory: 128Mi}"), extra)
}

// benchContainer is the YAML list item of a container of the bench image named name that runs
// command (a flow sequence) with resources (a flow mapping) as its requests and its limits, each
// line indented by indent.
func benchContainer(indent, name, command, resources string) string {
	return indent + strings.Join([]string{
		"- name: " + name,
		"  image: " + benchImage,
		"  imagePullPolicy: IfNotPresent",
		"  command: " + command,
		"  resources:",
		"    requests: " + resources,
		"    limits: " + resources,
	}, "\n"+indent)
}

// runningUID waits until pod NAME of testNS runs and returns its UID.
func runningUID(name string) string {
	GinkgoHelper()
	var uid string
	Eventually(func(g Gomega) {
		out, err := kubectl(nil, "get", "pod", name, "-n", testNS, "-o", "jsonpath={.status.phase} {.metadata.uid}")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("Running "))
		uid = strings.Fields(out)[1]
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	return uid
}

// lat0Addr is the IPv4 address of pod NAME's lat0, its interface on the bypass network.
func lat0Addr(name string) string {
	GinkgoHelper()
	out, err := kubectl(nil, "exec", "-n", testNS, name, "--", "ip", "-o", "-4", "addr", "show", "dev", "lat0")
	Expect(err).NotTo(HaveOccurred(), out)
	m := regexp.MustCompile(`inet (\S+)/`).FindStringSubmatch(out)
	Expect(m).NotTo(BeNil(), out)
	return m[1]
}
