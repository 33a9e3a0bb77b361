package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

// A binary built with hack/ldflags.sh reports hack/version.sh's version, the clone's commit and the
// build time, never "unknown"; off a release tag that version is a development one naming the commit,
// so a development build never carries a release's version.
func TestBuiltBinaryReportsReleaseAndCommit(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		testutil.Unavailable(t, "git rev-parse HEAD: "+err.Error())
	}
	flags, err := exec.Command(filepath.Join(root, "hack", "ldflags.sh")).Output()
	if err != nil {
		t.Fatalf("hack/ldflags.sh: %v", err)
	}
	version, err := exec.Command(filepath.Join(root, "hack", "version.sh")).Output()
	if err != nil {
		t.Fatalf("hack/version.sh: %v", err)
	}
	chart, err := os.ReadFile(filepath.Join(root, "charts", "tickstack", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app := regexp.MustCompile(`(?m)^appVersion: "([^"]+)"`).FindSubmatch(chart)
	if app == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	release := [][]byte{nil, []byte(strings.TrimSpace(string(version)))}
	tags, _ := exec.Command("git", "-C", root, "tag", "--points-at", "HEAD").Output()
	if !strings.Contains("\n"+string(tags), "\nv"+string(app[1])+"\n") {
		dev := regexp.MustCompile(`^[0-9]+\.[0-9]+\.0-dev\.g` + string(head[:12]) + `(\.dirty)?$`)
		if !dev.Match(release[1]) || string(release[1]) == string(app[1]) {
			t.Errorf("hack/version.sh off the release tag printed %q, want a development version matching %s", release[1], dev)
		}
	}
	bin := filepath.Join(t.TempDir(), "tickstack")
	build := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, "./cmd/tickstack")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("tickstack version: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`^tickstack ` + regexp.QuoteMeta(string(release[1])) + ` \(commit ` + strings.TrimSpace(string(head)) + `(\+changes)?, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, go[0-9.]+\)\n$`)
	if !want.Match(out) {
		t.Errorf("tickstack version printed %q, want %s", out, want)
	}
}
