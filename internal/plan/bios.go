package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
)

// BIOSPlan is what a profile's bios section would change on one node, read from its BMC.
type BIOSPlan struct {
	// BMC is the endpoint the plan was read from.
	BMC string
	// Changes has one entry per attribute whose value would change ("bios/<name>").
	Changes []Change
	// Reboot: the changes take effect at a reboot (the same one as the kernel arguments).
	Reboot bool
	// Refused is the attribute registry's refusal, when it refuses; nothing would be staged.
	Refused string
	// NotPlanned says why the BIOS part could not be planned (no BMC, credentials not readable
	// with the caller's kubeconfig user, BMC not reachable from here).
	NotPlanned string
}

// WantedBIOS merges a vendor preset's attributes (the BMC's own vendor for Auto) under the
// profile's explicit attributes: what the operator stages.
func WantedBIOS(spec *tsv1.BIOSSpec, vendor bmc.Vendor) (bmc.Attributes, error) {
	out := bmc.Attributes{}
	if spec.Preset != "" && spec.Preset != tsv1.BIOSPresetNone {
		v := bmc.Vendor(spec.Preset)
		if spec.Preset == tsv1.BIOSPresetAuto {
			if vendor == "" {
				return nil, fmt.Errorf("the BMC's manufacturer matches no vendor preset (Auto)")
			}
			v = vendor
		}
		p, err := bmc.PresetFor(v)
		if err != nil {
			return nil, err
		}
		attrs, err := p.LowLatencyAttributes()
		if err != nil {
			return nil, err
		}
		for k, val := range attrs {
			out[k] = val
		}
	}
	for _, a := range spec.Attributes {
		out[a.Name] = a.Value
	}
	return out, nil
}

// BMCName is the BMC object of a node: its tickstack.io/bmc annotation, or the node's name.
func BMCName(node *corev1.Node) string {
	if v := node.Annotations[tsv1.BMCAnnotation]; v != "" {
		return v
	}
	return node.Name
}

// BMCConfig turns a BMC object and its credentials Secret into a bmc.Config. The error names the
// missing key.
func BMCConfig(obj *tsv1.BMC, secret *corev1.Secret) (bmc.Config, error) {
	ref := obj.Spec.CredentialsSecret
	for _, key := range []string{"username", "password"} {
		if len(secret.Data[key]) == 0 {
			return bmc.Config{}, fmt.Errorf("BMC %s spec.credentialsSecret: Secret %s/%s has no %s key; add it", obj.Name, ref.Namespace, ref.Name, key)
		}
	}
	cfg := bmc.Config{
		Endpoint:       obj.Spec.Endpoint,
		SystemID:       obj.Spec.SystemID,
		Credentials:    bmc.Credentials{Username: string(secret.Data["username"]), Password: string(secret.Data["password"])},
		AllowPlainHTTP: obj.Spec.AllowPlainHTTP,
	}
	if t := obj.Spec.TLS; t != nil {
		if t.CABundle != "" {
			cfg.CABundle = []byte(t.CABundle)
		}
		cfg.SystemRoots, cfg.InsecureSkipVerify = t.SystemRoots, t.InsecureSkipVerify
	}
	return cfg, nil
}

// BIOSFromPlan is the plan's view of a Redfish BIOS plan.
func BIOSFromPlan(endpoint string, p *bmc.Plan) *BIOSPlan {
	bp := &BIOSPlan{BMC: endpoint, Reboot: p.ResetRequired}
	for _, c := range p.Changes {
		switch c.Action {
		case bmc.ActionSet, bmc.ActionOverridePending:
			bp.Changes = append(bp.Changes, Change{Setting: "bios/" + c.Attribute, From: c.Current, To: c.Desired})
		case bmc.ActionAlreadyPending:
			bp.Changes = append(bp.Changes, Change{Setting: "bios/" + c.Attribute, From: c.Current, To: c.Desired + " (already staged)"})
		}
	}
	return bp
}

// AddBIOS attaches a node's BIOS plan: BIOS changes make the node change, and their reboot is the
// node's one reboot (shared with its kernel arguments).
func (p *Plan) AddBIOS(node string, bp *BIOSPlan) {
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Node != node {
			continue
		}
		n.BIOS = bp
		if bp.Reboot || len(bp.Changes) > 0 {
			if n.Action == Unchanged {
				n.Action = Apply
			}
		}
		n.kernelReboot = n.Reboot
		n.Reboot = n.Reboot || bp.Reboot
	}
}

// rebootText says why a node reboots.
func (n *NodePlan) rebootText() string {
	bios := n.BIOS != nil && n.BIOS.Reboot
	switch {
	case bios && n.kernelReboot:
		return " (reboot required: one reboot for the kernel arguments and the BIOS settings)"
	case bios:
		return " (reboot required: BIOS settings)"
	}
	return " (reboot required)"
}

func (n *NodePlan) printBIOS(w func(format string, args ...any)) {
	b := n.BIOS
	if b == nil {
		return
	}
	switch {
	case b.NotPlanned != "":
		w("  BIOS not planned: %s\n", b.NotPlanned)
		return
	case b.Refused != "":
		w("  BIOS refused (nothing would be staged): %s\n", b.Refused)
		return
	case len(b.Changes) == 0 && !b.Reboot:
		w("  BIOS via %s: every attribute already in effect\n", b.BMC)
		return
	}
	w("  BIOS via %s:\n", b.BMC)
	for _, c := range b.Changes {
		w("  ~ %s: %s -> %s\n", c.Setting, orNone(c.From), c.To)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
