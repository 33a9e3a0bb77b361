package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/policy"
	"github.com/tickstack/tickstack/internal/render"
)

// HugepagesVolume is the hugetlbfs emptyDir mounted at /dev/hugepages.
const HugepagesVolume = "tickstack-hugepages"

// PodOptions configure the pod webhook; cmd/manager sets them from flags.
type PodOptions struct {
	// ResourcePrefix is the device plugin's resource prefix: VFs are <prefix>/<resourceName>.
	ResourcePrefix string
	// DataplaneImage holds the bypass library at DataplaneLibraryInImage.
	DataplaneImage string
	// NetworkNamespace is where NetworkAttachmentDefinitions go when a profile names none (the
	// operator's namespace).
	NetworkNamespace string
	// XDPRunDir is the node daemon tickstack-xdpd's run directory (default DefaultXDPRunDir); bypass
	// containers get its node/ directory from the device plugin (tsv1.XDPDResource), not by path.
	XDPRunDir string
}

// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod.tickstack.io,admissionReviewVersions=v1,reinvocationPolicy=Never,timeoutSeconds=10,patch=`{"objectSelector":{"matchExpressions":[{"key":"tickstack.io/profile","operator":"Exists"}]}}`

// PodMutator pins opted-in pods to a profile's nodes and VFs and injects the bypass stack. The
// webhook configuration's objectSelector sends it only pods labelled tickstack.io/profile, so other
// pods never wait on it and still schedule while it is down; failurePolicy Fail refuses labelled
// pods rather than letting them run unpinned.
type PodMutator struct {
	// Reader reads LatencyProfiles; the API reader, so a profile created just before its pod is seen.
	Reader  client.Reader
	Decoder admission.Decoder
	Options PodOptions
}

// PodWebhookPath is where the pod webhook is served.
const PodWebhookPath = "/mutate--v1-pod"

// SetupPodWebhook registers the pod webhook and the ephemeral container check on the manager's
// webhook server.
func SetupPodWebhook(mgr ctrl.Manager, opts PodOptions) error {
	if opts.ResourcePrefix == "" {
		opts.ResourcePrefix = tsv1.DefaultResourcePrefix
	}
	if opts.XDPRunDir == "" {
		opts.XDPRunDir = DefaultXDPRunDir
	}
	if opts.DataplaneImage == "" {
		return fmt.Errorf("pod webhook: the dataplane image is not set (--dataplane-image)")
	}
	m := &PodMutator{Reader: mgr.GetAPIReader(), Decoder: admission.NewDecoder(mgr.GetScheme()), Options: opts}
	mgr.GetWebhookServer().Register(PodWebhookPath, &webhook.Admission{Handler: m})
	mgr.GetWebhookServer().Register(EphemeralContainerWebhookPath, &webhook.Admission{
		Handler: &EphemeralContainerValidator{Decoder: m.Decoder}})
	return nil
}

// Handle admits one pod creation.
func (m *PodMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := m.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	name, ok := pod.Labels[tsv1.ProfileLabel]
	if !ok {
		return admission.Allowed("not a latency pod")
	}
	profile := &tsv1.LatencyProfile{}
	if err := m.Reader.Get(ctx, types.NamespacedName{Name: name}, profile); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Denied(fmt.Sprintf("label %s=%s names no LatencyProfile: fix the label (kubectl get latencyprofiles lists them) or remove it to run without pinning",
				tsv1.ProfileLabel, name))
		}
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading LatencyProfile %s: %w", name, err))
	}
	if !profile.DeletionTimestamp.IsZero() {
		return admission.Denied(fmt.Sprintf("LatencyProfile %s is being deleted: label the pod with another profile", name))
	}
	if err := MutatePod(pod, profile, m.Options); err != nil {
		return admission.Denied(err.Error())
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the pod: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// MutatePod sets a latency pod up for its profile, or returns why it cannot be pinned and what to
// change. It is pure: the pod is changed in place only when it returns nil.
func MutatePod(orig *corev1.Pod, p *tsv1.LatencyProfile, opts PodOptions) error {
	pod := orig.DeepCopy()
	if err := checkPodSecurity(pod); err != nil {
		return err
	}
	c, err := latencyContainer(pod)
	if err != nil {
		return err
	}
	exclusive, err := exclusiveCPUs(pod)
	if err != nil {
		return err
	}
	if exclusive {
		if err := checkGuaranteed(pod, c); err != nil {
			if req, perr := policy.ParsePodControls(pod.Annotations); perr == nil && !req.Empty() {
				return fmt.Errorf("annotation %s needs a Guaranteed pod with whole CPUs: %w", req.Controls()[0].Annotation(), err)
			}
			return err
		}
	}
	if err := checkPodControls(pod, p, exclusive); err != nil {
		return err
	}
	bypassIfaces, err := attachNetworks(pod, c, p, opts)
	if err != nil {
		return err
	}
	if err := addHugepages(pod, c, p); err != nil {
		return err
	}
	if err := injectBypass(pod, c, p, opts, bypassIfaces, exclusive); err != nil {
		return err
	}
	requireProfileNodes(pod, p)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[tsv1.MutatedAnnotation] = p.Name
	*orig = *pod
	return nil
}

// checkPodControls refuses per-pod control annotations (docs/agent.md "Per-pod controls") with a
// bad value, on a pod without exclusive CPUs, or that the profile does not allow. A Guaranteed pod
// with whole CPUs is already required of a pod with exclusive CPUs (checkGuaranteed).
func checkPodControls(pod *corev1.Pod, p *tsv1.LatencyProfile, exclusive bool) error {
	req, err := policy.ParsePodControls(pod.Annotations)
	if err != nil {
		return err
	}
	if req.Empty() {
		return nil
	}
	if !exclusive {
		return fmt.Errorf("annotation %s acts on the pod's exclusive CPUs, and %s=false gives it none: remove one of the two annotations",
			req.Controls()[0].Annotation(), tsv1.ExclusiveCPUsAnnotation)
	}
	var allow []tsv1.PodControl
	if p.Spec.PodControls != nil {
		allow = p.Spec.PodControls.Allow
	}
	if err := policy.PodControlsNotAllowed(req, allow, "LatencyProfile "+p.Name+" (the nodes this pod is pinned to)"); err != nil {
		return err
	}
	return requireNRIPlugin(pod)
}

// requireNRIPlugin adds the node's NRI plugin to the pod's required NRI plugins (NRI's
// annotation, read by containerd's default validator), keeping any the pod names itself.
func requireNRIPlugin(pod *corev1.Pod) error {
	var names []string
	if v, ok := pod.Annotations[tsv1.NRIRequiredPluginsAnnotation]; ok {
		if err := json.Unmarshal([]byte(v), &names); err != nil {
			return fmt.Errorf("annotation %s=%q: the value must be a JSON list of NRI plugin names: %v", tsv1.NRIRequiredPluginsAnnotation, v, err)
		}
	}
	if slices.Contains(names, tsv1.NRIPluginName) {
		return nil
	}
	b, err := json.Marshal(append(names, tsv1.NRIPluginName))
	if err != nil {
		return err
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[tsv1.NRIRequiredPluginsAnnotation] = string(b)
	return nil
}

// exclusiveCPUs reads ExclusiveCPUsAnnotation.
func exclusiveCPUs(pod *corev1.Pod) (bool, error) {
	switch v, ok := pod.Annotations[tsv1.ExclusiveCPUsAnnotation]; {
	case !ok || v == "true":
		return true, nil
	case v == "false":
		return false, nil
	default:
		return false, fmt.Errorf("annotation %s=%q must be \"true\" (exclusive CPUs, the default) or \"false\" (the node's shared CPUs)", tsv1.ExclusiveCPUsAnnotation, v)
	}
}

func latencyContainer(pod *corev1.Pod) (*corev1.Container, error) {
	want := pod.Annotations[tsv1.ContainerAnnotation]
	if want == "" {
		if len(pod.Spec.Containers) == 0 {
			return nil, fmt.Errorf("the pod has no containers")
		}
		return &pod.Spec.Containers[0], nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == want {
			return &pod.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("annotation %s=%s names no container of the pod: name one of its containers", tsv1.ContainerAnnotation, want)
}

// checkGuaranteed refuses pods the kubelet's static CPU manager would not give exclusive CPUs:
// every container needs cpu and memory limits equal to its requests (Guaranteed QoS), and the
// latency container a whole number of CPUs.
func checkGuaranteed(pod *corev1.Pod, latency *corev1.Container) error {
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range all {
		c := &all[i]
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			lim, ok := c.Resources.Limits[r]
			if !ok || lim.IsZero() {
				return fmt.Errorf("container %s has no %s limit: latency pods need Guaranteed QoS; set resources.limits.%s (and requests equal to it) on every container",
					c.Name, r, r)
			}
			if req, ok := c.Resources.Requests[r]; ok && req.Cmp(lim) != 0 {
				return fmt.Errorf("container %s requests %s %s but its limit is %s: latency pods need Guaranteed QoS; make resources.requests.%s equal to resources.limits.%s",
					c.Name, r, req.String(), lim.String(), r, r)
			}
		}
	}
	cpu := latency.Resources.Limits[corev1.ResourceCPU]
	if cpu.MilliValue()%1000 != 0 {
		return fmt.Errorf("container %s asks for %s CPUs: exclusive CPUs need a whole number; set resources.limits.cpu and requests.cpu to an integer such as %d",
			latency.Name, cpu.String(), (cpu.MilliValue()+999)/1000)
	}
	return nil
}

// OfferedVFs is how many VFs of a NIC group one node offers, as far as the profile says: each
// pfNames entry gives its VF range (or numVfs without one), each interfaceNames entry numVfs, and a
// group selected otherwise at least numVfs (one PF).
func OfferedVFs(nic *tsv1.NICSpec) int {
	if nic.NumVFs == nil {
		return 0
	}
	per := int(*nic.NumVFs)
	total := 0
	for _, pf := range nic.Selector.PFNames {
		_, rng, ok := strings.Cut(pf, "#")
		if !ok {
			total += per
			continue
		}
		first, last, _ := strings.Cut(rng, "-")
		a, errA := strconv.Atoi(first)
		b, errB := strconv.Atoi(last)
		if errA != nil || errB != nil || b < a {
			continue
		}
		total += min(b-a+1, per)
	}
	total += per * len(nic.Selector.InterfaceNames)
	if total == 0 {
		total = per
	}
	return total
}

func interfacesWanted(pod *corev1.Pod) (int, error) {
	v, ok := pod.Annotations[tsv1.InterfacesAnnotation]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		return 0, fmt.Errorf("annotation %s=%q must be a whole number from 1 to 64: the interfaces (VFs) per network the pod wants", tsv1.InterfacesAnnotation, v)
	}
	return n, nil
}

// attachNetworks adds the profile's networks to the pod's Multus annotation, each attachment with
// its interface named lat0, lat1, ..., and, for VF-backed networks, the device plugin resource to the
// latency container. It returns the interfaces of the bypass-accelerated groups.
func attachNetworks(pod *corev1.Pod, c *corev1.Container, p *tsv1.LatencyProfile, opts PodOptions) ([]string, error) {
	n, err := interfacesWanted(pod)
	if err != nil {
		return nil, err
	}
	var refs, bypass []string
	for i := range p.Spec.NICs {
		nic := &p.Spec.NICs[i]
		if nic.Network == nil {
			continue
		}
		count := n
		if render.PoolOf(nic) {
			res := corev1.ResourceName(opts.ResourcePrefix + "/" + nic.ResourceName)
			// A container that already asks for the VFs itself keeps its count.
			if have, ok := c.Resources.Limits[res]; ok {
				count = int(have.Value())
			} else if have, ok := c.Resources.Requests[res]; ok {
				count = int(have.Value())
			}
			if offered := OfferedVFs(nic); count > offered {
				return nil, fmt.Errorf("the pod asks for %d VFs (%s) of spec.nics[%s] but LatencyProfile %s offers at most %d per node: ask for fewer (annotation %s or the container's %s limit) or raise the profile's numVfs",
					count, res, nic.Name, p.Name, offered, tsv1.InterfacesAnnotation, res)
			}
			setResource(c, res, *resource.NewQuantity(int64(count), resource.DecimalSI))
		} else if nic.Network.Type == tsv1.NetworkHostDevice && count > 1 {
			return nil, fmt.Errorf("spec.nics[%s] of LatencyProfile %s moves its one host interface into the pod: annotation %s must be 1",
				nic.Name, p.Name, tsv1.InterfacesAnnotation)
		}
		ref := render.NADNamespace(nic.Network, opts.NetworkNamespace) + "/" + render.NADName(p.Name, nic.Name)
		for range count {
			iface := fmt.Sprintf("%s%d", LatencyInterfacePrefix, len(refs))
			refs = append(refs, ref+"@"+iface)
			if nic.Acceleration == tsv1.AccelerationBypass {
				bypass = append(bypass, iface)
			}
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	return bypass, addNetworks(pod, refs)
}

func setResource(c *corev1.Container, name corev1.ResourceName, q resource.Quantity) {
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = q
	c.Resources.Limits[name] = q
}

// addNetworks appends to k8s.v1.cni.cncf.io/networks in whichever of its two forms the pod uses:
// a comma-separated list of [namespace/]name, or a JSON list of selection elements.
func addNetworks(pod *corev1.Pod, refs []string) error {
	const key = "k8s.v1.cni.cncf.io/networks"
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	cur := strings.TrimSpace(pod.Annotations[key])
	if strings.HasPrefix(cur, "[") {
		var list []map[string]any
		if err := json.Unmarshal([]byte(cur), &list); err != nil {
			return fmt.Errorf("annotation %s is not a valid JSON list (%v): fix it or use the comma-separated form", key, err)
		}
		for _, r := range refs {
			ns, rest, _ := strings.Cut(r, "/")
			name, iface, _ := strings.Cut(rest, "@")
			list = append(list, map[string]any{"name": name, "namespace": ns, "interface": iface})
		}
		b, err := json.Marshal(list)
		if err != nil {
			return fmt.Errorf("encoding annotation %s: %w", key, err)
		}
		pod.Annotations[key] = string(b)
		return nil
	}
	all := refs
	if cur != "" {
		all = append([]string{cur}, refs...)
	}
	pod.Annotations[key] = strings.Join(all, ",")
	return nil
}

// addHugepages gives the latency container the huge pages the pod asks for by annotation, from
// the sizes the profile reserves, and mounts them at /dev/hugepages.
func addHugepages(pod *corev1.Pod, c *corev1.Container, p *tsv1.LatencyProfile) error {
	v, ok := pod.Annotations[tsv1.HugepagesAnnotation]
	if !ok {
		return nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("annotation %s=%q must be a positive quantity such as 1Gi", tsv1.HugepagesAnnotation, v)
	}
	hp := p.Spec.Hugepages
	sizes := map[tsv1.HugePageSize]bool{}
	if hp != nil {
		for _, pg := range hp.Pages {
			sizes[pg.Size] = true
		}
	}
	if len(sizes) == 0 {
		return fmt.Errorf("annotation %s asks for huge pages but LatencyProfile %s reserves none: remove the annotation or add spec.hugepages.pages to the profile",
			tsv1.HugepagesAnnotation, p.Name)
	}
	size := tsv1.HugePageSize(pod.Annotations[tsv1.HugepageSizeAnnotation])
	switch {
	case size != "":
	case hp.DefaultSize != "":
		size = hp.DefaultSize
	case len(sizes) == 1:
		for s := range sizes {
			size = s
		}
	default:
		return fmt.Errorf("LatencyProfile %s reserves 2Mi and 1Gi pages and sets no default size: add annotation %s with one of them", p.Name, tsv1.HugepageSizeAnnotation)
	}
	if !sizes[size] {
		return fmt.Errorf("annotation %s=%s names a page size LatencyProfile %s does not reserve: use one of its spec.hugepages.pages sizes", tsv1.HugepageSizeAnnotation, size, p.Name)
	}
	pageBytes := resource.MustParse(string(size))
	if q.Value()%pageBytes.Value() != 0 {
		return fmt.Errorf("annotation %s=%s is not a whole number of %s pages: round it to a multiple of %s", tsv1.HugepagesAnnotation, v, size, size)
	}
	setResource(c, corev1.ResourceName("hugepages-"+string(size)), q)
	addVolume(pod, corev1.Volume{Name: HugepagesVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium("HugePages-" + string(size))}}})
	addMount(c, corev1.VolumeMount{Name: HugepagesVolume, MountPath: "/dev/hugepages"})
	return nil
}

// Bypass reports whether a profile puts latency pods on the bypass stack.
func Bypass(p *tsv1.LatencyProfile) bool {
	for _, nic := range p.Spec.NICs {
		if nic.Acceleration == tsv1.AccelerationBypass {
			return true
		}
	}
	return false
}

// injectBypass preloads the bypass library into the latency container: an init container copies it
// from the dataplane image into an emptyDir the latency container mounts read-only. The init
// container of a pod with exclusive CPUs asks for 100m CPU (requests equal limits, so the pod stays
// Guaranteed); one on shared CPUs asks for memory only, so it needs no CPU beyond the pod's own.
// The container gets the node daemon tickstack-xdpd's socket through the device plugin's resource
// (no volume in the pod spec), the profile's spec.bypass as environment, and a security context
// Pod Security "restricted" admits.
func injectBypass(pod *corev1.Pod, c *corev1.Container, p *tsv1.LatencyProfile, opts PodOptions, ifaces []string, exclusive bool) error {
	if !Bypass(p) {
		return nil
	}
	lib := DataplaneLibraryDir + "/" + DataplaneLibraryName
	for _, e := range c.Env {
		if e.Name == EnvPreload && e.Value != lib {
			return fmt.Errorf("container %s sets %s=%q, which the bypass stack of LatencyProfile %s needs for %s: remove it from the container, or choose acceleration kernel or busyPoll in the profile",
				c.Name, EnvPreload, e.Value, p.Name, lib)
		}
	}
	dropPrivileges(pod, c)
	addVolume(pod, corev1.Volume{Name: DataplaneVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	small := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
	if exclusive {
		small[corev1.ResourceCPU] = resource.MustParse("100m")
	}
	initC := corev1.Container{
		Name:            DataplaneInitContainer,
		Image:           opts.DataplaneImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/bin/sh", "-c", dataplaneCopyScript},
		Resources:       corev1.ResourceRequirements{Requests: small, Limits: small.DeepCopy()},
		VolumeMounts:    []corev1.VolumeMount{{Name: DataplaneVolume, MountPath: DataplaneLibraryDir}},
		SecurityContext: dataplaneInitSecurityContext(),
	}
	pod.Spec.InitContainers = append([]corev1.Container{initC}, pod.Spec.InitContainers...)
	addMount(c, corev1.VolumeMount{Name: DataplaneVolume, MountPath: DataplaneLibraryDir, ReadOnly: true})
	setEnvDefault(c, EnvPreload, lib)
	setEnvDefault(c, EnvDataplaneProfile, DataplaneLatencyProfile)
	if len(ifaces) > 0 {
		setEnvDefault(c, EnvDataplaneInterfaces, strings.Join(ifaces, ","))
	}
	require := "0"
	if p.Spec.RequireBypass() {
		require = "1"
	}
	setEnvDefault(c, EnvRequire, require)
	setEnvDefault(c, EnvTCP, tcpEnv[p.Spec.BypassTCPMode()])
	// The node daemon's socket: one unit of the xdpd DaemonSet's device plugin, whose allocation
	// the kubelet answers with a read-only mount of the daemon's <run dir>/node at XDPMountDir. The
	// pod spec shows no host path (Pod Security "restricted" admits it), the pod lands only on nodes
	// whose daemon serves, and the daemon tells the pod by the caller's network namespace, so every
	// container may get the same directory. Read-only: connecting to a socket needs no write access.
	setResource(c, tsv1.XDPDResource, *resource.NewQuantity(1, resource.DecimalSI))
	setEnvDefault(c, EnvXDPDSocket, XDPSocketInPod)
	return nil
}

// dropPrivileges gives the latency container nothing of admin rank: all capabilities dropped, none
// added (the container's own additions, which checkPodSecurity limited to AllowedCapabilities,
// kept), no privilege escalation, the runtime's default seccomp profile unless the pod or the
// container names one, and runAsNonRoot where the pod's uid is known (a non-zero runAsUser, which
// checkPodSecurity requires of any runAsUser): the webhook never picks a uid, which the image owns.
// The bypass stack needs no capability: tickstack-xdpd on the node attaches XDP, steers, and creates
// the container's AF_XDP sockets from the UMEM memfds the library passes (docs/dataplane.md,
// "Privilege model"), so Pod Security "restricted" admits the pod.
func dropPrivileges(pod *corev1.Pod, c *corev1.Container) {
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{}
	}
	c.SecurityContext = sc
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		sc.Capabilities.Drop = append(sc.Capabilities.Drop, "ALL")
	}
	sc.AllowPrivilegeEscalation = ptr.To(false)
	psc := pod.Spec.SecurityContext
	if sc.SeccompProfile == nil && (psc == nil || psc.SeccompProfile == nil) {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	uidKnown := sc.RunAsUser != nil || (psc != nil && psc.RunAsUser != nil)
	nonRootSaid := sc.RunAsNonRoot != nil || (psc != nil && psc.RunAsNonRoot != nil)
	if uidKnown && !nonRootSaid {
		sc.RunAsNonRoot = ptr.To(true)
	}
}

func setEnvDefault(c *corev1.Container, name, value string) {
	for _, e := range c.Env {
		if e.Name == name {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

func addVolume(pod *corev1.Pod, v corev1.Volume) {
	for _, have := range pod.Spec.Volumes {
		if have.Name == v.Name {
			return
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v)
}

func addMount(c *corev1.Container, m corev1.VolumeMount) {
	for _, have := range c.VolumeMounts {
		if have.Name == m.Name {
			return
		}
	}
	c.VolumeMounts = append(c.VolumeMounts, m)
}

// requireProfileNodes adds required node affinity to nodes where the profile is applied (and
// validated, when the profile asks), ANDed into every term the pod already has.
func requireProfileNodes(pod *corev1.Pod, p *tsv1.LatencyProfile) {
	exprs := []corev1.NodeSelectorRequirement{{Key: tsv1.ProfileLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{p.Name}}}
	// A benchmark's own pods validate the node: they cannot wait for it to be validated.
	_, benchmark := pod.Labels[tsv1.BenchmarkLabel]
	if p.Annotations[tsv1.RequireValidatedAnnotation] == "true" && !benchmark {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: tsv1.ValidatedLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{p.Name}})
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, exprs...)
	}
}
