//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// vfProfile hands out VFs from a pool on a PF this VM does not have (so the device plugin finds
// none), and selects nodes by the label the operator's NodeFeatureRule has node-feature-discovery
// put on nodes with a network device of the vendor its NIC group names (this VM's virtio NIC,
// vendor 1af4, class 0200). The main profile outranks it on this node: it matches and owns none.
func vfProfile(resource string, sysctl string) string {
	return `
apiVersion: tickstack.io/v1alpha1
kind: LatencyProfile
metadata:
  name: ` + vfProfileName + `
spec:
  nodeSelector:
    matchLabels: {feature.node.kubernetes.io/tickstack-nic-vendor.1af4: "true"}
  sysctls:
    vm.stat_interval: "` + sysctl + `"
  nics:
  - name: vf
    selector: {vendor: "1af4", pfNames: [tse2e-nopf]}
    numVfs: 4
    resourceName: ` + resource + `
`
}

const vfProfileName = "tse2e-vfs"

// devicePlugin is the device plugin DaemonSet once its rollout settled: one pod, up to date.
type devicePlugin struct {
	generation int64
	// stamp is the configuration hash the operator put on the pod template.
	stamp    string
	pod, uid string
	restarts int
	log      string
}

func devicePluginSettled() devicePlugin {
	GinkgoHelper()
	var dp devicePlugin
	Eventually(func(g Gomega) {
		var ds struct {
			Metadata struct {
				Generation int64 `json:"generation"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Metadata struct {
						Annotations map[string]string `json:"annotations"`
					} `json:"metadata"`
				} `json:"template"`
			} `json:"spec"`
			Status struct {
				ObservedGeneration     int64 `json:"observedGeneration"`
				DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
				UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`
				NumberAvailable        int32 `json:"numberAvailable"`
			} `json:"status"`
		}
		g.Expect(getJSON(&ds, "daemonset", release+"-sriov-device-plugin", "-n", releaseNS)).To(Succeed())
		g.Expect(ds.Status.ObservedGeneration).To(Equal(ds.Metadata.Generation))
		g.Expect(ds.Status.DesiredNumberScheduled).To(Equal(int32(1)))
		g.Expect(ds.Status.UpdatedNumberScheduled).To(Equal(int32(1)))
		g.Expect(ds.Status.NumberAvailable).To(Equal(int32(1)))
		var pods struct {
			Items []struct {
				Metadata struct {
					Name              string  `json:"name"`
					UID               string  `json:"uid"`
					DeletionTimestamp *string `json:"deletionTimestamp"`
				} `json:"metadata"`
				Status struct {
					Phase             string `json:"phase"`
					ContainerStatuses []struct {
						RestartCount int `json:"restartCount"`
					} `json:"containerStatuses"`
				} `json:"status"`
			} `json:"items"`
		}
		g.Expect(getJSON(&pods, "pods", "-n", releaseNS, "-l", "app.kubernetes.io/component=sriov-device-plugin")).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "the old pod gone")
		p := pods.Items[0]
		g.Expect(p.Metadata.DeletionTimestamp).To(BeNil())
		g.Expect(p.Status.Phase).To(Equal("Running"))
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		log, err := kubectl(nil, "logs", "-n", releaseNS, "pod/"+p.Metadata.Name)
		g.Expect(err).NotTo(HaveOccurred(), log)
		// Started far enough to say what it read.
		g.Expect(log).To(Or(ContainSubstring("Listening for term signals"), ContainSubstring("waiting for the operator")))
		dp = devicePlugin{generation: ds.Metadata.Generation, stamp: ds.Spec.Template.Metadata.Annotations["tickstack.io/device-plugin-config"],
			pod: p.Metadata.Name, uid: p.Metadata.UID, restarts: p.Status.ContainerStatuses[0].RestartCount, log: log}
	}, 4*time.Minute, 2*time.Second).Should(Succeed())
	return dp
}

// renderedConfig is the device plugin configuration the operator rendered, and its hash as the
// operator stamps it.
func renderedConfig() (string, string) {
	GinkgoHelper()
	var cm struct {
		Data map[string]string `json:"data"`
	}
	Expect(getJSON(&cm, "configmap", "sriovdp-config", "-n", releaseNS)).To(Succeed())
	c := cm.Data["config.json"]
	sum := sha256.Sum256([]byte(c))
	return c, hex.EncodeToString(sum[:8])
}

// devicePluginSteps: the real SR-IOV network device plugin, deployed by the chart, reads the
// configuration the operator renders; the profile's pool is accepted by its parser, has no device
// on this VM, and the node state reports 0 VFs; a pool change restarts it exactly once, other
// profile changes not at all; the profile itself selects the node by an operator-rendered
// node-feature-discovery label.
func devicePluginSteps() {
	By("no pool yet: the plugin waits, stamped with the empty configuration's hash")
	start := devicePluginSettled()
	Expect(start.log).To(ContainSubstring("no resource pool"))
	_, hash := renderedConfig()
	Expect(start.stamp).To(Equal(hash))

	By("a profile with a pool, selecting nodes by an operator-rendered NFD label")
	apply(vfProfile("tse2e_vfs", "10"))
	Eventually(func(g Gomega) {
		g.Expect(nodeLabels()).To(HaveKeyWithValue("feature.node.kubernetes.io/tickstack-nic-vendor.1af4", "true"),
			"the real nfd-master labels the node from the operator's rule")
		var p struct {
			Status struct {
				MatchedNodes int32 `json:"matchedNodes"`
				OwnedNodes   int32 `json:"ownedNodes"`
			} `json:"status"`
		}
		g.Expect(getJSON(&p, "latencyprofile", vfProfileName)).To(Succeed())
		g.Expect(p.Status.MatchedNodes).To(Equal(int32(1)), "the profile selects the node by that label")
		g.Expect(p.Status.OwnedNodes).To(BeZero(), "the main profile outranks it")
	}, 3*time.Minute, 2*time.Second).Should(Succeed())

	By("one rollout: the new pod's plugin accepts the rendered pool and finds no device for it")
	var withPool devicePlugin
	Eventually(func(g Gomega) {
		withPool = devicePluginSettled()
		g.Expect(withPool.log).To(ContainSubstring(`validating resource name "tickstack.io/tse2e_vfs"`))
	}, 4*time.Minute, 5*time.Second).Should(Succeed())
	Expect(withPool.generation).To(Equal(start.generation+1), "one configuration change, one new pod template")
	Expect(withPool.restarts).To(BeZero())
	_, hash = renderedConfig()
	Expect(withPool.stamp).To(Equal(hash))
	Expect(withPool.log).To(ContainSubstring("unmarshalled ResourceList"))
	Expect(withPool.log).To(ContainSubstring("no devices in device pool, skipping creating resource server for tse2e_vfs"))
	Expect(withPool.log).To(ContainSubstring("All servers started."))
	Expect(withPool.log).NotTo(ContainSubstring("Exiting"))

	By("kubectl get lns reports the node's 0 VFs")
	Eventually(func(g Gomega) {
		out, err := kubectl(nil, "get", "lns", nodeName)
		g.Expect(err).NotTo(HaveOccurred(), out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(lines).To(HaveLen(2), out)
		// kubectl aligns its columns and leaves an empty cell blank (Generation, on a node whose
		// agent does not resolve its own tuning, or has not yet): read the VFS cell at its header's
		// offset.
		col := strings.Index(lines[0], " VFS ")
		g.Expect(col).To(BeNumerically(">=", 0), "a VFs column:\n%s", out)
		g.Expect(len(lines[1])).To(BeNumerically(">", col+1), out)
		cell := strings.Fields(lines[1][col+1:])
		g.Expect(cell).NotTo(BeEmpty(), out)
		g.Expect(cell[0]).To(Equal("0"), out)
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	Expect(getNode(Default).Status.Capacity).NotTo(HaveKey(corev1.ResourceName("tickstack.io/tse2e_vfs")), "no device registered")

	By("a profile change that leaves the pools alone: no restart")
	apply(vfProfile("tse2e_vfs", "9"))
	Consistently(func() string {
		dp := devicePluginSettled()
		return fmt.Sprint(dp.generation, dp.uid, dp.restarts)
	}, 30*time.Second, 5*time.Second).Should(Equal(fmt.Sprint(withPool.generation, withPool.uid, 0)))

	By("a pool renamed: exactly one more rollout, and no loop")
	apply(vfProfile("tse2e_vfs2", "9"))
	var renamed devicePlugin
	Eventually(func(g Gomega) {
		renamed = devicePluginSettled()
		g.Expect(renamed.log).To(ContainSubstring(`validating resource name "tickstack.io/tse2e_vfs2"`))
	}, 4*time.Minute, 5*time.Second).Should(Succeed())
	Expect(renamed.generation).To(Equal(withPool.generation + 1))
	Consistently(func() string {
		dp := devicePluginSettled()
		return fmt.Sprint(dp.generation, dp.uid, dp.restarts)
	}, 30*time.Second, 5*time.Second).Should(Equal(fmt.Sprint(renamed.generation, renamed.uid, 0)))

	By("the profile deleted: the pool goes, the plugin waits again")
	out, err := kubectl(nil, "delete", "latencyprofile", vfProfileName, "--wait=true", "--timeout=120s")
	Expect(err).NotTo(HaveOccurred(), out)
	Eventually(func(g Gomega) {
		end := devicePluginSettled()
		g.Expect(end.generation).To(Equal(renamed.generation + 1))
		g.Expect(end.log).To(ContainSubstring("no resource pool"))
	}, 4*time.Minute, 5*time.Second).Should(Succeed())
	c, _ := renderedConfig()
	var parsed struct {
		ResourceList []json.RawMessage `json:"resourceList"`
	}
	Expect(json.Unmarshal([]byte(c), &parsed)).To(Succeed())
	Expect(parsed.ResourceList).To(BeEmpty())
}
