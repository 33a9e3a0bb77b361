package testutil

import (
	"os"
	"path/filepath"
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

// WriteFile writes body to dir/name, readable by its owner only, and returns the path.
func WriteFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
