//go:build failpoint

// The failpoint hook exists only in a test build (go build -tags failpoint): a release binary has
// no --failpoint-file, so no agent.extraArgs can make a production agent kill itself. The e2e's
// images are built with the tag (hack/images/build.sh --test-build); failpoint_release_test.go
// checks that a build without it lacks the flag.
package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tickstack/tickstack/internal/agent"
)

// addTestFlags registers --failpoint-file and returns what sets its hook on the reconciler and
// the engine.
func addTestFlags(fs *flag.FlagSet) func(*agent.Reconciler) {
	path := fs.String("failpoint-file", "", "testing only (a -tags failpoint build): a file naming a failpoint (mid-apply, mid-restore, after-journal, after-kernel-args, before-reboot-command, announced:REASON) at which the agent removes the file and kills itself with SIGKILL; empty (the default) disables it")
	return func(r *agent.Reconciler) {
		if *path != "" {
			fp := failpointFile(*path, killSelf)
			r.Failpoint, r.Engine.Failpoint = fp, fp
		}
	}
}

// failpointFile returns a Failpoint hook for the reconciler and the tuning engine: at the point the
// file at path names (one of the agent's and engine's Failpoint* constants), it removes the file and
// then kills the process with kill, as a node losing power or an OOM kill would stop the agent. The
// file is removed first and the removal made durable, so that the restarted agent goes on instead of
// dying at the same point again. Any other point, or no file, does nothing. The end-to-end test uses
// it to kill the agent pod in the middle of an apply and of a restore on the real kubelet.
func failpointFile(path string, kill func()) func(point string) {
	return func(point string) {
		b, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(b)) != point {
			return
		}
		if err := os.Remove(path); err != nil {
			return // never kill without making sure the restart will not die here again
		}
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
		kill()
	}
}

// killSelf stops the agent at once, with no chance to clean up.
func killSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
