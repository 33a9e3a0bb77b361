package bootloader

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tickstack/tickstack/internal/host"
)

// Status is the kernel-argument state of a node after Reconcile or RemoveArgs.
type Status struct {
	// Desired are the arguments the profile wants.
	Desired []string
	// Missing are desired arguments the running kernel did not boot with.
	Missing []string
	// Stale are arguments this writer had configured, no longer desired, that the running
	// kernel still runs with.
	Stale []string
	// Written reports that the boot configuration changed in this call.
	Written bool
	// RebootRequired: the running kernel's arguments differ from what the next boot will use
	// (Missing or Stale is not empty).
	RebootRequired bool
}

// ArgState is how one kernel argument stands.
type ArgState string

// Kernel argument states.
const (
	// ArgInEffect: the running kernel booted with it.
	ArgInEffect ArgState = "InSync"
	// ArgPendingReboot: written for the next boot, not yet in effect.
	ArgPendingReboot ArgState = "PendingReboot"
	// ArgPendingRemoval: no longer desired, but the running kernel still has it.
	ArgPendingRemoval ArgState = "PendingRemoval"
)

// Arg is one kernel argument's state, for per-setting status ("kernel/<arg>").
type Arg struct {
	// Arg is the desired argument ("nohz_full=2-3"), or the stale one for PendingRemoval.
	Arg string
	// Observed is the value in effect for the argument's key ("" when absent).
	Observed string
	State    ArgState
}

// Args lists every desired and stale argument with its state, desired ones first in order.
func (s Status) Args(cmdline string) []Arg {
	missing := map[string]bool{}
	for _, m := range s.Missing {
		for _, a := range strings.Fields(m) {
			missing[a] = true
		}
	}
	have := effectiveOf(Tokenize(cmdline))
	var out []Arg
	for _, a := range s.Desired {
		k, _, _ := strings.Cut(a, "=")
		st := ArgInEffect
		if missing[a] {
			st = ArgPendingReboot
		}
		obs, ok := have.values[k]
		if k == "hugepages" || k == "hugepagesz" {
			obs, ok = "", false
		}
		if ok && obs == "" {
			obs = k
		} else if ok {
			obs = k + "=" + obs
		}
		out = append(out, Arg{Arg: a, Observed: obs, State: st})
	}
	for _, a := range s.Stale {
		out = append(out, Arg{Arg: a, Observed: a, State: ArgPendingRemoval})
	}
	return out
}

// Message is a one-line explanation for a status condition.
func (s Status) Message() string {
	switch {
	case !s.RebootRequired:
		return "kernel arguments are in effect"
	case len(s.Missing) > 0 && len(s.Stale) > 0:
		return fmt.Sprintf("reboot required: missing %q, still running with %q", s.Missing, s.Stale)
	case len(s.Missing) > 0:
		return fmt.Sprintf("reboot required: the running kernel lacks %q", s.Missing)
	default:
		return fmt.Sprintf("reboot required: the running kernel still runs with %q", s.Stale)
	}
}

// Manager keeps a node's kernel arguments: it writes them through a Writer and tells whether the
// running kernel matches. It remembers, in RetiredPath, arguments it configured earlier and then
// dropped, for as long as the running kernel still has them, so "reboot required" survives agent
// restarts between a profile change and the reboot.
type Manager struct {
	// Writer persists the arguments for the next boot.
	Writer Writer
	// RetiredPath is the state file's absolute path (e.g. Host.Path(DefaultStateDir+"/retired-args")).
	RetiredPath string
}

// Reconcile makes the boot configuration carry desired (Write is idempotent: an unchanged
// configuration is not rewritten and a boot loader update is not rerun) and compares it with the
// running kernel's command line. Reboots are the caller's decision; one profile change leads to
// one Write and therefore at most one reboot.
func (m *Manager) Reconcile(ctx context.Context, desired []string, cmdline string) (Status, error) {
	prev, err := m.Writer.Configured()
	if err != nil {
		return Status{}, err
	}
	if err := m.retire(prev, desired); err != nil {
		return Status{}, err
	}
	written, err := m.Writer.Write(ctx, desired)
	if err != nil {
		return Status{}, fmt.Errorf("write kernel arguments: %w", err)
	}
	return m.status(desired, cmdline, written)
}

// Remove takes this writer's arguments out of the boot configuration (the profile or the node
// state was deleted) and reports whether the running kernel still runs with them.
func (m *Manager) Remove(ctx context.Context, cmdline string) (Status, error) {
	prev, err := m.Writer.Configured()
	if err != nil {
		return Status{}, err
	}
	if err := m.retire(prev, nil); err != nil {
		return Status{}, err
	}
	written, err := m.Writer.Remove(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("remove kernel arguments: %w", err)
	}
	return m.status(nil, cmdline, written)
}

func (m *Manager) loadRetired() ([]string, error) {
	return readWords(m.RetiredPath, "retired kernel arguments")
}

func (m *Manager) saveRetired(args []string) error {
	if len(args) == 0 {
		return host.RemoveFileDurable(m.RetiredPath)
	}
	return host.WriteFileAtomic(m.RetiredPath, []byte(strings.Join(args, " ")+"\n"), 0o644)
}

// retire records the previously configured arguments that desired drops, before the writer
// forgets them.
func (m *Manager) retire(prev, desired []string) error {
	retired, err := m.loadRetired()
	if err != nil {
		return err
	}
	n := len(retired)
	for _, a := range prev {
		if !slices.Contains(desired, a) && !slices.Contains(retired, a) {
			retired = append(retired, a)
		}
	}
	if len(retired) == n {
		return nil
	}
	return m.saveRetired(retired)
}

func (m *Manager) status(desired []string, cmdline string, written bool) (Status, error) {
	s := Status{Desired: desired, Written: written}
	s.Missing = Compare(desired, cmdline).Missing
	running := Tokenize(cmdline)
	retired, err := m.loadRetired()
	if err != nil {
		return Status{}, err
	}
	var keep []string
	for _, a := range retired {
		if slices.Contains(desired, a) || !slices.Contains(running, a) {
			continue
		}
		s.Stale = append(s.Stale, a)
		keep = append(keep, a)
	}
	if !slices.Equal(keep, retired) {
		if err := m.saveRetired(keep); err != nil {
			return Status{}, err
		}
	}
	s.RebootRequired = len(s.Missing) > 0 || len(s.Stale) > 0
	return s, nil
}
