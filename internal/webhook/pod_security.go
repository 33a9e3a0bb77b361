package webhook

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// What an opted-in pod may not ask for (docs/pod-webhook.md, "What a latency pod may not ask for").
// A bypass pod can run under Pod Security "restricted" (no capability, no host path: the node
// daemon's socket comes from the device plugin, tsv1.XDPDResource), but its namespace need not
// enforce it, so the webhook and the ValidatingAdmissionPolicy config/webhook/pod_policy.yaml (the
// same rules, after every mutation) hold every container of a labelled pod to these rules whatever
// its namespace allows.

// ReservedVolumes are the volume names the webhook injects: a pod that declares one is refused, so
// no pod can bring its own volume (a hostPath anywhere) under a name the webhook trusts.
var ReservedVolumes = []string{XDPVolume, DataplaneVolume, HugepagesVolume}

// AllowedCapabilities are the only capabilities a container of a labelled pod may add: those of the
// bypass stack's fallback mode (TICKSTACK_XDPD_MODE=netraw: NET_RAW for AF_XDP sockets the process
// creates, IPC_LOCK for their UMEM; by default tickstack-xdpd creates them and the container needs
// none) and SYS_NICE (real-time priority of a latency thread on its own exclusive CPUs; the
// benchmark's runner uses it).
var AllowedCapabilities = []corev1.Capability{"NET_RAW", "IPC_LOCK", "SYS_NICE"}

// DataplaneInitUser is the uid and gid the injected init container runs as: it only copies
// world-readable files into an emptyDir.
const DataplaneInitUser int64 = 65532

// PodSecurityFix is the end of every security refusal.
const podSecurityFix = "latency pods get no host namespace, privilege or admin capability (docs/pod-webhook.md)"

// checkPodSecurity refuses a labelled pod that asks for what the opt-in must not give: host
// namespaces, privileged or root containers, capabilities beyond AllowedCapabilities, an unconfined
// seccomp profile, or a volume, mount or init container under a name the webhook injects.
func checkPodSecurity(pod *corev1.Pod) error {
	s := &pod.Spec
	for _, f := range []struct {
		field string
		on    bool
	}{{"spec.hostNetwork", s.HostNetwork}, {"spec.hostPID", s.HostPID}, {"spec.hostIPC", s.HostIPC}} {
		if f.on {
			return fmt.Errorf("%s is true: remove it; %s", f.field, podSecurityFix)
		}
	}
	if psc := s.SecurityContext; psc != nil {
		if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
			return fmt.Errorf("spec.securityContext.runAsUser is 0: remove it or run as a non-zero uid; %s", podSecurityFix)
		}
		if unconfined(psc.SeccompProfile) {
			return fmt.Errorf("spec.securityContext.seccompProfile.type is Unconfined: use RuntimeDefault or remove it; %s", podSecurityFix)
		}
	}
	for i, v := range s.Volumes {
		if slices.Contains(ReservedVolumes, v.Name) {
			return fmt.Errorf("spec.volumes[%d].name %q is reserved for the volumes the tickstack webhook injects (%s): rename the volume",
				i, v.Name, strings.Join(ReservedVolumes, ", "))
		}
	}
	for i, c := range s.InitContainers {
		if c.Name == DataplaneInitContainer {
			return fmt.Errorf("spec.initContainers[%d].name %q is reserved for the init container the tickstack webhook injects: rename the container", i, c.Name)
		}
	}
	for _, c := range allContainers(pod) {
		if err := checkContainer(c); err != nil {
			return err
		}
	}
	return nil
}

// podContainer is one container of a pod with the path of its field.
type podContainer struct {
	path string // spec.containers[0]
	name string
	sc   *corev1.SecurityContext
	vm   []corev1.VolumeMount
}

// allContainers lists the containers, init containers and ephemeral containers of a pod.
func allContainers(pod *corev1.Pod) []podContainer {
	var out []podContainer
	for i, c := range pod.Spec.InitContainers {
		out = append(out, podContainer{fmt.Sprintf("spec.initContainers[%d]", i), c.Name, c.SecurityContext, c.VolumeMounts})
	}
	for i, c := range pod.Spec.Containers {
		out = append(out, podContainer{fmt.Sprintf("spec.containers[%d]", i), c.Name, c.SecurityContext, c.VolumeMounts})
	}
	for i, c := range pod.Spec.EphemeralContainers {
		out = append(out, podContainer{fmt.Sprintf("spec.ephemeralContainers[%d]", i), c.Name, c.SecurityContext, c.VolumeMounts})
	}
	return out
}

func checkContainer(c podContainer) error {
	for j, m := range c.vm {
		if slices.Contains(ReservedVolumes, m.Name) {
			return fmt.Errorf("%s.volumeMounts[%d].name %q (container %s) is reserved for the volumes the tickstack webhook injects: rename the mount and its volume",
				c.path, j, m.Name, c.name)
		}
	}
	sc := c.sc
	if sc == nil {
		return nil
	}
	at := func(field string) string {
		return fmt.Sprintf("%s.securityContext.%s (container %s)", c.path, field, c.name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		return fmt.Errorf("%s is true: remove it; the node daemon tickstack-xdpd attaches XDP, so %s", at("privileged"), podSecurityFix)
	}
	if sc.AllowPrivilegeEscalation != nil && *sc.AllowPrivilegeEscalation {
		return fmt.Errorf("%s is true: remove it; %s", at("allowPrivilegeEscalation"), podSecurityFix)
	}
	if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		return fmt.Errorf("%s is 0: remove it or run as a non-zero uid; %s", at("runAsUser"), podSecurityFix)
	}
	if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
		return fmt.Errorf("%s is Unmasked: remove it; %s", at("procMount"), podSecurityFix)
	}
	if unconfined(sc.SeccompProfile) {
		return fmt.Errorf("%s is Unconfined: use RuntimeDefault or remove it; %s", at("seccompProfile.type"), podSecurityFix)
	}
	if sc.Capabilities != nil {
		for j, x := range sc.Capabilities.Add {
			if !slices.Contains(AllowedCapabilities, corev1.Capability(strings.TrimPrefix(strings.ToUpper(string(x)), "CAP_"))) {
				return fmt.Errorf("%s adds capability %s: remove it; a latency pod may add only %v (the bypass container needs none: tickstack-xdpd creates its AF_XDP sockets), and %s",
					at(fmt.Sprintf("capabilities.add[%d]", j)), x, AllowedCapabilities, podSecurityFix)
			}
		}
	}
	return nil
}

func unconfined(p *corev1.SeccompProfile) bool {
	return p != nil && p.Type == corev1.SeccompProfileTypeUnconfined
}

// dataplaneInitSecurityContext is the injected init container's: Pod Security "restricted" and a
// read-only root file system; it writes only to the emptyDir it fills.
func dataplaneInitSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(DataplaneInitUser),
		RunAsGroup:               ptr.To(DataplaneInitUser),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// +kubebuilder:webhook:path=/validate--v1-pod-ephemeralcontainers,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods/ephemeralcontainers,verbs=update,versions=v1,name=vpodephemeral.tickstack.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"objectSelector":{"matchExpressions":[{"key":"tickstack.io/profile","operator":"Exists"}]}}`

// EphemeralContainerWebhookPath is where the ephemeral container check is served.
const EphemeralContainerWebhookPath = "/validate--v1-pod-ephemeralcontainers"

// EphemeralContainerValidator holds a debug container added to a labelled pod (kubectl debug, the
// pods/ephemeralcontainers subresource) to the rules the pod itself was admitted under.
type EphemeralContainerValidator struct {
	Decoder admission.Decoder
}

// Handle admits or refuses one update of a pod's ephemeral containers.
func (v *EphemeralContainerValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := v.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	if _, ok := pod.Labels[tsv1.ProfileLabel]; !ok {
		return admission.Allowed("not a latency pod")
	}
	for i, c := range pod.Spec.EphemeralContainers {
		pc := podContainer{fmt.Sprintf("spec.ephemeralContainers[%d]", i), c.Name, c.SecurityContext, c.VolumeMounts}
		if err := checkContainer(pc); err != nil {
			return admission.Denied(err.Error())
		}
	}
	return admission.Allowed("")
}
