package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// gone: the process does not exist or is a zombie waiting for init to reap it.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
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
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line <- sc.Text()
			return
		}
		close(line)
	}()
	var child int
	select {
	case l := <-line:
		v, ok := strings.CutPrefix(l, "child=")
		if !ok {
			t.Fatalf("helper: %q", l)
		}
		child, _ = strconv.Atoi(v)
	case <-time.After(20 * time.Second):
		t.Fatal("the helper did not report its child within 20s")
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if gone(child) {
		t.Fatalf("child %d is not running before the runner is killed", child)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gone(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived its killed runner", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
