package bypass

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeHeapBound is what one scrape of the real host's processes may allocate, in all. The scan
// reads every process's maps line by line in one reused buffer and each region in a fixed-size
// buffer: nothing grows with a file's size (a process's maps, a region).
const scrapeHeapBound = 16 << 20

// TestCollectorScrapeMemoryBound: one scrape of every process of this host (the agent's own
// procfs, "/proc") allocates at most 16 MiB, measured with runtime.ReadMemStats around a Gather.
// The agent runs under a 128Mi memory limit (the chart's agent.resources).
func TestCollectorScrapeMemoryBound(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(Options{Proc: "/proc"}))
	if _, err := reg.Gather(); err != nil { // the first: descriptors, lazily built state
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("one scrape of this host's processes allocated %d KiB", got>>10)
	if got > scrapeHeapBound {
		t.Errorf("one scrape allocated %d MiB, want at most %d MiB", got>>20, scrapeHeapBound>>20)
	}
}
