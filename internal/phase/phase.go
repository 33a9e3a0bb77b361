// Package phase is the one reconcile protocol of tickstack's controllers and of the node agent.
//
// A Reconcile gets its object, builds a scope, defers one status patch (PatchStatus: sent only when
// what the reconciler owns of the status changed), and runs an ordered slice of phases over the
// scope with Run. A phase returns nil to let the next phase run, ErrStop to end the
// reconcile without an error (the later phases wait for the next event: an invalid spec, a node
// waiting for its reboot slot), or an error, which ends the reconcile and is returned, so
// controller-runtime retries with backoff. ErrStop is a sentinel like fs.SkipAll.
//
// When to reconcile again is not a phase's answer but a fact of the scope (the earliest of the
// deadlines the phases saw: the next scheduled run, the next drift check): the Reconcile turns it
// into its ctrl.Result after Run, stopped or not, and the deferred status patch reads the facts the
// phases gathered up to where they stopped.
package phase

import (
	"context"
	"errors"
)

// Func is one phase of a reconcile over scope S.
type Func[S any] func(ctx context.Context, s S) error

// ErrStop ends the phases of a reconcile without an error.
var ErrStop = errors.New("stop the phases of this reconcile")

// Run runs the phases in order. It stops at the first that returns an error, and returns that
// error, or nil when it was ErrStop.
func Run[S any](ctx context.Context, s S, phases ...Func[S]) error {
	for _, p := range phases {
		if err := p(ctx, s); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}
