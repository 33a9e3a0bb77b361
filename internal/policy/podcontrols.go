package policy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// PodControlRequest is what a pod's per-pod control annotations ask for (docs/agent.md "Per-pod
// controls"). The pod webhook parses it to admit the pod, the node's NRI plugin to apply it: one
// parser, so both read the same values.
type PodControlRequest struct {
	// IRQLoadBalancing: "" (not asked), "disable" or "housekeeping". Both steer device interrupts
	// off the pod's exclusive CPUs; tickstack keeps no per-pod housekeeping CPU, so the two act
	// alike (CRI-O's housekeeping value keeps the sibling threads for interrupts, which a pod with
	// whole cores does not give up here either).
	IRQLoadBalancing string
	// CStates: "" (not asked), "enable", "disable" or "max_latency".
	CStates string
	// CStateMaxLatencyMicroseconds is N of max_latency:N.
	CStateMaxLatencyMicroseconds int
	// Governor is the cpufreq governor, "" when not asked.
	Governor string
	// DisableCPUQuota: cpu-quota "disable".
	DisableCPUQuota bool
}

// Controls lists the controls the request asks for.
func (r PodControlRequest) Controls() []tsv1.PodControl {
	var out []tsv1.PodControl
	if r.IRQLoadBalancing != "" {
		out = append(out, tsv1.PodControlIRQLoadBalancing)
	}
	if r.CStates != "" {
		out = append(out, tsv1.PodControlCPUCStates)
	}
	if r.Governor != "" {
		out = append(out, tsv1.PodControlCPUFreqGovernor)
	}
	if r.DisableCPUQuota {
		out = append(out, tsv1.PodControlCPUQuota)
	}
	return out
}

// Empty says that no control is asked for.
func (r PodControlRequest) Empty() bool { return len(r.Controls()) == 0 }

// governorName is what a cpufreq governor's name looks like (scaling_available_governors).
var governorName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// ParsePodControls reads a pod's per-pod control annotations. A bad value is an error naming the
// annotation and the values it takes.
func ParsePodControls(annotations map[string]string) (PodControlRequest, error) {
	var r PodControlRequest
	if v, ok := annotations[tsv1.IRQLoadBalancingAnnotation]; ok {
		switch v {
		case "disable", "housekeeping":
			r.IRQLoadBalancing = v
		default:
			return r, fmt.Errorf("annotation %s=%q: the value must be \"disable\" or \"housekeeping\"", tsv1.IRQLoadBalancingAnnotation, v)
		}
	}
	if v, ok := annotations[tsv1.CPUCStatesAnnotation]; ok {
		switch {
		case v == "enable" || v == "disable":
			r.CStates = v
		case strings.HasPrefix(v, "max_latency:"):
			n, err := strconv.Atoi(strings.TrimPrefix(v, "max_latency:"))
			if err != nil || n < 0 || n > 10_000_000 {
				return r, fmt.Errorf("annotation %s=%q: max_latency takes a whole number of microseconds (0 to 10000000), e.g. max_latency:10", tsv1.CPUCStatesAnnotation, v)
			}
			r.CStates, r.CStateMaxLatencyMicroseconds = "max_latency", n
		default:
			return r, fmt.Errorf("annotation %s=%q: the value must be \"enable\", \"disable\" or \"max_latency:N\" (microseconds)", tsv1.CPUCStatesAnnotation, v)
		}
	}
	if v, ok := annotations[tsv1.CPUFreqGovernorAnnotation]; ok {
		if !governorName.MatchString(v) {
			return r, fmt.Errorf("annotation %s=%q: the value must name a cpufreq governor, such as performance", tsv1.CPUFreqGovernorAnnotation, v)
		}
		r.Governor = v
	}
	if v, ok := annotations[tsv1.CPUQuotaAnnotation]; ok {
		if v != "disable" {
			return r, fmt.Errorf("annotation %s=%q: the only value is \"disable\"", tsv1.CPUQuotaAnnotation, v)
		}
		r.DisableCPUQuota = true
	}
	return r, nil
}

// PodControlsNotAllowed returns an error naming the first annotation of r whose control allow does
// not list, nil when every one is allowed.
func PodControlsNotAllowed(r PodControlRequest, allow []tsv1.PodControl, where string) error {
	for _, c := range r.Controls() {
		ok := false
		for _, a := range allow {
			ok = ok || a == c
		}
		if !ok {
			return fmt.Errorf("annotation %s: %s does not allow the control %s; add it to spec.podControls.allow of the profile or remove the annotation",
				c.Annotation(), where, c)
		}
	}
	return nil
}
