//go:build !failpoint

package main

import (
	"flag"

	"github.com/tickstack/tickstack/internal/agent"
)

func addFailpointFlag(*flag.FlagSet, *options) {}

func (o *options) setFailpoint(*agent.Reconciler) {}
