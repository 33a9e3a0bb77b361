package ptp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// Command is a program the Supervisor runs.
type Command struct {
	// Name identifies the process in logs and metrics, e.g. "ptp4l".
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// FIFOPriority, when above 0, runs the process at SCHED_FIFO with that priority.
	FIFOPriority int
	// CPUs, when set, pins the process to these CPUs.
	CPUs []int
}

// Supervisor defaults.
const (
	DefaultMinBackoff        = time.Second
	DefaultMaxBackoff        = time.Minute
	DefaultResetBackoffAfter = time.Minute
	DefaultStopTimeout       = 5 * time.Second
)

// SupervisorOptions tune a Supervisor; zero values take the defaults above.
type SupervisorOptions struct {
	// Logger receives the process's output lines and its lifecycle events.
	Logger logr.Logger
	// LineVerbosity returns the logr verbosity of an output line (0 when nil); ptp4l's per-sync
	// offset lines are worth V(1), state changes V(0).
	LineVerbosity func(line string) int
	// OnLine, if set, is called with every output line (stdout and stderr), in order per stream.
	OnLine func(line string)
	// OnStart, if set, is called with the pid each time the process starts.
	OnStart func(pid int)
	// MinBackoff is the wait before the first restart; it doubles per restart up to MaxBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait between restarts.
	MaxBackoff time.Duration
	// ResetBackoffAfter: a run that lasted at least this long resets the wait to MinBackoff.
	ResetBackoffAfter time.Duration
	// StopTimeout is how long a process has between SIGTERM and SIGKILL when stopping.
	StopTimeout time.Duration
}

func (o SupervisorOptions) withDefaults() SupervisorOptions {
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.ResetBackoffAfter <= 0 {
		o.ResetBackoffAfter = DefaultResetBackoffAfter
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.LineVerbosity == nil {
		o.LineVerbosity = func(string) int { return 0 }
	}
	return o
}

// Supervisor keeps one child process running until its context ends: it restarts the process when
// it exits, waiting with exponential backoff, forwards its output to a logger, and stops it with
// SIGTERM then SIGKILL. The child runs in its own process group and gets SIGKILL if the supervising
// thread dies, so an agent crash leaves no linuxptp process behind.
type Supervisor struct {
	cmd  Command
	opts SupervisorOptions
	log  logr.Logger

	mu       sync.Mutex
	pid      int
	restarts int
}

// NewSupervisor returns a Supervisor for cmd; call Run to start it.
func NewSupervisor(cmd Command, opts SupervisorOptions) *Supervisor {
	opts = opts.withDefaults()
	return &Supervisor{cmd: cmd, opts: opts, log: opts.Logger.WithValues("process", cmd.Name)}
}

// Name is the supervised command's name.
func (s *Supervisor) Name() string { return s.cmd.Name }

// Restarts is how many times the process was started again after exiting.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// PID is the running process's id, 0 when none runs.
func (s *Supervisor) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Run starts the process and keeps it running until ctx ends, then stops it and returns once it has
// exited. It returns nil after a stop caused by ctx.
func (s *Supervisor) Run(ctx context.Context) error {
	backoff := s.opts.MinBackoff
	for first := true; ; first = false {
		if ctx.Err() != nil {
			return nil
		}
		if !first {
			s.mu.Lock()
			s.restarts++
			s.mu.Unlock()
		}
		started := time.Now()
		err := s.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) >= s.opts.ResetBackoffAfter {
			backoff = s.opts.MinBackoff
		}
		s.log.Info("process exited, restarting", "error", errString(err), "ranFor", time.Since(started).Round(time.Millisecond).String(), "restartIn", backoff.String())
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, s.opts.MaxBackoff)
	}
}

func errString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// runOnce runs the process once, until it exits or ctx ends (then it is stopped). It holds its OS
// thread for the child's lifetime: Pdeathsig fires when the thread that forked the child exits.
func (s *Supervisor) runOnce(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	cmd := exec.Command(s.cmd.Path, s.cmd.Args...)
	cmd.SysProcAttr = procAttr()
	stdout := &lineWriter{emit: func(l string) { s.line("stdout", l) }}
	stderr := &lineWriter{emit: func(l string) { s.line("stderr", l) }}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Bounds the wait for the output pipes after the process exits (a stray grandchild could hold
	// them open).
	cmd.WaitDelay = s.opts.StopTimeout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.cmd.Name, err)
	}
	pid := cmd.Process.Pid
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
	s.log.Info("process started", "pid", pid, "path", s.cmd.Path, "args", s.cmd.Args)
	if err := schedule(pid, s.cmd.FIFOPriority, s.cmd.CPUs); err != nil {
		// It runs, with the kernel's ordinary scheduling: worse time under load, not none.
		s.log.Error(err, "process runs with ordinary scheduling", "pid", pid)
	}
	if s.opts.OnStart != nil {
		s.opts.OnStart(pid)
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = s.stop(pid, done)
	}
	stdout.flush()
	stderr.flush()
	s.mu.Lock()
	s.pid = 0
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s (pid %d): %w", s.cmd.Name, pid, err)
	}
	return nil
}

// stop sends SIGTERM to the process group, then SIGKILL after StopTimeout, and waits for the exit.
func (s *Supervisor) stop(pid int, done <-chan error) error {
	s.log.Info("stopping process", "pid", pid)
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.log.Error(err, "sending SIGTERM", "pid", pid)
	}
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	s.log.Info("process ignored SIGTERM, killing it", "pid", pid, "stopTimeout", s.opts.StopTimeout.String())
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.log.Error(err, "sending SIGKILL", "pid", pid)
	}
	return <-done
}

func (s *Supervisor) line(stream, l string) {
	s.log.V(s.opts.LineVerbosity(l)).Info("output", "stream", stream, "line", l)
	if s.opts.OnLine != nil {
		s.opts.OnLine(l)
	}
}

// lineWriter splits what a process writes into lines. exec.Cmd copies each stream from its own
// goroutine, so one lineWriter is only ever written by one goroutine.
type lineWriter struct {
	buf  []byte
	emit func(string)
}

// maxLine bounds a line held while waiting for its newline.
const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(bytes.TrimRight(w.buf[:i], "\r")))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.flush()
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}
