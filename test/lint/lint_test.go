// Package lint shows that each step of make lint beyond golangci-lint fails on a known finding and
// passes on the same file made clean: shellcheck over the shell scripts (hack/lint.sh shell), flake8
// over the Python (hack/lint.sh python) and the dataplane's strict C and C++ warnings (make -C dataplane
// lint).
// The fixtures live in testdata/, which hack/lint.sh leaves out of the repository-wide runs.
package lint

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs name with args in the repository's root and returns its combined output and whether it
// exited 0.
func run(t *testing.T, name string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, exit := err.(*exec.ExitError); !exit {
			t.Fatalf("%s %v: %v", name, args, err)
		}
	}
	return string(out), err == nil
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLintFailsOnAFinding(t *testing.T) {
	for _, c := range []struct {
		name        string
		bad, clean  []string // the command over the fixture with a finding, and over the clean one
		wantFinding string
	}{
		{"shellcheck", []string{"hack/lint.sh", "shell", fixture(t, "unquoted.sh")},
			[]string{"hack/lint.sh", "shell", fixture(t, "quoted.sh")}, "SC2086"},
		{"flake8", []string{"hack/lint.sh", "python", fixture(t, "unused_import.py")},
			[]string{"hack/lint.sh", "python", fixture(t, "clean.py")}, "F401"},
		{"C warnings", []string{"make", "-s", "-C", "dataplane", "lint", "LINT_SRCS=" + fixture(t, "shadow.c"), "LINT_CXX_SRCS="},
			[]string{"make", "-s", "-C", "dataplane", "lint", "LINT_SRCS=" + fixture(t, "clean.c"), "LINT_CXX_SRCS="}, "-Werror=shadow"},
		{"C++ warnings", []string{"make", "-s", "-C", "dataplane", "lint", "LINT_SRCS=", "LINT_CXX_SRCS=" + fixture(t, "shadow.cpp")},
			[]string{"make", "-s", "-C", "dataplane", "lint", "LINT_SRCS=", "LINT_CXX_SRCS=" + fixture(t, "clean.cpp")}, "-Werror=shadow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, ok := run(t, c.bad[0], c.bad[1:]...)
			if ok || !strings.Contains(out, c.wantFinding) {
				t.Errorf("%v: exit 0 = %v, want a failure naming %s; output:\n%s", c.bad, ok, c.wantFinding, out)
			}
			if out, ok := run(t, c.clean[0], c.clean[1:]...); !ok {
				t.Errorf("%v failed on a clean file:\n%s", c.clean, out)
			}
		})
	}
}

// TestLintFindsEveryScript: the repository-wide runs include the scripts without an extension (the
// CI entry point, the local cluster) and leave the failing fixtures out.
func TestLintFindsEveryScript(t *testing.T) {
	out, ok := run(t, "bash", "-c", `source <(sed -n '/^files()/,/^}/p' hack/lint.sh) && files sh && files python`)
	if !ok {
		t.Fatalf("listing the files failed:\n%s", out)
	}
	for _, want := range []string{".ci/run", "hack/local-cluster", "dataplane/tests/harness.sh", "dataplane/bench/report.py"} {
		if !strings.Contains("\n"+out, "\n"+want+"\n") {
			t.Errorf("hack/lint.sh does not lint %s", want)
		}
	}
	if strings.Contains(out, "test/lint/testdata") {
		t.Errorf("hack/lint.sh lints its own failing fixtures:\n%s", out)
	}
}
