// Package plan computes what applying a LatencyProfile would change on each node, without changing
// anything: the engine of `tickstack plan`.
package plan

import (
	"k8s.io/apimachinery/pkg/api/equality"

	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// Action is what would happen to one node.
type Action string

const (
	// Unchanged: the node keeps what it has.
	Unchanged Action = "unchanged"
	// Apply: the node's settings change.
	Apply Action = "apply"
	// Restore: the node goes back to its original settings.
	Restore Action = "restore"
	// WaitFacts: the node is selected, but its agent has not reported the facts to resolve against.
	WaitFacts Action = "waiting-for-facts"
	// Conflict: another profile of equal priority selects the node; it is left alone.
	Conflict Action = "conflict"
	// Outranked: a profile of higher priority keeps the node.
	Outranked Action = "outranked"
	// Invalid: the profile does not fit this node; nothing would change.
	Invalid Action = "invalid"
)

// Change is one setting that would change.
type Change struct {
	Setting string `json:"setting"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
}

// NodePlan is what would happen to one node.
type NodePlan struct {
	Node   string `json:"node"`
	Action Action `json:"action"`
	Reboot bool   `json:"reboot"`
	// KubeletRestart: the kubelet's settings (the profile's kubelet section, reservedSystemCPUs)
	// change without a reboot, so the kubelet restarts in the node's slot (drained first). With a
	// reboot the kubelet change rides on it and this is false.
	KubeletRestart bool     `json:"kubeletRestart,omitempty"`
	Changes        []Change `json:"changes,omitempty"`
	Detail         string   `json:"detail,omitempty"`
	// When says when the node would change (Schedule): at once, or in which reboot wave and from when.
	When string `json:"when,omitempty"`
	// BIOS is the BIOS part, when the profile has a bios section and the caller planned it.
	BIOS *BIOSPlan `json:"bios,omitempty"`

	// kernelReboot remembers whether the kernel arguments alone need the reboot.
	kernelReboot bool
}

// Plan is the whole answer.
type Plan struct {
	Profile string     `json:"profile"`
	Nodes   []NodePlan `json:"nodes"`
}

// Compute plans profile p against the cluster's nodes, the other profiles and the node states. p
// replaces any existing profile of the same name.
func Compute(p *tsv1.LatencyProfile, nodes []corev1.Node, profiles []tsv1.LatencyProfile, states []tsv1.LatencyNodeState) (*Plan, error) {
	all := []tsv1.LatencyProfile{*p}
	for _, o := range profiles {
		if o.Name != p.Name {
			all = append(all, o)
		}
	}
	byNode := map[string]*tsv1.LatencyNodeState{}
	for i := range states {
		byNode[states[i].Name] = &states[i]
	}
	out := &Plan{Profile: p.Name}
	selected := map[string]bool{}
	sorted := append([]corev1.Node{}, nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	mine, arbiter := resolve.CompileSelector(p), resolve.NewArbiter(all)
	for i := range sorted {
		node := &sorted[i]
		ok, err := mine.Selects(node)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		selected[node.Name] = true
		out.Nodes = append(out.Nodes, planNode(p, node, arbiter.Node(node), byNode[node.Name]))
	}
	// Nodes this profile holds today but would no longer select go back to their originals.
	for _, name := range slices.Sorted(maps.Keys(byNode)) {
		lns := byNode[name]
		if lns.Spec.Profile.Name == p.Name && !selected[name] {
			np := NodePlan{Node: name, Action: Restore, Detail: "no longer selected: the agent restores the original host values"}
			have := resolve.DesiredTuning(lns)
			np.Reboot = have != nil && len(have.KernelArgs) > 0 && anyIn(have.KernelArgs, cmdline(lns))
			if have != nil && have.Kubelet != nil {
				np.KubeletRestart = true
				np.Detail += "; the kubelet gets its original settings back: the node is drained and the kubelet restarted at once (the profile's rollout budget no longer applies)"
			}
			out.Nodes = append(out.Nodes, np)
		}
	}
	return out, nil
}

func planNode(p *tsv1.LatencyProfile, node *corev1.Node, a resolve.Arbitration, lns *tsv1.LatencyNodeState) NodePlan {
	np := NodePlan{Node: node.Name}
	switch {
	case len(a.Tied) > 0:
		np.Action = Conflict
		np.Detail = fmt.Sprintf("also selected by %s at priority %d: left as it is until one profile has a higher priority", strings.Join(a.TiedWith(p.Name), ", "), a.Priority)
		return np
	case a.Winner != p.Name:
		np.Action = Outranked
		np.Detail = fmt.Sprintf("profile %s has the higher priority %d and keeps the node", a.Winner, a.Priority)
		return np
	}
	var facts *tsv1.NodeFacts
	var current *tsv1.NodeTuning
	if lns != nil {
		facts = lns.Status.Facts
		if lns.Spec.Profile.Name == p.Name {
			current = resolve.DesiredTuning(lns) // a node that resolves its own: what its agent resolved
		} else {
			np.Detail = fmt.Sprintf("taken over from profile %s: its settings are restored first", lns.Spec.Profile.Name)
		}
	}
	want, err := resolve.Node(&p.Spec, facts)
	switch {
	case errors.Is(err, resolve.ErrNoFacts):
		np.Action = WaitFacts
		np.Detail = "the node's agent has not reported its host facts yet: settings are resolved once it does"
		return np
	case err != nil:
		np.Action = Invalid
		np.Detail = err.Error()
		return np
	}
	np.Changes = Diff(current, want)
	np.Reboot = needsReboot(current, want, facts)
	np.KubeletRestart = !np.Reboot && needsKubeletRestart(current, want)
	if np.Reboot && needsKubeletRestart(current, want) {
		np.Detail = strings.TrimPrefix(np.Detail+"; the kubelet's new settings go in with the reboot (no separate kubelet restart)", "; ")
	}
	np.Action = Apply
	if len(np.Changes) == 0 && !np.Reboot && !np.KubeletRestart {
		np.Action = Unchanged
	}
	return np
}

// needsReboot reports whether the kernel command line would have to change: a wanted argument is not
// on the running kernel's command line, or an argument tickstack set before would have to go.
func needsReboot(current, want *tsv1.NodeTuning, facts *tsv1.NodeFacts) bool {
	running := strings.Fields(facts.KernelCmdline)
	for _, a := range want.KernelArgs {
		if !slices.Contains(running, a) {
			return true
		}
	}
	if current != nil {
		for _, a := range current.KernelArgs {
			if !slices.Contains(want.KernelArgs, a) && slices.Contains(running, a) {
				return true
			}
		}
	}
	return false
}

// needsKubeletRestart reports whether the kubelet must restart: its drop-in would change (the
// kubelet section or, with one, the reserved or shared CPUs, its reservedSystemCPUs), or, with one, the
// offlined CPUs change (the static CPU manager learns the online CPUs only when it starts, with
// new checkpoints). A node new to the profile restarts unless its kubelet already runs with the
// drop-in, which only the agent can tell.
func needsKubeletRestart(current, want *tsv1.NodeTuning) bool {
	var from *tsv1.KubeletTuning
	fromCPUs, fromShared, fromOfflined := tsv1.CPUSet(""), tsv1.CPUSet(""), tsv1.CPUSet("")
	if current != nil {
		from, fromCPUs, fromShared, fromOfflined = current.Kubelet, current.ReservedCPUs, current.SharedCPUs, current.OfflinedCPUs
	}
	switch {
	case want.Kubelet == nil:
		return from != nil
	case from == nil:
		return true
	}
	return fromCPUs != want.ReservedCPUs || fromShared != want.SharedCPUs || fromOfflined != want.OfflinedCPUs || !equality.Semantic.DeepEqual(from, want.Kubelet)
}

func cmdline(lns *tsv1.LatencyNodeState) []string {
	if lns.Status.Facts == nil {
		return nil
	}
	return strings.Fields(lns.Status.Facts.KernelCmdline)
}

func anyIn(args, running []string) bool {
	for _, a := range args {
		if slices.Contains(running, a) {
			return true
		}
	}
	return false
}

// Diff lists the settings that differ between two tunings, by a flat setting name. Kernel arguments
// are compared as a set, one change per added or removed argument.
func Diff(from, to *tsv1.NodeTuning) []Change {
	a, b := flatten(from), flatten(to)
	var out []Change
	for _, k := range unionKeys(a, b) {
		if a[k] != b[k] {
			out = append(out, Change{Setting: k, From: a[k], To: b[k]})
		}
	}
	var fromArgs, toArgs []string
	if from != nil {
		fromArgs = from.KernelArgs
	}
	if to != nil {
		toArgs = to.KernelArgs
	}
	for _, arg := range toArgs {
		if !slices.Contains(fromArgs, arg) {
			out = append(out, Change{Setting: "kernel argument", To: arg})
		}
	}
	for _, arg := range fromArgs {
		if !slices.Contains(toArgs, arg) {
			out = append(out, Change{Setting: "kernel argument", From: arg})
		}
	}
	return out
}

// flatten turns a tuning into setting-name -> value, through its JSON form so that every field the
// API grows is compared without this function having to know it.
func flatten(t *tsv1.NodeTuning) map[string]string {
	out := map[string]string{}
	if t == nil {
		return out
	}
	c := *t
	c.KernelArgs = nil
	nics := c.NICs
	c.NICs = nil
	var v map[string]any
	raw, _ := json.Marshal(c)
	_ = json.Unmarshal(raw, &v)
	walk("", v, out)
	for _, n := range nics {
		var nv map[string]any
		raw, _ := json.Marshal(n)
		_ = json.Unmarshal(raw, &nv)
		walk("nic/"+n.Interface, nv, out)
	}
	return out
}

func walk(prefix string, v any, out map[string]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walk(join(k), e, out)
		}
	case []any:
		for i, e := range x {
			walk(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	default:
		out[prefix] = fmt.Sprint(x)
	}
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// Print writes the plan for a person.
func (p *Plan) Print(w io.Writer) {
	changing, reboots, restarts := 0, 0, 0
	for _, n := range p.Nodes {
		if n.Action == Apply || n.Action == Restore {
			changing++
		}
		if n.Reboot {
			reboots++
		}
		if n.KubeletRestart {
			restarts++
		}
	}
	fmt.Fprintf(w, "Profile %s: %d nodes in the plan, %d would change, %d would reboot, %d would restart their kubelet\n", p.Profile, len(p.Nodes), changing, reboots, restarts)
	for _, n := range p.Nodes {
		head := fmt.Sprintf("\nnode %s: %s", n.Node, n.Action)
		switch {
		case n.Reboot:
			head += n.rebootText()
		case n.KubeletRestart:
			head += " (kubelet restart: drained, the kubelet restarted with new CPU and memory manager state, uncordoned; no reboot)"
		}
		fmt.Fprintln(w, head)
		if n.When != "" {
			fmt.Fprintf(w, "  when: %s\n", n.When)
		}
		if n.Detail != "" {
			fmt.Fprintf(w, "  %s\n", n.Detail)
		}
		for _, c := range n.Changes {
			switch {
			case c.From == "":
				fmt.Fprintf(w, "  + %s: %s\n", c.Setting, c.To)
			case c.To == "":
				fmt.Fprintf(w, "  - %s: %s\n", c.Setting, c.From)
			default:
				fmt.Fprintf(w, "  ~ %s: %s -> %s\n", c.Setting, c.From, c.To)
			}
		}
		n.printBIOS(func(format string, args ...any) { fmt.Fprintf(w, format, args...) })
	}
}
