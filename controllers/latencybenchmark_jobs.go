package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
)

// DefaultBenchImage is the image of the benchmark pods unless the manager's --bench-image says
// otherwise: sockperf, rt-tests, the dataplane, tickstack-bench and tickstack-bench-upload.
const DefaultBenchImage = "localhost/tickstack/bench:dev"

// Names inside the benchmark pods.
const (
	benchRunnerContainer    = "runner"
	benchReflectorContainer = "reflector"
	benchResultsVolume      = "results"
	benchResultsDir         = "/results"
	defaultBenchTimeout     = 3600
	// containerAnnotation tells the pod webhook which container is the latency one.
	containerAnnotation = "tickstack.io/container"
)

// How results reach the LatencyBenchmark: the runner writes them to a file, and the uploader
// (cmd/tickstack-bench-upload) copies the file into a ConfigMap the controller created for that
// node and run, owned by the benchmark. The pod's service account may only get and update
// those ConfigMaps (a Role with resourceNames). This does not depend on the termination message's
// 4 KiB, on the kubelet serving logs to the API server, or on the pod still existing when the
// controller looks; the controller watches the ConfigMaps.

// runnerScript runs the suites, then uploads whatever they produced with the runner's exit code.
// jitter.cpus "pod" becomes the container's own CPU list.
// LD_PRELOAD is dropped: the runner starts the bypass stack's commands under tickstack-run itself,
// so the kernel stack's rows must not run preloaded even when the pod webhook injected the library.
const runnerScript = `unset LD_PRELOAD
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
printf '%s' "$TSB_SPEC" | sed "s/\"cpus\":\"` + tsv1.JitterCPUsPod + `\"/\"cpus\":\"$cpus\"/" > ` + benchResultsDir + `/spec.json
set -- --role=client --cpus="$cpus" --spec=` + benchResultsDir + `/spec.json --output=` + benchResultsDir + `/results.json --work-dir=` + benchResultsDir + `
if [ -n "$TSB_PEER" ]; then set -- "$@" --peer="$TSB_PEER"; fi
tickstack-bench "$@"
rc=$?
exec tickstack-bench-upload --file=` + benchResultsDir + `/results.json --configmap="$RESULTS_CONFIGMAP" --namespace="$POD_NAMESPACE" --exit-code="$rc"
`

// reflectorScript serves sockperf servers to one client, then exits.
const reflectorScript = `unset LD_PRELOAD
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
exec tickstack-bench --role=server --listen="$POD_IP" --cpus="$cpus" --once
`

// twoPodsScript picks the role from the Indexed Job's completion index.
const twoPodsScript = `if [ "$JOB_COMPLETION_INDEX" = 0 ]; then
` + reflectorScript + `fi
` + runnerScript

// benchJobName names the Job (and its ConfigMap) of one node in one run: at most 63 characters.
func benchJobName(benchmark string, run int64, node string) string {
	sum := sha256.Sum256([]byte(node))
	return fmt.Sprintf("%s-%d-%s", truncateName(benchmark, 40), run, hex.EncodeToString(sum[:])[:8])
}

// benchAccessName names the benchmark's service account, Role, RoleBinding and headless Service.
func benchAccessName(benchmark string) string {
	return "bench-" + truncateName(benchmark, 50)
}

func truncateName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && (s[len(s)-1] == '-' || s[len(s)-1] == '.') {
		s = s[:len(s)-1]
	}
	return s
}

func ownerRef(b *tsv1.LatencyBenchmark) metav1.OwnerReference {
	return *metav1.NewControllerRef(b, tsv1.GroupVersion.WithKind("LatencyBenchmark"))
}

func benchLabels(b *tsv1.LatencyBenchmark, run int64) map[string]string {
	return map[string]string{tsv1.BenchmarkLabel: b.Name, tsv1.BenchmarkRunLabel: strconv.FormatInt(run, 10)}
}

// runnerSpec is the bench.Spec the runner gets: the suites with the benchmark's stacks.
func runnerSpec(b *tsv1.LatencyBenchmark) bench.Spec {
	s := *b.Spec.Suites.DeepCopy()
	s.Stacks = append([]bench.Stack(nil), b.Spec.Stacks...)
	return s
}

func hasBypass(b *tsv1.LatencyBenchmark) bool {
	for _, s := range b.Spec.Stacks {
		if s == bench.StackBypass {
			return true
		}
	}
	return false
}

// placementOf returns the placement with its defaults.
func placementOf(b *tsv1.LatencyBenchmark) (mode tsv1.PlacementMode, runnerCPUs, reflectorCPUs int32, memory resource.Quantity) {
	mode, runnerCPUs, reflectorCPUs, memory = tsv1.PlacementSamePod, 1, 1, resource.MustParse("512Mi")
	if p := b.Spec.Placement; p != nil {
		if p.Mode != "" {
			mode = p.Mode
		}
		if p.RunnerCPUs != nil {
			runnerCPUs = *p.RunnerCPUs
		}
		if p.ReflectorCPUs != nil {
			reflectorCPUs = *p.ReflectorCPUs
		}
		if p.Memory != nil {
			memory = p.Memory.DeepCopy()
		}
	}
	return mode, runnerCPUs, reflectorCPUs, memory
}

// guaranteed returns equal requests and limits: whole CPUs get exclusive cores from the kubelet's
// static CPU manager; cpus 0 means 250m of the shared pool (still Guaranteed QoS).
func guaranteed(cpus int32, memory resource.Quantity) corev1.ResourceRequirements {
	cpu := *resource.NewQuantity(int64(cpus), resource.DecimalSI)
	if cpus == 0 {
		cpu = resource.MustParse("250m")
	}
	l := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// BenchJobInput is what building one node's Job needs.
type BenchJobInput struct {
	Benchmark *tsv1.LatencyBenchmark
	Run       int64
	Node      string
	// Profile labels the pods for the pod webhook when the bypass stack is compared.
	Profile string
	Image   string
}

// buildResultsConfigMap is the empty ConfigMap the uploader fills.
func buildResultsConfigMap(in BenchJobInput) *corev1.ConfigMap {
	b := in.Benchmark
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: benchJobName(b.Name, in.Run, in.Node), Namespace: b.Namespace,
		Labels:          benchLabels(b, in.Run),
		Annotations:     map[string]string{tsv1.BenchmarkNodeAnnotation: in.Node},
		OwnerReferences: []metav1.OwnerReference{ownerRef(b)},
	}}
}

// BuildBenchJob builds the Job that measures one node: pinned to it by required node affinity,
// Guaranteed QoS with whole CPUs, tolerating the unvalidated taint, the reflector beside the runner
// (SamePod: two containers; TwoPods: an Indexed Job of two pods, index 0 the reflector, reached by
// its DNS name under the benchmark's headless Service).
func BuildBenchJob(in BenchJobInput) (*batchv1.Job, error) {
	b := in.Benchmark
	spec := runnerSpec(b)
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the suites: %w", err)
	}
	name := benchJobName(b.Name, in.Run, in.Node)
	mode, runnerCPUs, reflectorCPUs, memory := placementOf(b)
	network := spec.NetworkSuites()
	timeout := int64(defaultBenchTimeout)
	if b.Spec.TimeoutSeconds != nil {
		timeout = int64(*b.Spec.TimeoutSeconds)
	}

	labels := benchLabels(b, in.Run)
	podLabels := benchLabels(b, in.Run)
	if hasBypass(b) && in.Profile != "" {
		podLabels[NodeProfileLabel] = in.Profile
	}
	caps := []corev1.Capability{"SYS_NICE", "IPC_LOCK"}
	if hasBypass(b) {
		caps = append(caps, "NET_ADMIN", "NET_RAW", "BPF", "PERFMON", "SYS_RESOURCE")
	}
	env := []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "RESULTS_CONFIGMAP", Value: name},
		{Name: "TSB_SPEC", Value: string(specJSON)},
	}
	container := func(cname, script string, cpus int32) corev1.Container {
		return corev1.Container{
			Name: cname, Image: in.Image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"/bin/sh", "-c", script},
			Env:             append([]corev1.EnvVar(nil), env...),
			Resources:       guaranteed(cpus, memory),
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: caps}},
			VolumeMounts:    []corev1.VolumeMount{{Name: benchResultsVolume, MountPath: benchResultsDir}},
		}
	}
	podSpec := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: benchAccessName(b.Name),
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{in.Node}}}}}}}},
		Tolerations: []corev1.Toleration{{Key: tsv1.UnvalidatedTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Volumes:     []corev1.Volume{{Name: benchResultsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	annotations := map[string]string{containerAnnotation: benchRunnerContainer}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.Namespace, Labels: labels,
			Annotations:     map[string]string{tsv1.BenchmarkNodeAnnotation: in.Node},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: &timeout,
		},
	}
	switch {
	case !network:
		// jitter only: no reflector.
		podSpec.Containers = []corev1.Container{container(benchRunnerContainer, runnerScript, runnerCPUs)}
	case mode == tsv1.PlacementTwoPods:
		cpus := max(runnerCPUs, reflectorCPUs)
		c := container(benchRunnerContainer, twoPodsScript, cpus)
		peer := fmt.Sprintf("%s-0.%s", name, benchAccessName(b.Name))
		c.Env = append(c.Env, corev1.EnvVar{Name: "TSB_PEER", Value: peer})
		podSpec.Containers = []corev1.Container{c}
		podSpec.Subdomain = benchAccessName(b.Name)
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Completions = ptr.To[int32](2)
		job.Spec.Parallelism = ptr.To[int32](2)
	default:
		r := container(benchRunnerContainer, runnerScript, runnerCPUs)
		r.Env = append(r.Env, corev1.EnvVar{Name: "TSB_PEER", Value: "$(POD_IP)"})
		podSpec.Containers = []corev1.Container{r, container(benchReflectorContainer, reflectorScript, reflectorCPUs)}
	}
	job.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
		Spec:       podSpec,
	}
	return job, nil
}

// buildBenchAccess returns the service account the benchmark pods run as, a Role that lets them
// get and update only this run's results ConfigMaps, and its RoleBinding.
func buildBenchAccess(b *tsv1.LatencyBenchmark, configMaps []string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	name := benchAccessName(b.Name)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: b.Namespace, Labels: map[string]string{tsv1.BenchmarkLabel: b.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta()}
	role := &rbacv1.Role{ObjectMeta: meta(), Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "update", "patch"},
		ResourceNames: configMaps,
	}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: b.Namespace}},
	}
	return sa, role, rb
}

// buildBenchService is the headless Service that gives the reflector pods of TwoPods Jobs their
// DNS names (<job>-0.<service>).
func buildBenchService(b *tsv1.LatencyBenchmark) *corev1.Service {
	name := benchAccessName(b.Name)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace, Labels: map[string]string{tsv1.BenchmarkLabel: b.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{tsv1.BenchmarkLabel: b.Name},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "control", Port: int32(bench.DefaultControlPort)}},
		},
	}
}
