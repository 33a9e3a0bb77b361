package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/ptp"
)

// PTPRunDir is where the agent keeps ptp4l's configuration and management socket, below the host
// root.
const PTPRunDir = tsv1.PTPRunDir

// DefaultPTPStatusPeriod is how often the agent refreshes status.ptp while PTP runs (TimeSynced
// changes are reported at once).
const DefaultPTPStatusPeriod = 30 * time.Second

// Condition reasons of the PTP part of the node state.
const (
	// ReasonPTPInvalid (Degraded=True): spec.tuning.ptp cannot run; the message names the field
	// and the fix. No linuxptp process runs.
	ReasonPTPInvalid = "PTPInvalid"
	// ReasonPTPFailed (TimeSynced=False): the linuxptp daemon could not be set up (executables
	// missing, run directory); the message says why.
	ReasonPTPFailed = "PTPFailed"
)

// PTPOptions are the host-side settings of the agent's linuxptp daemon.
type PTPOptions struct {
	// Ptp4lPath, Phc2sysPath and PmcPath are the linuxptp executables; empty ones are looked up
	// on PATH.
	Ptp4lPath, Phc2sysPath, PmcPath string
	// RunDir overrides Host.Path(PTPRunDir). The read-only directory benchmark pods mount is
	// RunDir+"-ro" (tsv1.PTPReadOnlyDir below the host root by default).
	RunDir string
	// Wrap rewrites each linuxptp command before it runs (tests: "ip netns exec NAME").
	Wrap func(ptp.Command) ptp.Command
	// PollInterval is how often ptp4l's state is read (ptp.DefaultPollInterval when zero).
	PollInterval time.Duration
	// Supervisor tunes the linuxptp processes' restart backoff and stop timeout.
	Supervisor ptp.SupervisorOptions
	// StatusPeriod is how often status.ptp is refreshed (DefaultPTPStatusPeriod when zero).
	StatusPeriod time.Duration
	// Metrics, if set, gets the daemon's collector while it runs.
	Metrics prometheus.Registerer
}

// ptpRunner owns the one linuxptp daemon of this node: started for spec.tuning.ptp, restarted
// when that changes, stopped when it goes.
type ptpRunner struct {
	// reg, if set, gets the running daemon's collector.
	reg       prometheus.Registerer
	mu        sync.Mutex
	cfg       ptp.Config
	daemon    *ptp.Daemon
	collector *ptp.Collector
	cancel    context.CancelFunc
	done      chan struct{}
	// changes gets one event per TimeSynced change, for a reconcile at once.
	changes chan event.TypedGenericEvent[*tsv1.LatencyNodeState]
}

func newPTPRunner(reg prometheus.Registerer) *ptpRunner {
	return &ptpRunner{reg: reg, changes: make(chan event.TypedGenericEvent[*tsv1.LatencyNodeState], 1)}
}

// ptpConfig is the node-side view of spec.tuning.ptp, defaults applied.
func ptpConfig(t *tsv1.PTPTuning) ptp.Config {
	return ptp.Config{
		Role: ptp.Role(t.Role), Interface: t.Interface, Interfaces: t.Interfaces, Domain: int(t.Domain),
		Transport: ptp.Transport(t.Transport), Timestamping: ptp.Timestamping(t.Timestamping),
		Ptp4lOptions: t.Ptp4lOptions, Phc2sysOptions: t.Phc2sysOptions,
		MaxOffsetNs: t.MaxOffsetNs, MaxSystemOffsetNs: t.MaxSystemOffsetNs, HoldTime: t.HoldTime.Duration,
		SchedPolicy: ptp.SchedPolicy(t.SchedulingPolicy), SchedPriority: int(t.SchedulingPriority), CPUs: t.CPUs,
	}.WithDefaults()
}

// reconcilePTP runs the daemon spec.tuning.ptp asks for and records its state for the status.
// Without a ptp section it stops the daemon.
func (r *Reconciler) reconcilePTP(_ context.Context, s *scope) error {
	s.obs.ptpWanted = s.tuning.PTP != nil
	if !s.obs.ptpWanted {
		r.ptpRun.stop()
		return nil
	}
	cfg := ptpConfig(s.tuning.PTP)
	if err := cfg.Validate(); err != nil {
		r.ptpRun.stop()
		s.obs.ptpInvalid = err
		r.event(s.lns, corev1.EventTypeWarning, ReasonPTPInvalid, "Validate", "spec.tuning.ptp is not valid, linuxptp does not run: %s", joinErrs(err))
		return nil
	}
	d, err := r.ptpRun.ensure(cfg, r.ptpDaemonOptions())
	if err != nil {
		s.obs.ptpErr = err
		return nil
	}
	snap := d.Snapshot()
	s.obs.ptp = &snap
	s.obs.ptpRead = r.Clock.Now()
	if p := r.PTP.StatusPeriod; p > 0 && p < s.requeue {
		s.requeue = p
	}
	return nil
}

func (r *Reconciler) ptpDaemonOptions() ptp.DaemonOptions {
	dir := r.PTP.RunDir
	if dir == "" {
		dir = r.Host.Path(PTPRunDir)
	}
	return ptp.DaemonOptions{
		RunDir: dir, ReadOnlyDir: dir + "-ro", Logger: ctrl.Log.WithName("ptp"), Wrap: r.PTP.Wrap, PollInterval: r.PTP.PollInterval,
		Ptp4lPath: r.PTP.Ptp4lPath, Phc2sysPath: r.PTP.Phc2sysPath, PmcPath: r.PTP.PmcPath,
		Supervisor: r.PTP.Supervisor,
		OnChange:   func(ptp.Status) { r.ptpRun.notify(r.NodeName) },
	}
}

// ensure runs a daemon for cfg, replacing one that runs another configuration.
func (p *ptpRunner) ensure(cfg ptp.Config, opts ptp.DaemonOptions) (*ptp.Daemon, error) {
	p.mu.Lock()
	if p.daemon != nil && reflect.DeepEqual(p.cfg, cfg) {
		defer p.mu.Unlock()
		return p.daemon, nil
	}
	p.mu.Unlock()
	p.stop()

	d, err := ptp.NewDaemon(cfg, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			opts.Logger.Error(err, "PTP daemon stopped")
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg, p.daemon, p.cancel, p.done = cfg, d, cancel, done
	if p.reg != nil {
		c := ptp.NewCollector(d)
		if err := p.reg.Register(c); err != nil {
			opts.Logger.Error(err, "registering the PTP metrics")
		} else {
			p.collector = c
		}
	}
	return d, nil
}

// stop ends the running daemon, if any, and waits for its processes to exit.
func (p *ptpRunner) stop() {
	p.mu.Lock()
	cancel, done, c := p.cancel, p.done, p.collector
	p.daemon, p.cancel, p.done, p.collector, p.cfg = nil, nil, nil, nil, ptp.Config{}
	p.mu.Unlock()
	if c != nil {
		p.reg.Unregister(c)
	}
	if cancel != nil {
		cancel()
		<-done
	}
}

// notify asks for a reconcile of the node state; a pending request already covers this one.
func (p *ptpRunner) notify(node string) {
	lns := &tsv1.LatencyNodeState{}
	lns.Name = node
	select {
	case p.changes <- event.TypedGenericEvent[*tsv1.LatencyNodeState]{Object: lns}:
	default:
	}
}

// setupPTP stops the daemon when the manager stops and reconciles on every TimeSynced change.
func (r *Reconciler) setupPTP(mgr ctrl.Manager) (source.Source, error) {
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.ptpRun.stop()
		return nil
	}))
	if err != nil {
		return nil, err
	}
	return source.Channel(r.ptpRun.changes, &handler.TypedEnqueueRequestForObject[*tsv1.LatencyNodeState]{}), nil
}

// ptpStatus is status.ptp for a daemon snapshot read at read.
func ptpStatus(snap *ptp.Snapshot, read time.Time) *tsv1.PTPStatus {
	st := &tsv1.PTPStatus{PortState: string(snap.Status.Sample.PortState)}
	for _, n := range snap.Restarts {
		st.Restarts += int32(n)
	}
	if s := snap.Status.Sample; s.Err == nil && s.PortState != "" {
		t := metav1.NewTime(read.Truncate(time.Second))
		st.LastSample = &t
		st.MeanPathDelayNs = &s.MeanPathDelayNs
		if s.HasOffset {
			st.OffsetNs = &s.OffsetNs
		}
		if s.HasSystemOffset {
			st.SystemOffsetNs = &s.SystemOffsetNs
		}
		if len(snap.Ports) > 1 {
			for _, p := range snap.PortStatuses() {
				st.Ports = append(st.Ports, tsv1.PTPPortStatus{Interface: p.Interface, PortState: string(p.State)})
			}
		}
		if s.ClockConflicts != "" {
			st.ClockConflicts = strings.Split(s.ClockConflicts, ", ")
			if len(st.ClockConflicts) > 16 {
				st.ClockConflicts = st.ClockConflicts[:16]
			}
		}
	}
	return st
}

// setPTPStatus writes status.ptp and TimeSynced from the observation, or removes both when the
// tuning has no ptp section.
func setPTPStatus(st *tsv1.LatencyNodeStateStatus, o *observation, set func(string, bool, string, string)) {
	switch {
	case !o.ptpWanted:
		st.PTP = nil
		removeCondition(st, tsv1.NodeTimeSynced)
	case o.ptpInvalid != nil:
		st.PTP = nil
		set(tsv1.NodeTimeSynced, false, ReasonPTPInvalid, "linuxptp does not run: "+joinErrs(o.ptpInvalid))
	case o.ptpErr != nil:
		st.PTP = nil
		set(tsv1.NodeTimeSynced, false, ReasonPTPFailed, fmt.Sprintf("linuxptp could not be started: %v", o.ptpErr))
	case o.ptp != nil:
		st.PTP = ptpStatus(o.ptp, o.ptpRead)
		set(tsv1.NodeTimeSynced, o.ptp.Status.Synced, o.ptp.Status.Reason, o.ptp.Status.Message)
	}
}

func removeCondition(st *tsv1.LatencyNodeStateStatus, t string) {
	for i, c := range st.Conditions {
		if c.Type == t {
			st.Conditions = append(st.Conditions[:i], st.Conditions[i+1:]...)
			return
		}
	}
}
