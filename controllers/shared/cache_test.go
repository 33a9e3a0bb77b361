package shared

import (
	"runtime"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestNodeStateTransformInterns: node states with equal facts share one copy, other facts keep
// their own, and a set of facts no cached node state holds any more leaves the table.
func TestNodeStateTransformInterns(t *testing.T) {
	in := &factsInterner{m: map[[32]byte]weakFacts{}}
	transform := nodeStateTransform(in)
	state := func(online tsv1.CPUSet) *tsv1.LatencyNodeState {
		lns := &tsv1.LatencyNodeState{}
		lns.Status.Facts = &tsv1.NodeFacts{OnlineCPUs: online, Sockets: 1}
		lns.Status.Tuning = &tsv1.NodeTuning{ReservedCPUs: "0", PTP: &tsv1.PTPTuning{}}
		lns.Status.Settings = []tsv1.SettingStatus{{Name: "sysctl/x"}}
		return lns
	}
	get := func(lns *tsv1.LatencyNodeState) *tsv1.LatencyNodeState {
		o, err := transform(lns)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*tsv1.LatencyNodeState)
	}
	func() { // a scope of their own: past it, no reference to the facts is left
		a, b, c := get(state("0-7")), get(state("0-7")), get(state("0-3"))
		if a.Status.Facts != b.Status.Facts {
			t.Error("equal facts were not interned")
		}
		if a.Status.Facts == c.Status.Facts || c.Status.Facts.OnlineCPUs != "0-3" {
			t.Error("other facts were given the first copy")
		}
		if a.Status.Settings != nil || a.Status.Tuning == nil || a.Status.Tuning.ReservedCPUs != "" || a.Status.Tuning.PTP == nil {
			t.Errorf("want no status.settings and of status.tuning only the ptp section: %+v", a.Status)
		}
		if got := get(&tsv1.LatencyNodeState{Status: tsv1.LatencyNodeStateStatus{Tuning: &tsv1.NodeTuning{ReservedCPUs: "0"}}}); got.Status.Tuning != nil {
			t.Errorf("a status.tuning without ptp or drain timeout kept: %+v", got.Status.Tuning)
		}
	}()
	for i := 0; i < 100; i++ {
		runtime.GC()
		in.mu.Lock()
		n := len(in.m)
		in.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d sets of facts no node state holds are still in the table", len(in.m))
}

// TestNodeTransformKeepsWhatTheManagerReads: a cached Node keeps its labels, tickstack.io/
// annotations, taints, unschedulable, boot ID and TimeSynced condition, and nothing else of its
// status or of other components' annotations.
func TestNodeTransformKeepsWhatTheManagerReads(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: "7",
			Labels:        map[string]string{tsv1.ProfileLabel: "p", "rack": "r1"},
			Annotations:   map[string]string{tsv1.BMCAnnotation: "bmc-1", tsv1.BenchmarkPassedAnnotation: "p", "node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{PodCIDR: "198.18.64.0/24", ProviderID: "kwok://n1", Unschedulable: true,
			Taints: []corev1.Taint{{Key: tsv1.UnvalidatedTaint, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")},
			Images:    []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1 << 20}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.0.1"}},
			NodeInfo:  corev1.NodeSystemInfo{BootID: "b1", KernelVersion: "6.1"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
				{Type: tsv1.NodeTimeSyncedCondition, Status: corev1.ConditionFalse, Reason: "OffsetAboveThreshold"}},
		},
	}
	o, err := NodeTransform()(n)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*corev1.Node)
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: "7",
			Labels:      map[string]string{tsv1.ProfileLabel: "p", "rack": "r1"},
			Annotations: map[string]string{tsv1.BMCAnnotation: "bmc-1", tsv1.BenchmarkPassedAnnotation: "p"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: tsv1.UnvalidatedTaint, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{BootID: "b1"},
			Conditions: []corev1.NodeCondition{{Type: tsv1.NodeTimeSyncedCondition, Status: corev1.ConditionFalse, Reason: "OffsetAboveThreshold"}},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("cached node:\n%+v\nwant:\n%+v", got, want)
	}
	// Another kind passes untouched; a node without tickstack.io/ annotations has none.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}}
	if o, _ := NodeTransform()(cm); o != cm || len(cm.Annotations) != 1 {
		t.Errorf("a ConfigMap was changed: %+v", o)
	}
	if o, _ := NodeTransform()(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"x": "y"}}}); o.(*corev1.Node).Annotations != nil {
		t.Errorf("foreign annotations kept: %+v", o.(*corev1.Node).Annotations)
	}
}

// TestJobTransformDropsTheSpec: a cached Job keeps its metadata and status, not its pod template.
func TestJobTransformDropsTheSpec(t *testing.T) {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "bench", Labels: map[string]string{tsv1.BenchmarkLabel: "b"},
			Annotations:     map[string]string{tsv1.BenchmarkNodeAnnotation: "n1"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "LatencyBenchmark", Name: "b"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "manager"}}},
		Spec:   batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "bench", Image: "bench:1"}}}}},
		Status: batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
	}
	o, err := JobTransform()(j)
	if err != nil {
		t.Fatal(err)
	}
	want := &batchv1.Job{ObjectMeta: *j.ObjectMeta.DeepCopy(), Status: *j.Status.DeepCopy()}
	want.ManagedFields = nil
	if got := o.(*batchv1.Job); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("cached Job:\n%+v\nwant:\n%+v", got, want)
	}
}
