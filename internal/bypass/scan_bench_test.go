package bypass

import "testing"

// BenchmarkScan is one scrape's walk of the node's /proc (every process's maps) with the regions
// found read: the agent's cost per scrape.
func BenchmarkScan(b *testing.B) {
	for b.Loop() {
		if _, _, err := Scan("/proc"); err != nil {
			b.Fatal(err)
		}
	}
}
