package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/node"
	"github.com/tickstack/tickstack/internal/render"
)

// The network and node label controllers run in the suite's manager (SetupControllers), with the
// real CRDs of NetworkAttachmentDefinition and node-feature-discovery installed from their modules'
// copies (kubetest.DefaultCRDs).
var _ = Describe("Network and node label controllers", Ordered, func() {
	const ns, otherNS = operatorNS, "tspw-other"
	var nk8s client.Client

	BeforeAll(func() {
		nk8s = k8s
		Expect(client.IgnoreAlreadyExists(nk8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}}))).To(Succeed())
	})
	AfterAll(func() {
		// The aggregates the controller rendered; the profile's NADs went with it.
		Expect(client.IgnoreNotFound(nk8s.Delete(ctx, &nfdv1alpha1.NodeFeatureRule{ObjectMeta: metav1.ObjectMeta{Name: "tickstack"}}))).To(Succeed())
		Expect(client.IgnoreNotFound(nk8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sriovdp-config"}}))).To(Succeed())
	})

	profile := func() *tsv1.LatencyProfile {
		return &tsv1.LatencyProfile{
			ObjectMeta: metav1.ObjectMeta{Name: "tspw-net"},
			Spec: tsv1.LatencyProfileSpec{
				NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tspw.test/none": "none"}},
				NICs: []tsv1.NICSpec{
					{Name: "md", Selector: tsv1.NICSelector{Vendor: "8086", PFNames: []string{"ens1f0#0-3"}}, NumVFs: ptr.To[int32](4),
						ResourceName: "tspw_md", Acceleration: tsv1.AccelerationBypass,
						Network: &tsv1.NICNetwork{IPAM: &tsv1.IPAM{Type: "host-local", Subnet: "198.18.0.0/24", Gateway: "198.18.0.1"}}},
					{Name: "mgmt", Selector: tsv1.NICSelector{Vendor: "15b3", InterfaceNames: []string{"eth1"}},
						Network: &tsv1.NICNetwork{Type: tsv1.NetworkMacvlan, Namespace: otherNS}},
				},
			},
		}
	}
	nadKey := func(namespace, name string) client.ObjectKey {
		return client.ObjectKey{Namespace: namespace, Name: name}
	}
	pools := func() []render.DevicePluginResource {
		cm := &corev1.ConfigMap{}
		if err := nk8s.Get(ctx, nadKey(ns, "sriovdp-config"), cm); err != nil {
			return nil
		}
		var c render.DevicePluginConfig
		if err := json.Unmarshal([]byte(cm.Data[render.DevicePluginConfigKey]), &c); err != nil {
			return nil
		}
		return c.ResourceList
	}
	poolNames := func() []string {
		var out []string
		for _, p := range pools() {
			out = append(out, p.ResourceName)
		}
		return out
	}
	// createOnePool creates profile() named name with its first NIC alone, as pool resource, and
	// waits for the pool in the device plugin's configuration; the profile goes at the spec's end.
	createOnePool := func(name, resource string) *tsv1.LatencyProfile {
		GinkgoHelper()
		p := profile()
		p.Name = name
		p.Spec.NICs[0].ResourceName = resource
		p.Spec.NICs = p.Spec.NICs[:1]
		Expect(nk8s.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = client.IgnoreNotFound(nk8s.Delete(context.Background(), p)) })
		Eventually(poolNames, "20s").Should(ContainElement(resource))
		return p
	}

	It("renders a profile's NADs, device plugin pool and feature rule, keeps them, and removes them with the profile", func() {
		p := profile()
		Expect(nk8s.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = client.IgnoreNotFound(nk8s.Delete(context.Background(), p)) })

		md := &nadv1.NetworkAttachmentDefinition{}
		Eventually(func() error { return nk8s.Get(ctx, nadKey(ns, "tspw-net-md"), md) }, "20s").Should(Succeed())
		Expect(md.Annotations).To(HaveKeyWithValue("k8s.v1.cni.cncf.io/resourceName", "tickstack.io/tspw_md"))
		Expect(md.OwnerReferences).To(ContainElement(HaveField("Name", "tspw-net")))
		Expect(md.Spec.Config).To(ContainSubstring(`"type":"sriov"`))
		mgmt := &nadv1.NetworkAttachmentDefinition{}
		Eventually(func() error { return nk8s.Get(ctx, nadKey(otherNS, "tspw-net-mgmt"), mgmt) }, "20s").Should(Succeed())
		Expect(mgmt.Annotations).NotTo(HaveKey("k8s.v1.cni.cncf.io/resourceName"))
		Expect(mgmt.Spec.Config).To(ContainSubstring(`"master":"eth1"`))

		Eventually(poolNames, "20s").Should(ContainElement("tspw_md"))
		rule := &nfdv1alpha1.NodeFeatureRule{}
		Eventually(func() []string {
			if err := nk8s.Get(ctx, client.ObjectKey{Name: "tickstack"}, rule); err != nil {
				return nil
			}
			var names []string
			for _, r := range rule.Spec.Rules {
				names = append(names, r.Name)
			}
			return names
		}, "20s").Should(ContainElements("tickstack sriov capable NIC", "tickstack NIC vendor 8086", "tickstack NIC vendor 15b3"))

		By("undoing a change made by hand")
		orig := md.DeepCopy()
		md.Spec.Config = `{"type":"bridge"}`
		Expect(nk8s.Patch(ctx, md, client.MergeFrom(orig))).To(Succeed())
		Eventually(func() string {
			_ = nk8s.Get(ctx, nadKey(ns, "tspw-net-md"), md)
			return md.Spec.Config
		}, "20s").Should(ContainSubstring(`"type":"sriov"`))

		By("dropping a network the profile no longer has")
		Eventually(func() error {
			cur := &tsv1.LatencyProfile{}
			if err := nk8s.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
				return err
			}
			o := cur.DeepCopy()
			cur.Spec.NICs[1].Network = nil
			return nk8s.Patch(ctx, cur, client.MergeFrom(o))
		}, "10s").Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(nk8s.Get(ctx, nadKey(otherNS, "tspw-net-mgmt"), &nadv1.NetworkAttachmentDefinition{}))
		}, "20s").Should(BeTrue())

		By("deleting the profile")
		Expect(nk8s.Delete(ctx, p)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(nk8s.Get(ctx, nadKey(ns, "tspw-net-md"), &nadv1.NetworkAttachmentDefinition{}))
		}, "30s").Should(BeTrue())
		Eventually(poolNames, "20s").ShouldNot(ContainElement("tspw_md"))
	})

	It("rolls the device plugin's DaemonSet once per configuration change, and never for other changes", func() {
		// hashOf is the configuration's hash the network controller stamps on the pod template.
		hashOf := func() string {
			cm := &corev1.ConfigMap{}
			if err := nk8s.Get(ctx, nadKey(ns, "sriovdp-config"), cm); err != nil {
				return "no ConfigMap: " + err.Error()
			}
			sum := sha256.Sum256([]byte(cm.Data[render.DevicePluginConfigKey]))
			return hex.EncodeToString(sum[:8])
		}
		ds := &appsv1.DaemonSet{}
		stamped := func() string {
			if err := nk8s.Get(ctx, nadKey(ns, devicePluginDS), ds); err != nil {
				return err.Error()
			}
			return ds.Spec.Template.Annotations[tsv1.DevicePluginConfigAnnotation]
		}
		// settled: the stamp is the hash of the ConfigMap now, and stays so.
		settled := func() int64 {
			GinkgoHelper()
			Eventually(func() bool { return stamped() == hashOf() }, "20s").Should(BeTrue(), "stamp %q, ConfigMap's hash %q", stamped(), hashOf())
			Consistently(func() bool { return stamped() == hashOf() }, "1s").Should(BeTrue())
			return ds.Generation
		}
		before := settled()

		By("a profile adding a pool: one rollout")
		p := createOnePool("tspw-net-roll", "tspw_roll")
		Expect(settled()).To(Equal(before+1), "one pool added: exactly one new pod template")

		By("a profile change that leaves the pools alone: no rollout")
		cur := &tsv1.LatencyProfile{}
		Expect(nk8s.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
		o := cur.DeepCopy()
		cur.Spec.NICs[0].Network.IPAM.Subnet = "198.18.1.0/24"
		cur.Spec.NICs[0].Network.IPAM.Gateway = "198.18.1.1"
		Expect(nk8s.Patch(ctx, cur, client.MergeFrom(o))).To(Succeed())
		// The NAD shows the controller handled the change.
		Eventually(func() string {
			nad := &nadv1.NetworkAttachmentDefinition{}
			_ = nk8s.Get(ctx, nadKey(ns, "tspw-net-roll-md"), nad)
			return nad.Spec.Config
		}, "20s").Should(ContainSubstring("198.18.1.0/24"))
		Expect(settled()).To(Equal(before+1), "the pools did not change: the pod template must not either")

		By("deleting the profile: one more rollout, back to the configuration from before")
		first := stamped()
		Expect(nk8s.Delete(ctx, p)).To(Succeed())
		Eventually(poolNames, "30s").ShouldNot(ContainElement("tspw_roll"))
		Expect(settled()).To(Equal(before + 2))
		Expect(stamped()).NotTo(Equal(first))
	})

	It("keeps only the operator's ConfigMaps in the manager's cache, and takes over a device plugin ConfigMap made without its label", func() {
		// Another's ConfigMap in the operator's namespace: never in the manager's cache.
		user := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tspw-user-config"}, Data: map[string]string{"a": "b"}}
		Expect(nk8s.Create(ctx, user)).To(Succeed())
		DeferCleanup(func() { _ = client.IgnoreNotFound(nk8s.Delete(context.Background(), user)) })

		By("replacing the device plugin's ConfigMap by one without the managed-by label (made by hand, or by another tool)")
		Eventually(func() error {
			if err := client.IgnoreNotFound(nk8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sriovdp-config"}})); err != nil {
				return err
			}
			return nk8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sriovdp-config"},
				Data: map[string]string{render.DevicePluginConfigKey: "{}"}})
		}, "20s").Should(Succeed())

		By("a profile change: the controller labels it and renders its pools")
		p := createOnePool("tspw-net-own", "tspw_own")
		live := &corev1.ConfigMap{}
		Expect(nk8s.Get(ctx, nadKey(ns, "sriovdp-config"), live)).To(Succeed())
		Expect(live.Labels).To(HaveKeyWithValue(render.ManagedByLabel, render.ManagedBy))

		By("the manager's cache: the device plugin's ConfigMap, not the other one")
		Eventually(func(g Gomega) {
			cached := &corev1.ConfigMap{}
			g.Expect(mgrClient.Get(ctx, nadKey(ns, "sriovdp-config"), cached)).To(Succeed())
			g.Expect(cached.Data[render.DevicePluginConfigKey]).To(ContainSubstring("tspw_own"))
		}, "20s").Should(Succeed())
		// The cache shows a write made after the other ConfigMap's creation: had it been selected,
		// it would be there.
		Expect(mgrClient.Get(ctx, client.ObjectKeyFromObject(user), &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
		Expect(nk8s.Delete(ctx, p)).To(Succeed())
		Eventually(poolNames, "30s").ShouldNot(ContainElement("tspw_own"))
	})

	It("labels a node with the profile its agent reports Applied, and unlabels it when that stops", func() {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "tspw-node"}}
		Expect(nk8s.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() { _ = nk8s.Delete(context.Background(), node) })
		lns := &tsv1.LatencyNodeState{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name},
			Spec:       tsv1.LatencyNodeStateSpec{NodeName: node.Name, Profile: tsv1.ProfileReference{Name: "tspw-nolabel-profile", Generation: 1}},
		}
		Expect(nk8s.Create(ctx, lns)).To(Succeed())
		DeferCleanup(func() { _ = client.IgnoreNotFound(nk8s.Delete(context.Background(), lns)) })
		label := func() string {
			n := &corev1.Node{}
			if err := nk8s.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
				return "error: " + err.Error()
			}
			return n.Labels[tsv1.ProfileLabel]
		}
		setApplied := func(status metav1.ConditionStatus) {
			Eventually(func() error {
				cur := &tsv1.LatencyNodeState{}
				if err := nk8s.Get(ctx, client.ObjectKeyFromObject(lns), cur); err != nil {
					return err
				}
				o := cur.DeepCopy()
				cur.Status.Conditions = []metav1.Condition{{Type: tsv1.NodeApplied, Status: status, Reason: "Test", Message: "test",
					ObservedGeneration: cur.Generation, LastTransitionTime: metav1.Now()}}
				return nk8s.Status().Patch(ctx, cur, client.MergeFrom(o))
			}, "10s").Should(Succeed())
		}
		Consistently(label, "1s").Should(BeEmpty())
		setApplied(metav1.ConditionTrue)
		Eventually(label, "20s").Should(Equal("tspw-nolabel-profile"))
		setApplied(metav1.ConditionFalse)
		Eventually(label, "20s").Should(BeEmpty())
		setApplied(metav1.ConditionTrue)
		Eventually(label, "20s").Should(Equal("tspw-nolabel-profile"))
		Expect(nk8s.Delete(ctx, lns)).To(Succeed())
		Eventually(label, "20s").Should(BeEmpty())
	})
})

var _ = DescribeTable("NodeProfileLabelValue",
	func(lns *tsv1.LatencyNodeState, want string) {
		Expect(node.NodeProfileLabelValue(lns, "")).To(Equal(want))
	},
	Entry("no node state", nil, ""),
	Entry("applied", nodeState("p", 2, metav1.ConditionTrue, 2, false), "p"),
	Entry("applied without observedGeneration", nodeState("p", 2, metav1.ConditionTrue, 0, false), "p"),
	Entry("applied to an older spec", nodeState("p", 3, metav1.ConditionTrue, 2, false), ""),
	Entry("not applied", nodeState("p", 2, metav1.ConditionFalse, 2, false), ""),
	Entry("being deleted", nodeState("p", 2, metav1.ConditionTrue, 2, true), ""),
	Entry("no condition", &tsv1.LatencyNodeState{Spec: tsv1.LatencyNodeStateSpec{Profile: tsv1.ProfileReference{Name: "p"}}}, ""),
)

// A node whose agent resolves (spec.profile.resolveOnNode) keeps the label it has while it
// re-tunes, and loses it on Degraded or when it leaves the profile (issue 45's label contract).
var _ = DescribeTable("NodeProfileLabelValue on a resolving node",
	func(lns *tsv1.LatencyNodeState, have, want string) {
		lns.Spec.Profile.ResolveOnNode = true
		Expect(node.NodeProfileLabelValue(lns, have)).To(Equal(want))
	},
	Entry("labelled, re-tuning", nodeState("p", 2, metav1.ConditionFalse, 2, false), "p", "p"),
	Entry("labelled, applied", nodeState("p", 2, metav1.ConditionTrue, 2, false), "p", "p"),
	Entry("labelled, degraded", degraded(nodeState("p", 2, metav1.ConditionFalse, 2, false)), "p", ""),
	Entry("labelled with the profile it left", nodeState("q", 2, metav1.ConditionFalse, 2, false), "p", ""),
	Entry("not labelled yet, applying", nodeState("p", 2, metav1.ConditionFalse, 2, false), "", ""),
	Entry("not labelled yet, applied", nodeState("p", 2, metav1.ConditionTrue, 2, false), "", "p"),
	Entry("labelled, being deleted", nodeState("p", 2, metav1.ConditionFalse, 2, true), "p", ""),
)

func degraded(lns *tsv1.LatencyNodeState) *tsv1.LatencyNodeState {
	lns.Status.Conditions = append(lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeDegraded, Status: metav1.ConditionTrue})
	return lns
}

func nodeState(profile string, gen int64, applied metav1.ConditionStatus, observed int64, deleting bool) *tsv1.LatencyNodeState {
	lns := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Generation: gen},
		Spec:       tsv1.LatencyNodeStateSpec{Profile: tsv1.ProfileReference{Name: profile}},
		Status:     tsv1.LatencyNodeStateStatus{Conditions: []metav1.Condition{{Type: tsv1.NodeApplied, Status: applied, ObservedGeneration: observed}}},
	}
	if deleting {
		lns.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return lns
}
