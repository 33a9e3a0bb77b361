package ptp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// DefaultPollInterval is how often the Daemon reads ptp4l's state.
const DefaultPollInterval = time.Second

// DaemonOptions are the host-side settings of a Daemon.
type DaemonOptions struct {
	// RunDir holds the rendered ptp4l.conf and ptp4l's management socket ptp4l.sock. Required; the
	// socket path must stay under 108 bytes.
	RunDir string
	// Logger receives the Daemon's events and the linuxptp processes' output.
	Logger logr.Logger
	// Ptp4lPath, Phc2sysPath and PmcPath are the linuxptp executables; empty ones are looked up on
	// PATH. Without pmc the Daemon reads ptp4l's output instead (LogParser).
	Ptp4lPath, Phc2sysPath, PmcPath string
	// PollInterval is how often the state is read (DefaultPollInterval when zero).
	PollInterval time.Duration
	// Now is the Monitor's clock (time.Now when nil).
	Now func() time.Time
	// ProcDir is the host's /proc, searched for other daemons steering the system clock
	// (default /proc: the agent shares the host's PID namespace).
	ProcDir string
	// Wrap, if set, rewrites each command before it runs, e.g. to prefix "ip netns exec NAME" or
	// "nsenter" (a wrapper that execs: the scheduling set on its pid passes to the program; keep
	// FIFOPriority and CPUs). pmc needs no wrapping: it talks to ptp4l over a UNIX socket path.
	Wrap func(Command) Command
	// Supervisor tunes restarts and stopping; its Logger, OnLine, OnStart and LineVerbosity are set
	// by the Daemon.
	Supervisor SupervisorOptions
	// ReadOnlyDir, if set, is a directory for readers that must not change ptp4l (the benchmark's
	// runner pods mount it read-only): the Daemon serves ptp4l's management socket there read-only
	// as ptp4l.sock (ReadOnlyProxy: GET only) and keeps copies of ptp4l.conf and SystemOffsetFile
	// beside it. Its proxy's own sockets for ptp4l's answers are in RunDir/ro.
	ReadOnlyDir string
	// OnChange, if set, is called from the polling goroutine whenever TimeSynced or its reason
	// changes, so the agent can update the node at once instead of at its next resync.
	OnChange func(Status)
}

// Daemon runs PTP for one Config: it writes the ptp4l configuration, supervises ptp4l (and phc2sys
// with hardware time stamping), polls the port state and offset, and keeps the TimeSynced verdict.
type Daemon struct {
	cfg        Config
	opts       DaemonOptions
	log        logr.Logger
	configFile string
	udsAddress string
	ptp4lConf  string
	ptp4l      *Supervisor
	phc2sys    *Supervisor
	logParser  *LogParser
	sysClock   *SystemClockParser
	reader     Reader
	monitor    *Monitor

	// conflicts and conflictsAt: the last search for other clock daemons, and when (poll only).
	conflicts   string
	conflictsAt time.Time

	mu     sync.Mutex
	status Status
}

// conflictSearchPeriod is how often a slave's daemon looks for other clock daemons.
const conflictSearchPeriod = 5 * time.Second

// maxUDSPath is the longest UNIX socket path Linux accepts (sun_path minus its NUL).
const maxUDSPath = 107

// NewDaemon validates cfg (defaults applied), renders what linuxptp needs and resolves the
// executables. Nothing runs before Run.
func NewDaemon(cfg Config, opts DaemonOptions) (*Daemon, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid PTP configuration: %w", err)
	}
	if opts.RunDir == "" {
		return nil, fmt.Errorf("PTP daemon: RunDir is required")
	}
	runDir, err := filepath.Abs(opts.RunDir)
	if err != nil {
		return nil, fmt.Errorf("PTP daemon: resolving RunDir: %w", err)
	}
	opts.RunDir = runDir
	if opts.ProcDir == "" {
		opts.ProcDir = "/proc"
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Wrap == nil {
		opts.Wrap = func(c Command) Command { return c }
	}
	d := &Daemon{
		cfg:        cfg,
		opts:       opts,
		log:        opts.Logger.WithValues("interface", cfg.Interface),
		configFile: filepath.Join(opts.RunDir, "ptp4l.conf"),
		udsAddress: filepath.Join(opts.RunDir, "ptp4l.sock"),
		logParser:  &LogParser{Now: opts.Now},
		monitor:    NewMonitor(cfg, opts.Now),
	}
	if len(d.udsAddress) > maxUDSPath {
		return nil, fmt.Errorf("PTP daemon: socket path %s is longer than %d bytes; use a shorter RunDir", d.udsAddress, maxUDSPath)
	}
	if opts.ReadOnlyDir != "" {
		if opts.ReadOnlyDir, err = filepath.Abs(opts.ReadOnlyDir); err != nil {
			return nil, fmt.Errorf("PTP daemon: resolving ReadOnlyDir: %w", err)
		}
		if ro := filepath.Join(opts.ReadOnlyDir, "ptp4l.sock"); len(ro) > maxUDSPath {
			return nil, fmt.Errorf("PTP daemon: read-only socket path %s is longer than %d bytes; use a shorter directory", ro, maxUDSPath)
		}
		d.opts.ReadOnlyDir = opts.ReadOnlyDir
	}
	d.status = d.monitor.Status()

	if d.ptp4lConf, err = RenderPtp4lConfig(cfg, d.udsAddress); err != nil {
		return nil, err
	}
	ptp4lPath, err := lookPath(opts.Ptp4lPath, "ptp4l")
	if err != nil {
		return nil, err
	}
	sup := opts.Supervisor
	sup.Logger = d.log
	sup.LineVerbosity = periodicLineVerbosity
	sup.OnLine = d.logParser.Line
	sup.OnStart = func(int) { d.logParser.Reset() }
	prio, cpus := cfg.scheduling()
	d.ptp4l = NewSupervisor(opts.Wrap(Command{Name: "ptp4l", Path: ptp4lPath, Args: Ptp4lArgs(d.configFile), FIFOPriority: prio, CPUs: cpus}), sup)

	if cfg.RunsPhc2sys() {
		phc2sysPath, err := lookPath(opts.Phc2sysPath, "phc2sys")
		if err != nil {
			return nil, err
		}
		args, err := Phc2sysArgs(cfg, d.udsAddress)
		if err != nil {
			return nil, err
		}
		d.sysClock = &SystemClockParser{Now: opts.Now}
		sup := opts.Supervisor
		sup.Logger = d.log
		sup.LineVerbosity = periodicLineVerbosity
		sup.OnLine = d.sysClock.Line
		sup.OnStart = func(int) { d.sysClock.Reset() }
		d.phc2sys = NewSupervisor(opts.Wrap(Command{Name: "phc2sys", Path: phc2sysPath, Args: args, FIFOPriority: prio, CPUs: cpus}), sup)
	}

	if pmcPath, err := lookPath(opts.PmcPath, "pmc"); err == nil {
		d.reader = PMC{Path: pmcPath, UDSAddress: d.udsAddress, Domain: cfg.Domain}
	} else {
		d.log.Info("pmc not found, reading PTP state from ptp4l's output", "error", err.Error())
		d.reader = d.logParser
	}
	return d, nil
}

func lookPath(given, name string) (string, error) {
	if given == "" {
		given = name
	}
	p, err := exec.LookPath(given)
	if err != nil {
		return "", fmt.Errorf("finding %s (linuxptp): %w", name, err)
	}
	return p, nil
}

// periodicLineVerbosity puts the once-per-sync offset lines of ptp4l and phc2sys at V(1), keeping
// state changes and errors at V(0).
func periodicLineVerbosity(line string) int {
	if strings.Contains(line, "master offset") || strings.Contains(line, " rms ") ||
		(strings.HasPrefix(line, "phc2sys") && strings.Contains(line, " offset ")) {
		return 1
	}
	return 0
}

// Config is the validated configuration, defaults applied.
func (d *Daemon) Config() Config { return d.cfg }

// ConfigFile is the path of the rendered ptp4l configuration.
func (d *Daemon) ConfigFile() string { return d.configFile }

// UDSAddress is ptp4l's management socket.
func (d *Daemon) UDSAddress() string { return d.udsAddress }

// Ptp4l is ptp4l's supervisor.
func (d *Daemon) Ptp4l() *Supervisor { return d.ptp4l }

// Phc2sys is phc2sys's supervisor, nil with software time stamping.
func (d *Daemon) Phc2sys() *Supervisor { return d.phc2sys }

// Status is the latest TimeSynced verdict.
func (d *Daemon) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}

// Snapshot implements SnapshotSource.
func (d *Daemon) Snapshot() Snapshot {
	restarts := map[string]int{"ptp4l": d.ptp4l.Restarts()}
	running := map[string]bool{"ptp4l": d.ptp4l.PID() != 0}
	if d.phc2sys != nil {
		restarts["phc2sys"] = d.phc2sys.Restarts()
		running["phc2sys"] = d.phc2sys.PID() != 0
	}
	return Snapshot{Interface: d.cfg.Interface, Ports: d.cfg.Ports(), Role: d.cfg.Role, Status: d.Status(), Restarts: restarts, Running: running}
}

// Run writes the configuration, starts the processes and polls their state until ctx ends; it
// returns after every process has exited. Call it once per Daemon; for a new configuration, stop
// this one and start a new Daemon.
func (d *Daemon) Run(ctx context.Context) error {
	if err := os.MkdirAll(d.opts.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating PTP run directory: %w", err)
	}
	if err := os.WriteFile(d.configFile, []byte(d.ptp4lConf), 0o644); err != nil {
		return fmt.Errorf("writing ptp4l configuration: %w", err)
	}
	d.log.Info("starting PTP", "role", d.cfg.Role, "domain", d.cfg.Domain, "transport", d.cfg.Transport,
		"timestamping", d.cfg.Timestamping, "config", d.configFile)

	var wg sync.WaitGroup
	if ro := d.opts.ReadOnlyDir; ro != "" {
		if err := os.MkdirAll(ro, 0o755); err != nil {
			return fmt.Errorf("creating the read-only PTP directory: %w", err)
		}
		if err := os.WriteFile(filepath.Join(ro, "ptp4l.conf"), []byte(d.ptp4lConf), 0o644); err != nil {
			return fmt.Errorf("writing the read-only copy of ptp4l's configuration: %w", err)
		}
		p := &ReadOnlyProxy{Listen: filepath.Join(ro, "ptp4l.sock"), Upstream: d.udsAddress, ReplyDir: filepath.Join(d.opts.RunDir, "ro"),
			ProcDir: d.opts.ProcDir, Logger: d.log.WithName("read-only-socket")}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Run(ctx); err != nil {
				d.log.Error(err, "the read-only PTP socket stopped: benchmark pods cannot read ptp4l")
			}
		}()
		defer os.Remove(filepath.Join(ro, SystemOffsetFile))
	}
	for _, s := range []*Supervisor{d.ptp4l, d.phc2sys} {
		if s == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Run(ctx) // returns nil once ctx ends
		}()
	}
	defer wg.Wait()
	defer os.Remove(filepath.Join(d.opts.RunDir, SystemOffsetFile))

	t := time.NewTicker(d.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		d.poll(ctx)
	}
}

// systemOffset adds the system clock's offset to a sample: phc2sys's with hardware time stamping;
// with software time stamping ptp4l steers CLOCK_REALTIME itself, so its offset is the system
// clock's. A grandmaster's system clock is the source, not a follower: none.
func (d *Daemon) systemOffset(s *Sample) {
	switch {
	case d.cfg.Role == RoleGrandmaster || s.Err != nil:
	case d.sysClock != nil:
		s.SystemOffsetNs, s.HasSystemOffset = d.sysClock.Read()
	default:
		s.SystemOffsetNs, s.HasSystemOffset = s.OffsetNs, s.HasOffset
	}
}

// SystemOffsetFile is the file in the daemon's run directory that holds the system clock's latest
// offset, for readers outside the agent (the benchmark's ptp suite reads its copy in ReadOnlyDir): one
// line "<offset ns> <read at, Unix ns>", absent while none is read.
const SystemOffsetFile = "system-offset"

// publishSystemOffset writes s's system clock offset to SystemOffsetFile (by rename: a reader
// never sees half a line), or removes the file when s has none. Errors are not the daemon's
// concern: the file is informational.
func (d *Daemon) publishSystemOffset(s Sample) {
	line := fmt.Sprintf("%d %d\n", s.SystemOffsetNs, d.opts.Now().UnixNano())
	for _, dir := range []string{d.opts.RunDir, d.opts.ReadOnlyDir} {
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, SystemOffsetFile)
		if !s.HasSystemOffset {
			_ = os.Remove(path)
			continue
		}
		tmp := path + ".tmp"
		if os.WriteFile(tmp, []byte(line), 0o644) == nil {
			_ = os.Rename(tmp, path)
		}
	}
}

// ReadSystemOffset reads SystemOffsetFile in dir: the offset and when it was read; ok is false
// when the file is absent or unreadable.
func ReadSystemOffset(dir string) (offsetNs int64, at time.Time, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, SystemOffsetFile))
	if err != nil {
		return 0, time.Time{}, false
	}
	var ns int64
	if n, err := fmt.Sscanf(string(b), "%d %d", &offsetNs, &ns); err != nil || n != 2 {
		return 0, time.Time{}, false
	}
	return offsetNs, time.Unix(0, ns), true
}

// poll reads one sample and updates the verdict.
func (d *Daemon) poll(ctx context.Context) {
	s := d.reader.Read(ctx)
	if ctx.Err() != nil {
		return // the read was cut short by the stop, not by ptp4l
	}
	d.systemOffset(&s)
	d.publishSystemOffset(s)
	if d.cfg.Role != RoleGrandmaster {
		// A search of /proc every conflictSearchPeriod: a daemon started later is found within it.
		if now := d.opts.Now(); now.Sub(d.conflictsAt) >= conflictSearchPeriod {
			d.conflicts, d.conflictsAt = strings.Join(FindClockConflicts(d.opts.ProcDir), ", "), now
		}
		s.ClockConflicts = d.conflicts
	}
	d.mu.Lock()
	prev := d.status
	next := d.monitor.Observe(s)
	d.status = next
	d.mu.Unlock()
	if next.Synced != prev.Synced || next.Reason != prev.Reason {
		d.log.Info("TimeSynced changed", "synced", next.Synced, "reason", next.Reason, "message", next.Message)
		if d.opts.OnChange != nil {
			d.opts.OnChange(next)
		}
	}
}
