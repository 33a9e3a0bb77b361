package testutil

import (
	"context"
	"testing"
)

// RunInBackground runs run (a manager's Start, a server's Run) in a goroutine until the test
// ends: the test's cleanup cancels the context run was given, waits for run to return and fails
// the test, naming what ran, if it returned an error.
func RunInBackground(t testing.TB, ctx context.Context, what string, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}
