package agent

import "context"

// EvictPods is evictPods for the tests of package agent_test.
func (r *Reconciler) EvictPods(ctx context.Context) (left []string, blocking string, err error) {
	return r.evictPods(ctx)
}

// InstallBootUnit is installBootUnit for the tests of package agent_test.
func (r *Reconciler) InstallBootUnit() error { return r.installBootUnit() }
