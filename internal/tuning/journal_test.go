package tuning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

// TestRestoreRefusesSysctlsOffTheAllowList: the journal is a host file; a restore writes back
// only sysctls the agent may set, and leaves any other entry journaled with an error naming it.
func TestRestoreRefusesSysctlsOffTheAllowList(t *testing.T) {
	dir := hosttest.TempDir(t)
	for p, v := range map[string]string{"proc/sys/vm/stat_interval": "10", "proc/sys/kernel/core_pattern": "core"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := &Engine{Host: &host.Host{Root: dir}}
	jpath := e.journalPath()
	if err := os.MkdirAll(filepath.Dir(jpath), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := []Entry{{Name: "sysctl/vm.stat_interval", Original: "1"}, {Name: "sysctl/kernel.core_pattern", Original: "|/tmp/x"}}
	if err := saveJournal(jpath, planted); err != nil {
		t.Fatal(err)
	}
	restored, err := e.Restore()
	if err == nil || !strings.Contains(err.Error(), "restore sysctl/kernel.core_pattern: sysctl kernel.core_pattern is not on the sysctl allow-list") {
		t.Fatalf("Restore error %v, want the off-list key named", err)
	}
	if len(restored) != 1 || restored[0] != "sysctl/vm.stat_interval" {
		t.Errorf("restored %v, want only the allowed sysctl/vm.stat_interval", restored)
	}
	if got := readTree(t, dir, "proc/sys/kernel/core_pattern"); got != "core" {
		t.Errorf("kernel.core_pattern = %q: a key off the allow-list was written", got)
	}
	if got := readTree(t, dir, "proc/sys/vm/stat_interval"); got != "1" {
		t.Errorf("vm.stat_interval = %q, want its original 1 back", got)
	}
	left, err := loadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name != "sysctl/kernel.core_pattern" {
		t.Errorf("journal left %+v, want the refused entry kept", left)
	}
}
