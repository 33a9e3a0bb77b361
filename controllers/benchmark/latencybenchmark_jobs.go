package benchmark

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/render"
)

// DefaultBenchImage is the image of the benchmark pods when SetupControllers is given none
// (cmd/manager always gives its --bench-image): sockperf, rt-tests, the dataplane, tickstack-bench and
// tickstack-bench-upload. It is the name hack/images/build.sh gives an unversioned build.
const DefaultBenchImage = "localhost/tickstack-bench:dev"

// benchCapabilities are the only capabilities of the runner and reflector containers, each for one
// reason (docs/benchmark.md, "capabilities"; test/chart/testdata/permissions.yaml lists them too):
//   - SYS_NICE: cyclictest's SCHED_FIFO priority (jitter.cyclictestPriority) and the bypass
//     stack's raised priority of a latency thread on its own exclusive CPU;
//   - IPC_LOCK: cyclictest's mlockall (-m), so a page fault is not measured as jitter.
func benchCapabilities() []corev1.Capability { return []corev1.Capability{"SYS_NICE", "IPC_LOCK"} }

// Names inside the benchmark pods.
const (
	benchRunnerContainer    = "runner"
	BenchReflectorContainer = "reflector"
	benchResultsVolume      = "results"
	benchResultsDir         = "/results"
	defaultBenchTimeout     = 3600
	// dataInterface is the pod webhook's first latency interface: in TwoPods the reflector serves
	// sockperf there when the pod has it, so the suites measure the profile's network.
	dataInterface = "lat0"
	// twoPodsPeerTimeout is how long a TwoPods runner waits for its reflector pod to start.
	twoPodsPeerTimeout = "10m"
)

// How results reach the LatencyBenchmark: the runner writes them to a file, and the uploader
// (cmd/tickstack-bench-upload) copies the file into a ConfigMap the controller created for that
// node and run, owned by the benchmark. The pod's service account may only get and update
// those ConfigMaps (a Role with resourceNames). This does not depend on the termination message's
// 4 KiB, on the kubelet serving logs to the API server, or on the pod still existing when the
// controller looks; the controller watches the ConfigMaps.

// runnerScript runs the suites, then uploads whatever they produced with the runner's exit code.
// The container's own CPU list goes to --cpus (tickstack-bench measures jitter.cpus "pod" there).
// LD_PRELOAD is dropped: the runner starts the bypass stack's commands under tickstack-run itself,
// so the kernel stack's rows must not run preloaded even when the pod webhook injected the library.
const runnerScript = `unset LD_PRELOAD
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
printf '%s' "$TSB_SPEC" > ` + benchResultsDir + `/spec.json
set -- --role=client --cpus="$cpus" --spec=` + benchResultsDir + `/spec.json --output=` + benchResultsDir + `/results.json --work-dir=` + benchResultsDir + `
if [ -n "$TSB_PEER" ]; then set -- "$@" --peer="$TSB_PEER"; fi
if [ -n "$TSB_PEER_TIMEOUT" ]; then set -- "$@" --peer-timeout="$TSB_PEER_TIMEOUT"; fi
tickstack-bench "$@"
rc=$?
exec tickstack-bench-upload --file=` + benchResultsDir + `/results.json --configmap="$RESULTS_CONFIGMAP" --namespace="$POD_NAMESPACE" --exit-code="$rc"
`

// benchCommand runs a pod script without the bypass library the pod webhook preloads into the
// container: the library keeps itself preloaded across a shell's exec (for programs that exec with
// a cleared environment), so the script's own "unset LD_PRELOAD" alone would leave the kernel
// stack's sockperf accelerated. env -u execs with its own environ, which the library passes on
// unchanged. The bypass rows run under tickstack-run, which preloads its library itself.
func benchCommand(script string) []string {
	return []string{"/usr/bin/env", "-u", "LD_PRELOAD", "/bin/sh", "-c", script}
}

// reflectorScript serves sockperf servers to one client, then exits. The control port listens on
// the pod IP; the sockperf servers bind to $TSB_DATA_INTERFACE's address when the pod has that
// interface (the profile's network, attached by the pod webhook).
const reflectorScript = `unset LD_PRELOAD
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
set -- --role=server --listen="$POD_IP" --cpus="$cpus" --once
if [ -n "$TSB_DATA_INTERFACE" ] && [ -e "/sys/class/net/$TSB_DATA_INTERFACE" ]; then set -- "$@" --data-interface="$TSB_DATA_INTERFACE"; fi
exec tickstack-bench "$@"
`

// BenchJobName names the Job (and its ConfigMap) of one node in one run: at most 63 characters.
func BenchJobName(benchmark string, run int64, node string) string {
	sum := sha256.Sum256([]byte(node))
	return fmt.Sprintf("%s-%d-%s", truncateName(benchmark, 40), run, hex.EncodeToString(sum[:])[:8])
}

// ReflectorJobName names the TwoPods reflector Job of a runner Job.
func ReflectorJobName(job string) string {
	return job + "-r"
}

// BenchAccessName names the benchmark's service account, Role and RoleBinding.
func BenchAccessName(benchmark string) string {
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

func hasBypass(b *tsv1.LatencyBenchmark) bool {
	for _, s := range b.Spec.Stacks {
		if s == tsv1.StackBypass {
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

// resourcesFor returns equal requests and limits: whole CPUs get exclusive cores from the
// kubelet's static CPU manager (Guaranteed QoS). cpus 0 asks for memory only: the container runs
// on the node's shared CPUs without a CPU quota that would throttle it, and needs no allocatable
// CPU, so it fits beside runners that take every exclusive CPU of a small node.
func resourcesFor(cpus int32, memory resource.Quantity) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceMemory: memory}
	if cpus > 0 {
		l[corev1.ResourceCPU] = *resource.NewQuantity(int64(cpus), resource.DecimalSI)
	}
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
	// ReflectorAddress is the control address of the node's reflector in TwoPods (its Service's
	// cluster IP).
	ReflectorAddress string
}

// buildResultsConfigMap is the empty ConfigMap the uploader fills. It carries
// app.kubernetes.io/managed-by=tickstack: the manager's cache holds only the ConfigMaps with that
// label (controllers.CacheOptions); the uploader's update keeps it.
func buildResultsConfigMap(in BenchJobInput) *corev1.ConfigMap {
	b := in.Benchmark
	l := benchLabels(b, in.Run)
	l[render.ManagedByLabel] = render.ManagedBy
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: BenchJobName(b.Name, in.Run, in.Node), Namespace: b.Namespace,
		Labels:          l,
		Annotations:     map[string]string{tsv1.BenchmarkNodeAnnotation: in.Node},
		OwnerReferences: []metav1.OwnerReference{ownerRef(b)},
	}}
}

// benchPod is what the runner's and the reflector's pods share.
type benchPod struct {
	in      BenchJobInput
	env     []corev1.EnvVar
	caps    []corev1.Capability
	memory  resource.Quantity
	podSpec func() corev1.PodSpec
}

func newBenchPod(in BenchJobInput, specJSON []byte) benchPod {
	b := in.Benchmark
	_, _, _, memory := placementOf(b)
	// Every capability is dropped (the container runtime's defaults too) but benchCapabilities.
	// None is needed for the bypass stack: tickstack-xdpd, on a profile's node, attaches XDP and
	// creates the runner's AF_XDP sockets from the UMEM memfds it passes (docs/dataplane.md,
	// "Privilege model"), so no NET_RAW; and the bypass stack runs only on a profile's nodes (the
	// CRD refuses it without target.profile), so never without the daemon, with NET_ADMIN, BPF
	// and PERFMON for a library that would attach XDP itself.
	caps := benchCapabilities()
	env := []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "RESULTS_CONFIGMAP", Value: BenchJobName(b.Name, in.Run, in.Node)},
		{Name: "TSB_SPEC", Value: string(specJSON)},
	}
	return benchPod{in: in, env: env, caps: caps, memory: memory, podSpec: func() corev1.PodSpec {
		return corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: BenchAccessName(b.Name),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{in.Node}}}}}}}},
			Tolerations: []corev1.Toleration{{Key: tsv1.UnvalidatedTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Volumes:     []corev1.Volume{{Name: benchResultsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}
	}}
}

func (p benchPod) container(name, script string, cpus int32) corev1.Container {
	return corev1.Container{
		Name: name, Image: p.in.Image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:   benchCommand(script),
		Env:       append([]corev1.EnvVar(nil), p.env...),
		Resources: resourcesFor(cpus, p.memory),
		SecurityContext: &corev1.SecurityContext{
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: append([]corev1.Capability(nil), p.caps...)},
			AllowPrivilegeEscalation: ptr.To(false),
		},
		VolumeMounts: []corev1.VolumeMount{{Name: benchResultsVolume, MountPath: benchResultsDir}},
	}
}

// podLabels labels a benchmark pod, and for the pod webhook with the node's profile when the pod
// needs the profile's network (TwoPods network suites) or bypass stack.
func (p benchPod) podLabels(network bool) map[string]string {
	b := p.in.Benchmark
	l := benchLabels(b, p.in.Run)
	mode, _, _, _ := placementOf(b)
	if p.in.Profile != "" && (hasBypass(b) || (network && mode == tsv1.PlacementTwoPods)) {
		l[tsv1.ProfileLabel] = p.in.Profile
	}
	return l
}

func (p benchPod) job(name string, labels, podLabels, annotations map[string]string, spec corev1.PodSpec) *batchv1.Job {
	b := p.in.Benchmark
	timeout := int64(defaultBenchTimeout)
	if b.Spec.TimeoutSeconds != nil {
		timeout = int64(*b.Spec.TimeoutSeconds)
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.Namespace, Labels: labels,
			Annotations:     map[string]string{tsv1.BenchmarkNodeAnnotation: p.in.Node},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: &timeout,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec:       spec,
			},
		},
	}
}

// BuildBenchJob builds the Job that measures one node (the runner): pinned to it by required node
// affinity, Guaranteed QoS with whole CPUs, tolerating the unvalidated taint. SamePod runs the
// reflector as a second container of the same pod; TwoPods reaches the node's reflector pod
// (BuildReflectorJob) at in.ReflectorAddress.
func BuildBenchJob(in BenchJobInput) (*batchv1.Job, error) {
	b := in.Benchmark
	spec := judge.RunnerSuites(b)
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the suites: %w", err)
	}
	name := BenchJobName(b.Name, in.Run, in.Node)
	mode, runnerCPUs, reflectorCPUs, _ := placementOf(b)
	network := spec.NetworkSuites()
	p := newBenchPod(in, specJSON)
	podSpec := p.podSpec()
	switch {
	case !network:
		// jitter only: no reflector.
		podSpec.Containers = []corev1.Container{p.container(benchRunnerContainer, runnerScript, runnerCPUs)}
	case mode == tsv1.PlacementTwoPods:
		if net.ParseIP(in.ReflectorAddress) == nil {
			return nil, fmt.Errorf("the runner Job of node %s needs its reflector's address, got %q", in.Node, in.ReflectorAddress)
		}
		c := p.container(benchRunnerContainer, runnerScript, runnerCPUs)
		c.Env = append(c.Env, corev1.EnvVar{Name: "TSB_PEER", Value: in.ReflectorAddress},
			corev1.EnvVar{Name: "TSB_PEER_TIMEOUT", Value: twoPodsPeerTimeout})
		podSpec.Containers = []corev1.Container{c}
	default:
		r := p.container(benchRunnerContainer, runnerScript, runnerCPUs)
		r.Env = append(r.Env, corev1.EnvVar{Name: "TSB_PEER", Value: "$(POD_IP)"})
		podSpec.Containers = []corev1.Container{r, p.container(BenchReflectorContainer, reflectorScript, reflectorCPUs)}
	}
	addPTPSocket(&podSpec, b)
	annotations := map[string]string{tsv1.ContainerAnnotation: benchRunnerContainer}
	return p.job(name, benchLabels(b, in.Run), p.podLabels(network), annotations, podSpec), nil
}

// BuildReflectorJob builds a TwoPods node's reflector: one pod on the node with reflectorCPUs
// exclusive CPUs (0: the shared CPUs, no CPU request), the profile's network when the node has a
// profile, serving sockperf on that network's interface, and exiting when its runner disconnects.
func BuildReflectorJob(in BenchJobInput) (*batchv1.Job, error) {
	b := in.Benchmark
	specJSON, err := json.Marshal(judge.RunnerSuites(b))
	if err != nil {
		return nil, fmt.Errorf("encoding the suites: %w", err)
	}
	runner := BenchJobName(b.Name, in.Run, in.Node)
	_, _, reflectorCPUs, _ := placementOf(b)
	p := newBenchPod(in, specJSON)
	podSpec := p.podSpec()
	c := p.container(BenchReflectorContainer, reflectorScript, reflectorCPUs)
	c.Env = append(c.Env, corev1.EnvVar{Name: "TSB_DATA_INTERFACE", Value: dataInterface})
	c.VolumeMounts, podSpec.Volumes = nil, nil
	podSpec.Containers = []corev1.Container{c}
	podLabels := p.podLabels(true)
	podLabels[tsv1.ReflectorLabel] = runner
	annotations := map[string]string{tsv1.ContainerAnnotation: BenchReflectorContainer}
	if reflectorCPUs == 0 {
		annotations[tsv1.ExclusiveCPUsAnnotation] = "false"
	}
	return p.job(ReflectorJobName(runner), benchLabels(b, in.Run), podLabels, annotations, podSpec), nil
}

// buildReflectorService is a TwoPods node's reflector Service: its cluster IP is the runner's
// --peer, which needs neither cluster DNS nor the reflector pod's IP before the runner is created.
// The measured traffic does not pass through it: the reflector tells the runner its data address.
func buildReflectorService(in BenchJobInput) *corev1.Service {
	b := in.Benchmark
	runner := BenchJobName(b.Name, in.Run, in.Node)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: runner, Namespace: b.Namespace, Labels: benchLabels(b, in.Run),
			Annotations:     map[string]string{tsv1.BenchmarkNodeAnnotation: in.Node},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Spec: corev1.ServiceSpec{
			Selector:                 map[string]string{tsv1.ReflectorLabel: runner},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "control", Port: int32(judge.DefaultControlPort)}},
		},
	}
}

// buildBenchAccess returns the service account the benchmark pods run as, a Role that lets them
// get and update only this run's results ConfigMaps, and its RoleBinding.
func buildBenchAccess(b *tsv1.LatencyBenchmark, configMaps []string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	name := BenchAccessName(b.Name)
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
