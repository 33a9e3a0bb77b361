package policy

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListAllowedSysctls keeps docs/agent-host.md in step with AllowedSysctls.
func TestDocsListAllowedSysctls(t *testing.T) {
	b, err := os.ReadFile("../../docs/agent-host.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for k, info := range AllowedSysctls() {
		if !strings.Contains(doc, "| `"+k+"` |") {
			t.Errorf("docs/agent-host.md does not list the allowed sysctl %s", k)
		}
		if !strings.Contains(doc, info.Why) {
			t.Errorf("docs/agent-host.md does not carry the current explanation of %s", k)
		}
	}
}
