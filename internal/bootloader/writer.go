package bootloader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tickstack/tickstack/internal/host"
)

// Writer persists kernel arguments for the next boot. Write and Remove are idempotent and report
// whether they changed anything (a change means a reboot is needed for it to take effect).
type Writer interface {
	// Configured returns the arguments this writer has configured for the next boot (nil if
	// none).
	Configured() ([]string, error)
	// Write configures args for the next boot, replacing what this writer configured before.
	Write(ctx context.Context, args []string) (changed bool, err error)
	// Remove takes this writer's arguments out, restoring the boot configuration as it was.
	Remove(ctx context.Context) (changed bool, err error)
}

// Default paths on the host.
const (
	DefaultGRUBDropIn   = "/etc/default/grub.d/99-tickstack.cfg"
	DefaultStateDir     = "/var/lib/tickstack/bootloader"
	DefaultBLSEntries   = "/boot/loader/entries"
	grubArgsMarker      = "# tickstack-args: "
	grubUpdateStampName = "grub-update.stamp"
)

// GRUB writes the arguments as a drop-in of /etc/default/grub.d that appends them to
// GRUB_CMDLINE_LINUX, then runs the distribution's update command (update-grub, or
// grub2-mkconfig -o ...). A stamp records the drop-in content the update last ran for, so an
// update interrupted by a crash is run again on the next call.
type GRUB struct {
	// Host is the machine (its Root resolves the paths below).
	Host *host.Host
	// DropIn is the drop-in path; empty means DefaultGRUBDropIn.
	DropIn string
	// StateDir holds the update stamp; empty means DefaultStateDir.
	StateDir string
	// UpdateCommand regenerates grub.cfg (e.g. ["chroot", "/host", "update-grub"]); empty runs
	// nothing.
	UpdateCommand []string
}

func (g *GRUB) dropIn() string { return g.Host.Path(orDefault(g.DropIn, DefaultGRUBDropIn)) }

func (g *GRUB) stamp() string {
	return filepath.Join(g.Host.Path(orDefault(g.StateDir, DefaultStateDir)), grubUpdateStampName)
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// readOptional reads p, a file of tickstack's own that may not exist yet (ok false then),
// naming it as what in errors.
func readOptional(p, what string) (b []byte, ok bool, err error) {
	b, err = os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", what, err)
	}
	return b, true, nil
}

// readWords reads the blank-separated words of p (readOptional): nil when it does not exist.
func readWords(p, what string) ([]string, error) {
	b, ok, err := readOptional(p, what)
	if !ok || err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// Configured implements Writer.
func (g *GRUB) Configured() ([]string, error) {
	b, ok, err := readOptional(g.dropIn(), "grub drop-in")
	if !ok || err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, grubArgsMarker); ok {
			return strings.Fields(rest), nil
		}
	}
	return nil, fmt.Errorf("grub drop-in %s has no %q line: it was edited by hand; delete it", g.dropIn(), strings.TrimSpace(grubArgsMarker))
}

func grubContent(args []string) []byte {
	joined := strings.Join(args, " ")
	return []byte("# Written by the tickstack node agent: kernel arguments of this node's latency profile.\n" +
		"# Removing the profile removes this file. Do not edit.\n" +
		grubArgsMarker + joined + "\n" +
		"GRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} " + joined + "\"\n")
}

func checkArgs(args []string) error {
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'$`\\;") {
			return fmt.Errorf("kernel argument %q contains blanks, quotes or shell characters; build arguments with Build", a)
		}
	}
	return nil
}

// Write implements Writer.
func (g *GRUB) Write(ctx context.Context, args []string) (bool, error) {
	if err := checkArgs(args); err != nil {
		return false, err
	}
	if len(args) == 0 {
		return g.Remove(ctx)
	}
	want := grubContent(args)
	cur, err := os.ReadFile(g.dropIn())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("grub drop-in: %w", err)
	}
	changed := !bytes.Equal(cur, want)
	if changed {
		if err := host.WriteFileAtomic(g.dropIn(), want, 0o644); err != nil {
			return false, fmt.Errorf("grub drop-in: %w", err)
		}
	}
	return changed, g.update(ctx, want)
}

// Remove implements Writer.
func (g *GRUB) Remove(ctx context.Context) (bool, error) {
	_, err := os.Stat(g.dropIn())
	changed := err == nil
	if changed {
		if err := host.RemoveFileDurable(g.dropIn()); err != nil {
			return false, fmt.Errorf("grub drop-in: %w", err)
		}
	}
	return changed, g.update(ctx, nil)
}

// update runs the update command unless the stamp says it already ran for content.
func (g *GRUB) update(ctx context.Context, content []byte) error {
	sum := sha256.Sum256(content)
	want := hex.EncodeToString(sum[:])
	if b, err := os.ReadFile(g.stamp()); err == nil && strings.TrimSpace(string(b)) == want {
		return nil
	}
	if len(g.UpdateCommand) > 0 {
		cmd := exec.CommandContext(ctx, g.UpdateCommand[0], g.UpdateCommand[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("grub update command %v: %w: %s", g.UpdateCommand, err, bytes.TrimSpace(out))
		}
	}
	if err := host.WriteFileAtomic(g.stamp(), []byte(want+"\n"), 0o644); err != nil {
		return fmt.Errorf("grub update stamp: %w", err)
	}
	return nil
}

// BLS edits Boot Loader Specification entries (systemd-boot, and GRUB on Fedora/RHEL): it
// appends the arguments to the options line of every entry. Before the first change of an entry
// its original options line is saved durably in StateDir; Remove writes those originals back.
type BLS struct {
	// Host is the machine (its Root resolves the paths below).
	Host *host.Host
	// EntriesDir holds the *.conf entries; empty means DefaultBLSEntries.
	EntriesDir string
	// StateDir holds the saved originals; empty means DefaultStateDir.
	StateDir string
}

func (b *BLS) entriesDir() string { return b.Host.Path(orDefault(b.EntriesDir, DefaultBLSEntries)) }

func (b *BLS) stateDir() string {
	return filepath.Join(b.Host.Path(orDefault(b.StateDir, DefaultStateDir)), "bls")
}

func (b *BLS) argsFile() string { return filepath.Join(b.stateDir(), "args") }

// Configured implements Writer.
func (b *BLS) Configured() ([]string, error) { return readWords(b.argsFile(), "bls state") }

// optionsLine returns the index of the "options" line and its value.
func optionsLine(lines []string) (int, string) {
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if k, v, ok := strings.Cut(t, " "); ok && k == "options" {
			return i, strings.TrimSpace(v)
		} else if t == "options" {
			return i, ""
		}
	}
	return -1, ""
}

// Write implements Writer.
func (b *BLS) Write(_ context.Context, args []string) (bool, error) {
	if err := checkArgs(args); err != nil {
		return false, err
	}
	entries, err := filepath.Glob(filepath.Join(b.entriesDir(), "*.conf"))
	if err != nil {
		return false, err
	}
	if len(entries) == 0 {
		return false, fmt.Errorf("no boot entries in %s: is this a BLS/systemd-boot host? configure the GRUB writer otherwise", b.entriesDir())
	}
	changed := false
	for _, e := range entries {
		c, err := b.writeEntry(e, args)
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	if len(args) == 0 {
		return changed, host.RemoveFileDurable(b.argsFile())
	}
	return changed, host.WriteFileAtomic(b.argsFile(), []byte(strings.Join(args, " ")+"\n"), 0o644)
}

func (b *BLS) writeEntry(path string, args []string) (bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("bls entry: %w", err)
	}
	lines := strings.Split(string(raw), "\n")
	idx, cur := optionsLine(lines)
	backup := filepath.Join(b.stateDir(), filepath.Base(path)+".options")
	orig, err := os.ReadFile(backup)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// First change of this entry: save its original options line durably before editing.
		saved := "present\n" + lines[max(idx, 0)]
		if idx < 0 {
			saved = "absent\n"
		}
		if err := host.WriteFileAtomic(backup, []byte(saved), 0o644); err != nil {
			return false, fmt.Errorf("bls backup: %w", err)
		}
		orig = []byte(saved)
	case err != nil:
		return false, fmt.Errorf("bls backup: %w", err)
	}
	state, origLine, _ := strings.Cut(string(orig), "\n")
	_, base := optionsLine([]string{origLine})
	want := strings.TrimSpace(strings.Join(append([]string{base}, args...), " "))
	if idx >= 0 && cur == want {
		return false, nil
	}
	line := "options " + want
	switch {
	case idx >= 0:
		lines[idx] = line
	case state == "absent" && len(args) == 0:
		return false, nil
	default:
		lines = slices.Insert(lines, insertAt(lines), line)
	}
	if err := host.WriteFileAtomic(path, []byte(strings.Join(lines, "\n")), fileMode(path)); err != nil {
		return false, fmt.Errorf("bls entry: %w", err)
	}
	return true, nil
}

func insertAt(lines []string) int {
	n := len(lines)
	for n > 0 && lines[n-1] == "" {
		n--
	}
	return n
}

// Remove implements Writer.
func (b *BLS) Remove(_ context.Context) (bool, error) {
	backups, err := filepath.Glob(filepath.Join(b.stateDir(), "*.conf.options"))
	if err != nil {
		return false, err
	}
	changed := false
	for _, bk := range backups {
		entry := filepath.Join(b.entriesDir(), strings.TrimSuffix(filepath.Base(bk), ".options"))
		orig, err := os.ReadFile(bk)
		if err != nil {
			return changed, fmt.Errorf("bls backup: %w", err)
		}
		raw, err := os.ReadFile(entry)
		if errors.Is(err, os.ErrNotExist) {
			// The entry is gone (kernel removed): nothing to restore.
			if err := host.RemoveFileDurable(bk); err != nil {
				return changed, err
			}
			continue
		}
		if err != nil {
			return changed, fmt.Errorf("bls entry: %w", err)
		}
		state, origLine, _ := strings.Cut(string(orig), "\n")
		lines := strings.Split(string(raw), "\n")
		idx, _ := optionsLine(lines)
		switch {
		case state == "absent" && idx >= 0:
			lines = slices.Delete(lines, idx, idx+1)
		case state == "present" && idx >= 0 && lines[idx] != origLine:
			lines[idx] = origLine
		case state == "present" && idx < 0:
			lines = slices.Insert(lines, insertAt(lines), origLine)
		default:
			if err := host.RemoveFileDurable(bk); err != nil {
				return changed, err
			}
			continue
		}
		if err := host.WriteFileAtomic(entry, []byte(strings.Join(lines, "\n")), fileMode(entry)); err != nil {
			return changed, fmt.Errorf("bls entry: %w", err)
		}
		changed = true
		if err := host.RemoveFileDurable(bk); err != nil {
			return changed, err
		}
	}
	return changed, host.RemoveFileDurable(b.argsFile())
}

// fileMode returns a file's permission bits, 0644 if it cannot be read.
func fileMode(path string) os.FileMode {
	if st, err := os.Stat(path); err == nil {
		return st.Mode().Perm()
	}
	return 0o644
}
