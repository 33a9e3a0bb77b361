package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// LauncherProfile is the dataplane launcher profile the bypass stack runs under.
const LauncherProfile = "latency"

// DefaultLauncherPath is where the dataplane build puts its launcher, relative to the repository.
const DefaultLauncherPath = "dataplane/build/tickstack-run"

// ErrStackUnavailable marks a stack that cannot run on this host (e.g. no bypass launcher).
var ErrStackUnavailable = errors.New("stack unavailable")

// Tools are the programs the runner drives; empty fields are looked up on PATH.
type Tools struct {
	Sockperf   string
	Taskset    string
	Oslat      string
	Cyclictest string
	// Pmc is linuxptp's pmc, which the ptp suite reads ptp4l's state with.
	Pmc string
	// Launcher is the bypass launcher; empty means DefaultLauncherPath (next to the working
	// directory or the runner's executable), then tickstack-run on PATH.
	Launcher string
	// T2TPub, T2TStrategy and T2TExchange are the tick-to-trade rig's programs (dataplane/t2t);
	// empty means on PATH, then T2TDirDefault next to the working directory or the runner.
	T2TPub, T2TStrategy, T2TExchange string
	// Conform is the dataplane's conformance program (dataplane/tests/conform.c); empty means
	// "conform" beside the launcher.
	Conform string
}

func (t Tools) path(name, set string) (string, error) {
	if set != "" {
		name = set
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found: install it (Debian package %s) or pass its path: %w", name, debianPackage(name), err)
	}
	return p, nil
}

func debianPackage(tool string) string {
	switch filepath.Base(tool) {
	case "oslat", "cyclictest":
		return "rt-tests"
	case "taskset":
		return "util-linux"
	case "pmc":
		return "linuxptp"
	}
	return filepath.Base(tool)
}

// FindLauncher returns the bypass launcher's path or an error wrapping ErrStackUnavailable that
// says where it looked.
func (t Tools) FindLauncher() (string, error) {
	var tried []string
	if t.Launcher != "" {
		if isExecutable(t.Launcher) {
			return t.Launcher, nil
		}
		return "", fmt.Errorf("%w: bypass launcher %s is missing or not executable: build the dataplane (make -C dataplane) or fix --launcher", ErrStackUnavailable, t.Launcher)
	}
	if wd, err := os.Getwd(); err == nil {
		tried = append(tried, filepath.Join(wd, DefaultLauncherPath))
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		tried = append(tried, filepath.Join(dir, "tickstack-run"), filepath.Join(dir, "..", DefaultLauncherPath))
	}
	for _, p := range tried {
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("tickstack-run"); err == nil {
		return p, nil
	}
	tried = append(tried, "tickstack-run on PATH")
	return "", fmt.Errorf("%w: bypass launcher tickstack-run not found (looked in %s): build the dataplane (make -C dataplane) or pass --launcher", ErrStackUnavailable, strings.Join(tried, ", "))
}

// WorkDir is dir, or, when dir is empty, a new temporary directory named after prefix; remove
// deletes that temporary directory (and nothing when dir was given).
func WorkDir(dir, prefix string) (workDir string, remove func(), err error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, fmt.Errorf("creating a work directory: %w", err)
	}
	return d, func() { os.RemoveAll(d) }, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// command builds "[taskset -c CPUS] [launcher -p latency --require] tool args...".
func (t Tools) command(ctx context.Context, stack tsv1.Stack, cpus string, tool string, args ...string) (*exec.Cmd, error) {
	var argv []string
	if cpus != "" {
		ts, err := t.path("taskset", t.Taskset)
		if err != nil {
			return nil, err
		}
		argv = append(argv, ts, "-c", cpus)
	}
	if stack == tsv1.StackBypass {
		l, err := t.FindLauncher()
		if err != nil {
			return nil, err
		}
		// --require: a socket the dataplane cannot accelerate fails loudly instead of silently
		// measuring the kernel under the bypass label.
		argv = append(argv, l, "-p", LauncherProfile, "--require")
	}
	argv = append(argv, tool)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = childAttr()
	// sockperf and the launcher end on SIGINT (their summaries are printed from its handler).
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// SyncBuffer is a bytes.Buffer safe for a process writing while another goroutine reads (a
// child's output, a manager's log).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n bytes of s, for error messages.
func tail(s string, n int) string {
	s = strings.TrimSpace(CleanSockperfOutput(s))
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// runTool runs cmd to completion with a deadline and returns its combined output.
func runTool(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (string, error) {
	return runToolStarted(ctx, cmd, timeout, nil)
}

// runToolStarted is runTool that calls started (when not nil) once the process runs.
func runToolStarted(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, started func(pid int)) (string, error) {
	var out SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan struct{})
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		if waitErr != nil {
			return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), waitErr, tail(out.String(), 400))
		}
		return out.String(), nil
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		return out.String(), fmt.Errorf("%s did not finish within %s: %s", strings.Join(cmd.Args, " "), timeout, tail(out.String(), 400))
	case <-ctx.Done():
		<-done // the command's Cancel (SIGINT, then SIGKILL after WaitDelay) ends it
		return out.String(), fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), ctx.Err())
	}
}

// FindConform returns the conformance suite's program (dataplane/tests/conform.c, built as
// build/conform beside the launcher), or an error that says where it looked.
func (t Tools) FindConform() (string, error) {
	if t.Conform != "" {
		if isExecutable(t.Conform) {
			return t.Conform, nil
		}
		return "", fmt.Errorf("conformance program %s is missing or not executable: build it (make -C dataplane build/conform)", t.Conform)
	}
	l, err := t.FindLauncher()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(l), "conform")
	if !isExecutable(p) {
		return "", fmt.Errorf("conformance program %s not found beside the launcher: build it (make -C dataplane build/conform)", p)
	}
	return p, nil
}
