package plan

import (
	"github.com/tickstack/tickstack/internal/bmc"
)

// BIOSPlan is what a profile's bios section would change on one node, read from its BMC.
type BIOSPlan struct {
	// BMC is the endpoint the plan was read from.
	BMC string `json:"bmc,omitempty"`
	// Changes has one entry per attribute whose value would change ("bios/<name>").
	Changes []Change `json:"changes,omitempty"`
	// Reboot: the changes take effect at a reboot (the same one as the kernel arguments).
	Reboot bool `json:"reboot"`
	// Refused is the attribute registry's refusal, when it refuses; nothing would be staged.
	Refused string `json:"refused,omitempty"`
	// NotPlanned says why the BIOS part could not be planned (no BMC, credentials not readable
	// with the caller's kubeconfig user, BMC not reachable from here).
	NotPlanned string `json:"notPlanned,omitempty"`
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
