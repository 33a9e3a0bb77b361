//go:build !failpoint

package main

import (
	"flag"

	"github.com/tickstack/tickstack/internal/agent"
)

// addTestFlags registers the flags only a test build has (failpoint.go): none in a release.
func addTestFlags(*flag.FlagSet) func(*agent.Reconciler) { return func(*agent.Reconciler) {} }
