package bootloader

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestGRUBWriter runs the GRUB drop-in writer against a host-root tree (this VM has no boot
// loader) with an update command that counts its runs.
func TestGRUBWriter(t *testing.T) {
	ctx := context.Background()
	root := hosttest.TempDir(t)
	counter := filepath.Join(root, "update-runs")
	g := &GRUB{
		Host:          &host.Host{Root: root},
		UpdateCommand: []string{"sh", "-c", `echo run >> "$0"`, counter},
	}
	runs := func() int {
		b, err := os.ReadFile(counter)
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "run")
	}
	if got, err := g.Configured(); err != nil || got != nil {
		t.Fatalf("Configured on a clean host = %q, %v", got, err)
	}
	args := []string{"isolcpus=managed_irq,domain,2-3", "nohz_full=2-3"}
	changed, err := g.Write(ctx, args)
	if err != nil || !changed {
		t.Fatalf("Write = %v, %v; want changed", changed, err)
	}
	dropIn := filepath.Join(root, DefaultGRUBDropIn)
	content := readFile(t, dropIn)
	if !strings.Contains(content, `GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} isolcpus=managed_irq,domain,2-3 nohz_full=2-3"`) {
		t.Fatalf("drop-in content:\n%s", content)
	}
	if got, _ := g.Configured(); !slices.Equal(got, args) {
		t.Fatalf("Configured = %q, want %q", got, args)
	}
	if runs() != 1 {
		t.Fatalf("update ran %d times, want 1", runs())
	}
	// Idempotent: the same args change nothing and do not rerun the update.
	if changed, err := g.Write(ctx, args); err != nil || changed || runs() != 1 {
		t.Fatalf("second Write = %v, %v, runs %d; want unchanged, 1 run", changed, err, runs())
	}
	// An update interrupted by a crash (stamp missing) runs again on the next call.
	if err := os.Remove(filepath.Join(root, DefaultStateDir, grubUpdateStampName)); err != nil {
		t.Fatal(err)
	}
	if changed, err := g.Write(ctx, args); err != nil || changed || runs() != 2 {
		t.Fatalf("Write after lost stamp = %v, %v, runs %d; want unchanged, 2 runs", changed, err, runs())
	}
	// A failing update command is an error naming the command.
	bad := &GRUB{Host: g.Host, UpdateCommand: []string{"sh", "-c", "echo boom >&2; exit 3"}}
	if _, err := bad.Write(ctx, []string{"idle=poll"}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failing update: err = %v", err)
	}
	if _, err := g.Write(ctx, []string{"bad arg"}); err == nil {
		t.Fatal("an argument with a blank was accepted")
	}
	// Remove restores: no drop-in, update run once more.
	before := runs()
	if changed, err := g.Remove(ctx); err != nil || !changed {
		t.Fatalf("Remove = %v, %v", changed, err)
	}
	if _, err := os.Stat(dropIn); !os.IsNotExist(err) {
		t.Fatalf("drop-in still there: %v", err)
	}
	if runs() != before+1 {
		t.Fatalf("update after Remove ran %d times, want %d", runs(), before+1)
	}
	if changed, err := g.Remove(ctx); err != nil || changed || runs() != before+1 {
		t.Fatalf("second Remove = %v, %v, runs %d", changed, err, runs())
	}
}

// TestBLSWriter edits Boot Loader Specification entries in a host-root tree and checks that
// Remove gives back the entries byte for byte.
func TestBLSWriter(t *testing.T) {
	ctx := context.Background()
	root := hosttest.TempDir(t)
	dir := filepath.Join(root, DefaultBLSEntries)
	entries := map[string]string{
		"a-6.1.conf":    "title Debian 6.1\nversion 6.1\nlinux /vmlinuz-6.1\noptions  root=UUID=1234 ro quiet\n",
		"b-6.2.conf":    "title Debian 6.2\nlinux /vmlinuz-6.2\ninitrd /initrd-6.2\n",
		"c-rescue.conf": "title Rescue\nlinux /vmlinuz-rescue\noptions root=UUID=1234 $kernelopts\n",
	}
	for n, c := range entries {
		writeFile(t, filepath.Join(dir, n), c, 0o600)
	}
	b := &BLS{Host: &host.Host{Root: root}}
	args := []string{"nohz_full=1", "idle=poll"}
	changed, err := b.Write(ctx, args)
	if err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	if got := readFile(t, filepath.Join(dir, "a-6.1.conf")); !strings.Contains(got, "\noptions root=UUID=1234 ro quiet nohz_full=1 idle=poll\n") {
		t.Fatalf("a-6.1.conf:\n%s", got)
	}
	if got := readFile(t, filepath.Join(dir, "b-6.2.conf")); !strings.HasSuffix(got, "initrd /initrd-6.2\noptions nohz_full=1 idle=poll\n") {
		t.Fatalf("b-6.2.conf:\n%q", got)
	}
	if st, _ := os.Stat(filepath.Join(dir, "a-6.1.conf")); st.Mode().Perm() != 0o600 {
		t.Fatalf("entry mode changed to %v", st.Mode().Perm())
	}
	if got, _ := b.Configured(); !slices.Equal(got, args) {
		t.Fatalf("Configured = %q", got)
	}
	if changed, err := b.Write(ctx, args); err != nil || changed {
		t.Fatalf("second Write = %v, %v; want unchanged", changed, err)
	}
	// New arguments replace the old ones (the originals are kept, not re-read).
	if _, err := b.Write(ctx, []string{"nohz_full=1"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "c-rescue.conf")); !strings.Contains(got, "options root=UUID=1234 $kernelopts nohz_full=1\n") {
		t.Fatalf("c-rescue.conf:\n%s", got)
	}
	if changed, err := b.Remove(ctx); err != nil || !changed {
		t.Fatalf("Remove = %v, %v", changed, err)
	}
	for n, c := range entries {
		if got := readFile(t, filepath.Join(dir, n)); got != c {
			t.Errorf("%s after Remove:\n%q\nwant\n%q", n, got, c)
		}
	}
	if got, _ := b.Configured(); got != nil {
		t.Fatalf("Configured after Remove = %q", got)
	}
	// No entries at all is a clear error.
	empty := &BLS{Host: &host.Host{Root: hosttest.TempDir(t)}}
	if _, err := empty.Write(ctx, args); err == nil || !strings.Contains(err.Error(), "no boot entries") {
		t.Fatalf("Write without entries: %v", err)
	}
}
