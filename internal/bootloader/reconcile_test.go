package bootloader

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

// TestReconcileLifecycle walks one node through a profile, its reboot, a profile change and the
// profile's removal, with the GRUB writer on a host-root tree.
func TestReconcileLifecycle(t *testing.T) {
	ctx := context.Background()
	h := &host.Host{Root: hosttest.TempDir(t)}
	w := &GRUB{Host: h}
	m := &Manager{Writer: w, RetiredPath: h.Path(DefaultStateDir + "/retired-args")}
	base := "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet"
	v1 := []string{"isolcpus=managed_irq,domain,2-3", "nohz_full=2-3"}

	s, err := m.Reconcile(ctx, v1, base)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Written || !s.RebootRequired || !slices.Equal(s.Missing, v1) || !strings.Contains(s.Message(), "lacks") {
		t.Fatalf("first reconcile: %+v %s", s, s.Message())
	}
	// Before the reboot: nothing is rewritten, the reboot is still required.
	if s, _ = m.Reconcile(ctx, v1, base); s.Written || !s.RebootRequired {
		t.Fatalf("second reconcile before reboot: %+v", s)
	}
	if args := s.Args(base); len(args) != 2 || args[0].State != ArgPendingReboot || args[0].Observed != "" {
		t.Fatalf("per-argument status before reboot: %+v", args)
	}
	// After the reboot the arguments are in effect.
	booted := base + " " + strings.Join(v1, " ")
	if s, _ = m.Reconcile(ctx, v1, booted); s.Written || s.RebootRequired || s.Message() != "kernel arguments are in effect" {
		t.Fatalf("after reboot: %+v", s)
	}
	// A profile change dropping nohz_full: nohz_full is stale until the next reboot.
	v2 := []string{"isolcpus=managed_irq,domain,2-3"}
	if s, _ = m.Reconcile(ctx, v2, booted); !s.Written || !s.RebootRequired || !slices.Equal(s.Stale, []string{"nohz_full=2-3"}) || len(s.Missing) != 0 {
		t.Fatalf("profile change: %+v", s)
	}
	want := []Arg{
		{Arg: "isolcpus=managed_irq,domain,2-3", Observed: "isolcpus=managed_irq,domain,2-3", State: ArgInEffect},
		{Arg: "nohz_full=2-3", Observed: "nohz_full=2-3", State: ArgPendingRemoval},
	}
	if got := s.Args(booted); !slices.Equal(got, want) {
		t.Fatalf("per-argument status after profile change: %+v", got)
	}
	// Still stale on the next reconcile (the writer no longer lists it, the state file does).
	if s, _ = m.Reconcile(ctx, v2, booted); s.Written || !slices.Equal(s.Stale, []string{"nohz_full=2-3"}) {
		t.Fatalf("second reconcile after profile change: %+v", s)
	}
	// Removing the profile: the arguments the kernel runs with are reported until reboot.
	if s, _ = m.Remove(ctx, booted); !s.Written || !s.RebootRequired || !slices.Equal(s.Stale, []string{"nohz_full=2-3", "isolcpus=managed_irq,domain,2-3"}) {
		t.Fatalf("remove: %+v", s)
	}
	if got, _ := w.Configured(); got != nil {
		t.Fatalf("configured after remove: %q", got)
	}
	if s, _ = m.Remove(ctx, base); s.Written || s.RebootRequired {
		t.Fatalf("remove after reboot: %+v", s)
	}
	if _, err := os.Stat(m.RetiredPath); !os.IsNotExist(err) {
		t.Fatalf("retired-args state left after the reboot: %v", err)
	}
}
