package benchmark

import (
	"strings"
	"sync"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// DefaultResultsBatch is how long a result that came in waits for the other measuring nodes'
// before the verdicts are written (LatencyBenchmarkReconciler.ResultsBatch): a wave's verdicts go
// into one status write, not one write of the whole status per node.
const DefaultResultsBatch = time.Second

// benchMemory is what the reconciler remembers between reconciles, so that a reconcile's work
// follows what changed rather than the size of the run: when the first result of a batch came in,
// which namespace checks and access objects were answered or written lately, and the version its
// last status write was made over (a reconcile that reads the cache from before that write would
// do that write's work again). It is lost on a restart, which costs one more check or one more
// batch window, nothing else.
type benchMemory struct {
	mu sync.Mutex
	// batch is, per benchmark, when a reconcile of its current run first saw a result it did
	// not judge yet (LatencyBenchmarkReconciler.ResultsBatch).
	batch map[string]batchRecord
	// allowed is, per namespace and rights asked, when the API server last said yes.
	allowed map[string]time.Time
	// access is, per benchmark, what reconcileAccess last made sure of and when.
	access map[string]accessRecord
	// written is, per benchmark, the resourceVersion this reconciler's last status write was
	// made over, while the cache may still show that version.
	written map[string]string
	// adopt is, per benchmark, the UID whose results ConfigMaps without the managed-by label
	// adoptUnlabelled has looked for since the manager started.
	adopt map[string]string
}

// batchRecord is an open batch of results: the run and when its first result was seen.
type batchRecord struct {
	run   int64
	start time.Time
}

// accessRecord is one benchmark's access objects as last applied: for which object (UID), run and
// results ConfigMaps.
type accessRecord struct {
	uid  string
	run  int64
	cms  int
	when time.Time
}

func benchKey(b *tsv1.LatencyBenchmark) string { return b.Namespace + "/" + b.Name }

// batchOpen returns when the current batch of b's results started, starting it at now when none
// is open.
func (m *benchMemory) batchOpen(b *tsv1.LatencyBenchmark, now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.batch == nil {
		m.batch = map[string]batchRecord{}
	}
	key := benchKey(b)
	if r, ok := m.batch[key]; ok && r.run == b.Status.Run && !now.Before(r.start) {
		return r.start
	}
	m.batch[key] = batchRecord{run: b.Status.Run, start: now}
	return now
}

// batchClose ends b's open batch: its results were judged.
func (m *benchMemory) batchClose(b *tsv1.LatencyBenchmark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.batch, benchKey(b))
}

// allowedLately says whether the API server allowed rights in ns within the last period.
func (m *benchMemory) allowedLately(ns string, rights []benchRight, now time.Time, period time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.allowed[rightsKey(ns, rights)]
	return ok && now.Sub(t) < period && !now.Before(t)
}

// rememberAllowed records that the API server allowed rights in ns at now.
func (m *benchMemory) rememberAllowed(ns string, rights []benchRight, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.allowed == nil {
		m.allowed = map[string]time.Time{}
	}
	m.allowed[rightsKey(ns, rights)] = now
}

func rightsKey(ns string, rights []benchRight) string {
	parts := []string{ns}
	for _, r := range rights {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "|")
}

// accessLately says whether b's access objects were made sure of, for this run and these results
// ConfigMaps, within the last period.
func (m *benchMemory) accessLately(b *tsv1.LatencyBenchmark, cms int, now time.Time, period time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.access[benchKey(b)]
	return ok && a.uid == string(b.UID) && a.run == b.Status.Run && a.cms == cms && now.Sub(a.when) < period && !now.Before(a.when)
}

// rememberAccess records that b's access objects were made sure of at now.
func (m *benchMemory) rememberAccess(b *tsv1.LatencyBenchmark, cms int, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.access == nil {
		m.access = map[string]accessRecord{}
	}
	m.access[benchKey(b)] = accessRecord{uid: string(b.UID), run: b.Status.Run, cms: cms, when: now}
}

// statusWritten records that a status write was made over orig.
func (m *benchMemory) statusWritten(orig *tsv1.LatencyBenchmark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		m.written = map[string]string{}
	}
	m.written[benchKey(orig)] = orig.ResourceVersion
}

// statusInFlight says whether b is the cache's copy from before this reconciler's last status
// write; any other version ends the record.
func (m *benchMemory) statusInFlight(b *tsv1.LatencyBenchmark) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	from, ok := m.written[benchKey(b)]
	if ok && from == b.ResourceVersion {
		return true
	}
	delete(m.written, benchKey(b))
	return false
}

// forget drops what is remembered of a deleted benchmark.
func (m *benchMemory) forget(ns, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.batch, ns+"/"+name)
	delete(m.access, ns+"/"+name)
	delete(m.written, ns+"/"+name)
	delete(m.adopt, ns+"/"+name)
}

// adopted says whether adoptUnlabelled has done its work for b since the manager started.
func (m *benchMemory) adopted(b *tsv1.LatencyBenchmark) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adopt[benchKey(b)] == string(b.UID)
}

// rememberAdopted records that adoptUnlabelled has done its work for b.
func (m *benchMemory) rememberAdopted(b *tsv1.LatencyBenchmark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.adopt == nil {
		m.adopt = map[string]string{}
	}
	m.adopt[benchKey(b)] = string(b.UID)
}
