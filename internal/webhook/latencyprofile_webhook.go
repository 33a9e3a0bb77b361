// Package webhook holds the operator's admission webhooks.
package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/cpuset"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/policy"
	"github.com/tickstack/tickstack/internal/rollout"
)

// maxCPUID is the largest CPU id Linux can have (NR_CPUS is at most 8192).
const maxCPUID = 8191

// +kubebuilder:webhook:path=/validate-tickstack-io-v1alpha1-latencyprofile,mutating=false,failurePolicy=fail,sideEffects=None,groups=tickstack.io,resources=latencyprofiles,verbs=create;update,versions=v1alpha1,name=vlatencyprofile.tickstack.io,admissionReviewVersions=v1

// LatencyProfileValidator checks what the CRD's schema and CEL rules cannot: cpulist contents, label
// selector operators, sysctl value ranges, SR-IOV pfNames ranges.
type LatencyProfileValidator struct{}

var _ admission.Validator[*tsv1.LatencyProfile] = LatencyProfileValidator{}

// SetupLatencyProfileWebhook registers the validator with the manager's webhook server.
func SetupLatencyProfileWebhook(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &tsv1.LatencyProfile{}).WithValidator(LatencyProfileValidator{}).Complete()
}

// ValidateCreate checks a new profile.
func (LatencyProfileValidator) ValidateCreate(_ context.Context, p *tsv1.LatencyProfile) (admission.Warnings, error) {
	return validate(p)
}

// ValidateUpdate checks a changed profile.
func (LatencyProfileValidator) ValidateUpdate(_ context.Context, _, p *tsv1.LatencyProfile) (admission.Warnings, error) {
	return validate(p)
}

// ValidateDelete allows every deletion: the operator restores the nodes first.
func (LatencyProfileValidator) ValidateDelete(context.Context, *tsv1.LatencyProfile) (admission.Warnings, error) {
	return nil, nil
}

func validate(p *tsv1.LatencyProfile) (admission.Warnings, error) {
	warnings, errs := ValidateProfileSpec(&p.Spec, field.NewPath("spec"))
	if len(errs) == 0 {
		return warnings, nil
	}
	return warnings, apierrors.NewInvalid(tsv1.GroupVersion.WithKind("LatencyProfile").GroupKind(), p.Name, errs)
}

// ValidateProfileSpec returns every problem of a profile spec with its field path and the fix.
func ValidateProfileSpec(spec *tsv1.LatencyProfileSpec, path *field.Path) (admission.Warnings, field.ErrorList) {
	var errs field.ErrorList
	var warnings admission.Warnings
	if _, err := metav1.LabelSelectorAsSelector(&spec.NodeSelector); err != nil {
		errs = append(errs, field.Invalid(path.Child("nodeSelector"), spec.NodeSelector, err.Error()))
	}
	if c := spec.CPU; c != nil {
		reserved, rErrs := validCPUSet(path.Child("cpu", "reserved"), c.Reserved)
		isolated, iErrs := validCPUSet(path.Child("cpu", "isolated"), c.Isolated)
		errs = append(errs, rErrs...)
		errs = append(errs, iErrs...)
		if len(rErrs) == 0 && len(iErrs) == 0 {
			if reserved.Size() == 0 {
				errs = append(errs, field.Required(path.Child("cpu", "reserved"), "reserve at least one CPU for the system and the kubelet"))
			}
			if both := reserved.Intersection(isolated); both.Size() > 0 {
				errs = append(errs, field.Invalid(path.Child("cpu", "isolated"), c.Isolated,
					fmt.Sprintf("CPUs %s are also in cpu.reserved (%s): reserved and isolated must be disjoint", both, c.Reserved)))
			}
		}
		offlined, oErrs := validOfflined(path.Child("cpu", "offlined"), c, reserved, isolated)
		errs = append(errs, oErrs...)
		errs = append(errs, validShared(path.Child("cpu", "shared"), c, map[string]cpuset.CPUSet{"reserved": reserved, "isolated": isolated, "offlined": offlined})...)
		if c.IsolationMode == tsv1.IsolationStrict && c.Isolated == "" {
			warnings = append(warnings, "spec.cpu.isolationMode Strict has no effect without spec.cpu.isolated")
		}
	}
	if h := spec.Hugepages; h != nil {
		for i, pg := range h.Pages {
			if pg.Size == tsv1.HugePageSize1Gi && pg.Node != nil {
				warnings = append(warnings, fmt.Sprintf("spec.hugepages.pages[%d]: 1Gi pages on a given NUMA node are allocated at runtime and may fall short on fragmented memory; leave node unset to reserve them at boot", i))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Sysctls)) {
		if msg := sysctlValueProblem(k, string(spec.Sysctls[k])); msg != "" {
			errs = append(errs, field.Invalid(path.Child("sysctls").Key(k), spec.Sysctls[k], msg))
		}
	}
	for i, n := range spec.NICs {
		for j, pf := range n.Selector.PFNames {
			if msg := pfNameProblem(pf); msg != "" {
				errs = append(errs, field.Invalid(path.Child("nics").Index(i).Child("selector", "pfNames").Index(j), pf, msg))
			}
		}
	}
	if r := spec.Rollout; r != nil && r.DrainTimeout != nil {
		if d := r.DrainTimeout.Duration; d < 30*time.Second || d > 24*time.Hour {
			errs = append(errs, field.Invalid(path.Child("rollout", "drainTimeout"), r.DrainTimeout.String(),
				"must be between 30s and 24h: pods need time to leave, and a node must not stay cordoned for days"))
		}
	}
	if k := spec.Kubelet; k != nil {
		if spec.CPU == nil {
			errs = append(errs, field.Required(path.Child("cpu"), "kubelet: reservedSystemCPUs follows cpu.reserved; add cpu.reserved or remove kubelet"))
		}
		for _, f := range []struct {
			name string
			q    *resource.Quantity
		}{{"systemReservedMemory", k.SystemReservedMemory}, {"evictionHardMemory", k.EvictionHardMemory}} {
			if name, q := f.name, f.q; q != nil && q.Sign() <= 0 {
				errs = append(errs, field.Invalid(path.Child("kubelet", name), q.String(), "must be above 0: the Static memory manager reserves this memory on the reserved CPUs' NUMA node; leave it unset for the default"))
			}
		}
	}
	if r := spec.Rollout; r != nil {
		for i, w := range r.Windows {
			if err := rollout.CheckWindow(w); err != nil {
				errs = append(errs, field.Invalid(path.Child("rollout", "windows").Index(i), w, err.Error()))
			}
		}
		if r.MaxUnavailablePerDomain != nil && r.TopologyKey == "" {
			warnings = append(warnings, "spec.rollout.maxUnavailablePerDomain has no effect without spec.rollout.topologyKey")
		}
	}
	errs = append(errs, validPodControls(spec, path)...)
	return warnings, errs
}

// validPodControls refuses a per-pod control on a setting the profile also owns node-wide: the
// agent keeps its value on every CPU and would take a pod's change for drift and write it back.
func validPodControls(spec *tsv1.LatencyProfileSpec, path *field.Path) field.ErrorList {
	if spec.PodControls == nil || spec.Power == nil {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.PodControls.Allow {
		switch {
		case c == tsv1.PodControlCPUCStates && spec.Power.MaxCStateExitLatencyMicroseconds != nil:
			errs = append(errs, field.Invalid(path.Child("podControls", "allow").Index(i), c,
				"spec.power.maxCStateExitLatencyMicroseconds sets the C-states of every CPU, which the agent keeps: remove one of the two"))
		case c == tsv1.PodControlCPUFreqGovernor && spec.Power.Governor != "":
			errs = append(errs, field.Invalid(path.Child("podControls", "allow").Index(i), c,
				"spec.power.governor sets the governor of every CPU, which the agent keeps: remove one of the two"))
		}
	}
	return errs
}

// validOfflined refuses offlining CPU 0 (the CRD's CEL rule says so too, for clients that skip
// the webhook) and the reserved or isolated CPUs, which the node needs online.
func validOfflined(path *field.Path, c *tsv1.CPUSpec, reserved, isolated cpuset.CPUSet) (cpuset.CPUSet, field.ErrorList) {
	offlined, errs := validCPUSet(path, c.Offlined)
	if len(errs) > 0 {
		return offlined, errs
	}
	if offlined.Contains(0) {
		errs = append(errs, field.Invalid(path, c.Offlined, "CPU 0 cannot be taken offline (the boot CPU; most kernels have no cpu0/online): remove it from cpu.offlined"))
	}
	for _, other := range []struct {
		name string
		set  cpuset.CPUSet
	}{{"reserved", reserved}, {"isolated", isolated}} {
		if both := offlined.Intersection(other.set); both.Size() > 0 {
			errs = append(errs, field.Invalid(path, c.Offlined,
				fmt.Sprintf("CPUs %s are also in cpu.%s: a CPU the node runs work on cannot be offline; remove them from cpu.offlined or from cpu.%s", both, other.name, other.name)))
		}
	}
	return offlined, errs
}

// validShared refuses shared CPUs that are also reserved, isolated or offlined: the pool is a
// set of its own (the kubelet gets it beside cpu.reserved in reservedSystemCPUs).
func validShared(path *field.Path, c *tsv1.CPUSpec, others map[string]cpuset.CPUSet) field.ErrorList {
	shared, errs := validCPUSet(path, c.Shared)
	if len(errs) > 0 {
		return errs
	}
	for _, name := range slices.Sorted(maps.Keys(others)) {
		if both := shared.Intersection(others[name]); both.Size() > 0 {
			errs = append(errs, field.Invalid(path, c.Shared,
				fmt.Sprintf("CPUs %s are also in cpu.%s: the shared pool is a set of CPUs of its own; remove them from cpu.shared or from cpu.%s", both, name, name)))
		}
	}
	return errs
}

func validCPUSet(path *field.Path, s tsv1.CPUSet) (cpuset.CPUSet, field.ErrorList) {
	cs, err := cpuset.Parse(string(s))
	if err != nil {
		return cs, field.ErrorList{field.Invalid(path, s, "not a cpulist: write CPU ids and ascending ranges, for example \"0-3,8\"")}
	}
	if l := cs.List(); len(l) > 0 && l[len(l)-1] > maxCPUID {
		return cs, field.ErrorList{field.Invalid(path, s, fmt.Sprintf("CPU %d does not exist on any Linux machine: CPU ids go up to %d", l[len(l)-1], maxCPUID))}
	}
	return cs, nil
}

func sysctlValueProblem(key, value string) string {
	info, ok := policy.AllowedSysctls()[key]
	if !ok {
		return "" // the CRD's CEL rule names unknown keys
	}
	if err := info.Check(value); err != nil {
		return fmt.Sprintf("%v: %s", err, info.Why)
	}
	return ""
}

// pfNameProblem checks the SR-IOV device plugin's pfNames form: NAME or NAME#FIRST-LAST.
func pfNameProblem(pf string) string {
	name, vfs, hasRange := strings.Cut(pf, "#")
	if name == "" {
		return "needs an interface name before '#'"
	}
	if !hasRange {
		return ""
	}
	a, b, ok := strings.Cut(vfs, "-")
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return "VF range must be NAME#FIRST-LAST with FIRST <= LAST, for example ens1f0#0-3"
	}
	return ""
}
