package plan

import (
	"bytes"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

func TestAddBIOSFoldsTheRebootIntoOne(t *testing.T) {
	p := &Plan{Profile: "x", Nodes: []NodePlan{
		{Node: "kernel-and-bios", Action: Apply, Reboot: true},
		{Node: "bios-only", Action: Unchanged},
		{Node: "in-effect", Action: Unchanged},
	}}
	p.AddBIOS("kernel-and-bios", &BIOSPlan{BMC: "https://b1", Reboot: true, Changes: []Change{{Setting: "bios/A", From: "on", To: "off"}}})
	p.AddBIOS("bios-only", &BIOSPlan{BMC: "https://b2", Reboot: true, Changes: []Change{{Setting: "bios/A", To: "off"}}})
	p.AddBIOS("in-effect", &BIOSPlan{BMC: "https://b3"})
	var out bytes.Buffer
	p.Print(&out)
	testutil.WantContains(t, "plan", out.String(),
		"3 nodes in the plan, 2 would change, 2 would reboot",
		"node kernel-and-bios: apply (reboot required: one reboot for the kernel arguments and the BIOS settings)\n  BIOS via https://b1:\n  ~ bios/A: on -> off",
		"node bios-only: apply (reboot required: BIOS settings)\n  BIOS via https://b2:\n  ~ bios/A: (none) -> off",
		"node in-effect: unchanged\n  BIOS via https://b3: every attribute already in effect",
	)
}
