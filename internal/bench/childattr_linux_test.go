package bench

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

// The helper process of TestChildDiesWithRunner: a runner that starts a child with childAttr and
// waits to be killed.
func init() {
	if os.Getenv("TS_BENCH_CHILDATTR_HELPER") != "1" {
		return
	}
	cmd := exec.Command("sleep", "120")
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		fmt.Println("error=" + err.Error())
		os.Exit(1)
	}
	fmt.Printf("child=%d\n", cmd.Process.Pid)
	_ = cmd.Wait()
	os.Exit(0)
}

// A runner killed with SIGKILL (a Job's deadline, a test's cleanup) takes its benchmark children
// with it: none is left holding its port and inherited fds.
func TestChildDiesWithRunner(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self, "-test.run=^$")
	helper.Env = append(os.Environ(), "TS_BENCH_CHILDATTR_HELPER=1")
	testutil.ChildDiesWithParent(t, helper)
}
