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

// WantError checks err against want, the error text a table case expects ("": none). A case that
// wants one fails unless err holds it, another fails on any error; what names the call. It says
// whether the case goes on to compare its results: no error wanted and none returned.
func WantError(t testing.TB, what string, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s error = %v, want one containing %q", what, err, want)
		}
		return false
	}
	if err != nil {
		t.Errorf("%s error = %v", what, err)
		return false
	}
	return true
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
