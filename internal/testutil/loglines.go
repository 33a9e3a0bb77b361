package testutil

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// LogLines keeps every line a logger it makes is given ("prefix key=value ..."), for a test that
// checks what was logged; it is safe for concurrent use.
type LogLines struct {
	mu    sync.Mutex
	lines []string
}

// Logger is a logger that writes into l the lines of verbosity v and below.
func (l *LogLines) Logger(v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: v})
}

// Lines returns the lines so far.
func (l *LogLines) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}
