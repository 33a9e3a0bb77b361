package testutil

import (
	"strings"
	"testing"
)

// WantContains fails the test for each of want that text does not contain, naming what the text
// is and showing it whole.
func WantContains(t testing.TB, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}
