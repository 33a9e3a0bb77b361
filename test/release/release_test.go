//go:build release

// Package release tests `make release` (hack/release.sh) as a release manager runs it: everything
// lands in one folder, SHA256SUMS covers every file and verifies, the chart's version and appVersion
// are the release's, the native CLI reports the release, the other CLIs are built for their platforms
// and the SBOM is CycloneDX naming the module's dependencies. The image archives are left out
// (--no-images): building them needs the Debian bases and the dataplane, which the e2e builds; the
// release itself always includes them (docs/releasing.md).
package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

const version = "0.0.0-releasetest"

// tool finds a pinned tool: $ENV, else bin/NAME under the repository.
func tool(t *testing.T, root, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		testutil.Unavailable(t, name+" not built: run make test (or set "+env+")")
	}
	return p
}

func TestReleaseFolder(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := tool(t, root, "TICKSTACK_HELM", "helm-v3.22.0")
	cdx := tool(t, root, "TICKSTACK_CYCLONEDX_GOMOD", "cyclonedx-gomod-v1.10.0")
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "release.sh"), "--version", version, "--out", out, "--no-images")
	cmd.Env = append(os.Environ(), "HELM="+helm, "CYCLONEDX_GOMOD="+cdx)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", err, b)
	}

	chart := "tickstack-" + version + ".tgz"
	sbom := "tickstack-" + version + ".sbom.cdx.json"
	cli := func(os, arch string) string { return "tickstack-" + version + "-" + os + "-" + arch }
	want := []string{"SHA256SUMS", chart, sbom, cli("darwin", "arm64"), cli("linux", "amd64"), cli("linux", "arm64")}
	sort.Strings(want)
	var have []string
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		have = append(have, e.Name())
	}
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Fatalf("release folder holds %v, want %v", have, want)
	}

	t.Run("SHA256SUMS verifies every file", func(t *testing.T) {
		f, err := os.Open(filepath.Join(out, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		listed := map[string]bool{}
		s := bufio.NewScanner(f)
		for s.Scan() {
			sum, name, ok := strings.Cut(s.Text(), "  ")
			if !ok {
				t.Fatalf("SHA256SUMS line %q is not sha256sum's", s.Text())
			}
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(b)
			if hex.EncodeToString(h[:]) != sum {
				t.Errorf("%s: sha256 %x, SHA256SUMS says %s", name, h, sum)
			}
			listed[name] = true
		}
		for _, n := range want {
			if n != "SHA256SUMS" && !listed[n] {
				t.Errorf("SHA256SUMS lacks %s", n)
			}
		}
		// and the tool a user runs agrees
		c := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
		c.Dir = out
		if b, err := c.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, b)
		}
	})

	t.Run("the native CLI reports the release", func(t *testing.T) {
		if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
			testutil.Unavailable(t, "no CLI of the release runs on "+runtime.GOOS+"/"+runtime.GOARCH)
		}
		b, err := exec.Command(filepath.Join(out, cli(runtime.GOOS, runtime.GOARCH)), "version").CombinedOutput()
		if err != nil {
			t.Fatalf("tickstack version: %v\n%s", err, b)
		}
		if !strings.HasPrefix(string(b), "tickstack "+version+" (commit ") {
			t.Errorf("tickstack version printed %q, want tickstack %s (commit ...", b, version)
		}
	})

	t.Run("each CLI is built for its platform", func(t *testing.T) {
		for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
			f, err := elf.Open(filepath.Join(out, cli("linux", arch)))
			if err != nil {
				t.Fatal(err)
			}
			if f.Machine != machine {
				t.Errorf("%s is for %v", cli("linux", arch), f.Machine)
			}
			f.Close()
		}
		f, err := macho.Open(filepath.Join(out, cli("darwin", "arm64")))
		if err != nil {
			t.Fatal(err)
		}
		if f.Cpu != macho.CpuArm64 {
			t.Errorf("%s is for %v", cli("darwin", "arm64"), f.Cpu)
		}
		f.Close()
	})

	t.Run("the chart's version and appVersion are the release's", func(t *testing.T) {
		f, err := os.Open(filepath.Join(out, chart))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r := tar.NewReader(z)
		files := map[string]string{}
		for {
			h, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name == "tickstack/Chart.yaml" || h.Name == "tickstack/README.md" {
				b, _ := io.ReadAll(r)
				files[h.Name] = string(b)
			}
		}
		for _, line := range []string{"version: " + version, "appVersion: " + version} {
			if !strings.Contains("\n"+files["tickstack/Chart.yaml"], "\n"+line+"\n") {
				t.Errorf("the packaged Chart.yaml lacks %q:\n%s", line, files["tickstack/Chart.yaml"])
			}
		}
		if !strings.Contains(files["tickstack/README.md"], "| `imageRegistry` |") {
			t.Error("the packaged chart lacks its generated README.md")
		}
	})

	t.Run("the SBOM is CycloneDX and names the Go modules", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(out, sbom))
		if err != nil {
			t.Fatal(err)
		}
		var bom struct {
			BOMFormat string `json:"bomFormat"`
			Metadata  struct {
				Component struct {
					Name string `json:"name"`
				} `json:"component"`
			} `json:"metadata"`
			Components []struct {
				Name    string `json:"name"`
				Version string `json:"version"`
				PURL    string `json:"purl"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &bom); err != nil {
			t.Fatal(err)
		}
		if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/tickstack/tickstack" {
			t.Errorf("SBOM format %q of %q, want CycloneDX of github.com/tickstack/tickstack", bom.BOMFormat, bom.Metadata.Component.Name)
		}
		found := false
		for _, c := range bom.Components {
			if c.Name == "sigs.k8s.io/controller-runtime" && strings.HasPrefix(c.PURL, "pkg:golang/sigs.k8s.io/controller-runtime@v") {
				found = true
			}
		}
		if !found {
			t.Errorf("the SBOM's %d components lack sigs.k8s.io/controller-runtime", len(bom.Components))
		}
	})
}
