package tuning_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Example shows the calls a node agent's reconciler makes, on a tiny host-root tree (the agent
// uses Root "/host").
func Example() {
	root, _ := os.MkdirTemp("", fmt.Sprintf("tsag%d-example-", os.Getpid()))
	defer os.RemoveAll(root)
	for p, v := range map[string]string{
		"sys/devices/system/cpu/online": "0-3",
		"proc/sys/vm/stat_interval":     "1",
	} {
		_ = os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		_ = os.WriteFile(filepath.Join(root, p), []byte(v+"\n"), 0o644)
	}
	e := &tuning.Engine{Host: &host.Host{Root: root}}
	d := &tuning.Desired{Sysctls: map[string]string{"vm.stat_interval": "10"}}

	// Spec changed or periodic check: apply (validates, journals originals, writes, verifies).
	rep, err := e.Apply(d)
	if err != nil {
		fmt.Println("apply:", err) // every problem, each naming the field and the fix
		return
	}
	for _, r := range rep.Results {
		fmt.Println(r.Name, r.Desired, r.Observed, r.State)
	}

	// Someone changes the value by hand: Verify finds the drift, Apply corrects it.
	_ = os.WriteFile(filepath.Join(root, "proc/sys/vm/stat_interval"), []byte("3"), 0o644)
	res, _ := e.Verify(d)
	for _, r := range tuning.Drift(res) {
		fmt.Println("drifted:", r.Name, r.Observed)
	}
	rep, _ = e.Apply(d)
	fmt.Println("fingerprint label:", len(tuning.Fingerprint(rep.Results)) == 16)

	// Profile or node state deleted: put back the originals.
	restored, _ := e.Restore()
	b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/stat_interval"))
	fmt.Printf("restored %v, value %s", restored, b)
	// Output:
	// sysctl/vm.stat_interval 10 10 InSync
	// drifted: sysctl/vm.stat_interval 3
	// fingerprint label: true
	// restored [sysctl/vm.stat_interval], value 1
}
