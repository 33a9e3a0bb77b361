package tuning

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/policy"
)

// DefaultJournalPath is where the journal lives on the host (below Host.Root). The DaemonSet
// mounts the host's /var/lib/tickstack so the journal survives agent restarts and upgrades.
const DefaultJournalPath = "/var/lib/tickstack/tuning-journal.json"

// Failpoints the engine passes to Engine.Failpoint (used by the crash tests).
const (
	// FailpointAfterJournal fires after the journal holding the originals is durable and before
	// the first write of that phase.
	FailpointAfterJournal = "after-journal"
	// FailpointMidApply fires after each value written by Apply.
	FailpointMidApply = "mid-apply"
	// FailpointMidRestore fires after each original written back by Restore.
	FailpointMidRestore = "mid-restore"
)

// Engine applies, verifies and restores tuning on one host.
//
// The journal guarantees: before any value is changed, its original is in the journal file on
// disk (written to a temporary file, fsynced, renamed, directory fsynced). An original is
// recorded once, the first time the setting is changed, and never overwritten by later applies
// (so a rerun after a crash, or a drift correction, cannot record a tuned value as "original").
// A setting leaves the journal only after its original has been written back. Therefore a crash
// at any point followed by Apply or Restore converges and loses no original.
type Engine struct {
	// Host is the machine.
	Host *host.Host
	// JournalPath is the journal's path on the host (resolved below Host.Root); empty means
	// DefaultJournalPath.
	JournalPath string
	// Failpoint, when set, is called at the named points (Failpoint* constants). Tests use it to
	// kill the process mid-way; production leaves it nil.
	Failpoint func(point string)

	mu sync.Mutex
}

// State is the verification state of one setting.
type State string

// Verification states.
const (
	// InSync: what is in effect is what is desired.
	InSync State = "InSync"
	// Drifted: the host holds another value than desired (changed by someone, or not yet applied).
	Drifted State = "Drifted"
	// Unsupported: the host has no such knob (cpufreq in a VM, ring sizes on a veth, SMT on a
	// CPU without sibling threads) or the kernel refuses to change it (a managed or per-CPU IRQ's
	// affinity). It is reported with the reason, left as it is and does not count as drift.
	Unsupported State = "Unsupported"
	// Failed: the value could not be read.
	Failed State = "Failed"
)

// Result is the verification of one setting.
type Result struct {
	// Name is the setting ("sysctl/vm.stat_interval", "irq/26", "rps/eth0/rx-0", ...).
	Name string
	// Field is the Desired field it comes from ("sysctls[vm.stat_interval]").
	Field string
	// Desired and Observed are canonical values (CPU sets in list form).
	Desired, Observed string
	State             State
	// Message explains Unsupported and Failed.
	Message string
}

// Report is what Apply did and what is in effect afterwards.
type Report struct {
	// Changed names the settings Apply wrote.
	Changed []string
	// Before holds, for each setting in Changed, the value it had just before Apply wrote it
	// (what a drift report shows as found on the host).
	Before map[string]string
	// Restored names settings of an earlier Desired that are no longer desired and were put back.
	Restored []string
	// Results is the verification after applying.
	Results []Result
}

func (e *Engine) journalPath() string {
	p := e.JournalPath
	if p == "" {
		p = DefaultJournalPath
	}
	return e.Host.Path(p)
}

func (e *Engine) failpoint(p string) {
	if e.Failpoint != nil {
		e.Failpoint(p)
	}
}

// lock serialises engines across processes with an flock next to the journal (released by the
// kernel if the process dies) and within the process with a mutex.
func (e *Engine) lock() (func(), error) {
	e.mu.Lock()
	p := e.journalPath() + ".lock"
	if err := os.MkdirAll(dirOf(p), 0o755); err != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		e.mu.Unlock()
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	return func() { f.Close(); e.mu.Unlock() }, nil
}

// lockJournal takes the lock and reads the journal under it: the caller defers unlock, called
// only when err is nil.
func (e *Engine) lockJournal() (unlock func(), jpath string, journal []Entry, err error) {
	if unlock, err = e.lock(); err != nil {
		return nil, "", nil, err
	}
	jpath = e.journalPath()
	if journal, err = loadJournal(jpath); err != nil {
		unlock()
		return nil, "", nil, err
	}
	return unlock, jpath, journal, nil
}

// lockJournalFor is lockJournal for acting on d: it validates d first.
func (e *Engine) lockJournalFor(d *Desired) (unlock func(), jpath string, journal []Entry, err error) {
	if err := Validate(d); err != nil {
		return nil, "", nil, err
	}
	return e.lockJournal()
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "."
}

// Journal returns the journaled originals (for status and debugging).
func (e *Engine) Journal() ([]Entry, error) {
	unlock, _, journal, err := e.lockJournal()
	if err != nil {
		return nil, err
	}
	unlock()
	return journal, nil
}

type planned struct {
	item
	s setting
}

func (e *Engine) planPhase(d *Desired, phase int) ([]planned, error) {
	items, err := expand(e.Host, d, phase)
	if err != nil {
		return nil, err
	}
	out := make([]planned, 0, len(items))
	for _, it := range items {
		s := accessorsFor(e.Host, it.key)
		var err error
		if it.desired, err = s.canon(it.desired); err != nil {
			return nil, fieldErr(it.field, "value %q: %v", "", it.desired, err)
		}
		out = append(out, planned{item: it, s: s})
	}
	return out, nil
}

// Apply makes the host match d. It validates d and plans it against the host first (nothing
// changes when either fails), restores settings journaled by an earlier Desired that d no longer
// has, journals the originals of settings planned for the first time, then writes what differs,
// in two phases (SMT, NIC VF counts, channels, rings and coalescing first, because they take CPUs
// offline or add or remove queues; then the rest). It returns the verification afterwards. Write
// errors do not stop the other writes; they are returned together and show as Drifted results.
func (e *Engine) Apply(d *Desired) (*Report, error) {
	unlock, jpath, journal, err := e.lockJournalFor(d)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &Report{}
	// Plan every phase first: everything this host cannot do is reported at once, before any
	// change.
	wanted, err := e.plannedNames(d)
	if err != nil {
		return rep, err
	}
	var writeErrs []error
	var all []planned
	for phase := 0; phase < phaseCount; phase++ {
		items, err := e.planPhase(d, phase)
		if err != nil {
			return rep, err
		}
		all = append(all, items...)
		// Read every current value before anything of this phase changes.
		current := make([]string, len(items))
		for i, it := range items {
			if it.unsupported != "" {
				continue
			}
			if current[i], err = it.s.read(); err != nil {
				return rep, fieldErr(it.field, "cannot read %s: %v", "", it.name, err)
			}
		}
		if phase == phaseStructure {
			// A previous Desired's settings that this one drops go back to their originals
			// first: everything journaled that no phase of d plans.
			var stale []Entry
			for _, en := range journal {
				if !wanted[en.Name] {
					stale = append(stale, en)
				}
			}
			if len(stale) > 0 {
				left, restored, err := e.restoreEntries(jpath, journal, stale)
				rep.Restored = restored
				journal = left
				if err != nil {
					return rep, err
				}
			}
		}
		// Journal the originals of every planned setting not journaled yet, including those
		// already in sync: if one drifts later, the journal still knows its true original.
		inJournal := map[string]bool{}
		for _, en := range journal {
			inJournal[en.Name] = true
		}
		added := false
		for i, it := range items {
			if it.unsupported == "" && !inJournal[it.name] {
				journal = append(journal, Entry{Name: it.name, Original: current[i]})
				inJournal[it.name] = true
				added = true
			}
		}
		if added {
			if err := saveJournal(jpath, journal); err != nil {
				return rep, err
			}
			e.failpoint(FailpointAfterJournal)
		}
		refusedChanged := false
		for i, it := range items {
			if it.unsupported != "" || it.s.inSync(it.desired, current[i]) {
				continue
			}
			if err := it.s.write(it.desired); err != nil {
				if (it.key.kind == kindIRQ || it.key.kind == kindDefaultIRQAffinity) && host.IsNotMovable(err) {
					for j := range journal {
						if journal[j].Name == it.name && !journal[j].Refused {
							journal[j].Refused, refusedChanged = true, true
						}
					}
					continue
				}
				writeErrs = append(writeErrs, fmt.Errorf("%s (%s): %w", it.field, it.name, err))
				continue
			}
			rep.Changed = append(rep.Changed, it.name)
			if rep.Before == nil {
				rep.Before = map[string]string{}
			}
			rep.Before[it.name] = current[i]
			e.failpoint(FailpointMidApply)
		}
		if refusedChanged {
			if err := saveJournal(jpath, journal); err != nil {
				return rep, err
			}
		}
	}
	rep.Results = e.verifyItems(all, journal)
	return rep, errors.Join(writeErrs...)
}

// plannedNames returns the names of every setting d plans on this host as it is now (queues
// that the NIC phase adds appear once that phase has run), or every problem of every phase.
func (e *Engine) plannedNames(d *Desired) (map[string]bool, error) {
	names := map[string]bool{}
	var errs []error
	for phase := 0; phase < phaseCount; phase++ {
		items, err := expand(e.Host, d, phase)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, it := range items {
			names[it.name] = true
		}
	}
	return names, errors.Join(errs...)
}

// journaledSettingAllowed refuses a journal entry the agent could never have written: a sysctl
// off the allow-list (internal/policy). The journal is a file on the host, so a restore checks each
// key again rather than writing whatever the file names; the entry stays journaled and is reported.
func journaledSettingAllowed(k settingKey, jpath string) error {
	if k.kind != kindSysctl {
		return nil
	}
	if _, ok := policy.AllowedSysctls()[k.name]; !ok {
		return fmt.Errorf("sysctl %s is not on the sysctl allow-list (internal/policy), so the agent never wrote it and does not restore it; "+
			"the entry stays in the journal: inspect the journal (%s) and remove the entry by hand", k.name, jpath)
	}
	return nil
}

// restoreEntries writes back the originals of the entries in which (a subset of journal), last
// journaled first, removes each restored entry and saves the journal. A setting whose object is
// gone (an interface or IRQ that no longer exists) has nothing left to restore and is dropped.
// It returns the journal left and the names restored.
func (e *Engine) restoreEntries(jpath string, journal, which []Entry) ([]Entry, []string, error) {
	var errs []error
	done := map[string]bool{}
	var restored []string
	for i := len(which) - 1; i >= 0; i-- {
		en := which[i]
		k, err := parseSettingKey(en.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", en.Name, err))
			continue
		}
		if err := journaledSettingAllowed(k, jpath); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", en.Name, err))
			continue
		}
		s := accessorsFor(e.Host, k)
		cur, err := s.read()
		if errors.Is(err, os.ErrNotExist) {
			done[en.Name] = true
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", en.Name, err))
			continue
		}
		if cur != en.Original {
			if err := s.write(en.Original); err != nil {
				if en.Refused && host.IsNotMovable(err) {
					done[en.Name] = true
					continue
				}
				errs = append(errs, fmt.Errorf("restore %s to %q: %w", en.Name, en.Original, err))
				continue
			}
			// Keep the original journaled unless the kernel really took it back (hugepages in
			// use cannot be freed, for example).
			if now, err := s.read(); err == nil && now != en.Original {
				errs = append(errs, fmt.Errorf("restore %s: wrote %q but the kernel reports %q; the original stays journaled", en.Name, en.Original, now))
				continue
			}
			restored = append(restored, en.Name)
			e.failpoint(FailpointMidRestore)
		}
		done[en.Name] = true
	}
	left := slices.DeleteFunc(slices.Clone(journal), func(en Entry) bool { return done[en.Name] })
	if err := saveJournal(jpath, left); err != nil {
		errs = append(errs, err)
	}
	return left, restored, errors.Join(errs...)
}

// Restore puts back every journaled original, last changed first, and clears the journal. It
// is idempotent; a crash part-way leaves the journal in place and a rerun finishes the job.
// Originals that cannot be written back stay journaled and are reported.
func (e *Engine) Restore() ([]string, error) {
	unlock, jpath, journal, err := e.lockJournal()
	if err != nil {
		return nil, err
	}
	defer unlock()
	_, restored, err := e.restoreEntries(jpath, journal, journal)
	return restored, err
}

// Verify reads back what is really in effect for every setting d plans, without changing
// anything, and reports each with its state.
func (e *Engine) Verify(d *Desired) ([]Result, error) {
	unlock, _, journal, err := e.lockJournalFor(d)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var all []planned
	for phase := 0; phase < phaseCount; phase++ {
		items, err := e.planPhase(d, phase)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
	}
	return e.verifyItems(all, journal), nil
}

func (e *Engine) verifyItems(items []planned, journal []Entry) []Result {
	refused := map[string]bool{}
	for _, en := range journal {
		if en.Refused {
			refused[en.Name] = true
		}
	}
	out := make([]Result, 0, len(items))
	for _, it := range items {
		r := Result{Name: it.name, Field: it.field, Desired: it.desired}
		if it.unsupported != "" {
			r.State, r.Message = Unsupported, it.unsupported
			out = append(out, r)
			continue
		}
		obs, err := it.s.read()
		switch {
		case err != nil:
			r.State, r.Message = Failed, err.Error()
		case it.s.inSync(it.desired, obs):
			r.Observed, r.State = obs, InSync
		case refused[it.name]:
			r.Observed, r.State, r.Message = obs, Unsupported, "the kernel refuses to change this IRQ's affinity (managed or per-CPU IRQ)"
		default:
			r.Observed, r.State = obs, Drifted
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Drift returns the results whose state is Drifted or Failed.
func Drift(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if r.State == Drifted || r.State == Failed {
			out = append(out, r)
		}
	}
	return out
}

// Fingerprint is a stable hash of the tuning in effect: every setting's name with its desired
// value when in sync (so harmless movement such as irqbalance spreading IRQs among housekeeping
// CPUs does not change it) or its observed value otherwise, plus extra strings such as the
// kernel arguments in effect. Results are sorted first; the value is 16 hexadecimal digits, fit
// for a node label.
func Fingerprint(results []Result, extra ...string) string {
	lines := make([]string, 0, len(results)+len(extra))
	for _, r := range results {
		v := r.Observed
		if r.State == InSync {
			v = r.Desired
		}
		lines = append(lines, r.Name+"="+v+"\x00"+string(r.State))
	}
	slices.Sort(lines)
	lines = append(lines, extra...)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}
