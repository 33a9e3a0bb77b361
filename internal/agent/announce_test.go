package agent

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The event's name stays a valid object name for the longest node names.
func TestEventName(t *testing.T) {
	sum := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, node := range []string{"n1", strings.Repeat("a", 253), strings.Repeat("a", 235) + ".b-c" + strings.Repeat("d", 20)} {
		got := eventName(node, sum)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 || !strings.HasSuffix(got, ".0102030405060708") {
			t.Errorf("eventName(%d characters) = %q: %v", len(node), got, errs)
		}
	}
}
