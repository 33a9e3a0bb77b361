//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kustomizeDir is config/default with this machine's safety changes (testdata/kustomize).
const kustomizeDir = "test/e2e/testdata/kustomize"

// kustomized renders kustomizeDir into a file for kubectl apply -f and delete -f (the objects in
// kustomize's order), its images this tree's in the cluster's registry (pulled by the node, as for the
// chart) in place of config/'s localhost/tickstack-*:<appVersion>.
func kustomized() (string, error) {
	out, err := kubectl(nil, "kustomize", kustomizeDir)
	if err != nil {
		return "", fmt.Errorf("kubectl kustomize %s: %v\n%s", kustomizeDir, err, out)
	}
	images := regexp.MustCompile(`localhost/tickstack-(manager|agent|bench):[0-9A-Za-z.+-]+`)
	if images.FindString(out) == "" {
		return "", fmt.Errorf("config/default names no localhost/tickstack-* image")
	}
	out = images.ReplaceAllStringFunc(out, func(m string) string {
		return map[string]string{"manager": managerImage, "agent": agentImage, "bench": benchImage}[images.FindStringSubmatch(m)[1]]
	})
	return kustomizedFile, os.WriteFile(kustomizedFile, []byte(out), 0o644)
}

// kustomizedFile is where kustomized writes (removed by the cleanup).
var kustomizedFile = filepath.Join(os.TempDir(), "tse2e-kustomized.yaml")

func mustKustomized() string {
	GinkgoHelper()
	f, err := kustomized()
	Expect(err).NotTo(HaveOccurred())
	return f
}

// guarded are the objects the uninstall guard keeps while a profile lives: with them the node keeps
// its agent, and the agent its RBAC.
var guarded = []string{
	"namespace/" + releaseNS,
	"crd/latencyprofiles.tickstack.io", "crd/latencynodestates.tickstack.io",
	"clusterrole/tickstack-manager", "clusterrole/tickstack-agent",
	"clusterrolebinding/tickstack-agent",
	"-n", releaseNS, "daemonset/tickstack-agent", "deployment/tickstack-manager", "serviceaccount/tickstack-agent",
}

var _ = Describe("kubectl apply -k and delete -k with a profile live", Ordered, func() {
	BeforeAll(func() {
		clearCluster() // whatever another spec left
		DeferCleanup(func() {
			_, _ = kubectl(nil, "delete", "latencyprofile", profileName, "--ignore-not-found", "--wait=true", "--timeout=180s")
			_, _ = kubectl(nil, "wait", "--for=delete", "latencynodestate/"+nodeName, "--timeout=120s")
			_, _ = kubectl(nil, "delete", "-f", mustKustomized(), "--ignore-not-found", "--wait=true", "--timeout=180s")
		})
	})

	It("installs config/default, which tunes the node", func() {
		Expect(os.MkdirAll(filepath.Join(scratchDir, "grub.d"), 0o755)).To(Succeed())
		resetRecorders()
		out, err := kubectl(nil, "apply", "-f", mustKustomized())
		Expect(err).NotTo(HaveOccurred(), "kubectl apply -k:\n%s", out)
		for _, w := range []string{"deployment/tickstack-manager", "daemonset/tickstack-agent"} {
			out, err := kubectl(nil, "rollout", "status", "-n", releaseNS, w, "--timeout=5m")
			Expect(err).NotTo(HaveOccurred(), out)
		}
		out, err = kubectl(nil, "label", "node", nodeName, roleLabel+"="+roleValue, "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)
		// the validating webhook answers once the manager has made its certificate
		Eventually(func() (string, error) {
			return kubectl([]byte(upgradeProfile), "apply", "-f", "-")
		}, 3*time.Minute, 2*time.Second).Should(ContainSubstring("latencyprofile.tickstack.io/" + profileName))
		Eventually(func(g Gomega) {
			appliedState(g)
		}, 5*time.Minute, 2*time.Second).Should(Succeed())
		for k, v := range wantSysctls {
			Expect(readHost("/proc/sys/"+strings.ReplaceAll(k, ".", "/"))).To(Equal(v), "the host's %s", k)
		}
	})

	It("refuses kubectl delete -k while the profile tunes the node: the agent, the manager, their RBAC, the CRDs and the namespace stay", func() {
		out, err := kubectl(nil, "delete", "-f", mustKustomized(), "--wait=false")
		Expect(err).To(HaveOccurred(), "kubectl delete -k with a live profile succeeded:\n%s", out)
		// either policy may answer first: the profile's, or its node state's (which names the profile too)
		Expect(out).To(ContainSubstring("no agent to restore"), "the uninstall guard refused")
		Expect(out).To(MatchRegexp(`(LatencyProfile `+profileName+` still tunes nodes|LatencyNodeState `+nodeName+` \(profile `+profileName+`\) still tunes node)`),
			"the refusal names the profile")
		out, err = kubectl(nil, append([]string{"get", "-o", "name"}, guarded...)...)
		Expect(err).NotTo(HaveOccurred(), "a guarded object is gone:\n%s", out)
		phase, err := kubectl(nil, "get", "namespace", releaseNS, "-o", "jsonpath={.status.phase}")
		Expect(err).NotTo(HaveOccurred(), phase)
		Expect(phase).To(Equal("Active"))
		out, err = kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/tickstack-agent", "--timeout=1m")
		Expect(err).NotTo(HaveOccurred(), "the agent no longer runs:\n%s", out)
		lns, err := getNodeState()
		Expect(err).NotTo(HaveOccurred())
		Expect(lns.cond("Applied").Status).To(Equal("True"))

		By("the manager puts back the policies delete -k removed (none can guard another), so a second delete -k is refused too")
		Eventually(func() error {
			_, err := kubectl(nil, "get", "validatingadmissionpolicy,validatingadmissionpolicybinding",
				"tickstack-uninstall-guard-profiles", "tickstack-uninstall-guard-node-states", "tickstack-agent-own-node")
			return err
		}, time.Minute, time.Second).Should(Succeed())
		// the API server enforces a policy a moment after it is created: probe with a dry run
		Eventually(func() string {
			out, _ := kubectl(nil, "delete", "--dry-run=server", "-n", releaseNS, "daemonset/tickstack-agent")
			return out
		}, time.Minute, time.Second).Should(ContainSubstring("no agent to restore"))
		out, err = kubectl(nil, "delete", "-f", mustKustomized(), "--wait=false")
		Expect(err).To(HaveOccurred(), "the second kubectl delete -k succeeded:\n%s", out)
		Expect(out).To(ContainSubstring("no agent to restore"))
		out, err = kubectl(nil, append([]string{"get", "-o", "name"}, guarded...)...)
		Expect(err).NotTo(HaveOccurred(), "a guarded object is gone after the second delete -k:\n%s", out)
	})

	It("restores the node when the profile goes, and then kubectl delete -k removes everything", func() {
		out, err := kubectl(nil, "delete", "latencyprofile", profileName, "--wait=true", "--timeout=180s")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() string {
			out, _ := kubectl(nil, "get", "latencynodestate", nodeName)
			return out
		}, 2*time.Minute, 2*time.Second).Should(ContainSubstring("NotFound"))
		Expect(hostDiff(snapshot)).To(BeEmpty())
		out, err = kubectl(nil, "delete", "-f", mustKustomized(), "--ignore-not-found", "--wait=true", "--timeout=180s")
		Expect(err).NotTo(HaveOccurred(), "kubectl delete -k with no profile left:\n%s", out)
		Eventually(func() string {
			out, _ := kubectl(nil, append([]string{"get", "-o", "name", "--ignore-not-found"}, guarded...)...)
			return strings.TrimSpace(out)
		}, 3*time.Minute, 2*time.Second).Should(BeEmpty())
	})
})
