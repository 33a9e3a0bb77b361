package agent

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// NICWatchFunc opens a stream of NIC change notifications (host.WatchNICChanges bound to a
// network namespace); the stream closes when its socket fails.
type NICWatchFunc func(ctx context.Context) (<-chan string, error)

// KeepWatchingNICs forwards the notifications of watch until ctx ends, opening the stream again
// (after retry) whenever it fails: a netlink socket that overflowed under a burst of
// notifications is closed by the host layer. Each reopening sends one notification named "" so
// that a change missed meanwhile is verified at once.
func KeepWatchingNICs(ctx context.Context, watch NICWatchFunc, retry time.Duration) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		first := true
		for ctx.Err() == nil {
			ch, err := watch(ctx)
			if err != nil {
				ctrl.LoggerFrom(ctx).Info("NIC change notifications unavailable, retrying; the periodic check still finds NIC drift", "error", err.Error())
			} else {
				if !first {
					select {
					case out <- "":
					case <-ctx.Done():
						return
					}
				}
				first = false
			stream:
				for {
					select {
					case name, ok := <-ch:
						if !ok {
							break stream
						}
						select {
						case out <- name:
						case <-ctx.Done():
							return
						}
					case <-ctx.Done():
						return
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
		}
	}()
	return out
}
