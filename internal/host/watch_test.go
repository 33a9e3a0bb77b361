package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	"github.com/tickstack/tickstack/internal/testutil"
)

// TestWatchNICChanges: a change made by the ethtool command in the test's namespace is announced.
func TestWatchNICChanges(t *testing.T) {
	env := hosttest.New(t, "w")
	testutil.RequireTool(t, "ethtool")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := host.WatchNICChanges(ctx, env.NSFd)
	if err != nil {
		t.Fatal(err)
	}
	env.Exec(t, "ethtool", "-L", env.A, "rx", "1")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case name, ok := <-events:
			if !ok {
				t.Fatal("event channel closed")
			}
			if name == env.A {
				cancel()
				// The channel closes once the context ends.
				for range events {
				}
				return
			}
		case <-deadline:
			t.Fatalf("no change event for %s within 10s", env.A)
		}
	}
}
