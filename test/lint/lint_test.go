// Package lint shows that each step of make lint beyond golangci-lint fails on a known finding and
// passes on the same file made clean: shellcheck over the shell scripts (hack/lint.sh shell), flake8
// over the Python (hack/lint.sh python) and the dataplane's strict C and C++ warnings (make -C dataplane
// lint), and that the dataplane's layer check (dataplane/tests/layers.py, run by make -C dataplane test)
// fails on an upward call and on a self-call through an interposed libc name.
// The fixtures live in testdata/, which hack/lint.sh leaves out of the repository-wide runs.
package lint

import (
	"os"
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

// compile builds each fixture (testdata/layers/SRC) into dir/OBJ with gcc -c, as the library's objects
// are built, and returns the objects' paths.
func compile(t *testing.T, dir string, srcToObj map[string]string) []string {
	t.Helper()
	var objs []string
	for src, obj := range srcToObj {
		o := filepath.Join(dir, obj)
		if out, err := exec.Command("gcc", "-O2", "-fPIC", "-fvisibility=hidden", "-c",
			fixture(t, filepath.Join("layers", src)), "-o", o).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", src, err, out)
		}
		objs = append(objs, o)
	}
	return objs
}

// TestLayerCheckFails: the layer check over objects named as the library's fails on the stack calling
// up into the sockets and on a socket calling read (the interposer's), and passes on the same layers
// calling only down.
func TestLayerCheckFails(t *testing.T) {
	bad := compile(t, t.TempDir(), map[string]string{"stack.c": "stack.o", "sock.c": "sock.o", "tcp.c": "tcp.o"})
	out, ok := run(t, "python3", append([]string{"-B", "dataplane/tests/layers.py"}, bad...)...)
	for _, want := range []string{"stack.o (stack) uses ts_sock__deliver of sock.o (sockets): upward",
		"tcp.o calls read: binds back to the interposer"} {
		if ok || !strings.Contains(out, want) {
			t.Errorf("layers.py over %v: exit 0 = %v, want a failure naming %q; output:\n%s", bad, ok, want, out)
		}
	}
	clean := compile(t, t.TempDir(), map[string]string{"stack_clean.c": "stack.o", "sock.c": "sock.o"})
	if out, ok := run(t, "python3", append([]string{"-B", "dataplane/tests/layers.py"}, clean...)...); !ok {
		t.Errorf("layers.py failed on objects calling only down:\n%s", out)
	}
	// an object in no layer is an error: a new file says where it belongs
	dir := t.TempDir()
	stray := compile(t, dir, map[string]string{"stack_clean.c": "newthing.o"})
	if out, ok := run(t, "python3", append([]string{"-B", "dataplane/tests/layers.py"}, stray...)...); ok ||
		!strings.Contains(out, "newthing.o: in no layer") {
		t.Errorf("layers.py accepted an object in no layer:\n%s", out)
	}
	// an allow-list entry that no longer occurs is an error: the list only shrinks
	allow := filepath.Join(dir, "allow")
	if err := os.WriteFile(allow, []byte("stack.o -> ts_sock__deliver: fixed since\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := run(t, "python3", append([]string{"-B", "dataplane/tests/layers.py", "--allow", allow}, clean...)...); ok ||
		!strings.Contains(out, "no longer occurs") {
		t.Errorf("layers.py kept a stale allow-list entry:\n%s", out)
	}
}
