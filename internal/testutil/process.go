package testutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ProcessGone reports whether process pid no longer runs: it does not exist, or it is a zombie (or
// dead) waiting to be reaped.
func ProcessGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// StartHelper starts cmd (the test binary run again as a helper process) and returns its standard
// output; the test's cleanup kills it and waits for it.
func StartHelper(t testing.TB, cmd *exec.Cmd) io.Reader {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return out
}

// ChildDiesWithParent starts helper, a process (the test binary run again as a helper) that starts
// a child and prints "child=PID" on a line of its standard output. Once the child runs it kills
// helper with SIGKILL, which leaves it no chance to clean up, and fails the test unless the child
// dies with it within 10 s (the child's Pdeathsig).
func ChildDiesWithParent(t testing.TB, helper *exec.Cmd) {
	t.Helper()
	out := StartHelper(t, helper)
	var said []string // what else the helper printed before its child's pid
	pids := make(chan string, 1)
	go func() {
		defer close(pids)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "child="); ok {
				pids <- v
				return
			}
			said = append(said, sc.Text())
		}
	}()
	var child int
	select {
	case v, ok := <-pids:
		if !ok {
			t.Fatalf("the helper ended without reporting its child: %q", said)
		}
		child, _ = strconv.Atoi(v)
	case <-time.After(20 * time.Second):
		t.Fatal("the helper did not report its child within 20s")
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if ProcessGone(child) {
		t.Fatalf("child %d is not running before its parent is killed", child)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing the helper: %v", err)
	}
	Poll(t, 10*time.Second, "the child dies with its killed parent (Pdeathsig)", func() error {
		if !ProcessGone(child) {
			return fmt.Errorf("child %d still runs", child)
		}
		return nil
	})
}
